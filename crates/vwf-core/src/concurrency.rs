//! A design's `concurrency`: at most `limit` of its runs in flight at once, per key, and what a
//! run that finds them full does (SPEC §10, flow control).
//!
//! ```json
//! "concurrency": {"limit": 1, "key": "{{trigger.chat_id}}", "on_limit": "queue"}
//! ```
//!
//! The runs of one design and one key value share a *scope*. A scope's [`Slots`] name the runs
//! holding a slot (from their start until they end; a run parked on a wait, a gate, an event or a
//! child keeps its slot unless `release_while_waiting`), the runs queued for one (first in, first
//! out) and the holders asked to stop for a newer run (`cancel_oldest`). The rules are pure: the
//! store keeps each scope's slots and edits them under its lock (a compare-and-swap on a version),
//! and the runner acts on what an edit answers.
//!
//! Invariants: a run is in at most one of `held` and `queue`; `held` never grows past `limit` (a
//! lowered limit lets the runs holding slots finish, and starts no more until they are under it);
//! the queue is served in order, and a queued run is granted only at its head.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::template::{self, Context, Ref};

/// The design field.
pub const FIELD: &str = "concurrency";
/// The most runs one scope may hold at once.
pub const LIMIT_MAX: u32 = 1000;

/// What a run started when its scope's slots are full does.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnLimit {
    /// It waits, `queued`, for a slot, behind the runs queued before it.
    #[default]
    Queue,
    /// It is not started: the caller is told which run holds the slot.
    Skip,
    /// The oldest run holding a slot is stopped (failed, `cancelled`) and the new run takes its
    /// place once it has stopped.
    CancelOldest,
}

impl OnLimit {
    pub const ALL: [&'static str; 3] = ["queue", "skip", "cancel_oldest"];
}

/// A design's `concurrency` as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrency {
    pub limit: u32,
    /// A template over the trigger input; absent: one scope for the whole design.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default)]
    pub on_limit: OnLimit,
    /// A parked run gives its slot back (and takes one again, queueing if need be, to go on).
    #[serde(default)]
    pub release_while_waiting: bool,
}

/// Reads a design's `concurrency` value, saying what is wrong with it for the user.
pub fn read(v: &Value) -> Result<Concurrency, String> {
    let Some(obj) = v.as_object() else {
        return Err("\"concurrency\" is an object: {\"limit\": 1, \"key\": \"{{trigger.chat_id}}\"}".into());
    };
    for name in obj.keys() {
        if !["limit", "key", "on_limit", "release_while_waiting"].contains(&name.as_str()) {
            return Err(format!("\"concurrency\" has no field {name:?} (limit, key, on_limit, release_while_waiting)"));
        }
    }
    let limit = match obj.get("limit") {
        Some(Value::Number(n)) => n.as_u64().filter(|n| (1..=u64::from(LIMIT_MAX)).contains(n)),
        _ => None,
    };
    let Some(limit) = limit else {
        return Err(format!("\"concurrency.limit\" is a whole number from 1 to {LIMIT_MAX}"));
    };
    let key = match obj.get("key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => {
            check_key(s, "concurrency.key")?;
            Some(s.clone())
        }
        Some(_) => return Err("\"concurrency.key\" is a template over the trigger input, like \"{{trigger.chat_id}}\"".into()),
    };
    let on_limit = match obj.get("on_limit") {
        None | Some(Value::Null) => OnLimit::Queue,
        Some(v) => {
            serde_json::from_value(v.clone()).map_err(|_| format!("\"concurrency.on_limit\" is one of {}", OnLimit::ALL.join(", ")))?
        }
    };
    let release_while_waiting = match obj.get("release_while_waiting") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"concurrency.release_while_waiting\" is true or false".into()),
    };
    Ok(Concurrency { limit: limit as u32, key, on_limit, release_while_waiting })
}

/// A key (`field`, for messages) reads only the trigger input and the design's name: it is known
/// before any step runs.
pub(crate) fn check_key(src: &str, field: &str) -> Result<(), String> {
    let parsed = template::parse(src).map_err(|e| format!("\"{field}\": {e}"))?;
    match parsed.refs().find(|r| !matches!(r, Ref::Trigger { .. } | Ref::RunDesign)) {
        Some(_) => Err(format!("\"{field}\" may read only {{{{trigger...}}}} and {{{{run.design}}}}: it is known before any step runs")),
        None => Ok(()),
    }
}

/// The longest key value kept (longer ones are cut, on a character boundary).
pub const KEY_MAX: usize = 200;

impl Concurrency {
    /// The key value of a run of `design` started with `input`: `""` without a key; an error
    /// when the input lacks what the key reads.
    pub fn key_value(&self, design: &str, input: &Value) -> Result<String, String> {
        key_value(self.key.as_deref(), design, input, "concurrency")
    }
}

