//! The human line of a cron expression (SPEC §10): "Weekdays at 09:00", "Every 15 minutes from
//! 09:00 to 17:45 on weekdays", "At 08:00 and 18:00 on days 1 and 15 of the month".
//!
//! The line is never guessed from the text: the expression is parsed ([`CronSpec`]), its sets are
//! read into a [`Said`] (what the line will say) only when one of the shapes below states them
//! exactly, and the line is rendered from that. [`Said::fires`] expands a `Said` back into the
//! minutes, hours, days and months it stands for; the tests check, for many generated
//! expressions, that this equals the expression's own sets, so a line never claims a fire the
//! schedule does not make or leaves one out. Anything else reads `Cron <expression>`.

use super::{CronSpec, DAY_NAMES};

const MONTH_NAMES: [&str; 12] =
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/// Hour-and-minute combinations listed one by one, at most.
const TIMES_LISTED: usize = 6;
/// Minutes past the hour listed one by one, at most.
const MINUTES_LISTED: usize = 12;

/// The times of day a line states.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Times {
    /// Every `step` minutes from minute 0 (`step` divides 60; 1 is every minute), in the hours
    /// `from..=to` (the whole day for 0..=23).
    EveryMinutes { step: u32, from: u32, to: u32 },
    /// These minutes past every hour.
    Hourly(Vec<u32>),
    /// Every `step` hours from midnight (`step` divides 24), at `minute`.
    EveryHours { step: u32, minute: u32 },
    /// Each of these minutes of each of these hours.
    At { hours: Vec<u32>, minutes: Vec<u32> },
}

/// The days a line states.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Days {
    Every,
    /// These days of the week (0 = Sunday).
    OfWeek(Vec<u32>),
    /// These days of the month.
    OfMonth(Vec<u32>),
    /// A day that is one of `month` or one of `week` (cron with both fields restricted).
    Either {
        month: Vec<u32>,
        week: Vec<u32>,
    },
}

/// What a human line says about a cron expression.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Said {
    pub times: Times,
    pub days: Days,
    /// Months 1–12; empty for every month.
    pub months: Vec<u32>,
}

/// The sets a [`Said`] stands for, in the shape of a cron expression's.
#[cfg(test)]
#[derive(Debug, PartialEq)]
pub(super) struct Fires {
    pub minutes: Vec<u32>,
    pub hours: Vec<u32>,
    pub months: Vec<u32>,
    /// Whether the day of the month (1–31) with the day of the week (0–6) is a firing day, for
    /// every combination.
    pub days: Vec<bool>,
}

impl Said {
    /// What `spec` fires, if one of the line's shapes says it exactly.
    pub(super) fn of(spec: &CronSpec) -> Option<Said> {
        let minutes = members(spec, 0, 0..=59);
        let hours = members(spec, 1, 0..=23);
        let times = times(&minutes, &hours)?;
        let (month_days, week_days) = (members(spec, 2, 1..=31), members(spec, 4, 0..=6));
        let (all_month, all_week) = (month_days.len() == 31, week_days.len() == 7);
        let days = if spec.dom_star || spec.dow_star {
            // Both fields must match.
            match (all_month, all_week) {
                (true, true) => Days::Every,
                (true, false) => Days::OfWeek(week_days),
                (false, true) => Days::OfMonth(month_days),
                (false, false) => return None,
            }
        } else if all_month || all_week {
            Days::Every // either field matching, and one always does
        } else {
            Days::Either { month: month_days, week: week_days }
        };
        let months = members(spec, 3, 1..=12);
        let months = if months.len() == 12 { Vec::new() } else { months };
        Some(Said { times, days, months })
    }

