//! Design steps (SPEC §3 `design`) in the runtime: making the child runs the engine asks for,
//! driving them, and telling their parents where they stand.
//!
//! Exactly one child per design step attempt, whatever crashes and however many instances: the
//! child's id is derived by the engine (see `vwf_core::run::ChildStart`), the child is made under
//! that id's lock only when no run has it, and a parent saved with a child still to make makes it
//! when it is next driven (by anyone). A child a parent waits for is driven at once, in the
//! parent's turn; one it does not wait for is driven once the parent has parked or ended.
//!
//! Locks are taken parent first, child second: a parent drives its child while it holds its own
//! lock. A child that moves on its own (answered, resumed, retried) tells its parent only after it
//! let its own lock go ([`Runner::tell_parent`]), so two processes never wait on each other. A
//! parent whose child moved while nobody told it (the process died in between) learns of it the
//! next time it is read or the daemon looks ([`vwf_core::run::settle::Settle::Children`]).

use vwf_core::design::Design;
use vwf_core::names::{DesignName, RunId};
use vwf_core::plan::Plan;
use vwf_core::run::{ChildStart, Run, Status};
use vwf_store::Wait;
use vwf_store::{RunLock, StoreError};

use super::Runner;
use crate::error::RunError;

/// What a model learns of a child run its tool call started: how it went, its text and each
/// step's, what it waits for, or why it failed.
fn tool_result(child: &Run) -> serde_json::Value {
    let outputs: serde_json::Map<String, serde_json::Value> =
        child.outputs().iter().filter_map(|(id, view)| Some((id.clone(), view.get("text")?.clone()))).collect();
    let mut out = serde_json::json!({
        "ok": child.status() != Status::Failed,
        "run_id": child.run_id(),
        "design": child.design(),
        "status": child.status().as_str(),
        "text": child.result_text(),
        "outputs": outputs,
    });
    if let Some(pending) = child.pending() {
        out["pending"] = serde_json::to_value(pending).unwrap_or_default();
    }
    if let Some(error) = child.error() {
        out["error"] = serde_json::Value::String(error.to_string());
    }
    out
}

