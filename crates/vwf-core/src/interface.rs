//! A design's interface (SPEC §3): the input it declares (`inputs`, a JSON Schema of its trigger
//! input, kept to what the canvas edits as a field list) and whether agents may call it as a tool
//! (`tool: true`).
//!
//! The schema is a small, closed subset of JSON Schema, read here once for the validator, the
//! tool listings (which hand it to MCP clients and models as the tool's input schema as written)
//! and the check of a tool call's arguments: `{"type": "object", "properties": {<name>: {"type":
//! "string"|"number"|"integer"|"boolean"|"object"|"array", "description"?: <text>}}, "required":
//! [<name>, ...]}`. Anything beyond it is refused where the design is validated, so a listed
//! schema always means what the check enforces.

use serde_json::{Map, Value};

use crate::design::Design;
use crate::validate::Issue;

/// The top-level field declaring the design's input.
pub const INPUTS: &str = "inputs";
/// The top-level field offering the design to agents as a tool.
pub const TOOL: &str = "tool";
/// The types an input field may have.
pub const FIELD_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "object", "array"];

/// One declared input field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub kind: String,
    pub required: bool,
    pub description: Option<String>,
}

/// A design's declared input: its fields, in the order written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Inputs {
    pub fields: Vec<Field>,
}

impl Inputs {
    /// The declared input of `design` (none declared: no fields), and the problems with it.
    pub fn of(design: &Design) -> (Option<Inputs>, Vec<Issue>) {
        match design.raw.get(INPUTS) {
            None | Some(Value::Null) => (None, Vec::new()),
            Some(v) => match read(v) {
                Ok(inputs) => (Some(inputs), Vec::new()),
                Err(why) => (None, vec![Issue::field_only(INPUTS, format!("\"inputs\" {why}"))]),
            },
        }
    }

    /// Why `input` (a run's trigger input, a tool call's arguments) does not fit, if it does not:
    /// a missing required field, or a field of another type.
    pub fn check(&self, input: &Value) -> Result<(), String> {
        let empty = Map::new();
        let given = match input {
            Value::Object(m) => m,
            Value::Null => &empty,
            other => return Err(format!("the input must be an object of its fields, not {}", crate::view::kind_name(other))),
        };
        for f in &self.fields {
            match given.get(&f.name) {
                None | Some(Value::Null) if f.required => return Err(format!("the input needs {:?} ({})", f.name, f.kind)),
                None | Some(Value::Null) => {}
                Some(v) if !fits(&f.kind, v) => {
                    return Err(format!("input {:?} must be {} {}, not {}", f.name, article(&f.kind), f.kind, crate::view::kind_name(v)));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Whether `design` is offered to agents as a tool.
pub fn is_tool(design: &Design) -> bool {
    design.raw.get(TOOL) == Some(&Value::Bool(true))
}

/// The problems with a design's interface fields, for the validator.
pub fn issues(design: &Design) -> Vec<Issue> {
    let mut out = Inputs::of(design).1;
    if design.raw.get(TOOL).is_some_and(|v| !v.is_boolean() && !v.is_null()) {
        out.push(Issue::field_only(TOOL, "\"tool\" is true or false (true: agents may call the design as a tool)"));
    }
    out
}

/// The JSON Schema a tool of this design takes: its `inputs` as written, or any object.
pub fn tool_schema(design: &Design) -> Map<String, Value> {
    match (Inputs::of(design).0, design.raw.get(INPUTS)) {
        (Some(_), Some(Value::Object(schema))) => schema.clone(),
        _ => {
            let mut schema = Map::new();
            schema.insert("type".into(), Value::String("object".into()));
            schema.insert("properties".into(), Value::Object(Map::new()));
            schema
        }
    }
}

/// How a design is offered as a tool, worded once for every surface (MCP, Hermes, an agent
/// step's model): its tool name, description and argument schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    pub name: String,
    pub description: String,
    pub schema: Map<String, Value>,
}

/// The tool saved design `name` (read as `design`) is offered as.
pub fn offer(name: &crate::names::DesignName, design: &Design) -> Offer {
    let description = design.description().map(str::trim).filter(|d| !d.is_empty()).map_or_else(
        || format!("Runs the saved design {name} and answers its status and outputs."),
        |d| format!("{d} (runs the saved design {name})"),
    );
    Offer { name: tool_name(name.as_str()), description, schema: tool_schema(design) }
}

/// Why a tool call's `args` do not fit `design`'s declared input, if they do not.
pub fn check_call(design: &Design, args: &Value) -> Result<(), String> {
    Inputs::of(design).0.map_or(Ok(()), |inputs| inputs.check(args))
}

/// The name a design's tool is listed under: the design's name, a `.` read as `_` (tool names
/// take letters, digits, `_` and `-`).
pub fn tool_name(design: &str) -> String {
    design.replace('.', "_")
}

fn read(v: &Value) -> Result<Inputs, String> {
    let Some(schema) = v.as_object() else { return Err("must be an object: {\"type\": \"object\", \"properties\": {…}}".into()) };
    for key in schema.keys() {
        if !["type", "properties", "required", "description", "additionalProperties"].contains(&key.as_str()) {
            return Err(format!("takes type, properties, required and description, not {key:?}"));
        }
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("must have \"type\": \"object\"".into());
    }
    let properties = match schema.get("properties") {
        None => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => return Err("\"properties\" must be an object of fields".into()),
    };
    let required: Vec<String> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            items.iter().map(|i| i.as_str().map(String::from).ok_or("\"required\" lists field names")).collect::<Result<_, _>>()?
        }
        Some(_) => return Err("\"required\" must be a list of field names".into()),
    };
    if let Some(missing) = required.iter().find(|r| !properties.contains_key(*r)) {
        return Err(format!("requires {missing:?}, which is not among its properties"));
    }
    let mut fields = Vec::new();
    for (name, field) in &properties {
        if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(format!("field name {name:?} must be 1 to 64 letters, digits, '_' or '-'"));
        }
        let Some(field) = field.as_object() else { return Err(format!("field {name:?} must be an object {{\"type\": …}}")) };
        let kind = field.get("type").and_then(Value::as_str).unwrap_or_default();
        if !FIELD_TYPES.contains(&kind) {
            return Err(format!("field {name:?} has type {kind:?}; use one of {}", FIELD_TYPES.join(", ")));
        }
        let description = match field.get("description") {
            None => None,
            Some(Value::String(d)) => Some(d.clone()),
            Some(_) => return Err(format!("field {name:?}: \"description\" must be text")),
        };
        if let Some(other) = field.keys().find(|k| !["type", "description"].contains(&k.as_str())) {
            return Err(format!("field {name:?} takes type and description, not {other:?}"));
        }
        fields.push(Field { name: name.clone(), kind: kind.into(), required: required.contains(name), description });
    }
    Ok(Inputs { fields })
}

fn fits(kind: &str, v: &Value) -> bool {
    match kind {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        _ => false,
    }
}

fn article(kind: &str) -> &'static str {
    if matches!(kind.as_bytes().first(), Some(b'a' | b'e' | b'i' | b'o' | b'u')) { "an" } else { "a" }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn design(extra: Value) -> Design {
        let mut doc = json!({"nodes": [{"id": "t", "type": "trigger", "mode": "manual"}], "edges": []});
        doc.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        Design::from_value(&doc).unwrap()
    }

