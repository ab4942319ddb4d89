//! Retries through crashes (SPEC §7; the retry policy of steps that fail well): a `vwf serve`
//! killed with SIGKILL again and again while its runs retry a failing command, during the waits
//! between attempts and during the attempts themselves, then started again on the same home.
//!
//! The command appends `<run id> <attempt>` to a log (its attempt's number comes in
//! `VWF_ATTEMPT`) and fails until its third attempt. Each server's clock is pinned (`VWF_NOW`),
//! ten seconds later than the last one's, so every wait (five seconds) a killed server left has
//! come when the next one starts: its first tick resumes it, and nothing here sleeps to wait for
//! a timer. After every kill, with no writer alive, the test reads the store and checks:
//! - every run reads whole, and its step's attempts are numbered 1, 2, … with no gap;
//! - no attempt ran twice (no `<run> <attempt>` line twice in the log), and every attempt that
//!   ran is recorded (its number is among the step's attempts): none is lost;
//! - a run a kill left mid-attempt is taken up by the next server: the unfinished attempt is
//!   recorded failed (`interrupted during step flaky`) and the policy's next attempt follows.
//!
//! At the end every run is driven to its end by readers with a later clock (`vwf show`, which
//! resumes what is due): each is done, or failed having used every attempt its policy allows.

use crate::common;
use crate::crash_server::wait_for_orphans;
use crate::on_both_backends;
use vwf_store::Wait;

on_both_backends!(kills_during_retry_waits_and_retried_attempts_lose_no_attempt_and_run_none_twice);

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::server::{Options, Server};
use common::{Backend, Home, XorShift};
use serde_json::{Value, json};

const KILLS: usize = 100;
const SEED: u64 = 0x4e7e_a11e_d0c0_ffee;
const MAX_ATTEMPTS: usize = 10;
/// Runs kept open at once: a new one starts whenever fewer are.
const OPEN: usize = 3;
/// Where the pinned clocks start.
const T0: i64 = 1_796_198_400; // 2026-12-02T09:00:00Z

fn at(seconds: i64) -> String {
    chrono::DateTime::from_timestamp(T0 + seconds, 0).expect("a time").to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn design(log: &Path) -> Value {
    let run = format!("printf '%s %s\\n' {{{{run.id}}}} \"$VWF_ATTEMPT\" >> '{}'; sleep 0.03; [ \"$VWF_ATTEMPT\" -ge 3 ]", log.display());
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "flaky", "type": "command", "run": run,
             "retry": {"max_attempts": MAX_ATTEMPTS, "delay": "5s", "backoff": "fixed", "jitter": false}},
        ],
        "edges": [{"from": "start", "to": "flaky"}],
    })
}

/// The `<run> <attempt>` lines of the log, counted.
fn ran(log: &Path) -> BTreeMap<(String, u64), usize> {
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let mut words = line.split_whitespace();
        let (Some(run), Some(attempt)) = (words.next(), words.next().and_then(|a| a.parse().ok())) else {
            panic!("a log line that is not `<run> <attempt>`: {line:?}")
        };
        *out.entry((run.to_string(), attempt)).or_default() += 1;
    }
    out
}

/// The step's attempts, checked to be numbered 1..=n.
fn tries(id: &str, run: &Value) -> Vec<Value> {
    let step = run["steps"].as_array().and_then(|s| s.iter().find(|s| s["node"] == "flaky"));
    let Some(step) = step else { return Vec::new() };
    let tries = step["tries"].as_array().cloned().unwrap_or_default();
    let numbers: Vec<u64> = tries.iter().map(|t| t["attempt"].as_u64().unwrap_or(0)).collect();
    assert_eq!(numbers, (1..=tries.len() as u64).collect::<Vec<_>>(), "{id}: attempts numbered with a gap: {run}");
    assert_eq!(step["attempts"].as_u64(), Some(tries.len() as u64), "{id}: attempts and tries disagree");
    tries
}

/// What the kills came to.
#[derive(Default, Debug)]
struct Tally {
    during_wait: usize,
    during_attempt: usize,
    interrupted_attempts: usize,
}

