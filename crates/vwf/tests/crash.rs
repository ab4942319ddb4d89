//! Crash safety (SPEC §1, §7, §9): a `vwf run` killed with SIGKILL at any moment leaves a run
//! file that parses, keeps every finished step with its output, is reported as interrupted by
//! the next reader, and finishes on retry without re-running what was already done.
//!
//! Every test runs on both stores (`files::`, `postgres::`). The design is a chain of typed steps
//! with a command step every eighth node: typed steps are recorded with the next durable write
//! (SPEC §7), which a command step forces before and after it runs, so a killed run leaves
//! records at several points of the chain, each a prefix a writer saving after every step could
//! have left; the run takes long enough for kills to land mid-run.
//! Kill delays come from a seeded xorshift, so a failing iteration can be replayed.

use crate::common;
use crate::on_both_backends;

on_both_backends!(
    sigkill_at_random_moments_never_loses_a_finished_step,
    a_run_killed_before_any_step_leaves_no_partial_file,
    a_killed_retry_can_be_retried_again,
    a_listing_does_not_show_a_dead_run_as_running,
);

use std::collections::BTreeSet;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{Backend, Home, XorShift};
use serde_json::{Value, json};

/// Steps after the trigger: alternating conditions and collect-only outputs (50 nodes in all,
/// the design limit, minus one to stay clear of it).
const CHAIN: usize = 48;
/// Kills of the random-moment loop per backend.
fn iterations(backend: Backend) -> usize {
    match backend {
        Backend::Files => 60,
        Backend::Postgres => 30,
    }
}
const SEED: u64 = 0x5eed_c0ff_ee15_600d;

fn chain_ids() -> Vec<String> {
    (0..CHAIN).map(|i| if i % 2 == 0 { format!("c{i:02}") } else { format!("o{i:02}") }).collect()
}

/// trigger → c00 -true→ o01 → c02 -true→ o03 → … → o47 (o07, o17, … o47 commands, the other `o`s
/// collect-only outputs); finishes `done`.
fn big_design() -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    let mut edges = Vec::new();
    let mut prev = "start".to_string();
    for id in chain_ids() {
        if id.starts_with('c') {
            nodes.push(json!({"id": id, "type": "condition", "expr": format!("out.{prev}.chars >= 0")}));
            edges.push(json!({"from": prev, "to": id}));
        } else if id.ends_with('7') {
            // A step with an outside effect: the run is written before and after it.
            nodes.push(json!({"id": id, "type": "command", "argv": ["printf", "step %s", format!("{{{{nodes.{prev}}}}}")]}));
            edges.push(json!({"from": prev, "to": id, "label": "true"}));
        } else {
            nodes.push(json!({"id": id, "type": "output", "template": format!("step {{{{nodes.{prev}}}}}")}));
            edges.push(json!({"from": prev, "to": id, "label": "true"}));
        }
        prev = id;
    }
    json!({"nodes": nodes, "edges": edges})
}

/// `vwf --home <home> <args>` as a plain process, to be killed.
fn spawn_vwf(home: &Home, args: &[&str]) -> Child {
    home.process(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn vwf")
}

/// The stored runs of a home, by id (on files: `<12 hex>.json`; temp files and dot files are not runs).
fn run_files(home: &Home) -> BTreeSet<String> {
    home.stored_run_ids()
}

/// Reads a stored run and insists that it is one complete JSON document.
fn read_run_file(home: &Home, id: &str) -> (Vec<u8>, Value) {
    let bytes = home.stored_run_bytes(id).unwrap_or_else(|| panic!("run {id} is not stored"));
    let value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "run {id} is not complete JSON ({e}):
{}",
            String::from_utf8_lossy(&bytes)
        )
    });
    (bytes, value)
}

fn steps(run: &Value) -> &Vec<Value> {
    run["steps"].as_array().unwrap_or_else(|| panic!("no steps array: {run}"))
}

fn done_steps(run: &Value) -> Vec<Value> {
    steps(run).iter().filter(|s| s["status"] == "done").cloned().collect()
}

