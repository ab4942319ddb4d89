//! What requests carry: the JSON bodies of the API's routes and the arguments of the agent tools,
//! each a type that both parses the request ([`super::parse`]) and describes it (its JSON Schema,
//! in the OpenAPI document and the tools' listings).
//!
//! A tool's arguments are a route's body plus what the route has in its path (a design's name, a
//! run's id): [`Both`] reads the two from one object.

use std::borrow::Cow;

use schemars::generate::SchemaGenerator;
use schemars::{JsonSchema, Schema, json_schema};
use serde::de::{Error as _, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use vwf_core::names::{DesignName, RunId, StepPath};
use vwf_core::pins;
use vwf_core::run::{Reply, Response};
use vwf_core::schedule::time_zone_names;
use vwf_runtime::runner::Answer;

use super::{Both, object, object_schema};
use crate::failure::Failure;
use crate::keys::IdempotencyKey;
use crate::service::{PinSource, Start};

/// The rule of a design's name, as the tools describe it.
pub const NAME_RULE: &str = "Design name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters.";

/// The most runs one listing answers (`GET /runs?limit=`, `workflow_runs_list`), and how many
/// when the request does not say.
pub const RUNS_MAX: usize = 1000;
pub const RUNS_DEFAULT: usize = 20;

// ---- values ----

/// A design's name, read by the core's rule (its error says what is wrong with it).
#[derive(Debug, Clone, PartialEq)]
pub struct Name(pub DesignName);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        DesignName::parse(&text).map(Name).map_err(D::Error::custom)
    }
}

impl JsonSchema for Name {
    fn schema_name() -> Cow<'static, str> {
        "DesignName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": DesignName::PATTERN, "description": NAME_RULE})
    }
}

/// The schema of a run id.
fn run_id(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "pattern": RunId::PATTERN, "description": "The run id: 12 lowercase hex characters."})
}

/// A design version's number: a whole number from 1 (also written with a zero fraction, `3.0`,
/// which JSON Schema counts as an integer), at most `u64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionNumber(pub u64);

const VERSION_RULE: &str = "must be a version number (a whole number from 1)";

impl<'de> Deserialize<'de> for VersionNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Number;
        impl Visitor<'_> for Number {
            type Value = VersionNumber;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a version number (a whole number from 1)")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<VersionNumber, E> {
                if n >= 1 { Ok(VersionNumber(n)) } else { Err(E::custom(VERSION_RULE)) }
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<VersionNumber, E> {
                u64::try_from(n).map_err(|_| E::custom(VERSION_RULE)).and_then(|n| self.visit_u64(n))
            }
            fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<VersionNumber, E> {
                // 2^64: the first float above u64::MAX.
                if f.fract() == 0.0 && (1.0..18_446_744_073_709_551_616.0).contains(&f) {
                    Ok(VersionNumber(f as u64))
                } else {
                    Err(E::custom(VERSION_RULE))
                }
            }
        }
        deserializer.deserialize_any(Number)
    }
}

impl JsonSchema for VersionNumber {
    fn schema_name() -> Cow<'static, str> {
        "VersionNumber".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": u64::MAX})
    }
}

/// How many runs a listing answers: 1 to [`RUNS_MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(pub usize);

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        value
            .as_u64()
            .filter(|n| (1..=RUNS_MAX as u64).contains(n))
            .map(|n| Limit(n as usize))
            .ok_or_else(|| D::Error::custom(format!("must be a whole number from 1 to {RUNS_MAX}, not {value}")))
    }
}

impl JsonSchema for Limit {
    fn schema_name() -> Cow<'static, str> {
        "Limit".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "maximum": RUNS_MAX, "description": format!("How many runs (default {RUNS_DEFAULT}).")})
    }
}

/// A design document sent over HTTP: a JSON object (a design problem in it is answered, not
/// refused; only a body that is not an object is malformed).
#[derive(Debug, Clone, PartialEq)]
pub struct Graph(pub Value);

impl<'de> Deserialize<'de> for Graph {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object(deserializer, "the design document").map(Graph)
    }
}

