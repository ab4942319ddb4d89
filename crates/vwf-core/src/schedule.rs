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

use chrono::{
    DateTime, Datelike, LocalResult, Months, NaiveDate, NaiveDateTime, Offset, TimeDelta,
    TimeZone, Timelike, Utc,
};
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
        Self {
            field: Some(field.to_string()),
            message: message.into(),
        }
    }
    fn bare(message: impl Into<String>) -> Self {
        Self {
            field: None,
            message: message.into(),
        }
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

mod human;

const DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const DAY_ABBREVIATIONS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
const PRESETS: &str = "hourly, daily, weekdays, weekly or custom";
const DURATION_HINT: &str = "use whole numbers with h, m or s, e.g. \"30s\", \"5m\", \"1h30m\"";

// ---------------------------------------------------------------------------------------------
// Cron
// ---------------------------------------------------------------------------------------------

struct CronField {
    name: &'static str,
    lo: u32,
    hi: u32,
}

const CRON_FIELDS: [CronField; 5] = [
    CronField {
        name: "minute",
        lo: 0,
        hi: 59,
    },
    CronField {
        name: "hour",
        lo: 0,
        hi: 23,
    },
    CronField {
        name: "day-of-month",
        lo: 1,
        hi: 31,
    },
    CronField {
        name: "month",
        lo: 1,
        hi: 12,
    },
    CronField {
        name: "day-of-week",
        lo: 0,
        hi: 6,
    },
];

/// A parsed expression: bit `n` of a mask set when value `n` matches.
struct CronSpec {
    masks: [u64; 5],
    /// Day-of-month / day-of-week starting with `*` (cronie's `DOM_STAR`/`DOW_STAR`).
    dom_star: bool,
    dow_star: bool,
}

/// The only characters that separate cron fields.
const CRON_BLANKS: [char; 2] = [' ', '\t'];

/// Days a month can have (February in a leap year), index 0 = January.
const MONTH_DAYS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

impl CronSpec {
    /// Whether every hour of the day matches.
    fn every_hour(&self) -> bool {
        self.masks[1] & 0xFF_FFFF == 0xFF_FFFF
    }

    fn parse(expr: &str) -> Result<Self, ScheduleError> {
        let parts: Vec<&str> = expr.split(CRON_BLANKS).filter(|p| !p.is_empty()).collect();
        if let Some((i, c)) = parts
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.chars().find(|c| c.is_whitespace() || c.is_control()).map(|c| (i, c)))
        {
            let place = CRON_FIELDS.get(i).map_or("the expression".to_string(), |f| format!("{} field {:?}", f.name, parts[i]));
            return Err(ScheduleError::new(
                "cron",
                format!("{place} contains U+{:04X}: cron fields are separated by spaces or tabs only", u32::from(c)),
            ));
        }
        if parts.len() != 5 {
            return Err(ScheduleError::new(
                "cron",
                format!(
                    "cron needs exactly five fields (minute hour day-of-month month day-of-week), got {}",
                    parts.len()
                ),
            ));
        }
        let mut masks = [0u64; 5];
        for ((mask, text), field) in masks.iter_mut().zip(&parts).zip(&CRON_FIELDS) {
            *mask = parse_cron_field(text, field)?;
        }
        let spec = Self {
            masks,
            dom_star: parts[2].starts_with('*'),
            dow_star: parts[4].starts_with('*'),
        };
        if spec.never_fires() {
            return Err(ScheduleError::new(
                "cron",
                format!(
                    "\"{}\" never fires: no day-of-month in \"{}\" occurs in month \"{}\"",
                    parts.join(" "),
                    parts[2],
                    parts[3]
                ),
            ));
        }
        Ok(spec)
    }

    /// Whether no day can ever match. When day-of-month and day-of-week are both restricted a
    /// day matches either, and every month has every weekday. Otherwise a day must match both,
    /// and every date recurs on every weekday within the 400-year cycle (29 February within 28
    /// leap years): so it never fires exactly when no allowed day-of-month exists in an allowed
    /// month.
    fn never_fires(&self) -> bool {
        if !self.dom_star && !self.dow_star {
            return false;
        }
        !(1..=12u32).any(|m| self.has(3, m) && (1..=MONTH_DAYS[m as usize - 1]).any(|d| self.has(2, d)))
    }

    fn has(&self, index: usize, value: u32) -> bool {
        value < 64 && self.masks[index] & (1u64 << value) != 0
    }

    /// The first wall-clock minute at or after `from` (whole minutes) that matches.
    fn next_wall(&self, from: NaiveDateTime) -> Option<NaiveDateTime> {
        let mut date = from.date();
        let (mut first_hour, mut first_minute) = (from.hour(), from.minute());
        for _ in 0..CRON_SEARCH_STEPS {
            if !self.has(3, date.month()) {
                // A month that never matches is skipped whole.
                date = date.with_day(1)?.checked_add_months(Months::new(1))?;
                (first_hour, first_minute) = (0, 0);
                continue;
            }
            if self.day_matches(date) {
                for hour in (first_hour..24).filter(|&h| self.has(1, h)) {
                    let start = if hour == first_hour { first_minute } else { 0 };
                    if let Some(minute) = (start..60).find(|&m| self.has(0, m)) {
                        return date.and_hms_opt(hour, minute, 0);
                    }
                }
            }
            date = date.succ_opt()?;
            (first_hour, first_minute) = (0, 0);
        }
        None
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        if !self.has(3, date.month()) {
            return false;
        }
        let dom = self.has(2, date.day());
        let dow = self.has(4, date.weekday().num_days_from_sunday());
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }
}

fn parse_cron_field(text: &str, field: &CronField) -> Result<u64, ScheduleError> {
    let fail = |detail: String| {
        ScheduleError::new("cron", format!("{} field \"{text}\": {detail}", field.name))
    };
    let negative = || {
        fail(format!(
            "negative numbers are not allowed; the {} takes {}-{}",
            field.name, field.lo, field.hi
        ))
    };
    let number = |s: &str| -> Result<u32, ScheduleError> {
        if s.starts_with('-') {
            return Err(negative());
        }
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            let shown = if s.is_empty() {
                "(nothing)".to_string()
            } else {
                format!("\"{s}\"")
            };
            return Err(fail(format!("{shown} is not a number")));
        }
        match s.parse::<u32>() {
            Ok(n) if (field.lo..=field.hi).contains(&n) => Ok(n),
            _ => Err(fail(format!(
                "value {s} out of range {}-{}",
                field.lo, field.hi
            ))),
        }
    };
    let span = field.hi - field.lo + 1;
    let mut mask = 0u64;
    for item in text.split(',') {
        if item.is_empty() {
            return Err(fail("empty list item".into()));
        }
        let (base, step) = match item.split_once('/') {
            None => (item, None),
            Some((base, step)) => {
                if step.starts_with('-') {
                    return Err(negative());
                }
                if step.is_empty() || !step.bytes().all(|b| b.is_ascii_digit()) {
                    let shown = if step.is_empty() {
                        "(nothing)".to_string()
                    } else {
                        format!("\"{step}\"")
                    };
                    return Err(fail(format!("step {shown} is not a number")));
                }
                match step.parse::<u32>() {
                    Ok(0) => return Err(fail("step must be at least 1, got 0".into())),
                    Ok(n) if n <= span => (base, Some(n)),
                    _ => {
                        return Err(fail(format!(
                            "step {step} is larger than the field's {span} values"
                        )));
                    }
                }
            }
        };
        let (start, end) = if base == "*" {
            (field.lo, field.hi)
        } else if base.starts_with('-') {
            return Err(negative());
        } else if let Some((a, b)) = base.split_once('-') {
            let (a, b) = (number(a)?, number(b)?);
            if a > b {
                return Err(fail(format!("range start {a} is greater than its end {b}")));
            }
            (a, b)
        } else if step.is_some() {
            return Err(fail(format!(
                "a step needs * or a range before the slash (e.g. */{0} or 0-30/{0})",
                step.unwrap_or(1)
            )));
        } else {
            let n = number(base)?;
            (n, n)
        };
        let step = step.unwrap_or(1) as usize;
        for v in (start..=end).step_by(step) {
            mask |= 1u64 << v;
        }
    }
    Ok(mask)
}

/// Checks a five-field cron expression (SPEC §10). The error names the field at fault, e.g.
/// `hour field "25": value 25 out of range 0-23`; its `field` is `"cron"`.
pub fn validate_cron(expr: &str) -> Result<(), ScheduleError> {
    CronSpec::parse(expr).map(|_| ())
}

/// The first whole minute strictly after `after` that matches `cron` (UTC), or `None` when the
/// expression is invalid or nothing matches within about five years (e.g. `0 0 31 2 *`).
pub fn next_cron_fire(cron: &str, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    next_cron_fire_tz(cron, None, after)
}

/// The first fire strictly after `after` of `cron` read as wall-clock times in `tz` (default UTC),
/// or `None` when the expression or the zone is invalid or nothing matches within about five
/// years.
///
/// Daylight-saving rules: a matching wall time inside a spring-forward gap fires at the first
/// valid instant after the gap (`30 2 * * *` in Europe/Berlin fires at 03:00 CEST on the day the
/// clocks skip 02:00–03:00); a matching wall time that occurs twice at fall-back fires once, at
/// its first occurrence, unless the job fires every hour: then both occurrences fire.
pub fn next_cron_fire_tz(
    cron: &str,
    tz: Option<&str>,
    after: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    let spec = CronSpec::parse(cron).ok()?;
    let zone = match tz {
        None => Tz::UTC,
        Some(name) => parse_tz(name).ok()?,
    };
    // Walls map to instants monotonically (first occurrences, gaps pushed to their end), and the
    // wall of `after` itself maps to an instant no later than `after`: so the answer is the first
    // matching wall after it whose instant is after `after`.
    let local = local_wall(zone, after)?;
    let mut from = local
        .date()
        .and_hms_opt(local.hour(), local.minute(), 0)?
        .checked_add_signed(TimeDelta::minutes(1))?;
    let mut first = None;
    for _ in 0..OVERLAP_SKIPS {
        let wall = spec.next_wall(from)?;
        let instant = resolve_wall(zone, wall)?;
        if instant > after {
            first = Some(instant);
            break;
        }
        from = wall.checked_add_signed(TimeDelta::minutes(1))?;
    }
    // A job that fires every hour keeps firing through an hour the clocks repeat: the second
    // occurrence of a repeated wall time counts too. It lies within an hour of its first, so
    // only walls near `after` can give one earlier than `first`.
    if spec.every_hour()
        && let Some(second) = second_occurrence(&spec, zone, local, after)
        && first.is_none_or(|f| second < f)
    {
        first = Some(second);
    }
    first
}

/// The earliest second occurrence after `after` of a repeated wall time matching `spec`, among
/// the walls within two hours of `local` (the only ones whose second occurrence can come before
/// the next first occurrence).
fn second_occurrence(spec: &CronSpec, zone: Tz, local: NaiveDateTime, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let end = local.checked_add_signed(TimeDelta::hours(2))?;
    let mut wall = spec.next_wall(local.checked_sub_signed(TimeDelta::hours(2))?)?;
    let mut best: Option<DateTime<Utc>> = None;
    while wall <= end {
        if let LocalResult::Ambiguous(a, b) = zone.from_local_datetime(&wall) {
            let second = a.max(b).with_timezone(&Utc);
            if second > after && best.is_none_or(|x| second < x) {
                best = Some(second);
            }
        }
        wall = spec.next_wall(wall.checked_add_signed(TimeDelta::minutes(1))?)?;
    }
    best
}

/// The next fire of a schedule object: its cron in its `tz`. `None` when the schedule is invalid
/// (see [`to_cron`]) or never fires.
pub fn next_schedule_fire(schedule: &Schedule, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let cron = to_cron(schedule).ok()?;
    next_cron_fire_tz(&cron, schedule.tz.as_deref(), after)
}

