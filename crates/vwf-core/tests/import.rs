//! `vwf import` rules (SPEC §2 sequential form, §10 triggers): agent.json workflows become designs
//! that the validator accepts, and whatever cannot be mapped is reported in notes.

use proptest::prelude::*;
use serde_json::{Value, json};
use vwf_core::import::{ImportReport, import_agent_json};
use vwf_core::names::DesignName;
use vwf_core::validate::validate;

fn import(doc: Value) -> ImportReport {
    import_agent_json(&doc)
}

/// The only design of a report.
fn only(report: &ImportReport) -> (&str, &Value) {
    assert_eq!(report.designs.len(), 1, "{report:#?}");
    let (name, design) = &report.designs[0];
    (name, design)
}

fn nodes(design: &Value) -> Vec<&Value> {
    design["nodes"].as_array().expect("nodes").iter().collect()
}

fn node<'a>(design: &'a Value, id: &str) -> &'a Value {
    nodes(design).into_iter().find(|n| n["id"] == id).unwrap_or_else(|| panic!("no node {id} in {design:#}"))
}

fn ids_and_types(design: &Value) -> Vec<(String, String)> {
    nodes(design)
        .iter()
        .map(|n| (n["id"].as_str().unwrap_or_default().to_string(), n["type"].as_str().unwrap_or_default().to_string()))
        .collect()
}

