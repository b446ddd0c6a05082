//! The review gate's properties, under any order of reviewers' decisions, network failures
//! and restarts (a restart replays the recorded events into a fresh machine):
//! no merge starts over a request for changes or without a required approval; the looks that
//! hold the merge stay within the schedule and one more, a person is told at most once per
//! cycle, and the cycle ends merged or waiting for a person, never blamed. With feedback:
//! rounds stay within `maxReviewRounds`, an id is handed in one round at most and an ignored
//! author never, and only new feedback past the rounds escalates. A round whose agent fails or
//! whose runner is killed is retried as the same round (same number, same handout, the next
//! attempt), never as monitorCI's own run, within `maxRetriesPerStep`.

use proptest::prelude::*;
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{
    Commit, Core, Effect, Event, Limits, Mode, Notice, ReviewDecision, ReviewGate, ReviewNote,
    Usage,
};
use sdlc_machine::step::Step;
use std::collections::BTreeSet;

/// A machine whose monitorCI just passed CI on issue 1, and the events that led there.
fn after_ci(limits: Limits) -> (Core, Vec<Event>, Vec<Effect>) {
    let mut core = Core::new(limits, Mode::SingleIssue(1));
    let mut events = vec![Event::Start, Event::IssueSelected { issue: 1 }];
    for e in &events {
        core.handle(e);
    }
    for step in Step::ALL {
        let ok = Event::PreconditionsOk { step };
        core.handle(&ok);
        events.push(ok);
        let done = if step == Step::MonitorCi {
            Event::CiPassed {
                commit: Commit::parse(&"ab".repeat(20)).expect("commit"),
                usage: Usage::default(),
            }
        } else {
            Event::StepSucceeded {
                step,
                usage: Usage::default(),
            }
        };
        let effects = core.handle(&done).to_vec();
        events.push(done);
        if step == Step::MonitorCi {
            return (core, events, effects);
        }
    }
    unreachable!("monitorCI is a step")
}

#[derive(Debug, Clone, Copy)]
enum Answer {
    Looked(ReviewDecision),
    /// Changes requested with comments `ids` (of a pool of four), by `bot` when `bot`.
    Feedback(u8, bool),
    Network,
    Restart,
    /// The round's agent fails (a retryable class).
    Fail,
}

