//! Properties of the merge train (`sdlc_machine::fleet::Train`), over arbitrary schedules (PRs
//! joining, runs starting, CI answering in any order, kills, PRs leaving and main moved from
//! outside): every tree main moves to is one
//! CI passed, each built on the last (main's first parent); a PR is returned only for a tree
//! that fails while the same tree without it passed; with CI that fails exactly the trees
//! holding a bad PR, exactly the bad PRs are returned and every other lands; and the train
//! settles every PR within `TrainLimits::max_ci_runs`, which an exhaustive search of every
//! schedule and every verdict reaches exactly for batches of one.

use proptest::prelude::*;
use sdlc_machine::fleet::{Car, Settled, Train, TrainLimits, Tree, Verdict};
use std::collections::{BTreeSet, HashMap};

/// CI as a function of the tree: it fails a tree holding a bad car, or both cars of a pair
/// that break each other.
#[derive(Debug, Clone)]
struct Ci {
    bad: BTreeSet<Car>,
    pairs: Vec<(Car, Car)>,
}

impl Ci {
    fn passes(&self, tree: &Tree) -> bool {
        let has = |c: &Car| tree.cars.contains(c);
        !tree.cars.iter().any(|c| self.bad.contains(c))
            && !self.pairs.iter().any(|(a, b)| has(a) && has(b))
    }
}

#[derive(Debug, Clone, Copy)]
enum Action {
    Join,
    Start,
    Kill,
    End(usize),
    /// The `n`-th car leaves without a verdict (its issue withdrawn, its worker stopped).
    Leave(usize),
    /// Main moves without the train (a person's push).
    MainMoved,
}

/// What a schedule did, checked as it went.
#[derive(Debug, Default)]
struct Outcome {
    landed: Vec<Car>,
    returned: Vec<Car>,
    left: Vec<Car>,
    kills: u64,
    /// Leaves and moves of main from outside the train.
    disturbances: u64,
}

/// Main as the settled orders moved it, and the trees CI passed: each order is checked
/// against them.
struct Witness<'a> {
    ci: &'a Ci,
    /// Main's tree: each one CI passed, each built on the one before.
    main: Tree,
    passed_trees: BTreeSet<Tree>,
}

impl Witness<'_> {
    fn check(&mut self, settled: Vec<Settled>, out: &mut Outcome) {
        for s in settled {
            match s {
                Settled::Land { cars, tree } => {
                    assert!(
                        self.passed_trees.contains(&tree),
                        "landed a tree CI never passed: {tree:?}"
                    );
                    assert!(
                        tree.cars.starts_with(&self.main.cars) && tree.cars.ends_with(&cars),
                        "main's new tree {tree:?} is not main {:?} plus {cars:?}",
                        self.main
                    );
                    self.main = tree;
                    out.landed.extend(cars);
                }
                Settled::Return {
                    car,
                    failed,
                    passed,
                } => {
                    assert!(
                        !self.ci.passes(&failed),
                        "{car} returned for a tree that passes"
                    );
                    assert!(
                        self.ci.passes(&passed),
                        "{car} returned while {passed:?} fails"
                    );
                    assert_eq!(passed, self.main, "the tree without {car} is main");
                    let mut with = passed.cars.clone();
                    with.push(car);
                    assert_eq!(failed.cars, with, "{car} failed in main plus itself");
                    out.returned.push(car);
                }
            }
        }
    }
}

/// What may happen now: a car joins, a run starts, a kill, a run under way ends, and while
/// `disturb`, a car leaves or main moves from outside.
fn options(
    train: &Train,
    (left, kill, disturb): (bool, bool, bool),
    under_way: usize,
) -> Vec<Action> {
    let mut options = Vec::new();
    if disturb {
        options.push(Action::MainMoved);
        options.extend((0..train.len()).map(Action::Leave));
    }
    if left && train.len() < train.limits().max_length as usize {
        options.push(Action::Join);
    }
    if train.clone().next_test().is_some() {
        options.push(Action::Start);
    }
    if kill && under_way > 0 {
        options.push(Action::Kill);
    }
    options.extend((0..under_way).map(Action::End));
    assert!(!options.is_empty(), "nothing may happen: {train:?}");
    options
}

