//! Cron expressions (SPEC §10): the strict five-field subset, validation, the next fire in a
//! time zone through daylight-saving changes, and the human line.

use super::*;

pub(super) struct CronField {
    name: &'static str,
    lo: u32,
    hi: u32,
}

pub(super) const CRON_FIELDS: [CronField; 5] = [
    CronField { name: "minute", lo: 0, hi: 59 },
    CronField { name: "hour", lo: 0, hi: 23 },
    CronField { name: "day-of-month", lo: 1, hi: 31 },
    CronField { name: "month", lo: 1, hi: 12 },
    CronField { name: "day-of-week", lo: 0, hi: 6 },
];

/// A parsed expression: bit `n` of a mask set when value `n` matches.
pub(super) struct CronSpec {
    pub(super) masks: [u64; 5],
    /// Day-of-month / day-of-week starting with `*` (cronie's `DOM_STAR`/`DOW_STAR`).
    pub(super) dom_star: bool,
    pub(super) dow_star: bool,
}

/// The only characters that separate cron fields.
pub(super) const CRON_BLANKS: [char; 2] = [' ', '\t'];

/// Days a month can have (February in a leap year), index 0 = January.
pub(super) const MONTH_DAYS: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

impl CronSpec {
    /// Whether every hour of the day matches.
    pub(super) fn every_hour(&self) -> bool {
        self.masks[1] & 0xFF_FFFF == 0xFF_FFFF
    }

    pub(super) fn parse(expr: &str) -> Result<Self, ScheduleError> {
        let parts: Vec<&str> = expr.split(CRON_BLANKS).filter(|p| !p.is_empty()).collect();
        if let Some((i, c)) =
            parts.iter().enumerate().find_map(|(i, p)| p.chars().find(|c| c.is_whitespace() || c.is_control()).map(|c| (i, c)))
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
                format!("cron needs exactly five fields (minute hour day-of-month month day-of-week), got {}", parts.len()),
            ));
        }
        let mut masks = [0u64; 5];
        for ((mask, text), field) in masks.iter_mut().zip(&parts).zip(&CRON_FIELDS) {
            *mask = parse_cron_field(text, field)?;
        }
        let spec = Self { masks, dom_star: parts[2].starts_with('*'), dow_star: parts[4].starts_with('*') };
        if spec.never_fires() {
            return Err(ScheduleError::new(
                "cron",
                format!("\"{}\" never fires: no day-of-month in \"{}\" occurs in month \"{}\"", parts.join(" "), parts[2], parts[3]),
            ));
        }
        Ok(spec)
    }

    /// Whether no day can ever match. When day-of-month and day-of-week are both restricted a
    /// day matches either, and every month has every weekday. Otherwise a day must match both,
    /// and every date recurs on every weekday within the 400-year cycle (29 February within 28
    /// leap years): so it never fires exactly when no allowed day-of-month exists in an allowed
    /// month.
    pub(super) fn never_fires(&self) -> bool {
        if !self.dom_star && !self.dow_star {
            return false;
        }
        !(1..=12u32).any(|m| self.has(3, m) && (1..=MONTH_DAYS[m as usize - 1]).any(|d| self.has(2, d)))
    }

    pub(super) fn has(&self, index: usize, value: u32) -> bool {
        value < 64 && self.masks[index] & (1u64 << value) != 0
    }

    /// The first wall-clock minute at or after `from` (whole minutes) that matches.
    pub(super) fn next_wall(&self, from: NaiveDateTime) -> Option<NaiveDateTime> {
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

    pub(super) fn day_matches(&self, date: NaiveDate) -> bool {
        if !self.has(3, date.month()) {
            return false;
        }
        let dom = self.has(2, date.day());
        let dow = self.has(4, date.weekday().num_days_from_sunday());
        if self.dom_star || self.dow_star { dom && dow } else { dom || dow }
    }
}

pub(super) fn parse_cron_field(text: &str, field: &CronField) -> Result<u64, ScheduleError> {
    let fail = |detail: String| ScheduleError::new("cron", format!("{} field \"{text}\": {detail}", field.name));
    let negative = || fail(format!("negative numbers are not allowed; the {} takes {}-{}", field.name, field.lo, field.hi));
    let number = |s: &str| -> Result<u32, ScheduleError> {
        if s.starts_with('-') {
            return Err(negative());
        }
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            let shown = if s.is_empty() { "(nothing)".to_string() } else { format!("\"{s}\"") };
            return Err(fail(format!("{shown} is not a number")));
        }
        match s.parse::<u32>() {
            Ok(n) if (field.lo..=field.hi).contains(&n) => Ok(n),
            _ => Err(fail(format!("value {s} out of range {}-{}", field.lo, field.hi))),
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
                    let shown = if step.is_empty() { "(nothing)".to_string() } else { format!("\"{step}\"") };
                    return Err(fail(format!("step {shown} is not a number")));
                }
                match step.parse::<u32>() {
                    Ok(0) => return Err(fail("step must be at least 1, got 0".into())),
                    Ok(n) if n <= span => (base, Some(n)),
                    _ => {
                        return Err(fail(format!("step {step} is larger than the field's {span} values")));
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
            return Err(fail(format!("a step needs * or a range before the slash (e.g. */{0} or 0-30/{0})", step.unwrap_or(1))));
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
pub fn next_cron_fire_tz(cron: &str, tz: Option<&str>, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let spec = CronSpec::parse(cron).ok()?;
    let zone = match tz {
        None => Tz::UTC,
        Some(name) => parse_tz(name).ok()?,
    };
    // Walls map to instants monotonically (first occurrences, gaps pushed to their end), and the
    // wall of `after` itself maps to an instant no later than `after`: so the answer is the first
    // matching wall after it whose instant is after `after`.
    let local = local_wall(zone, after)?;
    let mut from = local.date().and_hms_opt(local.hour(), local.minute(), 0)?.checked_add_signed(TimeDelta::minutes(1))?;
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
pub(super) fn second_occurrence(spec: &CronSpec, zone: Tz, local: NaiveDateTime, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
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
pub(super) fn local_wall(zone: Tz, t: DateTime<Utc>) -> Option<NaiveDateTime> {
    let offset = zone.offset_from_utc_datetime(&t.naive_utc()).fix();
    t.naive_utc().checked_add_offset(offset)
}

/// The instant a wall-clock time stands for in `zone`, by the daylight-saving rules of this
/// module: an ambiguous wall is its first occurrence, a non-existent one the first valid instant
/// after the gap.
pub(super) fn resolve_wall(zone: Tz, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
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
