//! `vwf run`'s live progress: drawn on a real terminal (a pseudo-terminal made by `script(1)`,
//! as a person's shell gives one) with a bar counting a loop's passes and a wait's countdown, and
//! plain step lines, with no terminal codes, when standard error is a pipe.

use crate::common;

use std::process::Command;

use common::Home;
use serde_json::json;

const T0: &str = "2026-11-29T09:00:00Z";

/// A loop over three items, then a ten-minute wait (the pinned clock passes it at once), then an
/// output.
fn looping() -> serde_json::Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each", "type": "loop", "over": "[1, 2, 3]"},
            {"id": "shout", "type": "command", "run": "echo item {{item}}"},
            {"id": "pause", "type": "wait", "seconds": 600},
            {"id": "out", "type": "output", "template": "after the pause"}
        ],
        "edges": [
            {"from": "start", "to": "each"},
            {"from": "each", "to": "shout", "label": "each"},
            {"from": "each", "to": "pause", "label": "done"},
            {"from": "pause", "to": "out"}
        ]
    })
}

#[test]
fn a_terminal_shows_bars_and_a_pipe_gets_plain_lines() {
    let home = Home::new();
    home.save("looping", &looping());
    let vwf = assert_cmd::cargo::cargo_bin("vwf");
    let line = format!("{} --home {} run looping", vwf.display(), home.path().display());
    // `script -q -e -c CMD /dev/null`: CMD on a new pseudo-terminal, its output on ours.
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("VWF_NOW", T0)
        .env("TERM", "xterm-256color")
        .env_remove("VWF_HOME")
        .env_remove("VWF_DATABASE_URL")
        .output()
        .expect("run script(1)");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("loop each") && shown.contains("/3 passes"), "a bar counts the loop's passes: {shown}");
    assert!(shown.contains("pause waits until 09:10:00 UTC"), "the wait counts down: {shown}");
    assert!(shown.contains("\u{1b}["), "drawn with terminal codes: {shown}");
    assert!(shown.contains("out") && shown.contains("after the pause"), "{shown}");

    // Standard error a pipe: the step lines alone, as before.
    let piped = home.vwf().env("VWF_NOW", T0).args(["run", "looping"]).output().expect("run vwf");
    let lines = String::from_utf8_lossy(&piped.stderr);
    assert_eq!(piped.status.code(), Some(0), "{lines}");
    assert!(!lines.contains('\u{1b}') && !lines.contains("passes") && !lines.contains("waits until"), "{lines}");
    assert!(lines.lines().any(|l| l.contains("pause")) && lines.lines().any(|l| l.contains("shout#2")), "{lines}");
    // --json: nothing but the run on standard output, no progress at all.
    let (code, run) = home.json_at(T0, &["run", "looping"]);
    assert_eq!((code, run["status"].as_str()), (0, Some("done")), "{run}");
}
