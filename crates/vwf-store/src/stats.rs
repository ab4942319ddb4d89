//! The file store's stats records: `workflow-runs/.stats`, one line per ended run, appended when
//! the run ends, so `GET /stats` over 100,000 runs reads one file instead of 100,000.
//!
//! ```text
//! 1764720000000 d7b493cae249 daily-brief\t{"run_id":"d7b493cae249",…}
//! ```
//!
//! A line (written with the newline before it) is the end's instant in epoch milliseconds, the run id, the design name, a tab, and the
//! record as JSON. A run that ends again (a retried step) appends a new line; the last line of a
//! run is its record. The prefix lets a query skip the lines of other designs and periods, and
//! find each run's last line, without parsing their JSON.
//!
//! Appends are single `write`s to a file opened with `O_APPEND`, under a shared lock of
//! `.stats.lock`; the file is (re)built from the run files under the exclusive lock, when it is
//! missing (a store written before stats were kept, or copied without it). An appender finds
//! no file and writes nothing: the build that follows reads that run's file. Like the listing
//! index, the file is a hint: a line lost to a crash between a run's last save and its append is
//! back after the file is deleted (the next query rebuilds it). A torn last line is skipped.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use vwf_core::names::{DesignName, RunId};
use vwf_core::run::Run;
use vwf_core::stats::RunStats;
use vwf_core::time::Ts;

use super::StoreError;
use super::atomic::atomic_write;
use super::fs::{FileStore, io_error, private_file};

pub(super) const STATS_FILE: &str = ".stats";
pub(super) const STATS_LOCK: &str = ".stats.lock";
/// Run ids read per page while building the file.
const PAGE: usize = 1000;

/// The line of `stats`, starting with its newline: a line torn by a crash is ended by the next
/// append, so it never swallows that one.
fn line(stats: &RunStats) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_string(stats).map_err(|e| StoreError::encode(format!("the stats of run {}", stats.run_id), e))?;
    Ok(format!("\n{} {} {}\t{json}", stats.ended_at.timestamp_millis(), stats.run_id, stats.design).into_bytes())
}

fn lock(dir: &Path, exclusive: bool) -> Result<File, StoreError> {
    let path = dir.join(STATS_LOCK);
    let file = private_file().write(true).create(true).truncate(false).open(&path).map_err(|e| io_error("open", &path, e))?;
    let locked = if exclusive { file.lock() } else { file.lock_shared() };
    locked.map_err(|e| io_error("lock", &path, e))?;
    Ok(file)
}

impl FileStore {
    /// Makes the runs directory of a store that has none yet with an empty `.stats` in it (a
    /// store without runs has every record it needs), so its first query has nothing to rebuild.
    /// The directory is made under another name and renamed into place, so no run is saved in it
    /// before its `.stats` exists; when another process made it first, that one stands.
    pub(super) fn start_runs_dir(&self) -> Result<(), StoreError> {
        let dir = self.runs_dir();
        if dir.is_dir() {
            return Ok(());
        }
        let Some(parent) = dir.parent() else { return Ok(()) };
        super::fs::create_dir(parent)?;
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).map_err(|e| StoreError::other("cannot get random bytes", e.to_string()))?;
        let name = random.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let fresh = parent.join(format!(".workflow-runs.{name}.tmp"));
        super::fs::create_dir(&fresh)?;
        let made = private_file().write(true).create_new(true).open(fresh.join(STATS_FILE)).and_then(|_| fs::rename(&fresh, &dir));
        if made.is_err() {
            let _ = fs::remove_dir_all(&fresh);
        }
        Ok(())
    }

    pub(super) fn append_stats(&self, stats: &RunStats) -> Result<(), StoreError> {
        let dir = self.runs_dir();
        let bytes = line(stats)?;
        let _lock = lock(&dir, false)?;
        let path = dir.join(STATS_FILE);
        let mut file = match OpenOptions::new().append(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error("open", &path, e)),
        };
        file.write_all(&bytes).map_err(|e| io_error("write", &path, e))
    }

    pub(super) fn read_stats(&self, from: Ts, to: Ts, design: Option<&DesignName>) -> Result<Vec<RunStats>, StoreError> {
        let dir = self.runs_dir();
        let path = dir.join(STATS_FILE);
        let text = match fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.build_stats(&dir)?,
            Err(e) => return Err(io_error("read", &path, e)),
        };
        let (from, to) = (from.timestamp_millis(), to.timestamp_millis());
        // Each run's last line, in order of first appearance.
        let mut last: HashMap<&[u8], usize> = HashMap::new();
        let mut lines: Vec<&[u8]> = Vec::new();
        for l in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let Some(id) = l.split(|b| *b == b' ').nth(1) else { continue };
            match last.get(id) {
                Some(&i) => lines[i] = l,
                None => {
                    last.insert(id, lines.len());
                    lines.push(l);
                }
            }
        }
        let wanted: Vec<&[u8]> = lines.into_iter().filter(|l| in_query(l, from, to, design)).collect();
        Ok(parse_all(&wanted))
    }

    /// Writes the file from the run files, under the exclusive lock (unless another caller wrote
    /// it meanwhile), and answers its bytes.
    fn build_stats(&self, dir: &Path) -> Result<Vec<u8>, StoreError> {
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let _lock = lock(dir, true)?;
        let path = dir.join(STATS_FILE);
        if let Ok(text) = fs::read(&path) {
            return Ok(text);
        }
        let mut bytes = Vec::new();
        let mut before: Option<RunId> = None;
        loop {
            let ids = self.run_ids_page(before.as_ref(), PAGE)?;
            for id in &ids {
                let Ok(value) = self.read_run_file(id) else { continue };
                let Some(stats) = serde_json::from_value::<Run>(value).ok().and_then(|r| r.stats()) else { continue };
                bytes.extend(line(&stats)?);
            }
            match ids.last() {
                Some(id) if ids.len() == PAGE => before = Some(id.clone()),
                _ => break,
            }
        }
        atomic_write(&path, &bytes).map_err(|e| io_error("write", &path, e))?;
        Ok(bytes)
    }
}

