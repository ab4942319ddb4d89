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

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod rows;

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

// ---------------------------------------------------------------------------------------------
// 1. Baseline

struct Baseline {
    times: Stats,
    steps: usize,
    skipped: usize,
    /// `Runner::list(LIST_LIMIT)` and `FileStore::list_runs(LIST_LIMIT)` over the baseline's runs.
    list: Stats,
    store_list: Stats,
}

fn baseline(home: &Path, graph: &Value, runs: usize) -> Result<Baseline, String> {
    let app = vwf::app::App::open(home.to_path_buf()).map_err(|e| format!("cannot open {}: {e:?}", home.display()))?;
    let saved = vwf::tools::call(&app, "workflow_design_save", &json!({"name": DESIGN, "graph": graph}));
    if saved.status != 200 || saved.body["ok"] != json!(true) {
        return Err(format!("the bench design does not save: {}", saved.body));
    }
    let mut times = Vec::with_capacity(runs);
    let (mut steps, mut skipped) = (0, 0);
    for i in 0..WARMUP + runs {
        let args = json!({"name": DESIGN, "input": input(i)});
        let t = Instant::now();
        let reply = vwf::tools::call(&app, "workflow_design_run", &args);
        let took = t.elapsed();
        if reply.status != 200 || reply.body["status"] != json!("done") {
            return Err(format!("a baseline run did not finish: HTTP-equivalent status {}, {}", reply.status, reply.body));
        }
        steps = reply.body["steps"].as_array().map_or(0, Vec::len);
        skipped = reply.body["skipped"].as_array().map_or(0, Vec::len);
        if i >= WARMUP {
            times.push(took);
        }
    }
    let runner = app.runner(&vwf::app::quiet, false);
    let list = timed(WARMUP, runs, || match runner.list(LIST_LIMIT) {
        Ok(entries) if entries.len() == LIST_LIMIT && entries.iter().all(|e| e.run.is_ok()) => Ok(()),
        Ok(entries) => Err(format!("Runner::list({LIST_LIMIT}) gave {} entries", entries.len())),
        Err(e) => Err(format!("Runner::list({LIST_LIMIT}): {e:?}")),
    })?;
    let store_list = timed(WARMUP, runs, || match app.store.list_runs(LIST_LIMIT) {
        Ok(entries) if entries.len() == LIST_LIMIT => Ok(()),
        Ok(entries) => Err(format!("list_runs({LIST_LIMIT}) gave {} entries", entries.len())),
        Err(e) => Err(format!("list_runs({LIST_LIMIT}): {e}")),
    })?;
    Ok(Baseline { times: Stats::of(times), steps: steps + skipped, skipped, list, store_list })
}

