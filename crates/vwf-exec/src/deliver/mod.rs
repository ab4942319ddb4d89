//! The delivery driver: sends an output node's message to Telegram, Slack, Discord or a signed
//! webhook (SPEC §15, §16) and records what the platform answered.
//!
//! Invariants:
//! - never claim: `ok` is true only when the platform acknowledged the send (`ok:true` from the
//!   Telegram and Slack APIs, `ok` from a Slack incoming webhook, a 2xx from Discord or a webhook);
//!   every other answer, a timeout and a network error are failed deliveries with a clear detail;
//! - a signed webhook carries the time of the step (`now`, never the wall clock read here) in
//!   [`TIMESTAMP_HEADER`] and a signature over `<timestamp>.<body>` in [`SIGNATURE_256_HEADER`],
//!   so a receiver can refuse a replayed request; the body-only [`SIGNATURE_HEADER`] is still sent
//!   for one release (deprecated);
//! - secrets (tokens, webhook URLs, signing keys) are read from the environment variables the config
//!   names, at send time, and never appear in a detail: reqwest errors are taken without their URL
//!   and every detail is scrubbed of the secrets read for it;
//! - a failure before anything left the machine says "nothing was sent"; a timeout says the
//!   message may have arrived, because it may have;
//! - redirects are not followed (a redirect would carry the token elsewhere), the whole exchange
//!   is bounded by the output's `timeout_seconds` (15 s unless it says), at most
//!   [`MAX_ANSWER_BYTES`] of an answer are read;
//! - never panics.

use std::io::Read;
use std::time::Duration;

use hmac::{Hmac, Mac};
use reqwest::Url;
use serde_json::{Map, Value, json};
use sha2::Sha256;
use vwf_core::run::Delivery;
use vwf_core::spec::{Deliver, Platform};
use vwf_core::time::Ts;

use crate::config::{ChannelsConfig, SlackChannel, TelegramChannel, WebhookChannel};

pub mod gate;

/// Bounds one delivery exchange (connect, request and answer together) in the tests here.
#[cfg(test)]
const TIMEOUT: Duration = Duration::from_secs(vwf_core::limits::DELIVER_TIMEOUT_DEFAULT);
/// Bytes of a platform's answer read; the acknowledgements are far smaller.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// Characters of an unexpected answer quoted in a detail.
const EXCERPT_CHARS: usize = 300;
/// Deprecated (one more release): the hex HMAC-SHA256 of the webhook body alone, which a
/// receiver cannot tell from a replay. Use [`SIGNATURE_256_HEADER`].
pub const SIGNATURE_HEADER: &str = "X-Vwf-Signature";
/// The Unix time (seconds) of the step that sent a webhook; the `t` of the signature.
pub const TIMESTAMP_HEADER: &str = "X-Vwf-Timestamp";
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, Stripe's scheme: the signature
/// covers the timestamp, so a receiver that checks `t` against its clock refuses old requests.
pub const SIGNATURE_256_HEADER: &str = "X-Vwf-Signature-256";

const TELEGRAM_API: &str = "https://api.telegram.org";
const SLACK_API: &str = "https://slack.com/api";

/// Sends `message` for output node `node` and records the platform's answer. `deliver` is
/// `notification` (target `telegram`/`slack`: that platform's home) or `channel` (target
/// `platform:chat`). Never panics; a failure is a `Delivery` with `ok: false`.
pub fn deliver(config: &ChannelsConfig, deliver: Deliver, target: &str, message: &str, node: &str, now: Ts, timeout: Duration) -> Delivery {
    let send = Send { deliver, target, message, node, now, extra: &Map::new() };
    send.record(config, timeout)
}

impl Send<'_> {
    /// Performs the send and records the platform's answer.
    fn record(&self, config: &ChannelsConfig, timeout: Duration) -> Delivery {
        let (ok, detail) = match self.perform(config, timeout) {
            Ok(detail) => (true, detail),
            Err(e) => (false, e.to_string()),
        };
        Delivery { node: self.node.to_string(), target: self.target.to_string(), ok, detail, at: self.now }
    }
}