/// Reads every stored run and checks them against the log; answers the runs not finished.
fn check(home: &Home, log: &Path, tally: &mut Tally) -> BTreeSet<String> {
    let store = home.store();
    let ran = ran(log);
    let mut open = BTreeSet::new();
    let mut recorded: BTreeMap<String, usize> = BTreeMap::new();
    for id in home.stored_run_ids() {
        let run_id = vwf_core::names::RunId::parse(&id).expect("a run id");
        let run = store.read_run(&run_id).wait().unwrap_or_else(|e| panic!("run {id} does not read whole: {e}"));
        let tries = tries(&id, &run);
        recorded.insert(id.clone(), tries.len());
        match (run["status"].as_str(), tries.last().and_then(|t| t["status"].as_str())) {
            (Some("waiting"), _) => {
                tally.during_wait += 1;
                open.insert(id.clone());
            }
            (Some("running"), Some("running")) => {
                tally.during_attempt += 1;
                open.insert(id.clone());
            }
            (Some("running"), _) => {
                open.insert(id.clone());
            }
            (Some("done" | "failed"), _) => {}
            other => panic!("{id}: unexpected state {other:?}: {run}"),
        }
    }
    for ((id, attempt), times) in &ran {
        assert_eq!(*times, 1, "run {id}: attempt {attempt} ran {times} times");
        let kept = recorded.get(id).copied().unwrap_or(0) as u64;
        assert!(*attempt <= kept, "run {id}: attempt {attempt} ran but the run records {kept} attempts");
    }
    open
}

fn kills_during_retry_waits_and_retried_attempts_lose_no_attempt_and_run_none_twice(backend: Backend) {
    let home = Home::with_backend(backend);
    let work = tempfile::tempdir().expect("tempdir");
    let log = work.path().join("attempts.log");
    let serve_err = work.path().join("serve.err");
    home.save("flaky", &design(&log));
    let mut rng = XorShift(SEED);
    let mut tally = Tally::default();
    let mut open = BTreeSet::new();
    let mut clock = 0;
    for kill in 0..KILLS {
        clock += 10;
        let mut server =
            Server::start_with(&home, Options { env: vec![("VWF_NOW", at(clock))], stderr: Some(&serve_err), ..Options::default() });
        let delay = rng.below(Duration::from_millis(150));
        let starts = OPEN.saturating_sub(open.len());
        let (http, url) = (server.client.clone(), server.url("/designs/flaky/run"));
        std::thread::scope(|s| {
            for _ in 0..starts {
                // Answered once the run parks or ends, unless the kill comes first.
                s.spawn(|| http.post(&url).json(&json!({})).send().ok());
            }
            std::thread::sleep(delay); // the kill moment, not a wait for a result
            let _ = server.child.kill(); // SIGKILL
            server.child.wait().expect("wait for the killed server");
        });
        wait_for_orphans(&log);
        let mut seen = Tally::default();
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&home, &log, &mut seen)));
        match checked {
            Ok(left) => open = left,
            Err(e) => {
                eprintln!(
                    "kill {kill} (delay {delay:?}); the server's standard error:\n{}",
                    std::fs::read_to_string(&serve_err).unwrap_or_default()
                );
                std::panic::resume_unwind(e);
            }
        }
        // Tallied on the state each kill left.
        tally.during_wait += usize::from(seen.during_wait > 0);
        tally.during_attempt += usize::from(seen.during_attempt > 0);
    }

    // Readers with a later clock drive every run left open to its end.
    for id in &open {
        for step in 0..MAX_ATTEMPTS * 2 {
            clock += 10;
            let out = home.process(&["--json", "show", id]).env("VWF_NOW", at(clock)).output().expect("vwf show");
            let run: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("show {id}: {e}"));
            if matches!(run["status"].as_str(), Some("done" | "failed")) {
                break;
            }
            assert!(step + 1 < MAX_ATTEMPTS * 2, "{id} never ends: {run}");
        }
    }
    let left = check(&home, &log, &mut Tally::default());
    assert!(left.is_empty(), "runs left unfinished: {left:?}");
    let store = home.store();
    let (mut done, mut used_up) = (0, 0);
    for id in home.stored_run_ids() {
        let run = store.read_run(&vwf_core::names::RunId::parse(&id).expect("id")).wait().expect("read");
        let tries = tries(&id, &run);
        tally.interrupted_attempts += tries.iter().filter(|t| t["error"] == "interrupted during step flaky").count();
        match run["status"].as_str() {
            Some("done") => {
                assert!(tries.len() >= 3, "{id}: done before its third attempt: {run}");
                done += 1;
            }
            _ => {
                assert_eq!(tries.len(), MAX_ATTEMPTS, "{id} failed with attempts left: {run}");
                used_up += 1;
            }
        }
    }
    eprintln!("{backend:?}: {KILLS} kills; {done} runs done, {used_up} used every attempt; {tally:?}");
    assert!(done > 0, "no run finished");
    assert!(tally.during_wait >= 5, "few kills landed during a wait between attempts: {tally:?}");
    assert!(tally.during_attempt >= 5, "few kills landed during an attempt: {tally:?}");
    assert!(tally.interrupted_attempts >= 5, "few attempts were interrupted and taken up again: {tally:?}");
}
