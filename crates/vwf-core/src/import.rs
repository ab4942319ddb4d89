//! `vwf import`: the workflows of an agent.json (the seeds' format) turned into designs (SPEC §2).
//!
//! An agent.json keys its workflows by name; each has a trigger, a list of activities and, for
//! the graph form, connections where `__trigger__` is the entry and `__emit__` the announcement
//! that the workflow finished. The importer maps what has a clear equivalent and says what it
//! could not map, rather than guessing.
//!
//! Invariants:
//! - Pure and total: any JSON value gives a report, never a panic.
//! - Every design name is a valid design name (sanitized, unique within the report); a change is
//!   noted. Node ids are valid and unique; the trigger is `start`, the `__emit__` node `emit`.
//! - Every design is returned, valid or not; a design the validator rejects has each of its
//!   errors in `notes`. Fields without an equivalent stay on their node or design (designs keep
//!   unknown fields) and are listed in `notes`; nothing is dropped silently.
//! - Notes are prefixed with the design name they concern.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::limits::MAX_ID_LEN;
use crate::schedule;
use crate::validate::{self, Issue};

/// What `vwf import` made of an agent.json: one design per workflow, in document order, and what
/// could not be mapped.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ImportReport {
    /// `(design name, design JSON)`.
    pub designs: Vec<(String, Value)>,
    /// One line per thing that could not be mapped, each starting with `<design name>: `.
    pub notes: Vec<String>,
}

/// The id of the trigger node every imported design starts with.
pub const TRIGGER_ID: &str = "start";
/// The id of the node `__emit__` connections lead to.
pub const EMIT_ID: &str = "emit";

const TRIGGER_ENDPOINT: &str = "__trigger__";
const EMIT_ENDPOINT: &str = "__emit__";

/// Horizontal layout: column `i` is at `x = 40 + 180 * i`; rows in a column 140 apart from 120.
const X0: u64 = 40;
const DX: u64 = 180;
const Y0: u64 = 120;
const DY: u64 = 140;

/// Turns every workflow of an agent.json into a design.
///
/// Accepted shapes: `{"workflows": {<name>: <workflow>}}`, `{"workflows": [{"name", ...}]}`, or a
/// single workflow at the top level (`trigger`/`activities` without `workflows`). A workflow that
/// already has `nodes` is taken as a design and only checked.
pub fn import_agent_json(doc: &Value) -> ImportReport {
    let mut report = ImportReport::default();
    let mut taken = HashSet::new();
    let Some(top) = doc.as_object() else {
        report.notes.push(format!(
            "agent.json: expected a JSON object with \"workflows\", got {}",
            kind_of(doc)
        ));
        return report;
    };
    let workflows: Vec<(String, &Value)> = match top.get("workflows") {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let name = ["name", "id", "key", "title"]
                    .iter()
                    .find_map(|k| item.get(k).and_then(Value::as_str))
                    .map_or_else(|| format!("workflow-{}", i + 1), str::to_string);
                (name, item)
            })
            .collect(),
        Some(other) => {
            report.notes.push(format!(
                "agent.json: \"workflows\" must map names to workflows, got {}",
                kind_of(other)
            ));
            return report;
        }
        None if top.contains_key("activities") || top.contains_key("trigger") => {
            let name = top
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("workflow");
            vec![(name.to_string(), doc)]
        }
        None => {
            report
                .notes
                .push("agent.json: no \"workflows\" found; nothing to import".to_string());
            return report;
        }
    };
    if workflows.is_empty() {
        report
            .notes
            .push("agent.json: \"workflows\" is empty; nothing to import".to_string());
    }
    for (key, wf) in workflows {
        let name = design_name(&key, &taken);
        taken.insert(name.clone());
        let mut notes = Notes {
            design: name.clone(),
            out: &mut report.notes,
        };
        if name != key {
            notes.add(format!(
                "workflow {key:?} renamed to {name:?} (design names are letters, digits, '.', '_' and '-', starting with a letter or digit, at most {MAX_ID_LEN})"
            ));
        }
        let Some(design) = import_workflow(&name, wf, &mut notes) else {
            continue;
        };
        for issue in validate::validate(&design).errors {
            notes.add(format!("not valid as imported: {}", describe_issue(&issue)));
        }
        report.designs.push((name, design));
    }
    report
}

/// Notes about one workflow, prefixed with its design name.
struct Notes<'a> {
    design: String,
    out: &'a mut Vec<String>,
}

impl Notes<'_> {
    fn add(&mut self, message: impl AsRef<str>) {
        self.out
            .push(format!("{}: {}", self.design, message.as_ref()));
    }
}

