//! Trigger nodes (SPEC §10), read once into typed values: how a design starts.
//!
//! The validator, the daemon, event delivery, the schedules and the importer all read a trigger
//! node through [`Trigger::parse`], so its fields, their defaults and their ranges (all in
//! [`crate::limits`]) are decided here and nowhere else. The time rules the modes use (schedules,
//! heartbeat windows, durations) are [`crate::schedule`]'s.
//!
//! Invariants:
//! - Pure: no clock, no I/O, no panic on any input.
//! - [`Trigger::parse`] reports every problem of the node at once (each a [`ScheduleError`] whose
//!   `field` names the node's field); a node it accepts yields a value whose every field is in
//!   range, with the documented defaults filled in. `null` counts as absent; fields of other modes
//!   are ignored.

use serde_json::{Map, Value};

use crate::events::source_matches;
use crate::limits;
use crate::schedule::{
    Heartbeat, Schedule, ScheduleError, describe, parse_days, parse_duration, parse_tz, parse_window, present, schedule_from_value, shown,
    to_cron, validate_tz,
};

/// The trigger modes, as written in a node's `mode`.
pub const MODES: [&str; 7] = ["manual", "schedule", "heartbeat", "event", "folder", "watch", "webhook"];

/// How a run was started (`trigger.mode` of a run): a trigger node's mode, read once where it
/// enters (a stored run, a listing filter) and compared as this type everywhere after.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TriggerMode {
    Manual,
    Schedule,
    Heartbeat,
    Event,
    Folder,
    Watch,
    Webhook,
    // Started by another run's failure: the failed design's `on_failure` (or `[runs]
    // on_failure`) names this one. Never a trigger node's mode. (A plain comment, so the
    // schema keeps one enum of words.)
    #[serde(rename = "failure")]
    OnFailure,
    // Started by a design step of another run (its `parent_run`). Never a trigger node's mode.
    Parent,
}

impl TriggerMode {
    /// Every mode, in the order of [`MODES`].
    pub const ALL: [TriggerMode; 7] = [
        TriggerMode::Manual,
        TriggerMode::Schedule,
        TriggerMode::Heartbeat,
        TriggerMode::Event,
        TriggerMode::Folder,
        TriggerMode::Watch,
        TriggerMode::Webhook,
    ];

    /// The mode as the contract writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerMode::Manual => "manual",
            TriggerMode::Schedule => "schedule",
            TriggerMode::Heartbeat => "heartbeat",
            TriggerMode::Event => "event",
            TriggerMode::Folder => "folder",
            TriggerMode::Watch => "watch",
            TriggerMode::Webhook => "webhook",
            TriggerMode::OnFailure => "failure",
            TriggerMode::Parent => "parent",
        }
    }

    /// The mode a run's trigger may have, if `word` names one: a trigger node's, `failure` or
    /// `parent`.
    pub fn parse(word: &str) -> Option<TriggerMode> {
        TriggerMode::ALL.into_iter().chain(TriggerMode::STARTED_BY_RUNS).find(|m| m.as_str() == word)
    }

    /// The modes of runs another run started: its failure, or its design step.
    pub const STARTED_BY_RUNS: [TriggerMode; 2] = [TriggerMode::OnFailure, TriggerMode::Parent];
}

impl std::fmt::Display for TriggerMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A trigger node's mode and its fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// Started by hand (CLI, API, chat, MCP, an agent) only.
    Manual,
    /// Started on a cron schedule by a schedule job; the object it is described by, and the cron
    /// expression it stands for.
    Schedule {
        schedule: Schedule,
        cron: String,
    },
    Heartbeat(Heartbeat),
    Event(EventTrigger),
    Folder(FolderTrigger),
    Watch(WatchTrigger),
    /// Started by a signed POST to `/hooks/<path>` (see [`crate::webhook`]).
    Webhook(crate::webhook::WebhookTrigger),
}

/// `mode: event`: started by emitted events whose name a source takes.
#[derive(Debug, Clone, PartialEq)]
pub struct EventTrigger {
    /// Exact event names, or `prefix.*` for every event under `prefix.`.
    pub sources: Vec<String>,
    /// Seconds after a start during which further events start nothing.
    pub cooldown_seconds: u64,
}

