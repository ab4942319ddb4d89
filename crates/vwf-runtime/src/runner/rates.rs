//! Rate limits steps share (see [`vwf_core::rate`]): before the runner performs a task of a step
//! that names a `rate_limit`, it asks the limit's window, kept in the store as a flow-control
//! document named after the limit, so every design, process and instance naming the limit
//! counts in one window. A task over the limit is held back before anything of it is saved, and
//! its step waits (`waiting`, durably) until the window has room; it is asked again then.

use vwf_core::names::PassId;
use vwf_core::rate::{Rule, Window};
use vwf_core::run::{Outcome, Run, Task};
use vwf_core::time::Ts;

use super::Runner;
use crate::error::RunError;
use crate::flowdoc::{self, FlowDoc};

impl FlowDoc for Window {
    const KIND: &'static str = "rate";
    fn is_empty(&self) -> bool {
        self.granted.is_empty()
    }
    fn is_waiting(&self) -> bool {
        false
    }
}

/// A start a limit granted a task: taken again just before the task is performed if it aged
/// ([`Runner::refresh_grants`]).
pub(super) struct Grant {
    /// The task's step instance.
    pub(super) node: PassId,
    name: String,
    rule: Rule,
    at: Ts,
}

impl Runner<'_> {
    /// Of `tasks` just handed out for `run` (nothing of them saved yet), those to perform now,
    /// with the grants of those that named a limit: a task whose limit has room is counted in
    /// it; one whose limit is full is held back; one naming a limit the config does not have
    /// fails its attempt, saying so.
    pub(super) fn within_rates(&self, run: &mut Run, tasks: Vec<Task>) -> Result<(Vec<Task>, Vec<Grant>), RunError> {
        let (mut go, mut grants) = (Vec::with_capacity(tasks.len()), Vec::new());
        for task in tasks {
            let named = run.plan_step(&task.node).and_then(|s| vwf_core::rate::named_by(&s.node)).map(String::from);
            let Some(name) = named else {
                go.push(task);
                continue;
            };
            let now = self.clock.now();
            let rule = match self.drivers.config.limits.rates.get(&name).map(|r| r.rule()) {
                Some(Ok(rule)) => rule,
                Some(Err(why)) => return Err(RunError::Config(format!("[limits.{name}]: {why}"))),
                None => {
                    let why = format!(
                        "rate limit {name:?} is not in the config: add [limits.{name}] with per_second or per_minute to visual-workflow.toml"
                    );
                    run.complete(&task.node, Outcome::failed(why), now)?;
                    continue;
                }
            };
            let mut verdict = Ok(());
            flowdoc::edit(self.store, &name, |window: &mut Window| verdict = window.take(&rule, now))?;
            match verdict {
                Ok(()) => {
                    grants.push(Grant { node: task.node.clone(), name, rule, at: now });
                    go.push(task);
                }
                Err(until) => run.hold_back(&task.node, &name, until, now),
            }
        }
        Ok((go, grants))
    }

    /// Just before a granted task is performed (its start saved since): a grant that aged past
    /// [`vwf_core::rate::STALE_MS`] is taken again now, waiting here for room if the window
    /// filled meanwhile, so the window counts the requests when they leave.
    pub(super) fn refresh_grant(&self, grant: &Grant) -> Result<(), RunError> {
        {
            // The grant the task holds: `None` once given back for want of room.
            let mut held = Some(grant.at);
            loop {
                let now = self.clock.now();
                if held.is_some_and(|at| (now - at).num_milliseconds() <= vwf_core::rate::STALE_MS) {
                    break;
                }
                let mut verdict = Ok(());
                flowdoc::edit(self.store, &grant.name, |window: &mut Window| {
                    verdict = match held {
                        Some(at) => window.retake(&grant.rule, at, now),
                        None => window.take(&grant.rule, now),
                    }
                })?;
                match verdict {
                    Ok(()) => break,
                    // Given back: asked again when the window has room.
                    Err(until) => {
                        held = None;
                        self.clock.sleep_until(until);
                    }
                }
            }
        }
        Ok(())
    }
}
