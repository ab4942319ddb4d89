//! Run transitions as log lines and metrics, and the metrics `vwf serve` exposes.
//!
//! Why: an operator needs to see what runs do (one log line per transition, with run id and
//! design) and to graph and alert on it (`GET /metrics`, Prometheus text format) without reading
//! run files.
//!
//! Invariants:
//! - Transitions are observed at one place, the runner's save of a run ([`Watch`]): the state
//!   saved last is read back under the run's lock, and `vwf_core::transition` says what the new
//!   save changed. So every surface (CLI, server, daemon, tools, MCP) reports them alike, and a
//!   refused write reports nothing.
//! - Nothing is read back when nobody listens: no metrics (every command but `serve`) and run
//!   logs filtered out. A server does not read back either while it drives a run: [`Metrics`]
//!   keeps the digest of each run it saved `running` (under the run's lock, so nobody else
//!   writes it) until the run's next save, and reads back only a run it did not save last.
//! - [`Metrics`] is one registry per server (in its `App`), never global: two servers in one
//!   process count apart.
//! - Label values are bounded: designs and node types come from saved designs, HTTP routes are
//!   the router's templates (never a raw path), methods outside the standard ones are `other`.
//! - The parked-runs gauge is derived from the store at each scrape (the newest runs the daemon
//!   watches), so it is exact across restarts and across processes sharing the home.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use vwf_store::Wait;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use vwf_core::names::RunId;
use vwf_core::run::{Run, Status, StepStatus};
use vwf_core::transition::{self, Saved, Transition};

use crate::traces::Traces;
use vwf_store::{Store, StoreError};

/// Step durations, in seconds: from a quick command to a gate answered within a day.
const STEP_BUCKETS: [f64; 16] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0];
/// Durable writes of a run (write, fsync, rename), in seconds.
const WRITE_BUCKETS: [f64; 14] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
/// Run statuses the parked gauge has a series for (0 when none).
const PARKED: [Status; 5] =
    [Status::Waiting, Status::AwaitingApproval, Status::AwaitingAgent, Status::AwaitingEvent, Status::AwaitingChild];
