//! Snapshots of every JSON shape the five agent tools answer (SPEC §6, §8, §9, §11, §13).
//!
//! Each test calls the tools through the library (`vwf::tools::call`) in a fresh temporary home,
//! once on the file store and once on a fresh PostgreSQL database (`files::`, `postgres::`, the
//! same snapshot for both), and snapshots `{status, body}`, so a change to the contract or to the status policy shows up
//! as a snapshot diff. Run ids, timestamps and the home directory are redacted; the clock is
//! injected (a `FixedClock`) instead of read from `VWF_NOW`, which is process-global.

use crate::common;
use crate::on_both_backends;
use vwf_store::Wait;

on_both_backends!(
    validate_ok_with_warnings,
    validate_errors,
    validate_edge_and_reference_errors,
    validate_too_many_nodes,
    validate_bad_json_shape,
    validate_by_name_ok,
    validate_by_name_unknown,
    validate_neither_name_nor_graph,
    save_ok,
    save_ok_graph_as_json_text,
    save_refused,
    save_bad_name,
    save_name_too_long,
    save_name_not_a_string,
    save_missing_graph,
    save_graph_not_json_text,
    load_ok,
    load_unknown,
    load_missing_name,
    run_done,
    run_done_without_input,
    run_parked_at_approval,
    run_parked_at_approval_without_deadline,
    run_parked_at_agent,
    run_parked_at_wait,
    run_failed_condition_comparison,
    run_failed_delivery,
    run_invalid_design,
    run_unknown_design,
    run_bad_name,
    respond_answer_ok,
    respond_answer_not_in_options,
    respond_node_not_waiting,
    respond_finished_run,
    respond_unknown_node,
    respond_unknown_run,
    respond_malformed_run_id,
    respond_both_answer_and_output,
    respond_nothing_given,
    respond_missing_node,
    respond_output_to_a_gate,
    respond_agent_output_ok,
    respond_agent_generate_without_backend,
    respond_agent_generate_backend_failure,
    respond_agent_generate_not_a_bool,
    respond_to_a_wait,
    respond_after_deadline,
    args_not_an_object,
    unknown_tool,
    call_text_malformed_json,
    call_text_ok,
    respond_agent_generate_unknown_node,
    respond_agent_generate_to_a_gate,
    respond_to_the_trigger,
);

use std::cell::RefCell;

use common::{Backend, Home};
use insta::dynamic_redaction;
use insta::internals::{Content, ContentPath};
use serde_json::{Value, json};
use vwf::app::App;
use vwf::clock::FixedClock;
use vwf::tools::{self, Reply};
use vwf_core::names::DesignName;
use vwf_core::time::{self, Ts};

const T0: &str = "2026-11-29T09:00:00Z";

fn at(s: &str) -> Ts {
    time::parse(s).expect("test timestamp")
}

/// A fresh home on a backend and an `App` over it whose clock stands at `now`.
struct Env {
    home: Home,
    app: App,
    /// Run ids seen so far, scrubbed from every snapshot (error messages name them too).
    run_ids: RefCell<Vec<String>>,
}

impl Env {
    fn new(backend: Backend) -> Env {
        Env::at(backend, T0)
    }

    fn at(backend: Backend, now: &str) -> Env {
        let home = Home::with_backend(backend);
        let app = app_at(&home, now);
        Env { home, app, run_ids: RefCell::new(Vec::new()) }
    }

