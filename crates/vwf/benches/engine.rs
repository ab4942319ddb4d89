//! Engine benchmark: prints figures and ratios, never fails on timing.
//!
//! `cargo bench -p vwf --bench engine` (or `scripts/bench`). Everything runs in one process on
//! one disk (`$VWF_BENCH_DIR`, default `target/tmp/vwf-bench`), so the durable figures are
//! comparable with their floor:
//!
//! 1. per-step engine overhead: a 50-node design of typed steps that do no external I/O, run
//!    through the real `Runner` + `FileStore`. Typed steps have no outside effect, so they are
//!    recorded with the next durable write (SPEC §7): here the run's start and its end, each an
//!    atomic, fsynced write; the figure is a typed step's share of the run's whole cost;
//! 2. the floor: one `store::fs::atomic_write` of the finished run's file bytes (its largest
//!    size) on the same disk. Each run is followed by a batch of as many floor writes as it has
//!    steps, so runs and floor batches see the same disk state and are averaged alike (disk
//!    latency here comes in bursts: a per-write median would hide them, a per-run mean not);
//! 3. their ratio against the target (≤ 1.5x), as PASS/MISS text: the verdict takes the median
//!    of each run's ratio to the floor batch right after it (medians and means are shown too);
//! 4. validation and `Plan::compile` of the 50-node design;
//! 5. `list_runs(20)` and `vwf runs --limit 20 --json` with `$VWF_BENCH_RUNS` (100000) runs in
//!    the store, plus the one-time index rebuild. Populating 100000 runs takes a few seconds
//!    but ~400 MB, so the store is deleted afterwards unless `VWF_BENCH_KEEP=1`; a kept store
//!    is reused by the next run, with its `.index` deleted so the rebuild is measured again.
//!
//! Knobs: `VWF_BENCH_RUNS` (store size), `VWF_BENCH_ENGINE_RUNS` (30), `VWF_BENCH_DIR`,
//! `VWF_BENCH_KEEP`.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vwf::clock::{Clock, SystemClock};
use vwf::config::Config;
use vwf::exec::Drivers;
use vwf::runner::{Progress, Runner};
use vwf::store::fs::atomic_write;
use vwf::store::{FileStore, RunEntry, RunLock, Store, StoreError};
use vwf_core::design::Design;
use vwf_core::names::{DesignName, RunId};
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Run, Status, TriggerInfo};
use vwf_core::validate::validate;
use vwf_core::versions::DesignVersion;

mod rows;

const DESIGN_NODES: usize = 50;
const WARMUP_RUNS: usize = 3;
const STEP_TARGET_RATIO: f64 = 1.5;
const LIST_TARGET_MS: f64 = 50.0;
const LIST_CALLS: usize = 50;
const CLI_CALLS: usize = 10;
const VALIDATE_ITERS: usize = 1000;
/// Bump when the shape of the generated run files changes, so a kept store is rebuilt.
const STORE_FORMAT: u32 = 1;

