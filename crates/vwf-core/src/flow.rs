//! Flow control at the door, as pure rules over arrival times: how a trigger's `throttle` and
//! `debounce` decide which arrivals start a run. The caller keeps the state (per design and key)
//! and passes `now`; nothing here reads a clock or a store.
//!
//! - **Throttle** (`{limit, period}`): an arrival starts a run when fewer than `limit` runs of
//!   its key started within the `period` before it (the window `(now - period, now]`); the rest
//!   are dropped (or queued, which the caller decides).
//! - **Debounce** (`{period}`): arrivals fold into a burst; the burst starts one run once no
//!   arrival came for `period`, with the last arrival's payload and how many it folded in.
//!
//! A trigger node of mode event, folder, watch or webhook declares them ([`read_rules`]):
//!
//! ```json
//! "debounce": {"period": "30s", "key": "{{trigger.payload.pr}}"}
//! "throttle": {"limit": 5, "period": "1m", "key": "{{trigger.payload.repo}}", "on_limit": "drop"}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::schedule::{ScheduleError, present};
use crate::time::Ts;

/// The trigger modes whose arrivals may be debounced or throttled (the others start runs by
/// hand, or on a clock of their own).
pub const FLOW_MODES: [&str; 4] = ["event", "folder", "watch", "webhook"];
/// The longest `period` of a debounce or a throttle: a day.
pub const PERIOD_MAX_SECONDS: u64 = 86_400;
/// The most starts a throttle may allow per period.
pub const THROTTLE_LIMIT_MAX: u32 = 10_000;

/// A trigger's `debounce`: start once a key's arrivals have been quiet for `period_seconds`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebounceRule {
    pub period_seconds: u64,
    pub key: Option<String>,
}

/// A trigger's `throttle`: at most `limit` starts per period per key; the rest dropped, or
/// deferred until the window has room (`on_limit: "queue"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleRule {
    pub throttle: Throttle,
    pub key: Option<String>,
    pub queue: bool,
}

/// What a trigger node says about its arrivals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    pub debounce: Option<DebounceRule>,
    pub throttle: Option<ThrottleRule>,
}

/// Reads a trigger node's `debounce` and `throttle`, reporting every problem.
pub fn read_rules(node: &Map<String, Value>) -> Result<Rules, Vec<ScheduleError>> {
    let mut issues = Vec::new();
    let mode = crate::trigger::declared_mode(node);
    let mut rules = Rules::default();
    for field in ["debounce", "throttle"] {
        if present(node, field).is_some() && !FLOW_MODES.contains(&mode) {
            issues.push(ScheduleError::new(field, format!("\"{field}\" applies to event, folder, watch and webhook triggers, not {mode}")));
        }
    }
    if let Some(v) = present(node, "debounce") {
        match object(v, "debounce", &["period", "key"])
            .and_then(|o| Ok(DebounceRule { period_seconds: period(o, "debounce")?, key: key(o, "debounce")? }))
        {
            Ok(rule) => rules.debounce = Some(rule),
            Err(e) => issues.push(e),
        }
    }
    if let Some(v) = present(node, "throttle") {
        let read = object(v, "throttle", &["limit", "period", "key", "on_limit"]).and_then(|o| {
            let limit =
                o.get("limit").and_then(Value::as_u64).filter(|n| (1..=u64::from(THROTTLE_LIMIT_MAX)).contains(n)).ok_or_else(|| {
                    ScheduleError::new("throttle", format!("\"throttle.limit\" is a whole number from 1 to {THROTTLE_LIMIT_MAX}"))
                })?;
            let queue = match o.get("on_limit") {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) if s == "drop" => false,
                Some(Value::String(s)) if s == "queue" => true,
                Some(_) => return Err(ScheduleError::new("throttle", "\"throttle.on_limit\" is drop or queue")),
            };
            let throttle = Throttle { limit: limit as u32, period_seconds: period(o, "throttle")? };
            Ok(ThrottleRule { throttle, key: key(o, "throttle")?, queue })
        });
        match read {
            Ok(rule) => rules.throttle = Some(rule),
            Err(e) => issues.push(e),
        }
    }
    if rules.debounce.is_some() && rules.throttle.is_some() {
        issues.push(ScheduleError::new("throttle", "a trigger has a debounce or a throttle, not both"));
    }
    if issues.is_empty() { Ok(rules) } else { Err(issues) }
}

