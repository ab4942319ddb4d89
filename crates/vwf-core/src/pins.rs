//! Pinned outputs and test runs.
//!
//! A design may pin the output of any step, `"pins": {"<step id>": <output>}`, where the output
//! is a text (a JSON string) or an output view as a run's `outputs` holds it (`{"text", "data",
//! ...}`; the counts are recomputed from the text). Pins are saved with the design and never used
//! by a normal run: [`Plan::compile`] ignores them. A **test run** compiles the design with
//! [`Plan::compile_test`]: each pinned step settles at once with its pinned output and does
//! nothing (no command, no HTTP call, no model, no delivery), the others run for real, and the run
//! is marked `test`. A test run may be limited to one step ([`TestScope`]):
//!
//! - `until`: the step and every step that leads to it (a loop on the way runs its whole body,
//!   since its output is its passes); the step itself runs even when it is pinned.
//! - `only`: the step alone; each step that leads to it gives the output of its pin or, without
//!   one, the newest output a past run of the design has for it. A step with neither is an error
//!   that says how to get one.
//!
//! Invariants: a pin names a step (not the trigger, not a note); a condition's pin says which
//! branch (`value`), an approval's pin which answer (`answer`, one of its options); an output
//! node's pin never claims a delivery (`deliveries` is always empty).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::design::{Design, NodeKind};
use crate::limits;
use crate::plan::Plan;
use crate::spec::Spec;
use crate::validate::{Issue, Report};
use crate::view;

/// The design's top-level field that holds the pins.
pub const FIELD: &str = "pins";

/// Which part of a design a test run runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "lowercase")]
pub enum TestScope {
    /// Every step, pinned ones from their pins.
    Whole,
    /// The step and every step leading to it.
    Until { node: String },
    /// The step alone, from the outputs of pins and past runs.
    Only { node: String },
}

impl TestScope {
    /// The step a limited test run is about.
    pub fn target(&self) -> Option<&str> {
        match self {
            TestScope::Whole => None,
            TestScope::Until { node } | TestScope::Only { node } => Some(node),
        }
    }
}

/// The scope of a run asked for with `test`, `only` and `until` (`None`: a normal run).
pub fn scope_of(test: bool, only: Option<&str>, until: Option<&str>) -> Result<Option<TestScope>, String> {
    match (only, until) {
        (Some(_), Some(_)) => Err("give \"only\" or \"until\", not both".into()),
        (Some(node), None) => Ok(Some(TestScope::Only { node: node.to_string() })),
        (None, Some(node)) => Ok(Some(TestScope::Until { node: node.to_string() })),
        (None, None) => Ok(test.then_some(TestScope::Whole)),
    }
}

/// The design's pins as output views, by step id, and the problems found in them (the
/// validator reports those; a design with any is not saved).
pub fn read(design: &Design) -> (BTreeMap<String, Value>, Vec<Issue>) {
    let mut pins = BTreeMap::new();
    let mut issues = Vec::new();
    let Some(value) = design.raw.get(FIELD) else { return (pins, issues) };
    let Some(map) = value.as_object() else {
        issues.push(Issue::field_only(FIELD, "\"pins\" must be an object of step id → pinned output"));
        return (pins, issues);
    };
    for (id, pin) in map {
        let Some(node) = design.nodes.iter().find(|n| &n.id == id) else {
            issues.push(Issue::field_only(FIELD, format!("a pin names step {id:?}, which the design does not have")));
            continue;
        };
        let Some(kind) = node.kind else { continue };
        let spec = Spec::parse_lenient(node).0;
        match pinned_view(kind, &spec, pin) {
            Ok(view) => {
                pins.insert(id.clone(), view);
            }
            Err(e) => issues.push(Issue::node_field(id, FIELD, format!("the pin of {id}: {e}"))),
        }
    }
    (pins, issues)
}

