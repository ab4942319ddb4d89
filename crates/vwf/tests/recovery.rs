//! Steps that fail well, as a user meets them: `vwf run` in a child process against a real local
//! HTTP server that fails before it answers, and commands that exit non-zero.
//!
//! The clock is pinned (`VWF_NOW`), so a foreground run "sleeps" through a retry's wait by moving
//! its clock to the wait's end: the delays recorded are the policy's, and nothing here sleeps.

use crate::common;

use common::Home;
use common::peer::Peer;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

const NOW: &str = "2026-12-02T09:00:00Z";

fn with_fetch(fetch: Value, rest: &[Value], edges: &[Value]) -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"}), fetch];
    nodes.extend_from_slice(rest);
    let mut all = vec![json!({"from": "start", "to": "fetch"})];
    all.extend_from_slice(edges);
    json!({"nodes": nodes, "edges": all})
}

/// The attempts of step `node`: (status, started_at, delay_ms) of each.
fn tries(run: &Value, node: &str) -> Vec<(String, String, Option<u64>)> {
    let record = run["steps"].as_array().unwrap().iter().find(|s| s["node"] == node).unwrap_or_else(|| panic!("no {node} in {run}"));
    record["tries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["status"].as_str().unwrap().to_string(), t["started_at"].as_str().unwrap().to_string(), t["delay_ms"].as_u64()))
        .collect()
}

#[test]
fn an_http_step_answered_503_503_200_succeeds_on_its_third_attempt() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("GET")).and(path("/feed")).respond_with(ResponseTemplate::new(503)).up_to_n_times(2).with_priority(1).expect(2),
    );
    peer.mount(
        Mock::given(method("GET"))
            .and(path("/feed"))
            .respond_with(ResponseTemplate::new(200).set_body_string("fresh"))
            .with_priority(2)
            .expect(1),
    );
    let home = Home::local_http();
    let retry = json!({"max_attempts": 4, "delay": "2s", "factor": 2, "jitter": false, "on": ["5xx"]});
    home.save("feed", &with_fetch(json!({"id": "fetch", "type": "http", "url": peer.url("/feed"), "retry": retry}), &[], &[]));
    let (code, run) = home.json_at(NOW, &["run", "feed"]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    assert_eq!(run["outputs"]["fetch"]["text"], "fresh");
    assert_eq!(
        tries(&run, "fetch"),
        [
            ("failed".into(), "2026-12-02T09:00:00.000Z".into(), Some(2000)),
            ("failed".into(), "2026-12-02T09:00:02.000Z".into(), Some(4000)),
            ("done".into(), "2026-12-02T09:00:06.000Z".into(), None),
        ]
    );
    assert_eq!(run["handled"], json!([]));
    peer.verify();
}

#[test]
fn a_429_with_retry_after_is_waited_for() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("GET"))
            .and(path("/limited"))
            .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "2"))
            .up_to_n_times(1)
            .with_priority(1)
            .expect(1),
    );
    peer.mount(
        Mock::given(method("GET"))
            .and(path("/limited"))
            .respond_with(ResponseTemplate::new(200).set_body_string("ok"))
            .with_priority(2)
            .expect(1),
    );
    let home = Home::local_http();
    let retry = json!({"max_attempts": 2, "delay": "1s", "jitter": false, "on": ["429"]});
    home.save("limited", &with_fetch(json!({"id": "fetch", "type": "http", "url": peer.url("/limited"), "retry": retry}), &[], &[]));
    let (code, run) = home.json_at(NOW, &["run", "limited"]);
    assert_eq!(code, 0, "{run}");
    let t = tries(&run, "fetch");
    assert_eq!(t[0].2, Some(2000), "Retry-After: 2 outweighs the policy's 1 s");
    assert_eq!(t[1].1, "2026-12-02T09:00:02.000Z");
    peer.verify();
}

