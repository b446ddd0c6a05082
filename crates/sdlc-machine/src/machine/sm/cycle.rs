//! A cycle's course: selecting an issue, entering its steps one after another, and the ends
//! that are not escalations (merged, withdrawn by a person, halted, finished).

use super::state::state_of;
use super::{Fx, Runner, Spend, State};
use crate::failure::FailureClass;
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

impl Runner {
    /// Enter a step: ask for its preconditions.
    pub(super) fn enter(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        self.dispatched = false;
        // A turn is never held across a new entry: a restart or a bounce lost or gave it.
        self.paused_for_turn = false;
        self.turn_held = false;
        self.request(state_of(step), Effect::CheckPreconditions { step }, fx);
        Transition(state_of(step))
    }

    pub(super) fn halt(&mut self, reason: HaltReason, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Cleanup);
        fx.push(Effect::Halt(reason));
        fx.push(Effect::Exit { code: 1 });
        Transition(State::halted(reason))
    }

    pub(super) fn finish(&mut self, code: u8, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Exit { code });
        Transition(State::finished(code))
    }

    pub(super) fn select_next(&mut self, fx: &mut Fx) -> Outcome<State> {
        self.issue = None;
        self.dispatched = false;
        self.request(State::selecting(), Effect::SelectIssue, fx);
        Transition(State::selecting())
    }

    pub(super) fn start_issue_cycle(
        &mut self,
        issue: u32,
        first: Step,
        fx: &mut Fx,
    ) -> Outcome<State> {
        if self.escalated.contains(&issue) {
            // The tracker excludes escalated issues; if one comes back anyway, the tracker
            // cannot make progress and nobody should spend compute on that issue again.
            return self.halt(HaltReason::AllIssuesEscalated, fx);
        }
        if self.merged.contains(&issue) || self.withdrawn.contains(&issue) {
            // Merged is final and a person's decision stands: a tracker that offers such an
            // issue again would make the runner repeat finished work.
            return self.halt(HaltReason::TrackerStale { issue }, fx);
        }
        self.begin_cycle(issue);
        fx.push(Effect::Notify(Notice::CycleStarted { issue }));
        self.enter(first, fx)
    }

    /// The merge happened: it is final for the session from here on, whatever the tracker
    /// says next. Then the tracker is told.
    pub(super) fn merged(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.consecutive_escalations = 0;
        self.last_escalation = None;
        self.merged.insert(issue);
        self.stats.merges += 1;
        self.stats.since_merge = Spend::default();
        self.stats.failed_by_class = [Spend::default(); FailureClass::COUNT];
        self.dispatched = false;
        self.close_waits = 0;
        self.look_for_close(issue, fx)
    }

    /// Ask the tracker whether it closed the merged issue: while waits are left, an issue
    /// still open is left to the tracker's own close (GitHub's from `Closes #N`, a second or
    /// two after the merge); after the last, the runner closes it itself.
    pub(super) fn look_for_close(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        let wait = self.close_waits < u32::from(self.limits.tracker_close_waits);
        let state = State::recording_merge(issue);
        self.request(state, Effect::RecordMerged { issue, wait }, fx);
        Transition(state)
    }

    /// The tracker has not closed the merged issue yet: the next wait of the close's
    /// schedule, then a look again. Only a look that waits is answered so.
    pub(super) fn still_open(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        if !matches!(
            self.outstanding,
            Some((_, Effect::RecordMerged { wait: true, .. }))
        ) {
            return Handled;
        }
        self.close_waits += 1;
        let seconds = self.limits.close_wait_secs(self.close_waits);
        fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::TrackerClose),
        });
        Transition(State::waiting_for_close(issue, seconds))
    }

    /// The tracker recorded the merge: announce it and go on.
    pub(super) fn merge_recorded(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Notify(Notice::Merged { issue }));
        fx.push(Effect::CheckoutMain);
        if let Mode::SingleIssue(_) = self.mode {
            return self.finish(0, fx);
        }
        fx.push(Effect::ResetCycle);
        self.select_next(fx)
    }

    /// A person took the issue back: drop the cycle (the branch stays), blame nobody.
    pub(super) fn withdraw(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.withdrawn.insert(issue);
        self.dispatched = false;
        fx.push(Effect::Cleanup);
        fx.push(Effect::CheckoutMain);
        fx.push(Effect::Notify(Notice::Withdrawn { issue }));
        if let Mode::SingleIssue(_) = self.mode {
            return self.finish(0, fx);
        }
        fx.push(Effect::ResetCycle);
        self.select_next(fx)
    }

    /// The step is done (run or already satisfied): move on.
    pub(super) fn advance(&mut self, step: Step, fx: &mut Fx) -> Outcome<State> {
        if self.single_step() {
            return self.finish(0, fx);
        }
        if self.gates_merge(step) {
            return self.look_at_review(fx);
        }
        match self.limits.next_step(step) {
            Some(next) => self.enter(next, fx),
            None => self.merged(self.current_issue(), fx),
        }
    }
}
