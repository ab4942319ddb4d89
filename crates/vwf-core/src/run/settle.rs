//! When a stored run needs acting on without anyone asking (SPEC §3 wait, §7 interrupted runs, §9
//! approval deadlines), decided once for every caller: the runner reading a run, the daemon
//! scanning the newest runs, a foreground `vwf run` resuming due waits.
//!
//! A listing does not load whole runs to decide this: [`Summary`] is the few fields of a stored run
//! the decisions (and the listings' filters) need, and a store can produce it from its own columns.
//! Both [`Run`] and [`Summary`] answer through the same functions here, so the daemon and the runner
//! can never disagree about which run is due.

use serde::{Deserialize, Serialize};

use super::{Pending, Run, Status};
use crate::names::{DesignName, RunId};
use crate::spec::EventTimeout;
use crate::time::{self, Ts};
use crate::trigger::TriggerMode;

/// Why a stored run needs settling now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Settle {
    /// Stored `running`: if no live owner holds its lock, its process died and it is interrupted.
    Orphaned,
    /// A gate's deadline has passed: the gate fails (and may request escalation).
    DeadlinePassed,
    /// A timed wait has come: the run resumes.
    WaitDue,
    /// The run's own `timeout` has passed while it waits (on anything but a gate): it fails.
    TimedOut,
    /// It waits on a run a design step starts: the run may be still to make, or may have moved
    /// (parked, ended) since this one last looked.
    Children,
    /// It waits at a gate whose notifications were never sent (the process that parked it died
    /// first): driven, it sends them.
    Unannounced,
}

/// The fields of a stored run that say whether it needs settling, and what listings filter on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Summary {
    pub run_id: RunId,
    pub design: DesignName,
    pub status: Status,
    pub trigger: TriggerSummary,
    #[serde(with = "time")]
    pub created_at: Ts,
    /// The run's last change (absent from hand-made documents).
    #[serde(default, with = "time::opt")]
    pub updated_at: Option<Ts>,
    #[serde(default)]
    pub parked: Vec<Pending>,
    #[serde(default, with = "time::opt")]
    pub timeout_at: Option<Ts>,
    /// The run whose design step started this one.
    #[serde(default)]
    pub parent_run: Option<RunId>,
}

/// The trigger's mode and origin (see [`super::TriggerInfo`]), as a [`Summary`] keeps them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TriggerSummary {
    pub mode: TriggerMode,
    #[serde(default)]
    pub origin: Option<String>,
}

impl Summary {
    /// See [`due`].
    pub fn due(&self, now: Ts, resume_waits: bool) -> Option<Settle> {
        due(self.status, &self.parked, self.timeout_at, now, resume_waits)
    }
    /// See [`next_due`].
    pub fn next_due(&self) -> Option<Ts> {
        next_due(self.status, &self.parked, self.timeout_at)
    }
}

impl Run {
    /// See [`due`].
    pub fn due(&self, now: Ts, resume_waits: bool) -> Option<Settle> {
        due(self.status, &self.parked, self.timeout_at, now, resume_waits)
    }
    /// See [`next_due`].
    pub fn next_due(&self) -> Option<Ts> {
        next_due(self.status, &self.parked, self.timeout_at)
    }
}

/// Whether a run stored with `status` and `parked` steps needs settling at `now`: a `running` run
/// always might (only its lock says whether its owner lives), a gate whose deadline passed, a
/// parked run past its own `timeout_at` (unless it waits on a gate), and (when `resume_waits`) a
/// wait that has come. A listing passes `resume_waits = false`: reading a list never resumes a
/// wait.
pub fn due(status: Status, parked: &[Pending], timeout_at: Option<Ts>, now: Ts, resume_waits: bool) -> Option<Settle> {
    if matches!(status, Status::Waiting | Status::AwaitingAgent | Status::AwaitingEvent | Status::AwaitingChild)
        && timeout_at.is_some_and(|t| t <= now)
    {
        return Some(Settle::TimedOut);
    }
    match status {
        Status::Running => Some(Settle::Orphaned),
        // A deadline that fails the run: a gate's, or a wait for an event that fails on timeout.
        Status::Waiting | Status::AwaitingApproval | Status::AwaitingAgent | Status::AwaitingEvent | Status::AwaitingChild
            if parked.iter().any(|p| match p {
                Pending::Approval { deadline: Some(d), .. } => *d <= now,
                Pending::Event { deadline: Some(d), on_timeout: EventTimeout::Fail, .. } => *d <= now,
                _ => false,
            }) =>
        {
            Some(Settle::DeadlinePassed)
        }
        // A wait may have come while a gate or an agent step parked earlier in the plan is what
        // the run shows: it resumes all the same. A wait for an event that goes on when it times
        // out is such a wait once its deadline passes.
        Status::Waiting | Status::AwaitingApproval | Status::AwaitingAgent | Status::AwaitingEvent | Status::AwaitingChild
            if resume_waits
                && parked.iter().any(|p| match p {
                    Pending::Wait { resume_at, .. } => *resume_at <= now,
                    Pending::Event { deadline: Some(d), on_timeout: EventTimeout::Continue, .. } => *d <= now,
                    _ => false,
                }) =>
        {
            Some(Settle::WaitDue)
        }
        _ if resume_waits && !status.is_finished() && parked.iter().any(|p| matches!(p, Pending::Child { .. })) => Some(Settle::Children),
        _ if resume_waits
            && !status.is_finished()
            && parked
                .iter()
                .any(|p| matches!(p, Pending::Approval { notify, notified: false, run_id: None, .. } if !notify.is_empty())) =>
        {
            Some(Settle::Unannounced)
        }
        _ => None,
    }
}

