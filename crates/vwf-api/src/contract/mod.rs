//! The contract's shapes as types: what every request carries ([`requests`]), read by one parser
//! and described by one JSON Schema each, both derived from the same struct (serde and
//! `schemars`). The OpenAPI document (`server::openapi`) and the tools' argument schemas (MCP, the
//! Hermes plugin) are generated from these types, so the schema a client reads and the parser the
//! server runs cannot drift apart.
//!
//! `schemars` rather than `utoipa`: the document is assembled from the route table
//! (`server::api::ROUTES`), which already names each route's body and answer, so only the schema
//! of a type is needed, not a second route description in attributes; and `schemars` emits JSON
//! Schema 2020-12, which OpenAPI 3.1 uses as it is. It is the crate the MCP server (rmcp) uses for
//! the same purpose.
//!
//! Invariants:
//! - A request that fits its schema is parsed; one that does not is refused with a message that
//!   names the field (`missing "graph"`, `"create" must be true or false`), never a parser's
//!   internal wording about maps and line numbers.
//! - Rules a schema can state (patterns, bounds, enums, exactly one of several fields) are in the
//!   type's schema, and the parser enforces the same rule.

pub mod answers;
pub mod queries;
pub mod requests;

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::failure::Failure;

/// Where the OpenAPI document keeps shared schemas; a generator's `$ref`s point there.
pub const COMPONENTS: &str = "/components/schemas";

/// The generator every contract schema comes from: JSON Schema 2020-12 (OpenAPI 3.1's dialect),
/// shared definitions under [`COMPONENTS`], describing how requests are read.
pub fn generator() -> SchemaGenerator {
    settings().for_deserialize().into_generator()
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = COMPONENTS.into();
        s.meta_schema = None;
    })
}

/// Drops `"default": null` (on every optional field, it says only that absent is absent).
fn drop_null_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            map.values_mut().for_each(drop_null_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_defaults),
        _ => {}
    }
}

/// The generator of the answers' schemas: as [`generator`], describing how answers are written
/// (a field the answer leaves out when empty is not required).
pub fn answer_generator() -> SchemaGenerator {
    settings().for_serialize().into_generator()
}

/// The schema of `T` as JSON, shared definitions collected in `generator`.
pub fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
    let mut schema = generator.subschema_for::<T>().to_value();
    drop_null_defaults(&mut schema);
    schema
}

/// The shared definitions `generator` collected, to put under [`COMPONENTS`].
pub fn definitions(generator: &mut SchemaGenerator) -> Map<String, Value> {
    let mut definitions = generator.take_definitions(true);
    definitions.values_mut().for_each(drop_null_defaults);
    definitions
}

/// Replaces every `$ref` into [`COMPONENTS`] in `schema` by the definition it names (from
/// `generator`), for schemas that must stand alone (a tool's arguments).
pub fn inline_definitions(schema: &mut Value, generator: &mut SchemaGenerator) {
    let definitions = definitions(generator);
    inline(schema, &definitions);
}

