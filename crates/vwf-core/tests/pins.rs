//! Pinned outputs and test runs (`vwf_core::pins`), driven through the engine's public API with a
//! clock set by hand: what a test run runs, what it takes from pins and past runs, and which pins
//! the validator refuses.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::pins::{TestScope, scope_of};
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Delivery, Outcome, Run, Status, StepStatus, Task, TriggerInfo, Work};
use vwf_core::time::Ts;
use vwf_core::validate::validate;

use crate::common;
use crate::common::pid;

fn t0() -> Ts {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
}

/// One step of every kind that can be pinned, in a chain (the loop's body is `inner`, its
/// `done` edge leads on), ending in an output that delivers.
fn every_kind(pins: Value) -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "fetch", "type": "command", "run": "echo fetched"},
            {"id": "call", "type": "http", "url": "http://127.0.0.1:9/x"},
            {"id": "draft", "type": "agent", "prompt": "write about {{nodes.fetch}}"},
            {"id": "check", "type": "condition", "expr": "out.draft.words > 1"},
            {"id": "gate", "type": "approval", "question": "send?", "options": ["send", "skip"]},
            {"id": "pause", "type": "wait", "seconds": 60},
            {"id": "tell", "type": "emit", "event": "drafted"},
            {"id": "each", "type": "loop", "over": "[1, 2]"},
            {"id": "inner", "type": "command", "run": "echo pass"},
            {"id": "send", "type": "output", "deliver": "channel", "target": "telegram:1"},
            {"id": "tip", "type": "note", "text": "a note"}
        ],
        "edges": [
            {"from": "start", "to": "fetch"}, {"from": "fetch", "to": "call"}, {"from": "call", "to": "draft"},
            {"from": "draft", "to": "check"}, {"from": "check", "to": "gate", "label": "true"},
            {"from": "gate", "to": "pause", "label": "send"}, {"from": "pause", "to": "tell"},
            {"from": "tell", "to": "each"}, {"from": "each", "to": "inner", "label": "each"},
            {"from": "each", "to": "send", "label": "done"}
        ],
        "pins": pins
    })
}

/// A pin every step of [`every_kind`] takes (the condition goes on, the gate answers `send`).
fn pin_for(id: &str) -> Value {
    match id {
        "check" => json!({"text": "true", "value": true}),
        "gate" => json!({"text": "send", "answer": "send"}),
        "send" => {
            json!({"text": "sent", "deliveries": [{"node": "send", "target": "telegram:1", "ok": true, "detail": "claimed", "at": "x"}]})
        }
        "each" => json!({"text": "[\"a\"]", "items": ["a"], "count": 1}),
        other => json!({"text": format!("pinned {other}"), "data": {"from": other}}),
    }
}

const STEPS: [&str; 10] = ["fetch", "call", "draft", "check", "gate", "pause", "tell", "each", "inner", "send"];

fn design(graph: &Value) -> Design {
    Design::from_value(graph).unwrap_or_else(|e| panic!("design does not parse: {e:?}"))
}

fn test_plan(graph: &Value, scope: &TestScope, past: &BTreeMap<String, Value>) -> Plan {
    Plan::compile_test("pins", &design(graph), scope, past).unwrap_or_else(|r| panic!("not a test plan: {r:?}"))
}

/// Drives the run to idle: commands print `ok`, agents `a draft text`, deliveries are refused.
/// Returns the tasks handed out.
fn drive(run: &mut Run) -> Vec<Task> {
    let answer = |t: &Task| match &t.work {
        Work::Agent { .. } => Outcome::Done { text: "a draft text".into(), extra: Map::new(), tokens: 0 },
        Work::Deliver { target, .. } => Outcome::Delivered(Delivery {
            node: t.node.to_string(),
            target: target.clone(),
            ok: false,
            detail: "no channel configured".into(),
            at: t0(),
        }),
        _ => Outcome::Done { text: "ok".into(), extra: Map::new(), tokens: 0 },
    };
    common::drive_batches(run, t0(), answer).into_iter().flatten().collect()
}

fn start(plan: Plan) -> Run {
    Run::start(
        plan,
        vwf_core::names::RunId::parse("d7b493cae249").expect("an id"),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, Value::Null),
        t0(),
    )
}

fn task_nodes(tasks: &[Task]) -> Vec<String> {
    tasks.iter().map(|t| t.node.node().to_string()).collect()
}

