//! The one stop token of the runner: a request to stop, set once by whoever asks (the signal
//! task of a run, a server's or a notifier's owner, the demo), seen by every clone at once,
//! awaited by async code and polled by threads. The run's shutdown (`driver/shutdown.rs`),
//! the HTTP server, the notifier's delivery thread and the demo's reviewer each hold one.
//!
//! A signal handler proper only sets an atomic (`stop.rs`, for the children under way); the
//! run's signal task turns the same signal into a stop of its token.

use std::sync::Arc;
use tokio::sync::watch;

/// Cloneable; all clones share one request.
#[derive(Debug, Clone)]
pub struct StopToken {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for StopToken {
    fn default() -> Self {
        StopToken::new()
    }
}

impl StopToken {
    /// A token nobody has stopped yet.
    pub fn new() -> StopToken {
        StopToken {
            tx: Arc::new(watch::channel(false).0),
        }
    }

    /// Asks every holder to stop; asking again changes nothing.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once a stop is asked for (at once if it already was).
    pub async fn stopped(&self) {
        let mut rx = self.tx.subscribe();
        // The sender lives as long as this token, so the wait ends only on a stop.
        let _ = rx.wait_for(|stopped| *stopped).await;
    }

    /// A receiver that turns `true` on the stop, for a callee that watches a channel.
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
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
}
