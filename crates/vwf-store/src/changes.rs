//! Change notices: which run, design or schedule job changed, for whoever waits on one — a page
//! following a run, the daemon's timers. The PostgreSQL store feeds it from `LISTEN vwf_changes`
//! (every instance's writes, its own included); the file store has no notices, and waiters fall
//! back to reading the store again twice a second.
//!
//! A notice is a hint to look again, never the state itself: a waiter that falls behind (the
//! channel is bounded) or sees `Resync` reads what it follows afresh.

use tokio::sync::broadcast;
use vwf_core::names::RunId;

/// How many notices a slow waiter may fall behind before it is told to resync.
const CAPACITY: usize = 1024;

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A run changed and is still in flight.
    Run(RunId),
    /// A run was saved ended (done or failed): nothing is due on it any more.
    Ended(RunId),
    Design(String),
    Job(String),
    /// Notices may have been missed (the listening connection was lost): look at everything again.
    Resync,
}

impl Change {
    /// Reads a notice's payload (`run:<id>`, `end:<id>`, `design:<name>`, `job:<design>`).
    pub fn parse(payload: &str) -> Option<Change> {
        match payload.split_once(':')? {
            ("run", id) => RunId::parse(id).ok().map(Change::Run),
            ("end", id) => RunId::parse(id).ok().map(Change::Ended),
            ("design", name) => Some(Change::Design(name.to_string())),
            ("job", design) => Some(Change::Job(design.to_string())),
            _ => None,
        }
    }
}

/// The notice bus of one process. Cheap to clone.
#[derive(Clone)]
pub struct Changes(broadcast::Sender<Change>);

impl Default for Changes {
    fn default() -> Self {
        Changes(broadcast::channel(CAPACITY).0)
    }
}

impl Changes {
    pub fn publish(&self, change: Change) {
        // No receiver is fine: nobody waits right now.
        let _ = self.0.send(change);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.0.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_read_back_and_others_are_ignored() {
        assert_eq!(Change::parse("run:d7b493cae249"), Some(Change::Run(RunId::parse("d7b493cae249").unwrap())));
        assert_eq!(Change::parse("end:d7b493cae249"), Some(Change::Ended(RunId::parse("d7b493cae249").unwrap())));
        assert_eq!(Change::parse("design:daily-report"), Some(Change::Design("daily-report".into())));
        assert_eq!(Change::parse("job:x"), Some(Change::Job("x".into())));
        assert_eq!(Change::parse("table:x"), None);
        assert_eq!(Change::parse("run"), None);
    }

    #[test]
    fn every_subscriber_gets_every_notice() {
        let bus = Changes::default();
        let (mut a, mut b) = (bus.subscribe(), bus.subscribe());
        bus.publish(Change::Run(RunId::parse("000000000001").unwrap()));
        assert_eq!(a.try_recv().ok(), Some(Change::Run(RunId::parse("000000000001").unwrap())));
        assert_eq!(b.try_recv().ok(), Some(Change::Run(RunId::parse("000000000001").unwrap())));
    }
}
