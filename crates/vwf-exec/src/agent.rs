//! Agent backends (SPEC §14): performs an agent step through an OpenAI-compatible server or an
//! operator-configured command, and answers the model and profile catalogs.
//!
//! Invariants:
//! - Model: the node's `model`, else its profile's `model`, else `[agent] default_model`. A
//!   profile's `backend` overrides `[agent] backend` for the steps that name it.
//! - The API key is read at call time from the variable `api_key_env` names and sent only as
//!   `Authorization: Bearer`; an unset or empty variable sends no header. The key never enters an
//!   outcome or an error: error texts are scrubbed of it in case a server echoes it back.
//! - The step's `timeout_seconds` bounds the whole exchange. A command backend runs in its own
//!   process group, killed once the command exits or times out, so nothing it started outlives it.
//! - Memory stays bounded whatever the backend sends; the engine enforces the inline output limit.
//! - Only "no backend serves this step" is `Unavailable` (503); everything else that stops a
//!   step (unknown profile, no model, a refusing or unreachable server, a failing command) is
//!   `BadGateway` (502) from `generate` and a retryable `Outcome::Failed` from `perform`.
//! - Nothing here panics; every failure is a value.
//!
//! The command backend gets the prompt on standard input and, in its environment, the step's
//! `VWF_AGENT_MODEL`, `VWF_AGENT_PROFILE`, `VWF_AGENT_SYSTEM` and `VWF_AGENT_MAX_TOKENS` when known.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use serde_json::{Map, Value, json};
use vwf_core::limits;
use vwf_core::recovery::Cause;
use vwf_core::run::Outcome;

use super::process;
use crate::config::{BackendKind as Kind, Config};

/// Characters of a backend's answer quoted in an error.
const EXCERPT_CHARS: usize = 300;
/// Bytes of a response body read at most (JSON escaping can make a 1 MiB reply larger).
const BODY_BYTES: u64 = 4 * limits::STEP_OUTPUT_BYTES as u64;
/// Bound of a catalog request (`GET /models`).
const CATALOG_TIMEOUT: Duration = Duration::from_secs(30);
const NO_BACKEND: &str = "no agent backend is configured (set [agent] backend in visual-workflow.toml)";

/// One agent step as the backend sees it.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The rendered prompt.
    pub prompt: &'a str,
    pub profile: Option<&'a str>,
    /// The node's own model, overriding the profile's and the default.
    pub model: Option<&'a str>,
    pub max_tokens: Option<u64>,
    pub timeout: Duration,
}

impl<'a> Request<'a> {
    /// A request with the contract's default timeout and no token cap.
    pub fn new(prompt: &'a str, profile: Option<&'a str>, model: Option<&'a str>) -> Self {
        Request { prompt, profile, model, max_tokens: None, timeout: Duration::from_secs(limits::AGENT_TIMEOUT_DEFAULT) }
    }
}

/// Why the backend gave no answer to a request made on demand (`agent_generate`, the model
/// catalog). The API answers the first with 503 and the second with 502 (SPEC §13).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    /// No backend is configured: agent steps park for a person or a host agent.
    #[error("{0}")]
    NotConfigured(String),
    /// The backend failed, or its configuration cannot be used.
    #[error("{0}")]
    Failed(String),
}

/// Performs an agent task for the runner: parks it when no backend serves it, else the reply or
/// a failure the engine may retry.
pub fn perform(config: &Config, request: &Request<'_>) -> Outcome {
    match Call::resolve(config, request) {
        Ok(None) => Outcome::ParkAgent,
        Ok(Some(call)) => call.perform(config, request).unwrap_or_else(|e| Outcome::Failed { error: e.to_string(), cause: e.cause() }),
        Err(e) => Outcome::failed(e.to_string()),
    }
}

/// A tool the model may call: a saved design, with its argument schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: Map<String, Value>,
}