/// Methods kept as they are in the requests counter; any other is counted as `other`.
const METHODS: [&str; 9] = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DesignLabel {
    design: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    node_type: String,
    /// How the attempt ended: `done` or `failed`.
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// The metrics of one server.
pub struct Metrics {
    registry: Registry,
    runs_started: Family<DesignLabel, Counter>,
    runs_done: Family<DesignLabel, Counter>,
    runs_failed: Family<DesignLabel, Counter>,
    step_seconds: HistogramFamily<StepLabels>,
    runs_parked: Family<StatusLabel, Gauge>,
    /// Runs waiting for a slot of their design's `concurrency`, among the newest runs.
    runs_waiting_for_slot: Gauge,
    /// Arrivals a trigger's throttle dropped, by design.
    arrivals_dropped: Family<DesignLabel, Counter>,
    write_seconds: Histogram,
    requests: Family<RequestLabels, Counter>,
    live_waiters: Gauge,
    runs_in_flight: Gauge,
    runs_queued: Gauge,
    runs_refused_busy: Counter,
    hooks_refused: Family<ReasonLabel, Counter>,
    /// The digest of each run this server saved `running` last, by run id: taken by the run's
    /// next save, so it holds only runs being driven now.
    driving: Mutex<HashMap<String, Saved>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("vwf");
        let runs_started = Family::default();
        let runs_done = Family::default();
        let runs_failed = Family::default();
        let step_seconds: HistogramFamily<StepLabels> = Family::new_with_constructor(|| Histogram::new(STEP_BUCKETS));
        let runs_parked = Family::default();
        let runs_waiting_for_slot = Gauge::default();
        let arrivals_dropped = Family::default();
        let write_seconds = Histogram::new(WRITE_BUCKETS);
        let requests = Family::default();
        let live_waiters = Gauge::default();
        let (runs_in_flight, runs_queued, runs_refused_busy) = (Gauge::default(), Gauge::default(), Counter::default());
        registry.register("runs_started", "Runs started, by design", runs_started.clone());
        registry.register("runs_done", "Runs that ended done, by design", runs_done.clone());
        registry.register("runs_failed", "Runs that ended failed (each time, a retried run again), by design", runs_failed.clone());
        registry.register(
            "step_duration_seconds",
            "Duration of ended step attempts, by node type and how they ended",
            step_seconds.clone(),
        );
        registry.register(
            "runs_parked",
            "Runs parked now (waiting on a wait, a gate or an agent), by status, among the newest runs",
            runs_parked.clone(),
        );
        registry.register(
            "trigger_arrivals_dropped",
            "Arrivals (events, folder changes, lines, webhook deliveries) a trigger's throttle dropped, by design",
            arrivals_dropped.clone(),
        );
        registry.register(
            "runs_queued",
            "Runs queued for a slot of their design's concurrency limit now, among the newest runs",
            runs_waiting_for_slot.clone(),
        );
        registry.register("run_write_duration_seconds", "Durable writes of a run file (written, synced, renamed)", write_seconds.clone());
        registry.register("http_requests", "HTTP requests answered, by method, route template and status", requests.clone());
        registry.register("live_waiters", "Long-poll reads (since=, wait=) held now, waiting for a change", live_waiters.clone());
        registry.register(
            "http_runs_in_flight",
            "Run requests (run, respond, retry) holding one of the server's run slots now",
            runs_in_flight.clone(),
        );
        registry.register("http_runs_queued", "Run requests waiting for a run slot now", runs_queued.clone());
        let hooks_refused = Family::default();
        registry.register(
            "webhooks_refused",
            "Webhook deliveries refused with 401 (missing, malformed, stale or mismatched signature; no secret), by reason",
            hooks_refused.clone(),
        );
        registry.register(
            "http_runs_refused_busy",
            "Run requests answered 503 because every run slot stayed taken (queue full or its wait over)",
            runs_refused_busy.clone(),
        );
        Metrics {
            registry,
            runs_started,
            runs_done,
            runs_failed,
            step_seconds,
            runs_parked,
            runs_waiting_for_slot,
            arrivals_dropped,
            write_seconds,
            requests,
            live_waiters,
            runs_in_flight,
            runs_queued,
            runs_refused_busy,
            hooks_refused,
            driving: Mutex::default(),
        }
    }

    fn record(&self, run: &Run, transitions: &[Transition<'_>]) {
        let design = DesignLabel { design: run.design().to_string() };
        for t in transitions {
            match t {
                Transition::Started => {
                    self.runs_started.get_or_create(&design).inc();
                }
                Transition::Step { record, ended } => {
                    let node_type = run.plan_step(&record.node).and_then(|s| s.kind()).map_or("unknown", |k| k.as_str()).to_string();
                    for attempt in ended {
                        let ended = if attempt.status == StepStatus::Done { "done" } else { "failed" };
                        let labels = StepLabels { node_type: node_type.clone(), status: ended.to_string() };
                        self.step_seconds.get_or_create(&labels).observe(transition::seconds(attempt));
                    }
                }
                Transition::Status { .. } => {
                    let ended = match run.status() {
                        Status::Done => &self.runs_done,
                        Status::Failed => &self.runs_failed,
                        _ => continue,
                    };
                    ended.get_or_create(&design).inc();
                }
            }
        }
    }

    /// Counts an arrival a trigger's throttle dropped.
    pub fn arrival_dropped(&self, design: &str) {
        self.arrivals_dropped.get_or_create(&DesignLabel { design: design.to_string() }).inc();
    }

    /// Counts one answered HTTP request; `route` is the matched route template (`-` for none).
    pub fn request(&self, method: &str, route: &str, status: u16) {
        let method = if METHODS.contains(&method) { method } else { "other" };
        let labels = RequestLabels { method: method.into(), route: route.into(), status: status.to_string() };
        self.requests.get_or_create(&labels).inc();
    }

    /// A long-poll read starts (`1`) or stops (`-1`) waiting.
    pub fn live_waiting(&self, delta: i64) {
        self.live_waiters.inc_by(delta);
    }

    /// A run request takes (`1`) or gives back (`-1`) a run slot.
    pub fn runs_in_flight(&self, delta: i64) {
        self.runs_in_flight.inc_by(delta);
    }

    /// A run request starts (`1`) or stops (`-1`) waiting for a run slot.
    pub fn runs_queued(&self, delta: i64) {
        self.runs_queued.inc_by(delta);
    }

    /// A run request was refused with 503: every run slot stayed taken.
    pub fn run_refused_busy(&self) {
        self.runs_refused_busy.inc();
    }

    /// A webhook delivery was refused with 401, for `reason`.
    pub fn hook_refused(&self, reason: &str) {
        self.hooks_refused.get_or_create(&ReasonLabel { reason: reason.to_string() }).inc();
    }

    /// The run slots' gauges and counter (in flight, queued, refused), for the server's bound
    /// to update from any thread without holding the metrics.
    pub(crate) fn slot_gauges(&self) -> (Gauge, Gauge, Counter) {
        (self.runs_in_flight.clone(), self.runs_queued.clone(), self.runs_refused_busy.clone())
    }

    /// The metrics in the Prometheus text format (version 0.0.4), with the parked-runs gauge
    /// counted from `store` now. A store that cannot be listed leaves the gauge out (and says so
    /// in the log) rather than failing the scrape: metrics matter most when something is wrong.
    pub fn render(&self, store: &dyn Store) -> String {
        match parked_runs(store) {
            Ok((counts, queued)) => {
                for (status, n) in PARKED.iter().zip(counts) {
                    self.runs_parked.get_or_create(&StatusLabel { status: status.as_str().into() }).set(n);
                }
                self.runs_waiting_for_slot.set(queued);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot count parked runs for the metrics");
                self.runs_parked.clear();
            }
        }
        let mut text = String::new();
        // Writing to a String cannot fail; the encoder only passes on the writer's errors.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }
}

/// The `Content-Type` of [`Metrics::render`].
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// How many runs are parked, per status of [`PARKED`], and how many are queued, among the newest
/// runs the daemon watches.
fn parked_runs(store: &dyn Store) -> Result<([i64; PARKED.len()], i64), StoreError> {
    let (mut counts, mut queued) = ([0; PARKED.len()], 0);
    for entry in store.list_summaries(crate::daemon::RUN_SCAN).wait()? {
        let Ok(summary) = entry.summary else { continue };
        if let Some(i) = PARKED.iter().position(|p| *p == summary.status) {
            counts[i] += 1;
        }
        if summary.status == Status::Queued {
            queued += 1;
        }
    }
    Ok((counts, queued))
}

impl Metrics {
    /// Forgets what this server saved of run `id` last: called when it takes the run's lock, since
    /// until then another process may have changed the run (a drive that ended in an error keeps
    /// no lock, and its digest would be stale by the next one).
    pub fn forget(&self, id: &str) {
        if let Ok(mut driving) = self.driving.lock() {
            driving.remove(id);
        }
    }
}

/// One save of a run, watched: made with [`Watch::before`] just before the store writes, then
/// told the outcome with [`Watch::saved`].
pub struct Watch<'a> {
    metrics: Option<&'a Metrics>,
    /// Where the save's spans go (see [`crate::traces`]); none when traces are off.
    traces: Option<&'a Traces>,
    /// The state saved last: `None` for a run never saved.
    before: Option<Saved>,
}

impl<'a> Watch<'a> {
    /// The state saved last, when someone listens (metrics, traces, or run logs not filtered
    /// out): kept by the metrics while this server drives the run, else read back from the
    /// store. `None` when nobody listens or the saved state cannot be read (then the save
    /// reports nothing).
    pub fn before(metrics: Option<&'a Metrics>, traces: Option<&'a Traces>, store: &dyn Store, id: &RunId) -> Option<Watch<'a>> {
        if !Watch::listened(metrics, traces) {
            return None;
        }
        // Taken out: a save that fails leaves no digest behind, so the next save reads back.
        if let Some(kept) = metrics.and_then(|m| m.driving.lock().ok()?.remove(id.as_str())) {
            return Some(Watch { metrics, traces, before: Some(kept) });
        }
        let before = match store.read_run(id).wait() {
            Ok(value) => Some(Saved::from_value(&value)?),
            Err(StoreError::NotFound(_)) => None,
            Err(_) => return None,
        };
        Some(Watch { metrics, traces, before })
    }

    /// [`Watch::before`] for the first save of a new run: nothing saved before, nothing to read.
    pub fn new_run(metrics: Option<&'a Metrics>, traces: Option<&'a Traces>) -> Option<Watch<'a>> {
        Watch::listened(metrics, traces).then_some(Watch { metrics, traces, before: None })
    }

    fn listened(metrics: Option<&Metrics>, traces: Option<&Traces>) -> bool {
        metrics.is_some() || traces.is_some() || tracing::enabled!(tracing::Level::INFO)
    }

    /// `run` was saved durably in `took`: one log line per transition, the metrics, and the
    /// spans the save completed.
    pub fn saved(self, run: &Run, took: Duration) {
        let transitions = transition::between(self.before.as_ref(), run);
        if let Some(metrics) = self.metrics {
            metrics.write_seconds.observe(took.as_secs_f64());
            metrics.record(run, &transitions);
            // A run saved `running` is being driven under its lock: its next save is ours too.
            if run.status() == Status::Running
                && let Ok(mut driving) = metrics.driving.lock()
            {
                driving.insert(run.run_id().to_string(), Saved::of(run));
            }
        }
        if let Some(traces) = self.traces {
            let spans = vwf_core::trace::spans(run, &transitions);
            if !spans.is_empty() {
                traces.send(spans);
            }
        }
        for t in &transitions {
            log(run, t);
        }
    }
}

