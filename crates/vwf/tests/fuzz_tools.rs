//! Property tests: the five agent tools, `call_text` and the `/workflow` chat command never panic
//! and always answer the contract's JSON (SPEC §11, §12, §13 status policy), whatever they are fed.
//!
//! `tools::call` and `slash::handle` catch panics themselves and turn them into a 500 / an
//! "internal error" reply, so the properties also assert that no such reply ever comes back:
//! that proves no panic (and no other internal failure) happened inside.
//!
//! Arguments are either arbitrary JSON or near-valid: names from a small pool (so saves, loads
//! and runs meet each other) plus hostile ones, random graphs built from the real node types and
//! fields, known valid designs, run ids of runs that really exist, node names and answers.
//! All cases of one property share one temporary home, so later cases see what earlier ones made.
//! Command nodes only ever carry harmless commands, and HTTP nodes only a closed local port.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use vwf::app::App;
use vwf::slash;
use vwf::tools::{self, Reply, TOOL_NAMES};

const TOOL_CASES: u32 = 2000;
const RAW_ARGS_CASES: u32 = 500;
const CALL_TEXT_CASES: u32 = 1000;
const SLASH_CASES: u32 = 1000;

const STATUSES: [u16; 6] = [200, 400, 404, 409, 502, 503];
const RUN_STATUSES: [&str; 9] = vwf_core::listing::STATUSES;
const SLASH_INTERNAL: &str = "Sorry: /workflow hit an internal error";

fn config(cases: u32) -> Config {
    Config { cases, failure_persistence: None, max_shrink_iters: 2000, ..Config::default() }
}

/// Runs `f` on a thread with a large stack: the value trees of the nested graph strategies
/// are deep, and unoptimised test builds overflow the default 2 MiB test-thread stack.
fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new().stack_size(256 << 20).spawn_scoped(s, f).expect("spawn");
        handle.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

fn home() -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::open(dir.path().to_path_buf()).expect("open app");
    (dir, app)
}

// ---- strategies: arbitrary JSON ----

fn interesting_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("../x".to_string()),
        Just("a".repeat(64)),
        Just("a".repeat(65)),
        Just("café".to_string()),
        Just("日本語".to_string()),
        Just("{{".to_string()),
        Just("}}".to_string()),
        Just("\u{0}".to_string()),
        Just("🦀".repeat(20)),
        "\\PC{0,24}",
        "[a-z._-]{0,12}",
    ]
}

fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "id", "type", "nodes", "edges", "from", "to", "label", "name", "graph", "input", "run_id", "node",
            "answer", "output", "agent_generate", "activities", "budget", "tokens", "prompt", "expr", "mode",
        ])
        .prop_map(String::from),
        1 => interesting_string(),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
        interesting_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((json_key(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

// ---- strategies: near-valid pieces ----

const NAME_POOL: [&str; 4] = ["alpha", "beta", "gamma", "d.e_f-1"];
const NODE_IDS: [&str; 12] = ["start", "a", "b", "a.b", "check", "gate", "draft", "send", "pause", "loop1", "bad id", ""];

fn design_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(NAME_POOL.to_vec()).prop_map(String::from),
        1 => Just("../x".to_string()),
        1 => Just(String::new()),
        1 => Just("a".repeat(65)),
        1 => Just("b".repeat(64)),
        1 => prop::sample::select(vec!["café", "ñame", "日本", ".hidden", "-x", "a/b", "a b", "..", "x\u{0}"]).prop_map(String::from),
        1 => "[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
        1 => "\\PC{0,70}",
    ]
}

fn node_id() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(NODE_IDS.to_vec()).prop_map(String::from),
        1 => Just("n".repeat(65)),
        1 => "\\PC{0,8}",
    ]
}

fn template_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            "{{nodes.a}}",
            "{{ nodes.a.b.words }}",
            "{{nodes.check.value}}",
            "{{nodes.start}}",
            "{{trigger}}",
            "{{trigger.n}}",
            "{{trigger.items.0.title}}",
            "{{item}}",
            "{{item.x}}",
            "{{loop.index}}",
            "{{run.id}}",
            "{{run.design}}",
            "{{",
            "}}",
            "{{}}",
            "{{nodes.}}",
            "{{nodes.ü}}",
            "{{ nodes.gate.answer }}",
            "{{nodes.a..b}}",
            "{{nodes.draft.data.k}}",
            "{{bogus}}",
            "{{{{nodes.a}}}}",
            "hello ",
            "é",
            "\n",
        ])
        .prop_map(String::from),
        "\\PC{0,6}",
    ];
    prop::collection::vec(piece, 0..5).prop_map(|v| v.concat())
}

