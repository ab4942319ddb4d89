//! Snapshots of every JSON shape the five agent tools answer (SPEC §6, §8, §9, §11, §13).
//!
//! Each test calls the tools through the library (`vwf::tools::call`) in a fresh temporary home
//! and snapshots `{status, body}`, so a change to the contract or to the status policy shows up
//! as a snapshot diff. Run ids, timestamps and the home directory are redacted; the clock is
//! injected (a `FixedClock`) instead of read from `VWF_NOW`, which is process-global.

use std::cell::RefCell;
use std::path::Path;

use insta::dynamic_redaction;
use insta::internals::{Content, ContentPath};
use serde_json::{Value, json};
use tempfile::TempDir;
use vwf::app::App;
use vwf::clock::FixedClock;
use vwf::tools::{self, Reply};
use vwf_core::names::DesignName;
use vwf_core::time::{self, Ts};

const T0: &str = "2026-11-29T09:00:00Z";

fn at(s: &str) -> Ts {
    time::parse(s).expect("test timestamp")
}

/// A fresh home and an `App` over it whose clock stands at `now`.
struct Env {
    home: TempDir,
    app: App,
    /// Run ids seen so far, scrubbed from every snapshot (error messages name them too).
    run_ids: RefCell<Vec<String>>,
}

impl Env {
    fn new() -> Env {
        Env::at(T0)
    }

    fn at(now: &str) -> Env {
        let home = tempfile::tempdir().expect("tempdir");
        let app = app_at(home.path(), now);
        Env { home, app, run_ids: RefCell::new(Vec::new()) }
    }

    /// Another `App` on the same home (a second process, possibly later in time).
    fn later(&self, now: &str) -> App {
        app_at(self.home.path(), now)
    }

    fn call(&self, tool: &str, args: Value) -> Reply {
        self.seen(tools::call(&self.app, tool, &args))
    }

    /// Notes the run id of a reply (for scrubbing) and hands the reply back.
    fn seen(&self, reply: Reply) -> Reply {
        if let Some(id) = reply.body.get("run_id").and_then(Value::as_str) {
            assert!(
                id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "run id {id:?} is not 12 lowercase hex characters"
            );
            assert!(self.home.path().join("workflow-runs").join(format!("{id}.json")).is_file(), "run {id} has no run file");
            if !self.run_ids.borrow().iter().any(|x| x == id) {
                self.run_ids.borrow_mut().push(id.to_string());
            }
        }
        reply
    }

    fn save(&self, name: &str, graph: Value) {
        let r = self.call("workflow_design_save", json!({"name": name, "graph": graph}));
        assert_eq!((r.status, &r.body["ok"]), (200, &json!(true)), "save {name} refused: {}", r.body);
    }

    /// Writes a design straight into the store, bypassing the validator (a design saved by an
    /// older version, or edited by hand).
    fn save_unchecked(&self, name: &str, graph: Value) {
        let name = DesignName::parse(name).expect("design name");
        self.app.store.save_design(&name, &graph).expect("store write");
    }

    fn run(&self, name: &str, input: Value) -> Reply {
        self.call("workflow_design_run", json!({"name": name, "input": input}))
    }

    /// Starts a run that must park or finish, and returns its id.
    fn run_id(&self, name: &str, input: Value) -> String {
        let r = self.run(name, input);
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["run_id"].as_str().unwrap_or_else(|| panic!("no run_id in {}", r.body)).to_string()
    }

    /// Snapshots `{status, body}` with run ids, timestamps and the home redacted.
    fn snap(&self, name: &str, reply: &Reply) {
        let reply = self.seen(reply.clone());
        let mut body = reply.body.clone();
        for id in self.run_ids.borrow().iter() {
            scrub(&mut body, id, "[run_id]");
        }
        let home = self.home.path().to_string_lossy().to_string();
        scrub(&mut body, &home, "[home]");
        let value = json!({"status": reply.status, "body": body});
        insta::assert_json_snapshot!(name, value, {
            ".body.run_id" => "[run_id]",
            ".body.created_at" => dynamic_redaction(timestamp),
            ".body.updated_at" => dynamic_redaction(timestamp),
            ".body.steps[].started_at" => dynamic_redaction(timestamp),
            ".body.steps[].finished_at" => dynamic_redaction(timestamp),
            ".body.steps[].tries[].started_at" => dynamic_redaction(timestamp),
            ".body.steps[].tries[].finished_at" => dynamic_redaction(timestamp),
            ".body.deliveries[].at" => dynamic_redaction(timestamp),
            ".body.outputs.*.deliveries[].at" => dynamic_redaction(timestamp),
            ".body.outputs.*.resumed_at" => dynamic_redaction(timestamp),
            ".body.pending.deadline" => dynamic_redaction(timestamp),
            ".body.pending.resume_at" => dynamic_redaction(timestamp),
        });
    }
}

