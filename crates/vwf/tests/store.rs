//! The store as a careless user or a failing machine leaves it, through the real `vwf` binary:
//! run files that hold JSON that is not a run, a damaged run index, a store that cannot be
//! written, and the debris of killed writers (`vwf doctor`, cleanup at start). Documents that
//! are not runs are checked on both stores (`files::`, `postgres::`); the rest is about files.

use crate::common;
use crate::on_both_backends;

on_both_backends!(json_that_is_not_a_run_lists_as_an_unreadable_run_everywhere);

use common::{Backend, Home};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

/// One output step: a run that finishes at once and writes no file outside the store.
fn hello() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "say", "type": "output", "template": "hello {{trigger.who}}"}
        ],
        "edges": [{"from": "start", "to": "say"}]
    })
}

/// Starts `hello` once; returns the run id.
fn run_hello(home: &Home, who: &str) -> String {
    let (code, run) = home.json(&["run", "hello", "--input", &json!({"who": who}).to_string()]);
    assert_eq!(code, 0, "{run}");
    run["run_id"].as_str().expect("run_id").to_string()
}

/// Ids listed by `vwf runs --json`, newest first, with the whole answer.
fn listed(home: &Home) -> (Vec<String>, Value) {
    let (code, body) = home.json(&["runs", "--limit", "1000"]);
    assert_eq!(code, 0, "{body}");
    let ids = body["runs"].as_array().expect("runs").iter().map(|r| r["run_id"].as_str().expect("run_id").to_string()).collect();
    (ids, body)
}

/// Small JSON documents of every shape (scalars, arrays, objects, nested), from a fixed seed.
fn arbitrary_json(count: usize) -> Vec<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z_]{0,8}".prop_map(Value::String),
    ];
    let strategy = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    let mut runner = TestRunner::deterministic();
    (0..count).map(|_| strategy.new_tree(&mut runner).expect("a value").current()).collect()
}

// ---- a run file that holds JSON but not a run ----

fn json_that_is_not_a_run_lists_as_an_unreadable_run_everywhere(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("hello", &hello());
    let real = run_hello(&home, "a");
    let file = common::run_file(&home, &real);

    // The class: `[]`, `{}`, arbitrary documents, and the real run missing one of its fields.
    let mut documents = vec![json!([]), json!({}), json!(null), json!("run"), json!(7), json!({"run_id": real})];
    documents.extend(arbitrary_json(40));
    for key in file.as_object().expect("a run file is an object").keys() {
        let mut cut = file.clone();
        cut.as_object_mut().expect("object").remove(key);
        documents.push(cut);
    }
    // Each document goes into the stored run of a run the store made (so the index lists it).
    let mut expected = Vec::new();
    for doc in &documents {
        let id = run_hello(&home, "b");
        home.write_stored_run(&id, doc.to_string().as_bytes());
        let is_run = serde_json::from_value::<vwf_core::run::Run>(doc.clone()).is_ok();
        expected.push((id, is_run, doc));
    }
    let not_runs = expected.iter().filter(|(_, is_run, _)| !is_run).count();
    assert!(not_runs >= 46, "the class holds {not_runs} documents that are not runs");

    let (ids, body) = listed(&home);
    assert_eq!(ids.len(), documents.len() + 1, "{body}");
    for entry in body["runs"].as_array().expect("runs") {
        let id = entry["run_id"].as_str().expect("run_id");
        let Some((_, is_run, doc)) = expected.iter().find(|(e, ..)| e == id) else {
            assert_eq!(id, real);
            continue;
        };
        if *is_run {
            assert!(entry.get("status").is_some(), "{doc} → {entry}");
        } else {
            let mut keys: Vec<&String> = entry.as_object().expect("object").keys().collect();
            keys.sort();
            assert_eq!(keys, ["error", "ok", "run_id"], "{doc} → {entry}");
            assert_eq!(entry["ok"], false);
            assert!(entry["error"].as_str().expect("error").contains(id), "{entry}");
        }
    }
    // `show` answers it like a file that is not JSON at all.
    for (id, _, doc) in expected.iter().filter(|(_, is_run, _)| !is_run).take(8) {
        let (code, body) = home.json(&["show", id]);
        assert_eq!(code, 70, "{doc} → {body}");
        assert_eq!(body["ok"], false, "{body}");
        assert!(body["error"].as_str().expect("error").contains(id.as_str()), "{body}");
    }
}

// ---- a damaged run index ----

