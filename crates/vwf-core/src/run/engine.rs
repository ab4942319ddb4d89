//! The engine's calls on a run (SPEC §7–9): starting one (or a retry from the start), `advance`,
//! `complete`, `respond`, `retry`, deadlines and runs left unfinished, and the lookups of step
//! records they share.
//!
//! These are the only public ways to change a run (its fields are private to the engine), so a run
//! is only ever in a state the engine can reach; the caller persists it after every call that
//! changed it.

use super::*;

impl Run {
    pub fn start(plan: Plan, run_id: RunId, trigger: TriggerInfo, now: Ts) -> Run {
        Run {
            ok: true,
            run_id,
            design: plan.design.clone(),
            version: plan.version,
            status: Status::Running,
            pending: None,
            outputs: BTreeMap::new(),
            skipped: Vec::new(),
            deliveries: Vec::new(),
            error: None,
            failed_node: None,
            handled: Vec::new(),
            steps: Vec::new(),
            trigger,
            retry_of: None,
            failure_run: None,
            failure_of: None,
            parent_run: None,
            child_runs: Vec::new(),
            timeout_at: plan.timeout_seconds.and_then(|s| time::add_seconds(now, s)),
            concurrency_key: None,
            test: plan.test.is_some(),
            created_at: now,
            updated_at: now,
            tokens_used: 0,
            parked: Vec::new(),
            history: Vec::new(),
            loops: BTreeMap::new(),
            plan,
            dirty: journal::Dirty::default(),
            first_open: loops::FirstOpen::default(),
        }
    }

    /// Starts a retry from the start of `old` with `plan` (the design as saved now): a new run
    /// with `old`'s trigger and input, linked to it by `retry_of`. Only a finished run can be
    /// retried this way; one still running or parked would race with its own retry.
    pub fn start_retry_of(old: &Run, plan: Plan, run_id: RunId, now: Ts) -> Result<Run, EngineError> {
        old.can_retry_from_start()?;
        let mut run = Run::start(plan, run_id, old.trigger.clone(), now);
        run.retry_of = Some(old.run_id.to_string());
        Ok(run)
    }

    /// Whether this run can be retried from the start (see [`Run::start_retry_of`]), so a
    /// caller can refuse before it allocates anything.
    pub fn can_retry_from_start(&self) -> Result<(), EngineError> {
        if self.status.is_finished() {
            return Ok(());
        }
        Err(EngineError::Conflict(format!(
            "run {} is {}; only a finished run can be retried from the start",
            self.run_id,
            self.status.as_str()
        )))
    }

    /// The run result of SPEC §8 (the file without its additions).
    pub fn result(&self) -> Value {
        result_of_document(serde_json::to_value(self).unwrap_or_else(|e| json!({"ok": false, "error": e.to_string()})))
    }

    /// The plan step behind a record name (`node`, or `node#pass` inside a loop).
    pub fn plan_step(&self, node: &PassId) -> Option<&PlanStep> {
        self.plan.step(node.node())
    }

    pub fn record(&self, node: &PassId) -> Option<&StepRecord> {
        self.record_at(node.node(), node.pass())
    }

    /// The record of `node` outside any loop (a loop step, a step of the plan's top).
    pub(super) fn top_record(&self, node: &str) -> Option<&StepRecord> {
        self.record_at(node, None)
    }

    pub(super) fn record_at(&self, node: &str, pass: Option<usize>) -> Option<&StepRecord> {
        self.record_index_at(node, pass).map(|i| &self.steps[i])
    }

    /// Where the record `node` is in `steps`. Records are kept sorted by [`Run::order_key`], so
    /// this is a binary search: a step of a long loop costs the same at pass 10,000 as at pass 1.
    /// A name the plan does not know sorts last with every other such name, so it is looked for
    /// one by one among those.
    pub(super) fn record_index(&self, node: &PassId) -> Option<usize> {
        self.record_index_at(node.node(), node.pass())
    }

    fn record_index_at(&self, node: &str, pass: Option<usize>) -> Option<usize> {
        let key = self.order_key_at(node, pass);
        let first = self.steps.partition_point(|r| self.order_key(&r.node) < key);
        let is = |r: &StepRecord| r.node.node() == node && r.node.pass() == pass;
        if key.0 == usize::MAX {
            return self.steps[first..].iter().position(is).map(|i| first + i);
        }
        self.steps.get(first).filter(|r| is(r)).map(|_| first)
    }

