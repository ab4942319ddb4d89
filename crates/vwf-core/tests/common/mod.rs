//! Checks shared by the engine tests.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::Value;
use vwf_core::run::journal::Part;
use vwf_core::run::{Advance, Outcome, Run, Task};
use vwf_core::secrets::Secrets;
use vwf_core::time::Ts;

/// What a store keeps of one run: the last whole document and the parts written since.
type Kept = (Value, BTreeMap<Part, Value>);

thread_local! {
    /// A store as the runner feeds it, per run.
    static SAVED: RefCell<BTreeMap<String, Kept>> = const { RefCell::new(BTreeMap::new()) };
}

/// Saves the run the way a store that keeps parts does (a whole document when the run asks for
/// one, else its changed parts), reads it back from that, and checks the result is exactly the
/// run's document. Called after every engine call of the tests, so every path the tests reach
/// is held to it.
pub fn save_and_read_back(run: &mut Run) {
    let changes = run.take_changes();
    let doc = serde_json::to_value(&*run).unwrap();
    // What the save will make the record hold: exact for a whole save, never less than the
    // document for a save of parts (`[limits] run_bytes` is checked against it).
    let size = run.record_size(&changes);
    let bytes = serde_json::to_vec(&*run).unwrap().len() as u64;
    if changes.whole {
        assert_eq!(size.bytes, bytes, "a whole save measures the document");
    } else {
        assert!(size.bytes >= bytes, "a save of parts measured {} bytes, less than the document's {bytes}", size.bytes);
    }
    run.record_saved(size);
    SAVED.with(|saved| {
        let mut saved = saved.borrow_mut();
        let saved = saved.entry(run.run_id().to_string()).or_insert((Value::Null, BTreeMap::new()));
        if changes.whole {
            *saved = (doc.clone(), BTreeMap::new());
        } else {
            for part in changes.parts {
                let value = run.part(&part).unwrap_or_else(|| panic!("a changed part {part:?} has no value"));
                saved.1.insert(part, value);
            }
        }
        let mut back: Run = serde_json::from_value(saved.0.clone()).unwrap();
        for (part, value) in &saved.1 {
            back.apply(part, value.clone()).unwrap_or_else(|e| panic!("part {part:?} does not apply: {e}"));
        }
        let back = serde_json::to_value(&back).unwrap();
        assert_eq!(back, doc, "the run read back from its parts differs from the run");
    });
}

/// Loops `advance(now)` until `Idle`, completing every task with the outcome `answer` picks and
/// saving and reading the run back after every engine call. Returns each batch of tasks handed out.
pub fn drive_batches(run: &mut Run, now: Ts, answer: impl FnMut(&Task) -> Outcome) -> Vec<Vec<Task>> {
    drive_batches_with(run, now, &Secrets::default(), answer)
}

/// [`drive_batches`], rendering `{{secrets.NAME}}` from `secrets`.
pub fn drive_batches_with(run: &mut Run, now: Ts, secrets: &Secrets, mut answer: impl FnMut(&Task) -> Outcome) -> Vec<Vec<Task>> {
    let mut batches = Vec::new();
    for _ in 0..1000 {
        let advanced = run.advance_with(now, secrets);
        save_and_read_back(run);
        match advanced {
            Advance::Settled(_) => {}
            Advance::Tasks(tasks) => {
                assert!(!tasks.is_empty(), "advance handed out an empty task list");
                for t in &tasks {
                    let outcome = answer(t);
                    run.complete(&t.node, outcome, now).unwrap_or_else(|e| panic!("complete {}: {e}", t.node));
                    save_and_read_back(run);
                }
                batches.push(tasks);
            }
            Advance::Idle => return batches,
        }
    }
    panic!("the run never reached Idle")
}

/// The step instance a test names (`node` or `node#pass`).
pub fn pid(text: &str) -> vwf_core::names::PassId {
    vwf_core::names::PassId::parse(text).expect("a step instance")
}

/// The question path a test names (`step/node`).
pub fn path(text: &str) -> vwf_core::names::StepPath {
    vwf_core::names::StepPath::parse(text).expect("a step path")
}
