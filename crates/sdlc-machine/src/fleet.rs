//! The session-level coordinator of `run --workers N`: pure like the machine (reports in,
//! orders out, no clock: times are passed in), it owns what is global to the workers.
//!
//! - **One issue, one worker.** A worker asks before it starts an issue; an issue another
//!   worker holds, or one escalated in this session, is refused.
//! - **Consecutive escalations** are counted across workers in the order they complete; a merge
//!   anywhere resets the count, and reaching the limit halts every worker.
//! - **The session budget** is the sum of every worker's spend.
//! - **Rate limits and quotas** are the account's, not a worker's: a wait one worker reports
//!   pauses every worker's next dispatch until it ends.
//! - **The halt is sticky and global**: once any worker halts, or the coordinator halts the
//!   fleet, no worker may dispatch again.
//! - **One merge at a time**: the merge turn goes to one worker; the others queue for it in
//!   the order they asked, so each waits for at most `workers - 1` merges.
//!
//! Beside the coordinator, two pure policies every runner follows around a merge, fleet or
//! not: how long it waits for the merge lease ([`LeaseWait`]), and how a merge that lost a push
//! race is retried ([`Contention`]): as contention on main, not as a failed attempt.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A worker's index, `0..workers`.
pub type Worker = u32;

/// The fleet-wide limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetLimits {
    /// How many workers run, each on its own issue (at least 1).
    pub workers: u32,
    /// Escalations in a row, across workers, that halt the fleet (at least 1).
    pub max_consecutive_escalations: u32,
    /// Total agent cost of the session in micro-dollars, across workers.
    pub session_budget_micros: Option<u64>,
}

/// What a worker tells the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// The worker wants to start (or resume) `issue`.
    WantsIssue {
        /// The reporting worker.
        worker: Worker,
        /// The issue it selected.
        issue: u32,
    },
    /// An attempt of the worker spent this much.
    Spent {
        /// The reporting worker.
        worker: Worker,
        /// The attempt's cost in micro-dollars.
        micros: u64,
    },
    /// The worker merged `issue`: the fleet's escalation streak ends.
    Merged {
        /// The reporting worker.
        worker: Worker,
        /// The merged issue.
        issue: u32,
    },
    /// The worker escalated `issue`: no worker takes it again this session.
    Escalated {
        /// The reporting worker.
        worker: Worker,
        /// The escalated issue.
        issue: u32,
    },
    /// The worker hit a rate limit or quota and waits until `until` (seconds, any epoch the
    /// caller uses consistently).
    Waiting {
        /// The reporting worker.
        worker: Worker,
        /// When the wait ends.
        until: u64,
    },
    /// The worker's own machine halted.
    Halted {
        /// The reporting worker.
        worker: Worker,
    },
    /// The worker stopped (nothing left for it, or a shutdown); it holds nothing any more.
    Finished {
        /// The reporting worker.
        worker: Worker,
    },
    /// The worker is about to merge and asks for the merge turn (again, while it waits).
    WantsMerge {
        /// The reporting worker.
        worker: Worker,
    },
    /// The worker's merge is over (merged or not): the turn passes on.
    MergeDone {
        /// The reporting worker.
        worker: Worker,
    },
}

/// Why the fleet halted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetHalt {
    /// `max_consecutive_escalations` escalations in a row across the workers.
    ConsecutiveEscalations {
        /// The streak's length.
        count: u32,
    },
    /// The workers together reached the session budget.
    SessionBudget {
        /// What they spent, in micro-dollars.
        spent_micros: u64,
    },
    /// One worker's own machine halted, which stops them all.
    WorkerHalted {
        /// The worker that halted.
        worker: Worker,
    },
}

impl FleetHalt {
    /// The halt's one-line headline for the console, the notification and `status`.
    pub fn headline(&self) -> String {
        match self {
            FleetHalt::ConsecutiveEscalations { count } => {
                format!("FAILURE LOOP DETECTED: {count} consecutive escalations across the workers")
            }
            FleetHalt::SessionBudget { spent_micros } => format!(
                "BUDGET EXHAUSTED: the workers spent ${:.2} together, the session budget",
                *spent_micros as f64 / 1e6
            ),
            FleetHalt::WorkerHalted { worker } => {
                format!("HALTED: worker {worker} halted; every worker stops")
            }
        }
    }
}

