//! The exact worst case (docs/counters-and-bounds.md "Bound"): the largest number of step attempts (agent invocations and builtin actions together) the
//! machine can spend for a given config, over every possible sequence of outcomes.
//!
//! Derivation (each claim is checked against an exhaustive search of the real machine in
//! `tests/bounds_exhaustive.rs`):
//! - A rate-limit/overload/quota wait consumes no attempt and changes no other counter, and
//!   more than `W` in a row halt; so does a wait after a step's `NETWORK` failure, counted
//!   apart, more than `N` (`max_network_waits`) in a row halting. Neither streak ends the
//!   other, so every other invocation can be preceded by at most `W + N` waits, and the
//!   totals below are `(W + N + 1) ×` the number of non-wait invocations.
//! - In one cycle with `n` enabled steps, every step can fail `R − 1` times without
//!   escalating, every bounce re-runs exactly one earlier step, and the cycle ends either in a
//!   merge or in an escalation at the last step (ending earlier forfeits at least one success).
//! - A per-step consecutive-failure limit `F` caps a run of failures between two successes of
//!   that step at `F − 1`. A step that a bounce can land on (the step before one with a
//!   precondition) gets a new run with every bounce that lands on it, so bounces are given to
//!   the steps with the largest gain. The merge step's run can carry into the next cycle when
//!   a cycle escalates there, which a small dynamic program over the carried streak settles.
//! - Between two merges there are at most `E − 1` escalated cycles and one merged cycle.

use super::types::Limits;
use crate::step::Step;

/// The invocations one non-wait invocation may come with: itself and the waits that may
/// precede it, `W` rate-limit, overload or quota waits and `N` network waits of steps in a
/// row (`W + N + 1`).
pub fn waits_per_invocation(limits: &Limits) -> u64 {
    u64::from(limits.max_rate_limit_waits) + u64::from(limits.max_network_waits) + 1
}

/// The figures `sdlc-runner bounds` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Worst-case agent invocations after one successful merge up to and including the next.
    pub between_merges: u64,
    /// Worst-case agent invocations before the halt when no attempt ever succeeds.
    pub nothing_succeeds: u64,
    /// Worst-case non-wait agent invocations of one issue cycle.
    pub per_cycle: u64,
}

/// Constant time and memory whatever the limits: every figure is a closed form over at most
/// ten steps, in `u128` so that no limit a `u32` can hold overflows it.
pub fn compute(limits: &Limits) -> Bounds {
    let r = u128::from(limits.max_retries_per_step.max(1));
    let e = u128::from(limits.max_consecutive_escalations.max(1));
    let waits = u128::from(waits_per_invocation(limits));
    let steps: Vec<Step> = limits.enabled_steps().collect();
    let last = *steps.last().unwrap_or(&Step::Merge);
    let n = steps.len() as u128;
    let phase_limit = |s: Step| u128::from(limits.max_consecutive_failures[s.index()]);
    let fails = r - 1; // failures a step absorbs in one cycle without escalating
    let rounds = review_rounds(limits);
    let base = absorbed(limits, &steps, last, fails);

    // The last step (merge) may carry a failure streak `k` across escalated cycles, and
    // its phase limit `F` caps the streak. An escalated cycle spends `head` plus the streak it
    // adds (0 ..= min(F-1-k, R)); the merged cycle spends `base + n` plus the failures left
    // below the limit. Spending more streak early never costs more than it gains later, so
    // the worst case uses every escalation and the longest streak the limit allows.
    let head = base + n.saturating_sub(1);
    let f_last = phase_limit(last);
    let cap_last = |k: u128| {
        if f_last == 0 {
            fails
        } else {
            (f_last - 1).saturating_sub(k).min(fails)
        }
    };
    let escalations = e - 1;
    let streak = if f_last == 0 {
        escalations * r
    } else {
        (f_last - 1).min(escalations * r)
    };
    // Review rounds (`review.maxReviewRounds`): each is one agent invocation of its own,
    // after monitorCI's success. Its failure is a failed attempt of monitorCI's and its retry
    // (the round again, not a new round) the attempt that failure pays for, both counted
    // above as monitorCI's. A cycle escalated by new feedback past its rounds spent no more
    // than one merged.
    let between = escalations * head + streak + base + n + cap_last(streak) + e * rounds;
    // One cycle at most: an escalated cycle never spends more than a merged one, because its
    // escalating failure takes the place of the last step's success.
    let per_cycle = base + n + cap_last(0) + rounds;

    let first_step = steps.first().copied().unwrap_or(Step::StartCycle);
    let f_first = phase_limit(first_step);
    let failures_only = if f_first == 0 {
        e * r
    } else {
        (e * r).min(f_first)
    };

    Bounds {
        between_merges: saturate(between * waits),
        nothing_succeeds: saturate(failures_only * waits),
        per_cycle: saturate(per_cycle),
    }
}

