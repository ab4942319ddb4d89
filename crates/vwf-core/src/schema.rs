//! The design model as one JSON document (`GET /schema`, `vwf schema`): node types and their
//! fields, trigger modes and theirs, schedule presets, HTTP methods and the limits.
//!
//! It exists so that forms (the canvas's inspector, the schedules page) read the model instead of
//! carrying their own copy of it. Every default, range and list of allowed values here is read
//! from the constant the parser itself uses ([`crate::limits`], [`crate::spec`],
//! [`crate::trigger`], [`crate::schedule`]); what this module adds is which fields each type has
//! and what kind of value each holds, and its tests hold that against the parsers: each field's
//! default, bounds, allowed values, example and requiredness are checked by parsing nodes built
//! from the document.
//!
//! Invariants:
//! - Pure and constant: the document depends on nothing but this version's code.
//! - Describes, never decides: `Spec::parse`, `Trigger::parse` and `to_cron` remain the rules;
//!   the document only says what they accept, for forms to offer.
//!
//! Field kinds: `string`, `integer` (`min`/`max` inclusive, `unit`), `number`, `enum` (one of
//! `values`), `string_list`, `enum_list` (a list of `values`), `string_map` (an object of
//! strings), `json` (any JSON), `duration` (`"30s"`, `"5m"`, `"1h30m"`; `min`/`max` in seconds),
//! `expression` (a condition), `status_set` (`200`, `"2xx"`, `"200-299"` or a list of those),
//! `command` (a string run by `sh -c`, or a list: program first), `boolean` and `object` (with
//! `fields`).
//! `template: true` marks a field whose strings are templates (SPEC §4); `labels` name an
//! integer's values in order from `min`.

use serde::Serialize;
use serde_json::{Value, json};

use crate::design::{NODE_TYPES, NodeKind};
use crate::limits;
use crate::schedule::{DAY_NAMES, DOW_DEFAULT, DOW_RANGE, MINUTE_DEFAULT, MINUTE_RANGE, PRESETS, Preset, TZ_DEFAULT};
use crate::spec::{APPROVAL_OPTIONS_DEFAULT, Deliver, EventTimeout, HTTP_METHOD_DEFAULT, HTTP_METHODS, OnTimeout};
use crate::trigger::{FolderEvent, MODES};

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schema {
    /// Fields every node has.
    pub node_fields: Vec<Field>,
    /// Each node type with its own fields, in the order of SPEC §3.
    pub node_types: Vec<NodeType>,
    /// Each trigger mode with the fields of a trigger node in that mode.
    pub trigger_modes: Vec<Mode>,
    /// The schedule presets, with the fields of the schedule object each reads.
    pub schedule_presets: Vec<Preset>,
    /// Fields of the design document itself.
    pub design_fields: Vec<Field>,
    pub http_methods: Vec<&'static str>,
    pub limits: Limits,
}

/// A node type and its fields (besides [`Schema::node_fields`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeType {
    #[serde(rename = "type")]
    pub kind: NodeKind,
    pub fields: Vec<Field>,
    /// Fields of which the node needs exactly one (a command's `run` or `argv`, a wait's
    /// `seconds` or `duration`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exactly_one_of: Vec<&'static str>,
    /// The fields its output view has beyond `text`, `data`, `words`, `chars` and `lines` (some
    /// only in some runs: `error` after a handled failure, `edited` after a gate's edit), so an
    /// editor can suggest `out.<id>.<field>` before any run.
    pub output_view: &'static [&'static str],
}

/// A trigger mode and its fields (a trigger node's `mode` picks them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mode {
    pub mode: &'static str,
    pub fields: Vec<Field>,
}

/// One field: its name, the kind of value it holds and what the parser accepts of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Field {
    pub name: &'static str,
    pub kind: Kind,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub template: bool,
    /// What an absent field means.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<&'static str>,
    /// A value the parser accepts, to show as a hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
}

/// What a field holds; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    String,
    Integer,
    Number,
    Enum,
    StringList,
    EnumList,
    StringMap,
    Json,
    Duration,
    Expression,
    StatusSet,
    Command,
    Object,
    Boolean,
}

/// The limits of SPEC §18 that a form or client may want to know before it asks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    pub max_nodes: usize,
    pub max_id_len: usize,
    pub request_body_bytes: usize,
    pub json_depth: usize,
    pub step_output_bytes: usize,
    pub event_depth: u32,
}

