//! The command driver (not built yet).

use vwf_core::run::{Outcome, Work};

use crate::config::Config;

pub fn perform(_work: &Work, _config: &Config) -> Outcome {
    Outcome::Failed { error: "command steps are not supported yet in this version".into() }
}
