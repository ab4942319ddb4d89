//! Command steps as a user meets them through `vwf --json run`: stdout is the output byte for byte,
//! a broken command fails the run, template values cannot inject shell code, `argv` never meets a
//! shell, and no process the command started outlives its step.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::Home;
use serde_json::{Value, json};

/// A manual trigger feeding the given nodes in a chain, in order.
fn chain(nodes: Vec<Value>) -> Value {
    let mut all = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    all.extend(nodes);
    let edges: Vec<Value> = all.windows(2).map(|w| json!({"from": w[0]["id"], "to": w[1]["id"]})).collect();
    json!({"nodes": all, "edges": edges})
}

/// Saves a one-command design (plus `then`, chained after it) and runs it with `input`.
fn run_design(home: &Home, graph: &Value, input: &Value) -> (i32, Value) {
    home.save("cmd-design", graph);
    home.json(&["run", "cmd-design", "--input", &input.to_string()])
}

fn run_ok(home: &Home, graph: &Value, input: &Value) -> Value {
    let (code, run) = run_design(home, graph, input);
    assert_eq!(code, 0, "run should finish: {run}");
    assert_eq!(run["status"], "done", "{run}");
    run
}

fn run_failed(home: &Home, graph: &Value, input: &Value) -> Value {
    let (code, run) = run_design(home, graph, input);
    assert_eq!(code, 1, "run should fail: {run}");
    assert_eq!(run["status"], "failed", "{run}");
    run
}

fn error_of(run: &Value) -> &str {
    run["error"].as_str().unwrap_or_else(|| panic!("no error in {run}"))
}

fn text_of<'a>(run: &'a Value, node: &str) -> &'a str {
    run["outputs"][node]["text"].as_str().unwrap_or_else(|| panic!("no text for {node} in {run}"))
}

/// `true` once `pid` is gone or a zombie (killed, only waiting for its new parent to reap it).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])).unwrap_or(false),
    }
}

/// Waits (at most 2 s) for every pid to be dead: the kill has been sent, the kernel may lag.
fn assert_all_dead(pids: &[i32]) {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|p| !is_dead(*p)).collect();
        if alive.is_empty() {
            return;
        }
        if Instant::now() > until {
            for p in &alive {
                // Clean up before failing so the test leaves nothing behind.
                unsafe { libc::kill(*p, libc::SIGKILL) };
            }
            panic!("processes still alive after the step ended: {alive:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pids_in(file: &Path) -> Vec<i32> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
    text.split_whitespace().map(|p| p.parse().unwrap_or_else(|e| panic!("bad pid {p:?}: {e}"))).collect()
}

#[test]
fn stdout_is_the_output_byte_for_byte() {
    let home = Home::new();
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "printf '  two  spaces\\n\\ttab \\n\\n'"})]);
    let run = run_ok(&home, &graph, &Value::Null);
    let out = &run["outputs"]["cmd"];
    assert_eq!(out["stdout"], "  two  spaces\n\ttab \n\n", "{run}");
    assert_eq!(out["text"], "  two  spaces\n\ttab ", "the text view drops trailing newlines only: {run}");
    assert_eq!(out["exit_code"], 0, "{run}");
    assert_eq!(out["stderr"], "", "{run}");
    assert!(out.get("encoding").is_none(), "UTF-8 output needs no encoding marker: {run}");

    // Standard error is reported beside the output, never mixed into it.
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "echo out; echo warn >&2"})]);
    let run = run_ok(&home, &graph, &Value::Null);
    assert_eq!(run["outputs"]["cmd"]["stdout"], "out\n", "{run}");
    assert_eq!(run["outputs"]["cmd"]["stderr"], "warn\n", "{run}");
}

