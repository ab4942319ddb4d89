//! The file store's flow-control documents ([`crate::Store::edit_doc`]): a file per scope in
//! `workflow-runs/.flow/`, named by the SHA-256 of the scope and holding the scope and its
//! document as JSON. Every edit is a read and one atomic, durable write under the directory's
//! lock (`.flow/.lock`, held across processes), the same section the idempotency keys use
//! (`keys.rs`); a scope whose document is `null` has no file. A file that cannot be read counts
//! as no document and is replaced by the next edit (what it held is state the runtime rebuilds:
//! a run queued in it is found by its record, which says it is queued).
//!
//! A document that waits ([`crate::is_waiting`]) has an empty marker beside it (`<name>.waiting`),
//! so the daemon's look each second reads only the waiting documents, not every one. The marker
//! is made before a document starts waiting and removed after it stops: a crash in between
//! leaves at most a marker too many, which the listing checks against the document.

use std::fs;
use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StoreError;
use super::fs::{atomic_write, io_error};
use super::keys::{locked, path};

#[derive(Serialize, Deserialize)]
struct Doc {
    scope: String,
    doc: Value,
}

fn read_file(path: &Path) -> Result<Option<Doc>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, e)),
    }
}

fn stored(path: &Path, scope: &str) -> Result<Value, StoreError> {
    Ok(read_file(path)?.filter(|d| d.scope == scope).map(|d| d.doc).unwrap_or(Value::Null))
}

pub(super) fn read(dir: &Path, scope: &str) -> Result<Value, StoreError> {
    stored(&path(dir, scope), scope)
}

pub(super) fn edit(dir: &Path, scope: &str, edit: &mut (dyn for<'v> FnMut(&'v mut Value) + Send)) -> Result<Value, StoreError> {
    let path = path(dir, scope);
    locked(dir, || {
        let mut doc = stored(&path, scope)?;
        let before = doc.clone();
        edit(&mut doc);
        if doc == before {
            return Ok(doc);
        }
        let waits = super::is_waiting(&doc);
        if waits {
            mark(&path, true)?;
        }
        if doc.is_null() {
            remove(&path)?;
        } else {
            let file = Doc { scope: scope.to_string(), doc: doc.clone() };
            let bytes = serde_json::to_vec(&file).map_err(|e| StoreError::encode("a flow-control document", e))?;
            atomic_write(&path, &bytes).map_err(|e| io_error("write", &path, e))?;
        }
        if !waits {
            mark(&path, false)?;
        }
        Ok(doc)
    })
}

fn marker(path: &Path) -> std::path::PathBuf {
    path.with_extension(MARK)
}

const MARK: &str = "waiting";

/// Makes or removes the marker of the document at `path`.
fn mark(path: &Path, waits: bool) -> Result<(), StoreError> {
    let marker = marker(path);
    match (waits, marker.exists()) {
        (true, false) => fs::write(&marker, b"").map_err(|e| io_error("write", &marker, e)),
        (false, true) => remove(&marker),
        _ => Ok(()),
    }
}

fn remove(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error("remove", path, e)),
        _ => Ok(()),
    }
}

pub(super) fn waiting(dir: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("list", dir, e)),
    };
    let mut scopes: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == MARK))
        // A damaged file is replaced by the next edit of its scope; the listing goes on.
        .filter_map(|entry| read_file(&entry.path().with_extension("")).ok().flatten())
        .filter(|file| super::is_waiting(&file.doc))
        .map(|file| file.scope)
        .collect();
    scopes.sort();
    Ok(scopes)
}
