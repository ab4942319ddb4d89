//! A trigger's `debounce` and `throttle` through the runner and a real file store, on injected
//! clocks: events emitted at generated times and the daemon's look at held arrivals at generated
//! moments give exactly the starts the rule says (worked out here directly from the arrival
//! times), with the payload and the count the rule says; keys are apart; a webhook delivery the
//! rule holds answers 202 with when its run starts.

use crate::common;

use std::path::Path;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use vwf::app::App;
use vwf::clock::FixedClock;
use vwf::runner::EmitSource;
use vwf::tools;

const T0: i64 = 1_800_000_000;

fn at(s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(T0 + s, 0).expect("a time")
}

fn app_at(home: &Path, s: i64) -> App {
    App { clock: Box::new(FixedClock::new(at(s))), ..App::open(home.to_path_buf()).expect("open app") }
}

fn listener(rule: (&str, Value)) -> Value {
    let mut trigger = json!({"id": "on", "type": "trigger", "mode": "event", "sources": ["tick"]});
    trigger[rule.0] = rule.1;
    json!({"nodes": [trigger, {"id": "out", "type": "output", "template": "{{trigger.payload.n}}"}], "edges": [{"from": "on", "to": "out"}]})
}

fn save(home: &Path, graph: Value) {
    let reply = tools::call(&app_at(home, 0), "workflow_design_save", &json!({"name": "listen", "graph": graph}));
    assert_eq!(reply.body["ok"], true, "save: {}", reply.body);
}

/// The runs of the home: (when made, seconds from T0; the payload's `n`; how many arrivals were
/// folded in), oldest first.
fn starts(home: &Path) -> Vec<(i64, i64, u64)> {
    let app = app_at(home, 0);
    let runner = app.runner(&vwf::app::quiet, false);
    let mut out: Vec<(i64, i64, u64)> = runner
        .list(10_000)
        .expect("list")
        .into_iter()
        .map(|entry| {
            let r = entry.run.expect("a readable run");
            let made = DateTime::parse_from_rfc3339(r["created_at"].as_str().expect("created_at")).expect("time").timestamp() - T0;
            (made, r["trigger"]["input"]["payload"]["n"].as_i64().expect("n"), r["trigger"]["folded"].as_u64().unwrap_or(0))
        })
        .collect();
    out.sort();
    out
}

/// Arrival times (seconds from T0, sorted, with bursts and gaps) and moments the daemon looks.
fn timeline() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    let gaps = prop::collection::vec(prop_oneof![0i64..3, 0i64..20, 0i64..90], 1..25);
    let arrivals = gaps.prop_map(|gaps| {
        let mut t = 0;
        gaps.into_iter()
            .map(|g| {
                t += g;
                t
            })
            .collect::<Vec<i64>>()
    });
    (arrivals, prop::collection::vec(0i64..400, 0..12))
}

/// Plays the timeline on `home`: each arrival emits `tick` with `{"n": i}`, each look starts what
/// is due; then looks far after everything until nothing more starts.
fn play(home: &Path, arrivals: &[i64], looks: &[i64]) {
    let mut events: Vec<(i64, Option<usize>)> = arrivals.iter().enumerate().map(|(i, t)| (*t, Some(i))).collect();
    events.extend(looks.iter().map(|t| (*t, None)));
    events.sort_by_key(|(t, arrival)| (*t, arrival.is_some()));
    for (t, arrival) in events {
        let app = app_at(home, t);
        let runner = app.runner(&vwf::app::quiet, false);
        match arrival {
            Some(n) => {
                runner.emit("tick", json!({"n": n}), &EmitSource::default()).expect("emit");
            }
            None => {
                runner.start_due_arrivals();
            }
        }
    }
    // The daemon goes on looking: what is still held starts as its window makes room.
    for k in 0..30 {
        if app_at(home, 100_000 + 100 * k).runner(&vwf::app::quiet, false).start_due_arrivals().is_empty() {
            break;
        }
    }
}

