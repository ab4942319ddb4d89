//! Time rules of triggers and the wait node (SPEC §3 wait, §10, §18): cron validation and
//! next-fire computation, schedule presets, the human line, durations, heartbeat windows and days.
//! Trigger nodes themselves are read by [`crate::trigger`].
//!
//! It exists so that the validator, the designer's verdict, the scheduler and the engine read one
//! rule for every time-shaped field instead of each parsing strings its own way.
//!
//! Invariants:
//! - Pure: no clock, no I/O; callers pass `after`/`last`/`minute_of_day`. Instants in and out are
//!   UTC; cron fields, heartbeat windows and days are wall-clock times in the trigger's `tz`
//!   (IANA names from the bundled `chrono-tz` database, plus `UTC`/`Z`; default UTC).
//! - No function panics on any input; every problem is a [`ScheduleError`] whose `field` names the
//!   JSON field it is about and whose message names the offending value.
//! - Cron is the strict five-field subset of SPEC §10 (`*`, `n`, `a-b`, `*/n`, `a-b/n`, lists),
//!   fields separated by spaces or tabs and nothing else; what [`validate_cron`] accepts fires
//!   some day, [`next_cron_fire`] finds that day, and [`human`] never guesses.
//! - Day-of-month and day-of-week combine as in cronie (its `DOM_STAR`/`DOW_STAR` flags): a field
//!   that starts with `*` (`*`, `*/2`) is unrestricted; when neither is, a day matches when either
//!   matches; otherwise both must.
//! - Daylight-saving changes, for cron fires and heartbeat window openings alike: a wall time that
//!   does not exist (the spring-forward gap) happens at the first valid instant after the gap, so
//!   a daily job is not skipped that day; a wall time that occurs twice (fall-back) happens once,
//!   at its first occurrence, except for cron jobs that fire every hour, which keep firing through
//!   the repeated hour. Heartbeat intervals are real elapsed time, not wall-clock time.

use std::str::FromStr;

use chrono::{DateTime, Datelike, LocalResult, Months, NaiveDate, NaiveDateTime, Offset, TimeDelta, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::limits;

/// A problem with a schedule, trigger or wait field. `field` is the JSON field name the problem is
/// about (for example `"cron"`, `"time"`, `"every"`), `None` when no single field is to blame.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
#[error("{message}")]
pub struct ScheduleError {
    pub field: Option<String>,
    pub message: String,
}

impl ScheduleError {
    pub(crate) fn new(field: &str, message: impl Into<String>) -> Self {
        Self { field: Some(field.to_string()), message: message.into() }
    }
    fn bare(message: impl Into<String>) -> Self {
        Self { field: None, message: message.into() }
    }
    pub(crate) fn in_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_string());
        self
    }
}

/// How many days (or whole months skipped) [`next_cron_fire`] looks through: one Gregorian cycle
/// of 400 years, after which the calendar and its weekdays repeat. An expression that passes
/// validation fires within it (a 29 February on a given weekday can be 40 years away); an
/// algorithm bound, not a contract limit.
const CRON_SEARCH_STEPS: u32 = 146_097 + 1;
/// How many matching wall times [`next_cron_fire_tz`] may pass over because they already happened
/// (their first occurrence lies before `after`, inside a fall-back overlap). An overlap lasts at
/// most a few hours, so one day of minutes is ample.
const OVERLAP_SKIPS: u32 = 24 * 60 + 1;
/// How far past a non-existent wall time the first valid one is looked for, in minutes. The
/// longest gaps on record are a whole day (Pacific/Apia skipped 2011-12-30).
const GAP_SEARCH_MINUTES: u32 = 2 * 24 * 60;
/// How many local days [`Heartbeat::next_heartbeat`] inspects for a window opening: the day before
/// (a wrapping window may have opened then) and the eight after, so a week of disallowed days is
/// crossed.
const HEARTBEAT_SEARCH_DAYS: u32 = 10;

mod cron;
mod duration;
mod heartbeat;
mod human;
pub mod job;
mod object;

pub use cron::*;
pub use duration::*;
pub use heartbeat::*;
pub use object::*;

/// Days of the week by cron number (0 = Sunday), as the human lines and the forms name them.
pub const DAY_NAMES: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const DAY_ABBREVIATIONS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const DURATION_HINT: &str = "use whole numbers with d, h, m or s, e.g. \"30s\", \"5m\", \"1h30m\", \"7d\"";

// ---------------------------------------------------------------------------------------------
// Wait nodes
// ---------------------------------------------------------------------------------------------

/// Seconds a `wait` node waits (SPEC §3): exactly one of `seconds` (whole number) or `duration`
/// (`"30s"`, `"5m"`, `"1h"`), within 1 s – 1 h.
pub fn wait_seconds(node: &Map<String, Value>) -> Result<u64, ScheduleError> {
    let (lo, hi) = limits::WAIT_SECONDS;
    let secs = match (present(node, "seconds"), present(node, "duration")) {
        (Some(_), Some(_)) => {
            return Err(ScheduleError::new("seconds", "a wait takes seconds or duration, not both"));
        }
        (None, None) => {
            return Err(ScheduleError::new("seconds", format!("a wait needs seconds ({lo}-{hi}) or a duration (\"30s\", \"5m\", \"1h\")")));
        }
        (Some(v), None) => v
            .as_u64()
            .ok_or_else(|| ScheduleError::new("seconds", format!("seconds must be a whole number from {lo} to {hi}, got {}", shown(v))))?,
        (None, Some(Value::String(s))) => {
            let secs = parse_duration(s).map_err(|e| e.in_field("duration"))?;
            if !limits::within(secs, limits::WAIT_SECONDS) {
                return Err(ScheduleError::new(
                    "duration",
                    format!("duration \"{s}\" is {secs} seconds; a wait lasts {lo} to {hi} seconds (1s to 1h)"),
                ));
            }
            secs
        }
        (None, Some(other)) => {
            return Err(ScheduleError::new(
                "duration",
                format!("duration must be a string like \"30s\", \"5m\" or \"1h\", got {}", describe(other)),
            ));
        }
    };
    if !limits::within(secs, limits::WAIT_SECONDS) {
        return Err(ScheduleError::new("seconds", format!("seconds must be from {lo} to {hi} (1s to 1h), got {secs}")));
    }
    Ok(secs)
}

// ---------------------------------------------------------------------------------------------
// JSON helpers
// ---------------------------------------------------------------------------------------------

/// A field's value, with `null` counted as absent.
pub(crate) fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// The JSON type of a value, for "got …" in messages (numbers shown as written).
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => n.to_string(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Like [`describe`], but short strings are shown quoted.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() <= 40 => format!("\"{s}\""),
        other => describe(other),
    }
}

#[cfg(test)]
mod tests;
