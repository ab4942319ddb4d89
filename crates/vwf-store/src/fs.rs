//! The file store of SPEC §1: plain JSON files under the home directory.
//!
//! ```text
//! <home>/workflow-designs/<name>.json      pretty JSON (2 spaces) + newline
//! <home>/workflow-versions/<name>/<n>.json  a design's versions (see `versions.rs`)
//! <home>/workflow-runs/<run_id>.json       compact JSON + newline, rewritten after every step
//! <home>/workflow-runs/.index              run ids in order of first write (see `index.rs`)
//! <home>/workflow-runs/.index.lock         serialises index appends and rebuilds; holds the
//!                                          index's line count (its stamp)
//! <home>/workflow-runs/.locks/<run_id>.lock  per-run lock; its creation reserves the id
//! ```
//!
//! Invariants:
//! - nothing is written outside those two directories, and only through [`atomic_write`]
//!   (temp file in the same directory, fsync, rename, directory fsync), the index append
//!   (the line, then the header's count, then fsync) and lock files; a reader never sees half a
//!   file;
//! - directories are created on the first write; reading a home that does not exist yet gives
//!   empty lists and `NotFound`;
//! - listings ignore every entry that is not `<valid name>.json` (dotfiles, temp files, strays);
//!   a `<run_id>.json` that does not parse is listed with its error;
//! - run locks are `flock`-style locks on `.locks/<run_id>.lock`, held per open file, so they
//!   exclude other processes and other handles of this process alike. A lock file is deleted
//!   only by `tidy.rs`, holding its lock, for a run that has no file and whose lock file is
//!   older than any id reservation in progress (deleting a lock file someone uses would let a
//!   second locker in on a new file).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use vwf_core::names::{DesignName, RunId};
use vwf_core::stats::RunStats;
use vwf_core::time::Ts;
use vwf_core::versions::DesignVersion;

use vwf_core::run::Run;
use vwf_core::run::journal::{Changes, Part};

use super::atomic::write_run_file;
pub use super::atomic::{atomic_create, atomic_write, atomic_write_locked};
use super::{Durability, RunEntry, RunLock, Store, StoreError, index};

pub(super) const DESIGNS_DIR: &str = "workflow-designs";
pub(super) const RUNS_DIR: &str = "workflow-runs";
pub(super) const LOCKS_DIR: &str = ".locks";
/// Where runs waiting for an event are noted: `.waiting/<event name in hex>/<run id>`, empty files.
pub(super) const WAITING_DIR: &str = ".waiting";
/// Where idempotency keys are kept (see `keys.rs`).
pub(super) const KEYS_DIR: &str = ".keys";
/// Where flow-control documents are kept (see `flow.rs`).
pub(super) const FLOW_DIR: &str = ".flow";
/// Tries before giving up on finding an unused run id (2^48 ids: a second try is already rare).
const ALLOCATE_ATTEMPTS: usize = 32;

/// The store of one home directory.
#[derive(Debug, Clone)]
pub struct FileStore {
    pub(super) home: PathBuf,
    /// What this handle knows of the run files it last wrote (see [`Checkpoint`]). Forgotten
    /// wholesale past [`CHECKPOINTS_KEPT`] runs; a run not found here has its file read.
    checkpoints: Arc<Mutex<HashMap<RunId, Checkpoint>>>,
    /// The commit log that makes this handle's run saves durable (see `commit.rs`), opened on
    /// the first save; without one every save syncs its own files.
    log: super::commit::Shared,
    /// Whether the logs of handles that are gone were recovered yet (once, before the first use).
    recovered: Arc<OnceLock<()>>,
    /// Runs whose lock a guard of this handle holds, and of those the ones whose first save is in
    /// the commit log but not yet in a run file (the run file is written at the next save, or when
    /// the guard is dropped; this handle's readers read it from here meanwhile).
    held: Arc<Mutex<HashMap<RunId, Unwritten>>>,
    /// Ids this handle allocated and has not written yet: no file, no journal, no other writer.
    fresh: Arc<Mutex<std::collections::HashSet<RunId>>>,
}

/// The bytes of a held run's file that are only in the commit log yet (see `FileStore::held`).
type Unwritten = Option<Arc<Vec<u8>>>;

