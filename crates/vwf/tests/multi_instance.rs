//! Several `vwf serve` on one PostgreSQL database (the throwaway cluster of `scripts/postgres`),
//! each with its own home as if on its own machine, driven over real sockets: runs started
//! round-robin are each stored and listed once; racing answers to one gate on two instances give
//! one winner; an instance killed (-9) mid-step loses no run and re-runs no finished step; a
//! schedule fires once per minute however many instances (and `vwf schedule tick`s) see it due.
//! Waiting is always a bounded poll of a real process's state.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Barrier;

use common::Home;
use common::server::{Options, Server, eventually, gated, list_all, small};
use serde_json::{Value, json};

const INSTANCES: usize = 3;

/// Three instances on one fresh database; standard error of each goes to a file in `work`.
struct Cluster {
    url: String,
    work: tempfile::TempDir,
    homes: Vec<Home>,
    servers: Vec<Server>,
}

impl Cluster {
    fn start() -> Cluster {
        Cluster::start_with(common::pg::fresh_database(), Vec::new())
    }

    fn start_with(url: String, env: Vec<(&'static str, String)>) -> Cluster {
        let work = tempfile::tempdir().expect("work dir");
        let homes: Vec<Home> = (0..INSTANCES).map(|_| Home::new()).collect();
        let servers = std::thread::scope(|scope| {
            let starting: Vec<_> = (0..INSTANCES)
                .map(|i| {
                    let (home, url, env, log) = (&homes[i], url.clone(), env.clone(), work.path().join(format!("{i}.log")));
                    scope.spawn(move || start_instance(home, &url, env, &log))
                })
                .collect();
            starting.into_iter().map(|s| s.join().expect("start thread")).collect()
        });
        Cluster { url, work, homes, servers }
    }

    /// Kills instance `i` with SIGKILL and starts it again on the same home (logging to a new
    /// file: `log` reads what the first start said).
    fn kill_and_restart(&mut self, i: usize, round: usize) {
        let server = &mut self.servers[i];
        server.child.kill().expect("kill -9");
        server.child.wait().expect("wait for the killed instance");
        let log = self.work.path().join(format!("{i}-restart-{round}.log"));
        self.servers[i] = start_instance(&self.homes[i], &self.url, Vec::new(), &log);
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.work.path().join(format!("{i}.log"))).unwrap_or_default()
    }
}

fn start_instance(home: &Home, url: &str, mut env: Vec<(&str, String)>, log: &Path) -> Server {
    env.push(("VWF_DATABASE_URL", url.to_string()));
    Server::start_with(home, Options { env, stderr: Some(log), ..Options::default() })
}