    /// The sets this line stands for, expanded from what it says (independently of how it was
    /// read from an expression).
    #[cfg(test)]
    pub(super) fn fires(&self) -> Fires {
        let (minutes, hours) = match &self.times {
            Times::EveryMinutes { step, from, to } => ((0..60).step_by(*step as usize).collect(), (*from..=*to).collect()),
            Times::Hourly(minutes) => (minutes.clone(), (0..24).collect()),
            Times::EveryHours { step, minute } => (vec![*minute], (0..24).step_by(*step as usize).collect()),
            Times::At { hours, minutes } => (minutes.clone(), hours.clone()),
        };
        let mut days = Vec::new();
        for dom in 1..=31 {
            for dow in 0..7 {
                days.push(match &self.days {
                    Days::Every => true,
                    Days::OfWeek(week) => week.contains(&dow),
                    Days::OfMonth(month) => month.contains(&dom),
                    Days::Either { month, week } => month.contains(&dom) || week.contains(&dow),
                });
            }
        }
        let months = if self.months.is_empty() { (1..=12).collect() } else { self.months.clone() };
        Fires { minutes, hours, months, days }
    }

    /// The line, in the words of the presets where it is one of them.
    pub(super) fn line(&self) -> String {
        let every_month = self.months.is_empty();
        match (&self.times, &self.days) {
            (Times::Hourly(m), Days::Every) if m.len() == 1 && every_month => return format!("Hourly at :{:02}", m[0]),
            (Times::At { hours, minutes }, days) if hours.len() == 1 && minutes.len() == 1 && every_month => {
                let at = clock(hours[0], minutes[0]);
                match days {
                    Days::Every => return format!("Daily at {at}"),
                    Days::OfWeek(d) if d == &[1, 2, 3, 4, 5] => return format!("Weekdays at {at}"),
                    Days::OfWeek(d) if d.len() == 1 => return format!("Weekly on {} at {at}", DAY_NAMES[d[0] as usize]),
                    _ => {}
                }
            }
            _ => {}
        }
        let times = match &self.times {
            Times::EveryMinutes { step: 1, from: 0, to: 23 } => "every minute".to_string(),
            Times::EveryMinutes { step, from: 0, to: 23 } => format!("every {step} minutes"),
            Times::EveryMinutes { step: 1, from, to } => format!("every minute from {} to {}", clock(*from, 0), clock(*to, 59)),
            Times::EveryMinutes { step, from, to } => format!("every {step} minutes from {} to {}", clock(*from, 0), clock(*to, 60 - step)),
            Times::Hourly(minutes) => format!("hourly at {}", list(minutes.iter().map(|m| format!(":{m:02}")).collect())),
            Times::EveryHours { step, minute } => format!("every {step} hours at :{minute:02}"),
            Times::At { hours, minutes } => {
                let at: Vec<String> = hours.iter().flat_map(|h| minutes.iter().map(move |m| clock(*h, *m))).collect();
                let daily = if matches!(self.days, Days::Every) && every_month { "daily " } else { "" };
                format!("{daily}at {}", list(at))
            }
        };
        let days = match &self.days {
            Days::Every => String::new(),
            Days::OfWeek(week) => format!(" on {}", week_days(week)),
            Days::OfMonth(month) => format!(" on {}", month_days(month)),
            Days::Either { month, week } => format!(" on {} or on {}", month_days(month), week_days(week)),
        };
        let months = if every_month {
            String::new()
        } else {
            format!(" in {}", runs(&self.months, 2, |m, _| MONTH_NAMES[m as usize - 1].to_string()))
        };
        let line = format!("{times}{days}{months}");
        let mut chars = line.chars();
        chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
    }
}