/// What a handle knows of a run file it wrote: the digest its journal must name, and the lines
/// that journal holds.
#[derive(Debug, Clone)]
struct Checkpoint {
    digest: String,
    /// `Some(n)`: the journal of this run file holds `n` lines; `None`: not known.
    journal: Option<usize>,
}

/// How many runs' checkpoint digests a process keeps (a few MB at most).
const CHECKPOINTS_KEPT: usize = 10_000;

impl FileStore {
    pub fn new(home: PathBuf) -> Self {
        Self {
            home,
            checkpoints: Default::default(),
            log: Default::default(),
            recovered: Default::default(),
            held: Default::default(),
            fresh: Default::default(),
        }
    }

    pub(super) fn journal_path(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(format!("{id}.journal"))
    }

    fn checkpoint_of(&self, id: &RunId) -> Option<Checkpoint> {
        self.checkpoints.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned()
    }

    fn remember_checkpoint(&self, id: &RunId, checkpoint: Option<Checkpoint>) {
        let mut kept = self.checkpoints.lock().unwrap_or_else(|e| e.into_inner());
        match checkpoint {
            Some(c) => {
                if kept.len() >= CHECKPOINTS_KEPT {
                    kept.clear();
                }
                kept.insert(id.clone(), c);
            }
            None => {
                kept.remove(id);
            }
        }
    }

    /// Recovers, once per handle, the commit logs of handles that are gone (see `commit.rs`).
    fn recover_once(&self) {
        self.recovered.get_or_init(|| self.recover_dead_logs());
    }

    fn recover_dead_logs(&self) {
        if let Err(e) = super::commit::recover(&self.runs_dir()) {
            index::warn(&format!("the commit log of a process that ended could not be recovered: {e}"));
        }
    }

    /// The digest of the run file on disk (a run this handle has no checkpoint of).
    fn digest_on_disk(&self, id: &RunId) -> Result<String, StoreError> {
        let path = self.run_path(id);
        match fs::read(&path) {
            Ok(bytes) => Ok(super::journal::digest(&bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StoreError::run_not_found(id)),
            Err(e) => Err(io_error("read", &path, e)),
        }
    }

    /// Writes the run file of a run whose first save is only in the commit log (see `held`).
    fn write_unwritten(&self, id: &RunId) -> Result<(), StoreError> {
        let unwritten = self.held.lock().unwrap_or_else(|e| e.into_inner()).get_mut(id).and_then(Option::take);
        if let Some(bytes) = unwritten {
            let path = self.run_path(id);
            write_run_file(&path, &bytes, false).map_err(|e| io_error("write", &path, e))?;
        }
        Ok(())
    }

    /// A guard for the lock `file` holds on run `id`, which writes the run's file if it is still
    /// only in the commit log when dropped.
    fn guard(&self, id: &RunId, file: File) -> RunLock {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), None);
        // Another handle may have written the run since this one did.
        self.remember_checkpoint(id, None);
        RunLock::new(id.clone(), RunGuard { file: LockedFile(file), store: self.clone(), id: id.clone() })
    }

    pub(super) fn designs_dir(&self) -> PathBuf {
        self.home.join(DESIGNS_DIR)
    }
    pub(super) fn runs_dir(&self) -> PathBuf {
        self.home.join(RUNS_DIR)
    }
    pub(super) fn locks_dir(&self) -> PathBuf {
        self.runs_dir().join(LOCKS_DIR)
    }
    /// The directory noting the runs that wait for `event`: its name in hex, so no event name
    /// (`.`, `..`) is a path of its own.
    fn waiting_dir(&self, event: &str) -> PathBuf {
        let hex: String = event.bytes().map(|b| format!("{b:02x}")).collect();
        self.runs_dir().join(WAITING_DIR).join(hex)
    }
    fn design_path(&self, name: &DesignName) -> PathBuf {
        self.designs_dir().join(format!("{name}.json"))
    }

    /// Writes a design as pretty JSON with `write` ([`atomic_write`] or [`atomic_create`]).
    fn write_design(&self, name: &DesignName, graph: &Value, write: fn(&Path, &[u8]) -> io::Result<()>) -> Result<String, StoreError> {
        create_dir(&self.designs_dir())?;
        let path = self.design_path(name);
        let mut bytes = serde_json::to_vec_pretty(graph).map_err(|e| StoreError::encode(format!("design {name}"), e))?;
        bytes.push(b'\n');
        match write(&path, &bytes) {
            Ok(()) => Ok(path.display().to_string()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(StoreError::design_exists(name)),
            Err(e) => Err(io_error("write", &path, e)),
        }
    }

    /// Where a design is kept, relative to the home, as reports show it.
    pub fn shown_design_path(name: &DesignName) -> String {
        format!("{DESIGNS_DIR}/{name}.json")
    }

    /// Where a run is kept, relative to the home, as reports show it.
    pub fn shown_run_path(id: &RunId) -> String {
        format!("{RUNS_DIR}/{id}.json")
    }

    pub(super) fn run_path(&self, id: &RunId) -> PathBuf {
        self.runs_dir().join(format!("{id}.json"))
    }
    pub(super) fn lock_path(&self, id: &RunId) -> PathBuf {
        self.locks_dir().join(format!("{id}.lock"))
    }

    /// Opens the run's lock file; creates it only for a run that exists. In a store that cannot
    /// be written the lock file is opened for reading, which `flock` accepts as well, so runs
    /// can still be read (and found interrupted) there.
    fn open_lock_file(&self, id: &RunId) -> Result<File, StoreError> {
        let path = self.lock_path(id);
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) => return Ok(file),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem) => {
                return File::open(&path).map_err(|e| io_error("open", &path, e));
            }
            Err(e) => return Err(io_error("open", &path, e)),
        }
        if !self.run_path(id).is_file() {
            return Err(StoreError::run_not_found(id));
        }
        create_dir(&self.locks_dir())?;
        lock_file(&path).map_err(|e| io_error("create", &path, e))
    }
}

