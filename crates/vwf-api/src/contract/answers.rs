//! What the API answers: each 200 body is a type here (or a service type) that serialises to it,
//! and whose JSON Schema the OpenAPI document states, so the answer and its description come from
//! one declaration.
//!
//! An answer that did what was asked is `{ok: true, …}`: [`Done`] puts `ok` beside the answer's
//! own fields. A design problem is a [`Refusal`], any other failure an [`Error`].
//!
//! The run result ([`RunResult`], SPEC §8) is the core's run record less its file-only parts:
//! the core serialises it (`Run::result`) and derives its schema (feature `schema`). Stated by
//! hand, with the reason: the agent profiles and delivery channels (`vwf-exec` answers them as
//! JSON), the design model (`GET /schema`), and a step's recorded inputs (built as JSON by the
//! core, whose schema sits beside that code).

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::generate::SchemaGenerator;
use schemars::{JsonSchema, Schema, json_schema};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::schedule::job::Job;
use vwf_core::validate::{Issue, Report, Scope};
use vwf_core::versions::DesignVersion;

use super::requests::Name;

// ---- the parts every answer has ----

/// `true`: the `ok` of an answer that did what was asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Yes;

impl Serialize for Yes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(true)
    }
}

impl JsonSchema for Yes {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Yes".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"const": true})
    }
}

/// `false`: the `ok` of an answer that did not do what was asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct No;

impl Serialize for No {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(false)
    }
}

impl JsonSchema for No {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "No".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"const": false})
    }
}

// `{ok: true, …}`: an answer that did what was asked, its own fields beside `ok`. (A comment,
// not a doc comment: the schema of each answer is described by its own type.)
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Done<T> {
    pub ok: Yes,
    #[serde(flatten)]
    pub answer: T,
}

/// The contract body of `answer`: `{ok: true, …answer}`.
pub fn done<T: Serialize>(answer: T) -> Value {
    to_body(&Done { ok: Yes, answer })
}

/// `answer` as JSON. Serialising these types cannot fail (their maps have string keys); if it
/// ever did, the answer says so rather than panicking.
pub fn to_body<T: Serialize>(answer: &T) -> Value {
    serde_json::to_value(answer).unwrap_or_else(|e| json!({"ok": false, "error": format!("cannot write the answer: {e}")}))
}

/// Every failure's body: `{ok: false, error}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Error {
    pub ok: No,
    pub error: String,
}

/// A design that cannot run or be saved, with its problems: `{ok: false, error, errors}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Refusal {
    pub ok: No,
    pub error: String,
    pub errors: Vec<Issue>,
}

impl Refusal {
    pub fn of(report: &Report) -> Refusal {
        Refusal { ok: No, error: report.refusal(), errors: report.errors.clone() }
    }
}

/// A stamp of SPEC time (RFC 3339, UTC).
fn time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "date-time"})
}

fn nullable_time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": ["string", "null"], "format": "date-time"})
}

fn object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

// ---- designs ----

/// `GET /designs`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Designs {
    /// The designs whose automatic trigger is off ("enabled": false).
    #[schemars(with = "Vec<Name>")]
    pub disabled: Vec<String>,
    #[schemars(with = "Vec<Name>")]
    pub designs: Vec<String>,
}

/// `GET /designs/{name}`, `workflow_design_load`: a saved graph.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Loaded {
    #[schemars(schema_with = "object")]
    pub graph: Value,
}

/// `GET /templates`: the built-in templates.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Templates {
    pub templates: Vec<Template>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Template {
    pub name: String,
    pub description: String,
    #[schemars(schema_with = "object")]
    pub graph: Value,
}

/// `GET /designs/{name}/versions`: a design's versions, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Versions {
    #[schemars(with = "Name")]
    pub name: DesignName,
    pub versions: Vec<VersionSummary>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VersionSummary {
    #[schemars(range(min = 1))]
    pub version: u64,
    pub hash: String,
    #[schemars(schema_with = "time")]
    pub saved_at: String,
    pub nodes: usize,
    pub edges: usize,
}

impl Versions {
    pub fn of(name: &DesignName, versions: &[DesignVersion]) -> Versions {
        let count = |graph: &Value, key: &str| graph.get(key).and_then(Value::as_array).map_or(0, Vec::len);
        let versions = versions
            .iter()
            .map(|v| VersionSummary {
                version: v.version,
                hash: v.hash.clone(),
                saved_at: vwf_core::time::format(&v.saved_at),
                nodes: count(&v.graph, "nodes"),
                edges: count(&v.graph, "edges"),
            })
            .collect();
        Versions { name: name.clone(), versions }
    }
}