#[test]
fn a_test_run_settles_every_pinned_step_with_its_pin_and_performs_nothing() {
    let pins: Map<String, Value> = STEPS.iter().map(|id| (id.to_string(), pin_for(id))).collect();
    let graph = every_kind(Value::Object(pins));
    let mut run = start(test_plan(&graph, &TestScope::Whole, &BTreeMap::new()));
    let tasks = drive(&mut run);
    assert!(tasks.is_empty(), "a pinned step handed out work: {:?}", task_nodes(&tasks));
    assert_eq!(run.status(), Status::Done);
    assert!(run.test());
    assert!(run.deliveries().is_empty(), "a pinned output claimed a delivery");
    assert_eq!(run.outputs()["send"]["deliveries"], json!([]), "a pin's delivery claim is dropped");
    assert_eq!(run.outputs()["fetch"]["text"], "pinned fetch");
    assert_eq!(run.outputs()["fetch"]["data"], json!({"from": "fetch"}));
    assert_eq!(run.outputs()["fetch"]["words"], 2, "counts come from the pinned text");
    for r in run.steps() {
        assert!(r.pinned, "{} ran instead of taking its pin", r.node);
        assert_eq!(r.status, StepStatus::Done);
    }
    // A pinned loop's body never runs.
    assert!(run.steps().iter().all(|r| !r.node.as_str().starts_with("inner")));
    assert_eq!(run.result()["test"], true);
}

#[test]
fn a_normal_run_of_the_same_design_ignores_its_pins() {
    let pins: Map<String, Value> = STEPS.iter().map(|id| (id.to_string(), pin_for(id))).collect();
    let graph = every_kind(Value::Object(pins));
    let mut run = start(Plan::compile("pins", &design(&graph)).unwrap());
    let tasks = drive(&mut run);
    assert_eq!(task_nodes(&tasks)[..3], ["fetch", "call", "draft"]);
    assert!(!run.test());
    assert_eq!(run.result()["test"], false);
    assert!(run.steps().iter().all(|r| !r.pinned));
    assert!(run.plan().pins.is_empty() && run.plan().test.is_none());
    // The file of a normal run has neither field, so files from before test runs read back as written.
    let file = serde_json::to_value(&run).unwrap();
    assert!(file.get("test").is_none() && file["plan"].get("pins").is_none());
}

#[test]
fn pinned_branch_points_take_the_branch_their_pin_names() {
    let mut pins = Map::new();
    pins.insert("draft".into(), json!("x"));
    pins.insert("check".into(), json!({"value": false}));
    let graph = every_kind(Value::Object(pins.clone()));
    let mut run = start(test_plan(&graph, &TestScope::Whole, &BTreeMap::new()));
    drive(&mut run);
    assert_eq!(run.status(), Status::Done);
    assert!(run.skipped().contains(&"gate".to_string()), "false took the true branch: {:?}", run.skipped());

    pins.insert("check".into(), json!({"value": true}));
    pins.insert("gate".into(), json!({"answer": "skip"}));
    let mut run = start(test_plan(&every_kind(Value::Object(pins)), &TestScope::Whole, &BTreeMap::new()));
    drive(&mut run);
    assert_eq!(run.status(), Status::Done, "a pinned gate never parks");
    assert!(run.pending().is_none());
    assert!(run.skipped().contains(&"pause".to_string()));
}

#[test]
fn an_unpinned_step_of_a_test_run_runs_for_real() {
    let graph = every_kind(json!({"fetch": "pinned text"}));
    let mut run = start(test_plan(&graph, &TestScope::Whole, &BTreeMap::new()));
    let tasks = drive(&mut run);
    assert_eq!(task_nodes(&tasks)[..2], ["call", "draft"]);
    // The agent's prompt saw the pinned output.
    let Work::Agent { prompt, .. } = &tasks[1].work else { panic!("not the agent") };
    assert_eq!(prompt, "write about pinned text");
    assert_eq!(run.status(), Status::AwaitingApproval);
}