fn import_workflow(name: &str, wf: &Value, notes: &mut Notes) -> Option<Value> {
    let mut wf = match wf {
        Value::Object(m) => m.clone(),
        Value::Array(_) => {
            let mut m = Map::new();
            m.insert("activities".into(), wf.clone());
            m
        }
        other => {
            notes.add(format!(
                "a workflow must be an object with a trigger and activities, got {}; skipped",
                kind_of(other)
            ));
            return None;
        }
    };
    if matches!(wf.get("nodes"), Some(Value::Array(_))) {
        notes.add("already in design form (it has \"nodes\"); copied as is");
        wf.remove("name");
        return Some(Value::Object(wf));
    }
    wf.remove("name");

    let mut graph = Graph::default();
    graph.add(trigger_node(
        take(&mut wf, &["trigger", "triggers", "on"]),
        notes,
    ));

    let activities = match take(&mut wf, &["activities", "steps", "nodes", "tasks"]) {
        None => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            notes.add(format!(
                "activities must be a list, got {}; the design has no steps",
                kind_of(&other)
            ));
            Vec::new()
        }
    };
    if activities.is_empty() {
        notes.add("the workflow has no activities");
    }
    for (i, item) in activities.iter().enumerate() {
        activity(i, item, &mut graph, notes);
    }

    let emit = emit_spec(
        take(&mut wf, &["emit", "emits", "emit_event", "done_event"]),
        name,
        notes,
    );
    match take(&mut wf, &["connections", "edges", "links"]) {
        None => chain(&mut graph, &emit),
        Some(Value::Array(items)) if items.is_empty() => {
            notes.add("connections is empty; the activities are chained in order");
            chain(&mut graph, &emit);
        }
        Some(Value::Object(map)) if map.is_empty() => {
            notes.add("connections is empty; the activities are chained in order");
            chain(&mut graph, &emit);
        }
        Some(conns) => {
            connections(&conns, &mut graph, &emit, notes);
            drop_loop_back_edges(&mut graph, notes);
        }
    }

    let mut design = Map::new();
    if let Some(description) = take(&mut wf, &["description", "summary", "about"]) {
        design.insert("description".into(), description);
    }
    if let Some(budget) = run_budget(&mut wf, notes) {
        design.insert("budget".into(), budget);
    }
    graph.layout();
    design.insert(
        "nodes".into(),
        Value::Array(graph.nodes.into_iter().map(Value::Object).collect()),
    );
    let edges: Vec<Value> = graph
        .edges
        .into_iter()
        .map(|(from, to, label)| match label {
            Some(l) => json!({"from": from, "to": to, "label": l}),
            None => json!({"from": from, "to": to}),
        })
        .collect();
    design.insert("edges".into(), Value::Array(edges));
    if !wf.is_empty() {
        let keys: Vec<&str> = wf.keys().map(String::as_str).collect();
        notes.add(format!(
            "workflow fields kept without an equivalent: {}",
            keys.join(", ")
        ));
        for (k, v) in wf {
            design.entry(k).or_insert(v);
        }
    }
    Some(Value::Object(design))
}

// ---------------------------------------------------------------------------------------------
// The graph being built
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Graph {
    nodes: Vec<Map<String, Value>>,
    edges: Vec<(String, String, Option<String>)>,
    /// Names an agent.json may use for a node (its `id`, `name`, …) → the node's id.
    aliases: HashMap<String, String>,
    ids: HashSet<String>,
}

impl Graph {
    fn add(&mut self, node: Map<String, Value>) {
        if let Some(id) = node.get("id").and_then(Value::as_str) {
            self.ids.insert(id.to_string());
        }
        self.nodes.push(node);
    }

    fn connect(&mut self, from: &str, to: &str, label: Option<String>) {
        let edge = (from.to_string(), to.to_string(), label);
        if !self.edges.contains(&edge) {
            self.edges.push(edge);
        }
    }

    /// Columns by longest path from the sources, rows by order within a column. A chain gets
    /// `x = 40 + 180 * i`. Positions already given (numeric `x` and `y`) are kept.
    fn layout(&mut self) {
        let index: HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((n.get("id")?.as_str()?, i)))
            .collect();
        let links: Vec<(usize, usize)> = self
            .edges
            .iter()
            .filter_map(|(f, t, _)| Some((*index.get(f.as_str())?, *index.get(t.as_str())?)))
            .filter(|(f, t)| f != t)
            .collect();
        let n = self.nodes.len();
        let mut indegree = vec![0usize; n];
        for &(_, t) in &links {
            indegree[t] += 1;
        }
        let mut column = vec![0u64; n];
        let mut placed = vec![false; n];
        let mut ready: Vec<usize> = (0..n).rev().filter(|&i| indegree[i] == 0).collect();
        while let Some(i) = ready.pop() {
            placed[i] = true;
            for &(f, t) in links.iter().filter(|(f, _)| *f == i) {
                column[t] = column[t].max(column[f] + 1);
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    ready.push(t);
                }
            }
        }
        // Nodes on a cycle (an invalid design, reported by the validator) go after the rest.
        let after_the_rest = column.iter().copied().max().unwrap_or(0) + 1;
        let stuck: Vec<usize> = (0..n).filter(|&i| !placed[i]).collect();
        for (col, i) in (after_the_rest..).zip(stuck) {
            column[i] = col;
        }
        let mut rows: BTreeMap<u64, u64> = BTreeMap::new();
        for (node, col) in self.nodes.iter_mut().zip(column) {
            let row = rows.entry(col).or_insert(0);
            let given = node.get("x").is_some_and(Value::is_number)
                && node.get("y").is_some_and(Value::is_number);
            if !given {
                node.insert("x".into(), json!(X0 + DX * col));
                node.insert("y".into(), json!(Y0 + DY * *row));
            }
            *row += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Trigger
// ---------------------------------------------------------------------------------------------

/// The mode names an agent.json may use, by our mode.
const MODE_ALIASES: [(&str, &[&str]); 6] = [
    (
        "manual",
        &["manual", "none", "on_demand", "on-demand", "ondemand"],
    ),
    ("schedule", &["schedule", "scheduled", "cron", "crontab"]),
    (
        "heartbeat",
        &["heartbeat", "interval", "every", "periodic", "recurring"],
    ),
    (
        "event",
        &["event", "events", "on_event", "listen", "listener"],
    ),
    (
        "folder",
        &[
            "folder",
            "file",
            "files",
            "fs",
            "filesystem",
            "directory",
            "path",
        ],
    ),
    (
        "watch",
        &["watch", "watcher", "stream", "plugin", "command"],
    ),
];

fn canonical_mode(text: &str) -> Option<&'static str> {
    let t = text.trim().to_ascii_lowercase();
    MODE_ALIASES
        .iter()
        .find(|(_, aliases)| aliases.contains(&t.as_str()))
        .map(|(mode, _)| *mode)
}

