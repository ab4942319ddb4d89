//! What a step does when it fails (SPEC §3 `retry` and `on_error`, and edges labelled `error`).
//!
//! A step that acts on the world (an agent, a command, an http call, a delivering output, an emit)
//! may declare a retry policy: how many attempts, how long to wait between them, and which
//! failures are worth another attempt. Once its attempts are used up, the step fails for good,
//! and then its `error` edges are taken if it has any, or with `on_error: "continue"` its normal
//! ones; otherwise the run fails, as a broken step always did.
//!
//! The policy is read here once, for the validator and the engine alike. Deciding is pure: the
//! driver reports a failure's [`Cause`], the engine asks the policy whether another attempt
//! follows and after how long, and the delay chosen is recorded on the failed attempt. Jitter is
//! drawn from a hash of the run, the step and the attempt instead of a random source, so the core
//! stays free of I/O and a replay of the same failure chooses the same delay.

use serde_json::{Map, Value, json};

use crate::design::{Node, NodeKind};
use crate::schedule;
use crate::validate::Issue;
pub use crate::vocab::{Backoff, OnError};

/// Attempts a policy may allow (`retry.max_attempts`).
pub const MAX_ATTEMPTS: (u64, u64) = (1, 10);
/// The multiplier of an exponential backoff (`retry.factor`).
pub const FACTOR: (u64, u64) = (1, 10);
/// The longest `retry.delay` or `retry.max_delay`, in seconds (a day).
pub const LONGEST_DELAY_SECONDS: u64 = 86_400;
/// The policy's defaults: one attempt, and when more are allowed, 1 s doubling up to 5 min, jittered.
pub const DELAY_DEFAULT_MS: u64 = 1_000;
pub const MAX_DELAY_DEFAULT_MS: u64 = 300_000;
pub const FACTOR_DEFAULT: u32 = 2;

/// How a step recovers from failing: its retry policy and what a failure for good does.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovery {
    pub retry: RetryPolicy,
    pub on_error: OnError,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery { retry: RetryPolicy::once(), on_error: OnError::Fail }
    }
}

/// When another attempt follows a failed one, and after how long.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1: no retry).
    pub max_attempts: u32,
    /// The wait after the first failed attempt, in milliseconds.
    pub delay_ms: u64,
    pub backoff: Backoff,
    /// What an exponential backoff multiplies the wait by after each attempt.
    pub factor: u32,
    /// No wait is longer than this, in milliseconds (a `Retry-After` included, and `delay`
    /// itself when it is the longer).
    pub max_delay_ms: u64,
    /// Each wait is drawn from its upper half (`[wait / 2, wait]`), so many runs failing at once
    /// do not all come back at the same instant.
    pub jitter: bool,
    /// Which failures retry; empty: every failure.
    pub on: Vec<RetryOn>,
}

/// A failure a policy's `on` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// `"5xx"`: an answer with a status from 500 to 599.
    ServerError,
    /// `"429"`: too many requests.
    TooManyRequests,
    /// `"timeout"`: the step's own timeout passed.
    Timeout,
    /// `"connect"`: no connection was made.
    Connect,
    /// `"error"`: any failure other than a timeout or a 429.
    Error,
    /// An http status, written as a number.
    Status(u16),
    /// A command's exit code, written as a number.
    Exit(i32),
}

/// Why an attempt failed, as its driver tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Cause {
    /// Anything the other causes do not say.
    #[default]
    Error,
    Timeout,
    Connect,
    /// The peer answered with this status; `retry_after` is its `Retry-After`, in seconds.
    Status {
        code: u16,
        retry_after: Option<u64>,
    },
    /// A command exited with this code.
    Exit(i32),
}

impl Cause {
    /// The word of the error view's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Cause::Error => "error",
            Cause::Timeout => "timeout",
            Cause::Connect => "connect",
            Cause::Status { .. } => "status",
            Cause::Exit(_) => "exit",
        }
    }
}

impl RetryOn {
    /// Whether a failure of this cause is one this word names.
    pub fn matches(self, cause: &Cause) -> bool {
        match (self, cause) {
            (RetryOn::ServerError, Cause::Status { code, .. }) => (500..=599).contains(code),
            (RetryOn::TooManyRequests, Cause::Status { code, .. }) => *code == 429,
            (RetryOn::Timeout, Cause::Timeout) | (RetryOn::Connect, Cause::Connect) => true,
            (RetryOn::Error, Cause::Timeout | Cause::Status { code: 429, .. }) => false,
            (RetryOn::Error, _) => true,
            (RetryOn::Status(s), Cause::Status { code, .. }) => s == *code,
            (RetryOn::Exit(e), Cause::Exit(code)) => e == *code,
            _ => false,
        }
    }