fn note(id: u8, bot: bool) -> ReviewNote {
    ReviewNote {
        id: format!("c{id}"),
        author: if bot { "bot".into() } else { "ann".into() },
        body: format!("comment {id}"),
        ..ReviewNote::default()
    }
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        4 => prop_oneof![
            Just(ReviewDecision::None),
            Just(ReviewDecision::Approved),
            Just(ReviewDecision::ChangesRequested),
        ]
        .prop_map(Answer::Looked),
        3 => (0u8..4, any::<bool>()).prop_map(|(id, bot)| Answer::Feedback(id, bot)),
        1 => Just(Answer::Network),
        1 => Just(Answer::Restart),
        1 => Just(Answer::Fail),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn no_merge_over_a_review_that_holds_it_and_the_wait_is_bounded(
        require_approval in any::<bool>(),
        wait_secs in 0u64..200,
        max_rounds in 0u32..3,
        answers in proptest::collection::vec(answer(), 0..64),
    ) {
        let gate = ReviewGate {
            max_rounds,
            ignore_authors: vec!["bot".into()],
            ..ReviewGate::new(require_approval, wait_secs)
        };
        let limits = Limits {
            review: Some(gate),
            max_network_waits: 100,
            ..Limits::default()
        };
        let polls = limits.review_polls().len();
        let (mut core, mut events, mut effects) = after_ci(limits.clone());
        let mut answers = answers.into_iter();
        let mut last_decision: Option<ReviewDecision> = None;
        let mut told = 0;
        let mut holding_looks = 0;
        let mut handed: BTreeSet<String> = BTreeSet::new();
        let mut rounds = 0u32;
        let mut escalating = false;
        let mut restarts = 0u32;
        let mut fails = 0u32;
        // The round asked for and not yet answered (`Repaired`), with its handout.
        let mut pending: Option<Vec<ReviewNote>> = None;
        let mut last_attempt = 0u32;
        for _ in 0..10_000 {
            for e in &effects {
                if let Effect::AddressReview { round, attempt, .. } = e {
                    let handout = core.runner().review_handout.clone();
                    prop_assert!(!handout.is_empty(), "a round hands something");
                    match &pending {
                        Some(before) => {
                            // The retry of the round under way: the same round and feedback.
                            prop_assert_eq!(*round, rounds, "a retry is no new round");
                            prop_assert_eq!(before, &handout, "a retry hands the same feedback");
                            prop_assert!(*attempt >= last_attempt);
                        }
                        None => {
                            rounds += 1;
                            prop_assert_eq!(*round, rounds);
                            prop_assert!(rounds <= max_rounds, "round {rounds} of {max_rounds}");
                            for n in &handout {
                                prop_assert!(n.author != "bot", "an ignored author handed");
                                prop_assert!(handed.insert(n.id.clone()), "{} handed twice", n.id);
                            }
                        }
                    }
                    last_attempt = *attempt;
                    pending = Some(handout);
                }
                if let Effect::RunStep { step: Step::MonitorCi, .. } = e {
                    prop_assert!(pending.is_none(), "a pending round retried as monitorCI's run");
                }
                if let Effect::MarkEscalated { .. } = e {
                    let retries = core.runner().attempts[Step::MonitorCi.index()]
                        >= limits.max_retries_per_step;
                    let exhausted = rounds == max_rounds
                        && !core.runner().review_unresolved.is_empty();
                    prop_assert!(retries || exhausted, "escalated before the rounds or retries ran out");
                    escalating = true;
                    pending = None;
                }
            }
            prop_assert_eq!(core.runner().round_pending(), pending.is_some());
            told += effects
                .iter()
                .filter(|e| matches!(e, Effect::Notify(Notice::ReviewWanted { .. })))
                .count();
            if effects.contains(&Effect::CheckPreconditions { step: Step::Merge }) {
                let lets = match last_decision {
                    Some(ReviewDecision::Approved) => true,
                    Some(ReviewDecision::None) => !require_approval,
                    _ => false,
                };
                prop_assert!(lets, "the merge started after {last_decision:?}");
                break;
            }
            if let Some(Effect::Exit { code }) = effects.last() {
                if escalating {
                    prop_assert_eq!(*code, 1);
                    break;
                }
                if *code == 1 {
                    // Attempts cut short by restarts (twice in a row, or the last attempt
                    // allowed): the session halts.
                    prop_assert!(
                        restarts >= 1 && restarts + fails >= 2,
                        "exit 1 without an escalation or kills"
                    );
                    break;
                }
                prop_assert_eq!(*code, 0);
                prop_assert!(core.runner().awaiting_person.contains(&1));
                prop_assert!(core.escalated().is_empty());
                prop_assert_eq!(holding_looks, polls + 1, "every look of the schedule was made");
                break;
            }
            let request = effects.iter().rev().find(|e| e.is_request()).copied();
            let event = match (request, answers.next()) {
                (_, Some(Answer::Restart)) => {
                    let mut fresh = Core::new(limits.clone(), Mode::SingleIssue(1));
                    for e in &events {
                        fresh.handle(e);
                    }
                    core = fresh;
                    restarts += 1;
                    Event::Start
                }
                (Some(Effect::LookAtReview { .. }), Some(Answer::Network)) => Event::NetworkFailed,
                (Some(Effect::LookAtReview { .. }), a) => {
                    let (decision, feedback) = match a {
                        Some(Answer::Looked(d)) => (d, Vec::new()),
                        Some(Answer::Feedback(id, bot)) => (
                            ReviewDecision::ChangesRequested,
                            (0..=id).map(|i| note(i, bot)).collect(),
                        ),
                        // Reviewers who never speak, once the script ran out.
                        _ => (ReviewDecision::ChangesRequested, Vec::new()),
                    };
                    last_decision = Some(decision);
                    let holds = match decision {
                        ReviewDecision::Approved => false,
                        ReviewDecision::None => require_approval,
                        ReviewDecision::ChangesRequested => true,
                    };
                    if holds {
                        holding_looks += 1;
                    }
                    Event::ReviewLooked { decision, feedback }
                }
                (Some(Effect::Wait { .. }), _) => Event::WaitOver,
                (Some(Effect::AddressReview { .. }), Some(Answer::Fail)) => {
                    fails += 1;
                    Event::StepFailed {
                        step: Step::MonitorCi,
                        class: FailureClass::TestAssertion,
                        signature: Signature(u64::from(fails)),
                        usage: Usage::default(),
                        wait_hint_secs: None,
                    }
                }
                // The round's agent answered the feedback and the runner pushed.
                (Some(Effect::AddressReview { .. }), _) => {
                    pending = None;
                    Event::Repaired {
                        step: Step::MonitorCi,
                        usage: Usage::default(),
                    }
                }
                (Some(Effect::LookAtCi { .. } | Effect::RunStep { step: Step::MonitorCi, .. }), _) => Event::CiPassed {
                    commit: Commit::parse(&"cd".repeat(20)).expect("commit"),
                    usage: Usage::default(),
                },
                (Some(Effect::MarkEscalated { .. }), _) => Event::TrackerUpdated,
                (Some(Effect::CheckPreconditions { step }), _) => Event::PreconditionsOk { step },
                (other, _) => {
                    prop_assert!(false, "unexpected request {other:?} in {:?}", core.state());
                    unreachable!()
                }
            };
            effects = core.handle(&event).to_vec();
            let round_or_end = effects.iter().any(|e| {
                matches!(e, Effect::AddressReview { .. } | Effect::MarkEscalated { .. })
            });
            if round_or_end && matches!(event, Event::ReviewLooked { .. }) {
                // New feedback started a round (or ended the rounds): that look held nothing.
                holding_looks -= 1;
            }
            events.push(event);
            prop_assert!(holding_looks <= polls + 1, "{holding_looks} looks for {polls} pauses");
            // Only a round that failed or was cut short by a restart spends an attempt
            // (monitorCI's).
            let spent: u32 = core.runner().attempts.iter().sum();
            prop_assert!(spent == core.runner().attempts[Step::MonitorCi.index()]);
            prop_assert!(spent <= restarts + fails, "{spent} attempts spent with {restarts} restarts and {fails} failures");
        }
        prop_assert!(told <= 1, "a person told {told} times");
    }
}
