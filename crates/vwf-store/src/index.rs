//! The run listing index of the file store: `workflow-runs/.index`, so that listing the newest
//! runs costs the same with ten runs or a hundred thousand.
//!
//! ```text
//! vwf-runs 1 000000000005 1f2e3d4c      header: how many lines were added, and its check
//! d7b493cae249 a1b2c3d4                 one fixed-width line per run, in order of first write
//! ```
//!
//! Every line (header included) ends with the first 4 bytes of the SHA-256 of the rest of the
//! line, in hex. The index lock file holds the number of lines the index had after its last
//! append or rewrite (`<count: 12 hex>\n`, the stamp): an index with fewer lines than its stamp
//! is an older copy put back, or lost lines with a rewritten header, which no check inside the
//! file can see. Comparing costs one read of a 13-byte file per listing (no directory read, so a
//! listing stays as fast at 100,000 runs); an empty or unreadable stamp (a store of an earlier
//! version) means nothing. A stale stamp errs only towards a rebuild: it is written after the
//! index, so a crash between the two leaves it smaller, never larger, except after a rewrite that
//! dropped lines, where a larger stamp costs one needless rebuild. A run's line is appended when the run is first written, then the header's count
//! is raised, both under `workflow-runs/.index.lock`; so at any moment the file holds at least as
//! many lines as its header counts, and never a repeated id.
//!
//! The index is a hint, the run files are the truth. Listing reads the header and the tail of
//! the file only, and treats as damage whatever the appends cannot leave behind: an empty or
//! missing file with runs beside it, a directory, a bad header, fewer lines than counted (a
//! truncation), a partial or garbled line, a repeated id, or an index lock that is a directory
//! (appends cannot happen, so runs may be missing). Damage is repaired by a rebuild from the run
//! files (ordered by `created_at`, else mtime, ties by their old position), written back when
//! the store can be written, and reported in words. Lines whose run has no file are kept (a run
//! in flight appends its line before its first file; a deleted run is skipped by listings):
//! only `vwf doctor --fix` and server/daemon start drop them, once nobody holds that run's lock.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use vwf_core::names::RunId;

use super::fs::atomic_write;

pub(super) const INDEX_FILE: &str = ".index";
pub(super) const INDEX_LOCK_FILE: &str = ".index.lock";
const MAGIC: &str = "vwf-runs 1";
const CHECK_LEN: usize = 8;
/// `vwf-runs 1 <count: 12 hex> <check>\n`
const HEADER_LEN: usize = MAGIC.len() + 1 + 12 + 1 + CHECK_LEN + 1;
/// `<run id> <check>\n`
const LINE_LEN: usize = RunId::LEN + 1 + CHECK_LEN + 1;
/// Lines read per backward step: 64 KiB.
const BLOCK_LINES: u64 = 64 * 1024 / LINE_LEN as u64;

/// What a listing found wrong with the index (the run files are fine).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Damage {
    Missing,
    Empty,
    Directory,
    LockDirectory,
    Unreadable(String),
    Header,
    Torn,
    Short { lines: u64, count: u64 },
    Stale { lines: u64, stamp: u64 },
    BadLine(u64),
    Repeated(RunId),
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Missing => write!(f, "is missing"),
            Damage::Empty => write!(f, "is empty"),
            Damage::Directory => write!(f, "is a directory, not a file"),
            Damage::LockDirectory => write!(f, "cannot be kept up to date: {INDEX_LOCK_FILE} is a directory, not a file"),
            Damage::Unreadable(e) => write!(f, "cannot be read ({e})"),
            Damage::Header => write!(f, "has no valid header (garbled, or written by an older version)"),
            Damage::Torn => write!(f, "ends in a partial line (truncated)"),
            Damage::Short { lines, count } => write!(f, "has {lines} lines but {count} were added (truncated)"),
            Damage::Stale { lines, stamp } => write!(f, "has {lines} lines but had {stamp} (an older copy, or lines lost)"),
            Damage::BadLine(n) => write!(f, "line {n} is garbled"),
            Damage::Repeated(id) => write!(f, "lists run {id} twice"),
        }
    }
}