/// 2,000 runs started round-robin over three instances from six client threads: every
/// acknowledged run is listed exactly once (pages asked of every instance), `done`, and is a row
/// of the database; nothing else is.
#[test]
fn runs_started_round_robin_are_each_stored_listed_once_and_finished() {
    const RUNS: usize = 2000;
    const CLIENTS: usize = 6;
    let cluster = Cluster::start();
    cluster.servers[0].save("small", small());
    let acknowledged: Vec<String> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let servers = &cluster.servers;
                scope.spawn(move || {
                    (c..RUNS)
                        .step_by(CLIENTS)
                        .map(|i| {
                            let (status, run) = servers[i % INSTANCES].post("/designs/small/run", json!({"input": {"n": i % 10}}));
                            assert_eq!((status, &run["status"]), (200, &json!("done")), "run {i}: {run}");
                            run["run_id"].as_str().expect("run id").to_string()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients.into_iter().flat_map(|c| c.join().expect("client")).collect()
    });
    let unique: BTreeSet<&String> = acknowledged.iter().collect();
    assert_eq!(unique.len(), RUNS, "every acknowledged run has its own id");

    let listed = list_all(&cluster.servers, "");
    let mut seen = BTreeMap::new();
    for run in &listed {
        *seen.entry(run["run_id"].as_str().expect("run id").to_string()).or_insert(0) += 1;
        assert_eq!(run["status"], "done", "{run}");
    }
    assert_eq!(listed.len(), RUNS, "listed once each");
    assert!(seen.values().all(|n| *n == 1), "a run listed twice");
    assert_eq!(seen.keys().collect::<BTreeSet<_>>(), unique, "the listing is the acknowledged runs");

    let rows: Vec<(String, String)> = query(&cluster.url, "SELECT id, doc FROM vwf_runs WHERE doc IS NOT NULL ORDER BY seq DESC");
    assert_eq!(rows.len(), RUNS, "one row per run");
    let ids: Vec<&str> = listed.iter().map(|r| r["run_id"].as_str().unwrap_or_default()).collect();
    assert!(ids.iter().eq(rows.iter().map(|(id, _)| id)), "the pages are the database's newest first order");
    for (id, doc) in rows {
        assert!(unique.contains(&id), "a row no client was answered: {id}");
        let doc: Value = serde_json::from_str(&doc).expect("the row is JSON");
        assert_eq!(doc["status"], "done", "{id}");
    }
}

/// Rows of a query on the database, as text pairs.
fn query(url: &str, sql: &'static str) -> Vec<(String, String)> {
    use sqlx::{Connection, Row};
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(async {
        let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
        let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect("query");
        rows.iter().map(|r| (r.get::<String, _>(0), r.get::<String, _>(1))).collect()
    })
}

/// Starts 1,000 runs of `design`, each with a gate answered twice at once through two different
/// instances (four pairs in flight at a time): `bodies(i)` are the two answers of pair `i`, and
/// `check(i, instances, answers, run)` sees each answer with its status and the run as the second
/// instance reads it afterwards.
fn race_pairs(
    cluster: &Cluster,
    design: &str,
    bodies: impl Fn(usize) -> [Value; 2] + Sync,
    check: impl Fn(usize, (usize, usize), &[(u16, Value)], &Value) + Sync,
) {
    const PAIRS: usize = 1000;
    const LANES: usize = 4;
    std::thread::scope(|scope| {
        for lane in 0..LANES {
            let (servers, bodies, check) = (&cluster.servers, &bodies, &check);
            scope.spawn(move || {
                for i in (lane..PAIRS).step_by(LANES) {
                    let (a, b) = (i % INSTANCES, (i + 1 + i / INSTANCES % 2) % INSTANCES);
                    let id = servers[a].run_id(design, Value::Null);
                    let start = Barrier::new(2);
                    let answers: Vec<(u16, Value)> = std::thread::scope(|race| {
                        let racers: Vec<_> = [a, b]
                            .into_iter()
                            .zip(bodies(i))
                            .map(|(at, body)| {
                                let (server, id, start) = (&servers[at], &id, &start);
                                race.spawn(move || {
                                    start.wait();
                                    let (status, got) = server.post(&format!("/runs/{id}/respond"), body.clone());
                                    assert!(status == 200 || status == 409, "{status}: {got}");
                                    (status, body)
                                })
                            })
                            .collect();
                        racers.into_iter().map(|r| r.join().expect("racer")).collect()
                    });
                    let (_, run) = servers[b].get(&format!("/runs/{id}"));
                    check(i, (a, b), &answers, &run);
                }
            });
        }
    });
}

/// 1,000 gates, each answered twice at once through two different instances (four pairs in
/// flight at a time): exactly one 200 and one 409 each time, and the run took the winner's answer.
#[test]
fn two_answers_on_two_instances_have_exactly_one_winner() {
    let cluster = Cluster::start();
    cluster.servers[0].save("gated", gated());
    let answer = |a: &str| json!({"node": "gate", "answer": a});
    race_pairs(
        &cluster,
        "gated",
        |_| [answer("send"), answer("skip")],
        |i, (a, b), answers, run| {
            let winners: Vec<&Value> = answers.iter().filter(|(s, _)| *s == 200).map(|(_, body)| &body["answer"]).collect();
            assert_eq!(winners.len(), 1, "pair {i} on instances {a} and {b}: {answers:?}");
            assert_eq!(run["status"], "done", "{run}");
            let sent = run["outputs"]["out"]["text"] == "sent";
            assert_eq!(sent, *winners[0] == "send", "pair {i}: the run took the winner's answer: {run}");
        },
    );
}

/// A gate two people must approve, where `skip` ends it at once.
fn quorum() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "gate", "type": "approval", "question": "Send it?", "options": ["send", "skip"],
         "approvers": {"required": 2, "veto": ["skip"]}},
        {"id": "out", "type": "output", "template": "sent"}
    ], "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "send"}]})
}

