//! State diagrams derived from the executable machine (never drawn by hand): a breadth-first
//! exploration feeds every kind of event to every reachable machine value, records which
//! named state each one leads to, and labels the edge with the event and the guard that the
//! effects reveal (retry, bounce, escalate: cause, halt: reason). Edges shared by every leaf
//! of a superstate are drawn once from the superstate.

use crate::failure::{FailureClass, Signature};
use crate::machine::{
    Core, DecisionOption, Effect, Event, HaltReason, Limits, Mode, Notice, Signal, State, Usage,
};
use crate::step::{Check, Step};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::fmt::Write as _;

/// Pseudo-state for "the process exits but the machine keeps its position" (signal stop).
const EXITED: &str = "Exited";

/// The exploration is finite by construction; this guards against a new unbounded field.
const MAX_EXPLORED: usize = 1_000_000;

/// What a transition decides for the run. The exploration reads it off the same effects that
/// reveal the guard, so the reader's views are drawn in the machine's own vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// On to the next step or state: nothing was decided against the issue.
    Advance,
    Retry,
    Bounce,
    Escalate,
    /// Back off (rate limit, quota).
    Wait,
    /// A wait or a person's answer is over: the step it interrupted goes on.
    Continue,
    AskPerson,
    Halt,
    Merged,
    /// A restart that finds progress in git and resumes there.
    Restart,
    /// A signal stop: the process exits, the machine keeps its position.
    Stop,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Advance,
        Kind::Retry,
        Kind::Bounce,
        Kind::Escalate,
        Kind::Wait,
        Kind::Continue,
        Kind::AskPerson,
        Kind::Halt,
        Kind::Merged,
        Kind::Restart,
        Kind::Stop,
    ];

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

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    pub from: String,
    pub event: &'static str,
    pub guard: String,
    pub to: String,
    /// Derived from the same effects as `guard`: never makes two edges of one guard distinct.
    pub kind: Kind,
    /// The escalation cause or halt reason, empty for the kinds that have none.
    pub cause: &'static str,
}

impl Edge {
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
    pub initial: String,
    /// leaf name → ancestors, outermost first
    pub leaves: BTreeMap<String, Vec<&'static str>>,
    pub finals: BTreeSet<String>,
    pub edges: BTreeSet<Edge>,
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
            Effect::RecordMerged { .. } => return (Kind::Merged, ""),
            Effect::AskDecision { .. } => return (Kind::AskPerson, ""),
            _ => {}
        }
    }
    (Kind::Advance, "")
}

fn guard(kind: Kind, cause: &str) -> String {
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
        HaltReason::Operator => "operator",
        HaltReason::DecisionTimeout => "decision timeout",
        HaltReason::RunnerStateLost => "runner state lost",
        HaltReason::Network => "network",
    }
}

/// Every kind of event, with payloads chosen to satisfy every guard from `core`'s value.
fn alphabet(core: &Core) -> Vec<Event> {
    let usage = Usage {
        cost_micros: 400_000,
        elapsed_ms: 1_000,
        turns: 1,
    };
    let mut evs = vec![
        Event::Start,
        Event::NoIssues,
        Event::AllEscalated,
        Event::AllBlocked,
        Event::WaitOver,
        Event::DecisionTimedOut,
        Event::ShutdownRequested {
            signal: Signal::Term,
        },
        Event::NetworkUnavailable,
    ];
    let fresh = core.escalated().iter().max().map_or(1, |m| m + 1);
    evs.push(Event::IssueSelected { issue: fresh });
    evs.push(Event::AlreadyMerged { issue: fresh });
    // The driver sends Resume only on start, when git shows progress: it may name any step.
    let resumed = core.runner().issue.unwrap_or(fresh);
    for next in Step::ALL {
        evs.push(Event::Resume {
            issue: resumed,
            next,
        });
    }
    if let Some(&old) = core.escalated().iter().next() {
        evs.push(Event::IssueSelected { issue: old });
    }
    for option in DecisionOption::ALL {
        evs.push(Event::Decided { option });
    }
    if let Some(step) = core.state().step() {
        evs.push(Event::PreconditionsOk { step });
        evs.push(Event::AlreadyDone { step });
        if let Some(&check) = Check::of(step).first() {
            evs.push(Event::PreconditionFailed { step, check });
        }
        evs.push(Event::StepSucceeded { step, usage });
        let last = core.runner().last_signature[step.index()].map_or(0, |s| s.0);
        for (class, sig, hint) in [
            (FailureClass::TestAssertion, last + 1, None),
            (FailureClass::TestAssertion, last, None),
            (FailureClass::ContextWindow, last + 1, None),
            (FailureClass::RateLimit, 7, None),
            (FailureClass::Quota, 8, Some(60)),
            (FailureClass::Quota, 8, Some(u64::MAX)),
            (FailureClass::Auth, 9, None),
        ] {
            evs.push(Event::StepFailed {
                step,
                class,
                signature: Signature(sig),
                usage,
                wait_hint_secs: hint,
            });
        }
    }
    evs
}

