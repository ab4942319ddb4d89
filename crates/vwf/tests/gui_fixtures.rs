//! The graphs the canvases really produce, run by the engine: every `tests/fixtures/gui/*.json`
//! was exported by a browser test (tests/e2e/*.test.mjs drives web/designer.html in Chromium and
//! writes what it exported), and is committed, so this suite needs no browser.
//!
//! Each fixture goes through both doors of one contract:
//! - the CLI: `vwf tool workflow_design_validate {graph}`, `vwf save`, `vwf run`, answering every
//!   gate with its first option (`vwf approve`) and every agent step with a canned reply, with the
//!   clock pinned (`VWF_NOW`) so wait steps take no real time;
//! - the API: a real `vwf serve --bind 127.0.0.1:0`, `POST /designs/{name}`, `POST /designs/{name}/run`
//!   and `POST /runs/{id}/respond` the same way; a parked wait is followed with `GET /runs/{id}`.
//!
//! Both must save the graph byte for byte (unknown fields included), end `done`, and record the
//! same steps, skips and outputs (the run id and wall-clock times aside).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Home, later};
use reqwest::blocking::Client;
use serde_json::{Value, json};

const PREFIX: &str = "/api/plugins/visual-workflow";
const T0: &str = "2026-11-30T08:30:00Z";
/// Fixtures the canvas tests write; they must be committed with the repository.
const FROM_THE_CANVAS: [&str; 2] = ["designer-built", "designer-file"];

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gui")
}

