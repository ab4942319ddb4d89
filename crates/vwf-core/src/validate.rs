//! The validator (SPEC §6): every design rule, reported as data.
//!
//! `validate` never stops at the first problem: it returns all errors and warnings with the node,
//! edge and field they concern, so a canvas can mark each one. The engine compiles plans only
//! from designs this module accepts, and it reads fields through the same `Spec::parse`,
//! expression parser and reference resolver, so design time and run time agree.
//!
//! `validate_design` is a list of passes, one per kind of rule (node count, typed nodes, the
//! single trigger, edges, cycles, loop bodies, references, budget, then the warnings); each
//! appends what it finds, so the report lists problems in that order.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::design::{Design, Node, NodeKind};
use crate::names::check_node_id;
use crate::run::inputs::is_secret_name;
use crate::spec::{HttpStep, Spec};
use crate::template::Ref;
use crate::vocab::Route;
use crate::{expr, limits, refs, template};

/// One problem: where it is and what is wrong.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

impl Issue {
    pub fn design(message: impl Into<String>) -> Issue {
        Issue { node: None, edge: None, field: None, message: message.into() }
    }
    pub fn field_only(field: &str, message: impl Into<String>) -> Issue {
        Issue { field: Some(field.into()), ..Issue::design(message) }
    }
    pub fn node(id: &str, message: impl Into<String>) -> Issue {
        Issue { node: Some(id.into()), ..Issue::design(message) }
    }
    pub fn node_field(id: &str, field: &str, message: impl Into<String>) -> Issue {
        Issue { node: Some(id.into()), field: Some(field.into()), ..Issue::design(message) }
    }
    pub fn edge(index: usize, message: impl Into<String>) -> Issue {
        Issue { edge: Some(index), ..Issue::design(message) }
    }
}

/// `{ok, errors, warnings}`; `ok` is `errors.is_empty()`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub ok: bool,
    pub errors: Vec<Issue>,
    pub warnings: Vec<Issue>,
}

impl Report {
    pub(crate) fn new(errors: Vec<Issue>, warnings: Vec<Issue>) -> Report {
        Report { ok: errors.is_empty(), errors, warnings }
    }

    /// The one line every surface gives as the `error` of a refused design (beside `errors`).
    pub fn refusal(&self) -> String {
        refusal(&self.errors)
    }
}

/// [`Report::refusal`] for a bare list of errors (what `Design::from_value` refuses with):
/// the first error, and how many there are.
pub fn refusal(errors: &[Issue]) -> String {
    let first = errors.first().map(|i| i.message.as_str()).unwrap_or("invalid design");
    match errors.len() {
        1 => format!("the design has an error: {first}"),
        n => format!("the design has {n} errors; the first: {first}"),
    }
}

/// Validates a design given as JSON.
pub fn validate(value: &Value) -> Report {
    match Design::from_value(value) {
        Ok(design) => validate_design(&design),
        Err(errors) => Report::new(errors, Vec::new()),
    }
}

/// The graph facts the validator and the converter both need.
pub(crate) struct Graph<'a> {
    pub nodes: Vec<&'a Node>,
    pub index: HashMap<&'a str, usize>,
    /// Usable edges (both ends known, neither a note): (edge index, from, to).
    pub edges: Vec<(usize, usize, usize)>,
}

