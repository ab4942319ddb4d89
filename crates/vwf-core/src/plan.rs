//! The converter (SPEC §7): a valid design becomes a plan.
//!
//! A plan lists the steps in topological order (ties broken by position in `nodes`), each with
//! its raw node and its incoming edges. Triggers and notes are dropped; the trigger's raw node is
//! kept so its id stays addressable. A run stores the plan it started with, so editing or deleting
//! the design never changes a run in flight.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::design::{Design, NodeKind};
use crate::names::{DesignName, NodeId};
use crate::run::StepError;
use crate::spec::Spec;
use crate::validate::{Graph, Issue, Report, validate_design};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub design: DesignName,
    /// The trigger node as written, if the design has one.
    #[serde(default)]
    pub trigger: Option<Map<String, Value>>,
    pub steps: Vec<PlanStep>,
    #[serde(default)]
    pub budget_tokens: Option<u64>,
    /// The most the run's model calls may cost (the design's `budget.cost`, in the `[prices]`
    /// currency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_cost: Option<f64>,
    /// The design version compiled (see `versions`), when the caller knows it; a run records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// What a test run runs (see [`crate::pins`]); absent from a normal run's plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<crate::pins::TestScope>,
    /// The output views pinned steps settle with, by step id: only a test plan has any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pins: BTreeMap<String, Value>,
    /// How long a run may take before it fails (`run timed out`), from the design's `timeout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// The design a failed run starts (the design's `on_failure`), if it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<DesignName>,
    /// The version of each design the design steps call, as recorded when the run started (the
    /// caller fills it in, see [`Plan::called_designs`]): a child runs it unless its step names
    /// one, so editing a called design never changes a run in flight.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls: BTreeMap<String, u64>,
    /// How many runs of the design may be in flight at once, per key (the design's `concurrency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::concurrency::Concurrency>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    pub id: NodeId,
    /// The node as written in the design.
    pub node: Map<String, Value>,
    #[serde(default)]
    pub parents: Vec<Parent>,
    /// The loop whose body this step belongs to; such steps run only inside a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_loop: Option<NodeId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parent {
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl PlanStep {
    /// The step's node type; `None` only in a hand-edited run file.
    pub fn kind(&self) -> Option<NodeKind> {
        crate::spec::kind_of(&self.node).parse().ok()
    }

    pub fn is(&self, kind: NodeKind) -> bool {
        self.kind() == Some(kind)
    }

    /// The step's typed fields. A plan is made only from a valid design, so this fails only
    /// for a hand-edited run file; the engine turns that into a step error.
    /// How the step recovers from failing (its `retry` and `on_error`; see [`crate::recovery`]).
    /// A compiled plan's steps were validated, so this reads without problems.
    pub fn recovery(&self) -> crate::recovery::Recovery {
        crate::recovery::parse(&crate::design::Node::new(self.id.clone(), self.node.clone())).0
    }

    pub fn spec(&self) -> Result<Spec, StepError> {
        let node = crate::design::Node::new(self.id.clone(), self.node.clone());
        Spec::parse(&node)
            .map_err(|issues| StepError::Invalid { id: self.id.to_string(), messages: issues.into_iter().map(|i| i.message).collect() })
    }
}

