//! The pure core (docs/counters-and-bounds.md): a hierarchical statig machine fed events, returning effects.
//! Nothing in here performs IO, reads a clock or draws a random number.

mod batch;
pub mod bounds;
#[doc(hidden)]
pub mod doc_support;
mod sm;
#[cfg(test)]
mod tests;
mod types;

pub use batch::{Batch, NotABatch, Reply};
pub use sm::{
    state_of as state_of_step, FailuresSeen, LastFailure, Runner, Spend, State, Stats, Superstate,
};
pub use types::*;

use crate::failure::FailureDetail;
use crate::step::Step;
use statig::blocking::{InitializedStateMachine, IntoStateMachineExt};

/// The machine plus a reusable effect buffer: the only API the driver sees.
pub struct Core {
    sm: InitializedStateMachine<Runner>,
    fx: sm::Fx,
    /// The last classified failure of each step in the current cycle, as reported with its
    /// `StepFailed`: the context of the step's next repair attempt and of the decision file.
    /// Kept beside the statig storage because it is text: the state search never sees it.
    details: [Option<FailureDetail>; Step::COUNT],
    /// What the last attempt or failed runner call said, as reported with its event: the
    /// tail the halt and escalation diagnostics show.
    last_words: String,
    /// The request held back until the claim on the issue under way is renewed
    /// (`RenewClaim`): issued on the renewal's answer, dropped on any other event (a restart
    /// issues its requests anew, told that this one never went out; a lost claim or a
    /// signal stops the run).
    held_back: Option<Effect>,
}

/// What an event reports beyond its `Copy` fields: text the machine keeps for the driver's
/// prompts and diagnostics but never decides by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The context of the failure a `StepFailed` reports.
    pub failure: Option<FailureDetail>,
    /// What the attempt or the failed call said (`None`: it said nothing new).
    pub said: Option<String>,
}

impl Clone for Core {
    fn clone(&self) -> Self {
        Core {
            sm: self.sm.clone(),
            fx: sm::Fx::default(),
            details: self.details.clone(),
            last_words: self.last_words.clone(),
            held_back: self.held_back,
        }
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("state", self.state())
            .field("runner", self.runner())
            .finish()
    }
}

impl Core {
    /// A machine in `Selecting` with every counter at zero: feed it `Start` to begin.
    pub fn new(limits: Limits, mode: Mode) -> Self {
        let mut fx = sm::Fx::default();
        let sm = Runner::new(limits, mode)
            .uninitialized_state_machine()
            .init_with_context(&mut fx);
        fx.clear();
        Core {
            sm,
            fx,
            details: Default::default(),
            last_words: String::new(),
            held_back: None,
        }
    }

