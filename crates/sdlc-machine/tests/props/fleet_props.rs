//! Properties of the coordinator of `run --workers N`, over arbitrary interleavings of the
//! workers' reports: no issue is ever held by two workers, an escalated issue is never
//! restarted, after a halt no worker may dispatch and nothing starts, the consecutive
//! escalations and the shared budget halt exactly at their limits, and the same interleaving
//! always gives the same orders. The merge turn has at most one holder, a waiting worker sees
//! at most `workers - 1` merges of others before its own, and the lease waits and the retries
//! of a lost push race are bounded.

use proptest::prelude::*;
use sdlc_machine::fleet::{
    AfterLostRace, Contention, Coordinator, Dispatch, FleetHalt, FleetLimits, LeaseWait, Order,
    Report, Share,
};
use std::collections::{BTreeMap, BTreeSet};

fn report(workers: u32) -> impl Strategy<Value = Report> {
    let w = 0..workers;
    let issue = 1u32..8;
    prop_oneof![
        4 => (w.clone(), issue.clone()).prop_map(|(worker, issue)| Report::WantsIssue { worker, issue }),
        2 => (w.clone(), 0u64..400).prop_map(|(worker, micros)| Report::Spent { worker, micros }),
        2 => (w.clone(), issue.clone()).prop_map(|(worker, issue)| Report::Merged { worker, issue }),
        2 => (w.clone(), issue).prop_map(|(worker, issue)| Report::Escalated { worker, issue }),
        1 => (w.clone(), 0u64..1000).prop_map(|(worker, until)| Report::Waiting { worker, until }),
        1 => w.clone().prop_map(|worker| Report::Halted { worker }),
        1 => w.clone().prop_map(|worker| Report::Finished { worker }),
        3 => w.clone().prop_map(|worker| Report::WantsMerge { worker }),
        2 => w.prop_map(|worker| Report::MergeDone { worker }),
    ]
}

