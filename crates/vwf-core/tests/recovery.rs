//! Steps that fail well (SPEC §3 `retry`, `on_error`, `error` edges): retry policies whose waits
//! park the run durably, error paths, `on_error: "continue"`, and the default that stays: a
//! broken step with none of these fails the run.
//!
//! Time moves only when a test moves it: a retry's wait is a `Pending::Wait` with its
//! `resume_at`, and the test advances to exactly that instant (or just before it).

use chrono::{Duration, TimeZone, Utc};
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::recovery::Cause;
use vwf_core::run::{Outcome, Pending, Run, Status, StepStatus, Task, TriggerInfo};
use vwf_core::time::Ts;
use vwf_core::validate::validate;

use crate::common;
use crate::common::pid;

fn t0() -> Ts {
    Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap()
}

fn design(nodes: Value, edges: Value) -> Value {
    json!({"nodes": nodes, "edges": edges})
}

fn start(design: &Value) -> Run {
    let d = Design::from_value(design).unwrap_or_else(|e| panic!("design does not parse: {e:?}"));
    let plan = Plan::compile("test", &d).unwrap_or_else(|r| panic!("design is not valid: {r:?}"));
    Run::start(
        plan,
        vwf_core::names::RunId::parse("d7b493cae249").unwrap(),
        TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, Value::Null),
        t0(),
    )
}

fn drive(run: &mut Run, now: Ts, answer: impl FnMut(&Task) -> Outcome) -> Vec<Task> {
    common::drive_batches(run, now, answer).into_iter().flatten().collect()
}

fn done(text: &str) -> Outcome {
    Outcome::Done { text: text.into(), extra: Map::new(), tokens: 0 }
}

fn status(code: u16, retry_after: Option<u64>) -> Outcome {
    Outcome::Failed { error: format!("HTTP {code} is not an accepted status (accept: 2xx)"), cause: Cause::Status { code, retry_after } }
}

fn http(retry: Value) -> Value {
    design(
        json!([
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "fetch", "type": "http", "url": "http://127.0.0.1:9/feed", "retry": retry},
            {"id": "after", "type": "command", "run": "true"},
        ]),
        json!([{"from": "start", "to": "fetch"}, {"from": "fetch", "to": "after"}]),
    )
}

/// The wait the run is parked on: (node, resume_at, next_attempt).
fn retry_wait(run: &Run) -> (String, Ts, Option<u32>) {
    match run.pending() {
        Some(Pending::Wait { node, resume_at, next_attempt, .. }) => (node.to_string(), *resume_at, *next_attempt),
        other => panic!("not parked on a wait: {other:?} ({:?})", run.status()),
    }
}

/// Drives the run through every retry wait, each at exactly its `resume_at`, answering each
/// attempt of `fetch` from `answers` in order. Returns the instants the attempts started.
fn through_waits(run: &mut Run, answers: &mut Vec<Outcome>) -> Vec<Ts> {
    let mut started = Vec::new();
    let mut now = t0();
    loop {
        drive(run, now, |task| {
            if task.node == "fetch" {
                started.push(now);
                answers.remove(0)
            } else {
                done("ok")
            }
        });
        if run.status() != Status::Waiting {
            return started;
        }
        let (node, resume_at, next) = retry_wait(run);
        assert_eq!(node, "fetch");
        // Just before its time the run stays parked: nothing is handed out.
        let before = resume_at - Duration::milliseconds(1);
        assert!(drive(run, before, |_| panic!("an attempt started before its wait ended")).is_empty());
        assert_eq!(run.status(), Status::Waiting);
        assert_eq!(next, Some(run.record(&pid("fetch")).unwrap().attempts + 1));
        now = resume_at;
    }
}

