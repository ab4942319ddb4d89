//! JSON nesting (SPEC §17, §18): one limit, checked wherever JSON enters, so whatever is persisted
//! can be read back.
//!
//! serde_json refuses to read JSON nested deeper than 128 levels, and a run file wraps its input and
//! outputs a few levels deep; JSON accepted at any depth could be written once and never read again.
//! Every entry (request bodies, CLI and tool arguments, event payloads) refuses values deeper than
//! [`JSON_DEPTH`]; a step output deeper than that stays text (its `data` is `null`).
//!
//! Invariant: [`parse`] never hands serde_json text deeper than the limit, so the error for deep
//! text is always the same clear message, whatever serde's own limit is.

use serde_json::Value;

use crate::limits::JSON_DEPTH;

/// Why JSON text was not accepted.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    #[error("JSON nested deeper than {JSON_DEPTH} levels is not accepted")]
    TooDeep,
    #[error("{0}")]
    Invalid(String),
}

impl JsonError {
    /// The error as a sentence about `subject`, which carries its verb ("the request body is",
    /// "arguments are").
    pub fn about(&self, subject: &str) -> String {
        match self {
            JsonError::TooDeep => format!("{subject} JSON nested deeper than {JSON_DEPTH} levels, which is not accepted"),
            JsonError::Invalid(e) => format!("{subject} not valid JSON: {e}"),
        }
    }
}

/// Parses JSON text no deeper than [`JSON_DEPTH`] (a scalar is depth 0, `[]` depth 1).
pub fn parse(text: &str) -> Result<Value, JsonError> {
    if text_depth(text) > JSON_DEPTH {
        return Err(JsonError::TooDeep);
    }
    serde_json::from_str(text).map_err(|e| JsonError::Invalid(e.to_string()))
}

/// Parses a JSON object of arguments whose every value is no deeper than [`JSON_DEPTH`]: the
/// object is an envelope, so a graph or input at the limit can be passed as one argument. Text
/// that is not an object is held to the limit as a whole (the caller refuses it as not an object).
pub fn parse_arguments(text: &str) -> Result<Value, JsonError> {
    if text_depth(text) > JSON_DEPTH + 1 {
        return Err(JsonError::TooDeep);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| JsonError::Invalid(e.to_string()))?;
    check_arguments(&value).map(|()| value).map_err(|(_, e)| e)
}

/// Holds each value of an arguments object to [`JSON_DEPTH`] (anything else as a whole); the error
/// names the argument that is too deep.
pub fn check_arguments(value: &Value) -> Result<(), (Option<String>, JsonError)> {
    match value {
        Value::Object(args) => match args.iter().find(|(_, v)| depth(v) > JSON_DEPTH) {
            Some((key, _)) => Err((Some(key.clone()), JsonError::TooDeep)),
            None => Ok(()),
        },
        other => check(other).map_err(|e| (None, e)),
    }
}

/// Parses JSON bytes no deeper than [`JSON_DEPTH`].
pub fn parse_slice(bytes: &[u8]) -> Result<Value, JsonError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(text),
        Err(e) => Err(JsonError::Invalid(format!("not UTF-8: {e}"))),
    }
}

/// `Err(TooDeep)` when `value` nests deeper than [`JSON_DEPTH`].
pub fn check(value: &Value) -> Result<(), JsonError> {
    if depth(value) > JSON_DEPTH { Err(JsonError::TooDeep) } else { Ok(()) }
}

/// How deep a value nests (a scalar is 0), without recursion.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                deepest = deepest.max(d + 1);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(d + 1);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// The deepest bracket nesting of JSON-like text, strings skipped; a cheap scan of the bytes that
/// needs no valid JSON.
fn text_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nested(levels: usize) -> String {
        let mut s = String::new();
        for i in 0..levels {
            s.push_str(if i % 2 == 0 { "[" } else { "{\"k\":" });
        }
        s.push('1');
        for i in (0..levels).rev() {
            s.push(if i % 2 == 0 { ']' } else { '}' });
        }
        s
    }

    #[test]
    fn the_limit_is_inclusive_and_deeper_is_refused_whatever_serde_would_do() {
        for levels in [0, 1, 2, JSON_DEPTH - 1, JSON_DEPTH] {
            let v = parse(&nested(levels)).unwrap();
            assert_eq!(depth(&v), levels);
            assert_eq!(check(&v), Ok(()));
        }
        for levels in [JSON_DEPTH + 1, 126, 127, 128, 129, 10_000] {
            assert_eq!(parse(&nested(levels)), Err(JsonError::TooDeep), "{levels}");
        }
        // Arguments are an envelope: each value may reach the limit, none may pass it.
        let at_limit = format!("{{\"graph\": {}, \"name\": \"d\"}}", nested(JSON_DEPTH));
        assert_eq!(depth(&parse_arguments(&at_limit).unwrap()["graph"]), JSON_DEPTH);
        assert_eq!(parse(&at_limit), Err(JsonError::TooDeep));
        for text in [format!("{{\"graph\": {}}}", nested(JSON_DEPTH + 1)), nested(JSON_DEPTH + 1), nested(10_000)] {
            assert_eq!(parse_arguments(&text), Err(JsonError::TooDeep));
        }
        assert_eq!(check_arguments(&parse_arguments(&at_limit).unwrap()), Ok(()));
        // Brackets inside strings do not count.
        let text = format!("[\"{}\\\"[[\"]", "[".repeat(500));
        assert_eq!(depth(&parse(&text).unwrap()), 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The text scan and the value's depth agree on every value serde accepts.
        #[test]
        fn scan_and_value_depth_agree(levels in 0usize..100, text in "\\PC{0,40}") {
            let doc = nested(levels).replacen('1', &serde_json::to_string(&text).unwrap(), 1);
            match parse(&doc) {
                Ok(v) => prop_assert_eq!(depth(&v), levels),
                Err(e) => {
                    prop_assert!(levels > JSON_DEPTH);
                    prop_assert_eq!(e, JsonError::TooDeep);
                }
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in "[\\[\\]{}\"\\\\a:,0-9 ]{0,200}") {
            let _ = parse(&text);
        }
    }
}
