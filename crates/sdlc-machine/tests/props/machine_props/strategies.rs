//! The generators of the properties: limits, failure classes, scripted replies, events.

use crate::common::{ClaimReply, Reply};
use proptest::prelude::*;
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{Event, Limits, Usage};
use sdlc_machine::step::Step;

pub fn limits() -> impl Strategy<Value = Limits> {
    (
        1u32..=4,
        0u32..=3,
        1u32..=3,
        prop_oneof![Just(0u32), Just(2), Just(3)],
        0u32..=2,
        any::<bool>(),
        prop::collection::vec((0usize..Step::COUNT, 0u32..=4), 0..3),
        // monitorCI's time limit: no wait for CI, two, or the default's seven.
        proptest::sample::select(vec![0u64, 30, 600]),
        // Runners sharing a tracker claim their issues; a turn to take before merging (none:
        // a runner alone), with a wait for it of one pause, a few, or many.
        (
            any::<bool>(),
            proptest::sample::select(vec![None, Some(1u64), Some(900), Some(5_000)]),
            // The claim's lease: a minute, the default hour, or none (an earlier version's).
            proptest::sample::select(vec![Some(60u64), Some(3600), None]),
        ),
    )
        .prop_map(
            |(r, b, e, s, w, simplify, phases, ci, (claims, turn, lease))| {
                let mut f = [0u32; Step::COUNT];
                for (i, v) in phases {
                    f[i] = v;
                }
                Limits {
                    max_retries_per_step: r,
                    max_bounce_retries: b,
                    max_consecutive_escalations: e,
                    max_consecutive_same_failure: s,
                    max_consecutive_failures: f,
                    max_rate_limit_waits: w,
                    simplify_enabled: simplify,
                    ci_timeout_secs: ci,
                    claims,
                    claim_lease_secs: lease,
                    merge_turn_wait_ms: turn,
                    ..Limits::default()
                }
            },
        )
}

pub fn class() -> impl Strategy<Value = FailureClass> {
    prop_oneof![
        6 => Just(FailureClass::TestAssertion),
        2 => Just(FailureClass::BuildCompile),
        1 => Just(FailureClass::Timeout),
        2 => Just(FailureClass::RateLimit),
        1 => Just(FailureClass::Network),
        1 => Just(FailureClass::Quota),
        1 => Just(FailureClass::ContextWindow),
        1 => Just(FailureClass::Auth),
        1 => Just(FailureClass::GitTampered),
        1 => Just(FailureClass::TestsWeakened),
    ]
}

pub fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        4 => Just(Reply::Ok),
        5 => (class(), 1u64..4).prop_map(|(c, s)| Reply::Fail(c, s)),
        2 => Just(Reply::Precondition),
        1 => Just(Reply::AlreadyDone),
        1 => Just(Reply::Crash),
        1 => Just(Reply::Network),
        2 => Just(Reply::CiPending),
    ]
}

/// What the world answers: one queue of replies per step, and the claim store's answers in
/// the order claims and renewals are asked for. An exhausted queue cooperates (`Ok`, `Yes`),
/// so every script ends.
#[derive(Debug, Clone)]
pub struct Script {
    pub steps: Vec<Vec<Reply>>,
    pub claims: Vec<ClaimReply>,
}

pub fn queues() -> impl Strategy<Value = Script> {
    (
        prop::collection::vec(
            prop_oneof![Just(vec![]), prop::collection::vec(reply(), 0..14)],
            10,
        ),
        prop_oneof![Just(vec![]), prop::collection::vec(claim_reply(), 0..40)],
    )
        .prop_map(|(steps, claims)| Script { steps, claims })
}

/// Mostly a claim taken or renewed; now and then held or lost to another runner, not
/// writable, failing on the network, or the runner dying while it is asked.
pub fn claim_reply() -> impl Strategy<Value = ClaimReply> {
    prop_oneof![
        14 => Just(ClaimReply::Yes),
        1 => Just(ClaimReply::Other),
        2 => Just(ClaimReply::Unwritable),
        2 => Just(ClaimReply::Network),
        1 => Just(ClaimReply::Crash),
    ]
}

/// Replies of a merge among other mergers: lost races and a busy turn besides the rest.
pub fn merge_queue() -> impl Strategy<Value = Vec<Reply>> {
    prop::collection::vec(
        prop_oneof![
            3 => reply(),
            2 => Just(Reply::LostRace),
            2 => Just(Reply::Busy),
        ],
        0..20,
    )
}

pub fn any_event() -> impl Strategy<Value = Event> {
    let step = (0usize..Step::COUNT).prop_map(|i| Step::ALL[i]);
    prop_oneof![
        Just(Event::Start),
        Just(Event::NoIssues),
        Just(Event::WaitOver),
        Just(Event::ClaimRenewed),
        Just(Event::MergeTurnTaken),
        Just(Event::MergeTurnBusy),
        Just(Event::TrackerWriteFailed),
        (1u32..9).prop_map(|issue| Event::IssueSelected { issue }),
        (1u32..9).prop_map(|issue| Event::ClaimTaken { issue }),
        (1u32..9).prop_map(|issue| Event::ClaimHeld { issue }),
        (1u32..9).prop_map(|issue| Event::ClaimLost { issue }),
        step.clone()
            .prop_map(|step| Event::PreconditionsOk { step }),
        step.clone().prop_map(|step| Event::StepSucceeded {
            step,
            usage: Usage::default()
        }),
        (step, class()).prop_map(|(step, class)| Event::StepFailed {
            step,
            class,
            signature: Signature(1),
            usage: Usage::default(),
            wait_hint_secs: None
        }),
    ]
}
