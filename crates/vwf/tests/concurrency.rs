//! Several `vwf` processes on one home (SPEC §1, §7, §9): two answers racing for one gate give
//! exactly one winner and one conflict, readers never wait for a run's lock holder nor mistake a
//! live run for an interrupted one, writers wait for it, and parallel runs get distinct ids.
//! Every test runs on both stores (`files::`, `postgres::`), the run's lock being a file lock or
//! a session advisory lock.

use crate::common;
use crate::on_both_backends;

on_both_backends!(
    two_processes_answering_one_gate_exactly_one_wins,
    two_processes_racing_different_answers,
    a_reader_never_blocks_on_a_running_run,
    a_writer_waits_for_the_lock_holder,
    run_ids_are_unique_across_parallel_runs,
    two_processes_retrying_one_run_exactly_one_retries,
);

use std::collections::BTreeSet;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{Backend, Home};
use serde_json::{Value, json};

/// How long a process that must not block may take before the test calls it blocked.
const PATIENCE: Duration = Duration::from_secs(20);

fn vwf_command(home: &Home, args: &[&str]) -> Command {
    home.process(args)
}

/// `vwf --json <args>` started in the background, its output captured.
fn spawn_json(home: &Home, args: &[&str]) -> Child {
    let mut full = vec!["--json"];
    full.extend_from_slice(args);
    vwf_command(home, &full).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn vwf")
}

/// Waits (bounded) until `child` is blocked by the lock the test holds, not sooner: on files, one
/// of its threads sleeps in the kernel waiting for a file lock (`/proc/<pid>/task/*/wchan`); on
/// PostgreSQL, a session of the home's database waits for an advisory lock (`pg_locks`).
fn wait_until_blocked_on_a_lock(home: &Home, child: &mut Child) {
    let tasks = format!("/proc/{}/task", child.id());
    let started = Instant::now();
    loop {
        let waiting = match &home.database {
            Some(url) => common::pg::someone_waits_for_a_lock(url),
            None => std::fs::read_dir(&tasks)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .any(|task| std::fs::read_to_string(task.path().join("wchan")).is_ok_and(|w| w.contains("lock"))),
        };
        if waiting {
            return;
        }
        assert!(child.try_wait().expect("try_wait").is_none(), "the process finished while another held the run's lock");
        assert!(started.elapsed() < PATIENCE, "the process never waited for the run's lock");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn finish(child: Child) -> (i32, Value) {
    let out = child.wait_with_output().expect("wait for vwf");
    (common::code(&out), common::parse(&out))
}

/// Waits for `child` at most `PATIENCE`; kills it and fails the test if it is still running.
fn finish_promptly(mut child: Child, what: &str) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("collect output");
        }
        if started.elapsed() > PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} was still running after {PATIENCE:?}: it blocked");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `vwf <args>` (stdout captured) and fails the test if it blocks.
fn run_promptly(home: &Home, args: &[&str], what: &str) -> Output {
    let child = vwf_command(home, args).stdout(Stdio::piped()).spawn().expect("spawn vwf");
    finish_promptly(child, what)
}

/// trigger → gate (approve/reject) → done, one unlabelled edge.
fn gate_design() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Ship it?", "options": ["approve", "reject"]},
            {"id": "done", "type": "output", "template": "answered {{nodes.gate}}"}
        ],
        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "done"}]
    })
}

/// trigger → gate; `approve` → shipped, `reject` → dropped.
fn branching_gate_design() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Ship it?", "options": ["approve", "reject"]},
            {"id": "shipped", "type": "output", "template": "shipped after {{nodes.gate}}"},
            {"id": "dropped", "type": "output", "template": "dropped after {{nodes.gate}}"}
        ],
        "edges": [
            {"from": "start", "to": "gate"},
            {"from": "gate", "to": "shipped", "label": "approve"},
            {"from": "gate", "to": "dropped", "label": "reject"}
        ]
    })
}

