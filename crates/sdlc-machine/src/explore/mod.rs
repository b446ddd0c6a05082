//! The machine explored: a breadth-first walk feeds every kind of event to every reachable
//! machine value, records which named state each one leads to, and labels the edge with the
//! event and the guard that the effects reveal (retry, bounce, escalate: cause, halt: reason).
//! Edges shared by every leaf of a superstate are drawn once from the superstate. The runner's
//! `diagram` renders this graph; it lives here, beside the machine, because it is pure and
//! the hottest loop of the tests, and this crate is the one built with optimisation.

use crate::digest::Digester;
use crate::machine::{Core, Effect, Event, HaltReason, Limits, Mode, Notice, State, WaitReason};
use crate::step::Step;
use alphabet::alphabet;
use key::exploration_key;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

mod alphabet;
mod key;

/// Pseudo-state for "the process exits but the machine keeps its position" (signal stop).
pub const EXITED: &str = "Exited";

/// The exploration is finite by construction; this guards against a new unbounded field.
const MAX_EXPLORED: usize = 1_000_000;

/// What a transition decides for the run. The exploration reads it off the same effects that
/// reveal the guard, so the reader's views are drawn in the machine's own vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// On to the next step or state: nothing was decided against the issue.
    Advance,
    /// The same step again (an attempt failed within its retries).
    Retry,
    /// Back to an earlier step (verify found the implementation wanting).
    Bounce,
    /// The issue is given up and handed to a person.
    Escalate,
    /// Back off (rate limit, quota).
    Wait,
    /// A wait or a person's answer is over: the step it interrupted goes on.
    Continue,
    /// The run waits for a person's decision.
    AskPerson,
    /// The run stops: nothing more can be done without a person.
    Halt,
    /// The issue's work reached main.
    Merged,
    /// A restart that finds progress in git and resumes there.
    Restart,
    /// A signal stop: the process exits, the machine keeps its position.
    Stop,
}

impl Kind {
    /// The word the guards already use, so the full diagram's labels stay as they were.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Advance => "advance",
            Kind::Retry => "retry",
            Kind::Bounce => "bounce",
            Kind::Escalate => "escalate",
            Kind::Wait => "wait",
            Kind::Continue => "continue",
            Kind::AskPerson => "ask a person",
            Kind::Halt => "halt",
            Kind::Merged => "merged",
            Kind::Restart => "restart",
            Kind::Stop => "stop",
        }
    }
}

/// One transition of the diagrams: an event from a state, the guard its effects reveal, and
/// the state it leads to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    /// The state (leaf or superstate) it leaves.
    pub from: String,
    /// The event's label.
    pub event: &'static str,
    /// Why this event leads here and not elsewhere; empty for a plain advance.
    pub guard: String,
    /// The state it enters, or `EXITED`.
    pub to: String,
    /// Derived from the same effects as `guard`: never makes two edges of one guard distinct.
    pub kind: Kind,
    /// The escalation cause or halt reason, empty for the kinds that have none.
    pub cause: &'static str,
}

impl Edge {
    /// `event [guard]`, or the event alone when there is no guard.
    pub fn label(&self) -> String {
        if self.guard.is_empty() {
            self.event.to_string()
        } else {
            format!("{} [{}]", self.event, self.guard)
        }
    }
}

/// The explored graph: leaf states with their superstate chains, and edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// The state a new machine is in.
    pub initial: String,
    /// leaf name → ancestors, outermost first
    pub leaves: BTreeMap<String, Vec<&'static str>>,
    /// The states a machine never leaves.
    pub finals: BTreeSet<String>,
    /// Every transition, those shared by a superstate's leaves drawn once from it.
    pub edges: BTreeSet<Edge>,
}

impl Graph {
    fn empty() -> Graph {
        Graph {
            initial: String::new(),
            leaves: BTreeMap::new(),
            finals: BTreeSet::new(),
            edges: BTreeSet::new(),
        }
    }
}