impl JsonSchema for Graph {
    fn schema_name() -> Cow<'static, str> {
        "Graph".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        object_schema("A design document (SPEC §2); a design problem is answered, not refused.")
    }
}

/// A design document a tool is given: a JSON object, or its JSON text (which the save parses).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolGraph(pub Value);

impl JsonSchema for ToolGraph {
    fn schema_name() -> Cow<'static, str> {
        "ToolGraph".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        object_schema("The design document: {description?, budget?, nodes: [...], edges: [...]}.")
    }
}

/// An agent.json document: `{workflows: {name: workflow, ...}}` (or a list, or one workflow).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDocument(pub Value);

impl<'de> Deserialize<'de> for AgentDocument {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object(deserializer, "the agent.json document").map(AgentDocument)
    }
}

impl JsonSchema for AgentDocument {
    fn schema_name() -> Cow<'static, str> {
        "AgentDocument".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        object_schema("An agent.json document: {workflows: {name: workflow, ...}} (or a list, or one workflow).")
    }
}

// ---- bodies of the API's routes ----

/// `POST /designs/{name}`: the design to save.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"graph": example_design()}))]
pub struct SaveRequest {
    pub graph: Graph,
    /// true: save only under a name no design has (else 409).
    #[serde(default)]
    pub create: Option<bool>,
}

/// `POST /designs/{name}/validate`: a draft to check instead of the saved design.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct ValidateRequest {
    #[serde(default)]
    pub graph: Option<Graph>,
}

/// How a run is started by hand (`POST /designs/{name}/run`, `workflow_design_run`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(transform = only_or_until, example = json!({"input": {"topic": "tea"}}))]
pub struct StartRequest {
    /// The trigger input, any JSON. A test run limited by only or until takes the newest run's input when given none.
    #[serde(default)]
    pub input: Option<Value>,
    /// true: a test run; pinned steps give their pinned output instead of running (no command, HTTP call, model or delivery).
    #[serde(default)]
    pub test: Option<bool>,
    /// A test run of this step alone: the steps before it give their pins or the newest output past runs have.
    #[serde(default)]
    pub only: Option<String>,
    /// A test run of this step and every step leading to it.
    #[serde(default)]
    pub until: Option<String>,
    /// A second start with this key (here or in the Idempotency-Key header) within the retention window answers this run and starts nothing.
    #[serde(default)]
    pub idempotency_key: Option<IdempotencyKey>,
}

impl StartRequest {
    /// The run's start; `only` and `until` together are refused.
    pub fn start(self) -> Result<Start, Failure> {
        let test = pins::scope_of(self.test.unwrap_or(false), self.only.as_deref(), self.until.as_deref()).map_err(Failure::BadRequest)?;
        Ok(Start { input: self.input, test, key: self.idempotency_key, trace: None })
    }
}

/// `only` and `until` are not given together.
fn only_or_until(schema: &mut Schema) {
    schema.insert(
        "not".into(),
        json!({"required": ["only", "until"], "properties": {"only": {"type": "string"}, "until": {"type": "string"}}}),
    );
}

/// Whether `POST /designs/{name}/run` answers when the run is done or parked (the default) or
/// once it started.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct WaitRequest {
    /// false: answer once the run is saved (status running) and run it on in the background.
    #[serde(default)]
    pub wait: Option<bool>,
}

/// `POST /designs/{name}/run`.
pub type RunRequest = Both<StartRequest, WaitRequest>;

