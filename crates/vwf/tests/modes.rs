//! The home is private (SPEC §17): a home that `vwf` creates, from the CLI or from `vwf serve`, is
//! 0700 with every directory in it 0700 and every file 0600 after a run, whatever umask the caller
//! had. An existing home keeps its modes, and `vwf doctor` warns about loose ones (naming the path
//! and the fix) without changing them.
//!
//! Every `vwf` here starts under umask 022, a common login default (set in the child before it
//! runs `vwf`, never in this process, whose umask every other test of the binary shares), so a
//! mode vwf did not choose itself would show as 0755 or 0644.

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Trigger → a command step that writes a file outside the home → an output.
fn design(step_file: &Path) -> Value {
    json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "make", "type": "command", "run": format!("echo made > '{}'", step_file.display())},
            {"id": "done", "type": "output"}
        ],
        "edges": [{"from": "start", "to": "make"}, {"from": "make", "to": "done"}]
    })
}

/// `vwf --home <home>` under a login-like umask (022), set in the child between fork and exec.
fn vwf(home: &Path) -> Command {
    let mut c = common::server::vwf(home);
    // SAFETY: umask(2) is async-signal-safe and sets only the child's file mode creation mask.
    unsafe {
        c.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    c
}

/// `vwf --home <home> --json <args>`, answered with its exit code and JSON.
fn vwf_json(home: &Path, args: &[&str]) -> (i32, Value) {
    let out = vwf(home).arg("--json").args(args).stdin(Stdio::null()).output().expect("run vwf");
    (common::code(&out), common::parse(&out))
}

/// Every path under `root` (itself included) with its permission bits; links are not followed.
fn modes(root: &Path) -> Vec<(PathBuf, bool, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        let is_dir = meta.is_dir();
        out.push((path.clone(), is_dir, meta.permissions().mode() & 0o7777));
        if is_dir {
            todo.extend(std::fs::read_dir(&path).expect("read dir").map(|e| e.expect("entry").path()));
        }
    }
    out.sort();
    out
}

/// The home and everything in it are 0700 directories and 0600 files; it holds a run file.
fn assert_private(home: &Path) {
    let all = modes(home);
    let loose: Vec<String> = all
        .iter()
        .filter(|(_, is_dir, mode)| *mode != if *is_dir { 0o700 } else { 0o600 })
        .map(|(p, _, mode)| format!("{} {mode:04o}", p.display()))
        .collect();
    assert!(loose.is_empty(), "not private: {loose:#?}");
    let runs = home.join("workflow-runs");
    assert!(all.iter().any(|(p, d, _)| !d && p.parent() == Some(runs.as_path())), "no run file under {}: {all:?}", runs.display());
    assert!(all.iter().any(|(p, _, _)| p.ends_with("workflow-runs/.index")), "the index is checked too: {all:?}");
    let (code, doctor) = vwf_json(home, &["doctor"]);
    assert_eq!((code, &doctor["warnings"]), (0, &json!([])), "a home vwf made gives no warning: {doctor}");
}

#[test]
fn a_home_the_cli_creates_is_private_after_a_run() {
    let root = tempfile::tempdir().expect("tempdir");
    let home = root.path().join("new-home");
    let step_file = root.path().join("step-output");
    let (code, body) = vwf_json(&home, &["save", "made", &design(&step_file).to_string()]);
    assert_eq!(code, 0, "{body}");
    let (code, run) = vwf_json(&home, &["run", "made"]);
    assert_eq!((code, &run["status"]), (0, &json!("done")), "{run}");
    let (code, _) = vwf_json(&home, &["versions", "made"]);
    assert_eq!(code, 0);
    assert_private(&home);
    // A command step inherits vwf's umask: what it writes is private unless its script says
    // otherwise (`umask 022` at its top).
    let mode = std::fs::metadata(&step_file).expect("the step wrote its file").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "a step's own file");
}

