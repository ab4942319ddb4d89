//! The http node as a user meets it: `vwf run` in a child process against a real local HTTP
//! server (wiremock, or a bare socket where wiremock cannot misbehave enough).
//!
//! The server lives on a multi-threaded tokio runtime owned by the test; the test thread itself
//! stays outside the runtime and blocks on the CLI while the runtime's workers answer requests.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::Home;
use common::peer::Peer;
use serde_json::{Value, json};
use wiremock::matchers::{body_json, body_string, header, method, path};
use wiremock::{Mock, ResponseTemplate};

/// A trigger and one http node `fetch` with `fields`, then whatever `rest` adds.
fn design(fields: Value, rest: &[Value], edges: &[Value]) -> Value {
    let mut fetch = json!({"id": "fetch", "type": "http"});
    for (k, v) in fields.as_object().expect("fields object") {
        fetch[k] = v.clone();
    }
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"}), fetch];
    nodes.extend_from_slice(rest);
    let mut all_edges = vec![json!({"from": "start", "to": "fetch"})];
    all_edges.extend_from_slice(edges);
    json!({"nodes": nodes, "edges": all_edges})
}

/// Saves `graph` as `name` and runs it with `input`; returns (exit code, run result).
fn run(home: &Home, name: &str, graph: &Value, input: &Value) -> (i32, Value) {
    home.save(name, graph);
    home.json(&["run", name, "--input", &input.to_string()])
}

fn assert_failed(code: i32, run: &Value, needle: &str) {
    assert_eq!((code, run["status"].as_str()), (1, Some("failed")), "{run}");
    assert_eq!(run["failed_node"], "fetch", "{run}");
    let error = run["error"].as_str().unwrap_or_else(|| panic!("no error in {run}"));
    assert!(error.contains(needle), "error {error:?} does not contain {needle:?}");
}

#[test]
fn json_response_is_parsed_into_the_output_view() {
    let peer = Peer::start();
    let items = json!({"count": 3, "items": [{"title": "a"}, {"title": "b"}, {"title": "c"}]});
    peer.mount(Mock::given(method("GET")).and(path("/items")).respond_with(ResponseTemplate::new(200).set_body_json(&items)).expect(1));
    let graph = design(
        json!({"url": peer.url("/items")}),
        &[
            json!({"id": "many", "type": "condition", "expr": "out.fetch.body.count > 2"}),
            json!({"id": "direct", "type": "condition", "expr": "out.fetch.count == 3"}),
            json!({"id": "report", "type": "output", "template": "HTTP {{nodes.fetch.status}}: {{nodes.fetch.count}} items, first {{nodes.fetch.body.items.0.title}}"}),
            json!({"id": "few", "type": "output", "template": "few"}),
        ],
        &[
            json!({"from": "fetch", "to": "many"}),
            json!({"from": "many", "to": "direct", "label": "true"}),
            json!({"from": "many", "to": "few", "label": "false"}),
            json!({"from": "direct", "to": "report", "label": "true"}),
        ],
    );
    let (code, run) = run(&Home::local_http(), "fetch-items", &graph, &Value::Null);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    let fetch = &run["outputs"]["fetch"];
    assert_eq!(fetch["status"], 200, "{fetch}");
    assert_eq!(fetch["body"], items);
    assert_eq!(fetch["data"], items);
    assert_eq!(fetch["headers"]["content-type"], "application/json");
    assert_eq!(run["outputs"]["report"]["text"], "HTTP 200: 3 items, first a");
    assert_eq!(run["skipped"], json!(["few"]));
    peer.verify();
}

