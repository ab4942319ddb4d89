//! The `/workflow` chat command (SPEC §12): one handler that turns the text of a message into a
//! reply. It never fails a turn: every problem becomes a line of the reply. It calls the same
//! tools and runner as every other surface.

use serde_json::{Value, json};

use crate::app::{App, quiet};
use crate::render;
use crate::runner::Answer;
use crate::tools::{self, call};
use vwf_core::run::Response;

pub const HELP: &str = "\
/workflow — design and run workflows
  /workflow list                          saved designs
  /workflow new <name>                    start a blank design
  /workflow open <name>                   show a saved design
  /workflow save <name> <json>            validate and save a design
  /workflow validate <name>               check a saved design
  /workflow run <name> [input json]       run a design now
  /workflow run retry <run_id>            retry a failed run from its failed step
  /workflow approve <run> <gate> <answer> answer an approval gate";

/// Handles one `/workflow …` message.
pub fn handle(app: &App, text: &str) -> String {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(app, text)));
    outcome.unwrap_or_else(|_| "Sorry: /workflow hit an internal error. Nothing was changed by the failed part.".into())
}

fn dispatch(app: &App, text: &str) -> String {
    let text = text.trim();
    let rest = text.strip_prefix("/workflow").unwrap_or(text).trim_start();
    let (cmd, rest) = split_word(rest);
    match cmd {
        "" | "help" => HELP.to_string(),
        "list" => match app.store.list_designs() {
            Ok(names) if names.is_empty() => "No saved designs yet. Start one with /workflow new <name>.".into(),
            Ok(names) => format!("Saved designs:\n{}", names.iter().map(|n| format!("  {n}")).collect::<Vec<_>>().join("\n")),
            Err(e) => format!("Could not list designs: {e}"),
        },
        "new" => {
            let (name, _) = split_word(rest);
            match tools::new_design(app, name, None) {
                Ok((path, _)) => format!(
                    "Created blank design {name} at {path}.\nAdd nodes and edges, then /workflow save {name} <json> and /workflow validate {name}."
                ),
                Err(e) => format!("Could not create {name:?}: {e}"),
            }
        }
        "open" => {
            let (name, _) = split_word(rest);
            let reply = call(app, "workflow_design_load", &json!({"name": name}));
            match reply.body.get("graph") {
                Some(g) => format!(
                    "Design {name}:\n{}\nEdit it and save with /workflow save {name} <json>.",
                    serde_json::to_string_pretty(g).unwrap_or_default()
                ),
                None => error_line(&reply.body),
            }
        }
        "save" => {
            let (name, json_text) = split_word(rest);
            if json_text.trim().is_empty() {
                return format!("Usage: /workflow save {name} <json>");
            }
            let reply = call(app, "workflow_design_save", &json!({"name": name, "graph": json_text}));
            if reply.body["ok"] == true {
                format!("Saved {name} ({} nodes) to {}.", reply.body["nodes"], reply.body["path"].as_str().unwrap_or(""))
            } else {
                let mut out = error_line(&reply.body);
                for e in reply.body.get("errors").and_then(Value::as_array).into_iter().flatten() {
                    out.push_str(&format!("\n  - {}", e["message"].as_str().unwrap_or("")));
                }
                out
            }
        }
        "validate" => {
            let (name, _) = split_word(rest);
            let reply = call(app, "workflow_design_validate", &json!({"name": name}));
            if reply.status == 200 { render::report(name, &reply.body) } else { error_line(&reply.body) }
        }
        "run" => {
            let (name, rest) = split_word(rest);
            let (maybe_id, _) = split_word(rest);
            if name == "retry" && maybe_id.is_empty() {
                return "Retry needs the id of the failed run: /workflow run retry <run_id>".to_string();
            }
            if name == "retry" {
                return match app.runner(&quiet, false).retry(maybe_id) {
                    Ok(run) => render::run_summary(&run.result(), render::Reader::Chat),
                    Err(e) => format!("Could not retry {maybe_id}: {e}"),
                };
            }
            let input = if rest.trim().is_empty() {
                Value::Null
            } else {
                match vwf_core::json::parse(rest.trim()) {
                    Ok(v) => v,
                    Err(e) => return format!("The input after the design name must be JSON: {e}"),
                }
            };
            let reply = call(app, "workflow_design_run", &json!({"name": name, "input": input}));
            if reply.body.get("run_id").is_some() { render::run_summary(&reply.body, render::Reader::Chat) } else { refusal(&reply.body) }
        }
        "approve" => {
            let (run_id, rest) = split_word(rest);
            let (gate, answer) = split_word(rest);
            if answer.trim().is_empty() {
                return "Usage: /workflow approve <run> <gate> <answer>".into();
            }
            match app.runner(&quiet, false).respond(run_id, gate, Answer::Respond(Response::Answer(answer.trim().to_string()))) {
                Ok(run) => render::run_summary(&run.result(), render::Reader::Chat),
                Err(e) => format!("Could not answer {gate} of run {run_id}: {e}"),
            }
        }
        other => format!("Unknown /workflow command {other:?}.\n\n{HELP}"),
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

fn error_line(body: &Value) -> String {
    format!("Error: {}", body.get("error").and_then(Value::as_str).unwrap_or("unknown error"))
}

fn refusal(body: &Value) -> String {
    let mut out = error_line(body);
    for e in body.get("errors").and_then(Value::as_array).into_iter().flatten() {
        out.push_str(&format!("\n  - {}", e["message"].as_str().unwrap_or("")));
    }
    out
}
