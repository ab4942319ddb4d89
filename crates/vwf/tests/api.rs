//! The HTTP API (SPEC §13, §17) as a client meets it: the real `vwf serve` in a child process on
//! a free loopback port, spoken to over a real socket with a blocking HTTP client.
//!
//! The server prints its address on its first line of standard output (`--bind 127.0.0.1:0`
//! lets the system choose the port); tests wait for that line, never for a delay. Every answer
//! must be JSON, and every error answer `{ok:false, error}`. The main shapes are snapshotted with
//! run ids, timestamps, ports and the home directory scrubbed. Refused requests are checked to
//! leave every file of the home untouched.

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::peer::Peer;
use common::server::{Options, PREFIX, Server, TOKEN_VAR, gated, send, vwf, write_config};
use common::{Home, failing, snapshot};
use serde_json::{Value, json};

/// Snapshots `{status, body}` with run ids, timestamps, the port and the home scrubbed.
fn snap(name: &str, home: &Home, server: &Server, status: u16, body: &Value) {
    let mut body = body.clone();
    let mut ids: Vec<String> = std::fs::read_dir(home.runs_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(String::from))
        .collect();
    ids.sort();
    for id in &ids {
        scrub(&mut body, id, "[run_id]");
    }
    scrub(&mut body, &home.path().to_string_lossy(), "[home]");
    scrub(&mut body, &format!(":{}", server.port), ":[port]");
    redact_times(&mut body);
    insta::assert_json_snapshot!(name, json!({"status": status, "body": body}));
}

fn scrub(v: &mut Value, needle: &str, with: &str) {
    match v {
        Value::String(s) if s.contains(needle) => *s = s.replace(needle, with),
        Value::Array(items) => items.iter_mut().for_each(|x| scrub(x, needle, with)),
        Value::Object(m) => m.values_mut().for_each(|x| scrub(x, needle, with)),
        _ => {}
    }
}

/// Every RFC 3339 timestamp becomes `[ts]`.
fn redact_times(v: &mut Value) {
    match v {
        Value::String(s) if chrono::DateTime::parse_from_rfc3339(s).is_ok() => *s = "[ts]".into(),
        Value::Array(items) => items.iter_mut().for_each(redact_times),
        Value::Object(m) => m.values_mut().for_each(redact_times),
        _ => {}
    }
}

// ---- designs used below ----

/// trigger → output: finishes `done` at once.
fn hello() -> Value {
    json!({
        "description": "says hello",
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "say", "type": "output", "template": "hello from {{run.design}}"}
        ],
        "edges": [{"from": "start", "to": "say"}]
    })
}

/// trigger → agent step → output: parks `awaiting_agent` without a backend.
fn drafted() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "draft", "type": "agent", "prompt": "Write one line about {{trigger.topic}}"},
            {"id": "out", "type": "output"}
        ],
        "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "out"}]
    })
}

/// Started by the event `ping`.
fn listener() -> Value {
    json!({
        "nodes": [
            {"id": "on-ping", "type": "trigger", "mode": "event", "sources": ["ping"]},
            {"id": "echo", "type": "output", "template": "got {{trigger.payload.n}}"}
        ],
        "edges": [{"from": "on-ping", "to": "echo"}]
    })
}

// ---- the route table ----

/// Every route of SPEC §13, plus the OpenAPI document.
const SECTION_13: &[(&str, &str)] = &[
    ("GET", "/models"),
    ("GET", "/profiles"),
    ("GET", "/channels"),
    ("GET", "/designs"),
    ("GET", "/templates"),
    ("GET", "/designs/{name}"),
    ("POST", "/designs/{name}"),
    ("POST", "/designs/{name}/validate"),
    ("POST", "/designs/{name}/run"),
    ("GET", "/schedules"),
    ("POST", "/designs/{name}/schedule"),
    ("POST", "/schedules/{job_id}/{action}"),
    ("GET", "/runs"),
    ("GET", "/runs/{run_id}"),
    ("POST", "/runs/{run_id}/respond"),
    ("POST", "/runs/{run_id}/retry"),
    ("POST", "/events/{name}"),
    ("GET", "/openapi.json"),
    // Beyond §13: a dry run of a schedule object, so the dashboard previews the human line
    // without holding the rule itself.
    ("POST", "/schedules/preview"),
    // Beyond §13: metrics for Prometheus (the text format, not JSON).
    ("GET", "/metrics"),
    // Beyond §13: deleting a design (its runs stay readable, its schedule is paused).
    ("DELETE", "/designs/{name}"),
    // Beyond §13: the design model the canvas and the schedules page read.
    ("GET", "/schema"),
    // Beyond §13: importing an agent.json document, as `vwf import` does.
    ("POST", "/import"),
    // Beyond §13: a design's recorded versions, one of them, a diff of two, a restore.
    ("GET", "/designs/{name}/versions"),
    ("GET", "/designs/{name}/versions/{version}"),
    ("GET", "/designs/{name}/diff"),
    ("POST", "/designs/{name}/restore"),
    // Beyond §13: pinning a step's output for test runs.
    ("POST", "/designs/{name}/pin"),
    // Beyond §13: turning a design's automatic trigger on and off (imports arrive disabled).
    ("POST", "/designs/{name}/enable"),
    ("POST", "/designs/{name}/disable"),
    // Beyond §13: what the runs of a period did (runs, failures, durations, tokens, cost).
    ("GET", "/stats"),
];

#[test]
fn openapi_lists_every_route_and_the_server_answers_each() {
    let home = Home::new();
    let server = Server::start(&home);
    let (status, doc) = server.get("/openapi.json");
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], PREFIX);
    let mut listed = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has no summary");
            for status in ["200", "400", "403"] {
                assert!(op["responses"][status].is_object(), "{method} {path} does not describe its {status} answer");
            }
            listed.insert((method.to_ascii_uppercase(), path.clone()));
        }
    }
    let expected: BTreeSet<(String, String)> = SECTION_13.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    assert_eq!(listed, expected, "the OpenAPI document lists exactly the routes of §13");

    // Every listed route is mounted: it answers its method with something other than
    // "no route" or "method not allowed".
    for (method, path) in &listed {
        let concrete = path
            .replace("{name}", "nothing-here")
            .replace("{run_id}", "0123456789ab")
            .replace("{job_id}", "wf-nothing-here")
            .replace("{action}", "pause");
        if path == "/metrics" {
            let res = server.client.get(server.url(path)).send().expect("scrape");
            assert_eq!(res.status().as_u16(), 200, "{method} {path}");
            let kind = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            assert!(kind.starts_with("text/plain"), "{method} {path}: {kind}");
            continue;
        }
        let (status, body) = match method.as_str() {
            "GET" => server.get(&concrete),
            _ => server.post(&concrete, json!({})),
        };
        assert_ne!(status, 405, "{method} {path}: {body}");
        let error = body["error"].as_str().unwrap_or("");
        assert!(!error.starts_with("no route"), "{method} {path} is not mounted: {body}");
    }
    let mut doc = doc;
    doc["info"]["version"] = json!("[version]");
    // The time zone list is the IANA database's: checked for a few names, then summarised.
    for branch in doc["components"]["schemas"]["ScheduleRequest"]["oneOf"].as_array_mut().expect("schedule branches") {
        let zones = &mut branch["properties"]["tz"]["anyOf"][1]["enum"];
        let names: Vec<&str> = zones.as_array().expect("tz enum").iter().filter_map(Value::as_str).collect();
        assert!(names.len() > 400 && ["UTC", "Z", "Europe/Berlin", "America/New_York"].iter().all(|z| names.contains(z)), "{names:?}");
        *zones = json!("[IANA time zones, UTC and Z]");
    }
    insta::assert_json_snapshot!("openapi", doc);
}

// ---- designs ----

