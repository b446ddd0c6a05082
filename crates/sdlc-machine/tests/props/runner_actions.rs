//! Properties of the runner's own actions under the machine: tracker writes, network waits, a
//! person taking an issue back, the workspace, and failures that are the environment's.
//!
//! The world here is hostile: the tracker may offer any issue, including ones already merged,
//! may refuse writes, and any call may fail on the network. Whatever it does, the session ends,
//! no issue is merged twice, a merged or withdrawn issue never starts a cycle again, and network
//! waits follow their own schedule and bound.

use proptest::prelude::*;
use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{
    bounds, Commit, Core, Effect, Event, HaltReason, Limits, Mode, Notice, State, Usage, WaitReason,
};
use sdlc_machine::step::Step;
use std::collections::BTreeMap;

fn limits() -> impl Strategy<Value = Limits> {
    (1u32..=3, 0u32..=2, 1u32..=3, 0u32..=4, any::<bool>()).prop_map(|(r, b, e, net, simplify)| {
        Limits {
            max_retries_per_step: r,
            max_bounce_retries: b,
            max_consecutive_escalations: e,
            max_network_waits: net,
            simplify_enabled: simplify,
            ..Limits::default()
        }
    })
}

/// What the hostile world answers, drawn from a tape; 0 is the cooperative answer.
struct World {
    tape: Vec<u8>,
    at: usize,
    backlog: u32,
}

impl World {
    fn pick(&mut self, n: u8) -> u8 {
        let c = self.tape.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        c % n
    }

    fn answer(&mut self, request: Effect) -> Event {
        let network = self.pick(6) == 5;
        match request {
            Effect::SelectIssue if network => Event::NetworkFailed,
            // Any issue of the backlog, merged or not: a tracker that was never told.
            Effect::SelectIssue => Event::IssueSelected {
                issue: 1 + u32::from(self.pick(self.backlog as u8)),
            },
            Effect::CheckPreconditions { .. } if network => Event::NetworkFailed,
            Effect::CheckPreconditions { step } => match self.pick(12) {
                11 => Event::IssueWithdrawn { issue: 0 },
                _ => Event::PreconditionsOk { step },
            },
            Effect::RunStep { .. } if network => Event::NetworkFailed,
            Effect::RunStep { step, .. } => match self.pick(4) {
                3 => Event::StepFailed {
                    step,
                    class: FailureClass::TestAssertion,
                    signature: Signature(u64::from(self.pick(2))),
                    usage: Usage::default(),
                    wait_hint_secs: None,
                },
                _ => Event::StepSucceeded {
                    step,
                    usage: Usage::default(),
                },
            },
            Effect::RecordMerged { .. }
            | Effect::MarkEscalated { .. }
            | Effect::Unquarantine { .. }
                if network =>
            {
                Event::NetworkFailed
            }
            Effect::RecordMerged { .. }
            | Effect::MarkEscalated { .. }
            | Effect::Unquarantine { .. } => match self.pick(8) {
                7 => Event::TrackerWriteFailed,
                _ => Event::TrackerUpdated,
            },
            Effect::ClaimIssue { .. } if network => Event::NetworkFailed,
            Effect::ClaimIssue { issue } => match self.pick(6) {
                5 => Event::TrackerWriteFailed,
                4 => Event::ClaimHeld { issue },
                _ => Event::ClaimTaken { issue },
            },
            Effect::RenewClaim { issue, .. } => match self.pick(12) {
                11 => Event::ClaimLost { issue },
                10 => Event::TrackerWriteFailed,
                9 => Event::NetworkFailed,
                _ => Event::ClaimRenewed,
            },
            Effect::Wait { .. } => Event::WaitOver,
            Effect::AskDecision { .. } => Event::DecisionTimedOut,
            other => unreachable!("not a request: {other:?}"),
        }
    }
}

impl World {
    /// [`World::answer`], and the requests of monitorCI's looks and the merge turn: CI may be
    /// pending, a merge may lose its push race, the turn is the runner's.
    fn answer_all(&mut self, request: Effect) -> Event {
        match request {
            Effect::RunStep {
                step: Step::MonitorCi,
                ..
            }
            | Effect::LookAtCi { .. }
                if self.pick(3) == 0 =>
            {
                Event::CiPending {
                    usage: Usage::default(),
                    commit: None,
                }
            }
            Effect::LookAtCi { .. } => Event::StepSucceeded {
                step: Step::MonitorCi,
                usage: Usage::default(),
            },
            Effect::RunStep {
                step: Step::Merge, ..
            } if self.pick(3) == 0 => Event::MergeRaceLost {
                class: FailureClass::Unknown,
                signature: Signature(3),
                usage: Usage::default(),
            },
            Effect::TakeMergeTurn { .. } => Event::MergeTurnTaken,
            Effect::Pause { .. } => Event::WaitOver,
            other => self.answer(other),
        }
    }
}

