//! The file store's notes of runs waiting for an event ([`crate::Store::add_waiter`]): a file
//! per run in `workflow-runs/.waiting/<event name in hex>/`, named by the run's id and holding
//! its note.
//!
//! A note is written atomically and durably ([`atomic_write`]) before the caller saves the run
//! waiting, so an event always finds a run that waits for it; a note is never trusted alone (the
//! run file says whether it still waits).

use std::fs;
use std::io;
use std::path::Path;

use vwf_core::names::RunId;

use super::StoreError;
use super::fs::{atomic_write, create_dir, io_error, sync_dir};

pub(super) fn add(dir: &Path, id: &RunId, note: &str) -> Result<(), StoreError> {
    let path = dir.join(id.as_str());
    if fs::read(&path).is_ok_and(|had| had == note.as_bytes()) {
        return Ok(());
    }
    let fresh = !dir.is_dir();
    create_dir(dir)?;
    atomic_write(&path, note.as_bytes()).map_err(|e| io_error("write", &path, e))?;
    if fresh && let Some(parent) = dir.parent() {
        sync_dir(parent).map_err(|e| io_error("sync", parent, e))?;
    }
    Ok(())
}

pub(super) fn list(dir: &Path) -> Result<Vec<(RunId, String)>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("read", dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(id) = entry.file_name().to_str().and_then(|n| RunId::parse(n).ok()) else { continue };
        // A note that cannot be read is still a run that may wait: listed with an empty note.
        let note = fs::read_to_string(entry.path()).unwrap_or_default();
        out.push((id, note));
    }
    Ok(out)
}

pub(super) fn remove(dir: &Path, id: &RunId) -> Result<(), StoreError> {
    let path = dir.join(id.as_str());
    match fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error("remove", &path, e)),
        _ => Ok(()),
    }
}
