//! Gates answered from chat buttons: a tap on a Telegram inline keyboard (a `callback_query`,
//! read by `getUpdates` long polling or posted to `/channels/telegram/updates`) or on a Slack
//! Block Kit button (posted to `/channels/slack/interactions`, signed by Slack).
//!
//! Invariants:
//! - A tap answers only the gate its button names, and only when the button's signature holds
//!   (see [`vwf_core::approvers::Button`]): a forged or damaged button records nothing.
//! - Only allowed people answer: the platform's `allowed_users` in the config and the gate's
//!   `approvers.allowed` must each allow the tapper when set, and with neither set nobody may
//!   answer by button. Anyone else is told so, politely, and nothing is recorded.
//! - The answer goes through the same engine call as every other surface (the same checks, one
//!   winner per answer slot), `by` the platform identity (`telegram:<user id>`,
//!   `slack:<user id>`), `via` the platform.
//! - Every tap gets a reply in the chat: the answer taken (and the message edited to show who
//!   answered what), a vote counted, or why not (someone answered already, the gate timed out,
//!   the answer needs the run page's form).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use vwf_store::Wait;

use serde_json::{Value, json};
use vwf_core::approvers::Button;
use vwf_core::names::{PassId, RunId, StepPath};
use vwf_core::run::{Pending, Reply, Response, Run, RunFailure};
use vwf_exec::deliver::gate::{self, TelegramAnswers, TelegramBot};
use vwf_runtime::app::App;
use vwf_runtime::runner::Answer;

use crate::failure::Failure;
use crate::service::Service;

/// How long one `getUpdates` long poll waits for a tap.
const POLL_WAIT_SECONDS: u64 = 10;
/// The least time between two polls (a peer that answers at once must not be asked in a loop),
/// and the pause after a failed one.
const POLL_EVERY: Duration = Duration::from_millis(500);
const POLL_RETRY: Duration = Duration::from_secs(5);
/// Bounds the chat calls made after a tap.
const REPLY_TIMEOUT: Duration = Duration::from_secs(15);

/// One tap on a gate's button.
#[derive(Debug, Clone)]
pub struct Tap {
    /// `telegram` or `slack`.
    pub platform: &'static str,
    /// The button's data.
    pub data: String,
    /// The tapper's user id on the platform.
    pub user: String,
    /// The platform's id of this tap (`telegram:<callback query id>`, `slack:<digest of the
    /// signed request>`): delivered twice, it counts once.
    pub id: String,
    /// How to name the tapper in the chat (`@ann`), else the id.
    pub name: Option<String>,
}

/// What the chat is told after a tap.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// A short note to the tapper.
    pub note: String,
    /// Whether the note should stop them (a refusal) rather than pass by.
    pub alert: bool,
    /// The line the gate's message gains (who answered what), when the tap was taken.
    pub line: Option<String>,
    /// Whether the gate is decided (its buttons go).
    pub decided: bool,
}

impl Verdict {
    fn refused(note: impl Into<String>) -> Verdict {
        Verdict { note: note.into(), alert: true, line: None, decided: false }
    }
}

/// Takes a tap: checks the button and the tapper, answers the gate, says what happened. `None`
/// when the button is not one vwf makes at all (another program's, on a shared bot): it is left
/// for that program. `key` is the platform's button key, `allowed_users` its
/// `[channels.*] allowed_users`.
pub fn take(app: &App, tap: &Tap, key: &[u8; 32], allowed_users: &[String]) -> Option<Verdict> {
    if !tap.data.starts_with("g1:") {
        return None;
    }
    Some(judge(app, tap, key, allowed_users))
}

