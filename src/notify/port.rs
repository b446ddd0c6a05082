//! The production [`NotifierPort`]: the [`Notifier`] and its channels.

use super::{Notifier, Severity};
use crate::ports::NotifierPort;
use std::time::Duration;

impl NotifierPort for Notifier {
    fn send(&self, severity: Severity, message: &str) {
        Notifier::send(self, severity, message)
    }

    fn flush(&self, timeout: Duration) {
        Notifier::flush(self, timeout)
    }
}
