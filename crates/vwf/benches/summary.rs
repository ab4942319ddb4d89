//! The closing table of `scripts/bench`: every row the benchmarks recorded in
//! `$VWF_BENCH_SUMMARY` (see `rows/mod.rs`), one table, in the order they were measured, with
//! the targets and PASS/MISS. Timing never fails it; it exits 1 only when there is no summary
//! file to read or a line of it is not a row.

// Only the variable's name is used here; the rows are written by the other benchmarks.
#[allow(dead_code)]
mod rows;

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::var_os(rows::SUMMARY_VAR).filter(|p| !p.is_empty()) else {
        eprintln!("set {} to the file the benchmarks recorded their rows in (scripts/bench does)", rows::SUMMARY_VAR);
        return ExitCode::FAILURE;
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cannot read {}: {e}", std::path::Path::new(&path).display());
            return ExitCode::FAILURE;
        }
    };
    let mut table = vec![["measure", "figure", "target", "verdict"].map(String::from)];
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(row) = serde_json::from_str::<serde_json::Value>(line) else {
            eprintln!("not a summary row: {line}");
            return ExitCode::FAILURE;
        };
        table.push(["measure", "figure", "target", "verdict"].map(|k| row[k].as_str().unwrap_or("?").to_string()));
    }
    let mut widths = [0usize; 4];
    for cells in &table {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let load =
        std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default();
    println!("Summary ({} cpus, load average now {load}; figures from this run only, ratios against baselines of this run)", cpus());
    println!();
    for (i, cells) in table.iter().enumerate() {
        let cells: Vec<String> = cells.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        println!("| {} |", cells.join(" | "));
        if i == 0 {
            println!("|{}|", widths.map(|w| "-".repeat(w + 2)).join("|"));
        }
    }
    let misses = table.iter().skip(1).filter(|c| c[3] == "MISS").count();
    println!();
    println!("{} rows, {misses} MISS. Benchmarks never fail on timing: a MISS is a figure to explain, not an error.", table.len() - 1);
    ExitCode::SUCCESS
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}
