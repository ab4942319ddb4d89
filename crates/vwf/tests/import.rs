//! `vwf import`: an agent.json file's workflows become saved designs, with notes for what could
//! not be mapped; existing designs are left alone unless asked.

mod common;

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
