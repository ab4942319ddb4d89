//! The handlers of the routes in `api::ROUTES`: each checks what it was given, calls the service
//! (or the schedules, the drivers) on a blocking thread and answers the contract body of its typed
//! answer, or the failure's status.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use vwf_core::listing::RunFilter;
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;

use crate::assets::{self};
use crate::contract::Both;
use crate::contract::answers::*;
use crate::contract::queries::{DiffQuery, ModelsQuery, RunQuery, RunsQuery, StatsQuery, ValidateQuery, Version};
use crate::contract::requests::*;
use crate::failure::{Failure, guarded};
use crate::keys::IdempotencyKey;
use crate::service::{ContractBody, Draft, Reads, SaveMode, Service};
use vwf_runtime::schedules::JobAction;

use super::live::{self, Follow, Followed};
use super::openapi;
use vwf_runtime::gate::Slot;

use super::api::{Answered, AppState, RUNS_DEFAULT, blocking, error, gated};
use super::extract::*;

// ---- routes ----

pub(super) async fn models(State(s): State<AppState>, Queried(query): Queried<ModelsQuery>) -> Answered {
    let refresh = query.refresh.is_some_and(|f| f.0);
    blocking(&s, move |service| Ok(vwf_exec::agent::models(&service.app.drivers.config, refresh).map(|models| done(Models { models }))?))
        .await
}

pub(super) async fn profiles(State(s): State<AppState>) -> axum::Json<Value> {
    let config = &s.app.drivers.config;
    let profiles = vwf_exec::agent::profiles(config).into_iter().map(Profile).collect();
    axum::Json(done(Profiles { profiles, backend: vwf_exec::agent::backend(config) }))
}

pub(super) async fn channels(State(s): State<AppState>) -> axum::Json<Value> {
    let channels = vwf_exec::deliver::channels(&s.app.drivers.config.channels).into_iter().map(Channel).collect();
    axum::Json(done(Channels { channels }))
}

pub(super) async fn list_designs(State(s): State<AppState>) -> Answered {
    let reads = Reads(&s.app);
    let designs = reads.designs().await?;
    Ok(axum::Json(done(Designs { disabled: reads.disabled(&designs).await, designs })))
}

pub(super) async fn enable_design(State(s): State<AppState>, Valid(name): Valid<DesignName>, JsonArgs(_): JsonArgs) -> Answered {
    blocking(&s, move |service| Ok(service.set_enabled(&name, true)?.body())).await
}

pub(super) async fn disable_design(State(s): State<AppState>, Valid(name): Valid<DesignName>, JsonArgs(_): JsonArgs) -> Answered {
    blocking(&s, move |service| Ok(service.set_enabled(&name, false)?.body())).await
}

pub(super) async fn templates(State(s): State<AppState>) -> Answered {
    blocking(&s, |_| Ok(assets::templates())).await
}

/// The design name whose path the template list had before it moved to `/templates`.
const OLD_TEMPLATES_NAME: &str = "templates";

/// One saved graph. `GET /designs/templates` was the template list before `/templates`: clients
/// of that path still get the list, until a design takes the name (then the design wins, so a
/// design called `templates` is as reachable as any other).
pub(super) async fn load_design(State(s): State<AppState>, Valid(name): Valid<DesignName>) -> Answered {
    match Reads(&s.app).load(&name).await {
        Err(Failure::NotFound(_)) if name.as_str() == OLD_TEMPLATES_NAME => Ok(axum::Json(assets::templates())),
        loaded => Ok(axum::Json(done(Loaded { graph: loaded? }))),
    }
}

/// `{graph}` saves; `{graph, create: true}` saves only under a name no design has (the
/// dashboard's "new design" forms), so a new design never replaces one.
pub(super) async fn save_design(State(s): State<AppState>, Valid(name): Valid<DesignName>, Body(body): Body<SaveRequest>) -> Answered {
    let mode = if body.create == Some(true) { SaveMode::Create } else { SaveMode::Replace };
    let graph = body.graph.0;
    blocking(&s, move |service| Ok(service.save(&name, &graph, mode)?.body())).await
}

/// A version number given in the path: a whole number from 1.
fn version_number(text: &str) -> Result<u64, Failure> {
    Version::read(text).map(|v| v.0).map_err(|e| Failure::BadRequest(format!("version={text:?}: {e}")))
}

