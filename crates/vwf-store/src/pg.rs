//! The PostgreSQL store: [`Store`] and [`JobStore`] on one database, so several `vwf serve`
//! instances share designs, runs, schedule jobs and trigger state (`[store] url` or
//! `VWF_DATABASE_URL`). The file store stays the default.
//!
//! Built on sqlx (pool, migrations with their own advisory lock, LISTEN/NOTIFY for the change
//! notices every instance publishes); the traits
//! are blocking, so every call runs on the store's own small tokio runtime and the caller waits
//! for the answer on a channel. That never nests runtimes, whatever thread calls.
//!
//! Invariants:
//! - The schema is applied at connect under sqlx's migration lock, so instances starting together
//!   do not race; a database whose schema is newer than this binary is refused at connect.
//! - Documents are stored as the JSON text vwf wrote (see `migrations/0001_store.sql`) and read
//!   back with the same parser as files: whatever is written reads back.
//! - A run's lock, the jobs lock and the trigger claim are session advisory locks held on a
//!   connection taken from the pool for as long as the guard lives. An instance that dies closes
//!   its connections, and PostgreSQL releases its locks: a run it was driving is found `running`
//!   with no owner and settles as interrupted, exactly as with the file store.
//! - Run locks held at once are fewer than the pool's connections ([`lock_slots`]): a lock
//!   holder needs another connection to write, so lockers beyond the slots wait for one instead
//!   of taking every connection and leaving the holders none (which stalled an instance driving
//!   more runs at once than its pool size until the acquire timeout failed them all).
//! - Lock keys: a run id is 48 bits, so its key is the id itself (no two runs share one); the
//!   store-wide locks use negative keys no run can have.

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Postgres, Row, SqlSafeStr};
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::run::journal;
use vwf_core::schedule::job::{Job, design_of, job_id};
use vwf_core::time::Ts;
use vwf_core::versions::DesignVersion;

use super::{Cause, JobEntry, JobStore, RunEntry, RunLock, Source, Store, StoreError, StoreLock};
use crate::changes::{Change, Changes};

/// The schema, oldest first; embedded so the binary needs no files beside it.
const MIGRATIONS: [(i64, &str, &str); 4] = [
    (1, "store", include_str!("../migrations/0001_store.sql")),
    (2, "notify", include_str!("../migrations/0002_notify.sql")),
    (3, "run_parts", include_str!("../migrations/0003_run_parts.sql")),
    (4, "design_versions", include_str!("../migrations/0004_design_versions.sql")),
];
/// The channel every write notifies (see `migrations/0002_notify.sql`).
const CHANGES_CHANNEL: &str = "vwf_changes";
/// How long the listener waits before connecting again after an error.
const LISTEN_RETRY: Duration = Duration::from_secs(1);
/// Where sqlx records which migrations ran.
const MIGRATIONS_TABLE: &str = "vwf_schema_migrations";
/// Advisory lock keys of the store-wide locks (run ids are never negative).
const JOBS_LOCK_KEY: i64 = -1;
const TRIGGERS_CLAIM_KEY: i64 = -2;
/// How many fresh ids `allocate_run_id` tries before giving up.
const ALLOCATE_ATTEMPTS: usize = 32;

/// How to reach the database: `[store]` in `visual-workflow.toml`, with `VWF_DATABASE_URL` winning
/// over `url`.
#[derive(Debug, Clone, PartialEq)]
pub struct PgSettings {
    pub url: String,
    /// Connections in the pool (each held run lock takes one while it is held).
    pub pool_size: u32,
    /// How long one statement may run before the server cancels it.
    pub statement_timeout: Duration,
    /// How long a caller waits for a free connection before the call fails.
    pub acquire_timeout: Duration,
}

impl PgSettings {
    pub const DEFAULT_POOL_SIZE: u32 = 16;
    pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

