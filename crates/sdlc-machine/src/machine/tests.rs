//! The machine's names and small helpers, pinned: journal records, diagrams and diagnostics
//! print them, so a changed label or a helper off by one is a visible change of contract.

use super::*;
use crate::failure::FailureClass;
use crate::step::{Check, Step};

fn states() -> Vec<(State, &'static str, Option<Step>, &'static [&'static str])> {
    const SPECIFY: &[&str] = &["Session", "Cycle", "Specify"];
    const BUILD: &[&str] = &["Session", "Cycle", "Build"];
    const DELIVER: &[&str] = &["Session", "Cycle", "Deliver"];
    vec![
        (State::Selecting {}, "Selecting", None, &["Session"]),
        (
            State::StartCycle {},
            "StartCycle",
            Some(Step::StartCycle),
            SPECIFY,
        ),
        (
            State::StartIssue {},
            "StartIssue",
            Some(Step::StartIssue),
            SPECIFY,
        ),
        (
            State::WriteSpecs {},
            "WriteSpecs",
            Some(Step::WriteSpecs),
            SPECIFY,
        ),
        (
            State::Implement {},
            "Implement",
            Some(Step::Implement),
            BUILD,
        ),
        (State::Simplify {}, "Simplify", Some(Step::Simplify), BUILD),
        (State::Verify {}, "Verify", Some(Step::Verify), BUILD),
        (
            State::CommitPush {},
            "CommitPush",
            Some(Step::CommitPush),
            DELIVER,
        ),
        (
            State::CreatePr {},
            "CreatePr",
            Some(Step::CreatePr),
            DELIVER,
        ),
        (
            State::MonitorCi {},
            "MonitorCi",
            Some(Step::MonitorCi),
            DELIVER,
        ),
        (State::Merge {}, "Merge", Some(Step::Merge), DELIVER),
        (
            State::BackingOff {
                step: Step::Verify,
                seconds: 5,
            },
            "BackingOff",
            Some(Step::Verify),
            &["Session", "Cycle"],
        ),
        (
            State::WaitingForCi { seconds: 10 },
            "WaitingForCi",
            Some(Step::MonitorCi),
            DELIVER,
        ),
        (
            State::AwaitingDecision { step: Step::Merge },
            "AwaitingDecision",
            Some(Step::Merge),
            &["Session", "Cycle"],
        ),
        (
            State::Halted {
                reason: HaltReason::Operator,
            },
            "Halted",
            None,
            &[],
        ),
        (State::Finished { code: 0 }, "Finished", None, &[]),
    ]
}

#[test]
fn machine_states_have_their_names_steps_and_superstates() {
    for (state, name, step, ancestors) in states() {
        assert_eq!(state.name(), name);
        assert_eq!(state.step(), step, "{name}");
        assert_eq!(Core::ancestors(&state), ancestors, "{name}");
        assert_eq!(state.is_terminal(), matches!(name, "Halted" | "Finished"));
    }
    for step in Step::ALL {
        assert_eq!(state_of_step(step).step(), Some(step));
    }
}

#[test]
fn machine_core_debug_names_its_state_and_storage() {
    let core = Core::new(Limits::default(), Mode::Continuous);
    let text = format!("{core:?}");
    assert!(text.starts_with("Core"), "{text}");
    assert!(
        text.contains("Selecting") && text.contains("max_retries_per_step"),
        "{text}"
    );
}

#[test]
fn machine_labels_of_events_and_effects() {
    let step = Step::Verify;
    let usage = Usage::default();
    let sig = crate::failure::Signature(1);
    let events = [
        (Event::Start, "Start"),
        (Event::KilledCallSpent { usage }, "KilledCallSpent"),
        (
            Event::ModeChanged {
                mode: Mode::Continuous,
            },
            "ModeChanged",
        ),
        (Event::IssueSelected { issue: 1 }, "IssueSelected"),
        (Event::NoIssues, "NoIssues"),
        (Event::AllEscalated { others_hold: false }, "AllEscalated"),
        (Event::AllBlocked { others_hold: true }, "AllBlocked"),
        (
            Event::Resume {
                issue: 1,
                next: step,
            },
            "Resume",
        ),
        (Event::AlreadyMerged { issue: 1 }, "AlreadyMerged"),
        (Event::PreconditionsOk { step }, "PreconditionsOk"),
        (Event::AlreadyDone { step }, "AlreadyDone"),
        (
            Event::PreconditionFailed {
                step,
                check: Check::OnFeatureBranch,
            },
            "PreconditionFailed",
        ),
        (Event::StepSucceeded { step, usage }, "StepSucceeded"),
        (
            Event::StepFailed {
                step,
                class: FailureClass::Lint,
                signature: sig,
                usage,
                wait_hint_secs: None,
            },
            "StepFailed",
        ),
        (Event::WaitOver, "WaitOver"),
        (
            Event::Decided {
                option: DecisionOption::Retry,
            },
            "Decided",
        ),
        (Event::DecisionTimedOut, "DecisionTimedOut"),
        (
            Event::ShutdownRequested {
                signal: Signal::Int,
                usage: Default::default(),
            },
            "ShutdownRequested",
        ),
        (Event::NetworkUnavailable, "NetworkUnavailable"),
        (Event::NetworkFailed, "NetworkFailed"),
        (Event::TrackerUpdated, "TrackerUpdated"),
        (Event::TrackerWriteFailed, "TrackerWriteFailed"),
        (Event::TrackerReadFailed, "TrackerReadFailed"),
        (Event::IssueWithdrawn { issue: 1 }, "IssueWithdrawn"),
        (Event::WorkspaceUnfit { step }, "WorkspaceUnfit"),
        (
            Event::CiPending {
                usage,
                commit: None,
            },
            "CiPending",
        ),
    ];
    for (event, label) in events {
        assert_eq!(event.label(), label);
    }
    let effects = [
        (Effect::SelectIssue, "SelectIssue", true),
        (
            Effect::CheckPreconditions { step },
            "CheckPreconditions",
            true,
        ),
        (
            Effect::RunStep {
                step,
                issue: 1,
                attempt: 1,
                repair: false,
                commit: None,
                money_left_micros: None,
            },
            "RunStep",
            true,
        ),
        (
            Effect::LookAtCi {
                issue: 1,
                look: 2,
                commit: None,
            },
            "LookAtCi",
            true,
        ),
        (
            Effect::Wait {
                seconds: 1,
                reason: None,
            },
            "Wait",
            true,
        ),
        (
            Effect::AutoCommit(CommitKind::PartialWork),
            "AutoCommit",
            false,
        ),
        (Effect::CheckoutMain, "CheckoutMain", false),
        (Effect::ResetCycle, "ResetCycle", false),
        (
            Effect::RecordMerged {
                issue: 1,
                wait: false,
            },
            "RecordMerged",
            true,
        ),
        (Effect::MarkEscalated { issue: 1 }, "MarkEscalated", true),
        (Effect::Unquarantine { issue: 1 }, "Unquarantine", true),
        (Effect::Cleanup, "Cleanup", false),
        (Effect::Notify(Notice::NothingToDo), "Notify", false),
        (
            Effect::AskDecision {
                step,
                issue: 1,
                budget_spent_micros: None,
            },
            "AskDecision",
            true,
        ),
        (Effect::Halt(HaltReason::Network), "Halt", false),
        (Effect::Exit { code: 0 }, "Exit", true),
    ];
    for (effect, label, request) in effects {
        assert_eq!(effect.label(), label);
        assert_eq!(effect.is_request(), request, "{label}");
    }
}

#[test]
fn machine_texts_of_signals_decisions_causes_commits_and_halts() {
    let signals = [
        (Signal::Int, "SIGINT"),
        (Signal::Term, "SIGTERM"),
        (Signal::Hup, "SIGHUP"),
    ];
    for (signal, name) in signals {
        assert_eq!(signal.name(), name);
        assert_eq!(
            CommitKind::OnSignal(signal).message(),
            format!("chore: save work on signal {name}")
        );
    }
    for (option, name) in DecisionOption::ALL
        .into_iter()
        .zip(["retry", "skip", "halt"])
    {
        assert_eq!(option.name(), name);
        assert_eq!(DecisionOption::parse(name), Some(option));
    }
    assert_eq!(DecisionOption::parse("maybe"), None);
    assert_eq!(
        CommitKind::Implemented { issue: 7 }.message(),
        "feat: implement issue #7"
    );
    assert_eq!(
        CommitKind::PartialWork.message(),
        "chore: save partial work before escalation"
    );
    let causes = [
        (EscalationCause::RetriesExhausted, "retries exhausted"),
        (
            EscalationCause::SameFailureRepeated,
            "same failure repeated",
        ),
        (EscalationCause::BounceLoop, "bounce loop"),
        (EscalationCause::NonRetryable, "non-retryable failure"),
        (EscalationCause::IssueBudget, "issue budget exhausted"),
        (EscalationCause::OperatorSkipped, "skipped by operator"),
    ];
    for (cause, text) in causes {
        assert_eq!(cause.describe(), text);
    }
    let step = Step::Verify;
    let halts = [
        (
            HaltReason::ConsecutiveEscalations {
                cause: EscalationCause::BounceLoop,
                step,
            },
            "FAILURE LOOP DETECTED: bounce loop",
        ),
        (
            HaltReason::ConsecutiveEscalations {
                cause: EscalationCause::RetriesExhausted,
                step,
            },
            "FAILURE LOOP DETECTED: consecutive escalations",
        ),
        (
            HaltReason::AllIssuesEscalated,
            "FAILURE LOOP DETECTED: all issues escalated",
        ),
        (
            HaltReason::AllIssuesBlocked,
            "FAILURE LOOP DETECTED: all issues blocked",
        ),
        (
            HaltReason::MaxConsecutiveFailures { step, limit: 3 },
            "FAILURE LOOP DETECTED: max_consecutive_failures:verify:3",
        ),
        (
            HaltReason::Environment {
                class: FailureClass::Auth,
                step,
            },
            "ENVIRONMENT FAILURE: AUTH",
        ),
        (
            HaltReason::WaitsExhausted {
                class: FailureClass::RateLimit,
                step,
            },
            "ENVIRONMENT FAILURE: RATE_LIMIT",
        ),
        (
            HaltReason::QuotaTooLong { step },
            "ENVIRONMENT FAILURE: QUOTA",
        ),
        (
            HaltReason::SessionBudget,
            "BUDGET EXHAUSTED: session budget",
        ),
        (HaltReason::Operator, "HALTED BY OPERATOR"),
        (HaltReason::DecisionTimeout, "HALTED: decision timed out"),
        (
            HaltReason::RunnerStateLost,
            "ENVIRONMENT FAILURE: RUNNER STATE LOST",
        ),
        (HaltReason::Network, "ENVIRONMENT FAILURE: NETWORK"),
    ];
    for (reason, headline) in halts {
        assert_eq!(reason.headline(), headline);
    }
}

#[test]
fn machine_step_order_follows_the_simplify_switch() {
    let on = Limits::default();
    let off = Limits {
        simplify_enabled: false,
        ..Limits::default()
    };
    assert!(on.enabled(Step::Simplify) && !off.enabled(Step::Simplify));
    assert!(off.enabled(Step::Verify) && off.enabled(Step::Implement));
    assert_eq!(on.enabled_steps().collect::<Vec<_>>(), Step::ALL.to_vec());
    assert_eq!(off.enabled_steps().count(), Step::COUNT - 1);
    assert_eq!(on.next_step(Step::Implement), Some(Step::Simplify));
    assert_eq!(off.next_step(Step::Implement), Some(Step::Verify));
    assert_eq!(off.next_step(Step::StartCycle), Some(Step::StartIssue));
    assert_eq!(on.next_step(Step::Merge), None);
    assert_eq!(on.prev_step(Step::Verify), Some(Step::Simplify));
    assert_eq!(off.prev_step(Step::Verify), Some(Step::Implement));
    assert_eq!(off.prev_step(Step::Merge), Some(Step::MonitorCi));
    assert_eq!(on.prev_step(Step::StartCycle), None);
}

#[test]
fn machine_backoff_doubles_from_the_initial_wait_up_to_the_cap() {
    let l = Limits {
        backoff_initial_secs: 3,
        backoff_max_secs: 20,
        ..Limits::default()
    };
    let waits: Vec<u32> = (1..=5).map(|n| l.backoff_secs(n)).collect();
    assert_eq!(waits, [3, 6, 12, 20, 20]);
    assert_eq!(l.backoff_secs(0), 3, "the first wait, however counted");
    assert_eq!(l.backoff_secs(u32::MAX), 20, "no overflow");
}

/// Drives a fresh issue to monitorCI's first attempt, every earlier step succeeding.
fn at_monitor_ci(limits: Limits) -> Core {
    let mut core = Core::new(limits, Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 4 });
    for step in Step::ALL {
        core.handle(&Event::PreconditionsOk { step });
        if step == Step::MonitorCi {
            return core;
        }
        core.handle(&Event::StepSucceeded {
            step,
            usage: Usage::default(),
        });
    }
    unreachable!("monitorCI is a step")
}

