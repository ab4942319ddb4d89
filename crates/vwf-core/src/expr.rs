//! Condition expressions (SPEC §5): `out.<node>.<path> <op> <literal>`.
//!
//! One parser serves the validator (design-time errors) and the engine (evaluation), so a
//! condition that validates is exactly a condition that runs. Invariants: a parsed [`Expr`]
//! never pairs an ordering operator with a non-number literal, number literals are finite, and
//! evaluation never answers a silent `false` for a missing value or an incomparable one: those
//! are errors.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    /// The operator as written in a condition.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    fn from_token(token: &str) -> Option<Op> {
        Some(match token {
            "==" => Op::Eq,
            "!=" => Op::Ne,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            _ => return None,
        })
    }

    fn is_ordering(self) -> bool {
        matches!(self, Op::Gt | Op::Ge | Op::Lt | Op::Le)
    }

    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Op::Eq => ordering == Ordering::Equal,
            Op::Ne => ordering != Ordering::Equal,
            Op::Gt => ordering == Ordering::Greater,
            Op::Ge => ordering != Ordering::Less,
            Op::Lt => ordering == Ordering::Less,
            Op::Le => ordering != Ordering::Greater,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The right-hand side of a condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// Always finite.
    Number(f64),
    Text(String),
    Bool(bool),
    Null,
}

impl fmt::Display for Literal {
    /// Canonical form: numbers in shortest round-trip form, text double-quoted with escapes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Number(n) => write!(f, "{n}"),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Null => f.write_str("null"),
            Literal::Text(s) => {
                f.write_str("\"")?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("\"")
            }
        }
    }
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// The text after `out.` up to the operator, e.g. `a.b.words`; resolved by longest id prefix.
    pub reference: String,
    pub op: Op,
    pub literal: Literal,
}

/// A condition that does not parse or cannot be evaluated; the message is for the user.
#[derive(thiserror::Error, Debug, Clone, PartialEq)]
#[error("{0}")]
pub struct ExprError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ExprError> {
    Err(ExprError(msg.into()))
}

const OPERATOR_CHARS: [char; 4] = ['=', '!', '<', '>'];
const OPERATORS_HINT: &str = "use ==, !=, >, >=, < or <=";

/// Parses a condition expression.
pub fn parse(src: &str) -> Result<Expr, ExprError> {
    let src = src.trim();
    let Some(after) = src.strip_prefix("out.") else {
        return err(format!("condition must start with \"out.\" followed by a node id, e.g. out.check.words > 20 (got \"{src}\")"));
    };
    if after.split(|c: char| c.is_whitespace() || OPERATOR_CHARS.contains(&c)).next().is_none_or(str::is_empty) {
        return err("missing node after \"out.\": write out.<node> or out.<node>.<path>");
    }
    parse_after("out", after, false)
}

/// Parses a match of a `wait_event` step (SPEC §3): `event.payload.<path> <op> <value>`, the
/// grammar of a condition rooted at `event`. Where `lenient`, a value that is not a literal (what
/// a template such as `{{trigger.branch}}` rendered to) is taken as text.
pub fn parse_event_match(src: &str, lenient: bool) -> Result<Expr, ExprError> {
    let src = src.trim();
    let Some(after) = src.strip_prefix("event.") else {
        return err(format!("a match must start with \"event.payload\", e.g. event.payload.pr == 42 (got \"{src}\")"));
    };
    let path = after.split(|c: char| c.is_whitespace() || OPERATOR_CHARS.contains(&c)).next().unwrap_or_default();
    if path != "payload" && !path.starts_with("payload.") {
        return err(format!("a match looks into the event's payload: write event.payload or event.payload.<path> (got \"event.{path}\")"));
    }
    parse_after("event", after, lenient)
}

