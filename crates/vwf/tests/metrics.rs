//! Running vwf as a service, observed: one log line per run transition (`vwf run` and `vwf serve`,
//! with `VWF_LOG_FORMAT=json`) and `GET /metrics` in the Prometheus text format, behind the token.
//!
//! Everything goes through the real binary and a real socket. Metrics are compared before and
//! after what a test does (never as hard-coded totals), read with a parser of the text format
//! that also checks its syntax.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::server::{Options, PREFIX, Server, TOKEN_VAR, send, write_config};
use common::{Home, failing};
use serde_json::{Value, json};

const TOKEN: &str = "metrics-test-token";

/// trigger → command → output.
fn fine() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "work", "type": "command", "run": "echo hi"},
            {"id": "out", "type": "output", "template": "{{nodes.work}}"}
        ],
        "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "out"}]
    })
}

/// trigger → approval gate → command → output: parks `awaiting_approval`, then runs on.
fn gated() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "gate", "type": "approval", "question": "Go?", "options": ["go", "stop"], "timeout_minutes": 600},
            {"id": "work", "type": "command", "run": "echo went"},
            {"id": "out", "type": "output", "template": "{{nodes.work}}"}
        ],
        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "work", "label": "go"}, {"from": "work", "to": "out"}]
    })
}

// ---- log lines ----

/// The `run transition` lines of a JSON log, each checked to carry its run id, design, status
/// and event; keyed by nothing, in order.
fn transitions(log: &str) -> Vec<Value> {
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("log line is not JSON ({e}): {l}")))
        .filter(|v: &Value| v["message"] == "run transition")
        .collect();
    for line in &lines {
        for key in ["run_id", "design", "status", "event", "timestamp"] {
            assert!(line[key].as_str().is_some_and(|s| !s.is_empty()), "no {key} in {line}");
        }
        assert_eq!(line["level"], "INFO", "{line}");
    }
    lines
}

fn events_of(lines: &[Value], run_id: &str) -> Vec<String> {
    lines.iter().filter(|l| l["run_id"] == run_id).map(|l| l["event"].as_str().unwrap_or_default().to_string()).collect()
}

#[test]
fn vwf_run_logs_one_json_line_per_transition_when_asked() {
    let home = Home::new();
    home.save("fine", &fine());
    home.save("boom", &failing());
    // Without the log variables, standard error is the progress display only.
    let quiet = home.vwf().args(["--json", "run", "fine"]).output().expect("run");
    assert!(transitions(&String::from_utf8_lossy(&quiet.stderr)).is_empty());

    let cases = [
        ("fine", 0, "done", vec!["started", "step_started", "step_done", "step_done", "done"]),
        ("boom", 1, "failed", vec!["started", "step_started", "step_failed", "failed"]),
    ];
    for (design, code, status, events) in cases {
        let out = home.vwf().env("VWF_LOG_FORMAT", "json").env_remove("RUST_LOG").args(["--json", "run", design]).output().expect("run");
        let result = common::parse(&out);
        assert_eq!(common::code(&out), code, "{result}");
        let run_id = result["run_id"].as_str().expect("run_id");
        let lines = transitions(&String::from_utf8_lossy(&out.stderr));
        assert!(!lines.is_empty(), "no run transition lines:\n{}", String::from_utf8_lossy(&out.stderr));
        for line in &lines {
            assert_eq!((line["run_id"].as_str(), line["design"].as_str()), (Some(run_id), Some(design)), "{line}");
        }
        assert_eq!(events_of(&lines, run_id), events, "{design}");
        let last = lines.last().expect("a line");
        assert_eq!(last["status"], status, "{last}");
        // Step lines name the step and its node type; a failure carries its error.
        let step = lines.iter().find(|l| l["event"] == "step_started").expect("a step line");
        assert_eq!(step["node_type"], "command", "{step}");
        if status == "failed" {
            assert!(last["error"].as_str().is_some_and(|e| e.contains("exit")), "{last}");
            let failed = lines.iter().find(|l| l["event"] == "step_failed").expect("step_failed");
            assert_eq!((failed["node"].as_str(), failed["attempt"].as_u64()), (Some("boom"), Some(1)), "{failed}");
            assert!(failed["duration_ms"].as_f64().is_some_and(|d| d >= 0.0), "{failed}");
        }
    }
}