#[test]
fn json_stdout_is_addressable_downstream() {
    let home = Home::new();
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "cmd", "type": "command", "run": "echo '{\"count\": 3}'"},
            {"id": "check", "type": "condition", "expr": "out.cmd.count > 2"},
            {"id": "many", "type": "output", "template": "count={{nodes.cmd.count}}"},
            {"id": "few", "type": "output", "template": "few"}
        ],
        "edges": [
            {"from": "start", "to": "cmd"},
            {"from": "cmd", "to": "check"},
            {"from": "check", "to": "many", "label": "true"},
            {"from": "check", "to": "few", "label": "false"}
        ]
    });
    let run = run_ok(&home, &graph, &Value::Null);
    assert_eq!(run["outputs"]["cmd"]["stdout"], "{\"count\": 3}\n", "stdout is kept as printed: {run}");
    assert_eq!(run["outputs"]["cmd"]["data"], json!({"count": 3}), "{run}");
    assert_eq!(run["outputs"]["check"]["value"], true, "{run}");
    assert_eq!(text_of(&run, "many"), "count=3");
    assert_eq!(run["skipped"], json!(["few"]), "{run}");
}

/// Templates read a command's text as shell command substitution gives it: `{{nodes.a}} {{nodes.b}}`
/// joins two `echo`s as "A B", whatever number of newlines each printed; the exact bytes stay in
/// `stdout`.
#[test]
fn text_view_drops_trailing_newlines_as_command_substitution_does() {
    let home = Home::new();
    for (a, b) in [("A\n", "B\n"), ("A", "B\n\n\n"), ("A\n\nx\n", "\n")] {
        let graph = chain(vec![
            json!({"id": "a", "type": "command", "argv": ["printf", "%s", a]}),
            json!({"id": "b", "type": "command", "argv": ["printf", "%s", b]}),
            json!({"id": "both", "type": "output", "template": "{{nodes.a}} {{nodes.b}}"}),
        ]);
        let run = run_ok(&home, &graph, &Value::Null);
        let shell = |s: &str| s.trim_end_matches('\n').to_string();
        assert_eq!(text_of(&run, "both"), format!("{} {}", shell(a), shell(b)), "{run}");
        assert_eq!(run["outputs"]["a"]["stdout"], a, "{run}");
        assert_eq!(run["outputs"]["b"]["stdout"], b, "{run}");
        assert_eq!(run["outputs"]["b"]["lines"], shell(b).lines().count(), "{run}");
    }
}

#[test]
fn non_utf8_stdout_is_kept_losslessly() {
    let home = Home::new();
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "printf '\\377\\376ok\\000'"})]);
    let run = run_ok(&home, &graph, &Value::Null);
    let out = &run["outputs"]["cmd"];
    assert_eq!(out["encoding"], "base64", "{run}");
    let text = text_of(&run, "cmd");
    let encoded = text.strip_prefix("base64:").unwrap_or_else(|| panic!("no base64 marker in {text:?}"));
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).expect("valid base64");
    assert_eq!(bytes, b"\xff\xfeok\x00");
    assert_eq!(out["exit_code"], 0, "{run}");
}

#[test]
fn a_broken_command_fails_the_run_rather_than_continuing() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let graph = chain(vec![
        json!({"id": "cmd", "type": "command", "run": "echo partial; echo 'disk is full' >&2; exit 3"}),
        json!({"id": "after", "type": "command", "run": "touch RAN", "cwd": cwd}),
        json!({"id": "report", "type": "output", "template": "{{nodes.after}}"}),
    ]);
    let run = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&run);
    assert!(error.contains("exited with code 3"), "{error}");
    assert!(error.contains("stderr: disk is full"), "the stderr tail belongs in the error: {error}");
    assert_eq!(run["failed_node"], "cmd", "{run}");
    assert!(run["outputs"].get("after").is_none() && run["outputs"].get("report").is_none(), "{run}");
    let ran: Vec<&Value> = run["steps"].as_array().expect("steps").iter().map(|s| &s["node"]).collect();
    assert_eq!(ran, [&json!("cmd")], "nothing after the broken step runs: {run}");
    assert!(!work.path().join("RAN").exists(), "the next command ran");

    // A command killed by a signal fails the same way, naming the signal.
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "kill -TERM $$"})]);
    let run = run_failed(&home, &graph, &Value::Null);
    assert!(error_of(&run).contains("killed by signal 15"), "{run}");
}

