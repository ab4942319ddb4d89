//! Schedule jobs (SPEC §10, §13): presets, validation, zones and daylight saving, pause / resume /
//! run / remove, and the scheduler's tick — fires once, never twice across a restart, records a
//! fire missed while nothing ticked instead of running it late, and never answers a gate.
//!
//! Library tests pin time with a `FixedClock` app and pass `now` explicitly; the CLI tests pin it
//! with `VWF_NOW`.

use crate::common;
use vwf_store::Wait;

use std::path::Path;

use chrono::{DateTime, Utc};
use common::{Home, snapshot};
use serde_json::{Value, json};
use vwf::app::App;
use vwf::clock::FixedClock;
use vwf::failure::Failure;
use vwf::schedules::{self, Job};
use vwf::service::ContractBody;
use vwf_core::names::DesignName;

fn at(s: &str) -> DateTime<Utc> {
    vwf_core::time::parse(s).unwrap_or_else(|| panic!("bad time {s}"))
}

fn app_at(home: &Path, now: &str) -> App {
    App { clock: Box::new(FixedClock::new(at(now))), ..App::open(home.to_path_buf()).expect("open app") }
}

fn name(s: &str) -> DesignName {
    DesignName::parse(s).expect("design name")
}

/// Saves a design through the save tool (so it is validated like any saved design).
fn save(app: &App, design: &str, graph: Value) {
    let reply = vwf::tools::call(app, "workflow_design_save", &json!({"name": design, "graph": graph}));
    assert_eq!(reply.body["ok"], true, "save {design}: {}", reply.body);
}

fn hello() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "out", "type": "output", "template": "hello"}
        ],
        "edges": [{"from": "start", "to": "out"}]
    })
}

fn gated() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Ship it?", "options": ["ship", "hold"], "timeout_minutes": 120},
            {"id": "out", "type": "output", "template": "shipped"}
        ],
        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "ship"}]
    })
}

fn upsert(app: &App, design: &str, body: Value) -> Result<Job, Failure> {
    Ok(schedules::upsert(app, &name(design), &body, app.clock.now())?)
}

/// What a surface answers for a schedule operation that failed.
fn failed<T: std::fmt::Debug>(result: Result<T, vwf::run_error::RunError>) -> Failure {
    Failure::from(result.unwrap_err())
}

fn runs(app: &App) -> Vec<Value> {
    app.store.list_runs(100).wait().expect("list runs").into_iter().map(|e| e.run.expect("readable run")).collect()
}

fn schedules_dir(home: &Path) -> std::path::PathBuf {
    home.join("workflow-schedules")
}

#[test]
fn presets_become_cron_expressions_and_human_lines() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z"); // a Monday
    save(&app, "brief", hello());
    for (body, cron, human, next) in [
        (json!({"preset": "daily", "time": "09:00"}), "0 9 * * *", "Daily at 09:00", "2026-06-01T09:00:00Z"),
        (json!({"preset": "weekdays", "time": "09:00"}), "0 9 * * 1-5", "Weekdays at 09:00", "2026-06-01T09:00:00Z"),
        (json!({"preset": "weekly", "time": "09:00", "dow": 1}), "0 9 * * 1", "Weekly on Monday at 09:00", "2026-06-01T09:00:00Z"),
        (json!({"preset": "weekly", "time": "07:30", "dow": 0}), "30 7 * * 0", "Weekly on Sunday at 07:30", "2026-06-07T07:30:00Z"),
        (json!({"preset": "hourly", "minute": 15}), "15 * * * *", "Hourly at :15", "2026-06-01T08:15:00Z"),
        (json!({"preset": "custom", "cron": " */5 * * * * "}), "*/5 * * * *", "Every 5 minutes", "2026-06-01T08:05:00Z"),
    ] {
        let job = upsert(&app, "brief", body.clone()).unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!((job.cron.as_str(), job.human.as_str()), (cron, human), "{body}");
        assert_eq!(job.next_run_at, Some(at(next)), "{body}");
        assert_eq!((job.job_id.as_str(), job.name.as_str(), job.design.as_str()), ("wf-brief", "workflow:brief", "brief"));
        assert_eq!((job.tz.as_str(), job.paused, job.last_run_at), ("UTC", false, None));
    }
    // One job per design: the last upsert replaced the others, and the file holds exactly it.
    let listed = schedules::list(&app).unwrap();
    assert_eq!(listed.len(), 1);
    let stored: Value = serde_json::from_slice(&std::fs::read(schedules_dir(home.path()).join("wf-brief.json")).unwrap()).unwrap();
    assert_eq!(stored["cron"], "*/5 * * * *");
    assert_eq!(listed[0].as_ref().unwrap(), &schedules::get(&app, "wf-brief").unwrap());
}