#[test]
fn vwf_serve_logs_a_parked_run_resumed_and_done() {
    let home = Home::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("stderr");
    let options =
        Options { env: vec![("VWF_LOG_FORMAT", "json".into()), ("RUST_LOG", "info".into())], stderr: Some(&log), ..Options::default() };
    let server = Server::start_with(&home, options);
    server.save("gated", gated());
    let run_id = server.run_id("gated", json!({}));
    let parked = events_of(&transitions(&read(&log)), &run_id);
    assert_eq!(parked, ["started", "step_parked", "parked"]);

    let (status, body) = server.post(&format!("/runs/{run_id}/respond"), json!({"node": "gate", "answer": "go"}));
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
    let lines = transitions(&read(&log));
    let events = events_of(&lines, &run_id);
    assert_eq!(events[parked.len()..], ["step_done", "resumed", "step_started", "step_done", "step_done", "done"]);
    let statuses: Vec<&str> =
        lines.iter().filter(|l| l["run_id"] == run_id.as_str()).map(|l| l["status"].as_str().unwrap_or_default()).collect();
    assert_eq!(statuses[..3], ["running", "awaiting_approval", "awaiting_approval"]);
    assert_eq!(statuses.last(), Some(&"done"));
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read the log")
}

// ---- metrics ----

/// One sample: metric name and its labels.
type Key = (String, BTreeMap<String, String>);

/// Parses the Prometheus text format (0.0.4), checking its syntax: every sample belongs to a
/// family announced by `# TYPE` before it, names and labels are well formed, values are numbers,
/// and no sample repeats.
fn parse_metrics(text: &str) -> BTreeMap<Key, f64> {
    let mut samples = BTreeMap::new();
    let mut families: BTreeMap<String, String> = BTreeMap::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().enumerate().all(|(i, c)| c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit()))
    };
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("bad TYPE line: {line}"));
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(families.insert(name.to_string(), kind.to_string()).is_none(), "family announced twice: {line}");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        assert!(!line.starts_with('#'), "unexpected comment: {line}");
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("bad sample: {line}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value: {line}"));
        let (name, labels) = match series.split_once('{') {
            None => (series, BTreeMap::new()),
            Some((name, rest)) => (name, parse_labels(rest.strip_suffix('}').unwrap_or_else(|| panic!("bad labels: {line}")))),
        };
        assert!(name_ok(name), "bad metric name: {line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| families.get(*f).is_some_and(|k| k == "histogram")));
        assert!(families.contains_key(family.unwrap_or(name)), "sample before its TYPE line: {line}");
        assert!(samples.insert((name.to_string(), labels), value).is_none(), "repeated sample: {line}");
    }
    samples
}

/// `a="x",b="y \"quoted\""` → {a: x, b: y "quoted"}.
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("bad label in {text}"));
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => panic!("bad escape in {text}"),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => panic!("unterminated label value in {text}"),
            }
        };
        assert!(labels.insert(key.to_string(), value).is_none(), "repeated label in {text}");
        rest = after[end + 1..].strip_prefix(',').unwrap_or(&after[end + 1..]);
    }
    labels
}

struct Scrape(BTreeMap<Key, f64>);

impl Scrape {
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.0.get(&(name.to_string(), labels)).copied().unwrap_or(0.0)
    }

    /// Every label value of every sample.
    fn label_values(&self) -> Vec<&str> {
        self.0.keys().flat_map(|(_, labels)| labels.values().map(String::as_str)).collect()
    }
}

fn scrape(server: &Server) -> Scrape {
    let res = server.authed(server.client.get(server.url("/metrics"))).send().expect("scrape");
    assert_eq!(res.status().as_u16(), 200);
    let kind = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    assert_eq!(kind, "text/plain; version=0.0.4; charset=utf-8");
    Scrape(parse_metrics(&res.text().expect("body")))
}

fn secured(home: &Home) -> Server {
    write_config(home, &format!("[server]\ntoken_env = \"{TOKEN_VAR}\"\n"));
    Server::start_with(home, Options { token: Some(TOKEN), ..Options::default() })
}