/// 1,000 gates needing two people, each given two answers at once through two different instances
/// (four pairs in flight): two people approving both count and decide it; one person twice counts
/// once (one 200, one 409, the gate still waiting with one answer); an approval racing a veto
/// always ends in the veto, with every 200 counted. The answers kept always match the 200s.
#[test]
fn racing_answers_to_a_gate_needing_two_people_count_consistently_across_instances() {
    let cluster = Cluster::start();
    cluster.servers[0].save("quorum", quorum());
    let vote = |by: &str, answer: &str| json!({"node": "gate", "answer": answer, "by": by});
    race_pairs(
        &cluster,
        "quorum",
        |i| match i % 3 {
            0 => [vote("ann", "send"), vote("bo", "send")],
            1 => [vote("ann", "send"), vote("ann", "send")],
            _ => [vote("ann", "send"), vote("bo", "skip")],
        },
        |i, (a, b), answers, run| {
            let pair = |v: &Value| (v["by"].as_str().unwrap_or_default().to_string(), v["answer"].as_str().unwrap_or_default().to_string());
            let mut ok: Vec<(String, String)> = answers.iter().filter(|(s, _)| *s == 200).map(|(_, body)| pair(body)).collect();
            let mut kept: Vec<(String, String)> = match run["status"].as_str() {
                Some("awaiting_approval") => &run["pending"]["votes"],
                _ => &run["outputs"]["gate"]["approvers"],
            }
            .as_array()
            .unwrap_or_else(|| panic!("pair {i}: no answers kept: {run}"))
            .iter()
            .map(pair)
            .collect();
            kept.sort();
            ok.sort();
            assert_eq!(kept, ok, "pair {i} on instances {a} and {b}: the answers kept are the 200s: {answers:?} {run}");
            match i % 3 {
                0 => {
                    assert_eq!(ok.len(), 2, "pair {i}: {answers:?}");
                    assert_eq!((run["status"].as_str(), run["outputs"]["out"]["text"].as_str()), (Some("done"), Some("sent")), "{run}");
                }
                1 => {
                    assert_eq!(ok.len(), 1, "pair {i}: one person counts once: {answers:?}");
                    assert_eq!(run["status"], "awaiting_approval", "{run}");
                }
                _ => {
                    assert!(!ok.is_empty(), "pair {i}: {answers:?}");
                    assert_eq!(
                        (run["status"].as_str(), run["outputs"]["gate"]["answer"].as_str()),
                        (Some("done"), Some("skip")),
                        "the veto wins: {run}"
                    );
                    assert!(run["outputs"].get("out").is_none(), "{run}");
                }
            }
        },
    );
}

/// 500 runs waiting for an event that names them (`wait_event` matching their own `k`), started
/// round-robin; then each one's event posted twice at once to two different instances, from four
/// lanes in flight: every run is answered exactly once (named by one of the two answers, never
/// both), and ends `done` with the payload it matched, its wait done in one attempt.
#[test]
fn every_run_waiting_for_an_event_is_answered_exactly_once_across_instances() {
    const RUNS: usize = 500;
    const LANES: usize = 4;
    let cluster = Cluster::start();
    cluster.servers[0].save(
        "awaits",
        json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"},
                         {"id": "hear", "type": "wait_event", "event": "ping", "match": "event.payload.k == {{trigger.k}}"},
                         {"id": "out", "type": "output", "template": "heard {{nodes.hear.payload.k}}"}],
               "edges": [{"from": "start", "to": "hear"}, {"from": "hear", "to": "out"}]}),
    );
    let ids: Vec<String> = (0..RUNS).map(|k| cluster.servers[k % INSTANCES].run_id("awaits", json!({"k": k}))).collect();
    let answered: Vec<(usize, Vec<String>)> = std::thread::scope(|scope| {
        let lanes: Vec<_> = (0..LANES)
            .map(|lane| {
                let servers = &cluster.servers;
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for k in (lane..RUNS).step_by(LANES) {
                        let (a, b) = (k % INSTANCES, (k + 1) % INSTANCES);
                        let start = Barrier::new(2);
                        let named: Vec<String> = std::thread::scope(|pair| {
                            let posts: Vec<_> = [a, b]
                                .into_iter()
                                .map(|at| {
                                    let (server, start) = (&servers[at], &start);
                                    pair.spawn(move || {
                                        start.wait();
                                        let (status, body) = server.post("/events/ping", json!({"payload": {"k": k}}));
                                        assert_eq!(status, 200, "{body}");
                                        body["resumed"]
                                            .as_array()
                                            .expect("resumed")
                                            .iter()
                                            .map(|v| v.as_str().expect("id").to_string())
                                            .collect::<Vec<_>>()
                                    })
                                })
                                .collect();
                            posts.into_iter().flat_map(|p| p.join().expect("post")).collect()
                        });
                        out.push((k, named));
                    }
                    out
                })
            })
            .collect();
        lanes.into_iter().flat_map(|l| l.join().expect("lane")).collect()
    });
    for (k, named) in &answered {
        assert_eq!(named, &vec![ids[*k].clone()], "event k={k} answered its run exactly once");
    }
    for (k, id) in ids.iter().enumerate() {
        let (status, run) = cluster.servers[(k + 2) % INSTANCES].get(&format!("/runs/{id}"));
        assert_eq!(status, 200, "{run}");
        assert_eq!(run["status"], "done", "{run}");
        assert_eq!(run["outputs"]["out"]["text"], format!("heard {k}"));
        assert_eq!(run["steps"][0]["attempts"], 1, "{run}");
    }
    assert_eq!(query(&cluster.url, "SELECT event, run_id FROM vwf_event_waiters"), Vec::<(String, String)>::new(), "no note is left");
}

