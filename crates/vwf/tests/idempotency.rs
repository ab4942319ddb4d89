//! Idempotency keys (`Idempotency-Key`, `idempotency_key`, `vwf run --key`, `vwf emit --key`),
//! on both stores, over real sockets and the real CLI: a second request with a key answers the
//! first one's result and starts nothing; the same key with another request is a 409 and writes
//! nothing; a refused request frees its key; the window ends on the (pinned) clock; racing
//! requests with one key, on one instance or across three on one PostgreSQL, make one run each.

use crate::common;

use std::collections::BTreeSet;

use common::server::{Options, Server, gated, small};
use common::{Backend, Home};
use serde_json::{Value, json};

fn listener() -> Value {
    json!({"nodes": [
        {"id": "on-ping", "type": "trigger", "mode": "event", "sources": ["ping"]},
        {"id": "echo", "type": "output", "template": "got {{trigger.payload.n}}"}
    ], "edges": [{"from": "on-ping", "to": "echo"}]})
}

/// POST `body` to `path` with an `Idempotency-Key` header.
fn post_keyed(server: &Server, path: &str, key: &str, body: Value) -> (u16, Value) {
    common::server::send(server.authed(server.client.post(server.url(path)).header("Idempotency-Key", key).json(&body)))
}

/// The ids of the runs of `design` the server lists.
fn runs_of(server: &Server, design: &str) -> Vec<String> {
    let (status, body) = server.get(&format!("/runs?design={design}&limit=1000"));
    assert_eq!(status, 200, "{body}");
    body["runs"].as_array().expect("runs").iter().map(|r| r["run_id"].as_str().expect("run id").to_string()).collect()
}

