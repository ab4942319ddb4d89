//! The five agent tools (SPEC §11): the JSON adapter over the service layer.
//!
//! Agents (`vwf tool`, MCP, Hermes) call `call` with a tool name and JSON arguments. This module
//! only parses those arguments into typed requests, calls [`crate::service`], and serialises the
//! typed answer into the contract body. A tool never panics or raises: every store, plan and
//! persistence failure becomes a `{ok:false, error}` body, with an HTTP-like status for surfaces
//! that use one.

use serde_json::{Value, json};
use vwf_core::json;
use vwf_core::limits::REQUEST_BODY_BYTES;

use crate::contract::requests::{
    GraphArg, LoadTool, Name, NameArg, RespondTool, RunIdArg, RunTool, SaveTool, ValidateArgs, VersionArg, VersionNumber,
};
use crate::contract::{Both, parse};
use crate::failure::{Failure, guarded};
use crate::service::{ContractBody, Draft, SaveMode, Service};
use vwf_runtime::app::App;

pub const TOOL_NAMES: [&str; 5] =
    ["workflow_design_save", "workflow_design_load", "workflow_design_validate", "workflow_design_run", "workflow_design_respond"];

/// A tool's answer: the JSON body and the HTTP status a server would send with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl From<Result<Value, Failure>> for Reply {
    fn from(answer: Result<Value, Failure>) -> Reply {
        match answer {
            Ok(body) => Reply { status: 200, body },
            Err(f) => Reply { status: f.status(), body: f.body() },
        }
    }
}

/// Calls tool `name` with `args`. Never panics: a bug inside a tool is still a JSON answer.
pub fn call(app: &App, name: &str, args: &Value) -> Reply {
    answer(app, name, args).into()
}

/// Calls a tool with arguments given as JSON text.
pub fn call_text(app: &App, name: &str, args: &str) -> Reply {
    answer_text(app, name, args).into()
}

/// [`call`], answering the body or the failure (which `vwf tool` turns into its exit code).
pub fn answer(app: &App, name: &str, args: &Value) -> Result<Value, Failure> {
    guarded(name, || dispatch(app, name, args))
}

/// [`call_text`], answering the body or the failure.
pub fn answer_text(app: &App, name: &str, args: &str) -> Result<Value, Failure> {
    if args.len() > REQUEST_BODY_BYTES {
        return Err(Failure::BadRequest(format!("arguments are {} bytes; at most {REQUEST_BODY_BYTES} are accepted", args.len())));
    }
    let args = json::parse_arguments(args).map_err(|e| Failure::BadRequest(e.about("arguments are")))?;
    answer(app, name, &args)
}

fn dispatch(app: &App, name: &str, args: &Value) -> Result<Value, Failure> {
    json::check_arguments(args).map_err(|(key, e)| match key {
        Some(key) => Failure::BadRequest(e.about(&format!("\"{key}\" is"))),
        None => Failure::BadRequest(e.about("arguments are")),
    })?;
    if !args.is_object() {
        return Err(Failure::BadRequest("arguments must be a JSON object".into()));
    }
    let args = args.clone();
    let service = Service::new(app);
    match name {
        "workflow_design_save" => {
            let Both(NameArg { name: Name(name) }, GraphArg { graph }) = parse::<SaveTool>(args)?;
            Ok(service.save(&name, &graph.0, SaveMode::Replace)?.body())
        }
        "workflow_design_load" => {
            let Both(NameArg { name: Name(name) }, VersionArg { version }) = parse::<LoadTool>(args)?;
            let graph = match version {
                None => service.load(&name)?,
                Some(VersionNumber(n)) => service.version(&name, n)?.graph,
            };
            Ok(json!({"ok": true, "graph": graph}))
        }
        "workflow_design_validate" => {
            let draft = match parse::<ValidateArgs>(args)? {
                ValidateArgs { graph: Some(graph), .. } => Draft::Graph(graph.0),
                ValidateArgs { name: Some(Name(name)), graph: None } => Draft::Saved(name),
                _ => return Err(Failure::BadRequest("give \"name\" (a saved design) or \"graph\"".into())),
            };
            serde_json::to_value(service.validate(&draft)?).map_err(|e| Failure::Internal(e.to_string()))
        }
        "workflow_design_run" => {
            let Both(NameArg { name: Name(name) }, start) = parse::<RunTool>(args)?;
            Ok(service.run(&name, start.start()?)?.body())
        }
        "workflow_design_respond" => {
            let Both(RunIdArg { run_id }, respond) = parse::<RespondTool>(args)?;
            let (node, answer) = respond.answer()?;
            Ok(service.respond(&run_id, &node, answer)?.body())
        }
        other => Err(Failure::BadRequest(format!("unknown tool {other:?}; tools: {}", TOOL_NAMES.join(", ")))),
    }
}