/// The newest run ids of a listing, and what was done about a damaged index.
#[derive(Debug, Default)]
pub(super) struct Newest {
    pub ids: Vec<RunId>,
    /// A sentence for the user when the index was damaged (what was wrong, what was done).
    pub note: Option<String>,
}

/// Up to `want` run ids with a run file in `dir`, newest first. A damaged index is rebuilt (see
/// the module doc), so a listing never hides a run; a missing directory lists nothing.
#[cfg(test)]
pub(super) fn newest(dir: &Path, want: usize) -> io::Result<Newest> {
    Ok(older(dir, None, want, &|_| false)?.unwrap_or_default())
}

/// Like [`newest`], but only runs older than `before` (a page of a listing after its cursor);
/// `None` when `before` is not in the index. Finding it reads the index from its end, 22 bytes a
/// run, and no run file. `kept` says which runs without a file are listed all the same (a run
/// the caller's handle keeps in memory until its file is written).
pub(super) fn older(dir: &Path, before: Option<&RunId>, want: usize, kept: &dyn Fn(&RunId) -> bool) -> io::Result<Option<Newest>> {
    if !dir.try_exists()? {
        return Ok(before.is_none().then(Newest::default));
    }
    let damage = match read_newest(dir, before, want, kept) {
        Ok(ids) => return Ok(ids.map(|ids| Newest { ids, note: None })),
        Err(damage) => damage,
    };
    if matches!(damage, Damage::Missing | Damage::Empty) && !has_run_files(dir)? {
        return Ok(before.is_none().then(Newest::default)); // a store without runs yet
    }
    let lock = lock_index(dir);
    let rebuilt = rebuild(dir, lock.as_ref())?;
    let mut newest_first = rebuilt.ids.iter().rev().peekable();
    if let Some(cursor) = before {
        if !rebuilt.ids.contains(cursor) {
            return Ok(None);
        }
        newest_first.find(|id| *id == cursor);
    }
    let ids = newest_first.filter(|id| has_file(dir, id) || kept(id)).take(want).cloned().collect();
    Ok(Some(Newest { ids, note: Some(rebuilt.note(&damage)) }))
}

/// Removes the index of `dir` after a run was written without its line because the index lock
/// is a directory: nobody can append or rebuild meanwhile, and once the lock is repaired the
/// first listing rebuilds the index with that run in it. (An index that is itself a directory
/// stays: listings see it and read the run files.)
pub(super) fn forget(dir: &Path) {
    let _ = fs::remove_file(dir.join(INDEX_FILE));
}

/// The damage of the index in `dir`, if any, reading all of it (for `vwf doctor`).
pub(super) fn inspect(dir: &Path) -> io::Result<Option<Damage>> {
    if !dir.try_exists()? {
        return Ok(None);
    }
    Ok(match read_newest(dir, None, usize::MAX, &|_| false) {
        Ok(_) => None,
        Err(Damage::Missing | Damage::Empty) if !has_run_files(dir)? => None,
        Err(damage) => Some(damage),
    })
}

/// Rewrites the index of `dir` under its lock without the ids in `drop`: reordered from the run
/// files when `reorder` (a damaged index), else in its own order (only lines are dropped).
pub(super) fn repair(dir: &Path, drop: &HashSet<RunId>, reorder: bool) -> io::Result<()> {
    let _lock = lock_index(dir)?;
    let old = salvage(dir);
    let mut ids = if reorder {
        order(dir, &old)?.0
    } else {
        let mut seen = HashSet::new();
        old.into_iter().filter(|id| seen.insert(id.clone())).collect()
    };
    ids.retain(|id| !drop.contains(id));
    write_index(dir, &ids)
}

/// Every id of the index in `dir` (oldest first) that parses, for checks and repairs that then
/// compare it with the run files.
pub(super) fn salvage(dir: &Path) -> Vec<RunId> {
    let Ok(bytes) = fs::read(dir.join(INDEX_FILE)) else { return Vec::new() };
    let mut ids = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        let mut full = line.to_vec();
        full.push(b'\n');
        // Lines of the first version of the index held the bare id.
        if let Some(id) = parse_line(&full).or_else(|| std::str::from_utf8(line).ok().and_then(|s| RunId::parse(s).ok())) {
            ids.push(id);
        }
    }
    ids
}

