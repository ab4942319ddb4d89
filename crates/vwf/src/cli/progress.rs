//! What `vwf run` (and `approve`, `respond`, `run retry`) shows while a run goes on: in a
//! terminal, live progress drawn by `indicatif` on standard error (a spinner per step running, a
//! bar per loop counting its passes, a countdown while the run sleeps through a wait), each step's
//! line printed above them as it settles; anywhere else (a pipe, a file, `--json`), the plain step
//! lines alone, so logs and scripts read the same text as before.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use vwf_api::render;
use vwf_core::names::PassId;
use vwf_runtime::runner::Progress;

/// How often the spinners and the countdown are redrawn.
const TICK: Duration = Duration::from_millis(120);

/// The live view of one command's runs.
pub(super) enum Live {
    /// Standard error is not a terminal: plain lines.
    Plain,
    Terminal(Box<Bars>),
}

/// The bars on the terminal: one spinner per step running, one bar per loop, the countdown.
pub(super) struct Bars {
    multi: MultiProgress,
    steps: RefCell<HashMap<String, ProgressBar>>,
    loops: RefCell<HashMap<String, ProgressBar>>,
    countdown: RefCell<Option<Countdown>>,
}

/// The bar of a wait and the thread that moves it on while the runner sleeps.
struct Countdown {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
}

impl Drop for Countdown {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.bar.finish_and_clear();
    }
}

impl Live {
    /// Bars when standard error is a terminal, else plain lines.
    pub(super) fn new() -> Live {
        if !std::io::stderr().is_terminal() {
            return Live::Plain;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        Live::Terminal(Box::new(Bars { multi, steps: RefCell::default(), loops: RefCell::default(), countdown: RefCell::default() }))
    }

    pub(super) fn show(&self, progress: Progress<'_>) {
        match self {
            Live::Plain => plain(progress),
            Live::Terminal(bars) => bars.show(progress),
        }
    }
}

/// A settled step's line, the same text in a terminal and elsewhere.
fn step_line(run: &vwf_core::run::Run, node: &PassId) -> Option<String> {
    run.record(node).and_then(|r| serde_json::to_value(r).ok()).map(|step| render::step_line(&step))
}

fn plain(progress: Progress<'_>) {
    if let Progress::Settled { run, node: Some(node) } = progress
        && let Some(line) = step_line(run, node)
    {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

impl Bars {
    fn show(&self, progress: Progress<'_>) {
        // Whatever comes next, a wait is over.
        self.countdown.borrow_mut().take();
        match progress {
            Progress::Started { run, node } => match run.loop_progress(node) {
                Some((lp, done, items)) => {
                    let mut loops = self.loops.borrow_mut();
                    let bar = loops.entry(lp.to_string()).or_insert_with(|| {
                        let bar = self.multi.add(ProgressBar::new(items as u64));
                        bar.set_style(style("  {spinner} loop {msg} [{bar:30}] {pos}/{len} passes ({elapsed})"));
                        bar.set_message(lp.to_string());
                        bar.enable_steady_tick(TICK);
                        bar
                    });
                    bar.set_position(done as u64);
                }
                None => {
                    let bar = self.multi.add(ProgressBar::new_spinner());
                    bar.set_style(style("  {spinner} {msg} ({elapsed})"));
                    bar.set_message(node.to_string());
                    bar.enable_steady_tick(TICK);
                    self.steps.borrow_mut().insert(node.to_string(), bar);
                }
            },
            // The run ended with no step settled (its timeout): the run's line says it.
            Progress::Settled { node: None, .. } => {}
            Progress::Settled { run, node: Some(node) } => {
                if let Some(bar) = self.steps.borrow_mut().remove(node.as_str()) {
                    bar.finish_and_clear();
                }
                match run.loop_progress(node) {
                    // A pass's steps move the loop's bar; their lines would drown the rest.
                    Some((lp, done, items)) => {
                        if let Some(bar) = self.loops.borrow_mut().get(lp) {
                            bar.set_position(done as u64);
                            if done >= items {
                                bar.finish();
                            }
                        }
                    }
                    None => {
                        if let Some(line) = step_line(run, node) {
                            let _ = self.multi.println(line);
                        }
                    }
                }
            }
            Progress::Waiting { run, now, until } => {
                let total = u64::try_from((until - now).num_milliseconds()).unwrap_or(0);
                let bar = self.multi.add(ProgressBar::new(total.max(1)));
                let node = run.pending().map(|p| p.node().to_string()).unwrap_or_default();
                bar.set_style(style("  {spinner} {msg} [{bar:30}] {prefix} left"));
                bar.set_message(format!("{node} waits until {}", until.format("%H:%M:%S UTC")));
                let stop = Arc::new(AtomicBool::new(false));
                let (moving, flag, began) = (bar.clone(), stop.clone(), Instant::now());
                std::thread::spawn(move || {
                    while !flag.load(Ordering::Relaxed) && !moving.is_finished() {
                        let gone = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX).min(total);
                        moving.set_position(gone);
                        moving.set_prefix(format!("{}s", (total - gone).div_ceil(1000)));
                        std::thread::sleep(TICK);
                    }
                });
                *self.countdown.borrow_mut() = Some(Countdown { bar, stop });
            }
        }
    }
}

impl Drop for Bars {
    /// The bars go before the run's summary is printed.
    fn drop(&mut self) {
        self.countdown.borrow_mut().take();
        for bar in self.steps.borrow().values().chain(self.loops.borrow().values()) {
            bar.finish_and_clear();
        }
        let _ = self.multi.clear();
    }
}
