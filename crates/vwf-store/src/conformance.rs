//! What every backend of [`JobStore`] (and [`Store::design_stamp`]) must do, as checks that panic
//! on the first broken promise: the file store's tests run them, and so must any other backend's,
//! so a second backend is known complete when these pass. Each check starts from an empty store.

use crate::Wait;
use std::sync::Arc;

use serde_json::{Value, json};
use vwf_core::names::{DesignName, PassId};
use vwf_core::schedule::job::{self, Job};
use vwf_core::time::{self, Ts};

use super::{Durability, JobStore, Store, StoreError};

fn name(s: &str) -> DesignName {
    DesignName::parse(s).expect("a valid design name")
}

fn at(s: &str) -> Ts {
    time::parse(s).expect("a valid time")
}

/// A job of `design` firing daily at 09:00 UTC.
pub fn sample_job(design: &str) -> Job {
    let design = name(design);
    Job {
        job_id: job::job_id(&design),
        name: format!("workflow:{design}"),
        design: design.to_string(),
        cron: "0 9 * * *".into(),
        human: "Every day at 09:00".into(),
        tz: "UTC".into(),
        paused: false,
        next_run_at: Some(at("2026-03-01T09:00:00Z")),
        last_run_at: None,
        prompt: job::prompt(&design, &Value::Null),
        deliver: None,
        schedule: serde_json::from_value(json!({"preset": "daily", "time": "09:00"})).expect("schedule"),
        missed: Vec::new(),
        paused_reason: None,
        input: Value::Null,
    }
}

/// Jobs: an empty store has none; a job reads back as written and is listed; a job whose id names
/// no design is refused writing nothing; removing twice is `NotFound`.
pub fn jobs_round_trip(store: &dyn JobStore) {
    assert!(!store.has_jobs().wait(), "a fresh store has no jobs");
    assert!(store.list_jobs().wait().expect("list").is_empty());
    assert_eq!(store.read_job(&name("daily")).wait().expect("read"), None);
    let mut job = sample_job("daily");
    job.input = json!({"nested": [1, {"x": "é"}]});
    store.write_job(&job).wait().expect("write");
    assert!(store.has_jobs().wait());
    assert_eq!(store.read_job(&name("daily")).wait().expect("read"), Some(job.clone()));
    let other = sample_job("a-first");
    store.write_job(&other).wait().expect("write");
    let listed: Vec<Job> = store.list_jobs().wait().expect("list").into_iter().map(|e| e.expect("readable")).collect();
    assert_eq!(listed, vec![other.clone(), job.clone()], "sorted by id");
    let mut bad = sample_job("daily");
    bad.job_id = "../daily".into();
    assert!(store.write_job(&bad).wait().is_err(), "an id that names no design is refused");
    assert_eq!(store.read_job(&name("daily")).wait().expect("read"), Some(job));
    store.remove_job(&name("daily")).wait().expect("remove");
    assert_eq!(store.read_job(&name("daily")).wait().expect("read"), None);
    assert!(matches!(store.remove_job(&name("daily")).wait(), Err(StoreError::NotFound(_))));
    assert_eq!(store.list_jobs().wait().expect("list").len(), 1);
}

/// The jobs lock excludes: `threads` threads each make `rounds` read-modify-writes of one job
/// under it, and every one of them is kept.
pub fn jobs_lock_excludes(store: Arc<dyn JobStore>, threads: usize, rounds: usize) {
    store.write_job(&sample_job("counted")).wait().expect("write");
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let _lock = store.lock_jobs().wait().expect("lock");
                    let mut job = store.read_job(&name("counted")).wait().expect("read").expect("the job");
                    job.missed.push(job::Missed { at: at("2026-03-01T09:00:00Z") });
                    store.write_job(&job).wait().expect("write");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let job = store.read_job(&name("counted")).wait().expect("read").expect("the job");
    assert_eq!(job.missed.len(), threads * rounds, "an update made under the lock was lost");
}

