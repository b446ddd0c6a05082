//! The production [`TrackerPort`]: the configured tracker.

use super::{Issue, IssueText, Selection, Tracker, TrackerError};
use crate::ports::TrackerPort;
use std::collections::BTreeSet;

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
