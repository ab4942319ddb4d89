//! Templates and their shell rendering: `<run string>` [NUL `<tape>`].
//!
//! A `run` string that parses and compiles is a script whose text is fixed by the design: it is
//! the same whatever the values, and values reach it only through `Script::values` as environment
//! variables. Checked here:
//! - compiling is deterministic and binding two different hostile value sets gives the same
//!   variables, each carrying exactly the text of its reference, byte for byte;
//! - the script reads a value variable only as `${VWF_VALUE_n}` (which the compiler wraps in the
//!   quoting of its context: `"${…}"`, `${…}` inside `"…"`, `'"${…}"'` inside `'…'`), the n-th
//!   such reference being the n-th hole: any other mention of a value variable is code the
//!   design did not write that could read a value where it would run.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use vwf_core::shell::{self, VALUE_VAR_PREFIX};
use vwf_core::template::{self, Context};
use vwf_fuzz::{Tape, hostile_text, sections};

fuzz_target!(|data: &[u8]| {
    let [src, tape] = sections::<2>(data);
    let Ok(src) = std::str::from_utf8(src) else { return };
    let _ = template::render_str(src, &context(&ValueSet::new(&mut Tape::new(tape))));
    let Ok(parsed) = template::parse(src) else { return };
    let Ok(script) = shell::compile(&parsed) else { return };
    assert_eq!(shell::compile(&parsed).as_ref(), Ok(&script), "compiling is not deterministic");
    check_value_references(&script);

    let mut tape = Tape::new(tape);
    let a = ValueSet::new(&mut tape);
    let b = ValueSet::new(&mut tape);
    let (ctx_a, ctx_b) = (context(&a), context(&b));
    if let (Ok(env_a), Ok(env_b)) = (script.bind(&ctx_a), script.bind(&ctx_b)) {
        let names = |env: &[(String, String)]| env.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        assert_eq!(names(&env_a), names(&env_b));
        for ((var, value), (_, r)) in env_a.iter().zip(&script.values) {
            assert_eq!(Some(value), template::ref_text(r, &ctx_a).ok().as_ref(), "{var} does not carry its value");
        }
    }
});

/// Every mention of a value variable is `${VWF_VALUE_n}`, numbered 1, 2, … in order, one per hole.
fn check_value_references(script: &shell::Script) {
    let text = &script.text;
    let mut expected = 1;
    for (at, _) in text.match_indices(VALUE_VAR_PREFIX) {
        let digits: String = text[at + VALUE_VAR_PREFIX.len()..].chars().take_while(char::is_ascii_digit).collect();
        let spelled = format!("${{{VALUE_VAR_PREFIX}{digits}}}");
        assert!(
            text[..at].ends_with("${") && text[at - 2..].starts_with(&spelled),
            "value variable mentioned outside its spelling at byte {at}: {text:?}"
        );
        assert_eq!(digits, expected.to_string(), "value variables out of order: {text:?}");
        expected += 1;
    }
    assert_eq!(expected - 1, script.values.len(), "holes and value references differ: {text:?}");
}

/// One set of values for everything a template can read.
struct ValueSet {
    text: String,
    trigger: Value,
    item: Value,
    views: BTreeMap<String, Value>,
    ids: Vec<String>,
}

impl ValueSet {
    fn new(tape: &mut Tape<'_>) -> ValueSet {
        let mut h = || Value::String(hostile_text(tape));
        let trigger = json!({"x": h(), "n": h(), "items": [h(), {"title": h()}], "k": {"v": h()}});
        let item = json!({"x": h(), "title": h()});
        let views = BTreeMap::from([("a".to_string(), json!({"text": h(), "b": {"words": h()}})), ("check".to_string(), h())]);
        ValueSet { text: hostile_text(tape), trigger, item, views, ids: vec!["start".into(), "a".into(), "check".into()] }
    }
}

/// A context that reads `v`.
fn context(v: &ValueSet) -> Context<'_> {
    Context {
        ids: &v.ids,
        views: &v.views,
        local_views: None,
        trigger_id: Some("start"),
        trigger: &v.trigger,
        item: Some(&v.item),
        loop_index: Some(3),
        run_id: &v.text,
        design: "fuzz",
    }
}
