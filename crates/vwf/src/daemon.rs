//! The daemon: the long-running loop that fires triggers the runner cannot see by itself
//! (SPEC §10 heartbeat, folder and watch triggers, and due schedule jobs through
//! `crate::schedules`) and keeps parked runs moving (§3 wait, §7 interrupted runs, §9 approval
//! deadlines). `vwf daemon` runs it in the foreground; `vwf serve` hosts it on a thread. It is a
//! caller of the runner like every other surface: it decides *when* to start or open a run, the
//! runner decides everything else.
//!
//! Invariants:
//! - One thread does the work: [`Daemon::tick`] (called by [`Daemon::run`] about once a second)
//!   starts every run and opens every parked run. Watcher threads (notify's debouncer, one reader
//!   per watch command) only forward what they saw over a channel, so every rule lives here once.
//! - Time comes from the tick's `now`; the runner used inside a tick reads a clock that shows
//!   `now` at the start of the pass and then follows the app clock, so tests drive whole days of
//!   ticks with a fixed clock and never sleep. Only `run` waits, in real time.
//! - The last fire of each heartbeat trigger is kept by the app's `JobStore` (recorded *before*
//!   the run starts: a crash loses at most one fire and never fires twice). The store's trigger
//!   claim ([`claim_home`]) keeps a second daemon off the home. The daemon has no files of its
//!   own: everything it keeps goes through the store.
//! - Runs fired by the daemon never sleep through `wait` steps and report no progress; one log line
//!   per fired trigger or settled run goes to standard error.
//! - Fired runs are driven one at a time on the daemon's thread: a run that parks returns at once,
//!   but a long step (a command, an agent call) delays the next tick until it settles.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, TimeDelta};
use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};
use serde_json::{Map, Value, json};
use vwf_core::design::Design;
use vwf_core::names::DesignName;
use vwf_core::plan::Plan;
use vwf_core::run::settle::Settle;
use vwf_core::run::{Status, TriggerInfo};
use vwf_core::schedule::Heartbeat;
use vwf_core::time::{self, Ts};
use vwf_core::trigger::Trigger as core;
use vwf_core::trigger::{FolderEvent, FolderTrigger, WatchTrigger};

use crate::app::{self, App};
use crate::clock::Clock;
use crate::failure::Failure;
use crate::runner::Runner;
use crate::schedules;
use crate::store::StoreLock;

/// How many of the newest runs are looked at for due waits, passed deadlines and runs left
/// `running` by a dead process. Older parked runs are settled whenever someone opens them.
pub const RUN_SCAN: usize = 1000;
/// Parked runs are rescanned at least this often (new ones may come from other processes); in
/// between, only when the earliest known wake-up or deadline is due.
const RESCAN_SECONDS: i64 = 5;
/// A design whose file cannot be stamped (another store) is re-read this often.
const DESIGN_REREAD_SECONDS: i64 = 10;
/// A folder watcher that could not start (the folder is missing) is retried this often.
const FOLDER_RETRY_SECONDS: i64 = 10;
/// Watch commands: how long a run must last to reset the restart backoff.
const WATCH_STABLE: Duration = Duration::from_secs(60);
/// A watch command line longer than this is dropped (it could not become a run input anyway).
const WATCH_LINE_BYTES: usize = vwf_core::limits::REQUEST_BODY_BYTES;
/// How long `run` waits between ticks, and how often it looks at the stop flag meanwhile.
const TICK_PERIOD: Duration = Duration::from_secs(1);
const STOP_POLL: Duration = Duration::from_millis(100);
/// How long a stopped watch command gets to exit after SIGTERM before its group gets SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What one tick did.
#[derive(Debug, Default)]
pub struct TickReport {
    /// Runs whose due `wait` was resumed.
    pub resumed: Vec<String>,
    /// Runs failed because an approval gate's deadline passed.
    pub timed_out: Vec<String>,
    /// Runs left `running` by a dead process, now marked interrupted.
    pub interrupted: Vec<String>,
    /// Triggers that fired.
    pub fired: Vec<Fired>,
    /// Schedule jobs that were due (SPEC §10 schedule triggers, kept by `crate::schedules`).
    pub scheduled: Vec<schedules::Fired>,
}

/// One fired trigger: the run it started, or why none was started.
#[derive(Debug, Clone)]
pub struct Fired {
    pub design: String,
    pub mode: String,
    pub input: Value,
    pub run_id: Option<String>,
    pub status: Option<Status>,
    pub error: Option<String>,
}

