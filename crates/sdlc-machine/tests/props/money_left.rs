//! Money bounded like attempts: every attempt is handed what it may spend (the least of what
//! the issue's and the session's budgets have left and the per-call cap), and an attempt
//! stopped at that money (`BUDGET`) lets the budget it exhausted decide at once.

use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{
    Core, Effect, EscalationCause, Event, HaltReason, Limits, Mode, Usage,
};
use sdlc_machine::step::Step;

/// A runner at its first implement attempt (every earlier step succeeded at `earlier` each),
/// and the `RunStep` it asked for.
fn at_implement(l: Limits, earlier: u64) -> (Core, Effect) {
    let mut core = Core::new(l, Mode::Continuous);
    let mut event = Event::Start;
    loop {
        let effects = core.handle(&event).to_vec();
        let request = effects.iter().find(|e| e.is_request()).copied();
        event = match request {
            Some(Effect::SelectIssue) => Event::IssueSelected { issue: 3 },
            Some(Effect::CheckPreconditions { step }) => Event::PreconditionsOk { step },
            Some(
                run @ Effect::RunStep {
                    step: Step::Implement,
                    ..
                },
            ) => return (core, run),
            Some(Effect::RunStep { step, .. }) => Event::StepSucceeded {
                step,
                usage: Usage {
                    cost_micros: earlier,
                    ..Usage::default()
                },
            },
            other => panic!("unexpected request {other:?} in {:?}", core.state()),
        };
    }
}

fn left(run: &Effect) -> Option<u64> {
    match run {
        Effect::RunStep {
            money_left_micros, ..
        } => *money_left_micros,
        other => panic!("not a RunStep: {other:?}"),
    }
}

fn budget_failure(cost_micros: u64) -> Event {
    Event::StepFailed {
        step: Step::Implement,
        class: FailureClass::Budget,
        signature: Signature(77),
        usage: Usage {
            cost_micros,
            ..Usage::default()
        },
        wait_hint_secs: None,
    }
}

#[test]
fn an_attempt_is_handed_the_least_of_what_each_budget_has_left() {
    let (_, run) = at_implement(Limits::default(), 1_000_000);
    assert_eq!(left(&run), None, "no dollar budget: no money limit");

    // Three steps before implement spent $1 each.
    let issue = Limits {
        per_issue_budget_micros: Some(5_000_000),
        ..Limits::default()
    };
    let (_, run) = at_implement(issue.clone(), 1_000_000);
    assert_eq!(left(&run), Some(2_000_000));

    let session = Limits {
        per_session_budget_micros: Some(4_500_000),
        ..issue.clone()
    };
    let (_, run) = at_implement(session, 1_000_000);
    assert_eq!(left(&run), Some(1_500_000));

    let call = Limits {
        per_call_budget_micros: Some(700_000),
        ..issue
    };
    let (_, run) = at_implement(call, 1_000_000);
    assert_eq!(left(&run), Some(700_000));
}

#[test]
fn a_call_stopped_at_the_issues_last_dollar_escalates_for_the_budget_not_as_a_retry() {
    let l = Limits {
        per_issue_budget_micros: Some(5_000_000),
        max_retries_per_step: 1,
        ..Limits::default()
    };
    let (mut core, run) = at_implement(l, 1_000_000);
    let fx = core.handle(&budget_failure(left(&run).unwrap())).to_vec();
    assert!(fx.contains(&Effect::MarkEscalated { issue: 3 }), "{fx:?}");
    let fx = core.handle(&Event::TrackerUpdated).to_vec();
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Notify(sdlc_machine::machine::Notice::Escalated {
                cause: EscalationCause::IssueBudget,
                ..
            })
        )),
        "{fx:?}"
    );
}

#[test]
fn a_call_stopped_at_the_sessions_last_dollar_halts() {
    let l = Limits {
        per_session_budget_micros: Some(5_000_000),
        ..Limits::default()
    };
    let (mut core, run) = at_implement(l, 1_000_000);
    let fx = core.handle(&budget_failure(left(&run).unwrap())).to_vec();
    assert!(
        fx.contains(&Effect::Halt(HaltReason::SessionBudget)),
        "{fx:?}"
    );
}