/// What the effects decide, and why where they say (escalation cause, halt reason).
fn decision(effects: &[Effect]) -> (Kind, &'static str) {
    for e in effects {
        match e {
            Effect::Halt(reason) => return (Kind::Halt, halt_kind(reason)),
            Effect::Notify(Notice::Escalated { cause, .. }) => {
                return (Kind::Escalate, cause.describe())
            }
            Effect::Notify(Notice::Retrying { .. }) => return (Kind::Retry, ""),
            Effect::Notify(Notice::Bounced { .. }) => return (Kind::Bounce, ""),
            Effect::Notify(Notice::Waiting { .. }) => return (Kind::Wait, ""),
            Effect::Notify(Notice::NetworkWait { .. }) => return (Kind::Wait, "network"),
            Effect::Notify(Notice::RateLimitWait { .. }) => return (Kind::Wait, "rate limit"),
            Effect::Notify(Notice::CiPending { .. }) => return (Kind::Wait, "CI"),
            Effect::Notify(Notice::FleetPause { .. }) => return (Kind::Wait, "fleet pause"),
            Effect::Wait {
                reason: Some(WaitReason::TrackerClose),
                ..
            } => return (Kind::Wait, "tracker's own close"),
            Effect::Wait {
                reason: Some(WaitReason::MergeQueue),
                ..
            } => return (Kind::Wait, "merge queue"),
            Effect::MarkEscalated { .. } => return (Kind::Escalate, ""),
            // The halt of the same failure on two issues, after the first one's release.
            Effect::Unquarantine { .. } => return (Kind::Halt, "same failure on two issues"),
            Effect::RecordMerged { .. } => return (Kind::Merged, ""),
            Effect::AskDecision { .. } => return (Kind::AskPerson, ""),
            _ => {}
        }
    }
    (Kind::Advance, "")
}

/// The guard an edge of `kind` is labelled with: the kind's word and its cause, nothing for
/// an advance.
pub fn guard(kind: Kind, cause: &str) -> String {
    match kind {
        Kind::Advance => String::new(),
        _ if cause.is_empty() => kind.name().to_string(),
        _ => format!("{}: {cause}", kind.name()),
    }
}

fn halt_kind(reason: &HaltReason) -> &'static str {
    match reason {
        HaltReason::ConsecutiveEscalations { .. } => "consecutive escalations",
        HaltReason::AllIssuesEscalated => "all issues escalated",
        HaltReason::AllIssuesBlocked => "all issues blocked",
        HaltReason::MaxConsecutiveFailures { .. } => "max consecutive failures",
        HaltReason::Environment { .. } => "environment",
        HaltReason::WaitsExhausted { .. } => "waits exhausted",
        HaltReason::QuotaTooLong { .. } => "quota wait too long",
        HaltReason::SessionBudget => "session budget",
        HaltReason::DayBudget => "daily budget",
        HaltReason::Operator => "operator",
        HaltReason::DecisionTimeout => "decision timeout",
        HaltReason::RunnerStateLost => "runner state lost",
        HaltReason::Network => "network",
        HaltReason::RateLimit { .. } => "rate limit",
        HaltReason::TrackerWrite { .. }
        | HaltReason::TrackerStale { .. }
        | HaltReason::ClaimRefused { .. } => "tracker",
        HaltReason::Workspace { .. } => "workspace",
        HaltReason::SameFailureAcrossIssues { .. } => "same failure on two issues",
        HaltReason::RepeatedKills { .. } => "runner killed",
        HaltReason::MergeTurnHeld { .. } => "merge lease",
        HaltReason::BranchMoved { .. } => "branch moved by a person",
        HaltReason::MainKeptMoving { .. } => "main kept moving",
    }
}

/// The counters some set of [`exploration_limits`] needs, each at the least that shows
/// every edge it guards; each set lowers those it does not need.
fn base_limits() -> Limits {
    let mut phase = [0; Step::COUNT];
    phase[Step::Verify.index()] = 3;
    Limits {
        max_retries_per_step: 2,
        max_bounce_retries: 1,
        max_consecutive_escalations: 2,
        max_consecutive_same_failure: 2,
        max_consecutive_failures: phase,
        max_rate_limit_waits: 1,
        max_quota_wait_secs: 3600,
        max_repair_iterations: 1,
        // One network wait shows both edges: wait, and halt when waiting did not help.
        max_network_waits: 1,
        // One wait for CI shows both edges: look again, and fail when CI stays pending.
        ci_timeout_secs: u64::from(Limits::default().ci_poll_initial_secs),
        ..Limits::default()
    }
}