impl Plan {
    /// Validates and compiles. Errors come back as the validator's report (a name that is no
    /// design name among them).
    pub fn compile(design_name: &str, design: &Design) -> Result<Plan, Report> {
        let design_name = DesignName::parse(design_name).map_err(|e| Report::new(vec![Issue::design(e)], Vec::new()))?;
        let report = validate_design(design);
        if !report.ok {
            return Err(report);
        }
        let graph = Graph::new(design);
        let order = graph.topo_order().unwrap_or_default();
        let bodies = graph.loop_bodies(design);
        let mut steps = Vec::new();
        // A valid design's node ids are node ids: this reads each one once, as such.
        let id_of = |i: usize| NodeId::parse(&graph.nodes[i].id).map_err(|e| Report::new(vec![Issue::design(e)], Vec::new()));
        for i in order {
            let node = graph.nodes[i];
            if node.is(NodeKind::Trigger) || node.is(NodeKind::Note) {
                continue;
            }
            let parents = graph
                .parents(i)
                .map(|(e, p)| {
                    let edge = &design.edges[e];
                    let label = edge.label.as_deref().map(|l| crate::design::stored_label(graph.nodes[p].kind, l));
                    Parent { from: edge.from.clone(), label }
                })
                .collect();
            // The innermost loop whose body holds this node.
            let in_loop = bodies
                .iter()
                .filter(|(_, body)| body.contains(&i))
                .min_by_key(|(_, body)| body.len())
                .map(|(lp, _)| id_of(*lp))
                .transpose()?;
            steps.push(PlanStep { id: id_of(i)?, node: node.raw.clone(), parents, in_loop });
        }
        Ok(Plan {
            design: design_name,
            trigger: design.trigger().map(|t| t.raw.clone()),
            steps,
            budget_tokens: design.budget_tokens().and_then(Value::as_u64),
            budget_cost: design.raw.get("budget").and_then(|b| b.get("cost")).and_then(Value::as_f64),
            version: None,
            test: None,
            pins: BTreeMap::new(),
            timeout_seconds: design.timeout_seconds(),
            concurrency: design.raw.get(crate::concurrency::FIELD).and_then(|v| crate::concurrency::read(v).ok()),
            on_failure: design.on_failure().and_then(Value::as_str).and_then(|n| DesignName::parse(n).ok()),
            calls: BTreeMap::new(),
        })
    }

    /// The designs this plan's design steps call and its agent steps offer as tools (each
    /// once, in plan order).
    pub fn called_designs(&self) -> Vec<DesignName> {
        let mut out: Vec<DesignName> = Vec::new();
        for step in &self.steps {
            let names = match step.spec() {
                Ok(Spec::Design { design, .. }) => vec![design],
                Ok(Spec::Agent { tools, .. }) => tools,
                _ => Vec::new(),
            };
            for name in names {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    pub fn trigger_id(&self) -> Option<&str> {
        self.trigger.as_ref().and_then(|t| t.get("id")).and_then(Value::as_str)
    }

    /// The mode the trigger declares (`manual` without a trigger).
    pub fn trigger_mode(&self) -> &str {
        self.trigger.as_ref().map_or("manual", crate::trigger::declared_mode)
    }

    /// Every addressable id: the steps and the trigger.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.steps.iter().map(|s| s.id.to_string()).collect();
        if let Some(t) = self.trigger_id() {
            ids.push(t.to_string());
        }
        ids
    }

    /// Whether step `id` has an outgoing `error` edge (taken when it fails for good).
    pub fn has_error_edges(&self, id: &str) -> bool {
        self.steps.iter().any(|s| s.parents.iter().any(|p| p.from == id && p.label.as_deref() == Some(crate::vocab::ERROR_LABEL)))
    }

    pub fn step(&self, id: &str) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.id == id)
    }

    pub fn position(&self, id: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn notes_and_trigger_are_dropped_and_order_is_topological_with_position_ties() {
        let d = Design::from_value(&json!({
            "nodes": [
                {"id": "tip", "type": "note", "text": "hello"},
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "b", "type": "output"},
                {"id": "a", "type": "output"},
                {"id": "c", "type": "output"}
            ],
            "edges": [{"from": "start", "to": "b"}, {"from": "start", "to": "a"}, {"from": "a", "to": "c"}, {"from": "b", "to": "c"}]
        }))
        .unwrap();
        let plan = Plan::compile("demo", &d).unwrap();
        let ids: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert_eq!(plan.trigger_id(), Some("start"));
        assert_eq!(plan.steps[2].parents.len(), 2);
    }
}
