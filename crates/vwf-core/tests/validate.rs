//! The validator through its public API (SPEC §6): each error class and warning is reported with
//! the node, edge or field it concerns; and no design JSON whatsoever makes the validator, the
//! converter or the engine panic (proptest).

use chrono::{Duration, TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Delivery, Outcome, Pending, Response, Run, TriggerInfo, Work};
use vwf_core::trigger::Trigger;
use vwf_core::validate::{Issue, Report, validate};

/// Where an issue should point: `node`, `edge` and `field` must match exactly, and the message
/// must contain `says` (case-insensitive).
struct At {
    node: Option<String>,
    edge: Option<usize>,
    field: Option<String>,
    says: String,
}

fn node(id: &str, field: &str, says: &str) -> At {
    At { node: Some(id.into()), edge: None, field: Some(field.into()), says: says.into() }
}

fn node_only(id: &str, says: &str) -> At {
    At { node: Some(id.into()), edge: None, field: None, says: says.into() }
}

fn edge_at(index: usize, says: &str) -> At {
    At { node: None, edge: Some(index), field: None, says: says.into() }
}

fn design_level(field: Option<&str>, says: &str) -> At {
    At { node: None, edge: None, field: field.map(Into::into), says: says.into() }
}

fn matches(issue: &Issue, at: &At) -> bool {
    issue.node == at.node
        && issue.edge == at.edge
        && issue.field == at.field
        && issue.message.to_lowercase().contains(&at.says.to_lowercase())
}

#[track_caller]
fn assert_error(report: &Report, at: At) {
    assert!(!report.ok, "expected an error, the design is ok: {report:#?}");
    assert!(
        report.errors.iter().any(|i| matches(i, &at)),
        "no error at node={:?} edge={:?} field={:?} saying {:?}; errors: {:#?}",
        at.node,
        at.edge,
        at.field,
        at.says,
        report.errors
    );
}

#[track_caller]
fn assert_warning(report: &Report, at: At) {
    assert!(
        report.warnings.iter().any(|i| matches(i, &at)),
        "no warning at node={:?} edge={:?} field={:?} saying {:?}; report: {:#?}",
        at.node,
        at.edge,
        at.field,
        at.says,
        report
    );
}

#[track_caller]
fn assert_ok(report: &Report) {
    assert!(report.ok && report.errors.is_empty(), "expected no errors: {report:#?}");
}

fn manual() -> Value {
    json!({"id": "start", "type": "trigger", "mode": "manual"})
}

fn e(from: &str, to: &str) -> Value {
    json!({"from": from, "to": to})
}

fn l(from: &str, to: &str, label: &str) -> Value {
    json!({"from": from, "to": to, "label": label})
}

/// `start -> n` for a single node under test, plus any extra nodes and edges.
fn with_node(n: Value) -> Value {
    let id = n["id"].as_str().unwrap_or("n").to_string();
    json!({"nodes": [manual(), n], "edges": [e("start", &id)]})
}

fn agent(id: &str, prompt: &str) -> Value {
    json!({"id": id, "type": "agent", "prompt": prompt})
}

fn output(id: &str) -> Value {
    json!({"id": id, "type": "output"})
}

// ---- shape, types, ids -------------------------------------------------------------------

#[test]
fn a_complete_design_is_ok() {
    let r = validate(&json!({
        "description": "morning brief",
        "budget": {"tokens": 20000},
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "schedule", "schedule": {"preset": "weekdays", "time": "09:00"}},
            {"id": "fetch", "type": "command", "run": "curl -s https://example.org/feed.json"},
            {"id": "draft", "type": "agent", "prompt": "Summarise {{nodes.fetch}}", "retries": 1, "max_tokens": 2000},
            {"id": "check", "type": "condition", "expr": "out.draft.words > 20"},
            {"id": "gate", "type": "approval", "question": "Send this brief?", "options": ["send", "skip"], "timeout_minutes": 120},
            {"id": "send", "type": "output", "deliver": "channel", "target": "telegram:123456"},
            {"id": "tip", "type": "note", "text": "Runs every weekday", "color": "yellow"}
        ],
        "edges": [e("start", "fetch"), e("fetch", "draft"), e("draft", "check"), l("check", "gate", "true"), l("gate", "send", "send")]
    }));
    assert_ok(&r);
}

#[test]
fn bad_json_shape_is_an_error() {
    for bad in [json!(null), json!([]), json!({"nodes": 3}), json!({"nodes": [1]}), json!({"nodes": [{"id": "a"}]}), json!({"edges": []})] {
        let r = validate(&bad);
        assert!(!r.ok && !r.errors.is_empty(), "{bad} accepted");
    }
}

#[test]
fn unknown_type_is_an_error() {
    let r = validate(&with_node(json!({"id": "w", "type": "widget"})));
    assert_error(&r, node("w", "type", "unknown node type"));
}

#[test]
fn missing_required_field_is_an_error() {
    for (n, field) in [
        (json!({"id": "n", "type": "agent"}), "prompt"),
        (json!({"id": "n", "type": "condition"}), "expr"),
        (json!({"id": "n", "type": "approval"}), "question"),
        (json!({"id": "n", "type": "http"}), "url"),
        (json!({"id": "n", "type": "loop"}), "over"),
        (json!({"id": "n", "type": "emit"}), "event"),
        (json!({"id": "n", "type": "command"}), "run"),
        (json!({"id": "n", "type": "wait"}), "seconds"),
    ] {
        let r = validate(&with_node(n));
        assert_error(&r, node("n", field, ""));
    }
    let r = validate(&json!({"nodes": [{"id": "start", "type": "trigger"}], "edges": []}));
    assert_error(&r, node("start", "mode", "mode"));
}

#[test]
fn bad_node_id_is_an_error() {
    for bad in ["a b", "", "x/y", &"n".repeat(65)] {
        let r = validate(&json!({"nodes": [output(bad)], "edges": []}));
        assert_error(&r, node(bad, "id", "node id"));
    }
    assert_ok(&validate(&json!({"nodes": [output("a.b-c_1")], "edges": []})));
}

#[test]
fn duplicate_id_is_an_error() {
    let r = validate(&json!({"nodes": [manual(), output("o"), agent("o", "p")], "edges": [e("start", "o")]}));
    assert_error(&r, node("o", "id", "duplicate"));
}

#[test]
fn more_than_fifty_nodes_is_an_error_notes_included() {
    let design = |n: usize| {
        let mut nodes = vec![manual()];
        let mut edges = Vec::new();
        for i in 1..n {
            if i % 2 == 0 {
                nodes.push(json!({"id": format!("tip{i}"), "type": "note"}));
            } else {
                nodes.push(output(&format!("o{i}")));
                edges.push(e("start", &format!("o{i}")));
            }
        }
        json!({"nodes": nodes, "edges": edges})
    };
    assert_ok(&validate(&design(50)));
    let r = validate(&design(51));
    assert_error(&r, design_level(Some("nodes"), "at most 50"));
}

#[test]
fn more_than_one_trigger_is_an_error() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "again", "type": "trigger", "mode": "manual"}, output("o")],
        "edges": [e("start", "o"), e("again", "o")]
    }));
    assert_error(&r, node_only("again", "one trigger"));
    assert!(!r.errors.iter().any(|i| i.node.as_deref() == Some("start")), "{r:#?}");
}

// ---- edges -------------------------------------------------------------------------------

#[test]
fn edge_to_or_from_an_unknown_node_is_an_error() {
    let r = validate(&json!({"nodes": [manual(), output("o")], "edges": [e("start", "o"), e("o", "ghost"), e("phantom", "o")]}));
    assert_error(&r, edge_at(1, "unknown node \"ghost\""));
    assert_error(&r, edge_at(2, "unknown node \"phantom\""));
}

#[test]
fn note_nodes_are_rejected_as_edge_endpoints() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "tip", "type": "note", "text": "hi"}, output("o")],
        "edges": [e("start", "o"), e("tip", "o"), e("start", "tip")]
    }));
    assert_error(&r, edge_at(1, "note"));
    assert_error(&r, edge_at(2, "note"));
}

#[test]
fn edge_into_a_trigger_is_an_error() {
    let r = validate(&json!({"nodes": [manual(), output("o")], "edges": [e("start", "o"), e("o", "start")]}));
    assert_error(&r, edge_at(1, "into a trigger"));
}

#[test]
fn self_loop_is_an_error() {
    let r = validate(&json!({"nodes": [manual(), output("o")], "edges": [e("start", "o"), e("o", "o")]}));
    assert_error(&r, edge_at(1, "self-loop"));
}

