//! Folder triggers (SPEC §10): a notify watcher per design forwards debounced changes of its folder
//! to the daemon's thread, which decides from what is on disk now (and what it saw before) whether
//! each matching file was created, modified or removed, and fires a run per event the trigger asks
//! for.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use serde_json::json;
use vwf_core::time::Ts;
use vwf_core::trigger::{FolderTrigger, TriggerMode};

use super::{Daemon, Live, Signal, TickReport, Trigger};
use crate::runner::Runner;

pub(super) struct FolderWatch {
    pub(super) generation: u64,
    pub(super) dir: PathBuf,
    seen: HashSet<OsString>,
    _debouncer: Debouncer<RecommendedWatcher>,
}

impl Daemon<'_> {
    pub(super) fn start_folder(&self, name: &str, spec: &FolderTrigger, generation: u64) -> Result<FolderWatch, String> {
        let dir = resolve_path(&self.app.home, &spec.path);
        let dir = std::fs::canonicalize(&dir).map_err(|e| format!("cannot open folder {}: {e}", dir.display()))?;
        if !dir.is_dir() {
            return Err(format!("{} is not a folder", dir.display()));
        }
        let sender = self.sender.clone();
        let design = name.to_string();
        let handler = move |result: DebounceEventResult| match result {
            Ok(events) => {
                let paths = events.into_iter().map(|e| e.path).collect();
                let _ = sender.send(Signal::Folder { design: design.clone(), generation, paths });
            }
            Err(e) => tracing::warn!(design = %design, error = %e, "folder watcher error"),
        };
        let timeout = Duration::from_millis(spec.debounce_ms.max(10));
        let mut debouncer = new_debouncer(timeout, handler).map_err(|e| format!("cannot start a watcher: {e}"))?;
        debouncer.watcher().watch(&dir, RecursiveMode::NonRecursive).map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        // Listed after the watch starts, so no file falls between the two.
        let seen = std::fs::read_dir(&dir)
            .map(|entries| entries.flatten().filter(|e| e.path().is_file()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        Ok(FolderWatch { generation, dir, seen, _debouncer: debouncer })
    }

    /// Debounced changes in a watched folder: each matching file fires once with its kind, from
    /// what is on disk now and whether the file was seen before.
    pub(super) fn on_folder(
        &mut self,
        runner: &Runner<'_>,
        now: Ts,
        design: &str,
        generation: u64,
        mut paths: Vec<PathBuf>,
        report: &mut TickReport,
    ) {
        let Some(tracked) = self.designs.get_mut(design) else { return };
        let (Trigger::Folder(spec), Live::Folder(watch)) = (&tracked.trigger, &mut tracked.live) else { return };
        if watch.generation != generation {
            return;
        }
        paths.sort();
        paths.dedup();
        let mut inputs = Vec::new();
        for path in paths {
            let Some(file) = path.file_name().map(OsString::from) else { continue };
            if path.parent() != Some(watch.dir.as_path()) || !glob(&spec.pattern, &file.to_string_lossy()) {
                continue;
            }
            let full = watch.dir.join(&file);
            let kind = match (full.is_file(), watch.seen.contains(&file)) {
                (true, false) => {
                    watch.seen.insert(file);
                    "create"
                }
                (true, true) => "modify",
                (false, true) => {
                    watch.seen.remove(&file);
                    "remove"
                }
                (false, false) => continue,
            };
            if spec.events.iter().any(|e| e.as_str() == kind) {
                inputs.push(json!({"path": full.to_string_lossy(), "kind": kind}));
            }
        }
        for input in inputs {
            report.fired.push(self.fire(runner, now, design, TriggerMode::Folder, input));
        }
    }
}

/// A folder path from a design: `~/` is the user's home directory, a relative path is relative to
/// the vwf home (the daemon's own working directory means nothing under a service manager).
fn resolve_path(home: &Path, path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(user) = std::env::var_os("HOME")
    {
        return PathBuf::from(user).join(rest);
    }
    let p = PathBuf::from(path);
    if p.is_absolute() { p } else { home.join(p) }
}

/// `*` (any run of characters) and `?` (one character) on a file name; everything else literal.
pub fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) && p[pi] != '*' {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_star_and_question_mark_on_names() {
        assert!(glob("*.csv", "a.csv"));
        assert!(glob("*.csv", ".csv"));
        assert!(!glob("*.csv", "a.csv.tmp"));
        assert!(!glob("*.csv", "b.txt"));
        assert!(glob("*", "anything"));
        assert!(glob("report-??.txt", "report-01.txt"));
        assert!(!glob("report-??.txt", "report-1.txt"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
        assert!(glob("**x", "x"));
        assert!(glob("é?", "éü"));
        assert!(!glob("", "a"));
        assert!(glob("", ""));
    }
}
