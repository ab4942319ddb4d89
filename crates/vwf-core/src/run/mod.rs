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
//!
//! This file holds the record (statuses, steps, tries, pending, the run file) and the engine's
//! public calls; [`loops`] holds scopes and passes, [`step`] what one step does.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::design::NodeKind;
use crate::expr;
use crate::limits;
use crate::names::RunId;
use crate::plan::{Plan, PlanStep};
use crate::refs;
use crate::secrets::Secrets;
use crate::shell;
use crate::spec::{CommandStep, Deliver, HttpStep, OnTimeout, Program, Spec};
use crate::template::{self, Context};
use crate::time::{self, Ts};
use crate::view;
use crate::vocab::Route;

mod failure;
pub mod inputs;
pub mod journal;
mod loops;
pub mod settle;
mod step;

use loops::{LoopProgress, Scope, beyond_time, loop_items, split_instance};
use step::Begin;

pub use failure::{APPROVAL_TIMED_OUT, APPROVAL_TIMED_OUT_ESCALATED, ESCALATION_REQUESTED, Failure, StepError, TOKEN_BUDGET_EXCEEDED};
/// Why an attempt still in progress when its run failed ended (a retry starts it again).
pub const UNFINISHED_WHEN_THE_RUN_FAILED: &str = "not finished when the run failed";

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
    /// What the latest attempt received: the rendered inputs of its task, secrets redacted
    /// (see [`inputs`]); absent for steps the core settles alone (conditions, gates, waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Value>,
    /// The latest attempt settled with the step's pinned output (a test run): nothing ran.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pinned: bool,
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
            inputs: None,
            pinned: false,
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
        on_timeout: OnTimeout,
        /// What is being approved: the text of each step (or of the run's input, `trigger`) the
        /// question's template names, keyed by id.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        outputs: Map<String, Value>,
    },
    Agent {
        node: String,
        prompt: String,
        profile: Option<String>,
        model: Option<String>,
    },
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
    /// Where the chain of emits that started this run began: the id of the run whose emit began
    /// it, or of the event (`POST /events`, `vwf emit`) that did. Absent on runs no event started.
    /// `[limits] runs_per_origin` caps the runs one origin starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TriggerInfo {
    pub fn new(mode: &str, input: Value) -> TriggerInfo {
        TriggerInfo { mode: mode.to_string(), input, depth: 0, origin: None }
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
    ok: bool,
    run_id: RunId,
    design: String,
    /// The design version the run ran (`null` for a run of unrecorded content, or an old file).
    /// Absent from the file when unknown, so files from before versions read back unchanged;
    /// the run result always has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
    status: Status,
    pending: Option<Pending>,
    outputs: BTreeMap<String, Value>,
    skipped: Vec<String>,
    deliveries: Vec<Delivery>,
    /// Why the run failed, stored as its text.
    error: Option<Failure>,
    failed_node: Option<String>,
    steps: Vec<StepRecord>,
    trigger: TriggerInfo,
    /// The run this one retries from the start (with the design as saved when it started);
    /// absent on other runs, so files written before it existed read back byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_of: Option<String>,
    /// A test run (see [`crate::pins`]): pinned steps gave their pins, and it may run only part
    /// of the design. Absent from other runs' files; the run result always has it.
    #[serde(default, skip_serializing_if = "is_false")]
    test: bool,
    #[serde(with = "time")]
    created_at: Ts,
    #[serde(with = "time")]
    updated_at: Ts,
    #[serde(default)]
    tokens_used: u64,
    #[serde(default)]
    parked: Vec<Pending>,
    #[serde(default)]
    history: Vec<HistoryEvent>,
    /// Loops in progress or finished: their items and the state of each pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    loops: BTreeMap<String, LoopState>,
    plan: Plan,
    /// Parts changed since the last save (see [`journal`]); not part of the document.
    #[serde(skip)]
    dirty: journal::Dirty,
    /// Where each loop's first pass not yet done is (see [`loops::FirstOpen`]); not part of the
    /// document.
    #[serde(skip)]
    first_open: loops::FirstOpen,
}

