//! The run listing every surface shows: pages newest first, filtered, each entry settled as
//! reading it alone would settle it, an unreadable entry listed with its error.

use serde::Deserialize;
use serde_json::Value;
use vwf_core::limits;
use vwf_core::listing::RunFilter;
use vwf_core::names::RunId;
use vwf_core::run::settle::Summary;
use vwf_store::Wait;
use vwf_store::{RunEntry, StoreError};

use super::{Runner, parse_run};
use crate::error::RunError;

/// Run ids asked of the store at a time by a filtered listing.
const LIST_CHUNK: usize = 200;

/// One page of the run listing (see [`Runner::list_page`]).
#[derive(Debug, Default)]
pub struct RunPage {
    /// Run results, or `{ok:false, run_id, error}` for entries that cannot be read.
    pub runs: Vec<Value>,
    /// The cursor of the next page (`before`), when older runs may match.
    pub next: Option<String>,
}

/// A listed entry as every surface shows it: the run result, or `{ok:false, run_id, error}`.
fn result_of(entry: RunEntry) -> Value {
    match entry.run {
        Ok(run) => vwf_core::run::result_of_document(run),
        Err(error) => serde_json::json!({"ok": false, "run_id": entry.id, "error": error}),
    }
}

impl Runner<'_> {
    /// The newest runs, each settled like `open` would (but no wait is resumed by a listing).
    /// An unreadable entry is listed with its error.
    pub fn list(&self, limit: usize) -> Result<Vec<RunEntry>, RunError> {
        let mut entries = self.store.list_runs(limit).wait()?;
        for entry in &mut entries {
            self.settle_entry(entry);
        }
        Ok(entries)
    }

    /// A listed entry as `open` would read it (a stale run settled, a document that is not a
    /// run reported as unreadable), without resuming a wait.
    fn settle_entry(&self, entry: &mut RunEntry) {
        let Ok(value) = &entry.run else { return };
        let stale = match parse_run(&entry.id, value.clone()) {
            Ok(run) => self.is_stale(&run, false),
            // JSON that is not a run (`[]`, `{}`, a foreign file) is as unreadable as bad JSON.
            Err(e) => {
                entry.run = Err(e.to_string());
                return;
            }
        };
        if stale && let Ok((run, _)) = self.settle(&entry.id, false) {
            entry.run = serde_json::to_value(&run).map_err(|e| e.to_string());
        }
    }

    /// The run `id` as a listing shows it, if it matches `filter` (`None` also for a run deleted
    /// since the index listed it).
    fn listed(&self, id: &RunId, read: Result<Value, StoreError>, filter: &RunFilter) -> Option<Value> {
        let run = match read {
            Err(StoreError::NotFound(_)) => return None,
            read => read.map_err(|e| e.to_string()),
        };
        let mut entry = RunEntry { id: id.clone(), run };
        self.settle_entry(&mut entry);
        let keep = match &entry.run {
            Ok(run) => Summary::deserialize(run).is_ok_and(|summary| filter.matches(&summary)),
            Err(_) => !filter.reads_runs(),
        };
        keep.then(|| {
            let mut result = result_of(entry);
            self.add_queue_place(&mut result);
            result
        })
    }

    /// The newest runs as every surface lists them: each a run result, or
    /// `{ok:false, run_id, error}` for an entry that cannot be read.
    pub fn list_results(&self, limit: usize) -> Result<Vec<Value>, RunError> {
        Ok(self.list_page(&RunFilter::default(), None, limit)?.runs)
    }

    /// One page of the listing, newest first: at most `limit` runs matching `filter`, older than
    /// the run `before` (a previous page's `next`). `next` is set when older runs may match: the
    /// page is full, or [`limits::RUNS_SCANNED_PER_PAGE`] runs were looked at without filling it
    /// (so a page costs the same however many runs the store holds, and a rare filter continues
    /// on the next page). An unreadable entry is listed only when no filter needs to read it.
    pub fn list_page(&self, filter: &RunFilter, before: Option<&RunId>, limit: usize) -> Result<RunPage, RunError> {
        let mut page = RunPage::default();
        let mut cursor = before.cloned();
        let mut scanned = 0;
        while page.runs.len() < limit {
            // Without a filter every id is a run of the page; with one, read ahead in chunks.
            let want = if filter.reads_runs() || filter.id.is_some() { LIST_CHUNK } else { limit - page.runs.len() };
            let ids = self.store.list_run_ids(cursor.as_ref(), want).wait()?;
            if ids.is_empty() {
                return Ok(page);
            }
            // The runs the id filter keeps, read in one request.
            let wanted: Vec<RunId> = ids.iter().filter(|id| filter.matches_id(id.as_str())).cloned().collect();
            let mut reads = wanted.iter().cloned().zip(self.store.read_runs(&wanted).wait()).peekable();
            for id in ids {
                cursor = Some(id.clone());
                scanned += 1;
                let read = reads.next_if(|(wanted, _)| *wanted == id).map(|(_, read)| read);
                if let Some(run) = read.and_then(|read| self.listed(&id, read, filter)) {
                    page.runs.push(run);
                }
                if page.runs.len() == limit || scanned >= limits::RUNS_SCANNED_PER_PAGE {
                    page.next = Some(id.to_string());
                    return Ok(page);
                }
            }
        }
        Ok(page)
    }
}
