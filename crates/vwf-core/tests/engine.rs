//! The engine driven through its public API (SPEC §4, §5, §7–9), with a clock set by hand.
//!
//! Every test builds a design, compiles it, starts a run at a fixed instant and drives it with
//! `drive`, which loops `advance` and answers each task with an outcome picked by a closure.
//! Time only moves when a test moves it; nothing sleeps.

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::run::{
    APPROVAL_TIMED_OUT, APPROVAL_TIMED_OUT_ESCALATED, Advance, Delivery, ESCALATION_REQUESTED, EngineError, Outcome, Pending, Response,
    Run, RunFailure, Status, StepStatus, TOKEN_BUDGET_EXCEEDED, Task, TriggerInfo, Work,
};
use vwf_core::secrets::Secrets;
use vwf_core::spec::{CommandStep, Deliver, Program};
use vwf_core::time::Ts;

use crate::common;
use crate::common::pid;

const RUN_ID: &str = "d7b493cae249";

fn t0() -> Ts {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
}

fn plan_of(design: &Value) -> Plan {
    let d = Design::from_value(design).unwrap_or_else(|e| panic!("design does not parse: {e:?}"));
    Plan::compile("test", &d).unwrap_or_else(|r| panic!("design is not valid: {r:?}"))
}

fn start_with(design: &Value, input: Value) -> Run {
    Run::start(
        plan_of(design),
        vwf_core::names::RunId::parse(RUN_ID).expect("an id"),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, input),
        t0(),
    )
}

fn start(design: &Value) -> Run {
    start_with(design, Value::Null)
}

/// Loops `advance(now)` until `Idle`, completing every task with the outcome `answer` picks.
/// Returns the tasks handed out, in order.
fn drive(run: &mut Run, now: Ts, answer: impl FnMut(&Task) -> Outcome) -> Vec<Task> {
    common::drive_batches(run, now, answer).into_iter().flatten().collect()
}

fn done(text: &str) -> Outcome {
    Outcome::Done { text: text.into(), extra: Map::new(), tokens: 0 }
}

fn failed(error: &str) -> Outcome {
    Outcome::failed(error)
}

/// Agents answer "draft text", deliveries find no channel, everything else prints "ok".
fn standard(task: &Task) -> Outcome {
    match &task.work {
        Work::Agent { .. } => done("draft text"),
        Work::Deliver { target, .. } => Outcome::Delivered(Delivery {
            node: task.node.to_string(),
            target: target.clone(),
            ok: false,
            detail: "no channel configured".into(),
            at: t0(),
        }),
        _ => done("ok"),
    }
}

fn node_ids(tasks: &[Task]) -> Vec<&str> {
    tasks.iter().map(|t| t.node.as_str()).collect()
}

fn step_nodes(run: &Run) -> Vec<&str> {
    run.steps().iter().map(|r| r.node.as_str()).collect()
}

fn plan_ids(run: &Run) -> Vec<&str> {
    run.plan().steps.iter().map(|s| s.id.as_str()).collect()
}

fn manual() -> Value {
    json!({"id": "start", "type": "trigger", "mode": "manual"})
}

fn edge(from: &str, to: &str) -> Value {
    json!({"from": from, "to": to})
}

fn labelled(from: &str, to: &str, label: &str) -> Value {
    json!({"from": from, "to": to, "label": label})
}

// ---- order, outputs, routing -------------------------------------------------------------

#[test]
fn linear_chain_runs_to_done_with_outputs_keyed_by_id_and_steps_in_plan_order() {
    let design = json!({
        "nodes": [
            manual(),
            {"id": "fetch", "type": "command", "run": "echo feed"},
            {"id": "draft", "type": "agent", "prompt": "Summarise {{nodes.fetch}}"},
            {"id": "send", "type": "output"}
        ],
        "edges": [edge("start", "fetch"), edge("fetch", "draft"), edge("draft", "send")]
    });
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), |t| match &t.work {
        Work::Command(_) => done("feed items"),
        Work::Agent { prompt, .. } => {
            assert_eq!(prompt, "Summarise feed items");
            done("draft text")
        }
        other => panic!("unexpected work {other:?}"),
    });
    assert_eq!(node_ids(&tasks), ["fetch", "draft"]);
    assert_eq!(run.status(), Status::Done);
    assert!(run.ok());
    assert_eq!(run.outputs().keys().map(String::as_str).collect::<Vec<_>>(), ["draft", "fetch", "send"]);
    assert_eq!(run.outputs()["fetch"]["text"], "feed items");
    assert_eq!(run.outputs()["draft"]["text"], "draft text");
    assert_eq!(run.outputs()["send"]["text"], "draft text");
    assert_eq!(step_nodes(&run), ["fetch", "draft", "send"]);
    assert!(run.steps().iter().all(|r| r.status == StepStatus::Done && r.attempts == 1));
    assert!(run.skipped().is_empty());
    let result = run.result();
    assert_eq!(result["status"], "done");
    assert_eq!(result["pending"], Value::Null);
    assert_eq!(result["error"], Value::Null);
    assert!(result.get("plan").is_none() && result.get("history").is_none());
}

#[test]
fn independent_ready_steps_are_all_handed_out() {
    // `a` becomes a task and `o` settles in the core within the same advance: `a` must not be lost.
    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "p"}, {"id": "o", "type": "output"}],
        "edges": [edge("start", "a"), edge("start", "o")]
    });
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), standard);
    assert_eq!(node_ids(&tasks), ["a"]);
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    assert_eq!(step_nodes(&run), ["a", "o"]);
}

#[test]
fn condition_routes_true_branch_skips_false_branch_and_skips_propagate_but_a_join_with_one_active_parent_runs() {
    let design = json!({
        "nodes": [
            manual(),
            {"id": "a", "type": "agent", "prompt": "write"},
            {"id": "c", "type": "condition", "expr": "out.a.words > 1"},
            {"id": "t", "type": "agent", "prompt": "yes branch"},
            {"id": "f", "type": "agent", "prompt": "no branch"},
            {"id": "g", "type": "agent", "prompt": "after no"},
            {"id": "j", "type": "output"}
        ],
        "edges": [edge("start", "a"), edge("a", "c"), labelled("c", "t", "true"), labelled("c", "f", "false"),
                  edge("f", "g"), edge("t", "j"), edge("g", "j")]
    });
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), |t| done(&format!("text of {}", t.node)));
    assert_eq!(node_ids(&tasks), ["a", "t"]);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["c"]["value"], true);
    assert_eq!(run.outputs()["c"]["text"], "true");
    assert_eq!(run.skipped(), ["f", "g"]);
    assert!(run.record(&pid("f")).is_none() && run.record(&pid("g")).is_none());
    assert_eq!(run.outputs()["j"]["text"], "text of t");
    assert_eq!(run.outputs()["j"]["collected"], json!({"t": "text of t"}));
}

#[test]
fn skipped_is_in_plan_order_whatever_the_order_of_nodes_and_of_discovery() {
    // `x` is skipped first (the condition settles at once), `y` later (the gate is answered
    // afterwards), yet `y` comes first in the plan.
    let design = json!({
        "nodes": [
            manual(),
            {"id": "g", "type": "approval", "question": "go?"},
            {"id": "c", "type": "condition", "expr": "out.start.n > 5"},
            {"id": "y", "type": "output"},
            {"id": "x", "type": "output"},
            {"id": "w", "type": "output"},
            {"id": "v", "type": "output"}
        ],
        "edges": [edge("start", "g"), edge("start", "c"), labelled("g", "y", "reject"), labelled("g", "w", "approve"),
                  labelled("c", "x", "true"), labelled("c", "v", "false")]
    });
    let mut run = start_with(&design, json!({"n": 0}));
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::AwaitingApproval);
    assert_eq!(run.skipped(), ["x"]);
    run.respond(&pid("g"), Response::Answer("approve".into()), t0()).unwrap();
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::Done);
    let in_plan_order: Vec<&str> = plan_ids(&run).into_iter().filter(|id| run.skipped().iter().any(|s| s == id)).collect();
    assert_eq!(run.skipped(), in_plan_order);
    assert_eq!(run.skipped(), ["y", "x"]);
    assert_eq!(step_nodes(&run), plan_ids(&run).into_iter().filter(|id| !["x", "y"].contains(id)).collect::<Vec<_>>());
}

