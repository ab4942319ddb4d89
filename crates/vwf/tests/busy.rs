//! The bound on run work in flight, over real sockets against the real `vwf serve`: with
//! `[server] runs_in_flight = 1`, a run whose command step blocks on a fifo until the test writes
//! to it holds the only slot. Meanwhile every run-starting or run-advancing request (run,
//! respond, retry) answers 503 with `Retry-After` and `{ok:false, error}` once the queue is full
//! or its wait is over, and writes nothing; reads, the probes and the metrics still answer. After
//! the release the held run finishes and new requests succeed. A test knows a request holds or
//! waits for a slot by reading the server's gauges (a bounded poll of a real process), never by
//! sleeping.

use crate::common;

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
        "POST {}/designs/small/run HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        common::server::PREFIX,
        server.token.as_deref().unwrap_or_default(),
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

/// What one request of a burst got: status, `Retry-After`, body.
type Answer = (u16, Option<String>, Value);

/// Sends `n` copies of a POST at once (a thread each) and answers them in the order they came
/// back. The one holding the slot blocks in the fifo, so the others come back first: they are
/// collected, then the fifo is released and the holder's answer is the last.
fn burst(server: &Server, n: usize, fifo: &Path, path: &str, body: Value) -> Vec<Answer> {
    let (tx, rx) = std::sync::mpsc::channel::<Answer>();
    // `/mcp` sits beside the API, at the root.
    let url = if path == "/mcp" { format!("{}{path}", server.base) } else { server.url(path) };
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (client, url, body, tx) = (server.client.clone(), url.clone(), body.clone(), tx.clone());
            std::thread::spawn(move || {
                let response =
                    client.post(url).header("accept", "application/json, text/event-stream").json(&body).send().expect("request");
                let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(String::from);
                let status = response.status().as_u16();
                let text = response.text().expect("body");
                let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("status {status}: not JSON ({e}): {text}"));
                tx.send((status, retry_after, body)).expect("the test listens");
            })
        })
        .collect();
    let wait = std::time::Duration::from_secs(60);
    let mut answers: Vec<Answer> = (1..n).map(|_| rx.recv_timeout(wait).expect("a refused request's answer")).collect();
    release(fifo);
    answers.push(rx.recv_timeout(wait).expect("the held request's answer"));
    for thread in threads {
        thread.join().expect("a request thread");
    }
    answers
}

/// Exactly one answer of the burst is the holder's (`ok`), every other a 503 with
/// `Retry-After: 1` whose `refusal` says the slots stayed taken.
fn one_ran_the_rest_refused(path: &str, answers: &[Answer], refusal: impl Fn(&Value) -> Option<&str>) -> Value {
    let (last, refused) = answers.split_last().expect("answers");
    assert_eq!(refused.len(), 7, "{path}: {answers:?}");
    for (status, retry_after, body) in refused {
        assert_eq!((*status, retry_after.as_deref()), (503, Some("1")), "{path}: {body}");
        let error = refusal(body).unwrap_or_else(|| panic!("{path}: no refusal in {body}"));
        assert!(error.contains("the server is busy: all 1 run slots stayed taken for 200 ms"), "{path}: {error}");
    }
    assert_eq!(last.0, 200, "{path}: {:?}", last.2);
    last.2.clone()
}

/// The API's refusal: exactly `{ok:false, error}`.
fn api_refusal(body: &Value) -> Option<&str> {
    (body.as_object().map(|o| o.len()) == Some(2) && body["ok"] == json!(false)).then(|| body["error"].as_str()).flatten()
}

/// Like [`held`], started by event `hold.go`.
fn held_by_event(fifo: &Path) -> Value {
    let mut design = held(fifo);
    design["nodes"][0] = json!({"id": "start", "type": "trigger", "mode": "event", "sources": ["hold.go"]});
    design
}

/// An approval gate, then [`held`]'s blocking step.
fn gate_then_held(fifo: &Path) -> Value {
    let mut design = held(fifo);
    let nodes = design["nodes"].as_array_mut().expect("nodes");
    nodes.insert(1, json!({"id": "gate", "type": "approval", "question": "Go?", "options": ["go"], "timeout_minutes": 600}));
    design["edges"] =
        json!([{"from": "start", "to": "gate"}, {"from": "gate", "to": "hold", "label": "go"}, {"from": "hold", "to": "out"}]);
    design
}

/// A step that fails until `marker` exists, then blocks on the fifo like [`held`]'s.
fn fails_then_held(fifo: &Path, marker: &Path) -> Value {
    let mut design = held(fifo);
    design["nodes"][1]["run"] =
        json!(format!("if [ -e '{}' ]; then read line < '{}'; printf '%s' \"$line\"; else exit 3; fi", marker.display(), fifo.display()));
    design
}

