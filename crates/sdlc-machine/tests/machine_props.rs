//! Property tests of the pure machine (docs/counters-and-bounds.md). Each property names the mutation it kills:
//!
//! | property | mutation it catches |
//! |---|---|
//! | `scripts_terminate_within_the_bound` | a counter that never reaches its limit (`attempts`, `bounces`, `consecutive_escalations` or `wait_streak` not incremented; `>=` turned into `>`) — the run exceeds the bound or never exits |
//! | `reference_model_agrees_after_every_event` | any counter incremented or reset at the wrong site (e.g. attempts reset on a bounce, phase streak not reset on success, bounces not reset by a new cycle) |
//! | `invariants_hold` → escalation streak | halting one escalation late or early; a merge not resetting the streak |
//! | `invariants_hold` → bounce oracle | `bounces += 1` removed (runs of a step per cycle exceed 1 + bounces) |
//! | `invariants_hold` → escalated never selected | the escalated set not consulted on selection |
//! | `invariants_hold` → halt effects | a halt that resets, commits or checks out |
//! | `halted_is_absorbing` | any handler of `Halted`/`Finished` that transitions or emits work |
//! | `same_events_same_effects` | any nondeterminism (iteration order, hidden state) |

mod common;

use common::{drive, Reply, Trace};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_machine::failure::{Disposition, FailureClass, Signature};
use sdlc_machine::fleet::Contention;
use sdlc_machine::machine::{bounds, Core, Effect, Event, HaltReason, Limits, Mode, Notice, Usage};
use sdlc_machine::step::Step;
use std::collections::{BTreeSet, VecDeque};

fn limits() -> impl Strategy<Value = Limits> {
    (
        1u32..=4,
        0u32..=3,
        1u32..=3,
        prop_oneof![Just(0u32), Just(2), Just(3)],
        0u32..=2,
        any::<bool>(),
        prop::collection::vec((0usize..Step::COUNT, 0u32..=4), 0..3),
        // monitorCI's time limit: no wait for CI, two, or the default's seven.
        proptest::sample::select(vec![0u64, 30, 600]),
    )
        .prop_map(|(r, b, e, s, w, simplify, phases, ci)| {
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
                simplify_enabled: simplify,
                ci_timeout_secs: ci,
                ..Limits::default()
            }
        })
}

fn class() -> impl Strategy<Value = FailureClass> {
    prop_oneof![
        6 => Just(FailureClass::TestAssertion),
        2 => Just(FailureClass::BuildCompile),
        1 => Just(FailureClass::Timeout),
        2 => Just(FailureClass::RateLimit),
        1 => Just(FailureClass::Quota),
        1 => Just(FailureClass::ContextWindow),
        1 => Just(FailureClass::Auth),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        4 => Just(Reply::Ok),
        5 => (class(), 1u64..4).prop_map(|(c, s)| Reply::Fail(c, s)),
        2 => Just(Reply::Precondition),
        1 => Just(Reply::AlreadyDone),
        1 => Just(Reply::Crash),
        1 => Just(Reply::Network),
        2 => Just(Reply::CiPending),
    ]
}

/// One queue of replies per step; an exhausted queue cooperates (`Ok`), so every script ends.
fn queues() -> impl Strategy<Value = Vec<Vec<Reply>>> {
    prop::collection::vec(
        prop_oneof![Just(vec![]), prop::collection::vec(reply(), 0..14)],
        10,
    )
}

