//! Moving a home between stores with the real binary: `vwf store import --from DIR` (a file store
//! into the configured store) and `vwf store export --to DIR` (the configured store into a new file
//! store), files ↔ PostgreSQL. Every design, run document, schedule job and heartbeat state reads
//! back equal as JSON (key order included), runs listed in the same order; refused copies write
//! nothing; `vwf store migrate` says what it applied.

use crate::common;
use crate::on_both_backends;
use vwf_store::Wait;

use std::io::{BufRead, BufReader};
use std::path::Path;

use common::{Backend, Home};
use proptest::prelude::*;
use serde_json::{Value, json};
use vwf::store::{FileStore, JobStore, PgSettings, PgStore, Store};
use vwf_core::names::{DesignName, RunId};

/// Every record a store holds as JSON values, in listing order: designs by name, run documents
/// newest first (every page of the listing), schedule jobs, heartbeat fires.
fn contents(store: &dyn Store, jobs: &dyn JobStore) -> Value {
    let designs: Vec<Value> = store
        .list_designs()
        .wait()
        .expect("designs")
        .into_iter()
        .map(|n| json!([n.clone(), store.load_design(&DesignName::parse(&n).expect("name")).wait().expect("design")]))
        .collect();
    let (mut runs, mut cursor) = (Vec::new(), None::<RunId>);
    loop {
        let page = store.list_run_ids(cursor.as_ref(), 400).wait().expect("run ids");
        let Some(last) = page.last().cloned() else { break };
        runs.extend(page.iter().map(|id| json!([id.as_str(), store.read_run(id).wait().expect("readable run")])));
        cursor = Some(last);
    }
    let schedules: Vec<Value> =
        jobs.list_jobs().wait().expect("jobs").into_iter().map(|j| serde_json::to_value(j.expect("job")).expect("json")).collect();
    let fires: Vec<Value> =
        jobs.list_fires().wait().expect("fires").into_iter().map(|(d, at)| json!([d.as_str(), at.to_rfc3339()])).collect();
    let versions: Vec<Value> = store
        .versioned_designs()
        .wait()
        .expect("versioned designs")
        .into_iter()
        .map(|n| json!([n.clone(), store.list_versions(&DesignName::parse(&n).expect("name")).wait().expect("versions")]))
        .collect();
    json!({"designs": designs, "versions": versions, "runs": runs, "schedules": schedules, "fires": fires})
}

/// [`contents`] of a home's store (its files, or its database).
fn home_contents(home: &Home) -> Value {
    match &home.database {
        Some(url) => {
            let pg = PgStore::connect(&PgSettings::new(url.as_str())).expect("open the database store");
            contents(&pg, &pg)
        }
        None => dir_contents(home.path()),
    }
}

/// [`contents`] of the file store at `dir`.
fn dir_contents(dir: &Path) -> Value {
    let files = FileStore::new(dir.to_path_buf());
    contents(&files, &files)
}