fn expr_text() -> impl Strategy<Value = String> {
    let reference = prop::sample::select(vec![
        "start.n",
        "a",
        "a.b.words",
        "check.value",
        "gate.answer",
        "draft.data.k",
        "nowhere.x",
        "",
        "a..b",
        "é",
        "start",
    ]);
    let op = prop::sample::select(vec!["==", "!=", ">", ">=", "<", "<=", "=", "=>", "<>", "", "≥"]);
    let literal = prop::sample::select(vec![
        "3",
        "-0",
        "1e400",
        "1.5",
        "'5'",
        "\"x\\\"y\"",
        "true",
        "false",
        "null",
        "NaN",
        "'é",
        "\"unterminated",
        "",
        "0x10",
        "é",
    ]);
    prop_oneof![
        4 => (reference, op, literal, prop::bool::ANY).prop_map(|(r, o, l, spaced)| {
            if spaced { format!("out.{r} {o} {l}") } else { format!("out.{r}{o}{l}") }
        }),
        1 => "\\PC{0,24}",
        1 => "out\\.[a-zé. ]{0,10}[<>=! ]{0,3}[0-9'\"é ]{0,5}",
    ]
}

fn number_field() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![-1i64, 0, 1, 2, 3, 4, 59, 60, 120, 300, 3600, 3601, 4320, 4321, 10_000, 10_001, i64::MAX])
            .prop_map(|n| json!(n)),
        Just(json!(1.5)),
        Just(json!(1e20)),
        Just(json!("5")),
        Just(Value::Null),
    ]
}

fn string_from(pool: Vec<&'static str>) -> impl Strategy<Value = Value> {
    prop_oneof![4 => prop::sample::select(pool).prop_map(|s| json!(s)), 1 => arb_json()]
}

fn options_field() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(["approve", "reject"])),
        Just(json!(["send", "skip"])),
        Just(json!(["Send", "send"])),
        Just(json!([])),
        Just(json!(["", " "])),
        Just(json!("approve")),
        prop::collection::vec(interesting_string().prop_map(Value::String), 0..4).prop_map(Value::Array),
    ]
}

fn schedule_field() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["hourly", "daily", "weekdays", "weekly", "custom", "bogus", ""]),
        prop::sample::select(vec!["09:00", "25:00", "9", "", "ab:cd", "23:59", "00:60", "é9:00"]),
        number_field(),
        number_field(),
        prop::sample::select(vec!["*/15 9-17 * * 1-5", "61 * * * *", "* * *", "a-b/0 * * * *", "5-1 * * * *", "*/0 * * * *", "", "é * * * *", "0 0 31 2 *"]),
        prop::sample::select(vec!["UTC", "Europe/Paris", "Mars/Olympus", ""]),
    )
        .prop_map(|(preset, time, minute, dow, cron, tz)| json!({"preset": preset, "time": time, "minute": minute, "dow": dow, "cron": cron, "tz": tz}))
}