fn keyed_runs_start_once(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    server.save("small", small());
    server.save("gated", gated());

    // The header: the second request answers the first run, and no run starts.
    let (s, first) = post_keyed(&server, "/designs/small/run", "order-1", json!({"input": {"n": 7}}));
    assert_eq!((s, &first["status"]), (200, &json!("done")), "{first}");
    let (s, again) = post_keyed(&server, "/designs/small/run", "order-1", json!({"input": {"n": 7}}));
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["run_id"], first["run_id"]);
    assert_eq!(again["outputs"], first["outputs"]);
    // The field says the same; so does answering at once (`wait: false`).
    let (s, field) = server.post("/designs/small/run", json!({"input": {"n": 7}, "idempotency_key": "order-1"}));
    assert_eq!((s, &field["run_id"]), (200, &first["run_id"]), "{field}");
    let (s, quick) = server.post("/designs/small/run", json!({"input": {"n": 7}, "idempotency_key": "order-1", "wait": false}));
    assert_eq!((s, &quick["run_id"]), (200, &first["run_id"]), "{quick}");
    assert_eq!(runs_of(&server, "small"), [first["run_id"].as_str().unwrap()]);

    // The same key with another input, or for another design: 409, nothing written.
    let before = runs_of(&server, "small");
    let files = home.files();
    let (s, other) = post_keyed(&server, "/designs/small/run", "order-1", json!({"input": {"n": 8}}));
    assert_eq!(s, 409, "{other}");
    assert!(other["error"].as_str().is_some_and(|e| e.contains("order-1") && e.contains("another request")), "{other}");
    let (s, _) = post_keyed(&server, "/designs/gated/run", "order-1", json!({"input": {"n": 7}}));
    assert_eq!(s, 409);
    assert_eq!(runs_of(&server, "small"), before);
    assert!(runs_of(&server, "gated").is_empty());
    assert_eq!(home.files(), files, "a refused request writes nothing");

    // Bad keys, and a header and a field that differ, are refused before anything is written.
    for (key, field, status) in [("", None, 400), (&*"k".repeat(256), None, 400), ("tab\there", None, 400), ("a", Some("b"), 409)] {
        let body = match field {
            Some(f) => json!({"input": {"n": 1}, "idempotency_key": f}),
            None => json!({"input": {"n": 1}}),
        };
        let (s, b) = post_keyed(&server, "/designs/small/run", key, body);
        assert_eq!(s, status, "{key:?}: {b}");
    }
    let (s, b) = server.post("/designs/small/run", json!({"input": {"n": 1}, "idempotency_key": "ü"}));
    assert_eq!(s, 400, "{b}");
    assert_eq!(home.files(), files, "a refused request writes nothing");

    // A run that parks: the second request answers it as it stands now.
    let (s, parked) = post_keyed(&server, "/designs/gated/run", "ask-1", json!({}));
    assert_eq!((s, &parked["status"]), (200, &json!("awaiting_approval")), "{parked}");
    let id = parked["run_id"].as_str().unwrap().to_string();
    let (s, _) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "send"}));
    assert_eq!(s, 200);
    let (s, again) = post_keyed(&server, "/designs/gated/run", "ask-1", json!({}));
    assert_eq!((s, &again["run_id"], &again["status"]), (200, &json!(id), &json!("done")), "{again}");
    assert_eq!(runs_of(&server, "gated"), [id]);

    // A refused start frees its key: the same key then starts the run it is given next.
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let (s, b) = post_keyed(&server, "/designs/small/run", "order-2", json!({"input": deep}));
    assert_eq!(s, 400, "{b}");
    let (s, b) = post_keyed(&server, "/designs/small/run", "order-2", json!({"input": {"n": 1}}));
    assert_eq!((s, &b["status"]), (200, &json!("done")), "{b}");

    // Events: the second emit answers the first one's runs; another payload is a 409.
    server.save("on-ping", listener());
    let (s, first) = post_keyed(&server, "/events/ping", "delivery-1", json!({"payload": {"n": 7}}));
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["runs"].as_array().map(Vec::len), Some(1), "{first}");
    let (s, again) = server.post("/events/ping", json!({"payload": {"n": 7}, "idempotency_key": "delivery-1"}));
    assert_eq!((s, &again), (200, &first));
    let (s, other) = post_keyed(&server, "/events/ping", "delivery-1", json!({"payload": {"n": 8}}));
    assert_eq!(s, 409, "{other}");
    assert_eq!(runs_of(&server, "on-ping"), [first["runs"][0]["run_id"].as_str().unwrap()]);
}

#[test]
fn a_key_answers_the_first_run_or_event_and_another_request_with_it_is_a_409_on_files() {
    keyed_runs_start_once(Backend::Files);
}

#[test]
fn a_key_answers_the_first_run_or_event_and_another_request_with_it_is_a_409_on_postgres() {
    keyed_runs_start_once(Backend::Postgres);
}

