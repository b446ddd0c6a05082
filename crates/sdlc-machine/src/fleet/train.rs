//! The merge train: PRs ready to merge, tested together so that CI runs at once for several
//! of them and main still holds only trees CI passed. Pure, like the coordinator: the train
//! is data (the cars in order, grouped into batches, each batch's tree and verdict), and its
//! methods say what to test next, what lands and which PR is returned.
//!
//! - **A tree per batch.** Cars are grouped into batches of at most `batch` cars in the order
//!   they joined; batch `i`'s tree is main plus every car of batches `0..=i`, so a batch is
//!   tested with the ones ahead of it. Up to `max_parallel` batches at the front of the train
//!   are tested at once ([`Train::next_test`]).
//! - **The head lands when it passes.** Everything ahead of the head has landed, so its tree
//!   is main plus the head: passed, main moves to exactly that tree ([`Settled::Land`]), and
//!   the trees behind it stay what they were (main now holds what they were built on).
//! - **A failure at the head is the head's.** Its tree is main (a tree CI passed) plus the
//!   head's cars: a single car is returned to its issue ([`Settled::Return`], naming the tree
//!   it failed in and the tree that passed without it); a batch of several is bisected: its
//!   first half is tested alone, the second half keeps the failed verdict (its tree is the
//!   whole batch's), so the culprit is found in `⌈log2 batch⌉` more runs. A failure behind the
//!   head waits: if a car ahead is returned it is tested again without it, never blamed.
//! - **A return rebuilds those behind.** Every tree behind a returned car held it: their
//!   verdicts, and the verdicts of runs still under way, no longer count
//!   ([`Train::verdict`] ignores a run it did not start on the current tree).
//! - **A kill loses only runs under way** ([`Train::restart`]): their batches are tested
//!   again; nothing lands without a verdict of its very tree.
//!
//! The worst case of CI runs is [`TrainLimits::max_ci_runs`], exact for batches of one.

use serde::{Deserialize, Serialize};

/// A car of the train: the issue whose PR it is.
pub type Car = u32;

/// The train's limits (`train.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TrainLimits {
    /// Batches tested at once, from the front of the train (at least 1).
    pub max_parallel: u32,
    /// Cars in the train at once (at least 1); a PR ready beyond that waits to join.
    pub max_length: u32,
    /// Cars tested together as one tree (at least 1; more for expensive CI).
    pub batch: u32,
}

/// A tree under test: main as the train last saw it move from outside (`epoch`) plus
/// `cars` merged onto it in order (the cars landed since, then the ones ahead, then the
/// batch's own).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Tree {
    /// Moves of main the train did not make, so far.
    pub epoch: u32,
    /// Every car merged onto that main, in order.
    pub cars: Vec<Car>,
}

/// One CI run the train asks for: test `tree`, then report [`Train::verdict`] with `id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Test {
    /// The run's id, unique in this train.
    pub id: u64,
    /// The tree to build and test.
    pub tree: Tree,
    /// The cars of the batch under test (the end of `tree.cars`).
    pub batch: Vec<Car>,
}

/// A batch's verdict on its current tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// Not tested on its current tree yet.
    Untested,
    /// CI runs on it (run `id`).
    Testing(u64),
    /// CI passed it (run `id`).
    Passed(u64),
    /// CI failed it (run `id`).
    Failed(u64),
}

/// What a verdict settled, in the order to carry it out.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Settled {
    /// Main moves to exactly `tree` (CI passed it): `cars` are merged.
    Land {
        /// The cars landed, in order.
        cars: Vec<Car>,
        /// The tree main now holds.
        tree: Tree,
    },
    /// `car` failed in `failed`, while `passed` (the same without it) is main: its PR goes
    /// back to its issue as a CI failure naming the combination.
    Return {
        /// The car returned.
        car: Car,
        /// The tree it failed in.
        failed: Tree,
        /// The tree without it, which CI passed.
        passed: Tree,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Batch {
    cars: Vec<Car>,
    verdict: Verdict,
    /// Never tested, split or rebuilt: cars that join may still be added to it.
    fresh: bool,
}

/// Why a car cannot join now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinRefused {
    /// The train holds `max_length` cars: ask again after one lands or leaves.
    Full,
}

/// The merge train (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Train {
    limits: TrainLimits,
    epoch: u32,
    /// The cars landed since main last moved from outside: the base of every tree.
    landed: Vec<Car>,
    batches: Vec<Batch>,
    next_id: u64,
    /// CI runs asked for so far.
    runs: u64,
}

