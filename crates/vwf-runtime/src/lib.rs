//! The runtime: the one loop that drives the pure engine (`vwf-core`) with a store (`vwf-store`),
//! the drivers (`vwf-exec`) and a clock, and what keeps runs going without a caller: schedules,
//! the daemon's triggers, the run slots of a server and its metrics.
//!
//! Nothing here knows HTTP: every operation answers [`error::RunError`], whose cases are what
//! callers branch on; the API layer (`vwf-api`) maps them to statuses once.

pub mod app;
pub mod clock;
pub mod daemon;
pub mod error;
pub mod flowdoc;
pub mod gate;
pub mod runner;
pub mod schedules;
pub mod telemetry;
pub mod traces;
pub mod versions;

pub use error::RunError;
