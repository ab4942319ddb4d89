//! Template values in `run` strings, attacked: a corpus of hostile values × every shell context a
//! `run` string can put a template in, through the real binary and the real `sh`. Nothing a value
//! holds runs, and the value reaches the program byte for byte; a context that cannot be made safe
//! is refused when the design is saved, so nothing runs there either.

use crate::common;

use common::Home;
use serde_json::{Value, json};

/// Where each hostile value tries to create a file: the test's own directory.
const CANARY: &str = "PWNED";

/// The corpus: command substitution, quotes of both kinds, backslashes, newlines, `$IFS`, globbing,
/// here-document delimiters, parameter and arithmetic expansions, option-like and very long values.
fn payloads() -> Vec<String> {
    let c = CANARY;
    let mut p: Vec<String> = [
        format!("$(touch {c})"),
        format!("`touch {c}`"),
        format!("; touch {c}"),
        format!("'; touch {c}; '"),
        format!("\"; touch {c}; \""),
        format!("' ; touch {c} #"),
        format!("\" ; touch {c} #"),
        format!("'\"; touch {c}; \"'"),
        format!("$(touch${{IFS}}{c})"),
        format!("a\ntouch {c}\n"),
        format!("\ntouch {c}\n"),
        format!("EOF\ntouch {c}\nEOF"),
        format!("EOF\n$(touch {c})\nEOF\n"),
        format!("&& touch {c}"),
        format!("|| touch {c}"),
        format!("| touch {c}"),
        format!("> {c}"),
        format!("}}; touch {c}; {{"),
        format!(")\"; touch {c}; echo \"("),
        format!("a[$(touch {c})]"),
        format!("$((1+$(touch {c})))"),
        format!("\\$(touch {c})"),
        format!("\\'; touch {c}; \\'"),
        format!("${{x:-$(touch {c})}}"),
        format!("\"$(touch {c})\""),
        format!("'$(touch {c})'"),
        format!("\r\ntouch {c}\r\n"),
        "$IFS".into(),
        "${IFS}".into(),
        "*".into(),
        "/*".into(),
        "?".into(),
        "[a-z]*".into(),
        "~".into(),
        "~root".into(),
        "\\".into(),
        "\\\\".into(),
        "'".into(),
        "\"".into(),
        "''".into(),
        "\"\"".into(),
        "$".into(),
        "$0 $$ $@ $* $# $?".into(),
        "!!".into(),
        "#".into(),
        "-n".into(),
        "--help".into(),
        "-e \\x41\\c".into(),
        "%s%s%n%d".into(),
        "$((6*7))".into(),
        "$[6*7]".into(),
        "{{trigger.p}}".into(),
        "  two  spaces  ".into(),
        "\ttab\t".into(),
        "".into(),
        "héllo 世界 🎉".into(),
        "\u{1}\u{7f}\u{1b}[31m".into(),
        "$'\\x41'".into(),
        "${HOME}$HOME".into(),
        "trailing newlines\n\n\n".into(),
    ]
    .into_iter()
    .collect();
    // Very long: 100,000 bytes of substitutions.
    p.push(format!("$(touch {c})").repeat(100_000 / (9 + c.len())));
    p
}

/// A context: node id, `run` string, and what the command must print for a value.
type Context = (&'static str, &'static str, fn(&str) -> String);