/// The earliest wake-up or approval deadline among parked steps, or the run's own timeout (when
/// it does not wait on a gate): when the run will next be due.
pub fn next_due(status: Status, parked: &[Pending], timeout_at: Option<Ts>) -> Option<Ts> {
    let timeout =
        timeout_at.filter(|_| matches!(status, Status::Waiting | Status::AwaitingAgent | Status::AwaitingEvent | Status::AwaitingChild));
    parked
        .iter()
        .filter_map(|p| match p {
            Pending::Wait { resume_at, .. } => Some(*resume_at),
            Pending::Approval { deadline, .. } | Pending::Event { deadline, .. } => *deadline,
            Pending::Agent { .. } | Pending::Child { .. } => None,
        })
        .chain(timeout)
        .min()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(s: &str) -> Ts {
        time::parse(s).expect("time")
    }

    fn gate(deadline: Option<&str>) -> Pending {
        Pending::Approval {
            node: crate::names::pid("gate").into(),
            question: "ok?".into(),
            options: vec!["approve".into()],
            deadline: deadline.map(at),
            on_timeout: crate::spec::OnTimeout::Reject,
            outputs: Default::default(),
            fields: Vec::new(),
            edit: Default::default(),
            approvers: None,
            votes: Vec::new(),
            notify: Vec::new(),
            context: None,
            notified: false,
            run_id: None,
        }
    }

    fn wait(resume_at: &str) -> Pending {
        Pending::Wait { node: crate::names::pid("pause").into(), resume_at: at(resume_at), next_attempt: None, rate_limit: None }
    }

    #[test]
    fn each_status_is_due_exactly_when_its_time_has_come() {
        let due_ = |status, parked: &[Pending], now, resume| due(status, parked, None, now, resume);
        let now = at("2026-03-01T12:00:00Z");
        assert_eq!(due_(Status::Running, &[], now, false), Some(Settle::Orphaned));
        assert_eq!(due_(Status::AwaitingApproval, &[gate(Some("2026-03-01T12:00:00Z"))], now, false), Some(Settle::DeadlinePassed));
        assert_eq!(due_(Status::AwaitingApproval, &[gate(Some("2026-03-01T12:00:01Z"))], now, true), None);
        assert_eq!(due_(Status::AwaitingApproval, &[gate(None)], now, true), None, "no deadline, never due");
        assert_eq!(due_(Status::Waiting, &[wait("2026-03-01T11:59:59Z")], now, true), Some(Settle::WaitDue));
        assert_eq!(due_(Status::Waiting, &[wait("2026-03-01T11:59:59Z")], now, false), None, "a listing resumes no wait");
        assert_eq!(due_(Status::Waiting, &[wait("2026-03-01T12:00:01Z")], now, true), None);
        for finished in [Status::Done, Status::Failed] {
            assert_eq!(due_(finished, &[gate(Some("2026-01-01T00:00:00Z"))], now, true), None);
        }
        assert_eq!(
            next_due(Status::Waiting, &[wait("2026-03-01T13:00:00Z"), gate(Some("2026-03-01T12:30:00Z")), gate(None)], None),
            Some(at("2026-03-01T12:30:00Z"))
        );
        assert_eq!(next_due(Status::AwaitingApproval, &[gate(None)], None), None);
        // A run's own timeout, unless it waits on a gate (which keeps its own deadline).
        let timeout = Some(at("2026-03-01T12:10:00Z"));
        assert_eq!(next_due(Status::Waiting, &[wait("2026-03-01T13:00:00Z")], timeout), timeout);
        assert_eq!(next_due(Status::AwaitingApproval, &[gate(None)], timeout), None);
        let late = at("2026-03-01T12:10:00Z");
        assert_eq!(due(Status::Waiting, &[wait("2026-03-01T13:00:00Z")], timeout, late, false), Some(Settle::TimedOut));
        assert_eq!(due(Status::AwaitingAgent, &[], timeout, late, false), Some(Settle::TimedOut));
        assert_eq!(due(Status::AwaitingApproval, &[gate(None)], timeout, late, true), None);
        assert_eq!(due(Status::Waiting, &[wait("2026-03-01T13:00:00Z")], timeout, now, true), None);
    }

    #[test]
    fn a_summary_reads_from_a_stored_run_and_ignores_the_rest() {
        let stored = json!({
            "ok": true, "run_id": "d7b493cae249", "design": "d", "status": "waiting", "outputs": {},
            "trigger": {"mode": "schedule", "input": {"x": 1}}, "created_at": "2026-03-01T09:00:00Z",
            "parked": [{"type": "wait", "node": "pause", "resume_at": "2026-03-01T09:05:00Z"}], "plan": {"anything": []}
        });
        let s: Summary = serde_json::from_value(stored).expect("summary");
        assert_eq!((s.status, s.trigger.mode), (Status::Waiting, TriggerMode::Schedule));
        assert_eq!(s.next_due(), Some(at("2026-03-01T09:05:00Z")));
        assert_eq!(s.due(at("2026-03-01T09:05:00Z"), true), Some(Settle::WaitDue));
    }
}
