//! The runner: the one loop that drives the core engine with a store, drivers and a clock.
//!
//! Every surface (CLI, chat command, tools, the server, the scheduler and the daemon) starts, resumes,
//! answers and retries runs only through this type. The runner holds a run's lock while it
//! changes the run and persists the run after every step, so a process killed at any moment
//! leaves a readable file whose finished steps are kept. A run found `running` whose lock nobody
//! holds was left by a dead process: it is marked interrupted and can be retried.

use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use vwf_core::names::{DesignName, PassId, RunId, StepPath};
use vwf_core::plan::Plan;
use vwf_store::Wait;

use serde_json::Map;
use vwf_core::limits;
use vwf_core::run::settle::Settle;
use vwf_core::run::{Advance, EngineError, Outcome, Pending, Response, Run, Status, Task, TriggerInfo, Work};
use vwf_core::secrets::Secrets;

use crate::clock::Clock;
use crate::error::RunError;

mod announce;
pub use announce::public_url;
mod arrivals;
mod children;
mod compile;
pub use compile::Plans;
mod emit;
mod failure;
mod fresh;
mod listing;
mod rates;
mod slots;
mod waits;

use crate::telemetry::{Metrics, Watch};
use crate::traces::Traces;
pub use arrivals::{Arrival, rules_of};
pub use emit::{Emission, EmitSource};
pub use listing::RunPage;
use vwf_exec::Drivers;
use vwf_exec::agent::{self, BackendError};
use vwf_store::{Durability, RunLock, Store, StoreError};

/// Tasks of one batch performed at the same time, at most.
const MAX_PARALLEL: usize = 8;

/// What the runner tells an observer (the CLI's live step line).
pub enum Progress<'r> {
    Started {
        run: &'r Run,
        node: &'r PassId,
    },
    /// A step was settled; `None` when the run ended without one (its timeout).
    Settled {
        run: &'r Run,
        node: Option<&'r PassId>,
    },
    /// A foreground run sleeps through a `wait` step from `now` until `until` (its clock's).
    Waiting {
        run: &'r Run,
        now: vwf_core::time::Ts,
        until: vwf_core::time::Ts,
    },
}

/// How to answer a parked step.
pub enum Answer {
    Respond(Response),
    Generate,
}

#[derive(Clone, Copy)]
pub struct Runner<'a> {
    pub store: &'a dyn Store,
    pub drivers: &'a Drivers,
    pub clock: &'a dyn Clock,
    pub observer: &'a dyn Fn(Progress<'_>),
    /// A foreground run sleeps through `wait` steps; a background caller leaves them parked.
    pub sleep_for_waits: bool,
    /// The server's metrics, which every save of a run updates (none outside `vwf serve`).
    pub metrics: Option<&'a Metrics>,
    /// Where runs' spans go (`[telemetry]`); none when traces are off.
    pub traces: Option<&'a Traces>,
    /// Who drives a run a concurrency queue lets go (`vwf serve`: a run slot of its own); none:
    /// the thread that freed its slot, once its own run is done.
    pub handoff: Option<&'a (dyn Fn(RunId) + Send + Sync)>,
    /// Plans kept for the next run of a design (see [`Plans`]); none: every start compiles.
    pub plans: Option<&'a Plans>,
}