impl<'a> Graph<'a> {
    pub(crate) fn new(design: &'a Design) -> Graph<'a> {
        let nodes: Vec<&Node> = design.nodes.iter().collect();
        let mut index = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            index.entry(n.id.as_str()).or_insert(i);
        }
        let edges = design
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let (f, t) = (*index.get(e.from.as_str())?, *index.get(e.to.as_str())?);
                (!nodes[f].is(NodeKind::Note) && !nodes[t].is(NodeKind::Note) && f != t).then_some((i, f, t))
            })
            .collect();
        Graph { nodes, index, edges }
    }

    pub(crate) fn children(&self, n: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.edges.iter().filter(move |e| e.1 == n).map(|e| (e.0, e.2))
    }

    pub(crate) fn parents(&self, n: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.edges.iter().filter(move |e| e.2 == n).map(|e| (e.0, e.1))
    }

    /// Every node reachable from `start` (excluded) following edges forward.
    pub(crate) fn descendants(&self, start: &[usize]) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<usize> = start.to_vec();
        while let Some(n) = stack.pop() {
            for (_, c) in self.children(n) {
                if seen.insert(c) {
                    stack.push(c);
                }
            }
        }
        seen
    }

    /// Every node from which `n` can be reached.
    pub(crate) fn ancestors(&self, n: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            for (_, p) in self.parents(x) {
                if seen.insert(p) {
                    stack.push(p);
                }
            }
        }
        seen
    }

    /// Topological order, ties broken by position in `nodes`; `None` when there is a cycle.
    pub(crate) fn topo_order(&self) -> Option<Vec<usize>> {
        let mut indegree = vec![0usize; self.nodes.len()];
        for &(_, _, t) in &self.edges {
            indegree[t] += 1;
        }
        let mut ready: BTreeSet<usize> = (0..self.nodes.len()).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(self.nodes.len());
        while let Some(n) = ready.pop_first() {
            order.push(n);
            for (_, c) in self.children(n) {
                indegree[c] -= 1;
                if indegree[c] == 0 {
                    ready.insert(c);
                }
            }
        }
        (order.len() == self.nodes.len()).then_some(order)
    }

    /// The body of each loop node: nodes reachable from its `each` edges.
    pub(crate) fn loop_bodies(&self, design: &Design) -> BTreeMap<usize, BTreeSet<usize>> {
        let mut bodies = BTreeMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !n.is(NodeKind::Loop) {
                continue;
            }
            let entries: Vec<usize> = self
                .children(i)
                .filter(|(e, _)| Route::of(Some(NodeKind::Loop), design.edges[*e].label.as_deref()) == Route::Each)
                .map(|(_, c)| c)
                .collect();
            let mut body: BTreeSet<usize> = entries.iter().copied().collect();
            body.extend(self.descendants(&entries));
            body.remove(&i);
            bodies.insert(i, body);
        }
        bodies
    }
}

/// What the templates and the condition of one node may read: the rule `validate_design` checks
/// references against, kept in one place so the scope it reports is the one it enforces.
struct NodeScope {
    /// Every node from which this one can be reached.
    upstream: BTreeSet<usize>,
    /// The loops whose body holds this node (a body step reads `item`, not its loop's output).
    loops: BTreeSet<usize>,
    /// Whether the trigger (the run's input) is readable: always, when the design has one.
    trigger: Option<usize>,
}

impl NodeScope {
    fn of(graph: &Graph, bodies: &BTreeMap<usize, BTreeSet<usize>>, trigger: Option<usize>, n: usize) -> NodeScope {
        let loops = bodies.iter().filter(|(_, body)| body.contains(&n)).map(|(&lp, _)| lp).collect();
        NodeScope { upstream: graph.ancestors(n), loops, trigger }
    }

    /// The nodes a reference may name, in design order: the trigger, then every upstream node
    /// that is neither a note nor a loop around this node.
    fn readable(&self, graph: &Graph) -> Vec<String> {
        let mut out: BTreeSet<usize> = self.upstream.iter().copied().filter(|u| !self.loops.contains(u)).collect();
        out.extend(self.trigger);
        out.into_iter().filter(|&i| !graph.nodes[i].is(NodeKind::Note)).map(|i| graph.nodes[i].id.clone()).collect()
    }
}

/// What a node's templates and condition may name (SPEC §4, §5), as the validator decides it:
/// `nodes` are the ids `{{nodes.<id>}}` and `out.<id>` may name (the trigger and every upstream
/// node), `loop` the loop whose body holds the node (then `{{item}}` and `{{loop.index}}` are
/// available), `trigger` the trigger's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    pub nodes: Vec<String>,
    #[serde(rename = "loop")]
    pub in_loop: Option<String>,
}

