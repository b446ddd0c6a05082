//! The notifier port: messages to people (chat, webhook, command). Sending never blocks and
//! never fails the run: delivery problems are the adapter's to log.

use sdlc_machine::severity::Severity;
use std::time::Duration;

/// Where the runner tells people what happens.
pub trait NotifierPort: Send + Sync {
    /// Queues `message` for every channel at `severity` (redacted and deduplicated by the
    /// adapter). Returns at once.
    fn send(&self, severity: Severity, message: &str);
    /// Waits until queued messages are delivered or `timeout` passes (before the runner exits).
    fn flush(&self, timeout: Duration);
}
