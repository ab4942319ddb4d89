//! Design versions: every content a design was saved with, numbered 1, 2, 3… per design, with a
//! content hash. The rules here are pure (the store keeps the records, the service decides when
//! to add one): the hash of a design, whether a save makes a new version, the structural diff of
//! two versions and which versions a pruning removes.
//!
//! Invariants:
//! - the hash depends on the content only, not on the order of object keys: two saves of the same
//!   design give the same hash, so saving identical content makes no new version;
//! - a version, once recorded, never changes (a restore records the old content as a new version);
//! - the diff sorts every node and edge of either side into exactly one of added, removed, changed
//!   or unchanged; `diff(a, a)` has no change;
//! - pruning keeps the newest `keep` versions, the newest of all, and every version a kept run
//!   refers to.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::time::{self, Ts};

/// One recorded version of a design, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignVersion {
    pub version: u64,
    /// `sha256:<hex>` of the content's canonical JSON (see [`content_hash`]).
    pub hash: String,
    #[serde(with = "time")]
    pub saved_at: Ts,
    pub graph: Value,
}

impl DesignVersion {
    /// A listing line: `{version, hash, saved_at, nodes, edges}` (no graph).
    pub fn summary(&self) -> Value {
        serde_json::json!({
            "version": self.version,
            "hash": self.hash,
            "saved_at": time::format(&self.saved_at),
            "nodes": count(&self.graph, "nodes"),
            "edges": count(&self.graph, "edges"),
        })
    }
}

fn count(graph: &Value, key: &str) -> usize {
    graph.get(key).and_then(Value::as_array).map_or(0, Vec::len)
}

/// The JSON text of `value` with every object's keys sorted, so equal content has equal text.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let ordered: BTreeMap<&String, Value> = map.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// `sha256:<hex>` of the canonical JSON of a design.
pub fn content_hash(graph: &Value) -> String {
    let digest = Sha256::digest(canonical(graph).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What saving content with hash `hash` records, given the newest recorded version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recording {
    /// The newest version has this content: nothing to record.
    Same(u64),
    /// Record the content under this number: one more than the newest (numbers are never
    /// reused, as a pruning never removes the newest and a delete removes no version).
    New(u64),
}

pub fn recording(newest: Option<&DesignVersion>, hash: &str) -> Recording {
    match newest {
        Some(v) if v.hash == hash => Recording::Same(v.version),
        Some(v) => Recording::New(v.version + 1),
        None => Recording::New(1),
    }
}

/// The newest recorded version with this content, if any: the version a run of this content ran.
pub fn version_of<'a>(versions: &'a [DesignVersion], graph: &Value) -> Option<&'a DesignVersion> {
    let hash = content_hash(graph);
    versions.iter().filter(|v| v.hash == hash).max_by_key(|v| v.version)
}

/// The versions a pruning removes: all but the newest `keep` (and never the newest of all), and
/// none a kept run refers to. `keep = None` keeps everything.
pub fn prune(numbers: &[u64], keep: Option<u64>, referenced: &BTreeSet<u64>) -> Vec<u64> {
    let Some(keep) = keep else { return Vec::new() };
    let mut sorted: Vec<u64> = numbers.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    let keep = usize::try_from(keep.max(1)).unwrap_or(usize::MAX);
    let mut removed: Vec<u64> = sorted.into_iter().skip(keep).filter(|n| !referenced.contains(n)).collect();
    removed.sort_unstable();
    removed
}

/// A node or edge present on both sides whose content differs, with the fields that differ.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Changed {
    pub id: String,
    pub fields: Vec<String>,
}

/// How one kind of item (nodes, edges) differs between two versions.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ItemDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<Changed>,
    pub unchanged: Vec<String>,
}

impl ItemDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The structural diff of two designs: node by node (by id), edge by edge (by `from->to`, the
/// n-th edge between the same two nodes being `from->to#n`), and the design's own fields (all but
/// `nodes` and `edges`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DesignDiff {
    pub nodes: ItemDiff,
    pub edges: ItemDiff,
    /// Top-level fields (e.g. `description`) that differ.
    pub design: Vec<String>,
}

