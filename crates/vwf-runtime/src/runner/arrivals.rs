//! Arrivals at a trigger with flow rules (a trigger's `debounce` or `throttle`, see
//! [`vwf_core::flow`]): an event, a folder change, a watched line or a webhook delivery either
//! starts its run now, or is folded into a burst (debounce), deferred until its window has room
//! (throttle with `on_limit: "queue"`) or dropped (throttle). What is held is kept in the store
//! per design and key (a flow-control document), so every process and instance sees one burst
//! and one window; the daemon starts what comes due ([`Runner::start_due_arrivals`]).

use serde::{Deserialize, Serialize};
use vwf_core::flow::{Burst, Debouncer, Rules};
use vwf_core::names::DesignName;
use vwf_core::plan::Plan;
use vwf_core::run::{Run, TriggerInfo};
use vwf_core::time::{self, Ts};

use super::Runner;
use crate::error::RunError;
use crate::flowdoc::{self, FlowDoc};

/// What became of an arrival.
#[derive(Debug)]
pub enum Arrival {
    /// Its run started (and was driven as far as it goes).
    Started(Box<Run>),
    /// Folded into its key's burst, which starts one run at `at` unless another arrival comes
    /// first; `count` arrivals are folded in so far.
    Debounced { at: Ts, count: u64 },
    /// Its key's throttle window is full: it starts at `at`, when the window has room.
    Deferred { at: Ts },
    /// Its key's throttle window is full: not started, for this reason.
    Dropped(String),
}

impl Arrival {
    /// One line for logs and answers: what happened to the arrival.
    pub fn describe(&self) -> String {
        match self {
            Arrival::Started(run) => format!("run {} {}", run.run_id(), run.status().as_str()),
            Arrival::Debounced { at, count } => {
                format!("debounced: one run starts at {} unless more arrive ({count} folded in so far)", time::format(at))
            }
            Arrival::Deferred { at } => format!("throttled: starts at {}, when the window has room", time::format(at)),
            Arrival::Dropped(why) => why.clone(),
        }
    }
}

/// A debounced key's burst, as kept in the store.
#[derive(Debug, Default, Serialize, Deserialize)]
struct DebounceDoc {
    period_seconds: u64,
    burst: Option<Burst>,
}

impl FlowDoc for DebounceDoc {
    const KIND: &'static str = "debounce";
    fn is_empty(&self) -> bool {
        self.burst.is_none()
    }
    fn is_waiting(&self) -> bool {
        self.burst.is_some()
    }
}

/// A throttled key's window: when its recent runs started, and the arrivals deferred.
#[derive(Debug, Default, Serialize, Deserialize)]
struct ThrottleDoc {
    limit: u32,
    period_seconds: u64,
    #[serde(default, with = "time::list")]
    started: Vec<Ts>,
    #[serde(default)]
    deferred: Vec<serde_json::Value>,
}

impl FlowDoc for ThrottleDoc {
    const KIND: &'static str = "throttle";
    fn is_empty(&self) -> bool {
        self.started.is_empty() && self.deferred.is_empty()
    }
    fn is_waiting(&self) -> bool {
        !self.deferred.is_empty()
    }
}

impl ThrottleDoc {
    fn rule(&self) -> vwf_core::flow::Throttle {
        vwf_core::flow::Throttle { limit: self.limit.max(1), period_seconds: self.period_seconds }
    }

    fn prune(&mut self, now: Ts) {
        self.rule().prune(&mut self.started, now);
    }
}

/// The flow rules of a plan's trigger (none for a test run, or a trigger without any).
pub fn rules_of(plan: &Plan) -> Rules {
    match (&plan.trigger, &plan.test) {
        (Some(node), None) => vwf_core::flow::read_rules(node).unwrap_or_default(),
        _ => Rules::default(),
    }
}

/// An arrival of `trigger` at `design` under a rule keyed by `key` (of `what`): its key value,
/// the scope its rule's state is kept under, and the arrival as kept.
fn held_as(key: Option<&str>, design: &str, trigger: &TriggerInfo, what: &str) -> Result<(String, String, serde_json::Value), RunError> {
    let key = vwf_core::concurrency::key_value(key, design, &trigger.input, what).map_err(RunError::Rejected)?;
    let scope = vwf_core::concurrency::scope(design, &key);
    let payload = serde_json::to_value(trigger).map_err(|e| RunError::Rejected(e.to_string()))?;
    Ok((key, scope, payload))
}

fn trigger_of(value: &serde_json::Value) -> Option<TriggerInfo> {
    serde_json::from_value(value.clone()).ok()
}