/// A node of a real or bogus type with a random subset of the real fields.
fn node() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        10 => prop::sample::select(vec![
            "trigger", "agent", "condition", "approval", "output", "note", "command", "http", "loop", "wait", "emit",
        ])
        .prop_map(|s| json!(s)),
        1 => Just(json!("teleport")),
        1 => arb_json(),
    ];
    let fields = (
        (
            prop::option::of(string_from(vec!["manual", "schedule", "heartbeat", "event", "folder", "watch", "bogus"])),
            prop::option::of(schedule_field()),
            prop::option::of(string_from(vec!["30m", "1m", "0m", "25h", "24h", "59s", "x"])),
            prop::option::of(string_from(vec!["08:00-18:00", "22:00-02:00", "18:00-08:00", "x", "08:00"])),
            prop::option::of(string_from(vec!["mon-fri", "sun-sat", "fri-mon", "x", ""])),
            prop::option::of(prop_oneof![Just(json!(["news", "alerts.*"])), Just(json!([])), Just(json!(["*", ""])), arb_json()]),
        ),
        (
            prop::option::of(template_text().prop_map(Value::String)),
            prop::option::of(expr_text().prop_map(Value::String)),
            prop::option::of(string_from(vec!["Send?", "", " "])),
            prop::option::of(options_field()),
            prop::option::of(number_field()),
            prop::option::of(string_from(vec!["reject", "escalate", "panic"])),
        ),
        (
            prop::option::of(string_from(vec!["notification", "channel", "", "carrier-pigeon"])),
            prop::option::of(string_from(vec![
                "telegram",
                "slack",
                "discord",
                "telegram:123456",
                "telegram:-100123:17585",
                "telegram:@bot",
                "telegram:12:",
                "slack:#ops",
                "discord:alerts",
                "webhook:hook",
                "pigeon:roof",
                ":",
                "",
                "telegram:é",
            ])),
            prop::option::of(template_text().prop_map(Value::String)),
            prop::option::of(number_field()),
            prop::option::of(number_field()),
            prop::option::of(number_field()),
        ),
        (
            // Commands are harmless, HTTP goes to a closed local port: nothing leaves the test.
            prop::option::of(prop::sample::select(vec!["echo hi", "true", "", "echo {{trigger.n}}"]).prop_map(|s| json!(s))),
            prop::option::of(prop_oneof![Just(json!(["echo", "hi"])), Just(json!([])), Just(json!([1])), Just(json!("echo"))]),
            prop::option::of(
                prop::sample::select(vec!["http://127.0.0.1:9/x", "ftp://x", "{{trigger.url}}", "", "HTTPS://127.0.0.1:9"])
                    .prop_map(|s| json!(s)),
            ),
            prop::option::of(string_from(vec!["GET", "post", "BREW", ""])),
            prop::option::of(prop_oneof![
                Just(json!(200)),
                Just(json!("2xx")),
                Just(json!("5XX")),
                Just(json!("200-1000")),
                Just(json!("éx")),
                Just(json!([200, "3xx"])),
                Just(json!([])),
                arb_json()
            ]),
            prop::option::of(prop_oneof![Just(json!({"k": "{{trigger.n}}"})), Just(json!({"k": 1})), arb_json()]),
        ),
        (
            prop::option::of(template_text().prop_map(Value::String)),
            prop::option::of(string_from(vec!["30s", "5m", "1h", "2h", "0s", "", "1x", "é"])),
            prop::option::of(string_from(vec!["ready", "a.b:c-d", "bad event", ""])),
            prop::option::of(prop_oneof![template_text().prop_map(Value::String), arb_json()]),
            prop::option::of(number_field()),
            prop::option::of(number_field()),
        ),
        prop::option::of((json_key(), arb_json())),
    );
    (node_id(), kind, fields).prop_map(|(id, kind, (t, a, o, c, l, extra))| {
        let mut m = Map::new();
        m.insert("id".into(), Value::String(id));
        m.insert("type".into(), kind);
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        put("mode", t.0);
        put("schedule", t.1);
        put("every", t.2);
        put("window", t.3);
        put("days", t.4);
        put("sources", t.5);
        put("prompt", a.0);
        put("expr", a.1);
        put("question", a.2);
        put("options", a.3);
        put("timeout_minutes", a.4);
        put("on_timeout", a.5);
        put("deliver", o.0);
        put("target", o.1);
        put("template", o.2);
        put("retries", o.3);
        put("timeout_seconds", o.4);
        put("max_tokens", o.5);
        put("run", c.0);
        put("argv", c.1);
        put("url", c.2);
        put("method", c.3);
        put("accept", c.4);
        put("headers", c.5);
        put("over", l.0);
        put("duration", l.1);
        put("event", l.2);
        put("payload", l.3);
        put("seconds", l.4);
        put("max_items", l.5);
        if let Some((k, v)) = extra {
            m.insert(k, v);
        }
        Value::Object(m)
    })
}

fn edge() -> impl Strategy<Value = Value> {
    let label =
        prop::option::of(prop::sample::select(vec!["true", "FALSE", "each", "done", "send", "skip", "approve", "reject", "x", "", "é"]));
    prop_oneof![
        8 => (node_id(), node_id(), label).prop_map(|(from, to, label)| match label {
            Some(l) => json!({"from": from, "to": to, "label": l}),
            None => json!({"from": from, "to": to}),
        }),
        1 => arb_json(),
    ]
}

/// A random graph from the real vocabulary: mostly invalid, sometimes valid.
fn random_graph() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(node(), 0..10),
        prop::collection::vec(edge(), 0..12),
        prop::option::of(prop_oneof![Just(json!({"tokens": 100})), Just(json!({"tokens": 0})), arb_json()]),
        prop::option::of(prop_oneof![Just(json!(["first", {"name": "second", "prompt": "p"}, {"type": "output"}])), arb_json()]),
        0..4u8,
    )
        .prop_map(|(nodes, edges, budget, activities, shape)| {
            let mut g = Map::new();
            match shape {
                0 => {
                    // The sequential form.
                    g.insert("activities".into(), activities.unwrap_or(json!([])));
                }
                _ => {
                    g.insert("nodes".into(), Value::Array(nodes));
                    if shape != 1 {
                        g.insert("edges".into(), Value::Array(edges));
                    }
                }
            }
            if let Some(b) = budget {
                g.insert("budget".into(), b);
            }
            Value::Object(g)
        })
}

