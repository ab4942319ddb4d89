//! The PostgreSQL store on a real server (the throwaway cluster of `scripts/postgres`): the same
//! conformance checks as the file store, the binary end to end on a database, and the errors a
//! user gets at start for a wrong URL, a server that is down and a schema newer than the binary.

use crate::common;
use vwf_store::Wait;

use std::sync::Arc;

use common::Home;
use common::server::eventually;
use serde_json::json;
use vwf::store::{PgSettings, PgStore, conformance};

fn store() -> PgStore {
    PgStore::connect(&PgSettings::new(common::pg::fresh_database())).expect("connect")
}

#[test]
fn the_postgres_store_keeps_every_store_promise() {
    conformance::store_round_trip(&store());
    conformance::saved_runs_read_back(&store());
    conformance::design_stamps(&store());
    conformance::design_versions(&store());
    conformance::run_locks(Arc::new(store()), 4, 25);
    conformance::event_waiters(&store());
    conformance::idempotency_keys(Arc::new(store()));
    conformance::flow_docs(Arc::new(store()));
}

#[test]
fn the_postgres_store_keeps_every_job_store_promise() {
    conformance::jobs_round_trip(&store());
    conformance::trigger_state(&store());
    conformance::jobs_lock_excludes(Arc::new(store()), 4, 25);
}

#[test]
fn instances_starting_together_apply_the_schema_once() {
    let url = common::pg::fresh_database();
    let starting: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgStore::connect(&PgSettings::new(url)).map(|_| ()))
        })
        .collect();
    for s in starting {
        s.join().expect("thread").expect("every instance starts");
    }
    let again = PgStore::connect(&PgSettings::new(url)).expect("reconnect");
    again.migrate().expect("migrating again is a no-op");
}

