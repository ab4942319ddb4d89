//! Pinned outputs and test runs through the real binary, on both stores: `vwf pin` / `vwf unpin`,
//! `vwf run --test | --only | --until`, `POST /designs/{name}/pin` and the run route's `test`,
//! `only` and `until`. A command step appends to a log file each time it really runs and an
//! output node delivers to a local webhook, so "performed nothing" is counted, not assumed.

use crate::common;
use crate::on_both_backends;

on_both_backends!(
    a_test_run_uses_pins_and_sends_nothing_from_a_pinned_output,
    only_and_until_run_part_of_the_design,
    the_api_pins_and_starts_test_runs
);

use std::path::Path;

use common::peer::Peer;
use common::server::{Server, write_config};
use common::{Backend, Home};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

/// fetch (a command that logs each real run) → check → shout (a command using fetch's text) and
/// fetch → hook (a delivery to the local webhook).
fn design(workdir: &Path) -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "fetch", "type": "command", "run": "echo ran >> fetch.log && echo fresh words", "cwd": workdir.to_str()},
            {"id": "check", "type": "condition", "expr": "out.fetch.words > 0"},
            {"id": "shout", "type": "command", "run": "echo got {{nodes.fetch}}"},
            {"id": "hook", "type": "output", "deliver": "channel", "target": "webhook:alerts", "template": "{{nodes.fetch}}"}
        ],
        "edges": [
            {"from": "start", "to": "fetch"}, {"from": "fetch", "to": "check"},
            {"from": "check", "to": "shout", "label": "true"}, {"from": "fetch", "to": "hook"}
        ]
    })
}

/// A home whose config sends `webhook:alerts` to the peer, and the work directory of `fetch`.
fn setup(backend: Backend) -> (Home, Peer, tempfile::TempDir) {
    let home = Home::with_backend(backend);
    let peer = Peer::start();
    peer.mount(Mock::given(method("POST")).and(path("/hook")).respond_with(ResponseTemplate::new(200).set_body_string("ok")));
    write_config(&home, &format!("[channels.webhook.alerts]\nurl = \"{}/hook\"\n", peer.uri()));
    let work = tempfile::tempdir().expect("work dir");
    home.save("d", &design(work.path()));
    (home, peer, work)
}

/// How many times `fetch` really ran.
fn fetches(work: &tempfile::TempDir) -> usize {
    std::fs::read_to_string(work.path().join("fetch.log")).map_or(0, |s| s.lines().count())
}

/// How many deliveries the webhook received.
fn hooks(peer: &Peer) -> usize {
    peer.requests().iter().filter(|r| r.url.path() == "/hook").count()
}

/// `vwf --json <args>` on a thread the peer's runtime lends (the peer answers on that runtime).
fn vwf(peer: &Peer, home: &Home, args: &[&str]) -> (i32, Value) {
    let mut cmd = home.vwf();
    cmd.arg("--json").args(args);
    let out = peer.rt.block_on(peer.rt.spawn_blocking(move || cmd.output().expect("run vwf"))).expect("the CLI thread");
    (common::code(&out), common::parse(&out))
}

fn step<'a>(run: &'a Value, node: &str) -> &'a Value {
    run["steps"].as_array().and_then(|s| s.iter().find(|r| r["node"] == node)).unwrap_or_else(|| panic!("no step {node} in {run}"))
}

