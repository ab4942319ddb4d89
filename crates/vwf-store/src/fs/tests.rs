use crate::Wait;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use super::*;

fn store() -> (tempfile::TempDir, FileStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path().to_path_buf());
    (dir, store)
}

fn name(s: &str) -> DesignName {
    DesignName::parse(s).unwrap()
}

fn id(s: &str) -> RunId {
    RunId::parse(s).unwrap()
}

fn listed_ids(store: &FileStore, limit: usize) -> Vec<String> {
    store.list_runs(limit).wait().unwrap().into_iter().map(|e| e.id.to_string()).collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn design_save_load_round_trip() {
    let (home, store) = store();
    let graph = json!({"nodes": [{"id": "a", "type": "command"}], "edges": []});
    let shown = store.save_design(&name("morning-brief"), &graph).wait().unwrap();
    let path = home.path().join("workflow-designs/morning-brief.json");
    assert_eq!(shown, path.display().to_string());
    assert_eq!(store.load_design(&name("morning-brief")).wait().unwrap(), graph);
    assert!(store.design_exists(&name("morning-brief")).wait());
    assert!(!store.design_exists(&name("other")).wait());
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("{\n  \"nodes\": ["), "{text}");
    assert!(text.ends_with("}\n"));
    // Saving again replaces it and leaves no temp file behind.
    store.save_design(&name("morning-brief"), &json!({"nodes": []})).wait().unwrap();
    assert_eq!(store.load_design(&name("morning-brief")).wait().unwrap(), json!({"nodes": []}));
    assert_eq!(files_in(&home.path().join("workflow-designs")), vec!["morning-brief.json"]);
}

#[test]
fn design_listing_ignores_temp_dot_and_bad_name_files() {
    let (home, store) = store();
    assert_eq!(store.list_designs().wait().unwrap(), Vec::<String>::new());
    store.save_design(&name("b"), &json!({})).wait().unwrap();
    store.save_design(&name("a.v2"), &json!({})).wait().unwrap();
    let dir = home.path().join("workflow-designs");
    for stray in [".b.json.0123456789abcdef.tmp", ".hidden.json", "notes.txt", "-bad.json", "a b.json", "c.json.tmp"] {
        fs::write(dir.join(stray), "{}").unwrap();
    }
    fs::create_dir(dir.join("sub.json")).unwrap();
    assert_eq!(store.list_designs().wait().unwrap(), vec!["a.v2", "b"]);
}

#[test]
fn design_load_missing_is_not_found() {
    let (_home, store) = store();
    let err = store.load_design(&name("x")).wait().unwrap_err();
    assert!(matches!(err, StoreError::NotFound(_)), "{err:?}");
    assert_eq!(err.to_string(), r#"design "x" not found"#);
}

#[test]
fn design_with_bad_json_is_corrupt() {
    let (home, store) = store();
    let dir = home.path().join("workflow-designs");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("x.json"), "{\"nodes\": [").unwrap();
    let err = store.load_design(&name("x")).wait().unwrap_err();
    let StoreError::Corrupt { path, .. } = &err else { panic!("{err:?}") };
    assert_eq!(path, "workflow-designs/x.json");
    assert!(err.to_string().starts_with("workflow-designs/x.json is not valid JSON: "), "{err}");
}

#[test]
fn store_reads_from_a_home_that_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("missing");
    let store = FileStore::new(home.clone());
    assert!(store.list_designs().wait().unwrap().is_empty());
    assert!(store.list_runs(20).wait().unwrap().is_empty());
    assert!(matches!(store.read_run(&id("d7b493cae249")).wait(), Err(StoreError::NotFound(_))));
    assert!(matches!(store.load_design(&name("x")).wait(), Err(StoreError::NotFound(_))));
    assert!(matches!(store.lock_run(&id("d7b493cae249")).wait(), Err(StoreError::NotFound(_))));
    assert!(!store.design_exists(&name("x")).wait());
    assert!(!home.exists(), "reads created the home");
}