/// `warmup` untimed calls, then `n` timed ones.
fn timed(warmup: usize, n: usize, mut f: impl FnMut() -> Result<(), String>) -> Result<Stats, String> {
    for _ in 0..warmup {
        f()?;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    Ok(Stats::of(times))
}

// ---------------------------------------------------------------------------------------------
// The server process

struct Server {
    child: Child,
    home: PathBuf,
    /// `http://127.0.0.1:<port>/api/plugins/visual-workflow`
    api: String,
    /// The API token the server made at start, from `<home>/workflow-serve-<port>.token`.
    token: String,
    /// What the server wrote after its first line (stdout) and on stderr, collected by threads.
    output: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(home: &Path) -> Result<Server, String> {
        let binary = env!("CARGO_BIN_EXE_vwf");
        let mut cmd = Command::new(binary);
        cmd.arg("--home").arg(home).args(["serve", "--bind", "127.0.0.1:0", "--json"]);
        for var in ["HERMES_HOME", "VWF_NOW", "VWF_WEB_DIR"] {
            cmd.env_remove(var);
        }
        cmd.env("VWF_HOME", home);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {binary}: {e}"))?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            return Err("the server's output is not piped".into());
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let first: Value = match read {
            Ok(n) if n > 0 => serde_json::from_str(line.trim()).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        let Some(api) = first["api"].as_str().filter(|_| first["ok"] == json!(true)).map(String::from) else {
            let _ = child.kill();
            let mut err = String::new();
            let _ = BufReader::new(stderr).read_to_string(&mut err);
            let _ = child.wait();
            return Err(format!("vwf serve printed {:?} instead of {{ok, url, api}}; stderr: {}", line.trim(), err.trim()));
        };
        // The token file is written before the first line, so it is there now.
        let port = api.split('/').nth(2).and_then(|host| host.rsplit(':').next()).unwrap_or("");
        let token_file = home.join(format!("workflow-serve-{port}.token"));
        let Ok(token) = std::fs::read_to_string(&token_file).map(|t| t.trim().to_string()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("vwf serve wrote no API token to {}", token_file.display()));
        };
        let output = Arc::new(Mutex::new(Vec::new()));
        // Drained to the end, so a server writing more never blocks on a full pipe.
        let readers = vec![drain(stdout, "stdout", &output), drain(BufReader::new(stderr), "stderr", &output)];
        Ok(Server { child, home: home.to_path_buf(), api: api.trim_end_matches('/').to_string(), token, output, readers })
    }

    /// SIGTERM, then waits for the graceful stop (in-flight requests finish); kills it if that
    /// takes longer than the grace period. Answers how it ended and what it wrote.
    fn stop(mut self) -> (Result<String, String>, Vec<String>) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain kill(2) on our own child's pid, which we have not waited for yet.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_GRACE;
        let status: Result<ExitStatus, String> = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break Err(format!("the server did not stop within {} s of SIGTERM; killed", STOP_GRACE.as_secs()));
                }
                Err(e) => break Err(format!("cannot wait for the server: {e}")),
            }
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let output = self.output.lock().map(|o| o.clone()).unwrap_or_default();
        let status =
            status.and_then(|s| if s.success() { Ok(s.to_string()) } else { Err(format!("the server exited with {s} after SIGTERM")) });
        (status, output)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only reached without `stop` (an early error): never leave the server behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn drain(reader: impl BufRead + Send + 'static, name: &'static str, into: &Arc<Mutex<Vec<String>>>) -> std::thread::JoinHandle<()> {
    let into = into.clone();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            if let Ok(mut v) = into.lock() {
                v.push(format!("[{name}] {line}"));
            }
        }
    })
}

// ---------------------------------------------------------------------------------------------
// 2-5. Load

/// Which baseline a phase is compared with, and how.
#[derive(Clone, Copy)]
enum Compare {
    /// Sequential requests: latency against latency.
    Latency(Base),
    /// Concurrent requests: time per request (1 / throughput) against the baseline's mean.
    Throughput(Base),
    None,
}

#[derive(Clone, Copy)]
enum Base {
    Run,
    List,
}

struct Phase {
    label: String,
    /// `POST …/run` phases: how many clients sent them.
    run_clients: Option<usize>,
    /// The server's resident memory right after the phase.
    memory: Option<Memory>,
    /// The CPU time (user and system) the server used during the phase, when measured.
    server_cpu: Option<Duration>,
    stats: Stats,
    wall: Duration,
    errors: usize,
    examples: Vec<String>,
    compare: Compare,
}