#[test]
fn metrics_move_after_a_done_a_failed_and_a_parked_run() {
    let home = Home::new();
    let server = secured(&home);
    for (name, graph) in [("fine", fine()), ("boom", failing()), ("gated", gated())] {
        server.save(name, graph);
    }
    let before = scrape(&server);
    let runs: Vec<(String, Value)> = ["fine", "boom", "gated"]
        .iter()
        .map(|design| {
            let (status, body) = server.post(&format!("/designs/{design}/run"), json!({}));
            assert_eq!(status, 200, "{body}");
            (design.to_string(), body)
        })
        .collect();
    let statuses: Vec<&str> = runs.iter().map(|(_, body)| body["status"].as_str().unwrap_or_default()).collect();
    assert_eq!(statuses, ["done", "failed", "awaiting_approval"]);
    let after = scrape(&server);
    let delta = |name: &str, labels: &[(&str, &str)]| after.get(name, labels) - before.get(name, labels);

    for design in ["fine", "boom", "gated"] {
        assert_eq!(delta("vwf_runs_started_total", &[("design", design)]), 1.0, "{design}");
    }
    assert_eq!(delta("vwf_runs_done_total", &[("design", "fine")]), 1.0);
    assert_eq!(delta("vwf_runs_failed_total", &[("design", "boom")]), 1.0);
    for (design, counter) in [
        ("fine", "vwf_runs_failed_total"),
        ("boom", "vwf_runs_done_total"),
        ("gated", "vwf_runs_done_total"),
        ("gated", "vwf_runs_failed_total"),
    ] {
        assert_eq!(delta(counter, &[("design", design)]), 0.0, "{counter} {design}");
    }
    assert_eq!(delta("vwf_runs_parked", &[("status", "awaiting_approval")]), 1.0);
    assert_eq!(delta("vwf_runs_parked", &[("status", "waiting")]), 0.0);

    // Step durations by node type and how the attempt ended: every observation in the +Inf bucket.
    let steps = "vwf_step_duration_seconds";
    for (node_type, ended, n) in [("command", "done", 1.0), ("command", "failed", 1.0), ("output", "done", 1.0), ("approval", "done", 0.0)]
    {
        let labels = [("node_type", node_type), ("status", ended)];
        assert_eq!(delta(&format!("{steps}_count"), &labels), n, "{node_type} {ended}");
        let inf = [("node_type", node_type), ("status", ended), ("le", "+Inf")];
        assert_eq!(delta(&format!("{steps}_bucket"), &inf), n, "{node_type} {ended}");
        assert!(delta(&format!("{steps}_sum"), &labels) >= 0.0);
    }
    // Every save of a run was timed: at least two a run (created, then settled).
    let writes = delta("vwf_run_write_duration_seconds_count", &[]);
    assert!(writes >= 6.0, "{writes} writes timed");
    assert_eq!(delta("vwf_run_write_duration_seconds_bucket", &[("le", "+Inf")]), writes);
    assert!(delta("vwf_run_write_duration_seconds_sum", &[]) > 0.0);
    let run_route = format!("{PREFIX}/designs/{{name}}/run");
    assert_eq!(delta("vwf_http_requests_total", &[("method", "POST"), ("route", &run_route), ("status", "200")]), 3.0);

    // The parked run answered: it is no longer parked, and it ends done.
    let gated_id = runs[2].1["run_id"].as_str().expect("run_id");
    let (status, body) = server.post(&format!("/runs/{gated_id}/respond"), json!({"node": "gate", "answer": "go"}));
    assert_eq!((status, &body["status"]), (200, &json!("done")), "{body}");
    let answered = scrape(&server);
    assert_eq!(
        answered.get("vwf_runs_parked", &[("status", "awaiting_approval")]),
        before.get("vwf_runs_parked", &[("status", "awaiting_approval")])
    );
    assert_eq!(
        answered.get("vwf_runs_done_total", &[("design", "gated")]) - before.get("vwf_runs_done_total", &[("design", "gated")]),
        1.0
    );
    let approval = [("node_type", "approval"), ("status", "done")];
    assert_eq!(answered.get(&format!("{steps}_count"), &approval) - before.get(&format!("{steps}_count"), &approval), 1.0);
    assert_eq!(answered.get("vwf_runs_started_total", &[("design", "gated")]), after.get("vwf_runs_started_total", &[("design", "gated")]));
}

