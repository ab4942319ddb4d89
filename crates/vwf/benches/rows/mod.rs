//! The summary rows the benchmarks leave for `scripts/bench`'s closing table: each benchmark
//! that measures a figure the targets name records it here, with its target and verdict, and
//! `benches/summary.rs` prints them all as one table at the end.
//!
//! Rows go to the file named by `$VWF_BENCH_SUMMARY`, one JSON object per line, appended (so
//! several benchmarks in one `scripts/bench` add to one file); without the variable nothing is
//! written. A verdict compares figures measured in the same run; it never fails a benchmark.

use std::io::Write;

/// The variable naming the summary file.
pub const SUMMARY_VAR: &str = "VWF_BENCH_SUMMARY";

/// One row: what was measured, the figure, the target and whether it was met (`None`: a figure
/// reported without a target).
pub struct Row {
    pub measure: String,
    pub figure: String,
    pub target: String,
    pub met: Option<bool>,
}

impl Row {
    pub fn new(measure: impl Into<String>, figure: impl Into<String>, target: impl Into<String>, met: Option<bool>) -> Row {
        Row { measure: measure.into(), figure: figure.into(), target: target.into(), met }
    }

    pub fn verdict(&self) -> &'static str {
        match self.met {
            Some(true) => "PASS",
            Some(false) => "MISS",
            None => "-",
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({"measure": self.measure, "figure": self.figure, "target": self.target, "verdict": self.verdict()})
    }
}

/// Appends `rows` to the summary file, when one is named; a file that cannot be written is
/// said on standard error (the benchmark's own output still has the figures).
pub fn record(rows: &[Row]) {
    let Some(path) = std::env::var_os(SUMMARY_VAR).filter(|p| !p.is_empty()) else { return };
    let text: String = rows.iter().map(|r| format!("{}\n", r.json())).collect();
    let written = std::fs::OpenOptions::new().create(true).append(true).open(&path).and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!("cannot add to the summary file {}: {e}", std::path::Path::new(&path).display());
    }
}
