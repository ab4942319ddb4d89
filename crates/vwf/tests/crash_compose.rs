//! Design steps through crashes (SPEC §3 `design`): a `vwf serve` killed with SIGKILL again and
//! again while parents start their children, while the children work, and while the parents
//! wait, then started again on the same home.
//!
//! The parent's design step calls `child`, whose one command appends `child <run id> <attempt>`
//! to a log; the parent's step after it appends `after <run id> <attempt>`. Both steps retry an
//! attempt a kill interrupted (up to five). After every kill, with no writer alive, the test reads
//! the store and checks:
//! - every run reads whole;
//! - every child names a parent that exists and that names it (its `child_runs`, or the design
//!   step it waits on): no child is made twice, or for nothing;
//! - no attempt of a command ran twice.
//!
//! At the end every run left open is driven to its end by readers (`vwf show`): every parent is
//! done with exactly one child, done, whose output it took, and its step after ran to the end
//! once.

use crate::common;
use crate::crash_server::wait_for_orphans;
use crate::on_both_backends;
use vwf_store::Wait;

on_both_backends!(kills_while_parents_start_and_wait_for_children_make_one_child_per_step_and_resume_once);

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::server::{Options, Server};
use common::{Backend, Home, XorShift};
use serde_json::{Value, json};

const KILLS: usize = 100;
const SEED: u64 = 0x005e_edc4_1d0f_fa11;
/// Parents kept open at once: a new one starts whenever fewer are.
const OPEN: usize = 3;

const ATTEMPTS: u64 = 10;

fn retried() -> Value {
    json!({"max_attempts": ATTEMPTS, "delay": 0})
}

fn child(log: &Path) -> Value {
    let run = format!("printf 'child %s %s\\n' {{{{run.id}}}} \"$VWF_ATTEMPT\" >> '{}'; sleep 0.02; echo worked", log.display());
    json!({
        "nodes": [{"id": "t", "type": "trigger", "mode": "manual"}, {"id": "work", "type": "command", "run": run, "retry": retried()}],
        "edges": [{"from": "t", "to": "work"}],
    })
}

fn parent(log: &Path) -> Value {
    let run = format!("printf 'after %s %s\\n' {{{{run.id}}}} \"$VWF_ATTEMPT\" >> '{}'; sleep 0.01; echo {{{{nodes.sub}}}}", log.display());
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "sub", "type": "design", "design": "child"},
            {"id": "after", "type": "command", "run": run, "retry": retried()},
        ],
        "edges": [{"from": "start", "to": "sub"}, {"from": "sub", "to": "after"}],
    })
}

/// The `(kind, run, attempt)` lines of the log, counted.
fn ran(log: &Path) -> BTreeMap<(String, String, u64), usize> {
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [kind, run, attempt] = words[..] else { panic!("a log line that is not `<kind> <run> <attempt>`: {line:?}") };
        *out.entry((kind.to_string(), run.to_string(), attempt.parse().expect("attempt"))).or_default() += 1;
    }
    out
}

/// Every run the store holds, read through the store (a run saved once by a killed process may be
/// only in its commit log, which the store applies).
fn stored_ids(store: &dyn vwf::store::Store) -> Vec<String> {
    store.list_run_ids(None, 1_000_000).wait().expect("list runs").iter().map(ToString::to_string).collect()
}

/// Reads every stored run and checks parents, children and the log; answers the runs not
/// finished, with their status and design.
fn check(home: &Home, log: &Path) -> BTreeMap<String, (String, String)> {
    let store = home.store();
    let mut runs: BTreeMap<String, Value> = BTreeMap::new();
    for id in stored_ids(&*store) {
        let run = store
            .read_run(&vwf_core::names::RunId::parse(&id).expect("id"))
            .wait()
            .unwrap_or_else(|e| panic!("run {id} does not read whole: {e}"));
        runs.insert(id, run);
    }
    let mut open = BTreeMap::new();
    for (id, run) in &runs {
        let status = run["status"].as_str().unwrap_or_default();
        if !matches!(status, "done" | "failed") {
            open.insert(id.clone(), (status.to_string(), run["design"].as_str().unwrap_or_default().to_string()));
        }
        if run["design"] != "child" {
            continue;
        }
        let parent = run["parent_run"].as_str().unwrap_or_else(|| panic!("child {id} names no parent: {run}"));
        // A run saved once and not yet again may be only in the store's commit log: read through it.
        let read = || store.read_run(&vwf_core::names::RunId::parse(parent).expect("id")).wait().ok();
        let of = runs.get(parent).cloned().or_else(read).unwrap_or_else(|| panic!("child {id} names parent {parent}, which is not stored"));
        let named = of["child_runs"].as_array().is_some_and(|c| c.iter().any(|c| c == id.as_str()))
            || of["parked"].as_array().is_some_and(|p| p.iter().any(|p| p["type"] == "child" && p["run_id"] == id.as_str()));
        assert!(named, "child {id} is not named by its parent {parent}: {of}");
    }
    for ((kind, run, attempt), times) in ran(log) {
        assert_eq!(times, 1, "{kind} of run {run}: attempt {attempt} ran {times} times");
    }
    open
}