#[test]
fn runs_write_read_and_list_newest_first_with_limit() {
    let (home, store) = store();
    let ids: Vec<RunId> = (1..=5).map(|i| id(&format!("{i:012x}"))).collect();
    for (i, run_id) in ids.iter().enumerate() {
        store.import_run(run_id, &json!({"run_id": run_id.as_str(), "n": i})).wait().unwrap();
    }
    // Rewriting an old run does not make it newer.
    store.import_run(&ids[0], &json!({"run_id": ids[0].as_str(), "n": 0, "status": "done"})).wait().unwrap();
    assert_eq!(store.read_run(&ids[0]).wait().unwrap()["status"], "done");
    let text = fs::read_to_string(home.path().join("workflow-runs/000000000001.json")).unwrap();
    assert_eq!(text, "{\"run_id\":\"000000000001\",\"n\":0,\"status\":\"done\"}\n");

    assert_eq!(listed_ids(&store, 3), vec!["000000000005", "000000000004", "000000000003"]);
    let all = store.list_runs(100).wait().unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[4].run.as_ref().unwrap()["status"], "done");
    assert!(store.list_runs(0).wait().unwrap().is_empty());
    assert!(matches!(store.read_run(&id("ffffffffffff")).wait(), Err(StoreError::NotFound(_))));
    assert_eq!(store.read_run(&id("ffffffffffff")).wait().unwrap_err().to_string(), "run ffffffffffff not found");
    // Only the run files and dot entries live in workflow-runs.
    assert_eq!(
        files_in(&home.path().join("workflow-runs")),
        vec![
            ".commit",
            ".index",
            ".index.lock",
            "000000000001.json",
            "000000000002.json",
            "000000000003.json",
            "000000000004.json",
            "000000000005.json"
        ]
    );
    assert_eq!(files_in(home.path()), vec!["workflow-runs"]);
}

#[test]
fn runs_deleted_run_file_is_skipped() {
    let (home, store) = store();
    for i in 1..=4 {
        store.import_run(&id(&format!("{i:012x}")), &json!({"n": i})).wait().unwrap();
    }
    fs::remove_file(home.path().join("workflow-runs/000000000003.json")).unwrap();
    assert_eq!(listed_ids(&store, 2), vec!["000000000004", "000000000002"]);
    assert!(matches!(store.read_run(&id("000000000003")).wait(), Err(StoreError::NotFound(_))));
}

#[test]
fn runs_corrupt_file_is_an_entry_error_and_the_rest_is_listed() {
    let (home, store) = store();
    for i in 1..=3 {
        store.import_run(&id(&format!("{i:012x}")), &json!({"n": i})).wait().unwrap();
    }
    let dir = home.path().join("workflow-runs");
    fs::write(dir.join("000000000002.json"), "{\"n\": 2, trunc").unwrap();
    fs::write(dir.join("notes.json"), "{}").unwrap();
    fs::write(dir.join(".000000000001.json.aaaa.tmp"), "{").unwrap();
    let entries = store.list_runs(10).wait().unwrap();
    let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, vec!["000000000003", "000000000002", "000000000001"]);
    assert_eq!(entries[0].run.as_ref().unwrap(), &json!({"n": 3}));
    let err = entries[1].run.as_ref().unwrap_err();
    assert!(err.starts_with("workflow-runs/000000000002.json is not valid JSON: "), "{err}");
    assert!(matches!(store.read_run(&id("000000000002")).wait(), Err(StoreError::Corrupt { .. })));
}

#[test]
fn runs_index_is_rebuilt_when_deleted() {
    let (home, store) = store();
    let dir = home.path().join("workflow-runs");
    // Written in one order, created in another: the rebuild follows `created_at`.
    let created =
        [("00000000000a", "2020-01-03T00:00:00Z"), ("00000000000b", "2020-01-01T00:00:00Z"), ("00000000000c", "2020-01-02T00:00:00+01:00")];
    for (run_id, at) in created {
        store.import_run(&id(run_id), &json!({"created_at": at})).wait().unwrap();
    }
    fs::write(dir.join("00000000000d.json"), "not json").unwrap(); // no created_at: mtime (now) → newest
    fs::write(dir.join("readme.json"), "{}").unwrap();
    fs::remove_file(dir.join(".index")).unwrap();

    let expected = vec!["00000000000d", "00000000000a", "00000000000c", "00000000000b"];
    assert_eq!(listed_ids(&store, 10), expected);
    let indexed: Vec<String> = index::salvage(&dir).iter().map(ToString::to_string).collect();
    assert_eq!(indexed, ["00000000000b", "00000000000c", "00000000000a", "00000000000d"]);
    assert_eq!(listed_ids(&store, 2), expected[..2]);

    // A first write into a copied-in store without an index keeps the old runs listed.
    fs::remove_file(dir.join(".index")).unwrap();
    store.import_run(&id("00000000000e"), &json!({})).wait().unwrap();
    assert_eq!(listed_ids(&store, 10)[..2], ["00000000000e", "00000000000d"]);
    assert_eq!(listed_ids(&store, 10).len(), 5);
}

#[test]
fn runs_allocate_gives_distinct_12_hex_ids() {
    let (home, store) = store();
    let mut seen = HashSet::new();
    for _ in 0..200 {
        let run_id = store.allocate_run_id().wait().unwrap();
        assert!(RunId::parse(run_id.as_str()).is_ok());
        assert_eq!(run_id.as_str().len(), 12);
        assert!(seen.insert(run_id), "duplicate id");
    }
    assert_eq!(fs::read_dir(home.path().join("workflow-runs/.locks")).unwrap().count(), 200);
    // Allocated but not yet written: not listed, but lockable.
    let run_id = seen.iter().next().unwrap();
    assert!(store.list_runs(10).wait().unwrap().is_empty());
    assert!(store.try_lock_run(run_id).wait().unwrap().is_some());
}

