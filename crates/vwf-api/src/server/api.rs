//! The routes of SPEC §13 under `/api/plugins/visual-workflow`, and the router around them.
//!
//! The handlers (`handlers.rs`) take their parts through `extract.rs`. Each checks what it was
//! given (names and run ids by the `Valid` extractor before any path is built, query values, the
//! body's JSON shape), then calls the operation the CLI calls
//! (the service layer, the schedules module, the agent and delivery drivers) inside
//! `spawn_blocking`, or, for the reads that touch only the store (`service::Reads`), awaits it on
//! the runtime; and answers the contract body of its typed answer. No rule of the contract
//! lives here; only the HTTP mapping does: handlers answer `Result<_, Failure>`, a `Failure`
//! becoming its status with `{ok:false, error}`; a design problem stays a 200 with its body.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{from_fn_with_state, map_response};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, delete, get, post};
use serde_json::{Value, json};
use tower_http::compression::CompressionLayer;
use vwf_core::limits::REQUEST_BODY_BYTES;

use crate::assets::{self, WebFile};
use crate::failure::Failure;
use crate::service::Service;
use vwf_runtime::app::App;

use super::handlers::*;
use super::live::Live;
use super::security::{self, Guard};
use vwf_runtime::gate::{Gate, Slot};

/// Where the API is mounted.
pub const API_PREFIX: &str = "/api/plugins/visual-workflow";
/// Where Telegram posts taps on gate buttons (`[channels.telegram] answers = "webhook"`).
pub const TELEGRAM_UPDATES_PATH: &str = "/channels/telegram/updates";
/// Slack's interactivity request URL for gate buttons.
pub const SLACK_INTERACTIONS_PATH: &str = "/channels/slack/interactions";

/// `GET /runs` without `limit`, and the most it may ask for.
pub(crate) use crate::contract::requests::RUNS_DEFAULT;

#[derive(Clone)]
pub(crate) struct AppState {
    pub(super) app: Arc<App>,
    /// Whether an API token guards the API (the OpenAPI document then requires it).
    pub(super) secured: bool,
    /// What long-poll reads share (see `live`).
    pub(super) live: Live,
    /// The run slots that run, respond and retry take (see `gate`).
    pub(super) gate: Arc<Gate>,
}

/// One route of the API: the router mounts `handler` at `API_PREFIX + path`, and the OpenAPI
/// document describes it from the same entry (parameters, body and answers by kind, so the
/// document states each one's exact type).
pub(crate) struct Route {
    pub method: &'static str,
    /// Relative to [`API_PREFIX`], with `{param}` segments.
    pub path: &'static str,
    pub summary: &'static str,
    /// What each `{param}` of the path holds, in order.
    pub path_params: &'static [Param],
    /// What its query string holds (`contract::queries`); all of it optional.
    pub query: Option<QueryKind>,
    /// What the JSON request body holds; `None` for routes that read no body.
    pub body: Option<RequestBody>,
    /// What a 200 answer holds.
    pub answer: Answer,
    /// Error statuses this route can answer besides 400 and 403 (which every route can: a
    /// second Host header, a foreign Host or Origin) and 401 (every route, with a token).
    pub errors: &'static [u16],
    pub(crate) handler: fn() -> MethodRouter<AppState>,
}

/// The kinds of path parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Param {
    DesignName,
    RunId,
    JobId,
    ScheduleAction,
    EventName,
    /// A design version's number (1, 2, …).
    Version,
}

/// The kinds of query strings (each a type in `contract::queries`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum QueryKind {
    Models,
    Diff,
    Validate,
    Runs,
    Run,
    Stats,
}

