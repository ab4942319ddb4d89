//! The PostgreSQL store on a real server (the throwaway cluster of `scripts/postgres`): the same
//! conformance checks as the file store, the binary end to end on a database, and the errors a
//! user gets at start for a wrong URL, a server that is down and a schema newer than the binary.

mod common;

use std::sync::Arc;

use common::Home;
use serde_json::json;
use sqlx::Connection;
use vwf::store::{PgSettings, PgStore, conformance};

fn store() -> PgStore {
    PgStore::connect(&PgSettings::new(common::pg::fresh_database())).expect("connect")
}

#[test]
fn the_postgres_store_keeps_every_store_promise() {
    conformance::store_round_trip(&store());
    conformance::design_stamps(&store());
    conformance::run_locks(Arc::new(store()), 4, 25);
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
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(async {
        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
        sqlx::query(
            "INSERT INTO vwf_schema_migrations (version, description, success, checksum, execution_time) \
             VALUES (99, 'from the future', true, '\\x00', 0)",
        )
        .execute(&mut conn)
        .await
        .expect("insert");
    });
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