/// The review rounds a cycle may hold (`review.maxReviewRounds`; none without reviews).
fn review_rounds(limits: &Limits) -> u128 {
    limits
        .review
        .as_ref()
        .map_or(0, |g| u128::from(g.max_rounds))
}

/// The successful runs and absorbed failures of every step but `last` in one cycle, each
/// step absorbing up to `fails` failures.
fn absorbed(limits: &Limits, steps: &[Step], last: Step, fails: u128) -> u128 {
    let b = u128::from(limits.max_bounce_retries);
    let rounds = review_rounds(limits);
    let phase_limit = |s: Step| u128::from(limits.max_consecutive_failures[s.index()]);
    // Failures each step can absorb in one run, and the extra runs bounces can buy: a
    // landable step cut short by its phase limit gains a new run of up to `run` failures per
    // bounce that lands on it, until its retries are spent. Bounces are handed out step by
    // step, at most `b` in all.
    let mut base = b; // every bounce re-runs one step successfully
    let mut bounces_given = 0u128;
    for &s in steps.iter().filter(|s| **s != last) {
        // CI's pass after each review round ends monitorCI's failure streak: with rounds,
        // its retries alone bound its failures.
        let f = if s == Step::MonitorCi && rounds > 0 {
            0
        } else {
            phase_limit(s)
        };
        let run = if f == 0 { fails } else { (f - 1).min(fails) };
        base += run;
        let landable = limits
            .next_step(s)
            .is_some_and(|next| next.has_precondition());
        // (With `run == fails` nothing is left to buy: `left` is 0.)
        if f != 0 && landable && run > 0 {
            let left = fails - run;
            let full_runs = (left / run).min(b - bounces_given);
            bounces_given += full_runs;
            base += full_runs * run;
            let rest = left % run;
            if rest > 0 && full_runs == left / run && bounces_given < b {
                bounces_given += 1;
                base += rest;
            }
        }
    }
    base
}

/// Whether a step runs the agent only in its repair attempts when it is builtin: the steps
/// whose dispatch can be a repair (`dispatch` in `sm/step_outcome.rs`). A builtin step's
/// other attempts are the runner's own git and forge actions.
const fn repairs_by_agent(step: Step) -> bool {
    step.repairs()
}

