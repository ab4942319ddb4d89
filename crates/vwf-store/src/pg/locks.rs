//! Advisory locks on PostgreSQL, and the run locks' sessions.
//!
//! A lock is a session advisory lock held on a connection taken from the pool for as long as the
//! guard lives. A run's lock is more: its connection is the run's **session**, and every save of
//! the run this process makes while it holds the lock goes through it. A save is so made only
//! while the session that holds the lock lives: if the connection is lost (a network cut, a
//! terminated backend, the database restarting), PostgreSQL has released the lock, and the save
//! fails on the dead connection instead of overwriting whoever took the run over. No save reads
//! `pg_locks` to check (a view that takes every lock-manager partition, so every instance's
//! saves queued behind each other), and a run holds one connection, not two.
//!
//! A session also carries what need not cost a round trip of its own:
//! - the run's first save (`Durability::Soon`): written by the run's next save, whole (one
//!   statement either way), or before the lock is let go, or by [`Store::sync`], or before this
//!   process reads the run;
//! - the run's stats record (`add_run_stats`): written by the statement that lets the lock go.
//!
//! A fresh run's id is held by its lock alone: the statement that locks it writes nothing, and
//! the run's first save inserts its row, only if no row has that id (so a run never overwrites
//! another, even if two draws of 48 random bits met). While the run is not saved nobody else can
//! find it: every other lock of a run is taken for its row only. So when the first save is also
//! the run's end (a run of typed steps), that one statement inserts the ended run, keeps its stats
//! and lets the lock go: the lock goes before the statement commits, but the run becomes visible
//! only at the commit, after its WAL is on disk, so nobody can take it over before its end is
//! durable. A run of typed steps so costs two statements: one that locks its id, one that saves it
//! ended and unlocks it; its end is told by the notifier (see [`notices`](super::notices)), since
//! NOTIFY in a commit that waits for the disk would serialize every instance's commits.
//!
//! [`Store::sync`]: crate::Store::sync

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres};
use vwf_core::names::RunId;
use vwf_core::stats::RunStats;

use super::store::{ALLOCATE_ATTEMPTS, insert_first, keep_stats_and_unlock, random_run_id, save_whole};
use super::{Locking, PgStore, run_key};
use crate::RunLock;
use crate::StoreError;
use vwf_core::names::DesignName;

/// The connection that holds a lock, and for a run's lock what waits to be written with the run's
/// next statement on it.
pub(super) struct Session {
    /// `None` once the guard let the lock go.
    pub(super) conn: tokio::sync::Mutex<Option<PoolConnection<Postgres>>>,
    pub(super) later: std::sync::Mutex<Later>,
    /// Tells this guard's session from a later one of the same run in the [`Held`] map.
    token: u64,
}

/// What a run's lock holder handed over to be written later (see the module doc).
#[derive(Default)]
pub(super) struct Later {
    /// The run's first save, whole, not written yet.
    pub(super) doc: Option<String>,
    /// The run's stats record, kept when the lock is let go.
    pub(super) stats: Option<RunStats>,
    /// The notice of a save made under the lock, sent when the lock is let go (see
    /// [`notices`](super::notices)).
    pub(super) notice: Option<String>,
    /// The run's row is not written yet: its first save inserts it (see the module doc).
    pub(super) fresh: bool,
    /// The statement that saved the run ended let the lock go, and kept its stats: the guard
    /// has nothing left to write, and a save after it takes the lock again first.
    pub(super) released: bool,
}

impl Session {
    /// The session of a lock taken on `conn`; `fresh`: of a run id not saved before.
    pub(super) fn new(conn: PoolConnection<Postgres>, fresh: bool) -> Arc<Session> {
        static TOKENS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let token = TOKENS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let later = Later { fresh, ..Later::default() };
        Arc::new(Session { conn: tokio::sync::Mutex::new(Some(conn)), later: std::sync::Mutex::new(later), token })
    }

    pub(super) fn later(&self) -> std::sync::MutexGuard<'_, Later> {
        self.later.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a first save waits to be written.
    pub(super) fn has_doc(&self) -> bool {
        self.later().doc.is_some()
    }

    /// Writes the run's first save if it still waits, on `conn` (which the caller took from this
    /// session); whether it wrote one.
    pub(super) async fn flush(&self, conn: &mut PgConnection, id: &RunId) -> Result<bool, StoreError> {
        let Some(doc) = self.later().doc.take() else { return Ok(false) };
        if let Err(e) = self.write_whole(conn, id, doc.clone(), None).await {
            // Kept for the next try: nothing was written.
            self.later().doc.get_or_insert(doc);
            return Err(e);
        }
        Ok(true)
    }

    /// A whole save of run `id` on `conn` (this session's): the insert of its row while it is
    /// fresh (an id some other run has is an error, and nothing is written), else
    /// [`save_whole`]. A lock let go at the run's end is taken again first.
    pub(super) async fn write_whole(
        &self,
        conn: &mut PgConnection,
        id: &RunId,
        doc: String,
        quick: Option<&'static str>,
    ) -> Result<(), StoreError> {
        self.relock(conn, id).await?;
        if !self.later().fresh {
            return save_whole(conn, id.as_str(), doc, quick).await.map_err(|e| on_session(id, e));
        }
        match insert_first(conn, id, doc).await.map_err(|e| on_session(id, e))? {
            true => {
                self.later().fresh = false;
                Ok(())
            }
            false => Err(id_taken(id)),
        }
    }