#[test]
fn designs_save_load_list_validate() {
    let home = Home::new();
    let server = Server::start(&home);

    let (s, b) = server.get("/designs");
    snap("designs_empty", &home, &server, s, &b);

    let (s, b) = server.post("/designs/hello", json!({"graph": hello()}));
    snap("design_save_ok", &home, &server, s, &b);
    assert!(home.path().join("workflow-designs/hello.json").is_file());

    let (s, b) = server.get("/designs/hello");
    snap("design_load_ok", &home, &server, s, &b);

    let (s, b) = server.get("/designs");
    snap("designs_listed", &home, &server, s, &b);

    // A design problem is a 200 whose body describes it; nothing is saved.
    let broken = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "x", "type": "teleport"}], "edges": [{"from": "start", "to": "ghost"}]});
    let before = snapshot(&home);
    let (s, b) = server.post("/designs/broken", json!({"graph": broken}));
    snap("design_save_refused", &home, &server, s, &b);
    assert_eq!(snapshot(&home), before);

    let (s, b) = server.post("/designs/hello", json!({}));
    snap("design_save_missing_graph", &home, &server, s, &b);

    let (s, b) = server.get("/designs/nothing-here");
    snap("design_load_missing", &home, &server, s, &b);

    let (s, b) = server.post_empty("/designs/hello/validate");
    snap("design_validate_saved", &home, &server, s, &b);

    let (s, b) = server.post("/designs/draft/validate", json!({"graph": broken}));
    snap("design_validate_graph", &home, &server, s, &b);

    let (s, b) = server.post_empty("/designs/nothing-here/validate");
    assert_eq!(s, 404, "{b}");
}

#[test]
fn validate_with_scope_answers_what_each_node_may_name() {
    let home = Home::new();
    let server = Server::start(&home);
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "fetch", "type": "command", "argv": ["echo", "[1]"]},
            {"id": "each", "type": "loop", "over": "{{nodes.fetch}}"},
            {"id": "body", "type": "output", "template": "{{item}}"},
            {"id": "gate", "type": "approval", "question": "Ship {{nodes.body}}?"}
        ],
        "edges": [{"from": "start", "to": "fetch"}, {"from": "fetch", "to": "each"}, {"from": "each", "to": "body", "label": "each"}, {"from": "each", "to": "gate", "label": "done"}]
    });
    let (s, b) = server.post("/designs/draft/validate?scope=1", json!({"graph": graph}));
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["scopes"], serde_json::to_value(vwf_core::validate::scopes(&graph).unwrap()).unwrap(), "the core's scopes, as they are");
    assert_eq!(b["scopes"]["body"], json!({"nodes": ["start", "fetch"], "loop": "each"}));
    // The question names a step inside the loop's body, which nothing after the loop can read.
    assert!(b["errors"].as_array().unwrap().iter().any(|e| e["node"] == "gate" && e["field"] == "question"), "{b}");
    let (s, b) = server.post("/designs/draft/validate", json!({"graph": graph}));
    assert!(s == 200 && b.get("scopes").is_none(), "scopes only when asked: {b}");
    server.save("hello", hello());
    let (s, b) = server.post_empty("/designs/hello/validate?scope=yes");
    assert_eq!((s, &b["scopes"]["say"]["nodes"]), (200, &json!(["start"])), "{b}");
    let (s, b) = server.post_empty("/designs/hello/validate?scope=maybe");
    assert_eq!(s, 400, "{b}");
}

#[test]
fn run_without_waiting_answers_at_once_and_the_run_goes_on() {
    let home = Home::new();
    let server = Server::start(&home);
    let go = home.path().join("go");
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "hold", "type": "command", "argv": ["sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.02; done; printf released", "sh", go.to_str().unwrap()]},
            {"id": "gate", "type": "approval", "question": "Ship {{nodes.hold}} for {{trigger.who}}?", "options": ["ship", "stop"]}
        ],
        "edges": [{"from": "start", "to": "hold"}, {"from": "hold", "to": "gate"}]
    });
    server.save("held", graph);
    // The answer comes while the first step is still held: the run is saved and running.
    let (s, b) = server.post("/designs/held/run", json!({"input": {"who": "ops"}, "wait": false}));
    assert_eq!((s, &b["status"]), (200, &json!("running")), "{b}");
    let id = b["run_id"].as_str().unwrap().to_string();
    // Read while it moves, until `until` holds of it (bounded: the step is a real process).
    let read_until = |until: &dyn Fn(&Value) -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (_, b) = server.get(&format!("/runs/{id}"));
            if until(&b) || std::time::Instant::now() > deadline {
                break b;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let held = read_until(&|b| b["steps"][0]["status"] == "running");
    assert_eq!((&held["status"], &held["steps"][0]["node"]), (&json!("running"), &json!("hold")), "{held}");
    std::fs::write(&go, "").unwrap();
    let parked = read_until(&|b| b["status"] != "running");
    assert_eq!(parked["status"], "awaiting_approval", "{parked}");
    assert_eq!(parked["pending"]["question"], "Ship released for ops?");
    assert_eq!(parked["pending"]["outputs"], json!({"hold": "released", "trigger": "{\"who\":\"ops\"}"}));
    // Refusals and bad requests answer as a waiting run does.
    let (s, b) = server.post("/designs/nothing-here/run", json!({"wait": false}));
    assert_eq!(s, 404, "{b}");
    let (s, b) = server.post("/designs/held/run", json!({"wait": "no"}));
    assert_eq!(s, 400, "{b}");
}

#[test]
fn templates_come_from_the_examples_directory() {
    let home = Home::new();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tiny.designer.json"), hello().to_string()).expect("write template");
    std::fs::write(dir.path().join("notes.txt"), "not a template").expect("write");
    let server =
        Server::start_with(&home, Options { env: vec![("VWF_EXAMPLES_DIR", dir.path().display().to_string())], ..Options::default() });
    let (s, b) = server.get("/templates");
    snap("templates", &home, &server, s, &b);
    drop(server);

    // The repository's own templates: every examples/*.designer.json, by name.
    let server = Server::start(&home);
    let (s, b) = server.get("/templates");
    assert_eq!(s, 200);
    let served: BTreeSet<String> =
        b["templates"].as_array().expect("templates").iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    let files: BTreeSet<String> = std::fs::read_dir(common::examples_dir())
        .expect("examples dir")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".designer.json").map(String::from))
        .collect();
    assert!(files.len() >= 4, "at least four templates ship: {files:?}");
    assert_eq!(served, files);
    for t in b["templates"].as_array().unwrap() {
        assert!(t["graph"]["nodes"].is_array() && t["description"].is_string(), "{t}");
    }
}

#[test]
fn a_design_named_templates_is_saved_loaded_and_run_over_http() {
    let home = Home::new();
    let server = Server::start(&home);
    let (_, list) = server.get("/templates");
    assert!(list["templates"].as_array().is_some_and(|t| t.len() >= 4), "{list}");

    // No design of that name: the old path still answers the template list.
    assert_eq!(server.get("/designs/templates"), (200, list.clone()));

    // Saving one takes the name over: the old path serves the design, for every design route.
    let (s, b) = server.post("/designs/templates", json!({"graph": hello()}));
    assert_eq!((s, &b["ok"]), (200, &json!(true)), "{b}");
    assert!(home.path().join("workflow-designs/templates.json").is_file());
    let (s, b) = server.get("/designs/templates");
    assert_eq!((s, &b["graph"]["description"]), (200, &json!("says hello")), "{b}");
    assert!(b.get("templates").is_none(), "{b}");
    assert_eq!(server.get("/designs"), (200, json!({"ok": true, "designs": ["templates"], "disabled": []})));
    let (s, b) = server.post_empty("/designs/templates/validate");
    assert_eq!((s, &b["ok"]), (200, &json!(true)), "{b}");
    let (s, b) = server.post_empty("/designs/templates/run");
    assert_eq!((s, &b["status"], &b["design"]), (200, &json!("done"), &json!("templates")), "{b}");
    let mut changed = hello();
    changed["description"] = json!("changed");
    server.save("templates", changed);
    assert_eq!(server.get("/designs/templates").1["graph"]["description"], json!("changed"));

    // The list itself stays at /templates.
    assert_eq!(server.get("/templates"), (200, list));
}

