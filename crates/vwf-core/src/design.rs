//! The design document (SPEC §2): a graph of flat, typed nodes and labelled edges.
//!
//! A design is kept as the JSON it was written in: every node and edge holds its raw object, so
//! fields this version does not know survive a save/load round trip untouched. Typed views of a
//! node's fields are made by `spec.rs`; this module only knows ids, types and endpoints.
//! The sequential form (`activities: [...]` without `edges`) is turned into a chain here.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::validate::Issue;
pub use crate::vocab::{NODE_TYPES, NodeKind};

/// One node: its id, its type and the raw object it came from (all fields, flat). `kind` is
/// `None` for a type outside SPEC §3, which the validator reports (the word stays in `raw`).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub kind: Option<NodeKind>,
    pub raw: Map<String, Value>,
}

impl Node {
    /// A node read from its raw object; the type comes from its `type` field.
    pub fn new(id: impl Into<String>, raw: Map<String, Value>) -> Node {
        Node { id: id.into(), kind: crate::spec::kind_of(&raw).parse().ok(), raw }
    }
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.raw.get(name)
    }
    pub fn is(&self, kind: NodeKind) -> bool {
        self.kind == Some(kind)
    }
    /// The `type` as written, known or not (for messages).
    pub fn type_name(&self) -> &str {
        crate::spec::kind_of(&self.raw)
    }
}

/// An edge label as stored (§3): edges leaving a condition or a loop are matched without regard to
/// case and stored lowercase; other labels are kept as written.
pub fn stored_label(from_kind: Option<NodeKind>, label: &str) -> String {
    let worded =
        from_kind.is_some_and(NodeKind::has_word_labels) || crate::vocab::Route::of(from_kind, Some(label)) == crate::vocab::Route::Error;
    if worded { label.to_ascii_lowercase() } else { label.to_string() }
}

/// One edge `{from, to, label?}`; `label` is stored lowercase for conditions (§3).
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub label: Option<String>,
    pub raw: Map<String, Value>,
}

/// A parsed design. `raw` keeps every top-level field other than `nodes` and `edges`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Design {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub raw: Map<String, Value>,
}

impl Design {
    /// Reads a design from JSON, reporting every shape problem it finds.
    pub fn from_value(value: &Value) -> Result<Design, Vec<Issue>> {
        let Some(top) = value.as_object() else {
            return Err(vec![Issue::design("a design must be a JSON object with \"nodes\" and \"edges\"")]);
        };
        let mut issues = Vec::new();
        let mut raw = top.clone();
        let nodes_value = raw.remove("nodes");
        let edges_value = raw.remove("edges");
        let activities = raw.get("activities").cloned();

        let mut design = Design { raw, ..Design::default() };
        match (&nodes_value, &edges_value, activities) {
            (None, None, Some(acts)) => {
                design.raw.remove("activities");
                sequential(&acts, &mut design, &mut issues);
            }
            _ => {
                match nodes_value {
                    None => issues.push(Issue::field_only("nodes", "a design needs a \"nodes\" array")),
                    Some(Value::Array(items)) => {
                        for (i, item) in items.iter().enumerate() {
                            match node_from_value(item, i) {
                                Ok(n) => design.nodes.push(n),
                                Err(e) => issues.push(e),
                            }
                        }
                    }
                    Some(_) => issues.push(Issue::field_only("nodes", "\"nodes\" must be an array")),
                }
                match edges_value {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(items)) => {
                        for (i, item) in items.iter().enumerate() {
                            match edge_from_value(item, i) {
                                Ok(e) => design.edges.push(e),
                                Err(e) => issues.push(e),
                            }
                        }
                    }
                    Some(_) => issues.push(Issue::field_only("edges", "\"edges\" must be an array")),
                }
            }
        }
        if issues.is_empty() { Ok(design) } else { Err(issues) }
    }

    pub fn to_value(&self) -> Value {
        let mut top = self.raw.clone();
        let nodes: Vec<Value> = self.nodes.iter().map(|n| Value::Object(n.raw.clone())).collect();
        let edges: Vec<Value> = self.edges.iter().map(edge_to_value).collect();
        top.insert("nodes".into(), Value::Array(nodes));
        top.insert("edges".into(), Value::Array(edges));
        Value::Object(top)
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Every edge label as stored ([`stored_label`]).
    pub fn normalize_labels(&mut self) {
        let kinds: std::collections::HashMap<&str, Option<NodeKind>> = self.nodes.iter().map(|n| (n.id.as_str(), n.kind)).collect();
        for e in &mut self.edges {
            let kind = kinds.get(e.from.as_str()).copied().flatten();
            e.label = e.label.as_deref().map(|l| stored_label(kind, l));
        }
    }

    pub fn trigger(&self) -> Option<&Node> {
        self.nodes.iter().find(|n| n.is(NodeKind::Trigger))
    }

    pub fn description(&self) -> Option<&str> {
        self.raw.get("description").and_then(Value::as_str)
    }

    /// `budget.tokens`, when set to something numeric.
    pub fn budget_tokens(&self) -> Option<&Value> {
        self.raw.get("budget").and_then(|b| b.get("tokens"))
    }

    /// `timeout` in seconds, when it reads (a duration like `"2h"`, or whole seconds; see
    /// [`read_timeout`]).
    pub fn timeout_seconds(&self) -> Option<u64> {
        self.raw.get(TIMEOUT).filter(|v| !v.is_null()).and_then(|v| read_timeout(v).ok())
    }

    /// `on_failure`: the design whose run a failed run of this one starts.
    pub fn on_failure(&self) -> Option<&Value> {
        self.raw.get(ON_FAILURE).filter(|v| !v.is_null())
    }

    /// Whether the design's automatic trigger fires (see [`is_enabled`]).
    pub fn enabled(&self) -> bool {
        self.raw.get(ENABLED) != Some(&Value::Bool(false))
    }
}

