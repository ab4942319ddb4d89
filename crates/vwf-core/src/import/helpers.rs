//! Small helpers of the importer: taking fields, names and ids, and describing values.

use super::*;

/// Removes and returns the first of `keys` present with a non-null value.
pub(super) fn take(m: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
    let key = keys.iter().find(|k| m.get(**k).is_some_and(|v| !v.is_null()))?;
    m.remove(*key)
}

/// Like [`take`], for text only (other values stay where they are).
pub(super) fn take_str(m: &mut Map<String, Value>, keys: &[&str]) -> Option<String> {
    let key = keys.iter().find(|k| m.get(**k).is_some_and(Value::is_string))?;
    m.remove(*key).and_then(|v| v.as_str().map(str::to_string))
}

/// Moves the first present alias to `ours` unless `ours` is already set.
pub(super) fn rename(m: &mut Map<String, Value>, ours: &str, aliases: &[&str]) {
    if m.get(ours).is_some_and(|v| !v.is_null()) {
        return;
    }
    if let Some(v) = take(m, aliases) {
        m.insert(ours.to_string(), v);
    }
}

/// Adds leftover fields to a node without overwriting the ones the importer set.
pub(super) fn keep_leftovers(node: &mut Map<String, Value>, leftovers: Map<String, Value>, what: &str, notes: &mut Notes) {
    for (k, v) in leftovers {
        if node.contains_key(&k) {
            notes.add(format!("{what}: field {k:?} clashes with the imported one; dropped"));
        } else {
            node.insert(k, v);
        }
    }
}

/// A whole, non-negative number (also from a float like `2e4`).
pub(super) fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        (f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
    })
}

/// `5400` → `"1h30m"`; what `schedule::parse_duration` reads back.
pub(super) fn duration_text(secs: u64) -> String {
    if secs == 0 {
        return "0s".into();
    }
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    for (n, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

/// Letters, digits, `.`, `_`, `-`; every run of other characters becomes one `-`.
pub(super) fn clean(s: &str) -> String {
    let mut out = String::new();
    for c in s.trim().chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

pub(super) fn node_id(s: &str) -> String {
    clean(s).chars().take(MAX_ID_LEN).collect()
}

pub(super) fn design_name(key: &str, taken: &HashSet<String>) -> String {
    let cleaned = clean(key);
    let start = cleaned.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    let base: String = start.chars().take(MAX_ID_LEN).collect();
    let base = if base.is_empty() { "workflow".to_string() } else { base };
    unique(&base, taken, &[])
}

/// `base`, else `base-2`, `base-3`, … (shortened to fit), not in `taken` nor `reserved`.
pub(super) fn unique(base: &str, taken: &HashSet<String>, reserved: &[&str]) -> String {
    let free = |s: &str| !taken.contains(s) && !reserved.contains(&s);
    if free(base) {
        return base.to_string();
    }
    (2u64..)
        .map(|n| {
            let suffix = format!("-{n}");
            let keep = MAX_ID_LEN.saturating_sub(suffix.len());
            let head: String = base.chars().take(keep).collect();
            format!("{head}{suffix}")
        })
        .find(|s| free(s))
        .unwrap_or_else(|| base.to_string())
}

pub(super) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(super) fn describe_issue(issue: &Issue) -> String {
    let mut at = Vec::new();
    if let Some(node) = &issue.node {
        at.push(format!("node {node:?}"));
    }
    if let Some(edge) = issue.edge {
        at.push(format!("edge {edge}"));
    }
    if let Some(field) = &issue.field {
        at.push(format!("field {field:?}"));
    }
    if at.is_empty() { issue.message.clone() } else { format!("{} ({})", issue.message, at.join(", ")) }
}