/// The dashboard's "new design" forms send `create: true`. A taken name is refused with 409 and
/// the home stays byte for byte (the design, its schedule); every template and a blank graph
/// are tried over every saved name; of many clients racing to create one name exactly one wins.
#[test]
fn creating_a_design_never_replaces_one() {
    let home = Home::new();
    let server = Server::start(&home);
    let names = ["brief", "a.b_c-1", "templates", "Z9", &"n".repeat(64)];
    for name in names {
        server.save(name, gated());
    }
    let (s, b) = server.post("/designs/brief/schedule", json!({"preset": "daily", "time": "09:00", "paused": true}));
    assert_eq!(s, 200, "{b}");
    let (_, templates) = server.get("/templates");
    let mut graphs: Vec<Value> = templates["templates"].as_array().expect("templates").iter().map(|t| t["graph"].clone()).collect();
    graphs.extend([hello(), json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}], "edges": []})]);
    assert!(graphs.len() >= 6);
    let before = snapshot(&home);
    for name in names {
        for graph in &graphs {
            let (s, b) = server.post(&format!("/designs/{name}"), json!({"graph": graph, "create": true}));
            assert_eq!(s, 409, "{name}: {b}");
            assert_eq!(b["error"], format!("design {name:?} already exists"), "{b}");
        }
    }
    assert!(snapshot(&home) == before, "a refused create wrote something");

    // A create flag that is not a boolean is a bad request; nothing is written for it.
    for flag in [json!("yes"), json!(1), json!([true]), json!({})] {
        for name in ["brief", "fresh"] {
            let (s, b) = server.post(&format!("/designs/{name}"), json!({"graph": hello(), "create": flag}));
            assert_eq!(s, 400, "{flag}: {b}");
        }
    }
    assert!(snapshot(&home) == before);

    // A new name is created once; a plain save still replaces; `create: false` is a plain save.
    let (s, b) = server.post("/designs/fresh", json!({"graph": hello(), "create": true}));
    assert_eq!((s, &b["ok"]), (200, &json!(true)), "{b}");
    assert_eq!(server.get("/designs/fresh").1["graph"]["description"], json!("says hello"));
    assert_eq!(server.post("/designs/fresh", json!({"graph": gated(), "create": true})).0, 409);
    for create in [json!(false), Value::Null] {
        let (s, b) = server.post("/designs/fresh", json!({"graph": gated(), "create": create}));
        assert_eq!((s, &b["ok"]), (200, &json!(true)), "{b}");
    }
    // A design problem is still a 200 describing it, whatever the flag.
    let (s, b) =
        server.post("/designs/broken", json!({"graph": {"nodes": [{"id": "x", "type": "teleport"}], "edges": []}, "create": true}));
    assert_eq!((s, &b["ok"]), (200, &json!(false)), "{b}");

    // Racing clients: exactly one creates the design, and the file is that one's graph.
    let answers: Vec<(u16, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let server = &server;
                scope.spawn(move || {
                    let mut graph = hello();
                    graph["description"] = json!(format!("client {i}"));
                    (server.post("/designs/raced", json!({"graph": graph, "create": true})).0, i)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("client thread")).collect()
    });
    let winners: Vec<usize> = answers.iter().filter(|(s, _)| *s == 200).map(|(_, i)| *i).collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    assert!(answers.iter().all(|(s, _)| *s == 200 || *s == 409), "{answers:?}");
    assert_eq!(server.get("/designs/raced").1["graph"]["description"], json!(format!("client {}", winners[0])));
    let strays: Vec<_> = home.files().into_iter().filter(|f| f.to_string_lossy().ends_with(".tmp")).collect();
    assert!(strays.is_empty(), "{strays:?}");
}

// ---- runs ----

#[test]
fn run_respond_retry_and_read_runs() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    server.save("gated", gated());
    server.save("drafted", drafted());
    server.save("failing", failing());

    let (s, b) = server.post("/designs/hello/run", json!({"input": {"who": "world"}}));
    snap("run_done", &home, &server, s, &b);
    let (s, b) = server.post_empty("/designs/hello/run");
    assert_eq!((s, &b["status"]), (200, &json!("done")), "a run without a body: {b}");

    let (s, b) = server.post_empty("/designs/nothing-here/run");
    snap("run_unknown_design", &home, &server, s, &b);

    // Parked at a gate: a wrong answer is 400, a wrong node 404, the right answer finishes it,
    // a second answer is 409.
    let (s, b) = server.post_empty("/designs/gated/run");
    snap("run_parked_at_gate", &home, &server, s, &b);
    let id = b["run_id"].as_str().unwrap().to_string();
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "maybe"}));
    snap("respond_answer_not_in_options", &home, &server, s, &b);
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "ghost", "answer": "send"}));
    assert_eq!(s, 404, "{b}");
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"answer": "send"}));
    assert_eq!(s, 400, "missing node: {b}");
    // A node that can name no step instance is refused as it is read, whatever it is; one that
    // could (a child's question) but does not is not found. Neither answers the gate.
    for bad in ["a b", "gate#01", "gate#", "#1", "/gate", "gate//x", "gate#1234567890", "gate#-1"] {
        let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": bad, "answer": "send"}));
        assert_eq!(s, 400, "{bad:?}: {b}");
    }
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "ghost/gate", "answer": "send"}));
    assert_eq!(s, 404, "{b}");
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "send", "run_id": "ffffffffffff"}));
    snap("respond_answer_ok", &home, &server, s, &b);
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "send"}));
    snap("respond_not_waiting", &home, &server, s, &b);
    let (s, b) = server.post_empty(&format!("/runs/{id}/retry"));
    snap("retry_not_failed", &home, &server, s, &b);

    // An agent step without a backend: generating is 503 and leaves it parked; pasting works.
    let (s, b) = server.post("/designs/drafted/run", json!({"input": {"topic": "tea"}}));
    snap("run_parked_at_agent", &home, &server, s, &b);
    let id = b["run_id"].as_str().unwrap().to_string();
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "draft", "agent_generate": true}));
    snap("respond_agent_generate_without_backend", &home, &server, s, &b);
    let (s, b) = server.get(&format!("/runs/{id}"));
    assert_eq!((s, &b["status"]), (200, &json!("awaiting_agent")), "{b}");
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "draft", "output": "Tea is calm."}));
    assert_eq!((s, &b["status"], &b["outputs"]["out"]["text"]), (200, &json!("done"), &json!("Tea is calm.")), "{b}");

    // A failed run: 200 with the failure; retry re-runs the failed step (and fails again).
    let (s, b) = server.post_empty("/designs/failing/run");
    snap("run_failed", &home, &server, s, &b);
    let id = b["run_id"].as_str().unwrap().to_string();
    let history = |id: &str| common::run_file(&home, id)["history"].as_array().map_or(0, Vec::len);
    let before = history(&id);
    let (s, b) = server.post_empty(&format!("/runs/{id}/retry"));
    assert_eq!((s, &b["status"], &b["failed_node"]), (200, &json!("failed"), &json!("boom")), "{b}");
    assert!(history(&id) > before, "the retry is in the run's history");

    let (s, b) = server.get(&format!("/runs/{id}"));
    assert_eq!((s, &b["run_id"]), (200, &json!(id)));
    assert!(b.get("plan").is_none() && b.get("history").is_none(), "the result shape, not the file: {b}");
    let (s, b) = server.get("/runs/0123456789ab");
    snap("run_missing", &home, &server, s, &b);
    let (s, b) = server.get("/runs/not-an-id");
    snap("run_bad_id", &home, &server, s, &b);
    let (s, b) = server.post_empty("/runs/0123456789ab/retry");
    assert_eq!(s, 404, "{b}");
    let (s, b) = server.post("/runs/0123456789ab/respond", json!({"node": "gate", "answer": "send"}));
    assert_eq!(s, 404, "{b}");
}