pub(super) async fn list_versions(State(s): State<AppState>, Valid(name): Valid<DesignName>) -> Answered {
    Ok(axum::Json(crate::service::versions_body(&name, &Reads(&s.app).versions(&name).await?)))
}

pub(super) async fn load_version(State(s): State<AppState>, Path((name, version)): Path<(String, String)>) -> Answered {
    let name = DesignName::parse(&name).map_err(Failure::BadRequest)?;
    let version = version_number(&version)?;
    Ok(axum::Json(crate::service::version_body(&name, Reads(&s.app).version(&name, version).await?)))
}

pub(super) async fn diff_versions(
    State(s): State<AppState>,
    Valid(name): Valid<DesignName>,
    Queried(query): Queried<DiffQuery>,
) -> Answered {
    let (a, b) = (query.a.map(|v| v.0), query.b.map(|v| v.0));
    Ok(axum::Json(Reads(&s.app).diff(&name, a, b).await?.body()))
}

pub(super) async fn restore_version(
    State(s): State<AppState>,
    Valid(name): Valid<DesignName>,
    Body(body): Body<RestoreRequest>,
) -> Answered {
    let version = body.version.0;
    blocking(&s, move |service| Ok(service.restore(&name, version)?.body())).await
}

/// Pins a step (`output`, or `from_run`: what the step gave in that run) or removes its pin
/// (`remove: true`).
pub(super) async fn pin_step(State(s): State<AppState>, Valid(name): Valid<DesignName>, Body(body): Body<PinRequest>) -> Answered {
    let (node, pin) = body.pin()?;
    blocking(&s, move |service| Ok(service.pin(&name, &node, pin)?.body())).await
}

pub(super) async fn delete_design(State(s): State<AppState>, Valid(name): Valid<DesignName>) -> Answered {
    blocking(&s, move |service| Ok(service.delete(&name)?.body())).await
}

/// The validator's report; with `scope=1` also what each node's templates and condition may name
/// (`scopes`, the rule the report applies), for a canvas that offers only what is in scope.
pub(super) async fn validate_design(
    State(s): State<AppState>,
    Valid(name): Valid<DesignName>,
    Queried(query): Queried<ValidateQuery>,
    Body(body): Body<ValidateRequest>,
) -> Answered {
    let draft = match body.graph {
        Some(graph) => Draft::Graph(graph.0),
        None => Draft::Saved(name),
    };
    let with_scopes = query.scope.is_some_and(|f| f.0);
    blocking(&s, move |service| {
        let report = service.validate(&draft)?;
        let scopes = if with_scopes {
            let graph = match draft {
                Draft::Graph(graph) => Some(graph),
                Draft::Saved(name) => service.load(&name).ok(),
            };
            graph.as_ref().and_then(vwf_core::validate::scopes)
        } else {
            None
        };
        Ok(to_body(&Checked { report, scopes }))
    })
    .await
}

/// Runs a design until it is done or parked; with `wait: false` answers as soon as the run is
/// saved (status `running`) and drives it on in the background, so a page can follow it live.
pub(super) async fn run_design(
    State(s): State<AppState>,
    Valid(name): Valid<DesignName>,
    headers: HeaderMap,
    Body(Both(start, wait)): Body<RunRequest>,
) -> Answered {
    let wait = wait.wait.unwrap_or(true);
    let mut start = start.start()?;
    start.key = IdempotencyKey::either(idempotency_header(&headers)?, start.key)?;
    start.trace = trace_header(&headers);
    if wait {
        return gated(&s, move |service| Ok(service.run(&name, start)?.body())).await;
    }
    let slot = s.gate.enter().await?;
    let app = s.app.clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<Result<Value, Failure>>();
    tokio::task::spawn_blocking(move || {
        // Held while the run is driven on after the answer.
        let _slot: Slot = slot;
        let mut tx = Some(tx);
        let service = Service::new(&app);
        let outcome = guarded(&format!("starting a run of {name}"), || {
            let started = |run: &Run| {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(Ok(run.result()));
                }
            };
            Ok(service.run_then(&name, start, started)?.body())
        });
        // Not started (a refusal, a failure before the run was saved): that is the answer.
        if let Some(tx) = tx.take() {
            let _ = tx.send(outcome);
        }
    });
    rx.await.unwrap_or_else(|_| Err(Failure::Internal("internal error while starting the run".into()))).map(axum::Json)
}

pub(super) async fn list_schedules(State(s): State<AppState>) -> Answered {
    blocking(&s, |service| Ok(crate::service::schedules_body(vwf_runtime::schedules::list(service.app)?))).await
}

