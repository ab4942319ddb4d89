//! Who answers an approval gate and who is told it is open: `approvers` (how many distinct people
//! must give the same answer, who may answer, which answers end the gate at once) and `notify`
//! (the chats, channels and webhooks that get the question, its `context` and buttons).
//!
//! Why here: the declaration is read when a design is saved (problems named by node and field),
//! when a gate opens (copied into the run's pending gate, so an answer is judged by the gate as it
//! was when it asked) and when an answer arrives; one reader keeps the three agreeing.
//!
//! Invariants:
//! - A gate without `approvers` is the one-answer gate it always was: the first valid answer
//!   decides it. `required: 1` with `allowed` only narrows who may give it.
//! - An answer is judged whole before anything changes: someone not allowed, someone who already
//!   answered (with `distinct`), or an identity the surface cannot vouch for is refused and
//!   nothing is written.
//! - `telegram:<id>` and `slack:<id>` identities are given only by those platforms' signed
//!   callbacks (`via` the platform); the API, CLI and pages cannot claim them.
//! - The gate is decided by the answer that makes an option reach `required` answers, or at once
//!   by an answer listed in `veto`; every answer is kept with who gave it, when and from where.

use std::collections::BTreeSet;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::time::{self, Ts};

/// The most answers a gate may require.
pub const MAX_REQUIRED: u64 = 10;
/// The most identities one gate allows.
pub const MAX_ALLOWED: usize = 100;
/// The most targets one gate notifies.
pub const MAX_NOTIFY: usize = 10;
/// Characters of a gate's rendered context kept and sent (Telegram's message limit is 4096
/// characters and Slack's section text 3000, with the question beside it).
pub const CONTEXT_CHARS: usize = 2500;
/// The platforms whose identities only their own signed callbacks give.
pub const CHANNEL_IDENTITIES: [&str; 2] = ["telegram", "slack"];
/// The platforms a gate notifies.
pub const NOTIFY_PLATFORMS: [&str; 3] = ["telegram", "slack", "webhook"];

/// A gate's `approvers`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvers {
    /// How many people must give the same answer (1 to 10).
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = 10)))]
    pub required: u32,
    /// Who may answer: `telegram:<user id>`, `slack:<user id>` or a name given as `by`; anyone
    /// when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    /// Each person answers once (default true).
    pub distinct: bool,
    /// Options that decide the gate with a single answer (a rejection).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub veto: Vec<String>,
}

impl Default for Approvers {
    fn default() -> Self {
        Approvers { required: 1, allowed: Vec::new(), distinct: true, veto: Vec::new() }
    }
}

/// One person's answer to a gate that wants several.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vote {
    pub answer: String,
    pub by: String,
    /// Where the answer came from: `telegram`, `slack`, `api`, `cli`, `mcp`, `chat`; absent
    /// when the surface did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(with = "time")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "time::schema"))]
    pub at: Ts,
    /// The platform's id of the tap that gave it (`telegram:<callback id>`, `slack:<digest of
    /// the signed request>`): the same tap delivered twice counts once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap: Option<String>,
    /// The form's values this answer gave, when the gate has a form.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub fields: serde_json::Map<String, Value>,
}

/// Why an answer is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The answer lacks something (who answers) or claims what its surface cannot vouch for.
    Bad(String),
    /// The person may not answer this gate.
    NotAllowed(String),
    /// The person already answered.
    Again(String),
}

/// Whether `by` names a platform identity (`telegram:…`, `slack:…`), which only that platform's
/// signed callback gives.
pub fn is_channel_identity(by: &str) -> Option<&'static str> {
    let (platform, rest) = by.split_once(':')?;
    CHANNEL_IDENTITIES.into_iter().find(|p| p.eq_ignore_ascii_case(platform.trim()) && !rest.is_empty())
}

impl Approvers {
    /// Judges an answer by `by` given `via` a surface, against what was answered before.
    /// `Ok(())` when it may be counted.
    pub fn admit(&self, by: Option<&str>, via: Option<&str>, votes: &[Vote]) -> Result<(), Refused> {
        if let Some(platform) = by.and_then(is_channel_identity)
            && via != Some(platform)
        {
            return Err(Refused::Bad(format!("by: {platform}:… identities are given by {platform}'s buttons only")));
        }
        let Some(by) = by else {
            if self.required > 1 || !self.allowed.is_empty() {
                return Err(Refused::Bad("by: this gate counts who answers; say who you are (by)".into()));
            }
            return Ok(());
        };
        if !self.allowed.is_empty() && !self.allowed.iter().any(|a| a == by) {
            return Err(Refused::NotAllowed(format!("{by} may not answer this gate")));
        }
        if self.distinct
            && let Some(v) = votes.iter().find(|v| v.by == by)
        {
            return Err(Refused::Again(format!("{by} already answered {:?}", v.answer)));
        }
        Ok(())
    }

