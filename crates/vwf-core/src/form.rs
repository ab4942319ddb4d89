//! Forms on approval gates: the `fields` a gate asks besides its options, the values an answer
//! gives checked against them, and `edit`, the earlier steps whose text the person may change
//! before the run goes on.
//!
//! Why here: one declaration is read when a design is saved (its problems reported with the node
//! and field), when the canvas and the run page draw the form (`GET /schema`), and when an answer
//! arrives (checked before anything is written); one reader keeps the three agreeing.
//!
//! Invariants:
//! - An answer is checked whole before the gate changes: a value that does not fit refuses it,
//!   naming the field, and nothing is written.
//! - The gate's output view carries `fields` with every declared field: the value given, else
//!   its default, else an empty one (`""` for text, `false` for a boolean, `null` otherwise), so
//!   a later template never meets a missing field.
//! - An edit replaces the text later steps read; the step's view keeps the text it had first
//!   (`edited.original`, and its SHA-256), and who changed it and when.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::design::{Design, NodeKind};
use crate::limits;
use crate::validate::{Graph, Issue};

/// The field types a gate may ask for.
pub const FIELD_TYPES: [&str; 5] = ["text", "number", "boolean", "choice", "json"];
/// The most fields one gate asks for.
pub const MAX_FIELDS: usize = 50;
/// A text field's `max_length` (characters) bounds and its default.
pub const TEXT_LENGTH: (u64, u64) = (1, 100_000);
pub const TEXT_LENGTH_DEFAULT: u64 = 10_000;
/// A json field's `max_length` (bytes of its compact JSON) bounds and its default.
pub const JSON_LENGTH: (u64, u64) = (2, 1_048_576);
pub const JSON_LENGTH_DEFAULT: u64 = 65_536;
/// The most options of a choice field.
pub const MAX_CHOICES: usize = 100;
/// The longest label, and the longest `by` an answer gives, in characters.
pub const MAX_LABEL: usize = 200;
/// The most steps one gate lets a person edit.
pub const MAX_EDITS: usize = 20;

/// One field of a gate's form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// Letters, digits and `_`, not starting with a digit; at most 64 characters.
    pub name: String,
    pub kind: FieldKind,
    pub label: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    /// Characters of a text, bytes of a JSON value (its compact form); `None` for other types.
    pub max_length: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    Number,
    Boolean,
    Choice(Vec<String>),
    Json,
}

impl FieldKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FieldKind::Text => "text",
            FieldKind::Number => "number",
            FieldKind::Boolean => "boolean",
            FieldKind::Choice(_) => "choice",
            FieldKind::Json => "json",
        }
    }
}

/// Whether `name` may name a field: letters, digits and `_`, not starting with a digit, 1 to 64
/// characters (what a template path segment reads whole).
pub fn is_field_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

/// Reads a gate's `fields`; every problem is said (as the message of the node's `fields` issue).
pub fn parse_fields(value: Option<&Value>) -> (Vec<FormField>, Vec<String>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    let items = match value {
        None | Some(Value::Null) => return (out, problems),
        Some(Value::Array(items)) => items,
        Some(_) => return (out, vec!["\"fields\" is a list of fields: [{\"name\", \"type\", …}]".into()]),
    };
    if items.len() > MAX_FIELDS {
        problems.push(format!("\"fields\" lists {} fields; a gate asks for at most {MAX_FIELDS}", items.len()));
    }
    let mut names = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        match parse_field(item) {
            Ok(field) if !names.insert(field.name.clone()) => {
                problems.push(format!("fields[{i}]: the name {:?} is used twice", field.name))
            }
            Ok(field) => out.push(field),
            Err(why) => problems.push(format!("fields[{i}]: {why}")),
        }
    }
    (out, problems)
}

