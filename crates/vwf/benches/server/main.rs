//! Server load benchmark: prints figures and ratios, never fails on timing.
//!
//! `cargo bench -p vwf --bench server` (or `scripts/bench`, after the engine benchmark). It starts
//! the real `vwf serve --bind 127.0.0.1:0 --json` on a fresh home, saves a small typed design
//! (manual trigger → condition on the input → two collect-only outputs) through the API, and:
//!
//! 1. baseline: the same design run in this process through the function the server's handler
//!    calls (`tools::call("workflow_design_run")`: load, compile, run, result), sequentially, on
//!    the same disk; its per-run and per-step figures are what the HTTP figures are compared to.
//!    Likewise the listing: `Runner::list(20)` (what `GET /runs` calls) and the store's bare
//!    `list_runs(20)` under it;
//! 2. `POST /designs/{name}/run` from one client, one request after another (HTTP overhead);
//! 3. `POST /designs/{name}/run` with each number of closed-loop clients of `$VWF_BENCH_CLIENTS`
//!    (16 and 200), one after the other on the same server: a fixed number of requests per
//!    phase (`$VWF_BENCH_RUN_REQUESTS`, 4000, shared out to the clients), not a fixed time;
//! 4. `GET /runs?limit=20` with the most clients (`$VWF_BENCH_LIST_REQUESTS`, 50 each);
//! 5. `GET /runs/{id}` of every run created, likewise: the API still finds each one.
//!
//! After each phase the server's resident memory is read from `/proc/<pid>/status` (`VmRSS`
//! now, `VmHWM` its peak so far). The rows the targets name (p50 at 1 client, runs/s at 16,
//! runs/s at 200 against 16 with p99, memory) are recorded for `scripts/bench`'s summary table
//! (see `rows/mod.rs`).
//!
//! Correctness is checked, timing never is: an error answer (transport error, status other than
//! 200, a run not `done`, a listing entry that did not read) or a lost run (a POST answered
//! `done` whose run is missing or not `done` on disk, in the store's listing or from
//! `GET /runs/{id}`; a run id answered twice; run files no POST answered; a `GET /runs` that is
//! not the store's newest runs in order) makes the program exit 1 after printing its tables.
//!
//! 200 clients need file descriptors on both sides (a socket each; the server also holds a run
//! lock, a temp file and the index lock per run in flight): the soft open-file limit is raised
//! towards the hard one before the server starts, and the server inherits it.
//!
//! Knobs: `VWF_BENCH_CLIENTS` (`16,200`: client counts), `VWF_BENCH_RUN_REQUESTS` (4000 per phase),
//! `VWF_BENCH_LIST_REQUESTS` (50 per client), `VWF_BENCH_BASELINE_RUNS` (200),
//! `VWF_BENCH_SERVER_COMMAND=1` (put a `printf` command step before the condition),
//! `VWF_BENCH_RUNS_IN_FLIGHT` (the server's `[server] runs_in_flight`; unset: its default),
//! `VWF_BENCH_DIR` (where the temporary homes go; default target/tmp/vwf-bench).
//!
//! The phases live in their modules: [`baseline`], [`load`] (its clients in [`clients`]) and
//! [`accounting`]; [`process`] starts and stops the server and [`figures`] prints what was measured.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod accounting;
mod baseline;
mod clients;
mod figures;
mod load;
mod process;
#[path = "../rows/mod.rs"]
mod rows;

use accounting::print_accounting;
use baseline::baseline;
use figures::{Row, Stats, env_counts, env_usize, load_average, ms, print_output, print_table, raise_open_files, ratio, secs};
use load::{Base, Compare, Memory, load, summary_rows};
use process::Server;

const DESIGN: &str = "bench-small";
const WARMUP: usize = 10;
const LIST_LIMIT: usize = 20;
/// The most `GET /runs` answers in one call (`RUNS_MAX` of the API).
const API_LIST_MAX: usize = 1000;
/// Per request, so a stuck server shows up as errors instead of a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_GRACE: Duration = Duration::from_secs(15);
/// Error messages kept per phase for the report.
const ERRORS_SHOWN: usize = 5;

fn main() -> ExitCode {
    match bench() {
        Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
        Ok(failures) => {
            eprintln!();
            for f in &failures {
                eprintln!("bench failure: {f}");
            }
            ExitCode::FAILURE
        }
        Err(message) => {
            eprintln!("bench error: {message}");
            ExitCode::FAILURE
        }
    }
}