/// The rest of a condition after `<root>.`: its reference, operator and literal.
fn parse_after(root: &str, after: &str, lenient: bool) -> Result<Expr, ExprError> {
    let (reference, rest) = split_run(after, |c| !c.is_whitespace() && !OPERATOR_CHARS.contains(&c));
    if reference.split('.').any(str::is_empty) {
        return err(format!("bad reference \"{root}.{reference}\": empty path segment"));
    }

    let rest = rest.trim_start();
    let (op_token, rest) = split_run(rest, |c| OPERATOR_CHARS.contains(&c));
    if op_token.is_empty() {
        return match rest.split_whitespace().next() {
            None => err(format!("missing operator after \"{root}.{reference}\": {OPERATORS_HINT}")),
            Some(word) => err(format!("expected an operator after \"{root}.{reference}\", found \"{word}\": {OPERATORS_HINT}")),
        };
    }
    let Some(op) = Op::from_token(op_token) else {
        return err(format!("unknown operator \"{op_token}\": {OPERATORS_HINT}"));
    };

    let rest = rest.trim_start();
    let literal = match parse_literal(rest, op) {
        Ok((literal, trailing)) if trailing.trim().is_empty() => literal,
        _ if lenient && !rest.trim().is_empty() => Literal::Text(rest.trim().to_string()),
        Ok((_, trailing)) => return err(format!("unexpected \"{}\" after the literal", trailing.trim())),
        Err(e) => return Err(e),
    };
    if op.is_ordering() && !matches!(literal, Literal::Number(_)) {
        return err(format!("ordering needs a number literal: \"{op}\" cannot compare with {literal}"));
    }
    Ok(Expr { reference: reference.to_string(), op, literal })
}

/// Splits `s` after the longest prefix whose chars all satisfy `keep`.
fn split_run(s: &str, keep: impl Fn(char) -> bool) -> (&str, &str) {
    let end = s.char_indices().find(|&(_, c)| !keep(c)).map_or(s.len(), |(i, _)| i);
    s.split_at(end)
}