fn trigger_node(trigger: Option<Value>, notes: &mut Notes) -> Map<String, Value> {
    let mut node = Map::new();
    node.insert("id".into(), json!(TRIGGER_ID));
    node.insert("type".into(), json!("trigger"));
    let mut fields = match trigger {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(Value::Array(mut items)) if items.len() == 1 => match items.pop() {
            Some(Value::Object(m)) => m,
            Some(Value::String(s)) => string_trigger(&s),
            _ => Map::new(),
        },
        Some(Value::Array(items)) => {
            notes.add(format!(
                "a design has one trigger; this workflow lists {}: imported as manual",
                items.len()
            ));
            Map::new()
        }
        Some(Value::String(s)) => string_trigger(&s),
        Some(other) => {
            notes.add(format!(
                "trigger must be an object, got {}; imported as manual",
                kind_of(&other)
            ));
            Map::new()
        }
    };
    let named = take_str(&mut fields, &["type", "kind", "mode", "trigger"]);
    let mode = match &named {
        Some(n) => canonical_mode(n),
        None => infer_mode(&fields),
    };
    let mapped = match mode {
        None => {
            let what = named.unwrap_or_default();
            let why = if what.trim().eq_ignore_ascii_case("webhook") {
                " (inbound HTTP is not a trigger mode; send events with POST /events/{name} and an event trigger)"
            } else {
                ""
            };
            Err(format!(
                "trigger type {what:?} has no equivalent{why}; imported as manual"
            ))
        }
        Some("manual") => Ok(("manual", Map::new())),
        Some("schedule") => schedule_fields(&mut fields, notes).map(|m| ("schedule", m)),
        Some("heartbeat") => heartbeat_fields(&mut fields, notes).map(|m| ("heartbeat", m)),
        Some("event") => event_fields(&mut fields).map(|m| ("event", m)),
        Some("folder") => folder_fields(&mut fields).map(|m| ("folder", m)),
        Some(_) => watch_fields(&mut fields).map(|m| ("watch", m)),
    };
    match mapped {
        Ok((mode, mapped)) => {
            node.insert("mode".into(), json!(mode));
            node.extend(mapped);
        }
        Err(why) => {
            notes.add(why);
            node.insert("mode".into(), json!("manual"));
        }
    }
    let unused: Vec<&str> = fields
        .keys()
        .map(String::as_str)
        .filter(|k| !["label", "x", "y"].contains(k))
        .collect();
    if !unused.is_empty() {
        notes.add(format!(
            "trigger: fields kept without an equivalent: {}",
            unused.join(", ")
        ));
    }
    keep_leftovers(&mut node, fields, "trigger", notes);
    node
}

/// A trigger written as one string: a cron expression (`0 9 * * *`, `@daily`), else a mode name.
fn string_trigger(s: &str) -> Map<String, Value> {
    let mut m = Map::new();
    let t = s.trim();
    let cron_like = t.starts_with('@') || t.split_whitespace().count() >= 5;
    if canonical_mode(t).is_some() || !cron_like {
        m.insert("type".into(), json!(t));
    } else {
        m.insert("type".into(), json!("schedule"));
        m.insert("cron".into(), json!(s));
    }
    m
}

fn infer_mode(fields: &Map<String, Value>) -> Option<&'static str> {
    let has = |keys: &[&str]| {
        keys.iter()
            .any(|k| fields.get(*k).is_some_and(|v| !v.is_null()))
    };
    if has(&["cron", "schedule", "expression"]) {
        Some("schedule")
    } else if has(&[
        "every",
        "interval",
        "every_seconds",
        "interval_seconds",
        "every_minutes",
        "interval_minutes",
    ]) {
        Some("heartbeat")
    } else if has(&["sources", "source", "event", "events", "topic"]) {
        Some("event")
    } else if has(&["path", "folder", "directory", "dir"]) {
        Some("folder")
    } else if has(&["command"]) {
        Some("watch")
    } else {
        Some("manual")
    }
}

fn schedule_fields(
    fields: &mut Map<String, Value>,
    notes: &mut Notes,
) -> Result<Map<String, Value>, String> {
    let tz = take(fields, &["tz", "timezone", "time_zone", "timeZone"]);
    let mut schedule = match take(
        fields,
        &["cron", "schedule", "expression", "expr", "crontab", "at"],
    ) {
        Some(Value::Object(ours)) => ours,
        Some(Value::String(expr)) => {
            let cron = cron_from_text(&expr, fields, notes);
            match cron {
                CronText::Preset(preset) => {
                    let mut m = Map::new();
                    m.insert("preset".into(), json!(preset));
                    for key in ["time", "minute", "dow"] {
                        if let Some(v) = take(fields, &[key]) {
                            m.insert(key.into(), v);
                        }
                    }
                    m
                }
                CronText::Cron(cron) => {
                    let mut m = Map::new();
                    m.insert("preset".into(), json!("custom"));
                    m.insert("cron".into(), json!(cron));
                    m
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "schedule trigger's cron must be text, got {}; imported as manual",
                kind_of(&other)
            ));
        }
        None => {
            return Err("schedule trigger without a cron expression; imported as manual".into());
        }
    };
    if let Some(tz) = tz {
        schedule.entry("tz").or_insert(tz);
    }
    let mut m = Map::new();
    m.insert("schedule".into(), Value::Object(schedule));
    Ok(m)
}

enum CronText {
    Preset(String),
    Cron(String),
}

fn cron_from_text(text: &str, fields: &Map<String, Value>, notes: &mut Notes) -> CronText {
    let t = text.trim();
    let macro_cron = match t.to_ascii_lowercase().as_str() {
        "@hourly" => Some("0 * * * *"),
        "@daily" | "@midnight" => Some("0 0 * * *"),
        "@weekly" => Some("0 0 * * 0"),
        "@monthly" => Some("0 0 1 * *"),
        "@yearly" | "@annually" => Some("0 0 1 1 *"),
        preset @ ("hourly" | "daily" | "weekdays" | "weekly")
            if fields.contains_key("time") || preset == "hourly" =>
        {
            return CronText::Preset(preset.to_string());
        }
        _ => None,
    };
    if let Some(cron) = macro_cron {
        return CronText::Cron(cron.to_string());
    }
    let parts: Vec<&str> = t.split_whitespace().collect();
    if parts.len() == 6 && schedule::validate_cron(&parts[1..].join(" ")).is_ok() {
        notes.add(format!(
            "cron {t:?} has a seconds field; it was dropped (schedules fire on whole minutes)"
        ));
        return CronText::Cron(parts[1..].join(" "));
    }
    CronText::Cron(t.to_string())
}

