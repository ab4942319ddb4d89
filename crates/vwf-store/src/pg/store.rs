//! [`Store`] on PostgreSQL: designs and their versions, run ids, runs saved whole or in parts and
//! read back, and run locks.
//!
//! A save made while this process holds the run's lock goes through the lock's own connection
//! (see [`locks`](super::locks)): once the session holding the lock is gone, the save fails and
//! changes nothing. A whole save replaces the document and drops the parts saved since the last
//! one; a save in parts adds them beside it, and a read takes the document and its parts in one
//! statement, so from one snapshot.

use serde_json::Value;
use sqlx::{Executor, PgConnection, Postgres, Row};
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::run::journal;
use vwf_core::stats::RunStats;
use vwf_core::versions::DesignVersion;

use super::locks::{Session, id_taken, lock_lost, on_session};
use super::stats::upsert_stats;
use super::{Locking, PgStore, db, parse_doc, run_key, to_text};
use crate::changes::Changes;
use crate::{Durability, KeyClaim, RunEntry, RunLock, SavedDesign, Store, StoreError};
use vwf_core::time::Ts;

/// How many fresh ids `allocate_run_id` tries before giving up.
pub(super) const ALLOCATE_ATTEMPTS: usize = 32;

/// A whole save: the document replaces the stored one and the parts saved since the last whole
/// save go. `$3`: `off` for a save that need not wait for the disk, else NULL (the session's
/// setting stays); set for the statement's own transaction, read at its commit.
const SAVE_WHOLE: &str = "WITH quick AS MATERIALIZED (SELECT set_config('synchronous_commit', \
     COALESCE($3::text, current_setting('synchronous_commit')), true)), \
     gone AS (DELETE FROM vwf_run_parts WHERE run_id = $1) \
     INSERT INTO vwf_runs (id, doc, seq) SELECT $1, $2, nextval('vwf_run_seq') FROM quick ON CONFLICT (id) DO UPDATE \
     SET doc = EXCLUDED.doc, seq = COALESCE(vwf_runs.seq, EXCLUDED.seq), parts = false, updated_at = now()";

/// A save in parts beside the run's document; no row changed when the run has no document.
const SAVE_PARTS: &str = "WITH saved AS (INSERT INTO vwf_run_parts (run_id, kind, key, doc) \
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[]) \
     WHERE EXISTS (SELECT 1 FROM vwf_runs WHERE id = $1 AND doc IS NOT NULL) \
     ON CONFLICT (run_id, kind, key) DO UPDATE SET doc = EXCLUDED.doc) \
     UPDATE vwf_runs SET parts = true, updated_at = now() WHERE id = $1 AND doc IS NOT NULL";

/// Keeps the stats records bound as `$1`–`$4` (none: empty arrays), lets the run lock `$5` go and
/// sends the notices `$6` (see [`notices`](super::notices)). The lock goes during the statement,
/// the records and notices at its commit, which does not wait for the disk: a stats record is a
/// hint the store can rebuild and a notice a hint, and the saves they follow were durable before.
const KEEP_STATS_AND_UNLOCK: &str = concat!(
    "WITH quick AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true)), kept AS (",
    upsert_stats!(),
    ") SELECT pg_advisory_unlock($5), (SELECT count(pg_notify($7, notice)) FROM unnest($6::text[]) AS notice) FROM quick"
);

/// A run's first save: its row inserted only if no row has its id (see
/// [`locks`](super::locks)); it commits waiting for the disk.
const INSERT_FIRST: &str = "INSERT INTO vwf_runs (id, doc, seq) VALUES ($1, $2, nextval('vwf_run_seq')) ON CONFLICT (id) DO NOTHING";

/// A run's first save that is also its end: [`INSERT_FIRST`] (`$5`, `$6`) with the run's stats
/// record (`$1`–`$4`, kept only if the row was inserted), and the run's lock `$7` let go once
/// both are written (the subquery that counts them is scanned first). The lock goes before the
/// commit, which waits for the disk; nobody sees the run before it (see [`locks`](super::locks)).
/// That needs the session's `synchronous_commit` on (PostgreSQL's default), as every durable
/// save does.
const END_FIRST: &str = concat!(
    "WITH saved AS (INSERT INTO vwf_runs (id, doc, seq) VALUES ($5, $6, nextval('vwf_run_seq')) ON CONFLICT (id) DO NOTHING RETURNING id), \
     kept AS (",
    upsert_stats!(", saved"),
    " RETURNING 1) SELECT written, pg_advisory_unlock($7) \
     FROM (SELECT (SELECT count(*) FROM saved) + 0 * (SELECT count(*) FROM kept) AS written OFFSET 0) AS done"
);

