//! Figures and printing: duration statistics, the table, durations as text, what the benchmark
//! reads from its environment (its knobs, the load average, the filesystem), and [`die`].
//!
//! Figures are informational: the benchmark stops with an error only through [`die`], for a run,
//! a listing or a setting that went wrong, never for a timing.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) struct Stats {
    pub(super) mean: Duration,
    pub(super) median: Duration,
    min: Duration,
    max: Duration,
    pub(super) n: usize,
}

impl Stats {
    pub(super) fn of(mut times: Vec<Duration>) -> Stats {
        times.sort();
        let n = times.len().max(1);
        let sum: Duration = times.iter().sum();
        let median = match times.len() {
            0 => Duration::ZERO,
            len if len % 2 == 1 => times[len / 2],
            len => (times[len / 2 - 1] + times[len / 2]) / 2,
        };
        Stats {
            mean: sum / n as u32,
            median,
            min: times.first().copied().unwrap_or_default(),
            max: times.last().copied().unwrap_or_default(),
            n: times.len(),
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mean {}, median {}, min {}, max {} (n={})", ms(self.mean), ms(self.median), ms(self.min), ms(self.max), self.n)
    }
}

/// The mean write time of each batch.
pub(super) fn batch_means(batches: &[Vec<Duration>], per_batch: usize) -> Vec<Duration> {
    batches.iter().map(|b| b.iter().sum::<Duration>() / per_batch.max(1) as u32).collect()
}

pub(super) fn mean_of(iters: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..iters / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed() / iters as u32
}

pub(super) struct Row {
    cells: [String; 5],
}

impl Row {
    pub(super) fn new(measure: &str, value: String, baseline: String, ratio: String, target: String) -> Row {
        Row { cells: [measure.to_string(), value, baseline, ratio, target] }
    }
}

pub(super) fn print_table(rows: &[Row]) {
    let header = Row::new("measure", "value".into(), "baseline".into(), "ratio".into(), "target".into());
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(rows) {
        for (w, cell) in widths.iter_mut().zip(&row.cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &Row| {
        let cells: Vec<String> = row.cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("| {} |", cells.join(" | "));
    };
    line(&header);
    let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    println!("|-{}-|", dashes.join("-|-"));
    for row in rows {
        line(row);
    }
}

pub(super) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

pub(super) fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub(super) fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

pub(super) fn pass(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

pub(super) fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| die(&format!("{name}={v:?} is not a number"))),
        Err(_) => default,
    }
}

pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The mount holding `path` (longest mount-point prefix in /proc/self/mounts).
pub(super) fn filesystem_of(path: &Path) -> String {
    let Ok(mounts) = fs::read_to_string("/proc/self/mounts") else {
        return "unknown (no /proc/self/mounts)".into();
    };
    mounts
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (device, point, kind, options) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
            let point = point.replace("\\040", " ");
            path.starts_with(&point).then(|| (point.len(), format!("{kind} on {device} mounted at {point} ({options})")))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, s)| s)
}

pub(super) fn die(message: &str) -> ! {
    eprintln!("bench error: {message}");
    std::process::exit(1)
}
