//! A step's failure handled as its recovery says (see [`crate::recovery`]): another attempt at
//! once or after a timed wait the run parks on, the step's `error` edges, its normal edges
//! (`on_error: "continue"`), or, when the design says nothing, the run failing.
//!
//! Only an attempt a driver performed goes through here: a template that cannot render or a
//! rule the run breaks (its token budget, the output limit) is a fault of the design or the run,
//! not of the world, and fails the run as before.

use super::*;
use crate::names::RunId;
use crate::recovery::{self, OnError};
use crate::trigger::TriggerMode;

impl Run {
    /// The attempt of step instance `id` (a record name) failed with `error`, for `cause`.
    pub(super) fn attempt_failed(&mut self, id: &PassId, error: &str, cause: Cause, now: Ts) {
        self.attempt_failed_as(id, error, cause, false, now);
    }

    /// [`Run::attempt_failed`]; `interrupted` for an attempt a dead process left unfinished.
    fn attempt_failed_as(&mut self, id: &PassId, error: &str, cause: Cause, interrupted: bool, now: Ts) {
        // An outcome that comes after the run ended (a parallel task finishing after a sibling
        // failed it, or after its timeout) is recorded on its step and changes nothing else.
        if self.status.is_finished() {
            if let Some(r) = self.record_mut(id).filter(|r| r.status == StepStatus::Running) {
                r.end_try(StepStatus::Failed, Some(error), None, now);
            }
            return;
        }
        let Some((step, _)) = self.locate(id) else {
            self.fail_step(id, error.to_string(), now);
            return;
        };
        let recovery = step.recovery();
        let attempt = self.record(id).map_or(1, |r| r.attempts);
        let again = if interrupted { recovery.retry.retries_interrupted(attempt) } else { recovery.retry.retries(attempt, &cause) };
        if again {
            let delay = recovery.retry.delay_ms(attempt, &cause, recovery::seed(self.run_id.as_str(), &id.to_string(), attempt));
            if let Some(r) = self.record_mut(id) {
                r.await_next_try(error, now);
            }
            if delay == 0 {
                return;
            }
            let Some(resume_at) = time::add_millis(now, delay) else {
                self.fail_step(id, beyond_time("the wait before the next attempt"), now);
                return;
            };
            if let Some(r) = self.record_mut(id) {
                r.wait_before_next_try(delay);
            }
            self.parked.push(Pending::Wait { node: id.clone().into(), resume_at, next_attempt: Some(attempt + 1), rate_limit: None });
            return;
        }
        if !self.plan.has_error_edges(&step.id) && recovery.on_error != OnError::Continue {
            self.fail_step(id, error.to_string(), now);
            return;
        }
        if let Some(r) = self.record_mut(id) {
            r.end_try(StepStatus::Failed, Some(error), None, now);
        }
        let mut view = Map::new();
        view.insert("text".into(), Value::Null);
        view.insert("error".into(), recovery::error_view(error, &cause, attempt));
        self.keep_output(id, Value::Object(view));
        self.handled.push(Handled { node: id.clone(), error: error.into() });
    }

    /// Whether step `id`, seen from `scope`, failed for good and the design handled it.
    pub(super) fn failed_handled(&self, id: &str, scope: &Scope) -> bool {
        let pass = if self.in_scope_body(id, scope) { scope.pass.as_ref().map(|(_, i)| *i) } else { None };
        self.record_at(id, pass).is_some_and(|r| r.status == StepStatus::Failed) && self.view_in(id, scope).is_some()
    }

    /// Whether an edge of `route` leaving `from` is taken, given that `from` failed for good
    /// and its failure was handled: its `error` edges are, and with `on_error: "continue"` its
    /// normal ones.
    pub(super) fn taken_after_failure(&self, from: &str, route: Route<'_>) -> bool {
        match route {
            Route::Error => true,
            Route::Always => self.plan.step(from).is_some_and(|s| s.recovery().on_error == OnError::Continue),
            _ => false,
        }
    }

