//! The merge train outlives a kill: at every boundary of an arbitrary schedule of a fleet's
//! reports, the coordinator restored from its journaled record ([`TrainRecord`], through its
//! JSON form) equals the one before the kill with only its runs under way lost, and from there
//! on both give the same orders to the same reports. So a fleet run again keeps the order of
//! landing and every verdict given, and tests again only what was under way.

use proptest::prelude::*;
use sdlc_machine::fleet::{
    Coordinator, FleetLimits, Order, Report, TrainLimits, TrainRecord, Verdict, Worker,
};

/// What happens next in the fleet, as the harness turns it into a report.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The worker, holding none, takes a new issue.
    Want(Worker),
    /// The worker, holding an issue, asks for the merge turn.
    Merge(Worker),
    /// One of the runs under way ends, CI passing the tree or not.
    Verdict(usize, bool),
    /// One of the runs under way is abandoned.
    Abandon(usize),
    /// A tree built finds main moved by someone else.
    Moved,
    /// The worker with the merge turn merges (merged if its car was settled to land).
    Done,
    /// The worker escalates its issue.
    Escalate(Worker),
    /// The worker stops.
    Finish(Worker),
}

fn step(workers: u32) -> impl Strategy<Value = Step> {
    let w = 0..workers;
    prop_oneof![
        3 => w.clone().prop_map(Step::Want),
        5 => w.clone().prop_map(Step::Merge),
        5 => (0usize..4, proptest::bool::weighted(0.75)).prop_map(|(k, p)| Step::Verdict(k, p)),
        1 => (0usize..4).prop_map(Step::Abandon),
        1 => Just(Step::Moved),
        3 => Just(Step::Done),
        1 => w.clone().prop_map(Step::Escalate),
        1 => w.prop_map(Step::Finish),
    ]
}

fn scenario() -> impl Strategy<Value = (FleetLimits, Vec<Step>)> {
    let shape = (
        1u32..5,
        1u32..4,
        1u32..6,
        1u32..4,
        proptest::option::of(1u32..3),
    );
    shape.prop_flat_map(|(workers, parallel, length, batch, at_work)| {
        let limits = FleetLimits {
            workers,
            max_consecutive_escalations: u32::MAX,
            session_budget_micros: None,
            day_budget_left_micros: None,
            session_spent_before_micros: 0,
            train: Some(TrainLimits {
                max_parallel: parallel,
                max_length: length,
                batch,
            }),
            at_work,
        };
        (
            Just(limits),
            proptest::collection::vec(step(workers), 0..50),
        )
    })
}

/// The fleet around the coordinator: the issues handed out and the runs under way.
#[derive(Debug, Clone, Default)]
struct Harness {
    next_issue: u32,
    /// (worker, run id, the tree's epoch)
    under_way: Vec<(Worker, u64, u32)>,
}

impl Harness {
    /// The reports `step` makes now (none when it does not apply).
    fn reports(&mut self, c: &Coordinator, step: Step) -> Vec<Report> {
        let nth = |k: usize, v: &[(Worker, u64, u32)]| (!v.is_empty()).then(|| k % v.len());
        match step {
            Step::Want(worker) if c.held_by(worker).is_none() => {
                self.next_issue += 1;
                vec![Report::WantsIssue {
                    worker,
                    issue: self.next_issue,
                }]
            }
            Step::Merge(worker) if c.held_by(worker).is_some() => {
                vec![Report::WantsMerge { worker }]
            }
            Step::Verdict(k, passed) => nth(k, &self.under_way)
                .map(|i| self.under_way.remove(i))
                .map(|(worker, id, _)| Report::Tested { worker, id, passed })
                .into_iter()
                .collect(),
            Step::Abandon(k) => nth(k, &self.under_way)
                .map(|i| self.under_way.remove(i))
                .map(|(worker, id, _)| Report::TestAbandoned { worker, id })
                .into_iter()
                .collect(),
            Step::Moved => self
                .under_way
                .first()
                .map(|(worker, _, epoch)| Report::MainMoved {
                    worker: *worker,
                    epoch: *epoch,
                })
                .into_iter()
                .collect(),
            Step::Done => {
                let Some(worker) = c.merging() else {
                    return Vec::new();
                };
                let landed = c.held_by(worker).filter(|issue| {
                    c.train()
                        .is_some_and(|t| t.landed().contains(issue) && t.position(*issue).is_none())
                });
                let mut reports = Vec::new();
                if let Some(issue) = landed {
                    reports.push(Report::Merged { worker, issue });
                }
                reports.push(Report::MergeDone { worker });
                reports
            }
            Step::Escalate(worker) => c
                .held_by(worker)
                .map(|issue| Report::Escalated { worker, issue })
                .into_iter()
                .collect(),
            Step::Finish(worker) => vec![Report::Finished { worker }],
            Step::Want(_) | Step::Merge(_) => Vec::new(),
        }
    }

