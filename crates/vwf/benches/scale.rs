//! Scale-out benchmark: prints a table, never fails on timing.
//!
//! `cargo bench -p vwf --bench scale`. The real `vwf serve` runs the four-node typed design
//! (manual trigger → condition on the input → two collect-only outputs) for closed-loop clients
//! sending `POST /designs/{name}/run`, at 1, 16 and 200 clients, on three setups measured in the
//! same run: the file store (one instance), PostgreSQL with one instance, and PostgreSQL with
//! three instances on one database (client `c` talks to instance `c % 3`). Each setup gets fresh
//! homes (and a fresh database); the ratios compare each PostgreSQL row with the file store's row
//! at the same number of clients.
//!
//! PostgreSQL: `VWF_TEST_DATABASE_URL` (an admin URL) when set, else a throwaway cluster started
//! with `scripts/postgres` and stopped at the end, with fsync on (`VWF_BENCH_PG_FSYNC=off` for
//! none): what it acknowledges is on disk, as with the file store.
//!
//! The instances use the default `[store] pool_size` (16): a run holds a pooled connection for
//! its lock and needs another to write, and the store keeps run locks to fewer than the pool's
//! connections, so 200 clients on one instance queue for lock slots instead of exhausting the
//! pool. `VWF_BENCH_POOL_SIZE` sets another size (the throwaway cluster allows 400 connections).
//!
//! On PostgreSQL each row also says what the database did, from its own counters: statements per
//! run (`pg_stat_statements`, loaded by `scripts/postgres`; "n/a" on a server without it), round
//! trips per run from the instances to the database (the kernel's TCP counters, read with `ss`:
//! statements and the pool's connection checks alike), commits
//! per second (`pg_stat_database`), and what its sessions waited on while busy (`pg_stat_activity`
//! sampled every 10 ms: the share of samples per wait event, "CPU" for none). The 16-client row of
//! one instance also lists the statements a run costs, one by one. Every row says where the CPU
//! went per run (the servers, the database, the clients) and how often the servers' and the
//! database's threads were switched off a core per run (`/proc/PID/task/TID/status`).
//!
//! Correctness is checked: an error answer (transport error, status other than 200, a run not
//! `done`) or a lost run (the runs listed afterwards, paging through every instance, are not
//! exactly the runs answered, each `done`) makes the program exit 1 after the table.
//!
//! Then a long loop on each store, in process through the real `Runner`: a loop of
//! `VWF_BENCH_PASSES` (10000) passes on PostgreSQL and `VWF_BENCH_FILE_PASSES` (1000) on the file
//! store, which still rewrites the whole run file at every step, whose body is one command step
//! (`true`), with the total and
//! the mean cost of the first and of the last 100 passes (the time between one pass's step
//! settling and the next's), and their ratio: a step costs the same at the end of a long run as at
//! its start when the ratio stays near 1. Each loop's total and ratio are recorded for
//! `scripts/bench`'s summary table (see `rows/mod.rs`; it runs 10000 passes on both stores).
//!
//! Knobs: `VWF_BENCH_SCALE_REQUESTS` (requests per measured phase, default 2000, spread over the
//! clients; 0 measures the loops only), `VWF_BENCH_POOL_SIZE` (unset: the default), `VWF_BENCH_PASSES` (10000; 0 skips the
//! loop), `VWF_BENCH_FILE_PASSES` (1000).

#[path = "../tests/common/mod.rs"]
#[allow(unused)]
mod common;

use std::collections::HashSet;
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Home;
use common::server::{Options, Server, list_all, small};
use serde_json::{Value, json};

mod dbstats;
mod rows;

use dbstats::DbFigures;

const DESIGN: &str = "bench-small";
const CLIENT_COUNTS: [usize; 3] = [1, 16, 200];
const WARMUP: usize = 20;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