#[test]
fn the_job_shape_is_the_contract() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    let job = upsert(&app, "brief", json!({"preset": "weekdays", "time": "09:00", "tz": "Europe/Berlin"})).unwrap();
    let value = serde_json::to_value(&job).unwrap();
    for key in ["job_id", "name", "design", "cron", "human", "tz", "paused", "next_run_at", "last_run_at", "prompt", "deliver"] {
        assert!(value.get(key).is_some(), "job lacks {key}: {value}");
    }
    insta::assert_json_snapshot!("schedule_job", value);
}

#[test]
fn schedule_errors_name_the_field_and_write_nothing() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    for (body, starts) in [
        (json!({"preset": "daily", "time": "25:00"}), "time \"25:00\""),
        (json!({"preset": "daily"}), "time:"),
        (json!({"preset": "custom", "cron": "0 9 * *"}), "cron needs exactly five fields"),
        (json!({"preset": "custom", "cron": "0 25 * * *"}), "cron: hour field \"25\""),
        (json!({"preset": "custom", "cron": "0 0 30 2 *"}), "cron: \"0 0 30 2 *\" never fires"),
        (json!({"preset": "custom", "cron": "0 0 31 2,4,6,9,11 *"}), "cron: \"0 0 31 2,4,6,9,11 *\" never fires"),
        (json!({"preset": "custom", "cron": "-1 * * * *"}), "cron: minute field \"-1\": negative numbers are not allowed"),
        (json!({"preset": "custom", "cron": "0\n9 * * *"}), "cron: minute field \"0\\n9\" contains U+000A"),
        (json!({"preset": "daily", "time": "09:00", "tz": "Mars/Olympus"}), "tz \"Mars/Olympus\""),
        (json!({"preset": "fortnightly"}), "preset:"),
        (json!({"preset": "hourly", "minute": 60}), "minute 60"),
        (json!({"preset": "weekly", "time": "09:00", "dow": 7}), "dow 7"),
        (json!({"preset": "daily", "time": 900}), "time must be a string"),
        (json!({"preset": "daily", "time": "09:00", "paused": "yes"}), "paused must be true or false"),
        (json!("daily"), "the schedule must be an object"),
    ] {
        let err = upsert(&app, "brief", body.clone()).expect_err(&body.to_string());
        assert_eq!(err.status(), 400, "{body}: {err}");
        assert!(err.to_string().starts_with(starts), "{body}: {err}");
    }
    let err = upsert(&app, "missing", json!({"preset": "daily", "time": "09:00"})).unwrap_err();
    assert_eq!((err.status(), err.to_string()), (404, "design \"missing\" not found".to_string()));
    assert!(!schedules_dir(home.path()).exists(), "a refused schedule wrote something");
    assert!(schedules::list(&app).unwrap().is_empty());
}