/// A pin as the output view the step would have given, or why it cannot be one.
pub fn pinned_view(kind: NodeKind, spec: &Spec, pin: &Value) -> Result<Value, String> {
    if matches!(kind, NodeKind::Trigger | NodeKind::Note) {
        return Err(format!("a {} node is not a step, so it has no output to pin", kind.as_str()));
    }
    let (text, data, extra) = match pin {
        Value::String(s) => (s.clone(), None, Map::new()),
        Value::Object(o) => {
            let text = match (o.get("text"), o.get("data")) {
                (Some(Value::String(s)), _) => s.clone(),
                (Some(_), _) => return Err("\"text\" must be a string".into()),
                (None, Some(d)) => serde_json::to_string(d).map_err(|e| e.to_string())?,
                (None, None) => String::new(),
            };
            let extra: Map<String, Value> =
                o.iter().filter(|(k, _)| !matches!(k.as_str(), "text" | "data")).map(|(k, v)| (k.clone(), v.clone())).collect();
            (text, o.get("data").cloned(), extra)
        }
        other => return Err(format!("a pin is a text or an output object like {{\"text\": ...}}, not {}", view::kind_name(other))),
    };
    if text.len() > limits::STEP_OUTPUT_BYTES {
        return Err(format!("its text is {} bytes, over the {} byte limit of a step's output", text.len(), limits::STEP_OUTPUT_BYTES));
    }
    let mut out = view::output_view(&text, extra);
    let Some(obj) = out.as_object_mut() else { return Err("not an object".into()) };
    if let Some(d) = data {
        obj.insert("data".into(), d);
    }
    match (kind, spec) {
        (NodeKind::Condition, _) if !obj.get("value").is_some_and(Value::is_boolean) => {
            return Err("a condition's pin needs \"value\": true or false (the branch a test run takes)".into());
        }
        (NodeKind::Approval, Spec::Approval { options, .. }) => match obj.get("answer").and_then(Value::as_str) {
            Some(a) if options.iter().any(|o| o == a) => {}
            _ => return Err(format!("an approval's pin needs \"answer\": one of {}", options.join(", "))),
        },
        (NodeKind::Output, _) => {
            // A pinned output node sends nothing, so it never claims a delivery.
            obj.insert("deliveries".into(), Value::Array(Vec::new()));
        }
        _ => {}
    }
    Ok(out)
}

impl Plan {
    /// Compiles a test run of `design` (see the module doc). `past` holds, by step id, the newest
    /// output past runs of the design have (only `only` reads it). Errors come back as a report.
    pub fn compile_test(design_name: &str, design: &Design, scope: &TestScope, past: &BTreeMap<String, Value>) -> Result<Plan, Report> {
        let mut plan = Plan::compile(design_name, design)?;
        let (mut pins, _) = read(design);
        let refuse = |node: &str, msg: String| Report::new(vec![Issue::node(node, msg)], Vec::new());
        if let Some(target) = scope.target() {
            let Some(step) = plan.step(target) else {
                return Err(Report::new(
                    vec![Issue::design(format!("a test run names step {target:?}, which the design does not have as a step"))],
                    Vec::new(),
                ));
            };
            // The target runs for real, whatever its pin, and so does the loop whose passes it
            // runs in (a pinned loop opens no pass).
            pins.remove(target);
            if let Some(lp) = &step.in_loop {
                pins.remove(lp.as_str());
            }
            let only = matches!(scope, TestScope::Only { .. });
            if only && let Some(lp) = &step.in_loop {
                return Err(refuse(target, format!("{target} runs inside loop {lp}'s passes: run up to it instead, or only {lp}")));
            }
            let leading = plan.leading_to(target);
            if only {
                for id in &leading {
                    if id == target || pins.contains_key(id) {
                        continue;
                    }
                    let step = plan.step(id).and_then(|s| s.kind().map(|k| (k, s.spec())));
                    match (past.get(id), step) {
                        (Some(out), Some((kind, Ok(spec)))) => {
                            let view = pinned_view(kind, &spec, out).map_err(|e| refuse(id, format!("the last output of {id}: {e}")))?;
                            pins.insert(id.clone(), view);
                        }
                        _ => {
                            return Err(refuse(
                                id,
                                format!("{target} needs the output of {id}, which no past run has: pin {id}, or run up to {target} first"),
                            ));
                        }
                    }
                }
            }
            let mut keep = leading;
            // A loop that runs (is not pinned) needs its whole body, unless the target is in it.
            let loops: Vec<String> = keep.iter().filter(|id| plan.step(id).is_some_and(|s| s.is(NodeKind::Loop))).cloned().collect();
            for lp in loops {
                if pins.contains_key(&lp) || step_in_loop(&plan, target) == Some(lp.as_str()) {
                    continue;
                }
                keep.extend(plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())).map(|s| s.id.to_string()));
            }
            // A pinned loop's body never runs.
            let pinned_loops: BTreeSet<&str> =
                pins.keys().map(String::as_str).filter(|id| plan.step(id).is_some_and(|s| s.is(NodeKind::Loop))).collect();
            keep.retain(|id| {
                id == target || !plan.step(id).and_then(|s| s.in_loop.as_ref()).is_some_and(|lp| pinned_loops.contains(lp.as_str()))
            });
            plan.steps.retain(|s| keep.contains(s.id.as_str()));
        }
        pins.retain(|id, _| plan.step(id).is_some());
        plan.pins = pins;
        plan.test = Some(scope.clone());
        Ok(plan)
    }

    /// `target` and every step it depends on through edges.
    fn leading_to(&self, target: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![target.to_string()];
        while let Some(id) = todo.pop() {
            let Some(step) = self.step(&id) else { continue };
            if seen.insert(id.clone()) {
                todo.extend(step.parents.iter().map(|p| p.from.clone()));
            }
        }
        seen
    }
}

fn step_in_loop<'p>(plan: &'p Plan, id: &str) -> Option<&'p str> {
    plan.step(id).and_then(|s| s.in_loop.as_deref())
}