/// `POST /runs/{run_id}/respond`: exactly one of `answer`, `output` or `agent_generate: true`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(transform = one_answer, example = json!({"node": "gate", "answer": "send", "fields": {"note": "fine"}, "edits": {"draft": "The edited text"}, "by": "ada"}))]
pub struct RespondRequest {
    /// What the run waits on, as its pending.node names it (`node#pass` in a loop; `<design step>/<node>` for a child run's question).
    pub node: StepPath,
    /// For an approval gate: one of its options.
    #[serde(default)]
    pub answer: Option<String>,
    /// For an agent step: the step's text.
    #[serde(default)]
    pub output: Option<String>,
    /// For an agent step: let the configured agent backend perform it.
    #[serde(default)]
    pub agent_generate: Option<bool>,
    /// With an answer: the values of the gate's form (its `fields`), by field name.
    #[serde(default)]
    pub fields: Option<Map<String, Value>>,
    /// With an answer: the new text of each step the gate lets be edited (its `edit`), by step id.
    #[serde(default)]
    pub edits: Option<BTreeMap<String, String>>,
    /// With an answer: who answers (1 to 200 characters, not blank, no control characters), kept with the answer and any edit.
    #[serde(default)]
    #[schemars(
        length(min = 1, max = 200),
        regex(pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$")
    )]
    pub by: Option<String>,
}

impl RespondRequest {
    /// The node answered, and the answer, which came through `via` (`api`, `mcp`, …).
    pub fn answer(self, via: &str) -> Result<(StepPath, Answer), Failure> {
        let generate = self.agent_generate == Some(true);
        if self.answer.is_none() && (self.fields.is_some() || self.edits.is_some() || self.by.is_some()) {
            return Err(Failure::BadRequest("\"fields\", \"edits\" and \"by\" go with an \"answer\" to a gate".into()));
        }
        let answer = match (self.answer, self.output, generate) {
            (Some(answer), None, false) => Answer::Respond(Response::Answer(Reply {
                answer,
                fields: self.fields.unwrap_or_default(),
                edits: self.edits.unwrap_or_default(),
                by: self.by,
                via: Some(via.to_string()),
                tap: None,
            })),
            (None, Some(output), false) => Answer::Respond(Response::Output(output)),
            (None, None, true) => Answer::Generate,
            _ => return Err(Failure::BadRequest("give exactly one of \"answer\", \"output\" or \"agent_generate\": true".into())),
        };
        Ok((self.node, answer))
    }
}

/// What only an answer to a gate carries.
fn with_answer_only() -> Value {
    json!({"anyOf": [{"required": ["fields"]}, {"required": ["edits"]}, {"required": ["by"]}]})
}

fn one_answer(schema: &mut Schema) {
    schema.insert(
        "oneOf".into(),
        json!([
            {"required": ["answer"], "properties": {"answer": {"type": "string"}}},
            {"required": ["output"], "properties": {"output": {"type": "string"}}, "not": with_answer_only()},
            {"required": ["agent_generate"], "properties": {"agent_generate": {"const": true}}, "not": with_answer_only()}
        ]),
    );
}

/// `POST /events/{name}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"payload": {"n": 1}}))]
pub struct EmitRequest {
    /// The event payload, any JSON.
    #[serde(default)]
    pub payload: Option<Value>,
    /// A second event with this key (here or in the Idempotency-Key header) within the retention window answers this one's result and starts nothing.
    #[serde(default)]
    pub idempotency_key: Option<IdempotencyKey>,
}

/// Where a retry starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RetryFrom {
    Failed,
    Start,
}

impl<'de> Deserialize<'de> for RetryFrom {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let rule = |given: &Value| D::Error::custom(format!("must be \"failed\" or \"start\", not {given}"));
        match Value::deserialize(deserializer)? {
            Value::String(s) if s == "failed" => Ok(RetryFrom::Failed),
            Value::String(s) if s == "start" => Ok(RetryFrom::Start),
            other => Err(rule(&other)),
        }
    }
}

/// `POST /runs/{run_id}/retry`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"from": "start"}))]
pub struct RetryRequest {
    /// failed (the default): resume the failed run at its failed step with the plan it started with; start: a new run of the design's current version with the same input, linked by retry_of (any finished run).
    #[serde(default)]
    pub from: Option<RetryFrom>,
}

/// `POST /import`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"document": {"workflows": {"hello": {"trigger": {"type": "manual"}, "activities": []}}}}))]
pub struct ImportRequest {
    pub document: AgentDocument,
    /// true: replace designs that have a workflow's name (else they are skipped).
    #[serde(default)]
    pub overwrite: Option<bool>,
}

