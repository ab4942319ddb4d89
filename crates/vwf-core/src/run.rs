//! The run record and the engine state machine (SPEC §7–9).
//!
//! A `Run` is both the persisted run file and the source of the run result every surface returns.
//! It owns the plan it started with. The engine is sans-IO: `advance` settles the steps the core
//! can decide alone (conditions, approvals parking, collect-only outputs, waits, skips) one at a
//! time, and hands out `Task`s for steps that need the outside world (agents, deliveries,
//! commands, HTTP, emits). A driver performs a task and reports its `Outcome` with `complete`.
//! The caller persists the run after every call that changed it.
//!
//! Invariants: a step is ready when every parent is settled; it runs when at least one incoming
//! edge is active, else it is skipped (and skips propagate). Outputs are keyed by id and `skipped`
//! and `steps` are kept in plan order, so the record is the same whatever the completion order.
//! A step error fails the run and nothing after it starts.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::expr;
use crate::limits;
use crate::plan::{Plan, PlanStep};
use crate::refs;
use crate::shell;
use crate::spec::{OnTimeout, Spec};
use crate::template::{self, Context};
use crate::time::{self, Ts};
use crate::view;

pub const APPROVAL_TIMED_OUT: &str = "approval timed out";
pub const ESCALATION_REQUESTED: &str = "escalation requested";
/// The error of a gate that timed out with `on_timeout: escalate`: the timeout and the escalation,
/// where people read why a run failed.
pub const APPROVAL_TIMED_OUT_ESCALATED: &str = "approval timed out; escalation requested";
/// Why an attempt still in progress when its run failed ended (a retry starts it again).
pub const UNFINISHED_WHEN_THE_RUN_FAILED: &str = "not finished when the run failed";
pub const TOKEN_BUDGET_EXCEEDED: &str = "token budget exceeded";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    Waiting,
    AwaitingApproval,
    AwaitingAgent,
    Done,
    Failed,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::AwaitingApproval => "awaiting_approval",
            Status::AwaitingAgent => "awaiting_agent",
            Status::Done => "done",
            Status::Failed => "failed",
        }
    }
    pub fn is_finished(&self) -> bool {
        matches!(self, Status::Done | Status::Failed)
    }
    pub fn is_parked(&self) -> bool {
        matches!(self, Status::Waiting | Status::AwaitingApproval | Status::AwaitingAgent)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Running,
    /// An agent attempt failed and another is due.
    Retrying,
    Done,
    Failed,
    AwaitingApproval,
    AwaitingAgent,
    Waiting,
}

/// A step's record in the run: its latest attempt (`status`, `started_at`, `finished_at`,
/// `error`), how many attempts it took, and every attempt in `tries`. Agent retries and run
/// retries both add attempts; nothing erases one. Changed only through the methods below, so the
/// record and its last try always agree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub node: String,
    pub status: StepStatus,
    pub attempts: u32,
    /// When the latest attempt started.
    #[serde(with = "time")]
    pub started_at: Ts,
    #[serde(with = "time::opt")]
    pub finished_at: Option<Ts>,
    pub error: Option<String>,
    /// Errors of earlier attempts of this step (agent retries and run retries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Every attempt, oldest first (`tries.len() == attempts`; empty only in run files written
    /// before attempts were kept).
    #[serde(default)]
    pub tries: Vec<Try>,
}

/// One attempt of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Try {
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The attempt's state: `done` or `failed` once it ended, else where it is now.
    pub status: StepStatus,
    #[serde(with = "time")]
    pub started_at: Ts,
    #[serde(with = "time::opt")]
    pub finished_at: Option<Ts>,
    pub error: Option<String>,
    /// Bytes of the text the attempt produced (null until it is done).
    pub output_bytes: Option<u64>,
}

impl StepRecord {
    fn open(node: &str, status: StepStatus, now: Ts) -> StepRecord {
        let mut r = StepRecord {
            node: node.into(),
            status,
            attempts: 0,
            started_at: now,
            finished_at: None,
            error: None,
            failures: Vec::new(),
            tries: Vec::new(),
        };
        r.begin_try(status, now);
        r
    }

    /// Starts the next attempt; returns its number.
    fn begin_try(&mut self, status: StepStatus, now: Ts) -> u32 {
        self.attempts += 1;
        self.status = status;
        self.started_at = now;
        self.finished_at = None;
        self.error = None;
        self.tries.push(Try { attempt: self.attempts, status, started_at: now, finished_at: None, error: None, output_bytes: None });
        self.attempts
    }

    /// The attempt in progress moves on without ending (parked, resumed).
    fn set_status(&mut self, status: StepStatus) {
        self.status = status;
        if let Some(t) = self.open_try() {
            t.status = status;
        }
    }

    /// Ends the attempt in progress: done with `output_bytes`, or failed with `error`.
    fn end_try(&mut self, status: StepStatus, error: Option<&str>, output_bytes: Option<u64>, now: Ts) {
        self.status = status;
        self.finished_at = Some(now);
        self.error = error.map(String::from);
        if let Some(t) = self.open_try() {
            t.status = status;
            t.finished_at = Some(now);
            t.error = error.map(String::from);
            t.output_bytes = output_bytes;
        }
    }

    /// A failed attempt is followed by another: its error moves to `failures` and the step
    /// waits to be started again.
    fn await_next_try(&mut self, error: &str, now: Ts) {
        if self.open_try().is_some() {
            self.end_try(StepStatus::Failed, Some(error), None, now);
        }
        self.failures.push(error.to_string());
        self.status = StepStatus::Retrying;
        self.finished_at = None;
        self.error = None;
    }

    fn open_try(&mut self) -> Option<&mut Try> {
        self.tries.last_mut().filter(|t| t.finished_at.is_none())
    }
}

