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

use std::path::Path;

use serde_json::{Value, json};
use vwf_core::design::Design;
use vwf_core::names::DesignName;

use crate::app::App;
use crate::schedules;
use crate::store::{FileStore, Finding, Store, StoreError};

/// What a check found in a home.
pub struct Report {
    pub designs: usize,
    pub runs: usize,
    pub schedules: usize,
    pub problems: Vec<Finding>,
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
        })
    }

    pub fn to_text(&self, home: &Path) -> String {
        let mut text = format!("Checked {}: {} designs, {} runs, {} schedules.", home.display(), self.designs, self.runs, self.schedules);
        for p in &self.problems {
            let what = p.fixed.as_deref().unwrap_or("left as it is");
            text.push_str(&format!("\n  {}: {} — {what}", p.path, p.problem));
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
    let designs = app.store.list_designs().unwrap_or_default();
    for name in &designs {
        let Ok(name) = DesignName::parse(name) else { continue };
        let path = FileStore::shown_design_path(&name);
        let problem = match app.store.load_design(&name) {
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
        let problem = match store.read_run(id) {
            Ok(value) => crate::runner::parse_run(id.as_str(), value).err().map(|e| e.to_string()),
            Err(StoreError::NotFound(_)) => None, // deleted meanwhile
            Err(e) => Some(unreadable(e)),
        };
        problems.extend(problem.map(|problem| Finding { path: FileStore::shown_run_path(id), problem, fixed: None }));
    }
    let jobs = schedules::list(app).unwrap_or_default();
    for (job_id, why) in jobs.iter().filter_map(|j| j.as_ref().err()) {
        problems.push(Finding { path: FileStore::shown_job_path(job_id), problem: why.clone(), fixed: None });
    }
    Report { designs: designs.len(), runs: runs.len(), schedules: jobs.len(), problems }
}

/// A store error as a problem of the file it names (the file is already in the finding's path).
fn unreadable(e: StoreError) -> String {
    match e {
        StoreError::Corrupt { message, .. } => format!("is not valid JSON: {message}"),
        other => other.to_string(),
    }
}

/// Removes what killed writers left (see `store::tidy`) when a server or daemon starts, and says
/// on standard error what it removed; `who` names the caller in those lines.
pub fn tidy_at_start(home: &Path, who: &str) {
    for finding in FileStore::new(home.to_path_buf()).tidy(true) {
        if let Some(fixed) = &finding.fixed {
            eprintln!("{who}: {}: {} — {fixed}", finding.path, finding.problem);
        }
    }
}