/// Limits that make every guard reachable with a small state space.
fn exploration_limits() -> Vec<Limits> {
    let mut phase = [0; Step::COUNT];
    phase[Step::Verify.index()] = 3;
    let base = Limits {
        max_retries_per_step: 2,
        max_bounce_retries: 1,
        max_consecutive_escalations: 2,
        max_consecutive_same_failure: 2,
        max_consecutive_failures: phase,
        max_rate_limit_waits: 1,
        max_quota_wait_secs: 3600,
        max_repair_iterations: 1,
        ..Limits::default()
    };
    let manual = Limits {
        manual_approval: true,
        ..base.clone()
    };
    let budgeted = Limits {
        per_issue_budget_micros: Some(1_000_000),
        per_session_budget_micros: Some(2_000_000),
        max_consecutive_escalations: 3,
        ..base.clone()
    };
    vec![base, manual, budgeted]
}

/// Explore the machine from its initial state with every event kind.
pub fn explore() -> Graph {
    let mut graph = Graph {
        initial: String::new(),
        leaves: BTreeMap::new(),
        finals: BTreeSet::new(),
        edges: BTreeSet::new(),
    };
    for limits in exploration_limits() {
        explore_with(limits, &mut graph);
    }
    collapse_shared_edges(&mut graph);
    graph
}

fn explore_with(limits: Limits, graph: &mut Graph) {
    let start = Core::new(limits, Mode::Continuous);
    graph.initial = start.state().name().to_string();
    let mut seen: HashSet<(State, crate::machine::Runner)> = HashSet::new();
    let mut queue = VecDeque::from([start]);
    while let Some(core) = queue.pop_front() {
        if !seen.insert(exploration_key(&core)) {
            continue;
        }
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
            let stays = next.state().name() == from.name();
            let exits = effects.iter().any(|e| matches!(e, Effect::Exit { .. }));
            let to = if stays && exits && !next.is_terminal() {
                EXITED.to_string()
            } else {
                next.state().name().to_string()
            };
            // A restart fails the interrupted attempt: what it decides is that failure's kind.
            let (mut kind, cause) = decision(&effects);
            let mut guard = guard(kind, cause);
            if ev == Event::Start {
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
            if to != from.name() || !guard.is_empty() {
                graph.edges.insert(Edge {
                    from: from.name().to_string(),
                    event: ev.label(),
                    guard,
                    to,
                    kind,
                    cause,
                });
            }
            queue.push_back(next);
        }
    }
}

/// Two machine values that offer the same edges share a key: issue numbers, spend beyond the
/// budgets, statistics and the counters of other steps do not change which edges exist.
fn exploration_key(core: &Core) -> (State, crate::machine::Runner) {
    let (state, mut r) = core.snapshot();
    if state.is_terminal() {
        return (state, crate::machine::Runner::new(r.limits, r.mode));
    }
    // Per-step counters of steps other than the current one are abstracted away: every edge
    // they could enable is also reached with the step current (the state space stays small).
    let current = state.step().map(|s| s.index());
    for i in (0..Step::COUNT).filter(|&i| Some(i) != current) {
        r.attempts[i] = 0;
        r.same_failure[i] = 0;
        r.last_signature[i] = None;
        r.last_class[i] = None;
        r.repairs[i] = 0;
    }
    // A person granting "retry once more" can push counters past their limits forever; past
    // the limit every value behaves alike.
    for i in 0..Step::COUNT {
        r.attempts[i] = r.attempts[i].min(r.limits.max_retries_per_step + 1);
        r.same_failure[i] = r.same_failure[i].min(r.limits.max_consecutive_same_failure + 1);
    }
    r.stats = Default::default();
    r.last_usage = Usage::default();
    // A per-step failure streak without a threshold can never trigger anything.
    for (i, f) in r.phase_failures.iter_mut().enumerate() {
        if r.limits.max_consecutive_failures[i] == 0 {
            *f = 0;
        }
    }
    // Only equality with the previous signature matters, never its value.
    for sig in r.last_signature.iter_mut().flatten() {
        *sig = Signature(0);
    }
    // The last failure only feeds diagnostics.
    r.last_failure = None;
    let n = r.escalated.len().min(2) as u32;
    r.escalated = (1..=n).collect();
    r.issue = r
        .issue
        .map(|i| if core.escalated().contains(&i) { 1 } else { 0 });
    let cap = |v: u64, budget: Option<u64>| budget.map_or(0, |b| v.min(b.saturating_add(1)));
    r.session_cost_micros = cap(r.session_cost_micros, r.limits.per_session_budget_micros);
    r.issue_cost_micros = cap(r.issue_cost_micros, r.limits.per_issue_budget_micros);
    r.issue_elapsed_ms = cap(r.issue_elapsed_ms, r.limits.per_issue_budget_ms);
    (state, r)
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

/// A picture for a reader: a small graph rendered like the full one, with the names its edges
/// reach that are drawn in another view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The file stem.
    pub name: String,
    pub caption: String,
    pub graph: Graph,
    pub outside: BTreeSet<String>,
}

