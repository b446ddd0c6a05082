//! A scripted world around the pure core: answers each request effect from a script, the way
//! the tokio driver answers it from git and the agent. Shared by the property tests.
#![allow(dead_code)]

use sdlc_machine::failure::{FailureClass, Signature};
use sdlc_machine::machine::{self, Core, Effect, Event, Limits, Usage};
use sdlc_machine::step::{Check, Step};

/// A response to a request effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Ok,
    Fail(FailureClass, u64),
    Precondition,
    AlreadyDone,
    Shutdown,
    /// The runner's own call (a probe, a builtin step) fails on the network: no agent ran.
    Network,
    /// GitHub's rate limit refuses the runner's own call (lifting in that many seconds).
    RateLimited(u64),
    /// The runner dies (kill -9) while the request is outstanding: a fresh core is rebuilt
    /// from the recorded events, as a restarted runner does from its journal, and restarted.
    Crash,
    /// monitorCI looked at CI and it has not settled (any other step takes it as `Ok`).
    CiPending,
    /// The merge lost a push race (any other step takes it as `Ok`).
    LostRace,
    /// Another merger holds the merge turn (answers `TakeMergeTurn`).
    Busy,
    /// CI failed the tree the merge would land (a merge train's verdict), failing as this
    /// class (any other step takes it as a failure of its own).
    CiTogether(FailureClass, u64),
    /// monitorCI's agent repaired what failed CI and pushed (any other step takes it as `Ok`).
    Repaired,
}

/// How the claim store answers a claim or its renewal (runners sharing a tracker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimReply {
    /// Taken, or renewed.
    Yes,
    /// Another runner holds the issue: `ClaimHeld` to a claim, `ClaimLost` to a renewal.
    Other,
    /// The claim cannot be written (`TrackerWriteFailed`).
    Unwritable,
    /// The claim store's call fails on the network.
    Network,
    /// The runner dies while the claim or renewal is outstanding.
    Crash,
}

/// The renewal a claiming runner owes before `request`, from docs/scaling.md: each step,
/// precondition check, look at CI and request for the merge turn (for as long as a step), and
/// each wait and pause (for as long as it lasts), and the wait for a person's decision.
pub fn renewal_due(l: &Limits, request: &Effect) -> Option<u64> {
    match *request {
        Effect::RunStep { .. }
        | Effect::CheckPreconditions { .. }
        | Effect::LookAtCi { .. }
        | Effect::UpdateBranch { .. }
        | Effect::TakeMergeTurn { .. } => Some(0),
        Effect::Wait { seconds, .. } => Some(seconds),
        Effect::Pause { millis, .. } => Some(millis.div_ceil(1000)),
        Effect::AskDecision { .. } => Some(l.decision_wait_secs),
        _ => None,
    }
}

/// The renewal of the claim on `issue` before a request that may take `secs` beyond a step,
/// as docs/scaling.md states it: written to last a lease plus `secs`; before a step (`secs`
/// 0) a claim with more than half its lease left needs no write. Limits without a lease
/// (journals of earlier versions) leave both to the shell's lease.
pub fn renewal_for(l: &Limits, issue: u32, secs: u64) -> Effect {
    Effect::RenewClaim {
        issue,
        secs,
        lease_secs: match l.claim_lease_secs {
            Some(lease) => lease + secs,
            None => 0,
        },
        fresh_secs: match (l.claim_lease_secs, secs) {
            (Some(lease), 0) => Some(lease / 2),
            _ => None,
        },
    }
}

/// The request the machine's reply asks for (`None`: the event was ignored). A batch holds
/// exactly one, last: its type says so.
pub fn request(reply: machine::Reply<'_>) -> Option<Effect> {
    reply.request().copied()
}

pub fn first_check(step: Step) -> Check {
    Check::of(step)[0]
}

pub fn usage() -> Usage {
    Usage {
        cost_micros: 1_000,
        elapsed_ms: 1_000,
        turns: 3,
    }
}