/// `POST /designs/{name}/restore`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"version": 1}))]
pub struct RestoreRequest {
    /// The version to restore.
    pub version: VersionNumber,
}

/// `POST /designs/{name}/pin`: exactly one of `output`, `from_run` or `remove: true`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(transform = one_pin, example = json!({"node": "fetch", "output": {"text": "{\"items\": [1, 2]}"}}))]
pub struct PinRequest {
    /// The step to pin.
    pub node: String,
    /// The pinned output: a text, or an output view like {"text": "...", "data": ...}. A condition's pin needs value, an approval's answer.
    #[serde(default)]
    pub output: Option<Value>,
    /// Pin what the step gave in this run.
    #[serde(default)]
    #[schemars(schema_with = "nullable_run_id")]
    pub from_run: Option<RunId>,
    /// true: remove the step's pin.
    #[serde(default)]
    pub remove: Option<bool>,
}

impl PinRequest {
    /// The step, and its pin (`None`: remove it).
    pub fn pin(self) -> Result<(String, Option<PinSource>), Failure> {
        let pin = match (self.output, self.from_run, self.remove == Some(true)) {
            (Some(output), None, false) => Some(PinSource::Output(output)),
            (None, Some(id), false) => Some(PinSource::Run(id)),
            (None, None, true) => None,
            _ => return Err(Failure::BadRequest("give exactly one of \"output\", \"from_run\" or \"remove\": true".into())),
        };
        Ok((self.node, pin))
    }
}

fn nullable_run_id(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = run_id(generator);
    schema.insert("type".into(), json!(["string", "null"]));
    schema
}

fn one_pin(schema: &mut Schema) {
    schema.insert(
        "oneOf".into(),
        json!([
            {"required": ["output"], "properties": {"output": {"not": {"type": "null"}}}},
            {"required": ["from_run"], "properties": {"from_run": {"type": "string"}}},
            {"required": ["remove"], "properties": {"remove": {"const": true}}}
        ]),
    );
}

/// `POST /designs/{name}/schedule`: the schedule object of SPEC §10 with `paused` and `input`.
/// The core reads it (`schedule::schedule_from_value`), so that a problem names its field; the
/// schema states the same rules, one branch per preset.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ScheduleRequest(pub Value);

impl JsonSchema for ScheduleRequest {
    fn schema_name() -> Cow<'static, str> {
        "ScheduleRequest".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut schema = Schema::try_from(schedule_request()).unwrap_or_default();
        schema.insert("examples".into(), json!([{"preset": "daily", "time": "09:00", "tz": "Europe/Berlin"}]));
        schema
    }
}

/// `POST /schedules/preview`: any object; what is wrong with it as a schedule is the answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PreviewRequest(pub Value);

impl JsonSchema for PreviewRequest {
    fn schema_name() -> Cow<'static, str> {
        "PreviewRequest".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        object_schema(
            "A schedule object ({preset, time?, minute?, dow?, cron?, tz?}); what is wrong with it is the answer ({ok:false, error, field}).",
        )
    }
}

// ---- the tools' arguments ----

/// A tool's design: `{name}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"name": "hello"}))]
pub struct NameArg {
    pub name: Name,
}

/// A tool's run: `{run_id}`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"run_id": "0123456789ab"}))]
pub struct RunIdArg {
    #[schemars(schema_with = "run_id")]
    pub run_id: RunId,
}

/// `workflow_design_save`'s graph.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"graph": example_design()}))]
pub struct GraphArg {
    pub graph: ToolGraph,
}

/// `workflow_design_load`'s version.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct VersionArg {
    /// A recorded version (vwf versions NAME); the saved design when absent.
    #[serde(default)]
    pub version: Option<VersionNumber>,
}

/// `workflow_design_validate`: a saved design (`name`) or a draft (`graph`, which wins).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(example = json!({"name": "hello"}))]
pub struct ValidateArgs {
    #[serde(default)]
    pub name: Option<Name>,
    #[serde(default)]
    pub graph: Option<ToolGraph>,
}

/// `workflow_runs_list`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct ListArgs {
    #[serde(default)]
    pub limit: Option<Limit>,
}

