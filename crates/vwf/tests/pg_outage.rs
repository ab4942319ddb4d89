//! Instances that survive the database going away: two `vwf serve` on one PostgreSQL cluster of
//! the test's own (`scripts/postgres`), eight clients starting runs on both, while the database
//! is crashed (`pg_ctl stop -m immediate`), stopped cleanly (`-m fast`) and started again, and
//! every vwf connection is terminated (`pg_terminate_backend`). Throughout, each request answers
//! in bounded time, either its run or 503 with `Retry-After`; `/readyz` says when the database
//! is away; the instances come back by themselves; and every run acknowledged is on the database,
//! done, each step run once.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::server::{Options, Server, eventually, small};
use crate::common::{self, Home};

/// Crash-restarts and clean restarts, alternating.
const ROUNDS: usize = 40;
const CLIENTS: usize = 8;
/// No request may take longer: the pool's acquire timeout (10 s) with room to spare.
const REQUEST_BOUND: Duration = Duration::from_secs(15);

/// A PostgreSQL cluster this test alone stops and starts.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::Builder::new().prefix("vwf-pg-outage").tempdir().expect("cluster dir");
        let out = script().arg("start").arg(dir.path()).output().expect("scripts/postgres start");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Cluster { dir, url }
    }

    fn act(&self, what: &str) {
        let out = script().arg(what).arg(self.dir.path()).output().expect("scripts/postgres");
        assert!(out.status.success(), "scripts/postgres {what}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Ends every connection to the database but this one.
    fn terminate_everyone(&self) -> i64 {
        use sqlx::Connection;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let mut conn = sqlx::PgConnection::connect(&self.url).await.expect("connect");
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND pid <> pg_backend_pid()) AS ended",
            )
            .fetch_one(&mut conn)
            .await
            .expect("terminate")
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script().arg("stop").arg(self.dir.path()).output();
    }
}

fn script() -> Command {
    Command::new(common::repo().join("scripts/postgres"))
}

/// What one client request got.
#[derive(Debug)]
struct Answer {
    status: u16,
    took: Duration,
    retry_after: bool,
    body: Value,
}

fn ready(server: &Server) -> u16 {
    server.bare.get(format!("{}/readyz", server.base)).timeout(REQUEST_BOUND).send().map_or(0, |r| r.status().as_u16())
}

