//! MCP and Hermes interop, driven by clients nobody here wrote.
//!
//! `scripts/python-env` installs the official Python MCP client and the `hermes-agent` package
//! into `target/py`; two scripts under `tests/python/` drive the built `vwf` with them and print
//! what they saw as JSON, and the tests below assert on it:
//! - `mcp_client.py`: `vwf mcp` over stdio and `/mcp` of `vwf serve` over streamable HTTP;
//! - `hermes_interop.py`: Hermes's plugin loader loading `integrations/hermes`, its cron tool
//!   creating a job through the plugin's helper, its MCP client starting `vwf mcp` from the
//!   README's `mcp_servers` snippet, and its dashboard backend serving the plugin's tab.
//!
//! Each script runs once per test binary (the first test to need it runs it; the others wait).
//! The tests skip, saying why, only when pip cannot reach PyPI.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};

use common::{hermes, repo};

/// The venv's python, or `None` (with the reason printed) when PyPI cannot be reached.
fn python() -> Option<&'static PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON.get_or_init(|| common::python_env("interop")).as_ref()
}

/// Runs `tests/python/<script>` with `args` in a scratch directory and parses its JSON report.
fn run_script(script: &str, args: &[&Path]) -> Option<Value> {
    Some(hermes::run_script(python()?, script, args))
}

fn vwf_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_vwf"))
}

fn example() -> PathBuf {
    common::examples_dir().join("draft-review.designer.json")
}

fn mcp_report() -> Option<&'static Value> {
    static REPORT: OnceLock<Option<Value>> = OnceLock::new();
    REPORT.get_or_init(|| run_script("mcp_client.py", &[vwf_bin(), &example()])).as_ref()
}

fn hermes_report() -> Option<&'static Value> {
    static REPORT: OnceLock<Option<Value>> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let plugin = repo().join("integrations/hermes");
            run_script("hermes_interop.py", &[vwf_bin(), &plugin, &plugin.join("README.md"), &example()])
        })
        .as_ref()
}

const SEVEN: [&str; 7] = [
    "workflow_design_save",
    "workflow_design_load",
    "workflow_design_validate",
    "workflow_design_run",
    "workflow_design_respond",
    "workflow_design_list",
    "workflow_runs_list",
];

/// A tool result the client saw: its contract body, after checking it arrived as a result (not
/// a protocol error) whose text and structured content agree.
fn body<'a>(call: &'a Value, what: &str) -> &'a Value {
    assert!(call.get("protocol_error").is_none(), "{what}: a JSON-RPC error instead of a tool result: {call}");
    assert_eq!(call["text_matches"], true, "{what}: text content and structured content differ: {call}");
    &call["body"]
}

