//! The bound on run work in flight: a request that starts or advances a run (`POST
//! /designs/{name}/run`, `/runs/{run_id}/respond`, `/runs/{run_id}/retry`) takes a slot before it
//! touches the store, so under load latency grows with the queue instead of throughput falling.
//!
//! Why: a run writes its files in one directory, and creating, renaming or removing a file there
//! takes that directory's lock, whose holder often waits for the disk. Given one blocking thread
//! per request, 200 concurrent runs queued on that lock and the server finished about a third of
//! the runs per second it finished with 16 (ARCHITECTURE.md, "Under load"). A few runs in flight
//! per core keep the disk busy; more only lengthen the queue in the kernel, where nothing bounds it.
//!
//! Invariants:
//! - At most `slots` such requests do their work at once. A slot is held until the work ends,
//!   also while a `wait: false` run is driven on in the background after its answer.
//! - At most `queue` requests wait for a slot, each at most `wait`, in arrival order. A request
//!   beyond either is refused with 503, a `Retry-After` header and `{ok:false, error}`, before
//!   anything is written; a client that hangs up while it waits leaves the queue.
//! - Every other route (reads, the probes, the metrics) never waits here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use vwf_core::limits;

use crate::app::App;

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

/// The slots of one server and the requests waiting for them.
pub(crate) struct Gate {
    bound: Bound,
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
}

/// A slot taken: given back (and the in-flight gauge lowered) when dropped.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    app: Arc<App>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(metrics) = &self.app.metrics {
            metrics.runs_in_flight(-1);
        }
    }
}

/// A place in the queue, left when dropped (also when the request's future is dropped because
/// its client hung up).
struct Waiting<'a> {
    count: &'a AtomicUsize,
    app: &'a App,
}

impl<'a> Waiting<'a> {
    /// Joins the queue; answers how many requests were in it before.
    fn join(count: &'a AtomicUsize, app: &'a App) -> (Waiting<'a>, usize) {
        let ahead = count.fetch_add(1, Ordering::SeqCst);
        if let Some(metrics) = &app.metrics {
            metrics.runs_queued(1);
        }
        (Waiting { count, app }, ahead)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
        if let Some(metrics) = &self.app.metrics {
            metrics.runs_queued(-1);
        }
    }
}

/// A request refused because every slot stayed taken: 503 with `Retry-After`.
#[derive(Debug)]
pub(crate) struct Busy(String);

impl IntoResponse for Busy {
    fn into_response(self) -> Response {
        let mut response = super::api::error(StatusCode::SERVICE_UNAVAILABLE, self.0);
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(limits::BUSY_RETRY_AFTER_SECONDS));
        response
    }
}

impl Gate {
    pub(crate) fn new(bound: Bound) -> Gate {
        Gate { bound, slots: Arc::new(Semaphore::new(bound.slots)), waiting: AtomicUsize::new(0) }
    }

    /// Takes a slot: at once when one is free, else after waiting in the queue (at most the
    /// bound's wait); `Busy` when the queue is full or the wait ran out.
    pub(crate) async fn enter(&self, app: &Arc<App>) -> Result<Slot, Busy> {
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => self.queued(app).await?,
        };
        if let Some(metrics) = &app.metrics {
            metrics.runs_in_flight(1);
        }
        Ok(Slot { _permit: permit, app: app.clone() })
    }

    async fn queued(&self, app: &Arc<App>) -> Result<OwnedSemaphorePermit, Busy> {
        let Bound { slots, queue, wait } = self.bound;
        let retry = limits::BUSY_RETRY_AFTER_SECONDS;
        let (place, ahead) = Waiting::join(&self.waiting, app);
        let refused = if ahead >= queue {
            format!("the server is busy: all {slots} run slots are taken and {ahead} requests wait for one; retry in {retry} s")
        } else {
            match tokio::time::timeout(wait, self.slots.clone().acquire_owned()).await {
                Ok(Ok(permit)) => return Ok(permit),
                // The semaphore is never closed; answered as busy all the same.
                Ok(Err(_)) | Err(_) => {
                    format!("the server is busy: all {slots} run slots stayed taken for {} ms; retry in {retry} s", wait.as_millis())
                }
            }
        };
        drop(place);
        if let Some(metrics) = &app.metrics {
            metrics.run_refused_busy();
        }
        Err(Busy(refused))
    }
}
