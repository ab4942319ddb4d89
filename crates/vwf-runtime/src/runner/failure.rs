//! Error workflows: a run that fails starts a run of the design its own design's `on_failure`
//! names (or `[runs] on_failure`), given what failed, and the two runs name each other
//! (`failure_run`, `failure_of`).
//!
//! Exactly once, whatever crashes and however many instances: the failure run's id is derived
//! from the failed run's ([`vwf_core::names::RunId::derived`]), so every process that handles the
//! failure means the same run; it is made under that id's lock, only when no run has it yet; and
//! it is saved before the failed run's own failed state is. A process that dies in between left
//! the failed run as it was before it failed (running, with no owner), so the next reader fails
//! it again, finds the failure run already there and links it instead of starting another. A
//! run started by a failure never starts one itself, so failure designs cannot loop.

use vwf_core::run::{FAILURE_RUN_REFUSED, Run, Status};
use vwf_store::Wait;
use vwf_store::{RunLock, StoreError};

use super::Runner;

impl Runner<'_> {
    /// Saves `run` with `save`; when the save records its failure, first starts its failure
    /// run (saved, not yet driven), and after the save drives it, unless `drive` is false (a
    /// listing, which drives nothing: the failure run, saved with nothing begun, is taken up by
    /// the next reader or the daemon, see `Run::mark_interrupted`).
    pub(super) fn saving_failure<T>(&self, run: &mut Run, drive: bool, save: impl FnOnce(&mut Run) -> T) -> T {
        let follow = self.start_failure_run(run);
        let saved = save(run);
        if let Some((mut failure, lock)) = follow.filter(|_| drive) {
            // In the background, and quietly: a foreground run's live lines are its own.
            let background = Runner { sleep_for_waits: false, observer: &crate::app::quiet, ..*self };
            if let Err(e) = background.drive(&mut failure, &lock) {
                tracing::warn!(run = %failure.run_id(), failure_of = %run.run_id(), "the failure run stopped: {e}");
            }
        }
        saved
    }

    /// Starts the failure run of `run` if it awaits one and its design (or the config) names a
    /// design for it, and links it; answers the new run and its lock, for the caller to drive
    /// once `run` is saved. A failure run that cannot start (its design is missing or has
    /// errors) is noted in `run`'s history instead, once.
    fn start_failure_run(&self, run: &mut Run) -> Option<(Run, RunLock)> {
        if !run.awaits_failure_run() || run.history().iter().any(|e| e.event == FAILURE_RUN_REFUSED) {
            return None;
        }
        let name = run.plan().on_failure.clone().or_else(|| self.drivers.config.runs.on_failure.clone())?;
        let now = self.clock.now();
        let plan = match self.compile(&name) {
            Ok(plan) => plan,
            Err(e) => {
                run.note_failure_run_refused(name.as_str(), &e.to_string(), now);
                return None;
            }
        };
        let id = run.failure_run_id();
        let lock = match self.store.reserve_run_id(&id).wait().and_then(|_| self.store.lock_run(&id).wait()) {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(run = %run.run_id(), "cannot start the failure run: {e}");
                return None;
            }
        };
        match self.read(&id) {
            // Started by a process that died before it saved this run's failure: linked, and
            // driven on if it never began (it holds its own lock now, so nobody else drives it).
            Ok(started) => {
                run.link_failure_run(id);
                return (started.status() == Status::Running && started.steps().is_empty()).then_some((started, lock));
            }
            Err(crate::error::RunError::Store(StoreError::NotFound(_))) => {}
            Err(e) => {
                tracing::warn!(run = %run.run_id(), "cannot start the failure run: {e}");
                return None;
            }
        }
        let mut failure = Run::start_failure_of(run, plan, now);
        if let Err(e) = self.persist(&mut failure) {
            tracing::warn!(run = %run.run_id(), "cannot save the failure run: {e}");
            return None;
        }
        tracing::info!(run = %run.run_id(), failure_run = %id, design = %name, "a failed run started its failure run");
        run.link_failure_run(id);
        Some((failure, lock))
    }
}