/// One command node per context.
fn contexts() -> Vec<Context> {
    fn same(v: &str) -> String {
        v.to_string()
    }
    fn subst(v: &str) -> String {
        v.trim_end_matches('\n').to_string()
    }
    vec![
        ("bare", "printf %s {{trigger.p}}", same),
        ("twice", "printf %s {{trigger.p}}{{trigger.p}}", |v| format!("{v}{v}")),
        ("double", "printf %s \"got: {{trigger.p}}\"", |v| format!("got: {v}")),
        ("double_apostrophe", "printf %s \"it's {{trigger.p}}\"", |v| format!("it's {v}")),
        ("single", "printf %s 'got: {{trigger.p}}'", |v| format!("got: {v}")),
        ("single_adjacent", "printf %s a'{{trigger.p}}'b", |v| format!("a{v}b")),
        ("subst", "printf %s \"$(printf %s {{trigger.p}})\"", subst),
        ("subst_in_double", "printf %s \"x$(printf %s \"{{trigger.p}}\")y\"", |v| format!("x{}y", subst(v))),
        ("subst_single", "printf %s \"$(printf %s '{{trigger.p}}')\"", subst),
        ("param_double", "printf %s \"${VWF_TEST_UNSET:-{{trigger.p}}}\"", same),
        ("param_bare", "printf %s ${VWF_TEST_UNSET:-{{trigger.p}}}", same),
        ("param_single", "printf %s ${VWF_TEST_UNSET:-'{{trigger.p}}'}", same),
        ("param_pattern", "v=x{{trigger.p}}; printf %s \"${v#x{{trigger.p}}}\"", |_| String::new()),
        ("assign", "v={{trigger.p}}; printf %s \"$v\"", same),
        ("assign_double", "v=\"{{trigger.p}}\"; printf %s \"$v\"", same),
        ("assign_single", "v='{{trigger.p}}'; printf %s \"$v\"", same),
        ("assign_prefix", "P={{trigger.p}} sh -c 'printf %s \"$P\"'", same),
        ("heredoc_in_subst", "printf %s \"$(cat <<EOF\n{{trigger.p}}\nEOF\n)\"", subst),
        ("python_argv", "python3 -c 'import sys; sys.stdout.write(sys.argv[1])' {{trigger.p}}", same),
        ("export", "export X={{trigger.p}} && printf %s \"$X\"", same),
        ("positional", "sh -c 'printf %s \"$1\"' _ {{trigger.p}}", same),
        ("heredoc", "cat <<EOF\n{{trigger.p}}\nEOF", |v| format!("{v}\n")),
        ("heredoc_tabs", "cat <<-EOF\n\t<{{trigger.p}}>\n\tEOF", |v| format!("<{v}>\n")),
        ("heredoc_subst", "cat <<EOF\n[$(printf %s {{trigger.p}})]\nEOF", |v| format!("[{}]\n", subst(v))),
        ("heredoc_quotes", "cat <<EOF\n'{{trigger.p}}' \"{{trigger.p}}\"\nEOF", |v| format!("'{v}' \"{v}\"\n")),
        ("for", "for a in {{trigger.p}}; do printf %s \"$a\"; done", same),
        ("case", "case {{trigger.p}} in *) printf matched;; esac", |_| "matched".into()),
        ("test", "if [ \"{{trigger.p}}\" = \"{{trigger.p}}\" ]; then printf same; fi", |_| "same".into()),
        ("pipe", "printf %s {{trigger.p}} | cat", same),
        ("redirect", "printf %s {{trigger.p}} > \"$TMPDIR/out.$$\" && cat \"$TMPDIR/out.$$\"", same),
        ("group", "{ printf %s {{trigger.p}}; }", same),
        ("subshell", "(printf %s \"{{trigger.p}}\")", same),
        ("comment", "printf ok # {{trigger.p}}", |_| "ok".into()),
    ]
}

/// Files in `dir` other than the `redirect` context's own output files.
fn made_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read cwd")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("out."))
        .collect()
}

/// A design with one command node per context, all fed by the trigger.
fn corpus_design(cwd: &str) -> Value {
    let mut nodes = vec![json!({"id": "start", "type": "trigger", "mode": "manual"})];
    let mut edges = Vec::new();
    for (id, run, _) in contexts() {
        nodes.push(json!({"id": id, "type": "command", "run": run, "cwd": cwd, "env": {"TMPDIR": cwd}}));
        edges.push(json!({"from": "start", "to": id}));
    }
    json!({"nodes": nodes, "edges": edges})
}

#[test]
fn no_hostile_value_runs_in_any_context_and_each_arrives_byte_for_byte() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    home.save("corpus", &corpus_design(cwd));
    let payloads = payloads();
    assert!(payloads.len() >= 60, "{}", payloads.len());
    for value in &payloads {
        let out = home
            .vwf()
            .args(["--json", "run", "corpus", "--input", "-"])
            .write_stdin(json!({ "p": value }).to_string())
            .output()
            .expect("vwf");
        let (code, run) = (common::code(&out), common::parse(&out));
        let shown: String = value.chars().take(60).collect();
        assert_eq!(code, 0, "{shown:?}: {run}");
        for (id, _, expect) in contexts() {
            let got = run["outputs"][id]["stdout"].as_str().unwrap_or_else(|| panic!("{id} has no stdout for {shown:?}: {run}"));
            assert!(got == expect(value), "{id}: {shown:?} arrived as {:?}", got.chars().take(80).collect::<String>());
        }
        let made = made_files(work.path());
        assert!(made.is_empty(), "{shown:?} ran something that made {made:?}");
    }
}