/// Runs a session against the world; returns every batch of effects with its event.
fn session(l: &Limits, world: &mut World) -> Vec<(Event, Vec<Effect>)> {
    let mut core = Core::new(l.clone(), Mode::Continuous);
    let mut event = Event::Start;
    let mut log = Vec::new();
    for _ in 0..20_000 {
        if let Event::IssueWithdrawn { .. } = event {
            event = Event::IssueWithdrawn {
                issue: core.runner().issue.unwrap_or(0),
            };
        }
        let effects = core.handle(&event).to_vec();
        let request = effects.iter().copied().find(Effect::is_request);
        log.push((event.clone(), effects));
        match request {
            Some(Effect::Exit { .. }) => return log,
            Some(r) => event = world.answer(r),
            None => panic!("no request after {event:?} in {:?}", core.state()),
        }
    }
    panic!("the session did not end within 20000 events");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Merged is final: no issue is merged twice nor started again once merged or withdrawn,
    /// whatever the tracker offers; a tracker that cannot be written halts the session.
    #[test]
    fn a_hostile_tracker_never_makes_the_runner_repeat_work(
        l in limits(),
        backlog in 1u32..4,
        tape in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut world = World { tape, at: 0, backlog };
        let log = session(&l, &mut world);
        let mut merged = BTreeMap::new();
        let mut withdrawn = Vec::new();
        let mut agent_runs_since_merge = 0u64;
        let bound = bounds::compute(&l);
        for (event, effects) in &log {
            if let Event::IssueWithdrawn { issue } = event {
                withdrawn.push(*issue);
            }
            for e in effects {
                match e {
                    Effect::RecordMerged { issue, .. } => {
                        let n = merged.entry(*issue).or_insert(0u32);
                        // Issued again only after a network wait or a tracker write retry,
                        // never for a second merge: the merge counter says so.
                        *n += 1;
                    }
                    Effect::Notify(Notice::CycleStarted { issue }) => {
                        prop_assert!(!merged.contains_key(issue), "merged #{issue} started again");
                        prop_assert!(!withdrawn.contains(issue), "withdrawn #{issue} started again");
                    }
                    Effect::RunStep { .. } => agent_runs_since_merge += 1,
                    _ => {}
                }
            }
            if effects.iter().any(|e| matches!(e, Effect::RecordMerged { .. }))
                && !matches!(event, Event::WaitOver | Event::Start)
            {
                agent_runs_since_merge = 0;
            }
            prop_assert!(agent_runs_since_merge <= bound.between_merges + bound.between_merges * u64::from(l.max_network_waits));
        }
        let (last_event, last) = log.last().expect("a session has batches");
        if *last_event == Event::TrackerWriteFailed {
            prop_assert!(
                last.iter().any(|e| matches!(e, Effect::Halt(HaltReason::TrackerWrite { .. }))),
                "a tracker write failure must halt: {last:?}"
            );
        }
        // Each merge is counted once, however often its recording was retried.
        let merges = log
            .iter()
            .filter(|(ev, fx)| {
                fx.iter().any(|e| matches!(e, Effect::RecordMerged { .. }))
                    && !matches!(ev, Event::WaitOver | Event::Start)
            })
            .count();
        prop_assert_eq!(merges, merged.len());
    }

    /// Claims, where runners share a tracker: no cycle starts on an issue this runner did not
    /// claim; every request that works on the issue is issued only once its claim was renewed
    /// (or could not be written); a claim lost to another runner stops the run at once; an
    /// issue held elsewhere is skipped; a claim the tracker refuses halts. The session ends
    /// whatever the tracker and the other runners do.
    #[test]
    fn claims_are_taken_before_work_and_renewed_before_every_request(
        l in limits(),
        backlog in 1u32..5,
        tape in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let l = Limits { claims: true, ..l };
        let mut world = World { tape, at: 0, backlog };
        let log = session(&l, &mut world);
        let mut asked: Option<Effect> = None;
        for (event, effects) in &log {
            let request = effects.iter().copied().find(Effect::is_request);
            if let Event::ClaimLost { issue } = event {
                prop_assert_eq!(
                    effects.as_slice().last(),
                    Some(&Effect::Exit { code: 0 }),
                    "a lost claim stops the run: {:?}", effects
                );
                let told = Effect::Notify(Notice::ClaimLost { issue: *issue });
                prop_assert!(effects.contains(&told), "{:?}", effects);
            }
            for e in effects {
                if let Effect::Notify(Notice::CycleStarted { issue }) = e {
                    prop_assert_eq!(event, &Event::ClaimTaken { issue: *issue }, "#{} started unclaimed", issue);
                }
            }
            // The issue the request works on (`None`: any; a precondition check names none).
            let works_on = match request {
                Some(
                    Effect::RunStep { issue, .. }
                    | Effect::LookAtCi { issue, .. }
                    | Effect::TakeMergeTurn { issue },
                ) => Some(Some(issue)),
                Some(Effect::CheckPreconditions { .. }) => Some(None),
                _ => None,
            };
            if let Some(issue) = works_on {
                let renewed = matches!(
                    asked,
                    Some(Effect::RenewClaim { issue: i, .. }) if issue.is_none_or(|n| n == i)
                );
                prop_assert!(
                    renewed
                        && matches!(
                            event,
                            Event::ClaimRenewed | Event::TrackerWriteFailed | Event::NetworkFailed
                        ),
                    "{:?} issued after {:?} answered {:?}",
                    request,
                    asked,
                    event
                );
            }
            if let Event::ClaimHeld { .. } = event {
                prop_assert_eq!(request, Some(Effect::SelectIssue));
            }
            if matches!(asked, Some(Effect::ClaimIssue { .. })) && *event == Event::TrackerWriteFailed {
                prop_assert!(
                    effects.iter().any(|e| matches!(e, Effect::Halt(HaltReason::ClaimRefused { .. }))),
                    "a refused claim halts on the tracker: {:?}", effects
                );
            }
            asked = request;
        }
    }

    /// A restart between a renewal and its answer (the runner killed while the claim store
    /// was being written): whatever request was held back, no attempt is counted, since none
    /// started. A step's run or a look at CI held back is kept: the restart asks for the same
    /// renewal again, and its answer lets out the very request held back, the same attempt
    /// number; any other request the state asks for anew, again behind a renewal.
    #[test]
    fn a_restart_during_a_renewal_counts_no_attempt_and_runs_the_same_one(
        l in limits(),
        turn in prop::option::of(1u64..3_000),
        backlog in 1u32..4,
        tape in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let l = Limits { claims: true, merge_turn_wait_ms: turn, ..l };
        let mut world = World { tape, at: 0, backlog };
        let mut core = Core::new(l.clone(), Mode::Continuous);
        let mut recorded = Vec::new();
        let mut event = Event::Start;
        // The request a restart kept behind its renewal, until the renewal is answered.
        let mut kept: Option<Effect> = None;
        for _ in 0..20_000 {
            if let Event::IssueWithdrawn { .. } = event {
                event = Event::IssueWithdrawn { issue: core.runner().issue.unwrap_or(0) };
            }
            let effects = core.handle(&event).to_vec();
            recorded.push(event.clone());
            let request = effects.iter().copied().find(Effect::is_request);
            if let Some(held) = kept.take() {
                if matches!(event, Event::ClaimRenewed | Event::TrackerWriteFailed | Event::NetworkFailed) {
                    prop_assert_eq!(&effects, &vec![held], "after {:?}", event);
                }
            }
            event = match request {
                Some(Effect::Exit { .. }) => break,
                Some(renewal @ Effect::RenewClaim { .. }) if world.pick(3) == 0 => {
                    // Killed before the answer: a new runner rebuilt from the journal.
                    let held = core.held_back();
                    let before = core.runner().clone();
                    core = Core::new(l.clone(), Mode::Continuous);
                    for e in &recorded {
                        core.handle(e);
                    }
                    let again = core.handle(&Event::Start).to_vec();
                    recorded.push(Event::Start);
                    let r = core.runner();
                    prop_assert_eq!(r.attempts, before.attempts, "a restart counted an attempt: {:?}", again);
                    prop_assert_eq!(r.phase_failures, before.phase_failures);
                    prop_assert_eq!(r.same_failure, before.same_failure);
                    prop_assert_eq!(r.repairs, before.repairs);
                    if let Some(run @ (Effect::RunStep { .. } | Effect::LookAtCi { .. })) = held {
                        prop_assert_eq!(&again, &vec![renewal], "held back {:?}", run);
                        prop_assert_eq!(core.held_back(), Some(run));
                        kept = Some(run);
                    }
                    match again.iter().copied().find(Effect::is_request) {
                        Some(Effect::Exit { .. }) => break,
                        Some(next) => world.answer_all(next),
                        None => panic!("no request after a restart in {:?}", core.state()),
                    }
                }
                Some(r) => world.answer_all(r),
                None => panic!("no request after {event:?} in {:?}", core.state()),
            };
        }
    }

    /// Network waits: the n-th wait in a row on one call lasts `2 · 2^(n-1)` seconds (capped),
    /// at most `max_network_waits` of them, then the session halts as NETWORK; never an attempt
    /// spent, never an issue blamed.
    #[test]
    fn network_waits_follow_their_own_schedule_and_bound(l in limits(), step_at in 0usize..Step::COUNT) {
        let mut core = Core::new(l.clone(), Mode::Continuous);
        core.handle(&Event::Start);
        core.handle(&Event::IssueSelected { issue: 1 });
        let steps: Vec<Step> = l.enabled_steps().collect();
        let target = steps[step_at % steps.len()];
        for step in steps.iter().copied().take_while(|s| *s != target) {
            core.handle(&Event::PreconditionsOk { step });
            core.handle(&Event::StepSucceeded { step, usage: Usage::default() });
        }
        let attempts = core.runner().attempts;
        let mut waits = Vec::new();
        loop {
            let fx = core.handle(&Event::NetworkFailed).to_vec();
            let blamed = fx
                .iter()
                .any(|e| matches!(e, Effect::MarkEscalated { .. } | Effect::RunStep { .. }));
            prop_assert!(!blamed, "a network failure blamed the issue or ran it: {:?}", fx);
            if let Some(Effect::Wait { seconds, .. }) = fx.iter().find(|e| matches!(e, Effect::Wait { .. })) {
                waits.push(*seconds);
                // The same request again after the wait.
                let again = core.handle(&Event::WaitOver).to_vec();
                prop_assert_eq!(again, vec![Effect::CheckPreconditions { step: target }]);
            } else {
                prop_assert!(fx.contains(&Effect::Halt(HaltReason::Network)), "{fx:?}");
                break;
            }
        }
        prop_assert_eq!(waits.len() as u32, l.max_network_waits);
        for (n, s) in waits.iter().enumerate() {
            let expected = (2u64 << n).min(u64::from(l.backoff_max_secs));
            prop_assert_eq!(*s, expected);
        }
        prop_assert_eq!(core.runner().attempts, attempts, "no attempt spent");
    }
}

fn at_merge(l: &Limits) -> Core {
    let mut core = Core::new(l.clone(), Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 7 });
    for step in l.enabled_steps() {
        core.handle(&Event::PreconditionsOk { step });
        core.handle(&Event::StepSucceeded {
            step,
            usage: Usage::default(),
        });
    }
    core
}

