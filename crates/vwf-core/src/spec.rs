//! Typed views of a node's flat fields (SPEC §3), with defaults applied and ranges checked.
//!
//! `Spec::parse` is the only place that reads a node's type-specific fields: the validator calls it
//! to report problems, the engine calls it to run a step, so the two can never disagree.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::design::{Design, NODE_TYPES, Node, NodeKind};
use crate::limits::{self, within};
use crate::names::DesignName;
use crate::trigger::Trigger;
use crate::validate::Issue;
use crate::{schedule, shell, template};

pub use crate::vocab::{Deliver, EventTimeout, OnTimeout, Platform};

/// One node's typed fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Spec {
    Trigger(Trigger),
    Agent {
        prompt: String,
        profile: Option<String>,
        model: Option<String>,
        retries: u32,
        timeout_seconds: u64,
        max_tokens: Option<u64>,
        /// Saved designs the model may call as tools (each run as a child run).
        tools: Vec<DesignName>,
    },
    Condition {
        expr: String,
    },
    Approval {
        question: String,
        options: Vec<String>,
        timeout_minutes: Option<u64>,
        on_timeout: OnTimeout,
        /// The form the answer fills in (see [`crate::form`]).
        fields: Vec<crate::form::FormField>,
        /// Earlier steps whose text the person may change.
        edit: Vec<String>,
        /// How many people answer, who may, which answers end it at once (see
        /// [`crate::approvers`]); `None`: the first answer decides.
        approvers: Option<crate::approvers::Approvers>,
        /// Where the question goes when the gate opens (`telegram:<chat>`, `slack:<channel>`,
        /// `webhook:<name>`).
        notify: Vec<String>,
        /// The template of what the notifications show beside the question; default: the
        /// texts of the gate's parents.
        context: Option<String>,
    },
    Output {
        deliver: Option<Deliver>,
        target: Option<String>,
        template: Option<String>,
        timeout_seconds: u64,
    },
    Note,
    Command(CommandStep),
    Http(HttpStep),
    Loop {
        over: String,
        max_items: u64,
        concurrency: u64,
    },
    Wait {
        seconds: u64,
    },
    Emit {
        event: String,
        payload: Option<Value>,
        timeout_seconds: u64,
    },
    /// Parks the run until an event named `event` whose payload satisfies `matches` arrives.
    WaitEvent {
        event: String,
        matches: Option<String>,
        timeout_seconds: Option<u64>,
        on_timeout: EventTimeout,
    },
    /// Starts a run of the saved design `design` (a child run) with `input` rendered; `wait`:
    /// park until it ends and take its outputs; `version`: the design version to run (else the
    /// one the run's plan pinned when it started).
    Design {
        design: DesignName,
        input: Option<Value>,
        wait: bool,
        version: Option<u64>,
    },
}

/// The methods an http node may use, and the one it uses when it names none.
pub const HTTP_METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
pub const HTTP_METHOD_DEFAULT: &str = "GET";
/// The statuses an http node accepts when it names none (`accept: "2xx"`).
pub const HTTP_ACCEPT_DEFAULT: (u16, u16) = (200, 299);
/// An approval's answers when it lists none.
pub const APPROVAL_OPTIONS_DEFAULT: [&str; 2] = ["approve", "reject"];

/// What a command step runs: its `run` string through `sh -c`, or its `argv` with no shell.
#[derive(Debug, Clone, PartialEq)]
pub enum Program {
    Shell(String),
    Argv(Vec<String>),
}

/// A command step's fields. The same type is the node's spec (templates as written) and the
/// driver's task (rendered: a shell script whose template values are in `env`, argv items as text).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandStep {
    pub program: Program,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
    pub timeout_seconds: u64,
}

/// An http step's fields: the node's spec, and rendered, the driver's task.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpStep {
    pub url: String,
    pub method: String,
    pub headers: BTreeMap<String, String>,
    pub body: Option<Value>,
    pub timeout_seconds: u64,
    /// Accepted status ranges, inclusive.
    pub accept: Vec<(u16, u16)>,
}

/// Reads fields of one node, collecting every problem instead of stopping at the first.
struct Fields<'a> {
    node: &'a Node,
    issues: Vec<Issue>,
}