/// What happened in one scripted session.
#[derive(Debug, Default)]
pub struct Trace {
    pub effects: Vec<Effect>,
    pub events: Vec<Event>,
    pub invocations: u64,
    pub exit: Option<u8>,
    /// How often the runner was killed and restarted.
    pub crashes: u64,
}

impl Trace {
    pub fn runs(&self) -> impl Iterator<Item = (Step, u32, u32)> + '_ {
        self.effects.iter().filter_map(|e| match e {
            Effect::RunStep {
                step,
                issue,
                attempt,
                ..
            } => Some((*step, *issue, *attempt)),
            _ => None,
        })
    }
}

/// Drive `core` until it exits, answering from `next_reply(step)`; issues come from a
/// backlog of `backlog` numbered issues, offered lowest first unless escalated.
pub fn drive(
    core: &mut Core,
    backlog: u32,
    max_events: usize,
    next_reply: impl FnMut(Step, bool) -> Reply,
) -> Trace {
    drive_claiming(core, backlog, max_events, || ClaimReply::Yes, next_reply)
}

/// [`drive`] where the claim store answers claims and renewals from `next_claim`; the
/// tracker leaves out the issues the machine found held elsewhere, and offers nothing when
/// only those are left.
pub fn drive_claiming(
    core: &mut Core,
    backlog: u32,
    max_events: usize,
    mut next_claim: impl FnMut() -> ClaimReply,
    mut next_reply: impl FnMut(Step, bool) -> Reply,
) -> Trace {
    let mut trace = Trace::default();
    let mut event = Event::Start;
    for _ in 0..max_events {
        if event == Event::Start && !trace.events.is_empty() {
            // A restart: only what was recorded survives.
            let (limits, mode) = (core.runner().limits.clone(), core.runner().mode);
            *core = Core::new(limits, mode);
            for e in &trace.events {
                core.handle(e);
            }
            trace.crashes += 1;
        }
        trace.events.push(event.clone());
        let reply = core.handle(&event);
        let effects = reply.to_vec();
        trace.effects.extend_from_slice(&effects);
        let Some(req) = request(reply) else {
            panic!("stall: no request after {event:?} in {:?}", core.state());
        };
        event = match req {
            Effect::Exit { code } => {
                assert_eq!(
                    effects.last(),
                    Some(&Effect::Exit { code }),
                    "Exit must come last"
                );
                trace.exit = Some(code);
                return trace;
            }
            Effect::SelectIssue => {
                let (escalated, held) = (core.escalated(), &core.runner().held_elsewhere);
                let open: Vec<u32> = (1..=backlog)
                    .filter(|i| !merged(&trace, *i) && !escalated.contains(i))
                    .collect();
                match open.iter().find(|i| !held.contains(i)) {
                    Some(issue) => Event::IssueSelected { issue: *issue },
                    // Only issues other runners hold are left: nothing to do.
                    None if !open.is_empty() || escalated.is_empty() => Event::NoIssues,
                    None => Event::AllEscalated { others_hold: false },
                }
            }
            Effect::ClaimIssue { issue } => match next_claim() {
                ClaimReply::Yes => Event::ClaimTaken { issue },
                ClaimReply::Other => Event::ClaimHeld { issue },
                ClaimReply::Unwritable => Event::TrackerWriteFailed,
                ClaimReply::Network => Event::NetworkFailed,
                ClaimReply::Crash => Event::Start,
            },
            Effect::RenewClaim { issue, .. } => match next_claim() {
                ClaimReply::Yes => Event::ClaimRenewed,
                ClaimReply::Other => Event::ClaimLost { issue },
                ClaimReply::Unwritable => Event::TrackerWriteFailed,
                ClaimReply::Network => Event::NetworkFailed,
                ClaimReply::Crash => Event::Start,
            },
            Effect::Wait { .. } | Effect::Pause { .. } => Event::WaitOver,
            Effect::TakeMergeTurn { .. } => match next_reply(Step::Merge, false) {
                Reply::Busy => Event::MergeTurnBusy,
                Reply::Network => Event::NetworkFailed,
                Reply::RateLimited(wait_secs) => Event::RateLimited { wait_secs },
                Reply::Crash => Event::Start,
                Reply::Shutdown => Event::ShutdownRequested {
                    signal: sdlc_machine::machine::Signal::Term,
                    usage: Default::default(),
                },
                _ => Event::MergeTurnTaken,
            },
            Effect::AskDecision { .. } => Event::DecisionTimedOut,
            Effect::CheckPreconditions { step } => match next_reply(step, false) {
                Reply::Precondition if step.has_precondition() => Event::PreconditionFailed {
                    step,
                    check: first_check(step),
                },
                Reply::AlreadyDone => Event::AlreadyDone { step },
                Reply::Shutdown => Event::ShutdownRequested {
                    signal: sdlc_machine::machine::Signal::Term,
                    usage: Default::default(),
                },
                Reply::Crash => Event::Start,
                Reply::Network => Event::NetworkFailed,
                Reply::RateLimited(wait_secs) => Event::RateLimited { wait_secs },
                _ => Event::PreconditionsOk { step },
            },
            Effect::RunStep { .. } | Effect::LookAtCi { .. } => {
                let step = match req {
                    Effect::RunStep { step, .. } => step,
                    _ => Step::MonitorCi,
                };
                let reply = next_reply(step, true);
                // A race merged again is no attempt; the one past the free re-runs is.
                let free_race = reply == Reply::LostRace
                    && step == Step::Merge
                    && core.runner().contention.lost()
                        < sdlc_machine::fleet::Contention::MAX_LOST_RACES;
                // Only a step's attempt may start an agent; another look at CI never does.
                let own_call_failed = matches!(reply, Reply::Network | Reply::RateLimited(_));
                if !own_call_failed && !free_race && matches!(req, Effect::RunStep { .. }) {
                    trace.invocations += 1;
                }
                match reply {
                    Reply::CiTogether(class, sig) if step == Step::Merge => {
                        Event::CiFailedTogether {
                            class,
                            signature: Signature(sig),
                            usage: usage(),
                        }
                    }
                    Reply::Repaired if step == Step::MonitorCi => Event::Repaired {
                        step,
                        usage: usage(),
                    },
                    Reply::LostRace if step == Step::Merge => Event::MergeRaceLost {
                        class: FailureClass::Unknown,
                        signature: Signature(9),
                        usage: usage(),
                    },
                    Reply::CiPending if step == Step::MonitorCi => Event::CiPending {
                        usage: usage(),
                        commit: None,
                    },
                    Reply::Network => Event::NetworkFailed,
                    Reply::RateLimited(wait_secs) => Event::RateLimited { wait_secs },
                    Reply::Fail(class, sig) | Reply::CiTogether(class, sig) => Event::StepFailed {
                        step,
                        class,
                        signature: Signature(sig),
                        usage: usage(),
                        wait_hint_secs: Some(60),
                    },
                    Reply::Shutdown => Event::ShutdownRequested {
                        signal: sdlc_machine::machine::Signal::Term,
                        usage: Default::default(),
                    },
                    Reply::Crash => Event::Start,
                    _ => Event::StepSucceeded {
                        step,
                        usage: usage(),
                    },
                }
            }
            Effect::RecordMerged { .. }
            | Effect::MarkEscalated { .. }
            | Effect::Unquarantine { .. } => Event::TrackerUpdated,
            other => unreachable!("not a request: {other:?}"),
        };
    }
    panic!(
        "did not terminate within {max_events} events: {:?}",
        core.state()
    );
}

fn merged(trace: &Trace, issue: u32) -> bool {
    trace
        .effects
        .iter()
        .any(|e| matches!(e, Effect::RecordMerged { issue: i, .. } if *i == issue))
}
