//! Designs that compose (SPEC §3 `wait_event`): a run that waits mid-way for an event whose
//! payload matches what it names, with a deadline the clock the test moves decides.

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::run::settle::Settle;
use vwf_core::run::{Outcome, Pending, Run, Status, StepStatus};
use vwf_core::time::Ts;
use vwf_core::validate::validate;

use crate::common;
use crate::common::{path, pid};

fn t0() -> Ts {
    Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap()
}

fn start_with(design: &Value, input: Value) -> Run {
    let d = Design::from_value(design).unwrap_or_else(|e| panic!("design does not parse: {e:?}"));
    let plan = Plan::compile("test", &d).unwrap_or_else(|r| panic!("design is not valid: {r:?}"));
    Run::start(
        plan,
        vwf_core::names::RunId::parse("d7b493cae249").unwrap(),
        vwf_core::run::TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, input),
        t0(),
    )
}

fn done(text: &str) -> Outcome {
    Outcome::Done { text: text.into(), extra: Map::new(), tokens: 0 }
}

/// trigger → merged (wait_event) → after (command).
fn waits_for(wait: Value) -> Value {
    let mut node = json!({"id": "merged", "type": "wait_event", "event": "pr.merged"});
    node.as_object_mut().unwrap().extend(wait.as_object().unwrap().clone());
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            node,
            {"id": "after", "type": "command", "run": "echo {{nodes.merged.text}}"},
        ],
        "edges": [{"from": "start", "to": "merged"}, {"from": "merged", "to": "after"}],
    })
}

fn parked_event(run: &Run) -> (String, Option<String>, Option<Ts>) {
    match run.pending() {
        Some(Pending::Event { event, matches, deadline, .. }) => (event.clone(), matches.clone(), *deadline),
        other => panic!("not waiting for an event: {other:?} ({:?})", run.status()),
    }
}

#[test]
fn a_run_waits_for_the_event_its_match_names_then_goes_on_with_the_payload() {
    let mut run = start_with(&waits_for(json!({"match": "event.payload.pr == {{trigger.pr}}", "timeout": "1d"})), json!({"pr": 42}));
    common::drive_batches(&mut run, t0(), |_| done("unused"));
    assert_eq!(run.status(), Status::AwaitingEvent);
    let (event, matches, deadline) = parked_event(&run);
    assert_eq!(event, "pr.merged");
    assert_eq!(matches.as_deref(), Some("event.payload.pr == 42"), "the template is rendered when the wait begins");
    assert_eq!(deadline, Some(t0() + Duration::days(1)));
    assert_eq!(run.awaited_events(), ["pr.merged"]);
    assert_eq!(run.record(&pid("merged")).map(|r| r.status), Some(StepStatus::AwaitingEvent));

    // Another event, another PR, a payload without the path: none of these resumes it.
    let later = t0() + Duration::minutes(5);
    assert!(run.receive_event("pr.opened", &json!({"pr": 42}), later).is_empty());
    assert!(run.receive_event("pr.merged", &json!({"pr": 41}), later).is_empty());
    assert!(run.receive_event("pr.merged", &json!({"other": true}), later).is_empty());
    assert!(run.receive_event("pr.merged", &json!("not an object"), later).is_empty());
    common::save_and_read_back(&mut run);
    assert_eq!(run.status(), Status::AwaitingEvent);

    let payload = json!({"pr": 42, "sha": "abc123"});
    assert_eq!(run.receive_event("pr.merged", &payload, later), ["merged"]);
    common::save_and_read_back(&mut run);
    let view = &run.outputs()["merged"];
    assert_eq!(view["payload"], payload);
    assert_eq!(view["event"], "pr.merged");
    assert_eq!(view["timed_out"], false);
    assert_eq!(view["text"], payload.to_string());
    let mut commands = Vec::new();
    common::drive_batches(&mut run, later, |task| {
        commands.push(task.node.clone());
        done("ok")
    });
    assert_eq!(commands, ["after"]);
    assert_eq!(run.status(), Status::Done);
    // Answered once: a second event finds nothing waiting.
    assert!(run.receive_event("pr.merged", &payload, later).is_empty());
}

