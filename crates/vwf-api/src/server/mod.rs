//! `vwf serve`: the HTTP API of SPEC §13, the dashboard and the canvas, over one `App`.
//!
//! The server is a thin caller like every other surface: each route parses its request, checks
//! names before any path is built, then calls the same tool functions and runner the CLI uses on
//! a blocking thread (`spawn_blocking`; a run's steps block), or awaits the reads that touch only
//! the store on the runtime, and answers the JSON they return with its status.
//!
//! Invariants:
//! - Nothing is written before the security settings are accepted (§17): a non-loopback bind
//!   without a token, or a token variable that is not set, refuses to start.
//! - The API always has a token (see `security`): without `[server] token_env` the server makes
//!   one at start, writes it to `<home>/workflow-serve-<port>.token` (0600) and prints the login
//!   link on standard error, before its first line of standard output says it is ready.
//! - Every response with an error status has a `{ok:false, error}` JSON body, including the
//!   router's own answers (unknown route, wrong method, unreadable path or body).
//! - The route table (`api::ROUTES`) is the only list of routes: the router and the OpenAPI
//!   document are both built from it.

mod api;
mod extract;
mod handlers;
mod live;

pub(crate) use live::{STAMP_DIGITS, STAMP_PATTERN};
mod openapi;
mod security;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use vwf_core::limits;

use crate::failure::Failure;
use vwf_runtime::app::App;

pub use api::API_PREFIX;
pub use vwf_runtime::gate::Gate;

/// Where `vwf serve` listens without `--bind` or `[server] bind`.
pub const DEFAULT_BIND: &str = "127.0.0.1:8765";

/// How many of the newest runs are settled at start (runs left `running` by a dead process are
/// marked interrupted, passed deadlines enforced); older ones are settled when opened.
const STARTUP_SWEEP: usize = 1000;

/// The `[server]` table of the config (SPEC §16).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub bind: Option<String>,
    pub token_env: Option<String>,
    pub allowed_hosts: Vec<String>,
    /// Origins allowed to frame the dashboard and the canvas (`[server] frame_ancestors`).
    pub frame_ancestors: Vec<String>,
    /// The bound on run work in flight (see `gate`).
    pub runs: vwf_runtime::gate::Bound,
}

impl Settings {
    /// Reads `[server]`; a key of the wrong type is an error naming it.
    pub fn from_table(table: &toml::Table) -> Result<Settings, Failure> {
        let text = |key: &str| -> Result<Option<String>, Failure> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) if s.trim().is_empty() => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.trim().to_string())),
                Some(_) => Err(Failure::BadRequest(format!("[server] {key} must be a string"))),
            }
        };
        let allowed_hosts = match table.get("allowed_hosts") {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(|s| s.trim().to_ascii_lowercase()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| Failure::BadRequest("[server] allowed_hosts must be a list of host names".into()))?,
            Some(_) => return Err(Failure::BadRequest("[server] allowed_hosts must be a list of host names".into())),
        };
        let frame_ancestors = match table.get("frame_ancestors") {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| match v.as_str() {
                    Some(s) => security::parse_origin(s).map_err(|e| Failure::BadRequest(format!("[server] frame_ancestors: {e}"))),
                    None => Err(Failure::BadRequest("[server] frame_ancestors must be a list of origins".into())),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(Failure::BadRequest("[server] frame_ancestors must be a list of origins".into())),
        };
        let number = |key: &str, (low, high): (u64, u64), default: u64| -> Result<u64, Failure> {
            match table.get(key) {
                None => Ok(default),
                Some(toml::Value::Integer(n)) if u64::try_from(*n).is_ok_and(|n| (low..=high).contains(&n)) => Ok(*n as u64),
                Some(_) => Err(Failure::BadRequest(format!("[server] {key} must be a whole number from {low} to {high}"))),
            }
        };
        let default = vwf_runtime::gate::Bound::default();
        let runs = vwf_runtime::gate::Bound {
            slots: number("runs_in_flight", limits::RUNS_IN_FLIGHT, default.slots as u64)? as usize,
            queue: number("run_queue", limits::RUN_QUEUE, default.queue as u64)? as usize,
            wait: std::time::Duration::from_millis(number(
                "run_queue_wait_ms",
                limits::RUN_QUEUE_WAIT_MS,
                default.wait.as_millis() as u64,
            )?),
        };
        if let Some(url) = text("public_url")?
            && vwf_runtime::runner::public_url(table).is_none()
        {
            return Err(Failure::BadRequest(format!("[server] public_url must be an http(s) URL, got {url:?}")));
        }
        Ok(Settings { bind: text("bind")?, token_env: text("token_env")?, allowed_hosts, frame_ancestors, runs })
    }
}