/// The worst case of agent invocations alone, for a config whose builtin steps are
/// `builtin[step.index()]`: attempts of agent steps, plus the repair attempts of builtin steps
/// that hand the failure to the agent before acting again. Sound, and exact when no phase
/// limit binds (checked against the exhaustive search in `tests/bounds_exhaustive.rs`):
/// - In one cycle an agent step is attempted at most `R` times without waits (`R − 1`
///   failures, then a success or the escalating failure), plus one success per bounce when a
///   bounce can land on an agent step; every such attempt can follow `W + N` waits.
/// - A builtin step is repaired only right after a code-fixable failure of its own, at most
///   `maxRepairIterations` times per cycle, and a repair that waits is repaired again: at most
///   `min(M, (R − 1)(W + N + 1))` agent invocations per cycle.
/// - With review rounds, each round is one agent invocation (after `W + N` waits at most); a
///   failed round is retried as the round, by the agent even when monitorCI is builtin.
/// - At most `E` cycles run between two merges or before the halt. Every figure is also
///   capped by the exact attempt figures of [`compute`], which count every attempt.
pub fn agent_invocations(limits: &Limits, builtin: &[bool; Step::COUNT]) -> Bounds {
    let all = compute(limits);
    let steps: Vec<Step> = limits.enabled_steps().collect();
    if !steps.iter().any(|s| builtin[s.index()]) {
        return all;
    }
    let r = u128::from(limits.max_retries_per_step.max(1));
    let b = u128::from(limits.max_bounce_retries);
    let e = u128::from(limits.max_consecutive_escalations.max(1));
    let waits = u128::from(waits_per_invocation(limits));
    let m = u128::from(limits.max_repair_iterations);
    let agent = |s: &Step| !builtin[s.index()];
    let n_agent = steps.iter().filter(|s| agent(s)).count() as u128;
    let bounce_on_agent = steps.iter().filter(|s| agent(s)).any(|&s| {
        limits
            .next_step(s)
            .is_some_and(|next| next.has_precondition())
    });
    let landed = if bounce_on_agent { b } else { 0 };
    let repairable: Vec<Step> = steps
        .iter()
        .copied()
        .filter(|s| builtin[s.index()] && repairs_by_agent(*s))
        .collect();
    // A review round's agent runs whoever performs monitorCI, and so does the retry of a
    // failed round (the round again). With a builtin monitorCI and rounds, each of its
    // `R − 1` failures may be followed by an agent call (the round's retry or a repair),
    // and a bounce landing on it by a repair (at most `M` in all); each may follow `W + N` waits.
    let rounds = limits
        .review
        .as_ref()
        .map_or(0, |g| u128::from(g.max_rounds));
    let ci_rounds =
        rounds > 0 && builtin[Step::MonitorCi.index()] && steps.contains(&Step::MonitorCi);
    let repairs_of = |per_failure: u128| -> u128 {
        repairable
            .iter()
            .map(|&s| {
                if s == Step::MonitorCi && ci_rounds {
                    (r - 1) * per_failure + m.min(b * per_failure)
                } else {
                    m.min((r - 1) * per_failure)
                }
            })
            .sum()
    };
    let cycle = waits * (n_agent * r + landed + rounds) + repairs_of(waits);
    let per_cycle = n_agent * r + landed + repairs_of(1) + rounds;

    let first = steps.first().copied().unwrap_or(Step::StartCycle);
    let nothing_succeeds = if agent(&first) {
        u128::from(all.nothing_succeeds)
    } else if repairs_by_agent(first) {
        e * m.min((r - 1) * waits)
    } else {
        0
    };

    Bounds {
        between_merges: saturate(e * cycle).min(all.between_merges),
        nothing_succeeds: saturate(nothing_succeeds).min(all.nothing_succeeds),
        per_cycle: saturate(per_cycle).min(all.per_cycle),
    }
}

/// What merging among other mergers adds (docs/scaling.md, "Merges"). A merge that lost a
/// push race is merged again without spending an attempt, so the step-attempt figures of
/// [`compute`] stand; the agent may be called again, which these figures count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeBounds {
    /// Merge runs per merge attempt: its own, and one per lost race merged again
    /// (`fleet::Contention::MAX_LOST_RACES`).
    pub runs_per_attempt: u64,
    /// Agent invocations per merge attempt: every run when the agent merges; with a builtin
    /// merge, only a repair attempt's one (a run again after a race is no repair).
    pub agent_calls_per_attempt: u64,
    /// Pauses in one wait for the merge turn (`fleet::LeaseWait`), and the wait's limit in
    /// milliseconds; `None` for a runner alone (no turn to wait for).
    pub pauses_per_turn_wait: Option<(u64, u64)>,
    /// Agent invocations with every lost race merged again: [`agent_invocations`] plus, for an
    /// agent-run merge, the re-runs of every merge dispatch. Exact where no phase limit binds
    /// and no other step is builtin; sound always.
    pub agent_invocations: Bounds,
}

/// The most times one cycle dispatches merge (each dispatch may lose races of its own):
/// `R (W + N + 1) + B (W + N)`, see [`merges`].
pub fn merge_dispatches_per_cycle(limits: &Limits) -> u64 {
    let r = u128::from(limits.max_retries_per_step.max(1));
    let waits = u128::from(waits_per_invocation(limits));
    let b = if Step::Merge.has_precondition() {
        u128::from(limits.max_bounce_retries)
    } else {
        0
    };
    saturate(r * waits + b * (waits - 1))
}

