//! `vwf import`: an agent.json file's workflows become saved designs, with notes for what could
//! not be mapped; existing designs are left alone unless asked.

use crate::common;

use common::Home;
use serde_json::json;

fn agent_json() -> serde_json::Value {
    json!({
        "workflows": {
            "morning": {
                "trigger": {"type": "schedule", "cron": "0 9 * * 1-5"},
                "activities": [
                    {"name": "fetch", "type": "command", "command": "echo '{\"items\": 3}'"},
                    {"name": "brief", "prompt": "Summarise {{nodes.fetch}}"}
                ]
            },
            "triage": {
                "trigger": {"type": "manual"},
                "activities": [
                    {"name": "check", "type": "condition", "expr": "out.start.severity > 2"},
                    {"name": "page", "type": "output"},
                    {"name": "log", "type": "output"}
                ],
                "connections": [
                    {"from": "__trigger__", "to": "check"},
                    {"from": "check", "to": "page", "label": "True"},
                    {"from": "check", "to": "log", "label": "False"},
                    {"from": "page", "to": "__emit__"}
                ]
            }
        }
    })
}

#[test]
fn import_saves_every_workflow_as_a_design_that_runs() {
    let home = Home::new();
    let file = home.path().join("agent.json");
    std::fs::write(&file, agent_json().to_string()).unwrap();
    let (code, body) = home.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{body}");
    let names: Vec<&str> = body["designs"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["morning", "triage"]);
    assert!(body["designs"].as_array().unwrap().iter().all(|d| d["status"] == "saved"), "{body}");

    let (_, graph) = home.json(&["open", "triage"]);
    let labels: Vec<&str> = graph["graph"]["edges"].as_array().unwrap().iter().filter_map(|e| e["label"].as_str()).collect();
    assert!(labels.contains(&"true") && labels.contains(&"false"), "{graph}");
    assert!(graph["graph"]["nodes"].as_array().unwrap().iter().any(|n| n["type"] == "emit"), "{graph}");

    let (code, run) = home.json(&["run", "triage", "--input", r#"{"severity": 4}"#]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    assert!(run["outputs"].get("page").is_some() && run["skipped"] == json!(["log"]), "{run}");
}

#[test]
fn import_leaves_existing_designs_alone_unless_told() {
    let home = Home::new();
    let file = home.path().join("agent.json");
    std::fs::write(&file, agent_json().to_string()).unwrap();
    assert_eq!(home.json(&["import", file.to_str().unwrap()]).0, 0);
    let before = std::fs::read(home.path().join("workflow-designs/morning.json")).unwrap();
    let (code, body) = home.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(body["designs"].as_array().unwrap().iter().all(|d| d["status"] == "skipped"), "{body}");
    assert_eq!(std::fs::read(home.path().join("workflow-designs/morning.json")).unwrap(), before);
    let (code, body) = home.json(&["import", file.to_str().unwrap(), "--overwrite"]);
    assert_eq!(code, 0);
    assert!(body["designs"].as_array().unwrap().iter().all(|d| d["status"] == "saved"), "{body}");
}

#[test]
fn a_file_that_is_not_json_is_refused_and_writes_nothing() {
    let home = Home::new();
    let file = home.path().join("agent.json");
    std::fs::write(&file, "{ not json").unwrap();
    let before = home.files();
    let (code, body) = home.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{body}");
    assert!(body["error"].as_str().unwrap().contains("JSON"), "{body}");
    assert_eq!(home.files(), before);
}

/// An agent.json of one workflow with `trigger`, whose command leaves `marker` when it runs.
fn automatic(name: &str, trigger: serde_json::Value, marker: &std::path::Path) -> serde_json::Value {
    json!({"workflows": {name: {
        "trigger": trigger,
        "activities": [{"name": "mark", "type": "command", "command": format!("touch '{}'", marker.display())}]
    }}})
}

fn import(home: &Home, doc: &serde_json::Value) -> serde_json::Value {
    let file = home.path().join("agent.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let (code, body) = home.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{body}");
    body
}

fn listed_disabled(home: &Home) -> serde_json::Value {
    let (code, listed) = home.json(&["list"]);
    assert_eq!(code, 0, "{listed}");
    listed["disabled"].clone()
}

/// An imported watch trigger arrives disabled: the daemon starts no watch command for it (its
/// listing says so) and nothing runs; after `vwf enable` the next tick starts the command, whose
/// line fires a run.
#[test]
fn an_imported_watch_trigger_runs_nothing_until_enabled() {
    use vwf::app::App;
    let home = Home::new();
    let marker = home.path().join("ran");
    let line = home.path().join("line");
    let trigger = json!({"type": "watch", "command": format!("touch '{}'; printf '{{\"n\": 1}}\\n'; sleep 30", line.display())});
    let body = import(&home, &automatic("tail", trigger, &marker));
    assert_eq!((&body["designs"][0]["status"], &body["designs"][0]["enabled"]), (&json!("saved"), &json!(false)), "{body}");
    let (_, graph) = home.json(&["open", "tail"]);
    assert_eq!(graph["graph"]["enabled"], json!(false), "kept in the document: {graph}");
    assert_eq!(listed_disabled(&home), json!(["tail"]));

    let app = App::open(home.path().to_path_buf()).expect("open app");
    let mut daemon = vwf::daemon::Daemon::new(&app);
    let report = daemon.tick(app.clock.now());
    assert!(report.fired.is_empty(), "{report:?}");
    let watching = daemon.watching();
    assert_eq!((watching[0].mode.as_str(), watching[0].detail.as_str()), ("watch", "disabled: nothing fires until `vwf enable tail`"));
    assert!(!line.exists() && !marker.exists() && home.no_run_stored(), "a disabled watch started nothing");

    let (code, enabled) = home.json(&["enable", "tail"]);
    assert_eq!((code, &enabled), (0, &json!({"ok": true, "name": "tail", "enabled": true})));
    assert_eq!(listed_disabled(&home), json!([]));
    let fired = common::server::eventually("the enabled watch to fire", 30, || {
        let report = daemon.tick(app.clock.now());
        report.fired.into_iter().next()
    });
    assert_eq!((fired.design.as_str(), fired.mode.as_str()), ("tail", "watch"), "{fired:?}");
    assert!(marker.exists(), "the run's command ran");
    daemon.shutdown();
}

/// An imported schedule arrives disabled: its job's due fire (at an injected time) is recorded
/// and starts nothing; once enabled, the next fire runs.
#[test]
fn an_imported_schedule_runs_nothing_until_enabled() {
    use vwf::app::App;
    use vwf::clock::FixedClock;
    let home = Home::new();
    let marker = home.path().join("ran");
    import(&home, &automatic("nightly", json!({"type": "schedule", "cron": "0 9 * * *"}), &marker));
    assert_eq!(listed_disabled(&home), json!(["nightly"]));
    let at = |t: &str| App {
        clock: Box::new(FixedClock::new(vwf_core::time::parse(t).expect("time"))),
        ..App::open(home.path().to_path_buf()).expect("open app")
    };
    let name = vwf_core::names::DesignName::parse("nightly").unwrap();
    let app = at("2026-06-01T08:00:00Z");
    vwf::schedules::upsert(&app, &name, &json!({"preset": "daily", "time": "09:00", "tz": "UTC"}), app.clock.now()).expect("a job");

    let app = at("2026-06-01T09:00:10Z");
    let fired = vwf::schedules::tick(&app, app.clock.now()).expect("tick");
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(
        (fired[0].run_id.as_ref(), fired[0].error.as_deref()),
        (None, Some("not started: design nightly is disabled (vwf enable nightly)"))
    );
    assert!(!marker.exists() && home.no_run_stored());

    assert_eq!(home.json(&["enable", "nightly"]).0, 0);
    let app = at("2026-06-02T09:00:10Z");
    let fired = vwf::schedules::tick(&app, app.clock.now()).expect("tick");
    assert_eq!((fired.len(), fired[0].status.map(|s| s.as_str())), (1, Some("done")), "{fired:?}");
    assert!(marker.exists(), "the scheduled run ran");
}

/// The API's toggle: `POST /import` of an event-triggered workflow arrives disabled (the listing
/// says so), an event skips it saying why, a run by hand still runs; `POST /designs/{name}/enable`
/// turns it on and `/disable` off again.
#[test]
fn the_api_enables_and_disables_an_imported_design() {
    use common::server::Server;
    let home = Home::new();
    let marker = home.path().join("ran");
    let server = Server::start(&home);
    let (status, body) =
        server.post("/import", json!({"document": automatic("hook", json!({"type": "event", "sources": ["ping"]}), &marker)}));
    assert_eq!((status, &body["designs"][0]["enabled"]), (200, &json!(false)), "{body}");
    let (_, listed) = server.get("/designs");
    assert_eq!((&listed["designs"], &listed["disabled"]), (&json!(["hook"]), &json!(["hook"])), "{listed}");

    let (_, emitted) = server.post("/events/ping", json!({}));
    assert_eq!(emitted["runs"], json!([]), "{emitted}");
    assert_eq!(emitted["skipped"], json!([{"design": "hook", "reason": "disabled: its trigger fires once enabled (vwf enable hook)"}]));
    assert!(!marker.exists());
    let (status, run) = server.post("/designs/hook/run", json!({}));
    assert_eq!((status, &run["status"]), (200, &json!("done")), "a person's run still runs: {run}");
    std::fs::remove_file(&marker).expect("the run ran");

    let (status, enabled) = server.post("/designs/hook/enable", json!({}));
    assert_eq!((status, enabled), (200, json!({"ok": true, "name": "hook", "enabled": true})));
    let (_, listed) = server.get("/designs");
    assert_eq!(listed["disabled"], json!([]), "{listed}");
    let (_, emitted) = server.post("/events/ping", json!({}));
    assert_eq!(emitted["runs"][0]["status"], json!("done"), "{emitted}");
    assert!(marker.exists());

    let (status, disabled) = server.post("/designs/hook/disable", json!({}));
    assert_eq!((status, disabled), (200, json!({"ok": true, "name": "hook", "enabled": false})));
    let (status, missing) = server.post("/designs/nope/enable", json!({}));
    assert_eq!(status, 404, "{missing}");
}