/// `GET /designs/{name}/versions/{version}`: one version.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VersionGraph {
    #[schemars(with = "Name")]
    pub name: DesignName,
    #[schemars(range(min = 1))]
    pub version: u64,
    pub hash: String,
    #[schemars(schema_with = "time")]
    pub saved_at: String,
    #[schemars(schema_with = "object")]
    pub graph: Value,
}

impl VersionGraph {
    pub fn of(name: &DesignName, version: DesignVersion) -> VersionGraph {
        VersionGraph {
            name: name.clone(),
            version: version.version,
            hash: version.hash,
            saved_at: vwf_core::time::format(&version.saved_at),
            graph: version.graph,
        }
    }
}

/// `POST /designs/{name}/validate`: the validator's report; with `scope=1` also, per node id,
/// the node ids its templates and condition may name and the loop whose body holds it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Checked {
    #[serde(flatten)]
    pub report: Report,
    /// Only with scope=1: per node id, the node ids its templates and condition may name, and the loop whose body holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BTreeMap<String, ScopeSchema>>")]
    pub scopes: Option<BTreeMap<String, Scope>>,
}

/// The shape of a [`Scope`] (the core states it in serde only).
#[derive(JsonSchema)]
#[schemars(rename = "Scope")]
#[allow(dead_code)]
struct ScopeSchema {
    nodes: Vec<String>,
    #[serde(rename = "loop")]
    in_loop: Option<String>,
}

// ---- schedules ----

/// `GET /schedules`: every job, an unreadable one as `{ok: false, job_id, error}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Jobs {
    pub schedules: Vec<JobEntry>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum JobEntry {
    Job(Box<Job>),
    Unreadable { ok: No, job_id: String, error: String },
}

/// `POST /designs/{name}/schedule`, and a job's pause or resume.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct JobAnswer {
    pub job: Job,
}

/// A job's `remove`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Removed {
    pub job_id: String,
    pub removed: Yes,
}

/// `POST /schedules/preview`: when the schedule fires next, or what is wrong with it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Preview {
    Next(Done<Resolved>),
    Problem {
        ok: No,
        error: String,
        /// The field the problem is in, when it is in one.
        field: Option<String>,
    },
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Resolved {
    pub cron: String,
    pub human: String,
    pub tz: String,
    #[schemars(schema_with = "nullable_time")]
    pub next_run_at: Option<String>,
}

// ---- runs ----

/// `GET /runs`: a page of runs, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Runs {
    pub runs: Vec<Listed>,
    /// Pass as before= for the next page; null when no older run matches.
    #[schemars(with = "Option<RunIdText>")]
    pub next: Option<String>,
    /// Only with since= or wait= (GET /runs, GET /runs/{run_id}): pass it as since= to wait for a change.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Stamp>")]
    pub stamp: Option<String>,
}

/// A run id as text.
#[derive(JsonSchema)]
#[schemars(transform = run_id_pattern)]
#[allow(dead_code)]
struct RunIdText(String);

fn run_id_pattern(schema: &mut Schema) {
    schema.insert("pattern".into(), json!(RunId::PATTERN));
}

/// The `stamp` of a long-poll answer, and the `since` that gives it back.
#[derive(JsonSchema)]
#[schemars(transform = stamp_pattern)]
#[allow(dead_code)]
pub struct Stamp(String);

fn stamp_pattern(schema: &mut Schema) {
    schema.insert("pattern".into(), json!(crate::server::STAMP_PATTERN));
}

/// One entry of a runs listing: a run result, or a run file that cannot be read as a run.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct Listed(pub Value);

impl JsonSchema for Listed {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Listed".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let run = generator.subschema_for::<RunResult>();
        let unreadable = generator.subschema_for::<UnreadableRun>();
        json_schema!({"anyOf": [run, unreadable]})
    }
}

/// A run file in the listing that cannot be read as a run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UnreadableRun {
    pub ok: No,
    pub run_id: String,
    pub error: String,
}

/// `POST /events/{name}`: the runs waiting for the event it answered, the runs it started, and
/// the designs it did not start.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Emitted {
    #[schemars(regex(pattern = vwf_core::trigger::EVENT_NAME_PATTERN))]
    pub event: String,
    /// The ids of the runs waiting for this event (`wait_event` steps) whose match its payload
    /// satisfied: each went on, oldest wait first.
    pub resumed: Vec<String>,
    pub runs: Vec<RunResult>,
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Skipped {
    pub design: String,
    pub reason: String,
}

