//! The parts of a run's record: the run's and each step's status, a step's record and its
//! attempts, what a parked run waits for, deliveries, the trigger and the history.
//!
//! Invariant: a [`StepRecord`] changes only through its methods here, so the record and its latest
//! try always agree: every attempt adds one try (`tries.len() == attempts`, except in run files
//! written before tries were kept), and nothing erases one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::names::{DesignName, PassId, RunId, StepPath};
use crate::spec::{EventTimeout, OnTimeout};
use crate::time::{self, Ts};
use crate::trigger::TriggerMode;

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waiting for a slot of its design's `concurrency`: no step has started.
    Queued,
    Running,
    Waiting,
    AwaitingApproval,
    AwaitingAgent,
    // A `wait_event` step waits for its event.
    AwaitingEvent,
    // A design step waits for the run it started to end.
    AwaitingChild,
    Done,
    Failed,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::AwaitingApproval => "awaiting_approval",
            Status::AwaitingAgent => "awaiting_agent",
            Status::AwaitingEvent => "awaiting_event",
            Status::AwaitingChild => "awaiting_child",
            Status::Done => "done",
            Status::Failed => "failed",
        }
    }
    pub fn is_finished(&self) -> bool {
        matches!(self, Status::Done | Status::Failed)
    }
    pub fn is_parked(&self) -> bool {
        matches!(self, Status::Waiting | Status::AwaitingApproval | Status::AwaitingAgent | Status::AwaitingEvent | Status::AwaitingChild)
    }
}

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    AwaitingEvent,
    AwaitingChild,
}

/// A step's record in the run: its latest attempt (`status`, `started_at`, `finished_at`,
/// `error`), how many attempts it took, and every attempt in `tries`. Agent retries and run
/// retries both add attempts; nothing erases one. Changed only through the methods below, so the
/// record and its last try always agree.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub node: PassId,
    pub status: StepStatus,
    pub attempts: u32,
    /// When the latest attempt started.
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub started_at: Ts,
    #[serde(with = "time::opt")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
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
    /// (see [`inputs`](super::inputs)); absent for steps the core settles alone (conditions,
    /// gates, waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "super::inputs::schema"))]
    pub inputs: Option<Value>,
    /// The latest attempt settled with the step's pinned output (a test run): nothing ran.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pinned: bool,
}

/// One attempt of a step.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Try {
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The attempt's state: `done` or `failed` once it ended, else where it is now.
    pub status: StepStatus,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub started_at: Ts,
    #[serde(with = "time::opt")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
    pub finished_at: Option<Ts>,
    pub error: Option<String>,
    /// Bytes of the text the attempt produced (null until it is done).
    pub output_bytes: Option<u64>,
    /// For a failed attempt its retry policy follows with another: how long the run waited
    /// before that one, in milliseconds. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