impl DesignDiff {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty() && self.design.is_empty()
    }
}

/// Diffs design `a` (older) against `b` (newer).
pub fn diff(a: &Value, b: &Value) -> DesignDiff {
    DesignDiff {
        nodes: diff_items(&keyed(a, "nodes", node_key), &keyed(b, "nodes", node_key)),
        edges: diff_items(&keyed(a, "edges", edge_key), &keyed(b, "edges", edge_key)),
        design: changed_fields(&top_level(a), &top_level(b)),
    }
}

fn top_level(graph: &Value) -> Map<String, Value> {
    let mut map = graph.as_object().cloned().unwrap_or_default();
    map.remove("nodes");
    map.remove("edges");
    map
}

fn node_key(item: &Value, index: usize) -> String {
    match item.get("id").and_then(Value::as_str) {
        Some(id) => id.to_string(),
        None => format!("#{index}"),
    }
}

fn edge_key(item: &Value, _index: usize) -> String {
    let end = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    format!("{}->{}", end("from"), end("to"))
}

/// The items of `graph[key]` by their key; a key seen again gets `#n` (n = 2, 3, …).
fn keyed(graph: &Value, key: &str, key_of: fn(&Value, usize) -> String) -> BTreeMap<String, Map<String, Value>> {
    let mut out = BTreeMap::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, item) in graph.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
        let base = key_of(item, i);
        let n = seen.entry(base.clone()).or_insert(0);
        *n += 1;
        let mut k = if *n == 1 { base } else { format!("{base}#{n}") };
        while out.contains_key(&k) {
            k.push('\'');
        }
        let fields = match item {
            Value::Object(map) => map.clone(),
            other => Map::from_iter([("value".to_string(), other.clone())]),
        };
        out.insert(k, fields);
    }
    out
}

fn diff_items(a: &BTreeMap<String, Map<String, Value>>, b: &BTreeMap<String, Map<String, Value>>) -> ItemDiff {
    let mut d = ItemDiff::default();
    for (k, old) in a {
        match b.get(k) {
            None => d.removed.push(k.clone()),
            Some(new) => {
                let fields = changed_fields(old, new);
                if fields.is_empty() {
                    d.unchanged.push(k.clone());
                } else {
                    d.changed.push(Changed { id: k.clone(), fields });
                }
            }
        }
    }
    d.added = b.keys().filter(|k| !a.contains_key(*k)).cloned().collect();
    d
}

