//! Moving between stores (`vwf store export --to DIR`, `vwf store import --from DIR`): every
//! design, run, schedule job and heartbeat state of one backend copied into another, through the
//! traits only, so it works between any two backends. That is all a home keeps: the daemon's other
//! state (event cooldowns, watch dedupe) is read from the runs or held in memory.
//!
//! Invariants:
//! - The target must hold nothing yet (no design, run, job or heartbeat state): a copy never
//!   mixes two homes, and a refused copy writes nothing.
//! - An export is written into a hidden directory beside DIR and renamed onto it once complete,
//!   so DIR is either absent/empty or a whole copy, never half of one.
//! - Runs are written oldest first, so the target lists them in the source's order.
//! - Documents are copied as JSON values: each reads back equal to its source.
//! - A record the source cannot read is reported by name and not copied; the copy goes on.

use crate::Wait;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use vwf_core::names::DesignName;

use super::fs::{DESIGNS_DIR, RUNS_DIR, create_private_dir, create_private_dir_all, sync_dir};
use super::jobs::SCHEDULES_DIR;
use super::{FileStore, JobStore, Store, StoreError};

/// How many run ids are read per page of the source's listing.
const PAGE: usize = 1000;
/// The directories a file store keeps its records in; a directory with none of them is no store.
const STORE_DIRS: [&str; 3] = [DESIGNS_DIR, RUNS_DIR, SCHEDULES_DIR];

/// One side of a copy: a store and its job store (the same backend).
pub struct Side<'a> {
    pub store: &'a dyn Store,
    pub jobs: &'a dyn JobStore,
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Copied {
    pub designs: usize,
    /// Recorded design versions (see `vwf_core::versions`), also of deleted designs.
    pub versions: usize,
    pub runs: usize,
    pub schedules: usize,
    pub trigger_states: usize,
    /// Records the source could not read; not copied.
    pub unreadable: Vec<Unreadable>,
}

/// A record the source could not read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unreadable {
    /// `design`, `run` or `schedule job`.
    pub kind: &'static str,
    /// The design's name, the run's id or the job's id.
    pub name: String,
    pub error: String,
}

/// Why a copy did not happen or stopped.
#[derive(thiserror::Error, Debug)]
pub enum CopyError {
    /// The target holds something already (a store with records, a directory with files):
    /// nothing was written.
    #[error("{0}")]
    NotEmpty(String),
    /// The directory to import from does not exist: nothing was written.
    #[error("{0}")]
    Missing(String),
    /// The path to import from is not a file store (or cannot be one to export to): nothing was
    /// written.
    #[error("{0}")]
    NotAStore(String),
    /// Writing failed after the copy began: the target store holds part of the copy.
    #[error("the copy stopped: {0}; the target store holds part of it now (empty it before copying again)")]
    Interrupted(StoreError),
    /// Reading the source or looking at the target failed before anything was written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Copies everything `from` holds into `to`, which must be empty.
pub fn copy(from: &Side<'_>, to: &Side<'_>) -> Result<Copied, CopyError> {
    let held = [
        (!to.store.list_designs().wait()?.is_empty()).then_some("designs"),
        (!to.store.versioned_designs().wait()?.is_empty()).then_some("design versions"),
        (!to.store.list_run_ids(None, 1).wait()?.is_empty()).then_some("runs"),
        (!to.jobs.list_jobs().wait()?.is_empty()).then_some("schedule jobs"),
        (!to.jobs.list_fires().wait()?.is_empty()).then_some("heartbeat state"),
    ];
    let held: Vec<&str> = held.into_iter().flatten().collect();
    if !held.is_empty() {
        return Err(CopyError::NotEmpty(format!(
            "the target store holds {} already; a copy goes only into an empty store",
            held.join(", ")
        )));
    }
    let mut copied = Copied::default();
    let mut skipped = Vec::new();
    for name in from.store.list_designs().wait()? {
        let Ok(name) = DesignName::parse(&name) else { continue };
        match from.store.load_design(&name).wait() {
            Ok(graph) => {
                to.store.save_design(&name, &graph).wait().map_err(CopyError::Interrupted)?;
                copied.designs += 1;
            }
            Err(e) => skipped.push(Unreadable { kind: "design", name: name.to_string(), error: e.to_string() }),
        }
    }
    for name in from.store.versioned_designs().wait()? {
        let Ok(name) = DesignName::parse(&name) else { continue };
        match from.store.list_versions(&name).wait() {
            Ok(versions) => {
                for version in &versions {
                    to.store.add_version(&name, version).wait().map_err(CopyError::Interrupted)?;
                    copied.versions += 1;
                }
            }
            Err(e) => skipped.push(Unreadable { kind: "design versions", name: name.to_string(), error: e.to_string() }),
        }
    }
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let page = from.store.list_run_ids(cursor.as_ref(), PAGE).wait()?;
        let Some(last) = page.last().cloned() else { break };
        ids.extend(page);
        cursor = Some(last);
    }
    for id in ids.iter().rev() {
        match from.store.read_run(id).wait() {
            Ok(run) => {
                to.store.import_run(id, &run).wait().map_err(CopyError::Interrupted)?;
                // An ended run's stats record goes along (a run the engine cannot read has none).
                if let Some(stats) = serde_json::from_value::<vwf_core::run::Run>(run).ok().and_then(|r| r.stats()) {
                    to.store.add_run_stats(&stats).wait().map_err(CopyError::Interrupted)?;
                }
                copied.runs += 1;
            }
            Err(StoreError::NotFound(_)) => {} // deleted meanwhile
            Err(e) => skipped.push(Unreadable { kind: "run", name: id.to_string(), error: e.to_string() }),
        }
    }
    for entry in from.jobs.list_jobs().wait()? {
        match entry {
            Ok(job) => {
                to.jobs.write_job(&job).wait().map_err(CopyError::Interrupted)?;
                copied.schedules += 1;
            }
            Err((id, why)) => skipped.push(Unreadable { kind: "schedule job", name: id, error: why }),
        }
    }
    for (design, at) in from.jobs.list_fires().wait()? {
        to.jobs.record_fire(&design, at).wait().map_err(CopyError::Interrupted)?;
        copied.trigger_states += 1;
    }
    copied.unreadable = skipped;
    Ok(copied)
}