#[test]
fn a_call_stopped_at_the_per_call_cap_spends_an_attempt_and_is_retried() {
    let l = Limits {
        per_issue_budget_micros: Some(50_000_000),
        per_call_budget_micros: Some(1_000_000),
        ..Limits::default()
    };
    let (mut core, run) = at_implement(l, 1_000_000);
    assert_eq!(left(&run), Some(1_000_000));
    let fx = core.handle(&budget_failure(1_000_000)).to_vec();
    assert_eq!(core.runner().attempts[Step::Implement.index()], 1);
    assert!(
        fx.contains(&Effect::CheckPreconditions {
            step: Step::Implement
        }),
        "{fx:?}"
    );
}

mod spend {
    //! The bound in dollars (`bounds::money`): whatever the failures and whatever each call
    //! costs, as long as the shell stops each agent call once its running cost reaches the
    //! money it was handed (so a call passes it by at most one stream event's cost), no
    //! stretch between two merges spends more than the figure plus one event's cost per call
    //! (and one event over the session budget).

    use proptest::prelude::*;
    use sdlc_machine::failure::{FailureClass, Signature};
    use sdlc_machine::machine::bounds;
    use sdlc_machine::machine::{Core, Effect, Event, Limits, Mode, Usage};
    use sdlc_machine::step::Step;

    /// The most one stream event (one model request) can cost: what a stopped call may pass
    /// its money by.
    const EVENT: u64 = 400_000;

    /// What the scripted world spent: the largest stretch between two merges (the merged
    /// cycle included), the calls in it, and whether any step ever succeeded.
    #[derive(Debug, Default)]
    struct Spent {
        worst_window: u64,
        worst_window_calls: u64,
        session: u64,
        succeeded: bool,
    }

