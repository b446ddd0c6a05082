//! In-memory fakes of every port, for running the driver in-process (`launch::run_on_ports`)
//! in milliseconds: no git, gh or agent process, no real sleep.
//!
//! Git, the forge, the tracker and the agent share one [`World`]: the agent's work shows in
//! the fake git (a branch, spec files, commits), a builtin merge in the forge and in origin's
//! main, a person's close in the tracker. Faults are scripted in [`Script`]: a read-only
//! tracker, network failures, push rejections, lost push races, a person closing an issue.

mod agent;
mod claims;
mod clock;
mod forge;
mod git;
mod notifier;
mod tracker;
mod world;

pub use agent::{FakeAgent, Outcome};
pub use claims::FakeClaims;
pub use clock::FakeClock;
pub use forge::FakeForge;
pub use git::FakeGit;
pub use notifier::RecordingNotifier;
pub use tracker::FakeTracker;
pub use world::{Branch, Script, World, WorldState};

use super::Ports;
use std::path::Path;
use std::sync::Arc;

/// The fakes a test keeps a hold of while the driver holds the same ones as its ports.
#[derive(Debug, Clone)]
pub struct Handles {
    /// Every wait the driver asked for.
    pub clock: FakeClock,
    /// Every message sent.
    pub notifier: RecordingNotifier,
    /// Script its outcomes before the run.
    pub agent: FakeAgent,
    /// The claims on record: read them, or plant another runner's.
    pub claims: FakeClaims,
}

/// Ports on `world`, with the runner's state under `state_dir` (journal, lock), and the
/// handles of the fakes the test reads or scripts.
pub fn ports(world: &World, state_dir: &Path) -> (Ports, Handles) {
    let handles = Handles {
        clock: FakeClock::default(),
        notifier: RecordingNotifier::default(),
        agent: FakeAgent::new(world.clone()),
        claims: FakeClaims::new(),
    };
    let ports = Ports {
        git: Box::new(FakeGit::new(world.clone(), state_dir)),
        forge: Box::new(FakeForge::new(world.clone())),
        tracker: Box::new(FakeTracker::new(world.clone())),
        claims: Some(Box::new(handles.claims.clone())),
        agent: Box::new(handles.agent.clone()),
        notifier: Box::new(handles.notifier.clone()),
        clock: Arc::new(handles.clock.clone()),
    };
    (ports, handles)
}