    /// Takes the run's lock again on `conn` when the run's end let it go (a save after the end:
    /// the lock is waited for, so it is never made while another holds the run).
    pub(super) async fn relock(&self, conn: &mut PgConnection, id: &RunId) -> Result<(), StoreError> {
        if !self.later().released {
            return Ok(());
        }
        sqlx::query("SELECT pg_advisory_lock($1)").bind(super::run_key(id)).execute(conn).await.map_err(|e| on_session(id, e))?;
        self.later().released = false;
        Ok(())
    }
}

/// The run locks this process holds: lock key → the run's session.
pub(super) type Held = Arc<std::sync::Mutex<HashMap<i64, Arc<Session>>>>;

/// A session advisory lock and the connection that holds it; unlocked (and the connection given
/// back) when dropped, after writing what its run's session still carries. If the connection is
/// lost, PostgreSQL has released the lock already.
pub(super) struct AdvisoryLock {
    pub(super) session: Arc<Session>,
    pub(super) key: i64,
    pub(super) handle: tokio::runtime::Handle,
    /// For a run's lock: the run, and where the process notes the sessions it holds.
    pub(super) run: Option<(RunId, Held)>,
    /// Where a notice goes when it cannot ride on the unlock (see [`notices`](super::notices)).
    pub(super) notices: Arc<super::notices::Notifier>,
    /// Given back after the lock and its connection (fields drop after `drop`).
    pub(super) _slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl AdvisoryLock {
    /// Notes a run's lock in `held`, so the run's saves find its session.
    pub(super) fn hold(mut self, id: &RunId, held: &Held) -> AdvisoryLock {
        held.lock().unwrap_or_else(|e| e.into_inner()).insert(self.key, self.session.clone());
        self.run = Some((id.clone(), held.clone()));
        self
    }
}

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        let (session, key, run, notices) = (self.session.clone(), self.key, self.run.take(), self.notices.clone());
        // Released before the guard's owner goes on, as a file lock is.
        let _ = super::block(&self.handle, async move {
            // Held until the lock is let go: a reader of this process that finds the run's first
            // save still waiting here waits, and then finds it written.
            let mut slot = session.conn.lock().await;
            let released = std::mem::take(&mut session.later().released);
            if released && let Some(conn) = slot.take() {
                // The run's end let the lock go and kept its stats: nothing is left to write.
                drop(conn);
            } else if let Some(mut conn) = slot.take() {
                let released = async {
                    if let Some((id, _)) = &run
                        && session.flush(&mut conn, id).await.map_err(|e| e.to_string())?
                    {
                        session.later().notice.get_or_insert_with(|| super::notices::payload(id, false));
                    }
                    let (stats, mut notice) = {
                        let mut later = session.later();
                        (later.stats.take(), later.notice.take())
                    };
                    if notices.busy()
                        && let Some(notice) = notice.take()
                    {
                        notices.send(notice);
                    }
                    keep_stats_and_unlock(&mut conn, key, stats, notice).await.map_err(|e| e.to_string())
                }
                .await;
                if released.is_err() {
                    // A connection in an unknown state must not go back to the pool holding a lock.
                    let _ = conn.close().await;
                }
            }
            drop(slot);
            if let Some((_, held)) = &run {
                let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
                if held.get(&key).is_some_and(|s| s.token == session.token) {
                    held.remove(&key);
                }
            }
            Ok::<(), StoreError>(())
        });
    }
}

/// Run locks taken for a run that is not saved yet, and fresh ids.
impl PgStore {
    /// The lock of run `id`, found with no row: taken (`wait`: waited for) whatever the row, then
    /// the run looked for under it, so a run its maker saved meanwhile is locked and one that is
    /// still not there is `NotFound` (and let go). `None`: someone holds it.
    pub(super) async fn lock_unsaved(&self, id: &RunId, wait: bool) -> Result<Option<RunLock>, StoreError> {
        let Some(lock) = self.advisory(run_key(id), Locking::Key { wait }).await? else { return Ok(None) };
        match self.run_exists(id).await? {
            true => Ok(Some(RunLock::new(id.clone(), lock.hold(id, &self.inner.held)))),
            false => Err(StoreError::run_not_found(id)),
        }
    }

    pub(super) async fn allocate_locked(&self, design: Option<&DesignName>) -> Result<(RunLock, Option<u64>), StoreError> {
        for _ in 0..ALLOCATE_ATTEMPTS {
            let id = random_run_id()?;
            let how = Locking::New { id: id.to_string(), design: design.map(DesignName::to_string) };
            if let Some((lock, revision)) = self.advisory_revision(run_key(&id), how).await? {
                return Ok((RunLock::new(id.clone(), lock.hold(&id, &self.inner.held)), revision));
            }
        }
        Err(StoreError::other("cannot allocate a run id", format!("no free run id after {ALLOCATE_ATTEMPTS} tries")))
    }
}

/// A run's first save that found its id saved by another run: nothing was written.
pub(super) fn id_taken(id: &RunId) -> StoreError {
    StoreError::other(
        format!("run {id} was not saved"),
        "another run was saved with the same id (drawn at random twice); nothing was overwritten",
    )
}

/// The error of a statement on a run's session: the connection lost means the lock was lost.
pub(super) fn on_session(id: &RunId, e: sqlx::Error) -> StoreError {
    match super::db(e) {
        StoreError::Unavailable { .. } => lock_lost(id),
        other => other,
    }
}

/// A save that could not be made because the session holding the run's lock is gone (the database
/// went away or ended the connection). `Unavailable`: nothing was saved, and a caller told to come
/// back later finds the run as its new owner (or the next reader) leaves it.
pub(super) fn lock_lost(id: &RunId) -> StoreError {
    StoreError::Unavailable {
        action: format!("run {id} was not saved"),
        source: Arc::new(crate::Cause(
            "this process lost the run's lock (its database connection ended), so another may have taken the run over".into(),
        )),
    }
}