/// The view that holds the states outside every phase, and the superstates around the phases.
const SESSION_VIEW: &str = "session";

fn is_step_state(name: &str) -> bool {
    Step::ALL
        .iter()
        .any(|s| crate::machine::state_of_step(*s).name() == name)
}

/// The superstate that directly holds a step state: what the overview folds it into.
fn phase_of(graph: &Graph, name: &str) -> Option<&'static str> {
    if !is_step_state(name) {
        return None;
    }
    graph.leaves.get(name).and_then(|a| a.last().copied())
}

/// The phases in lifecycle order, read from the machine's nesting rather than listed here, so
/// a new phase gets its own view without touching this file.
fn phases(graph: &Graph) -> Vec<&'static str> {
    let mut found = Vec::new();
    for step in Step::ALL {
        if let Some(p) = phase_of(graph, crate::machine::state_of_step(step).name()) {
            if !found.contains(&p) {
                found.push(p);
            }
        }
    }
    found
}

fn overview_node(graph: &Graph, name: &str) -> String {
    phase_of(graph, name).map_or_else(|| name.to_string(), str::to_string)
}

/// The decisive edges between the phases and the session-level states. Step states fold into
/// their phase; an edge is decisive when its guard decides something (every kind but advance)
/// or when it advances out of its phase. Edges of one (from, to, kind) become one, labelled with
/// the causes (or, where a kind has none, the events) that take it.
pub fn overview(graph: &Graph) -> View {
    let mut leaves = BTreeMap::new();
    for (leaf, ancestors) in &graph.leaves {
        match phase_of(graph, leaf) {
            Some(phase) => {
                let mut around = ancestors.clone();
                around.pop();
                leaves.insert(phase.to_string(), around);
            }
            None => {
                leaves.insert(leaf.clone(), ancestors.clone());
            }
        }
    }
    let restart = Event::Start.label();
    let mut merged: BTreeMap<(String, String, Kind), BTreeSet<&'static str>> = BTreeMap::new();
    for e in &graph.edges {
        let from = overview_node(graph, &e.from);
        let to = overview_node(graph, &e.to);
        if e.kind == Kind::Advance && from == to {
            continue;
        }
        let why = if !e.cause.is_empty() {
            e.cause
        } else if e.event == restart {
            "restart mid-attempt"
        } else {
            e.event
        };
        merged.entry((from, to, e.kind)).or_default().insert(why);
    }
    let edges = merged
        .into_iter()
        .map(|((from, to, kind), why)| Edge {
            from,
            event: kind.name(),
            guard: why.into_iter().collect::<Vec<_>>().join(", "),
            to,
            kind,
            cause: "",
        })
        .collect();
    View {
        name: "overview".into(),
        caption: format!(
            "Overview: the decisive edges; {} each stand for their steps (every edge: the detail views and sdlc-runner.*)",
            phases(graph).join(", ")
        ),
        graph: Graph {
            initial: overview_node(graph, &graph.initial),
            leaves,
            finals: graph.finals.clone(),
            edges,
        },
        outside: BTreeSet::new(),
    }
}