/// Runs whose verdict still counts are no more than the window and the split halves pushed
/// out of it (the harness's list also holds runs a return made stale).
fn check_runs_at_once(train: &Train, cars: u32) {
    let limits = train.limits();
    let testing: BTreeSet<u64> = train
        .cars()
        .filter_map(|(_, v)| match v {
            Verdict::Testing(id) => Some(id),
            _ => None,
        })
        .collect();
    assert!(
        testing.len() as u64 <= u64::from(limits.max_parallel) + limits.max_splits(u64::from(cars)),
        "{testing:?} at once: {train:?}"
    );
    assert!(train.len() <= limits.max_length as usize);
}

/// Runs `cars` through a train, each choice of the schedule picking among what may happen
/// next (a car joins, a run starts, a run under way ends, a kill); CI answers as `ci` does.
fn run(
    limits: TrainLimits,
    cars: u32,
    ci: &Ci,
    choices: &[u8],
    (max_kills, max_disturbances): (u64, u64),
) -> Outcome {
    let mut train = Train::new(limits);
    let mut out = Outcome::default();
    let mut joined = 0u32;
    let mut under_way: Vec<(u64, Tree)> = Vec::new();
    let mut witness = Witness {
        ci,
        main: Tree {
            epoch: 0,
            cars: Vec::new(),
        },
        passed_trees: BTreeSet::new(),
    };
    let mut choice = choices.iter().cycle();
    let mut steps = 0;
    while joined < cars || !train.is_empty() {
        steps += 1;
        assert!(steps < 10_000, "the train does not settle: {train:?}");
        let pick = usize::from(*choice.next().unwrap_or(&0));
        let may = (
            joined < cars,
            out.kills < max_kills,
            out.disturbances < max_disturbances,
        );
        let options = options(&train, may, under_way.len());
        let settled = match options[pick % options.len()] {
            Action::Join => {
                train.join(joined + 1).expect("room in the train");
                joined += 1;
                Vec::new()
            }
            Action::Kill => {
                out.kills += 1;
                under_way.clear();
                train.restart();
                Vec::new()
            }
            Action::End(i) => {
                let (id, tree) = under_way.remove(i);
                let passed = ci.passes(&tree);
                if passed {
                    witness.passed_trees.insert(tree);
                }
                train.verdict(id, passed)
            }
            Action::Leave(n) => {
                out.disturbances += 1;
                let (car, _) = train.cars().nth(n).expect("a car in the train");
                assert!(train.leave(car));
                assert_eq!(train.position(car), None);
                out.left.push(car);
                Vec::new()
            }
            Action::MainMoved => {
                out.disturbances += 1;
                train.main_moved();
                witness.main = Tree {
                    epoch: witness.main.epoch + 1,
                    cars: Vec::new(),
                };
                Vec::new()
            }
            Action::Start => {
                let test = train.next_test().expect("a run may start");
                assert!(test.tree.cars.ends_with(&test.batch));
                under_way.push((test.id, test.tree));
                Vec::new()
            }
        };
        witness.check(settled, &mut out);
        check_runs_at_once(&train, cars);
    }
    // The bound is the train's own: a leave or an outside move rebuilds trees it cannot
    // foresee.
    if out.disturbances == 0 {
        let runs = train.runs();
        let bound = limits.max_ci_runs(u64::from(cars), out.kills);
        assert!(runs <= bound, "{runs} CI runs, bound {bound}: {limits:?}");
    }
    out
}

