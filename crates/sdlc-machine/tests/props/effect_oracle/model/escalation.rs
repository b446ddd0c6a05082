//! The model's escalation rules: quarantine, the decision point, the same failure on two
//! issues in a row.

use super::{At, Model};
use sdlc_machine::failure::FailureClass;
use sdlc_machine::machine::{CommitKind, Effect, EscalationCause, HaltReason, Mode, Notice};
use sdlc_machine::step::Step;

impl Model {
    pub(super) fn escalate(&mut self, step: Step, cause: EscalationCause) {
        let issue = self.issue();
        let own_failure = matches!(
            cause,
            EscalationCause::RetriesExhausted
                | EscalationCause::SameFailureRepeated
                | EscalationCause::NonRetryable
        );
        let now = match self.last_failure {
            Some((s, class, sig)) if own_failure && s == step => Some((issue, s, class, sig)),
            _ => None,
        };
        if let (Some((_, s, class, sig)), Some((before, s0, class0, sig0))) =
            (now, self.last_escalation)
        {
            if before != issue && (s, class, sig) == (s0, class0, sig0) {
                // The environment's: the second is not quarantined; the first is released
                // when its step never failed any other way in its cycle.
                if self.last_escalation_alone {
                    self.dispatched = false;
                    return self.ask(
                        At::Releasing(step, class),
                        Effect::Unquarantine { issue: before },
                    );
                }
                return self.halt(HaltReason::SameFailureAcrossIssues { step, class });
            }
        }
        self.last_escalation = now;
        self.last_escalation_alone = now.is_some_and(|(_, s, class, sig)| {
            self.failed_how[s.index()]
                .iter()
                .all(|&how| how == (class, sig))
        });
        self.escalated.insert(issue);
        self.streak += 1;
        self.dispatched = false;
        if matches!(self.mode, Mode::SingleIssue(_))
            || self.streak < self.l.max_consecutive_escalations
        {
            self.fx
                .extend([Effect::Cleanup, Effect::AutoCommit(CommitKind::PartialWork)]);
        }
        self.ask(At::Escalating(step, cause), Effect::MarkEscalated { issue });
    }

    pub(super) fn release_recorded(&mut self, first: u32, step: Step, class: FailureClass) {
        if self.escalated.remove(&first) {
            self.streak -= 1;
        }
        self.fx.push(Effect::Notify(Notice::Released {
            issue: first,
            second: self.issue(),
            step,
            class,
        }));
        self.halt(HaltReason::SameFailureAcrossIssues { step, class });
    }

    pub(super) fn escalation_recorded(&mut self, step: Step, cause: EscalationCause) {
        let issue = self.issue();
        let notice = Effect::Notify(Notice::Escalated {
            issue,
            step,
            cause,
            consecutive: self.streak,
        });
        if matches!(self.mode, Mode::SingleIssue(_)) {
            self.fx.extend([Effect::CheckoutMain, notice]);
            return self.finish(1);
        }
        if self.streak >= self.l.max_consecutive_escalations {
            return self.halt(HaltReason::ConsecutiveEscalations { cause, step });
        }
        self.fx
            .extend([Effect::CheckoutMain, Effect::ResetCycle, notice]);
        self.select_next();
    }

    /// The question put to a person: with the issue's spend when its budget was reached.
    pub(super) fn question(&self, step: Step) -> Effect {
        Effect::AskDecision {
            step,
            issue: self.issue(),
            budget_spent_micros: self.budget_asked.then_some(self.issue_cost),
        }
    }

    pub(super) fn give_up(&mut self, step: Step, cause: EscalationCause) {
        if self.l.manual_approval {
            self.fx.push(self.question(step));
            self.at = At::Decision(step);
            return;
        }
        self.escalate(step, cause);
    }
}