#[test]
fn cycle_is_an_error() {
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), agent("b", "p"), agent("c", "p")],
        "edges": [e("start", "a"), e("a", "b"), e("b", "c"), e("c", "a")]
    }));
    // The error sits on the first node of the cycle and names every node on it.
    assert_error(&r, At { node: Some("a".into()), ..design_level(None, "cycle through a, b, c") });
}

fn condition_design(labels: [&str; 2]) -> Value {
    json!({
        "nodes": [manual(), agent("a", "p"), {"id": "c", "type": "condition", "expr": "out.a.words > 2"}, output("x"), output("y")],
        "edges": [e("start", "a"), e("a", "c"), l("c", "x", labels[0]), l("c", "y", labels[1])]
    })
}

#[test]
fn condition_edge_without_true_or_false_is_an_error_and_labels_are_case_insensitive() {
    let r = validate(&condition_design(["true", "maybe"]));
    assert_error(&r, edge_at(3, "true or false"));
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), {"id": "c", "type": "condition", "expr": "out.a.words > 2"}, output("x")],
        "edges": [e("start", "a"), e("a", "c"), e("c", "x")]
    }));
    assert_error(&r, edge_at(2, "true or false"));
    let r = validate(&condition_design(["True", "FALSE"]));
    assert_ok(&r);
    assert!(r.warnings.is_empty(), "{r:#?}");
    // The plan stores the labels lowercase.
    let d = Design::from_value(&condition_design(["True", "FALSE"])).unwrap();
    let plan = Plan::compile("c", &d).unwrap();
    let labels: Vec<_> = plan.steps.iter().flat_map(|s| &s.parents).filter(|p| p.from == "c").map(|p| p.label.clone()).collect();
    assert_eq!(labels, [Some("true".to_string()), Some("false".to_string())]);
}

#[test]
fn approval_edge_label_not_in_options_is_an_error() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "g", "type": "approval", "question": "q?", "options": ["send", "skip"]}, output("x"), output("y")],
        "edges": [e("start", "g"), l("g", "x", "send"), l("g", "y", "approve")]
    }));
    assert_error(&r, edge_at(2, "not one of the options"));
    assert!(!r.errors.iter().any(|i| i.edge == Some(1)), "{r:#?}");
}

#[test]
fn loop_edges_must_be_each_or_done() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "lp", "type": "loop", "over": "[1, 2]"}, agent("body", "{{item}}"), output("after"), output("odd")],
        "edges": [e("start", "lp"), l("lp", "body", "Each"), l("lp", "after", "done"), l("lp", "odd", "next")]
    }));
    assert_error(&r, edge_at(3, "each or done"));
    assert!(!r.errors.iter().any(|i| i.edge == Some(1) || i.edge == Some(2)), "{r:#?}");
}

#[test]
fn loop_body_leaking_out_is_an_error() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "lp", "type": "loop", "over": "[1, 2]"}, agent("body", "{{item}}"), output("after")],
        "edges": [e("start", "lp"), l("lp", "body", "each"), l("lp", "after", "done"), e("body", "after")]
    }));
    // `after` runs after the loop (its `done` edge), so the body's edge into it is the leak.
    assert_error(&r, edge_at(3, "body of loop"));
    // A body node also fed from outside the loop leaks too.
    let r = validate(&json!({
        "nodes": [manual(), {"id": "lp", "type": "loop", "over": "[1, 2]"}, agent("body", "{{item}}"), output("after")],
        "edges": [e("start", "lp"), l("lp", "body", "each"), e("start", "after"), e("body", "after")]
    }));
    assert_error(&r, edge_at(2, "body of loop"));
    let r = validate(&json!({
        "nodes": [manual(), {"id": "lp", "type": "loop", "over": "[1, 2]"}, agent("body", "{{item}}"), output("after")],
        "edges": [e("start", "lp"), l("lp", "body", "each"), l("lp", "after", "done")]
    }));
    assert_ok(&r);
}

// ---- ranges ------------------------------------------------------------------------------

#[test]
fn ranges_of_every_limit_are_checked() {
    let cases = [
        (json!({"id": "n", "type": "agent", "prompt": "p", "retries": 4}), "retries"),
        (json!({"id": "n", "type": "agent", "prompt": "p", "timeout_seconds": 3601}), "timeout_seconds"),
        (json!({"id": "n", "type": "approval", "question": "q", "timeout_minutes": 0}), "timeout_minutes"),
        (json!({"id": "n", "type": "approval", "question": "q", "timeout_minutes": 4321}), "timeout_minutes"),
        (json!({"id": "n", "type": "wait", "seconds": 3601}), "seconds"),
        (json!({"id": "n", "type": "wait", "seconds": 0}), "seconds"),
        (json!({"id": "n", "type": "wait", "duration": "2h"}), "duration"),
        (json!({"id": "n", "type": "loop", "over": "[1]", "max_items": 10001}), "max_items"),
        (json!({"id": "n", "type": "loop", "over": "[1]", "concurrency": 17}), "concurrency"),
        (json!({"id": "n", "type": "http", "url": "https://x.org", "timeout_seconds": 301}), "timeout_seconds"),
        (json!({"id": "n", "type": "command", "run": "true", "timeout_seconds": 0}), "timeout_seconds"),
        (json!({"id": "n", "type": "output", "retries": 1}), "retries"),
    ];
    for (n, field) in cases {
        let r = validate(&with_node(n.clone()));
        assert!(r.errors.iter().any(|i| i.node.as_deref() == Some("n") && i.field.as_deref() == Some(field)), "{n}: {r:#?}");
    }
    for n in [
        json!({"id": "n", "type": "agent", "prompt": "p", "retries": 3, "timeout_seconds": 3600}),
        json!({"id": "n", "type": "approval", "question": "q", "timeout_minutes": 4320}),
        json!({"id": "n", "type": "approval", "question": "q", "timeout_minutes": 1}),
        json!({"id": "n", "type": "wait", "seconds": 3600}),
        json!({"id": "n", "type": "wait", "duration": "1h"}),
        json!({"id": "n", "type": "http", "url": "https://x.org", "timeout_seconds": 300}),
    ] {
        assert_ok(&validate(&with_node(n)));
    }
}

// ---- conditions and templates ------------------------------------------------------------

#[test]
fn condition_not_starting_with_out_is_rejected_at_design_time() {
    for expr in ["a.words > 2", "outs.a.words > 2", "words > 2", "out.a.words >> 2", "out.a.words > two", "out.a.words > '2'"] {
        let r = validate(&json!({
            "nodes": [manual(), agent("a", "p"), {"id": "c", "type": "condition", "expr": expr}, output("x")],
            "edges": [e("start", "a"), e("a", "c"), l("c", "x", "true")]
        }));
        assert_error(&r, node("c", "expr", ""));
    }
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), {"id": "c", "type": "condition", "expr": "a.words > 2"}],
        "edges": [e("start", "a"), e("a", "c")]
    }));
    assert_error(&r, node("c", "expr", "out."));
}

#[test]
fn condition_naming_a_node_that_is_not_upstream_is_an_error() {
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), agent("side", "p"), {"id": "c", "type": "condition", "expr": "out.side.words > 2"}, output("x")],
        "edges": [e("start", "a"), e("start", "side"), e("a", "c"), l("c", "x", "true")]
    }));
    assert_error(&r, node("c", "expr", "not upstream"));
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), {"id": "c", "type": "condition", "expr": "out.ghost.words > 2"}, output("x")],
        "edges": [e("start", "a"), e("a", "c"), l("c", "x", "true")]
    }));
    assert_error(&r, node("c", "expr", "no known node"));
    // The trigger is always upstream.
    let r = validate(&json!({
        "nodes": [manual(), {"id": "c", "type": "condition", "expr": "out.start.n > 2"}, output("x"), output("y")],
        "edges": [e("start", "c"), l("c", "x", "true"), l("c", "y", "false")]
    }));
    assert_ok(&r);
}

#[test]
fn template_naming_a_node_that_is_not_upstream_is_an_error() {
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "Use {{nodes.b}}"), agent("b", "p")],
        "edges": [e("start", "a"), e("a", "b")]
    }));
    assert_error(&r, node("a", "prompt", "not upstream"));
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), {"id": "o", "type": "output", "template": "{{nodes.nobody}}"}],
        "edges": [e("start", "a"), e("a", "o")]
    }));
    assert_error(&r, node("o", "template", "no known node"));
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "{{item}}")],
        "edges": [e("start", "a")]
    }));
    assert_error(&r, node("a", "prompt", "loop body"));
    let r = validate(
        &json!({"nodes": [manual(), agent("a", "{{nodes.start}} {{trigger.x}} {{run.id}} {{ run.design }}")], "edges": [e("start", "a")]}),
    );
    assert_ok(&r);
}

