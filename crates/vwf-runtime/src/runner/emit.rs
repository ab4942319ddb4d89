//! Events started from inside and outside: the runs waiting for an event it answers (see
//! `waits`), which saved designs it starts, and the bounds that keep emits from looping (depth)
//! or flooding (runs per origin, cooldowns). Every start
//! goes through the runner like any other, so an emitted run is driven, saved and locked the same.

use serde::Deserialize;
use serde_json::Value;
use vwf_core::design::Design;
use vwf_core::limits;
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::settle::Summary;
use vwf_core::run::{Run, TriggerInfo};
use vwf_core::trigger::{self, Trigger, TriggerMode};
use vwf_store::Wait;

use super::Runner;
use crate::error::RunError;

/// How many recent runs are looked at to apply an event trigger's cooldown.
const COOLDOWN_SCAN: usize = 200;

/// The runs an emitted event started, and the designs it would have started but did not.
#[derive(Debug, Default)]
pub struct Emission {
    pub runs: Vec<Run>,
    /// (design, why not started)
    pub skipped: Vec<(String, String)>,
    /// Set when a start was refused because its origin started as many runs as
    /// `[limits] runs_per_origin` allows: the error an emitting step fails with.
    pub capped: Option<String>,
    /// Set when the emit step's `timeout_seconds` passed before every run was started: the
    /// error it fails with (the runs not started are in `skipped`).
    pub timed_out: Option<String>,
    /// The runs waiting for the event (`wait_event` steps) it answered, in the order it did.
    pub resumed: Vec<RunId>,
}

/// Where an emit comes from (see [`Runner::emit`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmitSource {
    /// How many emits led here (0 for `POST /events` and `vwf emit`).
    pub depth: u32,
    /// The origin of the chain (see [`TriggerInfo::origin`]); `None` for an event from outside,
    /// whose first run becomes the origin of the others.
    pub origin: Option<String>,
    /// The run whose emit step sends the event; `None` from outside.
    pub run: Option<RunId>,
}

impl EmitSource {
    /// What an emit step of `run` emits from: one emit deeper, and the run's origin, or the run
    /// itself when it has none.
    pub fn of(run: &Run) -> EmitSource {
        let trigger = run.trigger();
        EmitSource {
            depth: trigger.depth,
            origin: Some(trigger.origin.clone().unwrap_or_else(|| run.run_id().to_string())),
            run: Some(run.run_id().clone()),
        }
    }
}

/// Runs looked at, per read, when counting the runs of an origin.
const ORIGIN_CHUNK: usize = 100;

