//! What the database did during one measured phase, from its own counters: statements (from
//! `pg_stat_statements`, when the server loads it), commits (`pg_stat_database`) and what its busy
//! sessions waited on (`pg_stat_activity`, sampled); the round trips the `vwf` processes made to
//! it, from the kernel's TCP counters (`ss`: the data segments each `vwf` socket connected to the
//! database's port sent, one per request, so statements and the pool's connection checks alike);
//! and where the machine's CPU went, from `/proc`: the CPU time of every `vwf` process and of
//! every PostgreSQL process, per run.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::{Connection, PgConnection};

/// How often the sessions are sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// How long after a phase the counters are read: a backend publishes its counts at most once a
/// second.
const SETTLE: Duration = Duration::from_millis(1500);
/// Statements of the bench itself, left out of the counts.
const OWN: &str = "%pg_stat%";

pub struct DbFigures {
    /// Statements per answered run; `None` when the server has no `pg_stat_statements`.
    pub per_run: Option<f64>,
    /// Round trips from `vwf` to the database per answered run; `None` without `ss`.
    pub round_trips: Option<f64>,
    pub commits_per_second: f64,
    /// The busiest wait events, as "event share%" separated by commas.
    pub waits: String,
    /// Per run, the statements (calls per run, the statement's text cut short), most called first.
    pub statements: Vec<(f64, String)>,
    /// CPU time per run of the `vwf` processes and of the PostgreSQL processes.
    pub cpu: (Duration, Duration),
}

impl DbFigures {
    pub fn line(&self) -> String {
        let per_run = self.per_run.map_or("n/a (no pg_stat_statements)".into(), |n| format!("{n:.2}"));
        let trips = self.round_trips.map_or("n/a (no ss)".into(), |n| format!("{n:.2}"));
        format!(
            "{per_run} statements / run, {trips} round trips / run, {:.0} commits/s, CPU per run: vwf {:.2} ms, PostgreSQL {:.2} ms, busy sessions: {}",
            self.commits_per_second,
            self.cpu.0.as_secs_f64() * 1e3,
            self.cpu.1.as_secs_f64() * 1e3,
            self.waits
        )
    }
}

/// A phase being watched: the counters before it, and the sampler.
pub struct Watch {
    conn: PgConnection,
    database: String,
    statements: bool,
    commits: i64,
    cpu: (Duration, Duration),
    sent: Option<u64>,
    running: Arc<AtomicBool>,
    sampler: tokio::task::JoinHandle<HashMap<String, usize>>,
}

async fn connect() -> PgConnection {
    let url = std::env::var("VWF_TEST_DATABASE_URL").expect("the cluster's URL");
    PgConnection::connect(&url).await.expect("connect to the cluster")
}

impl Watch {
    /// Starts watching database `database` (on the cluster of `VWF_TEST_DATABASE_URL`).
    pub async fn start(database: &str) -> Watch {
        let mut conn = connect().await;
        let statements = sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").execute(&mut conn).await.is_ok()
            && sqlx::query("SELECT pg_stat_statements_reset()").execute(&mut conn).await.is_ok();
        tokio::time::sleep(SETTLE).await;
        let commits = commits(&mut conn, database).await;
        let running = Arc::new(AtomicBool::new(true));
        let sampler = tokio::spawn(sample(database.to_string(), running.clone()));
        Watch {
            conn,
            database: database.to_string(),
            statements,
            commits,
            cpu: process_figures().0,
            sent: vwf_requests(),
            running,
            sampler,
        }
    }

    /// Stops the watch after a phase that answered `runs` runs in `elapsed`; `list`: also the
    /// statements one by one.
    pub async fn stop(mut self, runs: usize, elapsed: Duration, list: bool) -> DbFigures {
        let cpu = process_figures().0;
        let sent = vwf_requests();
        self.running.store(false, Ordering::SeqCst);
        let waits = self.sampler.await.unwrap_or_default();
        tokio::time::sleep(SETTLE).await;
        let committed = commits(&mut self.conn, &self.database).await - self.commits;
        let runs = runs.max(1) as f64;
        let mut rows: Vec<(i64, String)> = Vec::new();
        if self.statements {
            rows = sqlx::query_as(
                "SELECT calls, query FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) AND query NOT LIKE $2 ORDER BY calls DESC",
            )
            .bind(&self.database)
            .bind(OWN)
            .fetch_all(&mut self.conn)
            .await
            .unwrap_or_default();
        }
        let total: i64 = rows.iter().map(|(calls, _)| calls).sum();
        let statements = match list {
            true => rows
                .iter()
                .take(8)
                .map(|(calls, query)| {
                    let text: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
                    (*calls as f64 / runs, text.chars().take(110).collect())
                })
                .collect(),
            false => Vec::new(),
        };
        DbFigures {
            per_run: self.statements.then(|| total as f64 / runs),
            round_trips: sent.zip(self.sent).map(|(after, before)| after.saturating_sub(before) as f64 / runs),
            commits_per_second: committed as f64 / elapsed.as_secs_f64().max(1e-9),
            waits: shares(&waits),
            statements,
            cpu: (cpu.0.saturating_sub(self.cpu.0).div_f64(runs), cpu.1.saturating_sub(self.cpu.1).div_f64(runs)),
        }
    }
}