#[test]
fn longest_id_prefix_resolves_dotted_ids() {
    let design = json!({
        "nodes": [
            manual(),
            {"id": "a", "type": "agent", "prompt": "short"},
            {"id": "a.b", "type": "agent", "prompt": "long"},
            {"id": "c", "type": "condition", "expr": "out.a.b.words > 2"},
            {"id": "yes", "type": "agent", "prompt": "{{nodes.a.b}} / {{nodes.a.b.words}} / {{nodes.a}}"},
            {"id": "no", "type": "output"}
        ],
        "edges": [edge("start", "a"), edge("start", "a.b"), edge("a", "c"), edge("a.b", "c"),
                  labelled("c", "yes", "true"), labelled("c", "no", "false")]
    });
    let mut run = start(&design);
    let mut prompts = Vec::new();
    drive(&mut run, t0(), |t| match t.node.as_str() {
        "a" => done("one"),
        "a.b" => done("one two three"),
        _ => {
            if let Work::Agent { prompt, .. } = &t.work {
                prompts.push(prompt.clone());
            }
            done("fine")
        }
    });
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    assert_eq!(run.outputs()["c"]["value"], true, "out.a.b.words must read node a.b (3 words), not node a");
    assert_eq!(prompts, ["one two three / 3 / one"]);
    assert_eq!(run.skipped(), ["no"]);
}

fn one_condition(expr: &str) -> Value {
    json!({
        "nodes": [
            manual(),
            {"id": "x", "type": "agent", "prompt": "p"},
            {"id": "c", "type": "condition", "expr": expr},
            {"id": "yes", "type": "output"},
            {"id": "no", "type": "output"}
        ],
        "edges": [edge("start", "x"), edge("x", "c"), labelled("c", "yes", "true"), labelled("c", "no", "false")]
    })
}

fn condition_value(expr: &str, x_text: &str) -> Run {
    let mut run = start(&one_condition(expr));
    drive(&mut run, t0(), |_| done(x_text));
    run
}

#[test]
fn numeric_text_is_coerced_for_a_number_literal() {
    let run = condition_value("out.x.text > 20", " 42 ");
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    assert_eq!(run.outputs()["c"]["value"], true);
    assert_eq!(run.skipped(), ["no"]);
    let run = condition_value("out.x.text >= 42.5", " 42 ");
    assert_eq!(run.outputs()["c"]["value"], false);
    assert_eq!(run.skipped(), ["yes"]);
}

#[test]
fn quoted_literal_compares_as_text() {
    // As a number "42.0" equals 42; as text it is not "42".
    assert_eq!(condition_value("out.x.text == 42", "42.0").outputs()["c"]["value"], true);
    assert_eq!(condition_value("out.x.text == \"42\"", "42.0").outputs()["c"]["value"], false);
    assert_eq!(condition_value("out.x == '5'", "5").outputs()["c"]["value"], true);
    assert_eq!(condition_value("out.x != 'abc'", "abc").outputs()["c"]["value"], false);
}

#[test]
fn comparison_failure_fails_the_run_never_false() {
    let run = condition_value("out.x.text > 20", "abc");
    assert_eq!(run.status(), Status::Failed);
    assert!(!run.ok());
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("c"));
    let error = run.error().cloned().unwrap_or_default();
    assert!(error.contains("cannot compare"), "{error}");
    assert!(!run.outputs().contains_key("c"));
    assert_eq!(run.record(&pid("c")).map(|r| r.status), Some(StepStatus::Failed));
    assert!(run.record(&pid("yes")).is_none() && run.record(&pid("no")).is_none());
    assert!(run.skipped().is_empty(), "nothing after a failed step is settled: {:?}", run.skipped());
    // A missing path is a failure too, not false.
    let run = condition_value("out.x.data.score > 1", "plain");
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("c"));
}

// ---- approvals ---------------------------------------------------------------------------

fn gate_design(extra: Value) -> Value {
    let mut gate =
        json!({"id": "gate", "type": "approval", "question": "Send this brief?", "options": ["send", "skip"], "timeout_minutes": 120});
    if let (Some(g), Some(e)) = (gate.as_object_mut(), extra.as_object()) {
        g.extend(e.clone());
    }
    json!({
        "nodes": [
            manual(),
            {"id": "draft", "type": "agent", "prompt": "write"},
            gate,
            {"id": "s", "type": "output"},
            {"id": "k", "type": "output"},
            {"id": "u", "type": "output"}
        ],
        "edges": [edge("start", "draft"), edge("draft", "gate"), labelled("gate", "s", "send"), labelled("gate", "k", "skip"), edge("gate", "u")]
    })
}

fn parked_gate(extra: Value) -> Run {
    let mut run = start(&gate_design(extra));
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::AwaitingApproval, "{:#}", run.result());
    run
}

#[test]
fn approval_parks_the_run_with_a_pending_gate() {
    let run = parked_gate(json!({}));
    let result = run.result();
    assert_eq!(result["status"], "awaiting_approval");
    assert_eq!(
        result["pending"],
        json!({
            "type": "approval", "node": "gate", "question": "Send this brief?", "options": ["send", "skip"],
            "deadline": "2026-11-29T11:00:00.000Z", "on_timeout": "reject"
        })
    );
    assert_eq!(run.record(&pid("gate")).map(|r| r.status), Some(StepStatus::AwaitingApproval));
    assert!(run.record(&pid("s")).is_none() && run.record(&pid("u")).is_none());
    // Without a timeout the gate has no deadline.
    let mut run = start(&gate_design(json!({"timeout_minutes": null})));
    drive(&mut run, t0(), standard);
    assert_eq!(run.result()["pending"]["deadline"], Value::Null);
}

#[test]
fn a_gate_question_is_rendered_and_carries_the_outputs_it_names() {
    let mut run = start_with(
        &gate_design(json!({"question": "Send {{ nodes.draft }} to {{trigger.who}}? ({{nodes.start.data.who}})"})),
        json!({"who": "ops"}),
    );
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::AwaitingApproval, "{:#}", run.result());
    let pending = &run.result()["pending"];
    assert_eq!(pending["question"], "Send draft text to ops? (ops)");
    assert_eq!(pending["outputs"], json!({"draft": "draft text", "trigger": "{\"who\":\"ops\"}", "start": "{\"who\":\"ops\"}"}));
    // A path missing at run time fails the gate's step, as in any template.
    let mut run = start(&gate_design(json!({"question": "Send {{nodes.draft.data.title}}?"})));
    drive(&mut run, t0(), standard);
    assert_eq!((run.status(), run.failed_node().map(|n| n.as_str())), (Status::Failed, Some("gate")), "{:#}", run.result());
}

