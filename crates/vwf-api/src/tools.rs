//! The five agent tools (SPEC §11): the JSON adapter over the service layer.
//!
//! Agents (`vwf tool`, MCP, Hermes) call `call` with a tool name and JSON arguments. This module
//! only parses those arguments into typed requests, calls [`crate::service`], and serialises the
//! typed answer into the contract body. A tool never panics or raises: every store, plan and
//! persistence failure becomes a `{ok:false, error}` body, with an HTTP-like status for surfaces
//! that use one.

use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::interface;
use vwf_core::json;
use vwf_core::limits::REQUEST_BODY_BYTES;
use vwf_core::names::DesignName;
use vwf_store::Wait;

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
            let (node, answer) = respond.answer("mcp")?;
            Ok(service.respond(&run_id, &node, answer)?.body())
        }
        other => match design_tool(app, other) {
            Some(tool) => run_design_tool(&service, &tool, args),
            None => Err(Failure::BadRequest(format!("unknown tool {other:?}; tools: {}", TOOL_NAMES.join(", ")))),
        },
    }
}

/// A saved design offered to agents as a tool (`"tool": true`, see [`vwf_core::interface`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DesignTool {
    /// The tool's name: the design's, a `.` read as `_`.
    pub name: String,
    pub design: DesignName,
    pub description: String,
    /// Its arguments' JSON Schema: the design's `inputs`, or any object.
    pub schema: Map<String, Value>,
}

impl DesignTool {
    /// The tool in the form hosts register tools in: `{name, description, parameters, design}`.
    pub fn host_form(&self) -> Value {
        json!({"name": self.name, "description": self.description, "parameters": self.schema, "design": self.design})
    }
}

/// The saved designs offered as tools, in name order. A design whose tool name a contract tool
/// has, or an earlier design's tool took, is left out (and logged).
pub fn design_tools(app: &App) -> Vec<DesignTool> {
    let mut out: Vec<DesignTool> = Vec::new();
    for name in app.store.list_designs().wait().unwrap_or_default() {
        let Ok(name) = DesignName::parse(&name) else { continue };
        let Some(design) = app.store.load_design(&name).wait().ok().and_then(|g| Design::from_value(&g).ok()) else { continue };
        if !interface::is_tool(&design) {
            continue;
        }
        let offer = interface::offer(&name, &design);
        let tool = offer.name.as_str();
        if TOOL_NAMES.contains(&tool) || crate::mcp::MCP_TOOL_NAMES.contains(&tool) || out.iter().any(|t| t.name == tool) {
            tracing::warn!(design = %name, tool, "a design's tool name is taken; it is not offered as a tool");
            continue;
        }
        out.push(DesignTool { name: offer.name, design: name, description: offer.description, schema: offer.schema });
    }
    out
}

/// The design tool named `name`, if a saved design offers one.
pub fn design_tool(app: &App, name: &str) -> Option<DesignTool> {
    design_tools(app).into_iter().find(|t| t.name == name)
}

/// Runs a design tool: its arguments, checked against the design's `inputs`, are the run's input.
fn run_design_tool(service: &Service<'_>, tool: &DesignTool, args: Value) -> Result<Value, Failure> {
    let graph = service.load(&tool.design)?;
    let design = Design::from_value(&graph)
        .map_err(|e| Failure::Refused(vwf_core::validate::Report { ok: false, errors: e, warnings: Vec::new() }))?;
    interface::check_call(&design, &args).map_err(|why| Failure::BadRequest(format!("tool {}: {why}", tool.name)))?;
    Ok(service.run(&tool.design, crate::service::Start::with_input(args))?.body())
}
