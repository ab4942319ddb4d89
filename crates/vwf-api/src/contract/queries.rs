//! What the API's query strings carry: each route's query is a struct whose fields parse the
//! text a URL gives and whose JSON Schema is the route's parameters in the OpenAPI document (one
//! parameter per property, its description and schema).
//!
//! A value that does not fit is a 400 that quotes it: `limit="x": must be a whole number from 1
//! to 1000`.

use std::borrow::Cow;
use std::collections::HashMap;

use schemars::generate::SchemaGenerator;
use schemars::{JsonSchema, Schema, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use vwf_core::limits::LIVE_WAIT_SECONDS;
use vwf_core::listing::{STATUSES, TRIGGER_MODES};
use vwf_core::names::{DesignName, RunId};

use super::requests::{RUNS_DEFAULT, RUNS_MAX};
use crate::failure::Failure;

/// Reads a query string's pairs as `T`. A value that does not fit is refused with the key, the
/// value given and the rule (`wait="x": must be …`).
pub fn parse_query<T: DeserializeOwned>(pairs: &HashMap<String, String>) -> Result<T, Failure> {
    let object: Map<String, Value> = pairs.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
        let key = e.path().to_string();
        let message = e.inner().to_string();
        let rule = message.strip_prefix("must ").map_or(message.clone(), |rule| format!("must {rule}"));
        Failure::BadRequest(match pairs.get(&key) {
            Some(given) => format!("{key}={given:?}: {rule}"),
            None => rule,
        })
    })
}

/// The text a query's value is.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    String::deserialize(deserializer)
}