/// `(name, graph)` of every fixture, sorted by name.
fn fixtures() -> Vec<(String, Value)> {
    let dir = fixtures_dir();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        let Some(name) = path.file_name().and_then(|f| f.to_str()).and_then(|f| f.strip_suffix(".json")) else { continue };
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let graph: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        assert!(graph.is_object(), "{name}: a fixture is a design object");
        out.push((name.to_string(), graph));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn input_of(graph: &Value) -> Value {
    graph.get("example_input").cloned().unwrap_or(Value::Null)
}

/// What one parked run needs next, the same on both surfaces.
enum Next {
    Finished,
    Answer { node: String, answer: String },
    Output { node: String, text: String },
    Wait,
}

fn next_move(name: &str, run: &Value) -> Next {
    let pending = &run["pending"];
    let node = || pending["node"].as_str().unwrap_or_else(|| panic!("{name}: pending without node: {run}")).to_string();
    match run["status"].as_str() {
        Some("done") | Some("failed") => Next::Finished,
        Some("awaiting_approval") => {
            let first = pending["options"][0].as_str().unwrap_or_else(|| panic!("{name}: gate without options: {run}"));
            Next::Answer { node: node(), answer: first.to_string() }
        }
        Some("awaiting_agent") => Next::Output { node: node(), text: format!("Reply written for {}.", node()) },
        Some("waiting") => Next::Wait,
        other => panic!("{name}: a run stopped in status {other:?}: {run}"),
    }
}

// ---- the CLI ----

fn run_cli(home: &Home, name: &str, graph: &Value) -> Value {
    let (code, verdict) = home.json(&["tool", "workflow_design_validate", &json!({"graph": graph}).to_string()]);
    assert_eq!(code, 0, "{name}: validate exit code: {verdict}");
    assert_eq!(verdict["ok"], true, "{name}: the server's validator refuses what the canvas exported: {verdict}");
    assert_eq!(verdict["errors"], json!([]), "{name}: {verdict}");

    home.save(name, graph);
    let (_, loaded) = home.json(&["tool", "workflow_design_load", &json!({"name": name}).to_string()]);
    assert_eq!(loaded["graph"], *graph, "{name}: the CLI keeps the canvas graph exactly");

    let mut now = T0.to_string();
    let (_, mut run) = home.json_at(&now, &["run", name, "--input", &input_of(graph).to_string()]);
    for _ in 0..50 {
        let id = run["run_id"].as_str().unwrap_or_else(|| panic!("{name}: no run_id: {run}")).to_string();
        now = later(&now, 1);
        run = match next_move(name, &run) {
            Next::Finished => return run,
            Next::Answer { node, answer } => home.json_at(&now, &["approve", &id, &node, &answer]).1,
            Next::Output { node, text } => home.json_at(&now, &["respond", &id, &node, "--output", &text]).1,
            Next::Wait => panic!("{name}: a foreground CLI run sleeps through its waits, yet it parked: {run}"),
        };
    }
    panic!("{name}: the CLI run never finished: {run}")
}

// ---- the API ----

/// A running `vwf serve` on a free loopback port; killed when dropped.
struct Server {
    child: Child,
    _stdout: BufReader<ChildStdout>,
    base: String,
    client: Client,
    /// The token the server made at start (read from its file under the home).
    token: String,
}

impl Server {
    fn start(home: &Path) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vwf"));
        cmd.arg("--home").arg(home).args(["serve", "--bind", "127.0.0.1:0"]);
        for var in ["VWF_HOME", "HERMES_HOME", "VWF_NOW", "VWF_WEB_DIR"] {
            cmd.env_remove(var);
        }
        let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start vwf serve");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read the server's first line");
        let Some(url) = line.split(|c: char| c.is_whitespace() || c == '"').find(|w| w.starts_with("http://")) else {
            let _ = child.kill();
            panic!("no URL on the server's first line: {line:?}")
        };
        let base = url.trim_end_matches('/').to_string();
        let port = base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port in the URL");
        let token = common::server::made_token(home, port).expect("the token the server wrote");
        let client = Client::builder().no_proxy().timeout(Duration::from_secs(60)).build().expect("http client");
        Server { child, _stdout: stdout, base, client, token }
    }

    fn send(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{PREFIX}{path}", self.base);
        let req = match method {
            "GET" => self.client.get(url),
            _ => self.client.post(url).json(&body.unwrap_or_else(|| json!({}))),
        };
        let res = req.bearer_auth(&self.token).send().unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = res.status().as_u16();
        let text = res.text().expect("response body");
        let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {path}: not JSON ({e}): {text}"));
        (status, body)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_api(server: &Server, name: &str, graph: &Value) -> Value {
    let (status, verdict) = server.send("POST", &format!("/designs/{name}/validate"), Some(json!({"graph": graph})));
    assert_eq!((status, &verdict["errors"]), (200, &json!([])), "{name}: API validation: {verdict}");
    let (status, saved) = server.send("POST", &format!("/designs/{name}"), Some(json!({"graph": graph})));
    assert_eq!((status, &saved["ok"]), (200, &json!(true)), "{name}: API save: {saved}");
    let (_, loaded) = server.send("GET", &format!("/designs/{name}"), None);
    assert_eq!(loaded["graph"], *graph, "{name}: the API keeps the canvas graph exactly");

    let (status, mut run) = server.send("POST", &format!("/designs/{name}/run"), Some(json!({"input": input_of(graph)})));
    assert_eq!(status, 200, "{name}: API run: {run}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let id = run["run_id"].as_str().unwrap_or_else(|| panic!("{name}: no run_id: {run}")).to_string();
        let respond = |body: Value| {
            let (status, run) = server.send("POST", &format!("/runs/{id}/respond"), Some(body));
            assert_eq!(status, 200, "{name}: respond: {run}");
            run
        };
        run = match next_move(name, &run) {
            Next::Finished => return run,
            Next::Answer { node, answer } => respond(json!({"node": node, "answer": answer})),
            Next::Output { node, text } => respond(json!({"node": node, "output": text})),
            // A wait is bounded (an hour at most; seconds in these fixtures): reading the run
            // resumes it once it is due, so follow it until its status moves on.
            Next::Wait => {
                std::thread::sleep(Duration::from_millis(200));
                server.send("GET", &format!("/runs/{id}"), None).1
            }
        };
    }
    panic!("{name}: the API run never finished: {run}")
}

// ---- comparing the two ----

/// What must match between two runs of one design: statuses, steps, skips, outputs, deliveries;
/// with the run id, wall-clock fields (`*_at`) and wait steps' resume times left out.
fn comparable(graph: &Value, run: &Value) -> Value {
    let id = run["run_id"].as_str().unwrap_or_default().to_string();
    let waits: Vec<&str> =
        graph["nodes"].as_array().into_iter().flatten().filter(|n| n["type"] == "wait").filter_map(|n| n["id"].as_str()).collect();
    let mut outputs = run["outputs"].clone();
    if let Some(map) = outputs.as_object_mut() {
        for w in &waits {
            map.remove(*w);
        }
    }
    let steps: Vec<Value> =
        run["steps"].as_array().into_iter().flatten().map(|s| json!([s["node"], s["status"], s["attempts"], s["error"]])).collect();
    let deliveries: Vec<Value> =
        run["deliveries"].as_array().into_iter().flatten().map(|d| json!([d["node"], d["target"], d["ok"]])).collect();
    let mut v = json!({
        "status": run["status"], "error": run["error"], "failed_node": run["failed_node"], "skipped": run["skipped"],
        "steps": steps, "outputs": outputs, "deliveries": deliveries,
    });
    drop_times(&mut v);
    let text = v.to_string().replace(&id, "<run_id>");
    serde_json::from_str(&text).expect("JSON stays JSON")
}

fn drop_times(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !k.ends_with("_at"));
            map.values_mut().for_each(drop_times);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_times),
        _ => {}
    }
}