impl Runner<'_> {
    /// Announces `event`: every saved design whose event trigger takes it starts a run with
    /// `{event, payload}` as input. `from.depth` counts the emits that led here; a chain deeper
    /// than the limit is cut with an error, so designs emitting to each other cannot loop forever.
    /// And a chain's breadth is capped: an origin starts at most `[limits] runs_per_origin` runs
    /// (counted from the store, so a restart does not reset the count); a start past it is
    /// skipped and the emission says so in `capped`.
    pub fn emit(&self, event: &str, payload: Value, from: &EmitSource) -> Result<Emission, RunError> {
        self.emit_until(event, payload, from, None)
    }

    /// [`Runner::emit`] for an emit step: a run that would start after `deadline` is not
    /// started (each run it starts is driven before the next starts, so the time they take
    /// counts).
    pub fn emit_until(
        &self,
        event: &str,
        payload: Value,
        from: &EmitSource,
        deadline: Option<vwf_core::time::Ts>,
    ) -> Result<Emission, RunError> {
        let depth = from.depth;
        if !trigger::is_event_name(event) {
            return Err(RunError::Rejected(format!("bad event name {event:?}: use letters, digits, '_', '.', ':' and '-'")));
        }
        vwf_core::json::check(&payload).map_err(|e| RunError::Rejected(e.about(&format!("the payload of event {event:?} is"))))?;
        if depth >= limits::EVENT_DEPTH {
            return Err(RunError::Rejected(format!(
                "event {event:?} is {} emits deep; chains stop at {} so designs emitting to each other cannot loop",
                depth + 1,
                limits::EVENT_DEPTH
            )));
        }
        let mut emission = Emission { resumed: self.answer_waiters(event, &payload, from.run.as_ref())?, ..Emission::default() };
        let now = self.clock.now();
        for name in self.store.list_designs().wait()? {
            let Ok(name) = DesignName::parse(&name) else { continue };
            let Ok(graph) = self.store.load_design(&name).wait() else { continue };
            let Some(cooldown) = Design::from_value(&graph).ok().and_then(|d| {
                let node = &d.trigger()?.raw;
                match Trigger::parse(node) {
                    Ok(trigger) => trigger.listens(event),
                    // Refused when it starts, and listed as skipped with the validator's verdict.
                    Err(_) => trigger::names_event(node, event).then_some(0),
                }
            }) else {
                continue;
            };
            if !vwf_core::design::is_enabled(&graph) {
                emission.skipped.push((name.to_string(), format!("disabled: its trigger fires once enabled (vwf enable {name})")));
                continue;
            }
            if cooldown > 0 && self.fired_within(&name, vwf_core::time::sub_seconds_saturating(now, cooldown))? {
                emission.skipped.push((name.to_string(), format!("cooling down ({cooldown} s)")));
                continue;
            }
            // The first run of an event from outside is its origin (see `start_with`).
            let origin = from.origin.clone().or_else(|| emission.runs.first().and_then(|r| r.trigger().origin.clone()));
            let cap = self.drivers.config.limits.runs_per_origin;
            if let Some(origin) = &origin
                && self.origin_runs(origin)? >= cap
            {
                let refused = format!(
                    "event {event:?} would start another run of design {name}, but origin {origin} has started {cap} runs, \
                     the most one event or run may start directly or through emits ([limits] runs_per_origin = {cap})"
                );
                emission.skipped.push((name.to_string(), refused.clone()));
                emission.capped.get_or_insert(refused);
                continue;
            }
            if let Some(d) = deadline.filter(|d| self.clock.now() >= *d) {
                let why = format!("the emit step's timeout passed at {} before this run started", vwf_core::time::format(&d));
                emission
                    .timed_out
                    .get_or_insert_with(|| format!("emit of {event:?} timed out: {} run(s) started, then {why}", emission.runs.len()));
                emission.skipped.push((name.to_string(), why));
                continue;
            }
            let input = serde_json::json!({"event": event, "payload": payload});
            let trigger = TriggerInfo { mode: TriggerMode::Event, input, depth: depth + 1, origin, nesting: 0, folded: 0, trace: None };
            match self.arrive(&name, trigger) {
                Ok(super::Arrival::Started(run)) => emission.runs.push(*run),
                // Held by the trigger's debounce or throttle: said why, like a start not made.
                Ok(held) => emission.skipped.push((name.to_string(), held.describe())),
                Err(RunError::Refused(report)) => emission.skipped.push((name.to_string(), report.refusal())),
                // Refused for this design alone (its concurrency skips, or its key cannot be read
                // from this payload): the other designs still take the event.
                Err(e @ (RunError::Conflict(_) | RunError::Rejected(_))) => emission.skipped.push((name.to_string(), e.to_string())),
                Err(e) => return Err(e),
            }
        }
        Ok(emission)
    }

    /// How many runs `origin` started: its runs among the newest [`limits::ORIGIN_SCAN`], read
    /// newest first and no further than the origin's own run (every run it started is newer).
    fn origin_runs(&self, origin: &str) -> Result<u64, RunError> {
        let (mut count, mut scanned, mut before) = (0, 0, None::<RunId>);
        while scanned < limits::ORIGIN_SCAN {
            let ids = self.store.list_run_ids(before.as_ref(), ORIGIN_CHUNK.min(limits::ORIGIN_SCAN - scanned)).wait()?;
            let Some(last) = ids.last().cloned() else { break };
            scanned += ids.len();
            for (id, read) in ids.iter().zip(self.store.read_runs(&ids).wait()) {
                let summary = read.ok().and_then(|run| Summary::deserialize(&run).ok());
                if summary.is_some_and(|s| s.trigger.origin.as_deref() == Some(origin)) {
                    count += 1;
                }
                if id.as_str() == origin {
                    return Ok(count);
                }
            }
            before = Some(last);
        }
        Ok(count)
    }

    /// Whether `design` had an event-started run created after `since` (among recent runs).
    fn fired_within(&self, design: &DesignName, since: vwf_core::time::Ts) -> Result<bool, RunError> {
        Ok(self
            .store
            .list_summaries(COOLDOWN_SCAN)
            .wait()?
            .into_iter()
            .filter_map(|e| e.summary.ok())
            .any(|s| s.design == *design && s.trigger.mode == TriggerMode::Event && s.created_at > since))
    }
}
