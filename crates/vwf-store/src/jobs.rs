//! [`JobStore`] for the file store: schedule jobs, heartbeat state and the daemon's claim as files
//! under `<home>/workflow-schedules/` (SPEC §1, §10).
//!
//! Layout: `wf-<design>.json` per job (pretty JSON, written atomically), `trigger-<design>.json`
//! per heartbeat design (its last fire), `.schedules.lock` (an exclusive `flock` taken for every
//! read-modify-write of jobs, across processes) and `.daemon.lock` (held by the one daemon of the
//! home). Nothing else belongs here; `vwf doctor` reports anything else it finds.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use vwf_core::names::DesignName;
use vwf_core::schedule::job::{JOB_PREFIX, Job, job_id};
use vwf_core::time::{self, Ts};

use super::fs::{atomic_write, create_private_dir_all, dir_entries, io_error, lock_file, sync_dir};
use super::{FileStore, Finding, JobEntry, JobStore, StoreError, StoreLock};

pub(super) const SCHEDULES_DIR: &str = "workflow-schedules";
const LOCK_FILE: &str = ".schedules.lock";
const DAEMON_LOCK_FILE: &str = ".daemon.lock";
const TRIGGER_PREFIX: &str = "trigger-";

impl FileStore {
    /// [`JobStore::lock_jobs`], here.
    fn jobs_lock(&self) -> Result<StoreLock, StoreError> {
        let (file, path) = self.schedules_lock_file(LOCK_FILE)?;
        file.lock().map_err(|e| io_error("lock", &path, e))?;
        Ok(StoreLock::new(super::fs::LockedFile(file)))
    }

    /// [`JobStore::last_fire`], here.
    fn fire_recorded(&self, design: &DesignName) -> Option<Ts> {
        let bytes = fs::read(self.trigger_state_path(design)).ok()?;
        let value: Value = serde_json::from_slice(&bytes).ok()?;
        value.get("last_fired_at").and_then(Value::as_str).and_then(time::parse)
    }

    /// [`JobStore::record_fire`], here.
    fn write_fire(&self, design: &DesignName, at: Ts) -> Result<(), StoreError> {
        let dir = self.schedules_dir();
        create_private_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let state = json!({"design": design.as_str(), "mode": "heartbeat", "last_fired_at": time::format(&at)});
        let mut bytes = serde_json::to_vec_pretty(&state).map_err(|e| StoreError::encode("the trigger state", e))?;
        bytes.push(b'\n');
        let path = self.trigger_state_path(design);
        atomic_write(&path, &bytes).map_err(|e| io_error("write", &path, e))
    }

    fn schedules_dir(&self) -> PathBuf {
        self.home.join(SCHEDULES_DIR)
    }

    fn job_path(&self, design: &DesignName) -> PathBuf {
        self.schedules_dir().join(format!("{}.json", job_id(design)))
    }

    fn trigger_state_path(&self, design: &DesignName) -> PathBuf {
        self.schedules_dir().join(format!("{TRIGGER_PREFIX}{design}.json"))
    }

    /// Where the job `job_id` is kept, relative to the home, as reports show it.
    pub fn shown_job_path(job_id: &str) -> String {
        format!("{SCHEDULES_DIR}/{job_id}.json")
    }

    /// A job file: `None` when there is none, `Err(why)` when it cannot be read or parsed.
    fn read_job_file(path: &Path) -> Result<Option<Job>, String> {
        let shown = format!("{SCHEDULES_DIR}/{}", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
        match fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| format!("{shown} is not a schedule job: {e}")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot read {shown}: {e}")),
        }
    }

    /// Reports the entries of the schedules directory that are none of its files (jobs, trigger
    /// state, the locks, temp files) and job names that are directories; never removes them.
    pub fn schedule_strays(&self, found: &mut Vec<Finding>) {
        let own = |name: &str| name.strip_suffix(".json").is_some_and(|n| n.starts_with(JOB_PREFIX) || n.starts_with(TRIGGER_PREFIX));
        self.strays_in(&self.schedules_dir(), "schedule", own, &[LOCK_FILE, DAEMON_LOCK_FILE], found);
    }

    /// Opens the lock file `name` in the schedules directory (creating both).
    fn schedules_lock_file(&self, name: &str) -> Result<(File, PathBuf), StoreError> {
        let dir = self.schedules_dir();
        create_private_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
        let path = dir.join(name);
        let file = lock_file(&path).map_err(|e| io_error("open", &path, e))?;
        Ok((file, path))
    }
}