    /// Whether `answer`, added to `votes`, decides the gate: a veto, or the `required`-th
    /// answer of that option.
    pub fn decides(&self, votes: &[Vote], answer: &str) -> bool {
        let same = votes.iter().filter(|v| v.answer.eq_ignore_ascii_case(answer)).count() as u64;
        self.veto.iter().any(|o| o.eq_ignore_ascii_case(answer)) || same + 1 >= u64::from(self.required)
    }
}

/// Reads a gate's `approvers` against its `options`: `None` when absent, else the declaration and
/// the problems found (each a sentence naming the key).
pub fn parse_approvers(value: Option<&Value>, options: &[String]) -> (Option<Approvers>, Vec<String>) {
    let map = match value {
        None | Some(Value::Null) => return (None, Vec::new()),
        Some(Value::Object(map)) => map,
        Some(_) => return (None, vec!["\"approvers\" is an object: {required, allowed, distinct, veto}".into()]),
    };
    let mut problems = Vec::new();
    let mut out = Approvers::default();
    for key in map.keys().filter(|k| !["required", "allowed", "distinct", "veto"].contains(&k.as_str())) {
        problems.push(format!("approvers.{key} is not a key of approvers (required, allowed, distinct, veto)"));
    }
    match map.get("required") {
        None | Some(Value::Null) => {}
        Some(v) => match v.as_u64().filter(|n| (1..=MAX_REQUIRED).contains(n)) {
            Some(n) => out.required = n as u32,
            None => problems.push(format!("approvers.required is a whole number from 1 to {MAX_REQUIRED}")),
        },
    }
    match map.get("distinct") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => out.distinct = *b,
        Some(_) => problems.push("approvers.distinct is true or false".into()),
    }
    let (allowed, bad) = strings(map.get("allowed"), MAX_ALLOWED);
    match bad {
        Some(()) => problems.push(format!(
            "approvers.allowed lists up to {MAX_ALLOWED} identities (telegram:<user id>, slack:<user id> or a name), each once, 1 to {} characters",
            crate::form::MAX_LABEL
        )),
        None => out.allowed = allowed,
    }
    let (veto, bad) = strings(map.get("veto"), options.len().max(1));
    match bad {
        Some(()) => problems.push("approvers.veto lists some of the gate's options, each once".into()),
        None => {
            for v in &veto {
                if !options.iter().any(|o| o.eq_ignore_ascii_case(v)) {
                    problems.push(format!("approvers.veto: {v:?} is not one of the options ({})", options.join(", ")));
                }
            }
            out.veto = veto;
        }
    }
    if out.distinct && !out.allowed.is_empty() && out.allowed.len() < out.required as usize {
        problems.push(format!(
            "approvers.required is {} but approvers.allowed names only {} people: the gate could never be decided",
            out.required,
            out.allowed.len()
        ));
    }
    (Some(out), problems)
}

/// A list of distinct identities or options, each 1 to [`crate::form::MAX_LABEL`] characters with
/// no control characters: the list, or `Some(())` when it is not one.
fn strings(value: Option<&Value>, max: usize) -> (Vec<String>, Option<()>) {
    let items = match value {
        None | Some(Value::Null) => return (Vec::new(), None),
        Some(Value::Array(items)) if items.len() <= max => items,
        Some(_) => return (Vec::new(), Some(())),
    };
    let mut out = Vec::new();
    for item in items {
        match item.as_str().map(str::trim) {
            Some(s) if crate::form::check_by(Some(s)).is_ok() && !out.iter().any(|o: &String| o == s) => out.push(s.to_string()),
            _ => return (Vec::new(), Some(())),
        }
    }
    (out, None)
}

/// One place a gate's question goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyTarget {
    /// A Telegram chat (`<chat>` or `<chat>:<topic>`, as a delivery's target).
    Telegram(String),
    /// A Slack channel.
    Slack(String),
    /// A webhook configured as `[channels.webhook.<name>]`.
    Webhook(String),
}

impl std::str::FromStr for NotifyTarget {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a notify target: telegram:<chat>, slack:<channel> or webhook:<name>");
        let (platform, rest) = s.split_once(':').ok_or_else(bad)?;
        let rest = rest.trim();
        if rest.is_empty() || rest.len() > 200 || rest.chars().any(char::is_control) {
            return Err(bad());
        }
        match platform {
            "telegram" => Ok(NotifyTarget::Telegram(rest.to_string())),
            "slack" => Ok(NotifyTarget::Slack(rest.to_string())),
            "webhook" => Ok(NotifyTarget::Webhook(rest.to_string())),
            _ => Err(bad()),
        }
    }
}