/// Heartbeat state and the daemon's claim: a fire reads back; a fire is claimed only by whoever
/// saw the last one recorded; a second claim is `Busy` while the first is held and succeeds once
/// it is dropped.
pub fn trigger_state(store: &dyn JobStore) {
    let d = name("beat");
    assert_eq!(store.last_fire(&d).wait(), None);
    let claimed = name("claimed");
    assert!(store.claim_fire(&claimed, None, at("2026-03-01T09:00:00Z")).wait().expect("claim"), "the first fire");
    assert!(!store.claim_fire(&claimed, None, at("2026-03-01T09:00:00Z")).wait().expect("claim"), "the same fire twice");
    let last = store.last_fire(&claimed).wait();
    assert!(store.claim_fire(&claimed, last, at("2026-03-01T10:00:00Z")).wait().expect("claim"), "the next fire");
    assert!(!store.claim_fire(&claimed, last, at("2026-03-01T10:00:00Z")).wait().expect("claim"), "a daemon behind the times");
    assert_eq!(store.last_fire(&claimed).wait(), Some(at("2026-03-01T10:00:00Z")));
    let racing: Vec<bool> = std::thread::scope(|s| {
        let last = store.last_fire(&claimed).wait();
        let handles: Vec<_> =
            (0..4).map(|_| s.spawn(move || store.claim_fire(&claimed_name(), last, at("2026-03-01T11:00:00Z")).wait())).collect();
        handles.into_iter().map(|h| h.join().expect("thread").expect("claim")).collect()
    });
    assert_eq!(racing.iter().filter(|won| **won).count(), 1, "exactly one of four racing daemons claims a fire: {racing:?}");
    store.record_fire(&d, at("2026-03-01T09:00:00Z")).wait().expect("record");
    store.record_fire(&d, at("2026-03-01T10:00:00Z")).wait().expect("record");
    assert_eq!(store.last_fire(&d).wait(), Some(at("2026-03-01T10:00:00Z")));
    assert_eq!(store.last_fire(&name("other")).wait(), None);
    assert_eq!(
        store.list_fires().wait().expect("fires"),
        vec![(d.clone(), at("2026-03-01T10:00:00Z")), (claimed_name(), at("2026-03-01T11:00:00Z"))],
        "sorted by design"
    );
    let claim = store.claim_triggers().wait().expect("first claim");
    assert!(matches!(store.claim_triggers().wait(), Err(StoreError::Busy(_))), "a second daemon is kept off");
    drop(claim);
    store.claim_triggers().wait().expect("claimed again once released");
}

fn claimed_name() -> DesignName {
    name("claimed")
}

/// A design's stamp, when the store gives one, changes when the design is saved again and is gone
/// with the design.
pub fn design_stamps(store: &dyn Store) {
    let d = name("stamped");
    assert_eq!(store.design_stamp(&d).wait(), None, "no design, no stamp");
    store.save_design(&d, &json!({"nodes": [], "edges": []})).wait().expect("save");
    let Some(first) = store.design_stamp(&d).wait() else { return };
    store.save_design(&d, &json!({"nodes": [{"id": "start", "type": "trigger"}], "edges": []})).wait().expect("save");
    assert_ne!(store.design_stamp(&d).wait(), Some(first), "a saved change changes the stamp");
    store.delete_design(&d).wait().expect("delete");
    assert_eq!(store.design_stamp(&d).wait(), None);
}

