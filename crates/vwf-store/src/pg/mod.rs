//! The PostgreSQL store: [`Store`] and [`JobStore`] on one database, so several `vwf serve`
//! instances share designs, runs, schedule jobs and trigger state (`[store] url` or
//! `VWF_DATABASE_URL`). The file store stays the default.
//!
//! Built on sqlx (pool, migrations with their own advisory lock, LISTEN/NOTIFY for the change
//! notices every instance publishes). A statement runs on the runtime the store was opened in (the
//! server's, for `vwf serve`: one runtime in the process; see `PgStore::call`). Opened outside a
//! multi-threaded runtime (the CLI, a test), the store starts a small runtime of its own for its
//! connections' I/O. What is not a trait call (connecting, migrating, a lock's release when its
//! guard drops) is driven from blocking code by [`block`].
//!
//! Invariants:
//! - The schema is applied at connect under sqlx's migration lock, so instances starting together
//!   do not race; a database whose schema is newer than this binary is refused at connect.
//! - Documents are stored as the JSON text vwf wrote (see `migrations/0001_store.sql`) and read
//!   back with the same parser as files: whatever is written reads back.
//! - A run's lock, the jobs lock and the trigger claim are session advisory locks held on a
//!   connection taken from the pool for as long as the guard lives ([`locks`]). An instance that
//!   dies closes its connections, and PostgreSQL releases its locks: a run it was driving is found
//!   `running` with no owner and settles as interrupted, exactly as with the file store. A run's
//!   saves go through its lock's connection, so they are made only while the lock is held.
//! - Run locks held at once are fewer than the pool's connections ([`lock_slots`]): a lock
//!   holder may need another connection to read, so lockers beyond the slots wait for one instead
//!   of taking every connection and leaving the holders none (which stalled an instance driving
//!   more runs at once than its pool size until the acquire timeout failed them all).
//! - Lock keys: a run id is 48 bits, so its key is the id itself (no two runs share one); the
//!   store-wide locks use negative keys no run can have.
//!
//! This file holds the connection (its pool, runtime and change listener) and what every
//! statement shares; [`locks`] holds the advisory locks and the runs' sessions, [`schema`] the
//! migrations, [`store`] the [`Store`] impl (designs, versions, runs) and [`jobs`] the
//! [`JobStore`] impl (schedule jobs, trigger state).
//!
//! [`Store`]: crate::Store
//! [`JobStore`]: crate::JobStore

use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};
use vwf_core::names::RunId;

use super::{Cause, Source, StoreError};
use crate::changes::{Change, Changes};
use locks::{AdvisoryLock, Held, Session};

mod fresh;
mod jobs;
mod locks;
mod notices;
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
    /// The runtime the store's I/O and tasks run on.
    handle: tokio::runtime::Handle,
    /// That runtime, when the store started it (opened outside a multi-threaded runtime).
    own: Option<tokio::runtime::Runtime>,
    /// The URL without its password, to name the database in messages.
    shown: String,
    /// One permit per run lock that may be held at once ([`lock_slots`]).
    lock_slots: Arc<tokio::sync::Semaphore>,
    acquire_timeout: Duration,
    /// The run locks this process holds, and their sessions (see [`locks`]).
    held: Held,
    /// Whether the database is known to be out of reach (see [`Health`]).
    health: Arc<Health>,
    /// The notifier task (see [`notices`]).
    notices: Arc<notices::Notifier>,
}

/// The database out of reach: known after a call failed for want of it (or the change listener
/// lost its connection) and a fresh connection failed too. While it is, each call first tries one
/// fresh connection (bounded by [`PROBE_TIMEOUT`], at most one try per [`PROBE_EVERY`]) and
/// fails at once when that fails, instead of waiting out the pool's acquire timeout: a request
/// answers 503 in milliseconds, not seconds. The change is logged once each way.
struct Health {
    options: PgConnectOptions,
    /// The database, without its password, for the log.
    shown: String,
    down: std::sync::atomic::AtomicBool,
    /// When a probe last failed, and why.
    last_failed: std::sync::Mutex<Option<(std::time::Instant, String)>>,
}