fn judge(app: &App, tap: &Tap, key: &[u8; 32], allowed_users: &[String]) -> Verdict {
    let forged = || Verdict::refused("This button was not made by this vwf (or it is damaged); nothing was recorded.");
    let Some(button) = Button::parse(&tap.data) else { return forged() };
    let Ok(run_id) = RunId::parse(&button.run_id) else { return forged() };
    let service = Service::new(app);
    let run = match service.open(&run_id) {
        Ok(run) => run,
        Err(Failure::NotFound(_)) => return forged(),
        Err(e) => return Verdict::refused(format!("vwf cannot read this run now: {}", public(&e))),
    };
    let platform_id = format!("{}:{}", tap.platform, tap.user);
    let person = app.drivers.config.person(tap.platform, &tap.user).map(str::to_string);
    // Every parked gate whose digest the button names, its signature checked for each (two ids
    // may share the 32-bit digest).
    let parked = run.parked().iter().find_map(|p| match p {
        Pending::Approval { node, options, approvers, run_id: None, .. } => {
            let own = node.own()?;
            (button.names(own.as_str()) && button.verify(key, own.as_str())).then_some((own, options, approvers))
        }
        _ => None,
    });
    let Some((node, options, approvers)) = parked else {
        return match gate_named(&run, &button, key) {
            Some(node) => Verdict::refused(closed(&run, &node)),
            None => forged(),
        };
    };
    let Some(option) = options.get(button.option).cloned() else { return forged() };
    let gate_allows = approvers.as_ref().map(|a| a.allowed.clone()).unwrap_or_default();
    // A person `[people]` names answers under that name (via the platform), unless the gate
    // allows their platform id and not the name.
    let identity = match person {
        Some(name) if gate_allows.is_empty() || gate_allows.contains(&name) => name,
        _ => platform_id.clone(),
    };
    let who = tap.name.clone().unwrap_or_else(|| identity.clone());
    let config_allows = allowed_users.iter().any(|u| u == &tap.user);
    let gate_allows_them = gate_allows.contains(&identity) || gate_allows.contains(&platform_id);
    let allowed = match (allowed_users.is_empty(), gate_allows.is_empty()) {
        (true, true) => false,
        (false, true) => config_allows,
        (true, false) => gate_allows_them,
        (false, false) => config_allows && gate_allows_them,
    };
    if !allowed {
        return Verdict::refused("Sorry, you are not one of the people who may answer this gate; nothing was recorded.");
    }
    let node = node.clone();
    let reply = Reply {
        answer: option.clone(),
        by: Some(identity.clone()),
        via: Some(tap.platform.to_string()),
        tap: Some(tap.id.clone()),
        ..Reply::default()
    };
    match service.respond(&run_id, &StepPath::from(&node), Answer::Respond(Response::Answer(reply))) {
        Ok(after) => {
            let waiting = after.parked().iter().find_map(|p| match p {
                Pending::Approval { node: n, votes, approvers, .. } if *n == node => {
                    let same = votes.iter().filter(|v| v.answer == option).count();
                    Some((same, approvers.as_ref().map_or(1, |a| a.required)))
                }
                _ => None,
            });
            let decided_by_this =
                after.outputs().get(node.as_str()).and_then(|o| o.get("by")).and_then(Value::as_str) == Some(identity.as_str());
            match waiting {
                Some((given, required)) => Verdict {
                    note: format!("Counted: {option} ({given} of {required})."),
                    alert: false,
                    line: Some(format!("☑ {option} — {who} ({given} of {required})")),
                    decided: false,
                },
                // Ended meanwhile some other way (its deadline passed as it was read): said so.
                None if !decided_by_this => Verdict::refused(closed(&after, &node)),
                None => Verdict {
                    note: format!("Answered: {option}."),
                    alert: false,
                    line: Some(format!("✅ {option} — {who}")),
                    decided: true,
                },
            }
        }
        Err(Failure::BadRequest(m)) if m.contains("fields.") => {
            let page = vwf_runtime::runner::public_url(&app.drivers.config.server)
                .map_or_else(|| "the run page".to_string(), |base| format!("{base}/#/runs/{run_id}"));
            Verdict::refused(format!("This answer needs the gate's form: open {page}"))
        }
        Err(Failure::Forbidden(_)) => {
            Verdict::refused("Sorry, you are not one of the people who may answer this gate; nothing was recorded.")
        }
        Err(Failure::Conflict(m)) => match service.open(&run_id) {
            Ok(run) if !run.parked().iter().any(|p| *p.node() == node) => Verdict::refused(closed(&run, &node)),
            _ => Verdict::refused(m),
        },
        Err(e) => Verdict::refused(format!("The answer was not taken: {}", public(&e))),
    }
}

