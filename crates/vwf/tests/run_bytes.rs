//! `[limits] run_bytes`: a run whose record would grow past the limit fails with an error naming
//! the limit and its config key before the oversized record is written; what is stored is the run
//! as last saved (under the limit), failed with that error, and it reads back whole through the
//! CLI and the API. On the file store and on PostgreSQL.

use crate::common;

use common::server::{Server, write_config};
use common::{Backend, Home};
use serde_json::{Value, json};

const LIMIT: u64 = 1024 * 1024;

/// A loop whose every pass prints 100 KB: 30 passes would make a record of about 3 MB.
fn growing() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "each", "type": "loop", "over": "{{trigger.items}}"},
        {"id": "blob", "type": "command", "run": "head -c 100000 /dev/zero | tr '\\0' a"}
    ], "edges": [{"from": "start", "to": "each"}, {"from": "each", "to": "blob", "label": "each"}]})
}

fn a_run_that_would_pass_run_bytes_fails_cleanly_under_the_limit(backend: Backend) {
    let home = Home::with_backend(backend);
    write_config(&home, &format!("[limits]\nrun_bytes = {LIMIT}\n"));
    home.save("growing", &growing());
    let input = json!({"items": (0..30).collect::<Vec<u32>>()}).to_string();
    let (_, run) = home.json(&["run", "growing", "--input", &input]);
    assert_eq!(run["status"], json!("failed"), "{run}");
    let id = run["run_id"].as_str().expect("run_id").to_string();
    let error = run["error"].as_str().expect("error");
    assert!(error.starts_with("the run could not be saved during step blob#"), "{error}");
    assert!(error.contains(&format!("more than the {LIMIT} bytes one run may hold ([limits] run_bytes = {LIMIT})")), "{error}");

    // What is stored is under the limit and reads back as the run the CLI answered.
    let stored = home.stored_run_bytes(&id).expect("the run is stored");
    assert!((stored.len() as u64) < LIMIT, "{} bytes stored", stored.len());
    let passes = run["steps"].as_array().expect("steps").iter().filter(|s| s["status"] == json!("done")).count();
    assert!((5..30).contains(&passes), "some passes were kept, not all: {passes}");
    let (_, shown) = home.json(&["show", &id]);
    assert_eq!((&shown["status"], &shown["error"]), (&json!("failed"), &json!(error)), "{shown}");

    let server = Server::start(&home);
    let (status, read) = server.get(&format!("/runs/{id}"));
    assert_eq!((status, &read["status"], &read["error"]), (200, &json!("failed"), &json!(error)), "{read}");
    assert_eq!(read["steps"], shown["steps"], "the CLI and the API read the same record");

    // A run that stays under the limit is untouched by it.
    let (_, small) = home.json(&["run", "growing", "--input", r#"{"items": [1, 2]}"#]);
    assert_eq!(small["status"], json!("done"), "{small}");
}

#[test]
fn files_a_run_that_would_pass_run_bytes_fails_cleanly_under_the_limit() {
    a_run_that_would_pass_run_bytes_fails_cleanly_under_the_limit(Backend::Files);
}

#[test]
fn postgres_a_run_that_would_pass_run_bytes_fails_cleanly_under_the_limit() {
    a_run_that_would_pass_run_bytes_fails_cleanly_under_the_limit(Backend::Postgres);
}
