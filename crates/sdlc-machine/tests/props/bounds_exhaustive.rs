//! Exhaustive check of `machine::bounds`: for small limits, a memoized search over EVERY
//! sequence of outcomes the real machine can be fed finds the true worst case, which must
//! equal the computed bound exactly (no path exceeds it, and some path reaches it).
//!
//! Mutations this kills: any change to when attempts, bounces, escalations, phase streaks or
//! wait streaks are counted or compared (the figure moves), and any slack added to or removed
//! from the formula in `bounds.rs`.

use crate::exhaustive;

use exhaustive::{check_small_limits, in_parallel, worst_of, worst_with, Goal};
use sdlc_machine::machine::{bounds, Limits};
use sdlc_machine::step::Step;

#[test]
fn computed_bounds_equal_the_exhaustive_worst_case() {
    // The searches are independent: two threads, the budget's two cores
    // (`benches/bounds_search.rs` holds its time and memory).
    let failures = check_small_limits(2).mismatches;
    assert!(
        failures.is_empty(),
        "bound mismatches:\n{}",
        failures.join("\n")
    );
}

/// Agent invocations alone: the search counts an attempt only when its step is not builtin
/// or it is a repair, and finds at most the computed figure for every builtin set, exactly it
/// where no phase limit binds.
#[test]
fn computed_agent_invocations_bound_the_exhaustive_worst_case() {
    let five = five_model_free();
    let mut merge_only = [false; Step::COUNT];
    merge_only[Step::Merge.index()] = true;
    let sets = [
        ("none", [false; Step::COUNT]),
        ("five model-free", five),
        ("merge", merge_only),
        ("all", [true; Step::COUNT]),
    ];
    let mut phase = [0u32; Step::COUNT];
    phase[Step::Merge.index()] = 3;
    let configs = [
        (
            "R=3 B=1 E=2 W=1 M=1",
            Limits {
                max_retries_per_step: 3,
                max_bounce_retries: 1,
                max_consecutive_escalations: 2,
                max_consecutive_same_failure: 0,
                max_consecutive_failures: [0; Step::COUNT],
                max_rate_limit_waits: 1,
                max_repair_iterations: 1,
                max_network_waits: 0,
                ci_timeout_secs: 10,
                ..Limits::default()
            },
            true,
        ),
        (
            "R=2 B=2 E=1 W=0 M=2 S=2 no simplify",
            Limits {
                max_retries_per_step: 2,
                max_bounce_retries: 2,
                max_consecutive_escalations: 1,
                max_consecutive_same_failure: 2,
                max_consecutive_failures: [0; Step::COUNT],
                max_rate_limit_waits: 0,
                max_repair_iterations: 2,
                simplify_enabled: false,
                max_network_waits: 1,
                ci_timeout_secs: 10,
                ..Limits::default()
            },
            true,
        ),
        (
            "R=3 B=1 E=2 W=0 M=2 F(merge)=3",
            Limits {
                max_retries_per_step: 3,
                max_bounce_retries: 1,
                max_consecutive_escalations: 2,
                max_consecutive_same_failure: 0,
                max_consecutive_failures: phase,
                max_rate_limit_waits: 0,
                max_repair_iterations: 2,
                max_network_waits: 0,
                ci_timeout_secs: 10,
                ..Limits::default()
            },
            false, // a phase limit binds: sound, not exact
        ),
    ];
    // Twenty-four independent searches: on two threads, the budget's two cores.
    let jobs: Vec<_> = configs
        .iter()
        .flat_map(|config| sets.iter().map(move |set| (config, set)))
        .flat_map(|job| [(job, Goal::NextMerge), (job, Goal::HaltWithoutSuccess)])
        .collect();
    let found = in_parallel(&jobs, 2, |&(((_, limits, _), (_, builtin)), goal)| {
        worst_of(limits, goal, Some(*builtin))
    });
    let mut failures = Vec::new();
    for (pair, answers) in jobs.chunks(2).zip(found.chunks(2)) {
        let (((name, limits, exact), (set, builtin)), _) = pair[0];
        let (merge, halt) = (answers[0], answers[1]);
        let computed = bounds::agent_invocations(limits, builtin);
        let ok = if *exact {
            computed.between_merges == merge && computed.nothing_succeeds == halt
        } else {
            computed.between_merges >= merge && computed.nothing_succeeds >= halt
        };
        if !ok {
            failures.push(format!(
                "{name}, builtin {set}: computed {}/{} exhaustive {merge}/{halt}",
                computed.between_merges, computed.nothing_succeeds
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "agent bound mismatches:\n{}",
        failures.join("\n")
    );
}

/// Merging among other mergers: the merge turn may be busy (a pause, then a halt past its
/// limit) and every merge run may lose a push race. The step-attempt figures stand (a race
/// merged again is no attempt), and the agent invocations with the re-runs are exactly
/// `bounds::merges`' figure.
#[test]
fn lost_races_spend_no_attempt_and_their_agent_runs_are_counted_exactly() {
    let five = five_model_free();
    let sets = [("none", [false; Step::COUNT]), ("five model-free", five)];
    let configs = [
        (
            "R=2 B=0 E=2 W=1 turn",
            Limits {
                max_retries_per_step: 2,
                max_bounce_retries: 0,
                max_consecutive_escalations: 2,
                max_consecutive_same_failure: 0,
                max_consecutive_failures: [0; Step::COUNT],
                max_rate_limit_waits: 1,
                max_repair_iterations: 1,
                max_network_waits: 0,
                ci_timeout_secs: 0,
                merge_turn_wait_ms: Some(300),
                ..Limits::default()
            },
        ),
        (
            "R=3 B=1 E=1 W=0 S=2 alone",
            Limits {
                max_retries_per_step: 3,
                max_bounce_retries: 1,
                max_consecutive_escalations: 1,
                max_consecutive_same_failure: 2,
                max_consecutive_failures: [0; Step::COUNT],
                max_rate_limit_waits: 0,
                max_repair_iterations: 2,
                max_network_waits: 1,
                ci_timeout_secs: 0,
                merge_turn_wait_ms: None,
                ..Limits::default()
            },
        ),
    ];
    let mut failures = Vec::new();
    for (name, limits) in &configs {
        let attempts = bounds::compute(limits);
        let merge = worst_with(limits, Goal::NextMerge, None, true);
        let halt = worst_with(limits, Goal::HaltWithoutSuccess, None, true);
        if (attempts.between_merges, attempts.nothing_succeeds) != (merge, halt) {
            failures.push(format!(
                "{name}, step attempts: computed {}/{} exhaustive {merge}/{halt}",
                attempts.between_merges, attempts.nothing_succeeds
            ));
        }
        for (set, builtin) in &sets {
            let computed = bounds::merges(limits, builtin).agent_invocations;
            let merge = worst_with(limits, Goal::NextMerge, Some(*builtin), true);
            let halt = worst_with(limits, Goal::HaltWithoutSuccess, Some(*builtin), true);
            if (computed.between_merges, computed.nothing_succeeds) != (merge, halt) {
                failures.push(format!(
                    "{name}, builtin {set}: computed {}/{} exhaustive {merge}/{halt}",
                    computed.between_merges, computed.nothing_succeeds
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "bound mismatches with lost races:\n{}",
        failures.join("\n")
    );
}

/// With a review gate: rounds, and a failed round retried as the same round (an attempt of
/// monitorCI's). The computed figures bound what the search finds, step attempts (exactly,
/// in these configurations) and agent invocations alike, for every builtin set.
#[test]
fn review_rounds_and_their_retries_stay_within_the_computed_bounds() {
    use sdlc_machine::machine::ReviewGate;
    let five = five_model_free();
    let sets = [
        ("none", [false; Step::COUNT]),
        ("five model-free", five),
        ("all", [true; Step::COUNT]),
    ];
    let mut failures = Vec::new();
    // The last: monitorCI's failure streak limited, which each CI pass after a round ends.
    let mut ci_streak = [0u32; Step::COUNT];
    ci_streak[Step::MonitorCi.index()] = 2;
    for (r, b, e, w, m, rounds, phase) in [
        (2, 0, 1, 0, 1, 1, [0; Step::COUNT]),
        (3, 1, 1, 1, 1, 2, [0; Step::COUNT]),
        (3, 0, 1, 0, 2, 2, [0; Step::COUNT]),
        (2, 1, 2, 0, 2, 1, [0; Step::COUNT]),
        (3, 0, 1, 0, 1, 2, ci_streak),
    ] {
        let limits = Limits {
            max_retries_per_step: r,
            max_bounce_retries: b,
            max_consecutive_escalations: e,
            max_consecutive_same_failure: 0,
            max_consecutive_failures: phase,
            max_rate_limit_waits: w,
            max_repair_iterations: m,
            max_network_waits: 0,
            ci_timeout_secs: 0,
            review: Some(ReviewGate {
                max_rounds: rounds,
                ..ReviewGate::new(true, 0)
            }),
            ..Limits::default()
        };
        let name = format!("R={r} B={b} E={e} W={w} M={m} rounds={rounds} F={phase:?}");
        let attempts = bounds::compute(&limits);
        let merge = worst_of(&limits, Goal::NextMerge, None);
        let halt = worst_of(&limits, Goal::HaltWithoutSuccess, None);
        if (attempts.between_merges, attempts.nothing_succeeds) != (merge, halt) {
            failures.push(format!(
                "{name}, step attempts: computed {}/{} exhaustive {merge}/{halt}",
                attempts.between_merges, attempts.nothing_succeeds
            ));
        }
        for (set, builtin) in &sets {
            let computed = bounds::agent_invocations(&limits, builtin);
            let merge = worst_of(&limits, Goal::NextMerge, Some(*builtin));
            let halt = worst_of(&limits, Goal::HaltWithoutSuccess, Some(*builtin));
            if computed.between_merges < merge || computed.nothing_succeeds < halt {
                failures.push(format!(
                    "{name}, builtin {set}: computed {}/{} exhaustive {merge}/{halt}",
                    computed.between_merges, computed.nothing_succeeds
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "review bound mismatches:\n{}",
        failures.join("\n")
    );
}

/// The builtin set of the five steps that need no model (the runner can do each itself).
fn five_model_free() -> [bool; Step::COUNT] {
    let mut five = [false; Step::COUNT];
    for s in [
        Step::StartCycle,
        Step::CommitPush,
        Step::CreatePr,
        Step::MonitorCi,
        Step::Merge,
    ] {
        five[s.index()] = true;
    }
    five
}

/// Both kinds of wait before an attempt: rate-limit waits (`W`) and network waits of steps
/// (`N`), two streaks neither of which ends the other, so each attempt may follow `W + N`
/// waits; the step attempts, the agent invocations and the merge runs after lost races are
/// exactly the computed figures.
#[test]
fn rate_limit_and_network_waits_of_steps_add_up_before_each_attempt() {
    let mut failures = Vec::new();
    for (w, n, b) in [(1, 1, 1), (1, 2, 0), (2, 1, 1)] {
        let limits = Limits {
            max_retries_per_step: 2,
            max_bounce_retries: b,
            max_consecutive_escalations: 1,
            max_consecutive_same_failure: 0,
            max_consecutive_failures: [0; Step::COUNT],
            max_rate_limit_waits: w,
            max_network_waits: n,
            max_repair_iterations: 1,
            ci_timeout_secs: 0,
            merge_turn_wait_ms: None,
            ..Limits::default()
        };
        let none = [false; Step::COUNT];
        let attempts = bounds::compute(&limits);
        let agents = bounds::merges(&limits, &none).agent_invocations;
        let found = (
            worst_with(&limits, Goal::NextMerge, None, true),
            worst_with(&limits, Goal::HaltWithoutSuccess, None, true),
            worst_with(&limits, Goal::NextMerge, Some(none), true),
        );
        let computed = (
            attempts.between_merges,
            attempts.nothing_succeeds,
            agents.between_merges,
        );
        if computed != found {
            failures.push(format!(
                "W={w} N={n} B={b}: computed {computed:?} exhaustive {found:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
