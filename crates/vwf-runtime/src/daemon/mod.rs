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
//!   but a long step (a command, an agent call) delays the next tick until it settles. Hosted by
//!   `vwf serve`, each run started or driven on here first takes one of the server's run slots
//!   (`App::slots`), waiting for as long as every slot is taken.
//!
//! This file holds the loop, heartbeats, schedule jobs and settling; [`folder`] and [`watch`] the
//! two triggers with watchers of their own, [`describe`] the words for the log and the table.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};
use vwf_store::Wait;

use chrono::{SecondsFormat, TimeDelta};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::TryRecvError;
use vwf_core::design::Design;
use vwf_core::names::{DesignName, RunId};
use vwf_core::plan::Plan;
use vwf_core::run::settle::{Settle, Summary};
use vwf_core::run::{Status, TriggerInfo};
use vwf_core::schedule::Heartbeat;
use vwf_core::time::{self, Ts};
use vwf_core::trigger::Trigger as core;
use vwf_core::trigger::{FolderTrigger, TriggerMode, WatchTrigger};

use crate::app::{self, App};
use crate::clock::Shifted;
use crate::error::RunError;
use crate::runner::{Arrival, Runner};
use crate::schedules;
use vwf_store::StoreLock;
use vwf_store::changes::Change;

mod describe;
mod folder;
mod watch;

