//! The operations every surface offers, as typed functions: create, save, load, delete, validate,
//! run, respond, retry, open, list, emit and import. The CLI, the HTTP handlers, the chat command
//! and the MCP listings call these; `tools::call` is only the JSON adapter for agents (it parses
//! arguments, calls these, and serialises their answers).
//!
//! Invariants:
//! - An operation answers `Result<T, Failure>`: `T` is what happened (a saved design, a run, an
//!   emission, an import report), `Failure` why nothing (or, for a run, nothing more) was done.
//! - A design with errors is `Failure::Refused` with the validator's report, which every surface
//!   answers as a 200 `{ok:false, error, errors}` (SPEC §13) or exit code 5.
//! - Each typed answer serialises to the contract body in one place ([`ContractBody`]), so the
//!   tools, the API and `vwf --json` print the same JSON.
//! - A refused request writes nothing: names, graphs and arguments are checked before the store
//!   is touched.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use vwf_core::design::{Design, ENABLED, is_enabled};
use vwf_core::json;
use vwf_core::listing::RunFilter;
use vwf_core::names::{DesignName, RunId, StepPath};
use vwf_core::pins::{self, TestScope};
use vwf_core::run::{Run, TriggerInfo};
use vwf_core::validate::{self, Issue, Report};
use vwf_core::versions::{self, DesignDiff, DesignVersion};
use vwf_store::Wait;

use crate::contract::answers::{self, Fate, Imported, JobEntry, Jobs, No, RunResult, Skipped, VersionGraph, Versions, Yes, done, to_body};
use crate::contract::requests::Name;
use crate::failure::Failure;
use crate::keys::IdempotencyKey;
use vwf_runtime::app::{App, quiet};
use vwf_runtime::runner::{Answer, Emission, Progress, RunPage, Runner};
use vwf_runtime::schedules::Job;
use vwf_store::StoreError;

/// A typed answer as the contract's JSON body.
pub trait ContractBody {
    fn body(&self) -> Value;
}

impl ContractBody for Run {
    fn body(&self) -> Value {
        self.result()
    }
}

/// What a pin gives its step: an output (a text or an output view), or what the step gave in a run.
#[derive(Debug, Clone, PartialEq)]
pub enum PinSource {
    Output(Value),
    Run(RunId),
}

/// How a run is started by hand: its input, and whether it is a test run (see `vwf_core::pins`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Start {
    /// The run's input; a test run limited to one step takes the newest run's when given none.
    pub input: Option<Value>,
    pub test: Option<TestScope>,
    /// Makes the start idempotent (see [`crate::keys`]).
    pub key: Option<IdempotencyKey>,
    /// The caller's trace (a `traceparent` header): the run's spans go in it.
    pub trace: Option<vwf_core::trace::TraceContext>,
}

impl Start {
    /// A normal run with `input`.
    pub fn with_input(input: Value) -> Start {
        Start { input: Some(input), test: None, key: None, trace: None }
    }
}

/// Whether a save may replace a design that has the name already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveMode {
    Replace,
    /// Only a new name: a design that exists is left as it is (`Failure::Conflict`).
    Create,
}

/// A design saved: `{ok:true, name, path, nodes}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Saved {
    #[schemars(with = "Name")]
    pub name: DesignName,
    pub path: String,
    pub nodes: usize,
}

impl ContractBody for Saved {
    fn body(&self) -> Value {
        done(self)
    }
}

/// Two versions of a design compared: `{ok:true, name, a, b, nodes, edges, design}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VersionDiff {
    #[schemars(with = "Name")]
    pub name: DesignName,
    pub a: u64,
    pub b: u64,
    #[serde(flatten)]
    pub diff: DesignDiff,
}

impl ContractBody for VersionDiff {
    fn body(&self) -> Value {
        done(self)
    }
}

/// A version restored: `{ok:true, name, restored, version, path}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Restored {
    #[schemars(with = "Name")]
    pub name: DesignName,
    pub restored: u64,
    /// The newest version, which has the restored content.
    pub version: Option<u64>,
    pub path: String,
}

impl ContractBody for Restored {
    fn body(&self) -> Value {
        done(self)
    }
}

