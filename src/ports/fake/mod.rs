//! In-memory fakes of every port, for running the driver in-process (`driver::run_on_ports`)
//! in milliseconds: no git, gh or agent process, no real sleep.
//!
//! Git, the forge, the tracker and the agent share one [`World`]: the agent's work shows in
//! the fake git (a branch, spec files, commits), a builtin merge in the forge and in origin's
//! main, a person's close in the tracker. Faults are scripted in [`Script`]: a read-only
//! tracker, network failures, push rejections, lost push races, a person closing an issue.

mod agent;
mod clock;
mod forge;
mod git;
mod notifier;
mod tracker;
mod world;

pub use agent::{FakeAgent, Outcome};
pub use clock::FakeClock;
pub use forge::FakeForge;
pub use git::FakeGit;
pub use notifier::RecordingNotifier;
pub use tracker::FakeTracker;
pub use world::{Branch, Script, World, WorldState};

use super::Ports;
use std::path::Path;
use std::sync::Arc;

/// Ports on `world`, with the runner's state under `state_dir` (journal, lock); the returned
/// clock and notifier are the ones the ports hold, for the test to read.
pub fn ports(world: &World, state_dir: &Path) -> (Ports, FakeClock, RecordingNotifier) {
    let clock = FakeClock::default();
    let notifier = RecordingNotifier::default();
    let ports = Ports {
        git: Box::new(FakeGit::new(world.clone(), state_dir)),
        forge: Box::new(FakeForge::new(world.clone())),
        tracker: Box::new(FakeTracker::new(world.clone())),
        agent: Box::new(FakeAgent::new(world.clone())),
        notifier: Box::new(notifier.clone()),
        clock: Arc::new(clock.clone()),
    };
    (ports, clock, notifier)
}
