//! Human text for the CLI and the chat command: tables, run summaries and validation reports.
//! Reads only contract JSON (run results, reports), so what a person reads matches what a
//! program reads with `--json`.

use serde_json::Value;
use vwf_core::time;

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Seconds between two contract timestamps, shown as `0.42s` / `3m05s`.
pub fn elapsed(from: &str, to: &str) -> String {
    match (time::parse(from), time::parse(to)) {
        (Some(a), Some(b)) => {
            let ms = (b - a).num_milliseconds().max(0);
            if ms < 60_000 { format!("{:.2}s", ms as f64 / 1000.0) } else { format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60) }
        }
        _ => String::new(),
    }
}

/// One step line: a mark, the node, its state and how long it took.
pub fn step_line(step: &Value) -> String {
    let status = s(step, "status");
    let mark = match status {
        "done" => "✓",
        "failed" => "✗",
        "running" | "retrying" => "…",
        _ => "⏸",
    };
    let took = match step.get("finished_at").and_then(Value::as_str) {
        Some(f) => elapsed(s(step, "started_at"), f),
        None => String::new(),
    };
    let attempts = step.get("attempts").and_then(Value::as_u64).unwrap_or(1);
    let mut tries = if attempts > 1 { format!(" ({attempts} attempts)") } else { String::new() };
    if step.get("pinned") == Some(&Value::Bool(true)) {
        tries.push_str(" (pinned output)");
    }
    let mut line = format!("  {mark} {:<24} {:<18} {took}{tries}", s(step, "node"), status.replace('_', " "));
    if let Some(e) = step.get("error").and_then(Value::as_str) {
        line.push_str(&format!("\n      {e}"));
    }
    // Earlier attempts (retries, run retries): how each one ended and how long the run waited
    // after it. A step waiting before its next attempt shows every attempt so far.
    let all = step.get("tries").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let earlier = if status == "waiting" && all.last().is_some_and(|t| t.get("delay_ms").is_some()) {
        all
    } else {
        &all[..all.len().saturating_sub(1)]
    };
    for t in earlier {
        let took =
            t.get("finished_at").and_then(Value::as_str).map(|f| format!(" after {}", elapsed(s(t, "started_at"), f))).unwrap_or_default();
        let error = t.get("error").and_then(Value::as_str).map(|e| format!(": {e}")).unwrap_or_default();
        let n = t.get("attempt").and_then(Value::as_u64).unwrap_or(0);
        let wait = t.get("delay_ms").and_then(Value::as_u64).map(|ms| format!("; next attempt {} later", millis(ms))).unwrap_or_default();
        line.push_str(&format!(
            "\n      attempt {n} {}{took} (started {}){error}{wait}",
            s(t, "status").replace('_', " "),
            s(t, "started_at")
        ));
    }
    line.trim_end().to_string()
}