/// Why a delivery failed, by whether the message may have reached the platform; the text is the
/// delivery's detail.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeliverError {
    /// Nothing left the machine: the target, the config or a secret was wrong, or the platform
    /// could not be reached.
    #[error("{0}; nothing was sent")]
    NotSent(String),
    /// The request went out but no answer came back (a timeout, a broken answer): the message may
    /// have arrived.
    #[error("{0}; the message may have been sent")]
    MaybeSent(String),
    /// The platform answered and did not acknowledge the send.
    #[error("{0}")]
    Refused(String),
}

impl DeliverError {
    /// The same failure with its text changed (secrets scrubbed).
    fn map_text(self, f: impl Fn(String) -> String) -> DeliverError {
        match self {
            DeliverError::NotSent(t) => DeliverError::NotSent(f(t)),
            DeliverError::MaybeSent(t) => DeliverError::MaybeSent(f(t)),
            DeliverError::Refused(t) => DeliverError::Refused(f(t)),
        }
    }
}

/// The delivery targets the config offers, for `GET /channels`: `{platform, target, home}` with
/// `home` null where the platform has none. Never tokens, URLs or variable names.
pub fn channels(config: &ChannelsConfig) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(t) = &config.telegram {
        out.push(json!({"platform": "telegram", "target": "telegram", "home": t.home}));
    }
    if let Some(s) = &config.slack {
        out.push(json!({"platform": "slack", "target": "slack", "home": s.home}));
    }
    if let Some(d) = &config.discord {
        for name in d.webhooks.keys() {
            out.push(json!({"platform": "discord", "target": format!("discord:{name}"), "home": null}));
        }
    }
    for name in config.webhook.keys() {
        out.push(json!({"platform": "webhook", "target": format!("webhook:{name}"), "home": null}));
    }
    out
}

/// One delivery as the output step asked for it.
struct Send<'a> {
    deliver: Deliver,
    target: &'a str,
    message: &'a str,
    node: &'a str,
    /// When the step runs: the timestamp a signed webhook carries.
    now: Ts,
    /// Keys added to the platform's JSON body (a gate's buttons, its details for a webhook).
    extra: &'a Map<String, Value>,
}

/// Where a target resolved to in the config.
enum Route<'a> {
    Telegram { channel: &'a TelegramChannel, chat: &'a str },
    Slack { channel: &'a SlackChannel, to: &'a str },
    Discord { name: &'a str, url_env: &'a str },
    Webhook { name: &'a str, hook: &'a WebhookChannel },
}

