//! Every template in `examples/` is validated, saved into a fresh home and run to the end through
//! the real `vwf` binary, answering each gate and agent step the way a person would.
//!
//! The directory is read at test time, so a new template is covered without touching this file.
//! A template may carry `example_input` (a realistic run input, kept on save like any unknown
//! field); without it the run starts with no input. Inputs that point outside the run are aimed
//! at local stand-ins (see `Fixtures`): a `url` at a local JSON server, a `path` at a small NDJSON
//! file. The clock is pinned with `VWF_NOW` and moves one minute per answer, so gates never time
//! out and wait steps take no real time.

use crate::common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use common::{Home, examples_dir, later, run_file};
use serde_json::{Value, json};

const T0: &str = "2026-11-30T08:30:00Z";

/// Node types this version executes (plus the trigger and note, which never run as steps).
const EXECUTABLE: [&str; 11] = ["trigger", "condition", "approval", "agent", "output", "wait", "note", "command", "http", "loop", "emit"];

struct Template {
    name: String,
    path: PathBuf,
    graph: Value,
}

fn templates() -> Vec<Template> {
    let dir = examples_dir();
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else { continue };
        let Some(name) = file.strip_suffix(".designer.json") else { continue };
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {file}: {e}"));
        let graph = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file} is not JSON: {e}"));
        out.push(Template { name: name.to_string(), path, graph });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn nodes(graph: &Value) -> &Vec<Value> {
    graph["nodes"].as_array().expect("nodes array")
}

fn node<'a>(graph: &'a Value, id: &str) -> &'a Value {
    nodes(graph).iter().find(|n| n["id"] == id).unwrap_or_else(|| panic!("no node {id}"))
}

fn example_input(t: &Template) -> Value {
    t.graph.get("example_input").cloned().unwrap_or(Value::Null)
}

/// A JSON feed as `feed-digest` expects it: a title, a count and the items.
fn feed(items: &[(&str, &str)]) -> Value {
    let items: Vec<Value> = items.iter().map(|(title, url)| json!({"title": title, "url": url})).collect();
    json!({"title": "Changelog", "count": items.len(), "items": items})
}

/// Serves `body` as `200 application/json` to every request on a local port, on a thread that
/// lives as long as the test process; returns the URL.
fn serve_json(body: &Value) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let addr = listener.local_addr().expect("local address");
    let body = body.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // A GET has no body: read up to the blank line that ends the headers.
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/feed.json")
}