/// Valid designs that reach every kind of end (done, gate, agent, wait, failed delivery,
/// failed condition, unsupported step), with a few random knobs.
fn valid_graph() -> impl Strategy<Value = Value> {
    let literal = prop::sample::select(vec!["3", "'5'", "true", "null", "-1"]);
    let op = prop::sample::select(vec!["==", "!=", ">", "<="]);
    (0..8u8, literal, op, options_field(), 1..4000u64)
        .prop_map(|(which, lit, op, options, minutes)| valid_design(which, lit, op, options, minutes))
}

fn valid_design(which: u8, lit: &str, op: &str, options: Value, minutes: u64) -> Value {
    let op = if lit.starts_with('\'') || lit == "true" || lit == "null" { "==" } else { op };
    let options = match options.as_array() {
        Some(a) if !a.is_empty() && a.iter().all(|o| o.as_str().is_some_and(|s| !s.trim().is_empty())) => options.clone(),
        _ => json!(["approve", "reject"]),
    };
    let t = json!({"id": "start", "type": "trigger", "mode": "manual"});
    {
        match which {
            0 => {
                json!({"nodes": [t, {"id": "check", "type": "condition", "expr": format!("out.start.n {op} {lit}")},
                                 {"id": "a", "type": "output", "template": "n={{trigger.n}}"}, {"id": "b", "type": "output"}],
                        "edges": [{"from": "start", "to": "check"}, {"from": "check", "to": "a", "label": "true"},
                                  {"from": "check", "to": "b", "label": "false"}]})
            }
            1 => {
                json!({"nodes": [t, {"id": "gate", "type": "approval", "question": "Go?", "options": options, "timeout_minutes": minutes.min(4320)},
                                 {"id": "send", "type": "output", "template": "{{nodes.gate}}"}],
                        "edges": [{"from": "start", "to": "gate"}, {"from": "gate", "to": "send"}]})
            }
            2 => {
                json!({"nodes": [t, {"id": "draft", "type": "agent", "prompt": "Say {{trigger}}", "retries": 1},
                                 {"id": "a.b", "type": "condition", "expr": format!("out.draft.words {op} 3")},
                                 {"id": "send", "type": "output"}],
                        "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "a.b"},
                                  {"from": "a.b", "to": "send", "label": "TRUE"}]})
            }
            3 => {
                json!({"nodes": [t, {"id": "pause", "type": "wait", "duration": "5m"}, {"id": "send", "type": "output"}],
                        "edges": [{"from": "start", "to": "pause"}, {"from": "pause", "to": "send"}]})
            }
            4 => {
                json!({"nodes": [t, {"id": "send", "type": "output", "deliver": "channel", "target": "slack:#ops"}],
                        "edges": [{"from": "start", "to": "send"}]})
            }
            5 => {
                json!({"nodes": [t, {"id": "a", "type": "command", "argv": ["echo", "hi"]}, {"id": "b", "type": "http", "url": "http://127.0.0.1:9/"},
                                 {"id": "c", "type": "emit", "event": "ready"}],
                        "edges": [{"from": "start", "to": "a"}, {"from": "start", "to": "b"}, {"from": "start", "to": "c"}]})
            }
            6 => {
                json!({"nodes": [t, {"id": "loop1", "type": "loop", "over": "{{trigger.items}}"}, {"id": "a", "type": "output", "template": "{{item}}"},
                                 {"id": "b", "type": "output"}],
                        "edges": [{"from": "start", "to": "loop1"}, {"from": "loop1", "to": "a", "label": "each"},
                                  {"from": "loop1", "to": "b", "label": "done"}]})
            }
            _ => {
                json!({"activities": ["first {{trigger}}", {"id": "gate", "type": "approval", "question": "ok?"}, {"type": "output"}]})
            }
        }
    }
}

/// The first half of `s` (cut on a character boundary): truncated JSON.
fn first_half(s: &str) -> String {
    s.chars().take(s.chars().count() / 2).collect()
}