/// [`perform`] with `tools` offered to the model (the OpenAI-compatible backend's function
/// tools): each call the model makes is answered by `call(name, arguments)` and its result given
/// back, round after round (at most [`limits::AGENT_TOOL_ROUNDS`]), until the model answers with
/// text. Another backend gets the prompt alone.
pub fn perform_with_tools(config: &Config, request: &Request<'_>, tools: &[Tool], call: &mut dyn FnMut(&str, Value) -> Value) -> Outcome {
    match Call::resolve(config, request) {
        Ok(None) => Outcome::ParkAgent,
        Ok(Some(c)) if c.kind == Kind::OpenAi && !tools.is_empty() => c
            .converse(config, request, tools, call)
            .map_err(|e| scrub(config, e))
            .unwrap_or_else(|e| Outcome::Failed { error: e.to_string(), cause: e.cause() }),
        Ok(Some(c)) => c.perform(config, request).unwrap_or_else(|e| Outcome::Failed { error: e.to_string(), cause: e.cause() }),
        Err(e) => Outcome::failed(e.to_string()),
    }
}

/// Performs a parked agent step on request (`agent_generate`): 503 when no backend serves the
/// step, 502 when it could not be performed.
pub fn generate(config: &Config, request: &Request<'_>) -> Result<Outcome, BackendError> {
    match Call::resolve(config, request) {
        Ok(None) => Err(BackendError::NotConfigured(NO_BACKEND.into())),
        Ok(Some(call)) => call.perform(config, request).map_err(|e| BackendError::Failed(e.to_string())),
        Err(e) => Err(BackendError::Failed(e.to_string())),
    }
}

/// The model catalog. `openai`: the server's `GET /models` ids, cached per process until
/// `refresh`; `command`: the configured models (default first, then the profiles'), no network.
pub fn models(config: &Config, refresh: bool) -> Result<Vec<String>, BackendError> {
    match config.agent.backend {
        Kind::None => Err(BackendError::NotConfigured(NO_BACKEND.into())),
        Kind::Command => {
            let mut ids: Vec<String> = Vec::new();
            let configured = config.agent.default_model.iter().chain(config.profiles.values().filter_map(|p| p.model.as_ref()));
            for id in configured.map(|m| m.trim()).filter(|m| !m.is_empty()) {
                if !ids.iter().any(|known| known == id) {
                    ids.push(id.to_string());
                }
            }
            Ok(ids)
        }
        Kind::OpenAi => {
            let base = base_url(config).map_err(|e| BackendError::Failed(e.to_string()))?;
            // Held across the request, so concurrent callers share one fetch.
            let mut cache = CATALOG.lock().unwrap_or_else(PoisonError::into_inner);
            if !refresh
                && let Some((cached_for, ids)) = cache.as_ref()
                && *cached_for == base.as_str()
            {
                return Ok(ids.clone());
            }
            let ids = fetch_models(config, &base).map_err(|e| BackendError::Failed(scrub(config, e).to_string()))?;
            *cache = Some((base.to_string(), ids.clone()));
            Ok(ids)
        }
    }
}

/// The catalog of `models` for the openai backend: (base URL it came from, ids).
static CATALOG: Mutex<Option<(String, Vec<String>)>> = Mutex::new(None);

/// The configured agent backend (`openai` or `command`), or `None` when agent steps park for a
/// person (no backend, or an unknown name, which `models` reports): pages ask `GET /models` only
/// when there is one to ask.
pub fn backend(config: &Config) -> Option<&'static str> {
    match config.agent.backend {
        Kind::None => None,
        kind => Some(kind.as_str()),
    }
}