#[test]
fn a_tracker_that_cannot_record_a_merge_halts_naming_the_issue_and_the_merge_stays_final() {
    let l = Limits::default();
    let mut core = at_merge(&l);
    assert_eq!(*core.state(), State::RecordingMerge { issue: 7 });
    assert!(core.runner().merged.contains(&7));
    let fx = core.handle(&Event::TrackerWriteFailed).to_vec();
    assert!(
        fx.contains(&Effect::Halt(HaltReason::TrackerWrite {
            issue: 7,
            merged: true
        })),
        "{fx:?}"
    );
    assert_eq!(fx.last(), Some(&Effect::Exit { code: 1 }));
    assert_eq!(
        HaltReason::TrackerWrite {
            issue: 7,
            merged: true
        }
        .headline(),
        "ENVIRONMENT FAILURE: TRACKER"
    );
}

/// GitHub closes a merged issue from its PR's `Closes #N` a second or two after the merge:
/// the machine looks, waits on its own bounded schedule (2, 4, 8 s), looks again, and only
/// the look after the last wait lets the runner close it itself. A restart in a wait waits
/// again; an issue the tracker closed meanwhile ends the wait at once.
#[test]
fn a_merged_issue_is_left_to_the_trackers_own_close_for_a_bounded_wait() {
    let l = Limits {
        tracker_close_waits: 3,
        ..Limits::default()
    };
    let mut core = at_merge(&l);
    assert_eq!(
        core.runner().outstanding.map(|o| o.1),
        Some(Effect::RecordMerged {
            issue: 7,
            wait: true
        })
    );
    let mut waited = Vec::new();
    for _ in 0..3 {
        let fx = core.handle(&Event::IssueStillOpen).to_vec();
        let Some(Effect::Wait { seconds, reason }) = fx.last().copied() else {
            panic!("a wait: {fx:?}");
        };
        assert_eq!(reason, Some(WaitReason::TrackerClose));
        assert!(!fx
            .iter()
            .any(|e| matches!(e, Effect::Notify(Notice::Merged { .. }))));
        waited.push(seconds);
        assert_eq!(*core.state(), State::WaitingForClose { issue: 7, seconds });
        // A restart in the wait waits again, in full.
        let again = core.handle(&Event::Start).to_vec();
        assert_eq!(again, vec![Effect::Wait { seconds, reason }]);
        core.handle(&Event::WaitOver);
    }
    assert_eq!(waited, vec![2, 4, 8]);
    assert_eq!(l.close_waited_secs(), 14);
    // The last look closes it: a still-open answer to it is no answer.
    assert_eq!(
        core.runner().outstanding.map(|o| o.1),
        Some(Effect::RecordMerged {
            issue: 7,
            wait: false
        })
    );
    assert!(core.handle(&Event::IssueStillOpen).is_empty());
    let fx = core.handle(&Event::TrackerUpdated).to_vec();
    assert!(
        fx.contains(&Effect::Notify(Notice::Merged { issue: 7 })),
        "{fx:?}"
    );
    assert_eq!(fx.last(), Some(&Effect::SelectIssue));

    // Closed by the tracker at the first look: no wait at all.
    let mut core = at_merge(&l);
    let fx = core.handle(&Event::TrackerUpdated).to_vec();
    assert_eq!(fx.last(), Some(&Effect::SelectIssue), "{fx:?}");
    assert!(!fx.iter().any(|e| matches!(e, Effect::Wait { .. })));

    // A tracker that closes nothing itself (no waits): the runner closes it at once.
    let mut core = at_merge(&Limits::default());
    assert_eq!(
        core.runner().outstanding.map(|o| o.1),
        Some(Effect::RecordMerged {
            issue: 7,
            wait: false
        })
    );
    assert!(core.handle(&Event::IssueStillOpen).is_empty());
}

#[test]
fn a_tracker_offering_a_merged_issue_again_halts_before_any_work() {
    let l = Limits::default();
    let mut core = at_merge(&l);
    let fx = core.handle(&Event::TrackerUpdated).to_vec();
    assert!(fx.contains(&Effect::SelectIssue), "{fx:?}");
    let fx = core.handle(&Event::IssueSelected { issue: 7 }).to_vec();
    assert!(
        fx.contains(&Effect::Halt(HaltReason::TrackerStale { issue: 7 })),
        "{fx:?}"
    );
    assert!(!fx
        .iter()
        .any(|e| matches!(e, Effect::CheckPreconditions { .. })));
}

#[test]
fn a_person_withdrawing_the_issue_drops_the_cycle_without_blame() {
    let l = Limits::default();
    let mut core = Core::new(l.clone(), Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 3 });
    core.handle(&Event::PreconditionsOk {
        step: Step::StartCycle,
    });
    core.handle(&Event::StepSucceeded {
        step: Step::StartCycle,
        usage: Usage::default(),
    });
    let fx = core.handle(&Event::IssueWithdrawn { issue: 3 }).to_vec();
    assert_eq!(
        fx,
        vec![
            Effect::Cleanup,
            Effect::CheckoutMain,
            Effect::Notify(Notice::Withdrawn { issue: 3 }),
            Effect::ResetCycle,
            Effect::SelectIssue
        ]
    );
    assert!(core.runner().escalated.is_empty());
    assert_eq!(core.runner().consecutive_escalations, 0);
    // Offered again by a stale tracker: the person's decision stands.
    let fx = core.handle(&Event::IssueSelected { issue: 3 }).to_vec();
    assert!(fx.contains(&Effect::Halt(HaltReason::TrackerStale { issue: 3 })));
}

#[test]
fn an_unfit_workspace_halts_as_the_environment_without_blaming_the_issue() {
    let l = Limits::default();
    let mut core = Core::new(l, Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 3 });
    let fx = core
        .handle(&Event::WorkspaceUnfit {
            step: Step::StartCycle,
        })
        .to_vec();
    assert!(fx.contains(&Effect::Halt(HaltReason::Workspace {
        step: Step::StartCycle
    })));
    assert!(!fx.iter().any(|e| matches!(e, Effect::MarkEscalated { .. })));
}

/// A failed attempt of startCycle with signature `sig` (after its preconditions held).
fn fail_start_cycle(core: &mut Core, sig: u64) -> Vec<Effect> {
    core.handle(&Event::PreconditionsOk {
        step: Step::StartCycle,
    });
    core.handle(&Event::StepFailed {
        step: Step::StartCycle,
        class: FailureClass::PostCheck,
        signature: Signature(sig),
        usage: Usage::default(),
        wait_hint_secs: None,
    })
    .to_vec()
}

/// Fails startCycle with `sigs` in turn, then with 42, until the cycle ends (the batch that
/// asks the tracker or halts).
fn until_the_cycle_ends(core: &mut Core, sigs: &[u64]) -> Vec<Effect> {
    for n in 0..10 {
        let fx = fail_start_cycle(core, sigs.get(n).copied().unwrap_or(42));
        if fx.iter().any(|e| {
            matches!(
                e,
                Effect::MarkEscalated { .. } | Effect::Unquarantine { .. } | Effect::Halt(_)
            )
        }) {
            return fx;
        }
    }
    panic!("the cycle did not end");
}

/// Issue 1 escalated by startCycle's failures `first` (then 42), issue 2 selected: the core
/// before issue 2's first attempt.
fn first_issue_escalated(first: &[u64]) -> Core {
    let l = Limits {
        max_consecutive_escalations: 3,
        ..Limits::default()
    };
    let mut core = Core::new(l, Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 1 });
    let last = until_the_cycle_ends(&mut core, first);
    assert!(
        last.contains(&Effect::MarkEscalated { issue: 1 }),
        "{last:?}"
    );
    core.handle(&Event::TrackerUpdated);
    core.handle(&Event::IssueSelected { issue: 2 });
    core
}

const SAME_ACROSS: HaltReason = HaltReason::SameFailureAcrossIssues {
    step: Step::StartCycle,
    class: FailureClass::PostCheck,
};

