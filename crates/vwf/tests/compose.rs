//! Designs that compose (SPEC §3 `wait_event`): a run that waits mid-way for an event, found
//! however old it is, answered once by the first event whose payload matches, from `vwf emit`,
//! an emit step of another run, or the daemon's timer when its deadline passes.

use crate::common;
use vwf_store::Wait;

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
    let mut ids: Vec<String> = home.store().waiters("pr.merged").wait().expect("waiters").iter().map(|(id, _)| id.to_string()).collect();
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

// ---- design steps -------------------------------------------------------------------------

/// `notify-oncall`: pages with its input's message (a command echoing it), when `gated` after a
/// person approves.
fn notify_oncall(gated: bool) -> Value {
    let mut nodes = vec![
        json!({"id": "t", "type": "trigger", "mode": "manual"}),
        json!({"id": "page", "type": "command", "run": "echo paged: {{trigger.message}}"}),
    ];
    let mut edges = vec![json!({"from": "t", "to": "page"})];
    if gated {
        nodes.push(json!({"id": "gate", "type": "approval", "question": "Send {{nodes.page}}?"}));
        edges.push(json!({"from": "page", "to": "gate"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

/// A design calling `notify-oncall` with a message, then echoing what it did.
fn calls_oncall(step: Value) -> Value {
    let mut node = json!({"id": "sub", "type": "design", "design": "notify-oncall", "input": {"message": "{{trigger.what}} is down"}});
    node.as_object_mut().expect("node").extend(step.as_object().expect("fields").clone());
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            node,
            {"id": "after", "type": "command", "run": "echo told: {{nodes.sub.outputs.page.text}}"},
        ],
        "edges": [{"from": "start", "to": "sub"}, {"from": "sub", "to": "after"}],
    })
}

fn run_design(home: &Home, name: &str, input: Value) -> (i32, Value) {
    home.json(&["run", name, "--input", &input.to_string()])
}

#[test]
fn a_design_step_runs_the_called_design_and_takes_its_outputs() {
    let home = Home::new();
    home.save("notify-oncall", &notify_oncall(false));
    home.save("db-watch", &calls_oncall(json!({})));
    home.save("api-watch", &calls_oncall(json!({"input": {"message": "api {{trigger.what}}"}})));
    let (code, run) = run_design(&home, "db-watch", json!({"what": "the db"}));
    assert_eq!(code, 0, "{run}");
    let child = run["outputs"]["sub"]["run_id"].as_str().expect("the child's id").to_string();
    assert_eq!(run["child_runs"], json!([child]));
    assert_eq!(run["outputs"]["sub"]["status"], "done");
    assert_eq!(run["outputs"]["sub"]["outputs"]["page"]["text"], "paged: the db is down");
    assert_eq!(run["outputs"]["after"]["text"], "told: paged: the db is down");
    let shown = run_of(&home, &child);
    assert_eq!(shown["parent_run"], run["run_id"]);
    assert_eq!((shown["trigger"]["mode"].as_str(), shown["status"].as_str()), (Some("parent"), Some("done")));
    assert_eq!(shown["trigger"]["input"], json!({"message": "the db is down"}));

    let (code, other) = run_design(&home, "api-watch", json!({"what": "down"}));
    assert_eq!(code, 0, "{other}");
    assert_eq!(other["outputs"]["sub"]["outputs"]["page"]["text"], "paged: api down");

    // `vwf runs --parent` lists a parent's children and nothing else.
    let (code, listed) = home.json(&["runs", "--parent", run["run_id"].as_str().expect("id")]);
    assert_eq!(code, 0, "{listed}");
    let ids: Vec<&str> = listed["runs"].as_array().expect("runs").iter().filter_map(|r| r["run_id"].as_str()).collect();
    assert_eq!(ids, [child.as_str()]);
    let (code, refused) = home.json(&["runs", "--parent", "nope"]);
    assert_eq!(code, 2, "{refused}");
}

#[test]
fn a_childs_gate_is_answered_through_its_parent() {
    let home = Home::new();
    home.save("notify-oncall", &notify_oncall(true));
    home.save("db-watch", &calls_oncall(json!({})));
    let (code, run) = run_design(&home, "db-watch", json!({"what": "the db"}));
    assert_eq!((code, run["status"].as_str()), (6, Some("awaiting_child")), "{run}");
    let child = run["child_runs"][0].as_str().expect("child").to_string();
    assert_eq!(run["pending"]["type"], "approval", "{run}");
    assert_eq!(run["pending"]["node"], "sub/gate");
    assert_eq!(run["pending"]["run_id"], child.as_str());
    assert_eq!(run["pending"]["question"], "Send paged: the db is down?");
    let id = run["run_id"].as_str().expect("id").to_string();
    let (code, answered) = home.json(&["approve", &id, "sub/gate", "approve"]);
    assert_eq!(code, 0, "{answered}");
    assert_eq!(answered["run_id"], id.as_str(), "the answer is the parent's run");
    assert_eq!(answered["status"], "done", "{answered}");
    assert_eq!(answered["outputs"]["sub"]["text"], "approve");
    assert_eq!(run_of(&home, &child)["status"], "done");
}

#[test]
fn a_design_calling_itself_is_refused_at_save_with_the_path() {
    let home = Home::new();
    home.save("a", &calls_oncall(json!({"design": "b"})));
    home.save("b", &calls_oncall(json!({"design": "c"})));
    let (code, refused) = home.json(&["save", "c", &calls_oncall(json!({"design": "a"})).to_string()]);
    assert_eq!(code, 5, "{refused}");
    let error = refused["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(error.contains("c → a → b → c"), "{refused}");
    assert_eq!(refused["errors"][0]["node"], "sub");
    assert!(home.stored_design("c").is_none(), "a refused save writes nothing");
    let (code, refused) = home.json(&["save", "me", &calls_oncall(json!({"design": "me"})).to_string()]);
    assert_eq!(code, 5, "{refused}");
}

#[test]
fn a_child_runs_the_version_its_parent_pinned_at_its_start() {
    let home = Home::new();
    home.save("notify-oncall", &notify_oncall(false));
    // The parent waits on a gate before its design step.
    let mut parent = calls_oncall(json!({}));
    parent["nodes"].as_array_mut().expect("nodes").push(json!({"id": "go", "type": "approval", "question": "go?"}));
    parent["edges"] = json!([{"from": "start", "to": "go"}, {"from": "go", "to": "sub"}, {"from": "sub", "to": "after"}]);
    home.save("db-watch", &parent);
    let (code, run) = run_design(&home, "db-watch", json!({"what": "the db"}));
    assert_eq!((code, run["status"].as_str()), (6, Some("awaiting_approval")), "{run}");
    let mut edited = notify_oncall(false);
    edited["nodes"][1]["run"] = json!("echo edited: {{trigger.message}}");
    home.save("notify-oncall", &edited);
    let (code, done) = home.json(&["approve", run["run_id"].as_str().expect("id"), "go", "approve"]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["outputs"]["sub"]["outputs"]["page"]["text"], "paged: the db is down", "the run in flight keeps its version");
    let (_, fresh) = run_design(&home, "db-watch", json!({"what": "the db"}));
    let (_, fresh) = home.json(&["approve", fresh["run_id"].as_str().expect("id"), "go", "approve"]);
    assert_eq!(fresh["outputs"]["sub"]["outputs"]["page"]["text"], "edited: the db is down", "a new run takes the new version");
}

#[test]
fn retrying_a_parent_starts_a_new_child_only_for_the_failed_step() {
    let home = Home::new();
    let flag = tempfile::tempdir().expect("dir");
    let marker = flag.path().join("fixed");
    let mut child = notify_oncall(false);
    child["nodes"][1]["run"] = json!(format!("test -e '{}' && echo paged: {{{{trigger.message}}}}", marker.display()));
    home.save("notify-oncall", &child);
    home.save("db-watch", &calls_oncall(json!({})));
    let (code, run) = run_design(&home, "db-watch", json!({"what": "the db"}));
    assert_eq!((code, run["status"].as_str()), (1, Some("failed")), "{run}");
    let id = run["run_id"].as_str().expect("id").to_string();
    assert_eq!(run["failed_node"], "sub");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("failed at page")), "{run}");
    std::fs::write(&marker, "").expect("fix the child");
    let (code, retried) = home.json(&["run", "retry", &id]);
    assert_eq!(code, 0, "{retried}");
    assert_eq!(retried["child_runs"].as_array().map(Vec::len), Some(2), "a new child for the new attempt: {retried}");
    assert_eq!(retried["outputs"]["sub"]["run_id"], retried["child_runs"][1]);
}

#[test]
fn a_step_that_does_not_wait_starts_its_child_and_goes_on() {
    let home = Home::new();
    home.save("notify-oncall", &notify_oncall(false));
    home.save("db-watch", &calls_oncall(json!({"wait": false})));
    let mut parent = calls_oncall(json!({"wait": false}));
    parent["nodes"][2]["run"] = json!("echo started {{nodes.sub.run_id}}");
    home.save("db-watch", &parent);
    let (code, run) = run_design(&home, "db-watch", json!({"what": "the db"}));
    assert_eq!(code, 0, "{run}");
    let child = run["outputs"]["sub"]["run_id"].as_str().expect("child").to_string();
    assert_eq!(run["outputs"]["after"]["text"], format!("started {child}"));
    assert_eq!(run_of(&home, &child)["status"], "done", "the child was driven once the parent ended");
}
