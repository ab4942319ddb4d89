//! Running `tests/python/hermes_interop.py` and checking what Hermes made of the plugin, for the
//! two ways Hermes loads it: the plugin folder (`mcp.rs`) and the installed wheel (`wheel.rs`).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::repo;

/// The five tools the plugin registers, sorted.
pub const FIVE: [&str; 5] =
    ["workflow_design_load", "workflow_design_respond", "workflow_design_run", "workflow_design_save", "workflow_design_validate"];

/// Runs `tests/python/<script>` with `python` and `args` (plus a scratch directory) and parses
/// the JSON report it prints last.
pub fn run_script(python: &Path, script: &str, args: &[&Path]) -> Value {
    let work = tempfile::tempdir().expect("tempdir");
    let out = Command::new(python)
        .arg(repo().join("tests/python").join(script))
        .args(args)
        .arg(work.path())
        .env_remove("VWF_HOME")
        .env_remove("HERMES_HOME")
        .env_remove("VWF_NOW")
        .env("PYTHONDONTWRITEBYTECODE", "1") // no __pycache__ left in the plugin folder
        .output()
        .expect("run the python script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed ({}):\n{stderr}\n{stdout}", out.status);
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{script} printed no JSON report ({e}):\n{stdout}\n{stderr}"))
}

/// Hermes's plugin loader loaded the plugin from `source` (`user` for the folder, `entrypoint`
/// for the wheel) and runs `binary`; the five tools, the tool of the design `greet` (marked
/// `"tool": true`) and `/workflow` are registered, and calls through Hermes's registry (each of the
/// tools) and command lookup reach vwf in Hermes's home.
pub fn assert_plugin_registered(report: &Value, source: &str, binary: &Path) {
    let plugin = &report["plugin"];
    let loaded = &plugin["plugins"][0];
    assert_eq!(plugin["plugins"].as_array().map(Vec::len), Some(1), "{}", plugin["plugins"]);
    assert_eq!(loaded["enabled"], true, "{loaded}");
    assert_eq!(loaded["error"], Value::Null, "{loaded}");
    assert_eq!(loaded["source"], source, "{loaded}");
    assert_eq!((loaded["tools"].as_u64(), loaded["commands"].as_u64()), (Some(6), Some(1)), "{loaded}");
    assert_eq!(plugin["binary"], json!(binary), "the binary the plugin runs");
    assert_eq!(plugin["registered_tools"], json!(FIVE));
    assert_eq!(plugin["toolset"], "visual-workflow");
    assert_eq!(plugin["schema_name"], "workflow_design_run");
    assert_eq!(plugin["commands"], json!(["workflow"]));
    let schema = &plugin["design_tool_schema"];
    assert_eq!((&schema["name"], &schema["parameters"]["required"]), (&json!("greet"), &json!(["name"])), "{schema}");
    assert_eq!(plugin["design_tool_toolset"], "visual-workflow");
    assert_eq!(plugin["design_tool_call"]["status"], "done", "{}", plugin["design_tool_call"]);
    assert_eq!(plugin["design_tool_call"]["outputs"]["hello"]["text"], "hello ada");
    assert_eq!(plugin["design_tool_missing"]["ok"], false, "{}", plugin["design_tool_missing"]);

    // Tool calls through Hermes's registry reach vwf in Hermes's home.
    assert_eq!(plugin["save"]["ok"], true, "{}", plugin["save"]);
    let home = report["hermes_home"].as_str().expect("home");
    assert!(plugin["save"]["path"].as_str().unwrap_or("").starts_with(home), "{} in {home}", plugin["save"]);
    assert_eq!(plugin["run"]["status"], "awaiting_agent", "{}", plugin["run"]);
    assert_eq!(plugin["respond"]["status"], "awaiting_approval", "{}", plugin["respond"]);
    assert_eq!(plugin["load_missing"]["ok"], false);
    assert_eq!(plugin["load"]["graph"]["nodes"].as_array().map(Vec::len), Some(8), "{}", plugin["load"]);
    assert_eq!(plugin["validate"]["ok"], true, "{}", plugin["validate"]);

    // `/workflow list` through Hermes's plugin-command lookup.
    let list = plugin["slash_list"].as_str().expect("reply");
    assert!(list.contains("draft-review") && list.contains("brief.v2_x-1"), "{list}");
    assert!(plugin["slash_help"].as_str().unwrap_or("").contains("/workflow run <name>"), "{}", plugin["slash_help"]);
}

/// The cron jobs the plugin made deliver where the designs' output nodes say, as Hermes's own
/// scheduler resolves them: a Telegram topic, Slack's home channel (`SLACK_HOME_CHANNEL`), and
/// Hermes's default for a design that delivers only to vwf's own webhooks.
pub fn assert_cron_jobs_deliver(report: &Value) {
    let deliver = &report["cron"]["deliver"];
    let expect = [
        (
            "to-telegram-topic",
            json!("telegram:-1001234567890:17585"),
            json!([{"platform": "telegram", "chat_id": "-1001234567890", "thread_id": "17585"}]),
        ),
        ("to-slack-home-and-webhook", json!("slack"), json!([{"platform": "slack", "chat_id": "C0HOME", "thread_id": null}])),
        ("to-discord-webhook", Value::Null, json!([])),
    ];
    for (design, target, targets) in expect {
        let job = &deliver[design];
        assert_eq!((&job["saved"], &job["made"]), (&json!(true), &json!(true)), "{design}: {job}");
        assert_eq!(job["vwf_job_deliver"], target, "{design}: what vwf answered: {job}");
        // Without a target vwf passes none and Hermes keeps its default: for a job made outside a
        // chat (as here), `local`.
        let stored = if target.is_null() { json!("local") } else { target.clone() };
        assert_eq!(job["hermes_job_deliver"], stored, "{design}: what Hermes stored: {job}");
        assert_eq!(job["targets"], targets, "{design}: what Hermes's scheduler resolves: {job}");
    }
}

/// Hermes's MCP client started `vwf mcp` from the README's snippet and reached the same home.
pub fn assert_mcp_reaches_vwf(report: &Value) {
    let mcp = &report["mcp"];
    let mut expected: Vec<String> =
        FIVE.iter().chain(&["workflow_design_list", "workflow_runs_list", "greet"]).map(|t| format!("mcp__visual_workflow__{t}")).collect();
    expected.sort();
    assert_eq!(mcp["tools"], json!(expected));
    let listed: Value = serde_json::from_str(mcp["list"]["result"].as_str().expect("a result")).expect("JSON text");
    assert_eq!(listed["ok"], true);
    let mut designs: Vec<&str> =
        vec!["brief.v2_x-1", "draft-review", "greet", "to-discord-webhook", "to-slack-home-and-webhook", "to-telegram-topic"];
    designs.sort_unstable();
    assert_eq!(listed["designs"], json!(designs), "the same home as the plugin");
    let runs: Value = serde_json::from_str(mcp["runs"]["result"].as_str().expect("a result")).expect("JSON text");
    assert_eq!(runs["runs"][0]["run_id"], report["plugin"]["run"]["run_id"]);
}
