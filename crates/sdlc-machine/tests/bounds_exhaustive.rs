//! Exhaustive check of `machine::bounds`: for small limits, a memoized search over EVERY
//! sequence of outcomes the real machine can be fed finds the true worst case, which must
//! equal the computed bound exactly (no path exceeds it, and some path reaches it).
//!
//! Mutations this kills: any change to when attempts, bounces, escalations, phase streaks or
//! wait streaks are counted or compared (the figure moves), and any slack added to or removed
//! from the formula in `bounds.rs`.

mod common;

use common::{first_check, request};
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::fleet::Contention;
use sdlc_machine::machine::{bounds, Core, Effect, Event, Limits, Mode, Runner, State, Usage};
use sdlc_machine::step::Step;
use std::collections::HashMap;

#[derive(Clone, Copy, PartialEq)]
enum Goal {
    /// Most invocations up to and including the next merge, never halting.
    NextMerge,
    /// Most invocations before the halt when no attempt succeeds.
    HaltWithoutSuccess,
}

type Key = (State, Runner, Option<Effect>);

/// The decision-relevant part of the machine: statistics, money and issue identities never
/// change what it does next when the adversary always offers a fresh issue.
/// `repaired`: the steps whose repairs are counted (builtin steps the agent repairs), where
/// the last failure class and the repairs decide whether the next attempt is an agent call.
fn key(core: &Core, pending: Option<Effect>, repaired: [bool; Step::COUNT]) -> Key {
    let mut r = core.runner().clone();
    r.stats = Default::default();
    r.escalated.clear();
    r.issue = r.issue.map(|_| 0);
    r.last_usage = Usage::default();
    r.last_failure = None;
    r.issue_cost_micros = 0;
    r.issue_elapsed_ms = 0;
    r.session_cost_micros = 0;
    r.pending_usage = Usage::default();
    for (i, &counted) in repaired.iter().enumerate() {
        if counted {
            // Only "code-fixable or not" matters.
            r.last_class[i] = r.last_class[i].filter(|c| c.code_fixable());
        } else {
            r.last_class[i] = None;
            r.repairs[i] = 0;
        }
    }
    // Only "same signature as the last one or not" matters, not the value.
    for sig in r.last_signature.iter_mut() {
        *sig = sig.map(|_| Signature(0));
    }
    // Steps further back than the remaining bounces can reach never run again this cycle.
    // A phase streak only matters where a phase limit is configured.
    for (i, f) in r.phase_failures.iter_mut().enumerate() {
        if r.limits.max_consecutive_failures[i] == 0 {
            *f = 0;
        }
    }
    // A network wait is in the step whose request it will issue again.
    let at_step = core
        .state()
        .step()
        .or_else(|| r.outstanding.and_then(|(s, _)| s.step()));
    if at_step.is_none() {
        // Between cycles the cycle counters are dead: the next cycle resets them.
        r.attempts = [0; Step::COUNT];
        r.same_failure = [0; Step::COUNT];
        r.last_signature = [None; Step::COUNT];
        r.bounces = 0;
        r.last_class = [None; Step::COUNT];
        r.repairs = [0; Step::COUNT];
    }
    if let Some(pos) = at_step {
        let reach = r.limits.max_bounce_retries.saturating_sub(r.bounces) as usize;
        for i in 0..pos.index().saturating_sub(reach) {
            r.attempts[i] = 0;
            r.same_failure[i] = 0;
            r.last_signature[i] = None;
        }
    }
    // The merge turn's wait and the lost races only matter at merge.
    if at_step != Some(Step::Merge) {
        r.merge_wait = sdlc_machine::fleet::LeaseWait::new(0);
        r.contention = Contention::default();
    }
    r.merged.clear();
    r.withdrawn.clear();
    // Which failures a quarantine rests on only decides whether the halt of the same failure
    // on two issues lifts the first one's quarantine: no attempt either way.
    r.failures_seen = Default::default();
    r.last_escalation_alone = false;
    r.last_escalation = r.last_escalation.map(|(_, f)| (0, f));
    if let Some(f) = r.last_escalation.as_mut().map(|(_, f)| f) {
        f.signature = Signature(0);
    }
    r.outstanding = r
        .outstanding
        .map(|(s, e)| (s.without_issue(), anonymous(e, repaired)));
    (
        core.state().without_issue(),
        r,
        pending.map(|e| anonymous(e, repaired)),
    )
}