    #[test]
    fn declared_inputs_are_read_and_checked() {
        let d = design(json!({"tool": true, "inputs": {"type": "object",
            "properties": {"message": {"type": "string", "description": "what to say"}, "level": {"type": "integer"}},
            "required": ["message"]}}));
        assert!(is_tool(&d));
        assert!(issues(&d).is_empty());
        let inputs = Inputs::of(&d).0.unwrap();
        assert_eq!(inputs.fields.len(), 2);
        assert!(inputs.check(&json!({"message": "hi"})).is_ok());
        assert!(inputs.check(&json!({"message": "hi", "level": 3})).is_ok());
        assert!(inputs.check(&json!({})).unwrap_err().contains("needs \"message\""));
        assert!(inputs.check(&json!({"message": 1})).unwrap_err().contains("must be a string"));
        assert!(inputs.check(&json!({"message": "x", "level": 1.5})).unwrap_err().contains("an integer"));
        assert!(inputs.check(&json!("text")).is_err());
        assert_eq!(tool_schema(&d)["required"], json!(["message"]));
        assert_eq!(tool_name("notify.oncall"), "notify_oncall");
    }

    #[test]
    fn a_schema_outside_the_subset_is_refused_with_why() {
        for (inputs, needle) in [
            (json!("text"), "must be an object"),
            (json!({"type": "array"}), "\"type\": \"object\""),
            (json!({"type": "object", "properties": {"a": {"type": "date"}}}), "use one of"),
            (json!({"type": "object", "properties": {}, "required": ["a"]}), "not among its properties"),
            (json!({"type": "object", "properties": {"a b": {"type": "string"}}}), "field name"),
            (json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}), "not \"enum\""),
            (json!({"type": "object", "oneOf": []}), "not \"oneOf\""),
        ] {
            let found = issues(&design(json!({"inputs": inputs})));
            assert!(found.iter().any(|i| i.field.as_deref() == Some(INPUTS) && i.message.contains(needle)), "{inputs}: {found:?}");
        }
        assert!(!issues(&design(json!({"tool": "yes"}))).is_empty());
        assert!(!is_tool(&design(json!({}))));
    }
}