impl Phase {
    fn throughput(&self) -> f64 {
        self.stats.n as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// What the requests of a phase answered: one entry per request.
struct Answers {
    times: Vec<Duration>,
    wall: Duration,
    errors: Vec<String>,
    /// Run ids answered by `POST …/run` with `status: done`.
    run_ids: Vec<String>,
}

/// What a load phase sends (and so which answer it expects).
#[derive(Clone, Copy)]
enum Request {
    /// `POST /designs/{name}/run`: a `done` run.
    Run,
    /// `GET /runs?limit=LIST_LIMIT`: that many readable, `done` runs.
    List,
}

fn load(server: &Server, graph: &Value, knobs: &Knobs) -> Result<(Vec<Phase>, Accounting), String> {
    let pid = server.child.id();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| format!("cannot start the client runtime: {e}"))?;
    let mut auth = reqwest::header::HeaderMap::new();
    let bearer = reqwest::header::HeaderValue::from_str(&format!("Bearer {}", server.token)).map_err(|e| format!("the token: {e}"))?;
    auth.insert(reqwest::header::AUTHORIZATION, bearer);
    let client = reqwest::Client::builder()
        .no_proxy()
        .default_headers(auth)
        .pool_max_idle_per_host(knobs.most_clients())
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let api = Arc::new(server.api.clone());
    let outcome = runtime.block_on(async move {
        let saved =
            client.post(format!("{api}/designs/{DESIGN}")).json(&json!({"graph": graph})).send().await.map_err(|e| format!("save: {e}"))?;
        let status = saved.status();
        let body: Value = saved.json().await.map_err(|e| format!("save: {e}"))?;
        if status != 200 || body["ok"] != json!(true) {
            return Err(format!("the bench design does not save through the API: {status} {body}"));
        }
        let mut phases = Vec::new();
        let mut created: Vec<String> = Vec::new();

        // Warm-up (not counted in the figures, but its runs are counted as created).
        let warm = drive(&client, &api, Request::Run, 1, WARMUP).await;
        created.extend(warm.run_ids.iter().cloned());
        if !warm.errors.is_empty() {
            return Err(format!("warm-up requests failed: {}", warm.errors.join(" | ")));
        }

        let sequential = knobs.baseline_runs;
        println!("[2] POST /designs/{DESIGN}/run: 1 client × {sequential}");
        let one = drive(&client, &api, Request::Run, 1, sequential).await;
        created.extend(one.run_ids.iter().cloned());
        let mut first = phase("POST /designs/{name}/run, 1 client".into(), one, Compare::Latency(Base::Run), pid);
        first.run_clients = Some(1);
        phases.push(first);

        for &c in &knobs.clients {
            let n = knobs.run_requests.div_ceil(c);
            println!("[3] POST /designs/{DESIGN}/run: {c} clients × {n}");
            let cpu = cpu_of(pid);
            let many = drive(&client, &api, Request::Run, c, n).await;
            created.extend(many.run_ids.iter().cloned());
            let mut many = phase(format!("POST /designs/{{name}}/run, {c} clients"), many, Compare::Throughput(Base::Run), pid);
            many.server_cpu = cpu_of(pid).zip(cpu).map(|(after, before)| after.saturating_sub(before));
            many.run_clients = Some(c);
            phases.push(many);
        }
        let c = knobs.most_clients();

        let n = knobs.list_requests;
        println!("[4] GET /runs?limit={LIST_LIMIT}: {c} clients × {n}");
        let list = drive(&client, &api, Request::List, c, n).await;
        phases.push(phase(format!("GET /runs?limit={LIST_LIMIT}, {c} clients"), list, Compare::Throughput(Base::List), pid));

        println!("[5] GET /runs/{{id}} of each of the {} runs created: {c} clients", created.len());
        let ids: Arc<[String]> = created.clone().into();
        let open = drive_ids(&client, &api, c, &ids).await;
        let open_missing = open.errors.len();
        phases.push(phase(format!("GET /runs/{{id}}, every run, {c} clients"), open, Compare::None, pid));

        let accounting = account(&client, &api, created, open_missing).await;
        for p in &phases {
            println!("    {}: {} requests in {}, {} errors", p.label, p.stats.n, secs(p.wall), p.errors);
            if let Some(cpu) = p.server_cpu {
                println!("      server CPU: {} per request, {:.2} cores busy", ms(cpu / p.stats.n.max(1) as u32), ratio(cpu, p.wall));
            }
        }
        Ok::<_, String>((phases, accounting))
    });
    // The client's connections are closed first: the disk check needs file descriptors too.
    drop(runtime);
    let (phases, mut accounting) = outcome?;
    accounting.read_disk(&server.home);
    Ok((phases, accounting))
}

/// A phase's figures, with the server's (`pid`) resident memory now.
fn phase(label: String, answers: Answers, compare: Compare, pid: u32) -> Phase {
    let errors = answers.errors.len();
    let examples = answers.errors.into_iter().take(ERRORS_SHOWN).collect();
    let memory = Memory::of(pid);
    Phase {
        label,
        run_clients: None,
        memory,
        server_cpu: None,
        stats: Stats::of(answers.times),
        wall: answers.wall,
        errors,
        examples,
        compare,
    }
}

/// The CPU time (user and system) process `pid` has used, from `/proc/<pid>/stat`.
fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state is the 3rd field, utime the
    // 14th and stime the 15th.
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).ok().filter(|t| *t > 0)?;
    Some(Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

/// A process's resident memory: `VmRSS` (now) and `VmHWM` (its peak), from `/proc/<pid>/status`.
struct Memory {
    rss_kb: u64,
    hwm_kb: u64,
}

impl Memory {
    fn of(pid: u32) -> Option<Memory> {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok());
        Some(Memory { rss_kb: field("VmRSS:")?, hwm_kb: field("VmHWM:")? })
    }
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} / {:.1} MB", self.rss_kb as f64 / 1024.0, self.hwm_kb as f64 / 1024.0)
    }
}