#[test]
fn post_sends_a_json_body_with_templated_strings() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/notes"))
            .and(header("content-type", "application/json"))
            .and(body_json(json!({"title": "Tea", "tags": ["drink", "Tea"], "meta": {"by": "ann"}, "n": 5, "ok": true})))
            .respond_with(ResponseTemplate::new(201).set_body_json(json!({"id": 7})))
            .expect(1),
    );
    let graph = design(
        json!({
            "url": peer.url("/notes"),
            "method": "post",
            "body": {"title": "{{trigger.title}}", "tags": ["drink", "{{trigger.title}}"], "meta": {"by": "{{trigger.by}}"}, "n": 5, "ok": true}
        }),
        &[],
        &[],
    );
    let (code, run) = run(&Home::local_http(), "post-note", &graph, &json!({"title": "Tea", "by": "ann"}));
    assert_eq!((code, &run["outputs"]["fetch"]["status"]), (0, &json!(201)), "{run}");
    assert_eq!(run["outputs"]["fetch"]["body"], json!({"id": 7}), "{run}");
    peer.verify();
}

#[test]
fn string_body_is_sent_as_text() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("PUT"))
            .and(path("/greeting"))
            .and(header("content-type", "text/plain; charset=utf-8"))
            .and(body_string("Hello Ann, {\"not\": \"json\"}"))
            .respond_with(ResponseTemplate::new(204))
            .expect(1),
    );
    // A Content-Type given by the design wins over the default.
    peer.mount(
        Mock::given(method("PUT"))
            .and(path("/csv"))
            .and(header("content-type", "text/csv"))
            .and(body_string("name\nAnn"))
            .respond_with(ResponseTemplate::new(200).set_body_string("stored"))
            .expect(1),
    );
    let home = Home::local_http();
    let text =
        design(json!({"url": peer.url("/greeting"), "method": "PUT", "body": "Hello {{trigger.name}}, {\"not\": \"json\"}"}), &[], &[]);
    let (code, r) = run(&home, "greet", &text, &json!({"name": "Ann"}));
    assert_eq!((code, &r["outputs"]["fetch"]["status"], &r["outputs"]["fetch"]["text"]), (0, &json!(204), &json!("")), "{r}");

    let csv = design(
        json!({"url": peer.url("/csv"), "method": "PUT", "headers": {"Content-Type": "text/csv"}, "body": "name\n{{trigger.name}}"}),
        &[],
        &[],
    );
    let (code, r) = run(&home, "csv", &csv, &json!({"name": "Ann"}));
    assert_eq!((code, &r["outputs"]["fetch"]["body"]), (0, &json!("stored")), "{r}");
    assert_eq!(r["outputs"]["fetch"]["data"], Value::Null, "a text body has no data: {r}");
    peer.verify();
}

#[test]
fn headers_are_sent() {
    let peer = Peer::start();
    let agent = format!("visual-workflow/{}", env!("CARGO_PKG_VERSION"));
    peer.mount(
        Mock::given(method("GET"))
            .and(path("/me"))
            .and(header("authorization", "Bearer s3cret"))
            .and(header("x-trace", "run-abc"))
            .and(header("user-agent", agent.as_str()))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_string("hi")
                    .append_header("x-many", "a")
                    .append_header("x-many", "b")
                    .insert_header("X-Mixed-Case", "v"),
            )
            .expect(1),
    );
    let graph =
        design(json!({"url": peer.url("/me"), "headers": {"Authorization": "Bearer {{trigger.token}}", "X-Trace": "run-abc"}}), &[], &[]);
    let (code, run) = run(&Home::local_http(), "me", &graph, &json!({"token": "s3cret"}));
    assert_eq!(code, 0, "{run}");
    let headers = &run["outputs"]["fetch"]["headers"];
    assert_eq!(headers["x-many"], "a, b", "{headers}");
    assert_eq!(headers["x-mixed-case"], "v", "{headers}");
    assert!(headers.get("date").is_none(), "date is volatile and left out: {headers}");
    peer.verify();
}