/// `vwf` with `VWF_DATABASE_URL` keeps everything in the database: a run parked at a gate is
/// answered by a second process, and the home holds no store files.
#[test]
fn the_binary_runs_on_a_database_and_writes_no_store_file() {
    let home = Home::new();
    let url = common::pg::fresh_database();
    let vwf = |args: &[&str]| {
        let out = home.vwf().env("VWF_DATABASE_URL", &url).arg("--json").args(args).output().expect("vwf");
        (common::code(&out), common::parse(&out))
    };
    let graph = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "gate", "type": "approval", "question": "ship {{trigger.what}}?"},
        {"id": "out", "type": "output", "template": "shipped {{trigger.what}}"}
    ], "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "approve"}]});
    let (code, saved) = vwf(&["save", "ship", &graph.to_string()]);
    assert_eq!(code, 0, "{saved}");
    let (code, run) = vwf(&["run", "ship", "--input", r#"{"what": "v2"}"#]);
    assert_eq!(code, 6, "parked at the gate: {run}");
    let id = run["run_id"].as_str().expect("run id").to_string();
    let (code, answered) = vwf(&["approve", &id, "gate", "approve"]);
    assert_eq!(code, 0, "{answered}");
    assert_eq!(answered["status"], "done", "{answered}");
    let (code, shown) = vwf(&["show", &id]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(shown["outputs"]["out"]["text"], "shipped v2", "{shown}");
    let (code, listed) = vwf(&["runs"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed["runs"][0]["run_id"], id.as_str());
    let store_files: Vec<_> = home.files().into_iter().filter(|f| f.starts_with("workflow-")).collect();
    assert!(store_files.is_empty(), "the database holds the store, the home holds no store file: {store_files:?}");
    // The file store of the same home is untouched: without the URL, nothing is there.
    let (code, none) = home.json(&["runs"]);
    assert_eq!(code, 0, "{none}");
    assert_eq!(none["runs"], json!([]));
}

#[test]
fn a_wrong_url_a_server_that_is_down_and_a_newer_schema_are_clear_errors_at_start() {
    let home = Home::new();
    let start = |url: &str| {
        let out = home.vwf().env("VWF_DATABASE_URL", url).args(["--json", "runs"]).output().expect("vwf");
        (common::code(&out), common::parse(&out))
    };
    let (code, body) = start("mysql://nobody@127.0.0.1/x");
    assert_ne!(code, 0);
    assert!(body["error"].as_str().unwrap_or_default().contains("not a PostgreSQL URL"), "{body}");
    // A port nothing listens on: a closed listener's port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let (code, body) = start(&format!("postgres://vwf:secret@127.0.0.1:{port}/x"));
    assert_eq!(code, 7, "{body}");
    let error = body["error"].as_str().unwrap_or_default();
    assert!(error.contains("cannot connect to the database") && !error.contains("secret"), "{body}");
    // A database migrated by a newer vwf.
    let url = common::pg::fresh_database();
    PgStore::connect(&PgSettings::new(url.clone())).expect("connect");
    common::pg::record_a_newer_migration(&url);
    let (code, body) = start(&url);
    assert_eq!(code, 7, "{body}");
    assert!(body["error"].as_str().unwrap_or_default().contains("newer than this vwf knows"), "{body}");
}

#[test]
fn store_settings_in_the_config_are_checked() {
    let home = Home::new();
    std::fs::write(home.path().join("visual-workflow.toml"), "[store]\npool_size = 1\n").expect("config");
    let out = home.vwf().env("VWF_DATABASE_URL", common::pg::admin_url()).args(["--json", "runs"]).output().expect("vwf");
    assert_eq!(common::code(&out), 2);
    assert!(common::parse(&out)["error"].as_str().unwrap_or_default().contains("pool_size"));
    std::fs::write(home.path().join("visual-workflow.toml"), "[store]\nurl = 5\n").expect("config");
    let (code, body) = home.json(&["runs"]);
    assert_ne!(code, 0, "{body}");
}

/// Two `vwf serve` on one database: the first keeps the timers, the second stands by. When the
/// first is killed (-9) mid-step, its run is found interrupted from the second, retried there
/// without running its finished step again, and the second takes over the timers (a heartbeat
/// design saved afterwards fires there once).
#[test]
fn a_second_instance_takes_over_from_one_killed_mid_step() {
    use common::server::{Options, Server};
    let url = common::pg::fresh_database();
    let work = tempfile::tempdir().expect("work dir");
    let (home_a, home_b) = (Home::new(), Home::new());
    let first = Server::start_with(&home_a, Options { env: vec![("VWF_DATABASE_URL", url.clone())], ..Options::default() });
    let b_log = work.path().join("b.log");
    let second =
        Server::start_with(&home_b, Options { env: vec![("VWF_DATABASE_URL", url.clone())], stderr: Some(&b_log), ..Options::default() });
    eventually("the second instance to stand by", 30, || {
        std::fs::read_to_string(&b_log).ok().filter(|log| log.contains("standing by")).map(drop)
    });
    let (count, marker) = (work.path().join("count"), work.path().join("first-try"));
    let script = format!("if [ -e '{m}' ]; then echo again; else touch '{m}'; sleep 30; fi", m = marker.display());
    first.save(
        "slow",
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "count", "type": "command", "run": format!("echo x >> '{}'", count.display())},
            {"id": "slow", "type": "command", "run": script, "timeout_seconds": 120},
            {"id": "out", "type": "output"}
        ], "edges": [{"from": "start", "to": "count"}, {"from": "count", "to": "slow"}, {"from": "slow", "to": "out"}]}),
    );
    let (status, started) = first.post("/designs/slow/run", json!({"wait": false}));
    assert_eq!(status, 200, "{started}");
    let id = started["run_id"].as_str().expect("run id").to_string();
    eventually("the slow step to start", 30, || marker.exists().then_some(()));
    drop(first); // SIGKILL: its connections close and PostgreSQL releases its locks.
    let interrupted = eventually("the run to be found interrupted from the second instance", 30, || {
        let (_, run) = second.get(&format!("/runs/{id}"));
        (run["status"] == "failed").then_some(run)
    });
    assert!(interrupted["error"].as_str().unwrap_or_default().contains("interrupted"), "{interrupted}");
    let (status, retried) = second.post_empty(&format!("/runs/{id}/retry"));
    assert_eq!(status, 200, "{retried}");
    assert_eq!(retried["status"], "done", "{retried}");
    assert_eq!(std::fs::read_to_string(&count).expect("count"), "x\n", "the finished step did not run again");
    // The timers moved to the second instance.
    second.save(
        "beat",
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "heartbeat", "every": "1h"},
            {"id": "out", "type": "output", "template": "beat"}
        ], "edges": [{"from": "start", "to": "out"}]}),
    );
    let beats = eventually("the heartbeat to fire on the second instance", 30, || {
        let (_, listed) = second.get("/runs?design=beat");
        let runs = listed["runs"].as_array().cloned().unwrap_or_default();
        (!runs.is_empty()).then_some(runs)
    });
    assert_eq!(beats.len(), 1, "{beats:?}");
    assert_eq!(beats[0]["trigger"]["mode"], "heartbeat");
}

/// Change notices cross instances: a store following changes hears every write another instance
/// makes to a run, a design or a schedule job (and nothing for a run only reserved).
#[test]
fn writes_on_one_instance_are_noticed_on_another() {
    use vwf::changes::{Change, Changes};
    use vwf::store::{JobStore, Store};
    let url = common::pg::fresh_database();
    let (here, there) =
        (PgStore::connect(&PgSettings::new(url.clone())).expect("here"), PgStore::connect(&PgSettings::new(url)).expect("there"));
    let changes = Changes::default();
    let mut heard = changes.subscribe();
    assert!(here.notify_changes(&changes), "the database store sends notices");
    let next = |heard: &mut tokio::sync::broadcast::Receiver<Change>| {
        eventually("a change notice", 30, || match heard.try_recv() {
            Ok(Change::Resync) | Err(_) => None,
            Ok(change) => Some(change),
        })
    };
    // The listener publishes Resync once it listens; wait for it before writing.
    eventually("the listener to start", 30, || matches!(heard.try_recv(), Ok(Change::Resync)).then_some(()));
    let id = there.allocate_run_id().wait().expect("allocate");
    there.import_run(&id, &json!({"run_id": id.as_str()})).wait().expect("write");
    assert_eq!(next(&mut heard), Change::Run(id.clone()), "a reserved id is no change; its first write is");
    let design = vwf_core::names::DesignName::parse("noticed").expect("name");
    there.save_design(&design, &json!({"nodes": [], "edges": []})).wait().expect("save");
    assert_eq!(next(&mut heard), Change::Design("noticed".into()));
    there.write_job(&conformance::sample_job("noticed")).wait().expect("job");
    assert_eq!(next(&mut heard), Change::Job("noticed".into()));
    there.delete_design(&design).wait().expect("delete");
    assert_eq!(next(&mut heard), Change::Design("noticed".into()));
}