#[test]
fn a_503_503_200_succeeds_on_the_third_attempt_after_the_policys_waits() {
    let mut run = start(&http(json!({"max_attempts": 5, "delay": "1s", "factor": 3, "jitter": false, "on": ["5xx"]})));
    let mut answers = vec![status(503, None), status(503, None), done("fresh")];
    let started = through_waits(&mut run, &mut answers);
    assert_eq!(run.status(), Status::Done, "{:?}", run.error());
    assert_eq!(started, [t0(), t0() + Duration::seconds(1), t0() + Duration::seconds(4)]);
    let r = run.record(&pid("fetch")).unwrap();
    assert_eq!((r.attempts, r.status), (3, StepStatus::Done));
    let delays: Vec<Option<u64>> = r.tries.iter().map(|t| t.delay_ms).collect();
    assert_eq!(delays, [Some(1000), Some(3000), None], "each failed attempt keeps the wait chosen after it");
    let statuses: Vec<StepStatus> = r.tries.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [StepStatus::Failed, StepStatus::Failed, StepStatus::Done]);
    assert!(r.tries[0].error.as_deref().unwrap().contains("HTTP 503"));
    assert_eq!(r.failures.len(), 2);
    assert!(run.handled().is_empty());
    assert_eq!(run.outputs()["after"]["text"], "ok");
}

#[test]
fn retry_after_is_waited_for_at_least_and_capped_by_max_delay() {
    let mut run = start(&http(json!({"max_attempts": 3, "delay": "1s", "jitter": false, "max_delay": "5s"})));
    let mut answers = vec![status(429, Some(2)), status(503, Some(3600)), done("ok")];
    let started = through_waits(&mut run, &mut answers);
    assert_eq!(run.status(), Status::Done);
    // 429 with Retry-After: 2 → 2 s (the policy's own 1 s is shorter); then 3600 s capped at 5 s.
    assert_eq!(started, [t0(), t0() + Duration::seconds(2), t0() + Duration::seconds(7)]);
}

#[test]
fn on_narrows_the_failures_that_retry() {
    let mut run = start(&http(json!({"max_attempts": 3, "on": ["5xx"]})));
    let tasks = drive(&mut run, t0(), |t| if t.node == "fetch" { status(404, None) } else { done("") });
    assert_eq!(tasks.len(), 1, "a 404 is not retried on [\"5xx\"]");
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("fetch"));
    assert_eq!(run.record(&pid("fetch")).unwrap().attempts, 1);
}

#[test]
fn attempts_used_up_fail_the_run_as_before() {
    let mut run = start(&http(json!({"max_attempts": 2, "delay": "1s", "jitter": false})));
    let mut answers = vec![status(500, None), status(500, None)];
    through_waits(&mut run, &mut answers);
    assert_eq!(run.status(), Status::Failed);
    assert!(run.error().unwrap().contains("HTTP 500"));
    assert_eq!(run.record(&pid("fetch")).unwrap().attempts, 2);
    assert!(run.skipped().is_empty() && run.record(&pid("after")).is_none());
}

#[test]
fn jittered_waits_lie_in_the_upper_half_and_are_recorded() {
    let mut run = start(&http(json!({"max_attempts": 4, "delay": "10s", "factor": 2})));
    let mut answers = vec![status(502, None), status(502, None), status(502, None), done("ok")];
    let started = through_waits(&mut run, &mut answers);
    let r = run.record(&pid("fetch")).unwrap();
    for (i, full) in [10_000u64, 20_000, 40_000].into_iter().enumerate() {
        let d = r.tries[i].delay_ms.unwrap();
        assert!(d >= full / 2 && d <= full, "attempt {}: {d} ms outside [{}, {full}]", i + 1, full / 2);
        assert_eq!(started[i + 1] - started[i], Duration::milliseconds(d as i64));
    }
}

