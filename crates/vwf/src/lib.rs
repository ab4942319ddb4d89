//! The `vwf` binary's library: stores, drivers, the runner, the tools, the chat command and
//! the human renderings. `main.rs` is a thin CLI over it; benchmarks and tests use it directly.

pub mod app;
pub mod assets;
pub mod changes;
pub mod cli;
pub mod clock;
pub mod config;
pub mod daemon;
pub mod doctor;
pub mod exec;
pub mod failure;
pub mod logs;
pub mod mcp;
pub mod render;
pub mod run_error;
pub mod runner;
pub mod schedules;
pub mod server;
pub mod service;
pub mod signals;
pub mod slash;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod versions;
