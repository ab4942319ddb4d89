//! One step of a run: whether it runs or is skipped, what it renders from the context of its
//! scope, the task it hands out or the result it settles, and how a result or a failure is
//! recorded.

use super::*;

impl Run {
    pub(super) fn any_active_parent(&self, step: &PlanStep, scope: &Scope) -> bool {
        // A test run of one step runs it, whichever branch the outputs before it took.
        if let Some(crate::pins::TestScope::Only { node }) = &self.plan.test
            && node == &step.id
        {
            return true;
        }
        step.parents.is_empty()
            || step.parents.iter().any(|p| {
                if Some(p.from.as_str()) == self.plan.trigger_id() {
                    return true;
                }
                if scope.pass.as_ref().is_some_and(|(lp, _)| lp.as_str() == p.from) {
                    return Route::of(Some(NodeKind::Loop), p.label.as_deref()) == Route::Each;
                }
                let Some(view) = self.view_in(&p.from, scope) else { return false };
                let kind = self.plan.step(&p.from).and_then(PlanStep::kind);
                let route = Route::of(kind, p.label.as_deref());
                if self.failed_handled(&p.from, scope) {
                    return self.taken_after_failure(&p.from, route);
                }
                match route {
                    Route::Always | Route::Done => true,
                    Route::When(b) => view.get("value").and_then(Value::as_bool) == Some(b),
                    Route::Answer(option) => view.get("answer").and_then(Value::as_str) == Some(option),
                    Route::Error | Route::Each | Route::Invalid(_) => false,
                }
            })
    }

    pub(super) fn skip(&mut self, id: &str, scope: &Scope) {
        if scope.pass.is_some() {
            if let Some(pass) = self.pass_state_mut(scope) {
                pass.skipped.push(id.to_string());
            }
            return;
        }
        self.skipped.push(id.to_string());
        let order: HashMap<&str, usize> = self.plan.steps.iter().enumerate().map(|(i, s)| (s.id.as_str(), i)).collect();
        self.skipped.sort_by_key(|s| order.get(s.as_str()).copied().unwrap_or(usize::MAX));
    }

    /// Where a record sorts in `steps`: plan position, then pass.
    pub(super) fn order_key(&self, node: &PassId) -> (usize, usize) {
        self.order_key_at(node.node(), node.pass())
    }

    pub(super) fn order_key_at(&self, node: &str, pass: Option<usize>) -> (usize, usize) {
        (self.plan.position(node).unwrap_or(usize::MAX), pass.map_or(0, |p| p + 1))
    }

    /// Where a new record named `node` goes in `steps`.
    pub(super) fn record_position(&self, node: &PassId) -> usize {
        let key = self.order_key(node);
        self.steps.partition_point(|r| self.order_key(&r.node) <= key)
    }

    /// Opens (or reopens, for a retry) the step's record.
    pub(super) fn open_record(&mut self, id: &PassId, status: StepStatus, now: Ts) -> u32 {
        if let Some(r) = self.record_mut(id) {
            return r.begin_try(status, now);
        }
        let at = self.record_position(id);
        self.steps.insert(at, StepRecord::open(id, status, now));
        self.mark(journal::Part::Step(id.clone()));
        1
    }

    /// Settles a step instance with its pinned output (a test run): nothing is performed.
    fn settle_pinned(&mut self, id: &PassId, view: Value, now: Ts) {
        self.open_record(id, StepStatus::Running, now);
        let bytes = view.get("text").and_then(Value::as_str).map_or(0, str::len) as u64;
        self.keep_output(id, view);
        if let Some(r) = self.record_mut(id) {
            r.pinned = true;
            r.end_try(StepStatus::Done, None, Some(bytes), now);
        }
    }

    /// Puts a step instance's output view where its scope keeps outputs.
    pub(super) fn keep_output(&mut self, id: &PassId, view: Value) {
        let base = id.node().to_string();
        match self.locate(id) {
            Some((_, scope)) if scope.pass.is_some() => {
                if let Some(pass) = self.pass_state_mut(&scope) {
                    pass.outputs.insert(base, view);
                }
            }
            _ => {
                self.mark(journal::Part::Output(base.clone()));
                self.outputs.insert(base, view);
            }
        }
    }

