//! The tracker port: where issues are selected, read, closed and quarantined. Its error is
//! [`TrackerError`], whose kind (`Kinded::kind`) the adapter decided when it made it: the
//! driver turns a transient kind into `NetworkFailed` and every other failed write into
//! `TrackerWriteFailed`, never by reading the message.

pub use crate::tracker::TrackerError;
use crate::tracker::{Issue, IssueText, Selection, Tracker};
use std::collections::BTreeSet;

/// The issue tracker of the project.
pub trait TrackerPort: Send + Sync {
    /// The next issue to work on, excluding `excluded` on top of the tracker's own durable
    /// marks (escalated, closed, blocked by an open dependency); `merged` (issues the runner
    /// merged) are done as dependencies whatever the tracker shows.
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError>;
    /// One issue as the tracker shows it now (a person may have closed or relabelled it).
    fn get(&self, number: u32) -> Result<Issue, TrackerError>;
    /// The issue's whole text for the agent (title, body, and comments where the tracker
    /// has them).
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        self.get(number).map(|i| IssueText::of(&i))
    }
    /// Records that the issue is done (merged).
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError>;
    /// Quarantines the issue durably with the diagnostic.
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError>;
    /// Lifts the quarantine the runner put on the issue, with a note saying why.
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError>;
    /// Open issues that lack the selection label (said, never selected).
    fn open_without_label(&self) -> Vec<u32>;
    /// The label selection requires.
    fn label(&self) -> &str;
    /// Whether the issue carries the selection label.
    fn selectable(&self, issue: &Issue) -> bool {
        issue.labels.iter().any(|l| l == self.label())
    }
    /// The command that releases a quarantined issue, for messages.
    fn release_hint(&self, number: u32, config: &std::path::Path) -> String {
        format!("sdlc-runner release {number} --config {}", config.display())
    }
}

impl TrackerPort for Tracker {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        Tracker::select(self, excluded, merged)
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        Tracker::get(self, number)
    }
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        Tracker::text(self, number)
    }
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        Tracker::close(self, number, note)
    }
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        Tracker::mark_escalated(self, number, diagnostic)
    }
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        Tracker::unquarantine(self, number, note)
    }
    fn open_without_label(&self) -> Vec<u32> {
        Tracker::open_without_label(self)
    }
    fn label(&self) -> &str {
        Tracker::label(self)
    }
    fn selectable(&self, issue: &Issue) -> bool {
        Tracker::selectable(self, issue)
    }
    fn release_hint(&self, number: u32, config: &std::path::Path) -> String {
        Tracker::release_hint(self, number, config)
    }
}
