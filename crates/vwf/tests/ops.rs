//! Running vwf as a service: the probes a load balancer or service manager calls.
//!
//! `GET /healthz` (live) and `GET /readyz` (the store can be read) live at the root, outside the
//! API prefix, so they answer without the API token; readiness fails with 503 when the store
//! cannot be read.

use crate::common;

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
    let (status, _) = send(server.bare.get(server.url("/designs")));
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

#[test]
fn json_logs_have_one_line_per_request_with_its_route_status_and_duration() {
    let home = Home::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("stderr");
    write_config(&home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    let options = Options {
        token: Some(TOKEN),
        env: vec![("VWF_LOG_FORMAT", "json".into()), ("RUST_LOG", "info".into())],
        stderr: Some(&log),
        ..Options::default()
    };
    let server = Server::start_with(&home, options);
    let prefix = common::server::PREFIX;
    // (method, path, whether to send the token, expected status, expected route)
    let cases: &[(&str, &str, bool, u16, String)] = &[
        ("GET", "/healthz", false, 200, "/healthz".into()),
        ("GET", "/readyz", false, 200, "/readyz".into()),
        ("GET", &format!("{prefix}/designs"), true, 200, format!("{prefix}/designs")),
        ("GET", &format!("{prefix}/designs"), false, 401, "-".into()),
        ("GET", &format!("{prefix}/runs/000000000404"), true, 404, format!("{prefix}/runs/{{run_id}}")),
        ("POST", &format!("{prefix}/designs/x/run"), true, 404, format!("{prefix}/designs/{{name}}/run")),
        ("GET", "/no-such-page", false, 404, "-".into()),
    ];
    for (method, path, authed, status, _) in cases {
        let url = format!("{}{path}", server.base);
        let req = if *method == "GET" { server.bare.get(url) } else { server.bare.post(url).json(&serde_json::json!({})) };
        let req = if *authed { req.bearer_auth(TOKEN) } else { req };
        let res = req.send().expect("request");
        assert_eq!(res.status().as_u16(), *status, "{method} {path}");
    }
    let text = std::fs::read_to_string(&log).expect("read stderr");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("log line is not JSON ({e}): {l}")))
        .filter(|v: &serde_json::Value| v["message"] == "request")
        .collect();
    assert_eq!(lines.len(), cases.len(), "one line per request:\n{text}");
    for (line, (method, path, _, status, route)) in lines.iter().zip(cases) {
        assert_eq!(line["method"], *method, "{line}");
        assert_eq!(line["path"], *path, "{line}");
        assert_eq!(line["route"], route.as_str(), "{line}");
        assert_eq!(line["status"], *status, "{line}");
        assert_eq!(line["level"], "INFO", "{line}");
        assert!(line["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{line}");
        assert!(line["timestamp"].as_str().is_some(), "{line}");
    }
}