/// A child killed when dropped, so a failed assertion leaves no server behind.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_home_vwf_serve_creates_is_private_after_a_run() {
    let root = tempfile::tempdir().expect("tempdir");
    let home = root.path().join("served-home");
    let mut server = Stopped(
        vwf(&home).args(["serve", "--bind", "127.0.0.1:0"]).stdin(Stdio::null()).stdout(Stdio::piped()).spawn().expect("start vwf serve"),
    );
    let mut stdout = BufReader::new(server.0.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("the server's first line");
    let base = line.split_whitespace().find(|w| w.starts_with("http://")).expect("the server's URL").trim_end_matches('/').to_string();
    let port: u16 = base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
    // The API token the server made at start, when it made one (its file is checked below too).
    let token = std::fs::read_to_string(home.join(format!("workflow-serve-{port}.token"))).ok();
    let client = reqwest::blocking::Client::builder().no_proxy().build().expect("client");
    let api = |path: &str| format!("{base}{}{path}", common::server::PREFIX);
    let post = |path: &str, body: Value| {
        let mut req = client.post(api(path)).json(&body);
        if let Some(token) = &token {
            req = req.bearer_auth(token.trim());
        }
        let res = req.send().expect("request");
        let status = res.status().as_u16();
        (status, res.json::<Value>().expect("JSON"))
    };
    let step_file = root.path().join("served-step-output");
    let (status, body) = post("/designs/made", json!({"graph": design(&step_file)}));
    assert!(status < 300, "{status} {body}");
    let (status, run) = post("/designs/made/run", json!({"input": {}}));
    assert_eq!((status, &run["status"]), (200, &json!("done")), "{run}");
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(server.0.id() as libc::pid_t, libc::SIGTERM) };
    let _ = server.0.wait();
    assert_private(&home);
}

#[test]
fn doctor_warns_about_a_loose_home_and_changes_nothing() {
    let root = tempfile::tempdir().expect("tempdir");
    let home = root.path().join("loose home");
    let step_file = root.path().join("step-output");
    assert_eq!(vwf_json(&home, &["save", "made", &design(&step_file).to_string()]).0, 0);
    let (_, run) = vwf_json(&home, &["run", "made"]);
    let run_file = home.join("workflow-runs").join(format!("{}.json", run["run_id"].as_str().expect("run id")));
    let (code, fresh) = vwf_json(&home, &["doctor"]);
    assert_eq!((code, &fresh["ok"], &fresh["warnings"]), (0, &json!(true), &json!([])), "a fresh home: {fresh}");

    // A home made by another program (0755) and a run file copied in as 0644.
    let chmod = |p: &Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    chmod(&home, 0o755);
    chmod(&run_file, 0o644);
    let before = modes(&home);
    for fix in [&[][..], &["--fix"][..]] {
        let (code, body) = vwf_json(&home, &[&["doctor"], fix].concat());
        assert_eq!((code, &body["ok"], &body["problems"]), (0, &json!(true), &json!([])), "warnings are not problems: {body}");
        let fix_command = format!("chmod -R go-rwx '{}'", home.display());
        let run_rel = format!("workflow-runs/{}", run_file.file_name().and_then(|n| n.to_str()).expect("name"));
        assert_eq!(
            body["warnings"],
            json!([
                {"path": ".", "mode": "0755", "problem": "mode 0755: group and others can read it", "fix": fix_command},
                {"path": run_rel, "mode": "0644", "problem": "mode 0644: group and others can read it", "fix": fix_command},
            ]),
            "{body}"
        );
        assert_eq!(modes(&home), before, "doctor {fix:?} changes no mode");
    }
    let text = vwf(&home).arg("doctor").output().expect("doctor");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("warning: .: mode 0755: group and others can read it; `chmod -R go-rwx '{}'`", home.display())),
        "{text}"
    );

    // After the fix the home is private and the warnings are gone.
    let status = Command::new("chmod").arg("-R").arg("go-rwx").arg(&home).status().expect("chmod");
    assert!(status.success());
    assert_eq!(vwf_json(&home, &["doctor"]).1["warnings"], json!([]));
}
