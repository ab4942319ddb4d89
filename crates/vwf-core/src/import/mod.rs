//! `vwf import`: the workflows of an agent.json (the seeds' format) turned into designs (SPEC §2).
//!
//! An agent.json keys its workflows by name; each has a trigger, a list of activities and, for
//! the graph form, connections where `__trigger__` is the entry and `__emit__` the announcement
//! that the workflow finished. The importer maps what has a clear equivalent and says what it
//! could not map, rather than guessing.
//!
//! Invariants:
//! - Pure and total: any JSON value gives a report, never a panic.
//! - Every design name is a valid design name (sanitized, unique within the report); a change is
//!   noted. Node ids are valid and unique; the trigger is `start`, the `__emit__` node `emit`.
//! - Every design is returned, valid or not; a design the validator rejects has each of its
//!   errors in `notes`. Fields without an equivalent stay on their node or design (designs keep
//!   unknown fields) and are listed in `notes`; nothing is dropped silently.
//! - Notes are prefixed with the design name they concern.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::limits::MAX_ID_LEN;
use crate::schedule;
use crate::validate::{self, Issue};

mod activities;
mod connections;
mod helpers;
mod trigger;

use activities::*;
use connections::*;
use helpers::*;
use trigger::*;

/// What `vwf import` made of an agent.json: one design per workflow, in document order, and what
/// could not be mapped.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ImportReport {
    /// `(design name, design JSON)`.
    pub designs: Vec<(String, Value)>,
    /// One line per thing that could not be mapped, each starting with `<design name>: `.
    pub notes: Vec<String>,
}

/// The id of the trigger node every imported design starts with.
pub const TRIGGER_ID: &str = "start";
/// The id of the node `__emit__` connections lead to.
pub const EMIT_ID: &str = "emit";

const TRIGGER_ENDPOINT: &str = "__trigger__";
const EMIT_ENDPOINT: &str = "__emit__";

/// Horizontal layout: column `i` is at `x = 40 + 180 * i`; rows in a column 140 apart from 120.
const X0: u64 = 40;
const DX: u64 = 180;
const Y0: u64 = 120;
const DY: u64 = 140;

/// Turns every workflow of an agent.json into a design.
///
/// Accepted shapes: `{"workflows": {<name>: <workflow>}}`, `{"workflows": [{"name", ...}]}`, or a
/// single workflow at the top level (`trigger`/`activities` without `workflows`). A workflow that
/// already has `nodes` is taken as a design and only checked.
pub fn import_agent_json(doc: &Value) -> ImportReport {
    let mut report = ImportReport::default();
    let mut taken = HashSet::new();
    let Some(top) = doc.as_object() else {
        report.notes.push(format!("agent.json: expected a JSON object with \"workflows\", got {}", kind_of(doc)));
        return report;
    };
    let workflows: Vec<(String, &Value)> = match top.get("workflows") {
        Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let name = ["name", "id", "key", "title"]
                    .iter()
                    .find_map(|k| item.get(k).and_then(Value::as_str))
                    .map_or_else(|| format!("workflow-{}", i + 1), str::to_string);
                (name, item)
            })
            .collect(),
        Some(other) => {
            report.notes.push(format!("agent.json: \"workflows\" must map names to workflows, got {}", kind_of(other)));
            return report;
        }
        None if top.contains_key("activities") || top.contains_key("trigger") => {
            let name = top.get("name").and_then(Value::as_str).unwrap_or("workflow");
            vec![(name.to_string(), doc)]
        }
        None => {
            report.notes.push("agent.json: no \"workflows\" found; nothing to import".to_string());
            return report;
        }
    };
    if workflows.is_empty() {
        report.notes.push("agent.json: \"workflows\" is empty; nothing to import".to_string());
    }
    for (key, wf) in workflows {
        let name = design_name(&key, &taken);
        taken.insert(name.clone());
        let mut notes = Notes { design: name.clone(), out: &mut report.notes };
        if name != key {
            notes.add(format!(
                "workflow {key:?} renamed to {name:?} (design names are letters, digits, '.', '_' and '-', starting with a letter or digit, at most {MAX_ID_LEN})"
            ));
        }
        let Some(design) = import_workflow(&name, wf, &mut notes) else {
            continue;
        };
        for issue in validate::validate(&design).errors {
            notes.add(format!("not valid as imported: {}", describe_issue(&issue)));
        }
        report.designs.push((name, design));
    }
    report
}

/// Notes about one workflow, prefixed with its design name.
struct Notes<'a> {
    design: String,
    out: &'a mut Vec<String>,
}

impl Notes<'_> {
    fn add(&mut self, message: impl AsRef<str>) {
        self.out.push(format!("{}: {}", self.design, message.as_ref()));
    }
}

