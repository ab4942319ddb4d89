//! Activities: each item of a workflow's `activities` becomes a node of the matching type,
//! with its fields renamed to ours and the rest kept and noted.

use super::*;
use crate::design::NodeKind;

/// Activity type names an agent.json may use, by our node type.
pub(super) const TYPE_ALIASES: [(NodeKind, &[&str]); 11] = [
    (NodeKind::Agent, &["agent", "llm", "model", "ai", "prompt", "task", "activity"]),
    (NodeKind::Command, &["command", "shell", "bash", "sh", "exec", "cmd", "script"]),
    (NodeKind::Http, &["http", "request", "fetch", "api", "webrequest", "web_request"]),
    (NodeKind::Condition, &["condition", "if", "branch", "check", "decision"]),
    (NodeKind::Loop, &["loop", "foreach", "for_each", "for-each", "each", "map", "iterate"]),
    (NodeKind::Wait, &["wait", "sleep", "delay", "pause"]),
    (NodeKind::Approval, &["approval", "approve", "gate", "human", "review"]),
    (NodeKind::Output, &["output", "deliver", "delivery", "notify", "notification", "send"]),
    (NodeKind::Emit, &["emit", "event", "announce"]),
    (NodeKind::Note, &["note", "comment", "sticky"]),
    (NodeKind::Trigger, &["trigger"]),
];

/// Fields each node type reads (SPEC §3), beyond `id`, `type`, `label`, `x`, `y`.
pub(super) fn known_fields(kind: NodeKind) -> &'static [&'static str] {
    match kind {
        NodeKind::Agent => &["prompt", "profile", "model", "retries", "timeout_seconds", "max_tokens"],
        NodeKind::Condition => &["expr"],
        NodeKind::Approval => &["question", "options", "timeout_minutes", "on_timeout"],
        NodeKind::Output => &["deliver", "target", "template"],
        NodeKind::Note => &["text", "color"],
        NodeKind::Command => &["run", "argv", "cwd", "env", "timeout_seconds"],
        NodeKind::Http => &["url", "method", "headers", "body", "timeout_seconds", "accept"],
        NodeKind::Loop => &["over", "max_items", "concurrency"],
        NodeKind::Wait => &["seconds", "duration"],
        NodeKind::Emit => &["event", "payload"],
        _ => &[],
    }
}

pub(super) fn activity(i: usize, item: &Value, graph: &mut Graph, notes: &mut Notes) {
    let mut fields = match item {
        Value::String(prompt) => {
            let mut m = Map::new();
            m.insert("prompt".into(), json!(prompt));
            m
        }
        Value::Object(m) => m.clone(),
        other => {
            notes.add(format!("activities[{i}] must be text or an object, got {}; skipped", kind_of(other)));
            return;
        }
    };
    let mut names: Vec<String> = Vec::new();
    for key in ["id", "name", "key"] {
        if let Some(Value::String(s)) = fields.get(key)
            && !names.contains(s)
        {
            names.push(s.clone());
        }
    }
    let original = take_str(&mut fields, &["id"]).or_else(|| take_str(&mut fields, &["name", "key"]));
    if let Some(Value::String(display)) = fields.get("name")
        && !fields.contains_key("label")
    {
        let display = display.clone();
        fields.remove("name");
        fields.insert("label".into(), json!(display));
    }
    let fallback = format!("step{}", i + 1);
    let shown = original.clone().unwrap_or_else(|| fallback.clone());

    let named = take_str(&mut fields, &["type", "kind"]);
    let kind = match &named {
        Some(t) => {
            let lower = t.trim().to_ascii_lowercase();
            match TYPE_ALIASES.iter().find(|(_, a)| a.contains(&lower.as_str())) {
                Some((kind, _)) => *kind,
                None => {
                    notes.add(format!(
                        "activity {shown:?} has type {t:?}, which has no equivalent; imported as an agent step (original type kept in \"imported_type\")"
                    ));
                    fields.insert("imported_type".into(), json!(t));
                    NodeKind::Agent
                }
            }
        }
        None => infer_type(&fields),
    };
    if kind == NodeKind::Trigger {
        notes.add(format!("activity {shown:?} is a trigger; a design has one trigger ({TRIGGER_ID:?}), so connections to it lead there"));
        for name in names {
            graph.aliases.entry(name).or_insert_with(|| TRIGGER_ID.to_string());
        }
        return;
    }

    let base = original.as_deref().map(node_id).filter(|s| !s.is_empty()).unwrap_or(fallback);
    let id = unique(&base, &graph.ids, &[TRIGGER_ID, EMIT_ID]);
    if let Some(orig) = &original
        && &id != orig
    {
        notes.add(format!(
            "activity {orig:?} is node {id:?} (node ids are unique, 1-64 of letters, digits, '.', '_', '-'; {TRIGGER_ID:?} and {EMIT_ID:?} are taken); templates that name it need the new id"
        ));
        if !fields.contains_key("label") {
            fields.insert("label".into(), json!(orig));
        }
    }
    for name in names {
        graph.aliases.entry(name).or_insert_with(|| id.clone());
    }
    map_fields(kind, &id, &mut fields, notes);

    let mut node = Map::new();
    node.insert("id".into(), json!(id));
    node.insert("type".into(), json!(kind.as_str()));
    let known = known_fields(kind);
    let unused: Vec<&str> =
        fields.keys().map(String::as_str).filter(|k| !known.contains(k) && !["label", "x", "y", "imported_type"].contains(k)).collect();
    if !unused.is_empty() {
        notes.add(format!("node {id:?}: fields kept without an equivalent: {}", unused.join(", ")));
    }
    keep_leftovers(&mut node, fields, &format!("node {id:?}"), notes);
    graph.add(node);
}