/// The scope of every node of a design given as JSON, keyed by id (notes and later duplicates of
/// an id left out); `None` when the JSON is not a design at all.
pub fn scopes(value: &Value) -> Option<BTreeMap<String, Scope>> {
    let design = Design::from_value(value).ok()?;
    let graph = Graph::new(&design);
    let bodies = graph.loop_bodies(&design);
    let trigger = design.nodes.iter().find(|n| n.is(NodeKind::Trigger)).and_then(|t| graph.index.get(t.id.as_str()).copied());
    let mut out = BTreeMap::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        if n.is(NodeKind::Note) || graph.index.get(n.id.as_str()) != Some(&i) {
            continue;
        }
        let scope = NodeScope::of(&graph, &bodies, trigger, i);
        let in_loop = scope.loops.first().map(|&lp| graph.nodes[lp].id.clone());
        out.insert(n.id.clone(), Scope { nodes: scope.readable(&graph), in_loop });
    }
    Some(out)
}

/// Validates a parsed design: one pass per kind of rule, each adding what it finds, in this order
/// (the order of the report).
pub fn validate_design(design: &Design) -> Report {
    let mut found = Found::default();
    node_count(design, &mut found);
    let specs = typed_nodes(design, &mut found);
    let trigger = single_trigger(design, &mut found);
    let graph = Graph::new(design);
    let bodies = graph.loop_bodies(design);
    let parts = Parts { design, graph, specs, bodies, trigger };
    edges(&parts, &mut found);
    error_paths(&parts, &mut found);
    cycles(&parts, &mut found);
    loop_bodies(&parts, &mut found);
    nested_loops(&parts, &mut found);
    references(&parts, &mut found);
    budget(&parts, &mut found);
    reachability(&parts, &mut found);
    dead_ends(&parts, &mut found);
    unseen_outputs(&parts, &mut found);
    emits_to_itself(&parts, &mut found);
    if design.raw.get(crate::design::ENABLED).is_some_and(|v| !v.is_boolean()) {
        found
            .errors
            .push(Issue::field_only(crate::design::ENABLED, "\"enabled\" is true or false (false: the automatic trigger does not fire)"));
    }
    if let Some(v) = design.raw.get(crate::design::TIMEOUT).filter(|v| !v.is_null())
        && let Err(why) = crate::design::read_timeout(v)
    {
        found.errors.push(Issue::field_only(crate::design::TIMEOUT, format!("\"timeout\" {why}")));
    }
    if let Some(v) = design.on_failure() {
        match v.as_str().map(crate::names::DesignName::parse) {
            Some(Ok(_)) => {}
            Some(Err(e)) => found.errors.push(Issue::field_only(crate::design::ON_FAILURE, format!("\"on_failure\" names no design: {e}"))),
            None => found
                .errors
                .push(Issue::field_only(crate::design::ON_FAILURE, "\"on_failure\" is the name of the design a failed run starts")),
        }
    }
    if let Some(v) = design.raw.get(crate::concurrency::FIELD).filter(|v| !v.is_null())
        && let Err(why) = crate::concurrency::read(v)
    {
        found.errors.push(Issue::field_only(crate::concurrency::FIELD, why));
    }
    found.errors.extend(crate::pins::read(design).1);
    found.errors.extend(crate::interface::issues(design));
    found.errors.extend(crate::form::edit_issues(design));
    Report::new(found.errors, found.warnings)
}

/// The problems the passes have found so far.
#[derive(Default)]
struct Found {
    errors: Vec<Issue>,
    warnings: Vec<Issue>,
}

/// What the passes after the node pass read: the design, its graph, each node's typed fields (by
/// id, the first node of an id; nodes of an unknown type have none), each loop's body, and the
/// design's first trigger.
struct Parts<'a> {
    design: &'a Design,
    graph: Graph<'a>,
    specs: HashMap<&'a str, Spec>,
    bodies: BTreeMap<usize, BTreeSet<usize>>,
    trigger: Option<&'a Node>,
}