/// `mode: folder`: a file appearing, changing or going in a folder.
#[derive(Debug, Clone, PartialEq)]
pub struct FolderTrigger {
    /// As written (trimmed); the daemon resolves `~/` and relative paths.
    pub path: String,
    /// A glob over file names; `*` when absent.
    pub pattern: String,
    /// Which changes start a run; create and modify when absent.
    pub events: Vec<FolderEvent>,
    pub debounce_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderEvent {
    Create,
    Modify,
    Remove,
}

impl FolderEvent {
    pub const ALL: [FolderEvent; 3] = [FolderEvent::Create, FolderEvent::Modify, FolderEvent::Remove];
    /// What a folder trigger without `events` listens for.
    pub const DEFAULT: [FolderEvent; 2] = [FolderEvent::Create, FolderEvent::Modify];

    pub fn as_str(self) -> &'static str {
        match self {
            FolderEvent::Create => "create",
            FolderEvent::Modify => "modify",
            FolderEvent::Remove => "remove",
        }
    }

    fn parse(s: &str) -> Option<FolderEvent> {
        FolderEvent::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

/// `mode: watch`: a long-running command whose output lines start runs.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchTrigger {
    /// The program and its arguments; a command string runs as `sh -c STRING`.
    pub argv: Vec<String>,
    pub restart_delay_seconds: u64,
    pub dedupe_minutes: u64,
}

impl Trigger {
    /// Reads a flat trigger node: its `mode` and that mode's fields, with every problem reported.
    pub fn parse(node: &Map<String, Value>) -> Result<Trigger, Vec<ScheduleError>> {
        let mut issues = Vec::new();
        let mode = match present(node, "mode") {
            None => return Err(vec![ScheduleError::new("mode", format!("trigger needs a mode ({})", crate::spec::either(MODES)))]),
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                let modes = crate::spec::either(MODES);
                return Err(vec![ScheduleError::new("mode", format!("mode must be a string ({modes}), got {}", describe(other)))]);
            }
        };
        let modes = || crate::spec::either(MODES);
        let trigger = match mode {
            "manual" => Some(Trigger::Manual),
            "schedule" => schedule_mode(node, &mut issues),
            "heartbeat" => heartbeat_mode(node, &mut issues).map(Trigger::Heartbeat),
            "event" => event_mode(node, &mut issues).map(Trigger::Event),
            "folder" => folder_mode(node, &mut issues).map(Trigger::Folder),
            "watch" => watch_mode(node, &mut issues).map(Trigger::Watch),
            "webhook" => crate::webhook::webhook_mode(node, &mut issues).map(Trigger::Webhook),
            other => {
                issues.push(ScheduleError::new("mode", format!("unknown mode \"{other}\" (use {})", modes())));
                None
            }
        };
        if let Err(flow) = crate::flow::read_rules(node) {
            issues.extend(flow);
        }
        match trigger {
            Some(t) if issues.is_empty() => Ok(t),
            _ => Err(issues),
        }
    }

    /// The mode's name, as written in the node.
    pub fn mode(&self) -> TriggerMode {
        match self {
            Trigger::Manual => TriggerMode::Manual,
            Trigger::Schedule { .. } => TriggerMode::Schedule,
            Trigger::Heartbeat(_) => TriggerMode::Heartbeat,
            Trigger::Event(_) => TriggerMode::Event,
            Trigger::Folder(_) => TriggerMode::Folder,
            Trigger::Watch(_) => TriggerMode::Watch,
            Trigger::Webhook(_) => TriggerMode::Webhook,
        }
    }

    /// For an event trigger that takes `event`: its cooldown in seconds.
    pub fn listens(&self, event: &str) -> Option<u64> {
        match self {
            Trigger::Event(e) if e.sources.iter().any(|s| source_matches(s, event)) => Some(e.cooldown_seconds),
            _ => None,
        }
    }
}

/// The `mode` a trigger node declares, valid or not (`manual` when it names none): for messages
/// and decisions that hold whatever the rest of the node says.
pub fn declared_mode(node: &Map<String, Value>) -> &str {
    present(node, "mode").and_then(Value::as_str).unwrap_or("manual")
}

