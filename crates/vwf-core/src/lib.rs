//! Pure core of visual-workflow. No I/O, no clock, no randomness: callers pass `now` and ids.

pub mod design;
pub mod events;
pub mod expr;
pub mod import;
pub mod json;
pub mod limits;
pub mod listing;
pub mod names;
pub mod pins;
pub mod plan;
pub mod recovery;
pub mod refs;
pub mod run;
pub mod schedule;
pub mod schema;
pub mod secrets;
pub mod shell;
pub mod spec;
pub mod template;
pub mod time;
pub mod transition;
pub mod trigger;
pub mod validate;
pub mod versions;
pub mod view;
pub mod vocab;
