//! The five agent tools (SPEC §11): the JSON adapter over the service layer.
//!
//! Agents (`vwf tool`, MCP, Hermes) call `call` with a tool name and JSON arguments. This module
//! only parses those arguments into typed requests, calls [`crate::service`], and serialises the
//! typed answer into the contract body. A tool never panics or raises: every store, plan and
//! persistence failure becomes a `{ok:false, error}` body, with an HTTP-like status for surfaces
//! that use one.

use serde_json::{Map, Value, json};
use vwf_core::json;
use vwf_core::limits::REQUEST_BODY_BYTES;
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Response;

use crate::failure::{Failure, guarded};
use crate::service::{ContractBody, Draft, SaveMode, Service, Start};
use vwf_runtime::app::App;
use vwf_runtime::runner::Answer;

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
    let Some(args) = args.as_object() else {
        return Err(Failure::BadRequest("arguments must be a JSON object".into()));
    };
    let service = Service::new(app);
    match name {
        "workflow_design_save" => {
            let name = name_arg(args)?;
            let graph = args.get("graph").ok_or_else(|| Failure::BadRequest("missing \"graph\"".into()))?;
            Ok(service.save(&name, graph, SaveMode::Replace)?.body())
        }
        "workflow_design_load" => {
            let name = name_arg(args)?;
            let graph = match args.get("version") {
                None | Some(Value::Null) => service.load(&name)?,
                Some(v) => {
                    let n = v
                        .as_u64()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| Failure::BadRequest("\"version\" must be a version number (a whole number from 1)".into()))?;
                    service.version(&name, n)?.graph
                }
            };
            Ok(json!({"ok": true, "graph": graph}))
        }
        "workflow_design_validate" => {
            let draft = match (args.get("graph"), args.get("name")) {
                (Some(g), _) => Draft::Graph(g.clone()),
                (None, Some(_)) => Draft::Saved(name_arg(args)?),
                (None, None) => return Err(Failure::BadRequest("give \"name\" (a saved design) or \"graph\"".into())),
            };
            serde_json::to_value(service.validate(&draft)?).map_err(|e| Failure::Internal(e.to_string()))
        }
        "workflow_design_run" => {
            let name = name_arg(args)?;
            Ok(service.run(&name, Start::from_args(args)?)?.body())
        }
        "workflow_design_respond" => {
            let run_id = string_arg(args, "run_id")?;
            let (node, answer) = respond_args(args)?;
            let id = RunId::parse(run_id).map_err(Failure::BadRequest)?;
            Ok(service.respond(&id, &node, answer)?.body())
        }
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

/// The node and the answer of a respond request (the tool's arguments, `POST /runs/{id}/respond`'s
/// body): `node`, and exactly one of `answer`, `output` or `agent_generate: true`.
pub fn respond_args(args: &Map<String, Value>) -> Result<(String, Answer), Failure> {
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
    Ok((node.to_string(), answer))
}