fn main() {
    let engine_runs = env_usize("VWF_BENCH_ENGINE_RUNS", 30).max(1);
    let store_runs = env_usize("VWF_BENCH_RUNS", 100_000).max(20);
    let base =
        std::env::var_os("VWF_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("vwf-bench"));
    fs::create_dir_all(&base).unwrap_or_else(|e| die(&format!("cannot create {}: {e}", base.display())));
    let base = base.canonicalize().unwrap_or(base);

    println!("vwf engine benchmark");
    println!("  dir:        {}", base.display());
    println!("  filesystem: {}", filesystem_of(&base));
    println!("  cpus:       {}", std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("  load avg:   {} (other work on the machine makes the disk figures noisy)", load_average());
    let began = Instant::now();
    println!();

    let mut rows: Vec<Row> = Vec::new();
    // The rows for `scripts/bench`'s summary table.
    let mut summary: Vec<rows::Row> = Vec::new();

    // 1-3. Per-step overhead against the floor.
    let graph = chain_design();
    let design = Design::from_value(&graph).unwrap_or_else(|e| die(&format!("the bench design does not parse: {e:?}")));
    let plan = Plan::compile("bench-chain", &design).unwrap_or_else(|r| die(&format!("the bench design is not valid: {:?}", r.errors)));
    let steps = plan.steps.len();
    println!(
        "[1] {steps} steps per run ({DESIGN_NODES} nodes incl. the trigger), {WARMUP_RUNS} warm-ups + {engine_runs} runs, durable FileStore"
    );
    println!(
        "    each run is followed by {steps} floor writes and {steps} store writes of its finished file (same disk state, averaged alike)"
    );
    let engine = engine_runs_durable(&base, &plan, engine_runs, steps);
    let per_step = Stats::of(engine.totals.iter().map(|d| *d / steps as u32).collect());
    let in_store = Stats::of(engine.in_write_run.iter().map(|d| *d / steps as u32).collect());
    let writes_per_step = engine.writes_per_run as f64 / steps as f64;
    println!("    per step: {per_step}");
    println!("    of which inside Store::write_run: {in_store}");
    println!(
        "    write_run calls per run: {} ({writes_per_step:.2} per step), new run ids per run: {}",
        engine.writes_per_run, engine.new_ids_per_run
    );
    println!("    run file: {} bytes when finished", engine.final_bytes.len());

    let memory = engine_runs_in_memory(&plan, engine_runs);
    let mem_step = Stats::of(memory.iter().map(|d| *d / steps as u32).collect());
    println!("    same runs with an in-memory store (engine + JSON, no disk): per step {mem_step}");
    let core = core_only_runs(&plan, engine_runs);
    let core_step = Stats::of(core.iter().map(|d| *d / steps as u32).collect());
    println!("    same runs in the core alone (Run::advance, no store): per step {core_step}");
    let finished: Run =
        serde_json::from_slice(&engine.final_bytes).unwrap_or_else(|e| die(&format!("the run file does not read back: {e}")));
    let via_value = mean_of(VALIDATE_ITERS, || {
        let value = serde_json::to_value(black_box(&finished)).unwrap_or_default();
        black_box(serde_json::to_vec(&value).unwrap_or_default());
    });
    let direct = mean_of(VALIDATE_ITERS, || {
        black_box(serde_json::to_vec(black_box(&finished)).unwrap_or_default());
    });
    println!(
        "    serialising the finished run: to_value + to_vec (what persist + write_run do) {}, to_vec directly {}",
        us(via_value),
        us(direct)
    );

    let floor = Stats::of(batch_means(&engine.floor, steps));
    let floor_writes = Stats::of(engine.floor.concat());
    let store_floor = Stats::of(batch_means(&engine.store_floor, steps));
    println!("[2] floor: atomic_write of the finished run file ({} bytes)", engine.final_bytes.len());
    println!("    per write, batch means (compared with the runs): {floor}");
    println!("    per write, all {} writes: {floor_writes}", floor_writes.n);
    println!("    FileStore::write_run of the same run (serialise + checks + atomic_write), batch means: {store_floor}");
    let ratio = per_step.median.as_secs_f64() / floor.median.as_secs_f64();
    let ratio_mean = per_step.mean.as_secs_f64() / floor.mean.as_secs_f64();
    let mut paired: Vec<f64> = engine
        .totals
        .iter()
        .zip(&engine.floor)
        .map(|(run, batch)| run.as_secs_f64() / batch.iter().sum::<Duration>().as_secs_f64())
        .collect();
    paired.sort_by(f64::total_cmp);
    let paired_median = paired.get(paired.len() / 2).copied().unwrap_or(f64::NAN);
    // The verdict uses the paired ratio: each run against the floor batch taken right after it
    // is the comparison least moved by bursts of other disk work.
    let verdict = pass(paired_median <= STEP_TARGET_RATIO);
    println!(
        "[3] step overhead / floor: each run against the floor batch after it, median {paired_median:.2}x; medians {ratio:.2}x; means {ratio_mean:.2}x; target <= {STEP_TARGET_RATIO}x: {verdict}"
    );
    println!("    ({} so far)", secs(began.elapsed()));
    summary.push(rows::Row::new(
        format!("typed step cost / one fsynced write ({DESIGN_NODES}-node design, recorded with the next durable write)"),
        format!("{paired_median:.2}x ({} per step, floor {})", ms(per_step.median), ms(floor.median)),
        format!("<= {STEP_TARGET_RATIO}x"),
        Some(paired_median <= STEP_TARGET_RATIO),
    ));
    rows.push(Row::new(
        "typed step cost, durable run (median/mean)",
        format!("{} / {}", ms(per_step.median), ms(per_step.mean)),
        format!("floor {} / {}", ms(floor.median), ms(floor.mean)),
        format!("{paired_median:.2}x paired ({ratio:.2}x medians)"),
        format!("<= {STEP_TARGET_RATIO}x {verdict}"),
    ));
    rows.push(Row::new(
        "  of which in Store::write_run (median)",
        ms(in_store.median),
        format!("floor {}", ms(floor.median)),
        format!("{:.2}x", in_store.median.as_secs_f64() / floor.median.as_secs_f64()),
        "-".into(),
    ));
    rows.push(Row::new(
        "  write_run calls per step",
        format!("{writes_per_step:.2} ({}/run)", engine.writes_per_run),
        "1".into(),
        format!("{writes_per_step:.2}x"),
        "1 per step".into(),
    ));
    rows.push(Row::new(
        "step, in-memory store (median/mean)",
        format!("{} / {}", us(mem_step.median), us(mem_step.mean)),
        format!("floor {}", ms(floor.median)),
        format!("{:.3}x", mem_step.median.as_secs_f64() / floor.median.as_secs_f64()),
        "-".into(),
    ));
    rows.push(Row::new(
        "step, core alone (median/mean)",
        format!("{} / {}", us(core_step.median), us(core_step.mean)),
        format!("floor {}", ms(floor.median)),
        format!("{:.3}x", core_step.median.as_secs_f64() / floor.median.as_secs_f64()),
        "-".into(),
    ));
    rows.push(Row::new(
        "serialise finished run: to_value+to_vec",
        us(via_value),
        format!("to_vec {}", us(direct)),
        format!("{:.2}x", via_value.as_secs_f64() / direct.as_secs_f64()),
        "-".into(),
    ));
    rows.push(Row::new(
        "FileStore::write_run, finished run, batch means (median/mean)",
        format!("{} / {}", ms(store_floor.median), ms(store_floor.mean)),
        format!("floor {}", ms(floor.median)),
        format!("{:.2}x", store_floor.median.as_secs_f64() / floor.median.as_secs_f64()),
        "-".into(),
    ));
    rows.push(Row::new(
        "floor: atomic_write, batch means (median/mean)",
        format!("{} / {}", ms(floor.median), ms(floor.mean)),
        format!("{} bytes", engine.final_bytes.len()),
        "1.00x".into(),
        "-".into(),
    ));
    rows.push(Row::new(
        "floor: atomic_write, per write (median/mean)",
        format!("{} / {}", ms(floor_writes.median), ms(floor_writes.mean)),
        format!("n={}", floor_writes.n),
        format!("{:.2}x", floor_writes.median.as_secs_f64() / floor.median.as_secs_f64()),
        "-".into(),
    ));

    // 4. Validation and compilation.
    let validate_time = mean_of(VALIDATE_ITERS, || {
        let report = validate(black_box(&graph));
        black_box(report.ok);
    });
    let compile_time = mean_of(VALIDATE_ITERS, || {
        let plan = Plan::compile("bench-chain", black_box(&design));
        black_box(plan.is_ok());
    });
    let report = validate(&graph);
    println!(
        "[4] validate({DESIGN_NODES} nodes): {} mean over {VALIDATE_ITERS} (ok: {}, {} warnings); Plan::compile: {} mean",
        us(validate_time),
        report.ok,
        report.warnings.len(),
        us(compile_time)
    );
    rows.push(Row::new(&format!("validate, {DESIGN_NODES}-node design (mean)"), us(validate_time), "-".into(), "-".into(), "-".into()));
    rows.push(Row::new(
        &format!("Plan::compile, {DESIGN_NODES}-node design (mean)"),
        us(compile_time),
        format!("validate {}", us(validate_time)),
        format!("{:.2}x", compile_time.as_secs_f64() / validate_time.as_secs_f64()),
        "-".into(),
    ));

    // 5. Listing a large store.
    println!("[5] list_runs(20) with {store_runs} runs in the store");
    let listing = listing(&base.join(format!("list-home-{store_runs}")), store_runs);
    println!("    populate: {}", listing.populated);
    println!("    first listing (rebuilds the missing .index): {}", ms(listing.rebuild));
    println!("    list_runs(20), {LIST_CALLS} calls: {}", listing.list);
    rows.push(Row::new(&format!("index rebuild, {store_runs} runs (once)"), ms(listing.rebuild), "-".into(), "-".into(), "-".into()));
    let list_ok = listing.list.median.as_secs_f64() * 1e3 < LIST_TARGET_MS;
    summary.push(rows::Row::new(
        format!("list_runs(20) with {store_runs} runs: median"),
        ms(listing.list.median),
        format!("< {LIST_TARGET_MS} ms"),
        Some(list_ok),
    ));
    rows.push(Row::new(
        &format!("list_runs(20), {store_runs} runs (median/mean)"),
        format!("{} / {}", ms(listing.list.median), ms(listing.list.mean)),
        "-".into(),
        "-".into(),
        format!("< {LIST_TARGET_MS} ms {}", pass(list_ok)),
    ));
    match &listing.cli {
        Some((runs, version)) => {
            println!("    vwf runs --limit 20 --json, {CLI_CALLS} spawns: {runs}");
            println!("    vwf --version (process start), {CLI_CALLS} spawns: {version}");
            rows.push(Row::new(
                "CLI `vwf runs --limit 20 --json` (mean)",
                ms(runs.mean),
                format!("`vwf --version` {}", ms(version.mean)),
                format!("{:.2}x", runs.mean.as_secs_f64() / version.mean.as_secs_f64()),
                format!("< {LIST_TARGET_MS} ms {}", pass(runs.mean.as_secs_f64() * 1e3 < LIST_TARGET_MS)),
            ));
        }
        None => {
            println!("    CLI skipped: no binary at {}", vwf_binary().display());
            rows.push(Row::new("CLI `vwf runs --limit 20 --json`", "skipped (no binary)".into(), "-".into(), "-".into(), "-".into()));
        }
    }

    println!("    ({} so far)", secs(began.elapsed()));
    println!();
    print_table(&rows);
    rows::record(&summary);
    println!();
    println!("Ratios are informational: this program never fails on timing.");
}

// ---------------------------------------------------------------------------------------------
// The design

/// A manual trigger and 49 typed steps: conditions (`out.<prev>.chars >= 0`, left by a `true`
/// edge) alternating with collect-only outputs rendering a small template.
fn chain_design() -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual", "x": 0, "y": 0})];
    let mut edges = Vec::new();
    let mut prev = "start".to_string();
    let mut prev_is_condition = false;
    for i in 1..DESIGN_NODES {
        let id = format!("s{i:02}");
        let is_condition = i % 2 == 1;
        let node = if is_condition {
            json!({"id": id, "type": "condition", "expr": format!("out.{prev}.chars >= 0"), "x": i * 180, "y": 0})
        } else {
            json!({"id": id, "type": "output", "template": format!("step {i}: {{{{nodes.{prev}}}}} ({{{{nodes.{prev}.chars}}}} chars)"), "x": i * 180, "y": 0})
        };
        nodes.push(node);
        let mut edge = json!({"from": prev, "to": id});
        if prev_is_condition {
            edge["label"] = json!("true");
        }
        edges.push(edge);
        prev = id;
        prev_is_condition = is_condition;
    }
    json!({"description": "benchmark chain", "nodes": nodes, "edges": edges})
}

fn manual() -> TriggerInfo {
    TriggerInfo::new("manual", Value::Null)
}

// ---------------------------------------------------------------------------------------------
// 1. Durable runs

struct EngineFigures {
    totals: Vec<Duration>,
    in_write_run: Vec<Duration>,
    writes_per_run: u64,
    new_ids_per_run: u64,
    final_bytes: Vec<u8>,
    /// One batch per timed run, taken right after it: `atomic_write` of `final_bytes`.
    floor: Vec<Vec<Duration>>,
    /// Likewise: `FileStore::write_run` of the finished run.
    store_floor: Vec<Vec<Duration>>,
}

/// Durable runs in `<base>/engine-home`; after each, a batch of `batch` floor writes in
/// `<base>/floor` and as many store writes in `<base>/store-floor-home`.
fn engine_runs_durable(base: &Path, plan: &Plan, runs: usize, batch: usize) -> EngineFigures {
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
    let runner =
        Runner { store: &store, drivers: &drivers, clock: &SystemClock, observer: &observer, sleep_for_waits: false, metrics: None };

    let mut figures = EngineFigures {
        totals: Vec::new(),
        in_write_run: Vec::new(),
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
            figures.in_write_run.push(Duration::from_nanos(nanos1 - nanos0));
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
            floor_store.write_run(&floor_id, &final_value).unwrap_or_else(|e| die(&format!("write_run: {e}")));
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

fn engine_runs_in_memory(plan: &Plan, runs: usize) -> Vec<Duration> {
    let store = MemoryStore::default();
    let drivers = Drivers::new(Config::default());
    let observer = |_: Progress<'_>| {};
    let runner =
        Runner { store: &store, drivers: &drivers, clock: &SystemClock, observer: &observer, sleep_for_waits: false, metrics: None };
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
fn core_only_runs(plan: &Plan, runs: usize) -> Vec<Duration> {
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

/// A `FileStore` that counts `write_run` calls, first writes of an id, and time spent writing.
struct TimedStore {
    inner: FileStore,
    writes: AtomicU64,
    new_ids: AtomicU64,
    nanos: AtomicU64,
    seen: Mutex<std::collections::HashSet<String>>,
}

impl TimedStore {
    fn new(inner: FileStore) -> Self {
        Self { inner, writes: AtomicU64::new(0), new_ids: AtomicU64::new(0), nanos: AtomicU64::new(0), seen: Mutex::default() }
    }
    fn counters(&self) -> (u64, u64, u64) {
        (self.writes.load(Ordering::Relaxed), self.new_ids.load(Ordering::Relaxed), self.nanos.load(Ordering::Relaxed))
    }
}

impl Store for TimedStore {
    fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list_designs()
    }
    fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        self.inner.load_design(name)
    }
    fn save_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        self.inner.save_design(name, graph)
    }
    fn create_design(&self, name: &DesignName, graph: &Value) -> Result<String, StoreError> {
        self.inner.create_design(name, graph)
    }
    fn design_exists(&self, name: &DesignName) -> bool {
        self.inner.design_exists(name)
    }
    fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        self.inner.delete_design(name)
    }
    fn design_stamp(&self, name: &DesignName) -> Option<String> {
        self.inner.design_stamp(name)
    }
    fn list_versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        self.inner.list_versions(name)
    }
    fn add_version(&self, name: &DesignName, version: &DesignVersion) -> Result<(), StoreError> {
        self.inner.add_version(name, version)
    }
    fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        self.inner.remove_version(name, version)
    }
    fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        self.inner.versioned_designs()
    }
    fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        self.inner.allocate_run_id()
    }
    fn write_run_json(&self, id: &RunId, json: &[u8]) -> Result<(), StoreError> {
        if self.seen.lock().unwrap_or_else(|e| e.into_inner()).insert(id.to_string()) {
            self.new_ids.fetch_add(1, Ordering::Relaxed);
        }
        let t = Instant::now();
        let result = self.inner.write_run_json(id, json);
        self.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.writes.fetch_add(1, Ordering::Relaxed);
        result
    }
    fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        self.inner.read_run(id)
    }
    fn list_runs(&self, limit: usize) -> Result<Vec<RunEntry>, StoreError> {
        self.inner.list_runs(limit)
    }
    fn list_run_ids(&self, before: Option<&RunId>, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.inner.list_run_ids(before, limit)
    }
    fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        self.inner.lock_run(id)
    }
    fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        self.inner.try_lock_run(id)
    }
}