/// The figures of [`MergeBounds`] for `limits` and the config's builtin steps:
/// - every merge dispatch (an attempt, or a run after a wait) can lose
///   `L = MAX_LOST_RACES` races before its outcome, each one more run;
/// - a cycle dispatches merge at most `R (W + N + 1) + B (W + N)` times: `R` attempts, each
///   after up to `W + N` waits, and, since merge has a precondition, up to `W + N` waited
///   dispatches before each of the `B` bounces from it (the bounce's success ends the wait
///   streaks, so merge waits as much again after it); `E` cycles run between two merges;
///   before a halt when nothing succeeds merge never runs.
pub fn merges(limits: &Limits, builtin: &[bool; Step::COUNT]) -> MergeBounds {
    let races = u128::from(crate::fleet::Contention::MAX_LOST_RACES);
    let agent_merge = !builtin[Step::Merge.index()];
    let base = agent_invocations(limits, builtin);
    let r = u128::from(limits.max_retries_per_step.max(1));
    let e = u128::from(limits.max_consecutive_escalations.max(1));
    let dispatches = u128::from(merge_dispatches_per_cycle(limits));
    let extra = |dispatches: u128| if agent_merge { races * dispatches } else { 0 };
    let add = |figure: u64, more: u128| saturate(u128::from(figure) + more);
    MergeBounds {
        runs_per_attempt: saturate(1 + races),
        agent_calls_per_attempt: if agent_merge { saturate(1 + races) } else { 1 },
        pauses_per_turn_wait: limits
            .merge_turn_wait_ms
            .map(|ms| (crate::fleet::LeaseWait::max_pauses(ms), ms)),
        agent_invocations: Bounds {
            between_merges: add(base.between_merges, extra(e * dispatches)),
            nothing_succeeds: base.nothing_succeeds,
            per_cycle: add(base.per_cycle, extra(r)),
        },
    }
}

/// The most money a run can spend, in micro-dollars (docs/counters-and-bounds.md, "The
/// bound in dollars"), each figure the least of what applies; `None` when no dollar budget
/// bounds it. Every agent call is handed at most the per-call cap and stopped once its running
/// cost reaches what it was handed, so each call may pass it by one stream event's cost (the
/// event that reached it): the figures hold up to that much per call, and to one event over
/// the session budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoneyBounds {
    /// Between two successful merges: the agent invocations (every lost race merged again)
    /// times `budget.perCallUsd`, `E` cycles times `budget.perIssueUsd`, `perSessionUsd`,
    /// `perDayUsd`.
    pub between_merges: Option<u64>,
    /// Before a halt when nothing succeeds, likewise.
    pub nothing_succeeds: Option<u64>,
    /// One issue's cycle: its agent invocations times the per-call cap, or the issue budget.
    pub per_cycle: Option<u64>,
}

/// The figures of [`MoneyBounds`] for `limits` and the config's builtin steps.
pub fn money(limits: &Limits, builtin: &[bool; Step::COUNT]) -> MoneyBounds {
    let calls = merges(limits, builtin).agent_invocations;
    let e = u128::from(limits.max_consecutive_escalations.max(1));
    let call = limits.per_call_budget_micros.map(u128::from);
    let issue = limits.per_issue_budget_micros.map(u128::from);
    let session = limits.per_session_budget_micros.map(u128::from);
    // What the day had left when the session began is the tighter figure; the ceiling
    // itself holds whatever was spent before.
    let day = limits
        .per_day_budget_micros
        .map(|d| u128::from(d.saturating_sub(limits.day_spent_before_micros)));
    let least = |invocations: u64, cycles: u128| {
        [
            call.map(|c| c * u128::from(invocations)),
            issue.map(|i| i * cycles),
            session,
            day,
        ]
        .into_iter()
        .flatten()
        .min()
        .map(saturate)
    };
    MoneyBounds {
        between_merges: least(calls.between_merges, e),
        nothing_succeeds: least(calls.nothing_succeeds, e),
        per_cycle: least(calls.per_cycle, 1),
    }
}

