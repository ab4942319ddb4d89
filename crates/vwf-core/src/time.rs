//! Timestamps as they appear in the contract: RFC 3339 in UTC with millisecond precision.
//! The core never reads a clock; callers pass `now`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

pub type Ts = DateTime<Utc>;

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
