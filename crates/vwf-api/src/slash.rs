//! The `/workflow` chat command (SPEC §12): one handler that turns the text of a message into a
//! reply. It never fails a turn: every problem becomes a line of the reply. It calls the same
//! tools and runner as every other surface.

use serde_json::Value;
use vwf_core::names::{DesignName, RunId, StepPath};
use vwf_core::run::Response;

use crate::failure::{Failure, guarded};
use crate::render;
use crate::service::{Draft, SaveMode, Service, Start, check_argument};
use vwf_runtime::app::App;
use vwf_runtime::runner::Answer;

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
    guarded("/workflow", || Ok(dispatch(&Service::new(app), text)))
        .unwrap_or_else(|_| "Sorry: /workflow hit an internal error. Nothing was changed by the failed part.".into())
}

fn dispatch(service: &Service<'_>, text: &str) -> String {
    let text = text.trim();
    let rest = text.strip_prefix("/workflow").unwrap_or(text).trim_start();
    let (cmd, rest) = split_word(rest);
    match cmd {
        "" | "help" => HELP.to_string(),
        "list" => match service.designs() {
            Ok(names) if names.is_empty() => "No saved designs yet. Start one with /workflow new <name>.".into(),
            Ok(names) => format!("Saved designs:\n{}", names.iter().map(|n| format!("  {n}")).collect::<Vec<_>>().join("\n")),
            Err(e) => format!("Could not list designs: {e}"),
        },
        "new" => {
            let (name, _) = split_word(rest);
            match service.create(name, None) {
                Ok(created) => format!(
                    "Created blank design {name} at {}.\nAdd nodes and edges, then /workflow save {name} <json> and /workflow validate {name}.",
                    created.path
                ),
                Err(e) => format!("Could not create {name:?}: {e}"),
            }
        }
        "open" => {
            let (name, _) = split_word(rest);
            match design_name(name).and_then(|n| service.load(&n)) {
                Ok(g) => format!(
                    "Design {name}:\n{}\nEdit it and save with /workflow save {name} <json>.",
                    serde_json::to_string_pretty(&g).unwrap_or_default()
                ),
                Err(f) => error_line(&f),
            }
        }
        "save" => {
            let (name, json_text) = split_word(rest);
            if json_text.trim().is_empty() {
                return format!("Usage: /workflow save {name} <json>");
            }
            match design_name(name).and_then(|n| service.save(&n, &Value::String(json_text.to_string()), SaveMode::Replace)) {
                Ok(saved) => format!("Saved {name} ({} nodes) to {}.", saved.nodes, saved.path),
                Err(f) => error_line(&f),
            }
        }
        "validate" => {
            let (name, _) = split_word(rest);
            match design_name(name).and_then(|n| service.validate(&Draft::Saved(n))) {
                Ok(report) => render::report(name, &serde_json::to_value(report).unwrap_or_default()),
                Err(f) => error_line(&f),
            }
        }
        "run" => {
            let (name, rest) = split_word(rest);
            let (maybe_id, _) = split_word(rest);
            if name == "retry" && maybe_id.is_empty() {
                return "Retry needs the id of the failed run: /workflow run retry <run_id>".to_string();
            }
            if name == "retry" {
                return match run_id(maybe_id).and_then(|id| service.retry(&id)) {
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
            // The input is an argument like the tools' (held to the nesting limit as a whole).
            let started = check_argument("input", &input).and_then(|()| service.run(&design_name(name)?, Start::with_input(input)));
            match started {
                Ok(run) => render::run_summary(&run.result(), render::Reader::Chat),
                Err(f) => error_line(&f),
            }
        }
        "approve" => {
            let (id, rest) = split_word(rest);
            let (gate, answer) = split_word(rest);
            if answer.trim().is_empty() {
                return "Usage: /workflow approve <run> <gate> <answer>".into();
            }
            let answer = Answer::Respond(Response::Answer(answer.trim().into()));
            let path = StepPath::parse(gate.trim()).map_err(Failure::BadRequest);
            match run_id(id).and_then(|run| service.respond(&run, &path?, answer)) {
                Ok(run) => render::run_summary(&run.result(), render::Reader::Chat),
                Err(e) => format!("Could not answer {gate} of run {id}: {e}"),
            }
        }
        other => format!("Unknown /workflow command {other:?}.\n\n{HELP}"),
    }
}

fn design_name(name: &str) -> Result<DesignName, Failure> {
    DesignName::parse(name).map_err(Failure::BadRequest)
}

fn run_id(id: &str) -> Result<RunId, Failure> {
    RunId::parse(id).map_err(Failure::BadRequest)
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// A failure as the chat shows it; a design's refusal lists its errors.
fn error_line(f: &Failure) -> String {
    match f {
        Failure::Refused(_) => refused(&f.body()),
        _ => format!("Error: {f}"),
    }
}

/// A design's refusal: its summary, then each error.
fn refused(body: &Value) -> String {
    let mut out = format!("Error: {}", body.get("error").and_then(Value::as_str).unwrap_or("unknown error"));
    for e in body.get("errors").and_then(Value::as_array).into_iter().flatten() {
        out.push_str(&format!("\n  - {}", e["message"].as_str().unwrap_or("")));
    }
    out
}
