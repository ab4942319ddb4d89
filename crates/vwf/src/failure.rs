//! Errors at the edge: one enum that every surface renders the same way, as the contract's
//! `{ok:false, error}` body with an HTTP-like status and a CLI exit code; and [`guarded`], the one
//! place a panic inside an operation is caught and turned into such an answer.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
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

/// An HTTP handler answers `Result<_, Failure>`: a failure is its status with `{ok:false, error}`.
impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(self.body())).into_response()
    }
}

/// Runs `work`; a panic inside it (a bug) becomes `Failure::Internal` naming `what`, so every
/// tool call, request and chat turn still gets its answer. The operations write nothing before
/// they have checked what they were given, and persist a run after each step, so what the
/// failed part did not finish is not written.
pub fn guarded<T>(what: &str, work: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(Failure::Internal(format!("internal error in {what}; nothing was changed by the failed part"))))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant answers its status with `{ok:false, error}` as a JSON response.
    #[test]
    fn a_failure_is_its_status_and_the_contract_body() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let cases = [
            (Failure::BadRequest("bad".into()), 400),
            (Failure::NotFound("gone".into()), 404),
            (Failure::Conflict("busy".into()), 409),
            (Failure::Unavailable("no backend".into()), 503),
            (Failure::BadGateway("backend failed".into()), 502),
            (Failure::Internal("disk".into()), 500),
        ];
        for (failure, status) in cases {
            let message = failure.to_string();
            let response = failure.into_response();
            assert_eq!(response.status().as_u16(), status, "{message}");
            let content_type = response.headers().get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
            assert_eq!(content_type, Some("application/json"), "{message}");
            let bytes = runtime.block_on(axum::body::to_bytes(response.into_body(), 1 << 16)).expect("body");
            let body: Value = serde_json::from_slice(&bytes).expect("JSON body");
            assert_eq!(body, json!({"ok": false, "error": message}));
        }
    }

    /// A panic inside guarded work is an internal failure naming the work; answers pass through.
    #[test]
    fn a_panic_in_guarded_work_is_an_internal_failure() {
        let answered: Result<u8, Failure> = guarded("workflow_design_run", || panic!("a bug"));
        assert_eq!(
            answered,
            Err(Failure::Internal("internal error in workflow_design_run; nothing was changed by the failed part".into()))
        );
        assert_eq!(answered.unwrap_err().status(), 500);
        assert_eq!(guarded("x", || Ok(7)), Ok(7));
        assert_eq!(guarded::<()>("x", || Err(Failure::NotFound("no".into()))), Err(Failure::NotFound("no".into())));
    }
}