/// The draft-review example, end to end over one transport.
fn assert_runs_to_done(session: &Value, transport: &str, design: &str) {
    let names: Vec<&str> = session["tools"].as_array().expect("tools").iter().filter_map(Value::as_str).collect();
    assert_eq!(names, SEVEN, "{transport}: listed tools");
    for (tool, kind) in session["schema_types"].as_object().expect("schema types") {
        assert_eq!(kind, "object", "{transport}: {tool} input schema");
    }
    let save = body(&session["save"], "save");
    assert_eq!(save["ok"], true, "{transport}: save {save}");
    assert_eq!(save["nodes"], 8);
    assert_eq!(body(&session["list"], "list")["designs"], json!([design]), "{transport}: design list");
    assert_eq!(body(&session["load"], "load")["graph"]["nodes"].as_array().map(Vec::len), Some(8));
    assert_eq!(body(&session["validate"], "validate")["ok"], true);

    let run = body(&session["run"], "run");
    assert_eq!(run["status"], "awaiting_agent", "{transport}: {run}");
    assert_eq!(run["pending"]["node"], "draft");
    assert_eq!(session["run"]["is_error"], false, "a parked run is no error");
    let after_output = body(&session["after_output"], "respond output");
    assert_eq!(after_output["status"], "awaiting_approval", "{transport}: {after_output}");
    assert_eq!(after_output["outputs"]["draft"]["text"], session["draft_text"]);
    let done = body(&session["after_answer"], "respond answer");
    assert_eq!(done["status"], "done", "{transport}: {done}");
    assert_eq!(done["outputs"]["final"]["text"], session["draft_text"], "{transport}: the approved draft is the output");

    let runs = body(&session["runs"], "runs list");
    assert_eq!(runs["ok"], true);
    let newest = &runs["runs"][0];
    assert_eq!(newest["run_id"], session["run_id"], "{transport}: newest first");
    assert_eq!(newest["status"], "done");
    assert!(newest.get("plan").is_none() && newest.get("history").is_none(), "runs list carries run results, not run files: {newest}");

    // A design marked "tool": true is listed as its own tool, its `inputs` its schema, and a call
    // runs it with the arguments as input.
    let greet = session["greet_tool"].as_str().expect("the design tool's name");
    assert_eq!(body(&session["greet_save"], "save the tool design")["ok"], true);
    let listed = &session["tools_after"][greet];
    assert_eq!(listed["schema"]["required"], json!(["name"]), "{transport}: {listed}");
    assert_eq!(listed["schema"]["properties"]["name"]["type"], "string");
    assert!(listed["description"].as_str().is_some_and(|d| d.starts_with("Greets a person by name.")), "{listed}");
    assert_eq!(session["tools_after"].as_object().map(|t| t.len()), Some(SEVEN.len() + 1), "{transport}: {}", session["tools_after"]);
    let greeted = body(&session["greet_call"], "call the design tool");
    assert_eq!(greeted["status"], "done", "{transport}: {greeted}");
    assert_eq!(greeted["outputs"]["hello"]["text"], "hello ada");
    assert_eq!(session["greet_call"]["is_error"], false);
    let missing = body(&session["greet_missing"], "call the design tool without its input");
    assert_eq!(session["greet_missing"]["is_error"], true, "{missing}");
    assert!(missing["error"].as_str().is_some_and(|e| e.contains("needs \"name\"")), "{missing}");
}

#[test]
fn mcp_stdio_lists_seven_tools_and_runs_draft_review_to_done() {
    let Some(report) = mcp_report() else { return };
    assert_runs_to_done(&report["stdio"], "stdio", "draft-review");
}

#[test]
fn mcp_http_endpoint_runs_draft_review_to_done_behind_the_api_guard() {
    let Some(report) = mcp_report() else { return };
    let http = &report["http"];
    assert_runs_to_done(http, "http", "draft-review-http");
    let checks = &http["checks"];
    for (case, status) in [("no_token", 401), ("wrong_token", 401), ("foreign_host", 403), ("foreign_origin", 403), ("good", 200)] {
        assert_eq!(checks[case]["status"], status, "{case}: {}", checks[case]);
    }
    for case in ["no_token", "wrong_token", "foreign_host", "foreign_origin"] {
        assert_eq!(checks[case]["body"]["ok"], false, "{case}: {}", checks[case]);
        assert!(checks[case]["body"]["error"].is_string(), "{case}");
    }
    assert_eq!(checks["good"]["body"]["result"]["serverInfo"]["name"], "visual-workflow");
}

#[test]
fn mcp_bad_arguments_unknown_designs_and_runs_are_tool_results_and_the_session_goes_on() {
    let Some(report) = mcp_report() else { return };
    for transport in ["stdio", "http"] {
        let session = &report[transport];
        let errors = session["errors"].as_object().expect("errors");
        assert_eq!(errors.len(), 12);
        for (case, call) in errors {
            let b = body(call, case);
            assert_eq!(b["ok"], false, "{transport} {case}: {b}");
            assert!(b["error"].as_str().is_some_and(|e| !e.is_empty()), "{transport} {case}: {b}");
            assert_eq!(call["is_error"], true, "{transport} {case}: isError");
        }
        let says = |case: &str, words: &str| {
            let error = errors[case]["body"]["error"].as_str().unwrap_or("");
            assert!(error.contains(words), "{transport} {case}: {error:?} should say {words:?}");
        };
        says("name_not_a_string", "\"name\" must be a string");
        says("missing_graph", "missing \"graph\"");
        says("unknown_design_load", "not found");
        says("unknown_design_run", "not found");
        says("unknown_run", "not found");
        says("bad_run_id", "bad run id");
        says("two_answers", "exactly one");
        says("not_waiting", "not waiting");
        says("bad_limit", "limit");
        says("unknown_tool", "unknown tool");
        let later = body(&session["later_good_call"], "later good call");
        assert_eq!(later["ok"], true, "{transport}: the session still answers after the failures");
    }
}