    /// Drives a fresh machine: every agent call answers with a cost drawn from `tape` within
    /// the money it was handed plus at most one event, ending `BUDGET` when it reached it.
    fn run(limits: &Limits, tape: &[u8]) -> Spent {
        let mut core = Core::new(limits.clone(), Mode::Continuous);
        let mut i = 0usize;
        let mut pick = |n: u8| -> u8 {
            let v = tape.get(i).copied().unwrap_or(0);
            i += 1;
            v % n
        };
        let (mut window, mut calls) = (0u64, 0u64);
        let mut spent = Spent::default();
        let mut merged: Vec<u32> = Vec::new();
        let mut event = Event::Start;
        for _ in 0..20_000 {
            let effects = core.handle(&event).to_vec();
            if effects
                .iter()
                .any(|e| matches!(e, Effect::RecordMerged { .. }))
            {
                spent.worst_window = spent.worst_window.max(window);
                spent.worst_window_calls = spent.worst_window_calls.max(calls);
                window = 0;
                calls = 0;
            }
            let Some(req) = effects.iter().find(|e| e.is_request()).copied() else {
                panic!("stall after {event:?}");
            };
            event = match req {
                Effect::Exit { .. } => {
                    spent.worst_window = spent.worst_window.max(window);
                    spent.worst_window_calls = spent.worst_window_calls.max(calls);
                    return spent;
                }
                Effect::SelectIssue => {
                    let escalated = core.escalated();
                    match (1..=3u32).find(|n| !merged.contains(n) && !escalated.contains(n)) {
                        Some(issue) => Event::IssueSelected { issue },
                        None if merged.is_empty() => Event::AllEscalated { others_hold: false },
                        None => Event::NoIssues,
                    }
                }
                Effect::Wait { .. } | Effect::Pause { .. } => Event::WaitOver,
                Effect::TakeMergeTurn { .. } => Event::MergeTurnTaken,
                Effect::AskDecision { .. } => Event::DecisionTimedOut,
                Effect::CheckPreconditions { step } => {
                    if step.has_precondition() && pick(10) == 0 {
                        Event::PreconditionFailed {
                            step,
                            check: sdlc_machine::step::Check::of(step)[0],
                        }
                    } else {
                        Event::PreconditionsOk { step }
                    }
                }
                Effect::LookAtCi { .. } => match pick(3) {
                    0 => Event::CiPending {
                        usage: Usage::default(),
                        commit: None,
                    },
                    _ => Event::StepSucceeded {
                        step: Step::MonitorCi,
                        usage: Usage::default(),
                    },
                },
                Effect::RunStep {
                    step,
                    money_left_micros,
                    ..
                } => {
                    let money = money_left_micros.expect("a dollar budget is set");
                    // Within the money, at it, or one event past it.
                    let cost = match pick(5) {
                        0 => 0,
                        1 => money / 3,
                        2 => money / 2,
                        3 => money,
                        _ => money + u64::from(pick(5)) * (EVENT / 4),
                    };
                    window += cost;
                    spent.session += cost;
                    calls += 1;
                    let usage = Usage {
                        cost_micros: cost,
                        ..Usage::default()
                    };
                    if cost >= money {
                        Event::StepFailed {
                            step,
                            class: FailureClass::Budget,
                            signature: Signature(u64::from(pick(2))),
                            usage,
                            wait_hint_secs: None,
                        }
                    } else {
                        match pick(8) {
                            0..=2 => {
                                spent.succeeded = true;
                                Event::StepSucceeded { step, usage }
                            }
                            3 if step == Step::Merge => Event::MergeRaceLost {
                                class: FailureClass::Unknown,
                                signature: Signature(9),
                                usage,
                            },
                            4 if step == Step::MonitorCi => Event::CiPending {
                                usage,
                                commit: None,
                            },
                            5 => Event::StepFailed {
                                step,
                                class: FailureClass::RateLimit,
                                signature: Signature(1),
                                usage,
                                wait_hint_secs: None,
                            },
                            _ => Event::StepFailed {
                                step,
                                class: FailureClass::TestAssertion,
                                signature: Signature(u64::from(pick(3))),
                                usage,
                                wait_hint_secs: None,
                            },
                        }
                    }
                }
                Effect::RecordMerged { issue, .. } => {
                    merged.push(issue);
                    Event::TrackerUpdated
                }
                Effect::MarkEscalated { .. } | Effect::Unquarantine { .. } => Event::TrackerUpdated,
                other => unreachable!("not a request: {other:?}"),
            };
        }
        panic!("did not end within 20 000 events: {:?}", core.state());
    }

