//! Runs that wait mid-way for an event (`wait_event` steps): an event answers every run waiting
//! for it whose match its payload satisfies, oldest wait first, each exactly once.
//!
//! Finding them costs the same however old they are: a run is noted waiting in the store
//! ([`vwf_store::Store::add_waiter`]) before it is saved waiting, with what it waits for (so an
//! event reads only the runs it matches), and the note is dropped once the run waits for the
//! event no more. The note is a hint and the run's record the truth: each run is
//! answered under its lock after being read again, so two instances given events at the same time
//! answer it once, and a run that finished since is passed over (its note dropped). A run that is
//! still running when the event comes is not waiting yet: events are not kept for runs that wait
//! later.

use std::time::Duration;
use vwf_store::Wait;

use serde_json::Value;
use vwf_core::names::RunId;
use vwf_core::run::{Pending, Run};
use vwf_core::time::Ts;
use vwf_store::{RunLock, StoreError};

use super::Runner;
use crate::error::RunError;

/// How long an emit step waits for the lock of a run its event answers (another owner may be
/// driving it) before it gives up on that run: two runs emitting to each other at once must not
/// wait on each other for ever.
const EMIT_LOCK_TRIES: u32 = 100;
const EMIT_LOCK_PAUSE: Duration = Duration::from_millis(50);

impl Runner<'_> {
    /// Answers the runs waiting for `event` with `payload` and drives each on; answers the ids of
    /// the runs it answered, in the order it did. `from` is the run whose emit step sent the event
    /// (it heard its own event already, and holds its own lock), `None` for an event from outside.
    pub(super) fn answer_waiters(&self, event: &str, payload: &Value, from: Option<&RunId>) -> Result<Vec<RunId>, RunError> {
        let mut waiting: Vec<(Ts, RunId)> = Vec::new();
        for (id, note) in self.store.waiters(event).wait()? {
            if Some(&id) == from {
                continue;
            }
            // The note says what the run waits for, so only the runs the event matches are read.
            if let Some(waits) = Run::waits_in_note(&note) {
                if let Some(since) = waits.iter().filter(|p| p.hears(event, payload)).filter_map(Pending::since).min() {
                    waiting.push((since, id));
                }
                continue;
            }
            match self.store.read_run_summary(&id).wait() {
                Ok(summary) => {
                    let since = summary.parked.iter().filter(|p| p.hears(event, payload)).filter_map(Pending::since).min();
                    match since {
                        Some(since) => waiting.push((since, id)),
                        // Ended, or waits for this event no more: the note is stale. A run still
                        // running may be about to wait: its note stays.
                        None if summary.status.is_finished() => self.forget_waiter(event, &id),
                        None => {}
                    }
                }
                Err(StoreError::NotFound(_)) => self.forget_waiter(event, &id),
                Err(e) => tracing::warn!(run = %id, event, "cannot read a run waiting for the event: {e}"),
            }
        }
        waiting.sort();
        let mut answered = Vec::new();
        for (_, id) in waiting {
            let lock = match self.lock_patiently(&id, from.is_some()) {
                Ok(Some(lock)) => lock,
                Ok(None) => {
                    tracing::warn!(run = %id, event, "the run waiting for the event stayed busy; it was not answered");
                    continue;
                }
                Err(e) => {
                    tracing::warn!(run = %id, event, "cannot lock a run waiting for the event: {e}");
                    continue;
                }
            };
            self.forget_saved(&id);
            let mut run = match self.read(&id) {
                Ok(run) => run,
                Err(RunError::Store(StoreError::NotFound(_))) => {
                    self.forget_waiter(event, &id);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if run.receive_event(event, payload, self.clock.now()).is_empty() {
                // Answered by another event (or instance) first, timed out, or ended.
                if run.status().is_finished() || !run.awaited_events().contains(&event) {
                    self.forget_waiter(event, &id);
                }
                continue;
            }
            let background = Runner { sleep_for_waits: false, observer: &crate::app::quiet, ..*self };
            background.persist(&mut run)?;
            if !run.awaited_events().contains(&event) {
                self.forget_waiter(event, &id);
            }
            answered.push(id);
            if let Err(e) = background.drive(&mut run, &lock) {
                tracing::warn!(run = %run.run_id(), event, "the run an event answered stopped: {e}");
            }
            drop(lock);
            self.tell_parent_holding(&run, from);
        }
        Ok(answered)
    }

    /// Notes every event `run` waits for, with what it waits for, before it is saved waiting.
    pub(super) fn note_waits(&self, run: &Run) -> Result<(), StoreError> {
        for event in run.awaited_events() {
            if let Some(note) = run.waits_note(event) {
                self.store.add_waiter(event, run.run_id(), &note).wait()?;
            }
        }
        Ok(())
    }

    fn forget_waiter(&self, event: &str, id: &RunId) {
        if let Err(e) = self.store.remove_waiter(event, id).wait() {
            tracing::warn!(run = %id, event, "cannot drop the note of a run waiting: {e}");
        }
    }

    /// The lock of run `id`: waited for, except by a caller that holds another run's lock (an
    /// emit step's run), which tries for a while (see [`EMIT_LOCK_TRIES`]).
    pub(super) fn lock_patiently(&self, id: &RunId, from_a_run: bool) -> Result<Option<RunLock>, StoreError> {
        if !from_a_run {
            return self.store.lock_run(id).wait().map(Some);
        }
        for _ in 0..EMIT_LOCK_TRIES {
            if let Some(lock) = self.store.try_lock_run(id).wait()? {
                return Ok(Some(lock));
            }
            std::thread::sleep(EMIT_LOCK_PAUSE);
        }
        Ok(None)
    }
}
