//! Phases 1 and 2, durable runs and their floor: the 50-node design run through the real `Runner`
//! on a `FileStore` (and, to compare, on a store with no disk and in the core alone), each timed
//! run followed by a batch of floor writes of its finished file on the same disk.
//!
//! Every run must finish every step, none skipped: one that does not is an error, not a figure.

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};
use vwf_store::Wait;

use serde_json::Value;
use vwf::clock::{Clock, SystemClock};
use vwf::config::Config;
use vwf::exec::Drivers;
use vwf::runner::{Progress, Runner};
use vwf::store::fs::atomic_write;
use vwf::store::{FileStore, Store};
use vwf_core::names::RunId;
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Run, Status};

use crate::figures::die;
use crate::listing::zero_id;
use crate::stores::{MemoryStore, TimedStore};
use crate::{WARMUP_RUNS, manual};

pub(super) struct EngineFigures {
    pub(super) totals: Vec<Duration>,
    pub(super) in_save_run: Vec<Duration>,
    pub(super) writes_per_run: u64,
    pub(super) new_ids_per_run: u64,
    pub(super) final_bytes: Vec<u8>,
    /// One batch per timed run, taken right after it: `atomic_write` of `final_bytes`.
    pub(super) floor: Vec<Vec<Duration>>,
    /// Likewise: `FileStore::import_run` of the finished run.
    pub(super) store_floor: Vec<Vec<Duration>>,
}

/// Durable runs in `<base>/engine-home`; after each, a batch of `batch` floor writes in
/// `<base>/floor` and as many store writes in `<base>/store-floor-home`.
pub(super) fn engine_runs_durable(base: &Path, plan: &Plan, runs: usize, batch: usize) -> EngineFigures {
    let (home, floor_dir, floor_home) = (base.join("engine-home"), base.join("floor"), base.join("store-floor-home"));
    for dir in [&home, &floor_dir, &floor_home] {
        let _ = fs::remove_dir_all(dir);
    }
    fs::create_dir_all(&floor_dir).unwrap_or_else(|e| die(&format!("cannot create {}: {e}", floor_dir.display())));
    let floor_path = floor_dir.join("d7b493cae249.json");
    let floor_store = FileStore::new(floor_home.clone());
    let floor_id = RunId::parse("d7b493cae249").unwrap_or_else(|e| die(&e));

    let store = TimedStore::new(FileStore::new(home.clone()));
    let drivers = Drivers::new(Config::default());
    let observer = |_: Progress<'_>| {};
    let runner = Runner::new(&store, &drivers, &SystemClock, &observer);

    let mut figures = EngineFigures {
        totals: Vec::new(),
        in_save_run: Vec::new(),
        writes_per_run: 0,
        new_ids_per_run: 0,
        final_bytes: Vec::new(),
        floor: Vec::new(),
        store_floor: Vec::new(),
    };
    let mut final_value = Value::Null;
    for i in 0..WARMUP_RUNS + runs {
        let timed = i >= WARMUP_RUNS;
        let (writes0, new0, nanos0) = store.counters();
        let t = Instant::now();
        let run = runner.start(plan.clone(), manual()).unwrap_or_else(|e| die(&format!("a bench run failed to start: {e}")));
        let total = t.elapsed();
        let (writes1, new1, nanos1) = store.counters();
        check_finished(&run, plan);
        if timed {
            figures.totals.push(total);
            figures.in_save_run.push(Duration::from_nanos(nanos1 - nanos0));
            figures.writes_per_run = writes1 - writes0;
            figures.new_ids_per_run = new1 - new0;
        }
        if i == 0 {
            let path = home.join("workflow-runs").join(format!("{}.json", run.run_id()));
            figures.final_bytes = fs::read(&path).unwrap_or_else(|e| die(&format!("cannot read {}: {e}", path.display())));
            final_value =
                serde_json::from_slice(&figures.final_bytes).unwrap_or_else(|e| die(&format!("{} is not JSON: {e}", path.display())));
        }
        let (mut floor, mut store_floor) = (Vec::with_capacity(batch), Vec::with_capacity(batch));
        for _ in 0..batch {
            let t = Instant::now();
            atomic_write(&floor_path, &figures.final_bytes).unwrap_or_else(|e| die(&format!("atomic_write {}: {e}", floor_path.display())));
            floor.push(t.elapsed());
            let t = Instant::now();
            floor_store.import_run(&floor_id, &final_value).wait().unwrap_or_else(|e| die(&format!("import_run: {e}")));
            store_floor.push(t.elapsed());
        }
        if timed {
            figures.floor.push(floor);
            figures.store_floor.push(store_floor);
        }
    }
    for dir in [&home, &floor_dir, &floor_home] {
        let _ = fs::remove_dir_all(dir);
    }
    figures
}

pub(super) fn engine_runs_in_memory(plan: &Plan, runs: usize) -> Vec<Duration> {
    let store = MemoryStore::default();
    let drivers = Drivers::new(Config::default());
    let observer = |_: Progress<'_>| {};
    let runner = Runner::new(&store, &drivers, &SystemClock, &observer);
    let mut totals = Vec::new();
    for i in 0..WARMUP_RUNS + runs {
        let t = Instant::now();
        let run = runner.start(plan.clone(), manual()).unwrap_or_else(|e| die(&format!("an in-memory run failed: {e}")));
        let total = t.elapsed();
        check_finished(&run, plan);
        if i >= WARMUP_RUNS {
            totals.push(total);
        }
    }
    totals
}

/// The pure core: the same runs with no store and no persistence at all.
pub(super) fn core_only_runs(plan: &Plan, runs: usize) -> Vec<Duration> {
    let clock = SystemClock;
    let mut totals = Vec::new();
    for i in 0..WARMUP_RUNS + runs {
        let t = Instant::now();
        let mut run = Run::start(plan.clone(), zero_id(), manual(), clock.now());
        while let Advance::Settled(node) = run.advance(clock.now()) {
            black_box(node);
        }
        let total = t.elapsed();
        check_finished(&run, plan);
        if i >= WARMUP_RUNS {
            totals.push(total);
        }
    }
    totals
}

fn check_finished(run: &Run, plan: &Plan) {
    if run.status() != Status::Done || run.steps().len() != plan.steps.len() || !run.skipped().is_empty() {
        die(&format!(
            "the bench run did not finish every step: status {:?}, {} steps, skipped {:?}, error {:?}",
            run.status(),
            run.steps().len(),
            run.skipped(),
            run.error()
        ));
    }
}