    /// A step record to change; marks it changed.
    pub(super) fn record_mut(&mut self, node: &PassId) -> Option<&mut StepRecord> {
        let i = self.record_index(node)?;
        self.mark(journal::Part::Step(node.clone()));
        self.steps.get_mut(i)
    }

    /// Adds an event to the history.
    pub(super) fn log(&mut self, event: HistoryEvent) {
        self.history.push(event);
        self.mark(journal::Part::History(self.history.len() - 1));
    }

    /// Settles what the core can settle, or hands out tasks. See `Advance`. A design that uses
    /// `{{secrets.NAME}}` needs [`Run::advance_with`]; here every secret is unknown.
    pub fn advance(&mut self, now: Ts) -> Advance {
        self.advance_with(now, &Secrets::default())
    }

    /// [`Run::advance`], rendering `{{secrets.NAME}}` from `secrets` in the fields that send
    /// them. A task's recorded inputs have every value of `secrets` redacted.
    pub fn advance_with(&mut self, now: Ts, secrets: &Secrets) -> Advance {
        if self.status.is_finished() || self.status == Status::Queued {
            return Advance::Idle;
        }
        if self.enforce_deadlines(now) {
            return Advance::Settled(self.failed_node.clone());
        }
        loop {
            let mut progressed = false;
            let mut tasks = Vec::new();
            match self.advance_loops(now) {
                LoopProgress::Finished(lp) => {
                    self.touch(now);
                    self.refresh_status();
                    return Advance::Settled(Some(lp));
                }
                LoopProgress::Changed => progressed = true,
                LoopProgress::Same => {}
            }
            let ready: Vec<usize> = (0..self.plan.steps.len()).filter(|&i| self.is_ready(i)).collect();
            let mut candidates: Vec<(PlanStep, Scope)> = ready.into_iter().map(|i| (self.plan.steps[i].clone(), Scope::top())).collect();
            candidates.extend(self.ready_instances());
            for (step, scope) in candidates {
                if self.status.is_finished() {
                    break;
                }
                if !self.any_active_parent(&step, &scope) {
                    self.skip(&step.id, &scope);
                    progressed = true;
                    continue;
                }
                match self.begin(&step, &scope, now, secrets) {
                    Begin::Settled => {
                        self.touch(now);
                        self.refresh_status();
                        // Steps begun earlier in this pass are running: hand them out now, or
                        // nobody would ever perform them.
                        if !tasks.is_empty() {
                            return Advance::Tasks(tasks);
                        }
                        return Advance::Settled(Some(scope.instance(&step.id)));
                    }
                    Begin::Task(t) => {
                        let inputs = t.inputs(secrets);
                        if let Some(r) = self.record_mut(&t.node) {
                            r.inputs = Some(inputs);
                        }
                        tasks.push(t);
                    }
                }
            }
            if !tasks.is_empty() {
                self.touch(now);
                return Advance::Tasks(tasks);
            }
            if !progressed {
                break;
            }
        }
        if let Some(node) = self.resume_due_wait(now) {
            self.touch(now);
            return Advance::Settled(Some(node));
        }
        self.refresh_status();
        Advance::Idle
    }