#[test]
fn on_5xx_does_not_retry_a_404() {
    let peer = Peer::start();
    peer.mount(Mock::given(method("GET")).and(path("/gone")).respond_with(ResponseTemplate::new(404)).expect(1));
    let home = Home::local_http();
    let retry = json!({"max_attempts": 5, "on": ["5xx"]});
    home.save("gone", &with_fetch(json!({"id": "fetch", "type": "http", "url": peer.url("/gone"), "retry": retry}), &[], &[]));
    let (code, run) = home.json_at(NOW, &["run", "gone"]);
    assert_eq!((code, run["status"].as_str(), run["failed_node"].as_str()), (1, Some("failed"), Some("fetch")), "{run}");
    assert_eq!(tries(&run, "fetch").len(), 1);
    peer.verify();
}

fn build_with(error_edge: bool) -> Value {
    let mut edges = vec![json!({"from": "start", "to": "build"}), json!({"from": "build", "to": "ship"})];
    if error_edge {
        edges.push(json!({"from": "build", "to": "alert", "label": "error"}));
    }
    let mut nodes = vec![
        json!({"id": "start", "type": "trigger", "mode": "manual"}),
        json!({"id": "build", "type": "command", "run": "echo compiling; exit 3"}),
        json!({"id": "ship", "type": "command", "run": "echo shipped"}),
    ];
    if error_edge {
        nodes.push(json!({"id": "alert", "type": "command", "run": "printf '%s|%s|%s' {{nodes.build.error.kind}} {{nodes.build.error.exit_code}} {{nodes.build.error.attempts}}"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

#[test]
fn a_command_exiting_3_takes_its_error_edge_and_the_run_is_done_with_it_handled() {
    let home = Home::local_http();
    home.save("build", &build_with(true));
    let (code, run) = home.json_at(NOW, &["run", "build"]);
    assert_eq!((code, run["status"].as_str(), run["ok"].as_bool()), (0, Some("done"), Some(true)), "{run}");
    assert_eq!(run["outputs"]["alert"]["text"], "exit|3|1");
    assert_eq!(run["outputs"]["build"]["error"]["kind"], "exit");
    assert_eq!(run["handled"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(run["handled"][0]["node"], "build");
    assert!(run["handled"][0]["error"].as_str().unwrap().contains("exited with code 3"), "{run}");
    assert_eq!(run["skipped"], json!(["ship"]));
    let build = run["steps"].as_array().unwrap().iter().find(|s| s["node"] == "build").unwrap();
    assert_eq!(build["status"], "failed", "the failure stays on the step's record");
    // What was written reads back the same.
    let (_, shown) = home.json(&["show", run["run_id"].as_str().unwrap()]);
    assert_eq!(shown["handled"], run["handled"]);
}

#[test]
fn without_the_error_edge_the_same_command_fails_the_run_as_before() {
    let home = Home::local_http();
    home.save("build", &build_with(false));
    let (code, run) = home.json_at(NOW, &["run", "build"]);
    assert_eq!((code, run["status"].as_str(), run["failed_node"].as_str()), (1, Some("failed"), Some("build")), "{run}");
    assert!(run["error"].as_str().unwrap().contains("exited with code 3"), "{run}");
    assert_eq!(run["handled"], json!([]));
    assert!(run["outputs"].get("build").is_none());
}

#[test]
fn a_command_retried_on_its_exit_code_and_then_handled() {
    let home = Home::local_http();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let script = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {0}; [ $n -ge 3 ] && echo ok && exit 0; exit 7",
        count.display()
    );
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "fetch", "type": "command", "run": script, "retry": {"max_attempts": 3, "delay": "1m", "backoff": "fixed", "jitter": false, "on": [7]}},
        ],
        "edges": [{"from": "start", "to": "fetch"}],
    });
    home.save("flaky", &graph);
    let (code, run) = home.json_at(NOW, &["run", "flaky"]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    let t = tries(&run, "fetch");
    assert_eq!(
        t.iter().map(|x| x.1.as_str()).collect::<Vec<_>>(),
        ["2026-12-02T09:00:00.000Z", "2026-12-02T09:01:00.000Z", "2026-12-02T09:02:00.000Z"]
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "3", "each attempt ran once");
}

#[test]
fn a_bad_policy_is_refused_with_the_field_named_and_nothing_saved() {
    let home = Home::new();
    let graph = with_fetch(json!({"id": "fetch", "type": "http", "url": "http://127.0.0.1:9/", "retry": {"max_attempts": 11}}), &[], &[]);
    let before = home.files();
    let (code, out) = home.json(&["save", "bad", &graph.to_string()]);
    assert_ne!(code, 0, "{out}");
    assert!(out.to_string().contains("retry.max_attempts"), "{out}");
    assert_eq!(home.files(), before, "a refused save writes nothing");
}

#[test]
fn the_cli_summary_names_handled_errors_and_the_waits_between_attempts() {
    let home = Home::local_http();
    home.save("build", &build_with(true));
    let out = home.vwf().env("VWF_NOW", NOW).args(["run", "build"]).output().expect("run vwf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("done with 1 handled error"), "{text}");
    assert!(text.contains("handled: build failed: command exited with code 3"), "{text}");
    let listed = home.vwf().args(["runs"]).output().expect("runs");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("with 1 handled error"), "the listing marks it");

    let peer = Peer::start();
    peer.mount(Mock::given(method("GET")).and(path("/feed")).respond_with(ResponseTemplate::new(502)).up_to_n_times(1).with_priority(1));
    peer.mount(
        Mock::given(method("GET")).and(path("/feed")).respond_with(ResponseTemplate::new(200).set_body_string("ok")).with_priority(2),
    );
    let retry = json!({"max_attempts": 2, "delay": "90s", "jitter": false});
    home.save("feed", &with_fetch(json!({"id": "fetch", "type": "http", "url": peer.url("/feed"), "retry": retry}), &[], &[]));
    let out = home.vwf().env("VWF_NOW", NOW).args(["run", "feed"]).output().expect("run vwf");
    // The live step lines go to standard error; `vwf show` prints the whole record.
    let run_id = String::from_utf8_lossy(&out.stdout).split_whitespace().nth(1).unwrap_or_default().to_string();
    let shown = home.vwf().args(["show", &run_id]).output().expect("show");
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("attempt 1 failed") && text.contains("next attempt 1m 30s later"), "{text}");
}

/// A design whose one step fails (a command exiting 3), naming `on_failure` if given.
fn failing(on_failure: Option<&str>) -> Value {
    let mut d = json!({
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "build", "type": "command", "run": "exit 3"}],
        "edges": [{"from": "start", "to": "build"}],
    });
    if let Some(name) = on_failure {
        d["on_failure"] = json!(name);
    }
    d
}

