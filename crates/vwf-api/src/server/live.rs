//! Long-poll reads: `GET /runs/{run_id}?since=&wait=` and `GET /runs?since=&wait=` hold the
//! request until what they read differs from what the client has, so a page follows a run (or
//! the listing) as it changes on any instance, without asking every second.
//!
//! Every such answer carries `stamp`: 32 hex digits of the SHA-256 of the body's JSON. It depends
//! only on the body, so every instance gives the same stamp for the same state, and any change
//! the client could see changes it (a run's `updated_at` would not: it moves by the clock, and
//! two writes in one millisecond, or under a pinned clock, keep it). A request whose `since` is
//! the stamp of what it reads now waits for a change notice of what it follows (`Run(id)` for a
//! run, any `Run` for the listing; `Resync` or a lagged receiver for both: see
//! [`vwf_store::changes`]), then reads again; it answers once the read differs, or once `wait`
//! seconds (cut to [`LIVE_WAIT_SECONDS`]) are over — 200 either way, with the current body.
//!
//! Invariants:
//! - A waiting request holds no run lock and no blocking thread: each read is one short
//!   `spawn_blocking`, and in between the task awaits the notice receiver under a tokio timeout.
//! - The receiver is taken before the first read, so a change between that read and the wait is
//!   never missed.
//! - At most [`LIVE_WAITERS`] requests wait at once; one more answers at once, as if its wait
//!   were over (never an error). A stopping server answers every waiting request at once.
//! - A store without notices (the file store) is read again every [`REREAD_WITHOUT_NOTICES`]:
//!   still correct, a change shows within half a second (plus the read) instead of at once; at
//!   most [`LIVE_WAITERS`] reads twice a second.
//! - A request reads at most once per [`READ_GAP`], however many notices arrive (a busy store
//!   sends one per step of every run, and the listing follows them all).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{Semaphore, broadcast, watch};
use tokio::time::Instant;
#[cfg(test)]
use vwf_core::limits::LIVE_WAIT_SECONDS;
use vwf_core::limits::LIVE_WAITERS;
use vwf_core::names::RunId;

#[cfg(test)]
use crate::contract::queries::RunQuery;
use crate::contract::queries::{Since, Wait};
use crate::failure::Failure;
use vwf_runtime::app::App;
use vwf_store::changes::Change;

/// How often a waiting request reads again when the store sends no change notices: often
/// enough that a page shows a run started elsewhere within a second.
const REREAD_WITHOUT_NOTICES: Duration = Duration::from_millis(500);
/// The least time between two reads of one waiting request.
const READ_GAP: Duration = Duration::from_millis(250);
/// Hex digits of a stamp (128 bits of the digest).
pub(crate) const STAMP_DIGITS: usize = 32;
/// What a stamp looks like (the OpenAPI document states it).
pub(crate) const STAMP_PATTERN: &str = "^[0-9a-f]{32}$";

/// What the waiting requests of one server share.
#[derive(Clone)]
pub(crate) struct Live {
    app: Arc<App>,
    /// Whether the store sends change notices (else waiters read again on a timer).
    notices: bool,
    places: Arc<Semaphore>,
    stopping: watch::Receiver<bool>,
}

/// Tells the waiting requests that the server stops.
pub(crate) struct Stop(watch::Sender<bool>);

impl Stop {
    pub(crate) fn now(&self) {
        let _ = self.0.send(true);
    }
}

impl Live {
    pub(crate) fn new(app: Arc<App>, notices: bool) -> (Live, Stop) {
        let (stop, stopping) = watch::channel(false);
        (Live { app, notices, places: Arc::new(Semaphore::new(LIVE_WAITERS)), stopping }, Stop(stop))
    }
}

/// The digest of an answer's body: the `stamp` it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp(String);

impl Stamp {
    fn of(body: &Value) -> Stamp {
        let digest = Sha256::digest(serde_json::to_vec(body).unwrap_or_default());
        Stamp(hex::encode(&digest[..STAMP_DIGITS / 2]))
    }
}

/// What a long-poll request asks: answer when the body's stamp is not `since`, or after `wait`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Follow {
    since: Option<Stamp>,
    wait: Duration,
}

impl Follow {
    /// The `since` and `wait` of a query (read and bounded by `contract::queries`); `None` when
    /// it has neither (a plain read, today's body without a stamp). Absent, `wait` is 0.
    pub(crate) fn of(since: Option<Since>, wait: Option<Wait>) -> Option<Follow> {
        if since.is_none() && wait.is_none() {
            return None;
        }
        Some(Follow { since: since.map(|s| Stamp(s.0)), wait: Duration::from_secs(wait.map_or(0, |w| w.0)) })
    }
}

/// What a request follows: the changes that make it read again.
pub(crate) enum Followed<'a> {
    Run(&'a RunId),
    Listing,
}

impl Followed<'_> {
    fn woken_by(&self, change: &Change) -> bool {
        match (self, change) {
            (_, Change::Resync) => true,
            (Followed::Run(id), Change::Run(changed) | Change::Ended(changed)) => changed == *id,
            (Followed::Listing, Change::Run(_) | Change::Ended(_)) => true,
            _ => false,
        }
    }
}