    /// Another `App` on the same home (a second process, possibly later in time).
    fn later(&self, now: &str) -> App {
        app_at(&self.home, now)
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
            assert!(self.home.stored_run_bytes(id).is_some(), "run {id} is not stored");
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
        self.app.store.save_design(&name, &graph).wait().expect("store write");
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
        // Where a saved design is stored is the one field that names the backend: the database's
        // form (its URL and the design) is checked here and shown as the file store's, so both
        // backends share one snapshot.
        if let (Some(url), Some(path)) = (&self.home.database, body.get("path").and_then(Value::as_str)) {
            let design = path.strip_prefix(&format!("{url} (design ")).and_then(|rest| rest.strip_suffix(')'));
            let design = design.unwrap_or_else(|| panic!("a design stored on {url} is shown at {path:?}"));
            body["path"] = json!(format!("[home]/workflow-designs/{design}.json"));
        }
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

fn app_at(home: &Home, now: &str) -> App {
    let app = App::open_with(home.path().to_path_buf(), home.database.clone()).expect("open app");
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

fn validate_ok_with_warnings(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_validate", json!({"graph": warned_graph()}));
    assert_eq!(r.body["ok"], true);
    assert!(!r.body["warnings"].as_array().unwrap().is_empty());
    env.snap("validate_ok_with_warnings", &r);
}

fn validate_errors(backend: Backend) {
    let env = Env::new(backend);
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

fn validate_edge_and_reference_errors(backend: Backend) {
    let env = Env::new(backend);
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

fn validate_too_many_nodes(backend: Backend) {
    let env = Env::new(backend);
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    nodes.extend((0..50).map(|i| json!({"id": format!("note{i}"), "type": "note"})));
    let r = env.call("workflow_design_validate", json!({"graph": {"nodes": nodes, "edges": []}}));
    env.snap("validate_too_many_nodes", &r);
}

fn validate_bad_json_shape(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_validate", json!({"graph": {"nodes": {"a": 1}, "edges": "none"}}));
    env.snap("validate_bad_json_shape", &r);
}

fn validate_by_name_ok(backend: Backend) {
    let env = Env::new(backend);
    env.save("branching", branching_graph());
    let r = env.call("workflow_design_validate", json!({"name": "branching"}));
    env.snap("validate_by_name_ok", &r);
}

fn validate_by_name_unknown(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_validate", json!({"name": "nope"}));
    env.snap("validate_by_name_unknown", &r);
}

fn validate_neither_name_nor_graph(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_validate", json!({}));
    env.snap("validate_neither_name_nor_graph", &r);
}

// ---- §11 save / load ----

fn save_ok(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "branching", "graph": branching_graph()}));
    assert!(env.home.stored_design("branching").is_some());
    env.snap("save_ok", &r);
}

fn save_ok_graph_as_json_text(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "as-text", "graph": branching_graph().to_string()}));
    env.snap("save_ok_graph_as_json_text", &r);
}

fn save_refused(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "broken", "graph": broken_graph()}));
    assert!(env.home.stored_design("broken").is_none(), "a refused design was written");
    env.snap("save_refused", &r);
}

fn save_bad_name(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "../x", "graph": branching_graph()}));
    env.snap("save_bad_name", &r);
}

fn save_name_too_long(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "a".repeat(65), "graph": branching_graph()}));
    env.snap("save_name_too_long", &r);
}

fn save_name_not_a_string(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": 7, "graph": branching_graph()}));
    env.snap("save_name_not_a_string", &r);
}

fn save_missing_graph(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "x"}));
    env.snap("save_missing_graph", &r);
}

fn save_graph_not_json_text(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_save", json!({"name": "x", "graph": "{\"nodes\": ["}));
    env.snap("save_graph_not_json_text", &r);
}

fn load_ok(backend: Backend) {
    let env = Env::new(backend);
    env.save("branching", branching_graph());
    let r = env.call("workflow_design_load", json!({"name": "branching"}));
    // Condition labels are stored lowercase; unknown and display fields survive.
    let edges = r.body["graph"]["edges"].as_array().unwrap();
    assert_eq!(edges[1]["label"], "true");
    assert_eq!(edges[2]["label"], "false");
    assert_eq!(r.body["graph"]["nodes"][0]["x"], 40);
    env.snap("load_ok", &r);
}

fn load_unknown(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_load", json!({"name": "nope"}));
    env.snap("load_unknown", &r);
}