#[test]
fn a_deadline_or_wait_end_past_the_last_recordable_time_fails_the_step() {
    // A clock pinned near the end of four-digit years: three days more cannot be written in a
    // run file that is read back, so the step fails with a clear error instead.
    let late = vwf_core::time::latest() - Duration::minutes(30);
    let wait = json!({"nodes": [manual(), {"id": "w", "type": "wait", "seconds": 3600}, {"id": "o", "type": "output"}],
                      "edges": [edge("start", "w"), edge("w", "o")]});
    for (design, node, what) in
        [(gate_design(json!({"timeout_minutes": 4320})), "gate", "the gate's deadline"), (wait, "w", "the wait's end")]
    {
        let mut run = Run::start(
            plan_of(&design),
            vwf_core::names::RunId::parse(RUN_ID).expect("an id"),
            TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, Value::Null),
            late,
        );
        drive(&mut run, late, standard);
        assert_eq!((run.status(), run.failed_node().map(|n| n.as_str())), (Status::Failed, Some(node)), "{:#}", run.result());
        let error = run.error().cloned().unwrap_or_default();
        assert!(error.starts_with(what) && error.contains("9999-12-31T23:59:59.999Z"), "{error}");
        let file = serde_json::to_value(&run).expect("serializes");
        assert!(serde_json::from_value::<Run>(file).is_ok(), "the run file reads back");
    }
    // A wait that ends exactly at the last recordable instant still parks.
    let wait = json!({"nodes": [manual(), {"id": "w", "type": "wait", "seconds": 1800}], "edges": [edge("start", "w")]});
    let mut run = Run::start(
        plan_of(&wait),
        vwf_core::names::RunId::parse(RUN_ID).expect("an id"),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, Value::Null),
        late,
    );
    drive(&mut run, late, standard);
    assert_eq!(run.status(), Status::Waiting, "{:#}", run.result());
}

#[test]
fn answer_takes_the_edge_labelled_with_it_and_every_unlabelled_edge() {
    let mut run = parked_gate(json!({}));
    run.respond(&pid("gate"), Response::Answer("send".into()), t0()).unwrap();
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    assert_eq!(run.outputs()["gate"]["answer"], "send");
    assert_eq!(run.outputs()["gate"]["text"], "send");
    assert_eq!(run.skipped(), ["k"]);
    assert_eq!(run.outputs()["s"]["text"], "send");
    assert_eq!(run.outputs()["u"]["text"], "send");
    assert_eq!(run.pending(), None);
}

#[test]
fn answer_not_in_options_is_a_bad_request_and_leaves_the_run_unchanged() {
    let mut run = parked_gate(json!({}));
    let before = run.clone();
    let e = run.respond(&pid("gate"), Response::Answer("maybe".into()), t0() + Duration::minutes(5)).unwrap_err();
    assert!(matches!(e, EngineError::BadRequest(_)), "{e:?}");
    assert_eq!(run, before);
}

#[test]
fn respond_to_a_node_that_is_not_waiting_is_a_conflict() {
    let mut run = parked_gate(json!({}));
    let before = run.clone();
    let e = run.respond(&pid("draft"), Response::Output("x".into()), t0()).unwrap_err();
    assert!(matches!(e, EngineError::Conflict(_)), "{e:?}");
    let e = run.respond(&pid("s"), Response::Answer("send".into()), t0()).unwrap_err();
    assert!(matches!(e, EngineError::Conflict(_)), "{e:?}");
    assert_eq!(run, before);
    // Answering twice: the second answer finds nothing waiting.
    run.respond(&pid("gate"), Response::Answer("skip".into()), t0()).unwrap();
    let e = run.respond(&pid("gate"), Response::Answer("send".into()), t0()).unwrap_err();
    assert!(matches!(e, EngineError::Conflict(_)), "{e:?}");
}

#[test]
fn respond_to_an_unknown_node_is_unknown_node() {
    let mut run = parked_gate(json!({}));
    let e = run.respond(&pid("nope"), Response::Answer("send".into()), t0()).unwrap_err();
    assert!(matches!(e, EngineError::UnknownNode(_)), "{e:?}");
}

#[test]
fn approval_deadline_passing_fails_the_run_with_approval_timed_out() {
    let mut run = parked_gate(json!({}));
    assert!(!run.enforce_deadlines(t0() + Duration::minutes(119)));
    assert_eq!(run.status(), Status::AwaitingApproval);
    let late = t0() + Duration::minutes(120);
    assert!(run.enforce_deadlines(late));
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.text()), Some("approval timed out"));
    assert_eq!(APPROVAL_TIMED_OUT, "approval timed out");
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("gate"));
    assert_eq!(run.pending(), None);
    assert_eq!(run.record(&pid("gate")).map(|r| r.status), Some(StepStatus::Failed));
    assert!(!run.history().iter().any(|h| h.event == ESCALATION_REQUESTED));
    assert!(!run.enforce_deadlines(late + Duration::minutes(1)), "a failed run changes no more");
}

#[test]
fn escalate_on_timeout_records_escalation_requested_and_fails_the_same_way() {
    let mut run = parked_gate(json!({"on_timeout": "escalate"}));
    assert_eq!(run.result()["pending"]["on_timeout"], "escalate");
    // `advance` enforces deadlines too.
    run.advance(t0() + Duration::hours(3));
    assert_eq!(run.status(), Status::Failed);
    // Where people look (the run's error, the gate's step record), not only in the history.
    assert_eq!(run.error().map(|e| e.text()), Some("approval timed out; escalation requested"));
    assert_eq!(APPROVAL_TIMED_OUT_ESCALATED, format!("{APPROVAL_TIMED_OUT}; {ESCALATION_REQUESTED}"));
    let gate = run.record(&pid("gate")).unwrap();
    assert_eq!((gate.status, gate.error.as_deref()), (StepStatus::Failed, Some(APPROVAL_TIMED_OUT_ESCALATED)));
    let result = run.result();
    let gate_json = result["steps"].as_array().unwrap().iter().find(|s| s["node"] == "gate").unwrap();
    assert_eq!(gate_json["error"], APPROVAL_TIMED_OUT_ESCALATED);
    let esc: Vec<_> = run.history().iter().filter(|h| h.event == "escalation requested").collect();
    assert_eq!(esc.len(), 1);
    assert_eq!(esc[0].node.as_deref(), Some("gate"));
    // A late answer receives that verdict, unchanged.
    let frozen = run.clone();
    assert_eq!(run.respond(&pid("gate"), Response::Answer("send".into()), t0() + Duration::hours(4)), Ok(()));
    assert_eq!(run, frozen);
    // A retry reopens the gate; the timed-out attempt stays on its record.
    run.retry(t0() + Duration::hours(5)).unwrap();
    drive(&mut run, t0() + Duration::hours(5), standard);
    assert_eq!(run.status(), Status::AwaitingApproval);
    let gate = run.record(&pid("gate")).unwrap();
    assert_eq!(gate.attempts, 2);
    assert_eq!(gate.tries[0].error.as_deref(), Some(APPROVAL_TIMED_OUT_ESCALATED));
    assert_eq!(gate.tries[1].status, StepStatus::AwaitingApproval);
}

#[test]
fn late_answer_after_the_deadline_receives_the_timed_out_verdict() {
    let mut run = parked_gate(json!({}));
    // Nobody enforced the deadline before the answer arrives: respond does.
    let late = t0() + Duration::minutes(121);
    assert_eq!(run.respond(&pid("gate"), Response::Answer("send".into()), late), Ok(()));
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.text()), Some("approval timed out"));
    assert!(!run.outputs().contains_key("gate"));
    let frozen = run.clone();
    assert_eq!(run.respond(&pid("gate"), Response::Answer("send".into()), late + Duration::minutes(1)), Ok(()));
    assert_eq!(run, frozen);
}

