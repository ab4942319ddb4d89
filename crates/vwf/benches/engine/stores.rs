//! The stores the engine runs are timed on: a `FileStore` that counts its run writes, the ids it
//! sees first and the time spent writing, and a store with no disk that still serialises every
//! run write.
//!
//! The timed store hands every call to the file store it wraps, so the runs it times are the file
//! store's; the store with no disk keeps nothing.

use std::hint::black_box;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::Value;
use vwf::store::{Durability, FileStore, RunEntry, RunLock, Store, StoreError};
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::run::journal::Changes;
use vwf_core::time::Ts;
use vwf_core::versions::DesignVersion;

/// A `FileStore` that counts `save_run` calls, first writes of an id, and time spent writing.
pub(super) struct TimedStore {
    inner: FileStore,
    writes: AtomicU64,
    new_ids: AtomicU64,
    nanos: AtomicU64,
    seen: Mutex<std::collections::HashSet<String>>,
}

impl TimedStore {
    pub(super) fn new(inner: FileStore) -> Self {
        Self { inner, writes: AtomicU64::new(0), new_ids: AtomicU64::new(0), nanos: AtomicU64::new(0), seen: Mutex::default() }
    }
    pub(super) fn counters(&self) -> (u64, u64, u64) {
        (self.writes.load(Ordering::Relaxed), self.new_ids.load(Ordering::Relaxed), self.nanos.load(Ordering::Relaxed))
    }
}

#[async_trait::async_trait]
impl Store for TimedStore {
    async fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list_designs().await
    }
    async fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        self.inner.load_design(name).await
    }
    async fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        self.inner.save_design(name, graph).await
    }
    async fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        self.inner.create_design(name, graph).await
    }
    async fn design_exists(&self, name: &DesignName) -> bool {
        self.inner.design_exists(name).await
    }
    async fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        self.inner.delete_design(name).await
    }
    async fn design_stamp(&self, name: &DesignName) -> Option<String> {
        self.inner.design_stamp(name).await
    }
    async fn list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        self.inner.list_versions(name).await
    }
    async fn add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError> {
        self.inner.add_version(name, version).await
    }
    async fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        self.inner.remove_version(name, version).await
    }
    async fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.versioned_designs().await
    }
    async fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        self.inner.allocate_run_id().await
    }
    async fn reserve_run_id(&self, id: &RunId) -> Result<bool, StoreError> {
        self.inner.reserve_run_id(id).await
    }
    async fn add_waiter(&self, event: &str, id: &RunId, note: &str) -> Result<(), StoreError> {
        self.inner.add_waiter(event, id, note).await
    }
    async fn waiters(&self, event: &str) -> Result<Vec<(RunId, String)>, StoreError> {
        self.inner.waiters(event).await
    }
    async fn remove_waiter(&self, event: &str, id: &RunId) -> Result<(), StoreError> {
        self.inner.remove_waiter(event, id).await
    }
    async fn claim_key(&self, claim: &vwf_store::KeyClaim, fresh_since: vwf_core::time::Ts) -> Result<vwf_store::KeyClaim, StoreError> {
        self.inner.claim_key(claim, fresh_since).await
    }
    async fn settle_key(&self, key: &str, at: vwf_core::time::Ts, answer: Option<&Value>) -> Result<(), StoreError> {
        self.inner.settle_key(key, at, answer).await
    }
    async fn edit_doc(&self, scope: &str, edit: &mut (dyn for<'v> FnMut(&'v mut Value) + Send)) -> Result<Value, StoreError> {
        self.inner.edit_doc(scope, edit).await
    }
    async fn read_doc(&self, scope: &str) -> Result<Value, StoreError> {
        self.inner.read_doc(scope).await
    }
    async fn waiting_docs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.waiting_docs().await
    }
    async fn add_run_stats(&self, stats: &vwf_core::stats::RunStats) -> Result<(), StoreError> {
        self.inner.add_run_stats(stats).await
    }
    async fn run_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<vwf_core::stats::RunStats>, StoreError> {
        self.inner.run_stats(from, to, design).await
    }
    async fn save_run(&self, id: &RunId, run: &Run, changes: &Changes, durability: Durability) -> Result<(), StoreError> {
        if self.seen.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string()) {
            self.new_ids.fetch_add(1, Ordering::Relaxed);
        }
        let t = Instant::now();
        let result = self.inner.save_run(id, run, changes, durability).await;
        self.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.writes.fetch_add(1, Ordering::Relaxed);
        result
    }
    async fn import_run(&self, id: &RunId, doc: &Value) -> Result<(), StoreError> {
        self.inner.import_run(id, doc).await
    }
    async fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        self.inner.read_run(id).await
    }
    async fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError> {
        self.inner.list_runs(limit).await
    }
    async fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.inner.list_run_ids(before, limit).await
    }
    async fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        self.inner.lock_run(id).await
    }
    async fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        self.inner.try_lock_run(id).await
    }
}

