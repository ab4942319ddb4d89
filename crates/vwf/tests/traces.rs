//! Runs as OpenTelemetry traces, taken by a real OTLP/HTTP receiver: a local HTTP server whose
//! bodies are decoded with the `opentelemetry-proto` crate's `ExportTraceServiceRequest`, as a
//! collector decodes them. One trace per run, a span per step under the run's root span, the
//! GenAI attributes of an agent step, a run resumed by another server process in the same trace,
//! a caller's `traceparent` honoured, a child run under its design step's span, and nothing sent
//! (nor stored) when traces are off.

use std::collections::BTreeSet;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

use crate::common::peer::Peer;
use crate::common::server::{Options, Server, eventually, write_config};
use crate::common::{self, Home};

/// A caller's W3C trace context.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// The receiver (OTLP on `/v1/traces`) and an OpenAI-compatible server whose answers report a
/// full `usage`, on one local peer.
fn receiver() -> Peer {
    let peer = Peer::start();
    peer.mount(Mock::given(method("POST")).and(path("/v1/traces")).respond_with(ResponseTemplate::new(200)));
    peer
        .mount(Mock::given(method("POST")).and(path("/v1/chat/completions")).respond_with(ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "writer-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "a brief"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500, "prompt_tokens_details": {"cached_tokens": 200}}
    }))));
    peer
}

/// Every span the receiver took, in the order it took them; each request is checked to be an
/// OTLP protobuf export from the service `vwf`.
fn received(peer: &Peer) -> Vec<Span> {
    let mut spans = Vec::new();
    for request in peer.requests().into_iter().filter(|r| r.url.path() == "/v1/traces") {
        let kind = request.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        assert_eq!(kind, "application/x-protobuf");
        let export = ExportTraceServiceRequest::decode(request.body.as_slice()).expect("an OTLP trace export");
        for resource in export.resource_spans {
            let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
            let service = attributes.iter().find(|a| a.key == "service.name").and_then(|a| a.value.clone()).and_then(|v| v.value);
            assert_eq!(service, Some(Any::StringValue("vwf".into())));
            spans.extend(resource.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    spans
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attr(span: &Span, key: &str) -> Option<Any> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.clone()).and_then(|v| v.value)
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one span named {name}: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    found[0]
}

fn config(peer: &Peer) -> String {
    format!(
        "[agent]\nbackend = \"openai\"\nbase_url = \"{}/v1\"\ndefault_model = \"writer-model\"\n\n[telemetry]\notlp_endpoint = \"{}\"\n",
        peer.uri(),
        peer.uri()
    )
}

/// Short batches, so a server sends within a moment of a save (the receiver is polled for them).
fn quick_batches() -> Options<'static> {
    Options { env: vec![("OTEL_BSP_SCHEDULE_DELAY", "50".into())], ..Options::default() }
}

fn start(home: &Home) -> Server {
    Server::start_with(home, quick_batches())
}

/// The input of design `child`.
const WHO: &str = r#"{"who": "ada"}"#;

/// Design `child`: trigger → output `say`.
fn save_greeter(home: &Home) {
    let graph = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "say", "type": "output", "template": "hello {{trigger.who}}"}
    ], "edges": [{"from": "start", "to": "say"}]});
    home.save("child", &graph);
}

/// trigger → agent `draft` → gate → output `out` on `send`.
fn drafted() -> Value {
    json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "draft", "type": "agent", "prompt": "Summarise {{trigger.topic}}"},
        {"id": "gate", "type": "approval", "question": "Send it?", "options": ["send", "skip"]},
        {"id": "out", "type": "output", "template": "sent {{nodes.draft}}"}
    ], "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "gate"}, {"from": "gate", "to": "out", "label": "send"}]})
}