    pub fn new(url: impl Into<String>) -> PgSettings {
        PgSettings {
            url: url.into(),
            pool_size: Self::DEFAULT_POOL_SIZE,
            statement_timeout: Self::DEFAULT_STATEMENT_TIMEOUT,
            acquire_timeout: Self::DEFAULT_ACQUIRE_TIMEOUT,
        }
    }
}

/// The PostgreSQL store. Cheap to clone: clones share the pool and the runtime.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    runtime: Option<tokio::runtime::Runtime>,
    /// The URL without its password, to name the database in messages.
    shown: String,
    /// One permit per run lock that may be held at once ([`lock_slots`]).
    lock_slots: Arc<tokio::sync::Semaphore>,
    acquire_timeout: Duration,
    /// The run locks this process holds: lock key → the holding session's backend pid and the
    /// guard's token. A save of a run whose lock is held here is fenced on that session still
    /// holding it (see [`Fence`]).
    held: Held,
}

/// Run locks held by this process: lock key → (backend pid, guard token).
type Held = Arc<std::sync::Mutex<std::collections::HashMap<i64, (i32, u64)>>>;

/// A save's fence: the write happens only while the session that took the run's lock still holds
/// it. A lock's connection can be lost while its process lives (a network cut, a backend
/// terminated): PostgreSQL then releases the lock and another instance may take the run over, so
/// a write from the old holder would overwrite the new one's. The fence makes that write change
/// nothing and fail instead. `pid` is NULL for a save made without the run's lock (an import),
/// which is not fenced.
struct Fence {
    pid: Option<i32>,
    class: i64,
    object: i64,
}

/// A fenced statement's first common table expression: the [`Fence`]'s condition, with the pid,
/// class and object as parameters `$3`, `$4` and `$5`, evaluated once. Each part of the statement
/// asks [`fenced!`] for its answer. `pg_locks` is a live view, not a snapshot: evaluated in each
/// part, the lock's session could end between them (its process killed mid-statement) and one
/// part be written without the other, e.g. a whole save's document replaced while the parts it
/// supersedes stay, so a reader would apply a stale head over it. `MATERIALIZED` makes every part
/// read the one answer.
macro_rules! fence_cte {
    () => {
        "fence AS MATERIALIZED (SELECT ($3::int IS NULL OR EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' \
         AND granted AND pid = $3 AND classid::bigint = $4 AND objid::bigint = $5 AND objsubid = 1)) AS held)"
    };
}

/// The condition of a statement that starts with [`fence_cte!`].
macro_rules! fenced {
    () => {
        "(SELECT held FROM fence)"
    };
}

/// Connections beside the run locks: the change listener's, the trigger claim's, the jobs lock's
/// and one for statements.
const UNLOCKED_CONNECTIONS: u32 = 4;

