//! `GET /stats` and `vwf stats`: what the runs of a period did. A report must equal a recount of
//! the runs it covers: over generated records on both stores (a property test against a brute-force
//! count written apart from `vwf_core::stats`), and over real runs through the CLI and the API,
//! including after the store lost its stats (the file store rebuilds `.stats`, PostgreSQL fills
//! its table in).

use crate::common;
use vwf_store::Wait;

use std::collections::{BTreeMap, HashMap};

use chrono::TimeDelta;
use common::server::Server;
use common::{Backend, Home, failing};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Status;
use vwf_core::stats::{Bucket, Query, RunStats, StepStats, report};
use vwf_core::time::{self, Ts};
use vwf_core::usage::Usage;

const DESIGNS: [&str; 3] = ["alpha", "beta", "gamma"];
const NODES: [&str; 3] = ["fetch", "write", "send"];

fn base() -> Ts {
    time::parse("2026-06-01T00:00:00Z").unwrap_or_default()
}

/// A generated record: run `id` (few, so runs end more than once), ending `end_min` minutes into
/// the case's window.
#[derive(Debug, Clone)]
struct Gen {
    id: u8,
    design: usize,
    failed: bool,
    end_min: i64,
    ms: u64,
    tokens: (u64, u64, u64),
    cost: Option<u32>,
    steps: Vec<(usize, u64, u64, Option<u32>)>,
}

fn generated() -> impl Strategy<Value = Gen> {
    (
        0u8..24,
        0usize..3,
        any::<bool>(),
        0i64..(5 * 24 * 60),
        0u64..200_000,
        (0u64..5000, 0u64..5000, 0u64..100),
        prop::option::weighted(0.8, 0u32..10_000),
        prop::collection::vec((0usize..3, 1u64..5, 0u64..50_000, prop::option::weighted(0.8, 0u32..5_000)), 0..3),
    )
        .prop_map(|(id, design, failed, end_min, ms, tokens, cost, steps)| Gen {
            id,
            design,
            failed,
            end_min,
            ms,
            tokens,
            cost,
            steps,
        })
}

/// The record of `g` in the window starting at `window`, its run ids unique to the window.
fn record(g: &Gen, window: Ts, case: u32) -> RunStats {
    let ended_at = window + TimeDelta::minutes(g.end_min);
    let mut bytes = [0u8; 6];
    bytes[..4].copy_from_slice(&case.to_be_bytes());
    bytes[5] = g.id;
    let mut steps: BTreeMap<&str, StepStats> = BTreeMap::new();
    for (node, count, total, cost) in &g.steps {
        steps.insert(
            NODES[*node],
            StepStats {
                node: NODES[*node].into(),
                count: *count,
                total_ms: *total,
                max_ms: total / count,
                usage: Usage::default(),
                cost: cost.map(|c| f64::from(c) / 10_000.0),
            },
        );
    }
    RunStats {
        run_id: RunId::from_bytes(bytes),
        design: DesignName::parse(DESIGNS[g.design]).unwrap_or_else(|e| panic!("{e}")),
        status: if g.failed { Status::Failed } else { Status::Done },
        started_at: ended_at - TimeDelta::milliseconds(g.ms as i64),
        ended_at,
        usage: Usage { input_tokens: g.tokens.0, output_tokens: g.tokens.1, cached_tokens: g.tokens.2 },
        cost: g.cost.map(|c| f64::from(c) / 10_000.0),
        currency: Some("EUR".into()),
        steps: steps.into_values().collect(),
    }
}