#[test]
fn a_retry_wait_survives_a_save_and_a_reload() {
    let mut run = start(&http(json!({"max_attempts": 2, "delay": "30s", "jitter": false})));
    drive(&mut run, t0(), |_| status(503, None));
    assert_eq!(run.status(), Status::Waiting);
    assert_eq!(run.due(t0(), true), None);
    let (_, resume_at, _) = retry_wait(&run);
    // What a store holds is what a new process reads: the wait is there, due at its time.
    let mut back: Run = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
    assert_eq!(back.next_due(), Some(resume_at));
    assert_eq!(back.due(resume_at, true), Some(vwf_core::run::settle::Settle::WaitDue));
    let tasks = drive(&mut back, resume_at, |t| if t.node == "fetch" { done("late") } else { done("") });
    assert_eq!(tasks.iter().filter(|t| t.node == "fetch").map(|t| t.attempt).collect::<Vec<_>>(), [2], "the next attempt runs once");
    assert_eq!(back.status(), Status::Done);
}

#[test]
fn the_older_agent_retries_still_retry_at_once() {
    let d = design(
        json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "draft", "type": "agent", "prompt": "p", "retries": 2}]),
        json!([{"from": "start", "to": "draft"}]),
    );
    let mut run = start(&d);
    let mut n = 0;
    let tasks = drive(&mut run, t0(), |_| {
        n += 1;
        if n < 3 { Outcome::failed("backend down") } else { done("drafted") }
    });
    assert_eq!(tasks.len(), 3, "three attempts, no wait between");
    assert_eq!(run.status(), Status::Done);
    assert!(run.record(&pid("draft")).unwrap().tries.iter().all(|t| t.delay_ms.is_none()));
}

fn with_error_path(extra: Value) -> Value {
    let mut step = json!({"id": "build", "type": "command", "run": "exit 3"});
    step.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    design(
        json!([
            {"id": "start", "type": "trigger", "mode": "manual"},
            step,
            {"id": "ship", "type": "command", "run": "true"},
            {"id": "alert", "type": "command", "run": "echo {{nodes.build.error.message}} {{nodes.build.error.exit_code}} {{nodes.build.error.attempts}}"},
            {"id": "report", "type": "output"},
        ]),
        json!([
            {"from": "start", "to": "build"},
            {"from": "build", "to": "ship"},
            {"from": "build", "to": "alert", "label": "error"},
            {"from": "ship", "to": "report"},
            {"from": "alert", "to": "report"},
        ]),
    )
}

fn exit3() -> Outcome {
    Outcome::Failed { error: "command exited with code 3".into(), cause: Cause::Exit(3) }
}

#[test]
fn an_error_edge_runs_the_handler_with_the_error_and_the_run_is_done_with_it_handled() {
    let mut run = start(&with_error_path(json!({})));
    let mut seen = Vec::new();
    drive(&mut run, t0(), |t| {
        seen.push((t.node.clone(), t.work.clone()));
        if t.node == "build" { exit3() } else { done("handled") }
    });
    assert_eq!(run.status(), Status::Done, "{:?}", run.error());
    assert!(run.ok() && run.error().is_none());
    assert_eq!(run.record(&pid("build")).unwrap().status, StepStatus::Failed, "the failure stays visible on the step");
    assert_eq!(
        run.outputs()["build"]["error"],
        json!({"message": "command exited with code 3", "kind": "exit", "attempts": 1, "exit_code": 3})
    );
    assert_eq!(run.outputs()["build"]["text"], Value::Null);
    assert_eq!(run.handled().len(), 1);
    assert_eq!((run.handled()[0].node.as_str(), run.handled()[0].error.as_str()), ("build", "command exited with code 3"));
    assert_eq!(run.skipped(), ["ship"], "the normal branch is not taken");
    let alert = seen.iter().find(|(n, _)| n == "alert").expect("the handler ran");
    let vwf_core::run::Work::Command(c) = &alert.1 else { panic!("a command") };
    let values: Vec<&String> = c.env.values().collect();
    assert!(values.iter().any(|v| v.as_str() == "command exited with code 3"), "{values:?}");
    assert!(values.iter().any(|v| v.as_str() == "3") && values.iter().any(|v| v.as_str() == "1"), "{values:?}");
    assert_eq!(run.result()["handled"], json!([{"node": "build", "error": "command exited with code 3"}]));
}