/// The configured profiles: `[{name, model, system?, backend?}]`, where `model` is the one a step
/// naming the profile uses when it sets none (the profile's, else the default, else null).
pub fn profiles(config: &Config) -> Vec<Value> {
    config
        .profiles
        .iter()
        .map(|(name, p)| {
            let mut entry = Map::new();
            entry.insert("name".into(), Value::from(name.as_str()));
            entry.insert(
                "model".into(),
                p.model.as_ref().or(config.agent.default_model.as_ref()).map_or(Value::Null, |m| Value::from(m.as_str())),
            );
            if let Some(system) = &p.system {
                entry.insert("system".into(), Value::from(system.as_str()));
            }
            if let Some(backend) = p.backend {
                entry.insert("backend".into(), Value::from(backend.as_str()));
            }
            Value::Object(entry)
        })
        .collect()
}

/// Why an agent step could not be performed; the text is the step's error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    /// The configuration does not say how to perform it: the backend, the profile, the model, the
    /// base URL or the agent command is missing or unknown.
    #[error("{0}")]
    Config(String),
    /// The OpenAI-compatible backend was asked and gave no usable reply.
    #[error("{0}")]
    Backend(String),
    /// The agent command gave no reply.
    #[error("{0}")]
    Command(String),
    /// The backend did not answer in time, or answered with a status that is not a success:
    /// `cause` says which, for the step's retry policy (`"timeout"`, `"429"`).
    #[error("{text}")]
    Unanswered { text: String, cause: Cause },
}

impl AgentError {
    /// The same failure with its text changed (the API key taken out).
    fn map_text(self, f: impl FnOnce(String) -> String) -> AgentError {
        match self {
            AgentError::Config(t) => AgentError::Config(f(t)),
            AgentError::Backend(t) => AgentError::Backend(f(t)),
            AgentError::Command(t) => AgentError::Command(f(t)),
            AgentError::Unanswered { text, cause } => AgentError::Unanswered { text: f(text), cause },
        }
    }

    /// How the step failed, for its retry policy.
    pub fn cause(&self) -> Cause {
        match self {
            AgentError::Unanswered { cause, .. } => *cause,
            _ => Cause::Error,
        }
    }
}

/// A request resolved against the config: which backend, model and system prompt.
struct Call<'c> {
    kind: Kind,
    model: Option<String>,
    system: Option<&'c str>,
}

