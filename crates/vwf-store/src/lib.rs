//! Where designs and runs are kept, behind one small trait.
//!
//! The runner, the CLI, the server and the tools only see [`Store`]: designs by [`DesignName`],
//! runs by [`RunId`], JSON values in and out, a newest-first run listing and a per-run lock.
//! No file-system word appears in the signatures: the file store (`fs.rs`) and the PostgreSQL
//! store shared by several server instances (`pg/`: lock → advisory lock, listing → `ORDER BY
//! created_at DESC LIMIT n`, id reservation → `INSERT`) implement the same trait.
//!
//! Invariants every implementation keeps:
//! - names and ids are parsed (`vwf_core::names`) before they reach a store, so a store never
//!   builds a location out of unchecked text;
//! - a write is all-or-nothing: a reader sees the previous value or the new one, never a mix;
//! - a damaged or foreign entry is reported for that entry only and never breaks a listing;
//! - reading a store that was never written gives empty lists and `NotFound`, not errors.
//!
//! [`fs::FileStore`] is the store of SPEC §1 (plain JSON files under the home directory).
//!
//! The traits are async: the server awaits its reads on its runtime, and blocking code (the
//! runner, the daemon, the CLI) waits for a call with [`Wait::wait`] (see `wait.rs`).

mod atomic;
pub mod changes;
mod commit;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod copy;
mod flow;
pub mod fs;
mod index;
mod jobs;
mod journal;
mod keys;
pub mod pg;
mod stats;
mod tidy;
mod versions;
pub mod wait;
mod waiting;

use serde::Deserialize;
use serde_json::Value;
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::run::journal::{Changes, Part};
use vwf_core::run::settle::Summary;
use vwf_core::schedule::job::Job;
use vwf_core::stats::RunStats;
use vwf_core::time::Ts;
use vwf_core::versions::DesignVersion;

pub use fs::FileStore;
pub use pg::{PgSettings, PgStore};
pub use tidy::{Finding, STALE_AFTER};
pub use versions::version_not_found;
pub use wait::{Wait, may_block};

/// A run document read back from its last whole save and the parts saved since (as a store
/// keeps them: kind, key, JSON text), applied in part order. A part that cannot be read or
/// applied makes the run unreadable (`Corrupt`): a reader never guesses.
pub fn assemble(id: &RunId, doc: Value, parts: impl IntoIterator<Item = (String, String, String)>) -> Result<Value, StoreError> {
    let corrupt = |message: String| StoreError::Corrupt { path: format!("run {id}"), message };
    let mut parts = parts
        .into_iter()
        .map(|(kind, key, text)| {
            let part = Part::parse(&kind, &key).ok_or_else(|| corrupt(format!("unknown part {kind}:{key}")))?;
            let value = serde_json::from_str::<Value>(&text).map_err(|e| corrupt(format!("part {kind}:{key}: {e}")))?;
            Ok((part, value))
        })
        .collect::<Result<Vec<(Part, Value)>, StoreError>>()?;
    if parts.is_empty() {
        return Ok(doc);
    }
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    let mut run: Run = serde_json::from_value(doc).map_err(|e| corrupt(e.to_string()))?;
    for (part, value) in parts {
        run.apply(&part, value).map_err(corrupt)?;
    }
    serde_json::to_value(&run).map_err(|e| corrupt(e.to_string()))
}

/// How soon a [`Store::save_run`] must be durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Durable when the call returns: the save a step's side effect or an answer depends on.
    Now,
    /// Durable once a later save through this handle returns, or [`Store::sync`]: for a save
    /// nothing depends on yet (a run's start, when nobody has been told of the run and no step
    /// has acted), so a store that makes saves durable in shared flushes lets the run's next
    /// save carry it.
    Soon,
}

/// How [`Store::end_fresh_run`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshEnd {
    /// The run is saved, ended, with its stats record.
    Saved,
    /// Nothing was written: the design is no longer at the revision the run was made from (it
    /// was saved again, or deleted).
    DesignChanged,
    /// Nothing was written: a run has the id, it is reserved, or another process holds its lock.
    IdTaken,
}

