//! A step's failure handled as its recovery says (see [`crate::recovery`]): another attempt at
//! once or after a timed wait the run parks on, the step's `error` edges, its normal edges
//! (`on_error: "continue"`), or, when the design says nothing, the run failing.
//!
//! Only an attempt a driver performed goes through here: a template that cannot render or a
//! rule the run breaks (its token budget, the output limit) is a fault of the design or the run,
//! not of the world, and fails the run as before.

use super::*;
use crate::recovery::{self, OnError};

impl Run {
    /// The attempt of step instance `id` (a record name) failed with `error`, for `cause`.
    pub(super) fn attempt_failed(&mut self, id: &str, error: &str, cause: Cause, now: Ts) {
        let Some((step, _)) = self.locate(id) else {
            self.fail_step(id, error.to_string(), now);
            return;
        };
        let recovery = step.recovery();
        let attempt = self.record(id).map_or(1, |r| r.attempts);
        if recovery.retry.retries(attempt, &cause) {
            let delay = recovery.retry.delay_ms(attempt, &cause, recovery::seed(self.run_id.as_str(), id, attempt));
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
            self.parked.push(Pending::Wait { node: id.into(), resume_at, next_attempt: Some(attempt + 1) });
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
        self.handled.push(Handled { node: id.into(), error: error.into() });
    }

    /// Whether step `id`, seen from `scope`, failed for good and the design handled it.
    pub(super) fn failed_handled(&self, id: &str, scope: &Scope) -> bool {
        let name = if self.in_scope_body(id, scope) { scope.instance(id) } else { id.to_string() };
        self.record(&name).is_some_and(|r| r.status == StepStatus::Failed) && self.view_in(id, scope).is_some()
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
}
