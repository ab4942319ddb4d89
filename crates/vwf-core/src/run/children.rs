//! Design steps (SPEC §3 `design`): a run that starts a run of another saved design, its child,
//! and (when the step waits) takes the child's outputs once it ends.
//!
//! The engine decides, the runner makes: a design step parks its run on a [`Pending::Child`]
//! naming the child's id, derived from the parent's id, the step and the attempt, so every
//! process that takes the parent up means the same child and no crash makes two. The runner makes
//! the child ([`Run::child_to_start`], [`Run::start_child`]), says so ([`Run::child_started`]),
//! and reports where the child stands whenever it moves ([`Run::child_moved`]): parked on a
//! gate or an agent step (which the parent then shows, answerable through it), or ended (which
//! ends the step: done with the child's outputs, or failed, for the step's retry policy and error
//! paths to take up). A child's tokens count against the parent's budget.

use super::*;

/// Why a design step's run id is derived, with the step's record name and attempt.
const CHILD_RUN: &str = "child";

/// A child run to make: what [`Run::child_to_start`] hands the runner.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildStart {
    /// The design step's instance.
    pub node: PassId,
    pub run_id: RunId,
    pub design: DesignName,
    /// The version to run (the step's own, else the one the parent's plan pinned at its start).
    pub version: Option<u64>,
    pub input: Value,
    pub wait: bool,
    /// How deep the child is (the parent's depth plus one).
    pub nesting: u32,
    /// Tokens the child may use before the parent's budget is spent (`None`: no budget).
    pub tokens_left: Option<u64>,
}

impl Run {
    /// The run that started this one through a design step.
    pub fn parent_run(&self) -> Option<&RunId> {
        self.parent_run.as_ref()
    }

    /// The runs this run's design steps started, oldest first.
    pub fn child_runs(&self) -> &[RunId] {
        &self.child_runs
    }

    /// Begins a design step (`spec` is its [`Spec::Design`]): parks the run on the child it is
    /// to start.
    pub(super) fn begin_child(&mut self, id: &PassId, spec: Spec, scope: &Scope, now: Ts) -> Begin {
        let Spec::Design { design, input, wait, version } = spec else {
            self.fail_step(id, "only a design step starts a child run", now);
            return Begin::Settled;
        };
        let attempt = self.open_record(id, StepStatus::AwaitingChild, now);
        let ids = self.plan.ids();
        let (trigger, totals) = (view::input_view(&self.trigger.input), self.totals_view());
        let ctx = self.context(&ids, &trigger, &totals, scope);
        let input = match input {
            None => Ok(Value::Null),
            Some(Value::String(t)) => template::render_str(&t, &ctx).map(Value::String),
            Some(v) => template::render_json(&v, &ctx),
        };
        let input = match input {
            Ok(input) => input,
            Err(e) => {
                self.fail_step(id, StepError::from(e), now);
                return Begin::Settled;
            }
        };
        let version = version.or_else(|| self.plan.calls.get(design.as_str()).copied());
        let run_id = self.run_id.derived(&format!("{CHILD_RUN}:{id}:{attempt}"));
        self.parked.push(Pending::Child { node: id.into(), run_id, design, version, input, wait, started: false, waiting: Vec::new() });
        self.refresh_status();
        Begin::Settled
    }

    /// The first child run this run's design steps are still to start. A child that would nest
    /// deeper than [`limits::DESIGN_DEPTH`] is refused here (its step's attempt fails) and the
    /// next is looked for.
    pub fn child_to_start(&mut self, now: Ts) -> Option<ChildStart> {
        loop {
            let start = self.next_child()?;
            if start.nesting <= limits::DESIGN_DEPTH {
                return Some(start);
            }
            let why = format!(
                "design {} would run {} design steps deep; design steps nest at most {} deep (is a design calling itself?)",
                start.design,
                start.nesting,
                limits::DESIGN_DEPTH
            );
            self.child_refused(&start.node, &why, now);
        }
    }

