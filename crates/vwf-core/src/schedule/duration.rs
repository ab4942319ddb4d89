//! Durations (`30s`, `1h30m`), time windows (`08:00-18:00`) and day lists (`mon-fri`).

use super::*;

/// Seconds in a duration like `"30s"`, `"5m"`, `"1h"` or `"1h30m"`: positive whole numbers, each
/// followed by one of h, m, s, in that order and each at most once. `field` is `None`; callers
/// set it.
pub fn parse_duration(s: &str) -> Result<u64, ScheduleError> {
    let fail = |detail: String| ScheduleError::bare(format!("duration \"{s}\" {detail}"));
    let t = s.trim();
    if t.is_empty() {
        return Err(ScheduleError::bare(format!("duration is empty ({DURATION_HINT})")));
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
            return Err(fail(format!("has no unit after {number} ({DURATION_HINT})")));
        };
        let (rank, scale) = match unit {
            'd' => (0, 86_400),
            'h' => (1, 3600),
            'm' => (2, 60),
            's' => (3, 1),
            other => {
                return Err(fail(format!("has unknown unit \"{other}\" ({DURATION_HINT})")));
            }
        };
        if last_rank.is_some_and(|r| r >= rank) {
            return Err(fail("must give d, h, m, s in that order, each at most once".into()));
        }
        last_rank = Some(rank);
        let amount = number.parse::<u64>().map_err(|_| fail("is too large".into()))?;
        if amount == 0 {
            return Err(fail(format!("must use positive amounts ({DURATION_HINT})")));
        }
        total = amount.checked_mul(scale).and_then(|secs| total.checked_add(secs)).ok_or_else(|| fail("is too large".into()))?;
        rest = &after[unit.len_utf8()..];
    }
    Ok(total)
}

/// Seconds in a design field that holds a duration (`"30s"`, `"1h30m"`) or whole seconds, from
/// `min` to `max` (`longest` says `max` in words for the message). The error reads after the
/// field's name: `"retry.delay" is longer than a day (86400 s)`.
pub fn duration_or_seconds(v: &Value, min: u64, max: u64, longest: &str) -> Result<u64, String> {
    let seconds = match v {
        Value::String(s) => parse_duration(s).map_err(|e| format!("is not a duration: {}", e.message))?,
        Value::Number(_) => {
            v.as_u64().filter(|s| *s >= min).ok_or_else(|| format!("must be a duration like \"30s\" or whole seconds, got {v}"))?
        }
        _ => return Err(format!("must be a duration like \"30s\" or whole seconds, got {v}")),
    };
    if seconds > max {
        return Err(format!("is longer than {longest} ({max} s)"));
    }
    Ok(seconds)
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
        DAY_ABBREVIATIONS.iter().position(|&d| d == name).ok_or_else(|| fail(format!("has unknown day \"{name}\" ({hint})")))
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
