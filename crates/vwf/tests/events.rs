//! Event triggers (SPEC §3 emit, §10 event): `vwf emit` and emit nodes start every design that
//! listens, with `{event, payload}` as input; chains of designs emitting to each other are cut at
//! the depth limit; a cooldown skips events that come too soon; bad names are refused.

use crate::common;

use common::{Home, later, snapshot};
use serde_json::{Value, json};
use vwf_core::limits::{EVENT_COOLDOWN_SECONDS, EVENT_DEPTH};

/// A design started by `sources`, whose output repeats the event's payload.
fn listener(sources: &[&str], extra: Value) -> Value {
    let mut trigger = json!({"id": "t", "type": "trigger", "mode": "event", "sources": sources});
    if let (Some(t), Some(e)) = (trigger.as_object_mut(), extra.as_object()) {
        t.extend(e.clone());
    }
    json!({"nodes": [trigger, {"id": "o", "type": "output", "template": "{{trigger.event}}: {{trigger.payload}}"}],
           "edges": [{"from": "t", "to": "o"}]})
}

/// A design started by `sources` (or by hand when `None`) that emits `event`.
fn emitter(sources: Option<&[&str]>, event: &str) -> Value {
    let trigger = match sources {
        Some(s) => json!({"id": "t", "type": "trigger", "mode": "event", "sources": s}),
        None => json!({"id": "t", "type": "trigger", "mode": "manual"}),
    };
    json!({"nodes": [trigger, {"id": "e", "type": "emit", "event": event, "payload": "from {{run.design}}"}],
           "edges": [{"from": "t", "to": "e"}]})
}

fn designs_of(runs: &Value) -> Vec<String> {
    let mut d: Vec<String> = runs.as_array().expect("runs").iter().map(|r| r["design"].as_str().unwrap_or("").to_string()).collect();
    d.sort();
    d
}

fn all_runs(home: &Home) -> Vec<Value> {
    let (code, body) = home.json(&["runs", "--limit", "1000"]);
    assert_eq!(code, 0, "{body}");
    body["runs"].as_array().cloned().unwrap_or_default()
}

