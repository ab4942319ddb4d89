//! Webhook triggers (`mode: webhook`): a design started by a signed POST to `/hooks/<path>`,
//! which takes no API token; the sender's signature, checked here, stands in for it.
//!
//! Each scheme is its sender's published one, over the exact body bytes received:
//! - `github`: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`.
//! - `stripe`: `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` (any of
//!   several `v1`), `t` within the tolerance of now.
//! - `slack`: `X-Slack-Request-Timestamp: <unix>` and `X-Slack-Signature: v0=<hex
//!   HMAC-SHA256(secret, "v0:<t>:<body>")>`, `t` within the tolerance (5 minutes by default).
//! - `hmac-sha256`: `<header>: [sha256=]<hex HMAC-SHA256(secret, body)>` (header
//!   `X-Signature-256` unless the trigger names another).
//!
//! A verified delivery has a replay id, its signature (with its timestamp where the scheme signs
//! one): the caller remembers it for the window and refuses the same delivery again. Not a
//! sender's delivery id (`X-GitHub-Delivery`): no scheme signs it, so a replay could change it. Comparisons are constant-time
//! (`hmac`'s `verify_slice`). Pure: the caller gives the secret, the headers and `now`.

use hmac::{Hmac, Mac};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::limits;
use crate::schedule::{ScheduleError, present, shown};
use crate::time::Ts;

/// A signing scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Github,
    Stripe,
    Slack,
    HmacSha256,
}

impl Scheme {
    pub const ALL: [Scheme; 4] = [Scheme::Github, Scheme::Stripe, Scheme::Slack, Scheme::HmacSha256];

    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Github => "github",
            Scheme::Stripe => "stripe",
            Scheme::Slack => "slack",
            Scheme::HmacSha256 => "hmac-sha256",
        }
    }

    pub fn parse(word: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// Whether the scheme signs a timestamp (and so ages out).
    pub fn timed(self) -> bool {
        matches!(self, Scheme::Stripe | Scheme::Slack)
    }
}

/// The header a `hmac-sha256` signature comes in when the trigger names none.
pub const HMAC_HEADER_DEFAULT: &str = "X-Signature-256";

/// `mode: webhook`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookTrigger {
    /// The last segment of `/hooks/<path>`.
    pub path: String,
    /// The environment variable holding the signing secret.
    pub secret_env: String,
    pub scheme: Scheme,
    /// For `hmac-sha256`: the header carrying the signature.
    pub header: String,
    /// How old a timestamped signature may be, either way, in seconds.
    pub tolerance_seconds: u64,
}

/// Whether `s` can be a hook's path: 1 to 64 letters, digits, '_' and '-'.
pub fn is_path(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `s` can name the secret's variable: letters, digits and '_', not starting with a digit,
/// and none of vwf's own (`VWF_*`: the API token, the database URL).
pub fn is_secret_env(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && s.len() <= 128
        && !s.to_ascii_uppercase().starts_with("VWF_")
}

/// Reads a webhook trigger node's fields, recording each problem.
pub(crate) fn webhook_mode(node: &Map<String, Value>, issues: &mut Vec<ScheduleError>) -> Option<WebhookTrigger> {
    let path = match present(node, "path").and_then(Value::as_str) {
        Some(p) if is_path(p) => Some(p.to_string()),
        other => {
            let got = present(node, "path").map(|v| format!(", got {}", shown(v))).unwrap_or_default();
            let _ = other;
            issues.push(ScheduleError::new(
                "path",
                format!("a webhook trigger needs a path: 1 to 64 letters, digits, '_' or '-' (served at POST /hooks/<path>){got}"),
            ));
            None
        }
    };
    let secret_env = match present(node, "secret_env").and_then(Value::as_str) {
        Some(v) if is_secret_env(v) => Some(v.to_string()),
        _ => {
            let got = present(node, "secret_env").map(|v| format!(", got {}", shown(v))).unwrap_or_default();
            issues.push(ScheduleError::new(
                "secret_env",
                format!("a webhook trigger needs secret_env: the environment variable holding the signing secret (letters, digits, '_'; not VWF_*){got}"),
            ));
            None
        }
    };
    let words = Scheme::ALL.map(Scheme::as_str).join(", ");
    let scheme = match present(node, "signature") {
        Some(Value::String(s)) => Scheme::parse(s).or_else(|| {
            issues.push(ScheduleError::new("signature", format!("unknown signature {s:?} (use {words})")));
            None
        }),
        other => {
            let got = other.map(|v| format!(", got {}", shown(v))).unwrap_or_default();
            issues.push(ScheduleError::new("signature", format!("a webhook trigger needs signature: one of {words}{got}")));
            None
        }
    };
    let header = match present(node, "header") {
        None => Some(HMAC_HEADER_DEFAULT.to_string()),
        Some(Value::String(h)) if !h.is_empty() && h.len() <= 64 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {
            Some(h.clone())
        }
        Some(other) => {
            issues.push(ScheduleError::new(
                "header",
                format!("header must be an HTTP header name (letters, digits, '-'), got {}", shown(other)),
            ));
            None
        }
    };
    let tolerance_seconds = match present(node, "tolerance_seconds") {
        None => Some(limits::WEBHOOK_TOLERANCE_DEFAULT_SECONDS),
        Some(v) => match v.as_u64().filter(|n| limits::within(*n, limits::WEBHOOK_TOLERANCE_SECONDS)) {
            Some(n) => Some(n),
            None => {
                let (lo, hi) = limits::WEBHOOK_TOLERANCE_SECONDS;
                issues.push(ScheduleError::new(
                    "tolerance_seconds",
                    format!("tolerance_seconds must be a whole number from {lo} to {hi}, got {}", shown(v)),
                ));
                None
            }
        },
    };
    Some(WebhookTrigger { path: path?, secret_env: secret_env?, scheme: scheme?, header: header?, tolerance_seconds: tolerance_seconds? })
}

/// Why a delivery is refused (each a 401, counted by its `reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The signature (or its timestamp) header is not there.
    Missing(String),
    /// A header is there but not in the scheme's form.
    Malformed(String),
    /// The timestamp is outside the tolerance.
    Stale(String),
    /// No signature matches the body.
    Mismatch,
}