/// The kinds of request bodies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum RequestBody {
    /// `{graph}`: the design document to save.
    Save,
    /// `{graph?}`: a design document to validate instead of the saved one.
    Validate,
    /// `{input?, wait?}`: the trigger input of a manual run; `wait: false` answers once it started.
    Run,
    /// The schedule object of SPEC §10 with `paused?`.
    Schedule,
    /// Any object; a schedule problem is the answer, not an error.
    Preview,
    /// `{node, answer | output | agent_generate: true}`.
    Respond,
    /// `{payload?}`.
    Emit,
    /// `{from?}`: `failed` (the default) or `start`.
    Retry,
    /// `{document, overwrite?}`: an agent.json document.
    Import,
    /// `{version}`: the version to restore.
    Restore,
    /// `{node, output | from_run | remove: true}`: a step's pin.
    Pin,
}

/// The kinds of 200 answers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Answer {
    Models,
    Profiles,
    Channels,
    Designs,
    Templates,
    /// `{ok:true, graph}`, or the template list on the old `/designs/templates` path.
    Design,
    Saved,
    /// `{ok:true, name, deleted:true, schedule}`.
    Deleted,
    /// `{ok:true, name, enabled}`, or the design's refusal.
    Enabled,
    /// `{ok:true, name, versions: [{version, hash, saved_at, nodes, edges}]}`.
    Versions,
    /// `{ok:true, name, version, hash, saved_at, graph}`.
    Version,
    /// `{ok:true, name, a, b, nodes, edges, design}`.
    Diff,
    /// `{ok:true, name, restored, version, path}`, or the design's refusal.
    Restored,
    Report,
    /// A run result, or a design's refusal `{ok:false, error, errors}`.
    RunStarted,
    Jobs,
    Job,
    Preview,
    ScheduleAction,
    Runs,
    Run,
    /// `{ok:true, …}` of `vwf_core::stats::Report`.
    Stats,
    Emitted,
    /// The design model (`vwf_core::schema`).
    Schema,
    /// `{ok, designs: [{name, status, …}], notes}`.
    Imported,
    OpenApi,
    /// The Prometheus text format (not JSON).
    Metrics,
}

use Answer as A;
use Param as P;

