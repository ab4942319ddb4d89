//! The run listing index of the file store: `workflow-runs/.index`, one `<run_id>\n` line per run,
//! appended when a run id is first written, so the newest runs are at the end of the file.
//!
//! Listing reads the file backwards in chunks and stops as soon as the caller has enough, so
//! `list_runs(20)` costs one chunk read however long the history is. The index is a hint, the
//! run files are the truth: a line whose run file is gone is skipped by the caller (deleting a
//! run file forgets the run), a repeated id counts once (newest position wins), and a line that
//! is not a run id (a torn write, garbage) is skipped. A missing index is rebuilt from the
//! run files, ordered by their `created_at` (else their mtime). Appends and rebuilds take
//! `workflow-runs/.index.lock`, so a rebuild never replaces the file under an append.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::ControlFlow;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use vwf_core::names::RunId;

use super::fs::atomic_write;

pub(super) const INDEX_FILE: &str = ".index";
const INDEX_LOCK_FILE: &str = ".index.lock";
const CHUNK: usize = 64 * 1024;

/// Appends `id` as the newest run of the index in `dir` (creating the index from the run files
/// first if it is missing): one `write` of the line under the index lock, then `fdatasync` after
/// the lock is released, so appenders queue only for the write and their syncs can share a
/// journal commit.
pub(super) fn append(dir: &Path, id: &RunId) -> io::Result<()> {
    let file = append_line(dir, id)?;
    file.sync_data()
}

fn append_line(dir: &Path, id: &RunId) -> io::Result<File> {
    let _lock = lock_index(dir)?;
    let path = dir.join(INDEX_FILE);
    if !path.try_exists()? {
        let ids = scan(dir)?;
        write_index(dir, &ids)?;
    }
    let mut file = OpenOptions::new().read(true).append(true).open(&path)?;
    let len = file.metadata()?.len();
    let mut line = Vec::with_capacity(RunId::LEN + 2);
    if len > 0 {
        // A line torn by a crash would swallow ours: start on a fresh line.
        let mut last = [0u8];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            line.push(b'\n');
        }
    }
    line.extend_from_slice(id.as_str().as_bytes());
    line.push(b'\n');
    file.write_all(&line)?;
    Ok(file)
}

/// Calls `visit` with each run id of the index in `dir`, newest first, each id once, until it
/// breaks. A missing directory lists nothing; a missing index is rebuilt first (and written
/// back when possible, so the scan happens once).
pub(super) fn newest_first(
    dir: &Path,
    mut visit: impl FnMut(RunId) -> ControlFlow<()>,
) -> io::Result<()> {
    let mut seen = HashSet::new();
    let mut visit_line = |line: &[u8]| {
        let Some(id) = parse_line(line) else {
            return ControlFlow::Continue(());
        };
        if seen.insert(id.clone()) {
            visit(id)
        } else {
            ControlFlow::Continue(())
        }
    };
    match File::open(dir.join(INDEX_FILE)) {
        Ok(file) => read_lines_backwards(file, visit_line),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            for id in rebuild_for_reading(dir)?.iter().rev() {
                if visit_line(id.as_str().as_bytes()).is_break() {
                    break;
                }
            }
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// The run ids of `dir` in index order (oldest first), from a scan when the index is missing.
fn rebuild_for_reading(dir: &Path) -> io::Result<Vec<RunId>> {
    if !dir.try_exists()? {
        return Ok(Vec::new());
    }
    let Ok(_lock) = lock_index(dir) else {
        // A read-only store can still be listed, it just is scanned every time.
        return scan(dir);
    };
    match File::open(dir.join(INDEX_FILE)) {
        Ok(file) => {
            // Someone rebuilt it meanwhile: read theirs (it may hold appends made since).
            let mut ids = Vec::new();
            read_lines_backwards(file, |line| {
                ids.extend(parse_line(line));
                ControlFlow::Continue(())
            })?;
            ids.reverse();
            return Ok(ids);
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let ids = scan(dir)?;
    if !ids.is_empty() {
        // Best effort: listing must work even where the index cannot be written.
        let _ = write_index(dir, &ids);
    }
    Ok(ids)
}

fn write_index(dir: &Path, ids: &[RunId]) -> io::Result<()> {
    let mut text = String::with_capacity(ids.len() * (RunId::LEN + 1));
    for id in ids {
        text.push_str(id.as_str());
        text.push('\n');
    }
    atomic_write(&dir.join(INDEX_FILE), text.as_bytes())
}

/// Exclusive lock on the index, released when the returned file is closed.
fn lock_index(dir: &Path) -> io::Result<File> {
    let file = super::fs::lock_file(&dir.join(INDEX_LOCK_FILE))?;
    file.lock()?;
    Ok(file)
}

/// Every `<run_id>.json` file of `dir`, ordered by `created_at` (else mtime), then by id.
fn scan(dir: &Path) -> io::Result<Vec<RunId>> {
    #[derive(Deserialize)]
    struct Created {
        created_at: Option<String>,
    }
    let mut runs = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(run_id_of_file_name) else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let created = fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Created>(&bytes).ok())
            .and_then(|c| c.created_at)
            .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
            .map(|t| t.with_timezone(&Utc));
        let at = created
            .or_else(|| meta.modified().ok().map(DateTime::<Utc>::from))
            .unwrap_or_default();
        runs.push((at, id));
    }
    runs.sort();
    Ok(runs.into_iter().map(|(_, id)| id).collect())
}

/// A line of the index → its run id; a torn or garbage line → `None`.
fn parse_line(line: &[u8]) -> Option<RunId> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| RunId::parse(s).ok())
}

