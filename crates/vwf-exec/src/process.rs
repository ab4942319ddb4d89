//! Child processes: one place that starts a child in a process group of its own and signals the
//! group. Drivers (command steps, the command agent backend) run a child to its end with
//! [`supervise`], which feeds its input, reads its output with bounded memory, enforces a timeout
//! and leaves nothing behind; the daemon's long-lived watch commands keep theirs in a [`Group`],
//! which signals the group until the child is reaped.
//!
//! Invariants:
//! - The whole process group is killed once the child has exited (or on timeout), so no
//!   background grandchild outlives the step or keeps its pipes open. The child is waited for
//!   without being reaped (`waitid` with `WNOWAIT`) until the group is killed, so its pid, and with
//!   it the group id, cannot be reused by an unrelated process first.
//! - At most `STEP_OUTPUT_BYTES + 1` bytes of standard output and the last `STDERR_TAIL_BYTES` of
//!   standard error are kept; the rest is drained so the child never blocks on a full pipe.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use vwf_core::limits::STEP_OUTPUT_BYTES;

use crate::config::Config;

/// How much of standard error is kept, from its end.
pub const STDERR_TAIL_BYTES: usize = 4096;
/// How long the pipes may stay open after the process group was killed (they normally close at
/// once; only a process that left the group can hold them).
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// What a child left behind once it is gone.
pub struct Finished {
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    /// Standard output (at most `STEP_OUTPUT_BYTES + 1` bytes), `None` if a process outside the
    /// group still held the pipe open.
    pub stdout: Option<Vec<u8>>,
    /// The end of standard error as text, not starting inside a UTF-8 character.
    pub stderr_tail: String,
    /// Whether standard error was read to its end.
    pub stderr_closed: bool,
}

/// Variables a child takes from vwf's own environment by default (and every `LC_*`):
/// what programs need to find their tools, home, language and time zone, nothing that is
/// anyone's secret. `[commands] pass_env` adds more.
pub const BASE_ENV: [&str; 11] = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "HERMES_HOME"];

/// What a child's environment starts from (SPEC §17): not vwf's whole environment, which holds
/// the API token, the model provider's key and the bot tokens, but [`BASE_ENV`] and `[commands]
/// pass_env`, less every variable the config names as a secret and every `VWF_*` variable.
/// What the caller sets on the `Command` itself (a step's own `env`, the agent backend's
/// `VWF_AGENT_*`) is added on top.
#[derive(Debug, Clone, Default)]
pub struct ChildEnv {
    pass: Vec<String>,
}

impl ChildEnv {
    pub fn new(config: &Config) -> ChildEnv {
        let secret = config.secret_vars();
        let pass = BASE_ENV
            .iter()
            .map(|s| s.to_string())
            .chain(config.commands.pass_env.iter().map(|s| s.trim().to_string()))
            .filter(|name| !name.is_empty() && !name.starts_with("VWF_") && !secret.contains(name))
            .collect();
        ChildEnv { pass }
    }

    /// The variables of vwf's environment a child gets.
    fn inherited(&self) -> impl Iterator<Item = (OsString, OsString)> + '_ {
        std::env::vars_os().filter(|(name, _)| {
            name.to_str().is_some_and(|n| self.pass.iter().any(|p| p == n) || (n.starts_with("LC_") && !n.starts_with("VWF_")))
        })
    }
}

/// Starts `command` as the leader of a new process group (so the whole group can be signalled),
/// with the environment of `env` plus what was set on `command`.
pub fn spawn(command: &mut Command, env: &ChildEnv) -> std::io::Result<Child> {
    let own: Vec<(OsString, Option<OsString>)> = command.get_envs().map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned))).collect();
    command.env_clear().envs(env.inherited());
    for (name, value) in own {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    command.process_group(0).spawn()
}