/// Two issues escalated in a row by the same failure of the same step: the second is not
/// quarantined, the first's quarantine is lifted in the tracker (it rested on that failure
/// alone), and the session halts as the environment's.
#[test]
fn the_same_failure_on_two_issues_in_a_row_is_the_environments_and_releases_the_first() {
    let mut core = first_issue_escalated(&[]);
    let last = until_the_cycle_ends(&mut core, &[]);
    assert_eq!(
        last.iter().filter(|e| e.is_request()).collect::<Vec<_>>(),
        [&Effect::Unquarantine { issue: 1 }],
        "{last:?}"
    );
    assert!(!last.contains(&Effect::MarkEscalated { issue: 2 }));
    assert!(
        !last.iter().any(|e| matches!(e, Effect::Halt(_))),
        "{last:?}"
    );
    assert_eq!(core.state().name(), "Releasing");
    // Still quarantined until the tracker says the release is written.
    assert!(core.runner().escalated.contains(&1));
    let fx = core.handle(&Event::TrackerUpdated).to_vec();
    assert!(
        fx.contains(&Effect::Notify(Notice::Released {
            issue: 1,
            second: 2,
            step: Step::StartCycle,
            class: FailureClass::PostCheck,
        })),
        "{fx:?}"
    );
    assert!(fx.contains(&Effect::Halt(SAME_ACROSS)), "{fx:?}");
    assert_eq!(fx.last(), Some(&Effect::Exit { code: 1 }));
    assert!(core.runner().escalated.is_empty(), "{:?}", core.runner());
    assert_eq!(core.runner().consecutive_escalations, 0);
    assert!(core.is_terminal());
}

/// The first issue's step failed another way too before the shared failure escalated it: its
/// quarantine was (also) its own, so it stays; the second is still spared.
#[test]
fn a_first_issue_that_also_failed_its_own_way_stays_quarantined() {
    let mut core = first_issue_escalated(&[7]);
    let last = until_the_cycle_ends(&mut core, &[]);
    assert!(last.contains(&Effect::Halt(SAME_ACROSS)), "{last:?}");
    assert!(!last.iter().any(|e| matches!(
        e,
        Effect::Unquarantine { .. } | Effect::MarkEscalated { .. }
    )));
    assert_eq!(
        core.runner().escalated.iter().copied().collect::<Vec<_>>(),
        [1]
    );
}

/// Only the first issue's failures count: the second failing another way first still shares
/// the failure that ended both, and the first is released.
#[test]
fn the_second_issues_other_failures_do_not_keep_the_first_quarantined() {
    let mut core = first_issue_escalated(&[]);
    let last = until_the_cycle_ends(&mut core, &[9]);
    assert!(
        last.contains(&Effect::Unquarantine { issue: 1 }),
        "{last:?}"
    );
}

/// A tracker that refuses the release halts naming the tracker and the first issue, which stays
/// quarantined (the recovery command releases it); the network is waited out and the release
/// asked again; a restart asks again.
#[test]
fn a_refused_release_halts_on_the_tracker_and_the_network_is_waited_out() {
    let mut core = first_issue_escalated(&[]);
    until_the_cycle_ends(&mut core, &[]);
    let fx = core.handle(&Event::NetworkFailed).to_vec();
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Wait { .. })),
        "{fx:?}"
    );
    let fx = core.handle(&Event::WaitOver).to_vec();
    assert_eq!(fx, [Effect::Unquarantine { issue: 1 }]);
    let fx = core.handle(&Event::Start).to_vec();
    assert_eq!(fx, [Effect::Unquarantine { issue: 1 }]);
    let fx = core.handle(&Event::TrackerWriteFailed).to_vec();
    assert!(
        fx.contains(&Effect::Halt(HaltReason::TrackerWrite {
            issue: 1,
            merged: false
        })),
        "{fx:?}"
    );
    assert!(core.runner().escalated.contains(&1));
}

/// Manual approval: the wait for a person's answer is the machine's. Nobody answering yet is
/// an event (`DecisionPending`): the machine waits 2 s, doubling to 30 s, looks again
/// (`LookForDecision`), and halts `DecisionTimeout` once the next wait would pass its decision
/// time; an answer found at any look decides.
#[test]
fn the_wait_for_a_decision_is_the_machines_and_ends_on_time() {
    let l = Limits {
        manual_approval: true,
        max_retries_per_step: 1,
        decision_wait_secs: 60,
        ..Limits::default()
    };
    let mut core = Core::new(l, Mode::Continuous);
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 1 });
    core.handle(&Event::PreconditionsOk {
        step: Step::StartCycle,
    });
    let fx = core
        .handle(&Event::StepFailed {
            step: Step::StartCycle,
            class: FailureClass::TestAssertion,
            signature: Signature(1),
            usage: Usage::default(),
            wait_hint_secs: None,
        })
        .to_vec();
    let ask = Effect::AskDecision {
        step: Step::StartCycle,
        issue: 1,
        budget_spent_micros: None,
    };
    assert_eq!(fx.last(), Some(&ask), "{fx:?}");
    let look = Effect::LookForDecision {
        step: Step::StartCycle,
        issue: 1,
    };
    let mut waits = Vec::new();
    let fx = loop {
        let fx = core.handle(&Event::DecisionPending).to_vec();
        match fx.as_slice() {
            [Effect::Pause { millis, .. }] => waits.push(*millis / 1000),
            _ => break fx,
        }
        assert_eq!(core.handle(&Event::WaitOver).to_vec(), vec![look]);
    };
    assert_eq!(waits, vec![2, 4, 8, 16, 30]);
    assert!(
        fx.contains(&Effect::Halt(HaltReason::DecisionTimeout)),
        "{fx:?}"
    );
    // A restart asks again, with a new wait; an answer decides.
    let mut core = Core::new(
        Limits {
            manual_approval: true,
            max_retries_per_step: 1,
            ..Limits::default()
        },
        Mode::Continuous,
    );
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 1 });
    core.handle(&Event::PreconditionsOk {
        step: Step::StartCycle,
    });
    core.handle(&Event::StepFailed {
        step: Step::StartCycle,
        class: FailureClass::TestAssertion,
        signature: Signature(1),
        usage: Usage::default(),
        wait_hint_secs: None,
    });
    core.handle(&Event::DecisionPending);
    assert_eq!(core.handle(&Event::Start).to_vec(), vec![ask]);
    let fx = core
        .handle(&Event::Decided {
            option: sdlc_machine::machine::DecisionOption::Halt,
        })
        .to_vec();
    assert!(fx.contains(&Effect::Halt(HaltReason::Operator)), "{fx:?}");
}

/// A world where CI verdicts are for commits and a person may move the branch: monitorCI's
/// looks answer for one of three commits, the merge's checks and run may find the branch
/// moved, merged by hand or withdrawn, and a merge may conflict and its repair push a new head.
struct Moving {
    world: World,
}

fn commit(n: u8) -> Commit {
    Commit::parse(&format!("{:02x}", n % 3 + 1).repeat(20)).expect("commit")
}

