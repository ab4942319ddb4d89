//! Watch triggers (SPEC §10): a long-lived command per design whose output lines are events. A
//! supervisor thread keeps the command running (restarting it with a backoff) in a process group
//! of its own (`exec::process::Group`), and forwards each line to the daemon's thread, which parses
//! it, drops duplicates within the dedupe window, and fires a run.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vwf_core::time::{self, Ts};
use vwf_core::trigger::{TriggerMode, WatchTrigger};

use super::{Daemon, Live, STOP_POLL, Signal, TickReport, Trigger, clip, log, time_now};
use crate::runner::Runner;
use vwf_exec::process::{ChildEnv, Group};

/// Watch commands: how long a run must last to reset the restart backoff.
const WATCH_STABLE: Duration = Duration::from_secs(60);
/// A watch command line longer than this is dropped (it could not become a run input anyway).
const WATCH_LINE_BYTES: usize = vwf_core::limits::REQUEST_BODY_BYTES;
/// How long a stopped watch command gets to exit after SIGTERM before its group gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A running watch command: its supervisor thread and the group to signal.
pub(super) struct WatchProcess {
    pub(super) generation: u64,
    stop: Arc<AtomicBool>,
    group: Group,
    thread: Option<JoinHandle<()>>,
    /// Canonical JSON of each line that fired, with when.
    fired: HashMap<String, Ts>,
}

impl Daemon<'_> {
    pub(super) fn start_watch(&self, name: &str, spec: &WatchTrigger, generation: u64) -> WatchProcess {
        let stop = Arc::new(AtomicBool::new(false));
        let group = Group::default();
        let supervisor = Supervisor {
            design: name.to_string(),
            generation,
            argv: spec.argv.clone(),
            cwd: self.app.home.clone(),
            base_delay: spec.restart_delay_seconds.max(1),
            sender: self.sender.clone(),
            stop: stop.clone(),
            group: group.clone(),
            env: ChildEnv::new(&self.app.drivers.config),
        };
        let thread = std::thread::Builder::new()
            .name(format!("vwf-watch-{name}"))
            .spawn(move || supervisor.run())
            .map_err(|e| log(time_now(), &format!("{name}: cannot start a watch thread: {e}")))
            .ok();
        WatchProcess { generation, stop, group, thread, fired: HashMap::new() }
    }

    /// A line printed by a watch command: JSON fires a run unless the same JSON fired within the
    /// dedupe window; anything else is logged and ignored.
    pub(super) fn on_line(&mut self, runner: &Runner<'_>, now: Ts, design: &str, generation: u64, line: &str, report: &mut TickReport) {
        let Some(tracked) = self.designs.get_mut(design) else { return };
        let (Trigger::Watch(spec), Live::Watch(watch)) = (&tracked.trigger, &mut tracked.live) else { return };
        if watch.generation != generation {
            return;
        }
        let text = line.trim();
        if text.is_empty() {
            return;
        }
        let input = match vwf_core::json::parse(text) {
            Ok(input) => input,
            Err(e) => {
                log(now, &format!("{design}: ignored a line: {}: {}", e.about("it is"), clip(text, 200)));
                return;
            }
        };
        if spec.dedupe_minutes > 0 {
            let since = time::sub_seconds_saturating(now, spec.dedupe_minutes.saturating_mul(60));
            watch.fired.retain(|_, at| *at > since && *at <= now);
            let key = input.to_string();
            if watch.fired.contains_key(&key) {
                log(now, &format!("{design}: duplicate line within {} min, not fired: {}", spec.dedupe_minutes, clip(&key, 200)));
                return;
            }
            watch.fired.insert(key, now);
        }
        report.fired.push(self.fire(runner, now, design, TriggerMode::Watch, input));
    }
}

/// The thread that keeps one watch command running and forwards its stdout lines.
struct Supervisor {
    design: String,
    generation: u64,
    argv: Vec<String>,
    cwd: PathBuf,
    base_delay: u64,
    sender: Sender<Signal>,
    stop: Arc<AtomicBool>,
    group: Group,
    /// The environment the watch command starts from (not the server's: see `ChildEnv`).
    env: ChildEnv,
}