/// The targets' rows: the p50 at 1 client, runs/s at 16 clients (and no lost run), runs/s at the
/// most clients against 16 (with its p99), the server's memory after the run phases.
fn summary_rows(phases: &[Phase], no_lost_run: bool) -> Vec<rows::Row> {
    let at = |clients: usize| phases.iter().find(|p| p.run_clients == Some(clients));
    let mut out = Vec::new();
    if let Some(one) = at(1) {
        out.push(rows::Row::new(
            "HTTP run, 1 connection: p50",
            format!("{} (p99 {}, {:.0} runs/s)", ms(one.stats.p50), ms(one.stats.p99), one.throughput()),
            "<= 1.5 ms",
            Some(one.stats.p50 <= Duration::from_micros(1500) && one.errors == 0),
        ));
    }
    let most = phases.iter().filter_map(|p| p.run_clients).max().unwrap_or(1);
    if let Some(sixteen) = at(16) {
        out.push(rows::Row::new(
            "HTTP run, 16 connections: runs/s",
            format!(
                "{:.0} runs/s (p50 {}, p99 {}{})",
                sixteen.throughput(),
                ms(sixteen.stats.p50),
                ms(sixteen.stats.p99),
                sixteen.server_cpu.map_or(String::new(), |cpu| format!(
                    "; server CPU {} per run, {:.2} cores busy",
                    ms(cpu / sixteen.stats.n.max(1) as u32),
                    ratio(cpu, sixteen.wall)
                ))
            ),
            ">= 3,000 runs/s, every answered run on disk",
            Some(sixteen.throughput() >= 3000.0 && sixteen.errors == 0 && no_lost_run),
        ));
        if let Some(many) = at(most).filter(|_| most > 16) {
            let ratio = many.throughput() / sixteen.throughput().max(1e-9);
            out.push(rows::Row::new(
                format!("HTTP run, {most} connections: runs/s vs 16"),
                format!("{ratio:.2}x ({:.0} runs/s; p50 {}, p99 {})", many.throughput(), ms(many.stats.p50), ms(many.stats.p99)),
                ">= 1.0x, p99 reported",
                Some(ratio >= 1.0 && many.errors == 0),
            ));
        }
    }
    // After the run phases, as n8n-compare reads it (the listing phases after them hold other
    // buffers).
    if let Some(memory) = at(most).and_then(|p| p.memory.as_ref()) {
        let measure = format!("server resident memory after {most} connections (VmRSS / VmHWM)");
        out.push(rows::Row::new(measure, memory.to_string(), "reported", None));
    }
    out
}

/// `clients` closed-loop tasks, each sending `per_client` requests one after another; all start
/// together. Every request's latency is kept.
async fn drive(client: &reqwest::Client, api: &Arc<String>, request: Request, clients: usize, per_client: usize) -> Answers {
    let start = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for c in 0..clients {
        let (client, api, start) = (client.clone(), api.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Answers { times: Vec::with_capacity(per_client), wall: Duration::ZERO, errors: Vec::new(), run_ids: Vec::new() };
            start.wait().await;
            for k in 0..per_client {
                let i = c * per_client + k;
                let t = Instant::now();
                let answer = match request {
                    Request::Run => client.post(format!("{api}/designs/{DESIGN}/run")).json(&json!({"input": input(i)})).send().await,
                    Request::List => client.get(format!("{api}/runs?limit={LIST_LIMIT}")).send().await,
                };
                let checked = check(request, answer).await;
                out.times.push(t.elapsed());
                match checked {
                    Ok(Some(id)) => out.run_ids.push(id),
                    Ok(None) => {}
                    Err(e) => out.errors.push(e),
                }
            }
            out
        }));
    }
    start.wait().await;
    let t = Instant::now();
    gather(tasks, t).await
}