#[test]
fn debounce_starts_one_run_per_quiet_burst_with_its_last_payload() {
    let period = 10i64;
    let mut runner = TestRunner::new(Config { cases: 24, ..Config::default() });
    runner
        .run(&timeline(), |(arrivals, looks)| {
            let home = common::Home::new();
            save(home.path(), listener(("debounce", json!({"period": format!("{period}s")}))));
            play(home.path(), &arrivals, &looks);
            // The bursts: split where a gap reaches the period; each starts once, with its last
            // arrival's payload and how many it folded in, no earlier than a period after it.
            let mut expected = Vec::new();
            let mut i = 0;
            while i < arrivals.len() {
                let mut j = i;
                while j + 1 < arrivals.len() && arrivals[j + 1] - arrivals[j] < period {
                    j += 1;
                }
                expected.push((j as i64, (j - i + 1) as u64));
                i = j + 1;
            }
            let got = starts(home.path());
            let got_bursts: Vec<(i64, u64)> = got.iter().map(|(_, n, folded)| (*n, *folded)).collect();
            prop_assert_eq!(&got_bursts, &expected, "arrivals {:?}, looks {:?}", arrivals, looks);
            for (made, n, _) in &got {
                prop_assert!(*made >= arrivals[*n as usize] + period, "a burst started before it was quiet: {:?}", got);
            }
            Ok(())
        })
        .unwrap_or_else(|e: proptest::test_runner::TestError<_>| panic!("{e}"));
}

#[test]
fn throttle_drops_or_defers_past_its_limit_per_window() {
    let (limit, period) = (2usize, 30i64);
    let mut runner = TestRunner::new(Config { cases: 24, ..Config::default() });
    runner
        .run(&(timeline(), any::<bool>()), |((arrivals, looks), queue)| {
            let home = common::Home::new();
            let on_limit = if queue { "queue" } else { "drop" };
            save(home.path(), listener(("throttle", json!({"limit": limit, "period": format!("{period}s"), "on_limit": on_limit}))));
            play(home.path(), &arrivals, &looks);
            let got = starts(home.path());
            // Never more than `limit` starts in any window of `period`.
            for (made, _, _) in &got {
                let within = got.iter().filter(|(m, _, _)| *m > made - period && m <= made).count();
                prop_assert!(within <= limit, "{} starts in the window ending {}: {:?}", within, made, got);
            }
            if queue {
                // Nothing lost, in arrival order.
                let ns: Vec<i64> = got.iter().map(|(_, n, _)| *n).collect();
                prop_assert_eq!(ns, (0..arrivals.len() as i64).collect::<Vec<_>>());
            } else {
                // An arrival is dropped exactly when its window is full of starts already.
                let mut kept: Vec<i64> = Vec::new();
                let mut expected = Vec::new();
                for (n, t) in arrivals.iter().enumerate() {
                    if kept.iter().filter(|k| **k > t - period).count() < limit {
                        kept.push(*t);
                        expected.push((*t, n as i64, 0));
                    }
                }
                prop_assert_eq!(got, expected);
            }
            Ok(())
        })
        .unwrap_or_else(|e: proptest::test_runner::TestError<_>| panic!("{e}"));
}

#[test]
fn keys_debounce_apart_and_a_held_event_says_why() {
    let home = common::Home::new();
    let mut graph = listener(("debounce", json!({"period": "1m", "key": "{{trigger.payload.pr}}"})));
    graph["nodes"][1]["template"] = json!("{{trigger.payload.pr}}");
    save(home.path(), graph);
    let emit = |s: i64, pr: i64, n: i64| {
        let app = app_at(home.path(), s);
        app.runner(&vwf::app::quiet, false).emit("tick", json!({"pr": pr, "n": n}), &EmitSource::default()).expect("emit")
    };
    let held = emit(0, 1, 0);
    assert!(held.runs.is_empty());
    assert!(held.skipped[0].1.starts_with("debounced: one run starts at 2027-01-15T08:01:00"), "{:?}", held.skipped);
    emit(10, 2, 1);
    emit(30, 1, 2);
    let app = app_at(home.path(), 75);
    let started = app.runner(&vwf::app::quiet, false).start_due_arrivals();
    assert_eq!(started.len(), 1, "PR 2's burst is quiet at 70 s; PR 1's not until 90 s");
    assert_eq!(started[0].trigger().input["payload"]["pr"], 2);
    let app = app_at(home.path(), 90);
    let started = app.runner(&vwf::app::quiet, false).start_due_arrivals();
    assert_eq!((started.len(), started[0].trigger().folded), (1, 2));
    assert_eq!(started[0].trigger().input["payload"]["n"], 2, "the burst's last payload");
    // Nothing is left waiting.
    assert!(app_at(home.path(), 1_000).runner(&vwf::app::quiet, false).start_due_arrivals().is_empty());
    let value: Value = serde_json::to_value(started[0].result()).expect("run");
    assert_eq!(value["trigger"]["folded"], 2);
}