impl Refusal {
    /// The label counted in `/metrics`.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Missing(_) => "missing",
            Refusal::Malformed(_) => "malformed",
            Refusal::Stale(_) => "stale",
            Refusal::Mismatch => "mismatch",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Missing(h) => write!(f, "the request has no {h} header"),
            Refusal::Malformed(why) => f.write_str(why),
            Refusal::Stale(why) => f.write_str(why),
            Refusal::Mismatch => f.write_str("the signature does not match the body"),
        }
    }
}

/// A delivery whose signature holds: `replay_id` names it (its signed parts), for the caller to
/// refuse the same delivery again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub replay_id: String,
}

/// Checks a delivery of `body` with the headers `header` answers (by name, any case) against
/// `hook`'s scheme and `secret`, at `now`.
pub fn verify(
    hook: &WebhookTrigger,
    header: &dyn Fn(&str) -> Option<String>,
    body: &[u8],
    secret: &[u8],
    now: Ts,
) -> Result<Verified, Refusal> {
    let need = |name: &str| header(name).ok_or_else(|| Refusal::Missing(name.to_string()));
    match hook.scheme {
        Scheme::Github => {
            let given = need("X-Hub-Signature-256")?;
            let hex = given.strip_prefix("sha256=").ok_or_else(|| Refusal::Malformed("X-Hub-Signature-256 is not sha256=<hex>".into()))?;
            check(secret, &[body], hex)?;
            // Not the X-GitHub-Delivery id: GitHub does not sign it, so a captured body resent
            // under a new id would pass for a new delivery. The signature names the body.
            Ok(Verified { replay_id: format!("sig:{}", hex.to_ascii_lowercase()) })
        }
        Scheme::HmacSha256 => {
            let given = need(&hook.header)?;
            let hex = given.strip_prefix("sha256=").unwrap_or(&given);
            check(secret, &[body], hex)?;
            Ok(Verified { replay_id: format!("sig:{}", hex.to_ascii_lowercase()) })
        }
        Scheme::Stripe => {
            let given = need("Stripe-Signature")?;
            let mut t = None;
            let mut v1 = Vec::new();
            for part in given.split(',') {
                match part.trim().split_once('=') {
                    Some(("t", v)) => t = Some(v.to_string()),
                    Some(("v1", v)) => v1.push(v.to_string()),
                    _ => {}
                }
            }
            let t = t.ok_or_else(|| Refusal::Malformed("Stripe-Signature has no t=<timestamp>".into()))?;
            fresh(&t, hook.tolerance_seconds, now)?;
            if v1.is_empty() {
                return Err(Refusal::Malformed("Stripe-Signature has no v1=<signature>".into()));
            }
            let matched = v1.iter().find(|sig| check(secret, &[t.as_bytes(), b".", body], sig).is_ok()).ok_or(Refusal::Mismatch)?;
            Ok(Verified { replay_id: format!("sig:{t}:{}", matched.to_ascii_lowercase()) })
        }
        Scheme::Slack => {
            let t = need("X-Slack-Request-Timestamp")?;
            let given = need("X-Slack-Signature")?;
            fresh(&t, hook.tolerance_seconds, now)?;
            let hex = given.strip_prefix("v0=").ok_or_else(|| Refusal::Malformed("X-Slack-Signature is not v0=<hex>".into()))?;
            check(secret, &[b"v0:", t.as_bytes(), b":", body], hex)?;
            Ok(Verified { replay_id: format!("sig:{t}:{}", hex.to_ascii_lowercase()) })
        }
    }
}

