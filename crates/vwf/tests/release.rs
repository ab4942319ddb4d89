//! What a packaged `vwf` ships besides the commands: `--version` with the commit, shell
//! completions and man pages, all generated from the one clap definition.
//!
//! The list of subcommands each check expects is read from `vwf --help`, so a subcommand added
//! later is covered without editing this file.

use crate::common;

use std::path::Path;
use std::process::Command as Std;

use assert_cmd::Command;
use common::{Home, code, parse, repo};

fn vwf() -> Command {
    let mut c = Command::cargo_bin("vwf").expect("vwf binary");
    c.env_remove("VWF_HOME").env_remove("HERMES_HOME");
    c
}

fn stdout(args: &[&str]) -> String {
    let out = vwf().args(args).output().expect("run vwf");
    assert!(out.status.success(), "vwf {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// Every subcommand `vwf --help` lists (less `help`, which clap adds and documents itself).
fn subcommands() -> Vec<String> {
    let help = stdout(&["--help"]);
    let section = help.split("Commands:\n").nth(1).expect("a Commands section");
    let names: Vec<String> = section
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    for known in ["list", "run", "serve", "schedule", "completions", "man"] {
        assert!(names.iter().any(|n| n == known), "{known} missing from --help: {names:?}");
    }
    names
}

/// Whether a program can be started (for the shells and `man`, which may not be installed).
fn installed(program: &str) -> bool {
    Std::new(program).arg("--version").output().is_ok()
}

/// Runs `program -n file`, the shell's own syntax check.
fn syntax_ok(program: &str, script: &Path) {
    let out = Std::new(program).arg("-n").arg(script).output().expect("run the shell");
    assert!(out.status.success(), "{program} -n rejects the script: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let head = Std::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(repo()).output();
    let commit = match head {
        Ok(out) if out.status.success() => String::from_utf8(out.stdout).expect("UTF-8").trim().to_string(),
        _ => "unknown".to_string(),
    };
    let expected = format!("vwf {} ({commit})\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(stdout(&["--version"]), expected);
}

#[test]
fn completions_for_every_shell_name_every_subcommand() {
    let subs = subcommands();
    let dir = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout(&["completions", shell]);
        for sub in &subs {
            assert!(script.contains(sub.as_str()), "{shell} completions do not mention {sub}");
        }
        let path = dir.path().join(format!("vwf.{shell}"));
        std::fs::write(&path, &script).expect("write the script");
        match shell {
            "bash" => syntax_ok("bash", &path),
            "zsh" | "fish" if installed(shell) => syntax_ok(shell, &path),
            "zsh" | "fish" => eprintln!("{shell} is not installed: its script is checked for the subcommands only"),
            _ => {}
        }
    }
    // A shell clap_complete does not know is a usage error, not a crash.
    let out = vwf().args(["completions", "tcsh"]).output().expect("run vwf");
    assert_eq!(code(&out), 2);
}

/// The man page as `man` renders it, or the roff source when `man` is missing.
fn rendered(page: &Path) -> String {
    let roff = std::fs::read_to_string(page).expect("read the page");
    assert!(roff.starts_with(".ie \\n(.g .ds Aq") || roff.contains("\n.TH "), "not roff: {}", page.display());
    if !installed("man") {
        eprintln!("man is not installed: the roff source is checked instead");
        return roff.replace("\\-", "-");
    }
    let out = Std::new("man").arg("-l").arg(page).env("MANPAGER", "cat").env("MANWIDTH", "100").output().expect("run man");
    assert!(out.status.success(), "man -l {} failed: {}", page.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn man_page_renders_and_lists_every_subcommand() {
    let subs = subcommands();
    let dir = tempfile::tempdir().expect("tempdir");

    // Printed: one page, the top level, whose SUBCOMMANDS section names each.
    let printed = dir.path().join("printed.1");
    std::fs::write(&printed, stdout(&["man"])).expect("write the page");
    let text = rendered(&printed);
    assert!(text.contains("SUBCOMMANDS"), "no SUBCOMMANDS section:\n{text}");
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "the page does not carry the version");
    for sub in &subs {
        assert!(text.contains(&format!("vwf-{sub}(1)")), "the man page does not list {sub}");
    }

    // Written: vwf.1 plus a page per subcommand, each of which renders.
    let pages = dir.path().join("man1");
    let home = Home::new();
    let out = home.vwf().args(["--json", "man"]).arg(&pages).output().expect("run vwf");
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(parse(&out)["path"], pages.join("vwf.1").to_str().expect("UTF-8 path"));
    assert_eq!(std::fs::read_to_string(pages.join("vwf.1")).ok(), std::fs::read_to_string(&printed).ok());
    for sub in &subs {
        let text = rendered(&pages.join(format!("vwf-{sub}.1")));
        assert!(text.contains(&format!("vwf-{sub}")), "vwf-{sub}.1 does not name itself");
    }
    assert!(home.files().is_empty(), "writing man pages touched the home");

    // A directory that cannot be made is an error in JSON, not a crash.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "x").expect("write");
    let out = vwf().args(["--json", "man"]).arg(&blocked).output().expect("run vwf");
    assert_eq!(code(&out), 70);
    assert_eq!(parse(&out)["ok"], false);
}
