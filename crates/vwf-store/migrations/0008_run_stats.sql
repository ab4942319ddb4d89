-- Stats records of ended runs (see vwf_core::stats): one row per run, its latest end, so
-- GET /stats reads one indexed range instead of every run. `record` is the JSON vwf wrote.
-- `vwf_run_stats_built` says whether the runs that ended before this table existed are in it:
-- false when the database already held runs, and the store fills them in at its first query.

CREATE TABLE vwf_run_stats (
    run_id text PRIMARY KEY,
    design text NOT NULL,
    ended_at timestamptz NOT NULL,
    record text NOT NULL
);

CREATE INDEX vwf_run_stats_ended ON vwf_run_stats (ended_at);
CREATE INDEX vwf_run_stats_design_ended ON vwf_run_stats (design, ended_at);

CREATE TABLE vwf_run_stats_built (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    built boolean NOT NULL
);

INSERT INTO vwf_run_stats_built (built) SELECT NOT EXISTS (SELECT 1 FROM vwf_runs WHERE doc IS NOT NULL);