    /// Records a step instance's output (`id` is a record name: `node` or `node#pass`).
    pub(super) fn finish_step(&mut self, id: &PassId, text: &str, extra: Map<String, Value>, now: Ts) {
        if text.len() > limits::STEP_OUTPUT_BYTES {
            let msg = format!(
                "output of step {id} is {} bytes, over the {} byte limit for output kept inline",
                text.len(),
                limits::STEP_OUTPUT_BYTES
            );
            self.fail_step(id, &msg, now);
            return;
        }
        let view = if self.plan.step(id.node()).is_some_and(|s| s.is(NodeKind::Command)) {
            view::command_view(text, extra)
        } else {
            view::output_view(text, extra)
        };
        self.keep_output(id, view);
        if let Some(r) = self.record_mut(id) {
            r.end_try(StepStatus::Done, None, Some(text.len() as u64), now);
        }
    }

    /// Fails a step instance and the run; a failure inside a pass fails its loop step too.
    pub(super) fn fail_step(&mut self, id: &PassId, error: impl Into<RunFailure>, now: Ts) {
        let error: RunFailure = error.into();
        if self.record(id).is_none() {
            self.open_record(id, StepStatus::Failed, now);
        }
        if let Some(r) = self.record_mut(id) {
            r.end_try(StepStatus::Failed, Some(&error), None, now);
        }
        let (failed, error) = match self.locate(id).and_then(|(_, scope)| scope.pass) {
            Some((lp, i)) => {
                let msg = format!("loop {lp} failed in pass {i} at step {}: {error}", id.node());
                // The first failed pass fails the loop; a concurrent pass failing after it
                // keeps its error on its own record.
                let lp = PassId::top(lp);
                if let Some(r) = self.record_mut(&lp).filter(|r| r.status != StepStatus::Failed) {
                    r.end_try(StepStatus::Failed, Some(&msg), None, now);
                }
                (lp, RunFailure::from(msg))
            }
            None => (id.clone(), error),
        };
        if !self.status.is_finished() {
            self.status = Status::Failed;
            self.ok = false;
            self.error = Some(error);
            self.failed_node = Some(failed);
            self.pending = None;
        }
    }

    pub(super) fn refresh_status(&mut self) {
        if self.status.is_finished() {
            self.pending = None;
            return;
        }
        let mut parked = std::mem::take(&mut self.parked);
        parked.sort_by_key(|p| p.step().map_or((usize::MAX, 0), |s| self.order_key(s)));
        self.parked = parked;
        let is_loop = |r: &StepRecord| self.locate(&r.node).is_some_and(|(s, _)| s.is(NodeKind::Loop));
        let running = self.steps.iter().any(|r| matches!(r.status, StepStatus::Running | StepStatus::Retrying) && !is_loop(r));
        let loop_can_move = self.loops.iter().any(|(lp, state)| {
            self.top_record(lp).map(|r| r.status) == Some(StepStatus::Running) && {
                let body: Vec<&PlanStep> = self.plan.steps.iter().filter(|s| s.in_loop.as_deref() == Some(lp.as_str())).collect();
                let still = &state.passes[self.first_open.of(lp).min(state.passes.len())..];
                let open = still.iter().filter(|p| !p.done).count() as u64;
                let closable = still.iter().any(|p| {
                    !p.done && body.iter().all(|b| p.outputs.contains_key(b.id.as_str()) || p.skipped.iter().any(|s| s == &*b.id))
                });
                let openable = open < state.concurrency.max(1) && state.passes.len() < state.items.len();
                closable || openable || still.iter().all(|p| p.done)
            }
        });
        let ready = (0..self.plan.steps.len()).any(|i| self.is_ready(i)) || !self.ready_instances().is_empty() || loop_can_move;
        let all_settled = self.plan.steps.iter().filter(|s| s.in_loop.is_none()).all(|s| self.is_settled(&s.id));
        self.pending = self.parked.first().map(Pending::shown);
        self.status = if all_settled {
            Status::Done
        } else if running || ready {
            Status::Running
        } else if let Some(p) = self.parked.first() {
            p.status()
        } else {
            Status::Running
        };
        self.ok = true;
    }