fn app_at(home: &Path, now: &str) -> App {
    let app = App::open(home.to_path_buf()).expect("open app");
    App { clock: Box::new(FixedClock::new(at(now))), ..app }
}

/// Redacts a timestamp after checking it is one (RFC 3339, UTC); a null stays null.
fn timestamp(value: Content, _path: ContentPath<'_>) -> Content {
    if value.is_nil() {
        return value;
    }
    match value.as_str() {
        Some(s) => {
            assert!(time::parse(s).is_some() && s.ends_with('Z'), "{s:?} is not an RFC 3339 UTC timestamp");
            Content::from("[ts]")
        }
        None => panic!("timestamp field is {value:?}"),
    }
}

/// Replaces `needle` in every string of `v`.
fn scrub(v: &mut Value, needle: &str, with: &str) {
    match v {
        Value::String(s) if s.contains(needle) => *s = s.replace(needle, with),
        Value::Array(items) => items.iter_mut().for_each(|x| scrub(x, needle, with)),
        Value::Object(m) => m.values_mut().for_each(|x| scrub(x, needle, with)),
        _ => {}
    }
}

// ---- designs used below ----

/// Valid, with warnings: an approval with an unlabelled edge, a node unreachable from the
/// trigger, a condition leading nowhere on `false`.
fn warned_graph() -> Value {
    json!({
        "description": "valid but questionable",
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "check", "type": "condition", "expr": "out.start.n > 1"},
            {"id": "gate", "type": "approval", "question": "Go on?", "options": ["go", "stop"]},
            {"id": "report", "type": "output"},
            {"id": "stray", "type": "output", "template": "alone"},
            {"id": "tip", "type": "note", "text": "a sticky note"}
        ],
        "edges": [
            {"from": "start", "to": "check"},
            {"from": "check", "to": "gate", "label": "true"},
            {"from": "gate", "to": "report"}
        ]
    })
}

/// Invalid in many ways at once.
fn broken_graph() -> Value {
    json!({
        "budget": {"tokens": 10},
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "again", "type": "trigger", "mode": "schedule", "schedule": {"preset": "daily", "time": "25:00"}},
            {"id": "bad id", "type": "output"},
            {"id": "dup", "type": "output"},
            {"id": "dup", "type": "output"},
            {"id": "mystery", "type": "teleport"},
            {"id": "draft", "type": "agent", "max_tokens": 100, "retries": 9},
            {"id": "check", "type": "condition", "expr": "nodes.draft.words > 3"},
            {"id": "later", "type": "condition", "expr": "out.send.words > 'x'"},
            {"id": "gate", "type": "approval", "question": "Send?", "options": ["send", "skip"], "timeout_minutes": 0},
            {"id": "send", "type": "output", "deliver": "channel", "target": "pigeon:roof", "template": "{{nodes.nowhere}}"},
            {"id": "pause", "type": "wait", "seconds": 7200},
            {"id": "tip", "type": "note"}
        ],
        "edges": [
            {"from": "start", "to": "draft"},
            {"from": "draft", "to": "check"},
            {"from": "check", "to": "gate"},
            {"from": "gate", "to": "send", "label": "maybe"},
            {"from": "send", "to": "ghost"},
            {"from": "pause", "to": "pause"},
            {"from": "tip", "to": "send"},
            {"from": "send", "to": "start"}
        ]
    })
}

/// Condition on the input, a collect-only output per branch, a note.
fn branching_graph() -> Value {
    json!({
        "description": "branches on the input",
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual", "x": 40, "y": 120},
            {"id": "check", "type": "condition", "expr": "out.start.n > 3"},
            {"id": "big", "type": "output", "template": "n={{trigger.n}} in {{run.design}}"},
            {"id": "small", "type": "output"},
            {"id": "tip", "type": "note", "text": "dropped by the converter"}
        ],
        "edges": [
            {"from": "start", "to": "check"},
            {"from": "check", "to": "big", "label": "TRUE"},
            {"from": "check", "to": "small", "label": "False"}
        ]
    })
}