/// The schedule jobs as `GET /schedules` and `vwf schedule list --json` answer them:
/// `{ok:true, schedules:[job…]}`, a job that cannot be read as `{ok:false, job_id, error}`.
pub fn schedules_body(entries: Vec<vwf_runtime::schedules::Entry>) -> Value {
    let schedules = entries
        .into_iter()
        .map(|e| match e {
            Ok(job) => JobEntry::Job(Box::new(job)),
            Err((job_id, error)) => JobEntry::Unreadable { ok: No, job_id, error },
        })
        .collect();
    done(Jobs { schedules })
}

/// What a schedule job's action did, as `POST /schedules/{job_id}/{action}` and `vwf schedule`
/// answer it: `{ok:true, job}` (pause, resume), `{ok:true, job_id, removed:true}` (remove), or
/// the run result (run).
impl ContractBody for vwf_runtime::schedules::Acted {
    fn body(&self) -> Value {
        use vwf_runtime::schedules::Acted;
        match self {
            Acted::Job(job) => done(answers::JobAnswer { job: (**job).clone() }),
            Acted::Removed { job_id } => done(answers::Removed { job_id: job_id.clone(), removed: Yes }),
            Acted::Ran(run) => run.result(),
        }
    }
}

/// A design's versions: `{ok:true, name, versions: [{version, hash, saved_at, nodes, edges}]}`.
pub fn versions_body(name: &DesignName, versions: &[DesignVersion]) -> Value {
    done(Versions::of(name, versions))
}

/// One version: `{ok:true, name, version, hash, saved_at, graph}`.
pub fn version_body(name: &DesignName, version: DesignVersion) -> Value {
    done(VersionGraph::of(name, version))
}

/// A design created by `new`: where it was written and its graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    pub path: String,
    pub graph: Value,
}

/// A design deleted: `{ok:true, name, deleted:true, schedule: job | null}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Deleted {
    #[schemars(with = "Name")]
    pub name: DesignName,
    pub deleted: Yes,
    /// The design's schedule job, now paused and saying why; null when it had none.
    pub schedule: Option<Job>,
}

impl ContractBody for Deleted {
    fn body(&self) -> Value {
        done(self)
    }
}

/// What `validate` checks: a saved design, or a draft document.
#[derive(Debug, Clone, PartialEq)]
pub enum Draft {
    Saved(DesignName),
    Graph(Value),
}

/// An event emitted: `{ok:true, event, resumed, runs, skipped: [{design, reason}]}`.
#[derive(Debug, Default)]
pub struct Emitted {
    pub event: String,
    pub emission: Emission,
}

impl ContractBody for Emitted {
    fn body(&self) -> Value {
        let runs = self.emission.runs.iter().map(|run| RunResult(run.result())).collect();
        let skipped = self.emission.skipped.iter().map(|(design, why)| Skipped { design: design.clone(), reason: why.clone() }).collect();
        let resumed = self.emission.resumed.iter().map(ToString::to_string).collect();
        done(answers::Emitted { event: self.event.clone(), resumed, runs, skipped })
    }
}

/// What became of one workflow of an imported agent.json.
#[derive(Debug, Clone, PartialEq)]
pub enum ImportStatus {
    Saved {
        path: String,
        /// False for a design with an automatic trigger: it arrives disabled.
        enabled: bool,
    },
    /// A design has the name and the import does not overwrite.
    Skipped,
    /// Not saved: the design's errors (`errors`), or why the save failed (`errors` absent).
    Refused { error: String, errors: Option<Vec<Issue>> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImportedDesign {
    pub name: String,
    pub status: ImportStatus,
}

/// An agent.json imported: each workflow's fate, and the importer's notes on what it could not map.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportReport {
    pub designs: Vec<ImportedDesign>,
    pub notes: Vec<String>,
}

impl ImportReport {
    /// Whether every workflow was saved or skipped (none refused).
    pub fn ok(&self) -> bool {
        !self.designs.iter().any(|d| matches!(d.status, ImportStatus::Refused { .. }))
    }

