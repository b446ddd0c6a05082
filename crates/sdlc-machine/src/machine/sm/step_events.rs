//! What the ten step states do with each event (`on_step`), including a restart, which
//! counts an interrupted attempt, and a restart in another mode.

use super::{Fx, Runner, State};
use crate::failure::{FailureClass, Signature};
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

impl Runner {
    /// On (re)start in a step state: a dispatched attempt without a recorded outcome did not
    /// survive the runner, so it failed (`KILLED`); otherwise the step is entered again. A
    /// run (or look at CI) the runner died holding back for a claim renewal never started:
    /// it is asked for again as it was, the same attempt, behind a new renewal.
    pub(super) fn restart_step(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if self.dispatched && fx.unsent {
            return self.reissue(fx);
        }
        if self.dispatched {
            // What the call had spent before it died (`KilledCallSpent`), and what the
            // attempt cost before the call (its looks at CI), count with the attempt.
            let usage = self.with_pending(&Usage::default());
            return self.failed(
                step,
                FailureClass::Killed,
                Signature::INTERRUPTED,
                &usage,
                None,
                fx,
            );
        }
        self.enter(step, fx)
    }

    /// `KilledCallSpent`: the running cost a dead call had journaled joins what the attempt
    /// under way cost, for the restart's `KILLED` attempt to count. Nothing is dispatched, or
    /// the call already answered: nothing was spent that is not counted.
    pub(super) fn killed_call_spent(&mut self, usage: &Usage) {
        if self.dispatched {
            self.pending_usage = self.with_pending(usage);
        }
    }

    /// A restart in another mode. Counters carry over; the cycle in progress continues unless
    /// the new mode is about another issue (it is put aside: main checked out, the cycle's
    /// counters dropped, not escalated) or names a single step (that step is entered).
    /// `None`: carry on as on `Start`.
    pub(super) fn change_mode(&mut self, mode: Mode, fx: &mut Fx) -> Option<Outcome<State>> {
        self.mode = mode;
        match (mode, self.issue) {
            (Mode::SingleIssue(n), Some(current)) if n != current => {
                self.dispatched = false;
                fx.push(Effect::CheckoutMain);
                fx.push(Effect::ResetCycle);
                Some(self.select_next(fx))
            }
            (Mode::SingleStep(step), Some(_)) => Some(self.enter(step, fx)),
            _ => None,
        }
    }

    /// Everything a step state does; the ten step handlers only name their step. Here: a
    /// restart, a change of mode, the answers to a look at the step's preconditions; the
    /// rest in turn by `on_attempt_answer`, `on_merge_answer`, `on_news`.
    pub(super) fn on_step(&mut self, step: Step, event: &Event, fx: &mut Fx) -> Outcome<State> {
        match *event {
            Event::Start => self.restart_step(step, fx),
            Event::KilledCallSpent { ref usage } => {
                self.killed_call_spent(usage);
                Handled
            }
            // `--step` naming the step whose attempt was cut short: that attempt counts, as
            // on any restart, or a crash loop under `--step` would never escalate.
            Event::ModeChanged {
                mode: mode @ Mode::SingleStep(s),
            } if s == step && self.dispatched => {
                self.mode = mode;
                self.restart_step(step, fx)
            }
            Event::ModeChanged { mode } => match self.change_mode(mode, fx) {
                Some(outcome) => outcome,
                None => self.restart_step(step, fx),
            },
            Event::PreconditionsOk { step: s } if s == step && !self.dispatched => {
                if step == Step::Merge && self.turn_held {
                    self.turn_held = false;
                    return self.merge_in_turn(fx);
                }
                if step == Step::Merge {
                    return self.merge_ready(fx);
                }
                self.dispatch(step, fx)
            }
            Event::AlreadyDone { step: s } if s == step && !self.dispatched => {
                self.give_turn_back(step, fx);
                self.advance(step, fx)
            }
            Event::PreconditionFailed { step: s, check } if s == step && !self.dispatched => {
                if let Some(outcome) = self.checks_failed_after_race(step, fx) {
                    return outcome;
                }
                self.give_turn_back(step, fx);
                self.bounce(step, check, fx)
            }
            Event::WorkspaceUnfit { step: s } if s == step => {
                self.halt(HaltReason::Workspace { step }, fx)
            }
            _ => self.on_attempt_answer(step, event, fx),
        }
    }