#[test]
fn machine_ci_pending_waits_on_its_schedule_then_times_out_as_one_failed_attempt() {
    let limits = Limits::default();
    assert_eq!(limits.ci_polls(), [10, 20, 40, 80, 120, 120, 120]);
    let mut core = at_monitor_ci(limits.clone());
    let look = Usage {
        cost_micros: 5,
        elapsed_ms: 100,
        turns: 1,
    };
    for (n, &seconds) in limits.ci_polls().iter().enumerate() {
        let fx = core
            .handle(&Event::CiPending {
                usage: look,
                commit: None,
            })
            .to_vec();
        let next = n as u32 + 2;
        assert_eq!(
            fx,
            [
                Effect::Notify(Notice::CiPending {
                    seconds,
                    look: next
                }),
                Effect::Wait {
                    seconds,
                    reason: Some(WaitReason::Ci)
                }
            ]
        );
        assert_eq!(core.state().name(), "WaitingForCi");
        // A restart in the wait waits again, for the same reason: nothing was cut short.
        assert_eq!(
            core.handle(&Event::Start),
            [Effect::Wait {
                seconds,
                reason: Some(WaitReason::Ci)
            }]
        );
        assert_eq!(
            core.handle(&Event::WaitOver),
            [Effect::LookAtCi {
                issue: 4,
                look: next,
                commit: None,
            }]
        );
    }
    assert_eq!(core.runner().attempts[Step::MonitorCi.index()], 0);
    let fx = core
        .handle(&Event::CiPending {
            usage: look,
            commit: None,
        })
        .to_vec();
    assert_eq!(
        fx[0],
        Effect::Notify(Notice::CiStillPending { waited_secs: 510 })
    );
    assert_eq!(
        fx.last(),
        Some(&Effect::CheckPreconditions {
            step: Step::MonitorCi
        })
    );
    let r = core.runner();
    assert_eq!(r.attempts[Step::MonitorCi.index()], 1, "one attempt spent");
    assert_eq!(r.stats.total.invocations, Step::COUNT as u64 - 1, "{r:?}");
    // The looks' cost and the waits' time are the attempt's.
    assert_eq!(r.last_usage.cost_micros, 8 * 5);
    assert_eq!(r.last_usage.elapsed_ms, 8 * 100 + 510_000);
    assert_eq!(
        r.last_failure.map(|f| (f.class, f.signature)),
        Some((
            FailureClass::Timeout,
            crate::failure::Signature::CI_STILL_PENDING
        ))
    );
}

