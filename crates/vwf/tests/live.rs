//! Long-poll reads over real sockets: `GET /runs/{run_id}?since=&wait=` and `GET /runs?since=&wait=`
//! answer as soon as what they follow differs from the stamp the client has, or when the wait is
//! over. Two `vwf serve` on one PostgreSQL show that a gate answered on one instance wakes a
//! request held by the other (through LISTEN/NOTIFY); the file store wakes through its re-read.
//! A test knows a request is held by reading the server's `vwf_live_waiters` gauge (a bounded
//! poll of a real process), never by sleeping.

use crate::common;
use crate::on_both_backends;

use std::time::{Duration, Instant};

use common::server::{Options, Server, eventually, gated, send};
use common::{Backend, Home};
use serde_json::{Value, json};

/// The `wait` the tests ask for.
const WAIT: u64 = 30;
/// A woken request came back well before its wait was over (a loaded machine may be slow, but
/// not ten seconds slow).
const WOKEN_WITHIN: Duration = Duration::from_secs(20);
/// How many requests a server holds at once (`limits::LIVE_WAITERS`).
const WAITERS: usize = vwf_core::limits::LIVE_WAITERS;

/// A GET, and how long its answer took.
fn timed_get(server: &Server, path: &str) -> (u16, Value, Duration) {
    let started = Instant::now();
    let (status, body) = server.get(path);
    (status, body, started.elapsed())
}

fn stamp(body: &Value) -> String {
    body["stamp"].as_str().unwrap_or_else(|| panic!("no stamp in {body}")).to_string()
}

/// How many long-poll requests the server holds now (its `vwf_live_waiters` gauge).
fn waiters(server: &Server) -> usize {
    server.metric("vwf_live_waiters") as usize
}

/// Waits until the server holds `n` long-poll requests.
fn until_held(server: &Server, n: usize) {
    eventually(&format!("{n} held long-poll requests"), 60, || (waiters(server) >= n).then_some(()));
}

/// A run of `gated` parked at its gate, started on `server`, and its stamp.
fn parked_run(server: &Server) -> (String, String) {
    server.save("gated", gated());
    let id = server.run_id("gated", Value::Null);
    let (status, body) = server.get(&format!("/runs/{id}?wait=0"));
    assert_eq!((status, &body["status"]), (200, &json!("awaiting_approval")), "{body}");
    (id, stamp(&body))
}

fn answer_gate(server: &Server, id: &str) {
    let (status, body) = server.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "send"}));
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
}

/// Follows `path` (a run, or the listing whose newest run `status` reads) from the answer of a
/// woken long poll until the run is done: each answer comes when the run changed, none waits out.
fn follow_to_done(server: &Server, path: &str, mut body: Value, status: impl Fn(&Value) -> &Value) -> Value {
    for _ in 0..10 {
        assert_ne!(status(&body), "awaiting_approval", "a woken answer shows the gate answered: {body}");
        if status(&body) == "done" {
            return body;
        }
        let (code, next, took) = timed_get(server, &format!("{path}?since={}&wait={WAIT}", stamp(&body)));
        assert_eq!(code, 200, "{next}");
        assert!(took < WOKEN_WITHIN, "{path}: a run moving on did not wake the long poll ({took:?})");
        body = next;
    }
    panic!("{path} is not done after ten changes: {body}")
}

fn start_on(home: &Home, database: &str) -> Server {
    Server::start_with(home, Options { env: vec![("VWF_DATABASE_URL", database.to_string())], ..Options::default() })
}

