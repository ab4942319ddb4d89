//! Rate limits steps share (`[limits."<name>"]` in the config, `rate_limit: "<name>"` on agent
//! and http steps): at most `per_second` (or `per_minute`) plus `burst` starts in any window of
//! that length, counted across every design and instance that names the limit.
//!
//! A sliding window of the starts granted, checked when a step is about to start: a step over
//! the limit is not started but waits until the oldest start leaves the window, and is checked
//! again then (a wait that ran late never turns into a burst). A grant that aged while the step's
//! start was saved is taken again just before the request leaves ([`Window::retake`]). The
//! window is kept [`MARGIN_MS`] longer than its second or minute: a provider counts requests when
//! they reach it, and one delayed on its way by up to that much still finds the window it was
//! granted in.

use serde::{Deserialize, Serialize};

use crate::time::{self, Ts};

/// How much longer than its period a window is kept (see the module doc).
pub const MARGIN_MS: u64 = 100;
/// A grant older than this when its request is about to leave is taken again at that moment
/// (the save between the grant and the request was slow), so the window counts requests when
/// they leave.
pub const STALE_MS: i64 = 10;
/// The most starts a limit may allow per period, its burst included.
pub const PER_PERIOD_MAX: u32 = 10_000;

/// The step field naming the limit a step shares.
pub const FIELD: &str = "rate_limit";

/// Whether `name` can name a limit: 1 to 64 letters, digits, `_`, `-` and `.`.
pub fn is_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The limit a plan step names, if any.
pub fn named_by(node: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    node.get(FIELD).and_then(serde_json::Value::as_str)
}

/// A limit's rule: `limit` starts (its rate plus its burst) per `period_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub limit: u32,
    pub period_ms: u64,
}

impl Rule {
    /// `per_second` or `per_minute` (exactly one), plus `burst`.
    pub fn new(per_second: Option<u32>, per_minute: Option<u32>, burst: u32) -> Result<Rule, String> {
        let (rate, period_ms) = match (per_second, per_minute) {
            (Some(n), None) => (n, 1_000),
            (None, Some(n)) => (n, 60_000),
            _ => return Err("give per_second or per_minute (one of them)".into()),
        };
        let limit = rate.checked_add(burst).filter(|l| rate >= 1 && *l <= PER_PERIOD_MAX);
        let limit = limit.ok_or_else(|| format!("the rate is from 1, and the rate plus burst at most {PER_PERIOD_MAX}"))?;
        Ok(Rule { limit, period_ms })
    }

    fn window_ms(&self) -> u64 {
        self.period_ms + MARGIN_MS
    }
}

/// The starts a limit granted within its window, oldest first (what the store keeps).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    #[serde(default, with = "time::list")]
    pub granted: Vec<Ts>,
}

impl Window {
    /// A start asked for at `now`: granted (and counted) when the window has room; else when to
    /// ask again (the oldest start leaves the window then).
    pub fn take(&mut self, rule: &Rule, now: Ts) -> Result<(), Ts> {
        let window = rule.window_ms();
        self.granted.retain(|t| time::add_millis(*t, window).is_some_and(|end| end > now));
        if self.granted.len() < rule.limit as usize {
            self.granted.push(now);
            return Ok(());
        }
        let oldest = self.granted.iter().min().copied().unwrap_or(now);
        Err(time::add_millis(oldest, window).unwrap_or(now).max(now))
    }
}

impl Window {
    /// The grant made at `granted` is given back and a start asked for at `now` instead (see
    /// [`Window::take`]): a step whose request is about to leave later than it was granted.
    pub fn retake(&mut self, rule: &Rule, granted: Ts, now: Ts) -> Result<(), Ts> {
        if let Some(i) = self.granted.iter().position(|t| *t == granted) {
            self.granted.remove(i);
        }
        self.take(rule, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(ms: i64) -> Ts {
        chrono::DateTime::from_timestamp_millis(1_800_000_000_000 + ms).expect("a time")
    }

    #[test]
    fn rules_read_one_rate() {
        assert_eq!(Rule::new(Some(20), None, 5), Ok(Rule { limit: 25, period_ms: 1000 }));
        assert_eq!(Rule::new(None, Some(60), 0), Ok(Rule { limit: 60, period_ms: 60_000 }));
        assert!(Rule::new(Some(1), Some(1), 0).is_err());
        assert!(Rule::new(None, None, 0).is_err());
        assert!(Rule::new(Some(0), None, 3).is_err());
        assert!(Rule::new(Some(10_000), None, 1).is_err());
    }

    proptest! {
        /// Steps asking at generated times, each asking again when told (or later): no window of
        /// the period plus the margin ever holds more than the limit, and a refused ask is told
        /// a time at which it is granted if nobody else asks first.
        #[test]
        fn no_window_holds_more_than_the_limit(
            rate in 1u32..30, burst in 0u32..5,
            asks in prop::collection::vec((0i64..5_000, 0i64..300), 1..150),
        ) {
            let rule = Rule::new(Some(rate), None, burst).expect("rule");
            let mut w = Window::default();
            let mut granted: Vec<i64> = Vec::new();
            let mut queue: Vec<i64> = asks.iter().map(|(t, _)| *t).collect();
            let lates: Vec<i64> = asks.iter().map(|(_, l)| *l).collect();
            queue.sort();
            let mut i = 0;
            while let Some(t) = queue.first().copied() {
                queue.remove(0);
                match w.take(&rule, at(t)) {
                    Ok(()) => granted.push(t),
                    Err(again) => {
                        let again = again.timestamp_millis() - 1_800_000_000_000;
                        prop_assert!(again > t);
                        let mut alone = w.clone();
                        prop_assert!(alone.take(&rule, at(again)).is_ok(), "told {again} but refused then");
                        // It asks again then, or a little later.
                        queue.push(again + lates[i % lates.len()]);
                        queue.sort();
                    }
                }
                i += 1;
            }
            let window = rule.window_ms() as i64;
            for g in &granted {
                let within = granted.iter().filter(|o| **o > g - window && **o <= *g).count();
                prop_assert!(within <= rule.limit as usize, "{within} starts in the window ending {g}");
            }
            prop_assert_eq!(granted.len(), asks.len(), "every ask is granted in the end");
        }
    }
}