/// `GET /runs/{id}` of every id, shared out to `clients` closed-loop tasks.
async fn drive_ids(client: &reqwest::Client, api: &Arc<String>, clients: usize, ids: &Arc<[String]>) -> Answers {
    let clients = clients.min(ids.len()).max(1);
    let start = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for c in 0..clients {
        let (client, api, start, ids) = (client.clone(), api.clone(), start.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Answers { times: Vec::new(), wall: Duration::ZERO, errors: Vec::new(), run_ids: Vec::new() };
            start.wait().await;
            for id in ids.iter().skip(c).step_by(clients) {
                let t = Instant::now();
                let answer = client.get(format!("{api}/runs/{id}")).send().await;
                // `GET /runs/{id}` answers a run like `POST …/run` does.
                let checked = check(Request::Run, answer).await;
                out.times.push(t.elapsed());
                match checked {
                    Ok(Some(got)) if got == *id => out.run_ids.push(got),
                    Ok(other) => out.errors.push(format!("GET /runs/{id} answered run {other:?}")),
                    Err(e) => out.errors.push(format!("GET /runs/{id}: {e}")),
                }
            }
            out
        }));
    }
    start.wait().await;
    let t = Instant::now();
    gather(tasks, t).await
}

async fn gather(tasks: Vec<tokio::task::JoinHandle<Answers>>, began: Instant) -> Answers {
    let mut all = Answers { times: Vec::new(), wall: Duration::ZERO, errors: Vec::new(), run_ids: Vec::new() };
    for task in tasks {
        match task.await {
            Ok(a) => {
                all.times.extend(a.times);
                all.errors.extend(a.errors);
                all.run_ids.extend(a.run_ids);
            }
            Err(e) => all.errors.push(format!("a client task failed: {e}")),
        }
    }
    all.wall = began.elapsed();
    all
}

/// An answer is right when it is a 200 with the body its route promises: a `done` run (its id
/// returned), or a listing of `LIST_LIMIT` readable runs.
async fn check(request: Request, answer: reqwest::Result<reqwest::Response>) -> Result<Option<String>, String> {
    let response = answer.map_err(|e| format!("transport: {e}"))?;
    let status = response.status();
    let text = response.text().await.map_err(|e| format!("{status}, body unread: {e}"))?;
    let body: Value = serde_json::from_str(&text).map_err(|_| format!("{status}, not JSON: {}", short(&text)))?;
    if status != 200 {
        return Err(format!("{status}: {}", short(&text)));
    }
    match request {
        Request::Run => {
            if body["status"] != json!("done") {
                return Err(format!("run not done: {}", short(&text)));
            }
            body["run_id"].as_str().map(|id| Some(id.to_string())).ok_or_else(|| format!("no run_id: {}", short(&text)))
        }
        Request::List => {
            let runs = body["runs"].as_array().ok_or_else(|| format!("no runs: {}", short(&text)))?;
            if body["ok"] != json!(true) || runs.len() != LIST_LIMIT {
                return Err(format!("ok={} and {} runs (expected {LIST_LIMIT})", body["ok"], runs.len()));
            }
            if let Some(bad) = runs.iter().find(|r| r["ok"] == json!(false) || r["status"] != json!("done")) {
                return Err(format!("a listed run is not a done run: {}", short(&bad.to_string())));
            }
            Ok(None)
        }
    }
}

fn short(text: &str) -> String {
    let t: String = text.chars().take(300).collect();
    if t.len() < text.len() { format!("{t}…") } else { t }
}

// ---------------------------------------------------------------------------------------------
// No lost run

/// What the server answered about the runs, against what is on disk once the load is over.
struct Accounting {
    /// Run ids answered by `POST …/run` with `status: done` (warm-up, one client, many clients).
    answered: Vec<String>,
    ids: HashSet<String>,
    /// `GET /runs?limit=min(answered, API_LIST_MAX)`: the ids, newest first.
    api_listed: Result<Vec<String>, String>,
    /// `GET /runs/{id}` that did not answer the run.
    open_missing: usize,
    disk: Result<Disk, String>,
}

struct Disk {
    /// `<run_id>.json` files in `workflow-runs`, and the answered ones among them that are `done`.
    files: usize,
    answered_done: usize,
    /// The store's own listing of every run (through the index, in this process), newest first.
    listed: Vec<String>,
    answered_listed: usize,
}

/// One line of the accounting table: a count and what it must be.
struct Check {
    what: String,
    count: Option<usize>,
    expected: usize,
    /// The word for a count below the expected one (above it is `EXTRA`).
    short: &'static str,
}

impl Check {
    fn new(what: impl Into<String>, count: Option<usize>, expected: usize, short: &'static str) -> Check {
        Check { what: what.into(), count, expected, short }
    }

