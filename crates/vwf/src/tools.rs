//! The five agent tools (SPEC §11) as plain functions over JSON.
//!
//! Same contract on every surface: the CLI (`vwf tool`), the chat command, and later MCP and the
//! HTTP API call `call`. A tool never panics or raises: every store, plan and persistence
//! failure becomes a `{ok:false, error}` body, with an HTTP-like status for surfaces that use one.

use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::json;
use vwf_core::limits::REQUEST_BODY_BYTES;
use vwf_core::names::DesignName;
use vwf_core::run::{Response, TriggerInfo};
use vwf_core::validate;

use crate::app::{App, quiet};
use crate::failure::Failure;
use crate::runner::Answer;
use crate::store::StoreError;

pub const TOOL_NAMES: [&str; 5] =
    ["workflow_design_save", "workflow_design_load", "workflow_design_validate", "workflow_design_run", "workflow_design_respond"];

/// A tool's answer: the JSON body and the HTTP status a server would send with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl Reply {
    fn ok(body: Value) -> Reply {
        Reply { status: 200, body }
    }
}

impl From<Failure> for Reply {
    fn from(f: Failure) -> Reply {
        Reply { status: f.status(), body: f.body() }
    }
}

/// Calls tool `name` with `args`. Never panics: a bug inside a tool is still a JSON answer.
pub fn call(app: &App, name: &str, args: &Value) -> Reply {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(app, name, args)));
    match outcome {
        Ok(Ok(reply)) => reply,
        Ok(Err(f)) => f.into(),
        Err(_) => Failure::Internal(format!("internal error in {name}; nothing was changed by the failed part")).into(),
    }
}

/// Calls a tool with arguments given as JSON text.
pub fn call_text(app: &App, name: &str, args: &str) -> Reply {
    if args.len() > REQUEST_BODY_BYTES {
        return Failure::BadRequest(format!("arguments are {} bytes; at most {REQUEST_BODY_BYTES} are accepted", args.len())).into();
    }
    match json::parse_arguments(args) {
        Ok(v) => call(app, name, &v),
        Err(e) => Failure::BadRequest(e.about("arguments are")).into(),
    }
}

fn dispatch(app: &App, name: &str, args: &Value) -> Result<Reply, Failure> {
    json::check_arguments(args).map_err(|(key, e)| match key {
        Some(key) => Failure::BadRequest(e.about(&format!("\"{key}\" is"))),
        None => Failure::BadRequest(e.about("arguments are")),
    })?;
    let Some(args) = args.as_object() else {
        return Err(Failure::BadRequest("arguments must be a JSON object".into()));
    };
    match name {
        "workflow_design_save" => save(app, args),
        "workflow_design_load" => load(app, args),
        "workflow_design_validate" => validate_tool(app, args),
        "workflow_design_run" => run(app, args),
        "workflow_design_respond" => respond(app, args),
        other => Err(Failure::BadRequest(format!("unknown tool {other:?}; tools: {}", TOOL_NAMES.join(", ")))),
    }
}

fn string_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, Failure> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Failure::BadRequest(format!("\"{key}\" must be a string"))),
        None => Err(Failure::BadRequest(format!("missing \"{key}\""))),
    }
}

fn name_arg(args: &Map<String, Value>) -> Result<DesignName, Failure> {
    DesignName::parse(string_arg(args, "name")?).map_err(Failure::BadRequest)
}

fn save(app: &App, args: &Map<String, Value>) -> Result<Reply, Failure> {
    let name = name_arg(args)?;
    let graph = args.get("graph").ok_or_else(|| Failure::BadRequest("missing \"graph\"".into()))?;
    save_design(app, &name, graph, SaveMode::Replace).map(Reply::ok)
}

/// Whether a save may replace a design that has the name already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveMode {
    Replace,
    /// Only a new name: a design that exists is left as it is (`Failure::Conflict`).
    Create,
}

/// Validates `graph` (a design, or its JSON text) and saves it as `name`: the body of
/// `workflow_design_save`, `{ok, name, path, nodes}` or a design problem `{ok:false, error, errors}`.
pub fn save_design(app: &App, name: &DesignName, graph: &Value, mode: SaveMode) -> Result<Value, Failure> {
    let graph = match graph {
        Value::String(text) => json::parse(text).map_err(|e| Failure::BadRequest(e.about("\"graph\" is")))?,
        other => other.clone(),
    };
    let report = validate::validate(&graph);
    if !report.ok {
        return Ok(json!({
            "ok": false,
            "error": report.refusal(),
            "errors": report.errors,
        }));
    }
    let mut design = Design::from_value(&graph).map_err(|_| Failure::Internal("design changed while saving".into()))?;
    design.normalize_labels();
    let normalized = design.to_value();
    let path = match mode {
        SaveMode::Replace => app.store.save_design(name, &normalized)?,
        SaveMode::Create => app.store.create_design(name, &normalized)?,
    };
    Ok(json!({"ok": true, "name": name.as_str(), "path": path, "nodes": normalized["nodes"].as_array().map_or(0, Vec::len)}))
}

