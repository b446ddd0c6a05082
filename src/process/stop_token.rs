//! The one stop token of the runner: a request to stop, set once by whoever asks, seen by
//! every clone at once, awaited by async code and polled by threads. The process has one
//! root, [`StopToken::signals`], which the signal handler sets (SIGINT, SIGTERM, SIGHUP: two
//! atomic stores, async-signal-safe) and which stops the children under way (`stop.rs`); a run
//! holds a [`StopToken::child`] of it (`driver/shutdown.rs`), stopped by a signal or by the run
//! itself (a fleet that halted) without stopping the process's other runs. The HTTP server,
//! the notifier's delivery thread and the demo's reviewer each hold a token of their own that
//! their owner stops when it lets them go: they must outlive the run's stop (the notice of a
//! shutdown is still delivered, the status page still served while the run winds down).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use tokio::sync::watch;

/// Cloneable; all clones share one request.
#[derive(Debug, Clone)]
pub struct StopToken {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Wakes whoever awaits the stop.
    tx: watch::Sender<bool>,
    /// Set with the request, by [`StopToken::stop`] or by the signal handler.
    stopped: Arc<AtomicBool>,
    /// The number of the signal that asked, 0 when none did.
    signal: Arc<AtomicUsize>,
    /// A stop of the parent is a stop of this token.
    parent: Option<StopToken>,
}

/// The process's token, set by its signal handler.
static SIGNALS: LazyLock<StopToken> = LazyLock::new(StopToken::new);

impl Default for StopToken {
    fn default() -> Self {
        StopToken::new()
    }
}

impl StopToken {
    /// A token nobody has stopped yet.
    pub fn new() -> StopToken {
        StopToken::below(None)
    }

    fn below(parent: Option<StopToken>) -> StopToken {
        StopToken {
            inner: Arc::new(Inner {
                tx: watch::channel(false).0,
                stopped: Arc::default(),
                signal: Arc::default(),
                parent,
            }),
        }
    }

    /// The process's token: stopped by SIGINT, SIGTERM or SIGHUP once
    /// [`install_stop_handler`](super::install_stop_handler) ran.
    pub fn signals() -> &'static StopToken {
        &SIGNALS
    }

    /// A token stopped with this one, and also on its own without stopping this one.
    pub fn child(&self) -> StopToken {
        StopToken::below(Some(self.clone()))
    }

    /// The atomics the signal handler sets: the request, and the signal's number.
    pub(super) fn handler_targets(&self) -> (Arc<AtomicBool>, Arc<AtomicUsize>) {
        (
            Arc::clone(&self.inner.stopped),
            Arc::clone(&self.inner.signal),
        )
    }

    /// Asks every holder to stop; asking again changes nothing.
    pub fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.tx.send_replace(true);
    }

    /// [`StopToken::stop`], recording `signal` (a signal's number) as what asked; the latest
    /// one asking is the one recorded.
    pub fn stop_for(&self, signal: i32) {
        if let Ok(n) = usize::try_from(signal) {
            self.inner.signal.store(n, Ordering::SeqCst);
        }
        self.stop();
    }

    /// Whether a stop was asked for, of this token or of one above it.
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
            || self
                .inner
                .parent
                .as_ref()
                .is_some_and(StopToken::is_stopped)
    }

    /// The signal that asked for the stop, if one did: this token's own, else one above it.
    pub fn signal(&self) -> Option<i32> {
        let own = self.inner.stopped.load(Ordering::SeqCst)
            && self.inner.signal.load(Ordering::SeqCst) != 0;
        let own = own
            .then(|| i32::try_from(self.inner.signal.load(Ordering::SeqCst)).ok())
            .flatten();
        own.or_else(|| self.inner.parent.as_ref().and_then(StopToken::signal))
    }

    /// Resolves once a stop is asked for (at once if it already was). A stop the signal
    /// handler made is seen once the signal's task wakes the process's token
    /// (`driver/shutdown.rs`).
    pub async fn stopped(&self) {
        let own = async {
            let mut rx = self.inner.tx.subscribe();
            // The sender lives as long as this token, so the wait ends only on a stop.
            let _ = rx.wait_for(|stopped| *stopped).await;
        };
        match &self.inner.parent {
            None => own.await,
            Some(parent) => {
                let above = Box::pin(parent.stopped());
                tokio::select! {
                    () = own => {}
                    () = above => {}
                }
            }
        }
    }

    /// A receiver that turns `true` on the stop, for a callee that watches a channel. For a
    /// child token, a task of the current runtime forwards the stop of the tokens above
    /// (called outside a runtime, the receiver sees this token's own stop only).
    pub fn receiver(&self) -> watch::Receiver<bool> {
        let Some(_) = &self.inner.parent else {
            return self.inner.tx.subscribe();
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self.inner.tx.subscribe();
        };
        let (tx, rx) = watch::channel(self.is_stopped());
        let this = self.clone();
        runtime.spawn(async move {
            tokio::select! {
                () = this.stopped() => {
                    tx.send_replace(true);
                }
                // Nobody watches any more.
                () = tx.closed() => {}
            }
        });
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_clone_sees_one_stop_and_every_waiter_wakes() {
        let token = StopToken::new();
        let other = token.clone();
        let rx = token.receiver();
        assert!(!other.is_stopped() && !*rx.borrow());
        let waiter = tokio::spawn({
            let other = other.clone();
            async move { other.stopped().await }
        });
        token.stop();
        token.stop();
        waiter.await.expect("the waiter wakes");
        assert!(other.is_stopped() && *rx.borrow());
        // A wait begun after the stop ends at once.
        other.stopped().await;
    }

    #[tokio::test]
    async fn a_child_stops_with_its_parent_and_alone_without_it() {
        let root = StopToken::new();
        let run = root.child();
        let other = root.child();
        let rx = run.receiver();
        run.stop_for(1);
        assert!(run.is_stopped() && !root.is_stopped() && !other.is_stopped());
        assert_eq!(run.signal(), Some(1));
        root.stop_for(15);
        other.stopped().await;
        assert_eq!(other.signal(), Some(15));
        assert_eq!(run.signal(), Some(1));
        let mut rx = rx;
        let _ = rx.wait_for(|stopped| *stopped).await;
    }
}