/// What a failure may say in a chat: the text a client of the API would get.
fn public(f: &Failure) -> String {
    f.body()["error"].as_str().unwrap_or("an error").to_string()
}

/// The gate of `run` a button names, found among its steps when it no longer waits (its MAC
/// checked too).
fn gate_named(run: &Run, button: &Button, key: &[u8; 32]) -> Option<PassId> {
    run.plan().steps.iter().find(|s| button.names(&s.id) && button.verify(key, &s.id)).map(|s| PassId::top(s.id.clone()))
}

/// What a tap on a gate that no longer waits is told: who answered, or that it timed out.
fn closed(run: &Run, node: &PassId) -> String {
    if let Some(out) = run.outputs().get(node.as_str())
        && let Some(answer) = out.get("answer").and_then(Value::as_str)
    {
        let by = out.get("by").and_then(Value::as_str).map(|b| format!(" by {b}")).unwrap_or_default();
        return format!("Already answered: {answer}{by}.");
    }
    if run.failed_node() == Some(node) && run.error().is_some_and(RunFailure::is_approval_timeout) {
        return "Too late: this gate timed out and the run went on without an answer.".into();
    }
    format!("This run no longer waits for this answer (it is {}).", run.status().as_str())
}

// ---- Telegram ------------------------------------------------------------------------------

/// Takes one Telegram update: a `callback_query` is a tap (anything else is ignored), and the chat
/// is answered (`answerCallbackQuery`) and the message edited to show the answer.
pub fn telegram_update(app: &App, update: &Value) {
    let Some(channel) = &app.drivers.config.channels.telegram else { return };
    let Some(key) = gate::telegram_key(channel) else { return };
    let q = &update["callback_query"];
    let (Some(query_id), Some(user)) = (q["id"].as_str(), id_text(&q["from"]["id"])) else { return };
    let name = q["from"]["username"].as_str().map(|u| format!("@{u}")).or_else(|| q["from"]["first_name"].as_str().map(str::to_string));
    let data = q["data"].as_str().unwrap_or_default().to_string();
    let tap = Tap { platform: "telegram", data, user, name, id: format!("telegram:{query_id}") };
    let Some(verdict) = take(app, &tap, &key, &channel.allowed_users) else { return };
    let Ok(bot) = TelegramBot::new(channel, REPLY_TIMEOUT) else { return };
    if let Err(e) = bot.answer_tap(query_id, &verdict.note, verdict.alert) {
        tracing::warn!(error = %e, "answering a Telegram tap failed");
    }
    let message = &q["message"];
    if let (Some(line), Some(message_id)) = (&verdict.line, message["message_id"].as_i64()) {
        let text = format!("{}\n\n{line}", message["text"].as_str().unwrap_or_default());
        let markup = if verdict.decided { None } else { message.get("reply_markup") };
        if let Err(e) = bot.edit(&message["chat"]["id"], message_id, &text, markup) {
            tracing::warn!(error = %e, "editing a gate's Telegram message failed");
        }
    }
}

/// Polls Telegram for taps (`getUpdates`) on its own thread until `stop`, while `active` says
/// this server keeps the home's timers (one poller per bot: Telegram refuses a second), and only
/// when the config asks for polling.
pub fn start_telegram_poller(app: &Arc<App>, active: Arc<AtomicBool>, stop: Arc<AtomicBool>) {
    if !polls_telegram(app) {
        return;
    }
    let app = app.clone();
    let spawned = std::thread::Builder::new().name("vwf-telegram".into()).spawn(move || poll_telegram(&app, &active, &stop));
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the Telegram poller; gates are not answered from Telegram");
    }
}

/// Whether the config asks vwf to poll Telegram for taps (a bot token and `answers = "poll"`,
/// the default).
pub fn polls_telegram(app: &App) -> bool {
    let Some(channel) = &app.drivers.config.channels.telegram else { return false };
    match TelegramAnswers::of(channel) {
        Ok(TelegramAnswers::Poll) => channel.token_env.is_some(),
        Ok(_) => false,
        Err(e) => {
            tracing::warn!("{e}; gates are not answered from Telegram");
            false
        }
    }
}

