//! vwf's integration tests, in one binary (as ripgrep's `tests/tests.rs`): a module per subject,
//! sharing `common`. The suite links one test binary instead of one per file (42), and the tests
//! of every module run side by side in one process, so none of them may change process-wide state
//! (the umask, the environment, signal handlers) that the others would see.

mod common;

mod agent;
mod api;
mod arrivals;
mod auth;
mod busy;
mod buttons;
mod check_it;
mod cli;
mod command;
mod compose;
mod concurrency;
mod contract;
mod crash;
mod crash_compose;
mod crash_retry;
mod crash_server;
mod daemon;
mod deliver;
mod egress;
mod events;
mod examples;
mod forms;
mod fuzz_tools;
mod gui_fixtures;
mod http;
mod idempotency;
mod import;
mod inputs;
mod install;
mod large_input;
mod layers;
mod live;
mod mcp;
mod metrics;
mod modes;
mod multi_instance;
mod nesting;
mod ops;
mod pg_outage;
mod pg_store;
mod progress;
mod rate_limits;
mod recovery;
mod release;
mod run_bytes;
mod run_limits;
mod runs;
mod schedules;
mod schema;
mod shell_injection;
mod stats;
mod store;
mod store_copy;
mod test_runs;
mod traces;
mod versions;
mod webhooks;
mod wheel;
