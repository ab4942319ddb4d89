//! Writing a file so that readers see its old content or the new, never a mix, and the new
//! content survives a crash: a temp file beside it, written, synced, renamed (or linked) onto it,
//! then the directory synced. Every file the file store writes goes through here.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use crate::fs::{private_file, sync_dir};

/// Replaces `path` with `bytes` so that readers see the old content or the new, never a mix,
/// and the new content survives a crash once this returns: a dot-prefixed temp file in the
/// same directory, written, fsynced, renamed over `path`, then the directory fsynced.
/// The parent directory must exist. On error the temp file is removed.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write_with(path, bytes, replace)
}

/// A fresh random temp file beside `path`, written through to it with `place`.
fn atomic_write_with(path: &Path, bytes: &[u8], place: fn(&Path, &Path) -> io::Result<()>) -> io::Result<()> {
    let file_name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "atomic_write needs a file path"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!(".{}.{suffix}.tmp", file_name.to_string_lossy()));
    write_through(&tmp, path, dir, bytes, true, place)
}

/// [`atomic_write`] that never replaces a file: the complete temp file is hard-linked to `path`,
/// which fails with `AlreadyExists` when `path` exists (the check and the write are one step).
pub fn atomic_create(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write_with(path, bytes, link_new)
}

/// Gives `tmp` the name `path`, replacing what had it.
fn replace(tmp: &Path, path: &Path) -> io::Result<()> {
    fs::rename(tmp, path)
}

/// Gives `tmp` the name `path` unless that name is taken; `tmp` goes away either way.
fn link_new(tmp: &Path, path: &Path) -> io::Result<()> {
    fs::hard_link(tmp, path)?;
    // The target is complete and durable already; a temp name left behind is only a stray.
    let _ = fs::remove_file(tmp);
    Ok(())
}

/// `atomic_write` for a writer that holds the target's lock: the temp name is fixed
/// (`.<file>.tmp`), so a writer killed mid-write leaves at most one temp file per target, and
/// the next write replaces it.
pub fn atomic_write_locked(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let file_name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "atomic_write needs a file path"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = dir.join(format!(".{}.tmp", file_name.to_string_lossy()));
    write_through(&tmp, path, dir, bytes, false, replace)
}

/// Writes a run file: [`atomic_write_locked`] when `durable`, else the same temp file and rename
/// without syncing (the commit log makes the save durable, see `commit.rs`).
pub(super) fn write_run_file(path: &Path, bytes: &[u8], durable: bool) -> io::Result<()> {
    if durable {
        return atomic_write_locked(path, bytes);
    }
    let file_name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a run file needs a file path"))?;
    let tmp = path.with_file_name(format!(".{}.tmp", file_name.to_string_lossy()));
    let written = (|| {
        let mut file = private_file().write(true).create(true).truncate(true).open(&tmp)?;
        file.write_all(bytes)?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Writes `bytes` to a fresh temp file beside `path`, fsyncs it, then `place`s it at `path`
/// (a rename, or a link that refuses to replace) and fsyncs the directory.
fn write_through(
    tmp: &Path,
    path: &Path,
    dir: &Path,
    bytes: &[u8],
    fresh: bool,
    place: fn(&Path, &Path) -> io::Result<()>,
) -> io::Result<()> {
    let written = (|| {
        let mut options = private_file();
        options.write(true);
        if fresh {
            options.create_new(true);
        } else {
            options.create(true).truncate(true);
        }
        let mut file = options.open(tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        place(tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(tmp);
        return Err(e);
    }
    sync_dir(dir)
}