/// Equal as values and as text, so key order counts too.
fn assert_same(found: &Value, expected: &Value, what: &str) {
    assert_eq!(found, expected, "{what}");
    assert_eq!(found.to_string(), expected.to_string(), "{what}: same values, another key order");
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn counts(report: &Value) -> [u64; 4] {
    ["designs", "runs", "schedules", "trigger_states"].map(|k| report[k].as_u64().unwrap_or_else(|| panic!("no count {k}: {report}")))
}

fn run_id(run: &Value) -> String {
    run["run_id"].as_str().unwrap_or_else(|| panic!("no run id: {run}")).to_string()
}

/// A home of every kind of record, on the file store; answers the id of a run parked at a gate.
fn every_kind_of_record(home: &Home, work: &Path) -> String {
    let gate = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "gate", "type": "approval", "question": "ok {{trigger.n}}?", "options": ["approve", "reject"], "deadline_minutes": 60},
        {"id": "out", "type": "output", "template": "ünï {{trigger.n}} ✓"}
    ], "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "out", "label": "approve"}]});
    home.save("gate", &common::failing());
    home.save("gate", &gate);
    home.save("broken", &common::failing());
    home.save(
        "each",
        &json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each", "type": "loop", "over": "{{trigger.rows}}"},
            {"id": "echo", "type": "command", "run": "echo {{item}}"},
            {"id": "out", "type": "output", "template": "{{nodes.each.count}} rows"}
        ], "edges": [
            {"from": "start", "to": "each"},
            {"from": "each", "to": "echo", "label": "each"},
            {"from": "each", "to": "out", "label": "done"}
        ]}),
    );
    home.save(
        "daily",
        &json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "schedule", "schedule": {"preset": "daily", "time": "09:00"}},
            {"id": "out", "type": "output", "template": "morning"}
        ], "edges": [{"from": "start", "to": "out"}]}),
    );
    home.save(
        "beat",
        &json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "heartbeat", "every": "1h"},
            {"id": "out", "type": "output", "template": "beat"}
        ], "edges": [{"from": "start", "to": "out"}]}),
    );
    let pid_file = work.join("slow.pid");
    home.save(
        "slow",
        &json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "slow", "type": "command", "run": format!("echo $$ > '{}'; exec sleep 60", pid_file.display())},
            {"id": "out", "type": "output", "template": "never"}
        ], "edges": [{"from": "start", "to": "slow"}, {"from": "slow", "to": "out"}]}),
    );

    let mut parked = Vec::new();
    for n in 0..4 {
        let (code, run) = home.json(&["run", "gate", "--input", &json!({"n": n, "deep": [[{"x": null, "f": 1.5}]]}).to_string()]);
        assert_eq!(code, 6, "{run}");
        parked.push(run_id(&run));
    }
    let (code, done) = home.json(&["approve", &parked[0], "gate", "approve"]);
    assert_eq!((code, &done["status"]), (0, &json!("done")), "{done}");
    let (code, rejected) = home.json(&["approve", &parked[1], "gate", "reject"]);
    assert_eq!(code, 0, "{rejected}");
    let (code, failed) = home.json(&["run", "broken"]);
    assert_eq!(code, 1, "{failed}");
    let (code, looped) = home.json(&["run", "each", "--input", r#"{"rows": [1, 2, 3]}"#]);
    assert_eq!((code, &looped["status"]), (0, &json!("done")), "{looped}");
    let (code, job) = home.json(&["schedule", "set", "daily", "--preset", "daily", "--time", "09:00", "--input", r#"{"n": 9}"#]);
    assert_eq!(code, 0, "{job}");
    let (code, job) = home.json(&["schedule", "set", "gate", "--preset", "weekly", "--time", "07:30", "--dow", "1", "--paused"]);
    assert_eq!(code, 0, "{job}");
    let (code, scheduled) = home.json(&["schedule", "run", "wf-daily"]);
    assert_eq!(code, 0, "{scheduled}");

    // The daemon's first tick fires the heartbeat (and records its fire) before it prints.
    let mut daemon = home.process(&["--json", "daemon"]).stdout(std::process::Stdio::piped()).spawn().expect("start the daemon");
    let mut line = String::new();
    BufReader::new(daemon.stdout.take().expect("stdout")).read_line(&mut line).expect("the daemon's first line");
    daemon.kill().expect("stop the daemon");
    daemon.wait().expect("reap the daemon");
    assert!(line.contains("heartbeat"), "{line}");

    // A run killed in the middle of its step: its document says `running`, nobody holds its lock.
    let mut killed = home.process(&["run", "slow"]).stdout(std::process::Stdio::null()).spawn().expect("start vwf run");
    let store = home.store();
    common::server::eventually("the slow step to start and be recorded", 30, || {
        let started = std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'));
        let recorded = store.list_runs(1).wait().ok()?.into_iter().next()?.run.ok()?;
        let in_flight = recorded["design"] == "slow" && recorded["steps"].as_array()?.iter().any(|s| s["node"] == "slow");
        (started && in_flight).then_some(())
    });
    killed.kill().expect("kill vwf");
    killed.wait().expect("reap vwf");
    let sleeper: i32 = std::fs::read_to_string(&pid_file).expect("pid").trim().parse().expect("a pid");
    // SAFETY: kill(2) on the step's own process, started by this test.
    unsafe { libc::kill(sleeper, libc::SIGKILL) };
    parked.swap_remove(2)
}

/// files → PostgreSQL (`import --from`) → files (`export --to`): every record reads back equal, in
/// the same order; on PostgreSQL the parked run is answered and finishes, and the run killed
/// mid-step is found interrupted, as on files.
#[test]
fn a_home_moved_to_postgres_and_back_keeps_every_record() {
    let (files, work) = (Home::new(), tempfile::tempdir().expect("work dir"));
    let parked = every_kind_of_record(&files, work.path());
    let source = home_contents(&files);
    let runs = source["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 9, "{source:#}");
    let statuses: Vec<&str> = runs.iter().filter_map(|r| r[1]["status"].as_str()).collect();
    for status in ["done", "failed", "awaiting_approval", "running"] {
        assert!(statuses.contains(&status), "no {status} run: {statuses:?}");
    }

    let pg = Home::with_backend(Backend::Postgres);
    let (code, report) = pg.json(&["store", "import", "--from", text(files.path())]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(counts(&report), [6, 9, 2, 1], "{report}");
    assert_eq!(report["unreadable"], json!([]), "{report}");
    assert_same(&home_contents(&pg), &source, "PostgreSQL holds what the files held");

    let back = work.path().join("back");
    let (code, report) = pg.json(&["store", "export", "--to", text(&back)]);
    assert_eq!((code, counts(&report)), (0, [6, 9, 2, 1]), "{report}");
    assert_same(&dir_contents(&back), &source, "the round trip changes nothing");

    let (code, answered) = pg.json(&["approve", &parked, "gate", "approve"]);
    assert_eq!((code, &answered["status"]), (0, &json!("done")), "{answered}");
    assert!(answered["outputs"]["out"].to_string().contains("ünï"), "{answered}");
    let interrupted = runs.iter().find(|r| r[1]["status"] == "running").expect("the killed run");
    let (code, shown) = pg.json(&["show", interrupted[0].as_str().expect("id")]);
    assert_eq!((code, &shown["error"]), (1, &json!("interrupted during step slow")), "{shown}");
}

/// `vwf --home DIR --json ARGS` on the file store at DIR.
fn vwf_at(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut c = assert_cmd::Command::cargo_bin("vwf").expect("vwf binary");
    c.arg("--home").arg(dir).arg("--json").args(args);
    c.env_remove("VWF_HOME").env_remove("HERMES_HOME").env_remove("VWF_NOW").env_remove("VWF_DATABASE_URL");
    let out = c.output().expect("run vwf");
    (common::code(&out), common::parse(&out))
}

/// Every entry under `dir` (relative paths, sorted): what a refused command must leave as it was.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(root).unwrap_or(&path).display().to_string());
            if path.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Refused copies write nothing, whichever backend is configured: an import into a store that
/// holds anything (a design, a run, a schedule job, heartbeat state alone) is a conflict (exit 4); an
/// import from a directory that is missing (3), a file or no store (2) is refused before any write;
/// an export into a directory that holds anything, or onto a file, is a conflict and leaves it as
/// it was, with no staging directory beside it.
fn refused_copies_write_nothing(backend: Backend) {
    let work = tempfile::tempdir().expect("work dir");
    let source = work.path().join("source");
    std::fs::create_dir(&source).expect("source");
    let (code, made) = vwf_at(&source, &["new", "copied"]);
    assert_eq!(code, 0, "{made}");

    // An empty target: every bad source is refused and the target stays empty.
    let empty = Home::with_backend(backend);
    let stray = work.path().join("stray");
    std::fs::create_dir(&stray).expect("stray dir");
    std::fs::write(stray.join("notes.txt"), "not a store").expect("stray file");
    let file = work.path().join("a-file");
    std::fs::write(&file, "x").expect("file");
    let missing = work.path().join("missing");
    for (from, code) in [(&missing, 3), (&stray, 2), (&file, 2), (&source.join("workflow-designs"), 2)] {
        let (got, body) = empty.json(&["store", "import", "--from", text(from)]);
        assert_eq!(got, code, "import --from {}: {body}", from.display());
        assert_eq!(body["ok"], false, "{body}");
        assert!(empty.no_run_stored() && empty.files().is_empty(), "import --from {} wrote something", from.display());
        assert_same(
            &home_contents(&empty),
            &json!({"designs": [], "versions": [], "runs": [], "schedules": [], "fires": []}),
            "still empty",
        );
    }
    assert!(!missing.exists(), "a refused import created its source");

    // A target holding one kind of record: the import is refused, whatever the kind.
    let holders: [(&str, Hold); 4] = [
        ("designs", |h: &Home| h.save("mine", &common::failing())),
        ("runs", |h: &Home| {
            let store = h.store();
            store.import_run(&store.allocate_run_id().wait().expect("id"), &json!({"a": "run"})).wait().expect("write a run");
        }),
        ("schedule jobs", |h: &Home| {
            h.save("mine", &common::failing());
            let (code, job) = h.json(&["schedule", "set", "mine", "--preset", "hourly", "--minute", "5"]);
            assert_eq!(code, 0, "{job}");
            let (code, deleted) = h.json(&["delete", "mine"]);
            assert_eq!(code, 0, "{deleted}");
        }),
        ("heartbeat state", |h: &Home| record_fire(h, "beat")),
    ];
    for (kind, hold) in holders {
        let target = Home::with_backend(backend);
        hold(&target);
        let before = home_contents(&target);
        let files_before = common::snapshot(&target);
        let (code, body) = target.json(&["store", "import", "--from", text(&source)]);
        assert_eq!(code, 4, "{kind}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        // Deleting a design keeps its versions, so the schedule job's holder holds those too.
        assert!(
            error.contains("holds ") && error.contains(kind) && error.ends_with("already; a copy goes only into an empty store"),
            "{kind}: {body}"
        );
        assert_same(&home_contents(&target), &before, "a refused import wrote nothing");
        assert_eq!(common::snapshot(&target), files_before, "{kind}: a refused import wrote a file");

        // An export of the same store onto a directory with something in it, or onto a file.
        let full = work.path().join(format!("full-{}", kind.replace(' ', "-")));
        std::fs::create_dir_all(full.join("workflow-designs")).expect("full dir");
        std::fs::write(full.join("workflow-designs/keep.json"), "{}").expect("kept file");
        for onto in [&full, &file, &full.join("workflow-designs")] {
            let around = tree(work.path());
            let (code, body) = target.json(&["store", "export", "--to", text(onto)]);
            assert_eq!(code, 4, "export --to {}: {body}", onto.display());
            assert_eq!(tree(work.path()), around, "export --to {} wrote something", onto.display());
        }
        assert_eq!(std::fs::read_to_string(&file).expect("file"), "x");
    }
}

/// Puts one kind of record into a home's store.
type Hold = fn(&Home);

/// Records a heartbeat fire in a home's store (the state a daemon keeps for `design`).
fn record_fire(home: &Home, design: &str) {
    let design = DesignName::parse(design).expect("name");
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-30T08:00:00Z").expect("time").to_utc();
    match &home.database {
        Some(url) => PgStore::connect(&PgSettings::new(url.as_str())).expect("database").record_fire(&design, at).wait(),
        None => FileStore::new(home.path().to_path_buf()).record_fire(&design, at).wait(),
    }
    .expect("record a fire");
}

/// An empty store exports to a directory that is a store (its three directories, nothing in them),
/// and that imports again into an empty store; both report nothing copied.
fn an_empty_store_exports_and_imports_again(backend: Backend) {
    let (home, work) = (Home::with_backend(backend), tempfile::tempdir().expect("work dir"));
    let out = work.path().join("nested/empty");
    let (code, report) = home.json(&["store", "export", "--to", text(&out)]);
    assert_eq!((code, counts(&report)), (0, [0, 0, 0, 0]), "{report}");
    assert_eq!(tree(&out), ["workflow-designs", "workflow-runs", "workflow-schedules"]);
    assert_eq!(tree(work.path()).len(), 5, "nothing beside the export: {:?}", tree(work.path()));
    let again = Home::with_backend(backend);
    let (code, report) = again.json(&["store", "import", "--from", text(&out)]);
    assert_eq!((code, counts(&report)), (0, [0, 0, 0, 0]), "{report}");
    // An existing empty directory is a fine place to export to.
    let existing = work.path().join("existing");
    std::fs::create_dir(&existing).expect("dir");
    let (code, report) = again.json(&["store", "export", "--to", text(&existing)]);
    assert_eq!(code, 0, "{report}");
}

/// Writes `count` run documents for `design` straight into a store (the way many runs pile up),
/// each a real run's document with its own id, input and times; answers them in order of writing.
fn write_runs(store: &dyn Store, design: &str, count: usize, template: &Value) -> Vec<String> {
    (0..count)
        .map(|n| {
            let id = store.allocate_run_id().wait().expect("run id");
            let mut run = template.clone();
            run["run_id"] = json!(id.as_str());
            run["design"] = json!(design);
            run["trigger"]["input"] = json!({"n": n, "of": design});
            store.import_run(&id, &run).wait().expect("write a run");
            id.to_string()
        })
        .collect()
}

/// More runs than a page of the source's listing (1,000): files → files (`export --to`, then
/// `import --from` into another home) and files → PostgreSQL keep every run, newest first in the
/// order they were written, and `vwf runs` pages the copy as it pages the original.
#[test]
fn more_runs_than_a_listing_page_keep_their_order() {
    let (home, work) = (Home::new(), tempfile::tempdir().expect("work dir"));
    home.save("many", &common::failing());
    let (code, template) = home.json(&["run", "many"]);
    assert_eq!(code, 1, "{template}");
    let store = home.store();
    let mut written = vec![run_id(&template)];
    written.extend(write_runs(store.as_ref(), "many", 1_049, &common::run_file(&home, &written[0])));
    let source = home_contents(&home);
    let listed: Vec<&str> = source["runs"].as_array().expect("runs").iter().filter_map(|r| r[0].as_str()).collect();
    let newest_first: Vec<&str> = written.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first, "the source lists its runs newest first");

    let exported = work.path().join("exported");
    let (code, report) = home.json(&["store", "export", "--to", text(&exported)]);
    assert_eq!((code, counts(&report)), (0, [1, 1_050, 0, 0]), "{report}");
    assert_same(&dir_contents(&exported), &source, "the export");
    let imported = Home::new();
    let (code, report) = imported.json(&["store", "import", "--from", text(&exported)]);
    assert_eq!((code, counts(&report)), (0, [1, 1_050, 0, 0]), "{report}");
    assert_same(&home_contents(&imported), &source, "the import of the export");
    let pg = Home::with_backend(Backend::Postgres);
    let (code, report) = pg.json(&["store", "import", "--from", text(home.path())]);
    assert_eq!((code, counts(&report)), (0, [1, 1_050, 0, 0]), "{report}");
    assert_same(&home_contents(&pg), &source, "the import into PostgreSQL");

    // `vwf runs` pages the copies as the original: the second page starts at the same run.
    let page = |h: &Home| {
        let (code, first) = h.json(&["runs", "--limit", "1000"]);
        assert_eq!(code, 0, "{first}");
        let next = first["next"].as_str().expect("a second page").to_string();
        let (code, second) = h.json(&["runs", "--limit", "1000", "--before", &next]);
        assert_eq!(code, 0, "{second}");
        let ids = |p: &Value| p["runs"].as_array().expect("runs").iter().map(|r| r["run_id"].clone()).collect::<Vec<_>>();
        (ids(&first), ids(&second))
    };
    let original = page(&home);
    assert_eq!((original.0.len(), original.1.len()), (1_000, 50));
    assert_eq!(page(&imported), original);
    assert_eq!(page(&pg), original);
}

/// A JSON value of every kind: strings of any characters (controls, NUL, quotes, backslashes,
/// astral), integers at the ends of their ranges, floats, nesting.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        "[\\u{0}-\\u{1f}\"\\\\/ü✓😀]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((any::<String>(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Design names of every shape the contract allows (up to 64 characters, '.', '_', '-').
fn design_name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    /// Generated homes (design names, design and run documents of any JSON, runs per design
    /// from none to several) go files → PostgreSQL → files unchanged, in order.
    #[test]
    fn generated_homes_go_to_postgres_and_back_unchanged(
        designs in prop::collection::btree_map(design_name(), (any_json(), prop::collection::vec(any_json(), 0..4)), 1..5),
    ) {
        let (home, work) = (Home::new(), tempfile::tempdir().expect("work dir"));
        let store = home.store();
        for (name, (graph, runs)) in &designs {
            store.save_design(&DesignName::parse(name).expect("name"), &json!({"nodes": [], "doc": graph})).wait().expect("save");
            for run in runs {
                let id = store.allocate_run_id().wait().expect("id");
                store.import_run(&id, &json!({"run_id": id.as_str(), "design": name, "doc": run})).wait().expect("write");
            }
        }
        let source = home_contents(&home);
        let pg = Home::with_backend(Backend::Postgres);
        let (code, report) = pg.json(&["store", "import", "--from", text(home.path())]);
        prop_assert_eq!(code, 0, "{}", report);
        assert_same(&home_contents(&pg), &source, "PostgreSQL");
        let back = work.path().join("back");
        let (code, report) = pg.json(&["store", "export", "--to", text(&back)]);
        prop_assert_eq!(code, 0, "{}", report);
        assert_same(&dir_contents(&back), &source, "back in files");
    }
}

/// `vwf store migrate` applies the embedded schema to the configured database and says which
/// migrations ran (all of them on an empty database, none the second time); on the file store it
/// says there is nothing to migrate; a database migrated by a newer vwf is a clear error (exit 7)
/// and is left as it was.
#[test]
fn store_migrate_says_what_it_applied_and_refuses_a_newer_schema() {
    let home = Home::with_backend(Backend::Postgres);
    let url = home.database.clone().expect("a database");
    let (code, first) = home.json(&["store", "migrate"]);
    assert_eq!(code, 0, "{first}");
    let versions: Vec<i64> = first["applied"].as_array().expect("applied").iter().filter_map(|m| m["version"].as_i64()).collect();
    assert_eq!(versions, (1..=versions.len() as i64).collect::<Vec<_>>(), "{first}");
    assert!(versions.len() >= 2 && first["version"] == json!(versions.len()), "{first}");
    assert!(first["applied"][0]["name"].is_string(), "{first}");
    assert!(!first.to_string().contains("secret"), "{first}");
    let (code, again) = home.json(&["store", "migrate"]);
    assert_eq!((code, &again["applied"], &again["version"]), (0, &json!([]), &first["version"]), "{again}");
    let out = home.vwf().args(["store", "migrate"]).output().expect("vwf");
    assert!(String::from_utf8_lossy(&out.stdout).contains("up to date"), "{out:?}");

    let files = Home::new();
    let (code, body) = files.json(&["store", "migrate"]);
    assert_eq!((code, &body["ok"], &body["applied"]), (0, &json!(true), &json!([])), "{body}");
    assert!(body["message"].as_str().unwrap_or_default().contains("nothing to migrate"), "{body}");
    assert!(files.files().is_empty(), "migrating the file store wrote {:?}", files.files());

    // A database a newer vwf migrated.
    common::pg::record_a_newer_migration(&url);
    let before = common::pg::schema_versions(&url);
    let (code, body) = home.json(&["store", "migrate"]);
    assert_eq!(code, 7, "{body}");
    assert!(body["error"].as_str().unwrap_or_default().contains("newer than this vwf knows"), "{body}");
    assert_eq!(common::pg::schema_versions(&url), before, "a refused migration changed the schema table");
}

/// Records the source cannot read (a run file, a design file, a schedule job file that are not
/// JSON) are named in the report and not copied; everything else is, and the exit code is 1.
fn unreadable_records_are_named_and_the_rest_is_copied(backend: Backend) {
    let source = Home::new();
    source.save("good", &common::failing());
    source.save("bad", &common::failing());
    let (code, run) = source.json(&["run", "good"]);
    assert_eq!(code, 1, "{run}");
    let (code, damaged) = source.json(&["run", "good"]);
    assert_eq!(code, 1, "{damaged}");
    let (code, job) = source.json(&["schedule", "set", "good", "--preset", "hourly", "--minute", "5"]);
    assert_eq!(code, 0, "{job}");
    let (code, job) = source.json(&["schedule", "set", "bad", "--preset", "hourly", "--minute", "7"]);
    assert_eq!(code, 0, "{job}");
    let damaged = run_id(&damaged);
    source.write_stored_run(&damaged, b"{\"half\": ");
    std::fs::write(source.path().join("workflow-designs/bad.json"), "not json").expect("damage a design");
    std::fs::write(source.path().join("workflow-schedules/wf-bad.json"), "[").expect("damage a job");

    let target = Home::with_backend(backend);
    let (code, report) = target.json(&["store", "import", "--from", text(source.path())]);
    assert_eq!((code, &report["ok"]), (1, &json!(false)), "{report}");
    assert_eq!(counts(&report), [1, 1, 1, 0], "{report}");
    let named: Vec<(&str, &str)> = report["unreadable"]
        .as_array()
        .expect("unreadable")
        .iter()
        .filter_map(|u| Some((u["kind"].as_str()?, u["name"].as_str()?)))
        .collect();
    assert_eq!(named, [("design", "bad"), ("run", damaged.as_str()), ("schedule job", "wf-bad")], "{report}");
    assert!(report["error"].as_str().unwrap_or_default().contains("3 records"), "{report}");
    let copied = home_contents(&target);
    assert_eq!(copied["runs"][0][0], json!(run_id(&run)), "{copied}");
}

on_both_backends!(
    refused_copies_write_nothing,
    an_empty_store_exports_and_imports_again,
    unreadable_records_are_named_and_the_rest_is_copied
);