    /// A run left `running` by a process that died: when every step it was performing recovers
    /// from failing (another attempt is due, or the design handles the failure), each unfinished
    /// attempt counts as a failed one (`interrupted during step …`) and the run goes on as its
    /// recovery says; a step whose next attempt was due but not begun (or, between steps, the
    /// next step when it would retry) just waits for a driver.
    /// Answers whether it did; otherwise nothing changed and the run fails as interrupted, as it
    /// always did. A reader that settles a run this way and does not drive it (a listing) leaves
    /// it in a state the next reader settles the same way.
    pub(super) fn recover_interrupted(&mut self, now: Ts) -> bool {
        let open: Vec<(PassId, StepStatus)> = self
            .steps
            .iter()
            .filter(|r| matches!(r.status, StepStatus::Running | StepStatus::Retrying))
            .filter(|r| !self.locate(&r.node).is_some_and(|(s, _)| s.is(NodeKind::Loop)))
            .map(|r| (r.node.clone(), r.status))
            .collect();
        let recovers = |run: &Run, node: &PassId| {
            let Some((step, _)) = run.locate(node) else { return false };
            let recovery = step.recovery();
            let attempt = run.record(node).map_or(1, |r| r.attempts);
            recovery.retry.retries_interrupted(attempt) || run.plan.has_error_edges(&step.id) || recovery.on_error == OnError::Continue
        };
        if open.is_empty() {
            // Killed between steps: nothing was in flight. A failure run that never began goes on
            // (it was saved before the failed run that started it, which relies on it running);
            // so does a run whose next step would retry a failure; another fails as interrupted
            // before that step, as before.
            let fresh_failure_run = self.steps.is_empty() && TriggerMode::STARTED_BY_RUNS.contains(&self.trigger.mode);
            let next = (0..self.plan.steps.len()).find(|&i| self.is_ready(i)).map(|i| PassId::top(self.plan.steps[i].id.clone()));
            if !fresh_failure_run && !next.is_some_and(|n| recovers(self, &n)) {
                return false;
            }
            self.touch(now);
            self.refresh_status();
            return true;
        }
        // A step waiting to be started again by a person's retry of the run, with no policy of
        // its own, does not recover: such a run reads as interrupted, as it always did.
        if !open.iter().all(|(n, _)| recovers(self, n)) {
            return false;
        }
        let running: Vec<&PassId> = open.iter().filter(|(_, s)| *s == StepStatus::Running).map(|(n, _)| n).collect();
        for node in running {
            let error = RunFailure::interrupted(Some(&node.to_string()));
            self.attempt_failed_as(&node.clone(), &error, Cause::Error, true, now);
        }
        self.touch(now);
        self.refresh_status();
        true
    }

    /// Whether this run's failure is to start its design's failure run (an error workflow):
    /// it failed, has started none yet, is no test run, and was not itself started by a failure
    /// (a failure design's own failure never starts another).
    pub fn awaits_failure_run(&self) -> bool {
        self.status == Status::Failed && self.failure_run.is_none() && !self.test && self.trigger.mode != TriggerMode::OnFailure
    }

    /// What a failure run is given about this failed run: `{run_id, design, failed_node, error,
    /// trigger, started_at, failed_at}`.
    pub fn failure_input(&self) -> Value {
        json!({
            "run_id": self.run_id,
            "design": self.design,
            "failed_node": self.failed_node,
            "error": self.error.as_ref().map(|e| e.text().to_string()),
            "trigger": {"mode": self.trigger.mode, "input": self.trigger.input},
            "started_at": time::format(&self.created_at),
            "failed_at": time::format(&self.updated_at),
        })
    }

    /// Starts the failure run of `failed` with `plan` (the design its `on_failure` names), under
    /// the id `failed`'s id derives for it: trigger mode `failure`, [`Run::failure_input`] as its
    /// input.
    pub fn start_failure_of(failed: &Run, plan: Plan, now: Ts) -> Run {
        // No `origin`: that names where a chain of emits began, and a failure run is none.
        let mut trigger = TriggerInfo::new(TriggerMode::OnFailure, failed.failure_input());
        // In the failed run's trace, under its root span.
        trigger.trace = Some(crate::trace::TraceContext {
            trace_id: failed.trace_context().trace_id,
            parent_span_id: Some(crate::trace::run_span_id(&failed.run_id)),
        });
        let mut run = Run::start(plan, failed.run_id.derived(FAILURE_RUN), trigger, now);
        run.failure_of = Some(failed.run_id.clone());
        run
    }