/// The effect with its issue number taken out (every issue is a fresh one), and whether an
/// attempt is a repair where that is counted (`repaired`).
/// The effect without its issue; a repair flag only where it can change the count.
fn anonymous(e: Effect, repaired: [bool; Step::COUNT]) -> Effect {
    match e.without_issue() {
        Effect::RunStep {
            step,
            issue,
            attempt,
            repair,
            commit,
        } => Effect::RunStep {
            step,
            issue,
            attempt,
            repair: repair && repaired[step.index()],
            commit,
        },
        other => other,
    }
}

struct Search {
    goal: Goal,
    /// Count agent invocations alone for these builtin steps: an attempt of a builtin step
    /// costs nothing unless it is a repair (the agent fixes, then the runner acts).
    builtin: Option<[bool; Step::COUNT]>,
    /// Whether a merge run may lose a push race (`MergeRaceLost`) and the merge turn be
    /// busy: a race merged again is no attempt, but an agent-run merge calls the agent again.
    races: bool,
    memo: HashMap<Key, Option<u64>>,
}

impl Search {
    /// Most invocations from here to the goal, `None` if the goal cannot be reached.
    fn best(&mut self, core: &Core, pending: Effect) -> Option<u64> {
        let mut repaired = [false; Step::COUNT];
        if let Some(builtin) = self.builtin {
            for s in Step::ALL {
                repaired[s.index()] = builtin[s.index()]
                    && matches!(
                        s,
                        Step::Verify | Step::CommitPush | Step::MonitorCi | Step::Merge
                    );
            }
        }
        let k = key(core, Some(pending), repaired);
        if let Some(v) = self.memo.get(&k) {
            return *v;
        }
        let v = self.explore(core, pending);
        self.memo.insert(k, v);
        v
    }