    /// Feed one event; the reply is valid until the next call.
    ///
    /// An answer gets a [`Batch`]: side effects, then exactly one request (`Exit` is one).
    /// The driver performs them in order and takes the request's answer as the next event.
    /// An event that answers nothing the machine waits for is [`Reply::Ignored`].
    ///
    /// # Panics
    ///
    /// When the machine's handlers push effects that are no batch ([`NotABatch`]): the
    /// machine's bug, refused before anything is journaled or performed. The properties and
    /// the diagram exploration feed every event to every state they reach, so it shows there.
    pub fn handle(&mut self, event: &Event) -> Reply<'_> {
        self.handle_reported(event, Report::default())
    }

    /// [`Core::handle`] for an event with what it reports: a `StepFailed` keeps the failure
    /// context as its step's last failure (a context of another step is ignored), and what
    /// was said replaces the last words. A batch that resets the cycle forgets every step's
    /// failure context, as the cycle's counters.
    pub fn handle_reported(&mut self, event: &Event, report: Report) -> Reply<'_> {
        if let Some(said) = report.said {
            self.last_words = said;
        }
        let failed_step = match event {
            Event::StepFailed { step, .. } => Some(*step),
            Event::MergeRaceLost { .. } | Event::MergeConflict { .. } => Some(Step::Merge),
            // CI's failure on the commit main would hold is monitorCI's to repair.
            Event::CiFailedTogether { .. } => Some(Step::MonitorCi),
            _ => None,
        };
        if let (Some(step), Some(detail)) = (failed_step, report.failure) {
            if detail.step == step {
                self.details[step.index()] = Some(detail);
            }
        }
        self.fx.clear();
        self.fx.unsent = false;
        if let Event::KilledCallSpent { .. } = event {
            // No answer of a request: what a dead call spent, kept for the restart's
            // `KILLED` attempt. A request held back stays held back.
            self.sm.handle_with_context(event, &mut self.fx);
            return self.reply(event);
        }
        if let Some(request) = self.held_back.take() {
            // The renewal's answer is no event of the states': renewed, or not writable (the
            // lease may lapse; the next renewal tells), the request held back goes ahead.
            if matches!(
                event,
                Event::ClaimRenewed
                    | Event::TrackerWriteFailed
                    | Event::NetworkFailed
                    | Event::RateLimited { .. }
            ) {
                self.fx.push(request);
                return self.reply(event);
            }
            // Any other event drops it; the state hears that it never went out (a restart
            // asks for a step's run again rather than fail it as KILLED).
            self.fx.unsent = true;
        }
        self.sm.handle_with_context(event, &mut self.fx);
        if self.fx.contains(&Effect::ResetCycle) {
            self.details = Default::default();
        }
        self.hold_back_for_renewal();
        self.reply(event)
    }

    /// The one place a batch is built: what the handlers pushed, checked.
    fn reply(&self, event: &Event) -> Reply<'_> {
        match Batch::new(&self.fx) {
            Ok(batch) => Reply::Batch(batch),
            Err(NotABatch::Empty) => Reply::Ignored,
            Err(broken) => {
                debug_assert!(
                    false,
                    "the machine's bug: {broken} after {event:?} in {:?}: {:?}",
                    self.state(),
                    &self.fx[..]
                );
                Reply::Broken(broken)
            }
        }
    }

    /// Where issues are claimed, a request that works on the issue under way or waits is held
    /// back and the claim renewed first, so that no runner works on an issue it no longer
    /// holds and none loses its claim in a long wait. The state does not change: the
    /// renewal is a gate before the request, not a step of the lifecycle.
    fn hold_back_for_renewal(&mut self) {
        let Some(issue) = self.sm.issue else {
            return;
        };
        let Some(at) = self.fx.iter().position(Effect::is_request) else {
            return;
        };
        let request = self.fx[at];
        if let Some(renewal) = sm::renewal_before(&self.sm.limits, issue, &request) {
            self.fx[at] = renewal;
            self.held_back = Some(request);
        }
    }

    /// The request held back for a claim renewal, if any (part of what the machine is, for
    /// searches over its states).
    pub fn held_back(&self) -> Option<Effect> {
        self.held_back
    }

    /// What the last attempt or failed call said, for the halt and escalation diagnostics.
    pub fn last_words(&self) -> &str {
        &self.last_words
    }

    /// The last failure of `step` in this cycle, with the context its report carried.
    pub fn failure(&self, step: Step) -> Option<&FailureDetail> {
        self.details[step.index()].as_ref()
    }

    /// The current state.
    pub fn state(&self) -> &State {
        self.sm.state()
    }

    /// The shared storage: every counter, the limits and the mode.
    pub fn runner(&self) -> &Runner {
        &self.sm
    }

    /// Whether the machine halted or finished: no event moves it on.
    pub fn is_terminal(&self) -> bool {
        self.state().is_terminal()
    }

    /// Issues this session escalated: the tracker must not offer them again.
    pub fn escalated(&self) -> &std::collections::BTreeSet<u32> {
        &self.runner().escalated
    }

    /// A key for "same machine" comparisons in tests and exploration.
    pub fn snapshot(&self) -> (State, Runner) {
        (*self.state(), self.runner().clone())
    }

    /// The names of the superstates enclosing `state`, outermost first (derived from statig).
    pub fn ancestors(state: &State) -> Vec<&'static str> {
        use statig::blocking::State as _;
        use statig::blocking::Superstate as _;
        let mut state = *state;
        let mut names = Vec::new();
        let mut sup = state.superstate();
        while let Some(mut s) = sup {
            names.push(superstate_name(&s));
            sup = s.superstate();
        }
        names.reverse();
        names
    }
}

