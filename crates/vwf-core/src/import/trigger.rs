//! The trigger of an imported workflow: its type or kind, mapped to a mode, and that mode's
//! fields (schedule text and cron, heartbeat interval, window and days, event sources, folder,
//! watch command).

use super::*;

/// The mode names an agent.json may use, by our mode.
pub(super) const MODE_ALIASES: [(&str, &[&str]); 6] = [
    ("manual", &["manual", "none", "on_demand", "on-demand", "ondemand"]),
    ("schedule", &["schedule", "scheduled", "cron", "crontab"]),
    ("heartbeat", &["heartbeat", "interval", "every", "periodic", "recurring"]),
    ("event", &["event", "events", "on_event", "listen", "listener"]),
    ("folder", &["folder", "file", "files", "fs", "filesystem", "directory", "path"]),
    ("watch", &["watch", "watcher", "stream", "plugin", "command"]),
];

pub(super) fn canonical_mode(text: &str) -> Option<&'static str> {
    let t = text.trim().to_ascii_lowercase();
    MODE_ALIASES.iter().find(|(_, aliases)| aliases.contains(&t.as_str())).map(|(mode, _)| *mode)
}

pub(super) fn trigger_node(trigger: Option<Value>, notes: &mut Notes) -> Map<String, Value> {
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
            notes.add(format!("a design has one trigger; this workflow lists {}: imported as manual", items.len()));
            Map::new()
        }
        Some(Value::String(s)) => string_trigger(&s),
        Some(other) => {
            notes.add(format!("trigger must be an object, got {}; imported as manual", kind_of(&other)));
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
            Err(format!("trigger type {what:?} has no equivalent{why}; imported as manual"))
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
    let unused: Vec<&str> = fields.keys().map(String::as_str).filter(|k| !["label", "x", "y"].contains(k)).collect();
    if !unused.is_empty() {
        notes.add(format!("trigger: fields kept without an equivalent: {}", unused.join(", ")));
    }
    keep_leftovers(&mut node, fields, "trigger", notes);
    node
}

/// A trigger written as one string: a cron expression (`0 9 * * *`, `@daily`), else a mode name.
pub(super) fn string_trigger(s: &str) -> Map<String, Value> {
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

pub(super) fn infer_mode(fields: &Map<String, Value>) -> Option<&'static str> {
    let has = |keys: &[&str]| keys.iter().any(|k| fields.get(*k).is_some_and(|v| !v.is_null()));
    if has(&["cron", "schedule", "expression"]) {
        Some("schedule")
    } else if has(&["every", "interval", "every_seconds", "interval_seconds", "every_minutes", "interval_minutes"]) {
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

pub(super) fn schedule_fields(fields: &mut Map<String, Value>, notes: &mut Notes) -> Result<Map<String, Value>, String> {
    let tz = take(fields, &["tz", "timezone", "time_zone", "timeZone"]);
    let mut schedule = match take(fields, &["cron", "schedule", "expression", "expr", "crontab", "at"]) {
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
            return Err(format!("schedule trigger's cron must be text, got {}; imported as manual", kind_of(&other)));
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

pub(super) enum CronText {
    Preset(String),
    Cron(String),
}

pub(super) fn cron_from_text(text: &str, fields: &Map<String, Value>, notes: &mut Notes) -> CronText {
    let t = text.trim();
    let macro_cron = match t.to_ascii_lowercase().as_str() {
        "@hourly" => Some("0 * * * *"),
        "@daily" | "@midnight" => Some("0 0 * * *"),
        "@weekly" => Some("0 0 * * 0"),
        "@monthly" => Some("0 0 1 * *"),
        "@yearly" | "@annually" => Some("0 0 1 1 *"),
        preset @ ("hourly" | "daily" | "weekdays" | "weekly") if fields.contains_key("time") || preset == "hourly" => {
            return CronText::Preset(preset.to_string());
        }
        _ => None,
    };
    if let Some(cron) = macro_cron {
        return CronText::Cron(cron.to_string());
    }
    let parts: Vec<&str> = t.split_whitespace().collect();
    if parts.len() == 6 && schedule::validate_cron(&parts[1..].join(" ")).is_ok() {
        notes.add(format!("cron {t:?} has a seconds field; it was dropped (schedules fire on whole minutes)"));
        return CronText::Cron(parts[1..].join(" "));
    }
    CronText::Cron(t.to_string())
}

pub(super) fn heartbeat_fields(fields: &mut Map<String, Value>, notes: &mut Notes) -> Result<Map<String, Value>, String> {
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
    if let Some(window) = take(fields, &["window", "active_hours", "hours", "between", "during"]) {
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
pub(super) fn window_text(v: Value) -> Value {
    let pair = match &v {
        Value::Object(o) => {
            let get = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k)?.as_str().map(str::to_string));
            get(&["start", "from", "begin", "open"]).zip(get(&["end", "to", "until", "close"]))
        }
        Value::Array(items) if items.len() == 2 => items[0].as_str().map(str::to_string).zip(items[1].as_str().map(str::to_string)),
        _ => None,
    };
    match pair {
        Some((a, b)) => json!(format!("{}-{}", a.trim(), b.trim())),
        None => v,
    }
}

/// `"mon,tue"` from `["Monday", "Tuesday"]` or `[1, 2]` (0 = Sunday), or the string itself.
pub(super) fn days_text(v: Value) -> Value {
    const NAMES: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let Value::Array(items) = &v else { return v };
    let names: Option<Vec<String>> = items
        .iter()
        .map(|item| match item {
            Value::String(s) => {
                let short: String = s.trim().chars().take(3).collect::<String>().to_ascii_lowercase();
                NAMES.contains(&short.as_str()).then_some(short)
            }
            Value::Number(_) => item.as_u64().and_then(|n| NAMES.get(usize::try_from(n % 7).ok()?)).map(|s| s.to_string()),
            _ => None,
        })
        .collect();
    match names {
        Some(names) if !names.is_empty() => json!(names.join(",")),
        _ => v,
    }
}

pub(super) fn event_fields(fields: &mut Map<String, Value>) -> Result<Map<String, Value>, String> {
    let sources = match take(fields, &["sources", "source", "events", "event", "topics", "topic", "from", "listen"]) {
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

pub(super) fn folder_fields(fields: &mut Map<String, Value>) -> Result<Map<String, Value>, String> {
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

pub(super) fn watch_fields(fields: &mut Map<String, Value>) -> Result<Map<String, Value>, String> {
    let Some(command) = take(fields, &["command", "cmd", "run"]) else {
        let plugin = fields.get("plugin").and_then(Value::as_str).map(|p| format!(" (plugin {p:?})")).unwrap_or_default();
        return Err(format!(
            "watch trigger without a command{plugin}: a watch here runs a command that prints NDJSON lines; imported as manual"
        ));
    };
    let mut m = Map::new();
    m.insert("command".into(), command);
    for (ours, aliases) in
        [("restart_delay_seconds", &["restart_delay_seconds", "restart_delay"][..]), ("dedupe_minutes", &["dedupe_minutes", "dedupe"][..])]
    {
        if let Some(v) = take(fields, aliases) {
            m.insert(ours.into(), v);
        }
    }
    Ok(m)
}
