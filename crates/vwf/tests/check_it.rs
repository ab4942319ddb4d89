//! The three checks a workflow author should make before trusting a routine, as tests through the
//! `vwf` binary: typed steps repeat exactly, a broken command stops the run, and the path where
//! there is nothing to do still ends on an artefact (with the validator warning when it would not).

use crate::common;

use std::path::Path;

use common::Home;
use serde_json::{Value, json};

fn run(home: &Home, design: &str, input: &Value) -> (i32, Value) {
    home.json(&["run", design, "--input", &input.to_string()])
}

fn assert_status(code: i32, run: &Value, want: &str) {
    let want_code = match want {
        "done" => 0,
        "failed" => 1,
        _ => 6,
    };
    assert_eq!((code, run["status"].as_str()), (want_code, Some(want)), "{run}");
}

/// Validates a draft graph without saving it; returns the report.
fn validate_draft(home: &Home, graph: &Value) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let draft = dir.path().join("draft.json");
    std::fs::write(&draft, graph.to_string()).expect("write draft");
    let (code, report) = home.json(&["validate", &format!("@{}", draft.display())]);
    assert_eq!(code, 0, "{report}");
    report
}

fn warning_messages(report: &Value) -> Vec<String> {
    report["warnings"].as_array().into_iter().flatten().map(|w| w["message"].as_str().unwrap_or("").to_string()).collect()
}

/// Command, condition and loop steps: tally the words of the input, branch on how many distinct
/// words there are, and describe each one in its own pass. Passes finish out of order on purpose
/// (the first sleeps longest), with three at a time.
fn tally_design() -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "tally", "type": "command",
             "run": "printf '%s\\n' {{trigger.sentence}} | tr ' ' '\\n' | sort | uniq -c | awk 'BEGIN { printf \"{\\\"items\\\": [\" } { printf \"%s{\\\"word\\\": \\\"%s\\\", \\\"n\\\": %d}\", (NR > 1 ? \", \" : \"\"), $2, $1 } END { printf \"], \\\"distinct\\\": %d}\\n\", NR }'"},
            {"id": "varied", "type": "condition", "expr": "out.tally.distinct > 2"},
            {"id": "each", "type": "loop", "over": "{{nodes.tally.items}}", "concurrency": 3},
            {"id": "describe", "type": "command",
             "run": "i={{loop.index}}; sleep 0.$(expr 3 - $i % 3); printf '{\"pass\": %s, \"word\": \"%s\", \"times\": %s}\\n' \"$i\" {{item.word}} {{item.n}}"},
            {"id": "summary", "type": "output", "template": "{{nodes.each.count}} distinct words: {{nodes.each.items}}"},
            {"id": "monotone", "type": "output", "template": "only {{nodes.tally.distinct}} distinct words"}
        ],
        "edges": [
            {"from": "start", "to": "tally"},
            {"from": "tally", "to": "varied"},
            {"from": "varied", "to": "each", "label": "true"},
            {"from": "varied", "to": "monotone", "label": "false"},
            {"from": "each", "to": "describe", "label": "each"},
            {"from": "each", "to": "summary", "label": "done"}
        ]
    })
}

#[test]
fn typed_nodes_give_identical_outputs_on_the_same_input() {
    let home = Home::new();
    home.save("tally", &tally_design());
    let input = json!({"sentence": "pear apple fig apple kiwi pear apple"});

    let (code, first) = run(&home, "tally", &input);
    assert_status(code, &first, "done");
    let (code, second) = run(&home, "tally", &input);
    assert_status(code, &second, "done");
    assert_ne!(first["run_id"], second["run_id"]);

    // The expected answer, so identical runs are also right ones.
    assert_eq!(first["outputs"]["tally"]["data"]["distinct"], 4, "{first}");
    assert_eq!(first["outputs"]["varied"]["value"], true);
    assert_eq!(
        first["outputs"]["each"]["items"],
        json!([
            {"pass": 0, "word": "apple", "times": 3},
            {"pass": 1, "word": "fig", "times": 1},
            {"pass": 2, "word": "kiwi", "times": 1},
            {"pass": 3, "word": "pear", "times": 2}
        ]),
        "pass results are in item order whatever order the passes finished in"
    );
    assert_eq!(first["skipped"], json!(["monotone"]));

    // Byte for byte: the outputs as serialised, and every step's text on its own.
    let bytes = |run: &Value| serde_json::to_vec(&run["outputs"]).expect("outputs serialise");
    assert_eq!(bytes(&first), bytes(&second), "outputs differ between two runs on the same input");
    for (id, view) in first["outputs"].as_object().expect("outputs object") {
        assert_eq!(view["text"], second["outputs"][id]["text"], "step {id}");
    }
    assert_eq!(first["skipped"], second["skipped"]);
    let nodes = |run: &Value| -> Vec<String> {
        run["steps"].as_array().expect("steps").iter().map(|s| format!("{} {}", s["node"], s["status"])).collect()
    };
    let (mut a, mut b) = (nodes(&first), nodes(&second));
    a.sort();
    b.sort();
    assert_eq!(a, b, "the same steps ran");
}