pub(super) async fn schedule_design(
    State(s): State<AppState>,
    Valid(name): Valid<DesignName>,
    Body(ScheduleRequest(body)): Body<ScheduleRequest>,
) -> Answered {
    blocking(&s, move |service| {
        let now = service.app.clock.now();
        Ok(vwf_runtime::schedules::upsert(service.app, &name, &body, now).map(|job| done(JobAnswer { job }))?)
    })
    .await
}

/// The dry run of `POST /designs/{name}/schedule`: the same core functions, nothing written. A
/// schedule problem is a 200 `{ok:false, error, field}` (it is the answer a form asks for).
pub(super) async fn schedule_preview(State(s): State<AppState>, Body(PreviewRequest(body)): Body<PreviewRequest>) -> axum::Json<Value> {
    use vwf_core::schedule;
    let now = s.app.clock.now();
    let preview = schedule::schedule_from_value(&body).and_then(|spec| {
        let r = vwf_runtime::schedules::resolve(&spec, now)?;
        let next_run_at = r.next_run_at.map(|t| vwf_core::time::format(&t));
        Ok(Preview::Next(Done { ok: Yes, answer: Resolved { cron: r.cron, human: r.human, tz: r.tz, next_run_at } }))
    });
    let preview = preview.unwrap_or_else(|e| Preview::Problem { ok: No, error: e.message, field: e.field });
    axum::Json(to_body(&preview))
}

/// Pause, resume and remove answer at once; `run` starts a run, so it takes a run slot first.
pub(super) async fn schedule_action(
    State(s): State<AppState>,
    Path((job_id, action)): Path<(String, String)>,
    JsonArgs(_): JsonArgs,
) -> Answered {
    let action = JobAction::parse(&action)?;
    let act = move |service: &Service<'_>| {
        let now = service.app.clock.now();
        Ok(vwf_runtime::schedules::action(service.app, &job_id, action, now)?.body())
    };
    if action.starts_a_run() {
        return gated(&s, act).await;
    }
    blocking(&s, act).await
}

/// `GET /stats`: the report of the runs that ended in the period.
pub(super) async fn stats(State(s): State<AppState>, Queried(query): Queried<StatsQuery>) -> Answered {
    let now = s.app.clock.now();
    let query = vwf_core::stats::Query::new(
        query.design.map(|d| d.0),
        query.from.as_ref().map(|f| f.0.as_str()),
        query.to.as_ref().map(|t| t.0.as_str()),
        query.bucket.map(|b| b.0),
        now,
    )
    .map_err(Failure::BadRequest)?;
    Ok(axum::Json(crate::contract::answers::done(Reads(&s.app).stats(&query).await?)))
}

pub(super) async fn list_runs(State(s): State<AppState>, Queried(query): Queried<RunsQuery>) -> Answered {
    let limit = query.limit.map_or(RUNS_DEFAULT, |l| l.0);
    let filter = RunFilter::parse(
        query.design.as_ref().map(|d| d.0.as_str()),
        query.status.as_ref().map(|s| s.0.as_str()),
        query.trigger.as_ref().map(|t| t.0.as_str()),
        query.id.as_ref().map(|i| i.0.as_str()),
        query.parent.as_ref().map(|p| p.0.as_str()),
    )
    .and_then(|f| {
        f.with_period(
            query.from.as_ref().map(|t| t.0.as_str()),
            query.to.as_ref().map(|t| t.0.as_str()),
            query.min_duration.as_ref().map(|d| d.0.as_str()),
        )
    })
    .map_err(Failure::BadRequest)?;
    let before = query.before.map(|b| b.0);
    let follow = Follow::of(query.since, query.wait);
    let read = move |s: AppState| {
        let (filter, before) = (filter.clone(), before.clone());
        async move {
            blocking(&s, move |service| {
                let page = service.runs(&filter, before.as_ref(), limit)?;
                Ok(done(Runs { runs: page.runs.into_iter().map(Listed).collect(), next: page.next, stamp: None }))
            })
            .await
        }
    };
    following(s, follow, Followed::Listing, read).await
}