/// The error workflow: a ticket that quotes what failed.
fn ticket(step: Value) -> Value {
    json!({
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, step],
        "edges": [{"from": "start", "to": step["id"]}],
    })
}

/// The run as `vwf show` prints it (its exit code says whether it failed).
fn show(home: &Home, id: &str) -> Value {
    let (_, run) = home.json(&["show", id]);
    assert_eq!(run["run_id"], id, "{run}");
    run
}

#[test]
fn a_failed_run_starts_its_on_failure_design_once_and_the_runs_name_each_other() {
    let home = Home::new();
    home.save("ticket", &ticket(json!({"id": "open", "type": "output", "template": "{{trigger.design}} failed at {{trigger.failed_node}} ({{trigger.run_id}}): {{trigger.error}}"})));
    home.save("build", &failing(Some("ticket")));
    let (code, run) = home.json_at(NOW, &["run", "build"]);
    assert_eq!((code, run["status"].as_str()), (1, Some("failed")), "{run}");
    let id = run["run_id"].as_str().unwrap();
    let failure_id = run["failure_run"].as_str().unwrap_or_else(|| panic!("no failure_run: {run}"));
    let failure = show(&home, failure_id);
    assert_eq!((failure["status"].as_str(), failure["failure_of"].as_str()), (Some("done"), Some(id)), "{failure}");
    assert_eq!(failure["trigger"]["mode"], "failure");
    assert_eq!(failure["trigger"]["input"]["failed_node"], "build");
    assert_eq!(failure["trigger"]["input"]["failed_at"], "2026-12-02T09:00:00.000Z");
    assert_eq!(failure["outputs"]["open"]["text"], format!("build failed at build ({id}): command exited with code 3"));
    // What was written reads back: the failed run names its failure run.
    assert_eq!(show(&home, id)["failure_run"], failure_id);
    let (_, runs) = home.json(&["runs"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2), "{runs}");
    let out = home.vwf().args(["show", id]).output().expect("show");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("its failure started run {failure_id}")));
    let out = home.vwf().args(["show", failure_id]).output().expect("show");
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("started by the failure of run {id}")));
}

