//! Gates that announce themselves (a gate's `notify`), and the platform calls that answer a tap on
//! their buttons.
//!
//! A notice is the gate's question, its context, its deadline and a link to the run page
//! (`[server] public_url`); Telegram gets it with an inline keyboard (one button per option,
//! `callback_data` signed, see [`vwf_core::approvers::Button`]), Slack as Block Kit with a button
//! per option (the same signed data as each button's `value`), a webhook as JSON with the gate's
//! details. A gate whose answer needs its form (a required field, an `edit`) gets no option
//! buttons: the message sends the person to the run page.
//!
//! Invariants: as for every delivery (see the parent module): an announcement is recorded with
//! the platform's real answer, secrets never appear in a detail, redirects are not followed, the
//! exchange is bounded. Buttons are only offered where a tap can come back and be checked:
//! Telegram unless `[channels.telegram] answers = "off"`, Slack when a signing secret is set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Url;
use serde_json::{Map, Value, json};
use vwf_core::approvers::{Button, NotifyTarget, button_key};
use vwf_core::run::{Delivery, Notice};
use vwf_core::spec::Deliver;
use vwf_core::time::{self, Ts};

use super::{DeliverError, Exchange, Send, TELEGRAM_API, api_base, env_value, json_bytes, scrub, secret};
use crate::config::{ChannelsConfig, SlackChannel, TelegramChannel};

/// Characters of an option shown on a button (Slack's limit is 75).
const BUTTON_CHARS: usize = 75;
/// Options per keyboard row on Telegram.
const BUTTONS_PER_ROW: usize = 3;
/// Characters of a Slack section's text (Slack refuses more than 3000).
const SLACK_SECTION_CHARS: usize = 2900;

/// How taps on Telegram buttons reach vwf (`[channels.telegram] answers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TelegramAnswers {
    Poll,
    Webhook,
    Off,
}

impl TelegramAnswers {
    /// The configured way, `Err` naming the key when it is none of the three.
    pub fn of(channel: &TelegramChannel) -> Result<TelegramAnswers, String> {
        match channel.answers.as_deref().map(str::trim) {
            None | Some("") | Some("poll") => Ok(TelegramAnswers::Poll),
            Some("webhook") => Ok(TelegramAnswers::Webhook),
            Some("off") => Ok(TelegramAnswers::Off),
            Some(other) => Err(format!("[channels.telegram] answers is \"poll\", \"webhook\" or \"off\", got {other:?}")),
        }
    }
}

/// The key Telegram buttons are signed with (derived from the bot token), when the token is set.
pub fn telegram_key(channel: &TelegramChannel) -> Option<[u8; 32]> {
    channel.token_env.as_deref().and_then(env_value).map(|t| button_key(t.trim().as_bytes()))
}

/// The key Slack buttons are signed with (derived from the signing secret), when it is set.
pub fn slack_key(channel: &SlackChannel) -> Option<[u8; 32]> {
    channel.signing_secret_env.as_deref().and_then(env_value).map(|t| button_key(t.trim().as_bytes()))
}

/// One gate to announce.
pub struct Announcement<'a> {
    pub run_id: &'a str,
    pub notice: &'a Notice,
    /// The run page (`<public_url>/#/runs/<id>`), when the server's public address is known.
    pub link: Option<String>,
}