fn approval_graph() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Send this brief?", "options": ["send", "skip"], "timeout_minutes": 120, "on_timeout": "escalate"},
            {"id": "sent", "type": "output", "template": "sent: {{nodes.gate}}"},
            {"id": "held", "type": "output", "template": "held"}
        ],
        "edges": [
            {"from": "start", "to": "gate"},
            {"from": "gate", "to": "sent", "label": "send"},
            {"from": "gate", "to": "held", "label": "skip"}
        ]
    })
}

fn agent_graph() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "draft", "type": "agent", "prompt": "Summarise {{trigger.topic}} for {{run.design}}", "profile": "writer", "model": "llama3.2", "retries": 1},
            {"id": "done", "type": "output"}
        ],
        "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "done"}]
    })
}

fn delivery_graph() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "send", "type": "output", "deliver": "channel", "target": "telegram:123456", "template": "hello {{trigger.who}}"}
        ],
        "edges": [{"from": "start", "to": "send"}]
    })
}

fn wait_graph() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "pause", "type": "wait", "seconds": 60},
            {"id": "after", "type": "output", "template": "resumed"}
        ],
        "edges": [{"from": "start", "to": "pause"}, {"from": "pause", "to": "after"}]
    })
}

// ---- §6 validation ----

#[test]
fn validate_ok_with_warnings() {
    let env = Env::new();
    let r = env.call("workflow_design_validate", json!({"graph": warned_graph()}));
    assert_eq!(r.body["ok"], true);
    assert!(!r.body["warnings"].as_array().unwrap().is_empty());
    env.snap("validate_ok_with_warnings", &r);
}

#[test]
fn validate_errors() {
    let env = Env::new();
    let r = env.call("workflow_design_validate", json!({"graph": broken_graph()}));
    assert_eq!(r.body["ok"], false);
    let errors = r.body["errors"].as_array().unwrap();
    for key in ["node", "edge", "field"] {
        assert!(errors.iter().any(|e| e.get(key).is_some()), "no error carries {key:?}");
    }
    env.snap("validate_errors", &r);
}

/// Errors the big broken design hides behind its field errors (a node whose fields do not
/// parse is not checked further), each on an otherwise valid node.
fn edge_and_reference_errors_graph() -> Value {
    json!({
        "budget": {"tokens": 100},
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "schedule", "schedule": {"preset": "custom", "cron": "61 * * * *"}},
            {"id": "draft", "type": "agent", "prompt": "Use {{nodes.send}} and {{nodes.nowhere}} and {{item}}", "max_tokens": 300},
            {"id": "gate", "type": "approval", "question": "Send?", "options": ["send", "skip"]},
            {"id": "send", "type": "output", "deliver": "notification", "target": "discord"},
            {"id": "each", "type": "loop", "over": "{{trigger.items}}"},
            {"id": "body", "type": "output", "template": "{{item.title}} #{{loop.index}}"},
            {"id": "outside", "type": "output"}
        ],
        "edges": [
            {"from": "start", "to": "draft"},
            {"from": "draft", "to": "gate"},
            {"from": "gate", "to": "send", "label": "maybe"},
            {"from": "start", "to": "each"},
            {"from": "each", "to": "body", "label": "every"},
            {"from": "each", "to": "outside", "label": "each"},
            {"from": "outside", "to": "send"}
        ]
    })
}

#[test]
fn validate_edge_and_reference_errors() {
    let env = Env::new();
    let r = env.call("workflow_design_validate", json!({"graph": edge_and_reference_errors_graph()}));
    let messages: Vec<&str> = r.body["errors"].as_array().unwrap().iter().filter_map(|e| e["message"].as_str()).collect();
    for needle in [
        "not one of the options",
        "each or done",
        "crosses the body",
        "not upstream",
        "names no known node",
        "only available inside a loop",
        "budget.tokens",
    ] {
        assert!(messages.iter().any(|m| m.contains(needle)), "no error mentions {needle:?}: {messages:#?}");
    }
    env.snap("validate_edge_and_reference_errors", &r);
}