#[test]
fn template_values_reach_the_command_as_one_literal_argument() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let values = [
        "x'; touch INJECTED; echo '$(touch INJECTED2)`; ",
        "`touch INJECTED3` $(touch INJECTED4) $HOME ${HOME} \\ \" ; touch INJECTED5",
        "'' \"'\" \n touch INJECTED6 \n'",
        "-n",
        "",
    ];
    let input = json!({"values": values});
    let mut nodes = Vec::new();
    for i in 0..values.len() {
        nodes.push(json!({"id": format!("v{i}"), "type": "command", "cwd": cwd,
                          "run": format!("printf '%s' {{{{trigger.values.{i}}}}}")}));
    }
    let run = run_ok(&home, &chain(nodes), &input);
    for (i, value) in values.iter().enumerate() {
        assert_eq!(text_of(&run, &format!("v{i}")), *value, "value {i} did not arrive literally: {run}");
    }
    let made: Vec<_> = std::fs::read_dir(work.path()).expect("read cwd").flatten().map(|e| e.file_name()).collect();
    assert!(made.is_empty(), "injected commands ran and made {made:?}");
}

#[test]
fn timeout_kills_grandchildren_too() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    // A background sleep, and a nested shell with its own background sleep, all recorded by pid.
    let run = "sleep 100 & echo $! >> pids; sh -c 'sleep 100 & echo $! >> pids; sleep 100' & echo $! >> pids; \
               echo started >&2; wait";
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": run, "cwd": cwd, "timeout_seconds": 1})]);
    let failed = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&failed);
    assert!(error.contains("timed out after 1 s"), "{error}");
    assert!(error.contains("stderr: started"), "the stderr tail belongs in the error: {error}");
    let pids = pids_in(&work.path().join("pids"));
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert_all_dead(&pids);
}

#[test]
fn background_grandchild_does_not_hang_the_step() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    // The background sleep inherits stdout: the pipe would stay open for 100 s if it lived on.
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "sleep 100 & echo $! > pid; echo hi", "cwd": cwd})]);
    let started = Instant::now();
    let run = run_ok(&home, &graph, &Value::Null);
    assert!(started.elapsed() < Duration::from_secs(60), "the step waited for the background sleep");
    assert_eq!(text_of(&run, "cmd"), "hi");
    assert_all_dead(&pids_in(&work.path().join("pid")));
}

#[test]
fn argv_never_goes_through_a_shell() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let graph = chain(vec![
        json!({"id": "plain", "type": "command", "argv": ["printf", "%s", "$(echo no) `echo no` $HOME; touch INJECTED"], "cwd": cwd}),
        json!({"id": "templated", "type": "command", "argv": ["printf", "%s|%s", "{{trigger.name}}", "b c"], "cwd": cwd}),
    ]);
    let run = run_ok(&home, &graph, &json!({"name": "a'; touch INJECTED2; '"}));
    assert_eq!(text_of(&run, "plain"), "$(echo no) `echo no` $HOME; touch INJECTED");
    assert_eq!(text_of(&run, "templated"), "a'; touch INJECTED2; '|b c");
    let made: Vec<_> = std::fs::read_dir(work.path()).expect("read cwd").flatten().map(|e| e.file_name()).collect();
    assert!(made.is_empty(), "a shell ran and made {made:?}");
}