impl<'c> Call<'c> {
    /// `Ok(None)` when no backend serves the step (it parks); `Err` for a configuration gap
    /// (unknown profile or backend name, no model).
    fn resolve(config: &'c Config, request: &Request<'_>) -> Result<Option<Call<'c>>, AgentError> {
        let global = config.agent.backend;
        let profile = match request.profile.filter(|p| !p.is_empty()) {
            None => None,
            Some(name) => match config.profiles.get(name) {
                Some(p) => Some(p),
                // With no backend at all the profile is only a label for whoever answers.
                None if global == Kind::None => return Ok(None),
                None => return Err(AgentError::Config(unknown_profile(config, name))),
            },
        };
        let kind = profile.and_then(|p| p.backend).unwrap_or(global);
        if kind == Kind::None {
            return Ok(None);
        }
        let non_empty = |m: &&str| !m.trim().is_empty();
        let model = request
            .model
            .filter(non_empty)
            .or(profile.and_then(|p| p.model.as_deref()).filter(non_empty))
            .or(config.agent.default_model.as_deref().filter(non_empty))
            .map(|m| m.trim().to_string());
        if kind == Kind::OpenAi && model.is_none() {
            return Err(AgentError::Config(
                "no model for this agent step: set the node's \"model\", its profile's model or [agent] default_model".into(),
            ));
        }
        Ok(Some(Call { kind, model, system: profile.and_then(|p| p.system.as_deref()).filter(|s| !s.is_empty()) }))
    }

    fn perform(&self, config: &Config, request: &Request<'_>) -> Result<Outcome, AgentError> {
        let result = match self.kind {
            Kind::OpenAi => self.chat(config, request),
            Kind::Command => self.command(config, request),
            Kind::None => Err(AgentError::Config(NO_BACKEND.into())),
        };
        result.map_err(|e| scrub(config, e))
    }

    /// `POST {base_url}/chat/completions`.
    fn chat(&self, config: &Config, request: &Request<'_>) -> Result<Outcome, AgentError> {
        self.converse(config, request, &[], &mut |_, _| Value::Null)
    }

    /// `POST {base_url}/chat/completions`, with `tools` offered as function tools when there are
    /// any, round after round: an answer with
    /// `tool_calls` is answered with a `tool` message per call (the call's result as JSON text),
    /// until the model answers with text. The step's timeout bounds each request; tokens add up
    /// over every round.
    fn converse(
        &self,
        config: &Config,
        request: &Request<'_>,
        tools: &[Tool],
        call: &mut dyn FnMut(&str, Value) -> Value,
    ) -> Result<Outcome, AgentError> {
        let model = self.model.as_deref().unwrap_or_default();
        let url = endpoint(&base_url(config)?, "chat/completions");
        let mut messages = Vec::new();
        if let Some(system) = self.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": request.prompt}));
        let offered: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        let (mut tokens, mut calls) = (0u64, Vec::new());
        let mut usage = vwf_core::usage::Usage::default();
        for _ in 0..=limits::AGENT_TOOL_ROUNDS {
            let mut body = json!({"model": model, "messages": messages});
            if !offered.is_empty() {
                body["tools"] = Value::Array(offered.clone());
            }
            if let Some(max) = request.max_tokens {
                body["max_tokens"] = json!(max);
            }
            let answer = exchange(config, client(request.timeout)?.post(url.clone()).json(&body), &url, request.timeout)?;
            if let Some(why) = stopped_short(&answer) {
                return Err(AgentError::Backend(why));
            }
            let reported = &answer["usage"];
            tokens += reported["total_tokens"]
                .as_u64()
                .unwrap_or_else(|| reported["prompt_tokens"].as_u64().unwrap_or(0) + reported["completion_tokens"].as_u64().unwrap_or(0));
            usage.add(&vwf_core::usage::Usage::of_openai(reported));
            let message = &answer["choices"][0]["message"];
            let asked = message["tool_calls"].as_array().filter(|c| !c.is_empty());
            let Some(asked) = asked else {
                let text = reply_text(&answer).ok_or_else(|| {
                    AgentError::Backend(format!(
                        "the agent backend's answer has no choices[0].message.content: {}",
                        excerpt(&answer.to_string())
                    ))
                })?;
                let used = answer["model"].as_str().filter(|m| !m.is_empty()).unwrap_or(model);
                let mut extra = Map::new();
                extra.insert("model".into(), Value::from(used));
                extra.insert("tokens".into(), Value::from(tokens));
                priced(&mut extra, config, used, &usage);
                if !tools.is_empty() {
                    extra.insert("tool_calls".into(), Value::Array(calls));
                }
                return Ok(Outcome::Done { text, extra, tokens });
            };
            messages.push(message.clone());
            for c in asked {
                let id = c["id"].as_str().unwrap_or_default().to_string();
                let name = c["function"]["name"].as_str().unwrap_or_default().to_string();
                // Arguments come as JSON text; a model that sends an object is read as well.
                let args = match &c["function"]["arguments"] {
                    Value::String(text) if text.trim().is_empty() => Ok(json!({})),
                    Value::String(text) => serde_json::from_str::<Value>(text).map_err(|e| format!("its arguments are not JSON: {e}")),
                    Value::Null => Ok(json!({})),
                    other => Ok(other.clone()),
                };
                let result = match args {
                    Ok(args) if tools.iter().any(|t| t.name == name) => call(&name, args),
                    Ok(_) => json!({"ok": false, "error": format!("no tool {name:?}")}),
                    Err(why) => json!({"ok": false, "error": why}),
                };
                calls.push(json!({"name": name, "run_id": result.get("run_id"), "status": result.get("status")}));
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": result.to_string()}));
            }
        }
        Err(AgentError::Backend(format!("the model still called tools after {} rounds; it must answer by then", limits::AGENT_TOOL_ROUNDS)))
    }

    /// The configured argv, prompt on standard input, reply on standard output.
    fn command(&self, config: &Config, request: &Request<'_>) -> Result<Outcome, AgentError> {
        let Some((program, args)) = config.agent.command.split_first().filter(|(p, _)| !p.is_empty()) else {
            return Err(AgentError::Config("the command agent backend needs [agent] command = [\"program\", \"arg\", ...]".into()));
        };
        let mut command = Command::new(program);
        command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let vars = [
            ("VWF_AGENT_MODEL", self.model.clone()),
            ("VWF_AGENT_PROFILE", request.profile.map(String::from)),
            ("VWF_AGENT_SYSTEM", self.system.map(String::from)),
            ("VWF_AGENT_MAX_TOKENS", request.max_tokens.map(|n| n.to_string())),
        ];
        for (name, value) in vars {
            match value {
                Some(v) => command.env(name, v),
                None => command.env_remove(name),
            };
        }
        let child = process::spawn(&mut command, &process::ChildEnv::new(config))
            .map_err(|e| AgentError::Command(format!("cannot start the agent command {program:?}: {e}")))?;
        let stdout = supervise(child, request.prompt, request.timeout).map_err(AgentError::Command)?;
        if stdout.len() > limits::STEP_OUTPUT_BYTES {
            return Err(AgentError::Command(format!(
                "the agent command's reply is over the {}-byte limit for output kept inline",
                limits::STEP_OUTPUT_BYTES
            )));
        }
        let mut text = String::from_utf8_lossy(&stdout).into_owned();
        if text.ends_with('\n') {
            text.pop();
            if text.ends_with('\r') {
                text.pop();
            }
        }
        let mut extra = Map::new();
        extra.insert("model".into(), self.model.clone().map_or(Value::Null, Value::String));
        extra.insert("tokens".into(), Value::from(0));
        Ok(Outcome::Done { text, extra, tokens: 0 })
    }
}

