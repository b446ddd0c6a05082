//! What the handlers of a step's requests (`RunStep`, `LookAtCi`, `UpdateBranch`,
//! `AddressReview`) work with, in parts: the run's context, the shell, the cycle and the machine
//! to read, and the `Voice` their words and narration go to. Not the claims, the fleet or the
//! restart, and no way to feed the machine: the loop does that with the event they return.
//! A helper that only narrates takes the `Voice`; one that only makes a call takes `Calls` and
//! the `Voice`; one that only reads facts takes the part it reads.

use super::answer::{Answer, Narrator};
use super::cycle::Cycle;
use super::run_context::RunContext;
use super::shell::Shell;
use super::shutdown::Shutdown;
use super::{network, Told};
use crate::failure::FailureClass;
use crate::journal::FailureDetail;
use crate::machine::{Core, Event, Report};
use crate::ports::{Io, World};
use crate::step::Step;

/// A step's handlers' parts, borrowed from the driver for one request.
pub(super) struct StepRun<'a> {
    /// The run's givens.
    pub run: &'a RunContext,
    pub shell: &'a mut Shell,
    pub cycle: &'a mut Cycle,
    /// The machine, to read its counters and the failure a repair is told of.
    pub core: &'a Core,
    /// Where the answer's words and the step's narration go.
    pub voice: Voice<'a>,
}

/// What a step's narration and words need: where and as whom a line is logged (the cycle's
/// issue as `StepRun::know` last set it, the machine's step), the machine's names of steps,
/// and what the answer reports beyond its event (`Report`: the words for the diagnostics, a
/// `StepFailed`'s failure context), handed out with the answer.
pub(super) struct Voice<'a> {
    pub narrator: Narrator,
    core: &'a Core,
    report: Report,
}

impl<'a> Voice<'a> {
    /// The voice of a step's request: `narrator` as the loop built it for the request.
    pub fn new(narrator: Narrator, core: &'a Core) -> Voice<'a> {
        Voice {
            narrator,
            core,
            report: Report::default(),
        }
    }

    /// The step's answer: `event`, with what the voice kept of what was said and failed
    /// (its narration was logged as it was said).
    pub fn answer(&mut self, event: Event) -> Answer {
        let report = std::mem::take(&mut self.report);
        Answer {
            event,
            said: report.said,
            failure: report.failure,
            narration: Vec::new(),
        }
    }

    /// One entry of the orchestration log, written at once: a step narrates while it runs
    /// (the attempt's start before the agent's minutes).
    pub fn log(&self, line: &str) {
        self.narrator.log(line);
    }

    /// What an attempt of `step` is told as (`report::step_name`).
    pub fn step_name(&self, step: Step) -> &'static str {
        crate::report::step_name(step, self.core.runner().round_pending())
    }

    /// The step the machine is at, if any.
    pub fn at(&self) -> Option<Step> {
        self.core.state().step()
    }

    /// What the answer says, for the diagnostics.
    pub fn say(&mut self, text: String) {
        self.report.said = Some(text);
    }

    /// What the answer has said so far.
    pub fn just_said(&self) -> &str {
        self.report.said.as_deref().unwrap_or_default()
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

    /// Keeps what a failed call told (`network::judge`), said and narrated.
    fn keep_failed(&mut self, failed: Option<network::Told>) {
        let mut told = Told::default();
        told.told(failed);
        self.keep(told);
    }

    /// The context journaled with the `StepFailed` about to be recorded and given to the
    /// next repair attempt. The journal is a sink like any other: no secret the agent
    /// printed goes in.
    pub fn remember_failure(
        &mut self,
        step: Step,
        class: FailureClass,
        summary: &str,
        excerpt: &str,
    ) {
        self.report.failure = Some(FailureDetail {
            step,
            class,
            summary: crate::redact::redact(summary),
            excerpt: crate::redact::redact(excerpt),
        });
    }
}

/// What a call off the runtime is made with: the blocking ports, the operator's stop, the
/// run's givens (its config names the services a rate limit is told of).
#[derive(Clone, Copy)]
pub(super) struct Calls<'a> {
    pub io: &'a Io,
    pub shutdown: &'a Shutdown,
    pub run: &'a RunContext,
}

impl Calls<'_> {
    /// Makes the call once, off the runtime, and judges its answer (`network::patiently`),
    /// with what a failed call told said and narrated by `voice`.
    pub async fn patiently<T, E>(
        self,
        voice: &mut Voice<'_>,
        what: &str,
        call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
    ) -> network::Patient<T, E>
    where
        T: Send + 'static,
        E: std::fmt::Display + crate::call_failure::Kinded + Send + 'static,
    {
        let hands = network::Hands {
            io: self.io,
            shutdown: self.shutdown,
            cfg: &self.run.cfg,
        };
        let (patient, failed) = network::patiently(hands, what, call).await;
        voice.keep_failed(failed);
        patient
    }

    /// What the answer of a call made off the runtime means, with what a failed call told
    /// said and narrated by `voice`.
    pub fn judge<T, E: std::fmt::Display + crate::call_failure::Kinded>(
        self,
        voice: &mut Voice<'_>,
        what: &str,
        answer: Result<T, E>,
    ) -> network::Patient<T, E> {
        let cfg = &self.run.cfg;
        let (patient, failed) = network::judge(self.shutdown, || cfg.api_services(), what, answer);
        voice.keep_failed(failed);
        patient
    }
}

impl<'a> StepRun<'a> {
    /// The parts a call is made with, the cycle to read, and the voice that tells what the
    /// call met.
    pub fn calls(&mut self) -> (Calls<'_>, &Cycle, &mut Voice<'a>) {
        let calls = Calls {
            io: &self.shell.io,
            shutdown: &self.shell.shutdown,
            run: self.run,
        };
        (calls, &*self.cycle, &mut self.voice)
    }

    /// The cycle's issue facts for `issue` (`Cycle::know`), and the narration's issue with
    /// them.
    pub async fn know(&mut self, issue: u32) {
        self.cycle.know(&self.shell.io, issue).await;
        let number = self.cycle.issue.number;
        self.voice.narrator.issue = (number != 0).then_some(number);
    }

    /// Makes the call once, off the runtime, and judges its answer (`Calls::patiently`).
    pub async fn patiently<T, E>(
        &mut self,
        what: &str,
        call: impl FnOnce(&World) -> Result<T, E> + Send + 'static,
    ) -> network::Patient<T, E>
    where
        T: Send + 'static,
        E: std::fmt::Display + crate::call_failure::Kinded + Send + 'static,
    {
        let (calls, _, voice) = self.calls();
        calls.patiently(voice, what, call).await
    }

    /// Writes the state file; a failure is narrated.
    pub fn save_state(&mut self) {
        if let Some(line) = self.shell.save_state(&self.run.cfg.project_path) {
            self.voice.log(&line);
        }
    }
}
