//! A run of steps with no outside effect, saved once at its end.
//!
//! Such a run (conditions, collect-only outputs, skips: what `Advance::Settled` covers) acts on
//! nothing before it ends, and nobody knows of it until it is answered. Where the store can save
//! a fresh run in one request ([`Store::end_fresh_run`], PostgreSQL), the runner makes it in
//! memory from the plan it kept of the design, and saves it ended under an id drawn without a
//! request, if the design is still at the revision the plan was compiled from. It needs no lock
//! and no save before its end: one request a run instead of two.
//!
//! Anything else goes the usual way, the run made again from the start under a locked id: a
//! step that would act on the world (a task), a run that parks (a gate, a wait, a child run),
//! one that ends failed (its failure run, where one is named, starts on that way), a concurrency
//! limit (its slot is claimed before the first save), a record over `[limits] run_bytes`, and a
//! store that answers no (the design changed, or the id is taken). Nothing of the attempt in
//! memory was written or shown to anyone.

use vwf_core::names::{PassId, RunId};
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Run, TriggerInfo};
use vwf_store::{FreshEnd, Wait};

use super::{Progress, Runner};
use crate::error::RunError;
use crate::telemetry::Watch;

impl Runner<'_> {
    /// Makes run `id` (from [`Store::fresh_run_id`](vwf_store::Store::fresh_run_id)) of `plan`,
    /// compiled from `revision` of its design, with `trigger`, and ends it in one request (see the
    /// module doc); `None` when it must go the usual way.
    pub(super) fn end_fresh(&self, id: RunId, plan: Plan, trigger: &TriggerInfo, revision: u64) -> Result<Option<Run>, RunError> {
        if plan.concurrency.is_some() || plan.test.is_some() {
            return Ok(None);
        }
        let mut run = self.make_start(plan, trigger.clone(), id, self.clock.now())?;
        let secrets = self.drivers.config.secret_values();
        let mut settled: Vec<Option<PassId>> = Vec::new();
        loop {
            match run.advance_with(self.clock.now(), &secrets) {
                Advance::Settled(node) => settled.push(node),
                Advance::Tasks(_) => return Ok(None),
                Advance::Idle => break,
            }
        }
        if !run.status().is_finished() || run.awaits_failure_run() {
            return Ok(None);
        }
        let changes = run.take_changes();
        let size = run.record_size(&changes);
        if size.bytes > self.drivers.config.limits.run_bytes {
            return Ok(None);
        }
        let watch = Watch::new_run(self.metrics, self.traces);
        let started = std::time::Instant::now();
        if self.store.end_fresh_run(&run, revision).wait()? != FreshEnd::Saved {
            return Ok(None);
        }
        run.record_saved(size);
        if let Some(watch) = watch {
            watch.saved(&run, started.elapsed());
        }
        for node in &settled {
            (self.observer)(Progress::Settled { run: &run, node: node.as_ref() });
        }
        Ok(Some(run))
    }
}