impl<'a> Fields<'a> {
    fn issue(&mut self, field: &str, message: impl Into<String>) {
        self.issues.push(Issue::node_field(&self.node.id, field, message));
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        match self.node.raw.get(name) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    fn string(&mut self, name: &str) -> Option<String> {
        match self.get(name) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.issue(name, format!("\"{name}\" must be a string"));
                None
            }
        }
    }

    fn required_string(&mut self, name: &str) -> String {
        match self.string(name) {
            Some(s) if !s.trim().is_empty() => s,
            Some(_) => {
                self.issue(name, format!("\"{name}\" must not be empty"));
                String::new()
            }
            None => {
                if self.get(name).is_none() {
                    self.issue(name, format!("{} node needs \"{name}\"", self.node.type_name()));
                }
                String::new()
            }
        }
    }

    /// An optional whole number within `range`; `unit` names it in the message.
    fn ranged(&mut self, name: &str, range: (u64, u64), unit: &str) -> Option<u64> {
        let v = self.get(name)?;
        match v.as_u64() {
            Some(n) if within(n, range) => Some(n),
            _ => {
                self.issue(name, format!("\"{name}\" must be a whole number from {} to {}{unit}, got {v}", range.0, range.1));
                None
            }
        }
    }

    /// An optional canvas position: any JSON number within [`limits::CANVAS_COORDINATE`] of 0.
    fn coordinate(&mut self, name: &str) {
        let Some(v) = self.get(name) else { return };
        let bound = limits::CANVAS_COORDINATE;
        if !v.as_f64().is_some_and(|x| x.abs() <= bound) {
            self.issue(name, format!("\"{name}\" must be a number from -{bound} to {bound}, got {v}"));
        }
    }

    fn string_map(&mut self, name: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        match self.get(name) {
            None => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    match v {
                        Value::String(s) => {
                            out.insert(k.clone(), s.clone());
                        }
                        _ => self.issue(name, format!("\"{name}.{k}\" must be a string")),
                    }
                }
            }
            Some(_) => self.issue(name, format!("\"{name}\" must be an object of strings")),
        }
        out
    }
}

impl Spec {
    /// Parses one node's typed fields; every problem found is returned at once.
    pub fn parse(node: &Node) -> Result<Spec, Vec<Issue>> {
        let (spec, issues) = Spec::parse_lenient(node);
        if issues.is_empty() { Ok(spec) } else { Err(issues) }
    }

    /// Like `parse`, but also gives the spec made of the fields that could be read (defaults for
    /// the rest), so the validator can go on checking edges and references of a flawed node.
    /// The fields every node may carry are read here; its kind's own, by that kind's reader.
    pub fn parse_lenient(node: &Node) -> (Spec, Vec<Issue>) {
        let mut f = Fields { node, issues: Vec::new() };
        f.coordinate("x");
        f.coordinate("y");
        let (_, issues) = crate::recovery::parse(node);
        f.issues.extend(issues);
        let spec = match node.kind {
            Some(NodeKind::Trigger) => parse_trigger(&mut f),
            Some(NodeKind::Agent) => parse_agent(&mut f),
            Some(NodeKind::Condition) => parse_condition(&mut f),
            Some(NodeKind::Approval) => parse_approval(&mut f),
            Some(NodeKind::Output) => parse_output(&mut f),
            Some(NodeKind::Note) => Spec::Note,
            Some(NodeKind::Command) => parse_command(&mut f),
            Some(NodeKind::Http) => parse_http(&mut f),
            Some(NodeKind::Loop) => parse_loop(&mut f),
            Some(NodeKind::Wait) => parse_wait(&mut f),
            Some(NodeKind::Emit) => parse_emit(&mut f),
            Some(NodeKind::WaitEvent) => parse_wait_event(&mut f),
            Some(NodeKind::Design) => parse_design(&mut f),
            None => parse_unknown(&mut f),
        };
        if let Spec::Output { deliver: None, .. } = spec {
            let given: Vec<&str> = ["retry", "on_error"].into_iter().filter(|k| f.get(k).is_some()).collect();
            for field in given {
                f.issue(
                    field,
                    format!("an output without \"deliver\" sends nothing, so it has nothing to retry and cannot fail; drop \"{field}\""),
                );
            }
        }
        (spec, f.issues)
    }