/// How often a server standing by tries to claim the home's triggers.
const STANDBY_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// A server that is bound and ready to answer; `run` serves until SIGINT or SIGTERM.
pub struct Server {
    app: Arc<App>,
    listener: TcpListener,
    addr: SocketAddr,
    guard: security::Guard,
    /// The file holding a token made at start, and that token; removed when the server stops.
    token_file: Option<(std::path::PathBuf, String)>,
    gate: Arc<Gate>,
    runtime: &'static tokio::runtime::Runtime,
    stop_signals: crate::signals::StopSignals,
    /// Whether the store sends change notices (long-poll reads wait for them, else read again on
    /// a timer).
    notices: bool,
}

/// Checks the security settings, binds the listener and settles stale runs. Refuses (as a bad
/// request, before anything is written) a non-loopback bind without a token.
pub fn prepare(mut app: App, bind_flag: Option<&str>) -> Result<Server, Failure> {
    let settings = Settings::from_table(&app.drivers.config.server)?;
    let bind = bind_flag
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(String::from)
        .or(settings.bind.clone())
        .unwrap_or_else(|| DEFAULT_BIND.into());
    let addr = resolve(&bind)?;
    let configured = match &settings.token_env {
        None => None,
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Some(security::Token { value: v.trim().to_string(), configured: Some(var.clone()) }),
            _ => {
                return Err(Failure::BadRequest(format!(
                    "[server] token_env names {var}, but {var} is not set; export it (the API token) or remove token_env"
                )));
            }
        },
    };
    if !addr.ip().is_loopback() && configured.is_none() {
        return Err(Failure::BadRequest(format!(
            "refusing to listen on {addr}: it is reachable from other machines and no API token is set. \
             Set [server] token_env = \"VWF_TOKEN\" in {} and export VWF_TOKEN, or bind 127.0.0.1",
            vwf_exec::config::Config::path(&app.home).display()
        )));
    }
    let listener = TcpListener::bind(addr).map_err(|e| Failure::Internal(format!("cannot listen on {addr}: {e}")))?;
    let addr = listener.local_addr().map_err(|e| Failure::Internal(format!("cannot read the bound address: {e}")))?;
    listener.set_nonblocking(true).map_err(|e| Failure::Internal(format!("cannot set up the listener: {e}")))?;
    let (token, token_file) = match configured {
        Some(token) => (token, None),
        None => {
            let token = security::Token::generate().map_err(|e| Failure::Internal(format!("cannot make an API token: {e}")))?;
            let path = security::token_file(&app.home, addr.port());
            security::write_token_file(&path, &token.value)
                .map_err(|e| Failure::Internal(format!("cannot write the API token to {}: {e}", path.display())))?;
            let file = (path, token.value.clone());
            (token, Some(file))
        }
    };
    let guard = security::Guard::new(&token, settings.allowed_hosts, addr, security::Framing::new(settings.frame_ancestors));
    let runtime = crate::runtime()?;
    // Installed now, so a stop asked for as soon as the server says it is ready is a clean stop.
    let stop_signals = {
        let _entered = runtime.enter();
        crate::signals::StopSignals::install().map_err(|e| Failure::Internal(format!("cannot listen for SIGINT/SIGTERM: {e}")))?
    };
    // Pages following a run and the daemon's timers wake on the store's change notices (the
    // database store sends every instance's; with files they read again every second).
    let notices = app.follow_changes();
    // The server exposes its metrics (`GET /metrics`): every run this app drives updates them.
    app.metrics.get_or_insert_with(vwf_runtime::telemetry::Metrics::new);
    // Its requests and its daemon take run slots from this one bound.
    let gate = Arc::new(Gate::new(settings.runs, app.metrics.as_ref()));
    app.slots = Some(gate.clone());
    let server = Server { app: Arc::new(app), listener, addr, guard, token_file, gate, runtime, stop_signals, notices };
    hand_off_queued_runs(&server);
    server.sweep();
    server.say_how_to_log_in(&token);
    Ok(server)
}

/// A run a concurrency queue lets go is driven on a blocking thread of its own, on one of the
/// server's run slots (waiting for one), not by the request that freed its slot: that request's
/// caller is answered when its own run ends.
fn hand_off_queued_runs(server: &Server) {
    let (app, handle, gate) = (Arc::downgrade(&server.app), server.runtime.handle().clone(), server.gate.clone());
    let _ = server.app.handoff.set(Box::new(move |id: vwf_core::names::RunId| {
        let (app, gate) = (app.clone(), gate.clone());
        handle.spawn_blocking(move || {
            let _slot = gate.wait();
            let Some(app) = app.upgrade() else { return };
            if let Err(e) = app.runner(&vwf_runtime::app::quiet, false).start_queued(&id) {
                tracing::warn!(run = %id, error = %e, "the queued run did not start");
            }
        });
    }));
}