#[test]
fn next_fire_follows_the_berlin_wall_clock_across_the_spring_change() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-03-27T12:00:00Z");
    save(&app, "brief", hello());
    // 09:00 in Berlin is 08:00Z in winter time (CET) and 07:00Z from 2026-03-29 (CEST).
    let job = upsert(&app, "brief", json!({"preset": "daily", "time": "09:00", "tz": "Europe/Berlin"})).unwrap();
    assert_eq!((job.tz.as_str(), job.next_run_at), ("Europe/Berlin", Some(at("2026-03-28T08:00:00Z"))));
    let fired = schedules::tick(&app, at("2026-03-28T08:00:10Z")).unwrap();
    assert_eq!(fired.len(), 1);
    assert_eq!(schedules::get(&app, "wf-brief").unwrap().next_run_at, Some(at("2026-03-29T07:00:00Z")));
    schedules::tick(&app, at("2026-03-29T07:00:05Z")).unwrap();
    assert_eq!(schedules::get(&app, "wf-brief").unwrap().next_run_at, Some(at("2026-03-30T07:00:00Z")));
    // A wall time inside the skipped hour happens when the gap ends: 03:00 CEST = 01:00Z.
    let job = schedules::upsert(
        &app,
        &name("brief"),
        &json!({"preset": "custom", "cron": "30 2 * * *", "tz": "Europe/Berlin"}),
        at("2026-03-28T12:00:00Z"),
    )
    .unwrap();
    assert_eq!((job.human.as_str(), job.next_run_at), ("Daily at 02:30", Some(at("2026-03-29T01:00:00Z"))));
}

#[test]
fn tick_fires_a_due_job_once() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    upsert(&app, "brief", json!({"preset": "daily", "time": "09:00"})).unwrap();
    assert!(schedules::tick(&app, at("2026-06-01T08:59:59Z")).unwrap().is_empty(), "not due yet");
    let now = at("2026-06-01T09:00:20Z");
    let fired = schedules::tick(&app, now).unwrap();
    assert_eq!(fired.len(), 1, "{fired:?}");
    let f = &fired[0];
    assert_eq!((f.job_id.as_str(), f.design.as_str(), f.scheduled_for), ("wf-brief", "brief", Some(at("2026-06-01T09:00:00Z"))));
    assert_eq!((f.status.map(|s| s.as_str()), &f.error, f.missed.len()), (Some("done"), &None, 0));
    let run = run_file_at(home.path(), f.run_id.as_deref().unwrap());
    assert_eq!(run["trigger"]["mode"], "schedule");
    assert_eq!(run["trigger"]["input"]["job_id"], "wf-brief");
    assert_eq!(run["trigger"]["input"]["fired_at"], "2026-06-01T09:00:20.000Z");
    assert_eq!(run["created_at"], "2026-06-01T09:00:20.000Z", "the run sees the tick's now");
    let job = schedules::get(&app, "wf-brief").unwrap();
    assert_eq!((job.last_run_at, job.next_run_at), (Some(now), Some(at("2026-06-02T09:00:00Z"))));
    // The same instant again, and a little later: nothing is due any more.
    assert!(schedules::tick(&app, now).unwrap().is_empty());
    assert!(schedules::tick(&app, at("2026-06-01T09:00:50Z")).unwrap().is_empty());
    assert_eq!(runs(&app).len(), 1);
}

fn run_file_at(home: &Path, run_id: &str) -> Value {
    let path = home.join("workflow-runs").join(format!("{run_id}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).expect("run file is JSON")
}

#[test]
fn a_restart_within_the_same_minute_does_not_fire_again() {
    let home = tempfile::tempdir().unwrap();
    let job_file = schedules_dir(home.path()).join("wf-peek.json");
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    // The run prints the job file as it stands while the run works: the fire is already recorded.
    save(
        &app,
        "peek",
        json!({
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "look", "type": "command", "argv": ["cat", job_file.to_string_lossy()]},
                {"id": "out", "type": "output"}
            ],
            "edges": [{"from": "start", "to": "look"}, {"from": "look", "to": "out"}]
        }),
    );
    upsert(&app, "peek", json!({"preset": "daily", "time": "09:00"})).unwrap();
    let fired = schedules::tick(&app, at("2026-06-01T09:00:05Z")).unwrap();
    assert_eq!(fired[0].status.map(|s| s.as_str()), Some("done"), "{fired:?}");
    let run = run_file_at(home.path(), fired[0].run_id.as_deref().unwrap());
    let seen: Value = serde_json::from_str(run["outputs"]["look"]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["last_run_at"], "2026-06-01T09:00:05.000Z", "the fire was written before the run started");
    assert_eq!(seen["next_run_at"], "2026-06-02T09:00:00.000Z");
    drop(app);

    // A new process on the same home, still within the fire's minute.
    let restarted = app_at(home.path(), "2026-06-01T09:00:40Z");
    assert!(schedules::tick(&restarted, restarted.clock.now()).unwrap().is_empty());
    assert_eq!(runs(&restarted).len(), 1);
}

