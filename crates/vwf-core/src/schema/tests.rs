//! The document against the parsers: every field it lists is checked by parsing nodes built from
//! it (its example and default accepted, the default meaning what absence means, each bound
//! accepted and one past it refused on that field, each allowed value accepted and another
//! refused, a required field missed), and no parser reads a field the document does not list.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::*;
use crate::design::Node;
use crate::schedule::{schedule_from_value, to_cron};
use crate::spec::Spec;

/// A parser under test: the parsed value, or the fields its problems name.
type Parse<'a, T> = &'a dyn Fn(&Map<String, Value>) -> Result<T, Vec<Option<String>>>;

fn spec(raw: &Map<String, Value>) -> Result<Spec, Vec<Option<String>>> {
    let mut raw = raw.clone();
    // An output's fields are checked on one that delivers (only it can fail, so only it takes
    // a retry policy or `on_error`); its target's form follows the delivery.
    if crate::spec::kind_of(&raw) == "output" {
        if !raw.contains_key("deliver") {
            raw.insert("deliver".into(), json!("channel"));
        }
        if !raw.contains_key("target") {
            let target = if raw.get("deliver") == Some(&json!("notification")) { "telegram" } else { "telegram:123456" };
            raw.insert("target".into(), json!(target));
        }
    }
    let node = Node::new("n", raw);
    Spec::parse(&node).map_err(|issues| issues.into_iter().map(|i| i.field).collect())
}

fn cron(raw: &Map<String, Value>) -> Result<String, Vec<Option<String>>> {
    schedule_from_value(&Value::Object(raw.clone())).and_then(|s| to_cron(&s)).map_err(|e| vec![e.field])
}

/// A value the parser accepts for `f`.
fn sample(f: &Field) -> Value {
    if let Some(v) = f.example.clone().or_else(|| f.default.clone()).or_else(|| f.min.clone()) {
        return v;
    }
    match f.kind {
        Kind::Enum => json!(f.values[0]),
        Kind::EnumList => json!([f.values[0]]),
        Kind::StringList => json!(["x"]),
        Kind::StringMap => json!({"k": "v"}),
        Kind::Json => json!({"k": [1, "v"]}),
        _ => json!("x"),
    }
}

fn with(base: &Map<String, Value>, name: &str, v: Value) -> Map<String, Value> {
    let mut m = base.clone();
    m.insert(name.into(), v);
    m
}

fn named(result: Result<impl std::fmt::Debug, Vec<Option<String>>>, field: &str, what: &str) {
    match result {
        Ok(v) => panic!("{what}: accepted as {v:?}"),
        Err(fields) => assert!(fields.iter().any(|f| f.as_deref() == Some(field)), "{what}: the problems name {fields:?}, not {field}"),
    }
}

/// Checks `fields` against `parse`, starting from `base` (which the parser accepts). Answers how
/// many cases it tried.
fn check<T: PartialEq + std::fmt::Debug>(what: &str, fields: &[Field], base: &Map<String, Value>, parse: Parse<T>) -> usize {
    let mut cases = 1;
    let plain = parse(base).unwrap_or_else(|e| panic!("{what}: {base:?} is refused on {e:?}"));
    for f in fields {
        let at = format!("{what}.{}", f.name);
        let ok = |v: Value| parse(&with(base, f.name, v.clone())).unwrap_or_else(|e| panic!("{at} = {v}: refused on {e:?}"));
        let bad = |v: Value| named(parse(&with(base, f.name, v.clone())), f.name, &format!("{at} = {v}"));
        ok(sample(f));
        cases += 1;
        if let Some(d) = &f.default {
            assert_eq!(ok(d.clone()), plain, "{at}: the default {d} is what its absence means");
            cases += 1;
        }
        let (min, max) = (f.min.as_ref().and_then(Value::as_u64), f.max.as_ref().and_then(Value::as_u64));
        if let (Some(lo), Some(hi)) = (min, max) {
            let shown = |n: u64| if f.kind == Kind::Duration { json!(format!("{n}s")) } else { json!(n) };
            if matches!(f.kind, Kind::Integer | Kind::Duration) {
                ok(shown(lo));
                ok(shown(hi));
                bad(shown(hi + 1));
                cases += 3;
                if lo > 0 {
                    bad(shown(lo - 1));
                    cases += 1;
                }
            }
        }
        if f.kind == Kind::Number
            && let Some(hi) = f.max.as_ref().and_then(Value::as_f64)
        {
            ok(json!(hi));
            ok(json!(-hi));
            bad(json!(hi * 1.5));
            bad(json!(-hi * 1.5));
            cases += 4;
        }
        for v in &f.values {
            ok(if f.kind == Kind::EnumList { json!([v]) } else { json!(v) });
            cases += 1;
        }
        if matches!(f.kind, Kind::Enum | Kind::EnumList) {
            bad(if f.kind == Kind::EnumList { json!(["no-such-value"]) } else { json!("no-such-value") });
            cases += 1;
        }
        if f.required {
            let mut without = base.clone();
            without.remove(f.name);
            named(parse(&without), f.name, &format!("{at} left out"));
            cases += 1;
        }
    }
    cases
}

