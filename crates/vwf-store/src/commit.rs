//! The file store's commit log: concurrent saves share one `fdatasync` (group commit).
//!
//! ```text
//! workflow-runs/.commit/<random>.log       one per store handle that writes; flock-ed by it
//! vwf-commit 1
//! <check> W <time ns> <run id> <base digest | -> <the run file's bytes>
//! <check> A <time ns> <run id> <base digest> <line number> <the journal line>
//! ```
//!
//! A save first makes its change visible where readers look, without waiting for the disk: the
//! run file replaced through a rename (`W`), or a line appended to the run's journal (`A`, see
//! `journal.rs`). It then hands this log a record that says the same, and returns once the record
//! is durable. Records queued while a flush is under way go out together in the next flush: one
//! `write` and one `fdatasync` for all of them, whatever the number of runs in flight, and no
//! `fsync` of the run files on the way. `check` is a digest of the rest of the line, so a torn
//! tail (a writer killed mid-append) is never read.
//!
//! What the log holds is made durable in the run files later, at a checkpoint: when the log
//! passes [`SEGMENT_BYTES`] it is set aside (a fresh one takes the next records), the files its
//! records touched are fsynced, and it is removed. The last handle of a store does the same when
//! it is dropped.
//!
//! A log whose handle is gone (its `flock` is free: the process was killed, or the machine went
//! down) is recovered by the next handle that opens the home, before it reads or writes a run,
//! and before a run found without its owner is taken over ([`recover`]). For each run the log
//! names, its records are put in time order; a `W` record knows the file it replaced (`base`) and
//! the file it wrote, so the chain says whether the run file on disk is older than the log (a
//! machine that went down lost writes the disk had not taken yet: the newest state is written
//! again), at its end (a killed process: nothing is lost), or newer (written since by another
//! handle, whose own log has it: left alone). The journal lines of the final run file are put
//! back the same way by their line numbers. Then the files are fsynced and the log removed.
//!
//! Written by hand: the write-ahead-log crates of the field bring their own storage, where this
//! one must sit beside the plain run files that stay the readable record of a run at rest.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use vwf_core::names::RunId;

use super::journal::digest;

pub(super) const COMMIT_DIR: &str = ".commit";
const MAGIC: &str = "vwf-commit 1\n";
/// A log past this size is checkpointed and a fresh one started.
pub(super) const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;

