//! JSON nesting at every entry (SPEC §17, §18): JSON deeper than the limit is refused with a clear
//! 400 / exit 2 before anything is written, and whatever is written reads back — through `show`,
//! `GET /runs/{id}`, answering a parked gate and retrying — for every depth up to the limit + 1.

use crate::common;

use common::server::Server;
use common::{Home, snapshot};
use proptest::prelude::*;
use serde_json::{Value, json};
use vwf_core::limits::JSON_DEPTH;

/// A value `levels` deep, alternating arrays and objects, with `leaf` at the bottom.
fn nested(levels: usize, leaf: Value) -> Value {
    (0..levels).fold(leaf, |inner, i| if i % 2 == 0 { json!([inner]) } else { json!({ "k": inner }) })
}

/// The text of `nested(levels, leaf)`, built without a value tree (deep trees overflow the stack
/// of whoever serializes or drops them).
fn nested_text(levels: usize, leaf: &str) -> String {
    let open: String = (0..levels).rev().map(|i| if i % 2 == 0 { "[" } else { "{\"k\":" }).collect();
    let close: String = (0..levels).map(|i| if i % 2 == 0 { ']' } else { '}' }).collect();
    format!("{open}{leaf}{close}")
}

/// A design whose trigger feeds a gate (so a run parks with its input kept) and a command that
/// prints JSON `depth` deep.
fn design(print_depth: usize) -> Value {
    let printed = nested_text(print_depth, "\"leaf\"");
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "deep", "type": "command", "run": format!("printf '%s' '{printed}'")},
        {"id": "gate", "type": "approval", "question": "ok?"},
        {"id": "out", "type": "output"}
    ], "edges": [{"from": "start", "to": "deep"}, {"from": "deep", "to": "gate"}, {"from": "gate", "to": "out"}]})
}

fn run_with_input(home: &Home, name: &str, input: &Value) -> (i32, Value) {
    let out = home.vwf().args(["--json", "run", name, "--input", "-"]).write_stdin(input.to_string()).output().expect("vwf");
    (common::code(&out), common::parse(&out))
}

/// Reads a run back every way a user can, and answers its gate: every step must succeed.
fn read_back_and_answer(home: &Home, run_id: &str) {
    let (code, shown) = home.json(&["show", run_id]);
    assert_eq!(code, 6, "a parked run reads back: {shown}");
    let (code, listed) = home.json(&["runs", "--limit", "5"]);
    assert_eq!(code, 0, "{listed}");
    assert!(listed.to_string().contains(run_id), "{listed}");
    let (code, answered) = home.json(&["approve", run_id, "gate", "approve"]);
    assert_eq!(code, 0, "the gate can be answered: {answered}");
    assert_eq!(answered["status"], "done", "{answered}");
    let (code, shown) = home.json(&["show", run_id]);
    assert_eq!(code, 0, "{shown}");
}