/// Folder triggers are per machine: of two instances on one database, the one with `[daemon]
/// local_triggers = false` (here the one keeping the timers) does not watch, the other does, and a
/// new file fires exactly one run.
#[test]
fn a_folder_trigger_runs_only_where_local_triggers_are_on() {
    use common::server::{Options, Server};
    let url = common::pg::fresh_database();
    let work = tempfile::tempdir().expect("work dir");
    let inbox = work.path().join("inbox");
    std::fs::create_dir(&inbox).expect("inbox");
    let (home_a, home_b) = (Home::new(), Home::new());
    std::fs::write(home_a.path().join("visual-workflow.toml"), "[daemon]\nlocal_triggers = false\n").expect("config");
    let (a_log, b_log) = (work.path().join("a.log"), work.path().join("b.log"));
    let env = || vec![("VWF_DATABASE_URL", url.clone())];
    let first = Server::start_with(&home_a, Options { env: env(), stderr: Some(&a_log), ..Options::default() });
    let _second = Server::start_with(&home_b, Options { env: env(), stderr: Some(&b_log), ..Options::default() });
    first.save(
        "inbox",
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "folder", "path": inbox.display().to_string(), "pattern": "*.txt", "events": ["create"]},
            {"id": "out", "type": "output", "template": "got {{trigger.path}}"}
        ], "edges": [{"from": "start", "to": "out"}]}),
    );
    let log = |path: &std::path::Path| std::fs::read_to_string(path).unwrap_or_default();
    eventually("the second instance to watch the folder", 30, || log(&b_log).contains("watching folder").then_some(()));
    eventually("the first instance to say it does not", 30, || log(&a_log).contains("not run on this instance").then_some(()));
    std::fs::write(inbox.join("a.txt"), "hello").expect("file");
    let runs = eventually("the folder trigger to fire", 30, || {
        let (_, listed) = first.get("/runs?design=inbox");
        listed["runs"].as_array().filter(|runs| runs.iter().any(|r| r["status"] == "done")).cloned()
    });
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["trigger"]["mode"], "folder");
    assert!(!log(&a_log).contains("folder fired"), "the instance with local triggers off fired: {}", log(&a_log));
}

/// More runs driven at once than the pool has connections: a run holds a connection for its lock
/// and needs another to write, so lockers beyond what the pool can serve wait for a slot instead
/// of taking the connections the lock holders need (16 threads, 20 runs each, a pool of 4).
#[test]
fn more_runs_at_once_than_connections_all_get_written() {
    use vwf::store::Store;
    let mut settings = PgSettings::new(common::pg::fresh_database());
    settings.pool_size = 4;
    settings.acquire_timeout = std::time::Duration::from_secs(3);
    let store = Arc::new(PgStore::connect(&settings).expect("connect"));
    let workers: Vec<_> = (0..16)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 0..20 {
                    let id = store.allocate_run_id().wait().expect("allocate");
                    let _lock = store.lock_run(&id).wait().unwrap_or_else(|e| panic!("thread {t}, run {n}: lock: {e}"));
                    for step in 0..3 {
                        let doc = json!({"run_id": id.as_str(), "step": step});
                        store.import_run(&id, &doc).wait().unwrap_or_else(|e| panic!("thread {t}, run {n}: write: {e}"));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("every run locked and written");
    }
    assert_eq!(store.list_runs(1000).wait().expect("list").len(), 16 * 20);
}

/// A run of `start → a → b` (two `true` commands) just started on `store`, with its id and time.
/// The changes of a whole save (a checkpoint).
fn whole() -> vwf_core::run::journal::Changes {
    vwf_core::run::journal::Changes { whole: true, parts: Vec::new(), ended: false }
}

fn two_commands_run(store: &PgStore) -> (vwf_core::names::RunId, vwf_core::run::Run, vwf_core::time::Ts) {
    use vwf::store::Store;
    let design = vwf_core::design::Design::from_value(&json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "a", "type": "command", "argv": ["true"]},
            {"id": "b", "type": "command", "argv": ["true"]}
        ],
        "edges": [{"from": "start", "to": "a"}, {"from": "a", "to": "b"}]
    }))
    .expect("design");
    let plan = vwf_core::plan::Plan::compile("two", &design).expect("valid");
    let id = store.allocate_run_id().wait().expect("allocate");
    let now = vwf_core::time::parse("2026-03-01T09:00:00Z").expect("time");
    let run = vwf_core::run::Run::start(
        plan,
        id.clone(),
        vwf_core::run::TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!(null)),
        now,
    );
    (id, run, now)
}

