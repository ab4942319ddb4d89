//! The core's integration tests, in one binary (as ripgrep's `tests/tests.rs`): a module per
//! subject, sharing `common`. Every test drives the public engine API and saves and reads the run
//! back after each engine call.

mod common;
mod compose;
mod engine;
mod gates;
mod import;
mod loops;
mod pins;
mod recovery;
mod validate;