#[test]
fn a_wait_with_no_match_takes_any_event_of_its_name_and_a_text_payload_is_its_text() {
    let mut run = start_with(&waits_for(json!({})), Value::Null);
    common::drive_batches(&mut run, t0(), |_| done("unused"));
    assert_eq!(parked_event(&run).1, None);
    assert_eq!(run.receive_event("pr.merged", &json!("shipped"), t0()), ["merged"]);
    assert_eq!(run.outputs()["merged"]["text"], "shipped");
}

#[test]
fn a_match_value_rendered_as_a_word_is_compared_as_text() {
    let mut run = start_with(&waits_for(json!({"match": "event.payload.branch == {{trigger.branch}}"})), json!({"branch": "main"}));
    common::drive_batches(&mut run, t0(), |_| done("unused"));
    assert_eq!(parked_event(&run).1.as_deref(), Some("event.payload.branch == \"main\""));
    assert!(run.receive_event("pr.merged", &json!({"branch": "dev"}), t0()).is_empty());
    assert_eq!(run.receive_event("pr.merged", &json!({"branch": "main"}), t0()), ["merged"]);
}

#[test]
fn the_deadline_fails_the_run_or_goes_on_with_no_payload() {
    let mut run = start_with(&waits_for(json!({"timeout": "10m"})), Value::Null);
    common::drive_batches(&mut run, t0(), |_| done("unused"));
    let deadline = t0() + Duration::minutes(10);
    assert_eq!(run.next_due(), Some(deadline));
    assert_eq!(run.due(deadline - Duration::seconds(1), true), None);
    assert_eq!(run.due(deadline, false), Some(Settle::DeadlinePassed));
    assert!(run.enforce_deadlines(deadline));
    common::save_and_read_back(&mut run);
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.to_string()).as_deref(), Some("timed out waiting for event \"pr.merged\""));
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("merged"));
    assert!(run.receive_event("pr.merged", &json!({}), deadline).is_empty(), "a late event changes nothing");

    let mut run = start_with(&waits_for(json!({"timeout": 600, "on_timeout": "continue"})), Value::Null);
    common::drive_batches(&mut run, t0(), |_| done("unused"));
    // It goes on when it times out: a wait that comes due, which a listing does not resume.
    assert_eq!(run.due(deadline, false), None);
    assert_eq!(run.due(deadline, true), Some(Settle::WaitDue));
    let mut ran = Vec::new();
    common::drive_batches(&mut run, deadline, |task| {
        ran.push(task.node.clone());
        done("ok")
    });
    assert_eq!(run.status(), Status::Done);
    assert_eq!(ran, ["after"]);
    assert_eq!(run.outputs()["merged"]["timed_out"], true);
    assert_eq!(run.outputs()["merged"]["payload"], Value::Null);
}

#[test]
fn a_run_timeout_ends_a_wait_for_an_event() {
    let mut design = waits_for(json!({}));
    design["timeout"] = json!("1h");
    let mut run = start_with(&design, Value::Null);
    common::drive_batches(&mut run, t0(), |_| done("unused"));
    let at = t0() + Duration::hours(1);
    assert_eq!(run.next_due(), Some(at));
    assert_eq!(run.due(at, false), Some(Settle::TimedOut));
}

#[test]
fn an_emit_in_the_same_run_answers_its_own_wait() {
    let design = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "merged", "type": "wait_event", "event": "ready", "match": "event.payload.n >= 2"},
            {"id": "announce", "type": "emit", "event": "ready", "payload": {"n": 3}},
        ],
        "edges": [{"from": "start", "to": "merged"}, {"from": "start", "to": "announce"}],
    });
    let mut run = start_with(&design, Value::Null);
    common::drive_batches(&mut run, t0(), |task| {
        assert_eq!(task.node, "announce");
        let mut extra = Map::new();
        extra.insert("event".into(), json!("ready"));
        Outcome::Done { text: "{\"n\":3}".into(), extra, tokens: 0 }
    });
    assert_eq!(run.status(), Status::Done, "{:?}", run.pending());
    assert_eq!(run.outputs()["merged"]["payload"], json!({"n": 3}));
}