#[test]
fn a_handler_that_fails_fails_the_run() {
    let mut run = start(&with_error_path(json!({})));
    drive(&mut run, t0(), |t| if t.node == "build" { exit3() } else { Outcome::failed("slack is down") });
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("alert"));
}

#[test]
fn without_an_error_edge_the_run_fails_exactly_as_before() {
    let d = design(
        json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "build", "type": "command", "run": "exit 3"}, {"id": "ship", "type": "command", "run": "true"}]),
        json!([{"from": "start", "to": "build"}, {"from": "build", "to": "ship"}]),
    );
    let mut run = start(&d);
    drive(&mut run, t0(), |_| exit3());
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("build"));
    assert_eq!(run.error().map(|e| e.to_string()), Some("command exited with code 3".into()));
    assert!(run.handled().is_empty() && !run.outputs().contains_key("build"));
    assert_eq!(run.result()["handled"], json!([]));
}

#[test]
fn retries_come_first_and_the_error_path_after_they_are_used_up() {
    let mut run = start(&with_error_path(json!({"retry": {"max_attempts": 2, "delay": "5s", "jitter": false, "on": [3]}})));
    drive(&mut run, t0(), |t| if t.node == "build" { exit3() } else { done("") });
    assert_eq!(run.status(), Status::Waiting);
    drive(&mut run, t0() + Duration::seconds(5), |t| if t.node == "build" { exit3() } else { done("") });
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["build"]["error"]["attempts"], 2);
}

#[test]
fn on_error_continue_takes_the_normal_edges_with_a_null_output_and_the_error() {
    let d = design(
        json!([
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "enrich", "type": "http", "url": "http://127.0.0.1:9/x", "on_error": "continue"},
            {"id": "next", "type": "command", "run": "true"},
        ]),
        json!([{"from": "start", "to": "enrich"}, {"from": "enrich", "to": "next"}]),
    );
    let mut run = start(&d);
    drive(&mut run, t0(), |t| if t.node == "enrich" { status(500, None) } else { done("went on") });
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.outputs()["enrich"]["text"], Value::Null);
    assert_eq!(run.outputs()["enrich"]["error"]["status"], 500);
    assert_eq!(run.outputs()["next"]["text"], "went on");
    assert_eq!(run.handled().len(), 1);
}

#[test]
fn a_run_retry_leaves_a_handled_failure_alone() {
    let mut run = start(&with_error_path(json!({})));
    drive(&mut run, t0(), |t| if t.node == "build" { exit3() } else { Outcome::failed("slack is down") });
    assert_eq!(run.failed_node().map(|n| n.as_str()), Some("alert"));
    run.retry(t0() + Duration::minutes(1)).unwrap();
    let tasks = drive(&mut run, t0() + Duration::minutes(1), |_| done("sent"));
    assert_eq!(tasks.iter().map(|t| t.node.as_str()).collect::<Vec<_>>(), ["alert"], "build is not run again");
    assert_eq!(run.status(), Status::Done);
    assert_eq!(run.record(&pid("build")).unwrap().attempts, 1);
}

#[test]
fn an_error_path_inside_a_loop_pass_is_handled_in_that_pass() {
    let d = design(
        json!([
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each", "type": "loop", "over": "[1, 2, 3]"},
            {"id": "get", "type": "http", "url": "http://127.0.0.1:9/{{item}}"},
            {"id": "note", "type": "command", "run": "true"},
            {"id": "end", "type": "output"},
        ]),
        json!([
            {"from": "start", "to": "each"},
            {"from": "each", "to": "get", "label": "each"},
            {"from": "get", "to": "note", "label": "error"},
            {"from": "each", "to": "end", "label": "done"},
        ]),
    );
    let mut run = start(&d);
    drive(&mut run, t0(), |t| if t.node == "get#1" { status(500, None) } else { done("ok") });
    assert_eq!(run.status(), Status::Done, "{:?}", run.error());
    assert_eq!(run.handled().iter().map(|h| h.node.as_str()).collect::<Vec<_>>(), ["get#1"]);
    assert_eq!(run.record(&pid("note#1")).map(|r| r.status), Some(StepStatus::Done));
    assert!(run.record(&pid("note#0")).is_none() && run.record(&pid("note#2")).is_none());
}