    /// `{ok, designs: [{name, status, path | reason | error, errors}], notes}`; `how_to_overwrite`
    /// is the surface's way to replace what was skipped (`--overwrite`, `overwrite=1`).
    pub fn body(&self, how_to_overwrite: &str) -> Value {
        let designs = self
            .designs
            .iter()
            .map(|d| {
                let fate = match &d.status {
                    ImportStatus::Saved { path, enabled } => Fate::Saved { path: path.clone(), enabled: *enabled },
                    ImportStatus::Skipped => Fate::Skipped { reason: format!("a design with this name exists (use {how_to_overwrite})") },
                    ImportStatus::Refused { error, errors } => Fate::Refused { error: error.clone(), errors: errors.clone() },
                };
                answers::ImportedDesign { name: d.name.clone(), fate }
            })
            .collect();
        to_body(&Imported { ok: self.ok(), designs, notes: self.notes.clone() })
    }
}

/// An imported design that would fire by itself (a schedule, heartbeat, event, folder or watch
/// trigger) is saved disabled: nothing it brings runs until a person enables it.
fn arrives_disabled(graph: &Value) -> Value {
    let automatic = Design::from_value(graph).ok().and_then(|d| d.trigger().map(|t| vwf_core::trigger::is_automatic(&t.raw)));
    let mut graph = graph.clone();
    if automatic == Some(true)
        && let Some(top) = graph.as_object_mut()
    {
        top.insert(ENABLED.into(), Value::Bool(false));
    }
    graph
}

/// A design's automatic trigger turned on or off: `{ok:true, name, enabled}`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Enabled {
    #[schemars(with = "Name")]
    pub name: DesignName,
    pub enabled: bool,
}

impl ContractBody for Enabled {
    fn body(&self) -> Value {
        done(self)
    }
}

/// The design `new` creates: a manual trigger and nothing else.
pub fn blank_design() -> Value {
    json!({
        "description": "",
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual", "x": 40, "y": 120}],
        "edges": []
    })
}

/// Holds one argument to the nesting limit; the error names it (`"graph" is nested …`).
pub fn check_argument(key: &str, value: &Value) -> Result<(), Failure> {
    json::check(value).map_err(|e| Failure::BadRequest(e.about(&format!("\"{key}\" is"))))
}

/// The reads that touch only the store, async: the server's read routes await them on its
/// runtime, with no blocking thread around the request; [`Service`]'s methods of the same names
/// wait for them from blocking code (the tools, the chat command, the CLI).
#[derive(Clone, Copy)]
pub struct Reads<'a>(pub &'a App);

impl Reads<'_> {
    /// The saved designs' names, sorted.
    pub async fn designs(&self) -> Result<Vec<String>, Failure> {
        Ok(self.0.store.list_designs().await?)
    }

    /// Of `names`, the designs saved with `"enabled": false` (their automatic trigger is off).
    pub async fn disabled(&self, names: &[String]) -> Vec<String> {
        let mut disabled = Vec::new();
        for name in names {
            let Ok(design) = DesignName::parse(name) else { continue };
            if self.0.store.load_design(&design).await.is_ok_and(|g| !is_enabled(&g)) {
                disabled.push(name.clone());
            }
        }
        disabled
    }

    /// A saved design's graph.
    pub async fn load(&self, name: &DesignName) -> Result<Value, Failure> {
        Ok(self.0.store.load_design(name).await?)
    }

    /// Every recorded version of a design, oldest first. `NotFound` when the name has neither a
    /// design nor versions.
    pub async fn versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, Failure> {
        // A deleted design's versions stay stored (a design saved again under the name goes on
        // numbering from them, and its runs keep their numbers) but are not shown: what was
        // deleted answers "not found" on every surface until the name is saved again.
        if !self.0.store.design_exists(name).await {
            return Err(StoreError::design_not_found(name).into());
        }
        Ok(self.0.store.list_versions(name).await?)
    }

    /// One recorded version of a design (not found once the design is deleted, as [`Self::versions`]).
    pub async fn version(&self, name: &DesignName, version: u64) -> Result<DesignVersion, Failure> {
        if !self.0.store.design_exists(name).await {
            return Err(StoreError::design_not_found(name).into());
        }
        Ok(vwf_runtime::versions::find(self.0.store.as_ref(), name, version).await?)
    }

    /// How version `b` of a design differs from version `a`, node by node and edge by edge; `b`
    /// defaults to the newest version, `a` to the one recorded before `b`.
    pub async fn diff(&self, name: &DesignName, a: Option<u64>, b: Option<u64>) -> Result<VersionDiff, Failure> {
        let recorded = self.versions(name).await?;
        let pick = |n: u64| recorded.iter().find(|v| v.version == n).ok_or_else(|| vwf_store::version_not_found(name, n));
        let new = match b {
            Some(n) => pick(n)?,
            None => recorded.last().ok_or_else(|| Failure::NotFound(format!("design {:?} has no recorded versions", name.as_str())))?,
        };
        let old = match a {
            Some(n) => pick(n)?,
            None => recorded
                .iter()
                .rfind(|v| v.version < new.version)
                .ok_or_else(|| Failure::NotFound(format!("no version of design {:?} before version {}", name.as_str(), new.version)))?,
        };
        Ok(VersionDiff { name: name.clone(), a: old.version, b: new.version, diff: versions::diff(&old.graph, &new.graph) })
    }

    /// What the runs that ended in `query`'s period did (see [`vwf_core::stats`]).
    pub async fn stats(&self, query: &vwf_core::stats::Query) -> Result<vwf_core::stats::Report, Failure> {
        let records = self.0.store.run_stats(query.from, query.to, query.design.as_ref()).await?;
        Ok(vwf_core::stats::report(query, records, self.0.drivers.config.prices.currency.clone()))
    }
}