fn graph() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => valid_graph(),
        4 => random_graph(),
        1 => valid_graph().prop_map(|g| Value::String(g.to_string())),
        1 => random_graph().prop_map(|g| Value::String(first_half(&g.to_string()))),
        1 => arb_json(),
    ]
}

fn input() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        number_field().prop_map(|n| json!({"n": n})),
        Just(json!({"n": "many", "items": [{"title": "t"}]})),
        arb_json(),
    ]
}

/// A run id, resolved when the case runs: `$known:<i>` picks a run that exists.
fn run_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => any::<usize>().prop_map(|i| json!(format!("$known:{i}"))),
        6 => any::<usize>().prop_map(|i| json!(format!("$parked:{i}"))),
        1 => Just(json!("0123456789ab")),
        1 => Just(json!("ABCDEF012345")),
        1 => Just(json!("../../etc/x")),
        1 => Just(json!("")),
        1 => Just(json!("éééééé")),
        1 => "[0-9a-f]{12}".prop_map(|s| json!(s)),
        1 => "[0-9a-f]{11,13}".prop_map(|s| json!(s)),
        1 => arb_json(),
    ]
}

fn answer_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => prop::sample::select(vec!["approve", "reject", "send", "skip", " SEND ", "", "maybe"]).prop_map(|s| json!(s)),
        1 => interesting_string().prop_map(Value::String),
        1 => arb_json(),
    ]
}

/// Arguments for one tool, mostly near-valid.
fn tool_args(tool: &'static str) -> BoxedStrategy<Value> {
    let maybe = |v: Option<Value>, m: &mut Map<String, Value>, k: &str| {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    };
    match tool {
        "workflow_design_save" => {
            (prop::option::weighted(0.9, design_name().prop_map(Value::String)), prop::option::weighted(0.9, graph()))
                .prop_map(move |(name, graph)| {
                    let mut m = Map::new();
                    maybe(name, &mut m, "name");
                    maybe(graph, &mut m, "graph");
                    Value::Object(m)
                })
                .boxed()
        }
        "workflow_design_load" => prop::option::weighted(0.9, prop_oneof![4 => design_name().prop_map(Value::String), 1 => arb_json()])
            .prop_map(move |name| {
                let mut m = Map::new();
                maybe(name, &mut m, "name");
                Value::Object(m)
            })
            .boxed(),
        "workflow_design_validate" => {
            (prop::option::weighted(0.9, design_name().prop_map(Value::String)), prop::option::weighted(0.9, graph()))
                .prop_map(move |(name, graph)| {
                    let mut m = Map::new();
                    maybe(name, &mut m, "name");
                    maybe(graph, &mut m, "graph");
                    Value::Object(m)
                })
                .boxed()
        }
        "workflow_design_run" => (prop::option::weighted(0.9, design_name().prop_map(Value::String)), prop::option::weighted(0.9, input()))
            .prop_map(move |(name, input)| {
                let mut m = Map::new();
                maybe(name, &mut m, "name");
                maybe(input, &mut m, "input");
                Value::Object(m)
            })
            .boxed(),
        _ => prop_oneof![
            1 => well_formed_respond(),
            1 => any_respond(),
        ]
        .boxed(),
    }
}

/// A respond to a parked run's parked node, with a plausible answer or output.
fn well_formed_respond() -> impl Strategy<Value = Value> {
    (
        any::<usize>(),
        prop::sample::select(vec!["approve", "reject", "send", "skip", " SEND ", "maybe", "Sunny."]),
        prop::sample::select(vec!["answer", "answer", "output", "agent_generate"]),
    )
        .prop_map(|(i, text, key)| {
            let value = if key == "agent_generate" { json!(true) } else { json!(text) };
            json!({"run_id": format!("$parked:{i}"), "node": "$pending", key: value})
        })
}

/// Respond arguments with every part possibly missing or wrong.
fn any_respond() -> impl Strategy<Value = Value> {
    let maybe = |v: Option<Value>, m: &mut Map<String, Value>, k: &str| {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    };
    (
        prop::option::weighted(0.9, run_id()),
        prop::option::weighted(
            0.9,
            prop_oneof![
                6 => Just(json!("$pending")),
                3 => prop::sample::select(vec!["gate", "draft", "pause"]).prop_map(|s| json!(s)),
                3 => node_id().prop_map(Value::String),
                1 => arb_json(),
            ],
        ),
        prop::sample::select(vec![0u8, 0, 0, 1, 1, 2, 2, 3, 4, 5]),
        answer_value(),
        prop_oneof![Just(json!(true)), Just(json!(false)), Just(Value::Null), arb_json()],
    )
        .prop_map(move |(run_id, node, which, answer, generate)| {
            let mut m = Map::new();
            maybe(run_id, &mut m, "run_id");
            maybe(node, &mut m, "node");
            match which {
                0 | 1 => {
                    m.insert("answer".into(), answer);
                }
                2 => {
                    m.insert("output".into(), answer);
                }
                3 => {
                    m.insert("agent_generate".into(), generate);
                }
                4 => {
                    m.insert("answer".into(), answer.clone());
                    m.insert("output".into(), answer);
                }
                _ => {}
            }
            Value::Object(m)
        })
}