impl Runner<'_> {
    /// Refuses a design that would call itself, directly or through saved designs: the issue
    /// names the step and the path of calls. `name` is the design being saved as `design`.
    pub fn call_cycle(&self, name: &DesignName, design: &Design) -> Option<vwf_core::validate::Issue> {
        let calls_of = |of: &DesignName| -> Vec<DesignName> {
            let called = if of == name {
                vwf_core::calls::called(design)
            } else {
                match self.store.load_design(of).wait().ok().and_then(|g| Design::from_value(&g).ok()) {
                    Some(d) => vwf_core::calls::called(&d),
                    None => Vec::new(),
                }
            };
            called.into_iter().map(|(_, n)| n).collect()
        };
        let path = vwf_core::calls::cycle(name, &calls_of)?;
        let first = path.get(1)?;
        let step = vwf_core::calls::called(design).into_iter().find(|(_, n)| n == first).map(|(id, _)| id)?;
        let shown: Vec<&str> = path.iter().map(DesignName::as_str).collect();
        Some(vwf_core::validate::Issue::node_field(
            &step,
            "design",
            format!("design {name} would call itself: {}; a design step cannot call back into its own design", shown.join(" → ")),
        ))
    }

    /// Makes the children `run` still has to start: a refused one fails its step's attempt, a
    /// waited one is driven at once and its state taken, one not waited for is left for
    /// `detached`. Answers whether `run` changed.
    pub(super) fn make_children(&self, run: &mut Run, detached: &mut Vec<RunId>) -> Result<bool, RunError> {
        let mut changed = false;
        while let Some(start) = run.child_to_start(self.clock.now()) {
            changed = true;
            match self.make_child(run, &start) {
                Ok(()) => {
                    run.child_started(&start.node, self.clock.now());
                    self.persist(run)?;
                    if start.wait {
                        self.drive_child(run, &start.run_id)?;
                    } else {
                        detached.push(start.run_id.clone());
                    }
                }
                Err(why) => {
                    run.child_refused(&start.node, &why, self.clock.now());
                    self.persist(run)?;
                }
            }
        }
        Ok(changed)
    }

    /// Makes the child `start` names, unless a process made it already; `Err` says why it cannot
    /// be made, in words for the step's error.
    fn make_child(&self, parent: &Run, start: &ChildStart) -> Result<(), String> {
        let plan = self.child_plan(&start.design, start.version).map_err(|e| e.to_string())?;
        let made = self.store.reserve_run_id(&start.run_id).wait().and_then(|_| self.store.lock_run(&start.run_id).wait());
        let lock = made.map_err(|e| format!("cannot make the child run: {e}"))?;
        match self.read(&start.run_id) {
            Ok(_) => return Ok(()),
            Err(RunError::Store(StoreError::NotFound(_))) => {}
            Err(e) => return Err(format!("cannot read the child run: {e}")),
        }
        let mut child = Run::start_child(parent, start, plan, self.clock.now());
        self.persist_as(&mut child, true).map_err(|e| format!("cannot save the child run: {e}"))?;
        // The parent goes on counting on the child: its first save is made durable first.
        self.store.sync().wait().map_err(|e| format!("cannot save the child run: {e}"))?;
        tracing::info!(run = %parent.run_id(), child = %start.run_id, design = %start.design, "a design step started its child run");
        drop(lock);
        Ok(())
    }

    /// The plan of a child of `design`: the recorded `version`, else the design as saved now.
    fn child_plan(&self, design: &DesignName, version: Option<u64>) -> Result<Plan, RunError> {
        let Some(version) = version else {
            return self.compile(design).map_err(|e| match e {
                RunError::Store(StoreError::NotFound(_)) => RunError::NotFound(format!("design {design} is not saved")),
                e => e,
            });
        };
        let recorded = self.store.list_versions(design).wait()?;
        let graph = recorded
            .into_iter()
            .find(|v| v.version == version)
            .map(|v| v.graph)
            .ok_or_else(|| RunError::NotFound(format!("design {design} has no version {version}")))?;
        let design_doc = Design::from_value(&graph)
            .map_err(|errors| RunError::Refused(vwf_core::validate::Report { ok: false, errors, warnings: Vec::new() }))?;
        let mut plan = Plan::compile(design.as_str(), &design_doc).map_err(RunError::Refused)?;
        plan.version = Some(version);
        self.pin_calls(&mut plan);
        Ok(plan)
    }

    /// Records in `plan` the version of each design its design steps call, as saved now.
    pub(super) fn pin_calls(&self, plan: &mut Plan) {
        for called in plan.called_designs() {
            if let Ok(graph) = self.store.load_design(&called).wait()
                && let Some(version) = crate::versions::of_content(self.store, &called, &graph, self.clock.now())
            {
                plan.calls.insert(called.to_string(), version);
            }
        }
    }

    /// Drives the child `id` of `parent` (whose lock the caller holds) as far as it goes now, and
    /// gives `parent` its state.
    fn drive_child(&self, parent: &mut Run, id: &RunId) -> Result<(), RunError> {
        let lock = self.store.lock_run(id).wait()?;
        let child = self.take_up(id, &lock)?;
        drop(lock);
        if parent.child_moved(&child, self.clock.now()) {
            self.persist(parent)?;
        }
        Ok(())
    }

    /// Reads run `id` under its `lock` and drives it on if it is `running` (just made, or left by
    /// a dead process and taken up again); answers it as it stands then.
    fn take_up(&self, id: &RunId, lock: &RunLock) -> Result<Run, RunError> {
        self.forget_saved(id);
        let mut run = self.read(id)?;
        if self.settle_orphan(&mut run) {
            self.persist(&mut run)?;
        }
        if run.status() == Status::Running {
            let quiet = Runner { observer: &crate::app::quiet, ..*self };
            quiet.drive(&mut run, lock)?;
        }
        Ok(run)
    }

    /// Gives `parent` (whose lock the caller holds) the state of the children it waits for
    /// that moved since it last looked; a child left `running` by a dead process is taken up
    /// first. Answers whether `parent` changed.
    pub(super) fn sync_children(&self, parent: &mut Run) -> Result<bool, RunError> {
        let mut changed = false;
        for id in parent.waited_children().into_iter().cloned().collect::<Vec<_>>() {
            let child = match self.read(&id) {
                Ok(child) if child.status() == Status::Running => match self.store.try_lock_run(&id).wait()? {
                    Some(lock) => self.take_up(&id, &lock)?,
                    None => continue, // its owner is alive and working on it
                },
                Ok(child) => child,
                Err(RunError::Store(StoreError::NotFound(_))) => continue,
                Err(e) => return Err(e),
            };
            changed |= parent.child_moved(&child, self.clock.now());
        }
        Ok(changed)
    }

    /// Drives the children a parent started without waiting for them, once it has parked or
    /// ended.
    pub(super) fn drive_detached(&self, detached: Vec<RunId>) {
        for id in detached {
            let driven = self.store.lock_run(&id).wait().map_err(RunError::from).and_then(|lock| self.take_up(&id, &lock));
            if let Err(e) = driven {
                tracing::warn!(run = %id, "the child run stopped: {e}");
            }
        }
    }

    /// Performs an agent task whose step offers designs as tools: the model's every tool call
    /// runs its design as a child of `run` (made and driven as a design step's is, and named in
    /// `run`'s `child_runs`), and the child's result (its status, outputs and text, or what it
    /// waits for) goes back to the model. The children's tokens count with the step's.
    pub(super) fn perform_agent_tools(&self, run: &mut Run, task: &vwf_core::run::Task) -> vwf_core::run::Outcome {
        use vwf_core::run::{Outcome, Work};
        let Work::Agent { prompt, profile, model, max_tokens, timeout_seconds, tools } = &task.work else {
            return self.drivers.perform(task, self.clock.now());
        };
        let request = vwf_exec::agent::Request {
            max_tokens: *max_tokens,
            timeout: std::time::Duration::from_secs((*timeout_seconds).max(1)),
            ..vwf_exec::agent::Request::new(prompt, profile.as_deref(), model.as_deref())
        };
        let offered: Vec<(DesignName, Design, vwf_exec::agent::Tool)> = tools
            .iter()
            .filter_map(|d| {
                let (doc, tool) = self.agent_tool(d)?;
                Some((d.clone(), doc, tool))
            })
            .collect();
        let specs: Vec<vwf_exec::agent::Tool> = offered.iter().map(|(_, _, t)| t.clone()).collect();
        let (mut made, mut child_tokens) = (0usize, 0u64);
        let mut child_totals = vwf_core::usage::Totals { cost: Some(0.0), ..Default::default() };
        let mut call = |name: &str, args: serde_json::Value| -> serde_json::Value {
            let Some((design, doc, _)) = offered.iter().find(|(_, _, t)| t.name == name) else {
                return serde_json::json!({"ok": false, "error": format!("no tool {name:?}")});
            };
            if let Err(why) = vwf_core::interface::check_call(doc, &args) {
                return serde_json::json!({"ok": false, "error": why});
            }
            let start = run.tool_child(&task.node, task.attempt, made, design, &args);
            made += 1;
            if start.nesting > vwf_core::limits::DESIGN_DEPTH {
                let why = format!("design steps and tools nest at most {} deep", vwf_core::limits::DESIGN_DEPTH);
                return serde_json::json!({"ok": false, "error": why});
            }
            if let Err(why) = self.make_child(run, &start) {
                return serde_json::json!({"ok": false, "error": why});
            }
            run.note_child(&start.run_id);
            if let Err(e) = self.persist(run) {
                return serde_json::json!({"ok": false, "error": e.to_string()});
            }
            let child =
                self.store.lock_run(&start.run_id).wait().map_err(RunError::from).and_then(|lock| self.take_up(&start.run_id, &lock));
            match child {
                Ok(child) => {
                    child_tokens += child.tokens_used();
                    let used = child.totals();
                    child_totals.usage.add(&used.usage);
                    child_totals.cost = child_totals.cost.zip(used.cost).map(|(a, b)| vwf_core::usage::round(a + b));
                    if child_totals.currency.is_none() {
                        child_totals.currency = used.currency;
                    }
                    tool_result(&child)
                }
                Err(e) => serde_json::json!({"ok": false, "run_id": start.run_id, "error": e.to_string()}),
            }
        };
        let outcome = vwf_exec::agent::perform_with_tools(&self.drivers.config, &request, &specs, &mut call);
        match outcome {
            Outcome::Done { text, mut extra, tokens } => {
                // What the tool calls' runs used counts in this run's totals and budget; each
                // of those runs keeps its own record for the stats.
                if made > 0 {
                    extra.insert(vwf_core::usage::TOOL_USAGE.into(), serde_json::json!(child_totals.usage));
                    extra.insert(vwf_core::usage::TOOL_COST.into(), child_totals.cost.map_or(serde_json::Value::Null, Into::into));
                    if !extra.contains_key("currency")
                        && let Some(c) = child_totals.currency
                    {
                        extra.insert("currency".into(), c.into());
                    }
                }
                Outcome::Done { text, extra, tokens: tokens + child_tokens }
            }
            other => other,
        }
    }

    /// A saved design as a tool an agent step's model may call, with the design as read;
    /// `None` for a design that is not saved or does not read.
    fn agent_tool(&self, design: &DesignName) -> Option<(Design, vwf_exec::agent::Tool)> {
        let doc = Design::from_value(&self.store.load_design(design).wait().ok()?).ok()?;
        let offer = vwf_core::interface::offer(design, &doc);
        Some((doc, vwf_exec::agent::Tool { name: offer.name, description: offer.description, parameters: offer.schema }))
    }

    /// Tells the parent of `child` (a run that moved on its own, whose lock the caller no longer
    /// holds) where it stands, and drives the parent on; and so on up.
    pub(super) fn tell_parent(&self, child: &Run) {
        self.tell_parent_holding(child, None);
    }

    /// [`Runner::tell_parent`] from a caller that holds the lock of run `holding` (an emit step's
    /// run): that run, if it is the parent, takes its child's state itself when it next idles; any
    /// other parent's lock is only tried for a while, so two runs never wait on each other.
    pub(super) fn tell_parent_holding(&self, child: &Run, holding: Option<&RunId>) {
        let Some(parent_id) = child.parent_run().cloned() else { return };
        if Some(&parent_id) == holding {
            return;
        }
        let told = (|| -> Result<Option<Run>, RunError> {
            let Some(lock) = self.lock_patiently(&parent_id, holding.is_some())? else {
                tracing::warn!(run = %parent_id, child = %child.run_id(), "the parent run stayed busy; it takes its child's state when next read");
                return Ok(None);
            };
            self.forget_saved(&parent_id);
            let mut parent = self.read(&parent_id)?;
            if !parent.child_moved(child, self.clock.now()) {
                return Ok(None);
            }
            self.persist(&mut parent)?;
            Runner { sleep_for_waits: false, observer: &crate::app::quiet, ..*self }.drive(&mut parent, &lock)?;
            Ok(Some(parent))
        })();
        match told {
            Ok(Some(parent)) => self.tell_parent_holding(&parent, holding),
            Ok(None) => {}
            Err(e) => tracing::warn!(run = %parent_id, child = %child.run_id(), "cannot tell the parent run: {e}"),
        }
    }
}