fn superstate_name(s: &Superstate) -> &'static str {
    match s {
        Superstate::Session {} => "Session",
        Superstate::Cycle {} => "Cycle",
        Superstate::Specify {} => "Specify",
        Superstate::Build {} => "Build",
        Superstate::Deliver {} => "Deliver",
    }
}

#[cfg(test)]
mod restart_tests {
    use super::*;
    use crate::step::Step;

    /// Drives a fresh issue to the dispatch of `until`, every earlier step succeeding.
    fn dispatched_at(until: Step, mode: Mode) -> Core {
        let mut core = Core::new(Limits::default(), mode);
        let mut event = Event::Start;
        loop {
            let effects = core.handle(&event).to_vec();
            let request = effects.iter().find(|e| e.is_request()).copied();
            event = match request {
                Some(Effect::SelectIssue) => Event::IssueSelected { issue: 1 },
                Some(Effect::CheckPreconditions { step }) => Event::PreconditionsOk { step },
                Some(Effect::RunStep { step, .. }) if step == until => return core,
                Some(Effect::RunStep { step, .. }) => Event::StepSucceeded {
                    step,
                    usage: Usage::default(),
                },
                other => panic!("unexpected request {other:?} in {:?}", core.state()),
            };
        }
    }

    /// The attempt number of the next `RunStep` after `event`, passing through waits and
    /// precondition checks.
    fn next_attempt(core: &mut Core, event: Event) -> u32 {
        let mut event = event;
        loop {
            let effects = core.handle(&event).to_vec();
            let request = effects.iter().find(|e| e.is_request()).copied();
            event = match request {
                Some(Effect::RunStep { attempt, .. }) => return attempt,
                Some(Effect::Wait { .. }) => Event::WaitOver,
                Some(Effect::CheckPreconditions { step }) => Event::PreconditionsOk { step },
                other => panic!("unexpected request {other:?} in {:?}", core.state()),
            };
        }
    }

    #[test]
    fn a_restart_in_step_mode_on_the_interrupted_step_records_it_as_that_steps_failure() {
        let mut core = dispatched_at(Step::Verify, Mode::Continuous);
        let restart = Event::ModeChanged {
            mode: Mode::SingleStep(Step::Verify),
        };
        // As on any restart in single-step mode: the interrupted attempt is the step's
        // failure, and the run ends with 1 without dispatching another.
        let effects = core.handle(&restart).to_vec();
        assert_eq!(
            effects.last(),
            Some(&Effect::Exit { code: 1 }),
            "{effects:?}"
        );
        assert_eq!(core.runner().mode, Mode::SingleStep(Step::Verify));
        assert_eq!(core.runner().attempts[Step::Verify.index()], 1);
    }

    #[test]
    fn a_step_state_names_its_phase_and_the_debug_view_shows_the_state() {
        let core = dispatched_at(Step::Verify, Mode::Continuous);
        assert_eq!(Core::ancestors(core.state()), ["Session", "Cycle", "Build"]);
        assert!(!core.is_terminal());
        let shown = format!("{core:?}");
        assert!(
            shown.contains("Verify") && shown.contains("attempts"),
            "{shown}"
        );
    }