/// `POST /runs/{id}/retry` with `{"from": "failed"}` resumes with the plan the run started
/// with; `{"from": "start"}` starts the design as saved now, linked by `retry_of`.
#[test]
fn retry_from_the_failed_step_or_from_the_start() {
    let home = Home::new();
    let server = Server::start(&home);
    let file = home.path().join("note.txt");
    server.save("reads", common::reads_file(&file, "v1"));
    let (s, failed) = server.post_empty("/designs/reads/run");
    assert_eq!((s, &failed["failed_node"]), (200, &json!("read")), "{failed}");
    let id = failed["run_id"].as_str().unwrap().to_string();
    server.save("reads", common::reads_file(&file, "v2"));
    std::fs::write(&file, "hello").unwrap();

    for bad in [json!({"from": "middle"}), json!({"from": 1})] {
        let before = snapshot(&home);
        let (s, b) = server.post(&format!("/runs/{id}/retry"), bad.clone());
        assert_eq!((s, &b["ok"]), (400, &json!(false)), "{bad}: {b}");
        assert!(b["error"].as_str().unwrap().contains("\"failed\" or \"start\""), "{b}");
        assert!(snapshot(&home) == before, "a refused retry wrote something");
    }
    let (s, resumed) = server.post(&format!("/runs/{id}/retry"), json!({"from": "failed"}));
    assert_eq!((s, &resumed["outputs"]["say"]["text"], &resumed["run_id"]), (200, &json!("v1 hello"), &json!(id)), "{resumed}");
    let (s, fresh) = server.post(&format!("/runs/{id}/retry"), json!({"from": "start"}));
    assert_eq!((s, &fresh["outputs"]["say"]["text"], &fresh["retry_of"]), (200, &json!("v2 hello"), &json!(id)), "{fresh}");
    snap("retry_from_start", &home, &server, s, &fresh);
    let (_, old) = server.get(&format!("/runs/{id}"));
    assert_eq!(old, resumed, "the old run is left as it was");
    let (s, parked) = server.post_empty("/designs/reads/run");
    assert_eq!((s, &parked["status"]), (200, &json!("done")));
    server.save("gated", gated());
    let (_, gate) = server.post_empty("/designs/gated/run");
    let (s, b) = server.post(&format!("/runs/{}/retry", gate["run_id"].as_str().unwrap()), json!({"from": "start"}));
    assert_eq!((s, &b["ok"]), (409, &json!(false)), "a parked run: {b}");
    let (s, b) = server.post("/runs/0123456789ab/retry", json!({"from": "start"}));
    assert_eq!(s, 404, "{b}");
}

#[test]
fn runs_listing_newest_first_with_unreadable_entries() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let first = server.run_id("hello", json!({"who": "a"}));
    let second = server.run_id("hello", json!({"who": "b"}));
    std::fs::write(home.runs_dir().join(format!("{first}.json")), "{ not json").expect("damage a run file");

    let (s, b) = server.get("/runs");
    assert_eq!(s, 200);
    let runs = b["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["run_id"], json!(second), "newest first");
    assert_eq!(runs[1]["run_id"], json!(first));
    snap("runs_listed", &home, &server, s, &b);

    let (s, b) = server.get("/runs?limit=1");
    assert_eq!((s, b["runs"].as_array().map(Vec::len)), (200, Some(1)));
    for bad in ["0", "abc", "-1", "100000"] {
        let (s, b) = server.get(&format!("/runs?limit={bad}"));
        assert_eq!(s, 400, "limit={bad}: {b}");
    }
}

#[test]
fn runs_holding_json_that_is_not_a_run_are_unreadable_entries() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let docs = [json!([]), json!({}), json!(null), json!({"run_id": "x", "status": "done"})];
    let ids: Vec<String> = docs.iter().map(|_| server.run_id("hello", json!({"who": "a"}))).collect();
    for (id, doc) in ids.iter().zip(&docs) {
        std::fs::write(home.runs_dir().join(format!("{id}.json")), doc.to_string()).expect("overwrite a run file");
    }
    let (s, b) = server.get("/runs");
    assert_eq!(s, 200, "{b}");
    let runs = b["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), docs.len(), "{b}");
    for entry in runs {
        let id = entry["run_id"].as_str().expect("run_id");
        assert_eq!(entry.as_object().map(|o| o.len()), Some(3), "{{ok, run_id, error}}: {entry}");
        assert_eq!(entry["ok"], false, "{entry}");
        assert!(entry["error"].as_str().expect("error").contains(id), "{entry}");
        let (s, one) = server.get(&format!("/runs/{id}"));
        assert_eq!(s, 500, "{one}");
    }
}

#[test]
fn two_answers_racing_for_one_gate_one_wins() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("gated", gated());
    let id = server.run_id("gated", Value::Null);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let racers: Vec<_> = ["send", "skip"]
            .iter()
            .map(|answer| {
                let server = &server;
                let id = &id;
                scope.spawn(move || server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": answer})).0)
            })
            .collect();
        racers.into_iter().map(|r| r.join().expect("racer")).collect()
    });
    let mut sorted = statuses.clone();
    sorted.sort();
    assert_eq!(sorted, [200, 409], "{statuses:?}");
}

// ---- events ----

#[test]
fn events_start_listening_designs() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("on-ping", listener());
    server.save("hello", hello());
    let (s, b) = server.post("/events/ping", json!({"payload": {"n": 7}}));
    snap("event_emitted", &home, &server, s, &b);
    let (s, b) = server.post_empty("/events/nobody.listens");
    assert_eq!((s, &b["runs"]), (200, &json!([])), "{b}");
    let (s, b) = server.post_empty("/events/bad%20name");
    snap("event_bad_name", &home, &server, s, &b);
}

#[test]
fn an_event_cooldown_out_of_range_is_refused_at_save_and_never_a_500_at_post_events() {
    let home = Home::new();
    let server = Server::start(&home);
    let with_cooldown = |cooldown: Value| {
        let mut design = listener();
        design["nodes"][0]["cooldown_seconds"] = cooldown;
        design
    };
    let bad = [
        json!(u64::MAX),
        json!(i64::MAX),
        json!(1u64 << 62),
        json!(vwf_core::limits::EVENT_COOLDOWN_SECONDS.1 + 1),
        json!(-1),
        json!(1e300),
    ];
    for cooldown in &bad {
        let (s, b) = server.post("/designs/calm", json!({"graph": with_cooldown(cooldown.clone())}));
        assert_eq!((s, &b["ok"]), (200, &json!(false)), "{cooldown}: a design problem is a 200 whose body describes it: {b}");
        assert!(b["errors"].as_array().is_some_and(|e| e.iter().any(|i| i["field"] == "cooldown_seconds")), "{b}");
    }
    assert!(!home.path().join("workflow-designs/calm.json").exists(), "a refused save writes nothing");
    // Designs saved before the bound existed: the event skips them, naming the field.
    std::fs::create_dir_all(home.path().join("workflow-designs")).expect("designs folder");
    for (i, cooldown) in bad.iter().enumerate() {
        let path = home.path().join(format!("workflow-designs/old-{i}.json"));
        std::fs::write(path, with_cooldown(cooldown.clone()).to_string()).expect("write an old design");
    }
    for _ in 0..2 {
        let (s, b) = server.post("/events/ping", json!({"payload": {"n": 1}}));
        assert_eq!((s, &b["runs"]), (200, &json!([])), "{b}");
        let skipped = b["skipped"].as_array().expect("skipped");
        assert_eq!(skipped.len(), bad.len(), "{b}");
        assert!(skipped.iter().all(|e| e["reason"].as_str().is_some_and(|r| r.contains("cooldown_seconds"))), "{b}");
    }
}

// ---- schedules ----

#[test]
fn a_schedule_preview_refuses_a_cron_that_never_fires_and_reads_day_fields_as_cronie() {
    let home = Home::new();
    let server = Server::start(&home);
    for never in ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *"] {
        let (s, b) = server.post("/schedules/preview", json!({"preset": "custom", "cron": never}));
        assert_eq!((s, &b["ok"], &b["field"]), (200, &json!(false), &json!("cron")), "{never}: {b}");
        assert!(b["error"].as_str().is_some_and(|e| e.contains("never fires")), "{b}");
    }
    let (s, b) = server.post("/schedules/preview", json!({"preset": "custom", "cron": "0 9 */2 * 1"}));
    assert_eq!((s, &b["ok"]), (200, &json!(true)), "{b}");
    let next = b["next_run_at"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()).expect("next_run_at");
    use chrono::Datelike;
    assert_eq!((next.weekday(), next.day() % 2), (chrono::Weekday::Mon, 1), "a Monday that is an odd day: {b}");
}

