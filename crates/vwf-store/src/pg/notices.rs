//! Run change notices on PostgreSQL, sent by the store once a save has committed.
//!
//! Until `migrations/0009_run_notices.sql` a trigger sent them from inside every run save. NOTIFY
//! serializes the commits of all notifying transactions of the cluster under one lock held through
//! the commit's WAL flush, so every instance's saves then committed one at a time and never shared
//! a flush. Now:
//! - a save that leaves the run in flight is told by the notifier task, which sends what queued
//!   up meanwhile in one statement (`run:<id>`);
//! - the end (`end:<id>`) of a run whose first save was its end is told by the notifier: the
//!   statement that saved it let the lock go, and it waited for the disk;
//! - another run's end, and a first save written only when the lock goes, are told by the
//!   statement that lets the run's lock go (see [`locks`](super::locks)) when the notifier is idle,
//!   so such a run costs no statement more; while the notifier is busy they join its next
//!   statement, so under load many runs' notices share one commit instead of each unlock taking
//!   NOTIFY's lock;
//! - the notifier gathers notices for [`GATHER`] before it sends them, so under load one
//!   statement tells of many saves;
//! - a save made without the run's lock (an import) is told by the notifier task;
//! - what the notifier still holds when the store is dropped is sent first (waiting at most
//!   [`FLUSH_WAIT`]), so a command that exits right after its run still tells the others.
//!
//! Every statement that notifies commits without waiting for the disk: a notice is a hint, never
//! the state, and the save it tells of was durable before. A notice lost (the process died between
//! the save and the notice, the database went away) leaves waiters to their own timers: a long poll
//! answers at its timeout, the daemon's periodic scan looks at every run.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sqlx::PgPool;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use vwf_core::names::RunId;

use super::CHANGES_CHANNEL;

/// How long the notifier gathers notices before it sends them: under load, many runs' notices
/// then share one statement (measured with the scale benchmark at 16 clients: one notifier
/// statement for every 2 runs without the wait, for every 9 with it), and a waiter on another
/// instance hears of a save this much later.
const GATHER: std::time::Duration = std::time::Duration::from_millis(2);

/// At most this many notices go in one statement.
const MAX_BATCH: usize = 1000;

/// Sends the notices bound as `$1`, committing without waiting for the disk.
const NOTIFY_MANY: &str = "WITH quick AS MATERIALIZED (SELECT set_config('synchronous_commit', 'off', true)) \
     SELECT count(pg_notify($2, notice)) FROM quick, unnest($1::text[]) AS notice";

/// The notice of a save of run `id` (see `crate::changes::Change::parse`).
pub(super) fn payload(id: &RunId, ended: bool) -> String {
    format!("{}:{id}", if ended { "end" } else { "run" })
}

/// How long dropping the store waits for the notifier to send what it holds.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

enum Message {
    Notice(String),
    /// Answered once everything sent before is sent.
    Flush(std::sync::mpsc::SyncSender<()>),
}

/// The notifier task's handle.
pub(super) struct Notifier {
    tx: UnboundedSender<Message>,
    /// Whether the task is sending or has notices queued.
    busy: Arc<AtomicBool>,
}

impl Notifier {
    /// Starts the notifier task on `runtime`: what is sent to it is noticed, in batches.
    pub(super) fn start(runtime: &tokio::runtime::Handle, pool: PgPool) -> Notifier {
        let (tx, mut rx) = unbounded_channel::<Message>();
        let busy = Arc::new(AtomicBool::new(false));
        let working = busy.clone();
        runtime.spawn(async move {
            while let Some(first) = rx.recv().await {
                working.store(true, Ordering::SeqCst);
                // What comes in meanwhile goes in the same statement.
                if matches!(first, Message::Notice(_)) {
                    tokio::time::sleep(GATHER).await;
                }
                let (mut batch, mut flushed) = (BTreeSet::new(), Vec::new());
                let mut next = Some(first);
                while let Some(message) = next {
                    match message {
                        Message::Notice(notice) => drop(batch.insert(notice)),
                        Message::Flush(done) => flushed.push(done),
                    }
                    next = if batch.len() < MAX_BATCH { rx.try_recv().ok() } else { None };
                }
                if !batch.is_empty() {
                    let batch: Vec<String> = batch.into_iter().collect();
                    // A hint: when it cannot be sent, waiters fall back on their timers.
                    let _ = sqlx::query(NOTIFY_MANY).bind(batch).bind(CHANGES_CHANNEL).execute(&pool).await;
                }
                for done in flushed {
                    let _ = done.send(());
                }
                working.store(!rx.is_empty(), Ordering::SeqCst);
            }
        });
        Notifier { tx, busy }
    }

    /// Queues a notice.
    pub(super) fn send(&self, notice: String) {
        self.busy.store(true, Ordering::SeqCst);
        let _ = self.tx.send(Message::Notice(notice));
    }

    /// Whether the task is sending or holds notices: a notice that can ride on a statement made
    /// anyway goes there only while it is not (see the module doc).
    pub(super) fn busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// Waits (at most [`FLUSH_WAIT`]) until what was queued before is sent.
    pub(super) fn flush(&self) {
        let (done, sent) = std::sync::mpsc::sync_channel(1);
        if self.tx.send(Message::Flush(done)).is_ok() {
            let _ = sent.recv_timeout(FLUSH_WAIT);
        }
    }
}