    /// A driver's report for a running step.
    pub fn complete(&mut self, node: &PassId, outcome: Outcome, now: Ts) -> Result<(), EngineError> {
        let (step, scope) =
            self.locate(node).ok_or_else(|| EngineError::UnknownNode(format!("run {} has no node {node:?}", self.run_id)))?;
        match self.record(node).map(|r| r.status) {
            Some(StepStatus::Running) => {}
            _ => return Err(EngineError::Conflict(format!("step {node:?} is not running"))),
        }
        match outcome {
            Outcome::Done { text, extra, tokens } => {
                if step.is(NodeKind::Agent) && (self.charge_tokens(node, tokens, now) || self.charge_cost(node, &extra, now)) {
                    return Ok(());
                }
                // An emit is heard by the run that sent it too: a wait for its event in another
                // branch goes on (no other process could answer it while this one holds the run).
                let emitted = match step.spec() {
                    Ok(Spec::Emit { event, .. }) => {
                        Some((event, self.record(node).and_then(|r| r.inputs.as_ref()?.get("payload").cloned()).unwrap_or(Value::Null)))
                    }
                    _ => None,
                };
                self.finish_step(node, &text, extra, now);
                if let Some((event, payload)) = emitted {
                    self.receive_event(&event, &payload, now);
                }
            }
            Outcome::Delivered(d) => {
                let ok = d.ok;
                let error = format!("delivery to {} failed: {}", d.target, d.detail);
                self.deliveries.push(d.clone());
                self.mark(journal::Part::Delivery(self.deliveries.len() - 1));
                if ok {
                    let message = self.collect_message(&step, &scope).unwrap_or_default();
                    let mut extra = Map::new();
                    extra.insert("collected".into(), Value::Object(self.collected(&step, &scope)));
                    extra.insert("deliveries".into(), json!([d]));
                    self.finish_step(node, &message, extra, now);
                } else {
                    self.attempt_failed(node, &error, Cause::Error, now);
                }
            }
            Outcome::Failed { error, cause } => self.attempt_failed(node, &error, cause, now),
            Outcome::ParkAgent => {
                let prompt_src = step.node.get("prompt").and_then(Value::as_str).unwrap_or_default().to_string();
                let pending = match (step.spec(), self.render(&prompt_src, &scope)) {
                    (Ok(Spec::Agent { profile, model, .. }), Ok(prompt)) => {
                        Pending::Agent { node: node.into(), prompt, profile, model, run_id: None }
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        self.fail_step(node, e, now);
                        self.touch(now);
                        return Ok(());
                    }
                    (Ok(_), Ok(_)) => {
                        self.fail_step(node, "only agent steps can wait for an agent", now);
                        self.touch(now);
                        return Ok(());
                    }
                };
                if let Some(r) = self.record_mut(node) {
                    r.set_status(StepStatus::AwaitingAgent);
                }
                self.parked.push(pending);
            }
        }
        self.touch(now);
        self.refresh_status();
        Ok(())
    }

    /// Answers a parked step. A late answer to a gate that timed out gets the failed run back
    /// unchanged (`Ok`), so the caller returns that verdict.
    pub fn respond(&mut self, node: &PassId, response: Response, now: Ts) -> Result<(), EngineError> {
        self.enforce_deadlines(now);
        if self.locate(node).is_none() {
            return Err(EngineError::UnknownNode(format!("run {} has no node {node:?}", self.run_id)));
        }
        if self.status == Status::Failed
            && self.failed_node.as_ref() == Some(node)
            && self.error.as_ref().is_some_and(RunFailure::is_approval_timeout)
            && matches!(response, Response::Answer(_))
        {
            return Ok(());
        }
        // A finished run waits on nothing, even if a gate was parked when it failed.
        let waiting = if self.status.is_finished() { None } else { self.parked.iter().position(|p| p.node() == node) };
        let Some(pos) = waiting else {
            return Err(EngineError::Conflict(format!(
                "run {} is not waiting on node {node:?} (status: {})",
                self.run_id,
                self.status.as_str()
            )));
        };
        match (&self.parked[pos], response) {
            (Pending::Approval { .. }, Response::Answer(reply)) => {
                self.answer_gate(pos, node, reply, now)?;
            }
            (Pending::Agent { model, .. }, Response::Output(text)) => {
                let model = model.clone();
                self.parked.remove(pos);
                let mut extra = Map::new();
                extra.insert("model".into(), model.map_or(Value::Null, Value::String));
                extra.insert("tokens".into(), json!(0));
                self.finish_step(node, &text, extra, now);
            }
            (Pending::Agent { .. }, Response::Generated { text, mut extra, tokens }) => {
                // Performed through the backend: it counts like a driver's answer.
                self.parked.remove(pos);
                if let Some(r) = self.record_mut(node) {
                    r.set_status(StepStatus::Running);
                }
                extra.entry("model").or_insert(Value::Null);
                extra.insert("tokens".into(), json!(tokens));
                return self.complete(node, Outcome::Done { text, extra, tokens }, now);
            }
            (Pending::Approval { .. }, Response::Output(_) | Response::Generated { .. }) => {
                return Err(EngineError::BadRequest(format!("{node:?} is an approval gate: answer it with one of its options")));
            }
            (Pending::Agent { .. }, Response::Answer(_)) => {
                return Err(EngineError::BadRequest(format!("{node:?} is an agent step: supply its output")));
            }
            (Pending::Wait { .. }, _) => {
                return Err(EngineError::Conflict(format!("{node:?} is a timed wait; it resumes by itself")));
            }
            (Pending::Child { run_id, .. }, _) => {
                return Err(EngineError::Conflict(format!("{node:?} waits for its child run {run_id}; answer what that run waits for")));
            }
            (Pending::Event { event, .. }, _) => {
                return Err(EngineError::Conflict(format!("{node:?} waits for event {event:?}; send it (POST /events/{event}, vwf emit)")));
            }
        }
        self.touch(now);
        self.refresh_status();
        Ok(())
    }