#[test]
fn approval_question_is_a_template_checked_like_any_other() {
    let gate = |question: &str| json!({"id": "gate", "type": "approval", "question": question, "options": ["ship", "stop"]});
    let design = |question: &str| {
        json!({
            "nodes": [manual(), agent("build", "p"), gate(question), output("late"), output("done")],
            "edges": [e("start", "build"), e("build", "gate"), l("gate", "done", "ship"), l("gate", "late", "stop")]
        })
    };
    assert_ok(&validate(&design("Ship {{nodes.build}} for {{trigger.who}} ({{run.id}})?")));
    assert_error(&validate(&design("Ship {{nodes.late}}?")), node("gate", "question", "not upstream"));
    assert_error(&validate(&design("Ship {{nodes.nobody}}?")), node("gate", "question", "no known node"));
    assert_error(&validate(&design("Ship {{item}}?")), node("gate", "question", "loop body"));
    assert_error(&validate(&design("Ship {{nodes.build?")), node("gate", "question", ""));
}

/// An edge of a generated design: (from, to, label), by node index.
type Wire = (usize, usize, Option<&'static str>);

/// A design of `kinds` (index 0 first) wired by `edges`, node `i` named `n<i>`.
fn wired(kinds: &[&str], edges: &[Wire]) -> Value {
    let nodes: Vec<Value> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| match *k {
            "trigger" => json!({"id": format!("n{i}"), "type": "trigger", "mode": "manual"}),
            "loop" => json!({"id": format!("n{i}"), "type": "loop", "over": "[1, 2]"}),
            "note" => json!({"id": format!("n{i}"), "type": "note", "text": "t"}),
            _ => json!({"id": format!("n{i}"), "type": "agent", "prompt": "p"}),
        })
        .collect();
    let edges: Vec<Value> = edges
        .iter()
        .map(|(f, t, label)| match label {
            Some(l) => json!({"from": format!("n{f}"), "to": format!("n{t}"), "label": l}),
            None => json!({"from": format!("n{f}"), "to": format!("n{t}")}),
        })
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

/// Small acyclic designs: a trigger or not, agents, loops (their edges labelled each or done)
/// and a note, with random forward edges.
fn small_dag() -> impl Strategy<Value = (Vec<&'static str>, Vec<Wire>)> {
    (2usize..8)
        .prop_flat_map(|n| {
            let kinds = proptest::collection::vec(prop_oneof![4 => Just("agent"), 2 => Just("loop"), 1 => Just("note")], n);
            let edges = proptest::collection::vec((0..n, 0..n, any::<bool>()), 0..n * 2);
            (any::<bool>(), kinds, edges)
        })
        .prop_map(|(trigger, mut kinds, raw)| {
            if trigger {
                kinds[0] = "trigger";
            }
            let mut edges = Vec::new();
            for (a, b, each) in raw {
                let (f, t) = (a.min(b), a.max(b));
                if f == t || edges.iter().any(|(x, y, _)| *x == f && *y == t) {
                    continue;
                }
                let label = (kinds[f] == "loop").then_some(if each { "each" } else { "done" });
                edges.push((f, t, label));
            }
            (kinds, edges)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The scope the validator reports is the rule it enforces: for every agent node and every id
    /// of the design, `{{nodes.<id>}}` in its prompt is accepted exactly when the id is in the
    /// node's scope, and `{{item}}` exactly when the node has a loop.
    #[test]
    fn the_reported_scope_is_the_rule_the_validator_enforces((kinds, edges) in small_dag()) {
        let design = wired(&kinds, &edges);
        let scopes = vwf_core::validate::scopes(&design).expect("a design");
        for (i, kind) in kinds.iter().enumerate() {
            let me = format!("n{i}");
            prop_assert_eq!(scopes.contains_key(&me), *kind != "note", "{} in scopes: {:?}", me, scopes);
            if *kind != "agent" {
                continue;
            }
            let scope = &scopes[&me];
            let prompt_refused = |prompt: String| {
                let mut d = design.clone();
                d["nodes"][i]["prompt"] = json!(prompt);
                validate(&d).errors.into_iter().any(|e| e.node.as_deref() == Some(me.as_str()) && e.field.as_deref() == Some("prompt"))
            };
            for j in 0..kinds.len() {
                let other = format!("n{j}");
                let refused = prompt_refused(format!("{{{{nodes.{other}}}}}"));
                prop_assert_eq!(refused, !scope.nodes.contains(&other), "{} reading {} in {}: scope {:?}", me, other, design, scope);
            }
            prop_assert_eq!(prompt_refused("{{item}} {{loop.index}}".into()), scope.in_loop.is_none(), "{} item: {:?}", me, scope);
        }
    }
}

#[test]
fn scopes_name_upstream_nodes_the_trigger_and_the_loop_around_a_body() {
    let design = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            agent("fetch", "p"),
            {"id": "each", "type": "loop", "over": "{{nodes.fetch.data}}"},
            agent("body", "{{item}}"),
            agent("after", "p"),
            agent("side", "p"),
            {"id": "tip", "type": "note", "text": "t"}
        ],
        "edges": [e("start", "fetch"), e("fetch", "each"), l("each", "body", "each"), l("each", "after", "done")]
    });
    let scopes = vwf_core::validate::scopes(&design).unwrap();
    let names = |id: &str| scopes[id].nodes.clone();
    assert_eq!(names("fetch"), ["start"]);
    assert_eq!(names("body"), ["start", "fetch"], "a body step reads upstream steps but not its loop");
    assert_eq!(scopes["body"].in_loop.as_deref(), Some("each"));
    assert_eq!(names("after"), ["start", "fetch", "each"]);
    assert_eq!(scopes["after"].in_loop, None);
    assert_eq!(names("side"), ["start"], "the trigger is always readable");
    assert!(!scopes.contains_key("tip"), "a note has no scope");
    assert_eq!(serde_json::to_value(&scopes["body"]).unwrap(), json!({"nodes": ["start", "fetch"], "loop": "each"}));
    assert_eq!(vwf_core::validate::scopes(&json!([1])), None);
}

// ---- schedules, deliveries, budget -------------------------------------------------------

#[test]
fn bad_schedule_is_an_error() {
    let sched = |s: Value| {
        json!({"nodes": [{"id": "start", "type": "trigger", "mode": "schedule", "schedule": s}, output("o")],
                                  "edges": [e("start", "o")]})
    };
    let r = validate(&sched(json!({"preset": "custom", "cron": "* * * *"})));
    assert_error(&r, node("start", "schedule", "field"));
    let r = validate(&sched(json!({"preset": "daily", "time": "25:00"})));
    assert_error(&r, node("start", "schedule", ""));
    let r = validate(&sched(json!({"preset": "daily", "time": "9am"})));
    assert_error(&r, node("start", "schedule", ""));
    let r = validate(&sched(json!({"preset": "custom", "cron": "61 * * * *"})));
    assert_error(&r, node("start", "schedule", ""));
    assert!(validate(&sched(json!({"preset": "custom", "cron": "*/15 9-17 * * 1-5"}))).ok);
    assert!(validate(&sched(json!({"preset": "daily", "time": "23:59"}))).ok);
}

#[test]
fn bad_delivery_target_is_an_error() {
    for (deliver, target) in
        [("channel", "telegram"), ("channel", "telegram:abc"), ("channel", "sms:123"), ("notification", "discord"), ("channel", "slack:")]
    {
        let r = validate(&with_node(json!({"id": "send", "type": "output", "deliver": deliver, "target": target})));
        assert_error(&r, node("send", "target", ""));
    }
    let r = validate(&with_node(json!({"id": "send", "type": "output", "deliver": "channel"})));
    assert_error(&r, node("send", "target", "needs"));
    let r = validate(&with_node(json!({"id": "send", "type": "output", "deliver": "pigeon", "target": "telegram"})));
    assert_error(&r, node("send", "deliver", ""));
    assert!(validate(&with_node(json!({"id": "send", "type": "output", "deliver": "channel", "target": "telegram:-100123:17585"}))).ok);
}