#[test]
fn a_bad_wait_event_is_refused_with_its_field_named() {
    let cases = [
        (json!({"event": "bad name!"}), "event"),
        (json!({"match": "out.x.y == 1"}), "match"),
        (json!({"match": "event.name == 1"}), "match"),
        (json!({"match": "event.payload.n >"}), "match"),
        (json!({"timeout": "soon"}), "timeout"),
        (json!({"timeout": 0}), "timeout"),
        (json!({"timeout": "400d"}), "timeout"),
        (json!({"on_timeout": "reject"}), "on_timeout"),
    ];
    for (fields, field) in cases {
        let report = validate(&waits_for(fields.clone()));
        assert!(!report.ok, "{fields} should be refused");
        assert!(
            report.errors.iter().any(|e| e.field.as_deref() == Some(field) && e.node.as_deref() == Some("merged")),
            "{fields}: {:?}",
            report.errors
        );
    }
    let mut missing = waits_for(json!({}));
    missing["nodes"][1].as_object_mut().unwrap().remove("event");
    assert!(!validate(&missing).ok);
    assert!(validate(&waits_for(json!({"match": "event.payload == \"go\"", "timeout": "7d", "on_timeout": "continue"}))).ok);
}

// ---- design steps -------------------------------------------------------------------------

fn plan_of(name: &str, design: &Value) -> Plan {
    let d = Design::from_value(design).unwrap_or_else(|e| panic!("design does not parse: {e:?}"));
    Plan::compile(name, &d).unwrap_or_else(|r| panic!("design is not valid: {r:?}"))
}

/// trigger → sub (a design step calling `child`) → after (a command using the child's output).
fn parent_design(step: Value) -> Value {
    let mut node = json!({"id": "sub", "type": "design", "design": "child", "input": {"name": "{{trigger.name}}"}});
    node.as_object_mut().expect("node").extend(step.as_object().expect("fields").clone());
    json!({
        "budget": {"tokens": 100},
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "think", "type": "agent", "prompt": "think"},
            node,
            {"id": "after", "type": "command", "run": "echo {{nodes.sub.outputs.greet.text}}"},
        ],
        "edges": [{"from": "start", "to": "think"}, {"from": "think", "to": "sub"}, {"from": "sub", "to": "after"}],
    })
}

