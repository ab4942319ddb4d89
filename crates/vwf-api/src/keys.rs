//! Idempotency keys: a request that starts something (a run by hand, an event) may carry a key
//! (`Idempotency-Key` header, `idempotency_key` field, `vwf run --key`, `vwf emit --key`). The
//! first request of a key records it in the store with a fingerprint of what it asked (its
//! target and body) and what it answers; a later request with the key, within `[runs]
//! idempotency_hours` (24 by default), is answered the first one's result and starts nothing,
//! and one asking something else is refused (409) and writes nothing.
//!
//! A run's key answers with the run's id, chosen before the run is made: a second request (even
//! one racing the first, on another instance) makes the same run under that id if it is not
//! made yet, so a crash between recording the key and saving the run loses nothing. An event's
//! key answers with the event's result once it is emitted; a request that arrives while the
//! first is still emitting waits for that answer, a bounded time.

use std::borrow::Cow;
use std::time::Duration;
use vwf_store::Wait;

use schemars::generate::SchemaGenerator;
use schemars::{JsonSchema, Schema, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use vwf_core::names::RunId;
use vwf_runtime::app::App;
use vwf_store::KeyClaim;

use crate::failure::Failure;

/// The longest key.
pub const MAX_LEN: usize = 255;
/// What a key is, for the request schemas.
const RULE: &str = "1 to 255 printable ASCII characters";
/// How long a request waits for the answer of one with its key that is still being answered.
const PATIENCE: Duration = Duration::from_secs(30);
const PAUSE: Duration = Duration::from_millis(20);

/// An idempotency key, checked where it enters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<IdempotencyKey, String> {
        if text.is_empty() || text.len() > MAX_LEN || !text.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err(format!("bad idempotency key: use {RULE}"));
        }
        Ok(IdempotencyKey(text.to_string()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key a webhook delivery to `path` is remembered by: apart from every key a request can
    /// carry (those are printable ASCII; this one starts with a control character), so no caller
    /// of the API can take a delivery's key, nor a delivery a caller's.
    pub fn of_delivery(path: &str, replay_id: &str) -> IdempotencyKey {
        IdempotencyKey(format!("\u{1}hook/{path}/{replay_id}"))
    }

    /// The key of a request that may carry one in a header and one in its body: either, or both
    /// when they are the same (two keys for one request conflict: 409, as a key used twice).
    pub fn either(header: Option<IdempotencyKey>, body: Option<IdempotencyKey>) -> Result<Option<IdempotencyKey>, Failure> {
        match (header, body) {
            (Some(h), Some(b)) if h != b => {
                Err(Failure::Conflict("the Idempotency-Key header and the idempotency_key field differ; give one".into()))
            }
            (h, b) => Ok(h.or(b)),
        }
    }
}

impl<'de> Deserialize<'de> for IdempotencyKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IdempotencyKey::parse(&String::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl JsonSchema for IdempotencyKey {
    fn schema_name() -> Cow<'static, str> {
        "IdempotencyKey".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string", "minLength": 1, "maxLength": MAX_LEN, "pattern": "^[ -~]+$",
            "description": "Makes the request idempotent: a second request with this key within the retention window (24 h) answers the first one's result and starts nothing; the same key with another request is a 409."
        })
    }
}