#[test]
fn validate_too_many_nodes() {
    let env = Env::new();
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    nodes.extend((0..50).map(|i| json!({"id": format!("note{i}"), "type": "note"})));
    let r = env.call("workflow_design_validate", json!({"graph": {"nodes": nodes, "edges": []}}));
    env.snap("validate_too_many_nodes", &r);
}

#[test]
fn validate_bad_json_shape() {
    let env = Env::new();
    let r = env.call("workflow_design_validate", json!({"graph": {"nodes": {"a": 1}, "edges": "none"}}));
    env.snap("validate_bad_json_shape", &r);
}

#[test]
fn validate_by_name_ok() {
    let env = Env::new();
    env.save("branching", branching_graph());
    let r = env.call("workflow_design_validate", json!({"name": "branching"}));
    env.snap("validate_by_name_ok", &r);
}

#[test]
fn validate_by_name_unknown() {
    let env = Env::new();
    let r = env.call("workflow_design_validate", json!({"name": "nope"}));
    env.snap("validate_by_name_unknown", &r);
}

#[test]
fn validate_neither_name_nor_graph() {
    let env = Env::new();
    let r = env.call("workflow_design_validate", json!({}));
    env.snap("validate_neither_name_nor_graph", &r);
}

// ---- §11 save / load ----

#[test]
fn save_ok() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "branching", "graph": branching_graph()}));
    assert!(env.home.path().join("workflow-designs/branching.json").is_file());
    env.snap("save_ok", &r);
}

#[test]
fn save_ok_graph_as_json_text() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "as-text", "graph": branching_graph().to_string()}));
    env.snap("save_ok_graph_as_json_text", &r);
}

#[test]
fn save_refused() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "broken", "graph": broken_graph()}));
    assert!(!env.home.path().join("workflow-designs/broken.json").exists(), "a refused design was written");
    env.snap("save_refused", &r);
}

#[test]
fn save_bad_name() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "../x", "graph": branching_graph()}));
    env.snap("save_bad_name", &r);
}

#[test]
fn save_name_too_long() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "a".repeat(65), "graph": branching_graph()}));
    env.snap("save_name_too_long", &r);
}

#[test]
fn save_name_not_a_string() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": 7, "graph": branching_graph()}));
    env.snap("save_name_not_a_string", &r);
}

#[test]
fn save_missing_graph() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "x"}));
    env.snap("save_missing_graph", &r);
}

#[test]
fn save_graph_not_json_text() {
    let env = Env::new();
    let r = env.call("workflow_design_save", json!({"name": "x", "graph": "{\"nodes\": ["}));
    env.snap("save_graph_not_json_text", &r);
}

#[test]
fn load_ok() {
    let env = Env::new();
    env.save("branching", branching_graph());
    let r = env.call("workflow_design_load", json!({"name": "branching"}));
    // Condition labels are stored lowercase; unknown and display fields survive.
    let edges = r.body["graph"]["edges"].as_array().unwrap();
    assert_eq!(edges[1]["label"], "true");
    assert_eq!(edges[2]["label"], "false");
    assert_eq!(r.body["graph"]["nodes"][0]["x"], 40);
    env.snap("load_ok", &r);
}

#[test]
fn load_unknown() {
    let env = Env::new();
    let r = env.call("workflow_design_load", json!({"name": "nope"}));
    env.snap("load_unknown", &r);
}

#[test]
fn load_missing_name() {
    let env = Env::new();
    let r = env.call("workflow_design_load", json!({}));
    env.snap("load_missing_name", &r);
}

// ---- §8 run ----

#[test]
fn run_done() {
    let env = Env::new();
    env.save("branching", branching_graph());
    let r = env.run("branching", json!({"n": 5}));
    assert_eq!(r.body["status"], "done");
    env.snap("run_done", &r);
}

#[test]
fn run_done_without_input() {
    let env = Env::new();
    env.save(
        "plain",
        json!({
            "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "out", "type": "output"}],
            "edges": [{"from": "start", "to": "out"}]
        }),
    );
    let r = env.call("workflow_design_run", json!({"name": "plain"}));
    env.snap("run_done_without_input", &r);
}

#[test]
fn run_parked_at_approval() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let r = env.run("gated", Value::Null);
    assert_eq!(r.body["status"], "awaiting_approval");
    // The deadline is the start time plus timeout_minutes.
    assert_eq!(r.body["pending"]["deadline"], "2026-11-29T11:00:00.000Z");
    env.snap("run_parked_at_approval", &r);
}