fn log(run: &Run, t: &Transition<'_>) {
    let event = t.event(run);
    let status = run.status().as_str();
    match t {
        Transition::Step { record, ended } => {
            let node_type = run.plan_step(&record.node).and_then(|s| s.kind()).map(|k| k.as_str());
            let duration_ms = ended.last().map(|a| transition::seconds(a) * 1000.0);
            tracing::info!(
                run_id = %run.run_id(),
                design = %run.design(),
                event,
                status,
                node = %record.node,
                node_type,
                attempt = record.attempts,
                duration_ms,
                error = record.error.as_deref(),
                "run transition"
            );
        }
        Transition::Started | Transition::Status { .. } => {
            let error = (run.status() == Status::Failed).then_some(run.error().map(|e| e.text())).flatten();
            tracing::info!(run_id = %run.run_id(), design = %run.design(), event, status, error, "run transition");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_metrics_counts_apart_and_bounds_its_labels() {
        let (a, b) = (Metrics::new(), Metrics::new());
        a.request("GET", "/healthz", 200);
        a.request("BREW", "/healthz", 200);
        let text = |m: &Metrics| {
            let mut out = String::new();
            prometheus_client::encoding::prometheus_text::encode(&mut out, &m.registry).unwrap();
            out
        };
        let a_text = text(&a);
        assert!(a_text.contains(r#"vwf_http_requests_total{method="GET",route="/healthz",status="200"} 1"#), "{a_text}");
        assert!(a_text.contains(r#"vwf_http_requests_total{method="other",route="/healthz",status="200"} 1"#), "{a_text}");
        assert!(!text(&b).contains("vwf_http_requests_total{"), "{}", text(&b));
    }
}