/// Designs and runs: round trips, create-only saves, deletes, a newest-first listing by first
/// write, cursor pages, and `NotFound` for what was never stored.
pub fn store_round_trip(store: &dyn Store) {
    let d = name("alpha");
    assert!(store.list_designs().wait().expect("list").is_empty(), "a fresh store has no designs");
    assert!(matches!(store.load_design(&d).wait(), Err(StoreError::NotFound(_))));
    let graph = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual", "note": "é \u{0} \"q\""}], "edges": []});
    store.save_design(&d, &graph).wait().expect("save");
    assert_eq!(store.load_design(&d).wait().expect("load"), graph, "a design reads back as saved");
    assert!(store.design_exists(&d).wait());
    assert!(matches!(store.create_design(&d, &json!({})).wait(), Err(StoreError::Exists(_))), "create never replaces");
    assert_eq!(store.load_design(&d).wait().expect("load"), graph);
    store.create_design(&name("beta"), &json!({"nodes": [], "edges": []})).wait().expect("create");
    assert_eq!(store.list_designs().wait().expect("list"), vec!["alpha".to_string(), "beta".to_string()]);
    store.delete_design(&name("beta")).wait().expect("delete");
    assert!(matches!(store.delete_design(&name("beta")).wait(), Err(StoreError::NotFound(_))));
    assert!(!store.design_exists(&name("beta")).wait());

    let unknown = vwf_core::names::RunId::parse("000000000001").expect("id");
    assert!(matches!(store.read_run(&unknown).wait(), Err(StoreError::NotFound(_))));
    assert!(matches!(store.lock_run(&unknown).wait(), Err(StoreError::NotFound(_))));
    assert!(store.list_runs(10).wait().expect("list").is_empty());
    // Three runs reserved in one order and first written in another: the listing follows the writes.
    let ids: Vec<_> = (0..3).map(|_| store.allocate_run_id().wait().expect("allocate")).collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2], "ids are unique");
    for (n, i) in [2usize, 0, 1].into_iter().enumerate() {
        store.import_run(&ids[i], &json!({"run_id": ids[i].as_str(), "n": n, "text": "ünïcode \u{0}"})).wait().expect("write");
    }
    // A later write of the first run does not move it.
    store.import_run(&ids[2], &json!({"run_id": ids[2].as_str(), "n": 9})).wait().expect("rewrite");
    assert_eq!(store.read_run(&ids[2]).wait().expect("read")["n"], 9, "the newest write is what reads back");
    let listed: Vec<String> = store.list_runs(10).wait().expect("list").into_iter().map(|e| e.id.to_string()).collect();
    assert_eq!(listed, vec![ids[1].to_string(), ids[0].to_string(), ids[2].to_string()], "newest first by first write");
    assert_eq!(store.list_runs(2).wait().expect("list").len(), 2);
    let page = store.list_run_ids(None, 2).wait().expect("page");
    assert_eq!(page, vec![ids[1].clone(), ids[0].clone()]);
    assert_eq!(store.list_run_ids(Some(&ids[0]), 10).wait().expect("page"), vec![ids[2].clone()]);
    assert!(store.list_run_ids(Some(&ids[2]), 10).wait().expect("page").is_empty());
    assert!(matches!(store.list_run_ids(Some(&unknown), 10).wait(), Err(StoreError::NotFound(_))));
    let summaries = store.list_summaries(10).wait().expect("summaries");
    assert_eq!(summaries.len(), 3);
    assert!(summaries.iter().all(|s| s.summary.is_err()), "documents that are not runs have no summary");
}