/// The report's figures recounted by hand, as JSON: per bucket start (and `"total"`), the runs,
/// their statuses, failure rate, percentiles (the smallest duration at or above which p% of the
/// runs lie), tokens, known cost and unpriced runs; and the step aggregates.
fn recount(q: &Query, written: &[RunStats]) -> Value {
    let mut last: HashMap<&RunId, &RunStats> = HashMap::new();
    for r in written {
        last.insert(&r.run_id, r);
    }
    let runs: Vec<&RunStats> = last
        .into_values()
        .filter(|r| r.ended_at >= q.from && r.ended_at < q.to && q.design.as_ref().is_none_or(|d| *d == r.design))
        .collect();
    let width = if q.bucket == Bucket::Hour { TimeDelta::hours(1) } else { TimeDelta::days(1) };
    let figures = |rs: &[&RunStats]| {
        let n = rs.len();
        let failed = rs.iter().filter(|r| r.status == Status::Failed).count();
        let mut ds: Vec<u64> = rs.iter().map(|r| (r.ended_at - r.started_at).num_milliseconds() as u64).collect();
        ds.sort_unstable();
        let pct = |p: usize| ds.iter().copied().find(|d| ds.iter().filter(|x| *x <= d).count() * 100 >= p * n);
        let cost = rs.iter().filter_map(|r| r.cost).fold(0.0, |a, c| vwf_core::usage::round(a + c));
        json!({
            "runs": n,
            "done": n - failed,
            "failed": failed,
            "failure_rate": (n > 0).then(|| failed as f64 / n as f64),
            "p50_ms": pct(50),
            "p95_ms": pct(95),
            "input_tokens": rs.iter().map(|r| r.usage.input_tokens).sum::<u64>(),
            "cached_tokens": rs.iter().map(|r| r.usage.cached_tokens).sum::<u64>(),
            "cost": cost,
            "unpriced_runs": rs.iter().filter(|r| r.cost.is_none()).count(),
        })
    };
    let mut out = serde_json::Map::new();
    out.insert("total".into(), figures(&runs));
    let mut start = q.from;
    while start < q.to {
        let end = start + width;
        let rs: Vec<&RunStats> = runs.iter().copied().filter(|r| r.ended_at >= start && r.ended_at < end).collect();
        out.insert(time::format(&start), figures(&rs));
        start = end;
    }
    let mut steps: BTreeMap<(String, String), (u64, u64, u64, f64)> = BTreeMap::new();
    for r in &runs {
        for s in &r.steps {
            let e = steps.entry((r.design.to_string(), s.node.clone())).or_default();
            e.0 += s.count;
            e.1 += s.total_ms;
            e.2 = e.2.max(s.max_ms);
            e.3 = vwf_core::usage::round(e.3 + s.cost.unwrap_or(0.0));
        }
    }
    out.insert("steps".into(), json!(steps.into_iter().map(|((d, n), v)| json!([d, n, v.0, v.1, v.2, v.3])).collect::<Vec<_>>()));
    Value::Object(out)
}

/// The same shape read from a report.
fn shape(r: &vwf_core::stats::Report) -> Value {
    let figures = |f: &vwf_core::stats::Figures| {
        json!({
            "runs": f.runs,
            "done": f.by_status.get("done").copied().unwrap_or(0),
            "failed": f.by_status.get("failed").copied().unwrap_or(0),
            "failure_rate": f.failure_rate,
            "p50_ms": f.p50_ms,
            "p95_ms": f.p95_ms,
            "input_tokens": f.usage.input_tokens,
            "cached_tokens": f.usage.cached_tokens,
            "cost": f.cost,
            "unpriced_runs": f.unpriced_runs,
        })
    };
    let mut out = serde_json::Map::new();
    out.insert("total".into(), figures(&r.totals));
    for b in &r.buckets {
        out.insert(time::format(&b.start), figures(&b.figures));
    }
    // Every node with a step appears in one of the lists when there are few; compare those listed.
    let mut listed: BTreeMap<(String, String), Value> = BTreeMap::new();
    for s in r.slowest_steps.iter().chain(&r.costliest_steps) {
        listed.insert((s.design.clone(), s.node.clone()), json!([s.design, s.node, s.count, s.total_ms, s.max_ms, s.cost]));
    }
    out.insert("steps".into(), json!(listed.into_values().collect::<Vec<_>>()));
    Value::Object(out)
}

/// Generated records written to a store (runs ending again included), then reported on for a
/// generated period, design and bucket: the report equals the recount, bucket by bucket.
fn a_report_equals_a_recount_of_its_records(backend: Backend) {
    let home = Home::with_backend(backend);
    let store = home.store();
    // A store with no runs: the first query makes its (empty) stats, which appends then add to.
    std::fs::create_dir_all(home.runs_dir()).expect("runs directory");
    assert_eq!(store.run_stats(base(), base(), None).wait().map(|r| r.len()).ok(), Some(0));
    let cases = std::sync::atomic::AtomicU32::new(0);
    let mut runner = TestRunner::new(Config { cases: 48, failure_persistence: None, ..Config::default() });
    let strategy = (prop::collection::vec(generated(), 0..40), prop::option::of(0usize..3), 0i64..(4 * 24), 1i64..(3 * 24), any::<bool>());
    runner
        .run(&strategy, |(gens, design, from_h, span_h, hours)| {
            let case = cases.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            // Each case has a window of its own, 30 days apart, so earlier cases' records never count.
            let window = base() + TimeDelta::days(30 * i64::from(case));
            let written: Vec<RunStats> = gens.iter().map(|g| record(g, window, case)).collect();
            for r in &written {
                store.add_run_stats(r).wait().map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let from = time::format(&(window + TimeDelta::hours(from_h)));
            let to = time::format(&(window + TimeDelta::hours(from_h + span_h)));
            let design = design.map(|d| DesignName::parse(DESIGNS[d]).unwrap_or_else(|e| panic!("{e}")));
            let bucket = if hours { Bucket::Hour } else { Bucket::Day };
            let q = Query::new(design, Some(&from), Some(&to), Some(bucket), window).map_err(TestCaseError::fail)?;
            let records = store.run_stats(q.from, q.to, q.design.as_ref()).wait().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let got = report(&q, records, None);
            prop_assert_eq!(shape(&got), recount(&q, &written));
            prop_assert!(got.slowest_steps.len() <= 10 && got.costliest_steps.iter().all(|s| s.cost > 0.0));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

fn ok_design() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "hello", "type": "command", "argv": ["echo", "hello"]}
        ],
        "edges": [{"from": "start", "to": "hello"}]
    })
}