#[test]
fn the_validator_holds_error_paths_to_their_rules() {
    let check = |nodes: Value, edges: Value| validate(&design(nodes, edges));
    let t = json!({"id": "start", "type": "trigger", "mode": "manual"});
    // From a step that cannot fail: a warning that the label is only a name.
    let r = check(
        json!([t, {"id": "w", "type": "wait", "seconds": 5}, {"id": "x", "type": "command", "run": "true"}]),
        json!([{"from": "start", "to": "w"}, {"from": "w", "to": "x", "label": "error"}]),
    );
    assert!(r.ok && r.warnings.iter().any(|w| w.message.contains("cannot fail")), "{r:?}");
    // From an output without deliver: refused.
    let r = check(
        json!([t, {"id": "o", "type": "output"}, {"id": "x", "type": "command", "run": "true"}]),
        json!([{"from": "start", "to": "o"}, {"from": "o", "to": "x", "label": "error"}]),
    );
    assert!(!r.ok && r.errors.iter().any(|e| e.message.contains("cannot fail")), "{r:?}");
    // Into a node the normal branch reaches too: refused.
    let r = check(
        json!([t, {"id": "a", "type": "command", "run": "x"}, {"id": "b", "type": "command", "run": "x"}, {"id": "c", "type": "command", "run": "x"}]),
        json!([{"from": "start", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "a", "to": "c", "label": "error"}]),
    );
    assert!(!r.ok && r.errors.iter().any(|e| e.message.contains("also runs after a succeeds")), "{r:?}");
    // With on_error: continue too: refused.
    let r = check(
        json!([t, {"id": "a", "type": "command", "run": "x", "on_error": "continue"}, {"id": "b", "type": "command", "run": "x"}]),
        json!([{"from": "start", "to": "a"}, {"from": "a", "to": "b", "label": "error"}]),
    );
    assert!(!r.ok && r.errors.iter().any(|e| e.field.as_deref() == Some("on_error")), "{r:?}");
    // A join both branches reach after their own first step is fine; the label is stored lowercase.
    let d = design(
        json!([t, {"id": "a", "type": "command", "run": "x"}, {"id": "ok", "type": "command", "run": "x"}, {"id": "bad", "type": "command", "run": "x"}, {"id": "end", "type": "output"}]),
        json!([{"from": "start", "to": "a"}, {"from": "a", "to": "ok"}, {"from": "a", "to": "bad", "label": "Error"}, {"from": "ok", "to": "end"}, {"from": "bad", "to": "end"}]),
    );
    assert!(validate(&d).ok, "{:?}", validate(&d));
    let plan = Plan::compile("test", &Design::from_value(&d).unwrap()).unwrap();
    assert!(plan.has_error_edges("a") && !plan.has_error_edges("ok"));
}

/// The run a process left behind when it died while performing `fetch`: read back as a new
/// process reads it.
fn left_running(retry: Value) -> Run {
    let mut run = start(&http(retry));
    let tasks = match run.advance(t0()) {
        vwf_core::run::Advance::Tasks(t) => t,
        other => panic!("expected the fetch task, got {other:?}"),
    };
    assert_eq!(tasks[0].node, "fetch");
    common::save_and_read_back(&mut run);
    serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap()
}

#[test]
fn an_attempt_a_dead_process_left_unfinished_is_a_failed_attempt_its_policy_retries() {
    let mut run = left_running(json!({"max_attempts": 3, "delay": "10s", "jitter": false}));
    let later = t0() + Duration::minutes(1);
    run.mark_interrupted(later);
    common::save_and_read_back(&mut run);
    assert_eq!(run.status(), Status::Waiting, "{:?}", run.error());
    let r = run.record(&pid("fetch")).unwrap();
    assert_eq!(
        (r.attempts, r.tries[0].status, r.tries[0].error.as_deref()),
        (1, StepStatus::Failed, Some("interrupted during step fetch"))
    );
    let (_, resume_at, next) = retry_wait(&run);
    assert_eq!((resume_at, next), (later + Duration::seconds(10), Some(2)));
    let tasks = drive(&mut run, resume_at, |t| if t.node == "fetch" { done("ok") } else { done("") });
    assert_eq!(tasks.iter().filter(|t| t.node == "fetch").map(|t| t.attempt).collect::<Vec<_>>(), [2], "attempt 2 runs once");
    assert_eq!(run.status(), Status::Done);
}