#[test]
fn retry_of_a_timed_out_gate_reopens_it_with_a_fresh_deadline() {
    let mut run = parked_gate(json!({}));
    let late = t0() + Duration::hours(5);
    assert!(run.enforce_deadlines(late));
    run.retry(late).unwrap();
    drive(&mut run, late, standard);
    assert_eq!(run.status(), Status::AwaitingApproval);
    match run.pending() {
        Some(Pending::Approval { node, deadline, .. }) => {
            assert_eq!(node, "gate");
            assert_eq!(*deadline, Some(late + Duration::minutes(120)));
        }
        other => panic!("expected a pending gate, got {other:?}"),
    }
    assert_eq!(run.error(), None);
    assert!(run.history().iter().any(|h| h.event == "retry" && h.node.as_deref() == Some("gate")));
    // The draft step was not re-run.
    assert_eq!(run.record(&pid("draft")).map(|r| (r.attempts, r.started_at)), Some((1, t0())));
    run.respond(&pid("gate"), Response::Answer("skip".into()), late + Duration::minutes(1)).unwrap();
    drive(&mut run, late + Duration::minutes(1), standard);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.skipped(), ["s"]);
}

// ---- agents ------------------------------------------------------------------------------

#[test]
fn agent_without_backend_parks_awaiting_agent_with_the_rendered_prompt_and_resumes_on_output() {
    let design = json!({
        "nodes": [
            manual(),
            {"id": "fetch", "type": "command", "run": "echo feed"},
            {"id": "draft", "type": "agent", "prompt": "Summarise {{nodes.fetch}} for {{trigger.who}}", "profile": "writer", "model": "llama3.2"},
            {"id": "send", "type": "output"}
        ],
        "edges": [edge("start", "fetch"), edge("fetch", "draft"), edge("draft", "send")]
    });
    let mut run = start_with(&design, json!({"who": "Ana"}));
    drive(&mut run, t0(), |t| match &t.work {
        Work::Agent { .. } => Outcome::ParkAgent,
        _ => done("feed items"),
    });
    assert_eq!(run.status(), Status::AwaitingAgent);
    let result = run.result();
    assert_eq!(result["status"], "awaiting_agent");
    assert_eq!(
        result["pending"],
        json!({"type": "agent", "node": "draft", "prompt": "Summarise feed items for Ana", "profile": "writer", "model": "llama3.2"})
    );
    assert_eq!(run.record(&pid("draft")).map(|r| r.status), Some(StepStatus::AwaitingAgent));
    let e = run.respond(&pid("draft"), Response::Answer("approve".into()), t0()).unwrap_err();
    assert!(matches!(e, EngineError::BadRequest(_)), "{e:?}");
    run.respond(&pid("draft"), Response::Output("the brief".into()), t0()).unwrap();
    let tasks = drive(&mut run, t0(), |_| panic!("nothing left for a driver"));
    assert!(tasks.is_empty());
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["draft"]["text"], "the brief");
    assert_eq!(run.outputs()["draft"]["model"], "llama3.2");
    assert_eq!(run.outputs()["send"]["text"], "the brief");
}

fn agent_chain(retries: u64) -> Value {
    json!({
        "nodes": [manual(), {"id": "draft", "type": "agent", "prompt": "p", "retries": retries}, {"id": "send", "type": "output"}],
        "edges": [edge("start", "draft"), edge("draft", "send")]
    })
}

#[test]
fn agent_retries_until_an_attempt_succeeds_and_records_each_failure() {
    let mut run = start(&agent_chain(2));
    let mut calls = 0;
    let tasks = drive(&mut run, t0(), |_| {
        calls += 1;
        if calls <= 2 { failed(&format!("backend down {calls}")) } else { done("draft text") }
    });
    assert_eq!(tasks.iter().map(|t| t.attempt).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(run.status(), Status::Done);
    let r = run.record(&pid("draft")).unwrap();
    assert_eq!(r.status, StepStatus::Done);
    assert_eq!(r.attempts, 3);
    assert_eq!(r.failures, ["backend down 1", "backend down 2"]);
    assert_eq!(r.error, None);
    let tries: Vec<_> = r.tries.iter().map(|t| (t.attempt, t.status, t.error.as_deref(), t.output_bytes)).collect();
    assert_eq!(
        tries,
        [
            (1, StepStatus::Failed, Some("backend down 1"), None),
            (2, StepStatus::Failed, Some("backend down 2"), None),
            (3, StepStatus::Done, None, Some("draft text".len() as u64)),
        ]
    );
    assert!(r.tries.iter().all(|t| t.finished_at == Some(t0())));
}

#[test]
fn agent_with_no_retries_left_fails_the_run() {
    let mut run = start(&agent_chain(0));
    let tasks = drive(&mut run, t0(), |_| failed("backend down"));
    assert_eq!(tasks.len(), 1);
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.text()), Some("backend down"));
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("draft"));
    assert!(run.record(&pid("send")).is_none());
    // Retries exhausted: 1 + 2 attempts, then the run fails with the last error.
    let mut run = start(&agent_chain(2));
    let tasks = drive(&mut run, t0(), |t| failed(&format!("attempt {}", t.attempt)));
    assert_eq!(tasks.len(), 3);
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.text()), Some("attempt 3"));
    assert_eq!(run.record(&pid("draft")).map(|r| r.failures.len()), Some(2));
}

#[test]
fn token_budget_exceeded_fails_the_run() {
    let mut design = agent_chain(0);
    design["budget"] = json!({"tokens": 100});
    let mut run = start(&design);
    drive(&mut run, t0(), |_| Outcome::Done { text: "long answer".into(), extra: Map::new(), tokens: 150 });
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.text()), Some("token budget exceeded"));
    assert_eq!(TOKEN_BUDGET_EXCEEDED, "token budget exceeded");
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("draft"));
    assert_eq!(run.tokens_used(), 150);
    assert!(run.record(&pid("send")).is_none());
    // Within the budget the run finishes.
    let mut run = start(&design);
    drive(&mut run, t0(), |_| Outcome::Done { text: "short".into(), extra: Map::new(), tokens: 100 });
    assert_eq!(run.status(), Status::Done);
}

// ---- retry and interruption --------------------------------------------------------------

#[test]
fn retry_reruns_from_the_failed_step_and_keeps_the_steps_before_it() {
    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "one"}, {"id": "b", "type": "agent", "prompt": "two {{nodes.a}}"},
                  {"id": "c", "type": "agent", "prompt": "three {{nodes.b}}"}],
        "edges": [edge("start", "a"), edge("a", "b"), edge("b", "c")]
    });
    let mut run = start(&design);
    drive(&mut run, t0(), |t| if t.node == "b" { failed("flaky") } else { done(&format!("{} out", t.node)) });
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("b"));
    let a_record = run.record(&pid("a")).cloned().unwrap();
    let a_output = run.outputs()["a"].clone();

    let t1 = t0() + Duration::minutes(10);
    run.retry(t1).unwrap();
    assert_eq!(run.status(), Status::Running);
    assert_eq!((run.error(), run.failed_node()), (None, None));
    let tasks = drive(&mut run, t1, |t| done(&format!("{} again", t.node)));
    assert_eq!(node_ids(&tasks), ["b", "c"]);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.record(&pid("a")), Some(&a_record));
    assert_eq!(run.outputs()["a"], a_output);
    assert_eq!(run.record(&pid("b")).map(|r| r.started_at), Some(t1));
    assert_eq!(run.outputs()["c"]["text"], "c again");
    assert_eq!(step_nodes(&run), ["a", "b", "c"]);
    assert_eq!(run.created_at(), t0());
    assert_eq!(run.updated_at(), t1);
    // The earlier attempt stays in history, and on the step's record with the new one.
    let retry = run.history().iter().find(|h| h.event == "retry").expect("retry in history");
    assert_eq!(retry.detail["error"], "flaky");
    let b = run.record(&pid("b")).unwrap();
    assert_eq!((b.attempts, b.status, b.error.as_deref()), (2, StepStatus::Done, None));
    assert_eq!(b.failures, ["flaky"]);
    let tries: Vec<_> =
        b.tries.iter().map(|t| (t.attempt, t.status, t.started_at, t.finished_at, t.error.as_deref(), t.output_bytes)).collect();
    assert_eq!(
        tries,
        [
            (1, StepStatus::Failed, t0(), Some(t0()), Some("flaky"), None),
            (2, StepStatus::Done, t1, Some(t1), None, Some("b again".len() as u64)),
        ]
    );
    let json = run.result();
    assert_eq!(json["steps"][1]["attempts"], 2);
    assert_eq!(
        json["steps"][1]["tries"],
        json!([
            {"attempt": 1, "status": "failed", "started_at": "2026-11-29T09:00:00.000Z", "finished_at": "2026-11-29T09:00:00.000Z", "error": "flaky", "output_bytes": null},
            {"attempt": 2, "status": "done", "started_at": "2026-11-29T09:10:00.000Z", "finished_at": "2026-11-29T09:10:00.000Z", "error": null, "output_bytes": 7}
        ])
    );

    let e = run.retry(t1).unwrap_err();
    assert!(matches!(e, EngineError::Conflict(_)), "{e:?}");
}

