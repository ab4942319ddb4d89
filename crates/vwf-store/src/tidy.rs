//! What writers killed mid-write leave in a file store, found and, when asked, removed: temp
//! files of atomic writes, lock files of run ids reserved and never written, index lines of runs
//! that never got a file, and an index that does not match the run files.
//!
//! Invariants:
//! - Only what is provably stale goes. A run's temp file (`.<id>.json.tmp`) and its index line
//!   go only while this process holds that run's lock (or the run has no lock file, so no writer
//!   can hold it); an index temp file only under the index lock. Temp files no lock covers
//!   (designs, schedules) and lock files of runs without a file go once older than
//!   [`STALE_AFTER`]: a write holds its temp file for milliseconds, an id is locked microseconds
//!   after it is reserved, and removing a temp file under a writer that is somehow still alive
//!   only fails that write (its rename finds nothing), it never damages a file.
//! - A lock file is removed while holding its lock, and only when its run has no file.
//! - Files a user may want back (designs, runs, schedules that do not parse) are reported by
//!   `vwf doctor`, never removed.

use std::collections::HashSet;
use std::fs::{self, File, TryLockError};
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use vwf_core::names::{DesignName, RunId};

use super::fs::FileStore;
use super::index;

/// How old a temp or lock file that no lock proves stale must be before it is removed.
pub const STALE_AFTER: Duration = Duration::from_secs(600);

/// One problem found in a home.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Relative to the home, e.g. `workflow-runs/.index`.
    pub path: String,
    pub problem: String,
    /// What was done about it; `None` when it was left as it is.
    pub fixed: Option<String>,
}

/// Directories whose stray temp files are removed by age (their writers take no lock).
const AGED_DIRS: [&str; 2] = ["workflow-designs", "workflow-schedules"];

impl FileStore {
    /// The debris of killed writers and the state of the run index; with `fix`, removes what is
    /// provably stale and repairs the index. Reading a home that does not exist finds nothing.
    pub fn tidy(&self, fix: bool) -> Vec<Finding> {
        let mut found = Vec::new();
        // Held until the index is repaired, so no writer takes these runs meanwhile.
        let mut idle: Vec<Idle> = Vec::new();
        let runs = self.runs_dir();
        self.tidy_run_temps(&runs, fix, &mut found);
        self.tidy_journals(&runs, fix, &mut found);
        let files: HashSet<RunId> = self.run_ids().into_iter().collect();
        self.tidy_locks(&files, fix, &mut found);
        self.tidy_index(&runs, &files, fix, &mut idle, &mut found);
        for dir in AGED_DIRS {
            let dir = self.home.join(dir);
            for (name, path) in entries(&dir) {
                if is_temp(&name) && older_than(&path, STALE_AFTER) {
                    remove(self, &path, "a temp file of a write that was killed", fix, &mut found);
                }
            }
        }
        drop(idle);
        found
    }

    /// Entries of the store's own directories that are none of its files, and design, run or
    /// lock paths that are directories: reported, never removed (they may be a user's). The
    /// schedules directory is checked by its owner through [`FileStore::strays_in`].
    pub fn strays(&self) -> Vec<Finding> {
        let mut found = Vec::new();
        let design = |name: &str| name.strip_suffix(".json").is_some_and(|n| DesignName::parse(n).is_ok());
        self.strays_in(&self.designs_dir(), "design", design, &[], &mut found);
        // The index and its lock report their own damage (a directory among it); the commit
        // logs are recovered by every store handle.
        let index_files = [
            index::INDEX_FILE,
            index::INDEX_LOCK_FILE,
            super::fs::LOCKS_DIR,
            super::fs::WAITING_DIR,
            super::fs::KEYS_DIR,
            super::fs::FLOW_DIR,
            super::commit::COMMIT_DIR,
            super::stats::STATS_FILE,
            super::stats::STATS_LOCK,
        ];
        let run_file = |name: &str| index::run_id_of_file_name(name).is_some() || journal_of(name).is_some();
        self.strays_in(&self.runs_dir(), "run", run_file, &index_files, &mut found);
        let lock = |name: &str| name.strip_suffix(".lock").is_some_and(|n| RunId::parse(n).is_ok());
        self.strays_in(&self.locks_dir(), "run lock", lock, &[], &mut found);
        found
    }

