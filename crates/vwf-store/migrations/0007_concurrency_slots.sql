-- Concurrency slots: per scope (a design and a key value), the runs holding a slot, queued for
-- one and asked to stop (`Slots` as JSON text). Edited by compare-and-swap on `version`, which
-- comes from a sequence so a row deleted and made again never repeats a version an editor read.
-- `waiting` is true when runs are queued or asked to stop: the daemon looks only at those rows.

CREATE SEQUENCE vwf_slots_version;

CREATE TABLE vwf_slots (
    scope text PRIMARY KEY,
    version bigint NOT NULL,
    slots text NOT NULL,
    waiting boolean NOT NULL
);

CREATE INDEX vwf_slots_waiting ON vwf_slots (scope) WHERE waiting;