/// A process killed in the middle of its own save: its lock's session ends while the statement
/// runs (the statement's own connection does not notice before it commits). The save is then one
/// thing or the other, never half of each: a whole save replaces the document and drops the parts
/// it supersedes, a save in parts writes its parts and marks the row, each on the one answer of
/// the fence. (Evaluated once per part, the row was updated and the stale parts stayed, so a
/// reader applied a running head over a finished document.)
#[test]
fn a_lock_lost_in_the_middle_of_a_save_leaves_all_of_it_or_none() {
    use vwf::store::{Durability, Store};
    use vwf_core::run::{Outcome, Run};
    let url = common::pg::fresh_database();
    let store = PgStore::connect(&PgSettings::new(url.clone())).expect("connect");
    let (id, mut run, now) = two_commands_run(&store);
    let done = || Outcome::Done { text: "ok".into(), extra: Default::default(), tokens: 0 };
    let read = |store: &PgStore| store.read_run(&id).wait().expect("read");

    let lock = store.lock_run(&id).wait().expect("lock");
    let changes = run.take_changes();
    store.save_run(&id, &run, &changes, Durability::Now).wait().expect("whole");
    run.advance(now);
    let changes = run.take_changes();
    store.save_run(&id, &run, &changes, Durability::Now).wait().expect("parts: a running");
    run.complete(&vwf_core::names::PassId::parse("a").expect("a step"), done(), now).expect("complete a");
    common::pg::cut_lock_holders_inside_run_saves(&url);
    // A whole save while parts are stored: the document and the parts' removal go together.
    match store.save_run(&id, &run, &whole(), Durability::Now).wait() {
        Ok(()) => assert_eq!(read(&store), serde_json::to_value(&run).expect("json"), "a whole save is whole"),
        Err(e) => assert!(e.to_string().contains("lost the run's lock"), "{e}"),
    }
    common::pg::stop_cutting(&url);
    drop(lock);

    let before = read(&store);
    let lock = store.lock_run(&id).wait().expect("lock again");
    let mut run: Run = serde_json::from_value(before.clone()).expect("run");
    let changes = run.take_changes();
    store.save_run(&id, &run, &changes, Durability::Now).wait().expect("whole");
    run.advance(now);
    let changes = run.take_changes();
    assert!(!changes.whole);
    common::pg::cut_lock_holders_inside_run_saves(&url);
    match store.save_run(&id, &run, &changes, Durability::Now).wait() {
        Ok(()) => assert_eq!(read(&store), serde_json::to_value(&run).expect("json"), "a save in parts is whole"),
        Err(e) => {
            assert!(e.to_string().contains("lost the run's lock"), "{e}");
            assert_eq!(read(&store), before, "a refused save in parts changed nothing");
        }
    }
    common::pg::stop_cutting(&url);
    drop(lock);
}

/// A process whose run lock was lost with its connection (a network cut, a terminated session)
/// while it lives must not overwrite the instance that took the run over: its saves, whole or in
/// parts, change nothing and fail.
#[test]
fn a_save_after_the_runs_lock_was_lost_changes_nothing() {
    use vwf::store::{Durability, Store};
    let url = common::pg::fresh_database();
    let first = PgStore::connect(&PgSettings::new(url.clone())).expect("connect");
    let (id, mut run, now) = two_commands_run(&first);

    let lock = first.lock_run(&id).wait().expect("lock");
    let changes = run.take_changes();
    assert!(changes.whole);
    first.save_run(&id, &run, &changes, Durability::Now).wait().expect("a save under the lock");
    run.advance(now);
    let changes = run.take_changes();
    assert!(!changes.whole, "a step in flight is saved in parts");
    first.save_run(&id, &run, &changes, Durability::Now).wait().expect("parts under the lock");
    let saved = first.read_run(&id).wait().expect("read");
    assert_eq!(saved, serde_json::to_value(&run).expect("json"));

    assert_eq!(common::pg::cut_the_holder_of(&url, common::pg::run_lock_key(id.as_str())), 1, "the lock's session ended");
    let second = PgStore::connect(&PgSettings::new(url.clone())).expect("connect");
    let taken = second.try_lock_run(&id).wait().expect("try").expect("the lock is free once its session is gone");
    second.import_run(&id, &json!({"taken": true})).wait().expect("the new holder saves");

    run.complete(
        &vwf_core::names::PassId::parse("a").expect("a step"),
        vwf_core::run::Outcome::Done { text: "ok".into(), extra: Default::default(), tokens: 0 },
        now,
    )
    .expect("complete");
    let changes = run.take_changes();
    assert!(!changes.whole);
    let error = first.save_run(&id, &run, &changes, Durability::Now).wait().expect_err("parts after the lock was lost").to_string();
    assert!(error.contains("lost the run's lock"), "{error}");
    let error = first.save_run(&id, &run, &whole(), Durability::Now).wait().expect_err("a whole save too").to_string();
    assert!(error.contains("lost the run's lock"), "{error}");
    assert_eq!(second.read_run(&id).wait().expect("read"), json!({"taken": true}), "the new holder's save stands");
    drop(lock);
    drop(taken);
    // Once nobody holds it, a save without the lock (an import) is not fenced.
    first.import_run(&id, &json!({"after": true})).wait().expect("an unlocked save");
}

