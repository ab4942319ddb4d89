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
    assert_eq!(run.record("merged").map(|r| r.status), Some(StepStatus::AwaitingEvent));

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
    assert_eq!(run.failed_node(), Some("merged"));
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