/// 500 parents started round-robin, each with a design step whose child waits for the event that
/// names its `k`; each event posted once, round-robin, from four lanes: every child is answered
/// once and tells its parent, whichever instance holds it, which ends `done` with the child's
/// output, exactly one child each.
#[test]
fn parents_whose_children_wait_for_events_each_end_once_across_instances() {
    const PARENTS: usize = 500;
    const LANES: usize = 4;
    let cluster = Cluster::start();
    cluster.servers[0].save(
        "hears",
        json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"},
                         {"id": "hear", "type": "wait_event", "event": "ping", "match": "event.payload.k == {{trigger.k}}"}],
               "edges": [{"from": "t", "to": "hear"}]}),
    );
    cluster.servers[0].save(
        "asks",
        json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"},
                         {"id": "sub", "type": "design", "design": "hears", "input": {"k": "{{trigger.k}}"}},
                         {"id": "out", "type": "output", "template": "parent heard {{nodes.sub.outputs.hear.payload.k}}"}],
               "edges": [{"from": "start", "to": "sub"}, {"from": "sub", "to": "out"}]}),
    );
    let ids: Vec<String> = (0..PARENTS)
        .map(|k| {
            let (status, body) = cluster.servers[k % INSTANCES].post("/designs/asks/run", json!({"input": {"k": k}}));
            assert_eq!((status, body["status"].as_str()), (200, Some("awaiting_child")), "{body}");
            body["run_id"].as_str().expect("id").to_string()
        })
        .collect();
    std::thread::scope(|scope| {
        for lane in 0..LANES {
            let servers = &cluster.servers;
            scope.spawn(move || {
                for k in (lane..PARENTS).step_by(LANES) {
                    let (status, body) = servers[(k + 1) % INSTANCES].post("/events/ping", json!({"payload": {"k": k}}));
                    assert_eq!(status, 200, "{body}");
                    assert_eq!(body["resumed"].as_array().map(Vec::len), Some(1), "event k={k}: {body}");
                }
            });
        }
    });
    let docs: Vec<Value> = query(&cluster.url, "SELECT id, doc FROM vwf_runs WHERE doc IS NOT NULL")
        .into_iter()
        .map(|(_, doc)| serde_json::from_str(&doc).expect("a row is JSON"))
        .collect();
    let children: Vec<&Value> = docs.iter().filter(|d| d["design"] == "hears").collect();
    assert_eq!(children.len(), PARENTS, "one child per parent");
    for (k, id) in ids.iter().enumerate() {
        let run = eventually("the parent to end", 30, || {
            let (status, run) = cluster.servers[(k + 2) % INSTANCES].get(&format!("/runs/{id}"));
            assert_eq!(status, 200, "{id} is lost: {run}");
            (run["status"] != "awaiting_child").then_some(run)
        });
        assert_eq!(run["status"], "done", "{run}");
        assert_eq!(run["outputs"]["out"]["text"], format!("parent heard {k}"));
        let child = run["child_runs"].as_array().expect("child_runs");
        assert_eq!(child.len(), 1, "{run}");
        assert!(children.iter().any(|c| c["run_id"] == child[0] && c["parent_run"] == id.as_str() && c["status"] == "done"), "{run}");
    }
}

