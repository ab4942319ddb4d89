//! Structured logs for the long-running server, through `tracing`.
//!
//! Why: an operator running `vwf serve` under a service manager needs one line per request and
//! per run transition (see `crate::telemetry`) that a log pipeline can parse. Invariants:
//! - Logs go to standard error only; standard output stays the server's address line and nothing
//!   else, so whoever started the server can read it.
//! - Levels come from `RUST_LOG` (default `info`); `VWF_LOG_FORMAT=json` writes one JSON object a
//!   line, anything else the human text format.
//! - The long-running commands (`serve`, `daemon`, `mcp`) always install the subscriber. Other
//!   commands install it when `RUST_LOG` or `VWF_LOG_FORMAT` is set; otherwise only warnings and
//!   errors are printed, as their bare message (`warning: …`), so a command's standard error reads
//!   as it always has. Every part of vwf logs through `tracing`; the CLI's own human output (its
//!   errors, reports and hints) is printed, not logged.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

pub const FORMAT_VAR: &str = "VWF_LOG_FORMAT";

/// Installs the global subscriber; a second call (or one after another subscriber) does nothing.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let json = std::env::var(FORMAT_VAR).is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let _ = if json { builder.json().flatten_event(true).try_init() } else { builder.try_init() };
}

/// Installs the subscriber for a command other than `serve` when the environment asks for logs
/// (`RUST_LOG` or `VWF_LOG_FORMAT` set): then `vwf run` logs its run's transitions too.
pub fn init_if_asked() {
    if ["RUST_LOG", FORMAT_VAR].iter().any(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty())) {
        init();
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .without_time()
        .with_level(false)
        .with_target(false)
        .try_init();
}
