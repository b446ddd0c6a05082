//! How urgent a notification is. The shell's notifier delivers by it and the config's
//! `notify.minSeverity` filters by it; it lives in the core so that the config, which stands
//! below the notifier, can name it.

use serde::{Deserialize, Serialize};

/// How urgent a message is: info for progress, warning for retries/bounces/escalations,
/// alert for halts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Progress: a step started or finished, an issue merged.
    Info,
    /// Something went wrong but the run goes on: a retry, a bounce, an escalation.
    Warning,
    /// The run stopped and needs a person: a halt.
    Alert,
}

impl Severity {
    /// Every severity, least urgent first.
    pub const ALL: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Alert];

    /// Lower-case name, as passed in `SDLC_SEVERITY` to a command channel and written in the
    /// config.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Alert => "alert",
        }
    }

    /// The prefix every delivered message starts with.
    pub const fn prefix(self) -> &'static str {
        match self {
            Severity::Info => "[INFO]",
            Severity::Warning => "[WARNING]",
            Severity::Alert => "[ALERT]",
        }
    }
}