#[test]
fn retry_of_a_parked_or_running_run_is_a_conflict() {
    let mut run = parked_gate(json!({}));
    assert!(matches!(run.retry(t0()), Err(EngineError::Conflict(_))));
    let mut run = start(&agent_chain(0));
    assert!(matches!(run.retry(t0()), Err(EngineError::Conflict(_))));
}

#[test]
fn interrupted_running_step_fails_the_run_and_retry_finishes_it() {
    let mut run = start(&agent_chain(0));
    let Advance::Tasks(tasks) = run.advance(t0()) else { panic!("expected a task") };
    assert_eq!(node_ids(&tasks), ["draft"]);
    // The process dies here; whoever opens the run later marks it.
    let later = t0() + Duration::minutes(3);
    run.mark_interrupted(later);
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.text()), Some("interrupted during step draft"));
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("draft"));
    // A late report of the dead attempt is refused.
    assert!(matches!(run.complete(&pid("draft"), done("zombie"), later), Err(EngineError::Conflict(_))));
    run.retry(later).unwrap();
    let tasks = drive(&mut run, later, standard);
    assert_eq!(node_ids(&tasks), ["draft"]);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["draft"]["text"], "draft text");
    // mark_interrupted leaves a parked run alone.
    let mut run = parked_gate(json!({}));
    let before = run.clone();
    run.mark_interrupted(later);
    assert_eq!(run, before);
}

// ---- templates and outputs ---------------------------------------------------------------

#[test]
fn missing_template_path_at_run_time_is_a_step_error_never_an_empty_string() {
    let design = json!({
        "nodes": [manual(), {"id": "x", "type": "agent", "prompt": "p"}, {"id": "y", "type": "agent", "prompt": "Title: {{nodes.x.title}}"}],
        "edges": [edge("start", "x"), edge("x", "y")]
    });
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), |_| done("plain text, not JSON"));
    assert_eq!(node_ids(&tasks), ["x"], "y must never be handed out with an empty value");
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("y"));
    let error = run.error().cloned().unwrap_or_default();
    assert!(error.contains("title"), "{error}");
    assert_eq!(run.record(&pid("y")).map(|r| r.status), Some(StepStatus::Failed));
    // With the path present the same design runs.
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), |t| if t.node == "x" { done(r#"{"title": "Hello"}"#) } else { done("ok") });
    assert_eq!(run.status(), Status::Done);
    assert!(matches!(&tasks[1].work, Work::Agent { prompt, .. } if prompt == "Title: Hello"));
}

#[test]
fn output_without_deliver_collects_parents_texts_in_plan_order_separated_by_a_blank_line() {
    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "A"}, {"id": "b", "type": "agent", "prompt": "B"},
                  {"id": "o", "type": "output"}],
        // Edges list b before a: the plan order (a, b) decides.
        "edges": [edge("start", "a"), edge("start", "b"), edge("b", "o"), edge("a", "o")]
    });
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), |t| done(&format!("text {}", t.node)));
    assert_eq!(node_ids(&tasks), ["a", "b"]);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["o"]["text"], "text a\n\ntext b");
    assert_eq!(run.outputs()["o"]["collected"], json!({"b": "text b", "a": "text a"}));
    assert_eq!(run.outputs()["o"]["deliveries"], json!([]));
    assert!(run.deliveries().is_empty());
}

#[test]
fn output_template_renders_the_message() {
    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "A"},
                  {"id": "o", "type": "output", "template": "Brief for {{run.design}}: {{nodes.a}} ({{nodes.a.words}} words)"}],
        "edges": [edge("start", "a"), edge("a", "o")]
    });
    let mut run = start(&design);
    drive(&mut run, t0(), standard);
    assert_eq!(run.outputs()["o"]["text"], "Brief for test: draft text (2 words)");
}

#[test]
fn failed_delivery_fails_the_run_and_is_recorded() {
    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "A"},
                  {"id": "send", "type": "output", "deliver": "channel", "target": "telegram:123456"}],
        "edges": [edge("start", "a"), edge("a", "send")]
    });
    let mut run = start(&design);
    let tasks = drive(&mut run, t0(), standard);
    assert_eq!(node_ids(&tasks), ["a", "send"]);
    assert!(matches!(&tasks[1].work, Work::Deliver { message, deliver, target, .. }
        if message == "draft text" && *deliver == Deliver::Channel && target == "telegram:123456"));
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("send"));
    assert_eq!(run.error().map(|e| e.text()), Some("delivery to telegram:123456 failed: no channel configured"));
    let result = run.result();
    assert_eq!(
        result["deliveries"],
        json!([{"node": "send", "target": "telegram:123456", "ok": false, "detail": "no channel configured", "at": "2026-11-29T09:00:00.000Z"}])
    );
    // An acknowledged delivery finishes the step and is recorded on it too.
    let mut run = start(&design);
    drive(&mut run, t0(), |t| match &t.work {
        Work::Deliver { target, .. } => Outcome::Delivered(Delivery {
            node: t.node.to_string(),
            target: target.clone(),
            ok: true,
            detail: "message_id 42".into(),
            at: t0(),
        }),
        _ => done("draft text"),
    });
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.deliveries().len(), 1);
    assert_eq!(run.outputs()["send"]["deliveries"][0]["detail"], "message_id 42");
    assert_eq!(run.outputs()["send"]["text"], "draft text");
}

#[test]
fn note_nodes_are_dropped_from_the_plan() {
    let design = json!({
        "nodes": [{"id": "tip", "type": "note", "text": "Runs every weekday", "color": "yellow"}, manual(),
                  {"id": "a", "type": "agent", "prompt": "A"}, {"id": "tip2", "type": "note"}],
        "edges": [edge("start", "a")]
    });
    let mut run = start(&design);
    assert_eq!(plan_ids(&run), ["a"]);
    assert_eq!(run.plan().trigger_id(), Some("start"));
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::Done);
    assert_eq!(step_nodes(&run), ["a"]);
    assert!(!run.outputs().contains_key("tip"));
    assert!(run.skipped().is_empty());
}

