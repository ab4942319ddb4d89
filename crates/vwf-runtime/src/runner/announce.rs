//! Gates that announce themselves (a gate's `notify`): once the run is saved parked at such a
//! gate, its question goes to every target and each platform's answer is recorded under the
//! run's `deliveries`.
//!
//! Invariants:
//! - The announcement follows the save that parked the run, so nobody is asked about a gate that
//!   a crash could take back; and it is recorded with the next save.
//! - Each gate is announced once: `notified` is set with the deliveries. A process that dies
//!   between the send and that save leaves the gate unannounced in the record, and whoever drives
//!   the run next announces it again (at least once, never silently lost).
//! - A failed announcement does not fail the run: the gate still waits for its answer, and the
//!   delivery says what the platform answered.

use std::time::Duration;

use vwf_core::run::Run;
use vwf_exec::deliver::gate::{Announcement, announce};

use super::Runner;
use crate::error::RunError;

/// How long one announcement may take per target.
const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(vwf_core::limits::DELIVER_TIMEOUT_DEFAULT);

impl Runner<'_> {
    /// Announces the gates the run parked at that ask for it; whether anything was recorded
    /// (the caller saves it).
    pub(super) fn announce_gates(&self, run: &mut Run) -> Result<bool, RunError> {
        let notices = run.notices();
        if notices.is_empty() {
            return Ok(false);
        }
        let config = &self.drivers.config;
        let link = public_url(&config.server).map(|base| format!("{base}/#/runs/{}", run.run_id()));
        for notice in &notices {
            let now = self.clock.now();
            let a = Announcement { run_id: run.run_id().as_str(), notice, link: link.clone() };
            let sent = announce(&config.channels, &a, now, ANNOUNCE_TIMEOUT);
            for d in sent.iter().filter(|d| !d.ok) {
                tracing::warn!(run = %run.run_id(), gate = %notice.node, target = %d.target, detail = %d.detail, "a gate's announcement failed");
            }
            run.record_notices(&notice.node, sent, now);
        }
        Ok(true)
    }
}

/// `[server] public_url` without its trailing slash, when it is an http(s) URL.
pub fn public_url(server: &toml::Table) -> Option<String> {
    let raw = server.get("public_url")?.as_str()?.trim().trim_end_matches('/');
    let url = reqwest::Url::parse(raw).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host_str().is_some()).then(|| raw.to_string())
}
