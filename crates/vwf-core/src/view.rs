//! The output view of a finished step (SPEC §4): the one JSON object that templates and
//! conditions read.
//!
//! Invariants: the five base keys come first, in the order of [`BASE_KEYS`]; type-specific
//! fields follow and can never shadow a base key; `data` is `text` parsed as JSON (or `null`),
//! except for the run input whose `data` is the input itself. When `data` is an object its keys
//! are addressable directly unless a view key has the same name (the view key wins).

use serde_json::{Map, Value};

use crate::refs;

/// The keys every output view has, in order.
pub const BASE_KEYS: [&str; 5] = ["text", "data", "words", "chars", "lines"];

/// Builds the output view of `text`, followed by the type-specific `extra` fields.
/// An `extra` key that collides with a base key is ignored.
pub fn output_view(text: &str, extra: Map<String, Value>) -> Value {
    // Deeper than the nesting limit stays text: whatever is kept must read back.
    let data = crate::json::parse(text.trim()).unwrap_or(Value::Null);
    build(text, data, extra)
}

/// The output view of a command step: `text` is its stdout without trailing newlines, as shell
/// command substitution (`$(…)`) gives it, so `{{nodes.a}} {{nodes.b}}` joins two `echo`s as
/// `A B`; `stdout` keeps the exact bytes the command printed.
pub fn command_view(stdout: &str, mut extra: Map<String, Value>) -> Value {
    extra.insert("stdout".into(), Value::String(stdout.to_string()));
    output_view(command_text(stdout), extra)
}

/// A command's stdout as its text view reads it (see [`command_view`]).
pub fn command_text(stdout: &str) -> &str {
    stdout.trim_end_matches('\n')
}

/// The view of a run's input (the trigger): its text is the string itself when the input is a
/// JSON string, else its compact JSON (`null` for no input); its `data` is the input value.
pub fn input_view(input: &Value) -> Value {
    let text = match input {
        Value::String(s) => s.clone(),
        other => compact(other),
    };
    build(&text, input.clone(), Map::new())
}

/// Reads `segs` from a view: no segments gives the view's `text`; otherwise the first segment
/// is a view key, or else a key of `data` when `data` is an object; the rest is a plain path.
pub fn view_lookup(view: &Value, segs: &[&str]) -> Option<Value> {
    let Some((first, rest)) = segs.split_first() else {
        return view.get("text").cloned();
    };
    let head = match view.get(*first) {
        Some(v) => v,
        None => match view.get("data") {
            Some(Value::Object(data)) => data.get(*first)?,
            _ => return None,
        },
    };
    refs::lookup(head, rest).cloned()
}

fn build(text: &str, data: Value, extra: Map<String, Value>) -> Value {
    let mut view = Map::new();
    view.insert("text".into(), Value::String(text.to_string()));
    view.insert("data".into(), data);
    view.insert("words".into(), Value::from(text.split_whitespace().count()));
    view.insert("chars".into(), Value::from(text.chars().count()));
    view.insert("lines".into(), Value::from(text.lines().count()));
    for (key, value) in extra {
        if !BASE_KEYS.contains(&key.as_str()) {
            view.insert(key, value);
        }
    }
    Value::Object(view)
}

/// Compact JSON text of a value. Serializing a `Value` cannot fail (its keys are strings).
fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// What kind of JSON value `v` is, for messages ("an array", "a string", …).
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn extra(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn view_has_base_keys_in_order_then_extras() {
        let v = output_view("hello big world\nbye", extra(json!({"exit_code": 0, "text": "no"})));
        let keys: Vec<&str> = v.as_object().into_iter().flat_map(|m| m.keys()).map(String::as_str).collect();
        assert_eq!(keys, ["text", "data", "words", "chars", "lines", "exit_code"]);
        assert_eq!(v["text"], "hello big world\nbye");
        assert_eq!(v["data"], Value::Null);
        assert_eq!(v["words"], 4);
        assert_eq!(v["chars"], 19);
        assert_eq!(v["lines"], 2);
    }

    #[test]
    fn counts_over_empty_and_unicode_text() {
        let v = output_view("", Map::new());
        assert_eq!((v["words"].clone(), v["chars"].clone(), v["lines"].clone()), (json!(0), json!(0), json!(0)));
        let v = output_view("héllo ✓", Map::new());
        assert_eq!(v["chars"], 7);
        assert_eq!(v["lines"], 1);
    }

    #[test]
    fn data_is_text_parsed_as_json() {
        assert_eq!(output_view("  {\"a\": [1, 2]}\n", Map::new())["data"], json!({"a": [1, 2]}));
        assert_eq!(output_view("42", Map::new())["data"], json!(42));
        assert_eq!(output_view("{broken", Map::new())["data"], Value::Null);
    }

    #[test]
    fn data_keys_are_addressable_unless_a_view_key_wins() {
        let v = output_view(r#"{"city": "Oslo", "words": "mine", "items": [{"t": "x"}]}"#, Map::new());
        assert_eq!(view_lookup(&v, &["city"]), Some(json!("Oslo")));
        assert_eq!(view_lookup(&v, &["words"]), Some(json!(7)));
        assert_eq!(view_lookup(&v, &["data", "words"]), Some(json!("mine")));
        assert_eq!(view_lookup(&v, &["items", "0", "t"]), Some(json!("x")));
        assert_eq!(view_lookup(&v, &["nope"]), None);
        assert_eq!(view_lookup(&v, &[]), Some(v["text"].clone()));
        let plain = output_view("just text", Map::new());
        assert_eq!(view_lookup(&plain, &["city"]), None);
    }

    proptest::proptest! {
        /// Whatever a command prints, its text is what `$(…)` would give and `stdout` the exact
        /// bytes.
        #[test]
        fn command_view_text_is_command_substitution(body in "[a-z \\n\\r\\t]{0,12}", newlines in 0usize..4) {
            let stdout = format!("{body}{}", "\n".repeat(newlines));
            let v = command_view(&stdout, Map::new());
            let mut expected = stdout.clone();
            while expected.ends_with('\n') {
                expected.pop();
            }
            proptest::prop_assert_eq!(v["text"].as_str(), Some(expected.as_str()));
            proptest::prop_assert_eq!(v["stdout"].as_str(), Some(stdout.as_str()));
            proptest::prop_assert_eq!(v["lines"].as_u64(), Some(expected.lines().count() as u64));
        }
    }

    #[test]
    fn input_view_keeps_the_input_as_data() {
        let v = input_view(&json!({"city": "Oslo"}));
        assert_eq!(v["text"], r#"{"city":"Oslo"}"#);
        assert_eq!(view_lookup(&v, &["city"]), Some(json!("Oslo")));
        let v = input_view(&Value::Null);
        assert_eq!(v["text"], "null");
        assert_eq!(v["data"], Value::Null);
        // A string input is its own text and is not re-parsed.
        let v = input_view(&json!("42"));
        assert_eq!(v["text"], "42");
        assert_eq!(v["data"], json!("42"));
    }
}