#[test]
fn status_outside_accept_fails_the_run() {
    let peer = Peer::start();
    peer.mount(Mock::given(path("/missing")).respond_with(ResponseTemplate::new(404).set_body_string("no such thing")));
    let home = Home::local_http();

    let (code, r) = run(&home, "strict", &design(json!({"url": peer.url("/missing")}), &[], &[]), &Value::Null);
    assert_failed(code, &r, "HTTP 404 is not an accepted status (accept: 2xx)");
    assert!(r["error"].as_str().unwrap().contains("no such thing"), "the body's start is in the error: {r}");
    assert!(r["outputs"].get("fetch").is_none(), "{r}");

    for accept in [json!([404]), json!("4xx"), json!(["2xx", "400-404"])] {
        let (code, r) = run(&home, "lenient", &design(json!({"url": peer.url("/missing"), "accept": accept}), &[], &[]), &Value::Null);
        assert_eq!((code, &r["outputs"]["fetch"]["status"]), (0, &json!(404)), "accept {accept}: {r}");
        assert_eq!(r["outputs"]["fetch"]["text"], "no such thing");
    }

    let (code, r) = run(&home, "other", &design(json!({"url": peer.url("/missing"), "accept": [200, "5xx"]}), &[], &[]), &Value::Null);
    assert_failed(code, &r, "HTTP 404 is not an accepted status (accept: 200, 5xx)");
}

#[test]
fn redirects_are_followed_a_few_times() {
    let peer = Peer::start();
    peer.mount(Mock::given(path("/old")).respond_with(ResponseTemplate::new(301).insert_header("location", "/new")));
    peer.mount(Mock::given(path("/new")).respond_with(ResponseTemplate::new(200).set_body_string("moved here")));
    peer.mount(Mock::given(path("/loop")).respond_with(ResponseTemplate::new(302).insert_header("location", "/loop")));
    let home = Home::local_http();
    let (code, r) = run(&home, "moved", &design(json!({"url": peer.url("/old")}), &[], &[]), &Value::Null);
    assert_eq!((code, &r["outputs"]["fetch"]["text"]), (0, &json!("moved here")), "{r}");
    let (code, r) = run(&home, "looped", &design(json!({"url": peer.url("/loop")}), &[], &[]), &Value::Null);
    assert_failed(code, &r, "more than 5 redirects");
}

#[test]
fn a_slow_server_times_out() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(path("/slow")).respond_with(ResponseTemplate::new(200).set_body_string("late").set_delay(Duration::from_secs(3))),
    );
    let graph = design(json!({"url": peer.url("/slow"), "timeout_seconds": 1}), &[], &[]);
    let (code, r) = run(&Home::local_http(), "slow", &graph, &Value::Null);
    assert_failed(code, &r, "HTTP request timed out after 1 s");
}

#[test]
fn response_over_the_size_cap_fails() {
    let big = "x".repeat(1024 * 1024 + 100 * 1024);
    let peer = Peer::start();
    peer.mount(Mock::given(path("/big")).respond_with(ResponseTemplate::new(200).set_body_string(big.clone())));
    let home = Home::local_http();
    let (code, r) = run(&home, "big", &design(json!({"url": peer.url("/big")}), &[], &[]), &Value::Null);
    assert_failed(code, &r, "over the 1048576-byte limit for output kept inline");

    // Without a Content-Length the body is read up to the limit and no further.
    let url = chunked_server(big.into_bytes());
    let (code, r) = run(&home, "big-chunked", &design(json!({"url": url}), &[], &[]), &Value::Null);
    assert_failed(code, &r, "response body is over the 1048576-byte limit for output kept inline");

    // Exactly at the limit is fine.
    let exact = "y".repeat(1024 * 1024);
    peer.mount(Mock::given(path("/exact")).respond_with(ResponseTemplate::new(200).set_body_string(exact.clone())));
    let (code, r) = run(&home, "exact", &design(json!({"url": peer.url("/exact")}), &[], &[]), &Value::Null);
    assert_eq!((code, r["outputs"]["fetch"]["chars"].as_u64()), (0, Some(exact.len() as u64)), "{}", r["error"]);
}