/// Three command steps, each appending `<k> <node>` to `log`; the middle one takes a moment, so
/// runs are in flight when an instance is killed.
fn counted(log: &Path) -> Value {
    let append = |node: &str| format!("echo {{{{trigger.k}}}} {node} >> '{}'", log.display());
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "a", "type": "command", "run": append("a")},
        {"id": "b", "type": "command", "run": format!("{}; sleep 0.3", append("b"))},
        {"id": "c", "type": "command", "run": append("c")},
        {"id": "out", "type": "output", "template": "{{trigger.k}}"}
    ], "edges": [{"from": "start", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "out"}]})
}

/// How many times each `(k, node)` line is in the log.
fn appended(log: &Path) -> HashMap<(usize, String), usize> {
    let mut counts = HashMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let mut words = line.split_whitespace();
        let k = words.next().and_then(|k| k.trim_matches('\'').parse().ok()).unwrap_or_else(|| panic!("line {line:?}"));
        *counts.entry((k, words.next().unwrap_or_default().to_string())).or_insert(0) += 1;
    }
    counts
}

/// 50 times: two runs with command steps started on each instance, one instance killed (-9)
/// once its runs are in flight, and started again. Every run is then `done`, or found
/// interrupted from any instance and retried to `done` on another; no run is lost; no finished
/// step ran twice (only the step named interrupted may have appended its line twice).
#[test]
fn an_instance_killed_mid_step_loses_no_run_and_reruns_no_finished_step() {
    const ROUNDS: usize = 50;
    const PER_INSTANCE: usize = 2;
    let mut cluster = Cluster::start();
    let log = cluster.work.path().join("steps.log");
    cluster.servers[0].save("counted", counted(&log));
    let (mut interrupted, mut started) = (0, 0);
    for round in 0..ROUNDS {
        let victim = round % INSTANCES;
        let mut runs = Vec::new();
        for j in 0..INSTANCES * PER_INSTANCE {
            let (at, k) = (j % INSTANCES, started);
            started += 1;
            let (status, body) = cluster.servers[at].post("/designs/counted/run", json!({"input": {"k": k}, "wait": false}));
            assert_eq!(status, 200, "{body}");
            runs.push((k, at, body["run_id"].as_str().expect("run id").to_string()));
        }
        let victims: Vec<usize> = runs.iter().filter(|(_, at, _)| *at == victim).map(|(k, _, _)| *k).collect();
        eventually("a run of the victim to be in flight", 30, || {
            let counts = appended(&log);
            victims.iter().any(|k| counts.contains_key(&(*k, "a".to_string()))).then_some(())
        });
        cluster.kill_and_restart(victim, round);
        for (n, (k, _, id)) in runs.iter().enumerate() {
            let reader = &cluster.servers[(victim + 1 + n) % INSTANCES];
            let run = eventually("the run to settle", 60, || {
                let (status, run) = reader.get(&format!("/runs/{id}"));
                assert_eq!(status, 200, "round {round}: run {k} ({id}) is lost: {run}");
                (run["status"] == "done" || run["status"] == "failed").then_some(run)
            });
            let mut twice_allowed = None;
            if run["status"] == "failed" {
                let error = run["error"].as_str().unwrap_or_default();
                let step = error.strip_prefix("interrupted during step ").unwrap_or_else(|| panic!("round {round}: {run}"));
                twice_allowed = Some(step.to_string());
                interrupted += 1;
                let retrier = &cluster.servers[(victim + 2 + n) % INSTANCES];
                let (status, retried) = retrier.post_empty(&format!("/runs/{id}/retry"));
                assert_eq!((status, &retried["status"]), (200, &json!("done")), "round {round}: {retried}");
            }
            let counts = appended(&log);
            for node in ["a", "b", "c"] {
                let times = counts.get(&(*k, node.to_string())).copied().unwrap_or(0);
                let most = if twice_allowed.as_deref() == Some(node) { 2 } else { 1 };
                assert!((1..=most).contains(&times), "round {round}: run {k} ({id}) ran {node} {times} times; {run}");
            }
        }
    }
    // Nothing else ran, and every run is listed once.
    let listed = list_all(&cluster.servers, "&design=counted");
    assert_eq!(listed.len(), started, "every run listed once");
    assert!(listed.iter().all(|r| r["status"] == "done"), "every run ends done");
    assert!(interrupted > 0, "no kill caught a run in flight");
    eprintln!("{ROUNDS} kills, {started} runs, {interrupted} found interrupted and retried");
}