impl Send<'_> {
    fn perform(&self, config: &ChannelsConfig, timeout: Duration) -> Result<String, DeliverError> {
        let route = self.route(config)?;
        let exchange = Exchange::new(timeout)?;
        match route {
            Route::Telegram { channel, chat } => exchange.telegram(channel, chat, self.message, self.extra),
            Route::Slack { channel, to } => exchange.slack(channel, to, self.message, self.extra),
            Route::Discord { name, url_env } => exchange.discord(name, url_env, self.message),
            Route::Webhook { name, hook } => exchange.webhook(name, hook, self),
        }
    }

    /// Resolves the target against the config: the home channel of a notification, or the named
    /// chat, channel, Discord webhook or webhook of a channel delivery.
    fn route<'c>(&'c self, config: &'c ChannelsConfig) -> Result<Route<'c>, DeliverError> {
        let (platform, chat) = match self.deliver {
            Deliver::Notification => (self.target, None),
            Deliver::Channel => match self.target.split_once(':') {
                Some((platform, chat)) if !chat.is_empty() => (platform, Some(chat)),
                _ => return Err(DeliverError::NotSent(format!("deliver: channel takes platform:chat, got {:?}", self.target))),
            },
        };
        let Ok(platform) = platform.parse::<Platform>() else {
            return Err(DeliverError::NotSent(format!("unknown delivery platform {platform:?} (telegram, slack, discord or webhook)")));
        };
        let unconfigured = || DeliverError::NotSent(format!("no {platform} channel is configured"));
        let home = |home: &'c Option<String>| match (chat, home.as_deref().map(str::trim)) {
            (Some(chat), _) => Ok(chat),
            (None, Some(home)) if !home.is_empty() => Ok(home),
            (None, _) => {
                Err(DeliverError::NotSent(format!("channels.{platform} has no home in visual-workflow.toml for deliver: notification")))
            }
        };
        match platform {
            Platform::Telegram => {
                let channel = config.telegram.as_ref().ok_or_else(unconfigured)?;
                Ok(Route::Telegram { channel, chat: home(&channel.home)? })
            }
            Platform::Slack => {
                let channel = config.slack.as_ref().ok_or_else(unconfigured)?;
                Ok(Route::Slack { channel, to: home(&channel.home)? })
            }
            Platform::Discord | Platform::Webhook if chat.is_none() => Err(DeliverError::NotSent(format!(
                "deliver: notification takes telegram or slack (a platform with a home channel), got {platform:?}"
            ))),
            Platform::Discord => {
                let name = chat.unwrap_or_default();
                let hooks = config.discord.as_ref().map(|d| &d.webhooks).filter(|w| !w.is_empty()).ok_or_else(unconfigured)?;
                match hooks.get(name) {
                    Some(url_env) => Ok(Route::Discord { name, url_env }),
                    None => {
                        Err(DeliverError::NotSent(format!("no discord webhook named {name:?} is configured (channels.discord.webhooks)")))
                    }
                }
            }
            Platform::Webhook => {
                let name = chat.unwrap_or_default();
                if config.webhook.is_empty() {
                    return Err(unconfigured());
                }
                match config.webhook.get(name) {
                    Some(hook) => Ok(Route::Webhook { name, hook }),
                    None => Err(DeliverError::NotSent(format!("no webhook named {name:?} is configured (channels.webhook.{name})"))),
                }
            }
        }
    }
}

/// The HTTP side of a delivery: one client, one bounded exchange per send.
struct Exchange {
    client: reqwest::blocking::Client,
    timeout: Duration,
}

/// What a platform answered.
struct Answer {
    status: u16,
    body: String,
}

impl Answer {
    fn json(&self) -> Option<Value> {
        serde_json::from_str(self.body.trim()).ok()
    }

    fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `HTTP 502: <start of the body>`.
    fn describe(&self) -> String {
        let text = self.body.trim();
        if text.is_empty() {
            return format!("HTTP {}", self.status);
        }
        let excerpt: String = text.chars().take(EXCERPT_CHARS).collect();
        let more = if text.chars().count() > EXCERPT_CHARS { "…" } else { "" };
        format!("HTTP {}: {excerpt}{more}", self.status)
    }
}