/// What a parked run waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Pending {
    Approval {
        node: String,
        question: String,
        options: Vec<String>,
        #[serde(with = "time::opt")]
        deadline: Option<Ts>,
        on_timeout: String,
        /// What is being approved: the text of each step (or of the run's input, `trigger`) the
        /// question's template names, keyed by id.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        outputs: Map<String, Value>,
    },
    Agent { node: String, prompt: String, profile: Option<String>, model: Option<String> },
    Wait {
        node: String,
        #[serde(with = "time")]
        resume_at: Ts,
    },
}

impl Pending {
    pub fn node(&self) -> &str {
        match self {
            Pending::Approval { node, .. } | Pending::Agent { node, .. } | Pending::Wait { node, .. } => node,
        }
    }
    fn status(&self) -> Status {
        match self {
            Pending::Approval { .. } => Status::AwaitingApproval,
            Pending::Agent { .. } => Status::AwaitingAgent,
            Pending::Wait { .. } => Status::Waiting,
        }
    }
}

/// One delivery attempt with the platform's real answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub node: String,
    pub target: String,
    pub ok: bool,
    pub detail: String,
    #[serde(with = "time")]
    pub at: Ts,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerInfo {
    pub mode: String,
    pub input: Value,
    /// How many emits led to this run (0 for a run not started by an event).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TriggerInfo {
    pub fn new(mode: &str, input: Value) -> TriggerInfo {
        TriggerInfo { mode: mode.to_string(), input, depth: 0 }
    }
}

/// An entry of the run file's history: retries, escalations, budget use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    #[serde(with = "time")]
    pub at: Ts,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

/// The run file. Its first fields are the run result of SPEC §8; `tokens_used`, `parked`,
/// `history` and `plan` are the file's additions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub ok: bool,
    pub run_id: String,
    pub design: String,
    pub status: Status,
    pub pending: Option<Pending>,
    pub outputs: BTreeMap<String, Value>,
    pub skipped: Vec<String>,
    pub deliveries: Vec<Delivery>,
    pub error: Option<String>,
    pub failed_node: Option<String>,
    pub steps: Vec<StepRecord>,
    pub trigger: TriggerInfo,
    #[serde(with = "time")]
    pub created_at: Ts,
    #[serde(with = "time")]
    pub updated_at: Ts,
    #[serde(default)]
    pub tokens_used: u64,
    #[serde(default)]
    pub parked: Vec<Pending>,
    #[serde(default)]
    pub history: Vec<HistoryEvent>,
    /// Loops in progress or finished: their items and the state of each pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub loops: BTreeMap<String, LoopState>,
    pub plan: Plan,
}

/// Fields of the run file that are not part of the run result.
pub const FILE_ONLY_FIELDS: [&str; 5] = ["tokens_used", "parked", "history", "loops", "plan"];

/// A loop step's items and passes. A body step's record in `steps` is named `<id>#<pass>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    pub items: Vec<Value>,
    pub concurrency: u64,
    /// Passes started so far, by index.
    #[serde(default)]
    pub passes: Vec<PassState>,
}

/// One pass of a loop: the outputs of its body steps, visible only inside the pass.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PassState {
    #[serde(default)]
    pub outputs: BTreeMap<String, Value>,
    #[serde(default)]
    pub skipped: Vec<String>,
    #[serde(default)]
    pub done: bool,
}

/// Where a step instance runs: at the top of the plan, or in one pass of a loop.
#[derive(Debug, Clone, PartialEq, Default)]
struct Scope {
    pass: Option<(String, usize)>,
}

impl Scope {
    fn top() -> Scope {
        Scope { pass: None }
    }
    fn pass(lp: &str, index: usize) -> Scope {
        Scope { pass: Some((lp.to_string(), index)) }
    }
    /// The record name of `base` in this scope.
    fn instance(&self, base: &str) -> String {
        match &self.pass {
            None => base.to_string(),
            Some((_, i)) => format!("{base}#{i}"),
        }
    }
}

/// `body#3` → (`body`, Some(3)); a plain id → (id, None). Node ids never contain `#`.
fn split_instance(id: &str) -> (&str, Option<usize>) {
    match id.rsplit_once('#') {
        Some((base, n)) => match n.parse() {
            Ok(i) => (base, Some(i)),
            Err(_) => (id, None),
        },
        None => (id, None),
    }
}

/// The step error for an instant the clock cannot reach: past what a run file can record.
fn beyond_time(what: &str) -> String {
    format!("{what} would lie past {}, the last time a run can record", time::format(&time::latest()))
}

/// A loop's `over`, rendered: it must be a JSON array of at most `max_items` items.
fn loop_items(text: &str, max_items: u64) -> Result<Vec<Value>, String> {
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


/// Work for a driver.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub node: String,
    pub attempt: u32,
    pub work: Work,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    Agent { prompt: String, profile: Option<String>, model: Option<String>, max_tokens: Option<u64>, timeout_seconds: u64 },
    Deliver { message: String, deliver: String, target: String, collected: Map<String, Value> },
    /// `run` has its template values shell-quoted; `argv` items are rendered plainly.
    Command { run: Option<String>, argv: Option<Vec<String>>, cwd: Option<String>, env: BTreeMap<String, String>, timeout_seconds: u64 },
    Http { url: String, method: String, headers: BTreeMap<String, String>, body: Option<Value>, timeout_seconds: u64, accept: Vec<(u16, u16)> },
    Emit { event: String, payload: Value },
}

/// What a driver reports for a task.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The step produced `text`; `extra` holds its type-specific view fields; `tokens` counts
    /// against the budget (agents).
    Done { text: String, extra: Map<String, Value>, tokens: u64 },
    /// A delivery attempt, successful or not.
    Delivered(Delivery),
    Failed { error: String },
    /// No agent backend: park the step for a person or a host agent.
    ParkAgent,
}

