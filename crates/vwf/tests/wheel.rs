//! The `visual-workflow` wheel, as a Hermes user installs it: `maturin build` makes the wheel
//! from `pyproject.toml` (the `vwf` binary in its scripts, the `vwf_hermes` package, the
//! `hermes_agent.plugins` entry point); pip installs it with hermes-agent 0.19.0 into a fresh
//! virtual environment; then `tests/python/hermes_interop.py entrypoint` checks, through Hermes's
//! own plugin loader and with nothing in a plugins folder and no `VWF_BIN`, that the plugin is
//! discovered and finds the environment's binary, the five tools dispatch, `/workflow list`
//! answers, the cron jobs it makes deliver where the designs say, and the README's MCP snippet
//! still reaches `vwf mcp`.
//!
//! The wheel is built with the dev profile into the target directory the install test uses
//! (`target/tmp/install/target`, the same package and features), so runs after the first only
//! relink. The source distribution is checked to carry every file the binary embeds.
//! Skips, saying why, only when pip cannot reach PyPI.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use serde_json::Value;

use common::{hermes, repo};

/// Where the wheel and the environment live for this test run.
fn work() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("wheel")
}

/// `maturin ARGS` from the repository root, building in the install test's target directory.
fn maturin(args: &[&str]) -> Option<std::process::Output> {
    let python = common::python_env("build")?;
    let started = Instant::now();
    let out = Command::new(python)
        .args(["-m", "maturin"])
        .args(args)
        .current_dir(repo())
        .env("CARGO_TARGET_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("install/target"))
        .output()
        .expect("run maturin");
    assert!(out.status.success(), "maturin {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("maturin {} took {:.1} s", args[0], started.elapsed().as_secs_f64());
    Some(out)
}

/// The one file `dir` holds with `extension`.
fn only_file(dir: &Path, extension: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read the output directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(extension))
        .collect();
    assert_eq!(found.len(), 1, "one {extension} in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

/// The environment's python and its `vwf`, with the freshly built wheel installed.
fn environment() -> Option<&'static (PathBuf, PathBuf)> {
    static ENV: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    ENV.get_or_init(|| {
        let dist = work().join("dist");
        let venv = work().join("venv");
        for dir in [&dist, &venv] {
            if dir.exists() {
                std::fs::remove_dir_all(dir).expect("clear the last run");
            }
        }
        maturin(&["build", "--profile", "dev", "--out", dist.to_str()?])?;
        let wheel = only_file(&dist, ".whl");
        let python = common::python_env_with("wheel", &[("VWF_PY_VENV", &venv), ("VWF_WHEEL", &wheel)])?;
        Some((python, venv.join("bin/vwf")))
    })
    .as_ref()
}

fn report() -> Option<&'static Value> {
    static REPORT: OnceLock<Option<Value>> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let (python, vwf) = environment()?;
            let readme = repo().join("python/vwf_hermes/README.md");
            let example = common::examples_dir().join("draft-review.designer.json");
            Some(hermes::run_script(python, "hermes_interop.py", &[vwf, Path::new("entrypoint"), &readme, &example]))
        })
        .as_ref()
}

#[test]
fn the_wheel_installs_vwf_into_the_environment_scripts() {
    let Some((_, vwf)) = environment() else { return };
    let out = Command::new(vwf).arg("--version").output().expect("run the installed vwf");
    assert!(out.status.success());
    let built = Command::new(env!("CARGO_BIN_EXE_vwf")).arg("--version").output().expect("run vwf");
    assert_eq!(String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&built.stdout), "the same vwf, commit included");
}

#[test]
fn hermes_discovers_the_installed_plugin_by_its_entry_point() {
    let (Some(report), Some((_, vwf))) = (report(), environment()) else { return };
    hermes::assert_plugin_registered(report, "entrypoint", vwf);
    let file = report["plugin"]["plugin_file"].as_str().expect("the module's file");
    assert!(file.contains("site-packages/vwf_hermes/"), "imported from the installed package, not the repository: {file}");
}

#[test]
fn the_installed_plugin_makes_cron_jobs_that_deliver_where_the_design_says() {
    let Some(report) = report() else { return };
    hermes::assert_cron_jobs_deliver(report);
}

#[test]
fn the_readme_mcp_snippet_reaches_the_installed_vwf() {
    let Some(report) = report() else { return };
    hermes::assert_mcp_reaches_vwf(report);
}

/// A source distribution builds the same binary: it carries the crates, and every file of
/// `web/` and `examples/` the binary embeds, and the plugin.
#[test]
fn the_sdist_carries_every_file_the_binary_embeds() {
    let out_dir = work().join("sdist");
    if out_dir.exists() {
        std::fs::remove_dir_all(&out_dir).expect("clear the last run");
    }
    let Some(_) = maturin(&["sdist", "--out", out_dir.to_str().expect("a UTF-8 path")]) else { return };
    let sdist = only_file(&out_dir, ".tar.gz");
    let listing = Command::new("tar").arg("tzf").arg(&sdist).output().expect("tar");
    assert!(listing.status.success());
    let listed: Vec<String> =
        String::from_utf8_lossy(&listing.stdout).lines().filter_map(|l| l.split_once('/').map(|(_, rest)| rest.to_string())).collect();
    let mut wanted = Vec::new();
    for dir in ["web", "examples", "python/vwf_hermes"] {
        collect(&repo().join(dir), dir, &mut wanted);
    }
    wanted.extend(
        ["crates/vwf/Cargo.toml", "crates/vwf/build.rs", "crates/vwf-core/Cargo.toml", "Cargo.lock", "pyproject.toml"].map(String::from),
    );
    for file in &wanted {
        assert!(listed.contains(file), "the sdist lacks {file}");
    }
    assert!(wanted.iter().filter(|f| f.starts_with("web/")).count() >= 5, "{wanted:?}");
}

/// Every file under `dir` (skipping caches), as paths relative to the repository.
fn collect(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("read dir").filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}/{name}");
        if entry.file_type().expect("file type").is_dir() {
            if name != "__pycache__" {
                collect(&entry.path(), &path, out);
            }
        } else {
            out.push(path);
        }
    }
}