impl Announcement<'_> {
    /// The message's text: the question, the context, what to do, the deadline and the link.
    pub fn text(&self) -> String {
        let n = self.notice;
        let mut out = n.question.trim().to_string();
        if !n.context.trim().is_empty() {
            out.push_str("\n\n");
            out.push_str(n.context.trim());
        }
        out.push_str("\n\n");
        if n.needs_form {
            out.push_str("This answer needs its form: open the run page");
            match &self.link {
                Some(link) => out.push_str(&format!(": {link}")),
                None => out.push_str(&format!(" (vwf respond {} {} to answer from a terminal)", self.run_id, n.node)),
            }
        } else {
            out.push_str(&format!("Answers: {}", n.options.join(" / ")));
            if let Some(link) = &self.link {
                out.push_str(&format!("\nRun: {link}"));
            }
        }
        if let Some(d) = n.deadline {
            out.push_str(&format!("\nDeadline: {}", time::format(&d)));
        }
        out
    }

    /// The buttons' data, one per option (none when the answer needs the form).
    fn buttons(&self, key: &[u8; 32]) -> Vec<(String, String)> {
        if self.notice.needs_form {
            return Vec::new();
        }
        let label = |o: &str| vwf_core::approvers::cut(o, BUTTON_CHARS);
        self.notice
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| (label(o), Button::sign(key, self.run_id, self.notice.node.as_str(), i)))
            .collect()
    }

    /// The keys a platform's body gains for `target`: Telegram's inline keyboard, Slack's blocks,
    /// a webhook's gate details.
    fn extra(&self, config: &ChannelsConfig, target: &NotifyTarget) -> Map<String, Value> {
        let mut extra = Map::new();
        match target {
            NotifyTarget::Telegram(_) => {
                let Some(channel) = &config.telegram else { return extra };
                let offered = TelegramAnswers::of(channel).is_ok_and(|a| a != TelegramAnswers::Off);
                let buttons = telegram_key(channel).filter(|_| offered).map(|k| self.buttons(&k)).unwrap_or_default();
                if !buttons.is_empty() {
                    let rows: Vec<Value> = buttons
                        .chunks(BUTTONS_PER_ROW)
                        .map(|row| Value::Array(row.iter().map(|(text, data)| json!({"text": text, "callback_data": data})).collect()))
                        .collect();
                    extra.insert("reply_markup".into(), json!({"inline_keyboard": rows}));
                }
            }
            NotifyTarget::Slack(_) => {
                let section = vwf_core::approvers::cut(&slack_escape(&self.text()), SLACK_SECTION_CHARS);
                let mut blocks = vec![json!({"type": "section", "text": {"type": "mrkdwn", "text": section}})];
                let buttons = config.slack.as_ref().and_then(slack_key).map(|k| self.buttons(&k)).unwrap_or_default();
                if !buttons.is_empty() {
                    let elements: Vec<Value> = buttons
                        .iter()
                        .enumerate()
                        .map(|(i, (text, data))| {
                            json!({"type": "button", "text": {"type": "plain_text", "text": text}, "action_id": format!("vwf_gate_{i}"), "value": data})
                        })
                        .collect();
                    blocks.push(json!({"type": "actions", "block_id": "vwf_gate", "elements": elements}));
                }
                extra.insert("blocks".into(), Value::Array(blocks));
            }
            NotifyTarget::Webhook(_) => {
                let n = self.notice;
                extra.insert("event".into(), json!("gate.opened"));
                extra.insert("run_id".into(), json!(self.run_id));
                extra.insert("question".into(), json!(n.question));
                extra.insert("context".into(), json!(n.context));
                extra.insert("options".into(), json!(n.options));
                extra.insert("deadline".into(), n.deadline.map_or(Value::Null, |d| json!(time::format(&d))));
                extra.insert("link".into(), self.link.as_ref().map_or(Value::Null, |l| json!(l)));
                extra.insert("needs_form".into(), json!(n.needs_form));
            }
        }
        extra
    }
}

/// How many Telegram messages with gate buttons this process sent: a poller waiting for taps
/// wakes when it moves.
static TELEGRAM_KEYBOARDS: AtomicU64 = AtomicU64::new(0);

/// See [`TELEGRAM_KEYBOARDS`].
pub fn telegram_keyboards_sent() -> u64 {
    TELEGRAM_KEYBOARDS.load(Ordering::SeqCst)
}