/// What `advance` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Advance {
    /// One step was settled (or parked) by the core: persist and call again.
    Settled(String),
    /// These steps are now running: persist, perform them, `complete` each.
    Tasks(Vec<Task>),
    /// Nothing more to do now: the run is finished or parked (or waits for running tasks).
    Idle,
}

/// An answer to a parked step.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// A gate's answer.
    Answer(String),
    /// An agent step's text.
    Output(String),
    /// An agent step performed through the backend on request, with its usage.
    Generated { text: String, model: Option<String>, tokens: u64 },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    /// The request is wrong (HTTP 400), e.g. an answer not in the options.
    #[error("{0}")]
    BadRequest(String),
    /// The run has no such node (HTTP 404).
    #[error("{0}")]
    UnknownNode(String),
    /// The run is not in a state that allows this (HTTP 409).
    #[error("{0}")]
    Conflict(String),
}

impl Run {
    pub fn start(plan: Plan, run_id: &str, trigger: TriggerInfo, now: Ts) -> Run {
        Run {
            ok: true,
            run_id: run_id.to_string(),
            design: plan.design.clone(),
            status: Status::Running,
            pending: None,
            outputs: BTreeMap::new(),
            skipped: Vec::new(),
            deliveries: Vec::new(),
            error: None,
            failed_node: None,
            steps: Vec::new(),
            trigger,
            created_at: now,
            updated_at: now,
            tokens_used: 0,
            parked: Vec::new(),
            history: Vec::new(),
            loops: BTreeMap::new(),
            plan,
        }
    }

    /// The run result of SPEC §8 (the file without its additions).
    pub fn result(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or_else(|e| json!({"ok": false, "error": e.to_string()}));
        if let Some(obj) = v.as_object_mut() {
            for k in FILE_ONLY_FIELDS {
                obj.remove(k);
            }
        }
        v
    }

    /// The plan step behind a record name (`node`, or `node#pass` inside a loop).
    pub fn plan_step(&self, node: &str) -> Option<&PlanStep> {
        self.plan.step(split_instance(node).0)
    }

    pub fn record(&self, node: &str) -> Option<&StepRecord> {
        self.steps.iter().find(|r| r.node == node)
    }

    fn record_mut(&mut self, node: &str) -> Option<&mut StepRecord> {
        self.steps.iter_mut().find(|r| r.node == node)
    }