/// A node of `kind` with the required fields (and the first of `exactly_one_of`) filled in.
fn minimal(kind: &str, fields: &[Field], exactly_one_of: &[&str]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), json!(kind));
    for f in fields.iter().filter(|f| f.required || exactly_one_of.first() == Some(&f.name)) {
        m.insert(f.name.into(), sample(f));
    }
    m
}

#[test]
fn every_node_type_field_is_what_spec_parse_accepts() {
    let schema = schema();
    assert_eq!(schema.node_types.iter().map(|t| t.kind.as_str()).collect::<Vec<_>>(), NODE_TYPES);
    let mut cases = 0;
    for t in &schema.node_types {
        let kind = t.kind.as_str();
        let base = minimal(kind, &t.fields, &t.exactly_one_of);
        if t.kind == NodeKind::Trigger {
            // Its modes and their fields: the next test.
            let mut without = base.clone();
            without.remove("mode");
            named(spec(&without), "mode", "a trigger without a mode");
            cases += 1 + check(kind, &schema.node_fields[2..], &base, &spec);
            continue;
        }
        let alone: Vec<Field> = t.fields.iter().filter(|f| !t.exactly_one_of.get(1..).unwrap_or(&[]).contains(&f.name)).cloned().collect();
        cases += check(kind, &alone, &base, &spec);
        // The fields every node has: its type, and where it sits.
        cases += check(kind, &schema.node_fields[2..], &base, &spec);
        if let [first, second] = t.exactly_one_of[..] {
            let field = |name| t.fields.iter().find(|f| f.name == name).expect("listed");
            let mut other = base.clone();
            other.remove(first);
            other.insert(second.into(), sample(field(second)));
            cases += check(kind, &[field(second).clone()], &other, &spec);
            let mut neither = base.clone();
            neither.remove(first);
            assert!(spec(&neither).is_err(), "{kind}: neither {first} nor {second}");
            assert!(spec(&with(&base, second, sample(field(second)))).is_err(), "{kind}: both {first} and {second}");
            cases += 2;
        }
    }
    named(spec(&json!({"type": "no-such-type"}).as_object().cloned().unwrap_or_default()), "type", "an unknown type");
    eprintln!("{cases} node type cases");
}

#[test]
fn every_trigger_mode_field_is_what_trigger_parse_accepts() {
    let schema = schema();
    let trigger = schema.node_types.iter().find(|t| t.kind == NodeKind::Trigger).expect("a trigger type");
    assert_eq!(trigger.fields[0].values, MODES);
    assert_eq!(schema.trigger_modes.iter().map(|m| m.mode).collect::<Vec<_>>(), MODES);
    let mut cases = 0;
    for m in &schema.trigger_modes {
        let mut base = minimal("trigger", &m.fields, &[]);
        base.insert("mode".into(), json!(m.mode));
        let parsed = spec(&base);
        assert!(matches!(&parsed, Ok(Spec::Trigger(t)) if t.mode().as_str() == m.mode), "{}: {parsed:?}", m.mode);
        cases += check(m.mode, &m.fields, &base, &spec);
    }
    eprintln!("{cases} trigger mode cases");
}

#[test]
fn every_schedule_preset_and_field_is_what_to_cron_accepts() {
    let schema = schema();
    let mode = schema.trigger_modes.iter().find(|m| m.mode == "schedule").expect("schedule mode");
    let object = &mode.fields[0];
    let field = |name: &str| object.fields.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name} is listed")).clone();
    assert_eq!(field("preset").values, PRESETS.iter().map(|p| p.preset).collect::<Vec<_>>());
    let read: BTreeSet<&str> = PRESETS.iter().flat_map(|p| p.fields.iter().copied()).chain(["preset", "tz"]).collect();
    assert_eq!(read, object.fields.iter().map(|f| f.name).collect(), "the object's fields are those the presets read");
    let mut cases = 0;
    for p in PRESETS {
        assert!(p.required.iter().all(|r| p.fields.contains(r)), "{p:?}");
        let fields: Vec<Field> =
            p.fields.iter().chain(&["tz"]).map(|name| Field { required: p.required.contains(name), ..field(name) }).collect();
        let mut base = minimal("", &fields, &[]);
        base.insert("preset".into(), json!(p.preset));
        cases += check(p.preset, &fields, &base, &cron);
    }
    named(cron(&json!({"preset": "no-such-value"}).as_object().cloned().unwrap_or_default()), "preset", "an unknown preset");
    eprintln!("{cases} schedule cases");
}

