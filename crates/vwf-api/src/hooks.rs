//! Signed inbound webhooks: `POST /hooks/<path>` starts a run of the design whose trigger is
//! `{"mode": "webhook", "path": <path>, …}`, without the API token: the sender's signature
//! (checked by [`vwf_core::webhook::verify`] with the secret from the trigger's `secret_env`)
//! stands in for it.
//!
//! What a delivery meets, in order: no design with the path (404); a refused signature (401,
//! counted by reason in `/metrics`); a disabled design (409); a delivery received before within
//! the idempotency window (409, naming the run it started: a replay starts nothing); else the
//! run starts, and the answer (202) comes as soon as it is saved. Every refusal writes nothing.
//! A delivery is remembered by its replay id (its signature, see [`vwf_core::webhook::Verified`])
//! as an idempotency key of the store (see [`crate::keys`]), across processes and instances.

use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::names::DesignName;
use vwf_core::run::{Run, TriggerInfo};
use vwf_core::trigger::{Trigger, TriggerMode};
use vwf_core::webhook::{self, WebhookTrigger};
use vwf_runtime::app::App;
use vwf_runtime::runner::Arrival;
use vwf_store::Wait;

use crate::failure::Failure;
use crate::service::Service;

/// What a delivery that was taken did.
pub enum Taken {
    /// It started this run.
    Run(Box<Run>),
    /// Slack's check of a new Events API URL (`{"type": "url_verification", "challenge"}`,
    /// signed like any delivery): answered with its challenge, and no run.
    Challenge(String),
    /// The trigger's debounce or throttle held it (or dropped it): no run now.
    Held(Held),
}

/// The answer to a delivery the trigger's flow rules held (202): `held` is `debounced`,
/// `deferred` or `dropped`; `starts_at` when a run is to start, `count` the arrivals a burst
/// folds in so far, `reason` why it was dropped.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Held {
    pub ok: bool,
    pub run_id: Option<String>,
    pub held: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Held {
    fn of(arrival: Arrival) -> Result<Held, Box<Run>> {
        let held = Held { ok: true, run_id: None, held: "", starts_at: None, count: None, reason: None };
        Ok(match arrival {
            Arrival::Started(run) => return Err(run),
            Arrival::Debounced { at, count } => {
                Held { held: "debounced", starts_at: Some(vwf_core::time::format(&at)), count: Some(count), ..held }
            }
            Arrival::Deferred { at } => Held { held: "deferred", starts_at: Some(vwf_core::time::format(&at)), ..held },
            Arrival::Dropped(why) => Held { held: "dropped", reason: Some(why), ..held },
        })
    }
}

/// Why a delivery was not taken: a 401 (counted by its reason) or any other failure.
pub enum Refused {
    Unauthorized { reason: &'static str, message: String },
    Failed(Failure),
}

impl From<Failure> for Refused {
    fn from(f: Failure) -> Self {
        Refused::Failed(f)
    }
}

/// Headers a run's input keeps of a delivery (what it is about; never a signature).
const KEPT_HEADERS: [&str; 6] = ["content-type", "user-agent", "x-github-event", "x-github-delivery", "x-github-hook-id", "x-request-id"];

/// The webhook trigger of `design`, if it has one.
fn hook_of(design: &Design) -> Option<WebhookTrigger> {
    match Trigger::parse(&design.trigger()?.raw) {
        Ok(Trigger::Webhook(hook)) => Some(hook),
        _ => None,
    }
}

/// The design whose webhook trigger has `path`, that trigger, and whether the design is enabled.
fn find(app: &App, path: &str) -> Result<(DesignName, WebhookTrigger, bool), Failure> {
    for name in app.store.list_designs().wait()? {
        let Ok(name) = DesignName::parse(&name) else { continue };
        let Ok(graph) = app.store.load_design(&name).wait() else { continue };
        let Some(hook) = Design::from_value(&graph).ok().as_ref().and_then(hook_of) else { continue };
        if hook.path == path {
            return Ok((name, hook, vwf_core::design::is_enabled(&graph)));
        }
    }
    Err(Failure::NotFound(format!("no design takes webhooks at /hooks/{path}")))
}

/// Why `design`, saved as `name`, cannot have its webhook path: another design takes webhooks
/// there already (a path starts one design).
pub fn path_taken(app: &App, name: &DesignName, design: &Design) -> Option<vwf_core::validate::Issue> {
    let hook = hook_of(design)?;
    let (other, _, _) = find(app, &hook.path).ok()?;
    (other != *name).then(|| {
        let id = design.trigger().map(|t| t.id.clone()).unwrap_or_default();
        vwf_core::validate::Issue::node_field(
            &id,
            "path",
            format!("design {other} takes webhooks at /hooks/{} already; choose another path", hook.path),
        )
    })
}

/// A delivery's body as the run's input sees it: JSON when it parses, the fields of a form
/// (Slack's slash commands and actions), else the text.
fn payload(content_type: Option<&str>, body: &[u8]) -> Value {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        return value;
    }
    let text = String::from_utf8_lossy(body).into_owned();
    if content_type.is_some_and(|c| c.starts_with("application/x-www-form-urlencoded")) {
        let fields: Map<String, Value> =
            url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
        return Value::Object(fields);
    }
    Value::String(text)
}