    fn next_child(&self) -> Option<ChildStart> {
        if self.status.is_finished() {
            return None;
        }
        self.parked.iter().find_map(|p| match p {
            Pending::Child { node, run_id, design, version, input, wait, started: false, .. } => Some(ChildStart {
                node: node.own()?.clone(),
                run_id: run_id.clone(),
                design: design.clone(),
                version: *version,
                input: input.clone(),
                wait: *wait,
                nesting: self.trigger.nesting + 1,
                tokens_left: self.plan.budget_tokens.map(|b| b.saturating_sub(self.tokens_used)),
            }),
            _ => None,
        })
    }

    /// The child that call `call` (counted from 0 across the attempt) of agent step `node`'s
    /// attempt `attempt` starts: a run of `design` with `input`. Its id is derived from all of
    /// these, the input included, so a process that performs the attempt again after a crash finds
    /// the child of a call it made before, and a different call makes a different child.
    pub fn tool_child(&self, node: &PassId, attempt: u32, call: usize, design: &DesignName, input: &Value) -> ChildStart {
        let what = crate::recovery::seed(design.as_str(), &input.to_string(), 0);
        ChildStart {
            node: node.clone(),
            run_id: self.run_id.derived(&format!("tool:{node}:{attempt}:{call}:{what:x}")),
            design: design.clone(),
            version: self.plan.calls.get(design.as_str()).copied(),
            input: input.clone(),
            wait: true,
            nesting: self.trigger.nesting + 1,
            tokens_left: self.plan.budget_tokens.map(|b| b.saturating_sub(self.tokens_used)),
        }
    }

    /// A run a step of this one started outside a design step (an agent's tool call): named
    /// among `child_runs`.
    pub fn note_child(&mut self, id: &RunId) {
        if !self.child_runs.contains(id) {
            self.child_runs.push(id.clone());
            self.mark(journal::Part::Head);
        }
    }

    /// The child `start` names, as a new run of `plan`: started by this run (`parent_run`,
    /// trigger mode `parent`), one level deeper, with at most the tokens the parent has left.
    pub fn start_child(parent: &Run, start: &ChildStart, mut plan: Plan, now: Ts) -> Run {
        if let Some(left) = start.tokens_left {
            plan.budget_tokens = Some(plan.budget_tokens.map_or(left, |own| own.min(left)));
        }
        let origin = parent.trigger.origin.clone().unwrap_or_else(|| parent.run_id.to_string());
        let trigger = TriggerInfo {
            mode: TriggerMode::Parent,
            input: start.input.clone(),
            depth: 0,
            origin: Some(origin),
            nesting: start.nesting,
            folded: 0,
            trace: Some(parent.child_trace(&start.node)),
        };
        let mut run = Run::start(plan, start.run_id.clone(), trigger, now);
        run.parent_run = Some(parent.run_id.clone());
        run
    }

    /// The child of design step `node` has been made: the step records it, and is done when it
    /// does not wait for it.
    pub fn child_started(&mut self, node: &PassId, now: Ts) {
        let Some(Pending::Child { run_id, design, wait, started, .. }) = self.parked.iter_mut().find(|p| p.node() == node) else { return };
        *started = true;
        let (run_id, design, wait) = (run_id.clone(), design.clone(), *wait);
        if !self.child_runs.contains(&run_id) {
            self.child_runs.push(run_id.clone());
        }
        if !wait {
            self.parked.retain(|p| p.node() != node);
            let mut extra = Map::new();
            extra.insert("run_id".into(), Value::String(run_id.to_string()));
            extra.insert("design".into(), Value::String(design.to_string()));
            extra.insert("status".into(), Value::String("started".into()));
            self.finish_step(node, run_id.as_str(), extra, now);
        }
        self.touch(now);
        self.refresh_status();
    }

    /// The child of design step `node` could not be made (its design is missing or has errors,
    /// or it would nest too deep): the attempt fails.
    pub fn child_refused(&mut self, node: &PassId, error: &str, now: Ts) {
        if !self.parked.iter().any(|p| p.node() == node) {
            return;
        }
        self.parked.retain(|p| p.node() != node);
        self.attempt_failed(node, error, Cause::Error, now);
        self.touch(now);
        self.refresh_status();
    }