/// The pool's connections for `pool_size`, and how many run locks may be held at once: at least
/// one, with [`UNLOCKED_CONNECTIONS`] beside them.
fn lock_slots(pool_size: u32) -> (u32, u32) {
    let slots = pool_size.saturating_sub(UNLOCKED_CONNECTIONS).max(1);
    (slots + UNLOCKED_CONNECTIONS, slots)
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Never blocks, so dropping the store is safe on any thread.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("database", &self.inner.shown).finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects and brings the schema up to date. A URL that cannot be parsed, a database that
    /// cannot be reached and a schema newer than this binary are errors naming the database.
    pub fn connect(settings: &PgSettings) -> Result<PgStore, StoreError> {
        let (options, shown) = connect_options(settings)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("vwf-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("cannot start the database runtime", e))?;
        let (connections, slots) = lock_slots(settings.pool_size);
        let pool_options = PgPoolOptions::new().max_connections(connections).acquire_timeout(settings.acquire_timeout);
        let connected = runtime.block_on(async move {
            // One connection first, so a server that is down or refuses us is reported with its
            // own error at once, not as a pool that timed out.
            PgConnection::connect_with(&options).await?.close().await?;
            let pool = pool_options.connect_with(options).await?;
            migrator().run(&pool).await.map_err(sqlx::Error::from)?;
            Ok::<PgPool, sqlx::Error>(pool)
        });
        let pool = connected.map_err(|e| connect_error(&shown, e))?;
        let lock_slots = Arc::new(tokio::sync::Semaphore::new(slots as usize));
        Ok(PgStore {
            inner: Arc::new(Inner {
                pool,
                runtime: Some(runtime),
                shown,
                lock_slots,
                acquire_timeout: settings.acquire_timeout,
                held: Arc::default(),
            }),
        })
    }

    /// Connects on one connection, brings the schema up to date under the migration lock and says
    /// what it applied (`vwf store migrate`), without opening a pool. A schema newer than this
    /// binary is the same error as at connect.
    pub fn migrate_at(settings: &PgSettings) -> Result<Migrated, StoreError> {
        let (options, shown) = connect_options(settings)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("cannot start the database runtime", e))?;
        let versions = runtime.block_on(async move {
            let mut conn = PgConnection::connect_with(&options).await?;
            let before = applied_versions(&mut conn).await?;
            migrator().run(&mut conn).await.map_err(sqlx::Error::from)?;
            let after = applied_versions(&mut conn).await?;
            conn.close().await?;
            Ok::<_, sqlx::Error>((before, after))
        });
        let (before, after) = versions.map_err(|e| connect_error(&shown, e))?;
        let applied = MIGRATIONS
            .iter()
            .filter(|(version, _, _)| after.contains(version) && !before.contains(version))
            .map(|(version, name, _)| AppliedMigration { version: *version, name: (*name).to_string() })
            .collect();
        Ok(Migrated { database: shown, applied, version: after.iter().copied().max().unwrap_or_default() })
    }

    /// Applies the schema explicitly; `connect` does it too.
    pub fn migrate(&self) -> Result<(), StoreError> {
        let pool = self.pool();
        let shown = self.inner.shown.clone();
        self.wait(async move { migrator().run(&pool).await.map_err(|e| connect_error(&shown, e.into())) })
    }

    /// Starts the task that LISTENs for every instance's change notices and publishes them on
    /// `changes`; after each (re)connection it publishes `Resync`, since notices sent while it was
    /// away are lost.
    fn listen(&self, changes: Changes) {
        let Some(runtime) = &self.inner.runtime else { return };
        let pool = self.pool();
        runtime.spawn(async move {
            loop {
                if let Ok(mut listener) = PgListener::connect_with(&pool).await
                    && listener.listen(CHANGES_CHANNEL).await.is_ok()
                {
                    changes.publish(Change::Resync);
                    loop {
                        match listener.try_recv().await {
                            Ok(Some(notice)) => {
                                if let Some(change) = Change::parse(notice.payload()) {
                                    changes.publish(change);
                                }
                            }
                            // The connection was lost; the next call reconnects and listens again.
                            Ok(None) => changes.publish(Change::Resync),
                            Err(_) => break,
                        }
                    }
                }
                tokio::time::sleep(LISTEN_RETRY).await;
            }
        });
    }

    /// The database, without its password.
    pub fn shown(&self) -> &str {
        &self.inner.shown
    }

    fn pool(&self) -> PgPool {
        self.inner.pool.clone()
    }

    /// Runs `fut` on the store's runtime and waits for its answer.
    fn wait<T: Send + 'static>(&self, fut: impl Future<Output = Result<T, StoreError>> + Send + 'static) -> Result<T, StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let Some(runtime) = &self.inner.runtime else {
            return Err(StoreError::other("cannot reach the database", "the database runtime has stopped"));
        };
        runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().unwrap_or_else(|_| Err(StoreError::other("cannot reach the database", "the database call was dropped")))
    }

    /// Takes a connection and, on it, the session advisory lock `key`: waiting for it (`wait`) or
    /// not (`None` when someone holds it). A run's lock (`run`) first takes a lock slot.
    fn advisory(&self, key: i64, wait: bool, run: bool) -> Result<Option<AdvisoryLock>, StoreError> {
        let pool = self.pool();
        let (slots, timeout) = (self.inner.lock_slots.clone(), self.inner.acquire_timeout);
        let conn = self.wait(async move {
            let slot = match run {
                false => None,
                true => match tokio::time::timeout(timeout, slots.acquire_owned()).await.ok().and_then(Result::ok) {
                    Some(slot) => Some(slot),
                    None => {
                        return Err(StoreError::Unavailable {
                            action: "cannot lock a run".into(),
                            source: Arc::new(Cause("timed out waiting for a free run lock slot ([store] pool_size)".into())),
                        });
                    }
                },
            };
            let mut conn = pool.acquire().await.map_err(db)?;
            let (got, pid) = if wait {
                let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock($1)) AS locked")
                    .bind(key)
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(db)?;
                (true, pid)
            } else {
                sqlx::query_as::<_, (bool, i32)>("SELECT pg_try_advisory_lock($1), pg_backend_pid()")
                    .bind(key)
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(db)?
            };
            Ok(got.then_some((conn, slot, pid)))
        })?;
        let handle = self.inner.runtime.as_ref().map(|r| r.handle().clone());
        let Some(((conn, slot, pid), handle)) = conn.zip(handle) else { return Ok(None) };
        let held = run.then(|| {
            static TOKENS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let token = TOKENS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.inner.held.lock().unwrap_or_else(|e| e.into_inner()).insert(key, (pid, token));
            (self.inner.held.clone(), token)
        });
        Ok(Some(AdvisoryLock { conn: Some(conn), key, handle, held, _slot: slot }))
    }

    /// The fence of a save of run `id` (see [`Fence`]).
    fn fence(&self, id: &RunId) -> Fence {
        let key = run_key(id);
        let pid = self.inner.held.lock().unwrap_or_else(|e| e.into_inner()).get(&key).map(|(pid, _)| *pid);
        Fence { pid, class: key >> 32, object: key & 0xffff_ffff }
    }

    /// Runs one statement with text parameters; answers how many rows it changed.
    fn execute(&self, sql: &'static str, params: Vec<String>) -> Result<u64, StoreError> {
        let pool = self.pool();
        self.wait(async move {
            let query = params.into_iter().fold(sqlx::query(sql), |q, p| q.bind(p));
            Ok(query.execute(&pool).await.map_err(db)?.rows_affected())
        })
    }

    /// The text of the first column of the one row a query with text parameters finds, if any.
    fn fetch_text(&self, sql: &'static str, params: Vec<String>) -> Result<Option<String>, StoreError> {
        let pool = self.pool();
        self.wait(async move {
            let query = params.into_iter().fold(sqlx::query_scalar(sql), |q, p| q.bind(p));
            query.fetch_optional(&pool).await.map_err(db)
        })
    }

    fn run_exists(&self, id: &RunId) -> Result<bool, StoreError> {
        let pool = self.pool();
        let id = id.to_string();
        self.wait(async move {
            let found = sqlx::query("SELECT 1 FROM vwf_runs WHERE id = $1").bind(id).fetch_optional(&pool).await.map_err(db)?;
            Ok(found.is_some())
        })
    }
}

