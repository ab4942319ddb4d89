//! The agent tools over the Model Context Protocol: `vwf mcp` (standard input and output) and
//! `/mcp` on `vwf serve` (streamable HTTP, behind the server's Host, token and Origin checks).
//!
//! MCP is one more agent surface (SPEC §11): the five contract tools go through `tools::call`,
//! the JSON adapter, and two read-only listings (`workflow_design_list`, `workflow_runs_list`)
//! call the service layer exactly as `GET /designs` and `GET /runs` do. Every call runs on a
//! blocking thread.
//!
//! Invariants:
//! - A tool call always answers with a tool result carrying the contract JSON, as text and as
//!   structured content; a failure is `{ok:false, error}` with `isError` set, never a JSON-RPC
//!   error, so a session survives any argument a client sends.
//! - In `vwf mcp`, standard output belongs to the protocol: nothing else is printed there.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use vwf_core::limits::REQUEST_BODY_BYTES;

use crate::app::App;
use crate::failure::{Failure, guarded};
use crate::service::Service;
use crate::tools::{self, Reply};

/// Where `vwf serve` mounts the streamable-HTTP endpoint.
pub const HTTP_PATH: &str = "/mcp";

/// `workflow_runs_list` without `limit`, and the most it may ask for (as `GET /runs`).
const RUNS_DEFAULT: usize = 20;
const RUNS_MAX: usize = 1000;

/// Every tool this server offers, in the order clients list them.
pub const MCP_TOOL_NAMES: [&str; 7] = [
    "workflow_design_save",
    "workflow_design_load",
    "workflow_design_validate",
    "workflow_design_run",
    "workflow_design_respond",
    "workflow_design_list",
    "workflow_runs_list",
];

/// Calls tool `name`: the five contract tools through `tools::call`, plus the two listings.
pub(crate) fn call(app: &App, name: &str, args: &Value) -> Reply {
    match name {
        "workflow_design_list" | "workflow_runs_list" => guarded(name, || listing(&Service::new(app), name, args)).into(),
        _ => tools::call(app, name, args),
    }
}

fn listing(service: &Service<'_>, name: &str, args: &Value) -> Result<Value, Failure> {
    let Some(args) = args.as_object() else {
        return Err(Failure::BadRequest("arguments must be a JSON object".into()));
    };
    if name == "workflow_design_list" {
        return Ok(json!({"ok": true, "designs": service.designs()?}));
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => RUNS_DEFAULT,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=RUNS_MAX as u64).contains(&n) => n as usize,
            _ => return Err(Failure::BadRequest(format!("\"limit\" must be a whole number from 1 to {RUNS_MAX}, not {v}"))),
        },
    };
    // `{ok:true, runs}`, newest first: the entries of `GET /runs` (an unreadable run file is an
    // `{ok:false, run_id, error}` entry, never a failed listing).
    Ok(json!({"ok": true, "runs": service.runner().list_results(limit)?}))
}

// ---- the tool list ----

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

const NAME_RULE: &str = "Design name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64 characters.";

/// The tools with their argument schemas. Names and ids are checked by the tools themselves
/// (one rule, one place); the schemas describe shapes.
pub fn tool_list() -> Vec<Tool> {
    let name = json!({"type": "string", "description": NAME_RULE});
    let graph = json!({"type": "object", "description": "The design document: {description?, budget?, nodes: [...], edges: [...]}."});
    let run_id = json!({"type": "string", "description": "The run id: 12 lowercase hex characters."});
    let read_only = |tool: Tool| tool.with_annotations(ToolAnnotations::new().read_only(true));
    vec![
        Tool::new(
            "workflow_design_save",
            "Validate a design and save it under a name. Answers {ok:true, name, path, nodes}, or {ok:false, error, errors} listing the validation errors (nothing is saved then).",
            schema(json!({"type": "object", "properties": {"name": name, "graph": graph}, "required": ["name", "graph"]})),
        ),
        read_only(Tool::new(
            "workflow_design_load",
            "Load a saved design, or one of its recorded versions (give version). Answers {ok:true, graph} or {ok:false, error}.",
            schema(
                json!({"type": "object", "properties": {"name": name, "version": {"type": "integer", "minimum": 1, "description": "A recorded version (vwf versions NAME); the saved design when absent."}}, "required": ["name"]}),
            ),
        )),
        read_only(Tool::new(
            "workflow_design_validate",
            "Check a saved design (give name) or a draft (give graph). Answers {ok, errors, warnings}; each issue is {node?, edge?, field?, message}.",
            schema(json!({"type": "object", "properties": {"name": name, "graph": graph}})),
        )),
        Tool::new(
            "workflow_design_run",
            "Run a saved design now, until it is done, failed or parked. Answers the run result {ok, run_id, design, status, pending, outputs, skipped, deliveries, error, failed_node, steps, ...}. status awaiting_agent: perform pending.prompt and answer with workflow_design_respond {output}; awaiting_approval: a person answers pending.question with one of pending.options.",
            schema(json!({"type": "object", "properties": {
                "name": name,
                "input": {"description": "The run's input (any JSON), read by {{trigger}} templates."},
                "test": {"type": "boolean", "description": "A test run: steps pinned on the design give their pinned output instead of running (no command, call, model or delivery)."},
                "only": {"type": "string", "description": "A test run of this step alone, from the outputs of pins and past runs."},
                "until": {"type": "string", "description": "A test run of this step and every step leading to it."}
            }, "required": ["name"]})),
        ),
        Tool::new(
            "workflow_design_respond",
            "Answer a parked run: give exactly one of answer (an approval gate's option), output (an agent step's text) or agent_generate: true (perform the agent step with the configured backend). Answers the run result, or {ok:false, error} when the run is not waiting on that node.",
            schema(json!({"type": "object", "properties": {
                "run_id": run_id,
                "node": {"type": "string", "description": "The parked node's id (pending.node)."},
                "answer": {"type": "string", "description": "For an approval gate: one of its options."},
                "output": {"type": "string", "description": "For an agent step: the step's text."},
                "agent_generate": {"type": "boolean", "description": "For an agent step: let the configured agent backend perform it."}
            }, "required": ["run_id", "node"]})),
        ),
        read_only(Tool::new(
            "workflow_design_list",
            "List the saved designs. Answers {ok:true, designs: [name, ...]}.",
            schema(json!({"type": "object", "properties": {}})),
        )),
        read_only(Tool::new(
            "workflow_runs_list",
            "List recent runs, newest first. Answers {ok:true, runs: [run result, ...]}; an unreadable run file is an {ok:false, run_id, error} entry.",
            schema(json!({"type": "object", "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": RUNS_MAX, "description": format!("How many runs (default {RUNS_DEFAULT}).")}
            }})),
        )),
    ]
}