#[async_trait::async_trait]
impl Store for FileStore {
    async fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        crate::wait::blocking(|| {
            let dir = self.designs_dir();
            let Some(entries) = dir_entries(&dir)? else { return Ok(Vec::new()) };
            let mut names = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| io_error("read", &dir, e))?;
                let file_name = entry.file_name();
                let Some(stem) = file_name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                    continue;
                };
                if DesignName::parse(stem).is_ok() && entry.path().is_file() {
                    names.push(stem.to_string());
                }
            }
            names.sort();
            Ok(names)
        })
    }

    async fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        crate::wait::blocking(|| {
            let path = self.design_path(name);
            let bytes = match fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StoreError::design_not_found(name));
                }
                Err(e) => return Err(io_error("read", &path, e)),
            };
            parse_json(&bytes, &format!("{DESIGNS_DIR}/{name}.json"))
        })
    }

    async fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        crate::wait::blocking(|| self.write_design(name, graph, atomic_write))
    }

    async fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        crate::wait::blocking(|| self.write_design(name, graph, atomic_create))
    }

    async fn design_exists(&self, name: &DesignName) -> bool {
        crate::wait::blocking(|| self.design_path(name).is_file())
    }

    async fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        crate::wait::blocking(|| {
            let path = self.design_path(name);
            match fs::remove_file(&path) {
                Ok(()) => sync_dir(&self.designs_dir()).map_err(|e| io_error("sync", &self.designs_dir(), e)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StoreError::design_not_found(name)),
                Err(e) => Err(io_error("remove", &path, e)),
            }
        })
    }

    async fn list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        crate::wait::blocking(|| self.fs_list_versions(name))
    }

    async fn newest_version(&self, name: &DesignName) -> Result<Option<DesignVersion>, StoreError> {
        crate::wait::blocking(|| self.fs_newest_version(name))
    }

    async fn add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError> {
        crate::wait::blocking(|| self.fs_add_version(name, version))
    }

    async fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        crate::wait::blocking(|| self.fs_remove_version(name, version))
    }

    async fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        crate::wait::blocking(|| self.fs_versioned_designs())
    }

    async fn design_stamp(&self, name: &DesignName) -> Option<String> {
        crate::wait::blocking(|| {
            let meta = fs::metadata(self.design_path(name)).ok()?;
            let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(format!("{}.{:09}:{}", modified.as_secs(), modified.subsec_nanos(), meta.len()))
        })
    }

    async fn reserve_run_id(&self, id: &RunId) -> Result<bool, StoreError> {
        crate::wait::blocking(|| {
            self.start_runs_dir()?;
            let locks = self.locks_dir();
            create_dir(&locks)?;
            let path = self.lock_path(id);
            match private_file().write(true).create_new(true).open(&path) {
                Ok(_) => Ok(!self.run_path(id).exists()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(io_error("create", &path, e)),
            }
        })
    }

    async fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        crate::wait::blocking(|| {
            self.start_runs_dir()?;
            let locks = self.locks_dir();
            create_dir(&locks)?;
            for _ in 0..ALLOCATE_ATTEMPTS {
                let mut bytes = [0u8; 6];
                getrandom::fill(&mut bytes).map_err(|e| StoreError::other("cannot get random bytes", e.to_string()))?;
                let id = RunId::from_bytes(bytes);
                let path = self.lock_path(&id);
                // `create_new` is the atomic reservation: exactly one caller creates a given file.
                match private_file().write(true).create_new(true).open(&path) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(io_error("create", &path, e)),
                }
                // A run copied in without its lock file is taken too.
                if !self.run_path(&id).exists() {
                    let mut fresh = self.fresh.lock().unwrap_or_else(|e| e.into_inner());
                    if fresh.len() >= CHECKPOINTS_KEPT {
                        fresh.clear();
                    }
                    fresh.insert(id.clone());
                    return Ok(id);
                }
            }
            Err(StoreError::other(
                format!("cannot allocate a run id in {}", locks.display()),
                format!("{ALLOCATE_ATTEMPTS} random ids were all taken"),
            ))
        })
    }

    async fn save_run(&self, id: &RunId, run: &Run, changes: &Changes, durability: Durability) -> Result<(), StoreError> {
        crate::wait::blocking(|| self.save(id, run, changes, durability == Durability::Now))
    }

    async fn import_run(&self, id: &RunId, doc: &Value) -> Result<(), StoreError> {
        crate::wait::blocking(|| {
            let json = serde_json::to_vec(doc).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
            self.write_run_bytes(id, &json, true)
        })
    }

    async fn sync(&self) -> Result<(), StoreError> {
        crate::wait::blocking(|| self.sync_log())
    }

    async fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        crate::wait::blocking(|| self.read_run_file(id))
    }

    async fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError> {
        crate::wait::blocking(|| {
            let mut entries = Vec::new();
            for id in self.run_ids_page(None, limit)? {
                let run = match self.read_run_file(&id) {
                    Ok(run) => Ok(run),
                    // Deleted since the listing saw it: deleting a run file forgets the run.
                    Err(StoreError::NotFound(_)) => continue,
                    Err(e) => Err(e.to_string()),
                };
                entries.push(RunEntry { id, run });
            }
            Ok(entries)
        })
    }

    async fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError> {
        crate::wait::blocking(|| self.run_ids_page(before, limit))
    }

    async fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        crate::wait::blocking(|| {
            self.recover_once();
            let file = self.open_lock_file(id)?;
            file.lock().map_err(|e| io_error("lock", &self.lock_path(id), e))?;
            self.recover_before_taking_over(id);
            Ok(self.guard(id, file))
        })
    }

    async fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        crate::wait::blocking(|| {
            self.recover_once();
            let file = self.open_lock_file(id)?;
            match file.try_lock() {
                Ok(()) => {
                    self.recover_before_taking_over(id);
                    Ok(Some(self.guard(id, file)))
                }
                Err(TryLockError::WouldBlock) => Ok(None),
                Err(TryLockError::Error(e)) => Err(io_error("lock", &self.lock_path(id), e)),
            }
        })
    }

    async fn add_waiter(&self, event: &str, id: &RunId, note: &str) -> Result<(), StoreError> {
        crate::wait::blocking(|| super::waiting::add(&self.waiting_dir(event), id, note))
    }

    async fn waiters(&self, event: &str) -> Result<Vec<(RunId, String)>, StoreError> {
        crate::wait::blocking(|| super::waiting::list(&self.waiting_dir(event)))
    }

    async fn remove_waiter(&self, event: &str, id: &RunId) -> Result<(), StoreError> {
        crate::wait::blocking(|| super::waiting::remove(&self.waiting_dir(event), id))
    }

    async fn claim_key(&self, claim: &super::KeyClaim, fresh_since: vwf_core::time::Ts) -> Result<super::KeyClaim, StoreError> {
        crate::wait::blocking(|| super::keys::claim(&self.runs_dir().join(KEYS_DIR), claim, fresh_since))
    }

    async fn settle_key(&self, key: &str, at: vwf_core::time::Ts, answer: Option<&Value>) -> Result<(), StoreError> {
        crate::wait::blocking(|| super::keys::settle(&self.runs_dir().join(KEYS_DIR), key, at, answer))
    }

    async fn edit_doc(&self, scope: &str, edit: &mut (dyn for<'v> FnMut(&'v mut Value) + Send)) -> Result<Value, StoreError> {
        crate::wait::blocking(|| super::flow::edit(&self.runs_dir().join(FLOW_DIR), scope, edit))
    }

    async fn read_doc(&self, scope: &str) -> Result<Value, StoreError> {
        crate::wait::blocking(|| super::flow::read(&self.runs_dir().join(FLOW_DIR), scope))
    }

    async fn waiting_docs(&self) -> Result<Vec<String>, StoreError> {
        crate::wait::blocking(|| super::flow::waiting(&self.runs_dir().join(FLOW_DIR)))
    }

    async fn add_run_stats(&self, stats: &RunStats) -> Result<(), StoreError> {
        crate::wait::blocking(|| self.append_stats(stats))
    }

    async fn run_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<RunStats>, StoreError> {
        crate::wait::blocking(|| self.read_stats(from, to, design))
    }
}

