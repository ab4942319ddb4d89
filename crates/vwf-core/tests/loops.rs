//! Loop steps: each pass runs the body with a fresh context, results are collected in order,
//! a failed pass fails the loop with its index, and a retry keeps the passes that finished.

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::run::{Outcome, Run, Status, StepStatus, Task, TriggerInfo, Work};
use vwf_core::time::Ts;
use vwf_core::validate::validate;

use crate::common;
use crate::common::pid;

fn t0() -> Ts {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
}

fn start(design: Value, input: Value) -> Run {
    let report = validate(&design);
    assert!(report.ok, "{:?}", report.errors);
    let plan = Plan::compile("loops", &Design::from_value(&design).unwrap()).unwrap();
    Run::start(
        plan,
        vwf_core::names::RunId::parse("0123456789ab").expect("an id"),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, input),
        t0(),
    )
}

/// Drives the run; `answer` decides each task's outcome. Returns every batch of tasks handed out.
fn drive(run: &mut Run, answer: impl Fn(&Task) -> Outcome) -> Vec<Vec<String>> {
    common::drive_batches(run, t0(), answer).iter().map(|batch| batch.iter().map(|t| t.node.to_string()).collect()).collect()
}

fn chunk_design(concurrency: u64) -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each-chunk", "type": "loop", "over": "{{trigger.files}}", "concurrency": concurrency},
            {"id": "read", "type": "agent", "prompt": "Read {{item.path}} (pass {{loop.index}})"},
            {"id": "big", "type": "condition", "expr": "out.read.words > 1"},
            {"id": "keep", "type": "output", "template": "{{item.path}}: {{nodes.read}}"},
            {"id": "report", "type": "output", "template": "{{nodes.each-chunk.count}} chunks: {{nodes.each-chunk}}"}
        ],
        "edges": [
            {"from": "start", "to": "each-chunk"},
            {"from": "each-chunk", "to": "read", "label": "each"},
            {"from": "read", "to": "big"},
            {"from": "big", "to": "keep", "label": "true"},
            {"from": "each-chunk", "to": "report", "label": "done"}
        ]
    })
}

fn files(n: usize) -> Value {
    json!({"files": (0..n).map(|i| json!({"path": format!("chunk-{i}.json")})).collect::<Vec<_>>()})
}

fn agent_text(t: &Task) -> Outcome {
    let Work::Agent { prompt, .. } = &t.work else { panic!("unexpected task {t:?}") };
    // Pass 1 answers with one word, so its condition is false and `keep` is skipped there.
    let text = if prompt.contains("pass 1") { "short".to_string() } else { format!("summary of {prompt}") };
    Outcome::Done { text, extra: Map::new(), tokens: 0 }
}

#[test]
fn each_pass_runs_the_body_with_its_own_item_and_index() {
    let mut run = start(chunk_design(1), files(3));
    drive(&mut run, agent_text);
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    let lp = &run.outputs()["each-chunk"];
    assert_eq!(lp["count"], json!(3));
    assert_eq!(lp["items"][0], json!("chunk-0.json: summary of Read chunk-0.json (pass 0)"));
    // The sink of pass 1 was skipped: its result is null, and the pass's skip stays in the pass.
    assert_eq!(lp["items"][1], Value::Null);
    assert!(run.skipped().is_empty(), "{:?}", run.skipped());
    assert_eq!(run.outputs()["report"]["text"].as_str().unwrap().split(' ').next(), Some("3"));
    // Body outputs are visible only inside their pass, never at the top.
    assert!(!run.outputs().contains_key("read"));
}

#[test]
fn each_pass_step_is_visible_in_the_run_record_qualified_by_pass() {
    let mut run = start(chunk_design(1), files(2));
    drive(&mut run, agent_text);
    let names: Vec<&str> = run.steps().iter().map(|s| s.node.as_str()).collect();
    assert_eq!(names, ["each-chunk", "read#0", "read#1", "big#0", "big#1", "keep#0", "report"]);
}

#[test]
fn concurrency_hands_out_passes_together_and_keeps_results_in_order() {
    let mut run = start(chunk_design(3), files(5));
    let batches = drive(&mut run, agent_text);
    assert_eq!(batches[0], ["read#0", "read#1", "read#2"]);
    assert_eq!(run.status(), Status::Done);
    let items = run.outputs()["each-chunk"]["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 5);
    assert_eq!(items[4], json!("chunk-4.json: summary of Read chunk-4.json (pass 4)"));
    // The same design and input give the same outputs with one pass at a time.
    let mut serial = start(chunk_design(1), files(5));
    drive(&mut serial, agent_text);
    assert_eq!(serial.outputs()["each-chunk"], run.outputs()["each-chunk"]);
}

#[test]
fn a_failed_pass_fails_the_loop_with_the_pass_index() {
    let mut run = start(chunk_design(1), files(4));
    drive(&mut run, |t| if t.node == "read#2" { Outcome::failed("disk on fire") } else { agent_text(t) });
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("each-chunk"));
    let error = run.error().cloned().unwrap();
    assert!(error.contains("pass 2") && error.contains("read") && error.contains("disk on fire"), "{error}");
    assert!(run.record(&pid("read#3")).is_none(), "nothing after the failure starts");
    assert!(!run.outputs().contains_key("report"));
}