fn a_test_run_uses_pins_and_sends_nothing_from_a_pinned_output(backend: Backend) {
    let (home, peer, work) = setup(backend);
    let (code, normal) = vwf(&peer, &home, &["run", "d"]);
    assert_eq!((code, &normal["status"], &normal["test"]), (0, &json!("done"), &json!(false)), "{normal}");
    assert_eq!((fetches(&work), hooks(&peer)), (1, 1));

    assert_eq!(vwf(&peer, &home, &["pin", "d", "fetch", "--output", "pinned words"]).0, 0);
    let (code, saved) = vwf(&peer, &home, &["pin", "d", "hook", "--output", r#"{"text": "sent", "deliveries": [{"ok": true}]}"#]);
    assert_eq!(code, 0, "{saved}");

    let (code, test) = vwf(&peer, &home, &["run", "d", "--test"]);
    assert_eq!((code, &test["status"], &test["test"]), (0, &json!("done"), &json!(true)), "{test}");
    assert_eq!((fetches(&work), hooks(&peer)), (1, 1), "a pinned step ran or a pinned output sent");
    assert_eq!(step(&test, "fetch")["pinned"], true);
    assert_eq!(step(&test, "hook")["pinned"], true);
    assert!(step(&test, "shout").get("pinned").is_none(), "an unpinned step ran for real");
    assert_eq!(test["outputs"]["shout"]["text"], "got pinned words");
    assert_eq!(test["deliveries"], json!([]), "no delivery is claimed for a pinned output");
    assert_eq!(test["outputs"]["hook"]["deliveries"], json!([]));

    // The listing marks test runs, as JSON and as text.
    let (_, listing) = vwf(&peer, &home, &["runs"]);
    let marks: Vec<&Value> = listing["runs"].as_array().expect("runs").iter().map(|r| &r["test"]).collect();
    assert_eq!(marks, [&json!(true), &json!(false)]);
    let text = home.vwf().args(["runs"]).output().expect("vwf");
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.lines().filter(|l| l.contains("test run")).count(), 1, "{text}");
    let shown = home.vwf().args(["show", test["run_id"].as_str().expect("id")]).output().expect("vwf");
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("test run") && shown.contains("(pinned output)"), "{shown}");

    // A normal run never uses pins.
    let (_, normal) = vwf(&peer, &home, &["run", "d"]);
    assert_eq!(normal["outputs"]["shout"]["text"], "got fresh words");
    assert_eq!((fetches(&work), hooks(&peer)), (2, 2));

    // Without its pin the output delivers in a test run too; a pin taken from a run is that output.
    assert_eq!(vwf(&peer, &home, &["unpin", "d", "hook"]).0, 0);
    let (_, test) = vwf(&peer, &home, &["run", "d", "--test"]);
    assert_eq!((fetches(&work), hooks(&peer)), (2, 3));
    assert_eq!(test["deliveries"][0]["ok"], true, "{test}");
    let normal_id = normal["run_id"].as_str().expect("id");
    assert_eq!(vwf(&peer, &home, &["pin", "d", "fetch", "--from", normal_id]).0, 0);
    let (_, graph) = vwf(&peer, &home, &["open", "d"]);
    let graph = if graph.get("graph").is_some() { graph["graph"].clone() } else { graph };
    assert_eq!(graph["pins"]["fetch"]["text"], "fresh words", "{graph}");

    // Refused pins write nothing: a condition's pin without a branch, a run without that output.
    let before = home.stored_design("d");
    let (code, refused) = vwf(&peer, &home, &["pin", "d", "check", "--output", "yes"]);
    assert_ne!(code, 0);
    assert!(refused.to_string().contains("\\\"value\\\": true or false"), "{refused}");
    assert_eq!(vwf(&peer, &home, &["pin", "d", "nope", "--from", normal_id]).0, 4, "a run without that output");
    assert_eq!(vwf(&peer, &home, &["pin", "d", "fetch", "--from", "aaaaaaaaaaaa"]).0, 4, "a run that is not there");
    assert_eq!(home.stored_design("d"), before, "a refused pin changed the design");
}

