//! The runner's own waits around the merge and in a fleet, event by event: a merge turn taken
//! after a pause reads the issue again before anything merges (a person may have closed it),
//! a lost race's pause likewise, and a fleet-wide pause is the machine's wait, bounded.

use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{Core, Effect, Event, HaltReason, Limits, Mode, Notice, Usage};
use sdlc_machine::machine::{PauseFor, WaitReason};
use sdlc_machine::step::{Check, Step};

/// A runner with a merge turn, at the merge step's turn request (every earlier step done).
fn asking_for_the_merge_turn() -> Core {
    let l = Limits {
        merge_turn_wait_ms: Some(60_000),
        ..Limits::default()
    };
    let mut core = Core::new(l.clone(), Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 7 });
    for step in l.enabled_steps().filter(|s| *s != Step::Merge) {
        core.handle(&Event::PreconditionsOk { step });
        core.handle(&Event::StepSucceeded {
            step,
            usage: Usage::default(),
        });
    }
    let fx = core
        .handle(&Event::PreconditionsOk { step: Step::Merge })
        .to_vec();
    assert_eq!(fx, vec![Effect::TakeMergeTurn { issue: 7 }]);
    core
}

#[test]
fn a_merge_turn_taken_at_once_merges_without_asking_again() {
    let mut core = asking_for_the_merge_turn();
    let fx = core.handle(&Event::MergeTurnTaken).to_vec();
    assert!(
        matches!(
            fx.as_slice(),
            [Effect::RunStep {
                step: Step::Merge,
                ..
            }]
        ),
        "{fx:?}"
    );
}

#[test]
fn an_issue_closed_while_the_runner_waited_for_the_merge_turn_is_not_merged() {
    let mut core = asking_for_the_merge_turn();
    let fx = core.handle(&Event::MergeTurnBusy).to_vec();
    assert!(
        fx.contains(&Effect::Pause {
            millis: 200,
            waits_for: PauseFor::MergeTurn
        }),
        "{fx:?}"
    );
    let fx = core.handle(&Event::WaitOver).to_vec();
    assert_eq!(fx, vec![Effect::TakeMergeTurn { issue: 7 }]);
    // The turn comes after a pause: the issue is read again before anything merges.
    let fx = core.handle(&Event::MergeTurnTaken).to_vec();
    assert_eq!(fx, vec![Effect::CheckPreconditions { step: Step::Merge }]);
    let fx = core.handle(&Event::IssueWithdrawn { issue: 7 }).to_vec();
    assert_eq!(
        fx,
        vec![
            Effect::ReleaseMergeTurn,
            Effect::Cleanup,
            Effect::CheckoutMain,
            Effect::Notify(Notice::Withdrawn { issue: 7 }),
            Effect::ResetCycle,
            Effect::SelectIssue
        ]
    );
    assert!(core.runner().withdrawn.contains(&7));
    assert!(core.runner().escalated.is_empty());
}

#[test]
fn checks_passed_again_after_the_wait_merge_in_the_turn_already_held() {
    let mut core = asking_for_the_merge_turn();
    core.handle(&Event::MergeTurnBusy);
    core.handle(&Event::WaitOver);
    core.handle(&Event::MergeTurnTaken);
    let fx = core
        .handle(&Event::PreconditionsOk { step: Step::Merge })
        .to_vec();
    assert!(
        matches!(
            fx.as_slice(),
            [Effect::RunStep {
                step: Step::Merge,
                attempt: 1,
                ..
            }]
        ),
        "the turn is held: merge at once, without asking for it again: {fx:?}"
    );
}