fn parse_field(item: &Value) -> Result<FormField, String> {
    let Value::Object(raw) = item else { return Err("a field is an object with \"name\" and \"type\"".into()) };
    const KEYS: [&str; 7] = ["name", "type", "label", "required", "options", "default", "max_length"];
    if let Some(key) = raw.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!("unknown key {key:?} (a field has {})", KEYS.join(", ")));
    }
    let name = raw
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| is_field_name(n))
        .ok_or("\"name\" is letters, digits and '_' (not starting with a digit), at most 64 characters")?;
    let kind = match raw.get("type").and_then(Value::as_str) {
        Some("text") => FieldKind::Text,
        Some("number") => FieldKind::Number,
        Some("boolean") => FieldKind::Boolean,
        Some("json") => FieldKind::Json,
        Some("choice") => FieldKind::Choice(parse_choices(raw.get("options"))?),
        _ => return Err(format!("\"type\" is one of {}", FIELD_TYPES.join(", "))),
    };
    if raw.contains_key("options") && !matches!(kind, FieldKind::Choice(_)) {
        return Err("only a choice field has \"options\"".into());
    }
    let label = match raw.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) if l.chars().count() <= MAX_LABEL => Some(l.clone()),
        Some(_) => return Err(format!("\"label\" is a text of at most {MAX_LABEL} characters")),
    };
    let required = match raw.get("required") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"required\" is true or false".into()),
    };
    let bounds = match kind {
        FieldKind::Text => Some((TEXT_LENGTH, TEXT_LENGTH_DEFAULT)),
        FieldKind::Json => Some((JSON_LENGTH, JSON_LENGTH_DEFAULT)),
        _ => None,
    };
    let max_length = match (raw.get("max_length").filter(|v| !v.is_null()), bounds) {
        (None, bounds) => bounds.map(|(_, default)| default),
        (Some(v), Some((range, _))) => Some(
            v.as_u64()
                .filter(|n| limits::within(*n, range))
                .ok_or(format!("\"max_length\" is a whole number from {} to {}", range.0, range.1))?,
        ),
        (Some(_), None) => return Err("only a text or json field has \"max_length\"".into()),
    };
    let mut field = FormField { name: name.to_string(), kind, label, required, default: None, max_length };
    if let Some(default) = raw.get("default").filter(|v| !v.is_null()) {
        check_value(&field, default).map_err(|why| format!("\"default\": {why}"))?;
        field.default = Some(default.clone());
    }
    Ok(field)
}

fn parse_choices(value: Option<&Value>) -> Result<Vec<String>, String> {
    let bad = || format!("a choice field lists its \"options\": 1 to {MAX_CHOICES} different, non-empty texts");
    let Some(Value::Array(items)) = value else { return Err(bad()) };
    let options: Vec<String> = items.iter().filter_map(|v| v.as_str().filter(|s| !s.trim().is_empty()).map(String::from)).collect();
    let distinct: BTreeSet<&String> = options.iter().collect();
    if options.is_empty() || options.len() > MAX_CHOICES || options.len() != items.len() || distinct.len() != options.len() {
        return Err(bad());
    }
    Ok(options)
}

/// Checks one value against its field; `Err` says why, in words for the person who sent it.
fn check_value(field: &FormField, value: &Value) -> Result<(), String> {
    match (&field.kind, value) {
        (FieldKind::Text, Value::String(s)) => {
            let max = field.max_length.unwrap_or(TEXT_LENGTH_DEFAULT);
            if s.chars().count() as u64 > max {
                return Err(format!("at most {max} characters, got {}", s.chars().count()));
            }
            Ok(())
        }
        (FieldKind::Text, _) => Err("a text".into()),
        (FieldKind::Number, Value::Number(_)) => Ok(()),
        (FieldKind::Number, _) => Err("a number".into()),
        (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
        (FieldKind::Boolean, _) => Err("true or false".into()),
        (FieldKind::Choice(options), Value::String(s)) if options.contains(s) => Ok(()),
        (FieldKind::Choice(options), _) => Err(format!("one of {}", options.join(", "))),
        (FieldKind::Json, v) => {
            let max = field.max_length.unwrap_or(JSON_LENGTH_DEFAULT);
            let bytes = serde_json::to_string(v).map_or(0, |t| t.len()) as u64;
            if bytes > max {
                return Err(format!("at most {max} bytes of JSON, got {bytes}"));
            }
            Ok(())
        }
    }
}

/// The `fields` of a gate's output view from the values an answer gives: every declared field
/// (see the module's invariants). `Err` names the first field that does not fit, or one the
/// gate does not ask for.
pub fn check_values(fields: &[FormField], given: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    if let Some(unknown) = given.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
        let asked: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        return Err(match asked.is_empty() {
            true => format!("fields.{unknown}: this gate asks for no fields"),
            false => format!("fields.{unknown}: this gate asks for {}", asked.join(", ")),
        });
    }
    let mut out = Map::new();
    for field in fields {
        let value = match given.get(&field.name).filter(|v| !v.is_null()) {
            Some(v) => {
                check_value(field, v).map_err(|why| format!("fields.{}: must be {why}", field.name))?;
                if field.required && v.as_str().is_some_and(|s| s.trim().is_empty()) {
                    return Err(format!("fields.{}: is required and must not be empty", field.name));
                }
                v.clone()
            }
            None if field.required => return Err(format!("fields.{}: is required", field.name)),
            None => field.default.clone().unwrap_or_else(|| empty(&field.kind)),
        };
        out.insert(field.name.clone(), value);
    }
    Ok(out)
}