#[test]
fn a_fire_missed_while_down_is_recorded_not_run_late() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    let job = upsert(&app, "brief", json!({"preset": "daily", "time": "09:00"})).unwrap();
    let now = job.next_run_at.unwrap() + chrono::Duration::hours(3);
    let fired = schedules::tick(&app, now).unwrap();
    assert_eq!(fired.len(), 1);
    let f = &fired[0];
    assert_eq!((f.scheduled_for, &f.run_id, &f.error), (None, &None, &None), "{f:?}");
    assert_eq!(serde_json::to_value(&f.missed).unwrap(), json!([{"at": "2026-06-01T09:00:00.000Z"}]));
    assert!(runs(&app).is_empty(), "a missed fire must not run late");
    let job = schedules::get(&app, "wf-brief").unwrap();
    assert_eq!(serde_json::to_value(&job.missed).unwrap(), json!([{"at": "2026-06-01T09:00:00.000Z"}]));
    assert_eq!((job.last_run_at, job.next_run_at), (None, Some(at("2026-06-02T09:00:00Z"))));
    assert!(job.next_run_at.unwrap() > now);
    assert!(schedules::tick(&app, now).unwrap().is_empty());

    // Hourly, down from 09:00 to 12:00:30: 09, 10 and 11 o'clock are missed, 12 o'clock still runs.
    let job = schedules::upsert(&app, &name("brief"), &json!({"preset": "hourly"}), at("2026-06-02T08:30:00Z")).unwrap();
    assert_eq!(job.next_run_at, Some(at("2026-06-02T09:00:00Z")));
    let fired = schedules::tick(&app, at("2026-06-02T12:00:30Z")).unwrap();
    let missed: Vec<String> = fired[0].missed.iter().map(|m| vwf_core::time::format(&m.at)).collect();
    assert_eq!(missed, ["2026-06-02T09:00:00.000Z", "2026-06-02T10:00:00.000Z", "2026-06-02T11:00:00.000Z"]);
    assert_eq!((fired[0].scheduled_for, fired[0].status.map(|s| s.as_str())), (Some(at("2026-06-02T12:00:00Z")), Some("done")));
    let job = schedules::get(&app, "wf-brief").unwrap();
    assert_eq!(job.missed.len(), 4, "the earlier miss is kept too");
    assert_eq!(job.next_run_at, Some(at("2026-06-02T13:00:00Z")));

    // A long outage keeps only the newest misses.
    let fired = schedules::tick(&app, at("2026-06-04T13:00:00Z")).unwrap();
    assert_eq!(fired[0].missed.len(), schedules::MISSED_KEPT);
    let job = schedules::get(&app, "wf-brief").unwrap();
    assert_eq!(job.missed.len(), schedules::MISSED_KEPT);
    assert_eq!(job.missed.last().map(|m| m.at), Some(at("2026-06-04T12:00:00Z")));
}

/// A job's action named as a request names it, answered as the API answers it.
fn act(app: &App, job_id: &str, action: &str, now: DateTime<Utc>) -> Result<Value, vwf::run_error::RunError> {
    Ok(schedules::action(app, job_id, schedules::JobAction::parse(action)?, now)?.body())
}

