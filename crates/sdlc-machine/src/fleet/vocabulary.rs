//! The coordinator's vocabulary: the fleet's limits, what a worker reports, what the
//! coordinator orders, why the fleet halted.

use super::train::{Settled, Test, TrainLimits};
#[cfg(doc)]
use super::Coordinator;

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
    /// The merge train's limits, when the workers' merges form one (the local forge with a
    /// builtin merge and a CI command: the workers can build and test the trees); `None`:
    /// one merge turn at a time, first come first served.
    pub train: Option<TrainLimits>,
    /// How many workers may hold an issue whose PR is not waiting in the merge train (at work:
    /// its agent's steps, its own CI): the rest stand by, and one takes an issue when a PR
    /// joins the train. `None`: every worker may hold one.
    pub at_work: Option<u32>,
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
    /// The worker ran the train's test `id` ([`Order::RunTest`]): CI `passed` the tree or
    /// not (a tree that cannot be built, its merges conflicting, did not pass).
    Tested {
        /// The reporting worker.
        worker: Worker,
        /// The test's id.
        id: u64,
        /// Whether CI passed the tree.
        passed: bool,
    },
    /// The worker could not run test `id` for a reason of the environment's (git or the
    /// CI command could not run): no verdict, the tree is tested again.
    TestAbandoned {
        /// The reporting worker.
        worker: Worker,
        /// The test's id.
        id: u64,
    },
    /// Building a tree of train epoch `epoch`, the worker found main moved by someone other
    /// than the train: every tree is built again on the new main.
    MainMoved {
        /// The reporting worker.
        worker: Worker,
        /// The epoch of the tree it built.
        epoch: u32,
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// A worker's PR joined the merge train and one fewer is at work than may be: a worker
    /// standing by may take an issue.
    TakeOn,
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
    /// The worker's PR is in the merge train at `position` (0: the head), not yet settled to
    /// land: ask again after a pause.
    TrainWait {
        /// The worker addressed.
        worker: Worker,
        /// Its car's place in the train.
        position: usize,
    },
    /// While it waits, the worker builds `test.tree` (main as of `test.tree.epoch` plus each
    /// car's PR merged in order, as the builtin merge merges them), runs CI on it and reports
    /// [`Report::Tested`].
    RunTest {
        /// The worker addressed.
        worker: Worker,
        /// The test to run.
        test: Test,
    },
    /// A verdict settled this: a car lands (its worker gets the merge turn in this order),
    /// or is returned to its issue's cycle (its merge, given the turn, meets CI's verdict on
    /// the combination it failed in).
    TrainSettled(Settled),
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
