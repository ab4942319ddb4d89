//! Phase 1, the baseline: the design run in this process through the function the server's
//! handler calls, and the listing through `Runner::list` and the store's own `list_runs` under it,
//! each timed sequentially on the same disk. The HTTP figures are compared with these.
//!
//! A baseline run that does not finish `done`, or a listing short of its runs, is an error, not a
//! figure.

use std::path::Path;
use std::time::Instant;
use vwf_store::Wait;

use serde_json::{Value, json};

use crate::figures::Stats;
use crate::{DESIGN, LIST_LIMIT, WARMUP, input};

pub(super) struct Baseline {
    pub(super) times: Stats,
    pub(super) steps: usize,
    pub(super) skipped: usize,
    /// `Runner::list(LIST_LIMIT)` and `FileStore::list_runs(LIST_LIMIT)` over the baseline's runs.
    pub(super) list: Stats,
    pub(super) store_list: Stats,
}

pub(super) fn baseline(home: &Path, graph: &Value, runs: usize) -> Result<Baseline, String> {
    let app = vwf::app::App::open(home.to_path_buf()).map_err(|e| format!("cannot open {}: {e:?}", home.display()))?;
    let saved = vwf::tools::call(&app, "workflow_design_save", &json!({"name": DESIGN, "graph": graph}));
    if saved.status != 200 || saved.body["ok"] != json!(true) {
        return Err(format!("the bench design does not save: {}", saved.body));
    }
    let mut times = Vec::with_capacity(runs);
    let (mut steps, mut skipped) = (0, 0);
    for i in 0..WARMUP + runs {
        let args = json!({"name": DESIGN, "input": input(i)});
        let t = Instant::now();
        let reply = vwf::tools::call(&app, "workflow_design_run", &args);
        let took = t.elapsed();
        if reply.status != 200 || reply.body["status"] != json!("done") {
            return Err(format!("a baseline run did not finish: HTTP-equivalent status {}, {}", reply.status, reply.body));
        }
        steps = reply.body["steps"].as_array().map_or(0, Vec::len);
        skipped = reply.body["skipped"].as_array().map_or(0, Vec::len);
        if i >= WARMUP {
            times.push(took);
        }
    }
    let runner = app.runner(&vwf::app::quiet, false);
    let list = timed(WARMUP, runs, || match runner.list(LIST_LIMIT) {
        Ok(entries) if entries.len() == LIST_LIMIT && entries.iter().all(|e| e.run.is_ok()) => Ok(()),
        Ok(entries) => Err(format!("Runner::list({LIST_LIMIT}) gave {} entries", entries.len())),
        Err(e) => Err(format!("Runner::list({LIST_LIMIT}): {e:?}")),
    })?;
    let store_list = timed(WARMUP, runs, || match app.store.list_runs(LIST_LIMIT).wait() {
        Ok(entries) if entries.len() == LIST_LIMIT => Ok(()),
        Ok(entries) => Err(format!("list_runs({LIST_LIMIT}) gave {} entries", entries.len())),
        Err(e) => Err(format!("list_runs({LIST_LIMIT}): {e}")),
    })?;
    Ok(Baseline { times: Stats::of(times), steps: steps + skipped, skipped, list, store_list })
}

/// `warmup` untimed calls, then `n` timed ones.
fn timed(warmup: usize, n: usize, mut f: impl FnMut() -> Result<(), String>) -> Result<Stats, String> {
    for _ in 0..warmup {
        f()?;
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    Ok(Stats::of(times))
}