#[test]
fn until_runs_the_step_and_every_step_leading_to_it_and_nothing_else() {
    let graph = every_kind(json!({}));
    let plan = test_plan(&graph, &TestScope::Until { node: "draft".into() }, &BTreeMap::new());
    assert_eq!(plan.steps.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["fetch", "call", "draft"]);
    let mut run = start(plan);
    assert_eq!(task_nodes(&drive(&mut run)), ["fetch", "call", "draft"]);
    assert_eq!(run.status(), Status::Done);

    // A loop on the way runs its whole body; a target inside a body keeps only what leads to it.
    let pins =
        json!({"fetch": "f", "call": "c", "draft": "d", "check": {"value": true}, "gate": {"answer": "send"}, "pause": "", "tell": ""});
    let plan = test_plan(&every_kind(pins.clone()), &TestScope::Until { node: "send".into() }, &BTreeMap::new());
    assert!(plan.step("inner").is_some());
    let mut run = start(plan);
    assert_eq!(task_nodes(&drive(&mut run)), ["inner", "inner", "send"]);

    // The target runs even when it is pinned.
    let mut with_target = pins.clone();
    with_target["inner"] = json!("pinned");
    let plan = test_plan(&every_kind(with_target), &TestScope::Until { node: "inner".into() }, &BTreeMap::new());
    assert!(plan.step("send").is_none() && !plan.pins.contains_key("inner"));
    let mut run = start(plan);
    assert_eq!(task_nodes(&drive(&mut run)), ["inner", "inner"]);

    // ...and so does the loop whose passes run it, even when the loop is pinned.
    let mut with_loop = pins.clone();
    with_loop["each"] = json!({"text": "[]", "items": [], "count": 0});
    let plan = test_plan(&every_kind(with_loop), &TestScope::Until { node: "inner".into() }, &BTreeMap::new());
    assert!(!plan.pins.contains_key("each"));
    let mut run = start(plan);
    assert_eq!(task_nodes(&drive(&mut run)), ["inner", "inner"]);
}

#[test]
fn only_takes_what_leads_to_the_step_from_pins_then_past_runs_and_names_what_is_missing() {
    let graph = every_kind(json!({"fetch": "from the pin"}));
    let scope = TestScope::Only { node: "draft".into() };
    let refused = Plan::compile_test("pins", &design(&graph), &scope, &BTreeMap::new()).unwrap_err();
    assert_eq!(refused.errors[0].node.as_deref(), Some("call"));
    assert!(refused.errors[0].message.contains("pin call, or run up to draft first"), "{}", refused.errors[0].message);

    let mut past = BTreeMap::new();
    past.insert("fetch".to_string(), json!({"text": "from a past run"}));
    past.insert("call".to_string(), json!({"text": "called before", "status": 200}));
    let plan = test_plan(&graph, &scope, &past);
    assert_eq!(plan.pins["fetch"]["text"], "from the pin", "a pin wins over a past output");
    assert_eq!(plan.pins["call"]["status"], 200);
    let mut run = start(plan);
    let tasks = drive(&mut run);
    assert_eq!(task_nodes(&tasks), ["draft"]);
    let Work::Agent { prompt, .. } = &tasks[0].work else { panic!("not the agent") };
    assert_eq!(prompt, "write about from the pin");
    assert_eq!(run.status(), Status::Done);

    // The step runs even when the output before it took another branch.
    let mut past = BTreeMap::new();
    for id in ["fetch", "call", "draft"] {
        past.insert(id.to_string(), json!("x"));
    }
    past.insert("check".to_string(), json!({"text": "false", "value": false}));
    let mut run = start(test_plan(&graph, &TestScope::Only { node: "gate".into() }, &past));
    drive(&mut run);
    assert_eq!(run.status(), Status::AwaitingApproval);

    // A step inside a loop's passes cannot run alone; an unknown step is named.
    let e = Plan::compile_test("pins", &design(&graph), &TestScope::Only { node: "inner".into() }, &past).unwrap_err();
    assert!(e.errors[0].message.contains("inside loop each"), "{:?}", e.errors);
    let e = Plan::compile_test("pins", &design(&graph), &TestScope::Until { node: "tip".into() }, &past).unwrap_err();
    assert!(e.errors[0].message.contains("\"tip\""), "{:?}", e.errors);
}

#[test]
fn a_retried_test_run_keeps_its_pins() {
    let graph = every_kind(json!({"fetch": "pinned"}));
    let mut run = start(test_plan(&graph, &TestScope::Until { node: "call".into() }, &BTreeMap::new()));
    for _ in 0..10 {
        match run.advance(t0()) {
            Advance::Tasks(tasks) => {
                run.complete(&tasks[0].node, Outcome::failed("refused"), t0()).unwrap();
                break;
            }
            Advance::Settled(_) => {}
            Advance::Idle => panic!("no task"),
        }
    }
    assert_eq!(run.status(), Status::Failed);
    run.retry(t0()).unwrap();
    common::save_and_read_back(&mut run);
    assert_eq!(task_nodes(&drive(&mut run)), ["call"]);
    assert_eq!(run.status(), Status::Done);
    assert!(run.test() && run.record(&pid("fetch")).unwrap().pinned);
}