#[test]
fn a_lost_race_reads_the_issue_again_before_merging_again() {
    let mut core = asking_for_the_merge_turn();
    core.handle(&Event::MergeTurnTaken);
    let fx = core
        .handle(&Event::MergeRaceLost {
            class: FailureClass::Unknown,
            signature: Signature(1),
            usage: Usage::default(),
        })
        .to_vec();
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Pause { .. })),
        "{fx:?}"
    );
    core.handle(&Event::WaitOver);
    let fx = core.handle(&Event::MergeTurnTaken).to_vec();
    assert_eq!(fx, vec![Effect::CheckPreconditions { step: Step::Merge }]);
    let fx = core
        .handle(&Event::PreconditionFailed {
            step: Step::Merge,
            check: Check::CiChecksPassing,
        })
        .to_vec();
    assert_eq!(fx.first(), Some(&Effect::ReleaseMergeTurn), "{fx:?}");
    assert!(!fx.iter().any(|e| matches!(e, Effect::RunStep { .. })));
    // The attempt that lost the race ends as its failure, counted, not bounced away: a
    // bounce would leave it uncounted and its free runs again with it.
    assert_eq!(core.runner().attempts[Step::Merge.index()], 1, "{fx:?}");
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::Notify(Notice::Bounced { .. }))),
        "{fx:?}"
    );
}

/// A restart while the merge's checks run again after a lost race (the turn is not held any
/// more: the runner that died gave it back): checks that fail now still end the attempt that
/// lost the race as its failure, counted, instead of bouncing it away uncounted.
#[test]
fn checks_failing_after_a_lost_race_and_a_restart_count_the_attempt() {
    let mut core = asking_for_the_merge_turn();
    core.handle(&Event::MergeTurnTaken);
    core.handle(&Event::MergeRaceLost {
        class: FailureClass::Unknown,
        signature: Signature(1),
        usage: Usage::default(),
    });
    core.handle(&Event::WaitOver);
    let fx = core.handle(&Event::MergeTurnTaken).to_vec();
    assert_eq!(fx, vec![Effect::CheckPreconditions { step: Step::Merge }]);
    let fx = core.handle(&Event::Start).to_vec();
    assert_eq!(fx, vec![Effect::CheckPreconditions { step: Step::Merge }]);
    let fx = core
        .handle(&Event::PreconditionFailed {
            step: Step::Merge,
            check: Check::CiChecksPassing,
        })
        .to_vec();
    assert_eq!(core.runner().attempts[Step::Merge.index()], 1, "{fx:?}");
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::Notify(Notice::Bounced { .. }))),
        "{fx:?}"
    );
    assert!(!fx.iter().any(|e| matches!(e, Effect::RunStep { .. })));
}

/// A fleet pause (another worker's rate limit) is the machine's wait: the request was not
/// performed, it is issued again after the wait, a restart waits again, and more pauses in a
/// row on one request than a runner alone would wait out halt without blaming the issue.
#[test]
fn a_fleet_pause_waits_then_asks_again_and_is_bounded() {
    let l = Limits {
        max_rate_limit_waits: 1,
        ..Limits::default()
    };
    let mut core = Core::new(l, Mode::Continuous);
    core.handle(&Event::Start);
    let check = Effect::CheckPreconditions {
        step: Step::StartCycle,
    };
    assert_eq!(
        core.handle(&Event::IssueSelected { issue: 1 }).request(),
        Some(&check)
    );
    let fx = core.handle(&Event::FleetPaused { seconds: 30 }).to_vec();
    assert_eq!(
        fx,
        vec![
            Effect::Notify(Notice::FleetPause {
                seconds: 30,
                pause: 1
            }),
            Effect::Wait {
                seconds: 30,
                reason: Some(WaitReason::FleetPause)
            }
        ]
    );
    assert_eq!(core.state().name(), "WaitingForFleet");
    assert_eq!(
        core.handle(&Event::Start).to_vec(),
        vec![Effect::Wait {
            seconds: 30,
            reason: Some(WaitReason::FleetPause)
        }]
    );
    assert_eq!(core.handle(&Event::WaitOver).to_vec(), vec![check]);
    core.handle(&Event::FleetPaused { seconds: 5 });
    assert_eq!(core.handle(&Event::WaitOver).to_vec(), vec![check]);
    let fx = core.handle(&Event::FleetPaused { seconds: 5 }).to_vec();
    assert!(
        fx.contains(&Effect::Halt(HaltReason::WaitsExhausted {
            class: FailureClass::RateLimit,
            step: Step::StartCycle
        })),
        "{fx:?}"
    );
    assert!(core.runner().escalated.is_empty());
    assert_eq!(core.runner().attempts, [0; Step::COUNT], "no attempt spent");
}
