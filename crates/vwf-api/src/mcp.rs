//! The agent tools over the Model Context Protocol: `vwf mcp` (standard input and output) and
//! `/mcp` on `vwf serve` (streamable HTTP, behind the server's Host, token and Origin checks).
//!
//! MCP is one more agent surface (SPEC §11): the five contract tools go through `tools::call`,
//! the JSON adapter, and two read-only listings (`workflow_design_list`, `workflow_runs_list`)
//! call the service layer exactly as `GET /designs` and `GET /runs` do. Every saved design marked
//! `"tool": true` is listed as a tool of its own too (its `inputs` its schema), whose call runs
//! it. Every call runs on a blocking thread.
//!
//! Invariants:
//! - A tool call always answers with a tool result carrying the contract JSON, as text and as
//!   structured content; a failure is `{ok:false, error}` with `isError` set, never a JSON-RPC
//!   error, so a session survives any argument a client sends.
//! - In `vwf mcp`, standard output belongs to the protocol: nothing else is printed there.
//! - On `vwf serve`, a call of a tool that starts or drives a run ([`RUN_TOOLS`]) takes one of the
//!   server's run slots before the protocol layer sees it; when every slot stays taken the HTTP
//!   answer is 503 with `Retry-After` and a JSON-RPC error of the call's id (nothing ran, so it is
//!   no tool result).

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

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::contract;
use crate::contract::requests::{ListArgs, LoadTool, NoArgs, RUNS_DEFAULT, RespondTool, RunTool, SaveTool, ValidateArgs};
use crate::failure::{Failure, guarded};
use crate::service::Service;
use crate::tools::{self, Reply};
use vwf_runtime::app::App;
use vwf_runtime::gate::{Slot, Ticket};

/// Where `vwf serve` mounts the streamable-HTTP endpoint.
pub const HTTP_PATH: &str = "/mcp";

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

/// The contract tools that start or drive a run: on `vwf serve` each call of one takes a run slot,
/// as does each call of a design's tool (any name not in [`MCP_TOOL_NAMES`]).
pub const RUN_TOOLS: [&str; 2] = ["workflow_design_run", "workflow_design_respond"];

/// The JSON-RPC error code of a call refused because every run slot stayed taken (the range
/// JSON-RPC leaves to servers).
pub const BUSY_CODE: i64 = -32000;

/// Calls tool `name`: the five contract tools through `tools::call`, plus the two listings.
pub(crate) fn call(app: &App, name: &str, args: &Value) -> Reply {
    match name {
        "workflow_design_list" | "workflow_runs_list" => guarded(name, || listing(&Service::new(app), name, args)).into(),
        _ if tools::TOOL_NAMES.contains(&name) || tools::design_tool(app, name).is_some() => tools::call(app, name, args),
        _ => Reply::from(Err(Failure::BadRequest(format!("unknown tool {name:?}; tools: {}", MCP_TOOL_NAMES.join(", "))))),
    }
}

/// The contract's tools, then one per saved design offered as a tool (`"tool": true`).
fn every_tool(app: &App) -> Vec<Tool> {
    let mut listed = tool_list();
    listed.extend(tools::design_tools(app).into_iter().map(|t| Tool::new(t.name, t.description, Arc::new(t.schema))));
    listed
}

fn listing(service: &Service<'_>, name: &str, args: &Value) -> Result<Value, Failure> {
    if !args.is_object() {
        return Err(Failure::BadRequest("arguments must be a JSON object".into()));
    }
    if name == "workflow_design_list" {
        contract::parse::<NoArgs>(args.clone())?;
        return Ok(json!({"ok": true, "designs": service.designs()?}));
    }
    let ListArgs { limit } = contract::parse(args.clone())?;
    // `{ok:true, runs}`, newest first: the entries of `GET /runs` (an unreadable run file is an
    // `{ok:false, run_id, error}` entry, never a failed listing).
    Ok(json!({"ok": true, "runs": service.runner().list_results(limit.map_or(RUNS_DEFAULT, |l| l.0))?}))
}

// ---- the tool list ----

/// The argument schema of a tool taking `T` (`contract::requests`), shared definitions inlined:
/// a tool's schema stands alone.
fn schema<T: schemars::JsonSchema>() -> Arc<JsonObject> {
    let mut generator = contract::generator();
    let mut schema = contract::schema_of::<T>(&mut generator);
    contract::inline_definitions(&mut schema, &mut generator);
    // An example is for people reading the API's document, and the tool has its own
    // description. Model APIs take no combinator at the root of a tool's arguments: the rules
    // they state (exactly one answer; only or until) are in the tool's description and its
    // parser.
    match schema {
        Value::Object(mut map) => {
            for key in ["examples", "description", "oneOf", "anyOf", "allOf", "not"] {
                map.remove(key);
            }
            map.entry("properties").or_insert_with(|| json!({}));
            map.insert("type".into(), json!("object"));
            Arc::new(map)
        }
        _ => Arc::new(Map::new()),
    }
}