/// Run locks: `try_lock_run` fails while another holder has the lock and succeeds once it is
/// dropped; `lock_run` waits for it. `threads` threads each make `rounds` locked read-modify-writes
/// of one run, and none is lost.
pub fn run_locks(store: Arc<dyn Store>, threads: usize, rounds: usize) {
    // An id the caller chose is reserved once, then locked and saved like an allocated one.
    let chosen = store.allocate_run_id().wait().expect("allocate").derived("conformance");
    assert!(store.reserve_run_id(&chosen).wait().expect("reserve"), "a fresh id is reserved");
    assert!(!store.reserve_run_id(&chosen).wait().expect("reserve"), "an id is reserved once");
    assert!(matches!(store.read_run(&chosen).wait(), Err(StoreError::NotFound(_))), "a reserved id is no run yet");
    let held = store.lock_run(&chosen).wait().expect("lock a reserved id");
    store.import_run(&chosen, &json!({"count": 0})).wait().expect("save under a reserved id");
    drop(held);
    assert_eq!(store.read_run(&chosen).wait().expect("read")["count"], 0);
    let id = store.allocate_run_id().wait().expect("allocate");
    store.import_run(&id, &json!({"count": 0})).wait().expect("write");
    let held = store.lock_run(&id).wait().expect("lock");
    assert!(store.try_lock_run(&id).wait().expect("try").is_none(), "the lock is exclusive");
    drop(held);
    let again = store.try_lock_run(&id).wait().expect("try");
    assert!(again.is_some(), "a dropped lock is released");
    drop(again);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (store, id) = (store.clone(), id.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let _lock = store.lock_run(&id).wait().expect("lock");
                    let count = store.read_run(&id).wait().expect("read")["count"].as_u64().expect("count");
                    store.import_run(&id, &json!({"count": count + 1})).wait().expect("write");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    assert_eq!(store.read_run(&id).wait().expect("read")["count"], (threads * rounds) as u64, "an update made under the lock was lost");
}

/// Runs saved the way the runner saves them (whole when starting, parking or ending, else only
/// the changed parts) read back, alone and in the listing, exactly as the run: a loop of passes
/// with commands, one pass failing, the retry, and a gate that parks and is answered.
pub fn saved_runs_read_back(store: &dyn Store) {
    use vwf_core::run::{Advance, Outcome, Response, Run, TriggerInfo};
    let design = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each", "type": "loop", "over": "{{trigger.items}}", "concurrency": 2},
            {"id": "work", "type": "command", "run": "true"},
            {"id": "check", "type": "condition", "expr": "out.work.exit_code == 0"},
            {"id": "note", "type": "output", "template": "pass {{loop.index}}"},
            {"id": "ok", "type": "approval", "question": "Ship it?", "options": ["yes", "no"]},
            {"id": "after", "type": "command", "run": "true"},
            {"id": "stop", "type": "output", "template": "no"}
        ],
        "edges": [
            {"from": "start", "to": "each"},
            {"from": "each", "to": "work", "label": "each"},
            {"from": "work", "to": "check"},
            {"from": "check", "to": "note", "label": "true"},
            {"from": "each", "to": "ok", "label": "done"},
            {"from": "ok", "to": "after", "label": "yes"},
            {"from": "ok", "to": "stop", "label": "no"}
        ]
    });
    let design = vwf_core::design::Design::from_value(&design).expect("design");
    let plan = vwf_core::plan::Plan::compile("parts", &design).expect("a valid design");
    let id = store.allocate_run_id().wait().expect("allocate");
    let now = at("2026-03-01T09:00:00Z");
    let mut run =
        Run::start(plan, id.clone(), TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"items": [1, 2, 3, 4, 5]})), now);
    let (mut saves, mut whole) = (0, 0);
    // Saved under the run's lock, as the runner saves; the first save as a runner makes it
    // (`Durability::Soon`): it reads back at once, durable or not yet.
    let lock = store.lock_run(&id).wait().expect("lock");
    let mut save = |run: &mut Run| {
        let changes = run.take_changes();
        whole += usize::from(changes.whole);
        saves += 1;
        let durability = if saves == 1 { Durability::Soon } else { Durability::Now };
        store.save_run(&id, run, &changes, durability).wait().expect("save");
        let doc = serde_json::to_value(&*run).expect("json");
        assert_eq!(store.read_run(&id).wait().expect("read"), doc, "a run reads back as saved (save {saves})");
        let listed = store.list_runs(1).wait().expect("list").remove(0);
        assert_eq!(listed.run.expect("listed run"), doc, "a run lists as saved");
    };
    save(&mut run);
    let mut failed_once = false;
    for _ in 0..200 {
        match run.advance(now) {
            Advance::Settled(_) => save(&mut run),
            Advance::Tasks(tasks) => {
                save(&mut run);
                for task in tasks {
                    let outcome = if task.node == "work#3" && !failed_once {
                        failed_once = true;
                        Outcome::failed("exit 1")
                    } else {
                        let mut extra = serde_json::Map::new();
                        extra.insert("exit_code".into(), json!(0));
                        Outcome::Done { text: "ok".into(), extra, tokens: 0 }
                    };
                    run.complete(&task.node, outcome, now).expect("complete");
                    save(&mut run);
                }
            }
            Advance::Idle if run.status() == vwf_core::run::Status::Failed => {
                run.retry(now).expect("retry");
                save(&mut run);
            }
            Advance::Idle if run.status() == vwf_core::run::Status::AwaitingApproval => {
                run.respond(&PassId::parse("ok").expect("a step"), Response::Answer("yes".into()), now).expect("answer");
                save(&mut run);
            }
            Advance::Idle => break,
        }
    }
    assert_eq!(run.status(), vwf_core::run::Status::Done, "the run finished: {}", run.result());
    assert!(failed_once, "a pass failed and was retried");
    assert!(whole < saves / 2, "most saves were parts ({whole} whole of {saves})");
    store.sync().wait().expect("sync");
    drop(lock);
    assert_eq!(store.read_run(&id).wait().expect("read"), serde_json::to_value(&run).expect("json"), "the same once the lock is let go");
}