#[test]
fn injection_name_is_refused_by_mcp_and_plugin_and_cron_prompt_embeds_json_name() {
    let (Some(mcp), Some(hermes)) = (mcp_report(), hermes_report()) else { return };
    // The name rules refuse a name with a quote and a newline, on every surface.
    for transport in ["stdio", "http"] {
        for case in ["injection_name_save", "injection_name_run"] {
            let error = mcp[transport]["errors"][case]["body"]["error"].as_str().unwrap_or("");
            assert!(error.starts_with("bad design name"), "{transport} {case}: {error}");
        }
    }
    assert!(hermes["plugin"]["save_bad_name"]["error"].as_str().unwrap_or("").starts_with("bad design name"), "{}", hermes["plugin"]);
    assert!(hermes["mcp"]["bad_name"]["error"].as_str().unwrap_or("").contains("bad design name"), "{}", hermes["mcp"]);
    let cron = &hermes["cron"];
    assert_eq!(cron["bad_name"]["ok"], false, "{cron}");
    assert!(cron["bad_name"]["error"].as_str().unwrap_or("").starts_with("bad design name"));
    assert_eq!(cron["jobs_after_bad_name"], 0, "no cron job for a refused name");

    // An allowed name lands in the prompt only as a JSON string.
    assert_eq!(cron["made"]["ok"], true, "{cron}");
    let prompt = cron["prompt"].as_str().expect("prompt");
    let quoted = cron["name_as_json_string"].as_str().expect("name");
    assert!(prompt.contains(&format!("design {quoted} now")), "{prompt}");
    assert!(prompt.contains(&format!("{{\"name\":{quoted}}}")), "{prompt}");
    let name: String = serde_json::from_str(quoted).expect("a JSON string");
    assert_eq!(prompt.matches(name.as_str()).count(), 2, "the name appears only in its two JSON strings: {prompt}");
    assert!(prompt.contains("workflow_design_run") && prompt.contains("workflow_design_respond"), "{prompt}");

    // Hermes's own cron tool made the job from exactly what vwf answered.
    let jobs = cron["hermes_jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["name"], format!("workflow:{name}"));
    assert_eq!(jobs[0]["prompt"], prompt);
    assert_eq!(cron["cron"], "30 7 * * 1-5");
    assert_eq!(cron["vwf_job_paused"], true, "only Hermes fires the design");
}

/// The plugin against fake `vwf` binaries that never answer (`tests/python/hermes_timeout.py`:
/// the standard library only, so it needs no PyPI): each of the five tools, six `/workflow`
/// commands and the schedule helper answers `{ok:false, error}` once its time limit passes (a
/// run's longer than the others'), and no process of the stopped call survives it.
#[test]
fn hermes_plugin_stops_a_hung_vwf_within_its_time_limit() {
    let plugin = repo().join("integrations/hermes");
    let report = hermes::run_script(Path::new("python3"), "hermes_timeout.py", &[vwf_bin(), &plugin]);
    let calls = report["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 14, "{report}");
    for c in calls {
        let (limit, took) = (c["limit"].as_f64().unwrap(), c["seconds"].as_f64().unwrap());
        assert!(took >= limit - 0.01 && took < limit + 10.0, "{c}");
    }
    let runs = calls.iter().filter(|c| c["limit"] == json!(0.6)).count();
    assert_eq!(runs, 6, "run, respond, /workflow run (twice) and approve get the run's limit: {report}");
    assert_eq!(report["stopped_processes"], 28, "{report}");
    assert_eq!(report["slow_run_answered"], true);
    assert_eq!(report["real_binary"], "done");
    // A run's default limit is the longest run the limits allow without loops (every step an
    // agent step of the longest timeout, tried as often as allowed), so it cuts no such run short.
    use vwf_core::limits;
    let longest = limits::MAX_NODES as u64 * limits::AGENT_TIMEOUT_SECONDS.1 * (1 + limits::AGENT_RETRIES.1);
    let step = [limits::COMMAND_TIMEOUT_SECONDS.1, limits::WAIT_SECONDS.1, limits::HTTP_TIMEOUT_SECONDS.1];
    assert!(step.iter().all(|s| limits::MAX_NODES as u64 * s <= longest));
    assert_eq!(report["run_default"].as_f64(), Some(longest as f64), "{report}");
}

#[test]
fn hermes_plugin_loader_registers_the_tools_and_workflow_command() {
    let Some(report) = hermes_report() else { return };
    hermes::assert_plugin_registered(report, "user", vwf_bin());
}

#[test]
fn hermes_cron_jobs_deliver_to_the_targets_of_the_output_nodes() {
    let Some(report) = hermes_report() else { return };
    hermes::assert_cron_jobs_deliver(report);
}

/// Hermes's dashboard backend discovers `integrations/hermes/dashboard/manifest.json` (the plugin
/// is enabled under the same name), lists the tab to the browser and serves its entry script;
/// `/api/config` hands the script the `dashboard_url` it embeds.
#[test]
fn hermes_dashboard_lists_the_workflows_tab_and_serves_its_script() {
    let Some(report) = hermes_report() else { return };
    let dash = &report["dashboard"];
    assert_eq!(dash["list_status"], 200, "{dash}");
    let tabs = dash["plugins"].as_array().expect("plugins");
    assert_eq!(tabs.len(), 1, "the tab is listed once: {dash}");
    let tab = &tabs[0];
    assert_eq!(tab["source"], "user", "{tab}");
    assert_eq!(tab["label"], "Workflows", "{tab}");
    assert_eq!(tab["tab"], json!({"path": "/workflows", "position": "after:cron"}), "{tab}");
    assert_eq!(tab["entry"], "dist/index.js", "{tab}");
    assert_eq!(tab["has_api"], false, "no backend code: the frame shows vwf serve itself");
    assert_eq!(dash["entry_status"], 200, "{dash}");
    assert_eq!(dash["entry_type"], "application/javascript", "{dash}");
    assert_eq!(dash["entry_registers"], true, "the script registers with window.__HERMES_PLUGINS__");
    assert_eq!(dash["entry_default_url"], true, "the default URL is vwf serve's default bind");
    assert_eq!(dash["config_dashboard_url"], dash["expected_dashboard_url"], "{dash}");
}

#[test]
fn hermes_mcp_servers_snippet_reaches_vwf_mcp() {
    let Some(report) = hermes_report() else { return };
    hermes::assert_mcp_reaches_vwf(report);
}

/// The plugin's schemas (integrations/hermes/tools.json) are the MCP server's, so the two
/// surfaces describe the tools alike. To refresh the file, print `expected` below.
#[test]
fn plugin_tool_schemas_match_the_mcp_tool_list() {
    let text = std::fs::read_to_string(repo().join("integrations/hermes/tools.json")).expect("tools.json");
    let plugin: Value = serde_json::from_str(&text).expect("tools.json is JSON");
    let expected: Vec<Value> = vwf::mcp::tool_list()
        .into_iter()
        .filter(|t| vwf::tools::TOOL_NAMES.contains(&t.name.as_ref()))
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": Value::Object((*t.input_schema).clone())}))
        .collect();
    assert_eq!(plugin, Value::Array(expected.clone()), "expected:\n{}", serde_json::to_string_pretty(&expected).unwrap_or_default());
}