/// The keys whose values differ (present on one side only, or unequal), sorted.
fn changed_fields(a: &Map<String, Value>, b: &Map<String, Value>) -> Vec<String> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn hash_ignores_key_order() {
        let a = json!({"nodes": [{"id": "a", "type": "command"}], "edges": []});
        let b = json!({"edges": [], "nodes": [{"type": "command", "id": "a"}]});
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_ne!(content_hash(&a), content_hash(&json!({"nodes": [], "edges": []})));
        assert!(content_hash(&a).starts_with("sha256:") && content_hash(&a).len() == 7 + 64);
    }

    #[test]
    fn diff_names_the_changed_fields() {
        let a = json!({"description": "x", "nodes": [{"id": "s", "type": "trigger"}, {"id": "c", "type": "command", "command": "ls"}, {"id": "gone", "type": "note"}],
                       "edges": [{"from": "s", "to": "c"}]});
        let b = json!({"description": "y", "nodes": [{"id": "s", "type": "trigger"}, {"id": "c", "type": "command", "command": "ls -l", "x": 3}, {"id": "new", "type": "note"}],
                       "edges": [{"from": "s", "to": "c", "label": "go"}, {"from": "c", "to": "new"}]});
        let d = diff(&a, &b);
        assert_eq!(d.nodes.added, ["new"]);
        assert_eq!(d.nodes.removed, ["gone"]);
        assert_eq!(d.nodes.changed, [Changed { id: "c".into(), fields: vec!["command".into(), "x".into()] }]);
        assert_eq!(d.nodes.unchanged, ["s"]);
        assert_eq!(d.edges.added, ["c->new"]);
        assert_eq!(d.edges.changed, [Changed { id: "s->c".into(), fields: vec!["label".into()] }]);
        assert_eq!(d.design, ["description"]);
    }

    #[test]
    fn identical_content_records_nothing() {
        let graph = json!({"nodes": [], "edges": []});
        let v = DesignVersion { version: 4, hash: content_hash(&graph), saved_at: crate::time::latest(), graph: graph.clone() };
        assert_eq!(recording(None, &content_hash(&graph)), Recording::New(1));
        assert_eq!(recording(Some(&v), &content_hash(&graph)), Recording::Same(4));
        assert_eq!(recording(Some(&v), &content_hash(&json!({"nodes": []}))), Recording::New(5));
    }

    #[test]
    fn prune_keeps_the_newest_and_the_referenced() {
        let referenced = BTreeSet::from([2]);
        assert_eq!(prune(&[1, 2, 3, 4, 5], Some(2), &referenced), [1, 3]);
        assert_eq!(prune(&[1, 2, 3], None, &referenced), Vec::<u64>::new());
        assert_eq!(prune(&[1, 2, 3], Some(0), &BTreeSet::new()), [1, 2], "the newest is always kept");
    }

    fn node() -> impl Strategy<Value = Value> {
        ("[a-e]", prop_oneof!["command", "agent", "note"], proptest::option::of("[xy]{0,2}"))
            .prop_map(|(id, ty, cmd)| json!({"id": id, "type": ty, "command": cmd}))
    }

    fn edge() -> impl Strategy<Value = Value> {
        ("[a-e]", "[a-e]", proptest::option::of(prop_oneof!["true", "false"])).prop_map(|(f, t, l)| json!({"from": f, "to": t, "label": l}))
    }

    fn design() -> impl Strategy<Value = Value> {
        (proptest::collection::vec(node(), 0..8), proptest::collection::vec(edge(), 0..8), "[a-c]{0,2}")
            .prop_map(|(nodes, edges, d)| json!({"description": d, "nodes": nodes, "edges": edges}))
    }

    fn keys_of(graph: &Value, key: &str) -> BTreeSet<String> {
        let f = if key == "nodes" { node_key } else { edge_key };
        keyed(graph, key, f).into_keys().collect()
    }

    /// Every key of `a` or `b` is in exactly one category, each category holds what it says.
    fn partitions(d: &ItemDiff, a: &BTreeSet<String>, b: &BTreeSet<String>) {
        let mut all: Vec<&String> = d.added.iter().chain(&d.removed).chain(d.changed.iter().map(|c| &c.id)).chain(&d.unchanged).collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "an item is in two categories");
        let union: BTreeSet<&String> = a.union(b).collect();
        assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), union);
        assert!(d.added.iter().all(|k| b.contains(k) && !a.contains(k)));
        assert!(d.removed.iter().all(|k| a.contains(k) && !b.contains(k)));
        assert!(d.changed.iter().all(|c| a.contains(&c.id) && b.contains(&c.id) && !c.fields.is_empty()));
    }

    proptest! {
        #[test]
        fn diff_is_consistent(a in design(), b in design()) {
            prop_assert!(diff(&a, &a).is_empty());
            prop_assert_eq!(diff(&a, &a).nodes.unchanged.len(), keys_of(&a, "nodes").len());
            let d = diff(&a, &b);
            partitions(&d.nodes, &keys_of(&a, "nodes"), &keys_of(&b, "nodes"));
            partitions(&d.edges, &keys_of(&a, "edges"), &keys_of(&b, "edges"));
            // The reverse diff swaps added and removed and names the same changes.
            let r = diff(&b, &a);
            prop_assert_eq!(&r.nodes.added, &d.nodes.removed);
            prop_assert_eq!(&r.edges.removed, &d.edges.added);
            prop_assert_eq!(&r.nodes.changed, &d.nodes.changed);
            if content_hash(&a) == content_hash(&b) {
                prop_assert!(d.is_empty());
            }
        }
    }
}
