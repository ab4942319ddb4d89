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
//!
//! This file holds the connection (its pool, runtime and change listener), the advisory locks and
//! what every statement shares; [`schema`] holds the migrations, [`store`] the [`Store`] impl
//! (designs, versions, runs) and [`jobs`] the [`JobStore`] impl (schedule jobs, trigger state).
//!
//! [`Store`]: crate::Store
//! [`JobStore`]: crate::JobStore

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Postgres};
use vwf_core::names::RunId;

use super::{Cause, Source, StoreError};
use crate::changes::{Change, Changes};

mod jobs;
mod schema;
mod stats;
mod store;

pub use schema::{AppliedMigration, Migrated};
use schema::{connect_error, migrator};

/// The channel every write notifies (see `migrations/0002_notify.sql`).
const CHANGES_CHANNEL: &str = "vwf_changes";
/// How long the listener waits before connecting again after an error.
const LISTEN_RETRY: Duration = Duration::from_secs(1);
/// Advisory lock keys of the store-wide locks (run ids are never negative).
const JOBS_LOCK_KEY: i64 = -1;
const TRIGGERS_CLAIM_KEY: i64 = -2;

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

// Named by path in the statements of `store`.
use {fence_cte, fenced};

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

fn run_key(id: &RunId) -> i64 {
    let bytes = id.as_str().as_bytes();
    // 12 lowercase hex digits: 48 bits, so the key is exactly the id.
    std::str::from_utf8(bytes).ok().and_then(|s| i64::from_str_radix(s, 16).ok()).unwrap_or_default()
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