/// A session advisory lock and the connection that holds it; unlocked (and the connection given
/// back) when dropped. If the connection is lost, PostgreSQL has released the lock already.
struct AdvisoryLock {
    conn: Option<PoolConnection<Postgres>>,
    key: i64,
    handle: tokio::runtime::Handle,
    /// For a run's lock: where the process notes the locks it holds, and this guard's token.
    held: Option<(Held, u64)>,
    /// Given back after the lock and its connection (fields drop after `drop`).
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        if let Some((held, token)) = &self.held {
            let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
            if held.get(&self.key).is_some_and(|(_, t)| t == token) {
                held.remove(&self.key);
            }
        }
        let Some(mut conn) = self.conn.take() else { return };
        let key = self.key;
        let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
        self.handle.spawn(async move {
            if sqlx::query("SELECT pg_advisory_unlock($1)").bind(key).execute(&mut *conn).await.is_err() {
                // A connection in an unknown state must not go back to the pool holding a lock.
                let _ = conn.close().await;
            }
            let _ = tx.send(());
        });
        // Released before the guard's owner goes on, as a file lock is.
        let _ = rx.recv();
    }
}

fn migrator() -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|(version, name, sql)| Migration::new(*version, (*name).into(), MigrationType::Simple, sql.into_sql_str(), false))
        .collect();
    let mut migrator = Migrator::with_migrations(migrations);
    migrator.dangerous_set_table_name(MIGRATIONS_TABLE);
    migrator
}