fn limits() -> impl Strategy<Value = TrainLimits> {
    (1u32..5, 1u32..7, 1u32..5).prop_map(|(max_parallel, max_length, batch)| TrainLimits {
        max_parallel,
        max_length,
        batch,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn main_holds_only_passed_trees_and_only_the_guilty_are_returned(
        limits in limits(),
        cars in 1u32..9,
        bad in proptest::collection::btree_set(1u32..9, 0..4),
        pairs in proptest::collection::vec((1u32..9, 1u32..9), 0..3),
        choices in proptest::collection::vec(any::<u8>(), 1..64),
        kills in 0u64..3,
        disturbances in 0u64..3,
    ) {
        let pairs: Vec<_> = pairs.into_iter().filter(|(a, b)| a != b).collect();
        let ci = Ci { bad, pairs };
        let out = run(limits, cars, &ci, &choices, (kills, disturbances));
        let mut all: Vec<Car> =
            out.landed.iter().chain(&out.returned).chain(&out.left).copied().collect();
        all.sort_unstable();
        prop_assert_eq!(all, (1..=cars).collect::<Vec<_>>(), "each car lands, is returned or leaves, once");
    }

    #[test]
    fn with_ci_failing_bad_prs_exactly_those_are_returned(
        limits in limits(),
        cars in 1u32..9,
        bad in proptest::collection::btree_set(1u32..9, 0..4),
        choices in proptest::collection::vec(any::<u8>(), 1..64),
        kills in 0u64..3,
    ) {
        let ci = Ci { bad: bad.clone(), pairs: Vec::new() };
        let out = run(limits, cars, &ci, &choices, (kills, 0));
        let returned: BTreeSet<Car> = out.returned.iter().copied().collect();
        let expected: BTreeSet<Car> = bad.into_iter().filter(|c| *c <= cars).collect();
        prop_assert_eq!(returned, expected);
    }
}

#[test]
fn with_nothing_failing_each_landed_pr_costs_at_most_one_ci_run() {
    for batch in 1..4 {
        let limits = TrainLimits {
            max_parallel: 3,
            max_length: 6,
            batch,
        };
        let mut train = Train::new(limits);
        for car in 1..=6 {
            train.join(car).unwrap();
        }
        let mut landed = Vec::new();
        while let Some(test) = train.next_test() {
            for s in train.verdict(test.id, true) {
                if let Settled::Land { cars, .. } = s {
                    landed.extend(cars);
                }
            }
        }
        assert_eq!(landed, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(
            train.runs(),
            6u64.div_ceil(u64::from(batch)),
            "batch {batch}"
        );
    }
}

#[test]
fn three_in_a_train_with_the_middle_one_failing_return_it_and_land_the_others() {
    let limits = TrainLimits {
        max_parallel: 3,
        max_length: 6,
        batch: 1,
    };
    let mut train = Train::new(limits);
    for car in 1..=3 {
        train.join(car).unwrap();
    }
    let tests: Vec<_> = std::iter::from_fn(|| train.next_test()).collect();
    let trees: Vec<Vec<Car>> = tests.iter().map(|t| t.tree.cars.clone()).collect();
    assert_eq!(trees, vec![vec![1], vec![1, 2], vec![1, 2, 3]]);
    // The third's verdict comes first: it failed (it holds 2), and waits for those ahead.
    assert_eq!(train.verdict(tests[2].id, false), vec![]);
    assert_eq!(train.verdict(tests[1].id, false), vec![]);
    let settled = train.verdict(tests[0].id, true);
    let tree = |cars: &[Car]| Tree {
        epoch: 0,
        cars: cars.to_vec(),
    };
    assert_eq!(
        settled,
        vec![
            Settled::Land {
                cars: vec![1],
                tree: tree(&[1])
            },
            Settled::Return {
                car: 2,
                failed: tree(&[1, 2]),
                passed: tree(&[1])
            },
        ]
    );
    // 3 is not blamed: it is tested again on main without 2.
    assert_eq!(train.tree_for(3), Some(tree(&[1, 3])));
    let retest = train.next_test().unwrap();
    assert_eq!(retest.tree, tree(&[1, 3]));
    assert_eq!(
        train.verdict(retest.id, true),
        vec![Settled::Land {
            cars: vec![3],
            tree: tree(&[1, 3])
        }]
    );
    assert_eq!(train.runs(), 4);
}

#[test]
fn a_failing_batch_is_bisected_and_only_its_culprit_returned() {
    let limits = TrainLimits {
        max_parallel: 1,
        max_length: 8,
        batch: 4,
    };
    let mut train = Train::new(limits);
    for car in 1..=4 {
        train.join(car).unwrap();
    }
    let ci = Ci {
        bad: [3].into(),
        pairs: Vec::new(),
    };
    let mut landed = Vec::new();
    let mut returned = Vec::new();
    while let Some(test) = train.next_test() {
        for s in train.verdict(test.id, ci.passes(&test.tree)) {
            match s {
                Settled::Land { cars, .. } => landed.extend(cars),
                Settled::Return { car, .. } => returned.push(car),
            }
        }
    }
    assert_eq!((landed, returned), (vec![1, 2, 4], vec![3]));
    // [1 2 3 4] fails; [1 2] passes and lands; [3 4] fails already: [3] fails, is returned;
    // [4] is tested on main without 3 and lands.
    assert_eq!(train.runs(), 4);
}

#[test]
fn a_kill_during_ci_tests_the_tree_again_and_lands_nothing_untested() {
    let limits = TrainLimits {
        max_parallel: 2,
        max_length: 4,
        batch: 1,
    };
    let mut train = Train::new(limits);
    train.join(1).unwrap();
    train.join(2).unwrap();
    let first = train.next_test().unwrap();
    let second = train.next_test().unwrap();
    train.restart();
    // A verdict of a run from before the kill counts for nothing.
    assert_eq!(train.verdict(first.id, true), vec![]);
    assert_eq!(train.verdict(second.id, true), vec![]);
    assert!(train.cars().all(|(_, v)| v == Verdict::Untested));
    let again = train.next_test().unwrap();
    assert_eq!(again.tree, first.tree);
    assert_eq!(train.verdict(again.id, true).len(), 1);
}

/// A search state with the run ids renumbered in the order they appear and the run count
/// left out: states that differ only there have the same futures.
fn key(train: &Train, joined: u32, under_way: &[u64], kills: u64) -> String {
    let mut value = serde_json::to_value(train).expect("a train serializes");
    let mut ids: Vec<u64> = Vec::new();
    let mut renumber = |id: u64| match ids.iter().position(|i| *i == id) {
        Some(at) => at as u64,
        None => {
            ids.push(id);
            ids.len() as u64 - 1
        }
    };
    value["runs"] = 0.into();
    value["next_id"] = 0.into();
    if let Some(batches) = value["batches"].as_array_mut() {
        for b in batches {
            if let Some(verdict) = b["verdict"].as_object_mut() {
                for id in verdict.values_mut() {
                    *id = renumber(id.as_u64().expect("a run id")).into();
                }
            }
        }
    }
    let under_way: Vec<u64> = under_way.iter().map(|id| renumber(*id)).collect();
    format!("{value} {joined} {under_way:?} {kills}")
}

/// Every schedule and every verdict of a train of `cars` cars, `kills` kills at most: the
/// most CI runs any of them makes from here on.
fn worst_runs(
    memo: &mut HashMap<String, u64>,
    train: &Train,
    (joined, cars): (u32, u32),
    under_way: &[u64],
    kills: u64,
) -> u64 {
    if joined == cars && train.is_empty() {
        return 0;
    }
    let k = key(train, joined, under_way, kills);
    if let Some(known) = memo.get(&k) {
        return *known;
    }
    let mut worst = 0;
    if joined < cars {
        let mut t = train.clone();
        if t.join(joined + 1).is_ok() {
            worst = worst.max(worst_runs(memo, &t, (joined + 1, cars), under_way, kills));
        }
    }
    let mut t = train.clone();
    if let Some(test) = t.next_test() {
        let mut w = under_way.to_vec();
        w.push(test.id);
        worst = worst.max(1 + worst_runs(memo, &t, (joined, cars), &w, kills));
    }
    for (i, id) in under_way.iter().enumerate() {
        let mut rest = under_way.to_vec();
        rest.remove(i);
        for passed in [true, false] {
            let mut t = train.clone();
            t.verdict(*id, passed);
            worst = worst.max(worst_runs(memo, &t, (joined, cars), &rest, kills));
        }
    }
    if kills > 0 && !under_way.is_empty() {
        let mut t = train.clone();
        t.restart();
        worst = worst.max(worst_runs(memo, &t, (joined, cars), &[], kills - 1));
    }
    memo.insert(k, worst);
    worst
}

#[test]
fn the_printed_bound_is_the_exhaustive_worst_case() {
    for cars in 1..=5u32 {
        for max_parallel in 1..=3 {
            for batch in 1..=3 {
                for kills in 0..=2 {
                    let limits = TrainLimits {
                        max_parallel,
                        max_length: cars,
                        batch,
                    };
                    let mut memo = HashMap::new();
                    let worst = worst_runs(&mut memo, &Train::new(limits), (0, cars), &[], kills);
                    let bound = limits.max_ci_runs(u64::from(cars), kills);
                    assert!(
                        worst <= bound,
                        "{limits:?} {cars} cars, {kills} kills: {worst} > {bound}"
                    );
                    if batch == 1 {
                        assert_eq!(worst, bound, "{limits:?} {cars} cars, {kills} kills: exact");
                    }
                }
            }
        }
    }
}