fn main() -> ExitCode {
    match bench() {
        Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
        Ok(failures) => {
            for f in failures {
                eprintln!("bench failure: {f}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bench error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Setup {
    Files,
    Postgres(usize),
}

impl Setup {
    fn label(self) -> String {
        match self {
            Setup::Files => "file store, 1 instance".into(),
            Setup::Postgres(1) => "PostgreSQL, 1 instance".into(),
            Setup::Postgres(n) => format!("PostgreSQL, {n} instances"),
        }
    }
}

struct Row {
    setup: Setup,
    clients: usize,
    ok: usize,
    errors: Vec<String>,
    per_second: f64,
    p50: Duration,
    p99: Duration,
    db: Option<DbFigures>,
    /// CPU time per run: servers, database, clients.
    cpu: dbstats::CpuTimes,
}

fn bench() -> Result<Vec<String>, String> {
    let requests = env_usize("VWF_BENCH_SCALE_REQUESTS", 2000)?;
    // 0: no HTTP rows, only the loops.
    let setups: &[Setup] = if requests == 0 { &[] } else { &[Setup::Files, Setup::Postgres(1), Setup::Postgres(3)] };
    let requests = requests.max(CLIENT_COUNTS[2]);
    let pool_size = std::env::var_os("VWF_BENCH_POOL_SIZE").map(|_| env_usize("VWF_BENCH_POOL_SIZE", 0)).transpose()?;
    let cluster = Cluster::up()?;
    println!("vwf scale-out benchmark");
    println!("  cpus:      {} (clients, servers and PostgreSQL share them)", std::thread::available_parallelism().map_or(0, |n| n.get()));
    println!("  design:    {DESIGN}: manual trigger → condition → two collect-only outputs (4 nodes, 3 steps per run)");
    println!("  requests:  {requests} POST /designs/{DESIGN}/run per row, closed loop, after {WARMUP} warm-ups per setup");
    let pool = pool_size.map_or_else(|| "the default".to_string(), |n| n.to_string());
    println!("  database:  {}; [store] pool_size: {pool} on every instance", cluster.origin);
    println!();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| format!("client runtime: {e}"))?;
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    // The servers' standard error (a log line per request), out of the way of the table.
    let logs = tempfile::Builder::new().prefix("vwf-scale-logs-").tempdir().map_err(|e| format!("temp dir: {e}"))?;
    for &setup in setups {
        let instances = match setup {
            Setup::Files => 1,
            Setup::Postgres(n) => n,
        };
        let homes: Vec<Home> = (0..instances).map(|_| Home::new()).collect();
        let env = match setup {
            Setup::Files => Vec::new(),
            Setup::Postgres(_) => {
                for home in homes.iter().filter(|_| pool_size.is_some()) {
                    common::server::write_config(home, &format!("[store]\npool_size = {}\n", pool_size.unwrap_or_default()));
                }
                vec![("VWF_DATABASE_URL", common::pg::fresh_database())]
            }
        };
        let servers: Vec<Server> = homes
            .iter()
            .enumerate()
            .map(|(i, home)| {
                let log = logs.path().join(format!("{}-{i}.log", rows.len()));
                Server::start_with(home, Options { env: env.clone(), stderr: Some(&log), ..Options::default() })
            })
            .collect();
        servers[0].save(DESIGN, small());
        // Each instance's run URL with its API token (each made its own at start).
        let urls: Arc<[(String, String)]> =
            servers.iter().map(|s| (s.url(&format!("/designs/{DESIGN}/run")), s.token.clone().unwrap_or_default())).collect();
        let mut answered = runtime.block_on(drive(&urls, WARMUP.min(instances * 8), WARMUP)).ids;
        let database = match &env[..] {
            [(_, url)] => Some(url.rsplit('/').next().unwrap_or_default().to_string()),
            _ => None,
        };
        for clients in CLIENT_COUNTS {
            let watch = database.as_deref().map(|db| runtime.block_on(dbstats::Watch::start(db)));
            let cpu_before = dbstats::CpuTimes::now();
            let phase = runtime.block_on(drive(&urls, clients, requests));
            let cpu = dbstats::CpuTimes::now().per_run_since(&cpu_before, phase.ids.len());
            let db = match watch {
                Some(watch) => {
                    Some(runtime.block_on(watch.stop(phase.ids.len(), phase.elapsed, setup == Setup::Postgres(1) && clients == 16)))
                }
                None => None,
            };
            let mut times = phase.times;
            times.sort();
            let rank = |p: f64| times.get(((p * times.len() as f64).ceil() as usize).max(1) - 1).copied().unwrap_or_default();
            let row = Row {
                setup,
                clients,
                ok: phase.ids.len(),
                per_second: phase.ids.len() as f64 / phase.elapsed.as_secs_f64().max(1e-9),
                p50: rank(0.50),
                p99: rank(0.99),
                errors: phase.errors,
                db,
                cpu,
            };
            println!(
                "  {:<26} {clients:>3} clients: {:>7.1} runs/s, p50 {}, p99 {}, {} errors; CPU per run: {}",
                setup.label(),
                row.per_second,
                ms(row.p50),
                ms(row.p99),
                row.errors.len(),
                cpu_line(&row)
            );
            if let Some(db) = &row.db {
                println!("      database: {}", db.line());
                for (calls, query) in &db.statements {
                    println!("        {calls:>5.2} / run  {query}");
                }
            }
            if let Some(e) = row.errors.first() {
                failures.push(format!("{}, {clients} clients: {} error answers, e.g. {e}", setup.label(), row.errors.len()));
            }
            answered.extend(phase.ids);
            rows.push(row);
        }
        failures.extend(account(setup, &servers, &answered));
    }
    let passes = env_usize("VWF_BENCH_PASSES", 10_000)?;
    let file_passes = env_usize("VWF_BENCH_FILE_PASSES", 1_000)?.min(passes);
    let mut loops = Vec::new();
    let floor = if passes > 0 { Some(pass_floor()?) } else { None };
    if let Some(floor) = &floor {
        println!();
        println!(
            "  floor of a pass, this machine: {} (starting and reaping `true` {}, one fdatasync'd append {})",
            ms(floor.spawn + floor.sync),
            ms(floor.spawn),
            ms(floor.sync)
        );
    }
    if passes > 0 {
        println!();
        for (setup, passes) in [(Setup::Files, file_passes), (Setup::Postgres(1), passes)] {
            let figures = long_loop(setup, passes)?;
            println!(
                "  {:<26} {passes} passes: {:.1} s, first 100 {} / pass, last 100 {} / pass",
                setup.label(),
                figures.total.as_secs_f64(),
                ms(figures.first),
                ms(figures.last)
            );
            loops.push((setup, passes, figures));
        }
    }
    drop(cluster);
    println!();
    print_table(&rows);
    println!();
    println!("vs file store: runs/s, p50 and p99 of the row / the file store's at the same number of clients (runs/s above 1 is faster,");
    println!("latency below 1 is faster). No lost run: every answered run is listed once (pages from every instance) and `done`.");
    if !loops.is_empty() {
        println!();
        let floor = floor.as_ref().map_or(Duration::ZERO, |f| f.spawn + f.sync);
        println!("| store | passes | total | first 100 passes, mean | last 100 passes, mean | last / first | mean pass / floor |");
        println!("|-------|-------:|------:|-----------------------:|----------------------:|-------------:|------------------:|");
        for (setup, passes, f) in &loops {
            let ratio = f.last.as_secs_f64() / f.first.as_secs_f64().max(1e-9);
            let per_pass = f.total / (*passes).max(1) as u32;
            println!(
                "| {} | {passes} | {:.1} s | {} | {} | {ratio:.2}x | {:.2}x ({} / {}) |",
                setup.label(),
                f.total.as_secs_f64(),
                ms(f.first),
                ms(f.last),
                per_pass.as_secs_f64() / floor.as_secs_f64().max(1e-9),
                ms(per_pass),
                ms(floor)
            );
        }
        rows::record(&loops.iter().flat_map(|(setup, passes, f)| loop_rows(*setup, *passes, f, floor)).collect::<Vec<_>>());
    }
    Ok(failures)
}

/// The passes the loop targets are stated for.
const TARGET_PASSES: usize = 10_000;

/// A loop's rows for the summary: its total (at most 10 s for 10,000 passes) and the cost of its
/// last 100 passes against its first 100 (at most 1.5x). A shorter loop is reported against no
/// total target.
fn loop_rows(setup: Setup, passes: usize, f: &LoopFigures, floor: Duration) -> [rows::Row; 2] {
    let ratio = f.last.as_secs_f64() / f.first.as_secs_f64().max(1e-9);
    let full = passes >= TARGET_PASSES;
    let at_floor = floor.as_secs_f64() * passes as f64;
    [
        rows::Row::new(
            format!("loop of {passes} command passes, {}: total", setup.label()),
            format!(
                "{:.1} s ({:.2}x the floor of {at_floor:.1} s: a spawn and an fdatasync per pass)",
                f.total.as_secs_f64(),
                f.total.as_secs_f64() / at_floor.max(1e-9)
            ),
            if full { "<= 10 s".to_string() } else { format!("<= 10 s at {TARGET_PASSES} passes") },
            full.then_some(f.total <= Duration::from_secs(10)),
        ),
        rows::Row::new(
            format!("loop of {passes} command passes, {}: last / first 100", setup.label()),
            format!("{ratio:.2}x ({} / {} per pass)", ms(f.last), ms(f.first)),
            "<= 1.5x",
            Some(ratio <= 1.5),
        ),
    ]
}

/// What a pass of the loop cannot go below on this machine: starting and reaping the pass's
/// command as the command driver does (`true`, in a process group of its own, its output piped),
/// and one `fdatasync`ed append (the pass's record before its command starts), each the mean of
/// 300 measured in this run.
struct Floor {
    spawn: Duration,
    sync: Duration,
}

fn pass_floor() -> Result<Floor, String> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    const N: u32 = 300;
    let started = Instant::now();
    for _ in 0..N {
        Command::new("true")
            .process_group(0)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .output()
            .map_err(|e| format!("cannot run `true`: {e}"))?;
    }
    let spawn = started.elapsed() / N;
    // On the disk the loops write to.
    let home = Home::new();
    let mut file = std::fs::File::create(home.path().join("floor")).map_err(|e| format!("floor file: {e}"))?;
    let line = [b'x'; 200];
    let started = Instant::now();
    for _ in 0..N {
        file.write_all(&line).and_then(|()| file.sync_data()).map_err(|e| format!("floor write: {e}"))?;
    }
    Ok(Floor { spawn, sync: started.elapsed() / N })
}

struct LoopFigures {
    total: Duration,
    first: Duration,
    last: Duration,
}

/// One run of a `passes`-pass loop of command steps on the setup's store, in process.
fn long_loop(setup: Setup, passes: usize) -> Result<LoopFigures, String> {
    use std::sync::Mutex;
    use vwf::store::Store;
    let home = Home::new();
    let store: Box<dyn Store> = match setup {
        Setup::Files => Box::new(vwf::store::FileStore::new(home.path().to_path_buf())),
        Setup::Postgres(_) => {
            Box::new(vwf::store::PgStore::connect(&vwf::store::PgSettings::new(common::pg::fresh_database())).map_err(|e| e.to_string())?)
        }
    };
    let design = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each", "type": "loop", "over": "{{trigger.items}}", "max_items": passes, "concurrency": 1},
            {"id": "work", "type": "command", "argv": ["true"]}
        ],
        "edges": [{"from": "start", "to": "each"}, {"from": "each", "to": "work", "label": "each"}]
    });
    let design = vwf_core::design::Design::from_value(&design).map_err(|e| format!("{e:?}"))?;
    let plan = vwf_core::plan::Plan::compile(DESIGN, &design).map_err(|e| format!("{e:?}"))?;
    let settled = Mutex::new(Vec::with_capacity(passes));
    let observer = |p: vwf::runner::Progress<'_>| {
        if let vwf::runner::Progress::Settled { node: Some(node), .. } = p
            && node.node() == "work"
            && node.pass().is_some()
        {
            settled.lock().expect("settled").push(Instant::now());
        }
    };
    let drivers = vwf::exec::Drivers::new(vwf::config::Config::default());
    let runner = vwf::runner::Runner::new(store.as_ref(), &drivers, &vwf::clock::SystemClock, &observer);
    let items: Vec<usize> = (0..passes).collect();
    let started = Instant::now();
    let run = runner
        .start(plan, vwf_core::run::TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"items": items})))
        .map_err(|e| e.to_string())?;
    let total = started.elapsed();
    if run.status() != vwf_core::run::Status::Done {
        return Err(format!("the {passes}-pass loop ended {}: {:?}", run.status().as_str(), run.error()));
    }
    let times = settled.into_inner().expect("settled");
    let costs: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let n = costs.len().min(100);
    let mean = |d: &[Duration]| d.iter().sum::<Duration>() / (d.len().max(1) as u32);
    Ok(LoopFigures { total, first: mean(&costs[..n]), last: mean(&costs[costs.len() - n..]) })
}