    /// The entries of `dir` that are neither temp files, nor named `kept`, nor named as `own`
    /// says (a `what` file), and the `own` names that are directories; sorted by path.
    pub fn strays_in(&self, dir: &Path, what: &str, own: impl Fn(&str) -> bool, kept: &[&str], found: &mut Vec<Finding>) {
        let mut strays: Vec<Finding> = Vec::new();
        for (name, path) in entries(dir) {
            let problem = if is_temp(&name) || kept.contains(&name.as_str()) {
                continue;
            } else if !own(&name) {
                format!("is not a {what} file nor any file the store keeps here")
            } else if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                format!("is a directory, not a {what} file")
            } else {
                continue;
            };
            strays.push(Finding { path: shown(self, &path), problem, fixed: None });
        }
        strays.sort_by(|a, b| a.path.cmp(&b.path));
        found.extend(strays);
    }

    /// The ids of every run file (read from the directory, not the index), sorted.
    pub fn run_ids(&self) -> Vec<RunId> {
        let mut ids: Vec<RunId> = entries(&self.runs_dir())
            .into_iter()
            .filter_map(|(name, _)| index::run_id_of_file_name(&name))
            .filter(|id| self.run_path(id).is_file())
            .collect();
        ids.sort();
        ids
    }

    /// `.<id>.json.tmp` of runs nobody writes, the index's temp files, other temp files by age.
    fn tidy_run_temps(&self, runs: &Path, fix: bool, found: &mut Vec<Finding>) {
        for (name, path) in entries(runs) {
            if !is_temp(&name) {
                continue;
            }
            let why = "a temp file of a write that was killed";
            if let Some(id) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".json.tmp")).and_then(|n| RunId::parse(n).ok()) {
                if let Some(_idle) = self.idle(&id) {
                    remove(self, &path, why, fix, found);
                }
            } else if name.starts_with(&format!(".{}.", index::INDEX_FILE)) {
                if let Ok(_lock) = index::lock_index(runs) {
                    remove(self, &path, why, fix, found);
                }
            } else if older_than(&path, STALE_AFTER) {
                remove(self, &path, why, fix, found);
            }
        }
    }

    /// Journals a reader ignores (see `journal.rs`): of a run without a file, or naming a run file
    /// that was written whole since (its writer died before removing it). Removed under the
    /// run's lock. A journal of its run file is part of the run and stays.
    fn tidy_journals(&self, runs: &Path, fix: bool, found: &mut Vec<Finding>) {
        for (name, path) in entries(runs) {
            let Some(id) = journal_of(&name) else { continue };
            let Some(_idle) = self.idle(&id) else { continue };
            let live = match fs::read(self.run_path(&id)) {
                Ok(bytes) => super::journal::read(&path, &bytes).is_ok_and(|parts| parts.is_some()),
                Err(_) => false,
            };
            if !live {
                remove(self, &path, "the journal of a run saved whole since (a writer was killed before removing it)", fix, found);
            }
        }
    }

    /// Lock files of runs that have no file: ids reserved by a writer that died before its first
    /// write, or runs whose file was deleted.
    fn tidy_locks(&self, files: &HashSet<RunId>, fix: bool, found: &mut Vec<Finding>) {
        for (name, path) in entries(&self.locks_dir()) {
            let Some(id) = name.strip_suffix(".lock").and_then(|n| RunId::parse(n).ok()) else { continue };
            if files.contains(&id) || self.run_path(&id).exists() || !older_than(&path, STALE_AFTER) {
                continue;
            }
            // Checked again under the lock: the run may have been written since the check above.
            if let Some(_idle) = self.idle(&id).filter(|_| !self.run_path(&id).exists()) {
                remove(self, &path, "the lock file of a run that has no file", fix, found);
            }
        }
    }

    /// The whole index against the run files: damage, runs missing from it, lines of runs that
    /// never got a file (or whose file was deleted) once nobody holds their lock.
    fn tidy_index(&self, runs: &Path, files: &HashSet<RunId>, fix: bool, idle: &mut Vec<Idle>, found: &mut Vec<Finding>) {
        let damage = match index::inspect(runs) {
            Ok(damage) => damage,
            Err(e) => {
                found.push(Finding {
                    path: shown(self, &runs.join(index::INDEX_FILE)),
                    problem: format!("cannot be checked: {e}"),
                    fixed: None,
                });
                return;
            }
        };
        let indexed = index::salvage(runs);
        let indexed_set: HashSet<&RunId> = indexed.iter().collect();
        let missing: Vec<&RunId> = files.iter().filter(|id| !indexed_set.contains(id)).collect();
        let mut stale: HashSet<RunId> = HashSet::new();
        for id in indexed.iter().filter(|id| !files.contains(*id)) {
            if let Some(guard) = self.idle(id) {
                // `files` is a snapshot: a run created and first written since then has a file
                // now, and its line must stay. Checked under the lock, so no write comes later.
                if self.run_path(id).exists() {
                    continue;
                }
                idle.push(guard);
                stale.insert(id.clone());
            }
        }
        let mut problems = Vec::new();
        if let Some(damage) = &damage {
            problems.push(damage.to_string());
        }
        if !missing.is_empty() && !matches!(damage, Some(index::Damage::Missing | index::Damage::Empty)) {
            problems.push(format!("lacks {} run files ({})", missing.len(), sample(missing.iter().copied())));
        }
        if !stale.is_empty() {
            problems.push(format!("lists {} runs that have no file ({})", stale.len(), sample(stale.iter())));
        }
        if problems.is_empty() {
            return;
        }
        let path = runs.join(index::INDEX_FILE);
        let reorder = damage.is_some() || !missing.is_empty();
        let fixed = fix.then(|| match index::repair(runs, &stale, reorder) {
            Ok(()) if reorder => Some(format!("rebuilt from the {} run files", files.len())),
            Ok(()) => Some(format!("removed {} lines", stale.len())),
            Err(e) => {
                found.push(Finding { path: shown(self, &path), problem: format!("cannot be repaired: {e}"), fixed: None });
                None
            }
        });
        found.push(Finding { path: shown(self, &path), problem: problems.join("; "), fixed: fixed.flatten() });
    }

    /// The run's lock if nobody holds it (kept until the value drops, so nobody takes it while
    /// we act), or an empty guard when the run has no lock file; `None` while someone holds it.
    fn idle(&self, id: &RunId) -> Option<Idle> {
        let file = match fs::OpenOptions::new().read(true).open(self.lock_path(id)) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Some(Idle { _lock: None }),
            Err(_) => return None,
        };
        match file.try_lock() {
            Ok(()) => Some(Idle { _lock: Some(file) }),
            Err(TryLockError::WouldBlock | TryLockError::Error(_)) => None,
        }
    }
}