#[test]
fn vwf_emit_starts_every_design_listening() {
    let home = Home::new();
    home.save("exact", &listener(&["build.done"], json!({})));
    home.save("prefix", &listener(&["build.*"], json!({})));
    home.save("other", &listener(&["deploy.done", "builds.*"], json!({})));
    home.save(
        "manual",
        &json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"}, {"id": "o", "type": "output"}],
                                "edges": [{"from": "t", "to": "o"}]}),
    );

    let (code, body) = home.json(&["emit", "build.done", "--payload", r#"{"sha": "abc123"}"#]);
    assert_eq!(code, 0, "{body}");
    assert_eq!(body["event"], "build.done");
    assert_eq!(designs_of(&body["runs"]), vec!["exact", "prefix"]);
    for run in body["runs"].as_array().expect("runs") {
        assert_eq!(run["status"], "done", "{run}");
        assert_eq!(run["trigger"]["mode"], "event");
        assert_eq!(run["trigger"]["input"], json!({"event": "build.done", "payload": {"sha": "abc123"}}));
        assert_eq!(run["outputs"]["o"]["text"], r#"build.done: {"sha":"abc123"}"#);
    }
    assert_eq!(all_runs(&home).len(), 2, "the non-matching and manual designs were not started");

    let (code, body) = home.json(&["emit", "nobody.listens"]);
    assert_eq!(code, 0);
    assert_eq!(body["runs"], json!([]));
    let out = home.vwf().args(["emit", "nobody.listens"]).output().expect("vwf");
    assert!(String::from_utf8_lossy(&out.stdout).contains("No design listens to nobody.listens"));
}

#[test]
fn an_emit_node_starts_listening_designs() {
    let home = Home::new();
    home.save("a", &emitter(None, "a.done"));
    home.save("b", &listener(&["a.done"], json!({})));

    let (code, run) = home.json(&["run", "a"]);
    assert_eq!(code, 0, "{run}");
    let emit = &run["outputs"]["e"];
    assert_eq!(emit["event"], "a.done", "{run}");
    let started = emit["runs"].as_array().expect("runs started by the emit");
    assert_eq!(started.len(), 1);

    let (code, b) = home.json(&["show", started[0].as_str().expect("run id")]);
    assert_eq!(code, 0, "{b}");
    assert_eq!(b["design"], "b");
    assert_eq!(b["status"], "done");
    assert_eq!(b["trigger"]["input"], json!({"event": "a.done", "payload": "from a"}));
    assert_eq!(b["outputs"]["o"]["text"], "a.done: from a");
}

#[test]
fn designs_emitting_to_each_other_are_cut_by_the_depth_limit() {
    let home = Home::new();
    home.save("a", &emitter(None, "x"));
    home.save("b", &emitter(Some(&["x"]), "y"));
    home.save("a2", &emitter(Some(&["y"]), "x"));

    let (_, run) = home.json(&["run", "a"]);
    assert_eq!(run["design"], "a");
    let runs = all_runs(&home);
    // The hand-started run plus one per emit level the limit allows: a, b, a2, b, a2, ...
    assert_eq!(runs.len(), 1 + EVENT_DEPTH as usize, "{runs:#?}");
    let failed: Vec<&Value> = runs.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 1, "only the deepest run fails: {runs:#?}");
    let error = failed[0]["error"].as_str().expect("error");
    assert!(error.contains(&format!("chains stop at {EVENT_DEPTH}")), "{error}");
    assert_eq!(failed[0]["failed_node"], "e");
    assert!(runs.iter().filter(|r| r["status"] == "done").count() == EVENT_DEPTH as usize);
}

#[test]
fn cooldown_skips_a_second_event_within_the_window() {
    let home = Home::new();
    home.save("calm", &listener(&["ping"], json!({"cooldown_seconds": 120})));
    let t0 = "2026-06-03T10:00:00Z";

    let (code, first) = home.json_at(t0, &["emit", "ping"]);
    assert_eq!(code, 0, "{first}");
    assert_eq!(designs_of(&first["runs"]), vec!["calm"]);

    let (code, second) = home.json_at(&later(t0, 1), &["emit", "ping"]);
    assert_eq!(code, 0, "{second}");
    assert_eq!(second["runs"], json!([]));
    assert_eq!(second["skipped"][0]["design"], "calm");
    assert!(second["skipped"][0]["reason"].as_str().is_some_and(|r| r.contains("cooling down")), "{second}");

    let (_, third) = home.json_at(&later(t0, 3), &["emit", "ping"]);
    assert_eq!(designs_of(&third["runs"]), vec!["calm"], "after the window the design starts again");
    assert_eq!(all_runs(&home).len(), 2);
}

/// Cooldowns no validator bounds: huge, negative, fractional, past the top of the range.
fn out_of_range_cooldowns() -> Vec<Value> {
    let top = EVENT_COOLDOWN_SECONDS.1;
    vec![
        json!(u64::MAX),
        json!(i64::MAX),
        json!(1u64 << 62),
        json!(top + 1),
        json!(-1),
        json!(i64::MIN),
        json!(1.5),
        json!(1e300),
        json!("60"),
    ]
}

#[test]
fn a_cooldown_out_of_range_is_refused_at_save_and_never_breaks_an_emit() {
    let home = Home::new();
    let before = snapshot(&home);
    for bad in out_of_range_cooldowns() {
        let design = listener(&["ping"], json!({"cooldown_seconds": bad}));
        let (code, body) = home.json(&["save", "calm", &design.to_string()]);
        assert_eq!(code, 5, "cooldown {bad}: a design with errors is refused: {body}");
        let errors = body["errors"].as_array().expect("errors");
        assert!(
            errors.iter().any(|e| e["field"] == "cooldown_seconds" && e["message"].as_str().is_some_and(|m| m.contains("from 0 to"))),
            "{body}"
        );
    }
    assert_eq!(snapshot(&home), before, "a refused save writes nothing");

    // The top of the range works: the event starts the design, then it cools down that long.
    let top = EVENT_COOLDOWN_SECONDS.1;
    home.save("calm", &listener(&["ping"], json!({"cooldown_seconds": top})));
    let t0 = "2026-06-03T10:00:00Z";
    let (code, first) = home.json_at(t0, &["emit", "ping"]);
    assert_eq!((code, designs_of(&first["runs"])), (0, vec!["calm".to_string()]), "{first}");
    let almost = later(t0, (top / 60) as i64 - 1);
    let (code, second) = home.json_at(&almost, &["emit", "ping"]);
    assert_eq!((code, &second["runs"]), (0, &json!([])), "{second}");
    let (_, third) = home.json_at(&later(t0, (top / 60) as i64 + 1), &["emit", "ping"]);
    assert_eq!(designs_of(&third["runs"]), vec!["calm"], "{third}");

    // Designs written before the bound existed sit in the store as they were saved: an event
    // skips each with the validator's verdict, through `vwf emit` and through an emit step.
    let designs = home.path().join("workflow-designs");
    for (i, bad) in out_of_range_cooldowns().into_iter().enumerate() {
        let design = listener(&["ping"], json!({"cooldown_seconds": bad}));
        std::fs::write(designs.join(format!("old-{i}.json")), design.to_string()).expect("write an old design");
    }
    let t1 = later(t0, (top / 60) as i64 + 2);
    let (code, body) = home.json_at(&t1, &["emit", "ping"]);
    assert_eq!(code, 0, "{body}");
    let skipped = body["skipped"].as_array().expect("skipped");
    for i in 0..out_of_range_cooldowns().len() {
        let entry = skipped.iter().find(|s| s["design"] == format!("old-{i}")).unwrap_or_else(|| panic!("old-{i} not skipped: {body}"));
        assert!(entry["reason"].as_str().is_some_and(|r| r.contains("cooldown_seconds")), "{entry}");
    }
    home.save("emitter", &emitter(None, "ping"));
    let (code, run) = home.json_at(&later(&t1, 1), &["run", "emitter"]);
    assert_eq!((code, &run["status"]), (0, &json!("done")), "{run}");
    let started: Vec<String> = run["outputs"]["e"]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|id| home.json(&["show", id.as_str().unwrap_or("")]).1["design"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(started.iter().all(|d| d == "calm"), "only the valid design may start: {started:?}");
}

#[test]
fn bad_event_names_are_refused() {
    let home = Home::new();
    home.save("any", &listener(&["a.*"], json!({})));
    let before = snapshot(&home);
    for bad in ["bad name", "a/b", "../etc", "", "a.*", "ünïcode"] {
        let (code, body) = home.json(&["emit", bad]);
        assert_eq!(code, 2, "{bad:?}: {body}");
        assert_eq!(body["ok"], false);
        assert!(body["error"].as_str().is_some_and(|e| e.contains("bad event name")), "{body}");
    }
    let out = home.vwf().args(["emit", "a.b", "--payload", "{not json"]).output().expect("vwf");
    assert_eq!(common::code(&out), 2, "a payload that is not JSON is a bad request too");
    assert_eq!(snapshot(&home), before, "nothing was started or written");
}

/// A design started by `storm` whose loop emits `storm` once per item of the payload's `items`:
/// each run starts two more, so without a cap one event would start 2^8 - 1 = 255 runs.
fn storm() -> Value {
    json!({"nodes": [
        {"id": "t", "type": "trigger", "mode": "event", "sources": ["storm"]},
        {"id": "each", "type": "loop", "over": "{{trigger.payload.items}}"},
        {"id": "again", "type": "emit", "event": "storm", "payload": {"items": [1, 2]}}
    ], "edges": [{"from": "t", "to": "each"}, {"from": "each", "to": "again", "label": "each"}]})
}

/// The runs of a self-emitting storm: how many, and every one of them from the same origin (the
/// first run), which is the run POST /events answered.
fn storm_runs(home: &Home, first: &Value) -> Vec<Value> {
    let runs = all_runs(home);
    let origin = first["run_id"].as_str().expect("run_id");
    for run in &runs {
        assert_eq!(run["trigger"]["origin"], json!(origin), "{run}");
    }
    runs
}

/// The cap on the breadth of a chain: one POST /events to a design that emits its own event from
/// a 2-item loop starts exactly `[limits] runs_per_origin` runs; the emits past the cap fail with
/// an error naming the limit and its config key; the validator warned about the design.
#[test]
fn a_self_emitting_loop_stops_at_runs_per_origin_with_a_clear_error() {
    use common::server::{Server, write_config};
    let home = Home::new();
    write_config(&home, "[limits]\nruns_per_origin = 10\n");
    let server = Server::start(&home);
    let (status, saved) = server.post("/designs/storm/validate", json!({"graph": storm()}));
    assert_eq!(status, 200, "{saved}");
    let warning = saved["warnings"].as_array().and_then(|w| w.iter().find(|w| w["node"] == "again")).expect("a warning on the emit");
    assert!(warning["message"].as_str().unwrap_or_default().contains("which this design's own trigger \"t\" listens to"), "{warning}");
    server.save("storm", storm());

    let (status, answer) = server.post("/events/storm", json!({"payload": {"items": [1, 2]}}));
    assert_eq!((status, &answer["ok"]), (200, &json!(true)), "{answer}");
    let first = &answer["runs"][0];
    let runs = storm_runs(&home, first);
    assert_eq!(runs.len(), 10, "exactly runs_per_origin runs: {runs:#?}");
    let capped = |run: &Value| run["error"].as_str().is_some_and(|e| e.contains("([limits] runs_per_origin = 10)"));
    let failed: Vec<&Value> = runs.iter().filter(|r| r["status"] == "failed").collect();
    let error = failed.iter().find(|r| capped(r)).and_then(|r| r["error"].as_str()).expect("the cap's error");
    assert!(
        error.contains("at step again: event \"storm\" would start another run of design storm, but origin")
            && error.contains("has started 10 runs, the most one event or run may start directly or through emits"),
        "{error}"
    );
    // The emit is in the loop's body: the loop fails, naming the pass and the emit step.
    assert!(failed.iter().all(|r| r["failed_node"] == "each"), "{failed:#?}");
    // The first run's own second emit came after the cap too.
    assert_eq!(first["status"], json!("failed"), "{first}");
    assert!(capped(first), "{first}");

    // An event is an origin too: with one run left to start, of two listening designs one starts
    // and the answer says why the other did not.
    write_config(&home, "[limits]\nruns_per_origin = 1\n");
    drop(server);
    let server = Server::start(&home);
    server.save("hear-a", listener(&["ping"], json!({})));
    server.save("hear-b", listener(&["ping"], json!({})));
    let (status, answer) = server.post("/events/ping", json!({"payload": 1}));
    assert_eq!((status, answer["runs"].as_array().map(Vec::len)), (200, Some(1)), "{answer}");
    assert_eq!(answer["runs"][0]["status"], json!("done"), "{answer}");
    let skipped = &answer["skipped"][0];
    assert_eq!(skipped["design"], json!("hear-b"), "{answer}");
    assert!(skipped["reason"].as_str().unwrap_or_default().contains("([limits] runs_per_origin = 1)"), "{answer}");
}

/// Without a config, the cap is 100: the same storm from `vwf emit` starts exactly 100 runs.
#[test]
fn the_default_cap_is_one_hundred_runs_per_origin() {
    let home = Home::new();
    home.save("storm", &storm());
    let (_, answer) = home.json(&["emit", "storm", "--payload", r#"{"items": [1, 2]}"#]);
    assert_eq!(answer["ok"], json!(true), "{answer}");
    let runs = storm_runs(&home, &answer["runs"][0]);
    assert_eq!(runs.len(), vwf_core::limits::RUNS_PER_ORIGIN_DEFAULT as usize);
    assert!(runs.iter().any(|r| r["error"].as_str().is_some_and(|e| e.contains("([limits] runs_per_origin = 100)"))), "{runs:#?}");
}

/// The same count on PostgreSQL, where the origin's runs are read from the database.
#[test]
fn postgres_a_self_emitting_loop_stops_at_runs_per_origin() {
    let home = Home::with_backend(common::Backend::Postgres);
    common::server::write_config(&home, "[limits]\nruns_per_origin = 10\n");
    home.save("storm", &storm());
    let (_, answer) = home.json(&["emit", "storm", "--payload", r#"{"items": [1, 2]}"#]);
    assert_eq!(answer["ok"], json!(true), "{answer}");
    let runs = storm_runs(&home, &answer["runs"][0]);
    assert_eq!(runs.len(), 10, "{runs:#?}");
    assert!(runs.iter().any(|r| r["error"].as_str().is_some_and(|e| e.contains("([limits] runs_per_origin = 10)"))), "{runs:#?}");
}

/// The count is kept by the store, not by a process: a run that emits, parks at a gate and goes on
/// emitting after the gate is answered by another `vwf` process still has the earlier run counted.
#[test]
fn the_runs_an_origin_started_are_counted_across_processes() {
    let home = Home::new();
    common::server::write_config(&home, "[limits]\nruns_per_origin = 2\n");
    home.save("hear", &listener(&["ping"], json!({})));
    home.save(
        "fan",
        &json!({"nodes": [
            {"id": "t", "type": "trigger", "mode": "manual"},
            {"id": "first", "type": "emit", "event": "ping"},
            {"id": "gate", "type": "approval", "question": "More?", "options": ["more"], "timeout_minutes": 60},
            {"id": "each", "type": "loop", "over": "{{trigger.items}}"},
            {"id": "again", "type": "emit", "event": "ping"}
        ], "edges": [
            {"from": "t", "to": "first"}, {"from": "first", "to": "gate"}, {"from": "gate", "to": "each", "label": "more"},
            {"from": "each", "to": "again", "label": "each"}
        ]}),
    );
    let (_, parked) = home.json(&["run", "fan", "--input", r#"{"items": [1, 2, 3]}"#]);
    assert_eq!(parked["status"], json!("awaiting_approval"), "{parked}");
    let id = parked["run_id"].as_str().expect("run_id");
    let (_, done) = home.json(&["approve", id, "gate", "more"]);
    assert_eq!(done["status"], json!("failed"), "{done}");
    assert!(done["error"].as_str().is_some_and(|e| e.contains("has started 2 runs") && e.contains("runs_per_origin = 2")), "{done}");
    let heard: Vec<Value> = all_runs(&home).into_iter().filter(|r| r["design"] == "hear").collect();
    assert_eq!(heard.len(), 2, "{heard:#?}");
    assert!(heard.iter().all(|r| r["trigger"]["origin"] == json!(id)), "{heard:#?}");
}
