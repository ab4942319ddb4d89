//! Connections of the graph form: endpoints (`__trigger__`, `__emit__`, activity names),
//! labels, the chain of a list-form workflow, and edges from loop bodies back to their loop.

use super::*;
use crate::design::NodeKind;
use crate::vocab::Route;

/// What `__emit__` becomes: the event name and an optional payload; `declared` when the workflow
/// itself says it emits (then a chain ends on it too).
pub(super) struct EmitSpec {
    event: Value,
    payload: Option<Value>,
    declared: bool,
}

pub(super) fn emit_spec(v: Option<Value>, name: &str, notes: &mut Notes) -> EmitSpec {
    let default = json!(format!("{name}.done"));
    let (event, payload, declared) = match v {
        None | Some(Value::Bool(false)) => (default, None, false),
        Some(Value::Bool(true)) => (default, None, true),
        Some(Value::String(s)) => (json!(s.trim()), None, true),
        Some(Value::Object(mut o)) => {
            let event = take(&mut o, &["event", "name", "topic"]).unwrap_or(default);
            (event, take(&mut o, &["payload", "data"]), true)
        }
        Some(other) => {
            notes.add(format!("emit must name an event, got {}; {name}.done is used", kind_of(&other)));
            (default, None, true)
        }
    };
    EmitSpec { event, payload, declared }
}

pub(super) fn add_emit(graph: &mut Graph, emit: &EmitSpec) {
    if graph.ids.contains(EMIT_ID) {
        return;
    }
    let mut node = Map::new();
    node.insert("id".into(), json!(EMIT_ID));
    node.insert("type".into(), json!("emit"));
    node.insert("event".into(), emit.event.clone());
    if let Some(p) = &emit.payload {
        node.insert("payload".into(), p.clone());
    }
    graph.add(node);
}

/// The sequential form: trigger, then each activity after the last (notes are left out: they
/// take no edges). An `emit` declared by the workflow ends the chain.
pub(super) fn chain(graph: &mut Graph, emit: &EmitSpec) {
    if emit.declared {
        add_emit(graph, emit);
    }
    let ids: Vec<String> = graph
        .nodes
        .iter()
        .filter(|n| n.get("type").and_then(Value::as_str) != Some("note"))
        .filter_map(|n| n.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    for pair in ids.windows(2) {
        graph.connect(&pair[0], &pair[1], None);
    }
}

/// Where an endpoint name leads, adding the emit node the first time `__emit__` is named.
pub(super) fn endpoint(name: &str, graph: &mut Graph, emit: &EmitSpec) -> Option<String> {
    match name.trim() {
        TRIGGER_ENDPOINT => Some(TRIGGER_ID.to_string()),
        EMIT_ENDPOINT => {
            add_emit(graph, emit);
            Some(EMIT_ID.to_string())
        }
        other => graph
            .aliases
            .get(name)
            .or_else(|| graph.aliases.get(other))
            .cloned()
            .or_else(|| graph.ids.contains(other).then(|| other.to_string())),
    }
}

/// `True`/`False` → `true`/`false`, `Each item` → `each`, `Done` → `done`; other labels (approval
/// answers) as written.
pub(super) fn edge_label(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Bool(b) => Some(b.to_string()),
        Value::String(s) => {
            let t = s.trim();
            let lower = t.to_ascii_lowercase();
            match lower.as_str() {
                "" => None,
                "true" | "false" | "done" | "each" => Some(lower),
                "each item" | "each_item" | "for each" | "item" => Some("each".into()),
                _ => Some(t.to_string()),
            }
        }
        _ => None,
    }
}

/// One raw connection: from, targets, label.
pub(super) type RawConnection = (Value, Vec<Value>, Option<String>);

