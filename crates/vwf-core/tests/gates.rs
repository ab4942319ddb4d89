//! Gates that several people answer and that announce themselves (`approvers`, `notify`,
//! `context`), driven through the public engine API and read back after every call.

use chrono::{TimeZone, Utc};
use serde_json::{Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::run::{Delivery, EngineError, Outcome, Pending, Reply, Response, Run, Status, Task, TriggerInfo};
use vwf_core::time::Ts;

use crate::common;
use crate::common::pid;

fn t0() -> Ts {
    Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap()
}

fn design(gate: Value) -> Value {
    let mut g = json!({"id": "gate", "type": "approval", "question": "Ship {{nodes.draft}}?", "options": ["approve", "reject"]});
    g.as_object_mut().unwrap().extend(gate.as_object().unwrap().clone());
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "draft", "type": "agent", "prompt": "write"},
            g,
            {"id": "sent", "type": "output"}
        ],
        "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "gate"}, {"from": "gate", "to": "sent", "label": "approve"}]
    })
}

fn parked(gate: Value) -> Run {
    let d = Design::from_value(&design(gate)).expect("design");
    let plan = Plan::compile("test", &d).unwrap_or_else(|r| panic!("{r:?}"));
    let mut run = Run::start(
        plan,
        vwf_core::names::RunId::parse("aa11bb22cc33").unwrap(),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, Value::Null),
        t0(),
    );
    common::drive_batches(&mut run, t0(), |_: &Task| Outcome::Done { text: "the draft".into(), extra: Default::default(), tokens: 0 });
    assert_eq!(run.status(), Status::AwaitingApproval);
    run
}

fn answer(run: &mut Run, answer: &str, by: Option<&str>, via: &str) -> Result<(), EngineError> {
    let reply = Reply { answer: answer.into(), by: by.map(String::from), via: Some(via.into()), ..Reply::default() };
    let r = run.respond(&pid("gate"), Response::Answer(reply), t0());
    common::save_and_read_back(run);
    r
}