fn only_and_until_run_part_of_the_design(backend: Backend) {
    let (home, peer, work) = setup(backend);
    // Nothing to start from yet: the refusal says how to get it, and no run is stored.
    let (code, refused) = vwf(&peer, &home, &["run", "d", "--only", "shout"]);
    assert_ne!(code, 0, "{refused}");
    assert!(refused.to_string().contains("run up to shout first"), "{refused}");
    assert!(home.no_run_stored());
    assert_eq!(fetches(&work), 0);

    let (_, first) = vwf(&peer, &home, &["run", "d", "--input", r#"{"who": "first"}"#]);
    assert_eq!(first["status"], "done");
    let (code, only) = vwf(&peer, &home, &["run", "d", "--only", "shout"]);
    assert_eq!((code, &only["status"], &only["test"]), (0, &json!("done"), &json!(true)), "{only}");
    assert_eq!(fetches(&work), 1, "--only ran a step before its target");
    assert_eq!(hooks(&peer), 1, "--only ran a step beside its target");
    assert_eq!(only["outputs"]["shout"]["text"], "got fresh words");
    let nodes: Vec<&str> = only["steps"].as_array().expect("steps").iter().filter_map(|s| s["node"].as_str()).collect();
    assert_eq!(nodes, ["fetch", "check", "shout"]);
    assert!(step(&only, "fetch")["pinned"] == true && step(&only, "check")["pinned"] == true);
    assert_eq!(only["trigger"]["input"], json!({"who": "first"}), "the newest run's input");

    let (_, until) = vwf(&peer, &home, &["run", "d", "--until", "check", "--input", "\"given\""]);
    assert_eq!((&until["status"], &until["test"]), (&json!("done"), &json!(true)), "{until}");
    assert_eq!((fetches(&work), hooks(&peer)), (2, 1), "--until runs what leads to the step, nothing beside it");
    assert!(until["outputs"].get("shout").is_none());
    assert_eq!(until["trigger"]["input"], "given");

    // A failed limited test run retried from the start is the same kind of test run.
    std::fs::remove_file(work.path().join("fetch.log")).expect("log");
    std::fs::create_dir(work.path().join("fetch.log")).expect("a directory where the log goes");
    let (_, failed) = vwf(&peer, &home, &["run", "d", "--until", "shout"]);
    assert_eq!(failed["status"], "failed", "{failed}");
    std::fs::remove_dir(work.path().join("fetch.log")).expect("log dir");
    let (_, again) = vwf(&peer, &home, &["run", "retry", failed["run_id"].as_str().expect("id"), "--from-start"]);
    assert_eq!((&again["status"], &again["test"]), (&json!("done"), &json!(true)), "{again}");
    assert!(again["outputs"].get("hook").is_none(), "the retry ran beyond --until: {again}");

    // The agent tool takes the same words.
    let (_, tool) = vwf(&peer, &home, &["tool", "workflow_design_run", r#"{"name": "d", "only": "shout"}"#]);
    assert_eq!((&tool["test"], &tool["outputs"]["shout"]["text"]), (&json!(true), &json!("got fresh words")), "{tool}");
    let (_, tool) = vwf(&peer, &home, &["tool", "workflow_design_run", r#"{"name": "d", "only": 1}"#]);
    assert_eq!(tool["ok"], false, "{tool}");

    assert_eq!(home.vwf().args(["run", "d", "--only", "shout", "--until", "check"]).output().expect("vwf").status.code(), Some(2));
    let (code, unknown) = vwf(&peer, &home, &["run", "d", "--until", "nope"]);
    assert_ne!(code, 0);
    assert!(unknown.to_string().contains("\\\"nope\\\""), "{unknown}");
}

fn the_api_pins_and_starts_test_runs(backend: Backend) {
    let (home, peer, work) = setup(backend);
    let server = Server::start(&home);
    let (status, normal) = server.post("/designs/d/run", json!({}));
    assert_eq!((status, &normal["test"]), (200, &json!(false)), "{normal}");
    let normal_id = normal["run_id"].as_str().expect("id").to_string();

    let (status, saved) = server.post("/designs/d/pin", json!({"node": "hook", "output": "quiet"}));
    assert_eq!((status, &saved["ok"]), (200, &json!(true)), "{saved}");
    let (status, saved) = server.post("/designs/d/pin", json!({"node": "fetch", "from_run": normal_id}));
    assert_eq!((status, &saved["ok"]), (200, &json!(true)), "{saved}");

    let (status, test) = server.post("/designs/d/run", json!({"test": true}));
    assert_eq!((status, &test["test"], &test["status"]), (200, &json!(true), &json!("done")), "{test}");
    assert_eq!((fetches(&work), hooks(&peer)), (1, 1), "a pinned step ran or a pinned output sent");
    assert_eq!(test["outputs"]["shout"]["text"], "got fresh words");

    let (status, only) = server.post("/designs/d/run", json!({"only": "shout"}));
    assert_eq!((status, &only["test"], &only["outputs"]["shout"]["text"]), (200, &json!(true), &json!("got fresh words")), "{only}");
    let (status, until) = server.post("/designs/d/run", json!({"until": "check", "test": false}));
    assert_eq!((status, &until["test"]), (200, &json!(true)), "until is a test run: {until}");
    assert!(until["outputs"].get("shout").is_none());
    assert_eq!(server.post("/designs/d/run", json!({"only": "shout", "until": "check"})).0, 400);
    assert_eq!(server.post("/designs/d/run", json!({"test": "yes"})).0, 400);
    assert_eq!((fetches(&work), hooks(&peer)), (1, 1));

    // The listing and a run's page say which runs were tests.
    let (_, listing) = server.get("/runs?design=d");
    let marks: Vec<&Value> = listing["runs"].as_array().expect("runs").iter().map(|r| &r["test"]).collect();
    assert_eq!(marks, [&json!(true), &json!(true), &json!(true), &json!(false)]);
    let (_, one) = server.get(&format!("/runs/{}", test["run_id"].as_str().expect("id")));
    assert_eq!(one["test"], true);

    // Refused: a body naming none or two of the ways, a run that is not there, a pin that does
    // not fit its step (answered with the validator's report, and nothing saved).
    let design_before = home.stored_design("d");
    assert_eq!(server.post("/designs/d/pin", json!({"node": "hook"})).0, 400);
    assert_eq!(server.post("/designs/d/pin", json!({"node": "hook", "output": "x", "remove": true})).0, 400);
    assert_eq!(server.post("/designs/d/pin", json!({"node": "hook", "from_run": "aaaaaaaaaaaa"})).0, 409);
    assert_eq!(server.post("/designs/nope/pin", json!({"node": "hook", "output": "x"})).0, 404);
    let (status, refused) = server.post("/designs/d/pin", json!({"node": "check", "output": {"text": "yes"}}));
    assert_eq!((status, &refused["ok"]), (200, &json!(false)), "{refused}");
    assert_eq!(home.stored_design("d"), design_before, "a refused pin changed the design");

    // Removing pins: a normal-looking test run runs everything again.
    for node in ["hook", "fetch", "fetch"] {
        let (status, body) = server.post("/designs/d/pin", json!({"node": node, "remove": true}));
        assert_eq!((status, &body["ok"]), (200, &json!(true)), "{body}");
    }
    let (_, test) = server.post("/designs/d/run", json!({"test": true}));
    assert_eq!((fetches(&work), hooks(&peer)), (2, 2), "{test}");
    assert!(test["steps"].as_array().expect("steps").iter().all(|s| s.get("pinned").is_none()));

    // The shape of a test run's result.
    let (_, _) = server.post("/designs/d/pin", json!({"node": "hook", "output": "quiet"}));
    let (_, mut test) = server.post("/designs/d/run", json!({"test": true, "input": {"n": 1}}));
    scrub_for_snapshot(&mut test, work.path());
    insta::assert_json_snapshot!("test_run_result", test);
}

/// Ids, times and the temporary directory made stable for a snapshot.
fn scrub_for_snapshot(v: &mut Value, work: &Path) {
    match v {
        Value::String(s) if chrono::DateTime::parse_from_rfc3339(s).is_ok() => *s = "[ts]".into(),
        Value::String(s) => *s = s.replace(work.to_str().unwrap_or_default(), "[work]"),
        Value::Array(items) => items.iter_mut().for_each(|i| scrub_for_snapshot(i, work)),
        Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                match k.as_str() {
                    "run_id" => *val = json!("[id]"),
                    "version" if val.is_u64() => *val = json!("[n]"),
                    _ => scrub_for_snapshot(val, work),
                }
            }
        }
        _ => {}
    }
}
