//! A runner call that fails for a transient network reason (its adapter classified it:
//! `CallFailureKind::is_transient`) is not retried here: the driver reports `NetworkFailed` and
//! the machine decides — a wait on the network's own schedule and the same request again, or
//! `ENVIRONMENT FAILURE: NETWORK` once `maxNetworkWaits` waits in a row did not help. Every
//! wait is then journaled, replayed and bounded like any other. Every call site goes through
//! [`Driver::patiently`].

use super::Driver;
use crate::call_failure::{CallFailureKind, Kinded};
use crate::machine::Event;
use crate::ports::World;

/// How a call ended.
pub(super) enum Patient<T, E> {
    /// The call's own result (success, or a failure that is not the network's).
    Done(Result<T, E>),
    /// The call failed on the network: the event for the machine (`NetworkFailed`).
    GaveUp(Event),
    /// A signal stopped the call: the shutdown event.
    Cancelled(Event),
}

impl Driver {
    /// Makes the call once, off the runtime (a signal stops its process group at once); a
    /// transient network failure becomes `NetworkFailed`, with what failed kept for the
    /// diagnostic should the machine give up on the network.
    pub(super) async fn patiently<T, E>(
        &mut self,
        what: &str,
        call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
    ) -> Patient<T, E>
    where
        T: Send + 'static,
        E: std::fmt::Display + Kinded + Send + 'static,
    {
        let answer = self
            .shell
            .io
            .call(move |world| crate::process::cancellable(|| call(world)))
            .await;
        self.judge(what, answer)
    }

    /// What the answer of a call made off the runtime (see [`Driver::patiently`]) means: its
    /// own result, or the event of a network failure or of a shutdown that stopped it.
    pub(super) fn judge<T, E: std::fmt::Display + Kinded>(
        &mut self,
        what: &str,
        answer: Result<T, E>,
    ) -> Patient<T, E> {
        match answer {
            Err(e) if e.kind() == CallFailureKind::Cancelled => {
                Patient::Cancelled(self.shell.shutdown.event())
            }
            Err(e) if e.kind().is_transient() => {
                Patient::GaveUp(self.network_failed(what, &e.to_string()))
            }
            Err(e) => match e.kind() {
                CallFailureKind::RateLimited { wait_secs } => {
                    Patient::GaveUp(self.rate_limited(what, wait_secs, &e.to_string()))
                }
                _ => Patient::Done(Err(e)),
            },
            other => Patient::Done(other),
        }
    }

    /// Records what failed on the network (for the NETWORK halt diagnostic) and returns the
    /// event.
    pub(super) fn network_failed(&mut self, what: &str, error: &str) -> Event {
        let first_line = error.lines().next().unwrap_or_default();
        self.say(format!("{what} failed on the network: {error}"));
        self.log(&format!("network: {what} failed ({first_line})"));
        Event::NetworkFailed
    }
}

impl Driver {
    /// Says which call the service's rate limit refused and returns the event; the machine
    /// decides the wait.
    pub(super) fn rate_limited(&mut self, what: &str, wait_secs: u64, error: &str) -> Event {
        let first_line = error.lines().next().unwrap_or_default();
        let services = self.run.cfg.api_services();
        self.say(format!(
            "{what} hit {services}'s rate limit (it lifts in {wait_secs} s): {first_line}"
        ));
        self.log(&format!(
            "rate limit: {services}'s limit refused {what} ({first_line})"
        ));
        Event::RateLimited { wait_secs }
    }
}

/// Whether a call's answer ends a sequence of calls made in one go off the runtime: a failure
/// [`Driver::judge`] turns into the network's or the shutdown's event.
pub(super) fn ends_the_sequence(kind: CallFailureKind) -> bool {
    kind == CallFailureKind::Cancelled
        || kind.is_transient()
        || matches!(kind, CallFailureKind::RateLimited { .. })
}