    /// Every template string this node carries, with the field it sits in.
    pub fn templates(&self) -> Vec<(&'static str, &str)> {
        let mut out: Vec<(&'static str, &str)> = Vec::new();
        match self {
            Spec::Agent { prompt, .. } => out.push(("prompt", prompt)),
            Spec::Approval { question, context, .. } => {
                out.push(("question", question));
                if let Some(c) = context {
                    out.push(("context", c));
                }
            }
            Spec::Output { template: Some(t), .. } => out.push(("template", t)),
            Spec::Command(CommandStep { program, cwd, env, .. }) => {
                match program {
                    Program::Shell(r) => out.push(("run", r)),
                    Program::Argv(argv) => argv.iter().for_each(|a| out.push(("argv", a))),
                }
                if let Some(c) = cwd {
                    out.push(("cwd", c));
                }
                for v in env.values() {
                    out.push(("env", v));
                }
            }
            Spec::Http(HttpStep { url, headers, body, .. }) => {
                out.push(("url", url));
                for v in headers.values() {
                    out.push(("headers", v));
                }
                if let Some(b) = body {
                    json_strings(b, "body", &mut out);
                }
            }
            Spec::Loop { over, .. } => out.push(("over", over)),
            Spec::Emit { payload: Some(p), .. } => json_strings(p, "payload", &mut out),
            Spec::WaitEvent { matches: Some(m), .. } => out.push(("match", m)),
            Spec::Design { input: Some(i), .. } => json_strings(i, "input", &mut out),
            _ => {}
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// One reader per node kind: each reads its kind's fields through `f`, records every problem
// there, and answers the spec made of what it could read (defaults for the rest).
// ---------------------------------------------------------------------------------------------

/// A trigger node: its mode and that mode's fields ([`Trigger::parse`]).
fn parse_trigger(f: &mut Fields) -> Spec {
    match Trigger::parse(&f.node.raw) {
        Ok(trigger) => Spec::Trigger(trigger),
        Err(issues) => {
            for e in issues {
                let field = e.field.clone().unwrap_or_else(|| "mode".into());
                f.issue(&field, e.message);
            }
            // Reported above; a lenient reader goes on as if it were started by hand.
            Spec::Trigger(Trigger::Manual)
        }
    }
}

/// An agent step: its prompt, profile, model, retries, timeout and token cap.
fn parse_agent(f: &mut Fields) -> Spec {
    let prompt = f.required_string("prompt");
    let profile = f.string("profile");
    let model = f.string("model");
    let retries = f.ranged("retries", limits::AGENT_RETRIES, "").unwrap_or(0) as u32;
    let timeout_seconds = f.ranged("timeout_seconds", limits::AGENT_TIMEOUT_SECONDS, " seconds").unwrap_or(limits::AGENT_TIMEOUT_DEFAULT);
    let max_tokens = f.ranged("max_tokens", limits::AGENT_MAX_TOKENS, "");
    let tools = design_names(f, "tools", limits::AGENT_TOOLS);
    rate_limit(f);
    Spec::Agent { prompt, profile, model, retries, timeout_seconds, max_tokens, tools }
}

/// A condition: its expression.
fn parse_condition(f: &mut Fields) -> Spec {
    Spec::Condition { expr: f.required_string("expr") }
}

/// An approval gate: its question, options and deadline.
fn parse_approval(f: &mut Fields) -> Spec {
    let question = f.required_string("question");
    let options = match f.get("options") {
        None => APPROVAL_OPTIONS_DEFAULT.map(String::from).to_vec(),
        Some(Value::Array(items)) => {
            let mut opts = Vec::new();
            for item in items {
                match item.as_str().map(str::trim) {
                    Some(s) if !s.is_empty() => {
                        if opts.iter().any(|o: &String| o.eq_ignore_ascii_case(s)) {
                            f.issue("options", format!("option {s:?} is listed twice"));
                        }
                        opts.push(s.to_string());
                    }
                    _ => f.issue("options", "every option must be a non-empty string"),
                }
            }
            if items.is_empty() {
                f.issue("options", "\"options\" must list at least one answer");
            }
            opts
        }
        Some(_) => {
            f.issue("options", "\"options\" must be an array of strings");
            Vec::new()
        }
    };
    let timeout_minutes = f.ranged("timeout_minutes", limits::APPROVAL_TIMEOUT_MINUTES, " minutes");
    let on_timeout = match f.string("on_timeout") {
        None => OnTimeout::DEFAULT,
        Some(s) => match s.parse::<OnTimeout>() {
            Ok(o) => o,
            Err(_) => {
                let known = either(OnTimeout::ALL.iter().map(OnTimeout::as_str));
                f.issue("on_timeout", format!("\"on_timeout\" is {known}, got {s:?}"));
                OnTimeout::DEFAULT
            }
        },
    };
    let (fields, problems) = crate::form::parse_fields(f.get("fields"));
    problems.into_iter().for_each(|p| f.issue("fields", p));
    let (edit, problems) = crate::form::parse_edit(f.get("edit"));
    problems.into_iter().for_each(|p| f.issue("edit", p));
    let (approvers, problems) = crate::approvers::parse_approvers(f.get("approvers"), &options);
    problems.into_iter().for_each(|p| f.issue("approvers", p));
    let (notify, problems) = crate::approvers::parse_notify(f.get("notify"));
    problems.into_iter().for_each(|p| f.issue("notify", p));
    let context = f.string("context").filter(|c| !c.trim().is_empty());
    Spec::Approval { question, options, timeout_minutes, on_timeout, fields, edit, approvers, notify, context }
}

/// An output: its template and where it is delivered.
fn parse_output(f: &mut Fields) -> Spec {
    let deliver = match f.string("deliver").as_deref() {
        None | Some("") => None,
        Some(s) => match s.parse::<Deliver>() {
            Ok(d) => Some(d),
            Err(_) => {
                let known = either(Deliver::ALL.iter().map(Deliver::as_str));
                f.issue("deliver", format!("\"deliver\" is {known}, got {s:?}"));
                None
            }
        },
    };
    let target = f.string("target").filter(|t| !t.trim().is_empty()).map(|t| t.trim().to_string());
    let template = f.string("template");
    match (&deliver, &target) {
        (Some(d), None) => f.issue("target", format!("deliver: {d} needs a \"target\"")),
        (None, Some(_)) => f.issue("deliver", "a \"target\" needs \"deliver\" (notification or channel)"),
        (Some(d), Some(t)) => {
            if let Err(e) = check_target(d, t) {
                f.issue("target", e);
            }
        }
        (None, None) => {}
    }
    let timeout_seconds =
        f.ranged("timeout_seconds", limits::DELIVER_TIMEOUT_SECONDS, " seconds").unwrap_or(limits::DELIVER_TIMEOUT_DEFAULT);
    Spec::Output { deliver, target, template, timeout_seconds }
}

/// A command step: `run` (a shell string) or `argv`, with its directory, environment and timeout.
fn parse_command(f: &mut Fields) -> Spec {
    let run = f.string("run");
    let argv = match f.get("argv") {
        None => None,
        Some(Value::Array(items)) if !items.is_empty() && items.iter().all(Value::is_string) => {
            Some(items.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        }
        Some(_) => {
            f.issue("argv", "\"argv\" must be a non-empty array of strings");
            None
        }
    };
    match (&run, &argv, f.get("argv")) {
        (Some(_), Some(_), _) => f.issue("run", "give either \"run\" or \"argv\", not both"),
        (None, None, None) => f.issue("run", "command node needs \"run\" (a shell string) or \"argv\" (an array)"),
        (Some(r), None, _) if r.trim().is_empty() => f.issue("run", "\"run\" must not be empty"),
        _ => {}
    }
    if let Some(Ok(t)) = run.as_deref().map(template::parse)
        && let Err(e) = shell::compile(&t)
    {
        f.issue("run", e.0);
    }
    let cwd = f.string("cwd");
    let env = f.string_map("env");
    let parsed_argv: Option<Result<Vec<template::Template>, _>> =
        argv.as_ref().map(|a: &Vec<String>| a.iter().map(|w| template::parse(w)).collect());
    if let Some(Ok(parsed)) = parsed_argv
        && let Err(e) = shell::check_argv(&parsed)
    {
        f.issue("argv", e.0);
    }
    for (name, value) in &env {
        if shell::is_code_variable(name) && template::parse(value).is_ok_and(|t| t.refs().next().is_some()) {
            f.issue("env", format!("env.{name}: {name} decides which code runs, so it cannot take a template value"));
        }
    }
    if env.keys().any(|k| k.starts_with(shell::VALUE_VAR_PREFIX)) {
        f.issue(
            "env",
            format!(
                "environment names starting with {} carry template values into the command; choose another name",
                shell::VALUE_VAR_PREFIX
            ),
        );
    }
    let timeout_seconds =
        f.ranged("timeout_seconds", limits::COMMAND_TIMEOUT_SECONDS, " seconds").unwrap_or(limits::COMMAND_TIMEOUT_DEFAULT);
    // Both or neither were reported above; a lenient reader goes on with one of them.
    let program = match (run, argv) {
        (Some(run), _) => Program::Shell(run),
        (None, argv) => Program::Argv(argv.unwrap_or_default()),
    };
    Spec::Command(CommandStep { program, cwd, env, timeout_seconds })
}

/// An http step: its request and the statuses it accepts.
fn parse_http(f: &mut Fields) -> Spec {
    let url = f.required_string("url");
    let scheme_ok = {
        let lower = url.trim_start().to_ascii_lowercase();
        lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("{{")
    };
    if !url.is_empty() && !scheme_ok {
        f.issue("url", "\"url\" must start with http:// or https://");
    }
    let method = f.string("method").map(|m| m.trim().to_ascii_uppercase()).unwrap_or_else(|| HTTP_METHOD_DEFAULT.into());
    if !HTTP_METHODS.contains(&method.as_str()) {
        f.issue("method", format!("unknown HTTP method {method:?}"));
    }
    let headers = f.string_map("headers");
    let body = f.get("body").cloned();
    let timeout_seconds = f.ranged("timeout_seconds", limits::HTTP_TIMEOUT_SECONDS, " seconds").unwrap_or(limits::HTTP_TIMEOUT_DEFAULT);
    let accept = match f.get("accept") {
        None => vec![HTTP_ACCEPT_DEFAULT],
        Some(v) => match parse_accept(v) {
            Ok(a) => a,
            Err(e) => {
                f.issue("accept", e);
                vec![HTTP_ACCEPT_DEFAULT]
            }
        },
    };
    rate_limit(f);
    Spec::Http(HttpStep { url, method, headers, body, timeout_seconds, accept })
}

/// `rate_limit`: the name of a `[limits."<name>"]` the step shares (read by the runner, which
/// knows the config; checked here for its shape).
fn rate_limit(f: &mut Fields) {
    match f.get(crate::rate::FIELD) {
        None => {}
        Some(Value::String(name)) if crate::rate::is_name(name) => {}
        Some(_) => {
            f.issue(crate::rate::FIELD, "\"rate_limit\" names a [limits.<name>] of the config: 1 to 64 letters, digits, '_', '-' or '.'")
        }
    }
}

/// A loop: what it runs over, how many items at most, how many at once.
fn parse_loop(f: &mut Fields) -> Spec {
    let over = f.required_string("over");
    let max_items = f.ranged("max_items", limits::LOOP_MAX_ITEMS, " items").unwrap_or(limits::LOOP_MAX_ITEMS_DEFAULT);
    let concurrency = f.ranged("concurrency", limits::LOOP_CONCURRENCY, "").unwrap_or(limits::LOOP_CONCURRENCY_DEFAULT);
    Spec::Loop { over, max_items, concurrency }
}

/// A wait: its seconds or duration.
fn parse_wait(f: &mut Fields) -> Spec {
    let seconds = match schedule::wait_seconds(&f.node.raw) {
        Ok(s) => s,
        Err(e) => {
            let field = e.field.clone().unwrap_or_else(|| "seconds".into());
            f.issue(&field, e.message);
            0
        }
    };
    Spec::Wait { seconds }
}

/// An emit step: its event name and payload.
fn parse_emit(f: &mut Fields) -> Spec {
    let event = f.required_string("event");
    if !event.is_empty() && !crate::trigger::is_event_name(&event) {
        f.issue("event", format!("bad event name {event:?}: use letters, digits, '_', '.', ':' and '-'"));
    }
    let timeout_seconds = f.ranged("timeout_seconds", limits::EMIT_TIMEOUT_SECONDS, " seconds").unwrap_or(limits::EMIT_TIMEOUT_DEFAULT);
    Spec::Emit { event, payload: f.get("payload").cloned(), timeout_seconds }
}

/// A wait for an event: its name, the match its payload must satisfy, and how long it waits.
fn parse_wait_event(f: &mut Fields) -> Spec {
    let event = f.required_string("event");
    if !event.is_empty() && !crate::trigger::is_event_name(&event) {
        f.issue("event", format!("bad event name {event:?}: use letters, digits, '_', '.', ':' and '-'"));
    }
    let matches = f.string("match").filter(|m| !m.trim().is_empty());
    if let Some(m) = &matches
        && let Err(e) = crate::expr::parse_event_match(m, true)
    {
        f.issue("match", e.0);
    }
    let (min, max) = limits::EVENT_WAIT_SECONDS;
    let timeout_seconds = match f.get("timeout") {
        None => None,
        Some(v) => match schedule::duration_or_seconds(v, min, max, "a year") {
            Ok(s) if s >= min => Some(s),
            Ok(_) => {
                f.issue("timeout", "\"timeout\" must be at least one second");
                None
            }
            Err(e) => {
                f.issue("timeout", format!("\"timeout\" {e}"));
                None
            }
        },
    };
    let on_timeout = match f.string("on_timeout") {
        None => EventTimeout::Fail,
        Some(s) => s.parse::<EventTimeout>().unwrap_or_else(|_| {
            let known = either(EventTimeout::ALL.iter().map(EventTimeout::as_str));
            f.issue("on_timeout", format!("\"on_timeout\" is {known}, got {s:?}"));
            EventTimeout::Fail
        }),
    };
    Spec::WaitEvent { event, matches, timeout_seconds, on_timeout }
}

/// A list of design names (an agent's `tools`): at most `max`, each once.
fn design_names(f: &mut Fields, field: &str, max: usize) -> Vec<DesignName> {
    let Some(v) = f.get(field) else { return Vec::new() };
    let Some(items) = v.as_array() else {
        f.issue(field, format!("\"{field}\" must be a list of saved design names"));
        return Vec::new();
    };
    if items.len() > max {
        f.issue(field, format!("\"{field}\" names {} designs; at most {max}", items.len()));
    }
    let mut out: Vec<DesignName> = Vec::new();
    for item in items {
        match item.as_str().map(DesignName::parse) {
            Some(Ok(name)) if out.contains(&name) => f.issue(field, format!("design {name} is listed twice")),
            Some(Ok(name)) => out.push(name),
            Some(Err(e)) => f.issue(field, format!("\"{field}\" names no design: {e}")),
            None => f.issue(field, format!("\"{field}\" must be a list of saved design names")),
        }
    }
    out
}

/// A design step: the design it calls, the input it gives, whether it waits, which version.
fn parse_design(f: &mut Fields) -> Spec {
    let name = f.required_string("design");
    let design = match DesignName::parse(name.trim()) {
        Ok(d) => Some(d),
        Err(e) => {
            if !name.trim().is_empty() {
                f.issue("design", format!("\"design\" must name a saved design: {e}"));
            }
            None
        }
    };
    let wait = match f.get("wait") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            f.issue("wait", format!("\"wait\" must be true or false, got {v}"));
            true
        }
    };
    let version = f.ranged("version", limits::DESIGN_VERSION, "");
    // A lenient reader goes on with a name that reads, for the rest of the checks.
    let design = design.unwrap_or_else(|| DesignName::parse("unnamed").unwrap_or_else(|_| unreachable!("a valid design name")));
    Spec::Design { design, input: f.get("input").cloned(), wait, version }
}

/// A type outside SPEC §3: reported, read on as a note.
fn parse_unknown(f: &mut Fields) -> Spec {
    f.issue("type", format!("unknown node type {:?}; known types: {}", f.node.type_name(), NODE_TYPES.join(", ")));
    Spec::Note
}

/// `a, b or c`: a closed list of words in a message.
pub(crate) fn either<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let words: Vec<&str> = words.into_iter().collect();
    match words.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

fn json_strings<'a>(v: &'a Value, field: &'static str, out: &mut Vec<(&'static str, &'a str)>) {
    match v {
        Value::String(s) => out.push((field, s)),
        Value::Array(items) => items.iter().for_each(|i| json_strings(i, field, out)),
        Value::Object(m) => m.values().for_each(|i| json_strings(i, field, out)),
        _ => {}
    }
}

/// `accept`: a status (200), a class ("2xx"), a range ("200-299") or a list of those.
fn parse_accept(v: &Value) -> Result<Vec<(u16, u16)>, String> {
    let one = |v: &Value| -> Result<(u16, u16), String> {
        let bad = || format!("bad accepted status {v}: use 200, \"2xx\" or \"200-299\"");
        match v {
            Value::Number(n) => {
                let s = n.as_u64().filter(|s| (100..=599).contains(s)).ok_or_else(bad)? as u16;
                Ok((s, s))
            }
            Value::String(s) => {
                let s = s.trim().to_ascii_lowercase();
                if s.len() == 3 && s.ends_with("xx") {
                    let d = s[..1].parse::<u16>().map_err(|_| bad())?;
                    if !(1..=5).contains(&d) {
                        return Err(bad());
                    }
                    return Ok((d * 100, d * 100 + 99));
                }
                let parse = |p: &str| p.trim().parse::<u16>().ok().filter(|s| (100..=599).contains(s));
                match s.split_once('-') {
                    Some((a, b)) => match (parse(a), parse(b)) {
                        (Some(a), Some(b)) if a <= b => Ok((a, b)),
                        _ => Err(bad()),
                    },
                    None => parse(&s).map(|x| (x, x)).ok_or_else(bad),
                }
            }
            _ => Err(bad()),
        }
    };
    match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        Value::Array(_) => Err("\"accept\" must list at least one status".into()),
        other => one(other).map(|r| vec![r]),
    }
}

/// Delivery target syntax (§3): `platform` for notification, `platform:chat` for channel.
pub fn check_target(deliver: &Deliver, target: &str) -> Result<(), String> {
    match deliver {
        Deliver::Notification => {
            if target.parse::<Platform>().is_ok_and(Platform::has_home) {
                Ok(())
            } else {
                Err(format!(
                    "deliver: notification takes a platform with a home channel ({}), got {target:?}",
                    Platform::list(Platform::has_home)
                ))
            }
        }
        Deliver::Channel => {
            let Some((platform, chat)) = target.split_once(':') else {
                return Err(format!("deliver: channel takes platform:chat (e.g. telegram:123456, slack:#ops), got {target:?}"));
            };
            let Ok(platform) = platform.parse::<Platform>() else {
                return Err(format!("unknown delivery platform {platform:?}; known: {}", Platform::list(|_| true)));
            };
            let name_ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            let ok = match platform {
                Platform::Telegram => {
                    let mut parts = chat.split(':');
                    let chat_ok = parts.next().is_some_and(|c| {
                        let digits = c.strip_prefix('-').unwrap_or(c);
                        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())) || (c.starts_with('@') && name_ok(&c[1..]))
                    });
                    let thread_ok = parts.next().is_none_or(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
                    chat_ok && thread_ok && parts.next().is_none()
                }
                Platform::Slack => {
                    let c = chat.strip_prefix('#').unwrap_or(chat);
                    name_ok(c)
                }
                Platform::Discord | Platform::Webhook => name_ok(chat),
            };
            if ok { Ok(()) } else { Err(format!("bad {platform} target {target:?}")) }
        }
    }
}

/// The `deliver` value of a Hermes cron job that runs `design` (SPEC §19): the targets of its output
/// nodes that name a Hermes destination ([`Platform::reached_by_hermes`]), in node order, without repeats,
/// comma-joined as Hermes reads them (`telegram`, `telegram:-100123:17585,slack:#ops`). `None` when no
/// output node names one: Hermes then keeps its own default.
pub fn hermes_deliver(design: &Design) -> Option<String> {
    let mut targets: Vec<String> = Vec::new();
    for node in design.nodes.iter().filter(|n| n.is(NodeKind::Output)) {
        let Ok(Spec::Output { deliver: Some(deliver), target: Some(target), .. }) = Spec::parse(node) else {
            continue;
        };
        let platform = match deliver {
            Deliver::Notification => target.as_str(),
            Deliver::Channel => target.split_once(':').map_or("", |(platform, _)| platform),
        };
        if platform.parse::<Platform>().is_ok_and(Platform::reached_by_hermes) && !targets.contains(&target) {
            targets.push(target);
        }
    }
    (!targets.is_empty()).then(|| targets.join(","))
}

/// The node map's `type` field, for callers holding only raw JSON.
pub fn kind_of(raw: &Map<String, Value>) -> &str {
    raw.get("type").and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