/// The newest `want` ids with a file, older than `before` when given; `Ok(None)` when `before`
/// is not in the index.
fn read_newest(dir: &Path, before: Option<&RunId>, want: usize, kept: &dyn Fn(&RunId) -> bool) -> Result<Option<Vec<RunId>>, Damage> {
    let lock = fs::symlink_metadata(dir.join(INDEX_LOCK_FILE));
    if lock.is_ok_and(|m| m.is_dir()) {
        return Err(Damage::LockDirectory);
    }
    let unreadable = |e: io::Error| Damage::Unreadable(e.to_string());
    let stamp = read_stamp(dir);
    let file = match File::open(dir.join(INDEX_FILE)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Damage::Missing),
        Err(e) => return Err(unreadable(e)),
    };
    let lines = stamped_lines(&file, stamp)?;
    let mut seen = HashSet::new();
    let mut ids = Vec::new();
    let mut found = before.is_none();
    let mut end = lines;
    let mut block = Vec::new();
    while end > 0 && ids.len() < want {
        let start = end.saturating_sub(BLOCK_LINES);
        block.resize(usize::try_from(end - start).unwrap_or(0) * LINE_LEN, 0);
        file.read_exact_at(&mut block, HEADER_LEN as u64 + start * LINE_LEN as u64).map_err(unreadable)?;
        for (i, line) in block.chunks_exact(LINE_LEN).enumerate().rev() {
            let number = start + i as u64 + 2; // 1-based, after the header
            let id = parse_line(line).ok_or(Damage::BadLine(number))?;
            if !seen.insert(id.clone()) {
                return Err(Damage::Repeated(id));
            }
            if !found {
                found = before == Some(&id);
                continue;
            }
            if has_file(dir, &id) || kept(&id) {
                ids.push(id);
                if ids.len() >= want {
                    break;
                }
            }
        }
        end = start;
    }
    Ok(found.then_some(ids))
}

/// The number of lines of an index whose header and length agree; the header is read before
/// the length, so appends made meanwhile only add lines.
fn counted_lines(file: &File) -> Result<u64, Damage> {
    let unreadable = |e: io::Error| Damage::Unreadable(e.to_string());
    let meta = file.metadata().map_err(unreadable)?;
    if meta.is_dir() {
        return Err(Damage::Directory);
    }
    if meta.len() == 0 {
        return Err(Damage::Empty);
    }
    let mut header = [0u8; HEADER_LEN];
    file.read_exact_at(&mut header, 0).map_err(|_| Damage::Header)?;
    let count = parse_header(&header).ok_or(Damage::Header)?;
    let body = file.metadata().map_err(unreadable)?.len() - HEADER_LEN as u64;
    if !body.is_multiple_of(LINE_LEN as u64) {
        return Err(Damage::Torn);
    }
    let lines = body / LINE_LEN as u64;
    if lines < count {
        return Err(Damage::Short { lines, count });
    }
    Ok(lines)
}

/// [`counted_lines`], and no fewer than the `stamp` read before (see the module doc).
fn stamped_lines(file: &File, stamp: Option<u64>) -> Result<u64, Damage> {
    let lines = counted_lines(file)?;
    match stamp {
        Some(stamp) if stamp > lines => Err(Damage::Stale { lines, stamp }),
        _ => Ok(lines),
    }
}

/// The stamp of the index in `dir` (see the module doc); `None` when there is none to trust.
fn read_stamp(dir: &Path) -> Option<u64> {
    stamp_of(&File::open(dir.join(INDEX_LOCK_FILE)).ok()?)
}

/// The stamp the index lock file `file` holds.
fn stamp_of(file: &File) -> Option<u64> {
    let mut bytes = [0u8; 13];
    file.read_exact_at(&mut bytes, 0).ok()?;
    let text = std::str::from_utf8(bytes.strip_suffix(b"\n")?).ok()?;
    u64::from_str_radix(text, 16).ok()
}