fn unknown_profile(config: &Config, name: &str) -> String {
    let known: Vec<&str> = config.profiles.keys().map(String::as_str).collect();
    let known = if known.is_empty() { "none are configured".to_string() } else { format!("configured: {}", known.join(", ")) };
    format!("unknown profile {name:?} ({known}); add [profiles.{name}] to visual-workflow.toml")
}

/// Why an answer is not the step's text though it came with 200: Hermes's API server (its
/// OpenAI-compatible facade) answers so for an agent that failed or stopped short, saying it in
/// `hermes: {completed, partial, failed, error, error_code}`. `None` for a finished answer, and
/// for every other server (they send no `hermes`).
fn stopped_short(answer: &Value) -> Option<String> {
    let hermes = answer.get("hermes").filter(|h| h.is_object())?;
    let finished = hermes["completed"].as_bool() != Some(false)
        && hermes["partial"].as_bool() != Some(true)
        && hermes["failed"].as_bool() != Some(true);
    (!finished).then(|| {
        let code = hermes["error_code"].as_str().unwrap_or("agent_error");
        let error = hermes["error"].as_str().filter(|e| !e.is_empty()).unwrap_or("no reason given");
        format!("the agent backend stopped short ({code}): {}", excerpt(error))
    })
}

/// The first choice's message text (a string, or the text parts of a content array).
fn reply_text(answer: &Value) -> Option<String> {
    match &answer["choices"][0]["message"]["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}

fn base_url(config: &Config) -> Result<Url, AgentError> {
    let raw = config.agent.base_url.as_deref().map(str::trim).filter(|u| !u.is_empty());
    let raw = raw.ok_or_else(|| {
        AgentError::Config("the openai agent backend needs [agent] base_url (for example \"http://127.0.0.1:11434/v1\")".into())
    })?;
    let url = Url::parse(raw).map_err(|e| AgentError::Config(format!("[agent] base_url is not a URL: {e}")))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(AgentError::Config(format!("[agent] base_url must be http:// or https://, not {other}:"))),
    }
}

/// Adds what the step's model calls used (`usage`, with the model that answered) and cost to its
/// view: `cost` from the `[prices]` table, `null` for a model it does not price.
fn priced(extra: &mut Map<String, Value>, config: &Config, model: &str, usage: &vwf_core::usage::Usage) {
    let mut used = json!(usage);
    used["model"] = Value::from(model);
    extra.insert("usage".into(), used);
    let price = config.prices.models.get(model);
    extra.insert("cost".into(), price.map_or(Value::Null, |p| Value::from(p.cost(usage))));
    if let (Some(_), Some(currency)) = (price, &config.prices.currency) {
        extra.insert("currency".into(), Value::from(currency.clone()));
    }
}

/// `base` with `tail` appended to its path (`.../v1` + `models` = `.../v1/models`).
fn endpoint(base: &Url, tail: &str) -> Url {
    let mut url = base.clone();
    let path = format!("{}/{tail}", url.path().trim_end_matches('/'));
    url.set_path(&path);
    url
}

fn client(timeout: Duration) -> Result<reqwest::blocking::Client, AgentError> {
    reqwest::blocking::Client::builder()
        .user_agent(concat!("visual-workflow/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
        .map_err(|e| AgentError::Backend(format!("cannot build the HTTP client: {e}")))
}

/// The Bearer key, when `api_key_env` names a set, non-empty variable.
fn api_key(config: &Config) -> Option<String> {
    let name = config.agent.api_key_env.as_deref().filter(|n| !n.is_empty())?;
    std::env::var(name).ok().filter(|k| !k.trim().is_empty())
}

/// Sends a request (with the key, if any) and returns its JSON answer; a transport error, a
/// non-2xx status or a body that is not JSON is an error quoting the status and the body.
fn exchange(config: &Config, builder: reqwest::blocking::RequestBuilder, url: &Url, timeout: Duration) -> Result<Value, AgentError> {
    exchange_text(config, builder, url, timeout).map_err(|(text, cause)| match cause {
        Cause::Error => AgentError::Backend(text),
        cause => AgentError::Unanswered { text, cause },
    })
}

/// [`exchange`], its failure as a text and a cause.
fn exchange_text(
    config: &Config,
    builder: reqwest::blocking::RequestBuilder,
    url: &Url,
    timeout: Duration,
) -> Result<Value, (String, Cause)> {
    let plain = |text: String| (text, Cause::Error);
    let mut builder = builder;
    if let Some(key) = api_key(config) {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", key.trim()))
            .map_err(|_| plain("the API key holds characters an HTTP header cannot carry".to_string()))?;
        value.set_sensitive(true);
        builder = builder.header(AUTHORIZATION, value);
    }
    let started = Instant::now();
    let shown = shown(url);
    let late = || (format!("the agent backend did not answer {shown} within {} s", timeout.as_secs()), Cause::Timeout);
    let response = builder.send().map_err(|e| {
        if e.is_timeout() || started.elapsed() >= timeout {
            late()
        } else {
            let cause = if e.is_connect() { Cause::Connect } else { Cause::Error };
            (format!("cannot reach the agent backend at {shown}: {}", super::error_chain(&e.without_url())), cause)
        }
    })?;
    let retry_after = super::http::retry_after(response.headers(), chrono::Utc::now());
    let status = response.status();
    let mut bytes = Vec::new();
    response.take(BODY_BYTES + 1).read_to_end(&mut bytes).map_err(|e| {
        if started.elapsed() >= timeout { late() } else { plain(format!("reading the agent backend's answer from {shown} failed: {e}")) }
    })?;
    let text = String::from_utf8_lossy(&bytes);
    if !status.is_success() {
        let code = status.as_u16();
        return Err((
            format!("the agent backend answered HTTP {code} at {shown}: {}", excerpt(&text)),
            Cause::Status { code, retry_after },
        ));
    }
    if bytes.len() as u64 > BODY_BYTES {
        return Err(plain(format!("the agent backend's answer at {shown} is over {BODY_BYTES} bytes")));
    }
    serde_json::from_slice(&bytes).map_err(|_| {
        plain(format!("the agent backend answered HTTP {} at {shown} with a body that is not JSON: {}", status.as_u16(), excerpt(&text)))
    })
}

/// `GET {base_url}/models` → the ids of `{data:[{id}]}`.
fn fetch_models(config: &Config, base: &Url) -> Result<Vec<String>, AgentError> {
    let url = endpoint(base, "models");
    let answer = exchange(config, client(CATALOG_TIMEOUT)?.get(url.clone()), &url, CATALOG_TIMEOUT)?;
    let data = answer["data"].as_array().ok_or_else(|| {
        AgentError::Backend(format!("the agent backend's model list has no \"data\" array: {}", excerpt(&answer.to_string())))
    })?;
    Ok(data.iter().filter_map(|m| m["id"].as_str()).map(String::from).collect())
}

/// A URL fit for an error: no credentials, no query.
fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.to_string()
}

/// The first characters of a body, on one line.
fn excerpt(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return "(empty body)".into();
    }
    match line.char_indices().nth(EXCERPT_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// `error` without the API key, whatever echoed it.
fn scrub(config: &Config, error: AgentError) -> AgentError {
    match api_key(config).map(|k| k.trim().to_string()).filter(|k| k.len() >= 4) {
        Some(key) => error.map_text(|text| text.replace(&key, "[redacted]")),
        None => error,
    }
}

/// Runs the agent command with `prompt` on its input; its standard output when it exited with 0.
fn supervise(child: std::process::Child, prompt: &str, timeout: Duration) -> Result<Vec<u8>, String> {
    let f = process::supervise(child, Some(prompt.as_bytes().to_vec()), timeout);
    let tail = f.stderr_tail.trim().to_string();
    let with_tail = |msg: String| if tail.is_empty() { msg } else { format!("{msg}\nstderr: {tail}") };
    if f.timed_out {
        return Err(with_tail(format!("the agent command timed out after {} s", timeout.as_secs())));
    }
    let status = f.status.ok_or_else(|| with_tail("the agent command could not be waited for".into()))?;
    match (status.code(), status.signal()) {
        (Some(0), _) => {}
        (Some(code), _) => return Err(with_tail(format!("the agent command exited with code {code}"))),
        (None, Some(signal)) => return Err(with_tail(format!("the agent command was killed by signal {signal}"))),
        (None, None) => return Err(with_tail(format!("the agent command ended abnormally ({status})"))),
    }
    f.stdout
        .ok_or_else(|| with_tail("the agent command exited but a process it started outside its group still holds its output open".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml: &str) -> Config {
        toml::from_str(toml).expect("config")
    }

    #[test]
    fn the_model_comes_from_the_node_then_the_profile_then_the_default() {
        let c = config(
            "[agent]\nbackend = \"openai\"\nbase_url = \"http://x/v1\"\ndefault_model = \"d\"\n[profiles.w]\nmodel = \"p\"\n[profiles.bare]\n",
        );
        let model = |profile, model| Call::resolve(&c, &Request::new("hi", profile, model)).unwrap().unwrap().model;
        assert_eq!(model(Some("w"), Some("n")).as_deref(), Some("n"));
        assert_eq!(model(Some("w"), None).as_deref(), Some("p"));
        assert_eq!(model(Some("bare"), None).as_deref(), Some("d"));
        assert_eq!(model(None, None).as_deref(), Some("d"));
        let err = Call::resolve(&c, &Request::new("hi", Some("nope"), None)).err().unwrap();
        assert!(matches!(&err, AgentError::Config(t) if t.contains("unknown profile \"nope\"")), "{err}");
        assert!(matches!(generate(&c, &Request::new("hi", Some("nope"), None)), Err(BackendError::Failed(_))));
    }

    /// A failure says where it arose: the configuration, the backend or the agent command; its text
    /// is the step's error.
    #[test]
    fn failures_are_typed_by_where_they_arise() {
        let run = |toml: &str| {
            let c = config(toml);
            let request = Request::new("hi", None, None);
            let call = Call::resolve(&c, &request)?.expect("a backend");
            call.perform(&c, &request)
        };
        let bogus = toml::from_str::<Config>("[agent]\nbackend = \"bogus\"\n").unwrap_err().to_string();
        assert!(bogus.contains("agent backend \"bogus\" is unknown: use \"openai\", \"command\" or \"none\""), "{bogus}");
        let e = run("[agent]\nbackend = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\ndefault_model = \"m\"\n").unwrap_err();
        assert!(
            matches!(&e, AgentError::Unanswered { text, cause: Cause::Connect } if text.starts_with("cannot reach the agent backend at http://127.0.0.1:9/v1/chat/completions")),
            "{e:?}"
        );
        let e = run("[agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"exit 1\"]\n").unwrap_err();
        assert_eq!(e, AgentError::Command("the agent command exited with code 1".into()));
        assert_eq!(
            perform(&config("[agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"exit 1\"]\n"), &Request::new("hi", None, None)),
            Outcome::failed(e.to_string())
        );
    }

    #[test]
    fn no_backend_parks_and_a_profile_can_choose_its_own() {
        let c = config("[profiles.local]\nbackend = \"command\"\n");
        assert!(Call::resolve(&c, &Request::new("hi", None, None)).unwrap().is_none());
        assert!(Call::resolve(&c, &Request::new("hi", Some("unknown"), None)).unwrap().is_none());
        assert_eq!(Call::resolve(&c, &Request::new("hi", Some("local"), None)).unwrap().unwrap().kind, Kind::Command);
        assert!(matches!(generate(&c, &Request::new("hi", None, None)), Err(BackendError::NotConfigured(_))));
        assert!(matches!(models(&c, false), Err(BackendError::NotConfigured(_))));
    }

    #[test]
    fn openai_without_a_model_is_a_clear_failure() {
        let c = config("[agent]\nbackend = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n");
        let Outcome::Failed { error, .. } = perform(&c, &Request::new("hi", None, None)) else { panic!("should fail") };
        assert!(error.contains("no model"), "{error}");
    }

    #[test]
    fn endpoints_append_to_the_base_path_and_errors_hide_credentials() {
        let base = Url::parse("http://user:pw@h:1/v1/?k=s").unwrap();
        assert_eq!(endpoint(&base, "models").path(), "/v1/models");
        let shown = shown(&endpoint(&base, "models"));
        assert!(!shown.contains("pw") && !shown.contains("k=s"), "{shown}");
        assert_eq!(excerpt("  a \n b  "), "a b");
        assert_eq!(excerpt(&"x".repeat(400)).chars().count(), EXCERPT_CHARS + 1);
    }

    #[test]
    fn command_catalog_and_profiles_hold_no_secret() {
        let c = config(
            "[agent]\nbackend = \"command\"\ncommand = [\"cat\"]\ndefault_model = \"m1\"\napi_key_env = \"SECRET\"\n\
             [profiles.a]\nmodel = \"m2\"\nsystem = \"be brief\"\n[profiles.b]\nmodel = \"m1\"\n[profiles.c]\nbackend = \"openai\"\n",
        );
        assert_eq!(models(&c, false).unwrap(), vec!["m1", "m2"]);
        assert_eq!(
            Value::Array(profiles(&c)),
            json!([
                {"name": "a", "model": "m2", "system": "be brief"},
                {"name": "b", "model": "m1"},
                {"name": "c", "model": "m1", "backend": "openai"}
            ])
        );
    }
}
