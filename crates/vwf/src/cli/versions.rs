//! `vwf versions`, `vwf diff` and `vwf restore`: a design's recorded versions.

use std::io::Write;

use serde_json::Value;

use super::commands::design_name;
use super::pretty;
use vwf_api::failure::Failure;
use vwf_api::service::{self, ContractBody, Service};

pub(super) fn list(service: &Service<'_>, json: bool, name: &str) -> Result<u8, Failure> {
    let design = design_name(name)?;
    let versions = service.versions(&design)?;
    if json {
        say!("{}", pretty(&service::versions_body(&design, &versions)));
        return Ok(0);
    }
    if versions.is_empty() {
        say!("{name} has no recorded versions yet (its next save records one).");
    }
    for v in &versions {
        let line = v.summary();
        let short = v.hash.strip_prefix("sha256:").unwrap_or(&v.hash).get(..12).unwrap_or_default();
        say!("{:>4}  {short}  {}  {} nodes, {} edges", v.version, line["saved_at"].as_str().unwrap_or(""), line["nodes"], line["edges"]);
    }
    Ok(0)
}

pub(super) fn diff(service: &Service<'_>, json: bool, name: &str, a: u64, b: u64) -> Result<u8, Failure> {
    let diff = service.diff(&design_name(name)?, Some(a), Some(b))?;
    if json {
        say!("{}", pretty(&diff.body()));
        return Ok(0);
    }
    let d = &diff.diff;
    if d.is_empty() {
        say!("Versions {a} and {b} of {name} have the same nodes and edges.");
        return Ok(0);
    }
    for (what, items) in [("node", &d.nodes), ("edge", &d.edges)] {
        for id in &items.added {
            say!("+ {what} {id}");
        }
        for id in &items.removed {
            say!("- {what} {id}");
        }
        for c in &items.changed {
            say!("~ {what} {}: {}", c.id, c.fields.join(", "));
        }
    }
    if !d.design.is_empty() {
        say!("~ design: {}", d.design.join(", "));
    }
    Ok(0)
}

pub(super) fn restore(service: &Service<'_>, json: bool, name: &str, version: u64) -> Result<u8, Failure> {
    let restored = service.restore(&design_name(name)?, version)?;
    if json {
        say!("{}", pretty(&restored.body()));
    } else {
        let now = restored.version.map_or_else(|| Value::Null.to_string(), |v| v.to_string());
        say!("Restored version {version} of {name}: it is now version {now}.");
    }
    Ok(0)
}