#[test]
fn scopes_read_from_the_requests_words() {
    assert_eq!(scope_of(false, None, None), Ok(None));
    assert_eq!(scope_of(true, None, None), Ok(Some(TestScope::Whole)));
    assert_eq!(scope_of(false, Some("a"), None), Ok(Some(TestScope::Only { node: "a".into() })));
    assert_eq!(scope_of(true, None, Some("a")), Ok(Some(TestScope::Until { node: "a".into() })));
    assert!(scope_of(false, Some("a"), Some("b")).is_err());
}

/// Every kind of pin the validator refuses, with the words its message must hold.
#[test]
fn the_validator_refuses_each_kind_of_bad_pin_and_names_it() {
    let cases = [
        (json!([1]), "must be an object"),
        (json!({"nope": "x"}), "does not have"),
        (json!({"start": "x"}), "trigger node is not a step"),
        (json!({"tip": "x"}), "note node is not a step"),
        (json!({"fetch": 3}), "not a number"),
        (json!({"fetch": null}), "not null"),
        (json!({"fetch": {"text": 1}}), "\"text\" must be a string"),
        (json!({"check": "true"}), "\"value\": true or false"),
        (json!({"check": {"value": "true"}}), "\"value\": true or false"),
        (json!({"gate": {"answer": "maybe"}}), "one of send, skip"),
        (json!({"gate": "send"}), "one of send, skip"),
        (json!({"fetch": "x".repeat(vwf_core::limits::STEP_OUTPUT_BYTES + 1)}), "byte limit"),
    ];
    for (pins, words) in cases {
        let report = validate(&every_kind(pins.clone()));
        assert!(!report.ok, "accepted {pins}");
        assert!(report.errors.iter().any(|e| e.message.contains(words)), "{pins}: {:?}", report.errors);
    }
    let all: Map<String, Value> = STEPS.iter().map(|id| (id.to_string(), pin_for(id))).collect();
    assert!(validate(&every_kind(Value::Object(all))).ok);
    assert!(validate(&every_kind(json!({}))).ok);
}

fn pin_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        ".{0,20}".prop_map(Value::String),
        (".{0,20}", any::<bool>()).prop_map(|(t, b)| json!({"text": t, "value": b, "answer": if b { "send" } else { "skip" }})),
        any::<i64>().prop_map(|n| json!({"data": {"n": n}, "value": n % 2 == 0, "answer": "send"})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever steps are pinned and with what, a pin is either refused by the validator or
    /// settles its step without work; every task handed out is for a step with no pin, and the
    /// run reads back from its saved parts after every call.
    #[test]
    fn a_pinned_step_never_performs_work(
        chosen in proptest::collection::btree_map(proptest::sample::select(STEPS.to_vec()), pin_value(), 0..STEPS.len()),
        scope_pick in 0usize..3,
        target in proptest::sample::select(STEPS.to_vec()),
    ) {
        let pins: Map<String, Value> = chosen.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let graph = every_kind(Value::Object(pins));
        let report = validate(&graph);
        let scope = match scope_pick {
            0 => TestScope::Whole,
            1 => TestScope::Until { node: target.to_string() },
            _ => TestScope::Only { node: target.to_string() },
        };
        let past: BTreeMap<String, Value> = STEPS.iter().map(|id| (id.to_string(), pin_for(id))).collect();
        match Plan::compile_test("pins", &design(&graph), &scope, &past) {
            Err(refused) => prop_assert!(!report.ok || scope.target().is_some(), "refused a valid whole test run: {:?}", refused),
            Ok(plan) => {
                prop_assert!(report.ok);
                let pinned: BTreeSet<String> = plan.pins.keys().cloned().collect();
                if let Some(t) = scope.target() {
                    prop_assert!(!pinned.contains(t), "the target of a limited test run took a pin");
                }
                let mut run = start(plan);
                for node in task_nodes(&drive(&mut run)) {
                    prop_assert!(!pinned.contains(&node), "pinned step {} performed work", node);
                }
                prop_assert!(run.deliveries().iter().all(|d| !pinned.contains(&d.node)));
                for r in run.steps() {
                    prop_assert_eq!(r.pinned, pinned.contains(r.node.node()));
                }
            }
        }
    }
}