    fn note(&mut self, orders: &[Order]) {
        for o in orders {
            if let Order::RunTest { worker, test } = o {
                self.under_way.push((*worker, test.id, test.tree.epoch));
            }
        }
    }
}

/// The runs under way in the coordinator's train.
fn runs_under_way(c: &Coordinator) -> Vec<u64> {
    let mut ids: Vec<u64> = c
        .train()
        .map(|t| {
            t.cars()
                .filter_map(|(_, v)| match v {
                    Verdict::Testing(id) => Some(id),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    ids.dedup();
    ids
}

/// A kill of the fleet running `c`: what a run again starts from (the record through its
/// journal's form; each resumed worker holding its issue again), and what `c` is with only its
/// runs under way lost.
fn kill(limits: FleetLimits, c: &Coordinator) -> (Coordinator, Coordinator) {
    let record = c.train_record().expect("a train");
    let json = serde_json::to_string(&record).expect("the record serialises");
    let read: TrainRecord = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(read, record);
    let mut restored = Coordinator::new(limits);
    for worker in 0..limits.workers {
        if let Some(issue) = c.held_by(worker) {
            restored.resume(worker, issue);
        }
    }
    assert!(restored.restore_train(read, |issue| c.holder(issue).is_some()));
    let mut expected = c.clone();
    for id in runs_under_way(c) {
        expected.handle(Report::TestAbandoned { worker: 0, id });
    }
    (restored, expected)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_train_restored_from_its_record_is_the_one_before_the_kill(
        (limits, steps) in scenario()
    ) {
        let mut before = Coordinator::new(limits);
        let mut harness = Harness::default();
        for cut in 0..=steps.len() {
            let (mut restored, mut expected) = kill(limits, &before);
            prop_assert_eq!(restored.train_record(), expected.train_record(), "cut at {}", cut);
            for w in 0..limits.workers {
                prop_assert_eq!(restored.held_by(w), expected.held_by(w));
            }
            // Run again: the worker that had the merge turn asks for it again, as a resumed
            // worker does, and the runs under way at the kill are lost.
            let mut after = Harness { under_way: Vec::new(), ..harness.clone() };
            if let Some(worker) = expected.merging() {
                let e = expected.handle(Report::WantsMerge { worker });
                let r = restored.handle(Report::WantsMerge { worker });
                prop_assert_eq!(&r, &e);
                after.note(&e);
            }
            for s in &steps[cut..] {
                for report in after.reports(&expected, *s) {
                    let e = expected.handle(report);
                    let r = restored.handle(report);
                    prop_assert_eq!(&r, &e, "cut at {}, {:?}", cut, report);
                    after.note(&e);
                }
                prop_assert_eq!(restored.train_record(), expected.train_record());
            }
            if let Some(s) = steps.get(cut) {
                for report in harness.reports(&before, *s) {
                    let orders = before.handle(report);
                    harness.note(&orders);
                }
            }
        }
    }
}

/// Whether `issue`'s PR waits in `c`'s train (tested or settled).
fn parked(c: &Coordinator, issue: u32) -> bool {
    c.settled().any(|s| s == issue) || c.train().is_some_and(|t| t.position(issue).is_some())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// With workers standing by (`at_work`), over any schedule: a worker is given a new issue
    /// only while fewer than `at_work` are at work, `TakeOn` is ordered only when one more
    /// may be, and beyond `at_work` only PRs the train returned are at work (their repair is
    /// never held back).
    #[test]
    fn no_more_workers_are_at_work_than_may_be_but_for_returned_prs(
        (limits, steps) in scenario()
    ) {
        let Some(most) = limits.at_work.map(|m| m as usize) else {
            return Ok(());
        };
        let mut c = Coordinator::new(limits);
        let mut harness = Harness::default();
        let mut were_parked = std::collections::BTreeSet::new();
        for s in steps {
            for report in harness.reports(&c, s) {
                let fresh = match report {
                    Report::WantsIssue { worker, .. } => c.held_by(worker).is_none(),
                    _ => false,
                };
                let orders = c.handle(report);
                harness.note(&orders);
                for o in &orders {
                    match o {
                        Order::Start { .. } if fresh => prop_assert!(
                            c.at_work() <= most,
                            "{} at work after a start, at most {}", c.at_work(), most
                        ),
                        Order::TakeOn => prop_assert!(c.at_work() < most, "take on with no room"),
                        _ => {}
                    }
                }
                let held: Vec<u32> = (0..limits.workers).filter_map(|w| c.held_by(w)).collect();
                were_parked.extend(held.iter().copied().filter(|i| parked(&c, *i)));
                let returned = held
                    .iter()
                    .filter(|i| !parked(&c, **i) && were_parked.contains(*i))
                    .count();
                prop_assert!(
                    c.at_work() <= most + returned,
                    "{} at work, at most {} and {} returned", c.at_work(), most, returned
                );
            }
        }
    }
}