impl<'a> Runner<'a> {
    /// A runner of its own (a benchmark, a tool): no metrics, no hand-off, waits left parked.
    pub fn new(store: &'a dyn Store, drivers: &'a Drivers, clock: &'a dyn Clock, observer: &'a dyn Fn(Progress<'_>)) -> Runner<'a> {
        Runner { store, drivers, clock, observer, sleep_for_waits: false, metrics: None, traces: None, handoff: None, plans: None }
    }
}

impl Runner<'_> {
    /// Starts a run of `plan` and drives it until it is done, failed or parked.
    pub fn start(&self, plan: Plan, trigger: TriggerInfo) -> Result<Run, RunError> {
        self.start_with(plan, trigger, None::<fn(&Run)>)
    }

    /// `start`, telling `started` about the run once it is saved and before its first step, so a
    /// caller can answer with its id while this thread drives it on.
    pub fn start_then(&self, plan: Plan, trigger: TriggerInfo, started: impl FnOnce(&Run)) -> Result<Run, RunError> {
        self.start_with(plan, trigger, Some(started))
    }

    /// `start_then` under the id `id`, chosen by the caller (an idempotency key's run): when a
    /// run of that id exists already, `started` is told of it and it is answered as it stands,
    /// and nothing starts. Of callers racing with one id, one makes the run (under its lock).
    pub fn start_as(&self, id: &RunId, plan: Plan, trigger: TriggerInfo, started: impl FnOnce(&Run)) -> Result<Run, RunError> {
        check_input(&trigger)?;
        self.refuse_early(&plan, &trigger.input)?;
        self.store.reserve_run_id(id).wait()?;
        let lock = self.store.lock_run(id).wait()?;
        match self.read(id) {
            Ok(run) => {
                drop(lock);
                started(&run);
                return Ok(run);
            }
            Err(RunError::Store(StoreError::NotFound(_))) => {}
            Err(e) => return Err(e),
        }
        let mut run = self.make_start(plan, trigger, id.clone(), self.clock.now())?;
        let admit = self.admit(&mut run)?;
        self.persist_as(&mut run, true)?;
        self.store.sync().wait()?;
        started(&run);
        self.go_if_admitted(&mut run, admit, &lock)?;
        Ok(run)
    }

    /// A new run's claim of its concurrency slot, before its first save: refused (`skip`, or a
    /// key its input cannot give) before anything is saved; queued runs are saved `queued`.
    fn admit(&self, run: &mut Run) -> Result<slots::Admit, RunError> {
        let admit = self.claim_slot(run)?;
        match &admit {
            slots::Admit::Skipped(holder) => {
                return Err(slots::skipped(run.design().as_str(), holder, run.concurrency_key().unwrap_or_default()));
            }
            slots::Admit::Queued => run.hold_queued(self.clock.now()),
            slots::Admit::Go => {}
        }
        Ok(admit)
    }

    /// Drives a new run its claim let go; a queued one claims again once saved (its slot may
    /// have freed while it was saved, and whoever freed it could not take it up before).
    fn go_if_admitted(&self, run: &mut Run, admit: slots::Admit, lock: &RunLock) -> Result<(), RunError> {
        if admit == slots::Admit::Queued {
            if self.claim_slot(run)? != slots::Admit::Go {
                // Answered as queued: its first save, which may not be durable yet, is made so
                // first (a store may hold it until the run's next save, which may be long).
                self.store.sync().wait()?;
                return Ok(());
            }
            run.leave_queue(self.clock.now());
        }
        self.drive(run, lock)
    }

    fn start_with(&self, plan: Plan, trigger: TriggerInfo, started: Option<impl FnOnce(&Run)>) -> Result<Run, RunError> {
        check_input(&trigger)?;
        self.refuse_early(&plan, &trigger.input)?;
        self.launch(|id, now| self.make_start(plan, trigger, id, now), started)
    }

    /// The new run `id` of `plan` started by `trigger`.
    fn make_start(&self, plan: Plan, mut trigger: TriggerInfo, id: RunId, now: vwf_core::time::Ts) -> Result<Run, RunError> {
        // The first run of an event from outside (an emit with no origin yet) is the origin of
        // every run the event starts.
        if trigger.depth > 0 && trigger.origin.is_none() {
            trigger.origin = Some(id.to_string());
        }
        // With traces on, a run no caller put in a trace starts one of its own, kept in the run.
        if self.traces.is_some() && trigger.trace.is_none() {
            trigger.trace = crate::traces::new_trace();
        }
        Ok(Run::start(plan, id, trigger, now))
    }

    /// Saves the new run `make` builds under a fresh id, tells `started`, and drives it.
    ///
    /// The first save need not be durable before the run goes on when nobody is told of the run
    /// yet: every step that acts on the world, the run parking or ending, and letting its lock go
    /// come with a save that waits, and that one makes the first durable too (`Durability::Soon`). A
    /// caller told at once may answer with the run, so then the first save is made durable first.
    fn launch(
        &self,
        make: impl FnOnce(RunId, vwf_core::time::Ts) -> Result<Run, RunError>,
        started: Option<impl FnOnce(&Run)>,
    ) -> Result<Run, RunError> {
        self.launch_locked(self.store.allocate_locked_run().wait()?, make, started)
    }

    /// [`Runner::launch`] under `lock`, of a fresh id.
    fn launch_locked(
        &self,
        lock: RunLock,
        make: impl FnOnce(RunId, vwf_core::time::Ts) -> Result<Run, RunError>,
        started: Option<impl FnOnce(&Run)>,
    ) -> Result<Run, RunError> {
        let mut run = make(lock.id().clone(), self.clock.now())?;
        let admit = self.admit(&mut run)?;
        self.persist_as(&mut run, true)?;
        if let Some(started) = started {
            self.store.sync().wait()?;
            started(&run);
        }
        self.go_if_admitted(&mut run, admit, &lock)?;
        Ok(run)
    }

    /// Starts a saved design with `trigger`: `RunError::Refused` when the design has errors.
    pub fn start_design(&self, name: &DesignName, trigger: TriggerInfo) -> Result<Run, RunError> {
        self.start(self.compile(name)?, trigger)
    }

    /// Reads a run as it stands now: a run left running by a dead process is marked
    /// interrupted, a gate whose deadline passed is failed, and a timed wait that is due
    /// resumes (without sleeping through any later wait).
    pub fn open(&self, id: &RunId) -> Result<Run, RunError> {
        Ok(self.settle(id, true)?.0)
    }

    /// Like [`Runner::open`], also saying what reading it did: `None` when the run needed nothing
    /// (or its live owner holds it), else why it was settled.
    pub fn open_settling(&self, id: &RunId) -> Result<(Run, Option<Settle>), RunError> {
        self.settle(id, true)
    }

    /// Resumes the runs among the newest `limit` whose timed wait is due, without sleeping
    /// through later waits. A foreground `vwf run` calls this first, so a wait parked by a
    /// background caller (a tool, the chat command) goes on even with no server running.
    pub fn resume_due(&self, limit: usize) -> Result<Vec<Run>, RunError> {
        let now = self.clock.now();
        let background = Runner { sleep_for_waits: false, ..*self };
        let mut resumed = Vec::new();
        for entry in self.store.list_summaries(limit).wait()? {
            let Ok(summary) = entry.summary else { continue };
            if summary.due(now, true) == Some(Settle::WaitDue)
                && let Ok(run) = background.open(&entry.id)
            {
                resumed.push(run);
            }
        }
        Ok(resumed)
    }

    /// Whether reading `run` now should change it (see `open`).
    fn is_stale(&self, run: &Run, resume_waits: bool) -> bool {
        run.due(self.clock.now(), resume_waits).is_some()
    }

    /// Reads a run and settles it if it is due (the core's [`vwf_core::run::settle::due`]), under
    /// its lock; answers the run and what was done to it.
    fn settle(&self, id: &RunId, resume_waits: bool) -> Result<(Run, Option<Settle>), RunError> {
        let run = self.read(id)?;
        if !self.is_stale(&run, resume_waits) {
            return Ok((run, None));
        }
        let Some(lock) = self.store.try_lock_run(id).wait()? else {
            return Ok((run, None)); // its owner is alive and working on it
        };
        self.forget_saved(id);
        let mut run = self.read(id)?;
        let due = run.due(self.clock.now(), resume_waits);
        // Reading never needs to write: a store that cannot take the settled run (full,
        // read-only) still gets it reported as it stands now; the next reader saves it.
        if self.settle_orphan(&mut run) && self.saving_failure(&mut run, resume_waits, |run| self.write(run, false)).is_err() {
            return Ok((run, due));
        }
        // A wait that came drives its run on; so does a run left by a dead process whose unfinished
        // attempts its steps' retry policies take up again.
        if matches!(due, Some(Settle::WaitDue | Settle::Unannounced))
            || (resume_waits && due == Some(Settle::Orphaned) && run.status() == Status::Running)
        {
            Runner { sleep_for_waits: false, ..*self }.drive(&mut run, &lock)?;
        }
        // A run waiting on a child: driven, which makes a child still to make and takes the state
        // of one that moved; settled only if that changed it.
        if due == Some(Settle::Children) {
            let before = run.clone();
            Runner { sleep_for_waits: false, ..*self }.drive(&mut run, &lock)?;
            if run == before {
                return Ok((run, None));
            }
        }
        drop(lock);
        // A child settled by a reader that drives runs tells its parent; a listing drives
        // nothing (the parent learns of it when it is next read, see `Settle::Children`).
        if due.is_some() && resume_waits {
            self.tell_parent(&run);
        }
        self.drive_let_go();
        Ok((run, due))
    }

    /// Answers a parked step and drives the run on. A question a child run shows through this
    /// one (`<design step>/<its node>`) is answered in the child, which tells this run.
    pub fn respond(&self, id: &RunId, node: &StepPath, answer: Answer) -> Result<Run, RunError> {
        let Some(own) = node.own() else {
            let Some((child, rest)) = self.read(id)?.child_route(node) else {
                return Err(EngineError::UnknownNode(format!("run {id} has no node {node:?}")).into());
            };
            self.respond(&child, &rest, answer)?;
            return self.open(id);
        };
        let run = self.respond_here(id, own, answer)?;
        self.tell_parent(&run);
        Ok(run)
    }

    fn respond_here(&self, id: &RunId, node: &PassId, answer: Answer) -> Result<Run, RunError> {
        let lock = self.store.lock_run(id).wait()?;
        self.forget_saved(id);
        let mut run = self.read(id)?;
        let mut changed = self.settle_orphan(&mut run);
        let response = match answer {
            Answer::Respond(r) => r,
            Answer::Generate => {
                let Some(step) = run.plan_step(node).cloned() else {
                    if changed {
                        self.persist(&mut run)?;
                    }
                    return Err(RunError::NotFound(format!("run {} has no node {node:?}", run.run_id())));
                };
                let Some(Pending::Agent { prompt, profile, model, .. }) = run.parked().iter().find(|p| p.node() == node).cloned() else {
                    if changed {
                        self.persist(&mut run)?;
                    }
                    return Err(RunError::Conflict(format!("run {} is not waiting for an agent on node {node:?}", run.run_id())));
                };
                let (max_tokens, timeout_seconds) = match step.spec() {
                    Ok(vwf_core::spec::Spec::Agent { max_tokens, timeout_seconds, .. }) => (max_tokens, timeout_seconds),
                    _ => (None, vwf_core::limits::AGENT_TIMEOUT_DEFAULT),
                };
                let request = agent::Request {
                    max_tokens,
                    timeout: std::time::Duration::from_secs(timeout_seconds.max(1)),
                    ..agent::Request::new(&prompt, profile.as_deref(), model.as_deref())
                };
                match self.drivers.generate(&request) {
                    Ok(Outcome::Done { text, extra, tokens }) => Response::Generated { text, extra, tokens },
                    Ok(_) => return Err(BackendError::Failed("the agent backend gave no text".into()).into()),
                    Err(e) => {
                        if changed {
                            self.persist(&mut run)?;
                        }
                        return Err(e.into());
                    }
                }
            }
        };
        let before = run.clone();
        match run.respond(node, response, self.clock.now()) {
            Ok(()) => changed |= run != before,
            Err(e) => {
                if changed {
                    self.persist(&mut run)?;
                }
                return Err(e.into());
            }
        }
        if changed {
            self.persist(&mut run)?;
        }
        self.drive(&mut run, &lock)?;
        Ok(run)
    }

    /// Retries a failed run from its failed step.
    pub fn retry(&self, id: &RunId) -> Result<Run, RunError> {
        let run = self.retry_here(id)?;
        self.tell_parent(&run);
        Ok(run)
    }

    fn retry_here(&self, id: &RunId) -> Result<Run, RunError> {
        let lock = self.store.lock_run(id).wait()?;
        self.forget_saved(id);
        let mut run = self.read(id)?;
        if self.settle_orphan(&mut run) {
            self.persist(&mut run)?;
            // Left by a dead process, and taken up again by its steps' retry policies: driving
            // it on is the retry asked for.
            if run.status() == Status::Running {
                self.drive(&mut run, &lock)?;
                return Ok(run);
            }
        }
        run.retry(self.clock.now())?;
        self.persist(&mut run)?;
        self.drive(&mut run, &lock)?;
        Ok(run)
    }

    /// Retries a finished run from the start with its design as saved now: a new run with the
    /// old run's trigger and input, linked to it by `retry_of`. The old run is left as it is (a
    /// finished run's record does not change). `RunError::Refused` when the design now has errors.
    pub fn retry_from_start(&self, id: &RunId) -> Result<Run, RunError> {
        let old = self.open(id)?;
        old.can_retry_from_start()?;
        let name = old.design().clone();
        // A test run's retry is a test run of the same part of the design, with today's pins.
        let plan = match &old.plan().test {
            Some(scope) => self.compile_test(&name, scope)?.0,
            None => self.compile(&name)?,
        };
        self.launch(|id, now| Ok(Run::start_retry_of(&old, plan, id, now)?), None::<fn(&Run)>)
    }

    /// Drives a run we hold the lock of until it is done, failed or parked; then the children it
    /// started without waiting for them.
    fn drive(&self, run: &mut Run, lock: &RunLock) -> Result<(), RunError> {
        let mut detached = Vec::new();
        let driven = match self.hold_slot(run) {
            Ok(true) => self.drive_parent(run, lock, &mut detached),
            Ok(false) => Ok(()),
            Err(e) => Err(e),
        };
        self.drive_detached(detached);
        self.drive_let_go();
        driven
    }

    fn drive_parent(&self, run: &mut Run, _lock: &RunLock, detached: &mut Vec<RunId>) -> Result<(), RunError> {
        // The status and pending the store last saw: an idle pass that changed either is saved.
        let mut persisted = (run.status(), run.pending().cloned());
        loop {
            // Design steps parked on a child still to make: made (and a waited one driven) now.
            if self.make_children(run, detached)? {
                persisted = (run.status(), run.pending().cloned());
                continue;
            }
            // Read when the next steps are rendered, so a secret is what the environment holds
            // when its request is sent (SPEC §17).
            let secrets = self.drivers.config.secret_values();
            match run.advance_with(self.clock.now(), &secrets) {
                Advance::Settled(node) => {
                    // A step with no outside effect (a condition, a skip, a collect-only output)
                    // is recorded with the next write (SPEC §7): before the next task starts, or
                    // when the run parks or ends. Every write holds all the steps settled since
                    // the last one, so after a crash the record is one a writer saving after every
                    // step could have left, and a retry settles the same steps the same way.
                    if run.status() != Status::Running {
                        self.persist(run)?;
                        persisted = (run.status(), run.pending().cloned());
                    }
                    (self.observer)(Progress::Settled { run, node: node.as_ref() });
                    continue;
                }
                Advance::Tasks(tasks) => {
                    // Asked to stop for a newer run of its concurrency key: it stops here.
                    if self.cancelled(run) {
                        run.cancel("a newer run of the same concurrency key took its place", self.clock.now());
                        self.persist(run)?;
                        return Ok(());
                    }
                    // Steps over their rate limit wait (taken back before they are saved).
                    let (tasks, grants) = self.within_rates(run, tasks)?;
                    self.persist(run)?;
                    // A gate parked in one branch is announced now, not once the others end.
                    if self.announce_gates(run)? {
                        self.persist(run)?;
                    }
                    // A run its save failed (its record would pass `[limits] run_bytes`) starts
                    // nothing more.
                    if run.status().is_finished() || tasks.is_empty() {
                        continue;
                    }
                    if grants.is_empty() {
                        self.perform_all(run, &tasks, &secrets)?;
                    } else {
                        // Steps under a rate limit leave one at a time, each asking its limit
                        // again just before it goes (the window counts requests as they leave).
                        let (limited, free): (Vec<Task>, Vec<Task>) =
                            tasks.into_iter().partition(|t| grants.iter().any(|g| g.node == t.node));
                        // Each outcome is saved before the next step acts (a batch's last
                        // waits for the caller's next write, as always).
                        let mut first = true;
                        if !free.is_empty() {
                            self.perform_all(run, &free, &secrets)?;
                            first = false;
                        }
                        for (task, grant) in limited.iter().filter_map(|t| Some((t, grants.iter().find(|g| g.node == t.node)?))) {
                            if !first {
                                self.persist(run)?;
                            }
                            first = false;
                            self.refresh_grant(grant)?;
                            self.perform_all(run, std::slice::from_ref(task), &secrets)?;
                        }
                    }
                }
                Advance::Idle => {
                    // A child this run waits for may have moved since (a process died before it
                    // told this run): taken now.
                    if self.sync_children(run)? {
                        self.persist(run)?;
                        persisted = (run.status(), run.pending().cloned());
                        continue;
                    }
                    // Parked or ended: saved before a foreground run sleeps through a wait too, so
                    // the last task's outcome and the park are on disk while it sleeps.
                    if run.has_changes() || (run.status(), run.pending()) != (persisted.0, persisted.1.as_ref()) {
                        self.persist(run)?;
                    }
                    // Parked at gates that ask to be announced: told now that the park is saved.
                    if self.announce_gates(run)? {
                        self.persist(run)?;
                    }
                    if run.status() == Status::Waiting
                        && self.sleep_for_waits
                        && let Some(t) = run.next_wake()
                    {
                        (self.observer)(Progress::Waiting { run, now: self.clock.now(), until: t });
                        self.clock.sleep_until(t);
                        persisted = (run.status(), run.pending().cloned());
                        continue;
                    }
                    return Ok(());
                }
            }
            persisted = (run.status(), run.pending().cloned());
        }
    }

    /// Performs a batch of tasks, up to `MAX_PARALLEL` at a time, recording each outcome as it
    /// arrives. Outcomes are keyed by node, so the record does not depend on which task finishes
    /// first. An outcome is saved at once while other tasks of the batch are still to finish
    /// (they may take long); the batch's last outcome is saved by the caller's next write, which
    /// comes before anything else has an outside effect: before the next batch starts, or when
    /// the run parks or ends. So a step that follows another costs one write, not two, and a
    /// crash in between leaves what a crash just before the outcome's own write would have.
    ///
    /// Every outcome is scrubbed of the values of `secrets` before it is recorded, so a peer that
    /// echoes a secret back leaves `***` in the run, not the secret.
    fn perform_all(&self, run: &mut Run, tasks: &[Task], secrets: &Secrets) -> Result<(), RunError> {
        for task in tasks {
            (self.observer)(Progress::Started { run, node: &task.node });
        }
        let mut unrecorded = tasks.len();
        let mut record = |run: &mut Run, task: &Task, outcome: Outcome| -> Result<(), RunError> {
            run.complete(&task.node, scrubbed(outcome, secrets), self.clock.now())?;
            unrecorded -= 1;
            if unrecorded > 0 {
                self.persist(run)?;
            }
            (self.observer)(Progress::Settled { run, node: Some(&task.node) });
            Ok(())
        };
        // Agent steps that offer designs as tools start child runs of this run: performed here,
        // one by one, with the run at hand.
        let (tooled, tasks): (Vec<&Task>, Vec<&Task>) =
            tasks.iter().partition(|t| matches!(&t.work, Work::Agent { tools, .. } if !tools.is_empty()));
        for task in tooled {
            let outcome = self.perform_agent_tools(run, task);
            record(run, task, outcome)?;
        }
        // Emits start other runs through this runner, so they are performed here, one by one.
        let (emits, tasks): (Vec<&Task>, Vec<&Task>) = tasks.into_iter().partition(|t| matches!(t.work, Work::Emit { .. }));
        for task in emits {
            let Work::Emit { event, payload, timeout_seconds } = &task.work else { continue };
            let deadline = vwf_core::time::add_seconds(self.clock.now(), *timeout_seconds);
            let outcome = match self.emit_until(event, payload.clone(), &EmitSource::of(run), deadline) {
                Ok(Emission { capped: Some(error), .. }) => Outcome::failed(error),
                Ok(Emission { timed_out: Some(error), .. }) => Outcome::Failed { error, cause: vwf_core::recovery::Cause::Timeout },
                Ok(emission) => {
                    let mut extra = Map::new();
                    extra.insert("event".into(), Value::String(event.clone()));
                    extra
                        .insert("runs".into(), Value::Array(emission.runs.iter().map(|r| Value::String(r.run_id().to_string())).collect()));
                    extra.insert("resumed".into(), Value::Array(emission.resumed.iter().map(|r| Value::String(r.to_string())).collect()));
                    let text = if payload.is_null() { String::new() } else { payload.to_string() };
                    Outcome::Done { text, extra, tokens: 0 }
                }
                Err(e) => Outcome::failed(e.to_string()),
            };
            record(run, task, outcome)?;
        }
        let tasks: Vec<Task> = tasks.into_iter().cloned().collect();
        let tasks = tasks.as_slice();
        if tasks.is_empty() {
            return Ok(());
        }
        if let [task] = tasks {
            let outcome = self.drivers.perform(task, self.clock.now());
            return record(run, task, outcome);
        }
        let (drivers, clock) = (self.drivers, self.clock);
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
            for _ in 0..tasks.len().min(MAX_PARALLEL) {
                let tx = tx.clone();
                let next = &next;
                scope.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(task) = tasks.get(i) else { return };
                        if tx.send((i, drivers.perform(task, clock.now()))).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            let mut first_error = None;
            for (i, outcome) in rx {
                if first_error.is_none()
                    && let Err(e) = record(run, &tasks[i], outcome)
                {
                    first_error = Some(e);
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    /// Under the run's lock: a `running` run has no live owner, and a due deadline is enforced.
    fn settle_orphan(&self, run: &mut Run) -> bool {
        let now = self.clock.now();
        if run.status() == Status::Running {
            run.mark_interrupted(now);
            return true;
        }
        run.enforce_deadlines(now)
    }

    fn read(&self, id: &RunId) -> Result<Run, RunError> {
        Ok(parse_run(id, self.store.read_run(id).wait()?)?)
    }

    /// Saves a run we hold the lock of. When the store refuses the write (a full disk, a
    /// read-only store, no file handles left), the cause is recorded where the next reader looks:
    /// the state last saved is read back, failed with that cause, and saved again (a smaller
    /// file, which may still fit). The write's error is returned either way.
    fn persist(&self, run: &mut Run) -> Result<(), RunError> {
        self.persist_as(run, false)
    }

    /// [`Runner::persist`]; `new` for the first save of a run this runner just made, which may
    /// become durable with the run's next save (see [`Runner::launch`]).
    ///
    /// A save that would make the record larger than `[limits] run_bytes` writes nothing: the
    /// run as last saved is failed with why and saved instead (it was under the limit), and `run`
    /// becomes that, so the caller answers with the failed run. A new run that is too large is
    /// refused before anything is saved.
    fn persist_as(&self, run: &mut Run, new: bool) -> Result<(), RunError> {
        self.saving_failure(run, true, |run| self.persist_unhooked(run, new))
    }

    /// [`Runner::persist_as`] without starting a failure run.
    fn persist_unhooked(&self, run: &mut Run, new: bool) -> Result<(), RunError> {
        let cause = match self.write(run, new) {
            Ok(()) => return Ok(()),
            Err(Unsaved::TooLarge(cause)) if !new => {
                let mut saved = self.read(run.run_id())?;
                saved.mark_unsaved(self.clock.now(), &cause);
                self.write(&mut saved, false)?;
                *run = saved;
                return Ok(());
            }
            Err(Unsaved::TooLarge(cause)) => RunError::Rejected(cause),
            Err(Unsaved::Store(cause)) => RunError::Store(cause),
        };
        let mut saved = self.read(run.run_id()).unwrap_or_else(|_| run.clone());
        saved.mark_unsaved(self.clock.now(), &cause.to_string());
        let _ = self.write(&mut saved, false);
        Err(cause)
    }

    /// Drops the metrics' digest of a run whose lock was just taken (see [`Metrics::forget`]).
    fn forget_saved(&self, id: &RunId) {
        if let Some(metrics) = self.metrics {
            metrics.forget(id.as_str());
        }
    }

    /// The one place a run is saved, so also where its transitions are logged and counted. Only
    /// what changed since the last save is handed to the store (see `vwf_core::run::journal`);
    /// after a failed save the next one is whole. A save that would make the stored record larger
    /// than `[limits] run_bytes` is not made (measured by `Run::record_size`: the changed parts
    /// only, the whole document only for a whole save).
    fn write(&self, run: &mut Run, new: bool) -> Result<(), Unsaved> {
        let id = run.run_id().clone();
        let changes = run.take_changes();
        let size = run.record_size(&changes);
        let limit = self.drivers.config.limits.run_bytes;
        if size.bytes > limit {
            run.unsaved();
            return Err(Unsaved::TooLarge(format!(
                "the run's record would be {} bytes, more than the {limit} bytes one run may hold ([limits] run_bytes = {limit})",
                size.bytes
            )));
        }
        // A run saved waiting for an event is noted first, so the event finds it.
        if let Err(e) = self.note_waits(run) {
            run.unsaved();
            return Err(Unsaved::Store(e));
        }
        let watch = if new { Watch::new_run(self.metrics, self.traces) } else { Watch::before(self.metrics, self.traces, self.store, &id) };
        let started = std::time::Instant::now();
        let saved = self.store.save_run(&id, run, &changes, if new { Durability::Soon } else { Durability::Now });
        if let Err(e) = saved.wait() {
            run.unsaved();
            return Err(Unsaved::Store(e));
        }
        run.record_saved(size);
        if let Some(watch) = watch {
            watch.saved(run, started.elapsed());
        }
        if changes.ended {
            self.keep_stats(run);
        }
        self.release_slot(run);
        Ok(())
    }

    /// Keeps the stats record of a run that ended (see `vwf_core::stats`). The record is a
    /// hint the store can rebuild, so failing to keep it fails nothing: it is logged.
    fn keep_stats(&self, run: &Run) {
        let Some(stats) = run.stats() else { return };
        if let Err(e) = self.store.add_run_stats(&stats).wait() {
            tracing::warn!(run = %run.run_id(), "cannot keep the run's stats record: {e}");
        }
    }
}

/// Why [`Runner::write`] saved nothing.
enum Unsaved {
    /// The record would pass `[limits] run_bytes`: why, in words.
    TooLarge(String),
    /// The store refused the write.
    Store(StoreError),
}

impl From<Unsaved> for RunError {
    fn from(e: Unsaved) -> Self {
        match e {
            Unsaved::TooLarge(why) => RunError::Rejected(why),
            Unsaved::Store(e) => RunError::Store(e),
        }
    }
}

/// `outcome` with every value of `secrets` replaced by `***` (see `vwf_core::secrets`).
fn scrubbed(mut outcome: Outcome, secrets: &Secrets) -> Outcome {
    if secrets.is_empty() {
        return outcome;
    }
    match &mut outcome {
        Outcome::Done { text, extra, .. } => {
            secrets.scrub_string(text);
            extra.values_mut().for_each(|v| secrets.scrub(v));
        }
        Outcome::Failed { error, .. } => secrets.scrub_string(error),
        Outcome::Delivered(_) | Outcome::ParkAgent => {}
    }
    outcome
}

/// A stored run document as a run; anything else is as unreadable as a file that is not JSON.
pub fn parse_run(id: &RunId, value: Value) -> Result<Run, StoreError> {
    let mut run: Run =
        serde_json::from_value(value).map_err(|e| StoreError::Unreadable { what: format!("run {id}"), message: e.to_string() })?;
    run.read_back();
    Ok(run)
}

/// Every run starts with its input kept in the run file, which must read back: entries refuse
/// deeper JSON, and an event run's input wraps its payload one level deeper.
fn check_input(trigger: &TriggerInfo) -> Result<(), RunError> {
    if vwf_core::json::depth(&trigger.input) > limits::JSON_DEPTH + 1 {
        return Err(RunError::Rejected(vwf_core::json::JsonError::TooDeep.about("the run's input is")));
    }
    Ok(())
}
