//! Loops of a run: where a step instance runs (the top of the plan or one pass), which instances
//! are ready, how passes are handed out and collected, and when a loop is finished.

use super::*;

/// For each loop, an index before which every pass is done, so the engine looks only at the
/// passes still open: a step costs the same at pass 10,000 as at pass 1. A hint, never part of
/// the run: 0 (look at every pass) for a run just read, moved on as passes are seen done (a pass
/// never stops being done).
#[derive(Debug, Clone, Default)]
pub(super) struct FirstOpen(BTreeMap<String, usize>);

impl PartialEq for FirstOpen {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl FirstOpen {
    pub(super) fn of(&self, lp: &str) -> usize {
        self.0.get(lp).copied().unwrap_or(0)
    }
}

/// Where a step instance runs: at the top of the plan, or in one pass of a loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Scope {
    pub(super) pass: Option<(NodeId, usize)>,
}

impl Scope {
    pub(super) fn top() -> Scope {
        Scope { pass: None }
    }
    pub(super) fn pass(lp: &NodeId, index: usize) -> Scope {
        Scope { pass: Some((lp.clone(), index)) }
    }
    /// The step instance of `base` in this scope.
    pub(super) fn instance(&self, base: &NodeId) -> PassId {
        match &self.pass {
            None => PassId::top(base.clone()),
            Some((_, i)) => PassId::in_pass(base.clone(), *i),
        }
    }
}

/// The step error for an instant the clock cannot reach: past what a run file can record.
pub(super) fn beyond_time(what: &str) -> String {
    format!("{what} would lie past {}, the last time a run can record", time::format(&time::latest()))
}

/// A loop's `over`, rendered: it must be a JSON array of at most `max_items` items.
pub(super) fn loop_items(text: &str, max_items: u64) -> Result<Vec<Value>, String> {
    match crate::json::parse(text.trim()) {
        Err(e @ crate::json::JsonError::TooDeep) => Err(e.about("a loop's \"over\" gave")),
        Ok(Value::Array(items)) if items.len() as u64 <= max_items => Ok(items),
        Ok(Value::Array(items)) => Err(format!("the loop's list has {} items, more than max_items ({max_items})", items.len())),
        Ok(other) => Err(format!("a loop's \"over\" must give a JSON array, got {}", view::kind_name(&other))),
        Err(_) => {
            let shown: String = text.chars().take(80).collect();
            Err(format!("a loop's \"over\" must give a JSON array, got text {shown:?}"))
        }
    }
}

impl Run {
    /// The plan step and scope of a step instance.
    pub(super) fn locate(&self, node: &PassId) -> Option<(PlanStep, Scope)> {
        let step = self.plan.step(node.node())?.clone();
        let scope = match (node.pass(), &step.in_loop) {
            (None, None) => Scope::top(),
            (Some(i), Some(lp)) => Scope::pass(lp, i),
            _ => return None,
        };
        Some((step, scope))
    }

    pub(super) fn pass_state(&self, scope: &Scope) -> Option<&PassState> {
        let (lp, i) = scope.pass.as_ref()?;
        self.loops.get(lp)?.passes.get(*i)
    }

    /// A pass to change; marks it changed.
    pub(super) fn pass_state_mut(&mut self, scope: &Scope) -> Option<&mut PassState> {
        let (lp, i) = scope.pass.as_ref()?;
        self.dirty.mark(journal::Part::Pass(lp.clone(), *i));
        self.loops.get_mut(lp)?.passes.get_mut(*i)
    }

    /// Whether `id` is a body step of the scope's loop.
    pub(super) fn in_scope_body(&self, id: &str, scope: &Scope) -> bool {
        match &scope.pass {
            Some((lp, _)) => self.plan.step(id).is_some_and(|s| s.in_loop.as_deref() == Some(lp)),
            None => false,
        }
    }

    /// The output view of `id` as seen from `scope`.
    pub(super) fn view_in(&self, id: &str, scope: &Scope) -> Option<&Value> {
        if self.in_scope_body(id, scope) { self.pass_state(scope)?.outputs.get(id) } else { self.outputs.get(id) }
    }

    pub(super) fn is_settled(&self, id: &str) -> bool {
        Some(id) == self.plan.trigger_id()
            || self.skipped.iter().any(|s| s == id)
            || self.top_record(id).is_some_and(|r| r.status == StepStatus::Done)
            || (self.outputs.contains_key(id) && self.top_record(id).is_some_and(|r| r.status == StepStatus::Failed))
    }

    pub(super) fn settled_in(&self, id: &str, scope: &Scope) -> bool {
        match &scope.pass {
            Some((lp, _)) if *lp == id => true,
            _ if self.in_scope_body(id, scope) => {
                self.pass_state(scope).is_some_and(|p| p.outputs.contains_key(id) || p.skipped.iter().any(|s| s == id))
            }
            _ => self.is_settled(id),
        }
    }

    pub(super) fn is_ready(&self, i: usize) -> bool {
        let step = &self.plan.steps[i];
        if step.in_loop.is_some() || self.skipped.iter().any(|s| s == &*step.id) {
            return false;
        }
        match self.top_record(&step.id).map(|r| r.status) {
            None | Some(StepStatus::Retrying) => step.parents.iter().all(|p| self.is_settled(&p.from)),
            _ => false,
        }
    }