/// A design as the daemon sees it: its trigger mode and what the daemon does with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Watched {
    pub design: String,
    /// The trigger's mode (`manual` for a design without a trigger), or `invalid`.
    pub mode: String,
    /// What the daemon does about it, in words.
    pub detail: String,
}

/// The trigger loop over one home. See the module documentation.
pub struct Daemon<'a> {
    app: &'a App,
    designs: BTreeMap<String, Tracked>,
    /// Last fire of each heartbeat design, once read from its state file.
    heartbeats: HashMap<String, Option<Ts>>,
    signals: Receiver<Signal>,
    sender: Sender<Signal>,
    /// Signals received while `run` was waiting, handled by the next tick.
    backlog: Vec<Signal>,
    /// Watcher generations: a rebuilt watcher's stale signals are recognised and dropped.
    generation: u64,
    next_scan: Option<Ts>,
    last_scan: Option<Ts>,
    next_due: Option<Ts>,
    /// The last error of the schedule jobs' tick, logged once until it changes.
    schedule_error: Option<String>,
}

/// What a watcher thread saw.
enum Signal {
    Folder { design: String, generation: u64, paths: Vec<PathBuf> },
    Line { design: String, generation: u64, line: String },
}

struct Tracked {
    stamp: Option<String>,
    read_at: Ts,
    trigger: Trigger,
    live: Live,
}