/// How long a probe connection may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often calls made while the database is down try it again.
const PROBE_EVERY: Duration = Duration::from_millis(200);

impl Health {
    /// Tries one fresh connection (at most one try per [`PROBE_EVERY`] while down): `Ok` and the
    /// database marked up when it works, else `Unavailable` and the database marked down; each
    /// change logged once.
    async fn check(&self) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering::SeqCst;
        let unavailable =
            |why: String| StoreError::Unavailable { action: "cannot reach the database".into(), source: Arc::new(Cause(why)) };
        let recent = self.last_failed.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some((_, why)) = recent.filter(|(at, _)| at.elapsed() < PROBE_EVERY && self.down.load(SeqCst)) {
            return Err(unavailable(why));
        }
        let tried = match tokio::time::timeout(PROBE_TIMEOUT, PgConnection::connect_with(&self.options)).await {
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
                Ok(())
            }
            Ok(Err(e)) => Err(db(e).to_string()),
            Err(_) => Err(format!("no connection within {} s", PROBE_TIMEOUT.as_secs())),
        };
        match tried {
            Ok(()) => {
                *self.last_failed.lock().unwrap_or_else(|e| e.into_inner()) = None;
                if self.down.swap(false, SeqCst) {
                    tracing::info!(database = %self.shown, "the database can be reached again");
                }
                Ok(())
            }
            Err(why) => {
                *self.last_failed.lock().unwrap_or_else(|e| e.into_inner()) = Some((std::time::Instant::now(), why.clone()));
                if !self.down.swap(true, SeqCst) {
                    tracing::warn!(database = %self.shown, error = %why, "the database cannot be reached; calls answer at once that it is unavailable until it is back");
                }
                Err(unavailable(why))
            }
        }
    }
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
        // Blocks at most for the notifier's flush, so dropping the store is safe on any thread.
        self.notices.flush();
        if let Some(runtime) = self.own.take() {
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
        let own = match tokio::runtime::Handle::try_current() {
            Ok(current) if current.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => None,
            _ => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("vwf-pg")
                    .enable_all()
                    .build()
                    .map_err(|e| StoreError::io("cannot start the database runtime", e))?,
            ),
        };
        let handle = match &own {
            Some(runtime) => runtime.handle().clone(),
            None => tokio::runtime::Handle::current(),
        };
        let (connections, slots) = lock_slots(settings.pool_size);
        let pool_options = PgPoolOptions::new().max_connections(connections).acquire_timeout(settings.acquire_timeout);
        let health =
            Arc::new(Health { options: options.clone(), shown: shown.clone(), down: Default::default(), last_failed: Default::default() });
        let named = shown.clone();
        let pool = block(&handle, async move {
            let connected = async move {
                // One connection first, so a server that is down or refuses us is reported with
                // its own error at once, not as a pool that timed out.
                PgConnection::connect_with(&options).await?.close().await?;
                let pool = pool_options.connect_with(options).await?;
                migrator().run(&pool).await.map_err(sqlx::Error::from)?;
                Ok::<PgPool, sqlx::Error>(pool)
            };
            connected.await.map_err(|e| connect_error(&named, e))
        })?;
        let lock_slots = Arc::new(tokio::sync::Semaphore::new(slots as usize));
        let notices = Arc::new(notices::Notifier::start(&handle, pool.clone()));
        Ok(PgStore {
            inner: Arc::new(Inner {
                pool,
                handle,
                own,
                shown,
                lock_slots,
                acquire_timeout: settings.acquire_timeout,
                held: Arc::default(),
                health,
                notices,
            }),
        })
    }

    /// Starts the task that LISTENs for every instance's change notices and publishes them on
    /// `changes`; after each (re)connection it publishes `Resync`, since notices sent while it was
    /// away are lost.
    fn listen(&self, changes: Changes) {
        let pool = self.pool();
        let health = self.inner.health.clone();
        self.inner.handle.spawn(async move {
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
                            // Whether the database went away is known at once, so calls stop
                            // waiting out the pool's timeout.
                            Ok(None) => {
                                let _ = health.check().await;
                                changes.publish(Change::Resync);
                            }
                            Err(_) => break,
                        }
                    }
                }
                let _ = health.check().await;
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

    /// Runs `fut` on this store's runtime ([`on`]) and answers its output. While the database is
    /// known to be down, fails at once unless a fresh connection now succeeds (see [`Health`]).
    async fn call<T: Send + 'static>(&self, fut: impl Future<Output = Result<T, StoreError>> + Send + 'static) -> Result<T, StoreError> {
        let health = self.inner.health.clone();
        let checked = async move {
            use std::sync::atomic::Ordering::SeqCst;
            if health.down.load(SeqCst) {
                health.check().await?;
            }
            let answer = fut.await;
            if matches!(answer, Err(StoreError::Unavailable { .. })) && !health.down.load(SeqCst) {
                // Out of reach, or only busy (every connection taken)? A fresh connection tells.
                let _ = health.check().await;
            }
            answer
        };
        on(&self.inner.handle, checked).await
    }

    /// Takes a connection and, on it, a session advisory lock with `how` (see [`Locking`]); `None`
    /// when it was not granted (someone holds it, or the run it names is not there). A run's lock
    /// first takes a lock slot.
    async fn advisory(&self, key: i64, how: Locking) -> Result<Option<AdvisoryLock>, StoreError> {
        Ok(self.advisory_revision(key, how).await?.map(|(lock, _)| lock))
    }

    /// [`PgStore::advisory`], with the revision of the design a [`Locking::New`] names.
    async fn advisory_revision(&self, key: i64, how: Locking) -> Result<Option<(AdvisoryLock, Option<u64>)>, StoreError> {
        let pool = self.pool();
        let (slots, timeout) = (self.inner.lock_slots.clone(), self.inner.acquire_timeout);
        let run = !matches!(how, Locking::Wait | Locking::Try);
        let fresh = matches!(how, Locking::New { .. });
        let conn = self
            .call(async move {
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
                let got: Result<Option<(bool, Option<i64>, bool)>, sqlx::Error> = match how {
                    Locking::Wait | Locking::Key { wait: true } => {
                        sqlx::query_as("SELECT pg_advisory_lock($1)::text = '', NULL::bigint, false")
                            .bind(key)
                            .fetch_optional(&mut *conn)
                            .await
                    }
                    Locking::Try | Locking::Key { wait: false } => {
                        sqlx::query_as("SELECT pg_try_advisory_lock($1), NULL::bigint, false").bind(key).fetch_optional(&mut *conn).await
                    }
                    // The lock is taken for the run's row only: a run that is not there is not locked.
                    Locking::Run { wait: true, id } => {
                        sqlx::query_as("SELECT pg_advisory_lock($1)::text = '', NULL::bigint, false FROM vwf_runs WHERE id = $2")
                            .bind(key)
                            .bind(id)
                            .fetch_optional(&mut *conn)
                            .await
                    }
                    Locking::Run { wait: false, id } => {
                        sqlx::query_as("SELECT pg_try_advisory_lock($1), NULL::bigint, false FROM vwf_runs WHERE id = $2")
                            .bind(key)
                            .bind(id)
                            .fetch_optional(&mut *conn)
                            .await
                    }
                    // A fresh id is held by its lock alone until the run's first save inserts its
                    // row (see `locks`): a read that writes nothing, so it commits nothing. An id
                    // that is locked but already saved (taken before) is let go, and the caller
                    // draws another.
                    Locking::New { id, design } => {
                        sqlx::query_as(
                            "SELECT pg_try_advisory_lock($1), (SELECT version FROM vwf_designs WHERE name = $3), \
                             EXISTS (SELECT 1 FROM vwf_runs WHERE id = $2)",
                        )
                        .bind(key)
                        .bind(id)
                        .bind(design)
                        .fetch_optional(&mut *conn)
                        .await
                    }
                };
                // An id locked but saved before is let go.
                let got = match got {
                    Ok(Some((true, _, true))) => {
                        sqlx::query("SELECT pg_advisory_unlock($1)").bind(key).execute(&mut *conn).await.map(|_| None)
                    }
                    other => other,
                };
                // A session lock outlives a statement that failed after taking it: the connection
                // goes, not back to the pool.
                let got = match got {
                    Ok(got) => got,
                    Err(e) => {
                        let _ = conn.close().await;
                        return Err(db(e));
                    }
                };
                let Some((true, revision, _)) = got else { return Ok(None) };
                Ok(Some((conn, slot, revision)))
            })
            .await?;
        let Some((conn, slot, revision)) = conn else { return Ok(None) };
        let (handle, notices) = (self.inner.handle.clone(), self.inner.notices.clone());
        let lock = AdvisoryLock { session: Session::new(conn, fresh), key, handle, run: None, notices, _slot: slot };
        Ok(Some((lock, revision.and_then(|r| u64::try_from(r).ok()))))
    }

    /// Tells every instance, soon, that run `id` was saved (see [`notices`]).
    fn notice(&self, id: &RunId, ended: bool) {
        self.inner.notices.send(notices::payload(id, ended));
    }

    /// The session of run `id`'s lock, when this process holds it.
    fn session(&self, id: &RunId) -> Option<Arc<Session>> {
        self.inner.held.lock().unwrap_or_else(|e| e.into_inner()).get(&run_key(id)).cloned()
    }

    /// Runs one statement with text parameters; answers how many rows it changed.
    async fn execute(&self, sql: &'static str, params: Vec<String>) -> Result<u64, StoreError> {
        let pool = self.pool();
        self.call(async move {
            let query = params.into_iter().fold(sqlx::query(sql), |q, p| q.bind(p));
            Ok(query.execute(&pool).await.map_err(db)?.rows_affected())
        })
        .await
    }

    /// The text of the first column of the one row a query with text parameters finds, if any.
    async fn fetch_text(&self, sql: &'static str, params: Vec<String>) -> Result<Option<String>, StoreError> {
        let pool = self.pool();
        self.call(async move {
            let query = params.into_iter().fold(sqlx::query_scalar(sql), |q, p| q.bind(p));
            query.fetch_optional(&pool).await.map_err(db)
        })
        .await
    }

    async fn run_exists(&self, id: &RunId) -> Result<bool, StoreError> {
        let pool = self.pool();
        let id = id.to_string();
        self.call(async move {
            let found = sqlx::query("SELECT 1 FROM vwf_runs WHERE id = $1").bind(id).fetch_optional(&pool).await.map_err(db)?;
            Ok(found.is_some())
        })
        .await
    }
}