/// What a run costs the database, counted by the database (`pg_stat_statements`): a run of typed
/// steps two statements (lock its id, writing nothing; insert it ended with its stats and let the
/// lock go) and its share of a notifier's statement (which tells the other instances of saves,
/// several at once); a run with a command step four (the save before the command acts, which is
/// the run's first; the save of its end; keeping its stats and unlocking it). Every run reads back
/// whole and done from another connection, and left its stats record.
#[test]
fn a_run_of_typed_steps_costs_two_statements_and_a_command_step_two_more() {
    use vwf::store::Store;
    const RUNS: i64 = 20;
    let url = common::pg::fresh_database();
    let store = PgStore::connect(&PgSettings::new(url.clone())).expect("connect");
    let drivers = vwf::exec::Drivers::new(vwf::config::Config::default());
    let observer = |_: vwf::runner::Progress<'_>| {};
    let runner = vwf::runner::Runner::new(&store, &drivers, &vwf::clock::SystemClock, &observer);
    let typed = common::server::small();
    let command = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "work", "type": "command", "argv": ["true"]}
    ], "edges": [{"from": "start", "to": "work"}]});
    let reader = PgStore::connect(&PgSettings::new(url.clone())).expect("connect");
    let mut costs = Vec::new();
    for (name, design) in [("typed", typed), ("command", command)] {
        let design = vwf_core::design::Design::from_value(&design).expect("design");
        let plan = vwf_core::plan::Plan::compile(name, &design).expect("plan");
        common::pg::count_statements(&url);
        let mut ids = Vec::new();
        for n in 0..RUNS {
            let trigger = vwf_core::run::TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"n": n}));
            let run = runner.start(plan.clone(), trigger).expect("run");
            assert_eq!(run.status(), vwf_core::run::Status::Done, "{:?}", run.error());
            ids.push(run.run_id().clone());
        }
        // The notifier's statements tell other instances of saves in flight, several at once.
        let (notices, counted): (Vec<_>, Vec<_>) =
            common::pg::statements(&url).into_iter().partition(|(_, query)| query.contains("unnest($1::text[]) AS notice"));
        let total: i64 = counted.iter().map(|(calls, _)| calls).sum();
        assert_eq!(total % RUNS, 0, "{name}: {total} statements for {RUNS} runs: {counted:#?}");
        costs.push((name, total / RUNS, counted, notices.iter().map(|(calls, _)| calls).sum::<i64>()));
        for id in &ids {
            let saved = reader.read_run(id).wait().expect("read back");
            assert_eq!(saved["status"], "done", "{name} run {id} reads back done");
        }
        let listed = reader.list_run_ids(None, 1000).wait().expect("list");
        assert!(ids.iter().all(|id| listed.contains(id)), "{name}: every run is listed");
    }
    let (from, to) =
        (vwf_core::time::parse("2000-01-01T00:00:00Z").expect("time"), vwf_core::time::parse("2100-01-01T00:00:00Z").expect("time"));
    assert_eq!(reader.run_stats(from, to, None).wait().expect("stats").len(), 2 * RUNS as usize, "every run left its stats record");
    assert_eq!(costs[0].1, 2, "a run of typed steps: {:#?}", costs[0].2);
    // A typed run's end is told by the notifier, several at once when they come together: at
    // most one batch a run.
    assert!((1..=RUNS).contains(&costs[0].3), "a typed run's end is told by the notifier: {} statements for {RUNS} runs", costs[0].3);
    assert_eq!(costs[1].1, 4, "a run with a command step: {:#?}", costs[1].2);
    // The save before each command is told of by the notifier; a run's end rides on its unlock
    // unless the notifier is still sending (then the notifier tells of it too): at most two
    // batches a run, never one per statement.
    assert!(
        (1..=2 * RUNS).contains(&costs[1].3),
        "the save before each command is told of by the notifier: {} statements for {RUNS} runs",
        costs[1].3
    );
}