    /// Records the failure run this run's failure started.
    pub fn link_failure_run(&mut self, id: RunId) {
        self.failure_run = Some(id);
        self.mark(journal::Part::Head);
    }

    /// The id this run's failure run has, whoever starts it (see [`RunId::derived`]).
    pub fn failure_run_id(&self) -> RunId {
        self.run_id.derived(FAILURE_RUN)
    }

    /// Records why this run's failure started no failure run (the design it names is missing or
    /// has errors).
    pub fn note_failure_run_refused(&mut self, design: &str, why: &str, now: Ts) {
        self.log(HistoryEvent { at: now, event: FAILURE_RUN_REFUSED.into(), node: None, detail: json!({"design": design, "error": why}) });
    }
}

impl Run {
    /// Fails the run if its `timeout` has passed, unless it waits on an approval gate (which
    /// keeps its own deadline). The step in progress, a wait or a parked agent step, is what
    /// failed; a step still running when its outcome comes records it, but the run stays failed.
    /// Returns whether it did.
    pub(super) fn enforce_timeout(&mut self, now: Ts) -> bool {
        if self.timeout_at.is_none_or(|t| t > now) || self.status.is_finished() || self.status == Status::AwaitingApproval {
            return false;
        }
        self.stop_with(RunFailure::RunTimedOut, now, false);
        true
    }

    /// The runner holds back the task of step instance `id` it was just handed, before saving
    /// anything of it: the step's rate limit (`name`) has no room. The attempt is taken back (it
    /// never began), and the step waits, the run `waiting` when nothing else moves, until
    /// `until`, when it is handed out again (and its limit asked again).
    pub fn hold_back(&mut self, id: &PassId, name: &str, until: Ts, now: Ts) {
        let Some(attempt) = self.record(id).map(|r| r.attempts) else { return };
        if let Some(r) = self.record_mut(id) {
            r.take_back_try();
        }
        self.parked.push(Pending::Wait {
            node: id.clone().into(),
            resume_at: until,
            next_attempt: Some(attempt),
            rate_limit: Some(name.into()),
        });
        self.touch(now);
        self.refresh_status();
    }

    /// Stops the run for a newer one of its concurrency key (`on_limit: "cancel_oldest"`): it
    /// fails with `cancelled: …`, the step in progress (or parked) failing with it. Answers
    /// whether it did (a finished run stays as it is).
    pub fn cancel(&mut self, why: &str, now: Ts) -> bool {
        if self.status.is_finished() {
            return false;
        }
        self.stop_with(RunFailure::Error(format!("{CANCELLED}{why}")), now, true);
        true
    }

    /// Fails the run with `failure`: the step in progress, a wait or a parked step, is what
    /// failed; a gate too when `gates` (else it stays parked, keeping its own deadline).
    fn stop_with(&mut self, failure: RunFailure, now: Ts, gates: bool) {
        let current = self
            .steps
            .iter()
            .find(|r| {
                matches!(
                    r.status,
                    StepStatus::Running
                        | StepStatus::Waiting
                        | StepStatus::AwaitingAgent
                        | StepStatus::AwaitingEvent
                        | StepStatus::AwaitingChild
                        | StepStatus::Retrying
                ) || (gates && r.status == StepStatus::AwaitingApproval)
            })
            .map(|r| r.node.clone());
        self.parked.retain(|p| !gates && matches!(p, Pending::Approval { .. }));
        match current {
            Some(node) => self.fail_step(&node, failure, now),
            None => {
                self.status = Status::Failed;
                self.ok = false;
                self.error = Some(failure);
                self.pending = None;
            }
        }
        self.touch(now);
    }
}

/// How the error of a run stopped for a newer run of its concurrency key begins.
pub const CANCELLED: &str = "cancelled: ";

/// What a failed run's id derives its failure run's id for.
const FAILURE_RUN: &str = "failure";
/// The history event of a failure run that could not start.
pub const FAILURE_RUN_REFUSED: &str = "failure_run_refused";