fn import_workflow(name: &str, wf: &Value, notes: &mut Notes) -> Option<Value> {
    let mut wf = match wf {
        Value::Object(m) => m.clone(),
        Value::Array(_) => {
            let mut m = Map::new();
            m.insert("activities".into(), wf.clone());
            m
        }
        other => {
            notes.add(format!("a workflow must be an object with a trigger and activities, got {}; skipped", kind_of(other)));
            return None;
        }
    };
    if matches!(wf.get("nodes"), Some(Value::Array(_))) {
        notes.add("already in design form (it has \"nodes\"); copied as is");
        wf.remove("name");
        return Some(Value::Object(wf));
    }
    wf.remove("name");

    let mut graph = Graph::default();
    graph.add(trigger_node(take(&mut wf, &["trigger", "triggers", "on"]), notes));

    let activities = match take(&mut wf, &["activities", "steps", "nodes", "tasks"]) {
        None => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            notes.add(format!("activities must be a list, got {}; the design has no steps", kind_of(&other)));
            Vec::new()
        }
    };
    if activities.is_empty() {
        notes.add("the workflow has no activities");
    }
    for (i, item) in activities.iter().enumerate() {
        activity(i, item, &mut graph, notes);
    }

    let emit = emit_spec(take(&mut wf, &["emit", "emits", "emit_event", "done_event"]), name, notes);
    match take(&mut wf, &["connections", "edges", "links"]) {
        None => chain(&mut graph, &emit),
        Some(Value::Array(items)) if items.is_empty() => {
            notes.add("connections is empty; the activities are chained in order");
            chain(&mut graph, &emit);
        }
        Some(Value::Object(map)) if map.is_empty() => {
            notes.add("connections is empty; the activities are chained in order");
            chain(&mut graph, &emit);
        }
        Some(conns) => {
            connections(&conns, &mut graph, &emit, notes);
            drop_loop_back_edges(&mut graph, notes);
        }
    }

    let mut design = Map::new();
    if let Some(description) = take(&mut wf, &["description", "summary", "about"]) {
        design.insert("description".into(), description);
    }
    if let Some(budget) = run_budget(&mut wf, notes) {
        design.insert("budget".into(), budget);
    }
    graph.layout();
    design.insert("nodes".into(), Value::Array(graph.nodes.into_iter().map(Value::Object).collect()));
    let edges: Vec<Value> = graph
        .edges
        .into_iter()
        .map(|(from, to, label)| match label {
            Some(l) => json!({"from": from, "to": to, "label": l}),
            None => json!({"from": from, "to": to}),
        })
        .collect();
    design.insert("edges".into(), Value::Array(edges));
    if !wf.is_empty() {
        let keys: Vec<&str> = wf.keys().map(String::as_str).collect();
        notes.add(format!("workflow fields kept without an equivalent: {}", keys.join(", ")));
        for (k, v) in wf {
            design.entry(k).or_insert(v);
        }
    }
    Some(Value::Object(design))
}

// ---------------------------------------------------------------------------------------------
// The graph being built
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Graph {
    nodes: Vec<Map<String, Value>>,
    edges: Vec<(String, String, Option<String>)>,
    /// Names an agent.json may use for a node (its `id`, `name`, …) → the node's id.
    aliases: HashMap<String, String>,
    ids: HashSet<String>,
}

impl Graph {
    fn add(&mut self, node: Map<String, Value>) {
        if let Some(id) = node.get("id").and_then(Value::as_str) {
            self.ids.insert(id.to_string());
        }
        self.nodes.push(node);
    }

    fn connect(&mut self, from: &str, to: &str, label: Option<String>) {
        let edge = (from.to_string(), to.to_string(), label);
        if !self.edges.contains(&edge) {
            self.edges.push(edge);
        }
    }

    /// Columns by longest path from the sources, rows by order within a column. A chain gets
    /// `x = 40 + 180 * i`. Positions already given (numeric `x` and `y`) are kept.
    fn layout(&mut self) {
        let index: HashMap<&str, usize> = self.nodes.iter().enumerate().filter_map(|(i, n)| Some((n.get("id")?.as_str()?, i))).collect();
        let links: Vec<(usize, usize)> = self
            .edges
            .iter()
            .filter_map(|(f, t, _)| Some((*index.get(f.as_str())?, *index.get(t.as_str())?)))
            .filter(|(f, t)| f != t)
            .collect();
        let n = self.nodes.len();
        let mut indegree = vec![0usize; n];
        for &(_, t) in &links {
            indegree[t] += 1;
        }
        let mut column = vec![0u64; n];
        let mut placed = vec![false; n];
        let mut ready: Vec<usize> = (0..n).rev().filter(|&i| indegree[i] == 0).collect();
        while let Some(i) = ready.pop() {
            placed[i] = true;
            for &(f, t) in links.iter().filter(|(f, _)| *f == i) {
                column[t] = column[t].max(column[f] + 1);
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    ready.push(t);
                }
            }
        }
        // Nodes on a cycle (an invalid design, reported by the validator) go after the rest.
        let after_the_rest = column.iter().copied().max().unwrap_or(0) + 1;
        let stuck: Vec<usize> = (0..n).filter(|&i| !placed[i]).collect();
        for (col, i) in (after_the_rest..).zip(stuck) {
            column[i] = col;
        }
        let mut rows: BTreeMap<u64, u64> = BTreeMap::new();
        for (node, col) in self.nodes.iter_mut().zip(column) {
            let row = rows.entry(col).or_insert(0);
            let given = node.get("x").is_some_and(Value::is_number) && node.get("y").is_some_and(Value::is_number);
            if !given {
                node.insert("x".into(), json!(X0 + DX * col));
                node.insert("y".into(), json!(Y0 + DY * *row));
            }
            *row += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Budget
// ---------------------------------------------------------------------------------------------

fn run_budget(wf: &mut Map<String, Value>, notes: &mut Notes) -> Option<Value> {
    let v = take(wf, &["budget", "token_budget", "run_budget", "max_tokens", "tokens", "total_tokens"])?;
    let tokens = match v {
        Value::Object(mut o) => {
            let tokens = take(&mut o, &["tokens", "max_tokens", "total_tokens", "token_budget", "total"]);
            if !o.is_empty() {
                let keys: Vec<&str> = o.keys().map(String::as_str).collect();
                notes.add(format!("budget fields without an equivalent dropped: {} (only a token budget is enforced)", keys.join(", ")));
            }
            tokens?
        }
        other => other,
    };
    Some(json!({"tokens": whole(&tokens).map_or(tokens, |n| json!(n))}))
}