impl NotifyTarget {
    pub fn platform(&self) -> &'static str {
        match self {
            NotifyTarget::Telegram(_) => "telegram",
            NotifyTarget::Slack(_) => "slack",
            NotifyTarget::Webhook(_) => "webhook",
        }
    }

    /// What follows the platform: the chat, the channel or the webhook's name.
    pub fn place(&self) -> &str {
        match self {
            NotifyTarget::Telegram(p) | NotifyTarget::Slack(p) | NotifyTarget::Webhook(p) => p,
        }
    }
}

/// Reads a gate's `notify`: the targets as written, and the problems found.
pub fn parse_notify(value: Option<&Value>) -> (Vec<String>, Vec<String>) {
    let items = match value {
        None | Some(Value::Null) => return (Vec::new(), Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_NOTIFY => items,
        Some(_) => {
            return (
                Vec::new(),
                vec![format!("\"notify\" lists up to {MAX_NOTIFY} targets: telegram:<chat>, slack:<channel>, webhook:<name>")],
            );
        }
    };
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for item in items {
        match item.as_str().map(|s| s.trim().parse::<NotifyTarget>()) {
            Some(Ok(t)) => {
                let written = format!("{}:{}", t.platform(), t.place());
                if seen.insert(written.clone()) {
                    out.push(written);
                } else {
                    problems.push(format!("\"notify\" names {written} twice"));
                }
            }
            Some(Err(e)) => problems.push(e),
            None => problems.push("\"notify\" lists strings: telegram:<chat>, slack:<channel>, webhook:<name>".into()),
        }
    }
    (out, problems)
}

/// A button's data: which run, gate and option it answers, signed so that a tap on a button vwf
/// did not make (a forged callback) is refused. Short enough for Telegram's 64-byte
/// `callback_data`: `g1:<run id>:<8 hex of SHA-256(gate)>:<option index>:<16 hex of the MAC>`,
/// the MAC an HMAC-SHA256 under [`button_key`] of the run, the gate's whole id and the option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub run_id: String,
    /// The first 4 bytes of SHA-256 of the gate's id, in hex: the gate is the parked one
    /// whose id has this digest (and the MAC then holds for its whole id).
    pub gate_tag: String,
    pub option: usize,
    mac: String,
}

/// The key buttons are signed with, derived from a platform secret (the bot token, the signing
/// secret) so that nothing more needs configuring and a changed secret voids old buttons.
pub fn button_key(secret: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(b"vwf gate buttons v1");
    mac.finalize().into_bytes().into()
}

fn gate_tag(node: &str) -> String {
    hex8(&Sha256::digest(node.as_bytes()))
}

fn hex8(bytes: &[u8]) -> String {
    bytes.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

fn button_mac(key: &[u8; 32], run_id: &str, node: &str, option: usize) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(format!("g1:{run_id}:{node}:{option}").as_bytes());
    mac
}

impl Button {
    /// The data of the button for option `option` of gate `node` of run `run_id`.
    pub fn sign(key: &[u8; 32], run_id: &str, node: &str, option: usize) -> String {
        let mac = button_mac(key, run_id, node, option).finalize().into_bytes();
        let mac: String = mac.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("g1:{run_id}:{}:{option}:{mac}", gate_tag(node))
    }