fn field(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        required: false,
        template: false,
        default: None,
        min: None,
        max: None,
        unit: None,
        values: Vec::new(),
        labels: Vec::new(),
        example: None,
        fields: Vec::new(),
    }
}

impl Field {
    fn required(mut self) -> Field {
        self.required = true;
        self
    }
    fn template(mut self) -> Field {
        self.template = true;
        self
    }
    fn default(mut self, v: impl Into<Value>) -> Field {
        self.default = Some(v.into());
        self
    }
    fn range(mut self, (lo, hi): (u64, u64)) -> Field {
        self.min = Some(lo.into());
        self.max = Some(hi.into());
        self
    }
    fn unit(mut self, unit: &'static str) -> Field {
        self.unit = Some(unit);
        self
    }
    fn values(mut self, values: impl IntoIterator<Item = &'static str>) -> Field {
        self.values = values.into_iter().collect();
        self
    }
    fn example(mut self, v: impl Into<Value>) -> Field {
        self.example = Some(v.into());
        self
    }
}

/// A whole number within `range`, with its unit and default.
fn integer(name: &'static str, range: (u64, u64), unit: &'static str, default: Option<u64>) -> Field {
    let f = field(name, Kind::Integer).range(range);
    let f = if unit.is_empty() { f } else { f.unit(unit) };
    match default {
        Some(d) => f.default(d),
        None => f,
    }
}

/// The fields of each type's output view beyond the base ones (see [`NodeType::output_view`]).
fn output_view(kind: NodeKind) -> &'static [&'static str] {
    match kind {
        NodeKind::Trigger | NodeKind::Note => &[],
        NodeKind::Agent => &["model", "tokens", "usage", "cost", "currency", "tool_calls", "tool_usage", "tool_cost", "edited", "error"],
        NodeKind::Condition => &["value"],
        NodeKind::Approval => &["answer", "fields", "by", "approvers"],
        NodeKind::Output => &["collected", "deliveries", "error"],
        NodeKind::Command => &["exit_code", "stderr", "stdout", "edited", "error"],
        NodeKind::Http => &["status", "headers", "body", "error"],
        NodeKind::Loop => &["items", "count"],
        NodeKind::Wait => &["resumed_at"],
        NodeKind::Emit => &["event", "runs", "resumed", "error"],
        NodeKind::WaitEvent => &["event", "payload", "timed_out"],
        NodeKind::Design => &["run_id", "design", "status", "outputs", "usage", "cost", "currency", "error"],
    }
}

