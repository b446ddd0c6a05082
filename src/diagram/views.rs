//! The views a reviewer reads beside the full diagram: an overview of the superstates and the
//! decisive edges, and one detail view per superstate, all cut from the same exploration.

use super::{Edge, Graph, Kind, EXITED};
use crate::machine::{Core, Event};
use crate::step::Step;
use std::collections::{BTreeMap, BTreeSet};
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

/// The superstate that directly holds a state, when it is a phase (it holds step states): what
/// the overview folds it into. A phase's own waits (monitorCI's wait for CI) fold with it.
pub(super) fn phase_of(graph: &Graph, name: &str) -> Option<&'static str> {
    let parent = |leaf: &str| graph.leaves.get(leaf).and_then(|a| a.last().copied());
    let holder = parent(name)?;
    let holds_a_step = Step::ALL.iter().any(|s| {
        let step_state = crate::machine::state_of_step(*s).name();
        parent(step_state) == Some(holder)
    });
    holds_a_step.then_some(holder)
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
    // A network wait or a fleet pause returns to the state that waited: the overview draws it
    // as that state's own wait, not as a state of its own.
    let beside = |name: &str| matches!(name, "WaitingForNetwork" | "WaitingForFleet");
    let claim_lost = Event::ClaimLost { issue: 0 }.label();
    let mut leaves = BTreeMap::new();
    for (leaf, ancestors) in &graph.leaves {
        if beside(leaf) {
            continue;
        }
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
        // A claim lost to another runner stops the run as a signal does: the detailed views
        // draw it from every state it can reach.
        if beside(&e.from) || e.event == claim_lost {
            continue;
        }
        let from = overview_node(graph, &e.from);
        let to = if beside(&e.to) {
            from.clone()
        } else {
            overview_node(graph, &e.to)
        };
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
/// Steps first in lifecycle order (a phase drawn as one state ranks with its first step), then
/// the rest alphabetically.
pub(super) fn ordered(names: &BTreeSet<String>) -> Vec<&String> {
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
