//! Schedule jobs (SPEC §10, §13): the record a store keeps for a design started on a cron schedule,
//! and the pure decisions about it — when it fires next, which overdue fires still run and which
//! are missed, what pausing and resuming change. The binary's `schedules` module takes the lock,
//! reads and writes jobs through the store and starts runs; every "when" is decided here, from a
//! `now` it is given.
//!
//! Invariants:
//! - A job's id is `wf-<design>`; a design name is path-safe, so the id is too.
//! - A paused job has no `next_run_at`; resuming computes it from `now`.
//! - [`Job::tick`] moves `next_run_at` strictly past `now`, so one fire is never due twice.
//! - A fire noticed more than [`GRACE_SECONDS`] late (nothing was ticking) is not run late: it is
//!   recorded under `missed` (the newest [`MISSED_KEPT`]).

use std::collections::VecDeque;

use chrono::TimeDelta;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Schedule, next_cron_fire_tz};
use crate::names::DesignName;
use crate::time::{self, Ts};

/// How late a fire may be noticed and still run. Later than that, it is recorded as missed.
pub const GRACE_SECONDS: i64 = 60;
/// How many missed fires a job keeps (the newest).
pub const MISSED_KEPT: usize = 20;
/// How many overdue fires one tick walks through for one job (a week of minutes); fires beyond
/// that after a very long outage are skipped without being listed.
const MISSED_WALK: usize = 7 * 24 * 60;
/// Every job id starts with this, followed by the design's name.
pub const JOB_PREFIX: &str = "wf-";

/// A schedule job: the `job` shape of SPEC §13, plus the schedule object it was made from and the
/// fires it missed.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub job_id: String,
    /// `workflow:<design>`.
    pub name: String,
    pub design: String,
    pub cron: String,
    pub human: String,
    pub tz: String,
    pub paused: bool,
    #[serde(default, with = "time::opt")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
    pub next_run_at: Option<Ts>,
    #[serde(default, with = "time::opt")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::nullable_schema"))]
    pub last_run_at: Option<Ts>,
    /// What a Hermes cron job asks its agent to do (see [`prompt`]).
    pub prompt: String,
    /// Where a Hermes cron job for this design delivers its result: the Hermes targets of the
    /// design's output nodes when the job was set (`crate::spec::hermes_deliver`), else `null`.
    #[serde(default)]
    pub deliver: Option<String>,
    /// The schedule object (`{preset, time?, minute?, dow?, cron?, tz?}`), to edit it again.
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, Value>"))]
    pub schedule: Schedule,
    /// Fires that passed while nothing was ticking, oldest first; not run.
    #[serde(default)]
    pub missed: Vec<Missed>,
    /// Why the job was paused when something other than a person paused it (its design was
    /// deleted); cleared when it is resumed or set again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_reason: Option<String>,
    /// The input every run of this job starts with, as a manual run's `input` (absent: the run's
    /// input says which job fired and when).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub input: Value,
}

#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Missed {
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub at: Ts,
}

/// What one tick decided about a due job.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    /// The fire a run starts for, if one is inside the grace window (the newest such).
    pub run_at: Option<Ts>,
    /// Fires recorded as missed by this tick, oldest first.
    pub missed: Vec<Missed>,
}

/// The id of a design's job: `wf-<design>`.
pub fn job_id(design: &DesignName) -> String {
    format!("{JOB_PREFIX}{design}")
}

/// The design a job id names; `None` for an id that is not `wf-<design name>`.
pub fn design_of(job_id: &str) -> Option<DesignName> {
    job_id.strip_prefix(JOB_PREFIX).and_then(|d| DesignName::parse(d).ok())
}

/// The next fire of `cron` in zone `tz` strictly after `after`.
pub fn next_fire(cron: &str, tz: &str, after: Ts) -> Option<Ts> {
    next_cron_fire_tz(cron, Some(tz), after)
}

/// The input a run of a job starts with: the job's `own`, else `fire` (which job fired, when).
pub fn fire_input(own: &Value, fire: Value) -> Value {
    if own.is_null() { fire } else { own.clone() }
}

impl Job {
    /// Pauses or resumes the job at `now` (by a person: any recorded reason is cleared).
    pub fn set_paused(&mut self, paused: bool, now: Ts) {
        self.paused = paused;
        self.paused_reason = None;
        self.next_run_at = if paused { None } else { next_fire(&self.cron, &self.tz, now) };
    }

    /// Pauses the job because of something a person did elsewhere (`reason`, e.g. its design was
    /// deleted), so a listing can say why.
    pub fn pause_because(&mut self, reason: String) {
        self.paused = true;
        self.next_run_at = None;
        self.paused_reason = Some(reason);
    }

    /// One scheduler pass at `now`: `None` when the job is paused or not due. Otherwise the job is
    /// updated as the fire must be recorded before its run starts (`last_run_at` when a run
    /// starts, `missed` extended and trimmed, `next_run_at` strictly after `now`), and the answer
    /// says which fire runs and which were missed. Several due fires within the grace window start
    /// one run.
    pub fn tick(&mut self, now: Ts) -> Option<Due> {
        let next = self.next_run_at.filter(|t| !self.paused && *t <= now)?;
        let due = self.due_fires(next, now);
        if due.run_at.is_some() {
            self.last_run_at = Some(now);
        }
        self.missed.extend(due.missed.iter().cloned());
        let excess = self.missed.len().saturating_sub(MISSED_KEPT);
        self.missed.drain(..excess);
        self.next_run_at = next_fire(&self.cron, &self.tz, now);
        Some(due)
    }