#[test]
fn instances_ride_out_database_crashes_restarts_and_cut_connections() {
    let cluster = Cluster::start();
    let work = tempfile::tempdir().expect("work dir");
    let homes = [Home::new(), Home::new()];
    let servers: Vec<Server> = homes
        .iter()
        .enumerate()
        .map(|(i, home)| {
            let env = vec![("VWF_DATABASE_URL", cluster.url.clone())];
            Server::start_with(home, Options { env, stderr: Some(&work.path().join(format!("{i}.log"))), ..Options::default() })
        })
        .collect();
    servers[0].save("small", small());

    let stop = AtomicBool::new(false);
    let answers: Mutex<Vec<Answer>> = Mutex::new(Vec::new());
    let sent = AtomicUsize::new(0);
    let mut saw_down = [0usize; 2];
    std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            let (servers, stop, answers, sent) = (&servers, &stop, &answers, &sent);
            scope.spawn(move || {
                let mut k = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let server = &servers[(client + k as usize) % servers.len()];
                    k += 1;
                    let began = Instant::now();
                    let req =
                        server.authed(server.bare.post(server.url("/designs/small/run"))).timeout(REQUEST_BOUND + Duration::from_secs(5));
                    let answer = match req.json(&json!({"input": {"n": k % 10}})).send() {
                        Ok(r) => {
                            let status = r.status().as_u16();
                            let retry_after = r.headers().contains_key("retry-after");
                            Answer { status, took: began.elapsed(), retry_after, body: r.json().unwrap_or(Value::Null) }
                        }
                        Err(e) => Answer { status: 0, took: began.elapsed(), retry_after: false, body: json!(e.to_string()) },
                    };
                    sent.fetch_add(1, Ordering::SeqCst);
                    answers.lock().unwrap().push(answer);
                }
            });
        }
        for round in 0..ROUNDS {
            // Some load between faults.
            let before = sent.load(Ordering::SeqCst);
            eventually("requests between faults", 60, || (sent.load(Ordering::SeqCst) >= before + 2 * CLIENTS).then_some(()));
            if round % 4 == 3 {
                cluster.terminate_everyone();
            }
            cluster.act(if round % 2 == 0 { "crash" } else { "halt" });
            // While it is away, each instance says so, and requests keep being answered.
            for (i, server) in servers.iter().enumerate() {
                eventually("/readyz to say the database is away", 30, || (ready(server) == 503).then_some(()));
                saw_down[i] += 1;
            }
            let during = sent.load(Ordering::SeqCst);
            eventually("requests answered while the database is away", 60, || {
                (sent.load(Ordering::SeqCst) >= during + CLIENTS).then_some(())
            });
            cluster.act("resume");
            for server in &servers {
                eventually("/readyz to say the database is back", 60, || (ready(server) == 200).then_some(()));
            }
        }
        stop.store(true, Ordering::SeqCst);
    });

    let answers = answers.into_inner().unwrap();
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    for a in &answers {
        *by_status.entry(a.status).or_default() += 1;
    }
    eprintln!("{} requests over {ROUNDS} outages: {by_status:?}", answers.len());
    let slowest = answers.iter().map(|a| a.took).max().unwrap_or_default();
    assert!(slowest < REQUEST_BOUND, "a request took {slowest:?}");
    for a in &answers {
        match a.status {
            200 => assert_eq!(a.body["status"], "done", "{}", a.body),
            503 => {
                assert!(a.retry_after, "a 503 says when to come back: {}", a.body);
                assert_eq!(a.body["ok"], false, "{}", a.body);
            }
            _ => {
                let errors: Vec<String> = (0..servers.len())
                    .flat_map(|i| {
                        std::fs::read_to_string(work.path().join(format!("{i}.log")))
                            .unwrap_or_default()
                            .lines()
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .filter(|l| l.contains("ERROR"))
                    .take(10)
                    .collect();
                panic!("only runs and 503s while the database comes and goes; got {} {}\n{}", a.status, a.body, errors.join("\n"))
            }
        }
    }
    assert!(by_status.get(&503).is_some_and(|n| *n > 0), "the outages were seen: {by_status:?}");
    assert_eq!(saw_down, [ROUNDS, ROUNDS]);

    // Every acknowledged run is on the database, done, each step run once; no instance needed a
    // restart (both still serve), and each logged the outage once per outage at most.
    let stored = common::pg::stored_run_ids(&cluster.url);
    for a in answers.iter().filter(|a| a.status == 200) {
        let id = a.body["run_id"].as_str().expect("run_id");
        assert!(stored.contains(id), "acknowledged run {id} is not on the database");
    }
    for (i, server) in servers.iter().enumerate() {
        let (status, run) = server.post("/designs/small/run", json!({"input": {"n": 7}}));
        assert_eq!((status, run["status"].as_str()), (200, Some("done")), "instance {i} serves again: {run}");
        let sample: Vec<&str> = answers.iter().filter(|a| a.status == 200).filter_map(|a| a.body["run_id"].as_str()).take(50).collect();
        for id in sample {
            let (_, run) = server.get(&format!("/runs/{id}"));
            assert_eq!(run["status"], "done", "{run}");
            assert!(run["steps"].as_array().unwrap().iter().all(|s| s["attempts"] == 1), "{run}");
        }
        let log = std::fs::read_to_string(work.path().join(format!("{i}.log"))).unwrap_or_default();
        // Said when it goes (a database starting or stopping may flap once more), not per request.
        let said = log.matches("the database cannot be reached").count();
        assert!((1..=2 * ROUNDS).contains(&said), "instance {i} said the database was away {said} times over {ROUNDS} outages");
        assert!(!log.contains("panicked"), "instance {i} panicked:\n{log}");
    }
}

/// A page following a run on one instance while the database restarts goes on following it: its
/// long polls (begun before the crash, asked again as a page does after an error) see the gate
/// answered on the other instance right after the database is back (the change listener
/// reconnected and told its waiters to read again), not when a poll's wait runs out.
#[test]
fn a_long_poll_across_a_database_restart_sees_the_change_made_elsewhere() {
    let cluster = Cluster::start();
    let homes = [Home::new(), Home::new()];
    let servers: Vec<Server> = homes
        .iter()
        .map(|home| Server::start_with(home, Options { env: vec![("VWF_DATABASE_URL", cluster.url.clone())], ..Options::default() }))
        .collect();
    let (a, b) = (&servers[0], &servers[1]);
    a.save("gated", crate::common::server::gated());
    let id = a.run_id("gated", Value::Null);
    let (_, shown) = b.get(&format!("/runs/{id}?wait=0"));
    assert_eq!(shown["status"], "awaiting_approval", "{shown}");
    let first = shown["stamp"].as_str().expect("stamp").to_string();
    std::thread::scope(|scope| {
        // The page: polls with the stamp it has (the longest wait, 30 s), again after any answer.
        let page = scope.spawn(|| {
            let mut since = first;
            let began = Instant::now();
            while began.elapsed() < Duration::from_secs(180) {
                let (code, body) = b.get(&format!("/runs/{id}?since={since}&wait=30"));
                if code != 200 {
                    continue; // a 503 while the database is away: asked again, as the page does
                }
                if body["status"] == "done" {
                    return Some(Instant::now());
                }
                since = body["stamp"].as_str().unwrap_or_default().to_string();
            }
            None
        });
        cluster.act("crash");
        eventually("instance A to see the database away", 30, || (ready(a) == 503).then_some(()));
        cluster.act("resume");
        eventually("instance A to see the database back", 60, || (ready(a) == 200).then_some(()));
        let (code, answered) = a.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "send"}));
        assert_eq!((code, answered["status"].as_str()), (200, Some("done")), "{answered}");
        let at = Instant::now();
        let seen = page.join().expect("page").expect("the page saw the run done");
        let late = seen.saturating_duration_since(at);
        assert!(late < Duration::from_secs(20), "the page saw the change {late:?} after it was made: its poll waited out");
    });
}