    /// What `{{run.cost}}` and the like read: the run's totals so far (see [`crate::usage`]);
    /// `null` for a plan none of whose steps reads them (adding up every view for each step of
    /// a long loop would cost more than the loop).
    pub(super) fn totals_view(&self) -> Value {
        fn reads_totals(v: &Value) -> bool {
            match v {
                Value::String(s) => ["run.cost", "run.usage", "run.currency"].iter().any(|r| s.contains(r)),
                Value::Array(items) => items.iter().any(reads_totals),
                Value::Object(map) => map.values().any(reads_totals),
                _ => false,
            }
        }
        if !self.plan.steps.iter().any(|s| s.node.values().any(reads_totals)) {
            return Value::Null;
        }
        Value::Object(self.totals().fields().into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    pub(super) fn context<'a>(&'a self, ids: &'a [String], trigger: &'a Value, totals: &'a Value, scope: &Scope) -> Context<'a> {
        let (local_views, item, loop_index) = match &scope.pass {
            Some((lp, i)) => {
                (self.pass_state(scope).map(|p| &p.outputs), self.loops.get(lp).and_then(|l| l.items.get(*i)), Some(*i as u64))
            }
            None => (None, None, None),
        };
        Context {
            ids,
            views: &self.outputs,
            local_views,
            trigger_id: self.plan.trigger_id(),
            trigger,
            item,
            loop_index,
            run_id: self.run_id.as_str(),
            design: self.design.as_str(),
            run_totals: Some(totals),
            secrets: None,
        }
    }

    pub(super) fn render(&self, src: &str, scope: &Scope) -> Result<String, StepError> {
        let ids = self.plan.ids();
        let (trigger, totals) = (view::input_view(&self.trigger.input), self.totals_view());
        Ok(template::render_str(src, &self.context(&ids, &trigger, &totals, scope))?)
    }

    /// What a gate's notifications show beside its question: its `context` rendered, else the
    /// texts of its parents one after another; cut to [`approvers::CONTEXT_CHARS`].
    fn gate_context(&self, id: &PassId, context: Option<&str>, scope: &Scope) -> Result<String, StepError> {
        let text = match context {
            Some(src) => self.render(src, scope)?,
            None => {
                let parents = self.plan_step(id).map(|s| s.parents.iter().map(|p| p.from.clone()).collect::<Vec<_>>()).unwrap_or_default();
                let texts: Vec<String> = parents
                    .iter()
                    .filter_map(|p| self.view_in(p, scope).and_then(|v| v.get("text")).and_then(Value::as_str))
                    .filter(|t| !t.trim().is_empty())
                    .map(str::to_string)
                    .collect();
                texts.join("\n\n")
            }
        };
        Ok(crate::approvers::cut(text.trim(), crate::approvers::CONTEXT_CHARS))
    }

    /// The texts a template names: each referenced step's `text` keyed by its id (the run's
    /// input under `trigger`), for a person to see what a gate's question is about.
    pub(super) fn referred(&self, src: &str, scope: &Scope) -> Map<String, Value> {
        let mut out = Map::new();
        let Ok(parsed) = template::parse(src) else { return out };
        let ids = self.plan.ids();
        let input = || view::input_view(&self.trigger.input).get("text").cloned();
        for r in parsed.refs() {
            let (key, text) = match r {
                template::Ref::Trigger { .. } => ("trigger", input()),
                template::Ref::Node { reference } => {
                    let Some((id, _)) = refs::resolve_longest(ids.iter().map(String::as_str), reference) else { continue };
                    let text = if Some(id) == self.plan.trigger_id() {
                        input()
                    } else {
                        self.view_in(id, scope).and_then(|v| v.get("text")).cloned()
                    };
                    (id, text)
                }
                _ => continue,
            };
            if let Some(t) = text {
                out.insert(key.to_string(), t);
            }
        }
        out
    }

    /// The parents' outputs an output node collects: id → text, for parents that ran.
    pub(super) fn collected(&self, step: &PlanStep, scope: &Scope) -> Map<String, Value> {
        let mut out = Map::new();
        for p in &step.parents {
            let text = if Some(p.from.as_str()) == self.plan.trigger_id() {
                view::input_view(&self.trigger.input).get("text").cloned()
            } else {
                self.view_in(&p.from, scope).and_then(|v| v.get("text")).cloned()
            };
            if let Some(t) = text {
                out.insert(p.from.clone(), t);
            }
        }
        out
    }

    /// An output node's message: its template, else its parents' texts in plan order.
    pub(super) fn collect_message(&self, step: &PlanStep, scope: &Scope) -> Result<String, StepError> {
        match step.node.get("template").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => self.render(t, scope),
            _ => {
                let collected = self.collected(step, scope);
                let mut parents: Vec<&String> = collected.keys().collect();
                parents.sort_by_key(|id| self.plan.position(id).unwrap_or(0));
                Ok(parents.iter().filter_map(|id| collected.get(*id).and_then(Value::as_str)).collect::<Vec<_>>().join("\n\n"))
            }
        }
    }

    /// Starts one ready, active step instance.
    pub(super) fn begin(&mut self, step: &PlanStep, scope: &Scope, now: Ts, secrets: &Secrets) -> Begin {
        let inst = scope.instance(&step.id);
        let id = &inst;
        if self.test
            && let Some(view) = self.plan.pins.get(step.id.as_str())
        {
            self.settle_pinned(id, view.clone(), now);
            return Begin::Settled;
        }
        let spec = match step.spec() {
            Ok(s) => s,
            Err(e) => {
                self.fail_step(id, e, now);
                return Begin::Settled;
            }
        };
        let fail = |run: &mut Run, e: StepError| {
            run.fail_step(id, e, now);
            Begin::Settled
        };
        let ids = self.plan.ids();
        let (trigger, totals) = (view::input_view(&self.trigger.input), self.totals_view());
        match spec {
            Spec::Condition { expr: src } => {
                self.open_record(id, StepStatus::Running, now);
                match self.evaluate(&src, scope) {
                    Ok(b) => {
                        let mut extra = Map::new();
                        extra.insert("value".into(), Value::Bool(b));
                        self.finish_step(id, if b { "true" } else { "false" }, extra, now);
                        Begin::Settled
                    }
                    Err(e) => fail(self, e),
                }
            }
            Spec::Approval { question, options, timeout_minutes, on_timeout, edit, approvers, notify, context, .. } => {
                self.open_record(id, StepStatus::AwaitingApproval, now);
                let question_src = question.clone();
                let deadline = match timeout_minutes.map(|m| time::add_seconds(now, m.saturating_mul(60))) {
                    None => None,
                    Some(Some(d)) => Some(d),
                    Some(None) => return fail(self, beyond_time("the gate's deadline").into()),
                };
                let question = match self.render(&question, scope) {
                    Ok(q) => q,
                    Err(e) => return fail(self, e),
                };
                let outputs = self.referred(&question_src, scope);
                let fields = self.plan_step(id).and_then(|s| s.node.get("fields")).and_then(Value::as_array).cloned().unwrap_or_default();
                let edit = edit.into_iter().filter_map(|e| Some((e.clone(), self.outputs.get(&e)?.get("text")?.clone()))).collect();
                let context = if notify.is_empty() {
                    None
                } else {
                    match self.gate_context(id, context.as_deref(), scope) {
                        Ok(c) => Some(c),
                        Err(e) => return fail(self, e),
                    }
                };
                self.parked.push(Pending::Approval {
                    node: id.into(),
                    question,
                    options,
                    deadline,
                    on_timeout,
                    outputs,
                    fields,
                    edit,
                    approvers,
                    votes: Vec::new(),
                    notify,
                    context,
                    notified: false,
                    run_id: None,
                });
                self.refresh_status();
                Begin::Settled
            }
            Spec::Wait { seconds } => {
                self.open_record(id, StepStatus::Waiting, now);
                let Some(resume_at) = time::add_seconds(now, seconds) else {
                    return fail(self, beyond_time("the wait's end").into());
                };
                self.parked.push(Pending::Wait { node: id.into(), resume_at, next_attempt: None, rate_limit: None });
                self.refresh_status();
                Begin::Settled
            }
            spec @ Spec::Design { .. } => self.begin_child(id, spec, scope, now),
            Spec::WaitEvent { event, matches, timeout_seconds, on_timeout } => {
                self.open_record(id, StepStatus::AwaitingEvent, now);
                let deadline = match timeout_seconds.map(|s| time::add_seconds(now, s)) {
                    None => None,
                    Some(Some(d)) => Some(d),
                    Some(None) => return fail(self, beyond_time("the wait's deadline").into()),
                };
                // The match's templates are rendered once, now: the run waits for the event its
                // own input and outputs named when it began waiting.
                let matches = match matches.map(|m| self.render(&m, scope)).transpose() {
                    Ok(m) => m,
                    Err(e) => return fail(self, e),
                };
                let matches = match matches.map(|m| expr::parse_event_match(&m, true)).transpose() {
                    Ok(e) => e.map(|e| e.text_in("event")),
                    Err(e) => return fail(self, StepError::Rule(format!("the match of {id} does not read after rendering: {e}"))),
                };
                self.parked.push(Pending::Event { node: id.into(), event, matches, deadline, on_timeout, since: now });
                self.refresh_status();
                Begin::Settled
            }
            Spec::Output { deliver, target, timeout_seconds, .. } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let message = match self.collect_message(step, scope) {
                    Ok(m) => m,
                    Err(e) => return fail(self, e),
                };
                let collected = self.collected(step, scope);
                match (deliver, target) {
                    (Some(d), Some(t)) => {
                        let work = Work::Deliver { message, deliver: d, target: t, collected, timeout_seconds };
                        Begin::Task(Task { node: id.clone(), attempt, work })
                    }
                    _ => {
                        let mut extra = Map::new();
                        extra.insert("collected".into(), Value::Object(collected));
                        extra.insert("deliveries".into(), json!([]));
                        self.finish_step(id, &message, extra, now);
                        Begin::Settled
                    }
                }
            }
            Spec::Agent { prompt, profile, model, max_tokens, timeout_seconds, tools, .. } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                match self.render(&prompt, scope) {
                    Ok(prompt) => Begin::Task(Task {
                        node: id.clone(),
                        attempt,
                        work: Work::Agent { prompt, profile, model, max_tokens, timeout_seconds, tools },
                    }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Command(CommandStep { program, cwd, env, timeout_seconds }) => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let ctx = self.context(&ids, &trigger, &totals, scope);
                let sending = Context { secrets: Some(secrets), ..ctx };
                let rendered = (|| -> Result<Work, StepError> {
                    let mut values = Vec::new();
                    let program = match program {
                        Program::Shell(r) => {
                            let script = shell::compile(&template::parse(&r)?)?;
                            values = script.bind(&ctx)?;
                            Program::Shell(script.text)
                        }
                        Program::Argv(a) => Program::Argv(a.iter().map(|s| template::render_str(s, &ctx)).collect::<Result<Vec<_>, _>>()?),
                    };
                    let cwd = cwd.map(|c| template::render_str(&c, &ctx)).transpose()?;
                    let env = env
                        .into_iter()
                        .map(|(k, v)| template::render_str(&v, &sending).map(|v| (k, v)).map_err(|e| e.0))
                        .collect::<Result<BTreeMap<_, _>, _>>()?;
                    let env = env.into_iter().chain(values).collect();
                    Ok(Work::Command(CommandStep { program, cwd, env, timeout_seconds }))
                })();
                match rendered {
                    Ok(work) => Begin::Task(Task { node: id.clone(), attempt, work }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Http(HttpStep { url, method, headers, body, timeout_seconds, accept }) => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let ctx = Context { secrets: Some(secrets), ..self.context(&ids, &trigger, &totals, scope) };
                let rendered = (|| -> Result<Work, StepError> {
                    let url = template::render_str(&url, &ctx)?;
                    let headers = headers
                        .into_iter()
                        .map(|(k, v)| template::render_str(&v, &ctx).map(|v| (k, v)).map_err(|e| e.0))
                        .collect::<Result<BTreeMap<_, _>, _>>()?;
                    let body = body.map(|b| template::render_json(&b, &ctx)).transpose()?;
                    Ok(Work::Http(HttpStep { url, method, headers, body, timeout_seconds, accept }))
                })();
                match rendered {
                    Ok(work) => Begin::Task(Task { node: id.clone(), attempt, work }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Emit { event, payload, timeout_seconds } => {
                let attempt = self.open_record(id, StepStatus::Running, now);
                let payload = match payload {
                    None => Ok(Value::Null),
                    Some(p) => template::render_json(&p, &self.context(&ids, &trigger, &totals, scope)).map_err(StepError::from),
                };
                match payload {
                    Ok(payload) => Begin::Task(Task { node: id.clone(), attempt, work: Work::Emit { event, payload, timeout_seconds } }),
                    Err(e) => fail(self, e),
                }
            }
            Spec::Loop { over, max_items, concurrency } => {
                self.open_record(id, StepStatus::Running, now);
                if scope.pass.is_some() {
                    return fail(self, StepError::Rule("a loop inside a loop body is not supported".into()));
                }
                if self.loops.contains_key(id.node()) {
                    // A retried loop keeps the passes it finished.
                    return Begin::Settled;
                }
                let items = match self.render(&over, scope).and_then(|text| Ok(loop_items(&text, max_items)?)) {
                    Ok(items) => items,
                    Err(e) => return fail(self, e),
                };
                if items.is_empty() {
                    let mut extra = Map::new();
                    extra.insert("items".into(), json!([]));
                    extra.insert("count".into(), json!(0));
                    self.finish_step(id, "[]", extra, now);
                    return Begin::Settled;
                }
                self.loops.insert(id.node_id(), LoopState { items, concurrency, passes: Vec::new() });
                self.mark(journal::Part::Loop(id.node_id()));
                Begin::Settled
            }
            Spec::Trigger(_) | Spec::Note => {
                self.open_record(id, StepStatus::Running, now);
                fail(self, format!("a {} node never runs as a step", crate::spec::kind_of(&step.node)).into())
            }
        }
    }

    /// Evaluates a condition against the outputs so far; failures are errors, never `false`.
    pub(super) fn evaluate(&self, src: &str, scope: &Scope) -> Result<bool, StepError> {
        let e = expr::parse(src)?;
        let ids = self.plan.ids();
        let Some((id, path)) = refs::resolve_longest(ids.iter().map(String::as_str), &e.reference) else {
            return Err(StepError::UnknownNode(e.reference.clone()));
        };
        let input_view;
        let view = if Some(id) == self.plan.trigger_id() {
            input_view = view::input_view(&self.trigger.input);
            &input_view
        } else {
            self.view_in(id, scope).ok_or_else(|| StepError::NoOutput(id.to_string()))?
        };
        let left = view::view_lookup(view, &refs::split_path(path));
        e.evaluate(left.as_ref()).map_err(|error| StepError::Condition { src: src.to_string(), error })
    }

    /// Ends the first timed wait that has come: a wait step is done; a step that waited before
    /// its next attempt is ready to start it.
    pub(super) fn resume_due_wait(&mut self, now: Ts) -> Option<PassId> {
        let (node, retry) = self.parked.iter().find_map(|p| match p {
            Pending::Wait { node, resume_at, next_attempt, .. } if *resume_at <= now => Some((node.own()?.clone(), next_attempt.is_some())),
            _ => None,
        })?;
        self.parked.retain(|p| *p.node() != node);
        if retry {
            if let Some(r) = self.record_mut(&node) {
                r.next_try_due();
            }
        } else {
            let mut extra = Map::new();
            extra.insert("resumed_at".into(), Value::String(time::format(&now)));
            self.finish_step(&node, "", extra, now);
        }
        self.refresh_status();
        Some(node)
    }
}

#[allow(clippy::large_enum_variant)] // short-lived, one per step
pub(super) enum Begin {
    Settled,
    Task(Task),
}