/// What the instances list afterwards against what they answered.
fn account(setup: Setup, servers: &[Server], answered: &[String]) -> Vec<String> {
    let listed = list_all(servers, &format!("&design={DESIGN}"));
    let ids: HashSet<&str> = listed.iter().filter_map(|r| r["run_id"].as_str()).collect();
    let wanted: HashSet<&str> = answered.iter().map(String::as_str).collect();
    let not_done = listed.iter().filter(|r| r["status"] != "done").count();
    let mut failures = Vec::new();
    if listed.len() != answered.len() || ids != wanted || not_done > 0 {
        failures.push(format!(
            "{}: {} runs answered, {} listed ({} distinct), {} answered but not listed, {} listed but not done",
            setup.label(),
            answered.len(),
            listed.len(),
            ids.len(),
            wanted.difference(&ids).count(),
            not_done
        ));
    }
    println!("  {}: {} runs answered, {} listed, every one done: {}", setup.label(), answered.len(), listed.len(), failures.is_empty());
    failures
}

struct Phase {
    ids: Vec<String>,
    times: Vec<Duration>,
    errors: Vec<String>,
    elapsed: Duration,
}

/// `requests` runs from `clients` closed-loop clients, client `c` on instance `c % instances`.
async fn drive(urls: &Arc<[(String, String)]>, clients: usize, requests: usize) -> Phase {
    let client =
        reqwest::Client::builder().no_proxy().pool_max_idle_per_host(clients).timeout(REQUEST_TIMEOUT).build().expect("http client");
    let began = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (client, (url, token)) = (client.clone(), urls[c % urls.len()].clone());
            let mine = requests / clients + usize::from(c < requests % clients);
            tokio::spawn(async move {
                let mut phase = Phase { ids: Vec::new(), times: Vec::new(), errors: Vec::new(), elapsed: Duration::ZERO };
                for i in 0..mine {
                    let sent = Instant::now();
                    match run(&client, (&url, &token), json!({"input": {"n": (c + i) % 10, "who": format!("client {c}")}})).await {
                        Ok(id) => {
                            phase.times.push(sent.elapsed());
                            phase.ids.push(id);
                        }
                        Err(e) => phase.errors.push(e),
                    }
                }
                phase
            })
        })
        .collect();
    let mut all = Phase { ids: Vec::new(), times: Vec::new(), errors: Vec::new(), elapsed: Duration::ZERO };
    for task in tasks {
        match task.await {
            Ok(p) => {
                all.ids.extend(p.ids);
                all.times.extend(p.times);
                all.errors.extend(p.errors);
            }
            Err(e) => all.errors.push(format!("client task: {e}")),
        }
    }
    all.elapsed = began.elapsed();
    all
}