/// What [`PgStore::migrate_at`] did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Migrated {
    /// The database, without its password.
    pub database: String,
    /// The migrations this call applied, oldest first (none when the schema was up to date).
    pub applied: Vec<AppliedMigration>,
    /// The schema version the database is at now.
    pub version: i64,
}

/// One embedded migration, by version and name.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AppliedMigration {
    pub version: i64,
    pub name: String,
}

/// The URL checked and read into connect options (with the statement timeout), and the URL as
/// messages show it.
fn connect_options(settings: &PgSettings) -> Result<(PgConnectOptions, String), StoreError> {
    let shown = redact(&settings.url);
    if !["postgres://", "postgresql://"].iter().any(|scheme| settings.url.starts_with(scheme)) {
        return Err(StoreError::other(
            format!("[store] url is not a PostgreSQL URL ({shown})"),
            "it starts with postgres:// or postgresql://",
        ));
    }
    let options = PgConnectOptions::from_str(&settings.url)
        .map_err(|e| StoreError::other(format!("[store] url is not a PostgreSQL URL ({shown})"), e.to_string()))?
        .options([("statement_timeout", settings.statement_timeout.as_millis().to_string())]);
    Ok((options, shown))
}

/// The versions the migrations table records as applied (none before the first migration).
async fn applied_versions(conn: &mut PgConnection) -> Result<Vec<i64>, sqlx::Error> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL").bind(MIGRATIONS_TABLE).fetch_one(&mut *conn).await?;
    if !exists {
        return Ok(Vec::new());
    }
    let sql = format!("SELECT version FROM {MIGRATIONS_TABLE} WHERE success ORDER BY version");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *conn).await
}

/// A database error as a store error.
fn db(e: sqlx::Error) -> StoreError {
    classified("database error".into(), e)
}

/// `e` as the store error a caller can branch on: the database out of reach (the connection, the
/// pool, the server shutting down) is `Unavailable`, its disk full is `Full` (SQLSTATE 53100),
/// anything else `Io`.
fn classified(action: String, e: sqlx::Error) -> StoreError {
    let code = e.as_database_error().and_then(|d| d.code()).map(|c| c.into_owned());
    let unreachable = matches!(e, sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed)
        || code.as_deref().is_some_and(|c| c.starts_with("08") || c.starts_with("57P"));
    let source: Source = Arc::new(e);
    match code.as_deref() {
        Some("53100") => StoreError::Full { action, source },
        _ if unreachable => StoreError::Unavailable { action, source },
        _ => StoreError::Io { action, source },
    }
}

/// Why connecting failed, in the user's words.
fn connect_error(shown: &str, e: sqlx::Error) -> StoreError {
    match e {
        sqlx::Error::Migrate(m) => match *m {
            sqlx::migrate::MigrateError::VersionMissing(v) => StoreError::other(
                format!("cannot use the database {shown}"),
                format!("it has schema version {v}, newer than this vwf knows (up to {}); use a newer vwf", MIGRATIONS.len()),
            ),
            other => StoreError::Io { action: format!("cannot bring the schema of {shown} up to date"), source: Arc::new(other) },
        },
        other => classified(format!("cannot connect to the database {shown}"), other),
    }
}