    /// The words a step of `kind` may list in `on`, and whether it takes numbers (statuses or
    /// exit codes), for reading and for messages.
    pub(crate) fn vocabulary(kind: NodeKind) -> (&'static [(&'static str, RetryOn)], Numbers) {
        const HTTP: &[(&str, RetryOn)] = &[
            ("5xx", RetryOn::ServerError),
            ("429", RetryOn::TooManyRequests),
            ("timeout", RetryOn::Timeout),
            ("connect", RetryOn::Connect),
        ];
        const COMMAND: &[(&str, RetryOn)] = &[("timeout", RetryOn::Timeout)];
        const AGENT: &[(&str, RetryOn)] = &[("error", RetryOn::Error), ("timeout", RetryOn::Timeout), ("429", RetryOn::TooManyRequests)];
        // A delivery's failure is one kind: the platform refused, or was not reached in time.
        const OUTPUT: &[(&str, RetryOn)] = &[("error", RetryOn::Error)];
        const EMIT: &[(&str, RetryOn)] = &[("error", RetryOn::Error), ("timeout", RetryOn::Timeout)];
        match kind {
            NodeKind::Http => (HTTP, Numbers::Statuses),
            NodeKind::Command => (COMMAND, Numbers::ExitCodes),
            NodeKind::Agent => (AGENT, Numbers::None),
            NodeKind::Output => (OUTPUT, Numbers::None),
            _ => (EMIT, Numbers::None),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Numbers {
    None,
    Statuses,
    ExitCodes,
}

impl RetryPolicy {
    /// One attempt: no retry.
    pub fn once() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            delay_ms: DELAY_DEFAULT_MS,
            backoff: Backoff::Exponential,
            factor: FACTOR_DEFAULT,
            max_delay_ms: MAX_DELAY_DEFAULT_MS,
            jitter: true,
            on: Vec::new(),
        }
    }

    /// An agent step's `retries: n` (SPEC §3): `n` more attempts at once, on any failure.
    pub fn immediate(retries: u32) -> RetryPolicy {
        RetryPolicy { max_attempts: retries + 1, delay_ms: 0, backoff: Backoff::Fixed, jitter: false, ..RetryPolicy::once() }
    }

    /// Whether attempt number `attempt`, which failed with `cause`, is followed by another.
    pub fn retries(&self, attempt: u32, cause: &Cause) -> bool {
        attempt < self.max_attempts && (self.on.is_empty() || self.on.iter().any(|w| w.matches(cause)))
    }

    /// Whether attempt number `attempt`, left unfinished by a process that died, is followed by
    /// another: whenever the policy allows more attempts. Its cause is unknown (the attempt may
    /// have been about to succeed), and an interruption is vwf's failure, not the world's, so
    /// `on` (which sorts the world's failures) does not apply.
    pub fn retries_interrupted(&self, attempt: u32) -> bool {
        attempt < self.max_attempts
    }

    /// How long to wait, in milliseconds, after attempt number `attempt` failed with `cause`:
    /// the policy's wait for that attempt (fixed, or multiplied by `factor` per attempt before),
    /// capped by `max_delay`, drawn from its upper half when jittered by `seed`, and never less
    /// than the peer's `Retry-After` (itself capped by `max_delay`).
    pub fn delay_ms(&self, attempt: u32, cause: &Cause, seed: u64) -> u64 {
        let exponent = attempt.saturating_sub(1);
        let base = match self.backoff {
            Backoff::Fixed => self.delay_ms,
            Backoff::Exponential => {
                let grown = u64::from(self.factor).checked_pow(exponent).and_then(|f| self.delay_ms.checked_mul(f));
                grown.unwrap_or(u64::MAX)
            }
        };
        let capped = base.min(self.max_delay_ms);
        let jittered = if self.jitter && capped > 1 {
            let floor = capped / 2;
            floor + seed % (capped - floor + 1)
        } else {
            capped
        };
        match cause {
            Cause::Status { retry_after: Some(s), .. } => jittered.max(s.saturating_mul(1000).min(self.max_delay_ms)),
            _ => jittered,
        }
    }
}