    fn limits() -> impl Strategy<Value = Limits> {
        let budget = |values: Vec<u64>| prop_oneof![1 => Just(None), 2 => proptest::sample::select(values).prop_map(Some)];
        (
            (1u32..=3, 0u32..=2, 1u32..=3, 0u32..=2),
            (
                budget(vec![300_000, 1_000_000, 2_500_000]),
                budget(vec![2_000_000, 6_000_000]),
                budget(vec![5_000_000, 40_000_000]),
            ),
        )
            .prop_filter("a dollar budget", |(_, (c, i, s))| {
                c.is_some() || i.is_some() || s.is_some()
            })
            .prop_map(|((r, b, e, w), (call, issue, session))| Limits {
                max_retries_per_step: r,
                max_bounce_retries: b,
                max_consecutive_escalations: e,
                max_rate_limit_waits: w,
                per_call_budget_micros: call,
                per_issue_budget_micros: issue,
                per_session_budget_micros: session,
                ..Limits::default()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn no_stretch_between_merges_spends_more_than_the_bound_plus_an_event_per_call(
            l in limits(),
            tape in proptest::collection::vec(any::<u8>(), 0..4000),
        ) {
            let spent = run(&l, &tape);
            let m = bounds::money(&l, &[false; Step::COUNT]);
            let calls = bounds::merges(&l, &[false; Step::COUNT]).agent_invocations;
            let e = u64::from(l.max_consecutive_escalations.max(1));
            prop_assert!(spent.worst_window_calls <= calls.between_merges);
            // Each figure's own slack: one event per call it counts, per cycle, or once.
            let ceilings = [
                l.per_call_budget_micros.map(|c| (c + EVENT) * calls.between_merges),
                l.per_issue_budget_micros.map(|i| (i + EVENT) * e),
                l.per_session_budget_micros.map(|s| s + EVENT),
            ];
            let ceiling = ceilings.into_iter().flatten().min().expect("a budget");
            prop_assert!(
                spent.worst_window <= ceiling,
                "spent {} between merges, ceiling {ceiling}, figure {:?}",
                spent.worst_window,
                m.between_merges
            );
            let figure = m.between_merges.expect("a budget");
            prop_assert!(figure <= ceiling);
            if let Some(s) = l.per_session_budget_micros {
                prop_assert!(spent.session <= s + EVENT, "session {} of {s}", spent.session);
            }
            if !spent.succeeded {
                let ceilings = [
                    l.per_call_budget_micros.map(|c| (c + EVENT) * calls.nothing_succeeds),
                    l.per_issue_budget_micros.map(|i| (i + EVENT) * e),
                    l.per_session_budget_micros.map(|s| s + EVENT),
                ];
                let ceiling = ceilings.into_iter().flatten().min().expect("a budget");
                prop_assert!(
                    spent.worst_window <= ceiling,
                    "spent {} with nothing succeeding, ceiling {ceiling}, figure {:?}",
                    spent.worst_window,
                    m.nothing_succeeds
                );
            }
        }
    }
}

#[test]
fn the_day_budget_counts_what_the_project_spent_before_the_session() {
    // $1 spent today before this session; three steps before implement spent $1 each.
    let day = Limits {
        per_day_budget_micros: Some(5_000_000),
        day_spent_before_micros: 1_000_000,
        ..Limits::default()
    };
    let (_, run) = at_implement(day.clone(), 1_000_000);
    assert_eq!(left(&run), Some(1_000_000));

    let issue = Limits {
        per_day_budget_micros: Some(6_000_000),
        per_issue_budget_micros: Some(4_500_000),
        ..day
    };
    let (_, run) = at_implement(issue, 1_000_000);
    assert_eq!(left(&run), Some(1_500_000), "the least of the budgets");
}

#[test]
fn a_call_stopped_at_the_days_last_dollar_halts_and_blames_no_issue() {
    let l = Limits {
        per_day_budget_micros: Some(5_000_000),
        day_spent_before_micros: 1_000_000,
        ..Limits::default()
    };
    let (mut core, run) = at_implement(l, 1_000_000);
    let fx = core.handle(&budget_failure(left(&run).unwrap())).to_vec();
    assert!(fx.contains(&Effect::Halt(HaltReason::DayBudget)), "{fx:?}");
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::MarkEscalated { .. })),
        "{fx:?}"
    );
}

#[test]
fn a_day_already_spent_halts_before_any_agent_call() {
    let l = Limits {
        per_day_budget_micros: Some(5_000_000),
        day_spent_before_micros: 5_000_000,
        ..Limits::default()
    };
    let mut core = Core::new(l, Mode::Continuous);
    let mut fx = core.handle(&Event::Start).to_vec();
    fx.extend(core.handle(&Event::IssueSelected { issue: 3 }).to_vec());
    for _ in 0..3 {
        if let Some(Effect::CheckPreconditions { step }) =
            fx.iter().rev().find(|e| e.is_request()).copied()
        {
            fx.extend(core.handle(&Event::PreconditionsOk { step }).to_vec());
        }
    }
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::RunStep { .. })),
        "{fx:?}"
    );
    assert!(fx.contains(&Effect::Halt(HaltReason::DayBudget)), "{fx:?}");
}

#[test]
fn limits_of_earlier_journals_have_no_day_budget() {
    let mut json = serde_json::to_value(Limits::default()).unwrap();
    let map = json.as_object_mut().unwrap();
    assert!(!map.contains_key("per_day_budget_micros"), "{map:?}");
    assert!(!map.contains_key("day_spent_before_micros"), "{map:?}");
    let back: Limits = serde_json::from_value(json).unwrap();
    assert_eq!(back, Limits::default());
}