/// A store that keeps nothing but serialises every run write like the file store does, so the
/// runner's cost without a disk can be seen.
#[derive(Default)]
struct MemoryStore {
    next_id: AtomicU64,
}

impl Store for MemoryStore {
    fn list_designs(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    fn load_design(&self, name: &DesignName) -> Result<Value, StoreError> {
        Err(StoreError::design_not_found(name))
    }
    fn save_design(&self, name: &DesignName, _: &Value) -> Result<String, StoreError> {
        Ok(name.as_str().to_string())
    }
    fn create_design(&self, name: &DesignName, _: &Value) -> Result<String, StoreError> {
        Ok(name.as_str().to_string())
    }
    fn design_exists(&self, _: &DesignName) -> bool {
        false
    }
    fn delete_design(&self, name: &DesignName) -> Result<(), StoreError> {
        Err(StoreError::design_not_found(name))
    }
    fn design_stamp(&self, _: &DesignName) -> Option<String> {
        None
    }
    fn list_versions(&self, _: &DesignName) -> Result<Vec<DesignVersion>, StoreError> {
        Ok(Vec::new())
    }
    fn add_version(&self, _: &DesignName, _: &DesignVersion) -> Result<(), StoreError> {
        Ok(())
    }
    fn remove_version(&self, name: &DesignName, version: u64) -> Result<(), StoreError> {
        Err(vwf::store::version_not_found(name, version))
    }
    fn versioned_designs(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    fn allocate_run_id(&self) -> Result<RunId, StoreError> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        RunId::parse(&format!("{n:012x}")).map_err(|why| StoreError::other("cannot allocate a run id", why))
    }
    fn write_run_json(&self, _: &RunId, json: &[u8]) -> Result<(), StoreError> {
        let mut bytes = json.to_vec();
        bytes.push(b'\n');
        black_box(bytes);
        Ok(())
    }
    fn read_run(&self, id: &RunId) -> Result<Value, StoreError> {
        Err(StoreError::run_not_found(id))
    }
    fn list_runs(&self, _: usize) -> Result<Vec<RunEntry>, StoreError> {
        Ok(Vec::new())
    }
    fn list_run_ids(&self, _: Option<&RunId>, _: usize) -> Result<Vec<RunId>, StoreError> {
        Ok(Vec::new())
    }
    fn lock_run(&self, id: &RunId) -> Result<RunLock, StoreError> {
        Ok(RunLock::new(id.clone(), ()))
    }
    fn try_lock_run(&self, id: &RunId) -> Result<Option<RunLock>, StoreError> {
        Ok(Some(RunLock::new(id.clone(), ())))
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Listing

struct ListingFigures {
    populated: String,
    rebuild: Duration,
    list: Stats,
    /// (`vwf runs --limit 20 --json`, `vwf --version`), when the binary exists.
    cli: Option<(Stats, Stats)>,
}

fn listing(home: &Path, runs: usize) -> ListingFigures {
    let marker = home.join(format!(".bench-populated-v{STORE_FORMAT}"));
    let keep = std::env::var_os("VWF_BENCH_KEEP").is_some_and(|v| !v.is_empty() && v != "0");
    let populated = if marker.is_file() {
        format!("reused the kept store at {} (delete it to repopulate)", home.display())
    } else {
        let _ = fs::remove_dir_all(home);
        let t = Instant::now();
        populate(home, runs);
        fs::write(&marker, b"").unwrap_or_else(|e| die(&format!("cannot write {}: {e}", marker.display())));
        format!("{runs} run files written in {} (plain fs::write, no fsync) at {}", secs(t.elapsed()), home.display())
    };

    let runs_dir = home.join("workflow-runs");
    let _ = fs::remove_file(runs_dir.join(".index"));
    let store = FileStore::new(home.to_path_buf());
    let t = Instant::now();
    let first = store.list_runs(20).unwrap_or_else(|e| die(&format!("list_runs: {e}")));
    let rebuild = t.elapsed();
    check_listing(&first, runs);

    let mut times = Vec::with_capacity(LIST_CALLS);
    for _ in 0..LIST_CALLS {
        let t = Instant::now();
        let entries = store.list_runs(20).unwrap_or_else(|e| die(&format!("list_runs: {e}")));
        times.push(t.elapsed());
        black_box(&entries);
    }
    check_listing(&store.list_runs(20).unwrap_or_default(), runs);

    let binary = vwf_binary();
    let cli = binary.is_file().then(|| {
        let home_arg = home.to_string_lossy().into_owned();
        let runs_cmd = ["--home", home_arg.as_str(), "runs", "--limit", "20", "--json"];
        let check = |stdout: &[u8]| {
            let v: Value = serde_json::from_slice(stdout).unwrap_or_else(|e| die(&format!("vwf runs --json printed no JSON: {e}")));
            let n = v["runs"].as_array().map_or(0, Vec::len);
            if v["ok"] != json!(true) || n != 20 {
                die(&format!("vwf runs --json gave ok={} and {n} runs", v["ok"]));
            }
        };
        spawn_times(&binary, &runs_cmd, 1, check); // warm-up
        let runs = spawn_times(&binary, &runs_cmd, CLI_CALLS, check);
        let version = spawn_times(&binary, &["--version"], CLI_CALLS, |_| {});
        (runs, version)
    });
    if !keep {
        let _ = fs::remove_dir_all(home);
    }
    ListingFigures { populated, rebuild, list: Stats::of(times), cli }
}

/// Writes `runs` realistic run files (a finished 3-step run, each with its own id and
/// `created_at`) with plain writes, and no index.
fn populate(home: &Path, runs: usize) {
    let dir = home.join("workflow-runs");
    fs::create_dir_all(&dir).unwrap_or_else(|e| die(&format!("cannot create {}: {e}", dir.display())));
    let mut template = small_finished_run();
    let start = vwf_core::time::parse("2026-01-01T00:00:00Z").unwrap_or_default();
    for i in 0..runs {
        let id = store_run_id(i);
        let created = start + chrono::Duration::seconds(i as i64 * 60);
        let updated = created + chrono::Duration::milliseconds(42);
        template["run_id"] = json!(id);
        template["created_at"] = json!(vwf_core::time::format(&created));
        template["updated_at"] = json!(vwf_core::time::format(&updated));
        if let Some(steps) = template["steps"].as_array_mut() {
            for step in steps {
                step["started_at"] = json!(vwf_core::time::format(&created));
                step["finished_at"] = json!(vwf_core::time::format(&updated));
            }
        }
        let mut bytes = serde_json::to_vec(&template).unwrap_or_default();
        bytes.push(b'\n');
        let path = dir.join(format!("{id}.json"));
        fs::write(&path, &bytes).unwrap_or_else(|e| die(&format!("cannot write {}: {e}", path.display())));
    }
}

/// The `i`-th run's id: a bijection of `i` on 48 bits, so file names are not in creation order.
fn store_run_id(i: usize) -> String {
    let n = (i as u64).wrapping_mul(0x9E37_79B9_7F4B) & 0xFFFF_FFFF_FFFF;
    format!("{n:012x}")
}

/// A finished run of trigger → condition → output, made by the core with no I/O.
fn small_finished_run() -> Value {
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "check", "type": "condition", "expr": "out.start.chars > 0"},
            {"id": "report", "type": "output", "template": "checked: {{nodes.check}}"}
        ],
        "edges": [{"from": "start", "to": "check"}, {"from": "check", "to": "report", "label": "true"}]
    });
    let design = Design::from_value(&graph).unwrap_or_else(|e| die(&format!("small design: {e:?}")));
    let plan = Plan::compile("daily-check", &design).unwrap_or_else(|r| die(&format!("small design: {:?}", r.errors)));
    let now = vwf_core::time::parse("2026-01-01T00:00:00Z").unwrap_or_default();
    let mut run = Run::start(plan, zero_id(), manual(), now);
    while let Advance::Settled(_) = run.advance(now) {}
    if run.status() != Status::Done {
        die(&format!("the small run did not finish: {:?}", run.status()));
    }
    serde_json::to_value(&run).unwrap_or_else(|e| die(&e.to_string()))
}