impl Parts<'_> {
    fn trigger_id(&self) -> Option<&str> {
        self.trigger.map(|t| t.id.as_str())
    }

    /// The trigger's place in the graph (that of the first node with its id).
    fn trigger_index(&self) -> Option<usize> {
        self.trigger_id().and_then(|id| self.graph.index.get(id).copied())
    }
}

/// At most [`limits::MAX_NODES`] nodes, notes included.
fn node_count(design: &Design, found: &mut Found) {
    if design.nodes.len() > limits::MAX_NODES {
        found.errors.push(Issue::field_only(
            "nodes",
            format!("a design has at most {} nodes (notes included); this one has {}", limits::MAX_NODES, design.nodes.len()),
        ));
    }
}

/// Nodes: ids, duplicates, typed fields. Answers the typed fields of each known-type node.
fn typed_nodes<'a>(design: &'a Design, found: &mut Found) -> HashMap<&'a str, Spec> {
    let mut specs: HashMap<&str, Spec> = HashMap::new();
    let mut seen_ids = HashSet::new();
    for n in &design.nodes {
        if let Err(e) = check_node_id(&n.id) {
            found.errors.push(Issue::node_field(&n.id, "id", e));
        }
        if !seen_ids.insert(n.id.as_str()) {
            found.errors.push(Issue::node_field(&n.id, "id", format!("duplicate node id {:?}", n.id)));
        }
        let (spec, issues) = Spec::parse_lenient(n);
        found.errors.extend(issues);
        if n.kind.is_some() {
            specs.entry(n.id.as_str()).or_insert(spec);
        }
    }
    specs
}

/// At most one trigger; answers the first.
fn single_trigger<'a>(design: &'a Design, found: &mut Found) -> Option<&'a Node> {
    let triggers: Vec<&Node> = design.nodes.iter().filter(|n| n.is(NodeKind::Trigger)).collect();
    if triggers.len() > 1 {
        for t in &triggers[1..] {
            found.errors.push(Issue::node(&t.id, "a design has at most one trigger"));
        }
    }
    triggers.first().copied()
}

/// Edges: endpoints and labels.
fn edges(p: &Parts, found: &mut Found) {
    let (design, graph, specs) = (p.design, &p.graph, &p.specs);
    for (i, e) in design.edges.iter().enumerate() {
        let from = graph.index.get(e.from.as_str()).map(|&x| graph.nodes[x]);
        let to = graph.index.get(e.to.as_str()).map(|&x| graph.nodes[x]);
        let (Some(from), Some(to)) = (from, to) else {
            for (end, name) in [(from, &e.from), (to, &e.to)] {
                if end.is_none() {
                    found.errors.push(Issue::edge(i, format!("edge {} -> {} names unknown node {name:?}", e.from, e.to)));
                }
            }
            continue;
        };
        if from.is(NodeKind::Note) || to.is(NodeKind::Note) {
            found.errors.push(Issue::edge(i, format!("edge {} -> {}: a note takes no edges", e.from, e.to)));
            continue;
        }
        if to.is(NodeKind::Trigger) {
            found.errors.push(Issue::edge(i, format!("edge {} -> {}: nothing may lead into a trigger", e.from, e.to)));
        }
        if e.from == e.to {
            found.errors.push(Issue::edge(i, format!("edge {} -> {} is a self-loop", e.from, e.to)));
            continue;
        }
        let label = e.label.as_deref();
        let route = Route::of(from.kind, label);
        match specs.get(from.id.as_str()) {
            Some(Spec::Condition { .. }) if !matches!(route, Route::When(_)) => {
                found.errors.push(Issue::edge(i, format!("edge {} -> {}: a condition's edges are labelled true or false", e.from, e.to)));
            }
            Some(Spec::Approval { options, .. }) => match label {
                Some(l) if !options.iter().any(|o| o == l) => found.errors.push(Issue::edge(
                    i,
                    format!("edge {} -> {}: label {l:?} is not one of the options ({})", e.from, e.to, options.join(", ")),
                )),
                Some(_) => {}
                None => {
                    found.warnings.push(Issue::edge(i, format!("edge {} -> {} has no label, so it is taken on every answer", e.from, e.to)))
                }
            },
            Some(Spec::Loop { .. }) if !matches!(route, Route::Each | Route::Done) => {
                found.errors.push(Issue::edge(i, format!("edge {} -> {}: a loop's edges are labelled each or done", e.from, e.to)));
            }
            _ => {}
        }
    }
}