impl Exchange {
    /// One client for one bounded exchange: no redirects, `timeout` for connect and the whole.
    fn new(timeout: Duration) -> Result<Exchange, DeliverError> {
        let client = reqwest::blocking::Client::builder()
            .user_agent(concat!("visual-workflow/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(timeout)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| DeliverError::NotSent(format!("cannot build the HTTP client: {}", super::error_chain(&e))))?;
        Ok(Exchange { client, timeout })
    }

    /// Telegram Bot API `sendMessage`; `chat` is `<chat>` or `<chat>:<message_thread_id>`.
    fn telegram(&self, channel: &TelegramChannel, chat: &str, message: &str, extra: &Map<String, Value>) -> Result<String, DeliverError> {
        let (chat_id, thread) = telegram_chat(chat)?;
        let token = secret("telegram", "token_env", channel.token_env.as_deref())?;
        let secrets = [token.as_str()];
        let result = (|| {
            let base = api_base("telegram", channel.api_base.as_deref(), TELEGRAM_API)?;
            let url = Url::parse(&format!("{base}/bot{token}/sendMessage"))
                .map_err(|_| DeliverError::NotSent("the telegram token does not fit in a URL".into()))?;
            let mut body = json!({"chat_id": chat_id, "text": message});
            if let Some(thread) = thread {
                body["message_thread_id"] = Value::from(thread);
            }
            merge(&mut body, extra);
            let answer = self.post("telegram", url, json_bytes(&body), &[])?;
            let Some(reply) = answer.json() else {
                return Err(DeliverError::Refused(format!("telegram answered {}", answer.describe())));
            };
            if reply["ok"] == true {
                return Ok(match id_text(&reply["result"]["message_id"]) {
                    Some(id) => format!("message_id {id}"),
                    None => "ok".to_string(),
                });
            }
            let code = reply["error_code"].as_i64().map_or_else(|| answer.status.to_string(), |c| c.to_string());
            let description = reply["description"].as_str().unwrap_or("no description");
            Err(DeliverError::Refused(format!("telegram error {code}: {description}")))
        })();
        scrub(result, &secrets)
    }

    /// Slack: `chat.postMessage` with the bot token when it is set, else the incoming webhook
    /// (whose channel is fixed by Slack when the webhook was created).
    fn slack(&self, channel: &SlackChannel, to: &str, message: &str, extra: &Map<String, Value>) -> Result<String, DeliverError> {
        let token = channel.token_env.as_deref().and_then(env_value);
        let webhook = channel.webhook_url_env.as_deref().and_then(env_value);
        match (token, webhook) {
            (Some(token), _) => {
                let result = (|| {
                    let base = api_base("slack", channel.api_base.as_deref(), SLACK_API)?;
                    let url = Url::parse(&format!("{base}/chat.postMessage"))
                        .map_err(|e| DeliverError::NotSent(format!("bad slack api_base: {e}")))?;
                    let auth = format!("Bearer {token}");
                    let mut body = json!({"channel": to, "text": message});
                    merge(&mut body, extra);
                    let answer = self.post("slack", url, json_bytes(&body), &[("Authorization", auth.as_str())])?;
                    let Some(reply) = answer.json() else {
                        return Err(DeliverError::Refused(format!("slack answered {}", answer.describe())));
                    };
                    if reply["ok"] == true {
                        return Ok(match id_text(&reply["ts"]) {
                            Some(ts) => format!("ts {ts}"),
                            None => "ok".to_string(),
                        });
                    }
                    let error = reply["error"].as_str().unwrap_or("no error code");
                    Err(DeliverError::Refused(format!("slack error: {error}")))
                })();
                scrub(result, &[token.as_str()])
            }
            (None, Some(hook)) => {
                let result = (|| {
                    let url = secret_url(channel.webhook_url_env.as_deref().unwrap_or_default(), &hook)?;
                    let mut body = json!({"text": message});
                    merge(&mut body, extra);
                    let answer = self.post("slack", url, json_bytes(&body), &[])?;
                    if answer.status == 200 && answer.body.trim() == "ok" {
                        Ok("webhook ok".to_string())
                    } else {
                        Err(DeliverError::Refused(format!("slack webhook answered {}", answer.describe())))
                    }
                })();
                scrub(result, &url_secrets(&hook))
            }
            (None, None) => {
                let named: Vec<&str> = [channel.token_env.as_deref(), channel.webhook_url_env.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter(|n| !n.trim().is_empty())
                    .collect();
                Err(match named.as_slice() {
                    [] => {
                        DeliverError::NotSent("channels.slack names neither token_env nor webhook_url_env in visual-workflow.toml".into())
                    }
                    [one] => DeliverError::NotSent(format!("{one} is not set")),
                    [a, b, ..] => DeliverError::NotSent(format!("neither {a} nor {b} is set")),
                })
            }
        }
    }

    /// A Discord webhook, `?wait=true` so that the answer is the created message.
    fn discord(&self, name: &str, url_env: &str, message: &str) -> Result<String, DeliverError> {
        let raw = secret(&format!("discord webhook {name:?}"), "variable", Some(url_env))?;
        let result = (|| {
            let mut url = secret_url(url_env, &raw)?;
            let kept: Vec<(String, String)> =
                url.query_pairs().filter(|(k, _)| k != "wait").map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
            url.query_pairs_mut().clear().extend_pairs(kept).append_pair("wait", "true");
            let answer = self.post("discord", url, json_bytes(&json!({"content": message})), &[])?;
            if !answer.success() {
                return Err(DeliverError::Refused(format!("discord answered {}", answer.describe())));
            }
            Ok(match answer.json().as_ref().and_then(|m| id_text(&m["id"])) {
                Some(id) => format!("message_id {id}"),
                None => format!("http {}", answer.status),
            })
        })();
        scrub(result, &url_secrets(&raw))
    }

    /// A generic webhook: `{"text", "node", "target"}` as JSON with the step's time in
    /// [`TIMESTAMP_HEADER`], signed when `secret_env` is set ([`webhook_headers`]).
    fn webhook(&self, name: &str, hook: &WebhookChannel, send: &Send<'_>) -> Result<String, DeliverError> {
        let Some(raw) = hook.url.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
            return Err(DeliverError::NotSent(format!("channels.webhook.{name} has no url in visual-workflow.toml")));
        };
        let url = Url::parse(raw)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()))
            .ok_or_else(|| DeliverError::NotSent(format!("channels.webhook.{name}.url is not an http(s) URL")))?;
        let key = match hook.secret_env.as_deref() {
            Some(env) => Some(secret(&format!("webhook {name:?}"), "secret_env", Some(env))?),
            None => None,
        };
        let mut body = json!({"text": send.message, "node": send.node, "target": send.target});
        merge(&mut body, send.extra);
        let body = json_bytes(&body);
        let result = (|| {
            let headers = webhook_headers(key.as_deref().map(str::as_bytes), &body, send.now.timestamp())?;
            let headers: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
            let answer = self.post("webhook", url, body, &headers)?;
            if answer.success() {
                Ok(format!("http {}", answer.status))
            } else {
                Err(DeliverError::Refused(format!("webhook answered {}", answer.describe())))
            }
        })();
        let mut secrets = url_secrets(raw);
        secrets.extend(key);
        scrub(result, &secrets)
    }