#[test]
fn schedules_create_list_and_act() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());

    let (s, b) = server.get("/schedules");
    assert_eq!((s, &b), (200, &json!({"ok": true, "schedules": []})));

    let (s, b) = server.post("/designs/hello/schedule", json!({"preset": "daily", "time": "09:00", "tz": "Europe/Berlin"}));
    snap("schedule_created", &home, &server, s, &b);
    let job_id = b["job"]["job_id"].as_str().expect("job_id").to_string();

    let (s, b) = server.post("/designs/hello/schedule", json!({"preset": "daily", "time": "25:00"}));
    snap("schedule_bad_time", &home, &server, s, &b);
    let (s, b) = server.post("/designs/nothing-here/schedule", json!({"preset": "hourly", "minute": 5}));
    assert_eq!(s, 404, "{b}");

    let (s, b) = server.get("/schedules");
    snap("schedules_listed", &home, &server, s, &b);

    let (s, b) = server.post_empty(&format!("/schedules/{job_id}/pause"));
    assert_eq!((s, &b["job"]["paused"], &b["job"]["next_run_at"]), (200, &json!(true), &Value::Null), "{b}");
    let (s, b) = server.post_empty(&format!("/schedules/{job_id}/resume"));
    assert_eq!((s, &b["job"]["paused"]), (200, &json!(false)), "{b}");
    let (s, b) = server.post_empty(&format!("/schedules/{job_id}/run"));
    assert_eq!((s, &b["status"], &b["trigger"]["mode"]), (200, &json!("done"), &json!("schedule")), "{b}");
    let (s, b) = server.post_empty(&format!("/schedules/{job_id}/explode"));
    assert_eq!(s, 400, "{b}");
    let (s, b) = server.post_empty("/schedules/wf-nothing-here/pause");
    assert_eq!(s, 404, "{b}");
    let (s, b) = server.post_empty("/schedules/..%2Fx/pause");
    assert_eq!(s, 400, "{b}");
    let (s, b) = server.post_empty(&format!("/schedules/{job_id}/remove"));
    snap("schedule_removed", &home, &server, s, &b);
    let (s, b) = server.get("/schedules");
    assert_eq!((s, &b["schedules"]), (200, &json!([])));
}

// ---- agent backend, profiles, channels ----

/// A loopback port nobody listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[test]
fn models_profiles_and_channels() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};

    // No backend: 503; profiles and channels are empty lists.
    let home = Home::new();
    let server = Server::start(&home);
    let (s, b) = server.get("/models");
    snap("models_without_backend", &home, &server, s, &b);
    assert_eq!(
        server.get("/profiles"),
        (200, json!({"ok": true, "profiles": [], "backend": null})),
        "no backend: pages do not ask for models"
    );
    assert_eq!(server.get("/channels"), (200, json!({"ok": true, "channels": []})));
    let (s, b) = server.get("/models?refresh=maybe");
    assert_eq!(s, 400, "{b}");
    drop(server);

    // An OpenAI-compatible backend: the catalog is fetched once, then cached until refresh=1.
    let peer = Peer::start();
    peer.rt.block_on(
        Mock::given(method("GET"))
            .and(path("/v1/models"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [{"id": "llama3.2"}, {"id": "qwen3"}]})))
            .expect(2)
            .mount(&peer.server),
    );
    let home = Home::new();
    write_config(
        &home,
        &format!(
            "[agent]\nbackend = \"openai\"\nbase_url = \"{}/v1\"\ndefault_model = \"llama3.2\"\n\n\
             [profiles.writer]\nmodel = \"qwen3\"\nsystem = \"You write short briefs.\"\n\n\
             [channels.telegram]\ntoken_env = \"NO_SUCH_TOKEN_VAR\"\nhome = \"123456\"\n\n\
             [channels.discord.webhooks]\nalerts = \"NO_SUCH_URL_VAR\"\n",
            peer.server.uri()
        ),
    );
    let server = Server::start(&home);
    let (s, b) = server.get("/models");
    snap("models_listed", &home, &server, s, &b);
    assert_eq!(server.get("/models"), (200, b.clone()), "cached");
    assert_eq!(server.get("/models?refresh=1"), (200, b), "refetched");
    peer.rt.block_on(peer.server.verify());
    let (s, b) = server.get("/profiles");
    snap("profiles_listed", &home, &server, s, &b);
    let (s, b) = server.get("/channels");
    snap("channels_listed", &home, &server, s, &b);
    let text = serde_json::to_string(&b).unwrap();
    assert!(!text.contains("NO_SUCH"), "no variable names or secrets in answers: {text}");
    drop(server);

    // A backend that fails: 502 for the catalog and for generating a parked step, which stays
    // parked (the run was started while no backend was configured).
    let home = Home::new();
    let server = Server::start(&home);
    server.save("drafted", drafted());
    let id = server.run_id("drafted", json!({"topic": "tea"}));
    drop(server);
    write_config(
        &home,
        &format!("[agent]\nbackend = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\ndefault_model = \"m\"\n", closed_port()),
    );
    let server = Server::start(&home);
    let (s, b) = server.get("/models?refresh=1");
    assert_eq!(s, 502, "{b}");
    let (s, b) = server.post(&format!("/runs/{id}/respond"), json!({"node": "draft", "agent_generate": true}));
    assert_eq!(s, 502, "{b}");
    let (s, b) = server.get(&format!("/runs/{id}"));
    assert_eq!((s, &b["status"]), (200, &json!("awaiting_agent")), "{b}");
}

// ---- pages ----

#[test]
fn pages_are_served_or_a_placeholder_says_they_are_not_built() {
    let home = Home::new();
    let none = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(
        &home,
        Options { env: vec![("VWF_WEB_DIR", none.path().join("missing").display().to_string())], ..Options::default() },
    );
    for page in ["/", "/designer.html"] {
        let res = server.client.get(format!("{}{page}", server.base)).send().expect("page");
        assert_eq!(res.status().as_u16(), 200);
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        assert!(res.text().unwrap().contains("not built yet"), "{page}");
    }
    let (s, b) = send(server.client.get(format!("{}/nothing.html", server.base)));
    assert_eq!(s, 404, "{b}");
    drop(server);

    let web = tempfile::tempdir().expect("tempdir");
    std::fs::write(web.path().join("index.html"), "<!doctype html><title>dashboard</title>").unwrap();
    std::fs::write(web.path().join("designer.html"), "<!doctype html><title>canvas</title>").unwrap();
    std::fs::write(web.path().join("app.js"), "export const x = 1;").unwrap();
    std::fs::write(web.path().join(".secret.html"), "hidden").unwrap();
    let server = Server::start_with(&home, Options { env: vec![("VWF_WEB_DIR", web.path().display().to_string())], ..Options::default() });
    let get = |p: &str| {
        let res = server.client.get(format!("{}{p}", server.base)).send().expect("page");
        let kind = res.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        (res.status().as_u16(), kind, res.text().unwrap())
    };
    assert_eq!(get("/").2, "<!doctype html><title>dashboard</title>");
    assert_eq!(get("/designer.html").2, "<!doctype html><title>canvas</title>");
    let (s, kind, _) = get("/app.js");
    assert_eq!((s, kind.as_str()), (200, "text/javascript; charset=utf-8"));
    for hidden in ["/.secret.html", "/..%2Findex.html", "/sub%2F..%2F.secret.html"] {
        let (s, kind, body) = get(hidden);
        assert_eq!((s, kind.as_str()), (404, "application/json"), "{hidden}: {body}");
    }
}

// ---- status policy for malformed requests ----

