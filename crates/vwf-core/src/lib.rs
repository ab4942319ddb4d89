//! Pure core of visual-workflow. No I/O, no clock, no randomness: callers pass `now` and ids.

pub mod limits;
pub mod json;
pub mod names;
pub mod refs;
pub mod view;
pub mod expr;
pub mod template;
pub mod shell;
pub mod schedule;
pub mod trigger;
pub mod design;
pub mod spec;
pub mod validate;
pub mod time;
pub mod plan;
pub mod run;
pub mod transition;
pub mod listing;
pub mod events;
pub mod import;
