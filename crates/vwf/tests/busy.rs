//! The bound on run work in flight, over real sockets against the real `vwf serve`: with
//! `[server] runs_in_flight = 1`, a run whose command step blocks on a fifo until the test writes
//! to it holds the only slot. Meanwhile every run-starting or run-advancing request (run,
//! respond, retry) answers 503 with `Retry-After` and `{ok:false, error}` once the queue is full
//! or its wait is over, and writes nothing; reads, the probes and the metrics still answer. After
//! the release the held run finishes and new requests succeed. A test knows a request holds or
//! waits for a slot by reading the server's gauges (a bounded poll of a real process), never by
//! sleeping.

mod common;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use common::Home;
use common::server::{Options, Server, eventually, send, small, write_config};
use serde_json::{Value, json};

/// A design whose command step reads one line from `fifo` (blocking until someone writes it)
/// and prints it.
fn held(fifo: &Path) -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "hold", "type": "command", "run": format!("read line < '{}'; printf '%s' \"$line\"", fifo.display())},
        {"id": "out", "type": "output", "template": "released: {{nodes.hold.text}}"}
    ], "edges": [{"from": "start", "to": "hold"}, {"from": "hold", "to": "out"}]})
}

fn make_fifo(home: &Home) -> PathBuf {
    let fifo = home.path().join("release.fifo");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo: {}", std::io::Error::last_os_error());
    fifo
}

/// Lets the held command go on: writes its line once it has the fifo open for reading (opening
/// for writing without blocking fails until then).
fn release(fifo: &Path) {
    use std::io::Write;
    let mut writer = eventually("the held command to open the fifo", 60, || {
        std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(fifo).ok()
    });
    writer.write_all(b"go\n").expect("write to the fifo");
}

fn start(home: &Home, config: &str) -> Server {
    write_config(home, &format!("[server]\n{config}\n"));
    let server = Server::start_with(home, Options::default());
    server.save("held", held(&make_fifo(home)));
    server.save("small", small());
    server
}

/// Waits until `n` run requests hold a slot and `queued` wait for one.
fn until_slots(server: &Server, n: f64, queued: f64) {
    eventually(&format!("{n} runs in flight and {queued} queued"), 60, || {
        (server.metric("vwf_http_runs_in_flight") == n && server.metric("vwf_http_runs_queued") == queued).then_some(())
    });
}

/// A POST that must be refused as busy: 503, `Retry-After: 1`, the usual error body.
fn refused_busy(server: &Server, path: &str, body: Value) -> String {
    let response = server.authed(server.client.post(server.url(path)).json(&body)).send().expect("request");
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(String::from);
    let (status, body) = send_response(response);
    assert_eq!(status, 503, "{path}: {body}");
    assert_eq!(retry_after.as_deref(), Some("1"), "{path}: Retry-After");
    let error = body["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("busy"), "{path}: {body}");
    error
}

/// [`send`]'s checks on an answer already received.
fn send_response(response: reqwest::blocking::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().expect("body");
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("status {status}: not JSON ({e}): {text}"));
    if status >= 400 {
        assert_eq!(body.as_object().map(|o| o.len()), Some(2), "an error body is exactly {{ok, error}}: {body}");
        assert_eq!(body["ok"], false, "{body}");
    }
    (status, body)
}