#[test]
fn machine_ci_passing_after_pending_looks_is_one_attempt_with_their_usage() {
    let mut core = at_monitor_ci(Limits::default());
    let look = Usage {
        cost_micros: 7,
        elapsed_ms: 1,
        turns: 0,
    };
    core.handle(&Event::CiPending {
        usage: look,
        commit: None,
    });
    core.handle(&Event::WaitOver);
    // A look that fails on the network is asked again after the network's wait.
    core.handle(&Event::NetworkFailed);
    assert_eq!(
        core.handle(&Event::WaitOver),
        [Effect::LookAtCi {
            issue: 4,
            look: 2,
            commit: None,
        }]
    );
    let fx = core
        .handle(&Event::StepSucceeded {
            step: Step::MonitorCi,
            usage: look,
        })
        .to_vec();
    assert_eq!(fx, [Effect::CheckPreconditions { step: Step::Merge }]);
    let r = core.runner();
    assert_eq!(r.last_usage.cost_micros, 14);
    assert_eq!(r.last_usage.elapsed_ms, 2 + 10_000);
    assert_eq!(r.stats.total.invocations, Step::COUNT as u64 - 1);
}

/// A journal written before the update became its own request names the event
/// `mergeRepaired`; it still replays, as the same `BranchUpdated`.
#[test]
fn an_older_journals_merge_repaired_reads_as_branch_updated() {
    let head = Commit::parse(&"ab".repeat(20)).expect("commit");
    let event = Event::BranchUpdated {
        head,
        usage: Usage::default(),
    };
    let now = serde_json::to_string(&event).expect("serialize");
    assert!(now.contains("\"branchUpdated\""), "{now}");
    let older = now.replace("\"branchUpdated\"", "\"mergeRepaired\"");
    let read: Event = serde_json::from_str(&older).expect("an older journal's record");
    assert_eq!(read, event);
}

