//! Timestamps as they appear in the contract: RFC 3339 in UTC with millisecond precision.
//! The core never reads a clock; callers pass `now`. Arithmetic on instants goes through the
//! checked helpers here, so no user-given number of seconds can panic or leave a timestamp that
//! cannot be read back.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde::{Deserialize, Deserializer, Serializer};

pub type Ts = DateTime<Utc>;

/// Milliseconds from the epoch to 9999-12-31T23:59:59.999Z.
const LATEST_MILLIS: i64 = 253_402_300_799_999;

/// The last instant a timestamp of the contract can carry: RFC 3339 has four-digit years, so a
/// later instant could be written but never read back.
pub fn latest() -> Ts {
    DateTime::from_timestamp_millis(LATEST_MILLIS).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `t` plus `seconds`, or `None` when that lies past [`latest`] (whatever `seconds` is).
pub fn add_seconds(t: Ts, seconds: u64) -> Option<Ts> {
    let delta = TimeDelta::try_seconds(i64::try_from(seconds).ok()?)?;
    t.checked_add_signed(delta).filter(|end| *end <= latest())
}

/// `t` plus `millis`, or `None` when that lies past [`latest`].
pub fn add_millis(t: Ts, millis: u64) -> Option<Ts> {
    let delta = TimeDelta::try_milliseconds(i64::try_from(millis).ok()?)?;
    t.checked_add_signed(delta).filter(|end| *end <= latest())
}

/// `t` minus `seconds`, or the earliest instant there is when that lies before it: the start of
/// a look-back window such as an event cooldown, which never fails.
pub fn sub_seconds_saturating(t: Ts, seconds: u64) -> Ts {
    i64::try_from(seconds)
        .ok()
        .and_then(TimeDelta::try_seconds)
        .and_then(|delta| t.checked_sub_signed(delta))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

pub fn format(t: &Ts) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn parse(s: &str) -> Option<Ts> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// The text [`parse_day_or_time`] reads, as a JSON Schema pattern: a date, or a date and a time
/// with an offset (upper-case `T` and `Z`).
pub const DAY_OR_TIME_PATTERN: &str = "^(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])\
     (T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?$";

/// How a user names the ends of a period (`GET /stats`, `GET /runs?from=&to=`): a `YYYY-MM-DD`
/// date (its UTC midnight) or an RFC 3339 date and time, exactly the text of
/// [`DAY_OR_TIME_PATTERN`], and every such text: a day past its month's end counts on into the
/// next month (`02-30` is March 2 or 1), and an instant past what a run can record is the last
/// one it can (so a request its schema allows is never refused).
pub fn parse_day_or_time(s: &str) -> Option<Ts> {
    let b = s.as_bytes();
    let digits = |from: usize, to: usize| -> Option<u32> {
        let part = b.get(from..to)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let (year, month, day) = (digits(0, 4)?, digits(5, 7)?, digits(8, 10)?);
    if !(at(4, b'-') && at(7, b'-') && year >= 1 && (1..=12).contains(&month) && (1..=31).contains(&day)) {
        return None;
    }
    let date =
        chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, 1)?.checked_add_days(chrono::Days::new(u64::from(day - 1)))?;
    let (time, offset_seconds) = if b.len() == 10 {
        (chrono::NaiveTime::MIN, 0i64)
    } else {
        let (h, m, sec) = (digits(11, 13)?, digits(14, 16)?, digits(17, 19)?);
        if !(at(10, b'T') && at(13, b':') && at(16, b':') && h <= 23 && m <= 59 && sec <= 59) {
            return None;
        }
        let mut i = 19;
        let mut nanos = 0u32;
        if at(i, b'.') {
            let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if !(1..=9).contains(&n) {
                return None;
            }
            nanos = digits(i + 1, i + 1 + n)? * 10u32.pow(9 - n as u32);
            i += 1 + n;
        }
        let offset = match b.get(i) {
            Some(b'Z') if b.len() == i + 1 => 0,
            Some(sign @ (b'+' | b'-')) if b.len() == i + 6 && at(i + 3, b':') => {
                let (oh, om) = (digits(i + 1, i + 3)?, digits(i + 4, i + 6)?);
                if oh > 23 || om > 59 {
                    return None;
                }
                let seconds = i64::from(oh * 3600 + om * 60);
                if *sign == b'+' { seconds } else { -seconds }
            }
            _ => return None,
        };
        (chrono::NaiveTime::from_hms_nano_opt(h, m, sec, nanos)?, offset)
    };
    let local = date.and_time(time).and_utc();
    let earliest = chrono::NaiveDate::from_ymd_opt(1, 1, 1)?.and_time(chrono::NaiveTime::MIN).and_utc();
    let t = local.checked_sub_signed(TimeDelta::seconds(offset_seconds)).unwrap_or(local);
    Some(t.clamp(earliest, latest()))
}

pub fn serialize<S: Serializer>(t: &Ts, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(t))
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ts, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).ok_or_else(|| serde::de::Error::custom(format!("bad timestamp {s:?}")))
}

/// The same for `Option<Ts>` (`null` when absent).
/// The JSON Schema of a stamp (`schemars(schema_with = "time::schema")`).
#[cfg(feature = "schema")]
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "format": "date-time"})
}

/// The JSON Schema of a stamp or `null`.
#[cfg(feature = "schema")]
pub fn nullable_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "null"], "format": "date-time"})
}

pub mod opt {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Option<Ts>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&format(t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Ts>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(s) => parse(&s).map(Some).ok_or_else(|| serde::de::Error::custom(format!("bad timestamp {s:?}"))),
        }
    }
}

/// A list of timestamps, each as [`format`] writes it.
pub mod list {
    use super::*;
    use serde::Serialize;

    pub fn serialize<S: Serializer>(v: &[Ts], s: S) -> Result<S::Ok, S::Error> {
        v.iter().map(format).collect::<Vec<_>>().as_slice().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Ts>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| parse(s).ok_or_else(|| serde::de::Error::custom(format!("bad timestamp {s:?}"))))
            .collect()
    }
}

#[cfg(test)]
mod day_or_time_tests {
    use super::*;

    #[test]
    fn days_and_times_read_as_the_pattern_says() {
        let t = |s: &str| parse_day_or_time(s).map(|t| format(&t));
        assert_eq!(t("2026-12-01").as_deref(), Some("2026-12-01T00:00:00.000Z"));
        assert_eq!(t("2026-12-01T08:30:00+02:00").as_deref(), Some("2026-12-01T06:30:00.000Z"));
        assert_eq!(t("2026-12-01T08:30:00.25Z").as_deref(), Some("2026-12-01T08:30:00.250Z"));
        assert_eq!(t("2026-02-30").as_deref(), Some("2026-03-02T00:00:00.000Z"), "a day past the month's end counts on");
        assert_eq!(t("9999-12-31T23:59:59-05:00").as_deref(), Some("9999-12-31T23:59:59.999Z"), "kept within what a run records");
        assert_eq!(t("0001-01-01T00:00:00+01:00").as_deref(), Some("0001-01-01T00:00:00.000Z"));
        for bad in [
            "",
            "2026-12-1",
            "2026-13-01",
            "0000-01-01",
            "2026-12-01 08:30:00Z",
            "2026-12-01t08:30:00Z",
            "2026-12-01T08:30:00",
            "2026-12-01T24:00:00Z",
            "2026-12-01T08:30:00.Z",
            "2026-12-01T08:30:00.1234567890Z",
            "2026-12-01T08:30:00+2:00",
            "2026-12-01x",
            "４０２６-12-01",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }
}