/// Whether a trigger node declares a mode that fires without anyone asking (schedule, heartbeat,
/// event, folder, watch, webhook): what `"enabled": false` turns off.
pub fn is_automatic(node: &Map<String, Value>) -> bool {
    matches!(declared_mode(node), "schedule" | "heartbeat" | "event" | "folder" | "watch" | "webhook")
}

/// Whether a trigger node declares `mode: event` with a source that takes `event`, whether or not
/// the rest of it is valid: an emit reports such a design as skipped, with the validator's verdict,
/// rather than passing it by. For a node that parses, the same as [`Trigger::listens`].
pub fn names_event(node: &Map<String, Value>, event: &str) -> bool {
    declared_mode(node) == "event"
        && present(node, "sources")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().filter_map(Value::as_str).any(|s| source_matches(s, event)))
}

/// Every problem of a flat trigger node; empty when [`Trigger::parse`] accepts it.
pub fn validate_trigger(node: &Map<String, Value>) -> Vec<ScheduleError> {
    Trigger::parse(node).err().unwrap_or_default()
}

fn schedule_mode(node: &Map<String, Value>, issues: &mut Vec<ScheduleError>) -> Option<Trigger> {
    let Some(value) = present(node, "schedule") else {
        issues
            .push(ScheduleError::new("schedule", "a schedule trigger needs a schedule, e.g. {\"preset\": \"daily\", \"time\": \"09:00\"}"));
        return None;
    };
    let schedule = schedule_from_value(value).map_err(|e| issues.push(e.in_field("schedule"))).ok()?;
    let cron = to_cron(&schedule).map_err(|e| issues.push(e.in_field("schedule"))).ok()?;
    Some(Trigger::Schedule { schedule, cron })
}

/// Reads a heartbeat trigger node (`every`, `window?`, `days?`, `tz?`), with the same checks and
/// messages as [`Trigger::parse`]; the first problem is returned. A `mode` other than `heartbeat`
/// is an error on field `"mode"`; an absent one is allowed.
pub fn heartbeat_from_node(node: &Map<String, Value>) -> Result<Heartbeat, ScheduleError> {
    match present(node, "mode") {
        None => {}
        Some(Value::String(m)) if m == "heartbeat" => {}
        Some(other) => {
            return Err(ScheduleError::new("mode", format!("a heartbeat needs mode \"heartbeat\", got {}", shown(other))));
        }
    }
    let mut issues = Vec::new();
    match heartbeat_mode(node, &mut issues) {
        Some(h) if issues.is_empty() => Ok(h),
        _ => Err(issues.into_iter().next().unwrap_or_else(|| ScheduleError::new("every", "not a heartbeat"))),
    }
}

fn heartbeat_mode(node: &Map<String, Value>, issues: &mut Vec<ScheduleError>) -> Option<Heartbeat> {
    let (lo, hi) = limits::HEARTBEAT_SECONDS;
    let every_seconds = match present(node, "every") {
        None => {
            issues.push(ScheduleError::new("every", "a heartbeat trigger needs every, e.g. \"30m\" (1m to 24h)"));
            None
        }
        Some(Value::String(s)) => match parse_duration(s) {
            Err(e) => {
                issues.push(e.in_field("every"));
                None
            }
            Ok(secs) if !limits::within(secs, limits::HEARTBEAT_SECONDS) => {
                issues.push(ScheduleError::new(
                    "every",
                    format!("every \"{s}\" is {secs} seconds; a heartbeat must be every {lo} to {hi} seconds (1m to 24h)"),
                ));
                None
            }
            Ok(secs) => Some(secs),
        },
        Some(other) => {
            issues.push(ScheduleError::new("every", format!("every must be a duration string like \"30m\", got {}", describe(other))));
            None
        }
    };
    let window = optional_text(node, "window", "\"08:00-18:00\"", issues, parse_window);
    let days = optional_text(node, "days", "\"mon-fri\"", issues, parse_days);
    let tz = optional_text(node, "tz", "\"Europe/Paris\"", issues, |s| validate_tz(s).and_then(|()| parse_tz(s)));
    Some(Heartbeat {
        every_seconds: every_seconds?,
        window: window.ok()?,
        days: days.ok()?.unwrap_or([true; 7]),
        tz: tz.ok()?.unwrap_or(chrono_tz::Tz::UTC),
    })
}