/// One run: its id when answered 200 and `done`.
async fn run(client: &reqwest::Client, (url, token): (&str, &str), body: Value) -> Result<String, String> {
    let response = client.post(url).bearer_auth(token).json(&body).send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body: Value = response.json().await.map_err(|e| format!("{status}: {e}"))?;
    match body["run_id"].as_str() {
        Some(id) if status == 200 && body["status"] == "done" => Ok(id.to_string()),
        _ => Err(format!("{status}: {}", body.to_string().chars().take(300).collect::<String>())),
    }
}

/// Where a row's CPU went per run (servers, database, the clients of this process), how many of
/// the machine's cores that kept busy at the row's rate, and the most runs a second those cores
/// allow at that CPU per run (what a setup sharing them cannot pass).
fn cpu_line(row: &Row) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!(
        "servers {:.2} ms, database {:.2} ms, clients {:.2} ms = {:.2} cores busy, at most {:.0} runs/s on {cores} cores; context switches per run: servers {:.1}, database {:.1}",
        ms(row.cpu.servers),
        ms(row.cpu.database),
        ms(row.cpu.clients),
        row.cpu.total().as_secs_f64() * row.per_second,
        cores as f64 / row.cpu.total().as_secs_f64().max(1e-9),
        row.cpu.switches.0,
        row.cpu.switches.1
    )
}