#[test]
fn malformed_requests_get_json_errors() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let before = snapshot(&home);
    let url = server.url("/designs/hello");

    let (s, b) = send(server.client.post(&url).header("content-type", "application/json").body("{\"graph\": "));
    snap("malformed_json", &home, &server, s, &b);
    let (s, b) = send(server.client.post(&url).header("content-type", "text/plain").body("{\"graph\": {}}"));
    snap("wrong_content_type", &home, &server, s, &b);
    let (s, b) = send(server.client.post(&url).json(&json!(["graph"])));
    assert_eq!(s, 400, "{b}");
    let (s, b) = send(server.client.get(server.url("/no/such/route")));
    snap("unknown_route", &home, &server, s, &b);
    let (s, b) = send(server.client.put(&url));
    snap("method_not_allowed", &home, &server, s, &b);
    let (s, b) = send(server.client.put(server.url("/designs")));
    assert_eq!(s, 405, "{b}");
    // What the OpenAPI document states, the server holds: a graph is an object, flags and limits
    // are spelled exactly.
    for graph in [json!(5), json!("{}"), json!(null), json!([])] {
        let (s, b) = server.post("/designs/hello", json!({"graph": graph}));
        assert_eq!(s, 400, "save with graph {graph}: {b}");
        // A null draft is no draft (as null is absent for every optional field): the saved
        // design is checked.
        let (s, b) = server.post("/designs/hello/validate", json!({"graph": graph}));
        assert_eq!(s, if graph.is_null() { 200 } else { 400 }, "validate with graph {graph}: {b}");
    }
    for query in ["/models?refresh=", "/models?refresh=TRUE", "/models?refresh=%201", "/runs?limit=", "/runs?limit=+5", "/runs?limit=%205"]
    {
        let (s, b) = server.get(query);
        assert_eq!(s, 400, "{query}: {b}");
    }
    assert_eq!(snapshot(&home), before, "malformed requests wrote nothing");
}

// ---- security (§17) ----

#[test]
fn a_non_loopback_bind_without_a_token_is_refused() {
    let home = Home::new();
    for args in [vec!["serve", "--bind", "0.0.0.0:0"], vec!["--json", "serve", "--bind", "0.0.0.0:0"]] {
        let out = vwf(home.path()).args(&args).stdin(Stdio::null()).output().expect("run vwf serve");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(said.contains("token"), "{said}");
    }
    assert!(home.files().is_empty(), "nothing written: {:?}", home.files());

    // The same from the config's bind.
    write_config(&home, "[server]\nbind = \"0.0.0.0:0\"\n");
    let before = snapshot(&home);
    let out = vwf(home.path()).arg("serve").stdin(Stdio::null()).output().expect("run vwf serve");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(snapshot(&home), before);

    // A token variable named but not set is refused too, even on loopback.
    write_config(&home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    let before = snapshot(&home);
    let out = vwf(home.path()).args(["serve", "--bind", "127.0.0.1:0"]).stdin(Stdio::null()).output().expect("run vwf serve");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(TOKEN_VAR), "{out:?}");
    assert_eq!(snapshot(&home), before);

    // A malformed bind address is a usage error.
    let out = vwf(home.path()).args(["serve", "--bind", "not an address"]).stdin(Stdio::null()).output().expect("run vwf serve");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn a_token_guards_every_api_call() {
    let home = Home::new();
    write_config(&home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    // With a token, binding every interface is allowed.
    let server = Server::start_with(&home, Options { bind: Some("0.0.0.0:0"), token: Some("s3cret-token"), ..Options::default() });
    let base = format!("http://127.0.0.1:{}", server.port);
    server.save("hello", hello());
    let before = snapshot(&home);

    let (s, b) = send(server.bare.get(format!("{base}{PREFIX}/designs")));
    snap("token_missing", &home, &server, s, &b);
    let (s, b) = send(server.bare.get(format!("{base}{PREFIX}/designs")).bearer_auth("s3cret-tokeN"));
    assert_eq!(s, 401, "{b}");
    let (s, b) = send(server.bare.get(format!("{base}{PREFIX}/designs")).header("authorization", "Basic s3cret-token"));
    assert_eq!(s, 401, "{b}");
    let (s, b) = send(server.bare.post(format!("{base}{PREFIX}/designs/hello/run")));
    assert_eq!(s, 401, "{b}");
    let (s, b) = send(server.bare.post(format!("{base}{PREFIX}/designs/evil")).json(&json!({"graph": hello()})));
    assert_eq!(s, 401, "{b}");
    let (s, b) = send(server.bare.get(format!("{base}{PREFIX}/no/such/route")));
    assert_eq!(s, 401, "unknown API routes are guarded too: {b}");
    assert_eq!(snapshot(&home), before, "refused calls wrote nothing");

    let (s, b) = send(server.bare.get(format!("{base}{PREFIX}/designs")).bearer_auth("s3cret-token"));
    assert_eq!((s, &b["designs"]), (200, &json!(["hello"])));
    let (s, b) = server.post_empty("/designs/hello/run");
    assert_eq!((s, &b["status"]), (200, &json!("done")), "{b}");
    // Pages are navigations: a browser cannot add the token to them.
    let res = server.bare.get(format!("{base}/")).send().expect("page");
    assert_eq!(res.status().as_u16(), 200);
}

#[test]
fn a_foreign_host_is_refused_and_configured_hosts_are_allowed() {
    let home = Home::new();
    write_config(&home, "[server]\nallowed_hosts = [\"vwf.example.org\"]\n");
    let server = Server::start(&home);
    server.save("hello", hello());
    let before = snapshot(&home);

    let (s, b) = send(server.client.get(server.url("/designs")).header("host", "evil.example"));
    snap("foreign_host", &home, &server, s, &b);
    let (s, b) = send(
        server
            .client
            .post(server.url("/designs/evil"))
            .header("host", format!("evil.example:{}", server.port))
            .json(&json!({"graph": hello()})),
    );
    assert_eq!(s, 403, "{b}");
    let (s, b) = send(server.client.post(server.url("/designs/hello/run")).header("host", "127.0.0.1.evil.example"));
    assert_eq!(s, 403, "{b}");
    let res = server.client.get(format!("{}/", server.base)).header("host", "evil.example").send().expect("page");
    assert_eq!(res.status().as_u16(), 403, "pages are guarded against rebinding too");
    assert_eq!(snapshot(&home), before, "refused calls wrote nothing");

    for host in
        [format!("localhost:{}", server.port), format!("[::1]:{}", server.port), "vwf.example.org".into(), "VWF.example.org:443".into()]
    {
        let (s, b) = send(server.client.get(server.url("/designs")).header("host", host.as_str()));
        assert_eq!(s, 200, "{host}: {b}");
    }
}

/// Sends `head` (request line and headers, CRLF-separated, without the blank line) and `body` on
/// a fresh connection; the whole answer must be JSON, and an error answer `{ok:false, error}`.
fn raw_request(port: u16, head: &str, body: &str) -> (u16, Value) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let request = format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read the answer");
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no header end in {text:?}"));
    let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {head:?}"));
    assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
    let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {body:?}"));
    if status >= 400 {
        assert_eq!((&body["ok"], body["error"].is_string()), (&json!(false), true), "{body}");
    }
    (status, body)
}

#[test]
fn two_host_headers_are_refused_whatever_their_values() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};

    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let before = snapshot(&home);
    let port = server.port;
    // Loopback names (the server's own, with and without its port), a foreign name, odd spellings
    // and empty values: any two of them, in any order, on any route, read or write.
    let hosts = vec![
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        format!("localhost:{port}"),
        "LOCALHOST".to_string(),
        format!("[::1]:{port}"),
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        "127.0.0.1.evil.example".to_string(),
        String::new(),
        " ".to_string(),
    ];
    let requests = [
        ("GET", "/designs", ""),
        ("GET", "/designs/hello", ""),
        ("POST", "/designs/hello/run", ""),
        ("POST", "/designs/other", "{\"graph\": {\"nodes\": [], \"edges\": []}}"),
        ("GET", "/openapi.json", ""),
    ];
    let strategy = (proptest::sample::select(hosts.clone()), proptest::sample::select(hosts), 0..requests.len(), any::<bool>(), 0..3usize);
    let mut runner = TestRunner::new(Config { cases: 200, failure_persistence: None, ..Config::default() });
    runner
        .run(&strategy, |(first, second, which, lowercase, between)| {
            let (method, path, body) = requests[which];
            let name = if lowercase { "host" } else { "Host" };
            // The two Host lines apart or side by side, with other headers between them.
            let filler = ["X-Filler: 1"; 2][..between].join("\r\n");
            let mut lines = vec![format!("{method} {PREFIX}{path} HTTP/1.1"), format!("{name}: {first}")];
            if !filler.is_empty() {
                lines.push(filler);
            }
            lines.push(format!("{name}: {second}"));
            if !body.is_empty() {
                lines.push("Content-Type: application/json".into());
            }
            let (status, answer) = raw_request(port, &lines.join("\r\n"), body);
            prop_assert_eq!(status, 400, "{} {} with Host {:?} and {:?}: {}", method, path, first, second, answer);
            prop_assert!(answer["error"].as_str().unwrap_or("").contains("Host"), "{}", answer);
            Ok::<(), TestCaseError>(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(snapshot(&home), before, "refused requests wrote nothing");

    // One Host header still works, and pages are guarded the same way.
    let token = server.token.as_deref().expect("the token");
    let (s, b) =
        raw_request(port, &format!("GET {PREFIX}/designs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}"), "");
    assert_eq!((s, &b["designs"]), (200, &json!(["hello"])));
    let (s, b) = raw_request(port, &format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: 127.0.0.1:{port}"), "");
    assert_eq!(s, 400, "{b}");
}

#[test]
fn a_cross_origin_post_is_refused_and_same_origin_is_allowed() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let before = snapshot(&home);

    let (s, b) = send(server.client.post(server.url("/designs/hello/run")).header("origin", "http://evil.example"));
    snap("cross_origin_post", &home, &server, s, &b);
    for origin in ["null".to_string(), format!("http://127.0.0.1:{}", closed_port()), format!("http://localhost:{}", server.port)] {
        let (s, b) =
            send(server.client.post(server.url("/designs/evil")).header("origin", origin.as_str()).json(&json!({"graph": hello()})));
        assert_eq!(s, 403, "{origin}: {b}");
    }
    assert_eq!(snapshot(&home), before, "refused calls wrote nothing");

    // Reads from another origin are not refused (the browser keeps the answer from the page).
    let (s, _) = send(server.client.get(server.url("/designs")).header("origin", "http://evil.example"));
    assert_eq!(s, 200);
    // The server's own page may post.
    let (s, b) = send(server.client.post(server.url("/designs/hello/run")).header("origin", server.base.as_str()));
    assert_eq!((s, &b["status"]), (200, &json!("done")), "{b}");
    let (s, b) = send(
        server
            .client
            .post(server.url("/designs/hello/run"))
            .header("host", format!("localhost:{}", server.port))
            .header("origin", format!("http://localhost:{}", server.port)),
    );
    assert_eq!(s, 200, "{b}");
}

#[test]
fn names_and_ids_are_checked_before_any_path_is_built() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let before = snapshot(&home);
    let (s, b) = server.post("/designs/..%2Fx", json!({"graph": hello()}));
    snap("bad_design_name", &home, &server, s, &b);
    for path in ["/designs/..%2Fx", "/designs/.hidden", "/designs/a%2Fb", "/runs/..%2F..%2Fetc", "/runs/ABCDEF012345"] {
        let (s, b) = server.get(path);
        assert_eq!(s, 400, "GET {path}: {b}");
    }
    for path in [
        "/designs/..%2Fx/run",
        "/designs/..%2Fx/validate",
        "/designs/..%2Fx/schedule",
        "/runs/..%2Fx/respond",
        "/runs/..%2Fx/retry",
        "/events/..%2Fx",
    ] {
        let (s, b) = server.post(path, json!({"node": "gate", "answer": "send", "preset": "hourly"}));
        assert_eq!(s, 400, "POST {path}: {b}");
    }
    assert_eq!(snapshot(&home), before, "refused calls wrote nothing");
}

#[test]
fn bodies_over_one_mib_are_refused() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("hello", hello());
    let before = snapshot(&home);
    let big = format!("{{\"graph\": {{\"description\": \"{}\", \"nodes\": [], \"edges\": []}}}}", "x".repeat(1024 * 1024 + 100 * 1024));
    let (s, b) = send(server.client.post(server.url("/designs/big")).header("content-type", "application/json").body(big.clone()));
    snap("body_too_large", &home, &server, s, &b);
    let (s, b) = send(server.client.post(server.url("/designs/hello/run")).header("content-type", "application/json").body(big));
    assert_eq!(s, 413, "{b}");
    assert_eq!(snapshot(&home), before, "refused calls wrote nothing");
}