#[test]
fn pause_resume_run_and_remove() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    upsert(&app, "brief", json!({"preset": "daily", "time": "09:00"})).unwrap();

    let paused = act(&app, "wf-brief", "pause", at("2026-06-01T08:10:00Z")).unwrap();
    assert_eq!((&paused["ok"], &paused["job"]["paused"], &paused["job"]["next_run_at"]), (&json!(true), &json!(true), &Value::Null));
    assert!(schedules::tick(&app, at("2026-06-01T09:00:00Z")).unwrap().is_empty(), "a paused job never fires");
    // Editing the schedule leaves a paused job paused.
    let job = upsert(&app, "brief", json!({"preset": "daily", "time": "10:00"})).unwrap();
    assert_eq!((job.paused, job.next_run_at), (true, None));

    let resumed = act(&app, "wf-brief", "resume", at("2026-06-01T10:30:00Z")).unwrap();
    assert_eq!(resumed["job"]["paused"], false);
    assert_eq!(resumed["job"]["next_run_at"], "2026-06-02T10:00:00.000Z", "computed from the resume, not the pause");

    let result = act(&app, "wf-brief", "run", at("2026-06-01T11:00:00Z")).unwrap();
    assert_eq!((&result["ok"], &result["status"], &result["design"]), (&json!(true), &json!("done"), &json!("brief")));
    assert_eq!(result["trigger"], json!({"mode": "schedule", "input": {"job_id": "wf-brief", "fired_at": "2026-06-01T11:00:00.000Z"}}));
    let job = schedules::get(&app, "wf-brief").unwrap();
    assert_eq!((job.last_run_at, job.next_run_at), (Some(at("2026-06-01T11:00:00Z")), Some(at("2026-06-02T10:00:00Z"))));
    // An update keeps the last run.
    let job = upsert(&app, "brief", json!({"preset": "daily", "time": "10:00", "paused": false})).unwrap();
    assert_eq!(job.last_run_at, Some(at("2026-06-01T11:00:00Z")));

    let removed = act(&app, "wf-brief", "remove", at("2026-06-01T12:00:00Z")).unwrap();
    assert_eq!(removed, json!({"ok": true, "job_id": "wf-brief", "removed": true}));
    assert!(!schedules_dir(home.path()).join("wf-brief.json").exists());
    assert_eq!(failed(schedules::get(&app, "wf-brief")).status(), 404);

    let now = at("2026-06-01T12:00:00Z");
    for (job_id, action, status) in [
        ("wf-brief", "pause", 404),
        ("wf-nothing", "run", 404),
        ("wf-brief", "snooze", 400),
        ("brief", "pause", 400),
        ("wf-../x", "remove", 400),
    ] {
        let err = failed(act(&app, job_id, action, now));
        assert_eq!(err.status(), status, "{job_id} {action}: {err}");
    }
}

#[test]
fn running_a_job_whose_design_is_gone_or_broken() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    upsert(&app, "brief", json!({"preset": "daily", "time": "09:00"})).unwrap();
    // A design edited into an invalid one: the run is refused with the design's errors.
    let broken = json!({"nodes": [{"id": "a", "type": "agent"}], "edges": []});
    app.store.save_design(&name("brief"), &broken).wait().unwrap();
    let refused = failed(act(&app, "wf-brief", "run", at("2026-06-01T08:30:00Z")));
    assert_eq!(refused.status(), 200, "a design problem is answered 200 (SPEC §13): {refused}");
    let result = refused.body();
    assert_eq!(result["ok"], false, "{result}");
    assert!(result["errors"].as_array().is_some_and(|e| !e.is_empty()), "{result}");
    let fired = schedules::tick(&app, at("2026-06-01T09:00:00Z")).unwrap();
    assert!(fired[0].error.as_deref().is_some_and(|e| e.contains("error")), "{fired:?}");
    assert_eq!(schedules::get(&app, "wf-brief").unwrap().next_run_at, Some(at("2026-06-02T09:00:00Z")));
    // The design deleted: run-now is not found; the tick reports it and moves on.
    std::fs::remove_file(home.path().join("workflow-designs/brief.json")).unwrap();
    assert_eq!(failed(act(&app, "wf-brief", "run", at("2026-06-01T10:00:00Z"))).status(), 404);
    let fired = schedules::tick(&app, at("2026-06-02T09:00:00Z")).unwrap();
    assert!(fired[0].error.as_deref().is_some_and(|e| e.contains("not found")), "{fired:?}");
    assert!(runs(&app).is_empty());
}

