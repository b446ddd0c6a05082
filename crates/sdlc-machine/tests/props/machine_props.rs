//! Property tests of the pure machine (docs/counters-and-bounds.md). Each property names the mutation it kills:
//!
//! | property | mutation it catches |
//! |---|---|
//! | `scripts_terminate_within_the_bound` | a counter that never reaches its limit (`attempts`, `bounces`, `consecutive_escalations`, `wait_streak` or `step_network_waits` not incremented; `>=` turned into `>`) — the run exceeds the bound or never exits |
//! | `reference_model_agrees_after_every_event` | any counter incremented or reset at the wrong site (e.g. attempts reset on a bounce, phase streak not reset on success, bounces not reset by a new cycle); with claims and the merge turn: a request (e.g. a pause) not held back for a renewal, a lost claim letting the held-back request go, an issue held elsewhere not left out, a turn taken after a pause merging without the checks again, a restart before a renewal's answer counting the run held back for it as a killed attempt, the checks after a lost race bouncing instead of failing the attempt |
//! | `invariants_hold` → escalation streak | halting one escalation late or early; a merge not resetting the streak |
//! | `invariants_hold` → bounce oracle | `bounces += 1` removed (runs of a step per cycle exceed 1 + bounces) |
//! | `invariants_hold` → escalated never selected | the escalated set not consulted on selection |
//! | `invariants_hold` → halt effects | a halt that resets, commits or checks out |
//! | `halted_is_absorbing` | any handler of `Halted`/`Finished` that transitions or emits work |
//! | `same_events_same_effects` | any nondeterminism (iteration order, hidden state) |

use crate::common;
#[path = "machine_props/model.rs"]
mod model;
use crate::strategies;

use common::{drive, drive_claiming, ClaimReply, Reply, Trace};
use model::Model;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_machine::fleet::Contention;
use sdlc_machine::machine::{bounds, Core, Effect, Event, HaltReason, Limits, Mode, Notice, Usage};
use sdlc_machine::step::Step;
use std::collections::{BTreeSet, VecDeque};
use strategies::{any_event, limits, merge_queue, queues, Script};

fn run(limits: &Limits, backlog: u32, script: &Script) -> (Core, Trace) {
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let mut qs: Vec<VecDeque<Reply>> = script
        .steps
        .iter()
        .map(|q| q.iter().copied().collect())
        .collect();
    let mut claims: VecDeque<ClaimReply> = script.claims.iter().copied().collect();
    let next_claim = || claims.pop_front().unwrap_or(ClaimReply::Yes);
    let trace = drive_claiming(&mut core, backlog, 100_000, next_claim, |step, running| {
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
        qs.steps[Step::Merge.index()] = merge;
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
                Effect::Pause { millis, .. } => {
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
                    Effect::RecordMerged { issue, .. } => {
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
        for ev in &a.events { effects.extend_from_slice(replay.handle(ev).effects()); }
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

    /// The naive model agrees with the machine after every event, with claims and a merge
    /// turn as the limits switch them on, and the world answering claims held or lost,
    /// renewals that cannot be written, a busy turn and lost push races. Beside the counters it
    /// checks the claim rules (docs/scaling.md, "Claims"): no cycle starts unclaimed, every
    /// request that works on the issue or waits comes out only through a renewal as long as it
    /// (exactly one request, nothing else, on the renewal's answer), a lost claim stops at
    /// once, a refused claim or an issue held elsewhere offered again halts.
    #[test]
    fn reference_model_agrees_after_every_event(
        l in limits(),
        backlog in 1u32..4,
        mut qs in queues(),
        merge in merge_queue(),
    ) {
        qs.steps[Step::Merge.index()] = merge;
        let (_core, trace) = run(&l, backlog, &qs);
        let mut core = Core::new(l.clone(), Mode::Continuous);
        let mut model = Model::new(&l);
        let mut asked: Option<Effect> = None;
        for ev in &trace.events {
            let renewal = match asked {
                Some(Effect::RenewClaim { issue, secs, .. }) if matches!(
                    ev,
                    Event::ClaimRenewed | Event::TrackerWriteFailed | Event::NetworkFailed
                ) => Some((issue, secs)),
                _ => None,
            };
            let reply = core.handle(ev);
            let effects = reply.to_vec();
            let request = common::request(reply);
            model.apply(ev, asked.as_ref());
            if let Event::ClaimLost { issue } = *ev {
                prop_assert_eq!(request, Some(Effect::Exit { code: 0 }), "a lost claim stops the run: {:?}", effects);
                let told = Effect::Notify(Notice::ClaimLost { issue });
                prop_assert!(effects.contains(&told), "{:?}", effects);
            }
            let r = core.runner();
            prop_assert_eq!(r.attempts, model.attempts, "attempts after {:?}", ev);
            prop_assert_eq!(r.bounces, model.bounces, "bounces after {:?}", ev);
            prop_assert_eq!(r.consecutive_escalations, model.streak, "streak after {:?}", ev);
            prop_assert_eq!(&r.escalated, &model.escalated, "escalated after {:?}", ev);
            prop_assert_eq!(r.phase_failures, model.phase, "phase streaks after {:?}", ev);
            prop_assert_eq!(r.wait_streak, model.waits, "wait streak after {:?}", ev);
            prop_assert_eq!(r.step_network_waits, model.step_net_waits, "network waits of steps after {:?}", ev);
            prop_assert_eq!(r.contention.lost(), model.races, "races lost after {:?}", ev);
            prop_assert_eq!(&r.held_elsewhere, &model.held, "issues held elsewhere after {:?}", ev);
            if model.halted || model.stopped {
                asked = request;
                continue;
            }
            prop_assert_eq!(r.issue, model.issue, "the issue under way after {:?}", ev);
            if let Some((issue, secs)) = renewal {
                // The renewal's answer lets exactly the request held back go, renewed for it.
                prop_assert_eq!(effects.len(), 1, "{:?} released {:?}", ev, effects);
                let released = request.unwrap_or(Effect::Exit { code: 9 });
                prop_assert_eq!(common::renewal_due(&l, &released), Some(secs), "{:?} held back for {}s", released, secs);
                prop_assert_eq!(model.issue, Some(issue));
            } else if let Some(req) = request {
                prop_assert!(
                    !(l.claims && model.issue.is_some()) || common::renewal_due(&l, &req).is_none(),
                    "{:?} issued after {:?} without renewing the claim on {:?}", req, ev, model.issue
                );
            }
            match request {
                Some(renewal @ Effect::RenewClaim { issue, secs, .. }) => {
                    prop_assert!(l.claims && model.issue == Some(issue), "renewed {} on {:?}", issue, model.issue);
                    // The terms are the lease's: a lease past the wait, no write before a step
                    // while half the lease is left.
                    prop_assert_eq!(renewal, common::renewal_for(&l, issue, secs));
                }
                Some(Effect::ClaimIssue { issue }) => {
                    prop_assert!(l.claims && model.claiming == Some(issue), "claimed {}", issue);
                }
                _ => {}
            }
            asked = request;
        }
        // The model ends the session where the contract does (it halts on the decision, the
        // machine once it is recorded, so only the end is compared).
        if !model.stopped {
            prop_assert_eq!(core.is_terminal(), model.halted, "ended: {:?}", trace.effects.last());
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
