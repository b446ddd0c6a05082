use super::*;

fn limits() -> FleetLimits {
    FleetLimits {
        workers: 3,
        max_consecutive_escalations: 2,
        session_budget_micros: Some(1_000),
        day_budget_left_micros: None,
        session_spent_before_micros: 0,
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
