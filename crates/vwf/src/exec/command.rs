//! The command driver: runs a command step's `run` string through `sh -c`, or its `argv` with no
//! shell at all, and reports standard output as the step's text, byte for byte.
//!
//! Invariants:
//! - The child runs in its own process group, and that whole group is killed once the child has
//!   exited (or on timeout), so no background grandchild outlives the step or keeps its pipes open.
//!   The child is waited for without being reaped (`waitid` with `WNOWAIT`) until the group is
//!   killed, so its pid, and with it the group id, cannot be reused by an unrelated process first.
//! - Memory stays bounded whatever the command prints: at most `STEP_OUTPUT_BYTES + 1` bytes of
//!   standard output and the last `STDERR_TAIL_BYTES` of standard error are kept; the rest is
//!   drained so the child never blocks on a full pipe.
//! - Nothing timing-dependent enters the outcome: the same command and input give the same output.
//! - Every failure is an `Outcome::Failed`; this module never panics.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Map, Value};
use vwf_core::limits::STEP_OUTPUT_BYTES;
use vwf_core::run::{Outcome, Work};

use crate::config::Config;

/// How much of standard error is kept, from its end.
const STDERR_TAIL_BYTES: usize = 4096;
/// How long the pipes may stay open after the process group was killed (they normally close at
/// once; only a process that left the group can hold them).
const PIPE_GRACE: Duration = Duration::from_secs(1);

pub fn perform(work: &Work, config: &Config) -> Outcome {
    let Work::Command { run, argv, cwd, env, timeout_seconds } = work else {
        return failed("the command driver was handed a step that is not a command");
    };
    if !config.commands.enabled {
        return failed("command steps are disabled in the config ([commands] enabled = false)");
    }
    let (mut command, program) = match (run, argv) {
        (Some(run), None) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(run);
            (c, "sh".to_string())
        }
        (None, Some(argv)) => match argv.split_first() {
            Some((program, args)) if !program.is_empty() => {
                let mut c = Command::new(program);
                c.args(args);
                (c, program.clone())
            }
            _ => return failed("command step has an empty \"argv\""),
        },
        (Some(_), Some(_)) => return failed("command step gives both \"run\" and \"argv\""),
        (None, None) => return failed("command step needs \"run\" or \"argv\""),
    };
    if let Some(cwd) = cwd {
        if !Path::new(cwd).is_dir() {
            return failed(&format!("command working directory {cwd:?} does not exist or is not a directory"));
        }
        command.current_dir(cwd);
    }
    command.envs(env).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(&format!("cannot start command {program:?}: {e}")),
    };
    supervise(child, Duration::from_secs(*timeout_seconds))
}

/// What the child left behind once it is gone.
struct Finished {
    status: Option<ExitStatus>,
    timed_out: bool,
    stdout: Option<Vec<u8>>,
    stderr: Option<Vec<u8>>,
}

/// Reads the child's pipes, enforces the timeout, kills the group and reaps the child.
fn supervise(mut child: Child, timeout: Duration) -> Outcome {
    let deadline = Instant::now() + timeout;
    let pid = child.id() as libc::pid_t;
    let stdout = child.stdout.take().map(|pipe| spawn_reader(pipe, keep_head));
    let stderr = child.stderr.take().map(|pipe| spawn_reader(pipe, keep_tail));

    // Wait for the child to exit without reaping it, on a thread so the wait can time out.
    let (exited_tx, exited_rx) = mpsc::channel();
    thread::spawn(move || {
        wait_without_reaping(pid);
        let _ = exited_tx.send(());
    });
    let timed_out = match exited_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => false,
        Err(mpsc::RecvTimeoutError::Timeout) => true,
    };
    // The child is still a zombie at worst, so the group id is still ours to kill.
    // SAFETY: killpg only sends a signal; a stale or empty group makes it return an error.
    unsafe { libc::killpg(pid, libc::SIGKILL) };
    let status = child.wait().ok();

    let pipes_deadline = deadline.max(Instant::now() + PIPE_GRACE);
    let finished = Finished {
        status,
        timed_out,
        stdout: stdout.and_then(|r| collect(r, pipes_deadline)),
        stderr: stderr.and_then(|r| collect(r, pipes_deadline)),
    };
    conclude(finished, timeout)
}