fn heartbeat_fields(
    fields: &mut Map<String, Value>,
    notes: &mut Notes,
) -> Result<Map<String, Value>, String> {
    let mut m = Map::new();
    let scaled: [(&[&str], u64); 3] = [
        (&["every_seconds", "interval_seconds", "period_seconds"], 1),
        (&["every_minutes", "interval_minutes", "period_minutes"], 60),
        (&["every_hours", "interval_hours", "period_hours"], 3600),
    ];
    let every = match take(fields, &["every", "interval", "period", "frequency"]) {
        Some(Value::String(s)) => Some(json!(s.trim())),
        Some(v) if v.is_number() => {
            let secs = whole(&v);
            notes.add(format!("heartbeat interval {v} read as seconds"));
            Some(secs.map_or(v, |s| json!(duration_text(s))))
        }
        Some(other) => Some(other),
        None => scaled.iter().find_map(|(keys, scale)| {
            let v = take(fields, keys)?;
            Some(match whole(&v) {
                Some(n) => json!(duration_text(n.saturating_mul(*scale))),
                None => v,
            })
        }),
    };
    let Some(every) = every else {
        return Err("heartbeat trigger without an interval; imported as manual".into());
    };
    m.insert("every".into(), every);
    if let Some(window) = take(
        fields,
        &["window", "active_hours", "hours", "between", "during"],
    ) {
        m.insert("window".into(), window_text(window));
    }
    if let Some(days) = take(fields, &["days", "weekdays", "on_days", "days_of_week"]) {
        m.insert("days".into(), days_text(days));
    }
    if let Some(tz) = take(fields, &["tz", "timezone", "time_zone", "timeZone"]) {
        m.insert("tz".into(), tz);
    }
    Ok(m)
}

/// `"08:00-18:00"` from `{start, end}`, `["08:00", "18:00"]` or the string itself.
fn window_text(v: Value) -> Value {
    let pair = match &v {
        Value::Object(o) => {
            let get = |keys: &[&str]| {
                keys.iter()
                    .find_map(|k| o.get(*k)?.as_str().map(str::to_string))
            };
            get(&["start", "from", "begin", "open"]).zip(get(&["end", "to", "until", "close"]))
        }
        Value::Array(items) if items.len() == 2 => items[0]
            .as_str()
            .map(str::to_string)
            .zip(items[1].as_str().map(str::to_string)),
        _ => None,
    };
    match pair {
        Some((a, b)) => json!(format!("{}-{}", a.trim(), b.trim())),
        None => v,
    }
}

/// `"mon,tue"` from `["Monday", "Tuesday"]` or `[1, 2]` (0 = Sunday), or the string itself.
fn days_text(v: Value) -> Value {
    const NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let Value::Array(items) = &v else { return v };
    let names: Option<Vec<String>> = items
        .iter()
        .map(|item| match item {
            Value::String(s) => {
                let short: String = s
                    .trim()
                    .chars()
                    .take(3)
                    .collect::<String>()
                    .to_ascii_lowercase();
                NAMES.contains(&short.as_str()).then_some(short)
            }
            Value::Number(_) => item
                .as_u64()
                .and_then(|n| NAMES.get(usize::try_from(n % 7).ok()?))
                .map(|s| s.to_string()),
            _ => None,
        })
        .collect();
    match names {
        Some(names) if !names.is_empty() => json!(names.join(",")),
        _ => v,
    }
}

fn event_fields(fields: &mut Map<String, Value>) -> Result<Map<String, Value>, String> {
    let sources = match take(
        fields,
        &[
            "sources", "source", "events", "event", "topics", "topic", "from", "listen",
        ],
    ) {
        Some(Value::String(s)) => json!([s.trim()]),
        Some(v) => v,
        None => return Err("event trigger without sources; imported as manual".into()),
    };
    let mut m = Map::new();
    m.insert("sources".into(), sources);
    if let Some(v) = take(fields, &["cooldown_seconds", "cooldown"]) {
        m.insert("cooldown_seconds".into(), v);
    }
    Ok(m)
}

fn folder_fields(fields: &mut Map<String, Value>) -> Result<Map<String, Value>, String> {
    let Some(path) = take(fields, &["path", "folder", "directory", "dir"]) else {
        return Err("folder trigger without a path; imported as manual".into());
    };
    let mut m = Map::new();
    m.insert("path".into(), path);
    for (ours, aliases) in [
        ("pattern", &["pattern", "glob", "filter", "match"][..]),
        ("events", &["events", "on"][..]),
        ("debounce_ms", &["debounce_ms", "debounce"][..]),
    ] {
        if let Some(v) = take(fields, aliases) {
            m.insert(ours.into(), v);
        }
    }
    Ok(m)
}

fn watch_fields(fields: &mut Map<String, Value>) -> Result<Map<String, Value>, String> {
    let Some(command) = take(fields, &["command", "cmd", "run"]) else {
        let plugin = fields
            .get("plugin")
            .and_then(Value::as_str)
            .map(|p| format!(" (plugin {p:?})"))
            .unwrap_or_default();
        return Err(format!(
            "watch trigger without a command{plugin}: a watch here runs a command that prints NDJSON lines; imported as manual"
        ));
    };
    let mut m = Map::new();
    m.insert("command".into(), command);
    for (ours, aliases) in [
        (
            "restart_delay_seconds",
            &["restart_delay_seconds", "restart_delay"][..],
        ),
        ("dedupe_minutes", &["dedupe_minutes", "dedupe"][..]),
    ] {
        if let Some(v) = take(fields, aliases) {
            m.insert(ours.into(), v);
        }
    }
    Ok(m)
}