/// Sends the announcement to each of the notice's targets and records what each platform
/// answered, under the gate's node.
pub fn announce(config: &ChannelsConfig, a: &Announcement<'_>, now: Ts, timeout: Duration) -> Vec<Delivery> {
    let text = a.text();
    a.notice
        .targets
        .iter()
        .map(|written| {
            let target = match written.parse::<NotifyTarget>() {
                Ok(t) => t,
                Err(e) => {
                    return Delivery {
                        node: a.notice.node.to_string(),
                        target: written.clone(),
                        ok: false,
                        detail: format!("{e}; nothing was sent"),
                        at: now,
                    };
                }
            };
            let extra = a.extra(config, &target);
            // Slack reads the fallback text as mrkdwn too: a run's text must not ping or link.
            let text = if matches!(target, NotifyTarget::Slack(_)) { slack_escape(&text) } else { text.clone() };
            let send =
                Send { deliver: Deliver::Channel, target: written, message: &text, node: a.notice.node.as_str(), now, extra: &extra };
            let sent = send.record(config, timeout);
            if sent.ok && extra.contains_key("reply_markup") {
                TELEGRAM_KEYBOARDS.fetch_add(1, Ordering::SeqCst);
            }
            sent
        })
        .collect()
}

/// `&`, `<` and `>` escaped as Slack's mrkdwn wants them.
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The bot calls that answer a tap: the token read from the environment at each call, every
/// error scrubbed of it.
pub struct TelegramBot<'a> {
    channel: &'a TelegramChannel,
    exchange: Exchange,
}