/// The times of day of the minute and hour sets, when a shape says them exactly.
fn times(minutes: &[u32], hours: &[u32]) -> Option<Times> {
    let all_hours = hours.len() == 24;
    let step = every_from_zero(minutes, 60);
    let contiguous = hours.windows(2).all(|w| w[1] == w[0] + 1);
    if minutes.len() * hours.len() <= TIMES_LISTED.min(4) {
        return Some(Times::At { hours: hours.to_vec(), minutes: minutes.to_vec() });
    }
    if let Some(step) = step.filter(|_| minutes.len() > 1 && contiguous) {
        return Some(Times::EveryMinutes { step, from: hours[0], to: hours[hours.len() - 1] });
    }
    if all_hours && minutes.len() <= MINUTES_LISTED {
        return Some(Times::Hourly(minutes.to_vec()));
    }
    if minutes.len() * hours.len() <= TIMES_LISTED {
        return Some(Times::At { hours: hours.to_vec(), minutes: minutes.to_vec() });
    }
    if let (Some(step), [minute]) = (every_from_zero(hours, 24), minutes) {
        return Some(Times::EveryHours { step, minute: *minute });
    }
    None
}

/// `n` when `set` is 0, n, 2n, … up to `span` and `n` divides `span` (so the gaps stay even
/// across the wrap); `None` otherwise.
fn every_from_zero(set: &[u32], span: u32) -> Option<u32> {
    let step = if set.len() > 1 { set[1] } else { return None };
    (step > 0 && span.is_multiple_of(step) && set.len() as u32 == span / step && set.iter().enumerate().all(|(i, v)| *v == i as u32 * step))
        .then_some(step)
}

/// The values of field `index` of `spec` within `range`, in order.
fn members(spec: &CronSpec, index: usize, range: std::ops::RangeInclusive<u32>) -> Vec<u32> {
    range.filter(|v| spec.has(index, *v)).collect()
}

fn clock(hour: u32, minute: u32) -> String {
    format!("{hour:02}:{minute:02}")
}

/// "a", "a and b", "a, b and c".
fn list(items: Vec<String>) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A sorted set as a list in which runs of at least `min_run + 1` values read "a through b";
/// `name(value, in_a_run)`.
fn runs(set: &[u32], min_run: usize, name: impl Fn(u32, bool) -> String) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < set.len() {
        let mut j = i;
        while j + 1 < set.len() && set[j + 1] == set[j] + 1 {
            j += 1;
        }
        if j - i >= min_run {
            parts.push(format!("{} through {}", name(set[i], true), name(set[j], true)));
        } else {
            parts.extend(set[i..=j].iter().map(|v| name(*v, false)));
        }
        i = j + 1;
    }
    list(parts)
}

fn week_days(week: &[u32]) -> String {
    match week {
        [1, 2, 3, 4, 5] => "weekdays".into(),
        [0, 6] => "weekends".into(),
        _ => runs(week, 2, |d, in_run| format!("{}{}", DAY_NAMES[d as usize], if in_run { "" } else { "s" })),
    }
}

fn month_days(month: &[u32]) -> String {
    let word = if month.len() == 1 { "day" } else { "days" };
    format!("{word} {} of the month", runs(month, 2, |d, _| d.to_string()))
}

#[cfg(test)]
mod tests {
    use chrono::{Datelike, NaiveDate};
    use proptest::prelude::*;

    use super::super::{CronSpec, human};
    use super::*;