// ---- conformance to the OpenAPI document ----

/// How many cases schemathesis generates per operation and phase, and its seed: fixed, so a
/// failure reproduces; small enough for a few minutes on two cores.
const FUZZ_EXAMPLES: u32 = 25;
const FUZZ_SEED: u64 = 20261130;

/// Schemathesis, driven by the server's own OpenAPI document, with every check it has (status
/// codes, content types, response schemas, negative data rejected, positive data accepted,
/// auth enforced, unsupported methods, links followed statefully) against a live `vwf serve`
/// with a token. The home disables command nodes, so no generated design can run anything, and
/// its agent backend is `cat` (the prompt comes back as the reply), so agent steps and the model
/// catalog answer without a network. Skips only when PyPI cannot be reached.
#[test]
fn schemathesis_finds_no_failure_with_every_check() {
    let Some(python) = common::python_env("fuzz") else { return };
    let home = Home::new();
    write_config(
        &home,
        &format!(
            "[commands]\nenabled = false\n\n[server]\ntoken_env = \"{TOKEN_VAR}\"\n\n\
             [agent]\nbackend = \"command\"\ncommand = [\"cat\"]\ndefault_model = \"echo\"\n"
        ),
    );
    let token = "fuzz-token";
    let server = Server::start_with(&home, Options { token: Some(token), ..Options::default() });
    let work = tempfile::tempdir().expect("tempdir");
    let out = Command::new(&python)
        .current_dir(work.path())
        .args(["-m", "schemathesis.cli", "--config-file"])
        .arg(common::repo().join("tests/fuzz/schemathesis.toml"))
        .args(["run", &server.url("/openapi.json")])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--checks", "all", "--seed", &FUZZ_SEED.to_string(), "--max-examples", &FUZZ_EXAMPLES.to_string()])
        // Longer than a long poll's hold (limits::LIVE_WAIT_SECONDS, 30 s): a request generated with
        // a large `wait=` is answered after the full hold, which a 30 s client timeout would race.
        .args(["--workers", "1", "--no-color", "--generation-database", "none", "--request-timeout", "40"])
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let generated = report
        .lines()
        .find_map(|l| l.trim().split_once(" generated").and_then(|(n, _)| n.trim().parse::<u64>().ok()))
        .unwrap_or_else(|| panic!("no case count in the report:\n{report}\n{stderr}"));
    eprintln!("{report}\nschemathesis generated {generated} cases (seed {FUZZ_SEED}, {FUZZ_EXAMPLES} examples per operation and phase)");
    assert!(out.status.success(), "schemathesis found failures ({}):\n{report}\n{stderr}", out.status);
    assert!(generated >= 1000, "too few cases to mean anything: {generated}\n{report}");
}

// ---- lifecycle ----