#[test]
fn run_parked_at_approval_without_deadline() {
    let env = Env::new();
    let mut g = approval_graph();
    g["nodes"][1].as_object_mut().unwrap().remove("timeout_minutes");
    g["nodes"][1].as_object_mut().unwrap().remove("on_timeout");
    g["nodes"][1].as_object_mut().unwrap().remove("options");
    g["edges"] = json!([{"from": "start", "to": "gate"}, {"from": "gate", "to": "sent", "label": "approve"}]);
    g["nodes"].as_array_mut().unwrap().pop();
    env.save("gated", g);
    let r = env.run("gated", Value::Null);
    assert_eq!(r.body["pending"]["deadline"], Value::Null);
    env.snap("run_parked_at_approval_without_deadline", &r);
}

#[test]
fn run_parked_at_agent() {
    let env = Env::new();
    env.save("agentic", agent_graph());
    let r = env.run("agentic", json!({"topic": "the weather"}));
    assert_eq!(r.body["status"], "awaiting_agent");
    assert_eq!(r.body["pending"]["prompt"], "Summarise the weather for agentic");
    env.snap("run_parked_at_agent", &r);
}

#[test]
fn run_parked_at_wait() {
    let env = Env::new();
    env.save("waiting", wait_graph());
    let r = env.run("waiting", Value::Null);
    assert_eq!(r.body["status"], "waiting");
    assert_eq!(r.body["pending"]["resume_at"], "2026-11-29T09:01:00.000Z");
    env.snap("run_parked_at_wait", &r);
}

#[test]
fn run_failed_condition_comparison() {
    let env = Env::new();
    env.save("branching", branching_graph());
    let r = env.run("branching", json!({"n": "many"}));
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["failed_node"], "check");
    env.snap("run_failed_condition_comparison", &r);
}

#[test]
fn run_failed_delivery() {
    let env = Env::new();
    env.save("deliver", delivery_graph());
    let r = env.run("deliver", json!({"who": "world"}));
    assert_eq!(r.body["deliveries"][0]["ok"], false);
    env.snap("run_failed_delivery", &r);
}

#[test]
fn run_invalid_design() {
    let env = Env::new();
    env.save_unchecked("broken", broken_graph());
    let r = env.run("broken", Value::Null);
    assert!(
        !env.home.path().join("workflow-runs").exists()
            || std::fs::read_dir(env.home.path().join("workflow-runs")).unwrap().next().is_none()
    );
    env.snap("run_invalid_design", &r);
}

#[test]
fn run_unknown_design() {
    let env = Env::new();
    let r = env.run("nope", Value::Null);
    env.snap("run_unknown_design", &r);
}

#[test]
fn run_bad_name() {
    let env = Env::new();
    let r = env.run("../../etc/passwd", Value::Null);
    env.snap("run_bad_name", &r);
}

// ---- §9 respond ----

#[test]
fn respond_answer_ok() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    // Answers match options case-insensitively and trimmed; the option is recorded.
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": " SEND "}));
    assert_eq!(r.body["status"], "done");
    assert_eq!(r.body["outputs"]["gate"]["answer"], "send");
    env.snap("respond_answer_ok", &r);
}

#[test]
fn respond_answer_not_in_options() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "maybe"}));
    env.snap("respond_answer_not_in_options", &r);
}

#[test]
fn respond_node_not_waiting() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "sent", "answer": "send"}));
    env.snap("respond_node_not_waiting", &r);
}

#[test]
fn respond_finished_run() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let first = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "skip"}));
    assert_eq!(first.status, 200);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "send"}));
    env.snap("respond_finished_run", &r);
}

#[test]
fn respond_unknown_node() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "ghost", "answer": "send"}));
    env.snap("respond_unknown_node", &r);
}

#[test]
fn respond_unknown_run() {
    let env = Env::new();
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "node": "gate", "answer": "send"}));
    env.snap("respond_unknown_run", &r);
}

#[test]
fn respond_malformed_run_id() {
    let env = Env::new();
    let r = env.call("workflow_design_respond", json!({"run_id": "../../etc/x", "node": "gate", "answer": "send"}));
    env.snap("respond_malformed_run_id", &r);
}

