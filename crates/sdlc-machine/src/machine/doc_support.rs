//! What the doctests of `Effect`'s requests share: a machine driven by hand, every request
//! answered as a run that goes well would answer it unless the test says otherwise.

use super::{Commit, Core, Effect, Event, Limits, Mode, ReviewDecision, Usage};

/// The commit the doctests' CI passes.
pub fn head() -> Commit {
    Commit::parse("7777777777777777777777777777777777777777").expect("40 hex digits")
}

/// The answer of a run that goes well: the issue is 1, every check holds, every step and
/// call succeeds, CI passes `HEAD`, the review approves.
pub fn ok(request: &Effect) -> Event {
    let usage = Usage::default();
    match *request {
        Effect::SelectIssue => Event::IssueSelected { issue: 1 },
        Effect::CheckPreconditions { step } => Event::PreconditionsOk { step },
        Effect::RunStep {
            step: crate::step::Step::MonitorCi,
            ..
        } => Event::CiPassed {
            commit: head(),
            usage,
        },
        Effect::RunStep { step, .. } => Event::StepSucceeded { step, usage },
        Effect::LookAtCi { .. } => Event::CiPassed {
            commit: head(),
            usage,
        },
        Effect::LookAtReview { .. } => Event::ReviewLooked {
            decision: ReviewDecision::Approved,
            feedback: Vec::new(),
        },
        Effect::AddressReview { .. } => Event::Repaired {
            step: crate::step::Step::MonitorCi,
            usage,
        },
        Effect::UpdateBranch { .. } => Event::BranchUpdated {
            head: head(),
            usage,
        },
        Effect::Wait { .. } | Effect::Pause { .. } => Event::WaitOver,
        Effect::TakeMergeTurn { .. } => Event::MergeTurnTaken,
        Effect::ClaimIssue { issue } => Event::ClaimTaken { issue },
        Effect::RenewClaim { .. } => Event::ClaimRenewed,
        Effect::AskDecision { .. } | Effect::LookForDecision { .. } => Event::DecisionPending,
        _ => Event::TrackerUpdated,
    }
}

/// A failure of `step` by the code, the same each time.
pub fn failed(step: crate::step::Step) -> Event {
    Event::StepFailed {
        step,
        class: crate::failure::FailureClass::TestAssertion,
        signature: crate::failure::Signature(1),
        usage: Usage::default(),
        wait_hint_secs: None,
    }
}

/// A machine with `limits`, started: its first request is `SelectIssue`.
pub fn started(limits: Limits) -> Core {
    let mut core = Core::new(limits, Mode::Continuous);
    core.handle(&Event::Start);
    core
}

/// Answers `core`'s requests, starting with `event`, by `answer` (falling back on [`ok`])
/// until a request `stop` picks; returns it, unanswered.
///
/// # Panics
///
/// When the machine ignores an answer or the run ends first: the doctest is wrong.
pub fn until(
    core: &mut Core,
    event: Event,
    stop: impl Fn(&Effect) -> bool,
    mut answer: impl FnMut(&Effect) -> Option<Event>,
) -> Effect {
    let mut event = event;
    for _ in 0..10_000 {
        let request = match core.handle(&event).request() {
            Some(request) => *request,
            None => panic!("{event:?} ignored in {:?}", core.state()),
        };
        if stop(&request) {
            return request;
        }
        assert!(
            !matches!(request, Effect::Exit { .. }),
            "the run ended: {:?}",
            core.state()
        );
        event = answer(&request).unwrap_or_else(|| ok(&request));
    }
    panic!("no such request in 10000 events")
}
