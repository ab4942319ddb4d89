//! Build-time facts the binary carries.
//!
//! - The web pages and templates are embedded (see `src/assets.rs`): a directory named here makes
//!   cargo rerun on any change inside it, so adding, editing or removing a file rebuilds.
//! - `VWF_COMMIT`, the short hash of the commit being built (`vwf --version` shows it), or
//!   `unknown` outside a git checkout (a source tarball, `cargo install` from a registry). Cargo
//!   reruns this script when HEAD moves: on a checkout (the HEAD file changes) and on a commit (the
//!   branch's ref file, or `packed-refs`, changes). Only files that exist are named, since cargo
//!   treats a missing file as always changed and would rebuild every time.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=../../web");
    println!("cargo::rerun-if-changed=../../examples");
    println!("cargo::rerun-if-env-changed=VWF_COMMIT");
    let commit = std::env::var("VWF_COMMIT").ok().filter(|c| !c.is_empty()).or_else(git_commit);
    println!("cargo::rustc-env=VWF_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
}

/// `git rev-parse --short HEAD`, naming the files whose change means HEAD moved.
fn git_commit() -> Option<String> {
    let hash = git(&["rev-parse", "--short", "HEAD"])?;
    let git_dir = PathBuf::from(git(&["rev-parse", "--path-format=absolute", "--git-dir"])?);
    let common = PathBuf::from(git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?);
    watch(&git_dir.join("HEAD"));
    watch(&common.join("packed-refs"));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(&common.join(branch));
    }
    Some(hash)
}

fn watch(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// A git command's trimmed standard output, or `None` when git is missing or fails.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_string())
}