/// A tool's answer as an MCP result: the contract JSON as text and as structured content.
/// A run result is never an error result (its `status` tells how the run went); any other
/// `ok:false` answer is.
pub(crate) fn tool_result(body: Value) -> CallToolResult {
    let failed = body.get("ok") == Some(&Value::Bool(false)) && body.get("run_id").is_none();
    if failed { CallToolResult::structured_error(body) } else { CallToolResult::structured(body) }
}

// ---- the server ----

/// The MCP server: the tools over one `App`, shared by every session.
#[derive(Clone)]
pub(crate) struct McpServer {
    app: Arc<App>,
}

impl McpServer {
    fn new(app: Arc<App>) -> McpServer {
        McpServer { app }
    }

    /// Runs a tool on a blocking thread; whatever happens, the answer is a contract body.
    async fn call(&self, name: String, args: Value) -> Value {
        let app = self.app.clone();
        match tokio::task::spawn_blocking(move || call(&app, &name, &args)).await {
            Ok(reply) => reply.body,
            Err(e) => {
                eprintln!("vwf mcp: a tool call failed: {e}");
                Failure::Internal("internal error while running the tool; nothing was changed by the failed part".into()).body()
            }
        }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("visual-workflow", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Design, validate and run visual-workflow designs. Every tool answers the contract JSON; \
                 {ok:false, error} describes a failure. A run that stops at awaiting_agent waits for \
                 workflow_design_respond with the step's output.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| Value::Object(Map::new()));
        let name = request.name.to_string();
        let body = if MCP_TOOL_NAMES.contains(&name.as_str()) {
            self.call(name, args).await
        } else {
            Failure::BadRequest(format!("unknown tool {name:?}; tools: {}", MCP_TOOL_NAMES.join(", "))).body()
        };
        Ok(tool_result(body).into())
    }
}

/// `vwf mcp`: serves the tools on standard input and output until the client closes them.
pub fn serve_stdio(app: App) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the async runtime: {e}")))?;
    let server = McpServer::new(Arc::new(app));
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| Failure::Internal(format!("the MCP session did not start: {e}")))?;
        running.waiting().await.map_err(|e| Failure::Internal(format!("the MCP session failed: {e}")))?;
        Ok(())
    })
}

/// The `/mcp` endpoint of `vwf serve`: stateless streamable HTTP answering JSON, so no request
/// holds a stream open past its answer (a stop finishes promptly). Host, token and Origin are
/// checked by the server's guard in front of it, with the server's own settings.
pub(crate) fn http_service(app: Arc<App>) -> StreamableHttpService<McpServer, NeverSessionManager> {
    let server = McpServer::new(app);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(REQUEST_BODY_BYTES);
    StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_listed_with_an_object_schema() {
        let tools = tool_list();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, MCP_TOOL_NAMES);
        for name in tools::TOOL_NAMES {
            assert!(names.contains(&name), "{name}");
        }
        for tool in &tools {
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{}", tool.name);
        }
    }

    #[test]
    fn failures_are_error_results_and_runs_are_not() {
        assert_eq!(tool_result(json!({"ok": false, "error": "x"})).is_error, Some(true));
        assert_eq!(tool_result(json!({"ok": false, "error": "x", "errors": []})).is_error, Some(true));
        assert_eq!(tool_result(json!({"ok": false, "run_id": "d7b493cae249", "status": "failed"})).is_error, Some(false));
        let ok = tool_result(json!({"ok": true, "designs": []}));
        assert_eq!(ok.is_error, Some(false));
        assert_eq!(ok.structured_content, Some(json!({"ok": true, "designs": []})));
    }
}
