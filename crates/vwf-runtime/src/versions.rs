//! When a design's versions are recorded and pruned, over any [`Store`]. The rules (hash, diff,
//! which versions a pruning removes) are pure, in `vwf_core::versions`; this module only reads
//! and writes the records.
//!
//! Invariants:
//! - every content a design is saved with is a recorded version (the newest one) once the save
//!   returns; saving the content of the newest version again records nothing;
//! - a design saved before versions existed gets its content recorded before the first save
//!   that replaces it, so no content is lost;
//! - numbers are taken with a create-only write: of two saves racing for a number, the loser
//!   takes the next one;
//! - pruning never removes the newest version nor one that a stored run refers to.

use std::collections::BTreeSet;
use vwf_store::Wait;

use serde::Deserialize;
use serde_json::Value;
use vwf_core::names::DesignName;
use vwf_core::time::Ts;
use vwf_core::versions::{self, DesignVersion, Recording};

use vwf_store::{Store, StoreError};

/// How many numbers a save tries when other saves of the same design take them first.
const RECORD_ATTEMPTS: usize = 16;

/// Makes `graph` the newest recorded version of `name` (recording it unless the newest has this
/// content); its number.
pub fn record(store: &dyn Store, name: &DesignName, graph: &Value, now: Ts) -> Result<u64, StoreError> {
    let hash = versions::content_hash(graph);
    for _ in 0..RECORD_ATTEMPTS {
        let number = match versions::recording(store.newest_version(name).wait()?.as_ref(), &hash) {
            Recording::Same(n) => return Ok(n),
            Recording::New(n) => n,
        };
        let version = DesignVersion { version: number, hash: hash.clone(), saved_at: now, graph: graph.clone() };
        match store.add_version(name, &version).wait() {
            Ok(()) => return Ok(version.version),
            Err(StoreError::Exists(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Busy(format!("design {:?} is being saved by others; try again", name.as_str())))
}

/// The version a run of `graph` runs: the newest recorded with this content. Content that was
/// never recorded (a design saved before versions existed) is recorded now, when the store can
/// be written; `None` when it cannot.
pub fn of_content(store: &dyn Store, name: &DesignName, graph: &Value, now: Ts) -> Option<u64> {
    of_content_with(store, name, graph, store.newest_version(name).wait(), now)
}

/// [`of_content`] with the design's newest version (or the error reading it) already read.
pub fn of_content_with(
    store: &dyn Store,
    name: &DesignName,
    graph: &Value,
    newest: Result<Option<DesignVersion>, StoreError>,
    now: Ts,
) -> Option<u64> {
    // The newest version has the saved content unless saves race: read the others only then.
    if let Recording::Same(n) = versions::recording(newest.ok()?.as_ref(), &versions::content_hash(graph)) {
        return Some(n);
    }
    let recorded = store.list_versions(name).wait().ok()?;
    match versions::version_of(&recorded, graph) {
        Some(v) => Some(v.version),
        None => record(store, name, graph, now).ok(),
    }
}

/// One recorded version; `NotFound` when it is not (or no longer) recorded.
pub async fn find(store: &dyn Store, name: &DesignName, version: u64) -> Result<DesignVersion, StoreError> {
    store.list_versions(name).await?.into_iter().find(|v| v.version == version).ok_or_else(|| vwf_store::version_not_found(name, version))
}

/// Removes the versions of `name` beyond the newest `keep` that no stored run refers to; the
/// numbers removed.
pub fn prune(store: &dyn Store, name: &DesignName, keep: Option<u64>) -> Result<Vec<u64>, StoreError> {
    let Some(keep) = keep else { return Ok(Vec::new()) };
    let numbers: Vec<u64> = store.list_versions(name).wait()?.iter().map(|v| v.version).collect();
    if numbers.len() as u64 <= keep {
        return Ok(Vec::new());
    }
    let referenced = referenced(store, name)?;
    let removed = versions::prune(&numbers, Some(keep), &referenced);
    for n in &removed {
        match store.remove_version(name, *n).wait() {
            Ok(()) | Err(StoreError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// The versions of `name` that stored runs ran. A run that cannot be read refers to nothing we
/// can know of; it does not stop the pruning.
fn referenced(store: &dyn Store, name: &DesignName) -> Result<BTreeSet<u64>, StoreError> {
    #[derive(Deserialize)]
    struct Ran {
        design: String,
        #[serde(default)]
        version: Option<u64>,
    }
    Ok(store
        .list_runs(usize::MAX)
        .wait()?
        .into_iter()
        .filter_map(|e| e.run.ok())
        .filter_map(|run| serde_json::from_value::<Ran>(run).ok())
        .filter(|ran| ran.design == name.as_str())
        .filter_map(|ran| ran.version)
        .collect())
}