#[test]
fn a_deliberately_broken_command_fails_the_run_rather_than_continuing() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "prepare", "type": "command", "run": "echo '{\"rows\": 3}'"},
            {"id": "convert", "type": "command", "run": "echo 'half a result'; echo 'convert: input is corrupt' >&2; exit 4"},
            {"id": "commit", "type": "command", "run": "touch COMMITTED; echo committed", "cwd": cwd},
            {"id": "report", "type": "output", "template": "{{nodes.commit}}"}
        ],
        "edges": [
            {"from": "start", "to": "prepare"},
            {"from": "prepare", "to": "convert"},
            {"from": "convert", "to": "commit"},
            {"from": "commit", "to": "report"}
        ]
    });
    home.save("broken", &graph);
    let (code, failed) = run(&home, "broken", &Value::Null);
    assert_status(code, &failed, "failed");
    assert_eq!(failed["failed_node"], "convert", "{failed}");
    let error = failed["error"].as_str().expect("error");
    assert!(error.contains("exited with code 4") && error.contains("convert: input is corrupt"), "{error}");
    assert_eq!(failed["outputs"]["prepare"]["data"], json!({"rows": 3}), "steps before the break keep their output");
    for later in ["convert", "commit", "report"] {
        assert!(failed["outputs"].get(later).is_none(), "{later} has an output after the break: {failed}");
    }
    assert!(!Path::new(cwd).join("COMMITTED").exists(), "a step after the broken command ran");
    let convert = failed["steps"].as_array().unwrap().iter().find(|s| s["node"] == "convert").expect("convert step");
    assert_eq!(convert["status"], "failed", "{failed}");

    // Broken inside a loop pass: the loop fails with the pass named, and its `done` branch never runs.
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "each", "type": "loop", "over": "{{trigger.rows}}"},
            {"id": "check", "type": "command", "run": "i={{loop.index}}; [ {{item}} -ge 0 ] || { echo \"row $i is negative\" >&2; exit 1; }; echo {{item}}"},
            {"id": "after", "type": "command", "run": "touch AFTER", "cwd": cwd}
        ],
        "edges": [
            {"from": "start", "to": "each"},
            {"from": "each", "to": "check", "label": "each"},
            {"from": "each", "to": "after", "label": "done"}
        ]
    });
    home.save("broken-pass", &graph);
    let (code, failed) = run(&home, "broken-pass", &json!({"rows": [3, -1, 5]}));
    assert_status(code, &failed, "failed");
    assert_eq!(failed["failed_node"], "each", "{failed}");
    let error = failed["error"].as_str().expect("error");
    assert!(error.contains("pass 1") && error.contains("row 1 is negative"), "{error}");
    assert!(failed["outputs"].get("after").is_none(), "{failed}");
    assert!(!Path::new(cwd).join("AFTER").exists(), "the done branch ran after a failed pass");
}

