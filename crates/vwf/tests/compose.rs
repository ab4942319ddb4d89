//! Designs that compose (SPEC §3 `wait_event`): a run that waits mid-way for an event, found
//! however old it is, answered once by the first event whose payload matches, from `vwf emit`,
//! an emit step of another run, or the daemon's timer when its deadline passes.

use crate::common;

use chrono::{DateTime, Duration as Span, Utc};
use common::Home;
use serde_json::{Value, json};
use vwf::app::App;
use vwf::clock::FixedClock;
use vwf::daemon::Daemon;
use vwf::tools;

/// trigger → merged (wait for `pr.merged` of the run's own PR) → done (an output naming the sha).
fn awaits_merge(wait: Value) -> Value {
    let mut node = json!({"id": "merged", "type": "wait_event", "event": "pr.merged", "match": "event.payload.pr == {{trigger.pr}}"});
    node.as_object_mut().expect("node").extend(wait.as_object().expect("fields").clone());
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            node,
            {"id": "done", "type": "output", "template": "merged {{nodes.merged.text}}"},
        ],
        "edges": [{"from": "start", "to": "merged"}, {"from": "merged", "to": "done"}],
    })
}

fn start(home: &Home, pr: u64) -> String {
    let (code, run) = home.json(&["run", "await-merge", "--input", &json!({"pr": pr}).to_string()]);
    assert_eq!((code, run["status"].as_str()), (6, Some("awaiting_event")), "{run}");
    assert_eq!(run["pending"]["type"], "event", "{run}");
    assert_eq!(run["pending"]["match"], format!("event.payload.pr == {pr}"), "{run}");
    run["run_id"].as_str().expect("run id").to_string()
}

fn emit(home: &Home, payload: Value) -> Value {
    let (code, body) = home.json(&["emit", "pr.merged", "--payload", &payload.to_string()]);
    assert_eq!(code, 0, "{body}");
    body
}

fn run_of(home: &Home, id: &str) -> Value {
    let (_, run) = home.json(&["show", id]);
    assert_eq!(run["run_id"], id, "{run}");
    run
}

/// The runs the store notes waiting for `pr.merged`.
fn noted(home: &Home) -> Vec<String> {
    let mut ids: Vec<String> = home.store().waiters("pr.merged").expect("waiters").iter().map(|(id, _)| id.to_string()).collect();
    ids.sort();
    ids
}

#[test]
fn only_the_matching_event_answers_a_waiting_run_and_only_once() {
    let home = Home::new();
    home.save("await-merge", &awaits_merge(json!({})));
    let first = start(&home, 1);
    let second = start(&home, 2);
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(noted(&home), both, "each waiting run is noted in the store");
    // Other runs after them do not hide them.
    for _ in 0..3 {
        start(&home, 99);
    }

    let body = emit(&home, json!({"pr": 2, "sha": "b2"}));
    assert_eq!(body["resumed"], json!([second]), "{body}");
    assert_eq!(body["runs"], json!([]), "no design listens to the event: it starts nothing");
    let run = run_of(&home, &second);
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["merged"]["payload"], json!({"pr": 2, "sha": "b2"}));
    assert_eq!(run["outputs"]["done"]["text"], r#"merged {"pr":2,"sha":"b2"}"#);
    assert_eq!(run_of(&home, &first)["status"], "awaiting_event");

    assert_eq!(emit(&home, json!({"pr": 2, "sha": "again"}))["resumed"], json!([]), "answered once");
    assert_eq!(run_of(&home, &second)["outputs"]["merged"]["payload"]["sha"], "b2");
    assert!(!noted(&home).contains(&second), "an answered run's note is dropped");

    let out = home.vwf().args(["emit", "pr.merged", "--payload", r#"{"pr": 1, "sha": "a1"}"#]).output().expect("vwf");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("run {first}: went on with pr.merged")), "{out:?}");
    assert_eq!(run_of(&home, &first)["status"], "done");
}

#[test]
fn an_emit_step_of_another_run_answers_the_waiting_run() {
    let home = Home::new();
    home.save("await-merge", &awaits_merge(json!({})));
    home.save(
        "merge-bot",
        &json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"},
                          {"id": "say", "type": "emit", "event": "pr.merged", "payload": {"pr": 7, "sha": "{{trigger.sha}}"}}],
                "edges": [{"from": "t", "to": "say"}]}),
    );
    let waiting = start(&home, 7);
    let (code, bot) = home.json(&["run", "merge-bot", "--input", r#"{"sha": "c3"}"#]);
    assert_eq!(code, 0, "{bot}");
    assert_eq!(bot["outputs"]["say"]["resumed"], json!([waiting]), "{bot}");
    let run = run_of(&home, &waiting);
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["merged"]["payload"]["sha"], "c3");
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").to_utc()
}

/// A wait's deadline is the daemon's to enforce: it fails the run, or (`on_timeout: continue`)
/// the run goes on with no payload.
#[test]
fn the_daemon_ends_a_wait_for_an_event_at_its_deadline() {
    let home = Home::new();
    let t0 = at("2026-06-03T10:00:00Z");
    let app = App { clock: Box::new(FixedClock::new(t0)), ..App::open(home.path().to_path_buf()).expect("open app") };
    let save = |name: &str, graph: Value| {
        let reply = tools::call(&app, "workflow_design_save", &json!({"name": name, "graph": graph}));
        assert_eq!(reply.body["ok"], true, "{}", reply.body);
    };
    save("fails", awaits_merge(json!({"timeout": "5m"})));
    save("goes-on", awaits_merge(json!({"timeout": "5m", "on_timeout": "continue"})));
    let start = |name: &str| {
        let reply = tools::call(&app, "workflow_design_run", &json!({"name": name, "input": {"pr": 1}}));
        assert_eq!(reply.body["status"], "awaiting_event", "{}", reply.body);
        reply.body["run_id"].as_str().expect("id").to_string()
    };
    let (fails, goes_on) = (start("fails"), start("goes-on"));
    let mut daemon = Daemon::new(&app);
    let early = daemon.tick(t0 + Span::minutes(4));
    assert!(early.timed_out.is_empty() && early.resumed.is_empty(), "{early:?}");
    let report = daemon.tick(t0 + Span::minutes(5));
    assert_eq!(report.timed_out, vec![fails.clone()]);
    assert_eq!(report.resumed, vec![goes_on.clone()]);
    let run = run_of(&home, &fails);
    assert_eq!((run["status"].as_str(), run["error"].as_str()), (Some("failed"), Some("timed out waiting for event \"pr.merged\"")));
    let run = run_of(&home, &goes_on);
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["merged"]["timed_out"], true);
    assert_eq!(run["outputs"]["done"]["text"], "merged ");
}