/// Records that the index in `dir` now has `lines` lines. The caller holds the index lock. A
/// failure leaves the old stamp, which at worst costs a rebuild, so it is not an error.
fn write_stamp(dir: &Path, lines: u64) {
    if let Ok(file) = OpenOptions::new().write(true).open(dir.join(INDEX_LOCK_FILE)) {
        let _ = file.write_all_at(format!("{lines:012x}\n").as_bytes(), 0);
    }
}

/// Appends `id` as the newest run of the index in `dir`: one write of the line, then the header's
/// count, under the index lock, and when `durable` an `fdatasync` after the lock is released (so
/// appenders queue only for the writes and their syncs can share a journal commit; without it
/// the caller's commit log makes the line durable, see `commit.rs`). A missing or damaged index
/// is rebuilt first. Errors name the file they concern.
pub(super) fn append(dir: &Path, id: &RunId, durable: bool) -> io::Result<()> {
    let file = append_line(dir, id)?;
    if durable {
        file.sync_data().map_err(|e| at(&dir.join(INDEX_FILE), e))?;
    }
    Ok(())
}

fn append_line(dir: &Path, id: &RunId) -> io::Result<File> {
    let lock = lock_index(dir)?;
    let path = dir.join(INDEX_FILE);
    let stamp = stamp_of(&lock.file);
    let opened = OpenOptions::new().read(true).write(true).open(&path).map_err(|e| Damage::Unreadable(e.to_string()));
    let (file, lines) = match opened.and_then(|f| Ok((stamped_lines(&f, stamp)?, f))) {
        Ok((lines, file)) => (Some(file), lines),
        Err(damage) => {
            let rebuilt = rebuild(dir, Ok(&lock))?;
            if let Err(e) = rebuilt.saved {
                return Err(io::Error::new(e.kind(), format!("the run index {damage} and could not be rebuilt: {e}")));
            }
            (None, rebuilt.ids.len() as u64)
        }
    };
    let file = match file {
        Some(file) => file,
        None => OpenOptions::new().read(true).write(true).open(&path).map_err(|e| at(&path, e))?,
    };
    let offset = HEADER_LEN as u64 + lines * LINE_LEN as u64;
    file.write_all_at(line(id).as_bytes(), offset).map_err(|e| at(&path, e))?;
    file.write_all_at(header(lines + 1).as_bytes(), 0).map_err(|e| at(&path, e))?;
    lock.set_stamp(lines + 1);
    Ok(file)
}

/// The index made again from the run files, and whether it could be saved.
struct Rebuilt {
    /// Oldest first.
    ids: Vec<RunId>,
    runs: usize,
    saved: io::Result<()>,
}

impl Rebuilt {
    fn note(&self, damage: &Damage) -> String {
        let what = match &self.saved {
            Ok(()) => format!("rebuilt it from the {} run files", self.runs),
            Err(e) => {
                format!("listed the {} run files instead; the index could not be rewritten ({e}); `vwf doctor --fix` repairs it", self.runs)
            }
        };
        format!("the run index (workflow-runs/{INDEX_FILE}) {damage}: {what}")
    }
}

/// Rebuilds the index of `dir` under its `lock`. Without the lock (a read-only store, a lock
/// path that is a directory) the order is computed but not saved.
fn rebuild(dir: &Path, lock: Result<&IndexLock, &io::Error>) -> io::Result<Rebuilt> {
    // Read under the lock, so lines appended meanwhile are kept.
    let old = salvage(dir);
    let (ids, runs) = order(dir, &old)?;
    let saved = match lock {
        Ok(_) => write_index(dir, &ids),
        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
    };
    Ok(Rebuilt { ids, runs, saved })
}