// ---------------------------------------------------------------------------------------------
// Activities
// ---------------------------------------------------------------------------------------------

/// Activity type names an agent.json may use, by our node type.
const TYPE_ALIASES: [(&str, &[&str]); 11] = [
    (
        "agent",
        &["agent", "llm", "model", "ai", "prompt", "task", "activity"],
    ),
    (
        "command",
        &["command", "shell", "bash", "sh", "exec", "cmd", "script"],
    ),
    (
        "http",
        &[
            "http",
            "request",
            "fetch",
            "api",
            "webrequest",
            "web_request",
        ],
    ),
    (
        "condition",
        &["condition", "if", "branch", "check", "decision"],
    ),
    (
        "loop",
        &[
            "loop", "foreach", "for_each", "for-each", "each", "map", "iterate",
        ],
    ),
    ("wait", &["wait", "sleep", "delay", "pause"]),
    (
        "approval",
        &["approval", "approve", "gate", "human", "review"],
    ),
    (
        "output",
        &[
            "output",
            "deliver",
            "delivery",
            "notify",
            "notification",
            "send",
        ],
    ),
    ("emit", &["emit", "event", "announce"]),
    ("note", &["note", "comment", "sticky"]),
    ("trigger", &["trigger"]),
];

/// Fields each node type reads (SPEC §3), beyond `id`, `type`, `label`, `x`, `y`.
fn known_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "agent" => &[
            "prompt",
            "profile",
            "model",
            "retries",
            "timeout_seconds",
            "max_tokens",
        ],
        "condition" => &["expr"],
        "approval" => &["question", "options", "timeout_minutes", "on_timeout"],
        "output" => &["deliver", "target", "template"],
        "note" => &["text", "color"],
        "command" => &["run", "argv", "cwd", "env", "timeout_seconds"],
        "http" => &[
            "url",
            "method",
            "headers",
            "body",
            "timeout_seconds",
            "accept",
        ],
        "loop" => &["over", "max_items", "concurrency"],
        "wait" => &["seconds", "duration"],
        "emit" => &["event", "payload"],
        _ => &[],
    }
}

fn activity(i: usize, item: &Value, graph: &mut Graph, notes: &mut Notes) {
    let mut fields = match item {
        Value::String(prompt) => {
            let mut m = Map::new();
            m.insert("prompt".into(), json!(prompt));
            m
        }
        Value::Object(m) => m.clone(),
        other => {
            notes.add(format!(
                "activities[{i}] must be text or an object, got {}; skipped",
                kind_of(other)
            ));
            return;
        }
    };
    let mut names: Vec<String> = Vec::new();
    for key in ["id", "name", "key"] {
        if let Some(Value::String(s)) = fields.get(key)
            && !names.contains(s)
        {
            names.push(s.clone());
        }
    }
    let original =
        take_str(&mut fields, &["id"]).or_else(|| take_str(&mut fields, &["name", "key"]));
    if let Some(Value::String(display)) = fields.get("name")
        && !fields.contains_key("label")
    {
        let display = display.clone();
        fields.remove("name");
        fields.insert("label".into(), json!(display));
    }
    let fallback = format!("step{}", i + 1);
    let shown = original.clone().unwrap_or_else(|| fallback.clone());

    let named = take_str(&mut fields, &["type", "kind"]);
    let kind = match &named {
        Some(t) => {
            let lower = t.trim().to_ascii_lowercase();
            match TYPE_ALIASES
                .iter()
                .find(|(_, a)| a.contains(&lower.as_str()))
            {
                Some((kind, _)) => *kind,
                None => {
                    notes.add(format!(
                        "activity {shown:?} has type {t:?}, which has no equivalent; imported as an agent step (original type kept in \"imported_type\")"
                    ));
                    fields.insert("imported_type".into(), json!(t));
                    "agent"
                }
            }
        }
        None => infer_type(&fields),
    };
    if kind == "trigger" {
        notes.add(format!(
            "activity {shown:?} is a trigger; a design has one trigger ({TRIGGER_ID:?}), so connections to it lead there"
        ));
        for name in names {
            graph
                .aliases
                .entry(name)
                .or_insert_with(|| TRIGGER_ID.to_string());
        }
        return;
    }

    let base = original
        .as_deref()
        .map(node_id)
        .filter(|s| !s.is_empty())
        .unwrap_or(fallback);
    let id = unique(&base, &graph.ids, &[TRIGGER_ID, EMIT_ID]);
    if let Some(orig) = &original
        && &id != orig
    {
        notes.add(format!(
            "activity {orig:?} is node {id:?} (node ids are unique, 1-64 of letters, digits, '.', '_', '-'; {TRIGGER_ID:?} and {EMIT_ID:?} are taken); templates that name it need the new id"
        ));
        if !fields.contains_key("label") {
            fields.insert("label".into(), json!(orig));
        }
    }
    for name in names {
        graph.aliases.entry(name).or_insert_with(|| id.clone());
    }
    map_fields(kind, &id, &mut fields, notes);

    let mut node = Map::new();
    node.insert("id".into(), json!(id));
    node.insert("type".into(), json!(kind));
    let known = known_fields(kind);
    let unused: Vec<&str> = fields
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k) && !["label", "x", "y", "imported_type"].contains(k))
        .collect();
    if !unused.is_empty() {
        notes.add(format!(
            "node {id:?}: fields kept without an equivalent: {}",
            unused.join(", ")
        ));
    }
    keep_leftovers(&mut node, fields, &format!("node {id:?}"), notes);
    graph.add(node);
}

fn infer_type(fields: &Map<String, Value>) -> &'static str {
    let has = |keys: &[&str]| {
        keys.iter()
            .any(|k| fields.get(*k).is_some_and(|v| !v.is_null()))
    };
    if has(&["prompt", "instructions"]) {
        "agent"
    } else if has(&["command", "run", "cmd", "script", "argv"]) {
        "command"
    } else if has(&["url"]) {
        "http"
    } else {
        "agent"
    }
}

