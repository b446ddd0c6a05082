//! The events the exploration feeds each machine value: every kind, with payloads chosen to
//! satisfy every guard from that value (the issue under way, the outstanding request, the
//! last signature), and only where the runner can send them.

use crate::failure::{FailureClass, Signature};
use crate::machine::{Commit, Core, DecisionOption, Effect, Event, ReviewDecision, Signal, Usage};
use crate::step::{Check, Step};

/// A commit id for the exploration: which one never decides an edge, only whether two differ.
fn commit(n: u8) -> Commit {
    Commit::parse(&format!("{n:02x}").repeat(20)).unwrap_or_else(|| unreachable!("40 hex digits"))
}

/// Every kind of event, with payloads chosen to satisfy every guard from `core`'s value.
pub(super) fn alphabet(core: &Core) -> Vec<Event> {
    let usage = Usage {
        cost_micros: 400_000,
        elapsed_ms: 1_000,
        turns: 1,
    };
    let mut evs = vec![
        Event::Start,
        Event::NoIssues,
        Event::AllEscalated { others_hold: false },
        Event::AllBlocked { others_hold: false },
        Event::AllBlocked { others_hold: true },
        Event::StandBy,
        Event::WaitOver,
        Event::DecisionTimedOut,
        Event::ShutdownRequested {
            signal: Signal::Term,
            usage: Default::default(),
        },
        Event::NetworkUnavailable,
        Event::NetworkFailed,
        Event::TrackerUpdated,
        Event::IssueStillOpen,
        Event::TrackerWriteFailed,
        Event::TrackerReadFailed,
    ];
    // CI's verdicts are about commits; which one never decides an edge.
    evs.push(Event::CiPending {
        usage,
        commit: Some(commit(1)),
    });
    // (A person's moves and a conflict's repair, `CiPassed`, `BranchMoved`, `Repaired` and
    // `BranchUpdated`, are not explored: the space they open does not converge under
    // `exploration_key` within the explorer's limit; `tests/it/runner_actions.rs` covers them.)
    // The merge turn and lost races, where the limits share the merge (`exploration_limits`
    // keeps that space small).
    if core.runner().limits.merge_turn_wait_ms.is_some() {
        evs.extend([
            Event::MergeTurnTaken,
            Event::MergeTurnBusy,
            Event::MergeRaceLost {
                class: FailureClass::Unknown,
                signature: Signature(5),
                usage,
            },
        ]);
    }
    // The forge's merge queue holds the PR, answering the merge's run (or its look again).
    if let Some((
        _,
        Effect::RunStep {
            step: Step::Merge, ..
        },
    )) = core.runner().outstanding
    {
        evs.push(Event::MergeQueued { usage });
    }
    // What the reviewers decided, answering a look at the review.
    if let Some((_, Effect::LookAtReview { .. })) = core.runner().outstanding {
        evs.extend(
            [
                ReviewDecision::None,
                ReviewDecision::Approved,
                ReviewDecision::ChangesRequested,
            ]
            .map(|decision| Event::ReviewLooked {
                decision,
                feedback: Vec::new(),
            }),
        );
        // A request for changes with feedback the agent was not given: a round.
        let id = format!("explored-{}", core.runner().review_rounds);
        evs.push(Event::ReviewLooked {
            decision: ReviewDecision::ChangesRequested,
            feedback: vec![crate::machine::ReviewNote {
                id,
                author: "reviewer".into(),
                ..Default::default()
            }],
        });
    }
    let r = core.runner();
    let fresh = core
        .escalated()
        .iter()
        .chain(&r.merged)
        .chain(&r.withdrawn)
        .chain(&r.awaiting_person)
        .max()
        .map_or(1, |m| m + 1);
    // A stale tracker offering a finished issue again.
    if let Some(&done) = r.merged.iter().chain(&r.withdrawn).next() {
        evs.push(Event::IssueSelected { issue: done });
    }
    evs.push(Event::IssueSelected { issue: fresh });
    evs.push(Event::AlreadyMerged { issue: fresh });
    // The driver sends Resume only on start, when git shows progress: it may name any step.
    let resumed = core.runner().issue.unwrap_or(fresh);
    for next in Step::ALL {
        evs.push(Event::Resume {
            issue: resumed,
            next,
        });
    }
    if let Some(&old) = core.escalated().iter().next() {
        evs.push(Event::IssueSelected { issue: old });
    }
    for option in DecisionOption::ALL {
        evs.push(Event::Decided { option });
    }
    evs.push(Event::DecisionPending);
    if let Some(issue) = core.runner().issue {
        evs.push(Event::IssueWithdrawn { issue });
    }
    // Claims, where runners share a tracker: the answers to a claim, and to a renewal.
    if let Some((_, Effect::ClaimIssue { issue })) = core.runner().outstanding {
        evs.extend([Event::ClaimTaken { issue }, Event::ClaimHeld { issue }]);
    }
    // A fleet pause answers a step's request instead of the request's own answer; only a
    // fleet shares its merges, so the limits that share them show it (the space stays small).
    if let Some((asked_in, Effect::RunStep { .. } | Effect::CheckPreconditions { .. })) =
        core.runner().outstanding
    {
        if asked_in == *core.state() && core.runner().limits.merge_turn_wait_ms.is_some() {
            evs.push(Event::FleetPaused { seconds: 30 });
        }
    }
    if let (Some(_), Some(issue)) = (core.held_back(), core.runner().issue) {
        evs.extend([Event::ClaimRenewed, Event::ClaimLost { issue }]);
    }
    if let Some(step) = core.state().step() {
        evs.push(Event::WorkspaceUnfit { step });
        evs.push(Event::PreconditionsOk { step });
        evs.push(Event::AlreadyDone { step });
        if let Some(&check) = Check::of(step).first() {
            evs.push(Event::PreconditionFailed { step, check });
        }
        evs.push(Event::StepSucceeded { step, usage });
        let last = core.runner().last_signature[step.index()].map_or(0, |s| s.0);
        for (class, sig, hint) in [
            (FailureClass::TestAssertion, last + 1, None),
            (FailureClass::TestAssertion, last, None),
            (FailureClass::ContextWindow, last + 1, None),
            (FailureClass::RateLimit, 7, None),
            (FailureClass::Quota, 8, Some(60)),
            (FailureClass::Quota, 8, Some(u64::MAX)),
            (FailureClass::Auth, 9, None),
        ] {
            evs.push(Event::StepFailed {
                step,
                class,
                signature: Signature(sig),
                usage,
                wait_hint_secs: hint,
            });
        }
        // CI failed on the commit main would hold: monitorCI's failure, answering a merge.
        if step == Step::Merge {
            let last = core.runner().last_signature[Step::MonitorCi.index()].map_or(0, |s| s.0);
            evs.push(Event::CiFailedTogether {
                class: FailureClass::TestAssertion,
                signature: Signature(last + 1),
                usage,
            });
        }
    }
    evs
}
