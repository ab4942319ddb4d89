//! Schedule jobs (SPEC §10, §13): a saved design started on a cron schedule. One job per design,
//! named `workflow:<design>`, kept by the app's [`JobStore`](vwf_store::JobStore). The CLI, the
//! HTTP server and the daemon are callers of this module; the time rules (presets, cron, zones,
//! daylight saving, the human line) and every decision about a job's fires (next fire, grace,
//! missed fires) are the core's `vwf_core::schedule` and `vwf_core::schedule::job`; the run is
//! the runner's.
//!
//! Invariants:
//! - Time is passed in: every function that looks at time takes `now`, and a run started here sees
//!   a clock that reads `now` when it starts.
//! - Every read-modify-write of jobs happens under the store's jobs lock, so two processes ticking
//!   one home (or a tick racing an edit) never lose an update and never fire one fire twice.
//! - A fire is recorded (`last_run_at`, `next_run_at` moved past `now`) before its run starts: a
//!   crash or a restart can lose that run, never start it twice.
//! - Scheduled runs never sleep through `wait` steps and never answer a gate: a gate waits for a
//!   person until its deadline. Agent steps go through the configured backend like any run.

use serde::Serialize;
use serde_json::{Value, json};
use vwf_core::design::Design;
use vwf_core::names::DesignName;
use vwf_core::run::{Status, TriggerInfo};
use vwf_core::schedule::job::{self as core_job, Due, fire_input, next_fire};
pub use vwf_core::schedule::job::{GRACE_SECONDS, JOB_PREFIX, Job, MISSED_KEPT, Missed, job_id, prompt};
use vwf_core::schedule::{self, Schedule, ScheduleError};
use vwf_core::spec;
use vwf_core::time::{self, Ts};
use vwf_store::Wait;

use crate::app::{self, App};
use crate::clock::Shifted;
use crate::error::RunError;
use crate::runner::Runner;
pub use vwf_store::JobEntry as Entry;

/// What a person can do to a schedule job ([`action`]); read once from the request's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobAction {
    Pause,
    Resume,
    /// The design runs now (the job's next fire is unchanged).
    Run,
    Remove,
}

impl JobAction {
    pub const ALL: [JobAction; 4] = [JobAction::Pause, JobAction::Resume, JobAction::Run, JobAction::Remove];

    pub fn as_str(self) -> &'static str {
        match self {
            JobAction::Pause => "pause",
            JobAction::Resume => "resume",
            JobAction::Run => "run",
            JobAction::Remove => "remove",
        }
    }

    /// The action a request names; an unknown one is refused with the four there are.
    pub fn parse(name: &str) -> Result<JobAction, RunError> {
        JobAction::ALL
            .into_iter()
            .find(|a| a.as_str() == name)
            .ok_or_else(|| RunError::Rejected(format!("unknown action {name:?}; use pause, resume, run or remove")))
    }

    /// Whether it starts a run (and so takes a run slot on a server).
    pub fn starts_a_run(self) -> bool {
        self == JobAction::Run
    }
}

/// What [`action`] did: the job as it is now (pause, resume), its removal, or the run it started.
#[derive(Debug, Clone)]
pub enum Acted {
    Job(Box<Job>),
    Removed { job_id: String },
    Ran(Box<vwf_core::run::Run>),
}

/// What one tick did about one due job: started a run, recorded missed fires, or both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fired {
    pub job_id: String,
    pub design: String,
    /// The fire a run was started for; `null` when every due fire was missed.
    #[serde(with = "time::opt")]
    pub scheduled_for: Option<Ts>,
    pub run_id: Option<String>,
    pub status: Option<Status>,
    /// Why no run was started for `scheduled_for` (design gone or invalid, store trouble).
    pub error: Option<String>,
    /// Fires recorded as missed by this tick.
    pub missed: Vec<Missed>,
    /// The job's own input, if it has one (else the run's input names the fire).
    #[serde(skip)]
    input: Value,
}