/// A run of a saved design reads the design only when the plan this process compiled of it is
/// not the saved one: the statement that saves a run of typed steps ended also checks which save
/// of the design is current, so the runs after the first cost one statement each (no lock, no
/// design read). A design saved again through another instance is what the next run runs (never
/// the plan kept of the old one); one saved broken is refused, one deleted is not found.
#[test]
fn runs_of_a_saved_design_read_it_only_when_another_instance_saved_it_anew() {
    use vwf::runner::{Plans, Runner};
    use vwf::store::Store;
    use vwf_core::run::{Run, TriggerInfo};
    const RUNS: i64 = 20;
    let url = common::pg::fresh_database();
    let (store, other) = (PgStore::connect(&PgSettings::new(url.clone())).expect("connect"), store_at(&url));
    let drivers = vwf::exec::Drivers::new(vwf::config::Config::default());
    let observer = |_: vwf::runner::Progress<'_>| {};
    let plans = Plans::default();
    let runner = Runner { plans: Some(&plans), ..Runner::new(&store, &drivers, &vwf::clock::SystemClock, &observer) };
    let name = vwf_core::names::DesignName::parse("typed").expect("name");
    let start = |n: i64| {
        let trigger = TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"n": n}));
        runner.start_saved(&name, trigger, None::<fn(&Run)>)
    };
    let text = |run: &Run| run.outputs()["big"]["text"].clone();
    other.save_design(&name, &common::server::small()).wait().expect("save");
    assert_eq!(text(&start(7).expect("the first run")), "big 7");

    common::pg::count_statements(&url);
    let mut runs = Vec::new();
    for n in 5..5 + RUNS {
        let run = start(n).expect("run");
        assert_eq!(run.status(), vwf_core::run::Status::Done, "{:?}", run.error());
        assert_eq!(text(&run), format!("big {n}"));
        runs.push(run);
    }
    let counted: Vec<(i64, String)> =
        common::pg::statements(&url).into_iter().filter(|(_, query)| !query.contains("unnest($1::text[]) AS notice")).collect();
    let total: i64 = counted.iter().map(|(calls, _)| calls).sum();
    assert_eq!(total, RUNS, "one statement a run, no design read: {counted:#?}");
    // Each reads back from another instance as it was answered, listed, with its stats record.
    let listed = other.list_run_ids(None, 1000).wait().expect("list");
    let (from, to) =
        (vwf_core::time::parse("2000-01-01T00:00:00Z").expect("time"), vwf_core::time::parse("2100-01-01T00:00:00Z").expect("time"));
    let stats = other.run_stats(from, to, Some(&name)).wait().expect("stats");
    for run in &runs {
        assert_eq!(other.read_run(run.run_id()).wait().expect("read back"), serde_json::to_value(run).expect("json"));
        assert!(listed.contains(run.run_id()), "run {} is listed", run.run_id());
        assert_eq!(stats.iter().filter(|s| &s.run_id == run.run_id()).count(), 1, "run {} has its stats record", run.run_id());
    }

    // A design with a step that acts goes the usual way, after its steps were tried in memory:
    // the four statements of a run with a command step, nothing more (the attempt wrote nothing).
    let acts = vwf_core::names::DesignName::parse("acts").expect("name");
    let command = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "work", "type": "command", "argv": ["true"]}
    ], "edges": [{"from": "start", "to": "work"}]});
    other.save_design(&acts, &command).wait().expect("save");
    let start_acts = || runner.start_saved(&acts, TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({})), None::<fn(&Run)>);
    assert_eq!(start_acts().expect("the first run").status(), vwf_core::run::Status::Done);
    common::pg::count_statements(&url);
    for _ in 0..RUNS {
        let run = start_acts().expect("run");
        assert_eq!(run.status(), vwf_core::run::Status::Done, "{:?}", run.error());
        assert_eq!(run.outputs()["work"]["exit_code"], 0, "the command ran: {:?}", run.outputs());
    }
    let counted: Vec<(i64, String)> =
        common::pg::statements(&url).into_iter().filter(|(_, query)| !query.contains("unnest($1::text[]) AS notice")).collect();
    let total: i64 = counted.iter().map(|(calls, _)| calls).sum();
    assert_eq!(total, 4 * RUNS, "a run with a command step: {counted:#?}");

    let mut changed = common::server::small();
    changed["nodes"][2]["template"] = json!("large {{trigger.n}}");
    other.save_design(&name, &changed).wait().expect("saved anew on the other instance");
    let run = start(9).expect("a run after the change");
    assert_eq!(text(&run), "large 9", "the saved design runs, not the plan kept of the old one");
    assert_eq!(text(&start(10).expect("and the next")), "large 10");
    assert_eq!(run.version(), Some(2), "the new content is the design's second version");

    other.save_design(&name, &json!({"nodes": [{"id": "start", "type": "nonsense"}], "edges": []})).wait().expect("saved broken");
    assert!(matches!(start(9), Err(vwf::run_error::RunError::Refused(_))), "a design saved broken is refused");
    other.save_design(&name, &changed).wait().expect("mended");
    assert_eq!(text(&start(11).expect("mended")), "large 11");
    other.delete_design(&name).wait().expect("delete");
    let gone = start(12).expect_err("a deleted design");
    assert!(matches!(gone, vwf::run_error::RunError::Store(vwf::store::StoreError::NotFound(_))), "{gone}");
}

/// A run saved once, at its end ([`Store::end_fresh_run`]): written only at its design's current
/// revision and under an id nobody has; otherwise nothing is written and the answer says why. The
/// run saved reads back as it was, with its stats record, and is listed.
#[test]
fn a_fresh_run_is_saved_ended_only_at_its_designs_revision_and_under_a_free_id() {
    use vwf::store::{FreshEnd, Store};
    let url = common::pg::fresh_database();
    let store = store_at(&url);
    let name = vwf_core::names::DesignName::parse("typed").expect("name");
    store.save_design(&name, &common::server::small()).wait().expect("save");
    let revision = store.load_design_with_newest(&name).wait().expect("load").revision.expect("PostgreSQL numbers saves");
    let plan = vwf_core::plan::Plan::compile("typed", &vwf_core::design::Design::from_value(&common::server::small()).expect("design"))
        .expect("plan");
    let now = vwf_core::time::parse("2026-12-05T00:00:00Z").expect("time");
    let ended_as = |id: vwf_core::names::RunId, n: i64| {
        let trigger = vwf_core::run::TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, json!({"n": n}));
        let mut run = vwf_core::run::Run::start(plan.clone(), id, trigger, now);
        while !matches!(run.advance(now), vwf_core::run::Advance::Idle) {}
        assert_eq!(run.status(), vwf_core::run::Status::Done, "{:?}", run.error());
        run
    };
    let ended = |n: i64| ended_as(store.fresh_run_id().expect("PostgreSQL draws fresh ids"), n);

    let run = ended(7);
    assert_eq!(store.end_fresh_run(&run, revision + 1).wait().expect("asked"), FreshEnd::DesignChanged);
    assert_eq!(common::pg::run_rows(&url), 0, "nothing written for another revision");
    assert!(store.reserve_run_id(run.run_id()).wait().expect("reserve"));
    assert_eq!(store.end_fresh_run(&run, revision).wait().expect("asked"), FreshEnd::IdTaken);
    assert!(matches!(store.read_run(run.run_id()).wait(), Err(vwf::store::StoreError::NotFound(_))), "a reserved id is not written over");

    // An id another process drew and holds by its lock alone (before its run's first save).
    let holder = store_at(&url);
    let held = holder.allocate_locked_run().wait().expect("allocate");
    let run = ended_as(held.id().clone(), 8);
    assert_eq!(store.end_fresh_run(&run, revision).wait().expect("asked"), FreshEnd::IdTaken, "an id held by its lock");
    assert_eq!(common::pg::run_rows(&url), 1, "only the reserved id's row");
    drop(held);

    let run = ended(8);
    assert_eq!(store.end_fresh_run(&run, revision).wait().expect("saved"), FreshEnd::Saved);
    assert_eq!(store.read_run(run.run_id()).wait().expect("read"), serde_json::to_value(&run).expect("json"));
    assert_eq!(store.end_fresh_run(&run, revision).wait().expect("asked again"), FreshEnd::IdTaken, "saved once");
    assert_eq!(store.list_run_ids(None, 10).wait().expect("list"), vec![run.run_id().clone()]);
    let (from, to) =
        (vwf_core::time::parse("2000-01-01T00:00:00Z").expect("time"), vwf_core::time::parse("2100-01-01T00:00:00Z").expect("time"));
    let stats = store.run_stats(from, to, Some(&name)).wait().expect("stats");
    assert_eq!(stats.iter().map(|s| s.run_id.clone()).collect::<Vec<_>>(), vec![run.run_id().clone()], "its stats record, once");

    store.delete_design(&name).wait().expect("delete");
    assert_eq!(store.end_fresh_run(&ended(9), revision).wait().expect("asked"), FreshEnd::DesignChanged, "a deleted design");
    assert_eq!(common::pg::run_rows(&url), 2, "the saved run and the reserved id, nothing more");
    assert_eq!(store.run_stats(from, to, None).wait().expect("stats").len(), 1, "one stats record: the saved run's");
}