/// The value of key template `key` (of `what`, for messages) for a run of `design` started with
/// `input`: `""` without a key; cut to [`KEY_MAX`] bytes; an error when the input lacks what it
/// reads.
pub fn key_value(key: Option<&str>, design: &str, input: &Value, what: &str) -> Result<String, String> {
    let Some(key) = key else { return Ok(String::new()) };
    let view = crate::view::input_view(input);
    let ctx = Context {
        ids: &[],
        views: &Default::default(),
        local_views: None,
        trigger_id: None,
        trigger: &view,
        item: None,
        loop_index: None,
        run_id: "",
        design,
        run_totals: None,
        secrets: None,
    };
    let mut value = template::render_str(key, &ctx).map_err(|e| format!("the {what} key {key:?} cannot be read: {e}"))?;
    if value.len() > KEY_MAX {
        let cut = (0..=KEY_MAX).rev().find(|i| value.is_char_boundary(*i)).unwrap_or(0);
        value.truncate(cut);
    }
    Ok(value)
}

/// The scope of `design`'s runs of key value `key`: the name its slots are kept under.
pub fn scope(design: &str, key: &str) -> String {
    format!("{design}\u{1}{key}")
}

/// The design and key value of a scope.
pub fn split_scope(scope: &str) -> (&str, &str) {
    scope.split_once('\u{1}').unwrap_or((scope, ""))
}

/// One scope's slots, as the store keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slots {
    /// The limit the newest claim gave (the design's, when it last started a run).
    pub limit: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub release_while_waiting: bool,
    /// The runs holding a slot, oldest first.
    #[serde(default)]
    pub held: Vec<String>,
    /// The runs waiting for one, first in first out.
    #[serde(default)]
    pub queue: Vec<String>,
    /// Holders asked to stop for a newer run (`cancel_oldest`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<String>,
}

/// Where a queued run waits (`queue` on a read of one run): its key value, its place (1 is
/// next) and the oldest run holding the slot it waits for.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuePlace {
    pub key: String,
    pub place: usize,
    pub behind: Option<String>,
}

/// What a claim answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The run holds a slot: it may run.
    Granted,
    /// The run waits in the queue, at `place` (1 is next), behind `behind` (the oldest holder).
    Queued { place: usize, behind: Option<String> },
    /// The run was not queued (`skip`): `holder` holds the slot it wanted.
    Skipped { holder: Option<String> },
}

impl Slots {
    /// Claims a slot for `run` under `limit`: granted when it holds one already, or when one is
    /// free and nobody queued before it; else what `on_limit` says. Claiming again is harmless
    /// (a queued run keeps its place).
    pub fn claim(&mut self, run: &str, limit: u32, on_limit: OnLimit) -> Claim {
        self.limit = limit.max(1);
        if self.held.iter().any(|h| h == run) {
            return Claim::Granted;
        }
        let free = self.held.len() < self.limit as usize;
        match self.queue.iter().position(|q| q == run) {
            Some(0) if free => {
                self.queue.remove(0);
                self.held.push(run.to_string());
                return Claim::Granted;
            }
            Some(i) => return self.queued(i),
            None if free && self.queue.is_empty() => {
                self.held.push(run.to_string());
                return Claim::Granted;
            }
            None => {}
        }
        match on_limit {
            OnLimit::Skip => Claim::Skipped { holder: self.held.first().cloned() },
            OnLimit::Queue => {
                self.queue.push(run.to_string());
                self.queued(self.queue.len() - 1)
            }
            OnLimit::CancelOldest => {
                // One holder stops for each run that would otherwise wait.
                let asked = self.cancel.iter().filter(|c| self.held.contains(c)).count();
                if asked <= self.queue.len()
                    && let Some(oldest) = self.held.iter().find(|h| !self.cancel.contains(h)).cloned()
                {
                    self.cancel.push(oldest);
                }
                self.queue.push(run.to_string());
                self.queued(self.queue.len() - 1)
            }
        }
    }

    fn queued(&self, index: usize) -> Claim {
        Claim::Queued { place: index + 1, behind: self.held.first().cloned() }
    }

    /// `run` ends or parks (releasing): it holds and waits for nothing any more.
    pub fn release(&mut self, run: &str) {
        self.held.retain(|h| h != run);
        self.queue.retain(|q| q != run);
        self.cancel.retain(|c| c != run);
    }

    /// Moves the heads of the queue into the free slots; answers the runs granted, in order.
    pub fn promote(&mut self) -> Vec<String> {
        let mut granted = Vec::new();
        while self.held.len() < self.limit.max(1) as usize && !self.queue.is_empty() {
            let run = self.queue.remove(0);
            self.held.push(run.clone());
            granted.push(run);
        }
        granted
    }

    /// Where `run` is: `Some(place)` when queued (1 is next).
    pub fn place(&self, run: &str) -> Option<usize> {
        self.queue.iter().position(|q| q == run).map(|i| i + 1)
    }

