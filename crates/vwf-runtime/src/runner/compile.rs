//! Designs compiled for a run: the saved design checked and turned into a plan, pinned to its
//! version; for a test run limited to one step, with what the design's recent runs left.

use serde_json::Value;
use vwf_core::design::Design;
use vwf_core::listing::RunFilter;
use vwf_core::names::DesignName;
use vwf_core::pins::TestScope;
use vwf_core::plan::Plan;
use vwf_core::run::{Run, TriggerInfo};
use vwf_core::validate::Report;
use vwf_store::Wait;

use super::Runner;
use crate::error::RunError;
use vwf_store::SavedDesign;

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
        Ok(self.compile_saved(name, compile)?.0)
    }

    /// [`Runner::compile_with`], with the [`SavedDesign::revision`] compiled.
    fn compile_saved(
        &self,
        name: &DesignName,
        compile: impl FnOnce(&Design) -> Result<Plan, Report>,
    ) -> Result<(Plan, Option<u64>), RunError> {
        let SavedDesign { graph, newest, revision } = self.store.load_design_with_newest(name).wait()?;
        let report = match Design::from_value(&graph) {
            Ok(design) => match compile(&design) {
                Ok(mut plan) => {
                    plan.version = crate::versions::of_content_with(self.store, name, &graph, newest, self.clock.now());
                    self.pin_calls(&mut plan);
                    return Ok((plan, revision));
                }
                Err(report) => report,
            },
            Err(errors) => Report { ok: false, errors, warnings: Vec::new() },
        };
        Err(RunError::Refused(report))
    }
}

/// The plans a process compiled from saved designs, kept for the design's next run where the
/// store numbers each save of a design ([`SavedDesign::revision`], PostgreSQL): such a run's start
/// then reads no design. The statement that allocates its id answers the design's revision too
/// ([`vwf_store::Store::allocate_locked_run_for`]); a plan of another revision is compiled again
/// under the new run's lock, so a run never starts from a design older than the one saved when
/// it was asked for, whichever instance saved it.
///
/// Kept only: plans of a recorded version that call no other design (a called design's version
/// is pinned when the caller starts, and it changes without the caller's revision changing).
#[derive(Default)]
pub struct Plans(std::sync::Mutex<std::collections::HashMap<DesignName, (u64, Plan)>>);

/// Designs whose plans are kept at most; past that the kept ones are dropped and kept anew.
const KEPT_PLANS: usize = 256;

impl Plans {
    /// The plan kept for `name`, with the revision it was compiled from.
    pub(super) fn get(&self, name: &DesignName) -> Option<(u64, Plan)> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(name).cloned()
    }

    /// Keeps `plan`, compiled from `revision` of `name`, if it may be kept (see [`Plans`]).
    pub(super) fn keep(&self, name: &DesignName, revision: u64, plan: &Plan) {
        if plan.version.is_none() || !plan.called_designs().is_empty() || plan.test.is_some() {
            return;
        }
        let mut kept = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() >= KEPT_PLANS && !kept.contains_key(name) {
            kept.clear();
        }
        kept.insert(name.clone(), (revision, plan.clone()));
    }

    /// Forgets the plan kept for `name`.
    pub(super) fn forget(&self, name: &DesignName) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(name);
    }
}

impl Runner<'_> {
    /// [`Runner::compile`], keeping the plan (see [`Plans`]) when the store gives a revision.
    fn compile_kept(&self, name: &DesignName) -> Result<Plan, RunError> {
        let (plan, revision) = self.compile_saved(name, |design| Plan::compile(name.as_str(), design))?;
        if let (Some(plans), Some(revision)) = (self.plans, revision) {
            plans.keep(name, revision, &plan);
        }
        Ok(plan)
    }

    /// Starts a run of saved design `name` with `trigger` (as [`Runner::compile`], then
    /// [`Runner::start_then`] when `started` is given, else [`Runner::start`]), from the plan kept
    /// for it when it is still the saved design's (see [`Plans`]).
    pub fn start_saved(&self, name: &DesignName, trigger: TriggerInfo, started: Option<impl FnOnce(&Run)>) -> Result<Run, RunError> {
        let kept = self.plans.and_then(|plans| Some((plans, plans.get(name)?)));
        let Some((plans, (had, plan))) = kept else {
            return self.start_with(self.compile_kept(name)?, trigger, started);
        };
        super::check_input(&trigger)?;
        // A run nobody is told of before its end may end in one request (see `fresh`).
        let kept = match started.is_none().then(|| self.store.fresh_run_id()).flatten() {
            Some(id) => match self.end_fresh(id, plan, &trigger, had)? {
                Some(run) => return Ok(run),
                None => plans.get(name),
            },
            None => Some((had, plan)),
        };
        let (lock, revision) = self.store.allocate_locked_run_for(name).wait()?;
        let plan = match (revision, kept) {
            (Some(now), Some((had, plan))) if now == had => plan,
            _ => {
                plans.forget(name);
                self.compile_kept(name)?
            }
        };
        self.refuse_early(&plan, &trigger.input)?;
        self.launch_locked(lock, |id, now| self.make_start(plan, trigger, id, now), started)
    }
}