#[test]
fn a_failing_failure_design_starts_nothing_more_and_a_handled_run_starts_nothing() {
    let home = Home::new();
    home.save("ticket", &ticket(json!({"id": "open", "type": "command", "run": "exit 9", "retry": {"max_attempts": 1}})));
    // The failure design names itself: its own failure still starts nothing.
    let mut looping = ticket(json!({"id": "open", "type": "command", "run": "exit 9"}));
    looping["on_failure"] = json!("looping");
    home.save("looping", &looping);
    home.save("build", &failing(Some("ticket")));
    let (_, run) = home.json_at(NOW, &["run", "build"]);
    let failure = show(&home, run["failure_run"].as_str().unwrap());
    assert_eq!(failure["status"], "failed");
    assert!(failure.get("failure_run").is_none(), "a failure run's failure starts nothing: {failure}");
    let (_, run) = home.json_at(NOW, &["run", "looping"]);
    let failure = show(&home, run["failure_run"].as_str().unwrap());
    assert_eq!((failure["status"].as_str(), failure.get("failure_run")), (Some("failed"), None));
    let (_, runs) = home.json(&["runs"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(4), "two failed runs and their failure runs: {runs}");
    // A failure its design handles is no run failure.
    home.save("handled", &build_with(true));
    let mut handled = build_with(true);
    handled["on_failure"] = json!("ticket");
    home.save("handled", &handled);
    let (_, run) = home.json_at(NOW, &["run", "handled"]);
    assert_eq!((run["status"].as_str(), run.get("failure_run")), (Some("done"), None), "{run}");
}

#[test]
fn the_config_names_a_failure_design_for_every_design_without_one() {
    let home = Home::new();
    std::fs::write(home.path().join("visual-workflow.toml"), "[runs]\non_failure = \"ticket\"\n").unwrap();
    home.save("ticket", &ticket(json!({"id": "open", "type": "output", "template": "{{trigger.design}}"})));
    home.save("other", &ticket(json!({"id": "open", "type": "output", "template": "other: {{trigger.design}}"})));
    home.save("build", &failing(None));
    home.save("own", &failing(Some("other")));
    let (_, run) = home.json_at(NOW, &["run", "build"]);
    assert_eq!(show(&home, run["failure_run"].as_str().unwrap())["outputs"]["open"]["text"], "build");
    let (_, run) = home.json_at(NOW, &["run", "own"]);
    assert_eq!(show(&home, run["failure_run"].as_str().unwrap())["outputs"]["open"]["text"], "other: own", "the design's own wins");
    // A name that is no design name stops the config's load, with the key named.
    std::fs::write(home.path().join("visual-workflow.toml"), "[runs]\non_failure = \"no such/name\"\n").unwrap();
    let (code, out) = home.json(&["runs"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.to_string().contains("on_failure"), "{out}");
}

#[test]
fn a_missing_failure_design_is_noted_and_the_run_fails_as_before() {
    let home = Home::new();
    home.save("build", &failing(Some("nowhere")));
    let (code, run) = home.json_at(NOW, &["run", "build"]);
    assert_eq!((code, run["status"].as_str(), run.get("failure_run")), (1, Some("failed"), None), "{run}");
    assert_eq!(run["error"], "command exited with code 3");
    // The note is in the run file's history.
    let stored: Value = serde_json::from_slice(&home.stored_run_bytes(run["run_id"].as_str().unwrap()).unwrap()).unwrap();
    let note = stored["history"].as_array().unwrap().iter().find(|e| e["event"] == "failure_run_refused").expect("noted");
    assert_eq!(note["detail"]["design"], "nowhere");
    // A name that is no design name is refused when the design is saved.
    let (code, out) = home.json(&["save", "bad", &failing(Some("no such/name")).to_string()]);
    assert_ne!(code, 0);
    assert!(out.to_string().contains("on_failure"), "{out}");
}

#[test]
fn a_design_timeout_fails_a_run_still_waiting_at_its_time_but_leaves_a_gate_its_own_deadline() {
    let home = Home::new();
    let graph = json!({
        "timeout": "10m",
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "pause", "type": "wait", "duration": "1h"}, {"id": "after", "type": "command", "run": "echo late"}],
        "edges": [{"from": "start", "to": "pause"}, {"from": "pause", "to": "after"}],
    });
    home.save("slow", &graph);
    // The foreground run sleeps (on the pinned clock) until the earlier of the wait and the timeout.
    let (code, run) = home.json_at(NOW, &["run", "slow"]);
    assert_eq!((code, run["status"].as_str(), run["error"].as_str()), (1, Some("failed"), Some("run timed out")), "{run}");
    assert_eq!((run["failed_node"].as_str(), run["updated_at"].as_str()), (Some("pause"), Some("2026-12-02T09:10:00.000Z")));
    assert!(run["outputs"].get("after").is_none());
    // A gate keeps its own deadline: the run's timeout passes it by.
    let gated = json!({
        "timeout": 60,
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "ok", "type": "approval", "question": "ship?"}],
        "edges": [{"from": "start", "to": "ok"}],
    });
    home.save("gated", &gated);
    let (_, run) = home.json_at(NOW, &["run", "gated"]);
    assert_eq!(run["status"], "awaiting_approval");
    let (_, later) = home.json_at("2026-12-02T12:00:00Z", &["show", run["run_id"].as_str().unwrap()]);
    assert_eq!(later["status"], "awaiting_approval", "{later}");
    // A timeout that does not read is refused with the field named.
    let mut bad = graph.clone();
    bad["timeout"] = json!("31d");
    let (code, out) = home.json(&["save", "bad", &bad.to_string()]);
    assert_ne!(code, 0);
    assert!(out.to_string().contains("\\\"timeout\\\""), "{out}");
}

