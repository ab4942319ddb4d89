//! A design's `concurrency` (a limit per key, `on_limit` queue | skip | cancel_oldest), on both
//! stores, through real servers and the real CLI: a run over the limit waits `queued`, in order,
//! and starts when a slot frees; `skip` starts nothing and writes nothing; `cancel_oldest` stops
//! the oldest run; 200 runs of 10 keys never overlap within a key, on one server, across three
//! instances on one PostgreSQL and across two servers on one file home; a server killed with
//! SIGKILL while it holds a slot gives it up once its run is taken over.

use crate::common;
use crate::on_both_backends;

use std::collections::BTreeMap;

use common::server::{Options, Server, eventually};
use common::{Backend, Home};
use serde_json::{Value, json};

on_both_backends!(
    a_run_over_the_limit_queues_and_starts_when_the_slot_frees,
    skip_starts_nothing_and_cancel_oldest_stops_the_oldest,
    an_event_a_full_design_skips_still_starts_the_others,
);

/// An event two designs take: the one whose slot is taken (`skip`) says why in `skipped`, the
/// other starts its run all the same.
fn an_event_a_full_design_skips_still_starts_the_others(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    let listener = |limits: Value| {
        let mut d = json!({"nodes": [
            {"id": "on", "type": "trigger", "mode": "event", "sources": ["ping"]},
            {"id": "gate", "type": "approval", "question": "Ok?", "options": ["ok"]}
        ], "edges": [{"from": "on", "to": "gate"}]});
        if !limits.is_null() {
            d["concurrency"] = limits;
        }
        d
    };
    server.save("one-at-a-time", listener(json!({"limit": 1, "on_limit": "skip"})));
    server.save("any", listener(Value::Null));
    let (s, first) = server.post("/events/ping", json!({"payload": {}}));
    assert_eq!((s, first["runs"].as_array().map(Vec::len)), (200, Some(2)), "{first}");
    let (s, second) = server.post("/events/ping", json!({"payload": {}}));
    assert_eq!(s, 200, "{second}");
    assert_eq!(second["runs"].as_array().map(Vec::len), Some(1), "{second}");
    let skipped = second["skipped"].as_array().expect("skipped");
    assert!(
        skipped.iter().any(|s| s["design"] == "one-at-a-time" && s["reason"].as_str().is_some_and(|r| r.contains("on_limit: skip"))),
        "{second}"
    );
}

/// trigger → gate → output, one run per `chat` at a time.
fn per_chat(on_limit: &str) -> Value {
    json!({
        "concurrency": {"limit": 1, "key": "{{trigger.chat}}", "on_limit": on_limit},
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Reply?", "options": ["send", "skip"]},
            {"id": "out", "type": "output", "template": "replied to {{trigger.chat}}"}
        ],
        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "send"}]
    })
}

fn run(server: &Server, design: &str, input: Value) -> (u16, Value) {
    server.post(&format!("/designs/{design}/run"), json!({"input": input}))
}

fn status_of(server: &Server, id: &str) -> Value {
    let (s, run) = server.get(&format!("/runs/{id}"));
    assert_eq!(s, 200, "{run}");
    run
}

fn a_run_over_the_limit_queues_and_starts_when_the_slot_frees(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    server.save("reply", per_chat("queue"));
    let (s, first) = run(&server, "reply", json!({"chat": 7}));
    assert_eq!((s, first["status"].as_str()), (200, Some("awaiting_approval")), "{first}");
    assert_eq!(first["concurrency_key"], "7");
    let (s, second) = run(&server, "reply", json!({"chat": 7}));
    assert_eq!((s, second["status"].as_str()), (200, Some("queued")), "{second}");
    let (_, third) = run(&server, "reply", json!({"chat": 7}));
    assert_eq!(third["status"], "queued", "{third}");
    // Another key is not held back.
    let (_, other) = run(&server, "reply", json!({"chat": 8}));
    assert_eq!(other["status"], "awaiting_approval", "{other}");
    let second_id = second["run_id"].as_str().unwrap();
    let third_id = third["run_id"].as_str().unwrap();
    let queued = status_of(&server, third_id);
    assert_eq!(queued["queue"], json!({"key": "7", "place": 2, "behind": first["run_id"]}), "{queued}");
    // The listing says where each queued run waits too.
    let (_, listed) = server.get("/runs?status=queued");
    let places: Vec<(Value, Value)> =
        listed["runs"].as_array().expect("runs").iter().map(|r| (r["run_id"].clone(), r["queue"]["place"].clone())).collect();
    assert_eq!(places, [(json!(third_id), json!(2)), (json!(second_id), json!(1))], "{listed}");

    // The first run ends: the second (not the third) takes the slot and parks at its gate.
    let (s, done) = server.post(&format!("/runs/{}/respond", first["run_id"].as_str().unwrap()), json!({"node": "gate", "answer": "send"}));
    assert_eq!((s, done["status"].as_str()), (200, Some("done")), "{done}");
    eventually("the second run to start", 20, || (status_of(&server, second_id)["status"] == "awaiting_approval").then_some(()));
    assert_eq!(status_of(&server, third_id)["status"], "queued");
    assert_eq!(status_of(&server, third_id)["queue"]["place"], 1);
    // Answered with no: it ends too, and the third goes on.
    server.post(&format!("/runs/{second_id}/respond"), json!({"node": "gate", "answer": "skip"}));
    eventually("the third run to start", 20, || (status_of(&server, third_id)["status"] == "awaiting_approval").then_some(()));
    let (_, listed) = server.get("/runs?status=queued");
    assert_eq!(listed["runs"], json!([]), "{listed}");
    assert!(server.metric("vwf_runs_queued") == 0.0);
}