    /// Re-runs a failed run from its failed step; finished steps are kept. The steps it starts
    /// again keep their records: the next attempt is added to their `tries`.
    pub fn retry(&mut self, now: Ts) -> Result<(), EngineError> {
        if self.status != Status::Failed {
            return Err(EngineError::Conflict(format!(
                "run {} is {}; only a failed run can be retried",
                self.run_id,
                self.status.as_str()
            )));
        }
        let failed = self.failed_node.clone();
        let reopen: Vec<StepRecord> = self
            .steps
            .iter()
            .filter(|r| {
                let handled = self.handled.iter().any(|h| h.node == r.node);
                Some(&r.node) == failed.as_ref()
                    || (!handled && matches!(r.status, StepStatus::Running | StepStatus::Retrying | StepStatus::Failed))
            })
            .cloned()
            .collect();
        // Reopening touches many records: the next save is a whole one.
        self.mark_whole();
        self.log(HistoryEvent {
            at: now,
            event: "retry".into(),
            node: failed.as_ref().map(PassId::to_string),
            detail: json!({"error": self.error, "steps": reopen}),
        });
        for r in self.steps.iter_mut().filter(|r| reopen.iter().any(|o| o.node == r.node)) {
            if r.status != StepStatus::Retrying {
                let error = r.error.clone().unwrap_or_else(|| UNFINISHED_WHEN_THE_RUN_FAILED.to_string());
                r.await_next_try(&error, now);
            }
        }
        self.parked.retain(|p| !reopen.iter().any(|o| *p.node() == o.node));
        // A person's retry gets the design's whole timeout again, counted from now.
        if let Some(seconds) = self.plan.timeout_seconds {
            self.timeout_at = time::add_seconds(now, seconds);
        }
        self.status = Status::Running;
        self.ok = true;
        self.error = None;
        self.failed_node = None;
        self.touch(now);
        Ok(())
    }

    /// Fails the run if a gate's deadline or the run's own `timeout` has passed. Returns whether
    /// anything changed.
    pub fn enforce_deadlines(&mut self, now: Ts) -> bool {
        if self.status.is_finished() {
            return false;
        }
        if self.enforce_timeout(now) {
            return true;
        }
        if self.enforce_event_deadline(now) {
            return true;
        }
        let expired = self.parked.iter().find_map(|p| match p {
            Pending::Approval { node, deadline: Some(d), on_timeout, .. } if *d <= now => Some((node.own()?.clone(), *on_timeout)),
            _ => None,
        });
        let Some((node, on_timeout)) = expired else { return false };
        let error = if on_timeout == OnTimeout::Escalate {
            self.log(HistoryEvent { at: now, event: ESCALATION_REQUESTED.into(), node: Some(node.to_string()), detail: Value::Null });
            RunFailure::ApprovalTimedOutEscalated
        } else {
            RunFailure::ApprovalTimedOut
        };
        self.parked.retain(|p| *p.node() != node);
        self.fail_step(&node, error, now);
        self.touch(now);
        true
    }

    /// Ends the first `wait_event` step whose deadline has passed: it fails the run, or (with
    /// `on_timeout: continue`) is done with no payload and `timed_out: true`. Returns whether one
    /// did.
    fn enforce_event_deadline(&mut self, now: Ts) -> bool {
        let expired = self.parked.iter().find_map(|p| match p {
            Pending::Event { node, event, deadline: Some(d), on_timeout, .. } if *d <= now => {
                Some((node.own()?.clone(), event.clone(), *on_timeout))
            }
            _ => None,
        });
        let Some((node, event, on_timeout)) = expired else { return false };
        self.parked.retain(|p| *p.node() != node);
        match on_timeout {
            EventTimeout::Fail => self.fail_step(&node, format!("timed out waiting for event {event:?}"), now),
            EventTimeout::Continue => {
                let mut extra = Map::new();
                extra.insert("event".into(), Value::String(event));
                extra.insert("payload".into(), Value::Null);
                extra.insert("timed_out".into(), Value::Bool(true));
                self.finish_step(&node, "", extra, now);
                self.refresh_status();
            }
        }
        self.touch(now);
        true
    }

