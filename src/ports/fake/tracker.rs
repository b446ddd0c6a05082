//! A tracker holding issues as data, with the real selection rule.

use super::world::World;
use crate::call_failure::CallFailureKind;
use crate::ports::tracker::{Issue, Selection};
use crate::ports::tracker::{TrackerError, TrackerPort};
use std::collections::BTreeSet;

/// The fake tracker port.
#[derive(Debug, Clone)]
pub struct FakeTracker {
    world: World,
    label: String,
}

impl FakeTracker {
    /// The tracker of `world`, selecting by the label the issues of `World::new` carry.
    pub fn new(world: World) -> FakeTracker {
        let label = world
            .lock()
            .issues
            .values()
            .find_map(|i| i.labels.first().cloned())
            .unwrap_or_default();
        FakeTracker { world, label }
    }

    /// A scripted network failure, if one is due.
    fn network(&self, command: &str) -> Result<(), TrackerError> {
        if !super::world::due(
            &mut self
                .world
                .lock_for_blocking_call()
                .script
                .tracker_network_failures,
        ) {
            return Ok(());
        }
        Err(TrackerError::Command {
            command: command.to_string(),
            detail: super::world::NETWORK_DOWN.to_string(),
            kind: CallFailureKind::Network,
        })
    }

    /// A write, refused when the tracker is read-only.
    fn write(
        &self,
        number: u32,
        what: &str,
        edit: impl FnOnce(&mut Issue),
    ) -> Result<(), TrackerError> {
        self.network(&format!("{what} #{number}"))?;
        let mut w = self.world.lock_for_blocking_call();
        if w.script.tracker_read_only {
            return Err(TrackerError::File {
                path: format!("issues/{number}.json").into(),
                message: "Permission denied (os error 13)".to_string(),
                kind: CallFailureKind::Permission,
            });
        }
        let issue = w.issues.get_mut(&number).ok_or(TrackerError::NotFound {
            number,
            location: "the fake tracker".to_string(),
        })?;
        edit(issue);
        w.tracker_writes.push(format!("{what} #{number}"));
        Ok(())
    }
}

impl TrackerPort for FakeTracker {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        self.network("gh issue list")?;
        let w = self.world.lock_for_blocking_call();
        let candidates: Vec<Issue> = w
            .issues
            .values()
            .filter(|i| i.labels.contains(&self.label))
            .cloned()
            .collect();
        let mut blocks =
            |_: &crate::tracker::Scope, n: u32| Ok(w.issues.get(&n).is_some_and(|i| i.state_open));
        crate::tracker::select_from(&[], &candidates, excluded, merged, &mut blocks)
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        self.network(&format!("gh issue view {number}"))?;
        self.world
            .lock_for_blocking_call()
            .issues
            .get(&number)
            .cloned()
            .ok_or(TrackerError::NotFound {
                number,
                location: "the fake tracker".to_string(),
            })
    }
    fn close(&self, number: u32, _note: &str) -> Result<(), TrackerError> {
        self.write(number, "close", |i| i.state_open = false)
    }
    fn mark_escalated(&self, number: u32, _diagnostic: &str) -> Result<(), TrackerError> {
        self.write(number, "escalate", |i| i.escalated = true)
    }
    fn unquarantine(&self, number: u32, _note: &str) -> Result<(), TrackerError> {
        self.write(number, "release", |i| i.escalated = false)
    }
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let mut was = false;
        self.write(number, "release", |i| {
            was = std::mem::replace(&mut i.escalated, false)
        })?;
        Ok(was)
    }
    fn open_without_label(&self) -> Vec<u32> {
        let w = self.world.lock_for_blocking_call();
        w.issues
            .values()
            .filter(|i| i.state_open && !i.labels.contains(&self.label))
            .map(|i| i.number)
            .collect()
    }
    fn label(&self) -> &str {
        &self.label
    }
}