/// Writes `records` NDJSON order records (`amount_cents` = 100 + i) to `path`; returns their sum.
fn write_orders(path: &Path, records: u64) -> u64 {
    let mut text = String::new();
    for i in 0..records {
        text.push_str(&json!({"id": i, "sku": format!("SKU-{i:05}"), "amount_cents": 100 + i}).to_string());
        text.push('\n');
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    (0..records).map(|i| 100 + i).sum()
}

/// Local stand-ins for what example inputs point at outside the run.
struct Fixtures {
    dir: tempfile::TempDir,
    feed_url: String,
}

impl Fixtures {
    const ORDERS: u64 = 25;

    fn new() -> Fixtures {
        let dir = tempfile::tempdir().expect("tempdir");
        write_orders(&dir.path().join("orders.ndjson"), Self::ORDERS);
        let feed_url = serve_json(&feed(&[("Faster start-up", "https://example.org/1"), ("New export format", "https://example.org/2")]));
        Fixtures { dir, feed_url }
    }

    /// The template's example input with `url` and `path` aimed at the stand-ins.
    fn input(&self, t: &Template) -> Value {
        let mut input = example_input(t);
        if let Some(obj) = input.as_object_mut() {
            if obj.contains_key("url") {
                obj.insert("url".into(), json!(self.feed_url));
            }
            if obj.contains_key("path") {
                obj.insert("path".into(), json!(self.dir.path().join("orders.ndjson")));
            }
        }
        input
    }
}

/// A run driven to a final state, and the number of options of each gate it passed, in order.
struct Driven {
    run: Value,
    gates: Vec<usize>,
}

/// Starts `design` with `input` and answers every pending step until the run is finished.
/// The k-th gate is answered with option `script[k]` (the first option past the script's end);
/// agent steps get a short canned text naming the node.
fn drive(home: &Home, design: &str, input: &Value, script: &[usize]) -> Driven {
    let mut now = T0.to_string();
    let (mut code, mut run) = home.json_at(&now, &["run", design, "--input", &input.to_string()]);
    let mut gates = Vec::new();
    for _ in 0..50 {
        let status = run["status"].as_str().unwrap_or_else(|| panic!("{design}: no status in {run}"));
        let expected = match status {
            "done" => 0,
            "failed" => 1,
            _ => 6,
        };
        assert_eq!(code, expected, "{design}: exit code for status {status}: {run}");
        let id = run["run_id"].as_str().expect("run_id").to_string();
        let pending = run["pending"].clone();
        now = later(&now, 1);
        (code, run) = match status {
            "done" | "failed" => return Driven { run, gates },
            "awaiting_approval" => {
                assert_eq!(pending["type"], "approval", "{design}: {run}");
                let options: Vec<String> =
                    pending["options"].as_array().expect("options").iter().map(|o| o.as_str().expect("option").to_string()).collect();
                let pick = script.get(gates.len()).copied().unwrap_or(0);
                gates.push(options.len());
                let node = pending["node"].as_str().expect("gate node");
                home.json_at(&now, &["approve", &id, node, &options[pick]])
            }
            "awaiting_agent" => {
                assert_eq!(pending["type"], "agent", "{design}: {run}");
                let node = pending["node"].as_str().expect("agent node");
                let prompt = pending["prompt"].as_str().expect("rendered prompt");
                assert!(!prompt.contains("{{"), "{design}: prompt of {node} was not rendered: {prompt}");
                home.json_at(&now, &["respond", &id, node, "--output", &format!("Reply written for {node}.")])
            }
            other => panic!("{design}: a foreground run stopped in status {other}: {run}"),
        };
    }
    panic!("{design}: the run never finished")
}

/// A final state is `done`, or `failed` only because a delivery found no configured channel.
fn assert_honest_final(t: &Template, run: &Value) {
    let name = &t.name;
    match run["status"].as_str() {
        Some("done") => {
            assert_eq!(run["ok"], true, "{name}: {run}");
            assert_eq!(run["error"], Value::Null, "{name}: {run}");
            assert_eq!(run["pending"], Value::Null, "{name}: {run}");
            assert!(run["deliveries"].as_array().is_some_and(Vec::is_empty), "{name}: a done run claims a delivery: {run}");
        }
        Some("failed") => {
            let failed = run["failed_node"].as_str().unwrap_or_else(|| panic!("{name}: failed without failed_node: {run}"));
            let n = node(&t.graph, failed);
            assert_eq!(n["type"], "output", "{name}: only a delivery may fail a template run: {run}");
            let target = n["target"].as_str().expect("delivering output has a target");
            let platform = target.split(':').next().unwrap_or(target);
            let deliveries = run["deliveries"].as_array().expect("deliveries");
            assert_eq!(deliveries.len(), 1, "{name}: {run}");
            let d = &deliveries[0];
            assert_eq!(d["ok"], false, "{name}: a delivery without a channel must not be claimed: {run}");
            assert_eq!(d["node"], failed);
            assert_eq!(d["target"], target);
            let detail = d["detail"].as_str().expect("detail");
            assert!(
                detail.contains(platform) && detail.contains("configured"),
                "{name}: detail should name the missing {platform} channel: {detail}"
            );
            assert!(run["error"].as_str().is_some_and(|e| e.contains(target)), "{name}: {run}");
        }
        other => panic!("{name}: not a final status {other:?}: {run}"),
    }
}

#[test]
fn there_are_at_least_four_templates() {
    let names: Vec<String> = templates().into_iter().map(|t| t.name).collect();
    assert!(names.len() >= 4, "examples/ holds {names:?}");
}

#[test]
fn every_node_type_appears_in_some_template() {
    let used: BTreeSet<String> =
        templates().iter().flat_map(|t| nodes(&t.graph).iter().filter_map(|n| n["type"].as_str().map(str::to_string))).collect();
    let all: BTreeSet<String> = EXECUTABLE.iter().map(|s| s.to_string()).collect();
    assert_eq!(used, all, "every node type should have a template to start from");
}

#[test]
fn every_template_validates_without_errors() {
    let home = Home::new();
    for t in templates() {
        let file = format!("@{}", t.path.display());
        let (code, report) = home.json(&["validate", &file]);
        assert_eq!(code, 0, "{}: {report}", t.name);
        assert_eq!(report["ok"], true, "{}: {report}", t.name);
        assert_eq!(report["errors"], json!([]), "{}: {report}", t.name);
        for w in report["warnings"].as_array().into_iter().flatten() {
            eprintln!("{}: warning: {}", t.name, w["message"]);
        }
    }
    assert_eq!(home.files(), Vec::<PathBuf>::new(), "validating a draft writes nothing");
}

#[test]
fn every_template_is_a_readable_starting_point() {
    for t in templates() {
        let name = &t.name;
        assert!(vwf_core::names::DesignName::parse(name).is_ok(), "{name} is not a valid design name");
        let description = t.graph["description"].as_str().unwrap_or("");
        assert!(description.len() >= 20, "{name}: needs a description a user can choose by");
        let all = nodes(&t.graph);
        let notes: Vec<&Value> = all.iter().filter(|n| n["type"] == "note").collect();
        assert!(notes.iter().any(|n| n["text"].as_str().is_some_and(|s| s.len() >= 40)), "{name}: needs a note explaining how to adapt it");
        for n in all {
            let id = &n["id"];
            let kind = n["type"].as_str().unwrap_or("");
            assert!(EXECUTABLE.contains(&kind), "{name}: node {id} has type {kind:?}, which this version cannot execute");
            assert!(n["x"].is_number() && n["y"].is_number(), "{name}: node {id} needs canvas coordinates");
            assert!(n["label"].as_str().is_some_and(|l| !l.is_empty()), "{name}: node {id} needs a label");
        }
        // Left to right: every edge points to a node further right than where it starts.
        for e in t.graph["edges"].as_array().expect("edges") {
            let (from, to) = (node(&t.graph, e["from"].as_str().unwrap()), node(&t.graph, e["to"].as_str().unwrap()));
            assert!(to["x"].as_f64() > from["x"].as_f64(), "{name}: edge {e} runs right to left");
        }
        // Every input field the template reads is present in its example input.
        let input = t.graph.get("example_input").cloned().unwrap_or(Value::Null);
        let trigger = all.iter().find(|n| n["type"] == "trigger").and_then(|n| n["id"].as_str()).unwrap_or("");
        for field in input_fields_read(all, trigger) {
            assert!(input.get(&field).is_some(), "{name}: reads input field {field:?}, missing from example_input {input}");
        }
    }
}

/// Input fields a design reads: `{{trigger.<field>}}` in any string, `out.<trigger>.<field>` in conditions.
fn input_fields_read(nodes: &[Value], trigger: &str) -> BTreeSet<String> {
    let key = |rest: &str| rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut fields = BTreeSet::new();
    for n in nodes.iter().filter(|n| n["type"] != "note") {
        for v in n.as_object().into_iter().flat_map(|o| o.values()) {
            let Some(s) = v.as_str() else { continue };
            for (i, _) in s.match_indices("{{trigger.") {
                fields.insert(key(&s[i + "{{trigger.".len()..]));
            }
            if n["type"] == "condition"
                && let Some(rest) = s.strip_prefix(&format!("out.{trigger}."))
            {
                fields.insert(key(rest));
            }
        }
    }
    fields
}

#[test]
fn every_template_runs_to_the_end_answering_the_first_option() {
    let fixtures = Fixtures::new();
    for t in templates() {
        let home = Home::local_http();
        home.save(&t.name, &t.graph);
        let driven = drive(&home, &t.name, &fixtures.input(&t), &[]);
        assert_honest_final(&t, &driven.run);
        // What `show` reads back from disk is the same verdict.
        let id = driven.run["run_id"].as_str().unwrap();
        let (_, shown) = home.json_at(&later(T0, 60), &["show", id]);
        assert_eq!(shown, driven.run, "{}: show disagrees with the last answer", t.name);
        // Every node ran or was skipped; nothing is left behind. A loop body's steps are recorded
        // once per pass as `<id>#<pass>`.
        let file = run_file(&home, id);
        let settled: BTreeSet<&str> = driven.run["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["node"].as_str().unwrap())
            .map(|n| n.split_once('#').map_or(n, |(base, _)| base))
            .chain(driven.run["skipped"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()))
            .collect();
        let planned: BTreeSet<&str> = file["plan"]["steps"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
        if driven.run["status"] == "done" {
            assert_eq!(settled, planned, "{}: every planned step is settled", t.name);
        }
    }
}

#[test]
fn every_answer_of_every_gate_in_every_template_ends_in_an_honest_state() {
    let fixtures = Fixtures::new();
    for t in templates() {
        let home = Home::local_http();
        home.save(&t.name, &t.graph);
        let input = fixtures.input(&t);
        let mut scripts: Vec<Vec<usize>> = vec![Vec::new()];
        let mut explored = 0;
        while let Some(script) = scripts.pop() {
            let driven = drive(&home, &t.name, &input, &script);
            assert_honest_final(&t, &driven.run);
            explored += 1;
            assert!(explored <= 64, "{}: too many paths", t.name);
            // Gates past the script were answered with their first option: branch on the others.
            for k in script.len()..driven.gates.len() {
                for other in 1..driven.gates[k] {
                    let mut s = script.clone();
                    s.resize(k, 0);
                    s.push(other);
                    scripts.push(s);
                }
            }
        }
    }
}

fn template(name: &str) -> Template {
    templates().into_iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no template {name}"))
}

#[test]
fn morning_brief_never_claims_the_telegram_delivery() {
    let t = template("morning-brief");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let driven = drive(&home, &t.name, &Value::Null, &[]);
    let run = &driven.run;
    assert_eq!(run["status"], "failed");
    assert_eq!(run["failed_node"], "send");
    assert_eq!(run["deliveries"][0]["ok"], false);
    assert_eq!(run["deliveries"][0]["target"], "telegram:123456");
    assert!(run["deliveries"][0]["detail"].as_str().unwrap().contains("no telegram channel is configured"), "{run}");
    // Skipping sends nothing and finishes the run.
    let skipped = drive(&home, &t.name, &Value::Null, &[1]);
    assert_eq!(skipped.run["status"], "done", "{}", skipped.run);
    assert_eq!(skipped.run["skipped"], json!(["send"]));
    assert_eq!(skipped.run["deliveries"], json!([]));
}

#[test]
fn ticket_triage_drafts_a_reply_for_a_minor_ticket_without_asking_anyone() {
    let t = template("ticket-triage");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let input = json!({"title": "Typo on the pricing page", "severity": 1, "body": "It says 'montly'."});
    let driven = drive(&home, &t.name, &input, &[]);
    let run = &driven.run;
    assert_eq!(run["status"], "done", "{run}");
    assert!(driven.gates.is_empty(), "a minor ticket passes no gate");
    assert_eq!(run["outputs"]["severe"]["value"], false);
    assert_eq!(run["outputs"]["reply"]["text"], "Reply written for draft.");
    assert_eq!(run["skipped"], json!(["escalate", "page", "hold"]));
}

#[test]
fn ticket_triage_pages_with_the_ticket_text_for_a_severe_ticket() {
    let t = template("ticket-triage");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let driven = drive(&home, &t.name, &example_input(&t), &[]);
    let run = &driven.run;
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(driven.gates, [2]);
    let page = run["outputs"]["page"]["text"].as_str().unwrap();
    assert!(page.starts_with("PAGE on-call: Checkout returns 500 for EU customers (severity 4)"), "{page}");
}

#[test]
fn draft_review_revise_sends_the_draft_to_a_second_agent() {
    let t = template("draft-review");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let driven = drive(&home, &t.name, &example_input(&t), &[1]);
    let run = &driven.run;
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["review"]["answer"], "revise");
    assert_eq!(run["outputs"]["revised"]["text"], "Reply written for revise.");
    assert_eq!(run["skipped"], json!(["final", "rejected"]));
}

#[test]
fn release_checklist_waits_after_sign_off_and_blocks_failed_tests() {
    let t = template("release-checklist");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);

    let shipped = drive(&home, &t.name, &example_input(&t), &[]);
    let run = &shipped.run;
    assert_eq!(run["status"], "done", "{run}");
    assert_eq!(run["outputs"]["notice"]["text"], "Release 2.4.0 is cleared for prod.");
    // The pinned clock jumped over the 5 s wait: it resumed 5 s after the sign-off answer.
    assert_eq!(run["outputs"]["settle"]["resumed_at"], "2026-11-30T08:31:05.000Z");

    let staging = drive(&home, &t.name, &json!({"version": "2.4.0-rc1", "env": "staging", "tests_passed": true}), &[]);
    assert_eq!(staging.run["status"], "done", "{}", staging.run);
    assert!(staging.gates.is_empty(), "staging needs no sign-off");
    assert_eq!(staging.run["outputs"]["notice"]["text"], "Release 2.4.0-rc1 is cleared for staging.");

    let red = drive(&home, &t.name, &json!({"version": "2.4.1", "env": "prod", "tests_passed": false}), &[]);
    assert_eq!(red.run["status"], "done", "{}", red.run);
    assert_eq!(red.run["outputs"]["blocked"]["text"], "Release 2.4.1 to prod is blocked: the tests did not pass.");
    assert_eq!(red.run["skipped"], json!(["is-prod", "signoff", "held", "settle", "notice"]));
}

#[test]
fn the_sequential_form_becomes_a_chain_and_runs() {
    let home = Home::local_http();
    let design = json!({
        "description": "Two agent activities and an output, in order",
        "activities": [
            "List three facts about {{trigger.subject}}.",
            {"name": "polish", "prompt": "Make these read well: {{nodes.step1}}"},
            {"name": "result", "type": "output"}
        ]
    });
    let draft = std::env::temp_dir().join(format!("vwf-sequential-{}.json", std::process::id()));
    std::fs::write(&draft, design.to_string()).unwrap();
    let (code, report) = home.json(&["validate", &format!("@{}", draft.display())]);
    let _ = std::fs::remove_file(&draft);
    assert_eq!((code, &report["errors"]), (0, &json!([])), "{report}");

    home.save("facts", &design);
    let (_, opened) = home.json(&["open", "facts"]);
    let graph = &opened["graph"];
    let ids: Vec<&str> = nodes(graph).iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["step1", "polish", "result"]);
    assert_eq!(nodes(graph)[0]["type"], "agent");
    assert_eq!(graph["edges"], json!([{"from": "step1", "to": "polish"}, {"from": "polish", "to": "result"}]));

    let (code, run) = home.json_at(T0, &["run", "facts", "--input", r#"{"subject":"otters"}"#]);
    assert_eq!((code, &run["pending"]["node"]), (6, &json!("step1")), "{run}");
    assert_eq!(run["pending"]["prompt"], "List three facts about otters.");
    let id = run["run_id"].as_str().unwrap();
    let (_, run) = home.json_at(T0, &["respond", id, "step1", "--output", "Otters hold hands."]);
    assert_eq!(run["pending"]["node"], "polish", "{run}");
    assert_eq!(run["pending"]["prompt"], "Make these read well: Otters hold hands.");
    let (code, run) = home.json_at(T0, &["respond", id, "polish", "--output", "Otters hold hands while they sleep."]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["status"], "done");
    assert_eq!(run["outputs"]["result"]["text"], "Otters hold hands while they sleep.");
}

/// `vwf --json run design --input input` at `T0`, with `TMPDIR` (where command steps put scratch
/// files) set to `tmp`.
fn run_with_tmpdir(home: &Home, tmp: &Path, design: &str, input: &Value) -> (i32, Value) {
    let out = home
        .vwf()
        .env("TMPDIR", tmp)
        .env("VWF_NOW", T0)
        .args(["--json", "run", design, "--input", &input.to_string()])
        .output()
        .expect("run vwf");
    (common::code(&out), common::parse(&out))
}

fn dir_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
    entries.sort();
    entries
}

#[test]
fn large_input_chunks_reads_each_chunk_in_its_own_pass_and_totals_them() {
    let t = template("large-input-chunks");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("orders.ndjson");
    let sum = write_orders(&file, 25);
    let tmp = work.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();

    let input = json!({"path": file, "chunk_records": 10, "sum_field": "amount_cents"});
    let (code, run) = run_with_tmpdir(&home, &tmp, &t.name, &input);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");

    // The split step hands on pointers only: a path and a record count per chunk.
    let pointers = run["outputs"]["split"]["data"].as_array().unwrap_or_else(|| panic!("split prints a JSON array: {run}"));
    let records: Vec<&Value> = pointers.iter().map(|p| &p["records"]).collect();
    assert_eq!(records, [&json!(10), &json!(10), &json!(5)], "{run}");
    for (i, p) in pointers.iter().enumerate() {
        let path = p["path"].as_str().unwrap();
        assert!(path.starts_with(tmp.to_str().unwrap()) && path.ends_with(&format!("/chunk-{i:03}.ndjson")), "{path}");
    }
    // One pass per chunk, each reading only its own file, results in chunk order.
    let chunk_sum = |range: std::ops::Range<u64>| range.map(|i| 100 + i).sum::<u64>();
    assert_eq!(run["outputs"]["each"]["count"], 3, "{run}");
    assert_eq!(
        run["outputs"]["each"]["items"],
        json!([
            {"pass": 0, "records": 10, "sum": chunk_sum(0..10)},
            {"pass": 1, "records": 10, "sum": chunk_sum(10..20)},
            {"pass": 2, "records": 5, "sum": chunk_sum(20..25)}
        ]),
        "{run}"
    );
    let steps: Vec<&str> = run["steps"].as_array().unwrap().iter().map(|s| s["node"].as_str().unwrap()).collect();
    for pass in ["count#0", "count#1", "count#2"] {
        assert!(steps.contains(&pass), "no step {pass} in {steps:?}");
    }
    assert_eq!(run["outputs"]["total"]["data"], json!({"chunks": 3, "records": 25, "sum": sum}), "{run}");
    assert_eq!(run["outputs"]["report"]["text"], format!("25 records in 3 chunks of {}; amount_cents adds up to {sum}.", file.display()));
    // Once totalled, the chunk directory is removed.
    assert_eq!(dir_entries(&tmp), Vec::<PathBuf>::new(), "chunk files left behind");
}

#[test]
fn large_input_chunks_on_an_empty_file_still_reports_its_zero_totals() {
    let t = template("large-input-chunks");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("empty.ndjson");
    std::fs::write(&file, "").unwrap();
    let input = json!({"path": file, "chunk_records": 1000, "sum_field": "amount_cents"});
    let (code, run) = run_with_tmpdir(&home, work.path(), &t.name, &input);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    assert_eq!(run["outputs"]["split"]["data"], json!([]), "{run}");
    assert_eq!(run["outputs"]["each"]["count"], 0, "{run}");
    assert_eq!(run["outputs"]["total"]["data"], json!({"chunks": 0, "records": 0, "sum": 0}), "{run}");
    assert!(run["outputs"]["report"]["text"].as_str().is_some_and(|t| t.starts_with("0 records in 0 chunks")), "{run}");
}

#[test]
fn large_input_chunks_fails_at_the_split_when_the_file_is_missing() {
    let t = template("large-input-chunks");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);
    let work = tempfile::tempdir().unwrap();
    let missing = work.path().join("nope.ndjson");
    let input = json!({"path": missing, "chunk_records": 1000, "sum_field": "amount_cents"});
    let (code, run) = run_with_tmpdir(&home, work.path(), &t.name, &input);
    assert_eq!((code, run["status"].as_str()), (1, Some("failed")), "{run}");
    assert_eq!(run["failed_node"], "split", "{run}");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("cannot read") && e.contains("nope.ndjson")), "{run}");
    for later in ["each", "total", "report"] {
        assert!(run["outputs"].get(later).is_none(), "{later} ran after the failure: {run}");
    }
}