#[test]
fn budget_below_the_sum_of_agent_max_tokens_is_an_error() {
    let d = |budget: u64| {
        json!({
            "budget": {"tokens": budget},
            "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "p", "max_tokens": 600}, {"id": "b", "type": "agent", "prompt": "p", "max_tokens": 500}],
            "edges": [e("start", "a"), e("a", "b")]
        })
    };
    assert_error(&validate(&d(1000)), design_level(Some("budget"), "below the sum"));
    assert_ok(&validate(&d(1100)));
    let r = validate(&json!({"budget": {"tokens": "lots"}, "nodes": [], "edges": []}));
    assert_error(&r, design_level(Some("budget"), ""));
}

// ---- warnings ----------------------------------------------------------------------------

#[test]
fn unreachable_node_is_a_warning() {
    let r = validate(&json!({"nodes": [manual(), output("o"), output("island")], "edges": [e("start", "o")]}));
    assert_ok(&r);
    assert_warning(&r, node_only("island", "cannot be reached"));
    assert!(!r.warnings.iter().any(|w| w.node.as_deref() == Some("o")), "{r:#?}");
}

#[test]
fn a_design_that_emits_an_event_its_own_trigger_takes_is_a_warning() {
    let design = |sources: Value, event: &str| {
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "event", "sources": sources},
            {"id": "again", "type": "emit", "event": event}
        ], "edges": [e("start", "again")]})
    };
    for (sources, event) in [(json!(["storm"]), "storm"), (json!(["other", "storm.*"]), "storm.more")] {
        let r = validate(&design(sources, event));
        assert_ok(&r);
        assert_warning(&r, node("again", "event", "which this design's own trigger \"start\" listens to"));
    }
    let r = validate(&design(json!(["storm"]), "calm"));
    assert!(!r.warnings.iter().any(|w| w.message.contains("listens to")), "{r:#?}");
    // A manual design that emits starts nothing of its own.
    let r = validate(&json!({"nodes": [manual(), {"id": "again", "type": "emit", "event": "storm"}], "edges": [e("start", "again")]}));
    assert!(!r.warnings.iter().any(|w| w.message.contains("listens to")), "{r:#?}");
}

#[test]
fn approval_with_an_unlabelled_edge_is_a_warning() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "g", "type": "approval", "question": "q?"}, output("x"), output("y")],
        "edges": [e("start", "g"), l("g", "x", "approve"), e("g", "y")]
    }));
    assert_ok(&r);
    assert_warning(&r, edge_at(2, "no label"));
}

#[test]
fn condition_with_a_missing_branch_is_a_warning() {
    let r = validate(&json!({
        "nodes": [manual(), agent("a", "p"), {"id": "c", "type": "condition", "expr": "out.a.words > 2"}, output("x")],
        "edges": [e("start", "a"), e("a", "c"), l("c", "x", "true")]
    }));
    assert_ok(&r);
    assert_warning(&r, node_only("c", "false"));
}

#[test]
fn output_on_a_scheduled_design_that_neither_delivers_nor_feeds_anything_is_a_warning() {
    let d = |trigger: Value, send: Value| json!({"nodes": [trigger, agent("a", "p"), send], "edges": [e("start", "a"), e("a", "send")]});
    let scheduled = json!({"id": "start", "type": "trigger", "mode": "schedule", "schedule": {"preset": "daily", "time": "09:00"}});
    let r = validate(&d(scheduled.clone(), output("send")));
    assert_ok(&r);
    assert_warning(&r, node_only("send", "nobody will see it"));
    let quiet = |r: &Report| !r.warnings.iter().any(|w| w.node.as_deref() == Some("send"));
    assert!(quiet(&validate(&d(scheduled, json!({"id": "send", "type": "output", "deliver": "notification", "target": "telegram"})))));
    assert!(quiet(&validate(&d(manual(), output("send")))));
}

// ---- no input panics -----------------------------------------------------------------------

const TYPES: [&str; 13] =
    ["trigger", "agent", "condition", "approval", "output", "note", "command", "http", "loop", "wait", "emit", "widget", ""];
const IDS: [&str; 9] = ["start", "a", "b", "a.b", "c", "gate", "out", "x y", ""];
const LABELS: [&str; 10] = ["true", "false", "True", "each", "done", "approve", "reject", "yes", "send", "junk"];

/// Any JSON value, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0u64..5000).prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[ -~]{0,12}".prop_map(Value::String),
        prop::sample::select(vec!["{{nodes.a}}", "{{trigger.x}}", "{{item}}", "{{", "}}", "out.a > 1", "09:00", "telegram:1"])
            .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Plausible values for a node field, mostly valid, sometimes junk.
fn field_value(key: &'static str) -> BoxedStrategy<Value> {
    let good: Vec<Value> = match key {
        "mode" => vec![json!("manual"), json!("schedule"), json!("event"), json!("heartbeat"), json!("bogus")],
        "schedule" => {
            vec![json!({"preset": "daily", "time": "09:00"}), json!({"preset": "custom", "cron": "* * * *"}), json!({"preset": "hourly"})]
        }
        "sources" => vec![json!(["deploy.done"]), json!([])],
        "every" => vec![json!("30m"), json!("5s")],
        "prompt" | "template" | "over" | "run" | "payload" | "url" | "cwd" => vec![
            json!("hello"),
            json!("{{nodes.a}}"),
            json!("{{nodes.a.b.words}}"),
            json!("{{trigger.x}}"),
            json!("{{nodes.start}}"),
            json!("{{item.title}} {{loop.index}}"),
            json!("https://example.org/{{run.id}}"),
            json!("[1, 2, 3]"),
            json!("{{nodes.c.data.k}}"),
            json!({"k": "{{nodes.b}}"}),
        ],
        "expr" => vec![
            json!("out.a.words > 1"),
            json!("out.start.x == 1"),
            json!("out.a.b == 'x'"),
            json!("out.b.text != \"no\""),
            json!("out.a.data == null"),
            json!("out.c.value == true"),
            json!("a > 1"),
            json!("out.a > 'x'"),
        ],
        "question" | "event" | "text" | "profile" | "model" => vec![json!("q"), json!("deploy.done"), json!("")],
        "options" => vec![json!(["approve", "reject"]), json!(["yes", "send"]), json!([]), json!(["a", "a"])],
        "retries" => vec![json!(0), json!(1), json!(3), json!(4)],
        "max_tokens" => vec![json!(10), json!(1_000_000)],
        "timeout_minutes" => vec![json!(1), json!(60), json!(0)],
        "on_timeout" => vec![json!("reject"), json!("escalate"), json!("explode")],
        "deliver" => vec![json!("channel"), json!("notification"), json!("pigeon")],
        "target" => vec![json!("telegram:123"), json!("telegram"), json!("slack:#ops"), json!("sms:1")],
        "argv" => vec![json!(["echo", "{{nodes.a}}"]), json!([])],
        "method" => vec![json!("POST"), json!("FETCH")],
        "seconds" => vec![json!(1), json!(30), json!(3601)],
        "duration" => vec![json!("5m"), json!("2h")],
        "max_items" | "concurrency" | "timeout_seconds" => vec![json!(1), json!(16), json!(301), json!(20000)],
        _ => vec![json!(1)],
    };
    prop_oneof![9 => prop::sample::select(good), 1 => any_json()].boxed()
}

const FIELDS: [&str; 32] = [
    "mode",
    "schedule",
    "sources",
    "every",
    "prompt",
    "template",
    "over",
    "run",
    "payload",
    "url",
    "cwd",
    "expr",
    "question",
    "event",
    "text",
    "profile",
    "model",
    "options",
    "retries",
    "max_tokens",
    "timeout_minutes",
    "on_timeout",
    "deliver",
    "target",
    "argv",
    "method",
    "seconds",
    "duration",
    "max_items",
    "concurrency",
    "timeout_seconds",
    "x",
];

/// The fields a node of `kind` needs to be valid (values still drawn at random).
fn needed(kind: &str) -> &'static [&'static str] {
    match kind {
        "trigger" => &["mode"],
        "agent" => &["prompt"],
        "condition" => &["expr"],
        "approval" => &["question"],
        "command" => &["run"],
        "http" => &["url"],
        "loop" => &["over"],
        "wait" => &["seconds"],
        "emit" => &["event"],
        _ => &[],
    }
}

