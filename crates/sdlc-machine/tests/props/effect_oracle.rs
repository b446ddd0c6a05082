//! An effect oracle: a second, plain implementation of the lifecycle contract
//! (docs/lifecycle.md, docs/counters-and-bounds.md) that predicts the exact effects of every
//! event, checked against the machine event by event on generated sessions.
//!
//! The generator covers what the other properties leave out: budgets (cost and time, issue
//! and session), single-issue and single-step modes, manual approval (retry, skip, halt,
//! timeout), quota waits with and without a reset hint, repair iterations, restarts in every
//! state and in other modes, shutdowns, claims (docs/scaling.md, "Claims": taken, held
//! elsewhere, refused, renewals renewed, unwritable or lost), and stale or duplicate events
//! (the kind a resumed runner produces), which the machine must ignore.
//!
//! Mutations this catches that the counter model cannot: a budget comparison or a usage sum
//! changed, the repair limit off by one, the auto-commit after implement dropped, the quota
//! cap ignored, a stale event acted on, single-step mode ignored, the spend statistics wrong;
//! and of claims: a request (e.g. a look at CI) not held back for a renewal, a wait renewed for
//! less than it lasts, a cycle started before the claim, the request held back let go after a
//! lost claim, a refused claim halting for another reason, a restart before a renewal's answer
//! failing the step's run held back for it as KILLED (it never started) or letting it go
//! without the renewal asked for again.

#[path = "effect_oracle/model/mod.rs"]
mod model;

use model::Model;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{
    CommitKind, Core, DecisionOption, Effect, Event, Limits, Mode, Signal, Usage,
};
use sdlc_machine::step::{Check, Step};
use std::collections::BTreeSet;

// ---- generated sessions --------------------------------------------------------------------

/// A tape of choices: each answer the world gives is picked from it; once it runs out every
/// choice is 0, the cooperative one, so every session ends.
struct Tape {
    choices: Vec<u32>,
    at: usize,
}

impl Tape {
    fn pick(&mut self, n: u32) -> u32 {
        let c = self.choices.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        c % n
    }
    fn exhausted(&self) -> bool {
        self.at >= self.choices.len()
    }
}

const CLASSES: [FailureClass; 13] = [
    FailureClass::TestAssertion,
    FailureClass::Budget,
    FailureClass::Lint,
    FailureClass::BuildCompile,
    FailureClass::Timeout,
    FailureClass::Killed,
    FailureClass::RateLimit,
    FailureClass::Overloaded,
    FailureClass::Quota,
    FailureClass::ContextWindow,
    FailureClass::Unknown,
    FailureClass::Network,
    FailureClass::Auth,
];

/// Mostly failures the issue owns; an environment failure (which halts at once) is rare.
fn failure_class(t: &mut Tape) -> FailureClass {
    let n = CLASSES.len() as u32;
    match t.pick(2 * n) {
        i if i < n - 1 => CLASSES[i as usize],
        i if i < 2 * n - 1 => CLASSES[(i % (n - 1)) as usize],
        _ => FailureClass::Auth,
    }
}

fn usage(t: &mut Tape) -> Usage {
    Usage {
        cost_micros: [0, 150_000, 1_000_000, 4_000_000][t.pick(4) as usize],
        elapsed_ms: [0, 60_000, 900_000][t.pick(3) as usize],
        turns: t.pick(40),
    }
}

fn any_step(t: &mut Tape) -> Step {
    Step::ALL[t.pick(Step::COUNT as u32) as usize]
}