/// An optional string field read by `read`: `Ok(None)` when absent, `Err(())` (with the problem
/// recorded) when it is not a string or `read` refuses it.
fn optional_text<T>(
    node: &Map<String, Value>,
    key: &str,
    example: &str,
    issues: &mut Vec<ScheduleError>,
    read: impl Fn(&str) -> Result<T, ScheduleError>,
) -> Result<Option<T>, ()> {
    match present(node, key) {
        None => Ok(None),
        Some(Value::String(s)) => read(s).map(Some).map_err(|e| issues.push(e.in_field(key))),
        Some(other) => {
            issues.push(ScheduleError::new(key, format!("{key} must be a string like {example}, got {}", describe(other))));
            Err(())
        }
    }
}

fn event_mode(node: &Map<String, Value>, issues: &mut Vec<ScheduleError>) -> Option<EventTrigger> {
    let need = "an event trigger needs sources: a list of event names or prefixes like [\"deploy.done\", \"alerts.*\"]";
    let mut sources = Vec::new();
    match present(node, "sources") {
        None => issues.push(ScheduleError::new("sources", need)),
        Some(Value::Array(items)) if items.is_empty() => issues.push(ScheduleError::new("sources", need)),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str().filter(|s| is_event_name(s.strip_suffix(".*").unwrap_or(s))) {
                    Some(source) => sources.push(source.to_string()),
                    None => {
                        let shown = match item {
                            Value::String(s) => format!("\"{s}\""),
                            other => describe(other),
                        };
                        issues.push(ScheduleError::new(
                            "sources",
                            format!("sources[{i}] {shown} is not an event name (letters, digits, _ . : -) or a prefix ending in .*"),
                        ));
                    }
                }
            }
        }
        Some(other) => issues.push(ScheduleError::new("sources", format!("{need}; got {}", describe(other)))),
    }
    let cooldown_seconds = int_field(node, "cooldown_seconds", limits::EVENT_COOLDOWN_SECONDS, limits::EVENT_COOLDOWN_DEFAULT, issues);
    Some(EventTrigger { sources, cooldown_seconds: cooldown_seconds? })
}

/// What [`is_event_name`] accepts, as a regular expression (for API documents).
pub const EVENT_NAME_PATTERN: &str = "^[A-Za-z0-9_.:-]+$";

/// An event name: one or more of `A-Z a-z 0-9 _ . : -` (SPEC §10 sources, emit `event`).
pub fn is_event_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

fn folder_mode(node: &Map<String, Value>, issues: &mut Vec<ScheduleError>) -> Option<FolderTrigger> {
    let path = match present(node, "path") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        None | Some(Value::String(_)) => {
            issues.push(ScheduleError::new("path", "a folder trigger needs a path (the folder to watch)"));
            None
        }
        Some(other) => {
            issues.push(ScheduleError::new("path", format!("path must be a string, got {}", describe(other))));
            None
        }
    };
    let pattern = match present(node, "pattern") {
        None => Some(limits::FOLDER_PATTERN_DEFAULT.to_string()),
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(Value::String(_)) => {
            issues.push(ScheduleError::new("pattern", "pattern is empty (leave it out to match every file, \"*\")"));
            None
        }
        Some(other) => {
            issues.push(ScheduleError::new("pattern", format!("pattern must be a string like \"*.csv\", got {}", describe(other))));
            None
        }
    };
    let events_hint = "events must be a non-empty list of create, modify, remove";
    let events = match present(node, "events") {
        None => Some(FolderEvent::DEFAULT.to_vec()),
        Some(Value::Array(items)) if items.is_empty() => {
            issues.push(ScheduleError::new("events", events_hint));
            None
        }
        Some(Value::Array(items)) => {
            let mut events = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item.as_str().and_then(FolderEvent::parse) {
                    Some(e) => events.push(e),
                    None => {
                        issues.push(ScheduleError::new("events", format!("events[{i}] is {}: use create, modify or remove", shown(item))))
                    }
                }
            }
            Some(events)
        }
        Some(other) => {
            issues.push(ScheduleError::new("events", format!("{events_hint}; got {}", describe(other))));
            None
        }
    };
    let debounce_ms = int_field(node, "debounce_ms", limits::FOLDER_DEBOUNCE_MS, limits::FOLDER_DEBOUNCE_DEFAULT_MS, issues);
    Some(FolderTrigger { path: path?, pattern: pattern?, events: events?, debounce_ms: debounce_ms? })
}

