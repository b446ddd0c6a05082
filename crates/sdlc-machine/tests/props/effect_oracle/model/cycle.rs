//! The model's cycle: an issue started, each step entered after the last, merged or
//! withdrawn.

use super::{At, Model};
use sdlc_machine::failure::FailureClass;
use sdlc_machine::machine::{Effect, Event, HaltReason, Mode, Notice, Spend, WaitReason};
use sdlc_machine::step::Step;

impl Model {
    pub(super) fn start_cycle(&mut self, issue: u32, first: Step) {
        if self.escalated.contains(&issue) {
            return self.halt(HaltReason::AllIssuesEscalated);
        }
        if self.merged.contains(&issue) || self.withdrawn.contains(&issue) {
            return self.halt(HaltReason::TrackerStale { issue });
        }
        self.issue = Some(issue);
        self.held.clear();
        self.dispatched = false;
        self.attempts = [0; Step::COUNT];
        self.bounces = 0;
        self.same = [0; Step::COUNT];
        self.last_sig = [None; Step::COUNT];
        self.last_class = [None; Step::COUNT];
        self.repairs = [0; Step::COUNT];
        self.failed_how = Default::default();
        self.issue_cost = 0;
        self.budget_asked = false;
        self.issue_ms = 0;
        self.rerun = false;
        self.fx.push(Effect::Notify(Notice::CycleStarted { issue }));
        self.enter(first);
    }

    pub(super) fn merged(&mut self, issue: u32) {
        self.streak = 0;
        self.last_escalation = None;
        self.merged.insert(issue);
        self.merges += 1;
        self.since_merge = Spend::default();
        self.failed_by_class = [Spend::default(); FailureClass::COUNT];
        self.dispatched = false;
        self.close_waits = 0;
        self.look_for_close(issue);
    }

    /// The tracker is asked whether it closed the merged issue; while waits are left, one
    /// still open is left to the tracker; after the last, the runner closes it.
    pub(super) fn look_for_close(&mut self, issue: u32) {
        let wait = self.close_waits < u32::from(self.l.tracker_close_waits);
        self.ask(
            At::RecordingMerge(issue),
            Effect::RecordMerged { issue, wait },
        );
    }

    /// `IssueStillOpen` while recording a merge: the next wait (2 s doubling) if the look
    /// was one that waits; anything else hears nothing.
    pub(super) fn on_still_open(&mut self, issue: u32) {
        if !matches!(
            self.outstanding,
            Some((_, Effect::RecordMerged { wait: true, .. }))
        ) {
            return;
        }
        self.close_waits += 1;
        let seconds = 2u64 << (self.close_waits - 1);
        self.fx.push(Effect::Wait {
            seconds,
            reason: Some(WaitReason::TrackerClose),
        });
        self.at = At::CloseWait(issue, seconds);
    }

    pub(super) fn on_close_wait(&mut self, issue: u32, seconds: u64, ev: &Event) -> bool {
        match *ev {
            Event::WaitOver => self.look_for_close(issue),
            Event::Start | Event::ModeChanged { .. } => {
                if let Event::ModeChanged { mode } = *ev {
                    self.mode = mode;
                }
                self.fx.push(Effect::Wait {
                    seconds,
                    reason: Some(WaitReason::TrackerClose),
                });
            }
            _ => return false,
        }
        true
    }

    pub(super) fn merge_recorded(&mut self, issue: u32) {
        self.fx.push(Effect::Notify(Notice::Merged { issue }));
        self.fx.push(Effect::CheckoutMain);
        if matches!(self.mode, Mode::SingleIssue(_)) {
            return self.finish(0);
        }
        self.fx.push(Effect::ResetCycle);
        self.select_next();
    }

    pub(super) fn withdraw(&mut self, issue: u32) {
        self.withdrawn.insert(issue);
        self.dispatched = false;
        self.fx.extend([
            Effect::Cleanup,
            Effect::CheckoutMain,
            Effect::Notify(Notice::Withdrawn { issue }),
        ]);
        if matches!(self.mode, Mode::SingleIssue(_)) {
            return self.finish(0);
        }
        self.fx.push(Effect::ResetCycle);
        self.select_next();
    }

    pub(super) fn advance(&mut self, step: Step) {
        if self.single_step() {
            return self.finish(0);
        }
        match self.l.next_step(step) {
            Some(next) => self.enter(next),
            None => self.merged(self.issue()),
        }
    }
}