/// The view a state or superstate is drawn in; the exit pseudo-state belongs to none.
fn home(graph: &Graph, name: &str) -> Option<String> {
    if name == EXITED {
        return None;
    }
    let phase = phase_of(graph, name).or_else(|| phases(graph).into_iter().find(|p| *p == name));
    Some(phase.map_or_else(|| SESSION_VIEW.to_string(), str::to_lowercase))
}

/// One view per phase and one for the session-level states: each holds its states and every
/// edge of the full graph that touches them, unchanged.
pub fn detail_views(graph: &Graph) -> Vec<View> {
    let mut names: Vec<String> = phases(graph).iter().map(|p| p.to_lowercase()).collect();
    names.push(SESSION_VIEW.to_string());
    names.into_iter().map(|n| detail_view(graph, n)).collect()
}

fn detail_view(graph: &Graph, name: String) -> View {
    let own = |n: &str| home(graph, n).as_deref() == Some(name.as_str());
    let leaves: BTreeMap<String, Vec<&'static str>> = graph
        .leaves
        .iter()
        .filter(|(leaf, _)| own(leaf))
        .map(|(leaf, a)| (leaf.clone(), a.iter().copied().filter(|s| own(s)).collect()))
        .collect();
    let edges: BTreeSet<Edge> = graph
        .edges
        .iter()
        .filter(|e| own(&e.from) || own(&e.to))
        .cloned()
        .collect();
    let outside = edges
        .iter()
        .flat_map(|e| [&e.from, &e.to])
        .filter(|n| !own(n) && n.as_str() != EXITED)
        .cloned()
        .collect();
    let names: BTreeSet<String> = leaves.keys().cloned().collect();
    let states: Vec<&str> = ordered(&names).into_iter().map(String::as_str).collect();
    View {
        caption: format!(
            "{}: {} and every edge touching them; the other states are detailed in their own view",
            name,
            states.join(", ")
        ),
        graph: Graph {
            initial: if own(&graph.initial) {
                graph.initial.clone()
            } else {
                String::new()
            },
            leaves,
            finals: graph.finals.iter().filter(|f| own(f)).cloned().collect(),
            edges,
        },
        outside,
        name,
    }
}

/// Nested superstate tree: superstate → (child superstates, leaves).
type Tree = BTreeMap<Option<&'static str>, (BTreeSet<&'static str>, BTreeSet<String>)>;

fn tree(graph: &Graph) -> Tree {
    let mut t = Tree::new();
    for (leaf, ancestors) in &graph.leaves {
        let mut parent = None;
        for a in ancestors {
            t.entry(parent).or_default().0.insert(a);
            parent = Some(*a);
        }
        t.entry(parent).or_default().1.insert(leaf.clone());
    }
    t
}

/// One step of a depth-first walk of the tree, with the indentation of its depth.
enum Visit<'a> {
    Leaf(&'a str),
    Enter(&'static str),
    Leave,
}

/// Leaves first (lifecycle order), then each superstate between its Enter and Leave: the
/// nesting every renderer shares.
fn walk(t: &Tree, node: Option<&'static str>, depth: usize, visit: &mut dyn FnMut(Visit, &str)) {
    let pad = "    ".repeat(depth);
    if let Some((subs, leaves)) = t.get(&node) {
        for leaf in ordered(leaves) {
            visit(Visit::Leaf(leaf), &pad);
        }
        for sub in subs {
            visit(Visit::Enter(sub), &pad);
            walk(t, Some(sub), depth + 1, visit);
            visit(Visit::Leave, &pad);
        }
    }
}

/// Steps first in lifecycle order (a phase drawn as one state ranks with its first step), then
/// the rest alphabetically.
fn ordered(names: &BTreeSet<String>) -> Vec<&String> {
    let rank = |n: &str| {
        Step::ALL.iter().position(|s| {
            let state = crate::machine::state_of_step(*s);
            state.name() == n || Core::ancestors(&state).last() == Some(&n)
        })
    };
    let mut v: Vec<&String> = names.iter().collect();
    v.sort_by_key(|n| (rank(n).unwrap_or(usize::MAX), (*n).clone()));
    v
}

pub fn mermaid(graph: &Graph) -> String {
    mermaid_doc(graph, "")
}

fn mermaid_doc(graph: &Graph, caption: &str) -> String {
    let t = tree(graph);
    let mut out = String::from(
        "%% Generated by `sdlc-runner diagram` from the executable machine. Do not edit.\n",
    );
    if !caption.is_empty() {
        let _ = writeln!(out, "%% {caption}");
    }
    out.push_str("stateDiagram-v2\n");
    walk(&t, None, 1, &mut |v, pad| {
        let _ = match v {
            Visit::Leaf(leaf) => writeln!(out, "{pad}{leaf}"),
            Visit::Enter(sub) => writeln!(out, "{pad}state {sub} {{"),
            Visit::Leave => writeln!(out, "{pad}}}"),
        };
    });
    if !graph.initial.is_empty() {
        let _ = writeln!(out, "    [*] --> {}", graph.initial);
    }
    for e in &graph.edges {
        let to = if e.to == EXITED { "[*]" } else { e.to.as_str() };
        let _ = writeln!(out, "    {} --> {} : {}", e.from, to, e.label());
    }
    for f in &graph.finals {
        let _ = writeln!(out, "    {f} --> [*]");
    }
    out
}

/// How a DOT document is dressed; the full diagram uses none of it.
struct Look<'a> {
    id: &'a str,
    caption: &'a str,
    outside: &'a BTreeSet<String>,
    /// One arrow per (from, to, kind) with the labels stacked, coloured by kind.
    by_kind: bool,
}