/// A stop during a rate-limit wait before a step's run (the run already asked for): the
/// restart waits again, asks for the same run, and takes its answer; before, the answer was
/// dropped as stale and the runner stopped on "0 requests".
#[test]
fn a_stop_during_a_rate_limit_wait_before_a_run_takes_the_reissued_runs_answer() {
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 4 });
    for step in Step::ALL {
        core.handle(&Event::PreconditionsOk { step });
        if step == Step::CreatePr {
            break;
        }
        core.handle(&Event::StepSucceeded {
            step,
            usage: Usage::default(),
        });
    }
    core.handle(&Event::RateLimited { wait_secs: 60 });
    let stop = core
        .handle(&Event::ShutdownRequested {
            signal: Signal::Term,
            usage: Usage::default(),
        })
        .to_vec();
    assert_eq!(stop.last(), Some(&Effect::Exit { code: 0 }), "{stop:?}");
    assert_eq!(
        core.handle(&Event::Start).to_vec(),
        // A restart cannot tell the API's rate limit from the network: the state is the same.
        [Effect::Wait {
            seconds: 61,
            reason: Some(WaitReason::Network)
        }]
    );
    let run = core.handle(&Event::WaitOver).to_vec();
    assert!(
        matches!(
            run[..],
            [Effect::RunStep {
                step: Step::CreatePr,
                attempt: 1,
                ..
            }]
        ),
        "{run:?}"
    );
    let next = core
        .handle(&Event::StepSucceeded {
            step: Step::CreatePr,
            usage: Usage::default(),
        })
        .to_vec();
    assert!(next.iter().any(|e| e.is_request()), "{next:?}");
    assert_eq!(core.state().name(), "MonitorCi", "{next:?}");
}