fn node_strategy() -> impl Strategy<Value = Value> {
    let id = prop_oneof![8 => prop::sample::select(IDS.to_vec()).prop_map(|s| json!(s)), 1 => any_json()];
    let kind = prop_oneof![10 => prop::sample::select(TYPES.to_vec()).prop_map(|s| json!(s)), 1 => any_json()];
    (id, kind, prop::collection::vec(prop::sample::select(FIELDS.to_vec()), 0..3), any::<bool>()).prop_flat_map(
        |(id, kind, extra, typed)| {
            let k = kind.as_str().unwrap_or("").to_string();
            let mut keys: Vec<&'static str> = if typed { needed(&k).to_vec() } else { Vec::new() };
            keys.extend(extra);
            keys.dedup();
            let values: Vec<BoxedStrategy<(&'static str, Value)>> =
                keys.into_iter().map(|key| field_value(key).prop_map(move |v| (key, v)).boxed()).collect();
            (Just(id), Just(kind), values).prop_map(|(id, kind, fields)| {
                let mut m = Map::new();
                m.insert("id".into(), id);
                m.insert("type".into(), kind);
                for (k, v) in fields {
                    m.insert(k.into(), v);
                }
                Value::Object(m)
            })
        },
    )
}

fn edge_strategy() -> impl Strategy<Value = Value> {
    let end = || prop_oneof![10 => prop::sample::select(IDS.to_vec()).prop_map(|s| json!(s)), 1 => any_json()];
    let label = prop_oneof![2 => Just(None), 3 => prop::sample::select(LABELS.to_vec()).prop_map(|s| Some(json!(s))), 1 => any_json().prop_map(Some)];
    (end(), end(), label).prop_map(|(from, to, label)| {
        let mut m = Map::new();
        m.insert("from".into(), from);
        m.insert("to".into(), to);
        if let Some(l) = label {
            m.insert("label".into(), l);
        }
        Value::Object(m)
    })
}

fn design_strategy() -> impl Strategy<Value = Value> {
    let graph = (
        prop::collection::vec(node_strategy(), 0..8),
        prop::collection::vec(edge_strategy(), 0..10),
        prop::option::of(prop_oneof![(0u64..3000).prop_map(|t| json!({"tokens": t})), any_json()]),
        any::<bool>(),
    )
        .prop_map(|(nodes, edges, budget, forward_only)| {
            // Half the time keep only edges that go forward in `nodes`, so acyclic designs are common.
            let pos = |v: &Value| nodes.iter().position(|n| n.get("id") == Some(v));
            let edges: Vec<Value> = edges
                .into_iter()
                .filter(|e| !forward_only || matches!((pos(&e["from"]), pos(&e["to"])), (Some(f), Some(t)) if f < t))
                .collect();
            let mut m = Map::new();
            m.insert("nodes".into(), Value::Array(nodes));
            m.insert("edges".into(), Value::Array(edges));
            if let Some(b) = budget {
                m.insert("budget".into(), b);
            }
            Value::Object(m)
        });
    prop_oneof![
        12 => graph,
        1 => any_json(),
        1 => prop::collection::vec(prop_oneof!["[a-z ]{0,10}".prop_map(Value::String), node_strategy()], 0..4)
            .prop_map(|acts| json!({"activities": acts})),
    ]
}

const SHAPED_IDS: [&str; 12] = ["start", "a", "a.b", "b", "c", "c.d", "e", "f", "g", "h", "i", "j"];
const SHAPED_KINDS: [&str; 12] =
    ["agent", "agent", "condition", "condition", "approval", "output", "output", "command", "http", "wait", "emit", "note"];

/// One node of a shaped design, as raw choices: (kind, parent, variant, label, extra parent).
type Choice = (u8, u8, u8, u8, u8);

/// A design shaped to be valid more often than not: forward edges only, labels that fit the
/// source's type, references to a parent. Small choices still break it (notes with edges,
/// references to non-ancestors, junk labels, loops, ranges), so both verdicts are common.
fn shaped_design(choices: &[Choice], trigger: u8, budget: Option<u64>) -> Value {
    let mut nodes: Vec<Value> = Vec::new();
    let mut edges: Vec<Value> = Vec::new();
    let mut kinds: Vec<&str> = Vec::new();
    let mut options: Vec<Vec<String>> = Vec::new();
    let label_for = |kind: &str, opts: &[String], sel: u8| -> Option<String> {
        if sel >= 240 {
            return Some("junk".into());
        }
        match kind {
            "condition" => Some(["true", "false", "True"][sel as usize % 3].into()),
            "approval" => (!sel.is_multiple_of(4)).then(|| opts[sel as usize % opts.len()].clone()),
            "loop" => Some(["each", "done"][sel as usize % 2].into()),
            _ => None,
        }
    };
    for (i, &(k, p, v, lab, extra)) in choices.iter().enumerate().take(SHAPED_IDS.len()) {
        let id = SHAPED_IDS[i];
        let v = v as usize;
        if i == 0 && trigger % 4 != 3 {
            let t = match trigger % 4 {
                0 => json!({"id": id, "type": "trigger", "mode": "manual"}),
                1 => json!({"id": id, "type": "trigger", "mode": "schedule", "schedule": {"preset": "weekdays", "time": "09:00"}}),
                _ => json!({"id": id, "type": "trigger", "mode": "event", "sources": ["deploy.*"]}),
            };
            nodes.push(t);
            kinds.push("trigger");
            options.push(Vec::new());
            continue;
        }
        let kind = if v % 29 == 28 { "loop" } else { SHAPED_KINDS[k as usize % SHAPED_KINDS.len()] };
        let parent = (i > 0).then(|| p as usize % i);
        let pid = parent.map_or("start", |p| SHAPED_IDS[p]);
        let mut opts = Vec::new();
        let node = match kind {
            "agent" => {
                let prompt = [
                    format!("Summarise {{{{nodes.{pid}}}}}"),
                    "plain prompt".to_string(),
                    "for {{trigger.x}}".to_string(),
                    format!("{{{{nodes.{pid}.title}}}}"),
                    format!("{{{{ nodes.{pid}.words }}}} words"),
                ][v % 5]
                    .clone();
                let mut n = json!({"id": id, "type": "agent", "prompt": prompt, "retries": v % 4, "profile": "writer"});
                if v.is_multiple_of(3) {
                    n["max_tokens"] = json!(50);
                }
                n
            }
            "condition" => {
                let expr = [
                    format!("out.{pid}.words > 1"),
                    format!("out.{pid}.text == 'x'"),
                    format!("out.{pid}.data.k == \"v\""),
                    "out.start.x == 1".to_string(),
                    format!("out.{pid}.value == true"),
                    format!("out.{pid}.title != 'no'"),
                    format!("out.{pid}.chars <= 3"),
                ][v % 7]
                    .clone();
                json!({"id": id, "type": "condition", "expr": expr})
            }
            "approval" => {
                opts = match v % 3 {
                    0 => vec!["approve".to_string(), "reject".to_string()],
                    1 => vec!["send".to_string(), "skip".to_string()],
                    _ => vec!["yes".to_string()],
                };
                let on_timeout = ["reject", "escalate"][v % 2];
                let mut n = json!({"id": id, "type": "approval", "question": "Go?", "on_timeout": on_timeout});
                if !v.is_multiple_of(3) {
                    n["options"] = json!(opts);
                }
                if !v.is_multiple_of(5) {
                    n["timeout_minutes"] = json!([1, 60, 4320, 4321][v % 4]);
                }
                n
            }
            "output" => match v % 4 {
                0 => json!({"id": id, "type": "output"}),
                1 => json!({"id": id, "type": "output", "template": format!("{{{{nodes.{pid}}}}} done")}),
                2 => json!({"id": id, "type": "output", "deliver": "channel", "target": "telegram:123"}),
                _ => json!({"id": id, "type": "output", "deliver": "notification", "target": "slack"}),
            },
            "command" => match v % 2 {
                0 => json!({"id": id, "type": "command", "run": format!("echo {{{{nodes.{pid}}}}}")}),
                _ => json!({"id": id, "type": "command", "argv": ["echo", "{{trigger.x}}"], "env": {"K": "{{run.id}}"}}),
            },
            "http" => {
                let timeout = [30, 300, 301][v % 3];
                json!({"id": id, "type": "http", "url": format!("https://example.org/{{{{nodes.{pid}.words}}}}"), "method": "POST",
                       "body": {"q": format!("{{{{nodes.{pid}}}}}")}, "timeout_seconds": timeout})
            }
            "wait" => match v % 3 {
                0 => json!({"id": id, "type": "wait", "seconds": 30}),
                1 => json!({"id": id, "type": "wait", "duration": "5m"}),
                _ => json!({"id": id, "type": "wait", "seconds": 3600}),
            },
            "emit" => json!({"id": id, "type": "emit", "event": "deploy.done", "payload": {"from": format!("{{{{nodes.{pid}}}}}")}}),
            "loop" => json!({"id": id, "type": "loop", "over": "[1, 2]"}),
            _ => json!({"id": id, "type": "note", "text": "hi"}),
        };
        nodes.push(node);
        kinds.push(kind);
        options.push(opts);
        // Notes mostly stay unconnected; sometimes they get an edge (an error).
        let connect = |p: &usize| (kind != "note" || lab.is_multiple_of(7)) && (kinds[*p] != "note" || lab.is_multiple_of(11));
        if let Some(p) = parent.filter(connect) {
            let mut edge = json!({"from": SHAPED_IDS[p], "to": id});
            if let Some(l) = label_for(kinds[p], &options[p], lab) {
                edge["label"] = json!(l);
            }
            edges.push(edge);
        }
        if extra.is_multiple_of(3) && i > 1 {
            let q = extra as usize % i;
            if Some(q) != parent && kinds[q] != "note" && kind != "note" {
                let mut edge = json!({"from": SHAPED_IDS[q], "to": id});
                if let Some(l) = label_for(kinds[q], &options[q], lab.wrapping_add(extra)) {
                    edge["label"] = json!(l);
                }
                edges.push(edge);
            }
        }
    }
    let mut design = json!({"nodes": nodes, "edges": edges});
    if let Some(b) = budget {
        design["budget"] = json!({"tokens": b});
    }
    design
}

fn shaped_strategy() -> impl Strategy<Value = Value> {
    (prop::collection::vec(any::<Choice>(), 1..12), any::<u8>(), prop::option::weighted(0.2, 0u64..400))
        .prop_map(|(choices, trigger, budget)| shaped_design(&choices, trigger, budget))
}

/// Drives a run to its end, answering every task, gate and parked agent, and sleeping through
/// waits by moving the clock. Returns the run; panics if it never finishes.
/// `agents`: 0 parks each agent's first attempt, 1 fails it, 2 answers at once. Odd `texts`
/// make every step answer JSON, even ones plain text. Every step reports `tokens` used. The
/// clock never moves past the last instant a timestamp can carry, as no real clock does.
fn drive_everything(run: &mut Run, mut now: vwf_core::time::Ts, agents: u8, texts: u8, tokens: u64) {
    let text = if texts % 2 == 1 { r#"{"k": "v", "title": "t"}"# } else { "x" };
    for _ in 0..500 {
        match run.advance(now) {
            Advance::Settled(_) => continue,
            Advance::Tasks(tasks) => {
                for t in tasks {
                    let outcome = match &t.work {
                        Work::Agent { .. } if agents == 0 && t.attempt == 1 => Outcome::ParkAgent,
                        Work::Agent { .. } if agents == 1 && t.attempt == 1 => Outcome::failed("flaky"),
                        Work::Deliver { target, .. } => Outcome::Delivered(Delivery {
                            node: t.node.to_string(),
                            target: target.clone(),
                            ok: true,
                            detail: "message_id 1".into(),
                            at: now,
                        }),
                        _ => Outcome::Done { text: text.into(), extra: Map::new(), tokens },
                    };
                    run.complete(&t.node, outcome, now).expect("a running step accepts its outcome");
                }
            }
            Advance::Idle => {
                if run.status().is_finished() {
                    // Both are no-ops on a finished run, and never panic.
                    assert!(!run.enforce_deadlines(now));
                    let _ = run.result();
                    return;
                }
                let pending = run.pending().cloned().expect("an idle, unfinished run waits on something");
                match pending {
                    Pending::Approval { node, options, .. } => {
                        let answer = options.first().cloned().unwrap_or_default();
                        run.respond(node.own().expect("its own gate"), Response::Answer(answer.into()), now).expect("answer accepted");
                    }
                    Pending::Agent { node, .. } => {
                        run.respond(node.own().expect("its own step"), Response::Output("pasted".into()), now).expect("output accepted")
                    }
                    Pending::Wait { resume_at, .. } => now = resume_at,
                    Pending::Event { event, .. } => {
                        run.receive_event(&event, &Value::Null, now);
                    }
                    // No runner makes child runs here: a design step's child is refused.
                    Pending::Child { node, .. } => run.child_refused(node.own().expect("its own step"), "no child runs in this test", now),
                }
                now = now.checked_add_signed(Duration::seconds(1)).unwrap_or(now).min(vwf_core::time::latest());
            }
        }
    }
    panic!("run did not finish: {:#}", run.result());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_designs_never_panic_the_validator_the_converter_or_the_engine(design in prop_oneof![design_strategy(), shaped_strategy()], agents in 0u8..3, texts in any::<u8>()) {
        let report = validate(&design);
        prop_assert_eq!(report.ok, report.errors.is_empty());
        // The report itself is valid contract JSON.
        let _ = serde_json::to_value(&report).expect("report serializes");
        // So is the scope of every node, for whatever parses as a design.
        prop_assert_eq!(vwf_core::validate::scopes(&design).is_some(), Design::from_value(&design).is_ok());
        if report.ok {
            let parsed = Design::from_value(&design).expect("a valid design parses");
            let plan = Plan::compile("fuzz", &parsed).expect("a valid design compiles");
            let now = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
            let mut run = Run::start(plan, vwf_core::names::RunId::parse("0123456789ab").expect("an id"), TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"x": 1})), now);
            drive_everything(&mut run, now, agents, texts, 7);
            // Retrying a failed run never panics either, and finishes too.
            if run.status() == vwf_core::run::Status::Failed {
                run.retry(now).expect("a failed run can be retried");
                drive_everything(&mut run, now, agents, texts, 7);
            }
        } else {
            let parsed = Design::from_value(&design);
            if let Ok(d) = parsed {
                prop_assert!(Plan::compile("fuzz", &d).is_err(), "an invalid design must not compile");
            }
        }
    }
}

