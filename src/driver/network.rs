//! Waiting out a network blip: a git, gh or tracker call whose adapter classified its failure
//! as transient (`CallFailureKind::is_transient`) is tried again after the backoff schedule, without spending an
//! attempt or blaming the issue, up to `maxNetworkWaits` waits in a row. Then the machine gets
//! `NetworkUnavailable` and halts (`ENVIRONMENT FAILURE: NETWORK`), naming the call and what
//! it printed. Every call site goes through [`Driver::patiently`].

use super::Driver;
use crate::call_failure::{CallFailureKind, Kinded};
use crate::machine::Event;
use std::time::Duration;

/// How a patient call ended.
pub(super) enum Patient<T, E> {
    /// The call's own result (success, or a failure that is not the network's).
    Done(Result<T, E>),
    /// The network stayed down through every allowed wait; the event that says so.
    GaveUp(Event),
    /// A signal arrived during a wait; the shutdown event.
    Cancelled(Event),
}

impl Driver {
    pub(super) async fn patiently<T, E: std::fmt::Display + Kinded>(
        &mut self,
        what: &str,
        mut call: impl FnMut(&Driver) -> Result<T, E>,
    ) -> Patient<T, E> {
        let mut waits = 0u32;
        loop {
            // A signal stops the call's process group at once, even while this thread is
            // blocked in it.
            let error = match crate::process::cancellable(|| call(self)) {
                Err(e) if e.kind() == CallFailureKind::Cancelled => {
                    return Patient::Cancelled(self.shutdown.event())
                }
                Err(e) if e.kind().is_transient() => e.to_string(),
                other => return Patient::Done(other),
            };
            let first_line = error.lines().next().unwrap_or_default().to_string();
            if waits >= self.cfg.max_network_waits {
                return Patient::GaveUp(self.network_unavailable(what, &error, waits));
            }
            waits += 1;
            let secs = u64::from(self.core.runner().limits.backoff_secs(waits));
            let until = chrono::Utc::now() + chrono::Duration::seconds(secs as i64);
            self.log(&format!(
                "network: {what} failed ({first_line}); waiting {secs} s, until {} (wait {waits} of {})",
                until.format("%H:%M:%S UTC"),
                self.cfg.max_network_waits
            ));
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(secs)) => {}
                _ = self.shutdown.wait() => return Patient::Cancelled(self.shutdown.event()),
            }
        }
    }

    /// Records why the network is given up on (for the halt diagnostic) and returns the event.
    pub(super) fn network_unavailable(&mut self, what: &str, error: &str, waits: u32) -> Event {
        self.last_output = format!("{what} kept failing after {waits} wait(s): {error}");
        self.log(&format!(
            "network: giving up on {what} after {waits} wait(s): {error}"
        ));
        Event::NetworkUnavailable
    }
}