    /// Settles what the core can settle, or hands out tasks. See `Advance`.
    pub fn advance(&mut self, now: Ts) -> Advance {
        if self.status.is_finished() {
            return Advance::Idle;
        }
        if self.enforce_deadlines(now) {
            return Advance::Settled(self.failed_node.clone().unwrap_or_default());
        }
        loop {
            let mut progressed = false;
            let mut tasks = Vec::new();
            match self.advance_loops(now) {
                LoopProgress::Finished(lp) => {
                    self.touch(now);
                    self.refresh_status();
                    return Advance::Settled(lp);
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
                match self.begin(&step, &scope, now) {
                    Begin::Settled => {
                        self.touch(now);
                        self.refresh_status();
                        // Steps begun earlier in this pass are running: hand them out now, or
                        // nobody would ever perform them.
                        if !tasks.is_empty() {
                            return Advance::Tasks(tasks);
                        }
                        return Advance::Settled(scope.instance(&step.id));
                    }
                    Begin::Task(t) => tasks.push(t),
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
            return Advance::Settled(node);
        }
        self.refresh_status();
        Advance::Idle
    }

    /// A driver's report for a running step.
    pub fn complete(&mut self, node: &str, outcome: Outcome, now: Ts) -> Result<(), EngineError> {
        let (step, scope) = self.locate(node).ok_or_else(|| EngineError::UnknownNode(format!("run {} has no node {node:?}", self.run_id)))?;
        match self.record(node).map(|r| r.status) {
            Some(StepStatus::Running) => {}
            _ => return Err(EngineError::Conflict(format!("step {node:?} is not running"))),
        }
        match outcome {
            Outcome::Done { text, extra, tokens } => {
                if step.kind() == "agent" && tokens > 0 {
                    self.tokens_used = self.tokens_used.saturating_add(tokens);
                    if let Some(budget) = self.plan.budget_tokens.filter(|b| self.tokens_used > *b) {
                        self.history.push(HistoryEvent {
                            at: now,
                            event: TOKEN_BUDGET_EXCEEDED.into(),
                            node: Some(node.into()),
                            detail: json!({"used": self.tokens_used, "budget": budget}),
                        });
                        self.fail_step(node, TOKEN_BUDGET_EXCEEDED, now);
                        return Ok(());
                    }
                }
                self.finish_step(node, &text, extra, now);
            }
            Outcome::Delivered(d) => {
                let ok = d.ok;
                let error = format!("delivery to {} failed: {}", d.target, d.detail);
                self.deliveries.push(d.clone());
                if ok {
                    let message = self.collect_message(&step, &scope).unwrap_or_default();
                    let mut extra = Map::new();
                    extra.insert("collected".into(), Value::Object(self.collected(&step, &scope)));
                    extra.insert("deliveries".into(), json!([d]));
                    self.finish_step(node, &message, extra, now);
                } else {
                    self.fail_step(node, &error, now);
                }
            }
            Outcome::Failed { error } => {
                let retries = match step.spec() {
                    Ok(Spec::Agent { retries, .. }) => retries,
                    _ => 0,
                };
                let attempts = self.record(node).map_or(1, |r| r.attempts);
                if attempts <= retries {
                    if let Some(r) = self.record_mut(node) {
                        r.await_next_try(&error, now);
                    }
                } else {
                    self.fail_step(node, &error, now);
                }
            }
            Outcome::ParkAgent => {
                let prompt_src = step.node.get("prompt").and_then(Value::as_str).unwrap_or_default().to_string();
                let pending = match (step.spec(), self.render(&prompt_src, &scope)) {
                    (Ok(Spec::Agent { profile, model, .. }), Ok(prompt)) => Pending::Agent { node: node.into(), prompt, profile, model },
                    (Err(e), _) | (_, Err(e)) => {
                        self.fail_step(node, &e, now);
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
    pub fn respond(&mut self, node: &str, response: Response, now: Ts) -> Result<(), EngineError> {
        self.enforce_deadlines(now);
        if self.locate(node).is_none() {
            return Err(EngineError::UnknownNode(format!("run {} has no node {node:?}", self.run_id)));
        }
        if self.status == Status::Failed
            && self.failed_node.as_deref() == Some(node)
            && matches!(self.error.as_deref(), Some(APPROVAL_TIMED_OUT | APPROVAL_TIMED_OUT_ESCALATED))
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
            (Pending::Approval { options, .. }, Response::Answer(answer)) => {
                let Some(chosen) = options.iter().find(|o| o.eq_ignore_ascii_case(answer.trim())).cloned() else {
                    return Err(EngineError::BadRequest(format!(
                        "answer {answer:?} is not one of the options of {node:?}: {}",
                        options.join(", ")
                    )));
                };
                self.parked.remove(pos);
                let mut extra = Map::new();
                extra.insert("answer".into(), Value::String(chosen.clone()));
                self.finish_step(node, &chosen, extra, now);
            }
            (Pending::Agent { model, .. }, Response::Output(text)) => {
                let model = model.clone();
                self.parked.remove(pos);
                let mut extra = Map::new();
                extra.insert("model".into(), model.map_or(Value::Null, Value::String));
                extra.insert("tokens".into(), json!(0));
                self.finish_step(node, &text, extra, now);
            }
            (Pending::Agent { .. }, Response::Generated { text, model, tokens }) => {
                // Performed through the backend: it counts like a driver's answer.
                self.parked.remove(pos);
                if let Some(r) = self.record_mut(node) {
                    r.set_status(StepStatus::Running);
                }
                let mut extra = Map::new();
                extra.insert("model".into(), model.map_or(Value::Null, Value::String));
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
            .filter(|r| Some(&r.node) == failed.as_ref() || matches!(r.status, StepStatus::Running | StepStatus::Retrying | StepStatus::Failed))
            .cloned()
            .collect();
        self.history.push(HistoryEvent {
            at: now,
            event: "retry".into(),
            node: failed.clone(),
            detail: json!({"error": self.error, "steps": reopen}),
        });
        for r in self.steps.iter_mut().filter(|r| reopen.iter().any(|o| o.node == r.node)) {
            if r.status != StepStatus::Retrying {
                let error = r.error.clone().unwrap_or_else(|| UNFINISHED_WHEN_THE_RUN_FAILED.to_string());
                r.await_next_try(&error, now);
            }
        }
        self.parked.retain(|p| !reopen.iter().any(|o| o.node == p.node()));
        self.status = Status::Running;
        self.ok = true;
        self.error = None;
        self.failed_node = None;
        self.touch(now);
        Ok(())
    }

    /// Fails the run if a gate's deadline has passed. Returns whether anything changed.
    pub fn enforce_deadlines(&mut self, now: Ts) -> bool {
        if self.status.is_finished() {
            return false;
        }
        let expired = self.parked.iter().find_map(|p| match p {
            Pending::Approval { node, deadline: Some(d), on_timeout, .. } if *d <= now => Some((node.clone(), on_timeout.clone())),
            _ => None,
        });
        let Some((node, on_timeout)) = expired else { return false };
        let error = if on_timeout == OnTimeout::Escalate.as_str() {
            self.history.push(HistoryEvent { at: now, event: ESCALATION_REQUESTED.into(), node: Some(node.clone()), detail: Value::Null });
            APPROVAL_TIMED_OUT_ESCALATED
        } else {
            APPROVAL_TIMED_OUT
        };
        self.parked.retain(|p| p.node() != node);
        self.fail_step(&node, error, now);
        self.touch(now);
        true
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
        let is_loop = |r: &StepRecord| self.locate(&r.node).is_some_and(|(s, _)| s.kind() == "loop");
        let node = self
            .steps
            .iter()
            .find(|r| r.status == StepStatus::Running && !is_loop(r))
            .or_else(|| self.steps.iter().find(|r| r.status == StepStatus::Running))
            .map(|r| r.node.clone())
            .or_else(|| (0..self.plan.steps.len()).find(|&i| self.is_ready(i)).map(|i| self.plan.steps[i].id.clone()));
        let error = match (&node, cause) {
            (Some(n), None) => format!("interrupted during step {n}"),
            (None, None) => "interrupted".to_string(),
            (Some(n), Some(cause)) => format!("the run could not be saved during step {n}: {cause}"),
            (None, Some(cause)) => format!("the run could not be saved: {cause}"),
        };
        if let Some(r) = node.as_deref().and_then(|n| self.steps.iter_mut().find(|r| r.node == n)) {
            r.end_try(StepStatus::Failed, Some(&error), None, now);
        }
        self.status = Status::Failed;
        self.ok = false;
        self.error = Some(error);
        self.failed_node = node;
        self.pending = None;
        self.touch(now);
    }

    /// When the earliest timed wait is due, if the run waits on one.
    pub fn next_wake(&self) -> Option<Ts> {
        self.parked
            .iter()
            .filter_map(|p| match p {
                Pending::Wait { resume_at, .. } => Some(*resume_at),
                _ => None,
            })
            .min()
    }

    // ---- internals ----

    fn touch(&mut self, now: Ts) {
        if now > self.updated_at {
            self.updated_at = now;
        }
    }

    /// The plan step and scope of a record name (`id` or `id#pass`).
    fn locate(&self, node: &str) -> Option<(PlanStep, Scope)> {
        let (base, pass) = split_instance(node);
        let step = self.plan.step(base)?.clone();
        let scope = match (pass, &step.in_loop) {
            (None, None) => Scope::top(),
            (Some(i), Some(lp)) => Scope::pass(lp, i),
            _ => return None,
        };
        Some((step, scope))
    }

    fn pass_state(&self, scope: &Scope) -> Option<&PassState> {
        let (lp, i) = scope.pass.as_ref()?;
        self.loops.get(lp)?.passes.get(*i)
    }

    fn pass_state_mut(&mut self, scope: &Scope) -> Option<&mut PassState> {
        let (lp, i) = scope.pass.as_ref()?;
        self.loops.get_mut(lp)?.passes.get_mut(*i)
    }

    /// Whether `id` is a body step of the scope's loop.
    fn in_scope_body(&self, id: &str, scope: &Scope) -> bool {
        match &scope.pass {
            Some((lp, _)) => self.plan.step(id).is_some_and(|s| s.in_loop.as_deref() == Some(lp)),
            None => false,
        }
    }

    /// The output view of `id` as seen from `scope`.
    fn view_in(&self, id: &str, scope: &Scope) -> Option<&Value> {
        if self.in_scope_body(id, scope) {
            self.pass_state(scope)?.outputs.get(id)
        } else {
            self.outputs.get(id)
        }
    }

    fn is_settled(&self, id: &str) -> bool {
        Some(id) == self.plan.trigger_id()
            || self.skipped.iter().any(|s| s == id)
            || self.record(id).is_some_and(|r| r.status == StepStatus::Done)
    }

    fn settled_in(&self, id: &str, scope: &Scope) -> bool {
        match &scope.pass {
            Some((lp, _)) if id == lp => true,
            _ if self.in_scope_body(id, scope) => {
                self.pass_state(scope).is_some_and(|p| p.outputs.contains_key(id) || p.skipped.iter().any(|s| s == id))
            }
            _ => self.is_settled(id),
        }
    }

    fn is_ready(&self, i: usize) -> bool {
        let step = &self.plan.steps[i];
        if step.in_loop.is_some() || self.skipped.contains(&step.id) {
            return false;
        }
        match self.record(&step.id).map(|r| r.status) {
            None | Some(StepStatus::Retrying) => step.parents.iter().all(|p| self.is_settled(&p.from)),
            _ => false,
        }
    }

    /// Body steps ready to start in the open passes of loops in progress.
    fn ready_instances(&self) -> Vec<(PlanStep, Scope)> {
        let mut out = Vec::new();
        for (lp, state) in &self.loops {
            if self.record(lp).map(|r| r.status) != Some(StepStatus::Running) {
                continue;
            }
            for (i, pass) in state.passes.iter().enumerate().filter(|(_, p)| !p.done) {
                let scope = Scope::pass(lp, i);
                for step in self.plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())) {
                    if pass.outputs.contains_key(&step.id) || pass.skipped.contains(&step.id) {
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
    fn advance_loops(&mut self, now: Ts) -> LoopProgress {
        let mut progress = LoopProgress::Same;
        let running: Vec<String> =
            self.loops.keys().filter(|lp| self.record(lp).map(|r| r.status) == Some(StepStatus::Running)).cloned().collect();
        for lp in running {
            let body: Vec<String> = self.plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())).map(|s| s.id.clone()).collect();
            let Some(state) = self.loops.get_mut(&lp) else { continue };
            for pass in state.passes.iter_mut().filter(|p| !p.done) {
                if body.iter().all(|b| pass.outputs.contains_key(b) || pass.skipped.contains(b)) {
                    pass.done = true;
                    progress = LoopProgress::Changed;
                }
            }
            let n = state.items.len();
            if state.passes.len() == n && state.passes.iter().all(|p| p.done) {
                let results: Vec<Value> = (0..n).map(|i| self.pass_result(&lp, i, &body)).collect();
                let mut extra = Map::new();
                extra.insert("items".into(), Value::Array(results.clone()));
                extra.insert("count".into(), json!(n));
                let text = serde_json::to_string(&results).unwrap_or_default();
                self.finish_step(&lp, &text, extra, now);
                return LoopProgress::Finished(lp);
            }
            let active = state.passes.iter().filter(|p| !p.done).count() as u64;
            let mut room = state.concurrency.max(1).saturating_sub(active);
            while room > 0 && state.passes.len() < n {
                state.passes.push(PassState::default());
                room -= 1;
                progress = LoopProgress::Changed;
            }
        }
        progress
    }

    /// A pass's result: the output of the body's sink (its `data`, else its `text`), or an
    /// object keyed by id when the body has several sinks.
    fn pass_result(&self, lp: &str, i: usize, body: &[String]) -> Value {
        let scope = Scope::pass(lp, i);
        let sinks: Vec<&String> = body
            .iter()
            .filter(|b| !self.plan.steps.iter().any(|s| s.in_loop.as_deref() == Some(lp) && s.parents.iter().any(|p| &p.from == *b)))
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

    fn any_active_parent(&self, step: &PlanStep, scope: &Scope) -> bool {
        step.parents.is_empty()
            || step.parents.iter().any(|p| {
                if Some(p.from.as_str()) == self.plan.trigger_id() {
                    return true;
                }
                if scope.pass.as_ref().is_some_and(|(lp, _)| lp == &p.from) {
                    return p.label.as_deref() == Some("each");
                }
                let Some(view) = self.view_in(&p.from, scope) else { return false };
                let kind = self.plan.step(&p.from).map(|s| s.kind()).unwrap_or("");
                match (kind, p.label.as_deref()) {
                    ("condition", Some(l)) => view.get("value").and_then(Value::as_bool).map(|b| b.to_string()).as_deref() == Some(l),
                    ("approval", Some(l)) => view.get("answer").and_then(Value::as_str) == Some(l),
                    ("loop", Some(l)) => l == "done",
                    _ => true,
                }
            })
    }

    fn skip(&mut self, id: &str, scope: &Scope) {
        if scope.pass.is_some() {
            if let Some(pass) = self.pass_state_mut(scope) {
                pass.skipped.push(id.to_string());
            }
            return;
        }
        self.skipped.push(id.to_string());
        let order: HashMap<&str, usize> = self.plan.steps.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
        self.skipped.sort_by_key(|s| order.get(s.as_str()).copied().unwrap_or(usize::MAX));
    }

    /// Where a record sorts in `steps`: plan position, then pass.
    fn order_key(&self, node: &str) -> (usize, usize) {
        let (base, pass) = split_instance(node);
        (self.plan.position(base).unwrap_or(usize::MAX), pass.map_or(0, |p| p + 1))
    }

    /// Opens (or reopens, for a retry) the step's record.
    fn open_record(&mut self, id: &str, status: StepStatus, now: Ts) -> u32 {
        if let Some(r) = self.record_mut(id) {
            return r.begin_try(status, now);
        }
        let key = self.order_key(id);
        let at = self.steps.iter().position(|r| self.order_key(&r.node) > key).unwrap_or(self.steps.len());
        self.steps.insert(at, StepRecord::open(id, status, now));
        1
    }

    /// Records a step instance's output (`id` is a record name: `node` or `node#pass`).
    fn finish_step(&mut self, id: &str, text: &str, extra: Map<String, Value>, now: Ts) {
        if text.len() > limits::STEP_OUTPUT_BYTES {
            let msg = format!(
                "output of step {id} is {} bytes, over the {} byte limit for output kept inline",
                text.len(),
                limits::STEP_OUTPUT_BYTES
            );
            self.fail_step(id, &msg, now);
            return;
        }
        let (base, _) = split_instance(id);
        let view = if self.plan.step(base).is_some_and(|s| s.kind() == "command") {
            view::command_view(text, extra)
        } else {
            view::output_view(text, extra)
        };
        let base = base.to_string();
        match self.locate(id) {
            Some((_, scope)) if scope.pass.is_some() => {
                if let Some(pass) = self.pass_state_mut(&scope) {
                    pass.outputs.insert(base, view);
                }
            }
            _ => {
                self.outputs.insert(base, view);
            }
        }
        if let Some(r) = self.record_mut(id) {
            r.end_try(StepStatus::Done, None, Some(text.len() as u64), now);
        }
    }

    /// Fails a step instance and the run; a failure inside a pass fails its loop step too.
    fn fail_step(&mut self, id: &str, error: &str, now: Ts) {
        if self.record(id).is_none() {
            self.open_record(id, StepStatus::Failed, now);
        }
        if let Some(r) = self.record_mut(id) {
            r.end_try(StepStatus::Failed, Some(error), None, now);
        }
        let (failed, error) = match self.locate(id).and_then(|(_, scope)| scope.pass) {
            Some((lp, i)) => {
                let msg = format!("loop {lp} failed in pass {i} at step {}: {error}", split_instance(id).0);
                // The first failed pass fails the loop; a concurrent pass failing after it
                // keeps its error on its own record.
                if let Some(r) = self.record_mut(&lp).filter(|r| r.status != StepStatus::Failed) {
                    r.end_try(StepStatus::Failed, Some(&msg), None, now);
                }
                (lp, msg)
            }
            None => (id.to_string(), error.to_string()),
        };
        if !self.status.is_finished() {
            self.status = Status::Failed;
            self.ok = false;
            self.error = Some(error);
            self.failed_node = Some(failed);
            self.pending = None;
        }
    }

    fn refresh_status(&mut self) {
        if self.status.is_finished() {
            self.pending = None;
            return;
        }
        let mut parked = std::mem::take(&mut self.parked);
        parked.sort_by_key(|p| self.order_key(p.node()));
        self.parked = parked;
        let is_loop = |r: &StepRecord| self.locate(&r.node).is_some_and(|(s, _)| s.kind() == "loop");
        let running = self.steps.iter().any(|r| matches!(r.status, StepStatus::Running | StepStatus::Retrying) && !is_loop(r));
        let loop_can_move = self.loops.iter().any(|(lp, state)| {
            self.record(lp).map(|r| r.status) == Some(StepStatus::Running) && {
                let body: Vec<&PlanStep> = self.plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())).collect();
                let open = state.passes.iter().filter(|p| !p.done).count() as u64;
                let closable = state.passes.iter().any(|p| !p.done && body.iter().all(|b| p.outputs.contains_key(&b.id) || p.skipped.contains(&b.id)));
                let openable = open < state.concurrency.max(1) && state.passes.len() < state.items.len();
                closable || openable || state.passes.iter().all(|p| p.done)
            }
        });
        let ready = (0..self.plan.steps.len()).any(|i| self.is_ready(i)) || !self.ready_instances().is_empty() || loop_can_move;
        let all_settled = self.plan.steps.iter().filter(|s| s.in_loop.is_none()).all(|s| self.is_settled(&s.id));
        self.pending = self.parked.first().cloned();
        self.status = if all_settled {
            Status::Done
        } else if running || ready {
            Status::Running
        } else if let Some(p) = &self.pending {
            p.status()
        } else {
            Status::Running
        };
        self.ok = true;
    }

    fn context<'a>(&'a self, ids: &'a [String], trigger: &'a Value, scope: &Scope) -> Context<'a> {
        let (local_views, item, loop_index) = match &scope.pass {
            Some((lp, i)) => (
                self.pass_state(scope).map(|p| &p.outputs),
                self.loops.get(lp).and_then(|l| l.items.get(*i)),
                Some(*i as u64),
            ),
            None => (None, None, None),
        };
        Context {
            ids,
            views: &self.outputs,
            local_views,
            trigger_id: self.plan.trigger_id(),
            trigger,
            item,
            loop_index,
            run_id: &self.run_id,
            design: &self.design,
        }
    }

    fn render(&self, src: &str, scope: &Scope) -> Result<String, String> {
        let ids = self.plan.ids();
        let trigger = view::input_view(&self.trigger.input);
        template::render_str(src, &self.context(&ids, &trigger, scope)).map_err(|e| e.0)
    }

    /// The texts a template names: each referenced step's `text` keyed by its id (the run's
    /// input under `trigger`), for a person to see what a gate's question is about.
    fn referred(&self, src: &str, scope: &Scope) -> Map<String, Value> {
        let mut out = Map::new();
        let Ok(parsed) = template::parse(src) else { return out };
        let ids = self.plan.ids();
        let input = || view::input_view(&self.trigger.input).get("text").cloned();
        for r in parsed.refs() {
            let (key, text) = match r {
                template::Ref::Trigger { .. } => ("trigger", input()),
                template::Ref::Node { reference } => {
                    let Some((id, _)) = refs::resolve_longest(ids.iter().map(String::as_str), reference) else { continue };
                    let text = if Some(id) == self.plan.trigger_id() { input() } else { self.view_in(id, scope).and_then(|v| v.get("text")).cloned() };
                    (id, text)
                }
                _ => continue,
            };
            if let Some(t) = text {
                out.insert(key.to_string(), t);
            }
        }
        out
    }

    /// The parents' outputs an output node collects: id → text, for parents that ran.
    fn collected(&self, step: &PlanStep, scope: &Scope) -> Map<String, Value> {
        let mut out = Map::new();
        for p in &step.parents {
            let text = if Some(p.from.as_str()) == self.plan.trigger_id() {
                view::input_view(&self.trigger.input).get("text").cloned()
            } else {
                self.view_in(&p.from, scope).and_then(|v| v.get("text")).cloned()
            };
            if let Some(t) = text {
                out.insert(p.from.clone(), t);
            }
        }
        out
    }

    /// An output node's message: its template, else its parents' texts in plan order.
    fn collect_message(&self, step: &PlanStep, scope: &Scope) -> Result<String, String> {
        match step.node.get("template").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => self.render(t, scope),
            _ => {
                let collected = self.collected(step, scope);
                let mut parents: Vec<&String> = collected.keys().collect();
                parents.sort_by_key(|id| self.plan.position(id).unwrap_or(0));
                Ok(parents.iter().filter_map(|id| collected.get(*id).and_then(Value::as_str)).collect::<Vec<_>>().join("\n\n"))
            }
        }
    }

    /// Starts one ready, active step instance.
    fn begin(&mut self, step: &PlanStep, scope: &Scope, now: Ts) -> Begin {
        let inst = scope.instance(&step.id);
        let id = inst.as_str();
        let spec = match step.spec() {
            Ok(s) => s,
            Err(e) => {
                self.fail_step(id, &e, now);
                return Begin::Settled;
            }
        };
        let fail = |run: &mut Run, e: String| {
            run.fail_step(id, &e, now);
            Begin::Settled
        };
        let ids = self.plan.ids();
        let trigger = view::input_view(&self.trigger.input);
        match spec {
            Spec::Condition { expr: src } => {
                self.open_record(id, StepStatus::Running, now);
                match self.evaluate(&src, scope) {
                    Ok(b) => {
                        let mut extra = Map::new();
                        extra.insert("value".into(), Value::Bool(b));
                        self.finish_step(id, if b { "true" } else { "false" }, extra, now);
                        Begin::Settled
                    }
                    Err(e) => fail(self, e),
                }
            }
            Spec::Approval { question, options, timeout_minutes, on_timeout } => {
                self.open_record(id, StepStatus::AwaitingApproval, now);
                let question_src = question.clone();
                let deadline = match timeout_minutes.map(|m| time::add_seconds(now, m.saturating_mul(60))) {
                    None => None,
                    Some(Some(d)) => Some(d),
                    Some(None) => return fail(self, beyond_time("the gate's deadline")),
                };
                let question = match self.render(&question, scope) {
                    Ok(q) => q,
                    Err(e) => return fail(self, e),
                };
                let outputs = self.referred(&question_src, scope);
                self.parked.push(Pending::Approval { node: id.into(), question, options, deadline, on_timeout: on_timeout.as_str().into(), outputs });
                self.refresh_status();
                Begin::Settled
            }
            Spec::Wait { seconds } => {
                self.open_record(id, StepStatus::Waiting, now);
                let Some(resume_at) = time::add_seconds(now, seconds) else {
                    return fail(self, beyond_time("the wait's end"));
                };
                self.parked.push(Pending::Wait { node: id.into(), resume_at });
                self.refresh_status();
                Begin::Settled
            }
            Spec::Output { deliver, target, .. } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let message = match self.collect_message(step, scope) {
                    Ok(m) => m,
                    Err(e) => return fail(self, e),
                };
                let collected = self.collected(step, scope);
                match (deliver, target) {
                    (Some(d), Some(t)) => Begin::Task(Task {
                        node: id.into(),
                        attempt,
                        work: Work::Deliver { message, deliver: d.as_str().into(), target: t, collected },
                    }),
                    _ => {
                        let mut extra = Map::new();
                        extra.insert("collected".into(), Value::Object(collected));
                        extra.insert("deliveries".into(), json!([]));
                        self.finish_step(id, &message, extra, now);
                        Begin::Settled
                    }
                }
            }
            Spec::Agent { prompt, profile, model, max_tokens, timeout_seconds, .. } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                match self.render(&prompt, scope) {
                    Ok(prompt) => Begin::Task(Task { node: id.into(), attempt, work: Work::Agent { prompt, profile, model, max_tokens, timeout_seconds } }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Command { run, argv, cwd, env, timeout_seconds } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let ctx = self.context(&ids, &trigger, scope);
                let rendered = (|| -> Result<Work, String> {
                    let mut values = Vec::new();
                    let run = match run {
                        Some(r) => {
                            let script = template::parse(&r).map_err(|e| e.0).and_then(|t| shell::compile(&t).map_err(|e| e.0))?;
                            values = script.bind(&ctx)?;
                            Some(script.text)
                        }
                        None => None,
                    };
                    let argv = match argv {
                        Some(a) => Some(a.iter().map(|s| template::render_str(s, &ctx).map_err(|e| e.0)).collect::<Result<Vec<_>, _>>()?),
                        None => None,
                    };
                    let cwd = cwd.map(|c| template::render_str(&c, &ctx).map_err(|e| e.0)).transpose()?;
                    let env = env
                        .into_iter()
                        .map(|(k, v)| template::render_str(&v, &ctx).map(|v| (k, v)).map_err(|e| e.0))
                        .collect::<Result<BTreeMap<_, _>, _>>()?;
                    let env = env.into_iter().chain(values).collect();
                    Ok(Work::Command { run, argv, cwd, env, timeout_seconds })
                })();
                match rendered {
                    Ok(work) => Begin::Task(Task { node: id.into(), attempt, work }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Http { url, method, headers, body, timeout_seconds, accept } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let ctx = self.context(&ids, &trigger, scope);
                let rendered = (|| -> Result<Work, String> {
                    let url = template::render_str(&url, &ctx).map_err(|e| e.0)?;
                    let headers = headers
                        .into_iter()
                        .map(|(k, v)| template::render_str(&v, &ctx).map(|v| (k, v)).map_err(|e| e.0))
                        .collect::<Result<BTreeMap<_, _>, _>>()?;
                    let body = body.map(|b| template::render_json(&b, &ctx).map_err(|e| e.0)).transpose()?;
                    Ok(Work::Http { url, method, headers, body, timeout_seconds, accept })
                })();
                match rendered {
                    Ok(work) => Begin::Task(Task { node: id.into(), attempt, work }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Emit { event, payload } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let payload = match payload {
                    None => Ok(Value::Null),
                    Some(p) => template::render_json(&p, &self.context(&ids, &trigger, scope)).map_err(|e| e.0),
                };
                match payload {
                    Ok(payload) => Begin::Task(Task { node: id.into(), attempt, work: Work::Emit { event, payload } }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Loop { over, max_items, concurrency } => {
                self.open_record(id, StepStatus::Running, now);
                if scope.pass.is_some() {
                    return fail(self, "a loop inside a loop body is not supported".into());
                }
                if self.loops.contains_key(id) {
                    // A retried loop keeps the passes it finished.
                    return Begin::Settled;
                }
                let items = match self.render(&over, scope).and_then(|text| loop_items(&text, max_items)) {
                    Ok(items) => items,
                    Err(e) => return fail(self, e),
                };
                if items.is_empty() {
                    let mut extra = Map::new();
                    extra.insert("items".into(), json!([]));
                    extra.insert("count".into(), json!(0));
                    self.finish_step(id, "[]", extra, now);
                    return Begin::Settled;
                }
                self.loops.insert(id.to_string(), LoopState { items, concurrency, passes: Vec::new() });
                Begin::Settled
            }
            Spec::Trigger(_) | Spec::Note => {
                self.open_record(id, StepStatus::Running, now);
                fail(self, format!("a {} node never runs as a step", step.kind()))
            }
        }
    }

    /// Evaluates a condition against the outputs so far; failures are errors, never `false`.
    fn evaluate(&self, src: &str, scope: &Scope) -> Result<bool, String> {
        let e = expr::parse(src).map_err(|e| e.0)?;
        let ids = self.plan.ids();
        let Some((id, path)) = refs::resolve_longest(ids.iter().map(String::as_str), &e.reference) else {
            return Err(format!("condition names an unknown node: out.{}", e.reference));
        };
        let input_view;
        let view = if Some(id) == self.plan.trigger_id() {
            input_view = view::input_view(&self.trigger.input);
            &input_view
        } else {
            self.view_in(id, scope).ok_or_else(|| format!("condition reads {id:?}, which has no output (it was skipped)"))?
        };
        let left = view::view_lookup(view, &refs::split_path(path));
        e.evaluate(left.as_ref()).map_err(|e| format!("condition {src:?}: {}", e.0))
    }

    fn resume_due_wait(&mut self, now: Ts) -> Option<String> {
        let node = self.parked.iter().find_map(|p| match p {
            Pending::Wait { node, resume_at } if *resume_at <= now => Some(node.clone()),
            _ => None,
        })?;
        self.parked.retain(|p| p.node() != node);
        let mut extra = Map::new();
        extra.insert("resumed_at".into(), Value::String(time::format(&now)));
        self.finish_step(&node, "", extra, now);
        self.refresh_status();
        Some(node)
    }
}

#[allow(clippy::large_enum_variant)] // short-lived, one per step
enum Begin {
    Settled,
    Task(Task),
}

enum LoopProgress {
    /// A loop finished: all its passes are done.
    Finished(String),
    Changed,
    Same,
}