fn edges(design: &Value) -> Vec<(String, String, Option<String>)> {
    design["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap_or_default().to_string(),
                e["to"].as_str().unwrap_or_default().to_string(),
                e["label"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn edge(from: &str, to: &str, label: Option<&str>) -> (String, String, Option<String>) {
    (from.into(), to.into(), label.map(str::to_string))
}

fn assert_valid(design: &Value) {
    let report = validate(design);
    assert!(report.ok, "{:#?}\n{design:#}", report.errors);
}

/// Every node has a position, and every edge goes left to right.
fn assert_laid_out_left_to_right(design: &Value) {
    for n in nodes(design) {
        assert!(n["x"].is_u64() && n["y"].is_u64(), "{n}");
    }
    for (from, to, _) in edges(design) {
        let (fx, tx) = (node(design, &from)["x"].as_u64(), node(design, &to)["x"].as_u64());
        assert!(fx < tx, "{from} -> {to} goes right to left");
    }
}

#[test]
fn sequential_workflow_becomes_a_chain_from_the_trigger() {
    let report = import(json!({"workflows": {"morning-brief": {
        "description": "News digest",
        "trigger": {"type": "manual"},
        "activities": [
            {"name": "gather", "instructions": "Collect today's headlines"},
            {"name": "write", "prompt": "Summarise {{nodes.gather}}", "token_budget": 2000, "model": "small"},
            "Polish the summary and return it"
        ]
    }}}));
    let (name, design) = only(&report);
    assert_eq!(name, "morning-brief");
    assert_eq!(report.notes, Vec::<String>::new());
    assert_eq!(
        ids_and_types(design),
        [("start", "trigger"), ("gather", "agent"), ("write", "agent"), ("step3", "agent")].map(|(i, t)| (i.to_string(), t.to_string()))
    );
    assert_eq!(edges(design), [edge("start", "gather", None), edge("gather", "write", None), edge("write", "step3", None)]);
    assert_eq!(node(design, "start")["mode"], "manual");
    assert_eq!(node(design, "gather")["prompt"], "Collect today's headlines");
    assert_eq!(node(design, "write")["max_tokens"], 2000);
    assert_eq!(node(design, "write")["model"], "small");
    assert_eq!(node(design, "step3")["prompt"], "Polish the summary and return it");
    assert_eq!(design["description"], "News digest");
    let xs: Vec<u64> = nodes(design).iter().filter_map(|n| n["x"].as_u64()).collect();
    assert_eq!(xs, [40, 220, 400, 580]);
    assert!(nodes(design).iter().all(|n| n["y"] == 120));
    assert_valid(design);
}

#[test]
fn sequential_activities_keep_their_named_types_and_unknown_fields() {
    let report = import(json!({"workflows": {"fetch": {
        "activities": [
            {"name": "get", "type": "command", "command": "curl -s https://example.org/feed.json", "timeout": 60},
            {"name": "call", "kind": "http", "url": "https://example.org/api", "method": "POST"},
            {"name": "sum", "description": "Summarise {{nodes.get}}", "tools": ["search"]},
            {"name": "ls", "run": ["ls", "-l"]}
        ]
    }}}));
    let (_, design) = only(&report);
    assert_eq!(node(design, "get")["type"], "command");
    assert_eq!(node(design, "get")["run"], "curl -s https://example.org/feed.json");
    assert_eq!(node(design, "get")["timeout_seconds"], 60);
    assert_eq!(node(design, "call")["type"], "http");
    assert_eq!(node(design, "call")["method"], "POST");
    assert_eq!(node(design, "sum")["prompt"], "Summarise {{nodes.get}}");
    assert_eq!(node(design, "sum")["tools"], json!(["search"]));
    assert_eq!(node(design, "ls")["type"], "command");
    assert_eq!(node(design, "ls")["argv"], json!(["ls", "-l"]));
    // A field with no meaning here is kept (designs round-trip it) and reported.
    assert_eq!(report.notes, ["fetch: node \"sum\": fields kept without an equivalent: tools"]);
    assert_valid(design);
}

#[test]
fn graph_workflow_maps_trigger_emit_branch_and_loop_labels() {
    let report = import(json!({"workflows": {"invoice-sync": {
        "trigger": {"type": "manual"},
        "activities": [
            {"id": "list", "type": "command", "command": "ls invoices | jq -R . | jq -s ."},
            {"id": "any", "type": "condition", "expression": "out.list.chars > 2"},
            {"id": "each_file", "type": "loop", "over": "{{nodes.list}}"},
            {"id": "parse", "type": "command", "run": "cat invoices/{{item}}"},
            {"id": "classify", "prompt": "Classify {{nodes.parse}}"},
            {"id": "report", "prompt": "Report on {{nodes.each_file}}"},
            {"id": "idle", "type": "command", "run": "echo no invoices today"}
        ],
        "connections": [
            {"from": "__trigger__", "to": "list"},
            {"from": "list", "to": "any"},
            {"from": "any", "to": "each_file", "label": "True"},
            {"from": "any", "to": "idle", "label": "False"},
            {"from": "each_file", "to": "parse", "label": "Each item"},
            {"from": "parse", "to": "classify"},
            {"from": "each_file", "to": "report", "label": "Done"},
            {"from": "report", "to": "__emit__"},
            {"from": "idle", "to": "__emit__"}
        ]
    }}}));
    let (_, design) = only(&report);
    assert_eq!(report.notes, Vec::<String>::new());
    assert_eq!(
        edges(design),
        [
            edge("start", "list", None),
            edge("list", "any", None),
            edge("any", "each_file", Some("true")),
            edge("any", "idle", Some("false")),
            edge("each_file", "parse", Some("each")),
            edge("parse", "classify", None),
            edge("each_file", "report", Some("done")),
            edge("report", "emit", None),
            edge("idle", "emit", None),
        ]
    );
    assert_eq!(node(design, "emit")["type"], "emit");
    assert_eq!(node(design, "emit")["event"], "invoice-sync.done");
    assert_eq!(node(design, "any")["expr"], "out.list.chars > 2");
    assert_eq!(node(design, "each_file")["over"], "{{nodes.list}}");
    assert_eq!(nodes(design).iter().filter(|n| n["type"] == "emit").count(), 1);
    assert_laid_out_left_to_right(design);
    assert_valid(design);
}

#[test]
fn graph_workflow_emit_event_can_be_given_and_loop_back_edges_are_dropped() {
    let report = import(json!({"workflows": {"batch": {
        "emit": {"event": "batch.finished", "payload": "{{nodes.total}}"},
        "activities": [
            {"id": "items", "type": "command", "run": "echo '[1,2]'"},
            {"id": "each", "type": "for_each", "items": "{{nodes.items}}"},
            {"id": "work", "type": "command", "run": "echo {{item}}"},
            {"id": "total", "prompt": "Total {{nodes.each}}"}
        ],
        "connections": [
            ["__trigger__", "items"],
            ["items", "each"],
            ["each", "work", "Each item"],
            ["work", "each"],
            ["each", "total", "Done"],
            "total -> __emit__"
        ]
    }}}));
    let (_, design) = only(&report);
    assert_eq!(node(design, "each")["type"], "loop");
    assert_eq!(node(design, "emit")["event"], "batch.finished");
    assert_eq!(node(design, "emit")["payload"], "{{nodes.total}}");
    assert!(!edges(design).contains(&edge("work", "each", None)));
    assert!(edges(design).contains(&edge("each", "work", Some("each"))));
    assert!(
        report.notes.iter().any(|n| n.starts_with("batch: edges from the body of loop \"each\" back to it were dropped")),
        "{:#?}",
        report.notes
    );
    assert_valid(design);
}

#[test]
fn schedule_trigger_becomes_a_custom_cron_schedule() {
    let report = import(json!({"workflows": {
        "a": {"trigger": {"type": "schedule", "cron": "0 6 * * 1-5", "timezone": "Europe/Berlin"}, "activities": ["x"]},
        "b": {"trigger": "*/15 * * * *", "activities": ["x"]},
        "c": {"trigger": {"type": "cron", "expression": "@daily"}, "activities": ["x"]},
        "d": {"trigger": {"schedule": "0 30 9 * * *"}, "activities": ["x"]},
        "e": {"trigger": {"type": "schedule", "schedule": {"preset": "weekdays", "time": "09:00"}}, "activities": ["x"]}
    }}));
    let schedule = |i: usize| node(&report.designs[i].1, "start")["schedule"].clone();
    for i in 0..5 {
        assert_eq!(node(&report.designs[i].1, "start")["mode"], "schedule");
        assert_valid(&report.designs[i].1);
    }
    assert_eq!(schedule(0), json!({"preset": "custom", "cron": "0 6 * * 1-5", "tz": "Europe/Berlin"}));
    assert_eq!(schedule(1), json!({"preset": "custom", "cron": "*/15 * * * *"}));
    assert_eq!(schedule(2), json!({"preset": "custom", "cron": "0 0 * * *"}));
    assert_eq!(schedule(3), json!({"preset": "custom", "cron": "30 9 * * *"}));
    assert_eq!(schedule(4), json!({"preset": "weekdays", "time": "09:00"}));
    assert_eq!(report.notes, ["d: cron \"0 30 9 * * *\" has a seconds field; it was dropped (schedules fire on whole minutes)"]);
}

#[test]
fn other_trigger_modes_map_to_their_fields() {
    let report = import(json!({"workflows": {
        "hb": {"trigger": {"type": "heartbeat", "interval": "30m", "active_hours": {"start": "08:00", "end": "18:00"},
                            "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "timezone": "Europe/Berlin"}, "activities": ["x"]},
        "hb2": {"trigger": {"type": "interval", "every_minutes": 90}, "activities": ["x"]},
        "ev": {"trigger": {"type": "event", "source": "invoice-sync.done", "cooldown": 60}, "activities": ["x"]},
        "fo": {"trigger": {"type": "folder", "folder": "/data/in", "glob": "*.csv"}, "activities": ["x"]},
        "wa": {"trigger": {"type": "watch", "command": "tail -f log.ndjson"}, "activities": ["x"]},
        "none": {"activities": ["x"]}
    }}));
    let start = |i: usize| {
        let mut n = node(&report.designs[i].1, "start").clone();
        let obj = n.as_object_mut().expect("object");
        for k in ["id", "type", "x", "y"] {
            obj.remove(k);
        }
        n
    };
    assert_eq!(
        start(0),
        json!({"mode": "heartbeat", "every": "30m", "window": "08:00-18:00", "days": "mon,tue,wed,thu,fri", "tz": "Europe/Berlin"})
    );
    assert_eq!(start(1), json!({"mode": "heartbeat", "every": "1h30m"}));
    assert_eq!(start(2), json!({"mode": "event", "sources": ["invoice-sync.done"], "cooldown_seconds": 60}));
    assert_eq!(start(3), json!({"mode": "folder", "path": "/data/in", "pattern": "*.csv"}));
    assert_eq!(start(4), json!({"mode": "watch", "command": "tail -f log.ndjson"}));
    assert_eq!(start(5), json!({"mode": "manual"}));
    for (_, design) in &report.designs {
        assert_valid(design);
    }
    assert_eq!(report.notes, Vec::<String>::new());
}

#[test]
fn run_budget_becomes_budget_tokens() {
    let report = import(json!({"workflows": {
        "fits": {"budget": {"tokens": 5000}, "activities": [
            {"name": "a", "prompt": "one", "token_budget": 2000},
            {"name": "b", "prompt": "two", "max_tokens": 3000}
        ]},
        "plain": {"token_budget": 8000, "activities": ["x"]},
        "extra": {"budget": {"tokens": 100, "usd": 2}, "activities": ["x"]}
    }}));
    assert_eq!(report.designs[0].1["budget"], json!({"tokens": 5000}));
    assert_eq!(report.designs[1].1["budget"], json!({"tokens": 8000}));
    assert_eq!(report.designs[2].1["budget"], json!({"tokens": 100}));
    for (_, design) in &report.designs {
        assert_valid(design);
    }
    assert_eq!(report.notes, ["extra: budget fields without an equivalent dropped: usd (only a token budget is enforced)"]);
}

#[test]
fn run_budget_below_the_activity_budgets_is_reported_not_truncated() {
    let report = import(json!({"workflows": {"tight": {"budget": 1000, "activities": [
        {"name": "a", "prompt": "one", "token_budget": 800},
        {"name": "b", "prompt": "two", "token_budget": 800}
    ]}}}));
    let (_, design) = only(&report);
    assert_eq!(design["budget"], json!({"tokens": 1000}));
    assert!(!validate(design).ok);
    assert_eq!(report.notes.len(), 1, "{:#?}", report.notes);
    assert!(report.notes[0].starts_with("tight: not valid as imported: budget.tokens is 1000, below the sum"), "{}", report.notes[0]);
}

#[test]
fn what_cannot_be_mapped_is_reported_in_notes() {
    let report = import(json!({"workflows": {"odd": {
        "trigger": {"type": "webhook", "path": "/hook"},
        "activities": [
            {"id": "browse", "type": "browser", "prompt": "Open the page"},
            {"id": "shell", "type": "command", "run": "true", "retries": 2},
            42
        ],
        "connections": [
            {"from": "__trigger__", "to": "browse"},
            {"from": "browse", "to": "ghost"},
            {"from": "browse", "to": "shell"},
            {"from": "shell", "to": "__trigger__"}
        ],
        "owner": "ops"
    }}}));
    let (_, design) = only(&report);
    assert_eq!(node(design, "start")["mode"], "manual");
    assert_eq!(node(design, "browse")["type"], "agent");
    assert_eq!(node(design, "browse")["imported_type"], "browser");
    assert!(node(design, "shell").get("retries").is_none());
    assert_eq!(design["owner"], "ops");
    let expected = [
        "odd: trigger type \"webhook\" has no equivalent",
        "odd: trigger: fields kept without an equivalent: path",
        "odd: activity \"browse\" has type \"browser\", which has no equivalent; imported as an agent step",
        "odd: node \"shell\": retries dropped",
        "odd: activities[2] must be text or an object, got a number; skipped",
        "odd: connection browse -> ghost names unknown activity \"ghost\"; skipped",
        "odd: connection shell -> __trigger__: nothing leads into the trigger; skipped",
        "odd: workflow fields kept without an equivalent: owner",
    ];
    for prefix in expected {
        assert!(report.notes.iter().any(|n| n.starts_with(prefix)), "missing note {prefix:?} in {:#?}", report.notes);
    }
    assert_valid(design);
}

#[test]
fn bad_workflow_name_is_sanitized_and_noted() {
    let report = import(json!({"workflows": {
        "Daily report / EU": {"activities": ["x"]},
        "../etc/passwd": {"activities": ["x"]},
        "": {"activities": ["x"]},
        "Daily report: EU": {"activities": ["x"]},
        "ok.name_1": {"activities": [{"name": "start", "prompt": "p"}, {"name": "my step!", "prompt": "q"}]}
    }}));
    let names: Vec<&str> = report.designs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Daily-report-EU", "etc-passwd", "workflow", "Daily-report-EU-2", "ok.name_1"]);
    for name in &names {
        assert!(DesignName::parse(name).is_ok(), "{name}");
    }
    for (from, to) in [
        ("Daily report / EU", "Daily-report-EU"),
        ("../etc/passwd", "etc-passwd"),
        ("", "workflow"),
        ("Daily report: EU", "Daily-report-EU-2"),
    ] {
        let note = format!("{to}: workflow {from:?} renamed to {to:?}");
        assert!(report.notes.iter().any(|n| n.starts_with(&note)), "{note:?} not in {:#?}", report.notes);
    }
    let (_, design) = &report.designs[4];
    assert_eq!(ids_and_types(design).into_iter().map(|(i, _)| i).collect::<Vec<_>>(), ["start", "start-2", "my-step"]);
    assert_eq!(node(design, "my-step")["label"], "my step!");
    assert!(report.notes.iter().any(|n| n.starts_with("ok.name_1: activity \"start\" is node \"start-2\"")));
    assert_valid(design);
}

#[test]
fn documents_without_workflows_give_notes_not_designs() {
    for doc in [json!(null), json!([1, 2]), json!("agent"), json!({}), json!({"workflows": 3}), json!({"workflows": {}})] {
        let report = import(doc.clone());
        assert!(report.designs.is_empty(), "{doc}");
        assert_eq!(report.notes.len(), 1, "{doc}: {:#?}", report.notes);
    }
    let report = import(json!({"workflows": [{"name": "listed", "activities": ["x"]}, {"activities": ["y"]}]}));
    let names: Vec<&str> = report.designs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["listed", "workflow-2"]);
}

#[test]
fn a_workflow_already_in_design_form_is_checked_and_kept() {
    let ours = json!({"nodes": [{"id": "a", "type": "agent", "prompt": "hi"}], "edges": []});
    let report = import(json!({"workflows": {"native": ours.clone()}}));
    let (_, design) = only(&report);
    assert_eq!(design, &ours);
    assert_eq!(report.notes, ["native: already in design form (it has \"nodes\"); copied as is"]);
}

// --- never panics ---

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
        prop::sample::select(vec![
            "__trigger__",
            "__emit__",
            "True",
            "False",
            "Each item",
            "Done",
            "a",
            "b",
            "start",
            "emit",
            "schedule",
            "heartbeat",
            "event",
            "folder",
            "watch",
            "webhook",
            "command",
            "loop",
            "condition",
            "0 9 * * *",
            "@daily",
            "30m",
            "08:00-18:00",
            "mon-fri",
            "Europe/Berlin",
            "",
            "../x",
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop::sample::select(vec![
            "workflows",
            "trigger",
            "activities",
            "connections",
            "budget",
            "token_budget",
            "type",
            "kind",
            "id",
            "name",
            "prompt",
            "instructions",
            "description",
            "command",
            "run",
            "url",
            "from",
            "to",
            "label",
            "cron",
            "every",
            "interval",
            "window",
            "days",
            "tz",
            "sources",
            "path",
            "emit",
            "over",
            "expression",
            "tokens",
            "nodes",
            "x",
            "y",
            "schedule",
            "active_hours",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop_oneof![key.prop_map(str::to_string), any::<String>()], inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn import_never_panics_on_arbitrary_json(doc in arbitrary_json()) {
        check_report(&doc)?;
        check_report(&json!({"workflows": doc.clone()}))?;
        check_report(&json!({"workflows": {"w": doc}}))?;
    }
}

/// Names are valid and unique; a design the validator rejects is explained in the notes.
fn check_report(doc: &Value) -> Result<(), TestCaseError> {
    let report = import_agent_json(doc);
    let mut seen = std::collections::HashSet::new();
    for (name, design) in &report.designs {
        prop_assert!(DesignName::parse(name).is_ok(), "bad name {:?}", name);
        prop_assert!(seen.insert(name.clone()), "duplicate name {:?}", name);
        if !validate(design).ok {
            let prefix = format!("{name}: ");
            prop_assert!(report.notes.iter().any(|n| n.starts_with(&prefix)), "{} invalid without a note", name);
        }
    }
    Ok(())
}