impl TrainLimits {
    fn parallel(&self) -> usize {
        self.max_parallel.max(1) as usize
    }

    fn batch_len(&self) -> usize {
        self.batch.max(1) as usize
    }

    /// Most splits of batches for `cars` cars: every batch made ends by landing or by a
    /// return (so at most `cars` are made), and joins make at least `⌈cars / batch⌉`.
    pub fn max_splits(&self, cars: u64) -> u64 {
        cars - cars.div_ceil(u64::from(self.batch.max(1)))
    }

    /// The most CI runs a train makes to settle `cars` cars (each lands or is returned),
    /// whatever CI answers and in whatever order its runs end, with `kills` restarts of the
    /// runner: one run per batch made (at most `cars`: every batch ends by landing or by a
    /// return), plus, at each return, the runs of the batches behind the returned car that
    /// had started (at most `max_parallel - 1`, and no more than the cars behind), plus one
    /// for each split (the failed half kept behind is tested again when the other half's
    /// car is returned), plus, at each kill, the runs it cut short (at most `max_parallel`
    /// and the cars, and one more for each split). Exact for a batch of one
    /// (`crates/sdlc-machine/tests/props/train_props.rs`, by exhaustive search); an upper bound for
    /// larger batches.
    pub fn max_ci_runs(&self, cars: u64, kills: u64) -> u64 {
        let parallel = u64::from(self.max_parallel.max(1));
        let behind: u64 = (0..cars).map(|k| k.min(parallel - 1)).sum();
        let splits = self.max_splits(cars);
        cars + behind + splits + kills * (parallel.min(cars) + splits)
    }

    /// The most CI runs per landed car when no run fails: one per batch, so at most one.
    pub fn max_ci_runs_when_green(&self, cars: u64) -> u64 {
        cars.div_ceil(u64::from(self.batch.max(1)))
    }
}

impl Train {
    /// An empty train on main as it is.
    pub fn new(limits: TrainLimits) -> Train {
        Train {
            limits,
            epoch: 0,
            landed: Vec::new(),
            batches: Vec::new(),
            next_id: 0,
            runs: 0,
        }
    }

    /// The limits it was made with.
    pub fn limits(&self) -> TrainLimits {
        self.limits
    }

    /// Moves of main the train did not make, so far: the epoch of every tree it builds now.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The cars landed since main last moved from outside, in order: the base of every tree.
    pub fn landed(&self) -> &[Car] {
        &self.landed
    }