#[test]
fn a_value_no_process_can_receive_fails_the_step_and_runs_nothing() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let graph = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "cmd", "type": "command", "run": format!("touch {CANARY}; printf %s {{{{trigger.p}}}}"), "cwd": cwd}
    ], "edges": [{"from": "start", "to": "cmd"}]});
    home.save("nul", &graph);
    for (value, why) in [("a\u{0}; touch X", "NUL byte"), (&"x".repeat(200_000) as &str, "bytes per value")] {
        let out =
            home.vwf().args(["--json", "run", "nul", "--input", "-"]).write_stdin(json!({ "p": value }).to_string()).output().expect("vwf");
        let (code, run) = (common::code(&out), common::parse(&out));
        assert_eq!(code, 1, "{run}");
        let error = run["error"].as_str().unwrap_or_default();
        assert!(error.contains("{{trigger.p}}") && error.contains(why), "{error}");
    }
    assert!(std::fs::read_dir(work.path()).expect("read").next().is_none(), "the step ran");
}

#[test]
fn placements_that_cannot_be_made_safe_are_refused_at_save_with_how_to_write_them() {
    let home = Home::new();
    for (run, advice) in [
        ("{{trigger.p}}", "name the program"),
        ("echo `echo {{trigger.p}}`", "$(…) instead"),
        ("echo \"`echo {{trigger.p}}`\"", "$(…) instead"),
        ("echo $(( {{trigger.p}} + 1 ))", "arithmetic"),
        ("cat <<'EOF'\n{{trigger.p}}\nEOF", "unquoted delimiter"),
        ("eval echo {{trigger.p}}", "eval"),
        ("sh -c 'echo {{trigger.p}}'", "positional parameter"),
        ("bash -c \"echo {{trigger.p}}\"", "positional parameter"),
        ("trap 'echo {{trigger.p}}' EXIT", "trap"),
        ("echo \\{{trigger.p}}", "backslash"),
        ("echo ${{trigger.p}}", "right after"),
        ("sudo -u me {{trigger.p}}", "sudo can run"),
        ("timeout -s KILL 5 {{trigger.p}}", "timeout can run"),
        ("env -S\"{{trigger.p}}\"", "env can run"),
        ("flock /tmp/l -c 'echo {{trigger.p}}'", "flock can run"),
        (". {{trigger.p}}", ". can run"),
        ("$SHELL -c 'echo {{trigger.p}}'", "not written out"),
        ("echo \"$(case a in a) {{trigger.p}};; esac)\"", "name the program"),
        ("echo [[ \"]]\"; {{trigger.p}} \"\"", "name the program"),
        ("echo \"${G:-it's}\"; find . -name {{trigger.p}}", "single quote inside"),
        ("time -p sh -c \"echo {{trigger.p}}\"", "time can run"),
        ("alias a=echo\na {{trigger.p}}", "alias"),
        ("for ((i=0; i<{{trigger.p}}; i++)); do :; done", "arithmetic"),
        ("echo ${X:{{trigger.p}}}", "arithmetic"),
        ("PATH={{trigger.p}} ls", "PATH decides"),
        ("python3 -c \"print('{{trigger.p}}')\"", "program text"),
        ("awk '{print \"{{trigger.p}}\"}'", "program text"),
        ("echo \"$(cat <<EOF\na\nEOF)\"\n{{trigger.p}}\nEOF", "delimiter alone"),
    ] {
        let graph = json!({"nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "cmd", "type": "command", "run": run}
        ], "edges": [{"from": "start", "to": "cmd"}]});
        let out = home.vwf().args(["--json", "save", "refused", "-"]).write_stdin(graph.to_string()).output().expect("vwf");
        let body = common::parse(&out);
        assert_eq!(body["ok"], false, "{run}: {body}");
        let text = body.to_string();
        assert!(text.contains(advice) && text.contains("\"run\""), "{run}: {body}");
    }
    assert!(!home.path().join("workflow-designs/refused.json").exists(), "a refused design was written");
}

#[test]
fn argv_and_env_refuse_values_that_would_choose_what_runs() {
    let home = Home::new();
    for (node, field) in [
        (json!({"argv": ["{{trigger.p}}", "x"]}), "argv"),
        (json!({"argv": ["sh", "-c", "echo {{trigger.p}}"]}), "argv"),
        (json!({"argv": ["sudo", "{{trigger.p}}"]}), "argv"),
        (json!({"argv": ["python3", "-c", "print('{{trigger.p}}')"]}), "argv"),
        (json!({"run": "true", "env": {"LD_PRELOAD": "{{trigger.p}}"}}), "env"),
        (json!({"run": "true", "env": {"PATH": "/x:{{trigger.p}}"}}), "env"),
        (json!({"run": "true", "env": {"BASH_FUNC_ls%%": "{{trigger.p}}"}}), "env"),
    ] {
        let mut cmd = json!({"id": "cmd", "type": "command"});
        cmd.as_object_mut().expect("object").extend(node.as_object().expect("object").clone());
        let graph =
            json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"}, cmd], "edges": [{"from": "start", "to": "cmd"}]});
        let out = home.vwf().args(["--json", "save", "refused", "-"]).write_stdin(graph.to_string()).output().expect("vwf");
        let body = common::parse(&out);
        assert_eq!(body["ok"], false, "{node}: {body}");
        assert_eq!(body["errors"][0]["field"], field, "{node}: {body}");
    }
    // A value as an argument of a program the design names is fine, and arrives as one argument.
    let graph = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "cmd", "type": "command", "argv": ["printf", "%s", "{{trigger.p}}"], "env": {"V": "{{trigger.p}}"}}],
        "edges": [{"from": "start", "to": "cmd"}]});
    home.save("argv", &graph);
    let (code, run) = home.json(&["run", "argv", "--input", &json!({"p": "$(touch X); `id`"}).to_string()]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["outputs"]["cmd"]["text"], "$(touch X); `id`");
}

