//! Errors at the edge: one enum that every surface renders the same way, as the contract's
//! `{ok:false, error}` body with an HTTP-like status and a CLI exit code.

use serde_json::{Value, json};
use vwf_core::run::EngineError;

use crate::store::StoreError;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// Something vwf needs is not there: no agent backend configured, the database cannot be reached.
    #[error("{0}")]
    Unavailable(String),
    /// The agent backend failed.
    #[error("{0}")]
    BadGateway(String),
    #[error("{0}")]
    Internal(String),
}

impl Failure {
    pub fn status(&self) -> u16 {
        match self {
            Failure::BadRequest(_) => 400,
            Failure::NotFound(_) => 404,
            Failure::Conflict(_) => 409,
            Failure::Unavailable(_) => 503,
            Failure::BadGateway(_) => 502,
            Failure::Internal(_) => 500,
        }
    }

    pub fn body(&self) -> Value {
        json!({"ok": false, "error": self.to_string()})
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(_) => Failure::NotFound(e.to_string()),
            StoreError::Exists(_) | StoreError::Busy(_) => Failure::Conflict(e.to_string()),
            StoreError::Corrupt { .. } | StoreError::Io(_) => Failure::Internal(e.to_string()),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::BadRequest(m) => Failure::BadRequest(m),
            EngineError::UnknownNode(m) => Failure::NotFound(m),
            EngineError::Conflict(m) => Failure::Conflict(m),
        }
    }
}
