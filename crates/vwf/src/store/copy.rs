//! Moving between stores (`vwf store export --to DIR`, `vwf store import --from DIR`): every
//! design, run, schedule job and heartbeat state of one backend copied into another, through the
//! traits only, so it works between any two backends.
//!
//! Invariants:
//! - The target must hold nothing yet (no design, run or job): a copy never mixes two homes, and a
//!   refused copy writes nothing.
//! - Runs are written oldest first, so the target lists them in the source's order.
//! - Documents are copied as JSON values: each reads back equal to its source.
//! - A record the source cannot read is reported by name and not copied; the copy goes on.

use serde::Serialize;
use vwf_core::names::DesignName;

use super::{JobStore, Store, StoreError};

/// How many run ids are read per page of the source's listing.
const PAGE: usize = 1000;

/// One side of a copy: a store and its job store (the same backend).
pub struct Side<'a> {
    pub store: &'a dyn Store,
    pub jobs: &'a dyn JobStore,
}

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Copied {
    pub designs: usize,
    pub runs: usize,
    pub schedules: usize,
    pub trigger_states: usize,
    /// Records the source could not read, with why; not copied.
    pub skipped: Vec<String>,
}

/// Copies everything `from` holds into `to`, which must be empty.
pub fn copy(from: &Side<'_>, to: &Side<'_>) -> Result<Copied, StoreError> {
    let held = [
        (!to.store.list_designs()?.is_empty()).then_some("designs"),
        (!to.store.list_run_ids(None, 1)?.is_empty()).then_some("runs"),
        (!to.jobs.list_jobs()?.is_empty()).then_some("schedule jobs"),
    ];
    let held: Vec<&str> = held.into_iter().flatten().collect();
    if !held.is_empty() {
        return Err(StoreError::Exists(format!(
            "the target store holds {} already; a copy goes into an empty store, and",
            held.join(", ")
        )));
    }
    let mut copied = Copied::default();
    for name in from.store.list_designs()? {
        let Ok(name) = DesignName::parse(&name) else { continue };
        match from.store.load_design(&name) {
            Ok(graph) => {
                to.store.save_design(&name, &graph)?;
                copied.designs += 1;
            }
            Err(e) => copied.skipped.push(format!("design {:?}: {e}", name.as_str())),
        }
    }
    let mut ids = Vec::new();
    let mut cursor = None;
    loop {
        let page = from.store.list_run_ids(cursor.as_ref(), PAGE)?;
        let Some(last) = page.last().cloned() else { break };
        ids.extend(page);
        cursor = Some(last);
    }
    for id in ids.iter().rev() {
        match from.store.read_run(id) {
            Ok(run) => {
                to.store.write_run(id, &run)?;
                copied.runs += 1;
            }
            Err(StoreError::NotFound(_)) => {} // deleted meanwhile
            Err(e) => copied.skipped.push(format!("run {id}: {e}")),
        }
    }
    for entry in from.jobs.list_jobs()? {
        match entry {
            Ok(job) => {
                to.jobs.write_job(&job)?;
                copied.schedules += 1;
            }
            Err((id, why)) => copied.skipped.push(format!("schedule job {id}: {why}")),
        }
    }
    for (design, at) in from.jobs.list_fires()? {
        to.jobs.record_fire(&design, at)?;
        copied.trigger_states += 1;
    }
    Ok(copied)
}