    /// What the attempt under way answers: succeeded, failed, CI still running or passed, a
    /// builtin step's repair done.
    fn on_attempt_answer(&mut self, step: Step, event: &Event, fx: &mut Fx) -> Outcome<State> {
        match *event {
            Event::StepSucceeded { step: s, usage } if s == step && self.dispatched => {
                if step == Step::Merge {
                    self.release_merge_turn(fx);
                }
                let usage = self.with_pending(&usage);
                self.succeeded(step, &usage, fx)
            }
            Event::StepFailed {
                step: s,
                class,
                usage,
                ..
            } if s == step && self.dispatched && self.push_decides_the_repair(step, class) => {
                self.push_repaired(&usage, fx)
            }
            Event::StepFailed {
                step: s,
                class,
                signature,
                usage,
                wait_hint_secs,
            } if s == step && self.dispatched => {
                if step == Step::Merge {
                    self.release_merge_turn(fx);
                }
                let usage = self.with_pending(&usage);
                self.failed(step, class, signature, &usage, wait_hint_secs, fx)
            }
            Event::CiPending { usage, commit } if step == Step::MonitorCi && self.dispatched => {
                self.ci_commit = commit.or(self.ci_commit);
                self.ci_pending(&usage, fx)
            }
            Event::CiPassed { commit, usage } if step == Step::MonitorCi && self.dispatched => {
                self.ci_commit = Some(commit);
                self.verified = Some(commit);
                let usage = self.with_pending(&usage);
                self.succeeded(step, &usage, fx)
            }
            Event::Repaired { step: s, usage }
                if s == step && step == Step::Merge && self.dispatched =>
            {
                self.update_branch(&usage, fx)
            }
            Event::Repaired { step: s, usage }
                if s == step && step == Step::MonitorCi && self.dispatched =>
            {
                self.ci_repaired(&usage, fx)
            }
            Event::Repaired { step: s, usage }
                if s == step && step == Step::CommitPush && self.dispatched =>
            {
                self.push_repaired(&usage, fx)
            }
            _ => self.on_merge_answer(step, event, fx),
        }
    }

    /// What only the merge hears: its own answers (a conflict, a branch behind or updated, a
    /// race lost, the queue, CI failed on the two together) and the merge turn's.
    fn on_merge_answer(&mut self, step: Step, event: &Event, fx: &mut Fx) -> Outcome<State> {
        match *event {
            Event::MergeConflict { ref paths, usage } if step == Step::Merge && self.dispatched => {
                self.release_merge_turn(fx);
                let usage = self.with_pending(&usage);
                self.merge_conflict(paths, &usage, fx)
            }
            Event::BranchBehind { usage } if step == Step::Merge && self.dispatched => {
                self.branch_behind(&usage, fx)
            }
            Event::BranchUpdated { head, usage } if step == Step::Merge && self.dispatched => {
                self.merge_repaired(head, &usage, fx)
            }
            Event::MergeRaceLost {
                class,
                signature,
                usage,
            } if step == Step::Merge && self.dispatched => {
                self.merge_race_lost(class, signature, &usage, fx)
            }
            Event::MergeQueued { usage } if step == Step::Merge && self.dispatched => {
                self.merge_queued(&usage, fx)
            }
            Event::CiFailedTogether {
                class,
                signature,
                usage,
            } if step == Step::Merge && self.dispatched => {
                self.ci_failed_together(class, signature, &usage, fx)
            }
            Event::MergeTurnTaken if self.turn_asked(step) => self.merge_turn_taken(fx),
            Event::MergeTurnBusy if self.turn_asked(step) => self.merge_turn_busy(fx),
            // The tracker's merge lease cannot be written: the environment's, like a wait
            // past its limit.
            Event::TrackerWriteFailed if self.turn_asked(step) => {
                let waited_ms = self.merge_wait.waited_ms();
                self.halt(HaltReason::MergeTurnHeld { waited_ms }, fx)
            }
            _ => self.on_news(step, event, fx),
        }
    }

    /// What the world says in any step: the branch moved, the issue merged or withdrawn by
    /// someone else, the network or an API's rate limit failing a call.
    fn on_news(&mut self, step: Step, event: &Event, fx: &mut Fx) -> Outcome<State> {
        match *event {
            Event::BranchMoved { ours, head, on_top } if self.looks_at_the_branch(step) => {
                self.branch_moved(step, ours, head, on_top, fx)
            }
            Event::AlreadyMerged { issue }
                if Some(issue) == self.issue && self.looks_at_the_branch(step) =>
            {
                self.let_go_of_turn(step, fx);
                self.merged(issue, fx)
            }
            Event::IssueWithdrawn { issue }
                if Some(issue) == self.issue
                    && self.dispatched
                    && self.looks_at_the_branch(step) =>
            {
                self.let_go_of_turn(step, fx);
                self.withdraw(issue, fx)
            }
            Event::NetworkFailed => self.network_failed(fx),
            Event::RateLimited { wait_secs } => self.rate_limited(wait_secs, fx),
            Event::IssueWithdrawn { issue } if Some(issue) == self.issue && !self.dispatched => {
                self.give_turn_back(step, fx);
                self.withdraw(issue, fx)
            }
            _ => Super,
        }
    }
}