/// Read access to a run's state. The fields are private to the engine (this module and its
/// files), so only the engine's calls (`start`, `advance`, `complete`, `respond`, `retry`, ...)
/// change a run: no caller, in the core or outside it, can put a run in a state the engine could
/// not reach. Everything else reads through these accessors.
impl Run {
    pub fn ok(&self) -> bool {
        self.ok
    }
    pub fn version(&self) -> Option<u64> {
        self.version
    }
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }
    pub fn design(&self) -> &str {
        &self.design
    }
    pub fn status(&self) -> Status {
        self.status
    }
    /// What the run waits for first, when it is parked.
    pub fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref()
    }
    /// Step outputs by node id.
    pub fn outputs(&self) -> &BTreeMap<String, Value> {
        &self.outputs
    }
    /// Steps skipped, in plan order.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }
    pub fn deliveries(&self) -> &[Delivery] {
        &self.deliveries
    }
    /// Why the run failed.
    pub fn error(&self) -> Option<&Failure> {
        self.error.as_ref()
    }
    pub fn failed_node(&self) -> Option<&str> {
        self.failed_node.as_deref()
    }
    /// Step records, in plan order.
    pub fn steps(&self) -> &[StepRecord] {
        &self.steps
    }
    pub fn trigger(&self) -> &TriggerInfo {
        &self.trigger
    }
    /// The run this one retries from the start, if it is such a retry.
    pub fn retry_of(&self) -> Option<&str> {
        self.retry_of.as_deref()
    }
    /// Whether this is a test run (pins used, perhaps part of the design).
    pub fn test(&self) -> bool {
        self.test
    }
    pub fn created_at(&self) -> Ts {
        self.created_at
    }
    pub fn updated_at(&self) -> Ts {
        self.updated_at
    }
    pub fn tokens_used(&self) -> u64 {
        self.tokens_used
    }
    /// Everything the run waits for while parked (`pending` is the first of these).
    pub fn parked(&self) -> &[Pending] {
        &self.parked
    }
    pub fn history(&self) -> &[HistoryEvent] {
        &self.history
    }
    /// The plan the run started with.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

/// Fields of the run file that are not part of the run result.
pub const FILE_ONLY_FIELDS: [&str; 5] = ["tokens_used", "parked", "history", "loops", "plan"];

/// The run result of a run file's document: its additions removed, and the fields a file leaves
/// out when they hold their default (`version`, `test`) put in.
pub fn result_of_document(mut doc: Value) -> Value {
    if let Some(obj) = doc.as_object_mut() {
        for k in FILE_ONLY_FIELDS {
            obj.remove(k);
        }
        obj.entry("version").or_insert(Value::Null);
        obj.entry("test").or_insert(Value::Bool(false));
    }
    doc
}

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

/// Work for a driver.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub node: String,
    pub attempt: u32,
    pub work: Work,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    Agent {
        prompt: String,
        profile: Option<String>,
        model: Option<String>,
        max_tokens: Option<u64>,
        timeout_seconds: u64,
    },
    Deliver {
        message: String,
        deliver: Deliver,
        target: String,
        collected: Map<String, Value>,
    },
    /// A shell program reads its template values from `env` (see `shell`); `argv` items are
    /// rendered plainly.
    Command(CommandStep),
    Http(HttpStep),
    Emit {
        event: String,
        payload: Value,
    },
}