fn node_type(kind: NodeKind) -> NodeType {
    let fields = match kind {
        NodeKind::Trigger => vec![field("mode", Kind::Enum).values(MODES).required()],
        NodeKind::Agent => vec![
            field("prompt", Kind::String).required().template().example("Summarise {{nodes.fetch}}"),
            field("profile", Kind::String),
            field("model", Kind::String),
            integer("retries", limits::AGENT_RETRIES, "", Some(0)),
            integer("timeout_seconds", limits::AGENT_TIMEOUT_SECONDS, "seconds", Some(limits::AGENT_TIMEOUT_DEFAULT)),
            integer("max_tokens", limits::AGENT_MAX_TOKENS, "tokens", None),
            field("tools", Kind::StringList).example(json!(["notify-oncall"])),
            field(crate::rate::FIELD, Kind::String).example("openai"),
        ],
        NodeKind::Condition => vec![field("expr", Kind::Expression).required().example("out.check.words > 20")],
        NodeKind::Approval => vec![
            field("question", Kind::String).required().template().example("Ship {{nodes.build}}?"),
            field("options", Kind::StringList).default(json!(APPROVAL_OPTIONS_DEFAULT)),
            integer("timeout_minutes", limits::APPROVAL_TIMEOUT_MINUTES, "minutes", None),
            field("on_timeout", Kind::Enum).values(OnTimeout::ALL.iter().map(OnTimeout::as_str)).default(OnTimeout::DEFAULT.as_str()),
            field("fields", Kind::Json).example(json!([{"name": "note", "type": "text", "label": "Anything to add?"}])),
            field("edit", Kind::StringList).example(json!(["draft"])),
            field("approvers", Kind::Json)
                .example(json!({"required": 2, "allowed": ["telegram:123456", "slack:U0123", "ann"], "veto": ["reject"]})),
            field("notify", Kind::StringList).example(json!(["telegram:123456", "slack:#ops", "webhook:alerts"])),
            field("context", Kind::String).template().example("{{nodes.draft}}"),
        ],
        NodeKind::Output => vec![
            field("deliver", Kind::Enum).values(Deliver::ALL.iter().map(Deliver::as_str)),
            field("target", Kind::String).example("telegram:123456"),
            field("template", Kind::String).template(),
            integer("timeout_seconds", limits::DELIVER_TIMEOUT_SECONDS, "seconds", Some(limits::DELIVER_TIMEOUT_DEFAULT)),
        ],
        NodeKind::Note => vec![field("text", Kind::String), field("color", Kind::String).example("yellow")],
        NodeKind::Command => vec![
            field("run", Kind::String).template().example("echo {{trigger.name}}"),
            field("argv", Kind::StringList).template().example(json!(["printf", "%s", "{{trigger.name}}"])),
            field("cwd", Kind::String).template(),
            field("env", Kind::StringMap).template().example(json!({"LANG": "C"})),
            integer("timeout_seconds", limits::COMMAND_TIMEOUT_SECONDS, "seconds", Some(limits::COMMAND_TIMEOUT_DEFAULT)),
        ],
        NodeKind::Http => vec![
            field("method", Kind::Enum).values(HTTP_METHODS).default(HTTP_METHOD_DEFAULT),
            field("url", Kind::String).required().template().example("https://example.org/feed.json"),
            field("headers", Kind::StringMap).template().example(json!({"Accept": "application/json"})),
            field("body", Kind::Json).template(),
            field("accept", Kind::StatusSet).default("2xx").example(json!([200, 404])),
            integer("timeout_seconds", limits::HTTP_TIMEOUT_SECONDS, "seconds", Some(limits::HTTP_TIMEOUT_DEFAULT)),
            field(crate::rate::FIELD, Kind::String).example("openai"),
        ],
        NodeKind::Loop => vec![
            field("over", Kind::String).required().template().example("{{nodes.split}}"),
            integer("max_items", limits::LOOP_MAX_ITEMS, "items", Some(limits::LOOP_MAX_ITEMS_DEFAULT)),
            integer("concurrency", limits::LOOP_CONCURRENCY, "", Some(limits::LOOP_CONCURRENCY_DEFAULT)),
        ],
        NodeKind::Wait => vec![
            integer("seconds", limits::WAIT_SECONDS, "seconds", None).example(30),
            field("duration", Kind::Duration).range(limits::WAIT_SECONDS).unit("seconds").example("5m"),
        ],
        NodeKind::Emit => vec![
            field("event", Kind::String).required().example("report.ready"),
            field("payload", Kind::Json).template(),
            integer("timeout_seconds", limits::EMIT_TIMEOUT_SECONDS, "seconds", Some(limits::EMIT_TIMEOUT_DEFAULT)),
        ],
        NodeKind::Design => vec![
            field("design", Kind::String).required().example("notify-oncall"),
            field("input", Kind::Json).template().example(json!({"message": "{{nodes.summary}}"})),
            field("wait", Kind::Boolean).default(true),
            integer("version", limits::DESIGN_VERSION, "", None),
        ],
        NodeKind::WaitEvent => vec![
            field("event", Kind::String).required().example("pr.merged"),
            field("match", Kind::String).template().example("event.payload.pr == {{trigger.pr}}"),
            field("timeout", Kind::Duration).range(limits::EVENT_WAIT_SECONDS).unit("seconds").example("7d"),
            field("on_timeout", Kind::Enum).values(EventTimeout::ALL.iter().map(EventTimeout::as_str)).default(EventTimeout::Fail.as_str()),
        ],
    };
    let mut fields = fields;
    if kind.acts() {
        fields.extend(recovery_fields(kind));
    }
    let exactly_one_of = match kind {
        NodeKind::Command => vec!["run", "argv"],
        NodeKind::Wait => vec!["seconds", "duration"],
        _ => Vec::new(),
    };
    NodeType { kind, fields, exactly_one_of, output_view: output_view(kind) }
}