/// `postgres://user:secret@host/db` without the secret.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return "(a URL that cannot be read)".into() };
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => format!("{}@{host}", user.split(':').next().unwrap_or_default()),
        None => authority.to_string(),
    };
    let path = path.split('?').next().unwrap_or_default();
    format!("{scheme}://{authority}/{path}")
}

/// Parses a stored document as the file store parses a file.
fn parse_doc(text: &str, what: String) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt { path: what, message: e.to_string() })
}

fn to_text(value: &Value) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::encode("a document", e))
}

/// A fenced save that changed nothing: the session holding the run's lock is gone.
fn lock_lost(id: &RunId) -> StoreError {
    StoreError::other(
        format!("run {id} was not saved"),
        "this process lost the run's lock (its database connection ended), so another may have taken the run over",
    )
}

fn run_key(id: &RunId) -> i64 {
    let bytes = id.as_str().as_bytes();
    // 12 lowercase hex digits: 48 bits, so the key is exactly the id.
    std::str::from_utf8(bytes).ok().and_then(|s| i64::from_str_radix(s, 16).ok()).unwrap_or_default()
}

impl PgStore {
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
            0 => Err(super::versions::version_exists(name, version.version)),
            _ => Ok(()),
        }
    }

    fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        let number = i64::try_from(version).map_err(|_| super::version_not_found(name, version))?;
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
            0 => Err(super::version_not_found(name, version)),
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
        super::assemble(id, parse_doc(&doc, format!("run {id}"))?, parts)
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

impl JobStore for PgStore {
    fn list_jobs(&self) -> Result<Vec<JobEntry>, StoreError> {
        let pool = self.pool();
        let rows =
            self.wait(async move { sqlx::query("SELECT design, job FROM vwf_jobs ORDER BY design").fetch_all(&pool).await.map_err(db) })?;
        let mut entries: Vec<JobEntry> = rows
            .into_iter()
            .filter_map(|row| {
                let design: String = row.try_get("design").ok()?;
                let text: String = row.try_get("job").ok()?;
                let id = format!("{}{design}", vwf_core::schedule::job::JOB_PREFIX);
                Some(match serde_json::from_str::<Job>(&text) {
                    Ok(job) if job.job_id == id => Ok(job),
                    Ok(job) => Err((id, format!("the stored job says job_id {:?}, not its own", job.job_id))),
                    Err(e) => Err((id, format!("schedule job of {design:?} is not a schedule job: {e}"))),
                })
            })
            .collect();
        entries.sort_by(|a, b| entry_id(a).cmp(entry_id(b)));
        Ok(entries)
    }