/// Every path that starts or drives a run, eight requests at once with one slot and a 200 ms
/// wait: the first to come holds the slot in a blocking step, the seven others answer 503 with
/// `Retry-After: 1` once their wait is over (the API's `{ok:false, error}`; on `/mcp` a JSON-RPC
/// error of the call's id), and the holder answers 200 once released. Nothing refused is run.
#[test]
fn eight_at_once_on_every_run_path_give_one_run_and_seven_503s() {
    let home = Home::new();
    let server = start(&home, "runs_in_flight = 1\nrun_queue_wait_ms = 200");
    let fifo = home.path().join("release.fifo");
    let marker = home.path().join("retry.marker");
    server.save("held-event", held_by_event(&fifo));
    server.save("gate-held", gate_then_held(&fifo));
    server.save("retry-held", fails_then_held(&fifo, &marker));

    // POST /designs/{name}/run
    let done = one_ran_the_rest_refused("run", &burst(&server, 8, &fifo, "/designs/held/run", json!({})), api_refusal);
    assert_eq!((&done["status"], &done["outputs"]["out"]["text"]), (&json!("done"), &json!("released: go")), "{done}");
    until_slots(&server, 0.0, 0.0);

    // POST /events/{name}: the event's runs hold its slot.
    let emitted =
        one_ran_the_rest_refused("events", &burst(&server, 8, &fifo, "/events/hold.go", json!({"payload": {"n": 1}})), api_refusal);
    let runs = emitted["runs"].as_array().expect("runs");
    assert_eq!((runs.len(), &runs[0]["status"], &runs[0]["design"]), (1, &json!("done"), &json!("held-event")), "{emitted}");
    until_slots(&server, 0.0, 0.0);

    // /mcp workflow_design_run: a JSON-RPC error with the call's id, on a 503 with Retry-After.
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "workflow_design_run", "arguments": {"name": "held"}}});
    let answers = burst(&server, 8, &fifo, "/mcp", call);
    let answered = one_ran_the_rest_refused("mcp", &answers, |body| {
        let error = &body["error"];
        (body["jsonrpc"] == json!("2.0")
            && body["id"] == json!(41)
            && error["code"] == json!(-32000)
            && error["data"] == json!({"retry_after": 1}))
        .then(|| error["message"].as_str())
        .flatten()
    });
    let result = &answered["result"]["structuredContent"];
    assert_eq!((&answered["id"], &result["status"]), (&json!(41), &json!("done")), "{answered}");
    until_slots(&server, 0.0, 0.0);

    // POST /runs/{run_id}/respond: the answer drives the run into the blocking step.
    let (status, parked) = server.post("/designs/gate-held/run", json!({}));
    assert_eq!((status, &parked["status"]), (200, &json!("awaiting_approval")), "{parked}");
    let id = parked["run_id"].as_str().expect("run_id").to_string();
    let path = format!("/runs/{id}/respond");
    let done = one_ran_the_rest_refused("respond", &burst(&server, 8, &fifo, &path, json!({"node": "gate", "answer": "go"})), api_refusal);
    assert_eq!((&done["run_id"], &done["status"]), (&json!(id), &json!("done")), "{done}");
    until_slots(&server, 0.0, 0.0);

    // POST /runs/{run_id}/retry: the retried step now blocks.
    let (status, failed) = server.post("/designs/retry-held/run", json!({}));
    assert_eq!((status, &failed["status"]), (200, &json!("failed")), "{failed}");
    std::fs::write(&marker, "").expect("marker");
    let id = failed["run_id"].as_str().expect("run_id").to_string();
    let done = one_ran_the_rest_refused("retry", &burst(&server, 8, &fifo, &format!("/runs/{id}/retry"), json!({})), api_refusal);
    assert_eq!((&done["run_id"], &done["status"]), (&json!(id), &json!("done")), "{done}");
    until_slots(&server, 0.0, 0.0);

    // One run per path, plus the parked and the failed run answered: nothing refused ran.
    let mut designs: Vec<String> = home
        .stored_run_ids()
        .iter()
        .map(|id| server.get(&format!("/runs/{id}")).1["design"].as_str().unwrap_or_default().to_string())
        .collect();
    designs.sort();
    assert_eq!(designs, ["gate-held", "held", "held", "held-event", "retry-held"]);
    assert_eq!(server.metric("vwf_http_runs_refused_busy_total"), 35.0);
}

/// A trigger fired by the server's daemon while every slot is taken waits for one (nobody could
/// be told to retry): it shows as queued, starts nothing meanwhile, and runs once the slot frees.
#[test]
fn a_daemon_trigger_waits_for_a_slot_instead_of_being_refused() {
    let home = Home::new();
    let server = start(&home, "runs_in_flight = 1\nrun_queue_wait_ms = 200");
    let fifo = home.path().join("release.fifo");
    let (status, started) = server.post("/designs/held/run", json!({"wait": false}));
    assert_eq!((status, &started["status"]), (200, &json!("running")), "{started}");
    until_slots(&server, 1.0, 0.0);

    // A watch trigger whose command prints one line: the daemon fires it, and waits.
    server.save(
        "watched",
        json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "watch", "command": "printf '{\"n\": 1}\\n'"},
            {"id": "out", "type": "output", "template": "seen {{trigger.n}}"}
        ], "edges": [{"from": "start", "to": "out"}]}),
    );
    until_slots(&server, 1.0, 1.0);
    assert_eq!(home.stored_run_ids().len(), 1, "the watch run waits for the slot");

    release(&fifo);
    let watched = eventually("the watch trigger's run", 60, || {
        let (_, listed) = server.get("/runs?design=watched");
        listed["runs"].as_array().and_then(|runs| runs.first().cloned()).filter(|run| run["status"] == json!("done"))
    });
    assert_eq!(watched["outputs"]["out"]["text"], json!("seen 1"), "{watched}");
    until_slots(&server, 0.0, 0.0);
    assert_eq!(server.metric("vwf_http_runs_refused_busy_total"), 0.0);
}