/// What a request asks, for telling two requests with one key apart.
fn fingerprint(what: &Value) -> String {
    let digest = Sha256::digest(vwf_core::versions::canonical(what).as_bytes());
    format!("sha256:{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// Records `key` for `what` (answering `answer`) unless it is held, and answers the claim kept;
/// a claim of another request is a 409.
fn claim(app: &App, key: &IdempotencyKey, what: &Value, answer: Value) -> Result<KeyClaim, Failure> {
    let now = app.clock.now();
    let window = app.drivers.config.runs.idempotency_hours.saturating_mul(3600);
    let fresh_since = vwf_core::time::sub_seconds_saturating(now, window);
    let mine = KeyClaim::new(key.as_str(), fingerprint(what), now, answer);
    let kept = app.store.claim_key(&mine, fresh_since).wait()?;
    if kept.fingerprint != mine.fingerprint {
        return Err(Failure::Conflict(format!(
            "idempotency key {:?} was used at {} for another request; use a new key for this one",
            key.as_str(),
            vwf_core::time::format(&kept.at)
        )));
    }
    Ok(kept)
}

/// A request with `key` to run `design` with `input`: `start` makes (or, when a racer made it
/// first, answers) the run of the id the key holds. A refused start drops the key's claim, so a
/// refused request leaves nothing behind.
pub fn run<T>(
    app: &App,
    key: &IdempotencyKey,
    design: &str,
    input: &Value,
    test: bool,
    start: impl FnOnce(&RunId) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let what = json!({"run": design, "input": input, "test": test});
    let kept = claim(app, key, &what, Value::String(fresh_id(app, key).to_string()))?;
    let id = kept.answer.as_str().and_then(|id| RunId::parse(id).ok());
    let id =
        id.ok_or_else(|| Failure::Conflict(format!("idempotency key {:?} names no run: it was used for another request", key.as_str())))?;
    start(&id).inspect_err(|_| release(app, key, &kept))
}

/// A webhook delivery remembered by `key` (its replay id): the first makes its run by `start`;
/// the same delivery again is refused (409, naming the run it started) and starts nothing.
pub fn delivery<T>(
    app: &App,
    key: &IdempotencyKey,
    design: &str,
    input: &Value,
    start: impl FnOnce(&RunId) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let what = json!({"hook": design, "input": input});
    let fresh = fresh_id(app, key);
    let kept = claim(app, key, &what, Value::String(fresh.to_string()))?;
    if kept.answer.as_str() != Some(fresh.as_str()) {
        let first = kept.answer.as_str().and_then(|id| RunId::parse(id).ok());
        let took = match first.filter(|id| app.store.read_run_summary(id).wait().is_ok()) {
            Some(id) => format!("started run {id}"),
            None => "was held by the trigger's debounce or throttle".to_string(),
        };
        return Err(Failure::Conflict(format!(
            "this delivery was received before (at {}) and {took}: a replay starts nothing",
            vwf_core::time::format(&kept.at)
        )));
    }
    start(&fresh).inspect_err(|_| release(app, key, &kept))
}

/// The id a key's run gets when its request is the first: drawn from the key and the moment, so
/// a claim lost to a racer reserves nothing.
fn fresh_id(app: &App, key: &IdempotencyKey) -> RunId {
    let seed = Sha256::digest(format!("{}\0{}", key.as_str(), vwf_core::time::format(&app.clock.now())).as_bytes());
    RunId::from_bytes([seed[0], seed[1], seed[2], seed[3], seed[4], seed[5]])
}

/// Drops the claim `kept` of `key` after its request was refused (a store that cannot is
/// logged: the key then answers 409 until its window ends, never a wrong run).
fn release(app: &App, key: &IdempotencyKey, kept: &KeyClaim) {
    if let Err(e) = app.store.settle_key(key.as_str(), kept.at, None).wait() {
        tracing::warn!(error = %e, "cannot free the idempotency key of a refused request");
    }
}

/// An event's answer under `key`: `emit` runs when this request is the key's first, and its
/// answer is recorded; a later one is answered what the first recorded.
pub fn emit(
    app: &App,
    key: &IdempotencyKey,
    event: &str,
    payload: &Value,
    emit: impl FnOnce() -> Result<Value, Failure>,
) -> Result<Value, Failure> {
    let what = json!({"event": event, "payload": payload});
    // Until it is answered, the claim's answer names the request that made it, so a racer that
    // made the same claim in the same millisecond is told apart.
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| Failure::Internal(format!("cannot get random bytes: {e}")))?;
    let in_flight = json!({IN_FLIGHT: nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()});
    let started = std::time::Instant::now();
    loop {
        let kept = claim(app, key, &what, in_flight.clone())?;
        // This request is the key's first (or the first's claim went stale while it waited).
        if kept.answer == in_flight {
            let answer = emit().inspect_err(|_| release(app, key, &kept))?;
            app.store.settle_key(key.as_str(), kept.at, Some(&answer)).wait()?;
            return Ok(answer);
        }
        if kept.answer.get(IN_FLIGHT).is_none() {
            return Ok(kept.answer);
        }
        if started.elapsed() > PATIENCE {
            return Err(Failure::Conflict(format!(
                "idempotency key {:?}: the request that first carried it (at {}) has not been answered yet; try again later",
                key.as_str(),
                vwf_core::time::format(&kept.at)
            )));
        }
        std::thread::sleep(PAUSE);
    }
}

/// The field of a claim's answer while its request is being answered.
const IN_FLIGHT: &str = "in_flight";