fn votes(run: &Run) -> Vec<(String, String)> {
    match run.parked().iter().find(|p| p.node() == "gate") {
        Some(Pending::Approval { votes, .. }) => votes.iter().map(|v| (v.by.clone(), v.answer.clone())).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn two_distinct_people_decide_a_gate_that_requires_two() {
    let mut run = parked(json!({"approvers": {"required": 2}}));
    assert!(matches!(answer(&mut run, "approve", None, "api"), Err(EngineError::BadRequest(_))), "who answers must be said");
    answer(&mut run, "approve", Some("ann"), "api").unwrap();
    assert_eq!(run.status(), Status::AwaitingApproval, "one of two is not enough");
    assert_eq!(votes(&run), vec![("ann".to_string(), "approve".to_string())]);
    let again = answer(&mut run, "approve", Some("ann"), "cli");
    assert!(matches!(again, Err(EngineError::Conflict(ref m)) if m.contains("already answered")), "{again:?}");
    assert_eq!(votes(&run).len(), 1, "a refused answer writes nothing");
    answer(&mut run, "reject", Some("bo"), "api").unwrap();
    assert_eq!(run.status(), Status::AwaitingApproval, "answers of different options do not add up");
    answer(&mut run, "approve", Some("cy"), "cli").unwrap();
    common::drive_batches(&mut run, t0(), |_: &Task| Outcome::Done { text: String::new(), extra: Default::default(), tokens: 0 });
    assert_eq!(run.status(), Status::Done);
    let out = &run.outputs()["gate"];
    assert_eq!(out["answer"], "approve");
    assert_eq!(out["by"], "cy");
    let who: Vec<&str> = out["approvers"].as_array().unwrap().iter().map(|v| v["by"].as_str().unwrap()).collect();
    assert_eq!(who, ["ann", "bo", "cy"], "every answer is kept with who gave it");
    assert_eq!(out["approvers"][2]["via"], "cli");
    assert!(run.outputs().contains_key("sent"));
}

#[test]
fn a_veto_decides_at_once_and_only_allowed_people_count() {
    let mut run = parked(json!({"approvers": {"required": 3, "allowed": ["ann", "bo", "telegram:42"], "veto": ["reject"]}}));
    let refused = answer(&mut run, "approve", Some("eve"), "api");
    assert!(matches!(refused, Err(EngineError::Forbidden(_))), "{refused:?}");
    let forged = answer(&mut run, "approve", Some("telegram:42"), "api");
    assert!(matches!(forged, Err(EngineError::BadRequest(_))), "only Telegram's callback is telegram:42: {forged:?}");
    assert!(votes(&run).is_empty());
    answer(&mut run, "approve", Some("telegram:42"), "telegram").unwrap();
    answer(&mut run, "reject", Some("bo"), "api").unwrap();
    assert_ne!(run.status(), Status::AwaitingApproval, "the veto ended the gate");
    assert_eq!(run.outputs()["gate"]["answer"], "reject");
}

#[test]
fn without_approvers_the_first_answer_decides_as_before() {
    let mut run = parked(json!({}));
    answer(&mut run, "approve", None, "api").unwrap();
    assert_eq!(run.outputs()["gate"]["answer"], "approve");
    assert!(run.outputs()["gate"].get("approvers").is_none());
}

#[test]
fn a_gate_with_notify_hands_out_one_notice_with_its_context_until_recorded() {
    let mut run = parked(json!({"notify": ["telegram:123", "slack:#ops"], "fields": [{"name": "note", "type": "text", "required": true}]}));
    let notices = run.notices();
    assert_eq!(notices.len(), 1);
    let n = &notices[0];
    assert_eq!((n.node.as_str(), n.question.as_str()), ("gate", "Ship the draft?"));
    assert_eq!(n.context, "the draft", "default context: the texts of the gate's parents");
    assert_eq!(n.targets, ["telegram:123", "slack:#ops"]);
    assert!(n.needs_form, "a required field cannot be answered by a button");
    let sent = |target: &str| Delivery { node: "gate".into(), target: target.into(), ok: true, detail: "message_id 7".into(), at: t0() };
    run.record_notices(&pid("gate"), vec![sent("telegram:123"), sent("slack:#ops")], t0());
    common::save_and_read_back(&mut run);
    assert!(run.notices().is_empty(), "sent once");
    assert_eq!(run.result()["pending"]["notified"], true, "the pending gate shows it");
    assert_eq!(run.deliveries().len(), 2);
    // A context template is rendered when the gate opens and cut to the platforms' size.
    let run = parked(json!({"notify": ["webhook:a"], "context": "Draft: {{nodes.draft}}"}));
    assert_eq!(run.notices()[0].context.trim(), "Draft: the draft");
    assert!(!run.notices()[0].needs_form);
    // Without notify there is nothing to send.
    assert!(parked(json!({})).notices().is_empty());
}

#[test]
fn bad_approvers_and_notify_are_refused_naming_the_field() {
    for (gate, field) in [
        (json!({"approvers": {"required": 0}}), "approvers"),
        (json!({"approvers": {"veto": ["maybe"]}}), "approvers"),
        (json!({"notify": ["discord:x"]}), "notify"),
        (json!({"notify": "telegram:1"}), "notify"),
    ] {
        let d = Design::from_value(&design(gate.clone())).expect("design");
        let report = Plan::compile("test", &d).expect_err("refused");
        let found = report.errors.iter().any(|e| e.node.as_deref() == Some("gate") && e.field.as_deref() == Some(field));
        assert!(found, "{gate}: {report:?}");
    }
}

#[test]
fn a_tap_counts_once_and_a_counted_answer_keeps_its_values_and_edits() {
    let gate = json!({"approvers": {"required": 2, "distinct": false}, "edit": ["draft"], "fields": [{"name": "note", "type": "text"}]});
    let mut run = parked(gate);
    let tap = |run: &mut Run, tap: &str| {
        let reply = Reply {
            answer: "approve".into(),
            by: Some("telegram:7".into()),
            via: Some("telegram".into()),
            tap: Some(tap.into()),
            ..Reply::default()
        };
        let r = run.respond(&pid("gate"), Response::Answer(reply), t0());
        common::save_and_read_back(run);
        r
    };
    tap(&mut run, "telegram:cb1").unwrap();
    let again = tap(&mut run, "telegram:cb1");
    assert!(matches!(again, Err(EngineError::Conflict(ref m)) if m.contains("tap was counted already")), "{again:?}");
    assert_eq!(votes(&run).len(), 1, "the same tap delivered twice counts once, even without distinct");
    // Another person's counted answer with a value and an edit: the edit is in effect at once
    // (the gate shows the new text), the value kept with the answer.
    let mut fields = serde_json::Map::new();
    fields.insert("note".into(), json!("tighten it"));
    let reply = Reply {
        answer: "reject".into(),
        by: Some("ann".into()),
        via: Some("api".into()),
        fields,
        edits: [("draft".to_string(), "the better draft".to_string())].into(),
        tap: None,
    };
    run.respond(&pid("gate"), Response::Answer(reply), t0()).unwrap();
    common::save_and_read_back(&mut run);
    assert_eq!(run.status(), Status::AwaitingApproval);
    assert_eq!(run.outputs()["draft"]["text"], "the better draft");
    assert_eq!(run.outputs()["draft"]["edited"]["by"], "ann");
    match run.parked().iter().find(|p| p.node() == "gate") {
        Some(Pending::Approval { edit, votes, .. }) => {
            assert_eq!(edit["draft"], "the better draft", "the next person sees the changed text");
            assert_eq!(votes[1].fields["note"], "tighten it");
        }
        other => panic!("{other:?}"),
    }
}