impl StepRecord {
    pub(super) fn open(node: &PassId, status: StepStatus, now: Ts) -> StepRecord {
        let mut r = StepRecord {
            node: node.clone(),
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
    pub(super) fn begin_try(&mut self, status: StepStatus, now: Ts) -> u32 {
        self.attempts += 1;
        self.status = status;
        self.started_at = now;
        self.finished_at = None;
        self.error = None;
        self.tries.push(Try {
            attempt: self.attempts,
            status,
            started_at: now,
            finished_at: None,
            error: None,
            output_bytes: None,
            delay_ms: None,
        });
        self.attempts
    }

    /// The attempt in progress moves on without ending (parked, resumed).
    pub(super) fn set_status(&mut self, status: StepStatus) {
        self.status = status;
        if let Some(t) = self.open_try() {
            t.status = status;
        }
    }

    /// Ends the attempt in progress: done with `output_bytes`, or failed with `error`.
    pub(super) fn end_try(&mut self, status: StepStatus, error: Option<&str>, output_bytes: Option<u64>, now: Ts) {
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
    pub(super) fn await_next_try(&mut self, error: &str, now: Ts) {
        if self.open_try().is_some() {
            self.end_try(StepStatus::Failed, Some(error), None, now);
        }
        self.failures.push(error.to_string());
        self.status = StepStatus::Retrying;
        self.finished_at = None;
        self.error = None;
    }

    /// The failed attempt's policy waits `delay_ms` before the next one: the step waits.
    pub(super) fn wait_before_next_try(&mut self, delay_ms: u64) {
        if let Some(t) = self.tries.last_mut() {
            t.delay_ms = Some(delay_ms);
        }
        self.status = StepStatus::Waiting;
    }

    /// The attempt just begun is taken back before anything was saved of it (its rate limit had
    /// no room): the step waits to begin it again.
    pub(super) fn take_back_try(&mut self) {
        if self.tries.last().is_some_and(|t| t.finished_at.is_none()) {
            self.tries.pop();
            self.attempts = self.attempts.saturating_sub(1);
        }
        self.status = StepStatus::Waiting;
    }

    /// The wait before the next attempt is over: the step is ready to start it.
    pub(super) fn next_try_due(&mut self) {
        self.status = StepStatus::Retrying;
    }

    fn open_try(&mut self) -> Option<&mut Try> {
        self.tries.last_mut().filter(|t| t.finished_at.is_none())
    }
}

/// What a parked run waits for.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
// A run parks on a handful of these at a time; a gate's declaration inline is simpler to read
// and to serialise than a box, and the bytes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Pending {
    Approval {
        node: StepPath,
        question: String,
        options: Vec<String>,
        #[serde(with = "time::opt")]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
        deadline: Option<Ts>,
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        on_timeout: OnTimeout,
        /// What is being approved: the text of each step (or of the run's input, `trigger`) the
        /// question's template names, keyed by id.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        outputs: Map<String, Value>,
        /// The form the answer fills in, as the gate declares it (`[{name, type, label, required,
        /// options, default, max_length}]`); absent when it asks for none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fields: Vec<Value>,
        /// The text of each earlier step the person may change (the gate's `edit`), keyed by id;
        /// absent when it lets none be changed.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        edit: Map<String, Value>,
        /// Who answers, as the gate declares it; absent: the first answer decides.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approvers: Option<crate::approvers::Approvers>,
        /// The answers counted so far towards `approvers.required`, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        votes: Vec<crate::approvers::Vote>,
        /// Where the question goes (`telegram:<chat>`, `slack:<channel>`, `webhook:<name>`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notify: Vec<String>,
        /// The context the notifications show, rendered when the gate opened; absent without
        /// `notify`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        /// Whether the notifications were sent (each recorded under the run's `deliveries`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        notified: bool,
        /// The run that asks, when it is a run a design step started (see [`Pending::Child`]):
        /// `node` is then `<design step>/<its node>`, and answering it through this run answers
        /// that run. Absent for a run's own gate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
        run_id: Option<RunId>,
    },
    Agent {
        node: StepPath,
        prompt: String,
        profile: Option<String>,
        model: Option<String>,
        /// As for an approval: the run that waits, when it is a run a design step started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
        run_id: Option<RunId>,
    },
    /// A timed wait: a wait step, or the pause a retry policy makes before a step's next
    /// attempt (`next_attempt` is that attempt's number; absent for a wait step).
    Wait {
        node: StepPath,
        #[serde(with = "time")]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
        resume_at: Ts,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_attempt: Option<u32>,
        /// The rate limit the step waits for room in (`[limits."<name>"]`); absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate_limit: Option<String>,
    },
    /// A `wait_event` step: the run goes on when an event named `event` whose payload satisfies
    /// `match` arrives (any such event when there is no match), or fails (or goes on with no
    /// payload) at `deadline`.
    Event {
        node: StepPath,
        event: String,
        /// The match with its templates rendered when the step began
        /// (`event.payload.pr == 42`); absent when any event of the name will do.
        #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
        matches: Option<String>,
        #[serde(with = "time::opt")]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
        deadline: Option<Ts>,
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        on_timeout: EventTimeout,
        /// When the step began waiting: runs waiting on one event are answered in this order.
        #[serde(with = "time")]
        #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
        since: Ts,
    },
    /// A design step: the run it starts (`run_id`, derived from this run's id, the step and the
    /// attempt, so every process means the same run) of `design` with `input`. Until `started`,
    /// the run is still to be made; once made, a step that does not `wait` is done, one that
    /// waits waits here until the run ends. `waiting` is what the started run waits for (its
    /// gates and agent steps, with `node` as `<this step>/<its node>`), answerable through this run.
    Child {
        node: StepPath,
        #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::run_id_schema"))]
        run_id: RunId,
        #[cfg_attr(feature = "schema", schemars(schema_with = "crate::names::design_name_schema"))]
        design: DesignName,
        /// The version it runs: the step's `version`, else the one this run's plan pinned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u64>,
        input: Value,
        wait: bool,
        started: bool,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        waiting: Vec<Pending>,
    },
}

impl Pending {
    /// The run's own step this waits in; `None` for a question of a run a design step started.
    pub fn step(&self) -> Option<&PassId> {
        self.node().own()
    }
    pub fn node(&self) -> &StepPath {
        match self {
            Pending::Approval { node, .. }
            | Pending::Agent { node, .. }
            | Pending::Wait { node, .. }
            | Pending::Event { node, .. }
            | Pending::Child { node, .. } => node,
        }
    }
    /// Whether this is a wait for `event` whose match `payload` satisfies (any payload when it
    /// has no match). A match that cannot be evaluated against the payload (a missing path, a
    /// type that does not compare) is not satisfied.
    pub fn hears(&self, event: &str, payload: &Value) -> bool {
        let Pending::Event { event: name, matches, .. } = self else { return false };
        if name != event {
            return false;
        }
        let Some(m) = matches else { return true };
        let root = serde_json::json!({ "payload": payload });
        crate::expr::parse_event_match(m, false)
            .and_then(|e| e.evaluate(crate::refs::lookup(&root, &crate::refs::split_path(&e.reference))))
            .unwrap_or(false)
    }

    /// When a wait for an event began (`None` for anything else).
    pub fn since(&self) -> Option<Ts> {
        match self {
            Pending::Event { since, .. } => Some(*since),
            _ => None,
        }
    }

    pub(super) fn status(&self) -> Status {
        match self {
            Pending::Approval { .. } => Status::AwaitingApproval,
            Pending::Agent { .. } => Status::AwaitingAgent,
            Pending::Wait { .. } => Status::Waiting,
            Pending::Event { .. } => Status::AwaitingEvent,
            Pending::Child { .. } => Status::AwaitingChild,
        }
    }
}

/// A step that failed for good whose failure the design handled.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handled {
    /// The step's record name (`node`, or `node#pass` inside a loop).
    pub node: PassId,
    pub error: String,
}

/// One delivery attempt with the platform's real answer.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub node: String,
    pub target: String,
    pub ok: bool,
    pub detail: String,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub at: Ts,
}

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerInfo {
    pub mode: TriggerMode,
    pub input: Value,
    /// How many emits led to this run (0 for a run not started by an event).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u32,
    /// Where the chain of emits that started this run began: the id of the run whose emit began
    /// it, or of the event (`POST /events`, `vwf emit`) that did. Absent on runs no event started.
    /// `[limits] runs_per_origin` caps the runs one origin starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// How many design steps led to this run (0 for a run no design step started); at most
    /// [`crate::limits::DESIGN_DEPTH`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nesting: u32,
    /// How many arrivals a trigger's `debounce` folded into this run (it starts with the last
    /// one's input); absent when none did.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub folded: u64,
    /// The OpenTelemetry trace the run's spans go in: a caller's `traceparent`, the parent run's
    /// for a child, or one drawn at the start when traces are on. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::trace::lenient")]
    pub trace: Option<crate::trace::TraceContext>,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

impl TriggerInfo {
    pub fn new(mode: TriggerMode, input: Value) -> TriggerInfo {
        TriggerInfo { mode, input, depth: 0, origin: None, nesting: 0, folded: 0, trace: None }
    }
}

/// An entry of the run file's history: retries, escalations, budget use.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEvent {
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub at: Ts,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}
