//! `{{secrets.NAME}}` (SPEC §17): values a design refers to by name and never holds.
//!
//! The caller resolves the names from wherever it keeps them (the binary: `[secrets] NAME =
//! "ENV_VAR"`, read from the environment when a step is sent) and hands them to the engine with
//! each [`crate::run::Run::advance_with`]. The engine renders them only where a step sends them
//! (an http step's `url`, `headers` and `body`, a command step's `env`), and what it records of a
//! task has every secret value replaced by [`crate::run::inputs::REDACTED`]; the caller scrubs a
//! step's outcome with [`Secrets::scrub`] before handing it back, so a peer that echoes a secret
//! leaves `***` in the record.
//!
//! Invariants: the `Debug` form names the secrets, never their values; nothing here is
//! serialized.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::run::inputs::REDACTED;

/// Resolved secrets, by name.
#[derive(Clone, Default, PartialEq)]
pub struct Secrets {
    values: BTreeMap<String, String>,
    /// Names the caller knows of but could not resolve, with why (shown in the step's error).
    missing: BTreeMap<String, String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secrets").field("names", &self.values.keys().collect::<Vec<_>>()).field("missing", &self.missing).finish()
    }
}

/// Whether `name` can be a secret's name: letters, digits and `_`, not starting with a digit.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl Secrets {
    pub fn insert(&mut self, name: &str, value: String) {
        self.missing.remove(name);
        self.values.insert(name.to_string(), value);
    }

    /// Records that `name` is known but has no value now, and `why`.
    pub fn missing(&mut self, name: &str, why: String) {
        self.values.remove(name);
        self.missing.insert(name.to_string(), why);
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of `name`, or the error a step that needs it fails with.
    pub fn get(&self, name: &str) -> Result<&str, String> {
        if let Some(v) = self.values.get(name) {
            return Ok(v);
        }
        Err(match self.missing.get(name) {
            Some(why) => format!("secret {name:?} has no value: {why}"),
            None => format!("unknown secret {name:?}: configure it as [secrets] {name} = \"<ENV_VAR>\""),
        })
    }

    /// `text` with every secret value replaced by `***` (longest values first, so a value that
    /// contains another is replaced whole).
    pub fn scrub_str(&self, text: &str) -> Option<String> {
        let mut values: Vec<&str> = self.values.values().map(String::as_str).filter(|v| !v.is_empty()).collect();
        if !values.iter().any(|v| text.contains(v)) {
            return None;
        }
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        let mut out = text.to_string();
        for v in values {
            out = out.replace(v, REDACTED);
        }
        Some(out)
    }

    /// Replaces every secret value in the strings (and object keys) of `value` by `***`.
    pub fn scrub(&self, value: &mut Value) {
        if self.values.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Some(clean) = self.scrub_str(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub(v)),
            Value::Object(map) => {
                if map.keys().any(|k| self.scrub_str(k).is_some()) {
                    *map = std::mem::take(map).into_iter().map(|(k, v)| (self.scrub_str(&k).unwrap_or(k), v)).collect();
                }
                map.values_mut().for_each(|v| self.scrub(v));
            }
            _ => {}
        }
    }

    /// [`Secrets::scrub_str`] in place.
    pub fn scrub_string(&self, text: &mut String) {
        if let Some(clean) = self.scrub_str(text) {
            *text = clean;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_scrubbed_and_never_shown() {
        let mut s = Secrets::default();
        s.insert("A", "tok".into());
        s.insert("B", "tok-longer".into());
        s.missing("C", "its environment variable C_VAR is not set".into());
        let mut v = json!({"x": "a tok-longer and tok", "tok": ["tok"], "n": 1});
        s.scrub(&mut v);
        assert_eq!(v, json!({"x": "a *** and ***", "***": ["***"], "n": 1}));
        let shown = format!("{s:?}");
        assert!(!shown.contains("tok-longer") && shown.contains("\"A\""), "{shown}");
        assert_eq!(s.get("A"), Ok("tok"));
        assert!(s.get("C").unwrap_err().contains("C_VAR is not set"));
        assert!(s.get("D").unwrap_err().contains("[secrets] D"));
        assert!(is_name("API_KEY") && is_name("_x1") && !is_name("1x") && !is_name("a-b") && !is_name(""));
    }
}
