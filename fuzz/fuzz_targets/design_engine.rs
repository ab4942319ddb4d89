//! A design through the validator, the compiler and the engine:
//! `<design JSON>` [NUL `<run input JSON>` [NUL `<tape>`]].
//!
//! The run is driven to its end with no I/O: every task gets a synthetic outcome chosen by the
//! tape (done with text or JSON output, failed, delivered or not, parked for an agent; sometimes
//! an outcome of the wrong kind), every gate an answer (one of its options, a wrong one, or its
//! deadline passes), every parked agent step an output, every timed wait its time. A failed run is
//! retried once. Time is injected and moves by tape-chosen amounts, up to the last instant a
//! timestamp can carry. Checked: no panic; `validate` and `Plan::compile` agree; every state the
//! run passes through writes a run file that reads back (as the store reads it) to the same run;
//! the engine makes progress (a run that is not finished says what it waits on).
#![no_main]

use chrono::DateTime;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::plan::Plan;
use vwf_core::run::{Advance, Delivery, Outcome, Pending, Response, Run, Status, Task, TriggerInfo, Work};
use vwf_core::time::{self, Ts};
use vwf_core::{json as vjson, validate};
use vwf_fuzz::{Tape, hostile_text, sections};

/// Engine calls per input: enough for every example design, bounded for designs with huge loops.
const MAX_STEPS: usize = 2_000;

fuzz_target!(|data: &[u8]| {
    let [design, input, tape] = sections::<3>(data);
    let Ok(value) = vjson::parse_slice(design) else { return };
    let report = validate::validate(&value);
    let Ok(design) = Design::from_value(&value) else {
        assert!(!report.ok, "validate accepts a design that does not read");
        return;
    };
    let plan = match Plan::compile("fuzz", &design) {
        Ok(plan) => plan,
        Err(r) => {
            assert!(!report.ok, "validate accepts a design the compiler refuses: {:?}", r.errors);
            return;
        }
    };
    assert!(report.ok, "the compiler accepts a design validate refuses: {:?}", report.errors);
    let input = vjson::parse_slice(input).unwrap_or_else(|_| json!({}));
    let mode = plan.trigger_mode().to_string();
    let mut tape = Tape::new(tape);
    let mut now = DateTime::from_timestamp(1_795_000_000, 0).unwrap_or_else(time::latest);
    let mut run = Run::start(plan, "20261129-090000-fuzz", TriggerInfo::new(&mode, input), now);
    let mut retried = false;
    for _ in 0..MAX_STEPS {
        now = later(now, &mut tape);
        let advance = run.advance(now);
        check_round_trip(&run);
        match advance {
            Advance::Settled(_) => {}
            Advance::Tasks(tasks) => {
                for task in tasks {
                    let outcome = outcome(&task, now, &mut tape);
                    let _ = run.complete(&task.node, outcome, now);
                }
            }
            Advance::Idle => {
                if run.status() == Status::Failed && !retried {
                    retried = true;
                    run.retry(now).expect("a failed run can be retried");
                } else if run.status().is_finished() {
                    break;
                } else {
                    assert!(!run.parked().is_empty(), "run is {} but waits on nothing", run.status().as_str());
                    now = answer_parked(&mut run, now, &mut tape);
                }
            }
        }
        check_round_trip(&run);
    }
    let _ = run.result();
});

/// `now` moved on by a tape-chosen amount (often not at all), never past the last timestamp.
fn later(now: Ts, tape: &mut Tape<'_>) -> Ts {
    let seconds = match tape.below(8) {
        0 => 1,
        1 => 61,
        2 => 86_400 * 40,
        3 => tape.u64(),
        _ => 0,
    };
    time::add_seconds(now, seconds).unwrap_or(now)
}

/// A synthetic outcome for `task`, usually one its driver could give.
fn outcome(task: &Task, now: Ts, tape: &mut Tape<'_>) -> Outcome {
    let delivered = |ok: bool, tape: &mut Tape<'_>| {
        Outcome::Delivered(Delivery { node: task.node.clone(), target: hostile_text(tape), ok, detail: hostile_text(tape), at: now })
    };
    match tape.below(10) {
        0 => Outcome::Failed { error: hostile_text(tape) },
        1 => Outcome::ParkAgent,
        2 => delivered(tape.byte() % 2 == 0, tape),
        _ => match &task.work {
            Work::Deliver { .. } => delivered(true, tape),
            Work::Agent { .. } => {
                let tokens = u64::from(tape.byte()) * 100;
                let mut extra = Map::new();
                extra.insert("model".into(), json!("fuzz-model"));
                extra.insert("tokens".into(), json!(tokens));
                Outcome::Done { text: hostile_text(tape), extra, tokens }
            }
            Work::Command { .. } => {
                let mut extra = Map::new();
                extra.insert("exit_code".into(), json!(0));
                extra.insert("stderr".into(), json!(""));
                Outcome::Done { text: hostile_text(tape), extra, tokens: 0 }
            }
            Work::Http { .. } => {
                let mut extra = Map::new();
                extra.insert("status".into(), json!(200));
                extra.insert("headers".into(), json!({}));
                Outcome::Done { text: hostile_text(tape), extra, tokens: 0 }
            }
            Work::Emit { .. } => Outcome::Done { text: String::new(), extra: Map::new(), tokens: 0 },
        },
    }
}

/// Answers the first parked step; returns the new `now` (moved to a wait's time or past a
/// gate's deadline when the tape says so).
fn answer_parked(run: &mut Run, now: Ts, tape: &mut Tape<'_>) -> Ts {
    let pending = run.parked()[0].clone();
    let node = pending.node().to_string();
    match pending {
        Pending::Wait { resume_at, .. } => return resume_at.max(now),
        Pending::Approval { options, deadline, .. } => match (tape.below(4), deadline) {
            (0, Some(d)) => return d.max(now),
            (1, _) => {
                let _ = run.respond(&node, Response::Answer(hostile_text(tape)), now);
            }
            _ if !options.is_empty() => {
                let answer = options[tape.below(options.len())].to_ascii_uppercase();
                run.respond(&node, Response::Answer(answer), now).expect("an option is an answer");
            }
            _ => {
                let _ = run.respond(&node, Response::Answer(String::new()), now);
            }
        },
        Pending::Agent { .. } => {
            let response = match tape.below(3) {
                0 => Response::Generated { text: hostile_text(tape), model: None, tokens: u64::from(tape.byte()) * 1000 },
                1 => Response::Answer(hostile_text(tape)),
                _ => Response::Output(hostile_text(tape)),
            };
            let _ = run.respond(&node, response, now);
        }
    }
    now
}

/// The run file of `run`, written and read back the way the store does, is `run` again.
fn check_round_trip(run: &Run) {
    let text = serde_json::to_vec(run).expect("a run serializes");
    let value: Value = serde_json::from_slice(&text).expect("a run file reads back as JSON");
    let back: Run = serde_json::from_value(value).expect("a run file reads back as a run");
    assert_eq!(serde_json::to_vec(&back).expect("serializes"), text, "a run changes through its file");
}