/// A run lock taken because nobody held it (or nothing, when the run had no lock file).
struct Idle {
    _lock: Option<File>,
}

/// Names and paths of the entries of `dir` (none when it cannot be read).
fn entries(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let Ok(read) = fs::read_dir(dir) else { return Vec::new() };
    read.flatten().filter_map(|e| Some((e.file_name().into_string().ok()?, e.path()))).collect()
}

/// The run of a journal's file name (`<id>.journal`).
fn journal_of(name: &str) -> Option<RunId> {
    name.strip_suffix(".journal").and_then(|n| RunId::parse(n).ok())
}

/// Temp files of `atomic_write` (`.<file>.<random>.tmp`) and of run writes (`.<id>.json.tmp`).
fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

fn older_than(path: &Path, age: Duration) -> bool {
    let modified = fs::symlink_metadata(path).and_then(|m| m.modified());
    modified.is_ok_and(|t| SystemTime::now().duration_since(t).is_ok_and(|d| d >= age))
}

fn remove(store: &FileStore, path: &Path, why: &str, fix: bool, found: &mut Vec<Finding>) {
    let (problem, fixed) = match fix.then(|| fs::remove_file(path)) {
        None => (why.to_string(), None),
        Some(Ok(())) => (why.to_string(), Some("removed".to_string())),
        Some(Err(e)) => (format!("{why} (cannot remove it: {e})"), None),
    };
    found.push(Finding { path: shown(store, path), problem, fixed });
}