#[test]
fn a_run_keeps_the_plan_it_started_with() {
    let value = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "original prompt"}],
        "edges": [edge("start", "a")]
    });
    let mut design = Design::from_value(&value).unwrap();
    let plan = Plan::compile("test", &design).unwrap();
    let mut run = Run::start(
        plan.clone(),
        vwf_core::names::RunId::parse(RUN_ID).expect("an id"),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, Value::Null),
        t0(),
    );
    // The design is edited (and recompiled) while the run is in flight.
    design.nodes[1].raw.insert("prompt".into(), json!("edited prompt"));
    design.nodes.push(Design::from_value(&json!({"nodes": [{"id": "z", "type": "output"}]})).unwrap().nodes.remove(0));
    assert_ne!(Plan::compile("test", &design).unwrap(), plan);
    // It is also persisted and read back in between.
    let file = serde_json::to_string(&run).unwrap();
    run = serde_json::from_str(&file).unwrap();
    assert_eq!(run.plan(), &plan);
    let tasks = drive(&mut run, t0(), standard);
    assert!(matches!(&tasks[0].work, Work::Agent { prompt, .. } if prompt == "original prompt"));
    assert_eq!(plan_ids(&run), ["a"]);
    assert_eq!(run.status(), Status::Done);
}

#[test]
fn the_same_design_and_input_give_identical_outputs() {
    let design = json!({
        "nodes": [
            manual(),
            {"id": "fetch", "type": "command", "argv": ["echo", "{{trigger.city}}"]},
            {"id": "c", "type": "condition", "expr": "out.fetch.words >= 1"},
            {"id": "w", "type": "wait", "seconds": 30},
            {"id": "o", "type": "output", "template": "{{nodes.fetch}} / {{nodes.c}}"},
            {"id": "n", "type": "output"}
        ],
        "edges": [edge("start", "fetch"), edge("fetch", "c"), labelled("c", "w", "true"), labelled("c", "n", "false"), edge("w", "o")]
    });
    let once = || {
        let mut run = start_with(&design, json!({"city": "Oslo"}));
        let driver = |t: &Task| match &t.work {
            Work::Command(CommandStep { program: Program::Argv(a), .. }) => done(&a.join(" ")),
            other => panic!("unexpected {other:?}"),
        };
        drive(&mut run, t0(), driver);
        assert_eq!(run.status(), Status::Waiting);
        assert_eq!(run.next_wake(), Some(t0() + Duration::seconds(30)));
        drive(&mut run, t0() + Duration::seconds(30), driver);
        assert_eq!(run.status(), Status::Done, "{:#}", run.result());
        run
    };
    let (a, b) = (once(), once());
    assert_eq!(serde_json::to_string(a.outputs()).unwrap(), serde_json::to_string(b.outputs()).unwrap());
    assert_eq!(a.skipped(), b.skipped());
    assert_eq!(a.result(), b.result());
    assert_eq!(a.outputs()["o"]["text"], "echo Oslo / true");
    assert_eq!(a.outputs()["w"]["resumed_at"], "2026-11-29T09:00:30.000Z");
}

#[test]
fn respond_to_a_failed_run_is_a_conflict_even_with_a_gate_still_parked() {
    // The gate parks, then a sibling branch fails the run: the run waits on nothing any more.
    let design = json!({
        "nodes": [manual(), {"id": "gate", "type": "approval", "question": "ok?"}, {"id": "x", "type": "agent", "prompt": "p"},
                  {"id": "after", "type": "output"}],
        "edges": [edge("start", "gate"), edge("start", "x"), edge("gate", "after")]
    });
    let mut run = start(&design);
    drive(&mut run, t0(), |_| failed("backend down"));
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("x"));
    assert_eq!(run.pending(), None);
    let before = run.clone();
    let e = run.respond(&pid("gate"), Response::Answer("approve".into()), t0()).unwrap_err();
    assert!(matches!(e, EngineError::Conflict(_)), "{e:?}");
    assert_eq!(run, before);
    // After a retry the gate is waiting again and can be answered.
    run.retry(t0()).unwrap();
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::AwaitingApproval, "{:#}", run.result());
    run.respond(&pid("gate"), Response::Answer("approve".into()), t0()).unwrap();
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::Done);
}

#[test]
fn a_sibling_failing_while_a_task_is_in_flight_keeps_the_run_failed() {
    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "p"}, {"id": "c", "type": "condition", "expr": "out.start.n > 1"},
                  {"id": "yes", "type": "output"}],
        "edges": [edge("start", "a"), edge("start", "c"), labelled("c", "yes", "true")]
    });
    let mut run = start_with(&design, json!({"n": "not a number"}));
    let tasks = drive(&mut run, t0(), standard);
    assert_eq!(node_ids(&tasks), ["a"]);
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("c"));
    assert!(run.error().map(|e| e.text()).unwrap_or_default().contains("cannot compare"));
    assert_eq!(run.outputs()["a"]["text"], "draft text");
    assert!(run.record(&pid("yes")).is_none());
}

#[test]
fn step_output_over_one_mebibyte_is_a_step_error() {
    let mut run = start(&agent_chain(0));
    let big = "x".repeat(vwf_core::limits::STEP_OUTPUT_BYTES + 1);
    drive(&mut run, t0(), |_| done(&big));
    assert_eq!(run.status(), Status::Failed);
    assert!(run.error().map(|e| e.text()).unwrap_or_default().contains("limit"), "{:?}", run.error());
    assert!(!run.outputs().contains_key("draft"));
}

// ---- every attempt is kept --------------------------------------------------------------

/// Agents that retry, a loop whose body runs in passes, and a second agent after the loop.
fn retrying_design(retries_a: u64, retries_c: u64) -> Value {
    json!({
        "nodes": [manual(),
            {"id": "a", "type": "agent", "prompt": "p", "retries": retries_a},
            {"id": "l", "type": "loop", "over": "{{trigger}}", "concurrency": 2},
            {"id": "body", "type": "command", "run": "echo {{item}}"},
            {"id": "c", "type": "agent", "prompt": "q", "retries": retries_c},
            {"id": "out", "type": "output"}],
        "edges": [edge("start", "a"), edge("a", "l"), labelled("l", "body", "each"), labelled("l", "c", "done"), edge("c", "out")]
    })
}

