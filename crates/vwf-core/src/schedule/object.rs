//! Schedule objects `{preset, time?, minute?, dow?, cron?, tz?}`: presets to cron, times of day
//! and time zones.

use super::*;

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

/// A schedule preset (SPEC §10): its name, the fields of the schedule object it reads besides
/// `preset` and `tz` (the form shows these), and those it needs. [`to_cron`] is the rule; this
/// table describes it for forms and the schema, and a test holds the two together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Preset {
    pub preset: &'static str,
    pub fields: &'static [&'static str],
    pub required: &'static [&'static str],
}

/// The presets, in the order forms offer them.
pub const PRESETS: [Preset; 5] = [
    // An hourly schedule also takes the minute of a `time`, when it has no `minute`.
    Preset { preset: "hourly", fields: &["minute"], required: &[] },
    Preset { preset: "daily", fields: &["time"], required: &["time"] },
    Preset { preset: "weekdays", fields: &["time"], required: &["time"] },
    Preset { preset: "weekly", fields: &["time", "dow"], required: &["time"] },
    Preset { preset: "custom", fields: &["cron"], required: &["cron"] },
];
/// `minute` of an hourly schedule, and its default.
pub const MINUTE_RANGE: (u32, u32) = (0, 59);
pub const MINUTE_DEFAULT: u32 = 0;
/// `dow` of a weekly schedule (0 = Sunday), and its default (Monday).
pub const DOW_RANGE: (u32, u32) = (0, 6);
pub const DOW_DEFAULT: u32 = 1;
/// The zone of a schedule or heartbeat without `tz`.
pub const TZ_DEFAULT: &str = "UTC";

/// `hourly, daily, weekdays, weekly or custom`, for messages.
fn preset_names() -> String {
    crate::spec::either(PRESETS.iter().map(|p| p.preset))
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
            return Err(ScheduleError::new("preset", format!("schedule needs a preset ({})", preset_names())));
        }
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(ScheduleError::new("preset", format!("preset must be a string ({}), got {}", preset_names(), describe(other))));
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

pub(super) fn optional_string(obj: &Map<String, Value>, key: &str, what: &str) -> Result<Option<String>, ScheduleError> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ScheduleError::new(key, format!("{key} must be a string ({what}), got {}", describe(other)))),
    }
}

pub(super) fn optional_u32(obj: &Map<String, Value>, key: &str, range: &str) -> Result<Option<u32>, ScheduleError> {
    match present(obj, key) {
        None => Ok(None),
        // A whole number written with a fraction (`6.0`) is still that whole number, as in JSON
        // Schema's `integer`.
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(f)).map(|f| f as u64))
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| ScheduleError::new(key, format!("{key} must be a whole number ({range}), got {}", describe(v)))),
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
            let (lo, hi) = MINUTE_RANGE;
            let minute = match s.minute {
                Some(m) if !(lo..=hi).contains(&m) => {
                    return Err(ScheduleError::new("minute", format!("minute {m} out of range {lo}-{hi}")));
                }
                Some(m) => m,
                None => from_time.unwrap_or(MINUTE_DEFAULT),
            };
            Ok(format!("{minute} * * * *"))
        }
        preset @ ("daily" | "weekdays" | "weekly") => {
            let Some(time) = &s.time else {
                return Err(ScheduleError::new("time", format!("a {preset} schedule needs a time, e.g. \"09:00\"")));
            };
            let (hour, minute) = parse_time(time)?;
            let dow = match (preset, s.dow) {
                ("daily", _) => "*".to_string(),
                ("weekdays", _) => "1-5".to_string(),
                (_, Some(d)) if !(DOW_RANGE.0..=DOW_RANGE.1).contains(&d) => {
                    return Err(ScheduleError::new("dow", format!("dow {d} out of range {}-{} (0 = Sunday)", DOW_RANGE.0, DOW_RANGE.1)));
                }
                (_, d) => d.unwrap_or(DOW_DEFAULT).to_string(),
            };
            Ok(format!("{minute} {hour} * * {dow}"))
        }
        "custom" => {
            // A pasted line keeps its line break: whitespace at the ends is not part of the
            // expression (inside it, only spaces and tabs separate fields).
            let cron = s.cron.as_deref().map(str::trim).unwrap_or("");
            if cron.is_empty() {
                return Err(ScheduleError::new("cron", "a custom schedule needs a cron expression, e.g. \"*/15 * * * *\""));
            }
            validate_cron(cron)?;
            Ok(cron.to_string())
        }
        "" => Err(ScheduleError::new("preset", format!("schedule needs a preset ({})", preset_names()))),
        other => Err(ScheduleError::new("preset", format!("unknown preset \"{other}\" (use {})", preset_names()))),
    }
}

/// A 24-hour `HH:MM`, the hour also as one digit (`7:30` is `07:30`); surrounding whitespace is
/// ignored. Field `"time"`.
pub(super) fn parse_time(s: &str) -> Result<(u32, u32), ScheduleError> {
    hh_mm(s).map_err(|detail| ScheduleError::new("time", format!("time \"{s}\" {detail}")))
}

pub(super) fn hh_mm(s: &str) -> Result<(u32, u32), String> {
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
        TZ_DEFAULT | "Z" => Ok(Tz::UTC),
        name => Tz::from_str(name).map_err(|_| {
            ScheduleError::new("tz", format!("tz \"{tz}\" is not a known time zone (use \"UTC\" or an IANA name like \"Europe/Paris\")"))
        }),
    }
}