/// Every run file of `dir` ordered by `created_at` (else mtime), ties by position in `old`, then
/// id; then the ids of `old` that have no file (runs in flight, deleted runs), in their order.
fn order(dir: &Path, old: &[RunId]) -> io::Result<(Vec<RunId>, usize)> {
    let position: HashMap<&RunId, usize> = old.iter().enumerate().map(|(i, id)| (id, i)).collect();
    let mut runs: Vec<_> = scan(dir)?.into_iter().map(|(at, id)| (at, position.get(&id).copied().unwrap_or(usize::MAX), id)).collect();
    runs.sort();
    let count = runs.len();
    let mut seen: HashSet<RunId> = HashSet::new();
    let mut ids: Vec<RunId> = Vec::with_capacity(runs.len());
    for (_, _, id) in runs {
        seen.insert(id.clone());
        ids.push(id);
    }
    for id in old {
        if seen.insert(id.clone()) {
            ids.push(id.clone());
        }
    }
    Ok((ids, count))
}

/// Replaces the index of `dir` by `ids` (oldest first). The caller holds the index lock.
pub(super) fn write_index(dir: &Path, ids: &[RunId]) -> io::Result<()> {
    let mut text = String::with_capacity(HEADER_LEN + ids.len() * LINE_LEN);
    text.push_str(&header(ids.len() as u64));
    for id in ids {
        text.push_str(&line(id));
    }
    let path = dir.join(INDEX_FILE);
    atomic_write(&path, text.as_bytes()).map_err(|e| at(&path, e))?;
    write_stamp(dir, ids.len() as u64);
    Ok(())
}

/// The exclusive lock on the index of `dir`, held until the value drops.
pub(super) struct IndexLock {
    file: File,
}

impl IndexLock {
    /// Records that the index now has `lines` lines (see [`write_stamp`]).
    fn set_stamp(&self, lines: u64) {
        let _ = self.file.write_all_at(format!("{lines:012x}\n").as_bytes(), 0);
    }
}

pub(super) fn lock_index(dir: &Path) -> io::Result<IndexLock> {
    let path = dir.join(INDEX_LOCK_FILE);
    let file = super::fs::lock_file(&path).map_err(|e| at(&path, e))?;
    file.lock().map_err(|e| at(&path, e))?;
    Ok(IndexLock { file })
}

/// Every `<run_id>.json` file of `dir` with its `created_at` (else mtime).
fn scan(dir: &Path) -> io::Result<Vec<(DateTime<Utc>, RunId)>> {
    #[derive(Deserialize)]
    struct Created {
        created_at: Option<String>,
    }
    let mut runs = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| at(dir, e))? {
        let entry = entry.map_err(|e| at(dir, e))?;
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
        let at = created.or_else(|| meta.modified().ok().map(DateTime::<Utc>::from)).unwrap_or_default();
        runs.push((at, id));
    }
    Ok(runs)
}

