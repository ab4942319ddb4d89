//! `vwf doctor`: checks a home the way a careful user would, and with `--fix` repairs what is
//! safe to repair; plus the same repairs, quietly, when a server or daemon starts.
//!
//! What it checks: every design, run and schedule file parses as what it is meant to be; the run
//! index matches the run files; no temp or lock file is left by a writer that was killed; no
//! stray entry (a file the store does not keep, a design or run path that is a directory) sits
//! in the store's directories. A run parses by the runner's own rule (`runner::parse_run`). Only
//! the store's own debris is ever repaired (see `store::tidy` for what counts as provably stale);
//! a file a user may want back is reported, never removed. A check without `--fix` writes
//! nothing.
//!
//! It also warns (never fixes, `--fix` included: the modes are the user's) when the home, the
//! store's directories or anything in them, or the config, can be read or written by group or
//! others: vwf creates them 0700 and 0600 (SPEC §17), so a looser mode comes from elsewhere (a home
//! made by another program, a copy, a chmod). Warnings leave `ok` as it is.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use vwf_store::Wait;

use serde_json::{Value, json};
use vwf_core::design::Design;
use vwf_core::names::DesignName;

use vwf_runtime::app::App;
use vwf_runtime::schedules;
use vwf_store::{FileStore, Finding, Store, StoreError};

/// What a check found in a home.
pub struct Report {
    pub designs: usize,
    pub runs: usize,
    pub schedules: usize,
    pub problems: Vec<Finding>,
    /// Paths group or others can read or write.
    pub warnings: Vec<Exposed>,
}

/// A path of the home (relative; `.` is the home) whose mode lets group or others read or write
/// it; for a file, the problem also counts the other open files of its directory.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Exposed {
    pub path: String,
    pub mode: String,
    pub problem: String,
    /// The command that makes the whole home private.
    pub fix: String,
}

impl Report {
    /// Whether nothing is left to repair.
    pub fn ok(&self) -> bool {
        self.problems.iter().all(|p| p.fixed.is_some())
    }

    pub fn to_json(&self, home: &Path) -> Value {
        json!({
            "ok": self.ok(),
            "home": home,
            "checked": {"designs": self.designs, "runs": self.runs, "schedules": self.schedules},
            "problems": self.problems,
            "warnings": self.warnings,
        })
    }

    pub fn to_text(&self, home: &Path) -> String {
        let mut text = format!("Checked {}: {} designs, {} runs, {} schedules.", home.display(), self.designs, self.runs, self.schedules);
        for p in &self.problems {
            let what = p.fixed.as_deref().unwrap_or("left as it is");
            text.push_str(&format!("\n  {}: {} — {what}", p.path, p.problem));
        }
        for w in &self.warnings {
            text.push_str(&format!("\n  warning: {}: {}; `{}` makes the home private", w.path, w.problem, w.fix));
        }
        let fixed = self.problems.iter().filter(|p| p.fixed.is_some()).count();
        text.push_str(&match (self.problems.len(), fixed) {
            (0, _) => "\nNo problems found.".to_string(),
            (n, 0) => format!("\n{n} problems; `vwf doctor --fix` repairs the store's own files (temp, lock and index files)."),
            (n, f) => format!("\n{n} problems, {f} fixed."),
        });
        text
    }
}

/// Checks the home of `app`; with `fix`, repairs the store's debris first.
pub fn examine(app: &App, fix: bool) -> Report {
    let store = FileStore::new(app.home.clone());
    let mut problems = store.tidy(fix);
    problems.extend(store.strays());
    store.schedule_strays(&mut problems);
    let designs = app.store.list_designs().wait().unwrap_or_default();
    for name in &designs {
        let Ok(name) = DesignName::parse(name) else { continue };
        let path = FileStore::shown_design_path(&name);
        let problem = match app.store.load_design(&name).wait() {
            Ok(graph) => Design::from_value(&graph).err().map(|issues| {
                let first = issues.first().map_or("", |i| i.message.as_str());
                format!("is not a design: {first}")
            }),
            Err(e) => Some(unreadable(e)),
        };
        problems.extend(problem.map(|problem| Finding { path, problem, fixed: None }));
    }
    let runs = store.run_ids();
    for id in &runs {
        let problem = match store.read_run(id).wait() {
            Ok(value) => vwf_runtime::runner::parse_run(id, value).err().map(|e| e.to_string()),
            Err(StoreError::NotFound(_)) => None, // deleted meanwhile
            Err(e) => Some(unreadable(e)),
        };
        problems.extend(problem.map(|problem| Finding { path: FileStore::shown_run_path(id), problem, fixed: None }));
    }
    let jobs = schedules::list(app).unwrap_or_default();
    for (job_id, why) in jobs.iter().filter_map(|j| j.as_ref().err()) {
        problems.push(Finding { path: FileStore::shown_job_path(job_id), problem: why.clone(), fixed: None });
    }
    let warnings = exposed(&app.home);
    Report { designs: designs.len(), runs: runs.len(), schedules: jobs.len(), problems, warnings }
}

