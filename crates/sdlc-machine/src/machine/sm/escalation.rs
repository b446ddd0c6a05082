//! Giving up on an issue: the escalation (durable quarantine), the decision a person takes
//! instead under manual approval, and the release of the first issue when the same failure
//! ends the next one too (the environment's, not theirs).

use super::{FailuresSeen, Fx, Runner, State};
use crate::failure::FailureClass;
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

/// The first wait for a person's answer, in seconds; it doubles up to
/// [`DECISION_LOOK_MAX_SECS`].
pub const DECISION_LOOK_FIRST_SECS: u64 = 2;
/// The longest wait between two looks for a person's answer, in seconds.
pub const DECISION_LOOK_MAX_SECS: u64 = 30;

impl Runner {
    pub(super) fn escalate(
        &mut self,
        step: Step,
        cause: EscalationCause,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let issue = self.current_issue();
        // The failure that ends this cycle, when it is this step's own (not a bounce, a
        // budget or a person's skip).
        let own = match cause {
            EscalationCause::RetriesExhausted
            | EscalationCause::SameFailureRepeated
            | EscalationCause::NonRetryable
            | EscalationCause::TestsWeakened => self.last_failure.filter(|f| f.step == step),
            _ => None,
        };
        if let (Some(now), Some((previous, before))) = (own, self.last_escalation) {
            if previous != issue && before == now {
                return self.same_failure_across_issues(step, now.class, fx);
            }
        }
        self.last_escalation = own.map(|f| (issue, f));
        self.last_escalation_alone = own.is_some_and(|f| {
            self.failures_seen[step.index()] == FailuresSeen::Only(f.class, f.signature)
        });
        self.escalated.insert(issue);
        self.consecutive_escalations += 1;
        self.dispatched = false;
        // The cycle ends: a round still unanswered is not asked for again.
        self.review_handout.clear();
        // Unless the escalation halts (which leaves the tree as it is for a person), the
        // partial work is saved before the tracker is told, so that the note can name where
        // it went (an unfinished merge is aborted, its tree kept on a rescue ref).
        if self.escalation_goes_on() {
            fx.push(Effect::Cleanup);
            fx.push(Effect::AutoCommit(CommitKind::PartialWork));
        }
        let state = State::escalating(step, cause);
        self.request(state, Effect::MarkEscalated { issue }, fx);
        Transition(state)
    }

    /// Whether the escalation under way ends in something other than a halt: the single
    /// issue's run ends, or the next issue is selected.
    fn escalation_goes_on(&self) -> bool {
        matches!(self.mode, Mode::SingleIssue(_))
            || self.consecutive_escalations < self.limits.max_consecutive_escalations
    }

    /// Two issues failing the same way, one after the other: the cause is common to both, so
    /// the second is not quarantined and the session stops. The first's quarantine is lifted
    /// first when that failure was the only way its step failed (it was never the issue's);
    /// when its step also failed another way, its quarantine stays (docs/counters-and-bounds.md).
    pub(super) fn same_failure_across_issues(
        &mut self,
        step: Step,
        class: FailureClass,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let halt = HaltReason::SameFailureAcrossIssues { step, class };
        match self.last_escalation {
            Some((first, _)) if self.last_escalation_alone => {
                self.dispatched = false;
                let state = State::releasing(step, class);
                self.request(state, Effect::Unquarantine { issue: first }, fx);
                Transition(state)
            }
            _ => self.halt(halt, fx),
        }
    }

    /// The tracker lifted the first issue's quarantine: it no longer counts as escalated, and
    /// the session halts as the environment's.
    pub(super) fn release_recorded(
        &mut self,
        first: u32,
        step: Step,
        class: FailureClass,
        fx: &mut Fx,
    ) -> Outcome<State> {
        if self.escalated.remove(&first) {
            self.consecutive_escalations = self.consecutive_escalations.saturating_sub(1);
        }
        fx.push(Effect::Notify(Notice::Released {
            issue: first,
            second: self.current_issue(),
            step,
            class,
        }));
        self.halt(HaltReason::SameFailureAcrossIssues { step, class }, fx)
    }

    /// The tracker recorded the quarantine: stop, end the run or select the next issue.
    pub(super) fn escalation_recorded(
        &mut self,
        step: Step,
        cause: EscalationCause,
        fx: &mut Fx,
    ) -> Outcome<State> {
        let issue = self.current_issue();
        let consecutive = self.consecutive_escalations;
        if let Mode::SingleIssue(_) = self.mode {
            fx.push(Effect::CheckoutMain);
            fx.push(Effect::Notify(Notice::Escalated {
                issue,
                step,
                cause,
                consecutive,
            }));
            return self.finish(1, fx);
        }
        if consecutive >= self.limits.max_consecutive_escalations {
            return self.halt(HaltReason::ConsecutiveEscalations { cause, step }, fx);
        }
        fx.push(Effect::CheckoutMain);
        fx.push(Effect::ResetCycle);
        fx.push(Effect::Notify(Notice::Escalated {
            issue,
            step,
            cause,
            consecutive,
        }));
        self.select_next(fx)
    }

    /// Ask a person, a new wait for the answer.
    pub(super) fn ask_decision(&mut self, step: Step, fx: &mut Fx) {
        self.decision_looks = 0;
        self.decision_waited_secs = 0;
        self.decision_paused = false;
        fx.push(Effect::AskDecision {
            step,
            issue: self.current_issue(),
            budget_spent_micros: self.budget_asked.then_some(self.issue_cost_micros),
        });
    }

    /// Nobody has answered yet: wait 2 s, doubling to 30 s, and look again; once the next
    /// wait would pass the decision time, halt (`DecisionTimeout`), nobody's issue blamed.
    pub(super) fn decision_pending(&mut self, fx: &mut Fx) -> Outcome<State> {
        let limit = match self.limits.decision_wait_secs {
            // A session begun before the machine kept the decision time: the default's.
            0 => Limits::default().decision_wait_secs,
            secs => secs,
        };
        let next =
            (DECISION_LOOK_FIRST_SECS << self.decision_looks.min(8)).min(DECISION_LOOK_MAX_SECS);
        if self.decision_waited_secs + next > limit {
            return self.halt(HaltReason::DecisionTimeout, fx);
        }
        self.decision_looks += 1;
        self.decision_waited_secs += next;
        self.decision_paused = true;
        // Quiet: a look every few seconds is no wait to narrate; the state says it waits.
        fx.push(Effect::Pause {
            millis: next * 1000,
            waits_for: PauseFor::Decision,
        });
        Handled
    }

    /// Retries are spent: a person decides (manual approval) or the issue escalates.
    pub(super) fn give_up(
        &mut self,
        step: Step,
        cause: EscalationCause,
        fx: &mut Fx,
    ) -> Outcome<State> {
        if self.limits.manual_approval {
            self.ask_decision(step, fx);
            return Transition(State::awaiting_decision(step));
        }
        self.escalate(step, cause, fx)
    }
}