fn tool_call() -> impl Strategy<Value = (String, Value)> {
    prop::sample::select(TOOL_NAMES.to_vec()).prop_flat_map(|tool| tool_args(tool).prop_map(move |args| (tool.to_string(), args)))
}

// ---- the contract every reply keeps ----

/// Checks one reply against the contract; `Err` names what is wrong.
fn check_reply(tool: &str, args: &Value, reply: &Reply) -> Result<(), TestCaseError> {
    let ctx = || format!("tool {tool} args {args}\nreply {} {}", reply.status, reply.body);
    prop_assert_ne!(reply.status, 500, "internal error (a panic or an unexpected failure inside the tool): {}", ctx());
    prop_assert!(STATUSES.contains(&reply.status), "status outside the policy: {}", ctx());
    let body = reply.body.as_object();
    prop_assert!(body.is_some(), "body is not an object: {}", ctx());
    let body = body.unwrap();
    let ok = body.get("ok").and_then(Value::as_bool);
    prop_assert!(ok.is_some(), "body has no boolean ok: {}", ctx());
    let ok = ok.unwrap();
    let validation_report = tool == "workflow_design_validate" && reply.status == 200;
    if validation_report {
        // `{ok, errors, warnings}`: a design problem is data, not an error body.
        let errors = body.get("errors").and_then(Value::as_array);
        prop_assert!(errors.is_some() && body.get("warnings").is_some_and(Value::is_array), "bad report: {}", ctx());
        prop_assert_eq!(ok, errors.unwrap().is_empty(), "ok is not errors.is_empty(): {}", ctx());
        for issue in errors.unwrap().iter().chain(body["warnings"].as_array().unwrap()) {
            prop_assert!(issue.get("message").is_some_and(Value::is_string), "issue without message: {}", ctx());
        }
    } else if !ok {
        prop_assert!(body.get("error").is_some_and(Value::is_string), "ok:false without a string error: {}", ctx());
    }
    if reply.status != 200 {
        prop_assert!(!ok, "error status with ok:true: {}", ctx());
    }
    if let Some(status) = body.get("run_id").map(|_| body.get("status").and_then(Value::as_str)) {
        // A run result (§8).
        let status = status.unwrap_or("<none>");
        prop_assert!(RUN_STATUSES.contains(&status), "run status {status:?}: {}", ctx());
        prop_assert_eq!(ok, status != "failed", "ok disagrees with status: {}", ctx());
        let parked = matches!(status, "waiting" | "awaiting_approval" | "awaiting_agent");
        prop_assert_eq!(parked, !body["pending"].is_null(), "pending disagrees with status: {}", ctx());
        for key in ["outputs", "skipped", "deliveries", "steps", "trigger", "created_at", "updated_at", "error", "failed_node"] {
            prop_assert!(body.contains_key(key), "run result without {key:?}: {}", ctx());
        }
        prop_assert!(body["run_id"].is_string() && body["design"].is_string(), "run result ids: {}", ctx());
        if status == "failed" {
            prop_assert!(body["error"].is_string(), "failed run without an error: {}", ctx());
        } else {
            prop_assert!(body["error"].is_null() && body["failed_node"].is_null(), "error fields on a {status} run: {}", ctx());
        }
    }
    if tool == "workflow_design_save" && ok {
        prop_assert!(
            body.get("path").is_some_and(Value::is_string) && body.get("nodes").is_some_and(Value::is_u64),
            "save ok shape: {}",
            ctx()
        );
    }
    if tool == "workflow_design_load" && ok {
        prop_assert!(body.get("graph").is_some_and(Value::is_object), "load ok shape: {}", ctx());
    }
    Ok(())
}

