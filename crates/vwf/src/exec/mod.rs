//! Drivers: the code that performs a step's task in the outside world and reports an `Outcome`.
//!
//! This version performs no agent call and no platform send: with no agent backend an agent step
//! parks for a person or host agent, and a delivery is recorded as failed with the reason, never
//! claimed. Step types whose drivers are not built yet fail with a clear "not supported yet".

pub mod command;
pub mod http;

use vwf_core::run::{Delivery, Outcome, Task, Work};
use vwf_core::time::Ts;

use crate::config::Config;
use crate::failure::Failure;

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
            Work::Agent { prompt, profile, model, .. } => {
                if !self.config.has_agent_backend() {
                    return Outcome::ParkAgent;
                }
                match self.generate(prompt, profile.as_deref(), model.as_deref()) {
                    Ok(outcome) => outcome,
                    Err(e) => Outcome::Failed { error: e.to_string() },
                }
            }
            Work::Deliver { target, .. } => Outcome::Delivered(Delivery {
                node: task.node.clone(),
                target: target.clone(),
                ok: false,
                detail: self.delivery_refusal(target),
                at: now,
            }),
            Work::Command { .. } => command::perform(&task.work, &self.config),
            Work::Http { .. } => http::perform(&task.work),
            Work::Emit { .. } => not_yet("emit"),
        }
    }

    /// Performs an agent step through the configured backend.
    pub fn generate(&self, _prompt: &str, _profile: Option<&str>, _model: Option<&str>) -> Result<Outcome, Failure> {
        if !self.config.has_agent_backend() {
            return Err(Failure::Unavailable("no agent backend is configured (set [agent] backend in visual-workflow.toml)".into()));
        }
        Err(Failure::BadGateway(format!(
            "agent backend {:?} is not supported yet in this version",
            self.config.agent.backend
        )))
    }

    fn delivery_refusal(&self, target: &str) -> String {
        let platform = target.split(':').next().unwrap_or(target);
        if self.config.channels.contains_key(platform) {
            format!("sending to {platform} is not supported yet in this version; nothing was sent")
        } else {
            format!("no {platform} channel is configured; nothing was sent")
        }
    }
}

fn not_yet(kind: &str) -> Outcome {
    Outcome::Failed { error: format!("{kind} steps are not supported yet in this version") }
}