/// From a kept plan, a run that ends failed, parks at a gate or would pass `[limits] run_bytes`
/// goes the usual way after its steps were tried in memory, as a run compiled afresh does: the
/// failed run starts its failure run, the gated one is saved parked, and the one too large is
/// failed with why.
#[test]
fn from_a_kept_plan_a_run_that_fails_parks_or_is_too_large_goes_the_usual_way() {
    use vwf::runner::{Plans, Runner};
    use vwf::store::Store;
    use vwf_core::run::{Run, Status, TriggerInfo};
    let url = common::pg::fresh_database();
    let (store, other) = (store_at(&url), store_at(&url));
    let mut config = vwf::config::Config::default();
    config.limits.run_bytes = 8 * 1024;
    let drivers = vwf::exec::Drivers::new(config);
    let observer = |_: vwf::runner::Progress<'_>| {};
    let plans = Plans::default();
    let runner = Runner { plans: Some(&plans), ..Runner::new(&store, &drivers, &vwf::clock::SystemClock, &observer) };
    let name = |name: &str| vwf_core::names::DesignName::parse(name).expect("name");
    let start = |design: &str, input: serde_json::Value| {
        let trigger = TriggerInfo::new(vwf_core::trigger::TriggerMode::Manual, input);
        runner.start_saved(&name(design), trigger, None::<fn(&Run)>).expect("run")
    };
    let mut typed = common::server::small();
    typed["on_failure"] = json!("ticket");
    let echo = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "out", "type": "output", "template": "{{trigger.text}} {{trigger.text}}"}
    ], "edges": [{"from": "start", "to": "out"}]});
    let ticket = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "open", "type": "output", "template": "{{trigger.failed_node}}: {{trigger.error}}"}
    ], "edges": [{"from": "start", "to": "open"}]});
    for (design, graph) in [("typed", typed), ("echo", echo), ("ticket", ticket), ("gated", common::server::gated())] {
        other.save_design(&name(design), &graph).wait().expect("save");
    }
    // The first run of each compiles its design and keeps the plan.
    assert_eq!(start("typed", json!({"n": 7})).status(), Status::Done);
    assert_eq!(start("echo", json!({"text": "hi"})).status(), Status::Done);
    assert_eq!(start("gated", json!({})).status(), Status::AwaitingApproval);

    let failed = start("typed", json!({"n": "five"}));
    assert_eq!(failed.status(), Status::Failed, "a condition that cannot compare fails the run");
    let failure = failed.failure_run().expect("the failed run started its failure run");
    let failure = other.read_run(failure).wait().expect("the failure run is saved");
    assert_eq!(failure["status"], "done", "{failure}");
    assert!(
        failure["outputs"]["open"]["text"].as_str().is_some_and(|t| t.starts_with("check: condition") && t.contains("cannot compare")),
        "{failure}"
    );
    assert_eq!(other.read_run(failed.run_id()).wait().expect("read back")["failure_run"], json!(failed.failure_run()));

    let parked = start("gated", json!({}));
    assert_eq!(parked.status(), Status::AwaitingApproval);
    assert_eq!(other.read_run(parked.run_id()).wait().expect("read back")["status"], "awaiting_approval", "saved parked");

    let large = start("echo", json!({"text": "x".repeat(3000)}));
    assert_eq!(large.status(), Status::Failed, "a record over run_bytes");
    assert!(large.error().is_some_and(|e| e.text().contains("run_bytes")), "{:?}", large.error());
    assert_eq!(other.read_run(large.run_id()).wait().expect("read back")["status"], "failed", "saved failed with why");
}