/// What the coordinator decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The worker may work on the issue.
    Start {
        /// The worker addressed.
        worker: Worker,
        /// The issue it now holds.
        issue: u32,
    },
    /// The worker must leave the issue alone (held by another, escalated, or halted).
    Skip {
        /// The worker addressed.
        worker: Worker,
        /// The issue to leave alone.
        issue: u32,
    },
    /// No worker dispatches before `until`.
    PauseAll {
        /// When dispatching may resume, in the reports' time unit.
        until: u64,
    },
    /// Every worker stops now: kill its agent, keep its work.
    HaltAll(FleetHalt),
    /// The worker has the merge turn: it may merge now.
    MergeGo {
        /// The worker addressed.
        worker: Worker,
    },
    /// Another worker merges (or asked first): ask again after a pause.
    MergeWait {
        /// The worker addressed.
        worker: Worker,
        /// The worker that has the turn.
        holder: Worker,
    },
}

/// Whether a worker may dispatch an agent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Yes.
    Go,
    /// Not before this time (a fleet-wide pause for a rate limit or quota).
    WaitUntil(u64),
    /// Never: the fleet halted.
    Stop,
}

/// The pure coordinator of `run --workers N`: reports in, orders out. It gives each issue to
/// one worker at a time, counts escalations and spend across workers, grants the merge turn
/// to one worker at a time and halts the whole fleet when a fleet-wide limit is reached.
#[derive(Debug, Clone)]
pub struct Coordinator {
    limits: FleetLimits,
    /// Issue → the worker that holds it.
    held: BTreeMap<u32, Worker>,
    escalated: BTreeSet<u32>,
    merged: BTreeSet<u32>,
    consecutive_escalations: u32,
    spent_micros: u64,
    paused_until: Option<u64>,
    halt: Option<FleetHalt>,
    /// The worker that has the merge turn.
    merging: Option<Worker>,
    /// Workers waiting for the merge turn, first come first served.
    merge_queue: VecDeque<Worker>,
}

impl Coordinator {
    /// A coordinator with nothing held, escalated or spent.
    pub fn new(limits: FleetLimits) -> Coordinator {
        Coordinator {
            limits,
            held: BTreeMap::new(),
            escalated: BTreeSet::new(),
            merged: BTreeSet::new(),
            consecutive_escalations: 0,
            spent_micros: 0,
            paused_until: None,
            halt: None,
            merging: None,
            merge_queue: VecDeque::new(),
        }
    }

    /// The worker that has the merge turn, if any.
    pub fn merging(&self) -> Option<Worker> {
        self.merging
    }