fn load(app: &App, args: &Map<String, Value>) -> Result<Reply, Failure> {
    let name = name_arg(args)?;
    let graph = app.store.load_design(&name)?;
    Ok(Reply::ok(json!({"ok": true, "graph": graph})))
}

fn validate_tool(app: &App, args: &Map<String, Value>) -> Result<Reply, Failure> {
    let graph = match (args.get("graph"), args.get("name")) {
        (Some(g), _) => g.clone(),
        (None, Some(_)) => app.store.load_design(&name_arg(args)?)?,
        (None, None) => return Err(Failure::BadRequest("give \"name\" (a saved design) or \"graph\"".into())),
    };
    let report = validate::validate(&graph);
    Ok(Reply::ok(serde_json::to_value(report).map_err(|e| Failure::Internal(e.to_string()))?))
}

fn run(app: &App, args: &Map<String, Value>) -> Result<Reply, Failure> {
    let name = name_arg(args)?;
    let input = args.get("input").cloned().unwrap_or(Value::Null);
    run_design(app, &name, input, |_| {})
}

/// Runs saved design `name` by hand until it is done or parked: the body of
/// `workflow_design_run`. `started` hears of the run once it is saved, before its first step.
pub fn run_design(app: &App, name: &DesignName, input: Value, started: impl FnOnce(&vwf_core::run::Run)) -> Result<Reply, Failure> {
    let runner = app.runner(&quiet, false);
    let plan = match runner.compile(name)? {
        Ok(plan) => plan,
        Err(report) => return Ok(Reply::ok(json!({"ok": false, "error": report.refusal(), "errors": report.errors}))),
    };
    let run = runner.start_then(plan, TriggerInfo::new("manual", input), started)?;
    Ok(Reply::ok(run.result()))
}

fn respond(app: &App, args: &Map<String, Value>) -> Result<Reply, Failure> {
    let run_id = string_arg(args, "run_id")?;
    let node = string_arg(args, "node")?;
    let generate = match args.get("agent_generate") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err(Failure::BadRequest("\"agent_generate\" must be true or false".into())),
    };
    let given = ["answer", "output"].iter().filter(|k| args.get(**k).is_some_and(|v| !v.is_null())).count() + usize::from(generate);
    if given != 1 {
        return Err(Failure::BadRequest("give exactly one of \"answer\", \"output\" or \"agent_generate\": true".into()));
    }
    let answer = if generate {
        Answer::Generate
    } else if args.get("answer").is_some_and(|v| !v.is_null()) {
        Answer::Respond(Response::Answer(string_arg(args, "answer")?.to_string()))
    } else {
        Answer::Respond(Response::Output(string_arg(args, "output")?.to_string()))
    };
    let run = app.runner(&quiet, false).respond(run_id, node, answer)?;
    Ok(Reply::ok(run.result()))
}

/// The design `new` creates: a manual trigger and nothing else.
pub fn blank_design() -> Value {
    json!({
        "description": "",
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual", "x": 40, "y": 120}],
        "edges": []
    })
}

/// Deletes a saved design. Its runs stay readable (each keeps the plan it started with); its
/// schedule job, if any, is paused and says why. Answers `{ok:true, name, deleted:true,
/// schedule: job | null}`; `NotFound` when no design has the name (nothing is written then).
pub fn delete_design(app: &App, name: &DesignName) -> Result<Value, Failure> {
    let job = crate::schedules::delete_design(app, name, || Ok(app.store.delete_design(name)?))?;
    Ok(json!({"ok": true, "name": name.as_str(), "deleted": true, "schedule": job}))
}

/// Creates a design, blank or a copy of the built-in template `from`; refuses to overwrite one
/// that exists. Answers the path written and the graph.
pub fn new_design(app: &App, name: &str, from: Option<&str>) -> Result<(String, Value), Failure> {
    let name = DesignName::parse(name).map_err(Failure::BadRequest)?;
    let graph = match from {
        None => blank_design(),
        Some(template) => crate::assets::template(template)
            .map_err(|names| Failure::NotFound(format!("no template named {template:?}; the templates are: {}", names.join(", "))))?,
    };
    let path = app.store.create_design(&name, &graph).map_err(|e| match e {
        StoreError::Exists(_) => Failure::Conflict(format!("design {:?} already exists; open it with `vwf open {name}`", name.as_str())),
        e => e.into(),
    })?;
    Ok((path, graph))
}