/// The poll loop: each batch of taps is taken on threads of their own (each with a run slot),
/// and the next poll confirms the batch (its `offset`). A tap taken twice after a crash finds
/// its answer given and says so.
///
/// It polls only while some saved design has a gate that notifies Telegram (looked at every
/// [`DESIGNS_RECHECK`], and at once when this process sends a keyboard): a bot that only
/// delivers messages, perhaps shared with another program that reads its updates, is left alone.
pub fn poll_telegram(app: &App, active: &AtomicBool, stop: &AtomicBool) {
    let Some(channel) = &app.drivers.config.channels.telegram else { return };
    let mut offset = 0i64;
    let mut last_error = String::new();
    let (mut wanted, mut next_check, mut sent) = (false, Instant::now(), gate::telegram_keyboards_sent());
    while !stop.load(Ordering::SeqCst) {
        let began = Instant::now();
        if gate::telegram_keyboards_sent() != sent {
            sent = gate::telegram_keyboards_sent();
            (wanted, next_check) = (true, began + DESIGNS_RECHECK);
        } else if began >= next_check {
            (wanted, next_check) = (designs_notify_telegram(app), began + DESIGNS_RECHECK);
        }
        if !active.load(Ordering::SeqCst) || !wanted {
            pause(stop, POLL_EVERY);
            continue;
        }
        let polled =
            TelegramBot::new(channel, Duration::from_secs(POLL_WAIT_SECONDS + 10)).and_then(|bot| bot.updates(offset, POLL_WAIT_SECONDS));
        match polled {
            Ok(updates) => {
                last_error.clear();
                if let Some(last) = updates.iter().filter_map(|u| u["update_id"].as_i64()).max() {
                    offset = offset.max(last + 1);
                }
                std::thread::scope(|scope| {
                    for update in &updates {
                        let taken = std::thread::Builder::new().name("vwf-tap".into()).spawn_scoped(scope, move || {
                            let _slot = app.slots.as_ref().map(|g| g.wait());
                            telegram_update(app, update);
                        });
                        if let Err(e) = taken {
                            tracing::warn!(error = %e, "cannot start a thread for a Telegram tap; taking it here");
                            telegram_update(app, update);
                        }
                    }
                });
                pause(stop, POLL_EVERY.saturating_sub(began.elapsed()));
            }
            Err(e) => {
                let text = e.to_string();
                if text != last_error {
                    tracing::warn!(error = %text, "polling Telegram for gate answers failed; trying again");
                    last_error = text;
                }
                pause(stop, POLL_RETRY);
            }
        }
    }
}

/// How often the poller looks again whether any design's gate notifies Telegram.
const DESIGNS_RECHECK: Duration = Duration::from_secs(60);

/// Whether a saved design has an approval gate whose `notify` names a Telegram chat.
fn designs_notify_telegram(app: &App) -> bool {
    let Ok(names) = app.store.list_designs().wait() else { return true };
    names.iter().filter_map(|n| vwf_core::names::DesignName::parse(n).ok()).any(|name| {
        app.store.load_design(&name).wait().is_ok_and(|design| {
            design["nodes"].as_array().is_some_and(|nodes| {
                nodes.iter().any(|n| {
                    n["type"] == "approval"
                        && n["notify"]
                            .as_array()
                            .is_some_and(|t| t.iter().any(|t| t.as_str().is_some_and(|t| t.trim().starts_with("telegram:"))))
                })
            })
        })
    })
}

/// Sleeps `d`, waking early when `stop` is set.
fn pause(stop: &AtomicBool, d: Duration) {
    let end = Instant::now() + d;
    while !stop.load(Ordering::SeqCst) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())));
    }
}

