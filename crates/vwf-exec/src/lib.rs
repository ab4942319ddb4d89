//! Drivers: the code that performs a step's task in the outside world and reports an `Outcome`,
//! and the home's config file ([`config`]) that says how.
//!
//! Agent steps go to the configured backend (or park for a person or host agent when there is
//! none), deliveries to the configured chat platforms (a delivery counts only when the platform
//! acknowledged it), commands to a shell or argv, HTTP steps to the network. Emit steps start
//! other runs, so the runner performs them itself.

pub mod agent;
pub mod command;
pub mod config;
pub mod deliver;
pub mod egress;
pub mod http;
pub mod process;

use vwf_core::run::{Outcome, Task, Work};
use vwf_core::time::Ts;

use crate::config::Config;

/// The environment variable a command step's process finds its attempt's number in (1 first).
pub const ATTEMPT_VAR: &str = "VWF_ATTEMPT";

pub struct Drivers {
    pub config: Config,
}

impl Drivers {
    pub fn new(config: Config) -> Self {
        Drivers { config }
    }

    /// Performs one task. Never panics; every failure is an outcome.
    pub fn perform(&self, task: &Task, now: Ts) -> Outcome {
        match &task.work {
            Work::Agent { prompt, profile, model, max_tokens, timeout_seconds, .. } => {
                let request = agent::Request {
                    max_tokens: *max_tokens,
                    timeout: std::time::Duration::from_secs((*timeout_seconds).max(1)),
                    ..agent::Request::new(prompt, profile.as_deref(), model.as_deref())
                };
                agent::perform(&self.config, &request)
            }
            Work::Deliver { message, deliver: kind, target, timeout_seconds, .. } => {
                let timeout = std::time::Duration::from_secs((*timeout_seconds).max(1));
                Outcome::Delivered(deliver::deliver(&self.config.channels, *kind, target, message, task.node.as_str(), now, timeout))
            }
            Work::Command(step) => {
                // The attempt's number, so a command can tell a retry from a first try (and make
                // what it does idempotent per attempt).
                let mut step = step.clone();
                step.env.insert(ATTEMPT_VAR.into(), task.attempt.to_string());
                command::perform(&step, &self.config)
            }
            Work::Http(step) => http::perform(step, self.config.http.policy()),
            Work::Emit { .. } => Outcome::failed("emit steps are performed by the runner"),
        }
    }

    /// Performs a parked agent step through the configured backend.
    pub fn generate(&self, request: &agent::Request<'_>) -> Result<Outcome, agent::BackendError> {
        agent::generate(&self.config, request)
    }
}

/// An error and its sources, joined with ": ", without repeating a part already included.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