/// What the kept attempts of every step must look like, whatever happened to the run.
fn check_tries(run: &Run, given: &std::collections::HashMap<String, Vec<String>>) {
    for r in run.steps() {
        let n = r.tries.len();
        assert_eq!(n as u32, r.attempts, "{}: one try per attempt: {r:?}", r.node);
        assert!(n >= 1, "{r:?}");
        for (i, t) in r.tries.iter().enumerate() {
            assert_eq!(t.attempt, i as u32 + 1, "{r:?}");
            if i + 1 < n {
                assert_eq!(t.status, StepStatus::Failed, "an earlier attempt ended failed: {r:?}");
                assert!(t.finished_at.is_some() && t.error.is_some(), "{r:?}");
            }
            if let Some(f) = t.finished_at {
                assert!(f >= t.started_at, "{r:?}");
            }
            if i > 0 {
                assert!(t.started_at >= r.tries[i - 1].finished_at.unwrap_or(t.started_at), "{r:?}");
            }
            assert_eq!(t.output_bytes.is_some(), t.status == StepStatus::Done, "{r:?}");
        }
        let last = &r.tries[n - 1];
        let earlier: Vec<&str> = r.tries[..n - 1].iter().filter_map(|t| t.error.as_deref()).collect();
        if r.status == StepStatus::Retrying {
            assert_eq!((last.status, last.finished_at.is_some()), (StepStatus::Failed, true), "{r:?}");
            let all: Vec<&str> = r.tries.iter().filter_map(|t| t.error.as_deref()).collect();
            assert_eq!(r.failures, all, "{r:?}");
        } else {
            assert_eq!((last.status, last.started_at, last.finished_at), (r.status, r.started_at, r.finished_at), "{r:?}");
            assert_eq!(last.error, r.error, "{r:?}");
            assert_eq!(r.failures, earlier, "{r:?}");
        }
        // Every error a driver reported for this step is still on its record, in order.
        let kept: Vec<&str> = r.tries.iter().filter_map(|t| t.error.as_deref()).collect();
        let mut rest = kept.iter();
        for e in given.get(r.node.as_str()).into_iter().flatten() {
            assert!(rest.any(|k| k == e), "{}: the error {e:?} was lost; kept {kept:?}", r.node);
        }
    }
    let json = run.result();
    for (r, j) in run.steps().iter().zip(json["steps"].as_array().unwrap()) {
        assert_eq!(j["tries"].as_array().map(Vec::len), Some(r.tries.len()), "{j}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

    /// Whatever the drivers answer (done, failed, parked) and however often the run is retried,
    /// every attempt of every step stays on its record, numbered, in time order, with its error.
    #[test]
    fn retries_of_any_kind_keep_every_attempt(
        retries_a in 0u64..=3,
        retries_c in 0u64..=3,
        answers in proptest::collection::vec(0u8..10, 1..40),
        items in 1usize..4,
        crashes in proptest::collection::vec(proptest::bool::weighted(0.2), 12),
    ) {
        let mut run = start_with(&retrying_design(retries_a, retries_c), json!((0..items).collect::<Vec<_>>()));
        let mut given: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
        let mut k = 0usize;
        let mut now = t0();
        for crash in crashes {
            if crash {
                // The process dies with tasks handed out; whoever opens the run marks it.
                while let Advance::Settled(_) = run.advance(now) {}
                run.mark_interrupted(now);
            }
            drive(&mut run, now, |t| {
                k += 1;
                match answers[k % answers.len()] {
                    6..=8 => {
                        let e = format!("error {k}");
                        given.entry(t.node.to_string()).or_default().push(e.clone());
                        failed(&e)
                    }
                    9 if matches!(t.work, Work::Agent { .. }) => Outcome::ParkAgent,
                    _ => standard(t),
                }
            });
            check_tries(&run, &given);
            accessors_show_the_file(&run);
            now += Duration::minutes(1);
            let waits_on = run.pending().and_then(|p| p.step().cloned());
            match (run.status(), waits_on) {
                (Status::AwaitingAgent, Some(node)) => run.respond(&node, Response::Output("typed".into()), now).unwrap(),
                (Status::Failed, _) => run.retry(now).unwrap(),
                (Status::Done, _) => break,
                (other, _) => panic!("unexpected {other:?}: {:#}", run.result()),
            }
            check_tries(&run, &given);
        }
    }
}

/// Run files written before failure reasons were typed (the fixtures were saved by that code) load
/// with the reason their text names, save back byte for byte, and behave as they did: a late answer
/// to a gate that timed out gets the verdict unchanged, and the run can be retried.
#[test]
fn stored_failed_runs_load_with_their_typed_reason_and_behave_the_same() {
    let cases = [
        (include_str!("fixtures/gate_timed_out.run.json"), RunFailure::ApprovalTimedOut, true),
        (include_str!("fixtures/gate_timed_out_escalated.run.json"), RunFailure::ApprovalTimedOutEscalated, true),
        (include_str!("fixtures/interrupted.run.json"), RunFailure::interrupted(Some("draft")), false),
    ];
    for (text, reason, gate) in cases {
        let mut run: Run = serde_json::from_str(text).unwrap();
        assert_eq!(run.error(), Some(&reason));
        assert_eq!(serde_json::to_string_pretty(&run).unwrap(), text);
        let late = t0() + Duration::hours(4);
        if gate {
            let frozen = run.clone();
            assert_eq!(run.respond(&pid("gate"), Response::Answer("send".into()), late), Ok(()));
            assert_eq!(run, frozen);
        } else {
            assert!(matches!(run.respond(&pid("gate"), Response::Answer("send".into()), late), Err(EngineError::Conflict(_))));
        }
        run.retry(late).unwrap();
        assert_eq!(run.error(), None);
        drive(&mut run, late, standard);
        assert_eq!(run.status(), Status::AwaitingApproval, "{}", reason);
    }
}

proptest::proptest! {
    /// Any error text reads back as itself; only the engine's own texts read as typed reasons.
    #[test]
    fn every_failure_text_round_trips(text in ".*") {
        let failure = RunFailure::from(text.clone());
        proptest::prop_assert_eq!(failure.to_string(), text.clone());
        proptest::prop_assert_eq!(&*failure, text.as_str());
        let json = serde_json::to_value(&failure).unwrap();
        proptest::prop_assert_eq!(serde_json::from_value::<RunFailure>(json).unwrap(), failure);
    }
}

#[test]
fn the_engines_own_failure_texts_are_typed() {
    for (text, reason) in [
        ("approval timed out", RunFailure::ApprovalTimedOut),
        ("approval timed out; escalation requested", RunFailure::ApprovalTimedOutEscalated),
        ("token budget exceeded", RunFailure::TokenBudgetExceeded),
        ("interrupted", RunFailure::interrupted(None)),
        ("interrupted during step draft", RunFailure::interrupted(Some("draft"))),
    ] {
        assert_eq!(RunFailure::from(text), reason);
        assert_eq!(reason.to_string(), text);
    }
    for other in ["Approval timed out", "approval timed out ", "interrupted during step ", "interrupted by a signal", "boom"] {
        assert_eq!(RunFailure::from(other), RunFailure::Error(other.into()), "{other}");
    }
}

// ---- the run's accessors -----------------------------------------------------------------

fn as_json<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap()
}

/// Each accessor of `run` returns what its run file holds under the same name, and every field
/// of the file but `loops` (the engine's own bookkeeping) has an accessor.
fn accessors_show_the_file(run: &Run) {
    let file = as_json(run);
    let shown = [
        ("ok", as_json(run.ok())),
        ("run_id", as_json(run.run_id())),
        ("design", as_json(run.design())),
        ("status", as_json(run.status())),
        ("version", as_json(run.version())),
        ("pending", as_json(run.pending())),
        ("outputs", as_json(run.outputs())),
        ("skipped", as_json(run.skipped())),
        ("deliveries", as_json(run.deliveries())),
        ("error", as_json(run.error())),
        ("failed_node", as_json(run.failed_node())),
        ("steps", as_json(run.steps())),
        ("trigger", as_json(run.trigger())),
        ("retry_of", as_json(run.retry_of())),
        ("created_at", as_json(vwf_core::time::format(&run.created_at()))),
        ("updated_at", as_json(vwf_core::time::format(&run.updated_at()))),
        ("tokens_used", as_json(run.tokens_used())),
        ("parked", as_json(run.parked())),
        ("history", as_json(run.history())),
        ("plan", as_json(run.plan())),
    ];
    for (field, value) in &shown {
        assert_eq!(&file[field], value, "{field} of {file:#}");
    }
    let fields = file.as_object().unwrap();
    let unshown: Vec<_> = fields.keys().filter(|k| *k != "loops" && !shown.iter().any(|(f, _)| f == k)).collect();
    assert!(unshown.is_empty(), "fields without an accessor: {unshown:?}");
}

/// The accessors in every state the engine can leave a run in: parked on a gate, an agent or a
/// wait, done with skipped steps and a delivery, failed, retried (the loops and every driver
/// answer are covered by `retries_of_any_kind_keep_every_attempt`, which checks them too).
#[test]
fn the_accessors_return_what_the_run_file_holds() {
    let mut run = parked_gate(json!({}));
    accessors_show_the_file(&run);
    assert_eq!(run.pending().map(|p| p.node().to_string()).as_deref(), Some("gate"));
    run.respond(&pid("gate"), Response::Answer("send".into()), t0()).unwrap();
    drive(&mut run, t0(), standard);
    assert_eq!((run.status(), run.skipped()), (Status::Done, &["k".to_string()][..]));
    accessors_show_the_file(&run);

    let wait = json!({"nodes": [manual(), {"id": "w", "type": "wait", "seconds": 60}], "edges": [edge("start", "w")]});
    let mut run = start(&wait);
    drive(&mut run, t0(), standard);
    assert_eq!(run.status(), Status::Waiting);
    accessors_show_the_file(&run);

    let mut run = start(&agent_chain(0));
    drive(&mut run, t0(), |_| Outcome::ParkAgent);
    assert_eq!(run.status(), Status::AwaitingAgent);
    accessors_show_the_file(&run);

    let design = json!({
        "nodes": [manual(), {"id": "a", "type": "agent", "prompt": "A"},
                  {"id": "send", "type": "output", "deliver": "channel", "target": "telegram:123456"}],
        "edges": [edge("start", "a"), edge("a", "send")]
    });
    let mut run = start(&design);
    drive(&mut run, t0(), |t| match t.work {
        Work::Agent { .. } => Outcome::Done { text: "draft".into(), extra: Map::new(), tokens: 40 },
        _ => standard(t),
    });
    assert_eq!((run.status(), run.failed_node().map(|n| n.as_str()), run.tokens_used()), (Status::Failed, Some("send"), 40));
    accessors_show_the_file(&run);
    let later = t0() + Duration::minutes(5);
    run.retry(later).unwrap();
    drive(&mut run, later, standard);
    assert!(!run.history().is_empty() && run.updated_at() == later);
    accessors_show_the_file(&run);
}

// ---- what each step received -------------------------------------------------------------

/// One step of each kind that hands out a task, each given secrets where a design can hold them:
/// a command's `env`, a URL's user info and query of an http step, and `{{secrets.TOKEN}}` (whose
/// value is `secret`, see [`token`]) in a command's `env` and an http step's URL, headers and body.
fn every_task_kind(secret: &str) -> Value {
    json!({
        "nodes": [
            manual(),
            {"id": "sh", "type": "command", "run": "curl -H \"X: $TOKEN\" {{trigger.city}}", "cwd": "/tmp/{{trigger.city}}",
             "env": {"TOKEN": secret, "PLAIN": "{{trigger.city}}", "REF": "{{secrets.TOKEN}}"}},
            {"id": "args", "type": "command", "argv": ["echo", "{{trigger.city}}"], "env": {"KEY": secret}},
            {"id": "call", "type": "http", "method": "POST",
             "url": format!("https://user:{secret}@api.example.org/v1/{{{{secrets.TOKEN}}}}?q={{{{trigger.city}}}}&access_token={secret}"),
             "headers": {"Authorization": "Bearer {{secrets.TOKEN}}", "X-Api-Key": "{{secrets.TOKEN}}", "X-Echo": "{{secrets.TOKEN}}", "Accept": "application/json"},
             "body": {"city": "{{trigger.city}}", "key": "{{secrets.TOKEN}}"}},
            {"id": "ask", "type": "agent", "prompt": "Weather in {{trigger.city}}?", "profile": "writer", "model": "m1"},
            {"id": "send", "type": "output", "deliver": "channel", "target": "telegram:123456", "template": "{{nodes.ask}}"},
            {"id": "tell", "type": "emit", "event": "city.done", "payload": {"city": "{{trigger.city}}"}}
        ],
        "edges": [edge("start", "sh"), edge("sh", "args"), edge("args", "call"), edge("call", "ask"), edge("ask", "send"),
                  edge("ask", "tell")]
    })
}

/// `{{secrets.TOKEN}}` standing for `secret`.
fn token(secret: &str) -> Secrets {
    let mut secrets = Secrets::default();
    secrets.insert("TOKEN", secret.to_string());
    secrets
}

fn delivered(task: &Task) -> Outcome {
    match &task.work {
        Work::Deliver { target, .. } => Outcome::Delivered(Delivery {
            node: task.node.to_string(),
            target: target.clone(),
            ok: true,
            detail: "message_id 1".into(),
            at: t0(),
        }),
        _ => standard(task),
    }
}

/// Each step that ran a task keeps what it received, rendered, with secrets shown as `***`.
#[test]
fn each_step_keeps_its_rendered_inputs_with_secrets_redacted() {
    let secret = "s3cr3t-Zq81kP";
    let mut run = start_with(&every_task_kind(secret), json!({"city": "Oslo"}));
    let tasks: Vec<Task> = common::drive_batches_with(&mut run, t0(), &token(secret), delivered).into_iter().flatten().collect();
    assert_eq!(run.status(), Status::Done, "{:#}", run.result());
    // The tasks themselves carry the value: it is what the drivers send.
    let call = tasks.iter().find(|t| t.node == "call").expect("the http task");
    let Work::Http(http) = &call.work else { panic!("not http") };
    assert_eq!(http.headers["Authorization"], format!("Bearer {secret}"));
    assert!(http.url.contains(&format!("/v1/{secret}?")), "{}", http.url);
    let inputs: Map<String, Value> = run.steps().iter().map(|r| (r.node.to_string(), r.inputs.clone().unwrap_or(Value::Null))).collect();
    insta::assert_json_snapshot!("inputs_per_step_kind", inputs);
    let result = run.result().to_string();
    assert!(!result.contains(secret), "the run result holds the secret: {result}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Whatever a secret written in a design holds, it never reaches the run result through a
    /// command's `env`, a credential header, a URL's user info or a secret query parameter (the
    /// run file keeps it only in its copy of the design, the plan a retry runs).
    #[test]
    fn no_design_secret_reaches_the_run_result(secret in "[A-Za-z0-9_.~-]{8,40}") {
        let mut run = start_with(&every_task_kind(&secret), json!({"city": "Oslo"}));
        common::drive_batches_with(&mut run, t0(), &token(&secret), delivered);
        let result = run.result().to_string();
        proptest::prop_assert!(!result.contains(&secret), "the run result holds {secret:?}");
    }
}

/// A retry from the start is a new run of the plan it is given, with the old run's trigger,
/// linked by `retry_of`; a run still in progress cannot be retried that way.
#[test]
fn a_retry_from_the_start_is_a_new_linked_run_of_the_new_plan() {
    let old_design = json!({"nodes": [manual(), {"id": "a", "type": "command", "run": "echo old"}], "edges": [edge("start", "a")]});
    let mut old = start_with(&old_design, json!({"city": "Oslo"}));
    let parked = old.clone();
    drive(&mut old, t0(), |_| failed("boom"));
    assert_eq!(old.status(), Status::Failed);
    let new_design = json!({"nodes": [manual(), {"id": "b", "type": "command", "run": "echo new"}], "edges": [edge("start", "b")]});
    let mut new = Run::start_retry_of(&old, plan_of(&new_design), vwf_core::names::RunId::parse("aaaaaaaaaaaa").unwrap(), t0()).unwrap();
    assert_eq!((new.retry_of(), new.trigger()), (Some(RUN_ID), old.trigger()));
    let tasks = drive(&mut new, t0(), standard);
    assert_eq!(node_ids(&tasks), ["b"]);
    assert_eq!(new.result()["retry_of"], json!(RUN_ID));
    common::save_and_read_back(&mut new);
    accessors_show_the_file(&new);
    let refused = Run::start_retry_of(&parked, plan_of(&new_design), vwf_core::names::RunId::parse("bbbbbbbbbbbb").unwrap(), t0());
    assert!(matches!(refused, Err(EngineError::Conflict(_))), "{refused:?}");
}
