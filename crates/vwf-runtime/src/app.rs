//! What every surface shares: the home directory, its store, the drivers made from its config,
//! and the clock. Built once per process (or per server) and handed to the runner and the tools.

use std::path::{Path, PathBuf};

use crate::clock::{self, Clock};
use crate::error::RunError;
use crate::runner::{Progress, Runner};
use crate::telemetry::Metrics;
use crate::traces::{self, Traces};
use vwf_core::names::RunId;
use vwf_exec::Drivers;
use vwf_exec::config::{Config, StoreConfig};
use vwf_store::{FileStore, JobStore, PgSettings, PgStore, Store, StoreError};

pub struct App {
    pub home: PathBuf,
    pub store: Box<dyn Store>,
    /// Schedule jobs and trigger state, kept by the same backend as `store`.
    pub jobs: Box<dyn JobStore>,
    pub drivers: Drivers,
    pub clock: Box<dyn Clock>,
    /// Change notices of the store (see `vwf_store::changes`), once [`App::follow_changes`] is called.
    pub changes: vwf_store::changes::Changes,
    /// Set by `vwf serve`, which exposes them; every runner of this app updates them.
    pub metrics: Option<Metrics>,
    /// Where runs go as traces (`[telemetry]`, `OTEL_EXPORTER_OTLP_*`); none when off. Dropped
    /// with the app, which sends what is still queued.
    pub traces: Option<Traces>,
    /// The run slots of `vwf serve` (`[server] runs_in_flight`): its requests and its daemon take
    /// one before they start or drive a run. `None` elsewhere: nothing else is bounded.
    pub slots: Option<std::sync::Arc<crate::gate::Gate>>,
    /// Who drives a run a concurrency queue lets go (see [`Runner::handoff`]): set once by
    /// `vwf serve`; unset, the thread that freed the slot drives it.
    pub handoff: std::sync::OnceLock<Box<dyn Fn(RunId) + Send + Sync>>,
    /// Plans kept for the next run of a design (see [`crate::runner::Plans`]).
    pub plans: crate::runner::Plans,
}

/// The home directory: `--home`, else `$VWF_HOME`, else `$HERMES_HOME`, else `~/.hermes`.
pub fn resolve_home(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    for var in ["VWF_HOME", "HERMES_HOME"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return PathBuf::from(v);
        }
    }
    let base = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    base.join(".hermes")
}

impl App {
    pub fn open(home: PathBuf) -> Result<App, RunError> {
        App::open_with(home, std::env::var("VWF_DATABASE_URL").ok())
    }

    /// [`App::open`] with `database_url` standing for `VWF_DATABASE_URL` (not read): one process
    /// can open apps on different databases (the tests do).
    pub fn open_with(home: PathBuf, database_url: Option<String>) -> Result<App, RunError> {
        let config = Config::load(&home).map_err(RunError::Config)?;
        let clock = clock::from_env().map_err(RunError::Rejected)?;
        let database = postgres_settings(&config.store, database_url).map_err(RunError::Rejected)?;
        let (store, jobs): (Box<dyn Store>, Box<dyn JobStore>) = match database {
            Some(settings) => {
                // A database that cannot be connected to, whatever the cause, is out of reach.
                let pg = PgStore::connect(&settings).map_err(StoreError::unreachable)?;
                (Box::new(pg.clone()), Box::new(pg))
            }
            None => {
                let files = FileStore::new(home.clone());
                (Box::new(files.clone()), Box::new(files))
            }
        };
        let traces = match traces::endpoint(config.telemetry.otlp_endpoint.as_deref(), |name| std::env::var(name).ok()) {
            Some(url) => match Traces::new(&url) {
                Ok(t) => Some(t),
                // Only the standard variables can name an endpoint the exporter refuses (the
                // config's is checked at load): runs go on without traces, and the log says why.
                Err(e) => {
                    tracing::warn!("{e}; runs are not traced");
                    None
                }
            },
            None => None,
        };
        Ok(App {
            traces,
            store,
            jobs,
            home,
            drivers: Drivers::new(config),
            clock,
            metrics: None,
            changes: Default::default(),
            slots: None,
            handoff: Default::default(),
            plans: Default::default(),
        })
    }

    /// Starts publishing the store's change notices on `self.changes` (for a long-running process:
    /// the server, the daemon); whether the store gives any.
    pub fn follow_changes(&self) -> bool {
        self.store.notify_changes(&self.changes)
    }

    pub fn runner<'a>(&'a self, observer: &'a dyn Fn(Progress<'_>), sleep_for_waits: bool) -> Runner<'a> {
        Runner {
            store: self.store.as_ref(),
            drivers: &self.drivers,
            clock: self.clock.as_ref(),
            observer,
            sleep_for_waits,
            metrics: self.metrics.as_ref(),
            traces: self.traces.as_ref(),
            handoff: self.handoff.get().map(|h| &**h as &(dyn Fn(RunId) + Send + Sync)),
            plans: Some(&self.plans),
        }
    }
}

/// An observer that ignores progress (tools, chat).
pub fn quiet(_: Progress<'_>) {}

/// The PostgreSQL settings of `[store]`, if a database is configured: `env_url`
/// (`VWF_DATABASE_URL`) wins over `url`.
pub fn postgres_settings(store: &StoreConfig, env_url: Option<String>) -> Result<Option<PgSettings>, String> {
    let Some(url) = env_url.filter(|u| !u.trim().is_empty()).or_else(|| store.url.clone()) else { return Ok(None) };
    let mut settings = PgSettings::new(url.trim());
    if let Some(n) = store.pool_size {
        if !(2..=1000).contains(&n) {
            return Err(format!("[store] pool_size must be from 2 to 1000, got {n}"));
        }
        settings.pool_size = n;
    }
    if let Some(ms) = store.statement_timeout_ms {
        if !(100..=3_600_000).contains(&ms) {
            return Err(format!("[store] statement_timeout_ms must be from 100 to 3600000, got {ms}"));
        }
        settings.statement_timeout = std::time::Duration::from_millis(ms);
    }
    Ok(Some(settings))
}

/// Removes what killed writers left (see `vwf_store::tidy`) when a server or daemon starts, and
/// logs what it removed; `who` names the caller in those lines.
pub fn tidy_at_start(home: &Path, who: &str) {
    for finding in FileStore::new(home.to_path_buf()).tidy(true) {
        if let Some(fixed) = &finding.fixed {
            tracing::warn!("{who}: {}: {} — {fixed}", finding.path, finding.problem);
        }
    }
}