    fn read_job(&self, design: &DesignName) -> Result<Option<Job>, StoreError> {
        let text = self.fetch_text("SELECT job FROM vwf_jobs WHERE design = $1", vec![design.to_string()])?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| StoreError::Corrupt { path: format!("schedule job of {:?}", design.as_str()), message: e.to_string() })
        })
        .transpose()
    }

    fn write_job(&self, job: &Job) -> Result<(), StoreError> {
        let design = design_of(&job.job_id)
            .ok_or_else(|| StoreError::other(format!("cannot save a job with the id {:?}", job.job_id), "the id names no design"))?;
        let text = serde_json::to_string(job).map_err(|e| StoreError::encode("a schedule job", e))?;
        self.execute(
            "INSERT INTO vwf_jobs (design, job) VALUES ($1, $2) ON CONFLICT (design) DO UPDATE SET job = EXCLUDED.job",
            vec![design.to_string(), text],
        )
        .map(drop)
    }

    fn remove_job(&self, design: &DesignName) -> Result<(), StoreError> {
        match self.execute("DELETE FROM vwf_jobs WHERE design = $1", vec![design.to_string()])? {
            0 => Err(StoreError::NotFound(format!("schedule job {:?}", job_id(design)))),
            _ => Ok(()),
        }
    }

    fn has_jobs(&self) -> bool {
        let pool = self.pool();
        self.wait(async move { sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM vwf_jobs)").fetch_one(&pool).await.map_err(db) })
            .unwrap_or(true)
    }

    fn lock_jobs(&self) -> Result<StoreLock, StoreError> {
        let lock = self
            .advisory(JOBS_LOCK_KEY, true, false)?
            .ok_or_else(|| StoreError::other("cannot lock the schedule jobs", "the lock was not granted"))?;
        Ok(StoreLock::new(lock))
    }

    fn last_fire(&self, design: &DesignName) -> Option<Ts> {
        let (pool, key) = (self.pool(), design.to_string());
        self.wait(async move {
            sqlx::query_scalar("SELECT last_fired_at FROM vwf_trigger_state WHERE design = $1")
                .bind(key)
                .fetch_optional(&pool)
                .await
                .map_err(db)
        })
        .ok()
        .flatten()
    }

    fn record_fire(&self, design: &DesignName, at: Ts) -> Result<(), StoreError> {
        let (pool, key) = (self.pool(), design.to_string());
        self.wait(async move {
            sqlx::query(
                "INSERT INTO vwf_trigger_state (design, last_fired_at) VALUES ($1, $2) \
                 ON CONFLICT (design) DO UPDATE SET last_fired_at = EXCLUDED.last_fired_at",
            )
            .bind(key)
            .bind(at)
            .execute(&pool)
            .await
            .map_err(db)?;
            Ok(())
        })
    }

    fn claim_fire(&self, design: &DesignName, last: Option<Ts>, at: Ts) -> Result<bool, StoreError> {
        let (pool, key) = (self.pool(), design.to_string());
        self.wait(async move {
            let done = match last {
                None => {
                    sqlx::query("INSERT INTO vwf_trigger_state (design, last_fired_at) VALUES ($1, $2) ON CONFLICT (design) DO NOTHING")
                        .bind(key)
                        .bind(at)
                        .execute(&pool)
                        .await
                }
                Some(last) => {
                    sqlx::query("UPDATE vwf_trigger_state SET last_fired_at = $2 WHERE design = $1 AND last_fired_at = $3")
                        .bind(key)
                        .bind(at)
                        .bind(last)
                        .execute(&pool)
                        .await
                }
            };
            Ok(done.map_err(db)?.rows_affected() == 1)
        })
    }

    fn list_fires(&self) -> Result<Vec<(DesignName, Ts)>, StoreError> {
        let pool = self.pool();
        let rows = self.wait(async move {
            sqlx::query("SELECT design, last_fired_at FROM vwf_trigger_state ORDER BY design").fetch_all(&pool).await.map_err(db)
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let design: String = row.try_get("design").ok()?;
                Some((DesignName::parse(&design).ok()?, row.try_get("last_fired_at").ok()?))
            })
            .collect())
    }

    fn claim_triggers(&self) -> Result<StoreLock, StoreError> {
        match self.advisory(TRIGGERS_CLAIM_KEY, false, false)? {
            Some(lock) => Ok(StoreLock::new(lock)),
            None => Err(StoreError::Busy(format!("another vwf daemon is already running on {}", self.inner.shown))),
        }
    }
}

fn entry_id(entry: &JobEntry) -> &str {
    match entry {
        Ok(job) => &job.job_id,
        Err((id, _)) => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(redact("postgres://vwf:s3cret@db.example:5432/runs?sslmode=require"), "postgres://vwf@db.example:5432/runs");
        assert_eq!(redact("postgres://db/runs"), "postgres://db/runs");
        assert_eq!(redact("nonsense"), "(a URL that cannot be read)");
    }

    #[test]
    fn a_run_lock_key_is_the_run_id() {
        let id = RunId::parse("d7b493cae249").expect("id");
        assert_eq!(run_key(&id), 0xd7b493cae249);
        assert!(run_key(&RunId::parse("ffffffffffff").expect("id")) > 0);
    }
}