impl Moving {
    fn answer(&mut self, request: Effect, issue: u32) -> Event {
        let w = &mut self.world;
        let moved = |w: &mut World| Event::BranchMoved {
            ours: commit(w.pick(3)),
            head: commit(w.pick(3)),
            on_top: w.pick(2) == 0,
        };
        match request {
            Effect::RunStep {
                step: Step::MonitorCi,
                ..
            }
            | Effect::LookAtCi { .. } => match w.pick(8) {
                0 | 1 => Event::CiPending {
                    usage: Usage::default(),
                    commit: Some(commit(w.pick(3))),
                },
                2 => moved(w),
                3 => Event::AlreadyMerged { issue },
                4 => Event::IssueWithdrawn { issue },
                5 => Event::StepFailed {
                    step: Step::MonitorCi,
                    class: FailureClass::TestAssertion,
                    signature: Signature(7),
                    usage: Usage::default(),
                    wait_hint_secs: None,
                },
                _ => Event::CiPassed {
                    commit: commit(w.pick(3)),
                    usage: Usage::default(),
                },
            },
            Effect::CheckPreconditions { step: Step::Merge } => match w.pick(6) {
                0 => moved(w),
                1 => Event::AlreadyMerged { issue },
                _ => Event::PreconditionsOk { step: Step::Merge },
            },
            Effect::RunStep {
                step: Step::Merge, ..
            } => match w.pick(9) {
                8 => Event::BranchBehind {
                    usage: Usage::default(),
                },
                0 => moved(w),
                1 => Event::AlreadyMerged { issue },
                2 => Event::IssueWithdrawn { issue },
                4 => Event::StepFailed {
                    step: Step::Merge,
                    class: FailureClass::MergeConflict,
                    signature: Signature(5),
                    usage: Usage::default(),
                    wait_hint_secs: None,
                },
                5 => Event::Repaired {
                    step: Step::Merge,
                    usage: Usage::default(),
                },
                7 => Event::MergeConflict {
                    paths: vec!["a.txt".into()],
                    usage: Usage::default(),
                },
                3 => Event::MergeRaceLost {
                    class: FailureClass::Unknown,
                    signature: Signature(3),
                    usage: Usage::default(),
                },
                _ => Event::StepSucceeded {
                    step: Step::Merge,
                    usage: Usage::default(),
                },
            },
            Effect::UpdateBranch { .. } => match w.pick(7) {
                0 => moved(w),
                1 => Event::StepFailed {
                    step: Step::Merge,
                    class: FailureClass::MergeConflict,
                    signature: Signature(5),
                    usage: Usage::default(),
                    wait_hint_secs: None,
                },
                6 => Event::MergeConflict {
                    paths: vec!["a.txt".into()],
                    usage: Usage::default(),
                },
                2 => Event::NetworkFailed,
                _ => Event::BranchUpdated {
                    head: commit(w.pick(3)),
                    usage: Usage::default(),
                },
            },
            Effect::TakeMergeTurn { .. } => Event::MergeTurnTaken,
            Effect::Pause { .. } => Event::WaitOver,
            other => w.answer(other),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// A merge request only ever carries the commit a CI-passed event verified in the same
    /// cycle, and none after the branch moved; a person's move (the branch moved, merged by
    /// hand, the PR closed) never escalates an issue nor counts an attempt against it, and a
    /// rewritten branch stops the session with nothing merged.
    #[test]
    fn merges_carry_the_verified_commit_and_a_persons_move_blames_nobody(
        l in limits(),
        turn in any::<bool>(),
        tape in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let l = Limits {
            merge_turn_wait_ms: turn.then_some(1_000),
            ..l
        };
        let mut moving = Moving { world: World { tape, at: 0, backlog: 3 } };
        let mut core = Core::new(l, Mode::Continuous);
        let mut event = Event::Start;
        let mut verified: Option<Commit> = None;
        for _ in 0..20_000 {
            if let Event::IssueWithdrawn { .. } = event {
                event = Event::IssueWithdrawn {
                    issue: core.runner().issue.unwrap_or(0),
                };
            }
            match event {
                Event::CiPassed { commit, .. } => verified = Some(commit),
                Event::BranchMoved { .. } | Event::BranchUpdated { .. } => verified = None,
                _ => {}
            }
            let attempts_before: u32 = core.runner().attempts.iter().sum();
            let effects = core.handle(&event).to_vec();
            let persons_move = matches!(
                event,
                Event::BranchMoved { .. } | Event::AlreadyMerged { .. } | Event::IssueWithdrawn { .. }
            );
            if persons_move {
                for e in &effects {
                    prop_assert!(
                        !matches!(e, Effect::MarkEscalated { .. } | Effect::Notify(Notice::Escalated { .. })),
                        "{event:?} escalated: {effects:?}"
                    );
                }
                let attempts_after: u32 = core.runner().attempts.iter().sum();
                prop_assert!(
                    attempts_after <= attempts_before || core.runner().issue.is_none(),
                    "{event:?} counted an attempt"
                );
            }
            if let Event::BranchMoved { on_top: false, ours, head } = event {
                if effects.iter().any(|e| matches!(e, Effect::Halt(_))) {
                    prop_assert!(effects.iter().any(|e| matches!(
                        e,
                        Effect::Halt(HaltReason::BranchMoved { ours: o, head: h, on_top: false, .. })
                            if *o == ours && *h == head
                    )), "{effects:?}");
                }
            }
            for e in &effects {
                match *e {
                    Effect::Notify(Notice::CycleStarted { .. }) => verified = None,
                    Effect::RunStep { step: Step::MonitorCi, .. } => verified = None,
                    Effect::RunStep { step: Step::Merge, commit, .. } => {
                        prop_assert_eq!(commit, verified, "the merge carries the verified commit");
                    }
                    Effect::RunStep { commit, .. } => prop_assert_eq!(commit, None),
                    _ => {}
                }
            }
            let request = effects.iter().copied().find(Effect::is_request);
            match request {
                Some(Effect::Exit { .. }) => return Ok(()),
                Some(r) => {
                    let issue = core.runner().issue.unwrap_or(0);
                    event = moving.answer(r, issue);
                }
                None => panic!("no request after {event:?} in {:?}", core.state()),
            }
        }
        prop_assert!(false, "the session did not end within 20000 events");
    }
}

/// Issue 5 carried through every step before monitorCI, whose run is requested: the effects
/// of that request.
fn monitor_ci_of_issue_5(core: &mut Core) -> Vec<Effect> {
    issue_5_at(core, Step::MonitorCi)
}

/// Issue 5 carried through every step before `at`, whose checks passed: the effects of that
/// answer (the run of `at` requested).
fn issue_5_at(core: &mut Core, at: Step) -> Vec<Effect> {
    core.handle(&Event::Start);
    core.handle(&Event::IssueSelected { issue: 5 });
    for step in Step::ALL.into_iter().take_while(|&s| s != at) {
        core.handle(&Event::PreconditionsOk { step });
        core.handle(&Event::StepSucceeded {
            step,
            usage: Usage::default(),
        });
    }
    core.handle(&Event::PreconditionsOk { step: at }).to_vec()
}

/// Issue 5's CI passes `ours` and its merge fails as MERGE_CONFLICT: the effects of the failure.
fn merge_of_issue_5_conflicts(core: &mut Core, ours: Commit) -> Vec<Effect> {
    monitor_ci_of_issue_5(core);
    core.handle(&Event::CiPassed {
        commit: ours,
        usage: Usage::default(),
    });
    core.handle(&Event::PreconditionsOk { step: Step::Merge });
    core.handle(&Event::StepFailed {
        step: Step::Merge,
        class: FailureClass::MergeConflict,
        signature: Signature(5),
        usage: Usage::default(),
        wait_hint_secs: None,
    })
    .to_vec()
}

/// Commits on top during monitorCI send the look to the new head; a rewrite halts naming both
/// commits with nothing merged; a person's merge seen before the merge is recorded, no merge
/// runs.
#[test]
fn a_moved_branch_is_looked_at_again_or_stops_the_session() {
    let ours = commit(0);
    let theirs = commit(1);
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    let run = monitor_ci_of_issue_5(&mut core);
    assert!(
        matches!(
            run.last(),
            Some(Effect::RunStep {
                step: Step::MonitorCi,
                commit: None,
                ..
            })
        ),
        "{run:?}"
    );
    // On top: wait, then look at the person's head.
    let fx = core
        .handle(&Event::BranchMoved {
            ours,
            head: theirs,
            on_top: true,
        })
        .to_vec();
    assert!(matches!(fx.last(), Some(Effect::Wait { .. })), "{fx:?}");
    let fx = core.handle(&Event::WaitOver).to_vec();
    assert!(
        matches!(fx.last(), Some(Effect::LookAtCi { commit: Some(c), .. }) if *c == theirs),
        "{fx:?}"
    );
    // CI passes on it: the merge carries it.
    core.handle(&Event::CiPassed {
        commit: theirs,
        usage: Usage::default(),
    });
    let fx = core
        .handle(&Event::PreconditionsOk { step: Step::Merge })
        .to_vec();
    assert!(
        matches!(fx.last(), Some(Effect::RunStep { step: Step::Merge, commit: Some(c), .. }) if *c == theirs),
        "{fx:?}"
    );
    // The merge finds it rewritten: the session stops, the issue is not blamed.
    let fx = core
        .handle(&Event::BranchMoved {
            ours: theirs,
            head: ours,
            on_top: false,
        })
        .to_vec();
    assert!(
        fx.contains(&Effect::Halt(HaltReason::BranchMoved {
            issue: 5,
            ours: theirs,
            head: ours,
            on_top: false
        })),
        "{fx:?}"
    );
    assert!(core.escalated().is_empty());
    assert_eq!(core.runner().attempts, [0; Step::COUNT]);

    // A person's merge seen by the merge's checks: recorded, nothing merged.
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    monitor_ci_of_issue_5(&mut core);
    core.handle(&Event::CiPassed {
        commit: ours,
        usage: Usage::default(),
    });
    let fx = core.handle(&Event::AlreadyMerged { issue: 5 }).to_vec();
    assert_eq!(
        fx,
        vec![Effect::RecordMerged {
            issue: 5,
            wait: false
        }]
    );
}

/// A merge that conflicted is repaired by the agent and the repaired head pushed: CI looks at
/// that head before any merge, the merge then carries it (never the commit verified before the
/// conflict), and the merge after the repair is a plain one, not a second repair.
#[test]
fn a_repaired_conflict_goes_through_ci_again_before_it_is_merged() {
    let ours = commit(0);
    let repaired = commit(1);
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    let fx = merge_of_issue_5_conflicts(&mut core, ours);
    let run = |fx: &[Effect]| {
        fx.iter().find_map(|e| match *e {
            Effect::RunStep {
                step: Step::Merge,
                repair,
                commit,
                ..
            } => Some((repair, commit)),
            _ => None,
        })
    };
    let fx = if run(&fx).is_some() {
        fx
    } else {
        core.handle(&Event::PreconditionsOk { step: Step::Merge })
            .to_vec()
    };
    assert_eq!(run(&fx), Some((true, Some(ours))), "the repair: {fx:?}");
    let spent = Usage {
        cost_micros: 40_000,
        elapsed_ms: 1_000,
        turns: 3,
    };
    // The agent's repair is done; the runner's update and push are a request of their own,
    // and a network failure of it asks for it again, never for the agent's repair.
    let update = Effect::UpdateBranch {
        issue: 5,
        commit: Some(ours),
    };
    let fx = core
        .handle(&Event::Repaired {
            step: Step::Merge,
            usage: spent,
        })
        .to_vec();
    assert_eq!(fx.last(), Some(&update), "{fx:?}");
    core.handle(&Event::NetworkFailed);
    let fx = core.handle(&Event::WaitOver).to_vec();
    assert_eq!(fx.last(), Some(&update), "the update again: {fx:?}");
    assert!(
        fx.iter().all(|e| !matches!(e, Effect::RunStep { .. })),
        "the agent's repair is not run twice: {fx:?}"
    );
    let fx = core
        .handle(&Event::BranchUpdated {
            head: repaired,
            usage: Usage::default(),
        })
        .to_vec();
    assert!(matches!(fx.last(), Some(Effect::Wait { .. })), "{fx:?}");
    assert!(
        fx.iter().all(|e| !matches!(e, Effect::RunStep { .. })),
        "nothing merged: {fx:?}"
    );
    let fx = core.handle(&Event::WaitOver).to_vec();
    assert!(
        matches!(fx.last(), Some(Effect::LookAtCi { commit: Some(c), .. }) if *c == repaired),
        "CI looks at the repaired head: {fx:?}"
    );
    core.handle(&Event::CiPassed {
        commit: repaired,
        usage: Usage::default(),
    });
    let fx = core
        .handle(&Event::PreconditionsOk { step: Step::Merge })
        .to_vec();
    assert_eq!(
        run(&fx),
        Some((false, Some(repaired))),
        "a plain merge of the repaired head: {fx:?}"
    );
    assert!(core.escalated().is_empty());
    assert!(
        core.runner().issue_cost_micros >= spent.cost_micros,
        "the repair's cost is counted"
    );
}

/// `step` fails (with `class`, signature `sig`) and the machine asks for the agent's repair
/// of it, through the checks when they come first.
fn fail_into_repair(core: &mut Core, step: Step, class: FailureClass, sig: u64) {
    let fx = core
        .handle(&Event::StepFailed {
            step,
            class,
            signature: Signature(sig),
            usage: Usage::default(),
            wait_hint_secs: None,
        })
        .to_vec();
    let fx = if fx.iter().any(|e| matches!(e, Effect::RunStep { .. })) {
        fx
    } else {
        core.handle(&Event::PreconditionsOk { step }).to_vec()
    };
    assert!(
        matches!(fx.last(), Some(Effect::RunStep { step: s, repair: true, .. }) if *s == step),
        "the repair: {fx:?}"
    );
}

/// A rate limit, then a network failure, of the runner's call after a repair: each is waited
/// out and the batch after the wait is what `again` expects (the same call, never the agent).
fn after_a_limit_and_a_network_failure(core: &mut Core, again: impl Fn(&[Effect]) -> bool) {
    for failure in [Event::RateLimited { wait_secs: 60 }, Event::NetworkFailed] {
        let fx = core.handle(&failure).to_vec();
        assert!(matches!(fx.last(), Some(Effect::Wait { .. })), "{fx:?}");
        let fx = core.handle(&Event::WaitOver).to_vec();
        assert!(
            again(&fx),
            "the runner's call again, not the agent's repair: {fx:?}"
        );
    }
}

/// A person pushes on top of the agent's conflict repair before the runner's update: the
/// update answers `BranchMoved` (on top), CI looks at the person's head, and the merge that
/// follows is a plain merge of that head (it holds the repair), not a second repair by the
/// agent; nobody blamed.
#[test]
fn a_persons_push_on_top_of_the_repair_is_merged_plainly_after_ci() {
    let ours = commit(0);
    let repaired = commit(1);
    let persons = commit(2);
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    let fx = merge_of_issue_5_conflicts(&mut core, ours);
    if !fx.iter().any(|e| matches!(e, Effect::RunStep { .. })) {
        core.handle(&Event::PreconditionsOk { step: Step::Merge });
    }
    core.handle(&Event::Repaired {
        step: Step::Merge,
        usage: Usage::default(),
    });
    let fx = core
        .handle(&Event::BranchMoved {
            ours: repaired,
            head: persons,
            on_top: true,
        })
        .to_vec();
    assert!(matches!(fx.last(), Some(Effect::Wait { .. })), "{fx:?}");
    let fx = core.handle(&Event::WaitOver).to_vec();
    assert!(
        matches!(fx.last(), Some(Effect::LookAtCi { commit: Some(c), .. }) if *c == persons),
        "CI looks at the person's head: {fx:?}"
    );
    core.handle(&Event::CiPassed {
        commit: persons,
        usage: Usage::default(),
    });
    let fx = core
        .handle(&Event::PreconditionsOk { step: Step::Merge })
        .to_vec();
    let run = fx.iter().find_map(|e| match *e {
        Effect::RunStep {
            step: Step::Merge,
            repair,
            commit,
            ..
        } => Some((repair, commit)),
        _ => None,
    });
    assert_eq!(
        run,
        Some((false, Some(persons))),
        "a plain merge of the person's head: {fx:?}"
    );
    assert!(core.escalated().is_empty());
}

/// monitorCI's repair after failing CI is two requests too: the agent's fix (`RunStep` with
/// `repair`, answered by `Repaired`) and the runner's look at CI (`LookAtCi` for the head the
/// agent pushed). A rate limit or a network failure of the look asks for the look again, never
/// for the agent's repair.
#[test]
fn a_ci_repair_is_followed_by_a_look_of_its_own_and_a_rate_limit_never_reruns_the_agent() {
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    monitor_ci_of_issue_5(&mut core);
    fail_into_repair(&mut core, Step::MonitorCi, FailureClass::TestAssertion, 9);
    let spent = Usage {
        cost_micros: 30_000,
        elapsed_ms: 1_000,
        turns: 2,
    };
    let look = Effect::LookAtCi {
        issue: 5,
        look: 1,
        commit: None,
    };
    let fx = core
        .handle(&Event::Repaired {
            step: Step::MonitorCi,
            usage: spent,
        })
        .to_vec();
    assert_eq!(fx.last(), Some(&look), "the runner's look follows: {fx:?}");
    after_a_limit_and_a_network_failure(&mut core, |fx| {
        fx.last() == Some(&look) && fx.iter().all(|e| !matches!(e, Effect::RunStep { .. }))
    });
    let fx = core
        .handle(&Event::CiPassed {
            commit: commit(4),
            usage: Usage::default(),
        })
        .to_vec();
    assert!(core.escalated().is_empty(), "{fx:?}");
    assert!(
        core.runner().issue_cost_micros >= spent.cost_micros,
        "the repair's cost is counted"
    );
    assert!(
        matches!(
            fx.last(),
            Some(Effect::CheckPreconditions {
                step: Step::Merge,
                ..
            })
        ),
        "the merge follows: {fx:?}"
    );
}

/// GitHub wants the branch up to date with main before the merge (`BEHIND`): the branch is
/// updated and its new head goes through CI before a plain merge of it; no attempt is spent
/// and nobody is blamed. Main overtaking the branch more often than CI's schedule has waits
/// halts naming it.
#[test]
fn a_branch_behind_main_is_updated_and_passes_ci_again_and_a_main_that_keeps_moving_halts() {
    let ours = commit(0);
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    monitor_ci_of_issue_5(&mut core);
    core.handle(&Event::CiPassed {
        commit: ours,
        usage: Usage::default(),
    });
    let mut verified = ours;
    let polls = Limits::default().ci_polls().len();
    for round in 0..=polls {
        let fx = core
            .handle(&Event::PreconditionsOk { step: Step::Merge })
            .to_vec();
        assert!(
            fx.iter().any(|e| matches!(e, Effect::RunStep { step: Step::Merge, repair: false, commit: Some(c), .. } if *c == verified)),
            "round {round}: a plain merge of the verified head: {fx:?}"
        );
        let fx = core
            .handle(&Event::BranchBehind {
                usage: Usage::default(),
            })
            .to_vec();
        assert!(
            fx.iter()
                .all(|e| !matches!(e, Effect::MarkEscalated { .. })),
            "{fx:?}"
        );
        if round == polls {
            assert!(
                fx.contains(&Effect::Halt(HaltReason::MainKeptMoving { issue: 5 })),
                "past the schedule: {fx:?}"
            );
            break;
        }
        assert_eq!(
            fx.last(),
            Some(&Effect::UpdateBranch {
                issue: 5,
                commit: Some(verified)
            }),
            "round {round}: {fx:?}"
        );
        let head = commit(round as u8 + 1);
        let fx = core
            .handle(&Event::BranchUpdated {
                head,
                usage: Usage::default(),
            })
            .to_vec();
        assert!(matches!(fx.last(), Some(Effect::Wait { .. })), "{fx:?}");
        let fx = core.handle(&Event::WaitOver).to_vec();
        assert!(
            matches!(fx.last(), Some(Effect::LookAtCi { commit: Some(c), .. }) if *c == head),
            "CI looks at the updated head: {fx:?}"
        );
        core.handle(&Event::CiPassed {
            commit: head,
            usage: Usage::default(),
        });
        verified = head;
    }
    assert!(core.escalated().is_empty());
    assert_eq!(
        core.runner().attempts.iter().sum::<u32>(),
        0,
        "no attempt spent"
    );
}

/// A conflict with main is an answer of its own (`MergeConflict`) carrying the conflicting
/// paths, and the machine decides what follows: one repair attempt for those paths (the
/// request's performer reads them from `conflict_repair`), then the runner's update; the same
/// conflict after the repair escalates the issue with the paths kept for its diagnostic. A
/// plain merge, or a repair of another failure, is no conflict's repair.
#[test]
fn a_conflict_is_met_with_one_bounded_repair_then_an_escalation_naming_its_paths() {
    let ours = commit(0);
    let paths = vec!["src/lib.rs".to_string(), "README.md".to_string()];
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    monitor_ci_of_issue_5(&mut core);
    core.handle(&Event::CiPassed {
        commit: ours,
        usage: Usage::default(),
    });
    core.handle(&Event::PreconditionsOk { step: Step::Merge });
    assert_eq!(core.runner().conflict_repair(), None, "a plain merge");
    let spent = Usage {
        cost_micros: 0,
        elapsed_ms: 700,
        turns: 0,
    };
    let fx = core
        .handle(&Event::MergeConflict {
            paths: paths.clone(),
            usage: spent,
        })
        .to_vec();
    assert!(
        fx.iter()
            .all(|e| !matches!(e, Effect::MarkEscalated { .. })),
        "{fx:?}"
    );
    let fx = if fx.iter().any(|e| matches!(e, Effect::RunStep { .. })) {
        fx
    } else {
        core.handle(&Event::PreconditionsOk { step: Step::Merge })
            .to_vec()
    };
    assert!(
        matches!(
            fx.last(),
            Some(Effect::RunStep { step: Step::Merge, repair: true, commit: Some(c), .. }) if *c == ours
        ),
        "one repair of the conflict: {fx:?}"
    );
    assert_eq!(core.runner().conflict_repair(), Some(&paths[..]));
    assert_eq!(core.runner().attempts[Step::Merge.index()], 1);
    let fx = core
        .handle(&Event::Repaired {
            step: Step::Merge,
            usage: Usage::default(),
        })
        .to_vec();
    assert_eq!(
        fx.last(),
        Some(&Effect::UpdateBranch {
            issue: 5,
            commit: Some(ours)
        }),
        "{fx:?}"
    );
    assert_eq!(
        core.runner().conflict_repair(),
        None,
        "the update is no repair"
    );
    // The repair did not resolve it: the same paths conflict again.
    let fx = core
        .handle(&Event::MergeConflict {
            paths: paths.clone(),
            usage: Usage::default(),
        })
        .to_vec();
    assert!(
        fx.contains(&Effect::MarkEscalated { issue: 5 }),
        "escalated after one repair: {fx:?}"
    );
    assert_eq!(
        core.runner().conflict_paths,
        paths,
        "kept for the diagnostic"
    );
    assert!(
        matches!(core.runner().last_failure, Some(f) if f.class == FailureClass::MergeConflict && f.step == Step::Merge)
    );
}

/// The conflict of a journal written before it had an event of its own (a merge's
/// `StepFailed` of class MERGE_CONFLICT) is still repaired as a conflict, its paths unknown.
#[test]
fn an_older_journals_conflict_is_still_repaired_as_a_conflict() {
    let ours = commit(0);
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    let fx = merge_of_issue_5_conflicts(&mut core, ours);
    if !fx.iter().any(|e| matches!(e, Effect::RunStep { .. })) {
        core.handle(&Event::PreconditionsOk { step: Step::Merge });
    }
    assert_eq!(core.runner().conflict_repair(), Some(&[][..]));
    // A merge repaired after another failure (a hook's refusal, LINT) is no conflict's.
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    monitor_ci_of_issue_5(&mut core);
    core.handle(&Event::CiPassed {
        commit: ours,
        usage: Usage::default(),
    });
    core.handle(&Event::PreconditionsOk { step: Step::Merge });
    let fx = core
        .handle(&Event::StepFailed {
            step: Step::Merge,
            class: FailureClass::Lint,
            signature: Signature(8),
            usage: Usage::default(),
            wait_hint_secs: None,
        })
        .to_vec();
    let fx = if fx.iter().any(|e| matches!(e, Effect::RunStep { .. })) {
        fx
    } else {
        core.handle(&Event::PreconditionsOk { step: Step::Merge })
            .to_vec()
    };
    assert!(
        matches!(fx.last(), Some(Effect::RunStep { repair: true, .. })),
        "{fx:?}"
    );
    assert_eq!(core.runner().conflict_repair(), None);
}

/// commitPush's repair (a hook refused the push: the agent gets the hook's words) is two
/// requests, like monitorCI's and the merge's: the agent's repair (`RunStep` with `repair`,
/// answered by `Repaired`), then the runner's own commit and push (`RunStep` of the same
/// attempt without `repair`). A rate limit or a network failure of the push asks for the push
/// again, never for the agent's repair, and the repair's cost is counted once.
#[test]
fn a_commit_push_repair_is_followed_by_a_push_of_its_own_and_a_network_failure_never_reruns_the_agent(
) {
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    issue_5_at(&mut core, Step::CommitPush);
    fail_into_repair(&mut core, Step::CommitPush, FailureClass::Lint, 11);
    let spent = Usage {
        cost_micros: 25_000,
        elapsed_ms: 1_000,
        turns: 2,
    };
    let push = |fx: &[Effect]| {
        matches!(
            fx.last(),
            Some(Effect::RunStep {
                step: Step::CommitPush,
                repair: false,
                attempt: 2,
                ..
            })
        )
    };
    let fx = core
        .handle(&Event::Repaired {
            step: Step::CommitPush,
            usage: spent,
        })
        .to_vec();
    assert!(push(&fx), "the runner's push follows: {fx:?}");
    after_a_limit_and_a_network_failure(&mut core, push);
    let fx = core
        .handle(&Event::StepSucceeded {
            step: Step::CommitPush,
            usage: Usage::default(),
        })
        .to_vec();
    assert!(
        matches!(
            fx.last(),
            Some(Effect::CheckPreconditions {
                step: Step::CreatePr
            })
        ),
        "createPR follows: {fx:?}"
    );
    assert_eq!(core.runner().attempts[Step::CommitPush.index()], 1);
    assert_eq!(core.runner().issue_cost_micros, spent.cost_micros);
    assert!(core.escalated().is_empty());
}

/// CI failed on the commit main would hold (the verified commit merged onto a main that moved
/// since): nothing is merged, the turn is given back, and it is monitorCI's failure, counted
/// and repaired like any failing CI; the repaired head goes through CI and the merge again.
/// Repeated, it is bounded by monitorCI's attempts: the issue escalates, the session goes on.
#[test]
fn ci_failing_on_the_commit_main_would_hold_is_monitor_cis_failure_and_is_repaired() {
    let ours = commit(0);
    // The merge is taken in turns (a fleet's): the turn is given back.
    let limits = Limits {
        merge_turn_wait_ms: Some(10_000),
        ..Limits::default()
    };
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    monitor_ci_of_issue_5(&mut core);
    core.handle(&Event::CiPassed {
        commit: ours,
        usage: Usage::default(),
    });
    let mut escalated = false;
    for round in 0..=limits.max_retries_per_step {
        let mut fx = core
            .handle(&Event::PreconditionsOk { step: Step::Merge })
            .to_vec();
        if matches!(fx.last(), Some(Effect::TakeMergeTurn { .. })) {
            fx = core.handle(&Event::MergeTurnTaken).to_vec();
        }
        assert!(
            fx.iter().any(|e| matches!(
                e,
                Effect::RunStep {
                    step: Step::Merge,
                    ..
                }
            )),
            "round {round}: {fx:?}"
        );
        let fx = core
            .handle(&Event::CiFailedTogether {
                class: FailureClass::TestAssertion,
                signature: Signature(9),
                usage: Usage::default(),
            })
            .to_vec();
        assert!(
            fx.contains(&Effect::ReleaseMergeTurn),
            "round {round}: the turn is given back: {fx:?}"
        );
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::RecordMerged { .. })),
            "{fx:?}"
        );
        if fx
            .iter()
            .any(|e| matches!(e, Effect::MarkEscalated { issue: 5, .. }))
        {
            escalated = true;
            break;
        }
        assert_eq!(
            fx.last(),
            Some(&Effect::CheckPreconditions {
                step: Step::MonitorCi
            }),
            "round {round}: back to monitorCI: {fx:?}"
        );
        let fx = core
            .handle(&Event::PreconditionsOk {
                step: Step::MonitorCi,
            })
            .to_vec();
        let repair = match fx.last() {
            Some(Effect::RunStep {
                step: Step::MonitorCi,
                repair,
                ..
            }) => *repair,
            _ => panic!("round {round}: monitorCI runs again: {fx:?}"),
        };
        if round == 0 {
            assert!(repair, "the first is a repair: {fx:?}");
        }
        if repair {
            core.handle(&Event::Repaired {
                step: Step::MonitorCi,
                usage: Usage::default(),
            });
        }
        let head = commit(round as u8 + 1);
        core.handle(&Event::CiPassed {
            commit: head,
            usage: Usage::default(),
        });
    }
    assert!(escalated, "bounded by monitorCI's attempts");
}