    /// The overdue fires from `next` up to `now`: those older than the grace window (missed, at
    /// most the newest [`MISSED_KEPT`]), and the newest one inside it (to run), if any.
    fn due_fires(&self, next: Ts, now: Ts) -> Due {
        let grace = TimeDelta::seconds(GRACE_SECONDS);
        let mut missed = VecDeque::new();
        let mut run_at = None;
        let mut fire = Some(next);
        for _ in 0..MISSED_WALK {
            let Some(at) = fire.filter(|t| *t <= now) else { break };
            if now - at <= grace {
                run_at = Some(at);
            } else {
                if missed.len() == MISSED_KEPT {
                    missed.pop_front();
                }
                missed.push_back(Missed { at });
            }
            fire = next_fire(&self.cron, &self.tz, at);
        }
        Due { run_at, missed: missed.into() }
    }
}

/// The prompt a Hermes cron job needs to run `design` with `input` (SPEC §10). The name and the
/// input are embedded as JSON, so no quote or newline in them could change the instructions.
pub fn prompt(design: &DesignName, input: &Value) -> String {
    let name = Value::String(design.to_string()).to_string();
    let mut args = json!({"name": design.as_str()});
    if !input.is_null() {
        args["input"] = input.clone();
    }
    let args = args.to_string();
    [
        format!("Run the saved visual-workflow design {name} now and report its result."),
        format!("1. Call the tool workflow_design_run with the arguments {args}."),
        "2. While the result's status is \"awaiting_agent\": perform the agent step described in its \
         `pending` (follow its prompt), then call workflow_design_respond with \
         {\"run_id\": <the result's run_id>, \"node\": <pending.node>, \"output\": <your text>} and \
         continue with the result it returns."
            .to_string(),
        "3. If the status is \"awaiting_approval\": do not answer the approval yourself. Report the \
         question, its options, its deadline and the run id so a person can answer it, and stop."
            .to_string(),
        "4. If the status is \"waiting\": report the run id and when it resumes (pending.resume_at), \
         and stop."
            .to_string(),
        "5. When the status is \"done\": print the final outputs verbatim (each output's text exactly \
         as returned, nothing added or left out). If the status is \"failed\": report the error and \
         the failed node."
            .to_string(),
    ]
    .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Ts {
        time::parse(s).expect("time")
    }

    fn job(cron: &str, next: &str) -> Job {
        Job {
            job_id: "wf-d".into(),
            name: "workflow:d".into(),
            design: "d".into(),
            cron: cron.into(),
            human: String::new(),
            tz: "UTC".into(),
            paused: false,
            next_run_at: Some(at(next)),
            last_run_at: None,
            prompt: String::new(),
            deliver: None,
            schedule: serde_json::from_value(json!({"preset": "custom", "cron": cron})).expect("schedule"),
            missed: Vec::new(),
            paused_reason: None,
            input: Value::Null,
        }
    }

    #[test]
    fn a_fire_inside_the_grace_window_runs_and_older_ones_are_missed() {
        let mut j = job("*/5 * * * *", "2026-03-01T09:00:00Z");
        assert_eq!(j.tick(at("2026-03-01T08:59:59Z")), None, "not due yet");
        let due = j.tick(at("2026-03-01T09:10:30Z")).expect("due");
        assert_eq!(due.run_at, Some(at("2026-03-01T09:10:00Z")));
        assert_eq!(due.missed, vec![Missed { at: at("2026-03-01T09:00:00Z") }, Missed { at: at("2026-03-01T09:05:00Z") }]);
        assert_eq!(j.last_run_at, Some(at("2026-03-01T09:10:30Z")));
        assert_eq!(j.next_run_at, Some(at("2026-03-01T09:15:00Z")));
        assert_eq!(j.tick(at("2026-03-01T09:10:30Z")), None, "a fire is due once");
    }

    #[test]
    fn a_long_outage_keeps_only_the_newest_missed_fires_and_starts_no_run() {
        let mut j = job("* * * * *", "2026-03-01T00:00:00Z");
        let due = j.tick(at("2026-03-02T00:00:30Z")).expect("due");
        assert_eq!(due.missed.len(), MISSED_KEPT);
        assert_eq!(due.run_at, Some(at("2026-03-02T00:00:00Z")));
        assert_eq!(due.missed.last(), Some(&Missed { at: at("2026-03-01T23:59:00Z") }));
        assert_eq!(j.missed.len(), MISSED_KEPT);
        let mut j = job("0 9 * * *", "2026-03-01T09:00:00Z");
        let due = j.tick(at("2026-03-01T09:01:01Z")).expect("due");
        assert_eq!((due.run_at, due.missed.len()), (None, 1), "61 s late is missed");
        assert_eq!(j.last_run_at, None);
    }

    #[test]
    fn a_paused_job_is_never_due_and_resuming_starts_from_now() {
        let mut j = job("0 9 * * *", "2026-03-01T09:00:00Z");
        j.pause_because("its design \"d\" was deleted".into());
        assert_eq!(j.tick(at("2026-03-05T09:00:00Z")), None);
        assert!(j.paused_reason.is_some());
        j.set_paused(false, at("2026-03-05T10:00:00Z"));
        assert_eq!((j.paused, j.paused_reason.as_deref()), (false, None));
        assert_eq!(j.next_run_at, Some(at("2026-03-06T09:00:00Z")));
    }

    #[test]
    fn job_ids_name_their_design_and_nothing_else() {
        let d = DesignName::parse("daily-report").expect("name");
        assert_eq!(design_of(&job_id(&d)), Some(d));
        for bad in ["daily", "wf-", "wf-../x", "wf-a/b", "xwf-a"] {
            assert_eq!(design_of(bad), None, "{bad}");
        }
    }
}
