//! A clock whose waits end at once and are recorded; "now" moves by each wait.

use crate::ports::{BoxFuture, Clock};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records every wait asked for; clones share the record.
#[derive(Debug, Clone)]
pub struct FakeClock {
    inner: Arc<Mutex<(chrono::DateTime<chrono::Utc>, Vec<Duration>)>>,
    /// Where its monotonic readings start; they move by each wait, like "now".
    origin: std::time::Instant,
}

impl Default for FakeClock {
    fn default() -> FakeClock {
        let start = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        FakeClock {
            inner: Arc::new(Mutex::new((start, Vec::new()))),
            origin: std::time::Instant::now(),
        }
    }
}

impl FakeClock {
    /// Every wait asked for, in order.
    pub fn waits(&self) -> Vec<Duration> {
        self.inner.lock().map(|g| g.1.clone()).unwrap_or_default()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.inner.lock().map(|g| g.0).unwrap_or_default()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        if let Ok(mut g) = self.inner.lock() {
            g.1.push(duration);
            g.0 += chrono::TimeDelta::from_std(duration).unwrap_or_default();
        }
        Box::pin(std::future::ready(()))
    }

    fn instant(&self) -> std::time::Instant {
        let waited: Duration = self
            .inner
            .lock()
            .map(|g| g.1.iter().sum())
            .unwrap_or_default();
        self.origin + waited
    }
}