#[test]
fn inputs_up_to_the_limit_run_and_read_back_and_deeper_are_refused_writing_nothing() {
    let home = Home::new();
    home.save("nest", &design(1));
    // The run file wraps the input a few levels deep; the limit leaves room for that.
    for levels in [0, 1, JSON_DEPTH - 1, JSON_DEPTH] {
        let (code, run) = run_with_input(&home, "nest", &json!({"x": nested(levels - levels.min(1), json!(1))}));
        assert_eq!(code, 6, "depth {levels}: {run}");
        read_back_and_answer(&home, run["run_id"].as_str().expect("run id"));
    }
    let before = snapshot(&home);
    for levels in [JSON_DEPTH + 1, 100, 126, 127, 128, 129, 1000] {
        let deep = nested_text(levels, "1");
        let out = home.vwf().args(["--json", "run", "nest", "--input", "-"]).write_stdin(deep.clone()).output().expect("vwf");
        let body = common::parse(&out);
        assert_eq!(common::code(&out), 2, "depth {levels}: {body}");
        assert!(body["error"].as_str().unwrap_or_default().contains("nested deeper than 64"), "{body}");
        // The same through the tool layer, an event payload, and a saved design.
        let (code, body) = home.json(&["tool", "workflow_design_run", &format!("{{\"name\":\"nest\",\"input\":{deep}}}")]);
        assert_eq!(code, 2, "tool, depth {levels}: {body}");
        let out = home.vwf().args(["--json", "emit", "ping", "--payload", "-"]).write_stdin(deep.clone()).output().expect("vwf");
        assert_eq!(common::code(&out), 2, "emit, depth {levels}: {}", common::parse(&out));
        let graph = format!(
            "{{\"nodes\": [{{\"id\": \"start\", \"type\": \"trigger\", \"mode\": \"manual\", \"extra\": {deep}}}], \"edges\": []}}"
        );
        let out = home.vwf().args(["--json", "save", "deep-design", "-"]).write_stdin(graph).output().expect("vwf");
        assert_eq!(common::code(&out), 2, "save, depth {levels}: {}", common::parse(&out));
        let out = home.vwf().args(["slash", &format!("/workflow run nest {deep}")]).output().expect("vwf");
        assert!(String::from_utf8_lossy(&out.stdout).contains("nested deeper than 64"), "{out:?}");
    }
    assert_eq!(snapshot(&home), before, "a refused request wrote something");
}

/// A manual design whose trigger carries `value` as an extra field.
fn graph_text_with(value: &str) -> String {
    format!("{{\"nodes\": [{{\"id\": \"start\", \"type\": \"trigger\", \"mode\": \"manual\", \"extra\": {value}}}], \"edges\": []}}")
}

/// A surface that wraps a value in an arguments object (`{"name", "graph"}`, `{"input"}`) holds the
/// value to the limit, not the wrapper: a graph or input exactly at the limit is accepted by the
/// CLI, the tool layer and the chat command alike, reads back, and one level deeper is refused by all.
#[test]
fn a_value_at_the_limit_passes_every_surface_that_wraps_it_as_an_argument() {
    let home = Home::new();
    home.save("nest", &design(1));
    for graph_depth in [JSON_DEPTH - 1, JSON_DEPTH, JSON_DEPTH + 1] {
        // The graph's own three levels (object, node list, node) around the extra value.
        let graph = graph_text_with(&nested_text(graph_depth - 3, "1"));
        let accepted = graph_depth <= JSON_DEPTH;
        let want = if accepted { 0 } else { 2 };
        let before = snapshot(&home);
        let out = home.vwf().args(["--json", "save", "by-cli", "-"]).write_stdin(graph.clone()).output().expect("vwf");
        assert_eq!(common::code(&out), want, "save, depth {graph_depth}: {}", common::parse(&out));
        let out = home.vwf().args(["--json", "validate", "-"]).write_stdin(graph.clone()).output().expect("vwf");
        assert_eq!(common::code(&out), want, "validate, depth {graph_depth}: {}", common::parse(&out));
        let (code, body) = home.json(&["tool", "workflow_design_save", &format!("{{\"name\": \"by-tool\", \"graph\": {graph}}}")]);
        assert_eq!(code, want, "tool save, depth {graph_depth}: {body}");
        if accepted {
            for name in ["by-cli", "by-tool"] {
                let (code, opened) = home.json(&["open", name]);
                assert_eq!(code, 0, "{name} at depth {graph_depth} reads back: {opened}");
                assert_eq!(vwf_core::json::depth(&opened["graph"]), graph_depth, "{opened}");
            }
        } else {
            assert!(body["error"].as_str().unwrap_or_default().contains("nested deeper than 64"), "{body}");
            assert_eq!(snapshot(&home), before, "a refused save wrote something");
        }
        // An input at the depth, through the tool layer and the chat command.
        let input = nested_text(graph_depth, "1");
        let (code, run) = home.json(&["tool", "workflow_design_run", &format!("{{\"name\": \"nest\", \"input\": {input}}}")]);
        assert_eq!(code, if accepted { 6 } else { 2 }, "tool run, depth {graph_depth}: {run}");
        if accepted {
            read_back_and_answer(&home, run["run_id"].as_str().expect("run id"));
        }
        let out = home.vwf().args(["--json", "slash", &format!("/workflow run nest {input}")]).output().expect("vwf");
        let reply = common::parse(&out)["reply"].as_str().unwrap_or_default().to_string();
        assert_eq!(!reply.contains("nested deeper than 64"), accepted, "slash, depth {graph_depth}: {reply}");
    }
}

