//! How the daemon describes a design's trigger in its log and in `vwf daemon`'s table.

use vwf_core::schedule::Heartbeat;
use vwf_core::trigger::{FolderEvent, TriggerMode};

use super::{Live, Trigger};

pub(super) fn describe(trigger: &Trigger) -> String {
    match trigger {
        Trigger::Other(mode) => mode.to_string(),
        Trigger::Heartbeat(h) => format!("heartbeat ({})", heartbeat_detail(h)),
        Trigger::Folder(f) => format!("folder ({} {})", f.path, f.pattern),
        Trigger::Watch(w) => format!("watch ({})", shown_argv(&w.argv)),
        Trigger::Invalid(why) => format!("invalid ({why})"),
        Trigger::Disabled(mode) => format!("{mode}, disabled"),
    }
}

pub(super) fn event_names(events: &[FolderEvent], separator: &str) -> String {
    events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(separator)
}

pub(super) fn other_detail(mode: TriggerMode) -> &'static str {
    match mode {
        TriggerMode::Event => "started by emitted events (vwf emit, emit nodes), not by the daemon",
        _ => "started by hand only",
    }
}

pub(super) fn heartbeat_detail(h: &Heartbeat) -> String {
    let mut s = format!("every {}", human_seconds(h.every_seconds));
    if let Some((start, end)) = h.window {
        s.push_str(&format!(", {:02}:{:02}-{:02}:{:02}", start / 60, start % 60, end / 60, end % 60));
    }
    if h.days != [true; 7] {
        const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let days: Vec<&str> = DAYS.iter().zip(h.days).filter(|(_, on)| *on).map(|(d, _)| *d).collect();
        s.push_str(&format!(", {}", days.join(",")));
    }
    if h.tz.name() != "UTC" {
        s.push_str(&format!(" ({})", h.tz.name()));
    }
    s
}

pub(super) fn human_seconds(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

pub(super) fn down_note(live: &Live) -> String {
    match live {
        Live::Down { why, .. } => format!(" — not running: {why}"),
        _ => String::new(),
    }
}

pub(super) fn shown_argv(argv: &[String]) -> String {
    match argv {
        [sh, c, script] if sh == "sh" && c == "-c" => format!("sh -c {script:?}"),
        _ => format!("{argv:?}"),
    }
}