/// What every run file must satisfy whenever it is read: every finished step has its output,
/// every output belongs to a finished step, and the finished steps are a prefix of the chain
/// (the run persists after every step, in plan order).
fn assert_consistent(id: &str, run: &Value) {
    assert_eq!(run["run_id"], id, "run file names another run");
    let outputs = run["outputs"].as_object().unwrap_or_else(|| panic!("{id}: no outputs object"));
    let done: Vec<String> = done_steps(run).iter().map(|s| s["node"].as_str().unwrap_or_default().to_string()).collect();
    for node in &done {
        assert!(outputs.contains_key(node), "{id}: step {node} is done but has no output");
    }
    for node in outputs.keys() {
        assert!(done.contains(node), "{id}: output {node} without a done step");
    }
    let chain = chain_ids();
    assert_eq!(done, chain[..done.len()], "{id}: done steps are not a prefix of the chain");
}

fn sigkill_at_random_moments_never_loses_a_finished_step(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("big", &big_design());

    // One unkilled run: its duration sets the kill window, its outputs are the reference.
    let started = Instant::now();
    let (code, reference) = home.json(&["run", "big"]);
    let once = started.elapsed();
    assert_eq!(code, 0, "an unkilled run finishes done: {reference}");
    assert_eq!(reference["status"], "done");
    assert_eq!(reference["outputs"].as_object().map(|o| o.len()), Some(CHAIN));
    // Two more to smooth out a cold first start or a busy moment: the quickest sets the window,
    // so a slower machine later only makes more kills land mid-run.
    let mut t = once;
    for _ in 0..2 {
        let started = Instant::now();
        let mut child = spawn_vwf(&home, &["run", "big"]);
        assert!(child.wait().expect("wait").success());
        t = t.min(started.elapsed());
    }
    let window = t.mul_f64(1.2);

    let mut rng = XorShift(SEED);
    let (mut no_file, mut mid_run, mut finished) = (0, 0, 0);
    let mut done_kept = 0usize;
    let mut known = run_files(&home);
    for iteration in 0..iterations(backend) {
        let delay = rng.below(window);
        let mut child = spawn_vwf(&home, &["run", "big"]);
        std::thread::sleep(delay); // the kill moment, not a wait for a result
        let _ = child.kill(); // SIGKILL; an error means it had already exited
        child.wait().expect("wait for the killed run");

        // Every run file of the home, old and new, is complete JSON and consistent.
        let all = run_files(&home);
        for id in &all {
            assert_consistent(id, &read_run_file(&home, id).1);
        }
        let new: Vec<&String> = all.difference(&known).collect();
        assert!(new.len() <= 1, "iteration {iteration}: one run made {} files", new.len());
        let Some(id) = new.first().map(|s| s.to_string()) else {
            no_file += 1;
            continue;
        };
        known.insert(id.clone());

        let (_, before) = read_run_file(&home, &id);
        match before["status"].as_str() {
            Some("done") => {
                finished += 1;
                assert_eq!(before["outputs"], reference["outputs"], "{id}: a finished run has the reference outputs");
                continue;
            }
            Some("running") => mid_run += 1,
            other => panic!("iteration {iteration} (delay {delay:?}): run {id} left with status {other:?}: {before}"),
        }
        // The journal a killed writer left (the steps saved since the run file) is part of the
        // run: `vwf doctor --fix` reports it as no problem and leaves the run as it was (it only
        // removes the debris of writes killed before they finished: the temp file of a whole
        // write killed before its rename, or the journal a whole write superseded and the
        // writer was killed before removing).
        if backend == Backend::Files {
            let (code, doctor) = home.json(&["doctor", "--fix"]);
            assert_eq!(code, 0, "{id}: doctor after a kill: {doctor}");
            let problems = doctor["problems"].as_array().expect("problems");
            let debris = |p: &Value| {
                let superseded = p["path"] == format!("workflow-runs/{id}.journal")
                    && p["problem"].as_str().is_some_and(|t| t.contains("saved whole since"));
                (p["path"] == format!("workflow-runs/.{id}.json.tmp") || superseded) && p["fixed"] == "removed"
            };
            assert!(
                !problems.iter().any(|p| p["path"].as_str().is_some_and(|path| path.contains(&id)) && !debris(p)),
                "{id}: doctor after a kill: {doctor}"
            );
            assert_eq!(read_run_file(&home, &id).1, before, "{id}: doctor changed a run in flight");
        }

        // The next reader finds no live owner and marks the run interrupted.
        let (code, shown) = home.json(&["show", &id]);
        assert_eq!(code, 1, "{id}: show of an interrupted run: {shown}");
        assert_eq!(shown["status"], "failed", "{id}: {shown}");
        let error = shown["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("interrupted during step"), "{id}: error {error:?}");
        let failed_node = shown["failed_node"].as_str().unwrap_or_else(|| panic!("{id}: no failed_node: {shown}"));
        assert_eq!(error, format!("interrupted during step {failed_node}"));
        let done_before = done_steps(&before);
        assert_eq!(
            chain_ids().get(done_before.len()).map(String::as_str),
            Some(failed_node),
            "{id}: the interrupted step is the one after the last done step"
        );
        assert_eq!(done_steps(&shown), done_before, "{id}: marking the run interrupted changed a done step");
        // The verdict is persisted, not only shown.
        let (_, persisted) = read_run_file(&home, &id);
        assert_eq!(persisted["status"], "failed");
        assert_consistent(&id, &persisted);

        // Retry finishes the run without re-running what was done.
        let (code, retried) = home.json(&["run", "retry", &id]);
        assert_eq!(code, 0, "{id}: retry: {retried}");
        assert_eq!(retried["status"], "done", "{id}: {retried}");
        assert_eq!(retried["outputs"], reference["outputs"], "{id}: retried outputs differ from an unkilled run");
        let (_, after) = read_run_file(&home, &id);
        assert_eq!(after["status"], "done");
        assert_consistent(&id, &after);
        for step in &done_before {
            let node = step["node"].as_str().unwrap_or_default();
            for result in [&retried, &after] {
                let now = steps(result).iter().find(|s| s["node"] == node).unwrap_or_else(|| panic!("{id}: step {node} vanished"));
                for field in ["started_at", "finished_at", "attempts"] {
                    assert_eq!(now[field], step[field], "{id}: step {node} was re-run ({field} changed)");
                }
                assert_eq!(
                    result["outputs"][node].to_string(),
                    before["outputs"][node].to_string(),
                    "{id}: output of {node} changed on retry"
                );
            }
        }
        done_kept += done_before.len();
        assert!(after["history"].as_array().is_some_and(|h| h.iter().any(|e| e["event"] == "retry")), "{id}: the retry is kept in history");
    }

    // The listing shows every run file, whatever state the kills left behind.
    let (code, listed) = home.json(&["runs", "--limit", "1000"]);
    assert_eq!(code, 0, "{listed}");
    let listed_ids: BTreeSet<String> =
        listed["runs"].as_array().expect("runs").iter().map(|r| r["run_id"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(listed_ids, run_files(&home), "listing and run files differ");
    for r in listed["runs"].as_array().expect("runs") {
        assert_eq!(r["status"], "done", "every run ends done after its retry: {r}");
    }
    assert_eq!(mid_run + finished + no_file, iterations(backend));
    assert!(done_kept <= mid_run * CHAIN);
    assert!(mid_run > 0, "no kill landed mid-run (T = {t:?}, window {window:?}); the test proves nothing");
}

fn a_run_killed_before_any_step_leaves_no_partial_file(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("big", &big_design());
    // Killed right after spawn: at most an id reservation (lock file) or an index line exists,
    // never a run file that does not parse, and the listing stays usable.
    for _ in 0..5 {
        let mut child = spawn_vwf(&home, &["run", "big"]);
        let _ = child.kill();
        child.wait().expect("wait");
    }
    let runs = run_files(&home);
    for id in &runs {
        let (_, run) = read_run_file(&home, id);
        assert_consistent(id, &run);
    }
    let (code, listed) = home.json(&["runs"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed["runs"].as_array().map(Vec::len), Some(runs.len()), "{listed}");
    for r in listed["runs"].as_array().expect("runs") {
        assert_ne!(r["ok"], false, "a killed run is listed as unreadable: {r}");
    }
    // A fresh run in the same home works as if nothing happened.
    let (code, run) = home.json(&["run", "big"]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["status"], "done");
}

fn a_killed_retry_can_be_retried_again(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("big", &big_design());
    let (code, reference) = home.json(&["run", "big"]);
    assert_eq!(code, 0, "{reference}");
    let started = Instant::now();
    let mut child = spawn_vwf(&home, &["run", "big"]);
    assert!(child.wait().expect("wait").success());
    let window = started.elapsed().mul_f64(1.2);

    let mut rng = XorShift(SEED ^ 0xdead_beef);
    let (mut retries_killed_mid_run, mut rounds) = (0, 0);
    // How long a process runs before it is killed: a random part of a quarter of a run, after a
    // floor that moves up when a kill came before the run existed (a slow start: connecting to a
    // database, a loaded machine) and down when it came after the run finished.
    let mut floor = Duration::ZERO;
    for _ in 0..120 {
        if rounds == 15 {
            break;
        }
        // A run killed early, so most of it is left for the retry.
        let known = run_files(&home);
        let mut child = spawn_vwf(&home, &["run", "big"]);
        std::thread::sleep(floor + rng.below(window / 4));
        let _ = child.kill();
        child.wait().expect("wait");
        let Some(id) = run_files(&home).difference(&known).next().cloned() else {
            floor += window / 20;
            continue;
        };
        let (_, first) = read_run_file(&home, &id);
        if first["status"] != "running" {
            floor = floor.saturating_sub(window / 20);
            continue;
        }
        rounds += 1;
        let (code, _) = home.json(&["show", &id]);
        assert_eq!(code, 1);

        // The retry is killed too.
        let mut retry = spawn_vwf(&home, &["run", "retry", &id]);
        std::thread::sleep(rng.below(window));
        let _ = retry.kill();
        retry.wait().expect("wait");
        let (_, second) = read_run_file(&home, &id);
        assert_consistent(&id, &second);
        for step in done_steps(&first) {
            let node = &step["node"];
            let now =
                steps(&second).iter().find(|s| &s["node"] == node).unwrap_or_else(|| panic!("{id}: step {node} lost by a killed retry"));
            assert_eq!(now, &step, "{id}: a killed retry changed done step {node}");
        }
        match second["status"].as_str() {
            Some("done") => continue,
            Some("running") => retries_killed_mid_run += 1,
            // Killed before the retry took the lock: still the interrupted verdict.
            Some("failed") => {}
            other => panic!("{id}: a killed retry left status {other:?}"),
        }

        let (code, shown) = home.json(&["show", &id]);
        assert_eq!(code, 1, "{shown}");
        assert!(shown["error"].as_str().unwrap_or_default().starts_with("interrupted during step"), "{shown}");
        let (code, done) = home.json(&["run", "retry", &id]);
        assert_eq!(code, 0, "{done}");
        assert_eq!(done["outputs"], reference["outputs"]);
        for step in done_steps(&second) {
            let node = &step["node"];
            let now = steps(&done).iter().find(|s| &s["node"] == node).expect("step kept");
            assert_eq!(now, &step, "{id}: step {node}, done before the second retry, was re-run");
        }
        let (_, file) = read_run_file(&home, &id);
        let retry_events = file["history"].as_array().map_or(0, |h| h.iter().filter(|e| e["event"] == "retry").count());
        let expected = if second["status"] == "running" { 2 } else { 1 };
        assert_eq!(retry_events, expected, "{id}: every retry is kept in history: {}", file["history"]);
        assert_eq!(file["status"], "done");
    }
    assert!(rounds > 0);
    assert!(retries_killed_mid_run <= rounds);
}

/// What a process killed after its tenth step leaves on disk, made from a finished run of `big`.
fn left_by_a_dead_process(home: &Home) -> String {
    let (code, run) = home.json(&["run", "big"]);
    assert_eq!(code, 0, "{run}");
    let id = run["run_id"].as_str().expect("run_id").to_string();
    let (_, mut file) = read_run_file(home, &id);
    let kept: Vec<Value> = steps(&file)[..10].to_vec();
    let kept_ids: Vec<String> = kept.iter().map(|s| s["node"].as_str().unwrap_or_default().to_string()).collect();
    file["steps"] = Value::Array(kept);
    file["outputs"].as_object_mut().expect("outputs").retain(|k, _| kept_ids.contains(k));
    file["status"] = json!("running");
    home.write_stored_run(&id, format!("{file}\n").as_bytes());
    id
}

fn a_listing_does_not_show_a_dead_run_as_running(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("big", &big_design());
    let id = left_by_a_dead_process(&home);
    // Nobody holds the run's lock: its owner is gone, so no listing may call it running.
    let (code, listed) = home.json(&["runs"]);
    assert_eq!(code, 0, "{listed}");
    let entry = listed["runs"].as_array().expect("runs").iter().find(|r| r["run_id"] == id.as_str()).cloned().expect("listed");
    assert_eq!(entry["status"], "failed", "a dead run is listed as {}", entry["status"]);
    assert_eq!(entry["error"], "interrupted during step c10");
}