/// The CPU time (user and system) so far of the servers, the database and this process (the
/// clients), to tell where a phase's CPU went; and how often the servers' and the database's
/// threads were switched off a core (the kernel's count per thread, summed): a thread that waits
/// for a socket or another thread is switched off and on again, so switches per run tell the
/// handoffs a run costs.
#[derive(Clone, Copy, Default)]
pub struct CpuTimes {
    pub servers: Duration,
    pub database: Duration,
    pub clients: Duration,
    /// Context switches of the servers' and the database's threads (per run, after `per_run_since`).
    pub switches: (f64, f64),
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let ((servers, database), switches) = process_figures();
        CpuTimes { servers, database, clients: own_cpu(), switches }
    }

    /// What was spent since `before`, per run of `runs`.
    pub fn per_run_since(&self, before: &CpuTimes, runs: usize) -> CpuTimes {
        let per = |now: Duration, then: Duration| now.saturating_sub(then).div_f64(runs.max(1) as f64);
        let each = |now: f64, then: f64| (now - then).max(0.0) / runs.max(1) as f64;
        CpuTimes {
            servers: per(self.servers, before.servers),
            database: per(self.database, before.database),
            clients: per(self.clients, before.clients),
            switches: (each(self.switches.0, before.switches.0), each(self.switches.1, before.switches.1)),
        }
    }

    pub fn total(&self) -> Duration {
        self.servers + self.database + self.clients
    }
}

/// This process's CPU time (user and system), from `/proc/self/stat`.
fn own_cpu() -> Duration {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let used: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum());
    Duration::from_secs_f64(used as f64 / ticks)
}

/// The CPU time (user and system) so far of the processes named `vwf` and of those named
/// `postgres`, and the context switches (voluntary and not) of their threads, from
/// `/proc/PID/stat` and `/proc/PID/task/TID/status`. Both kinds live through a phase (the servers,
/// the database's sessions), so the difference over a phase is what they spent in it; a thread
/// that ended during a phase takes its switches with it, so that count is a floor.
fn process_figures() -> ((Duration, Duration), (f64, f64)) {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let (mut cpu, mut switches) = ([0u64; 2], [0u64; 2]);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid …: fields after the name, utime and stime are the 12th and 13th.
        let Some((head, rest)) = stat.rsplit_once(") ") else { continue };
        let kind = match head.split_once(" (").map_or("", |(_, n)| n) {
            "vwf" => 0,
            "postgres" => 1,
            _ => continue,
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        cpu[kind] += fields.get(11..13).map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum());
        for task in std::fs::read_dir(entry.path().join("task")).into_iter().flatten().flatten() {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            switches[kind] += status
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    let seconds = |t: u64| Duration::from_secs_f64(t as f64 / ticks);
    ((seconds(cpu[0]), seconds(cpu[1])), (switches[0] as f64, switches[1] as f64))
}

/// The data segments sent so far by the `vwf` processes' open connections to the database's port
/// (the kernel's count, `ss -tinp`): a request to the database is one segment (sqlx writes a
/// statement's messages, or a connection check, at once), so the difference over a phase is the
/// round trips made in it. `None` when `ss` cannot be run or the port is not known.
fn vwf_requests() -> Option<u64> {
    let url = std::env::var("VWF_TEST_DATABASE_URL").ok()?;
    let port: u16 = url.rsplit_once(':')?.1.split('/').next()?.parse().ok()?;
    let out = std::process::Command::new("ss").args(["-tinpH", "state", "established", &format!("( dport = :{port} )")]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    // A socket is a line naming its process, then a line of its counters.
    let (mut sent, mut ours) = (0u64, false);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.contains("users:(") {
            ours = line.contains("((\"vwf\"");
        } else if ours {
            let segments = line.split_whitespace().find_map(|f| f.strip_prefix("data_segs_out:")).and_then(|n| n.parse::<u64>().ok());
            sent += segments.unwrap_or_default();
        }
    }
    Some(sent)
}

async fn commits(conn: &mut PgConnection, database: &str) -> i64 {
    sqlx::query_scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = $1")
        .bind(database)
        .fetch_one(conn)
        .await
        .unwrap_or_default()
}

/// Counts, until told to stop, what the database's active sessions wait on at each sample.
async fn sample(database: String, running: Arc<AtomicBool>) -> HashMap<String, usize> {
    let mut conn = connect().await;
    let mut seen: HashMap<String, usize> = HashMap::new();
    while running.load(Ordering::SeqCst) {
        let events: Vec<String> = sqlx::query_scalar(
            "SELECT COALESCE(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity \
             WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()",
        )
        .bind(&database)
        .fetch_all(&mut conn)
        .await
        .unwrap_or_default();
        for event in events {
            *seen.entry(event).or_default() += 1;
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    }
    seen
}

/// The four most seen events with their share of all samples.
fn shares(seen: &HashMap<String, usize>) -> String {
    let total: usize = seen.values().sum();
    if total == 0 {
        return "none active".into();
    }
    let mut events: Vec<_> = seen.iter().collect();
    events.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    events.iter().take(4).map(|(event, n)| format!("{event} {:.0}%", **n as f64 * 100.0 / total as f64)).collect::<Vec<_>>().join(", ")
}