/// Whether `dir` holds at least one run file (stops at the first).
fn has_run_files(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir).map_err(|e| at(dir, e))? {
        let entry = entry.map_err(|e| at(dir, e))?;
        if entry.file_name().to_str().and_then(run_id_of_file_name).is_some_and(|id| has_file(dir, &id)) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn has_file(dir: &Path, id: &RunId) -> bool {
    dir.join(format!("{id}.json")).is_file()
}

fn check(text: &[u8]) -> String {
    Sha256::digest(text)[..CHECK_LEN / 2].iter().map(|b| format!("{b:02x}")).collect()
}

fn header(count: u64) -> String {
    let body = format!("{MAGIC} {count:012x}");
    format!("{body} {}\n", check(body.as_bytes()))
}

fn line(id: &RunId) -> String {
    format!("{id} {}\n", check(id.as_str().as_bytes()))
}

/// `text` split as `<body> <check>\n` with a check that matches its body.
fn checked(text: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(text.strip_suffix(b"\n")?).ok()?;
    let (body, sum) = text.rsplit_once(' ')?;
    (sum == check(body.as_bytes())).then_some(body)
}

fn parse_header(bytes: &[u8]) -> Option<u64> {
    let count = checked(bytes)?.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    (count.len() == 12).then(|| u64::from_str_radix(count, 16).ok()).flatten()
}

fn parse_line(bytes: &[u8]) -> Option<RunId> {
    if bytes.len() != LINE_LEN {
        return None;
    }
    RunId::parse(checked(bytes)?).ok()
}

/// `d7b493cae249.json` → the run id; anything else → `None`.
pub(super) fn run_id_of_file_name(name: &str) -> Option<RunId> {
    name.strip_suffix(".json").and_then(|stem| RunId::parse(stem).ok())
}

/// `e` with the path it concerns in its message (the kind is kept for callers that branch on it).
fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Logs a store warning (through `tracing`: the binary prints it on standard error), once per process for a given text (a
/// daemon that lists a read-only store every second says it once).
pub(super) fn warn(note: &str) {
    static SAID: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.get_or_insert_with(HashSet::new).insert(note.to_string()) {
        tracing::warn!("warning: {note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> RunId {
        RunId::parse(s).unwrap()
    }

    fn run_file(dir: &Path, run: &str, created: &str) {
        fs::write(dir.join(format!("{run}.json")), format!("{{\"created_at\": \"{created}\"}}")).unwrap();
    }

    #[test]
    fn store_index_lines_and_header_are_fixed_width_and_checked() {
        assert_eq!(header(5).len(), HEADER_LEN);
        assert_eq!(parse_header(header(5).as_bytes()), Some(5));
        let l = line(&id("d7b493cae249"));
        assert_eq!(l.len(), LINE_LEN);
        assert_eq!(parse_line(l.as_bytes()), Some(id("d7b493cae249")));
        // Any one changed byte is caught.
        for i in 0..LINE_LEN {
            let mut bad = l.clone().into_bytes();
            bad[i] = if bad[i] == b'0' { b'1' } else { b'0' };
            assert_eq!(parse_line(&bad), None, "byte {i}");
        }
    }

    #[test]
    fn store_index_appends_are_listed_newest_first_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let n = BLOCK_LINES as usize * 2 + 7;
        let ids: Vec<RunId> = (0..n).map(|i| id(&format!("{i:012x}"))).collect();
        write_index(dir.path(), &ids).unwrap();
        for run in ids.iter().step_by(97) {
            fs::write(dir.path().join(format!("{run}.json")), "{}").unwrap();
        }
        let extra = id("ffffffffffff");
        fs::write(dir.path().join("ffffffffffff.json"), "{}").unwrap();
        append(dir.path(), &extra, true).unwrap();
        let got = newest(dir.path(), usize::MAX).unwrap();
        assert_eq!(got.note, None);
        let mut expected: Vec<RunId> = ids.iter().step_by(97).cloned().collect();
        expected.push(extra);
        expected.reverse();
        assert_eq!(got.ids, expected);
        assert_eq!(newest(dir.path(), 3).unwrap().ids, expected[..3]);
    }

    #[test]
    fn store_index_damage_is_rebuilt_in_created_order_keeping_runs_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        run_file(dir.path(), "00000000000a", "2020-01-03T00:00:00Z");
        run_file(dir.path(), "00000000000b", "2020-01-01T00:00:00Z");
        // A line without a file (a run in flight) and a torn line from a killed append.
        fs::write(dir.path().join(INDEX_FILE), format!("{}{}00000000", header(2), line(&id("0000000000ff")))).unwrap();
        let got = newest(dir.path(), 10).unwrap();
        assert_eq!(got.ids, vec![id("00000000000a"), id("00000000000b")]);
        let note = got.note.unwrap();
        assert!(note.contains("partial line") && note.contains("rebuilt it from the 2 run files"), "{note}");
        assert_eq!(salvage(dir.path()), vec![id("00000000000b"), id("00000000000a"), id("0000000000ff")]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Whatever bytes replace, overwrite or join a valid index, a listing shows every run.
        #[test]
        fn store_index_no_damage_hides_a_run(
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..120),
            at in 0usize..200,
            how in 0u8..3,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let ids: Vec<RunId> = (1..=3).map(|i| id(&format!("00000000000{i}"))).collect();
            for (i, run) in ids.iter().enumerate() {
                run_file(dir.path(), run.as_str(), &format!("2020-01-0{}T00:00:00Z", i + 1));
            }
            write_index(dir.path(), &ids).unwrap();
            let mut bytes = fs::read(dir.path().join(INDEX_FILE)).unwrap();
            let at = at % (bytes.len() + 1);
            match how {
                0 => bytes = noise.clone(),
                1 => { bytes.splice(at..at, noise.iter().copied()); }
                _ => {
                    let end = (at + noise.len()).min(bytes.len());
                    bytes.splice(at..end, noise.iter().copied());
                }
            }
            fs::write(dir.path().join(INDEX_FILE), &bytes).unwrap();
            let mut listed = newest(dir.path(), 10).unwrap().ids;
            listed.sort();
            proptest::prop_assert_eq!(listed, ids);
        }
    }

    /// An older copy of the index put back (valid, with fewer lines) is found by its stamp, and
    /// the listing shows every run; so does an append made to that older copy.
    #[test]
    fn store_index_older_copy_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<RunId> = (1..=5).map(|i| id(&format!("00000000000{i}"))).collect();
        let mut older = Vec::new();
        for (i, run) in ids.iter().enumerate() {
            append(dir.path(), run, true).unwrap();
            run_file(dir.path(), run.as_str(), &format!("2020-01-0{}T00:00:00Z", i + 1));
            if i == 2 {
                older = fs::read(dir.path().join(INDEX_FILE)).unwrap();
            }
        }
        let newest_first: Vec<RunId> = ids.iter().rev().cloned().collect();
        for then_append in [false, true] {
            fs::write(dir.path().join(INDEX_FILE), &older).unwrap();
            let mut want = newest_first.clone();
            if then_append {
                let extra = id("0000000000ff");
                append(dir.path(), &extra, true).unwrap();
                run_file(dir.path(), extra.as_str(), "2020-02-01T00:00:00Z");
                want.insert(0, extra);
            }
            let got = newest(dir.path(), 10).unwrap();
            assert_eq!(got.ids, want, "append: {then_append}");
            if !then_append {
                let note = got.note.unwrap();
                assert!(note.contains("has 3 lines but had 5") && note.contains("rebuilt it from the 5 run files"), "{note}");
            }
            assert_eq!(newest(dir.path(), 10).unwrap().note, None, "repaired");
        }
    }

    /// A page after a cursor lists the runs older than it, from a sound index and from one that
    /// has to be rebuilt first; a cursor the index does not hold is `None`.
    #[test]
    fn store_index_pages_after_a_cursor_even_when_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<RunId> = (0..BLOCK_LINES as usize + 50).map(|i| id(&format!("{i:012x}"))).collect();
        for (i, run) in ids.iter().enumerate() {
            append(dir.path(), run, true).unwrap();
            run_file(dir.path(), run.as_str(), &format!("2020-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60));
        }
        let newest_first: Vec<RunId> = ids.iter().rev().cloned().collect();
        let cursor = &newest_first[100];
        for damaged in [false, true] {
            if damaged {
                fs::write(dir.path().join(INDEX_FILE), b"garbled").unwrap();
            }
            let page = older(dir.path(), Some(cursor), 7, &|_| false).unwrap().expect("the cursor is listed");
            assert_eq!(page.ids, newest_first[101..108], "damaged: {damaged}");
            assert_eq!(page.note.is_some(), damaged);
            assert!(older(dir.path(), Some(&id("ffffffffffff")), 7, &|_| false).unwrap().is_none());
            assert!(older(dir.path(), Some(newest_first.last().unwrap()), 7, &|_| false).unwrap().unwrap().ids.is_empty());
        }
    }

    #[test]
    fn store_index_file_names() {
        assert_eq!(run_id_of_file_name("d7b493cae249.json").unwrap().as_str(), "d7b493cae249");
        for bad in ["d7b493cae249", ".d7b493cae249.json", "d7b493cae249.json.tmp", "D7B493CAE249.json", "x.json"] {
            assert!(run_id_of_file_name(bad).is_none(), "{bad}");
        }
    }
}