#[test]
fn cwd_and_env_are_applied() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let graph = chain(vec![json!({
        "id": "cmd", "type": "command", "cwd": cwd,
        "env": {"GREETING": "hello {{trigger.who}}", "EMPTY": ""},
        "run": "pwd -P; printf '%s|%s|%s' \"$GREETING\" \"${EMPTY-unset}\" \"$(command -v sh >/dev/null && echo path-inherited)\""
    })]);
    let run = run_ok(&home, &graph, &json!({"who": "world"}));
    let real = work.path().canonicalize().expect("canonical cwd");
    assert_eq!(text_of(&run, "cmd"), format!("{}\nhello world||path-inherited", real.display()));

    // A working directory that does not exist fails the step clearly, without running anything.
    let missing = work.path().join("missing");
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "echo hi", "cwd": missing.to_str().expect("utf-8")})]);
    let run = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&run);
    assert!(error.contains("working directory") && error.contains("missing") && error.contains("does not exist"), "{error}");
}

#[test]
fn a_missing_program_fails_clearly() {
    let home = Home::new();
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "argv": ["vwf-no-such-program", "x"]})]);
    let run = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&run);
    assert!(error.contains("vwf-no-such-program") && error.contains("No such file or directory"), "{error}");
    assert_eq!(run["failed_node"], "cmd");

    // Through a shell, the shell's own verdict (code 127, "not found") is the error.
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "vwf-no-such-program x"})]);
    let run = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&run);
    assert!(error.contains("exited with code 127") && error.contains("not found"), "{error}");

    // A file that is not executable names the OS error too.
    let work = tempfile::tempdir().expect("tempdir");
    let script = work.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").expect("write script");
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "argv": [script.to_str().expect("utf-8")]})]);
    let run = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&run);
    assert!(error.contains("script.sh") && error.contains("Permission denied"), "{error}");
}

#[test]
fn output_over_the_inline_limit_fails_clearly() {
    let home = Home::new();
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "head -c 1100000 /dev/zero"})]);
    let run = run_failed(&home, &graph, &Value::Null);
    let error = error_of(&run);
    assert!(error.contains("over the 1048576-byte limit"), "{error}");
    assert_eq!(run["failed_node"], "cmd");

    // Exactly at the limit is still kept, whole.
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "yes | head -c 1048576"})]);
    let run = run_ok(&home, &graph, &Value::Null);
    assert_eq!(run["outputs"]["cmd"]["stdout"].as_str().map(str::len), Some(1_048_576));
}

#[test]
fn commands_can_be_switched_off_in_the_config() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    std::fs::write(home.path().join("visual-workflow.toml"), "[commands]\nenabled = false\n").expect("write config");
    let graph = chain(vec![json!({"id": "cmd", "type": "command", "run": "touch RAN", "cwd": cwd})]);
    let run = run_failed(&home, &graph, &Value::Null);
    assert!(error_of(&run).contains("command steps are disabled in the config ([commands] enabled = false)"), "{run}");
    assert!(!work.path().join("RAN").exists(), "the command ran although commands are off");
}

#[test]
fn typed_outputs_match_exactly_on_a_second_run() {
    let home = Home::new();
    let graph = json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "json", "type": "command", "run": "printf '{\"n\": %s, \"who\": \"%s\"}' {{trigger.n}} {{trigger.who}}; echo note >&2"},
            {"id": "bytes", "type": "command", "argv": ["printf", "\\377{{trigger.who}}"]},
            {"id": "check", "type": "condition", "expr": "out.json.n >= 2"},
            {"id": "done", "type": "output", "template": "{{nodes.json.who}} {{nodes.bytes}}"}
        ],
        "edges": [
            {"from": "start", "to": "json"}, {"from": "start", "to": "bytes"},
            {"from": "json", "to": "check"}, {"from": "bytes", "to": "check"},
            {"from": "check", "to": "done", "label": "true"}
        ]
    });
    let input = json!({"n": 2, "who": "ada"});
    let first = run_ok(&home, &graph, &input);
    let (code, second) = home.json(&["run", "cmd-design", "--input", &input.to_string()]);
    assert_eq!(code, 0, "{second}");
    assert_eq!(first["outputs"].to_string(), second["outputs"].to_string());
    assert_ne!(first["run_id"], second["run_id"]);
    assert_eq!(first["outputs"]["bytes"]["encoding"], "base64", "{first}");
}

