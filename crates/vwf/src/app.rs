//! What every surface shares: the home directory, its store, the drivers made from its config,
//! and the clock. Built once per process (or per server) and handed to the runner and the tools.

use std::path::{Path, PathBuf};

use crate::clock::{self, Clock};
use crate::config::Config;
use crate::exec::Drivers;
use crate::failure::Failure;
use crate::runner::{Progress, Runner};
use crate::store::{FileStore, JobStore, PgStore, Store};
use crate::telemetry::Metrics;

pub struct App {
    pub home: PathBuf,
    pub store: Box<dyn Store>,
    /// Schedule jobs and trigger state, kept by the same backend as `store`.
    pub jobs: Box<dyn JobStore>,
    pub drivers: Drivers,
    pub clock: Box<dyn Clock>,
    /// Change notices of the store (see `crate::changes`), once [`App::follow_changes`] is called.
    pub changes: crate::changes::Changes,
    /// Set by `vwf serve`, which exposes them; every runner of this app updates them.
    pub metrics: Option<Metrics>,
    /// The run slots of `vwf serve` (`[server] runs_in_flight`): its requests and its daemon take
    /// one before they start or drive a run. `None` elsewhere: nothing else is bounded.
    pub slots: Option<std::sync::Arc<crate::server::Gate>>,
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
    pub fn open(home: PathBuf) -> Result<App, Failure> {
        App::open_with(home, std::env::var("VWF_DATABASE_URL").ok())
    }

    /// [`App::open`] with `database_url` standing for `VWF_DATABASE_URL` (not read): one process
    /// can open apps on different databases (the tests do).
    pub fn open_with(home: PathBuf, database_url: Option<String>) -> Result<App, Failure> {
        let config = Config::load(&home).map_err(Failure::Internal)?;
        let clock = clock::from_env().map_err(Failure::BadRequest)?;
        let database = config.store.postgres(database_url).map_err(Failure::BadRequest)?;
        let (store, jobs): (Box<dyn Store>, Box<dyn JobStore>) = match database {
            Some(settings) => {
                let pg = PgStore::connect(&settings).map_err(|e| Failure::Unavailable(e.to_string()))?;
                (Box::new(pg.clone()), Box::new(pg))
            }
            None => {
                let files = FileStore::new(home.clone());
                (Box::new(files.clone()), Box::new(files))
            }
        };
        Ok(App { store, jobs, home, drivers: Drivers::new(config), clock, metrics: None, changes: Default::default(), slots: None })
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
        }
    }
}

/// An observer that ignores progress (tools, chat).
pub fn quiet(_: Progress<'_>) {}

/// Reads a command-line argument given as text, `@file` or `-` (standard input).
pub fn read_arg(arg: &str) -> Result<String, Failure> {
    use std::io::Read;
    if arg == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| Failure::BadRequest(format!("cannot read standard input: {e}")))?;
        Ok(s)
    } else if let Some(path) = arg.strip_prefix('@') {
        std::fs::read_to_string(path).map_err(|e| Failure::BadRequest(format!("cannot read {path}: {e}")))
    } else {
        Ok(arg.to_string())
    }
}

/// Parses `text` as JSON; the error names `what` (e.g. `--input is not valid JSON: …`).
pub fn parse_json(text: &str, what: &str) -> Result<serde_json::Value, Failure> {
    vwf_core::json::parse(text).map_err(|e| Failure::BadRequest(e.about(&format!("{what} is"))))
}

/// A JSON command-line argument given as text, `@file` or `-`.
pub fn json_arg(arg: &str, what: &str) -> Result<serde_json::Value, Failure> {
    parse_json(&read_arg(arg)?, what)
}