#[async_trait::async_trait]
impl JobStore for FileStore {
    async fn list_jobs(&self) -> Result<Vec<JobEntry>, StoreError> {
        crate::wait::blocking(|| {
            let dir = self.schedules_dir();
            let Some(entries) = dir_entries(&dir)? else { return Ok(Vec::new()) };
            let mut ids = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| io_error("read", &dir, e))?;
                let file_name = entry.file_name();
                let Some(id) = file_name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
                if id.starts_with(JOB_PREFIX) && entry.path().is_file() {
                    ids.push(id.to_string());
                }
            }
            ids.sort();
            Ok(ids
                .into_iter()
                .filter_map(|id| match Self::read_job_file(&dir.join(format!("{id}.json"))) {
                    Ok(Some(job)) if job.job_id == id => Some(Ok(job)),
                    Ok(Some(job)) => Some(Err((id, format!("the file says job_id {:?}, not its file name", job.job_id)))),
                    Ok(None) => None, // removed meanwhile
                    Err(why) => Some(Err((id, why))),
                })
                .collect())
        })
    }

    async fn read_job(&self, design: &DesignName) -> Result<Option<Job>, StoreError> {
        crate::wait::blocking(|| {
            Self::read_job_file(&self.job_path(design)).map_err(|why| StoreError::other("cannot read a schedule job", why))
        })
    }

    async fn write_job(&self, job: &Job) -> Result<(), StoreError> {
        crate::wait::blocking(|| {
            let design = vwf_core::schedule::job::design_of(&job.job_id)
                .ok_or_else(|| StoreError::other(format!("cannot save a job with the id {:?}", job.job_id), "the id names no design"))?;
            let path = self.job_path(&design);
            let mut bytes = serde_json::to_vec_pretty(job).map_err(|e| StoreError::encode("a schedule job", e))?;
            bytes.push(b'\n');
            let dir = self.schedules_dir();
            create_private_dir_all(&dir).map_err(|e| io_error("create", &dir, e))?;
            atomic_write(&path, &bytes).map_err(|e| io_error("write", &path, e))
        })
    }

    async fn remove_job(&self, design: &DesignName) -> Result<(), StoreError> {
        crate::wait::blocking(|| {
            let path = self.job_path(design);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(StoreError::NotFound(format!("schedule job {:?}", job_id(design))));
                }
                Err(e) => return Err(io_error("remove", &path, e)),
            }
            let dir = self.schedules_dir();
            sync_dir(&dir).map_err(|e| io_error("sync", &dir, e))
        })
    }

    async fn has_jobs(&self) -> bool {
        crate::wait::blocking(|| self.schedules_dir().is_dir())
    }

    async fn lock_jobs(&self) -> Result<StoreLock, StoreError> {
        crate::wait::blocking(|| self.jobs_lock())
    }

    async fn last_fire(&self, design: &DesignName) -> Option<Ts> {
        crate::wait::blocking(|| self.fire_recorded(design))
    }

    async fn record_fire(&self, design: &DesignName, at: Ts) -> Result<(), StoreError> {
        crate::wait::blocking(|| self.write_fire(design, at))
    }

    async fn claim_fire(&self, design: &DesignName, last: Option<Ts>, at: Ts) -> Result<bool, StoreError> {
        crate::wait::blocking(|| {
            let _lock = self.jobs_lock()?;
            if self.fire_recorded(design) != last {
                return Ok(false);
            }
            self.write_fire(design, at).map(|()| true)
        })
    }

    async fn list_fires(&self) -> Result<Vec<(DesignName, Ts)>, StoreError> {
        crate::wait::blocking(|| {
            let dir = self.schedules_dir();
            let Some(entries) = dir_entries(&dir)? else { return Ok(Vec::new()) };
            let mut fires: Vec<(DesignName, Ts)> = entries
                .flatten()
                .filter_map(|entry| {
                    let name = entry.file_name().to_str()?.strip_prefix(TRIGGER_PREFIX)?.strip_suffix(".json")?.to_string();
                    let design = DesignName::parse(&name).ok()?;
                    Some((design.clone(), self.fire_recorded(&design)?))
                })
                .collect();
            fires.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            Ok(fires)
        })
    }

    async fn claim_triggers(&self) -> Result<StoreLock, StoreError> {
        crate::wait::blocking(|| {
            let (file, path) = self.schedules_lock_file(DAEMON_LOCK_FILE)?;
            match file.try_lock() {
                Ok(()) => Ok(StoreLock::new(super::fs::LockedFile(file))),
                Err(TryLockError::WouldBlock) => {
                    Err(StoreError::Busy(format!("another vwf daemon is already running on {}", self.home.display())))
                }
                Err(TryLockError::Error(e)) => Err(io_error("lock", &path, e)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::Wait;

    use super::super::conformance;
    use super::*;

    #[test]
    fn the_file_store_keeps_every_job_store_promise() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path().to_path_buf());
        conformance::jobs_round_trip(&store);
        conformance::trigger_state(&store);
        conformance::design_stamps(&store);
        conformance::design_versions(&store);
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::store_round_trip(&FileStore::new(dir.path().to_path_buf()));
        conformance::saved_runs_read_back(&FileStore::new(dir.path().to_path_buf()));
        conformance::run_locks(Arc::new(FileStore::new(dir.path().to_path_buf())), 4, 25);
        conformance::event_waiters(&FileStore::new(dir.path().to_path_buf()));
        conformance::idempotency_keys(Arc::new(FileStore::new(dir.path().to_path_buf())));
        conformance::flow_docs(Arc::new(FileStore::new(dir.path().to_path_buf())));
        let dir = tempfile::tempdir().expect("tempdir");
        conformance::jobs_lock_excludes(Arc::new(FileStore::new(dir.path().to_path_buf())), 4, 25);
    }

    #[test]
    fn a_damaged_job_file_is_listed_with_why_and_breaks_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::new(dir.path().to_path_buf());
        store.write_job(&conformance::sample_job("good")).wait().expect("write");
        fs::write(store.schedules_dir().join("wf-bad.json"), b"{not json").expect("damage");
        fs::write(store.schedules_dir().join("wf-lies.json"), serde_json::to_vec(&conformance::sample_job("other")).expect("json"))
            .expect("write");
        let listed = store.list_jobs().wait().expect("list");
        assert_eq!(listed.len(), 3);
        let bad = listed[0].as_ref().expect_err("damaged");
        assert_eq!(bad.0, "wf-bad");
        assert!(bad.1.contains("workflow-schedules/wf-bad.json is not a schedule job"), "{}", bad.1);
        assert!(listed[1].is_ok());
        assert!(listed[2].as_ref().expect_err("wrong id").1.contains("job_id"));
    }
}