#[test]
fn a_trigger_path_named_like_a_count_is_a_warning() {
    let r = validate(&json!({
        "nodes": [manual(), {"id": "o", "type": "output", "template": "{{trigger.words}} and {{trigger.data.words}} and {{trigger.title}}"}],
        "edges": [e("start", "o")]
    }));
    assert!(r.ok, "{:?}", r.errors);
    let shadowed: Vec<&Issue> = r.warnings.iter().filter(|w| w.message.contains("trigger.data.words")).collect();
    assert_eq!(shadowed.len(), 1, "{:?}", r.warnings);
    assert_eq!((shadowed[0].node.as_deref(), shadowed[0].field.as_deref()), (Some("o"), Some("template")));
}

// ---- numbers -------------------------------------------------------------------------------
//
// Every number a design can carry, from every node type and trigger mode, is tried with values
// of the whole class (0 to u64::MAX, negatives down to i64::MIN, fractions, huge floats, the
// bounds of its range and one past them): the validator accepts it only within its range, and an
// accepted design compiles, runs at any instant a clock can report, settles its deadlines, emits,
// previews its schedule and heartbeat, and leaves a run that reads back. Nothing panics.

use vwf_core::limits;
use vwf_core::time::{self, Ts};

/// What the contract allows for a field.
#[derive(Debug, Clone, Copy)]
enum Allowed {
    /// A whole number in the inclusive range.
    Whole(u64, u64),
    /// Any number within the canvas bound of zero.
    Coordinate,
    /// A duration string whose seconds lie in the inclusive range.
    Duration(u64, u64),
}

/// One numeric field: the node carrying it (`id` "n", or the trigger "start"), where the number
/// sits inside it, the field an error about it names, and its range.
struct NumberField {
    node: Value,
    path: &'static [&'static str],
    reported_as: &'static str,
    allowed: Allowed,
}