    #[test]
    fn human_lines_of_custom_shapes() {
        for (cron, line) in [
            ("*/15 9-17 * * 1-5", "Every 15 minutes from 09:00 to 17:45 on weekdays"),
            ("*/5 * * * *", "Every 5 minutes"),
            ("* * * * *", "Every minute"),
            ("* 9-17 * * *", "Every minute from 09:00 to 17:59"),
            ("0,30 * * * *", "Every 30 minutes"),
            ("0,20,45 * * * *", "Hourly at :00, :20 and :45"),
            ("*/7 * * * *", "Hourly at :00, :07, :14, :21, :28, :35, :42, :49 and :56"),
            ("0 */2 * * *", "Every 2 hours at :00"),
            ("0 9,17 * * *", "Daily at 09:00 and 17:00"),
            ("30 8 * * 1,3,5", "At 08:30 on Mondays, Wednesdays and Fridays"),
            ("0 9 * * 1-4", "At 09:00 on Monday through Thursday"),
            ("0 10 * * 0,6", "At 10:00 on weekends"),
            ("0 9 1 * *", "At 09:00 on day 1 of the month"),
            ("0 8,18 1,15 * *", "At 08:00 and 18:00 on days 1 and 15 of the month"),
            ("0 9 1-7 * *", "At 09:00 on days 1 through 7 of the month"),
            ("0 9 1 * 1", "At 09:00 on day 1 of the month or on Mondays"),
            ("0 9 * 1 *", "At 09:00 in January"),
            ("0 6 * 3-10 1-5", "At 06:00 on weekdays in March through October"),
            ("15 * * * 1", "Hourly at :15 on Mondays"),
            ("0 9 * * 1-5", "Weekdays at 09:00"),
            ("0 9 * * 6", "Weekly on Saturday at 09:00"),
        ] {
            assert_eq!(human(cron), line, "{cron}");
        }
        // Shapes no line states exactly stay cron.
        for cron in ["*/7 9 * * *", "0 9 */2 * 1", "5,10,20 1,2,3 * * *", "0 1-23/2 * * *"] {
            assert_eq!(human(cron), format!("Cron {cron}"), "{cron}");
        }
    }

    /// One cron field: `*`, `n`, `a-b`, `*/n`, `a-b/n`, or a list of those.
    fn field(lo: u32, hi: u32) -> impl Strategy<Value = String> {
        let item = prop_oneof![
            3 => Just("*".to_string()),
            3 => (lo..=hi).prop_map(|n| n.to_string()),
            2 => (lo..=hi, lo..=hi).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
            2 => prop::sample::select(vec![2u32, 3, 4, 5, 6, 7, 10, 12, 15, 20, 30]).prop_map(|n| format!("*/{n}")),
            1 => (lo..=hi, lo..=hi, 1u32..8).prop_map(|(a, b, n)| format!("{}-{}/{n}", a.min(b), a.max(b))),
        ];
        prop_oneof![
            4 => item.clone(),
            1 => prop::collection::vec((lo..=hi).prop_map(|n| n.to_string()), 2..5).prop_map(|v| v.join(",")),
            1 => prop::collection::vec(item, 2..4).prop_map(|v| v.join(",")),
        ]
    }

    fn cron() -> impl Strategy<Value = String> {
        (field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 6)).prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// What a line says is what the expression fires: the minutes of a day, and the days of
        /// two years (leap day, every weekday on every date), compared one by one with the
        /// scheduler's own matching.
        #[test]
        fn human_line_says_exactly_what_the_cron_fires(expr in cron()) {
            let Ok(spec) = CronSpec::parse(&expr) else { return Ok(()) };
            let line = human(&expr);
            let Some(said) = Said::of(&spec) else {
                prop_assert_eq!(line, format!("Cron {expr}"));
                return Ok(());
            };
            prop_assert!(!line.starts_with("Cron"), "{expr}: {line}");
            let fires = said.fires();
            for hour in 0..24 {
                for minute in 0..60 {
                    let cron = spec.has(0, minute) && spec.has(1, hour);
                    let said = fires.minutes.contains(&minute) && fires.hours.contains(&hour);
                    prop_assert_eq!(cron, said, "{} at {:02}:{:02}: {}", expr, hour, minute, line);
                }
            }
            let mut day = NaiveDate::from_ymd_opt(2027, 1, 1).unwrap();
            while day.year() < 2029 {
                let cron = spec.day_matches(day);
                let said = fires.months.contains(&day.month())
                    && fires.days[(day.day() as usize - 1) * 7 + day.weekday().num_days_from_sunday() as usize];
                prop_assert_eq!(cron, said, "{} on {}: {}", expr, day, line);
                day = day.succ_opt().unwrap();
            }
        }
    }
}
