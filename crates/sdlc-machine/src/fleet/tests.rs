use super::*;

fn limits() -> FleetLimits {
    FleetLimits {
        workers: 3,
        max_consecutive_escalations: 2,
        session_budget_micros: Some(1_000),
        day_budget_left_micros: None,
        session_spent_before_micros: 0,
        train: None,
        at_work: None,
    }
}

#[test]
fn one_issue_one_worker_and_escalations_count_across_workers() {
    let mut c = Coordinator::new(limits());
    assert_eq!(
        c.handle(Report::WantsIssue {
            worker: 0,
            issue: 1
        }),
        vec![Order::Start {
            worker: 0,
            issue: 1
        }]
    );
    assert_eq!(
        c.handle(Report::WantsIssue {
            worker: 1,
            issue: 1
        }),
        vec![Order::Skip {
            worker: 1,
            issue: 1
        }]
    );
    c.handle(Report::WantsIssue {
        worker: 1,
        issue: 2,
    });
    assert!(c
        .handle(Report::Escalated {
            worker: 0,
            issue: 1
        })
        .is_empty());
    assert_eq!(
        c.handle(Report::WantsIssue {
            worker: 2,
            issue: 1
        }),
        vec![Order::Skip {
            worker: 2,
            issue: 1
        }],
        "an escalated issue is never restarted"
    );
    assert_eq!(
        c.handle(Report::Escalated {
            worker: 1,
            issue: 2
        }),
        vec![Order::HaltAll(FleetHalt::ConsecutiveEscalations {
            count: 2
        })]
    );
    assert_eq!(c.may_dispatch(0), Dispatch::Stop);
}

#[test]
fn a_merge_resets_the_count_the_budget_is_shared_and_a_wait_pauses_everyone() {
    let mut c = Coordinator::new(limits());
    c.handle(Report::Escalated {
        worker: 0,
        issue: 1,
    });
    c.handle(Report::Merged {
        worker: 1,
        issue: 2,
    });
    assert!(c
        .handle(Report::Escalated {
            worker: 2,
            issue: 3
        })
        .is_empty());
    assert_eq!(
        c.handle(Report::Waiting {
            worker: 2,
            until: 100
        }),
        vec![Order::PauseAll { until: 100 }]
    );
    assert_eq!(c.may_dispatch(99), Dispatch::WaitUntil(100));
    assert_eq!(c.may_dispatch(100), Dispatch::Go);
    assert!(c
        .handle(Report::Spent {
            worker: 0,
            micros: 600
        })
        .is_empty());
    assert_eq!(
        c.handle(Report::Spent {
            worker: 1,
            micros: 400
        }),
        vec![Order::HaltAll(FleetHalt::SessionBudget {
            spent_micros: 1_000
        })]
    );
    assert!(
        c.handle(Report::Halted { worker: 0 }).is_empty(),
        "halts once"
    );
}

#[test]
fn the_workers_together_halt_at_what_the_day_had_left() {
    let mut c = Coordinator::new(FleetLimits {
        session_budget_micros: None,
        day_budget_left_micros: Some(700),
        ..limits()
    });
    assert!(c
        .handle(Report::Spent {
            worker: 0,
            micros: 400
        })
        .is_empty());
    assert_eq!(
        c.handle(Report::Spent {
            worker: 2,
            micros: 300
        }),
        vec![Order::HaltAll(FleetHalt::DayBudget { spent_micros: 700 })]
    );
}

#[test]
fn one_merge_at_a_time_first_come_first_served() {
    let mut c = Coordinator::new(limits());
    let wants = |worker| Report::WantsMerge { worker };
    assert_eq!(c.handle(wants(0)), vec![Order::MergeGo { worker: 0 }]);
    assert_eq!(
        c.handle(wants(2)),
        vec![Order::MergeWait {
            worker: 2,
            holder: 0
        }]
    );
    assert_eq!(
        c.handle(wants(1)),
        vec![Order::MergeWait {
            worker: 1,
            holder: 0
        }]
    );
    c.handle(Report::MergeDone { worker: 0 });
    // Worker 2 asked first: worker 1 waits for it even though the turn is free.
    assert_eq!(
        c.handle(wants(1)),
        vec![Order::MergeWait {
            worker: 1,
            holder: 2
        }]
    );
    assert_eq!(c.handle(wants(2)), vec![Order::MergeGo { worker: 2 }]);
    // A worker that stops leaves the turn.
    c.handle(Report::Finished { worker: 2 });
    assert_eq!(c.handle(wants(1)), vec![Order::MergeGo { worker: 1 }]);
    c.handle(Report::WantsIssue {
        worker: 1,
        issue: 5,
    });
    assert!(c.others_hold(0) && !c.others_hold(1));
}