/// The file store at `dir`, to import from: `Missing` when there is no such directory,
/// `NotAStore` when it is a file or a directory with none of a store's directories.
pub fn file_store_at(dir: &Path) -> Result<FileStore, CopyError> {
    let shown = dir.display();
    match fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(CopyError::NotAStore(format!("{shown} is a file, not a vwf home directory"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(CopyError::Missing(format!("there is no directory {shown}"))),
        Err(e) => return Err(StoreError::io(format!("cannot read {shown}"), e).into()),
    }
    if !STORE_DIRS.iter().any(|d| dir.join(d).is_dir()) {
        return Err(CopyError::NotAStore(format!(
            "{shown} is not a vwf store: it holds none of {}",
            STORE_DIRS.map(|d| format!("{d}/")).join(", ")
        )));
    }
    Ok(FileStore::new(dir.to_path_buf()))
}

/// Copies everything `from` holds into a new file store at `dir`, which must be empty or absent
/// (its parent directories are created). The copy is made beside `dir` and renamed onto it when
/// complete; on any failure it is removed and `dir` is left as it was.
pub fn export_to_dir(from: &Side<'_>, dir: &Path) -> Result<Copied, CopyError> {
    let shown = dir.display();
    match fs::read_dir(dir).map(|mut entries| entries.next().is_some()) {
        Ok(true) => {
            return Err(CopyError::NotEmpty(format!("{shown} is not empty; an export goes only into an empty or absent directory")));
        }
        Ok(false) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            return Err(CopyError::NotEmpty(format!("{shown} is a file; an export goes only into an empty or absent directory")));
        }
        Err(e) => return Err(StoreError::io(format!("cannot read {shown}"), e).into()),
    }
    let absolute = std::path::absolute(dir).map_err(|e| StoreError::io(format!("cannot resolve {shown}"), e))?;
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Err(CopyError::NotAStore(format!("{shown} cannot be exported to: name a directory to create")));
    };
    fs::create_dir_all(parent).map_err(|e| StoreError::io(format!("cannot create {}", parent.display()), e))?;
    let staging = staging_dir(parent, &name.to_string_lossy())?;
    let staged = fill(from, &staging).and_then(|copied| {
        fs::rename(&staging, &absolute).map_err(|e| match e.kind() {
            io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::AlreadyExists | io::ErrorKind::NotADirectory => {
                CopyError::NotEmpty(format!("{shown} was filled while the export ran; nothing was written there"))
            }
            _ => StoreError::io(format!("cannot move the export into {shown}"), e).into(),
        })?;
        Ok(copied)
    });
    if staged.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    let copied = staged?;
    sync_dir(parent).map_err(|e| StoreError::io(format!("cannot sync {}", parent.display()), e))?;
    Ok(copied)
}

/// A fresh hidden directory beside the export's target, `.<name>.vwf-export-<random>`.
fn staging_dir(parent: &Path, name: &str) -> Result<PathBuf, CopyError> {
    let mut random = [0u8; 6];
    getrandom::fill(&mut random).map_err(|e| StoreError::other("cannot get random bytes", e.to_string()))?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let staging = parent.join(format!(".{name}.vwf-export-{suffix}"));
    create_private_dir(&staging).map_err(|e| StoreError::io(format!("cannot create {}", staging.display()), e))?;
    Ok(staging)
}

/// Copies `from` into a new file store at `dir` (empty), with every store directory made, so even
/// an empty export can be imported again.
fn fill(from: &Side<'_>, dir: &Path) -> Result<Copied, CopyError> {
    let files = FileStore::new(dir.to_path_buf());
    let copied = copy(from, &Side { store: &files, jobs: &files }).map_err(|e| match e {
        CopyError::Interrupted(e) => CopyError::Store(e),
        other => other,
    })?;
    for d in STORE_DIRS {
        create_private_dir_all(&dir.join(d)).map_err(|e| StoreError::io(format!("cannot create {}", dir.join(d).display()), e))?;
    }
    sync_dir(dir).map_err(|e| StoreError::io(format!("cannot sync {}", dir.display()), e))?;
    Ok(copied)
}