#[test]
fn a_run_resumed_by_another_server_sends_one_trace_under_its_callers_span() {
    let peer = receiver();
    let home = Home::new();
    write_config(&home, &config(&peer));
    let first = start(&home);
    first.save("drafted", drafted());
    let traceparent = format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01");
    let request =
        first.client.post(first.url("/designs/drafted/run")).header("traceparent", &traceparent).json(&json!({"input": {"topic": "x"}}));
    let (status, run) = common::server::send(request);
    assert_eq!((status, run["status"].as_str()), (200, Some("awaiting_approval")), "{run}");
    let id = run["run_id"].as_str().expect("run id").to_string();
    assert_eq!(run["trigger"]["trace"], json!({"trace_id": CALLER_TRACE, "parent_span_id": CALLER_SPAN}), "kept in the run");

    // The agent step's span arrives while the run waits at its gate; no root span yet.
    let before = eventually("the agent step's span", 30, || Some(received(&peer)).filter(|s| !s.is_empty()));
    assert_eq!(before.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["draft"]);
    assert_eq!(first.terminate(), Some(0), "a clean stop");

    // Another server process answers the gate: the rest of the run goes in the same trace.
    let second = start(&home);
    let (status, run) = second.post(&format!("/runs/{id}/respond"), json!({"node": "gate", "answer": "send"}));
    assert_eq!((status, run["status"].as_str()), (200, Some("done")), "{run}");
    let spans = eventually("the run's root span", 30, || Some(received(&peer)).filter(|s| s.iter().any(|s| s.name == "run drafted")));

    let names: BTreeSet<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["draft", "gate", "out", "run drafted"]));
    assert_eq!(spans.len(), 4, "one span per step attempt and one root: {names:?}");
    assert!(spans.iter().all(|s| hex(&s.trace_id) == CALLER_TRACE), "one trace, the caller's");
    let root = named(&spans, "run drafted");
    assert_eq!(hex(&root.parent_span_id), CALLER_SPAN, "the run is a child of the caller's span");
    for step in spans.iter().filter(|s| s.name != root.name) {
        assert_eq!(step.parent_span_id, root.span_id, "{} hangs under the run", step.name);
        assert!(step.start_time_unix_nano >= root.start_time_unix_nano && step.end_time_unix_nano <= root.end_time_unix_nano);
        assert_ne!(step.status.as_ref().map(|s| s.code), Some(StatusCode::Error as i32), "{}", step.name);
    }
    let ids: BTreeSet<Vec<u8>> = spans.iter().map(|s| s.span_id.clone()).collect();
    assert_eq!(ids.len(), spans.len(), "every span has an id of its own");

    // The agent step carries the GenAI attributes, from the backend's own answer.
    let draft = named(&spans, "draft");
    assert_eq!(attr(draft, "gen_ai.operation.name"), Some(Any::StringValue("chat".into())));
    assert_eq!(attr(draft, "gen_ai.request.model"), Some(Any::StringValue("writer-model".into())));
    assert_eq!(attr(draft, "gen_ai.response.model"), Some(Any::StringValue("writer-model".into())));
    assert_eq!(attr(draft, "gen_ai.usage.input_tokens"), Some(Any::IntValue(1000)));
    assert_eq!(attr(draft, "gen_ai.usage.output_tokens"), Some(Any::IntValue(500)));
    assert_eq!(attr(draft, "gen_ai.usage.cache_read.input_tokens"), Some(Any::IntValue(200)));
    assert_eq!(attr(draft, "vwf.node_type"), Some(Any::StringValue("agent".into())));
    assert_eq!(attr(root, "vwf.run_id"), Some(Any::StringValue(id.clone())));
    assert_eq!(attr(root, "vwf.status"), Some(Any::StringValue("done".into())));
    assert_eq!(attr(root, "gen_ai.usage.input_tokens"), Some(Any::IntValue(1000)));
}

#[test]
fn a_child_run_hangs_under_its_design_step_and_a_failed_step_says_why() {
    let peer = receiver();
    let home = Home::new();
    save_greeter(&home);
    home.save(
        "parent",
        &json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "sub", "type": "design", "design": "child", "input": {"who": "ada"}},
        {"id": "boom", "type": "command", "argv": ["sh", "-c", "echo broken >&2; exit 3"]}
    ], "edges": [{"from": "start", "to": "sub"}, {"from": "sub", "to": "boom"}]}),
    );
    // The standard variable, for a command that ends with the run: it sends before it exits.
    let out = home.vwf().env("OTEL_EXPORTER_OTLP_ENDPOINT", peer.uri()).args(["--json", "run", "parent"]).output().expect("run vwf");
    let run = common::parse(&out);
    assert_eq!(run["status"], "failed", "{run}");

    let spans = received(&peer);
    let parent = named(&spans, "run parent");
    let child = named(&spans, "run child");
    let sub = named(&spans, "sub");
    assert_eq!(hex(&parent.trace_id), run["trigger"]["trace"]["trace_id"].as_str().expect("a trace kept in the run"));
    assert!(parent.parent_span_id.is_empty(), "no caller: the run's root is the trace's root");
    assert!(spans.iter().all(|s| s.trace_id == parent.trace_id), "the child goes in its parent's trace");
    assert_eq!(child.parent_span_id, sub.span_id, "the child run hangs under its design step");
    assert_eq!(sub.parent_span_id, parent.span_id);
    assert_eq!(named(&spans, "say").parent_span_id, child.span_id);
    let boom = named(&spans, "boom");
    let status = boom.status.clone().expect("a status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(!status.message.is_empty(), "the error says why");
    assert_eq!(parent.status.clone().map(|s| s.code), Some(StatusCode::Error as i32), "the failed run's root too");
}

#[test]
fn with_traces_off_nothing_is_sent_nor_kept_and_a_bad_traceparent_is_ignored() {
    let peer = receiver();
    let home = Home::new();
    save_greeter(&home);
    let out = home.vwf().args(["--json", "run", "child", "--input", WHO]).output().expect("run vwf");
    let run = common::parse(&out);
    assert_eq!(run["status"], "done", "{run}");
    assert!(run["trigger"].get("trace").is_none(), "no trace kept: {run}");
    // The process has ended, so whatever it would have sent has been sent.
    assert!(received(&peer).is_empty());

    // The SDK's own switch wins over a configured endpoint.
    write_config(&home, &config(&peer));
    let out = home.vwf().env("OTEL_SDK_DISABLED", "true").args(["--json", "run", "child", "--input", WHO]).output().expect("run vwf");
    assert_eq!(common::parse(&out)["status"], "done");
    assert!(received(&peer).is_empty());

    // A malformed traceparent is ignored: the run starts a trace of its own.
    let server = start(&home);
    let request = server
        .client
        .post(server.url("/designs/child/run"))
        .header("traceparent", "00-zz-00f067aa0ba902b7-01")
        .json(&json!({"input": {"who": "ada"}}));
    let (status, run) = common::server::send(request);
    assert_eq!(status, 200, "{run}");
    let own = run["trigger"]["trace"]["trace_id"].as_str().expect("a trace of its own").to_string();
    assert!(run["trigger"]["trace"].get("parent_span_id").is_none(), "{run}");
    let spans = eventually("the run's spans", 30, || Some(received(&peer)).filter(|s| s.iter().any(|s| s.name == "run child")));
    assert!(spans.iter().all(|s| hex(&s.trace_id) == own));
}