/// Whether the unix time `t` is within `tolerance` seconds of `now`.
fn fresh(t: &str, tolerance: u64, now: Ts) -> Result<(), Refusal> {
    let at: i64 = t.trim().parse().map_err(|_| Refusal::Malformed(format!("the timestamp {t:?} is not a unix time")))?;
    let age = now.timestamp().saturating_sub(at).unsigned_abs();
    if age > tolerance {
        return Err(Refusal::Stale(format!(
            "the signature's timestamp is {age} s from now, more than the {tolerance} s allowed (a replay, or a clock that is off)"
        )));
    }
    Ok(())
}

/// Whether `hex` is the HMAC-SHA256 of `parts` (in order) under `secret`, compared in constant time.
fn check(secret: &[u8], parts: &[&[u8]], hex: &str) -> Result<(), Refusal> {
    let given = decode_hex(hex.trim()).ok_or(Refusal::Mismatch)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| Refusal::Mismatch)?;
    for part in parts {
        mac.update(part);
    }
    mac.verify_slice(&given).map_err(|_| Refusal::Mismatch)
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sign(secret: &[u8], parts: &[&[u8]]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        for p in parts {
            mac.update(p);
        }
        mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    fn hook(scheme: &str) -> WebhookTrigger {
        let node = json!({"mode": "webhook", "path": "gh", "secret_env": "HOOK_SECRET", "signature": scheme});
        let mut issues = Vec::new();
        webhook_mode(node.as_object().unwrap(), &mut issues).expect("a valid webhook trigger")
    }

    fn at(unix: i64) -> Ts {
        chrono::DateTime::from_timestamp(unix, 0).unwrap()
    }

    #[test]
    fn each_scheme_accepts_its_signature_and_refuses_a_flipped_byte_a_stale_time_and_a_missing_header() {
        let (secret, body, now) = (b"It's a Secret to Everybody".as_slice(), br#"{"n":1}"#.as_slice(), 1_700_000_000);
        let t = now.to_string();
        let cases: Vec<(&str, Vec<(String, String)>)> = vec![
            (
                "github",
                vec![
                    ("X-Hub-Signature-256".into(), format!("sha256={}", sign(secret, &[body]))),
                    ("X-GitHub-Delivery".into(), "d-1".into()),
                ],
            ),
            ("hmac-sha256", vec![("X-Signature-256".into(), sign(secret, &[body]))]),
            ("stripe", vec![("Stripe-Signature".into(), format!("t={t},v1={},v0=00", sign(secret, &[t.as_bytes(), b".", body])))]),
            (
                "slack",
                vec![
                    ("X-Slack-Request-Timestamp".into(), t.clone()),
                    ("X-Slack-Signature".into(), format!("v0={}", sign(secret, &[b"v0:", t.as_bytes(), b":", body]))),
                ],
            ),
        ];
        for (scheme, headers) in cases {
            let h = hook(scheme);
            let get = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
            let ok = verify(&h, &get, body, secret, at(now)).unwrap_or_else(|e| panic!("{scheme}: {e}"));
            assert!(!ok.replay_id.is_empty());
            let mut flipped = body.to_vec();
            flipped[2] ^= 1;
            assert_eq!(verify(&h, &get, &flipped, secret, at(now)), Err(Refusal::Mismatch), "{scheme}");
            assert_eq!(verify(&h, &get, body, b"another secret", at(now)), Err(Refusal::Mismatch), "{scheme}");
            let none = |_: &str| None;
            assert!(matches!(verify(&h, &none, body, secret, at(now)), Err(Refusal::Missing(_))), "{scheme}");
            let later = verify(&h, &get, body, secret, at(now + 301));
            if h.scheme.timed() {
                assert!(matches!(later, Err(Refusal::Stale(_))), "{scheme}: {later:?}");
            } else {
                assert!(later.is_ok(), "{scheme}");
            }
        }
    }

    #[test]
    fn a_webhook_node_names_each_bad_field() {
        let node = json!({"mode": "webhook", "path": "a/b", "secret_env": "VWF_TOKEN", "signature": "md5", "tolerance_seconds": 0});
        let mut issues = Vec::new();
        assert!(webhook_mode(node.as_object().unwrap(), &mut issues).is_none());
        let fields: Vec<&str> = issues.iter().filter_map(|i| i.field.as_deref()).collect();
        assert_eq!(fields, ["path", "secret_env", "signature", "tolerance_seconds"]);
    }
}
