//! Figures and printing: latency statistics, the table of phases, durations as text, and what the
//! benchmark reads from its environment (its knobs, the load average, the open-file limit).
//!
//! Figures are informational: nothing here fails the benchmark.

use std::fs;
use std::time::Duration;

const OUTPUT_SHOWN: usize = 10;

pub(super) fn print_output(lines: &[String]) {
    if lines.is_empty() {
        println!("server output after its first line: none");
        return;
    }
    println!("server output after its first line ({} lines):", lines.len());
    for line in lines.iter().take(OUTPUT_SHOWN) {
        println!("    {line}");
    }
    if lines.len() > OUTPUT_SHOWN {
        println!("    … {} more; the last: {}", lines.len() - OUTPUT_SHOWN, lines.last().map_or("", String::as_str));
    }
}

pub(super) struct Stats {
    pub(super) mean: Duration,
    pub(super) p50: Duration,
    pub(super) p99: Duration,
    max: Duration,
    pub(super) n: usize,
}

impl Stats {
    pub(super) fn of(mut times: Vec<Duration>) -> Stats {
        times.sort();
        let n = times.len();
        // Nearest rank: the smallest value with at least p of the samples at or below it.
        let rank = |p: f64| times.get(((p * n as f64).ceil() as usize).clamp(1, n.max(1)) - 1).copied().unwrap_or_default();
        Stats {
            mean: times.iter().sum::<Duration>() / n.max(1) as u32,
            p50: rank(0.50),
            p99: rank(0.99),
            max: times.last().copied().unwrap_or_default(),
            n,
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mean {}, p50 {}, p99 {}, max {} (n={})", ms(self.mean), ms(self.p50), ms(self.p99), ms(self.max), self.n)
    }
}

pub(super) struct Row {
    pub(super) cells: [String; 10],
}

impl Row {
    pub(super) fn new(measure: &str, n: String, errors: String, per_second: String, s: &Stats, ratio: String) -> Row {
        Row { cells: [measure.to_string(), n, errors, per_second, ms(s.p50), ms(s.p99), ms(s.max), ms(s.mean), ratio, "-".into()] }
    }
}

pub(super) fn print_table(rows: &[Row]) {
    let header: [String; 10] =
        ["measure", "requests", "errors", "req/s", "p50", "p99", "max", "mean", "vs baseline", "server RSS / peak"].map(String::from);
    let mut widths = [0usize; 10];
    for cells in std::iter::once(&header).chain(rows.iter().map(|r| &r.cells)) {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String; 10]| {
        let cells: Vec<String> =
            cells.iter().zip(widths).enumerate().map(|(i, (c, w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") }).collect();
        println!("| {} |", cells.join(" | "));
    };
    line(&header);
    // Numbers align right (`---:`), the measure left.
    let dashes: Vec<String> =
        widths.iter().enumerate().map(|(i, w)| if i == 0 { "-".repeat(w + 2) } else { format!("{}:", "-".repeat(w + 1)) }).collect();
    println!("|{}|", dashes.join("|"));
    for row in rows {
        line(&row.cells);
    }
}

pub(super) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

pub(super) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

pub(super) fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// A comma-separated list of client counts (each at least 1), e.g. `16,200`.
pub(super) fn env_counts(name: &str, default: &[usize]) -> Result<Vec<usize>, String> {
    let Ok(v) = std::env::var(name) else { return Ok(default.to_vec()) };
    let counts: Result<Vec<usize>, _> = v.split(',').map(|c| c.trim().parse::<usize>().map(|n| n.max(1))).collect();
    counts.ok().filter(|c| !c.is_empty()).ok_or_else(|| format!("{name}={v:?} is not a list of numbers such as 16,200"))
}

pub(super) fn env_usize(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().map_err(|_| format!("{name}={v:?} is not a number")),
        Err(_) => Ok(default),
    }
}

pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Raises this process's soft open-file limit towards `wanted` (at most the hard limit); the
/// server started afterwards inherits it. Returns the limit in force, for the header.
pub(super) fn raise_open_files(wanted: u64) -> String {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local rlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return "unknown (getrlimit failed)".into();
        }
        let before = limit.rlim_cur;
        let target = (wanted as libc::rlim_t).min(limit.rlim_max);
        if before < target {
            limit.rlim_cur = target;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return format!("{before} (could not raise it to {target}; raise `ulimit -n` if requests fail with EMFILE)");
            }
            return format!("{target} (raised from {before}; hard limit {}; {wanted} wanted)", limit.rlim_max);
        }
        format!("{before} (hard limit {}; {wanted} wanted)", limit.rlim_max)
    }
}