fn conclude(f: Finished, timeout: Duration) -> Outcome {
    let tail = f.stderr.as_deref().map(tail_text).unwrap_or_default();
    let with_tail = |msg: String| {
        let trimmed = tail.trim_end();
        if trimmed.is_empty() { msg } else { format!("{msg}\nstderr: {trimmed}") }
    };
    if f.timed_out {
        return failed(&with_tail(format!("command timed out after {} s", timeout.as_secs())));
    }
    let Some(status) = f.status else {
        return failed(&with_tail("command could not be waited for".into()));
    };
    match (status.code(), status.signal()) {
        (Some(0), _) => {}
        (Some(code), _) => return failed(&with_tail(format!("command exited with code {code}"))),
        (None, Some(signal)) => return failed(&with_tail(format!("command was killed by signal {signal}"))),
        (None, None) => return failed(&with_tail(format!("command ended abnormally ({status})"))),
    }
    let (Some(stdout), Some(_)) = (f.stdout, f.stderr.as_ref()) else {
        return failed(&with_tail(format!(
            "command timed out after {} s: a process it started outside its process group still holds its output open",
            timeout.as_secs()
        )));
    };
    if stdout.len() > STEP_OUTPUT_BYTES {
        return failed(&format!("command output is over the {STEP_OUTPUT_BYTES}-byte limit for output kept inline"));
    }
    let mut extra = Map::new();
    let text = match String::from_utf8(stdout) {
        Ok(text) => text,
        Err(e) => {
            extra.insert("encoding".into(), Value::from("base64"));
            format!("base64:{}", base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))
        }
    };
    extra.insert("exit_code".into(), Value::from(0));
    extra.insert("stderr".into(), Value::from(tail));
    Outcome::Done { text, extra, tokens: 0 }
}

type Keep = fn(&mut Vec<u8>, &[u8]);

/// Reads `pipe` to its end on a thread, keeping what `keep` keeps; the result arrives on the channel.
fn spawn_reader(mut pipe: impl Read + Send + 'static, keep: Keep) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => keep(&mut kept, &buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// Keeps the first `STEP_OUTPUT_BYTES + 1` bytes: enough to tell that the limit was passed.
fn keep_head(kept: &mut Vec<u8>, chunk: &[u8]) {
    let room = (STEP_OUTPUT_BYTES + 1).saturating_sub(kept.len());
    kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
}

/// Keeps the last `STDERR_TAIL_BYTES` bytes (trimmed in batches so appending stays cheap).
fn keep_tail(kept: &mut Vec<u8>, chunk: &[u8]) {
    kept.extend_from_slice(chunk);
    if kept.len() > 2 * STDERR_TAIL_BYTES {
        kept.drain(..kept.len() - STDERR_TAIL_BYTES);
    }
}

/// The stderr tail as text: the last `STDERR_TAIL_BYTES`, not starting inside a UTF-8 character.
fn tail_text(bytes: &[u8]) -> String {
    let mut tail = &bytes[bytes.len().saturating_sub(STDERR_TAIL_BYTES)..];
    if tail.len() < bytes.len() {
        while let Some((first, rest)) = tail.split_first() {
            if first & 0b1100_0000 != 0b1000_0000 {
                break;
            }
            tail = rest;
        }
    }
    String::from_utf8_lossy(tail).into_owned()
}

/// A reader's result, or `None` if its pipe is still open at `deadline`.
fn collect(rx: mpsc::Receiver<Vec<u8>>, deadline: Instant) -> Option<Vec<u8>> {
    rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).ok()
}

/// Blocks until `pid` has exited, leaving it waitable (a zombie) so its pid is not reused yet.
fn wait_without_reaping(pid: libc::pid_t) {
    loop {
        // SAFETY: `info` is a plain C struct that waitid fills in; zeroed is a valid value for it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

fn failed(error: &str) -> Outcome {
    Outcome::Failed { error: error.to_string() }
}