#[test]
fn lease_waits_and_lost_races_are_bounded() {
    let mut w = LeaseWait::new(1_000);
    let pauses: Vec<u64> = std::iter::from_fn(|| w.busy()).collect();
    assert_eq!(pauses, vec![200, 400, 400]);
    let mut c = Contention::default();
    for _ in 0..Contention::MAX_LOST_RACES {
        assert!(matches!(c.lost_race(), AfterLostRace::Retry { .. }));
    }
    assert_eq!(c.lost_race(), AfterLostRace::GiveUp);
}

/// Two calls at once share what the fleet has left: the second waits while the first holds
/// all of it, its wait pauses nobody else, and the first's spend frees the rest for it.
#[test]
fn calls_at_once_share_the_fleets_money_and_a_share_wait_pauses_nobody() {
    let mut c = Coordinator::new(limits());
    assert_eq!(c.share(0, None), Share::Granted(Some(1_000)));
    assert_eq!(c.share(1, Some(500)), Share::WaitForOthers);
    assert!(c
        .handle(Report::Waiting {
            worker: 1,
            until: 30
        })
        .is_empty());
    assert_eq!(c.may_dispatch(0), Dispatch::Go, "nobody paused");
    c.handle(Report::Spent {
        worker: 0,
        micros: 700,
    });
    assert_eq!(c.share(1, Some(500)), Share::Granted(Some(300)));
    assert_eq!(c.share(0, Some(100)), Share::WaitForOthers);
    // A worker that finishes gives its share back.
    c.handle(Report::Finished { worker: 1 });
    assert_eq!(c.share(0, Some(100)), Share::Granted(Some(100)));
    // Without a fleet budget a call keeps what its machine handed it.
    let mut free = Coordinator::new(FleetLimits {
        session_budget_micros: None,
        ..limits()
    });
    assert_eq!(free.share(0, Some(42)), Share::Granted(Some(42)));
    assert_eq!(free.share(1, None), Share::Granted(None));
}

#[test]
fn only_the_accounts_and_the_networks_waits_pause_the_fleet() {
    use crate::machine::State;
    use crate::step::Step;
    assert!(wait_pauses_fleet(&State::BackingOff {
        step: Step::Implement,
        seconds: 60
    }));
    assert!(wait_pauses_fleet(&State::WaitingForNetwork { seconds: 5 }));
    assert!(!wait_pauses_fleet(&State::WaitingForCi { seconds: 30 }));
    assert!(!wait_pauses_fleet(&State::WaitingForFleet { seconds: 30 }));
}

fn with_train(max_parallel: u32) -> Coordinator {
    let mut c = Coordinator::new(FleetLimits {
        session_budget_micros: None,
        train: Some(TrainLimits {
            max_parallel,
            max_length: 8,
            batch: 1,
        }),
        ..limits()
    });
    for (worker, issue) in [(0, 1), (1, 2), (2, 3)] {
        c.handle(Report::WantsIssue { worker, issue });
    }
    c
}

/// The test `worker`'s ask for the merge turn hands it, if any; panics on a `MergeGo`.
fn ask(c: &mut Coordinator, worker: Worker) -> Option<Test> {
    let orders = c.handle(Report::WantsMerge { worker });
    let mut test = None;
    for o in orders {
        match o {
            Order::RunTest { test: t, .. } => test = Some(t),
            Order::TrainWait { .. } => {}
            other => panic!("worker {worker} was told {other:?}"),
        }
    }
    test
}