/// A base branch with a merge queue (GitHub's): the merge puts the PR in the queue and the
/// machine waits on monitorCI's CI schedule (`WaitingForQueue`, `MERGE_QUEUE`), each look the
/// same merge attempt's run again, holding the turn. A restart in the wait waits again. The
/// queue merging it is the merge's success; its CI failing is monitorCI's failure, the turn
/// given back; a queue that never decides fails the attempt (TIMEOUT) after the schedule's
/// last wait, so the wait is bounded by the merge's attempts.
#[test]
fn a_queued_merge_waits_for_the_merge_queue_within_cis_schedule() {
    let ours = commit(0);
    let limits = Limits {
        merge_turn_wait_ms: Some(10_000),
        ..Limits::default()
    };
    let pauses = limits.ci_polls();
    assert!(!pauses.is_empty());
    let queued = Event::MergeQueued {
        usage: Usage::default(),
    };
    let to_the_merge = |core: &mut Core| {
        monitor_ci_of_issue_5(core);
        core.handle(&Event::CiPassed {
            commit: ours,
            usage: Usage::default(),
        });
        core.handle(&Event::PreconditionsOk { step: Step::Merge });
        let fx = core.handle(&Event::MergeTurnTaken).to_vec();
        match fx.last() {
            Some(
                run @ Effect::RunStep {
                    step: Step::Merge,
                    commit: Some(c),
                    ..
                },
            ) if *c == ours => *run,
            _ => panic!("the merge of the verified commit: {fx:?}"),
        }
    };
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let run = to_the_merge(&mut core);
    for (n, &seconds) in pauses.iter().enumerate() {
        let fx = core.handle(&queued).to_vec();
        let wait = Effect::Wait {
            seconds,
            reason: Some(WaitReason::MergeQueue),
        };
        assert_eq!(
            fx,
            vec![wait],
            "look {n}: the turn stays held, no attempt spent"
        );
        assert_eq!(*core.state(), State::WaitingForQueue { seconds });
        assert_eq!(core.handle(&Event::Start).to_vec(), vec![wait]);
        assert_eq!(
            core.handle(&Event::WaitOver).to_vec(),
            vec![run],
            "look {n}: the same attempt's run again"
        );
        assert_eq!(core.runner().queue_waits, n as u32 + 1);
    }
    // The queue never decided within CI's schedule: the merge attempt fails as TIMEOUT.
    let fx = core.handle(&queued).to_vec();
    assert!(fx.contains(&Effect::ReleaseMergeTurn), "{fx:?}");
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Notify(Notice::Retrying {
                step: Step::Merge,
                class: FailureClass::Timeout,
                ..
            })
        )),
        "{fx:?}"
    );
    assert_eq!(core.runner().attempts[Step::Merge.index()], 1);
    assert_eq!(core.runner().queue_waits, 0, "a new attempt, a new wait");

    // The queue merges it at the second look: the merge's success.
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    to_the_merge(&mut core);
    core.handle(&queued);
    core.handle(&Event::WaitOver);
    let fx = core
        .handle(&Event::StepSucceeded {
            step: Step::Merge,
            usage: Usage::default(),
        })
        .to_vec();
    assert!(fx.contains(&Effect::ReleaseMergeTurn), "{fx:?}");
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::RecordMerged { issue: 5, .. })),
        "{fx:?}"
    );

    // The queue's CI fails: monitorCI's failure, its repair next.
    let mut core = Core::new(limits, Mode::Continuous);
    to_the_merge(&mut core);
    core.handle(&queued);
    core.handle(&Event::WaitOver);
    let fx = core
        .handle(&Event::CiFailedTogether {
            class: FailureClass::TestAssertion,
            signature: Signature(9),
            usage: Usage::default(),
        })
        .to_vec();
    assert!(fx.contains(&Effect::ReleaseMergeTurn), "{fx:?}");
    assert_eq!(
        fx.last(),
        Some(&Effect::CheckPreconditions {
            step: Step::MonitorCi
        }),
        "{fx:?}"
    );
    assert_eq!(core.runner().attempts[Step::MonitorCi.index()], 1);
}