#[test]
fn a_tracker_that_cannot_be_read_stops_the_run_without_a_halt_and_the_next_run_selects_again() {
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    assert_eq!(core.handle(&Event::Start), [Effect::SelectIssue]);
    assert_eq!(
        core.handle(&Event::TrackerReadFailed),
        [
            Effect::Notify(Notice::TrackerReadFailed),
            Effect::Exit { code: 1 }
        ]
    );
    // Not a halt and not the end of the session: a restart continues it.
    assert!(!core.is_terminal());
    assert_eq!(core.state().name(), "Selecting");
    assert_eq!(core.runner().stats.merges, 0);
    assert_eq!(core.handle(&Event::Start), [Effect::SelectIssue]);
    assert_eq!(
        core.handle(&Event::IssueSelected { issue: 2 })
            .effects()
            .first(),
        Some(&Effect::Notify(Notice::CycleStarted { issue: 2 }))
    );
}

#[test]
fn a_tracker_read_failure_that_answers_no_selection_is_ignored() {
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 2 });
    let before = core.snapshot();
    let fx = core.handle(&Event::TrackerReadFailed).to_vec();
    assert!(!fx.contains(&Effect::Exit { code: 1 }), "{fx:?}");
    assert_eq!(core.snapshot().0, before.0);
}

#[test]
fn an_empty_selection_with_issues_held_elsewhere_is_nothing_to_do_not_a_halt() {
    for held in [
        Event::AllBlocked { others_hold: true },
        Event::AllEscalated { others_hold: true },
    ] {
        let mut core = Core::new(Limits::default(), Mode::Continuous);
        core.handle(&Event::Start);
        assert_eq!(
            core.handle(&held),
            [
                Effect::Notify(Notice::NothingToDo),
                Effect::Exit { code: 0 }
            ],
            "{held:?}"
        );
    }
    // Held by a claim this session met: the same.
    let claims = Limits {
        claims: true,
        ..Limits::default()
    };
    let mut core = Core::new(claims, Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 3 });
    core.handle(&Event::ClaimHeld { issue: 3 });
    assert_eq!(
        core.handle(&Event::AllBlocked { others_hold: false })
            .request(),
        Some(&Effect::Exit { code: 0 })
    );
    // Nobody else holds anything: the halt stands.
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    core.handle(&Event::Start);
    assert!(core
        .handle(&Event::AllBlocked { others_hold: false })
        .effects()
        .contains(&Effect::Halt(HaltReason::AllIssuesBlocked)));
}

