//! Errors at the edge: one enum that every surface renders the same way, as the contract's
//! `{ok:false, error}` body with an HTTP-like status and a CLI exit code; and [`guarded`], the one
//! place a panic inside an operation is caught and turned into such an answer.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vwf_core::limits;

use crate::contract::answers::{Error, No, Refusal, to_body};
use vwf_core::run::EngineError;
use vwf_core::validate::Report;

use vwf_exec::agent::BackendError;
use vwf_runtime::error::RunError;
use vwf_runtime::gate::Busy;
use vwf_store::StoreError;

/// Seconds a client is told to wait (`Retry-After`) before trying a store that is full or out of
/// reach again.
pub const STORE_RETRY_AFTER_SECONDS: u64 = 30;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Failure {
    /// A design problem (SPEC §13): answered 200 with `{ok:false, error, errors}`, exit code 5.
    #[error("{}", .0.refusal())]
    Refused(Report),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// The one asking may not do this: someone a gate does not allow.
    #[error("{0}")]
    Forbidden(String),
    /// Something vwf needs is not there: no agent backend configured, the database cannot be reached.
    #[error("{0}")]
    Unavailable(String),
    /// Every run slot stayed taken: 503 with `Retry-After`; nothing was written.
    #[error("{0}")]
    Busy(String),
    /// The agent backend failed.
    #[error("{0}")]
    BadGateway(String),
    /// The store cannot take what it was given now (a full disk: 507; out of reach: 503), with
    /// `Retry-After`. `public` is what a client is told (no file or table of the server's);
    /// `detail` the whole error, for the CLI and the log.
    #[error("{detail}")]
    Storage { status: u16, public: String, detail: String },
    #[error("{0}")]
    Internal(String),
}

impl Failure {
    pub fn status(&self) -> u16 {
        match self {
            Failure::Refused(_) => 200,
            Failure::BadRequest(_) => 400,
            Failure::NotFound(_) => 404,
            Failure::Conflict(_) => 409,
            Failure::Forbidden(_) => 403,
            Failure::Unavailable(_) | Failure::Busy(_) => 503,
            Failure::BadGateway(_) => 502,
            Failure::Storage { status, .. } => *status,
            Failure::Internal(_) => 500,
        }
    }

    /// Seconds after which the same request may succeed, for the `Retry-After` header.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            Failure::Busy(_) => Some(limits::BUSY_RETRY_AFTER_SECONDS),
            Failure::Storage { status: 503 | 507, .. } => Some(STORE_RETRY_AFTER_SECONDS),
            _ => None,
        }
    }

    /// [`Failure::body`] for the operator's own tools (the CLI's `--json`): a store failure's
    /// whole error, with the file or database it is about, instead of the line a client gets.
    pub fn body_with_detail(&self) -> Value {
        match self {
            Failure::Storage { detail, .. } => to_body(&Error { ok: No, error: detail.clone() }),
            other => other.body(),
        }
    }

    /// The contract's body: `{ok:false, error}`, with `errors` for a design problem.
    pub fn body(&self) -> Value {
        match self {
            Failure::Refused(report) => to_body(&Refusal::of(report)),
            Failure::Storage { public, .. } => to_body(&Error { ok: No, error: public.clone() }),
            other => to_body(&Error { ok: No, error: other.to_string() }),
        }
    }
}

/// An HTTP handler answers `Result<_, Failure>`: a failure is its status with `{ok:false, error}`.
impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        // A store out of reach is said once by the store itself (see `vwf_store::pg`), not by
        // every request it refuses meanwhile.
        if let Failure::Storage { detail, status, .. } = &self
            && *status != 503
        {
            tracing::error!(error = %detail, "the store failed");
        }
        let status = StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = self.retry_after();
        let mut response = (status, axum::Json(self.body())).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
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
        let storage = |status: u16, public: &str, e: &StoreError| Failure::Storage {
            status,
            public: public.to_string(),
            detail: vwf_exec::error_chain(e),
        };
        match &e {
            StoreError::NotFound(_) => Failure::NotFound(e.to_string()),
            StoreError::Exists(_) | StoreError::Busy(_) => Failure::Conflict(e.to_string()),
            StoreError::Corrupt { .. } | StoreError::Unreadable { .. } => Failure::Internal(e.to_string()),
            StoreError::Full { .. } => storage(507, "the store is full: nothing was saved; try again once it has room", &e),
            StoreError::Unavailable { .. } => storage(503, "the store cannot be reached now: nothing was saved; try again later", &e),
            StoreError::Io { .. } => storage(500, "the store failed: nothing more was saved; the server's log says why", &e),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::BadRequest(m) => Failure::BadRequest(m),
            EngineError::UnknownNode(m) => Failure::NotFound(m),
            EngineError::Conflict(m) => Failure::Conflict(m),
            EngineError::Forbidden(m) => Failure::Forbidden(m),
        }
    }
}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::NotConfigured(m) => Failure::Unavailable(m),
            BackendError::Failed(m) => Failure::BadGateway(m),
        }
    }
}

impl From<Busy> for Failure {
    fn from(busy: Busy) -> Self {
        Failure::Busy(busy.to_string())
    }
}

/// The one place a runtime error becomes a status (SPEC §13).
impl From<RunError> for Failure {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Refused(report) => Failure::Refused(report),
            RunError::Config(m) => Failure::Internal(m),
            RunError::Rejected(m) => Failure::BadRequest(m),
            RunError::NotFound(m) => Failure::NotFound(m),
            RunError::Conflict(m) => Failure::Conflict(m),
            RunError::Backend(e) => e.into(),
            RunError::Store(e) => e.into(),
            RunError::Engine(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            (Failure::Busy("slots taken".into()), 503),
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

    /// A full or unreachable store answers 507 or 503 with `Retry-After`, and its body names no
    /// file of the server's (the detail, with the path, is for the log and the CLI).
    #[test]
    fn a_store_that_cannot_write_answers_without_its_paths() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let cases = [
            (StoreError::io("cannot write /srv/home/workflow-runs/d7b493cae249.json", full), 507),
            (
                StoreError::Unavailable {
                    action: "cannot reach /run/pg.sock".into(),
                    source: std::sync::Arc::new(vwf_store::Cause("refused".into())),
                },
                503,
            ),
            (StoreError::other("cannot write /srv/home/workflow-runs/x.json", "EIO"), 500),
        ];
        for (error, status) in cases {
            let failure = Failure::from(error);
            assert!(failure.to_string().contains("/srv/home") || failure.to_string().contains("/run/pg.sock"), "the detail keeps the path");
            let response = failure.into_response();
            assert_eq!(response.status().as_u16(), status);
            if status != 500 {
                assert_eq!(response.headers().get(header::RETRY_AFTER).and_then(|v| v.to_str().ok()), Some("30"));
            }
            let bytes = runtime.block_on(axum::body::to_bytes(response.into_body(), 1 << 16)).expect("body");
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains('/'), "{text}");
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