/// Every route of the API, in the order of SPEC §13 (then the metrics and the OpenAPI document).
pub(crate) const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/models",
        summary: "Model catalog from the agent backend",
        path_params: &[],
        query: Some(QueryKind::Models),
        body: None,
        answer: A::Models,
        errors: &[502, 503],
        handler: || get(models),
    },
    Route {
        method: "GET",
        path: "/profiles",
        summary: "Configured profiles (bots), and the agent backend (null: agent steps park for a person)",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Profiles,
        errors: &[],
        handler: || get(profiles),
    },
    Route {
        method: "GET",
        path: "/channels",
        summary: "Delivery targets from the configured channels",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Channels,
        errors: &[],
        handler: || get(channels),
    },
    Route {
        method: "GET",
        path: "/designs",
        summary: "Saved design names",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Designs,
        errors: &[500],
        handler: || get(list_designs),
    },
    Route {
        method: "GET",
        path: "/templates",
        summary: "Built-in designs from examples/",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Templates,
        errors: &[],
        handler: || get(templates),
    },
    Route {
        method: "GET",
        path: "/designs/{name}",
        summary: "One saved graph (the old /designs/templates answers the template list while no design has that name)",
        path_params: &[P::DesignName],
        query: None,
        body: None,
        answer: A::Design,
        errors: &[404, 500],
        handler: || get(load_design),
    },
    Route {
        method: "POST",
        path: "/designs/{name}",
        summary: "Validate and save a design; with create:true only under a new name (409 if taken)",
        path_params: &[P::DesignName],
        query: None,
        body: Some(RequestBody::Save),
        answer: A::Saved,
        errors: &[409, 413, 415, 500],
        handler: || post(save_design),
    },
    Route {
        method: "DELETE",
        path: "/designs/{name}",
        summary: "Delete a design: its runs stay readable, its schedule job is paused and says why",
        path_params: &[P::DesignName],
        query: None,
        body: None,
        answer: A::Deleted,
        errors: &[404, 500],
        handler: || delete(delete_design),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/enable",
        summary: "Turn the design's automatic trigger (schedule, heartbeat, event, folder, watch) on; imported designs with one arrive disabled",
        path_params: &[P::DesignName],
        query: None,
        body: None,
        answer: A::Enabled,
        errors: &[404, 413, 415, 500],
        handler: || post(enable_design),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/disable",
        summary: "Turn the design's automatic trigger off until it is enabled (a run started by hand still runs)",
        path_params: &[P::DesignName],
        query: None,
        body: None,
        answer: A::Enabled,
        errors: &[404, 413, 415, 500],
        handler: || post(disable_design),
    },
    Route {
        method: "GET",
        path: "/designs/{name}/versions",
        summary: "The design's recorded versions, oldest first (404 once the design is deleted; kept and shown again when the name is saved again)",
        path_params: &[P::DesignName],
        query: None,
        body: None,
        answer: A::Versions,
        errors: &[404, 500],
        handler: || get(list_versions),
    },
    Route {
        method: "GET",
        path: "/designs/{name}/versions/{version}",
        summary: "One recorded version of the design, with its graph",
        path_params: &[P::DesignName, P::Version],
        query: None,
        body: None,
        answer: A::Version,
        errors: &[404, 500],
        handler: || get(load_version),
    },
    Route {
        method: "GET",
        path: "/designs/{name}/diff",
        summary: "How version b differs from version a, node by node and edge by edge",
        path_params: &[P::DesignName],
        query: Some(QueryKind::Diff),
        body: None,
        answer: A::Diff,
        errors: &[404, 500],
        handler: || get(diff_versions),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/pin",
        summary: "Pin a step's output for test runs (typed, or from a past run), or remove the pin; saves the design",
        path_params: &[P::DesignName],
        query: None,
        body: Some(RequestBody::Pin),
        answer: A::Saved,
        errors: &[404, 409, 413, 415, 500],
        handler: || post(pin_step),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/restore",
        summary: "Save an old version's content as the design's newest version",
        path_params: &[P::DesignName],
        query: None,
        body: Some(RequestBody::Restore),
        answer: A::Restored,
        errors: &[404, 409, 413, 415, 500],
        handler: || post(restore_version),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/validate",
        summary: "Validate the saved design, or {graph} if given",
        path_params: &[P::DesignName],
        query: Some(QueryKind::Validate),
        body: Some(RequestBody::Validate),
        answer: A::Report,
        errors: &[404, 413, 415, 500],
        handler: || post(validate_design),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/run",
        summary: "Run a design now, until done or parked (wait:false: answer once started)",
        path_params: &[P::DesignName],
        query: None,
        body: Some(RequestBody::Run),
        answer: A::RunStarted,
        errors: &[404, 409, 413, 415, 500, 503],
        handler: || post(run_design),
    },
    Route {
        method: "GET",
        path: "/schedules",
        summary: "Schedule jobs",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Jobs,
        errors: &[500],
        handler: || get(list_schedules),
    },
    Route {
        method: "POST",
        path: "/designs/{name}/schedule",
        summary: "Create or update the design's schedule job",
        path_params: &[P::DesignName],
        query: None,
        body: Some(RequestBody::Schedule),
        answer: A::Job,
        errors: &[404, 413, 415, 500],
        handler: || post(schedule_design),
    },
    Route {
        method: "POST",
        path: "/schedules/preview",
        summary: "What a schedule object would be, without saving anything",
        path_params: &[],
        query: None,
        body: Some(RequestBody::Preview),
        answer: A::Preview,
        errors: &[413, 415],
        handler: || post(schedule_preview),
    },
    Route {
        method: "POST",
        path: "/schedules/{job_id}/{action}",
        summary: "Pause, resume, run or remove a schedule job (run takes a run slot: 503 when every slot stays taken)",
        path_params: &[P::JobId, P::ScheduleAction],
        query: None,
        body: None,
        answer: A::ScheduleAction,
        errors: &[404, 413, 415, 500, 503],
        handler: || post(schedule_action),
    },
    Route {
        method: "GET",
        path: "/runs",
        summary: "Runs, newest first, filtered, a page at a time",
        path_params: &[],
        query: Some(QueryKind::Runs),
        body: None,
        answer: A::Runs,
        errors: &[404, 500],
        handler: || get(list_runs),
    },
    Route {
        method: "GET",
        path: "/stats",
        summary: "What the runs that ended in a period did, by hour or day: runs by status, failure rate, p50/p95 duration, tokens and cost, the slowest and costliest steps",
        path_params: &[],
        query: Some(QueryKind::Stats),
        body: None,
        answer: A::Stats,
        errors: &[500, 503],
        handler: || get(stats),
    },
    Route {
        method: "GET",
        path: "/runs/{run_id}",
        summary: "One run in result shape",
        path_params: &[P::RunId],
        query: Some(QueryKind::Run),
        body: None,
        answer: A::Run,
        errors: &[404, 500],
        handler: || get(open_run),
    },
    Route {
        method: "POST",
        path: "/runs/{run_id}/respond",
        summary: "Answer a gate, supply or generate an agent step's output",
        path_params: &[P::RunId],
        query: None,
        body: Some(RequestBody::Respond),
        answer: A::Run,
        errors: &[404, 409, 413, 415, 500, 502, 503],
        handler: || post(respond),
    },
    Route {
        method: "POST",
        path: "/runs/{run_id}/retry",
        summary: "Retry a failed run from its failed step, or a finished run from the start",
        path_params: &[P::RunId],
        query: None,
        body: Some(RequestBody::Retry),
        answer: A::Run,
        errors: &[404, 409, 413, 415, 500, 503],
        handler: || post(retry),
    },
    Route {
        method: "POST",
        path: "/events/{name}",
        summary: "Emit an event (fires event triggers; takes a run slot: 503 when every slot stays taken)",
        path_params: &[P::EventName],
        query: None,
        body: Some(RequestBody::Emit),
        answer: A::Emitted,
        errors: &[409, 413, 415, 500, 503],
        handler: || post(emit),
    },
    Route {
        method: "POST",
        path: "/import",
        summary: "Save an agent.json document's workflows as designs (existing names skipped unless overwrite:true)",
        path_params: &[],
        query: None,
        body: Some(RequestBody::Import),
        answer: A::Imported,
        errors: &[413, 415],
        handler: || post(import),
    },
    Route {
        method: "GET",
        path: "/metrics",
        summary: "Metrics in the Prometheus text format (version 0.0.4)",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Metrics,
        errors: &[],
        handler: || get(metrics),
    },
    Route {
        method: "GET",
        path: "/schema",
        summary: "The design model: node types and their fields (kinds, defaults, ranges), trigger modes, schedule presets, limits",
        path_params: &[],
        query: None,
        body: None,
        answer: A::Schema,
        errors: &[],
        handler: || get(schema),
    },
    Route {
        method: "GET",
        path: "/openapi.json",
        summary: "This document",
        path_params: &[],
        query: None,
        body: None,
        answer: A::OpenApi,
        errors: &[],
        handler: || get(openapi_json),
    },
];