    fn verdict(&self) -> &'static str {
        match self.count {
            None => "ERROR",
            Some(c) if c == self.expected => "ok",
            Some(c) if c < self.expected => self.short,
            Some(_) => "EXTRA",
        }
    }
}

async fn account(client: &reqwest::Client, api: &str, answered: Vec<String>, open_missing: usize) -> Accounting {
    let limit = answered.len().clamp(1, API_LIST_MAX);
    let listed = async {
        let response = client.get(format!("{api}/runs?limit={limit}")).send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        match body["runs"].as_array() {
            Some(runs) if status == 200 => Ok(runs.iter().map(|r| r["run_id"].as_str().unwrap_or("").to_string()).collect()),
            _ => Err(format!("{status} {}", short(&body.to_string()))),
        }
    };
    let api_listed = listed.await;
    let ids = answered.iter().cloned().collect();
    Accounting { answered, ids, api_listed, open_missing, disk: Err("not read yet".into()) }
}

impl Accounting {
    /// Reads the server's run directory and the store's full listing (the server is still up,
    /// but nothing writes any more, and listing only reads).
    fn read_disk(&mut self, home: &Path) {
        self.disk = self.disk_of(home);
    }

    fn disk_of(&self, home: &Path) -> Result<Disk, String> {
        let dir = home.join("workflow-runs");
        let entries = fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let (mut files, mut answered_done) = (0, 0);
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|_| !name.starts_with('.')) else { continue };
            files += 1;
            let bytes = fs::read(entry.path()).map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            let done = serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v["status"] == json!("done"));
            if done && self.ids.contains(id) {
                answered_done += 1;
            }
        }
        let store = vwf::store::FileStore::new(home.to_path_buf());
        let entries = vwf::store::Store::list_runs(&store, usize::MAX).map_err(|e| format!("the store's listing: {e}"))?;
        let answered_listed = entries.iter().filter(|e| e.run.is_ok() && self.ids.contains(e.id.as_str())).count();
        Ok(Disk { files, answered_done, listed: entries.into_iter().map(|e| e.id.to_string()).collect(), answered_listed })
    }

    fn checks(&self) -> Vec<Check> {
        let n = self.answered.len();
        let disk = self.disk.as_ref().ok();
        let limit = n.clamp(1, API_LIST_MAX);
        let api = self.api_listed.as_ref().ok();
        // With nothing written since, the API's listing is the store's newest `limit`, in order.
        let api_matches = match (api, disk) {
            (Some(listed), Some(d)) => Some(listed.iter().zip(&d.listed).take_while(|(a, b)| a == b).count()),
            _ => None,
        };
        vec![
            Check::new("POSTs answered status done", Some(n), n, "LOST"),
            Check::new("distinct run ids among them", Some(self.ids.len()), n, "REUSED"),
            Check::new("answered runs on disk, done", disk.map(|d| d.answered_done), n, "LOST"),
            Check::new("run files on disk, in all", disk.map(|d| d.files), n, "LOST"),
            Check::new("answered runs in the store listing (index)", disk.map(|d| d.answered_listed), n, "LOST"),
            Check::new("store listing, in all", disk.map(|d| d.listed.len()), n, "LOST"),
            Check::new(format!("GET /runs?limit={limit}"), api.map(Vec::len), limit.min(n), "LOST"),
            Check::new("  the same ids, in order, as the store's", api_matches, api.map_or(0, Vec::len), "DIFFERS"),
            Check::new("GET /runs/{id} answered the run", Some(n - self.open_missing.min(n)), n, "LOST"),
        ]
    }

    fn failures(&self) -> Vec<String> {
        let mut f: Vec<String> = self
            .checks()
            .iter()
            .filter(|c| c.verdict() != "ok")
            .map(|c| match c.count {
                Some(count) => format!("{}: {}, {count} where {} were expected", c.verdict(), c.what.trim(), c.expected),
                None => format!("ERROR: {} could not be counted", c.what.trim()),
            })
            .collect();
        if let Err(e) = &self.disk {
            f.push(format!("the disk check failed: {e}"));
        }
        if let Err(e) = &self.api_listed {
            f.push(format!("GET /runs for the accounting failed: {e}"));
        }
        f
    }
}