impl FileStore {
    /// [`Store::sync`], here.
    fn sync_log(&self) -> Result<(), StoreError> {
        match self.log.opened() {
            Some(log) => log.sync().map_err(|e| StoreError::io(format!("cannot write the commit log in {}", self.runs_dir().display()), e)),
            None => Ok(()),
        }
    }

    /// [`Store::read_run`], here.
    pub(crate) fn read_run_file(&self, id: &RunId) -> Result<Value, StoreError> {
        self.recover_once();
        let path = self.run_path(id);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // A run this handle holds whose first save is only in the commit log yet.
                let unwritten = self.held.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned().flatten();
                return match unwritten {
                    Some(bytes) => parse_json(&bytes, &format!("{RUNS_DIR}/{id}.json")),
                    None => Err(StoreError::run_not_found(id)),
                };
            }
            Err(e) => return Err(io_error("read", &path, e)),
        };
        let doc = parse_json(&bytes, &format!("{RUNS_DIR}/{id}.json"))?;
        // A run in flight: the parts saved since its file, if the journal is of this file.
        let journal = self.journal_path(id);
        match super::journal::read(&journal, &bytes) {
            Ok(Some(parts)) => super::assemble(id, doc, parts),
            Ok(None) => Ok(doc),
            Err(e) => Err(io_error("read", &journal, e)),
        }
    }

    /// [`Store::list_run_ids`], here.
    pub(crate) fn run_ids_page(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.recover_once();
        if limit == 0 {
            return Ok(Vec::new());
        }
        let kept = |id: &RunId| self.held.lock().unwrap_or_else(|e| e.into_inner()).get(id).is_some_and(Option::is_some);
        let page = index::older(&self.runs_dir(), before, limit, &kept).map_err(|e| StoreError::io("cannot list runs", e))?;
        let Some(page) = page else {
            return Err(StoreError::NotFound(format!("run {} (the listing's cursor)", before.map(RunId::as_str).unwrap_or(""))));
        };
        if let Some(note) = &page.note {
            index::warn(note);
        }
        Ok(page.ids)
    }

    /// Just after taking the lock of a run that has a file this handle did not write: a process
    /// that held it may have ended since this handle recovered the logs, so its log is recovered
    /// now, before the run is read (and maybe found interrupted and taken over).
    fn recover_before_taking_over(&self, id: &RunId) {
        let fresh = self.fresh.lock().unwrap_or_else(|e| e.into_inner()).contains(id);
        if !fresh && self.checkpoint_of(id).is_none() && self.run_path(id).is_file() {
            self.recover_dead_logs();
        }
    }
}