    fn explore(&mut self, core: &Core, pending: Effect) -> Option<u64> {
        let (cost, mut events) = match pending {
            Effect::SelectIssue => {
                let fresh = core.escalated().len() as u32 + 1;
                (0, vec![Event::IssueSelected { issue: fresh }])
            }
            Effect::RecordMerged { .. }
            | Effect::MarkEscalated { .. }
            | Effect::Unquarantine { .. } => {
                (0, vec![Event::TrackerUpdated, Event::TrackerWriteFailed])
            }
            Effect::Wait { .. } | Effect::Pause { .. } => (0, vec![Event::WaitOver]),
            Effect::TakeMergeTurn { .. } => (
                0,
                vec![
                    Event::MergeTurnTaken,
                    Event::MergeTurnBusy,
                    Event::TrackerWriteFailed,
                ],
            ),
            Effect::CheckPreconditions { step } => {
                let mut evs = vec![Event::PreconditionsOk { step }];
                if self.goal == Goal::NextMerge {
                    evs.push(Event::AlreadyDone { step });
                }
                if step.has_precondition() {
                    evs.push(Event::PreconditionFailed {
                        step,
                        check: first_check(step),
                    });
                }
                (0, evs)
            }
            Effect::RunStep { .. } | Effect::LookAtCi { .. } => {
                let (step, repair) = match pending {
                    Effect::RunStep { step, repair, .. } => (step, repair),
                    _ => (Step::MonitorCi, false),
                };
                let u = Usage::default();
                let fail = |class, sig| Event::StepFailed {
                    step,
                    class,
                    signature: Signature(sig),
                    usage: u,
                    wait_hint_secs: Some(1),
                };
                let last = core.runner().last_signature[step.index()].map_or(0, |s| s.0);
                let mut evs = vec![
                    fail(FailureClass::TestAssertion, last + 1),
                    fail(FailureClass::ContextWindow, last + 1),
                    fail(FailureClass::RateLimit, last + 1),
                    fail(FailureClass::Auth, last + 1),
                ];
                if last != 0 {
                    evs.push(fail(FailureClass::TestAssertion, last));
                }
                if self.goal == Goal::NextMerge {
                    evs.push(Event::StepSucceeded { step, usage: u });
                }
                if step == Step::MonitorCi {
                    evs.push(Event::CiPending {
                        usage: u,
                        commit: None,
                    });
                }
                if step == Step::Merge && self.races {
                    evs.push(Event::MergeRaceLost {
                        class: FailureClass::Unknown,
                        signature: Signature(last + 1),
                        usage: u,
                    });
                }
                // Another look at CI is the runner's alone: it neither starts an agent nor
                // counts as an attempt.
                let agent_call = match (pending, self.builtin) {
                    (Effect::LookAtCi { .. }, _) => false,
                    (_, Some(builtin)) => !builtin[step.index()] || repair,
                    (_, None) => true,
                };
                (u64::from(agent_call), evs)
            }
            Effect::Exit { .. } | Effect::AskDecision { .. } => return self.terminal(core),
            other => unreachable!("{other:?}"),
        };
        // Every call of the runner's own may fail on the network; the runner answers a
        // `RunStep` so only when no agent ran in it, so that answer costs no invocation.
        if !matches!(pending, Effect::Wait { .. }) {
            events.push(Event::NetworkFailed);
        }
        let mut best: Option<u64> = None;
        // A race merged again is no attempt (only the one past the free re-runs is); it is
        // an agent call where the run was one.
        let gives_up = core.runner().contention.lost() >= Contention::MAX_LOST_RACES;
        for ev in events {
            let cost = match ev {
                Event::NetworkFailed => 0,
                Event::MergeRaceLost { .. } if self.builtin.is_none() && !gives_up => 0,
                _ => cost,
            };
            let mut next = core.clone();
            let effects = next.handle(&ev).to_vec();
            let merged = effects
                .iter()
                .any(|e| matches!(e, Effect::RecordMerged { .. }));
            let value = if merged {
                (self.goal == Goal::NextMerge).then_some(0)
            } else {
                match request(&effects) {
                    Some(req) => self.best(&next, req),
                    None => None,
                }
            };
            if let Some(v) = value {
                best = Some(best.map_or(v + cost, |b: u64| b.max(v + cost)));
            }
        }
        best
    }

    fn terminal(&self, core: &Core) -> Option<u64> {
        match (self.goal, core.state()) {
            (Goal::HaltWithoutSuccess, State::Halted { .. }) => Some(0),
            _ => None,
        }
    }
}

fn worst(limits: &Limits, goal: Goal) -> u64 {
    worst_of(limits, goal, None)
}

fn worst_of(limits: &Limits, goal: Goal, builtin: Option<[bool; Step::COUNT]>) -> u64 {
    worst_with(limits, goal, builtin, false)
}

fn worst_with(
    limits: &Limits,
    goal: Goal,
    builtin: Option<[bool; Step::COUNT]>,
    races: bool,
) -> u64 {
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let req = request(core.handle(&Event::Start)).expect("start requests");
    let mut s = Search {
        goal,
        builtin,
        races,
        memo: HashMap::new(),
    };
    s.best(&core, req).expect("goal reachable")
}