/// `ADDR:PORT` (an IP or a host name) to one socket address.
fn resolve(bind: &str) -> Result<SocketAddr, Failure> {
    if let Ok(addr) = bind.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bad = |why: String| Failure::BadRequest(format!("bad bind address {bind:?}: {why} (use ADDR:PORT, e.g. {DEFAULT_BIND})"));
    let mut addrs = bind.to_socket_addrs().map_err(|e| bad(e.to_string()))?;
    addrs.next().ok_or_else(|| bad("it resolves to no address".into()))
}

impl Server {
    /// The address actually bound (the chosen port when asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The dashboard's URL. Bound to every interface, the URL names loopback: it is the one a
    /// browser on this machine opens (and `0.0.0.0` is no host to ask for).
    pub fn url(&self) -> String {
        format!("http://{}/", self.reachable())
    }

    /// The API's base URL.
    pub fn api_url(&self) -> String {
        format!("http://{}{API_PREFIX}", self.reachable())
    }

    fn reachable(&self) -> SocketAddr {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(if addr.is_ipv4() { Ipv4Addr::LOCALHOST.into() } else { Ipv6Addr::LOCALHOST.into() });
        }
        addr
    }

    /// Says in the log (standard error) how a browser logs in, and where API clients find a
    /// token made at start. A configured token is never printed: the link names its variable.
    fn say_how_to_log_in(&self, token: &security::Token) {
        let login = format!("http://{}{}", self.reachable(), security::LOGIN_PATH);
        match (&token.configured, &self.token_file) {
            (Some(var), _) => tracing::info!("log in from a browser at {login}?token=<the value of {var}>"),
            (None, Some((file, _))) => {
                tracing::info!("log in from a browser at {login}?token={}", token.value);
                tracing::info!("API clients send Authorization: Bearer <the token in {}>", file.display());
            }
            (None, None) => {}
        }
    }

    /// Removes what killed writers left (temp and lock files, stale index lines), then marks runs
    /// left `running` by a dead process as interrupted and enforces passed deadlines (the
    /// runner's listing does both).
    fn sweep(&self) {
        vwf_runtime::app::tidy_at_start(&self.app.home, "vwf serve");
        if let Err(e) = self.app.runner(&vwf_runtime::app::quiet, false).list(STARTUP_SWEEP) {
            tracing::warn!(error = %e, "cannot settle recent runs");
        }
    }

    /// Serves until SIGINT or SIGTERM, with the daemon (timers, deadlines, triggers) on a thread
    /// beside it; in-flight requests finish before it returns.
    pub fn run(self) -> Result<(), Failure> {
        raise_open_file_limit();
        let Server { app, listener, guard, token_file, gate, runtime, stop_signals, notices, .. } = self;
        let stop = Arc::new(AtomicBool::new(false));
        let keeps_timers = Arc::new(AtomicBool::new(false));
        let daemon = start_daemon(&app, &stop, &keeps_timers);
        crate::buttons::start_telegram_poller(&app, keeps_timers, stop.clone());
        let (live, stop_waiting) = live::Live::new(app.clone(), notices);
        let router = api::router(app, Arc::new(guard), gate, live);
        let served = runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            let stopping = async move {
                stop_signals.recv().await;
                tracing::info!("stopping (finishing requests in flight)");
                // Long-poll reads answer now rather than hold the stop for their wait.
                stop_waiting.now();
            };
            axum::serve(listener, router).with_graceful_shutdown(stopping).await
        });
        stop.store(true, Ordering::SeqCst);
        if let Some(handle) = daemon {
            let _ = handle.join();
        }
        if let Some((path, token)) = token_file {
            // The token dies with the server (a file left by a killed one holds a dead token);
            // a server started since on this port may have written its own there already.
            if std::fs::read_to_string(&path).is_ok_and(|held| held.trim() == token) {
                let _ = std::fs::remove_file(path);
            }
        }
        served.map_err(|e| Failure::Internal(format!("the server stopped: {e}")))
    }
}