fn parse_literal(s: &str, op: Op) -> Result<(Literal, &str), ExprError> {
    let mut chars = s.char_indices();
    let Some((_, first)) = chars.next() else {
        return err(format!("missing literal after \"{op}\": expected a number, a quoted string, true, false or null"));
    };
    if first == '"' || first == '\'' {
        let mut text = String::new();
        let mut escaped = false;
        for (i, c) in chars {
            if escaped {
                text.push(match c {
                    'n' => '\n',
                    't' => '\t',
                    other => other,
                });
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == first {
                return Ok((Literal::Text(text), &s[i + c.len_utf8()..]));
            } else {
                text.push(c);
            }
        }
        return err("unterminated string literal: close it with the same quote it opened with");
    }

    let (token, rest) = split_run(s, |c| !c.is_whitespace());
    let literal = match token {
        "true" => Literal::Bool(true),
        "false" => Literal::Bool(false),
        "null" => Literal::Null,
        _ if is_number_syntax(token) => match token.parse::<f64>() {
            Ok(n) if n.is_finite() => Literal::Number(n),
            _ => return err(format!("number literal \"{token}\" is out of range")),
        },
        _ => {
            return err(format!("bad literal \"{token}\": expected a number, a quoted string, true, false or null"));
        }
    };
    Ok((literal, rest))
}

/// JSON-like number syntax: `-?digits(.digits)?([eE][+-]?digits)?` (leading zeros allowed).
fn is_number_syntax(token: &str) -> bool {
    fn digits(b: &[u8], mut i: usize) -> (usize, bool) {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i, i > start)
    }
    let b = token.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let (next, any) = digits(b, i);
    if !any {
        return false;
    }
    i = next;
    if b.get(i) == Some(&b'.') {
        let (next, any) = digits(b, i + 1);
        if !any {
            return false;
        }
        i = next;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let (next, any) = digits(b, i);
        if !any {
            return false;
        }
        i = next;
    }
    i == b.len()
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

impl Expr {
    /// The expression written with `root` in place of `out` (an event match's canonical form,
    /// which [`parse_event_match`] reads back to the same `Expr`).
    pub fn text_in(&self, root: &str) -> String {
        format!("{root}.{} {} {}", self.reference, self.op, self.literal)
    }

    /// Evaluates the condition against the value found at `out.<reference>` (`None` when the
    /// path has no value, which is an error).
    pub fn evaluate(&self, left: Option<&Value>) -> Result<bool, ExprError> {
        let Some(left) = left else {
            return err(format!("out.{} has no value", self.reference));
        };
        if self.op.is_ordering() && !matches!(self.literal, Literal::Number(_)) {
            return err(format!("ordering needs a number literal: \"{}\" cannot compare with {}", self.op, self.literal));
        }
        match &self.literal {
            Literal::Number(right) => {
                let number = match left {
                    Value::Number(n) => n.as_f64(),
                    Value::String(s) => s.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
                    _ => None,
                };
                let Some(ordering) = number.and_then(|n| n.partial_cmp(right)) else {
                    return err(format!("cannot compare {} with number {right}", compact(left)));
                };
                Ok(self.op.holds(ordering))
            }
            Literal::Text(right) => {
                let text = match left {
                    Value::String(s) => s.clone(),
                    other => compact(other),
                };
                Ok(self.op.holds(text.as_str().cmp(right.as_str())))
            }
            Literal::Bool(right) => match left {
                Value::Bool(b) => Ok(self.op.holds(if b == right { Ordering::Equal } else { Ordering::Less })),
                other => err(format!("cannot compare {} with {right}: expected true or false", compact(other))),
            },
            Literal::Null => {
                let ordering = if left.is_null() { Ordering::Equal } else { Ordering::Less };
                Ok(self.op.holds(ordering))
            }
        }
    }
}

impl fmt::Display for Expr {
    /// Canonical form `out.<reference> <op> <literal>`, which parses back to the same `Expr`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "out.{} {} {}", self.reference, self.op, self.literal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refs;
    use crate::view::{output_view, view_lookup};
    use proptest::prelude::*;
    use serde_json::{Map, json};

    fn eval(src: &str, left: Value) -> Result<bool, ExprError> {
        parse(src)?.evaluate(Some(&left))
    }

    fn message(src: &str) -> String {
        match parse(src) {
            Ok(e) => panic!("expected an error for {src:?}, parsed {e:?}"),
            Err(ExprError(m)) => m,
        }
    }

    #[test]
    fn parses_reference_operator_and_literal() {
        let e = parse("  out.a.b.words>=20 ").unwrap();
        assert_eq!(e, Expr { reference: "a.b.words".into(), op: Op::Ge, literal: Literal::Number(20.0) });
        assert_eq!(parse("out.x == 'it\\'s'").unwrap().literal, Literal::Text("it's".into()));
        assert_eq!(parse("out.x==true").unwrap().literal, Literal::Bool(true));
        assert_eq!(parse("out.x == null").unwrap().literal, Literal::Null);
        assert_eq!(parse("out.x < -1.5e3").unwrap().literal, Literal::Number(-1500.0));
        assert_eq!(parse("out.x <-1").unwrap().op, Op::Lt);
    }

    #[test]
    fn escapes_in_quoted_literals() {
        assert_eq!(parse(r#"out.x == "a\"b\\c\nd\te\q""#).unwrap().literal, Literal::Text("a\"b\\c\nd\teq".into()));
        assert_eq!(parse(r#"out.x == 'say "hi"'"#).unwrap().literal, Literal::Text("say \"hi\"".into()));
    }

    #[test]
    fn longest_prefix_resolution_of_dotted_ids_in_conditions() {
        let e = parse("out.a.b.words > 1").unwrap();
        let ids = ["a", "a.b"];
        let (id, path) = refs::resolve_longest(ids, &e.reference).unwrap();
        assert_eq!((id, path), ("a.b", "words"));
        let view = output_view("two words", Map::new());
        let left = view_lookup(&view, &refs::split_path(path));
        assert_eq!(e.evaluate(left.as_ref()), Ok(true));

        let e = parse("out.a.c == 'x'").unwrap();
        assert_eq!(refs::resolve_longest(ids, &e.reference), Some(("a", "c")));
    }

    #[test]
    fn numeric_text_is_coerced() {
        assert_eq!(eval("out.a > 20", json!(" 42 ")), Ok(true));
        assert_eq!(eval("out.a > 20", json!(42)), Ok(true));
        assert_eq!(eval("out.a <= 20", json!(20.0)), Ok(true));
        assert_eq!(eval("out.a == 7", json!("007")), Ok(true));
        assert_eq!(eval("out.a > 20", json!("abc")), Err(ExprError("cannot compare \"abc\" with number 20".into())));
        assert!(eval("out.a > 20", json!(true)).is_err());
        assert!(eval("out.a == 20", json!(null)).is_err());
        assert!(eval("out.a == 20", json!("inf")).is_err());
        assert!(eval("out.a != 20", json!([20])).is_err());
    }

    #[test]
    fn quoted_literal_stays_textual() {
        assert_eq!(eval("out.a == '5'", json!("5")), Ok(true));
        assert_eq!(eval("out.a == '5'", json!(5)), Ok(true));
        assert_eq!(eval("out.a == '5'", json!(" 5")), Ok(false));
        assert_eq!(eval("out.a == '7'", json!("007")), Ok(false));
        assert_eq!(eval("out.a != \"7\"", json!("007")), Ok(true));
        assert_eq!(eval("out.a == '{\"k\":1}'", json!({"k": 1})), Ok(true));
        assert_eq!(eval("out.a == 'true'", json!(true)), Ok(true));
    }

    #[test]
    fn ordering_with_a_quoted_literal_is_rejected_at_parse() {
        for src in ["out.a > '5'", "out.a >= \"5\"", "out.a < true", "out.a <= null"] {
            assert!(message(src).starts_with("ordering needs a number literal"), "{src}");
        }
    }

    #[test]
    fn bool_and_null_compare_with_their_kind() {
        assert_eq!(eval("out.a == true", json!(true)), Ok(true));
        assert_eq!(eval("out.a != true", json!(false)), Ok(true));
        assert!(eval("out.a == true", json!("true")).is_err());
        assert_eq!(eval("out.a == null", json!(null)), Ok(true));
        assert_eq!(eval("out.a == null", json!("")), Ok(false));
        assert_eq!(eval("out.a != null", json!(0)), Ok(true));
    }

    #[test]
    fn missing_value_is_an_error_not_false() {
        let e = parse("out.a.b == 1").unwrap();
        assert_eq!(e.evaluate(None), Err(ExprError("out.a.b has no value".into())));
    }

    #[test]
    fn parse_errors_name_the_problem() {
        assert!(message("x.y > 1").contains("must start with \"out.\""));
        assert!(message("").contains("must start with \"out.\""));
        assert!(message("out. > 1").contains("missing node"));
        assert!(message("out.a..b > 1").contains("empty path segment"));
        assert_eq!(message("out.a >> 1"), "unknown operator \">>\": use ==, !=, >, >=, < or <=");
        assert!(message("out.a = 1").contains("unknown operator \"=\""));
        assert!(message("out.a => 1").contains("unknown operator \"=>\""));
        assert!(message("out.a <> 1").contains("unknown operator \"<>\""));
        assert!(message("out.a").contains("missing operator"));
        assert!(message("out.a is 1").contains("found \"is\""));
        assert_eq!(message("out.a > abc"), "bad literal \"abc\": expected a number, a quoted string, true, false or null");
        assert!(message("out.a == ").contains("missing literal"));
        assert!(message("out.a == 'abc").starts_with("unterminated string literal"));
        assert!(message("out.a == \"abc\\\"").starts_with("unterminated string literal"));
        assert!(message("out.a == 1 2").contains("unexpected \"2\""));
        assert!(message("out.a == 'x' y").contains("unexpected \"y\""));
        assert!(message("out.a > 1e999").contains("out of range"));
        for bad in ["1.", ".5", "+1", "1e", "0x10", "NaN", "inf", "--1"] {
            assert!(message(&format!("out.a > {bad}")).starts_with("bad literal"), "{bad}");
        }
    }

    #[test]
    fn display_is_canonical() {
        let e = parse("out.a.b>=  -2.50").unwrap();
        assert_eq!(e.to_string(), "out.a.b >= -2.5");
        let e = parse("out.x == 'it\\'s \"q\"\\n'").unwrap();
        assert_eq!(e.to_string(), "out.x == \"it's \\\"q\\\"\\n\"");
        assert_eq!(parse(&e.to_string()), Ok(e));
    }

    fn fragments() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "out.", "out", ".", "..", "a", "a.b", "==", "!=", ">", ">=", "<", "<=", "=", "!", "<>", "=>", "'", "\"", "\\", "\\'", " ",
            "\t", "\n", "0", "7", "-", "1e", "e", "+", "1.5", "true", "false", "null", "é", "✓", "{{", "}}",
        ]);
        prop::collection::vec(pieces, 0..16).prop_map(|v| v.concat())
    }

    fn left_values() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            any::<bool>().prop_map(|b| Some(json!(b))),
            any::<f64>().prop_map(|n| Some(json!(n))),
            any::<i64>().prop_map(|n| Some(json!(n))),
            "\\PC*".prop_map(|s| Some(json!(s))),
            Just(Some(json!([1, "x"]))),
            Just(Some(json!({"k": "v"}))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn arbitrary_text_never_panics(src in "\\PC*", left in left_values()) {
            if let Ok(e) = parse(&src) {
                let _ = e.evaluate(left.as_ref());
            }
        }

        #[test]
        fn fragment_soup_never_panics_and_round_trips(src in fragments(), left in left_values()) {
            if let Ok(e) = parse(&src) {
                let _ = e.evaluate(left.as_ref());
                prop_assert_eq!(parse(&e.to_string()), Ok(e));
            }
        }
    }
}
