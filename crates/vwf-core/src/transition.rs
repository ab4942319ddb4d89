//! What changed in a run between two saves: the transitions an operator sees (one log line each)
//! and counts (metrics).
//!
//! Why here: the runner saves a run at one place, and what a save changed is a rule about runs,
//! not about files or logs. The runner reads back the state last saved ([`Saved`], a digest of
//! the run file), saves the new one, and asks [`between`] what happened; the caller only prints
//! and counts.
//!
//! Invariants:
//! - A transition is a change of durable state: comparing two saved states, never an intention,
//!   so a refused write reports nothing and a change made by another process is seen by the next.
//! - Each step's change is reported once, with every attempt that ended since the last save
//!   (an attempt never ends twice: attempts are only appended, see `StepRecord`).
//! - Order: `started` first, then the steps in the run's order, then the run's new status.

use serde_json::Value;

use crate::names::PassId;
use crate::run::{Run, Status, StepRecord, StepStatus, Try};

/// The part of a saved run that transitions are computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    pub status: Status,
    steps: Vec<SavedStep>,
}

#[derive(Debug, Clone, PartialEq)]
struct SavedStep {
    node: PassId,
    status: StepStatus,
    attempts: u32,
    /// How many of its attempts had ended.
    ended: usize,
}

impl Saved {
    pub fn of(run: &Run) -> Saved {
        let steps = run
            .steps()
            .iter()
            .map(|r| SavedStep { node: r.node.clone(), status: r.status, attempts: r.attempts, ended: ended(r) })
            .collect();
        Saved { status: run.status(), steps }
    }

    /// The digest of a stored run document; `None` when it is not one (a damaged file).
    pub fn from_value(value: &Value) -> Option<Saved> {
        let status = serde_json::from_value(value.get("status")?.clone()).ok()?;
        let mut steps = Vec::new();
        for step in value.get("steps")?.as_array()? {
            let tries = step.get("tries").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            steps.push(SavedStep {
                node: PassId::parse(step.get("node")?.as_str()?).ok()?,
                status: serde_json::from_value(step.get("status")?.clone()).ok()?,
                attempts: u32::try_from(step.get("attempts")?.as_u64()?).ok()?,
                ended: tries.iter().filter(|t| t.get("finished_at").is_some_and(|f| !f.is_null())).count(),
            });
        }
        Some(Saved { status, steps })
    }
}

fn ended(record: &StepRecord) -> usize {
    record.tries.iter().filter(|t| t.finished_at.is_some()).count()
}

/// One change between two saves of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition<'r> {
    /// The run's first save.
    Started,
    /// A step changed: a new attempt, an attempt parked or ended. `ended` holds the attempts
    /// that ended since the last save, oldest first.
    Step { record: &'r StepRecord, ended: Vec<&'r Try> },
    /// The run's status changed from `from` to the run's status.
    Status { from: Status },
}

impl Transition<'_> {
    /// The name of the transition in logs: `started`; `step_started`, `step_retrying`,
    /// `step_done`, `step_failed`, `step_parked`; `queued`, `dequeued`, `parked`, `resumed`, `retried`, `done`, `failed`.
    pub fn event(&self, run: &Run) -> &'static str {
        match self {
            Transition::Started => "started",
            Transition::Step { record, .. } => match record.status {
                StepStatus::Running => "step_started",
                StepStatus::Retrying => "step_retrying",
                StepStatus::Done => "step_done",
                StepStatus::Failed => "step_failed",
                StepStatus::AwaitingApproval
                | StepStatus::AwaitingAgent
                | StepStatus::Waiting
                | StepStatus::AwaitingEvent
                | StepStatus::AwaitingChild => "step_parked",
            },
            Transition::Status { from } => match run.status() {
                Status::Done => "done",
                Status::Failed => "failed",
                Status::Waiting | Status::AwaitingApproval | Status::AwaitingAgent | Status::AwaitingEvent | Status::AwaitingChild => {
                    "parked"
                }
                Status::Queued => "queued",
                Status::Running if *from == Status::Queued => "dequeued",
                Status::Running if *from == Status::Failed => "retried",
                Status::Running => "resumed",
            },
        }
    }
}

/// How long an ended attempt took, in seconds (0 for one that ended as it started).
pub fn seconds(attempt: &Try) -> f64 {
    attempt.finished_at.map_or(0.0, |end| (end - attempt.started_at).num_milliseconds().max(0) as f64 / 1000.0)
}

/// What saving `run` changes over `before`, the state saved last (`None`: the run's first save).
pub fn between<'r>(before: Option<&Saved>, run: &'r Run) -> Vec<Transition<'r>> {
    let mut out = Vec::new();
    let from = match before {
        None => {
            out.push(Transition::Started);
            Status::Running
        }
        Some(saved) => saved.status,
    };
    let steps = before.map(|s| s.steps.as_slice()).unwrap_or_default();
    for record in run.steps() {
        let was = steps.iter().find(|s| s.node == record.node);
        let now = SavedStep { node: record.node.clone(), status: record.status, attempts: record.attempts, ended: ended(record) };
        let seen = was.map_or(0, |s| s.ended);
        if was.is_some_and(|s| (s.status, s.attempts, s.ended) == (now.status, now.attempts, now.ended)) {
            continue;
        }
        let ended = record.tries.iter().filter(|t| t.finished_at.is_some()).skip(seen).collect();
        out.push(Transition::Step { record, ended });
    }
    if run.status() != from {
        out.push(Transition::Status { from });
    }
    out
}

