//! What the handlers of a step's requests (`RunStep`, `LookAtCi`, `UpdateBranch`,
//! `AddressReview`) work with: the run's context, the shell, the cycle and the machine to read,
//! and where the answer's report goes. Not the claims, the fleet or the restart, and no way to
//! feed the machine: the loop does that with the event they return.

use super::cycle::Cycle;
use super::run_context::RunContext;
use super::shell::Shell;
use super::{network, Told};
use crate::machine::{Core, Report};
use crate::ports::World;
use crate::step::Step;
use crate::steps::checks::StepContext;

/// A step's handlers' parts, borrowed from the driver for one request.
pub(super) struct StepRun<'a> {
    /// The run's givens; a review round swaps in its agent's config while it runs.
    pub run: &'a mut RunContext,
    pub shell: &'a mut Shell,
    pub cycle: &'a mut Cycle,
    /// The machine, to read its counters and the failure a repair is told of.
    pub core: &'a Core,
    /// What the answer reports beyond its event (see `Driver::report`).
    pub report: &'a mut Report,
    /// This driver's worker number in a fleet, for the log's fields.
    pub worker: Option<u32>,
}

impl StepRun<'_> {
    /// How the tracker and the forge name issues and changes.
    pub fn refs(&self) -> crate::config::IssueRefs {
        self.run.refs()
    }

    /// One entry of the orchestration log, written at once: a step narrates while it runs
    /// (the attempt's start before the agent's minutes).
    pub fn log(&self, line: &str) {
        let log = self.shell.logs.orchestration_log();
        let state = self.core.state();
        crate::logging::orchestrate(
            crate::logging::Origin {
                log: &log,
                worker: self.worker,
                issue: (self.cycle.issue.number != 0).then_some(self.cycle.issue.number),
                step: state.step().map(|step| self.step_name(step)),
            },
            line,
        );
    }

    /// What an attempt of `step` is told as (`report::step_name`).
    pub fn step_name(&self, step: Step) -> &'static str {
        super::report::step_name(step, self.core.runner().round_pending())
    }

    /// What the answer says, for the diagnostics.
    pub fn say(&mut self, text: String) {
        self.report.said = Some(text);
    }

    /// What the answer has said so far.
    pub fn just_said(&self) -> &str {
        self.report.said.as_deref().unwrap_or_default()
    }

    /// Writes the state file; a failure is narrated.
    pub fn save_state(&mut self) {
        if let Some(line) = self.shell.save_state(&self.run.cfg.project_path) {
            self.log(&line);
        }
    }

    /// What the step's checks are told of the cycle.
    pub fn step_context(&self) -> StepContext {
        self.cycle.step_context(self.core)
    }

    /// Keeps what a function told while it worked: its words, its narration.
    pub fn keep(&mut self, told: Told) {
        if let Some(said) = told.said {
            self.say(said);
        }
        for line in told.narration {
            self.log(&line);
        }
    }

    /// Makes the call once, off the runtime, and judges its answer (`network::patiently`),
    /// with what a failed call told said and narrated.
    pub async fn patiently<T, E>(
        &mut self,
        what: &str,
        call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
    ) -> network::Patient<T, E>
    where
        T: Send + 'static,
        E: std::fmt::Display + crate::call_failure::Kinded + Send + 'static,
    {
        let hands = (&self.shell.io, &self.shell.shutdown, &self.run.cfg);
        let (patient, failed) = network::patiently(hands, what, call).await;
        let mut told = Told::default();
        told.told(failed);
        self.keep(told);
        patient
    }

    /// What the answer of a call made off the runtime means, with what a failed call told
    /// said and narrated.
    pub fn judge<T, E: std::fmt::Display + crate::call_failure::Kinded>(
        &mut self,
        what: &str,
        answer: Result<T, E>,
    ) -> network::Patient<T, E> {
        let cfg = &self.run.cfg;
        let (patient, failed) =
            network::judge(&self.shell.shutdown, || cfg.api_services(), what, answer);
        let mut told = Told::default();
        told.told(failed);
        self.keep(told);
        patient
    }
}