/// The lock of a run held by a [`FileStore`] handle: writes the run's file if its first save is
/// still only in the commit log, then lets the lock go.
struct RunGuard {
    file: LockedFile,
    store: FileStore,
    id: RunId,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if let Err(e) = self.store.write_unwritten(&self.id) {
            index::warn(&format!("run {}: {e} (its commit log keeps it; the next start writes it)", self.id));
        }
        // A save made `Durability::Soon` and no save after it is durable by the time the lock
        // is let go.
        if let Err(e) = self.store.sync_log() {
            index::warn(&format!("run {}: {e}", self.id));
        }
        self.store.held.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
        let _ = &self.file;
    }
}

impl FileStore {
    /// Saves a whole run document (`json`, without its newline); returns once it is durable
    /// when `wait`, else see `Durability::Soon`.
    fn write_run_bytes(&self, id: &RunId, json: &[u8], wait: bool) -> Result<(), StoreError> {
        self.recover_once();
        let dir = self.runs_dir();
        create_dir(&dir)?;
        let path = self.run_path(id);
        let known = self.checkpoint_of(id);
        let (held, unwritten) = match self.held.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
            Some(unwritten) => (true, unwritten.is_some()),
            None => (false, false),
        };
        let fresh = self.fresh.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        let is_new = fresh || (known.is_none() && !unwritten && !path.try_exists().map_err(|e| io_error("read", &path, e))?);
        let log = self.log.get(&dir);
        let mut unindexed = false;
        if is_new {
            // Index first: a crash in between leaves an index line without a file (skipped),
            // never a run that the listing cannot find. With a commit log the line is made
            // durable by the log's record of this save (recovery adds a line it lost).
            match index::append(&dir, id, log.is_none()) {
                Ok(()) => {}
                // An index or index lock that is a directory is damage every listing sees (and
                // then reads the run files), so the run goes on without its line.
                Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                    index::warn(&format!(
                        "run {id} was not added to the run index: {e}; listings read every run file until `vwf doctor --fix` repairs it"
                    ));
                    unindexed = true;
                }
                Err(e) => return Err(StoreError::io(format!("cannot add run {id} to the run index"), e)),
            }
        }
        let mut bytes = Vec::with_capacity(json.len() + 1);
        bytes.extend_from_slice(json);
        bytes.push(b'\n');
        let digest = super::journal::digest(&bytes);
        // Runs are written under their lock (see `Store::lock_run`).
        self.remember_checkpoint(id, None);
        match log {
            None => write_run_file(&path, &bytes, true).map_err(|e| io_error("write", &path, e))?,
            Some(log) => {
                let base = match (&known, is_new || unwritten) {
                    (Some(c), _) => Some(c.digest.clone()),
                    (None, true) => None,
                    (None, false) => Some(self.digest_on_disk(id)?),
                };
                if (is_new || unwritten) && held {
                    // The first save of a run this handle holds: the log has it, and the run
                    // file is written at the next save or when the lock is let go. A run that
                    // ends at once (typed steps only) is written once.
                    self.held.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Some(Arc::new(bytes.clone())));
                } else {
                    if unwritten {
                        self.held.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), None);
                    }
                    write_run_file(&path, &bytes, false).map_err(|e| io_error("write", &path, e))?;
                }
                log.commit(super::commit::Record::Whole { id, base: base.as_deref(), bytes: &bytes }, wait)
                    .map_err(|e| io_error("write", &path, e))?;
            }
        }
        // The whole run supersedes the parts saved since the last one. If this process dies
        // before the journal goes, its header names the old file and readers ignore it.
        if !is_new && !unwritten {
            let journal = self.journal_path(id);
            match fs::remove_file(&journal) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("remove", &journal, e)),
            }
        }
        self.remember_checkpoint(id, Some(Checkpoint { digest, journal: None }));
        if unindexed {
            index::forget(&dir);
        }
        Ok(())
    }

    /// `Store::save_run`, durable now (`wait`) or soon.
    fn save(&self, id: &RunId, run: &Run, changes: &Changes, wait: bool) -> Result<(), StoreError> {
        if changes.whole {
            let json = serde_json::to_vec(run).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
            return self.write_run_bytes(id, &json, wait);
        }
        self.recover_once();
        // Parts go to the journal of a run file, which must be there for readers to apply them.
        self.write_unwritten(id)?;
        let known = self.checkpoint_of(id);
        let (digest, lines) = match known {
            Some(c) => (c.digest, c.journal),
            None => (self.digest_on_disk(id)?, None),
        };
        let parts: Vec<(Part, Value)> = changes.parts.iter().filter_map(|p| Some((p.clone(), run.part(p)?))).collect();
        let path = self.journal_path(id);
        let log = self.log.get(&self.runs_dir());
        self.remember_checkpoint(id, None);
        let (number, line) =
            super::journal::append(&path, &digest, &parts, lines, log.is_none()).map_err(|e| io_error("write", &path, e))?;
        if let Some(log) = log {
            log.commit(super::commit::Record::Append { id, base: &digest, number, line: &line }, wait)
                .map_err(|e| io_error("write", &path, e))?;
        }
        self.remember_checkpoint(id, Some(Checkpoint { digest, journal: Some(number + 1) }));
        Ok(())
    }
}