fn number_fields() -> Vec<NumberField> {
    use Allowed::*;
    let field = |node: Value, path: &'static [&'static str], reported_as: &'static str, allowed: Allowed| NumberField {
        node,
        path,
        reported_as,
        allowed,
    };
    let agent = json!({"id": "n", "type": "agent", "prompt": "p"});
    let approval = json!({"id": "n", "type": "approval", "question": "q", "timeout_minutes": 1});
    let command = json!({"id": "n", "type": "command", "run": "true"});
    let http = json!({"id": "n", "type": "http", "url": "https://example.org"});
    let lp = json!({"id": "n", "type": "loop", "over": "[1, 2]"});
    let wait = json!({"id": "n", "type": "wait"});
    let event = json!({"id": "start", "type": "trigger", "mode": "event", "sources": ["ping"]});
    let folder = json!({"id": "start", "type": "trigger", "mode": "folder", "path": "in"});
    let watch = json!({"id": "start", "type": "trigger", "mode": "watch", "command": "tail -f x"});
    let heartbeat =
        json!({"id": "start", "type": "trigger", "mode": "heartbeat", "every": "30m", "window": "08:00-18:00", "tz": "America/New_York"});
    let hourly = json!({"id": "start", "type": "trigger", "mode": "schedule", "schedule": {"preset": "hourly", "tz": "Europe/Berlin"}});
    let weekly = json!({"id": "start", "type": "trigger", "mode": "schedule", "schedule": {"preset": "weekly", "time": "09:00", "tz": "America/New_York"}});
    let mut fields = vec![
        field(agent.clone(), &["retries"], "retries", Whole(limits::AGENT_RETRIES.0, limits::AGENT_RETRIES.1)),
        field(
            agent.clone(),
            &["timeout_seconds"],
            "timeout_seconds",
            Whole(limits::AGENT_TIMEOUT_SECONDS.0, limits::AGENT_TIMEOUT_SECONDS.1),
        ),
        field(agent.clone(), &["max_tokens"], "max_tokens", Whole(limits::AGENT_MAX_TOKENS.0, limits::AGENT_MAX_TOKENS.1)),
        field(
            approval.clone(),
            &["timeout_minutes"],
            "timeout_minutes",
            Whole(limits::APPROVAL_TIMEOUT_MINUTES.0, limits::APPROVAL_TIMEOUT_MINUTES.1),
        ),
        field(
            command.clone(),
            &["timeout_seconds"],
            "timeout_seconds",
            Whole(limits::COMMAND_TIMEOUT_SECONDS.0, limits::COMMAND_TIMEOUT_SECONDS.1),
        ),
        field(http.clone(), &["timeout_seconds"], "timeout_seconds", Whole(limits::HTTP_TIMEOUT_SECONDS.0, limits::HTTP_TIMEOUT_SECONDS.1)),
        field(http.clone(), &["accept"], "accept", Whole(100, 599)),
        field(lp.clone(), &["max_items"], "max_items", Whole(limits::LOOP_MAX_ITEMS.0, limits::LOOP_MAX_ITEMS.1)),
        field(lp.clone(), &["concurrency"], "concurrency", Whole(limits::LOOP_CONCURRENCY.0, limits::LOOP_CONCURRENCY.1)),
        field(wait.clone(), &["seconds"], "seconds", Whole(limits::WAIT_SECONDS.0, limits::WAIT_SECONDS.1)),
        field(wait, &["duration"], "duration", Duration(limits::WAIT_SECONDS.0, limits::WAIT_SECONDS.1)),
        field(event, &["cooldown_seconds"], "cooldown_seconds", Whole(limits::EVENT_COOLDOWN_SECONDS.0, limits::EVENT_COOLDOWN_SECONDS.1)),
        field(folder, &["debounce_ms"], "debounce_ms", Whole(limits::FOLDER_DEBOUNCE_MS.0, limits::FOLDER_DEBOUNCE_MS.1)),
        field(
            watch.clone(),
            &["restart_delay_seconds"],
            "restart_delay_seconds",
            Whole(limits::WATCH_RESTART_DELAY_SECONDS.0, limits::WATCH_RESTART_DELAY_SECONDS.1),
        ),
        field(watch, &["dedupe_minutes"], "dedupe_minutes", Whole(limits::WATCH_DEDUPE_MINUTES.0, limits::WATCH_DEDUPE_MINUTES.1)),
        field(heartbeat, &["every"], "every", Duration(limits::HEARTBEAT_SECONDS.0, limits::HEARTBEAT_SECONDS.1)),
        field(hourly, &["schedule", "minute"], "schedule", Whole(0, 59)),
        field(weekly, &["schedule", "dow"], "schedule", Whole(0, 6)),
        // The budget is a design field; the agent beside it asks for one token.
        field(
            json!({"id": "n", "type": "agent", "prompt": "p", "max_tokens": 1}),
            &["budget", "tokens"],
            "budget",
            Whole(limits::BUDGET_TOKENS.0, limits::BUDGET_TOKENS.1),
        ),
    ];
    // Every node type carries a canvas position.
    let others = [
        json!({"id": "n", "type": "condition", "expr": "out.start.x == 1"}),
        json!({"id": "n", "type": "output"}),
        json!({"id": "n", "type": "note", "text": "t"}),
        json!({"id": "n", "type": "wait", "seconds": 1}),
        json!({"id": "n", "type": "emit", "event": "ping"}),
        json!({"id": "start", "type": "trigger", "mode": "manual"}),
    ];
    for node in [agent, approval, command, http, lp].into_iter().chain(others) {
        fields.push(field(node.clone(), &["x"], "x", Coordinate));
        fields.push(field(node, &["y"], "y", Coordinate));
    }
    fields
}

/// A number of the whole class a JSON number can be, bounds of every limit included.
fn any_number() -> impl Strategy<Value = Value> {
    let mut edges: Vec<Value> = vec![
        json!(u64::MAX),
        json!(i64::MIN),
        json!(i64::MAX),
        json!(1u64 << 53),
        json!((1u64 << 53) + 1),
        json!(u64::from(u32::MAX) + 1),
        json!(1.5),
        json!(-0.0),
        json!(-1),
        json!(1e19),
        json!(1e308),
        json!(-1e308),
        json!(f64::MIN_POSITIVE),
        json!(1_000_000.5),
    ];
    for (lo, hi) in [
        limits::AGENT_RETRIES,
        limits::AGENT_TIMEOUT_SECONDS,
        limits::AGENT_MAX_TOKENS,
        limits::BUDGET_TOKENS,
        limits::APPROVAL_TIMEOUT_MINUTES,
        limits::HTTP_TIMEOUT_SECONDS,
        limits::LOOP_MAX_ITEMS,
        limits::LOOP_CONCURRENCY,
        limits::WAIT_SECONDS,
        limits::EVENT_COOLDOWN_SECONDS,
        limits::FOLDER_DEBOUNCE_MS,
        limits::WATCH_RESTART_DELAY_SECONDS,
        limits::WATCH_DEDUPE_MINUTES,
        (0, 59),
        (0, 6),
        (100, 599),
    ] {
        edges.extend([json!(i128::from(lo) - 1), json!(lo), json!(hi), json!(i128::from(hi) + 1)]);
    }
    prop_oneof![
        3 => any::<u64>().prop_map(|n| json!(n)),
        3 => any::<i64>().prop_map(|n| json!(n)),
        2 => any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        3 => (0u64..100_000).prop_map(|n| json!(n)),
        3 => prop::sample::select(edges),
    ]
}

/// A duration string whose amount comes from the same class: `"<n><unit>"`, several units, or
/// digits past what any integer holds.
fn any_duration() -> impl Strategy<Value = Value> {
    let unit = prop::sample::select(vec!["s", "m", "h"]);
    prop_oneof![
        (any::<u64>(), unit.clone()).prop_map(|(n, u)| json!(format!("{n}{u}"))),
        (0u64..100_000, unit).prop_map(|(n, u)| json!(format!("{n}{u}"))),
        (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(h, m, s)| json!(format!("{h}h{m}m{s}s"))),
        "[0-9]{19,40}[hms]".prop_map(|s| json!(s)),
        "-[0-9]{1,20}[hms]".prop_map(|s| json!(s)),
    ]
}

/// Any instant a clock can report as a contract timestamp: year 0000 through 9999.
fn any_instant() -> impl Strategy<Value = Ts> {
    let millis = |t: Ts| t.timestamp_millis();
    let earliest = Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap();
    prop_oneof![
        (millis(earliest)..=millis(time::latest())).prop_map(|ms| chrono::DateTime::from_timestamp_millis(ms).unwrap()),
        Just(time::latest()),
        Just(earliest),
        Just(Utc.with_ymd_and_hms(2026, 3, 8, 6, 59, 0).unwrap()),
    ]
}

fn set_path(target: &mut Value, path: &[&str], value: Value) {
    match path {
        [] => *target = value,
        [first, rest @ ..] => {
            if !target.get(*first).is_some_and(Value::is_object) && !rest.is_empty() {
                target[*first] = json!({});
            }
            if rest.is_empty() {
                target[*first] = value;
            } else {
                set_path(&mut target[*first], rest, value);
            }
        }
    }
}