/// What a save made visible, as the log records it.
pub(super) enum Record<'a> {
    /// The run file was replaced by `bytes`; `base` is the digest of the file it replaced.
    Whole { id: &'a RunId, base: Option<&'a str>, bytes: &'a [u8] },
    /// `line` was appended to the journal of the run file whose digest is `base`, as its line
    /// `number` (0 for the first after the header).
    Append { id: &'a RunId, base: &'a str, number: usize, line: &'a str },
}

impl Record<'_> {
    fn id(&self) -> &RunId {
        match self {
            Record::Whole { id, .. } | Record::Append { id, .. } => id,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut rest = Vec::new();
        match self {
            Record::Whole { id, base, bytes } => {
                rest.extend_from_slice(format!("W {ts} {id} {} ", base.unwrap_or("-")).as_bytes());
                rest.extend_from_slice(bytes.strip_suffix(b"\n").unwrap_or(bytes));
            }
            Record::Append { id, base, number, line } => {
                rest.extend_from_slice(format!("A {ts} {id} {base} {number} {line}").as_bytes());
            }
        }
        let mut out = format!("{} ", digest(&rest)).into_bytes();
        out.extend_from_slice(&rest);
        out.push(b'\n');
        out
    }
}

/// One log file being written.
struct Segment {
    path: PathBuf,
    file: File,
    bytes: u64,
    /// Runs whose files a record of this segment touched: what its checkpoint fsyncs.
    touched: HashSet<RunId>,
}

#[derive(Default)]
struct Queue {
    /// Encoded records waiting for the next flush, and the runs they touch.
    records: Vec<u8>,
    runs: Vec<RunId>,
    /// Sequence numbers: the last queued, the last durable.
    queued: u64,
    durable: u64,
    flushing: bool,
    /// Flushes that failed: the sequence numbers they held and why.
    failed: Vec<(u64, u64, String)>,
}

/// The commit log of one store handle (shared by its clones).
pub(super) struct CommitLog {
    runs_dir: PathBuf,
    queue: Mutex<Queue>,
    flushed: Condvar,
    /// The segment being written; `None` once it failed (the next flush starts another).
    segment: Mutex<Option<Segment>>,
}

impl CommitLog {
    /// A fresh log in `runs_dir`'s commit directory, locked for this handle.
    pub(super) fn open(runs_dir: &Path) -> io::Result<Self> {
        let segment = new_segment(runs_dir)?;
        Ok(Self {
            runs_dir: runs_dir.to_path_buf(),
            queue: Mutex::new(Queue::default()),
            flushed: Condvar::new(),
            segment: Mutex::new(Some(segment)),
        })
    }

    /// Adds `record` to the log and returns once it is durable (or its flush failed); with
    /// `wait` false, at once: the next flush takes it (see [`CommitLog::sync`]).
    pub(super) fn commit(&self, record: Record<'_>, wait: bool) -> io::Result<()> {
        let encoded = record.encode();
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.records.extend_from_slice(&encoded);
        queue.runs.push(record.id().clone());
        queue.queued += 1;
        let mine = queue.queued;
        if !wait {
            return Ok(());
        }
        self.wait_for(queue, mine)
    }

    /// Returns once every record added so far is durable.
    pub(super) fn sync(&self) -> io::Result<()> {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let last = queue.queued;
        self.wait_for(queue, last)
    }

    /// Waits until record `mine` is durable, flushing whatever is queued when no one else is.
    fn wait_for<'a>(&'a self, mut queue: std::sync::MutexGuard<'a, Queue>, mine: u64) -> io::Result<()> {
        loop {
            if let Some((_, _, why)) = queue.failed.iter().find(|(first, last, _)| (*first..=*last).contains(&mine)) {
                return Err(io::Error::other(why.clone()));
            }
            if queue.durable >= mine {
                return Ok(());
            }
            if queue.flushing {
                queue = self.flushed.wait(queue).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // This caller flushes everything queued so far, its own record included.
            queue.flushing = true;
            let first = queue.durable + 1;
            let last = queue.queued;
            let records = std::mem::take(&mut queue.records);
            let runs = std::mem::take(&mut queue.runs);
            drop(queue);
            let flushed = self.flush(&records, runs);
            queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            queue.flushing = false;
            match flushed {
                Ok(()) => queue.durable = last,
                Err(e) => {
                    // Later records are numbered past `last`, so `durable` can jump over these.
                    queue.durable = last;
                    queue.failed.retain(|(_, l, _)| *l + 1_000_000 > last);
                    queue.failed.push((first, last, format!("cannot write the commit log: {e}")));
                }
            }
            self.flushed.notify_all();
        }
    }

    /// Appends `records` to the segment and syncs it; sets the segment aside once it is full.
    fn flush(&self, records: &[u8], runs: Vec<RunId>) -> io::Result<()> {
        let mut slot = self.segment.lock().unwrap_or_else(|e| e.into_inner());
        let segment = match slot.as_mut() {
            Some(segment) => segment,
            None => slot.insert(new_segment(&self.runs_dir)?),
        };
        let written = segment.file.write_all(records).and_then(|()| segment.file.sync_data());
        if let Err(e) = written {
            // Its tail is unknown now: the records before stay for a checkpoint, later ones go
            // to a fresh segment.
            if let Some(old) = slot.take() {
                checkpoint_later(&self.runs_dir, old);
            }
            return Err(e);
        }
        segment.bytes += records.len() as u64;
        segment.touched.extend(runs);
        if segment.bytes >= SEGMENT_BYTES
            && let Ok(fresh) = new_segment(&self.runs_dir)
        {
            let old = std::mem::replace(segment, fresh);
            checkpoint_later(&self.runs_dir, old);
        }
        Ok(())
    }
}

#[cfg(test)]
impl CommitLog {
    /// Lets the log go as a killed process does: no checkpoint, the file and its lock left.
    fn abandon(self) -> PathBuf {
        let segment = self.segment.lock().unwrap_or_else(|e| e.into_inner()).take().expect("a segment");
        segment.path
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        let _ = self.sync();
        if let Some(segment) = self.segment.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = checkpoint(&self.runs_dir, segment);
        }
    }
}