fn kills_while_parents_start_and_wait_for_children_make_one_child_per_step_and_resume_once(backend: Backend) {
    let home = Home::with_backend(backend);
    let work = tempfile::tempdir().expect("tempdir");
    let log = work.path().join("steps.log");
    let serve_err = work.path().join("serve.err");
    home.save("child", &child(&log));
    home.save("parent", &parent(&log));
    let mut rng = XorShift(SEED);
    let mut open = BTreeMap::new();
    let mut parked_parents = 0;
    for kill in 0..KILLS {
        let mut server = Server::start_with(&home, Options { stderr: Some(&serve_err), ..Options::default() });
        let delay = Duration::from_millis(20) + rng.below(Duration::from_millis(150));
        let parents_open = open.values().filter(|(_, design)| design == "parent").count();
        let starts = OPEN.saturating_sub(parents_open);
        let (http, url) = (server.client.clone(), server.url("/designs/parent/run"));
        std::thread::scope(|s| {
            for _ in 0..starts {
                s.spawn(|| http.post(&url).json(&json!({})).send().ok());
            }
            std::thread::sleep(delay); // the kill moment, not a wait for a result
            let _ = server.child.kill(); // SIGKILL
            server.child.wait().expect("wait for the killed server");
        });
        wait_for_orphans(&log);
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&home, &log)));
        match checked {
            Ok(left) => {
                parked_parents += usize::from(left.values().any(|(status, _)| status == "awaiting_child"));
                open = left;
            }
            Err(e) => {
                eprintln!(
                    "kill {kill} (delay {delay:?}); the server's standard error:\n{}",
                    std::fs::read_to_string(&serve_err).unwrap_or_default()
                );
                std::panic::resume_unwind(e);
            }
        }
    }

    // Readers drive every run left open to its end (a reader of one may make another: a parent's
    // child still to make).
    for _ in 0..3 {
        for id in open.keys() {
            for step in 0..20 {
                let out = home.process(&["--json", "show", id]).output().expect("vwf show");
                let run: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("show {id}: {e}"));
                if matches!(run["status"].as_str(), Some("done" | "failed")) {
                    break;
                }
                assert!(step < 19, "{id} never ends: {run}");
            }
        }
        open = check(&home, &log);
    }
    assert!(open.is_empty(), "runs left unfinished: {open:?}");
    let store = home.store();
    let runs: Vec<Value> = stored_ids(&*store)
        .iter()
        .map(|id| store.read_run(&vwf_core::names::RunId::parse(id).expect("id")).wait().expect("read"))
        .collect();
    let mut children = BTreeMap::<String, Vec<&Value>>::new();
    for run in runs.iter().filter(|r| r["design"] == "child") {
        children.entry(run["parent_run"].as_str().expect("parent").to_string()).or_default().push(run);
    }
    let attempts = |run: &Value, node: &str| {
        run["steps"].as_array().and_then(|s| s.iter().find(|s| s["node"] == node)).and_then(|s| s["attempts"].as_u64()).unwrap_or(0)
    };
    let logged = ran(&log);
    let (mut parents, mut done, mut before_any_step) = (0, 0, 0);
    for run in runs.iter().filter(|r| r["design"] == "parent") {
        let id = run["run_id"].as_str().expect("id");
        parents += 1;
        let mine = children.get(id).cloned().unwrap_or_default();
        // Killed between its first save and its first step: failed as interrupted, as any run
        // is (a person retries it), before its design step began, so with no child.
        if run["steps"].as_array().is_some_and(Vec::is_empty) {
            assert!(run["error"].as_str().is_some_and(|e| e.starts_with("interrupted")) && mine.is_empty(), "{run}");
            before_any_step += 1;
            continue;
        }
        assert_eq!(mine.len(), 1, "parent {id} has exactly one child: {run}");
        let child = mine[0];
        assert_eq!(run["child_runs"], json!([child["run_id"]]), "{run}");
        match (run["status"].as_str(), child["status"].as_str()) {
            (Some("done"), Some("done")) => {
                assert_eq!(run["outputs"]["sub"]["text"], "worked", "{run}");
                // Every attempt of the step after that ran is recorded, and the last one ran.
                let ran_after: Vec<u64> = logged.keys().filter(|(kind, r, _)| kind == "after" && r == id).map(|(_, _, a)| *a).collect();
                let recorded = attempts(run, "after");
                assert!(ran_after.iter().all(|a| *a <= recorded) && ran_after.contains(&recorded), "parent {id}: {ran_after:?} of {run}");
                done += 1;
            }
            (Some("failed"), Some("failed")) => {
                assert_eq!(attempts(child, "work"), ATTEMPTS, "child failed with attempts left: {child}");
                assert_eq!(run["failed_node"], "sub", "{run}");
            }
            (Some("failed"), Some("done")) => assert_eq!(attempts(run, "after"), ATTEMPTS, "parent {id} failed with attempts left: {run}"),
            other => panic!("parent {id} and its child ended as {other:?}: {run}"),
        }
    }
    eprintln!(
        "{backend:?}: {KILLS} kills; {parents} parents, {done} done with their one child, {before_any_step} killed before their first \
         step; {parked_parents} kills left a parent waiting on its child"
    );
    assert!(done >= 5, "few parents finished: {done} of {parents}");
    assert!(parked_parents >= 5, "few kills landed while a parent waited: {parked_parents}");
}