    /// CI runs asked for so far.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// The cars in the train, in order, each with its batch's verdict.
    pub fn cars(&self) -> impl Iterator<Item = (Car, Verdict)> + '_ {
        self.batches
            .iter()
            .flat_map(|b| b.cars.iter().map(move |c| (*c, b.verdict)))
    }

    /// How many cars the train holds.
    pub fn len(&self) -> usize {
        self.batches.iter().map(|b| b.cars.len()).sum()
    }

    /// Whether the train holds no car.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Where `car` is (0: the head), if it is in the train.
    pub fn position(&self, car: Car) -> Option<usize> {
        self.cars().position(|(c, _)| c == car)
    }

    /// The tree of batch `index`: main plus every car up to the batch's last.
    fn tree_of(&self, index: usize) -> Tree {
        let mut cars = self.landed.clone();
        for b in &self.batches[..=index] {
            cars.extend_from_slice(&b.cars);
        }
        Tree {
            epoch: self.epoch,
            cars,
        }
    }

    /// The tree `car` is tested in (main, the cars ahead of it and its batch's), if it is in
    /// the train.
    pub fn tree_for(&self, car: Car) -> Option<Tree> {
        let index = self.batches.iter().position(|b| b.cars.contains(&car))?;
        Some(self.tree_of(index))
    }

    /// `car`'s PR is ready: it joins at the end (the last batch, while that was never tested
    /// and is not full). Its position; the same again for a car already in the train.
    pub fn join(&mut self, car: Car) -> Result<usize, JoinRefused> {
        if let Some(at) = self.position(car) {
            return Ok(at);
        }
        if self.len() >= self.limits.max_length.max(1) as usize {
            return Err(JoinRefused::Full);
        }
        let batch_len = self.limits.batch_len();
        match self.batches.last_mut() {
            Some(last) if last.fresh && last.cars.len() < batch_len => last.cars.push(car),
            _ => self.batches.push(Batch {
                cars: vec![car],
                verdict: Verdict::Untested,
                fresh: true,
            }),
        }
        Ok(self.len() - 1)
    }

    /// The next CI run to start, if one may start now: the first untested batch among the
    /// first `max_parallel`. Call again until `None`.
    pub fn next_test(&mut self) -> Option<Test> {
        let window = self.limits.parallel().min(self.batches.len());
        let index = self.batches[..window]
            .iter()
            .position(|b| b.verdict == Verdict::Untested)?;
        let id = self.next_id;
        self.next_id += 1;
        self.runs += 1;
        self.batches[index].verdict = Verdict::Testing(id);
        self.batches[index].fresh = false;
        Some(Test {
            id,
            tree: self.tree_of(index),
            batch: self.batches[index].cars.clone(),
        })
    }

    /// Run `id` ended, CI `passed` or not. A run whose batch was rebuilt since (or that this
    /// train never started) changes nothing. What it settled, in order.
    pub fn verdict(&mut self, id: u64, passed: bool) -> Vec<Settled> {
        let Some(batch) = self
            .batches
            .iter_mut()
            .find(|b| b.verdict == Verdict::Testing(id))
        else {
            return Vec::new();
        };
        batch.verdict = if passed {
            Verdict::Passed(id)
        } else {
            Verdict::Failed(id)
        };
        self.settle()
    }

    /// The head decides: passed, it lands; failed, alone, it is returned; failed, a batch,
    /// it is split in two.
    fn settle(&mut self) -> Vec<Settled> {
        let mut settled = Vec::new();
        while let Some(head) = self.batches.first() {
            match head.verdict {
                Verdict::Passed(_) => {
                    let tree = self.tree_of(0);
                    let head = self.batches.remove(0);
                    self.landed.extend_from_slice(&head.cars);
                    settled.push(Settled::Land {
                        cars: head.cars,
                        tree,
                    });
                }
                Verdict::Failed(id) if head.cars.len() > 1 => {
                    let half = head.cars.len().div_ceil(2);
                    let second = self.batches[0].cars.split_off(half);
                    self.batches[0].verdict = Verdict::Untested;
                    self.batches.insert(
                        1,
                        Batch {
                            cars: second,
                            verdict: Verdict::Failed(id),
                            fresh: false,
                        },
                    );
                    break;
                }
                Verdict::Failed(_) => {
                    let failed = self.tree_of(0);
                    let car = head.cars[0];
                    self.remove_head_car();
                    settled.push(Settled::Return {
                        car,
                        failed,
                        passed: Tree {
                            epoch: self.epoch,
                            cars: self.landed.clone(),
                        },
                    });
                }
                Verdict::Untested | Verdict::Testing(_) => break,
            }
        }
        settled
    }

    fn remove_head_car(&mut self) {
        self.batches.remove(0);
        self.rebuild_from(0);
    }

    /// Every batch from `index` on is tested again: its tree changed.
    fn rebuild_from(&mut self, index: usize) {
        for b in &mut self.batches[index..] {
            b.verdict = Verdict::Untested;
        }
    }

    /// `car` leaves the train without a verdict (its issue withdrawn, its worker stopped):
    /// the trees behind it are rebuilt. Whether it was in the train.
    pub fn leave(&mut self, car: Car) -> bool {
        let Some(index) = self.batches.iter().position(|b| b.cars.contains(&car)) else {
            return false;
        };
        self.batches[index].cars.retain(|c| *c != car);
        if self.batches[index].cars.is_empty() {
            self.batches.remove(index);
        }
        self.rebuild_from(index.min(self.batches.len()));
        true
    }

    /// Main moved without the train (a person's push, another runner's merge): every tree
    /// is built again on the new main.
    pub fn main_moved(&mut self) {
        self.epoch += 1;
        self.landed.clear();
        self.rebuild_from(0);
    }

    /// Run `id` ended without a verdict (the tree could not be built or tested for a reason
    /// of the environment's, not the cars'): its batch is tested again. Whether it was
    /// under way.
    pub fn abandon(&mut self, id: u64) -> bool {
        match self
            .batches
            .iter_mut()
            .find(|b| b.verdict == Verdict::Testing(id))
        {
            Some(b) => {
                b.verdict = Verdict::Untested;
                true
            }
            None => false,
        }
    }

    /// The runner restarted: runs under way were lost and are asked for again; verdicts
    /// already given stand.
    pub fn restart(&mut self) {
        for b in &mut self.batches {
            if matches!(b.verdict, Verdict::Testing(_)) {
                b.verdict = Verdict::Untested;
            }
        }
    }
}