/// Colour and line of an arrow by what it decides, so a reader finds the halts at a glance.
fn kind_style(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Advance => ("black", ""),
        Kind::Retry => ("gray45", ""),
        Kind::Bounce => ("darkorange3", ""),
        Kind::Escalate => ("orangered3", ", penwidth=1.5"),
        Kind::Wait => ("steelblue", ""),
        Kind::Continue => ("steelblue", ", style=dashed"),
        Kind::AskPerson => ("purple", ""),
        Kind::Halt => ("red3", ", penwidth=1.5"),
        Kind::Merged => ("forestgreen", ", penwidth=2"),
        Kind::Restart => ("gray45", ", style=dashed"),
        Kind::Stop => ("gray45", ", style=dotted"),
    }
}

pub fn dot(graph: &Graph) -> String {
    dot_doc(
        graph,
        &Look {
            id: "sdlc_runner",
            caption: "",
            outside: &BTreeSet::new(),
            by_kind: false,
        },
    )
}

/// Breaks a label after its commas into DOT lines of about 40 characters: long lists of causes
/// would otherwise stretch the picture sideways.
fn wrap(label: &str) -> String {
    let mut out = String::new();
    let mut line = 0;
    for (i, part) in label.split(", ").enumerate() {
        if i > 0 {
            if line + part.len() > 40 {
                out.push_str(",\\n");
                line = 0;
            } else {
                out.push_str(", ");
                line += 2;
            }
        }
        out.push_str(part);
        line += part.len();
    }
    out
}