/// The id the engine's runs are started with (they are never saved).
fn zero_id() -> RunId {
    RunId::from_bytes([0; 6])
}

fn check_listing(entries: &[RunEntry], runs: usize) {
    let newest = store_run_id(runs - 1);
    let ok = entries.len() == 20 && entries[0].id.as_str() == newest && entries.iter().all(|e| e.run.is_ok());
    if !ok {
        let first = entries.first().map(|e| e.id.as_str()).unwrap_or("none");
        die(&format!("list_runs(20) gave {} entries, first {first}, expected newest {newest}", entries.len()));
    }
}

fn vwf_binary() -> PathBuf {
    // Cargo builds the package's binary (same profile) before a bench and names it here.
    PathBuf::from(env!("CARGO_BIN_EXE_vwf"))
}

fn spawn_times(binary: &Path, args: &[&str], n: usize, check: impl Fn(&[u8])) -> Stats {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let out = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| die(&format!("cannot spawn {}: {e}", binary.display())));
        times.push(t.elapsed());
        if !out.status.success() {
            die(&format!("{} {args:?} failed: {}", binary.display(), String::from_utf8_lossy(&out.stderr)));
        }
        check(&out.stdout);
    }
    Stats::of(times)
}

// ---------------------------------------------------------------------------------------------
// Figures and printing