    #[test]
    fn a_failure_reported_with_its_context_is_kept_for_its_step_until_the_cycle_resets() {
        let mut core = dispatched_at(Step::Implement, Mode::Continuous);
        let failed = |n: u64| Event::StepFailed {
            step: Step::Implement,
            class: crate::failure::FailureClass::TestAssertion,
            signature: crate::failure::Signature(n),
            usage: Usage::default(),
            wait_hint_secs: None,
        };
        let detail = FailureDetail {
            step: Step::Implement,
            class: crate::failure::FailureClass::TestAssertion,
            summary: "1 test failed".into(),
            excerpt: "assertion failed: left == right".into(),
        };
        let other_step = FailureDetail {
            step: Step::Verify,
            ..detail.clone()
        };
        // Answers the requests of a batch until the next attempt of the step is dispatched
        // (true) or the cycle is reset (false).
        let until_dispatch = |core: &mut Core, mut effects: Vec<Effect>| loop {
            if effects.contains(&Effect::ResetCycle) {
                return false;
            }
            let event = match effects.iter().find(|e| e.is_request()) {
                Some(Effect::RunStep { .. }) => return true,
                Some(Effect::Wait { .. }) => Event::WaitOver,
                Some(Effect::CheckPreconditions { step }) => Event::PreconditionsOk { step: *step },
                Some(Effect::MarkEscalated { .. }) => Event::TrackerUpdated,
                other => panic!("unexpected request {other:?} in {:?}", core.state()),
            };
            effects = core.handle(&event).to_vec();
        };
        let report = |failure: FailureDetail, said: &str| Report {
            failure: Some(failure),
            said: Some(said.to_string()),
        };
        let effects = core
            .handle_reported(&failed(1), report(other_step, "first"))
            .to_vec();
        assert_eq!(core.last_words(), "first");
        assert_eq!(core.failure(Step::Verify), None, "a detail of another step");
        assert_eq!(core.failure(Step::Implement), None);
        assert!(until_dispatch(&mut core, effects));
        let effects = core
            .handle_reported(&failed(2), report(detail.clone(), "second"))
            .to_vec();
        assert_eq!(core.failure(Step::Implement), Some(&detail));
        assert!(until_dispatch(&mut core, effects));
        // A failure reported without context keeps the step's last context and words.
        let mut effects = core.handle(&failed(3)).to_vec();
        assert_eq!(core.failure(Step::Implement), Some(&detail));
        assert_eq!(core.last_words(), "second");
        // Failing on, the cycle ends (escalated): the next cycle starts without it.
        let mut n = 4;
        while until_dispatch(&mut core, effects) {
            effects = core.handle(&failed(n)).to_vec();
            n += 1;
        }
        assert_eq!(core.failure(Step::Implement), None, "{:?}", core.state());
        // The words outlive the cycle: the escalation and a halt after it quote them.
        assert_eq!(core.last_words(), "second");
    }

    /// A claiming runner at the renewal before `until`'s first run, every earlier step
    /// succeeding: the run is held back, the renewal unanswered.
    fn renewing_before(until: Step) -> Core {
        let limits = Limits {
            claims: true,
            claim_lease_secs: Some(3600),
            ..Limits::default()
        };
        let mut core = Core::new(limits, Mode::Continuous);
        let mut event = Event::Start;
        loop {
            let effects = core.handle(&event).to_vec();
            let request = effects.iter().find(|e| e.is_request()).copied();
            event = match (request, core.held_back()) {
                (Some(Effect::SelectIssue), _) => Event::IssueSelected { issue: 1 },
                (Some(Effect::ClaimIssue { issue }), _) => Event::ClaimTaken { issue },
                (Some(Effect::RenewClaim { .. }), Some(Effect::RunStep { step, .. }))
                    if step == until =>
                {
                    return core;
                }
                (Some(Effect::RenewClaim { .. }), _) => Event::ClaimRenewed,
                (Some(Effect::CheckPreconditions { step }), _) => Event::PreconditionsOk { step },
                (Some(Effect::RunStep { step, .. }), _) => Event::StepSucceeded {
                    step,
                    usage: Usage::default(),
                },
                other => panic!("unexpected request {other:?} in {:?}", core.state()),
            };
        }
    }

