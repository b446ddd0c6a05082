//! What every request's handler is given (`Context`): the loop's parts, borrowed for one
//! request. Every handler has one shape, `handler(Context, request) -> answer`; what it uses
//! of the context it names where it begins, and its helpers take only those parts.

use super::answer::Narrator;
use super::cycle::Cycle;
use super::fleet_link::Link;
use super::keeper::ClaimKeeper;
use super::network;
use super::run_context::RunContext;
use super::shell::Shell;
use super::step_run::{StepRun, Voice};
use crate::machine::{Core, State};

/// The parts of the driver a request's handler works with, borrowed for one request.
pub(super) struct Context<'a> {
    /// The run's givens: config, flags, session, runner directory.
    pub run: &'a RunContext,
    /// The ports and the runner's own files.
    pub shell: &'a mut Shell,
    /// What the driver knows of the issue under way.
    pub cycle: &'a mut Cycle,
    /// The machine, to read its counters (the loop alone feeds it).
    pub core: &'a Core,
    /// This runner's issue claims, when it runs with `--worker-id`.
    pub claims: Option<&'a mut ClaimKeeper>,
    /// The fleet this driver is a worker of (`run --workers N`).
    pub fleet: Option<&'a Link>,
    /// The state the machine decided the request's batch in.
    pub state: &'a State,
    /// Where and as whom the handler logs a line at once.
    pub narrator: Narrator,
}

impl<'a> Context<'a> {
    /// The parts a step's handlers work with (`RunStep`, `LookAtCi`, `UpdateBranch`,
    /// `AddressReview`): not the claims, the fleet or the state.
    pub fn step_run(self) -> StepRun<'a> {
        StepRun {
            run: self.run,
            shell: self.shell,
            cycle: self.cycle,
            core: self.core,
            voice: Voice::new(self.narrator, self.core),
        }
    }
}

/// What a call off the runtime is made with: the run's blocking ports, stop and config.
pub(super) fn hands<'h>(run: &'h RunContext, shell: &'h Shell) -> network::Hands<'h> {
    network::Hands {
        io: &shell.io,
        shutdown: &shell.shutdown,
        cfg: &run.cfg,
    }
}