fn new_segment(runs_dir: &Path) -> io::Result<Segment> {
    let dir = runs_dir.join(COMMIT_DIR);
    if !dir.is_dir() {
        super::fs::create_private_dir_all(&dir)?;
    }
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
    let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{name}.log"));
    let mut file = super::fs::private_file().append(true).create_new(true).open(&path)?;
    file.lock()?;
    file.write_all(MAGIC.as_bytes())?;
    file.sync_all()?;
    super::fs::sync_dir(&dir)?;
    Ok(Segment { path, file, bytes: MAGIC.len() as u64, touched: HashSet::new() })
}

/// [`checkpoint`] on a thread of its own, so the flushes go on meanwhile.
fn checkpoint_later(runs_dir: &Path, segment: Segment) {
    let runs_dir = runs_dir.to_path_buf();
    std::thread::spawn(move || {
        if let Err(e) = checkpoint(&runs_dir, segment) {
            super::index::warn(&format!("a commit log could not be checkpointed (the next start recovers it): {e}"));
        }
    });
}

/// Runs a checkpoint fsyncs one by one, at most; past that one `syncfs` of their file system does
/// it (the kernel writes every dirty file of it in one pass, other programs' too, so a checkpoint
/// of a few runs, such as a CLI command's at exit, never waits for those).
const SYNC_ONE_BY_ONE: usize = 256;

/// Makes the files `segment`'s records touched durable, then removes it (its lock goes with it).
fn checkpoint(runs_dir: &Path, segment: Segment) -> io::Result<()> {
    if segment.touched.len() <= SYNC_ONE_BY_ONE || syncfs(runs_dir).is_err() {
        for id in &segment.touched {
            sync_run_files(runs_dir, id)?;
        }
        sync_file(&runs_dir.join(super::index::INDEX_FILE))?;
        super::fs::sync_dir(runs_dir)?;
    }
    fs::remove_file(&segment.path)?;
    super::fs::sync_dir(&runs_dir.join(COMMIT_DIR))
}