/// Creates or updates the job of `design` from a schedule object (`{preset, time?, minute?, dow?,
/// cron?, tz?, paused?, input?}`). A schedule problem is a bad request naming the field; an
/// unknown design is not found; nothing is written then. An update keeps `last_run_at`, `missed`
/// and, unless given, the paused state and the input (`input: null` removes it); `next_run_at` is
/// computed afresh from `now`.
pub fn upsert(app: &App, design: &DesignName, body: &Value, now: Ts) -> Result<Job, RunError> {
    let (mut spec, paused, input) = parse_body(body)?;
    let Resolved { cron, human, tz, next_run_at } = resolve(&spec, now).map_err(bad_schedule)?;
    if !app.store.design_exists(design).wait() {
        return Err(RunError::NotFound(format!("design {:?} not found", design.as_str())));
    }
    // A design that cannot be read or parsed now still gets its schedule (its runs report the
    // problem); it just names no delivery target.
    let deliver =
        app.store.load_design(design).wait().ok().and_then(|v| Design::from_value(&v).ok()).and_then(|d| spec::hermes_deliver(&d));
    spec.tz = spec.tz.map(|tz| tz.trim().to_string());
    let _lock = app.jobs.lock_jobs().wait()?;
    // Again under the lock: a design deleted meanwhile gets no job (see `delete_design`).
    if !app.store.design_exists(design).wait() {
        return Err(RunError::NotFound(format!("design {:?} not found", design.as_str())));
    }
    // A damaged job is replaced: saving the schedule again is how it gets repaired.
    let old = app.jobs.read_job(design).wait().ok().flatten();
    let paused = paused.or(old.as_ref().map(|j| j.paused)).unwrap_or(false);
    let input = input.or_else(|| old.as_ref().map(|j| j.input.clone())).unwrap_or(Value::Null);
    let job = Job {
        job_id: job_id(design),
        name: format!("workflow:{design}"),
        design: design.to_string(),
        human,
        next_run_at: if paused { None } else { next_run_at },
        last_run_at: old.as_ref().and_then(|j| j.last_run_at),
        deliver,
        paused_reason: None,
        prompt: prompt(design, &input),
        input,
        schedule: spec,
        missed: old.map(|j| j.missed).unwrap_or_default(),
        cron,
        tz,
        paused,
    };
    app.jobs.write_job(&job).wait()?;
    Ok(job)
}

/// What a schedule object stands for: its cron expression, human line, time zone and next fire.
pub struct Resolved {
    pub cron: String,
    pub human: String,
    pub tz: String,
    pub next_run_at: Option<Ts>,
}

/// Resolves a schedule object without saving anything (jobs and the schedule preview share it).
pub fn resolve(spec: &Schedule, now: Ts) -> Result<Resolved, ScheduleError> {
    let cron = schedule::to_cron(spec)?;
    let tz = spec.tz.as_deref().map(str::trim).unwrap_or("UTC").to_string();
    Ok(Resolved { human: schedule::human(&cron), next_run_at: next_fire(&cron, &tz, now), cron, tz })
}

/// Every job, sorted by id; an unreadable job is listed with its error.
pub fn list(app: &App) -> Result<Vec<Entry>, RunError> {
    Ok(app.jobs.list_jobs().wait()?)
}

/// One job: bad request for an id that is not `wf-<design name>`, not found for no such job.
pub fn get(app: &App, job_id: &str) -> Result<Job, RunError> {
    let design = design_of(job_id)?;
    app.jobs.read_job(&design).wait()?.ok_or_else(|| not_found(job_id))
}

/// Pauses, resumes, runs or removes a job (run: the design starts now; a design with errors is
/// `RunError::Refused`).
pub fn action(app: &App, job_id: &str, action: JobAction, now: Ts) -> Result<Acted, RunError> {
    let design = design_of(job_id)?;
    get(app, job_id)?; // 404 before anything is created or changed
    let lock = app.jobs.lock_jobs().wait()?;
    let mut job = app.jobs.read_job(&design).wait()?.ok_or_else(|| not_found(job_id))?;
    match action {
        JobAction::Remove => {
            app.jobs.remove_job(&design).wait()?;
            Ok(Acted::Removed { job_id: job_id.to_string() })
        }
        JobAction::Pause | JobAction::Resume => {
            job.set_paused(action == JobAction::Pause, now);
            app.jobs.write_job(&job).wait()?;
            Ok(Acted::Job(Box::new(job)))
        }
        JobAction::Run => {
            if !app.store.design_exists(&design).wait() {
                return Err(RunError::NotFound(format!("design {:?} not found", design.as_str())));
            }
            job.last_run_at = Some(now);
            app.jobs.write_job(&job).wait()?;
            drop(lock);
            let input = fire_input(&job.input, json!({"job_id": job_id, "fired_at": time::format(&now)}));
            let clock = Shifted::to(app.clock.as_ref(), now);
            let run =
                scheduled_runner(app, &clock).start_design(&design, TriggerInfo::new(vwf_core::trigger::TriggerMode::Schedule, input))?;
            Ok(Acted::Ran(Box::new(run)))
        }
    }
}

/// Deletes `design` through `delete` and pauses its job, if it has one, saying why. The schedules
/// lock is held around both (when the directory exists), and [`upsert`] looks for the design again
/// under that lock, so a schedule set at the same moment is either paused here or refused there: no
/// active job outlives its design. A lock that cannot be taken fails before anything is deleted. A
/// job file that cannot be read is left as it is (ticks skip it).
pub fn delete_design(app: &App, design: &DesignName, delete: impl FnOnce() -> Result<(), RunError>) -> Result<Option<Job>, RunError> {
    let _lock = if app.jobs.has_jobs().wait() { Some(app.jobs.lock_jobs().wait()?) } else { None };
    delete()?;
    let Ok(Some(mut job)) = app.jobs.read_job(design).wait() else { return Ok(None) };
    job.pause_because(format!("its design {:?} was deleted", design.as_str()));
    app.jobs.write_job(&job).wait()?;
    Ok(Some(job))
}