/// Runs the daemon on its own thread. While another daemon holds the home's triggers (a `vwf
/// daemon`, or another instance on the same database), this server stands by for the timers and
/// claims them as soon as that one stops or dies, so the timers never stop with one instance; its
/// folder and watch triggers run meanwhile where `[daemon] local_triggers` allows.
fn start_daemon(app: &Arc<App>, stop: &Arc<AtomicBool>, keeps_timers: &Arc<AtomicBool>) -> Option<JoinHandle<()>> {
    let (app, stop, keeps_timers) = (app.clone(), stop.clone(), keeps_timers.clone());
    let spawned = std::thread::Builder::new().name("vwf-daemon".into()).spawn(move || {
        let mut claim = None;
        let mut standing_by = false;
        let mut next_try = std::time::Instant::now();
        let mut daemon = vwf_runtime::daemon::Daemon::new(&app);
        daemon.set_timers(false);
        daemon.run_with(&stop, |daemon| {
            if claim.is_some() || std::time::Instant::now() < next_try {
                return;
            }
            match vwf_runtime::daemon::claim_home(&app) {
                Ok(held) => {
                    if standing_by {
                        tracing::info!("the other daemon stopped; this server keeps the timers now");
                    }
                    claim = Some(held);
                    daemon.set_timers(true);
                    // The server that keeps the timers also polls Telegram for gate answers.
                    keeps_timers.store(true, Ordering::SeqCst);
                }
                Err(e) => {
                    if !standing_by {
                        tracing::info!("{e}; that daemon keeps the timers, and this server standing by takes over if it stops");
                        standing_by = true;
                    }
                    next_try = std::time::Instant::now() + STANDBY_RETRY;
                }
            }
        });
    });
    match spawned {
        Ok(handle) => Some(handle),
        Err(e) => {
            tracing::error!(error = %e, "cannot start the daemon thread; timers and triggers are off");
            None
        }
    }
}

/// Lifts the soft limit on open files to the hard limit: every client connection and every run
/// file written under load holds a descriptor, and the usual soft limit of 1024 is low for a server.
fn raise_open_file_limit() {
    // SAFETY: getrlimit/setrlimit only read and write the plain struct passed to them.
    unsafe {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max.min(1 << 20);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_and_reject_wrong_types() {
        let t: toml::Table = toml::from_str("bind = \"0.0.0.0:9000\"\ntoken_env = \"T\"\nallowed_hosts = [\"Vwf.Example.org\"]").unwrap();
        let s = Settings::from_table(&t).unwrap();
        assert_eq!(s.bind.as_deref(), Some("0.0.0.0:9000"));
        assert_eq!(s.token_env.as_deref(), Some("T"));
        assert_eq!(s.allowed_hosts, vec!["vwf.example.org".to_string()]);
        let t: toml::Table = toml::from_str("frame_ancestors = [\"http://127.0.0.1:9119/\", \"https://H.example\"]").unwrap();
        assert_eq!(Settings::from_table(&t).unwrap().frame_ancestors, ["http://127.0.0.1:9119", "https://h.example"]);
        for bad in
            ["frame_ancestors = \"http://h\"", "frame_ancestors = [1]", "frame_ancestors = [\"*\"]", "frame_ancestors = [\"http://h/x\"]"]
        {
            let t: toml::Table = toml::from_str(bad).unwrap();
            assert!(Settings::from_table(&t).is_err(), "{bad}");
        }
        let t: toml::Table = toml::from_str("public_url = \"https://vwf.example.org/\"").unwrap();
        assert!(Settings::from_table(&t).is_ok());
        for bad in ["public_url = \"vwf.example.org\"", "public_url = \"ftp://x\"", "public_url = 1"] {
            let t: toml::Table = toml::from_str(bad).unwrap();
            assert!(Settings::from_table(&t).is_err(), "{bad}");
        }
        let t: toml::Table = toml::from_str("allowed_hosts = \"x\"").unwrap();
        assert!(Settings::from_table(&t).is_err());
        let t: toml::Table = toml::from_str("bind = 8765").unwrap();
        assert!(Settings::from_table(&t).is_err());
        let t: toml::Table = toml::from_str("runs_in_flight = 3\nrun_queue = 0\nrun_queue_wait_ms = 250").unwrap();
        let runs = Settings::from_table(&t).unwrap().runs;
        assert_eq!((runs.slots, runs.queue, runs.wait), (3, 0, std::time::Duration::from_millis(250)));
        for bad in ["runs_in_flight = 0", "runs_in_flight = -1", "runs_in_flight = \"8\"", "run_queue_wait_ms = 60001", "run_queue = 1.5"] {
            let t: toml::Table = toml::from_str(bad).unwrap();
            assert!(Settings::from_table(&t).is_err(), "{bad}");
        }
        let runs = Settings::from_table(&toml::Table::new()).unwrap().runs;
        assert!(runs.slots >= limits::RUNS_IN_FLIGHT_PER_CORE as usize, "{runs:?}");
        assert_eq!(runs.queue, limits::RUN_QUEUE_DEFAULT as usize);
    }

    #[test]
    fn bind_addresses_resolve() {
        assert!(resolve("127.0.0.1:0").unwrap().ip().is_loopback());
        assert!(resolve("[::1]:0").unwrap().ip().is_loopback());
        assert!(resolve("localhost:0").unwrap().ip().is_loopback());
        assert!(resolve("nonsense").is_err());
    }
}
