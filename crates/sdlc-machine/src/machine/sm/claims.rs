//! Issue claims among runners sharing a tracker (docs/scaling.md, "Claims"): the selected
//! issue is claimed before its cycle starts; an issue another runner holds is left out and
//! the tracker asked again; a claim the tracker cannot write halts naming the issue.

use super::{Fx, Runner, State};
use crate::machine::types::*;
use crate::step::Step;
use statig::prelude::*;

impl Runner {
    /// The tracker offered `issue`: claim it first where issues are claimed, else start.
    pub(super) fn selected(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        let first = match self.mode {
            Mode::SingleStep(step) => step,
            _ => Step::StartCycle,
        };
        // An excluded issue is the tracker's fault and halts in `start_issue_cycle`; a single
        // step works on the issue at hand, claimed or not, as before.
        if !self.limits.claims || self.excluded(issue) || self.single_step() {
            return self.start_issue_cycle(issue, first, fx);
        }
        if self.held_elsewhere.contains(&issue) {
            // Left out of the question and offered anyway: asking again would loop.
            return self.halt(HaltReason::TrackerStale { issue }, fx);
        }
        self.request(State::selecting(), Effect::ClaimIssue { issue }, fx);
        Handled
    }

    /// Whether the claim on `issue` was asked for and has no answer yet.
    pub(super) fn claiming(&self, issue: u32) -> bool {
        matches!(self.outstanding, Some((_, Effect::ClaimIssue { issue: i })) if i == issue)
    }

    /// The claim is this runner's: the cycle starts.
    pub(super) fn claim_taken(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.start_issue_cycle(issue, Step::StartCycle, fx)
    }

    /// Another runner holds `issue`: leave it out until this runner's next cycle starts, and
    /// ask the tracker again. Each answer leaves one more issue out, so this ends.
    pub(super) fn claim_held(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        self.held_elsewhere.insert(issue);
        self.request(State::selecting(), Effect::SelectIssue, fx);
        Handled
    }

    /// The claim could not be written: the tracker's failure, never the issue's.
    pub(super) fn claim_refused(&mut self, fx: &mut Fx) -> Outcome<State> {
        let issue = match self.outstanding {
            Some((_, Effect::ClaimIssue { issue })) => issue,
            _ => 0,
        };
        self.halt(HaltReason::ClaimRefused { issue }, fx)
    }

    /// Another runner took the issue under way over: stop as on a signal (the work in the
    /// tree is committed, the session stays open), so that only one runner works on it.
    pub(super) fn claim_lost(&mut self, issue: u32, fx: &mut Fx) -> Outcome<State> {
        fx.push(Effect::Cleanup);
        if self.issue.is_some() {
            fx.push(Effect::AutoCommit(CommitKind::OnSignal(Signal::Term)));
        }
        fx.push(Effect::Notify(Notice::ClaimLost { issue }));
        fx.push(Effect::Exit { code: 0 });
        self.dispatched = false;
        Handled
    }
}

/// The renewal a request waits for where issues are claimed: before every request that
/// works on the issue or waits, the claim must outlast the step (`secs` 0) or the wait by a
/// lease. Before a step a claim with more than half its lease left needs no write, so a
/// tracker whose claims are comments is not written at every step; before a wait it is
/// always written, to outlast the wait.
pub(crate) fn renewal_before(limits: &Limits, issue: u32, request: &Effect) -> Option<Effect> {
    if !limits.claims {
        return None;
    }
    let secs = match *request {
        Effect::RunStep { .. }
        | Effect::CheckPreconditions { .. }
        | Effect::LookAtCi { .. }
        | Effect::LookAtReview { .. }
        | Effect::UpdateBranch { .. }
        | Effect::TakeMergeTurn { .. } => 0,
        Effect::Wait { seconds, .. } => seconds,
        Effect::Pause { millis, .. } => millis.div_ceil(1000),
        Effect::AskDecision { .. } => limits.decision_wait_secs,
        _ => return None,
    };
    Some(Effect::RenewClaim {
        issue,
        secs,
        lease_secs: limits
            .claim_lease_secs
            .map_or(0, |lease| lease.saturating_add(secs)),
        fresh_secs: limits
            .claim_lease_secs
            .filter(|_| secs == 0)
            .map(|lease| lease / 2),
    })
}
