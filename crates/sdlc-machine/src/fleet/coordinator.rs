//! The coordinator of `run --workers N` and its vocabulary: what a worker reports, what the
//! coordinator orders, why the fleet halted.

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
    /// What the project's daily ceiling had left when the session began (the ceiling less
    /// what every session spent over the 24 hours before), across workers.
    pub day_budget_left_micros: Option<u64>,
    /// What the session had spent before this run of the fleet (micro-dollars): after a
    /// crash the workers continue their sessions, and their journals hold what those spent
    /// (a killed call's running cost included), so the session budget has only the rest
    /// left. The day's remainder already counts it (it is summed from the same journals).
    pub session_spent_before_micros: u64,
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
    /// An agent call of the worker ended, having spent this much (zero too): what it was
    /// handed ([`Coordinator::share`]) is free for the others' calls again.
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
    /// The workers together spent what the daily ceiling had left.
    DayBudget {
        /// What they spent this session, in micro-dollars.
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
            FleetHalt::DayBudget { spent_micros } => format!(
                "BUDGET EXHAUSTED: the workers spent ${:.2} together, what the daily budget had left",
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

/// The fleet's answer to a worker about to start an agent call ([`Coordinator::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// Go, handed this much (micro-dollars; `None`: no dollar budget at all).
    Granted(Option<u64>),
    /// The other workers' calls under way hold all the fleet has left: ask again after
    /// [`Coordinator::SHARE_RECHECK_SECS`] (one of them ends, or the fleet halts).
    WaitForOthers,
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
    /// What each worker's agent call under way was handed (micro-dollars): calls at once
    /// share what the fleet has left instead of each being handed all of it.
    reserved: BTreeMap<Worker, u64>,
    /// Workers told to wait for the others' calls ([`Share::WaitForOthers`]): their next
    /// wait is that, not a rate limit or quota the whole fleet pauses for.
    share_waits: BTreeSet<Worker>,
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
            reserved: BTreeMap::new(),
            share_waits: BTreeSet::new(),
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

    /// How long a worker whose call finds the fleet's money held by the others' calls waits
    /// before it asks again.
    pub const SHARE_RECHECK_SECS: u64 = 30;

    /// What the fleet has left to spend (micro-dollars): the least of the session budget's
    /// and the day's remainder; `None` when neither is set.
    pub fn money_left(&self) -> Option<u64> {
        let left = |budget: Option<u64>| budget.map(|b| b.saturating_sub(self.spent_micros));
        match (
            left(self.session_budget_left()),
            left(self.limits.day_budget_left_micros),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What the session budget had left when this run of the fleet began.
    fn session_budget_left(&self) -> Option<u64> {
        let before = self.limits.session_spent_before_micros;
        self.limits
            .session_budget_micros
            .map(|b| b.saturating_sub(before))
    }

    /// What the other workers' calls under way were handed, together.
    pub fn reserved_by_others(&self, worker: Worker) -> u64 {
        self.reserved
            .iter()
            .filter(|(w, _)| **w != worker)
            .map(|(_, m)| *m)
            .sum()
    }

    /// `worker` is about to start an agent call its machine handed `wanted` (micro-dollars,
    /// `None` without a dollar budget of its own). The call is handed no more than the fleet
    /// has left beside what the other calls under way hold, and that share is held for it
    /// until its worker reports what it spent: so the calls at once never together pass
    /// what the fleet has left by more than one stream event each.
    pub fn share(&mut self, worker: Worker, wanted: Option<u64>) -> Share {
        let Some(fleet_left) = self.money_left() else {
            return Share::Granted(wanted);
        };
        let others = self.reserved_by_others(worker);
        let available = fleet_left.saturating_sub(others);
        if available == 0 && others > 0 {
            self.share_waits.insert(worker);
            return Share::WaitForOthers;
        }
        self.share_waits.remove(&worker);
        let granted = wanted.map_or(available, |w| w.min(available));
        self.reserved.insert(worker, granted);
        Share::Granted(Some(granted))
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
        self.reserved.remove(&worker);
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
            Report::Spent { worker, micros } => {
                self.reserved.remove(&worker);
                self.spent_micros = self.spent_micros.saturating_add(micros);
                let spent_micros = self.spent_micros;
                let reached = |budget: Option<u64>| budget.is_some_and(|b| spent_micros >= b);
                if reached(self.session_budget_left()) {
                    let before = self.limits.session_spent_before_micros;
                    self.halt_all(FleetHalt::SessionBudget {
                        spent_micros: spent_micros.saturating_add(before),
                    })
                } else if reached(self.limits.day_budget_left_micros) {
                    self.halt_all(FleetHalt::DayBudget { spent_micros })
                } else {
                    Vec::new()
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
            Report::Waiting { worker, until } => {
                if self.share_waits.remove(&worker) {
                    // The worker waits for the others' calls to end, not for a limit.
                    return Vec::new();
                }
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
