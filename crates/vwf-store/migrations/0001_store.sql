-- The PostgreSQL store (SPEC §1 with [store] url): the same records as the file store, one table
-- each. Documents are kept as the JSON text vwf wrote (text, not jsonb: byte for byte, and no
-- limit on what a string may hold). Applied files are never edited; a change is a new file.

CREATE SEQUENCE vwf_design_version;

CREATE TABLE vwf_designs (
    name text PRIMARY KEY,
    graph text NOT NULL,
    -- From one sequence, so a design deleted and saved again never gets a version it had.
    version bigint NOT NULL DEFAULT nextval('vwf_design_version'),
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE vwf_run_seq;

CREATE TABLE vwf_runs (
    id text PRIMARY KEY,
    -- Set at the first write: the listing is newest first by it. NULL while only reserved.
    seq bigint UNIQUE,
    doc text,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX vwf_runs_listing ON vwf_runs (seq DESC) WHERE doc IS NOT NULL;

CREATE TABLE vwf_jobs (
    design text PRIMARY KEY,
    job text NOT NULL
);

CREATE TABLE vwf_trigger_state (
    design text PRIMARY KEY,
    last_fired_at timestamptz NOT NULL
);