#[test]
fn a_scheduled_run_parks_at_a_gate_and_nobody_answers_it() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "ship", gated());
    upsert(&app, "ship", json!({"preset": "hourly", "minute": 0})).unwrap();
    let fired = schedules::tick(&app, at("2026-06-01T09:00:00Z")).unwrap();
    assert_eq!(fired[0].status.map(|s| s.as_str()), Some("awaiting_approval"), "{fired:?}");
    let run_id = fired[0].run_id.clone().unwrap();
    // The next fire starts a new run; the parked one stays parked, its gate unanswered.
    let fired = schedules::tick(&app, at("2026-06-01T10:00:00Z")).unwrap();
    assert_ne!(fired[0].run_id.as_deref(), Some(run_id.as_str()));
    let run = run_file_at(home.path(), &run_id);
    assert_eq!(run["status"], "awaiting_approval");
    assert_eq!(run["pending"]["node"], "gate");
    assert_eq!(run["pending"]["question"], "Ship it?");
    assert!(run["outputs"].get("gate").is_none(), "the gate was answered: {run}");
}

#[test]
fn the_prompt_embeds_the_design_name_as_json() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "night.report_2", hello());
    let job = upsert(&app, "night.report_2", json!({"preset": "daily", "time": "09:00"})).unwrap();
    assert_eq!(job.prompt, schedules::prompt(&name("night.report_2"), &Value::Null));
    assert!(job.prompt.contains(r#"workflow_design_run with the arguments {"name":"night.report_2"}"#), "{}", job.prompt);
    for needle in ["\"night.report_2\"", "awaiting_agent", "workflow_design_respond", "do not answer the approval", "verbatim"] {
        assert!(job.prompt.contains(needle), "prompt lacks {needle:?}:\n{}", job.prompt);
    }
    // The arguments line is exactly the JSON encoding of {"name": <design>}.
    let line = job.prompt.lines().find(|l| l.contains("workflow_design_run")).unwrap();
    let args = line.split("the arguments ").nth(1).unwrap().trim_end_matches('.');
    assert_eq!(serde_json::from_str::<Value>(args).unwrap(), json!({"name": "night.report_2"}));
}

/// A Hermes cron job delivers where the design's output nodes say, when Hermes can reach it; the
/// target follows the design each time the schedule is set.
#[test]
fn the_job_names_the_hermes_targets_of_the_output_nodes() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    let with_output = |deliver: Value| {
        let mut out = json!({"id": "send", "type": "output", "x": 200, "y": 0});
        out.as_object_mut().unwrap().extend(deliver.as_object().unwrap().clone());
        json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual", "x": 0, "y": 0}, out], "edges": [{"from": "start", "to": "send"}]})
    };
    let daily = json!({"preset": "daily", "time": "09:00"});
    for (deliver, want) in [
        (json!({"deliver": "channel", "target": "telegram:123456"}), json!("telegram:123456")),
        (json!({"deliver": "notification", "target": "slack"}), json!("slack")),
        (json!({"deliver": "channel", "target": "discord:alerts"}), Value::Null),
        (json!({}), Value::Null),
    ] {
        save(&app, "brief", with_output(deliver.clone()));
        let job = upsert(&app, "brief", daily.clone()).unwrap();
        assert_eq!(serde_json::to_value(&job).unwrap()["deliver"], want, "{deliver}");
    }
}

#[test]
fn a_listing_skips_foreign_files_and_reports_a_damaged_job() {
    let home = tempfile::tempdir().unwrap();
    let app = app_at(home.path(), "2026-06-01T08:00:00Z");
    save(&app, "brief", hello());
    save(&app, "ship", gated());
    upsert(&app, "brief", json!({"preset": "daily", "time": "09:00"})).unwrap();
    upsert(&app, "ship", json!({"preset": "daily", "time": "09:00"})).unwrap();
    let dir = schedules_dir(home.path());
    std::fs::write(dir.join("trigger-brief.json"), r#"{"last_fire": "2026-06-01T07:00:00Z"}"#).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello").unwrap();
    std::fs::write(dir.join("wf-ship.json"), "{not json").unwrap();
    let listed = schedules::list(&app).unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0].as_ref().map(|j| j.job_id.as_str()), Ok("wf-brief"));
    let (id, why) = listed[1].as_ref().unwrap_err();
    assert_eq!(id, "wf-ship");
    assert!(why.contains("wf-ship.json"), "{why}");
    // The damaged job does not stop the others from firing, and saving it again repairs it.
    let fired = schedules::tick(&app, at("2026-06-01T09:00:00Z")).unwrap();
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].job_id, "wf-brief");
    assert!(upsert(&app, "ship", json!({"preset": "daily", "time": "09:00"})).is_ok());
    assert!(schedules::list(&app).unwrap().iter().all(Result::is_ok));
}