/// A value stored in a variable may reach arithmetic later (`$((n + 1))`), where bash runs
/// `a[$(…)]`: in a script that evaluates arithmetic such values fail the step and nothing runs;
/// ordinary values still arrive.
#[test]
fn values_bash_would_run_in_arithmetic_fail_the_step_in_scripts_that_do_arithmetic() {
    let home = Home::new();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().to_str().expect("utf-8 path");
    let graph = json!({"nodes": [{"id": "start", "type": "trigger", "mode": "manual"},
        {"id": "cmd", "type": "command", "cwd": cwd, "run": "n={{trigger.p}}; printf %s \"$n\"; echo \"$((0 + 1))\" >/dev/null"}],
        "edges": [{"from": "start", "to": "cmd"}]});
    home.save("arith", &graph);
    for value in [format!("a[$(touch {CANARY})]"), format!("x[`touch {CANARY}`]"), format!("[$(touch {CANARY})")] {
        let (code, run) = home.json(&["run", "arith", "--input", &json!({"p": value}).to_string()]);
        assert_eq!(code, 1, "{run}");
        assert!(run["error"].as_str().unwrap_or_default().contains("would run as code"), "{run}");
    }
    let (code, run) = home.json(&["run", "arith", "--input", &json!({"p": "[ok] $HOME `x`"}).to_string()]);
    assert_eq!(code, 1, "[ with $ is refused whatever else it holds: {run}");
    let (code, run) = home.json(&["run", "arith", "--input", &json!({"p": "a[1] and 5"}).to_string()]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["outputs"]["cmd"]["text"], "a[1] and 5");
    assert!(made_files(work.path()).is_empty());
}

#[test]
fn a_watch_command_takes_no_templates() {
    let home = Home::new();
    let graph = json!({"nodes": [
        {"id": "start", "type": "trigger", "mode": "watch", "command": "tail -f {{trigger.path}}"},
        {"id": "out", "type": "output"}
    ], "edges": [{"from": "start", "to": "out"}]});
    let out = home.vwf().args(["--json", "validate", "-"]).write_stdin(graph.to_string()).output().expect("vwf");
    let body = common::parse(&out);
    assert_eq!(body["ok"], false, "{body}");
    assert!(body["errors"].to_string().contains("takes no templates"), "{body}");
}

/// The same corpus with bash as the shell (the `sh` of many systems), scripts compiled exactly as the
/// engine compiles them.
#[test]
fn the_corpus_holds_under_bash_too() {
    let work = tempfile::tempdir().expect("tempdir");
    let bash = ["/bin/bash", "/usr/bin/bash"].into_iter().find(|p| std::path::Path::new(p).exists()).expect("bash is installed");
    let scripts: Vec<_> = contexts()
        .into_iter()
        .map(|(id, run, expect)| {
            let template = vwf_core::template::parse(run).expect("template");
            (id, vwf_core::shell::compile(&template).expect("placement"), expect)
        })
        .collect();
    for value in payloads() {
        let shown: String = value.chars().take(60).collect();
        for (id, script, expect) in &scripts {
            let out = std::process::Command::new(bash)
                .args(["--posix", "-c", &script.text])
                .envs(script.values.iter().map(|(var, _)| (var.as_str(), value.as_str())))
                .env("TMPDIR", work.path())
                .current_dir(work.path())
                .output()
                .expect("bash");
            let got = String::from_utf8_lossy(&out.stdout);
            assert!(got == expect(&value), "{id} under bash: {shown:?} arrived as {:?}", got.chars().take(80).collect::<String>());
        }
        let made = made_files(work.path());
        assert!(made.is_empty(), "{shown:?} ran something under bash that made {made:?}");
    }
}