fn print_accounting(a: &Accounting) {
    let checks = a.checks();
    let width = checks.iter().map(|c| c.what.chars().count()).max().unwrap_or(0).max("runs (no lost run)".len());
    println!("| {:<width$} | count | expected | check   |", "runs (no lost run)");
    println!("|{}|------:|---------:|---------|", "-".repeat(width + 2));
    for c in &checks {
        let count = c.count.map_or_else(|| "?".to_string(), |n| n.to_string());
        println!("| {:<width$} | {count:>5} | {:>8} | {:<7} |", c.what, c.expected, c.verdict());
    }
}

// ---------------------------------------------------------------------------------------------
// Figures and printing

const OUTPUT_SHOWN: usize = 10;

fn print_output(lines: &[String]) {
    if lines.is_empty() {
        println!("server output after its first line: none");
        return;
    }
    println!("server output after its first line ({} lines):", lines.len());
    for line in lines.iter().take(OUTPUT_SHOWN) {
        println!("    {line}");
    }
    if lines.len() > OUTPUT_SHOWN {
        println!("    … {} more; the last: {}", lines.len() - OUTPUT_SHOWN, lines.last().map_or("", String::as_str));
    }
}

struct Stats {
    mean: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
    n: usize,
}

impl Stats {
    fn of(mut times: Vec<Duration>) -> Stats {
        times.sort();
        let n = times.len();
        // Nearest rank: the smallest value with at least p of the samples at or below it.
        let rank = |p: f64| times.get(((p * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1).copied().unwrap_or_default();
        Stats {
            mean: times.iter().sum::<Duration>() / n.max(1) as u32,
            p50: rank(0.50),
            p99: rank(0.99),
            max: times.last().copied().unwrap_or_default(),
            n,
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mean {}, p50 {}, p99 {}, max {} (n={})", ms(self.mean), ms(self.p50), ms(self.p99), ms(self.max), self.n)
    }
}

struct Row {
    cells: [String; 10],
}

impl Row {
    fn new(measure: &str, n: String, errors: String, per_second: String, s: &Stats, ratio: String) -> Row {
        Row { cells: [measure.to_string(), n, errors, per_second, ms(s.p50), ms(s.p99), ms(s.max), ms(s.mean), ratio, "-".into()] }
    }
}

fn print_table(rows: &[Row]) {
    let header: [String; 10] =
        ["measure", "requests", "errors", "req/s", "p50", "p99", "max", "mean", "vs baseline", "server RSS / peak"].map(String::from);
    let mut widths = [0usize; 10];
    for cells in std::iter::once(&header).chain(rows.iter().map(|r| &r.cells)) {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String; 10]| {
        let cells: Vec<String> =
            cells.iter().zip(widths).enumerate().map(|(i, (c, w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") }).collect();
        println!("| {} |", cells.join(" | "));
    };
    line(&header);
    // Numbers align right (`---:`), the measure left.
    let dashes: Vec<String> =
        widths.iter().enumerate().map(|(i, w)| if i == 0 { "-".repeat(w + 2) } else { format!("{}:", "-".repeat(w + 1)) }).collect();
    println!("|{}|", dashes.join("|"));
    for row in rows {
        line(&row.cells);
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// A comma-separated list of client counts (each at least 1), e.g. `16,200`.
fn env_counts(name: &str, default: &[usize]) -> Result<Vec<usize>, String> {
    let Ok(v) = std::env::var(name) else { return Ok(default.to_vec()) };
    let counts: Result<Vec<usize>, _> = v.split(',').map(|c| c.trim().parse::<usize>().map(|n| n.max(1))).collect();
    counts.ok().filter(|c| !c.is_empty()).ok_or_else(|| format!("{name}={v:?} is not a list of numbers such as 16,200"))
}

fn env_usize(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Raises this process's soft open-file limit towards `wanted` (at most the hard limit); the
/// server started afterwards inherits it. Returns the limit in force, for the header.
fn raise_open_files(wanted: u64) -> String {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return "unknown (getrlimit failed)".into();
        }
        let before = limit.rlim_cur;
        let target = (wanted as libc::rlim_t).min(limit.rlim_max);
        if before < target {
            limit.rlim_cur = target;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return format!("{before} (could not raise it to {target}; raise `ulimit -n` if requests fail with EMFILE)");
            }
            return format!("{target} (raised from {before}; hard limit {}; {wanted} wanted)", limit.rlim_max);
        }
        format!("{before} (hard limit {}; {wanted} wanted)", limit.rlim_max)
    }
}
