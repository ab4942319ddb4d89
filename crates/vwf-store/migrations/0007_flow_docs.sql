-- Flow-control documents: per scope, the runtime's own JSON text (a design's concurrency slots, a
-- trigger's debounce burst or throttle window, a rate limit's bucket). Edited by compare-and-swap
-- on `version`, which comes from a sequence so a row deleted and made again never repeats a
-- version an editor read. `waiting` is true when the document waits for something (runs queued,
-- a burst to fire): the daemon looks only at those rows.

CREATE SEQUENCE vwf_flow_version;

CREATE TABLE vwf_flow (
    scope text PRIMARY KEY,
    version bigint NOT NULL,
    doc text NOT NULL,
    waiting boolean NOT NULL
);

CREATE INDEX vwf_flow_waiting ON vwf_flow (scope) WHERE waiting;
