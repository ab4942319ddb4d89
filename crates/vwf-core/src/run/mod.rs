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
//! This file holds the run file (`Run` and its accessors) and what the engine hands out and takes
//! in (tasks, outcomes, answers); [`record`] holds the parts of the record (statuses, steps,
//! tries, pending), [`engine`] the engine's public calls, [`loops`] scopes and passes, [`step`]
//! what one step does.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::design::NodeKind;
use crate::expr;
use crate::limits;
use crate::names::{DesignName, NodeId, PassId, RunId, StepPath};
use crate::plan::{Plan, PlanStep};
use crate::recovery::Cause;
use crate::refs;
use crate::secrets::Secrets;
use crate::shell;
use crate::spec::{CommandStep, Deliver, EventTimeout, HttpStep, OnTimeout, Program, Spec};
use crate::template::{self, Context};
use crate::time::{self, Ts};
use crate::trigger::TriggerMode;
use crate::view;
use crate::vocab::Route;

mod answer;
mod children;
mod ended;
mod engine;
mod failure;
pub mod inputs;
pub mod journal;
mod loops;
mod record;
mod recover;
pub use recover::FAILURE_RUN_REFUSED;
pub mod settle;
mod step;

use loops::{LoopProgress, Scope, beyond_time, loop_items};
use record::is_false;
use step::Begin;

pub use answer::{EDITED, Notice, Reply, VOTED};
pub use children::ChildStart;
pub use failure::{
    APPROVAL_TIMED_OUT, APPROVAL_TIMED_OUT_ESCALATED, COST_BUDGET_EXCEEDED, ESCALATION_REQUESTED, RUN_TIMED_OUT, RunFailure, StepError,
    TOKEN_BUDGET_EXCEEDED,
};
pub use record::{Delivery, Handled, HistoryEvent, Pending, Status, StepRecord, StepStatus, TriggerInfo, Try};
/// Why an attempt still in progress when its run failed ended (a retry starts it again).
pub const UNFINISHED_WHEN_THE_RUN_FAILED: &str = "not finished when the run failed";

