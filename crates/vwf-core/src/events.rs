//! Which designs an emitted event starts (SPEC §10, event triggers).
//!
//! A design whose trigger has `mode: event` lists `sources`: exact event names, or `prefix.*`
//! to take every event under `prefix.`. Pure matching only; the runner does the starting.

use serde_json::{Map, Value};

/// Whether `source` (`name` or `prefix.*`) takes event `event`.
pub fn source_matches(source: &str, event: &str) -> bool {
    match source.strip_suffix(".*") {
        Some(prefix) => event.len() > prefix.len() + 1 && event.starts_with(prefix) && event.as_bytes()[prefix.len()] == b'.',
        None => source == event,
    }
}

/// For a trigger node: `Some(cooldown_seconds)` when it is an event trigger that takes `event`.
pub fn listens(trigger: &Map<String, Value>, event: &str) -> Option<u64> {
    if trigger.get("mode").and_then(Value::as_str) != Some("event") {
        return None;
    }
    let sources = trigger.get("sources")?.as_array()?;
    sources
        .iter()
        .filter_map(Value::as_str)
        .any(|s| source_matches(s, event))
        .then(|| trigger.get("cooldown_seconds").and_then(Value::as_u64).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exact_and_prefix_sources() {
        assert!(source_matches("build.done", "build.done"));
        assert!(!source_matches("build.done", "build.done.x"));
        assert!(source_matches("build.*", "build.done"));
        assert!(source_matches("build.*", "build.done.eu"));
        assert!(!source_matches("build.*", "build"));
        assert!(!source_matches("build.*", "builds.done"));
        assert!(!source_matches("build.*", "build."));
    }

    #[test]
    fn only_event_triggers_listen() {
        let t = json!({"id": "t", "type": "trigger", "mode": "event", "sources": ["a.*"], "cooldown_seconds": 30});
        assert_eq!(listens(t.as_object().unwrap(), "a.b"), Some(30));
        assert_eq!(listens(t.as_object().unwrap(), "b"), None);
        let manual = json!({"id": "t", "type": "trigger", "mode": "manual", "sources": ["a.*"]});
        assert_eq!(listens(manual.as_object().unwrap(), "a.b"), None);
    }
}