/// trigger → greet (an agent step) → gate (an approval, when `gated`).
fn child_design(gated: bool) -> Value {
    let mut nodes = vec![
        json!({"id": "t", "type": "trigger", "mode": "manual"}),
        json!({"id": "greet", "type": "agent", "prompt": "greet {{trigger.name}}"}),
    ];
    let mut edges = vec![json!({"from": "t", "to": "greet"})];
    if gated {
        nodes.push(json!({"id": "gate", "type": "approval", "question": "send {{nodes.greet}}?"}));
        edges.push(json!({"from": "greet", "to": "gate"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

fn tokens(text: &str, tokens: u64) -> Outcome {
    Outcome::Done { text: text.into(), extra: Map::new(), tokens }
}

/// The parent started (its agent step used `parent_tokens`), parked on its design step.
fn parent_at_child(step: Value, parent_tokens: u64) -> Run {
    let mut parent = start_with(&parent_design(step), json!({"name": "ada"}));
    common::drive_batches(&mut parent, t0(), |_| tokens("thought", parent_tokens));
    assert_eq!(parent.status(), Status::AwaitingChild, "{:#}", parent.result());
    parent
}

/// Makes the child the parent asks for, as a runner would.
fn make_child(parent: &mut Run, gated: bool) -> Run {
    let start = parent.child_to_start(t0()).expect("a child to start");
    let child = Run::start_child(parent, &start, plan_of("child", &child_design(gated)), t0());
    parent.child_started(&start.node, t0());
    common::save_and_read_back(parent);
    child
}

#[test]
fn a_parent_waits_for_its_child_and_takes_its_outputs() {
    let mut parent = parent_at_child(json!({}), 0);
    match parent.pending() {
        Some(Pending::Child { node, design, input, wait, started, .. }) => {
            assert_eq!((node.to_string().as_str(), design.as_str(), wait, started), ("sub", "child", &true, &false));
            assert_eq!(input, &json!({"name": "ada"}), "the input is rendered when the step begins");
        }
        other => panic!("not waiting for a child: {other:?}"),
    }
    let start = parent.child_to_start(t0()).expect("a child to start");
    assert_eq!(start.nesting, 1);
    // Every process that takes the parent up means the same child.
    let again = start_with(&parent_design(json!({})), json!({"name": "ada"}));
    let mut again = again;
    common::drive_batches(&mut again, t0(), |_| tokens("thought", 0));
    assert_eq!(again.child_to_start(t0()).map(|s| s.run_id), Some(start.run_id.clone()));

    let mut child = make_child(&mut parent, false);
    assert_eq!(parent.child_runs(), [child.run_id().clone()]);
    assert_eq!(child.parent_run(), Some(parent.run_id()));
    assert_eq!(child.trigger().mode, vwf_core::trigger::TriggerMode::Parent);
    assert_eq!((child.trigger().nesting, &child.trigger().input), (1, &json!({"name": "ada"})));
    assert!(parent.child_to_start(t0()).is_none(), "started once");
    assert_eq!(parent.waited_children(), [child.run_id()]);

    // Still running: nothing to take.
    assert!(!parent.child_moved(&child, t0()));
    common::drive_batches(&mut child, t0(), |task| {
        assert_eq!(task.node, "greet");
        tokens("hello ada", 30)
    });
    assert_eq!(child.status(), Status::Done);
    assert!(parent.child_moved(&child, t0()));
    common::save_and_read_back(&mut parent);
    let view = &parent.outputs()["sub"];
    assert_eq!(view["text"], "hello ada");
    assert_eq!(view["outputs"]["greet"]["text"], "hello ada");
    assert_eq!((view["run_id"].as_str(), view["status"].as_str()), (Some(child.run_id().as_str()), Some("done")));
    assert_eq!(parent.tokens_used(), 30, "the child's tokens count in the parent");
    let mut commands = Vec::new();
    common::drive_batches(&mut parent, t0(), |task| {
        if let vwf_core::run::Work::Command(c) = &task.work {
            commands.push(format!("{:?}", c.env));
        }
        done("ok")
    });
    assert_eq!(parent.status(), Status::Done);
    assert!(commands.iter().any(|c| c.contains("hello ada")), "{commands:?}");
}

#[test]
fn a_failed_child_fails_the_step_and_its_retry_policy_starts_a_new_child() {
    let mut parent = parent_at_child(json!({"retry": {"max_attempts": 2, "delay": 0}}), 0);
    let mut child = make_child(&mut parent, false);
    common::drive_batches(&mut child, t0(), |_| Outcome::failed("the model is down"));
    assert_eq!(child.status(), Status::Failed);
    assert!(parent.child_moved(&child, t0()));
    // Retried: a new attempt, a new child.
    common::drive_batches(&mut parent, t0(), |_| done("unused"));
    assert_eq!(parent.status(), Status::AwaitingChild);
    let second = parent.child_to_start(t0()).expect("the retry's child");
    assert_ne!(&second.run_id, child.run_id());
    let mut child = make_child(&mut parent, false);
    common::drive_batches(&mut child, t0(), |_| Outcome::failed("still down"));
    assert!(parent.child_moved(&child, t0()));
    common::save_and_read_back(&mut parent);
    assert_eq!(parent.status(), Status::Failed);
    assert_eq!(parent.failed_node().map(|n| n.as_str()), Some("sub"));
    let error = parent.error().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(error, format!("child run {} of design child failed at greet: still down", child.run_id()));
    assert_eq!(parent.child_runs().len(), 2);
}

#[test]
fn a_childs_gate_shows_in_the_parent_and_is_answered_through_it() {
    let mut parent = parent_at_child(json!({}), 0);
    let mut child = make_child(&mut parent, true);
    common::drive_batches(&mut child, t0(), |_| tokens("hello ada", 0));
    assert_eq!(child.status(), Status::AwaitingApproval);
    assert!(parent.child_moved(&child, t0()));
    assert!(!parent.child_moved(&child, t0()), "nothing new");
    common::save_and_read_back(&mut parent);
    assert_eq!(parent.status(), Status::AwaitingChild);
    match parent.pending() {
        Some(Pending::Approval { node, question, run_id, .. }) => {
            assert_eq!((node.to_string().as_str(), question.as_str()), ("sub/gate", "send hello ada?"));
            assert_eq!(run_id.as_ref(), Some(child.run_id()));
        }
        other => panic!("the parent does not show the child's gate: {other:?}"),
    }
    assert_eq!(parent.child_route(&path("sub/gate")), Some((child.run_id().clone(), path("gate"))));
    assert_eq!(parent.child_route(&path("sub/other")), None);
    assert_eq!(parent.child_route(&path("gate")), None);
    assert!(parent.respond(&pid("sub"), vwf_core::run::Response::Answer("approve".into()), t0()).is_err(), "the parent holds no gate");

    // The answer goes to the child, which ends; the parent takes it up.
    child.respond(&pid("gate"), vwf_core::run::Response::Answer("approve".into()), t0()).expect("answer");
    common::drive_batches(&mut child, t0(), |_| done("unused"));
    assert_eq!(child.status(), Status::Done);
    assert!(parent.child_moved(&child, t0()));
    assert_eq!(parent.outputs()["sub"]["text"], "approve", "the child's last step's text");
    common::drive_batches(&mut parent, t0(), |_| done("ok"));
    assert_eq!(parent.status(), Status::Done);
}

#[test]
fn a_childs_tokens_count_against_the_parents_budget() {
    // The parent used 40 of its 100: the child may use 60.
    let mut parent = parent_at_child(json!({}), 40);
    assert_eq!(parent.child_to_start(t0()).and_then(|s| s.tokens_left), Some(60));
    let mut child = make_child(&mut parent, false);
    common::drive_batches(&mut child, t0(), |_| tokens("too long", 70));
    assert_eq!(
        child.error().map(|e| e.to_string()).as_deref(),
        Some("token budget exceeded"),
        "the child stops at what the parent has left"
    );
    assert!(parent.child_moved(&child, t0()));
    assert_eq!(parent.tokens_used(), 110);
    assert_eq!(parent.status(), Status::Failed);
    assert_eq!(parent.error().map(|e| e.to_string()).as_deref(), Some("token budget exceeded"));
    assert_eq!(parent.failed_node().map(|n| n.as_str()), Some("sub"));
}

#[test]
fn a_step_that_does_not_wait_records_its_child_and_goes_on() {
    let mut parent = parent_at_child(json!({"wait": false}), 0);
    let child = make_child(&mut parent, false);
    let view = &parent.outputs()["sub"];
    assert_eq!((view["run_id"].as_str(), view["status"].as_str()), (Some(child.run_id().as_str()), Some("started")));
    assert!(parent.waited_children().is_empty());
    assert!(!parent.child_moved(&child, t0()), "a child not waited for changes nothing");
}

#[test]
fn design_steps_nest_at_most_the_depth_limit() {
    let mut parent = parent_at_child(json!({}), 0);
    let mut nested = parent.clone();
    for _ in 0..vwf_core::limits::DESIGN_DEPTH {
        let start = nested.child_to_start(t0()).expect("within the limit");
        let mut child = Run::start_child(&nested, &start, plan_of("parent", &parent_design(json!({}))), t0());
        common::drive_batches(&mut child, t0(), |_| tokens("thought", 0));
        nested = child;
    }
    assert_eq!(nested.trigger().nesting, vwf_core::limits::DESIGN_DEPTH);
    assert!(nested.child_to_start(t0()).is_none(), "one deeper is refused");
    assert_eq!(nested.status(), Status::Failed);
    assert!(nested.error().is_some_and(|e| e.contains("nest at most 8 deep")), "{:?}", nested.error());
    assert!(parent.child_to_start(t0()).is_some());
}

#[test]
fn a_static_cycle_of_calls_is_found_with_its_path() {
    let designs: std::collections::BTreeMap<&str, Value> = [
        ("a", parent_design(json!({"design": "b"}))),
        ("b", parent_design(json!({"design": "c"}))),
        ("c", parent_design(json!({"design": "a"}))),
        ("d", parent_design(json!({"design": "child"}))),
    ]
    .into_iter()
    .collect();
    let calls = |name: &vwf_core::names::DesignName| -> Vec<vwf_core::names::DesignName> {
        designs.get(name.as_str()).map_or_else(Vec::new, |g| {
            vwf_core::calls::called(&Design::from_value(g).expect("design")).into_iter().map(|(_, n)| n).collect()
        })
    };
    let name = |s: &str| vwf_core::names::DesignName::parse(s).expect("name");
    let path = vwf_core::calls::cycle(&name("a"), &calls).expect("a cycle");
    assert_eq!(path.iter().map(|n| n.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "a"]);
    assert_eq!(vwf_core::calls::cycle(&name("d"), &calls), None);
}
