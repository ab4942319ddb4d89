//! Which runs a listing shows (SPEC §13 `GET /runs`, `vwf runs`): filters by design, status,
//! trigger mode and run id prefix, read once from the caller's words into a [`RunFilter`].
//!
//! Pure: the store walks its index newest first and the runner reads each run; this module only
//! says which of them match. A filter that is not given matches everything; the id prefix is
//! checked on the id alone, before any run is read.

use serde_json::Value;

use crate::names::{DesignName, RunId};
use crate::run::Status;
use crate::run::settle::Summary;
use crate::trigger::TriggerMode;

/// The modes a run's `trigger.mode` can have (SPEC §10), in the contract's order.
pub const TRIGGER_MODES: [&str; 7] = crate::trigger::MODES;

/// The run statuses (SPEC §8), in the contract's order.
pub const STATUSES: [&str; 9] =
    ["queued", "running", "waiting", "awaiting_approval", "awaiting_agent", "awaiting_event", "awaiting_child", "done", "failed"];

/// What a listing keeps: every given filter must match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    pub design: Option<DesignName>,
    pub status: Option<Status>,
    pub trigger: Option<TriggerMode>,
    /// 1 to 12 lowercase hex characters the run id starts with.
    pub id: Option<String>,
    /// The run whose design steps started the runs listed.
    pub parent: Option<RunId>,
}

impl RunFilter {
    /// Reads the filters as a user gives them (`None`: not given; an empty value is no value of
    /// any filter). The error names the filter and the values it takes.
    pub fn parse(
        design: Option<&str>,
        status: Option<&str>,
        trigger: Option<&str>,
        id: Option<&str>,
        parent: Option<&str>,
    ) -> Result<RunFilter, String> {
        let design = design.map(|d| DesignName::parse(d).map_err(|e| format!("design: {e}"))).transpose()?;
        let status = status
            .map(|s| {
                serde_json::from_value::<Status>(Value::from(s))
                    .map_err(|_| format!("status {s:?} is not a run status; use one of {}", STATUSES.join(", ")))
            })
            .transpose()?;
        let trigger = trigger
            .map(|t| {
                TriggerMode::parse(t).ok_or_else(|| {
                    format!("trigger {t:?} is not a trigger mode; use one of {}", TRIGGER_MODES.join(", ") + ", failure, parent")
                })
            })
            .transpose()?;
        let id = id
            .map(|i| {
                let ok = (1..=RunId::LEN).contains(&i.len()) && i.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                if ok { Ok(i.to_string()) } else { Err(format!("id {i:?}: a run id or its start is 1 to 12 lowercase hex characters")) }
            })
            .transpose()?;
        let parent = parent.map(|p| RunId::parse(p).map_err(|e| format!("parent: {e}"))).transpose()?;
        Ok(RunFilter { design, status, trigger, id, parent })
    }

    /// Whether only the id is filtered (or nothing): no run needs reading to decide.
    pub fn reads_runs(&self) -> bool {
        self.design.is_some() || self.status.is_some() || self.trigger.is_some() || self.parent.is_some()
    }

    /// Whether a run with this id may match (the id filter only).
    pub fn matches_id(&self, id: &str) -> bool {
        self.id.as_deref().is_none_or(|prefix| id.starts_with(prefix))
    }

    /// Whether a run matches every given filter.
    pub fn matches(&self, run: &Summary) -> bool {
        self.matches_id(run.run_id.as_str())
            && self.design.as_ref().is_none_or(|d| *d == run.design)
            && self.status.is_none_or(|s| s == run.status)
            && self.trigger.is_none_or(|t| t == run.trigger.mode)
            && self.parent.as_ref().is_none_or(|p| run.parent_run.as_ref() == Some(p))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summary(id: &str, design: &str, status: &str, mode: &str) -> Summary {
        let stored = json!({"run_id": id, "design": design, "status": status, "trigger": {"mode": mode, "input": null},
            "created_at": "2026-03-01T09:00:00Z"});
        serde_json::from_value(stored).unwrap()
    }

    fn run(design: &str, status: &str, mode: &str) -> Summary {
        summary("d7b493cae249", design, status, mode)
    }

    #[test]
    fn run_filter_matches_every_given_filter() {
        let all = RunFilter::parse(None, None, None, None, None).unwrap();
        assert_eq!(all, RunFilter::default());
        assert!(!all.reads_runs());
        assert!(all.matches(&run("a", "done", "manual")));
        let f = RunFilter::parse(Some("brief"), Some("failed"), Some("schedule"), Some("d7b4"), None).unwrap();
        assert!(f.reads_runs());
        assert!(f.matches(&run("brief", "failed", "schedule")));
        for other in [run("brief2", "failed", "schedule"), run("brief", "done", "schedule"), run("brief", "failed", "manual")] {
            assert!(!f.matches(&other), "{other:?}");
        }
        assert!(f.matches_id("d7b493cae249") && !f.matches_id("e7b493cae249"));
        assert!(!RunFilter::parse(None, None, None, Some("d7b493cae249"), None).unwrap().matches(&summary(
            "d7b493cae248",
            "a",
            "done",
            "manual"
        )));
    }

    #[test]
    fn run_filter_refuses_what_no_run_can_have() {
        for (d, s, t, i, needle) in [
            (Some("../x"), None, None, None, "design"),
            (None, Some("finished"), None, None, "awaiting_approval"),
            (None, None, Some("cron"), None, "heartbeat"),
            (None, None, None, Some("D7B4"), "hex"),
            (None, None, None, Some("d7b493cae2490"), "1 to 12"),
            (None, None, None, Some(""), "1 to 12"),
            (None, Some(""), None, None, "status"),
            (None, Some(" done"), None, None, "status"),
            (Some(""), None, None, None, "design"),
        ] {
            let e = RunFilter::parse(d, s, t, i, None).unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
        for status in STATUSES {
            assert_eq!(RunFilter::parse(None, Some(status), None, None, None).unwrap().status.map(|s| s.as_str()), Some(status));
        }
    }
}