/// Runs `fut` on the runtime of `handle` and answers its output: polled right here when this is
/// that runtime, else spawned there, so the pool's connections and what the driver spawns stay on
/// the runtime that keeps running them.
async fn on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    let ours = tokio::runtime::Handle::try_current().is_ok_and(|current| current.id() == handle.id());
    match ours {
        true => fut.await,
        false => handle
            .spawn(fut)
            .await
            .unwrap_or_else(|e| Err(StoreError::other("cannot reach the database", format!("the database call was dropped: {e}")))),
    }
}

/// [`on`] from blocking code (see [`Wait`](crate::Wait)): what is not a trait call (connecting,
/// migrating, a lock's release when its guard drops).
pub(super) fn block<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
) -> Result<T, StoreError> {
    use crate::Wait;
    on(handle, fut).wait()
}

/// How [`PgStore::advisory`] locks.
enum Locking {
    /// A store-wide lock, waiting for it.
    Wait,
    /// A store-wide lock, if nobody holds it.
    Try,
    /// A run's lock (its id as text), if the run is there: waiting for it or not.
    Run { wait: bool, id: String },
    /// A run's lock whether its row is there or not (a fresh id is held by its lock alone until
    /// the run's first save): waiting for it or not. The caller looks for the row once it holds it.
    Key { wait: bool },
    /// A fresh run id (as text), not saved before: locked in one statement, which also reads the
    /// revision of the design the run is of, when it names one. No row is written: the lock
    /// holds the id until the run's first save inserts it (see [`locks`]).
    New { id: String, design: Option<String> },
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
    // A protocol error is a connection cut mid-message (a server stopping or starting answers
    // the TLS request with a byte of its shutdown): out of reach too.
    let unreachable = matches!(
        e,
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed
    ) || code.as_deref().is_some_and(|c| c.starts_with("08") || c.starts_with("57P"));
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