// ---------------------------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------------------------

const T0: &str = "2026-06-01T06:00:00Z"; // 08:00 in Berlin

#[test]
fn cli_set_list_tick_and_run() {
    let home = Home::new();
    home.save("brief", &hello());
    let (code, body) = home.json_at(T0, &["schedule", "set", "brief", "--preset", "weekdays", "--time", "09:00", "--tz", "Europe/Berlin"]);
    assert_eq!(code, 0, "{body}");
    assert_eq!(body["ok"], true);
    let job = &body["job"];
    assert_eq!(
        (&job["job_id"], &job["name"], &job["cron"], &job["human"]),
        (&json!("wf-brief"), &json!("workflow:brief"), &json!("0 9 * * 1-5"), &json!("Weekdays at 09:00"))
    );
    assert_eq!(
        (&job["tz"], &job["paused"], &job["next_run_at"], &job["last_run_at"]),
        (&json!("Europe/Berlin"), &json!(false), &json!("2026-06-01T07:00:00.000Z"), &Value::Null)
    );

    let (code, body) = home.json_at(T0, &["schedule", "list"]);
    assert_eq!(code, 0);
    assert_eq!(body["schedules"].as_array().map(Vec::len), Some(1));
    assert_eq!(body["schedules"][0]["job_id"], "wf-brief");

    let out = home.vwf().env("VWF_NOW", T0).args(["schedule", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = text.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["JOB", "DESIGN", "WHEN", "TZ", "NEXT", "LAST", "STATE"]);
    assert!(text.contains("Weekdays at 09:00") && text.contains("2026-06-01 09:00 CEST") && text.contains("active"), "{text}");

    let (code, body) = home.json_at("2026-06-01T07:00:30Z", &["schedule", "tick"]);
    assert_eq!(code, 0, "{body}");
    assert_eq!(body["fired"][0]["job_id"], "wf-brief");
    assert_eq!(body["fired"][0]["status"], "done");
    let (_, body) = home.json_at("2026-06-01T07:00:45Z", &["schedule", "tick"]);
    assert_eq!(body, json!({"ok": true, "fired": []}));

    let (code, run) = home.json_at("2026-06-01T10:00:00Z", &["schedule", "run", "wf-brief"]);
    assert_eq!((code, &run["status"], &run["trigger"]["mode"]), (0, &json!("done"), &json!("schedule")));
    let (_, body) = home.json_at(T0, &["schedule", "list"]);
    assert_eq!(body["schedules"][0]["last_run_at"], "2026-06-01T10:00:00.000Z");

    let (code, body) = home.json_at(T0, &["schedule", "pause", "wf-brief"]);
    assert_eq!((code, &body["job"]["paused"]), (0, &json!(true)));
    let out = home.vwf().env("VWF_NOW", T0).args(["schedule", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("paused"));
    let (code, body) = home.json_at(T0, &["schedule", "remove", "wf-brief"]);
    assert_eq!((code, &body["removed"]), (0, &json!(true)));
    let (code, body) = home.json_at(T0, &["schedule", "resume", "wf-brief"]);
    assert_eq!((code, &body["ok"]), (3, &json!(false)));
}

#[test]
fn cli_refuses_a_bad_schedule_and_writes_nothing() {
    let home = Home::new();
    home.save("brief", &hello());
    let before = snapshot(&home);
    let (code, body) = home.json_at(T0, &["schedule", "set", "brief", "--preset", "daily", "--time", "25:00"]);
    assert_eq!(code, 2, "{body}");
    assert_eq!(body["ok"], false);
    assert!(body["error"].as_str().is_some_and(|e| e.starts_with("time \"25:00\"")), "{body}");
    let out = home.vwf().env("VWF_NOW", T0).args(["schedule", "set", "brief", "--preset", "custom", "--cron", "0 9 * *"]).output().unwrap();
    assert_eq!(common::code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cron needs exactly five fields"));
    let (code, body) = home.json_at(T0, &["schedule", "set", "brief", "--preset", "custom", "--cron", "0 0 31 4 *"]);
    assert_eq!(code, 2, "a cron that never fires is refused, not saved with next_run_at null: {body}");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("never fires")), "{body}");
    let (code, _) = home.json_at(T0, &["schedule", "set", "ghost", "--preset", "daily", "--time", "09:00"]);
    assert_eq!(code, 3);
    let (code, _) = home.json_at(T0, &["schedule", "pause", "wf-ghost"]);
    assert_eq!(code, 3);
    assert_eq!(snapshot(&home), before);
}

/// A schedule carries the run input: every run it starts gets exactly that input (as a manual run
/// with `--input` would); an update that does not mention it keeps it, `input: null` removes it.
/// Times take a one-digit hour (`7:30` is `07:30`).
#[test]
fn a_schedule_carries_the_run_input_and_takes_a_one_digit_hour() {
    let home = Home::new();
    home.save("greet", &json!({
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "o", "type": "output", "template": "hello {{trigger.city}}"}],
        "edges": [{"from": "start", "to": "o"}]
    }));
    let input = json!({"city": "Oslo \"north\"\nside"});
    let (code, body) =
        home.json_at(T0, &["schedule", "set", "greet", "--preset", "daily", "--time", "7:30", "--input", &input.to_string()]);
    assert_eq!(code, 0, "{body}");
    let job = &body["job"];
    assert_eq!((&job["cron"], &job["human"], &job["input"]), (&json!("30 7 * * *"), &json!("Daily at 07:30"), &input));
    assert!(
        job["prompt"].as_str().unwrap().contains(&json!({"name": "greet", "input": input}).to_string()),
        "the Hermes prompt passes the input: {job}"
    );

    let (code, body) = home.json_at("2026-06-01T07:30:10Z", &["schedule", "tick"]);
    assert_eq!((code, &body["fired"][0]["status"]), (0, &json!("done")), "{body}");
    let run = run_file_at(home.path(), body["fired"][0]["run_id"].as_str().unwrap());
    assert_eq!((&run["trigger"]["mode"], &run["trigger"]["input"]), (&json!("schedule"), &input), "{run}");
    assert_eq!(run["outputs"]["o"]["text"], "hello Oslo \"north\"\nside");
    let (_, run) = home.json_at("2026-06-01T09:00:00Z", &["schedule", "run", "wf-greet"]);
    assert_eq!(run["trigger"]["input"], input, "run now uses it too: {run}");

    let (_, body) = home.json_at(T0, &["schedule", "set", "greet", "--preset", "daily", "--time", "08:00"]);
    assert_eq!(body["job"]["input"], input, "kept by an update that does not mention it: {body}");
    let app = app_at(home.path(), T0);
    let job = upsert(&app, "greet", json!({"preset": "daily", "time": "08:00", "input": null})).unwrap();
    assert_eq!(job.input, Value::Null);
    let (_, body) = home.json_at("2026-06-01T08:00:10Z", &["schedule", "tick"]);
    let run = run_file_at(home.path(), body["fired"][0]["run_id"].as_str().unwrap());
    assert_eq!(run["trigger"]["input"]["job_id"], "wf-greet", "without an input the run says which job fired: {run}");

    let before = snapshot(&home);
    let (code, body) = home.json_at(T0, &["schedule", "set", "greet", "--preset", "daily", "--time", "7:30", "--input", "{oops"]);
    assert_eq!((code, &body["ok"]), (2, &json!(false)), "{body}");
    assert_eq!(snapshot(&home), before);
}
