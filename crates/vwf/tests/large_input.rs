//! The large-input pattern, measured: a file far bigger than a run should hold is split into
//! chunk files by a command step, a loop reads one chunk per pass, and the run records only
//! pointers and per-chunk totals. The run file grows with the number of chunks, not records.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::{Home, examples_dir, run_file};
use serde_json::{Value, json};

const RECORDS: u64 = 50_000;
const CHUNK_RECORDS: u64 = 1_000;
/// Well under a tenth of the input; the measured size is printed by the test. Each step keeps
/// the inputs it was given (the command line and its template values: a chunk's path, not its
/// records), so the file grows with the number of chunks, never with the input.
const RUN_FILE_LIMIT: u64 = 160 * 1024;

/// Writes `RECORDS` order records of about 80 bytes each; returns (bytes written, sum of `amount_cents`).
fn write_orders(path: &Path) -> (u64, u64) {
    let file = std::fs::File::create(path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    let mut out = std::io::BufWriter::new(file);
    let (mut bytes, mut sum) = (0u64, 0u64);
    for i in 0..RECORDS {
        let amount = (i * 7919) % 100_000;
        let line = format!(
            "{{\"id\":{i},\"sku\":\"SKU-{:05}\",\"qty\":{},\"amount_cents\":{amount},\"region\":\"eu-west-1\"}}\n",
            i % 977,
            1 + i % 5
        );
        out.write_all(line.as_bytes()).expect("write a record");
        bytes += line.len() as u64;
        sum += amount;
    }
    out.flush().expect("flush");
    (bytes, sum)
}

#[test]
fn large_input_pattern_keeps_the_run_file_small() {
    let home = Home::new();
    let template = std::fs::read_to_string(examples_dir().join("large-input-chunks.designer.json")).expect("the template");
    let graph: Value = serde_json::from_str(&template).expect("template JSON");
    home.save("large-input-chunks", &graph);

    let work = tempfile::tempdir().expect("tempdir");
    let input_path = work.path().join("orders.ndjson");
    let (input_bytes, sum) = write_orders(&input_path);
    assert!(input_bytes > 3_500_000, "the input should be about 4 MB, is {input_bytes} bytes");
    let scratch = work.path().join("scratch");
    std::fs::create_dir(&scratch).expect("scratch dir");

    let input = json!({"path": input_path, "chunk_records": CHUNK_RECORDS, "sum_field": "amount_cents"});
    let out = home
        .vwf()
        .env("TMPDIR", &scratch)
        .args(["--json", "run", "large-input-chunks", "--input", &input.to_string()])
        .output()
        .expect("run vwf");
    let run = common::parse(&out);
    assert_eq!((common::code(&out), run["status"].as_str()), (0, Some("done")), "{run}");

    let chunks = RECORDS.div_ceil(CHUNK_RECORDS);
    assert_eq!(run["outputs"]["each"]["count"], chunks, "one pass per chunk");
    assert_eq!(run["outputs"]["total"]["data"], json!({"chunks": chunks, "records": RECORDS, "sum": sum}), "{}", run["outputs"]["total"]);

    let run_id = run["run_id"].as_str().expect("run_id");
    let path = home.runs_dir().join(format!("{run_id}.json"));
    let size = std::fs::metadata(&path).expect("run file").len();
    // Measured: 97,885 bytes for 50 chunks of 1,000 records against a 4,033,326-byte input
    // (about 2.4%, with every step's inputs); the exact figure moves with the length of the
    // scratch path in each pointer.
    eprintln!(
        "input: {input_bytes} bytes, {RECORDS} records in {chunks} chunks; run file: {size} bytes ({:.2}% of the input)",
        100.0 * size as f64 / input_bytes as f64
    );
    assert!(size < RUN_FILE_LIMIT, "run file is {size} bytes, over {RUN_FILE_LIMIT}");
    // No record entered the run: only pointers and per-chunk totals did.
    let text = std::fs::read_to_string(&path).expect("run file text");
    assert!(!text.contains("SKU-"), "a record leaked into the run file");
    assert_eq!(run_file(&home, run_id)["status"], "done");
    // The scratch chunks were removed by the totalling step.
    assert_eq!(std::fs::read_dir(&scratch).expect("scratch").count(), 0, "chunk files left behind");
}
