//! The bound on run work in flight: everything inside `vwf serve` that starts or drives a run
//! takes a slot before it touches the store, so under load latency grows with the queue instead of
//! throughput falling. Requests (`POST /designs/{name}/run`, `/runs/{run_id}/respond`,
//! `/runs/{run_id}/retry`, `/events/{name}`, `/schedules/{job_id}/run`, and `/mcp` calls of
//! `workflow_design_run` and `workflow_design_respond`) take one with [`Gate::enter`]; the
//! server's daemon (schedules, heartbeats, folder and watch triggers, resumed waits) with
//! [`Gate::wait`], which waits as long as it takes: nobody could be told to come back.
//!
//! Why: a run writes its files in one directory, and creating, renaming or removing a file there
//! takes that directory's lock, whose holder often waits for the disk. Given one blocking thread
//! per request, 200 concurrent runs queued on that lock and the server finished about a third of
//! the runs per second it finished with 16 (ARCHITECTURE.md, "Under load"). A few runs in flight
//! per core keep the disk busy; more only lengthen the queue in the kernel, where nothing bounds it.
//!
//! Invariants:
//! - At most `slots` holders do their work at once. A slot is held until the work ends, also
//!   while a `wait: false` run is driven on in the background after its answer. Runs started by
//!   an emit step run inside the slot of the run that emits (on its thread, one after another).
//! - At most `queue` requests wait for a slot, each at most `wait`, in arrival order. A request
//!   beyond either is refused with 503, a `Retry-After` header and `{ok:false, error}` (a JSON-RPC
//!   error on `/mcp`), before anything is written; a client that hangs up while it waits leaves
//!   the queue. The daemon's wait is counted among the queued but is never refused.
//! - Every other route (reads, saves, the probes, the metrics) never waits here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use vwf_core::limits;

use crate::telemetry::Metrics;

/// The `[server]` settings of the bound: `runs_in_flight`, `run_queue`, `run_queue_wait_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub slots: usize,
    pub queue: usize,
    pub wait: Duration,
}

impl Default for Bound {
    /// [`limits::RUNS_IN_FLIGHT_PER_CORE`] slots per core, and the default queue and wait.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        let (low, high) = limits::RUNS_IN_FLIGHT;
        Bound {
            slots: (cores * limits::RUNS_IN_FLIGHT_PER_CORE).clamp(low, high) as usize,
            queue: limits::RUN_QUEUE_DEFAULT as usize,
            wait: Duration::from_millis(limits::RUN_QUEUE_WAIT_DEFAULT_MS),
        }
    }
}

/// The server's gauges of the bound: slots held, holders waiting, requests refused.
#[derive(Clone, Default)]
struct Gauges {
    in_flight: Option<Gauge>,
    queued: Option<Gauge>,
    refused: Option<Counter>,
}

/// The slots of one server and the requests waiting for them.
pub struct Gate {
    bound: Bound,
    slots: Arc<Semaphore>,
    waiting: Arc<AtomicUsize>,
    gauges: Gauges,
}

/// A slot taken: given back (and the in-flight gauge lowered) when dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    in_flight: Option<Gauge>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(gauge) = &self.in_flight {
            gauge.dec();
        }
    }
}

/// A slot handed along with a request to the code that does its work (an `/mcp` tool call runs
/// where the HTTP layer cannot follow it): taken once, given back when the last holder drops it.
#[derive(Clone)]
pub struct Ticket(Arc<std::sync::Mutex<Option<Slot>>>);

impl Ticket {
    pub fn new(slot: Slot) -> Ticket {
        Ticket(Arc::new(std::sync::Mutex::new(Some(slot))))
    }