/// The wall-clock time in `zone` at instant `t`; `None` at the edges of the representable range.
fn local_wall(zone: Tz, t: DateTime<Utc>) -> Option<NaiveDateTime> {
    let offset = zone.offset_from_utc_datetime(&t.naive_utc()).fix();
    t.naive_utc().checked_add_offset(offset)
}

/// The instant a wall-clock time stands for in `zone`, by the daylight-saving rules of this
/// module: an ambiguous wall is its first occurrence, a non-existent one the first valid instant
/// after the gap.
fn resolve_wall(zone: Tz, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
    let mut candidate = wall;
    for _ in 0..=GAP_SEARCH_MINUTES {
        match zone.from_local_datetime(&candidate) {
            LocalResult::Single(t) => return Some(t.with_timezone(&Utc)),
            LocalResult::Ambiguous(a, b) => return Some(a.min(b).with_timezone(&Utc)),
            LocalResult::None => candidate = candidate.checked_add_signed(TimeDelta::minutes(1))?,
        }
    }
    None
}

/// A human line for a cron expression when it can be said exactly (SPEC §10), else
/// `Cron <expression>`: `Hourly at :15`, `Daily at 09:00`, `Weekdays at 09:00`,
/// `Weekly on Monday at 09:00`, and the custom shapes of [`human`](mod@human) (`Every 15 minutes
/// from 09:00 to 17:45 on weekdays`).
pub fn human(cron: &str) -> String {
    let expr = cron.trim_matches(CRON_BLANKS);
    match CronSpec::parse(expr).ok().and_then(|spec| human::Said::of(&spec)) {
        Some(said) => said.line(),
        None => format!("Cron {expr}").trim_end().to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Schedule objects
// ---------------------------------------------------------------------------------------------

/// The `schedule` object of a schedule trigger: `{preset, time?, minute?, dow?, cron?, tz?}`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Schedule {
    pub preset: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dow: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
}

/// Reads a schedule object, with an error naming the field for every wrong JSON type. A `null`
/// field counts as absent; unknown fields are ignored. Values are checked by [`to_cron`].
pub fn schedule_from_value(v: &Value) -> Result<Schedule, ScheduleError> {
    let Some(obj) = v.as_object() else {
        return Err(ScheduleError::bare(format!(
            "schedule must be an object like {{\"preset\": \"daily\", \"time\": \"09:00\"}}, got {}",
            describe(v)
        )));
    };
    let preset = match present(obj, "preset") {
        None => {
            return Err(ScheduleError::new(
                "preset",
                format!("schedule needs a preset ({PRESETS})"),
            ));
        }
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ScheduleError::new(
                "preset",
                format!(
                    "preset must be a string ({PRESETS}), got {}",
                    describe(other)
                ),
            ));
        }
    };
    Ok(Schedule {
        preset,
        time: optional_string(obj, "time", "a 24-hour time like \"09:00\"")?,
        minute: optional_u32(obj, "minute", "0-59")?,
        dow: optional_u32(obj, "dow", "0-6, 0 = Sunday")?,
        cron: optional_string(obj, "cron", "a cron expression like \"*/15 * * * *\"")?,
        tz: optional_string(obj, "tz", "a time zone like \"UTC\" or \"Europe/Paris\"")?,
    })
}

fn optional_string(
    obj: &Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<String>, ScheduleError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ScheduleError::new(
            key,
            format!("{key} must be a string ({what}), got {}", describe(other)),
        )),
    }
}

fn optional_u32(
    obj: &Map<String, Value>,
    key: &str,
    range: &str,
) -> Result<Option<u32>, ScheduleError> {
    match present(obj, key) {
        None => Ok(None),
        // A whole number written with a fraction (`6.0`) is still that whole number, as in JSON
        // Schema's `integer`.
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(f)).map(|f| f as u64))
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ScheduleError::new(
                    key,
                    format!(
                        "{key} must be a whole number ({range}), got {}",
                        describe(v)
                    ),
                )
            }),
    }
}

/// The cron expression a schedule stands for (SPEC §10 presets). Fields a preset does not use are
/// ignored; `tz` is syntax-checked whatever the preset.
pub fn to_cron(s: &Schedule) -> Result<String, ScheduleError> {
    if let Some(tz) = &s.tz {
        validate_tz(tz)?;
    }
    match s.preset.as_str() {
        "hourly" => {
            let from_time = match &s.time {
                Some(t) => Some(parse_time(t)?.1),
                None => None,
            };
            let minute = match s.minute {
                Some(m) if m > 59 => {
                    return Err(ScheduleError::new(
                        "minute",
                        format!("minute {m} out of range 0-59"),
                    ));
                }
                Some(m) => m,
                None => from_time.unwrap_or(0),
            };
            Ok(format!("{minute} * * * *"))
        }
        preset @ ("daily" | "weekdays" | "weekly") => {
            let Some(time) = &s.time else {
                return Err(ScheduleError::new(
                    "time",
                    format!("a {preset} schedule needs a time, e.g. \"09:00\""),
                ));
            };
            let (hour, minute) = parse_time(time)?;
            let dow = match (preset, s.dow) {
                ("daily", _) => "*".to_string(),
                ("weekdays", _) => "1-5".to_string(),
                (_, Some(d)) if d > 6 => {
                    return Err(ScheduleError::new(
                        "dow",
                        format!("dow {d} out of range 0-6 (0 = Sunday)"),
                    ));
                }
                (_, d) => d.unwrap_or(1).to_string(),
            };
            Ok(format!("{minute} {hour} * * {dow}"))
        }
        "custom" => {
            let cron = s.cron.as_deref().map(|c| c.trim_matches(CRON_BLANKS)).unwrap_or("");
            if cron.is_empty() {
                return Err(ScheduleError::new(
                    "cron",
                    "a custom schedule needs a cron expression, e.g. \"*/15 * * * *\"",
                ));
            }
            validate_cron(cron)?;
            Ok(cron.to_string())
        }
        "" => Err(ScheduleError::new(
            "preset",
            format!("schedule needs a preset ({PRESETS})"),
        )),
        other => Err(ScheduleError::new(
            "preset",
            format!("unknown preset \"{other}\" (use {PRESETS})"),
        )),
    }
}

/// A 24-hour `HH:MM`, the hour also as one digit (`7:30` is `07:30`); surrounding whitespace is
/// ignored. Field `"time"`.
fn parse_time(s: &str) -> Result<(u32, u32), ScheduleError> {
    hh_mm(s).map_err(|detail| ScheduleError::new("time", format!("time \"{s}\" {detail}")))
}

fn hh_mm(s: &str) -> Result<(u32, u32), String> {
    let shape = || "must be a 24-hour time HH:MM, e.g. \"09:00\"".to_string();
    let (h, m) = s.trim().split_once(':').ok_or_else(shape)?;
    let digits = |t: &str, widths: &[usize]| widths.contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(h, &[1, 2]) || !digits(m, &[2]) {
        return Err(shape());
    }
    let (hour, minute) = (h.parse::<u32>().map_err(|_| shape())?, m.parse::<u32>().map_err(|_| shape())?);
    if hour > 23 {
        return Err(format!("has hour {hour:02} out of range 00-23"));
    }
    if minute > 59 {
        return Err(format!("has minute {minute:02} out of range 00-59"));
    }
    Ok((hour, minute))
}

/// Checks a time zone: `UTC`, `Z` or a name of the IANA database (`Europe/Paris`), exactly as
/// spelled there; surrounding whitespace is ignored. Field `"tz"`.
pub fn validate_tz(tz: &str) -> Result<(), ScheduleError> {
    parse_tz(tz).map(|_| ())
}

/// Every spelling [`validate_tz`] accepts (before trimming): `UTC`, `Z` and the IANA names.
pub fn time_zone_names() -> impl Iterator<Item = &'static str> {
    ["Z"].into_iter().chain(chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name()))
}

