//! Concurrency slots (a design's `concurrency`, see [`vwf_core::concurrency`]): the runner takes
//! a run's slot before it drives it, gives it back when the run ends (or parks, with
//! `release_while_waiting`), and starts the queued runs a freed slot lets go.
//!
//! Who drives a run the queue lets go: the process's hand-off when it has one (`vwf serve` drives
//! it on a run slot of its own), else the thread that freed the slot, once the run it was driving
//! is done (a CLI run). The daemon looks at the scopes with queued runs every tick, so a run whose
//! slot was freed by a process that died (its run taken over, or its record gone) still starts.
//!
//! Order of locks: a run's lock may be held while a scope's slots are edited, never the other way
//! round (an edit is one short section of the store; it takes no run's lock).

use std::cell::{Cell, RefCell};
use vwf_store::Wait;

use vwf_core::concurrency::{Claim, OnLimit, Slots};
use vwf_core::names::RunId;
use vwf_core::run::{Run, Status};
use vwf_store::StoreError;

use super::Runner;
use crate::error::RunError;
use crate::flowdoc::{self, FlowDoc};

thread_local! {
    /// Runs this thread let go from a queue, to drive once its own run is done (no hand-off).
    static LET_GO: RefCell<Vec<RunId>> = const { RefCell::new(Vec::new()) };
    /// Whether this thread is driving let-go runs now (the outermost caller drains them).
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

impl FlowDoc for Slots {
    const KIND: &'static str = "slots";
    fn is_empty(&self) -> bool {
        self.held.is_empty() && self.queue.is_empty() && self.cancel.is_empty()
    }
    fn is_waiting(&self) -> bool {
        self.has_waiters()
    }
}

/// Why a start `on_limit: "skip"` refused did not start.
pub(super) fn skipped(design: &str, holder: &str, key: &str) -> RunError {
    RunError::Conflict(format!("not started: run {holder} holds the slot of {design}'s concurrency key {key:?} (on_limit: skip)"))
}

/// What a run's claim of its slot decided.
#[derive(Debug, PartialEq)]
pub(super) enum Admit {
    /// It holds a slot (or its design limits nothing): drive it.
    Go,
    /// It waits in the queue (`queued`).
    Queued,
    /// `on_limit: "skip"`: it does not run; `holder` holds the slot.
    Skipped(String),
}

impl Runner<'_> {
    /// Claims the slot `run` needs to be driven: its design's key is read (and recorded) the
    /// first time. A design without `concurrency`, a test run and a finished run need none.
    pub(super) fn claim_slot(&self, run: &mut Run) -> Result<Admit, RunError> {
        let Some(limits) = run.plan().concurrency.clone() else { return Ok(Admit::Go) };
        if run.plan().test.is_some() || run.status().is_finished() {
            return Ok(Admit::Go);
        }
        if run.concurrency_key().is_none() {
            let key = limits.key_value(run.design().as_str(), &run.trigger().input).map_err(RunError::Rejected)?;
            run.set_concurrency_key(key);
        }
        let Some(scope) = run.concurrency_scope() else { return Ok(Admit::Go) };
        let me = run.run_id().to_string();
        let claim = |slots: &mut Slots| {
            slots.release_while_waiting = limits.release_while_waiting;
            slots.claim(&me, limits.limit, limits.on_limit)
        };
        let mut answer = Claim::Granted;
        let kept = flowdoc::edit(self.store, &scope, |s: &mut Slots| answer = claim(s))?;
        if answer != Claim::Granted {
            // Holders that ended without giving their slot back (a process died in between, a
            // record removed) are dropped, which may let this run, or runs before it, go.
            let stale = self.stale_holders(&kept, &me);
            if !stale.is_empty() {
                let mut let_go = Vec::new();
                flowdoc::edit(self.store, &scope, |s: &mut Slots| {
                    stale.iter().for_each(|h| s.release(h));
                    let_go = s.promote();
                    answer = claim(s);
                })?;
                self.start_let_go(let_go.into_iter().filter(|r| *r != me));
            }
        }
        Ok(match answer {
            Claim::Granted => Admit::Go,
            Claim::Queued { .. } => {
                if limits.on_limit == OnLimit::CancelOldest {
                    self.cancel_asked(&scope, Some(&me));
                }
                Admit::Queued
            }
            Claim::Skipped { holder } => Admit::Skipped(holder.unwrap_or_default()),
        })
    }

    /// A new run of `plan` that `on_limit: "skip"` would refuse, or whose key its input cannot
    /// give, is refused before an id is taken, so a refusal leaves nothing behind (a start racing
    /// another for the last slot is still refused by its claim).
    pub(super) fn refuse_early(&self, plan: &vwf_core::plan::Plan, input: &serde_json::Value) -> Result<(), RunError> {
        let Some(limits) = plan.concurrency.as_ref().filter(|_| plan.test.is_none()) else { return Ok(()) };
        let key = limits.key_value(plan.design.as_str(), input).map_err(RunError::Rejected)?;
        if limits.on_limit != OnLimit::Skip {
            return Ok(());
        }
        let scope = vwf_core::concurrency::scope(plan.design.as_str(), &key);
        let slots = flowdoc::read::<Slots>(self.store, &scope)?;
        let live = slots.held.len() - self.stale_holders(&slots, "").len();
        match slots.held.first() {
            Some(holder) if live >= limits.limit as usize || !slots.queue.is_empty() => Err(skipped(plan.design.as_str(), holder, &key)),
            _ => Ok(()),
        }
    }

    /// Holders of `slots` (other than `me`) that no longer need their slot: their run ended, is
    /// gone, or (with `release_while_waiting`) is parked.
    fn stale_holders(&self, slots: &Slots, me: &str) -> Vec<String> {
        slots
            .held
            .iter()
            .filter(|h| *h != me)
            .filter(|h| {
                let Ok(id) = RunId::parse(h) else { return true };
                let done_with = |summary: vwf_core::run::settle::Summary| {
                    summary.status.is_finished() || (slots.release_while_waiting && summary.status.is_parked())
                };
                match self.store.read_run_summary(&id).wait() {
                    Ok(summary) => done_with(summary),
                    // Claimed before its first save: stale only when no live process holds its
                    // lock (the one making it took the lock before the claim). A store that
                    // holds a fresh id by its lock alone finds it not there once nobody does.
                    Err(StoreError::NotFound(_)) => match self.store.try_lock_run(&id).wait() {
                        // Its maker may have saved it and let it go meanwhile: looked at again.
                        Ok(Some(_lock)) => match self.store.read_run_summary(&id).wait() {
                            Ok(summary) => done_with(summary),
                            Err(e) => matches!(e, StoreError::NotFound(_)),
                        },
                        Err(StoreError::NotFound(_)) => true,
                        _ => false,
                    },
                    Err(_) => false,
                }
            })
            .cloned()
            .collect()
    }

    /// Takes the slot `run` needs before it is driven on: answers whether to drive it. A run
    /// that must wait is saved `queued`; a run refused (`skip`) fails with why.
    pub(super) fn hold_slot(&self, run: &mut Run) -> Result<bool, RunError> {
        match self.claim_slot(run)? {
            Admit::Go => Ok(true),
            Admit::Queued => {
                run.hold_queued(self.clock.now());
                self.persist(run)?;
                Ok(false)
            }
            Admit::Skipped(holder) => {
                run.cancel(&format!("run {holder} of the same concurrency key holds the slot (on_limit: skip)"), self.clock.now());
                self.persist(run)?;
                Ok(false)
            }
        }
    }

    /// After a save of `run`: a run that no longer needs its slot (it ended, or parked with
    /// `release_while_waiting`) gives it back, and the runs the queue lets go are started.
    pub(super) fn release_slot(&self, run: &Run) {
        let Some(scope) = run.concurrency_scope() else { return };
        let release_while_waiting = run.plan().concurrency.as_ref().is_some_and(|c| c.release_while_waiting);
        let done_with_it = run.status().is_finished() || (release_while_waiting && run.status().is_parked());
        if !done_with_it {
            return;
        }
        let me = run.run_id().to_string();
        let mut let_go = Vec::new();
        let edited = flowdoc::edit(self.store, &scope, |s: &mut Slots| {
            s.release(&me);
            let_go = s.promote();
        });
        match edited {
            Ok(_) => self.start_let_go(let_go.into_iter()),
            // The next claim in the scope, or the daemon's look at it, finds the run ended.
            Err(e) => tracing::warn!(run = %me, "cannot give back the run's concurrency slot: {e}"),
        }
    }

    /// Starts runs a queue let go: handed off, or noted for this thread to drive once its own
    /// run is done ([`Runner::drive_let_go`]).
    fn start_let_go(&self, runs: impl Iterator<Item = String>) {
        for id in runs.filter_map(|r| RunId::parse(&r).ok()) {
            match self.handoff {
                Some(handoff) => handoff(id),
                None => LET_GO.with(|l| l.borrow_mut().push(id)),
            }
        }
    }

    /// Drives the runs this thread let go from a queue (see [`Runner::start_let_go`]); the
    /// outermost caller on a thread does it, so a long queue is a loop, not a deep stack.
    pub(super) fn drive_let_go(&self) {
        if DRAINING.with(|d| d.replace(true)) {
            return;
        }
        while let Some(id) = LET_GO.with(|l| l.borrow_mut().pop()) {
            if let Err(e) = self.start_queued(&id) {
                tracing::warn!(run = %id, "the queued run did not start: {e}");
            }
        }
        DRAINING.with(|d| d.set(false));
    }

    /// Drives a queued run on if its slot is free now (a run let go, or one the daemon looks at):
    /// nothing when another process holds it, or it is not queued.
    pub fn start_queued(&self, id: &RunId) -> Result<(), RunError> {
        let Some(lock) = self.store.try_lock_run(id).wait()? else { return Ok(()) };
        self.forget_saved(id);
        let mut run = self.read(id)?;
        if run.status() != Status::Queued {
            return Ok(());
        }
        match self.claim_slot(&mut run)? {
            Admit::Go => {}
            Admit::Queued => return Ok(()),
            Admit::Skipped(_) => return Ok(()),
        }
        run.leave_queue(self.clock.now());
        self.persist(&mut run)?;
        let background = Runner { sleep_for_waits: false, observer: &crate::app::quiet, ..*self };
        background.drive(&mut run, &lock)?;
        drop(lock);
        self.tell_parent(&run);
        Ok(())
    }

    /// Stops the holders of `scope` asked to stop for a newer run (`cancel_oldest`) that nobody
    /// is driving now; one being driven stops at its next step ([`Runner::cancelled`]).
    pub(super) fn cancel_asked(&self, scope: &str, by: Option<&str>) {
        let Ok(slots) = flowdoc::read::<Slots>(self.store, scope) else { return };
        for asked in &slots.cancel {
            let Ok(id) = RunId::parse(asked) else { continue };
            let Ok(Some(lock)) = self.store.try_lock_run(&id).wait() else { continue };
            self.forget_saved(&id);
            let Ok(mut run) = self.read(&id) else { continue };
            let why = match by {
                Some(by) => format!("run {by} of the same concurrency key took its place"),
                None => "a newer run of the same concurrency key took its place".to_string(),
            };
            if run.cancel(&why, self.clock.now())
                && let Err(e) = self.persist(&mut run)
            {
                tracing::warn!(run = %id, "cannot cancel the run: {e}");
            }
            drop(lock);
            self.tell_parent(&run);
        }
    }

    /// Whether `run`, being driven, was asked to stop for a newer run of its key: read between
    /// batches of steps, only for a design with `on_limit: "cancel_oldest"`.
    pub(super) fn cancelled(&self, run: &Run) -> bool {
        let asks = run.plan().concurrency.as_ref().is_some_and(|c| c.on_limit == OnLimit::CancelOldest);
        match run.concurrency_scope().filter(|_| asks) {
            Some(scope) => flowdoc::read::<Slots>(self.store, &scope).is_ok_and(|s| s.cancelled(run.run_id().as_str())),
            None => false,
        }
    }

    /// The daemon's look at a scope with queued runs or holders asked to stop: holders that
    /// ended are dropped, the runs the queue lets go start, and the holders asked to stop that
    /// nobody drives are stopped.
    pub fn nudge_scope(&self, scope: &str) -> Result<(), RunError> {
        let slots = flowdoc::read::<Slots>(self.store, scope)?;
        let stale = self.stale_holders(&slots, "");
        let mut let_go = Vec::new();
        flowdoc::edit(self.store, scope, |s: &mut Slots| {
            stale.iter().for_each(|h| s.release(h));
            let_go = s.promote();
        })?;
        // Runs already let go but never driven (the process that let them go died) hold their
        // slot and are still `queued`: started too.
        let waiting: Vec<String> = slots.held.iter().filter(|h| !stale.contains(h)).cloned().collect();
        self.start_let_go(let_go.into_iter().chain(waiting.into_iter().filter(|h| self.is_queued(h))));
        if !slots.cancel.is_empty() {
            self.cancel_asked(scope, None);
        }
        self.drive_let_go();
        Ok(())
    }

    /// Adds where a queued run waits now (`queue: {key, place, behind}`) to its run result (a
    /// single read, or a listing's entry); a run not queued, or not found in its queue, gets none.
    pub fn add_queue_place(&self, result: &mut serde_json::Value) {
        if result["status"] != "queued" {
            return;
        }
        let (Some(design), Some(key), Some(id)) =
            (result["design"].as_str(), result["concurrency_key"].as_str(), result["run_id"].as_str())
        else {
            return;
        };
        let scope = vwf_core::concurrency::scope(design, key);
        let place = flowdoc::read::<Slots>(self.store, &scope).ok().and_then(|s| s.place_of(id, key));
        if let (Some(place), Some(obj)) = (place, result.as_object_mut()) {
            obj.insert("queue".into(), serde_json::to_value(place).unwrap_or_default());
        }
    }

    fn is_queued(&self, id: &str) -> bool {
        RunId::parse(id).ok().and_then(|id| self.store.read_run_summary(&id).wait().ok()).is_some_and(|s| s.status == Status::Queued)
    }
}