fn object<'v>(v: &'v Value, field: &str, known: &[&str]) -> Result<&'v Map<String, Value>, ScheduleError> {
    let o = v.as_object().ok_or_else(|| ScheduleError::new(field, format!("\"{field}\" is an object: {{\"period\": \"30s\", …}}")))?;
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(ScheduleError::new(field, format!("\"{field}\" has no field {k:?} ({})", known.join(", ")))),
        None => Ok(o),
    }
}

fn period(o: &Map<String, Value>, field: &str) -> Result<u64, ScheduleError> {
    let v = o.get("period").ok_or_else(|| ScheduleError::new(field, format!("\"{field}\" needs a period, like \"30s\"")))?;
    crate::schedule::duration_or_seconds(v, 1, PERIOD_MAX_SECONDS, "a day")
        .map_err(|why| ScheduleError::new(field, format!("\"{field}.period\" {why}")))
}

fn key(o: &Map<String, Value>, field: &str) -> Result<Option<String>, ScheduleError> {
    match o.get("key") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => {
            crate::concurrency::check_key(s, &format!("{field}.key")).map_err(|why| ScheduleError::new(field, why))?;
            Ok(Some(s.clone()))
        }
        Some(_) => Err(ScheduleError::new(
            field,
            format!("\"{field}.key\" is a template over the trigger input, like \"{{{{trigger.payload.pr}}}}\""),
        )),
    }
}

/// `throttle`: at most `limit` starts per `period_seconds`, per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    pub limit: u32,
    pub period_seconds: u64,
}

impl Throttle {
    /// Whether an arrival at `now` may start a run, given when the key's runs started (any
    /// order; those before the window are ignored).
    pub fn allows(&self, started: &[Ts], now: Ts) -> bool {
        let since = crate::time::sub_seconds_saturating(now, self.period_seconds);
        let within = started.iter().filter(|t| **t > since && **t <= now).count();
        within < self.limit as usize
    }

    /// Forgets the starts that left the window at `now` (what a kept window needs no more).
    pub fn prune(&self, started: &mut Vec<Ts>, now: Ts) {
        let since = crate::time::sub_seconds_saturating(now, self.period_seconds);
        started.retain(|t| *t > since);
    }

    /// When the window next has room for an arrival held at `now`: a period after the oldest
    /// start in it (`now` when there is none).
    pub fn next_room(&self, started: &[Ts], now: Ts) -> Ts {
        started.iter().min().and_then(|t| crate::time::add_seconds(*t, self.period_seconds)).unwrap_or(now).max(now)
    }
}

/// A burst of arrivals being debounced: the last arrival's payload and time, and how many
/// arrivals it folds in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Burst {
    #[serde(with = "crate::time")]
    pub first_at: Ts,
    #[serde(with = "crate::time")]
    pub last_at: Ts,
    pub count: u64,
    pub payload: Value,
}

impl Burst {
    /// A burst begun by an arrival at `at` with `payload`.
    pub fn begin(at: Ts, payload: Value) -> Burst {
        Burst { first_at: at, last_at: at, count: 1, payload }
    }

    /// Folds in an arrival at `at` (not before the last one) with `payload`.
    pub fn arrive(&mut self, at: Ts, payload: Value) {
        self.last_at = self.last_at.max(at);
        self.count += 1;
        self.payload = payload;
    }

    /// When the burst starts its run: `period_seconds` after its last arrival (`None` past the
    /// last time the store can hold).
    pub fn due(&self, period_seconds: u64) -> Option<Ts> {
        crate::time::add_seconds(self.last_at, period_seconds)
    }
}

/// A debounced key's state as arrivals and the clock move: what an arrival does, and what is due.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Debouncer {
    pub period_seconds: u64,
    pub burst: Option<Burst>,
}

impl Debouncer {
    pub fn new(period_seconds: u64) -> Debouncer {
        Debouncer { period_seconds, burst: None }
    }

    /// An arrival at `at`: the burst it ends first, if that one was quiet long enough already
    /// (the caller starts its run), then it begins or joins the open burst.
    pub fn arrive(&mut self, at: Ts, payload: Value) -> Option<Burst> {
        let ended = self.take_due(at);
        match &mut self.burst {
            Some(burst) => burst.arrive(at, payload),
            None => self.burst = Some(Burst::begin(at, payload)),
        }
        ended
    }