/// Real runs leave their records: the API and the CLI answer the same report, which counts what
/// the runs listing shows (test runs apart); a store that lost its stats rebuilds them; a bad
/// query is a 400 naming the parameter.
fn runs_leave_records_and_a_lost_stats_store_is_rebuilt(backend: Backend) {
    let home = Home::with_backend(backend);
    home.save("steady", &ok_design());
    home.save("shaky", &failing());
    for _ in 0..3 {
        assert_eq!(home.json(&["run", "steady"]).0, 0);
    }
    for _ in 0..2 {
        assert_eq!(home.json(&["run", "shaky"]).0, 1);
    }
    assert_eq!(home.json(&["run", "steady", "--test"]).0, 0, "a test run, never in the stats");

    let (code, cli) = home.json(&["stats"]);
    assert_eq!(code, 0, "{cli}");
    assert_eq!((cli["totals"]["runs"].as_u64(), cli["totals"]["by_status"]["failed"].as_u64()), (Some(5), Some(2)), "{cli}");
    assert_eq!(cli["totals"]["failure_rate"].as_f64(), Some(0.4), "{cli}");
    assert!(cli["totals"]["p95_ms"].as_u64() >= cli["totals"]["p50_ms"].as_u64(), "{cli}");
    let days = cli["buckets"].as_array().map_or(0, Vec::len);
    assert!(days == 8 || days == 7, "7 days back from now, the first from its midnight: {cli}");
    let steps: Vec<&str> = cli["slowest_steps"].as_array().into_iter().flatten().filter_map(|s| s["node"].as_str()).collect();
    assert!(steps.contains(&"hello") && steps.contains(&"boom"), "{cli}");

    let server = Server::start(&home);
    let (status, api) = server.get("/stats");
    assert_eq!(status, 200, "{api}");
    assert_eq!(api["totals"], cli["totals"]);
    let (status, shaky) = server.get("/stats?design=shaky&bucket=hour");
    assert_eq!(status, 200, "{shaky}");
    let hours = shaky["buckets"].as_array().map_or(0, Vec::len);
    assert!(shaky["totals"]["runs"] == 2 && (hours == 25 || hours == 24), "{shaky}");
    // The runs listing takes the same period, and how long a run took.
    let count = |q: &str| server.get(&format!("/runs?{q}")).1["runs"].as_array().map_or(usize::MAX, Vec::len);
    assert_eq!((count("to=2100-01-01"), count("from=2100-01-01"), count("min_duration=1h")), (6, 0, 0));
    assert_eq!(count("design=shaky&from=2000-01-01T00:00:00Z&min_duration=1s"), 0, "a failing command takes milliseconds");
    let (status, body) = server.get("/runs?min_duration=5%20min");
    assert_eq!(status, 400, "{body}");
    let before = common::snapshot(&home);
    for (query, names) in [
        ("from=2026-99-01", "from=\"2026-99-01\""),
        ("to=2026-12-01&from=2026-12-02", "before to"),
        ("bucket=week", "bucket=\"week\""),
        ("from=2000-01-01&bucket=hour", "more than 2000"),
        ("design=../x", "design=\"../x\""),
    ] {
        let (status, body) = server.get(&format!("/stats?{query}"));
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body["error"].as_str().is_some_and(|e| e.contains(names)), "{query}: {body}");
    }
    assert!(common::snapshot(&home) == before, "a refused query writes nothing");
    drop(server);

    match &home.database {
        None => std::fs::remove_file(home.runs_dir().join(".stats")).expect("remove .stats"),
        Some(url) => common::pg::forget_stats(url),
    }
    let (_, rebuilt) = home.json(&["stats"]);
    assert_eq!(rebuilt["totals"], cli["totals"], "rebuilt from the runs");
    let (_, again) = home.json(&["stats"]);
    assert_eq!(again["totals"], cli["totals"]);
    let (code, text) = {
        let out = home.vwf().args(["stats", "--design", "shaky"]).output().expect("vwf stats");
        (common::code(&out), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("2 runs, 2 failed (100.0%)") && text.contains("boom"), "{text}");
}

crate::on_both_backends!(a_report_equals_a_recount_of_its_records, runs_leave_records_and_a_lost_stats_store_is_rebuilt);
