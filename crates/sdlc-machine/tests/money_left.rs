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
            Some(run @ Effect::RunStep { step, .. }) if step == Step::Implement => {
                return (core, run)
            }
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