/// An inbox job: list the files, and either read each one or, with none, say so with an artefact.
fn inbox_design(with_idle_branch: bool) -> Value {
    let mut nodes = vec![
        json!({"id": "start", "type": "trigger", "mode": "manual"}),
        json!({"id": "find", "type": "command",
               "run": "cd {{trigger.inbox}} && n=0 && printf '{\"files\": [' && for f in *.txt; do [ -e \"$f\" ] || continue; [ $n -eq 0 ] || printf ', '; printf '\"%s\"' \"$PWD/$f\"; n=$((n + 1)); done && printf '], \"count\": %d}\\n' $n"}),
        json!({"id": "any", "type": "condition", "expr": "out.find.count > 0"}),
        json!({"id": "each", "type": "loop", "over": "{{nodes.find.files}}"}),
        json!({"id": "read", "type": "command", "run": "printf '{\"lines\": %d}\\n' $(wc -l < {{item}})"}),
        json!({"id": "processed", "type": "output", "template": "{\"processed\": {{nodes.each.count}}, \"results\": {{nodes.each.items}}}"}),
    ];
    let mut edges = vec![
        json!({"from": "start", "to": "find"}),
        json!({"from": "find", "to": "any"}),
        json!({"from": "any", "to": "each", "label": "true"}),
        json!({"from": "each", "to": "read", "label": "each"}),
        json!({"from": "each", "to": "processed", "label": "done"}),
    ];
    if with_idle_branch {
        nodes.push(json!({"id": "idle", "type": "output", "template": "{\"processed\": 0, \"inbox\": \"{{trigger.inbox}}\"}"}));
        edges.push(json!({"from": "any", "to": "idle", "label": "false"}));
    }
    json!({"nodes": nodes, "edges": edges})
}

/// The output of the last step that finished `done`, in the order the run recorded them.
fn last_done_output(run: &Value) -> (String, Value) {
    let last = run["steps"].as_array().expect("steps").iter().rev().find(|s| s["status"] == "done").expect("a finished step");
    let id = last["node"].as_str().expect("node").to_string();
    let view = run["outputs"][&id].clone();
    (id, view)
}

#[test]
fn the_path_with_nothing_to_do_still_ends_on_something_concrete() {
    let home = Home::new();
    let graph = inbox_design(true);
    let report = validate_draft(&home, &graph);
    assert_eq!((&report["errors"], &report["warnings"]), (&json!([]), &json!([])), "{report}");
    home.save("inbox", &graph);

    // Nothing to do: an empty inbox still ends on an output that returns an artefact.
    let inbox = tempfile::tempdir().expect("tempdir");
    let input = json!({"inbox": inbox.path()});
    let (code, idle) = run(&home, "inbox", &input);
    assert_status(code, &idle, "done");
    assert_eq!(idle["outputs"]["find"]["data"], json!({"files": [], "count": 0}), "{idle}");
    let (last, view) = last_done_output(&idle);
    assert_eq!(last, "idle", "{idle}");
    assert!(!view["text"].as_str().unwrap_or("").is_empty(), "{idle}");
    assert_eq!(view["data"], json!({"processed": 0, "inbox": inbox.path()}), "{idle}");
    assert_eq!(idle["skipped"], json!(["each", "processed"]), "{idle}");

    // Something to do: the same design reads every file and returns what it found.
    std::fs::write(inbox.path().join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(inbox.path().join("b.txt"), "three\n").unwrap();
    let (code, busy) = run(&home, "inbox", &input);
    assert_status(code, &busy, "done");
    let (last, view) = last_done_output(&busy);
    assert_eq!(last, "processed", "{busy}");
    assert_eq!(view["data"], json!({"processed": 2, "results": [{"lines": 2}, {"lines": 1}]}), "{busy}");
    assert_eq!(busy["skipped"], json!(["idle"]), "{busy}");

    // Without the idle branch the validator warns that the condition leads nowhere when it is
    // false, and a run on an empty inbox indeed ends with no output at all.
    let dead_end = inbox_design(false);
    let report = validate_draft(&home, &dead_end);
    assert_eq!(report["ok"], true, "a warning, not an error: {report}");
    let warnings = warning_messages(&report);
    assert!(warnings.iter().any(|w| w.contains("\"any\"") && w.contains("false")), "no dead-end warning in {warnings:?}");
    home.save("inbox-dead-end", &dead_end);
    std::fs::remove_file(inbox.path().join("a.txt")).unwrap();
    std::fs::remove_file(inbox.path().join("b.txt")).unwrap();
    let (code, empty) = run(&home, "inbox-dead-end", &input);
    assert_status(code, &empty, "done");
    assert_eq!(last_done_output(&empty).0, "any", "the run's last step is the condition: {empty}");

    // Ending on a pause is nothing concrete either.
    let pause_last = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "work", "type": "command", "run": "echo done"},
            {"id": "pause", "type": "wait", "seconds": 5}
        ],
        "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "pause"}]
    });
    let warnings = warning_messages(&validate_draft(&home, &pause_last));
    assert!(warnings.iter().any(|w| w.contains("\"pause\"") && w.contains("nothing concrete")), "{warnings:?}");
}