#[test]
fn in_a_train_each_pr_is_tested_with_those_ahead_and_lands_in_order_when_passed() {
    let mut c = with_train(3);
    let t1 = ask(&mut c, 0).expect("the head's test");
    let t2 = ask(&mut c, 1).expect("the second's, at once");
    let t3 = ask(&mut c, 2).expect("the third's, at once");
    assert_eq!(t1.tree.cars, vec![1]);
    assert_eq!(t2.tree.cars, vec![1, 2]);
    assert_eq!(t3.tree.cars, vec![1, 2, 3]);
    // The third passes first: nothing lands before the ones ahead.
    let none = c.handle(Report::Tested {
        worker: 2,
        id: t3.id,
        passed: true,
    });
    assert!(none.is_empty(), "{none:?}");
    assert_eq!(ask(&mut c, 2), None, "waits, nothing to test");
    let landed = c.handle(Report::Tested {
        worker: 0,
        id: t1.id,
        passed: true,
    });
    assert!(
        matches!(&landed[..], [Order::TrainSettled(Settled::Land { cars, .. })] if cars == &vec![1])
    );
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 0 }),
        vec![Order::MergeGo { worker: 0 }]
    );
    c.handle(Report::Tested {
        worker: 1,
        id: t2.id,
        passed: true,
    });
    assert_eq!(ask(&mut c, 1), None, "#2 waits for #1's merge to end");
    c.handle(Report::MergeDone { worker: 0 });
    c.handle(Report::Merged {
        worker: 0,
        issue: 1,
    });
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 2 }),
        vec![Order::TrainWait {
            worker: 2,
            position: 1
        }],
        "#3 after #2"
    );
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 1 }),
        vec![Order::MergeGo { worker: 1 }]
    );
}

#[test]
fn a_pr_failing_with_the_one_ahead_is_returned_and_the_one_behind_tested_without_it() {
    let mut c = with_train(3);
    let t1 = ask(&mut c, 0).expect("#1's test");
    let t2 = ask(&mut c, 1).expect("#2's test");
    let t3 = ask(&mut c, 2).expect("#3's test");
    c.handle(Report::Tested {
        worker: 2,
        id: t3.id,
        passed: false,
    });
    c.handle(Report::Tested {
        worker: 0,
        id: t1.id,
        passed: true,
    });
    let returned = c.handle(Report::Tested {
        worker: 1,
        id: t2.id,
        passed: false,
    });
    assert!(
        matches!(&returned[..], [Order::TrainSettled(Settled::Return { car: 2, failed, .. })] if failed.cars == vec![1, 2]),
        "{returned:?}"
    );
    // #3 is tested again, without #2; #2 gets the turn after #1 to meet its verdict.
    let again = ask(&mut c, 2).expect("#3 again");
    assert_eq!(again.tree.cars, vec![1, 3]);
    assert_eq!(
        c.settled().collect::<Vec<_>>(),
        vec![1, 2],
        "#1 lands, then #2's merge meets its failure"
    );
}

#[test]
fn a_landed_pr_whose_merge_did_not_land_rebuilds_the_train_on_main() {
    let mut c = with_train(2);
    let t1 = ask(&mut c, 0).expect("#1's test");
    let _t2 = ask(&mut c, 1).expect("#2's test");
    c.handle(Report::Tested {
        worker: 0,
        id: t1.id,
        passed: true,
    });
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 0 }),
        vec![Order::MergeGo { worker: 0 }]
    );
    // The merge did not land (a person moved the branch): the turn ends without `Merged`,
    // and #1 asks again later.
    c.handle(Report::MergeDone { worker: 0 });
    let again = ask(&mut c, 0).expect("a test, on main as it is");
    let train = c.train().expect("train");
    assert_eq!(train.landed(), &[] as &[u32], "nothing counts as landed");
    assert_eq!(train.epoch(), 1, "main is not what the trees were built on");
    assert_eq!(again.tree.cars, vec![2], "#2, now the head, on main alone");
    assert_eq!(ask(&mut c, 1).map(|t| t.tree.cars), Some(vec![2, 1]));
}

#[test]
fn a_worker_that_stops_leaves_the_train_and_those_behind_are_rebuilt() {
    let mut c = with_train(2);
    ask(&mut c, 0).expect("#1's test");
    ask(&mut c, 1).expect("#2's test");
    c.handle(Report::Finished { worker: 0 });
    let t = ask(&mut c, 1).expect("#2 alone");
    assert_eq!(t.tree.cars, vec![2]);
    let abandoned = c.handle(Report::TestAbandoned {
        worker: 1,
        id: t.id,
    });
    assert!(abandoned.is_empty());
    assert_eq!(
        ask(&mut c, 1).map(|t| t.tree.cars),
        Some(vec![2]),
        "asked again"
    );
}