/// The jitter seed of one attempt of one step of one run: FNV-1a of the three, mixed by
/// SplitMix64's finaliser so that neighbouring attempts draw far-apart values.
pub fn seed(run_id: &str, node: &str, attempt: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in run_id.bytes().chain([0]).chain(node.bytes()).chain([0]).chain(attempt.to_le_bytes()) {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// What `{{nodes.<id>.error}}` holds for a step that failed for good: the message, its kind, the
/// attempts made, and the status or exit code when there was one.
pub fn error_view(message: &str, cause: &Cause, attempts: u32) -> Value {
    let mut v = Map::new();
    v.insert("message".into(), Value::String(message.to_string()));
    v.insert("kind".into(), Value::String(cause.kind().into()));
    v.insert("attempts".into(), json!(attempts));
    match cause {
        Cause::Status { code, .. } => {
            v.insert("status".into(), json!(code));
        }
        Cause::Exit(code) => {
            v.insert("exit_code".into(), json!(code));
        }
        _ => {}
    }
    Value::Object(v)
}

/// Reads a node's `retry`, `on_error` (and an agent's `retries`), reporting every problem. A node
/// of a kind that does not act takes none of them.
pub fn parse(node: &Node) -> (Recovery, Vec<Issue>) {
    let mut issues = Vec::new();
    let mut issue = |field: &str, message: String| issues.push(Issue::node_field(&node.id, field, message));
    let get = |name: &str| node.raw.get(name).filter(|v| !v.is_null());
    let mut recovery = Recovery::default();
    let Some(kind) = node.kind.filter(|k| k.acts()) else {
        for field in ["retry", "on_error"] {
            if get(field).is_some() {
                issue(
                    field,
                    format!(
                        "only steps that act (agent, command, http, output, emit) take \"{field}\"; a {} node does not",
                        node.type_name()
                    ),
                );
            }
        }
        if get("retries").is_some() && !node.is(NodeKind::Agent) {
            issue(
                "retries",
                format!("only agent steps take \"retries\"; a {} node does not (use \"retry\" on a step that acts)", node.type_name()),
            );
        }
        return (recovery, issues);
    };
    if get("retries").is_some() && kind != NodeKind::Agent {
        issue(
            "retries",
            format!("only agent steps take \"retries\"; a {} node takes \"retry\": {{\"max_attempts\": …}}", node.type_name()),
        );
    }
    if let Some(v) = get("on_error") {
        match v.as_str().map(str::parse::<OnError>) {
            Some(Ok(o)) => recovery.on_error = o,
            _ => issue("on_error", format!("\"on_error\" is \"fail\" or \"continue\", got {v}")),
        }
    }
    let retries = get("retries");
    match (get("retry"), retries) {
        (Some(_), Some(_)) => issue("retry", "give either \"retry\" or the older \"retries\", not both".into()),
        (Some(Value::Object(fields)), None) => recovery.retry = read_policy(kind, fields, &mut issue),
        (Some(other), None) => {
            issue("retry", format!("\"retry\" must be an object like {{\"max_attempts\": 3, \"delay\": \"1s\"}}, got {other}"))
        }
        (None, Some(r)) => {
            // The SPEC's 0–3 bound is checked with the agent's other fields (`spec::parse_agent`).
            if let Some(n) = r.as_u64().filter(|n| crate::limits::within(*n, crate::limits::AGENT_RETRIES)) {
                recovery.retry = RetryPolicy::immediate(n as u32);
            }
        }
        (None, None) => {}
    }
    (recovery, issues)
}

/// The fields of a `retry` object.
fn read_policy(kind: NodeKind, fields: &Map<String, Value>, issue: &mut impl FnMut(&str, String)) -> RetryPolicy {
    const KNOWN: [&str; 7] = ["max_attempts", "delay", "backoff", "factor", "max_delay", "jitter", "on"];
    let mut policy = RetryPolicy::once();
    for key in fields.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        issue(&format!("retry.{key}"), format!("\"retry\" has no field {key:?}; it takes {}", KNOWN.join(", ")));
    }
    let get = |name: &str| fields.get(name).filter(|v| !v.is_null());
    let ranged = |name: &str, range: (u64, u64), issue: &mut dyn FnMut(&str, String)| -> Option<u64> {
        let v = get(name)?;
        let n = v.as_u64().filter(|n| crate::limits::within(*n, range));
        if n.is_none() {
            issue(&format!("retry.{name}"), format!("\"retry.{name}\" must be a whole number from {} to {}, got {v}", range.0, range.1));
        }
        n
    };
    if let Some(n) = ranged("max_attempts", MAX_ATTEMPTS, issue) {
        policy.max_attempts = n as u32;
    }
    if let Some(n) = ranged("factor", FACTOR, issue) {
        policy.factor = n as u32;
    }
    for (name, slot) in [("delay", &mut policy.delay_ms), ("max_delay", &mut policy.max_delay_ms)] {
        if let Some(v) = get(name) {
            match duration_ms(v) {
                Ok(ms) => *slot = ms,
                Err(why) => issue(&format!("retry.{name}"), format!("\"retry.{name}\" {why}")),
            }
        }
    }
    if let Some(v) = get("backoff") {
        match v.as_str().map(str::parse::<Backoff>) {
            Some(Ok(b)) => policy.backoff = b,
            _ => issue("retry.backoff", format!("\"retry.backoff\" is \"fixed\" or \"exponential\", got {v}")),
        }
    }
    if let Some(v) = get("jitter") {
        match v.as_bool() {
            Some(b) => policy.jitter = b,
            None => issue("retry.jitter", format!("\"retry.jitter\" must be true or false, got {v}")),
        }
    }
    if let Some(v) = get("on") {
        policy.on = read_on(kind, v, issue);
    }
    policy
}

/// A delay: a duration like `"30s"` or `"1m30s"`, or whole seconds (0 for none), at most a day.
fn duration_ms(v: &Value) -> Result<u64, String> {
    Ok(schedule::duration_or_seconds(v, 0, LONGEST_DELAY_SECONDS, "a day")? * 1000)
}

/// `retry.on`: the words and numbers a step of `kind` may list.
fn read_on(kind: NodeKind, v: &Value, issue: &mut impl FnMut(&str, String)) -> Vec<RetryOn> {
    let (words, numbers) = RetryOn::vocabulary(kind);
    let allowed = {
        let mut list: Vec<String> = words.iter().map(|(w, _)| format!("{w:?}")).collect();
        match numbers {
            Numbers::Statuses => list.push("a status (100-599)".into()),
            Numbers::ExitCodes => list.push("an exit code (1-255)".into()),
            Numbers::None => {}
        }
        list.join(", ")
    };
    let Some(items) = v.as_array().filter(|a| !a.is_empty()) else {
        issue("retry.on", format!("\"retry.on\" must be a non-empty list of {allowed}, got {v}"));
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let word = item.as_str().and_then(|s| words.iter().find(|(w, _)| *w == s)).map(|(_, on)| *on);
        // A number may come as text too (`"503"`, as a list typed one per line gives it).
        let number = item.as_u64().or_else(|| item.as_str().and_then(|t| t.parse().ok())).and_then(|n| match numbers {
            Numbers::Statuses if (100..=599).contains(&n) => Some(RetryOn::Status(n as u16)),
            Numbers::ExitCodes if (1..=255).contains(&n) => Some(RetryOn::Exit(n as i32)),
            _ => None,
        });
        match word.or(number) {
            Some(on) if !out.contains(&on) => out.push(on),
            Some(_) => issue("retry.on", format!("\"retry.on\" lists {item} twice")),
            None => issue("retry.on", format!("a {kind} step's \"retry.on\" lists {allowed}, not {item}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn node(raw: Value) -> Node {
        let raw = raw.as_object().cloned().expect("object");
        Node::new(raw["id"].as_str().unwrap_or("n").to_string(), raw)
    }

    fn read(raw: Value) -> Result<Recovery, Vec<String>> {
        let (r, issues) = parse(&node(raw));
        if issues.is_empty() { Ok(r) } else { Err(issues.into_iter().map(|i| i.message).collect()) }
    }

    fn status(code: u16) -> Cause {
        Cause::Status { code, retry_after: None }
    }

    #[test]
    fn a_policy_reads_with_its_defaults_and_every_field() {
        let r = read(json!({"id": "f", "type": "http", "url": "http://x", "retry": {"max_attempts": 3}})).unwrap();
        assert_eq!(r.retry, RetryPolicy { max_attempts: 3, ..RetryPolicy::once() });
        assert_eq!(
            (r.retry.delay_ms, r.retry.max_delay_ms, r.retry.factor, r.retry.backoff, r.retry.jitter),
            (1000, 300_000, 2, Backoff::Exponential, true)
        );
        let r = read(json!({"id": "f", "type": "http", "url": "http://x", "on_error": "continue", "retry": {
            "max_attempts": 10, "delay": "2s", "backoff": "fixed", "factor": 1, "max_delay": "1m", "jitter": false, "on": ["5xx", "429", 408, "timeout", "connect"]
        }}))
        .unwrap();
        assert_eq!(r.on_error, OnError::Continue);
        assert_eq!(
            r.retry,
            RetryPolicy {
                max_attempts: 10,
                delay_ms: 2000,
                backoff: Backoff::Fixed,
                factor: 1,
                max_delay_ms: 60_000,
                jitter: false,
                on: vec![RetryOn::ServerError, RetryOn::TooManyRequests, RetryOn::Status(408), RetryOn::Timeout, RetryOn::Connect],
            }
        );
        let r =
            read(json!({"id": "c", "type": "command", "run": "x", "retry": {"max_attempts": 2, "delay": 0, "on": [3, "timeout", "4"]}}))
                .unwrap();
        assert_eq!((r.retry.delay_ms, r.retry.on.clone()), (0, vec![RetryOn::Exit(3), RetryOn::Timeout, RetryOn::Exit(4)]));
        // An agent's `retries` is a policy of immediate attempts.
        let r = read(json!({"id": "a", "type": "agent", "prompt": "p", "retries": 2})).unwrap();
        assert_eq!(r.retry, RetryPolicy::immediate(2));
        assert_eq!((r.retry.max_attempts, r.retry.delay_ms(1, &Cause::Error, 99)), (3, 0));
    }

    #[test]
    fn misfits_name_the_field_and_what_it_takes() {
        let cases = [
            (json!({"id": "g", "type": "condition", "expr": "x", "retry": {}}), "only steps that act"),
            (json!({"id": "g", "type": "wait", "seconds": 1, "on_error": "continue"}), "only steps that act"),
            (json!({"id": "c", "type": "command", "run": "x", "retries": 1}), "only agent steps take \"retries\""),
            (json!({"id": "a", "type": "agent", "prompt": "p", "retries": 1, "retry": {"max_attempts": 2}}), "not both"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": 3}), "must be an object"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"max_attempts": 11}}), "from 1 to 10"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"max_attempts": 0}}), "from 1 to 10"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"factor": 11}}), "from 1 to 10"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"delay": "soon"}}), "is not a duration"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"delay": "2w"}}), "is not a duration"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"max_delay": "25h"}}), "longer than a day"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"backoff": "linear"}}), "\"fixed\" or \"exponential\""),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"jitter": "yes"}}), "true or false"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"tries": 3}}), "has no field \"tries\""),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"on": []}}), "non-empty list"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"on": ["4xx"]}}), "not \"4xx\""),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"on": [700]}}), "not 700"),
            (json!({"id": "f", "type": "http", "url": "u", "retry": {"on": ["5xx", "5xx"]}}), "twice"),
            (json!({"id": "c", "type": "command", "run": "x", "retry": {"on": ["5xx"]}}), "an exit code (1-255)"),
            (json!({"id": "c", "type": "command", "run": "x", "retry": {"on": [0]}}), "not 0"),
            (json!({"id": "a", "type": "agent", "prompt": "p", "retry": {"on": [500]}}), "\"error\", \"timeout\", \"429\""),
            (json!({"id": "e", "type": "emit", "event": "x", "retry": {"on": ["5xx"]}}), "not \"5xx\""),
            (json!({"id": "e", "type": "emit", "event": "x", "on_error": "ignore"}), "\"fail\" or \"continue\""),
        ];
        for (raw, want) in cases {
            let errors = read(raw.clone()).expect_err(&raw.to_string());
            assert!(errors.iter().any(|e| e.contains(want)), "{raw}: {errors:?} lacks {want:?}");
        }
    }

    #[test]
    fn on_narrows_which_failures_retry() {
        let policy = |on: Vec<RetryOn>| RetryPolicy { max_attempts: 3, on, ..RetryPolicy::once() };
        let p = policy(vec![RetryOn::ServerError]);
        assert!(p.retries(1, &status(503)) && p.retries(2, &status(500)));
        assert!(!p.retries(3, &status(503)), "attempts used up");
        assert!(!p.retries(1, &status(404)) && !p.retries(1, &status(429)) && !p.retries(1, &Cause::Timeout));
        let p = policy(vec![RetryOn::Error]);
        assert!(p.retries(1, &Cause::Error) && p.retries(1, &status(500)) && p.retries(1, &Cause::Connect));
        assert!(!p.retries(1, &Cause::Timeout) && !p.retries(1, &status(429)));
        let p = policy(vec![RetryOn::Exit(3), RetryOn::Timeout]);
        assert!(p.retries(1, &Cause::Exit(3)) && p.retries(1, &Cause::Timeout) && !p.retries(1, &Cause::Exit(4)));
        let every = policy(Vec::new());
        for cause in [Cause::Error, Cause::Timeout, Cause::Connect, status(404), Cause::Exit(1)] {
            assert!(every.retries(1, &cause), "{cause:?}");
        }
    }

    #[test]
    fn delays_follow_the_backoff_cap_and_retry_after() {
        let p = RetryPolicy { max_attempts: 6, delay_ms: 1000, jitter: false, max_delay_ms: 10_000, ..RetryPolicy::once() };
        let delays: Vec<u64> = (1..=6).map(|a| p.delay_ms(a, &Cause::Error, 0)).collect();
        assert_eq!(delays, [1000, 2000, 4000, 8000, 10_000, 10_000]);
        let fixed = RetryPolicy { backoff: Backoff::Fixed, ..p.clone() };
        assert_eq!((1..=3).map(|a| fixed.delay_ms(a, &Cause::Error, 0)).collect::<Vec<_>>(), [1000, 1000, 1000]);
        // Retry-After: at least that long, capped by max_delay.
        let after = |s| Cause::Status { code: 429, retry_after: Some(s) };
        assert_eq!(p.delay_ms(1, &after(2), 0), 2000);
        assert_eq!(p.delay_ms(4, &after(2), 0), 8000, "the policy's own wait is longer");
        assert_eq!(p.delay_ms(1, &after(3600), 0), 10_000, "capped by max_delay");
        // A huge exponent saturates at the cap instead of overflowing.
        let big = RetryPolicy { factor: 10, max_delay_ms: 86_400_000, ..p };
        assert_eq!(big.delay_ms(u32::MAX, &Cause::Error, 0), 86_400_000);
    }

    #[test]
    fn seeds_differ_by_run_node_and_attempt() {
        let a = seed("d7b493cae249", "fetch", 1);
        assert_eq!(a, seed("d7b493cae249", "fetch", 1));
        assert_ne!(a, seed("d7b493cae249", "fetch", 2));
        assert_ne!(a, seed("d7b493cae248", "fetch", 1));
        assert_ne!(a, seed("d7b493cae249", "fetch2", 1));
    }

    #[test]
    fn the_error_view_names_kind_attempts_and_code() {
        assert_eq!(error_view("HTTP 503", &status(503), 3), json!({"message": "HTTP 503", "kind": "status", "attempts": 3, "status": 503}));
        assert_eq!(error_view("exit 3", &Cause::Exit(3), 1), json!({"message": "exit 3", "kind": "exit", "attempts": 1, "exit_code": 3}));
        assert_eq!(error_view("slow", &Cause::Timeout, 2), json!({"message": "slow", "kind": "timeout", "attempts": 2}));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]
        /// Whatever the policy and the attempt, a jittered wait lies in the upper half of the
        /// unjittered one, which itself never passes `max_delay`; a Retry-After raises it to at
        /// least that (capped) and no further than the larger of the two.
        #[test]
        fn jitter_stays_inside_its_bounds(
            delay_s in 0u64..=86_400, extra_s in 0u64..=86_400, factor in 1u32..=10, attempt in 1u32..=10,
            exponential in any::<bool>(), seed in any::<u64>(), retry_after in proptest::option::of(0u64..=200_000),
        ) {
            let policy = RetryPolicy {
                max_attempts: 10,
                delay_ms: delay_s * 1000,
                backoff: if exponential { Backoff::Exponential } else { Backoff::Fixed },
                factor,
                max_delay_ms: (delay_s + extra_s).min(86_400) * 1000,
                jitter: true,
                on: Vec::new(),
            };
            let plain = RetryPolicy { jitter: false, ..policy.clone() };
            let full = plain.delay_ms(attempt, &Cause::Error, 0);
            prop_assert!(full <= policy.max_delay_ms);
            let drawn = policy.delay_ms(attempt, &Cause::Error, seed);
            prop_assert!(drawn >= full / 2 && drawn <= full, "{drawn} outside [{}, {full}]", full / 2);
            let cause = Cause::Status { code: 429, retry_after };
            let waited = policy.delay_ms(attempt, &cause, seed);
            let floor = retry_after.map_or(0, |s| (s * 1000).min(policy.max_delay_ms));
            prop_assert!(waited >= floor && waited <= drawn.max(floor) && waited <= policy.max_delay_ms);
        }
    }
}