/// A store that keeps nothing but serialises every run write like the file store does, so the
/// runner's cost without a disk can be seen.
#[derive(Default)]
pub(super) struct MemoryStore {
    next_id: AtomicU64,
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    async fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        Err(StoreError::design_not_found(name))
    }
    async fn save_design(&self, name: &DesignName, _: &Value) -> Result<String, StoreError> {
        Ok(name.as_str().to_string())
    }
    async fn create_design(&self, name: &DesignName, _: &Value) -> Result<String, StoreError> {
        Ok(name.as_str().to_string())
    }
    async fn design_exists(&self, _: &DesignName) -> bool {
        false
    }
    async fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        Err(StoreError::design_not_found(name))
    }
    async fn design_stamp(&self, _: &DesignName) -> Option<String> {
        None
    }
    async fn list_versions(&self, _: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        Ok(Vec::new())
    }
    async fn add_version(&self, _: &DesignName, _: &DesignVersion) -> Result<(), StoreError> {
        Ok(())
    }
    async fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        Err(vwf::store::version_not_found(name, version))
    }
    async fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    async fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        RunId::parse(&format!("{n:012x}")).map_err(|why| StoreError::other("cannot allocate a run id", why))
    }
    async fn reserve_run_id(&self, _: &RunId) -> Result<bool, StoreError> {
        Ok(true)
    }
    async fn add_waiter(&self, _: &str, _: &RunId, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
    async fn waiters(&self, _: &str) -> Result<Vec<(RunId, String)>, StoreError> {
        Ok(Vec::new())
    }
    async fn remove_waiter(&self, _: &str, _: &RunId) -> Result<(), StoreError> {
        Ok(())
    }
    async fn claim_key(&self, claim: &vwf_store::KeyClaim, _: vwf_core::time::Ts) -> Result<vwf_store::KeyClaim, StoreError> {
        Ok(claim.clone())
    }
    async fn settle_key(&self, _: &str, _: vwf_core::time::Ts, _: Option<&Value>) -> Result<(), StoreError> {
        Ok(())
    }
    /// The benchmarks' designs use no flow control: no documents are kept.
    async fn edit_doc(&self, _: &str, edit: &mut (dyn for<'v> FnMut(&'v mut Value) + Send)) -> Result<Value, StoreError> {
        let mut doc = Value::Null;
        edit(&mut doc);
        Ok(doc)
    }
    async fn read_doc(&self, _: &str) -> Result<Value, StoreError> {
        Ok(Value::Null)
    }
    async fn waiting_docs(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    async fn add_run_stats(&self, _: &vwf_core::stats::RunStats) -> Result<(), StoreError> {
        Ok(())
    }
    async fn run_stats(&self, _: Ts, _: Ts, _: Option<&DesignName>) -> Result<Vec<vwf_core::stats::RunStats>, StoreError> {
        Ok(Vec::new())
    }
    async fn save_run(&self, id: &RunId, run: &Run, _: &Changes, _: Durability) -> Result<(), StoreError> {
        let mut bytes = serde_json::to_vec(run).map_err(|e| StoreError::encode(format!("run {id}"), e))?;
        bytes.push(b'\n');
        black_box(bytes);
        Ok(())
    }
    async fn import_run(&self, _: &RunId, doc: &Value) -> Result<(), StoreError> {
        black_box(doc);
        Ok(())
    }
    async fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        Err(StoreError::run_not_found(id))
    }
    async fn list_runs(&self, _: usize) -> Result<Vec<RunEntry>, StoreError> {
        Ok(Vec::new())
    }
    async fn list_run_ids(&self, _: Option<&RunId>, _: usize) -> Result<Vec<RunId>, StoreError> {
        Ok(Vec::new())
    }
    async fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        Ok(RunLock::new(id.clone(), ()))
    }
    async fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        Ok(Some(RunLock::new(id.clone(), ())))
    }
}
