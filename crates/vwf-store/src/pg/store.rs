//! [`Store`] on PostgreSQL: designs and their versions, run ids, runs saved whole or in parts and
//! read back, and run locks.
//!
//! A save made while this process holds the run's lock is fenced on it (see
//! [`Fence`](super::Fence)): once the session holding the lock is gone, the save changes nothing
//! and fails. A whole save replaces the document and drops the parts saved since the last one; a
//! save in parts adds them beside it, and a read takes the document and its parts in one
//! statement, so from one snapshot.

use serde_json::Value;
use sqlx::Row;
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::run::journal;
use vwf_core::versions::DesignVersion;

use super::{PgStore, db, fence_cte, fenced, parse_doc, run_key, to_text};
use crate::changes::Changes;
use crate::{KeyClaim, RunEntry, RunLock, Store, StoreError};
use vwf_core::time::Ts;

/// How many fresh ids `allocate_run_id` tries before giving up.
const ALLOCATE_ATTEMPTS: usize = 32;

/// A fenced save that changed nothing: the session holding the run's lock is gone.
fn lock_lost(id: &RunId) -> StoreError {
    StoreError::other(
        format!("run {id} was not saved"),
        "this process lost the run's lock (its database connection ended), so another may have taken the run over",
    )
}

impl PgStore {
    /// A scope's flow-control row: its version (`None` when there is none) and document. A row
    /// that does not read counts as `null`, and the next edit replaces it.
    fn flow_row(&self, scope: &str) -> Result<(Option<i64>, Value), StoreError> {
        let row = self.fetch_text("SELECT version::text || ' ' || doc FROM vwf_flow WHERE scope = $1", vec![scope.to_string()])?;
        let Some((version, doc)) = row.as_deref().and_then(|r| r.split_once(' ')) else { return Ok((None, Value::Null)) };
        Ok((version.parse().ok(), serde_json::from_str(doc).unwrap_or(Value::Null)))
    }

    /// A whole save of run `id`; `synchronous`: its commit waits for the WAL to be on disk.
    fn write_run_text(&self, id: &RunId, json: &[u8], synchronous: bool) -> Result<(), StoreError> {
        let text = std::str::from_utf8(json)
            .map_err(|e| StoreError::other(format!("cannot save run {id}"), format!("it is not UTF-8 JSON: {e}")))?
            .to_string();
        // A whole save replaces the document and drops the parts saved since the last one.
        // `$6`: `off` for a save that need not wait for the disk, else NULL (the session's
        // setting stays). Set for the statement's own transaction, read at its commit.
        let sql = concat!(
            "WITH quick AS MATERIALIZED (SELECT set_config('synchronous_commit', \
             COALESCE($6::text, current_setting('synchronous_commit')), true)), ",
            fence_cte!(),
            ", gone AS (DELETE FROM vwf_run_parts WHERE run_id = $1 AND ",
            fenced!(),
            ") INSERT INTO vwf_runs (id, doc, seq) SELECT $1, $2, nextval('vwf_run_seq') FROM quick ON CONFLICT (id) DO UPDATE \
             SET doc = EXCLUDED.doc, seq = COALESCE(vwf_runs.seq, EXCLUDED.seq), parts = false, updated_at = now() WHERE ",
            fenced!()
        );
        let quick = (!synchronous).then_some("off");
        let (pool, fence, key) = (self.pool(), self.fence(id), id.to_string());
        let saved = self.wait(async move {
            let done = sqlx::query(sql)
                .bind(key)
                .bind(text)
                .bind(fence.pid)
                .bind(fence.class)
                .bind(fence.object)
                .bind(quick)
                .execute(&pool)
                .await
                .map_err(db)?;
            Ok(done.rows_affected())
        })?;
        match saved {
            0 => Err(lock_lost(id)),
            _ => Ok(()),
        }
    }
}

impl Store for PgStore {
    fn notify_changes(&self, to: &Changes) -> bool {
        self.listen(to.clone());
        true
    }

    fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.pool();
        self.wait(async move {
            let names: Vec<String> = sqlx::query_scalar("SELECT name FROM vwf_designs ORDER BY name").fetch_all(&pool).await.map_err(db)?;
            Ok(names.into_iter().filter(|n| DesignName::parse(n).is_ok()).collect())
        })
    }

    fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        let text = self.fetch_text("SELECT graph FROM vwf_designs WHERE name = $1", vec![name.to_string()])?;
        let text = text.ok_or_else(|| StoreError::design_not_found(name))?;
        parse_doc(&text, format!("design {:?}", name.as_str()))
    }

    fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        self.execute(
            "INSERT INTO vwf_designs (name, graph) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE \
             SET graph = EXCLUDED.graph, version = nextval('vwf_design_version'), updated_at = now()",
            vec![name.to_string(), to_text(graph)?],
        )?;
        Ok(format!("{} (design {name})", self.inner.shown))
    }

    fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        let created = self.execute(
            "INSERT INTO vwf_designs (name, graph) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            vec![name.to_string(), to_text(graph)?],
        )?;
        if created == 0 {
            return Err(StoreError::design_exists(name));
        }
        Ok(format!("{} (design {name})", self.inner.shown))
    }

    fn design_exists(&self, name: &DesignName) -> bool {
        self.design_stamp(name).is_some()
    }

    fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        match self.execute("DELETE FROM vwf_designs WHERE name = $1", vec![name.to_string()])? {
            0 => Err(StoreError::design_not_found(name)),
            _ => Ok(()),
        }
    }

    fn list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        let (pool, key) = (self.pool(), name.to_string());
        let docs: Vec<String> = self.wait(async move {
            sqlx::query_scalar("SELECT doc FROM vwf_design_versions WHERE name = $1 ORDER BY version")
                .bind(key)
                .fetch_all(&pool)
                .await
                .map_err(db)
        })?;
        docs.iter()
            .map(|doc| {
                serde_json::from_str(doc)
                    .map_err(|e| StoreError::Corrupt { path: format!("a version of design {:?}", name.as_str()), message: e.to_string() })
            })
            .collect()
    }

    fn newest_version(&self, name: &DesignName) -> Result<Option<DesignVersion>, StoreError> {
        let doc =
            self.fetch_text("SELECT doc FROM vwf_design_versions WHERE name = $1 ORDER BY version DESC LIMIT 1", vec![name.to_string()])?;
        doc.map(|doc| {
            serde_json::from_str(&doc)
                .map_err(|e| StoreError::Corrupt { path: format!("a version of design {:?}", name.as_str()), message: e.to_string() })
        })
        .transpose()
    }

    fn add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError> {
        let number = i64::try_from(version.version)
            .map_err(|_| StoreError::other("cannot record a version", format!("version {} is too large", version.version)))?;
        let (pool, key) = (self.pool(), name.to_string());
        let doc = serde_json::to_string(version).map_err(|e| StoreError::encode("a design version", e))?;
        let added = self.wait(async move {
            let done = sqlx::query("INSERT INTO vwf_design_versions (name, version, doc) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
                .bind(key)
                .bind(number)
                .bind(doc)
                .execute(&pool)
                .await
                .map_err(db)?;
            Ok(done.rows_affected())
        })?;
        match added {
            0 => Err(crate::versions::version_exists(name, version.version)),
            _ => Ok(()),
        }
    }

    fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        let number = i64::try_from(version).map_err(|_| crate::version_not_found(name, version))?;
        let (pool, key) = (self.pool(), name.to_string());
        let removed = self.wait(async move {
            let done = sqlx::query("DELETE FROM vwf_design_versions WHERE name = $1 AND version = $2")
                .bind(key)
                .bind(number)
                .execute(&pool)
                .await
                .map_err(db)?;
            Ok(done.rows_affected())
        })?;
        match removed {
            0 => Err(crate::version_not_found(name, version)),
            _ => Ok(()),
        }
    }

    fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.pool();
        self.wait(async move {
            let names: Vec<String> =
                sqlx::query_scalar("SELECT DISTINCT name FROM vwf_design_versions ORDER BY name").fetch_all(&pool).await.map_err(db)?;
            Ok(names.into_iter().filter(|n| DesignName::parse(n).is_ok()).collect())
        })
    }

    fn design_stamp(&self, name: &DesignName) -> Option<String> {
        let (pool, key) = (self.pool(), name.to_string());
        let version: Option<i64> = self
            .wait(async move {
                sqlx::query_scalar("SELECT version FROM vwf_designs WHERE name = $1").bind(key).fetch_optional(&pool).await.map_err(db)
            })
            .ok()
            .flatten();
        version.map(|v| v.to_string())
    }

    fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        for _ in 0..ALLOCATE_ATTEMPTS {
            let mut bytes = [0u8; 6];
            getrandom::fill(&mut bytes).map_err(|e| StoreError::other("cannot get random bytes", e.to_string()))?;
            let id = RunId::from_bytes(bytes);
            if self.execute("INSERT INTO vwf_runs (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", vec![id.to_string()])? == 1 {
                return Ok(id);
            }
        }
        Err(StoreError::other("cannot allocate a run id", format!("no free run id after {ALLOCATE_ATTEMPTS} tries")))
    }

    fn add_waiter(&self, event: &str, id: &RunId, note: &str) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO vwf_event_waiters (event, run_id, note) VALUES ($1, $2, $3) \
             ON CONFLICT (event, run_id) DO UPDATE SET note = EXCLUDED.note WHERE vwf_event_waiters.note <> EXCLUDED.note",
            vec![event.to_string(), id.to_string(), note.to_string()],
        )
        .map(|_| ())
    }

    fn waiters(&self, event: &str) -> Result<Vec<(RunId, String)>, StoreError> {
        let (pool, event) = (self.pool(), event.to_string());
        self.wait(async move {
            let rows: Vec<(String, String)> = sqlx::query_as("SELECT run_id, note FROM vwf_event_waiters WHERE event = $1")
                .bind(event)
                .fetch_all(&pool)
                .await
                .map_err(db)?;
            Ok(rows.into_iter().filter_map(|(id, note)| Some((RunId::parse(&id).ok()?, note))).collect())
        })
    }

    fn remove_waiter(&self, event: &str, id: &RunId) -> Result<(), StoreError> {
        self.execute("DELETE FROM vwf_event_waiters WHERE event = $1 AND run_id = $2", vec![event.to_string(), id.to_string()]).map(|_| ())
    }

    fn claim_key(&self, claim: &KeyClaim, fresh_since: Ts) -> Result<KeyClaim, StoreError> {
        let text = serde_json::to_string(claim).map_err(|e| StoreError::encode("an idempotency key", e))?;
        let at = claim.at.timestamp_millis().to_string();
        let recorded = self.fetch_text(
            "INSERT INTO vwf_idempotency_keys (key, at_ms, claim) VALUES ($1, $2::bigint, $3) \
             ON CONFLICT (key) DO UPDATE SET at_ms = EXCLUDED.at_ms, claim = EXCLUDED.claim \
             WHERE vwf_idempotency_keys.at_ms < $4::bigint RETURNING claim",
            vec![claim.key.clone(), at, text, fresh_since.timestamp_millis().to_string()],
        )?;
        if recorded.is_some() {
            return Ok(claim.clone());
        }
        let kept = self.fetch_text("SELECT claim FROM vwf_idempotency_keys WHERE key = $1", vec![claim.key.clone()])?;
        let kept = kept.ok_or_else(|| StoreError::other("cannot claim an idempotency key", "its claim went while it was read"))?;
        serde_json::from_str(&kept)
            .map_err(|e| StoreError::Corrupt { path: format!("idempotency key {:?}", claim.key), message: e.to_string() })
    }

    fn settle_key(&self, key: &str, at: Ts, answer: Option<&Value>) -> Result<(), StoreError> {
        let Some(answer) = answer else {
            let sql = "DELETE FROM vwf_idempotency_keys WHERE key = $1 AND at_ms = $2::bigint";
            return self.execute(sql, vec![key.to_string(), at.timestamp_millis().to_string()]).map(|_| ());
        };
        let claim = self.fetch_text("SELECT claim FROM vwf_idempotency_keys WHERE key = $1", vec![key.to_string()])?;
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
        .map(|_| ())
    }

    /// A compare-and-swap on the row's version: read, edit, write only if nobody wrote between
    /// (else read again). A `null` document deletes the row.
    fn edit_doc(&self, scope: &str, edit: &mut dyn FnMut(&mut Value)) -> Result<Value, StoreError> {
        loop {
            let (version, mut doc) = self.flow_row(scope)?;
            let before = doc.clone();
            edit(&mut doc);
            if doc == before {
                return Ok(doc);
            }
            let text = doc.to_string();
            let waiting = crate::is_waiting(&doc).to_string();
            let written = match (version, doc.is_null()) {
                (None, true) => 1,
                (None, false) => self.execute(
                    "INSERT INTO vwf_flow (scope, version, doc, waiting) \
                     VALUES ($1, nextval('vwf_flow_version'), $2, $3::boolean) ON CONFLICT (scope) DO NOTHING",
                    vec![scope.to_string(), text, waiting],
                )?,
                (Some(v), true) => {
                    self.execute("DELETE FROM vwf_flow WHERE scope = $1 AND version = $2::bigint", vec![scope.to_string(), v.to_string()])?
                }
                (Some(v), false) => self.execute(
                    "UPDATE vwf_flow SET version = nextval('vwf_flow_version'), doc = $2, waiting = $3::boolean \
                     WHERE scope = $1 AND version = $4::bigint",
                    vec![scope.to_string(), text, waiting, v.to_string()],
                )?,
            };
            if written == 1 {
                return Ok(doc);
            }
        }
    }

    fn read_doc(&self, scope: &str) -> Result<Value, StoreError> {
        Ok(self.flow_row(scope)?.1)
    }

    fn waiting_docs(&self) -> Result<Vec<String>, StoreError> {
        let pool = self.pool();
        self.wait(async move { sqlx::query_scalar("SELECT scope FROM vwf_flow WHERE waiting").fetch_all(&pool).await.map_err(db) })
    }

    fn add_run_stats(&self, stats: &vwf_core::stats::RunStats) -> Result<(), StoreError> {
        self.write_stats(std::slice::from_ref(stats), true)
    }

    fn run_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<vwf_core::stats::RunStats>, StoreError> {
        self.select_stats(from, to, design)
    }

    fn reserve_run_id(&self, id: &RunId) -> Result<bool, StoreError> {
        Ok(self.execute("INSERT INTO vwf_runs (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", vec![id.to_string()])? == 1)
    }

    fn write_run_json(&self, id: &RunId, json: &[u8]) -> Result<(), StoreError> {
        self.write_run_text(id, json, true)
    }

    /// A run's first save, the only one a runner makes with `save_run_soon`, is whole: its
    /// transaction commits without waiting for the WAL to reach the disk (`synchronous_commit`
    /// off for it alone); the run's next save, or [`Store::sync`], commits synchronously, which
    /// flushes the WAL past it.
    fn save_run_soon(&self, id: &RunId, run: &Run, changes: &journal::Changes) -> Result<(), StoreError> {
        if !changes.whole {
            return self.save_run(id, run, changes);
        }
        let json = serde_json::to_vec(run).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
        self.write_run_text(id, &json, false)
    }

    fn sync(&self) -> Result<(), StoreError> {
        // A transaction that takes a transaction id commits synchronously, and its commit waits
        // for the WAL up to it, which holds every commit made before.
        let pool = self.pool();
        self.wait(async move { sqlx::query("SELECT txid_current()").execute(&pool).await.map(|_| ()).map_err(db) })
    }

    fn save_run(&self, id: &RunId, run: &Run, changes: &journal::Changes) -> Result<(), StoreError> {
        if changes.whole {
            return self.save_whole_run(id, run);
        }
        let (mut kinds, mut keys, mut docs) = (Vec::new(), Vec::new(), Vec::new());
        for part in &changes.parts {
            let Some(value) = run.part(part) else { continue };
            kinds.push(part.kind().to_string());
            keys.push(part.key());
            docs.push(to_text(&value)?);
        }
        // `$2` (the whole save's document) is NULL here, so both statements give the fence the
        // same parameters.
        let sql = concat!(
            "WITH ",
            fence_cte!(),
            ", saved AS (INSERT INTO vwf_run_parts (run_id, kind, key, doc) \
             SELECT $1, * FROM unnest($6::text[], $7::text[], $8::text[]) WHERE ",
            fenced!(),
            " ON CONFLICT (run_id, kind, key) DO UPDATE SET doc = EXCLUDED.doc) \
             UPDATE vwf_runs SET parts = true, updated_at = now() WHERE id = $1 AND doc IS NOT NULL AND $2::text IS NULL AND ",
            fenced!()
        );
        let (pool, fence, key) = (self.pool(), self.fence(id), id.to_string());
        let updated = self.wait(async move {
            let done = sqlx::query(sql)
                .bind(key)
                .bind(None::<String>)
                .bind(fence.pid)
                .bind(fence.class)
                .bind(fence.object)
                .bind(kinds)
                .bind(keys)
                .bind(docs)
                .execute(&pool)
                .await
                .map_err(db)?;
            Ok(done.rows_affected())
        })?;
        if updated == 0 {
            return Err(if self.run_exists(id)? { lock_lost(id) } else { StoreError::run_not_found(id) });
        }
        Ok(())
    }

    fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        let (pool, key) = (self.pool(), id.to_string());
        // One statement, so the document and its parts come from one snapshot.
        let rows = self.wait(async move {
            sqlx::query(
                "SELECT '' AS kind, '' AS key, doc FROM vwf_runs WHERE id = $1 AND doc IS NOT NULL \
                 UNION ALL SELECT kind, key, doc FROM vwf_run_parts WHERE run_id = $1",
            )
            .bind(key)
            .fetch_all(&pool)
            .await
            .map_err(db)
        })?;
        let mut rows = rows.into_iter().map(|row| {
            let text = |c: &str| row.try_get::<String, _>(c).map_err(db);
            Ok::<_, StoreError>((text("kind")?, text("key")?, text("doc")?))
        });
        let (_, _, doc) = rows.next().ok_or_else(|| StoreError::run_not_found(id))??;
        let parts = rows.collect::<Result<Vec<_>, _>>()?;
        crate::assemble(id, parse_doc(&doc, format!("run {id}"))?, parts)
    }

    fn read_runs(&self, ids: &[RunId]) -> Vec<Result<Value, StoreError>> {
        let (pool, keys) = (self.pool(), ids.iter().map(RunId::to_string).collect::<Vec<_>>());
        let rows = self.wait(async move {
            sqlx::query_as::<_, (String, String, bool)>("SELECT id, doc, parts FROM vwf_runs WHERE id = ANY($1) AND doc IS NOT NULL")
                .bind(keys)
                .fetch_all(&pool)
                .await
                .map_err(db)
        });
        let mut found: std::collections::HashMap<String, (String, bool)> = match rows {
            Ok(rows) => rows.into_iter().map(|(id, doc, parts)| (id, (doc, parts))).collect(),
            Err(e) => return ids.iter().map(|_| Err(e.clone())).collect(),
        };
        ids.iter()
            .map(|id| match found.remove(id.as_str()) {
                None => Err(StoreError::run_not_found(id)),
                // A run in flight has parts saved since its document: read it whole.
                Some((_, true)) => self.read_run(id),
                Some((doc, false)) => parse_doc(&doc, format!("run {id}")),
            })
            .collect()
    }

    fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError> {
        let pool = self.pool();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.wait(async move {
            sqlx::query("SELECT id, doc, parts FROM vwf_runs WHERE doc IS NOT NULL ORDER BY seq DESC LIMIT $1")
                .bind(limit)
                .fetch_all(&pool)
                .await
                .map_err(db)
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                // Ids are written only as parsed run ids.
                let id = RunId::parse(row.try_get("id").ok()?).ok()?;
                let doc: String = row.try_get("doc").ok()?;
                // A run in flight has parts saved since its document: read it whole.
                let run = match row.try_get::<bool, _>("parts") {
                    Ok(true) => self.read_run(&id),
                    _ => parse_doc(&doc, format!("run {id}")),
                };
                Some(RunEntry { id, run: run.map_err(|e| e.to_string()) })
            })
            .collect())
    }

    fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError> {
        let pool = self.pool();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let cursor = before.map(|b| b.to_string());
        let ids: Option<Vec<String>> = self.wait(async move {
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
        })?;
        match (ids, before) {
            (Some(ids), _) => Ok(ids.iter().filter_map(|id| RunId::parse(id).ok()).collect()),
            (None, Some(before)) => Err(StoreError::run_not_found(before)),
            (None, None) => Ok(Vec::new()),
        }
    }

    fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        if !self.run_exists(id)? {
            return Err(StoreError::run_not_found(id));
        }
        let lock = self
            .advisory(run_key(id), true, true)?
            .ok_or_else(|| StoreError::other(format!("cannot lock run {id}"), "the lock was not granted"))?;
        Ok(RunLock::new(id.clone(), lock))
    }

    fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        if !self.run_exists(id)? {
            return Err(StoreError::run_not_found(id));
        }
        Ok(self.advisory(run_key(id), false, true)?.map(|lock| RunLock::new(id.clone(), lock)))
    }
}
