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

use std::collections::{BTreeMap, BTreeSet};

/// A worker's index, `0..workers`.
pub type Worker = u32;

/// The fleet-wide limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetLimits {
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
        worker: Worker,
        issue: u32,
    },
    /// An attempt of the worker spent this much.
    Spent {
        worker: Worker,
        micros: u64,
    },
    Merged {
        worker: Worker,
        issue: u32,
    },
    Escalated {
        worker: Worker,
        issue: u32,
    },
    /// The worker hit a rate limit or quota and waits until `until` (seconds, any epoch the
    /// caller uses consistently).
    Waiting {
        worker: Worker,
        until: u64,
    },
    /// The worker's own machine halted.
    Halted {
        worker: Worker,
    },
    /// The worker stopped (nothing left for it, or a shutdown); it holds nothing any more.
    Finished {
        worker: Worker,
    },
}

/// Why the fleet halted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetHalt {
    ConsecutiveEscalations { count: u32 },
    SessionBudget { spent_micros: u64 },
    WorkerHalted { worker: Worker },
}

impl FleetHalt {
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
    Start { worker: Worker, issue: u32 },
    /// The worker must leave the issue alone (held by another, escalated, or halted).
    Skip { worker: Worker, issue: u32 },
    /// No worker dispatches before `until`.
    PauseAll { until: u64 },
    /// Every worker stops now: kill its agent, keep its work.
    HaltAll(FleetHalt),
}

/// Whether a worker may dispatch an agent now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    Go,
    WaitUntil(u64),
    Stop,
}

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
}

impl Coordinator {
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
        }
    }

    pub fn limits(&self) -> FleetLimits {
        self.limits
    }

    pub fn halt(&self) -> Option<FleetHalt> {
        self.halt
    }

    pub fn holder(&self, issue: u32) -> Option<Worker> {
        self.held.get(&issue).copied()
    }

    pub fn held_by(&self, worker: Worker) -> Option<u32> {
        self.held
            .iter()
            .find(|(_, w)| **w == worker)
            .map(|(issue, _)| *issue)
    }

    pub fn escalated(&self) -> &BTreeSet<u32> {
        &self.escalated
    }

    pub fn consecutive_escalations(&self) -> u32 {
        self.consecutive_escalations
    }

    pub fn spent_micros(&self) -> u64 {
        self.spent_micros
    }

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
    }

    fn halt_all(&mut self, why: FleetHalt) -> Vec<Order> {
        if self.halt.is_some() {
            return Vec::new();
        }
        self.halt = Some(why);
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
                self.release(worker);
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
        }
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
}
