//! A run saved once, at its end ([`Store::end_fresh_run`](crate::Store::end_fresh_run)): one
//! statement inserts it ended with its stats record, if its design is still at the revision the
//! run was made from and no row and no lock has its id. It holds no lock before: nobody knew of
//! the run, and its maker runs it again from the start when nothing was written.
//!
//! Read committed: the design's revision is read in the statement's snapshot, so a save of the
//! design that committed before the statement began is seen (the run is made again from it), and
//! one that commits while it runs comes after the run, as it would after a run that took its lock
//! first.

use vwf_core::run::Run;

use super::stats::upsert_stats;
use super::{PgStore, db};
use crate::{FreshEnd, StoreError};

/// Inserts the run `$5`, `$6` (as [`INSERT_FIRST`](super::store)) only when design `$7` is at
/// revision `$8` and nobody holds the id's lock `$9` (an id another process drew and holds
/// before its first save, see [`locks`](super::locks)), with its stats record (`$1`–`$4`, kept
/// only if the run was inserted); answers whether it was inserted and the design's revision now.
/// The id's lock is taken for the transaction only. Commits waiting for the disk (the session's
/// `synchronous_commit`, on by default, as every durable save needs).
const END_FRESH: &str = concat!(
    "WITH design AS MATERIALIZED (SELECT version FROM vwf_designs WHERE name = $7), \
     saved AS (INSERT INTO vwf_runs (id, doc, seq) SELECT $5, $6, nextval('vwf_run_seq') FROM design \
     WHERE version = $8 AND pg_try_advisory_xact_lock($9) ON CONFLICT (id) DO NOTHING RETURNING id), \
     kept AS (",
    upsert_stats!(", saved"),
    " RETURNING 1) SELECT (SELECT count(*) FROM saved) + 0 * (SELECT count(*) FROM kept), (SELECT version FROM design)"
);

impl PgStore {
    /// See the module doc.
    pub(super) async fn end_fresh(&self, run: &Run, revision: u64) -> Result<FreshEnd, StoreError> {
        let id = run.run_id();
        let doc = serde_json::to_string(run).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
        let stats = run.stats();
        // A record that cannot be encoded is not kept (a hint the store can rebuild); the run is.
        let (ids, designs, ends, texts) = super::stats::columns(stats.as_slice()).unwrap_or_default();
        let expected = i64::try_from(revision).map_err(|_| StoreError::other(format!("cannot save run {id}"), "revision out of range"))?;
        let (pool, key, design, lock) = (self.pool(), id.to_string(), run.design().to_string(), super::run_key(id));
        let (written, now): (i64, Option<i64>) = self
            .call(async move {
                sqlx::query_as(END_FRESH)
                    .bind(ids)
                    .bind(designs)
                    .bind(ends)
                    .bind(texts)
                    .bind(key)
                    .bind(doc)
                    .bind(design)
                    .bind(expected)
                    .bind(lock)
                    .fetch_one(&pool)
                    .await
                    .map_err(db)
            })
            .await?;
        Ok(match (written, now) {
            (1, _) => {
                self.notice(id, true);
                FreshEnd::Saved
            }
            (_, Some(now)) if now == expected => FreshEnd::IdTaken,
            _ => FreshEnd::DesignChanged,
        })
    }
}