/// The fields of a step that acts: its retry policy and what a failure for good does
/// ([`crate::recovery`]).
fn recovery_fields(kind: NodeKind) -> Vec<Field> {
    use crate::recovery::{self, Backoff, Numbers, OnError, RetryOn};
    let (words, numbers) = RetryOn::vocabulary(kind);
    let on_example = match numbers {
        Numbers::Statuses => json!(["5xx", "429", 408]),
        Numbers::ExitCodes => json!([75, "timeout"]),
        Numbers::None => json!([words[0].0]),
    };
    let delay = |name, default| field(name, Kind::Duration).range((1, recovery::LONGEST_DELAY_SECONDS)).unit("seconds").default(default);
    let mut retry = field("retry", Kind::Object).example(json!({"max_attempts": 3, "delay": "1s"}));
    retry.fields = vec![
        integer("max_attempts", recovery::MAX_ATTEMPTS, "", Some(1)),
        delay("delay", "1s"),
        field("backoff", Kind::Enum).values(Backoff::ALL.iter().map(Backoff::as_str)).default(Backoff::Exponential.as_str()),
        integer("factor", recovery::FACTOR, "", Some(u64::from(recovery::FACTOR_DEFAULT))),
        delay("max_delay", "5m"),
        field("jitter", Kind::Boolean).default(true),
        field("on", Kind::EnumList).values(words.iter().map(|(w, _)| *w)).example(on_example),
    ];
    vec![retry, field("on_error", Kind::Enum).values(OnError::ALL.iter().map(OnError::as_str)).default(OnError::Fail.as_str())]
}

fn mode(mode: &'static str) -> Mode {
    let tz = || field("tz", Kind::String).default(TZ_DEFAULT).example("Europe/Paris");
    let fields = match mode {
        "schedule" => {
            let mut schedule = field("schedule", Kind::Object).required().example(json!({"preset": "daily", "time": "09:00"}));
            schedule.fields = vec![
                field("preset", Kind::Enum).values(PRESETS.iter().map(|p| p.preset)).required(),
                field("time", Kind::String).example("09:00"),
                field("minute", Kind::Integer).range(wide(MINUTE_RANGE)).default(MINUTE_DEFAULT),
                Field { labels: DAY_NAMES.to_vec(), ..field("dow", Kind::Integer).range(wide(DOW_RANGE)).default(DOW_DEFAULT) },
                field("cron", Kind::String).example("*/15 8-18 * * 1-5"),
                tz(),
            ];
            vec![schedule]
        }
        "heartbeat" => vec![
            field("every", Kind::Duration).range(limits::HEARTBEAT_SECONDS).unit("seconds").required().example("30m"),
            field("window", Kind::String).example("08:00-18:00"),
            field("days", Kind::String).example("mon-fri"),
            tz(),
        ],
        "event" => vec![
            field("sources", Kind::StringList).required().example(json!(["report.ready", "alerts.*"])),
            integer("cooldown_seconds", limits::EVENT_COOLDOWN_SECONDS, "seconds", Some(limits::EVENT_COOLDOWN_DEFAULT)),
        ],
        "folder" => vec![
            field("path", Kind::String).required().example("/srv/inbox"),
            field("pattern", Kind::String).default(limits::FOLDER_PATTERN_DEFAULT).example("*.csv"),
            field("events", Kind::EnumList)
                .values(FolderEvent::ALL.map(FolderEvent::as_str))
                .default(json!(FolderEvent::DEFAULT.map(FolderEvent::as_str))),
            integer("debounce_ms", limits::FOLDER_DEBOUNCE_MS, "milliseconds", Some(limits::FOLDER_DEBOUNCE_DEFAULT_MS)),
        ],
        "watch" => vec![
            field("command", Kind::Command).required().example("tail -F /var/log/app.log"),
            integer(
                "restart_delay_seconds",
                limits::WATCH_RESTART_DELAY_SECONDS,
                "seconds",
                Some(limits::WATCH_RESTART_DELAY_DEFAULT_SECONDS),
            ),
            integer("dedupe_minutes", limits::WATCH_DEDUPE_MINUTES, "minutes", Some(limits::WATCH_DEDUPE_DEFAULT_MINUTES)),
        ],
        "webhook" => vec![
            field("path", Kind::String).required().example("github-prs"),
            field("secret_env", Kind::String).required().example("GITHUB_WEBHOOK_SECRET"),
            field("signature", Kind::Enum).values(crate::webhook::Scheme::ALL.map(crate::webhook::Scheme::as_str)).required(),
            field("header", Kind::String).default(crate::webhook::HMAC_HEADER_DEFAULT),
            integer("tolerance_seconds", limits::WEBHOOK_TOLERANCE_SECONDS, "seconds", Some(limits::WEBHOOK_TOLERANCE_DEFAULT_SECONDS)),
        ],
        _ => Vec::new(),
    };
    let mut fields = fields;
    if crate::flow::FLOW_MODES.contains(&mode) {
        let period = || field("period", Kind::Duration).range((1, crate::flow::PERIOD_MAX_SECONDS)).unit("seconds").required();
        let mut debounce = field("debounce", Kind::Object).example(json!({"period": "30s", "key": "{{trigger.payload.pr}}"}));
        debounce.fields = vec![period().example("30s"), field("key", Kind::String).example("{{trigger.payload.pr}}")];
        let mut throttle = field("throttle", Kind::Object).example(json!({"limit": 5, "period": "1m"}));
        throttle.fields = vec![
            integer("limit", (1, crate::flow::THROTTLE_LIMIT_MAX.into()), "starts", None).required(),
            period().example("1m"),
            field("key", Kind::String).example("{{trigger.payload.repo}}"),
            field("on_limit", Kind::Enum).values(["drop", "queue"]).default("drop"),
        ];
        fields.extend([debounce, throttle]);
    }
    Mode { mode, fields }
}