fn watch_mode(node: &Map<String, Value>, issues: &mut Vec<ScheduleError>) -> Option<WatchTrigger> {
    let need = "a watch trigger needs a command: a non-empty string or a list of strings (program first)";
    let argv = match present(node, "command") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(vec!["sh".to_string(), "-c".to_string(), s.clone()]),
        Some(Value::Array(items))
            if items.iter().all(Value::is_string) && items.first().and_then(Value::as_str).is_some_and(|p| !p.trim().is_empty()) =>
        {
            Some(items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        }
        _ => None,
    };
    if argv.is_none() {
        let got = present(node, "command").map(|v| format!("; got {}", shown(v))).unwrap_or_default();
        issues.push(ScheduleError::new("command", format!("{need}{got}")));
    }
    let words: Vec<&str> = match present(node, "command") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if words.iter().any(|w| crate::template::parse(w).is_ok_and(|t| t.refs().next().is_some())) {
        issues.push(ScheduleError::new(
            "command",
            "a watch command takes no templates: it runs exactly as written, before any run exists; remove the {{…}}",
        ));
    }
    let restart_delay_seconds =
        int_field(node, "restart_delay_seconds", limits::WATCH_RESTART_DELAY_SECONDS, limits::WATCH_RESTART_DELAY_DEFAULT_SECONDS, issues);
    let dedupe_minutes = int_field(node, "dedupe_minutes", limits::WATCH_DEDUPE_MINUTES, limits::WATCH_DEDUPE_DEFAULT_MINUTES, issues);
    Some(WatchTrigger { argv: argv?, restart_delay_seconds: restart_delay_seconds?, dedupe_minutes: dedupe_minutes? })
}