/// The read and write bits of group and others.
const OPEN_BITS: u32 = 0o066;

/// What of the home group or others can read or write: the home itself, the config, each of the
/// store's directories (at any depth) by itself, and its files by the first of them (with a
/// count), so a home of many runs gives a few lines. Symbolic links are not followed.
fn exposed(home: &Path) -> Vec<Exposed> {
    let fix = format!("chmod -R go-rwx {}", shell_word(&home.display().to_string()));
    let mut out = Vec::new();
    let mut note = |path: String, mode: u32, more: usize| {
        let mut problem = format!("mode {:04o}: {}", mode & 0o7777, who(mode));
        if more > 0 {
            problem.push_str(&format!(" (and {more} more files beside it)"));
        }
        out.push(Exposed { path, mode: format!("{:04o}", mode & 0o7777), problem, fix: fix.clone() });
    };
    let mode_of = |p: &Path| std::fs::symlink_metadata(p).ok().filter(|m| !m.file_type().is_symlink()).map(|m| m.permissions().mode());
    if let Some(mode) = mode_of(home).filter(|m| m & OPEN_BITS != 0) {
        note(".".to_string(), mode, 0);
    }
    let config = vwf_exec::config::Config::path(home);
    if let Some(mode) = mode_of(&config).filter(|m| m & OPEN_BITS != 0) {
        note(relative(home, &config), mode, 0);
    }
    let mut dirs: Vec<std::path::PathBuf> = vwf_store::fs::HOME_DIRS.iter().map(|d| home.join(d)).collect();
    while let Some(dir) = dirs.pop() {
        let Some(mode) = mode_of(&dir) else { continue };
        if mode & OPEN_BITS != 0 {
            note(relative(home, &dir), mode, 0);
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut open_files: Vec<(std::path::PathBuf, u32)> = Vec::new();
        let mut subdirs = Vec::new();
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                subdirs.push(entry.path());
            } else if meta.is_file() && meta.permissions().mode() & OPEN_BITS != 0 {
                open_files.push((entry.path(), meta.permissions().mode()));
            }
        }
        open_files.sort();
        if let Some((first, mode)) = open_files.first() {
            note(relative(home, first), *mode, open_files.len() - 1);
        }
        subdirs.sort_by(|a, b| b.cmp(a));
        dirs.extend(subdirs);
    }
    out
}

/// Who a mode lets in: "group and others can read it", "group can read and write it, others
/// can read it".
fn who(mode: u32) -> String {
    let can = |r: u32, w: u32| match (mode & r != 0, mode & w != 0) {
        (true, true) => "read and write",
        (true, false) => "read",
        (false, true) => "write",
        (false, false) => "",
    };
    match (can(0o040, 0o020), can(0o004, 0o002)) {
        (group, others) if group == others => format!("group and others can {group} it"),
        (group, "") => format!("group can {group} it"),
        ("", others) => format!("others can {others} it"),
        (group, others) => format!("group can {group} it, others can {others} it"),
    }
}

/// `text` as one word for a POSIX shell: as it is when it needs no quoting, else single-quoted.
fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn relative(home: &Path, path: &Path) -> String {
    path.strip_prefix(home).unwrap_or(path).display().to_string()
}

/// A store error as a problem of the file it names (the file is already in the finding's path).
fn unreadable(e: StoreError) -> String {
    match e {
        StoreError::Corrupt { message, .. } => format!("is not valid JSON: {message}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_say_who_can_read_or_write() {
        assert_eq!(who(0o755), "group and others can read it");
        assert_eq!(who(0o664), "group can read and write it, others can read it");
        assert_eq!(who(0o640), "group can read it");
        assert_eq!(who(0o602), "others can write it");
    }

    #[test]
    fn the_fix_quotes_the_home_for_the_shell() {
        assert_eq!(shell_word("/home/ana/.hermes"), "/home/ana/.hermes");
        assert_eq!(shell_word("/tmp/my home"), "'/tmp/my home'");
        assert_eq!(shell_word("/tmp/it's"), "'/tmp/it'\\''s'");
    }

    #[test]
    fn a_private_home_gives_no_warning_and_loose_modes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let store = FileStore::new(home.to_path_buf());
        let id = store.allocate_run_id().wait().unwrap();
        store.import_run(&id, &json!({"run_id": id.as_str()})).wait().unwrap();
        // Whatever the umask of the test process, the store made everything private.
        std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(exposed(home).is_empty(), "{:?}", exposed(home).iter().map(|w| &w.path).collect::<Vec<_>>());
        let runs = home.join("workflow-runs");
        std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o750)).unwrap();
        std::fs::write(home.join("visual-workflow.toml"), "").unwrap();
        std::fs::set_permissions(home.join("visual-workflow.toml"), std::fs::Permissions::from_mode(0o604)).unwrap();
        let paths: Vec<(String, String)> = exposed(home).into_iter().map(|w| (w.path, w.mode)).collect();
        assert_eq!(paths, [("visual-workflow.toml".to_string(), "0604".to_string()), ("workflow-runs".to_string(), "0750".to_string())]);
    }
}