    /// Gives an event to the run: every `wait_event` step it waits in for an event of that name
    /// whose match the payload satisfies is done, with the payload as its output. Answers the
    /// steps it resumed (none when the run waits for no such event, or is finished), for the
    /// caller to save and drive the run on (see [`Pending::hears`]).
    pub fn receive_event(&mut self, event: &str, payload: &Value, now: Ts) -> Vec<PassId> {
        self.enforce_deadlines(now);
        if self.status.is_finished() {
            return Vec::new();
        }
        let resumed: Vec<PassId> = self.parked.iter().filter(|p| p.hears(event, payload)).filter_map(|p| p.step().cloned()).collect();
        for node in &resumed {
            self.parked.retain(|p| p.node() != node);
            let mut extra = Map::new();
            extra.insert("event".into(), Value::String(event.to_string()));
            extra.insert("payload".into(), payload.clone());
            extra.insert("timed_out".into(), Value::Bool(false));
            self.finish_step(node, &payload_text(payload), extra, now);
        }
        if !resumed.is_empty() {
            self.touch(now);
            self.refresh_status();
        }
        resumed
    }

    /// The waits for `event` the run is parked in, as a note for the store (see
    /// [`Run::waits_in_note`]); `None` when it waits for no such event.
    pub fn waits_note(&self, event: &str) -> Option<String> {
        let waits: Vec<&Pending> = self.parked.iter().filter(|p| matches!(p, Pending::Event { event: e, .. } if e == event)).collect();
        (!waits.is_empty()).then(|| serde_json::to_string(&waits).unwrap_or_default())
    }

    /// The waits a note of [`Run::waits_note`] holds; `None` for a note that does not read (the
    /// run is then read itself).
    pub fn waits_in_note(note: &str) -> Option<Vec<Pending>> {
        serde_json::from_str(note).ok()
    }

    /// The events the run waits for now (each name once, in plan order).
    pub fn awaited_events(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for p in &self.parked {
            if let Pending::Event { event, .. } = p
                && !names.contains(&event.as_str())
            {
                names.push(event);
            }
        }
        names
    }

    /// A run left `running` by a process that died: fail it so it can be retried.
    pub fn mark_interrupted(&mut self, now: Ts) {
        self.stop_running(now, None);
    }

    /// A run whose owner could not save it (the machine refused the write: a full disk, a
    /// read-only store, no file handles left): fail it with that `cause` instead of a bare
    /// "interrupted", so it can be retried once the machine is fixed.
    pub fn mark_unsaved(&mut self, now: Ts, cause: &str) {
        self.stop_running(now, Some(cause));
    }

    fn stop_running(&mut self, now: Ts, cause: Option<&str>) {
        if self.status != Status::Running {
            return;
        }
        if cause.is_none() && self.recover_interrupted(now) {
            return;
        }
        let is_loop = |r: &StepRecord| self.locate(&r.node).is_some_and(|(s, _)| s.is(NodeKind::Loop));
        let node = self
            .steps
            .iter()
            .find(|r| r.status == StepStatus::Running && !is_loop(r))
            .or_else(|| self.steps.iter().find(|r| r.status == StepStatus::Running))
            .map(|r| r.node.clone())
            .or_else(|| (0..self.plan.steps.len()).find(|&i| self.is_ready(i)).map(|i| PassId::top(self.plan.steps[i].id.clone())));
        let error = match (&node, cause) {
            (node, None) => RunFailure::interrupted(node.as_ref().map(PassId::to_string).as_deref()),
            (Some(n), Some(cause)) => RunFailure::from(format!("the run could not be saved during step {n}: {cause}")),
            (None, Some(cause)) => RunFailure::from(format!("the run could not be saved: {cause}")),
        };
        if let Some(r) = node.as_ref().and_then(|n| self.record_mut(n)) {
            r.end_try(StepStatus::Failed, Some(&error), None, now);
        }
        self.status = Status::Failed;
        self.ok = false;
        self.error = Some(error);
        self.failed_node = node;
        self.pending = None;
        self.touch(now);
    }

    /// When the earliest timed wait is due, if the run waits on one (or its own timeout, when
    /// that comes first).
    pub fn next_wake(&self) -> Option<Ts> {
        let wake = self
            .parked
            .iter()
            .filter_map(|p| match p {
                Pending::Wait { resume_at, .. } => Some(*resume_at),
                _ => None,
            })
            .min()?;
        Some(self.timeout_at.map_or(wake, |t| t.min(wake)))
    }

    // ---- internals ----

    pub(super) fn touch(&mut self, now: Ts) {
        if now > self.updated_at {
            self.updated_at = now;
        }
    }
}
