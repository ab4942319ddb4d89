//! The parts of a request a handler takes, checked before it runs: path parameters parsed into
//! their types (a bad one is a 400 before any path is built from it), the JSON body as an object,
//! and the switches and arguments read from queries and bodies.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use vwf_core::limits::REQUEST_BODY_BYTES;
use vwf_core::names::{DesignName, RunId};

use crate::contract;
use crate::failure::Failure;

use super::api::error;

// ---- request parts ----

/// A value a path parameter must parse as before a handler runs.
pub(crate) trait PathValue: Sized {
    fn parse_path(text: &str) -> Result<Self, String>;
}

impl PathValue for DesignName {
    fn parse_path(text: &str) -> Result<Self, String> {
        DesignName::parse(text)
    }
}

impl PathValue for RunId {
    fn parse_path(text: &str) -> Result<Self, String> {
        RunId::parse(text)
    }
}

/// The one path parameter of a route, parsed: `Valid<DesignName>` for `{name}`, `Valid<RunId>`
/// for `{run_id}`. A bad one is a 400 with the rule it breaks, before any path is built from it
/// and before the body is read.
pub(crate) struct Valid<T>(pub T);

impl<S: Send + Sync, T: PathValue + Send> FromRequestParts<S> for Valid<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Path(text) = Path::<String>::from_request_parts(parts, state).await.map_err(IntoResponse::into_response)?;
        T::parse_path(&text).map(Valid).map_err(|e| Failure::BadRequest(e).into_response())
    }
}

/// The JSON object a POST carries: an empty body is `{}` (every body field is optional somewhere);
/// anything else must be a JSON object sent as `application/json`, at most 1 MiB.
pub(crate) struct JsonArgs(pub(super) Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonArgs {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let json_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
            .is_some_and(|m| m == "application/json" || (m.starts_with("application/") && m.ends_with("+json")));
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            let status = rejection.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                error(
                    status,
                    format!("request body is larger than {} MiB ({REQUEST_BODY_BYTES} bytes)", REQUEST_BODY_BYTES / (1024 * 1024)),
                )
            } else {
                error(status, format!("cannot read the request body: {}", rejection.body_text()))
            }
        })?;
        // No body at all means no arguments; a body of only whitespace is JSON that is not there.
        if bytes.is_empty() {
            return Ok(JsonArgs(Map::new()));
        }
        if !json_type {
            return Err(error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "send the request body as JSON with Content-Type: application/json".into(),
            ));
        }
        match vwf_core::json::parse_slice(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonArgs(map)),
            Ok(_) => Err(Failure::BadRequest("the request body must be a JSON object".into()).into_response()),
            Err(e) => Err(Failure::BadRequest(e.about("the request body is")).into_response()),
        }
    }
}

/// A POST's body read as the contract type `T` (`contract::requests`): the [`JsonArgs`] object,
/// parsed; a body that does not fit is a 400 naming the field.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let JsonArgs(args) = JsonArgs::from_request(request, state).await?;
        contract::parse(Value::Object(args)).map(Body).map_err(IntoResponse::into_response)
    }
}

/// A route's query read as the contract type `T` (`contract::queries`); a value that does not fit
/// is a 400 quoting it.
pub(crate) struct Queried<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Queried<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Query(pairs) = Query::<HashMap<String, String>>::from_request_parts(parts, state).await.map_err(IntoResponse::into_response)?;
        contract::queries::parse_query(&pairs).map(Queried).map_err(IntoResponse::into_response)
    }
}