/// Moves the agent.json spellings of a type's fields to ours.
fn map_fields(kind: &str, id: &str, f: &mut Map<String, Value>, notes: &mut Notes) {
    let budget_keys = [
        "token_budget",
        "max_tokens",
        "tokens",
        "budget",
        "token_limit",
        "max_output_tokens",
    ];
    match kind {
        "agent" => {
            rename(
                f,
                "prompt",
                &["instructions", "description", "task", "goal"],
            );
            if let Some(Value::Array(lines)) = f.get("prompt")
                && lines.iter().all(Value::is_string)
            {
                let text: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
                let text = text.join("\n");
                f.insert("prompt".into(), json!(text));
            }
            if let Some(v) = take(f, &budget_keys) {
                let tokens = match &v {
                    Value::Object(o) => ["tokens", "max_tokens", "total"]
                        .iter()
                        .find_map(|k| o.get(*k))
                        .cloned()
                        .unwrap_or(v.clone()),
                    _ => v.clone(),
                };
                f.insert(
                    "max_tokens".into(),
                    whole(&tokens).map_or(tokens, |n| json!(n)),
                );
            }
            rename(f, "retries", &["max_retries", "retry"]);
            rename(f, "timeout_seconds", &["timeout"]);
        }
        "command" => {
            rename(f, "run", &["command", "cmd", "script", "shell", "bash"]);
            if matches!(f.get("run"), Some(Value::Array(_)))
                && !f.contains_key("argv")
                && let Some(argv) = f.remove("run")
            {
                f.insert("argv".into(), argv);
            }
            rename(f, "cwd", &["workdir", "working_dir", "dir", "directory"]);
            rename(f, "env", &["environment"]);
            rename(f, "timeout_seconds", &["timeout"]);
        }
        "http" => {
            rename(f, "url", &["endpoint", "href", "uri"]);
            rename(f, "body", &["data", "json", "payload"]);
            rename(f, "timeout_seconds", &["timeout"]);
        }
        "condition" => {
            rename(
                f,
                "expr",
                &["expression", "condition", "if", "test", "when", "check"],
            );
            if let Some(Value::String(e)) = f.get("expr")
                && let Some(ours) = expr_from_template(e)
            {
                f.insert("expr".into(), json!(ours));
            }
        }
        "loop" => {
            rename(
                f,
                "over",
                &[
                    "items", "for_each", "foreach", "each", "in", "list", "source",
                ],
            );
            rename(f, "max_items", &["limit", "max"]);
            rename(f, "concurrency", &["parallel", "parallelism"]);
        }
        "wait" if !f.contains_key("seconds") && !f.contains_key("duration") => {
            match take(f, &["delay", "wait", "for", "time", "sleep"]) {
                Some(Value::String(s))
                    if s.trim().bytes().all(|b| b.is_ascii_digit()) && !s.trim().is_empty() =>
                {
                    f.insert(
                        "seconds".into(),
                        s.trim().parse::<u64>().map_or(json!(s), |n| json!(n)),
                    );
                }
                Some(Value::String(s)) => {
                    f.insert("duration".into(), json!(s.trim()));
                }
                Some(v) => {
                    f.insert("seconds".into(), v);
                }
                None => {}
            }
        }
        "approval" => {
            rename(
                f,
                "question",
                &["prompt", "message", "ask", "text", "description"],
            );
            rename(f, "options", &["choices", "answers"]);
        }
        "output" => {
            rename(f, "template", &["message", "text", "format"]);
            rename(f, "target", &["channel", "to", "destination"]);
            if let (Some(Value::String(t)), false) = (f.get("target"), f.contains_key("deliver")) {
                let deliver = if t.contains(':') {
                    "channel"
                } else {
                    "notification"
                };
                f.insert("deliver".into(), json!(deliver));
            }
        }
        "emit" => {
            rename(f, "event", &["event_name", "topic"]);
            rename(f, "payload", &["data"]);
        }
        "note" => rename(f, "text", &["content", "description"]),
        _ => {}
    }
    if kind != "agent" {
        if f.remove("retries").is_some() {
            notes.add(format!(
                "node {id:?}: retries dropped (only agent steps retry)"
            ));
        }
        if let Some(key) = budget_keys.iter().find(|k| f.contains_key(**k)) {
            notes.add(format!(
                "node {id:?}: token budget {key:?} has no effect on a {kind} step (no model runs there); kept as is"
            ));
        }
    }
}

/// `{{nodes.check.count}} > 3` → `out.check.count > 3`; `None` when not of that shape.
fn expr_from_template(e: &str) -> Option<String> {
    let rest = e.trim().strip_prefix("{{")?;
    let (inner, after) = rest.split_once("}}")?;
    let reference = inner.trim().strip_prefix("nodes.")?;
    Some(format!("out.{reference}{after}"))
}

// ---------------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------------

/// What `__emit__` becomes: the event name and an optional payload; `declared` when the workflow
/// itself says it emits (then a chain ends on it too).
struct EmitSpec {
    event: Value,
    payload: Option<Value>,
    declared: bool,
}

fn emit_spec(v: Option<Value>, name: &str, notes: &mut Notes) -> EmitSpec {
    let default = json!(format!("{name}.done"));
    let (event, payload, declared) = match v {
        None | Some(Value::Bool(false)) => (default, None, false),
        Some(Value::Bool(true)) => (default, None, true),
        Some(Value::String(s)) => (json!(s.trim()), None, true),
        Some(Value::Object(mut o)) => {
            let event = take(&mut o, &["event", "name", "topic"]).unwrap_or(default);
            (event, take(&mut o, &["payload", "data"]), true)
        }
        Some(other) => {
            notes.add(format!(
                "emit must name an event, got {}; {name}.done is used",
                kind_of(&other)
            ));
            (default, None, true)
        }
    };
    EmitSpec {
        event,
        payload,
        declared,
    }
}