/// Whether a Telegram webhook post carries the configured `secret_token` (constant time).
pub fn telegram_webhook_allowed(app: &App, given: Option<&str>) -> bool {
    use subtle::ConstantTimeEq;
    let Some(channel) = &app.drivers.config.channels.telegram else { return false };
    if TelegramAnswers::of(channel) != Ok(TelegramAnswers::Webhook) {
        return false;
    }
    let secret = channel.webhook_secret_env.as_deref().and_then(|v| std::env::var(v.trim()).ok()).filter(|s| !s.trim().is_empty());
    match (secret, given) {
        (Some(secret), Some(given)) => bool::from(secret.trim().as_bytes().ct_eq(given.trim().as_bytes())),
        _ => false,
    }
}

// ---- Slack ---------------------------------------------------------------------------------

/// Why a Slack interaction post is refused (401), before anything is read from it.
pub fn slack_verify(app: &App, header: &dyn Fn(&str) -> Option<String>, body: &[u8]) -> Result<(), String> {
    let not_set = |why: String| {
        tracing::warn!("a Slack interaction was refused: {why}");
        "this server takes no Slack interactions".to_string()
    };
    let Some(channel) = &app.drivers.config.channels.slack else { return Err(not_set("no Slack channel is configured".into())) };
    let Some(env) = channel.signing_secret_env.as_deref() else {
        return Err(not_set("[channels.slack] names no signing_secret_env".into()));
    };
    let secret = std::env::var(env.trim()).ok().filter(|s| !s.trim().is_empty()).ok_or_else(|| not_set(format!("{env} is not set")))?;
    let hook = vwf_core::webhook::WebhookTrigger {
        path: String::new(),
        secret_env: env.to_string(),
        scheme: vwf_core::webhook::Scheme::Slack,
        header: String::new(),
        tolerance_seconds: SLACK_TOLERANCE_SECONDS,
    };
    vwf_core::webhook::verify(&hook, header, body, secret.trim().as_bytes(), app.clock.now()).map(drop).map_err(|r| r.to_string())
}

/// How old a Slack request may be (Slack's own advice: five minutes).
pub const SLACK_TOLERANCE_SECONDS: u64 = 300;

/// Takes a verified Slack interaction (`payload=<json>`, form-encoded): a tap on a gate's button
/// is answered through the `response_url` (the message replaced when the gate is decided, a note
/// only the tapper sees otherwise).
pub fn slack_interaction(app: &App, body: &[u8], signature: &str) {
    let Some(channel) = &app.drivers.config.channels.slack else { return };
    let Some(key) = gate::slack_key(channel) else { return };
    let Some(payload) =
        url::form_urlencoded::parse(body).find(|(k, _)| k == "payload").and_then(|(_, v)| serde_json::from_str::<Value>(&v).ok())
    else {
        return;
    };
    if payload["type"] != "block_actions" {
        return;
    }
    let Some(action) =
        payload["actions"].as_array().and_then(|a| a.iter().find(|a| a["action_id"].as_str().is_some_and(|i| i.starts_with("vwf_gate_"))))
    else {
        return;
    };
    let Some(user) = id_text(&payload["user"]["id"]) else { return };
    let name = payload["user"]["username"].as_str().or(payload["user"]["name"].as_str()).map(|u| format!("@{u}"));
    let data = action["value"].as_str().unwrap_or_default().to_string();
    let tap = Tap { platform: "slack", data, user, name, id: format!("slack:{}", tap_digest(signature)) };
    let Some(verdict) = take(app, &tap, &key, &channel.allowed_users) else { return };
    let Some(response_url) = payload["response_url"].as_str() else { return };
    let answer = if verdict.decided {
        // The message's text as Slack keeps it (already escaped), and our line escaped.
        let original = payload["message"]["text"].as_str().unwrap_or_default();
        let text = format!("{original}\n\n{}", gate::slack_escape(verdict.line.as_deref().unwrap_or_default()));
        json!({"replace_original": true, "text": text})
    } else {
        json!({"response_type": "ephemeral", "replace_original": false, "text": gate::slack_escape(&verdict.note)})
    };
    if let Err(e) = gate::slack_respond(channel, response_url, &answer, REPLY_TIMEOUT) {
        tracing::warn!(error = %e, "answering a Slack tap failed");
    }
}

/// A short digest of a signed request, naming the tap it carries.
fn tap_digest(signature: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(signature.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A platform id (a number or a string) as text.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() && s.len() <= 64 => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}