/// Design versions: none in a fresh store; added versions list oldest first and read back as
/// written; a number is taken once (`Exists`, the first write kept); removing twice is
/// `NotFound`; versions outlive their design and are listed by design name.
pub fn design_versions(store: &dyn Store) {
    use vwf_core::versions::DesignVersion;
    let d = name("versioned");
    assert!(store.list_versions(&d).wait().expect("list").is_empty(), "a fresh store has no versions");
    assert!(store.versioned_designs().wait().expect("names").is_empty());
    assert_eq!(store.newest_version(&d).wait().expect("newest"), None);
    let version = |n: u64, note: &str| {
        let graph = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual", "note": note}], "edges": []});
        DesignVersion { version: n, hash: vwf_core::versions::content_hash(&graph), saved_at: at("2026-03-01T09:00:00.125Z"), graph }
    };
    store.save_design(&d, &version(1, "é").graph).wait().expect("save");
    for n in [2, 1, 3] {
        store.add_version(&d, &version(n, &format!("v{n} é \u{0}"))).wait().expect("add");
    }
    assert!(matches!(store.add_version(&d, &version(2, "other")).wait(), Err(StoreError::Exists(_))), "a number is taken once");
    let listed = store.list_versions(&d).wait().expect("list");
    assert_eq!(listed, vec![version(1, "v1 é \u{0}"), version(2, "v2 é \u{0}"), version(3, "v3 é \u{0}")], "oldest first, as written");
    assert_eq!(store.newest_version(&d).wait().expect("newest").map(|v| v.version), Some(3));
    store.remove_version(&d, 2).wait().expect("remove");
    assert!(matches!(store.remove_version(&d, 2).wait(), Err(StoreError::NotFound(_))));
    store.delete_design(&d).wait().expect("delete");
    assert_eq!(
        store.list_versions(&d).wait().expect("list").iter().map(|v| v.version).collect::<Vec<_>>(),
        vec![1, 3],
        "kept after the delete"
    );
    store.add_version(&name("another"), &version(1, "x")).wait().expect("add");
    assert_eq!(store.versioned_designs().wait().expect("names"), vec!["another".to_string(), "versioned".to_string()]);
}

/// Runs noted waiting for an event: listed by event with their newest note, each once however
/// often noted, until removed; other events' notes apart; removing what is not there is fine.
pub fn event_waiters(store: &dyn Store) {
    let (a, b) = (store.allocate_run_id().wait().expect("allocate"), store.allocate_run_id().wait().expect("allocate"));
    assert!(store.waiters("pr.merged").wait().expect("list").is_empty());
    for event in ["pr.merged", "..", "ns:x-1"] {
        store.add_waiter(event, &a, "first").wait().expect("note");
    }
    store.add_waiter("pr.merged", &a, "second").wait().expect("note again");
    store.add_waiter("pr.merged", &b, "").wait().expect("note");
    let mut listed = store.waiters("pr.merged").wait().expect("list");
    listed.sort();
    let mut both = vec![(a.clone(), "second".to_string()), (b.clone(), String::new())];
    both.sort();
    assert_eq!(listed, both);
    assert_eq!(store.waiters("..").wait().expect("list"), [(a.clone(), "first".to_string())]);
    assert_eq!(store.waiters("ns:x-1").wait().expect("list"), [(a.clone(), "first".to_string())]);
    store.remove_waiter("pr.merged", &a).wait().expect("remove");
    store.remove_waiter("pr.merged", &a).wait().expect("remove twice");
    store.remove_waiter("never", &a).wait().expect("remove from an event nobody waits for");
    assert_eq!(store.waiters("pr.merged").wait().expect("list"), [(b, String::new())]);
    assert_eq!(store.waiters("..").wait().expect("list"), [(a, "first".to_string())]);
}