fn load_missing_name(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_load", json!({}));
    env.snap("load_missing_name", &r);
}

// ---- §8 run ----

fn run_done(backend: Backend) {
    let env = Env::new(backend);
    env.save("branching", branching_graph());
    let r = env.run("branching", json!({"n": 5}));
    assert_eq!(r.body["status"], "done");
    env.snap("run_done", &r);
}

fn run_done_without_input(backend: Backend) {
    let env = Env::new(backend);
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

fn run_parked_at_approval(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let r = env.run("gated", Value::Null);
    assert_eq!(r.body["status"], "awaiting_approval");
    // The deadline is the start time plus timeout_minutes.
    assert_eq!(r.body["pending"]["deadline"], "2026-11-29T11:00:00.000Z");
    env.snap("run_parked_at_approval", &r);
}

fn run_parked_at_approval_without_deadline(backend: Backend) {
    let env = Env::new(backend);
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

fn run_parked_at_agent(backend: Backend) {
    let env = Env::new(backend);
    env.save("agentic", agent_graph());
    let r = env.run("agentic", json!({"topic": "the weather"}));
    assert_eq!(r.body["status"], "awaiting_agent");
    assert_eq!(r.body["pending"]["prompt"], "Summarise the weather for agentic");
    env.snap("run_parked_at_agent", &r);
}

fn run_parked_at_wait(backend: Backend) {
    let env = Env::new(backend);
    env.save("waiting", wait_graph());
    let r = env.run("waiting", Value::Null);
    assert_eq!(r.body["status"], "waiting");
    assert_eq!(r.body["pending"]["resume_at"], "2026-11-29T09:01:00.000Z");
    env.snap("run_parked_at_wait", &r);
}

fn run_failed_condition_comparison(backend: Backend) {
    let env = Env::new(backend);
    env.save("branching", branching_graph());
    let r = env.run("branching", json!({"n": "many"}));
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["failed_node"], "check");
    env.snap("run_failed_condition_comparison", &r);
}

fn run_failed_delivery(backend: Backend) {
    let env = Env::new(backend);
    env.save("deliver", delivery_graph());
    let r = env.run("deliver", json!({"who": "world"}));
    assert_eq!(r.body["deliveries"][0]["ok"], false);
    env.snap("run_failed_delivery", &r);
}

fn run_invalid_design(backend: Backend) {
    let env = Env::new(backend);
    env.save_unchecked("broken", broken_graph());
    let r = env.run("broken", Value::Null);
    assert!(env.home.no_run_stored(), "a refused run wrote something");
    env.snap("run_invalid_design", &r);
}

fn run_unknown_design(backend: Backend) {
    let env = Env::new(backend);
    let r = env.run("nope", Value::Null);
    env.snap("run_unknown_design", &r);
}

fn run_bad_name(backend: Backend) {
    let env = Env::new(backend);
    let r = env.run("../../etc/passwd", Value::Null);
    env.snap("run_bad_name", &r);
}

// ---- §9 respond ----

fn respond_answer_ok(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    // Answers match options case-insensitively and trimmed; the option is recorded.
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": " SEND "}));
    assert_eq!(r.body["status"], "done");
    assert_eq!(r.body["outputs"]["gate"]["answer"], "send");
    env.snap("respond_answer_ok", &r);
}

fn respond_answer_not_in_options(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "maybe"}));
    env.snap("respond_answer_not_in_options", &r);
}

fn respond_node_not_waiting(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "sent", "answer": "send"}));
    env.snap("respond_node_not_waiting", &r);
}

fn respond_finished_run(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let first = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "skip"}));
    assert_eq!(first.status, 200);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "send"}));
    env.snap("respond_finished_run", &r);
}

fn respond_unknown_node(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "ghost", "answer": "send"}));
    env.snap("respond_unknown_node", &r);
}

fn respond_unknown_run(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "node": "gate", "answer": "send"}));
    env.snap("respond_unknown_run", &r);
}

