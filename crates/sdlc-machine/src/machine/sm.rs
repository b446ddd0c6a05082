//! The statig machine: one state per step, grouped under `Cycle` → `Specify` / `Build` /
//! `Deliver`, plus `Selecting`, `BackingOff`, `AwaitingDecision`, `Halted` and `Finished`.
//!
//! Rules this module keeps (see docs/design-notes.md):
//! - handlers decide and push effects; there are no entry/exit actions, so replaying events
//!   can never double-count anything;
//! - counters change only at the transition sites: the handlers below and the `Runner`
//!   methods they call, kept in the submodules by what they decide, never anywhere else;
//! - no IO, no clock, no randomness: the same events always give the same effects.

// statig generates `State` and `Superstate`, their variants and fields, from the handlers
// below and cannot give them doc comments (each handler's comment says what its state
// means). The allowance covers them alone: every submodule warns again.
#![allow(missing_docs)]

#[warn(missing_docs)]
mod claims;
pub(crate) use claims::renewal_before;
#[warn(missing_docs)]
mod cycle;
#[warn(missing_docs)]
mod escalation;
#[warn(missing_docs)]
mod merge_turn;
#[warn(missing_docs)]
mod moved;
#[warn(missing_docs)]
mod requests;
#[warn(missing_docs)]
mod review;
#[warn(missing_docs)]
mod runner;
#[warn(missing_docs)]
mod state;
#[warn(missing_docs)]
mod step_events;
#[warn(missing_docs)]
mod step_outcome;

pub use runner::{FailuresSeen, LastFailure, Runner, Spend, Stats};
pub use state::state_of;

use super::types::*;
use crate::failure::FailureClass;
use crate::step::Step;
pub(crate) use runner::Fx;
use serde::{Deserialize, Serialize};
use statig::prelude::*;