/// A saved design as a run's start reads it ([`Store::load_design_with_newest`]).
#[derive(Debug)]
pub struct SavedDesign {
    pub graph: Value,
    /// Its newest recorded version, or the error reading that (a run then records none).
    pub newest: Result<Option<DesignVersion>, StoreError>,
    /// Which save of the design this is, where the store numbers them so that every save
    /// changes the number and no later save repeats one (PostgreSQL: a sequence); `None` where it
    /// does not (the file store: a modification time can repeat within the clock's tick).
    pub revision: Option<u64>,
}

/// Persistence of designs and runs. Async: blocking code waits for a call with
/// [`Wait::wait`](wait::Wait::wait).
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// Names of the saved designs, sorted. Entries that are not designs are ignored.
    async fn list_designs(&self) -> Result<Vec<String>, StoreError>;
    /// The saved graph of a design: `NotFound` or `Corrupt` when it cannot be had.
    async fn load_design(&self, name: &DesignName) -> Result<Value, StoreError>;
    /// Saves (creates or replaces) a design; returns where it was saved, to show to the user.
    async fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError>;
    /// Saves a design only if none has this name, else `Exists`; the check and the write are one
    /// step, so of two callers creating the same name exactly one succeeds.
    async fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError>;
    async fn design_exists(&self, name: &DesignName) -> bool;
    /// Removes a saved design (`NotFound` when there is none). Runs keep the plan they started
    /// with, so they stay readable.
    async fn delete_design(&self, name: &DesignName) -> Result<(), StoreError>;
    /// Every recorded version of a design, oldest first (`vwf_core::versions`). Versions outlive
    /// their design: a deleted design's runs still show the version they ran.
    async fn list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError>;
    /// The newest recorded version of a design (what a save compares with and a run start looks
    /// up), without reading the others; `None` when there is none.
    async fn newest_version(&self, name: &DesignName) -> Result<Option<DesignVersion>, StoreError> {
        Ok(self.list_versions(name).await?.pop())
    }
    /// [`Store::load_design`] with [`Store::newest_version`] of it (or the error reading that):
    /// what a run's start reads. A store that can read both in one request overrides this, and
    /// one that keeps [`SavedDesign::revision`]s gives it too.
    async fn load_design_with_newest(&self, name: &DesignName) -> Result<SavedDesign, StoreError> {
        Ok(SavedDesign { graph: self.load_design(name).await?, newest: self.newest_version(name).await, revision: None })
    }
    /// Records a version; `Exists` when its number is taken (another save got it first), and a
    /// recorded version is never replaced.
    async fn add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError>;
    /// Removes a version (pruning); `NotFound` when there is none.
    async fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError>;
    /// The names of the designs that have recorded versions, sorted (to copy a store).
    async fn versioned_designs(&self) -> Result<Vec<String>, StoreError>;
    /// A token that changes whenever the design is saved or deleted (the file store: its file's
    /// modification time and length), so a caller that keeps a design's trigger can tell cheaply
    /// whether to read it again; `None` when the store cannot tell, and the caller re-reads on a
    /// timer instead.
    async fn design_stamp(&self, name: &DesignName) -> Option<String>;

    /// A fresh run id from a CSPRNG, reserved in the store so no other caller
    /// (in this process or another) gets the same one.
    async fn allocate_run_id(&self) -> Result<RunId, StoreError>;
    /// Reserves `id`, chosen by the caller (a run id derived from another, see
    /// `RunId::derived`), so it can be locked and saved like an allocated one. Answers whether
    /// this call reserved it: `false` when it was reserved (or saved) before. Atomic: of callers
    /// racing for one id, one gets `true`.
    async fn reserve_run_id(&self, id: &RunId) -> Result<bool, StoreError>;
    /// The one way a run is written: what changed in a run we hold the lock of since its last
    /// save (see `vwf_core::run::journal`), the whole document when `changes.whole`, else only
    /// the changed parts, which a store that keeps parts writes in a size bounded by those parts.
    /// Readers see the same document either way; the first save of an id makes it the newest
    /// entry of [`Store::list_runs`]. With [`Durability::Soon`] the save may return before it is
    /// durable (see there).
    async fn save_run(&self, id: &RunId, run: &Run, changes: &Changes, durability: Durability) -> Result<(), StoreError>;
    /// Returns once every save handed to this handle is durable (see [`Durability::Soon`]).
    async fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Puts a run document as it is, whole and durable: what a store copy, a repair and a test's
    /// fixture write. Not a run being driven (that is [`Store::save_run`]): the document is not
    /// checked to be one the engine reads.
    async fn import_run(&self, id: &RunId, doc: &Value) -> Result<(), StoreError>;
    async fn read_run(&self, id: &RunId) -> Result<Value, StoreError>;
    /// [`Store::read_run`] of each id, in order: what a listing page reads. A store that can
    /// read many runs in one request overrides this.
    async fn read_runs(&self, ids: &[RunId]) -> Vec<Result<Value, StoreError>> {
        let mut runs = Vec::with_capacity(ids.len());
        for id in ids {
            runs.push(self.read_run(id).await);
        }
        runs
    }
    /// At most `limit` runs, newest first (by first write). A run that cannot be read is
    /// listed with its error instead of its value.
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError>;
    /// [`Store::list_runs`] as typed summaries: what callers that decide about many runs (which
    /// are due, which fired lately) read, so none of them looks into a run's stored JSON. A store
    /// that keeps these fields apart overrides this to skip reading whole runs.
    async fn list_summaries(&self, limit: usize) -> Result<Vec<SummaryEntry>, StoreError> {
        Ok(self
            .list_runs(limit)
            .await?
            .into_iter()
            .map(|e| {
                let summary = e.run.and_then(|v| serde_json::from_value(v).map_err(|err| format!("run {} cannot be read: {err}", e.id)));
                SummaryEntry { id: e.id, summary }
            })
            .collect())
    }
    /// At most `limit` ids of runs that have a document, newest first, starting after `before`
    /// (from the newest when `None`): one page of the listing, for callers that read and filter
    /// the runs themselves. `NotFound` when `before` is not in the listing. The cost does not
    /// grow with the number of runs read before the cursor.
    async fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError>;
    /// The summary of one run (see [`Store::list_summaries`]).
    async fn read_run_summary(&self, id: &RunId) -> Result<Summary, StoreError> {
        let run = self.read_run(id).await?;
        Summary::deserialize(&run).map_err(|e| StoreError::Corrupt { path: format!("run {id}"), message: e.to_string() })
    }
    /// Keeps the stats record of a run that ended (see [`vwf_core::stats`]); a later record of
    /// the same run replaces it.
    async fn add_run_stats(&self, stats: &RunStats) -> Result<(), StoreError>;
    /// The stats records of the runs whose latest end lies in `[from, to)`, of `design` when
    /// given, each run once, in no particular order.
    async fn run_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<RunStats>, StoreError>;
    /// Publishes on `to` a notice for every change any process makes to this store's runs, designs
    /// and jobs, from now on; `false` for a store that cannot (its waiters read again on a timer).
    fn notify_changes(&self, to: &crate::changes::Changes) -> bool {
        let _ = to;
        false
    }
    /// Waits for the run's exclusive lock (held across processes) and holds it until the
    /// guard drops. `NotFound` if the id was neither allocated nor written. A store may hold an
    /// id from [`Store::allocate_locked_run`] by its lock alone until the run's first save: its
    /// lock is waited for, and the run is `NotFound` if its maker let it go unsaved.
    async fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError>;
    /// Like [`Store::lock_run`] but returns `None` at once when someone else holds the lock
    /// (also the lock of an id allocated and not saved yet).
    async fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError>;
    /// A fresh run id ([`Store::allocate_run_id`]) with its lock held ([`Store::lock_run`]): what
    /// a new run needs before its first save. A store that can do both in one request overrides
    /// this.
    async fn allocate_locked_run(&self) -> Result<RunLock, StoreError> {
        let id = self.allocate_run_id().await?;
        self.lock_run(&id).await
    }
    /// [`Store::allocate_locked_run`] for a run of saved design `design`, with the design's
    /// [`SavedDesign::revision`] read in the same request: a caller that compiled the design
    /// earlier knows whether it is still what is saved without reading it again. `None` when the
    /// store keeps no revisions, or the design is not saved.
    async fn allocate_locked_run_for(&self, design: &DesignName) -> Result<(RunLock, Option<u64>), StoreError> {
        let _ = design;
        Ok((self.allocate_locked_run().await?, None))
    }
    /// A fresh run id drawn without a request, for a run that may be saved only once it ended
    /// ([`Store::end_fresh_run`]); `None` (the default) for a store that does not end runs so.
    fn fresh_run_id(&self) -> Option<RunId> {
        None
    }
    /// Saves `run`, ended and never saved before, under its id from [`Store::fresh_run_id`],
    /// whole and durable with its stats record, in one request, if its design is still at
    /// `revision` ([`SavedDesign::revision`]) and no run (nor any lock) has the id; else writes
    /// nothing and answers why. What a run of steps with no outside effect costs: nobody knew of
    /// it before, so it needs no lock, and it can be made again from the start when this answers
    /// no.
    async fn end_fresh_run(&self, run: &Run, revision: u64) -> Result<FreshEnd, StoreError> {
        let _ = revision;
        Err(StoreError::other(format!("cannot save run {}", run.run_id()), "this store does not end fresh runs in one request"))
    }
    /// Notes, durably, that run `id` waits for `event` (a `wait_event` step), with `note` (what
    /// it waits for, as the runner words it), so an event finds the runs waiting for it however
    /// many runs came after them, and which of them it matches without reading each. Noting again
    /// replaces the note. A note is a hint: the run's record says whether it still waits.
    async fn add_waiter(&self, event: &str, id: &RunId, note: &str) -> Result<(), StoreError>;
    /// The runs noted waiting for `event`, with their notes, in no particular order.
    async fn waiters(&self, event: &str) -> Result<Vec<(RunId, String)>, StoreError>;
    /// Drops the note that run `id` waits for `event` (none there is fine).
    async fn remove_waiter(&self, event: &str, id: &RunId) -> Result<(), StoreError>;
    /// Records `claim` for its key unless a claim of the key made at or after `fresh_since` is
    /// kept, durably, and answers the claim kept: `claim` itself when this call recorded it.
    /// Atomic across processes and instances: of callers racing for one key, exactly one
    /// records its claim and every one is answered that claim.
    async fn claim_key(&self, claim: &KeyClaim, fresh_since: Ts) -> Result<KeyClaim, StoreError>;
    /// Sets the answer of the claim of `key` made at `at`, durably, or with `None` drops the
    /// claim (its request was refused: the key is free again); a newer claim of the key is left
    /// alone.
    async fn settle_key(&self, key: &str, at: Ts, answer: Option<&Value>) -> Result<(), StoreError>;
    /// Edits the flow-control document of `scope` (the runtime's own JSON: a design's concurrency
    /// slots, a trigger's burst or window, a rate limit's bucket) atomically across processes
    /// and instances, durably: `edit` is given the document as stored (`null` when there is none)
    /// and may be called again when another writer came in between; leaving `null` deletes it.
    /// Answers the document as kept.
    async fn edit_doc(&self, scope: &str, edit: &mut (dyn for<'v> FnMut(&'v mut Value) + Send)) -> Result<Value, StoreError>;
    /// The flow-control document of `scope` as stored (`null` when there is none).
    async fn read_doc(&self, scope: &str) -> Result<Value, StoreError>;
    /// The scopes whose document waits for something to happen ([`is_waiting`]), in no set order.
    async fn waiting_docs(&self) -> Result<Vec<String>, StoreError>;
}