fn respond_malformed_run_id(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_respond", json!({"run_id": "../../etc/x", "node": "gate", "answer": "send"}));
    env.snap("respond_malformed_run_id", &r);
}

fn respond_both_answer_and_output(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "answer": "send", "output": "text"}));
    env.snap("respond_both_answer_and_output", &r);
}

fn respond_nothing_given(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "node": "gate"}));
    env.snap("respond_nothing_given", &r);
}

fn respond_missing_node(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "answer": "send"}));
    env.snap("respond_missing_node", &r);
}

fn respond_output_to_a_gate(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "output": "send"}));
    env.snap("respond_output_to_a_gate", &r);
}

fn respond_agent_output_ok(backend: Backend) {
    let env = Env::new(backend);
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "the weather"}));
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "draft", "output": "Sunny, then rain."}));
    assert_eq!(r.body["status"], "done");
    env.snap("respond_agent_output_ok", &r);
}

fn respond_agent_generate_without_backend(backend: Backend) {
    let env = Env::new(backend);
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "the weather"}));
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "draft", "agent_generate": true}));
    // The run stays parked, so a pasted answer still works.
    let still = env.call("workflow_design_respond", json!({"run_id": id, "node": "draft", "output": "ok"}));
    assert_eq!(still.body["status"], "done", "{}", still.body);
    env.snap("respond_agent_generate_without_backend", &r);
}

fn respond_agent_generate_backend_failure(backend: Backend) {
    let env = Env::new(backend);
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

fn respond_agent_generate_not_a_bool(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_respond", json!({"run_id": "0123456789ab", "node": "draft", "agent_generate": "yes"}));
    env.snap("respond_agent_generate_not_a_bool", &r);
}

fn respond_to_a_wait(backend: Backend) {
    let env = Env::new(backend);
    env.save("waiting", wait_graph());
    let id = env.run_id("waiting", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "pause", "output": "now"}));
    env.snap("respond_to_a_wait", &r);
}

fn respond_after_deadline(backend: Backend) {
    let env = Env::new(backend);
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

fn args_not_an_object(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_load", json!(["branching"]));
    env.snap("args_not_an_object", &r);
}

fn unknown_tool(backend: Backend) {
    let env = Env::new(backend);
    let r = env.call("workflow_design_delete", json!({"name": "x"}));
    env.snap("unknown_tool", &r);
}

fn call_text_malformed_json(backend: Backend) {
    let env = Env::new(backend);
    let r = env.seen(tools::call_text(&env.app, "workflow_design_load", "{\"name\": "));
    env.snap("call_text_malformed_json", &r);
}

fn call_text_ok(backend: Backend) {
    let env = Env::new(backend);
    env.save("branching", branching_graph());
    let r = tools::call_text(&env.app, "workflow_design_validate", r#"{"name": "branching"}"#);
    assert_eq!(r, env.call("workflow_design_validate", json!({"name": "branching"})));
}

// ---- agent_generate aimed at the wrong node ----
// These answer 409 where an `answer`/`output` aimed the same way answers 404 / 400: the
// generate path looks for a parked agent step before it checks the node exists or its kind.

fn respond_agent_generate_unknown_node(backend: Backend) {
    let env = Env::new(backend);
    env.save("agentic", agent_graph());
    let id = env.run_id("agentic", json!({"topic": "x"}));
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "ghost", "agent_generate": true}));
    env.snap("respond_agent_generate_unknown_node", &r);
}

fn respond_agent_generate_to_a_gate(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "gate", "agent_generate": true}));
    env.snap("respond_agent_generate_to_a_gate", &r);
}

fn respond_to_the_trigger(backend: Backend) {
    let env = Env::new(backend);
    env.save("gated", approval_graph());
    let id = env.run_id("gated", Value::Null);
    let r = env.call("workflow_design_respond", json!({"run_id": id, "node": "start", "answer": "send"}));
    env.snap("respond_to_the_trigger", &r);
}
