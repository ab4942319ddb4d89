//! The http driver (not built yet).

use vwf_core::run::{Outcome, Work};

pub fn perform(_work: &Work) -> Outcome {
    Outcome::Failed { error: "http steps are not supported yet in this version".into() }
}