fn shown(store: &FileStore, path: &Path) -> String {
    path.strip_prefix(&store.home).unwrap_or(path).display().to_string()
}

/// A few ids, for a message about many.
fn sample<'a>(ids: impl Iterator<Item = &'a RunId>) -> String {
    let mut ids: Vec<&str> = ids.map(RunId::as_str).collect();
    ids.sort_unstable();
    let more = ids.len().saturating_sub(3);
    let mut text = ids.into_iter().take(3).collect::<Vec<_>>().join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, Wait};

    /// The journal of a run in flight is part of the run and stays; one left behind by a writer
    /// killed between writing the run whole and removing it (its header names the old file) is
    /// reported and removed, and the run reads the same before and after.
    #[test]
    fn tidy_removes_only_journals_readers_ignore() {
        use vwf_core::run::journal::Part;
        let home = tempfile::tempdir().unwrap();
        let store = FileStore::new(home.path().to_path_buf());
        let id = store.allocate_run_id().wait().unwrap();
        store.import_run(&id, &serde_json::json!({"status": "running"})).wait().unwrap();
        let journal = store.journal_path(&id);
        let part = (Part::History(0), serde_json::json!({"at": "2026-03-01T09:00:00Z", "event": "retry"}));
        super::super::journal::append(
            &journal,
            &super::super::journal::digest(&fs::read(store.run_path(&id)).unwrap()),
            &[part],
            None,
            true,
        )
        .unwrap();
        assert!(store.tidy(true).is_empty(), "a live journal is no problem");
        assert!(journal.exists());

        let kept = fs::read(&journal).unwrap();
        store.import_run(&id, &serde_json::json!({"status": "done"})).wait().unwrap();
        assert!(!journal.exists(), "a whole save removes the journal");
        fs::write(&journal, &kept).unwrap(); // as a writer killed before removing it leaves it
        assert_eq!(store.read_run(&id).wait().unwrap(), serde_json::json!({"status": "done"}), "a stale journal is not applied");
        let found = store.tidy(true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].path.ends_with(".journal") && found[0].fixed.is_some(), "{found:?}");
        assert!(!journal.exists());
        assert_eq!(store.read_run(&id).wait().unwrap(), serde_json::json!({"status": "done"}));
    }

    /// A run created and written between the snapshot of the run files and the index check
    /// (the daemon firing while a server starts) keeps its index line.
    #[test]
    fn tidy_keeps_the_line_of_a_run_written_after_the_snapshot() {
        let home = tempfile::tempdir().unwrap();
        let store = FileStore::new(home.path().to_path_buf());
        let old = store.allocate_run_id().wait().unwrap();
        store.import_run(&old, &serde_json::json!({"n": 1})).wait().unwrap();
        let files: HashSet<RunId> = store.run_ids().into_iter().collect();
        let new = store.allocate_run_id().wait().unwrap();
        store.import_run(&new, &serde_json::json!({"n": 2})).wait().unwrap();
        let (mut idle, mut found) = (Vec::new(), Vec::new());
        store.tidy_index(&store.runs_dir(), &files, true, &mut idle, &mut found);
        drop(idle);
        assert_eq!(found, Vec::new());
        let listed: Vec<String> = store.list_runs(10).wait().unwrap().into_iter().map(|e| e.id.to_string()).collect();
        assert_eq!(listed, vec![new.to_string(), old.to_string()]);
    }
}