/// A stale, duplicate or out-of-place event, as a resumed or confused driver might send.
fn noise(t: &mut Tape, last: Option<Event>) -> Event {
    match t.pick(24) {
        22 => Event::IssueStillOpen,
        18 => Event::ClaimTaken {
            issue: 1 + t.pick(3),
        },
        19 => Event::ClaimHeld {
            issue: 1 + t.pick(3),
        },
        20 => Event::ClaimRenewed,
        21 => Event::ClaimLost {
            issue: 1 + t.pick(3),
        },
        15 => Event::MergeTurnTaken,
        16 => Event::MergeTurnBusy,
        17 => Event::MergeRaceLost {
            class: failure_class(t),
            signature: Signature(u64::from(t.pick(3))),
            usage: usage(t),
        },
        23 => Event::MergeQueued { usage: usage(t) },
        14 => Event::CiPending {
            usage: usage(t),
            commit: None,
        },
        9 => Event::NetworkFailed,
        10 => Event::TrackerUpdated,
        11 => Event::TrackerWriteFailed,
        12 => Event::IssueWithdrawn {
            issue: 1 + t.pick(3),
        },
        13 => Event::WorkspaceUnfit { step: any_step(t) },
        0 => last.unwrap_or(Event::WaitOver),
        1 => Event::PreconditionsOk { step: any_step(t) },
        2 => Event::StepSucceeded {
            step: any_step(t),
            usage: usage(t),
        },
        3 => Event::StepFailed {
            step: any_step(t),
            class: failure_class(t),
            signature: Signature(u64::from(t.pick(3))),
            usage: usage(t),
            wait_hint_secs: None,
        },
        4 => Event::WaitOver,
        5 => Event::AlreadyDone { step: any_step(t) },
        6 => Event::Decided {
            option: DecisionOption::ALL[t.pick(3) as usize],
        },
        7 => Event::Resume {
            issue: 1 + t.pick(3),
            next: any_step(t),
        },
        _ => Event::IssueSelected {
            issue: 1 + t.pick(3),
        },
    }
}

/// What the tracker knows: issues closed (merged or withdrawn), escalated, and held by other
/// runners as this runner found when it claimed them.
struct Tracker<'a> {
    closed: &'a BTreeSet<u32>,
    escalated: &'a BTreeSet<u32>,
    held: &'a BTreeSet<u32>,
    backlog: u32,
}

