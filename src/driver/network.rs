//! A runner call that fails for a transient network reason (its adapter classified it:
//! `CallFailureKind::is_transient`) is not retried here: the driver reports `NetworkFailed` and
//! the machine decides — a wait on the network's own schedule and the same request again, or
//! `ENVIRONMENT FAILURE: NETWORK` once `maxNetworkWaits` waits in a row did not help. Every
//! wait is then journaled, replayed and bounded like any other. Every call site goes through
//! `patiently`.

use super::shutdown::Shutdown;
use crate::call_failure::{CallFailureKind, Kinded};
use crate::machine::Event;
use crate::narration as say;
use crate::ports::{Io, World};

/// How a call ended.
pub(super) enum Patient<T, E> {
    /// The call's own result (success, or a failure that is not the network's).
    Done(Result<T, E>),
    /// The call failed on the network: the event for the machine (`NetworkFailed`).
    GaveUp(Event),
    /// A signal stopped the call: the shutdown event.
    Cancelled(Event),
}

/// What a failed call tells besides its event: the words the machine keeps for the
/// diagnostic (`Report::said`) and the line the log narrates.
pub(crate) struct Told {
    pub said: String,
    pub narration: String,
}

/// Makes the call once, off the runtime (a signal stops its process group at once): its
/// answer, for [`judge`].
pub(super) async fn call<T, E>(
    io: &Io,
    call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    io.call(move |world| crate::process::cancellable(|| call(world)))
        .await
}

/// What the answer of a call made off the runtime means: its own result, or the event of a
/// network failure (with what failed kept for the diagnostic should the machine give up on
/// the network), of a rate limit (`services`' limit: the machine decides the wait) or of a
/// shutdown that stopped it.
pub(super) fn judge<T, E: std::fmt::Display + Kinded>(
    shutdown: &Shutdown,
    services: impl FnOnce() -> String,
    what: &str,
    answer: Result<T, E>,
) -> (Patient<T, E>, Option<Told>) {
    match answer {
        Err(e) if e.kind() == CallFailureKind::Cancelled => {
            (Patient::Cancelled(shutdown.event()), None)
        }
        Err(e) if e.kind().is_transient() => {
            let error = e.to_string();
            let first_line = error.lines().next().unwrap_or_default();
            let told = Told {
                said: say::failed_on_the_network(what, &error),
                narration: say::network_failed(what, first_line),
            };
            (Patient::GaveUp(Event::NetworkFailed), Some(told))
        }
        Err(e) => match e.kind() {
            CallFailureKind::RateLimited { wait_secs } => {
                let error = e.to_string();
                let first_line = error.lines().next().unwrap_or_default();
                let services = services();
                let told = Told {
                    said: say::hit_rate_limit(what, &services, wait_secs, first_line),
                    narration: say::rate_limited(&services, what, first_line),
                };
                (
                    Patient::GaveUp(Event::RateLimited { wait_secs }),
                    Some(told),
                )
            }
            _ => (Patient::Done(Err(e)), None),
        },
        other => (Patient::Done(other), None),
    }
}

/// Whether a call's answer ends a sequence of calls made in one go off the runtime: a failure
/// [`judge`] turns into the network's or the shutdown's event.
pub(super) fn ends_the_sequence(kind: CallFailureKind) -> bool {
    kind == CallFailureKind::Cancelled
        || kind.is_transient()
        || matches!(kind, CallFailureKind::RateLimited { .. })
}

/// What a call off the runtime is made with: the blocking ports, the operator's stop, the
/// config (it names the services a rate limit is told of).
#[derive(Clone, Copy)]
pub(super) struct Hands<'a> {
    pub io: &'a Io,
    pub shutdown: &'a Shutdown,
    pub cfg: &'a crate::config::Config,
}

/// Makes the call once, off the runtime, and judges its answer: what a handler that may meet
/// the network does (`StepRun::patiently` for a step's), with what a failed call told.
pub(super) async fn patiently<T, E>(
    Hands { io, shutdown, cfg }: Hands<'_>,
    what: &str,
    the_call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
) -> (Patient<T, E>, Option<Told>)
where
    T: Send + 'static,
    E: std::fmt::Display + Kinded + Send + 'static,
{
    let answer = call(io, the_call).await;
    judge(shutdown, || cfg.api_services(), what, answer)
}