/// The run routes beyond the bound: every one answers 503 after its (short) wait and writes
/// nothing; reads and probes answer 200 meanwhile; a `wait: false` run keeps its slot until it
/// ends; afterwards a new run succeeds.
#[test]
fn run_requests_beyond_the_bound_answer_503_and_reads_still_answer() {
    let home = Home::new();
    let server = start(&home, "runs_in_flight = 1\nrun_queue_wait_ms = 200");
    let fifo = home.path().join("release.fifo");

    // Answered at once (status running), driven on in the background, holding the slot.
    let (status, started) = server.post("/designs/held/run", json!({"wait": false}));
    assert_eq!((status, &started["status"]), (200, &json!("running")), "{started}");
    let held_id = started["run_id"].as_str().expect("run_id").to_string();
    until_slots(&server, 1.0, 0.0);

    let runs_before = home.stored_run_ids();
    let files_before = home.files();
    let missing = "0123456789ab";
    let refusals = [
        ("/designs/small/run", json!({"input": {"n": 7}})),
        ("/designs/small/run", json!({"input": {"n": 1}, "wait": false})),
        ("/designs/held/run", json!({})),
        (&*format!("/runs/{held_id}/respond"), json!({"node": "hold", "output": "x"})),
        (&*format!("/runs/{held_id}/retry"), json!({"from": "start"})),
        (&*format!("/runs/{missing}/retry"), json!({})),
    ]
    .map(|(path, body)| refused_busy(&server, path, body));
    assert!(refusals.iter().all(|e| e.contains("stayed taken for 200 ms")), "{refusals:?}");
    // Nothing written by a refused request: no run, no file of any kind.
    assert_eq!(home.stored_run_ids(), runs_before);
    assert_eq!(home.files(), files_before);
    assert_eq!(server.metric("vwf_http_runs_refused_busy_total"), refusals.len() as f64);

    // Reads, the probes and the metrics do not wait for a slot.
    let (status, listed) = server.get("/runs");
    assert_eq!((status, listed["runs"].as_array().map(Vec::len)), (200, Some(1)), "{listed}");
    let (status, run) = server.get(&format!("/runs/{held_id}"));
    assert_eq!((status, &run["status"]), (200, &json!("running")), "{run}");
    for probe in ["/healthz", "/readyz"] {
        let (status, body) = send(server.client.get(format!("{}{probe}", server.base)));
        assert_eq!((status, &body["ok"]), (200, &json!(true)), "{probe}: {body}");
    }
    let (status, designs) = server.get("/designs");
    assert_eq!(status, 200, "{designs}");

    release(&fifo);
    let done = eventually("the held run to finish", 60, || {
        let (_, run) = server.get(&format!("/runs/{held_id}"));
        (run["status"] == json!("done")).then_some(run)
    });
    assert_eq!(done["outputs"]["out"]["text"], json!("released: go"), "{done}");
    until_slots(&server, 0.0, 0.0);
    let (status, body) = server.post("/designs/small/run", json!({"input": {"n": 7}}));
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
    assert_eq!(home.stored_run_ids().len(), 2);
}

/// The queue: a request waits for the slot and runs once it is free; one more than the queue
/// holds is refused at once; a client that hangs up leaves the queue.
#[test]
fn a_queued_run_request_runs_when_the_slot_frees_and_a_full_queue_answers_503() {
    let home = Home::new();
    let server = start(&home, "runs_in_flight = 1\nrun_queue = 1\nrun_queue_wait_ms = 60000");
    let fifo = home.path().join("release.fifo");
    let (base, port) = (server.base.clone(), server.port);
    let post = |path: &'static str, body: Value| {
        let (client, url) = (server.client.clone(), format!("{base}{}{path}", common::server::PREFIX));
        std::thread::spawn(move || send(client.post(url).json(&body)))
    };

    // The first holds the slot (answered when the run is done).
    let held = post("/designs/held/run", json!({}));
    until_slots(&server, 1.0, 0.0);

    // A queued client that hangs up gives its place back.
    let mut gone = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let body = r#"{"input":{"n":3}}"#;
    let request = format!(
        "POST {}/designs/small/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        common::server::PREFIX,
        body.len()
    );
    std::io::Write::write_all(&mut gone, request.as_bytes()).expect("send");
    until_slots(&server, 1.0, 1.0);
    drop(gone);
    until_slots(&server, 1.0, 0.0);

    // The next waits in the queue; one more than the queue holds is refused at once.
    let queued = post("/designs/small/run", json!({"input": {"n": 9}}));
    until_slots(&server, 1.0, 1.0);
    let error = refused_busy(&server, "/designs/small/run", json!({"input": {"n": 2}}));
    assert!(error.contains("1 requests wait"), "{error}");
    assert_eq!(home.stored_run_ids().len(), 1, "only the held run is stored");

    release(&fifo);
    let (status, body) = held.join().expect("the held request");
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
    let (status, body) = queued.join().expect("the queued request");
    assert_eq!((status, &body["status"], &body["outputs"]["big"]["text"]), (200, &json!("done"), &json!("big 9")), "{body}");
    until_slots(&server, 0.0, 0.0);
    assert_eq!(server.metric("vwf_http_runs_refused_busy_total"), 1.0);
    assert_eq!(home.stored_run_ids().len(), 2);
}