#[state_machine(
    initial = "State::selecting()",
    state(derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)),
    superstate(derive(Debug))
)]
impl Runner {
    /// Session-wide behaviour: a signal stops the session wherever it is; the journal keeps
    /// the position so that the next start continues it.
    #[superstate]
    fn session(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::ShutdownRequested { signal, usage } => {
                self.shut_down(signal, &usage, context);
                // The attempt under way ends with the session: a restart enters its step
                // again rather than counting it as killed.
                self.dispatched = false;
                Handled
            }
            Event::ClaimLost { issue } => self.claim_lost(issue, context),
            // Wherever it happens (selecting, probing a step, closing an issue): no attempt is
            // spent and no issue blamed; the session stops until a person sees to the network.
            Event::NetworkUnavailable => self.halt(HaltReason::Network, context),
            _ => Super,
        }
    }

    #[state(superstate = "session")]
    fn selecting(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::Start => {
                self.request(State::selecting(), Effect::SelectIssue, context);
                Handled
            }
            Event::ModeChanged { mode } => {
                self.mode = mode;
                self.request(State::selecting(), Effect::SelectIssue, context);
                Handled
            }
            Event::NetworkFailed => self.network_failed(context),
            Event::RateLimited { wait_secs } => self.rate_limited(wait_secs, context),
            Event::IssueSelected { issue } => self.selected(issue, context),
            Event::ClaimTaken { issue } if self.claiming(issue) => self.claim_taken(issue, context),
            Event::ClaimHeld { issue } if self.claiming(issue) => self.claim_held(issue, context),
            Event::TrackerWriteFailed
                if matches!(self.outstanding, Some((_, Effect::ClaimIssue { .. }))) =>
            {
                self.claim_refused(context)
            }
            Event::Resume { issue, next } => {
                if self.excluded(issue) {
                    // Work left on an escalated, merged or withdrawn issue's branch is not
                    // ours to continue.
                    context.push(Effect::CheckoutMain);
                    self.request(State::selecting(), Effect::SelectIssue, context);
                    return Handled;
                }
                let first = match self.mode {
                    Mode::SingleStep(step) => step,
                    _ => next,
                };
                self.start_issue_cycle(issue, first, context)
            }
            Event::AlreadyMerged { issue } => self.merged(issue, context),
            Event::TrackerReadFailed
                if matches!(self.outstanding, Some((_, Effect::SelectIssue))) =>
            {
                // Neither a failure loop nor a wait: the state stays, so the next run selects
                // again in the same session, with the same counters.
                context.push(Effect::Notify(Notice::TrackerReadFailed));
                context.push(Effect::Exit { code: 1 });
                Handled
            }
            Event::NoIssues => {
                context.push(Effect::Notify(Notice::NothingToDo));
                self.finish(0, context)
            }
            Event::AllEscalated { others_hold } => {
                self.nothing_selectable(HaltReason::AllIssuesEscalated, others_hold, context)
            }
            Event::AllBlocked { others_hold } => {
                self.nothing_selectable(HaltReason::AllIssuesBlocked, others_hold, context)
            }
            Event::StandBy => {
                context.push(Effect::Notify(Notice::StandingBy));
                self.finish(0, context)
            }
            _ => Super,
        }
    }

    /// A cycle works on one issue from startCycle to merge.
    #[superstate(superstate = "session")]
    fn cycle(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            // Observed progress on start overrides the recorded position, never the counters.
            Event::Resume { issue, next } if Some(issue) == self.issue => self.enter(next, context),
            Event::FleetPaused { seconds } => self.fleet_paused(seconds, context),
            _ => Super,
        }
    }

    #[superstate(superstate = "cycle")]
    fn specify(event: &Event) -> Outcome<State> {
        let _ = event;
        Super
    }

    #[superstate(superstate = "cycle")]
    fn build(event: &Event) -> Outcome<State> {
        let _ = event;
        Super
    }

    #[superstate(superstate = "cycle")]
    fn deliver(event: &Event) -> Outcome<State> {
        let _ = event;
        Super
    }

    #[state(superstate = "specify")]
    fn start_cycle(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::StartCycle, event, context)
    }

    #[state(superstate = "specify")]
    fn start_issue(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::StartIssue, event, context)
    }

    #[state(superstate = "specify")]
    fn write_specs(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::WriteSpecs, event, context)
    }

    #[state(superstate = "build")]
    fn implement(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Implement, event, context)
    }

    #[state(superstate = "build")]
    fn simplify(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Simplify, event, context)
    }

    #[state(superstate = "build")]
    fn verify(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Verify, event, context)
    }

    #[state(superstate = "deliver")]
    fn commit_push(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::CommitPush, event, context)
    }

    #[state(superstate = "deliver")]
    fn create_pr(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::CreatePr, event, context)
    }

    #[state(superstate = "deliver")]
    fn monitor_ci(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::MonitorCi, event, context)
    }

    #[state(superstate = "deliver")]
    fn merge(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        self.on_step(Step::Merge, event, context)
    }

    /// Waiting out a rate limit, an overload or a quota window; no attempt is consumed.
    #[state(superstate = "cycle")]
    fn backing_off(
        &mut self,
        step: &Step,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => {
                    context.push(Effect::Wait {
                        seconds: *seconds,
                        reason: Some(WaitReason::Backoff(None)),
                    });
                    Handled
                }
            },
            Event::Start => {
                context.push(Effect::Wait {
                    seconds: *seconds,
                    reason: Some(WaitReason::Backoff(None)),
                });
                Handled
            }
            Event::WaitOver => self.enter(*step, context),
            _ => Super,
        }
    }

    /// The merge happened; the tracker is being told. Nothing here can unmerge it.
    #[state(superstate = "session")]
    fn recording_merge(&mut self, issue: &u32, event: &Event, context: &mut Fx) -> Outcome<State> {
        let issue = *issue;
        if let Event::IssueStillOpen = event {
            return self.still_open(issue, context);
        }
        let refused = HaltReason::TrackerWrite {
            issue,
            merged: true,
        };
        self.on_tracker_write(event, refused, context, |r, fx| r.merge_recorded(issue, fx))
    }

    /// The merge happened and the tracker has not closed the issue yet (GitHub closes it
    /// from the PR's `Closes #N` a second or two later): the pause before the next look. A
    /// restart pauses again and looks (reading the issue is idempotent).
    #[state(superstate = "session")]
    fn waiting_for_close(
        &mut self,
        issue: &u32,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::WaitOver => self.look_for_close(*issue, context),
            Event::Start | Event::ModeChanged { .. } => {
                if let Event::ModeChanged { mode } = *event {
                    self.mode = mode;
                }
                context.push(Effect::Wait {
                    seconds: *seconds,
                    reason: Some(WaitReason::TrackerClose),
                });
                Handled
            }
            _ => Super,
        }
    }

    /// The cycle gave up on its issue; the tracker is being told (durable quarantine).
    #[state(superstate = "session")]
    fn escalating(
        &mut self,
        step: &Step,
        cause: &EscalationCause,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let (step, cause) = (*step, *cause);
        let refused = HaltReason::TrackerWrite {
            issue: self.current_issue(),
            merged: false,
        };
        self.on_tracker_write(event, refused, context, |r, fx| {
            r.escalation_recorded(step, cause, fx)
        })
    }

    /// The same failure ended two issues in a row; the tracker is lifting the first one's
    /// quarantine before the session halts.
    #[state(superstate = "session")]
    fn releasing(
        &mut self,
        step: &Step,
        class: &FailureClass,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let (step, class) = (*step, *class);
        let first = self.last_escalation.map_or(0, |(issue, _)| issue);
        let refused = HaltReason::TrackerWrite {
            issue: first,
            merged: false,
        };
        self.on_tracker_write(event, refused, context, |r, fx| {
            r.release_recorded(first, step, class, fx)
        })
    }

    /// A runner action failed on the network; its request is issued again after the wait.
    #[state(superstate = "session")]
    fn waiting_for_network(
        &mut self,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        // A restart cannot tell a network wait from an API's rate limit: both are the
        // network's for the state.
        self.before_reissue(*seconds, WaitReason::Network, event, context)
    }

    /// The fleet pauses every worker (another worker's rate limit or quota) before the
    /// outstanding request; it is issued again after the wait. A restart waits again.
    #[state(superstate = "cycle")]
    fn waiting_for_fleet(
        &mut self,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        self.before_reissue(*seconds, WaitReason::FleetPause, event, context)
    }

    /// monitorCI's attempt is under way and CI has not settled: the pause before the next look.
    /// A restart waits again and looks (what CI says is idempotent to read); the attempt's
    /// waits so far stay counted, so no restart lengthens it past the step's time limit.
    #[state(superstate = "deliver")]
    fn waiting_for_ci(&mut self, seconds: &u64, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::WaitOver => {
                self.dispatched = true;
                let look = Effect::LookAtCi {
                    issue: self.current_issue(),
                    look: self.ci_waits + 1,
                    commit: self.ci_commit,
                };
                self.request(State::monitor_ci(), look, context);
                Transition(State::monitor_ci())
            }
            _ => self.wait_again(*seconds, WaitReason::Ci, event, context),
        }
    }

    /// CI passed; the PR's review is being looked at before the merge. A restart looks again
    /// (reading the review is idempotent).
    #[state(superstate = "deliver")]
    fn awaiting_review(&mut self, event: &Event, context: &mut Fx) -> Outcome<State> {
        match *event {
            Event::ReviewLooked {
                decision,
                ref feedback,
            } if matches!(self.outstanding, Some((_, Effect::LookAtReview { .. }))) => {
                self.review_looked(decision, feedback, context)
            }
            Event::NetworkFailed => self.network_failed(context),
            Event::RateLimited { wait_secs } => self.rate_limited(wait_secs, context),
            // The review cannot be read (no branch, an unreadable reviews file): a person
            // must look; nothing merges meanwhile.
            Event::WorkspaceUnfit { step } => self.halt(HaltReason::Workspace { step }, context),
            Event::Start => self.reissue(context),
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => self.reissue(context),
            },
            _ => Super,
        }
    }

    /// The pause before the next look at the PR's review; a restart pauses again and looks.
    #[state(superstate = "deliver")]
    fn waiting_for_review(
        &mut self,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::WaitOver => self.look_at_review(context),
            _ => self.wait_again(*seconds, WaitReason::Review, event, context),
        }
    }

    /// The pause before asking for the merge turn again: it was busy, or a merge lost a push
    /// race. No attempt is under way; a restart pauses again and asks.
    #[state(superstate = "deliver")]
    fn waiting_to_merge(
        &mut self,
        millis: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        let pause = Effect::Pause {
            millis: *millis,
            waits_for: PauseFor::MergeTurn,
        };
        match *event {
            Event::WaitOver => self.take_merge_turn(context),
            Event::Start => {
                context.push(pause);
                Handled
            }
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => {
                    context.push(pause);
                    Handled
                }
            },
            _ => Super,
        }
    }

    /// The merge's PR is in the forge's merge queue: the pause before the next look (the
    /// merge's run issued again, which looks at the queue, its answer awaited even after a
    /// shutdown's restart). A restart waits again and looks (reading the queue is
    /// idempotent); the waits so far stay counted.
    #[state(superstate = "deliver")]
    fn waiting_for_queue(
        &mut self,
        seconds: &u64,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::WaitOver => {
                self.dispatched = true;
                self.reissue(context)
            }
            _ => self.wait_again(*seconds, WaitReason::MergeQueue, event, context),
        }
    }

    /// Manual approval: a person decides what happens after retries are spent.
    #[state(superstate = "cycle")]
    fn awaiting_decision(
        &mut self,
        step: &Step,
        event: &Event,
        context: &mut Fx,
    ) -> Outcome<State> {
        match *event {
            Event::ModeChanged { mode } => match self.change_mode(mode, context) {
                Some(outcome) => outcome,
                None => {
                    self.ask_decision(*step, context);
                    Handled
                }
            },
            Event::Start => {
                self.ask_decision(*step, context);
                Handled
            }
            Event::DecisionPending => self.decision_pending(context),
            Event::WaitOver if self.decision_paused => {
                self.decision_paused = false;
                context.push(Effect::LookForDecision {
                    step: *step,
                    issue: self.current_issue(),
                });
                Handled
            }
            Event::Decided {
                option: DecisionOption::Retry,
            } if self.budget_asked => {
                // The issue's budget was reached, no attempt spent: a person grants it again,
                // for at least one attempt whatever the last one cost.
                self.budget_asked = false;
                self.issue_cost_micros = 0;
                self.issue_elapsed_ms = 0;
                self.last_usage.cost_micros = 0;
                self.last_usage.elapsed_ms = 0;
                self.enter(*step, context)
            }
            Event::Decided {
                option: DecisionOption::Retry,
            } if self.weakening_asked => {
                // A person approved what the branch weakens: the step runs again with the
                // check off for the rest of the cycle, the attempt given back.
                self.weakening_asked = false;
                self.weakening_approved = true;
                let i = step.index();
                self.attempts[i] = self.attempts[i].saturating_sub(1);
                self.last_class[i] = None;
                self.enter(*step, context)
            }
            Event::Decided {
                option: DecisionOption::Retry,
            } => {
                // One more attempt: the spent attempt is given back, so the next failure
                // lands on this decision point again rather than past the limit.
                let i = step.index();
                self.attempts[i] = self.attempts[i].saturating_sub(1);
                self.same_failure[i] = 0;
                self.last_signature[i] = None;
                self.enter(*step, context)
            }
            Event::Decided {
                option: DecisionOption::Skip,
            } => {
                self.budget_asked = false;
                self.weakening_asked = false;
                self.escalate(*step, EscalationCause::OperatorSkipped, context)
            }
            Event::Decided {
                option: DecisionOption::Halt,
            } => self.halt(HaltReason::Operator, context),
            Event::DecisionTimedOut => self.halt(HaltReason::DecisionTimeout, context),
            _ => Super,
        }
    }

    /// Absorbing: nothing leaves a halt but a person (`--ack-halt` starts a new session).
    #[state]
    fn halted(reason: &HaltReason, event: &Event, context: &mut Fx) -> Outcome<State> {
        if let Event::Start | Event::ModeChanged { .. } = event {
            context.push(Effect::Halt(*reason));
            context.push(Effect::Exit { code: 1 });
        }
        Handled
    }

    /// Absorbing: the session ended normally (or a single issue/step run ended).
    #[state]
    fn finished(code: &u8, event: &Event, context: &mut Fx) -> Outcome<State> {
        if let Event::Start | Event::ModeChanged { .. } = event {
            context.push(Effect::Exit { code: *code });
        }
        Handled
    }
}
