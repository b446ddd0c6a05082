//! The model's cycle: an issue started, each step entered after the last, merged or
//! withdrawn.

use super::{At, Model};
use sdlc_machine::failure::FailureClass;
use sdlc_machine::machine::{Effect, HaltReason, Mode, Notice, Spend};
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
        self.ask(At::RecordingMerge(issue), Effect::RecordMerged { issue });
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