#[test]
fn respond_both_answer_and_output() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "send", "output": "text"}));
    env.snap("respond_both_answer_and_output", &r);
}

#[test]
fn respond_nothing_given() {
    let env = Env::new();
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "node": "gate"}));
    env.snap("respond_nothing_given", &r);
}

#[test]
fn respond_missing_node() {
    let env = Env::new();
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "answer": "send"}));
    env.snap("respond_missing_node", &r);
}

#[test]
fn respond_output_to_a_gate() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "output": "send"}));
    env.snap("respond_output_to_a_gate", &r);
}

#[test]
fn respond_agent_output_ok() {
    let env = Env::new();
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "the weather"}));
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "draft", "output": "Sunny, then rain."}));
    assert_eq!(r.body["status"], "done");
    env.snap("respond_agent_output_ok", &r);
}

#[test]
fn respond_agent_generate_without_backend() {
    let env = Env::new();
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "the weather"}));
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "draft", "agent_generate": true}));
    // The run stays parked, so a pasted answer still works.
    let still = env.call("workflow_design_respond", json!({"run_id": id, "node": "draft", "output": "ok"}));
    assert_eq!(still.body["status"], "done", "{}", still.body);
    env.snap("respond_agent_generate_without_backend", &r);
}

#[test]
fn respond_agent_generate_backend_failure() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("visual-workflow.toml"),
        "[agent]\nbackend = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[profiles.writer]\nmodel = \"m\"\n",
    )
    .unwrap();
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "the weather"}));
    let app = env.later(T0);
    let r = env.seen(tools::call(&app, "workflow_design_respond", &json!({"run_id": id, "node": "draft", "agent_generate": true})));
    env.snap("respond_agent_generate_backend_failure", &r);
}

#[test]
fn respond_agent_generate_not_a_bool() {
    let env = Env::new();
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "node": "draft", "agent_generate": "yes"}));
    env.snap("respond_agent_generate_not_a_bool", &r);
}

#[test]
fn respond_to_a_wait() {
    let env = Env::new();
    env.save("waiting", wait_graph());
    let id = env.run_id("waiting", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "pause", "output": "now"}));
    env.snap("respond_to_a_wait", &r);
}

#[test]
fn respond_after_deadline() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    // Three hours later the 120-minute gate has timed out (and, `on_timeout: escalate`, asked for
    // escalation): the late answer gets that verdict.
    let late = env.later("2026-11-29T12:00:00Z");
    let r = env.seen(tools::call(&late, "workflow_design_respond", &json!({"run_id": id, "node": "gate", "answer": "send"})));
    assert_eq!(r.body["error"], "approval timed out; escalation requested");
    env.snap("respond_after_deadline", &r);
}

// ---- requests the client got structurally wrong ----

#[test]
fn args_not_an_object() {
    let env = Env::new();
    let r = env.call("workflow_design_load", json!(["branching"]));
    env.snap("args_not_an_object", &r);
}

#[test]
fn unknown_tool() {
    let env = Env::new();
    let r = env.call("workflow_design_delete", json!({"name": "x"}));
    env.snap("unknown_tool", &r);
}

#[test]
fn call_text_malformed_json() {
    let env = Env::new();
    let r = env.seen(tools::call_text(&env.app, "workflow_design_load", "{\"name\": "));
    env.snap("call_text_malformed_json", &r);
}

#[test]
fn call_text_ok() {
    let env = Env::new();
    env.save("branching", branching_graph());
    let r = tools::call_text(&env.app, "workflow_design_validate", r#"{"name": "branching"}"#);
    assert_eq!(r, env.call("workflow_design_validate", json!({"name": "branching"})));
}

// ---- agent_generate aimed at the wrong node ----
// These answer 409 where an `answer`/`output` aimed the same way answers 404 / 400: the
// generate path looks for a parked agent step before it checks the node exists or its kind.

#[test]
fn respond_agent_generate_unknown_node() {
    let env = Env::new();
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "x"}));
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "ghost", "agent_generate": true}));
    env.snap("respond_agent_generate_unknown_node", &r);
}

#[test]
fn respond_agent_generate_to_a_gate() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "agent_generate": true}));
    env.snap("respond_agent_generate_to_a_gate", &r);
}

#[test]
fn respond_to_the_trigger() {
    let env = Env::new();
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "start", "answer": "send"}));
    env.snap("respond_to_the_trigger", &r);
}