/// Inserts run `id`'s first save `doc` on `conn` (see [`INSERT_FIRST`]): whether it was
/// inserted (`false`: another run has the id, and nothing was written).
pub(super) async fn insert_first(conn: &mut PgConnection, id: &RunId, doc: String) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(INSERT_FIRST).bind(id.to_string()).bind(doc).execute(conn).await?;
    Ok(done.rows_affected() == 1)
}

/// Inserts run `id`'s first save `doc`, which is its end, with its `stats`, and lets its lock go
/// (see [`END_FIRST`]): whether it was inserted. The lock is let go either way.
async fn end_first(conn: &mut PgConnection, id: &RunId, doc: String, stats: Option<&RunStats>) -> Result<bool, StoreError> {
    // A record that cannot be encoded is not kept (a hint the store can rebuild); the end is saved.
    let (ids, designs, ends, texts) = super::stats::columns(stats.map(std::slice::from_ref).unwrap_or_default()).unwrap_or_default();
    let (written, _): (i64, Option<bool>) = sqlx::query_as(END_FIRST)
        .bind(ids)
        .bind(designs)
        .bind(ends)
        .bind(texts)
        .bind(id.to_string())
        .bind(doc)
        .bind(super::run_key(id))
        .fetch_one(conn)
        .await
        .map_err(|e| on_session(id, e))?;
    Ok(written == 1)
}

/// Writes run `id`'s whole document `doc` on `on` (see [`SAVE_WHOLE`]).
pub(super) async fn save_whole<'c>(
    on: impl Executor<'c, Database = Postgres>,
    id: &str,
    doc: String,
    quick: Option<&'static str>,
) -> Result<(), sqlx::Error> {
    sqlx::query(SAVE_WHOLE).bind(id.to_string()).bind(doc).bind(quick).execute(on).await.map(drop)
}

/// Keeps `stats`, lets the lock `key` go and sends `notice`, in one statement (see
/// [`KEEP_STATS_AND_UNLOCK`]).
pub(super) async fn keep_stats_and_unlock(
    conn: &mut PgConnection,
    key: i64,
    stats: Option<vwf_core::stats::RunStats>,
    notice: Option<String>,
) -> Result<(), sqlx::Error> {
    let (ids, designs, ends, texts) = super::stats::columns(stats.as_slice()).unwrap_or_default();
    sqlx::query(KEEP_STATS_AND_UNLOCK)
        .bind(ids)
        .bind(designs)
        .bind(ends)
        .bind(texts)
        .bind(key)
        .bind(Vec::from_iter(notice))
        .bind(super::CHANGES_CHANNEL)
        .execute(conn)
        .await
        .map(drop)
}

impl PgStore {
    /// A scope's flow-control row: its version (`None` when there is none) and document. A row
    /// that does not read counts as `null`, and the next edit replaces it.
    async fn flow_row(&self, scope: &str) -> Result<(Option<i64>, Value), StoreError> {
        let row = self.fetch_text("SELECT version::text || ' ' || doc FROM vwf_flow WHERE scope = $1", vec![scope.to_string()]).await?;
        let Some((version, doc)) = row.as_deref().and_then(|r| r.split_once(' ')) else { return Ok((None, Value::Null)) };
        Ok((version.parse().ok(), serde_json::from_str(doc).unwrap_or(Value::Null)))
    }

