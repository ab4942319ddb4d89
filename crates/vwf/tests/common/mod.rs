//! Helpers shared by the integration tests: they drive the real `vwf` binary in a temporary home.
#![allow(dead_code)]

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
        c.env_remove("VWF_HOME").env_remove("HERMES_HOME").env_remove("VWF_NOW");
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
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}