/// Sends `signal` to the process group led by `pid`.
fn signal_group(pid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: killpg only sends a signal; a stale or empty group makes it return an error. Callers
    // only pass the group of a child they have not reaped yet, so the id is still theirs.
    unsafe { libc::killpg(pid, signal) };
}

/// The process group of a long-lived child, shared between the thread that waits for it and the
/// one that stops it: the group id is recorded at spawn and cleared (under the same lock) once the
/// child is reaped, so a signal never reaches an unrelated process that reused the id.
#[derive(Clone, Default)]
pub struct Group(Arc<Mutex<Option<libc::pid_t>>>);

impl Group {
    /// Spawns `command` in a new group recorded here, unless `stop` is set (checked under the
    /// group's lock, so a stop racing the spawn either prevents it or signals the new group).
    pub fn spawn_unless(&self, stop: &AtomicBool, command: &mut Command, env: &ChildEnv) -> Option<std::io::Result<Child>> {
        let mut group = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        let spawned = spawn(command, env);
        if let Ok(child) = &spawned {
            *group = libc::pid_t::try_from(child.id()).ok();
        }
        Some(spawned)
    }

    /// Waits for the child and forgets its group.
    pub fn wait(&self, child: &mut Child) -> std::io::Result<ExitStatus> {
        let status = child.wait();
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
        status
    }

    /// Sends `signal` to the group, if a child of it is alive (not yet reaped).
    pub fn signal(&self, signal: libc::c_int) {
        let group = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pid) = *group {
            signal_group(pid, signal);
        }
    }
}