#[test]
fn an_older_journals_all_blocked_reads_as_held_by_nobody() {
    let old: Event = serde_json::from_str(r#"{"event":"allBlocked"}"#).expect("old record");
    assert_eq!(old, Event::AllBlocked { others_hold: false });
    assert_eq!(
        serde_json::to_string(&old).expect("json"),
        r#"{"event":"allBlocked"}"#,
        "the record is written as before"
    );
}

#[test]
fn a_wait_reproduces_an_earlier_versions_wait_without_a_reason_and_nothing_else() {
    let wait = |seconds, reason| Effect::Wait { seconds, reason };
    let ci = Some(WaitReason::Ci);
    assert!(wait(10, ci).reproduces(&wait(10, None)));
    assert!(wait(10, ci).reproduces(&wait(10, ci)));
    assert!(!wait(10, ci).reproduces(&wait(10, Some(WaitReason::Review))));
    assert!(!wait(11, ci).reproduces(&wait(10, None)));
    assert!(!wait(10, None).reproduces(&wait(10, ci)));
    assert!(!Effect::SelectIssue.reproduces(&wait(10, None)));
}

/// The agent's repair of a builtin commitPush failed by the code (its own push refused by the
/// same hook): the machine, not the driver, lets the runner's commit and push decide, in the
/// same attempt; a failure no retry helps is the attempt's, as for any step.
#[test]
fn a_failed_repair_of_the_builtin_commit_push_leaves_the_verdict_to_the_runners_push() {
    use doc_support::{failed, until};
    let repairing = |builtin_commit_push: bool| {
        let limits = Limits {
            builtin_commit_push,
            ..Limits::default()
        };
        let mut core = doc_support::started(limits);
        let is_repair = |r: &Effect| {
            matches!(
                r,
                Effect::RunStep {
                    step: Step::CommitPush,
                    repair: true,
                    ..
                }
            )
        };
        let refused = |r: &Effect| match r {
            Effect::RunStep {
                step: Step::CommitPush,
                ..
            } => Some(failed(Step::CommitPush)),
            _ => None,
        };
        let repair = until(
            &mut core,
            Event::IssueSelected { issue: 1 },
            is_repair,
            refused,
        );
        (core, repair)
    };
    let (mut core, repair) = repairing(true);
    let Effect::RunStep { attempt, .. } = repair else {
        panic!("{repair:?}");
    };
    let spent = |cost_micros| Usage {
        cost_micros,
        ..Usage::default()
    };
    let agent_failed = Event::StepFailed {
        step: Step::CommitPush,
        class: FailureClass::Lint,
        signature: crate::failure::Signature(9),
        usage: spent(500),
        wait_hint_secs: None,
    };
    let attempts = core.runner().attempts;
    let push = core.handle(&agent_failed).request().copied();
    assert!(
        matches!(
            push,
            Some(Effect::RunStep {
                step: Step::CommitPush,
                repair: false,
                attempt: a,
                ..
            }) if a == attempt
        ),
        "{push:?}"
    );
    assert_eq!(
        core.runner().attempts,
        attempts,
        "the push ends the attempt"
    );
    // The repair's cost is counted with the attempt's outcome, as a `Repaired`'s.
    core.handle(&Event::StepSucceeded {
        step: Step::CommitPush,
        usage: spent(200),
    });
    assert_eq!(core.runner().issue_cost_micros, 700);

    // A quota the agent met is no verdict of the push's: the machine waits.
    let (mut core, _) = repairing(true);
    let quota = Event::StepFailed {
        step: Step::CommitPush,
        class: FailureClass::Quota,
        signature: crate::failure::Signature(9),
        usage: Usage::default(),
        wait_hint_secs: Some(60),
    };
    let next = core.handle(&quota).request().copied();
    assert!(matches!(next, Some(Effect::Wait { .. })), "{next:?}");

    // An agent's own commitPush: its repair's failure is the attempt's.
    let (mut core, _) = repairing(false);
    let before = core.runner().attempts[Step::CommitPush.index()];
    core.handle(&agent_failed);
    assert_eq!(core.runner().attempts[Step::CommitPush.index()], before + 1);
}

/// The builtin commitPush found work only origin has on the branch (a teammate's commit, a
/// force-push): the session stops on the person's move, no attempt spent, no issue blamed,
/// nothing pushed or merged. An agent's commitPush looked at nothing, so the same answer to
/// it is ignored.
#[test]
fn work_only_origin_has_at_the_builtin_commit_push_stops_the_session_blaming_nobody() {
    use doc_support::until;
    let at_the_push = |builtin_commit_push: bool| {
        let mut core = doc_support::started(Limits {
            builtin_commit_push,
            ..Limits::default()
        });
        let push = until(
            &mut core,
            Event::IssueSelected { issue: 1 },
            |r| {
                matches!(
                    r,
                    Effect::RunStep {
                        step: Step::CommitPush,
                        ..
                    }
                )
            },
            |_| None,
        );
        assert!(
            matches!(push, Effect::RunStep { attempt: 1, .. }),
            "{push:?}"
        );
        core
    };
    let moved = Event::BranchMoved {
        ours: Commit::parse(&"ab".repeat(20)).expect("commit"),
        head: Commit::parse(&"cd".repeat(20)).expect("commit"),
        on_top: false,
    };
    let mut core = at_the_push(true);
    let attempts = core.runner().attempts;
    let fx = core.handle(&moved).effects().to_vec();
    assert_eq!(fx.last(), Some(&Effect::Exit { code: 1 }), "{fx:?}");
    assert!(core.is_terminal());
    let r = core.runner();
    assert_eq!(r.attempts, attempts, "no attempt spent");
    assert!(r.escalated.is_empty(), "{r:?}");
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Halt(HaltReason::BranchMoved {
                issue: 1,
                on_top: false,
                ..
            })
        )),
        "{fx:?}"
    );
    let mut core = at_the_push(false);
    assert!(matches!(core.handle(&moved), Reply::Ignored));
}

/// The runner commits each agent step's work (issue 48: in a sandbox the agent's git
/// directory is read-only): with `runner_commits`, every successful writeSpecs, implement,
/// simplify and verify is followed by its commit, naming the issue and the step, before the
/// next step's checks; an older journal's limits (without it) commit implement's work alone.
#[test]
fn each_agent_steps_work_is_committed_by_the_runner_naming_the_issue_and_step() {
    let commits = |runner_commits: bool| {
        let mut core = doc_support::started(Limits {
            runner_commits,
            ..Limits::default()
        });
        let mut event = Event::IssueSelected { issue: 4 };
        let mut commits = Vec::new();
        for _ in 0..200 {
            let batch = core.handle(&event).to_vec();
            for e in &batch {
                if let Effect::AutoCommit(kind) = e {
                    commits.push(kind.message());
                }
                if let Effect::CheckPreconditions { step } = e {
                    commits.push(format!("check {}", step.key()));
                }
            }
            if batch
                .iter()
                .any(|e| matches!(e, Effect::RecordMerged { .. }))
            {
                return commits;
            }
            let request = *batch.last().expect("a request");
            event = doc_support::ok(&request);
        }
        panic!("no merge: {commits:?}");
    };
    assert_eq!(
        commits(true),
        [
            "check startCycle",
            "check startIssue",
            "check writeSpecs",
            "docs: writeSpecs of issue #4",
            "check implement",
            "feat: implement of issue #4",
            "check simplify",
            "refactor: simplify of issue #4",
            "check verify",
            "fix: verify of issue #4",
            "check commitPush",
            "check createPR",
            "check monitorCI",
            "check merge",
        ]
        .map(String::from)
    );
    let old = commits(false);
    assert!(
        old.iter()
            .filter(|c| !c.starts_with("check"))
            .eq(["feat: implement issue #4"].iter()),
        "{old:?}"
    );
}