fn dot_doc(graph: &Graph, look: &Look) -> String {
    let t = tree(graph);
    let mut out = format!("// Generated by `sdlc-runner diagram` from the executable machine. Do not edit.\ndigraph {} {{\n    compound=true;\n    newrank=true;\n    rankdir=LR;\n    ranksep=0.9;\n    node [shape=box, style=rounded, fontname=\"Helvetica\"];\n    edge [fontname=\"Helvetica\", fontsize=9];\n", look.id);
    if !look.caption.is_empty() {
        let _ = writeln!(
            out,
            "    label=\"{}\";\n    labelloc=t;\n    fontname=\"Helvetica\";",
            look.caption.replace('"', "'")
        );
    }
    if !graph.initial.is_empty() {
        out.push_str("    __start [shape=point];\n");
    }
    if graph.edges.iter().any(|e| e.to == EXITED) {
        out.push_str("    Exited [shape=doublecircle, label=\"exit 0\\n(position kept)\"];\n");
    }
    walk(&t, None, 1, &mut |v, pad| match v {
        Visit::Leaf(leaf) => {
            let shape = if graph.finals.contains(leaf) {
                ", peripheries=2"
            } else {
                ""
            };
            let _ = writeln!(out, "{pad}{leaf} [label=\"{leaf}\"{shape}];");
        }
        Visit::Enter(sub) => {
            let _ = writeln!(out, "{pad}subgraph cluster_{sub} {{");
            let _ = writeln!(out, "{pad}    label=\"{sub}\";");
            let _ = writeln!(out, "{pad}    {sub}__anchor [shape=point, style=invis];");
        }
        Visit::Leave => {
            let _ = writeln!(out, "{pad}}}");
        }
    });
    for name in look.outside {
        let _ = writeln!(
            out,
            "    {name} [label=\"{name}\", style=\"rounded,dashed\", color=gray45];"
        );
    }
    if !graph.initial.is_empty() {
        let _ = writeln!(out, "    __start -> {};", graph.initial);
    }
    let is_super = |n: &str| {
        t.keys().any(|k| *k == Some(n)) || t.values().any(|v| v.0.iter().any(|s| *s == n))
    };
    // A superstate's edge leaves from its cluster's border unless it ends inside the cluster.
    let tail = |from: &str, to: &str| {
        let head_inside = graph.leaves.get(to).is_some_and(|a| a.contains(&from));
        if is_super(from) && !head_inside {
            (format!("{from}__anchor"), format!(", ltail=cluster_{from}"))
        } else if is_super(from) {
            (format!("{from}__anchor"), String::new())
        } else {
            (from.to_string(), String::new())
        }
    };
    if look.by_kind {
        let mut arrows: BTreeMap<(&str, &str, Kind), Vec<String>> = BTreeMap::new();
        for e in &graph.edges {
            arrows
                .entry((&e.from, &e.to, e.kind))
                .or_default()
                .push(wrap(&e.label().replace('"', "'")));
        }
        for ((from, to, kind), labels) in arrows {
            let (from, tail) = tail(from, to);
            let (color, line) = kind_style(kind);
            // Edges that go back (to an earlier step, to selection, into the interrupted step)
            // would otherwise pull the lifecycle out of its left-to-right order.
            let back = matches!(
                kind,
                Kind::Bounce | Kind::Escalate | Kind::Continue | Kind::Merged | Kind::Restart
            );
            let constraint = if back { ", constraint=false" } else { "" };
            let _ = writeln!(
                out,
                "    {from} -> {to} [label=\"{}\", color={color}, fontcolor={color}{line}{constraint}{tail}];",
                labels.join("\\n")
            );
        }
    } else {
        for e in &graph.edges {
            let (from, tail) = tail(&e.from, &e.to);
            let _ = writeln!(
                out,
                "    {from} -> {} [label=\"{}\"{tail}];",
                e.to,
                e.label().replace('"', "'")
            );
        }
    }
    out.push_str("}\n");
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn scxml(graph: &Graph) -> String {
    let t = tree(graph);
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- Generated by `sdlc-runner diagram` from the executable machine. Do not edit. -->\n<scxml xmlns=\"http://www.w3.org/2005/07/scxml\" xmlns:sdlc=\"urn:sdlc-runner:guard\" version=\"1.0\" initial=\"{}\">\n",
        graph.initial
    );
    fn transitions(out: &mut String, graph: &Graph, from: &str, pad: &str) {
        for e in graph.edges.iter().filter(|e| e.from == from) {
            let guard = if e.guard.is_empty() {
                String::new()
            } else {
                format!(" sdlc:guard=\"{}\"", xml_escape(&e.guard))
            };
            let _ = writeln!(
                out,
                "{pad}<transition event=\"{}\" target=\"{}\"{guard}/>",
                e.event, e.to
            );
        }
    }
    walk(&t, None, 1, &mut |v, pad| match v {
        Visit::Leaf(leaf) if graph.finals.contains(leaf) => {
            let _ = writeln!(out, "{pad}<final id=\"{leaf}\"/>");
        }
        Visit::Leaf(leaf) => {
            let _ = writeln!(out, "{pad}<state id=\"{leaf}\">");
            transitions(&mut out, graph, leaf, &format!("{pad}    "));
            let _ = writeln!(out, "{pad}</state>");
        }
        Visit::Enter(sub) => {
            let inside: BTreeSet<String> = graph
                .leaves
                .iter()
                .filter(|(_, a)| a.contains(&sub))
                .map(|(n, _)| n.clone())
                .collect();
            let first = if inside.contains(&graph.initial) {
                graph.initial.clone()
            } else {
                ordered(&inside)
                    .first()
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            };
            let _ = writeln!(out, "{pad}<state id=\"{sub}\" initial=\"{first}\">");
            transitions(&mut out, graph, sub, &format!("{pad}    "));
        }
        Visit::Leave => {
            let _ = writeln!(out, "{pad}</state>");
        }
    });
    let _ = writeln!(out, "    <final id=\"{EXITED}\"/>");
    out.push_str("</scxml>\n");
    out
}

/// One file `diagram` writes and `--check` compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub name: String,
    pub text: String,
    pub edges: usize,
}