/// Whether a flow-control document waits for something (its `"waiting"` is `true`): the daemon
/// looks at those scopes ([`Store::waiting_docs`]).
pub fn is_waiting(doc: &Value) -> bool {
    doc.get("waiting") == Some(&Value::Bool(true))
}

/// What an idempotency key stands for (see [`Store::claim_key`]): the first request that
/// carried it, and what that request answers.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct KeyClaim {
    pub key: String,
    /// What the request was: a hash of its target and body, so the same key with another body
    /// is told apart.
    pub fingerprint: String,
    /// When the claim was made (to the millisecond, as it reads back).
    #[serde(with = "vwf_core::time")]
    pub at: Ts,
    /// What the request answers, as its caller words it; `null` until the caller settles it.
    pub answer: Value,
}

impl KeyClaim {
    /// A claim of `key` made at `now` (kept to the millisecond, so what is stored reads back
    /// equal).
    pub fn new(key: &str, fingerprint: String, now: Ts, answer: Value) -> KeyClaim {
        let at = vwf_core::time::parse(&vwf_core::time::format(&now)).unwrap_or(now);
        KeyClaim { key: key.to_string(), fingerprint, at, answer }
    }
}

/// What the time-driven side of a home keeps (SPEC §10): schedule jobs, the last fire of each
/// heartbeat trigger, and the claim of the one daemon that fires them. A sibling of [`Store`]
/// that the same backend implements; `App` holds both.
///
/// Invariants every implementation keeps, beyond [`Store`]'s:
/// - every read-modify-write of jobs happens under [`JobStore::lock_jobs`], held across
///   processes, so two processes ticking one home never lose an update or fire a fire twice;
/// - a job that cannot be read is listed with why, and never breaks the listing;
/// - `has_jobs` is false for a home that never stored a job, so ticking it creates nothing.
#[async_trait::async_trait]
pub trait JobStore: Send + Sync {
    /// Every job, sorted by id; an entry that cannot be read is listed as `(job_id, why)`.
    async fn list_jobs(&self) -> Result<Vec<JobEntry>, StoreError>;
    /// The job of `design`: `None` when it has none.
    async fn read_job(&self, design: &DesignName) -> Result<Option<Job>, StoreError>;
    /// Saves (creates or replaces) a job, atomically; its `job_id` names its design.
    async fn write_job(&self, job: &Job) -> Result<(), StoreError>;
    /// Removes the job of `design` (`NotFound` when there is none).
    async fn remove_job(&self, design: &DesignName) -> Result<(), StoreError>;
    /// Whether a job may exist (a job was stored once); when not, a tick has nothing to do.
    async fn has_jobs(&self) -> bool;
    /// Waits for the jobs' exclusive lock, held across processes until the guard drops. Never
    /// held while a run works.
    async fn lock_jobs(&self) -> Result<StoreLock, StoreError>;
    /// The recorded last fire of a heartbeat design (`None` when never fired or unreadable).
    async fn last_fire(&self, design: &DesignName) -> Option<Ts>;
    /// Records a heartbeat fire, whatever was recorded before (copying a store).
    async fn record_fire(&self, design: &DesignName, at: Ts) -> Result<(), StoreError>;
    /// Claims the heartbeat fire `at` of `design`, durably, before its run starts: recorded (and
    /// `true`) only if the last fire recorded is still `last`, so of several daemons that saw the
    /// same fire due exactly one claims it.
    async fn claim_fire(&self, design: &DesignName, last: Option<Ts>, at: Ts) -> Result<bool, StoreError>;
    /// Every recorded heartbeat fire, by design name (to copy a store).
    async fn list_fires(&self) -> Result<Vec<(DesignName, Ts)>, StoreError>;
    /// Claims the home's triggers for one daemon for as long as the guard lives; `Busy` while
    /// another daemon (in any process) holds the claim.
    async fn claim_triggers(&self) -> Result<StoreLock, StoreError>;
}