#[test]
fn a_step_printing_json_deeper_than_the_limit_keeps_it_as_text_and_the_run_reads_back() {
    let home = Home::new();
    for levels in [JSON_DEPTH, JSON_DEPTH + 1, 126, 127, 200, 5000] {
        home.save("printer", &design(levels));
        let (code, run) = run_with_input(&home, "printer", &Value::Null);
        assert_eq!(code, 6, "depth {levels}: {run}");
        let deep = &run["outputs"]["deep"];
        assert_eq!(deep["text"], nested_text(levels, "\"leaf\""), "the text is kept byte for byte");
        assert_eq!(deep["data"].is_null(), levels > JSON_DEPTH, "depth {levels}: data {}", deep["data"]);
        read_back_and_answer(&home, run["run_id"].as_str().expect("run id"));
    }
}

/// POSTs `body` as it is (deep JSON is sent as text, never built as a value tree) to `vwf serve`,
/// with the token the server made (read from its file, as a client on this machine does).
fn post(server: &Server, path: &str, body: String) -> (u16, Value) {
    let response = server.client.post(server.url(path)).header("content-type", "application/json").body(body).send().expect("request");
    let status = response.status().as_u16();
    (status, response.json().expect("every answer is JSON"))
}

#[test]
fn http_bodies_deeper_than_the_limit_or_only_whitespace_are_bad_requests() {
    // `vwf serve` as a child process (killed when dropped): a server in this process would take
    // SIGINT and SIGTERM and raise the open file limit for every test of the binary.
    let home = Home::new();
    let server = Server::start(&home);
    let (status, body) = post(&server, "/designs/web", json!({"graph": design(1)}).to_string());
    assert_eq!(status, 200, "{body}");
    for levels in [JSON_DEPTH, 126, 127, 129, 1000] {
        for path in ["/designs/web/run", "/events/ping", "/designs/web", "/designs/web/validate"] {
            let deep = nested_text(levels, "1");
            let body = format!("{{\"input\": {deep}, \"payload\": {deep}, \"graph\": {deep}}}");
            let (status, answer) = post(&server, path, body);
            assert_eq!(status, 400, "{path} depth {levels}: {answer}");
            assert!(answer["error"].as_str().unwrap_or_default().contains("nested deeper than 64"), "{answer}");
        }
    }
    for blank in [" ", "\n", "\t \r\n "] {
        let (status, answer) = post(&server, "/designs/web/run", blank.to_string());
        assert_eq!(status, 400, "{blank:?}: {answer}");
        assert_eq!(answer["ok"], false);
    }
    // At the limit the run is written and reads back over HTTP.
    let (status, run) = post(&server, "/designs/web/run", json!({"input": nested(JSON_DEPTH - 1, json!(1))}).to_string());
    assert_eq!(status, 200, "{run}");
    let id = run["run_id"].as_str().expect("run id");
    let read = server.client.get(server.url(&format!("/runs/{id}"))).send().expect("get");
    assert_eq!(read.status().as_u16(), 200);
    let (status, answered) = post(&server, &format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "approve"}).to_string());
    assert_eq!(status, 200, "{answered}");
    assert_eq!(answered["status"], "done", "{answered}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 32, ..ProptestConfig::default() })]

    /// Whatever a write path accepts, the read path loads: random shapes at every depth up to the
    /// limit + 1, as run input (kept in the run file and the index) and as a saved design.
    #[test]
    fn whatever_is_written_reads_back(levels in 0usize..=JSON_DEPTH + 1, width in 1usize..4, text in "\\PC{0,20}") {
        let home = Home::new();
        let leaf = json!({"s": text, "n": [1.5, -2, null, true]});
        // One branch goes `levels` deep; siblings at the top give the value some width.
        let value = (0..levels).fold(leaf, |inner, i| {
            if i % 2 == 0 { json!([inner, i]) } else { json!({ "k": inner, "t": i }) }
        });
        let value = if levels > 0 && width > 1 && value.is_array() {
            let mut items = value.as_array().cloned().unwrap_or_default();
            items.extend((1..width).map(|w| json!({ "w": w })));
            Value::Array(items)
        } else {
            value
        };
        let depth = vwf_core::json::depth(&value);
        home.save("nest", &design(1));
        let (code, run) = run_with_input(&home, "nest", &value);
        if depth > JSON_DEPTH {
            prop_assert_eq!(code, 2, "{}", run);
        } else {
            prop_assert_eq!(code, 6, "{}", run);
            let id = run["run_id"].as_str().expect("run id");
            let (code, shown) = home.json(&["show", id]);
            prop_assert_eq!(code, 6, "{}", shown);
            prop_assert_eq!(&shown["trigger"]["input"], &value);
        }
        let graph = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual", "extra": value}], "edges": []});
        let out = home.vwf().args(["--json", "save", "d", "-"]).write_stdin(graph.to_string()).output().expect("vwf");
        let graph_depth = vwf_core::json::depth(&graph);
        if graph_depth > JSON_DEPTH {
            prop_assert_eq!(common::code(&out), 2);
        } else {
            prop_assert_eq!(common::code(&out), 0, "{}", common::parse(&out));
            let (code, opened) = home.json(&["open", "d"]);
            prop_assert_eq!(code, 0, "{}", opened);
        }
    }
}