struct Stats {
    mean: Duration,
    median: Duration,
    min: Duration,
    max: Duration,
    n: usize,
}

impl Stats {
    fn of(mut times: Vec<Duration>) -> Stats {
        times.sort();
        let n = times.len().max(1);
        let sum: Duration = times.iter().sum();
        let median = match times.len() {
            0 => Duration::ZERO,
            len if len % 2 == 1 => times[len / 2],
            len => (times[len / 2 - 1] + times[len / 2]) / 2,
        };
        Stats {
            mean: sum / n as u32,
            median,
            min: times.first().copied().unwrap_or_default(),
            max: times.last().copied().unwrap_or_default(),
            n: times.len(),
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mean {}, median {}, min {}, max {} (n={})", ms(self.mean), ms(self.median), ms(self.min), ms(self.max), self.n)
    }
}

/// The mean write time of each batch.
fn batch_means(batches: &[Vec<Duration>], per_batch: usize) -> Vec<Duration> {
    batches.iter().map(|b| b.iter().sum::<Duration>() / per_batch.max(1) as u32).collect()
}

fn mean_of(iters: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..iters / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed() / iters as u32
}

struct Row {
    cells: [String; 5],
}

impl Row {
    fn new(measure: &str, value: String, baseline: String, ratio: String, target: String) -> Row {
        Row { cells: [measure.to_string(), value, baseline, ratio, target] }
    }
}

fn print_table(rows: &[Row]) {
    let header = Row::new("measure", "value".into(), "baseline".into(), "ratio".into(), "target".into());
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(&row.cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &Row| {
        let cells: Vec<String> = row.cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("| {} |", cells.join(" | "));
    };
    line(&header);
    let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    println!("|-{}-|", dashes.join("-|-"));
    for row in rows {
        line(row);
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn pass(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| die(&format!("{name}={v:?} is not a number"))),
        Err(_) => default,
    }
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The mount holding `path` (longest mount-point prefix in /proc/self/mounts).
fn filesystem_of(path: &Path) -> String {
    let Ok(mounts) = fs::read_to_string("/proc/self/mounts") else {
        return "unknown (no /proc/self/mounts)".into();
    };
    mounts
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (device, point, kind, options) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
            let point = point.replace("\\040", " ");
            path.starts_with(&point).then(|| (point.len(), format!("{kind} on {device} mounted at {point} ({options})")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, s)| s)
}

fn die(message: &str) -> ! {
    eprintln!("bench error: {message}");
    std::process::exit(1)
}