/// A line of a job listing: the job, or `(job_id, why)` for one that cannot be read.
pub type JobEntry = Result<Job, (String, String)>;

/// Holds a store-wide lock or claim ([`JobStore::lock_jobs`], [`JobStore::claim_triggers`]);
/// dropping it releases it. Opaque like [`RunLock`].
pub struct StoreLock {
    _guard: Box<dyn Send + Sync>,
}

impl StoreLock {
    pub fn new(guard: impl Send + Sync + 'static) -> Self {
        Self { _guard: Box::new(guard) }
    }
}

impl std::fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLock").finish_non_exhaustive()
    }
}

/// One line of a run listing.
#[derive(Debug)]
pub struct RunEntry {
    pub id: RunId,
    /// The run document, or why it could not be read (e.g. `... is not valid JSON: ...`).
    pub run: Result<Value, String>,
}

/// One line of [`Store::list_summaries`].
#[derive(Debug)]
pub struct SummaryEntry {
    pub id: RunId,
    /// The run's summary, or why it could not be read.
    pub summary: Result<Summary, String>,
}

/// Holds a run's exclusive lock; dropping it releases the lock.
///
/// Opaque on purpose: each store puts its own guard inside (a locked file, a database
/// connection holding an advisory lock, ...).
pub struct RunLock {
    id: RunId,
    _guard: Box<dyn Send + Sync>,
}