fn run(limits: &Limits, backlog: u32, queues: &[Vec<Reply>]) -> (Core, Trace) {
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let mut qs: Vec<VecDeque<Reply>> = queues.iter().map(|q| q.iter().copied().collect()).collect();
    let trace = drive(&mut core, backlog, 100_000, |step, running| {
        let q = &mut qs[step.index()];
        match (running, q.front().copied()) {
            // Precondition replies answer CheckPreconditions; outcomes answer RunStep.
            (
                false,
                Some(
                    r @ (Reply::Precondition
                    | Reply::AlreadyDone
                    | Reply::Crash
                    | Reply::Network
                    | Reply::Busy),
                ),
            ) => {
                q.pop_front();
                r
            }
            (true, Some(Reply::Precondition | Reply::AlreadyDone | Reply::Busy)) => {
                q.pop_front();
                Reply::Ok
            }
            (true, Some(r)) => {
                q.pop_front();
                r
            }
            _ => Reply::Ok,
        }
    });
    (core, trace)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1500,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/machine_props.txt"
        )))),
        ..ProptestConfig::default()
    }
}

/// Replies of a merge among other mergers: lost races and a busy turn besides the rest.
fn merge_queue() -> impl Strategy<Value = Vec<Reply>> {
    prop::collection::vec(
        prop_oneof![
            3 => reply(),
            2 => Just(Reply::LostRace),
            2 => Just(Reply::Busy),
        ],
        0..20,
    )
}

