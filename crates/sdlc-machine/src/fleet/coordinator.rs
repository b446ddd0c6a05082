//! The coordinator of `run --workers N`: reports in, orders out.

use super::train::{Settled, Train};
use super::vocabulary::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The coordinator's merge train as it outlives the runner: the train (positions, trees,
/// verdicts), the cars settled and waiting for their merge turn, and which of the cars the
/// train counts as landed their workers reported merged. The shell journals it before it
/// carries out an order, and a fleet run again starts from it ([`Coordinator::restore_train`]):
/// the order of landing and the verdicts given stand, only the runs under way are asked for
/// again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainRecord {
    /// The train.
    pub train: Train,
    /// The cars settled (to land or to be returned), in the order they get the merge turn.
    pub settled: Vec<u32>,
    /// The landed cars whose merge their worker reported.
    pub merged: Vec<u32>,
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
    /// The merge train, when the fleet has one (`FleetLimits::train`).
    train: Option<Train>,
    /// Cars the train settled (to land or to be returned), in the order their workers get
    /// the merge turn: main holds what was tested only when they merge in that order.
    settled: VecDeque<u32>,
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
            train: limits.train.map(Train::new),
            settled: VecDeque::new(),
        }
    }

    /// The merge train, when the fleet has one.
    pub fn train(&self) -> Option<&Train> {
        self.train.as_ref()
    }

    /// The train as it must outlive the runner, when the fleet has one ([`TrainRecord`]).
    pub fn train_record(&self) -> Option<TrainRecord> {
        let train = self.train.clone()?;
        let merged = train
            .landed()
            .iter()
            .copied()
            .filter(|c| self.merged.contains(c))
            .collect();
        Some(TrainRecord {
            train,
            settled: self.settled.iter().copied().collect(),
            merged,
        })
    }

    /// Starts from the train a killed or stopped run of the fleet recorded: the runs it had
    /// under way were lost and are asked for again, the verdicts given and the order of
    /// landing stand. A car whose issue no worker holds now (`held`) leaves it, the trees
    /// behind it rebuilt. Whether the record was taken: one made with other limits (the
    /// configuration changed) is not, and the train starts empty.
    pub fn restore_train(&mut self, record: TrainRecord, held: impl Fn(u32) -> bool) -> bool {
        if self.limits.train != Some(record.train.limits()) {
            return false;
        }
        let mut train = record.train;
        train.restart();
        self.merged.extend(record.merged.iter().copied());
        self.settled = record.settled.into_iter().collect();
        self.train = Some(train);
        let gone: Vec<u32> = self
            .train
            .iter()
            .flat_map(|t| t.cars().map(|(c, _)| c))
            .chain(self.settled.iter().copied())
            .filter(|c| !held(*c))
            .collect();
        for car in gone {
            if self.merged.contains(&car) {
                self.settled.retain(|c| *c != car);
            } else {
                self.leave_train(car);
            }
        }
        true
    }

    /// The cars settled and waiting for their merge turn, in order.
    pub fn settled(&self) -> impl Iterator<Item = u32> + '_ {
        self.settled.iter().copied()
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

    /// Whether `car`'s PR waits in the train (under test, or settled and waiting for its
    /// merge turn): its worker's agent has nothing to do until it lands or is returned.
    fn parked(&self, car: u32) -> bool {
        self.settled.contains(&car)
            || self
                .train
                .as_ref()
                .is_some_and(|t| t.position(car).is_some())
    }

    /// How many workers are at work: they hold an issue whose PR does not wait in the train.
    pub fn at_work(&self) -> usize {
        self.held.keys().filter(|car| !self.parked(**car)).count()
    }

    /// Whether the train still waits for test `id`'s verdict: a failure ahead of its tree (or
    /// main moving) makes a test obsolete, and its run may be stopped.
    pub fn test_under_way(&self, id: u64) -> bool {
        self.train
            .as_ref()
            .is_some_and(|t| t.cars().any(|(_, v)| v == super::Verdict::Testing(id)))
    }

    /// After a restart, `worker` holds `issue` again, which it was given before: whatever is
    /// at work now (the train is restored after), a resumed issue is never refused.
    pub fn resume(&mut self, worker: Worker, issue: u32) {
        self.held.retain(|_, w| *w != worker);
        self.held.insert(issue, worker);
    }

    /// Whether `worker` may take an issue now: it holds one already, or fewer workers are at
    /// work than `FleetLimits::at_work` allows.
    pub fn may_take_issue(&self, worker: Worker) -> bool {
        self.held_by(worker).is_some() || self.room() > 0
    }

    /// How many more workers may take an issue now: `FleetLimits::at_work` less those at
    /// work (every one when none stands by).
    pub fn room(&self) -> usize {
        self.limits.at_work.map_or(usize::MAX, |most| {
            usize::try_from(most)
                .unwrap_or(usize::MAX)
                .saturating_sub(self.at_work())
        })
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
        if let Some(car) = self.held_by(worker) {
            self.leave_train(car);
        }
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

    /// `car` leaves the train (its worker stops, escalates or gives up the merge): the trees
    /// behind it are rebuilt. A car the train counts as landed that leaves did not land (a
    /// landed car's worker reports `Merged` first): main is not what the train built on.
    fn leave_train(&mut self, car: u32) {
        let Some(train) = self.train.as_mut() else {
            return;
        };
        self.settled.retain(|c| *c != car);
        if train.landed().contains(&car) && !self.merged.contains(&car) {
            train.main_moved();
        } else {
            train.leave(car);
        }
    }

    /// `WantsMerge` in a fleet with a train: the worker's car joins it (or is in it); it gets
    /// the turn when its car is the first settled and nobody merges; else it waits, and
    /// runs the next test the train hands out while it does.
    fn wants_merge_in_train(&mut self, worker: Worker, car: u32) -> Vec<Order> {
        if self.merging == Some(worker) {
            return vec![Order::MergeGo { worker }];
        }
        if self.merging.is_none() && self.settled.front() == Some(&car) {
            self.merging = Some(worker);
            return vec![Order::MergeGo { worker }];
        }
        let was_parked = self.parked(car);
        let Some(train) = self.train.as_mut() else {
            return Vec::new();
        };
        let settled = self.settled.contains(&car);
        if train.landed().contains(&car) && !self.merged.contains(&car) && !settled {
            // Settled to land, given the turn (which took it off `settled`), and back: its
            // merge did not land.
            train.main_moved();
        }
        if !settled {
            // A full train: the car asks again, and joins once one has left.
            let _ = train.join(car);
        }
        let mut orders = Vec::new();
        if !was_parked && self.parked(car) && self.limits.at_work.is_some() && self.room() > 0 {
            orders.push(Order::TakeOn);
        }
        let Some(train) = self.train.as_mut() else {
            return orders;
        };
        // A car settled to land merges as soon as the ones ahead have: its worker runs no
        // test meanwhile, which would hold up its merge and every one behind it.
        if let Some(test) = (!settled).then(|| train.next_test()).flatten() {
            orders.push(Order::RunTest { worker, test });
        }
        let position = train
            .position(car)
            .or_else(|| self.settled.iter().position(|c| *c == car))
            .unwrap_or(0);
        orders.push(Order::TrainWait { worker, position });
        orders
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
            Report::WantsIssue { worker, issue } => self.on_wants_issue(worker, issue),
            Report::Spent { worker, micros } => self.on_spent(worker, micros),
            Report::Merged { worker, issue } => {
                self.merged.insert(issue);
                self.settled.retain(|c| *c != issue);
                self.held.remove(&issue);
                self.release(worker);
                self.consecutive_escalations = 0;
                Vec::new()
            }
            Report::Escalated { worker, issue } => self.on_escalated(worker, issue),
            Report::Waiting { worker, until } => self.on_waiting(worker, until),
            Report::Halted { worker } => {
                self.release(worker);
                self.halt_all(FleetHalt::WorkerHalted { worker })
            }
            Report::Finished { worker } => {
                self.release(worker);
                Vec::new()
            }
            Report::WantsMerge { worker } => self.on_wants_merge(worker),
            Report::MergeDone { worker } => self.on_merge_done(worker),
            Report::Tested { id, passed, .. } => self.on_tested(id, passed),
            Report::TestAbandoned { id, .. } => {
                if let Some(train) = self.train.as_mut() {
                    train.abandon(id);
                }
                Vec::new()
            }
            Report::MainMoved { epoch, .. } => {
                if let Some(train) = self.train.as_mut().filter(|t| t.epoch() == epoch) {
                    train.main_moved();
                }
                Vec::new()
            }
        }
    }

    /// An issue asked for: started when no other worker holds it and it is not escalated or merged
    /// (and the fleet has not halted); the worker's previous issue is let go.
    fn on_wants_issue(&mut self, worker: Worker, issue: u32) -> Vec<Order> {
        let refused = self.halt.is_some()
            || self.escalated.contains(&issue)
            || self.merged.contains(&issue)
            || self.holder(issue).is_some_and(|w| w != worker)
            || !self.may_take_issue(worker);
        if refused {
            return vec![Order::Skip { worker, issue }];
        }
        self.held.retain(|_, w| *w != worker);
        self.held.insert(issue, worker);
        vec![Order::Start { worker, issue }]
    }

    /// A call's spend: counted across the fleet, which halts when the session's or the day's
    /// budget is reached.
    fn on_spent(&mut self, worker: Worker, micros: u64) -> Vec<Order> {
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

    /// An escalation: the issue leaves the train and is not given out again; too many in a row
    /// across the workers halt the fleet.
    fn on_escalated(&mut self, worker: Worker, issue: u32) -> Vec<Order> {
        self.leave_train(issue);
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

    /// A worker waits out a limit: every worker pauses until then, unless a pause as long is
    /// already under way or the worker only waits for the others' calls.
    fn on_waiting(&mut self, worker: Worker, until: u64) -> Vec<Order> {
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

    /// The merge turn asked for: granted to one worker at a time, in the order asked; in a train,
    /// in the train's order of landing.
    fn on_wants_merge(&mut self, worker: Worker) -> Vec<Order> {
        if self.halt.is_some() {
            // Nothing is granted after a halt; the worker is being stopped.
            return Vec::new();
        }
        if self.train.is_some() {
            if let Some(car) = self.held_by(worker) {
                return self.wants_merge_in_train(worker, car);
            }
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

    /// The merge turn given back: the next settled car may merge, or the worker's car leaves the
    /// train.
    fn on_merge_done(&mut self, worker: Worker) -> Vec<Order> {
        let was_merging = self.merging == Some(worker);
        self.end_merge(worker);
        if let (true, Some(car)) = (was_merging, self.held_by(worker)) {
            if self.settled.front() == Some(&car) {
                self.settled.pop_front();
            } else if self
                .train
                .as_ref()
                .is_some_and(|t| t.position(car).is_some())
            {
                self.leave_train(car);
            }
        }
        Vec::new()
    }

    /// A train test's verdict: the cars it settles queue for the merge turn in the order they
    /// land.
    fn on_tested(&mut self, id: u64, passed: bool) -> Vec<Order> {
        let Some(train) = self.train.as_mut() else {
            return Vec::new();
        };
        let settled = train.verdict(id, passed);
        for s in &settled {
            match s {
                Settled::Land { cars, .. } => self.settled.extend(cars.iter().copied()),
                Settled::Return { car, .. } => self.settled.push_back(*car),
            }
        }
        settled.into_iter().map(Order::TrainSettled).collect()
    }
}