/// 200 runs that fail, started round-robin over three instances without waiting, one instance
/// killed and started again after every 40 while runs are in flight: every failed run starts
/// exactly one run of its `on_failure` design, whichever instance fails it (the one running it,
/// or one that finds it interrupted), the two runs name each other, and no other run of that
/// design exists.
#[test]
fn every_failed_run_starts_exactly_one_failure_run_across_instances() {
    const RUNS: usize = 200;
    const BATCH: usize = 40;
    let mut cluster = Cluster::start();
    let manual = json!({"id": "start", "type": "trigger", "mode": "manual"});
    cluster.servers[0].save(
        "ticket",
        json!({"nodes": [manual, {"id": "open", "type": "output", "template": "{{trigger.run_id}}"}], "edges": [{"from": "start", "to": "open"}]}),
    );
    cluster.servers[0].save(
        "fails",
        json!({"on_failure": "ticket", "nodes": [manual, {"id": "s", "type": "command", "run": "sleep 0.05; exit 3"}], "edges": [{"from": "start", "to": "s"}]}),
    );
    let mut ids = Vec::new();
    for batch in 0..RUNS / BATCH {
        for j in 0..BATCH {
            let (status, body) = cluster.servers[j % INSTANCES].post("/designs/fails/run", json!({"wait": false}));
            assert_eq!(status, 200, "{body}");
            ids.push(body["run_id"].as_str().expect("run id").to_string());
        }
        cluster.kill_and_restart(batch % INSTANCES, batch);
    }
    let mut interrupted = 0;
    for (n, id) in ids.iter().enumerate() {
        let reader = &cluster.servers[n % INSTANCES];
        let run = eventually("the run to fail and name its failure run", 60, || {
            let (status, run) = reader.get(&format!("/runs/{id}"));
            assert_eq!(status, 200, "{id} is lost: {run}");
            (run["status"] == "failed" && run["failure_run"].is_string()).then_some(run)
        });
        interrupted += usize::from(run["error"].as_str().is_some_and(|e| e.starts_with("interrupted")));
    }
    let failed: BTreeMap<String, String> = ids.iter().map(|id| (id.clone(), String::new())).collect();
    let docs: Vec<Value> = eventually("every failure run to end", 60, || {
        let docs: Vec<Value> = query(&cluster.url, "SELECT id, doc FROM vwf_runs WHERE doc IS NOT NULL")
            .into_iter()
            .map(|(_, doc)| serde_json::from_str(&doc).expect("a row is JSON"))
            .collect();
        let ended = |d: &&Value| d["status"] == "done" || d["status"] == "failed";
        docs.iter().filter(|d| d["design"] == "ticket").all(|d| ended(&d)).then_some(docs)
    });
    let failures: Vec<&Value> = docs.iter().filter(|d| d["design"] == "ticket").collect();
    assert_eq!(failures.len(), RUNS, "one failure run per failed run");
    let mut of: BTreeMap<String, String> = BTreeMap::new();
    for f in &failures {
        assert_eq!(f["trigger"]["mode"], "failure", "{f}");
        let parent = f["failure_of"].as_str().expect("failure_of").to_string();
        if f["status"] == "done" {
            assert_eq!(f["outputs"]["open"]["text"], parent.as_str(), "{f}");
        } else {
            // A failure run a kill caught in flight: interrupted, and starts nothing itself.
            assert!(f["error"].as_str().is_some_and(|e| e.starts_with("interrupted")), "{f}");
            assert!(f.get("failure_run").is_none(), "{f}");
        }
        assert!(of.insert(parent.clone(), f["run_id"].as_str().expect("id").to_string()).is_none(), "{parent} started two");
    }
    assert_eq!(of.keys().collect::<Vec<_>>(), failed.keys().collect::<Vec<_>>(), "the failure runs are of the failed runs");
    for d in docs.iter().filter(|d| d["design"] == "fails") {
        let id = d["run_id"].as_str().expect("id");
        assert_eq!(d["failure_run"].as_str(), of.get(id).map(String::as_str), "{id} names its failure run");
    }
    eprintln!("{RUNS} failed runs over {INSTANCES} instances, {} kills, {interrupted} failed as interrupted", RUNS / BATCH);
}