/// Error paths (SPEC §3): an `error` edge leaves a step that can fail (an output only when it
/// delivers) and whose `on_error` is not `continue`, into a branch its normal edges do not reach.
/// An `error` label on a step that cannot fail is only a name, which is worth a warning.
fn error_paths(p: &Parts, found: &mut Found) {
    let (design, graph) = (p.design, &p.graph);
    for (n, node) in graph.nodes.iter().enumerate() {
        let (errors, normal): (Vec<_>, Vec<_>) =
            graph.children(n).partition(|(e, _)| Route::of(node.kind, design.edges[*e].label.as_deref()) == Route::Error);
        let edge = |e: usize| format!("edge {} -> {}", design.edges[e].from, design.edges[e].to);
        if errors.is_empty() {
            let named = |e: &usize| design.edges[*e].label.as_deref().is_some_and(|l| l.eq_ignore_ascii_case(crate::vocab::ERROR_LABEL));
            if matches!(node.kind, Some(NodeKind::Wait | NodeKind::Trigger)) {
                for (e, _) in normal.iter().filter(|(e, _)| named(e)) {
                    found.warnings.push(Issue::edge(
                        *e,
                        format!(
                            "{}: a {} step cannot fail, so this \"error\" label is only a name and the edge is always taken",
                            edge(*e),
                            node.type_name()
                        ),
                    ));
                }
            }
            continue;
        }
        if let Some(Spec::Output { deliver: None, .. }) = p.specs.get(node.id.as_str()) {
            for (e, _) in &errors {
                found.errors.push(Issue::edge(
                    *e,
                    format!("{}: an output without \"deliver\" sends nothing and cannot fail, so it has no error path", edge(*e)),
                ));
            }
            continue;
        }
        if crate::recovery::parse(node).0.on_error == crate::recovery::OnError::Continue {
            found.errors.push(Issue::node_field(
                &node.id,
                "on_error",
                "a step with an \"error\" edge takes it when it fails; \"on_error\": \"continue\" would take its normal edges instead: use one",
            ));
        }
        let starts: Vec<usize> = normal.iter().map(|(_, to)| *to).collect();
        let mut after_success = graph.descendants(&starts);
        after_success.extend(starts);
        for (e, to) in errors.iter().filter(|(_, to)| after_success.contains(to)) {
            found.errors.push(Issue::edge(
                *e,
                format!(
                    "{}: {} also runs after {} succeeds; an error edge leads into a branch of its own",
                    edge(*e),
                    graph.nodes[*to].id,
                    node.id
                ),
            ));
        }
    }
}

/// Steps form a directed acyclic graph; the nodes on a cycle are named.
fn cycles(p: &Parts, found: &mut Found) {
    let graph = &p.graph;
    let order = graph.topo_order();
    if order.is_none() {
        // Name the nodes on a cycle (each can reach itself), so the canvas can mark them.
        let on_cycle: Vec<&str> =
            (0..graph.nodes.len()).filter(|&i| graph.ancestors(i).contains(&i)).map(|i| graph.nodes[i].id.as_str()).collect();
        let message = format!("the design has a cycle through {}; steps must form a directed acyclic graph", on_cycle.join(", "));
        found.errors.push(match on_cycle.first() {
            Some(first) => Issue::node(first, message),
            None => Issue::design(message),
        });
    }
}

