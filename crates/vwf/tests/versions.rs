//! Design versions end to end, on both stores: `vwf versions | diff | restore`, the run's
//! `version` (kept after a later save), retention (`[designs] keep_versions`), the API routes and
//! `workflow_design_load` with a `version`.

use crate::common;
use crate::on_both_backends;

use common::server::{Server, write_config};
use common::{Backend, Home};
use serde_json::{Value, json};

on_both_backends!(
    saves_list_diff_and_restore_versions,
    a_run_keeps_the_version_it_started_with,
    pruning_keeps_the_versions_runs_refer_to,
    the_api_lists_shows_diffs_and_restores_versions,
);

/// A manual trigger, an approval gate and an output whose text is `text`.
fn gated(text: &str) -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "gate", "type": "approval", "question": "go?", "options": ["go", "stop"]},
        {"id": "out", "type": "output", "template": text}
    ], "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "go"}]})
}

/// A manual trigger straight to an output whose text is `text`.
fn direct(text: &str) -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "out", "type": "output", "template": text}
    ], "edges": [{"from": "start", "to": "out"}]})
}

fn numbers(listing: &Value) -> Vec<u64> {
    listing["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("no versions: {listing}"))
        .iter()
        .filter_map(|v| v["version"].as_u64())
        .collect()
}

fn saves_list_diff_and_restore_versions(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("flow", &gated("one"));
    home.save("flow", &gated("one"));
    let (code, listing) = home.json(&["versions", "flow"]);
    assert_eq!((code, numbers(&listing)), (0, vec![1]), "saving identical content makes no version: {listing}");
    home.save("flow", &direct("two"));
    let (_, listing) = home.json(&["versions", "flow"]);
    assert_eq!(numbers(&listing), vec![1, 2]);
    let v1 = &listing["versions"][0];
    assert_eq!((&v1["nodes"], &v1["edges"]), (&json!(3), &json!(2)), "{listing}");
    assert!(v1["hash"].as_str().is_some_and(|h| h.starts_with("sha256:")) && v1["saved_at"].is_string(), "{listing}");
    assert_ne!(listing["versions"][0]["hash"], listing["versions"][1]["hash"]);

    let (code, diff) = home.json(&["diff", "flow", "1", "2"]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(diff["nodes"]["removed"], json!(["gate"]), "{diff}");
    assert_eq!(diff["nodes"]["added"], json!([]), "{diff}");
    assert_eq!(diff["nodes"]["changed"], json!([{"id": "out", "fields": ["template"]}]), "{diff}");
    assert_eq!(diff["nodes"]["unchanged"], json!(["start"]), "{diff}");
    assert_eq!(diff["edges"]["added"], json!(["start->out"]), "{diff}");
    assert_eq!(diff["edges"]["removed"], json!(["gate->out", "start->gate"]), "{diff}");
    let text = home.vwf().args(["diff", "flow", "1", "2"]).output().expect("vwf");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("- node gate") && text.contains("~ node out: template") && text.contains("+ edge start->out"), "{text}");

    // A refused request writes nothing: an unknown version, a bad number.
    let before = common::snapshot(&home);
    assert_eq!(home.json(&["restore", "flow", "9"]).0, 4, "a version the design does not have is a conflict");
    assert_eq!(home.json(&["diff", "flow", "1", "9"]).0, 3);
    assert_eq!(home.json(&["versions", "nothing"]).0, 3);
    assert_eq!(home.vwf().args(["restore", "flow", "x"]).output().expect("vwf").status.code(), Some(2));
    assert_eq!(common::snapshot(&home), before, "a refused request wrote something");

    let (code, restored) = home.json(&["restore", "flow", "1"]);
    assert_eq!(code, 0, "{restored}");
    assert_eq!((&restored["restored"], &restored["version"]), (&json!(1), &json!(3)), "{restored}");
    let (_, opened) = home.json(&["open", "flow"]);
    assert_eq!(opened["graph"], gated("one"));
    let (_, listing) = home.json(&["versions", "flow"]);
    assert_eq!(numbers(&listing), vec![1, 2, 3]);
    assert_eq!(listing["versions"][2]["hash"], listing["versions"][0]["hash"], "the restored content is version 1's");
    let (_, same) = home.json(&["diff", "flow", "1", "3"]);
    assert_eq!((&same["nodes"]["changed"], &same["edges"]["added"]), (&json!([]), &json!([])), "{same}");

    // The tool loads the saved design, or a version when asked.
    let (_, loaded) = home.json(&["tool", "workflow_design_load", r#"{"name": "flow", "version": 2}"#]);
    assert_eq!(loaded["graph"], direct("two"), "{loaded}");
    let (_, loaded) = home.json(&["tool", "workflow_design_load", r#"{"name": "flow"}"#]);
    assert_eq!(loaded["graph"], gated("one"), "{loaded}");
    let (code, refused) = home.json(&["tool", "workflow_design_load", r#"{"name": "flow", "version": 0}"#]);
    assert_eq!((code, &refused["ok"]), (2, &json!(false)), "{refused}");

    // A deleted design answers "not found", its history too; the versions stay stored, so the
    // name saved again numbers on from them and runs keep theirs.
    assert_eq!(home.json(&["delete", "flow"]).0, 0);
    assert_eq!(home.json(&["versions", "flow"]).0, 3, "a deleted design's versions are not shown");
    assert_eq!(home.json(&["diff", "flow", "1", "2"]).0, 3);
    home.save("flow", &direct("again"));
    assert_eq!(numbers(&home.json(&["versions", "flow"]).1), vec![1, 2, 3, 4]);
}

fn a_run_keeps_the_version_it_started_with(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("flow", &gated("old"));
    let (code, parked) = home.json(&["run", "flow"]);
    assert_eq!((code, &parked["status"], &parked["version"]), (6, &json!("awaiting_approval"), &json!(1)), "{parked}");
    let id = parked["run_id"].as_str().expect("id").to_string();
    home.save("flow", &gated("new"));
    let (_, shown) = home.json(&["show", &id]);
    assert_eq!(shown["version"], json!(1), "a run started before a save shows the old version: {shown}");
    let (code, done) = home.json(&["approve", &id, "gate", "go"]);
    assert_eq!((code, &done["outputs"]["out"]["text"], &done["version"]), (0, &json!("old"), &json!(1)), "{done}");
    let (_, newer) = home.json(&["run", "flow"]);
    assert_eq!(newer["version"], json!(2), "{newer}");

    // A retry from the failed step keeps the version (and the plan) the run started with.
    home.save("flaky", &common::failing());
    let (code, failed) = home.json(&["run", "flaky"]);
    assert_eq!((code, &failed["version"]), (1, &json!(1)), "{failed}");
    home.save("flaky", &direct("fixed"));
    let failed_id = failed["run_id"].as_str().expect("id");
    let (code, retried) = home.json(&["run", "retry", failed_id]);
    assert_eq!((code, &retried["version"], &retried["failed_node"]), (1, &json!(1), &json!("boom")), "{retried}");

    // A run file from before versions has none: it reads as null.
    let mut stored: Value = serde_json::from_slice(&home.stored_run_bytes(&id).expect("stored")).expect("json");
    stored.as_object_mut().expect("object").remove("version");
    home.write_stored_run(&id, stored.to_string().as_bytes());
    let (code, old) = home.json(&["show", &id]);
    assert_eq!((code, &old["version"]), (0, &Value::Null), "{old}");
}

fn pruning_keeps_the_versions_runs_refer_to(backend: Backend) {
    let home = Home::with_backend(backend);
    write_config(&home, "[designs]\nkeep_versions = 2\n");
    home.save("flow", &direct("v1"));
    let (code, run) = home.json(&["run", "flow"]);
    assert_eq!((code, &run["version"]), (0, &json!(1)), "{run}");
    for n in 2..=5 {
        home.save("flow", &direct(&format!("v{n}")));
    }
    let (_, listing) = home.json(&["versions", "flow"]);
    assert_eq!(numbers(&listing), vec![1, 4, 5], "the newest two, and the one a run ran: {listing}");
    let (code, diff) = home.json(&["diff", "flow", "1", "5"]);
    assert_eq!((code, &diff["nodes"]["changed"]), (0, &json!([{"id": "out", "fields": ["template"]}])), "{diff}");
    // Without the setting every version is kept.
    write_config(&home, "");
    for n in 6..=8 {
        home.save("flow", &direct(&format!("v{n}")));
    }
    assert_eq!(numbers(&home.json(&["versions", "flow"]).1), vec![1, 4, 5, 6, 7, 8]);
    write_config(&home, "[designs]\nkeep_versions = 0\n");
    let out = home.vwf().args(["versions", "flow"]).output().expect("vwf");
    assert_ne!(out.status.code(), Some(0), "keep_versions = 0 is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("keep_versions"), "{}", String::from_utf8_lossy(&out.stderr));
}

fn the_api_lists_shows_diffs_and_restores_versions(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    server.save("flow", gated("one"));
    let id = server.run_id("flow", Value::Null);
    server.save("flow", direct("two"));
    let (status, listing) = server.get("/designs/flow/versions");
    assert_eq!((status, numbers(&listing)), (200, vec![1, 2]), "{listing}");
    let (status, one) = server.get("/designs/flow/versions/1");
    assert_eq!((status, &one["graph"], &one["version"]), (200, &gated("one"), &json!(1)), "{one}");
    assert_eq!(one["hash"], listing["versions"][0]["hash"]);
    let (status, diff) = server.get("/designs/flow/diff?a=1&b=2");
    assert_eq!((status, &diff["nodes"]["removed"]), (200, &json!(["gate"])), "{diff}");
    let (_, newest) = server.get("/designs/flow/diff");
    assert_eq!((&newest["a"], &newest["b"], &newest["nodes"]), (&json!(1), &json!(2), &diff["nodes"]), "b is the newest, a the one before");
    let (_, run) = server.get(&format!("/runs/{id}"));
    assert_eq!(run["version"], json!(1), "{run}");

    for (path, status) in [
        ("/designs/flow/versions/9", 404),
        ("/designs/flow/versions/0", 400),
        ("/designs/flow/versions/x", 400),
        ("/designs/flow/diff?a=0", 400),
        ("/designs/flow/diff?b=1", 404),
        ("/designs/flow/diff?a=1&b=9", 404),
        ("/designs/none/versions", 404),
    ] {
        let (got, body) = server.get(path);
        assert_eq!((got, &body["ok"]), (status, &json!(false)), "{path}: {body}");
    }
    for body in [json!({}), json!({"version": "1"}), json!({"version": 0}), json!({"version": -1}), json!({"version": 1.5})] {
        let (got, answer) = server.post("/designs/flow/restore", body.clone());
        assert_eq!(got, 400, "{body}: {answer}");
    }
    assert_eq!(server.post("/designs/flow/restore", json!({"version": 7})).0, 409, "a version the design does not have");
    assert_eq!(server.post("/designs/none/restore", json!({"version": 1})).0, 404, "a design that is not there");
    let (status, restored) = server.post("/designs/flow/restore", json!({"version": 1}));
    assert_eq!((status, &restored["version"]), (200, &json!(3)), "{restored}");
    let (_, design) = server.get("/designs/flow");
    assert_eq!(design["graph"], gated("one"));
}