    /// The workers waiting for the merge turn, in the order they get it.
    pub fn merge_queue(&self) -> impl Iterator<Item = Worker> + '_ {
        self.merge_queue.iter().copied()
    }

    /// Whether a worker other than `worker` holds an issue: then an empty selection of
    /// `worker`'s (every issue left escalated, blocked or held) is not the fleet's end, only
    /// this worker's; it finishes instead of halting everyone.
    pub fn others_hold(&self, worker: Worker) -> bool {
        self.held.values().any(|w| *w != worker)
    }

    /// The limits it was made with.
    pub fn limits(&self) -> FleetLimits {
        self.limits
    }

    /// Why the fleet halted, once it has.
    pub fn halt(&self) -> Option<FleetHalt> {
        self.halt
    }

    /// The worker that holds `issue`, if any.
    pub fn holder(&self, issue: u32) -> Option<Worker> {
        self.held.get(&issue).copied()
    }

    /// The issue `worker` holds, if any.
    pub fn held_by(&self, worker: Worker) -> Option<u32> {
        self.held
            .iter()
            .find(|(_, w)| **w == worker)
            .map(|(issue, _)| *issue)
    }

    /// The issues escalated this session, by any worker.
    pub fn escalated(&self) -> &BTreeSet<u32> {
        &self.escalated
    }

    /// Escalations in a row across the workers since the last merge.
    pub fn consecutive_escalations(&self) -> u32 {
        self.consecutive_escalations
    }

    /// What the workers spent together, in micro-dollars.
    pub fn spent_micros(&self) -> u64 {
        self.spent_micros
    }

    /// Whether a worker may start an agent at `now` (in the reports' time unit).
    pub fn may_dispatch(&self, now: u64) -> Dispatch {
        if self.halt.is_some() {
            return Dispatch::Stop;
        }
        match self.paused_until {
            Some(until) if until > now => Dispatch::WaitUntil(until),
            _ => Dispatch::Go,
        }
    }

    fn release(&mut self, worker: Worker) {
        self.held.retain(|_, w| *w != worker);
        self.end_merge(worker);
    }

    /// `worker` neither merges nor waits to any more.
    fn end_merge(&mut self, worker: Worker) {
        if self.merging == Some(worker) {
            self.merging = None;
        }
        self.merge_queue.retain(|w| *w != worker);
    }

    fn halt_all(&mut self, why: FleetHalt) -> Vec<Order> {
        if self.halt.is_some() {
            return Vec::new();
        }
        self.halt = Some(why);
        // Every worker is being stopped: the merge turn and its queue end with the fleet.
        self.merging = None;
        self.merge_queue.clear();
        vec![Order::HaltAll(why)]
    }

    /// Takes one report; the orders it gives, in the order to carry them out.
    pub fn handle(&mut self, report: Report) -> Vec<Order> {
        match report {
            Report::WantsIssue { worker, issue } => {
                let refused = self.halt.is_some()
                    || self.escalated.contains(&issue)
                    || self.merged.contains(&issue)
                    || self.holder(issue).is_some_and(|w| w != worker);
                if refused {
                    return vec![Order::Skip { worker, issue }];
                }
                self.held.retain(|_, w| *w != worker);
                self.held.insert(issue, worker);
                vec![Order::Start { worker, issue }]
            }
            Report::Spent { micros, .. } => {
                self.spent_micros = self.spent_micros.saturating_add(micros);
                match self.limits.session_budget_micros {
                    Some(budget) if self.spent_micros >= budget => {
                        self.halt_all(FleetHalt::SessionBudget {
                            spent_micros: self.spent_micros,
                        })
                    }
                    _ => Vec::new(),
                }
            }
            Report::Merged { worker, issue } => {
                self.held.remove(&issue);
                self.release(worker);
                self.merged.insert(issue);
                self.consecutive_escalations = 0;
                Vec::new()
            }
            Report::Escalated { worker, issue } => {
                self.held.remove(&issue);
                self.release(worker);
                if !self.escalated.insert(issue) {
                    return Vec::new();
                }
                self.consecutive_escalations = self.consecutive_escalations.saturating_add(1);
                if self.consecutive_escalations >= self.limits.max_consecutive_escalations.max(1) {
                    let count = self.consecutive_escalations;
                    return self.halt_all(FleetHalt::ConsecutiveEscalations { count });
                }
                Vec::new()
            }
            Report::Waiting { until, .. } => {
                if self.halt.is_some() || self.paused_until.is_some_and(|p| p >= until) {
                    return Vec::new();
                }
                self.paused_until = Some(until);
                vec![Order::PauseAll { until }]
            }
            Report::Halted { worker } => {
                self.release(worker);
                self.halt_all(FleetHalt::WorkerHalted { worker })
            }
            Report::Finished { worker } => {
                self.release(worker);
                Vec::new()
            }
            Report::WantsMerge { worker } => {
                if self.halt.is_some() {
                    // Nothing is granted after a halt; the worker is being stopped.
                    return Vec::new();
                }
                // The turn's holder, else the first in the queue, has the right of way.
                let ahead = self
                    .merging
                    .or_else(|| self.merge_queue.front().copied())
                    .filter(|w| *w != worker);
                if let Some(holder) = ahead {
                    if !self.merge_queue.contains(&worker) {
                        self.merge_queue.push_back(worker);
                    }
                    return vec![Order::MergeWait { worker, holder }];
                }
                self.merge_queue.retain(|w| *w != worker);
                self.merging = Some(worker);
                vec![Order::MergeGo { worker }]
            }
            Report::MergeDone { worker } => {
                self.end_merge(worker);
                Vec::new()
            }
        }
    }
}