/// The whole application: API routes from `ROUTES`, the pages, and the layers that guard every
/// request (§17), cap bodies and turn every error into JSON.
pub(crate) fn router(app: Arc<App>, guard: Arc<Guard>, gate: Arc<Gate>, live: Live) -> Router {
    let mut router = Router::new();
    for route in ROUTES {
        router = router.route(&format!("{API_PREFIX}{}", route.path), (route.handler)());
    }
    // Every server has a token: the configured one or one made at start (see `security`).
    let secured = true;
    let routes = router
        .route_service(crate::mcp::HTTP_PATH, crate::mcp::http_service(app.clone()))
        .route(security::LOGIN_PATH, get(security::login).with_state(guard.clone()))
        .route("/", get(|headers| page("index.html", "dashboard", headers)).layer(CompressionLayer::new()))
        .route("/designer.html", get(|headers| page("designer.html", "canvas", headers)).layer(CompressionLayer::new()))
        .route("/hooks/{path}", post(super::handlers::hook))
        .route(TELEGRAM_UPDATES_PATH, post(super::handlers::telegram_updates))
        .route(SLACK_INTERACTIONS_PATH, post(super::handlers::slack_interactions))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(any(fallback).layer(CompressionLayer::new()))
        .layer(DefaultBodyLimit::max(REQUEST_BODY_BYTES))
        // A handler that awaits the store on the runtime (the read routes) has no blocking task to
        // catch its panic: this answers it as `answered` does.
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
        .route_layer(axum::middleware::map_request(keep_route))
        .with_state(AppState { app: app.clone(), secured, live, gate });
    // The outer layers wrap the whole router (not each route), so they see its own answers too
    // (a 405 with its Allow header) and guard requests before any routing.
    Router::new()
        .fallback_service(routes)
        .layer(from_fn_with_state(guard, security::guard))
        .layer(map_response(json_errors))
        .layer(from_fn_with_state(app, log_request))
}