/// The top-level field of a design bounding how long its runs may take: `"timeout": "2h"`.
pub const TIMEOUT: &str = "timeout";
/// The longest `timeout` a design may give: 30 days.
pub const TIMEOUT_MAX_SECONDS: u64 = 30 * 86_400;

/// A design's `timeout`: a duration (`"90s"`, `"2h"`, `"1h30m"`) or whole seconds, from one second
/// to 30 days.
pub fn read_timeout(v: &Value) -> Result<u64, String> {
    crate::schedule::duration_or_seconds(v, 1, TIMEOUT_MAX_SECONDS, "30 days")
}

/// The top-level field of a design naming the design a failed run starts (SPEC §7, error
/// workflows): `"on_failure": "open-ticket"`.
pub const ON_FAILURE: &str = "on_failure";

/// The top-level field of a design that turns its automatic trigger (schedule, heartbeat, event,
/// folder, watch) off: `"enabled": false`. Absent means enabled. Kept in the document, so every
/// store keeps it and versions record it; imports write it for designs that would fire by
/// themselves, so nothing imported runs until a person enables it. A run started by hand
/// ignores it.
pub const ENABLED: &str = "enabled";

/// Whether a design document's automatic trigger fires: true unless `"enabled": false`.
pub fn is_enabled(graph: &Value) -> bool {
    graph.get(ENABLED) != Some(&Value::Bool(false))
}

impl Serialize for Design {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Design {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Design::from_value(&v).map_err(|issues| {
            let msgs: Vec<String> = issues.into_iter().map(|i| i.message).collect();
            serde::de::Error::custom(msgs.join("; "))
        })
    }
}

fn node_from_value(item: &Value, index: usize) -> Result<Node, Issue> {
    let Some(obj) = item.as_object() else {
        return Err(Issue::field_only("nodes", format!("nodes[{index}] must be an object")));
    };
    let id = match obj.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(Issue::field_only("id", format!("nodes[{index}]: \"id\" must be a string"))),
        None => return Err(Issue::field_only("id", format!("nodes[{index}] has no \"id\""))),
    };
    match obj.get("type") {
        Some(Value::String(_)) => Ok(Node::new(id, obj.clone())),
        Some(_) => Err(Issue::node_field(&id, "type", "\"type\" must be a string")),
        None => Err(Issue::node_field(&id, "type", "node has no \"type\"")),
    }
}

