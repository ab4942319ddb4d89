//! Where designs and runs are kept, behind one small trait.
//!
//! The runner, the CLI, the server and the tools only see [`Store`]: designs by [`DesignName`],
//! runs by [`RunId`], JSON values in and out, a newest-first run listing and a per-run lock.
//! No file-system word appears in the signatures, so a PostgreSQL store shared by several
//! server instances can implement the same trait later (lock → advisory or row lock,
//! listing → `ORDER BY created_at DESC LIMIT n`, id reservation → `INSERT`).
//!
//! Invariants every implementation keeps:
//! - names and ids are parsed (`vwf_core::names`) before they reach a store, so a store never
//!   builds a location out of unchecked text;
//! - a write is all-or-nothing: a reader sees the previous value or the new one, never a mix;
//! - a damaged or foreign entry is reported for that entry only and never breaks a listing;
//! - reading a store that was never written gives empty lists and `NotFound`, not errors.
//!
//! [`fs::FileStore`] is the store of SPEC §1 (plain JSON files under the home directory).

pub mod fs;
mod index;
mod tidy;

use serde_json::Value;
use vwf_core::names::{DesignName, RunId};

pub use fs::FileStore;
pub use tidy::{Finding, STALE_AFTER};

/// Persistence of designs and runs. Blocking: async callers wrap calls in `spawn_blocking`.
pub trait Store: Send + Sync {
    /// Names of the saved designs, sorted. Entries that are not designs are ignored.
    fn list_designs(&self) -> Result<Vec<String>, StoreError>;
    /// The saved graph of a design: `NotFound` or `Corrupt` when it cannot be had.
    fn load_design(&self, name: &DesignName) -> Result<Value, StoreError>;
    /// Saves (creates or replaces) a design; returns where it was saved, to show to the user.
    fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError>;
    /// Saves a design only if none has this name, else `Exists`; the check and the write are one
    /// step, so of two callers creating the same name exactly one succeeds.
    fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError>;
    fn design_exists(&self, name: &DesignName) -> bool;
    /// Removes a saved design (`NotFound` when there is none). Runs keep the plan they started
    /// with, so they stay readable.
    fn delete_design(&self, name: &DesignName) -> Result<(), StoreError>;

    /// A fresh run id from a CSPRNG, reserved in the store so no other caller
    /// (in this process or another) gets the same one.
    fn allocate_run_id(&self) -> Result<RunId, StoreError>;
    /// Saves the whole run state (atomically). The first write of an id makes it the newest
    /// entry of [`Store::list_runs`].
    fn write_run(&self, id: &RunId, run: &Value) -> Result<(), StoreError> {
        let json = serde_json::to_vec(run).map_err(|e| StoreError::Io(e.to_string()))?;
        self.write_run_json(id, &json)
    }
    /// `write_run` for a run already serialised to JSON (the runner's path: one serialisation
    /// per step instead of building a value tree first).
    fn write_run_json(&self, id: &RunId, json: &[u8]) -> Result<(), StoreError>;
    fn read_run(&self, id: &RunId) -> Result<Value, StoreError>;
    /// At most `limit` runs, newest first (by first write). A run that cannot be read is
    /// listed with its error instead of its value.
    fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError>;
    /// At most `limit` ids of runs that have a document, newest first, starting after `before`
    /// (from the newest when `None`): one page of the listing, for callers that read and filter
    /// the runs themselves. `NotFound` when `before` is not in the listing. The cost does not
    /// grow with the number of runs read before the cursor.
    fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError>;
    /// Waits for the run's exclusive lock (held across processes) and holds it until the
    /// guard drops. `NotFound` if the id was neither allocated nor written.
    fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError>;
    /// Like [`Store::lock_run`] but returns `None` at once when someone else holds the lock.
    fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError>;
}

/// One line of a run listing.
#[derive(Debug)]
pub struct RunEntry {
    pub id: String,
    /// The run document, or why it could not be read (e.g. `... is not valid JSON: ...`).
    pub run: Result<Value, String>,
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
}

impl std::fmt::Debug for RunLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLock").field("id", &self.id).finish_non_exhaustive()
    }
}

/// What can go wrong in a store, worded for the user.
#[derive(thiserror::Error, Debug)]
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
    /// A full message naming the action and the location.
    #[error("{0}")]
    Io(String),
}

impl StoreError {
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
