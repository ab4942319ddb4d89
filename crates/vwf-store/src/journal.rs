//! The file store's journal of a run in flight: the parts of the run saved since its run file
//! (see `vwf_core::run::journal`), so a step costs one append of its own size and one
//! `fdatasync` instead of rewriting the whole run file.
//!
//! `workflow-runs/<id>.journal`, written only under the run's lock:
//!
//! ```text
//! vwf-journal 1 <digest of the run file's bytes>
//! <check> [["<kind>", "<key>", <value>], …]
//! …
//! ```
//!
//! One line per save, holding every part that save changed, and `check` a digest of the rest of
//! its line: a save is applied whole or not at all. A reader applies the lines after the header
//! in order (a later line of a part wins) and stops at the first line that is cut short or does
//! not check out: a writer killed mid-append leaves a torn tail, never half a save.
//!
//! The header names the run file the parts apply to. A whole save writes the run file and then
//! removes the journal; a writer killed in between leaves a journal whose header names other
//! bytes, which readers ignore and `vwf doctor` removes. The digest is SHA-256 (the crate the run
//! index already uses), truncated to 16 bytes.
//!
//! Written by hand: it is a few lines of framing over an append-only file; the write-ahead-log
//! crates of the field bring their own storage layout, where this journal must sit beside the run
//! file that stays the readable record of a run at rest.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};
use vwf_core::run::journal::Part;

const MAGIC: &str = "vwf-journal 1";

/// The digest of a run file's bytes, as a journal's header names it.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)[..16].iter().map(|b| format!("{b:02x}")).collect()
}

fn header(run_file_digest: &str) -> String {
    format!("{MAGIC} {run_file_digest}\n")
}

/// The journal line of one save.
fn line(parts: &[(Part, Value)]) -> String {
    let body = Value::Array(parts.iter().map(|(part, value)| serde_json::json!([part.kind(), part.key(), value])).collect()).to_string();
    format!("{} {body}\n", digest(body.as_bytes()))
}

/// Appends `parts` to the journal at `path` for the run file whose digest is `run_file_digest`.
/// `lines` is how many lines the journal holds for that run file when the caller knows it (it
/// wrote them), else it is read. A journal that is missing or names another run file is replaced
/// by a fresh one. Answers the line's number (0 for the first after the header) and the line.
///
/// `durable`: the line is synced before this returns (a fresh journal is written whole, then
/// renamed into place). Otherwise the caller makes it durable through the commit log
/// (`commit.rs`), and a fresh journal is written in place: a reader that meets it half written
/// sees a header that does not name the run file (or a torn line) and reads the run file alone,
/// which is the state before this save.
pub fn append(
    path: &Path,
    run_file_digest: &str,
    parts: &[(Part, Value)],
    lines: Option<usize>,
    durable: bool,
) -> io::Result<(usize, String)> {
    let head = header(run_file_digest);
    let text = line(parts);
    let lines = match lines {
        Some(n) => Some(n),
        None => read_lines_for(path, run_file_digest)?.map(|l| l.len()),
    };
    let body = text.trim_end_matches('\n').to_string();
    if let Some(number) = lines {
        let mut file = OpenOptions::new().append(true).open(path)?;
        file.write_all(text.as_bytes())?;
        if durable {
            file.sync_data()?;
        }
        return Ok((number, body));
    }
    if durable {
        super::fs::atomic_write_locked(path, format!("{head}{text}").as_bytes())?;
    } else {
        super::fs::private_file().write(true).create(true).truncate(true).open(path)?.write_all(format!("{head}{text}").as_bytes())?;
    }
    Ok((0, body))
}

/// The journal text of `lines` (without their newlines) for the run file of digest `run_file_digest`.
pub fn whole(run_file_digest: &str, lines: &[String]) -> String {
    let mut text = header(run_file_digest);
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The parts a journal holds for the run file `run_file` (its bytes), as (kind, key, JSON text),
/// in the order they were saved; `None` when there is no journal or it belongs to another run
/// file (stale). Lines after the first that is torn or does not check out are not read.
pub fn read(path: &Path, run_file: &[u8]) -> io::Result<Option<Vec<(String, String, String)>>> {
    let Some(lines) = read_lines(path, run_file)? else { return Ok(None) };
    let mut parts = Vec::new();
    for line in lines {
        let Some((_, body)) = line.split_once(' ') else { break };
        let Ok(saved) = serde_json::from_str::<Vec<(String, String, Value)>>(body) else { break };
        parts.extend(saved.into_iter().map(|(kind, key, value)| (kind, key, value.to_string())));
    }
    Ok(Some(parts))
}

/// The lines (without their newlines) a journal holds for the run file `run_file`, up to the
/// first that is torn or does not check out; `None` when there is no journal of that file.
pub fn read_lines(path: &Path, run_file: &[u8]) -> io::Result<Option<Vec<String>>> {
    read_lines_for(path, &digest(run_file))
}

fn read_lines_for(path: &Path, run_file_digest: &str) -> io::Result<Option<Vec<String>>> {
    let text = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&text);
    let mut lines = text.split_inclusive('\n');
    if lines.next() != Some(header(run_file_digest).as_str()) {
        return Ok(None);
    }
    let mut kept = Vec::new();
    for line in lines {
        let Some(line) = line.strip_suffix('\n') else { break };
        let Some((check, body)) = line.split_once(' ') else { break };
        if digest(body.as_bytes()) != check || serde_json::from_str::<Vec<(String, String, Value)>>(body).is_err() {
            break;
        }
        kept.push(line.to_string());
    }
    Ok(Some(kept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_read_back_in_order_and_a_torn_or_wrong_tail_is_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d7b493cae249.journal");
        let run_file = b"{\"run\":1}\n";
        let d = digest(run_file);
        assert_eq!(read(&path, run_file).expect("read"), None, "no journal");
        let parts = [
            (Part::Head, json!({"status": "running"})),
            (Part::Output("a b\"#1".into()), json!({"node": "a", "text": "line\nbreak \u{0} é"})),
            (Part::History(0), json!(null)),
        ];
        append(&path, &d, &parts[..1], None, true).expect("create");
        assert_eq!(append(&path, &d, &parts[1..], None, true).expect("append").0, 1, "the second line");
        let want: Vec<(String, String, String)> = parts.iter().map(|(p, v)| (p.kind().into(), p.key(), v.to_string())).collect();
        assert_eq!(read(&path, run_file).expect("read"), Some(want.clone()));
        assert_eq!(read(&path, b"other").expect("read"), None, "a journal of another run file is stale");

        // Every cut of the last line, and a flipped byte in it, leaves the saves before it: the
        // last save (two parts) goes whole.
        let full = fs::read(&path).expect("bytes");
        let last = full[..full.len() - 1].iter().rposition(|b| *b == b'\n').expect("lines") + 1;
        for cut in last..full.len() {
            fs::write(&path, &full[..cut]).expect("write");
            assert_eq!(read(&path, run_file).expect("read"), Some(want[..1].to_vec()), "cut at {cut}");
        }
        let mut flipped = full.clone();
        flipped[last + 20] ^= 1;
        fs::write(&path, &flipped).expect("write");
        assert_eq!(read(&path, run_file).expect("read"), Some(want[..1].to_vec()));

        // A journal of another run file is replaced, not appended to.
        let other = b"{\"run\":2}\n";
        assert_eq!(append(&path, &digest(other), &parts[2..], None, false).expect("replace").0, 0, "a fresh journal");
        assert_eq!(read(&path, other).expect("read"), Some(want[2..].to_vec()));
    }
}
