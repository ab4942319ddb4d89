//! The `vwf` binary's library: the command line (definitions, arguments, what each command prints),
//! `vwf doctor` and the log setup. `main.rs` is a thin start over it.
//!
//! The layers below are crates of their own (ARCHITECTURE.md, "Crates"); they are re-exported
//! under their old module names so the binary's tests and benchmarks reach the whole stack
//! through one name.

pub mod cli;
pub mod doctor;
pub mod logs;

pub use vwf_api::{assets, failure, mcp, render, server, service, signals, slash, tools};
/// The drivers.
pub use vwf_exec as exec;
pub use vwf_exec::config;
/// The runtime's error.
pub use vwf_runtime::error as run_error;
pub use vwf_runtime::{app, clock, daemon, gate, runner, schedules, telemetry, versions};
/// The store traits and the two stores.
pub use vwf_store as store;
pub use vwf_store::changes;