fn print_table(rows: &[Row]) {
    println!(
        "| store | clients | runs | errors | runs/s | p50 | p99 | runs/s vs file | p50 vs file | p99 vs file | statements / run | round trips / run | commits/s | waits | CPU per run |"
    );
    println!(
        "|-------|--------:|-----:|-------:|-------:|----:|----:|---------------:|------------:|------------:|-----------------:|------------------:|----------:|-------|-------------|"
    );
    for row in rows {
        let file = rows.iter().find(|r| r.setup == Setup::Files && r.clients == row.clients).unwrap_or(row);
        let ratio = |a: f64, b: f64| format!("{:.2}x", a / b.max(1e-9));
        let figure = |n: Option<f64>| n.map_or("n/a".into(), |n| format!("{n:.2}"));
        let (statements, trips, commits, waits) = row.db.as_ref().map_or_else(
            || ("".to_string(), "".to_string(), "".to_string(), "".to_string()),
            |db| (figure(db.per_run), figure(db.round_trips), format!("{:.0}", db.commits_per_second), db.waits.clone()),
        );
        println!(
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {statements} | {trips} | {commits} | {waits} | {} |",
            row.setup.label(),
            row.clients,
            row.ok,
            row.errors.len(),
            row.per_second,
            ms(row.p50),
            ms(row.p99),
            ratio(row.per_second, file.per_second),
            ratio(row.p50.as_secs_f64(), file.p50.as_secs_f64()),
            ratio(row.p99.as_secs_f64(), file.p99.as_secs_f64()),
            cpu_line(row),
        );
    }
}