/// The world's answer to the request in `effects`.
fn answer(
    t: &mut Tape,
    effects: &[Effect],
    tracker: &Tracker,
    mode: Mode,
    current: Option<u32>,
) -> Event {
    let Tracker {
        closed: merged,
        escalated,
        held,
        backlog,
    } = *tracker;
    let request = effects.iter().rev().find(|e| e.is_request()).copied();
    // Any call of the runner's own may fail on the network, now and then.
    let own_call = matches!(
        request,
        Some(
            Effect::SelectIssue
                | Effect::CheckPreconditions { .. }
                | Effect::RunStep { .. }
                | Effect::LookAtCi { .. }
                | Effect::UpdateBranch { .. }
                | Effect::RecordMerged { .. }
                | Effect::MarkEscalated { .. }
                | Effect::Unquarantine { .. }
                | Effect::TakeMergeTurn { .. }
                | Effect::ClaimIssue { .. }
                | Effect::RenewClaim { .. }
        )
    );
    if own_call && t.pick(25) == 24 {
        return Event::NetworkFailed;
    }
    match request {
        // A look for the tracker's own close finds it still open now and then.
        Some(Effect::RecordMerged { wait: true, .. }) if t.pick(3) == 2 => Event::IssueStillOpen,
        Some(
            Effect::RecordMerged { .. }
            | Effect::MarkEscalated { .. }
            | Effect::Unquarantine { .. },
        ) => match t.pick(40) {
            39 => Event::TrackerWriteFailed,
            _ => Event::TrackerUpdated,
        },
        Some(Effect::SelectIssue) => {
            if let Mode::SingleIssue(n) = mode {
                return Event::IssueSelected { issue: n };
            }
            // A tracker that cannot be read stops the run; the restart selects again.
            if t.pick(50) == 49 {
                return Event::TrackerReadFailed;
            }
            let open: Vec<u32> = (1..=backlog)
                .filter(|n| !merged.contains(n) && !escalated.contains(n))
                .collect();
            // The selection leaves out the issues other runners hold (a stale one may not).
            let free: Vec<u32> = open.iter().copied().filter(|n| !held.contains(n)).collect();
            if free.is_empty() && !open.is_empty() {
                return match t.pick(8) {
                    7 => Event::IssueSelected { issue: open[0] },
                    _ => Event::NoIssues,
                };
            }
            let open = free;
            match (open.first(), t.pick(31)) {
                // On a start the driver may find the issue's PR merged already.
                (Some(&issue), 28) => Event::AlreadyMerged { issue },
                // A fleet worker may find no room to take it.
                (Some(_), 30) => Event::StandBy,
                (Some(&issue), n) if n != 29 => Event::IssueSelected { issue },
                (Some(_), _) => Event::AllBlocked {
                    others_hold: !held.is_empty() && t.pick(2) == 1,
                },
                (None, _) if (1..=backlog).any(|n| escalated.contains(&n)) => Event::AllEscalated {
                    others_hold: !held.is_empty() && t.pick(2) == 1,
                },
                (None, _) => Event::NoIssues,
            }
        }
        Some(Effect::CheckPreconditions { step }) => match t.pick(60) {
            58 => Event::IssueWithdrawn {
                issue: current.unwrap_or(1),
            },
            59 => Event::WorkspaceUnfit { step },
            54..=56 => Event::PreconditionFailed {
                step,
                check: Check::of(step)
                    .first()
                    .copied()
                    .unwrap_or(Check::CleanWorkingTree),
            },
            57 => Event::AlreadyDone { step },
            _ => Event::PreconditionsOk { step },
        },
        Some(Effect::LookAtCi { .. }) => {
            let u = usage(t);
            match t.pick(4) {
                0 => Event::StepSucceeded {
                    step: Step::MonitorCi,
                    usage: u,
                },
                1 | 2 => Event::CiPending {
                    usage: u,
                    commit: None,
                },
                _ => Event::StepFailed {
                    step: Step::MonitorCi,
                    class: failure_class(t),
                    signature: Signature(u64::from(t.pick(3))),
                    usage: u,
                    wait_hint_secs: None,
                },
            }
        }
        Some(Effect::ClaimIssue { issue }) => match t.pick(12) {
            0..=7 => Event::ClaimTaken { issue },
            11 => Event::TrackerWriteFailed,
            _ => Event::ClaimHeld { issue },
        },
        Some(Effect::RenewClaim { issue, .. }) => match t.pick(40) {
            39 => Event::ClaimLost { issue },
            36..=38 => Event::TrackerWriteFailed,
            _ => Event::ClaimRenewed,
        },
        Some(Effect::TakeMergeTurn { .. }) => match t.pick(12) {
            0..=6 => Event::MergeTurnTaken,
            11 => Event::TrackerWriteFailed,
            _ => Event::MergeTurnBusy,
        },
        Some(Effect::RunStep { step, .. }) => {
            let u = usage(t);
            match t.pick(20) {
                // The merge may put the PR in the forge's merge queue, and each look at the
                // queue find it still there, for as long as the tape says.
                7..=9 if step == Step::Merge => Event::MergeQueued { usage: u },
                // The merge may lose a push race to someone who pushed meanwhile.
                10..=12 if step == Step::Merge => Event::MergeRaceLost {
                    class: failure_class(t),
                    signature: Signature(u64::from(t.pick(3))),
                    usage: u,
                },
                // monitorCI's first look may find CI pending.
                13..=16 if step == Step::MonitorCi => Event::CiPending {
                    usage: u,
                    commit: None,
                },
                0..=16 => Event::StepSucceeded { step, usage: u },
                _ => {
                    let class = failure_class(t);
                    // Reset hints on both sides of every quota cap the limits use, and on it.
                    let hint = match (class, t.pick(5)) {
                        (FailureClass::Quota, 1) => Some(120),
                        (FailureClass::Quota, 2) => Some(300),
                        (FailureClass::Quota, 3) => Some(3_600),
                        (FailureClass::Quota, 4) => Some(1_000_000),
                        _ => None,
                    };
                    Event::StepFailed {
                        step,
                        class,
                        signature: Signature(u64::from(t.pick(3))),
                        usage: u,
                        wait_hint_secs: hint,
                    }
                }
            }
        }
        Some(Effect::Wait { .. } | Effect::Pause { .. }) => Event::WaitOver,
        Some(Effect::AskDecision { .. }) => match t.pick(4) {
            0 => Event::Decided {
                option: DecisionOption::Retry,
            },
            1 => Event::Decided {
                option: DecisionOption::Skip,
            },
            2 => Event::Decided {
                option: DecisionOption::Halt,
            },
            _ => Event::DecisionTimedOut,
        },
        // After an exit that is not the end (a shutdown), the runner is started again.
        Some(Effect::Exit { .. }) | Some(_) | None => Event::Start,
    }
}