/// Takes the delivery of `body` to `/hooks/<path>` with the headers `header` answers: starts its
/// run (telling `started` once it is saved) or says why not.
pub fn deliver(
    service: &Service<'_>,
    path: &str,
    header: &dyn Fn(&str) -> Option<String>,
    body: &[u8],
    started: impl FnOnce(&Run),
) -> Result<Taken, Refused> {
    let app = service.app;
    if !webhook::is_path(path) {
        return Err(Failure::NotFound(format!("no design takes webhooks at /hooks/{path}")).into());
    }
    let (name, hook, enabled) = find(app, path)?;
    let Some(secret) = std::env::var_os(&hook.secret_env).filter(|s| !s.is_empty()) else {
        tracing::warn!(design = %name, var = %hook.secret_env, "a webhook delivery was refused: the secret's variable is not set");
        return Err(Refused::Unauthorized { reason: "no_secret", message: "the webhook cannot be verified now".into() });
    };
    let secret = secret.into_encoded_bytes();
    let verified = webhook::verify(&hook, header, body, &secret, app.clock.now())
        .map_err(|refusal| Refused::Unauthorized { reason: refusal.reason(), message: format!("webhook refused: {refusal}") })?;
    if !enabled {
        return Err(Failure::Conflict(format!("design {name} is disabled: its webhook starts nothing (vwf enable {name})")).into());
    }
    let mut headers = Map::new();
    for kept in KEPT_HEADERS {
        if let Some(v) = header(kept) {
            headers.insert(kept.to_string(), Value::String(v));
        }
    }
    let payload = payload(header("content-type").as_deref(), body);
    if hook.scheme == webhook::Scheme::Slack
        && payload["type"] == "url_verification"
        && let Some(challenge) = payload["challenge"].as_str()
    {
        return Ok(Taken::Challenge(challenge.to_string()));
    }
    let input = json!({"hook": path, "payload": payload, "headers": headers});
    let key = crate::keys::IdempotencyKey::of_delivery(path, &verified.replay_id);
    let plan = service.runner().compile(&name).map_err(Failure::from)?;
    let mut trigger = TriggerInfo::new(TriggerMode::Webhook, input.clone());
    // A sender that traces its deliveries (a W3C `traceparent`) gets the run in its trace.
    trigger.trace = header("traceparent").and_then(|h| vwf_core::trace::TraceContext::from_traceparent(&h));
    // Every delivery is an arrival: it starts its run now (under the id the delivery reserved),
    // or the trigger's debounce or throttle holds it; a replay is refused either way.
    let arrival = crate::keys::delivery(app, &key, name.as_str(), &input, |id| {
        Ok(service.runner().arrive_with(plan, trigger, |plan, trigger| service.runner().start_as(id, plan, trigger, started))?)
    })?;
    Ok(match Held::of(arrival) {
        Ok(held) => Taken::Held(held),
        Err(run) => Taken::Run(run),
    })
}
