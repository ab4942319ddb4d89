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
use crate::time::{self, Ts};
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
    /// Runs started at or after this instant.
    pub from: Option<Ts>,
    /// Runs started before this instant.
    pub to: Option<Ts>,
    /// Runs that took at least this many seconds (from their start to their last change).
    pub min_seconds: Option<u64>,
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
        Ok(RunFilter { design, status, trigger, id, parent, ..RunFilter::default() })
    }

    /// The period filters: started in `[from, to)` (RFC 3339 times or `YYYY-MM-DD` dates, UTC)
    /// and taking at least `min_duration` (`"30s"`, `"5m"`, `"1h"`). The error names the filter.
    pub fn with_period(mut self, from: Option<&str>, to: Option<&str>, min_duration: Option<&str>) -> Result<RunFilter, String> {
        let day_or_time = |name: &str, v: &str| {
            time::parse_day_or_time(v).ok_or_else(|| format!("{name} {v:?} is not an RFC 3339 time nor a YYYY-MM-DD date"))
        };
        self.from = from.map(|f| day_or_time("from", f)).transpose()?;
        self.to = to.map(|t| day_or_time("to", t)).transpose()?;
        self.min_seconds =
            min_duration.map(|d| crate::schedule::parse_duration(d).map_err(|e| format!("min_duration: {}", e.message))).transpose()?;
        Ok(self)
    }

    /// Whether only the id is filtered (or nothing): no run needs reading to decide.
    pub fn reads_runs(&self) -> bool {
        self.design.is_some()
            || self.status.is_some()
            || self.trigger.is_some()
            || self.parent.is_some()
            || self.from.is_some()
            || self.to.is_some()
            || self.min_seconds.is_some()
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
            && self.from.is_none_or(|f| run.created_at >= f)
            && self.to.is_none_or(|t| run.created_at < t)
            && self.min_seconds.is_none_or(|min| {
                let took = run.updated_at.map_or(0, |u| (u - run.created_at).num_milliseconds());
                took >= i64::try_from(min.saturating_mul(1000)).unwrap_or(i64::MAX)
            })
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
    fn period_filters_read_dates_times_and_durations() {
        let mut s = run("a", "done", "manual");
        s.updated_at = time::parse("2026-03-01T09:05:00Z");
        let f = |from: Option<&str>, to: Option<&str>, min: Option<&str>| RunFilter::default().with_period(from, to, min);
        assert!(f(Some("2026-03-01"), Some("2026-03-02"), Some("5m")).unwrap().matches(&s));
        assert!(!f(Some("2026-03-01T09:00:01Z"), None, None).unwrap().matches(&s), "started before from");
        assert!(!f(None, Some("2026-03-01T09:00:00Z"), None).unwrap().matches(&s), "to is exclusive");
        assert!(!f(None, None, Some("5m1s")).unwrap().matches(&s), "took 5 minutes");
        assert!(f(None, None, None).unwrap() == RunFilter::default() && f(None, None, Some("1s")).unwrap().reads_runs());
        for (from, to, min, names) in
            [(Some("yesterday"), None, None, "from"), (None, Some("2026-02-3"), None, "to"), (None, None, Some("5 min"), "min_duration")]
        {
            assert!(f(from, to, min).unwrap_err().starts_with(names));
        }
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