    /// POSTs JSON `body` and reads the answer. The error never holds the URL.
    fn post(&self, platform: &str, url: Url, body: Vec<u8>, headers: &[(&str, &str)]) -> Result<Answer, DeliverError> {
        let mut request = self.client.post(url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().map_err(|e| self.transport_error(platform, e))?;
        let status = response.status().as_u16();
        let mut bytes = Vec::new();
        response.take(MAX_ANSWER_BYTES).read_to_end(&mut bytes).map_err(|e| {
            let timed_out = e.kind() == std::io::ErrorKind::TimedOut
                || e.get_ref().and_then(|i| i.downcast_ref::<reqwest::Error>()).is_some_and(reqwest::Error::is_timeout);
            if timed_out {
                self.timed_out(platform)
            } else {
                DeliverError::MaybeSent(format!("reading the {platform} answer (HTTP {status}) failed: {}", super::error_chain(&e)))
            }
        })?;
        Ok(Answer { status, body: String::from_utf8_lossy(&bytes).into_owned() })
    }

    fn transport_error(&self, platform: &str, e: reqwest::Error) -> DeliverError {
        if e.is_timeout() {
            return self.timed_out(platform);
        }
        let connect = e.is_connect();
        let text = super::error_chain(&e.without_url());
        if connect {
            DeliverError::NotSent(format!("cannot reach {platform}: {text}"))
        } else {
            DeliverError::MaybeSent(format!("the {platform} request failed: {text}"))
        }
    }

    fn timed_out(&self, platform: &str) -> DeliverError {
        DeliverError::MaybeSent(format!("no answer from {platform} within {} s", self.timeout.as_secs()))
    }
}

/// A telegram chat as `(chat_id, message_thread_id)`: numeric ids go as numbers, `@name` as text.
fn telegram_chat(chat: &str) -> Result<(Value, Option<i64>), DeliverError> {
    let (id, thread) = match chat.split_once(':') {
        Some((id, thread)) => (id, Some(thread)),
        None => (chat, None),
    };
    let id = id.trim();
    if id.is_empty() {
        return Err(DeliverError::NotSent(format!("bad telegram chat {chat:?}")));
    }
    let chat_id = id.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::from(id));
    let thread = match thread {
        Some(t) => Some(
            t.trim()
                .parse::<i64>()
                .map_err(|_| DeliverError::NotSent(format!("bad telegram topic {t:?} in {chat:?} (a message_thread_id is a number)")))?,
        ),
        None => None,
    };
    Ok((chat_id, thread))
}