/// An optional whole-number field within an inclusive range: `default` when absent, `None` (with
/// the problem recorded) when out of range or not a whole number.
fn int_field(node: &Map<String, Value>, key: &str, range: (u64, u64), default: u64, issues: &mut Vec<ScheduleError>) -> Option<u64> {
    let Some(v) = present(node, key) else { return Some(default) };
    match v.as_u64().filter(|n| limits::within(*n, range)) {
        Some(n) => Some(n),
        None => {
            issues.push(ScheduleError::new(key, format!("{key} must be a whole number from {} to {}, got {}", range.0, range.1, shown(v))));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The typed modes are the contract's words, in its order, and read back as themselves from
    /// JSON; a word that is no mode is no mode.
    #[test]
    fn trigger_modes_are_the_contract_s_words() {
        assert_eq!(TriggerMode::ALL.map(TriggerMode::as_str), MODES);
        for mode in TriggerMode::ALL {
            assert_eq!(TriggerMode::parse(mode.as_str()), Some(mode));
            let json = serde_json::to_value(mode).unwrap();
            assert_eq!(json, json!(mode.as_str()));
            assert_eq!(serde_json::from_value::<TriggerMode>(json).unwrap(), mode);
        }
        assert_eq!(TriggerMode::parse("Manual"), None);
        assert!(serde_json::from_value::<TriggerMode>(json!("webhooks")).is_err());
    }

    fn parse(v: Value) -> Result<Trigger, Vec<ScheduleError>> {
        Trigger::parse(v.as_object().expect("an object"))
    }

    #[test]
    fn defaults_are_filled_in_from_the_limits() {
        let Ok(Trigger::Folder(f)) = parse(json!({"mode": "folder", "path": " /in "})) else { panic!() };
        assert_eq!(
            f,
            FolderTrigger {
                path: "/in".into(),
                pattern: limits::FOLDER_PATTERN_DEFAULT.into(),
                events: vec![FolderEvent::Create, FolderEvent::Modify],
                debounce_ms: limits::FOLDER_DEBOUNCE_DEFAULT_MS,
            }
        );
        let Ok(Trigger::Watch(w)) = parse(json!({"mode": "watch", "command": "tail -f x"})) else { panic!() };
        assert_eq!(w.argv, ["sh", "-c", "tail -f x"]);
        assert_eq!(
            (w.restart_delay_seconds, w.dedupe_minutes),
            (limits::WATCH_RESTART_DELAY_DEFAULT_SECONDS, limits::WATCH_DEDUPE_DEFAULT_MINUTES)
        );
        let Ok(Trigger::Event(e)) = parse(json!({"mode": "event", "sources": ["a.*", "b"]})) else { panic!() };
        assert_eq!((e.sources, e.cooldown_seconds), (vec!["a.*".to_string(), "b".to_string()], limits::EVENT_COOLDOWN_DEFAULT));
        let Ok(Trigger::Schedule { cron, .. }) = parse(json!({"mode": "schedule", "schedule": {"preset": "weekdays", "time": "07:30"}}))
        else {
            panic!()
        };
        assert_eq!(cron, "30 7 * * 1-5");
        assert_eq!(parse(json!({"mode": "manual", "every": 3})), Ok(Trigger::Manual), "fields of other modes are ignored");
    }

    #[test]
    fn every_default_and_bound_is_accepted_and_one_past_a_bound_is_not() {
        for (mode, key, range, extra) in [
            ("event", "cooldown_seconds", limits::EVENT_COOLDOWN_SECONDS, json!({"sources": ["a"]})),
            ("folder", "debounce_ms", limits::FOLDER_DEBOUNCE_MS, json!({"path": "/in"})),
            ("watch", "restart_delay_seconds", limits::WATCH_RESTART_DELAY_SECONDS, json!({"command": "x"})),
            ("watch", "dedupe_minutes", limits::WATCH_DEDUPE_MINUTES, json!({"command": "x"})),
        ] {
            let node = |n: Value| {
                let mut m = extra.as_object().unwrap().clone();
                m.insert("mode".into(), json!(mode));
                m.insert(key.into(), n);
                m
            };
            for ok in [range.0, range.1] {
                assert!(Trigger::parse(&node(json!(ok))).is_ok(), "{mode} {key} {ok}");
            }
            let mut bad = vec![json!(range.1 + 1), json!(-1), json!(1.5), json!("3")];
            if range.0 > 0 {
                bad.push(json!(range.0 - 1));
            }
            for n in bad {
                let issues = Trigger::parse(&node(n.clone())).unwrap_err();
                assert_eq!(issues.len(), 1, "{mode} {key} {n}: {issues:?}");
                assert_eq!(issues[0].field.as_deref(), Some(key));
            }
        }
    }

    #[test]
    fn listens_only_for_event_triggers_and_their_sources() {
        let t = parse(json!({"mode": "event", "sources": ["a.*"], "cooldown_seconds": 30})).unwrap();
        assert_eq!(t.listens("a.b"), Some(30));
        assert_eq!(t.listens("b"), None);
        let manual = json!({"mode": "manual", "sources": ["a.*"]});
        assert_eq!(parse(manual.clone()).unwrap().listens("a.b"), None);
        assert!(!names_event(manual.as_object().unwrap(), "a.b"));
        let invalid = json!({"mode": "event", "sources": ["a.*"], "cooldown_seconds": -1});
        assert!(parse(invalid.clone()).is_err() && names_event(invalid.as_object().unwrap(), "a.b"));
        assert!(!names_event(invalid.as_object().unwrap(), "b"));
    }

    #[test]
    fn a_parsed_trigger_names_its_mode() {
        for mode in ["manual", "schedule", "heartbeat", "event", "folder", "watch"] {
            let node =
                json!({"mode": mode, "schedule": {"preset": "hourly"}, "every": "5m", "sources": ["a"], "path": "/x", "command": "x"});
            assert_eq!(parse(node).map(|t| t.mode().as_str()), Ok(mode));
        }
        assert_eq!(declared_mode(json!({"mode": "schedule"}).as_object().unwrap()), "schedule");
        assert_eq!(declared_mode(json!({"mode": null}).as_object().unwrap()), "manual");
    }
}