fn skip_starts_nothing_and_cancel_oldest_stops_the_oldest(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    server.save("skipper", per_chat("skip"));
    let (_, first) = run(&server, "skipper", json!({"chat": 1}));
    assert_eq!(first["status"], "awaiting_approval");
    let files = home.files();
    let (s, refused) = run(&server, "skipper", json!({"chat": 1}));
    assert_eq!(s, 409, "{refused}");
    assert!(refused["error"].as_str().is_some_and(|e| e.contains(first["run_id"].as_str().unwrap()) && e.contains("skip")), "{refused}");
    if backend == Backend::Files {
        assert_eq!(home.files(), files, "a skipped start writes nothing");
    }
    // A key the input cannot give is a 400.
    let (s, bad) = run(&server, "skipper", json!({"room": 1}));
    assert_eq!(s, 400, "{bad}");

    server.save("latest", per_chat("cancel_oldest"));
    let (_, old) = run(&server, "latest", json!({"chat": 5}));
    assert_eq!(old["status"], "awaiting_approval");
    let (_, new) = run(&server, "latest", json!({"chat": 5}));
    let old_id = old["run_id"].as_str().unwrap();
    let new_id = new["run_id"].as_str().unwrap();
    eventually("the new run to take the slot", 20, || (status_of(&server, new_id)["status"] == "awaiting_approval").then_some(()));
    let old = status_of(&server, old_id);
    assert_eq!(old["status"], "failed", "{old}");
    assert!(old["error"].as_str().is_some_and(|e| e.starts_with("cancelled: ") && e.contains(new_id)), "{old}");
}

/// trigger → a command that takes a little while, one run per `key` at a time.
fn busy(limit: u32) -> Value {
    json!({
        "concurrency": {"limit": limit, "key": "{{trigger.key}}"},
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "work", "type": "command", "argv": ["sleep", "0.01"]}
        ],
        "edges": [{"from": "start", "to": "work"}]
    })
}

/// Starts `per_key` runs for each of `keys` keys at once (each key's in order, answered at once),
/// spread over `servers`; waits until every run is done; then checks from the run records that no
/// two runs of one key overlapped and each key's runs started in the order they were asked for.
fn many_keys_never_overlap(servers: &[Server], keys: usize, per_key: usize) {
    let asked: Vec<Vec<String>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..keys)
            .map(|k| {
                s.spawn(move || {
                    (0..per_key)
                        .map(|i| {
                            let server = &servers[(k + i) % servers.len()];
                            let (s, run) = server.post("/designs/busy/run", json!({"input": {"key": format!("k{k}")}, "wait": false}));
                            assert_eq!(s, 200, "{run}");
                            run["run_id"].as_str().expect("run id").to_string()
                        })
                        .collect()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("thread")).collect()
    });
    let total = keys * per_key;
    let runs = eventually("every run to end", 240, || {
        let runs = common::server::list_all(servers, "&design=busy");
        (runs.len() == total && runs.iter().all(|r| r["status"] == "done")).then_some(runs)
    });
    let by_id: BTreeMap<&str, &Value> = runs.iter().map(|r| (r["run_id"].as_str().unwrap(), r)).collect();
    for ids in &asked {
        // Each run's step: when it started and ended (a full read has the tries).
        let spans: Vec<(String, String)> = ids
            .iter()
            .map(|id| {
                assert_eq!(by_id[id.as_str()]["status"], "done");
                let run = status_of(&servers[0], id);
                let step = &run["steps"][0];
                (step["started_at"].as_str().unwrap().to_string(), step["finished_at"].as_str().unwrap().to_string())
            })
            .collect();
        for pair in spans.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "two runs of one key overlapped, or started out of order: {pair:?}");
        }
    }
}

#[test]
fn two_hundred_runs_of_ten_keys_on_one_server() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("busy", busy(1));
    many_keys_never_overlap(std::slice::from_ref(&server), 10, 20);
}

#[test]
fn two_hundred_runs_of_ten_keys_across_two_servers_on_one_file_home() {
    let home = Home::new();
    let servers = [Server::start(&home), Server::start(&home)];
    servers[0].save("busy", busy(1));
    many_keys_never_overlap(&servers, 10, 20);
}