/// A design holding `f` set to `value`: the field's node after a manual trigger (or as the
/// trigger itself), then an output.
fn design_with(f: &NumberField, value: Value) -> Value {
    let mut node = f.node.clone();
    let mut design = if node["type"] == "trigger" {
        if f.path[0] != "budget" {
            set_path(&mut node, f.path, value.clone());
        }
        json!({"nodes": [node, output("o")], "edges": [e("start", "o")]})
    } else {
        if f.path[0] != "budget" {
            set_path(&mut node, f.path, value.clone());
        }
        let edges = match node["type"].as_str() {
            Some("note") => json!([e("start", "o")]),
            Some("loop") => json!([e("start", "n"), l("n", "o", "each")]),
            Some("condition") => json!([e("start", "n"), l("n", "o", "true")]),
            _ => json!([e("start", "n"), e("n", "o")]),
        };
        json!({"nodes": [manual(), node, output("o")], "edges": edges})
    };
    if f.path[0] == "budget" {
        set_path(&mut design, f.path, value);
    }
    design
}

/// Whether the contract allows `value` for a field (the validator may accept nothing more).
fn allowed(allowed: Allowed, value: &Value) -> bool {
    match allowed {
        // A whole number may be written with a zero fraction (`6.0`, `-0.0`).
        Allowed::Whole(lo, hi) => {
            value.as_u64().is_some_and(|n| (lo..=hi).contains(&n))
                || value.as_f64().is_some_and(|x| x.fract() == 0.0 && x >= lo as f64 && x <= hi as f64)
        }
        Allowed::Coordinate => value.as_f64().is_some_and(|x| x.abs() <= limits::CANVAS_COORDINATE),
        Allowed::Duration(lo, hi) => {
            value.as_str().and_then(|s| vwf_core::schedule::parse_duration(s).ok()).is_some_and(|secs| (lo..=hi).contains(&secs))
        }
    }
}

/// A value the contract allows, picked by `pick`, so each field is also seen accepted.
fn allowed_value(allowed: Allowed, pick: u64) -> Value {
    match allowed {
        Allowed::Whole(lo, hi) => json!(lo + pick % (hi - lo + 1)),
        Allowed::Coordinate => json!((pick % 2_000_001) as f64 - 1_000_000.0),
        Allowed::Duration(lo, hi) => json!(format!("{}s", lo + pick % (hi - lo + 1))),
    }
}

/// Everything a valid design goes through after validation: compile, run at `now` to the end,
/// settle deadlines after any time, emit, preview its schedule and heartbeat; the run reads back.
fn exercise(design: &Value, now: Ts, agents: u8, tokens: u64) -> Result<(), TestCaseError> {
    let parsed = Design::from_value(design).expect("a valid design parses");
    let plan = Plan::compile("numbers", &parsed).expect("a valid design compiles");
    let mut run = Run::start(
        plan,
        vwf_core::names::RunId::parse("0123456789ab").expect("an id"),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"x": 1})),
        now,
    );
    drive_everything(&mut run, now, agents, 1, tokens);
    let _ = run.enforce_deadlines(time::latest());
    let file = serde_json::to_value(&run).expect("a run serializes");
    let back: Result<Run, _> = serde_json::from_value(file.clone());
    prop_assert!(back.is_ok(), "the run cannot be read back: {:?}\n{file:#}", back.err());

    let trigger = parsed.trigger().map(|t| Trigger::parse(&t.raw).expect("a valid trigger parses"));
    if let Some(cooldown) = trigger.as_ref().and_then(|t| t.listens("ping")) {
        prop_assert!(time::sub_seconds_saturating(now, cooldown) <= now);
    }
    match &trigger {
        Some(Trigger::Schedule { schedule, cron }) => {
            prop_assert_eq!(&vwf_core::schedule::to_cron(schedule).expect("a valid schedule has a cron"), cron);
            prop_assert!(vwf_core::schedule::next_schedule_fire(schedule, now).is_none_or(|t| t > now), "{cron}");
        }
        Some(Trigger::Heartbeat(hb)) => prop_assert!(hb.next_heartbeat(now, Some(now)).is_none_or(|t| t >= now)),
        _ => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn every_number_is_bounded_by_the_validator_and_panics_nothing(
        which in any::<prop::sample::Index>(),
        number in any_number(),
        duration in any_duration(),
        pick in any::<u64>(),
        now in any_instant(),
        agents in 0u8..3,
        tokens in prop_oneof![Just(u64::MAX), any::<u64>(), 0u64..100],
    ) {
        let fields = number_fields();
        let f = &fields[which.index(fields.len())];
        let value = match f.allowed {
            Allowed::Duration(..) => duration,
            _ => number,
        };
        for (value, must_pass) in [(value, false), (allowed_value(f.allowed, pick), true)] {
            let design = design_with(f, value.clone());
            let report = validate(&design);
            prop_assert_eq!(report.ok, report.errors.is_empty());
            if must_pass {
                prop_assert!(report.ok, "{} = {value} is within its range but refused: {:?}", f.path.join("."), report.errors);
            } else if report.ok {
                prop_assert!(allowed(f.allowed, &value), "{} = {value} is outside its range but accepted", f.path.join("."));
            } else {
                prop_assert!(
                    report.errors.iter().all(|i| i.field.as_deref() == Some(f.reported_as)),
                    "{} = {value}: errors must name {:?}: {:?}", f.path.join("."), f.reported_as, report.errors
                );
            }
            if report.ok {
                exercise(&design, now, agents, tokens)?;
            }
        }
    }
}

/// The refusal line every surface answers beside `errors`: the first error, and how many.
#[test]
fn a_report_summarises_its_refusal_in_one_line() {
    let one = validate(&json!({"nodes": "no list", "edges": []}));
    assert!(!one.ok);
    assert_eq!(one.errors.len(), 1, "{one:?}");
    assert_eq!(one.refusal(), format!("the design has an error: {}", one.errors[0].message));
    let two = Report { ok: false, errors: vec![Issue::design("first"), Issue::node("n", "second")], warnings: Vec::new() };
    assert_eq!(two.refusal(), "the design has 2 errors; the first: first");
    assert_eq!(vwf_core::validate::refusal(&two.errors), two.refusal());
}

// ---- secrets ---------------------------------------------------------------------------

/// `{{secrets.NAME}}` is taken where a step sends it (an http step's url, headers and body, a
/// command's env) and refused everywhere else, where its value would be recorded or shown.
#[test]
fn secrets_are_used_only_where_a_step_sends_them() {
    let http = json!({"id": "n", "type": "http", "url": "https://api.example.org/{{secrets.K}}",
                      "headers": {"Authorization": "Bearer {{secrets.K}}", "X-Api-Key": "{{secrets.K}}"},
                      "body": {"key": "{{secrets.K}}"}});
    assert_ok(&validate(&with_node(http)));
    assert_ok(&validate(&with_node(json!({"id": "n", "type": "command", "argv": ["env"], "env": {"KEY": "{{secrets.K}}"}}))));
    for (n, field) in [
        (json!({"id": "n", "type": "command", "run": "echo {{secrets.K}}"}), "run"),
        (json!({"id": "n", "type": "command", "argv": ["echo", "{{secrets.K}}"]}), "argv"),
        (json!({"id": "n", "type": "agent", "prompt": "Use {{secrets.K}}"}), "prompt"),
        (json!({"id": "n", "type": "output", "template": "{{secrets.K}}"}), "template"),
        (json!({"id": "n", "type": "approval", "question": "{{secrets.K}}?"}), "question"),
        (json!({"id": "n", "type": "emit", "event": "e", "payload": {"k": "{{secrets.K}}"}}), "payload"),
    ] {
        assert_error(&validate(&with_node(n)), node("n", field, "secrets can only be used in an http step's url, headers and body"));
    }
}

/// A credential written into a header would live in the design, its versions and every run: the
/// validator refuses it and says to use a secret. A header with any reference is not literal.
#[test]
fn a_literal_credential_header_is_refused() {
    for name in ["Authorization", "X-Api-Key", "Cookie", "X-Auth-Token"] {
        let n = json!({"id": "n", "type": "http", "url": "https://api.example.org/", "headers": {name: "Bearer sk-live-123"}});
        assert_error(&validate(&with_node(n)), node("n", "headers", "holds a literal credential"));
    }
    let fine = json!({"id": "n", "type": "http", "url": "https://api.example.org/",
                      "headers": {"Authorization": "Bearer {{trigger.token}}", "Accept": "text/plain", "X-Api-Key": ""}});
    assert_ok(&validate(&with_node(fine)));
}