/// Five runs started a minute apart (so their `created_at` order is the index order), oldest
/// first, and the index they left.
fn five_runs(home: &Home) -> (Vec<String>, Vec<u8>) {
    home.save("hello", &hello());
    let ids: Vec<String> = (0..5)
        .map(|i| {
            let now = common::later("2026-11-29T09:00:00Z", i);
            let (code, run) = home.json_at(&now, &["run", "hello", "--input", r#"{"who": "x"}"#]);
            assert_eq!(code, 0, "{run}");
            run["run_id"].as_str().expect("run_id").to_string()
        })
        .collect();
    let index = std::fs::read(home.runs_dir().join(".index")).expect("the index");
    (ids, index)
}

/// `vwf runs --json`: (exit code, ids newest first, standard error).
fn list_with_stderr(home: &Home) -> (i32, Vec<String>, String) {
    let out = home.vwf().args(["--json", "runs", "--limit", "100"]).output().expect("run vwf");
    let body = common::parse(&out);
    let ids = body["runs"]
        .as_array()
        .map(|runs| runs.iter().map(|r| r["run_id"].as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default();
    (common::code(&out), ids, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Every kind of damage to an index of five runs: each leaves an index from which a listing
/// shows all five runs, newest first, and says on standard error what it found and did.
#[test]
fn a_damaged_run_index_never_hides_a_run() {
    let home = Home::new();
    let (ids, index) = five_runs(&home);
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let path = home.runs_dir().join(".index");
    let lines: Vec<&[u8]> = index.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(lines.len(), 6, "a header and five lines: {:?}", String::from_utf8_lossy(&index));

    // (name, damaged bytes, whether the damage must be reported)
    let mut cases: Vec<(String, Vec<u8>, bool)> = Vec::new();
    for len in 0..index.len() {
        cases.push((format!("truncated to {len} bytes"), index[..len].to_vec(), true));
    }
    let mut seed = 0x5eed_1dea_u64;
    for at in 0..index.len() {
        for _ in 0..2 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut bad = index.clone();
            let byte = (seed % 255) as u8;
            bad[at] = if byte == index[at] { byte.wrapping_add(1) } else { byte };
            cases.push((format!("byte {at} set to {:#04x}", bad[at]), bad, true));
        }
    }
    for (i, line) in lines.iter().enumerate() {
        let mut doubled = lines.clone();
        doubled.insert(i, line);
        cases.push((format!("line {i} repeated"), doubled.concat(), true));
        let mut dropped = lines.clone();
        dropped.remove(i);
        cases.push((format!("line {i} removed"), dropped.concat(), true));
        let mut swapped = lines.clone();
        swapped[i] = lines[(i % 5) + 1];
        if swapped != lines {
            cases.push((format!("line {i} overwritten by another"), swapped.concat(), true));
        }
    }
    cases.push(("every line twice".into(), [index.as_slice(), &index[lines[0].len()..]].concat(), true));
    cases.push((
        "the first version's format (bare ids)".into(),
        ids.iter().map(|id| format!("{id}\n")).collect::<String>().into_bytes(),
        true,
    ));
    cases.push(("random bytes".into(), (0..index.len()).map(|i| (i * 7 + 3) as u8).collect(), true));

    for (name, bytes, reported) in &cases {
        std::fs::write(&path, bytes).expect("damage the index");
        let (code, listed, stderr) = list_with_stderr(&home);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(&listed, &newest_first, "{name}: {stderr}");
        if *reported {
            assert!(stderr.contains("workflow-runs/.index") && stderr.contains("rebuilt it from the 5 run files"), "{name}: {stderr:?}");
        }
        // Repaired: the next listing has nothing to say.
        let (code, listed, stderr) = list_with_stderr(&home);
        assert_eq!((code, &listed), (0, &newest_first), "{name}, listed again: {stderr}");
        assert!(!stderr.contains("warning"), "{name}: the rebuilt index is damaged too: {stderr}");
    }
    eprintln!("{} kinds of damage to a {}-byte index", cases.len(), index.len());

    // Lines for runs whose file is gone are no damage: those runs are forgotten.
    std::fs::write(&path, &index).expect("restore the index");
    std::fs::remove_file(home.runs_dir().join(format!("{}.json", ids[2]))).expect("delete a run");
    let (code, listed, stderr) = list_with_stderr(&home);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(listed, [ids[4].clone(), ids[3].clone(), ids[1].clone(), ids[0].clone()], "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A valid but older copy of the index put back (five runs listed of seven): the listing shows
/// every run, newest first, says what it found and did, and so does a run started first.
#[test]
fn an_older_copy_of_the_run_index_hides_no_run() {
    let home = Home::new();
    let (mut ids, older) = five_runs(&home);
    for i in 5..7 {
        let (code, run) = home.json_at(&common::later("2026-11-29T09:00:00Z", i), &["run", "hello", "--input", r#"{"who": "x"}"#]);
        assert_eq!(code, 0, "{run}");
        ids.push(run["run_id"].as_str().expect("run_id").to_string());
    }
    let path = home.runs_dir().join(".index");
    std::fs::write(&path, &older).expect("put the older copy back");
    let (code, listed, stderr) = list_with_stderr(&home);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(listed, ids.iter().rev().cloned().collect::<Vec<_>>(), "{stderr}");
    assert!(stderr.contains("has 5 lines but had 7") && stderr.contains("rebuilt it from the 7 run files"), "{stderr:?}");
    let (_, _, stderr) = list_with_stderr(&home);
    assert!(!stderr.contains("warning"), "repaired: {stderr}");

    // A run started on the older copy first rebuilds it, then is the newest.
    std::fs::write(&path, &older).expect("put the older copy back");
    let (code, run) = home.json_at(&common::later("2026-11-29T09:00:00Z", 7), &["run", "hello", "--input", r#"{"who": "x"}"#]);
    assert_eq!(code, 0, "{run}");
    ids.push(run["run_id"].as_str().expect("run_id").to_string());
    let (code, listed, stderr) = list_with_stderr(&home);
    assert_eq!((code, listed), (0, ids.iter().rev().cloned().collect::<Vec<_>>()), "{stderr}");
}

#[test]
fn an_index_or_lock_that_is_a_directory_hides_no_run_and_stops_no_run() {
    let home = Home::new();
    let (ids, _) = five_runs(&home);
    for (runs, name) in [(5, ".index"), (6, ".index.lock")] {
        let path = home.runs_dir().join(name);
        let _ = std::fs::remove_file(&path);
        std::fs::create_dir(&path).expect("a directory in the way");
        std::fs::write(path.join("inside"), "x").expect("a file inside it");

        let (code, listed, stderr) = list_with_stderr(&home);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert_eq!(listed.len(), runs, "{name}: {listed:?} {stderr}");
        assert!(stderr.contains(&format!("workflow-runs/{name}")) && stderr.contains("is a directory"), "{name}: {stderr:?}");

        // Running goes on, says which file is in the way, and the new run is listed.
        let out = home.vwf().args(["--json", "run", "hello", "--input", r#"{"who": "y"}"#]).output().expect("run vwf");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(common::code(&out), 0, "{name}: {stderr}");
        assert!(stderr.contains(&format!("workflow-runs/{name}")), "{name}: {stderr:?}");
        let new = common::parse(&out)["run_id"].as_str().expect("run_id").to_string();
        let (_, listed, _) = list_with_stderr(&home);
        assert_eq!(listed.first(), Some(&new), "{name}: the new run is the newest");
        std::fs::remove_dir_all(&path).expect("clear the way");
    }
    let (code, listed, stderr) = list_with_stderr(&home);
    assert_eq!((code, listed.len()), (0, 7), "{stderr}");
    assert!(ids.iter().all(|id| listed.contains(id)));

    // A run lock that is a directory is an error that names it.
    let run = ids[0].clone();
    let lock = home.runs_dir().join(".locks").join(format!("{run}.lock"));
    std::fs::remove_file(&lock).expect("the run's lock file");
    std::fs::create_dir(&lock).expect("a directory in its place");
    let (code, body) = home.json(&["run", "retry", &run]);
    assert_eq!(code, 70, "{body}");
    assert!(body["error"].as_str().expect("error").contains(&format!("workflow-runs/.locks/{run}.lock")), "{body}");
}

// ---- a store that cannot be written ----

/// `vwf --home <home> --json <args>` as a plain process (to spawn, kill or limit).
fn vwf_process(home: &Home, args: &[&str]) -> std::process::Command {
    vwf_command(assert_cmd::cargo::cargo_bin("vwf"), home, args)
}

/// `binary` run on `home` with `args`, as [`vwf_process`] runs the build's own.
fn vwf_command(binary: std::path::PathBuf, home: &Home, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(binary);
    cmd.arg("--home").arg(home.path()).arg("--json").args(args);
    for var in ["VWF_HOME", "HERMES_HOME", "VWF_NOW"] {
        cmd.env_remove(var);
    }
    cmd
}

/// `vwf_process` in which no file can grow past `max_bytes`: RLIMIT_FSIZE, with SIGXFSZ ignored
/// so a write past it fails with EFBIG ("File too large") the way a full disk fails one with
/// ENOSPC. It works as root, needs no mount, and binds the store's own writes only (a step's
/// output comes through a pipe).
fn vwf_limited(home: &Home, max_bytes: u64, args: &[&str]) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = vwf_process(home, args);
    // SAFETY: only async-signal-safe calls (signal, setrlimit) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: max_bytes, rlim_max: max_bytes };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// `vwf_process` on a store it cannot write: every directory under the home made 0555 and every
/// file 0444 (kept that way until [`set_modes`] gives them back), and, as root (whom modes do not
/// stop), the process run as `nobody`, so each write fails with EACCES as on a read-only mount.
fn vwf_read_only(home: &Home, args: &[&str]) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    set_modes(home.path(), 0o555, 0o444);
    // `nobody` may not reach the build's own binary (a checkout under a directory only its owner
    // can enter): it runs a copy that everyone can.
    let mut cmd = vwf_command(binary_for_everyone(), home, args);
    // SAFETY: getuid, setgid and setuid are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::getuid() == 0 && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

/// A copy of the `vwf` binary in a directory every user may enter, made once per test process
/// and removed when the process exits (a static is never dropped, and each copy is some 100 MB).
fn binary_for_everyone() -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    static COPY: std::sync::Mutex<Option<(tempfile::TempDir, std::path::PathBuf)>> = std::sync::Mutex::new(None);
    // At exit no test runs; a lock still held (it never is) is left alone rather than waited for.
    extern "C" fn remove_copy() {
        match COPY.try_lock() {
            Ok(mut copy) => drop(copy.take()),
            Err(std::sync::TryLockError::Poisoned(copy)) => drop(copy.into_inner().take()),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
    }
    let mut copy = COPY.lock().unwrap_or_else(|e| e.into_inner());
    let (_, path) = copy.get_or_insert_with(|| {
        let dir = tempfile::Builder::new().prefix("vwf-bin-").tempdir().expect("a directory for the binary");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod the directory");
        let path = dir.path().join("vwf");
        std::fs::copy(assert_cmd::cargo::cargo_bin("vwf"), &path).expect("copy the binary");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod the binary");
        // SAFETY: atexit takes a plain function; it runs once, when the process exits normally.
        unsafe { libc::atexit(remove_copy) };
        (dir, path)
    });
    path.clone()
}

/// Gives every directory under (and including) `dir` the mode `dirs`, every file `files`.
fn set_modes(dir: &std::path::Path, dirs: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dirs)).expect("chmod a directory");
    for entry in std::fs::read_dir(dir).expect("read a directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            set_modes(&path, dirs, files);
        } else {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(files)).expect("chmod a file");
        }
    }
}

fn output_json(mut cmd: std::process::Command) -> (i32, Value, String) {
    let out = cmd.output().expect("run vwf");
    (common::code(&out), common::parse(&out), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Polls `check` until it holds, for at most 60 s (waiting on a real process).
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

/// The only run of `home`: (id, file as JSON).
fn only_run(home: &Home) -> Option<(String, Value)> {
    let entries = std::fs::read_dir(home.runs_dir()).ok()?;
    let name =
        entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).find(|n| n.ends_with(".json") && !n.starts_with('.'))?;
    let id = name.trim_end_matches(".json").to_string();
    // The run as stored: its file, and the parts saved since when it is in flight.
    let value = serde_json::from_slice(&home.stored_run_bytes(&id)?).ok()?;
    Some((id, value))
}

#[test]
fn a_run_found_interrupted_is_reported_without_writing_when_the_store_cannot_be_written() {
    let home = Home::new();
    let pid_file = home.path().join("slow.pid");
    home.save(
        "slow",
        &json!({
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "slow", "type": "command", "run": format!("echo $$ > {}; exec sleep 60", pid_file.display())},
                {"id": "after", "type": "output", "template": "never"}
            ],
            "edges": [{"from": "start", "to": "slow"}, {"from": "slow", "to": "after"}]
        }),
    );
    // A run killed in the middle of its step: its file says `running`, nobody holds its lock.
    let mut child = vwf_process(&home, &["run", "slow"]).stdout(std::process::Stdio::null()).spawn().expect("start vwf run");
    eventually("the step to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
            && only_run(&home).is_some_and(|(_, run)| {
                run["status"] == "running" && run["steps"].as_array().is_some_and(|s| s.iter().any(|r| r["node"] == "slow"))
            })
    });
    child.kill().expect("kill vwf");
    child.wait().expect("reap vwf");
    let sleeper: i32 = std::fs::read_to_string(&pid_file).expect("pid").trim().parse().expect("a pid");
    // SAFETY: kill(2) on the step's own process, started by this test.
    unsafe { libc::kill(sleeper, libc::SIGKILL) };
    let (id, _) = only_run(&home).expect("the run");
    let path = home.runs_dir().join(format!("{id}.json"));
    let before = std::fs::read(&path).expect("run file");

    let limited = |args: &[&str]| vwf_limited(&home, 0, args);
    let read_only = |args: &[&str]| vwf_read_only(&home, args);
    for (how, args) in [
        (&limited as &dyn Fn(&[&str]) -> std::process::Command, vec!["show", id.as_str()]),
        (&limited, vec!["runs"]),
        (&read_only, vec!["show", id.as_str()]),
        (&read_only, vec!["runs"]),
    ] {
        let (code, body, stderr) = output_json(how(&args));
        let run = if args[0] == "show" { body.clone() } else { body["runs"][0].clone() };
        assert_eq!(code, if args[0] == "show" { 1 } else { 0 }, "{args:?}: {body} {stderr}");
        assert_eq!((&run["status"], &run["error"]), (&json!("failed"), &json!("interrupted during step slow")), "{args:?}: {body}");
        assert_eq!(std::fs::read(&path).expect("run file"), before, "{args:?} wrote the run file");
    }
    // Where the store can be written, the first reader saves what it found.
    set_modes(home.path(), 0o755, 0o644);
    let (code, body) = home.json(&["show", &id]);
    assert_eq!((code, &body["error"]), (1, &json!("interrupted during step slow")), "{body}");
    assert_eq!(common::run_file(&home, &id)["status"], "failed");
}

#[test]
fn a_run_the_machine_cannot_save_records_why() {
    let home = Home::new();
    home.save(
        "big",
        &json!({
            "nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "big", "type": "command", "run": "head -c 100000 /dev/zero | tr '\\0' x"},
                {"id": "after", "type": "output", "template": "done"}
            ],
            "edges": [{"from": "start", "to": "big"}, {"from": "big", "to": "after"}]
        }),
    );
    // The run starts (its first file is small) and cannot save the step's 100 kB output.
    let (code, body, stderr) = output_json(vwf_limited(&home, 20_000, &["run", "big"]));
    assert_eq!(code, 70, "{body} {stderr}");
    assert!(body["error"].as_str().expect("error").contains("File too large"), "{body}");
    let (id, file) = only_run(&home).expect("the run");
    assert_eq!(file["status"], "failed", "{file}");
    let error = file["error"].as_str().expect("error");
    assert!(error.starts_with("the run could not be saved during step big: ") && error.contains("File too large"), "{error}");

    // Every reader reports that cause, not "interrupted"; once the disk has room, retry finishes.
    let (code, shown) = home.json(&["show", &id]);
    assert_eq!((code, &shown["error"]), (1, &json!(error)), "{shown}");
    let (code, retried) = home.json(&["run", "retry", &id]);
    assert_eq!((code, &retried["status"]), (0, &json!("done")), "{retried}");
}

/// A disk that fills up (a small tmpfs mounted over a home, in a mount namespace this test makes,
/// so nothing of the machine's fills): the API answers 507 with `Retry-After` and a body that
/// names no file of the server's; the CLI says which file and exits 7; what was saved before
/// still reads back.
#[test]
fn a_full_disk_is_a_507_that_names_no_file() {
    let exe = std::env::current_exe().expect("test binary");
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--"])
        .arg(exe)
        .args(["--exact", "store::a_full_disk_inside_a_namespace", "--ignored", "--nocapture", "--test-threads=1"])
        .env("VWF_FULL_DISK_NAMESPACE", "1")
        .output()
        .expect("run unshare (util-linux)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("test result: ok. 1 passed"), "the test inside the namespace failed:\n{text}");
}

/// What [`a_full_disk_is_a_507_that_names_no_file`] runs in its mount namespace.
#[test]
#[ignore = "run by a_full_disk_is_a_507_that_names_no_file inside a mount namespace"]
fn a_full_disk_inside_a_namespace() {
    use common::server::Server;
    assert_eq!(std::env::var("VWF_FULL_DISK_NAMESPACE").as_deref(), Ok("1"), "run this only through its outer test");
    let home = Home::new();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs"])
        .arg(home.path())
        .status()
        .expect("mount");
    assert!(mounted.success(), "mount a tmpfs over the home");
    let server = Server::start(&home);
    server.save("hello", hello());
    // A run that acts on the world is saved before and after its step (a run of typed steps only
    // may be answered from the commit log and written to its file when its lock is let go).
    let acts = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "act", "type": "command", "run": "echo acted"},
            {"id": "say", "type": "output", "template": "{{nodes.act.text}}"}
        ],
        "edges": [{"from": "start", "to": "act"}, {"from": "act", "to": "say"}]
    });
    server.save("acts", acts);
    let (status, done) = server.post("/designs/hello/run", json!({"input": {"who": "before"}}));
    assert_eq!((status, &done["status"]), (200, &json!("done")), "{done}");
    // Fill the disk: a file grows until the file system has no block left.
    let mut fill = std::fs::File::create(home.path().join("fill")).expect("fill file");
    let block = vec![b'x'; 64 * 1024];
    while std::io::Write::write_all(&mut fill, &block).is_ok() {}
    drop(fill);

    let response =
        server.authed(reqwest::blocking::Client::new().post(server.url("/designs/acts/run"))).json(&json!({})).send().expect("run");
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(String::from);
    let body: Value = response.json().expect("JSON body");
    assert_eq!((status, retry_after.as_deref()), (507, Some("30")), "{body}");
    let error = body["error"].as_str().expect("error");
    assert_eq!(body["ok"], false, "{body}");
    assert!(error.contains("full") && !error.contains('/') && !error.contains(&home.path().display().to_string()), "{body}");

    let (code, body) = home.json(&["run", "acts"]);
    assert_eq!(code, 7, "{body}");
    let detail = body["error"].as_str().expect("error");
    assert!(detail.contains("No space left on device") && detail.contains("workflow-runs"), "the CLI names the file: {body}");

    // What was saved before the disk filled reads back whole.
    std::fs::remove_file(home.path().join("fill")).expect("room again");
    let (status, runs) = server.get("/runs");
    assert_eq!(status, 200, "{runs}");
    let listed = runs["runs"].as_array().expect("runs");
    assert!(listed.iter().any(|r| r["status"] == "done" && r["trigger"]["input"]["who"] == "before"), "{runs}");
    drop(server);
    let _ = std::process::Command::new("umount").arg(home.path()).status();
}

// ---- debris of killed writers: `vwf doctor` and cleanup at start ----

/// What killed writers leave, beside three intact runs: (paths that are provably stale and must
/// go, paths that must stay, the run whose lock a live process holds, that holder).
struct Debris {
    stale: Vec<std::path::PathBuf>,
    kept: Vec<std::path::PathBuf>,
    _busy_lock: std::fs::File,
}

fn an_hour_ago(path: &std::path::Path) {
    let file = std::fs::File::options().write(true).open(path).expect("open to age it");
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)).expect("set mtime");
}

fn debris(home: &Home, ids: &[String]) -> Debris {
    let runs = home.runs_dir();
    let locks = runs.join(".locks");
    // A first write killed after the index line and the temp file: no run file, an orphan lock.
    let gone = &ids[0];
    std::fs::remove_file(runs.join(format!("{gone}.json"))).expect("remove a run file");
    std::fs::write(runs.join(format!(".{gone}.json.tmp")), "{\"run_id\": \"").expect("temp");
    an_hour_ago(&locks.join(format!("{gone}.lock")));
    // An id reserved and never written, an index rebuild and a design save killed mid-write.
    let reserved = locks.join("0123456789ab.lock");
    std::fs::write(&reserved, "").expect("lock file");
    an_hour_ago(&reserved);
    let index_temp = runs.join("..index.0123456789abcdef.tmp");
    std::fs::write(&index_temp, "vwf-runs").expect("index temp");
    let design_temp = home.path().join("workflow-designs/.hello.json.0123456789abcdef.tmp");
    std::fs::write(&design_temp, "{").expect("design temp");
    an_hour_ago(&design_temp);
    // Not stale: a temp file of a run whose writer is alive, a lock file just made, a design
    // temp file written a moment ago.
    let busy = &ids[1];
    let busy_temp = runs.join(format!(".{busy}.json.tmp"));
    std::fs::write(&busy_temp, "{").expect("busy temp");
    let busy_lock = std::fs::File::options().read(true).write(true).open(locks.join(format!("{busy}.lock"))).expect("busy lock");
    busy_lock.try_lock().expect("hold the busy run's lock");
    let fresh_lock = locks.join("0123456789ac.lock");
    std::fs::write(&fresh_lock, "").expect("fresh lock");
    let fresh_temp = home.path().join("workflow-designs/.hello.json.fedcba9876543210.tmp");
    std::fs::write(&fresh_temp, "{").expect("fresh temp");
    Debris {
        stale: vec![runs.join(format!(".{gone}.json.tmp")), locks.join(format!("{gone}.lock")), reserved, index_temp, design_temp],
        kept: vec![busy_temp, fresh_lock, fresh_temp],
        _busy_lock: busy_lock,
    }
}

fn doctor(home: &Home, args: &[&str]) -> (i32, Value) {
    let (code, body) = home.json(&[&["doctor"], args].concat());
    assert!(body["problems"].is_array(), "{body}");
    (code, body)
}

#[test]
fn doctor_finds_the_debris_of_killed_writes_and_fix_removes_what_is_stale() {
    let home = Home::new();
    let (ids, _) = five_runs(&home);
    let (code, body) = doctor(&home, &[]);
    assert_eq!((code, &body["ok"], &body["problems"]), (0, &json!(true), &json!([])), "a healthy home: {body}");
    assert_eq!(body["checked"], json!({"designs": 1, "runs": 5, "schedules": 0}), "{body}");

    let debris = debris(&home, &ids);
    let before = common::snapshot(&home);
    let (code, body) = doctor(&home, &[]);
    assert_eq!((code, &body["ok"]), (1, &json!(false)), "{body}");
    assert_eq!(common::snapshot(&home), before, "a check writes nothing");
    let problems = body["problems"].as_array().expect("problems");
    for path in &debris.stale {
        let rel = path.strip_prefix(home.path()).expect("under the home").display().to_string();
        assert!(problems.iter().any(|p| p["path"] == rel.as_str() && p["fixed"].is_null()), "{rel} not reported: {body}");
    }
    let index_problem = problems.iter().find(|p| p["path"] == "workflow-runs/.index").unwrap_or_else(|| panic!("{body}"));
    assert!(index_problem["problem"].as_str().expect("problem").contains(&ids[0]), "{index_problem}");
    for path in &debris.kept {
        let rel = path.strip_prefix(home.path()).expect("under the home").display().to_string();
        assert!(!problems.iter().any(|p| p["path"] == rel.as_str()), "{rel} is in use, not a problem: {body}");
    }

    let (code, body) = doctor(&home, &["--fix"]);
    assert_eq!((code, &body["ok"]), (0, &json!(true)), "{body}");
    let fixed = body["problems"].as_array().expect("problems");
    assert!(fixed.len() > debris.stale.len() && fixed.iter().all(|p| p["fixed"].is_string()), "{body}");
    for path in &debris.stale {
        assert!(!path.exists(), "{} is still there", path.display());
    }
    for path in &debris.kept {
        assert!(path.exists(), "{} was removed although it is in use", path.display());
    }
    let (code, body) = doctor(&home, &[]);
    assert_eq!((code, &body["problems"]), (0, &json!([])), "fixed for good: {body}");
    let (_, listed, _) = list_with_stderr(&home);
    assert_eq!(listed, ids[1..].iter().rev().cloned().collect::<Vec<_>>());

    // Human output says what it did.
    let out = home.vwf().args(["doctor", "--fix"]).output().expect("run vwf");
    assert_eq!(common::code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("No problems found"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn doctor_reports_every_file_that_does_not_parse_and_leaves_it() {
    let home = Home::new();
    let (ids, _) = five_runs(&home);
    let designs = home.path().join("workflow-designs");
    std::fs::write(designs.join("broken.json"), "{\"nodes\": [").expect("design");
    std::fs::write(designs.join("list.json"), "[]").expect("design");
    std::fs::write(home.runs_dir().join(format!("{}.json", ids[1])), "{}").expect("run");
    std::fs::write(home.runs_dir().join(format!("{}.json", ids[2])), "{\"run_id\": tr").expect("run");
    let schedules = home.path().join("workflow-schedules");
    std::fs::create_dir_all(&schedules).expect("schedules dir");
    std::fs::write(schedules.join("wf-hello.json"), "{}").expect("schedule");
    let bad = [
        "workflow-designs/broken.json",
        "workflow-designs/list.json",
        &format!("workflow-runs/{}.json", ids[1]),
        &format!("workflow-runs/{}.json", ids[2]),
        "workflow-schedules/wf-hello.json",
    ]
    .map(String::from);

    for args in [&[][..], &["--fix"][..]] {
        let before = common::snapshot(&home);
        let (code, body) = doctor(&home, args);
        assert_eq!((code, &body["ok"]), (1, &json!(false)), "{args:?}: {body}");
        let problems = body["problems"].as_array().expect("problems");
        assert_eq!(problems.len(), bad.len(), "{args:?}: {body}");
        for path in &bad {
            assert!(problems.iter().any(|p| p["path"] == path.as_str() && p["fixed"].is_null()), "{path}: {body}");
        }
        assert_eq!(common::snapshot(&home), before, "{args:?}: user files are never removed");
    }
}

/// Entries the store does not keep in its directories, and design, run or lock paths that are
/// directories, are reported by a check and left as they are by `--fix` (they may be a user's).
#[test]
fn doctor_reports_stray_files_and_directories_and_never_removes_them() {
    let home = Home::new();
    let (ids, _) = five_runs(&home);
    let schedules = home.path().join("workflow-schedules");
    std::fs::create_dir_all(&schedules).expect("schedules dir");
    // Files the store keeps that a stray check must not report.
    std::fs::write(schedules.join("trigger-hello.json"), "{}").expect("trigger state");
    std::fs::write(schedules.join(".schedules.lock"), "").expect("schedules lock");
    let stray_files = [
        "workflow-designs/notes.txt",
        "workflow-designs/.DS_Store",
        "workflow-designs/Bad Name.json",
        "workflow-runs/README",
        "workflow-runs/0123.json",
        "workflow-runs/.locks/junk",
        "workflow-schedules/backup.json.bak",
    ];
    for rel in stray_files {
        std::fs::write(home.path().join(rel), "mine").expect("stray file");
    }
    let stray_dirs = [
        "workflow-designs/folder",
        "workflow-designs/hello2.json",
        "workflow-runs/0123456789ab.json",
        "workflow-runs/.locks/0123456789ac.lock",
        "workflow-schedules/wf-other.json",
    ];
    for rel in stray_dirs {
        std::fs::create_dir_all(home.path().join(rel).join("inside")).expect("stray dir");
    }
    for args in [&[][..], &["--fix"][..]] {
        let before = common::snapshot(&home);
        let (code, body) = doctor(&home, args);
        assert_eq!((code, &body["ok"]), (1, &json!(false)), "{args:?}: {body}");
        let problems = body["problems"].as_array().expect("problems");
        let mut reported: Vec<&str> = problems.iter().filter_map(|p| p["path"].as_str()).collect();
        reported.sort_unstable();
        let mut expected: Vec<&str> = stray_files.iter().chain(&stray_dirs).copied().collect();
        expected.sort_unstable();
        assert_eq!(reported, expected, "{args:?}: {body}");
        assert!(problems.iter().all(|p| p["fixed"].is_null()), "{args:?}: {body}");
        for rel in stray_dirs {
            let p = problems.iter().find(|p| p["path"] == rel).expect("reported");
            assert!(p["problem"].as_str().expect("text").contains("is a directory") || rel.ends_with("folder"), "{p}");
        }
        assert_eq!(common::snapshot(&home), before, "{args:?}: nothing is removed");
        for rel in stray_dirs {
            assert!(home.path().join(rel).join("inside").is_dir(), "{rel} was removed");
        }
    }
    let (_, listed, _) = list_with_stderr(&home);
    assert_eq!(listed, ids.iter().rev().cloned().collect::<Vec<_>>());
}

#[test]
fn serve_and_daemon_start_remove_what_killed_writers_left() {
    use std::io::BufRead;
    for command in [&["daemon"][..], &["serve", "--bind", "127.0.0.1:0"][..]] {
        let home = Home::new();
        let (ids, _) = five_runs(&home);
        let debris = debris(&home, &ids);
        let mut child = vwf_process(&home, command)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start vwf");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("the first line");
        let stale_left: Vec<_> = debris.stale.iter().filter(|p| p.exists()).collect();
        let kept_gone: Vec<_> = debris.kept.iter().filter(|p| !p.exists()).collect();
        child.kill().expect("stop vwf");
        let out = child.wait_with_output().expect("reap vwf");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stale_left.is_empty(), "{command:?} left {stale_left:?}; first line {first:?}, stderr {stderr}");
        assert!(kept_gone.is_empty(), "{command:?} removed {kept_gone:?} although in use");
        assert!(
            stderr.contains(&format!(".{}.json.tmp", ids[0])) && stderr.contains("removed"),
            "{command:?} says what it removed: {stderr}"
        );
        let (code, body) = doctor(&home, &[]);
        assert_eq!((code, &body["problems"]), (0, &json!([])), "{command:?}: {body}");
    }
}

/// With few file handles left (RLIMIT_NOFILE from 4 up), a run either cannot start at all, or
/// records why it stopped (the step could not start its command, or the run could not be
/// saved: "Too many open files"), and never claims a bare "interrupted".
#[test]
fn a_run_out_of_file_handles_records_that_cause() {
    use std::os::unix::process::CommandExt;
    let mut recorded = 0;
    for limit in 4..=16u64 {
        let home = Home::new();
        home.save(
            "cmd",
            &json!({
                "nodes": [
                    {"id": "start", "type": "trigger", "mode": "manual"},
                    {"id": "list", "type": "command", "run": "echo listed"},
                    {"id": "after", "type": "output", "template": "done"}
                ],
                "edges": [{"from": "start", "to": "list"}, {"from": "list", "to": "after"}]
            }),
        );
        let mut cmd = vwf_process(&home, &["run", "cmd"]);
        // SAFETY: setrlimit is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                let rlimit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().expect("run vwf");
        let Some((id, file)) = only_run(&home) else { continue };
        // What a later reader reports (a run left running would be marked interrupted here).
        let (_, shown) = home.json(&["show", &id]);
        match shown["status"].as_str() {
            Some("done") => {}
            _ => {
                let error = shown["error"].as_str().unwrap_or_default();
                assert!(
                    error.contains("Too many open files"),
                    "limit {limit}: {error:?} (file {file}; stderr {})",
                    String::from_utf8_lossy(&out.stderr)
                );
                eprintln!("RLIMIT_NOFILE {limit}: {error}");
                recorded += 1;
            }
        }
    }
    assert!(recorded > 0, "no limit made a run fail for want of file handles");
}