/// A child starts from a clean environment (SPEC §17): a command step running `env` (and the
/// command agent backend doing the same) sees the base variables and `[commands] pass_env`, never
/// a variable the config names as a secret nor a `VWF_*` variable, even when `pass_env` lists
/// them; a `{{secrets.NAME}}` in the step's `env` is the only way one reaches it.
#[test]
fn children_see_no_secret_of_vwf_s_environment() {
    let home = Home::new();
    let config = "[server]\ntoken_env = \"T_SERVER_TOKEN\"\n\
                  [agent]\nbackend = \"command\"\ncommand = [\"sh\", \"-c\", \"cat >/dev/null; env\"]\napi_key_env = \"T_PROVIDER_KEY\"\n\
                  [channels.telegram]\ntoken_env = \"T_BOT_TOKEN\"\nhome = \"1\"\n\
                  [commands]\npass_env = [\"T_PLAIN\", \"T_BOT_TOKEN\", \"VWF_TOKEN\"]\n\
                  [secrets]\nDEPLOY = \"T_DEPLOY_KEY\"\n";
    std::fs::write(home.path().join("visual-workflow.toml"), config).expect("config");
    let secret_values = ["server-tok-81", "provider-key-82", "bot-token-83", "vwf-token-84", "deploy-key-85", "other-vwf-86"];
    let graph = chain(vec![
        json!({"id": "env", "type": "command", "argv": ["env"], "env": {"GIVEN": "{{secrets.DEPLOY}}", "OWN": "mine"}}),
        json!({"id": "agent", "type": "agent", "prompt": "hi"}),
    ]);
    home.save("envs", &graph);
    let out = home
        .vwf()
        .env("T_SERVER_TOKEN", secret_values[0])
        .env("T_PROVIDER_KEY", secret_values[1])
        .env("T_BOT_TOKEN", secret_values[2])
        .env("VWF_TOKEN", secret_values[3])
        .env("T_DEPLOY_KEY", secret_values[4])
        .env("VWF_SOMETHING", secret_values[5])
        .env("T_PLAIN", "plain-value")
        .env("T_UNLISTED", "unlisted-value")
        .env("LC_TIME", "C")
        .args(["--json", "run", "envs"])
        .output()
        .expect("run");
    let run = common::parse(&out);
    assert_eq!(run["status"], "done", "{run}");
    assert!(run["outputs"]["env"]["text"].as_str().unwrap_or_default().lines().any(|l| l == "VWF_ATTEMPT=1"), "{run}");
    for node in ["env", "agent"] {
        let seen = run["outputs"][node]["text"].as_str().unwrap_or_else(|| panic!("no {node} output: {run}"));
        let names: Vec<&str> = seen.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
        for value in secret_values {
            assert!(!seen.contains(value), "{node} saw a secret of vwf's environment: {seen}");
        }
        // Only the variables vwf sets for the child itself: an agent command's VWF_AGENT_*, a
        // command step's VWF_ATTEMPT.
        let own = |n: &&str| n.starts_with("VWF_AGENT_") || (node == "env" && *n == "VWF_ATTEMPT");
        assert!(!names.iter().any(|n| n.starts_with("VWF_") && !own(n)), "{node} saw a VWF_ variable: {names:?}");
        for name in ["PATH", "HOME", "T_PLAIN", "LC_TIME"] {
            assert!(names.contains(&name), "{node} lacks {name}: {names:?}");
        }
        assert!(!names.contains(&"T_UNLISTED") && !names.contains(&"T_BOT_TOKEN"), "{names:?}");
    }
    // The step's own env, with the secret it asked for (recorded as `***`).
    let seen = run["outputs"]["env"]["text"].as_str().unwrap_or_default();
    assert!(seen.lines().any(|l| l == "OWN=mine") && seen.lines().any(|l| l == "GIVEN=***"), "{seen}");
}