fn add_emit(graph: &mut Graph, emit: &EmitSpec) {
    if graph.ids.contains(EMIT_ID) {
        return;
    }
    let mut node = Map::new();
    node.insert("id".into(), json!(EMIT_ID));
    node.insert("type".into(), json!("emit"));
    node.insert("event".into(), emit.event.clone());
    if let Some(p) = &emit.payload {
        node.insert("payload".into(), p.clone());
    }
    graph.add(node);
}

/// The sequential form: trigger, then each activity after the last (notes are left out: they
/// take no edges). An `emit` declared by the workflow ends the chain.
fn chain(graph: &mut Graph, emit: &EmitSpec) {
    if emit.declared {
        add_emit(graph, emit);
    }
    let ids: Vec<String> = graph
        .nodes
        .iter()
        .filter(|n| n.get("type").and_then(Value::as_str) != Some("note"))
        .filter_map(|n| n.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    for pair in ids.windows(2) {
        graph.connect(&pair[0], &pair[1], None);
    }
}

/// Where an endpoint name leads, adding the emit node the first time `__emit__` is named.
fn endpoint(name: &str, graph: &mut Graph, emit: &EmitSpec) -> Option<String> {
    match name.trim() {
        TRIGGER_ENDPOINT => Some(TRIGGER_ID.to_string()),
        EMIT_ENDPOINT => {
            add_emit(graph, emit);
            Some(EMIT_ID.to_string())
        }
        other => graph
            .aliases
            .get(name)
            .or_else(|| graph.aliases.get(other))
            .cloned()
            .or_else(|| graph.ids.contains(other).then(|| other.to_string())),
    }
}

/// `True`/`False` → `true`/`false`, `Each item` → `each`, `Done` → `done`; other labels (approval
/// answers) as written.
fn edge_label(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Bool(b) => Some(b.to_string()),
        Value::String(s) => {
            let t = s.trim();
            let lower = t.to_ascii_lowercase();
            match lower.as_str() {
                "" => None,
                "true" | "false" | "done" | "each" => Some(lower),
                "each item" | "each_item" | "for each" | "item" => Some("each".into()),
                _ => Some(t.to_string()),
            }
        }
        _ => None,
    }
}

/// One raw connection: from, targets, label.
type RawConnection = (Value, Vec<Value>, Option<String>);

fn raw_connections(conns: &Value, notes: &mut Notes) -> Vec<RawConnection> {
    let mut out = Vec::new();
    let targets = |v: &Value| match v {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    match conns {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Object(o) => {
                        let get = |keys: &[&str]| {
                            keys.iter().find_map(|k| o.get(*k).filter(|v| !v.is_null()))
                        };
                        let from = get(&["from", "source", "src", "start"]);
                        let to = get(&["to", "target", "dst", "dest", "end"]);
                        let label = edge_label(get(&[
                            "label",
                            "when",
                            "condition",
                            "branch",
                            "on",
                            "port",
                            "output",
                            "case",
                            "handle",
                        ]));
                        match (from, to) {
                            (Some(f), Some(t)) => out.push((f.clone(), targets(t), label)),
                            _ => notes.add(format!("connections[{i}] needs from and to; skipped")),
                        }
                    }
                    Value::Array(parts) if (2..=3).contains(&parts.len()) => {
                        out.push((
                            parts[0].clone(),
                            vec![parts[1].clone()],
                            edge_label(parts.get(2)),
                        ));
                    }
                    Value::String(s) if s.contains("->") => {
                        if let Some((f, t)) = s.split_once("->") {
                            out.push((json!(f.trim()), vec![json!(t.trim())], None));
                        }
                    }
                    other => notes.add(format!(
                        "connections[{i}] is not a connection ({}); skipped",
                        kind_of(other)
                    )),
                }
            }
        }
        // {"from": "to"}, {"from": ["a", "b"]}, {"from": [{"to", "label"}]}, {"check": {"True": "a"}}
        Value::Object(map) => {
            for (from, to) in map {
                match to {
                    Value::Object(by_label) => {
                        for (label, t) in by_label {
                            out.push((json!(from), targets(t), edge_label(Some(&json!(label)))));
                        }
                    }
                    Value::Array(items) => {
                        for item in items {
                            match item {
                                Value::Object(o) => {
                                    let t = o
                                        .get("to")
                                        .or_else(|| o.get("target"))
                                        .cloned()
                                        .unwrap_or(Value::Null);
                                    let label =
                                        edge_label(o.get("label").or_else(|| o.get("when")));
                                    out.push((json!(from), vec![t], label));
                                }
                                other => out.push((json!(from), vec![other.clone()], None)),
                            }
                        }
                    }
                    other => out.push((json!(from), vec![other.clone()], None)),
                }
            }
        }
        other => notes.add(format!(
            "connections must be a list, got {}; the activities are not connected",
            kind_of(other)
        )),
    }
    out
}

fn connections(conns: &Value, graph: &mut Graph, emit: &EmitSpec, notes: &mut Notes) {
    for (from, targets, label) in raw_connections(conns, notes) {
        let Some(from_name) = from.as_str().map(str::to_string) else {
            notes.add(format!(
                "a connection's from must be a name, got {from}; skipped"
            ));
            continue;
        };
        for to in targets {
            let Some(to_name) = to.as_str() else {
                notes.add(format!(
                    "connection from {from_name:?}: to must be a name, got {to}; skipped"
                ));
                continue;
            };
            if from_name.trim() == EMIT_ENDPOINT {
                notes.add(format!(
                    "connection {EMIT_ENDPOINT} -> {to_name}: the emit ends a run; skipped"
                ));
                continue;
            }
            if to_name.trim() == TRIGGER_ENDPOINT {
                notes.add(format!("connection {from_name} -> {TRIGGER_ENDPOINT}: nothing leads into the trigger; skipped"));
                continue;
            }
            let f = endpoint(&from_name, graph, emit);
            let t = endpoint(to_name, graph, emit);
            match (f, t) {
                (Some(f), Some(t)) => graph.connect(&f, &t, label.clone()),
                (f, _) => {
                    let unknown = if f.is_none() { &from_name } else { to_name };
                    notes.add(format!(
                        "connection {from_name} -> {to_name} names unknown activity {unknown:?}; skipped"
                    ));
                }
            }
        }
    }
}