use describe::{describe, down_note, event_names, heartbeat_detail, other_detail, shown_argv};
use folder::FolderWatch;
pub use folder::glob;
use watch::{WatchProcess, finish_stopping};

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
/// How long `run` waits between ticks, and how often it looks at the stop flag meanwhile.
const TICK_PERIOD: Duration = Duration::from_secs(1);
const STOP_POLL: Duration = Duration::from_millis(100);

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
    pub mode: TriggerMode,
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
    /// Change notices of the store (another instance answered a gate, parked a wait…).
    changes: tokio::sync::broadcast::Receiver<Change>,
    /// Runs changed since the last scan, looked at on the next tick.
    touched: BTreeSet<RunId>,
    /// See [`Daemon::set_timers`].
    timers: bool,
    /// Whether folder and watch triggers run here (`[daemon] local_triggers`).
    local: bool,
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
    Other(TriggerMode),
    Heartbeat(Heartbeat),
    Folder(FolderTrigger),
    Watch(WatchTrigger),
    /// The design cannot be run: why.
    Invalid(String),
    /// An automatic trigger of this mode, turned off (`"enabled": false`): nothing fires.
    Disabled(String),
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
            changes: app.changes.subscribe(),
            touched: BTreeSet::new(),
            timers: true,
            local: app.drivers.config.daemon.local_triggers,
        }
    }

    /// Whether this daemon keeps the timers (heartbeats, schedule jobs, waits, deadlines,
    /// interrupted runs): only the one holding the home's trigger claim does. Folder and watch
    /// triggers run either way, where `[daemon] local_triggers` allows them.
    pub fn set_timers(&mut self, on: bool) {
        self.timers = on;
    }

    /// Takes the change notices that arrived (see `vwf_store::changes`): a changed run is looked at
    /// on the next tick without waiting for the periodic scan, and missed notices force that scan.
    /// Whether any that calls for a tick now arrived: a run's end does not (it has nothing due,
    /// and the queue it leaves a slot in is handed on by whoever ended it), so a busy server's
    /// runs ending do not tick the daemon, and its statements, once per run.
    fn take_changes(&mut self) -> bool {
        let mut any = false;
        loop {
            match self.changes.try_recv() {
                Ok(Change::Run(id)) => {
                    self.touched.insert(id);
                }
                Ok(Change::Resync) | Err(TryRecvError::Lagged(_)) => self.next_scan = None,
                Ok(Change::Ended(_)) => continue,
                Ok(Change::Design(_) | Change::Job(_)) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => return any,
            }
            any = true;
        }
    }

    /// One pass of the daemon's work at `now`: reload the designs that changed (and rebuild their
    /// watchers), fire what the watchers saw, fire due heartbeats, then resume due waits, fail
    /// gates past their deadline and mark runs of dead processes interrupted.
    pub fn tick(&mut self, now: Ts) -> TickReport {
        let shifted = Shifted::to(self.app.clock.as_ref(), now);
        let runner = Runner { clock: &shifted, ..self.app.runner(&app::quiet, false) };
        let mut report = TickReport::default();
        self.refresh(&runner, now);
        self.handle_signals(&runner, now, &mut report);
        if self.timers {
            self.fire_heartbeats(&runner, now, &mut report);
            self.fire_schedules(now, &mut report);
            self.settle_runs(&runner, now, &mut report);
            // The flow documents that wait for something, listed once for the concurrency queues
            // and the held arrivals (neither changes which of the other's documents wait).
            match self.app.store.waiting_docs().wait() {
                Ok(waiting) => {
                    self.nudge_queues(&runner, now, &waiting);
                    self.start_due_arrivals(&runner, now, &waiting, &mut report);
                }
                Err(e) => log(now, &format!("cannot list the concurrency queues and held arrivals: {e}")),
            }
        }
        report
    }

    /// Ticks about once a second until `stop` is set, then stops every watcher and watch command.
    /// Watcher signals arriving between ticks cut the wait short.
    pub fn run(&mut self, stop: &AtomicBool) {
        self.run_with(stop, |_| {});
    }

    /// [`Daemon::run`], calling `before_tick` before each tick (a server standing by tries to
    /// claim the timers there).
    pub fn run_with(&mut self, stop: &AtomicBool, mut before_tick: impl FnMut(&mut Daemon<'a>)) {
        while !stop.load(Ordering::SeqCst) {
            before_tick(self);
            self.tick(self.app.clock.now());
            let until = Instant::now() + TICK_PERIOD;
            while !stop.load(Ordering::SeqCst) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                if self.take_changes() {
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
                    Trigger::Other(mode) if *mode == TriggerMode::Schedule && job.is_none() => {
                        (mode.to_string(), "no schedule job yet (create it with `vwf schedule`)".to_string())
                    }
                    Trigger::Other(mode) if *mode == TriggerMode::Schedule => (mode.to_string(), String::new()),
                    Trigger::Other(mode) => (mode.to_string(), other_detail(*mode).to_string()),
                    Trigger::Invalid(why) => ("invalid".to_string(), format!("not watched: {why}")),
                    Trigger::Disabled(mode) => (mode.clone(), format!("disabled: nothing fires until `vwf enable {name}`")),
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
        let names = match self.app.store.list_designs().wait() {
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
            let stamp = self.app.store.design_stamp(&design).wait();
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
        if !self.local && matches!(tracked.trigger, Trigger::Folder(_) | Trigger::Watch(_)) {
            let why = "not run on this instance ([daemon] local_triggers = false in visual-workflow.toml)".to_string();
            log(now, &format!("{name}: {} trigger {why}", describe(&tracked.trigger)));
            if let Some(t) = self.designs.get_mut(name) {
                t.live = Live::Down { why, retry_at: None };
            }
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
            let last = *self.heartbeats.entry(name.clone()).or_insert_with(|| jobs.last_fire(&design).wait());
            let Some(next) = beat.next_heartbeat(now, last) else { continue };
            if next > now {
                continue;
            }
            match self.app.jobs.claim_fire(&design, last, now).wait() {
                // Kept as the store has it, to claim the next fire against.
                Ok(true) => self.heartbeats.insert(name.clone(), self.app.jobs.last_fire(&design).wait().or(Some(now))),
                // Another daemon fired it (or the state changed under us): read it again.
                Ok(false) => {
                    self.heartbeats.insert(name.clone(), self.app.jobs.last_fire(&design).wait());
                    continue;
                }
                Err(e) => {
                    self.heartbeats.insert(name.clone(), Some(now));
                    log(now, &format!("{name}: heartbeat not fired: cannot record it ({e}); next try after the interval"));
                    continue;
                }
            };
            let input = json!({"fired_at": time::format(&now)});
            report.fired.push(self.fire(runner, now, &name, TriggerMode::Heartbeat, input));
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
    fn fire(&mut self, runner: &Runner<'_>, now: Ts, design: &str, mode: TriggerMode, input: Value) -> Fired {
        let mut fired = Fired { design: design.to_string(), mode, input: input.clone(), run_id: None, status: None, error: None };
        // Inside `vwf serve` the run takes a run slot like every request, waiting for one as long
        // as it takes (a trigger has nobody to refuse).
        let _slot = self.app.slots.as_ref().map(|gate| gate.wait());
        let started = DesignName::parse(design)
            .map_err(RunError::Rejected)
            .and_then(|name| runner.arrive(&name, TriggerInfo::new(mode, input.clone())));
        match started {
            // Held by the trigger's debounce or throttle.
            Ok(held @ (Arrival::Debounced { .. } | Arrival::Deferred { .. } | Arrival::Dropped(_))) => {
                log(now, &format!("{design}: {mode} fired → {}", held.describe()));
            }
            Ok(Arrival::Started(run)) => {
                let mut line = format!("{design}: {mode} fired → run {} {}", run.run_id(), run.status().as_str());
                if let Some(e) = run.error() {
                    line.push_str(&format!(" ({e})"));
                }
                log(now, &line);
                self.note_due(run.next_due());
                fired.run_id = Some(run.run_id().to_string());
                fired.status = Some(run.status());
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
        self.take_changes();
        let scan = match (self.next_scan, self.last_scan) {
            (Some(next), Some(last)) => now >= next || now < last || self.next_due.is_some_and(|d| d <= now),
            _ => true,
        };
        if !scan {
            // Runs another process changed since: each looked at alone.
            for id in std::mem::take(&mut self.touched) {
                let Ok(run) = self.app.store.read_run_summary(&id).wait() else { continue };
                self.settle_one(runner, now, &id, &run, report);
            }
            return;
        }
        self.touched.clear();
        self.last_scan = Some(now);
        self.next_scan = Some(now + TimeDelta::seconds(RESCAN_SECONDS));
        self.next_due = None;
        let entries = match self.app.store.list_summaries(RUN_SCAN).wait() {
            Ok(entries) => entries,
            Err(e) => {
                log(now, &format!("cannot list runs: {e}"));
                return;
            }
        };
        for entry in entries {
            if let Ok(summary) = &entry.summary {
                self.settle_one(runner, now, &entry.id, summary, report);
            }
        }
    }

    /// Starts the runs the triggers' debounce and throttle held that are due now (inside `vwf
    /// serve` on a run slot, waited for).
    fn start_due_arrivals(&mut self, runner: &Runner<'_>, now: Ts, waiting: &[String], report: &mut TickReport) {
        // A slot is waited for only when something is held: a busy server's ticks go on.
        if !Runner::holds_arrivals(waiting) {
            return;
        }
        let _slot = self.app.slots.as_ref().map(|gate| gate.wait());
        for run in runner.start_due_arrivals_among(waiting) {
            log(now, &format!("{}: held arrival started → run {} {}", run.design(), run.run_id(), run.status().as_str()));
            self.note_due(run.next_due());
            report.fired.push(Fired {
                design: run.design().to_string(),
                mode: run.trigger().mode,
                input: run.trigger().input.clone(),
                run_id: Some(run.run_id().to_string()),
                status: Some(run.status()),
                error: None,
            });
        }
    }

    /// Looks at each concurrency scope with queued runs or holders asked to stop (see
    /// [`Runner::nudge_scope`]): what a process that died left (a slot of a run that ended, a run
    /// let go and never driven) moves on.
    fn nudge_queues(&self, runner: &Runner<'_>, now: Ts, waiting: &[String]) {
        for scope in crate::flowdoc::of_kind::<vwf_core::concurrency::Slots>(waiting) {
            if let Err(e) = runner.nudge_scope(&scope) {
                let (design, key) = vwf_core::concurrency::split_scope(&scope);
                log(now, &format!("{design}: cannot move the queue of concurrency key {key:?}: {e}"));
            }
        }
    }

    /// Settles one run if it is due (through the runner, under its lock), and remembers when it
    /// will be due next.
    fn settle_one(&mut self, runner: &Runner<'_>, now: Ts, id: &RunId, summary: &Summary, report: &mut TickReport) {
        {
            // A queued run whose slot was given while nobody could drive it goes on now.
            if summary.status == vwf_core::run::Status::Queued {
                if let Err(e) = runner.start_queued(id) {
                    log(now, &format!("run {id}: cannot start from its queue: {e}"));
                }
                return;
            }
            let Some(due) = summary.due(now, true) else {
                self.note_due(summary.next_due().filter(|d| *d > now));
                return;
            };
            // A due wait drives its run on: inside `vwf serve` that takes a run slot (waiting for
            // one). Marking a run interrupted or a gate timed out is one write (a dead process's
            // run its steps' policies take up again is driven on without a slot: a slot is not
            // waited for on behalf of a run whose owner may still be alive).
            let slot = self.app.slots.as_ref().filter(|_| matches!(due, Settle::WaitDue | Settle::Unannounced)).map(|gate| gate.wait());
            let opened = runner.open_settling(id);
            drop(slot);
            let (run, settled) = match opened {
                Ok(opened) => opened,
                Err(e) => {
                    log(now, &format!("run {id}: cannot settle: {e}"));
                    return;
                }
            };
            let design = run.design();
            let outcome = match run.error() {
                Some(e) => format!("{} ({e})", run.status().as_str()),
                None => run.status().as_str().to_string(),
            };
            // Nothing settled: its owner is alive and working on it (a foreground `vwf run`), or
            // finished it in between; look again at the next periodic scan.
            let (line, list) = match settled {
                None => return,
                Some(Settle::Orphaned) => ("was left running by a dead process", &mut report.interrupted),
                Some(Settle::WaitDue) => ("resumed after its wait", &mut report.resumed),
                Some(Settle::DeadlinePassed) => ("gate deadline passed", &mut report.timed_out),
                Some(Settle::TimedOut) => ("passed its design's timeout", &mut report.timed_out),
                Some(Settle::Children) => ("went on with its child run", &mut report.resumed),
                Some(Settle::Unannounced) => ("announced its gate", &mut report.resumed),
            };
            log(now, &format!("{design}: run {} {line} → {outcome}", run.run_id()));
            list.push(run.run_id().to_string());
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
    let graph = match runner.store.load_design(name).wait() {
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
    let Some(node) = design.trigger() else { return Trigger::Other(TriggerMode::Manual) };
    if !design.enabled() && vwf_core::trigger::is_automatic(&node.raw) {
        return Trigger::Disabled(vwf_core::trigger::declared_mode(&node.raw).to_string());
    }
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

/// Claims the home's triggers for this process for as long as the returned guard lives, so two
/// daemons (or a daemon and a server hosting one) never fire the same home's triggers twice.
pub fn claim_home(app: &App) -> Result<StoreLock, RunError> {
    Ok(app.jobs.claim_triggers().wait()?)
}

// ---------------------------------------------------------------------------------------------
// Watch commands
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn time_now() -> Ts {
    chrono::Utc::now()
}

/// A line of the daemon's log (through `tracing`, like every long-running part of vwf), with the
/// daemon's own `now` (a tick's time may be injected).
fn log(now: Ts, message: &str) {
    tracing::info!(target: "vwf::daemon", at = %now.to_rfc3339_opts(SecondsFormat::Secs, true), "{message}");
}

#[cfg(test)]
mod tests;