/// The full diagrams in three formats, then the reader's views (overview, one per phase, the
/// session-level states) as mermaid and DOT; all from one exploration.
pub fn render_all(graph: &Graph) -> Vec<Rendered> {
    let full = |name: &str, text: String| Rendered {
        name: name.to_string(),
        text,
        edges: graph.edges.len(),
    };
    let mut files = vec![
        full("sdlc-runner.mmd", mermaid(graph)),
        full("sdlc-runner.dot", dot(graph)),
        full("sdlc-runner.scxml", scxml(graph)),
    ];
    let mut views = vec![overview(graph)];
    views.extend(detail_views(graph));
    for view in &views {
        let edges = view.graph.edges.len();
        files.push(Rendered {
            name: format!("{}.mmd", view.name),
            text: mermaid_doc(&view.graph, &view.caption),
            edges,
        });
        let look = Look {
            id: &format!("sdlc_runner_{}", view.name),
            caption: &view.caption,
            outside: &view.outside,
            by_kind: true,
        };
        files.push(Rendered {
            name: format!("{}.dot", view.name),
            text: dot_doc(&view.graph, &look),
            edges,
        });
    }
    files
}

/// Exploring takes a few seconds: once for every test of the crate.
#[cfg(test)]
pub(crate) fn explored() -> &'static Graph {
    static GRAPH: std::sync::OnceLock<Graph> = std::sync::OnceLock::new();
    GRAPH.get_or_init(explore)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> &'static Graph {
        explored()
    }

    #[test]
    fn every_state_of_the_machine_is_reached() {
        let g = graph();
        let mut names: Vec<&str> = Step::ALL
            .iter()
            .map(|s| crate::machine::state_of_step(*s).name())
            .collect();
        names.extend([
            "Selecting",
            "BackingOff",
            "AwaitingDecision",
            "Halted",
            "Finished",
        ]);
        for name in names {
            assert!(g.leaves.contains_key(name), "{name} never reached");
        }
        assert_eq!(g.initial, "Selecting");
        assert_eq!(
            g.finals,
            BTreeSet::from(["Finished".to_string(), "Halted".to_string()])
        );
    }

    #[test]
    fn a_restart_mid_attempt_is_drawn_as_a_failure_of_that_attempt() {
        let g = graph();
        assert!(
            g.edges
                .iter()
                .any(|e| (e.from == "Implement" || e.from == "Build")
                    && e.event == "Start"
                    && e.guard
                        .starts_with("attempt interrupted by a restart, escalate")
                    && e.to == "Selecting"),
            "no restart edge out of Implement"
        );
    }

    #[test]
    fn guards_tell_apart_what_one_event_can_do() {
        let g = graph();
        let has = |from: &str, event: &str, guard: &str, to: &str| {
            g.edges
                .iter()
                .any(|e| e.from == from && e.event == event && e.guard == guard && e.to == to)
        };
        assert!(has("Verify", "StepFailed", "retry", "Verify"));
        assert!(has(
            "Verify",
            "StepFailed",
            "halt: max consecutive failures",
            "Halted"
        ));
        assert!(has("Build", "StepFailed", "halt: environment", "Halted"));
        assert!(has(
            "Build",
            "StepFailed",
            "escalate: retries exhausted",
            "Selecting"
        ));
        assert!(has("Verify", "PreconditionFailed", "bounce", "Simplify"));
        assert!(has("Selecting", "NoIssues", "", "Finished"));
        assert!(has("Merge", "StepSucceeded", "merged", "Selecting"));
        assert!(has("Session", "ShutdownRequested", "", EXITED));
        assert!(has("BackingOff", "WaitOver", "waiting in verify", "Verify"));
    }

    #[test]
    fn scxml_is_nested_and_every_target_is_declared() {
        let g = graph();
        let x = scxml(g);
        assert!(x.starts_with("<?xml") && x.trim_end().ends_with("</scxml>"));
        assert_eq!(x.matches("<state ").count(), x.matches("</state>").count());
        let ids: BTreeSet<&str> = x
            .split("id=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        for target in x
            .split("target=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
        {
            assert!(ids.contains(target), "transition to undeclared {target}");
        }
        for sup in ["Session", "Cycle", "Specify", "Build", "Deliver"] {
            assert!(
                ids.contains(sup),
                "superstate {sup} is not a composite state"
            );
        }
    }

    #[test]
    fn every_edge_kind_agrees_with_its_guard() {
        for e in &graph().edges {
            match e.kind {
                Kind::Advance => assert!(
                    e.guard.is_empty() || e.guard.starts_with("attempt interrupted"),
                    "{e:?}"
                ),
                Kind::Continue => assert!(e.guard.starts_with("waiting in"), "{e:?}"),
                Kind::Restart => assert_eq!(e.guard, "git shows progress", "{e:?}"),
                Kind::Stop => assert_eq!(e.to, EXITED, "{e:?}"),
                kind => assert!(
                    e.guard.contains(&guard(kind, e.cause)),
                    "{e:?} is not labelled {}",
                    kind.name()
                ),
            }
        }
    }

    #[test]
    fn diagram_overview_is_small_and_has_every_decisive_kind() {
        let o = overview(graph());
        assert!(
            o.graph.edges.len() <= 40,
            "overview has {} edges",
            o.graph.edges.len()
        );
        let kinds: BTreeSet<Kind> = o.graph.edges.iter().map(|e| e.kind).collect();
        for kind in [
            Kind::Advance,
            Kind::Retry,
            Kind::Bounce,
            Kind::Escalate,
            Kind::Wait,
            Kind::AskPerson,
            Kind::Halt,
            Kind::Merged,
            Kind::Restart,
        ] {
            assert!(kinds.contains(&kind), "no {} edge", kind.name());
        }
        let keys: Vec<(&str, &str, Kind)> = o
            .graph
            .edges
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str(), e.kind))
            .collect();
        let unique: BTreeSet<_> = keys.iter().collect();
        assert_eq!(keys.len(), unique.len(), "a (from, to, kind) drawn twice");
        let states: BTreeSet<&str> = o.graph.leaves.keys().map(String::as_str).collect();
        assert_eq!(
            states,
            BTreeSet::from([
                "AwaitingDecision",
                "BackingOff",
                "Build",
                "Deliver",
                "Finished",
                "Halted",
                "Selecting",
                "Specify"
            ])
        );
        assert!(o.graph.edges.iter().any(|e| e.from == "Build"
            && e.to == "Halted"
            && e.kind == Kind::Halt
            && e.guard.contains("environment")
            && e.guard.contains("max consecutive failures")));
        assert!(!o
            .graph
            .edges
            .iter()
            .any(|e| e.kind == Kind::Advance && e.from == e.to));
    }

    #[test]
    fn diagram_every_state_is_in_exactly_one_detail_view() {
        let g = graph();
        let views = detail_views(g);
        let names: Vec<&str> = views.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["specify", "build", "deliver", "session"]);
        for leaf in g.leaves.keys() {
            let holders: Vec<&str> = views
                .iter()
                .filter(|v| v.graph.leaves.contains_key(leaf))
                .map(|v| v.name.as_str())
                .collect();
            assert_eq!(holders.len(), 1, "{leaf} is in {holders:?}");
        }
    }

    #[test]
    fn diagram_every_edge_is_in_a_detail_view_and_drawn_there() {
        let g = graph();
        let views = detail_views(g);
        let rendered: Vec<(String, String)> = views
            .iter()
            .map(|v| {
                let look = Look {
                    id: "t",
                    caption: &v.caption,
                    outside: &v.outside,
                    by_kind: true,
                };
                (mermaid_doc(&v.graph, &v.caption), dot_doc(&v.graph, &look))
            })
            .collect();
        for e in &g.edges {
            let holders: Vec<usize> = (0..views.len())
                .filter(|&i| views[i].graph.edges.contains(e))
                .collect();
            assert!(!holders.is_empty(), "{e:?} is in no detail view");
            for i in holders {
                let (mmd, dot) = &rendered[i];
                assert!(
                    mmd.contains(&e.label()),
                    "{e:?} not in {}.mmd",
                    views[i].name
                );
                let wrapped = wrap(&e.label().replace('"', "'"));
                assert!(dot.contains(&wrapped), "{e:?} not in {}.dot", views[i].name);
            }
        }
        for v in &views {
            let supers: BTreeSet<&str> = v.graph.leaves.values().flatten().copied().collect();
            let own = |n: &String| v.graph.leaves.contains_key(n) || supers.contains(n.as_str());
            for e in &v.graph.edges {
                assert!(
                    own(&e.from) || own(&e.to),
                    "{e:?} touches nothing of {}",
                    v.name
                );
            }
        }
    }
}