/// The operations over one app, with the runner they drive runs with.
pub struct Service<'a> {
    pub app: &'a App,
    runner: Runner<'a>,
}

impl<'a> Service<'a> {
    /// For surfaces that answer when a run is done or parked: no progress, no sleeping through
    /// waits (tools, the API, the chat command, MCP).
    pub fn new(app: &'a App) -> Service<'a> {
        Service { app, runner: app.runner(&quiet, false) }
    }

    /// For the CLI: `observer` hears of each step, and a run sleeps through its `wait` steps.
    pub fn foreground(app: &'a App, observer: &'a dyn Fn(Progress<'_>)) -> Service<'a> {
        Service { app, runner: app.runner(observer, true) }
    }

    pub fn runner(&self) -> &Runner<'a> {
        &self.runner
    }

    /// The reads that touch only the store (see [`Reads`]).
    pub fn reads(&self) -> Reads<'a> {
        Reads(self.app)
    }

    /// The saved designs' names, sorted.
    pub fn designs(&self) -> Result<Vec<String>, Failure> {
        self.reads().designs().wait()
    }

    /// Of `names`, the designs saved with `"enabled": false` (their automatic trigger is off).
    pub fn disabled(&self, names: &[String]) -> Vec<String> {
        self.reads().disabled(names).wait()
    }

    /// Turns a design's automatic trigger on or off (`vwf enable`, `vwf disable`, `POST
    /// /designs/{name}/enable|disable`): saves it with `"enabled": false`, or without the field,
    /// as `save` does (a new version when that changes it). Runs started by hand are not affected.
    pub fn set_enabled(&self, name: &DesignName, on: bool) -> Result<Enabled, Failure> {
        let mut graph = self.load(name)?;
        let Some(top) = graph.as_object_mut() else {
            return Err(Failure::BadRequest(format!("design {name} is not a JSON object")));
        };
        if on {
            top.remove(ENABLED);
        } else {
            top.insert(ENABLED.into(), Value::Bool(false));
        }
        let saved = self.save(name, &graph, SaveMode::Replace)?;
        Ok(Enabled { name: saved.name, enabled: on })
    }

    /// Creates a design, blank or a copy of the built-in template `from`; refuses to overwrite one
    /// that exists.
    pub fn create(&self, name: &str, from: Option<&str>) -> Result<Created, Failure> {
        let name = DesignName::parse(name).map_err(Failure::BadRequest)?;
        let graph = match from {
            None => blank_design(),
            Some(template) => crate::assets::template(template)
                .map_err(|names| Failure::NotFound(format!("no template named {template:?}; the templates are: {}", names.join(", "))))?,
        };
        let path = self.app.store.create_design(&name, &graph).wait().map_err(|e| match e {
            StoreError::Exists(_) => {
                Failure::Conflict(format!("design {:?} already exists; open it with `vwf open {name}`", name.as_str()))
            }
            e => e.into(),
        })?;
        self.record_version(&name, &graph)?;
        Ok(Created { path, graph })
    }

    /// Validates `graph` (a design, or its JSON text) and saves it as `name`, its edge labels
    /// normalised. A design with errors is refused and nothing is written.
    pub fn save(&self, name: &DesignName, graph: &Value, mode: SaveMode) -> Result<Saved, Failure> {
        let graph = match graph {
            Value::String(text) => json::parse(text).map_err(|e| Failure::BadRequest(e.about("\"graph\" is")))?,
            other => {
                check_argument("graph", other)?;
                other.clone()
            }
        };
        let mut report = validate::validate(&graph);
        if !report.ok {
            return Err(Failure::Refused(report));
        }
        let mut design = Design::from_value(&graph).map_err(|_| Failure::Internal("design changed while saving".into()))?;
        if let Some(issue) = self.runner.call_cycle(name, &design).or_else(|| crate::hooks::path_taken(self.app, name, &design)) {
            report.errors.push(issue);
            report.ok = false;
            return Err(Failure::Refused(report));
        }
        design.normalize_labels();
        let normalized = design.to_value();
        let path = match mode {
            SaveMode::Replace => {
                // Content saved before versions existed is recorded before it is replaced.
                if let Ok(previous) = self.app.store.load_design(name).wait() {
                    vwf_runtime::versions::record(self.app.store.as_ref(), name, &previous, self.app.clock.now())?;
                }
                self.app.store.save_design(name, &normalized).wait()?
            }
            SaveMode::Create => self.app.store.create_design(name, &normalized).wait()?,
        };
        self.record_version(name, &normalized)?;
        let nodes = normalized["nodes"].as_array().map_or(0, Vec::len);
        Ok(Saved { name: name.clone(), path, nodes })
    }

    /// A saved design's graph.
    pub fn load(&self, name: &DesignName) -> Result<Value, Failure> {
        self.reads().load(name).wait()
    }

    /// Records `graph` as the newest version of `name`, then prunes as `[designs] keep_versions`
    /// says; the version's number.
    fn record_version(&self, name: &DesignName, graph: &Value) -> Result<u64, Failure> {
        let store = self.app.store.as_ref();
        let version = vwf_runtime::versions::record(store, name, graph, self.app.clock.now())?;
        vwf_runtime::versions::prune(store, name, self.app.drivers.config.designs.keep_versions)?;
        Ok(version)
    }

    /// Every recorded version of a design, oldest first (see [`Reads::versions`]).
    pub fn versions(&self, name: &DesignName) -> Result<Vec<DesignVersion>, Failure> {
        self.reads().versions(name).wait()
    }

    /// One recorded version of a design (see [`Reads::version`]).
    pub fn version(&self, name: &DesignName, version: u64) -> Result<DesignVersion, Failure> {
        self.reads().version(name, version).wait()
    }

    /// How two versions of a design differ (see [`Reads::diff`]).
    pub fn diff(&self, name: &DesignName, a: Option<u64>, b: Option<u64>) -> Result<VersionDiff, Failure> {
        self.reads().diff(name, a, b).wait()
    }

    /// Pins step `node` of design `name` (a given output, or what the step gave in a run), or
    /// removes its pin (`None`; a step with no pin keeps having none), and saves the design as
    /// `save` does (validated; a new version). Pins change test runs only. A design that is not
    /// there is not found whatever the pin names.
    pub fn pin(&self, name: &DesignName, node: &str, pin: Option<PinSource>) -> Result<Saved, Failure> {
        let mut graph = self.load(name)?;
        let output = match pin {
            None => None,
            Some(PinSource::Output(output)) => Some(output),
            Some(PinSource::Run(id)) => Some(self.output_of(&id, node)?),
        };
        let Some(top) = graph.as_object_mut() else {
            return Err(Failure::BadRequest(format!("design {name} is not a JSON object")));
        };
        let Some(pins) = top.entry(pins::FIELD).or_insert_with(|| json!({})).as_object_mut() else {
            return Err(Failure::BadRequest(format!("the \"pins\" of design {name} is not an object")));
        };
        match output {
            Some(output) => {
                pins.insert(node.to_string(), output);
            }
            // Removing a pin that is not there leaves the design as it is (no new version).
            None => {
                pins.remove(node);
            }
        }
        if pins.is_empty() {
            top.remove(pins::FIELD);
        }
        self.save(name, &graph, SaveMode::Replace)
    }

    /// The output step `node` gave in run `id` (to pin it). A run that is not there, or has no
    /// such output, is a conflict (409): the request names it in its body, and the design it
    /// acts on is there (like a restore of a version the design does not have).
    fn output_of(&self, id: &RunId, node: &str) -> Result<Value, Failure> {
        let run = match self.open(id) {
            Err(Failure::NotFound(e)) => return Err(Failure::Conflict(e)),
            other => other?,
        };
        run.outputs().get(node).cloned().ok_or_else(|| Failure::Conflict(format!("run {id} has no output of step {node}")))
    }

    /// Saves version `version`'s content as the newest version of the design (as `save` saves:
    /// validated, refused with its errors). Restoring the content the design has makes no version.
    pub fn restore(&self, name: &DesignName, version: u64) -> Result<Restored, Failure> {
        // The design is the resource a restore acts on: a version it does not have is a conflict
        // with its state (409), and only a design that is not there is not found (404).
        let old = match self.version(name, version) {
            Err(Failure::NotFound(e)) if self.app.store.load_design(name).wait().is_ok() => {
                return Err(Failure::Conflict(format!("{e}: restore one of the versions `vwf versions {name}` lists")));
            }
            other => other?,
        };
        let saved = self.save(name, &old.graph, SaveMode::Replace)?;
        let now = vwf_runtime::versions::of_content(self.app.store.as_ref(), name, &old.graph, self.app.clock.now());
        Ok(Restored { name: name.clone(), restored: version, version: now, path: saved.path })
    }

    /// Deletes a saved design. Its runs stay readable (each keeps the plan it started with); its
    /// schedule job, if any, is paused and says why. `NotFound` when no design has the name
    /// (nothing is written then).
    pub fn delete(&self, name: &DesignName) -> Result<Deleted, Failure> {
        let schedule = vwf_runtime::schedules::delete_design(self.app, name, || Ok(self.app.store.delete_design(name).wait()?))?;
        Ok(Deleted { name: name.clone(), deleted: Yes, schedule })
    }

    /// The validator's report on a saved design or a draft.
    pub fn validate(&self, draft: &Draft) -> Result<Report, Failure> {
        let report = match draft {
            Draft::Saved(name) => validate::validate(&self.load(name)?),
            Draft::Graph(graph) => {
                check_argument("graph", graph)?;
                validate::validate(graph)
            }
        };
        Ok(report)
    }

    /// Runs saved design `name` by hand until it is done or parked.
    pub fn run(&self, name: &DesignName, start: Start) -> Result<Run, Failure> {
        self.run_with(name, start, None::<fn(&Run)>)
    }

    /// [`Service::run`], telling `started` of the run once it is saved durably, before its first
    /// step (a caller that answers at once).
    pub fn run_then(&self, name: &DesignName, start: Start, started: impl FnOnce(&Run)) -> Result<Run, Failure> {
        self.run_with(name, start, Some(started))
    }

    fn run_with(&self, name: &DesignName, start: Start, started: Option<impl FnOnce(&Run)>) -> Result<Run, Failure> {
        if start.test.is_none() && start.key.is_none() {
            let mut trigger = TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, start.input.unwrap_or(Value::Null));
            trigger.trace = start.trace;
            return Ok(self.runner.start_saved(name, trigger, started)?);
        }
        let (plan, past_input) = match &start.test {
            None => (self.runner.compile(name)?, Value::Null),
            Some(scope) => self.runner.compile_test(name, scope)?,
        };
        let input = start.input.unwrap_or(past_input);
        let mut trigger = TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, input);
        trigger.trace = start.trace;
        if let Some(key) = &start.key {
            let input = trigger.input.clone();
            return crate::keys::run(self.app, key, name.as_str(), &input, start.test.is_some(), |id| {
                let told = |run: &Run| started.into_iter().for_each(|started| started(run));
                Ok(self.runner.start_as(id, plan, trigger, told)?)
            });
        }
        Ok(match started {
            Some(started) => self.runner.start_then(plan, trigger, started)?,
            None => self.runner.start(plan, trigger)?,
        })
    }

    /// Answers a parked step of run `id` and drives the run on. With `[gates]
    /// known_names_only`, an answer that names who gives it (not through a chat platform, which
    /// vouches for its own ids) must name one of `[people]`.
    pub fn respond(&self, id: &RunId, node: &StepPath, answer: Answer) -> Result<Run, Failure> {
        let config = &self.app.drivers.config;
        if config.gates.known_names_only
            && let Answer::Respond(vwf_core::run::Response::Answer(reply)) = &answer
            && let Some(by) = &reply.by
            && !matches!(reply.via.as_deref(), Some("telegram" | "slack"))
            && !config.people.contains_key(by)
        {
            return Err(Failure::Forbidden(format!(
                "{node:?}: {by:?} is not one of [people] in visual-workflow.toml ([gates] known_names_only)"
            )));
        }
        Ok(self.runner.respond(id, node, answer)?)
    }

    /// Retries a failed run from its failed step.
    pub fn retry(&self, id: &RunId) -> Result<Run, Failure> {
        Ok(self.runner.retry(id)?)
    }

    /// Retries a finished run from the start with the design's current version (a new run
    /// whose `retry_of` is `id`); refused with the report when the design now has errors.
    pub fn retry_from_start(&self, id: &RunId) -> Result<Run, Failure> {
        Ok(self.runner.retry_from_start(id)?)
    }

    /// A run as it stands now (see [`Runner::open`]).
    pub fn open(&self, id: &RunId) -> Result<Run, Failure> {
        Ok(self.runner.open(id)?)
    }

    /// One page of runs, newest first.
    pub fn runs(&self, filter: &RunFilter, before: Option<&RunId>, limit: usize) -> Result<RunPage, Failure> {
        Ok(self.runner.list_page(filter, before, limit)?)
    }

    /// What the runs that ended in `query`'s period did (see [`vwf_core::stats`]).
    pub fn stats(&self, query: &vwf_core::stats::Query) -> Result<vwf_core::stats::Report, Failure> {
        self.reads().stats(query).wait()
    }

    /// Emits `event`: every design whose event trigger takes it starts a run.
    pub fn emit(&self, event: &str, payload: Value) -> Result<Emitted, Failure> {
        let emission = self.runner.emit(event, payload, &vwf_runtime::runner::EmitSource::default())?;
        Ok(Emitted { event: event.to_string(), emission })
    }

    /// [`Service::emit`] made idempotent by `key` (see [`crate::keys`]): the answer's body, the
    /// first request's when the key was used before.
    pub fn emit_keyed(&self, event: &str, payload: Value, key: Option<&IdempotencyKey>) -> Result<Value, Failure> {
        match key {
            None => Ok(self.emit(event, payload)?.body()),
            Some(key) => crate::keys::emit(self.app, key, event, &payload.clone(), || Ok(self.emit(event, payload)?.body())),
        }
    }

    /// Turns an agent.json document's workflows into saved designs. A design that exists is
    /// skipped unless `overwrite`; each workflow is saved as `save` saves (refused with its errors
    /// when it has any); the others are saved whatever becomes of one.
    pub fn import(&self, doc: &Value, overwrite: bool) -> ImportReport {
        let imported = vwf_core::import::import_agent_json(doc);
        let designs = imported
            .designs
            .iter()
            .map(|(name, graph)| {
                let parsed = DesignName::parse(name).map_err(Failure::BadRequest);
                let status = match parsed {
                    Ok(n) if self.app.store.design_exists(&n).wait() && !overwrite => ImportStatus::Skipped,
                    parsed => match parsed.and_then(|n| {
                        let graph = arrives_disabled(graph);
                        Ok((self.save(&n, &graph, SaveMode::Replace)?, is_enabled(&graph)))
                    }) {
                        Ok((saved, enabled)) => ImportStatus::Saved { path: saved.path, enabled },
                        Err(Failure::Refused(report)) => ImportStatus::Refused { error: report.refusal(), errors: Some(report.errors) },
                        Err(f) => ImportStatus::Refused { error: f.to_string(), errors: None },
                    },
                };
                ImportedDesign { name: name.clone(), status }
            })
            .collect();
        ImportReport { designs, notes: imported.notes }
    }
}
