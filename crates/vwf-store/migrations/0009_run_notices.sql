-- Run notices leave the saving transaction. NOTIFY serializes the commits of every transaction
-- that notifies, in the whole cluster, under one lock held through the commit's WAL flush: with a
-- notice from a trigger on every run save, every instance's saves committed one at a time and
-- never shared a flush. The store now sends run notices itself after the save committed, from
-- statements that do not wait for the disk (see the store's `pg/notices.rs`). Designs and jobs,
-- written rarely, keep their triggers.
DROP TRIGGER IF EXISTS vwf_runs_changed ON vwf_runs;