/// An agent that cannot reach its model (`NETWORK`) is waited out as the network's: on the
/// network's schedule, `max_network_waits` times in a row whatever `max_rate_limit_waits`
/// says, the step entered again after each wait, no attempt spent; then the session halts as
/// the network's, no issue escalated.
#[test]
fn a_steps_network_failure_is_waited_out_on_the_networks_bound_then_halts_blaming_no_issue() {
    let limits = Limits {
        max_rate_limit_waits: 0,
        max_network_waits: 3,
        ..Limits::default()
    };
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 4 });
    core.handle(&Event::PreconditionsOk {
        step: Step::StartCycle,
    });
    let fail = Event::StepFailed {
        step: Step::StartCycle,
        class: FailureClass::Network,
        signature: crate::failure::Signature(9),
        usage: Usage::default(),
        wait_hint_secs: None,
    };
    for wait in 1..=3 {
        let fx = core.handle(&fail).to_vec();
        let seconds = u64::from(limits.network_backoff_secs(wait));
        assert_eq!(
            fx,
            [
                Effect::Notify(Notice::NetworkWait { seconds, wait }),
                Effect::Wait {
                    seconds,
                    reason: Some(WaitReason::Network)
                }
            ],
            "wait {wait}"
        );
        assert_eq!(
            core.handle(&Event::WaitOver).to_vec(),
            [Effect::CheckPreconditions {
                step: Step::StartCycle
            }]
        );
        let run = core
            .handle(&Event::PreconditionsOk {
                step: Step::StartCycle,
            })
            .to_vec();
        assert!(
            matches!(run[..], [Effect::RunStep { attempt: 1, .. }]),
            "no attempt spent: {run:?}"
        );
    }
    let fx = core.handle(&fail).to_vec();
    assert!(fx.contains(&Effect::Halt(HaltReason::Network)), "{fx:?}");
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::MarkEscalated { .. })),
        "{fx:?}"
    );
    assert!(core.escalated().is_empty());
    assert_eq!(core.runner().attempts, [0; Step::COUNT]);
}

/// A branch that weakens the tests at the builtin commitPush (`TESTS_WEAKENED`): handed back
/// to the agent once (a repair attempt carrying the facts), then, found again by the
/// runner's push, the issue escalates with its own cause, quoting that failure; the step's
/// other attempts are not spent on it.
#[test]
fn weakened_tests_are_handed_back_once_then_escalate() {
    use doc_support::until;
    let limits = Limits {
        builtin_commit_push: true,
        max_retries_per_step: 5,
        ..Limits::default()
    };
    let mut core = doc_support::started(limits);
    let weakened = || Event::StepFailed {
        step: Step::CommitPush,
        class: FailureClass::TestsWeakened,
        signature: crate::failure::Signature(7),
        usage: Usage::default(),
        wait_hint_secs: None,
    };
    let push = |r: &Effect| {
        matches!(
            r,
            Effect::RunStep {
                step: Step::CommitPush,
                repair: false,
                ..
            }
        )
    };
    until(&mut core, Event::IssueSelected { issue: 1 }, push, |_| None);
    let repair = until(
        &mut core,
        weakened(),
        |r| matches!(r, Effect::RunStep { .. }),
        |_| None,
    );
    assert!(
        matches!(
            repair,
            Effect::RunStep {
                step: Step::CommitPush,
                repair: true,
                ..
            }
        ),
        "handed back with a repair: {repair:?}"
    );
    let again = core
        .handle(&Event::Repaired {
            step: Step::CommitPush,
            usage: Usage::default(),
        })
        .request()
        .copied();
    assert!(matches!(again, Some(e) if push(&e)), "{again:?}");
    let escalation = core.handle(&weakened()).request().copied();
    assert!(
        matches!(escalation, Some(Effect::MarkEscalated { issue: 1 })),
        "{escalation:?}"
    );
    assert_eq!(
        *core.state(),
        State::Escalating {
            step: Step::CommitPush,
            cause: EscalationCause::TestsWeakened
        }
    );
    assert_eq!(core.runner().attempts[Step::CommitPush.index()], 2);
}