#[test]
fn start_marks_runs_of_dead_processes_interrupted_and_sigterm_stops_cleanly() {
    let home = Home::new();
    let server = Server::start(&home);
    server.save("gated", gated());
    let id = server.run_id("gated", Value::Null);
    assert_eq!(server.terminate(), Some(0), "SIGTERM is a clean stop");

    // Pretend the run was mid-step when its process died.
    let path = home.runs_dir().join(format!("{id}.json"));
    let mut run: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    run["status"] = json!("running");
    run["pending"] = Value::Null;
    run["parked"] = json!([]);
    run["steps"][0]["status"] = json!("running");
    std::fs::write(&path, serde_json::to_vec(&run).unwrap()).unwrap();

    // Without --bind: the config's bind is used.
    write_config(&home, "[server]\nbind = \"127.0.0.1:0\"\n");
    let server = Server::start_with(&home, Options { bind: None, ..Options::default() });
    let on_disk: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(on_disk["status"], "failed", "settled before the server said it was ready: {on_disk}");
    assert!(on_disk["error"].as_str().unwrap_or("").starts_with("interrupted"), "{on_disk}");
    let (s, b) = server.post_empty(&format!("/runs/{id}/retry"));
    assert_eq!((s, &b["status"]), (200, &json!("awaiting_approval")), "an interrupted run can be retried: {b}");
    assert_eq!(server.terminate(), Some(0));
}

#[test]
fn json_mode_prints_the_addresses_as_one_line() {
    let home = Home::new();
    let mut child = vwf(home.path())
        .args(["--json", "serve", "--bind", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start vwf serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(v["ok"], true);
    let url = v["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with('/'), "{v}");
    assert_eq!(v["api"], format!("{}{PREFIX}", url.trim_end_matches('/')));
}

// ---- path parameters and import ----

/// Every route with a `{name}` or `{run_id}` segment refuses a bad one with a 400 carrying the
/// rule's own message (the core's), before anything is read or written; a good one gets past.
#[test]
fn bad_names_and_run_ids_in_paths_are_400s_with_the_rules_message() {
    let home = Home::new();
    let server = Server::start(&home);
    let names = ["-dash", "bad!", "x".repeat(65).as_str(), "caf%C3%A9", "a%20b", "_lead"].map(str::to_string);
    let ids = ["0123456789a", "0123456789abc", "0123456789AB", "zzzzzzzzzzzz", "01234%2056789"].map(str::to_string);
    let name_routes = [
        ("GET", "/designs/{}"),
        ("POST", "/designs/{}"),
        ("DELETE", "/designs/{}"),
        ("POST", "/designs/{}/validate"),
        ("POST", "/designs/{}/run"),
        ("POST", "/designs/{}/schedule"),
    ];
    let id_routes = [("GET", "/runs/{}"), ("POST", "/runs/{}/respond"), ("POST", "/runs/{}/retry")];
    let stored = || home.files().into_iter().filter(|f| f.extension().is_none_or(|e| e != "lock")).collect::<Vec<_>>();
    let before = stored();
    let mut cases = 0;
    let mut check = |method: &str, route: &str, raw: &str, expected: Result<(), String>| {
        let path = route.replace("{}", raw);
        let req = match method {
            "GET" => server.client.get(server.url(&path)),
            "DELETE" => server.client.delete(server.url(&path)),
            _ => server.client.post(server.url(&path)).json(&json!({})),
        };
        let (status, body) = send(server.authed(req));
        match expected {
            Err(message) => assert_eq!((status, body), (400, json!({"ok": false, "error": message})), "{method} {path}"),
            Ok(()) => assert_ne!((status, body["error"].as_str().unwrap_or("").contains("name")), (400, true), "{method} {path}"),
        }
        cases += 1;
    };
    for raw in &names {
        let decoded = percent_decode(raw);
        let expected = vwf_core::names::DesignName::parse(&decoded).map(|_| ());
        assert!(expected.is_err(), "{decoded:?} should be a bad name");
        for (method, route) in name_routes {
            check(method, route, raw, expected.clone());
        }
    }
    for raw in &ids {
        let expected = vwf_core::names::RunId::parse(&percent_decode(raw)).map(|_| ());
        assert!(expected.is_err(), "{raw:?} should be a bad run id");
        for (method, route) in id_routes {
            check(method, route, raw, expected.clone());
        }
    }
    // A good name reaches the handler (a missing design is a 404, not a 400).
    assert_eq!(server.get("/designs/fine-name").0, 404);
    assert_eq!(server.get("/runs/0123456789ab").0, 404);
    eprintln!("{cases} bad path parameters refused");
    assert_eq!(stored(), before, "a refused request writes nothing");
}

fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&raw[i + 1..i + 3], 16).expect("hex"));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

/// An agent.json document with a good workflow and one whose design has errors (a condition
/// with no branches to take).
fn agent_document() -> Value {
    json!({"workflows": {
        "greet": {"trigger": {"type": "manual"}, "activities": [{"name": "say", "type": "output"}]},
        "broken": {"trigger": {"type": "manual"}, "activities": [{"name": "check", "type": "condition", "expr": "out.start.n >"}]}
    }})
}

/// `POST /import` saves what `vwf import` saves, skips existing names unless `overwrite: true`,
/// answers a refused workflow as a 200 `ok:false` with its errors, and is guarded like every
/// state-changing route (token, Origin); a malformed request writes nothing.
#[test]
fn import_over_http_saves_skips_and_refuses_as_the_cli_does() {
    let home = Home::new();
    let token = "import-token";
    write_config(&home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    let server = Server::start_with(&home, Options { token: Some(token), ..Options::default() });
    let stored = || home.files().into_iter().filter(|f| f.extension().is_none_or(|e| e != "lock")).collect::<Vec<_>>();
    let before = stored();

    // Guarded: no token, a foreign Origin, and malformed bodies write nothing.
    let (status, _) = send(server.bare.post(server.url("/import")).json(&json!({"document": agent_document()})));
    assert_eq!(status, 401);
    let foreign = server
        .authed(server.client.post(server.url("/import")))
        .header("Origin", "https://evil.example")
        .json(&json!({"document": agent_document()}));
    assert_eq!(send(foreign).0, 403);
    for (body, message) in [
        (json!({}), "missing \"document\""),
        (json!({"document": "text"}), "\"document\" must be a JSON object (the agent.json document), got a string"),
        (json!({"document": agent_document(), "overwrite": "yes"}), "\"overwrite\" must be true or false"),
    ] {
        assert_eq!(server.post("/import", body.clone()), (400, json!({"ok": false, "error": message})), "{body}");
    }
    assert_eq!(stored(), before, "refused requests write nothing");

    let (status, body) = server.post("/import", json!({"document": agent_document()}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["ok"], false, "a refused workflow makes the import not ok: {body}");
    let by_name = |body: &Value, name: &str| body["designs"].as_array().unwrap().iter().find(|d| d["name"] == name).cloned().unwrap();
    assert_eq!(by_name(&body, "greet")["status"], "saved", "{body}");
    let broken = by_name(&body, "broken");
    assert_eq!(broken["status"], "refused", "{body}");
    assert!(broken["error"].as_str().unwrap().starts_with("the design has"), "{body}");
    assert!(!broken["errors"].as_array().unwrap().is_empty(), "{body}");
    assert!(body["notes"].is_array(), "{body}");
    assert_eq!(server.get("/designs/greet").0, 200);
    assert_eq!(server.get("/designs/broken").0, 404, "a refused workflow is not saved");

    // The CLI imports the same document to the same answer (but for how to overwrite).
    let file = home.path().join("agent.json");
    std::fs::write(&file, agent_document().to_string()).unwrap();
    let (code, cli) = home.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 5, "{cli}");
    let again = server.post("/import", json!({"document": agent_document()})).1;
    assert_eq!(
        by_name(&again, "greet"),
        json!({"name": "greet", "status": "skipped", "reason": "a design with this name exists (use \"overwrite\": true)"})
    );
    assert_eq!(
        by_name(&cli, "greet"),
        json!({"name": "greet", "status": "skipped", "reason": "a design with this name exists (use --overwrite)"})
    );
    assert_eq!(by_name(&again, "broken"), by_name(&cli, "broken"));
    assert_eq!(again["notes"], cli["notes"]);

    let (status, body) = server.post("/import", json!({"document": agent_document(), "overwrite": true}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(by_name(&body, "greet")["status"], "saved", "{body}");
}