/// A locked file; unlocks when dropped (closing the file would release it as well).
pub(super) struct LockedFile(pub(super) File);

impl Drop for LockedFile {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Opens (creating if needed, never truncating) a file used only for its `flock`.
pub fn lock_file(path: &Path) -> io::Result<File> {
    private_file().read(true).write(true).create(true).truncate(false).open(path)
}

/// The mode of every file the store creates: its owner's alone (SPEC §17), whatever the umask
/// (`vwf` sets 077 at start; a library caller may not). A rewrite is a new file, so it is 0600
/// too; an existing file or directory is never re-moded (`vwf doctor` reports loose modes).
pub(super) const PRIVATE_FILE_MODE: u32 = 0o600;
/// The mode of every directory the store creates.
pub(super) const PRIVATE_DIR_MODE: u32 = 0o700;
/// The directories the file store keeps in a home (what `vwf doctor` checks the modes of).
pub const HOME_DIRS: [&str; 4] = [DESIGNS_DIR, RUNS_DIR, super::jobs::SCHEDULES_DIR, super::versions::VERSIONS_DIR];

/// Options that create a file 0600.
pub(super) fn private_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(PRIVATE_FILE_MODE);
    options
}

/// Creates `dir` and its missing parents, each 0700; existing ones keep their modes.
pub(super) fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(PRIVATE_DIR_MODE).create(dir)
}

