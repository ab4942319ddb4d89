//! The file store's idempotency keys ([`crate::Store::claim_key`]): a file per key in
//! `workflow-runs/.keys/`, named by the SHA-256 of the key (any text is a key; no key is a path)
//! and holding its [`KeyClaim`] as JSON.
//!
//! Every read-modify-write of a key happens under one lock file (`.keys/.lock`, held across
//! processes), so of two processes claiming one key exactly one records its claim; the section is
//! a read and one atomic, durable write. A record that cannot be read is replaced by the next
//! claim: it never answered anyone.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use vwf_core::time::Ts;

use super::fs::{atomic_write, create_dir, io_error, private_file};
use super::{KeyClaim, StoreError};

const LOCK: &str = ".lock";

pub(super) fn path(dir: &Path, key: &str) -> PathBuf {
    let digest = Sha256::digest(key.as_bytes());
    dir.join(digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Runs `f` with the lock of `dir` (the keys', or the slots') held.
pub(super) fn locked<T>(dir: &Path, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
    create_dir(dir)?;
    let lock_path = dir.join(LOCK);
    let file = private_file().write(true).create(true).truncate(false).open(&lock_path).map_err(|e| io_error("open", &lock_path, e))?;
    file.lock().map_err(|e| io_error("lock", &lock_path, e))?;
    let out = f();
    drop(file);
    out
}

fn read(path: &Path) -> Result<Option<KeyClaim>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, e)),
    }
}

fn write(path: &Path, claim: &KeyClaim) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(claim).map_err(|e| StoreError::encode("an idempotency key", e))?;
    atomic_write(path, &bytes).map_err(|e| io_error("write", path, e))
}

pub(super) fn claim(dir: &Path, claim: &KeyClaim, fresh_since: Ts) -> Result<KeyClaim, StoreError> {
    let path = path(dir, &claim.key);
    locked(dir, || match read(&path)? {
        Some(kept) if kept.key == claim.key && kept.at >= fresh_since => Ok(kept),
        _ => write(&path, claim).map(|()| claim.clone()),
    })
}

pub(super) fn settle(dir: &Path, key: &str, at: Ts, answer: Option<&serde_json::Value>) -> Result<(), StoreError> {
    let path = path(dir, key);
    locked(dir, || match (read(&path)?, answer) {
        (Some(mut kept), Some(answer)) if kept.key == key && kept.at == at => {
            kept.answer = answer.clone();
            write(&path, &kept)
        }
        (Some(kept), None) if kept.key == key && kept.at == at => match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error("remove", &path, e)),
            _ => Ok(()),
        },
        _ => Ok(()),
    })
}
