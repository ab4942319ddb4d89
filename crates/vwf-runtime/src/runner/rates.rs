//! Rate limits steps share (see [`vwf_core::rate`]): before the runner performs a task of a step
//! that names a `rate_limit`, it asks the limit's window, kept in the store as a flow-control
//! document named after the limit, so every design, process and instance naming the limit
//! counts in one window. A task over the limit is held back before anything of it is saved, and
//! its step waits (`waiting`, durably) until the window has room; it is asked again then.

use vwf_core::rate::Window;
use vwf_core::run::{Outcome, Run, Task};

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

impl Runner<'_> {
    /// Of `tasks` just handed out for `run` (nothing of them saved yet), those to perform now:
    /// a task whose limit has room is counted in it; one whose limit is full is held back; one
    /// naming a limit the config does not have fails its attempt, saying so.
    pub(super) fn within_rates(&self, run: &mut Run, tasks: Vec<Task>) -> Result<Vec<Task>, RunError> {
        let mut go = Vec::with_capacity(tasks.len());
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
                Ok(()) => go.push(task),
                Err(until) => run.hold_back(&task.node, &name, until, now),
            }
        }
        Ok(go)
    }
}