/// A loop's pass ends at its body's last step; an edge from the body back to the loop (how some
/// graphs draw "next item") would be a cycle here, so it is dropped with a note.
fn drop_loop_back_edges(graph: &mut Graph, notes: &mut Notes) {
    let loops: Vec<String> = graph
        .nodes
        .iter()
        .filter(|n| n.get("type").and_then(Value::as_str) == Some("loop"))
        .filter_map(|n| n.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    for lp in loops {
        let mut body: HashSet<String> = HashSet::new();
        let mut stack: Vec<String> = graph
            .edges
            .iter()
            .filter(|(f, t, l)| f == &lp && t != &lp && l.as_deref() == Some("each"))
            .map(|(_, t, _)| t.clone())
            .collect();
        while let Some(n) = stack.pop() {
            if n == lp || !body.insert(n.clone()) {
                continue;
            }
            stack.extend(
                graph
                    .edges
                    .iter()
                    .filter(|(f, _, _)| f == &n)
                    .map(|(_, t, _)| t.clone()),
            );
        }
        let before = graph.edges.len();
        graph
            .edges
            .retain(|(f, t, _)| !(t == &lp && body.contains(f)));
        if graph.edges.len() != before {
            notes.add(format!(
                "edges from the body of loop {lp:?} back to it were dropped: a pass ends at its body's last step"
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Budget
// ---------------------------------------------------------------------------------------------

fn run_budget(wf: &mut Map<String, Value>, notes: &mut Notes) -> Option<Value> {
    let v = take(
        wf,
        &[
            "budget",
            "token_budget",
            "run_budget",
            "max_tokens",
            "tokens",
            "total_tokens",
        ],
    )?;
    let tokens = match v {
        Value::Object(mut o) => {
            let tokens = take(
                &mut o,
                &[
                    "tokens",
                    "max_tokens",
                    "total_tokens",
                    "token_budget",
                    "total",
                ],
            );
            if !o.is_empty() {
                let keys: Vec<&str> = o.keys().map(String::as_str).collect();
                notes.add(format!(
                    "budget fields without an equivalent dropped: {} (only a token budget is enforced)",
                    keys.join(", ")
                ));
            }
            tokens?
        }
        other => other,
    };
    Some(json!({"tokens": whole(&tokens).map_or(tokens, |n| json!(n))}))
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Removes and returns the first of `keys` present with a non-null value.
fn take(m: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
    let key = keys
        .iter()
        .find(|k| m.get(**k).is_some_and(|v| !v.is_null()))?;
    m.remove(*key)
}

/// Like [`take`], for text only (other values stay where they are).
fn take_str(m: &mut Map<String, Value>, keys: &[&str]) -> Option<String> {
    let key = keys
        .iter()
        .find(|k| m.get(**k).is_some_and(Value::is_string))?;
    m.remove(*key).and_then(|v| v.as_str().map(str::to_string))
}

/// Moves the first present alias to `ours` unless `ours` is already set.
fn rename(m: &mut Map<String, Value>, ours: &str, aliases: &[&str]) {
    if m.get(ours).is_some_and(|v| !v.is_null()) {
        return;
    }
    if let Some(v) = take(m, aliases) {
        m.insert(ours.to_string(), v);
    }
}

/// Adds leftover fields to a node without overwriting the ones the importer set.
fn keep_leftovers(
    node: &mut Map<String, Value>,
    leftovers: Map<String, Value>,
    what: &str,
    notes: &mut Notes,
) {
    for (k, v) in leftovers {
        if node.contains_key(&k) {
            notes.add(format!(
                "{what}: field {k:?} clashes with the imported one; dropped"
            ));
        } else {
            node.insert(k, v);
        }
    }
}

/// A whole, non-negative number (also from a float like `2e4`).
fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
    })
}

/// `5400` → `"1h30m"`; what `schedule::parse_duration` reads back.
fn duration_text(secs: u64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    for (n, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

/// Letters, digits, `.`, `_`, `-`; every run of other characters becomes one `-`.
fn clean(s: &str) -> String {
    let mut out = String::new();
    for c in s.trim().chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

fn node_id(s: &str) -> String {
    clean(s).chars().take(MAX_ID_LEN).collect()
}

fn design_name(key: &str, taken: &HashSet<String>) -> String {
    let cleaned = clean(key);
    let start = cleaned.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let base: String = start.chars().take(MAX_ID_LEN).collect();
    let base = if base.is_empty() {
        "workflow".to_string()
    } else {
        base
    };
    unique(&base, taken, &[])
}

/// `base`, else `base-2`, `base-3`, … (shortened to fit), not in `taken` nor `reserved`.
fn unique(base: &str, taken: &HashSet<String>, reserved: &[&str]) -> String {
    let free = |s: &str| !taken.contains(s) && !reserved.contains(&s);
    if free(base) {
        return base.to_string();
    }
    (2u64..)
        .map(|n| {
            let suffix = format!("-{n}");
            let keep = MAX_ID_LEN.saturating_sub(suffix.len());
            let head: String = base.chars().take(keep).collect();
            format!("{head}{suffix}")
        })
        .find(|s| free(s))
        .unwrap_or_else(|| base.to_string())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn describe_issue(issue: &Issue) -> String {
    let mut at = Vec::new();
    if let Some(node) = &issue.node {
        at.push(format!("node {node:?}"));
    }
    if let Some(edge) = issue.edge {
        at.push(format!("edge {edge}"));
    }
    if let Some(field) = &issue.field {
        at.push(format!("field {field:?}"));
    }
    if at.is_empty() {
        issue.message.clone()
    } else {
        format!("{} ({})", issue.message, at.join(", "))
    }
}
