//! What a step received: the rendered inputs of a task, as the run record keeps them, with every
//! secret redacted.
//!
//! A task is what the core hands a driver, so its inputs are known the moment a step starts and
//! are recorded then (`StepRecord::inputs`), before anything leaves the machine. Secrets the
//! config names (API keys, bot tokens, webhook URLs and signing keys) never enter a task: the
//! drivers read them at call time, so they cannot reach the inputs. What the design itself may
//! carry is redacted here, the one place the rule lives:
//! - every value of a command's `env` entries (the design's own; template values travel as
//!   `VWF_VALUE_<n>` variables and are shown under `values`, as the script reads them);
//! - HTTP headers whose name says they carry a credential ([`is_secret_name`]);
//! - a URL's user info, and URL query parameters with a secret name;
//! - every value of a `{{secrets.NAME}}` the task was rendered with, wherever it stands.
//!
//! Invariant: a redacted value is replaced by [`REDACTED`] whole, never shortened or hashed, so
//! no part of it can be recovered from a run file.

use serde_json::{Map, Value, json};

use super::{Task, Work};

/// The JSON Schema of a step's recorded inputs: one shape per kind of task, as
/// `Task::inputs` writes them (stated here, beside the code that builds them, because they are built as JSON).
#[cfg(feature = "schema")]
pub fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let nullable_string = json!({"type": ["string", "null"]});
    schemars::json_schema!({
        "description": "What the latest attempt received, rendered; values of env entries and of credential headers, URL user info and secret query parameters are \"***\". Absent for steps the engine settles alone (condition, approval, wait, loop).",
        "oneOf": [
            {"type": "object", "description": "command", "required": ["cwd", "env"], "properties": {
                "run": {"type": "string", "description": "The script as sh runs it: template values are read from the VWF_VALUE_<n> variables in values."},
                "argv": {"type": "array", "items": {"type": "string"}},
                "cwd": nullable_string, "env": {"type": "object", "additionalProperties": {"const": REDACTED}},
                "values": {"type": "object", "additionalProperties": {"type": "string"}}}},
            {"type": "object", "description": "http", "required": ["method", "url", "headers", "body"], "properties": {
                "method": {"type": "string"}, "url": {"type": "string"}, "headers": {"type": "object", "additionalProperties": {"type": "string"}}, "body": {}}},
            {"type": "object", "description": "agent", "required": ["prompt", "profile", "model"], "properties": {
                "prompt": {"type": "string"}, "profile": nullable_string, "model": nullable_string}},
            {"type": "object", "description": "output with deliver", "required": ["deliver", "target", "text"], "properties": {
                "deliver": {"enum": ["notification", "channel"]}, "target": {"type": "string"}, "text": {"type": "string"}}},
            {"type": "object", "description": "emit", "required": ["event", "payload"], "properties": {"event": {"type": "string"}, "payload": {}}}
        ]
    })
}
use crate::secrets::Secrets;
use crate::shell::VALUE_VAR_PREFIX;
use crate::spec::{CommandStep, HttpStep, Program};

/// What a redacted value is shown as.
pub const REDACTED: &str = "***";

/// Words that mark a header or query parameter name as carrying a credential.
const SECRET_WORDS: [&str; 9] = ["auth", "token", "secret", "key", "password", "passwd", "cookie", "session", "signature"];

/// Whether a header or query parameter named `name` carries a credential (case-insensitive):
/// `Authorization`, `Proxy-Authorization`, `Cookie`, `X-Api-Key`, `X-Auth-Token`, `access_token`, …
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| name.contains(w))
}

/// `url` with its user info and the values of secret query parameters redacted.
pub fn redact_url(url: &str) -> String {
    let (base, fragment) = match url.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (url, None),
    };
    let (base, query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            // User info is a credential whether or not it has a password (`https://TOKEN@host`).
            let authority = match authority.rsplit_once('@') {
                Some((_, host)) => format!("{REDACTED}@{host}"),
                None => authority.to_string(),
            };
            format!("{scheme}://{authority}{path}")
        }
        None => base.to_string(),
    };
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_name(k) => format!("{k}={REDACTED}"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

impl Task {
    /// The rendered inputs of this task, secrets redacted (see the module doc). The shape per
    /// kind: command `{run | argv, cwd, env, values}`, http `{method, url, headers, body}`, agent
    /// `{prompt, profile, model}`, deliver `{deliver, target, text}`, emit `{event, payload}`.
    /// Every value of `secrets` is redacted wherever it stands.
    pub fn inputs(&self, secrets: &Secrets) -> Value {
        let mut inputs = self.shown_inputs();
        secrets.scrub(&mut inputs);
        inputs
    }

    fn shown_inputs(&self) -> Value {
        match &self.work {
            Work::Command(CommandStep { program, cwd, env, .. }) => {
                let mut out = Map::new();
                match program {
                    Program::Shell(script) => out.insert("run".into(), json!(script)),
                    Program::Argv(argv) => out.insert("argv".into(), json!(argv)),
                };
                out.insert("cwd".into(), json!(cwd));
                let (values, own): (Vec<_>, Vec<_>) = env.iter().partition(|(k, _)| k.starts_with(VALUE_VAR_PREFIX));
                let own: Map<String, Value> = own.into_iter().map(|(k, _)| (k.clone(), json!(REDACTED))).collect();
                let values: Map<String, Value> = values.into_iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                out.insert("env".into(), Value::Object(own));
                if !values.is_empty() {
                    out.insert("values".into(), Value::Object(values));
                }
                Value::Object(out)
            }
            Work::Http(HttpStep { url, method, headers, body, .. }) => {
                let headers: Map<String, Value> =
                    headers.iter().map(|(k, v)| (k.clone(), if is_secret_name(k) { json!(REDACTED) } else { json!(v) })).collect();
                json!({"method": method, "url": redact_url(url), "headers": headers, "body": body})
            }
            Work::Agent { prompt, profile, model, tools, .. } if !tools.is_empty() => {
                json!({"prompt": prompt, "profile": profile, "model": model, "tools": tools})
            }
            Work::Agent { prompt, profile, model, .. } => json!({"prompt": prompt, "profile": profile, "model": model}),
            Work::Deliver { message, deliver, target, .. } => json!({"deliver": deliver.as_str(), "target": target, "text": message}),
            Work::Emit { event, payload, .. } => json!({"event": event, "payload": payload}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in ["Authorization", "proxy-authorization", "Cookie", "X-Api-Key", "x-auth-token", "access_token", "X-Vwf-Signature"] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["Accept", "Content-Type", "User-Agent", "q", "page"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn urls() {
        assert_eq!(redact_url("https://u:p4ss@h.example/a?x=1&api_key=zz#f"), "https://***@h.example/a?x=1&api_key=***#f");
        assert_eq!(redact_url("http://127.0.0.1:8080/p"), "http://127.0.0.1:8080/p");
        assert_eq!(redact_url("https://tok3n@h/"), "https://***@h/");
    }
}