/// Limits that make every guard reachable with a small state space.
fn exploration_limits() -> Vec<Limits> {
    let base = base_limits();
    // The space grows with every counter's limit, so each set below keeps only the counters
    // its edges need, and the union of their edges is what each set at base's counters
    // would draw. (Set alone, the manual decision and the budgets with base's counters took
    // 100 s each. Lowering the counters each set does not need took the five sets from 40 to
    // 9 CPU-seconds on 2026-12-07, every diagram byte for byte the same.)
    let one_attempt = Limits {
        max_retries_per_step: 1,
        max_bounce_retries: 0,
        max_consecutive_failures: [0; Step::COUNT],
        max_consecutive_same_failure: 0,
        max_repair_iterations: 0,
        max_rate_limit_waits: 0,
        // One wait for the tracker's own close of a merged issue shows both edges: look
        // again, and close it after the last.
        tracker_close_waits: 1,
        ..base.clone()
    };
    let manual = Limits {
        manual_approval: true,
        max_consecutive_escalations: 1,
        // One look that finds no answer shows both edges: wait and look again, and halt when
        // the decision time is up.
        decision_wait_secs: 3,
        ..one_attempt.clone()
    };
    // Two attempts per step: the same failure on two issues halts from monitorCI's retry.
    let budgeted = Limits {
        per_issue_budget_micros: Some(1_000_000),
        per_session_budget_micros: Some(2_000_000),
        max_consecutive_escalations: 2,
        max_rate_limit_waits: 0,
        max_bounce_retries: 0,
        max_consecutive_failures: [0; Step::COUNT],
        ..base.clone()
    };
    // Merging among other mergers: one pause for a busy turn shows both edges (wait, and halt
    // past the limit); one attempt per step keeps the space small.
    let shared = Limits {
        merge_turn_wait_ms: Some(crate::fleet::LeaseWait::FIRST_MS),
        claims: true,
        max_consecutive_escalations: 1,
        max_retries_per_step: 1,
        max_bounce_retries: 0,
        max_consecutive_failures: [0; Step::COUNT],
        ..base.clone()
    };
    // The review gate: one pause for a review shows both edges (look again, and end the
    // cycle waiting for a person); one attempt per step keeps the space small.
    let reviewed = Limits {
        review: Some(crate::machine::ReviewGate {
            max_rounds: 1,
            ..crate::machine::ReviewGate::new(
                true,
                u64::from(Limits::default().ci_poll_initial_secs),
            )
        }),
        max_consecutive_escalations: 1,
        ..one_attempt.clone()
    };
    // Base's own set: bounces, repairs, the same failure and the phase limit; the retries,
    // rate-limit and network waits it would add, the sets above draw.
    let bounced = Limits {
        max_retries_per_step: 1,
        max_rate_limit_waits: 0,
        max_network_waits: 0,
        ..base
    };
    vec![bounced, manual, budgeted, shared, reviewed]
}