/// A schedule firing every minute, over pinned clocks: for each of six minutes, three instances
/// start with `VWF_NOW` just past the fire (one keeps the timers and fires it), and in every
/// other minute three `vwf schedule tick` processes race them at the same time. Exactly one run
/// per fire, however many saw it due.
#[test]
fn a_schedule_fires_once_per_minute_across_instances() {
    const MINUTES: usize = 6;
    let url = common::pg::fresh_database();
    let home = Home::new();
    let cli = |now: &str, args: &[&str]| {
        let mut c = common::server::vwf(home.path());
        c.env("VWF_DATABASE_URL", &url).env("VWF_NOW", now).arg("--json").args(args);
        c
    };
    let json_of = |out: std::process::Output| -> (i32, Value) { (common::code(&out), common::parse(&out)) };
    let (code, saved) = json_of(cli("2026-06-01T06:00:30Z", &["save", "minutely", &small().to_string()]).output().expect("vwf"));
    assert_eq!(code, 0, "{saved}");
    let (code, job) = json_of(
        cli(
            "2026-06-01T06:00:30Z",
            &["schedule", "set", "minutely", "--preset", "custom", "--cron", "* * * * *", "--input", r#"{"n": 7}"#],
        )
        .output()
        .expect("vwf"),
    );
    assert_eq!((code, &job["job"]["next_run_at"]), (0, &json!("2026-06-01T06:01:00.000Z")), "{job}");
    for minute in 1..=MINUTES {
        let now = format!("2026-06-01T06:{minute:02}:02Z");
        let ticks: Vec<_> = if minute % 2 == 0 {
            (0..3).map(|_| cli(&now, &["schedule", "tick"]).stdout(Stdio::piped()).spawn().expect("vwf schedule tick")).collect()
        } else {
            Vec::new()
        };
        let cluster = Cluster::start_with(url.clone(), vec![("VWF_NOW", now.clone())]);
        let fired_by_ticks: usize = ticks
            .into_iter()
            .map(|t| {
                let (code, body) = json_of(t.wait_with_output().expect("tick"));
                assert_eq!(code, 0, "{body}");
                body["fired"].as_array().map_or(0, Vec::len)
            })
            .sum();
        assert!(fired_by_ticks <= 1, "minute {minute}: {fired_by_ticks} ticks fired");
        eventually("the minute's fire", 30, || (list_all(&cluster.servers, "&design=minutely").len() >= minute).then_some(()));
        let logs: Vec<String> = (0..INSTANCES).map(|i| cluster.log(i)).collect();
        for server in cluster.servers {
            server.terminate();
        }
        let standing_by = logs.iter().filter(|l| l.contains("standing by")).count();
        assert!(standing_by < INSTANCES, "one instance keeps the timers: {logs:?}");
        let runs = list_all_once(&url, &home);
        assert_eq!(runs.len(), minute, "minute {minute}: exactly one run per fire so far: {runs:?}");
    }
    let runs = list_all_once(&url, &home);
    assert!(runs.iter().all(|r| r["status"] == "done" && r["trigger"]["mode"] == "schedule"), "{runs:?}");
}

/// The design's runs, through the CLI on the database (no server up).
fn list_all_once(url: &str, home: &Home) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_vwf"))
        .arg("--home")
        .arg(home.path())
        .env("VWF_DATABASE_URL", url)
        .env_remove("VWF_NOW")
        .args(["--json", "runs", "--design", "minutely", "--limit", "1000"])
        .output()
        .expect("vwf runs");
    let body = common::parse(&out);
    body["runs"].as_array().cloned().unwrap_or_else(|| panic!("{body}"))
}
