//! What every backend of [`JobStore`] (and [`Store::design_stamp`]) must do, as checks that panic
//! on the first broken promise: the file store's tests run them, and so must any other backend's,
//! so a second backend is known complete when these pass. Each check starts from an empty store.

use std::sync::Arc;

use serde_json::{Value, json};
use vwf_core::names::DesignName;
use vwf_core::schedule::job::{self, Job};
use vwf_core::time::{self, Ts};

use super::{JobStore, Store, StoreError};

fn name(s: &str) -> DesignName {
    DesignName::parse(s).expect("a valid design name")
}

fn at(s: &str) -> Ts {
    time::parse(s).expect("a valid time")
}

/// A job of `design` firing daily at 09:00 UTC.
pub fn sample_job(design: &str) -> Job {
    let design = name(design);
    Job {
        job_id: job::job_id(&design),
        name: format!("workflow:{design}"),
        design: design.to_string(),
        cron: "0 9 * * *".into(),
        human: "Every day at 09:00".into(),
        tz: "UTC".into(),
        paused: false,
        next_run_at: Some(at("2026-03-01T09:00:00Z")),
        last_run_at: None,
        prompt: job::prompt(&design, &Value::Null),
        deliver: None,
        schedule: serde_json::from_value(json!({"preset": "daily", "time": "09:00"})).expect("schedule"),
        missed: Vec::new(),
        paused_reason: None,
        input: Value::Null,
    }
}

/// Jobs: an empty store has none; a job reads back as written and is listed; a job whose id names
/// no design is refused writing nothing; removing twice is `NotFound`.
pub fn jobs_round_trip(store: &dyn JobStore) {
    assert!(!store.has_jobs(), "a fresh store has no jobs");
    assert!(store.list_jobs().expect("list").is_empty());
    assert_eq!(store.read_job(&name("daily")).expect("read"), None);
    let mut job = sample_job("daily");
    job.input = json!({"nested": [1, {"x": "é"}]});
    store.write_job(&job).expect("write");
    assert!(store.has_jobs());
    assert_eq!(store.read_job(&name("daily")).expect("read"), Some(job.clone()));
    let other = sample_job("a-first");
    store.write_job(&other).expect("write");
    let listed: Vec<Job> = store.list_jobs().expect("list").into_iter().map(|e| e.expect("readable")).collect();
    assert_eq!(listed, vec![other.clone(), job.clone()], "sorted by id");
    let mut bad = sample_job("daily");
    bad.job_id = "../daily".into();
    assert!(store.write_job(&bad).is_err(), "an id that names no design is refused");
    assert_eq!(store.read_job(&name("daily")).expect("read"), Some(job));
    store.remove_job(&name("daily")).expect("remove");
    assert_eq!(store.read_job(&name("daily")).expect("read"), None);
    assert!(matches!(store.remove_job(&name("daily")), Err(StoreError::NotFound(_))));
    assert_eq!(store.list_jobs().expect("list").len(), 1);
}

/// The jobs lock excludes: `threads` threads each make `rounds` read-modify-writes of one job
/// under it, and every one of them is kept.
pub fn jobs_lock_excludes(store: Arc<dyn JobStore>, threads: usize, rounds: usize) {
    store.write_job(&sample_job("counted")).expect("write");
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let _lock = store.lock_jobs().expect("lock");
                    let mut job = store.read_job(&name("counted")).expect("read").expect("the job");
                    job.missed.push(job::Missed { at: at("2026-03-01T09:00:00Z") });
                    store.write_job(&job).expect("write");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let job = store.read_job(&name("counted")).expect("read").expect("the job");
    assert_eq!(job.missed.len(), threads * rounds, "an update made under the lock was lost");
}

/// Heartbeat state and the daemon's claim: a fire reads back; a second claim is `Busy` while the
/// first is held and succeeds once it is dropped.
pub fn trigger_state(store: &dyn JobStore) {
    let d = name("beat");
    assert_eq!(store.last_fire(&d), None);
    store.record_fire(&d, at("2026-03-01T09:00:00Z")).expect("record");
    store.record_fire(&d, at("2026-03-01T10:00:00Z")).expect("record");
    assert_eq!(store.last_fire(&d), Some(at("2026-03-01T10:00:00Z")));
    assert_eq!(store.last_fire(&name("other")), None);
    let claim = store.claim_triggers().expect("first claim");
    assert!(matches!(store.claim_triggers(), Err(StoreError::Busy(_))), "a second daemon is kept off");
    drop(claim);
    store.claim_triggers().expect("claimed again once released");
}

/// A design's stamp, when the store gives one, changes when the design is saved again and is gone
/// with the design.
pub fn design_stamps(store: &dyn Store) {
    let d = name("stamped");
    assert_eq!(store.design_stamp(&d), None, "no design, no stamp");
    store.save_design(&d, &json!({"nodes": [], "edges": []})).expect("save");
    let Some(first) = store.design_stamp(&d) else { return };
    store.save_design(&d, &json!({"nodes": [{"id": "start", "type": "trigger"}], "edges": []})).expect("save");
    assert_ne!(store.design_stamp(&d), Some(first), "a saved change changes the stamp");
    store.delete_design(&d).expect("delete");
    assert_eq!(store.design_stamp(&d), None);
}