fn small_limits() -> Vec<(String, Limits)> {
    let mut out = Vec::new();
    let phase = |step: Option<Step>, f: u32| {
        let mut a = [0u32; Step::COUNT];
        if let Some(s) = step {
            a[s.index()] = f;
        }
        a
    };
    let phases: &[(Option<Step>, u32)] = &[
        (None, 0),
        (Some(Step::Verify), 2),
        (Some(Step::Verify), 1),
        (Some(Step::WriteSpecs), 2),
        (Some(Step::StartCycle), 2),
        (Some(Step::StartCycle), 4),
        (Some(Step::Merge), 2),
        (Some(Step::Merge), 4),
        (Some(Step::Merge), 5),
    ];
    for r in 1..=3u32 {
        for b in 0..=2u32 {
            for e in 1..=2u32 {
                for (i, &(ps, pf)) in phases.iter().enumerate() {
                    // Keep the grid affordable: every phase limit with the middle values,
                    // every R/B/E with no phase limit.
                    if i > 0 && !(r == 3 && b == 1) {
                        continue;
                    }
                    let l = Limits {
                        max_retries_per_step: r,
                        max_bounce_retries: b,
                        max_consecutive_escalations: e,
                        max_consecutive_same_failure: if (r + b) % 2 == 0 { 2 } else { 0 },
                        max_consecutive_failures: phase(ps, pf),
                        max_rate_limit_waits: if b == 1 { 1 } else { 0 },
                        simplify_enabled: !(r == 2 && b == 2),
                        max_network_waits: (r + e) % 2,
                        // CI pending: no wait, or one wait and a second look.
                        ci_timeout_secs: if b == 1 { 10 } else { 0 },
                        ..Limits::default()
                    };
                    out.push((
                        format!(
                            "R={r} B={b} E={e} F={ps:?}:{pf} W={} S={} simplify={}",
                            l.max_rate_limit_waits,
                            l.max_consecutive_same_failure,
                            l.simplify_enabled
                        ),
                        l,
                    ));
                }
            }
        }
    }
    // Several phase limits at once: bounces must go to the steps that gain most from them.
    let mut multi = [0u32; Step::COUNT];
    multi[Step::StartIssue.index()] = 2;
    multi[Step::WriteSpecs.index()] = 2;
    multi[Step::Verify.index()] = 2;
    multi[Step::Merge.index()] = 3;
    for (r, b, e) in [(4, 2, 2), (4, 1, 2), (3, 2, 1)] {
        let l = Limits {
            max_retries_per_step: r,
            max_bounce_retries: b,
            max_consecutive_escalations: e,
            max_consecutive_same_failure: 2,
            max_consecutive_failures: multi,
            max_rate_limit_waits: 0,
            max_network_waits: 1,
            ci_timeout_secs: 10,
            ..Limits::default()
        };
        out.push((format!("R={r} B={b} E={e} multi-phase"), l));
    }
    out
}

#[test]
fn computed_bounds_equal_the_exhaustive_worst_case() {
    let mut failures = Vec::new();
    for (name, limits) in small_limits() {
        let computed = bounds::compute(&limits);
        let merge = worst(&limits, Goal::NextMerge);
        let halt = worst(&limits, Goal::HaltWithoutSuccess);
        if computed.between_merges != merge || computed.nothing_succeeds != halt {
            failures.push(format!(
                "{name}: computed {}/{} exhaustive {merge}/{halt}",
                computed.between_merges, computed.nothing_succeeds
            ));
        }
    }
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
    let model_free = [
        Step::StartCycle,
        Step::CommitPush,
        Step::CreatePr,
        Step::MonitorCi,
        Step::Merge,
    ];
    let mut five = [false; Step::COUNT];
    for s in model_free {
        five[s.index()] = true;
    }
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
    let mut failures = Vec::new();
    for (name, limits, exact) in &configs {
        for (set, builtin) in &sets {
            let computed = bounds::agent_invocations(limits, builtin);
            let merge = worst_of(limits, Goal::NextMerge, Some(*builtin));
            let halt = worst_of(limits, Goal::HaltWithoutSuccess, Some(*builtin));
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