/// Whether the line's prefix says its run ended in `[from, to)` (epoch milliseconds), of `design`.
fn in_query(line: &[u8], from: i64, to: i64, design: Option<&DesignName>) -> bool {
    let Some(tab) = line.iter().position(|b| *b == b'\t') else { return false };
    let mut head = line[..tab].splitn(3, |b| *b == b' ');
    let (Some(at), Some(_), Some(name)) = (head.next(), head.next(), head.next()) else { return false };
    let Some(at) = std::str::from_utf8(at).ok().and_then(|s| s.parse::<i64>().ok()) else { return false };
    at >= from && at < to && design.is_none_or(|d| d.as_str().as_bytes() == name)
}

/// The records of `lines` (a line that does not parse, torn by a crash, is left out), parsed on
/// as many threads as the machine has cores once there are enough to share: parsing is most of
/// a report's time.
fn parse_all(lines: &[&[u8]]) -> Vec<RunStats> {
    fn parse(lines: &[&[u8]]) -> Vec<RunStats> {
        lines
            .iter()
            .filter_map(|l| {
                let tab = l.iter().position(|b| *b == b'\t')?;
                serde_json::from_slice::<RunStats>(&l[tab + 1..]).ok()
            })
            .collect()
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(8);
    if threads < 2 || lines.len() < 20_000 {
        return parse(lines);
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = lines.chunks(lines.len().div_ceil(threads)).map(|part| scope.spawn(move || parse(part))).collect();
        parts.into_iter().flat_map(|p| p.join().unwrap_or_default()).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use vwf_core::run::Status;
    use vwf_core::usage::Usage;

    fn record(id: &str, ended: &str, status: Status) -> RunStats {
        let at = vwf_core::time::parse(ended).unwrap_or_default();
        RunStats {
            run_id: RunId::parse(id).unwrap_or_else(|_| unreachable!()),
            design: DesignName::parse("d").unwrap_or_else(|_| unreachable!()),
            status,
            started_at: at,
            ended_at: at,
            usage: Usage::default(),
            cost: Some(0.0),
            currency: None,
            steps: vec![],
        }
    }

    #[test]
    fn the_last_line_of_a_run_wins_and_a_torn_line_is_skipped() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = FileStore::new(home.path().to_path_buf());
        fs::create_dir_all(store.runs_dir()).unwrap_or_else(|e| panic!("{e}"));
        let all = |s: &FileStore| s.read_stats(Ts::MIN_UTC, vwf_core::time::latest(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(all(&store).is_empty(), "an empty store builds an empty file");
        let first = record("00000000000a", "2026-12-01T00:00:00Z", Status::Failed);
        let again = record("00000000000a", "2026-12-02T00:00:00Z", Status::Done);
        let other = record("00000000000b", "2026-12-01T05:00:00Z", Status::Done);
        for r in [&first, &other, &again] {
            store.append_stats(r).unwrap_or_else(|e| panic!("{e}"));
        }
        let path = store.runs_dir().join(STATS_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap_or_else(|e| panic!("{e}"));
        // A torn append: a prefix of what one append writes (a newline, then the record).
        f.write_all(b"\n1764547200000 00000000000c d\t{\"run_id\":\"00000000").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all(&store), vec![again.clone(), other.clone()]);
        let day1 = store
            .read_stats(
                vwf_core::time::parse("2026-12-01T00:00:00Z").unwrap_or_default(),
                vwf_core::time::parse("2026-12-02T00:00:00Z").unwrap_or_default(),
                None,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(day1, vec![other], "a run counts where its last end is");
    }
}