/// The zone [`validate_tz`] accepts, ready for computing wall-clock times. Field `"tz"`.
pub fn parse_tz(tz: &str) -> Result<Tz, ScheduleError> {
    match tz.trim() {
        "UTC" | "Z" => Ok(Tz::UTC),
        name => Tz::from_str(name).map_err(|_| {
            ScheduleError::new(
                "tz",
                format!(
                    "tz \"{tz}\" is not a known time zone (use \"UTC\" or an IANA name like \"Europe/Paris\")"
                ),
            )
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Durations, windows, days
// ---------------------------------------------------------------------------------------------

/// Seconds in a duration like `"30s"`, `"5m"`, `"1h"` or `"1h30m"`: positive whole numbers, each
/// followed by one of h, m, s, in that order and each at most once. `field` is `None`; callers
/// set it.
pub fn parse_duration(s: &str) -> Result<u64, ScheduleError> {
    let fail = |detail: String| ScheduleError::bare(format!("duration \"{s}\" {detail}"));
    let t = s.trim();
    if t.is_empty() {
        return Err(ScheduleError::bare(format!(
            "duration is empty ({DURATION_HINT})"
        )));
    }
    let mut rest = t;
    let mut total: u64 = 0;
    let mut last_rank: Option<usize> = None;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(fail(format!("is not a duration ({DURATION_HINT})")));
        }
        let (number, after) = rest.split_at(digits);
        let Some(unit) = after.chars().next() else {
            return Err(fail(format!(
                "has no unit after {number} ({DURATION_HINT})"
            )));
        };
        let (rank, scale) = match unit {
            'h' => (0, 3600),
            'm' => (1, 60),
            's' => (2, 1),
            other => {
                return Err(fail(format!(
                    "has unknown unit \"{other}\" ({DURATION_HINT})"
                )));
            }
        };
        if last_rank.is_some_and(|r| r >= rank) {
            return Err(fail(
                "must give h, m, s in that order, each at most once".into(),
            ));
        }
        last_rank = Some(rank);
        let amount = number
            .parse::<u64>()
            .map_err(|_| fail("is too large".into()))?;
        if amount == 0 {
            return Err(fail(format!("must use positive amounts ({DURATION_HINT})")));
        }
        total = amount
            .checked_mul(scale)
            .and_then(|secs| total.checked_add(secs))
            .ok_or_else(|| fail("is too large".into()))?;
        rest = &after[unit.len_utf8()..];
    }
    Ok(total)
}

/// A daily window `"HH:MM-HH:MM"` as minutes since midnight `(start, end)`; the end is exclusive.
/// `start > end` wraps midnight; `start == end` is an error. Field `"window"`.
pub fn parse_window(s: &str) -> Result<(u32, u32), ScheduleError> {
    let fail = |detail: String| ScheduleError::new("window", format!("window \"{s}\" {detail}"));
    let Some((a, b)) = s.split_once('-') else {
        return Err(fail("must look like \"08:00-18:00\"".into()));
    };
    let start = hh_mm(a).map_err(|d| fail(format!("start {d}")))?;
    let end = hh_mm(b).map_err(|d| fail(format!("end {d}")))?;
    let (start, end) = (start.0 * 60 + start.1, end.0 * 60 + end.1);
    if start == end {
        return Err(fail("is empty: start and end are the same".into()));
    }
    Ok((start, end))
}

/// Days of the week as `[bool; 7]`, index 0 = Sunday: `"mon-fri"`, `"sat,sun"`, `"mon,wed-fri"`,
/// `"fri-mon"` (a range may wrap), `"daily"` or `"*"` for all. Three-letter names, any case.
/// Field `"days"`.
pub fn parse_days(s: &str) -> Result<[bool; 7], ScheduleError> {
    let fail = |detail: String| ScheduleError::new("days", format!("days \"{s}\" {detail}"));
    let hint = "use sun, mon, tue, wed, thu, fri, sat, ranges like mon-fri, or daily";
    let t = s.trim().to_ascii_lowercase();
    if t == "daily" || t == "*" {
        return Ok([true; 7]);
    }
    if t.is_empty() {
        return Err(fail(format!("is empty ({hint})")));
    }
    let day = |name: &str| -> Result<usize, ScheduleError> {
        let name = name.trim();
        DAY_ABBREVIATIONS
            .iter()
            .position(|&d| d == name)
            .ok_or_else(|| fail(format!("has unknown day \"{name}\" ({hint})")))
    };
    let mut days = [false; 7];
    for item in t.split(',') {
        if item.trim().is_empty() {
            return Err(fail(format!("has an empty item ({hint})")));
        }
        match item.split_once('-') {
            None => days[day(item)?] = true,
            Some((a, b)) => {
                let (mut d, last) = (day(a)?, day(b)?);
                loop {
                    days[d] = true;
                    if d == last {
                        break;
                    }
                    d = (d + 1) % 7;
                }
            }
        }
    }
    Ok(days)
}

/// `true` when `minute_of_day` lies in the window (start inclusive, end exclusive, wrapping
/// midnight when start > end). No window means always.
pub fn in_window(window: Option<(u32, u32)>, minute_of_day: u32) -> bool {
    match window {
        None => true,
        Some((start, end)) if start < end => minute_of_day >= start && minute_of_day < end,
        Some((start, end)) if start > end => minute_of_day >= start || minute_of_day < end,
        Some(_) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Heartbeat
// ---------------------------------------------------------------------------------------------

/// A heartbeat trigger read from its node (SPEC §10): fire every `every_seconds` of real time,
/// only while the local wall clock of `tz` is inside `window` (minutes since midnight, end
/// exclusive, may wrap midnight) on one of `days` (index 0 = Sunday).
///
/// A window that wraps midnight belongs to the day it starts on: `22:00-06:00` with `mon-fri`
/// covers Friday 23:00 and Saturday 05:00, but not Monday 03:00 (that part opened on Sunday).
/// Without a window the whole of every allowed day is inside.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub every_seconds: u64,
    pub window: Option<(u32, u32)>,
    pub days: [bool; 7],
    pub tz: Tz,
}

impl Heartbeat {
    /// When the heartbeat fires next, given the current instant `after` and its `last` fire.
    ///
    /// The next tick is `last + every` (real elapsed time, so a daylight-saving change neither
    /// stretches nor shrinks an interval), or `after` itself when there was no fire yet or the
    /// tick is already past (missed ticks are caught up once, not one by one). A tick inside the
    /// window on an allowed day fires as is; otherwise the next fire is the next opening of the
    /// window on an allowed day (an opening inside a spring-forward gap happens when the gap ends,
    /// if the window is still open then, else not that day; one inside a fall-back overlap at its
    /// first occurrence, and at its second too when the clock went back out of the window in
    /// between). Every fire lies inside the window. `None` when nothing opens within about a week
    /// (no allowed day, which validation rules out) or at the edge of time.
    pub fn next_heartbeat(
        &self,
        after: DateTime<Utc>,
        last: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        let tick = match last {
            Some(last) => {
                let every = TimeDelta::try_seconds(i64::try_from(self.every_seconds).ok()?)?;
                last.checked_add_signed(every)?.max(after)
            }
            None => after,
        };
        if self.allows(tick) {
            return Some(tick);
        }
        self.next_opening(tick)
    }

    /// `true` when instant `t` lies inside the window of an allowed day, in local wall time.
    fn allows(&self, t: DateTime<Utc>) -> bool {
        let Some(wall) = local_wall(self.tz, t) else {
            return false;
        };
        let minute = wall.hour() * 60 + wall.minute();
        let today = wall.weekday().num_days_from_sunday() as usize;
        let yesterday = (today + 6) % 7;
        match self.window {
            None => self.days[today],
            Some((start, end)) if start < end => self.days[today] && in_window(self.window, minute),
            Some((start, end)) => {
                (minute >= start && self.days[today]) || (minute < end && self.days[yesterday])
            }
        }
    }

    /// The first opening of the window (midnight without one) on an allowed day at or after `from`.
    fn next_opening(&self, from: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let open = self.window.map_or(0, |(start, _)| start);
        let local = local_wall(self.tz, from)?;
        let mut date = local.date().pred_opt().unwrap_or(local.date());
        for _ in 0..HEARTBEAT_SEARCH_DAYS {
            if self.days[date.weekday().num_days_from_sunday() as usize] {
                let wall = date.and_hms_opt(open / 60, open % 60, 0)?;
                // An opening in a fall-back overlap happens at its first occurrence, and again at
                // its second when the clock went back out of the window in between.
                let openings = match self.tz.from_local_datetime(&wall) {
                    LocalResult::Ambiguous(a, b) => {
                        [Some(a.min(b)), Some(a.max(b))].map(|t| t.map(|t| t.with_timezone(&Utc)))
                    }
                    _ => [resolve_wall(self.tz, wall), None],
                };
                // An opening pushed out of the window by a clock change (a window inside the
                // spring-forward gap) does not happen that day.
                if let Some(t) = openings.into_iter().flatten().find(|t| *t >= from && self.allows(*t)) {
                    return Some(t);
                }
            }
            date = date.succ_opt()?;
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Wait nodes
// ---------------------------------------------------------------------------------------------

/// Seconds a `wait` node waits (SPEC §3): exactly one of `seconds` (whole number) or `duration`
/// (`"30s"`, `"5m"`, `"1h"`), within 1 s – 1 h.
pub fn wait_seconds(node: &Map<String, Value>) -> Result<u64, ScheduleError> {
    let (lo, hi) = limits::WAIT_SECONDS;
    let secs = match (present(node, "seconds"), present(node, "duration")) {
        (Some(_), Some(_)) => {
            return Err(ScheduleError::new(
                "seconds",
                "a wait takes seconds or duration, not both",
            ));
        }
        (None, None) => {
            return Err(ScheduleError::new(
                "seconds",
                format!("a wait needs seconds ({lo}-{hi}) or a duration (\"30s\", \"5m\", \"1h\")"),
            ));
        }
        (Some(v), None) => v.as_u64().ok_or_else(|| {
            ScheduleError::new(
                "seconds",
                format!(
                    "seconds must be a whole number from {lo} to {hi}, got {}",
                    shown(v)
                ),
            )
        })?,
        (None, Some(Value::String(s))) => {
            let secs = parse_duration(s).map_err(|e| e.in_field("duration"))?;
            if !limits::within(secs, limits::WAIT_SECONDS) {
                return Err(ScheduleError::new(
                    "duration",
                    format!(
                        "duration \"{s}\" is {secs} seconds; a wait lasts {lo} to {hi} seconds (1s to 1h)"
                    ),
                ));
            }
            secs
        }
        (None, Some(other)) => {
            return Err(ScheduleError::new(
                "duration",
                format!(
                    "duration must be a string like \"30s\", \"5m\" or \"1h\", got {}",
                    describe(other)
                ),
            ));
        }
    };
    if !limits::within(secs, limits::WAIT_SECONDS) {
        return Err(ScheduleError::new(
            "seconds",
            format!("seconds must be from {lo} to {hi} (1s to 1h), got {secs}"),
        ));
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
mod tests {
    use super::*;
    use crate::trigger::{EVENT_NAME_PATTERN, heartbeat_from_node, is_event_name, validate_trigger};
    use chrono::TimeZone;
    use proptest::prelude::*;
    use serde_json::json;

    fn sched(v: Value) -> Result<String, ScheduleError> {
        schedule_from_value(&v).and_then(|s| to_cron(&s))
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("test object expected"),
        }
    }

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0)
            .single()
            .expect("valid test date")
    }

    fn cron_err(expr: &str) -> String {
        let e = validate_cron(expr).expect_err(expr);
        assert_eq!(e.field.as_deref(), Some("cron"));
        e.message
    }

    fn fields(issues: &[ScheduleError]) -> Vec<&str> {
        issues
            .iter()
            .map(|e| e.field.as_deref().unwrap_or("-"))
            .collect()
    }

    #[test]
    fn whole_numbers_may_be_written_with_a_fraction() {
        let six = schedule_from_value(&json!({"preset": "hourly", "minute": 6.0})).unwrap();
        assert_eq!(six.minute, Some(6));
        for bad in [json!(6.5), json!(-1.0), json!(5e12), json!("6")] {
            assert!(schedule_from_value(&json!({"preset": "hourly", "minute": bad})).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_time_zone_name_is_accepted() {
        let names: Vec<&str> = time_zone_names().collect();
        assert!(names.len() > 400 && names.contains(&"UTC") && names.contains(&"Z"));
        for name in names {
            assert!(validate_tz(name).is_ok(), "{name}");
        }
        assert!(validate_tz("Mars/Olympus").is_err());
    }

    #[test]
    fn the_event_name_pattern_is_the_rule() {
        assert_eq!(EVENT_NAME_PATTERN, "^[A-Za-z0-9_.:-]+$");
        for ok in ["deploy.done", "a", "A-1_b:c"] {
            assert!(is_event_name(ok), "{ok}");
        }
        for bad in ["", "a b", "a/b", "é"] {
            assert!(!is_event_name(bad), "{bad}");
        }
    }

    // --- presets and human lines ---

    #[test]
    fn presets_become_cron_and_human_lines() {
        let cases = [
            (
                json!({"preset": "hourly", "minute": 15}),
                "15 * * * *",
                "Hourly at :15",
            ),
            (json!({"preset": "hourly"}), "0 * * * *", "Hourly at :00"),
            (
                json!({"preset": "hourly", "time": "10:45"}),
                "45 * * * *",
                "Hourly at :45",
            ),
            (
                json!({"preset": "daily", "time": "09:00"}),
                "0 9 * * *",
                "Daily at 09:00",
            ),
            (
                json!({"preset": "weekdays", "time": "09:00"}),
                "0 9 * * 1-5",
                "Weekdays at 09:00",
            ),
            (
                json!({"preset": "weekly", "time": "09:00"}),
                "0 9 * * 1",
                "Weekly on Monday at 09:00",
            ),
            (
                json!({"preset": "weekly", "time": "18:30", "dow": 0}),
                "30 18 * * 0",
                "Weekly on Sunday at 18:30",
            ),
            (
                json!({"preset": "custom", "cron": "  */5 * * * *  "}),
                "*/5 * * * *",
                "Every 5 minutes",
            ),
            (
                json!({"preset": "custom", "cron": "0 9 * * 6"}),
                "0 9 * * 6",
                "Weekly on Saturday at 09:00",
            ),
        ];
        for (schedule, cron, line) in cases {
            let got = sched(schedule.clone()).unwrap_or_else(|e| panic!("{schedule}: {e}"));
            assert_eq!(got, cron, "{schedule}");
            assert_eq!(human(&got), line, "{schedule}");
        }
    }

    #[test]
    fn human_never_guesses() {
        // What no line says exactly (uneven minute gaps across the hour, days of the month that
        // must also be a weekday, long lists) stays cron; so does anything invalid.
        for expr in [
            "*/7 9 * * *",
            "0 9 */2 * 1",
            "5,10,20 1,2,3 * * *",
            "bad",
            "",
        ] {
            assert_eq!(
                human(expr),
                format!("Cron {}", expr.trim()).trim_end(),
                "{expr}"
            );
        }
        assert_eq!(human("  0   9 * * *  "), "Daily at 09:00");
        assert_eq!(human("0 25 * * *"), "Cron 0 25 * * *");
    }

    #[test]
    fn schedule_errors_name_their_field() {
        let cases = [
            (json!({"preset": "daily"}), "time"),
            (json!({"preset": "daily", "time": "9:0"}), "time"),
            (json!({"preset": "daily", "time": "009:00"}), "time"),
            (json!({"preset": "weekdays", "time": "24:00"}), "time"),
            (json!({"preset": "weekly", "time": "09:60"}), "time"),
            (
                json!({"preset": "weekly", "time": "09:00", "dow": 7}),
                "dow",
            ),
            (json!({"preset": "hourly", "minute": 60}), "minute"),
            (json!({"preset": "hourly", "minute": -1}), "minute"),
            (json!({"preset": "hourly", "minute": "5"}), "minute"),
            (json!({"preset": "hourly", "time": "noon"}), "time"),
            (json!({"preset": "custom"}), "cron"),
            (json!({"preset": "custom", "cron": "   "}), "cron"),
            (json!({"preset": "custom", "cron": "* * * *"}), "cron"),
            (json!({"preset": "custom", "cron": 5}), "cron"),
            (json!({"preset": "monthly", "time": "09:00"}), "preset"),
            (json!({"time": "09:00"}), "preset"),
            (json!({"preset": 1}), "preset"),
            (json!({"preset": "daily", "time": 900}), "time"),
            (
                json!({"preset": "daily", "time": "09:00", "tz": "Paris"}),
                "tz",
            ),
            (json!({"preset": "daily", "time": "09:00", "tz": 1}), "tz"),
        ];
        for (schedule, field) in cases {
            let e = sched(schedule.clone()).expect_err(&schedule.to_string());
            assert_eq!(e.field.as_deref(), Some(field), "{schedule}: {e}");
        }
        let e = schedule_from_value(&json!("daily")).expect_err("not an object");
        assert!(e.message.contains("must be an object"), "{e}");
        assert_eq!(
            sched(json!({"preset": "daily", "time": "9.00"}))
                .expect_err("bad time")
                .to_string(),
            "time \"9.00\" must be a 24-hour time HH:MM, e.g. \"09:00\""
        );
    }

    /// Every time of day is taken with a one- or two-digit hour, and both spellings mean the
    /// same minute; nothing else of that shape is.
    #[test]
    fn schedule_time_takes_a_one_digit_hour() {
        for hour in 0..24u32 {
            for minute in 0..60u32 {
                let want = format!("{minute} {hour} * * *");
                for time in [format!("{hour}:{minute:02}"), format!("{hour:02}:{minute:02}"), format!(" {hour}:{minute:02} ")] {
                    assert_eq!(sched(json!({"preset": "daily", "time": time})), Ok(want.clone()), "{time}");
                }
            }
        }
        for bad in ["24:00", "7:60", "7:5", "07:5", "123:00", ":30", "7:", "7", "+7:30", "7:3a", "٧:30"] {
            assert!(sched(json!({"preset": "daily", "time": bad})).is_err(), "{bad}");
        }
        assert_eq!(parse_window("8:00-18:00"), Ok((8 * 60, 18 * 60)));
    }

    #[test]
    fn schedule_ignores_unknown_and_null_fields_and_round_trips() {
        let s = schedule_from_value(
            &json!({"preset": "daily", "time": "07:05", "minute": null, "colour": "red"}),
        )
        .expect("valid schedule");
        assert_eq!(
            s,
            Schedule {
                preset: "daily".into(),
                time: Some("07:05".into()),
                ..Schedule::default()
            }
        );
        assert_eq!(
            serde_json::to_value(&s).expect("serialises"),
            json!({"preset": "daily", "time": "07:05"})
        );
        let back: Schedule =
            serde_json::from_value(json!({"preset": "daily", "time": "07:05", "x": 1}))
                .expect("deserialises");
        assert_eq!(back, s);
        assert_eq!(to_cron(&s).expect("cron"), "5 7 * * *");
    }

    #[test]
    fn time_zones_must_exist_in_the_iana_database() {
        for ok in [
            "UTC",
            "Z",
            "Europe/Paris",
            "America/Argentina/Buenos_Aires",
            "Etc/GMT+5",
            "America/Port-au-Prince",
        ] {
            assert!(validate_tz(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "utc",
            "Paris",
            "Europe/",
            "/Paris",
            "Europe//Paris",
            "Europe/Pa ris",
            "1Europe/Paris",
            "Europe/Paris;rm",
            "Atlantis/Nowhere",
            "Europe/Parisx",
            "europe/paris",
        ] {
            assert_eq!(
                validate_tz(bad).expect_err(bad).field.as_deref(),
                Some("tz"),
                "{bad}"
            );
        }
    }

    // --- cron validation ---

    #[test]
    fn valid_cron_expressions() {
        for expr in [
            "* * * * *",
            "*/5 * * * *",
            "0 9 * * 1-5",
            "0-30/10 8-18/2 1,15 */3 0,6",
            "59 23 31 12 6",
            "0 0 1-31/2 1-12 0-6",
            "  1\t2 3 4 5 ",
        ] {
            assert!(
                validate_cron(expr).is_ok(),
                "{expr}: {:?}",
                validate_cron(expr)
            );
        }
    }

    #[test]
    fn cron_errors_name_the_field() {
        assert_eq!(
            cron_err("1 2 3 4"),
            "cron needs exactly five fields (minute hour day-of-month month day-of-week), got 4"
        );
        assert_eq!(
            cron_err("1 2 3 4 5 6"),
            "cron needs exactly five fields (minute hour day-of-month month day-of-week), got 6"
        );
        assert_eq!(
            cron_err(""),
            "cron needs exactly five fields (minute hour day-of-month month day-of-week), got 0"
        );
        assert_eq!(
            cron_err("60 * * * *"),
            "minute field \"60\": value 60 out of range 0-59"
        );
        assert_eq!(
            cron_err("0 25 * * *"),
            "hour field \"25\": value 25 out of range 0-23"
        );
        assert_eq!(
            cron_err("0 0 0 * *"),
            "day-of-month field \"0\": value 0 out of range 1-31"
        );
        assert_eq!(
            cron_err("0 0 32 * *"),
            "day-of-month field \"32\": value 32 out of range 1-31"
        );
        assert_eq!(
            cron_err("0 0 * 13 *"),
            "month field \"13\": value 13 out of range 1-12"
        );
        assert_eq!(
            cron_err("0 0 * * 7"),
            "day-of-week field \"7\": value 7 out of range 0-6"
        );
        assert_eq!(
            cron_err("*/0 * * * *"),
            "minute field \"*/0\": step must be at least 1, got 0"
        );
        assert_eq!(
            cron_err("5-3 * * * *"),
            "minute field \"5-3\": range start 5 is greater than its end 3"
        );
        assert_eq!(
            cron_err("a * * * *"),
            "minute field \"a\": \"a\" is not a number"
        );
        assert_eq!(
            cron_err("1,,2 * * * *"),
            "minute field \"1,,2\": empty list item"
        );
        assert_eq!(
            cron_err("0 * * * mon"),
            "day-of-week field \"mon\": \"mon\" is not a number"
        );
        assert_eq!(
            cron_err("0 99999999999999999999 * * *"),
            "hour field \"99999999999999999999\": value 99999999999999999999 out of range 0-23"
        );
        for bad in [
            "5/2 * * * *",
            "*/x * * * *",
            "*/ * * * *",
            "-5 * * * *",
            "1- * * * *",
            "1-2-3 * * * *",
            "*/5/2 * * * *",
            ", * * * *",
            "1, * * * *",
            "? * * * *",
            "L * * * *",
            "+5 * * * *",
            "*/61 * * * *",
            "0 0 * * */8",
        ] {
            let message = cron_err(bad);
            assert!(
                message.starts_with("minute field") || message.starts_with("day-of-week field"),
                "{bad}: {message}"
            );
        }
    }

    // --- durations, windows, days ---

    #[test]
    fn durations() {
        for (s, secs) in [
            ("30s", 30),
            ("5m", 300),
            ("1h", 3600),
            ("1h30m", 5400),
            ("1h30m15s", 5415),
            ("2m5s", 125),
            (" 90s ", 90),
            ("05m", 300),
        ] {
            assert_eq!(parse_duration(s), Ok(secs), "{s}");
        }
        for bad in [
            "",
            " ",
            "90",
            "5x",
            "5M",
            "1d",
            "30m1h",
            "1h1h",
            "0s",
            "1h0m",
            "-5m",
            "1.5h",
            "h",
            "5 m",
            "1h 30m",
            "m5",
            "99999999999999999999s",
            "9999999999999999h",
            "5mé",
        ] {
            let e = parse_duration(bad).expect_err(bad);
            assert_eq!(e.field, None, "{bad}");
            assert!(!e.message.is_empty());
        }
        assert_eq!(
            parse_duration("90").expect_err("no unit").message,
            format!("duration \"90\" has no unit after 90 ({DURATION_HINT})")
        );
    }

    #[test]
    fn windows_and_wrapping_midnight() {
        assert_eq!(parse_window("08:00-18:00"), Ok((480, 1080)));
        assert_eq!(parse_window(" 22:30 - 06:00 "), Ok((1350, 360)));
        assert_eq!(parse_window("23:00-00:00"), Ok((1380, 0)));
        for bad in [
            "08:00-08:00",
            "8:0-18:00",
            "08:00",
            "08:00-24:00",
            "08:00_18:00",
            "",
            "aa:bb-cc:dd",
            "08:00-18:00-19:00",
        ] {
            assert_eq!(
                parse_window(bad).expect_err(bad).field.as_deref(),
                Some("window"),
                "{bad}"
            );
        }
        let day = Some((480, 1080));
        assert!(in_window(day, 480) && in_window(day, 1079));
        assert!(!in_window(day, 1080) && !in_window(day, 479));
        let night = Some((1350, 360));
        assert!(
            in_window(night, 1350)
                && in_window(night, 1439)
                && in_window(night, 0)
                && in_window(night, 359)
        );
        assert!(!in_window(night, 360) && !in_window(night, 720) && !in_window(night, 1349));
        assert!(in_window(None, 0));
        assert!(!in_window(Some((5, 5)), 5));
    }

    #[test]
    fn days() {
        let set = |idx: &[usize]| {
            let mut d = [false; 7];
            for &i in idx {
                d[i] = true;
            }
            d
        };
        assert_eq!(parse_days("mon-fri"), Ok(set(&[1, 2, 3, 4, 5])));
        assert_eq!(parse_days("sat,sun"), Ok(set(&[0, 6])));
        assert_eq!(parse_days("Mon,WED-fri"), Ok(set(&[1, 3, 4, 5])));
        assert_eq!(parse_days("fri-mon"), Ok(set(&[5, 6, 0, 1])));
        assert_eq!(parse_days("sun-sun"), Ok(set(&[0])));
        assert_eq!(parse_days("daily"), Ok([true; 7]));
        assert_eq!(parse_days(" * "), Ok([true; 7]));
        assert_eq!(parse_days(" tue , thu "), Ok(set(&[2, 4])));
        for bad in [
            "",
            "monday",
            "mon-",
            "mon,,tue",
            "weekdays",
            "mon-fri-sat",
            "1-5",
            "mön",
        ] {
            assert_eq!(
                parse_days(bad).expect_err(bad).field.as_deref(),
                Some("days"),
                "{bad}"
            );
        }
    }

    // --- triggers ---

    #[test]
    fn trigger_modes_that_are_fine() {
        let good = [
            json!({"mode": "manual"}),
            json!({"mode": "schedule", "schedule": {"preset": "weekdays", "time": "09:00", "tz": "Europe/Paris"}}),
            json!({"mode": "heartbeat", "every": "30m"}),
            json!({"mode": "heartbeat", "every": "1m", "window": "22:00-06:00", "days": "mon-fri", "tz": "UTC"}),
            json!({"mode": "heartbeat", "every": "24h", "window": null}),
            json!({"mode": "event", "sources": ["deploy.done", "alerts.*", "a:b-c_d"], "cooldown_seconds": 0}),
            json!({"mode": "folder", "path": "/data/in"}),
            json!({"mode": "folder", "path": "in", "pattern": "*.csv", "events": ["create", "modify", "remove"], "debounce_ms": 60000}),
            json!({"mode": "watch", "command": "tail -f log.ndjson"}),
            json!({"mode": "watch", "command": ["tail", "-f", ""], "restart_delay_seconds": 300, "dedupe_minutes": 0}),
        ];
        for node in good {
            assert_eq!(validate_trigger(&obj(node.clone())), vec![], "{node}");
        }
    }

    #[test]
    fn trigger_problems_name_the_node_field() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({}), vec!["mode"]),
            (json!({"mode": null}), vec!["mode"]),
            (json!({"mode": 3}), vec!["mode"]),
            (json!({"mode": "cron"}), vec!["mode"]),
            (json!({"mode": "schedule"}), vec!["schedule"]),
            (
                json!({"mode": "schedule", "schedule": "daily"}),
                vec!["schedule"],
            ),
            (
                json!({"mode": "schedule", "schedule": {"preset": "daily"}}),
                vec!["schedule"],
            ),
            (
                json!({"mode": "schedule", "schedule": {"preset": "custom", "cron": "0 9 * *"}}),
                vec!["schedule"],
            ),
            (json!({"mode": "heartbeat"}), vec!["every"]),
            (json!({"mode": "heartbeat", "every": 30}), vec!["every"]),
            (json!({"mode": "heartbeat", "every": "30s"}), vec!["every"]),
            (json!({"mode": "heartbeat", "every": "25h"}), vec!["every"]),
            (
                json!({"mode": "heartbeat", "every": "5x", "window": "08:00-08:00", "days": "someday", "tz": "Nowhere"}),
                vec!["every", "window", "days", "tz"],
            ),
            (
                json!({"mode": "heartbeat", "every": "5m", "window": 8, "days": ["mon"]}),
                vec!["window", "days"],
            ),
            (json!({"mode": "event"}), vec!["sources"]),
            (json!({"mode": "event", "sources": []}), vec!["sources"]),
            (json!({"mode": "event", "sources": "a"}), vec!["sources"]),
            (
                json!({"mode": "event", "sources": ["ok", "", "a b", "*", ".*", "a*", 5]}),
                vec!["sources"; 6],
            ),
            (
                json!({"mode": "event", "sources": ["a"], "cooldown_seconds": -1}),
                vec!["cooldown_seconds"],
            ),
            (
                json!({"mode": "event", "sources": ["a"], "cooldown_seconds": 1.5}),
                vec!["cooldown_seconds"],
            ),
            (json!({"mode": "folder"}), vec!["path"]),
            (json!({"mode": "folder", "path": "  "}), vec!["path"]),
            (json!({"mode": "folder", "path": 1}), vec!["path"]),
            (
                json!({"mode": "folder", "path": "in", "pattern": "", "events": [], "debounce_ms": 60001}),
                vec!["pattern", "events", "debounce_ms"],
            ),
            (
                json!({"mode": "folder", "path": "in", "pattern": 1, "events": ["create", "delete", 3], "debounce_ms": "5"}),
                vec!["pattern", "events", "events", "debounce_ms"],
            ),
            (
                json!({"mode": "folder", "path": "in", "events": "create"}),
                vec!["events"],
            ),
            (json!({"mode": "watch"}), vec!["command"]),
            (json!({"mode": "watch", "command": ""}), vec!["command"]),
            (json!({"mode": "watch", "command": []}), vec!["command"]),
            (
                json!({"mode": "watch", "command": ["", "x"]}),
                vec!["command"],
            ),
            (
                json!({"mode": "watch", "command": ["tail", 1]}),
                vec!["command"],
            ),
            (json!({"mode": "watch", "command": 7}), vec!["command"]),
            (
                json!({"mode": "watch", "command": "x", "restart_delay_seconds": 0, "dedupe_minutes": 1441}),
                vec!["restart_delay_seconds", "dedupe_minutes"],
            ),
            (
                json!({"mode": "watch", "command": "x", "restart_delay_seconds": 301}),
                vec!["restart_delay_seconds"],
            ),
            (json!({"mode": "watch", "command": "tail -f {{trigger.path}}"}), vec!["command"]),
            (json!({"mode": "watch", "command": ["tail", "-f", "{{ run.id }}"]}), vec!["command"]),
        ];
        for (node, expected) in cases {
            let issues = validate_trigger(&obj(node.clone()));
            assert_eq!(fields(&issues), expected, "{node}: {issues:?}");
            assert!(issues.iter().all(|e| !e.message.is_empty()));
        }
    }

    #[test]
    fn trigger_messages_are_specific() {
        let issues = validate_trigger(&obj(
            json!({"mode": "schedule", "schedule": {"preset": "custom", "cron": "0 25 * * *"}}),
        ));
        assert_eq!(
            issues[0].message,
            "hour field \"25\": value 25 out of range 0-23"
        );
        let issues = validate_trigger(&obj(json!({"mode": "heartbeat", "every": "30s"})));
        assert_eq!(
            issues[0].message,
            "every \"30s\" is 30 seconds; a heartbeat must be every 60 to 86400 seconds (1m to 24h)"
        );
        let issues = validate_trigger(&obj(json!({"mode": "event", "sources": ["ok", "a b"]})));
        assert!(
            issues[0].message.starts_with("sources[1] \"a b\""),
            "{}",
            issues[0].message
        );
        assert!(is_event_name("deploy.done") && !is_event_name("") && !is_event_name("a*"));
    }

    #[test]
    fn wait_seconds_from_either_field() {
        assert_eq!(wait_seconds(&obj(json!({"seconds": 1}))), Ok(1));
        assert_eq!(wait_seconds(&obj(json!({"seconds": 3600}))), Ok(3600));
        assert_eq!(wait_seconds(&obj(json!({"duration": "5m"}))), Ok(300));
        assert_eq!(
            wait_seconds(&obj(json!({"duration": "1h", "seconds": null}))),
            Ok(3600)
        );
        let cases = [
            (json!({}), "seconds"),
            (json!({"seconds": 5, "duration": "5s"}), "seconds"),
            (json!({"seconds": 0}), "seconds"),
            (json!({"seconds": 3601}), "seconds"),
            (json!({"seconds": -5}), "seconds"),
            (json!({"seconds": 1.5}), "seconds"),
            (json!({"seconds": "30"}), "seconds"),
            (json!({"duration": "2h"}), "duration"),
            (json!({"duration": "1h1s"}), "duration"),
            (json!({"duration": "30"}), "duration"),
            (json!({"duration": 30}), "duration"),
        ];
        for (node, field) in cases {
            let e = wait_seconds(&obj(node.clone())).expect_err(&node.to_string());
            assert_eq!(e.field.as_deref(), Some(field), "{node}: {e}");
        }
    }

    // --- next fire ---

    #[test]
    fn next_fire_is_strictly_after() {
        assert_eq!(
            next_cron_fire("* * * * *", at(2024, 5, 1, 9, 0)),
            Some(at(2024, 5, 1, 9, 1))
        );
        let mid_minute = Utc
            .with_ymd_and_hms(2024, 5, 1, 9, 0, 30)
            .single()
            .expect("date");
        assert_eq!(
            next_cron_fire("* * * * *", mid_minute),
            Some(at(2024, 5, 1, 9, 1))
        );
        assert_eq!(
            next_cron_fire("0 9 * * *", at(2024, 5, 1, 9, 0)),
            Some(at(2024, 5, 2, 9, 0))
        );
        assert_eq!(
            next_cron_fire("0 9 * * *", at(2024, 5, 1, 8, 59)),
            Some(at(2024, 5, 1, 9, 0))
        );
        assert_eq!(
            next_cron_fire("*/15 * * * *", at(2024, 5, 1, 9, 50)),
            Some(at(2024, 5, 1, 10, 0))
        );
        assert_eq!(
            next_cron_fire("30 8-10 * * *", at(2024, 5, 1, 9, 45)),
            Some(at(2024, 5, 1, 10, 30))
        );
    }

    #[test]
    fn next_fire_crosses_month_and_year_boundaries() {
        assert_eq!(
            next_cron_fire("0 0 1 * *", at(2024, 1, 31, 12, 0)),
            Some(at(2024, 2, 1, 0, 0))
        );
        assert_eq!(
            next_cron_fire("59 23 31 12 *", at(2024, 12, 31, 23, 59)),
            Some(at(2025, 12, 31, 23, 59))
        );
        assert_eq!(
            next_cron_fire("0 0 * * *", at(2024, 12, 31, 23, 59)),
            Some(at(2025, 1, 1, 0, 0))
        );
        assert_eq!(
            next_cron_fire("0 12 31 * *", at(2024, 4, 1, 0, 0)),
            Some(at(2024, 5, 31, 12, 0))
        );
        assert_eq!(
            next_cron_fire("0 0 29 2 *", at(2024, 3, 1, 0, 0)),
            Some(at(2028, 2, 29, 0, 0))
        );
        // weekdays from a Friday evening: the next Monday (2024-05-03 is a Friday).
        assert_eq!(
            next_cron_fire("0 9 * * 1-5", at(2024, 5, 3, 18, 0)),
            Some(at(2024, 5, 6, 9, 0))
        );
        assert_eq!(
            next_cron_fire("0 9 * 3 *", at(2024, 3, 31, 10, 0)),
            Some(at(2025, 3, 1, 9, 0))
        );
    }

    #[test]
    fn next_fire_day_of_month_or_day_of_week() {
        // 2024-05-01 is a Wednesday. "the 15th or any Monday": Monday 6th comes first.
        assert_eq!(
            next_cron_fire("0 0 15 * 1", at(2024, 5, 1, 0, 0)),
            Some(at(2024, 5, 6, 0, 0))
        );
        assert_eq!(
            next_cron_fire("0 0 15 * 1", at(2024, 5, 13, 0, 0)),
            Some(at(2024, 5, 15, 0, 0))
        );
        // Only one restricted: the other is ignored.
        assert_eq!(
            next_cron_fire("0 0 15 * *", at(2024, 5, 1, 0, 0)),
            Some(at(2024, 5, 15, 0, 0))
        );
        assert_eq!(
            next_cron_fire("0 0 * * 1", at(2024, 5, 1, 0, 0)),
            Some(at(2024, 5, 6, 0, 0))
        );
        // `*/1` starts with `*`, so it counts as unrestricted (as in cronie): Mondays only.
        assert_eq!(
            next_cron_fire("0 0 */1 * 1", at(2024, 5, 1, 0, 0)),
            Some(at(2024, 5, 6, 0, 0))
        );
    }

    #[test]
    fn day_fields_starting_with_a_star_are_unrestricted_as_in_cronie() {
        // Mondays that are odd days of the month: 2026-06-01, 06-15 and 06-29 (not 06-08).
        let from = at(2026, 6, 1, 10, 0);
        assert_eq!(next_cron_fire("0 9 */2 * 1", from), Some(at(2026, 6, 15, 9, 0)));
        assert_eq!(next_cron_fire("0 9 */2 * 1", at(2026, 6, 15, 10, 0)), Some(at(2026, 6, 29, 9, 0)));
        // The first of a month that falls on Sunday, Tuesday, Thursday or Saturday.
        assert_eq!(next_cron_fire("0 9 1 * */2", from), Some(at(2026, 8, 1, 9, 0)));
        // A list starting with `*` is unrestricted too; one starting with a number is not.
        assert_eq!(next_cron_fire("0 9 */10,5 * 1", from), Some(at(2026, 8, 31, 9, 0)));
        assert_eq!(next_cron_fire("0 9 5,*/10 * 1", from), Some(at(2026, 6, 5, 9, 0)));
        // Both restricted: a day matches either.
        assert_eq!(next_cron_fire("0 9 2-3 * 1", from), Some(at(2026, 6, 2, 9, 0)));
    }

    #[test]
    fn an_expression_that_can_never_fire_is_an_error() {
        for never in [
            "0 0 30 2 *",
            "0 0 31 4 *",
            "0 0 31 2,4,6,9,11 *",
            "0 0 30-31 2 *",
            "0 0 31 4 */2",
            "0 0 31 2 *\t",
            "* * 31 4-6/2 *",
        ] {
            let e = validate_cron(never).expect_err(never);
            assert_eq!(e.field.as_deref(), Some("cron"));
            assert!(e.message.contains("never fires"), "{never}: {e}");
            assert_eq!(next_cron_fire(never, at(2024, 1, 1, 0, 0)), None);
            let custom = sched(json!({"preset": "custom", "cron": never})).expect_err(never);
            assert!(custom.message.contains("never fires"), "{custom}");
        }
        assert_eq!(
            cron_err("0 0 30 2 *"),
            "\"0 0 30 2 *\" never fires: no day-of-month in \"30\" occurs in month \"2\""
        );
        // Rare is not never: 29 February, and 29 February on a Sunday (2032, then 2060).
        assert_eq!(next_cron_fire("0 0 29 2 *", at(2025, 1, 1, 0, 0)), Some(at(2028, 2, 29, 0, 0)));
        assert_eq!(next_cron_fire("0 0 29 2 */7", at(2024, 3, 1, 0, 0)), Some(at(2032, 2, 29, 0, 0)));
        assert_eq!(next_cron_fire("0 0 29 2 */7", at(2032, 3, 1, 0, 0)), Some(at(2060, 2, 29, 0, 0)));
        // 2100 is no leap year: after 2088 the next 29 February on a Sunday is in 2128.
        assert_eq!(next_cron_fire("0 0 29 2 */7", at(2088, 3, 1, 0, 0)), Some(at(2128, 2, 29, 0, 0)));
        // Both day fields restricted: any Monday in February will do.
        assert_eq!(next_cron_fire("0 0 31 2 1", at(2026, 1, 1, 0, 0)), Some(at(2026, 2, 2, 0, 0)));
    }

    #[test]
    fn only_spaces_and_tabs_separate_fields() {
        for ok in ["0 9 * * 1", "0\t9\t*\t*\t1", " \t0  9 *\t \t* 1 \t"] {
            assert!(validate_cron(ok).is_ok(), "{ok:?}");
            assert_eq!(sched(json!({"preset": "custom", "cron": ok})).expect(ok), ok.trim_matches([' ', '\t']));
        }
        // Every other whitespace or control character, between fields, inside one or at an end.
        let others = (0..=0x10FFFF_u32)
            .filter_map(char::from_u32)
            .filter(|c| (c.is_whitespace() || c.is_control()) && *c != ' ' && *c != '\t');
        let mut tried = 0;
        for c in others {
            for expr in [format!("0{c}9 * * 1"), format!("0 9 * * 1{c}"), format!("{c}0 9 * * 1"), format!("0 9 *{c}* 1")] {
                let e = validate_cron(&expr).expect_err(&format!("{expr:?}"));
                let code = format!("U+{:04X}", u32::from(c));
                assert!(e.message.contains(&code) && e.message.contains("spaces or tabs only"), "{expr:?}: {e}");
                assert!(sched(json!({"preset": "custom", "cron": expr})).is_err(), "{expr:?}");
            }
            tried += 1;
        }
        assert!(tried > 60, "{tried}");
        assert_eq!(
            cron_err("0 9 *\u{b}* 1"),
            "day-of-month field \"*\\u{b}*\" contains U+000B: cron fields are separated by spaces or tabs only"
        );
    }

    #[test]
    fn negative_numbers_get_a_clear_message() {
        assert_eq!(
            cron_err("-1 * * * *"),
            "minute field \"-1\": negative numbers are not allowed; the minute takes 0-59"
        );
        for (expr, field) in [
            ("* -5 * * *", "hour"),
            ("* * -1-5 * *", "day-of-month"),
            ("* * 1--5 * *", "day-of-month"),
            ("* * * */-2 *", "month"),
            ("* * * * 1,-2", "day-of-week"),
            ("-0 * * * *", "minute"),
            ("* * * * -1-3/2", "day-of-week"),
        ] {
            let e = cron_err(expr);
            assert!(e.starts_with(&format!("{field} field")) && e.contains("negative numbers are not allowed"), "{expr}: {e}");
        }
    }

    #[test]
    fn next_fire_gives_up_without_panicking() {
        assert_eq!(next_cron_fire("0 0 31 2 *", at(2024, 1, 1, 0, 0)), None);
        assert_eq!(next_cron_fire("0 0 30 2 *", at(2024, 1, 1, 0, 0)), None);
        assert_eq!(next_cron_fire("not cron", at(2024, 1, 1, 0, 0)), None);
        assert_eq!(next_cron_fire("* * * * *", DateTime::<Utc>::MAX_UTC), None);
        assert_eq!(
            next_cron_fire(
                "0 0 1 1 *",
                DateTime::<Utc>::MAX_UTC - chrono::TimeDelta::days(30)
            ),
            None
        );
        assert!(next_cron_fire("* * * * *", DateTime::<Utc>::MIN_UTC).is_some());
    }

    // --- time zones and daylight saving ---

    fn at_s(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
            .single()
            .expect("valid test date")
    }

    const BERLIN: Option<&str> = Some("Europe/Berlin");
    const NEW_YORK: Option<&str> = Some("America/New_York");

    #[test]
    fn bad_tz_name_is_rejected_naming_field_tz() {
        let e = validate_tz("Europe/Atlantis").expect_err("unknown zone");
        assert_eq!(e.field.as_deref(), Some("tz"));
        assert!(e.message.contains("Europe/Atlantis"), "{e}");
        let e = sched(json!({"preset": "daily", "time": "09:00", "tz": "Mars/Olympus_Mons"}))
            .expect_err("unknown zone");
        assert_eq!(e.field.as_deref(), Some("tz"));
        let issues = validate_trigger(&obj(
            json!({"mode": "heartbeat", "every": "30m", "tz": "Moon/Tranquility"}),
        ));
        assert_eq!(fields(&issues), ["tz"]);
        assert_eq!(
            heartbeat_from_node(&obj(
                json!({"mode": "heartbeat", "every": "30m", "tz": "Nowhere"})
            ))
            .expect_err("unknown zone")
            .field
            .as_deref(),
            Some("tz")
        );
        assert_eq!(
            next_cron_fire_tz("* * * * *", Some("Nowhere"), at(2026, 1, 1, 0, 0)),
            None
        );
        assert_eq!(parse_tz(" Europe/Berlin "), Ok(chrono_tz::Europe::Berlin));
        assert_eq!(parse_tz("Z"), Ok(Tz::UTC));
    }

    #[test]
    fn cron_without_tz_is_utc() {
        for after in [at(2026, 3, 28, 12, 0), at(2026, 10, 24, 12, 0)] {
            assert_eq!(
                next_cron_fire_tz("30 2 * * *", None, after),
                next_cron_fire("30 2 * * *", after)
            );
            assert_eq!(
                next_cron_fire_tz("30 2 * * *", Some("UTC"), after),
                next_cron_fire("30 2 * * *", after)
            );
        }
    }

    #[test]
    fn cron_wall_time_in_a_spring_forward_gap_fires_when_the_gap_ends() {
        // Europe/Berlin skips 02:00-03:00 on 2026-03-29 (01:00Z): 02:30 does not exist that day.
        let fire = |after| next_cron_fire_tz("30 2 * * *", BERLIN, after);
        assert_eq!(fire(at(2026, 3, 27, 12, 0)), Some(at(2026, 3, 28, 1, 30)));
        assert_eq!(fire(at(2026, 3, 28, 12, 0)), Some(at(2026, 3, 29, 1, 0)));
        assert_eq!(fire(at(2026, 3, 29, 1, 0)), Some(at(2026, 3, 30, 0, 30)));
        // Two wall times inside the same gap fire once, at its end.
        let every_half_hour = |after| next_cron_fire_tz("0,30 2,3 * * *", BERLIN, after);
        assert_eq!(
            every_half_hour(at(2026, 3, 28, 12, 0)),
            Some(at(2026, 3, 29, 1, 0))
        );
        assert_eq!(
            every_half_hour(at(2026, 3, 29, 1, 0)),
            Some(at(2026, 3, 29, 1, 30))
        );
        // America/New_York skips 02:00-03:00 on 2026-03-08 (07:00Z).
        let fire = |after| next_cron_fire_tz("30 2 * * *", NEW_YORK, after);
        assert_eq!(fire(at(2026, 3, 6, 12, 0)), Some(at(2026, 3, 7, 7, 30)));
        assert_eq!(fire(at(2026, 3, 7, 12, 0)), Some(at(2026, 3, 8, 7, 0)));
        assert_eq!(fire(at(2026, 3, 8, 7, 0)), Some(at(2026, 3, 9, 6, 30)));
    }

    #[test]
    fn cron_wall_time_repeated_at_fall_back_fires_once_at_its_first_occurrence_unless_the_job_fires_every_hour() {
        // Europe/Berlin repeats 02:00-03:00 on 2026-10-25: CEST until 01:00Z, then CET.
        let fire = |after| next_cron_fire_tz("30 2 * * *", BERLIN, after);
        assert_eq!(fire(at(2026, 10, 24, 12, 0)), Some(at(2026, 10, 25, 0, 30)));
        assert_eq!(fire(at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 26, 1, 30)));
        // Asked during the second 02:xx hour: today's 02:30 already happened.
        assert_eq!(fire(at(2026, 10, 25, 1, 0)), Some(at(2026, 10, 26, 1, 30)));
        assert_eq!(
            fire(at_s(2026, 10, 25, 1, 29, 59)),
            Some(at(2026, 10, 26, 1, 30))
        );
        // A job that fires every hour keeps its rhythm through the repeated hour: 02:00 and
        // 02:30 come round again in CET (01:00Z, 01:30Z).
        let half_hourly = |after| next_cron_fire_tz("*/30 * * * *", BERLIN, after);
        assert_eq!(half_hourly(at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 25, 1, 0)));
        assert_eq!(half_hourly(at(2026, 10, 25, 1, 0)), Some(at(2026, 10, 25, 1, 30)));
        assert_eq!(half_hourly(at(2026, 10, 25, 1, 15)), Some(at(2026, 10, 25, 1, 30)));
        assert_eq!(half_hourly(at(2026, 10, 25, 1, 30)), Some(at(2026, 10, 25, 2, 0)));
        // A job restricted to some hours still fires once per wall time.
        let two_oclock = |after| next_cron_fire_tz("*/30 2 * * *", BERLIN, after);
        assert_eq!(two_oclock(at(2026, 10, 25, 0, 30)), Some(at(2026, 10, 26, 1, 0)));
        // America/New_York repeats 01:00-02:00 on 2026-11-01: EDT until 06:00Z, then EST.
        let fire = |after| next_cron_fire_tz("30 1 * * *", NEW_YORK, after);
        assert_eq!(fire(at(2026, 10, 31, 12, 0)), Some(at(2026, 11, 1, 5, 30)));
        assert_eq!(fire(at(2026, 11, 1, 5, 30)), Some(at(2026, 11, 2, 6, 30)));
    }

    #[test]
    fn cron_keeps_its_local_wall_time_across_daylight_saving_changes() {
        let daily = |after| next_cron_fire_tz("0 9 * * *", BERLIN, after);
        assert_eq!(daily(at(2026, 3, 28, 0, 0)), Some(at(2026, 3, 28, 8, 0)));
        assert_eq!(daily(at(2026, 3, 28, 8, 0)), Some(at(2026, 3, 29, 7, 0)));
        assert_eq!(daily(at(2026, 10, 24, 0, 0)), Some(at(2026, 10, 24, 7, 0)));
        assert_eq!(daily(at(2026, 10, 24, 7, 0)), Some(at(2026, 10, 25, 8, 0)));
        let daily = |after| next_cron_fire_tz("0 9 * * *", NEW_YORK, after);
        assert_eq!(daily(at(2026, 3, 7, 0, 0)), Some(at(2026, 3, 7, 14, 0)));
        assert_eq!(daily(at(2026, 3, 7, 14, 0)), Some(at(2026, 3, 8, 13, 0)));
        assert_eq!(daily(at(2026, 10, 31, 13, 0)), Some(at(2026, 11, 1, 14, 0)));
    }

    #[test]
    fn presets_fire_at_local_time_in_their_tz() {
        let fire = |schedule: Value, after| {
            next_schedule_fire(&schedule_from_value(&schedule).expect("schedule"), after)
        };
        let berlin_daily = json!({"preset": "daily", "time": "09:00", "tz": "Europe/Berlin"});
        assert_eq!(
            fire(berlin_daily.clone(), at(2026, 3, 28, 8, 0)),
            Some(at(2026, 3, 29, 7, 0))
        );
        assert_eq!(
            fire(berlin_daily, at(2026, 10, 24, 7, 0)),
            Some(at(2026, 10, 25, 8, 0))
        );
        let berlin_night = json!({"preset": "daily", "time": "02:30", "tz": "Europe/Berlin"});
        assert_eq!(
            fire(berlin_night.clone(), at(2026, 3, 28, 12, 0)),
            Some(at(2026, 3, 29, 1, 0))
        );
        assert_eq!(
            fire(berlin_night, at(2026, 10, 25, 0, 30)),
            Some(at(2026, 10, 26, 1, 30))
        );
        // Friday 2026-03-06 in New York, EST; the Monday after is EDT.
        let weekdays = json!({"preset": "weekdays", "time": "09:00", "tz": "America/New_York"});
        assert_eq!(
            fire(weekdays.clone(), at(2026, 3, 6, 12, 0)),
            Some(at(2026, 3, 6, 14, 0))
        );
        assert_eq!(
            fire(weekdays, at(2026, 3, 6, 14, 0)),
            Some(at(2026, 3, 9, 13, 0))
        );
        let weekly =
            json!({"preset": "weekly", "time": "02:30", "dow": 0, "tz": "America/New_York"});
        assert_eq!(
            fire(weekly, at(2026, 3, 1, 12, 0)),
            Some(at(2026, 3, 8, 7, 0))
        );
        let hourly = json!({"preset": "hourly", "minute": 15, "tz": "Asia/Kolkata"});
        assert_eq!(
            fire(hourly, at(2026, 6, 1, 0, 0)),
            Some(at(2026, 6, 1, 0, 45))
        );
        assert_eq!(fire(json!({"preset": "daily"}), at(2026, 6, 1, 0, 0)), None);
    }

    fn heartbeat(node: Value) -> Heartbeat {
        heartbeat_from_node(&obj(node.clone())).unwrap_or_else(|e| panic!("{node}: {e}"))
    }

    #[test]
    fn heartbeat_reads_its_node_with_defaults() {
        assert_eq!(
            heartbeat(json!({"mode": "heartbeat", "every": "30m"})),
            Heartbeat {
                every_seconds: 1800,
                window: None,
                days: [true; 7],
                tz: Tz::UTC
            }
        );
        assert_eq!(
            heartbeat(
                json!({"every": "1h30m", "window": "22:00-06:00", "days": "mon-fri", "tz": "Europe/Berlin", "window_note": 1})
            ),
            Heartbeat {
                every_seconds: 5400,
                window: Some((1320, 360)),
                days: [false, true, true, true, true, true, false],
                tz: chrono_tz::Europe::Berlin,
            }
        );
        for (node, field) in [
            (json!({"mode": "heartbeat"}), "every"),
            (json!({"mode": "heartbeat", "every": "30s"}), "every"),
            (json!({"mode": "schedule", "every": "30m"}), "mode"),
            (
                json!({"mode": "heartbeat", "every": "30m", "window": "8-18"}),
                "window",
            ),
            (
                json!({"mode": "heartbeat", "every": "30m", "days": "someday"}),
                "days",
            ),
            (
                json!({"mode": "heartbeat", "every": "30m", "tz": "Paris"}),
                "tz",
            ),
        ] {
            let e = heartbeat_from_node(&obj(node.clone())).expect_err(&node.to_string());
            assert_eq!(e.field.as_deref(), Some(field), "{node}: {e}");
        }
    }

    #[test]
    fn heartbeat_fires_every_interval_only_inside_the_window_on_allowed_days() {
        // Europe/Berlin in June is UTC+2. 2026-06-05 is a Friday, 2026-06-08 the Monday after.
        let hb = heartbeat(
            json!({"mode": "heartbeat", "every": "30m", "window": "08:00-18:00", "days": "mon-fri", "tz": "Europe/Berlin"}),
        );
        // Friday 17:20 -> 17:50, still inside.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 5, 15, 25), Some(at(2026, 6, 5, 15, 20))),
            Some(at(2026, 6, 5, 15, 50))
        );
        // Friday 17:45 -> 18:15 is outside: next Monday 08:00 local.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 5, 15, 50), Some(at(2026, 6, 5, 15, 45))),
            Some(at(2026, 6, 8, 6, 0))
        );
        // The window's end is exclusive: Friday 17:30 -> 18:00 is outside.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 5, 15, 31), Some(at(2026, 6, 5, 15, 30))),
            Some(at(2026, 6, 8, 6, 0))
        );
        // No fire yet: now, when inside; else the next opening.
        let wednesday_noon = at_s(2026, 6, 3, 10, 34, 56);
        assert_eq!(
            hb.next_heartbeat(wednesday_noon, None),
            Some(wednesday_noon)
        );
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 6, 8, 0), None),
            Some(at(2026, 6, 8, 6, 0))
        );
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 3, 5, 59), None),
            Some(at(2026, 6, 3, 6, 0))
        );
        // Missed ticks are caught up once, now.
        assert_eq!(
            hb.next_heartbeat(wednesday_noon, Some(at(2026, 6, 1, 7, 0))),
            Some(wednesday_noon)
        );
        // The tick itself when it is inside, even long after the window opened.
        let every_90 = heartbeat(json!({"every": "90m", "window": "08:00-18:00"}));
        assert_eq!(
            every_90.next_heartbeat(at(2026, 6, 6, 9, 0), Some(at(2026, 6, 6, 9, 0))),
            Some(at(2026, 6, 6, 10, 30))
        );
        assert_eq!(
            every_90.next_heartbeat(at(2026, 6, 6, 17, 0), Some(at(2026, 6, 6, 17, 0))),
            Some(at(2026, 6, 7, 8, 0))
        );
    }

    #[test]
    fn heartbeat_window_wrapping_midnight_belongs_to_the_day_it_starts_on() {
        // UTC; 2026-06-05 is a Friday.
        let hb = heartbeat(
            json!({"mode": "heartbeat", "every": "30m", "window": "22:00-06:00", "days": "mon-fri"}),
        );
        // Friday 23:30 -> Saturday 00:00: still Friday's window.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 5, 23, 31), Some(at(2026, 6, 5, 23, 30))),
            Some(at(2026, 6, 6, 0, 0))
        );
        // Saturday 05:30 -> 06:00 closes it; Saturday and Sunday open none: Monday 22:00.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 6, 5, 31), Some(at(2026, 6, 6, 5, 30))),
            Some(at(2026, 6, 8, 22, 0))
        );
        // Monday 03:00 would be Sunday's window: closed.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 8, 3, 0), None),
            Some(at(2026, 6, 8, 22, 0))
        );
        // Tuesday 02:00 is Monday's window: open.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 9, 2, 0), None),
            Some(at(2026, 6, 9, 2, 0))
        );
        // Daytime is outside: the evening opening.
        assert_eq!(
            hb.next_heartbeat(at(2026, 6, 9, 12, 0), None),
            Some(at(2026, 6, 9, 22, 0))
        );
    }

    #[test]
    fn heartbeat_interval_is_real_elapsed_time_across_daylight_saving_changes() {
        let hourly = heartbeat(json!({"mode": "heartbeat", "every": "1h", "tz": "Europe/Berlin"}));
        // 01:30 CET -> 03:30 CEST: two wall hours, one real hour.
        assert_eq!(
            hourly.next_heartbeat(at(2026, 3, 29, 0, 31), Some(at(2026, 3, 29, 0, 30))),
            Some(at(2026, 3, 29, 1, 30))
        );
        // 02:30 CEST -> 02:30 CET: no wall time passes, one real hour does.
        assert_eq!(
            hourly.next_heartbeat(at(2026, 10, 25, 0, 31), Some(at(2026, 10, 25, 0, 30))),
            Some(at(2026, 10, 25, 1, 30))
        );
        // The window opens at 08:00 local whatever the offset: 07:00Z in CET, 06:00Z in CEST.
        let business =
            heartbeat(json!({"every": "30m", "window": "08:00-18:00", "tz": "Europe/Berlin"}));
        assert_eq!(
            business.next_heartbeat(at(2026, 3, 27, 16, 50), Some(at(2026, 3, 27, 16, 45))),
            Some(at(2026, 3, 28, 7, 0))
        );
        assert_eq!(
            business.next_heartbeat(at(2026, 3, 28, 16, 50), Some(at(2026, 3, 28, 16, 45))),
            Some(at(2026, 3, 29, 6, 0))
        );
        // An opening inside the gap happens when the gap ends; one in the repeated hour, first.
        let night =
            heartbeat(json!({"every": "10m", "window": "02:30-04:00", "tz": "Europe/Berlin"}));
        assert_eq!(
            night.next_heartbeat(at(2026, 3, 28, 12, 0), None),
            Some(at(2026, 3, 29, 1, 0))
        );
        assert_eq!(
            night.next_heartbeat(at(2026, 10, 24, 12, 0), None),
            Some(at(2026, 10, 25, 0, 30))
        );
        // 02:55 CEST + 10m = 02:05 CET, back before the window: it reopens at 02:30 CET.
        assert_eq!(
            night.next_heartbeat(at(2026, 10, 25, 0, 56), Some(at(2026, 10, 25, 0, 55))),
            Some(at(2026, 10, 25, 1, 30))
        );
        // In the repeated hour the wall clock is inside the window both times.
        assert_eq!(
            night.next_heartbeat(at(2026, 10, 25, 1, 35), Some(at(2026, 10, 25, 1, 30))),
            Some(at(2026, 10, 25, 1, 40))
        );
    }

    #[test]
    fn heartbeat_without_any_allowed_day_never_fires() {
        let hb = Heartbeat {
            every_seconds: 60,
            window: None,
            days: [false; 7],
            tz: Tz::UTC,
        };
        assert_eq!(hb.next_heartbeat(at(2026, 1, 1, 0, 0), None), None);
        let hb = Heartbeat {
            days: [true; 7],
            ..hb
        };
        assert_eq!(
            hb.next_heartbeat(DateTime::<Utc>::MAX_UTC, Some(DateTime::<Utc>::MAX_UTC)),
            None
        );
        assert_eq!(
            Heartbeat {
                every_seconds: u64::MAX,
                ..hb.clone()
            }
            .next_heartbeat(at(2026, 1, 1, 0, 0), Some(at(2026, 1, 1, 0, 0))),
            None
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            "[ -~]{0,12}".prop_map(Value::String),
            prop::sample::select(vec![
                "30m",
                "1h",
                "08:00-18:00",
                "mon-fri",
                "UTC",
                "a.*",
                "create",
                "daily",
                "09:00",
                "*/5 * * * *"
            ])
            .prop_map(|s| json!(s)),
            prop::collection::vec("[a-z.*]{0,6}", 0..3).prop_map(|v| json!(v)),
            Just(json!({"preset": "custom", "cron": "* * * * *"})),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn string_parsers_never_panic(s in any::<String>(), c in "[0-9*/,\\- a-z:]{0,30}", minute in 0u32..2000) {
            for input in [s.as_str(), c.as_str()] {
                let _ = validate_cron(input);
                let _ = human(input);
                let _ = next_cron_fire(input, at(2024, 2, 29, 23, 59));
                let _ = parse_duration(input);
                let _ = parse_window(input).map(|w| in_window(Some(w), minute));
                let _ = parse_days(input);
                let _ = validate_tz(input);
                let _ = next_cron_fire_tz(input, Some(input), at(2026, 3, 29, 0, 59));
            }
        }

        #[test]
        fn zone_aware_fires_never_panic(
            cron in prop::sample::select(vec!["* * * * *", "30 2 * * *", "*/7 1-3 * * 0", "0 0 29 2 *", "0 0 31 2 *", "59 23 31 12 *"]),
            tz in prop::sample::select(vec!["UTC", "Europe/Berlin", "America/New_York", "Pacific/Apia", "Australia/Lord_Howe", "Asia/Kathmandu", "Nowhere"]),
            secs in prop_oneof![any::<i64>(), 1_700_000_000i64..1_900_000_000],
            last_secs in prop::option::of(prop_oneof![any::<i64>(), 1_700_000_000i64..1_900_000_000]),
            every in prop_oneof![60u64..86_400, any::<u64>()],
            window in prop::option::of((0u32..1440, 0u32..1440)),
            days in any::<[bool; 7]>(),
        ) {
            let instant = |s: i64| DateTime::from_timestamp(s, 0).unwrap_or(DateTime::<Utc>::MAX_UTC);
            let after = instant(secs);
            if let Some(t) = next_cron_fire_tz(cron, Some(tz), after) {
                prop_assert!(t > after);
            }
            let zone = parse_tz(tz).unwrap_or(Tz::UTC);
            let hb = Heartbeat { every_seconds: every, window, days, tz: zone };
            if let Some(t) = hb.next_heartbeat(after, last_secs.map(instant)) {
                prop_assert!(t >= after);
            }
        }

        #[test]
        fn node_validators_never_panic(
            mode in prop::sample::select(vec!["manual", "schedule", "heartbeat", "event", "folder", "watch", "x"]),
            keys in prop::collection::vec(prop::sample::select(vec![
                "schedule", "every", "window", "days", "tz", "sources", "cooldown_seconds", "path", "pattern",
                "events", "debounce_ms", "command", "restart_delay_seconds", "dedupe_minutes", "seconds", "duration",
            ]), 0..6),
            values in prop::collection::vec(json_value(), 6),
        ) {
            let mut node = Map::new();
            node.insert("mode".into(), json!(mode));
            for (k, v) in keys.iter().zip(values) {
                node.insert((*k).to_string(), v);
            }
            let _ = validate_trigger(&node);
            let _ = wait_seconds(&node);
            if let Ok(hb) = heartbeat_from_node(&node) {
                let _ = hb.next_heartbeat(at(2026, 10, 25, 0, 59), Some(at(2026, 10, 25, 0, 30)));
            }
            if let Some(v) = node.get("schedule") {
                let _ = schedule_from_value(v).and_then(|s| to_cron(&s));
            }
        }
    }

    #[test]
    fn heartbeat_never_fires_outside_its_window_across_a_clock_change() {
        // New York springs forward on 2026-03-08: 02:00 EST becomes 03:00 EDT. A window of
        // 02:00-02:30 does not exist that day, so nothing fires until it opens on the 9th.
        let night = heartbeat(json!({"every": "10m", "window": "02:00-02:30", "tz": "America/New_York"}));
        // 02:00 EDT on the 9th is 06:00Z.
        assert_eq!(night.next_heartbeat(at(2026, 3, 7, 12, 0), None), Some(at(2026, 3, 9, 6, 0)));
        assert_eq!(night.next_heartbeat(at(2026, 3, 8, 6, 59), Some(at(2026, 3, 7, 7, 20))), Some(at(2026, 3, 9, 6, 0)));
        // A window reaching past the gap opens when the gap ends, 03:00 EDT.
        let wider = heartbeat(json!({"every": "10m", "window": "02:00-03:30", "tz": "America/New_York"}));
        assert_eq!(wider.next_heartbeat(at(2026, 3, 7, 12, 0), None), Some(at(2026, 3, 8, 7, 0)));
        // A tick that the clock change pushes past the window's end waits for the next opening.
        let early = heartbeat(json!({"every": "10m", "window": "01:30-02:30", "tz": "America/New_York"}));
        assert_eq!(early.next_heartbeat(at(2026, 3, 8, 6, 51), Some(at(2026, 3, 8, 6, 50))), Some(at(2026, 3, 9, 5, 30)));
    }

    /// A cron expression as structured items, to render it and to know its sets without the
    /// parser under test.
    #[derive(Debug, Clone)]
    enum Item {
        Star,
        StarStep(u32),
        Value(u32),
        Range(u32, u32),
        RangeStep(u32, u32, u32),
    }

    impl Item {
        fn text(&self) -> String {
            match self {
                Item::Star => "*".into(),
                Item::StarStep(n) => format!("*/{n}"),
                Item::Value(v) => v.to_string(),
                Item::Range(a, b) => format!("{a}-{b}"),
                Item::RangeStep(a, b, n) => format!("{a}-{b}/{n}"),
            }
        }
        fn values(&self, lo: u32, hi: u32) -> Vec<u32> {
            let (a, b, n) = match *self {
                Item::Star => (lo, hi, 1),
                Item::StarStep(n) => (lo, hi, n),
                Item::Value(v) => (v, v, 1),
                Item::Range(a, b) => (a, b, 1),
                Item::RangeStep(a, b, n) => (a, b, n),
            };
            (a..=b).step_by(n as usize).collect()
        }
    }

    fn item(lo: u32, hi: u32) -> impl Strategy<Value = Item> {
        let span = hi - lo + 1;
        prop_oneof![
            1 => Just(Item::Star),
            2 => (1..=span).prop_map(Item::StarStep),
            3 => (lo..=hi).prop_map(Item::Value),
            2 => (lo..=hi, lo..=hi).prop_map(|(a, b)| Item::Range(a.min(b), a.max(b))),
            2 => (lo..=hi, lo..=hi, 1..=span).prop_map(|(a, b, n)| Item::RangeStep(a.min(b), a.max(b), n)),
        ]
    }

    /// The brute-force reference: sets per field and cronie's day rule, nothing else.
    #[derive(Debug, Clone)]
    struct Reference {
        text: String,
        sets: [Vec<u32>; 5],
        dom_star: bool,
        dow_star: bool,
    }

    impl Reference {
        fn day(&self, d: NaiveDate) -> bool {
            let dom = self.sets[2].contains(&d.day());
            let dow = self.sets[4].contains(&d.weekday().num_days_from_sunday());
            self.sets[3].contains(&d.month()) && if self.dom_star || self.dow_star { dom && dow } else { dom || dow }
        }
        fn minute(&self, t: NaiveDateTime) -> bool {
            self.sets[0].contains(&t.minute()) && self.sets[1].contains(&t.hour()) && self.day(t.date())
        }
        /// The first matching minute at or after `from`: minute by minute through the first two
        /// days, then day by day through one 400-year cycle (a matching day always holds a
        /// matching minute), minute by minute inside the day found.
        fn first_from(&self, from: NaiveDateTime) -> Option<NaiveDateTime> {
            let mut t = from;
            for _ in 0..2 * 1440 {
                if self.minute(t) {
                    return Some(t);
                }
                t += TimeDelta::minutes(1);
            }
            let mut d = t.date();
            for _ in 0..=146_097 {
                if self.day(d) {
                    let mut m = d.and_hms_opt(0, 0, 0)?.max(t);
                    while !self.minute(m) {
                        m += TimeDelta::minutes(1);
                    }
                    return Some(m);
                }
                d = d.succ_opt()?;
            }
            None
        }
    }

    fn cron_expression() -> impl Strategy<Value = Reference> {
        let field = |lo: u32, hi: u32| prop::collection::vec(item(lo, hi), 1..4);
        // Day fields often rare: late days of month, short months, a star-led weekday step.
        let dom = prop_oneof![3 => field(1, 31), 1 => prop::collection::vec((28u32..=31).prop_map(Item::Value), 1..3)];
        let month = prop_oneof![3 => field(1, 12), 1 => prop::sample::subsequence(vec![2u32, 4, 6, 9, 11], 1..4).prop_map(|ms| ms.into_iter().map(Item::Value).collect())];
        (field(0, 59), field(0, 23), dom, month, field(0, 6)).prop_map(|(mi, h, dom, mo, dow)| {
            let fields = [mi, h, dom, mo, dow];
            let bounds = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];
            let sets: [Vec<u32>; 5] = std::array::from_fn(|i| {
                let mut v: Vec<u32> = fields[i].iter().flat_map(|it| it.values(bounds[i].0, bounds[i].1)).collect();
                v.sort_unstable();
                v.dedup();
                v
            });
            let star = |f: &[Item]| matches!(f[0], Item::Star | Item::StarStep(_));
            let text = fields.iter().map(|f| f.iter().map(Item::text).collect::<Vec<_>>().join(",")).collect::<Vec<_>>().join(" ");
            Reference { dom_star: star(&fields[2]), dow_star: star(&fields[4]), sets, text }
        })
    }

    /// Whether the reference rule puts instant `t` inside the heartbeat's window, read on the
    /// wall clock of its zone through chrono's own conversion.
    fn inside_window(hb: &Heartbeat, t: DateTime<Utc>) -> bool {
        let local = t.with_timezone(&hb.tz);
        let minute = local.hour() * 60 + local.minute();
        let today = local.weekday().num_days_from_sunday() as usize;
        let yesterday = (today + 6) % 7;
        match hb.window {
            None => hb.days[today],
            Some((start, end)) if start < end => hb.days[today] && (start..end).contains(&minute),
            Some((start, end)) => (hb.days[today] && minute >= start) || (hb.days[yesterday] && minute < end),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]

        #[test]
        fn next_cron_fire_matches_a_brute_force_walk(cron in cron_expression(), secs in 0i64..13_000_000_000, offset in prop::sample::select(vec![None, Some("Asia/Kolkata")])) {
            let after = DateTime::from_timestamp(secs, 0).expect("in range");
            // Kolkata keeps +05:30 all year since 1945: walls are the instant plus the offset.
            let shift = TimeDelta::minutes(if offset.is_some() { 330 } else { 0 });
            let wall = after.naive_utc() + shift;
            let from = wall.date().and_hms_opt(wall.hour(), wall.minute(), 0).expect("minute") + TimeDelta::minutes(1);
            let expected = cron.first_from(from).map(|w| (w - shift).and_utc());
            let valid = validate_cron(&cron.text);
            prop_assert_eq!(valid.is_ok(), expected.is_some(), "{} {:?}: validation says {:?}", cron.text, cron, valid);
            prop_assert_eq!(next_cron_fire_tz(&cron.text, offset, after), expected, "{}", cron.text);
        }

        #[test]
        fn a_heartbeat_fires_only_inside_its_window(
            every in prop_oneof![60u64..=86_400, Just(600), Just(3600)],
            // Windows often near the hours the clocks change, often short enough to fit a gap.
            start in prop_oneof![0u32..1440, 0u32..200, 120u32..150],
            length in prop_oneof![1u32..1440, 1u32..60],
            windowed in prop::bool::weighted(0.9),
            days in any::<[bool; 7]>().prop_filter("some day", |d| d.iter().any(|x| *x)),
            tz in prop::sample::select(vec!["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Havana", "Pacific/Apia", "Asia/Tehran", "UTC"]),
            near in prop::sample::select(vec![
                at(2026, 3, 8, 7, 0), at(2026, 11, 1, 6, 0), at(2026, 3, 29, 1, 0), at(2026, 10, 25, 1, 0),
                at(2026, 4, 4, 15, 0), at(2026, 10, 3, 15, 0), at(2026, 3, 8, 5, 0), at(2026, 11, 1, 5, 0),
                at(2011, 12, 29, 10, 0), at(2022, 3, 21, 20, 0),
            ]),
            before_secs in prop_oneof![0i64..(3 * 86_400), 0i64..(8 * 3600)],
            last_gap in prop::option::of(0i64..(2 * 86_400)),
        ) {
            let zone = parse_tz(tz).expect("zone");
            let window = windowed.then_some((start, (start + length) % 1440)).filter(|(a, b)| a != b);
            let hb = Heartbeat { every_seconds: every, window, days, tz: zone };
            let after = near - TimeDelta::seconds(before_secs);
            let last = last_gap.map(|g| after - TimeDelta::seconds(g));
            if let Some(t) = hb.next_heartbeat(after, last) {
                prop_assert!(t >= after);
                prop_assert!(inside_window(&hb, t), "{hb:?} after {after} (last {last:?}) fires at {t} = {}", t.with_timezone(&zone));
            }
        }
    }
}