/// Idempotency keys: the first claim of a key is kept and answered to every later one while it
/// is fresh, whatever their fingerprint; a stale one is replaced; settling sets the answer of
/// the claim it names only; of threads racing for one key, exactly one records its claim and
/// all are answered it.
pub fn idempotency_keys(store: Arc<dyn Store>) {
    use super::KeyClaim;
    let t0 = at("2026-12-02T10:00:00Z");
    let later = at("2026-12-02T11:00:00Z");
    let first = KeyClaim::new("order 1/ü", "sha256:a".into(), t0, json!("run-a"));
    assert_eq!(store.claim_key(&first, at("2026-12-01T10:00:00Z")).wait().expect("claim"), first);
    let second = KeyClaim::new("order 1/ü", "sha256:b".into(), later, json!("run-b"));
    assert_eq!(store.claim_key(&second, at("2026-12-01T11:00:00Z")).wait().expect("claim again"), first, "a fresh claim is kept");
    let other = KeyClaim::new("order 2", "sha256:a".into(), later, Value::Null);
    assert_eq!(store.claim_key(&other, t0).wait().expect("another key"), other, "keys are apart");
    store.settle_key("order 2", later, Some(&json!({"started": 1}))).wait().expect("settle");
    store.settle_key("order 2", t0, Some(&json!("not this claim"))).wait().expect("settle a claim that is not there");
    store.settle_key("order 2", t0, None).wait().expect("drop a claim that is not there");
    let settled = store.claim_key(&KeyClaim::new("order 2", "sha256:c".into(), later, Value::Null), t0).wait().expect("read");
    assert_eq!(settled.answer, json!({"started": 1}));
    assert_eq!(settled.fingerprint, "sha256:a");
    // A dropped claim frees the key at once.
    store.settle_key("order 2", later, None).wait().expect("drop");
    let again = KeyClaim::new("order 2", "sha256:d".into(), later, Value::Null);
    assert_eq!(store.claim_key(&again, t0).wait().expect("claim a dropped key"), again);
    // Past the window the claim is replaced.
    assert_eq!(store.claim_key(&second, at("2026-12-02T10:30:00Z")).wait().expect("claim a stale key"), second);
    // Racing threads: one claim recorded, every thread answered it.
    let kept: Vec<KeyClaim> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                s.spawn(move || store.claim_key(&KeyClaim::new("race", format!("sha256:{i}"), later, json!(i)), t0).wait().expect("race"))
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("thread")).collect()
    });
    assert!(kept.windows(2).all(|w| w[0] == w[1]), "every racer was answered the same claim: {kept:?}");
}

/// Flow-control documents: an edit sees what the last one kept; `null` deletes; the scopes listed
/// waiting are those whose document says so; of threads racing to claim one concurrency slot in
/// a document, exactly one is granted and the rest queue, each once.
pub fn flow_docs(store: Arc<dyn Store>) {
    use vwf_core::concurrency::{Claim, OnLimit, Slots};
    let scope = "slots\u{1}reply\u{1}chat 7/ü";
    assert_eq!(store.read_doc(scope).wait().expect("read none"), Value::Null);
    store.edit_doc(scope, &mut |d| *d = json!({"n": 1, "waiting": true})).wait().expect("create");
    assert_eq!(store.read_doc(scope).wait().expect("read"), json!({"n": 1, "waiting": true}));
    assert_eq!(store.read_doc("slots\u{1}reply\u{1}chat 8").wait().expect("another scope"), Value::Null);
    assert_eq!(store.waiting_docs().wait().expect("waiting"), [scope]);
    let kept = store.edit_doc(scope, &mut |d| d["n"] = json!(d["n"].as_u64().unwrap_or(0) + 1)).wait().expect("edit");
    assert_eq!(kept["n"], 2);
    store.edit_doc(scope, &mut |d| d["waiting"] = json!(false)).wait().expect("stop waiting");
    assert!(store.waiting_docs().wait().expect("waiting").is_empty());
    store.edit_doc(scope, &mut |d| *d = Value::Null).wait().expect("delete");
    assert_eq!(store.read_doc(scope).wait().expect("read deleted"), Value::Null);
    // Racing claims in one document: one granted, the rest queued once each.
    let race = "slots\u{1}race\u{1}";
    let answers: Vec<Claim> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..12)
            .map(|i| {
                let store = store.clone();
                s.spawn(move || {
                    let mut answer = None;
                    store
                        .edit_doc(race, &mut |d| {
                            let mut slots: Slots = serde_json::from_value(d.clone()).unwrap_or_default();
                            answer = Some(slots.claim(&format!("r{i}"), 1, OnLimit::Queue));
                            *d = serde_json::to_value(&slots).expect("slots");
                        })
                        .wait()
                        .expect("race");
                    answer.expect("edited")
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("thread")).collect()
    });
    assert_eq!(answers.iter().filter(|a| **a == Claim::Granted).count(), 1, "{answers:?}");
    let kept: Slots = serde_json::from_value(store.read_doc(race).wait().expect("read the race")).expect("slots");
    assert_eq!((kept.held.len(), kept.queue.len()), (1, 11), "{kept:?}");
}
