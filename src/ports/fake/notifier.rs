//! A notifier that keeps every message.

use crate::ports::NotifierPort;
use sdlc_machine::severity::Severity;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records every message sent; clones share the record.
#[derive(Debug, Clone, Default)]
pub struct RecordingNotifier {
    sent: Arc<Mutex<Vec<(Severity, String)>>>,
}

impl RecordingNotifier {
    /// Every message sent, in order.
    pub fn sent(&self) -> Vec<(Severity, String)> {
        self.sent.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

impl NotifierPort for RecordingNotifier {
    fn send(&self, severity: Severity, message: &str) {
        if let Ok(mut g) = self.sent.lock() {
            g.push((severity, message.to_string()));
        }
    }

    fn flush(&self, _timeout: Duration) {}
}