/// Seeds the home with designs and parked runs so respond cases find real targets.
fn seed(app: &App, runs: &Runs) {
    let mut seeded = 0;
    for (i, which) in (0..8u8).cycle().take(24).enumerate() {
        let g = valid_design(which, "3", ">", json!(["send", "skip"]), 120);
        let name = NAME_POOL[i % NAME_POOL.len()];
        let saved = tools::call(app, "workflow_design_save", &json!({"name": name, "graph": g}));
        assert_eq!(saved.status, 200, "{}", saved.body);
        let r = tools::call(app, "workflow_design_run", &json!({"name": name, "input": {"n": 5}}));
        if r.body.get("run_id").is_some() {
            runs.note(&r.body);
            seeded += 1;
        }
    }
    assert!(seeded > 0);
}

/// The runs the store holds, with the node each one is parked on (as last seen).
#[derive(Default)]
struct Runs(Mutex<Vec<(String, Option<String>)>>);

impl Runs {
    /// Records what a reply says about a run.
    fn note(&self, body: &Value) {
        let Some(id) = body.get("run_id").and_then(Value::as_str) else {
            return;
        };
        let pending = body.get("pending").and_then(|p| p.get("node")).and_then(Value::as_str).map(String::from);
        let mut runs = self.0.lock().unwrap();
        match runs.iter_mut().find(|(r, _)| r == id) {
            Some(entry) => entry.1 = pending,
            None => runs.push((id.to_string(), pending)),
        }
    }

    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// Replaces `$known:<i>` with a run that exists and `$parked:<i>` with a parked run (and a
    /// `$pending` node with the node it is parked on).
    fn resolve(&self, mut args: Value) -> Value {
        let runs = self.0.lock().unwrap();
        let Some(Value::String(s)) = args.get("run_id").cloned() else {
            return args;
        };
        let (kind, i) = match s.split_once(':') {
            Some((k, i)) if k.starts_with('$') => (k.to_string(), i.parse::<usize>().unwrap_or(0)),
            _ => return args,
        };
        let parked: Vec<&(String, Option<String>)> = runs.iter().filter(|(_, p)| p.is_some()).collect();
        let (id, pending) =
            if kind == "$parked" && !parked.is_empty() { parked[i % parked.len()].clone() } else { runs[i % runs.len()].clone() };
        args["run_id"] = Value::String(id);
        if args.get("node") == Some(&json!("$pending")) {
            args["node"] = Value::String(pending.unwrap_or_else(|| "gate".into()));
        }
        args
    }
}

#[test]
fn tools_answer_the_contract_whatever_the_arguments() {
    with_big_stack(tools_answer_the_contract_whatever_the_arguments_body);
}

fn tools_answer_the_contract_whatever_the_arguments_body() {
    let (_dir, app) = home();
    let runs = Runs::default();
    seed(&app, &runs);
    let cases = AtomicUsize::new(0);
    let seen = Mutex::new(std::collections::BTreeMap::<String, usize>::new());
    let mut runner = TestRunner::new(config(TOOL_CASES));
    let result = runner.run(&tool_call(), |(tool, args)| {
        cases.fetch_add(1, Ordering::Relaxed);
        let args = runs.resolve(args);
        let reply = tools::call(&app, &tool, &args);
        runs.note(&reply.body);
        let key = format!("{tool} {} {}", reply.status, reply.body.get("status").and_then(Value::as_str).unwrap_or(""));
        *seen.lock().unwrap().entry(key).or_default() += 1;
        check_reply(&tool, &args, &reply)
    });
    let n = cases.load(Ordering::Relaxed);
    eprintln!("tools property: {n} cases run ({TOOL_CASES} configured), {} runs in the store", runs.len());
    let statuses = seen.into_inner().unwrap();
    for (k, v) in &statuses {
        eprintln!("  {v:5}  {k}");
    }
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(n >= TOOL_CASES as usize);
    // The near-valid arguments reach the interesting answers, not only 400s.
    for wanted in [
        "workflow_design_run 200 done",
        "workflow_design_run 200 awaiting_approval",
        "workflow_design_respond 200 done",
        "workflow_design_save 200",
    ] {
        assert!(statuses.keys().any(|k| k.starts_with(wanted)), "no case reached {wanted:?}: {statuses:#?}");
    }
}

#[test]
fn tools_answer_the_contract_for_arbitrary_json() {
    with_big_stack(tools_answer_the_contract_for_arbitrary_json_body);
}