/// Drives the machine and the model side by side; returns the first disagreement.
fn compare(l: &Limits, mode: Mode, backlog: u32, choices: Vec<u32>) -> Result<usize, String> {
    let mut core = Core::new(l.clone(), mode);
    let mut model = Model::new(l, mode);
    let mut tape = Tape { choices, at: 0 };
    let mut merged = BTreeSet::new();
    let mut event = Event::Start;
    for n in 0..4000 {
        let actual = core.handle(&event).to_vec();
        let expected = model.on(&event);
        if actual != expected {
            return Err(format!(
                "event {n} {event:?} in {:?}:\n machine {actual:?}\n   model {expected:?}",
                model.at
            ));
        }
        let r = core.runner();
        let counters = (
            r.attempts,
            r.bounces,
            r.repairs,
            r.issue_cost_micros,
            r.issue_elapsed_ms,
            r.session_cost_micros,
            r.wait_streak,
            r.step_network_waits,
            r.consecutive_escalations,
        );
        let predicted = (
            model.attempts,
            model.bounces,
            model.repairs,
            model.issue_cost,
            model.issue_ms,
            model.session_cost,
            model.waits,
            model.step_net_waits,
            model.streak,
        );
        if counters != predicted {
            return Err(format!(
                "counters after {event:?}: {counters:?} != {predicted:?}"
            ));
        }
        let stats = (
            r.stats.merges,
            r.stats.total,
            r.stats.since_merge,
            r.stats.failed_by_class,
        );
        if stats
            != (
                model.merges,
                model.total,
                model.since_merge,
                model.failed_by_class,
            )
        {
            return Err(format!("statistics after {event:?}: {:?}", r.stats));
        }
        if (&r.held_elsewhere, core.held_back()) != (&model.held, model.held_back) {
            return Err(format!(
                "claims after {event:?}: held elsewhere {:?}, held back {:?}",
                r.held_elsewhere,
                core.held_back()
            ));
        }
        if core.is_terminal() != model.terminal() {
            return Err(format!("terminal after {event:?}: {}", core.is_terminal()));
        }
        for e in &actual {
            if let Effect::RecordMerged { issue, .. } = e {
                merged.insert(*issue);
            }
        }
        if model.terminal() {
            return Ok(n);
        }
        let last = Some(event);
        // A withdrawn issue is closed in the tracker: never offered again.
        let closed: BTreeSet<u32> = merged.union(&model.withdrawn).copied().collect();
        event = if !tape.exhausted() && tape.pick(20) == 19 {
            // Noise, a restart, a shutdown or a restart in another mode.
            match tape.pick(5) {
                0 => Event::Start,
                1 => Event::ShutdownRequested {
                    signal: Signal::Term,
                    usage: Default::default(),
                },
                2 => Event::ModeChanged {
                    mode: match tape.pick(3) {
                        0 => Mode::Continuous,
                        1 => Mode::SingleIssue(1 + tape.pick(3)),
                        _ => Mode::SingleStep(any_step(&mut tape)),
                    },
                },
                _ => noise(&mut tape, last),
            }
        } else {
            let tracker = Tracker {
                closed: &closed,
                escalated: &model.escalated,
                held: &model.held,
                backlog,
            };
            answer(&mut tape, &actual, &tracker, model.mode, model.issue)
        };
    }
    Err("the session did not end within 4000 events".into())
}