#[test]
fn feed_digest_hands_the_items_to_the_agent_and_says_so_when_the_feed_is_empty() {
    let t = template("feed-digest");
    let home = Home::local_http();
    home.save(&t.name, &t.graph);

    let url = serve_json(&feed(&[("Faster start-up", "https://example.org/1"), ("New export format", "https://example.org/2")]));
    let (code, run) = home.json_at(T0, &["run", &t.name, "--input", &json!({"url": url}).to_string()]);
    assert_eq!((code, run["status"].as_str()), (6, Some("awaiting_agent")), "{run}");
    assert_eq!(run["outputs"]["fetch"]["status"], 200, "{run}");
    assert_eq!(run["outputs"]["fetch"]["body"]["count"], 2, "{run}");
    assert_eq!(run["outputs"]["has-news"]["value"], true, "{run}");
    let prompt = run["pending"]["prompt"].as_str().unwrap();
    assert!(prompt.contains("these 2 items from \"Changelog\""), "{prompt}");
    assert!(prompt.contains(r#"{"title":"Faster start-up","url":"https://example.org/1"}"#), "the items reach the agent as JSON: {prompt}");
    let id = run["run_id"].as_str().unwrap();
    let (code, run) = home.json_at(T0, &["respond", id, "summarise", "--output", "Start-up is faster; exports have a new format."]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    assert_eq!(run["outputs"]["digest"]["text"], "Changelog: 2 new\n\nStart-up is faster; exports have a new format.");
    assert_eq!(run["skipped"], json!(["quiet"]), "{run}");

    // An empty feed needs no agent: it ends on a line saying so.
    let empty = serve_json(&feed(&[]));
    let (code, run) = home.json_at(T0, &["run", &t.name, "--input", &json!({"url": empty}).to_string()]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    assert_eq!(run["outputs"]["quiet"]["text"], format!("Changelog: nothing new at {empty} (HTTP 200)."));
    assert_eq!(run["skipped"], json!(["summarise", "digest"]), "{run}");
}

#[test]
fn nightly_handoff_starts_report_archive_with_its_payload() {
    let home = Home::local_http();
    for name in ["nightly-handoff", "report-archive"] {
        let t = template(name);
        home.save(&t.name, &t.graph);
    }
    let (code, run) = home.json_at(T0, &["run", "nightly-handoff"]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
    let id = run["run_id"].as_str().unwrap();
    // The pinned clock jumps over the 5 s pause.
    assert_eq!(run["outputs"]["settle"]["resumed_at"], "2026-11-30T08:30:05.000Z", "{run}");
    let announce = &run["outputs"]["announce"];
    assert_eq!(announce["event"], "report.ready", "{run}");
    assert_eq!(
        announce["data"],
        json!({"report": "daily-handoff", "design": "nightly-handoff", "run": id, "waited": "2026-11-30T08:30:05.000Z"}),
        "{run}"
    );
    let started = announce["runs"].as_array().unwrap_or_else(|| panic!("the emit records the runs it started: {run}"));
    assert_eq!(started.len(), 1, "report-archive listens to report.*: {run}");

    let (_, archived) = home.json_at(T0, &["show", started[0].as_str().unwrap()]);
    assert_eq!(archived["design"], "report-archive", "{archived}");
    assert_eq!(archived["status"], "done", "{archived}");
    assert_eq!(archived["trigger"]["mode"], "event", "{archived}");
    assert_eq!(archived["outputs"]["archive"]["text"], format!("report.ready: daily-handoff from nightly-handoff (run {id})"));

    // The archive takes any report.* event, emitted by hand too; a look-alike name starts nothing.
    let payload = r#"{"report": "weekly-numbers", "design": "by-hand", "run": "none"}"#;
    let (code, emitted) = home.json_at(T0, &["emit", "report.weekly", "--payload", payload]);
    assert_eq!(code, 0, "{emitted}");
    assert_eq!(emitted["runs"].as_array().map(Vec::len), Some(1), "{emitted}");
    assert_eq!(emitted["runs"][0]["outputs"]["archive"]["text"], "report.weekly: weekly-numbers from by-hand (run none)");
    let (code, emitted) = home.json_at(T0, &["emit", "reports.weekly", "--payload", payload]);
    assert_eq!((code, &emitted["runs"]), (0, &json!([])), "{emitted}");
}