/// `d7b493cae249.json` → the run id; anything else → `None`.
pub(super) fn run_id_of_file_name(name: &str) -> Option<RunId> {
    name.strip_suffix(".json")
        .and_then(|stem| RunId::parse(stem).ok())
}

/// Calls `visit` with each line of `file` from the last to the first (without the `\n`).
fn read_lines_backwards(
    mut file: File,
    mut visit: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> io::Result<()> {
    let mut pos = file.metadata()?.len();
    let mut chunk = vec![0u8; CHUNK];
    // The start of a line that began in the chunk before the one just read.
    let mut carry: Vec<u8> = Vec::new();
    while pos > 0 {
        let n = usize::try_from(pos).map_or(CHUNK, |p| p.min(CHUNK));
        pos -= n as u64;
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut chunk[..n])?;
        let mut buf = Vec::with_capacity(n + carry.len());
        buf.extend_from_slice(&chunk[..n]);
        buf.extend_from_slice(&carry);
        let mut lines = buf.split(|&b| b == b'\n');
        let head = lines.next().unwrap_or_default();
        let complete: Vec<&[u8]> = lines.collect();
        for line in complete.iter().rev() {
            if visit(line).is_break() {
                return Ok(());
            }
        }
        carry = head.to_vec();
    }
    let _ = visit(&carry);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_backwards(content: &[u8]) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, content).unwrap();
        let mut out = Vec::new();
        read_lines_backwards(File::open(&path).unwrap(), |l| {
            out.push(String::from_utf8_lossy(l).into_owned());
            ControlFlow::Continue(())
        })
        .unwrap();
        out
    }

    #[test]
    fn store_index_reads_lines_backwards_across_chunks() {
        let ids: Vec<String> = (0..20_000).map(|i| format!("{i:012x}")).collect();
        let mut content = ids.join("\n");
        content.push('\n');
        let mut got = lines_backwards(content.as_bytes());
        assert_eq!(got.remove(0), "", "the text after the final newline");
        let mut expected = ids.clone();
        expected.reverse();
        assert_eq!(got, expected);
    }

    #[test]
    fn store_index_reads_a_last_line_without_newline_and_an_empty_file() {
        assert_eq!(lines_backwards(b"a\nb"), vec!["b", "a"]);
        assert_eq!(lines_backwards(b""), vec![""]);
    }

    #[test]
    fn store_index_skips_garbage_and_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(INDEX_FILE),
            "aaaaaaaaaaaa\nnot an id\nbbbbbbbbbbbb\naaaaaaaaaaaa\n\u{fffd}\ncccccc",
        )
        .unwrap();
        let mut got = Vec::new();
        newest_first(dir.path(), |id| {
            got.push(id.to_string());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(got, vec!["aaaaaaaaaaaa", "bbbbbbbbbbbb"]);
    }

    #[test]
    fn store_index_append_starts_a_fresh_line_after_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(INDEX_FILE), "aaaaaaaaaaaa\nbbbbbb").unwrap();
        append(dir.path(), &RunId::parse("cccccccccccc").unwrap()).unwrap();
        let text = fs::read_to_string(dir.path().join(INDEX_FILE)).unwrap();
        assert_eq!(text, "aaaaaaaaaaaa\nbbbbbb\ncccccccccccc\n");
    }

    #[test]
    fn store_index_file_names() {
        assert_eq!(
            run_id_of_file_name("d7b493cae249.json").unwrap().as_str(),
            "d7b493cae249"
        );
        for bad in [
            "d7b493cae249",
            ".d7b493cae249.json",
            "d7b493cae249.json.tmp",
            "D7B493CAE249.json",
            "x.json",
        ] {
            assert!(run_id_of_file_name(bad).is_none(), "{bad}");
        }
    }
}
