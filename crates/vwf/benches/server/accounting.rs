//! No lost run: what the server answered about the runs, against the run files on disk, the
//! store's own listing and the API's listing, once the load is over.
//!
//! Each count is checked against the number it must be; any other is a failure, and the benchmark
//! exits 1.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use vwf_store::Wait;

use serde_json::{Value, json};

use crate::API_LIST_MAX;
use crate::clients::short;

/// What the server answered about the runs, against what is on disk once the load is over.
pub(super) struct Accounting {
    /// Run ids answered by `POST …/run` with `status: done` (warm-up, one client, many clients).
    answered: Vec<String>,
    ids: HashSet<String>,
    /// `GET /runs?limit=min(answered, API_LIST_MAX)`: the ids, newest first.
    api_listed: Result<Vec<String>, String>,
    /// `GET /runs/{id}` that did not answer the run.
    open_missing: usize,
    disk: Result<Disk, String>,
}

struct Disk {
    /// `<run_id>.json` files in `workflow-runs`, and the answered ones among them that are `done`.
    files: usize,
    answered_done: usize,
    /// The store's own listing of every run (through the index, in this process), newest first.
    listed: Vec<String>,
    answered_listed: usize,
}

/// One line of the accounting table: a count and what it must be.
struct Check {
    what: String,
    count: Option<usize>,
    expected: usize,
    /// The word for a count below the expected one (above it is `EXTRA`).
    short: &'static str,
}

impl Check {
    fn new(what: impl Into<String>, count: Option<usize>, expected: usize, short: &'static str) -> Check {
        Check { what: what.into(), count, expected, short }
    }

    fn verdict(&self) -> &'static str {
        match self.count {
            None => "ERROR",
            Some(c) if c == self.expected => "ok",
            Some(c) if c < self.expected => self.short,
            Some(_) => "EXTRA",
        }
    }
}

pub(super) async fn account(client: &reqwest::Client, api: &str, answered: Vec<String>, open_missing: usize) -> Accounting {
    let limit = answered.len().clamp(1, API_LIST_MAX);
    let listed = async {
        let response = client.get(format!("{api}/runs?limit={limit}")).send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        match body["runs"].as_array() {
            Some(runs) if status == 200 => Ok(runs.iter().map(|r| r["run_id"].as_str().unwrap_or("").to_string()).collect()),
            _ => Err(format!("{status} {}", short(&body.to_string()))),
        }
    };
    let api_listed = listed.await;
    let ids = answered.iter().cloned().collect();
    Accounting { answered, ids, api_listed, open_missing, disk: Err("not read yet".into()) }
}

impl Accounting {
    /// Reads the server's run directory and the store's full listing (the server is still up,
    /// but nothing writes any more, and listing only reads).
    pub(super) fn read_disk(&mut self, home: &Path) {
        self.disk = self.disk_of(home);
    }

    fn disk_of(&self, home: &Path) -> Result<Disk, String> {
        let dir = home.join("workflow-runs");
        let entries = fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        let (mut files, mut answered_done) = (0, 0);
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json").filter(|_| !name.starts_with('.')) else { continue };
            files += 1;
            let bytes = fs::read(entry.path()).map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
            let done = serde_json::from_slice::<Value>(&bytes).is_ok_and(|v| v["status"] == json!("done"));
            if done && self.ids.contains(id) {
                answered_done += 1;
            }
        }
        let store = vwf::store::FileStore::new(home.to_path_buf());
        let entries = vwf::store::Store::list_runs(&store, usize::MAX).wait().map_err(|e| format!("the store's listing: {e}"))?;
        let answered_listed = entries.iter().filter(|e| e.run.is_ok() && self.ids.contains(e.id.as_str())).count();
        Ok(Disk { files, answered_done, listed: entries.into_iter().map(|e| e.id.to_string()).collect(), answered_listed })
    }

    fn checks(&self) -> Vec<Check> {
        let n = self.answered.len();
        let disk = self.disk.as_ref().ok();
        let limit = n.clamp(1, API_LIST_MAX);
        let api = self.api_listed.as_ref().ok();
        // With nothing written since, the API's listing is the store's newest `limit`, in order.
        let api_matches = match (api, disk) {
            (Some(listed), Some(d)) => Some(listed.iter().zip(&d.listed).take_while(|(a, b)| a == b).count()),
            _ => None,
        };
        vec![
            Check::new("POSTs answered status done", Some(n), n, "LOST"),
            Check::new("distinct run ids among them", Some(self.ids.len()), n, "REUSED"),
            Check::new("answered runs on disk, done", disk.map(|d| d.answered_done), n, "LOST"),
            Check::new("run files on disk, in all", disk.map(|d| d.files), n, "LOST"),
            Check::new("answered runs in the store listing (index)", disk.map(|d| d.answered_listed), n, "LOST"),
            Check::new("store listing, in all", disk.map(|d| d.listed.len()), n, "LOST"),
            Check::new(format!("GET /runs?limit={limit}"), api.map(Vec::len), limit.min(n), "LOST"),
            Check::new("  the same ids, in order, as the store's", api_matches, api.map_or(0, Vec::len), "DIFFERS"),
            Check::new("GET /runs/{id} answered the run", Some(n - self.open_missing.min(n)), n, "LOST"),
        ]
    }

    pub(super) fn failures(&self) -> Vec<String> {
        let mut f: Vec<String> = self
            .checks()
            .iter()
            .filter(|c| c.verdict() != "ok")
            .map(|c| match c.count {
                Some(count) => format!("{}: {}, {count} where {} were expected", c.verdict(), c.what.trim(), c.expected),
                None => format!("ERROR: {} could not be counted", c.what.trim()),
            })
            .collect();
        if let Err(e) = &self.disk {
            f.push(format!("the disk check failed: {e}"));
        }
        if let Err(e) = &self.api_listed {
            f.push(format!("GET /runs for the accounting failed: {e}"));
        }
        f
    }
}

pub(super) fn print_accounting(a: &Accounting) {
    let checks = a.checks();
    let width = checks.iter().map(|c| c.what.chars().count()).max().unwrap_or(0).max("runs (no lost run)".len());
    println!("| {:<width$} | count | expected | check   |", "runs (no lost run)");
    println!("|{}|------:|---------:|---------|", "-".repeat(width + 2));
    for c in &checks {
        let count = c.count.map_or_else(|| "?".to_string(), |n| n.to_string());
        println!("| {:<width$} | {count:>5} | {:>8} | {:<7} |", c.what, c.expected, c.verdict());
    }
}