#[test]
fn the_parked_gauge_is_counted_from_the_store_across_restarts() {
    let home = Home::new();
    let first = Server::start(&home);
    first.save("gated", gated());
    first.run_id("gated", json!({}));
    first.run_id("gated", json!({}));
    drop(first);
    // A new server (counters start at zero) still sees the two parked runs.
    let second = Server::start(&home);
    let now = scrape(&second);
    assert_eq!(now.get("vwf_runs_parked", &[("status", "awaiting_approval")]), 2.0);
    assert_eq!(now.get("vwf_runs_started_total", &[("design", "gated")]), 0.0);
}

#[test]
fn metrics_require_the_token_when_one_is_set() {
    let home = Home::new();
    let server = secured(&home);
    let url = server.url("/metrics");
    let (status, _) = send(server.bare.get(&url));
    assert_eq!(status, 401);
    let (status, _) = send(server.bare.get(&url).bearer_auth("not-the-token"));
    assert_eq!(status, 401);
    // Not served at the root either (that would bypass the token).
    let (status, _) = send(server.client.get(format!("{}/metrics", server.base)));
    assert_eq!(status, 404);
    let counted = scrape(&server);
    let refused = [("method", "GET"), ("route", "-"), ("status", "401")];
    assert_eq!(counted.get("vwf_http_requests_total", &refused), 2.0);
}

/// Run ids made from a seed: valid (12 lowercase hex digits) and different from each other.
fn run_ids(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            format!("{:012x}", x >> 16)
        })
        .collect()
}

#[test]
fn requests_are_counted_by_route_template_never_by_raw_path() {
    let home = Home::new();
    let server = secured(&home);
    server.save("fine", fine());
    let real: Vec<String> = (0..2).map(|_| server.run_id("fine", json!({}))).collect();
    let missing = run_ids(0x5eed, 24);
    let before = scrape(&server);
    for id in real.iter().chain(&missing) {
        let (status, _) = server.get(&format!("/runs/{id}"));
        assert_eq!(status, if real.contains(id) { 200 } else { 404 }, "{id}");
    }
    // Paths no route matches, with the same ids in them.
    for id in &missing[..8] {
        let (status, _) = server.get(&format!("/nothing/{id}"));
        assert_eq!(status, 404);
    }
    let after = scrape(&server);
    let route = format!("{PREFIX}/runs/{{run_id}}");
    let delta = |labels: &[(&str, &str)]| after.get("vwf_http_requests_total", labels) - before.get("vwf_http_requests_total", labels);
    assert_eq!(delta(&[("method", "GET"), ("route", &route), ("status", "200")]), 2.0);
    assert_eq!(delta(&[("method", "GET"), ("route", &route), ("status", "404")]), missing.len() as f64);
    assert_eq!(delta(&[("method", "GET"), ("route", "-"), ("status", "404")]), 8.0);
    for value in after.label_values() {
        assert!(!real.iter().chain(&missing).any(|id| value.contains(id.as_str())), "a raw id in the label {value:?}");
    }
    // The scrape itself is counted under its own route.
    assert!(after.get("vwf_http_requests_total", &[("method", "GET"), ("route", &format!("{PREFIX}/metrics")), ("status", "200")]) >= 1.0);
}

#[test]
fn the_text_format_parser_reads_escapes_and_refuses_bad_lines() {
    let ok = "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"q\\\"uote\",b=\"new\\nline\"} 3\n";
    let parsed = parse_metrics(ok);
    let labels: BTreeMap<String, String> =
        [("a", "q\"uote"), ("b", "new\nline")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(parsed.get(&("x_total".to_string(), labels)), Some(&3.0));
    for bad in ["x_total 1\n", "# TYPE x counter\nx{a=\"1} 1\n", "# TYPE x counter\nx 1\nx 2\n", "# TYPE x counter\nx one\n"] {
        assert!(std::panic::catch_unwind(|| parse_metrics(bad)).is_err(), "{bad:?}");
    }
}
