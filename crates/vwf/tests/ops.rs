//! Running vwf as a service: the probes a load balancer or service manager calls.
//!
//! `GET /healthz` (live) and `GET /readyz` (the store can be read) live at the root, outside the
//! API prefix, so they answer without the API token; readiness fails with 503 when the store
//! cannot be read.

mod common;

use common::Home;
use common::server::{Options, Server, TOKEN_VAR, send, write_config};

const TOKEN: &str = "ops-test-token";

#[test]
fn probes_answer_without_the_token_that_the_api_requires() {
    let home = Home::new();
    write_config(&home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    let server = Server::start_with(&home, Options { token: Some(TOKEN), ..Options::default() });
    for probe in ["/healthz", "/readyz"] {
        let (status, body) = send(server.client.get(format!("{}{probe}", server.base)));
        assert_eq!((status, body), (200, serde_json::json!({"ok": true})), "{probe}");
    }
    // The API itself still requires it.
    let (status, _) = send(server.client.get(server.url("/designs")));
    assert_eq!(status, 401);
    assert_eq!(server.get("/designs").0, 200);
}

#[test]
fn readyz_is_503_while_the_store_cannot_be_read() {
    let home = Home::new();
    let server = Server::start(&home);
    let ready = || send(server.client.get(format!("{}/readyz", server.base)));
    assert_eq!(ready().0, 200);

    // The runs directory replaced by a file: the store is unreachable, the process still lives.
    let runs = home.runs_dir();
    let _ = std::fs::remove_dir_all(&runs);
    std::fs::write(&runs, "not a directory").expect("write");
    let (status, body) = ready();
    assert_eq!(status, 503, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("store")), "{body}");
    assert_eq!(send(server.client.get(format!("{}/healthz", server.base))).0, 200);

    // Repaired, it is ready again.
    std::fs::remove_file(&runs).expect("remove");
    std::fs::create_dir(&runs).expect("mkdir");
    assert_eq!(ready().0, 200);
}