fn saturate(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dynamic program the closed form replaced, kept as its oracle.
    fn reference(limits: &Limits) -> Bounds {
        let r = u64::from(limits.max_retries_per_step.max(1));
        let b = u64::from(limits.max_bounce_retries);
        let e = u64::from(limits.max_consecutive_escalations.max(1));
        let waits = waits_per_invocation(limits);
        let steps: Vec<Step> = limits.enabled_steps().collect();
        let last = *steps.last().unwrap_or(&Step::Merge);
        let n = steps.len() as u64;
        let phase_limit = |s: Step| u64::from(limits.max_consecutive_failures[s.index()]);

        // Failures a step can absorb in one run, and the extra runs bounces can buy.
        let mut base = b; // every bounce re-runs one step successfully
        let mut gains: Vec<u64> = Vec::new();
        for &s in steps.iter().filter(|s| **s != last) {
            let f = phase_limit(s);
            let run = if f == 0 { r - 1 } else { (f - 1).min(r - 1) };
            base = base.saturating_add(run);
            let landable = limits
                .next_step(s)
                .is_some_and(|next| next.has_precondition());
            if f != 0 && landable && run > 0 && run < r - 1 {
                let mut left = (r - 1) - run;
                while left > 0 && (gains.len() as u64) < b {
                    let g = run.min(left);
                    gains.push(g);
                    left -= g;
                }
            }
        }
        gains.sort_unstable_by(|x, y| y.cmp(x));
        base = base.saturating_add(gains.iter().take(b as usize).sum::<u64>());

        // The last step (merge): its run may carry a streak `k` across escalated cycles.
        let f_last = phase_limit(last);
        let cap_last = |k: u64| -> u64 {
            if f_last == 0 {
                r - 1
            } else {
                (f_last - 1).saturating_sub(k).min(r - 1)
            }
        };
        let merged_cycle = |k: u64| base.saturating_add(n).saturating_add(cap_last(k));
        // Escalated cycle options from carry k: (value, carry out).
        let escalated_cycle = |k: u64| -> Vec<(u64, u64)> {
            let mut out = Vec::new();
            let head = base.saturating_add(n - 1);
            for x in 0..=cap_last(k) {
                // x failures, then the (B+1)-th bounce at the last step: no invocation.
                out.push((head + x, k + x));
                // x failures, then one escalating failure (R-th attempt, a non-retryable class
                // or a repeated signature): allowed if it does not reach the phase limit.
                if x < r && (f_last == 0 || k + x + 1 < f_last) {
                    out.push((head + x + 1, k + x + 1));
                }
            }
            out
        };
        let carry_span = if f_last == 0 { 1 } else { f_last };
        let carry_key = |k: u64| {
            if f_last == 0 {
                0
            } else {
                k.min(f_last - 1) as usize
            }
        };
        // best[k] = most invocations from a cycle start with carry k through the next merge,
        // allowing `left` more escalations before it.
        let mut best: Vec<u64> = (0..carry_span).map(merged_cycle).collect();
        for _ in 1..e {
            best = (0..carry_span)
                .map(|k| {
                    escalated_cycle(k)
                        .into_iter()
                        .map(|(v, k2)| v.saturating_add(best[carry_key(k2)]))
                        .chain(std::iter::once(merged_cycle(k)))
                        .max()
                        .unwrap_or(0)
                })
                .collect();
        }
        let between = best.first().copied().unwrap_or(0);

        let first_step = steps.first().copied().unwrap_or(Step::StartCycle);
        let f_first = phase_limit(first_step);
        let failures_only = if f_first == 0 {
            e * r
        } else {
            (e * r).min(f_first)
        };

        Bounds {
            between_merges: between.saturating_mul(waits),
            nothing_succeeds: failures_only.saturating_mul(waits),
            per_cycle: merged_cycle(0)
                .max(escalated_cycle(0).iter().map(|v| v.0).max().unwrap_or(0)),
        }
    }

    #[test]
    fn closed_form_equals_the_dynamic_program() {
        let mut checked = 0;
        for r in 1..=7 {
            for b in 0..=6 {
                for e in 1..=5 {
                    for f_merge in 0..=9 {
                        for f_other in [0, 1, 2, 3, 5] {
                            for simplify in [true, false] {
                                let mut l = Limits {
                                    max_retries_per_step: r,
                                    max_bounce_retries: b,
                                    max_consecutive_escalations: e,
                                    simplify_enabled: simplify,
                                    max_consecutive_failures: [f_other; Step::COUNT],
                                    ..Limits::default()
                                };
                                l.max_consecutive_failures[Step::Merge.index()] = f_merge;
                                l.max_consecutive_failures[Step::Verify.index()] =
                                    (f_other + 1) % 4;
                                l.max_rate_limit_waits = (r + b) % 3;
                                assert_eq!(compute(&l), reference(&l), "{l:?}");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn the_largest_limits_compute_at_once_without_overflow() {
        let mut l = Limits {
            max_retries_per_step: u32::MAX,
            max_bounce_retries: u32::MAX,
            max_consecutive_escalations: u32::MAX,
            max_rate_limit_waits: u32::MAX,
            max_consecutive_failures: [u32::MAX; Step::COUNT],
            ..Limits::default()
        };
        let started = std::time::Instant::now();
        let b = compute(&l);
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert_eq!(b.between_merges, u64::MAX, "saturates instead of wrapping");
        l.max_consecutive_failures = [2; Step::COUNT];
        l.max_consecutive_failures[Step::Merge.index()] = u32::MAX;
        assert!(compute(&l).between_merges > 0);
    }

    #[test]
    fn defaults() {
        let b = compute(&Limits::default());
        // n·R + B = 33 per cycle, two cycles, sixteen invocations per non-wait invocation
        // (five rate-limit waits and ten network waits before it).
        assert_eq!(b.per_cycle, 33);
        assert_eq!(b.between_merges, 2 * 33 * 16);
        assert_eq!(b.nothing_succeeds, 2 * 3 * 16);
    }

    #[test]
    fn monotone_in_retries_bounces_and_escalations() {
        let base = compute(&Limits::default());
        let more = |f: &dyn Fn(&mut Limits)| {
            let mut l = Limits::default();
            f(&mut l);
            compute(&l)
        };
        assert!(more(&|l| l.max_retries_per_step = 4).between_merges > base.between_merges);
        assert!(more(&|l| l.max_bounce_retries = 4).between_merges > base.between_merges);
        assert!(more(&|l| l.max_consecutive_escalations = 1).between_merges < base.between_merges);
        assert!(more(&|l| l.simplify_enabled = false).between_merges < base.between_merges);
    }
}

#[cfg(test)]
mod review_round_bounds {
    use super::*;
    use crate::machine::ReviewGate;

    fn with_rounds(max_rounds: u32) -> Limits {
        Limits {
            review: Some(ReviewGate {
                max_rounds,
                ..ReviewGate::new(false, 60)
            }),
            ..Limits::default()
        }
    }

    #[test]
    fn each_review_round_is_one_more_invocation_per_cycle() {
        let none = compute(&with_rounds(0));
        let two = compute(&with_rounds(2));
        assert_eq!(none, compute(&Limits::default()), "no rounds, no change");
        assert_eq!(two.per_cycle, none.per_cycle + 2);
        let e = u64::from(Limits::default().max_consecutive_escalations);
        let w = waits_per_invocation(&Limits::default());
        assert_eq!(two.between_merges, none.between_merges + e * 2 * w);
        assert_eq!(two.nothing_succeeds, none.nothing_succeeds);
        // The rounds' agent is the round's own whoever runs monitorCI's other attempts.
        let mut builtin = [true; Step::COUNT];
        builtin[Step::MonitorCi.index()] = false;
        let agents = agent_invocations(&with_rounds(2), &builtin);
        let without = agent_invocations(&with_rounds(0), &builtin);
        assert_eq!(agents.per_cycle, without.per_cycle + 2, "{agents:?}");
        // With a builtin monitorCI a failed round's retry is the agent's too: each of
        // monitorCI's `R − 1` failures may be followed by one (the round again) besides its
        // repairs (`M`, also after a bounce).
        let builtin = [true; Step::COUNT];
        let agents = agent_invocations(&with_rounds(2), &builtin);
        let without = agent_invocations(&with_rounds(0), &builtin);
        let l = Limits::default();
        let retries = u64::from(l.max_retries_per_step - 1);
        let repairs = u64::from(l.max_repair_iterations.min(l.max_bounce_retries))
            - u64::from(l.max_repair_iterations.min(l.max_retries_per_step - 1));
        assert_eq!(
            agents.per_cycle,
            without.per_cycle + 2 + retries + repairs,
            "{agents:?}"
        );
    }
}