/// Feeds `input` to the child (when its stdin is piped), reads its pipes, enforces the timeout,
/// kills the group and reaps the child. The child must have been started with [`spawn`].
///
/// On Linux this thread waits for the child's exit and both pipes in one `poll` (a pidfd for the
/// exit), so running a child costs no thread; where a pidfd cannot be had, a thread per pipe and
/// one for the exit do the same.
pub fn supervise(mut child: Child, input: Option<Vec<u8>>, timeout: Duration) -> Finished {
    let deadline = Instant::now() + timeout;
    let pid = child.id() as libc::pid_t;
    if let (Some(mut stdin), Some(input)) = (child.stdin.take(), input) {
        // A child that does not read its input makes this write fail: that is its business.
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    match pidfd_open(pid) {
        Some(exit) => supervise_polling(child, exit, deadline),
        None => supervise_threads(child, deadline),
    }
}

/// A file descriptor that becomes readable when `pid` exits (Linux 5.3 and later).
fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes two integers and returns a new descriptor or -1; the descriptor
    // is owned by nothing else, so `OwnedFd` may close it.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = libc::c_int::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One of the child's output pipes, read without blocking as `poll` says it has data.
struct Stream<R> {
    pipe: Option<R>,
    kept: Vec<u8>,
    keep: Keep,
    closed: bool,
}

impl<R: Read + AsRawFd> Stream<R> {
    fn new(pipe: Option<R>, keep: Keep) -> Self {
        if let Some(pipe) = &pipe {
            set_nonblocking(pipe.as_raw_fd());
        }
        let closed = pipe.is_none();
        Stream { pipe, kept: Vec::new(), keep, closed }
    }

    fn poll_fd(&self) -> Option<libc::pollfd> {
        let pipe = self.pipe.as_ref().filter(|_| !self.closed)?;
        Some(libc::pollfd { fd: pipe.as_raw_fd(), events: libc::POLLIN, revents: 0 })
    }

    /// Reads what is there now; an end of file or an error closes the stream.
    fn drain(&mut self, buf: &mut [u8]) {
        let Some(pipe) = self.pipe.as_mut().filter(|_| !self.closed) else { return };
        loop {
            match pipe.read(buf) {
                Ok(0) => break,
                Ok(n) => (self.keep)(&mut self.kept, &buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        self.closed = true;
    }

    /// What was read, if the pipe was read to its end.
    fn finish(self) -> Option<Vec<u8>> {
        (self.pipe.is_some() && self.closed).then_some(self.kept)
    }
}

fn set_nonblocking(fd: libc::c_int) {
    // SAFETY: fcntl on a descriptor this process owns, reading then setting its status flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// Waits until `exit` (a pidfd) or one of `streams` is ready, or `until`; answers whether the
/// child has exited.
fn wait_ready(exit: Option<&OwnedFd>, streams: [Option<libc::pollfd>; 2], until: Instant) -> bool {
    let mut fds: Vec<libc::pollfd> =
        exit.map(|e| libc::pollfd { fd: e.as_raw_fd(), events: libc::POLLIN, revents: 0 }).into_iter().collect();
    fds.extend(streams.into_iter().flatten());
    if fds.is_empty() {
        return false;
    }
    let left = until.saturating_duration_since(Instant::now());
    let ms = libc::c_int::try_from(left.as_millis().saturating_add(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs that outlives the call.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    ready > 0 && exit.is_some() && fds[0].revents != 0
}

/// [`supervise`] with a pidfd: one `poll` loop on this thread.
fn supervise_polling(mut child: Child, exit: OwnedFd, deadline: Instant) -> Finished {
    let pid = child.id() as libc::pid_t;
    let mut stdout = Stream::new(child.stdout.take(), keep_head);
    let mut stderr = Stream::new(child.stderr.take(), keep_tail);
    let mut buf = vec![0u8; 64 * 1024];
    let mut exited = false;
    while !exited && Instant::now() < deadline {
        exited = wait_ready(Some(&exit), [stdout.poll_fd(), stderr.poll_fd()], deadline);
        stdout.drain(&mut buf);
        stderr.drain(&mut buf);
    }
    // The child is still a zombie at worst, so the group id is still ours to kill.
    signal_group(pid, libc::SIGKILL);
    let status = child.wait().ok();
    let pipes_deadline = deadline.max(Instant::now() + PIPE_GRACE);
    while (!stdout.closed || !stderr.closed) && Instant::now() < pipes_deadline {
        wait_ready(None, [stdout.poll_fd(), stderr.poll_fd()], pipes_deadline);
        stdout.drain(&mut buf);
        stderr.drain(&mut buf);
    }
    let stderr = stderr.finish();
    Finished {
        status,
        timed_out: !exited,
        stdout: stdout.finish(),
        stderr_tail: stderr.as_deref().map(tail_text).unwrap_or_default(),
        stderr_closed: stderr.is_some(),
    }
}

/// [`supervise`] without a pidfd: a thread reads each pipe and one waits for the exit.
fn supervise_threads(mut child: Child, deadline: Instant) -> Finished {
    let pid = child.id() as libc::pid_t;
    let stdout = child.stdout.take().map(|pipe| spawn_reader(pipe, keep_head));
    let stderr = child.stderr.take().map(|pipe| spawn_reader(pipe, keep_tail));

    // Wait for the child to exit without reaping it, on a thread so the wait can time out.
    let (exited_tx, exited_rx) = mpsc::channel();
    thread::spawn(move || {
        wait_without_reaping(pid);
        let _ = exited_tx.send(());
    });
    let timed_out =
        matches!(exited_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())), Err(mpsc::RecvTimeoutError::Timeout));
    // The child is still a zombie at worst, so the group id is still ours to kill.
    signal_group(pid, libc::SIGKILL);
    let status = child.wait().ok();

    let pipes_deadline = deadline.max(Instant::now() + PIPE_GRACE);
    let stderr = stderr.and_then(|r| collect(r, pipes_deadline));
    Finished {
        status,
        timed_out,
        stdout: stdout.and_then(|r| collect(r, pipes_deadline)),
        stderr_tail: stderr.as_deref().map(tail_text).unwrap_or_default(),
        stderr_closed: stderr.is_some(),
    }
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

/// The last `STDERR_TAIL_BYTES` as text, not starting inside a UTF-8 character.
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