    /// Where child run `child` stands now: ended, it ends its design step (done with its
    /// outputs, or failed); parked, this run shows what it waits for. Answers whether this run
    /// changed.
    pub fn child_moved(&mut self, child: &Run, now: Ts) -> bool {
        let Some(pos) =
            self.parked.iter().position(|p| matches!(p, Pending::Child { run_id, started: true, .. } if run_id == child.run_id()))
        else {
            return false;
        };
        let Some(node) = self.parked[pos].step().cloned() else { return false };
        if !child.status().is_finished() {
            let questions = child.open_questions();
            let Pending::Child { waiting, .. } = &mut self.parked[pos] else { return false };
            if *waiting == questions {
                return false;
            }
            *waiting = questions;
            self.touch(now);
            self.refresh_status();
            return true;
        }
        self.parked.remove(pos);
        if self.charge_tokens(&node, child.tokens_used(), now) {
            self.touch(now);
            self.refresh_status();
            return true;
        }
        if child.status() == Status::Done {
            let mut extra = Map::new();
            extra.insert("run_id".into(), Value::String(child.run_id().to_string()));
            extra.insert("design".into(), Value::String(child.design().to_string()));
            extra.insert("status".into(), Value::String(child.status().as_str().into()));
            extra.insert("outputs".into(), serde_json::to_value(child.outputs()).unwrap_or_default());
            // The child's usage and cost (its own children's included) add up in this run's.
            let totals = child.totals();
            if totals.usage != crate::usage::Usage::default() {
                extra.extend(totals.fields().into_iter().map(|(k, v)| (k.to_string(), v)));
            }
            if self.charge_cost(&node, &extra, now) {
                self.touch(now);
                self.refresh_status();
                return true;
            }
            self.finish_step(&node, child.result_text().unwrap_or_default(), extra, now);
        } else {
            let error = format!(
                "child run {} of design {} failed{}: {}",
                child.run_id(),
                child.design(),
                child.failed_node().map(|n| format!(" at {n}")).unwrap_or_default(),
                child.error().map(RunFailure::text).unwrap_or("unknown error")
            );
            self.attempt_failed(&node, &error, Cause::Error, now);
        }
        self.touch(now);
        self.refresh_status();
        true
    }

    /// The children this run waits for now (started, not yet ended).
    pub fn waited_children(&self) -> Vec<&RunId> {
        self.parked
            .iter()
            .filter_map(|p| match p {
                Pending::Child { run_id, started: true, wait: true, .. } => Some(run_id),
                _ => None,
            })
            .collect()
    }

    /// What this run waits for a person or an agent to answer: its own gates and agent steps,
    /// and those of the children it waits for, named `<design step>/<their node>`; each says
    /// which run holds it.
    pub fn open_questions(&self) -> Vec<Pending> {
        let mut out = Vec::new();
        for p in &self.parked {
            match p {
                Pending::Approval { .. } | Pending::Agent { .. } => out.push(held_by(p.clone(), &self.run_id)),
                Pending::Child { node, waiting, .. } => out.extend(waiting.iter().map(|q| q.lifted(node))),
                _ => {}
            }
        }
        out
    }

    /// Where an answer to `node` goes when `node` is a child's question shown by this run
    /// (`<design step>/<its node>`): the child's id and the name the child knows it by.
    pub fn child_route(&self, node: &StepPath) -> Option<(RunId, StepPath)> {
        self.parked.iter().find_map(|p| match p {
            Pending::Child { node: step, run_id, started: true, waiting, .. } => {
                let rest = node.through(step.own()?)?;
                waiting.iter().any(|q| *q.node() == rest).then(|| (run_id.clone(), rest))
            }
            _ => None,
        })
    }

    /// The text a finished run gives as a design step's output: its last step's (in plan order)
    /// that has one.
    pub fn result_text(&self) -> Option<&str> {
        self.steps.iter().rev().find_map(|r| {
            if r.node.pass().is_some() {
                return None;
            }
            self.outputs.get(r.node.node())?.get("text")?.as_str()
        })
    }