impl<'a> TelegramBot<'a> {
    /// A bot for the configured channel; `timeout` bounds each call (a long poll's own wait
    /// included).
    pub fn new(channel: &'a TelegramChannel, timeout: Duration) -> Result<TelegramBot<'a>, DeliverError> {
        Ok(TelegramBot { channel, exchange: Exchange::new(timeout)? })
    }

    /// Calls Bot API `method` with `body`; the `result` when Telegram says `ok:true`.
    pub fn call(&self, method: &str, body: &Value) -> Result<Value, DeliverError> {
        let token = secret("telegram", "token_env", self.channel.token_env.as_deref())?;
        let result = (|| {
            let base = api_base("telegram", self.channel.api_base.as_deref(), TELEGRAM_API)?;
            let url = Url::parse(&format!("{base}/bot{token}/{method}"))
                .map_err(|_| DeliverError::NotSent("the telegram token does not fit in a URL".into()))?;
            let answer = self.exchange.post("telegram", url, json_bytes(body), &[])?;
            let Some(reply) = answer.json() else {
                return Err(DeliverError::Refused(format!("telegram answered {}", answer.describe())));
            };
            if reply["ok"] == true {
                return Ok(reply["result"].to_string());
            }
            let code = reply["error_code"].as_i64().map_or_else(|| answer.status.to_string(), |c| c.to_string());
            Err(DeliverError::Refused(format!("telegram error {code}: {}", reply["description"].as_str().unwrap_or("no description"))))
        })();
        scrub(result, &[token.as_str()]).map(|text| serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `getUpdates` from `offset`, waiting up to `wait_seconds` for one: only callback queries.
    pub fn updates(&self, offset: i64, wait_seconds: u64) -> Result<Vec<Value>, DeliverError> {
        let body = json!({"offset": offset, "timeout": wait_seconds, "allowed_updates": ["callback_query"]});
        Ok(self.call("getUpdates", &body)?.as_array().cloned().unwrap_or_default())
    }

    /// `answerCallbackQuery`: the little note (or, with `alert`, the dialog) the tapper sees.
    pub fn answer_tap(&self, query_id: &str, text: &str, alert: bool) -> Result<(), DeliverError> {
        let text = vwf_core::approvers::cut(text, 200);
        self.call("answerCallbackQuery", &json!({"callback_query_id": query_id, "text": text, "show_alert": alert})).map(drop)
    }

    /// `editMessageText`: the gate's message shows who answered what; its buttons stay while
    /// `markup` is given (more answers are wanted), else they go.
    pub fn edit(&self, chat_id: &Value, message_id: i64, text: &str, markup: Option<&Value>) -> Result<(), DeliverError> {
        let text = vwf_core::approvers::cut(text, 4000);
        let markup = markup.cloned().unwrap_or_else(|| json!({"inline_keyboard": []}));
        let body = json!({"chat_id": chat_id, "message_id": message_id, "text": text, "reply_markup": markup});
        self.call("editMessageText", &body).map(drop)
    }
}

/// Posts `body` to an interaction's `response_url`, which must lie under
/// `[channels.slack] response_base` (default `https://hooks.slack.com`): a signed request names
/// it, but vwf still posts nowhere else.
pub fn slack_respond(channel: &SlackChannel, response_url: &str, body: &Value, timeout: Duration) -> Result<(), DeliverError> {
    let base = channel.response_base.as_deref().map(str::trim).filter(|b| !b.is_empty()).unwrap_or(SLACK_RESPONSE_BASE);
    let (Ok(base), Ok(url)) = (Url::parse(base), Url::parse(response_url)) else {
        return Err(DeliverError::NotSent("the response_url or [channels.slack] response_base is not a URL".into()));
    };
    let prefix = base.path().trim_end_matches('/');
    let under = url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default()
        && (prefix.is_empty() || url.path() == prefix || url.path().starts_with(&format!("{prefix}/")));
    if !under {
        return Err(DeliverError::NotSent(format!("the response_url is not under {base} ([channels.slack] response_base)")));
    }
    let answer = Exchange::new(timeout)?.post("slack", url, json_bytes(body), &[])?;
    if answer.success() { Ok(()) } else { Err(DeliverError::Refused(format!("slack answered {}", answer.describe()))) }
}

/// Where Slack's `response_url`s point.
pub const SLACK_RESPONSE_BASE: &str = "https://hooks.slack.com";

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(needs_form: bool) -> Notice {
        Notice {
            node: vwf_core::names::PassId::parse("gate").expect("a step"),
            question: "Ship it?".into(),
            options: vec!["approve".into(), "reject".into()],
            context: "the <draft> & more".into(),
            targets: vec!["telegram:1".into(), "slack:#ops".into(), "webhook:a".into()],
            deadline: None,
            needs_form,
        }
    }

    fn config() -> ChannelsConfig {
        // Keys derive from these when the variables hold them; here none is set, so no buttons.
        toml::from_str::<crate::config::Config>("[channels.telegram]\ntoken_env = \"VWF_TEST_UNSET_TOKEN\"\n[channels.slack]\n")
            .expect("config")
            .channels
    }

    #[test]
    fn the_text_says_what_to_do_and_where() {
        let n = notice(false);
        let a = Announcement { run_id: "aa11bb22cc33", notice: &n, link: Some("https://vwf.example/#/runs/aa11bb22cc33".into()) };
        let text = a.text();
        assert!(text.starts_with("Ship it?\n\nthe <draft> & more\n\nAnswers: approve / reject\nRun: https://vwf.example/"), "{text}");
        let n = notice(true);
        let a = Announcement { run_id: "aa11bb22cc33", notice: &n, link: None };
        assert!(a.text().contains("vwf respond aa11bb22cc33 gate"), "{}", a.text());
        assert!(a.buttons(&[0; 32]).is_empty(), "a form is answered on the run page");
    }

    #[test]
    fn slack_text_is_escaped_and_no_buttons_without_a_key() {
        let n = notice(false);
        let a = Announcement { run_id: "r", notice: &n, link: None };
        let extra = a.extra(&config(), &NotifyTarget::Slack("#ops".into()));
        let blocks = extra["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 1, "no signing secret, no buttons: {blocks:?}");
        assert!(blocks[0]["text"]["text"].as_str().unwrap().contains("the &lt;draft&gt; &amp; more"));
        assert!(a.extra(&config(), &NotifyTarget::Telegram("1".into())).is_empty(), "no token, no keyboard");
        let hook = a.extra(&config(), &NotifyTarget::Webhook("a".into()));
        assert_eq!((hook["event"].as_str(), hook["options"].as_array().map(Vec::len)), (Some("gate.opened"), Some(2)));
    }

    #[test]
    fn a_response_url_elsewhere_is_refused_before_anything_is_sent() {
        let channel = SlackChannel::default();
        for url in
            ["https://evil.example/actions/1", "http://hooks.slack.com/actions/1", "not a url", "https://hooks.slack.com.evil.example/x"]
        {
            let e = slack_respond(&channel, url, &json!({}), Duration::from_secs(1)).unwrap_err();
            assert!(matches!(e, DeliverError::NotSent(_)), "{url}: {e}");
        }
    }
}