/// `syncfs(2)` of the file system `dir` is on: everything written to it is durable on return.
fn syncfs(dir: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let dir = File::open(dir)?;
    // SAFETY: syncfs takes a descriptor this function owns for the duration of the call.
    match unsafe { libc::syncfs(dir.as_raw_fd()) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

fn sync_run_files(runs_dir: &Path, id: &RunId) -> io::Result<()> {
    sync_file(&runs_dir.join(format!("{id}.json")))?;
    sync_file(&runs_dir.join(format!("{id}.journal")))
}

/// fsyncs `path` if it is there.
fn sync_file(path: &Path) -> io::Result<()> {
    match File::open(path) {
        Ok(file) => file.sync_all(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// A record read back from a log.
#[derive(Debug, Clone)]
enum Read {
    Whole { base: Option<String>, bytes: Vec<u8> },
    Append { base: String, number: usize, line: String },
}

/// The records of the log at `path` that check out, by run, each with its time; a torn or
/// damaged line ends the log.
fn read_log(path: &Path) -> io::Result<Vec<(u128, RunId, Read)>> {
    let bytes = fs::read(path)?;
    let mut records = Vec::new();
    let Some(body) = bytes.strip_prefix(MAGIC.as_bytes()) else { return Ok(records) };
    for line in body.split_inclusive(|b| *b == b'\n') {
        let Some(line) = line.strip_suffix(b"\n") else { break };
        let Some(space) = line.iter().position(|b| *b == b' ') else { break };
        let (check, rest) = (&line[..space], &line[space + 1..]);
        if digest(rest).as_bytes() != check {
            break;
        }
        let Some(record) = parse_record(rest) else { break };
        records.push(record);
    }
    Ok(records)
}

fn parse_record(rest: &[u8]) -> Option<(u128, RunId, Read)> {
    let mut fields = rest.splitn(5, |b| *b == b' ');
    let mut text = || fields.next().and_then(|f| std::str::from_utf8(f).ok());
    let (kind, ts, id, base) = (text()?, text()?.parse().ok()?, RunId::parse(text()?).ok()?, text()?);
    let payload = fields.next()?;
    let read = match kind {
        "W" => {
            let mut bytes = payload.to_vec();
            bytes.push(b'\n');
            Read::Whole { base: (base != "-").then(|| base.to_string()), bytes }
        }
        "A" => {
            let payload = std::str::from_utf8(payload).ok()?;
            let (number, line) = payload.split_once(' ')?;
            Read::Append { base: base.to_string(), number: number.parse().ok()?, line: line.to_string() }
        }
        _ => return None,
    };
    Some((ts, id, read))
}

/// Recovers every log in `runs_dir` whose handle is gone (see the module doc). Answers how many
/// runs it had to write again.
pub(super) fn recover(runs_dir: &Path) -> io::Result<usize> {
    let dir = runs_dir.join(COMMIT_DIR);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut dead = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_none_or(|x| x != "log") {
            continue;
        }
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => dead.push((path, file)),
            Err(fs::TryLockError::WouldBlock) => continue,
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    if dead.is_empty() {
        return Ok(0);
    }
    let mut by_run: HashMap<RunId, Vec<(u128, usize, Read)>> = HashMap::new();
    let mut order = 0;
    for (path, _) in &dead {
        for (ts, id, read) in read_log(path)? {
            order += 1;
            by_run.entry(id).or_default().push((ts, order, read));
        }
    }
    let mut written = 0;
    let mut created = Vec::new();
    for (id, mut records) in by_run {
        records.sort_by_key(|(ts, order, _)| (*ts, *order));
        let reads: Vec<Read> = records.into_iter().map(|(_, _, r)| r).collect();
        match replay(runs_dir, &id, &reads)? {
            Replayed::Created => {
                written += 1;
                created.push(id.clone());
            }
            Replayed::Rewritten => written += 1,
            Replayed::Kept => {}
        }
        sync_run_files(runs_dir, &id)?;
    }
    if !created.is_empty() {
        // The index lines of those runs may be lost with them: a damaged index is rebuilt from
        // the run files, a whole one gets the lines it lacks.
        if super::index::inspect(runs_dir)?.is_some() {
            super::index::repair(runs_dir, &HashSet::new(), true)?;
        } else {
            let indexed: HashSet<RunId> = super::index::salvage(runs_dir).into_iter().collect();
            for id in created.iter().filter(|id| !indexed.contains(id)) {
                super::index::append(runs_dir, id, true)?;
            }
        }
    }
    sync_file(&runs_dir.join(super::index::INDEX_FILE))?;
    super::fs::sync_dir(runs_dir)?;
    for (path, file) in dead {
        fs::remove_file(&path)?;
        drop(file);
    }
    super::fs::sync_dir(&dir)?;
    Ok(written)
}

enum Replayed {
    Created,
    Rewritten,
    Kept,
}

/// Brings run `id`'s files to the newest state its records (in time order) and the files on disk
/// agree on, durably.
fn replay(runs_dir: &Path, id: &RunId, reads: &[Read]) -> io::Result<Replayed> {
    let run_path = runs_dir.join(format!("{id}.json"));
    let journal_path = runs_dir.join(format!("{id}.journal"));
    let visible = match fs::read(&run_path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let wholes: Vec<(Option<&String>, &Vec<u8>)> = reads
        .iter()
        .filter_map(|r| match r {
            Read::Whole { base, bytes } => Some((base.as_ref(), bytes)),
            Read::Append { .. } => None,
        })
        .collect();
    let newest = wholes.last().map(|(_, bytes)| *bytes);
    // The run file the records end with, when the one on disk is older than the log.
    let final_file: Option<&Vec<u8>> = match (&visible, newest) {
        (_, None) => None,
        (None, Some(newest)) => Some(newest),
        (Some(on_disk), Some(newest)) => {
            let d = digest(on_disk);
            let at = wholes.iter().rposition(|(_, bytes)| digest(bytes) == d);
            let before = wholes.iter().any(|(base, _)| base.is_some_and(|b| *b == d));
            let unreadable = serde_json::from_slice::<serde_json::Value>(on_disk).is_err();
            match at {
                Some(i) if i + 1 == wholes.len() => None,
                Some(_) => Some(newest),
                None if before || unreadable => Some(newest),
                None => None,
            }
        }
    };
    let run_file: &[u8] = match (final_file, &visible) {
        (Some(f), _) => f,
        (None, Some(v)) => v,
        (None, None) => return Ok(Replayed::Kept),
    };
    let base = digest(run_file);
    let appended: Vec<(usize, &str)> = reads
        .iter()
        .filter_map(|r| match r {
            Read::Append { base: b, number, line } if *b == base => Some((*number, line.as_str())),
            _ => None,
        })
        .collect();
    let rewrite = final_file.is_some();
    if rewrite {
        super::fs::atomic_write(&run_path, run_file)?;
    }
    let mut lines = if rewrite { Vec::new() } else { super::journal::read_lines(&journal_path, run_file)?.unwrap_or_default() };
    let before = lines.len();
    for (number, line) in appended {
        if number == lines.len() {
            lines.push(line.to_string());
        } else if number > lines.len() {
            break;
        }
    }
    if lines.len() != before || rewrite {
        if lines.is_empty() {
            match fs::remove_file(&journal_path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        } else {
            super::fs::atomic_write(&journal_path, super::journal::whole(&base, &lines).as_bytes())?;
        }
    }
    Ok(match (rewrite, visible.is_none()) {
        (true, true) => Replayed::Created,
        (true, false) => Replayed::Rewritten,
        _ if lines.len() != before => Replayed::Rewritten,
        _ => Replayed::Kept,
    })
}

/// A shared, lazily opened commit log for a store handle and its clones.
#[derive(Default, Clone)]
pub(super) struct Shared(Arc<std::sync::OnceLock<Option<Arc<CommitLog>>>>);

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("commit log")
    }
}

impl Shared {
    /// The log, opened on first use; `None` when it cannot be (the store then syncs every write).
    pub(super) fn get(&self, runs_dir: &Path) -> Option<&CommitLog> {
        self.0.get_or_init(|| CommitLog::open(runs_dir).ok().map(Arc::new)).as_deref()
    }

    /// The log if a save opened it already (a handle that only read has none to sync).
    pub(super) fn opened(&self) -> Option<&CommitLog> {
        self.0.get().and_then(|log| log.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> RunId {
        RunId::parse(s).unwrap()
    }

    #[test]
    fn records_read_back_and_a_torn_or_damaged_tail_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let log = CommitLog::open(dir.path()).unwrap();
        let a = id("d7b493cae249");
        log.commit(Record::Whole { id: &a, base: None, bytes: b"{\"x\": \"a b\"}\n" }, true).unwrap();
        log.commit(Record::Append { id: &a, base: "abc", number: 0, line: "00 [[\"head\", \"\", 1]]" }, true).unwrap();
        let path = log.segment.lock().unwrap().as_ref().unwrap().path.clone();
        let read = read_log(&path).unwrap();
        assert_eq!(read.len(), 2);
        assert!(matches!(&read[0].2, Read::Whole { base: None, bytes } if bytes == b"{\"x\": \"a b\"}\n"));
        assert!(matches!(&read[1].2, Read::Append { base, number: 0, line } if base == "abc" && line == "00 [[\"head\", \"\", 1]]"));
        let full = fs::read(&path).unwrap();
        let last = full[..full.len() - 1].iter().rposition(|b| *b == b'\n').unwrap() + 1;
        for cut in last..full.len() {
            fs::write(&path, &full[..cut]).unwrap();
            assert_eq!(read_log(&path).unwrap().len(), 1, "cut at {cut}");
        }
        let mut flipped = full.clone();
        flipped[last + 40] ^= 1;
        fs::write(&path, &flipped).unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 1);
    }

    /// A record added without waiting goes out with the next flush: a later record's, or a sync.
    #[test]
    fn a_record_not_waited_for_is_durable_with_the_next_flush() {
        let dir = tempfile::tempdir().unwrap();
        let log = CommitLog::open(dir.path()).unwrap();
        let path = log.segment.lock().unwrap().as_ref().unwrap().path.clone();
        let (a, b) = (id("00000000000a"), id("00000000000b"));
        log.commit(Record::Whole { id: &a, base: None, bytes: b"{}\n" }, false).unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 0, "not written yet");
        log.commit(Record::Whole { id: &b, base: None, bytes: b"{}\n" }, true).unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 2, "the next flush takes both");
        log.commit(Record::Whole { id: &a, base: None, bytes: b"{}\n" }, false).unwrap();
        log.sync().unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 3);
        log.sync().unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 3, "a sync with nothing queued writes nothing");
    }

    #[test]
    fn a_live_log_is_not_recovered_and_a_dropped_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let log = CommitLog::open(dir.path()).unwrap();
        let a = id("d7b493cae249");
        log.commit(Record::Whole { id: &a, base: None, bytes: b"{}\n" }, true).unwrap();
        assert_eq!(recover(dir.path()).unwrap(), 0, "its handle holds it");
        assert!(!dir.path().join("d7b493cae249.json").exists(), "not written by recovery");
        drop(log);
        assert_eq!(fs::read_dir(dir.path().join(COMMIT_DIR)).unwrap().count(), 0, "checkpointed and removed");
    }

    #[test]
    fn many_threads_share_flushes_and_every_record_is_durable_when_commit_returns() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(CommitLog::open(dir.path()).unwrap());
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for n in 0..50 {
                        let run = RunId::from_bytes([t as u8, n as u8, 0, 0, 0, 1]);
                        log.commit(Record::Whole { id: &run, base: None, bytes: format!("{{\"n\":{n}}}\n").as_bytes() }, true).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let path = log.segment.lock().unwrap().as_ref().unwrap().path.clone();
        assert_eq!(read_log(&path).unwrap().len(), 400);
    }
    fn journal_line(n: usize) -> String {
        let body = format!("[[\"history\",\"{n}\",{{\"n\":{n}}}]]");
        format!("{} {body}", digest(body.as_bytes()))
    }

    /// A log left by a process that ended is replayed over what the files lost (a machine that
    /// went down before the disk took them) and leaves alone what is newer than it.
    #[test]
    fn a_log_left_behind_brings_back_what_the_files_lost_and_nothing_older() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path();
        let log = CommitLog::open(runs).unwrap();
        let (a, b, c, d) = (id("00000000000a"), id("00000000000b"), id("00000000000c"), id("00000000000d"));
        let (b1, b2) = (b"{\"b\":1}\n".to_vec(), b"{\"b\":2}\n".to_vec());
        // a: started and only in the log (its file was to be written at its next save).
        log.commit(Record::Whole { id: &a, base: None, bytes: b"{\"a\":1}\n" }, true).unwrap();
        // b: two whole saves and two journal lines; the disk kept only the first save.
        log.commit(Record::Whole { id: &b, base: None, bytes: &b1 }, true).unwrap();
        log.commit(Record::Whole { id: &b, base: Some(&digest(&b1)), bytes: &b2 }, true).unwrap();
        for n in 0..2 {
            log.commit(Record::Append { id: &b, base: &digest(&b2), number: n, line: &journal_line(n) }, true).unwrap();
        }
        fs::write(runs.join("00000000000b.json"), &b1).unwrap();
        // c: written since by another handle (its file is none of the log's).
        log.commit(Record::Whole { id: &c, base: None, bytes: b"{\"c\":1}\n" }, true).unwrap();
        fs::write(runs.join("00000000000c.json"), b"{\"c\":2}\n").unwrap();
        // d: the files have everything (a killed process): its journal keeps its first line
        // and gets the second back.
        let d1 = b"{\"d\":1}\n".to_vec();
        log.commit(Record::Whole { id: &d, base: None, bytes: &d1 }, true).unwrap();
        for n in 0..2 {
            log.commit(Record::Append { id: &d, base: &digest(&d1), number: n, line: &journal_line(n) }, true).unwrap();
        }
        fs::write(runs.join("00000000000d.json"), &d1).unwrap();
        fs::write(runs.join("00000000000d.journal"), super::super::journal::whole(&digest(&d1), &[journal_line(0)])).unwrap();

        let left = log.abandon();
        assert!(left.exists());
        assert_eq!(recover(runs).unwrap(), 3, "a created, b and d written again");
        assert!(!left.exists(), "the log is gone once applied");
        assert_eq!(fs::read(runs.join("00000000000a.json")).unwrap(), b"{\"a\":1}\n");
        assert!(super::super::index::salvage(runs).contains(&a), "a run the log created is listed");
        assert_eq!(fs::read(runs.join("00000000000b.json")).unwrap(), b2);
        let lines = super::super::journal::read_lines(&runs.join("00000000000b.journal"), &b2).unwrap();
        assert_eq!(lines, Some(vec![journal_line(0), journal_line(1)]));
        assert_eq!(fs::read(runs.join("00000000000c.json")).unwrap(), b"{\"c\":2}\n", "newer than the log: kept");
        let lines = super::super::journal::read_lines(&runs.join("00000000000d.journal"), &d1).unwrap();
        assert_eq!(lines, Some(vec![journal_line(0), journal_line(1)]));
        assert_eq!(recover(runs).unwrap(), 0, "nothing left to recover");
    }
}
