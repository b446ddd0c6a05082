//! The model's claims (docs/scaling.md, "Claims"): a claiming runner claims the selected issue
//! before its cycle starts, leaves out an issue another runner holds, halts on a claim the
//! tracker refuses, renews the claim before every request that works on the issue or waits,
//! and stops at once when the issue was taken over.

use super::{At, Model};
use crate::common::renewal_due;
use sdlc_machine::machine::{CommitKind, Effect, Event, HaltReason, Notice, Signal};
use sdlc_machine::step::Step;

impl Model {
    /// The tracker offered `issue`: a claiming runner asks for the claim first. A single step
    /// works on the issue at hand, and an issue the session is done with halts on its own.
    pub(super) fn offered(&mut self, issue: u32) {
        let done = self.escalated.contains(&issue)
            || self.merged.contains(&issue)
            || self.withdrawn.contains(&issue);
        if !self.l.claims || done || self.single_step() {
            return self.start_cycle(issue, self.first_step());
        }
        if self.held.contains(&issue) {
            // Left out, and offered again: asking once more would loop.
            return self.halt(HaltReason::TrackerStale { issue });
        }
        self.ask(At::Selecting, Effect::ClaimIssue { issue });
    }

    /// The issue whose claim is asked for, if an answer is awaited.
    fn claim_asked(&self) -> Option<u32> {
        match self.outstanding {
            Some((At::Selecting, Effect::ClaimIssue { issue })) => Some(issue),
            _ => None,
        }
    }

    /// An answer to the claim; `false` when `ev` is none.
    pub(super) fn on_claim_answer(&mut self, ev: &Event) -> bool {
        let Some(asked) = self.claim_asked() else {
            return false;
        };
        match *ev {
            Event::ClaimTaken { issue } if issue == asked => {
                self.start_cycle(issue, Step::StartCycle)
            }
            Event::ClaimHeld { issue } if issue == asked => {
                self.held.insert(issue);
                self.ask(At::Selecting, Effect::SelectIssue);
            }
            Event::TrackerWriteFailed => self.halt(HaltReason::ClaimRefused { issue: asked }),
            _ => return false,
        }
        true
    }

    /// Another runner took the issue over: stop before any other request, as on a signal.
    pub(super) fn claim_lost(&mut self, issue: u32) {
        self.fx.push(Effect::Cleanup);
        if self.issue.is_some() {
            self.fx
                .push(Effect::AutoCommit(CommitKind::OnSignal(Signal::Term)));
        }
        self.fx.push(Effect::Notify(Notice::ClaimLost { issue }));
        self.fx.push(Effect::Exit { code: 0 });
        self.dispatched = false;
    }

    /// With an issue under way, a claiming runner issues `RenewClaim` in place of such a
    /// request and keeps the request until the renewal is answered.
    pub(super) fn renew_first(&mut self) {
        let Some(issue) = self.issue.filter(|_| self.l.claims) else {
            return;
        };
        let Some(at) = self.fx.iter().position(Effect::is_request) else {
            return;
        };
        if let Some(secs) = renewal_due(&self.l, &self.fx[at]) {
            self.held_back = Some(self.fx[at]);
            self.fx[at] = crate::common::renewal_for(&self.l, issue, secs);
        }
    }

    /// The renewal's answer: renewed, or not writable (the lease may lapse; the next renewal
    /// tells), the request held back goes out as it was. Any other event drops it; a step's
    /// run or a look at CI dropped so is remembered for this event as never started.
    pub(super) fn after_renewal(&mut self, ev: &Event) -> Option<Effect> {
        self.unsent_run = None;
        let request = self.held_back.take()?;
        if matches!(
            ev,
            Event::ClaimRenewed | Event::TrackerWriteFailed | Event::NetworkFailed
        ) {
            return Some(request);
        }
        if let Effect::RunStep { .. } | Effect::LookAtCi { .. } = request {
            self.unsent_run = Some(request);
        }
        None
    }
}
