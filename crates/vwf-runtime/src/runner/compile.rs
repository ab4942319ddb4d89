//! Designs compiled for a run: the saved design checked and turned into a plan, pinned to its
//! version; for a test run limited to one step, with what the design's recent runs left.

use serde_json::Value;
use vwf_core::design::Design;
use vwf_core::listing::RunFilter;
use vwf_core::names::DesignName;
use vwf_core::pins::TestScope;
use vwf_core::plan::Plan;
use vwf_core::validate::Report;

use super::Runner;
use crate::error::RunError;

/// How many of a design's recent runs a test run limited to one step takes outputs from.
const PAST_RUNS: usize = 20;

/// What a test run of one step starts from (see [`Runner::compile_test`]).
#[derive(Default)]
struct Past {
    outputs: std::collections::BTreeMap<String, Value>,
    input: Value,
}

impl Runner<'_> {
    /// Compiles a saved design: `RunError::Refused` when the design has errors.
    pub fn compile(&self, name: &DesignName) -> Result<Plan, RunError> {
        self.compile_with(name, |design| Plan::compile(name.as_str(), design))
    }

    /// Compiles a saved design for a test run (see `vwf_core::pins`). Also answers the input of
    /// the design's newest run, which a test run limited to a step starts from when given none.
    pub fn compile_test(&self, name: &DesignName, scope: &TestScope) -> Result<(Plan, Value), RunError> {
        let past = match scope.target() {
            Some(_) => self.past(name)?,
            None => Past::default(),
        };
        let plan = self.compile_with(name, |design| Plan::compile_test(name.as_str(), design, scope, &past.outputs))?;
        Ok((plan, past.input))
    }

    /// The newest output of each step among the design's recent runs, and the newest run's input.
    fn past(&self, name: &DesignName) -> Result<Past, RunError> {
        let filter = RunFilter { design: Some(name.clone()), ..RunFilter::default() };
        let mut past = Past::default();
        for (i, run) in self.list_page(&filter, None, PAST_RUNS)?.runs.into_iter().enumerate() {
            if i == 0 {
                past.input = run.pointer("/trigger/input").cloned().unwrap_or(Value::Null);
            }
            if let Some(Value::Object(outputs)) = run.get("outputs") {
                for (id, view) in outputs {
                    past.outputs.entry(id.clone()).or_insert_with(|| view.clone());
                }
            }
        }
        Ok(past)
    }

    fn compile_with(&self, name: &DesignName, compile: impl FnOnce(&Design) -> Result<Plan, Report>) -> Result<Plan, RunError> {
        let (graph, newest) = self.store.load_design_with_newest(name)?;
        let report = match Design::from_value(&graph) {
            Ok(design) => match compile(&design) {
                Ok(mut plan) => {
                    plan.version = crate::versions::of_content_with(self.store, name, &graph, newest, self.clock.now());
                    self.pin_calls(&mut plan);
                    return Ok(plan);
                }
                Err(report) => report,
            },
            Err(errors) => Report { ok: false, errors, warnings: Vec::new() },
        };
        Err(RunError::Refused(report))
    }
}