/// Creates a missing home (and its missing parents) 0700, for a command that writes into it
/// before the store does (`vwf serve` writes its token file first); an existing home is left as
/// it is.
pub fn create_home(home: &Path) -> io::Result<()> {
    create_private_dir_all(home)
}

/// Creates `dir` 0700; its parent must exist.
pub(super) fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(PRIVATE_DIR_MODE).create(dir)
}

/// Makes a rename or creation in `dir` durable.
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir; // directories cannot be opened (nor need to be synced) this way elsewhere
    Ok(())
}

/// Creates `dir` when it is not there. The look comes first: `mkdir` of a directory that exists
/// still takes the parent directory's lock, which every run's writes contend for under load; a
/// lookup does not.
pub(super) fn create_dir(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    create_private_dir_all(dir).map_err(|e| io_error("create", dir, e))
}

fn parse_json(bytes: &[u8], shown_path: &str) -> Result<Value, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt { path: shown_path.to_string(), message: e.to_string() })
}

/// The entries of `dir`, or `None` when there is no such directory (nothing was stored there yet).
pub(super) fn dir_entries(dir: &Path) -> Result<Option<fs::ReadDir>, StoreError> {
    match fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", dir, e)),
    }
}

pub(super) fn io_error(action: &str, path: &Path, e: io::Error) -> StoreError {
    StoreError::io(format!("cannot {action} {}", path.display()), e)
}

#[cfg(test)]
mod tests;