/// One pass of the scheduler at `now`: every unpaused job whose `next_run_at` has come is
/// recorded first (`last_run_at`, missed fires, `next_run_at` strictly after `now`), then its run
/// starts if the fire is at most [`GRACE_SECONDS`] old. Several due fires within the grace
/// window start one run. Jobs that were not due are not in the answer.
pub fn tick(app: &App, now: Ts) -> Result<Vec<Fired>, RunError> {
    if !app.jobs.has_jobs().wait() {
        return Ok(Vec::new());
    }
    let mut fired = Vec::new();
    {
        let _lock = app.jobs.lock_jobs().wait()?;
        for entry in list(app)? {
            let Ok(mut job) = entry else { continue };
            let Some(Due { run_at, missed }) = job.tick(now) else { continue };
            let error = app.jobs.write_job(&job).wait().err().map(|e| format!("not started: cannot record the fire: {e}"));
            fired.push(Fired {
                job_id: job.job_id,
                design: job.design,
                scheduled_for: run_at,
                run_id: None,
                status: None,
                error,
                missed,
                input: job.input,
            });
        }
    }
    let clock = Shifted::to(app.clock.as_ref(), now);
    let runner = scheduled_runner(app, &clock);
    for f in fired.iter_mut().filter(|f| f.error.is_none()) {
        let Some(at) = f.scheduled_for else { continue };
        let input = fire_input(&f.input, json!({"job_id": f.job_id, "fired_at": time::format(&now), "scheduled_for": time::format(&at)}));
        // A disabled design's fire is recorded (not kept for later) and starts nothing.
        if let Ok(name) = DesignName::parse(&f.design)
            && app.store.load_design(&name).wait().is_ok_and(|g| !vwf_core::design::is_enabled(&g))
        {
            f.error = Some(format!("not started: design {name} is disabled (vwf enable {name})"));
            continue;
        }
        // Inside `vwf serve` a fire takes a run slot, waiting for one (nobody could be refused).
        let _slot = app.slots.as_ref().map(|gate| gate.wait());
        let started = DesignName::parse(&f.design)
            .map_err(RunError::Rejected)
            .and_then(|name| runner.start_design(&name, TriggerInfo::new(vwf_core::trigger::TriggerMode::Schedule, input)));
        match started {
            Ok(run) => {
                f.run_id = Some(run.run_id().to_string());
                f.status = Some(run.status());
            }
            Err(e) => f.error = Some(e.to_string()),
        }
    }
    Ok(fired)
}

/// The schedule object, `paused` and `input` from a request body (`None`: not given; an `input`
/// of `null` is given, and removes the job's input).
fn parse_body(body: &Value) -> Result<(Schedule, Option<bool>, Option<Value>), RunError> {
    if !body.is_object() {
        return Err(RunError::Rejected(format!(
            "the schedule must be an object like {{\"preset\": \"daily\", \"time\": \"09:00\"}}, got {}",
            vwf_core::view::kind_name(body)
        )));
    }
    let paused = match body.get("paused") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => return Err(RunError::Rejected(format!("paused must be true or false, got {}", vwf_core::view::kind_name(other)))),
    };
    let input = body.get("input").cloned();
    if let Some(input) = &input {
        vwf_core::json::check(input).map_err(|e| RunError::Rejected(e.about("the schedule's input is")))?;
    }
    Ok((schedule::schedule_from_value(body).map_err(bad_schedule)?, paused, input))
}

/// A schedule error as a bad request whose message starts with the field it is about.
fn bad_schedule(e: ScheduleError) -> RunError {
    match e.field {
        Some(field) if !e.message.starts_with(field.as_str()) => RunError::Rejected(format!("{field}: {}", e.message)),
        _ => RunError::Rejected(e.message),
    }
}

fn design_of(job_id: &str) -> Result<DesignName, RunError> {
    core_job::design_of(job_id)
        .ok_or_else(|| RunError::Rejected(format!("bad job id {job_id:?}: schedule job ids look like \"wf-<design>\"")))
}

fn not_found(job_id: &str) -> RunError {
    RunError::NotFound(format!("schedule job {job_id:?} not found"))
}

/// A runner for scheduled runs: quiet, never sleeping through a wait, on `clock`.
fn scheduled_runner<'a>(app: &'a App, clock: &'a Shifted<'a>) -> Runner<'a> {
    Runner { clock, ..app.runner(&app::quiet, false) }
}