/// One run; with `since=`/`wait=` a long-poll read (see `live`).
pub(super) async fn open_run(State(s): State<AppState>, Valid(id): Valid<RunId>, Queried(query): Queried<RunQuery>) -> Answered {
    let with_plan = query.plan.is_some_and(|f| f.0);
    let follow = Follow::of(query.since, query.wait);
    let read = |s: AppState| {
        let id = id.clone();
        async move {
            blocking(&s, move |service| {
                let run = service.open(&id)?;
                let mut result = run.result();
                if with_plan && let Some(obj) = result.as_object_mut() {
                    obj.insert("plan".into(), serde_json::to_value(run.plan()).unwrap_or(Value::Null));
                }
                service.runner().add_queue_place(&mut result);
                Ok(result)
            })
            .await
        }
    };
    following(s, follow, Followed::Run(&id), read).await
}

/// `read` once (a plain read), or as the long-poll read `follow` asks.
pub(super) async fn following<R, F>(s: AppState, follow: Option<Follow>, followed: Followed<'_>, read: R) -> Answered
where
    R: Fn(AppState) -> F,
    F: Future<Output = Answered>,
{
    let Some(follow) = follow else { return read(s).await };
    let live = s.live.clone();
    live::answer(&live, follow, followed, || {
        let answer = read(s.clone());
        async move { answer.await.map(|axum::Json(body)| body) }
    })
    .await
    .map(axum::Json)
}

pub(super) async fn respond(State(s): State<AppState>, Valid(id): Valid<RunId>, Body(body): Body<RespondRequest>) -> Answered {
    let (node, answer) = body.answer("api")?;
    gated(&s, move |service| Ok(service.respond(&id, &node, answer)?.body())).await
}

/// `{"from": "failed"}` (the default) resumes at the failed step; `{"from": "start"}` starts a new
/// run of the design's current version linked to this one.
pub(super) async fn retry(State(s): State<AppState>, Valid(id): Valid<RunId>, Body(body): Body<RetryRequest>) -> Answered {
    if body.from == Some(RetryFrom::Start) {
        return gated(&s, move |service| Ok(service.retry_from_start(&id)?.body())).await;
    }
    gated(&s, move |service| Ok(service.retry(&id)?.body())).await
}

/// Emits an event; the runs it starts (and the runs their emits start) take one run slot, one
/// after another on its thread.
pub(super) async fn emit(
    State(s): State<AppState>,
    Path(event): Path<String>,
    headers: HeaderMap,
    Body(body): Body<EmitRequest>,
) -> Answered {
    let payload = body.payload.unwrap_or(Value::Null);
    let key = IdempotencyKey::either(idempotency_header(&headers)?, body.idempotency_key)?;
    gated(&s, move |service| service.emit_keyed(&event, payload, key.as_ref())).await
}

/// The caller's trace, from a W3C `traceparent` header; one that is not valid is ignored (the
/// run starts a trace of its own), as the W3C recommendation asks.
pub(crate) fn trace_header(headers: &HeaderMap) -> Option<vwf_core::trace::TraceContext> {
    vwf_core::trace::TraceContext::from_traceparent(headers.get("traceparent")?.to_str().ok()?)
}

/// The `Idempotency-Key` header, if the request has one.
fn idempotency_header(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, Failure> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let text = value.to_str().map_err(|_| Failure::BadRequest("bad Idempotency-Key header: use printable ASCII".into()))?;
    IdempotencyKey::parse(text).map(Some).map_err(Failure::BadRequest)
}

/// Imports an agent.json `document`: each workflow is saved as a design, skipped (a design has
/// the name and `overwrite` is not true) or refused with its errors (a 200 `ok:false`, as a
/// design problem is everywhere); `notes` say what could not be mapped.
pub(super) async fn import(State(s): State<AppState>, Body(body): Body<ImportRequest>) -> Answered {
    let (document, overwrite) = (body.document.0, body.overwrite == Some(true));
    blocking(&s, move |service| Ok(service.import(&document, overwrite).body("\"overwrite\": true"))).await
}

/// The metrics, in the Prometheus text format; the parked-runs gauge is counted from the store.
pub(super) async fn metrics(State(s): State<AppState>) -> Response {
    let app = s.app.clone();
    let text = tokio::task::spawn_blocking(move || app.metrics.as_ref().map(|m| m.render(app.store.as_ref())).unwrap_or_default()).await;
    match text {
        Ok(text) => ([(header::CONTENT_TYPE, vwf_runtime::telemetry::CONTENT_TYPE)], text).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot render the metrics: {e}")),
    }
}

pub(super) async fn schema() -> Response {
    axum::Json(vwf_core::schema::schema()).into_response()
}

pub(super) async fn openapi_json(State(s): State<AppState>) -> Response {
    axum::Json(openapi::document(s.secured)).into_response()
}

/// `POST /hooks/{path}`: a signed webhook delivery (see [`crate::hooks`]), without the API token.
/// Answers 202 with the run as soon as it is saved, and drives it on in the background; a refused
/// signature is a 401 (counted by reason), and every refusal writes nothing.
pub(super) async fn hook(State(s): State<AppState>, Path(path): Path<String>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let slot = match s.gate.enter().await {
        Ok(slot) => slot,
        Err(busy) => return Failure::from(busy).into_response(),
    };
    let app = s.app.clone();
    let (tx, rx) = tokio::sync::oneshot::channel::<Result<(StatusCode, Value), crate::hooks::Refused>>();
    tokio::task::spawn_blocking(move || {
        // Held while the run is driven on after the answer.
        let _slot: Slot = slot;
        let mut tx = Some(tx);
        let service = Service::new(&app);
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let started = |run: &Run| {
            if let Some(tx) = tx.take() {
                let _ = tx.send(Ok((StatusCode::ACCEPTED, run.result())));
            }
        };
        let outcome = guarded(&format!("a webhook delivery to /hooks/{path}"), || {
            Ok(crate::hooks::deliver(&service, &path, &header, &body, started).map(|taken| match taken {
                crate::hooks::Taken::Run(run) => (StatusCode::ACCEPTED, run.result()),
                crate::hooks::Taken::Challenge(challenge) => (StatusCode::OK, serde_json::json!({ "challenge": challenge })),
                crate::hooks::Taken::Held(held) => (StatusCode::ACCEPTED, serde_json::to_value(held).unwrap_or(Value::Null)),
            }))
        });
        let outcome = outcome.unwrap_or_else(|f| Err(crate::hooks::Refused::Failed(f)));
        if let Some(tx) = tx.take() {
            let _ = tx.send(outcome);
        }
    });
    match rx.await {
        Ok(Ok((status, body))) => (status, axum::Json(body)).into_response(),
        Ok(Err(crate::hooks::Refused::Unauthorized { reason, message })) => {
            if let Some(metrics) = &s.app.metrics {
                metrics.hook_refused(reason);
            }
            error(StatusCode::UNAUTHORIZED, message)
        }
        Ok(Err(crate::hooks::Refused::Failed(f))) => f.into_response(),
        Err(_) => Failure::Internal("internal error while taking the webhook".into()).into_response(),
    }
}

/// `POST /channels/telegram/updates`: Telegram's webhook for gate buttons (`[channels.telegram]
/// answers = "webhook"`). Only a post carrying the configured `secret_token` is read; the tap is
/// taken after the answer (Telegram wants one at once), with a run slot.
pub(super) async fn telegram_updates(State(s): State<AppState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let given = headers.get("X-Telegram-Bot-Api-Secret-Token").and_then(|v| v.to_str().ok());
    if !crate::buttons::telegram_webhook_allowed(&s.app, given) {
        return error(StatusCode::UNAUTHORIZED, "not a Telegram update for this server (X-Telegram-Bot-Api-Secret-Token)".into());
    }
    let Ok(update) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the update is not JSON".into());
    };
    let (app, gate) = (s.app.clone(), s.gate.clone());
    tokio::task::spawn_blocking(move || {
        let _slot = gate.wait();
        let _ = guarded("a Telegram tap", || {
            crate::buttons::telegram_update(&app, &update);
            Ok(())
        });
    });
    (StatusCode::OK, axum::Json(serde_json::json!({"ok": true}))).into_response()
}

/// `POST /channels/slack/interactions`: Slack's interactivity URL for gate buttons. The
/// signature (`X-Slack-Signature`, v0, five minutes) is checked before anything is read; the tap
/// is taken after the answer (Slack wants one within three seconds) and told through its
/// `response_url`.
pub(super) async fn slack_interactions(State(s): State<AppState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    if let Err(why) = crate::buttons::slack_verify(&s.app, &header, &body) {
        return error(StatusCode::UNAUTHORIZED, format!("not a Slack interaction for this server: {why}"));
    }
    let signature = header("X-Slack-Signature").unwrap_or_default();
    let (app, gate) = (s.app.clone(), s.gate.clone());
    tokio::task::spawn_blocking(move || {
        let _slot = gate.wait();
        let _ = guarded("a Slack tap", || {
            crate::buttons::slack_interaction(&app, &body, &signature);
            Ok(())
        });
    });
    StatusCode::OK.into_response()
}