    /// Reads a button's data; `None` when it is not one vwf makes.
    pub fn parse(data: &str) -> Option<Button> {
        let mut parts = data.split(':');
        let (Some("g1"), Some(run), Some(tag), Some(option), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(tag, 8) || !hex(mac, 16) || option.len() > 3 || run.is_empty() || run.len() > 40 {
            return None;
        }
        Some(Button { run_id: run.to_string(), gate_tag: tag.to_string(), option: option.parse().ok()?, mac: mac.to_ascii_lowercase() })
    }

    /// Whether this button names gate `node`.
    pub fn names(&self, node: &str) -> bool {
        gate_tag(node) == self.gate_tag
    }

    /// Whether the MAC holds for gate `node` under `key` (compared in constant time).
    pub fn verify(&self, key: &[u8; 32], node: &str) -> bool {
        let Some(given) = (0..16).step_by(2).map(|i| u8::from_str_radix(self.mac.get(i..i + 2)?, 16).ok()).collect::<Option<Vec<u8>>>()
        else {
            return false;
        };
        self.names(node) && button_mac(key, &self.run_id, node, self.option).verify_truncated_left(&given).is_ok()
    }
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts() -> Vec<String> {
        vec!["approve".into(), "reject".into()]
    }

    fn vote(answer: &str, by: &str) -> Vote {
        Vote {
            answer: answer.into(),
            by: by.into(),
            via: None,
            at: time::parse("2026-12-01T00:00:00Z").unwrap(),
            tap: None,
            fields: Default::default(),
        }
    }

    #[test]
    fn approvers_parse_with_defaults_and_name_each_problem() {
        assert_eq!(parse_approvers(None, &opts()), (None, vec![]));
        let (a, p) = parse_approvers(Some(&json!({"required": 2})), &opts());
        assert_eq!(a, Some(Approvers { required: 2, ..Approvers::default() }));
        assert!(p.is_empty());
        for (bad, says) in [
            (json!({"required": 0}), "required"),
            (json!({"required": 11}), "required"),
            (json!({"required": 1.5}), "required"),
            (json!({"distinct": "yes"}), "distinct"),
            (json!({"allowed": ["a", "a"]}), "allowed"),
            (json!({"allowed": [""]}), "allowed"),
            (json!({"veto": ["maybe"]}), "veto"),
            (json!({"who": 1}), "who"),
            (json!({"required": 3, "allowed": ["a", "b"]}), "never be decided"),
            (json!([1]), "object"),
        ] {
            let (_, problems) = parse_approvers(Some(&bad), &opts());
            assert!(problems.iter().any(|p| p.contains(says)), "{bad}: {problems:?}");
        }
    }

    #[test]
    fn quorum_needs_distinct_allowed_people_and_a_veto_ends_it() {
        let a = Approvers {
            required: 2,
            allowed: vec!["ann".into(), "telegram:7".into(), "bo".into()],
            veto: vec!["reject".into()],
            ..Approvers::default()
        };
        assert!(matches!(a.admit(None, Some("api"), &[]), Err(Refused::Bad(_))));
        assert!(matches!(a.admit(Some("eve"), Some("api"), &[]), Err(Refused::NotAllowed(_))));
        assert!(matches!(a.admit(Some("telegram:7"), Some("api"), &[]), Err(Refused::Bad(_))), "an API caller cannot be a Telegram user");
        assert_eq!(a.admit(Some("telegram:7"), Some("telegram"), &[]), Ok(()));
        assert!(matches!(a.admit(Some("ann"), None, &[vote("approve", "ann")]), Err(Refused::Again(_))));
        assert!(!a.decides(&[], "approve"));
        assert!(a.decides(&[vote("approve", "ann")], "APPROVE"));
        assert!(!a.decides(&[vote("reject", "ann")], "approve"), "answers of other options do not count");
        assert!(a.decides(&[], "reject"), "a veto decides at once");
        let one = Approvers::default();
        assert_eq!(one.admit(None, None, &[]), Ok(()), "the single answer needs no name");
        assert!(one.decides(&[], "approve"));
    }

    #[test]
    fn buttons_are_signed_short_and_refused_when_forged() {
        let key = button_key(b"123:token");
        let data = Button::sign(&key, "aa11bb22cc33", "review/gate#2", 1);
        assert!(data.len() <= 64, "Telegram's callback_data holds 64 bytes: {data}");
        let b = Button::parse(&data).expect("parses");
        assert_eq!((b.run_id.as_str(), b.option), ("aa11bb22cc33", 1));
        assert!(b.names("review/gate#2") && b.verify(&key, "review/gate#2"));
        assert!(!b.verify(&key, "other"), "another gate");
        assert!(!b.verify(&button_key(b"another token"), "review/gate#2"), "another key");
        // Changing any part of the data breaks the MAC.
        for forged in [data.replace(":1:", ":0:"), data.replacen("aa11", "aa12", 1)] {
            assert!(Button::parse(&forged).is_none_or(|f| !f.verify(&key, "review/gate#2")), "{forged}");
        }
        for junk in [
            "",
            "g1",
            "g2:a:00000000:0:0000000000000000",
            "g1:a:zz:0:00",
            "g1:a:00000000:0:0000000000000000:x",
            "g1::00000000:0:0000000000000000",
        ] {
            assert!(Button::parse(junk).is_none(), "{junk}");
        }
    }

    #[test]
    fn notify_targets_parse_and_refuse() {
        let (t, p) = parse_notify(Some(&json!(["telegram:-100123", "slack:#ops", "webhook:alerts"])));
        assert_eq!(t, vec!["telegram:-100123", "slack:#ops", "webhook:alerts"]);
        assert!(p.is_empty());
        for bad in
            [json!(["discord:x"]), json!(["telegram:"]), json!(["telegram"]), json!([1]), json!("slack:#a"), json!(["slack:a", "slack:a"])]
        {
            let (_, p) = parse_notify(Some(&bad));
            assert!(!p.is_empty(), "{bad}");
        }
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
