//! Finding runs again: `GET /runs` and `vwf runs` filter by design, status, trigger mode and run id
//! prefix, and page through every run with the `next` cursor (`before=`), past the 1,000 a single
//! page may hold. The runs are real run documents written through the store (so the run index
//! is the one the listing reads), checked against the ground truth kept while writing them.
//! The listing tests run on both stores (`files::`, `postgres::`).

use crate::common;
use crate::on_both_backends;
use vwf_store::Wait;

on_both_backends!(
    runs_page_past_a_thousand_and_every_filter_combination_finds_exactly_its_runs,
    a_rare_filter_pages_on_without_reading_every_run_at_once,
    bad_filters_and_unknown_cursors_are_refused,
);

use common::server::Server;
use common::{Backend, Home};
use serde_json::{Value, json};
use vwf_core::names::RunId;

const DESIGNS: [&str; 3] = ["alpha", "beta", "gamma.v2"];
const STATUSES: [&str; 3] = ["done", "failed", "awaiting_agent"];
const MODES: [&str; 3] = ["manual", "schedule", "event"];

/// One written run: (id, design, status, trigger mode).
type Truth = Vec<(String, &'static str, &'static str, &'static str)>;

/// Writes `count` runs (oldest first) cloned from a real run document, each with its own id,
/// design, status and trigger mode from a fixed pattern; returns them newest first.
fn populate(home: &Home, count: usize) -> Truth {
    home.save("alpha", &json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "o", "type": "output", "template": "hi"}], "edges": [{"from": "start", "to": "o"}]}));
    let (_, real) = home.json(&["run", "alpha"]);
    let real_id = real["run_id"].as_str().expect("run id").to_string();
    let store = home.store();
    let template = store.read_run(&RunId::parse(&real_id).expect("id")).wait().expect("real run");
    home.forget_run(&real_id);
    let mut truth = Vec::new();
    for i in 0..count {
        let id = format!("{:012x}", 0xa0_0000_0000u64 + (i as u64 * 7919) % 0x1_0000_0000);
        let (design, status, mode) = (DESIGNS[i % 3], STATUSES[(i / 3) % 3], MODES[(i / 9) % 3]);
        let mut run = template.clone();
        run["run_id"] = json!(id);
        run["design"] = json!(design);
        run["status"] = json!(status);
        run["trigger"]["mode"] = json!(mode);
        run["created_at"] = json!(format!("2026-01-01T{:02}:{:02}:{:02}.000Z", i / 3600, (i / 60) % 60, i % 60));
        store.import_run(&RunId::parse(&id).expect("id"), &run).wait().expect("write run");
        truth.push((id, design, status, mode));
    }
    truth.reverse();
    truth
}

fn ids(runs: &Value) -> Vec<String> {
    runs.as_array().expect("runs").iter().map(|r| r["run_id"].as_str().expect("run_id").to_string()).collect()
}

/// Every page of `GET /runs?<query>&limit=<limit>`, following `next` until it is null.
fn all_pages(server: &Server, query: &str, limit: usize) -> (Vec<String>, usize) {
    let (mut got, mut pages, mut before) = (Vec::new(), 0, String::new());
    loop {
        let (s, b) = server.get(&format!("/runs?limit={limit}{query}{before}"));
        assert_eq!(s, 200, "{query}: {b}");
        let page = ids(&b["runs"]);
        assert!(page.len() <= limit);
        got.extend(page);
        pages += 1;
        match b["next"].as_str() {
            Some(next) => before = format!("&before={next}"),
            None => return (got, pages),
        }
        assert!(pages < 10_000, "{query}: the cursor does not move");
    }
}