#[test]
fn the_canvas_fixtures_are_committed() {
    let names: Vec<String> = fixtures().into_iter().map(|(n, _)| n).collect();
    for wanted in FROM_THE_CANVAS {
        assert!(
            names.iter().any(|n| n == wanted),
            "tests/fixtures/gui/{wanted}.json is missing: run scripts/e2e (tests/e2e/designer.test.mjs writes it) and commit it"
        );
    }
}

#[test]
fn every_gui_fixture_validates_saves_and_runs_through_the_cli_and_the_api() {
    let all = fixtures();
    assert!(!all.is_empty(), "no fixtures in {}", fixtures_dir().display());
    let cli_home = Home::new();
    let api_home = Home::new();
    let server = Server::start(api_home.path());
    for (name, graph) in &all {
        let by_cli = run_cli(&cli_home, name, graph);
        let by_api = run_api(&server, name, graph);
        assert_eq!(by_cli["status"], "done", "{name}: the CLI run: {by_cli}");
        assert_eq!(by_api["status"], "done", "{name}: the API run: {by_api}");
        assert_eq!(by_cli["design"], name.as_str());
        assert_eq!(comparable(graph, &by_cli), comparable(graph, &by_api), "{name}: one contract, the same run on both surfaces");
        // Every node the canvas drew that the engine runs was settled (notes never run).
        let runnable = graph["nodes"].as_array().into_iter().flatten().filter(|n| n["type"] != "note" && n["type"] != "trigger").count();
        let settled =
            by_cli["steps"].as_array().map_or(0, |s| s.iter().filter(|s| !s["node"].as_str().unwrap_or("").contains('#')).count())
                + by_cli["skipped"].as_array().map_or(0, Vec::len);
        assert_eq!(settled, runnable, "{name}: every step settled: {by_cli}");
    }
}

#[test]
fn the_built_design_answers_its_gate_and_delivers_the_command_output() {
    let graph = fixtures().into_iter().find(|(n, _)| n == "designer-built").map(|(_, g)| g).expect("designer-built fixture");
    let home = Home::new();
    let run = run_cli(&home, "designer-built", &graph);
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["command1"]["stdout"], "hello\n", "stdout byte for byte: {run}");
    assert_eq!(run["outputs"]["command1"]["text"], "hello", "the text view drops trailing newlines: {run}");
    assert_eq!(run["outputs"]["condition1"]["value"], true, "{run}");
    assert_eq!(run["outputs"]["approval1"]["answer"], "send", "the first option: {run}");
    assert_eq!(run["outputs"]["output1"]["text"], "Command said: hello", "{run}");
}