/// Answers `read()` with its stamp, once it differs from `follow.since` or the wait is over
/// (see the module doc). A failed read (the run is gone, the store is down) is the answer.
pub(crate) async fn answer<R, F>(live: &Live, follow: Follow, followed: Followed<'_>, mut read: R) -> Result<Value, Failure>
where
    R: FnMut() -> F,
    F: Future<Output = Result<Value, Failure>>,
{
    let mut changes = live.app.changes.subscribe();
    let deadline = Instant::now() + follow.wait;
    let mut body = read().await?;
    let mut last_read = Instant::now();
    let mut stamp = Stamp::of(&body);
    if follow.since.as_ref() == Some(&stamp)
        && !follow.wait.is_zero()
        && let Ok(_place) = live.places.clone().try_acquire_owned()
    {
        let _counted = Counted::new(&live.app);
        let mut stopping = live.stopping.clone();
        while woken(live, &mut changes, &mut stopping, &followed, deadline).await {
            tokio::time::sleep_until((last_read + READ_GAP).min(deadline)).await;
            body = read().await?;
            last_read = Instant::now();
            stamp = Stamp::of(&body);
            if follow.since.as_ref() != Some(&stamp) {
                break;
            }
        }
    }
    if let Some(fields) = body.as_object_mut() {
        fields.insert("stamp".into(), Value::String(stamp.0));
    }
    Ok(body)
}

/// Waits for a reason to read again: `true` on a notice of what is followed (or, without notices,
/// when it is time to read again); `false` when the wait is over or the server stops.
async fn woken(
    live: &Live,
    changes: &mut broadcast::Receiver<Change>,
    stopping: &mut watch::Receiver<bool>,
    followed: &Followed<'_>,
    deadline: Instant,
) -> bool {
    let reread = if live.notices { deadline } else { (Instant::now() + REREAD_WITHOUT_NOTICES).min(deadline) };
    let notice = async {
        loop {
            match changes.recv().await {
                Ok(change) if followed.woken_by(&change) => return,
                Ok(_) => {}
                // Fell behind: some notice may have been for us.
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                // No notices any more: only the timer is left.
                Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
            }
        }
    };
    if *stopping.borrow() {
        return false;
    }
    tokio::select! {
        () = notice => Instant::now() < deadline,
        () = tokio::time::sleep_until(reread) => reread < deadline,
        _ = stopping.changed() => false,
    }
}

/// A waiting request, counted in the server's `vwf_live_waiters` gauge while it lives.
struct Counted<'a>(&'a App);

impl<'a> Counted<'a> {
    fn new(app: &'a App) -> Counted<'a> {
        if let Some(metrics) = &app.metrics {
            metrics.live_waiting(1);
        }
        Counted(app)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if let Some(metrics) = &self.0.metrics {
            metrics.live_waiting(-1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Result<Option<Follow>, Failure> {
        let pairs = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let RunQuery { since, wait, .. } = crate::contract::queries::parse_query(&pairs)?;
        Ok(Follow::of(since, wait))
    }

    #[test]
    fn waits_are_whole_seconds_cut_to_the_limit() {
        assert_eq!(query(&[]).unwrap(), None);
        let wait = |w: &str| query(&[("wait", w)]).map(|f| f.map(|f| f.wait.as_secs()));
        assert_eq!(wait("0").unwrap(), Some(0));
        assert_eq!(wait("7").unwrap(), Some(7));
        assert_eq!(wait("3600").unwrap(), Some(LIVE_WAIT_SECONDS));
        assert_eq!(wait("99999999999999999999999").unwrap(), Some(LIVE_WAIT_SECONDS));
        for bad in ["", "-1", "1.5", "1e3", " 1", "+1", "30s", "٣"] {
            assert!(wait(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn stamps_are_the_digest_of_the_body_and_read_back() {
        let a = Stamp::of(&serde_json::json!({"status": "waiting"}));
        assert_eq!(a.0.len(), STAMP_DIGITS);
        assert_eq!(STAMP_PATTERN, format!("^[0-9a-f]{{{STAMP_DIGITS}}}$"));
        assert_eq!(query(&[("since", &a.0)]).unwrap().unwrap().since, Some(a.clone()));
        assert_eq!(Stamp::of(&serde_json::json!({"status": "waiting"})), a);
        assert_ne!(Stamp::of(&serde_json::json!({"status": "done"})), a);
        for bad in ["", "abc", &a.0.to_uppercase(), &format!("{}0", a.0), &"g".repeat(STAMP_DIGITS)] {
            let e = query(&[("since", bad)]).unwrap_err().to_string();
            assert!(e.starts_with(&format!("since={bad:?}: must be the stamp")), "{e}");
        }
    }

    #[test]
    fn a_run_wakes_on_its_own_notices_and_the_listing_on_every_run() {
        let (abc, abd) = (RunId::parse("000000000abc").unwrap(), RunId::parse("000000000abd").unwrap());
        let run = Followed::Run(&abc);
        assert!(run.woken_by(&Change::Run(abc.clone())));
        assert!(!run.woken_by(&Change::Run(abd.clone())));
        assert!(run.woken_by(&Change::Resync));
        assert!(!run.woken_by(&Change::Design("abc".into())));
        assert!(Followed::Listing.woken_by(&Change::Run(abd)));
        assert!(!Followed::Listing.woken_by(&Change::Job("x".into())));
    }
}
