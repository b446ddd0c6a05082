//! Linear as the runner's tracker: [`Linear`] implements the tracker port (its claims, as
//! comments, are `claims.rs`).

use super::tracker::Linear;
use crate::ports::tracker::{Issue, IssueText, Selection, TrackerError};
use crate::ports::TrackerPort;
use std::collections::BTreeSet;

impl TrackerPort for Linear {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        Linear::select(self, excluded, merged)
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        Linear::get(self, number)
    }
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        Linear::text(self, number)
    }
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        Linear::close(self, number, note)
    }
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        Linear::mark_escalated(self, number, diagnostic)
    }
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        Linear::unquarantine(self, number, note)
    }
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        Linear::lift_quarantine(self, number)
    }
    fn open_without_label(&self) -> Vec<u32> {
        Vec::new()
    }
    fn label(&self) -> &str {
        &self.label
    }
}