/// Loop bodies are self-contained: no body node also runs after its loop, no edge crosses a body.
fn loop_bodies(p: &Parts, found: &mut Found) {
    let (design, graph) = (p.design, &p.graph);
    for (&lp, body) in &p.bodies {
        if body.is_empty() {
            continue;
        }
        // Nodes that run after the loop: what its `done` edges reach. A body node that also
        // lies there means some body edge flows on past the loop; that edge is the leak.
        let done_targets: Vec<usize> = graph
            .children(lp)
            .filter(|(e, _)| Route::of(Some(NodeKind::Loop), design.edges[*e].label.as_deref()) == Route::Done)
            .map(|(_, c)| c)
            .collect();
        let mut after: BTreeSet<usize> = done_targets.iter().copied().collect();
        after.extend(graph.descendants(&done_targets));
        for &n in body.intersection(&after) {
            found.errors.push(Issue::node(
                &graph.nodes[n].id,
                format!(
                    "{:?} is inside the body of loop {:?} and also runs after it; a loop body connects only to itself",
                    graph.nodes[n].id, graph.nodes[lp].id
                ),
            ));
        }
        for &(ei, f, t) in &graph.edges {
            let e = &design.edges[ei];
            let from_loop_each = f == lp && Route::of(Some(NodeKind::Loop), e.label.as_deref()) == Route::Each;
            let leaks_out = body.contains(&f) && !after.contains(&f) && (!body.contains(&t) || after.contains(&t));
            let leaks_in = !body.contains(&f) && body.contains(&t) && !after.contains(&t) && !from_loop_each;
            if leaks_out || leaks_in {
                found.errors.push(Issue::edge(
                    ei,
                    format!(
                        "edge {} -> {} crosses the body of loop {:?}; a loop body connects only to itself",
                        e.from, e.to, graph.nodes[lp].id
                    ),
                ));
            }
        }
    }
}

/// No loop inside a loop body.
fn nested_loops(p: &Parts, found: &mut Found) {
    let graph = &p.graph;
    for (&lp, body) in &p.bodies {
        for &n in body {
            if graph.nodes[n].is(NodeKind::Loop) {
                found.errors.push(Issue::node(
                    &graph.nodes[n].id,
                    format!(
                        "loop {:?} sits inside the body of loop {:?}; loops inside loops are not supported",
                        graph.nodes[n].id, graph.nodes[lp].id
                    ),
                ));
            }
        }
    }
}