/// Where the routed layer leaves the route a request matched (its template, e.g.
/// `/api/…/runs/{run_id}`) for the outermost layer, which sees the request before routing.
#[derive(Clone, Default)]
struct RouteSlot(Arc<std::sync::Mutex<Option<String>>>);

async fn keep_route(path: Option<axum::extract::MatchedPath>, request: Request) -> Request {
    if let (Some(p), Some(slot)) = (path, request.extensions().get::<RouteSlot>())
        && let Ok(mut route) = slot.0.lock()
    {
        *route = Some(p.as_str().to_string());
    }
    request
}

/// One log line per request: method, route (the template, or `-` when none matched), path,
/// status and duration; and the request counted in the metrics by method, route and status.
/// Outermost, so refusals by the guard and the router are logged and counted too.
async fn log_request(State(app): State<Arc<App>>, request: Request, next: axum::middleware::Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let slot = RouteSlot::default();
    let mut request = request;
    request.extensions_mut().insert(slot.clone());
    let response = next.run(request).await;
    let route = slot.0.lock().ok().and_then(|r| r.clone()).unwrap_or_else(|| "-".into());
    if let Some(metrics) = &app.metrics {
        metrics.request(method.as_str(), &route, response.status().as_u16());
    }
    tracing::info!(
        method = %method,
        route = %route,
        path = %path,
        status = response.status().as_u16(),
        duration_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
}

// ---- probes ----
//
// For load balancers and service managers: at the root (where they look), outside the API prefix
// and so outside the token and the OpenAPI document. They answer JSON and reveal nothing.

/// Live: the process answers.
async fn healthz() -> Response {
    axum::Json(json!({"ok": true})).into_response()
}

/// Ready: the store can be read (designs and runs listed); else 503 with the reason.
async fn readyz(State(state): State<AppState>) -> Response {
    let store = &state.app.store;
    let probe = match store.list_designs().await {
        Ok(_) => store.list_runs(1).await.map(drop),
        Err(e) => Err(e),
    };
    match probe {
        Ok(()) => axum::Json(json!({"ok": true})).into_response(),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, format!("the store is not reachable: {e}")),
    }
}

// ---- answers ----

/// `{ok:false, error}` with `status`.
pub(crate) fn error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(json!({"ok": false, "error": message}))).into_response()
}

/// What a JSON route answers: the contract body, or the failure's status and `{ok:false, error}`.
pub(super) type Answered = Result<axum::Json<Value>, Failure>;