/// What the daemon makes of a design's trigger (the core's [`vwf_core::trigger::Trigger`]).
#[derive(Debug, Clone, PartialEq)]
enum Trigger {
    /// A mode the daemon does not fire (manual, schedule, event).
    Other(&'static str),
    Heartbeat(Heartbeat),
    Folder(FolderTrigger),
    Watch(WatchTrigger),
    /// The design cannot be run: why.
    Invalid(String),
}

enum Live {
    Idle,
    Folder(FolderWatch),
    Watch(WatchProcess),
    /// A watcher that could not start: retried at `retry_at` (or never, for `None`).
    Down {
        why: String,
        retry_at: Option<Ts>,
    },
}

struct FolderWatch {
    generation: u64,
    dir: PathBuf,
    seen: HashSet<OsString>,
    _debouncer: Debouncer<RecommendedWatcher>,
}

struct WatchProcess {
    generation: u64,
    stop: Arc<AtomicBool>,
    group: Arc<Mutex<Option<i32>>>,
    thread: Option<JoinHandle<()>>,
    /// Canonical JSON of each line that fired, with when.
    fired: HashMap<String, Ts>,
}

impl<'a> Daemon<'a> {
    pub fn new(app: &'a App) -> Daemon<'a> {
        let (sender, signals) = mpsc::channel();
        Daemon {
            app,
            designs: BTreeMap::new(),
            heartbeats: HashMap::new(),
            signals,
            sender,
            backlog: Vec::new(),
            generation: 0,
            next_scan: None,
            last_scan: None,
            next_due: None,
            schedule_error: None,
        }
    }

    /// One pass of the daemon's work at `now`: reload the designs that changed (and rebuild their
    /// watchers), fire what the watchers saw, fire due heartbeats, then resume due waits, fail
    /// gates past their deadline and mark runs of dead processes interrupted.
    pub fn tick(&mut self, now: Ts) -> TickReport {
        let shifted = Shifted { base: self.app.clock.as_ref(), offset: now - self.app.clock.now() };
        let runner = Runner { clock: &shifted, ..self.app.runner(&app::quiet, false) };
        let mut report = TickReport::default();
        self.refresh(&runner, now);
        self.handle_signals(&runner, now, &mut report);
        self.fire_heartbeats(&runner, now, &mut report);
        self.fire_schedules(now, &mut report);
        self.settle_runs(&runner, now, &mut report);
        report
    }

    /// Ticks about once a second until `stop` is set, then stops every watcher and watch command.
    /// Watcher signals arriving between ticks cut the wait short.
    pub fn run(&mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::SeqCst) {
            self.tick(self.app.clock.now());
            let until = Instant::now() + TICK_PERIOD;
            while !stop.load(Ordering::SeqCst) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match self.signals.recv_timeout(left.min(STOP_POLL)) {
                    Ok(signal) => {
                        self.backlog.push(signal);
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
        }
        self.shutdown();
    }

    /// Stops every folder watcher and watch command (SIGTERM to each command's process group,
    /// SIGKILL after a grace period). `tick` starts them again.
    pub fn shutdown(&mut self) {
        let mut stopping = Vec::new();
        for tracked in self.designs.values_mut() {
            match std::mem::replace(&mut tracked.live, Live::Idle) {
                Live::Watch(w) => {
                    w.signal_stop();
                    stopping.push(w);
                }
                // Down stays down (it says why); a folder watcher stops when dropped here.
                down @ Live::Down { .. } => tracked.live = down,
                _ => {}
            }
        }
        finish_stopping(stopping);
    }

    /// Every saved design with its trigger mode and what the daemon does about it (as of the last
    /// tick).
    pub fn watching(&self) -> Vec<Watched> {
        self.designs
            .iter()
            .filter_map(|(name, t)| {
                let job = schedules::get(self.app, &schedules::job_id(&DesignName::parse(name).ok()?)).ok();
                let (mode, mut detail) = match &t.trigger {
                    Trigger::Other(mode) if *mode == "schedule" && job.is_none() => {
                        (mode.to_string(), "no schedule job yet (create it with `vwf schedule`)".to_string())
                    }
                    Trigger::Other(mode) if *mode == "schedule" => (mode.to_string(), String::new()),
                    Trigger::Other(mode) => (mode.to_string(), other_detail(mode).to_string()),
                    Trigger::Invalid(why) => ("invalid".to_string(), format!("not watched: {why}")),
                    Trigger::Heartbeat(h) => ("heartbeat".to_string(), heartbeat_detail(h)),
                    Trigger::Folder(f) => {
                        let dir = match &t.live {
                            Live::Folder(w) => w.dir.display().to_string(),
                            _ => f.path.clone(),
                        };
                        ("folder".to_string(), format!("{dir} {} on {}{}", f.pattern, event_names(&f.events, ","), down_note(&t.live)))
                    }
                    Trigger::Watch(w) => ("watch".to_string(), format!("{}{}", shown_argv(&w.argv), down_note(&t.live))),
                };
                if let Some(job) = job {
                    let state = if job.paused { ", paused" } else { "" };
                    let sep = if detail.is_empty() { "" } else { "; " };
                    detail.push_str(&format!("{sep}schedule job {}: {}{state}", job.name, job.human));
                }
                Some(Watched { design: name.clone(), mode, detail })
            })
            .collect()
    }

    // -----------------------------------------------------------------------------------------
    // Designs and watchers
    // -----------------------------------------------------------------------------------------

    fn refresh(&mut self, runner: &Runner<'_>, now: Ts) {
        let names = match self.app.store.list_designs() {
            Ok(names) => names,
            Err(e) => {
                log(now, &format!("cannot list designs: {e}"));
                return;
            }
        };
        let gone: Vec<String> = self.designs.keys().filter(|n| !names.contains(n)).cloned().collect();
        for name in gone {
            if let Some(tracked) = self.designs.remove(&name) {
                log(now, &format!("{name}: design removed; no longer watched"));
                tracked.live.stop();
            }
        }
        for name in names {
            let Ok(design) = DesignName::parse(&name) else { continue };
            let stamp = self.app.store.design_stamp(&design);
            let fresh = match self.designs.get(&name) {
                None => true,
                Some(t) => match &stamp {
                    Some(s) => t.stamp.as_ref() != Some(s),
                    None => now - t.read_at >= TimeDelta::seconds(DESIGN_REREAD_SECONDS) || now < t.read_at,
                },
            };
            if fresh {
                let trigger = read_trigger(runner, &design);
                match self.designs.get_mut(&name) {
                    Some(t) => {
                        t.stamp = stamp;
                        t.read_at = now;
                        if t.trigger != trigger {
                            log(now, &format!("{name}: design changed; trigger now {}", describe(&trigger)));
                            t.trigger = trigger;
                            std::mem::replace(&mut t.live, Live::Idle).stop();
                        }
                    }
                    None => {
                        self.designs.insert(name.clone(), Tracked { stamp, read_at: now, trigger, live: Live::Idle });
                    }
                }
            }
            self.ensure_live(&name, now);
        }
    }

    /// Starts the watcher a design's trigger needs, if it is not running.
    fn ensure_live(&mut self, name: &str, now: Ts) {
        let Some(tracked) = self.designs.get(name) else { return };
        let (due, old_why) = match &tracked.live {
            Live::Idle => (true, None),
            Live::Down { why, retry_at: Some(at) } => (now >= *at, Some(why.clone())),
            // A watched folder that went away leaves a silent watcher: start over.
            Live::Folder(w) => (!w.dir.is_dir(), None),
            _ => (false, None),
        };
        if !due {
            return;
        }
        let live = match tracked.trigger.clone() {
            Trigger::Folder(spec) => {
                self.generation += 1;
                match self.start_folder(name, &spec, self.generation) {
                    Ok(w) => {
                        log(
                            now,
                            &format!(
                                "{name}: watching folder {} for {} ({})",
                                w.dir.display(),
                                spec.pattern,
                                event_names(&spec.events, ", ")
                            ),
                        );
                        Live::Folder(w)
                    }
                    Err(why) => {
                        if old_why.as_ref() != Some(&why) {
                            log(now, &format!("{name}: folder trigger not started: {why}; retrying every {FOLDER_RETRY_SECONDS} s"));
                        }
                        Live::Down { why, retry_at: Some(now + TimeDelta::seconds(FOLDER_RETRY_SECONDS)) }
                    }
                }
            }
            Trigger::Watch(spec) => {
                if !self.app.drivers.config.commands.enabled {
                    let why = "commands are disabled ([commands] enabled = false in visual-workflow.toml)".to_string();
                    log(now, &format!("{name}: watch trigger not started: {why}"));
                    Live::Down { why, retry_at: None }
                } else {
                    self.generation += 1;
                    log(now, &format!("{name}: starting watch command {}", shown_argv(&spec.argv)));
                    Live::Watch(self.start_watch(name, &spec, self.generation))
                }
            }
            _ => return,
        };
        if let Some(t) = self.designs.get_mut(name) {
            t.live = live;
        }
    }

    fn start_folder(&self, name: &str, spec: &FolderTrigger, generation: u64) -> Result<FolderWatch, String> {
        let dir = resolve_path(&self.app.home, &spec.path);
        let dir = std::fs::canonicalize(&dir).map_err(|e| format!("cannot open folder {}: {e}", dir.display()))?;
        if !dir.is_dir() {
            return Err(format!("{} is not a folder", dir.display()));
        }
        let sender = self.sender.clone();
        let design = name.to_string();
        let handler = move |result: DebounceEventResult| match result {
            Ok(events) => {
                let paths = events.into_iter().map(|e| e.path).collect();
                let _ = sender.send(Signal::Folder { design: design.clone(), generation, paths });
            }
            Err(e) => eprintln!("{} vwf daemon: {design}: folder watcher error: {e}", stamp_now()),
        };
        let timeout = Duration::from_millis(spec.debounce_ms.max(10));
        let mut debouncer = new_debouncer(timeout, handler).map_err(|e| format!("cannot start a watcher: {e}"))?;
        debouncer.watcher().watch(&dir, RecursiveMode::NonRecursive).map_err(|e| format!("cannot watch {}: {e}", dir.display()))?;
        // Listed after the watch starts, so no file falls between the two.
        let seen = std::fs::read_dir(&dir)
            .map(|entries| entries.flatten().filter(|e| e.path().is_file()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        Ok(FolderWatch { generation, dir, seen, _debouncer: debouncer })
    }

    fn start_watch(&self, name: &str, spec: &WatchTrigger, generation: u64) -> WatchProcess {
        let stop = Arc::new(AtomicBool::new(false));
        let group = Arc::new(Mutex::new(None));
        let supervisor = Supervisor {
            design: name.to_string(),
            generation,
            argv: spec.argv.clone(),
            cwd: self.app.home.clone(),
            base_delay: spec.restart_delay_seconds.max(1),
            sender: self.sender.clone(),
            stop: stop.clone(),
            group: group.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("vwf-watch-{name}"))
            .spawn(move || supervisor.run())
            .map_err(|e| log(time_now(), &format!("{name}: cannot start a watch thread: {e}")))
            .ok();
        WatchProcess { generation, stop, group, thread, fired: HashMap::new() }
    }

    // -----------------------------------------------------------------------------------------
    // Firing
    // -----------------------------------------------------------------------------------------

    fn handle_signals(&mut self, runner: &Runner<'_>, now: Ts, report: &mut TickReport) {
        let mut signals = std::mem::take(&mut self.backlog);
        signals.extend(self.signals.try_iter());
        for signal in signals {
            match signal {
                Signal::Folder { design, generation, paths } => self.on_folder(runner, now, &design, generation, paths, report),
                Signal::Line { design, generation, line } => self.on_line(runner, now, &design, generation, &line, report),
            }
        }
    }

    /// Debounced changes in a watched folder: each matching file fires once with its kind, from
    /// what is on disk now and whether the file was seen before.
    fn on_folder(&mut self, runner: &Runner<'_>, now: Ts, design: &str, generation: u64, mut paths: Vec<PathBuf>, report: &mut TickReport) {
        let Some(tracked) = self.designs.get_mut(design) else { return };
        let (Trigger::Folder(spec), Live::Folder(watch)) = (&tracked.trigger, &mut tracked.live) else { return };
        if watch.generation != generation {
            return;
        }
        paths.sort();
        paths.dedup();
        let mut inputs = Vec::new();
        for path in paths {
            let Some(file) = path.file_name().map(OsString::from) else { continue };
            if path.parent() != Some(watch.dir.as_path()) || !glob(&spec.pattern, &file.to_string_lossy()) {
                continue;
            }
            let full = watch.dir.join(&file);
            let kind = match (full.is_file(), watch.seen.contains(&file)) {
                (true, false) => {
                    watch.seen.insert(file);
                    "create"
                }
                (true, true) => "modify",
                (false, true) => {
                    watch.seen.remove(&file);
                    "remove"
                }
                (false, false) => continue,
            };
            if spec.events.iter().any(|e| e.as_str() == kind) {
                inputs.push(json!({"path": full.to_string_lossy(), "kind": kind}));
            }
        }
        for input in inputs {
            report.fired.push(self.fire(runner, now, design, "folder", input));
        }
    }

    /// A line printed by a watch command: JSON fires a run unless the same JSON fired within the
    /// dedupe window; anything else is logged and ignored.
    fn on_line(&mut self, runner: &Runner<'_>, now: Ts, design: &str, generation: u64, line: &str, report: &mut TickReport) {
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
        report.fired.push(self.fire(runner, now, design, "watch", input));
    }

    fn fire_heartbeats(&mut self, runner: &Runner<'_>, now: Ts, report: &mut TickReport) {
        let beats: Vec<(String, Heartbeat)> = self
            .designs
            .iter()
            .filter_map(|(name, t)| match &t.trigger {
                Trigger::Heartbeat(h) => Some((name.clone(), h.clone())),
                _ => None,
            })
            .collect();
        for (name, beat) in beats {
            let Ok(design) = DesignName::parse(&name) else { continue };
            let jobs = &self.app.jobs;
            let last = *self.heartbeats.entry(name.clone()).or_insert_with(|| jobs.last_fire(&design));
            let Some(next) = beat.next_heartbeat(now, last) else { continue };
            if next > now {
                continue;
            }
            self.heartbeats.insert(name.clone(), Some(now));
            if let Err(e) = self.app.jobs.record_fire(&design, now) {
                log(now, &format!("{name}: heartbeat not fired: cannot record it ({e}); next try after the interval"));
                continue;
            }
            let input = json!({"fired_at": time::format(&now)});
            report.fired.push(self.fire(runner, now, &name, "heartbeat", input));
        }
    }

    /// Schedule jobs: `crate::schedules` records and starts what is due; this logs it.
    fn fire_schedules(&mut self, now: Ts, report: &mut TickReport) {
        let fired = match schedules::tick(self.app, now) {
            Ok(fired) => {
                self.schedule_error = None;
                fired
            }
            Err(e) => {
                let message = e.to_string();
                if self.schedule_error.as_ref() != Some(&message) {
                    log(now, &format!("schedule jobs not checked: {message}"));
                }
                self.schedule_error = Some(message);
                return;
            }
        };
        for f in fired {
            if !f.missed.is_empty() {
                log(now, &format!("{}: schedule job {} missed {} fire(s) while nothing was ticking", f.design, f.job_id, f.missed.len()));
            }
            match (&f.run_id, &f.error) {
                (Some(id), _) => {
                    let status = f.status.map(|s| s.as_str()).unwrap_or("started");
                    log(now, &format!("{}: schedule job {} fired → run {id} {status}", f.design, f.job_id));
                }
                (None, Some(e)) => log(now, &format!("{}: schedule job {} fired but no run started: {e}", f.design, f.job_id)),
                (None, None) => {}
            }
            report.scheduled.push(f);
        }
    }

    /// Starts `design` through the runner and logs one line about it.
    fn fire(&mut self, runner: &Runner<'_>, now: Ts, design: &str, mode: &str, input: Value) -> Fired {
        let mut fired =
            Fired { design: design.to_string(), mode: mode.to_string(), input: input.clone(), run_id: None, status: None, error: None };
        let started = DesignName::parse(design)
            .map_err(Failure::BadRequest)
            .and_then(|name| runner.start_design(&name, TriggerInfo::new(mode, input.clone())));
        match started {
            Ok(Ok(run)) => {
                let mut line = format!("{design}: {mode} fired → run {} {}", run.run_id, run.status.as_str());
                if let Some(e) = &run.error {
                    line.push_str(&format!(" ({e})"));
                }
                log(now, &line);
                self.note_due(run.next_due());
                fired.run_id = Some(run.run_id.clone());
                fired.status = Some(run.status);
            }
            Ok(Err(report)) => {
                let why = report.refusal();
                log(now, &format!("{design}: {mode} fired but no run started: {why}"));
                fired.error = Some(why);
            }
            Err(e) => {
                log(now, &format!("{design}: {mode} fired but no run started: {e}"));
                fired.error = Some(e.to_string());
            }
        }
        fired
    }

    // -----------------------------------------------------------------------------------------
    // Parked and stale runs
    // -----------------------------------------------------------------------------------------

    /// Opens (through the runner, under each run's lock) the newest runs that are due: a wait
    /// whose time came, a gate whose deadline passed, a run left `running`. Looks at the store
    /// only every few seconds or when a known wake-up is due.
    fn settle_runs(&mut self, runner: &Runner<'_>, now: Ts, report: &mut TickReport) {
        let scan = match (self.next_scan, self.last_scan) {
            (Some(next), Some(last)) => now >= next || now < last || self.next_due.is_some_and(|d| d <= now),
            _ => true,
        };
        if !scan {
            return;
        }
        self.last_scan = Some(now);
        self.next_scan = Some(now + TimeDelta::seconds(RESCAN_SECONDS));
        self.next_due = None;
        let entries = match self.app.store.list_summaries(RUN_SCAN) {
            Ok(entries) => entries,
            Err(e) => {
                log(now, &format!("cannot list runs: {e}"));
                return;
            }
        };
        for entry in entries {
            let Ok(summary) = entry.summary else { continue };
            if summary.due(now, true).is_none() {
                self.note_due(summary.next_due().filter(|d| *d > now));
                continue;
            }
            let (run, settled) = match runner.open_settling(&entry.id) {
                Ok(opened) => opened,
                Err(e) => {
                    log(now, &format!("run {}: cannot settle: {e}", entry.id));
                    continue;
                }
            };
            let design = &run.design;
            let outcome = match &run.error {
                Some(e) => format!("{} ({e})", run.status.as_str()),
                None => run.status.as_str().to_string(),
            };
            // Nothing settled: its owner is alive and working on it (a foreground `vwf run`), or
            // finished it in between; look again at the next periodic scan.
            let (line, list) = match settled {
                None => continue,
                Some(Settle::Orphaned) => ("was left running by a dead process", &mut report.interrupted),
                Some(Settle::WaitDue) => ("resumed after its wait", &mut report.resumed),
                Some(Settle::DeadlinePassed) => ("gate deadline passed", &mut report.timed_out),
            };
            log(now, &format!("{design}: run {} {line} → {outcome}", run.run_id));
            list.push(run.run_id.clone());
            self.note_due(run.next_due().filter(|d| *d > now));
        }
    }

    /// Remembers `at` as a wake-up or deadline to scan for, if it is the earliest known.
    fn note_due(&mut self, at: Option<Ts>) {
        if let Some(d) = at {
            self.next_due = Some(self.next_due.map_or(d, |n| n.min(d)));
        }
    }
}

impl Drop for Daemon<'_> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

// ---------------------------------------------------------------------------------------------
// Reading designs
// ---------------------------------------------------------------------------------------------

fn read_trigger(runner: &Runner<'_>, name: &DesignName) -> Trigger {
    let graph = match runner.store.load_design(name) {
        Ok(g) => g,
        Err(e) => return Trigger::Invalid(e.to_string()),
    };
    let design = match Design::from_value(&graph) {
        Ok(d) => d,
        Err(errors) => return Trigger::Invalid(vwf_core::validate::refusal(&errors)),
    };
    if let Err(report) = Plan::compile(name.as_str(), &design) {
        return Trigger::Invalid(report.refusal());
    }
    let Some(node) = design.trigger() else { return Trigger::Other("manual") };
    trigger_from_node(&node.raw)
}

fn trigger_from_node(node: &Map<String, Value>) -> Trigger {
    match vwf_core::trigger::Trigger::parse(node) {
        Err(issues) => Trigger::Invalid(issues.into_iter().next().map(|e| e.message).unwrap_or_default()),
        Ok(core::Heartbeat(h)) => Trigger::Heartbeat(h),
        Ok(core::Folder(f)) => Trigger::Folder(f),
        Ok(core::Watch(w)) => Trigger::Watch(w),
        Ok(other) => Trigger::Other(other.mode()),
    }
}

/// A folder path from a design: `~/` is the user's home directory, a relative path is relative to
/// the vwf home (the daemon's own working directory means nothing under a service manager).
fn resolve_path(home: &Path, path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(user) = std::env::var_os("HOME")
    {
        return PathBuf::from(user).join(rest);
    }
    let p = PathBuf::from(path);
    if p.is_absolute() { p } else { home.join(p) }
}

fn describe(trigger: &Trigger) -> String {
    match trigger {
        Trigger::Other(mode) => mode.to_string(),
        Trigger::Heartbeat(h) => format!("heartbeat ({})", heartbeat_detail(h)),
        Trigger::Folder(f) => format!("folder ({} {})", f.path, f.pattern),
        Trigger::Watch(w) => format!("watch ({})", shown_argv(&w.argv)),
        Trigger::Invalid(why) => format!("invalid ({why})"),
    }
}

fn event_names(events: &[FolderEvent], separator: &str) -> String {
    events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(separator)
}

fn other_detail(mode: &str) -> &'static str {
    match mode {
        "event" => "started by emitted events (vwf emit, emit nodes), not by the daemon",
        _ => "started by hand only",
    }
}

fn heartbeat_detail(h: &Heartbeat) -> String {
    let mut s = format!("every {}", human_seconds(h.every_seconds));
    if let Some((start, end)) = h.window {
        s.push_str(&format!(", {:02}:{:02}-{:02}:{:02}", start / 60, start % 60, end / 60, end % 60));
    }
    if h.days != [true; 7] {
        const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
        let days: Vec<&str> = DAYS.iter().zip(h.days).filter(|(_, on)| *on).map(|(d, _)| *d).collect();
        s.push_str(&format!(", {}", days.join(",")));
    }
    if h.tz.name() != "UTC" {
        s.push_str(&format!(" ({})", h.tz.name()));
    }
    s
}

fn human_seconds(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

fn down_note(live: &Live) -> String {
    match live {
        Live::Down { why, .. } => format!(" — not running: {why}"),
        _ => String::new(),
    }
}

fn shown_argv(argv: &[String]) -> String {
    match argv {
        [sh, c, script] if sh == "sh" && c == "-c" => format!("sh -c {script:?}"),
        _ => format!("{argv:?}"),
    }
}

/// Claims the home's triggers for this process for as long as the returned guard lives, so two
/// daemons (or a daemon and a server hosting one) never fire the same home's triggers twice.
pub fn claim_home(app: &App) -> Result<StoreLock, Failure> {
    Ok(app.jobs.claim_triggers()?)
}

/// Set by SIGINT/SIGTERM once [`stop_on_signals`] installed the handler.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// For a process that runs the daemon in the foreground (`vwf daemon`): SIGINT and SIGTERM set
/// the returned flag, which [`Daemon::run`] watches, so watchers and watch commands are stopped
/// cleanly. A server hosting the daemon uses its own stop flag instead.
pub fn stop_on_signals() -> &'static AtomicBool {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the
        // sigaction structure is fully initialised (zeroed, empty mask) before use.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    &STOP
}

// ---------------------------------------------------------------------------------------------
// Watch commands
// ---------------------------------------------------------------------------------------------

/// The thread that keeps one watch command running and forwards its stdout lines.
struct Supervisor {
    design: String,
    generation: u64,
    argv: Vec<String>,
    cwd: PathBuf,
    base_delay: u64,
    sender: Sender<Signal>,
    stop: Arc<AtomicBool>,
    group: Arc<Mutex<Option<i32>>>,
}

impl Supervisor {
    fn run(self) {
        let mut delay = self.base_delay;
        let Some((program, args)) = self.argv.split_first() else { return };
        loop {
            let started = Instant::now();
            let child = {
                let mut group = self.group.lock().unwrap_or_else(|e| e.into_inner());
                if self.stopped() {
                    return;
                }
                let spawned = Command::new(program)
                    .args(args)
                    .current_dir(&self.cwd)
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .process_group(0)
                    .spawn();
                match spawned {
                    Ok(child) => {
                        *group = i32::try_from(child.id()).ok();
                        Some(child)
                    }
                    Err(e) => {
                        self.log(&format!("watch command cannot start: {e}"));
                        None
                    }
                }
            };
            if let Some(mut child) = child {
                if let Some(stdout) = child.stdout.take() {
                    self.forward(stdout);
                }
                let status = child.wait();
                *self.group.lock().unwrap_or_else(|e| e.into_inner()) = None;
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
    fn signal_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let group = self.group.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pgid) = *group {
            // SAFETY: killpg only sends a signal; the group is the one this supervisor spawned
            // and has not reaped yet (the id is cleared under the same lock after `wait`).
            unsafe {
                libc::killpg(pgid, libc::SIGTERM);
            }
        }
    }

    fn kill_hard(&self) {
        let group = self.group.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pgid) = *group {
            // SAFETY: as in `signal_stop`.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// Waits for stopped watch commands to go: SIGKILL to the groups still there after the grace
/// period, then a last short wait. A supervisor stuck on a pipe held by an escaped process is left
/// behind rather than waited for forever.
fn finish_stopping(stopping: Vec<WatchProcess>) {
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
    fn stop(self) {
        if let Live::Watch(w) = self {
            w.signal_stop();
            finish_stopping(vec![w]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// `*` (any run of characters) and `?` (one character) on a file name; everything else literal.
pub fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) && p[pi] != '*' {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn time_now() -> Ts {
    chrono::Utc::now()
}

fn stamp_now() -> String {
    time_now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn log(now: Ts, message: &str) {
    eprintln!("{} vwf daemon: {message}", now.to_rfc3339_opts(SecondsFormat::Secs, true));
}

/// The app clock moved so that it reads the tick's `now` when the tick starts.
struct Shifted<'c> {
    base: &'c dyn Clock,
    offset: TimeDelta,
}

impl Clock for Shifted<'_> {
    fn now(&self) -> Ts {
        self.base.now() + self.offset
    }
    fn sleep_until(&self, t: Ts) {
        self.base.sleep_until(t - self.offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_can_be_moved_to_a_thread() {
        fn send<T: Send>() {}
        send::<Daemon<'static>>();
    }

    #[test]
    fn glob_matches_star_and_question_mark_on_names() {
        assert!(glob("*.csv", "a.csv"));
        assert!(glob("*.csv", ".csv"));
        assert!(!glob("*.csv", "a.csv.tmp"));
        assert!(!glob("*.csv", "b.txt"));
        assert!(glob("*", "anything"));
        assert!(glob("report-??.txt", "report-01.txt"));
        assert!(!glob("report-??.txt", "report-1.txt"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
        assert!(glob("**x", "x"));
        assert!(glob("é?", "éü"));
        assert!(!glob("", "a"));
        assert!(glob("", ""));
    }

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

    #[test]
    fn trigger_nodes_become_specs_with_defaults() {
        let node = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            trigger_from_node(&node(json!({"mode": "folder", "path": "/tmp/in"}))),
            Trigger::Folder(FolderTrigger {
                path: "/tmp/in".into(),
                pattern: "*".into(),
                events: vec![FolderEvent::Create, FolderEvent::Modify],
                debounce_ms: 500
            })
        );
        assert_eq!(
            trigger_from_node(&node(json!({"mode": "watch", "command": "tail -f x"}))),
            Trigger::Watch(WatchTrigger {
                argv: vec!["sh".into(), "-c".into(), "tail -f x".into()],
                restart_delay_seconds: 5,
                dedupe_minutes: 10
            })
        );
        assert_eq!(trigger_from_node(&node(json!({"mode": "event", "sources": ["a"]}))), Trigger::Other("event"));
        assert!(matches!(trigger_from_node(&node(json!({"mode": "heartbeat", "every": "5s"}))), Trigger::Invalid(_)));
    }
}