impl Supervisor {
    fn run(self) {
        let mut delay = self.base_delay;
        let Some((program, args)) = self.argv.split_first() else { return };
        loop {
            let started = Instant::now();
            let mut command = Command::new(program);
            command.args(args).current_dir(&self.cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
            let child = match self.group.spawn_unless(&self.stop, &mut command, &self.env) {
                None => return,
                Some(Ok(child)) => Some(child),
                Some(Err(e)) => {
                    self.log(&format!("watch command cannot start: {e}"));
                    None
                }
            };
            if let Some(mut child) = child {
                if let Some(stdout) = child.stdout.take() {
                    self.forward(stdout);
                }
                let status = self.group.wait(&mut child);
                if self.stopped() {
                    return;
                }
                let how = match status {
                    Ok(s) => s.to_string(),
                    Err(e) => format!("cannot be waited for: {e}"),
                };
                if started.elapsed() >= WATCH_STABLE {
                    delay = self.base_delay;
                }
                self.log(&format!("watch command {how}; restarting in {delay} s"));
            }
            let until = Instant::now() + Duration::from_secs(delay);
            while Instant::now() < until {
                if self.stopped() {
                    return;
                }
                std::thread::sleep(STOP_POLL);
            }
            delay = delay.saturating_mul(2).min(vwf_core::limits::WATCH_RESTART_DELAY_SECONDS.1.max(self.base_delay));
        }
    }

    /// Sends each line of the command's output to the daemon until it ends (or the daemon goes).
    fn forward(&self, stdout: std::process::ChildStdout) {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line_capped(&mut reader, &mut line, WATCH_LINE_BYTES) {
                Ok(None) => return,
                Ok(Some(false)) => self.log(&format!("dropped an output line longer than {WATCH_LINE_BYTES} bytes")),
                Ok(Some(true)) => {
                    let text = String::from_utf8_lossy(&line).into_owned();
                    let signal = Signal::Line { design: self.design.clone(), generation: self.generation, line: text };
                    if self.sender.send(signal).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    self.log(&format!("cannot read the watch command's output: {e}"));
                    return;
                }
            }
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn log(&self, message: &str) {
        log(time_now(), &format!("{}: {message}", self.design));
    }
}

/// Reads one line (without its newline) of at most `cap` bytes: `None` at the end of input,
/// `Some(false)` for a longer line (skipped whole), `Some(true)` for a line.
fn read_line_capped(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> std::io::Result<Option<bool>> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(if any { Some(!too_long) } else { None });
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > cap {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(!too_long));
        }
    }
}

impl WatchProcess {
    /// Asks the supervisor to stop and sends SIGTERM to the command's process group.
    pub(super) fn signal_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.group.signal(libc::SIGTERM);
    }

    fn kill_hard(&self) {
        self.group.signal(libc::SIGKILL);
    }
}

/// Waits for stopped watch commands to go: SIGKILL to the groups still there after the grace
/// period, then a last short wait. A supervisor stuck on a pipe held by an escaped process is left
/// behind rather than waited for forever.
pub(super) fn finish_stopping(stopping: Vec<WatchProcess>) {
    if stopping.is_empty() {
        return;
    }
    let finished = |w: &WatchProcess| w.thread.as_ref().is_none_or(|t| t.is_finished());
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline && !stopping.iter().all(finished) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for w in stopping.iter().filter(|w| !finished(w)) {
        w.kill_hard();
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline && !stopping.iter().all(finished) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for mut w in stopping {
        if finished(&w)
            && let Some(t) = w.thread.take()
        {
            let _ = t.join();
        }
    }
}

impl Live {
    /// Stops a watch command (waiting for it to go); a folder watcher stops when dropped.
    pub(super) fn stop(self) {
        if let Live::Watch(w) = self {
            w.signal_stop();
            finish_stopping(vec![w]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_lines_skip_what_is_too_long() {
        let mut r = BufReader::with_capacity(4, &b"ab\ncdefghij\nk\nlast"[..]);
        let mut line = Vec::new();
        let mut got = Vec::new();
        loop {
            line.clear();
            match read_line_capped(&mut r, &mut line, 5).unwrap() {
                None => break,
                Some(ok) => got.push((ok, String::from_utf8_lossy(&line).into_owned())),
            }
        }
        assert_eq!(got, vec![(true, "ab".into()), (false, String::new()), (true, "k".into()), (true, "last".into())]);
    }
}