#[test]
fn two_hundred_runs_of_ten_keys_across_three_instances_on_one_database() {
    let home = Home::with_backend(Backend::Postgres);
    let servers: Vec<Server> = (0..3).map(|_| Server::start_with(&home, Options::default())).collect();
    servers[0].save("busy", busy(1));
    many_keys_never_overlap(&servers, 10, 20);
}

/// A server killed while its run holds the only slot: the run queued behind it starts once a
/// server takes the dead one's run over (marks it interrupted).
#[test]
fn a_killed_holder_frees_its_slot_after_takeover() {
    for backend in [Backend::Files, Backend::Postgres] {
        let home = Home::with_backend(backend);
        let go = home.path().join("go");
        let design = json!({
            "concurrency": {"limit": 1},
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "hold", "type": "command", "argv": ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.02; done; printf released", "sh", go.to_str().unwrap()]}
            ],
            "edges": [{"from": "start", "to": "hold"}]
        });
        let first_server = Server::start(&home);
        first_server.save("solo", design);
        let (_, holder) = first_server.post("/designs/solo/run", json!({"wait": false}));
        assert_eq!(holder["status"], "running", "{holder}");
        let (_, queued) = first_server.post("/designs/solo/run", json!({"wait": false}));
        assert_eq!(queued["status"], "queued", "{queued}");
        drop(first_server); // SIGKILL
        std::fs::write(&go, "").expect("let the command end");
        let server = Server::start(&home);
        let holder_id = holder["run_id"].as_str().unwrap();
        let queued_id = queued["run_id"].as_str().unwrap();
        eventually("the queued run to finish", 60, || (status_of(&server, queued_id)["status"] == "done").then_some(()));
        let holder = status_of(&server, holder_id);
        assert_eq!(holder["status"], "failed", "{holder}");
        assert!(holder["error"].as_str().is_some_and(|e| e.contains("interrupted")), "{holder}");
    }
}

/// `release_while_waiting`: a run parked at its gate gives its slot back, so another starts; when
/// it is answered it claims a slot again and, finding it taken, waits `queued` mid-run until the
/// holder ends.
#[test]
fn a_run_that_releases_while_waiting_queues_again_to_go_on() {
    let home = Home::new();
    let go = home.path().join("go");
    let server = Server::start(&home);
    server.save(
        "polite",
        json!({
            "concurrency": {"limit": 1, "release_while_waiting": true},
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "gate", "type": "approval", "question": "Go?", "options": ["go"]},
                {"id": "hold", "type": "command", "argv": ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.02; done; printf released", "sh", go.to_str().unwrap()]}
            ],
            "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "hold", "label": "go"}]
        }),
    );
    let (_, a) = run(&server, "polite", json!({}));
    let (_, b) = run(&server, "polite", json!({}));
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("awaiting_approval"), Some("awaiting_approval")),
        "a parked run frees its slot"
    );
    let (a, b) = (a["run_id"].as_str().unwrap().to_string(), b["run_id"].as_str().unwrap().to_string());
    // B goes on and holds the slot while its command runs.
    let answering = {
        let (url, client) = (server.url(&format!("/runs/{b}/respond")), server.client.clone());
        std::thread::spawn(move || client.post(url).json(&json!({"node": "gate", "answer": "go"})).send().map(|r| r.status().as_u16()))
    };
    eventually("B to run its command", 20, || (status_of(&server, &b)["status"] == "running").then_some(()));
    let (s, queued) = server.post(&format!("/runs/{a}/respond"), json!({"node": "gate", "answer": "go"}));
    assert_eq!((s, queued["status"].as_str()), (200, Some("queued")), "A waits for B's slot: {queued}");
    assert_eq!(status_of(&server, &a)["queue"]["behind"], b.as_str());
    std::fs::write(&go, "").expect("let the commands end");
    assert_eq!(answering.join().expect("thread").expect("answer B"), 200);
    eventually("A to finish", 30, || (status_of(&server, &a)["status"] == "done").then_some(()));
    let (a_run, b_run) = (status_of(&server, &a), status_of(&server, &b));
    let step = |run: &Value, field: &str| {
        run["steps"].as_array().unwrap().iter().find(|s| s["node"] == "hold").unwrap()[field].as_str().unwrap().to_string()
    };
    assert!(step(&b_run, "finished_at") <= step(&a_run, "started_at"), "A's command started after B's ended");
}

/// `/metrics` counts parked runs of every status, queued ones apart.
#[test]
fn metrics_count_runs_waiting_for_an_event_and_queued_runs() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save(
        "listen",
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "hear", "type": "wait_event", "event": "pr.merged", "timeout": "1h"}
        ], "edges": [{"from": "start", "to": "hear"}], "concurrency": {"limit": 1}}),
    );
    assert_eq!(run(&server, "listen", json!({})).1["status"], "awaiting_event");
    assert_eq!(run(&server, "listen", json!({})).1["status"], "queued");
    assert_eq!(server.metric("vwf_runs_parked{status=\"awaiting_event\"}"), 1.0);
    assert_eq!(server.metric("vwf_runs_queued"), 1.0);
}