/// `tests.weakening: "ask"`: the weakening waits for a person instead of a hand-back;
/// `retry` approves it for the cycle (the runner's next push is not held, the attempt given
/// back); a new cycle forgets the approval.
#[test]
fn with_ask_a_weakening_waits_for_a_person_whose_retry_approves_it_for_the_cycle() {
    use doc_support::until;
    let limits = Limits {
        builtin_commit_push: true,
        ask_on_weakening: true,
        ..Limits::default()
    };
    let mut core = doc_support::started(limits);
    let push = |r: &Effect| {
        matches!(
            r,
            Effect::RunStep {
                step: Step::CommitPush,
                ..
            }
        )
    };
    until(&mut core, Event::IssueSelected { issue: 1 }, push, |_| None);
    let asked = core
        .handle(&Event::StepFailed {
            step: Step::CommitPush,
            class: FailureClass::TestsWeakened,
            signature: crate::failure::Signature(7),
            usage: Usage::default(),
            wait_hint_secs: None,
        })
        .iter()
        .copied()
        .collect::<Vec<_>>();
    assert!(
        asked.iter().any(|e| matches!(
            e,
            Effect::AskDecision {
                step: Step::CommitPush,
                ..
            }
        )),
        "{asked:?}"
    );
    assert!(!core.runner().weakening_approved());
    let next = until(
        &mut core,
        Event::Decided {
            option: DecisionOption::Retry,
        },
        push,
        |_| None,
    );
    assert!(
        matches!(
            next,
            Effect::RunStep {
                repair: false,
                attempt: 1,
                ..
            }
        ),
        "{next:?}"
    );
    assert!(core.runner().weakening_approved());
    until(
        &mut core,
        Event::StepSucceeded {
            step: Step::CommitPush,
            usage: Usage::default(),
        },
        |r| matches!(r, Effect::SelectIssue),
        |_| None,
    );
    core.handle(&Event::IssueSelected { issue: 2 });
    assert!(!core.runner().weakening_approved());
}

/// Every pause says what it waits for, so the shell never reads the state to know: one for
/// another merger (the turn busy, a lost push race, and again on a restart in the wait) may
/// end early with news of the turn; one between looks for a person's decision may not.
#[test]
fn a_pause_says_whether_news_of_the_merge_turn_may_end_it() {
    use super::doc_support::{failed, started, until};
    let pauses = |fx: &[Effect]| -> Vec<PauseFor> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Pause { waits_for, .. } => Some(*waits_for),
                _ => None,
            })
            .collect()
    };
    let mut core = started(Limits {
        merge_turn_wait_ms: Some(60_000),
        ..Limits::default()
    });
    let is_turn = |r: &Effect| matches!(r, Effect::TakeMergeTurn { .. });
    until(
        &mut core,
        Event::IssueSelected { issue: 1 },
        is_turn,
        |_| None,
    );
    let busy = core.handle(&Event::MergeTurnBusy).to_vec();
    assert_eq!(pauses(&busy), [PauseFor::MergeTurn], "{busy:?}");
    assert!(matches!(core.state(), State::WaitingToMerge { .. }));
    let restarted = core.handle(&Event::Start).to_vec();
    assert_eq!(pauses(&restarted), [PauseFor::MergeTurn], "{restarted:?}");
    let is_merge = |r: &Effect| {
        matches!(
            r,
            Effect::RunStep {
                step: Step::Merge,
                ..
            }
        )
    };
    until(&mut core, Event::WaitOver, is_merge, |_| None);
    let lost = core
        .handle(&Event::MergeRaceLost {
            class: FailureClass::Unknown,
            signature: crate::failure::Signature(5),
            usage: Usage::default(),
        })
        .to_vec();
    assert_eq!(pauses(&lost), [PauseFor::MergeTurn], "{lost:?}");

    let mut core = started(Limits {
        manual_approval: true,
        ..Limits::default()
    });
    let is_ask = |r: &Effect| matches!(r, Effect::AskDecision { .. });
    let fails = |r: &Effect| match r {
        Effect::RunStep { step, .. } => Some(failed(*step)),
        _ => None,
    };
    until(&mut core, Event::IssueSelected { issue: 1 }, is_ask, fails);
    let pending = core.handle(&Event::DecisionPending).to_vec();
    assert_eq!(pauses(&pending), [PauseFor::Decision], "{pending:?}");
    // A pause an earlier version journaled, saying nothing of what it waits for, is one no
    // news ends: it only runs its time.
    let old: Effect =
        serde_json::from_str(r#"{"effect":"pause","millis":200}"#).expect("old record");
    assert_eq!(
        old,
        Effect::Pause {
            millis: 200,
            waits_for: PauseFor::Decision
        }
    );
    let new = serde_json::to_string(&busy[busy.len() - 1]).expect("serialize");
    assert!(new.contains(r#""waits_for":"mergeTurn""#), "{new}");
}