/// A chain of conditions and collect-only outputs with a command step every tenth node (o07, o17,
/// …): the commands are durable points, so a run is seen in flight between them.
fn slow_design() -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    let mut edges = Vec::new();
    let mut prev = "start".to_string();
    for i in 0..48 {
        let id = if i % 2 == 0 { format!("c{i:02}") } else { format!("o{i:02}") };
        if i % 2 == 0 {
            nodes.push(json!({"id": id, "type": "condition", "expr": format!("out.{prev}.chars >= 0")}));
            edges.push(json!({"from": prev, "to": id}));
        } else if id.ends_with('7') {
            // A step with an outside effect: the run is written before and after it (typed steps
            // are written with the next such write), so a run stays in flight long enough to read.
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

/// Starts a run that parks on its gate and returns its id.
fn parked_run(home: &Home, design: &str) -> String {
    let (code, run) = home.json(&["run", design]);
    assert_eq!(code, 6, "the run parks on its gate: {run}");
    assert_eq!(run["status"], "awaiting_approval", "{run}");
    assert_eq!(run["pending"]["node"], "gate", "{run}");
    run["run_id"].as_str().expect("run_id").to_string()
}

/// The stored document of a run, as its backend holds it.
fn read_file(home: &Home, id: &str) -> Vec<u8> {
    home.stored_run_bytes(id).expect("stored run")
}

fn assert_lost(code: i32, body: &Value, id: &str) {
    assert_eq!(code, 4, "the loser gets a conflict: {body}");
    assert_eq!(body["ok"], false, "{body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("not waiting"), "{id}: loser's error {error:?}");
}

fn two_processes_answering_one_gate_exactly_one_wins(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("gated", &gate_design());
    for round in 0..20 {
        let id = parked_run(&home, "gated");
        // Both start before either is waited on.
        let a = spawn_json(&home, &["approve", &id, "gate", "approve"]);
        let b = spawn_json(&home, &["approve", &id, "gate", "approve"]);
        let (a, b) = (finish(a), finish(b));
        let (winner, loser) = match (a.0, b.0) {
            (0, _) => (a, b),
            (_, 0) => (b, a),
            _ => panic!("round {round}: nobody won: {a:?} {b:?}"),
        };
        assert_eq!(winner.1["status"], "done", "round {round}: {}", winner.1);
        assert_eq!(winner.1["outputs"]["done"]["text"], "answered approve");
        assert_lost(loser.0, &loser.1, &id);

        // The file holds the one answer, recorded once.
        let (code, shown) = home.json(&["show", &id]);
        assert_eq!(code, 0, "{shown}");
        assert_eq!(shown, winner.1, "round {round}: the file differs from the winner's result");
        let gate_steps = shown["steps"].as_array().expect("steps").iter().filter(|s| s["node"] == "gate").count();
        assert_eq!(gate_steps, 1, "{shown}");
        assert_eq!(shown["steps"].as_array().expect("steps").iter().find(|s| s["node"] == "gate").unwrap()["attempts"], 1);
    }
}

fn two_processes_racing_different_answers(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("branching", &branching_gate_design());
    let mut wins = [0usize; 2];
    for round in 0..20 {
        let id = parked_run(&home, "branching");
        // Alternate who starts first so both answers get their chances.
        let answers = if round % 2 == 0 { ["approve", "reject"] } else { ["reject", "approve"] };
        let first = spawn_json(&home, &["approve", &id, "gate", answers[0]]);
        let second = spawn_json(&home, &["approve", &id, "gate", answers[1]]);
        let results = [finish(first), finish(second)];
        let winners: Vec<usize> = (0..2).filter(|&i| results[i].0 == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner: {results:?}");
        let w = winners[0];
        let (answer, other) = (answers[w], answers[1 - w]);
        let (winner, loser) = (&results[w].1, &results[1 - w]);
        assert_lost(loser.0, &loser.1, &id);
        wins[usize::from(answer == "reject")] += 1;

        // The run (as returned and as stored) follows the winner's answer only.
        let (code, shown) = home.json(&["show", &id]);
        assert_eq!(code, 0, "{shown}");
        for run in [winner, &shown] {
            assert_eq!(run["status"], "done", "{run}");
            assert_eq!(run["outputs"]["gate"]["answer"], answer, "round {round}: {run}");
            assert_eq!(run["outputs"]["gate"]["text"], answer);
            let (taken, skipped) = if answer == "approve" { ("shipped", "dropped") } else { ("dropped", "shipped") };
            assert_eq!(run["outputs"][taken]["text"], format!("{taken} after {answer}"), "{run}");
            assert!(run["outputs"].get(skipped).is_none(), "the {other} branch ran too: {run}");
            assert_eq!(run["skipped"], json!([skipped]), "{run}");
        }
    }
    assert_eq!(wins.iter().sum::<usize>(), 20);
}

fn a_reader_never_blocks_on_a_running_run(backend: Backend) {
    let home = Home::with_backend(backend);

    // 1. A parked run whose lock another process holds: `show` answers at once and writes nothing.
    home.save("gated", &gate_design());
    let id = parked_run(&home, "gated");
    let before = read_file(&home, &id);
    let lock = home.hold_run_lock(&id);
    for _ in 0..3 {
        let out = run_promptly(&home, &["--json", "show", &id], "show of a locked parked run");
        assert_eq!(common::code(&out), 6);
        assert_eq!(common::parse(&out)["status"], "awaiting_approval");
        let out = run_promptly(&home, &["--json", "runs"], "runs");
        assert_eq!(common::code(&out), 0);
    }
    assert_eq!(read_file(&home, &id), before, "a reader changed the run file");
    drop(lock);

    // 2. A run left `running` whose lock is held (its owner is alive): `show` returns it as it
    //    is, running, without waiting and without marking it interrupted.
    home.save("slow", &slow_design());
    let (code, done) = home.json(&["run", "slow"]);
    assert_eq!(code, 0, "{done}");
    let id = done["run_id"].as_str().expect("run_id").to_string();
    let mut file: Value = serde_json::from_slice(&read_file(&home, &id)).expect("run file");
    // What an owner leaves on disk after its tenth step: the first ten steps and their outputs.
    let kept: Vec<Value> = file["steps"].as_array().expect("steps")[..10].to_vec();
    let kept_ids: Vec<String> = kept.iter().map(|s| s["node"].as_str().unwrap().to_string()).collect();
    file["steps"] = Value::Array(kept);
    file["outputs"].as_object_mut().expect("outputs").retain(|k, _| kept_ids.contains(k));
    file["status"] = json!("running");
    let mut bytes = serde_json::to_vec(&file).expect("json");
    bytes.push(b'\n');
    home.write_stored_run(&id, &bytes);

    let lock = home.hold_run_lock(&id);
    let out = run_promptly(&home, &["--json", "show", &id], "show of a live running run");
    assert_eq!(common::code(&out), 6, "a running run is not finished");
    let shown = common::parse(&out);
    assert_eq!(shown["status"], "running", "a live run was marked interrupted: {shown}");
    assert_eq!(shown["error"], Value::Null);
    assert_eq!(read_file(&home, &id), bytes, "show changed a run whose owner is alive");
    drop(lock);

    // Its owner gone, the same read marks it interrupted at the step after the tenth.
    let (code, shown) = home.json(&["show", &id]);
    assert_eq!(code, 1, "{shown}");
    assert_eq!(shown["error"], "interrupted during step c10", "{shown}");
    assert_eq!(shown["failed_node"], "c10");

    // 3. While a real `vwf run` works, readers see it running or done, never interrupted.
    let mut seen_running = 0;
    let mut reads = 0;
    for _attempt in 0..10 {
        let existing: BTreeSet<String> = run_ids(&home);
        let mut runner = vwf_command(&home, &["run", "slow"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn run");
        let mut id = None;
        while runner.try_wait().expect("try_wait").is_none() {
            if id.is_none() {
                id = run_ids(&home).difference(&existing).next().cloned();
            }
            let Some(id) = &id else {
                std::thread::yield_now();
                continue;
            };
            let out = run_promptly(&home, &["--json", "show", id], "show during a run");
            let run = common::parse(&out);
            reads += 1;
            match run["status"].as_str() {
                Some("running") => seen_running += 1,
                Some("done") => {}
                other => panic!("a reader saw {other:?} while the run was alive: {run}"),
            }
        }
        assert!(runner.wait().expect("wait").success());
        if seen_running > 0 {
            break;
        }
    }
    assert!(reads >= seen_running);
    assert!(seen_running > 0, "no read landed while the run was working");
}

fn a_writer_waits_for_the_lock_holder(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("gated", &gate_design());
    let id = parked_run(&home, "gated");
    let before = read_file(&home, &id);
    let lock = home.hold_run_lock(&id);
    let mut answer = spawn_json(&home, &["approve", &id, "gate", "approve"]);
    // The answer cannot get the lock while the test holds it: once the kernel shows it waiting
    // for the lock, it has not finished and has not touched the file.
    wait_until_blocked_on_a_lock(&home, &mut answer);
    assert!(answer.try_wait().expect("try_wait").is_none(), "approve finished while another process held the run's lock");
    assert_eq!(read_file(&home, &id), before);
    drop(lock);
    let out = finish_promptly(answer, "approve after the lock was released");
    assert_eq!(common::code(&out), 0);
    assert_eq!(common::parse(&out)["status"], "done");
}

fn run_ids(home: &Home) -> BTreeSet<String> {
    home.stored_run_ids()
}

fn run_ids_are_unique_across_parallel_runs(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save(
        "tiny",
        &json!({
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "say", "type": "output", "template": "run {{run.id}}"}
            ],
            "edges": [{"from": "start", "to": "say"}]
        }),
    );
    let children: Vec<Child> = (0..8).map(|_| spawn_json(&home, &["run", "tiny"])).collect();
    let mut ids = BTreeSet::new();
    for child in children {
        let (code, run) = finish(child);
        assert_eq!(code, 0, "{run}");
        assert_eq!(run["status"], "done");
        let id = run["run_id"].as_str().expect("run_id").to_string();
        assert!(id.len() == 12 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "bad run id {id:?}");
        assert_eq!(run["outputs"]["say"]["text"], format!("run {id}"), "a run saw another run's id");
        ids.insert(id);
    }
    assert_eq!(ids.len(), 8, "duplicate run ids: {ids:?}");
    assert_eq!(run_ids(&home), ids, "one file per run");

    let (code, listed) = home.json(&["runs"]);
    assert_eq!(code, 0, "{listed}");
    let listed: Vec<String> =
        listed["runs"].as_array().expect("runs").iter().map(|r| r["run_id"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(listed.len(), 8, "{listed:?}");
    assert_eq!(listed.iter().cloned().collect::<BTreeSet<_>>(), ids);
    // Every listed run has a stored document, and the runs of the listing are the stored ones.
    for id in &ids {
        let doc: Value = serde_json::from_slice(&read_file(&home, id)).expect("a stored run is JSON");
        assert_eq!(doc["status"], "done", "{doc}");
    }
    // Files only: the listing's index has one line per run, none torn.
    if backend == Backend::Files {
        let index = std::fs::read_to_string(home.runs_dir().join(".index")).expect("index");
        let lines: Vec<&str> = index.lines().skip(1).collect(); // after the header
        assert_eq!(lines.len(), 8, "one index line per run, none torn: {index:?}");
        assert!(lines.iter().all(|l| l.split(' ').next().is_some_and(|id| ids.contains(id))), "{index:?}");
    }
}

fn two_processes_retrying_one_run_exactly_one_retries(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save(
        "timed",
        &json!({
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "gate", "type": "approval", "question": "Ship it?", "options": ["approve", "reject"], "timeout_minutes": 60},
                {"id": "done", "type": "output", "template": "answered {{nodes.gate}}"}
            ],
            "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "done"}]
        }),
    );
    let (t0, later) = ("2026-11-29T09:00:00Z", "2026-11-29T11:00:00Z");
    for round in 0..10 {
        let (code, run) = home.json_at(t0, &["run", "timed"]);
        assert_eq!(code, 6, "{run}");
        let id = run["run_id"].as_str().expect("run_id").to_string();
        let (code, timed_out) = home.json_at(later, &["show", &id]);
        assert_eq!(code, 1, "{timed_out}");
        assert_eq!(timed_out["error"], "approval timed out");

        let spawn_retry = || {
            vwf_command(&home, &["--json", "run", "retry", &id])
                .env("VWF_NOW", later)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn retry")
        };
        let (a, b) = (spawn_retry(), spawn_retry());
        let results = [finish(a), finish(b)];
        let winners: Vec<&(i32, Value)> = results.iter().filter(|r| r.0 == 6).collect();
        let losers: Vec<&(i32, Value)> = results.iter().filter(|r| r.0 == 4).collect();
        assert_eq!((winners.len(), losers.len()), (1, 1), "round {round}: {results:?}");
        assert_eq!(winners[0].1["status"], "awaiting_approval", "the gate is reopened: {}", winners[0].1);
        assert_eq!(losers[0].1["ok"], false);
        let error = losers[0].1["error"].as_str().unwrap_or_default();
        assert!(error.contains("only a failed run can be retried"), "{error:?}");

        // One retry in history, one reopened gate with a fresh deadline.
        let file: Value = serde_json::from_slice(&read_file(&home, &id)).expect("run file");
        let retries = file["history"].as_array().expect("history").iter().filter(|e| e["event"] == "retry").count();
        assert_eq!(retries, 1, "round {round}: {}", file["history"]);
        assert_eq!(file["pending"]["deadline"], "2026-11-29T12:00:00.000Z", "{}", file["pending"]);
    }
}