pub(super) fn raw_connections(conns: &Value, notes: &mut Notes) -> Vec<RawConnection> {
    let mut out = Vec::new();
    let targets = |v: &Value| match v {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    match conns {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Object(o) => {
                        let get = |keys: &[&str]| keys.iter().find_map(|k| o.get(*k).filter(|v| !v.is_null()));
                        let from = get(&["from", "source", "src", "start"]);
                        let to = get(&["to", "target", "dst", "dest", "end"]);
                        let label = edge_label(get(&["label", "when", "condition", "branch", "on", "port", "output", "case", "handle"]));
                        match (from, to) {
                            (Some(f), Some(t)) => out.push((f.clone(), targets(t), label)),
                            _ => notes.add(format!("connections[{i}] needs from and to; skipped")),
                        }
                    }
                    Value::Array(parts) if (2..=3).contains(&parts.len()) => {
                        out.push((parts[0].clone(), vec![parts[1].clone()], edge_label(parts.get(2))));
                    }
                    Value::String(s) if s.contains("->") => {
                        if let Some((f, t)) = s.split_once("->") {
                            out.push((json!(f.trim()), vec![json!(t.trim())], None));
                        }
                    }
                    other => notes.add(format!("connections[{i}] is not a connection ({}); skipped", kind_of(other))),
                }
            }
        }
        // {"from": "to"}, {"from": ["a", "b"]}, {"from": [{"to", "label"}]}, {"check": {"True": "a"}}
        Value::Object(map) => {
            for (from, to) in map {
                match to {
                    Value::Object(by_label) => {
                        for (label, t) in by_label {
                            out.push((json!(from), targets(t), edge_label(Some(&json!(label)))));
                        }
                    }
                    Value::Array(items) => {
                        for item in items {
                            match item {
                                Value::Object(o) => {
                                    let t = o.get("to").or_else(|| o.get("target")).cloned().unwrap_or(Value::Null);
                                    let label = edge_label(o.get("label").or_else(|| o.get("when")));
                                    out.push((json!(from), vec![t], label));
                                }
                                other => out.push((json!(from), vec![other.clone()], None)),
                            }
                        }
                    }
                    other => out.push((json!(from), vec![other.clone()], None)),
                }
            }
        }
        other => notes.add(format!("connections must be a list, got {}; the activities are not connected", kind_of(other))),
    }
    out
}

pub(super) fn connections(conns: &Value, graph: &mut Graph, emit: &EmitSpec, notes: &mut Notes) {
    for (from, targets, label) in raw_connections(conns, notes) {
        let Some(from_name) = from.as_str().map(str::to_string) else {
            notes.add(format!("a connection's from must be a name, got {from}; skipped"));
            continue;
        };
        for to in targets {
            let Some(to_name) = to.as_str() else {
                notes.add(format!("connection from {from_name:?}: to must be a name, got {to}; skipped"));
                continue;
            };
            if from_name.trim() == EMIT_ENDPOINT {
                notes.add(format!("connection {EMIT_ENDPOINT} -> {to_name}: the emit ends a run; skipped"));
                continue;
            }
            if to_name.trim() == TRIGGER_ENDPOINT {
                notes.add(format!("connection {from_name} -> {TRIGGER_ENDPOINT}: nothing leads into the trigger; skipped"));
                continue;
            }
            let f = endpoint(&from_name, graph, emit);
            let t = endpoint(to_name, graph, emit);
            match (f, t) {
                (Some(f), Some(t)) => graph.connect(&f, &t, label.clone()),
                (f, _) => {
                    let unknown = if f.is_none() { &from_name } else { to_name };
                    notes.add(format!("connection {from_name} -> {to_name} names unknown activity {unknown:?}; skipped"));
                }
            }
        }
    }
}

/// A loop's pass ends at its body's last step; an edge from the body back to the loop (how some
/// graphs draw "next item") would be a cycle here, so it is dropped with a note.
pub(super) fn drop_loop_back_edges(graph: &mut Graph, notes: &mut Notes) {
    let loops: Vec<String> = graph
        .nodes
        .iter()
        .filter(|n| crate::spec::kind_of(n).parse() == Ok(NodeKind::Loop))
        .filter_map(|n| n.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    for lp in loops {
        let mut body: HashSet<String> = HashSet::new();
        let mut stack: Vec<String> = graph
            .edges
            .iter()
            .filter(|(f, t, l)| f == &lp && t != &lp && Route::of(Some(NodeKind::Loop), l.as_deref()) == Route::Each)
            .map(|(_, t, _)| t.clone())
            .collect();
        while let Some(n) = stack.pop() {
            if n == lp || !body.insert(n.clone()) {
                continue;
            }
            stack.extend(graph.edges.iter().filter(|(f, _, _)| f == &n).map(|(_, t, _)| t.clone()));
        }
        let before = graph.edges.len();
        graph.edges.retain(|(f, t, _)| !(t == &lp && body.contains(f)));
        if graph.edges.len() != before {
            notes.add(format!("edges from the body of loop {lp:?} back to it were dropped: a pass ends at its body's last step"));
        }
    }
}