/// The tools with their argument schemas, generated from the types their arguments are read as.
pub fn tool_list() -> Vec<Tool> {
    let read_only = |tool: Tool| tool.with_annotations(ToolAnnotations::new().read_only(true));
    vec![
        Tool::new(
            "workflow_design_save",
            "Validate a design and save it under a name. Answers {ok:true, name, path, nodes}, or {ok:false, error, errors} listing the validation errors (nothing is saved then).",
            schema::<SaveTool>(),
        ),
        read_only(Tool::new(
            "workflow_design_load",
            "Load a saved design, or one of its recorded versions (give version). Answers {ok:true, graph} or {ok:false, error}.",
            schema::<LoadTool>(),
        )),
        read_only(Tool::new(
            "workflow_design_validate",
            "Check a saved design (give name) or a draft (give graph). Answers {ok, errors, warnings}; each issue is {node?, edge?, field?, message}.",
            schema::<ValidateArgs>(),
        )),
        Tool::new(
            "workflow_design_run",
            "Run a saved design now, until it is done, failed or parked. Answers the run result {ok, run_id, design, status, pending, outputs, skipped, deliveries, error, failed_node, steps, ...}. status awaiting_agent: perform pending.prompt and answer with workflow_design_respond {output}; awaiting_approval: a person answers pending.question with one of pending.options.",
            schema::<RunTool>(),
        ),
        Tool::new(
            "workflow_design_respond",
            "Answer a parked run: give exactly one of answer (an approval gate's option), output (an agent step's text) or agent_generate: true (perform the agent step with the configured backend). Answers the run result, or {ok:false, error} when the run is not waiting on that node.",
            schema::<RespondTool>(),
        ),
        read_only(Tool::new(
            "workflow_design_list",
            "List the saved designs. Answers {ok:true, designs: [name, ...]}.",
            schema::<NoArgs>(),
        )),
        read_only(Tool::new(
            "workflow_runs_list",
            "List recent runs, newest first. Answers {ok:true, runs: [run result, ...]}; an unreadable run file is an {ok:false, run_id, error} entry.",
            schema::<ListArgs>(),
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

    /// Runs a tool on a blocking thread; whatever happens, the answer is a contract body. `slot`
    /// (a run slot the HTTP layer took for the call) is held until the tool's work ends.
    async fn call(&self, name: String, args: Value, slot: Option<Slot>) -> Value {
        let app = self.app.clone();
        let work = move || {
            let _slot = slot;
            call(&app, &name, &args)
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(reply) => reply.body,
            Err(e) => {
                tracing::error!(error = %e, "a tool call failed");
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
        let app = self.app.clone();
        let listed = tokio::task::spawn_blocking(move || every_tool(&app)).await.unwrap_or_else(|_| tool_list());
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| Value::Object(Map::new()));
        let name = request.name.to_string();
        let slot = context.extensions.get::<Parts>().and_then(|parts| parts.extensions.get::<Ticket>()).and_then(Ticket::take);
        // Unknown names are answered by `call` too: whether a saved design offers the tool is
        // read from the store.
        Ok(tool_result(self.call(name, args, slot).await).into())
    }
}

/// `vwf mcp`: serves the tools on standard input and output until the client closes them.
pub fn serve_stdio(app: App) -> Result<(), Failure> {
    let runtime = crate::runtime()?;
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
/// checked by the server's guard in front of it, with the server's own settings. A call of a
/// [`RUN_TOOLS`] tool first takes a run slot (see [`gated`]).
pub(crate) fn http_service(app: Arc<App>) -> axum::routing::MethodRouter {
    let mcp = protocol_service(app.clone());
    axum::routing::any(move |request: Request| {
        let (mcp, app) = (mcp.clone(), app.clone());
        async move { gated(&app, mcp, request).await }
    })
}

/// Takes a run slot for a request that calls a [`RUN_TOOLS`] tool (handed on with the request,
/// see [`Ticket`]), then lets the protocol layer answer; 503 with `Retry-After` and a JSON-RPC
/// error when every slot stays taken. Other requests go straight through.
async fn gated(app: &App, mcp: StreamableHttpService<McpServer, NeverSessionManager>, request: Request) -> Response {
    let Some(gate) = app.slots.clone().filter(|_| request.method() == Method::POST) else {
        return forward(mcp, request).await;
    };
    let (mut parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, REQUEST_BODY_BYTES).await else {
        let error = format!("request body is larger than {} MiB ({REQUEST_BODY_BYTES} bytes)", REQUEST_BODY_BYTES / (1024 * 1024));
        return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(json!({"ok": false, "error": error}))).into_response();
    };
    let message: Value = vwf_core::json::parse_slice(&bytes).unwrap_or(Value::Null);
    if let Some(id) = runs_a_tool(&message) {
        match gate.enter().await {
            Ok(slot) => {
                parts.extensions.insert(Ticket::new(slot));
            }
            Err(busy) => return refused_busy(id, &busy.to_string()),
        }
    }
    forward(mcp, Request::from_parts(parts, Body::from(bytes))).await
}

/// The id of a JSON-RPC request (or of the first in a batch) that calls a [`RUN_TOOLS`] tool.
fn runs_a_tool(message: &Value) -> Option<Value> {
    let calls = |m: &Value| {
        m.get("method").and_then(Value::as_str) == Some("tools/call")
            && m.pointer("/params/name")
                .and_then(Value::as_str)
                .is_some_and(|name| RUN_TOOLS.contains(&name) || !MCP_TOOL_NAMES.contains(&name))
    };
    match message {
        Value::Array(batch) => batch.iter().find(|m| calls(m)).map(|m| m.get("id").cloned().unwrap_or(Value::Null)),
        m if calls(m) => Some(m.get("id").cloned().unwrap_or(Value::Null)),
        _ => None,
    }
}

/// 503, `Retry-After`, and the JSON-RPC error of request `id`.
fn refused_busy(id: Value, message: &str) -> Response {
    let retry = vwf_core::limits::BUSY_RETRY_AFTER_SECONDS;
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": BUSY_CODE, "message": message, "data": {"retry_after": retry}}});
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry));
    response
}

async fn forward(mcp: StreamableHttpService<McpServer, NeverSessionManager>, request: Request) -> Response {
    mcp.handle(request).await.into_response()
}

/// The protocol layer of `/mcp` (see [`http_service`]).
fn protocol_service(app: Arc<App>) -> StreamableHttpService<McpServer, NeverSessionManager> {
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