fn empty(kind: &FieldKind) -> Value {
    match kind {
        FieldKind::Text => Value::String(String::new()),
        FieldKind::Boolean => Value::Bool(false),
        FieldKind::Number | FieldKind::Choice(_) | FieldKind::Json => Value::Null,
    }
}

/// Reads a gate's `edit`: the ids of the steps a person may edit.
pub fn parse_edit(value: Option<&Value>) -> (Vec<String>, Vec<String>) {
    match value {
        None | Some(Value::Null) => (Vec::new(), Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_EDITS && items.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty())) => {
            let ids: Vec<String> = items.iter().filter_map(|v| v.as_str().map(String::from)).collect();
            let distinct: BTreeSet<&String> = ids.iter().collect();
            let problems = if distinct.len() == ids.len() { Vec::new() } else { vec!["\"edit\" names a step twice".to_string()] };
            (ids, problems)
        }
        Some(_) => (Vec::new(), vec![format!("\"edit\" lists the ids of up to {MAX_EDITS} earlier agent or command steps")]),
    }
}

/// Who answered, as an answer gives it: 1 to [`MAX_LABEL`] characters, no control characters.
pub fn check_by(by: Option<&str>) -> Result<(), String> {
    match by {
        Some(b) if b.trim().is_empty() || b.chars().count() > MAX_LABEL || b.chars().any(char::is_control) => {
            Err(format!("by: who answers is 1 to {MAX_LABEL} characters with no control characters"))
        }
        _ => Ok(()),
    }
}

/// The issues of every gate's `edit`: each named step must be an agent or command step the gate
/// comes after, outside any loop (its text is one text, not one per pass).
pub fn edit_issues(design: &Design) -> Vec<Issue> {
    let graph = Graph::new(design);
    let bodies = graph.loop_bodies(design);
    let in_loop = |i: usize| bodies.values().any(|b| b.contains(&i));
    let mut issues = Vec::new();
    for (g, gate) in graph.nodes.iter().enumerate().filter(|(_, n)| n.is(NodeKind::Approval)) {
        let (ids, _) = parse_edit(gate.field("edit"));
        let upstream = graph.ancestors(g);
        for id in ids {
            let found = graph.index.get(id.as_str()).copied();
            let ok = found.is_some_and(|i| {
                upstream.contains(&i) && !in_loop(i) && (graph.nodes[i].is(NodeKind::Agent) || graph.nodes[i].is(NodeKind::Command))
            });
            if !ok {
                issues.push(Issue::node_field(
                    &gate.id,
                    "edit",
                    format!("\"edit\": {id:?} is not an agent or command step this gate comes after (outside any loop)"),
                ));
            }
        }
    }
    issues
}