    /// The burst whose quiet period has passed at `now`, taken (its run starts now).
    pub fn take_due(&mut self, now: Ts) -> Option<Burst> {
        let due = self.burst.as_ref()?.due(self.period_seconds)?;
        if due <= now { self.burst.take() } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn at(s: i64) -> Ts {
        chrono::DateTime::from_timestamp(1_800_000_000 + s, 0).expect("a time")
    }

    /// Arrival times (seconds from a start), sorted, with bursts and gaps.
    fn arrivals() -> impl Strategy<Value = Vec<i64>> {
        prop::collection::vec(prop_oneof![0i64..3, 0i64..30, 0i64..300], 0..120).prop_map(|gaps| {
            let mut t = 0;
            gaps.into_iter()
                .map(|g| {
                    t += g;
                    t
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Throttling arrivals one by one on an injected clock: no window of `period` holds more
        /// than `limit` starts, and an arrival is dropped only when its window is full.
        #[test]
        fn throttle_never_exceeds_its_limit_and_drops_only_when_full(times in arrivals(), limit in 1u32..6, period in 1u64..120) {
            let rule = Throttle { limit, period_seconds: period };
            let mut started: Vec<i64> = Vec::new();
            for &t in &times {
                let as_ts: Vec<Ts> = started.iter().map(|s| at(*s)).collect();
                let full = started.iter().filter(|s| **s > t - period as i64 && **s <= t).count() >= limit as usize;
                prop_assert_eq!(rule.allows(&as_ts, at(t)), !full);
                if !full {
                    started.push(t);
                }
            }
            for &s in &started {
                let in_window = started.iter().filter(|o| **o > s - period as i64 && **o <= s).count();
                prop_assert!(in_window <= limit as usize, "{in_window} starts in the window ending {s}");
            }
        }

        /// Debouncing arrivals on an injected clock gives one start per burst (arrivals closer
        /// than `period` to the one before), at its last arrival plus `period`, with that
        /// arrival's payload and the burst's count, whatever the clock reads between arrivals.
        #[test]
        fn debounce_starts_once_per_quiet_burst(times in arrivals(), period in 1u64..60, ticks in prop::collection::vec(0i64..400, 0..40)) {
            // The bursts, worked out directly: split where a gap reaches the period.
            let mut expected: Vec<(i64, u64, i64)> = Vec::new();
            let mut i = 0;
            while i < times.len() {
                let mut j = i;
                while j + 1 < times.len() && times[j + 1] - times[j] < period as i64 {
                    j += 1;
                }
                expected.push((times[j] + period as i64, (j - i + 1) as u64, times[j]));
                i = j + 1;
            }
            // The same arrivals through the state machine, with the clock read at arbitrary
            // moments too (a timer that fires early, late, or between arrivals).
            let mut d = Debouncer::new(period);
            let mut got: Vec<(i64, u64, i64)> = Vec::new();
            let mut events: Vec<(i64, Option<i64>)> = times.iter().map(|t| (*t, Some(*t))).collect();
            events.extend(ticks.iter().map(|t| (*t, None)));
            events.sort_by_key(|(t, arrival)| (*t, arrival.is_some()));
            let take = |burst: Burst, now: i64, got: &mut Vec<(i64, u64, i64)>| {
                let due = burst.due(period).expect("due").timestamp() - 1_800_000_000;
                assert!(due <= now, "a burst was taken before it was due");
                got.push((due, burst.count, burst.payload["t"].as_i64().expect("payload")));
            };
            for (t, arrival) in events {
                let ended = match arrival {
                    Some(a) => d.arrive(at(a), json!({"t": a})),
                    None => d.take_due(at(t)),
                };
                if let Some(burst) = ended {
                    take(burst, t, &mut got);
                }
            }
            if let Some(burst) = d.take_due(at(i64::from(u32::MAX))) {
                take(burst, i64::from(u32::MAX), &mut got);
            }
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_full_window_has_room_a_period_after_its_oldest_start() {
        let rule = Throttle { limit: 2, period_seconds: 60 };
        let mut started = vec![at(0), at(30), at(-100)];
        rule.prune(&mut started, at(40));
        assert_eq!(started, [at(0), at(30)]);
        assert!(!rule.allows(&started, at(40)));
        assert_eq!(rule.next_room(&started, at(40)), at(60));
        assert!(rule.allows(&started, at(60)));
        assert_eq!(rule.next_room(&[], at(40)), at(40));
    }

    #[test]
    fn a_burst_folds_its_arrivals_and_is_due_a_period_after_the_last() {
        let mut d = Debouncer::new(10);
        assert_eq!(d.arrive(at(0), json!(1)), None);
        assert_eq!(d.arrive(at(5), json!(2)), None);
        assert_eq!(d.take_due(at(14)), None);
        let burst = d.take_due(at(15)).expect("due at 15");
        assert_eq!((burst.count, burst.payload, burst.first_at, burst.last_at), (2, json!(2), at(0), at(5)));
        assert_eq!(d.take_due(at(100)), None);
    }
}
