//! The clock port: "now" and every wait the driver makes. The driver never calls
//! `tokio::time::sleep` itself, so a fake clock makes a run that waits an hour end in
//! milliseconds, and a test can read every wait that was asked for.

use super::BoxFuture;
use std::time::Duration;

/// The time and the waits of one run.
pub trait Clock: Send + Sync {
    /// The wall-clock time now (journal stamps, "until" in messages, claim leases).
    fn now(&self) -> chrono::DateTime<chrono::Utc>;
    /// A future that completes after `duration`. The driver races it against a stop request,
    /// so it needs no cancellation of its own.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    /// A monotonic reading: how long an attempt or a runner action took is the difference of
    /// two (it feeds the time budget, so a test's fake clock decides it too).
    fn instant(&self) -> std::time::Instant;
}

/// The production clock: the system time and tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }

    fn instant(&self) -> std::time::Instant {
        std::time::Instant::now()
    }
}