/// Explore the machine from its initial state with every event kind.
pub fn explore() -> Graph {
    let mut graph = Graph::empty();
    // Each set explores on a thread of its own; the graphs are one union, in any order.
    let parts: Vec<Graph> = std::thread::scope(|scope| {
        let explorers: Vec<_> = exploration_limits()
            .into_iter()
            .map(|limits| {
                scope.spawn(move || {
                    let mut part = Graph::empty();
                    explore_with(limits, &mut part);
                    part
                })
            })
            .collect();
        explorers
            .into_iter()
            .map(|explorer| match explorer.join() {
                Ok(part) => part,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    for part in parts {
        graph.initial = part.initial;
        graph.leaves.extend(part.leaves);
        graph.finals.extend(part.finals);
        graph.edges.extend(part.edges);
    }
    collapse_shared_edges(&mut graph);
    graph
}

fn explore_with(limits: Limits, graph: &mut Graph) {
    let start = Core::new(limits, Mode::Continuous);
    graph.initial = start.state().name().to_string();
    // The keys are kept as 128-bit digests (`sdlc_machine::digest`), not as whole machines.
    // A machine is queued only the first time its key is met, so the queue never holds
    // the same machine twice.
    let mut digester = Digester::new();
    let mut seen: HashSet<[u64; 2]> = HashSet::from([digester.digest(&exploration_key(&start))]);
    let mut queue = VecDeque::from([start]);
    while let Some(core) = queue.pop_front() {
        assert!(
            seen.len() < MAX_EXPLORED,
            "state exploration did not converge: a counter escapes exploration_key"
        );
        let from = core.state();
        graph
            .leaves
            .insert(from.name().to_string(), Core::ancestors(from));
        if from.is_terminal() {
            graph.finals.insert(from.name().to_string());
            continue;
        }
        for ev in alphabet(&core) {
            let mut next = core.clone();
            let effects = next.handle(&ev).to_vec();
            // A restart re-issues what is pending; it is an edge only where it moves the machine
            // (an attempt interrupted with the runner counted as failed).
            if effects.is_empty() || (ev == Event::Start && next.state() == from) {
                continue;
            }
            if let Some(edge) = edge(from, &ev, &next, &effects) {
                graph.edges.insert(edge);
            }
            if seen.insert(digester.digest(&exploration_key(&next))) {
                queue.push_back(next);
            }
        }
    }
}

/// The edge that event `ev` draws from state `from` to the machine `next` it led to, which
/// asked for `effects`: its target, the decision the effects reveal and the guard that says
/// why; `None` for work inside a state, which is no transition.
fn edge(from: &State, ev: &Event, next: &Core, effects: &[Effect]) -> Option<Edge> {
    let stays = next.state().name() == from.name();
    let exits = effects.iter().any(|e| matches!(e, Effect::Exit { .. }));
    let to = if stays && exits && !next.is_terminal() {
        EXITED.to_string()
    } else {
        next.state().name().to_string()
    };
    // A restart fails the interrupted attempt: what it decides is that failure's kind.
    let (mut kind, mut cause) = decision(effects);
    if let State::Escalating { cause: why, .. } = next.state() {
        if kind == Kind::Escalate && cause.is_empty() {
            cause = why.describe();
        }
    }
    if *ev == Event::TrackerUpdated && kind != Kind::Halt {
        // The tracker recorded what was decided before: nothing new is decided here.
        kind = Kind::Advance;
        cause = "";
    }
    let mut guard = guard(kind, cause);
    if *ev == Event::Start {
        guard = format!("attempt interrupted by a restart, {guard}");
    }
    if guard.is_empty() && matches!(ev, Event::Resume { .. }) {
        guard = "git shows progress".into();
        kind = Kind::Restart;
    }
    if guard.is_empty()
        && matches!(
            from,
            State::BackingOff { .. } | State::AwaitingDecision { .. }
        )
        && to != from.name()
    {
        if let Some(step) = next.state().step() {
            if crate::machine::state_of_step(step).name() == to {
                guard = format!("waiting in {}", step.key());
                kind = Kind::Continue;
            }
        }
    }
    if to == EXITED && kind == Kind::Advance {
        kind = Kind::Stop;
    }
    // Work inside a state (dispatching an attempt) is not a transition.
    (to != from.name() || !guard.is_empty()).then(|| Edge {
        from: from.name().to_string(),
        event: ev.label(),
        guard,
        to,
        kind,
        cause,
    })
}

/// An edge that every leaf under a superstate has is drawn once, from the superstate.
fn collapse_shared_edges(graph: &mut Graph) {
    let supers: BTreeSet<&'static str> = graph
        .leaves
        .values()
        .flat_map(|a| a.iter().copied())
        .collect();
    // Outermost first, so that Session absorbs what all of its leaves share.
    let mut order: Vec<&'static str> = supers.into_iter().collect();
    order.sort_by_key(|s| graph.leaves.values().filter(|a| a.contains(s)).count());
    order.reverse();
    for sup in order {
        let members: Vec<String> = graph
            .leaves
            .iter()
            .filter(|(_, a)| a.contains(&sup))
            .map(|(n, _)| n.clone())
            .collect();
        // An edge without its source: what must be the same for every member.
        let signatures: BTreeSet<Edge> = graph
            .edges
            .iter()
            .filter(|e| e.from == members[0])
            .map(|e| Edge {
                from: String::new(),
                ..e.clone()
            })
            .collect();
        for sig in signatures {
            let from_member = |m: &str| Edge {
                from: m.to_string(),
                ..sig.clone()
            };
            let shared = members
                .iter()
                .all(|m| graph.edges.contains(&from_member(m)));
            if shared && members.len() > 1 {
                for m in &members {
                    graph.edges.remove(&from_member(m));
                }
                graph.edges.insert(from_member(sup));
            }
        }
    }
}
