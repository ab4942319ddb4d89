//! Schedules: `<cron or text>` NUL `<JSON: a schedule object or trigger node>` NUL `<tape>`.
//!
//! Every parser and every next-fire computation is total, and the answers keep their promises:
//! a next fire lies strictly after the instant asked about (cron, schedule objects), a valid cron
//! has a human line, a heartbeat's next fire is never before `after` and lies in its window.
#![no_main]

use chrono::{DateTime, Timelike, Utc};
use libfuzzer_sys::fuzz_target;
use vwf_core::{json, schedule, trigger};
use vwf_fuzz::{Tape, sections};

fuzz_target!(|data: &[u8]| {
    let [text, object, tape] = sections::<3>(data);
    let mut tape = Tape::new(tape);
    let after = instant(&mut tape);
    let last = (tape.byte() % 2 == 1).then(|| instant(&mut tape));
    let tz = tape.pick(&[
        None,
        Some("UTC"),
        Some("Europe/Berlin"),
        Some("America/New_York"),
        Some("Pacific/Apia"),
        Some("Australia/Lord_Howe"),
        Some("Asia/Kathmandu"),
        Some("Nowhere"),
    ]);

    if let Ok(text) = std::str::from_utf8(text) {
        let valid = schedule::validate_cron(text).is_ok();
        let line = schedule::human(text);
        assert!(!valid || !line.is_empty(), "valid cron {text:?} has no human line");
        for zone in [None, tz, Some(text)] {
            if let Some(t) = schedule::next_cron_fire_tz(text, zone, after) {
                assert!(valid && t > after, "{text:?} in {zone:?} fires at {t}, not after {after}");
                // Whole minutes of wall time; zones kept their local mean time (offsets with
                // seconds) until the 20th century, so only in UTC is that a whole UTC minute.
                if zone.is_none_or(|z| z == "UTC") {
                    assert_eq!(t.second(), 0, "{text:?} fires at {t}");
                }
            }
        }
        let _ = schedule::parse_duration(text);
        let _ = schedule::parse_window(text).map(|w| schedule::in_window(Some(w), tape.u32() % 2000));
        let _ = schedule::parse_days(text);
        let _ = schedule::validate_tz(text);
        let _ = trigger::is_event_name(text);
    }

    let Ok(value) = json::parse_slice(object) else { return };
    if let Ok(s) = schedule::schedule_from_value(&value) {
        if let Ok(cron) = schedule::to_cron(&s) {
            assert!(schedule::validate_cron(&cron).is_ok(), "{s:?} gives invalid cron {cron:?}");
        }
        if let Some(t) = schedule::next_schedule_fire(&s, after) {
            assert!(t > after, "{s:?} fires at {t}, not after {after}");
        }
    }
    let Some(node) = value.as_object() else { return };
    let _ = trigger::Trigger::parse(node);
    let _ = schedule::wait_seconds(node);
    if let Ok(hb) = trigger::heartbeat_from_node(node)
        && let Some(t) = hb.next_heartbeat(after, last)
    {
        assert!(t >= after, "heartbeat fires at {t}, before {after}");
    }
});

/// An instant: mostly near now, sometimes anywhere a timestamp can be.
fn instant(tape: &mut Tape<'_>) -> DateTime<Utc> {
    let secs = match tape.below(4) {
        0 => tape.u64() as i64,
        _ => 1_700_000_000 + i64::from(tape.u32() % 400_000_000),
    };
    DateTime::from_timestamp(secs, 0).unwrap_or(DateTime::<Utc>::MAX_UTC)
}