#[test]
fn a_delivery_past_its_timeout_fails_and_is_retried_on_error() {
    let peer = Peer::start();
    peer.mount(
        Mock::given(method("POST"))
            .and(path("/hook"))
            .respond_with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(3))),
    );
    let home = Home::new();
    std::fs::write(home.path().join("visual-workflow.toml"), format!("[channels.webhook.slow]\nurl = \"{}\"\n", peer.url("/hook")))
        .unwrap();
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "send", "type": "output", "deliver": "channel", "target": "webhook:slow", "template": "hi", "timeout_seconds": 1,
             "retry": {"max_attempts": 2, "delay": 0, "on": ["error"]}},
        ],
        "edges": [{"from": "start", "to": "send"}],
    });
    home.save("slow", &graph);
    let began = std::time::Instant::now();
    let (code, run) = home.json(&["run", "slow"]);
    assert!(began.elapsed() < std::time::Duration::from_secs(6), "each attempt gave up after a second, not three");
    assert_eq!((code, run["status"].as_str()), (1, Some("failed")), "{run}");
    let deliveries = run["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 2, "both attempts are recorded: {run}");
    assert!(deliveries.iter().all(|d| d["ok"] == false && d["detail"].as_str().unwrap().contains("may have been sent")), "{run}");
}

#[test]
fn an_emit_past_its_timeout_starts_no_more_runs_and_fails_as_a_timeout() {
    let home = Home::new();
    let listener = |id: &str| {
        json!({
            "nodes": [{"id": "start", "type": "trigger", "mode": "event", "sources": ["ping"]}, {"id": id, "type": "command", "run": "sleep 1.2"}],
            "edges": [{"from": "start", "to": id}],
        })
    };
    home.save("b1", &listener("one"));
    home.save("b2", &listener("two"));
    let emitter = json!({
        "nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "ping", "type": "emit", "event": "ping", "timeout_seconds": 1}],
        "edges": [{"from": "start", "to": "ping"}],
    });
    home.save("a", &emitter);
    let (code, run) = home.json(&["run", "a"]);
    assert_eq!((code, run["status"].as_str(), run["failed_node"].as_str()), (1, Some("failed"), Some("ping")), "{run}");
    assert!(run["error"].as_str().unwrap().contains("timed out: 1 run(s) started"), "{run}");
    let (_, runs) = home.json(&["runs"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2), "the emitter and one listener: {runs}");
}
