//! Command-line arguments that carry text or JSON: given inline, as `@file`, or `-` (standard
//! input).

use vwf_api::failure::Failure;

/// Reads a command-line argument given as text, `@file` or `-` (standard input).
pub fn read_arg(arg: &str) -> Result<String, Failure> {
    use std::io::Read;
    if arg == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| Failure::BadRequest(format!("cannot read standard input: {e}")))?;
        Ok(s)
    } else if let Some(path) = arg.strip_prefix('@') {
        std::fs::read_to_string(path).map_err(|e| Failure::BadRequest(format!("cannot read {path}: {e}")))
    } else {
        Ok(arg.to_string())
    }
}

/// Parses `text` as JSON; the error names `what` (e.g. `--input is not valid JSON: …`).
pub fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, Failure> {
    vwf_core::json::parse(text).map_err(|e| Failure::BadRequest(e.about(&format!("{what} is"))))
}

/// A JSON command-line argument given as text, `@file` or `-`.
pub fn json_arg(arg: &str, what: &str) -> Result<serde_json::Value, Failure> {
    parse_json(&read_arg(arg)?, what)
}
