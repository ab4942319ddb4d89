-- A run in flight is saved as parts (see vwf_core::run::journal): a step costs the size of the
-- step, not the size of the run. vwf_runs.doc stays the last whole document (written when the
-- run starts, parks or ends), and vwf_run_parts the parts written since, one row per part, the
-- last write of a part winning. `parts` says whether a reader has any to apply; a whole save
-- clears them in the same statement.

ALTER TABLE vwf_runs ADD COLUMN parts boolean NOT NULL DEFAULT false;

CREATE TABLE vwf_run_parts (
    run_id text NOT NULL REFERENCES vwf_runs (id) ON DELETE CASCADE,
    kind text NOT NULL,
    key text NOT NULL,
    doc text NOT NULL,
    PRIMARY KEY (run_id, kind, key)
);
