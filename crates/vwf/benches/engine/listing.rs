//! Phase 5, listing a large store: `$VWF_BENCH_RUNS` realistic run files written with no index,
//! the index rebuilt by the first `list_runs(20)`, then `list_runs(20)` and the CLI's
//! `vwf runs --limit 20 --json` timed on it.
//!
//! Every listing must give 20 readable runs, the newest first. A kept store (`VWF_BENCH_KEEP=1`)
//! is reused only when its marker names this [`crate::STORE_FORMAT`], and its `.index` is deleted
//! each time so the rebuild is measured again.

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use vwf_store::Wait;

use serde_json::{Value, json};
use vwf::store::{FileStore, RunEntry, Store};
use vwf_core::design::Design;
use vwf_core::names::RunId;
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Run, Status};
use vwf_core::stats::{Bucket, Query, report};

use crate::figures::{Stats, die, secs};
use crate::{CLI_CALLS, LIST_CALLS, STATS_CALLS, STORE_FORMAT, manual};

pub(super) struct ListingFigures {
    pub(super) populated: String,
    pub(super) rebuild: Duration,
    pub(super) list: Stats,
    /// The first stats report (builds the missing `.stats` from the run files).
    pub(super) stats_rebuild: Duration,
    /// `GET /stats`'s work over every run: the store's records and the report, by day.
    pub(super) stats: Stats,
    /// (`vwf runs --limit 20 --json`, `vwf --version`), when the binary exists.
    pub(super) cli: Option<(Stats, Stats)>,
}

pub(super) fn listing(home: &Path, runs: usize) -> ListingFigures {
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
    let _ = fs::remove_file(runs_dir.join(".stats"));
    let store = FileStore::new(home.to_path_buf());
    let t = Instant::now();
    let first = store.list_runs(20).wait().unwrap_or_else(|e| die(&format!("list_runs: {e}")));
    let rebuild = t.elapsed();
    check_listing(&first, runs);

    let mut times = Vec::with_capacity(LIST_CALLS);
    for _ in 0..LIST_CALLS {
        let t = Instant::now();
        let entries = store.list_runs(20).wait().unwrap_or_else(|e| die(&format!("list_runs: {e}")));
        times.push(t.elapsed());
        black_box(&entries);
    }
    check_listing(&store.list_runs(20).wait().unwrap_or_default(), runs);

    let (stats_rebuild, stats) = stats_report(&store, runs);

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
    ListingFigures { populated, rebuild, list: Stats::of(times), stats_rebuild, stats, cli }
}

/// The stats report over every run of the store, by day (what `GET /stats` computes): the first
/// one, which builds `.stats` from the run files, then [`STATS_CALLS`] more. Each must count every
/// run once.
fn stats_report(store: &FileStore, runs: usize) -> (Duration, Stats) {
    let start = vwf_core::time::parse("2026-01-01T00:00:00Z").unwrap_or_default();
    let end = start + chrono::Duration::seconds(runs as i64 * 60 + 60);
    let (from, to) = (vwf_core::time::format(&start), vwf_core::time::format(&end));
    let query = Query::new(None, Some(&from), Some(&to), Some(Bucket::Day), end).unwrap_or_else(|e| die(&format!("stats query: {e}")));
    let once = || {
        let records = store.run_stats(query.from, query.to, None).wait().unwrap_or_else(|e| die(&format!("run_stats: {e}")));
        let report = report(&query, records, None);
        if report.totals.runs != runs as u64 {
            die(&format!("the stats report counted {} runs of {runs}", report.totals.runs));
        }
        black_box(report);
    };
    let t = Instant::now();
    once();
    let rebuild = t.elapsed();
    let times = (0..STATS_CALLS)
        .map(|_| {
            let t = Instant::now();
            once();
            t.elapsed()
        })
        .collect();
    (rebuild, Stats::of(times))
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
pub(super) fn zero_id() -> RunId {
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

pub(super) fn vwf_binary() -> PathBuf {
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