/// Two instances, each with its own home, on one fresh database: a long poll of the run and one
/// of the runs listing, both held by B, come back with the answered run as soon as A answers the
/// gate, long before their wait is over.
#[test]
fn a_gate_answered_on_one_instance_wakes_long_polls_held_by_another() {
    let database = common::pg::fresh_database();
    let (home_a, home_b) = (Home::new(), Home::new());
    let (a, b) = (start_on(&home_a, &database), start_on(&home_b, &database));
    let (id, since) = parked_run(&a);
    let (status, listing) = b.get("/runs?wait=0");
    assert_eq!((status, &listing["runs"][0]["status"]), (200, &json!("awaiting_approval")), "{listing}");
    let listed = stamp(&listing);

    std::thread::scope(|scope| {
        let run = scope.spawn(|| timed_get(&b, &format!("/runs/{id}?since={since}&wait={WAIT}")));
        let list = scope.spawn(|| timed_get(&b, &format!("/runs?since={listed}&wait={WAIT}")));
        until_held(&b, 2);
        let answered = Instant::now();
        answer_gate(&a, &id);
        let (status, body, took) = run.join().expect("run long poll");
        let latency = answered.elapsed();
        assert_eq!(status, 200, "{body}");
        assert_ne!(stamp(&body), since, "a changed run has a new stamp");
        assert!(took < WOKEN_WITHIN, "the run's long poll was not woken: it took {took:?} of its {WAIT} s");
        println!("a gate answered on A reached B's long poll {} ms after the answer was sent", latency.as_millis());
        let done = follow_to_done(&b, &format!("/runs/{id}"), body, |run| &run["status"]);
        assert_eq!(done["outputs"]["out"]["text"], "sent", "{done}");
        let (status, body, took) = list.join().expect("listing long poll");
        assert_eq!(status, 200, "{body}");
        assert_ne!(stamp(&body), listed);
        assert!(took < WOKEN_WITHIN, "the listing's long poll was not woken: it took {took:?}");
        follow_to_done(&b, "/runs", body, |listing| &listing["runs"][0]["status"]);
    });
    // B's stamp of the answered run is A's: the stamp depends on the run, not on the instance.
    let (_, on_a) = a.get(&format!("/runs/{id}?wait=0"));
    let (_, on_b) = b.get(&format!("/runs/{id}?wait=0"));
    assert_eq!(stamp(&on_a), stamp(&on_b));
}

/// On one instance, a long poll held while the same instance answers the gate comes back with the
/// answered run: through notices on PostgreSQL, through the once-a-second re-read on files.
fn a_gate_answered_wakes_the_long_poll_of_its_own_instance(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    let (id, since) = parked_run(&server);
    std::thread::scope(|scope| {
        let held = scope.spawn(|| timed_get(&server, &format!("/runs/{id}?since={since}&wait={WAIT}")));
        until_held(&server, 1);
        answer_gate(&server, &id);
        let (status, body, took) = held.join().expect("long poll");
        assert_eq!(status, 200, "{body}");
        assert!(took < WOKEN_WITHIN, "{backend:?}: not woken, took {took:?}");
        follow_to_done(&server, &format!("/runs/{id}"), body, |run| &run["status"]);
    });
}

/// A run (and a listing) that does not change answers when the wait is over, 200 with the same
/// body and stamp; `since` without `wait` and a stamp that is not the current one answer at once.
fn an_unchanged_run_answers_its_stamp_when_the_wait_is_over(backend: Backend) {
    let home = Home::with_backend(backend);
    let server = Server::start(&home);
    let (id, since) = parked_run(&server);
    let (_, plain) = server.get(&format!("/runs/{id}"));
    assert!(plain.get("stamp").is_none(), "a plain read is today's body: {plain}");
    for path in [format!("/runs/{id}"), "/runs".to_string()] {
        let (_, first) = server.get(&format!("{path}?wait=0"));
        let since = stamp(&first);
        let (status, body, took) = timed_get(&server, &format!("{path}?since={since}&wait=1"));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, first, "{path}: the same body and stamp");
        assert!(took >= Duration::from_secs(1), "{path}: answered after {took:?}, before its wait was over");
        assert!(took < WOKEN_WITHIN, "{path}: {took:?}");
    }
    // Another stamp, or no wait: at once.
    let other = "0".repeat(32);
    for query in [format!("since={other}&wait={WAIT}"), format!("since={since}"), format!("since={since}&wait=0")] {
        let (status, body, took) = timed_get(&server, &format!("/runs/{id}?{query}"));
        assert_eq!((status, stamp(&body)), (200, since.clone()), "{query}: {body}");
        assert!(took < WOKEN_WITHIN, "{query}: {took:?}");
    }
    // With plan=1 the body holds the plan, and the stamp is the stamp of that body.
    let (_, with_plan) = server.get(&format!("/runs/{id}?plan=1&wait=0"));
    assert!(with_plan["plan"].is_object());
    assert_ne!(stamp(&with_plan), since);
}

on_both_backends!(a_gate_answered_wakes_the_long_poll_of_its_own_instance, an_unchanged_run_answers_its_stamp_when_the_wait_is_over);