    /// Where `run` waits, of key value `key`, if it is queued.
    pub fn place_of(&self, run: &str, key: &str) -> Option<QueuePlace> {
        Some(QueuePlace { key: key.to_string(), place: self.place(run)?, behind: self.held.first().cloned() })
    }

    /// Whether `run` was asked to stop for a newer run.
    pub fn cancelled(&self, run: &str) -> bool {
        self.cancel.iter().any(|c| c == run)
    }

    /// Whether the scope has runs waiting for something to move.
    pub fn has_waiters(&self) -> bool {
        !self.queue.is_empty() || !self.cancel.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn reads_the_field() {
        let c = read(&json!({"limit": 2, "key": "{{trigger.chat}}", "on_limit": "cancel_oldest"})).unwrap();
        assert_eq!(c.limit, 2);
        assert_eq!(c.on_limit, OnLimit::CancelOldest);
        assert_eq!(c.key_value("d", &json!({"chat": 42})).unwrap(), "42");
        assert!(c.key_value("d", &json!({})).is_err());
        assert_eq!(read(&json!({"limit": 1})).unwrap().key_value("d", &json!(null)).unwrap(), "");
        for bad in [
            json!(1),
            json!({"limit": 0}),
            json!({"limit": 1001}),
            json!({"limit": 1.5}),
            json!({"limit": 1, "on_limit": "drop"}),
            json!({"limit": 1, "key": 3}),
            json!({"limit": 1, "key": "{{nodes.a.output}}"}),
            json!({"limit": 1, "key": "{{trigger"}),
            json!({"limit": 1, "release_while_waiting": "yes"}),
            json!({"limit": 1, "size": 2}),
        ] {
            assert!(read(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_long_key_is_cut_on_a_character() {
        let c = read(&json!({"limit": 1, "key": "{{trigger.k}}"})).unwrap();
        let v = c.key_value("d", &json!({"k": "é".repeat(300)})).unwrap();
        assert!(v.len() <= KEY_MAX && v.chars().all(|ch| ch == 'é'));
    }

    #[test]
    fn queue_skip_and_cancel() {
        let mut s = Slots::default();
        assert_eq!(s.claim("a", 1, OnLimit::Queue), Claim::Granted);
        assert_eq!(s.claim("b", 1, OnLimit::Queue), Claim::Queued { place: 1, behind: Some("a".into()) });
        assert_eq!(s.claim("c", 1, OnLimit::Skip), Claim::Skipped { holder: Some("a".into()) });
        assert_eq!(s.claim("b", 1, OnLimit::Queue), Claim::Queued { place: 1, behind: Some("a".into()) });
        s.release("a");
        assert_eq!(s.promote(), vec!["b".to_string()]);
        assert_eq!(s.claim("d", 1, OnLimit::CancelOldest), Claim::Queued { place: 1, behind: Some("b".into()) });
        assert!(s.cancelled("b"));
        s.release("b");
        assert_eq!(s.promote(), vec!["d".to_string()]);
        assert!(!s.has_waiters());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Claim(u8, u8),
        End(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![(0u8..30, 0u8..3).prop_map(|(r, m)| Op::Claim(r, m)), (0u8..30).prop_map(Op::End)]
    }

    proptest! {
        /// Whatever the claims and ends, no more than `limit` runs hold a slot, a run is never
        /// both holding and queued, and runs are granted in the order they queued.
        #[test]
        fn slots_keep_their_rules(limit in 1u32..4, ops in proptest::collection::vec(op(), 1..120)) {
            let mut s = Slots::default();
            let mut granted_order = Vec::new();
            let mut queued_order = Vec::new();
            for op in ops {
                match op {
                    Op::Claim(r, m) => {
                        let on = [OnLimit::Queue, OnLimit::Skip, OnLimit::CancelOldest][m as usize];
                        let run = format!("r{r}");
                        let was_queued = s.place(&run).is_some();
                        match s.claim(&run, limit, on) {
                            Claim::Granted if was_queued => granted_order.push(run),
                            Claim::Queued { .. } if !was_queued => queued_order.push(run),
                            _ => {}
                        }
                    }
                    Op::End(r) => {
                        let run = format!("r{r}");
                        queued_order.retain(|q| q != &run);
                        granted_order.retain(|q| q != &run);
                        s.release(&run);
                        granted_order.extend(s.promote());
                    }
                }
                prop_assert!(s.held.len() <= limit as usize);
                prop_assert!(s.held.iter().all(|h| !s.queue.contains(h)));
                let mut seen = s.held.clone();
                seen.sort();
                seen.dedup();
                prop_assert_eq!(seen.len(), s.held.len());
            }
            // Granted from the queue in the order they queued.
            let order: Vec<&String> = queued_order.iter().filter(|q| granted_order.contains(q)).collect();
            let granted: Vec<&String> = granted_order.iter().filter(|g| queued_order.contains(g)).collect();
            prop_assert_eq!(order, granted);
        }
    }
}