/// `workflow_design_list`: no arguments.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct NoArgs {}

pub type SaveTool = Both<NameArg, GraphArg>;
pub type LoadTool = Both<NameArg, VersionArg>;
pub type RunTool = Both<NameArg, StartRequest>;
pub type RespondTool = Both<RunIdArg, RespondRequest>;

// ---- examples and hand-stated schemas ----

/// The example of a save: a manual trigger, an approval gate and an output, so that following
/// the links (run, answer) reaches a parked run and a finished one.
pub fn example_design() -> Value {
    json!({
        "description": "asks before it says hello",
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Send it?", "options": ["send", "skip"], "timeout_minutes": 60},
            {"id": "say", "type": "output", "template": "hello from {{run.design}}"}
        ],
        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "say", "label": "send"}]
    })
}

/// The schedule object of SPEC §10 plus `paused` and `input`, one branch per preset. Fields a
/// preset does not use are still type-checked; `null` stands for a missing field.
fn schedule_request() -> Value {
    let time = json!({"type": "string", "pattern": r"^\s*([01]?[0-9]|2[0-3]):[0-5][0-9]\s*$"});
    let unused_string = json!({"type": ["string", "null"]});
    let unused_number = json!({"type": ["integer", "null"], "minimum": 0, "maximum": u32::MAX});
    let mut tz: Vec<&str> = time_zone_names().collect();
    tz.sort_unstable();
    tz.dedup();
    let common = json!({
        "tz": {"anyOf": [{"type": "null"}, {"enum": tz}]},
        "paused": {"type": ["boolean", "null"]},
        "input": {"description": "The input of every run the job starts (null removes it; absent keeps it)."},
        "time": unused_string,
        "minute": unused_number,
        "dow": unused_number,
        "cron": unused_string,
    });
    let branch = |presets: Value, required: &[&str], own: Value| {
        let mut properties = common.clone();
        properties["preset"] = presets;
        for (k, v) in own.as_object().into_iter().flatten() {
            properties[k] = v.clone();
        }
        let mut required = required.to_vec();
        required.insert(0, "preset");
        json!({"type": "object", "required": required, "properties": properties})
    };
    json!({
        "description": "{preset, time?, minute?, dow?, cron?, tz?, paused?, input?}. The cron pattern covers numbers, * and */n \
                        lists (days of month up to 28); the server also takes ranges (a-b, a-b/n).",
        "oneOf": [
            branch(json!({"const": "hourly"}), &[], json!({"minute": {"type": ["integer", "null"], "minimum": 0, "maximum": 59}, "time": {"anyOf": [{"type": "null"}, time]}})),
            branch(json!({"enum": ["daily", "weekdays"]}), &["time"], json!({"time": time})),
            branch(json!({"const": "weekly"}), &["time"], json!({"time": time, "dow": {"type": ["integer", "null"], "minimum": 0, "maximum": 6}})),
            branch(json!({"const": "custom"}), &["cron"], json!({"cron": {"type": "string", "pattern": cron_pattern()}})),
        ]
    })
}

/// Five cron fields, each `*`, `*/n` or a comma list of numbers within the field's range: the
/// forms every expression of which can fire.
fn cron_pattern() -> String {
    // (numbers, steps) per field: minute, hour, day of month (to 28: every month has it), month,
    // day of week.
    let fields = [
        ("[0-9]|[1-5][0-9]", "[1-9]|[1-5][0-9]|60"),
        ("[0-9]|1[0-9]|2[0-3]", "[1-9]|1[0-9]|2[0-4]"),
        ("[1-9]|1[0-9]|2[0-8]", "[1-9]|[12][0-9]|3[01]"),
        ("[1-9]|1[0-2]", "[1-9]|1[0-2]"),
        ("[0-6]", "[1-7]"),
    ];
    let field = |(n, step): (&str, &str)| format!(r"(\*(/({step}))?|({n})(,({n}))*)");
    let parts: Vec<String> = fields.into_iter().map(field).collect();
    format!("^{}$", parts.join(" "))
}