#[test]
fn a_run_settled_but_not_driven_is_settled_the_same_way_by_the_next_reader() {
    // An immediate retry: the interrupted attempt leaves the step ready for attempt 2.
    let mut run = left_running(json!({"max_attempts": 3, "delay": 0}));
    run.mark_interrupted(t0());
    assert_eq!((run.status(), run.record(&pid("fetch")).unwrap().status), (Status::Running, StepStatus::Retrying));
    // Nobody drove it (a listing read it); the next reader finds it running, with no owner.
    let mut again: Run = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
    again.mark_interrupted(t0());
    assert_eq!(again.status(), Status::Running, "{:?}", again.error());
    assert_eq!(again.record(&pid("fetch")).unwrap().attempts, 1, "no attempt was lost or made up");
    drive(&mut again, t0(), |_| done("ok"));
    assert_eq!(again.status(), Status::Done);
    assert_eq!(again.record(&pid("fetch")).unwrap().attempts, 2);
}

#[test]
fn without_a_policy_an_interrupted_attempt_fails_the_run_as_before() {
    let mut run = left_running(json!({"max_attempts": 1}));
    run.mark_interrupted(t0());
    assert_eq!(run.status(), Status::Failed);
    assert_eq!(run.error().map(|e| e.to_string()), Some("interrupted during step fetch".into()));
    // Its cause unknown, an interrupted attempt is retried whatever `on` names, while attempts remain.
    let mut run = left_running(json!({"max_attempts": 3, "on": ["429"], "delay": 0}));
    run.mark_interrupted(t0());
    assert_eq!(run.status(), Status::Running, "{:?}", run.error());
    let mut run = left_running(json!({"max_attempts": 1, "on": ["429"]}));
    run.mark_interrupted(t0());
    assert_eq!(run.status(), Status::Failed);
}

#[test]
fn a_retry_after_the_runs_timeout_gets_the_whole_timeout_again() {
    let mut d = http(json!({"max_attempts": 1}));
    d["timeout"] = json!("10m");
    let mut run = start(&d);
    drive(&mut run, t0(), |_| status(503, None));
    assert_eq!(run.status(), Status::Failed);
    let later = t0() + Duration::hours(2);
    run.retry(later).unwrap();
    common::save_and_read_back(&mut run);
    assert_eq!(run.timeout_at(), Some(later + Duration::minutes(10)));
    drive(&mut run, later, |_| done("ok"));
    assert_eq!(run.status(), Status::Done, "{:?}", run.error());
}

#[test]
fn a_retry_wait_comes_due_beside_a_gate_parked_earlier_in_the_plan() {
    let d = design(
        json!([
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "ask", "type": "approval", "question": "ok?"},
            {"id": "fetch", "type": "http", "url": "http://127.0.0.1:9/", "retry": {"max_attempts": 2, "delay": "30s", "jitter": false}},
        ]),
        json!([{"from": "start", "to": "ask"}, {"from": "start", "to": "fetch"}]),
    );
    let mut run = start(&d);
    drive(&mut run, t0(), |_| status(503, None));
    assert_eq!(run.status(), Status::AwaitingApproval, "the gate is what the run shows");
    let at = t0() + Duration::seconds(30);
    assert_eq!(run.due(at - Duration::milliseconds(1), true), None);
    assert_eq!(run.due(at, true), Some(vwf_core::run::settle::Settle::WaitDue), "the retry wait still comes due");
    let tasks = drive(&mut run, at, |_| done("ok"));
    assert_eq!(tasks.iter().map(|t| (t.node.as_str(), t.attempt)).collect::<Vec<_>>(), [("fetch", 2)]);
    assert_eq!(run.status(), Status::AwaitingApproval);
}