impl RunLock {
    pub fn new(id: RunId, guard: impl Send + Sync + 'static) -> Self {
        Self { id, _guard: Box::new(guard) }
    }

    /// The run this lock holds.
    pub fn id(&self) -> &RunId {
        &self.id
    }
}

impl std::fmt::Debug for RunLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLock").field("id", &self.id).finish_non_exhaustive()
    }
}

/// What can go wrong in a store, worded for the user.
///
/// The cases are what callers branch on: an entry that is missing, there already, damaged or
/// held by someone else; a store that is full, out of reach, or failed otherwise. The last three
/// keep the error that caused them as their [`source`](std::error::Error::source), and their
/// `action` says what was being done (it may name a file or a table; the API's edge shows users
/// a message without it, see `Failure`).
#[derive(thiserror::Error, Debug, Clone)]
pub enum StoreError {
    /// What is missing, e.g. `design "x"` or `run d7b493cae249`.
    #[error("{0} not found")]
    NotFound(String),
    /// What is there already, e.g. `design "x"`.
    #[error("{0} already exists")]
    Exists(String),
    /// `path` is where the user finds the entry (relative to the home for the file store).
    #[error("{path} is not valid JSON: {message}")]
    Corrupt { path: String, message: String },
    /// Valid JSON that is not what it should be, e.g. a run document without a status.
    #[error("{what} cannot be read: {message}")]
    Unreadable { what: String, message: String },
    /// Held by someone else for now, e.g. the home's triggers by another daemon (a full message).
    #[error("{0}")]
    Busy(String),
    /// The disk (or the user's quota) is full: nothing was written.
    #[error("{action}: {source}")]
    Full { action: String, source: Source },
    /// The store cannot be reached now (the database is down or refuses connections): trying
    /// again later may work.
    #[error("{action}: {source}")]
    Unavailable { action: String, source: Source },
    /// Any other failure of the storage underneath.
    #[error("{action}: {source}")]
    Io { action: String, source: Source },
}