#[test]
fn the_cli_takes_a_key_and_the_window_ends_on_the_clock() {
    let home = Home::new();
    home.save("small", &small());
    home.save("on-ping", &listener());
    let run = |now: &str, input: &str| {
        let (code, body) = home.json_at(now, &["run", "small", "--input", input, "--key", "nightly-2026-12-01"]);
        (code, body)
    };
    let (code, first) = run("2026-12-01T09:00:00Z", r#"{"n": 3}"#);
    assert_eq!((code, &first["status"]), (0, &json!("done")), "{first}");
    let (code, again) = run("2026-12-02T08:59:00Z", r#"{"n": 3}"#);
    assert_eq!((code, &again["run_id"]), (0, &first["run_id"]), "within 24 h the key answers the first run: {again}");
    let (code, other) = run("2026-12-02T08:59:00Z", r#"{"n": 4}"#);
    assert_ne!(code, 0, "{other}");
    assert!(other["error"].as_str().is_some_and(|e| e.contains("another request")), "{other}");
    let (code, later) = run("2026-12-02T09:00:01Z", r#"{"n": 4}"#);
    assert_eq!((code, &later["status"]), (0, &json!("done")), "{later}");
    assert_ne!(later["run_id"], first["run_id"], "past the window the key starts a new run");

    // A shorter window from the config.
    common::server::write_config(&home, "[runs]\nidempotency_hours = 1\n");
    let (code, fresh) = run("2026-12-02T10:00:02Z", r#"{"n": 4}"#);
    assert_eq!(code, 0, "{fresh}");
    assert_ne!(fresh["run_id"], later["run_id"], "an hour later the key is free again");
    common::server::write_config(&home, "[runs]\nidempotency_hours = 0\n");
    let (code, refused) = run("2026-12-02T10:00:03Z", r#"{"n": 4}"#);
    assert_ne!(code, 0, "{refused}");
    common::server::write_config(&home, "");

    let emit = |payload: &str| home.json_at("2026-12-02T11:00:00Z", &["emit", "ping", "--payload", payload, "--key", "hook-9"]);
    let (code, first) = emit(r#"{"n": 1}"#);
    assert_eq!((code, first["runs"].as_array().map(Vec::len)), (0, Some(1)), "{first}");
    let (code, again) = emit(r#"{"n": 1}"#);
    assert_eq!((code, &again), (0, &first));
    let (code, _) = emit(r#"{"n": 2}"#);
    assert_ne!(code, 0);
    let (code, bad) = home.json(&["run", "small", "--key", ""]);
    assert_ne!(code, 0, "{bad}");
    // The keys are the store's own files: the doctor finds nothing astray.
    let (code, doctor) = home.json(&["doctor"]);
    assert_eq!((code, &doctor["problems"]), (0, &json!([])), "{doctor}");
}

/// Pairs of requests racing with one key, from many threads, over `servers` round-robin: each
/// pair makes exactly one run, and both of its requests answer it.
fn racing_pairs(servers: &[Server], pairs: usize) {
    servers[0].save("small", small());
    let answers: Vec<(String, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|w| {
                scope.spawn(move || {
                    (w..pairs)
                        .step_by(8)
                        .map(|p| {
                            let key = format!("pair-{p}");
                            let body = json!({"input": {"n": p}});
                            let (a, b) = std::thread::scope(|inner| {
                                let one = inner.spawn(|| post_keyed(&servers[p % servers.len()], "/designs/small/run", &key, body.clone()));
                                let two =
                                    inner.spawn(|| post_keyed(&servers[(p + 1) % servers.len()], "/designs/small/run", &key, body.clone()));
                                (one.join().expect("request"), two.join().expect("request"))
                            });
                            assert_eq!((a.0, b.0), (200, 200), "{} / {}", a.1, b.1);
                            (a.1["run_id"].as_str().expect("id").to_string(), b.1["run_id"].as_str().expect("id").to_string())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("worker")).collect()
    });
    assert_eq!(answers.len(), pairs);
    for (a, b) in &answers {
        assert_eq!(a, b, "both requests of a pair answer one run");
    }
    let made: BTreeSet<&String> = answers.iter().map(|(a, _)| a).collect();
    assert_eq!(made.len(), pairs, "each pair its own run");
    let listed = common::server::list_all(servers, "&design=small");
    assert_eq!(listed.len(), pairs, "exactly one run per key is stored");
    assert!(listed.iter().all(|r| r["status"] == "done"), "every run is done");
}

#[test]
fn racing_pairs_with_one_key_make_one_run_each_on_files() {
    let home = Home::new();
    let server = Server::start(&home);
    racing_pairs(std::slice::from_ref(&server), 300);
}

#[test]
fn racing_pairs_with_one_key_across_three_instances_make_one_run_each() {
    let url = common::pg::fresh_database();
    let homes: Vec<Home> = (0..3).map(|_| Home::new()).collect();
    let servers: Vec<Server> = homes
        .iter()
        .map(|home| Server::start_with(home, Options { env: vec![("VWF_DATABASE_URL", url.clone())], ..Options::default() }))
        .collect();
    racing_pairs(&servers, 1000);
}
