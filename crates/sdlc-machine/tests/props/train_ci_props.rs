//! A worker of a fleet whose merge train tests CI (`Limits::train_tests_ci`), over arbitrary
//! answers (failures of every class, CI failing the tree the train tested, the agent's
//! repairs, kills and restarts, network failures, a busy merge turn): monitorCI never looks at
//! CI on the branch alone (no `LookAtCi`, no run of it but an agent's repair), no merge
//! carries a verdict on the branch alone, every tree that fails comes back as monitorCI's
//! failure and is repaired within `max_repair_iterations`, and the session ends within
//! `bounds::compute`'s figures, kills included.

use crate::common;
use crate::strategies;

use common::{drive_claiming, ClaimReply, Reply, Trace};
use proptest::prelude::*;
use sdlc_machine::failure::FailureClass;
use sdlc_machine::machine::{bounds, Core, Effect, Event, Limits, Mode, Notice};
use sdlc_machine::step::Step;
use std::collections::VecDeque;
use strategies::{limits, reply};

/// The merge's answers: its run's usual ones, a busy turn, and CI failing the tree it would
/// land (a code-fixable class mostly).
fn merge_reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        3 => reply(),
        2 => Just(Reply::Busy),
        3 => (1u64..4).prop_map(|s| Reply::CiTogether(FailureClass::TestAssertion, s)),
        1 => Just(Reply::CiTogether(FailureClass::Timeout, 9)),
    ]
}

/// monitorCI's answers: its run is only ever the agent's repair, which pushes (`Repaired`)
/// or fails (CI pending answers a look, never a repair).
fn monitor_reply() -> impl Strategy<Value = Reply> {
    let repair = reply().prop_map(|r| match r {
        Reply::CiPending => Reply::Repaired,
        r => r,
    });
    prop_oneof![3 => repair, 3 => Just(Reply::Repaired)]
}

fn run(l: &Limits, backlog: u32, steps: &[Vec<Reply>]) -> (Core, Trace) {
    let mut core = Core::new(l.clone(), Mode::Continuous);
    let mut qs: Vec<VecDeque<Reply>> = steps.iter().map(|q| q.iter().copied().collect()).collect();
    let trace = drive_claiming(
        &mut core,
        backlog,
        100_000,
        || ClaimReply::Yes,
        |step, running| {
            let q = &mut qs[step.index()];
            match (running, q.front().copied()) {
                (
                    false,
                    Some(r @ (Reply::Precondition | Reply::Crash | Reply::Network | Reply::Busy)),
                ) => {
                    q.pop_front();
                    r
                }
                (true, Some(Reply::Precondition | Reply::AlreadyDone | Reply::Busy)) => {
                    q.pop_front();
                    Reply::Ok
                }
                (true, Some(r)) => {
                    q.pop_front();
                    r
                }
                _ => Reply::Ok,
            }
        },
    );
    (core, trace)
}

fn script() -> impl Strategy<Value = Vec<Vec<Reply>>> {
    (
        prop::collection::vec(prop::collection::vec(reply(), 0..8), Step::COUNT),
        prop::collection::vec(monitor_reply(), 0..12),
        prop::collection::vec(merge_reply(), 0..16),
    )
        .prop_map(|(mut steps, monitor, merge)| {
            steps[Step::MonitorCi.index()] = monitor;
            steps[Step::Merge.index()] = merge;
            steps
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn the_train_alone_tests_ci_and_every_failure_of_its_tree_is_monitor_cis(
        l in limits(),
        backlog in 0u32..4,
        steps in script(),
        turn in proptest::sample::select(vec![None, Some(900u64), Some(5_000)]),
    ) {
        let l = Limits { train_tests_ci: true, merge_turn_wait_ms: turn, ..l };
        let (core, trace) = run(&l, backlog, &steps);
        prop_assert!(core.is_terminal() || trace.exit == Some(0));
        for e in &trace.effects {
            match e {
                Effect::LookAtCi { .. } => prop_assert!(false, "a look at CI on the branch alone: {e:?}"),
                Effect::RunStep { step: Step::MonitorCi, repair, .. } => {
                    prop_assert!(*repair, "monitorCI ran other than as a repair: {e:?}")
                }
                Effect::RunStep { step: Step::Merge, commit, .. } => {
                    prop_assert_eq!(*commit, None, "a merge carried a verdict on the branch alone")
                }
                _ => {}
            }
        }
        // Each tree that failed is monitorCI's failed attempt: repaired while the repairs
        // last, escalated past monitorCI's attempts.
        let together = trace.events.iter().filter(|e| matches!(e, Event::CiFailedTogether { .. })).count() as u64;
        let repairs = trace.effects.iter().filter(|e| matches!(e, Effect::RunStep { step: Step::MonitorCi, .. })).count() as u64;
        let cycles = trace.effects.iter().filter(|e| matches!(e, Effect::Notify(Notice::CycleStarted { .. }))).count().max(1) as u64;
        prop_assert!(repairs <= cycles * u64::from(l.max_repair_iterations) * (trace.crashes + 1), "{repairs} repairs");
        prop_assert!(together <= cycles * u64::from(l.max_retries_per_step) * (trace.crashes + 1), "{together} trees failed");
        // Within the printed bound, kills included: the runs between two merges.
        let bound = bounds::compute(&l);
        let mut since_merge = 0u64;
        let mut last_run: Option<&Effect> = None;
        let mut network_wait = false;
        for e in &trace.effects {
            match e {
                Effect::Notify(Notice::NetworkWait { .. }) => network_wait = true,
                Effect::RunStep { .. } => {
                    if !(network_wait && last_run == Some(e)) {
                        since_merge += 1;
                    }
                    last_run = Some(e);
                    network_wait = false;
                }
                Effect::RecordMerged { .. } => {
                    prop_assert!(since_merge <= bound.between_merges, "{since_merge} > {}", bound.between_merges);
                    since_merge = 0;
                }
                _ => {}
            }
        }
        prop_assert!(since_merge <= bound.between_merges, "tail {since_merge} > {}", bound.between_merges);
    }
}

/// The PR alone at the head of the train fails CI: the merge answers `CiFailedTogether`,
/// which is monitorCI's failure: the agent repairs it (a monitorCI run with `repair`), and
/// its push goes straight back to the merge (the train), with no look at CI on the branch.
#[test]
fn a_failing_tree_returns_the_pr_to_monitor_ci_whose_repair_goes_back_to_the_train() {
    let l = Limits {
        train_tests_ci: true,
        ..Limits::default()
    };
    let mut merge = vec![Reply::CiTogether(FailureClass::TestAssertion, 1)];
    merge.resize(2, Reply::Ok);
    let mut steps = vec![Vec::new(); Step::COUNT];
    steps[Step::Merge.index()] = merge;
    steps[Step::MonitorCi.index()] = vec![Reply::Repaired];
    let (_, trace) = run(&l, 1, &steps);
    let requests: Vec<String> = trace
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunStep { step, repair, .. } if step.index() >= Step::MonitorCi.index() => {
                Some(format!(
                    "{}{}",
                    step.key(),
                    if *repair { " repair" } else { "" }
                ))
            }
            Effect::LookAtCi { .. } => Some("look at CI".to_string()),
            Effect::RecordMerged { .. } => Some("merged".to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        requests,
        vec!["merge", "monitorCI repair", "merge", "merged"],
        "{:?}",
        trace.events
    );
}