#[test]
fn workers_beyond_those_at_work_stand_by_until_a_pr_joins_the_train() {
    let mut c = Coordinator::new(FleetLimits {
        workers: 4,
        session_budget_micros: None,
        train: Some(TrainLimits {
            max_parallel: 2,
            max_length: 8,
            batch: 1,
        }),
        at_work: Some(2),
        ..limits()
    });
    // Whether the worker asking for the issue is given it (else told to skip it).
    let starts = |c: &mut Coordinator, worker, issue| {
        let orders = c.handle(Report::WantsIssue { worker, issue });
        assert!(
            orders == vec![Order::Start { worker, issue }]
                || orders == vec![Order::Skip { worker, issue }],
            "{orders:?}"
        );
        orders == vec![Order::Start { worker, issue }]
    };
    assert!(starts(&mut c, 0, 1));
    assert!(starts(&mut c, 1, 2));
    assert!(!c.may_take_issue(2), "two are at work");
    assert!(!starts(&mut c, 2, 3));
    assert!(c.may_take_issue(0), "a worker keeps the issue it holds");
    assert!(starts(&mut c, 0, 1));
    // #1's PR joins the train: one worker may take an issue.
    let joined = c.handle(Report::WantsMerge { worker: 0 });
    assert_eq!(joined.first(), Some(&Order::TakeOn), "{joined:?}");
    let test = joined.iter().find_map(|o| match o {
        Order::RunTest { test, .. } => Some(test.clone()),
        _ => None,
    });
    assert_eq!(c.at_work(), 1);
    // Asking again while it waits frees nothing more.
    assert!(!c
        .handle(Report::WantsMerge { worker: 0 })
        .contains(&Order::TakeOn));
    assert!(starts(&mut c, 2, 3));
    assert!(!starts(&mut c, 3, 4));
    // #1 fails in the train and is returned: once told (its merge turn), its worker is at
    // work again to repair it, beside the two.
    let test = test.expect("the head's test");
    c.handle(Report::Tested {
        worker: 0,
        id: test.id,
        passed: false,
    });
    assert_eq!(c.at_work(), 2, "settled to be returned, still waiting");
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 0 }),
        vec![Order::MergeGo { worker: 0 }]
    );
    c.handle(Report::MergeDone { worker: 0 });
    assert_eq!(c.at_work(), 3);
    assert!(!c.may_take_issue(3));
    // A landing frees its worker, which is then at work on nothing.
    c.handle(Report::Merged {
        worker: 1,
        issue: 2,
    });
    assert_eq!(c.at_work(), 2);
    assert!(!c.may_take_issue(1), "still two at work");
}

#[test]
fn without_a_limit_on_workers_at_work_none_stands_by_and_no_take_on_is_ordered() {
    let mut c = with_train(2);
    assert!(c.may_take_issue(5));
    let joined = c.handle(Report::WantsMerge { worker: 0 });
    assert!(!joined.contains(&Order::TakeOn), "{joined:?}");
}

#[test]
fn a_landed_pr_waiting_for_its_turn_neither_rebuilds_the_train_nor_runs_a_test_first() {
    let mut c = with_train(3);
    let t1 = ask(&mut c, 0).expect("#1's test");
    let t2 = ask(&mut c, 1).expect("#2's test");
    for (worker, id) in [(0, t1.id), (1, t2.id)] {
        c.handle(Report::Tested {
            worker,
            id,
            passed: true,
        });
    }
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 0 }),
        vec![Order::MergeGo { worker: 0 }]
    );
    // #3 joins behind the two landed ones; its test is main + #1 + #2 + #3.
    let t3 = ask(&mut c, 2).expect("#3's test");
    assert_eq!(t3.tree.cars, vec![1, 2, 3]);
    // #2 asks for its turn while #1 merges: it waits, main has not moved, and it is handed
    // no test (it would merge only after it).
    let waits = c.handle(Report::WantsMerge { worker: 1 });
    assert!(
        matches!(&waits[..], [Order::TrainWait { worker: 1, .. }]),
        "{waits:?}"
    );
    assert_eq!(c.train().map(Train::epoch), Some(0), "no rebuild");
    c.handle(Report::Merged {
        worker: 0,
        issue: 1,
    });
    c.handle(Report::MergeDone { worker: 0 });
    assert_eq!(
        c.handle(Report::WantsMerge { worker: 1 }),
        vec![Order::MergeGo { worker: 1 }]
    );
    assert_eq!(
        c.train().map(Train::epoch),
        Some(0),
        "#3's run still counts"
    );
}