/// The run file. Its first fields are the run result of SPEC §8; `tokens_used`, `parked`,
/// `history` and `plan` are the file's additions.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(description = "The run result (SPEC §8)."))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    ok: bool,
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
    run_id: RunId,
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::design_name_schema"))]
    design: DesignName,
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
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    error: Option<RunFailure>,
    failed_node: Option<PassId>,
    /// Steps that failed for good and whose failure the design handled (an `error` edge, or
    /// `on_error: "continue"`), in the order they failed. Absent from files of runs that handled
    /// none; the run result always has it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    handled: Vec<Handled>,
    steps: Vec<StepRecord>,
    trigger: TriggerInfo,
    /// The run this one retries from the start (with the design as saved when it started);
    /// absent on other runs, so files written before it existed read back byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
    retry_of: Option<String>,
    /// The run of the design's `on_failure` this run's failure started; absent until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
    failure_run: Option<RunId>,
    /// The failed run whose failure started this one (its trigger mode is `failure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
    failure_of: Option<RunId>,
    /// The run whose design step started this one (its trigger mode is `parent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
    parent_run: Option<RunId>,
    /// The runs this run's design steps started, oldest first. Absent from files of runs that
    /// started none; the run result always has it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<String>"))]
    child_runs: Vec<RunId>,
    /// A test run (see [`crate::pins`]): pinned steps gave their pins, and it may run only part
    /// of the design. Absent from other runs' files; the run result always has it.
    #[serde(default, skip_serializing_if = "is_false")]
    test: bool,
    /// The key value its design's `concurrency` gave the run (`""` for a design with no key);
    /// absent for a design without `concurrency`, and from a test run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    concurrency_key: Option<String>,
    /// When the run fails if it has not ended (its design's `timeout` after its start); absent
    /// for a design with none.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
    timeout_at: Option<Ts>,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    created_at: Ts,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    updated_at: Ts,
    // The file's additions (`FILE_ONLY_FIELDS`): not part of the run result, nor of its schema.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    tokens_used: u64,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    parked: Vec<Pending>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    history: Vec<HistoryEvent>,
    /// Loops in progress or finished: their items and the state of each pass.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "schema", schemars(skip))]
    loops: BTreeMap<NodeId, LoopState>,
    #[cfg_attr(feature = "schema", schemars(skip))]
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
    pub fn design(&self) -> &DesignName {
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
    pub fn error(&self) -> Option<&RunFailure> {
        self.error.as_ref()
    }
    pub fn failed_node(&self) -> Option<&PassId> {
        self.failed_node.as_ref()
    }
    /// Steps whose failure the design handled, in the order they failed.
    pub fn handled(&self) -> &[Handled] {
        &self.handled
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
    /// The run this run's failure started (see [`Run::start_failure_of`]).
    pub fn failure_run(&self) -> Option<&RunId> {
        self.failure_run.as_ref()
    }
    /// The failed run that started this one.
    pub fn failure_of(&self) -> Option<&RunId> {
        self.failure_of.as_ref()
    }
    /// When the run fails if it has not ended (its design's `timeout`).
    /// See the field: the run's concurrency key value, when its design limits its runs.
    pub fn concurrency_key(&self) -> Option<&str> {
        self.concurrency_key.as_deref()
    }

    /// Records the key value the design's `concurrency` gave this new run.
    pub fn set_concurrency_key(&mut self, key: String) {
        self.concurrency_key = Some(key);
    }

    /// The scope of the run's concurrency slots (see [`crate::concurrency::scope`]).
    pub fn concurrency_scope(&self) -> Option<String> {
        self.concurrency_key.as_deref().map(|k| crate::concurrency::scope(self.design.as_str(), k))
    }

    /// A run whose design's slots are full waits, `queued`, for one: a new run before its first
    /// step, a run that gave its slot back while parked (`release_while_waiting`) before it goes
    /// on. Nothing advances it until [`Run::leave_queue`].
    pub fn hold_queued(&mut self, now: Ts) {
        if !self.status.is_finished() && self.status != Status::Queued {
            self.status = Status::Queued;
            self.touch(now);
        }
    }

    /// A queued run was given its slot: it goes on (a run that had not started runs from now,
    /// its `timeout` counting from now).
    pub fn leave_queue(&mut self, now: Ts) {
        if self.status == Status::Queued {
            if self.steps.is_empty() {
                self.timeout_at = self.plan.timeout_seconds.and_then(|s| time::add_seconds(now, s));
            }
            self.status = Status::Running;
            self.touch(now);
        }
    }

    pub fn timeout_at(&self) -> Option<Ts> {
        self.timeout_at
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

/// The run result of a run file's document: its additions removed, the fields a file leaves out
/// when they hold their default (`version`, `test`, `handled`, `child_runs`) put in, and the
/// totals of what its model calls used and cost (`usage`, `cost`, `currency`).
pub fn result_of_document(mut doc: Value) -> Value {
    let totals = crate::usage::Totals::of_document(&doc);
    if let Some(obj) = doc.as_object_mut() {
        // What its model calls used and cost (see `crate::usage`), from its steps' views.
        for (k, v) in totals.fields() {
            obj.insert(k.into(), v);
        }
        for k in FILE_ONLY_FIELDS {
            obj.remove(k);
        }
        obj.entry("version").or_insert(Value::Null);
        obj.entry("test").or_insert(Value::Bool(false));
        obj.entry("handled").or_insert(Value::Array(Vec::new()));
        obj.entry("child_runs").or_insert(Value::Array(Vec::new()));
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
    pub node: PassId,
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
        /// Saved designs the model may call as tools; the runner runs each call as a child run.
        tools: Vec<DesignName>,
    },
    Deliver {
        message: String,
        deliver: Deliver,
        target: String,
        collected: Map<String, Value>,
        timeout_seconds: u64,
    },
    /// A shell program reads its template values from `env` (see `shell`); `argv` items are
    /// rendered plainly.
    Command(CommandStep),
    Http(HttpStep),
    /// Starts the runs the event starts; `timeout_seconds` bounds how long starting them may take.
    Emit {
        event: String,
        payload: Value,
        timeout_seconds: u64,
    },
}

/// What a driver reports for a task.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The step produced `text`; `extra` holds its type-specific view fields; `tokens` counts
    /// against the budget (agents).
    Done { text: String, extra: Map<String, Value>, tokens: u64 },
    /// A delivery attempt, successful or not.
    Delivered(Delivery),
    /// The attempt failed; `cause` says how, for the step's retry policy and its error view.
    Failed { error: String, cause: Cause },
    /// No agent backend: park the step for a person or a host agent.
    ParkAgent,
}

impl Outcome {
    /// A failure with no more to say about its cause.
    pub fn failed(error: impl Into<String>) -> Outcome {
        Outcome::Failed { error: error.into(), cause: Cause::Error }
    }
}

/// What `advance` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Advance {
    /// One step was settled (or parked) by the core: persist and call again.
    Settled(Option<PassId>),
    /// These steps are now running: persist, perform them, `complete` each.
    Tasks(Vec<Task>),
    /// Nothing more to do now: the run is finished or parked (or waits for running tasks).
    Idle,
}

/// An answer to a parked step.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// A gate's answer.
    Answer(Reply),
    /// An agent step's text.
    Output(String),
    /// An agent step performed through the backend on request: its text, the view fields the
    /// backend gave (the model, its usage and cost), and its tokens.
    Generated { text: String, extra: Map<String, Value>, tokens: u64 },
}

/// The text a `wait_event` step's event gives as the step's output: a text payload as it is,
/// anything else as compact JSON, no payload as nothing.
fn payload_text(payload: &Value) -> String {
    match payload {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
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
    /// The one asking may not do this (HTTP 403): someone a gate does not allow.
    #[error("{0}")]
    Forbidden(String),
}