proptest! {
    #![proptest_config(config())]

    /// With a merge turn to take and races to lose, the step attempts between merges stay
    /// within `bounds::compute` (a race merged again is no attempt), every run within
    /// `bounds::merges`' agent figure (every step agent-run), no attempt merges again more
    /// than `MAX_LOST_RACES` times, and a wait for the turn never pauses past its limit.
    #[test]
    fn merges_among_other_mergers_stay_within_the_bounds(
        l in limits(),
        limit_ms in proptest::sample::select(vec![1u64, 900, 5_000]),
        backlog in 0u32..4,
        mut qs in queues(),
        merge in merge_queue(),
    ) {
        let l = Limits { merge_turn_wait_ms: Some(limit_ms), ..l };
        qs[Step::Merge.index()] = merge;
        let (core, trace) = run(&l, backlog, &qs);
        prop_assert!(core.is_terminal() || trace.exit == Some(0));
        let attempts = bounds::compute(&l).between_merges;
        let runs = bounds::merges(&l, &[false; Step::COUNT]).agent_invocations.between_merges;
        let (mut since_attempts, mut since_runs, mut paused) = (0u64, 0u64, 0u64);
        let mut last_run: Option<&Effect> = None;
        let mut network_wait = false;
        for e in &trace.effects {
            match e {
                Effect::Notify(Notice::NetworkWait { .. }) => network_wait = true,
                Effect::Notify(Notice::MergeRaceLost { lost, max }) => {
                    prop_assert!(lost <= max && *max == Contention::MAX_LOST_RACES);
                    // The run that lost was no attempt.
                    since_attempts -= 1;
                    paused = 0;
                }
                Effect::Notify(Notice::WaitingForMergeTurn { .. }) => paused = 0,
                Effect::Pause { millis } => {
                    paused += millis;
                    prop_assert!(paused <= limit_ms.max(Contention::MAX_LOST_RACES as u64 * 250));
                }
                Effect::RunStep { .. } => {
                    if !(network_wait && last_run == Some(e)) {
                        since_attempts += 1;
                        since_runs += 1;
                    }
                    last_run = Some(e);
                    network_wait = false;
                }
                Effect::RecordMerged { .. } => {
                    prop_assert!(since_attempts <= attempts, "{since_attempts} > {attempts}");
                    prop_assert!(since_runs <= runs, "{since_runs} > {runs}");
                    since_attempts = 0;
                    since_runs = 0;
                }
                _ => {}
            }
        }
        prop_assert!(since_attempts <= attempts, "tail {since_attempts} > {attempts}");
        prop_assert!(since_runs <= runs, "tail {since_runs} > {runs}");
    }

    #[test]
    fn scripts_terminate_within_the_bound(l in limits(), backlog in 0u32..5, qs in queues()) {
        let (core, trace) = run(&l, backlog, &qs);
        prop_assert!(core.is_terminal() || trace.exit == Some(0));
        let bound = bounds::compute(&l);
        let mut since_merge = 0u64;
        let mut succeeded = false;
        // The same request issued again after a network wait is the same attempt (the
        // runner's call failed before any agent ran): it is not counted twice.
        let mut last_run: Option<&Effect> = None;
        let mut network_wait = false;
        for e in &trace.effects {
            match e {
                Effect::Notify(Notice::NetworkWait { .. }) => network_wait = true,
                Effect::RunStep { .. } => {
                    if !(network_wait && last_run == Some(e)) {
                        since_merge += 1;
                    }
                    last_run = Some(e);
                    network_wait = false;
                }
                Effect::RecordMerged { .. } => {
                    prop_assert!(since_merge <= bound.between_merges, "{since_merge} > {}", bound.between_merges);
                    since_merge = 0;
                }
                _ => {}
            }
        }
        prop_assert!(since_merge <= bound.between_merges, "tail {since_merge} > {}", bound.between_merges);
        for ev in &trace.events {
            if matches!(ev, Event::StepSucceeded { .. } | Event::AlreadyDone { .. }) { succeeded = true; }
        }
        if !succeeded {
            prop_assert!(trace.invocations <= bound.nothing_succeeds);
        }
    }

    #[test]
    fn invariants_hold(l in limits(), backlog in 0u32..5, qs in queues()) {
        let (_core, trace) = run(&l, backlog, &qs);
        let mut streak = 0u32;
        let mut escalated = BTreeSet::new();
        let mut runs_this_cycle = [0u32; Step::COUNT];
        let mut bounces_this_cycle = 0u32;
        let mut batch_start = 0;
        let mut after_wait = false;
        // Effects come in batches, one per event; rebuild the batches from request boundaries.
        for (i, e) in trace.effects.iter().enumerate() {
            match *e {
                Effect::Notify(Notice::CycleStarted { .. }) => {
                    runs_this_cycle = [0; Step::COUNT];
                    bounces_this_cycle = 0;
                }
                Effect::RunStep { step, issue, attempt, .. } => {
                    prop_assert!(!escalated.contains(&issue), "escalated issue {issue} ran again");
                    prop_assert!(attempt <= l.max_retries_per_step);
                    // A wait consumes no attempt: its re-dispatch is the same run.
                    if attempt == 1 && !after_wait { runs_this_cycle[step.index()] += 1; }
                    after_wait = false;
                    prop_assert!(runs_this_cycle[step.index()] <= 1 + bounces_this_cycle,
                        "{step} ran {} times with {bounces_this_cycle} bounces", runs_this_cycle[step.index()]);
                }
                Effect::Notify(Notice::Bounced { bounces, .. }) => {
                    bounces_this_cycle += 1;
                    prop_assert_eq!(bounces, bounces_this_cycle);
                    prop_assert!(bounces <= l.max_bounce_retries);
                }
                Effect::MarkEscalated { issue } => {
                    streak += 1;
                    escalated.insert(issue);
                    prop_assert!(streak <= l.max_consecutive_escalations);
                    let halts_here = trace.effects[i..].iter()
                        .take_while(|e| !matches!(e, Effect::SelectIssue | Effect::CheckPreconditions { .. }))
                        .any(|e| matches!(e, Effect::Halt(HaltReason::ConsecutiveEscalations { .. })));
                    prop_assert_eq!(halts_here, streak == l.max_consecutive_escalations,
                        "halt must come exactly at the {}th escalation", l.max_consecutive_escalations);
                }
                Effect::RecordMerged { .. } => streak = 0,
                Effect::Wait { .. } => after_wait = true,
                // The wait before another look at CI belongs to the attempt under way.
                Effect::LookAtCi { .. } => after_wait = false,
                Effect::Halt(_) => {
                    let batch = &trace.effects[batch_start..];
                    prop_assert!(!batch.iter().any(|e| matches!(e,
                        Effect::ResetCycle | Effect::AutoCommit(_) | Effect::CheckoutMain)),
                        "a halt changed something: {batch:?}");
                    prop_assert_eq!(trace.effects.last(), Some(&Effect::Exit { code: 1 }));
                }
                _ => {}
            }
            if matches!(e, Effect::SelectIssue | Effect::CheckPreconditions { .. } | Effect::RunStep { .. } | Effect::LookAtCi { .. } | Effect::Wait { .. }) {
                batch_start = i + 1;
            }
        }
    }

    #[test]
    fn a_merge_follows_a_success_of_every_step_after_its_last_dispatch(l in limits(), backlog in 1u32..4, qs in queues()) {
        // The journal is the authority on progress: an attempt interrupted by a crash is never
        // taken as done, so every merged cycle saw each enabled step finish after it was last
        // dispatched.
        let (_core, trace) = run(&l, backlog, &qs);
        let mut core = Core::new(l.clone(), Mode::Continuous);
        let mut done = [false; Step::COUNT];
        for ev in &trace.events {
            let before = *core.state();
            let dispatched = core.runner().dispatched;
            let effects = core.handle(ev).to_vec();
            if matches!(ev, Event::Start) && dispatched {
                if let Some(step) = before.step() { done[step.index()] = false; }
            }
            match *ev {
                Event::IssueSelected { .. } | Event::Resume { .. } => done = [false; Step::COUNT],
                Event::StepSucceeded { step, .. } | Event::AlreadyDone { step } => done[step.index()] = true,
                Event::StepFailed { step, .. } => done[step.index()] = false,
                _ => {}
            }
            for e in &effects {
                match *e {
                    Effect::RunStep { step, .. } => done[step.index()] = false,
                    Effect::RecordMerged { issue } => {
                        for step in l.enabled_steps() {
                            prop_assert!(done[step.index()], "issue {issue} merged without {step} finishing after {ev:?}");
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn repeated_crashes_in_one_step_halt_within_its_retries_and_blame_no_issue(l in limits(), crashes in 1usize..12) {
        // Every restart while verify's attempt is out counts as a failed attempt.
        let mut core = Core::new(l.clone(), Mode::Continuous);
        let mut left = crashes;
        let trace = drive(&mut core, 1, 100_000, |step, running| {
            if step == Step::Verify && running && left > 0 {
                left -= 1;
                Reply::Crash
            } else {
                Reply::Ok
            }
        });
        let verify_runs = trace.runs().filter(|(s, _, _)| *s == Step::Verify).count() as u64;
        prop_assert!(verify_runs <= u64::from(l.max_retries_per_step) * u64::from(1 + l.max_bounce_retries) + 1);
        prop_assert!(trace.crashes >= 1);
        if crashes as u32 >= l.max_retries_per_step {
            prop_assert!(trace.effects.iter().any(|e| matches!(e, Effect::Halt(_))),
                "{crashes} crashes in verify with {} retries did not halt", l.max_retries_per_step);
        }
        // The runner's own deaths are never the issue's: it is not quarantined for them.
        prop_assert!(!trace.effects.iter().any(|e| matches!(e, Effect::MarkEscalated { .. })),
            "an issue was quarantined for the runner's deaths");
    }

    #[test]
    fn same_events_same_effects(l in limits(), backlog in 0u32..4, qs in queues()) {
        let (a_core, a) = run(&l, backlog, &qs);
        let (b_core, b) = run(&l, backlog, &qs);
        prop_assert_eq!(&a.effects, &b.effects);
        prop_assert_eq!(a_core.snapshot(), b_core.snapshot());
        // Replaying the recorded events into a fresh machine reproduces it exactly.
        let mut replay = Core::new(l.clone(), Mode::Continuous);
        let mut effects = Vec::new();
        for ev in &a.events { effects.extend_from_slice(replay.handle(ev)); }
        prop_assert_eq!(effects, b.effects);
        prop_assert_eq!(replay.snapshot(), a_core.snapshot());
    }

    #[test]
    fn halted_is_absorbing(l in limits(), qs in queues(), extra in prop::collection::vec(any_event(), 1..30)) {
        let (mut core, _) = run(&l, 3, &qs);
        prop_assume!(core.is_terminal());
        let before = core.snapshot();
        for ev in extra {
            let fx = core.handle(&ev).to_vec();
            prop_assert_eq!(core.snapshot(), before.clone());
            if ev != Event::Start {
                prop_assert!(fx.is_empty(), "{ev:?} produced {fx:?}");
            }
        }
    }

    #[test]
    fn reference_model_agrees_after_every_event(l in limits(), backlog in 1u32..4, qs in queues()) {
        let (_core, trace) = run(&l, backlog, &qs);
        let mut core = Core::new(l.clone(), Mode::Continuous);
        let mut model = Model::new(&l);
        for ev in &trace.events {
            core.handle(ev);
            model.apply(ev, core.state().step());
            let r = core.runner();
            prop_assert_eq!(r.attempts, model.attempts, "attempts after {:?}", ev);
            prop_assert_eq!(r.bounces, model.bounces, "bounces after {:?}", ev);
            prop_assert_eq!(r.consecutive_escalations, model.streak, "streak after {:?}", ev);
            prop_assert_eq!(&r.escalated, &model.escalated, "escalated after {:?}", ev);
            prop_assert_eq!(r.phase_failures, model.phase, "phase streaks after {:?}", ev);
            prop_assert_eq!(r.wait_streak, model.waits, "wait streak after {:?}", ev);
        }
    }
}

fn any_event() -> impl Strategy<Value = Event> {
    let step = (0usize..Step::COUNT).prop_map(|i| Step::ALL[i]);
    prop_oneof![
        Just(Event::Start),
        Just(Event::NoIssues),
        Just(Event::WaitOver),
        (1u32..9).prop_map(|issue| Event::IssueSelected { issue }),
        step.clone()
            .prop_map(|step| Event::PreconditionsOk { step }),
        step.clone().prop_map(|step| Event::StepSucceeded {
            step,
            usage: Usage::default()
        }),
        (step, class()).prop_map(|(step, class)| Event::StepFailed {
            step,
            class,
            signature: Signature(1),
            usage: Usage::default(),
            wait_hint_secs: None
        }),
    ]
}

/// An independent, deliberately naive model of the counters of docs/counters-and-bounds.md, written from the
/// table rather than from the machine's code.
struct Model {
    l: Limits,
    issue: Option<u32>,
    attempts: [u32; Step::COUNT],
    bounces: u32,
    streak: u32,
    escalated: BTreeSet<u32>,
    phase: [u32; Step::COUNT],
    waits: u32,
    same: [(u64, u32); Step::COUNT],
    halted: bool,
    /// The issue and (step, class, signature) of the last escalation since a merge.
    last_escalation: Option<(u32, Step, FailureClass, u64)>,
    /// Whether that step failed no other way in that cycle.
    last_escalation_alone: bool,
    /// Every way each step failed in this cycle (waits aside).
    how: [Vec<(FailureClass, u64)>; Step::COUNT],
    /// The same failure ended the next issue too: the first one's quarantine is being lifted.
    releasing: Option<u32>,
    /// The step whose attempt is out (answered `PreconditionsOk`, no outcome yet).
    out: Option<Step>,
    /// Looks at CI that found it pending in the attempt out, and whether the runner waits
    /// for the next look now (a restart then waits again: nothing was cut short).
    ci_pending: u32,
    ci_waiting: bool,
}

/// How many times one monitorCI attempt may find CI pending and wait: pauses doubling from
/// the first to the longest, at least a second each, while their sum stays within the limit.
fn ci_waits_allowed(l: &Limits) -> u32 {
    let (mut n, mut pause, mut sum) = (0u32, u64::from(l.ci_poll_initial_secs), 0u64);
    loop {
        let p = pause.min(u64::from(l.ci_poll_max_secs)).max(1);
        if sum + p > l.ci_timeout_secs {
            return n;
        }
        sum += p;
        n += 1;
        pause = pause.saturating_mul(2);
    }
}

impl Model {
    fn new(l: &Limits) -> Self {
        Model {
            l: l.clone(),
            issue: None,
            attempts: [0; Step::COUNT],
            bounces: 0,
            streak: 0,
            escalated: BTreeSet::new(),
            phase: [0; Step::COUNT],
            waits: 0,
            same: [(0, 0); Step::COUNT],
            halted: false,
            last_escalation: None,
            last_escalation_alone: false,
            how: Default::default(),
            releasing: None,
            out: None,
            ci_pending: 0,
            ci_waiting: false,
        }
    }

    /// `own`: the step's own failure that ended the cycle (none for a bounce loop).
    fn escalate(&mut self, own: Option<(Step, FailureClass, u64)>) {
        let issue = self.issue.unwrap_or(0);
        if let (Some(now), Some((before, s, c, g))) = (own, self.last_escalation) {
            // The same failure on two issues in a row is the environment's: halt, after
            // lifting the first's quarantine when it rested on that failure alone.
            if before != issue && now == (s, c, g) {
                if self.last_escalation_alone {
                    self.releasing = Some(before);
                } else {
                    self.halted = true;
                }
                return;
            }
        }
        self.last_escalation = own.map(|(s, c, g)| (issue, s, c, g));
        self.last_escalation_alone =
            own.is_some_and(|(s, c, g)| self.how[s.index()].iter().all(|&h| h == (c, g)));
        self.streak += 1;
        if let Some(i) = self.issue {
            self.escalated.insert(i);
        }
        if self.streak >= self.l.max_consecutive_escalations {
            self.halted = true;
        }
    }

    fn apply(&mut self, ev: &Event, _now: Option<Step>) {
        if self.halted {
            return;
        }
        if let Some(first) = self.releasing {
            match ev {
                Event::TrackerUpdated => {
                    self.escalated.remove(&first);
                    self.streak -= 1;
                    self.halted = true;
                }
                Event::TrackerWriteFailed => self.halted = true,
                _ => {}
            }
            return;
        }
        let out = self.out.take();
        if let Event::PreconditionsOk { step } = *ev {
            self.out = Some(step);
            self.ci_pending = 0;
            self.ci_waiting = false;
        }
        // A network wait on the attempt's own call issues the same attempt again, and CI
        // pending is looked at again: the attempt stays out.
        if matches!(
            ev,
            Event::NetworkFailed | Event::WaitOver | Event::CiPending { .. }
        ) {
            self.out = out;
        }
        if *ev == Event::WaitOver {
            self.ci_waiting = false;
        }
        // A restart while an attempt is out: that attempt failed with the runner, unless the
        // runner was waiting for CI's next look (it waits again).
        let interrupted;
        let ev = match (ev, out) {
            (Event::Start, Some(_)) if self.ci_waiting => {
                self.out = out;
                ev
            }
            (Event::CiPending { .. }, Some(Step::MonitorCi)) => {
                if self.ci_pending < ci_waits_allowed(&self.l) {
                    self.ci_pending += 1;
                    self.ci_waiting = true;
                    return;
                }
                // Pending through the step's time limit: the attempt failed.
                self.out = None;
                interrupted = Event::StepFailed {
                    step: Step::MonitorCi,
                    class: FailureClass::Timeout,
                    signature: Signature::CI_STILL_PENDING,
                    usage: Usage::default(),
                    wait_hint_secs: None,
                };
                &interrupted
            }
            (Event::Start, Some(step)) => {
                interrupted = Event::StepFailed {
                    step,
                    class: FailureClass::Killed,
                    signature: Signature::INTERRUPTED,
                    usage: Usage::default(),
                    wait_hint_secs: None,
                };
                &interrupted
            }
            _ => ev,
        };
        match *ev {
            Event::IssueSelected { issue } => {
                if self.escalated.contains(&issue) {
                    self.halted = true;
                    return;
                }
                self.issue = Some(issue);
                self.attempts = [0; Step::COUNT];
                self.bounces = 0;
                self.same = [(0, 0); Step::COUNT];
                self.how = Default::default();
            }
            Event::NoIssues | Event::AllEscalated | Event::AllBlocked => self.halted = true,
            Event::PreconditionFailed { .. } => {
                self.bounces += 1;
                if self.bounces > self.l.max_bounce_retries {
                    self.escalate(None);
                }
            }
            Event::StepSucceeded { step, .. } => {
                self.waits = 0;
                self.phase[step.index()] = 0;
                self.same[step.index()] = (0, 0);
                if step == Step::Merge {
                    self.streak = 0;
                    self.last_escalation = None;
                }
            }
            Event::AlreadyDone { step: Step::Merge } => {
                self.streak = 0;
                self.last_escalation = None;
            }
            Event::StepFailed {
                step,
                class,
                signature,
                ..
            } => {
                let i = step.index();
                match class.disposition() {
                    Disposition::HaltEnvironment => {
                        self.halted = true;
                        return;
                    }
                    Disposition::Backoff | Disposition::WaitForQuota => {
                        self.waits += 1;
                        if self.waits > self.l.max_rate_limit_waits {
                            self.halted = true;
                        }
                        return;
                    }
                    _ => {}
                }
                self.waits = 0;
                self.attempts[i] += 1;
                self.phase[i] += 1;
                self.how[i].push((class, signature.0));
                self.same[i] = if self.same[i].0 == signature.0 {
                    (signature.0, self.same[i].1 + 1)
                } else {
                    (signature.0, 1)
                };
                let f = self.l.max_consecutive_failures[i];
                if f > 0 && self.phase[i] >= f {
                    self.halted = true;
                    return;
                }
                let s = self.l.max_consecutive_same_failure;
                let spent = self.attempts[i] >= self.l.max_retries_per_step
                    || (s > 0 && self.same[i].1 >= s);
                if class == FailureClass::Killed && spent {
                    // Deaths of the runner are not the issue's failures.
                    self.halted = true;
                    return;
                }
                if class.disposition() == Disposition::EscalateNow || spent {
                    self.escalate(Some((step, class, signature.0)));
                }
            }
            _ => {}
        }
    }
}

#[test]
fn an_unavailable_network_halts_from_any_state_without_spending_an_attempt() {
    let l = Limits::default();
    // Reach each step state, then report the network down.
    for steps_done in 0..Step::COUNT {
        let mut core = Core::new(l.clone(), Mode::Continuous);
        core.handle(&Event::Start);
        core.handle(&Event::IssueSelected { issue: 1 });
        for step in Step::ALL.into_iter().take(steps_done) {
            core.handle(&Event::PreconditionsOk { step });
            core.handle(&Event::StepSucceeded {
                step,
                usage: Usage::default(),
            });
        }
        let before = core.runner().attempts;
        let fx = core.handle(&Event::NetworkUnavailable).to_vec();
        assert_eq!(fx.last(), Some(&Effect::Exit { code: 1 }), "{fx:?}");
        assert!(fx.contains(&Effect::Halt(HaltReason::Network)), "{fx:?}");
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::MarkEscalated { .. })),
            "no issue blamed"
        );
        assert!(core.is_terminal());
        assert_eq!(core.runner().attempts, before, "no attempt spent");
    }
    let mut selecting = Core::new(l, Mode::Continuous);
    selecting.handle(&Event::Start);
    let fx = selecting.handle(&Event::NetworkUnavailable).to_vec();
    assert!(fx.contains(&Effect::Halt(HaltReason::Network)), "{fx:?}");
}
