-- A run's listing position needs no unique index of its own: it comes from a sequence, so no two
-- runs share one, and the listing index (`vwf_runs_listing`, seq of the runs that have a
-- document) serves every query that orders or pages by it. One index fewer to write per run.
ALTER TABLE vwf_runs DROP CONSTRAINT IF EXISTS vwf_runs_seq_key;