/// References in conditions and templates: known, upstream, not a loop read from its own body;
/// `{{item}}` only in loop bodies.
fn references(p: &Parts, found: &mut Found) {
    let (design, graph, specs, bodies) = (p.design, &p.graph, &p.specs, &p.bodies);
    let all_ids: Vec<&str> = design.nodes.iter().map(|n| n.id.as_str()).collect();
    let (trigger_id, trigger_index) = (p.trigger_id(), p.trigger_index());
    for (i, n) in graph.nodes.iter().enumerate() {
        let Some(spec) = specs.get(n.id.as_str()) else { continue };
        let scope = NodeScope::of(graph, bodies, trigger_index, i);
        let check_node_ref = |reference: &str, field: &str, shown: &str| -> Option<Issue> {
            let Some((id, _)) = refs::resolve_longest(all_ids.iter().copied(), reference) else {
                return Some(Issue::node_field(&n.id, field, format!("{shown} names no known node")));
            };
            let target = graph.index.get(id).copied();
            if let Some(t) = target.filter(|t| scope.loops.contains(t)) {
                return Some(Issue::node_field(
                    &n.id,
                    field,
                    format!(
                        "{shown}: a step in the body of loop {:?} cannot read the loop's own output; use {{{{item}}}}",
                        graph.nodes[t].id
                    ),
                ));
            }
            let upstream = Some(id) == trigger_id || target.is_some_and(|t| scope.upstream.contains(&t));
            (!upstream).then(|| Issue::node_field(&n.id, field, format!("{shown}: node {id:?} is not upstream of {:?}", n.id)))
        };
        if let Spec::Condition { expr: src } = spec {
            match expr::parse(src) {
                Ok(e) => {
                    if let Some(issue) = check_node_ref(&e.reference, "expr", &format!("out.{}", e.reference)) {
                        found.errors.push(issue);
                    }
                }
                Err(e) => found.errors.push(Issue::node_field(&n.id, "expr", e.0)),
            }
        }
        for (field, src) in spec.templates() {
            match template::parse(src) {
                Ok(t) => {
                    for r in t.refs() {
                        match r {
                            Ref::Node { reference } => {
                                if let Some(issue) = check_node_ref(reference, field, &format!("{{{{nodes.{reference}}}}}")) {
                                    found.errors.push(issue);
                                }
                            }
                            Ref::Secret { name } if !sends_secrets(spec, field) => found.errors.push(Issue::node_field(
                                &n.id,
                                field,
                                format!("{{{{secrets.{name}}}}}: {}", template::SECRET_FIELDS),
                            )),
                            Ref::Item { .. } | Ref::LoopIndex if scope.loops.is_empty() => found.errors.push(Issue::node_field(
                                &n.id,
                                field,
                                "{{item}} and {{loop.index}} are only available inside a loop body",
                            )),
                            // The input's view counts words, chars and lines of its text; an
                            // input field of the same name is reached through `data`.
                            Ref::Trigger { path } if ["words", "chars", "lines"].contains(&path.split('.').next().unwrap_or("")) => {
                                let first = path.split('.').next().unwrap_or("");
                                found.warnings.push(Issue::node_field(
                                    &n.id,
                                    field,
                                    format!("{{{{trigger.{path}}}}} reads the {first} count of the input's text; for an input field named {first:?} use {{{{trigger.data.{path}}}}}"),
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                Err(e) => found.errors.push(Issue::node_field(&n.id, field, e.0)),
            }
        }
        if let Spec::Http(HttpStep { headers, .. }) = spec {
            for (name, value) in headers {
                let literal = !value.trim().is_empty() && template::parse(value).is_ok_and(|t| t.refs().next().is_none());
                if literal && is_secret_name(name) {
                    found.errors.push(Issue::node_field(
                        &n.id,
                        "headers",
                        format!(
                            "header {name:?} holds a literal credential, which would be kept in the design, its versions and its runs: \
                             put the value in an environment variable, name it in the config ([secrets] NAME = \"ENV_VAR\") and write {{{{secrets.NAME}}}}"
                        ),
                    ));
                }
            }
        }
    }
}

/// Whether `field` of `spec` sends what it renders, and so may hold `{{secrets.NAME}}`.
fn sends_secrets(spec: &Spec, field: &str) -> bool {
    matches!((spec, field), (Spec::Http(_), "url" | "headers" | "body") | (Spec::Command(_), "env"))
}

/// `budget.tokens` is a whole number in range, no less than the agent steps' `max_tokens` together.
fn budget(p: &Parts, found: &mut Found) {
    let (design, specs) = (p.design, &p.specs);
    if let Some(b) = design.raw.get("budget") {
        let cost = b.as_object().and_then(|m| m.get("cost"));
        if let Some(c) = cost
            && !c.as_f64().is_some_and(|c| c.is_finite() && c > 0.0)
        {
            found.errors.push(Issue::field_only("budget", "budget.cost is an amount above 0, in the currency of the config's [prices]"));
        }
        let tokens = b.as_object().and_then(|m| m.get("tokens"));
        if tokens.is_none() && cost.is_some() {
            return;
        }
        match tokens.and_then(Value::as_u64) {
            Some(t) if limits::within(t, limits::BUDGET_TOKENS) => {
                let sum: u64 = specs
                    .values()
                    .filter_map(|s| match s {
                        Spec::Agent { max_tokens, .. } => *max_tokens,
                        _ => None,
                    })
                    .fold(0, u64::saturating_add);
                if sum > t {
                    found.errors.push(Issue::field_only(
                        "budget",
                        format!("budget.tokens is {t}, below the sum of the agent steps' max_tokens ({sum})"),
                    ));
                }
            }
            _ => found.errors.push(Issue::field_only(
                "budget",
                format!(
                    "\"budget\" must be {{\"tokens\": <whole number from {} to {}>}}",
                    limits::BUDGET_TOKENS.0,
                    limits::BUDGET_TOKENS.1
                ),
            )),
        }
    }
}

/// Warning: a step the trigger cannot reach.
fn reachability(p: &Parts, found: &mut Found) {
    let graph = &p.graph;
    if let Some(t) = p.trigger_index() {
        let reached = graph.descendants(&[t]);
        for (i, n) in graph.nodes.iter().enumerate() {
            if i != t && !n.is(NodeKind::Note) && !reached.contains(&i) {
                found.warnings.push(Issue::node(&n.id, format!("{:?} cannot be reached from the trigger {:?}", n.id, graph.nodes[t].id)));
            }
        }
    }
}

/// Warnings: a branch or an answer that leads nowhere, a run that ends on a trigger or a wait.
fn dead_ends(p: &Parts, found: &mut Found) {
    let (design, graph, specs) = (p.design, &p.graph, &p.specs);
    for (i, n) in graph.nodes.iter().enumerate() {
        let Some(spec) = specs.get(n.id.as_str()) else { continue };
        let out_labels: Vec<Option<String>> =
            graph.children(i).map(|(e, _)| design.edges[e].label.as_ref().map(|l| l.to_ascii_lowercase())).collect();
        let dead_end = match spec {
            Spec::Condition { .. } => {
                let routes: Vec<Route> = out_labels.iter().map(|l| Route::of(n.kind, l.as_deref())).collect();
                let missing: Vec<&str> = [true, false]
                    .into_iter()
                    .filter(|b| !routes.contains(&Route::When(*b)))
                    .map(|b| if b { "true" } else { "false" })
                    .collect();
                (!missing.is_empty()).then(|| format!("condition {:?} leads nowhere when it is {}", n.id, missing.join(" or ")))
            }
            Spec::Approval { options, .. } => {
                let unlabelled = out_labels.iter().any(Option::is_none);
                let missing: Vec<&str> = options
                    .iter()
                    .map(String::as_str)
                    .filter(|o| !unlabelled && !out_labels.iter().any(|l| l.as_deref() == Some(&o.to_ascii_lowercase())))
                    .collect();
                (!missing.is_empty()).then(|| format!("approval {:?} leads nowhere on {}", n.id, missing.join(", ")))
            }
            Spec::Trigger(_) | Spec::Wait { .. } if out_labels.is_empty() => {
                Some(format!("{:?} ends the run on nothing concrete; end on an output, emit or data step", n.id))
            }
            _ => None,
        };
        if let Some(msg) = dead_end {
            found.warnings.push(Issue::node(&n.id, msg));
        }
    }
}

/// Warning: an emit step whose event the design's own event trigger takes: each run starts
/// another, until the event depth limit or `[limits] runs_per_origin` stops the chain.
fn emits_to_itself(p: &Parts, found: &mut Found) {
    let Some(trigger) = p.trigger.filter(|t| crate::trigger::declared_mode(&t.raw) == "event") else { return };
    for n in &p.graph.nodes {
        if let Some(Spec::Emit { event, .. }) = p.specs.get(n.id.as_str())
            && crate::trigger::names_event(&trigger.raw, event)
        {
            found.warnings.push(Issue::node_field(
                &n.id,
                "event",
                format!(
                    "emit {:?} sends {event:?}, which this design's own trigger {:?} listens to: every run starts another \
                     (up to {} emits deep and [limits] runs_per_origin runs in all)",
                    n.id,
                    trigger.id,
                    limits::EVENT_DEPTH
                ),
            ));
        }
    }
}

/// Warning: on a scheduled design, an output that neither delivers nor feeds a step.
fn unseen_outputs(p: &Parts, found: &mut Found) {
    let (graph, specs) = (&p.graph, &p.specs);
    let scheduled = p.trigger.is_some_and(|t| crate::trigger::declared_mode(&t.raw) == "schedule");
    if scheduled {
        for (i, n) in graph.nodes.iter().enumerate() {
            if let Some(Spec::Output { deliver: None, .. }) = specs.get(n.id.as_str())
                && graph.children(i).next().is_none()
            {
                found.warnings.push(Issue::node(
                    &n.id,
                    format!("output {:?} on a scheduled design neither delivers nor feeds another step; nobody will see it", n.id),
                ));
            }
        }
    }
}