#[test]
fn a_failure_run_saved_before_it_began_goes_on_when_found_without_its_owner() {
    let mut failed = start(&with_error_path(json!({})));
    drive(&mut failed, t0(), |t| if t.node == "build" { exit3() } else { Outcome::failed("down") });
    assert_eq!(failed.status(), Status::Failed);
    let ticket = design(
        json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "open", "type": "output", "template": "{{trigger.run_id}}"}]),
        json!([{"from": "start", "to": "open"}]),
    );
    let plan = Plan::compile("ticket", &Design::from_value(&ticket).unwrap()).unwrap();
    let mut failure = Run::start_failure_of(&failed, plan, t0());
    assert_eq!((failure.failure_of(), failure.run_id()), (Some(failed.run_id()), &failed.failure_run_id()));
    // Its process died before driving it: the reader takes it up instead of failing it.
    failure.mark_interrupted(t0());
    assert_eq!(failure.status(), Status::Running, "{:?}", failure.error());
    drive(&mut failure, t0(), |_| done(""));
    assert_eq!(failure.outputs()["open"]["text"], failed.run_id().as_str());
}

#[test]
fn a_run_killed_before_a_retrying_step_began_goes_on_with_it() {
    let mut run = start(&http(json!({"max_attempts": 2})));
    common::save_and_read_back(&mut run);
    run.mark_interrupted(t0());
    assert_eq!(run.status(), Status::Running, "{:?}", run.error());
    drive(&mut run, t0(), |_| done("ok"));
    assert_eq!((run.status(), run.record(&pid("fetch")).unwrap().attempts), (Status::Done, 1));
    // Without a policy the same run fails as interrupted before that step, as it always did.
    let mut run = start(&http(json!({"max_attempts": 1})));
    run.mark_interrupted(t0());
    assert_eq!((run.status(), run.failed_node().map(|n| n.as_str())), (Status::Failed, Some("fetch")));
}

#[test]
fn a_persons_retry_killed_before_its_attempt_began_still_reads_as_interrupted() {
    let d = design(
        json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "build", "type": "command", "run": "make"}]),
        json!([{"from": "start", "to": "build"}]),
    );
    let mut run = start(&d);
    drive(&mut run, t0(), |_| exit3());
    run.retry(t0()).unwrap();
    assert_eq!(run.record(&pid("build")).unwrap().status, StepStatus::Retrying);
    // The process that took the retry died before starting the attempt.
    run.mark_interrupted(t0());
    assert_eq!((run.status(), run.failed_node().map(|n| n.as_str())), (Status::Failed, Some("build")));
}

#[test]
fn the_runs_timeout_fails_it_during_a_wait_before_its_next_attempt() {
    let mut d = http(json!({"max_attempts": 3, "delay": "5m", "jitter": false}));
    d["timeout"] = json!("3m");
    let mut run = start(&d);
    drive(&mut run, t0(), |_| status(503, None));
    assert_eq!(run.status(), Status::Waiting);
    let timeout = t0() + Duration::minutes(3);
    assert_eq!((run.timeout_at(), run.next_due(), run.next_wake()), (Some(timeout), Some(timeout), Some(timeout)));
    assert_eq!(run.due(timeout - Duration::milliseconds(1), true), None);
    assert_eq!(run.due(timeout, false), Some(vwf_core::run::settle::Settle::TimedOut), "even a listing sees it");
    assert!(run.enforce_deadlines(timeout));
    common::save_and_read_back(&mut run);
    assert_eq!((run.status(), run.failed_node().map(|n| n.as_str())), (Status::Failed, Some("fetch")));
    assert_eq!(run.error().map(|e| e.to_string()), Some(vwf_core::run::RUN_TIMED_OUT.into()));
    assert!(run.parked().is_empty());
}