    /// The slot, for the first caller.
    pub fn take(&self) -> Option<Slot> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// A place in the queue, left when dropped (also when the request's future is dropped because
/// its client hung up).
struct Waiting {
    count: Arc<AtomicUsize>,
    queued: Option<Gauge>,
}

impl Waiting {
    /// Joins the queue; answers how many were in it before.
    fn join(gate: &Gate) -> (Waiting, usize) {
        let ahead = gate.waiting.fetch_add(1, Ordering::SeqCst);
        if let Some(gauge) = &gate.gauges.queued {
            gauge.inc();
        }
        (Waiting { count: gate.waiting.clone(), queued: gate.gauges.queued.clone() }, ahead)
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        if let Some(gauge) = &self.queued {
            gauge.dec();
        }
    }
}

/// A request refused because every slot stayed taken (the API answers 503 with `Retry-After`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Busy(String);

impl Gate {
    /// The bound's slots; `metrics` (the server's) show them at work.
    pub fn new(bound: Bound, metrics: Option<&Metrics>) -> Gate {
        let gauges = match metrics.map(Metrics::slot_gauges) {
            Some((in_flight, queued, refused)) => Gauges { in_flight: Some(in_flight), queued: Some(queued), refused: Some(refused) },
            None => Gauges::default(),
        };
        Gate { bound, slots: Arc::new(Semaphore::new(bound.slots)), waiting: Arc::new(AtomicUsize::new(0)), gauges }
    }

    /// Takes a slot: at once when one is free, else after waiting in the queue (at most the
    /// bound's wait); `Busy` when the queue is full or the wait ran out.
    pub async fn enter(&self) -> Result<Slot, Busy> {
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => self.queued().await?,
        };
        Ok(self.held(permit))
    }

    /// Takes a slot on a thread that may block (the daemon's), waiting for as long as every slot
    /// stays taken: what fires there has no caller to refuse, so it starts later instead.
    pub fn wait(&self) -> Slot {
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let (_place, _) = Waiting::join(self);
                // The semaphore is never closed, so the acquire only ever ends with a permit.
                match block_on(self.slots.clone().acquire_owned()) {
                    Ok(permit) => permit,
                    Err(_) => unreachable!("the run slots' semaphore is never closed"),
                }
            }
        };
        self.held(permit)
    }

    fn held(&self, permit: OwnedSemaphorePermit) -> Slot {
        if let Some(gauge) = &self.gauges.in_flight {
            gauge.inc();
        }
        Slot { _permit: permit, in_flight: self.gauges.in_flight.clone() }
    }

    async fn queued(&self) -> Result<OwnedSemaphorePermit, Busy> {
        let Bound { slots, queue, wait } = self.bound;
        let retry = limits::BUSY_RETRY_AFTER_SECONDS;
        let (place, ahead) = Waiting::join(self);
        let refused = if ahead >= queue {
            format!("the server is busy: all {slots} run slots are taken and {ahead} requests wait for one; retry in {retry} s")
        } else {
            // The semaphore is never closed; a closed one would be answered as busy all the same.
            match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await.ok().and_then(Result::ok) {
                Some(permit) => return Ok(permit),
                None => format!("the server is busy: all {slots} run slots stayed taken for {} ms; retry in {retry} s", wait.as_millis()),
            }
        };
        drop(place);
        if let Some(counter) = &self.gauges.refused {
            counter.inc();
        }
        Err(Busy(refused))
    }
}

/// Drives `future` to its end on this thread, parking between wake-ups (tokio's semaphore needs
/// no runtime, and the daemon's thread is in none).
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocking_wait_takes_the_slot_once_it_is_given_back() {
        let gate = Arc::new(Gate::new(Bound { slots: 1, queue: 0, wait: Duration::ZERO }, None));
        let held = gate.wait();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let slot = gate.wait();
                tx.send(()).expect("the test listens");
                drop(slot);
            })
        };
        // The waiter cannot have the slot while it is held; it gets it once given back.
        assert!(rx.try_recv().is_err());
        drop(held);
        rx.recv().expect("the waiter took the slot");
        waiter.join().expect("the waiter ends");
        assert_eq!(gate.waiting.load(Ordering::SeqCst), 0);
        drop(gate.wait());
    }
}