/// Declares a query value: its type, how its text is read, and its schema.
macro_rules! query_value {
    ($(#[$doc:meta])* $name:ident($inner:ty), $read:expr, $schema:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name(pub $inner);

        impl $name {
            /// Reads the value from its text; the error is the rule it breaks.
            pub fn read(given: &str) -> Result<$name, String> {
                let read: fn(&str) -> Result<$inner, String> = $read;
                read(given).map($name)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $name::read(&text(deserializer)?).map_err(D::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

/// The spellings of a query switch, off then on; nothing else is one.
pub const FLAG_VALUES: [(&str, bool); 6] = [("0", false), ("false", false), ("no", false), ("1", true), ("true", true), ("yes", true)];

query_value!(
    /// A `0/1` (or `false/true`, `no/yes`) switch; absent is off.
    Flag(bool),
    |given| {
        FLAG_VALUES.iter().find(|(spelling, _)| *spelling == given).map(|(_, on)| *on).ok_or_else(|| "must be 1 or 0".to_string())
    },
    json_schema!({"type": "string", "enum": FLAG_VALUES.map(|(spelling, _)| spelling), "default": "0"})
);

query_value!(
    /// A design version's number: a whole number from 1.
    Version(u64),
    |given| match given.parse::<u64>() {
        Ok(n) if n >= 1 && given.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err("must be a version number (a whole number from 1)".into()),
    },
    json_schema!({"type": "integer", "minimum": 1, "maximum": u64::MAX})
);

query_value!(
    /// How many runs a page holds: 1 to [`RUNS_MAX`].
    Limit(usize),
    |given| match given.parse::<usize>() {
        Ok(n) if given.bytes().all(|b| b.is_ascii_digit()) && (1..=RUNS_MAX).contains(&n) => Ok(n),
        _ => Err(format!("must be a whole number from 1 to {RUNS_MAX}")),
    },
    json_schema!({"type": "integer", "minimum": 1, "maximum": RUNS_MAX, "default": RUNS_DEFAULT})
);

query_value!(
    /// `wait` of a long-poll read: whole seconds, a longer wait than the limit cut to it.
    Wait(u64),
    |given| {
        if given.is_empty() || !given.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("must be a whole number of seconds (at most {LIVE_WAIT_SECONDS} are waited)"));
        }
        // A number too large to read is over the limit too.
        Ok(given.parse::<u64>().unwrap_or(u64::MAX).min(LIVE_WAIT_SECONDS))
    },
    json_schema!({"type": "integer", "minimum": 0, "default": 0, "description": format!("At most {LIVE_WAIT_SECONDS} seconds are waited.")})
);

query_value!(
    /// `since` of a long-poll read: the `stamp` of an earlier answer.
    Since(String),
    |given| {
        let digits = crate::server::STAMP_DIGITS;
        if given.len() == digits && given.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(given.to_string())
        } else {
            Err(format!("must be the stamp of an earlier answer ({digits} lowercase hex digits)"))
        }
    },
    json_schema!({"type": "string", "pattern": crate::server::STAMP_PATTERN})
);

query_value!(
    /// A run id.
    Before(RunId),
    RunId::parse,
    json_schema!({"type": "string", "pattern": RunId::PATTERN})
);

query_value!(
    /// A design's name.
    OfDesign(DesignName),
    DesignName::parse,
    json_schema!({"type": "string", "pattern": DesignName::PATTERN})
);

query_value!(
    /// A run status.
    OfStatus(String),
    |given| Ok(given.to_string()),
    json_schema!({"type": "string", "enum": STATUSES})
);

query_value!(
    /// A trigger mode.
    OfTrigger(String),
    |given| Ok(given.to_string()),
    json_schema!({"type": "string", "enum": TRIGGER_MODES.iter().copied().chain(vwf_core::trigger::TriggerMode::STARTED_BY_RUNS.map(|m| m.as_str())).collect::<Vec<_>>()})
);

query_value!(
    /// A run id or its start.
    IdPrefix(String),
    |given| Ok(given.to_string()),
    json_schema!({"type": "string", "pattern": "^[0-9a-f]{1,12}$"})
);

query_value!(
    /// A stats period's end: an RFC 3339 time, or a `YYYY-MM-DD` date (UTC midnight). Read by
    /// `vwf_core::stats::Query::parse`, which says what is wrong with one.
    Instant(String),
    |given| match vwf_core::time::parse_day_or_time(given) {
        Some(_) => Ok(given.to_string()),
        None => Err("must be an RFC 3339 time (2026-12-01T08:00:00Z) or a YYYY-MM-DD date".into()),
    },
    json_schema!({"type": "string", "pattern": vwf_core::time::DAY_OR_TIME_PATTERN, "examples": ["2026-12-01", "2026-12-01T08:00:00Z"]})
);

query_value!(
    /// How long a run took at least: a duration like `30s`, `5m`, `1h30m` (positive amounts of
    /// d, h, m, s in that order, each at most once), read by `vwf_core::listing`.
    MinDuration(String),
    |given| {
        let whole = !given.is_empty() && !given.contains(char::is_whitespace);
        let amounts_fit = given.split(|c: char| !c.is_ascii_digit()).all(|n| n.len() <= 6 && !n.starts_with('0'));
        match vwf_core::schedule::parse_duration(given) {
            Ok(_) if whole && amounts_fit => Ok(given.to_string()),
            _ => Err("must be a duration like 30s, 5m or 1h30m".into()),
        }
    },
    json_schema!({"type": "string", "pattern": "^(?=[0-9])([1-9][0-9]{0,5}d)?([1-9][0-9]{0,5}h)?([1-9][0-9]{0,5}m)?([1-9][0-9]{0,5}s)?$"})
);

query_value!(
    /// A stats bucket: `hour` or `day`.
    OfBucket(vwf_core::stats::Bucket),
    |given| vwf_core::stats::Bucket::parse(given).ok_or_else(|| "must be hour or day".to_string()),
    json_schema!({"type": "string", "enum": ["hour", "day"], "default": "day"})
);

/// The long-poll parameters of the run and the runs listing.
const SINCE: &str = "the stamp of an earlier answer: hold the request while the answer would have this stamp";
const WAIT: &str = "seconds to hold the request while nothing changes (default 0; a longer wait than the limit is cut to it); with since= or wait= the answer has a stamp";

/// `GET /models`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ModelsQuery {
    /// 1 drops the cached catalog
    pub refresh: Option<Flag>,
}

/// `GET /designs/{name}/diff`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct DiffQuery {
    /// The older version (default: the one before b)
    pub a: Option<Version>,
    /// The newer version (default: the newest)
    pub b: Option<Version>,
}

/// `POST /designs/{name}/validate`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ValidateQuery {
    /// 1 adds scopes: what each node's templates and condition may name
    pub scope: Option<Flag>,
}

/// `GET /runs`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct RunsQuery {
    /// how many runs (default 20, at most 1000)
    pub limit: Option<Limit>,
    /// only runs of this design
    pub design: Option<OfDesign>,
    /// only runs with this status
    pub status: Option<OfStatus>,
    /// only runs started by this trigger mode
    pub trigger: Option<OfTrigger>,
    /// only runs whose id starts with this
    pub id: Option<IdPrefix>,
    /// only runs the design steps of this run started
    pub parent: Option<Before>,
    /// only runs older than this one (the next cursor of the previous page)
    pub before: Option<Before>,
    /// only runs started at or after this time (RFC 3339, or a YYYY-MM-DD date: UTC midnight)
    pub from: Option<Instant>,
    /// only runs started before this time
    pub to: Option<Instant>,
    /// only runs that took at least this long, from their start to their last change (30s, 5m, 1h30m)
    pub min_duration: Option<MinDuration>,
    #[schemars(description = SINCE)]
    pub since: Option<Since>,
    #[schemars(description = WAIT)]
    pub wait: Option<Wait>,
}