/// The value of the environment variable `env`, if it is set and not blank.
fn env_value(env: &str) -> Option<String> {
    let name = env.trim();
    if name.is_empty() {
        return None;
    }
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A secret read from the environment variable the config names; the error names the variable,
/// never a value.
fn secret(owner: &str, key: &str, env: Option<&str>) -> Result<String, DeliverError> {
    let Some(name) = env.map(str::trim).filter(|n| !n.is_empty()) else {
        return Err(DeliverError::NotSent(format!("the {owner} channel names no {key} in visual-workflow.toml")));
    };
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_string()),
        Ok(_) | Err(std::env::VarError::NotPresent) => Err(DeliverError::NotSent(format!("{name} is not set"))),
        Err(std::env::VarError::NotUnicode(_)) => Err(DeliverError::NotSent(format!("{name} is not valid UTF-8"))),
    }
}

/// A webhook URL held in environment variable `env`; the error never shows it.
fn secret_url(env: &str, raw: &str) -> Result<Url, DeliverError> {
    Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()))
        .ok_or_else(|| DeliverError::NotSent(format!("{env} does not hold an http(s) URL")))
}

/// `api_base` without its trailing slash, http(s) only.
fn api_base(platform: &str, configured: Option<&str>, default: &str) -> Result<String, DeliverError> {
    let base = configured.map(str::trim).filter(|b| !b.is_empty()).unwrap_or(default).trim_end_matches('/');
    match Url::parse(base) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(base.to_string()),
        _ => Err(DeliverError::NotSent(format!("channels.{platform}.api_base is not an http(s) URL: {base:?}"))),
    }
}

/// Hex HMAC-SHA256 of the concatenated `parts` under `key`.
fn sign(key: &[u8], parts: &[&[u8]]) -> Result<String, DeliverError> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(|e| DeliverError::NotSent(format!("cannot sign the webhook body: {e}")))?;
    for part in parts {
        mac.update(part);
    }
    Ok(hex::encode(mac.finalize().into_bytes()))
}

/// The headers of a webhook POST sent at Unix time `timestamp`: the timestamp always; with a
/// signing `key`, the signature over `<timestamp>.<body>` and the deprecated body-only one.
fn webhook_headers(key: Option<&[u8]>, body: &[u8], timestamp: i64) -> Result<Vec<(&'static str, String)>, DeliverError> {
    let t = timestamp.to_string();
    let mut headers = vec![(TIMESTAMP_HEADER, t.clone())];
    if let Some(key) = key {
        let v1 = sign(key, &[t.as_bytes(), b".", body])?;
        headers.push((SIGNATURE_256_HEADER, format!("t={t},v1={v1}")));
        headers.push((SIGNATURE_HEADER, sign(key, &[body])?));
    }
    Ok(headers)
}

