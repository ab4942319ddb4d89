//! The file store's concurrency slots ([`crate::Store::edit_slots`]): a file per scope in
//! `workflow-runs/.slots/`, named by the SHA-256 of the scope and holding the scope and its
//! [`Slots`] as JSON. Every edit is a read and one atomic, durable write under the directory's
//! lock (`.slots/.lock`, held across processes), the same section the idempotency keys use
//! (`keys.rs`); a scope whose slots are empty has no file. A file that cannot be read counts as
//! empty and is replaced by the next edit: the runs it named still end, and a run queued in it is
//! started by the daemon's look at queued runs (their records say they are queued).

use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use vwf_core::concurrency::Slots;

use super::StoreError;
use super::fs::{atomic_write, io_error};
use super::keys::{locked, path};

#[derive(Serialize, Deserialize)]
struct Doc {
    scope: String,
    #[serde(flatten)]
    slots: Slots,
}

fn read_doc(path: &Path) -> Result<Option<Doc>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, e)),
    }
}

fn is_empty(slots: &Slots) -> bool {
    slots.held.is_empty() && slots.queue.is_empty() && slots.cancel.is_empty()
}

pub(super) fn read(dir: &Path, scope: &str) -> Result<Slots, StoreError> {
    Ok(read_doc(&path(dir, scope))?.filter(|d| d.scope == scope).map(|d| d.slots).unwrap_or_default())
}

pub(super) fn edit(dir: &Path, scope: &str, edit: &mut dyn FnMut(&mut Slots)) -> Result<Slots, StoreError> {
    let path = path(dir, scope);
    locked(dir, || {
        let mut slots = read_doc(&path)?.filter(|d| d.scope == scope).map(|d| d.slots).unwrap_or_default();
        let before = slots.clone();
        edit(&mut slots);
        if slots == before {
            return Ok(slots);
        }
        if is_empty(&slots) {
            return match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error("remove", &path, e)),
                _ => Ok(slots),
            };
        }
        let doc = Doc { scope: scope.to_string(), slots };
        let bytes = serde_json::to_vec(&doc).map_err(|e| StoreError::encode("concurrency slots", e))?;
        atomic_write(&path, &bytes).map_err(|e| io_error("write", &path, e))?;
        Ok(doc.slots)
    })
}

pub(super) fn waiting(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("list", dir, e)),
    };
    let mut scopes = Vec::new();
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // A damaged file is reported by the edit that meets it; the listing goes on.
        if let Ok(Some(doc)) = read_doc(&entry.path())
            && doc.slots.has_waiters()
        {
            scopes.push(doc.scope);
        }
    }
    scopes.sort();
    Ok(scopes)
}