    /// Body steps ready to start in the open passes of loops in progress.
    pub(super) fn ready_instances(&self) -> Vec<(PlanStep, Scope)> {
        let mut out = Vec::new();
        for (lp, state) in &self.loops {
            if self.top_record(lp).map(|r| r.status) != Some(StepStatus::Running) {
                continue;
            }
            let from = self.first_open.of(lp).min(state.passes.len());
            for (i, pass) in state.passes.iter().enumerate().skip(from).filter(|(_, p)| !p.done) {
                let scope = Scope::pass(lp, i);
                for step in self.plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())) {
                    if pass.outputs.contains_key(step.id.as_str()) || pass.skipped.iter().any(|s| s == &*step.id) {
                        continue;
                    }
                    let fresh = matches!(self.record(&scope.instance(&step.id)).map(|r| r.status), None | Some(StepStatus::Retrying));
                    if fresh && step.parents.iter().all(|p| self.settled_in(&p.from, &scope)) {
                        out.push((step.clone(), scope.clone()));
                    }
                }
            }
        }
        out
    }

    /// Closes finished passes, opens new ones up to the loop's concurrency, and finishes a loop
    /// whose passes are all done.
    pub(super) fn advance_loops(&mut self, now: Ts) -> LoopProgress {
        let mut progress = LoopProgress::Same;
        let running: Vec<NodeId> =
            self.loops.keys().filter(|lp| self.top_record(lp).map(|r| r.status) == Some(StepStatus::Running)).cloned().collect();
        for lp in running {
            let body: Vec<String> =
                self.plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())).map(|s| s.id.to_string()).collect();
            let Some(state) = self.loops.get_mut(lp.as_str()) else { continue };
            let mut from = self.first_open.of(&lp).min(state.passes.len());
            for (i, pass) in state.passes.iter_mut().enumerate().skip(from).filter(|(_, p)| !p.done) {
                if body.iter().all(|b| pass.outputs.contains_key(b) || pass.skipped.contains(b)) {
                    pass.done = true;
                    self.dirty.mark(journal::Part::Pass(lp.clone(), i));
                    progress = LoopProgress::Changed;
                }
            }
            while state.passes.get(from).is_some_and(|p| p.done) {
                from += 1;
            }
            self.first_open.0.insert(lp.to_string(), from);
            let n = state.items.len();
            if state.passes.len() == n && from == n {
                let results: Vec<Value> = (0..n).map(|i| self.pass_result(&lp, i, &body)).collect();
                let mut extra = Map::new();
                extra.insert("items".into(), Value::Array(results.clone()));
                extra.insert("count".into(), json!(n));
                let text = serde_json::to_string(&results).unwrap_or_default();
                let lp = PassId::top(lp);
                self.finish_step(&lp, &text, extra, now);
                return LoopProgress::Finished(lp);
            }
            let active = state.passes[from..].iter().filter(|p| !p.done).count() as u64;
            let mut room = state.concurrency.max(1).saturating_sub(active);
            while room > 0 && state.passes.len() < n {
                state.passes.push(PassState::default());
                self.dirty.mark(journal::Part::Pass(lp.clone(), state.passes.len() - 1));
                room -= 1;
                progress = LoopProgress::Changed;
            }
        }
        progress
    }

    /// A pass's result: the output of the body's sink (its `data`, else its `text`), or an
    /// object keyed by id when the body has several sinks.
    pub(super) fn pass_result(&self, lp: &NodeId, i: usize, body: &[String]) -> Value {
        let scope = Scope::pass(lp, i);
        let sinks: Vec<&String> = body
            .iter()
            .filter(|b| !self.plan.steps.iter().any(|s| s.in_loop.as_ref() == Some(lp) && s.parents.iter().any(|p| &p.from == *b)))
            .collect();
        let value_of = |id: &str| match self.view_in(id, &scope) {
            Some(v) => match v.get("data") {
                Some(d) if !d.is_null() => d.clone(),
                _ => v.get("text").cloned().unwrap_or(Value::Null),
            },
            None => Value::Null,
        };
        match sinks.as_slice() {
            [one] => value_of(one),
            many => Value::Object(many.iter().map(|id| (id.to_string(), value_of(id))).collect()),
        }
    }
}

pub(super) enum LoopProgress {
    /// A loop finished: all its passes are done.
    Finished(PassId),
    Changed,
    Same,
}

impl Run {
    /// The output view of step instance `instance` (`node`, or `body#3` in a loop's pass); `None`
    /// before it has one.
    pub fn view_of(&self, instance: &PassId) -> Option<&Value> {
        let base = instance.node();
        match instance.pass() {
            None => self.outputs.get(base),
            Some(i) => {
                let lp = self.plan.step(base)?.in_loop.as_deref()?;
                self.loops.get(lp)?.passes.get(i)?.outputs.get(base)
            }
        }
    }

    /// Where loop body instance `instance` (`body#3`) stands: its loop's id, the passes done and
    /// the items the loop goes over; `None` for a step outside a loop (what a progress bar shows).
    pub fn loop_progress(&self, instance: &PassId) -> Option<(&str, usize, usize)> {
        instance.pass()?;
        let lp = self.plan.step(instance.node())?.in_loop.as_deref()?;
        let state = self.loops.get(lp)?;
        Some((lp, state.passes.iter().filter(|p| p.done).count(), state.items.len()))
    }
}