#[test]
fn retry_keeps_the_passes_that_finished() {
    let mut run = start(chunk_design(1), files(4));
    drive(&mut run, |t| if t.node == "read#2" { Outcome::failed("flaky") } else { agent_text(t) });
    let before: Vec<_> = ["read#0", "read#1"].iter().map(|n| run.record(&pid(n)).cloned().unwrap()).collect();
    run.retry(t0() + Duration::minutes(1)).unwrap();
    let batches = drive(&mut run, agent_text);
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    let rerun: Vec<String> = batches.concat();
    assert_eq!(rerun, ["read#2", "read#3"], "finished passes are not re-run");
    for b in before {
        assert_eq!(run.record(&b.node), Some(&b));
    }
    assert_eq!(run.outputs()["each-chunk"]["count"], json!(4));
}

#[test]
fn over_must_give_a_json_array_within_max_items() {
    let mut run = start(chunk_design(1), json!({"files": {"not": "a list"}}));
    drive(&mut run, agent_text);
    assert_eq!(run.status(), Status::Failed);
    assert!(run.error().map(|e| e.text()).unwrap().contains("must give a JSON array"), "{:?}", run.error());

    let mut design = chunk_design(1);
    design["nodes"][1]["max_items"] = json!(2);
    let mut run = start(design, files(3));
    drive(&mut run, agent_text);
    assert!(run.error().map(|e| e.text()).unwrap().contains("more than max_items (2)"), "{:?}", run.error());
}

#[test]
fn an_empty_list_finishes_the_loop_at_once() {
    let mut run = start(chunk_design(1), files(0));
    drive(&mut run, agent_text);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["each-chunk"]["count"], json!(0));
}

#[test]
fn a_gate_inside_a_pass_parks_the_run_and_its_answer_resumes_the_pass() {
    let design = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "lp", "type": "loop", "over": "[\"a\", \"b\"]"},
            {"id": "ok", "type": "approval", "question": "Keep {{item}}?", "options": ["yes", "no"]},
            {"id": "kept", "type": "output", "template": "kept {{item}}"}
        ],
        "edges": [
            {"from": "start", "to": "lp"},
            {"from": "lp", "to": "ok", "label": "each"},
            {"from": "ok", "to": "kept", "label": "yes"}
        ]
    });
    let mut run = start(design, Value::Null);
    drive(&mut run, agent_text);
    assert_eq!(run.status(), Status::AwaitingApproval);
    assert_eq!(run.pending().unwrap().node(), "ok#0");
    assert!(
        matches!(run.pending().unwrap(), vwf_core::run::Pending::Approval { question, .. } if question == "Keep a?"),
        "{:?}",
        run.pending()
    );
    run.respond(&pid("ok#0"), vwf_core::run::Response::Answer("yes".into()), t0()).unwrap();
    drive(&mut run, agent_text);
    assert_eq!(run.pending().unwrap().node(), "ok#1");
    run.respond(&pid("ok#1"), vwf_core::run::Response::Answer("no".into()), t0()).unwrap();
    drive(&mut run, agent_text);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["lp"]["items"], json!(["kept a", null]));
    assert_eq!(run.record(&pid("ok#1")).unwrap().status, StepStatus::Done);
}

#[test]
fn loops_inside_loops_and_reading_the_loop_from_its_body_are_design_errors() {
    let nested = json!({
        "nodes": [
            {"id": "outer", "type": "loop", "over": "[1]"},
            {"id": "inner", "type": "loop", "over": "[2]"},
            {"id": "x", "type": "output"}
        ],
        "edges": [
            {"from": "outer", "to": "inner", "label": "each"},
            {"from": "inner", "to": "x", "label": "each"}
        ]
    });
    let r = validate(&nested);
    assert!(r.errors.iter().any(|e| e.node.as_deref() == Some("inner") && e.message.contains("loops inside loops")), "{:?}", r.errors);
    let reads_itself = json!({
        "nodes": [
            {"id": "lp", "type": "loop", "over": "[1]"},
            {"id": "x", "type": "output", "template": "{{nodes.lp.count}}"}
        ],
        "edges": [{"from": "lp", "to": "x", "label": "each"}]
    });
    let r = validate(&reads_itself);
    assert!(r.errors.iter().any(|e| e.node.as_deref() == Some("x") && e.message.contains("use {{item}}")), "{:?}", r.errors);
}

/// The stored run file of a run in flight: its plan, a loop between passes, the history and a
/// parked gate. Runs on disk are resumed by later binaries, so a change to any of this is a change
/// of the file format and shows here.
#[test]
fn the_stored_format_of_a_run_in_flight_is_fixed() {
    let design = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "draft", "type": "agent", "prompt": "Draft {{trigger.topic}}", "retries": 1},
            {"id": "lp", "type": "loop", "over": "[\"a\", \"b\"]"},
            {"id": "ok", "type": "approval", "question": "Keep {{item}} of {{nodes.draft}}?", "options": ["yes", "no"], "timeout_minutes": 60},
            {"id": "kept", "type": "output", "template": "kept {{item}}"},
            {"id": "done", "type": "output", "template": "{{nodes.lp.count}} passes"}
        ],
        "edges": [
            {"from": "start", "to": "draft"},
            {"from": "draft", "to": "lp"},
            {"from": "lp", "to": "ok", "label": "each"},
            {"from": "ok", "to": "kept", "label": "yes"},
            {"from": "lp", "to": "done", "label": "done"}
        ]
    });
    let mut run = start(design, json!({"topic": "the release"}));
    drive(&mut run, |_| Outcome::Done { text: "a draft".into(), extra: Map::new(), tokens: 12 });
    run.respond(&pid("ok#0"), vwf_core::run::Response::Answer("yes".into()), t0() + Duration::minutes(5)).unwrap();
    drive(&mut run, agent_text);
    assert_eq!(run.pending().unwrap().node(), "ok#1");
    insta::assert_json_snapshot!("run_in_flight", serde_json::to_value(&run).unwrap());
}