#[test]
fn runs_lock_excludes_a_second_store_until_dropped() {
    let (home, store) = store();
    let other = FileStore::new(home.path().to_path_buf());
    let run_id = store.allocate_run_id().wait().unwrap();
    let guard = store.lock_run(&run_id).wait().unwrap();
    assert!(other.try_lock_run(&run_id).wait().unwrap().is_none());
    assert!(store.try_lock_run(&run_id).wait().unwrap().is_none(), "a second handle in this store too");
    drop(guard);
    let again = other.try_lock_run(&run_id).wait().unwrap().expect("free after drop");
    assert!(store.try_lock_run(&run_id).wait().unwrap().is_none());
    drop(again);

    // A run written without allocation (copied in) is lockable as well; its lock file is made then.
    let copied = id("abcdefabcdef");
    store.import_run(&copied, &json!({})).wait().unwrap();
    let _held = store.lock_run(&copied).wait().unwrap();
    assert!(other.try_lock_run(&copied).wait().unwrap().is_none());
    assert!(matches!(store.try_lock_run(&id("000000000000")).wait(), Err(StoreError::NotFound(_))));
}

#[test]
fn runs_lock_blocks_until_released() {
    let (home, store) = store();
    let run_id = store.allocate_run_id().wait().unwrap();
    let guard = store.lock_run(&run_id).wait().unwrap();
    let released = Arc::new(AtomicBool::new(false));
    let waiter = {
        let other = FileStore::new(home.path().to_path_buf());
        let run_id = run_id.clone();
        let released = released.clone();
        std::thread::spawn(move || {
            let _lock = other.lock_run(&run_id).wait().unwrap();
            released.load(Ordering::SeqCst)
        })
    };
    // The waiter cannot have the lock before this flag is set, however the threads interleave.
    released.store(true, Ordering::SeqCst);
    drop(guard);
    assert!(waiter.join().unwrap(), "second locker got in while the first held the lock");
}

#[test]
fn create_design_never_replaces_and_leaves_no_temp_file() {
    let (dir, store) = store();
    let first = json!({"nodes": [], "description": "first"});
    store.create_design(&name("x"), &first).wait().unwrap();
    let e = store.create_design(&name("x"), &json!({"nodes": [], "description": "second"})).wait().unwrap_err();
    assert!(matches!(e, StoreError::Exists(_)), "{e:?}");
    assert_eq!(e.to_string(), r#"design "x" already exists"#);
    assert_eq!(store.load_design(&name("x")).wait().unwrap(), first);
    assert_eq!(files_in(&dir.path().join(DESIGNS_DIR)), vec!["x.json"]);
    // A plain save still replaces.
    store.save_design(&name("x"), &json!({"nodes": []})).wait().unwrap();
    assert_eq!(store.load_design(&name("x")).wait().unwrap(), json!({"nodes": []}));
}

#[test]
fn atomic_write_removes_its_temp_file_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.json");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("inside"), "x").unwrap(); // renaming a file over a non-empty dir fails
    assert!(atomic_write(&target, b"{}").is_err());
    assert_eq!(files_in(dir.path()), vec!["target.json"]);
    assert!(atomic_write(&dir.path().join("no-such-dir/x.json"), b"{}").is_err());
}

#[test]
fn atomic_writes_never_show_a_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    let version = |tag: &str| -> Value {
        let items: Vec<Value> = (0..2_500).map(|i| json!({"i": i, "tag": tag, "text": "x".repeat(60)})).collect();
        json!({"tag": tag, "items": items})
    };
    let (a, b) = (version("a"), version("b"));
    let (a_bytes, b_bytes) = (serde_json::to_vec(&a).unwrap(), serde_json::to_vec(&b).unwrap());
    assert!(a_bytes.len() > 200_000, "{}", a_bytes.len());
    atomic_write(&path, &a_bytes).unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, done, a, b) = (path.clone(), done.clone(), a.clone(), b.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let bytes = fs::read(&path).expect("the target always exists");
                let value: Value = serde_json::from_slice(&bytes).expect("a complete JSON file");
                assert!(value == a || value == b, "a file that is neither version");
                reads += 1;
                if finished {
                    return reads;
                }
            }
        })
    };
    for i in 0..300 {
        atomic_write(&path, if i % 2 == 0 { &b_bytes } else { &a_bytes }).unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    eprintln!("{reads} reads during 300 atomic writes");
    assert_eq!(files_in(dir.path()), vec!["big.json"], "no temp file left behind");
}
