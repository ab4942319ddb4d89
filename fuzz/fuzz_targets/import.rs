//! The agent.json importer on any JSON: never panics, and keeps its documented invariants: every
//! design name is a valid, unique design name, and a design the validator rejects has its errors
//! in the notes.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use vwf_core::names::DesignName;
use vwf_core::{import, json, validate};

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = json::parse_slice(data) else { return };
    let report = import::import_agent_json(&doc);
    let mut seen = HashSet::new();
    for (name, design) in &report.designs {
        assert!(DesignName::parse(name).is_ok(), "imported design name {name:?} is not valid");
        assert!(seen.insert(name.clone()), "design name {name:?} is given twice");
        let checked = validate::validate(design);
        if !checked.ok {
            assert!(report.notes.iter().any(|n| n.starts_with(&format!("{name}: "))), "design {name:?} is invalid but no note says so");
        }
    }
});