    #[test]
    fn the_renewals_terms_are_the_machines_half_a_lease_before_a_step_a_lease_past_a_wait() {
        let lease = |secs| Limits {
            claims: true,
            claim_lease_secs: secs,
            ..Limits::default()
        };
        let step = Effect::CheckPreconditions {
            step: Step::Implement,
        };
        let wait = Effect::Wait {
            seconds: 90,
            reason: None,
        };
        let renewal = |l: &Limits, request: &Effect| sm::renewal_before(l, 4, request);
        // Before a step: no write while more than half the lease is left.
        assert_eq!(
            renewal(&lease(Some(600)), &step),
            Some(Effect::RenewClaim {
                issue: 4,
                secs: 0,
                lease_secs: 600,
                fresh_secs: Some(300),
            })
        );
        // Before a wait: always written, to outlast the wait by a lease.
        assert_eq!(
            renewal(&lease(Some(600)), &wait),
            Some(Effect::RenewClaim {
                issue: 4,
                secs: 90,
                lease_secs: 690,
                fresh_secs: None,
            })
        );
        // A session begun by an earlier version knows no lease: the shell's, written each time.
        assert_eq!(
            renewal(&lease(None), &step),
            Some(Effect::RenewClaim {
                issue: 4,
                secs: 0,
                lease_secs: 0,
                fresh_secs: None,
            })
        );
        // A runner that claims nothing renews nothing.
        let alone = Limits {
            claims: false,
            ..lease(Some(600))
        };
        assert_eq!(renewal(&alone, &step), None);
    }

    #[test]
    fn a_restart_before_a_renewals_answer_runs_the_held_back_attempt_uncounted() {
        let run = Effect::RunStep {
            step: Step::Implement,
            issue: 1,
            attempt: 1,
            repair: false,
            commit: None,
            money_left_micros: None,
        };
        let renewal = Effect::RenewClaim {
            issue: 1,
            secs: 0,
            lease_secs: 3600,
            fresh_secs: Some(1800),
        };
        // A restart that goes on with the issue and the step: the same renewal, then the run.
        for restart in [
            Event::Start,
            Event::ModeChanged {
                mode: Mode::SingleIssue(1),
            },
            Event::ModeChanged {
                mode: Mode::SingleStep(Step::Implement),
            },
        ] {
            let mut core = renewing_before(Step::Implement);
            assert_eq!(core.held_back(), Some(run));
            assert_eq!(core.handle(&restart), [renewal], "after {restart:?}");
            assert_eq!(
                core.runner().attempts,
                [0; Step::COUNT],
                "after {restart:?}"
            );
            assert_eq!(
                core.handle(&Event::ClaimRenewed),
                [run],
                "after {restart:?}"
            );
        }
        // A restart about another issue or step: the state decides, and counts nothing.
        let mut core = renewing_before(Step::Implement);
        let other_issue = Event::ModeChanged {
            mode: Mode::SingleIssue(2),
        };
        let effects = core.handle(&other_issue).to_vec();
        assert_eq!(
            effects,
            [
                Effect::CheckoutMain,
                Effect::ResetCycle,
                Effect::SelectIssue
            ]
        );
        let mut core = renewing_before(Step::Implement);
        let other_step = Event::ModeChanged {
            mode: Mode::SingleStep(Step::Verify),
        };
        assert_eq!(core.handle(&other_step), [renewal]);
        let check = Effect::CheckPreconditions { step: Step::Verify };
        assert_eq!(core.held_back(), Some(check));
        assert_eq!(core.runner().attempts, [0; Step::COUNT]);
    }

    #[test]
    fn every_restart_into_a_cycle_counts_the_interrupted_attempt() {
        for restart in [
            Event::Start,
            Event::ModeChanged {
                mode: Mode::SingleIssue(1),
            },
        ] {
            let mut core = dispatched_at(Step::Implement, Mode::Continuous);
            assert_eq!(
                next_attempt(&mut core, restart.clone()),
                2,
                "after {restart:?}"
            );
        }
    }
}
