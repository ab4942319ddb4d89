//! Phases 2 to 5, the load: the design saved through the API, then `POST …/run` from one client
//! and from each client count, `GET /runs`, and `GET /runs/{id}` of every run created; each
//! phase's figures with the server's memory and CPU time, and the rows the targets name.
//!
//! Every run a `POST` answered `done` is kept for the accounting ([`crate::accounting`]), the
//! warm-up's included.

use std::fs;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::accounting::{Accounting, account};
use crate::clients::{drive, drive_ids};
use crate::figures::{Stats, ms, ratio, secs};
use crate::process::Server;
use crate::{DESIGN, ERRORS_SHOWN, Knobs, LIST_LIMIT, REQUEST_TIMEOUT, WARMUP, rows};

/// Which baseline a phase is compared with, and how.
#[derive(Clone, Copy)]
pub(super) enum Compare {
    /// Sequential requests: latency against latency.
    Latency(Base),
    /// Concurrent requests: time per request (1 / throughput) against the baseline's mean.
    Throughput(Base),
    None,
}

#[derive(Clone, Copy)]
pub(super) enum Base {
    Run,
    List,
}

pub(super) struct Phase {
    pub(super) label: String,
    /// `POST …/run` phases: how many clients sent them.
    run_clients: Option<usize>,
    /// The server's resident memory right after the phase.
    pub(super) memory: Option<Memory>,
    /// The CPU time (user and system) the server used during the phase, when measured.
    server_cpu: Option<Duration>,
    pub(super) stats: Stats,
    wall: Duration,
    pub(super) errors: usize,
    pub(super) examples: Vec<String>,
    pub(super) compare: Compare,
}

impl Phase {
    pub(super) fn throughput(&self) -> f64 {
        self.stats.n as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// What the requests of a phase answered: one entry per request.
pub(super) struct Answers {
    pub(super) times: Vec<Duration>,
    pub(super) wall: Duration,
    pub(super) errors: Vec<String>,
    /// Run ids answered by `POST …/run` with `status: done`.
    pub(super) run_ids: Vec<String>,
}

/// What a load phase sends (and so which answer it expects).
#[derive(Clone, Copy)]
pub(super) enum Request {
    /// `POST /designs/{name}/run`: a `done` run.
    Run,
    /// `GET /runs?limit=LIST_LIMIT`: that many readable, `done` runs.
    List,
}

pub(super) fn load(server: &Server, graph: &Value, knobs: &Knobs) -> Result<(Vec<Phase>, Accounting), String> {
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
pub(super) struct Memory {
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
pub(super) fn summary_rows(phases: &[Phase], no_lost_run: bool) -> Vec<rows::Row> {
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