fn runs_page_past_a_thousand_and_every_filter_combination_finds_exactly_its_runs(backend: Backend) {
    let home = Home::with_backend(backend);
    let truth = populate(&home, 1_050);
    let server = Server::start(&home);

    // No cap at 1,000: two pages hold every run, newest first, each once.
    let (all, pages) = all_pages(&server, "", 1000);
    assert_eq!(pages, 2);
    assert_eq!(all, truth.iter().map(|t| t.0.clone()).collect::<Vec<_>>());

    // Every combination of the filters (each given or not: 4 × 4 × 4 = 64), paged 90 at a time.
    let mut checked = 0;
    for design in [None, Some(0), Some(1), Some(2)] {
        for status in [None, Some(0), Some(1), Some(2)] {
            for mode in [None, Some(0), Some(1), Some(2)] {
                let mut query = String::new();
                if let Some(d) = design {
                    query.push_str(&format!("&design={}", DESIGNS[d]));
                }
                if let Some(s) = status {
                    query.push_str(&format!("&status={}", STATUSES[s]));
                }
                if let Some(m) = mode {
                    query.push_str(&format!("&trigger={}", MODES[m]));
                }
                let want: Vec<String> = truth
                    .iter()
                    .filter(|t| {
                        design.is_none_or(|d| t.1 == DESIGNS[d])
                            && status.is_none_or(|s| t.2 == STATUSES[s])
                            && mode.is_none_or(|m| t.3 == MODES[m])
                    })
                    .map(|t| t.0.clone())
                    .collect();
                let (got, _) = all_pages(&server, &query, 90);
                assert_eq!(got, want, "{query}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 64);

    // Search by run id: a whole id finds that run, a prefix every run it starts.
    let target = &truth[500].0;
    for prefix in [&target[..], &target[..4], &target[..1]] {
        let want: Vec<String> = truth.iter().filter(|t| t.0.starts_with(prefix)).map(|t| t.0.clone()).collect();
        let (got, _) = all_pages(&server, &format!("&id={prefix}"), 1000);
        assert_eq!(got, want, "id={prefix}");
    }

    // The same pages from the CLI.
    let (code, body) = home.json(&["runs", "--design", "beta", "--status", "failed", "--limit", "5"]);
    assert_eq!(code, 0, "{body}");
    let want: Vec<String> = truth.iter().filter(|t| t.1 == "beta" && t.2 == "failed").map(|t| t.0.clone()).collect();
    assert_eq!(ids(&body["runs"]), want[..5]);
    let next = body["next"].as_str().expect("a next cursor");
    let (_, body) = home.json(&["runs", "--design", "beta", "--status", "failed", "--limit", "5", "--before", next]);
    assert_eq!(ids(&body["runs"]), want[5..10]);
    let out = home.vwf().args(["runs", "--trigger", "event", "--limit", "2"]).output().expect("vwf");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Older runs may match: add --before"), "{text}");
    drop(server);
}

fn a_rare_filter_pages_on_without_reading_every_run_at_once(backend: Backend) {
    let home = Home::with_backend(backend);
    let truth = populate(&home, 2_300);
    // Only the oldest run is of this design.
    let oldest = truth.last().expect("runs").0.clone();
    let store = home.store();
    let id = RunId::parse(&oldest).expect("id");
    let mut run = store.read_run(&id).wait().expect("oldest");
    run["design"] = json!("rare");
    store.import_run(&id, &run).wait().expect("rewrite");
    let server = Server::start(&home);
    let (s, first) = server.get("/runs?design=rare");
    assert_eq!(s, 200, "{first}");
    assert_eq!(first["runs"], json!([]), "the first page looked at its share of runs and stopped");
    let cursor = first["next"].as_str().expect("a cursor to continue");
    assert_eq!(cursor, truth[vwf_core::limits::RUNS_SCANNED_PER_PAGE - 1].0);
    let (got, pages) = all_pages(&server, "&design=rare", 20);
    assert_eq!((got, pages), (vec![oldest], 2));
}

fn bad_filters_and_unknown_cursors_are_refused(backend: Backend) {
    let home = Home::with_backend(backend);
    populate(&home, 3);
    let server = Server::start(&home);
    for bad in ["status=finished", "trigger=cron", "design=../x", "id=XYZ", "id=", "before=nothex", "status=", "limit=1001"] {
        let (s, b) = server.get(&format!("/runs?{bad}"));
        assert_eq!((s, &b["ok"]), (400, &json!(false)), "{bad}: {b}");
    }
    let (s, b) = server.get("/runs?before=ffffffffffff");
    assert_eq!(s, 404, "{b}");
    assert!(b["error"].as_str().is_some_and(|e| e.contains("ffffffffffff")), "{b}");
    for (args, code) in
        [(vec!["runs", "--status", "finished"], 2), (vec!["runs", "--before", "ffffffffffff"], 3), (vec!["runs", "--limit", "0"], 2)]
    {
        let out = home.vwf().args(&args).output().expect("vwf");
        assert_eq!(common::code(&out), code, "{args:?}");
    }
}

/// Deleting a design (`DELETE /designs/{name}`, `vwf delete NAME`): the design is gone, its runs
/// stay readable and listed under its name, and its schedule job is paused and says why (it fires
/// nothing); a refused delete (cross-origin, bad name, no such design) changes nothing.
#[test]
fn deleting_a_design_keeps_its_runs_and_pauses_its_schedule() {
    let home = Home::new();
    let hello = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "o", "type": "output", "template": "hello {{trigger.who}}"}], "edges": [{"from": "start", "to": "o"}]});
    home.save("brief", &hello);
    home.save("other", &hello);
    let (_, first) = home.json(&["run", "brief", "--input", r#"{"who": "Ada"}"#]);
    let (code, job) = home.json(&["schedule", "set", "brief", "--preset", "daily", "--time", "9:00"]);
    assert_eq!(code, 0, "{job}");
    let server = Server::start(&home);
    let second = server.run_id("brief", json!({"who": "Bo"}));

    let before = common::snapshot(&home);
    let cross = server.authed(server.client.delete(server.url("/designs/brief")).header("Origin", "http://evil.example"));
    assert_eq!(common::server::send(cross).0, 403);
    for (path, status) in [("/designs/..%2Fx", 400), ("/designs/ghost", 404)] {
        let (s, b) = common::server::send(server.authed(server.client.delete(server.url(path))));
        assert_eq!((s, &b["ok"]), (status, &json!(false)), "{path}: {b}");
    }
    assert_eq!(common::snapshot(&home), before, "a refused delete wrote something");

    let (s, b) = common::server::send(server.authed(server.client.delete(server.url("/designs/brief"))));
    assert_eq!(s, 200, "{b}");
    assert_eq!((&b["ok"], &b["name"], &b["deleted"]), (&json!(true), &json!("brief"), &json!(true)));
    assert_eq!((&b["schedule"]["paused"], &b["schedule"]["next_run_at"]), (&json!(true), &Value::Null), "{b}");
    assert!(b["schedule"]["paused_reason"].as_str().is_some_and(|r| r.contains("deleted")), "{b}");
    assert_eq!(server.get("/designs/brief").0, 404);
    assert_eq!(server.get("/designs").1["designs"], json!(["other"]));

    // Its runs: readable one by one and listed under its name.
    let first_id = first["run_id"].as_str().expect("run id");
    let (s, run) = server.get(&format!("/runs/{first_id}"));
    assert_eq!((s, &run["design"], &run["outputs"]["o"]["text"]), (200, &json!("brief"), &json!("hello Ada")), "{run}");
    let (_, listed) = server.get("/runs?design=brief");
    assert_eq!(ids(&listed["runs"]), [second.clone(), first_id.to_string()]);

    // The paused job fires nothing, and says why wherever it is listed.
    let (_, jobs) = server.get("/schedules");
    assert_eq!(jobs["schedules"][0]["paused_reason"], b["schedule"]["paused_reason"]);
    let (_, fired) = home.json_at("2026-12-01T09:00:30Z", &["schedule", "tick"]);
    assert_eq!(fired["fired"], json!([]), "{fired}");
    let out = home.vwf().args(["schedule", "list"]).output().expect("vwf");
    assert!(String::from_utf8_lossy(&out.stdout).contains("its design \"brief\" was deleted"), "{out:?}");
    assert_eq!(server.get("/designs/brief").0, 404);

    // The CLI does the same.
    let (code, body) = home.json(&["delete", "other"]);
    assert_eq!((code, &body["deleted"], &body["schedule"]), (0, &json!(true), &Value::Null), "{body}");
    let (code, body) = home.json(&["delete", "other"]);
    assert_eq!((code, &body["ok"]), (3, &json!(false)), "{body}");
    // A design saved again under the name, then its job resumed, fires again and forgets the reason.
    home.save("brief", &hello);
    let (code, body) = home.json(&["schedule", "resume", "wf-brief"]);
    assert_eq!((code, body["job"].get("paused_reason")), (0, None), "{body}");
}

/// A damaged job file does not turn a delete into an error after the design is gone: the design
/// is deleted, the answer says no job was paused, and the damaged file (which ticks skip) stays.
/// A schedule set for a design that is gone is refused and writes nothing.
#[test]
fn deleting_a_design_whose_job_file_is_damaged_still_answers_and_no_job_outlives_it() {
    let home = Home::new();
    let hello = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, {"id": "o", "type": "output"}], "edges": [{"from": "start", "to": "o"}]});
    home.save("brief", &hello);
    let (code, job) = home.json(&["schedule", "set", "brief", "--preset", "daily", "--time", "9:00"]);
    assert_eq!(code, 0, "{job}");
    let job_file = home.path().join("workflow-schedules/wf-brief.json");
    std::fs::write(&job_file, "{damaged").expect("damage the job file");
    let (code, body) = home.json(&["delete", "brief"]);
    assert_eq!((code, &body["deleted"], &body["schedule"]), (0, &json!(true), &Value::Null), "{body}");
    assert_eq!(std::fs::read_to_string(&job_file).expect("job file"), "{damaged");
    assert!(!home.path().join("workflow-designs/brief.json").exists(), "the design is gone");

    let before = common::snapshot(&home);
    let (code, body) = home.json(&["schedule", "set", "brief", "--preset", "daily", "--time", "9:00"]);
    assert_eq!((code, &body["ok"]), (3, &json!(false)), "{body}");
    assert_eq!(common::snapshot(&home), before, "a refused schedule wrote something");
}