    /// Charges the cost an agent step reported (`extra`'s `cost`, and `tool_cost`) against the design's
    /// `budget.cost`: past it, or with a model that has no price (so the cost cannot be kept
    /// under it), the step fails the run. Answers whether it did.
    pub(super) fn charge_cost(&mut self, node: &PassId, extra: &Map<String, Value>, now: Ts) -> bool {
        let Some(budget) = self.plan.budget_cost else { return false };
        if !extra.get("usage").is_some_and(Value::is_object) {
            return false;
        }
        let spent = self.cost_so_far();
        // Its own calls, and the runs its tool calls started.
        let mut step = crate::usage::Totals { cost: Some(0.0), ..Default::default() };
        step.add_view(&Value::Object(extra.clone()));
        let failure = match step.cost {
            Some(cost) if crate::usage::round(spent + cost) > budget => {
                let used = crate::usage::round(spent + cost);
                self.log(HistoryEvent {
                    at: now,
                    event: COST_BUDGET_EXCEEDED.into(),
                    node: Some(node.to_string()),
                    detail: json!({"used": used, "budget": budget}),
                });
                RunFailure::from(COST_BUDGET_EXCEEDED)
            }
            Some(_) => return false,
            None => {
                let model = extra.get("usage").and_then(|u| u.get("model")).and_then(Value::as_str).unwrap_or("?");
                RunFailure::from(format!(
                    "the run has a cost budget, but model {model:?} has no price: add [prices.{model:?}] to the config"
                ))
            }
        };
        self.fail_step(node, failure, now);
        true
    }

    /// What the run's steps cost so far (their views' `cost`; one with no price counts 0 here,
    /// since a cost budget fails such a step before it is kept).
    fn cost_so_far(&self) -> f64 {
        self.totals().cost.unwrap_or(0.0)
    }

    /// What the run's model calls used and cost so far: its steps' views, loop passes included.
    pub fn totals(&self) -> crate::usage::Totals {
        let mut totals = crate::usage::Totals { cost: Some(0.0), ..Default::default() };
        let passes = self.loops.values().flat_map(|l| l.passes.iter()).flat_map(|p| p.outputs.values());
        for view in self.outputs.values().chain(passes) {
            totals.add_view(view);
        }
        totals
    }

    /// Adds `tokens` a step used to the run's count; past the budget, the step fails with the
    /// budget error. Answers whether it did.
    pub(super) fn charge_tokens(&mut self, node: &PassId, tokens: u64, now: Ts) -> bool {
        if tokens == 0 {
            return false;
        }
        self.tokens_used = self.tokens_used.saturating_add(tokens);
        let Some(budget) = self.plan.budget_tokens.filter(|b| self.tokens_used > *b) else { return false };
        self.log(HistoryEvent {
            at: now,
            event: TOKEN_BUDGET_EXCEEDED.into(),
            node: Some(node.to_string()),
            detail: json!({"used": self.tokens_used, "budget": budget}),
        });
        self.fail_step(node, RunFailure::TokenBudgetExceeded, now);
        true
    }
}

/// `p` with the run that holds it named (kept when it names one already).
fn held_by(mut p: Pending, id: &RunId) -> Pending {
    if let Pending::Approval { run_id, .. } | Pending::Agent { run_id, .. } = &mut p {
        run_id.get_or_insert_with(|| id.clone());
    }
    p
}

impl Pending {
    /// This question as its parent shows it: named `<step>/<node>`.
    pub(super) fn lifted(&self, step: &StepPath) -> Pending {
        let mut p = self.clone();
        if let (Pending::Approval { node, .. } | Pending::Agent { node, .. }, Some(step)) = (&mut p, step.own()) {
            *node = node.lifted(step);
        }
        p
    }

    /// What a run shows as its `pending` for this: a child's first question when the child waits
    /// on one, else this.
    pub(super) fn shown(&self) -> Pending {
        match self {
            Pending::Child { node, waiting, .. } if !waiting.is_empty() => waiting[0].lifted(node),
            _ => self.clone(),
        }
    }
}