fn wide((lo, hi): (u32, u32)) -> (u64, u64) {
    (lo.into(), hi.into())
}

/// The document.
pub fn schema() -> Schema {
    let coordinate = |name| Field {
        min: Some(json!(-limits::CANVAS_COORDINATE)),
        max: Some(json!(limits::CANVAS_COORDINATE)),
        ..field(name, Kind::Number)
    };
    let mut budget = field("budget", Kind::Object);
    budget.fields = vec![
        integer("tokens", limits::BUDGET_TOKENS, "tokens", None),
        Field { min: Some(json!(0)), ..field("cost", Kind::Number).example(0.5) },
    ];
    let mut concurrency = field(crate::concurrency::FIELD, Kind::Object);
    concurrency.fields = vec![
        integer("limit", (1, crate::concurrency::LIMIT_MAX.into()), "runs", None).required(),
        field("key", Kind::String).example("{{trigger.chat_id}}"),
        field("on_limit", Kind::Enum).values(crate::concurrency::OnLimit::ALL).default("queue"),
        field("release_while_waiting", Kind::Boolean).default(false),
    ];
    Schema {
        node_fields: vec![
            Field { max: Some(limits::MAX_ID_LEN.into()), unit: Some("characters"), ..field("id", Kind::String).required() },
            field("type", Kind::Enum).values(NODE_TYPES).required(),
            coordinate("x"),
            coordinate("y"),
        ],
        node_types: NodeKind::ALL.iter().map(|k| node_type(*k)).collect(),
        trigger_modes: MODES.iter().map(|m| mode(m)).collect(),
        schedule_presets: PRESETS.to_vec(),
        design_fields: vec![
            field("description", Kind::String),
            budget,
            field("on_failure", Kind::String).example("open-ticket"),
            concurrency,
            field("timeout", Kind::Duration).range((1, crate::design::TIMEOUT_MAX_SECONDS)).unit("seconds").example("2h"),
            field(crate::interface::TOOL, Kind::Boolean).default(false),
            field(crate::interface::INPUTS, Kind::Json).example(json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "what to say"}},
                "required": ["message"]
            })),
        ],
        http_methods: HTTP_METHODS.to_vec(),
        limits: Limits {
            max_nodes: limits::MAX_NODES,
            max_id_len: limits::MAX_ID_LEN,
            request_body_bytes: limits::REQUEST_BODY_BYTES,
            json_depth: limits::JSON_DEPTH,
            step_output_bytes: limits::STEP_OUTPUT_BYTES,
            event_depth: limits::EVENT_DEPTH,
        },
    }
}

/// The document as JSON.
pub fn schema_json() -> Value {
    serde_json::to_value(schema()).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests;