/// What a driver reports for a task.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The step produced `text`; `extra` holds its type-specific view fields; `tokens` counts
    /// against the budget (agents).
    Done {
        text: String,
        extra: Map<String, Value>,
        tokens: u64,
    },
    /// A delivery attempt, successful or not.
    Delivered(Delivery),
    Failed {
        error: String,
    },
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
            steps: Vec::new(),
            trigger,
            retry_of: None,
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
    pub fn plan_step(&self, node: &str) -> Option<&PlanStep> {
        self.plan.step(split_instance(node).0)
    }

    pub fn record(&self, node: &str) -> Option<&StepRecord> {
        self.record_index(node).map(|i| &self.steps[i])
    }

    /// Where the record `node` is in `steps`. Records are kept sorted by [`Run::order_key`], so
    /// this is a binary search: a step of a long loop costs the same at pass 10,000 as at pass 1.
    /// A name the plan does not know sorts last with every other such name, so it is looked for
    /// one by one among those.
    fn record_index(&self, node: &str) -> Option<usize> {
        let key = self.order_key(node);
        let first = self.steps.partition_point(|r| self.order_key(&r.node) < key);
        if key.0 == usize::MAX {
            return self.steps[first..].iter().position(|r| r.node == node).map(|i| first + i);
        }
        self.steps.get(first).filter(|r| r.node == node).map(|_| first)
    }

    /// A step record to change; marks it changed.
    fn record_mut(&mut self, node: &str) -> Option<&mut StepRecord> {
        let i = self.record_index(node)?;
        self.mark(journal::Part::Step(node.to_string()));
        self.steps.get_mut(i)
    }

    /// Adds an event to the history.
    fn log(&mut self, event: HistoryEvent) {
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
                match self.begin(&step, &scope, now, secrets) {
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
            return Advance::Settled(node);
        }
        self.refresh_status();
        Advance::Idle
    }

    /// A driver's report for a running step.
    pub fn complete(&mut self, node: &str, outcome: Outcome, now: Ts) -> Result<(), EngineError> {
        let (step, scope) =
            self.locate(node).ok_or_else(|| EngineError::UnknownNode(format!("run {} has no node {node:?}", self.run_id)))?;
        match self.record(node).map(|r| r.status) {
            Some(StepStatus::Running) => {}
            _ => return Err(EngineError::Conflict(format!("step {node:?} is not running"))),
        }
        match outcome {
            Outcome::Done { text, extra, tokens } => {
                if step.is(NodeKind::Agent) && tokens > 0 {
                    self.tokens_used = self.tokens_used.saturating_add(tokens);
                    if let Some(budget) = self.plan.budget_tokens.filter(|b| self.tokens_used > *b) {
                        self.log(HistoryEvent {
                            at: now,
                            event: TOKEN_BUDGET_EXCEEDED.into(),
                            node: Some(node.into()),
                            detail: json!({"used": self.tokens_used, "budget": budget}),
                        });
                        self.fail_step(node, Failure::TokenBudgetExceeded, now);
                        return Ok(());
                    }
                }
                self.finish_step(node, &text, extra, now);
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
    pub fn respond(&mut self, node: &str, response: Response, now: Ts) -> Result<(), EngineError> {
        self.enforce_deadlines(now);
        if self.locate(node).is_none() {
            return Err(EngineError::UnknownNode(format!("run {} has no node {node:?}", self.run_id)));
        }
        if self.status == Status::Failed
            && self.failed_node.as_deref() == Some(node)
            && self.error.as_ref().is_some_and(Failure::is_approval_timeout)
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
            .filter(|r| {
                Some(&r.node) == failed.as_ref() || matches!(r.status, StepStatus::Running | StepStatus::Retrying | StepStatus::Failed)
            })
            .cloned()
            .collect();
        // Reopening touches many records: the next save is a whole one.
        self.mark_whole();
        self.log(HistoryEvent {
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
            Pending::Approval { node, deadline: Some(d), on_timeout, .. } if *d <= now => Some((node.clone(), *on_timeout)),
            _ => None,
        });
        let Some((node, on_timeout)) = expired else { return false };
        let error = if on_timeout == OnTimeout::Escalate {
            self.log(HistoryEvent { at: now, event: ESCALATION_REQUESTED.into(), node: Some(node.clone()), detail: Value::Null });
            Failure::ApprovalTimedOutEscalated
        } else {
            Failure::ApprovalTimedOut
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
        let is_loop = |r: &StepRecord| self.locate(&r.node).is_some_and(|(s, _)| s.is(NodeKind::Loop));
        let node = self
            .steps
            .iter()
            .find(|r| r.status == StepStatus::Running && !is_loop(r))
            .or_else(|| self.steps.iter().find(|r| r.status == StepStatus::Running))
            .map(|r| r.node.clone())
            .or_else(|| (0..self.plan.steps.len()).find(|&i| self.is_ready(i)).map(|i| self.plan.steps[i].id.clone()));
        let error = match (&node, cause) {
            (node, None) => Failure::interrupted(node.as_deref()),
            (Some(n), Some(cause)) => Failure::from(format!("the run could not be saved during step {n}: {cause}")),
            (None, Some(cause)) => Failure::from(format!("the run could not be saved: {cause}")),
        };
        if let Some(r) = node.as_deref().and_then(|n| self.record_mut(n)) {
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
}