/// Runs `work` (the service: store, runner, drivers, all blocking) on a blocking thread.
pub(super) async fn blocking(state: &AppState, work: impl FnOnce(&Service<'_>) -> Result<Value, Failure> + Send + 'static) -> Answered {
    let app = state.app.clone();
    answered(tokio::task::spawn_blocking(move || work(&Service::new(&app)))).await
}

/// [`blocking`] for the work of a run route: first takes a run slot (see `gate`), held until
/// `work` returns; no thread is taken while the request waits for the slot. 503 with
/// `Retry-After` when no slot could be had.
pub(super) async fn gated(state: &AppState, work: impl FnOnce(&Service<'_>) -> Result<Value, Failure> + Send + 'static) -> Answered {
    let slot = state.gate.enter().await?;
    let app = state.app.clone();
    answered(tokio::task::spawn_blocking(move || {
        let _slot: Slot = slot;
        work(&Service::new(&app))
    }))
    .await
}

/// The answer of a handler that panicked on the runtime: an internal failure, as in [`answered`].
fn panicked(_: Box<dyn std::any::Any + Send>) -> Response {
    tracing::error!("a request handler panicked");
    error(StatusCode::INTERNAL_SERVER_ERROR, "internal error while handling the request".into())
}

/// The answer of a handler's blocking task; a task that panicked is an internal failure.
async fn answered(task: tokio::task::JoinHandle<Result<Value, Failure>>) -> Answered {
    task.await.map_or_else(
        |e| {
            tracing::error!(error = %e, "a request handler failed");
            Err(Failure::Internal("internal error while handling the request".into()))
        },
        |answer| answer.map(axum::Json),
    )
}

// ---- pages and fallbacks ----

async fn page(file: &'static str, what: &'static str, headers: HeaderMap) -> Response {
    match tokio::task::spawn_blocking(move || assets::web_file(file)).await.ok().flatten() {
        Some(found) => web_answer(&found, &headers),
        None => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], assets::placeholder(what, API_PREFIX)).into_response(),
    }
}

/// A page or asset with its strong `ETag`, or `304 Not Modified` when the client has that
/// version. `no-cache` makes browsers ask again each time, so a new binary's pages show at once.
fn web_answer(file: &WebFile, headers: &HeaderMap) -> Response {
    let cached = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| file.matches(v));
    let status = if cached { StatusCode::NOT_MODIFIED } else { StatusCode::OK };
    let validators = [(header::ETAG, file.etag.clone()), (header::CACHE_CONTROL, "no-cache".to_string())];
    if cached {
        return (status, validators).into_response();
    }
    (status, validators, [(header::CONTENT_TYPE, file.content_type)], file.bytes.clone().into_owned()).into_response()
}

/// Unknown API routes are JSON 404s; other GETs may name a file of the web pages.
async fn fallback(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path().to_string();
    let api = path == API_PREFIX || path.starts_with(&format!("{API_PREFIX}/"));
    if !api && (method == Method::GET || method == Method::HEAD) {
        let wanted = path.clone();
        if let Some(found) = tokio::task::spawn_blocking(move || assets::web_file(&wanted)).await.ok().flatten() {
            return web_answer(&found, &headers);
        }
    }
    let hint = if api { format!("; the routes are listed at {API_PREFIX}/openapi.json") } else { String::new() };
    error(StatusCode::NOT_FOUND, format!("no route for {method} {path}{hint}"))
}

/// Gives every error response without a JSON body (the router's 404/405, extractor rejections)
/// the contract's `{ok:false, error}` body, and marks every answer `nosniff`.
async fn json_errors(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    parts.headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    let status = parts.status;
    let is_json = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return Response::from_parts(parts, body);
    }
    let text = axum::body::to_bytes(body, 64 * 1024).await.map(|b| String::from_utf8_lossy(&b).trim().to_string()).unwrap_or_default();
    let message = if status == StatusCode::METHOD_NOT_ALLOWED {
        let allow = parts.headers.get(header::ALLOW).and_then(|v| v.to_str().ok()).unwrap_or("");
        format!("method not allowed here; this route takes {allow}")
    } else if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let body = json!({"ok": false, "error": message}).to_string();
    Response::from_parts(parts, Body::from(body))
}
