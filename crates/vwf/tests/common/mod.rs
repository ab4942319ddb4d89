//! Helpers shared by the integration tests: they drive the real `vwf` binary in a temporary home.
#![allow(dead_code)]

pub mod hermes;
pub mod peer;
pub mod pg;
pub mod server;

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// A fresh home directory for one test.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        Home { dir: tempfile::tempdir().expect("tempdir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `vwf --home <home>` with a clean environment for the variables vwf reads.
    pub fn vwf(&self) -> Command {
        let mut c = Command::cargo_bin("vwf").expect("vwf binary");
        c.arg("--home").arg(self.path());
        c.env_remove("VWF_HOME").env_remove("HERMES_HOME").env_remove("VWF_NOW").env_remove("VWF_DATABASE_URL");
        c
    }

    /// Runs `vwf --json <args>` and parses standard output; returns (exit code, JSON).
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.vwf().arg("--json").args(args).output().expect("run vwf");
        (code(&out), parse(&out))
    }

    /// Same, with `VWF_NOW` pinned to `now` (RFC 3339).
    pub fn json_at(&self, now: &str, args: &[&str]) -> (i32, Value) {
        let out = self.vwf().env("VWF_NOW", now).arg("--json").args(args).output().expect("run vwf");
        (code(&out), parse(&out))
    }

    /// Saves `graph` as design `name`; panics if the save is refused.
    pub fn save(&self, name: &str, graph: &Value) {
        let (code, body) = self.json(&["save", name, &graph.to_string()]);
        assert_eq!(code, 0, "save {name} refused: {body}");
    }

    /// Every file under the home, relative, sorted (to check that a refused request wrote nothing).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        walk(self.path(), self.path(), &mut out);
        out.sort();
        out
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.path().join("workflow-runs")
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap_or(&p).to_path_buf());
        }
    }
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn parse(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

/// trigger → a command that fails (`boom`, exit code 3, `broken` on standard error).
pub fn failing() -> Value {
    serde_json::json!({
        "nodes": [
            {"id": "start", "type": "trigger", "mode": "manual"},
            {"id": "boom", "type": "command", "argv": ["sh", "-c", "echo broken >&2; exit 3"]}
        ],
        "edges": [{"from": "start", "to": "boom"}]
    })
}

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Every file under a home with its bytes, to prove that a refused request changed nothing.
pub fn snapshot(home: &Home) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    home.files()
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(home.path().join(&rel)).unwrap_or_default();
            (rel, bytes)
        })
        .collect()
}

/// The run file of `run_id` as saved (the run result plus `plan` and `history`).
pub fn run_file(home: &Home, run_id: &str) -> Value {
    let path = home.runs_dir().join(format!("{run_id}.json"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// `now` moved on by `minutes` (both RFC 3339), for driving `VWF_NOW` through a scenario.
pub fn later(now: &str, minutes: i64) -> String {
    let t = chrono::DateTime::parse_from_rfc3339(now).unwrap_or_else(|e| panic!("bad time {now:?}: {e}"));
    (t + chrono::Duration::minutes(minutes)).to_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The repository's root directory.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The python of `scripts/python-env <set>` (`interop`, `fuzz`, `build`, `wheel`), or `None`, with the reason
/// printed, when pip cannot reach PyPI (the only case a test may skip for).
pub fn python_env(set: &str) -> Option<PathBuf> {
    python_env_with(set, &[])
}

/// [`python_env`] with variables for `scripts/python-env` (`VWF_PY_VENV`, `VWF_WHEEL`).
pub fn python_env_with(set: &str, vars: &[(&str, &Path)]) -> Option<PathBuf> {
    let mut command = std::process::Command::new(repo().join("scripts/python-env"));
    command.arg(set);
    for (name, value) in vars {
        command.env(name, value);
    }
    let out = command.output().expect("run scripts/python-env");
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let path = stdout.lines().last().expect("python-env prints the python path").trim().to_string();
            Some(PathBuf::from(path))
        }
        Some(3) => {
            eprintln!("SKIPPED: pip cannot reach PyPI, so the {set} Python packages are not installed:\n{stderr}");
            None
        }
        _ => panic!("scripts/python-env {set} failed ({}):\n{stderr}", out.status),
    }
}