fn edge_from_value(item: &Value, index: usize) -> Result<Edge, Issue> {
    let bad = |msg: String| Issue { edge: Some(index), ..Issue::design(msg) };
    let Some(obj) = item.as_object() else {
        return Err(bad(format!("edges[{index}] must be an object {{from, to, label?}}")));
    };
    let end = |name: &str| match obj.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(format!("edges[{index}]: \"{name}\" must be a node id string"))),
        None => Err(bad(format!("edges[{index}] has no \"{name}\""))),
    };
    let from = end("from")?;
    let to = end("to")?;
    let label = match obj.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.trim().to_string()),
        Some(_) => return Err(bad(format!("edges[{index}]: \"label\" must be a string"))),
    };
    Ok(Edge { from, to, label, raw: obj.clone() })
}

fn edge_to_value(e: &Edge) -> Value {
    let mut obj = e.raw.clone();
    obj.insert("from".into(), Value::String(e.from.clone()));
    obj.insert("to".into(), Value::String(e.to.clone()));
    match &e.label {
        Some(l) => {
            obj.insert("label".into(), Value::String(l.clone()));
        }
        None => {
            obj.remove("label");
        }
    }
    Value::Object(obj)
}

/// The sequential form: each activity becomes a node (an agent unless it names a type),
/// chained in order. A string activity is an agent prompt.
fn sequential(acts: &Value, design: &mut Design, issues: &mut Vec<Issue>) {
    let Some(items) = acts.as_array() else {
        issues.push(Issue::field_only("activities", "\"activities\" must be an array"));
        return;
    };
    for (i, item) in items.iter().enumerate() {
        let mut obj = match item {
            Value::String(prompt) => {
                let mut m = Map::new();
                m.insert("prompt".into(), Value::String(prompt.clone()));
                m
            }
            Value::Object(m) => m.clone(),
            _ => {
                issues.push(Issue::field_only("activities", format!("activities[{i}] must be a string or an object")));
                continue;
            }
        };
        let id = match obj.get("id").or_else(|| obj.get("name")) {
            Some(Value::String(s)) => s.clone(),
            _ => format!("step{}", i + 1),
        };
        obj.insert("id".into(), Value::String(id.clone()));
        if !obj.contains_key("type") {
            obj.insert("type".into(), Value::String("agent".into()));
        }
        match node_from_value(&Value::Object(obj), i) {
            Ok(n) => design.nodes.push(n),
            Err(e) => issues.push(e),
        }
    }
    for pair in design.nodes.windows(2) {
        let (from, to) = (pair[0].id.clone(), pair[1].id.clone());
        let mut raw = Map::new();
        raw.insert("from".into(), Value::String(from.clone()));
        raw.insert("to".into(), Value::String(to.clone()));
        design.edges.push(Edge { from, to, label: None, raw });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_round_trip() {
        let v = json!({
            "description": "d", "budget": {"tokens": 10}, "canvas": {"zoom": 2},
            "nodes": [{"id": "a", "type": "agent", "prompt": "hi", "x": 1, "y": 2, "colour_hint": "red"}],
            "edges": [{"from": "a", "to": "a", "style": "dashed"}]
        });
        let d = Design::from_value(&v).unwrap();
        assert_eq!(d.to_value(), v);
    }

    #[test]
    fn sequential_form_becomes_a_chain() {
        let v = json!({"activities": ["first", {"name": "second", "prompt": "p2"}, {"type": "output"}]});
        let d = Design::from_value(&v).unwrap();
        let ids: Vec<_> = d.nodes.iter().map(|n| (n.id.as_str(), n.type_name())).collect();
        assert_eq!(ids, [("step1", "agent"), ("second", "agent"), ("step3", "output")]);
        let edges: Vec<_> = d.edges.iter().map(|e| (e.from.as_str(), e.to.as_str())).collect();
        assert_eq!(edges, [("step1", "second"), ("second", "step3")]);
    }

    #[test]
    fn shape_errors_are_reported_not_panicked() {
        for bad in [
            json!(null),
            json!([]),
            json!({"nodes": 3}),
            json!({"nodes": [1]}),
            json!({"nodes": [{"id": 1}]}),
            json!({"nodes": [], "edges": [{"from": "a"}]}),
            json!({"nodes": [{"id": "a"}]}),
        ] {
            assert!(Design::from_value(&bad).is_err(), "{bad} accepted");
        }
    }
}