fn tools_answer_the_contract_for_arbitrary_json_body() {
    let (_dir, app) = home();
    let cases = AtomicUsize::new(0);
    let tool = prop_oneof![
        6 => prop::sample::select(TOOL_NAMES.to_vec()).prop_map(String::from),
        1 => interesting_string(),
    ];
    let mut runner = TestRunner::new(config(RAW_ARGS_CASES));
    let result = runner.run(&(tool, arb_json()), |(tool, args)| {
        cases.fetch_add(1, Ordering::Relaxed);
        let reply = tools::call(&app, &tool, &args);
        check_reply(&tool, &args, &reply)
    });
    eprintln!("arbitrary-JSON property: {} cases run", cases.load(Ordering::Relaxed));
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn call_text_answers_the_contract_whatever_the_text() {
    with_big_stack(call_text_answers_the_contract_whatever_the_text_body);
}

fn call_text_answers_the_contract_whatever_the_text_body() {
    let (_dir, app) = home();
    let cases = AtomicUsize::new(0);
    let text = prop_oneof![
        2 => "\\PC{0,64}",
        2 => arb_json().prop_map(|v| v.to_string()),
        2 => tool_call().prop_map(|(_, args)| args.to_string()),
        1 => tool_call().prop_map(|(_, args)| first_half(&args.to_string())),
        1 => Just(String::new()),
        1 => Just(" ".repeat(10)),
        1 => Just(format!("\"{}\"", "x".repeat(1024 * 1024))),
    ];
    let tool = prop::sample::select(TOOL_NAMES.to_vec());
    let mut runner = TestRunner::new(config(CALL_TEXT_CASES));
    let result = runner.run(&(tool, text), |(tool, text)| {
        cases.fetch_add(1, Ordering::Relaxed);
        let reply = tools::call_text(&app, tool, &text);
        let shown: String = text.chars().take(200).collect();
        check_reply(tool, &json!(shown), &reply)
    });
    eprintln!("call_text property: {} cases run", cases.load(Ordering::Relaxed));
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn slash_command_never_fails_a_turn() {
    with_big_stack(slash_command_never_fails_a_turn_body);
}

fn slash_command_never_fails_a_turn_body() {
    let (_dir, app) = home();
    let runs = Runs::default();
    seed(&app, &runs);
    let cases = AtomicUsize::new(0);
    let word = prop_oneof![
        4 => prop::sample::select(vec![
            "alpha", "beta", "gamma", "alpha", "beta", "gamma", "retry", "gate", "gate", "draft", "send", "approve",
            "reject", "skip", "$known", "$known", "$known", "{}", "{\"n\": 5}", "[", "{\"nodes\": []}", "../x", "é",
            "0123456789ab",
        ])
        .prop_map(String::from),
        1 => graph().prop_map(|g| g.to_string()),
        1 => "\\PC{0,12}",
    ];
    let sep = prop::sample::select(vec![" ", " ", " ", "  ", "\t", "\n", " \u{a0}", ""]);
    let command = prop_oneof![
        8 => prop::sample::select(vec!["list", "new", "open", "save", "validate", "run", "run retry", "approve", "help", ""]).prop_map(String::from),
        1 => "\\PC{0,8}",
    ];
    let text = prop_oneof![
        12 => (prop::sample::select(vec!["/workflow", "/workflow", "/workflow", "/workflow", "/workflow", " /workflow", "/workflowlist", "/WORKFLOW", ""]),
              command,
              prop::collection::vec((sep, word), 0..5))
            .prop_map(|(head, command, words)| {
                let mut s = format!("{head} {command}");
                for (sep, w) in words {
                    s.push_str(if sep.is_empty() { " " } else { sep });
                    s.push_str(&w);
                }
                s
            }),
        1 => "\\PC{0,80}",
        1 => any::<String>(),
    ];
    let mut runner = TestRunner::new(config(SLASH_CASES));
    let result = runner.run(&text, |text| {
        cases.fetch_add(1, Ordering::Relaxed);
        // Real run ids make `run retry` and `approve` reach the runner.
        let text = {
            let runs = runs.0.lock().unwrap();
            let (id, _) = &runs[text.len() % runs.len()];
            text.replace("$known", id)
        };
        let reply = slash::handle(&app, &text);
        prop_assert!(!reply.starts_with(SLASH_INTERNAL), "internal error for {text:?}: {reply}");
        prop_assert!(!reply.contains("internal error in workflow_design_"), "tool internal error for {text:?}: {reply}");
        prop_assert!(!reply.trim().is_empty(), "empty reply for {text:?}");
        Ok(())
    });
    eprintln!("slash property: {} cases run", cases.load(Ordering::Relaxed));
    if let Err(e) = result {
        panic!("{e}");
    }
}