/// Every `wait` that is not a whole number of seconds and every `since` that is not a stamp (32
/// lowercase hex digits) is a 400 naming the parameter, on the run and on the listing; every
/// whole number is accepted (a wait over the limit is cut to it). Drawn from arbitrary text and
/// from the valid forms.
#[test]
fn bad_since_and_wait_are_refused_and_every_whole_wait_is_accepted() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestRunner};

    let home = Home::new();
    let server = Server::start(&home);
    let (id, _) = parked_run(&server);
    let wait = prop_oneof![any::<String>(), "[0-9]{1,30}", "-?[0-9]{0,3}(\\.[0-9]{1,2})?", Just(String::new()), Just("30s".to_string())];
    let since = prop_oneof![any::<String>(), "[0-9a-f]{32}", "[0-9a-fA-F]{30,34}", Just(String::new())];
    let strategy = (proptest::option::of(wait), proptest::option::of(since), any::<bool>());
    let mut runner = TestRunner::new(Config { cases: 300, failure_persistence: None, ..Config::default() });
    runner
        .run(&strategy, |(wait, since, listing)| {
            let path = if listing { "/runs".to_string() } else { format!("/runs/{id}") };
            let mut query = Vec::new();
            if let Some(w) = &wait {
                query.push(("wait", w.as_str()));
            }
            if let Some(s) = &since {
                query.push(("since", s.as_str()));
            }
            let started = Instant::now();
            let (status, body) = send(server.client.get(server.url(&path)).query(&query));
            let good_wait = wait.as_ref().is_none_or(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()));
            let good_since = since.as_ref().is_none_or(|s| s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
            if good_wait && good_since {
                prop_assert_eq!(status, 200, "{:?}: {}", query, body);
                prop_assert_eq!(body["stamp"].is_string(), wait.is_some() || since.is_some(), "{}", body);
                // A drawn stamp is not the run's: nothing waits.
                prop_assert!(started.elapsed() < WOKEN_WITHIN);
            } else {
                prop_assert_eq!(status, 400, "{:?}: {}", query, body);
                let error = body["error"].as_str().unwrap_or("");
                let named = (!good_wait && error.contains("wait=")) || (!good_since && error.contains("since="));
                prop_assert!(named, "the error names the bad parameter: {:?}: {}", query, body);
            }
            Ok::<(), TestCaseError>(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

/// An unknown run is a 404 at once, whatever it waits for; a malformed id a 400.
#[test]
fn an_unknown_run_is_a_404_at_once() {
    let home = Home::new();
    let server = Server::start(&home);
    let since = "0".repeat(32);
    let (status, body, took) = timed_get(&server, &format!("/runs/0123456789ab?since={since}&wait={WAIT}"));
    assert_eq!(status, 404, "{body}");
    assert!(took < WOKEN_WITHIN, "{took:?}");
    let (status, body) = server.get(&format!("/runs/not-a-run?since={since}&wait={WAIT}"));
    assert_eq!(status, 400, "{body}");
}

/// With every waiting place taken, one more request answers at once with the current run (never
/// an error); the held ones all come back when the gate is answered.
#[test]
fn beyond_the_waiting_places_a_request_answers_at_once() {
    let database = common::pg::fresh_database();
    let home = Home::new();
    let server = start_on(&home, &database);
    let (id, since) = parked_run(&server);
    let path = format!("/runs/{id}?since={since}&wait={WAIT}");
    std::thread::scope(|scope| {
        let held: Vec<_> = (0..WAITERS).map(|_| scope.spawn(|| timed_get(&server, &path))).collect();
        until_held(&server, WAITERS);
        let (status, body, took) = timed_get(&server, &path);
        assert_eq!((status, stamp(&body)), (200, since.clone()), "{body}");
        assert!(took < WOKEN_WITHIN, "the request beyond the places waited {took:?}");
        answer_gate(&server, &id);
        for request in held {
            let (status, body, took) = request.join().expect("held request");
            assert_eq!(status, 200, "{body}");
            assert_ne!(body["status"], "awaiting_approval", "{body}");
            assert!(took < WOKEN_WITHIN, "{took:?}");
        }
    });
}

/// A server asked to stop answers the requests it holds at once (so it stops promptly), and
/// exits cleanly.
#[test]
fn a_stopping_server_answers_its_held_requests() {
    let home = Home::new();
    let server = Server::start(&home);
    let (id, since) = parked_run(&server);
    let pid = server.child.id();
    let path = format!("/runs/{id}?since={since}&wait={WAIT}");
    std::thread::scope(|scope| {
        let held = scope.spawn(|| timed_get(&server, &path));
        until_held(&server, 1);
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGTERM);
        }
        let (status, body, took) = held.join().expect("held request");
        assert_eq!((status, stamp(&body)), (200, since), "{body}");
        assert!(took < WOKEN_WITHIN, "a stopping server held the request {took:?}");
    });
    assert_eq!(server.terminate(), Some(0));
}