#[test]
fn every_retry_field_is_what_the_policy_reader_accepts() {
    let schema = schema();
    let mut cases = 0;
    for t in schema.node_types.iter().filter(|t| t.kind.acts()) {
        let retry = t.fields.iter().find(|f| f.name == "retry").unwrap_or_else(|| panic!("{} has retry", t.kind));
        let kind = t.kind;
        let policy = move |raw: &Map<String, Value>| -> Result<crate::recovery::RetryPolicy, Vec<Option<String>>> {
            let mut node = minimal(kind.as_str(), &[], &[]);
            node.insert("retry".into(), Value::Object(raw.clone()));
            if kind == NodeKind::Output {
                node.insert("deliver".into(), json!("channel"));
            }
            let (recovery, issues) = crate::recovery::parse(&Node::new("n", node));
            let fields: Vec<Option<String>> =
                issues.into_iter().map(|i| i.field.map(|f| f.strip_prefix("retry.").map(String::from).unwrap_or(f))).collect();
            if fields.is_empty() { Ok(recovery.retry) } else { Err(fields) }
        };
        cases += check(&format!("{kind}.retry"), &retry.fields, &Map::new(), &policy);
        // The numbers `on` takes besides its words.
        let on = retry.fields.iter().find(|f| f.name == "on").expect("on");
        let numbers = on.example.as_ref().and_then(Value::as_array).map_or(0, |e| e.iter().filter(|v| v.is_number()).count());
        assert_eq!(numbers > 0, matches!(kind, NodeKind::Http | NodeKind::Command), "{kind}: {:?}", on.example);
        let listed = |v: Value| policy(&with(&Map::new(), "on", json!([v])));
        if kind == NodeKind::Http {
            assert!(listed(json!(503)).is_ok() && listed(json!(99)).is_err() && listed(json!(600)).is_err());
        } else if kind == NodeKind::Command {
            assert!(listed(json!(1)).is_ok() && listed(json!(255)).is_ok() && listed(json!(0)).is_err() && listed(json!(256)).is_err());
        } else {
            assert!(listed(json!(500)).is_err(), "{kind} takes no numbers");
        }
        cases += 1;
    }
    eprintln!("{cases} retry cases");
}

#[test]
fn no_parser_reads_a_field_the_document_does_not_list() {
    let schema = schema();
    let everywhere: BTreeSet<&str> = schema
        .node_types
        .iter()
        .flat_map(|t| &t.fields)
        .chain(schema.trigger_modes.iter().flat_map(|m| &m.fields))
        .map(|f| f.name)
        .collect();
    let odd = json!({"odd": [null, true]});
    let mut cases = 0;
    let mut look = |kind: &str, base: Map<String, Value>, own: &[Field]| {
        for name in &everywhere {
            // Only agent steps take `retries`, only steps that act `retry` and `on_error`, and only
            // triggers of arrivals `debounce` and `throttle`: another node naming them is refused
            // for it, by design.
            if own.iter().any(|f| f.name == *name) || ["retries", "retry", "on_error", "mode", "debounce", "throttle"].contains(name) {
                continue;
            }
            let fields = spec(&with(&base, name, odd.clone())).err().unwrap_or_default();
            assert!(!fields.iter().any(|f| f.as_deref() == Some(name)), "{kind} reads {name}, which the document does not list for it");
            cases += 1;
        }
    };
    for t in schema.node_types.iter().filter(|t| t.kind != NodeKind::Trigger) {
        look(t.kind.as_str(), minimal(t.kind.as_str(), &t.fields, &t.exactly_one_of), &t.fields);
    }
    for m in &schema.trigger_modes {
        let mut base = minimal("trigger", &m.fields, &[]);
        base.insert("mode".into(), json!(m.mode));
        look(m.mode, base, &m.fields);
    }
    eprintln!("{cases} unlisted field cases");
}

#[test]
fn node_ids_and_limits_are_the_core_s() {
    let schema = schema();
    let id = &schema.node_fields[0];
    let max = id.max.as_ref().and_then(Value::as_u64).unwrap_or(0) as usize;
    assert!(crate::names::check_node_id(&"a".repeat(max)).is_ok());
    assert!(crate::names::check_node_id(&"a".repeat(max + 1)).is_err());
    assert_eq!(schema.http_methods, HTTP_METHODS);
    assert!(schema.http_methods.contains(&"OPTIONS"));
    let budget = &schema.design_fields[1].fields[0];
    assert_eq!((budget.min.clone(), budget.max.clone()), (Some(json!(limits::BUDGET_TOKENS.0)), Some(json!(limits::BUDGET_TOKENS.1))));
    assert_eq!(schema_json()["limits"]["max_nodes"], json!(limits::MAX_NODES));
}