fn store_at(url: &str) -> PgStore {
    PgStore::connect(&PgSettings::new(url.to_string())).expect("connect")
}

/// A fresh run's id is held by its lock alone until the run's first save (nothing is written
/// before): another instance trying its lock is told someone holds it, and one waiting for it (an
/// event for the run, say) gets it once the maker saved the run and let it go, and finds the run.
/// An id nobody holds or saved is not found, and no row is left for it.
#[test]
fn a_fresh_runs_lock_is_waited_for_until_its_maker_saved_it() {
    use vwf::store::{Durability, Store};
    let url = common::pg::fresh_database();
    let (maker, other) = (store_at(&url), store_at(&url));
    let lock = maker.allocate_locked_run().wait().expect("allocate");
    let id = lock.id().clone();
    assert_eq!(common::pg::run_rows(&url), 0, "a fresh id writes no row");
    assert!(matches!(other.try_lock_run(&id).wait(), Ok(None)), "held by its maker");
    let waiter = std::thread::spawn({
        let (other, id) = (other.clone(), id.clone());
        move || {
            let lock = other.lock_run(&id).wait()?;
            let found = other.read_run(&id).wait();
            drop(lock);
            found
        }
    });
    eventually("the other instance waits for the run's lock", 10, || common::pg::someone_waits_for_a_lock(&url).then_some(()));
    let (_, template, now) = two_commands_run(&maker);
    let mut run = vwf_core::run::Run::start(template.plan().clone(), id.clone(), template.trigger().clone(), now);
    let changes = run.take_changes();
    maker.save_run(&id, &run, &changes, Durability::Now).wait().expect("the first save inserts the run");
    drop(lock);
    let found = waiter.join().expect("thread").expect("the lock and the run, once its maker let it go");
    assert_eq!(found, serde_json::to_value(&run).expect("json"));

    let unknown = vwf_core::names::RunId::parse("0123456789ab").expect("id");
    assert!(matches!(other.lock_run(&unknown).wait(), Err(vwf::store::StoreError::NotFound(_))));
    assert!(matches!(other.try_lock_run(&unknown).wait(), Err(vwf::store::StoreError::NotFound(_))));
    assert!(!common::pg::stored_run_ids(&url).contains(unknown.as_str()), "no row for an id nobody saved");
}

/// A tick of the daemon lists the flow documents that wait for something once, for the
/// concurrency queues and the held arrivals alike (it listed them up to five times), whether an
/// arrival is held or not; a held burst still starts when it comes due, and only then.
#[test]
fn a_daemon_tick_lists_the_waiting_flow_documents_once() {
    use chrono::{DateTime, TimeDelta};
    use vwf::app::App;
    use vwf::clock::FixedClock;
    let url = common::pg::fresh_database();
    let home = Home::new();
    common::server::write_config(&home, &format!("[store]\nurl = \"{url}\"\n"));
    let t0 = DateTime::from_timestamp(1_800_000_000, 0).expect("a time");
    let app = App { clock: Box::new(FixedClock::new(t0)), ..App::open(home.path().to_path_buf()).expect("open the app") };
    let graph = json!({"nodes": [
        {"id": "on", "type": "trigger", "mode": "event", "sources": ["tick"], "debounce": {"period": "1m"}},
        {"id": "out", "type": "output", "template": "{{trigger.payload.n}}"}
    ], "edges": [{"from": "on", "to": "out"}]});
    let saved = vwf::tools::call(&app, "workflow_design_save", &json!({"name": "listen", "graph": graph}));
    assert_eq!(saved.body["ok"], true, "{}", saved.body);
    let held = app.runner(&vwf::app::quiet, false).emit("tick", json!({"n": 1}), &vwf::runner::EmitSource::default()).expect("emit");
    assert!(held.runs.is_empty(), "the burst is held for its quiet period");
    let listings = || -> i64 {
        common::pg::statements(&url).iter().filter(|(_, query)| query.contains("FROM vwf_flow WHERE waiting")).map(|(calls, _)| calls).sum()
    };
    let mut daemon = vwf::daemon::Daemon::new(&app);
    common::pg::count_statements(&url);
    let early = daemon.tick(t0 + TimeDelta::seconds(30));
    assert!(early.fired.is_empty(), "the burst is not quiet yet: {early:?}");
    assert_eq!(listings(), 1, "a tick with an arrival held");
    daemon.tick(t0 + TimeDelta::seconds(90));
    let runs = app.runner(&vwf::app::quiet, false).list(10).expect("list");
    assert_eq!(runs.len(), 1, "the burst started once it was quiet");
    assert_eq!(listings(), 2, "a tick that starts the held burst");
    let waiting = vwf::store::Store::waiting_docs(app.store.as_ref()).wait().expect("list the waiting documents");
    assert!(!vwf::runner::Runner::holds_arrivals(&waiting), "nothing is held once the burst started: {waiting:?}");
    common::pg::count_statements(&url);
    daemon.tick(t0 + TimeDelta::seconds(150));
    assert_eq!(listings(), 1, "a tick with nothing held");
    assert_eq!(app.runner(&vwf::app::quiet, false).list(10).expect("list").len(), 1, "nothing started twice");
}