fn scenario() -> impl Strategy<Value = (FleetLimits, Vec<Report>)> {
    (
        1u32..5,
        1u32..4,
        proptest::option::of(100u64..3000),
        proptest::option::of(50u64..3000),
    )
        .prop_flat_map(|(workers, e, budget, day_left)| {
            let limits = FleetLimits {
                workers,
                max_consecutive_escalations: e,
                session_budget_micros: budget,
                day_budget_left_micros: day_left,
                session_spent_before_micros: 0,
                train: None,
                at_work: None,
            };
            (
                Just(limits),
                proptest::collection::vec(report(workers), 0..60),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_fleet_invariants_hold_under_every_interleaving((limits, reports) in scenario()) {
        let mut c = Coordinator::new(limits);
        // Who the orders say holds each issue, kept independently of the coordinator.
        let mut holder: BTreeMap<u32, u32> = BTreeMap::new();
        let mut escalated: BTreeSet<u32> = BTreeSet::new();
        let mut in_a_row = 0u32;
        let mut spent = 0u64;
        let mut halted = false;
        let mut merging: Option<u32> = None;
        // For each waiting worker, the merges granted to others since it first waited.
        let mut waited: BTreeMap<u32, u32> = BTreeMap::new();
        for r in &reports {
            let orders = c.handle(*r);
            for o in &orders {
                match o.clone() {
                    Order::Start { worker, issue } => {
                        prop_assert!(!halted, "nothing starts after a halt");
                        prop_assert!(!escalated.contains(&issue), "escalated #{issue} restarted");
                        if let Some(w) = holder.get(&issue) {
                            prop_assert_eq!(*w, worker, "#{} held by two workers", issue);
                        }
                        holder.retain(|_, w| *w != worker);
                        holder.insert(issue, worker);
                    }
                    Order::HaltAll(_) => {
                        prop_assert!(!halted, "one halt");
                        halted = true;
                        merging = None;
                        waited.clear();
                    }
                    Order::MergeGo { worker } => {
                        prop_assert!(!halted, "no merge after a halt");
                        if let Some(h) = merging {
                            prop_assert_eq!(h, worker, "two merge holders");
                        } else {
                            for (w, n) in waited.iter_mut() {
                                if *w != worker {
                                    *n += 1;
                                    prop_assert!(*n < limits.workers, "worker {} waited past {} merges", w, n);
                                }
                            }
                        }
                        merging = Some(worker);
                        waited.remove(&worker);
                    }
                    Order::MergeWait { worker, holder } => {
                        prop_assert_ne!(worker, holder);
                        waited.entry(worker).or_insert(0);
                    }
                    Order::Skip { .. } | Order::PauseAll { .. } => {}
                    other => prop_assert!(false, "no train, no train order: {:?}", other),
                }
            }
            match *r {
                Report::Merged { worker, .. } | Report::Escalated { worker, .. }
                | Report::Halted { worker } | Report::Finished { worker }
                | Report::MergeDone { worker } => {
                    if merging == Some(worker) {
                        merging = None;
                    }
                    waited.remove(&worker);
                }
                _ => {}
            }
            prop_assert_eq!(c.merging(), merging);
            match *r {
                Report::Merged { worker, issue } => {
                    holder.remove(&issue);
                    holder.retain(|_, w| *w != worker);
                    in_a_row = 0;
                }
                Report::Escalated { worker, issue } => {
                    holder.remove(&issue);
                    holder.retain(|_, w| *w != worker);
                    if escalated.insert(issue) {
                        in_a_row += 1;
                        if in_a_row >= limits.max_consecutive_escalations && !halted {
                            prop_assert!(
                                orders.contains(&Order::HaltAll(FleetHalt::ConsecutiveEscalations { count: in_a_row })),
                                "halts at {} escalations in a row: {:?}", in_a_row, orders
                            );
                        }
                    }
                }
                Report::Spent { micros, .. } => {
                    spent += micros;
                    // The session budget and what the day had left bound the fleet alike.
                    let least = [limits.session_budget_micros, limits.day_budget_left_micros]
                        .into_iter()
                        .flatten()
                        .min();
                    if let Some(b) = least {
                        let halts = orders.iter().any(|o| matches!(
                            o,
                            Order::HaltAll(FleetHalt::SessionBudget { .. } | FleetHalt::DayBudget { .. })
                        ));
                        if spent >= b && !halted {
                            prop_assert!(false, "budget {} reached at {} without a halt", b, spent);
                        }
                        if halts {
                            prop_assert!(spent >= b, "halted under the budget");
                        }
                    }
                }
                Report::Halted { worker } | Report::Finished { worker } => {
                    holder.retain(|_, w| *w != worker);
                }
                _ => {}
            }
            // The coordinator's view agrees with the orders, and no issue has two holders
            // (a map cannot say otherwise; every worker holds at most one issue).
            for (issue, w) in &holder {
                prop_assert_eq!(c.holder(*issue), Some(*w));
            }
            let mut per_worker = BTreeMap::new();
            for w in holder.values() {
                *per_worker.entry(*w).or_insert(0) += 1;
                prop_assert!(per_worker[w] <= 1, "worker {} holds two issues", w);
            }
            if halted {
                for now in [0, 500, u64::MAX] {
                    prop_assert_eq!(c.may_dispatch(now), Dispatch::Stop);
                }
            }
        }
        // Determinism: the same interleaving, the same orders.
        let mut a = Coordinator::new(limits);
        let mut b = Coordinator::new(limits);
        for r in &reports {
            prop_assert_eq!(a.handle(*r), b.handle(*r));
        }
    }
}

proptest! {
    #[test]
    fn a_lease_wait_ends_within_its_limit(limit in 0u64..200_000) {
        let mut w = LeaseWait::new(limit);
        let mut pauses = 0u64;
        let mut total = 0u64;
        while let Some(p) = w.busy() {
            prop_assert!((1..=LeaseWait::MAX_MS).contains(&p));
            pauses += 1;
            total += p;
            prop_assert!(pauses <= LeaseWait::max_pauses(limit) + 1, "{} pauses for {}", pauses, limit);
        }
        prop_assert!(total <= limit.max(1), "waited {} past {}", total, limit);
        prop_assert_eq!(w.busy(), None, "over for good");
    }

    #[test]
    fn lost_races_are_retried_a_bounded_number_of_times(races in 0u32..20) {
        let mut c = Contention::default();
        let retries = (0..races)
            .filter(|_| matches!(c.lost_race(), AfterLostRace::Retry { .. }))
            .count() as u32;
        prop_assert_eq!(retries, races.min(Contention::MAX_LOST_RACES));
    }
}

/// The most one stream event (one model request) can cost past what a call was handed: the
/// runner stops the call at the first event that reaches its money.
const EVENT: u64 = 300;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Agent calls of several workers at once, each starting when its worker asks for a share
    /// and ending with a spend of at most what it was handed plus one event: the shares out
    /// at once never pass what the fleet has left, so the workers together never spend more
    /// than the fleet's budget plus one event per call under way, and a worker is told to wait
    /// only while another's call is under way (nobody waits for nobody).
    #[test]
    fn calls_at_once_share_what_the_fleet_has_left(
        workers in 1u32..5,
        budget in 100u64..5000,
        day_left in proptest::option::of(100u64..5000),
        before in 0u64..6000,
        steps in proptest::collection::vec((0u32..5, proptest::option::of(0u64..4000), 0u64..=1000, any::<bool>()), 0..80),
    ) {
        // `before`: what the continued sessions had spent before a crash and this restart of
        // the fleet (their journals'): the session budget has only the rest.
        let limits = FleetLimits {
            workers,
            max_consecutive_escalations: 3,
            session_budget_micros: Some(budget),
            day_budget_left_micros: day_left,
            session_spent_before_micros: before,
            train: None,
            at_work: None,
        };
        let session_left = budget.saturating_sub(before);
        let ceiling = day_left.map_or(session_left, |d| d.min(session_left));
        let mut c = Coordinator::new(limits);
        // Each worker's call under way: what it was handed.
        let mut under_way: BTreeMap<u32, u64> = BTreeMap::new();
        let mut spent = 0u64;
        for (w, wanted, permille, start) in steps {
            let worker = w % workers;
            if c.halt().is_some() {
                break;
            }
            match under_way.get(&worker).copied() {
                None if start => match c.share(worker, wanted) {
                    Share::Granted(money) => {
                        let money = money.expect("a budget is set: every call is handed money");
                        if let Some(w) = wanted {
                            prop_assert!(money <= w, "handed more than its machine asked");
                        }
                        under_way.insert(worker, money);
                        let out: u64 = under_way.values().sum();
                        prop_assert!(
                            out <= ceiling.saturating_sub(spent).max(money),
                            "shares out {} pass what is left {}", out, ceiling.saturating_sub(spent)
                        );
                    }
                    Share::WaitForOthers => {
                        prop_assert!(
                            under_way.keys().any(|o| *o != worker),
                            "told to wait with no other call under way"
                        );
                        // The wait that follows is not a fleet-wide pause.
                        let orders = c.handle(Report::Waiting { worker, until: 10 });
                        prop_assert!(orders.is_empty(), "{:?}", orders);
                    }
                },
                None => {}
                Some(money) => {
                    // The call ends having spent some of what it was handed, or one event past it.
                    let micros = (money + EVENT) * permille / 1000;
                    under_way.remove(&worker);
                    spent += micros;
                    c.handle(Report::Spent { worker, micros });
                }
            }
        }
        prop_assert!(
            spent <= ceiling + u64::from(workers) * EVENT,
            "spent {} under a ceiling of {} with {} workers", spent, ceiling, workers
        );
    }
}