/// A wait in milliseconds as people say it: `2s`, `1.5s`, `4m 10s`.
fn millis(ms: u64) -> String {
    match ms {
        ms if ms < 60_000 && ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms if ms < 60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        ms => format!("{}m {}s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// The summary printed when a run stops: steps, then what it waits for or why it failed.
/// Who reads a summary: its hints name the commands that reader can type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    Cli,
    Chat,
}

pub fn run_summary(run: &Value, reader: Reader) -> String {
    summary(run, true, reader)
}

/// The summary; `with_steps: false` leaves out the step lines (shown live already).
pub fn summary(run: &Value, with_steps: bool, reader: Reader) -> String {
    let (approve, retry) = match reader {
        Reader::Cli => ("vwf approve", "vwf run retry"),
        Reader::Chat => ("/workflow approve", "/workflow run retry"),
    };
    let mut out = Vec::new();
    let id = s(run, "run_id");
    let handled = run.get("handled").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let with_handled = match handled.len() {
        0 => String::new(),
        1 => " with 1 handled error".into(),
        n => format!(" with {n} handled errors"),
    };
    out.push(format!("Run {id} of {}: {}{with_handled}", s(run, "design"), s(run, "status").replace('_', " ")));
    if let Some(old) = run.get("retry_of").and_then(Value::as_str) {
        out.push(format!("  retry from the start of run {old}"));
    }
    if let Some(failed) = run.get("failure_of").and_then(Value::as_str) {
        out.push(format!("  started by the failure of run {failed}"));
    }
    if run.get("test") == Some(&Value::Bool(true)) {
        out.push("  test run: pinned steps gave their pinned output; nothing was sent from them".into());
    }
    for step in run.get("steps").and_then(Value::as_array).into_iter().flatten().filter(|_| with_steps) {
        out.push(step_line(step));
    }
    if let Some(skipped) = run.get("skipped").and_then(Value::as_array).filter(|a| !a.is_empty()) {
        let names: Vec<&str> = skipped.iter().filter_map(Value::as_str).collect();
        out.push(format!("  skipped: {}", names.join(", ")));
    }
    for h in handled {
        out.push(format!("  handled: {} failed: {}", s(h, "node"), s(h, "error")));
    }
    for d in run.get("deliveries").and_then(Value::as_array).into_iter().flatten() {
        let ok = d.get("ok").and_then(Value::as_bool).unwrap_or(false);
        out.push(format!("  {} delivery to {}: {}", if ok { "✓" } else { "✗" }, s(d, "target"), s(d, "detail")));
    }
    if let Some(p) = run.get("pending").filter(|p| p.is_object()) {
        let node = s(p, "node");
        match s(p, "type") {
            "approval" => {
                let options: Vec<&str> =
                    p.get("options").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
                out.push(format!("Waiting for approval at {node}: {}", s(p, "question")));
                out.push(format!("  options: {}", options.join(" / ")));
                if let Some(d) = p.get("deadline").and_then(Value::as_str) {
                    out.push(format!("  deadline: {d} (then: {})", s(p, "on_timeout")));
                }
                out.push(format!("  answer: {approve} {id} {node} <{}>", options.join("|")));
            }
            "agent" => {
                out.push(format!("Waiting for an agent at {node} (no agent backend is configured). Prompt:"));
                for line in s(p, "prompt").lines() {
                    out.push(format!("  | {line}"));
                }
                out.push(match reader {
                    Reader::Cli => format!("  answer: vwf respond {id} {node} --output '<text>'"),
                    Reader::Chat => format!(
                        "  answer: call workflow_design_respond with {{\"run_id\": \"{id}\", \"node\": \"{node}\", \"output\": \"<text>\"}}"
                    ),
                });
            }
            "wait" => match p.get("next_attempt").and_then(Value::as_u64) {
                Some(n) => out.push(format!("Waiting to retry {node}: attempt {n} starts at {}", s(p, "resume_at"))),
                None => out.push(format!("Waiting at {node} until {}", s(p, "resume_at"))),
            },
            "child" => {
                let child = s(p, "run_id");
                out.push(format!("Waiting at {node} for child run {child} of design {} to end", s(p, "design")));
                if reader == Reader::Cli {
                    out.push(format!("  see it: vwf show {child}"));
                }
            }
            "event" => {
                let event = s(p, "event");
                match p.get("match").and_then(Value::as_str) {
                    Some(m) => out.push(format!("Waiting at {node} for event {event} where {m}")),
                    None => out.push(format!("Waiting at {node} for event {event}")),
                }
                if let Some(d) = p.get("deadline").and_then(Value::as_str) {
                    out.push(format!("  deadline: {d} (then: {})", s(p, "on_timeout")));
                }
                out.push(match reader {
                    Reader::Cli => format!("  send it: vwf emit {event} --payload '<json>'"),
                    Reader::Chat => format!("  send it: POST /events/{event} with its payload"),
                });
            }
            _ => {}
        }
    }
    if let Some(e) = run.get("error").and_then(Value::as_str) {
        out.push(format!("Failed at {}: {e}", s(run, "failed_node")));
        out.push(format!("  retry from that step: {retry} {id}"));
    }
    if let Some(started) = run.get("failure_run").and_then(Value::as_str) {
        out.push(format!("  its failure started run {started}"));
    }
    if s(run, "status") == "done"
        && let Some(last) = last_output(run)
    {
        out.push(String::new());
        out.push(last);
    }
    out.join("\n")
}

/// The text of the last step in plan order that has an output.
fn last_output(run: &Value) -> Option<String> {
    let outputs = run.get("outputs")?.as_object()?;
    let steps = run.get("steps")?.as_array()?;
    steps.iter().rev().find_map(|st| outputs.get(s(st, "node")).and_then(|v| v.get("text")).and_then(Value::as_str).map(String::from))
}

/// A validation report as lines.
pub fn report(name: &str, report: &Value) -> String {
    let mut out = Vec::new();
    let errors = report.get("errors").and_then(Value::as_array).cloned().unwrap_or_default();
    let warnings = report.get("warnings").and_then(Value::as_array).cloned().unwrap_or_default();
    if errors.is_empty() {
        out.push(format!("{name}: valid ({} warning{})", warnings.len(), if warnings.len() == 1 { "" } else { "s" }));
    } else {
        out.push(format!("{name}: {} error{}", errors.len(), if errors.len() == 1 { "" } else { "s" }));
    }
    for (kind, list) in [("error", &errors), ("warning", &warnings)] {
        for i in list {
            out.push(format!("  {kind}: {}{}", issue_place(i), s(i, "message")));
        }
    }
    out.join("\n")
}

fn issue_place(i: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(n) = i.get("node").and_then(Value::as_str) {
        parts.push(format!("node {n}"));
    }
    if let Some(e) = i.get("edge").and_then(Value::as_u64) {
        parts.push(format!("edge #{e}"));
    }
    if let Some(f) = i.get("field").and_then(Value::as_str) {
        parts.push(format!("field {f}"));
    }
    if parts.is_empty() { String::new() } else { format!("[{}] ", parts.join(", ")) }
}

/// Simple left-aligned table.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![line(header.iter().map(|h| h.to_string()).collect())];
    out.extend(rows.iter().map(|r| line(r.clone())));
    out.join("\n")
}

/// A row of the run listing.
pub fn run_row(run: &Value) -> Vec<String> {
    let handled = run.get("handled").and_then(Value::as_array).map_or(0, Vec::len);
    let note = match run.get("pending").filter(|p| p.is_object()) {
        Some(p) => format!("waits on {}", s(p, "node")),
        None if handled > 0 && s(run, "status") == "done" => format!("with {handled} handled error{}", if handled == 1 { "" } else { "s" }),
        None => run.get("error").and_then(Value::as_str).unwrap_or("").chars().take(60).collect(),
    };
    let status = if run.get("status").is_none() && run.get("ok") == Some(&Value::Bool(false)) { "unreadable" } else { s(run, "status") };
    let note = if run.get("test") == Some(&Value::Bool(true)) { format!("test run {note}").trim_end().to_string() } else { note };
    vec![s(run, "run_id").into(), s(run, "design").into(), status.into(), s(run, "created_at").into(), note]
}