impl Runner<'_> {
    /// An arrival of `trigger` at the saved design `name`: started now, or held as its trigger's
    /// flow rules say. `RunError::Refused` when the design has errors.
    pub fn arrive(&self, name: &DesignName, trigger: TriggerInfo) -> Result<Arrival, RunError> {
        self.arrive_with(self.compile(name)?, trigger, |plan, trigger| self.start(plan, trigger))
    }

    /// [`Runner::arrive`] with a compiled plan, starting it (when it starts now) with `start`.
    pub fn arrive_with(
        &self,
        plan: Plan,
        trigger: TriggerInfo,
        start: impl FnOnce(Plan, TriggerInfo) -> Result<Run, RunError>,
    ) -> Result<Arrival, RunError> {
        let rules = rules_of(&plan);
        let design = plan.design.to_string();
        let now = self.clock.now();
        if let Some(rule) = &rules.debounce {
            let (_, scope, payload) = held_as(rule.key.as_deref(), &design, &trigger, "debounce")?;
            let mut ended = None;
            let kept = flowdoc::edit(self.store, &scope, |doc: &mut DebounceDoc| {
                let mut d = Debouncer { period_seconds: rule.period_seconds, burst: doc.burst.take() };
                ended = d.arrive(now, payload.clone());
                *doc = DebounceDoc { period_seconds: rule.period_seconds, burst: d.burst };
            })?;
            // A burst quiet long enough already that the daemon had not started yet: now.
            if let Some(burst) = ended {
                self.start_burst(&plan.design, burst);
            }
            let burst = kept.burst.as_ref();
            let at = burst.and_then(|b| b.due(rule.period_seconds)).unwrap_or(now);
            return Ok(Arrival::Debounced { at, count: burst.map_or(1, |b| b.count) });
        }
        if let Some(rule) = &rules.throttle {
            let (key, scope, payload) = held_as(rule.key.as_deref(), &design, &trigger, "throttle")?;
            let mut verdict = None;
            flowdoc::edit(self.store, &scope, |doc: &mut ThrottleDoc| {
                (doc.limit, doc.period_seconds) = (rule.throttle.limit, rule.throttle.period_seconds);
                doc.prune(now);
                verdict = Some(if doc.deferred.is_empty() && doc.rule().allows(&doc.started, now) {
                    doc.started.push(now);
                    None
                } else if rule.queue {
                    doc.deferred.push(payload.clone());
                    Some(Arrival::Deferred { at: doc.rule().next_room(&doc.started, now) })
                } else {
                    let (limit, period) = (rule.throttle.limit, rule.throttle.period_seconds);
                    Some(Arrival::Dropped(format!(
                        "throttled: {limit} run(s) of key {key:?} started in the last {period} s (on_limit: drop)"
                    )))
                });
            })?;
            if let Some(Some(held)) = verdict {
                if let (Arrival::Dropped(why), Some(metrics)) = (&held, self.metrics) {
                    metrics.arrival_dropped(&design);
                    tracing::info!(design = %design, "an arrival was dropped: {why}");
                }
                return Ok(held);
            }
        }
        Ok(Arrival::Started(Box::new(start(plan, trigger)?)))
    }

    /// Starts the run of a burst that came due, with its last arrival's trigger and how many
    /// arrivals it folded in.
    fn start_burst(&self, design: &DesignName, burst: Burst) -> Option<Run> {
        let mut trigger = trigger_of(&burst.payload)?;
        trigger.folded = burst.count;
        self.start_held(design, trigger)
    }

    fn start_held(&self, design: &DesignName, trigger: TriggerInfo) -> Option<Run> {
        match self.start_design(design, trigger) {
            Ok(run) => Some(run),
            Err(e) => {
                tracing::warn!(design = %design, "a held arrival did not start: {e}");
                None
            }
        }
    }

    /// Whether any trigger holds arrivals (a burst, a deferred arrival) to start some time, among
    /// the flow documents `waiting` ([`Store::waiting_docs`](vwf_store::Store::waiting_docs)).
    pub fn holds_arrivals(waiting: &[String]) -> bool {
        !flowdoc::of_kind::<DebounceDoc>(waiting).is_empty() || !flowdoc::of_kind::<ThrottleDoc>(waiting).is_empty()
    }

    /// Starts what the flow rules held that is due at now: bursts quiet for their period, and
    /// deferred arrivals whose window has room. Each is taken by exactly one caller (the edit
    /// that takes it is atomic), so several daemons may call this. Answers the runs started.
    pub fn start_due_arrivals(&self) -> Vec<Run> {
        self.start_due_arrivals_among(&vwf_store::Wait::wait(self.store.waiting_docs()).unwrap_or_default())
    }

    /// [`Runner::start_due_arrivals`] among the flow documents `waiting`, listed by the caller.
    pub fn start_due_arrivals_among(&self, waiting: &[String]) -> Vec<Run> {
        let now = self.clock.now();
        let mut started = Vec::new();
        for scope in flowdoc::of_kind::<DebounceDoc>(waiting) {
            let (design, _) = vwf_core::concurrency::split_scope(&scope);
            let Ok(design) = DesignName::parse(design) else { continue };
            let mut due = None;
            let taken = flowdoc::edit(self.store, &scope, |doc: &mut DebounceDoc| {
                let mut d = Debouncer { period_seconds: doc.period_seconds, burst: doc.burst.take() };
                due = d.take_due(now);
                doc.burst = d.burst;
            });
            if let (Ok(_), Some(burst)) = (taken, due) {
                started.extend(self.start_burst(&design, burst));
            }
        }
        for scope in flowdoc::of_kind::<ThrottleDoc>(waiting) {
            let (design, _) = vwf_core::concurrency::split_scope(&scope);
            let Ok(design) = DesignName::parse(design) else { continue };
            let mut due = Vec::new();
            let taken = flowdoc::edit(self.store, &scope, |doc: &mut ThrottleDoc| {
                due.clear();
                doc.prune(now);
                while !doc.deferred.is_empty() && doc.rule().allows(&doc.started, now) {
                    due.push(doc.deferred.remove(0));
                    doc.started.push(now);
                }
            });
            if taken.is_ok() {
                started.extend(due.iter().filter_map(trigger_of).filter_map(|t| self.start_held(&design, t)));
            }
        }
        started
    }
}