    /// A whole save of run `id`; `synchronous`: its commit waits for the WAL to be on disk. Made
    /// through the run's session when this process holds its lock (a first save still waiting
    /// there is superseded). `ended`: the run's end, with its stats record; when it is also the
    /// run's first save, the same statement keeps the record and lets the lock go (see
    /// [`locks`](super::locks)).
    async fn write_run_text(&self, id: &RunId, json: &[u8], synchronous: bool, ended: Option<Option<RunStats>>) -> Result<(), StoreError> {
        let text = std::str::from_utf8(json)
            .map_err(|e| StoreError::other(format!("cannot save run {id}"), format!("it is not UTF-8 JSON: {e}")))?
            .to_string();
        let quick = (!synchronous).then_some("off");
        let Some(session) = self.session(id) else {
            let (pool, key) = (self.pool(), id.to_string());
            self.call(async move { save_whole(&pool, &key, text, quick).await.map_err(db) }).await?;
            self.notice(id, ended.is_some());
            return Ok(());
        };
        let (key, on) = (id.clone(), session.clone());
        let finished = ended.is_some();
        let last = self
            .call(async move {
                let mut slot = on.conn.lock().await;
                let conn = slot.as_mut().ok_or_else(|| lock_lost(&key))?;
                // Decided under the session's connection, which a flush of the first save (a
                // read, `sync`) takes too.
                let last = {
                    let mut later = on.later();
                    later.doc = None;
                    synchronous && later.fresh && !later.released
                };
                let stats = match ended {
                    Some(stats) if last => stats,
                    _ => return on.write_whole(conn, &key, text, quick).await.map(|()| false),
                };
                match end_first(conn, &key, text, stats.as_ref()).await {
                    Ok(written) => {
                        let mut later = on.later();
                        (later.fresh, later.released, later.stats) = (!written, true, None);
                        drop(later);
                        if written { Ok(true) } else { Err(id_taken(&key)) }
                    }
                    Err(e) => {
                        // Whether the lock went with a statement that failed is unknown: the
                        // connection is closed, which lets it go for sure, and later saves fail.
                        if let Some(conn) = slot.take() {
                            let _ = conn.close().await;
                        }
                        Err(e)
                    }
                }
            })
            .await?;
        match last {
            true => self.notice(id, true),
            false => self.noticed_in(&session, id, finished),
        }
        Ok(())
    }

    /// Tells of a save of run `id` made through its lock's `session` (see
    /// [`notices`](super::notices)): an end when the lock goes, a run in flight now.
    fn noticed_in(&self, session: &Session, id: &RunId, ended: bool) {
        let mut later = session.later();
        match ended {
            true => later.notice = Some(super::notices::payload(id, true)),
            false => {
                later.notice = None;
                drop(later);
                self.notice(id, false);
            }
        }
    }

    /// Writes run `id`'s first save if it still waits in the run's session (see
    /// [`locks`](super::locks)), so a read finds it. A lock being let go writes it itself before
    /// anyone finds its session gone.
    async fn flush(&self, id: &RunId) -> Result<(), StoreError> {
        let Some(session) = self.session(id).filter(|s| s.has_doc()) else { return Ok(()) };
        let key = id.clone();
        let _wrote = self
            .call(async move {
                let mut conn = session.conn.lock().await;
                let Some(conn) = conn.as_mut() else { return Ok(false) };
                session.flush(conn, &key).await
            })
            .await?;
        self.notice(id, false);
        Ok(())
    }
}

#[async_trait::async_trait]
impl Store for PgStore {
    fn notify_changes(&self, to: &Changes) -> bool {
        self.listen(to.clone());
        true
    }

