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