/// The view of step `view` once a person changed its text to `text`: the text later steps read
/// is the new one; `edited` keeps the first text the step had, its SHA-256, who changed it and
/// when. `rebuild` makes a view of the step's type from a text and its other fields.
pub fn edited_view(view: &Value, text: &str, by: Option<&str>, at: &str, rebuild: impl Fn(&str, Map<String, Value>) -> Value) -> Value {
    let mut extra: Map<String, Value> = view.as_object().cloned().unwrap_or_default();
    let first = extra.remove("edited").and_then(|e| e.get("original").and_then(Value::as_str).map(String::from));
    let original = first.unwrap_or_else(|| view.get("text").and_then(Value::as_str).unwrap_or_default().to_string());
    for key in crate::view::BASE_KEYS.iter().chain(&["stdout"]) {
        extra.remove(*key);
    }
    let sha = Sha256::digest(original.as_bytes());
    let digest: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    extra.insert("edited".into(), json!({"by": by, "at": at, "original_sha256": digest, "original": original}));
    rebuild(text, extra)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Design;
    use crate::names::RunId;
    use crate::plan::Plan;
    use crate::run::{EngineError, Outcome, Reply, Response, Run, Status, TriggerInfo};
    use crate::time::Ts;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn t(s: &str) -> Ts {
        crate::time::parse(s).unwrap()
    }

    /// trigger → `draft` (an agent step) → gate `g` (with `gate`'s extra fields) → output `say`.
    fn parked(gate: Value, say: &str) -> Run {
        let mut g = json!({"id": "g", "type": "approval", "question": "ok?", "options": ["approve", "reject"]});
        g.as_object_mut().unwrap().extend(gate.as_object().cloned().unwrap_or_default());
        let graph = json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "draft", "type": "agent", "prompt": "write"},
            g,
            {"id": "say", "type": "output", "template": say}
        ], "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "g"}, {"from": "g", "to": "say", "label": "approve"}]});
        let report = crate::validate::validate(&graph);
        assert!(report.ok, "{:?}", report.errors);
        let plan = Plan::compile("d", &Design::from_value(&graph).unwrap()).unwrap();
        let trigger = TriggerInfo::new(crate::trigger::TriggerMode::Manual, Value::Null);
        let mut run = Run::start(plan, RunId::parse("000000000001").unwrap(), trigger, t("2026-01-01T00:00:00Z"));
        let draft = |_: &str| Outcome::Done { text: "the first draft".into(), extra: Map::new(), tokens: 0 };
        crate::transition::drive_saving(&mut run, &mut None, t("2026-01-01T00:00:00Z"), draft, |_, _| {});
        assert_eq!(run.status(), Status::AwaitingApproval);
        run
    }

    /// Answers `g` and drives the run to its end; the text `say` rendered.
    fn answer(run: &mut Run, reply: Reply) -> Result<String, EngineError> {
        run.respond(&crate::names::pid("g"), Response::Answer(reply), t("2026-01-01T00:01:00Z"))?;
        crate::transition::drive_saving(run, &mut None, t("2026-01-01T00:01:00Z"), |_| Outcome::failed("no task"), |_, _| {});
        assert_eq!(run.status(), Status::Done, "{:?}", run.error());
        Ok(run.outputs()["say"]["text"].as_str().unwrap_or_default().to_string())
    }

    fn reply(fields: Value) -> Reply {
        Reply { answer: "approve".into(), fields: fields.as_object().cloned().unwrap_or_default(), ..Reply::default() }
    }

    #[test]
    fn a_declaration_that_does_not_hold_is_refused_with_its_field_and_why() {
        let cases = [
            (json!("x"), "is a list of fields"),
            (json!([{"name": "1a", "type": "text"}]), "\"name\""),
            (json!([{"name": "a", "type": "date"}]), "\"type\" is one of"),
            (json!([{"name": "a", "type": "text"}, {"name": "a", "type": "number"}]), "used twice"),
            (json!([{"name": "a", "type": "choice"}]), "lists its \"options\""),
            (json!([{"name": "a", "type": "choice", "options": ["x", "x"]}]), "different"),
            (json!([{"name": "a", "type": "text", "options": ["x"]}]), "only a choice field"),
            (json!([{"name": "a", "type": "number", "max_length": 3}]), "only a text or json field"),
            (json!([{"name": "a", "type": "text", "max_length": 0}]), "\"max_length\" is a whole number from 1"),
            (json!([{"name": "a", "type": "text", "max_length": 2, "default": "abc"}]), "\"default\": at most 2 characters"),
            (json!([{"name": "a", "type": "boolean", "default": "yes"}]), "\"default\": true or false"),
            (json!([{"name": "a", "type": "text", "colour": "red"}]), "unknown key \"colour\""),
            (json!([{"name": "a", "type": "text", "required": "yes"}]), "\"required\" is true or false"),
        ];
        for (fields, says) in cases {
            let (_, problems) = parse_fields(Some(&fields));
            assert!(problems.iter().any(|p| p.contains(says)), "{fields}: {problems:?}");
        }
        let many: Vec<Value> = (0..=MAX_FIELDS).map(|i| json!({"name": format!("f{i}"), "type": "text"})).collect();
        assert!(!parse_fields(Some(&Value::Array(many))).1.is_empty());
    }

    #[test]
    fn edit_names_earlier_agent_or_command_steps_outside_loops() {
        let design = |edit: Value| {
            json!({"nodes": [
                {"id": "start", "type": "trigger", "mode": "manual"},
                {"id": "draft", "type": "agent", "prompt": "write"},
                {"id": "check", "type": "condition", "expr": "out.draft.words > 1"},
                {"id": "g", "type": "approval", "question": "ok?", "edit": edit},
                {"id": "late", "type": "command", "run": "true"}
            ], "edges": [{"from": "start", "to": "draft"}, {"from": "draft", "to": "check"}, {"from": "check", "to": "g", "label": "true"}, {"from": "g", "to": "late", "label": "approve"}]})
        };
        let report = crate::validate::validate(&design(json!(["draft"])));
        assert!(report.ok, "{:?}", report.errors);
        for bad in [json!(["check"]), json!(["late"]), json!(["ghost"]), json!(["draft", "draft"]), json!("draft")] {
            let report = crate::validate::validate(&design(bad.clone()));
            assert!(report.errors.iter().any(|i| i.field.as_deref() == Some("edit")), "{bad}: {:?}", report.errors);
        }
    }

    #[test]
    fn an_edit_is_what_later_steps_read_and_the_original_is_kept_with_who_changed_it() {
        let mut run = parked(json!({"edit": ["draft"]}), "{{nodes.draft}} / {{nodes.draft.edited.by}}");
        let crate::run::Pending::Approval { edit, .. } = &run.parked()[0] else { panic!("parked at the gate") };
        assert_eq!(edit.get("draft"), Some(&json!("the first draft")), "the page is given the text to edit");
        let before = serde_json::to_value(&run).unwrap();
        for (edits, says) in [
            (BTreeMap::from([("say".to_string(), "x".to_string())]), "edits.say: this gate lets draft be edited"),
            (BTreeMap::from([("draft".to_string(), "x".repeat(limits::STEP_OUTPUT_BYTES + 1))]), "at most"),
        ] {
            let refused =
                run.respond(&crate::names::pid("g"), Response::Answer(Reply { edits, ..reply(json!({})) }), t("2026-01-01T00:01:00Z"));
            assert!(matches!(&refused, Err(EngineError::BadRequest(m)) if m.contains(says)), "{refused:?}");
            assert_eq!(serde_json::to_value(&run).unwrap(), before, "a refused answer changes nothing");
        }
        let edits = BTreeMap::from([("draft".to_string(), "the fixed draft".to_string())]);
        let said = answer(&mut run, Reply { edits, by: Some("ada".into()), ..reply(json!({})) }).unwrap();
        assert_eq!(said, "the fixed draft / ada");
        let edited = &run.outputs()["draft"]["edited"];
        assert_eq!(edited["original"], "the first draft");
        assert_eq!(edited["original_sha256"], hex(&Sha256::digest(b"the first draft")));
        assert_eq!((edited["by"].as_str(), edited["at"].as_str()), (Some("ada"), Some("2026-01-01T00:01:00.000Z")));
        assert_eq!(run.outputs()["g"]["by"], "ada");
        assert!(run.history().iter().any(|h| h.event == crate::run::EDITED && h.node.as_deref() == Some("draft")));
        // What is written reads back as it was.
        let back: Run = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&run).unwrap());
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// One generated field: its declaration, the value an answer gives for it (`None`: none),
    /// and whether an oracle written apart from the checker accepts that value.
    fn field(i: usize) -> impl Strategy<Value = (Value, Option<Value>, bool)> {
        (0..5usize, any::<bool>(), any::<bool>(), 1usize..6, 0..5usize, 0usize..8).prop_map(
            move |(kind, required, with_default, max, how, len)| {
                let name = format!("f{i}");
                let (mut decl, default, valid, wrong, long_ok) = match kind {
                    0 => (json!({"type": "text", "max_length": max}), json!("d"), json!("x".repeat(len)), json!(5), len <= max),
                    1 => (json!({"type": "number"}), json!(1.5), json!(len), json!("5"), true),
                    2 => (json!({"type": "boolean"}), json!(true), json!(len % 2 == 0), json!("true"), true),
                    3 => {
                        let options: Vec<&str> = ["a", "b", "c"].into_iter().take(max.min(3)).collect();
                        let pick = if len < options.len() { json!(options[len]) } else { json!("z") };
                        (json!({"type": "choice", "options": options}), json!("a"), pick, json!(1), len < max.min(3))
                    }
                    _ => (
                        json!({"type": "json", "max_length": max + 4}),
                        json!([1]),
                        json!(vec![7; len]),
                        json!(vec![7; 40]),
                        serde_json::to_string(&vec![7; len]).unwrap().len() <= max + 4,
                    ),
                };
                decl["name"] = json!(name);
                decl["required"] = json!(required);
                if with_default {
                    decl["default"] = default;
                }
                let empty_text = kind == 0 && len == 0;
                let (given, ok) = match how {
                    0 => (None, !required),
                    1 => (Some(Value::Null), !required),
                    2 | 3 => (Some(valid), long_ok && !(required && empty_text)),
                    _ => (Some(wrong), kind == 4 && serde_json::to_string(&vec![7; 40]).unwrap().len() <= max + 4),
                };
                (decl, given, ok)
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Over generated forms and answers: an answer the oracle accepts is taken, its values
        /// (or the defaults, or the empty ones) are what a later template renders, and the run
        /// reads back as written; one it refuses is refused naming a field, and changes nothing.
        #[test]
        fn whatever_is_accepted_renders_and_reads_back_and_whatever_is_refused_writes_nothing(
            fields in (1usize..5).prop_flat_map(|n| (0..n).map(field).collect::<Vec<_>>()),
            stranger in proptest::bool::weighted(0.1),
        ) {
            let decls: Vec<Value> = fields.iter().map(|(d, _, _)| d.clone()).collect();
            let say: Vec<String> = (0..fields.len()).map(|i| format!("{{{{nodes.g.fields.f{i}}}}}")).collect();
            let mut run = parked(json!({"fields": decls}), &say.join("|"));
            let mut given = Map::new();
            for (i, (_, value, _)) in fields.iter().enumerate() {
                if let Some(v) = value {
                    given.insert(format!("f{i}"), v.clone());
                }
            }
            if stranger {
                given.insert("stranger".into(), json!("hi"));
            }
            let accepted = !stranger && fields.iter().all(|(_, _, ok)| *ok);
            let before = serde_json::to_value(&run).unwrap();
            match answer(&mut run, reply(Value::Object(given.clone()))) {
                Ok(said) => {
                    prop_assert!(accepted, "accepted what the oracle refuses: {decls:?} {given:?}");
                    let expected: Vec<String> = fields.iter().enumerate().map(|(i, (decl, _, _))| {
                        let value = given.get(&format!("f{i}")).filter(|v| !v.is_null()).or(decl.get("default")).cloned().unwrap_or(match decl["type"].as_str() {
                            Some("text") => json!(""),
                            Some("boolean") => json!(false),
                            _ => Value::Null,
                        });
                        match value { Value::String(s) => s, other => other.to_string() }
                    }).collect();
                    prop_assert_eq!(said, expected.join("|"));
                    let back: Run = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
                    prop_assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&run).unwrap());
                }
                Err(EngineError::BadRequest(why)) => {
                    prop_assert!(!accepted, "refused what the oracle accepts ({why}): {decls:?} {given:?}");
                    prop_assert!(why.contains("fields."), "{why}");
                    prop_assert_eq!(serde_json::to_value(&run).unwrap(), before);
                }
                Err(other) => prop_assert!(false, "{other:?}"),
            }
        }
    }
}