#[test]
fn on_exceeded_ask_turns_the_issues_budget_into_a_decision_and_retry_grants_it_again() {
    let l = Limits {
        per_issue_budget_micros: Some(5_000_000),
        ask_on_issue_budget: true,
        ..Limits::default()
    };
    let (mut core, run) = at_implement(l, 1_000_000);
    let fx = core.handle(&budget_failure(left(&run).unwrap())).to_vec();
    let ask = Effect::AskDecision {
        step: Step::Implement,
        issue: 3,
        budget_spent_micros: Some(5_000_000),
    };
    assert!(
        fx.contains(&ask),
        "a person is asked, with the spend: {fx:?}"
    );
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::MarkEscalated { .. })),
        "{fx:?}"
    );
    // retry: the issue has its budget again, and no attempt was given back or spent.
    let attempts = core.runner().attempts[Step::Implement.index()];
    let fx = core
        .handle(&Event::Decided {
            option: sdlc_machine::machine::DecisionOption::Retry,
        })
        .to_vec();
    assert!(
        fx.contains(&Effect::CheckPreconditions {
            step: Step::Implement
        }),
        "{fx:?}"
    );
    assert_eq!(core.runner().issue_cost_micros, 0);
    assert_eq!(core.runner().attempts[Step::Implement.index()], attempts);
    let fx = core
        .handle(&Event::PreconditionsOk {
            step: Step::Implement,
        })
        .to_vec();
    let run = fx.iter().find(|e| e.is_request()).copied().unwrap();
    assert_eq!(left(&run), Some(5_000_000), "{fx:?}");
    // skip: the issue escalates, a person's choice.
    let fx = core.handle(&budget_failure(5_000_000)).to_vec();
    assert!(fx.contains(&ask), "{fx:?}");
    let fx = core
        .handle(&Event::Decided {
            option: sdlc_machine::machine::DecisionOption::Skip,
        })
        .to_vec();
    assert!(fx.contains(&Effect::MarkEscalated { issue: 3 }), "{fx:?}");
}

/// A runner killed in a call restarts with what the call journaled it had spent
/// (`KilledCallSpent`): the `KILLED` attempt counts it, and the next call is handed only what
/// is left. Before, the killed attempt cost nothing and the next call got the whole budget.
#[test]
fn a_killed_calls_journaled_spend_counts_and_the_next_call_gets_only_what_is_left() {
    let limits = Limits {
        per_issue_budget_micros: Some(3_000_000),
        ..Limits::default()
    };
    let (mut core, run) = at_implement(limits, 0);
    assert_eq!(left(&run), Some(3_000_000));
    let spent = Usage {
        cost_micros: 1_000_000,
        ..Usage::default()
    };
    assert!(
        core.handle(&Event::KilledCallSpent { usage: spent })
            .is_empty(),
        "it asks for nothing"
    );
    let fx = core.handle(&Event::Start).to_vec();
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Notify(sdlc_machine::machine::Notice::Retrying {
                class: FailureClass::Killed,
                ..
            })
        )),
        "{fx:?}"
    );
    assert_eq!(core.runner().issue_cost_micros, 1_000_000);
    assert_eq!(core.runner().session_cost_micros, 1_000_000);
    let again = core
        .handle(&Event::PreconditionsOk {
            step: Step::Implement,
        })
        .to_vec();
    let run = again.iter().find(|e| e.is_request()).expect("a request");
    assert_eq!(left(run), Some(2_000_000), "{again:?}");

    // Outside an attempt (the call answered before the kill) it counts nothing twice.
    let (mut idle, _) = at_implement(Limits::default(), 0);
    idle.handle(&Event::StepSucceeded {
        step: Step::Implement,
        usage: spent,
    });
    idle.handle(&Event::KilledCallSpent { usage: spent });
    assert_eq!(idle.runner().session_cost_micros, 1_000_000);
}