pub(super) fn infer_type(fields: &Map<String, Value>) -> NodeKind {
    let has = |keys: &[&str]| keys.iter().any(|k| fields.get(*k).is_some_and(|v| !v.is_null()));
    if has(&["prompt", "instructions"]) {
        NodeKind::Agent
    } else if has(&["command", "run", "cmd", "script", "argv"]) {
        NodeKind::Command
    } else if has(&["url"]) {
        NodeKind::Http
    } else {
        NodeKind::Agent
    }
}

/// Moves the agent.json spellings of a type's fields to ours.
pub(super) fn map_fields(kind: NodeKind, id: &str, f: &mut Map<String, Value>, notes: &mut Notes) {
    let budget_keys = ["token_budget", "max_tokens", "tokens", "budget", "token_limit", "max_output_tokens"];
    match kind {
        NodeKind::Agent => {
            rename(f, "prompt", &["instructions", "description", "task", "goal"]);
            if let Some(Value::Array(lines)) = f.get("prompt")
                && lines.iter().all(Value::is_string)
            {
                let text: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
                let text = text.join("\n");
                f.insert("prompt".into(), json!(text));
            }
            if let Some(v) = take(f, &budget_keys) {
                let tokens = match &v {
                    Value::Object(o) => ["tokens", "max_tokens", "total"].iter().find_map(|k| o.get(*k)).cloned().unwrap_or(v.clone()),
                    _ => v.clone(),
                };
                f.insert("max_tokens".into(), whole(&tokens).map_or(tokens, |n| json!(n)));
            }
            rename(f, "retries", &["max_retries", "retry"]);
            rename(f, "timeout_seconds", &["timeout"]);
        }
        NodeKind::Command => {
            rename(f, "run", &["command", "cmd", "script", "shell", "bash"]);
            if matches!(f.get("run"), Some(Value::Array(_)))
                && !f.contains_key("argv")
                && let Some(argv) = f.remove("run")
            {
                f.insert("argv".into(), argv);
            }
            rename(f, "cwd", &["workdir", "working_dir", "dir", "directory"]);
            rename(f, "env", &["environment"]);
            rename(f, "timeout_seconds", &["timeout"]);
        }
        NodeKind::Http => {
            rename(f, "url", &["endpoint", "href", "uri"]);
            rename(f, "body", &["data", "json", "payload"]);
            rename(f, "timeout_seconds", &["timeout"]);
        }
        NodeKind::Condition => {
            rename(f, "expr", &["expression", "condition", "if", "test", "when", "check"]);
            if let Some(Value::String(e)) = f.get("expr")
                && let Some(ours) = expr_from_template(e)
            {
                f.insert("expr".into(), json!(ours));
            }
        }
        NodeKind::Loop => {
            rename(f, "over", &["items", "for_each", "foreach", "each", "in", "list", "source"]);
            rename(f, "max_items", &["limit", "max"]);
            rename(f, "concurrency", &["parallel", "parallelism"]);
        }
        NodeKind::Wait if !f.contains_key("seconds") && !f.contains_key("duration") => {
            match take(f, &["delay", "wait", "for", "time", "sleep"]) {
                Some(Value::String(s)) if s.trim().bytes().all(|b| b.is_ascii_digit()) && !s.trim().is_empty() => {
                    f.insert("seconds".into(), s.trim().parse::<u64>().map_or(json!(s), |n| json!(n)));
                }
                Some(Value::String(s)) => {
                    f.insert("duration".into(), json!(s.trim()));
                }
                Some(v) => {
                    f.insert("seconds".into(), v);
                }
                None => {}
            }
        }
        NodeKind::Approval => {
            rename(f, "question", &["prompt", "message", "ask", "text", "description"]);
            rename(f, "options", &["choices", "answers"]);
        }
        NodeKind::Output => {
            rename(f, "template", &["message", "text", "format"]);
            rename(f, "target", &["channel", "to", "destination"]);
            if let (Some(Value::String(t)), false) = (f.get("target"), f.contains_key("deliver")) {
                let deliver = if t.contains(':') { "channel" } else { "notification" };
                f.insert("deliver".into(), json!(deliver));
            }
        }
        NodeKind::Emit => {
            rename(f, "event", &["event_name", "topic"]);
            rename(f, "payload", &["data"]);
        }
        NodeKind::Note => rename(f, "text", &["content", "description"]),
        _ => {}
    }
    if kind != NodeKind::Agent {
        if f.remove("retries").is_some() {
            notes.add(format!("node {id:?}: retries dropped (only agent steps retry)"));
        }
        if let Some(key) = budget_keys.iter().find(|k| f.contains_key(**k)) {
            notes.add(format!("node {id:?}: token budget {key:?} has no effect on a {kind} step (no model runs there); kept as is"));
        }
    }
}

/// `{{nodes.check.count}} > 3` → `out.check.count > 3`; `None` when not of that shape.
pub(super) fn expr_from_template(e: &str) -> Option<String> {
    let rest = e.trim().strip_prefix("{{")?;
    let (inner, after) = rest.split_once("}}")?;
    let reference = inner.trim().strip_prefix("nodes.")?;
    Some(format!("out.{reference}{after}"))
}