/// Adds `extra`'s keys to the JSON object `body` (a key already there is kept).
fn merge(body: &mut Value, extra: &Map<String, Value>) {
    if let Some(body) = body.as_object_mut() {
        for (k, v) in extra {
            body.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

fn json_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A platform id (`42`, `"1700000000.000100"`) as text.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The parts of a secret URL that must not be shown: the whole URL, its path and query, and every
/// long path segment (Discord and Slack webhook URLs carry their token in the path).
fn url_secrets(raw: &str) -> Vec<String> {
    let raw = raw.trim();
    let mut out = vec![raw.to_string()];
    if let Ok(url) = Url::parse(raw) {
        out.push(url.as_str().to_string());
        if url.path().len() > 1 {
            out.push(url.path().to_string());
        }
        if let Some(q) = url.query() {
            out.push(q.to_string());
        }
        out.extend(url.path_segments().into_iter().flatten().filter(|s| s.len() >= 8).map(str::to_string));
    }
    out
}

/// Replaces every secret in the detail with `***`, longest first.
fn scrub(result: Result<String, DeliverError>, secrets: &[impl AsRef<str>]) -> Result<String, DeliverError> {
    let mut secrets: Vec<&str> = secrets.iter().map(AsRef::as_ref).filter(|s| s.len() >= 4).collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let clean = |mut text: String| {
        for s in &secrets {
            text = text.replace(s, "***");
        }
        text
    };
    result.map(clean).map_err(|e| e.map_text(clean))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

    fn config(text: &str) -> ChannelsConfig {
        toml::from_str::<Config>(text).expect("config").channels
    }

    fn send(deliver: Deliver, target: &str) -> Send<'_> {
        Send {
            deliver,
            target,
            message: "hi",
            node: "send",
            now: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap_or_default(),
            extra: &EMPTY,
        }
    }

    #[test]
    fn channels_are_listed_without_secrets() {
        let c = config(
            "[channels.telegram]\ntoken_env = \"TG\"\nhome = 123456\n[channels.slack]\nwebhook_url_env = \"SW\"\n\
             [channels.discord.webhooks]\nalerts = \"DA\"\n[channels.webhook.audit]\nurl = \"https://h.example/x?k=1\"\nsecret_env = \"WS\"\nfuture = 1\n",
        );
        assert_eq!(
            Value::from(channels(&c)),
            json!([
                {"platform": "telegram", "target": "telegram", "home": "123456"},
                {"platform": "slack", "target": "slack", "home": null},
                {"platform": "discord", "target": "discord:alerts", "home": null},
                {"platform": "webhook", "target": "webhook:audit", "home": null},
            ])
        );
        assert!(channels(&ChannelsConfig::default()).is_empty());
    }

    #[test]
    fn targets_resolve_or_fail_clearly() {
        let c = config("[channels.telegram]\ntoken_env = \"TG\"\n[channels.discord.webhooks]\nalerts = \"DA\"\n");
        let err = |d, t| send(d, t).route(&c).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(err(Deliver::Channel, "slack:#ops"), "no slack channel is configured; nothing was sent");
        assert_eq!(err(Deliver::Channel, "webhook:x"), "no webhook channel is configured; nothing was sent");
        assert!(err(Deliver::Notification, "telegram").contains("channels.telegram has no home"));
        assert!(err(Deliver::Channel, "discord:other").contains("\"other\""));
        assert!(err(Deliver::Notification, "discord").contains("telegram or slack"));
        assert!(err(Deliver::Channel, "telegram").contains("platform:chat"));
        assert!(matches!(send(Deliver::Channel, "telegram:-100:7").route(&c), Ok(Route::Telegram { chat: "-100:7", .. })));
        assert!(matches!(send(Deliver::Channel, "discord:alerts").route(&c), Ok(Route::Discord { url_env: "DA", .. })));
    }

    #[test]
    fn telegram_chats_and_topics() {
        assert_eq!(telegram_chat("-100123:17585").unwrap(), (json!(-100123), Some(17585)));
        assert_eq!(telegram_chat("@news").unwrap(), (json!("@news"), None));
        assert!(telegram_chat("1:x").is_err());
        assert!(telegram_chat("").is_err());
    }

    #[test]
    fn secrets_are_scrubbed_from_details() {
        let url = "https://discord.example/api/webhooks/123/abcdefghijkl";
        let r = scrub(Err(DeliverError::Refused(format!("Cannot POST /api/webhooks/123/abcdefghijkl at {url}"))), &url_secrets(url));
        assert_eq!(r, Err(DeliverError::Refused("Cannot POST *** at ***".to_string())));
        assert_eq!(scrub(Ok("t0ken-x".to_string()), &["t0ken-x"]), Ok("***".to_string()));
    }

    #[test]
    fn signatures_are_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        assert_eq!(
            sign(b"Jefe", &[b"what do ya want", b" for nothing?"]).unwrap(),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn webhook_headers_sign_the_timestamp_and_the_body() {
        let body = br#"{"text":"hi"}"#;
        let headers = webhook_headers(Some(b"Jefe"), body, 1_700_000_000).unwrap();
        let names: Vec<&str> = headers.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, [TIMESTAMP_HEADER, SIGNATURE_256_HEADER, SIGNATURE_HEADER]);
        assert_eq!(headers[0].1, "1700000000");
        let v1 = sign(b"Jefe", &[br#"1700000000.{"text":"hi"}"#]).unwrap();
        assert_eq!(headers[1].1, format!("t=1700000000,v1={v1}"));
        assert_eq!(headers[2].1, sign(b"Jefe", &[body]).unwrap());
        // Another time signs differently: a captured request cannot be given a new timestamp.
        let later = webhook_headers(Some(b"Jefe"), body, 1_700_000_001).unwrap();
        assert_ne!(later[1].1.split_once(",v1=").map(|(_, v)| v), Some(v1.as_str()));
        assert_eq!(later[2].1, headers[2].1);
        // Unsigned: the timestamp alone.
        assert_eq!(webhook_headers(None, body, 5).unwrap(), vec![(TIMESTAMP_HEADER, "5".to_string())]);
    }

    #[test]
    fn a_silent_peer_times_out_without_claiming() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let hold = std::thread::spawn(move || {
            let connection = listener.accept();
            std::thread::sleep(Duration::from_secs(2));
            drop(connection);
        });
        let c = config(&format!("[channels.webhook.slow]\nurl = \"{url}/hook\"\n"));
        let r = send(Deliver::Channel, "webhook:slow").perform(&c, Duration::from_secs(1));
        assert_eq!(r, Err(DeliverError::MaybeSent("no answer from webhook within 1 s".to_string())));
        assert_eq!(r.unwrap_err().to_string(), "no answer from webhook within 1 s; the message may have been sent");
        let _ = hold.join();
    }

    #[test]
    fn a_closed_port_is_a_failed_delivery() {
        let c = config("[channels.webhook.down]\nurl = \"http://127.0.0.1:9/hook\"\n");
        let d = deliver(&c, Deliver::Channel, "webhook:down", "hi", "send", chrono::Utc::now(), TIMEOUT);
        assert!(!d.ok);
        assert!(d.detail.starts_with("cannot reach webhook"), "{}", d.detail);
        // Nothing left the machine, and the error says so by its kind.
        let e = send(Deliver::Channel, "webhook:down").perform(&c, TIMEOUT).unwrap_err();
        assert!(matches!(&e, DeliverError::NotSent(t) if t.starts_with("cannot reach webhook")), "{e:?}");
        assert!(matches!(send(Deliver::Channel, "sms:1").route(&c), Err(DeliverError::NotSent(_))));
        assert!(!d.detail.contains("127.0.0.1"), "{}", d.detail);
    }
}