fn limits() -> impl Strategy<Value = Limits> {
    let budget = |values: Vec<u64>| prop_oneof![3 => Just(None), 1 => proptest::sample::select(values).prop_map(Some)];
    (
        (
            1u32..=4,
            0u32..=2,
            1u32..=4,
            prop_oneof![Just(0u32), Just(2)],
        ),
        (
            0u32..=4,
            0u32..=3,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (
            budget(vec![1, 3_000_000, 9_000_000]),
            budget(vec![2_000_000, 10_000_000, 30_000_000]),
            budget(vec![1, 2_000_000, 6_000_000]),
            budget(vec![500_000, 2_000_000]),
            // The day's ceiling, and what the project spent today before the session.
            (
                budget(vec![1, 4_000_000, 12_000_000]),
                proptest::sample::select(vec![0u64, 1_000_000]),
            ),
        ),
        (
            // 100 is the backoff ceiling, the wait when a quota failure gives no hint.
            proptest::sample::select(vec![60u64, 100, 300, 3_600]),
            prop::collection::vec((0usize..Step::COUNT, 1u32..=3), 0..2),
            (
                0u32..=3,
                proptest::sample::select(vec![None, Some(1u64), Some(1_500), Some(5_000)]),
                // Runners sharing a tracker claim their issues, and renew before a decision
                // for as long as a person may take.
                any::<bool>(),
                proptest::sample::select(vec![0u64, 900]),
                // Waits for the tracker's own close of a merged issue: none (the local
                // tracker) or a few (GitHub's).
                0u8..=2,
            ),
            // (first pause, longest pause, time limit): none, a few and many looks.
            proptest::sample::select(vec![
                (5u32, 5u32, 0u64),
                (5, 5, 10),
                (5, 20, 60),
                (10, 120, 600),
            ]),
        ),
    )
        .prop_map(
            |(
                (r, b, e, s),
                (w, repairs, simplify, manual, ask_on_budget),
                (pi, ps, pt, pc, (pd, before)),
                (
                    quota,
                    phases,
                    (net, merge_turn, claims, decision, close_waits),
                    (ci_first, ci_max, ci_timeout),
                ),
            )| {
                let mut f = [0u32; Step::COUNT];
                for (i, v) in phases {
                    f[i] = v;
                }
                Limits {
                    max_retries_per_step: r,
                    max_bounce_retries: b,
                    max_consecutive_escalations: e,
                    max_consecutive_same_failure: s,
                    max_consecutive_failures: f,
                    max_rate_limit_waits: w,
                    backoff_initial_secs: 7,
                    backoff_max_secs: 100,
                    max_quota_wait_secs: quota,
                    max_repair_iterations: repairs,
                    simplify_enabled: simplify,
                    per_issue_budget_micros: pi,
                    per_session_budget_micros: ps,
                    per_issue_budget_ms: pt,
                    per_call_budget_micros: pc,
                    per_day_budget_micros: pd,
                    day_spent_before_micros: before,
                    manual_approval: manual,
                    builtin_commit_push: false,
                    runner_commits: false,
                    ask_on_issue_budget: ask_on_budget,
                    ask_on_weakening: false,
                    max_network_waits: net,
                    network_backoff_initial_secs: 2,
                    ci_poll_initial_secs: ci_first,
                    ci_poll_max_secs: ci_max,
                    ci_timeout_secs: ci_timeout,
                    merge_turn_wait_ms: merge_turn,
                    claims,
                    // The lease only sets the renewal's terms, which the model derives alike.
                    claim_lease_secs: Some(600),
                    decision_wait_secs: decision,
                    // The oracle models no review gate; machine_props covers it.
                    review: None,
                    tracker_close_waits: close_waits,
                    // The oracle models monitorCI's own look at CI; a fleet's train taking
                    // it over is `train_ci_props.rs`'.
                    train_tests_ci: false,
                }
            },
        )
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        7 => Just(Mode::Continuous),
        2 => (1u32..=3).prop_map(Mode::SingleIssue),
        1 => (0usize..Step::COUNT).prop_map(|i| Mode::SingleStep(Step::ALL[i])),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 20_000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/effect_oracle.txt"
        )))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_machine_emits_exactly_the_effects_the_contract_predicts(
        l in limits(),
        m in mode(),
        backlog in 1u32..4,
        choices in prop::collection::vec(any::<u32>(), 0..400),
    ) {
        if let Err(diff) = compare(&l, m, backlog, choices) {
            prop_assert!(false, "{}", diff);
        }
    }
}

/// The cooperative session (every answer the first choice) merges every issue: the oracle is
/// not vacuous.
#[test]
fn a_cooperative_session_merges_its_backlog() {
    let l = Limits::default();
    let mut core = Core::new(l.clone(), Mode::Continuous);
    let mut model = Model::new(&l, Mode::Continuous);
    let mut tape = Tape {
        choices: vec![],
        at: 0,
    };
    let mut merged = BTreeSet::new();
    let mut event = Event::Start;
    let mut implemented = 0;
    while !model.terminal() {
        let effects = core.handle(&event).to_vec();
        assert_eq!(effects, model.on(&event));
        for e in &effects {
            match e {
                Effect::RecordMerged { issue, .. } => {
                    merged.insert(*issue);
                }
                Effect::AutoCommit(CommitKind::Implemented { .. }) => implemented += 1,
                _ => {}
            }
        }
        let tracker = Tracker {
            closed: &merged,
            escalated: &model.escalated,
            held: &model.held,
            backlog: 3,
        };
        event = answer(&mut tape, &effects, &tracker, Mode::Continuous, model.issue);
    }
    assert_eq!(merged, BTreeSet::from([1, 2, 3]));
    assert_eq!(implemented, 3);
    assert_eq!(core.runner().stats.merges, 3);
}