/// How long a runner waits for the merge lease (the fleet's turn or the tracker's lease)
/// before it gives up: pauses of `FIRST_MS` doubling to `MAX_MS`, until `limit_ms` have
/// passed. The limit is the lease's own length: by then a holder that died has lost its lease
/// and the waiter takes it over, so a longer wait is never needed. Pure: the machine keeps one
/// per wait for the merge turn and asks the driver for each pause (`Effect::Pause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct LeaseWait {
    limit_ms: u64,
    waited_ms: u64,
    next_ms: u64,
}

impl LeaseWait {
    /// The first pause, in milliseconds.
    pub const FIRST_MS: u64 = 200;
    /// The longest pause, in milliseconds.
    pub const MAX_MS: u64 = 2_000;

    /// A wait that gives up after `limit_ms` milliseconds of pauses.
    pub fn new(limit_ms: u64) -> LeaseWait {
        LeaseWait {
            limit_ms,
            waited_ms: 0,
            next_ms: Self::FIRST_MS,
        }
    }

    /// The lease is busy: how long to pause before asking again, or `None` when the wait is
    /// over its limit (the merge then fails as the environment's, naming the holder).
    pub fn busy(&mut self) -> Option<u64> {
        if self.waited_ms >= self.limit_ms {
            return None;
        }
        let pause = self.next_ms.min(self.limit_ms - self.waited_ms).max(1);
        self.waited_ms += pause;
        self.next_ms = (self.next_ms * 2).min(Self::MAX_MS);
        Some(pause)
    }

    /// The pauses handed out so far, in milliseconds.
    pub fn waited_ms(&self) -> u64 {
        self.waited_ms
    }

    /// The most pauses a wait of `limit_ms` can make.
    pub fn max_pauses(limit_ms: u64) -> u64 {
        // The doubling pauses below MAX_MS, then MAX_MS each, and one shortened last pause.
        let mut ramp = 0;
        let mut sum = 0;
        let mut p = Self::FIRST_MS;
        while p < Self::MAX_MS && sum < limit_ms {
            sum += p;
            ramp += 1;
            p *= 2;
        }
        ramp + limit_ms.saturating_sub(sum).div_ceil(Self::MAX_MS)
    }
}

/// A merge that lost a push race (main on origin moved while it merged, and the branch is not
/// in it) is contention on main, not a failure of the issue: main is refreshed, the branch
/// brought up to date and the merge done again, without spending an attempt, up to
/// [`Contention::MAX_LOST_RACES`] times per attempt. Past that the lost race is the attempt's
/// failure like any other, so the machine's retry limit and bounds still hold. The machine keeps
/// one per merge attempt.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Contention {
    lost: u32,
}

/// What to do after a lost race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterLostRace {
    /// Refresh main and merge again, after this pause in milliseconds.
    Retry {
        /// How long to pause first.
        pause_ms: u64,
    },
    /// Report the attempt as failed.
    GiveUp,
}

impl Contention {
    /// Lost races per attempt that are merged again for free.
    pub const MAX_LOST_RACES: u32 = 3;

    /// Records a lost race: merge again after a pause growing by 250 ms per race, or give up
    /// past [`Contention::MAX_LOST_RACES`].
    pub fn lost_race(&mut self) -> AfterLostRace {
        if self.lost >= Self::MAX_LOST_RACES {
            return AfterLostRace::GiveUp;
        }
        self.lost += 1;
        AfterLostRace::Retry {
            pause_ms: 250 * u64::from(self.lost),
        }
    }

    /// The races lost so far in this attempt.
    pub fn lost(&self) -> u32 {
        self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> FleetLimits {
        FleetLimits {
            workers: 3,
            max_consecutive_escalations: 2,
            session_budget_micros: Some(1_000),
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
}
