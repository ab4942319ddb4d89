//! Condition expressions: `<expr>` [NUL `<left value as JSON>`]. Parsing and evaluating never
//! panic, and a parsed expression prints back to text that parses to the same expression.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vwf_core::{expr, json};

fuzz_target!(|data: &[u8]| {
    let [src, left] = vwf_fuzz::sections::<2>(data);
    let Ok(src) = std::str::from_utf8(src) else { return };
    let left = std::str::from_utf8(left).ok().and_then(|t| json::parse(t).ok());
    if let Ok(e) = expr::parse(src) {
        let _ = e.evaluate(left.as_ref());
        let _ = e.evaluate(None);
        let printed = e.to_string();
        assert_eq!(expr::parse(&printed), Ok(e), "{printed:?} does not read back");
    }
});