#[test]
fn a_payload_at_the_limit_starts_its_listeners_and_a_failed_deep_run_can_be_retried() {
    let home = Home::new();
    home.save(
        "listener",
        &json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "event", "sources": ["deep.ping"]},
            {"id": "fail", "type": "command", "run": "exit 3"}
        ], "edges": [{"from": "start", "to": "fail"}]}),
    );
    let payload = nested_text(JSON_DEPTH, "\"x\"");
    let out = home.vwf().args(["--json", "emit", "deep.ping", "--payload", "-"]).write_stdin(payload).output().expect("vwf");
    let emitted = common::parse(&out);
    assert_eq!(emitted["ok"], true, "{emitted}");
    let run_id = emitted["runs"][0]["run_id"].as_str().unwrap_or_else(|| panic!("the listener ran: {emitted}")).to_string();
    assert_eq!(emitted["runs"][0]["status"], "failed", "{emitted}");
    let (code, retried) = home.json(&["run", "retry", &run_id]);
    assert_eq!(code, 1, "the retry runs and fails again, readably: {retried}");
    assert_eq!(retried["status"], "failed", "{retried}");
    let (code, shown) = home.json(&["show", &run_id]);
    assert_eq!(code, 1, "{shown}");
}

#[test]
fn an_input_near_the_size_limit_at_the_depth_limit_reads_back() {
    let home = Home::new();
    home.save("nest", &design(1));
    let big = "é".repeat(450_000);
    let input = format!("{{\"x\": {}}}", nested_text(JSON_DEPTH - 1, &serde_json::to_string(&big).expect("string")));
    assert!(input.len() > 900_000 && input.len() < vwf_core::limits::REQUEST_BODY_BYTES);
    let out = home.vwf().args(["--json", "run", "nest", "--input", "-"]).write_stdin(input).output().expect("vwf");
    let run = common::parse(&out);
    assert_eq!(common::code(&out), 6, "{}", run["error"]);
    read_back_and_answer(&home, run["run_id"].as_str().expect("run id"));
}
