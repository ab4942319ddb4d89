//! Which designs an emitted event starts (SPEC §10, event triggers).
//!
//! A design whose trigger has `mode: event` lists `sources`: exact event names, or `prefix.*`
//! to take every event under `prefix.`. Pure matching only ([`crate::trigger::Trigger::listens`]
//! applies it to a trigger); the runner does the starting.

/// Whether `source` (`name` or `prefix.*`) takes event `event`.
pub fn source_matches(source: &str, event: &str) -> bool {
    match source.strip_suffix(".*") {
        Some(prefix) => event.len() > prefix.len() + 1 && event.starts_with(prefix) && event.as_bytes()[prefix.len()] == b'.',
        None => source == event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
