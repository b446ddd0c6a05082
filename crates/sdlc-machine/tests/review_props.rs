//! The review gate's properties, under any order of reviewers' decisions, network failures
//! and restarts (a restart replays the recorded events into a fresh machine):
//! no merge starts over a request for changes or without a required approval; the looks that
//! hold the merge stay within the schedule and one more, a person is told at most once per
//! cycle, and the cycle ends merged or waiting for a person, never blamed.

use proptest::prelude::*;
use sdlc_machine::machine::{
    Commit, Core, Effect, Event, Limits, Mode, Notice, ReviewDecision, ReviewGate, Usage,
};
use sdlc_machine::step::Step;

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
    Network,
    Restart,
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        4 => prop_oneof![
            Just(ReviewDecision::None),
            Just(ReviewDecision::Approved),
            Just(ReviewDecision::ChangesRequested),
        ]
        .prop_map(Answer::Looked),
        1 => Just(Answer::Network),
        1 => Just(Answer::Restart),
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
        answers in proptest::collection::vec(answer(), 0..64),
    ) {
        let limits = Limits {
            review: Some(ReviewGate { require_approval, wait_secs }),
            max_network_waits: 100,
            ..Limits::default()
        };
        let polls = limits.review_polls().len();
        let (mut core, mut events, mut effects) = after_ci(limits.clone());
        let mut answers = answers.into_iter();
        let mut last_decision: Option<ReviewDecision> = None;
        let mut told = 0;
        let mut holding_looks = 0;
        for _ in 0..10_000 {
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
                    Event::Start
                }
                (Some(Effect::LookAtReview { .. }), Some(Answer::Network)) => Event::NetworkFailed,
                (Some(Effect::LookAtReview { .. }), a) => {
                    let decision = match a {
                        Some(Answer::Looked(d)) => d,
                        // Reviewers who never speak, once the script ran out.
                        _ => ReviewDecision::ChangesRequested,
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
                    Event::ReviewLooked { decision }
                }
                (Some(Effect::Wait { .. }), _) => Event::WaitOver,
                (other, _) => {
                    prop_assert!(false, "unexpected request {other:?} in {:?}", core.state());
                    unreachable!()
                }
            };
            effects = core.handle(&event).to_vec();
            events.push(event);
            prop_assert!(holding_looks <= polls + 1, "{holding_looks} looks for {polls} pauses");
            prop_assert!(core.runner().attempts.iter().all(|a| *a == 0), "no attempt spent");
        }
        prop_assert!(told <= 1, "a person told {told} times");
    }
}