/// The error beneath a [`StoreError`], shared so the error stays `Clone`.
pub type Source = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// A cause with no error value beneath it (a bug, an exhausted retry), as a [`Source`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Cause(pub String);

impl StoreError {
    /// An I/O error while doing `action`: `Full` for a full disk or quota, else `Io`.
    pub fn io(action: impl Into<String>, e: std::io::Error) -> Self {
        let action = action.into();
        let full = matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
            || matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT));
        let source: Source = std::sync::Arc::new(e);
        if full { Self::Full { action, source } } else { Self::Io { action, source } }
    }
    /// A failure with no error beneath it (`action` says what, `why` why).
    pub fn other(action: impl Into<String>, why: impl Into<String>) -> Self {
        Self::Io { action: action.into(), source: std::sync::Arc::new(Cause(why.into())) }
    }
    /// A value that cannot be serialised (a bug: every stored type serialises).
    pub fn encode(what: impl std::fmt::Display, e: serde_json::Error) -> Self {
        Self::Io { action: format!("cannot encode {what}"), source: std::sync::Arc::new(e) }
    }
    /// This error as `Unavailable` when it is `Io`: what a caller that could not reach the store
    /// at all (connecting failed) reports, whatever failed underneath.
    pub fn unreachable(self) -> Self {
        match self {
            Self::Io { action, source } => Self::Unavailable { action, source },
            other => other,
        }
    }
    /// Whether trying again later may work (the store is full or out of reach).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Full { .. } | Self::Unavailable { .. })
    }
    pub fn design_not_found(name: &DesignName) -> Self {
        Self::NotFound(format!("design {:?}", name.as_str()))
    }
    pub fn design_exists(name: &DesignName) -> Self {
        Self::Exists(format!("design {:?}", name.as_str()))
    }
    pub fn run_not_found(id: &RunId) -> Self {
        Self::NotFound(format!("run {id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_error_messages() {
        let name = DesignName::parse("x").unwrap();
        assert_eq!(StoreError::design_not_found(&name).to_string(), r#"design "x" not found"#);
        let id = RunId::parse("d7b493cae249").unwrap();
        assert_eq!(StoreError::design_exists(&name).to_string(), r#"design "x" already exists"#);
        assert_eq!(StoreError::run_not_found(&id).to_string(), "run d7b493cae249 not found");
        let corrupt = StoreError::Corrupt { path: "workflow-runs/abc.json".into(), message: "EOF".into() };
        assert_eq!(corrupt.to_string(), "workflow-runs/abc.json is not valid JSON: EOF");
    }

    #[test]
    fn store_is_object_safe() {
        fn _takes(_: &dyn Store) {}
    }
}
