//! The store as a careless user or a failing machine leaves it, through the real `vwf` binary:
//! run files that hold JSON that is not a run, a damaged run index, a store that cannot be
//! written, and the debris of killed writers (`vwf doctor`, cleanup at start).

mod common;

use common::Home;
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

#[test]
fn json_that_is_not_a_run_lists_as_an_unreadable_run_everywhere() {
    let home = Home::new();
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
    // Each document goes into the file of a run the store made (so the index lists it).
    let mut expected = Vec::new();
    for doc in &documents {
        let id = run_hello(&home, "b");
        std::fs::write(home.runs_dir().join(format!("{id}.json")), doc.to_string()).expect("write a run file");
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