/// `POST /import`: each workflow's fate, and what could not be mapped.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Imported {
    /// false when a workflow was refused (its design has errors).
    pub ok: bool,
    pub designs: Vec<ImportedDesign>,
    /// What could not be mapped, one line each.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ImportedDesign {
    pub name: String,
    #[serde(flatten)]
    pub fate: Fate,
}

/// What became of one imported workflow.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Fate {
    Saved {
        path: String,
        /// false when the design has an automatic trigger, which stays off until it is enabled.
        enabled: bool,
    },
    Skipped {
        reason: String,
    },
    Refused {
        error: String,
        /// The design's errors (null when the save itself failed).
        errors: Option<Vec<Issue>>,
    },
}

// ---- what the server's other parts answer ----

/// `GET /models`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Models {
    pub models: Vec<String>,
}

/// `GET /profiles`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Profiles {
    pub profiles: Vec<Profile>,
    /// The agent backend; null when none is configured (GET /models then answers 503).
    #[schemars(schema_with = "backend")]
    pub backend: Option<&'static str>,
}

fn backend(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"enum": ["openai", "command", null]})
}

/// `GET /channels`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Channels {
    pub channels: Vec<Channel>,
}

/// A document whose schema is stated by hand (see the module's doc): its JSON as it is.
macro_rules! document {
    ($(#[$doc:meta])* $name:ident, $schema:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub Value);

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                let schema: fn(&mut SchemaGenerator) -> Value = $schema;
                Schema::try_from(schema(generator)).unwrap_or_default()
            }
        }
    };
}

document!(
    /// A configured profile (bot).
    Profile,
    |_| json!({
        "type": "object", "required": ["name", "model"],
        "properties": {"name": {"type": "string"}, "model": {"type": ["string", "null"]}, "system": {"type": "string"}, "backend": {"type": "string"}}
    })
);

document!(
    /// A delivery channel.
    Channel,
    |_| json!({
        "type": "object", "required": ["platform", "target", "home"],
        "properties": {"platform": {"type": "string"}, "target": {"type": "string"}, "home": {"type": ["string", "null"]}}
    })
);

document!(
    /// `GET /schema`: the design model.
    DesignModel,
    |_| json!({
        "type": "object",
        "required": ["node_fields", "node_types", "trigger_modes", "schedule_presets", "design_fields", "http_methods", "limits"],
        "description": "The design model, read from the same constants as the validator (vwf schema prints it)."
    })
);

document!(
    /// `GET /openapi.json`.
    OpenApi,
    |_| json!({"type": "object", "required": ["openapi", "info", "paths"]})
);

/// The run result of SPEC §8: the core's run record as `Run::result` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct RunResult(pub Value);

impl JsonSchema for RunResult {
    fn schema_name() -> Cow<'static, str> {
        "RunResult".into()
    }

    /// The run record's schema (derived in the core, its file-only parts left out), with the two
    /// fields a read may add.
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = Run::json_schema(generator);
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.insert("plan".into(), json!({"type": "object", "description": "Only with plan=1: the plan the run started with."}));
            let mut queue = generator.subschema_for::<vwf_core::concurrency::QueuePlace>().to_value();
            if let Some(obj) = queue.as_object_mut() {
                obj.insert(
                    "description".into(),
                    json!("Only on a queued run (GET /runs/{run_id}, GET /runs): its concurrency key, its place (1 is next) and the oldest run holding the slot."),
                );
            }
            properties.insert("queue".into(), queue);
            let mut usage = generator.subschema_for::<vwf_core::usage::Usage>().to_value();
            if let Some(obj) = usage.as_object_mut() {
                obj.insert("description".into(), json!("The tokens the run's model calls used, as the backends reported them (its steps' and loop passes' `usage` added up)."));
            }
            properties.insert("usage".into(), usage);
            properties.insert(
                "cost".into(),
                json!({"type": ["number", "null"], "description": "What the run's model calls cost by the [prices] table; null when a step's model has no price."}),
            );
            properties.insert(
                "currency".into(),
                json!({"type": ["string", "null"], "description": "The [prices] currency of `cost`, when a step was priced."}),
            );
            properties.insert(
                "stamp".into(),
                json!({"type": "string", "pattern": crate::server::STAMP_PATTERN,
                       "description": "Only with since= or wait= (GET /runs, GET /runs/{run_id}): pass it as since= to wait for a change."}),
            );
        }
        schema
    }
}