/// Drives `run` as the runner does, until it is idle: every change is saved (compared with the
/// state saved before, `saved`), and `on_save` is told what each save changed. Tasks start at
/// `now` and end two seconds later, as `outcome` says. For the tests of what saves report.
#[cfg(test)]
pub(crate) fn drive_saving(
    run: &mut Run,
    saved: &mut Option<Saved>,
    now: crate::time::Ts,
    outcome: impl Fn(&str) -> crate::run::Outcome,
    mut on_save: impl FnMut(&Run, &[Transition<'_>]),
) {
    use crate::run::Advance;
    let end = now + chrono::TimeDelta::seconds(2);
    let mut save = |run: &Run, saved: &mut Option<Saved>| {
        on_save(run, &between(saved.as_ref(), run));
        *saved = Some(Saved::of(run));
    };
    loop {
        match run.advance(now) {
            Advance::Settled(_) => save(run, saved),
            Advance::Tasks(tasks) => {
                save(run, saved);
                for task in tasks {
                    run.complete(&task.node, outcome(task.node.as_str()), end).expect("a task of the run");
                    save(run, saved);
                }
            }
            Advance::Idle => {
                save(run, saved);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Design;
    use crate::plan::Plan;
    use crate::run::{Advance, Outcome, Response, TriggerInfo};
    use serde_json::json;

    fn t(s: &str) -> crate::time::Ts {
        crate::time::parse(s).unwrap()
    }

    fn run(nodes: Value, edges: Value) -> Run {
        let design = Design::from_value(&json!({"nodes": nodes, "edges": edges})).unwrap();
        let plan = Plan::compile("d", &design).unwrap();
        Run::start(
            plan,
            crate::names::RunId::parse("000000000001").expect("an id"),
            TriggerInfo::new(crate::trigger::TriggerMode::Manual, Value::Null),
            t("2026-01-01T00:00:00Z"),
        )
    }

    /// Drives `run` like the runner does, saving (comparing) after every change; returns the
    /// events of each save. Tasks start at `now` and end two seconds later.
    fn drive(run: &mut Run, saved: &mut Option<Saved>, now: &str, outcome: impl Fn(&str) -> Outcome) -> Vec<Vec<String>> {
        let mut saves = Vec::new();
        drive_saving(run, saved, t(now), outcome, |run, transitions| {
            saves.push(transitions.iter().map(|tr| tr.event(run).to_string()).collect::<Vec<_>>());
        });
        saves
    }

    fn flat(saves: Vec<Vec<String>>) -> Vec<String> {
        saves.into_iter().flatten().collect()
    }

    #[test]
    fn a_run_that_parks_resumes_and_finishes() {
        let mut r = run(
            json!([
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "work", "type": "command", "run": "true"},
                {"id": "gate", "type": "approval", "question": "ok?", "options": ["yes", "no"]},
                {"id": "after", "type": "command", "run": "true"},
            ]),
            json!([{"from": "start", "to": "work"}, {"from": "work", "to": "gate"}, {"from": "gate", "to": "after", "label": "yes"}]),
        );
        let mut saved = None;
        let done = |_: &str| Outcome::Done { text: "ok".into(), extra: Default::default(), tokens: 0 };
        let events = flat(drive(&mut r, &mut saved, "2026-01-01T00:00:00Z", done));
        assert_eq!(events, ["started", "step_started", "step_done", "step_parked", "parked"]);
        // The command's attempt took two seconds of the run's clock.
        let work = r.record(&crate::names::pid("work")).unwrap();
        assert_eq!(seconds(&work.tries[0]), 2.0);

        // The runner saves the answered run before driving it on.
        r.respond(&crate::names::pid("gate"), Response::Answer("yes".into()), t("2026-01-01T00:01:00Z")).unwrap();
        let mut events: Vec<String> = between(saved.as_ref(), &r).iter().map(|tr| tr.event(&r).to_string()).collect();
        saved = Some(Saved::of(&r));
        events.extend(flat(drive(&mut r, &mut saved, "2026-01-01T00:01:00Z", done)));
        assert_eq!(events, ["step_done", "resumed", "step_started", "step_done", "done"]);
        assert_eq!(seconds(&r.record(&crate::names::pid("gate")).unwrap().tries[0]), 60.0);
        // Saving the same state again reports nothing.
        assert!(between(saved.as_ref(), &r).is_empty());
    }

    #[test]
    fn a_failure_and_a_retry() {
        let mut r = run(
            json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "boom", "type": "command", "run": "false"}]),
            json!([{"from": "start", "to": "boom"}]),
        );
        let mut saved = None;
        let fail = |_: &str| Outcome::failed("exit 1");
        let events = flat(drive(&mut r, &mut saved, "2026-01-01T00:00:00Z", fail));
        assert_eq!(events, ["started", "step_started", "step_failed", "failed"]);
        r.retry(t("2026-01-01T00:05:00Z")).unwrap();
        let saves = drive(&mut r, &mut saved, "2026-01-01T00:05:00Z", |_| Outcome::Done {
            text: String::new(),
            extra: Default::default(),
            tokens: 0,
        });
        let events = flat(saves);
        assert_eq!(events.first().map(String::as_str), Some("step_started"), "{events:?}");
        assert!(events.contains(&"retried".to_string()), "{events:?}");
        assert_eq!(events.last().map(String::as_str), Some("done"), "{events:?}");
        // The retried step kept both attempts.
        assert_eq!(r.record(&crate::names::pid("boom")).unwrap().attempts, 2);
    }

    proptest::proptest! {
        /// A chain of agent steps with retries, whose attempts succeed or fail at random, retried
        /// after failing: over all saves, every ended attempt is reported exactly once, `started`
        /// once and first, a save that changes nothing reports nothing, and the file's digest is
        /// the run's.
        #[test]
        fn every_ended_attempt_is_reported_once(
            steps in 1usize..4,
            retries in 0u32..3,
            outcomes in proptest::collection::vec(proptest::bool::weighted(0.6), 1..40),
            run_retries in 0usize..3,
        ) {
            let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
            let mut edges = Vec::new();
            for i in 0..steps {
                nodes.push(json!({"id": format!("a{i}"), "type": "agent", "prompt": "p", "retries": retries}));
                let from = if i == 0 { "start".to_string() } else { format!("a{}", i - 1) };
                edges.push(json!({"from": from, "to": format!("a{i}")}));
            }
            let mut r = run(Value::Array(nodes), Value::Array(edges));
            let next = std::cell::Cell::new(0usize);
            let outcome = |_: &str| {
                let ok = outcomes[next.get() % outcomes.len()];
                next.set(next.get() + 1);
                if ok { Outcome::Done { text: "x".into(), extra: Default::default(), tokens: 0 } } else { Outcome::failed("no") }
            };
            let mut saved = None;
            let mut reported: std::collections::HashMap<String, usize> = Default::default();
            let mut events = Vec::new();
            let mut save = |r: &Run, saved: &mut Option<Saved>| {
                for tr in between(saved.as_ref(), r) {
                    if let Transition::Step { record, ended } = &tr {
                        *reported.entry(record.node.to_string()).or_default() += ended.len();
                    }
                    events.push(tr.event(r).to_string());
                }
                *saved = Some(Saved::of(r));
                proptest::prop_assert!(between(saved.as_ref(), r).is_empty());
                proptest::prop_assert_eq!(Saved::from_value(&serde_json::to_value(r).unwrap()), saved.clone());
                Ok(())
            };
            let mut failures = 0;
            for attempt in 0..=run_retries {
                if attempt > 0 {
                    if r.status() != Status::Failed || r.retry(t("2026-01-01T00:10:00Z")).is_err() {
                        break;
                    }
                    save(&r, &mut saved)?;
                }
                let end = t("2026-01-01T00:00:01Z");
                loop {
                    match r.advance(t("2026-01-01T00:00:00Z")) {
                        Advance::Settled(_) => save(&r, &mut saved)?,
                        Advance::Tasks(tasks) => {
                            save(&r, &mut saved)?;
                            for task in tasks {
                                r.complete(&task.node, outcome(task.node.as_str()), end).unwrap();
                                save(&r, &mut saved)?;
                            }
                        }
                        Advance::Idle => break,
                    }
                }
                save(&r, &mut saved)?;
                failures += usize::from(r.status() == Status::Failed);
            }
            for record in r.steps() {
                proptest::prop_assert_eq!(reported.get(record.node.as_str()).copied().unwrap_or(0), ended(record), "{}", record.node);
            }
            proptest::prop_assert_eq!(events.iter().filter(|e| *e == "started").count(), 1);
            proptest::prop_assert_eq!(events.first().map(String::as_str), Some("started"));
            proptest::prop_assert_eq!(events.iter().filter(|e| *e == "failed").count(), failures);
            let last_status = events.iter().rev().find(|e| ["done", "failed", "parked"].contains(&e.as_str())).cloned();
            let expected = match r.status() { Status::Done => "done", Status::Failed => "failed", _ => "parked" };
            proptest::prop_assert_eq!(last_status.as_deref(), Some(expected));
        }
    }

    #[test]
    fn the_digest_of_the_saved_file_equals_the_digest_of_the_run() {
        let mut r = run(
            json!([{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "boom", "type": "command", "run": "false"}]),
            json!([{"from": "start", "to": "boom"}]),
        );
        let mut saved = None;
        drive(&mut r, &mut saved, "2026-01-01T00:00:00Z", |_| Outcome::failed("x"));
        let file = serde_json::to_value(&r).unwrap();
        assert_eq!(Saved::from_value(&file), Some(Saved::of(&r)));
        assert_eq!(Saved::from_value(&json!([])), None);
        assert_eq!(Saved::from_value(&json!({"status": "nope", "steps": []})), None);
    }
}