    async fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.pool();
        self.call(async move {
            let names: Vec<String> = sqlx::query_scalar("SELECT name FROM vwf_designs ORDER BY name").fetch_all(&pool).await.map_err(db)?;
            Ok(names.into_iter().filter(|n| DesignName::parse(n).is_ok()).collect())
        })
        .await
    }

    async fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        let text = self.fetch_text("SELECT graph FROM vwf_designs WHERE name = $1", vec![name.to_string()]).await?;
        let text = text.ok_or_else(|| StoreError::design_not_found(name))?;
        parse_doc(&text, format!("design {:?}", name.as_str()))
    }

    async fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        self.execute(
            "INSERT INTO vwf_designs (name, graph) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE \
             SET graph = EXCLUDED.graph, version = nextval('vwf_design_version'), updated_at = now()",
            vec![name.to_string(), to_text(graph)?],
        )
        .await?;
        Ok(format!("{} (design {name})", self.inner.shown))
    }

    async fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        let created = self
            .execute(
                "INSERT INTO vwf_designs (name, graph) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                vec![name.to_string(), to_text(graph)?],
            )
            .await?;
        if created == 0 {
            return Err(StoreError::design_exists(name));
        }
        Ok(format!("{} (design {name})", self.inner.shown))
    }

    async fn design_exists(&self, name: &DesignName) -> bool {
        self.design_stamp(name).await.is_some()
    }

    async fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        match self.execute("DELETE FROM vwf_designs WHERE name = $1", vec![name.to_string()]).await? {
            0 => Err(StoreError::design_not_found(name)),
            _ => Ok(()),
        }
    }

    async fn list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        let (pool, key) = (self.pool(), name.to_string());
        let docs: Vec<String> = self
            .call(async move {
                sqlx::query_scalar("SELECT doc FROM vwf_design_versions WHERE name = $1 ORDER BY version")
                    .bind(key)
                    .fetch_all(&pool)
                    .await
                    .map_err(db)
            })
            .await?;
        docs.iter().map(|doc| serde_json::from_str(doc).map_err(|e| version_corrupt(name, e))).collect()
    }

    async fn newest_version(&self, name: &DesignName) -> Result<Option<DesignVersion>, StoreError> {
        let doc = self
            .fetch_text("SELECT doc FROM vwf_design_versions WHERE name = $1 ORDER BY version DESC LIMIT 1", vec![name.to_string()])
            .await?;
        doc.map(|doc| serde_json::from_str(&doc).map_err(|e| version_corrupt(name, e))).transpose()
    }

    /// One statement, so the design, its revision and its newest version come from one snapshot.
    async fn load_design_with_newest(&self, name: &DesignName) -> Result<SavedDesign, StoreError> {
        let (pool, key) = (self.pool(), name.to_string());
        let row: Option<(String, i64, Option<String>)> = self
            .call(async move {
                sqlx::query_as(
                    "SELECT graph, version, (SELECT doc FROM vwf_design_versions v WHERE v.name = d.name ORDER BY version DESC LIMIT 1) \
                 FROM vwf_designs d WHERE name = $1",
                )
                .bind(key)
                .fetch_optional(&pool)
                .await
                .map_err(db)
            })
            .await?;
        let (graph, revision, newest) = row.ok_or_else(|| StoreError::design_not_found(name))?;
        let newest = newest.map(|doc| serde_json::from_str(&doc).map_err(|e| version_corrupt(name, e))).transpose();
        let graph = parse_doc(&graph, format!("design {:?}", name.as_str()))?;
        Ok(SavedDesign { graph, newest, revision: u64::try_from(revision).ok() })
    }

    async fn add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError> {
        let number = i64::try_from(version.version)
            .map_err(|_| StoreError::other("cannot record a version", format!("version {} is too large", version.version)))?;
        let (pool, key) = (self.pool(), name.to_string());
        let doc = serde_json::to_string(version).map_err(|e| StoreError::encode("a design version", e))?;
        let added = self
            .call(async move {
                let done = sqlx::query("INSERT INTO vwf_design_versions (name, version, doc) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                    .bind(key)
                    .bind(number)
                    .bind(doc)
                    .execute(&pool)
                    .await
                    .map_err(db)?;
                Ok(done.rows_affected())
            })
            .await?;
        match added {
            0 => Err(crate::versions::version_exists(name, version.version)),
            _ => Ok(()),
        }
    }

    async fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        let number = i64::try_from(version).map_err(|_| crate::version_not_found(name, version))?;
        let (pool, key) = (self.pool(), name.to_string());
        let removed = self
            .call(async move {
                let done = sqlx::query("DELETE FROM vwf_design_versions WHERE name = $1 AND version = $2")
                    .bind(key)
                    .bind(number)
                    .execute(&pool)
                    .await
                    .map_err(db)?;
                Ok(done.rows_affected())
            })
            .await?;
        match removed {
            0 => Err(crate::version_not_found(name, version)),
            _ => Ok(()),
        }
    }

    async fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.pool();
        self.call(async move {
            let names: Vec<String> =
                sqlx::query_scalar("SELECT DISTINCT name FROM vwf_design_versions ORDER BY name").fetch_all(&pool).await.map_err(db)?;
            Ok(names.into_iter().filter(|n| DesignName::parse(n).is_ok()).collect())
        })
        .await
    }

    async fn design_stamp(&self, name: &DesignName) -> Option<String> {
        let (pool, key) = (self.pool(), name.to_string());
        let version: Option<i64> = self
            .call(async move {
                sqlx::query_scalar("SELECT version FROM vwf_designs WHERE name = $1").bind(key).fetch_optional(&pool).await.map_err(db)
            })
            .await
            .ok()
            .flatten();
        version.map(|v| v.to_string())
    }

    async fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        for _ in 0..ALLOCATE_ATTEMPTS {
            let id = random_run_id()?;
            if self.execute("INSERT INTO vwf_runs (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", vec![id.to_string()]).await? == 1 {
                return Ok(id);
            }
        }
        Err(StoreError::other("cannot allocate a run id", format!("no free run id after {ALLOCATE_ATTEMPTS} tries")))
    }

    async fn add_waiter(&self, event: &str, id: &RunId, note: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO vwf_event_waiters (event, run_id, note) VALUES ($1, $2, $3) \
             ON CONFLICT (event, run_id) DO UPDATE SET note = EXCLUDED.note WHERE vwf_event_waiters.note <> EXCLUDED.note",
            vec![event.to_string(), id.to_string(), note.to_string()],
        )
        .await
        .map(|_| ())
    }

    async fn waiters(&self, event: &str) -> Result<Vec<(RunId, String)>, StoreError> {
        let (pool, event) = (self.pool(), event.to_string());
        self.call(async move {
            let rows: Vec<(String, String)> = sqlx::query_as("SELECT run_id, note FROM vwf_event_waiters WHERE event = $1")
                .bind(event)
                .fetch_all(&pool)
                .await
                .map_err(db)?;
            Ok(rows.into_iter().filter_map(|(id, note)| Some((RunId::parse(&id).ok()?, note))).collect())
        })
        .await
    }

    async fn remove_waiter(&self, event: &str, id: &RunId) -> Result<(), StoreError> {
        self.execute("DELETE FROM vwf_event_waiters WHERE event = $1 AND run_id = $2", vec![event.to_string(), id.to_string()])
            .await
            .map(|_| ())
    }

    async fn claim_key(&self, claim: &KeyClaim, fresh_since: Ts) -> Result<KeyClaim, StoreError> {
        let text = serde_json::to_string(claim).map_err(|e| StoreError::encode("an idempotency key", e))?;
        let at = claim.at.timestamp_millis().to_string();
        let recorded = self
            .fetch_text(
                "INSERT INTO vwf_idempotency_keys (key, at_ms, claim) VALUES ($1, $2::bigint, $3) \
             ON CONFLICT (key) DO UPDATE SET at_ms = EXCLUDED.at_ms, claim = EXCLUDED.claim \
             WHERE vwf_idempotency_keys.at_ms < $4::bigint RETURNING claim",
                vec![claim.key.clone(), at, text, fresh_since.timestamp_millis().to_string()],
            )
            .await?;
        if recorded.is_some() {
            return Ok(claim.clone());
        }
        let kept = self.fetch_text("SELECT claim FROM vwf_idempotency_keys WHERE key = $1", vec![claim.key.clone()]).await?;
        let kept = kept.ok_or_else(|| StoreError::other("cannot claim an idempotency key", "its claim went while it was read"))?;
        serde_json::from_str(&kept)
            .map_err(|e| StoreError::Corrupt { path: format!("idempotency key {:?}", claim.key), message: e.to_string() })
    }

    async fn settle_key(&self, key: &str, at: Ts, answer: Option<&Value>) -> Result<(), StoreError> {
        let Some(answer) = answer else {
            let sql = "DELETE FROM vwf_idempotency_keys WHERE key = $1 AND at_ms = $2::bigint";
            return self.execute(sql, vec![key.to_string(), at.timestamp_millis().to_string()]).await.map(|_| ());
        };
        let claim = self.fetch_text("SELECT claim FROM vwf_idempotency_keys WHERE key = $1", vec![key.to_string()]).await?;
        let Some(mut claim) = claim.and_then(|c| serde_json::from_str::<KeyClaim>(&c).ok()) else { return Ok(()) };
        if claim.at != at {
            return Ok(());
        }
        claim.answer = answer.clone();
        let text = serde_json::to_string(&claim).map_err(|e| StoreError::encode("an idempotency key", e))?;
        self.execute(
            "UPDATE vwf_idempotency_keys SET claim = $3 WHERE key = $1 AND at_ms = $2::bigint",
            vec![key.to_string(), at.timestamp_millis().to_string(), text],
        )
        .await
        .map(|_| ())
    }

    /// A compare-and-swap on the row's version: read, edit, write only if nobody wrote between
    /// (else read again). A `null` document deletes the row.
    async fn edit_doc(&self, scope: &str, edit: &mut (dyn for<'v> FnMut(&'v mut Value) + Send)) -> Result<Value, StoreError> {
        loop {
            let (version, mut doc) = self.flow_row(scope).await?;
            let before = doc.clone();
            edit(&mut doc);
            if doc == before {
                return Ok(doc);
            }
            let text = doc.to_string();
            let waiting = crate::is_waiting(&doc).to_string();
            let written = match (version, doc.is_null()) {
                (None, true) => 1,
                (None, false) => {
                    self.execute(
                        "INSERT INTO vwf_flow (scope, version, doc, waiting) \
                     VALUES ($1, nextval('vwf_flow_version'), $2, $3::boolean) ON CONFLICT (scope) DO NOTHING",
                        vec![scope.to_string(), text, waiting],
                    )
                    .await?
                }
                (Some(v), true) => {
                    self.execute("DELETE FROM vwf_flow WHERE scope = $1 AND version = $2::bigint", vec![scope.to_string(), v.to_string()])
                        .await?
                }
                (Some(v), false) => {
                    self.execute(
                        "UPDATE vwf_flow SET version = nextval('vwf_flow_version'), doc = $2, waiting = $3::boolean \
                     WHERE scope = $1 AND version = $4::bigint",
                        vec![scope.to_string(), text, waiting, v.to_string()],
                    )
                    .await?
                }
            };
            if written == 1 {
                return Ok(doc);
            }
        }
    }

    async fn read_doc(&self, scope: &str) -> Result<Value, StoreError> {
        Ok(self.flow_row(scope).await?.1)
    }

    async fn waiting_docs(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.pool();
        self.call(async move { sqlx::query_scalar("SELECT scope FROM vwf_flow WHERE waiting").fetch_all(&pool).await.map_err(db) }).await
    }

    /// Kept by the statement that lets the run's lock go when this process holds it (see
    /// [`locks`](super::locks)), else at once.
    async fn add_run_stats(&self, stats: &vwf_core::stats::RunStats) -> Result<(), StoreError> {
        match self.session(&stats.run_id) {
            // Kept by the statement that saved the run ended.
            Some(session) if session.later().released => Ok(()),
            Some(session) => {
                session.later().stats = Some(stats.clone());
                Ok(())
            }
            None => self.write_stats(std::slice::from_ref(stats), true).await,
        }
    }

    async fn run_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<vwf_core::stats::RunStats>, StoreError> {
        self.select_stats(from, to, design).await
    }

    async fn reserve_run_id(&self, id: &RunId) -> Result<bool, StoreError> {
        Ok(self.execute("INSERT INTO vwf_runs (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", vec![id.to_string()]).await? == 1)
    }

    async fn import_run(&self, id: &RunId, doc: &Value) -> Result<(), StoreError> {
        let json = serde_json::to_vec(doc).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
        self.write_run_text(id, &json, true, None).await
    }

    async fn sync(&self) -> Result<(), StoreError> {
        let waiting: Vec<i64> = {
            let held = self.inner.held.lock().unwrap_or_else(|e| e.into_inner());
            held.iter().filter(|(_, s)| s.has_doc()).map(|(key, _)| *key).collect()
        };
        let flushed = !waiting.is_empty();
        for key in waiting {
            if let Ok(id) = RunId::parse(&format!("{key:012x}")) {
                self.flush(&id).await?;
            }
        }
        // A first save just written committed synchronously, and its commit waited for the WAL
        // up to it, which holds every commit made before.
        if flushed {
            return Ok(());
        }
        // So does a transaction that takes a transaction id.
        let pool = self.pool();
        self.call(async move { sqlx::query("SELECT txid_current()").execute(&pool).await.map(|_| ()).map_err(db) }).await
    }

    /// Under the run's lock, through its session; a first save still waiting there makes this
    /// save whole (one statement either way). A run's first save, the only one a runner makes
    /// [`Durability::Soon`], is whole: under the run's lock it waits in the run's session and
    /// costs no statement of its own, the run's next save writing the run whole instead (see
    /// [`locks`](super::locks)). Without the lock its transaction commits without waiting for the
    /// WAL to reach the disk (`synchronous_commit` off for it alone); the next synchronous commit,
    /// or [`Store::sync`], flushes the WAL past it.
    async fn save_run(&self, id: &RunId, run: &Run, changes: &journal::Changes, durability: Durability) -> Result<(), StoreError> {
        let session = self.session(id);
        if changes.whole || session.as_ref().is_some_and(|s| s.has_doc()) {
            let json = serde_json::to_vec(run).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
            let first = changes.whole && durability == Durability::Soon;
            if let Some(session) = session.filter(|s| first && !s.later().released) {
                let text = String::from_utf8(json)
                    .map_err(|e| StoreError::other(format!("cannot save run {id}"), format!("it is not UTF-8 JSON: {e}")))?;
                session.later().doc = Some(text);
                return Ok(());
            }
            let ended = run.status().is_finished().then(|| run.stats());
            return self.write_run_text(id, &json, !first, ended).await;
        }
        let (mut kinds, mut keys, mut docs) = (Vec::new(), Vec::new(), Vec::new());
        for part in &changes.parts {
            let Some(value) = run.part(part) else { continue };
            kinds.push(part.kind().to_string());
            keys.push(part.key());
            docs.push(to_text(&value)?);
        }
        let query = move |key: String| sqlx::query(SAVE_PARTS).bind(key).bind(kinds).bind(keys).bind(docs);
        let (pool, key, on) = (self.pool(), id.clone(), session.clone());
        let updated = self
            .call(async move {
                let done = match on {
                    None => query(key.to_string()).execute(&pool).await.map_err(db)?,
                    Some(session) => {
                        let mut conn = session.conn.lock().await;
                        let conn = conn.as_mut().ok_or_else(|| lock_lost(&key))?;
                        session.relock(conn, &key).await?;
                        query(key.to_string()).execute(&mut **conn).await.map_err(|e| on_session(&key, e))?
                    }
                };
                Ok(done.rows_affected())
            })
            .await?;
        if updated == 0 {
            return Err(StoreError::run_not_found(id));
        }
        match &session {
            Some(session) => self.noticed_in(session, id, run.status().is_finished()),
            None => self.notice(id, run.status().is_finished()),
        }
        Ok(())
    }

    async fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        self.flush(id).await?;
        let (pool, key) = (self.pool(), id.to_string());
        // One statement, so the document and its parts come from one snapshot.
        let rows = self
            .call(async move {
                sqlx::query(
                    "SELECT '' AS kind, '' AS key, doc FROM vwf_runs WHERE id = $1 AND doc IS NOT NULL \
                 UNION ALL SELECT kind, key, doc FROM vwf_run_parts WHERE run_id = $1",
                )
                .bind(key)
                .fetch_all(&pool)
                .await
                .map_err(db)
            })
            .await?;
        let mut rows = rows.into_iter().map(|row| {
            let text = |c: &str| row.try_get::<String, _>(c).map_err(db);
            Ok::<_, StoreError>((text("kind")?, text("key")?, text("doc")?))
        });
        let (_, _, doc) = rows.next().ok_or_else(|| StoreError::run_not_found(id))??;
        let parts = rows.collect::<Result<Vec<_>, _>>()?;
        crate::assemble(id, parse_doc(&doc, format!("run {id}"))?, parts)
    }

    async fn read_runs(&self, ids: &[RunId]) -> Vec<Result<Value, StoreError>> {
        let (pool, keys) = (self.pool(), ids.iter().map(RunId::to_string).collect::<Vec<_>>());
        let rows = self
            .call(async move {
                sqlx::query_as::<_, (String, String, bool)>("SELECT id, doc, parts FROM vwf_runs WHERE id = ANY($1) AND doc IS NOT NULL")
                    .bind(keys)
                    .fetch_all(&pool)
                    .await
                    .map_err(db)
            })
            .await;
        let mut found: std::collections::HashMap<String, (String, bool)> = match rows {
            Ok(rows) => rows.into_iter().map(|(id, doc, parts)| (id, (doc, parts))).collect(),
            Err(e) => return ids.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut runs = Vec::with_capacity(ids.len());
        for id in ids {
            runs.push(match found.remove(id.as_str()) {
                None => Err(StoreError::run_not_found(id)),
                // A run in flight has parts saved since its document: read it whole.
                Some((_, true)) => self.read_run(id).await,
                Some((doc, false)) => parse_doc(&doc, format!("run {id}")),
            });
        }
        runs
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError> {
        let pool = self.pool();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .call(async move {
                sqlx::query("SELECT id, doc, parts FROM vwf_runs WHERE doc IS NOT NULL ORDER BY seq DESC LIMIT $1")
                    .bind(limit)
                    .fetch_all(&pool)
                    .await
                    .map_err(db)
            })
            .await?;
        let mut entries = Vec::with_capacity(rows.len());
        for row in rows {
            // Ids are written only as parsed run ids.
            let Some(id) = row.try_get("id").ok().and_then(|id| RunId::parse(id).ok()) else { continue };
            let Ok(doc) = row.try_get::<String, _>("doc") else { continue };
            // A run in flight has parts saved since its document: read it whole.
            let run = match row.try_get::<bool, _>("parts") {
                Ok(true) => self.read_run(&id).await,
                _ => parse_doc(&doc, format!("run {id}")),
            };
            entries.push(RunEntry { id, run: run.map_err(|e| e.to_string()) });
        }
        Ok(entries)
    }

    async fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError> {
        let pool = self.pool();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let cursor = before.map(|b| b.to_string());
        let ids: Option<Vec<String>> = self
            .call(async move {
                let after = match cursor {
                    None => i64::MAX,
                    Some(id) => {
                        let seq: Option<Option<i64>> = sqlx::query_scalar("SELECT seq FROM vwf_runs WHERE id = $1 AND doc IS NOT NULL")
                            .bind(id)
                            .fetch_optional(&pool)
                            .await
                            .map_err(db)?;
                        match seq.flatten() {
                            Some(seq) => seq,
                            None => return Ok(None),
                        }
                    }
                };
                let ids = sqlx::query_scalar("SELECT id FROM vwf_runs WHERE doc IS NOT NULL AND seq < $1 ORDER BY seq DESC LIMIT $2")
                    .bind(after)
                    .bind(limit)
                    .fetch_all(&pool)
                    .await
                    .map_err(db)?;
                Ok(Some(ids))
            })
            .await?;
        match (ids, before) {
            (Some(ids), _) => Ok(ids.iter().filter_map(|id| RunId::parse(id).ok()).collect()),
            (None, Some(before)) => Err(StoreError::run_not_found(before)),
            (None, None) => Ok(Vec::new()),
        }
    }

    /// A run that is not saved may be one whose maker holds its fresh id (see
    /// [`locks`](super::locks)): its lock is waited for, and the run looked for again under it.
    async fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        if let Some(lock) = self.advisory(run_key(id), Locking::Run { wait: true, id: id.to_string() }).await? {
            return Ok(RunLock::new(id.clone(), lock.hold(id, &self.inner.held)));
        }
        self.lock_unsaved(id, true).await?.ok_or_else(|| StoreError::run_not_found(id))
    }

    async fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        match self.advisory(run_key(id), Locking::Run { wait: false, id: id.to_string() }).await? {
            Some(lock) => Ok(Some(RunLock::new(id.clone(), lock.hold(id, &self.inner.held)))),
            // Held by someone, or not there: which one, the caller is told.
            None if self.run_exists(id).await? => Ok(None),
            // Not saved: held by the process making it (a fresh id is held by its lock alone),
            // or by nobody, and then it is not there.
            None => self.lock_unsaved(id, false).await,
        }
    }

    /// One statement: the id is locked, and held by its lock until the run's first save (see
    /// [`Locking::New`]).
    async fn allocate_locked_run(&self) -> Result<RunLock, StoreError> {
        Ok(self.allocate_locked(None).await?.0)
    }

    /// One statement: the id locked, and the design's revision read.
    async fn allocate_locked_run_for(&self, design: &DesignName) -> Result<(RunLock, Option<u64>), StoreError> {
        self.allocate_locked(Some(design)).await
    }

    fn fresh_run_id(&self) -> Option<RunId> {
        random_run_id().ok()
    }

    async fn end_fresh_run(&self, run: &Run, revision: u64) -> Result<crate::FreshEnd, StoreError> {
        self.end_fresh(run, revision).await
    }
}

/// A stored version of design `name` that does not read.
fn version_corrupt(name: &DesignName, e: serde_json::Error) -> StoreError {
    StoreError::Corrupt { path: format!("a version of design {:?}", name.as_str()), message: e.to_string() }
}

/// A fresh run id from the operating system's CSPRNG.
pub(super) fn random_run_id() -> Result<RunId, StoreError> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::other("cannot get random bytes", e.to_string()))?;
    Ok(RunId::from_bytes(bytes))
}
