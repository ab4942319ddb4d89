//! Why the runtime did not do what it was asked: one enum whose cases are what callers branch on.
//!
//! The runner, the schedules and the daemon answer `Result<T, RunError>`; none of them knows an
//! HTTP status. The API's edge (`Failure`) maps each case to a status once, the CLI to an exit
//! code. A design with errors is a case of its own ([`RunError::Refused`], with the validator's
//! report), so no caller unpacks a result inside a result.

use vwf_core::run::EngineError;
use vwf_core::validate::Report;

use vwf_exec::agent::BackendError;
use vwf_store::StoreError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum RunError {
    /// The design has errors: nothing was started or saved. The report says which.
    #[error("{}", .0.refusal())]
    Refused(Report),
    /// The home's config file cannot be used (it says why and where).
    #[error("{0}")]
    Config(String),
    /// What the caller gave cannot be used as given (a bad id, event name, input or schedule).
    #[error("{0}")]
    Rejected(String),
    /// What the caller named is not there (a design, a run, a node, a job).
    #[error("{0}")]
    NotFound(String),
    /// The request does not fit the state of what it names (a run not waiting there).
    #[error("{0}")]
    Conflict(String),
    /// The agent backend is not configured or failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The store failed (see [`StoreError`] for its cases).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine refused a change of a run.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl RunError {
    /// The validator's report, for a design with errors.
    pub fn report(&self) -> Option<&Report> {
        match self {
            RunError::Refused(report) => Some(report),
            _ => None,
        }
    }

    /// Whether the named thing is missing (a store's `NotFound` or the engine's unknown node too).
    pub fn is_not_found(&self) -> bool {
        matches!(self, RunError::NotFound(_) | RunError::Store(StoreError::NotFound(_)) | RunError::Engine(EngineError::UnknownNode(_)))
    }
}