/// `GET /stats`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct StatsQuery {
    /// only runs of this design
    pub design: Option<OfDesign>,
    /// the period's start, moved back to the start of its bucket (default: 7 days before `to`, 1 day in hours)
    pub from: Option<Instant>,
    /// the period's end, exclusive (default: now)
    pub to: Option<Instant>,
    /// the width of a bucket (default day; at most 2000 buckets)
    pub bucket: Option<OfBucket>,
}

/// `GET /runs/{run_id}`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct RunQuery {
    /// 1 adds the plan the run started with
    pub plan: Option<Flag>,
    #[schemars(description = SINCE)]
    pub since: Option<Since>,
    #[schemars(description = WAIT)]
    pub wait: Option<Wait>,
}

/// `Option<T>`'s schema is `T` or null; a query value is never null, only absent: the schema
/// of `T` alone.
fn never_null(mut schema: Value) -> Value {
    let null = Value::from("null");
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array)
        && let Some(other) = branches.iter().find(|b| b.get("type") != Some(&null))
    {
        return other.clone();
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| *t != null);
        if types.len() == 1 {
            schema["type"] = types[0].clone();
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    schema
}

/// The query parameters `T` describes, as OpenAPI parameter objects: one per property, optional.
pub fn parameters<T: JsonSchema>(generator: &mut SchemaGenerator) -> Vec<Value> {
    let schema = T::json_schema(generator).to_value();
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    properties
        .into_iter()
        .map(|(name, mut property)| {
            let description = property.as_object_mut().and_then(|p| p.remove("description")).unwrap_or(Value::Null);
            let property = never_null(property);
            serde_json::json!({"name": name, "in": "query", "required": false, "description": description, "schema": property})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query<T: DeserializeOwned>(pairs: &[(&str, &str)]) -> Result<T, String> {
        let pairs = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        parse_query(&pairs).map_err(|e| e.to_string())
    }

    /// A value that does not fit is quoted with its key and the rule; absent values are absent.
    #[test]
    fn misfits_quote_the_key_and_the_value() {
        let runs = query::<RunsQuery>(&[]).unwrap();
        assert!(runs.limit.is_none() && runs.before.is_none() && runs.wait.is_none());
        assert_eq!(query::<RunsQuery>(&[("limit", "x")]).unwrap_err(), "limit=\"x\": must be a whole number from 1 to 1000");
        assert_eq!(query::<RunsQuery>(&[("limit", "1001")]).unwrap_err(), "limit=\"1001\": must be a whole number from 1 to 1000");
        assert_eq!(query::<RunsQuery>(&[("limit", "1000")]).unwrap().limit, Some(Limit(1000)));
        assert_eq!(query::<ModelsQuery>(&[("refresh", "TRUE")]).unwrap_err(), "refresh=\"TRUE\": must be 1 or 0");
        assert_eq!(query::<ModelsQuery>(&[("refresh", "yes")]).unwrap().refresh, Some(Flag(true)));
        assert_eq!(query::<DiffQuery>(&[("a", "0")]).unwrap_err(), "a=\"0\": must be a version number (a whole number from 1)");
        let before = query::<RunsQuery>(&[("before", "nope")]).unwrap_err();
        assert_eq!(before, "before=\"nope\": bad run id \"nope\": a run id is 12 lowercase hex characters");
        // Unknown keys are left alone, as a body's unknown fields are.
        assert!(query::<RunQuery>(&[("other", "1")]).is_ok());
    }

    /// Each query's parameters: one per field, optional, with a schema that is never null.
    #[test]
    fn parameters_are_one_per_field_and_never_null() {
        let mut generator = crate::contract::generator();
        let runs = parameters::<RunsQuery>(&mut generator);
        let names: Vec<&str> = runs.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(
            names,
            ["limit", "design", "status", "trigger", "id", "parent", "before", "from", "to", "min_duration", "since", "wait"]
        );
        for p in &runs {
            assert_eq!(p["required"], false);
            assert!(p["description"].is_string(), "{p}");
            assert!(!p["schema"].to_string().contains("null"), "{p}");
        }
    }
}