#[test]
fn only_http_and_https_urls() {
    let home = Home::local_http();
    // A literal URL with another scheme is a design error: the save is refused.
    let graph = design(json!({"url": "file:///etc/passwd"}), &[], &[]);
    let (code, body) = home.json(&["save", "local-file", &graph.to_string()]);
    assert_ne!(code, 0, "{body}");
    assert_eq!(body["errors"][0]["node"], "fetch", "{body}");
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("http:// or https://"), "{body}");

    // A URL that only renders to another scheme at run time fails the step, and nothing is read.
    let graph = design(json!({"url": "{{trigger.url}}"}), &[], &[]);
    for url in ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1:70/"] {
        let (code, r) = run(&home, "templated", &graph, &json!({"url": url}));
        assert_failed(code, &r, "only http:// and https:// URLs can be fetched");
        assert!(!r.to_string().contains("root:"), "{r}");
    }
    let (code, r) = run(&home, "templated", &graph, &json!({"url": "no scheme at all"}));
    assert_failed(code, &r, "bad URL");
}

#[test]
fn typed_outputs_match_exactly_on_a_second_run() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST")).and(path("/echo")).respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"greeting": "hello", "n": [1, 2, 3]}))
                .append_header("x-many", "a")
                .append_header("x-many", "b"),
        ),
    );
    peer.mount(Mock::given(path("/text")).respond_with(ResponseTemplate::new(200).set_body_string("plain text\n")));
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "fetch", "type": "http", "method": "POST", "url": peer.url("/echo"), "body": {"who": "{{trigger.who}}"}},
            {"id": "text", "type": "http", "url": peer.url("/text")},
            {"id": "out", "type": "output", "template": "{{nodes.fetch.greeting}} {{nodes.text}}"}
        ],
        "edges": [
            {"from": "start", "to": "fetch"}, {"from": "fetch", "to": "text"}, {"from": "text", "to": "out"}
        ]
    });
    let home = Home::local_http();
    let input = json!({"who": "ann"});
    let (c1, first) = run(&home, "twice", &graph, &input);
    let (c2, second) = run(&home, "twice", &graph, &input);
    assert_eq!((c1, c2), (0, 0), "{first}\n{second}");
    assert_ne!(first["run_id"], second["run_id"]);
    assert_eq!(first["outputs"].to_string(), second["outputs"].to_string());
}

/// A one-shot HTTP/1.1 server on a bare socket that answers with a chunked body (no
/// Content-Length), so the client cannot know the size before reading. Returns its URL.
fn chunked_server(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/chunked", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else { return };
        let mut buf = [0u8; 4096];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
        for chunk in body.chunks(64 * 1024) {
            if stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).is_err()
                || stream.write_all(chunk).is_err()
                || stream.write_all(b"\r\n").is_err()
            {
                return; // the client stopped reading at the limit
            }
        }
        let _ = stream.write_all(b"0\r\n\r\n");
    });
    url
}

/// A secret that is not configured, or whose variable is not set, fails the step naming it; the
/// request is not sent.
#[test]
fn a_secret_without_a_value_fails_the_step_naming_it() {
    let peer = Peer::start();
    let home = Home::new();
    let config = format!("{}[secrets]\nKNOWN = \"VWF_T_UNSET_SECRET\"\n", common::LOCAL_HTTP);
    std::fs::write(home.path().join("visual-workflow.toml"), config).expect("config");
    for (reference, says) in [
        ("{{secrets.OTHER}}", "unknown secret \"OTHER\": configure it as [secrets] OTHER = \"<ENV_VAR>\""),
        ("{{secrets.KNOWN}}", "secret \"KNOWN\" has no value: its environment variable VWF_T_UNSET_SECRET is not set"),
    ] {
        let graph = design(json!({"url": peer.url("/x"), "headers": {"X-Api-Key": reference}}), &[], &[]);
        let (code, r) = run(&home, "needs-secret", &graph, &Value::Null);
        assert_failed(code, &r, says);
    }
    assert!(peer.requests().is_empty(), "a request went out without its secret");
}