fn inline(schema: &mut Value, definitions: &Map<String, Value>) {
    let prefix = format!("#{COMPONENTS}/");
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref")
                && let Some(definition) = target.strip_prefix(&prefix).and_then(|name| definitions.get(name))
            {
                let mut definition = definition.clone();
                map.remove("$ref");
                inline(&mut definition, definitions);
                if let Value::Object(definition) = definition {
                    for (k, v) in definition {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            map.values_mut().for_each(|v| inline(v, definitions));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| inline(v, definitions)),
        _ => {}
    }
}

/// Parses a request's JSON (a body, a tool's arguments) as `T`. A value that does not fit is a
/// 400 whose message names the field and what it must be.
pub fn parse<T: DeserializeOwned>(args: Value) -> Result<T, Failure> {
    serde_path_to_error::deserialize(args).map_err(|e| Failure::BadRequest(explain(&e.path().to_string(), &e.inner().to_string())))
}

/// serde's error about the value at `path` in the contract's words: `missing "graph"`, `"create"
/// must be true or false`. Messages the contract's own types raise are already in those words:
/// those that say what a field must be get its name in front, the others (a name's or an id's
/// rule) stand alone.
fn explain(path: &str, message: &str) -> String {
    let at = |field: &str| if path == "." { field.to_string() } else { format!("{path}.{field}") };
    let subject = if path == "." { "the request".to_string() } else { format!("\"{path}\"") };
    if let Some(field) = message.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
        return format!("missing \"{}\"", at(field));
    }
    for prefix in ["invalid type: ", "invalid value: ", "invalid length: "] {
        if let Some((_, expected)) = message.strip_prefix(prefix).and_then(|m| m.rsplit_once(", expected ")) {
            return format!("{subject} must be {}", in_words(expected));
        }
    }
    if let Some((given, expected)) = message.strip_prefix("unknown variant ").and_then(|m| m.split_once(", expected ")) {
        let expected = expected.trim_start_matches("one of ").replace('`', "\"");
        return format!("{subject} must be {expected}, not {}", given.replace('`', "\""));
    }
    if message.starts_with("must ") { format!("{subject} {message}") } else { message.to_string() }
}

/// serde's name of an expected type, as the contract says it.
fn in_words(expected: &str) -> &str {
    match expected {
        "a boolean" => "true or false",
        "a map" => "a JSON object",
        "u64" | "usize" | "u32" => "a whole number",
        other => other,
    }
}

/// Two request types read from the same JSON object (a design name and a run's start, say): the
/// object is parsed as each, and its schema is the two schemas' properties and rules together.
#[derive(Debug, Clone, PartialEq)]
pub struct Both<A, B>(pub A, pub B);

impl<'de, A: DeserializeOwned, B: DeserializeOwned> Deserialize<'de> for Both<A, B> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        // The messages are already in the contract's words; `explain` leaves them as they are.
        let part = |f: Failure| D::Error::custom(f.to_string());
        Ok(Both(parse::<A>(value.clone()).map_err(part)?, parse::<B>(value).map_err(part)?))
    }
}

impl<A: JsonSchema, B: JsonSchema> JsonSchema for Both<A, B> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("{}And{}", A::schema_name(), B::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut merged = Map::new();
        // One example: the first of each part's, put together (a part without one adds nothing).
        let mut example = Map::new();
        for part in [A::json_schema(generator), B::json_schema(generator)] {
            let Value::Object(part) = part.to_value() else { continue };
            for (key, value) in part {
                match (key.as_str(), merged.get_mut(&key), value) {
                    // Each part's own description is about the part.
                    ("description" | "title", _, _) => {}
                    ("examples", _, Value::Array(examples)) => {
                        if let Some(Value::Object(first)) = examples.into_iter().next() {
                            example.extend(first);
                        }
                    }
                    (_, Some(Value::Object(into)), Value::Object(more)) => into.extend(more),
                    (_, Some(Value::Array(into)), Value::Array(more)) => into.extend(more),
                    (_, _, value) => {
                        merged.insert(key, value);
                    }
                }
            }
        }
        if !example.is_empty() {
            merged.insert("examples".into(), Value::Array(vec![Value::Object(example)]));
        }
        Schema::from(merged)
    }
}

/// A JSON object taken as it is (a design document, an agent.json document): anything but an
/// object is refused with what the object is for.
fn object<'de, D: Deserializer<'de>>(deserializer: D, what: &str) -> Result<Value, D::Error> {
    match Value::deserialize(deserializer)? {
        doc @ Value::Object(_) => Ok(doc),
        other => Err(D::Error::custom(format!("must be a JSON object ({what}), got {}", vwf_core::view::kind_name(&other)))),
    }
}

/// A schema for a JSON object described by `description`.
fn object_schema(description: &str) -> Schema {
    json_schema!({"type": "object", "description": description})
}