struct Knobs {
    /// The client counts of phase 3, in order.
    clients: Vec<usize>,
    run_requests: usize,
    list_requests: usize,
    baseline_runs: usize,
    command_step: bool,
    /// `[server] runs_in_flight` of the server; `None`: its default.
    runs_in_flight: Option<usize>,
}

impl Knobs {
    fn most_clients(&self) -> usize {
        self.clients.iter().copied().max().unwrap_or(1)
    }
}

/// Runs every phase; `Ok` holds the correctness failures (empty when all is well).
fn bench() -> Result<Vec<String>, String> {
    let knobs = Knobs {
        clients: env_counts("VWF_BENCH_CLIENTS", &[16, 200])?,
        run_requests: env_usize("VWF_BENCH_RUN_REQUESTS", 4000)?.max(1),
        list_requests: env_usize("VWF_BENCH_LIST_REQUESTS", 50)?.max(1),
        baseline_runs: env_usize("VWF_BENCH_BASELINE_RUNS", 200)?.max(1),
        command_step: std::env::var_os("VWF_BENCH_SERVER_COMMAND").is_some_and(|v| !v.is_empty() && v != "0"),
        runs_in_flight: std::env::var_os("VWF_BENCH_RUNS_IN_FLIGHT").map(|_| env_usize("VWF_BENCH_RUNS_IN_FLIGHT", 0)).transpose()?,
    };
    let base =
        std::env::var_os("VWF_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("vwf-bench"));
    fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let base = base.canonicalize().unwrap_or(base);
    let homes = tempfile::Builder::new()
        .prefix("server-")
        .tempdir_in(&base)
        .map_err(|e| format!("cannot create a temp dir in {}: {e}", base.display()))?;
    let (server_home, baseline_home) = (homes.path().join("server-home"), homes.path().join("baseline-home"));
    // Each client holds a connection, and the server a socket plus a run lock (and briefly a
    // temp file and the index lock) per request in flight; the server inherits this limit.
    let nofile = raise_open_files(knobs.most_clients() as u64 * 4 + 256);
    let graph = small_design(knobs.command_step);

    println!("vwf server load benchmark");
    println!("  dir:        {}", homes.path().display());
    println!("  cpus:       {} (the clients share them with the server)", std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("  load avg:   {}", load_average());
    println!("  open files: {nofile}");
    println!(
        "  run slots:  {} ([server] runs_in_flight)",
        knobs.runs_in_flight.map_or_else(|| "the server's default (4 per core)".to_string(), |n| n.to_string())
    );
    println!(
        "  design:     {DESIGN}: manual trigger → {}condition on the input → two collect-only outputs ({} steps per run, one skipped)",
        if knobs.command_step { "printf command → " } else { "" },
        if knobs.command_step { 4 } else { 3 }
    );
    let began = Instant::now();
    println!();

    // 1. Baseline.
    println!("[1] baseline: {WARMUP} warm-ups + {} sequential runs in this process (tools::call workflow_design_run)", knobs.baseline_runs);
    let baseline = baseline(&baseline_home, &graph, knobs.baseline_runs)?;
    println!("    per run: {}; {} steps per run, of which {} skipped", baseline.times, baseline.steps, baseline.skipped);
    println!("    Runner::list({LIST_LIMIT}): {}", baseline.list);
    println!("    FileStore::list_runs({LIST_LIMIT}): {}", baseline.store_list);
    let per_step = baseline.times.mean / baseline.steps.max(1) as u32;

    // The server.
    if let Some(slots) = knobs.runs_in_flight {
        fs::create_dir_all(&server_home).map_err(|e| format!("cannot create {}: {e}", server_home.display()))?;
        let config = server_home.join("visual-workflow.toml");
        fs::write(&config, format!("[server]\nruns_in_flight = {slots}\n"))
            .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    }
    let server = Server::start(&server_home)?;
    println!("    server: {} (pid {})", server.api, server.child.id());
    let outcome = load(&server, &graph, &knobs);
    let (stopped, server_output) = server.stop();
    let (phases, accounting) = outcome?;

    // The report.
    println!("    ({} in all)", secs(began.elapsed()));
    println!();
    let sequential = |label: String, stats: &Stats, ratio: String| {
        Row::new(&label, stats.n.to_string(), "0".into(), format!("{:.0}", 1.0 / stats.mean.as_secs_f64().max(1e-9)), stats, ratio)
    };
    let mut rows = vec![
        sequential(format!("baseline: library run, sequential ({} per plan step)", ms(per_step)), &baseline.times, "1.00x".into()),
        sequential(format!("baseline: Runner::list({LIST_LIMIT}), sequential"), &baseline.list, "1.00x".into()),
        sequential(
            format!("  of which FileStore::list_runs({LIST_LIMIT})"),
            &baseline.store_list,
            format!("{:.2}x p50", ratio(baseline.store_list.p50, baseline.list.p50)),
        ),
    ];
    for phase in &phases {
        let base = |b: Base| match b {
            Base::Run => &baseline.times,
            Base::List => &baseline.list,
        };
        let versus = match phase.compare {
            Compare::Latency(b) => {
                format!("{:.2}x p50, {:.2}x mean", ratio(phase.stats.p50, base(b).p50), ratio(phase.stats.mean, base(b).mean))
            }
            Compare::Throughput(b) => format!("{:.2}x time/req", 1.0 / phase.throughput() / base(b).mean.as_secs_f64().max(1e-9)),
            Compare::None => "-".into(),
        };
        let mut row = Row::new(
            &phase.label,
            phase.stats.n.to_string(),
            phase.errors.to_string(),
            format!("{:.0}", phase.throughput()),
            &phase.stats,
            versus,
        );
        row.cells[9] = phase.memory.as_ref().map_or_else(|| "?".into(), Memory::to_string);
        rows.push(row);
    }
    print_table(&rows);
    println!();
    println!("vs baseline: one client: its latency / the baseline's (p50 and mean; the cost of HTTP, JSON and the hand-off");
    println!("             to a blocking thread); many clients: \"time/req\" = (1 / throughput) / the baseline's mean, below 1");
    println!("             when concurrency overlaps disk waits. Disk latency comes in bursts here: compare p50s first.");
    println!(
        "engine per-step overhead: baseline {} per plan step ({} per run / {} plan steps; each run loads, compiles, \
         runs and renders its result); the 50-node figures against the fsync floor: `cargo bench -p vwf --bench engine`",
        ms(per_step),
        ms(baseline.times.mean),
        baseline.steps
    );
    println!();
    print_accounting(&accounting);
    println!();
    let summary = summary_rows(&phases, accounting.failures().is_empty());
    for row in &summary {
        println!("target: {}: {} (target {}): {}", row.measure, row.figure, row.target, row.verdict());
    }
    rows::record(&summary);
    println!();
    match &stopped {
        Ok(status) => println!("server stopped with SIGTERM: {status}"),
        Err(e) => println!("server stop: {e}"),
    }
    print_output(&server_output);
    println!("Figures are informational: this program fails only on an error answer or a lost run.");

    let mut failures = Vec::new();
    for phase in &phases {
        if phase.errors > 0 {
            failures.push(format!("{}: {} error answers, e.g. {}", phase.label, phase.errors, phase.examples.join(" | ")));
        }
    }
    failures.extend(accounting.failures());
    if let Err(e) = stopped {
        failures.push(e);
    }
    Ok(failures)
}

// ---------------------------------------------------------------------------------------------
// The design

/// `start` (manual) → [`echo`: `printf`] → `check`: input `n >= 5` → `big` | `small` (collect only).
fn small_design(command_step: bool) -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual", "x": 0, "y": 0})];
    let mut edges = Vec::new();
    let expr = if command_step {
        nodes.push(json!({"id": "echo", "type": "command", "run": "printf '%s' {{trigger.n}}", "x": 180, "y": 0}));
        edges.push(json!({"from": "start", "to": "echo"}));
        edges.push(json!({"from": "echo", "to": "check"}));
        "out.echo.text >= 5"
    } else {
        edges.push(json!({"from": "start", "to": "check"}));
        "out.start.n >= 5"
    };
    nodes.push(json!({"id": "check", "type": "condition", "expr": expr, "x": 360, "y": 0}));
    nodes.push(json!({"id": "big", "type": "output", "template": "big: {{trigger.n}} ({{trigger.who}})", "x": 540, "y": -80}));
    nodes.push(json!({"id": "small", "type": "output", "template": "small: {{trigger.n}} ({{trigger.who}})", "x": 540, "y": 80}));
    edges.push(json!({"from": "check", "to": "big", "label": "true"}));
    edges.push(json!({"from": "check", "to": "small", "label": "false"}));
    json!({"description": "server load benchmark: a condition on the input and two collect-only outputs", "nodes": nodes, "edges": edges})
}

/// The input of the `i`-th request: half take each branch.
fn input(i: usize) -> Value {
    json!({"n": i % 10, "who": format!("client request {i}")})
}
