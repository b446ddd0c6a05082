//! The operator's request to stop (SIGINT, SIGTERM, SIGHUP), as one value every wait can
//! watch: the run's child of the process's stop token (`process::StopToken`), which records
//! which signal came and wakes whoever is sleeping or running an agent.

use crate::machine::{Event, Signal, Usage};
use crate::process::StopToken;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use tokio::sync::watch;

/// Cloneable handle; all clones see the same request.
#[derive(Debug, Clone)]
pub(crate) struct Shutdown {
    stop: StopToken,
}

impl Shutdown {
    /// Stopped by a signal to the process, or by this run alone ([`Shutdown::request`]).
    pub(super) fn new() -> Self {
        Shutdown {
            stop: StopToken::signals().child(),
        }
    }

    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP (a closed terminal or a dropped
    /// ssh session shuts down cleanly, as on SIGTERM).
    pub(super) fn watch_signals(&self) -> Result<(), String> {
        use tokio::signal::unix::{signal, SignalKind};
        // Stops the process group of a git, gh or CI call under way, even while this thread
        // is blocked waiting for it (the tasks below only run once it returns).
        crate::process::install_stop_handler()
            .map_err(|e| format!("cannot install signal handler: {e}"))?;
        for (kind, sig) in [
            (SignalKind::interrupt(), SIGINT),
            (SignalKind::terminate(), SIGTERM),
            (SignalKind::hangup(), SIGHUP),
        ] {
            let mut stream =
                signal(kind).map_err(|e| format!("cannot install signal handler: {e}"))?;
            // The handler set the token; this wakes its waiters.
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    StopToken::signals().stop_for(sig);
                }
            });
        }
        Ok(())
    }

    /// Records `signal` and wakes every waiter of this run.
    pub(super) fn request(&self, signal: Signal) {
        self.stop.stop_for(match signal {
            Signal::Int => SIGINT,
            Signal::Hup => SIGHUP,
            Signal::Term => SIGTERM,
        });
    }

    /// The signal that asked for the shutdown, if one did: this run's request, or a signal to
    /// the process.
    pub(super) fn requested(&self) -> Option<Signal> {
        self.stop.signal().map(|sig| match sig {
            SIGINT => Signal::Int,
            SIGHUP => Signal::Hup,
            _ => Signal::Term,
        })
    }

    /// The machine's event for the request (SIGTERM when asked without a signal), when no
    /// call it stopped had spent anything.
    pub(super) fn event(&self) -> Event {
        self.event_after(Usage::default())
    }

    /// The machine's event for the request that stopped a call which had spent `usage`.
    pub(super) fn event_after(&self, usage: Usage) -> Event {
        Event::ShutdownRequested {
            signal: self.requested().unwrap_or(Signal::Term),
            usage,
        }
    }

    /// Resolves once a shutdown is requested (at once if it already was).
    pub(super) async fn wait(&self) {
        self.stop.stopped().await;
    }

    /// The receiver the agent runner watches to stop its process group.
    pub(super) fn receiver(&self) -> watch::Receiver<bool> {
        self.stop.receiver()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_latest_signal_is_the_one_recorded_and_every_clone_wakes() {
        let shutdown = Shutdown::new();
        let other = shutdown.clone();
        assert_eq!(shutdown.requested(), None);
        let waiter = tokio::spawn(async move { other.wait().await });
        shutdown.request(Signal::Hup);
        shutdown.request(Signal::Int);
        waiter.await.expect("the waiter wakes");
        assert_eq!(shutdown.requested(), Some(Signal::Int));
        assert!(*shutdown.receiver().borrow());
        assert!(matches!(
            shutdown.event(),
            Event::ShutdownRequested {
                signal: Signal::Int,
                ..
            }
        ));
    }
}