/// The PostgreSQL server the setups use: `VWF_TEST_DATABASE_URL`, or a throwaway cluster.
struct Cluster {
    origin: String,
    started: Option<tempfile::TempDir>,
}

impl Cluster {
    fn up() -> Result<Cluster, String> {
        if std::env::var("VWF_TEST_DATABASE_URL").is_ok_and(|u| !u.trim().is_empty()) {
            return Ok(Cluster { origin: "VWF_TEST_DATABASE_URL".into(), started: None });
        }
        let dir = tempfile::Builder::new().prefix("vwf-pg-").tempdir().map_err(|e| format!("temp dir: {e}"))?;
        // Durable, as the file store is (it fdatasyncs what it acknowledges).
        let fsync = std::env::var("VWF_BENCH_PG_FSYNC").unwrap_or_else(|_| "on".into());
        let out = Command::new(script())
            .arg("start")
            .arg(dir.path())
            .env("VWF_PG_FSYNC", &fsync)
            .output()
            .map_err(|e| format!("cannot run scripts/postgres: {e}"))?;
        if !out.status.success() {
            return Err(format!("scripts/postgres start failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        // SAFETY: set before any other thread of this program starts.
        unsafe { std::env::set_var("VWF_TEST_DATABASE_URL", &url) };
        Ok(Cluster { origin: format!("a throwaway cluster (scripts/postgres, fsync = {fsync})"), started: Some(dir) })
    }
}

impl Drop for Cluster {
    /// Stops a cluster this program started, whatever happened.
    fn drop(&mut self) {
        if let Some(dir) = &self.started {
            let _ = Command::new(script()).arg("stop").arg(dir.path()).status();
        }
    }
}

fn script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres")
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn env_usize(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}
