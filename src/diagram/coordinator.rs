//! The coordinator of `run --workers N` as a state diagram, derived like the machine's: the
//! real `sdlc_machine::fleet::Coordinator` is driven breadth-first through every sequence of
//! reports up to a depth, and each reached coordinator is summarised as one of a handful of
//! states (running with k escalations in a row, paused, halted and why). An edge is a report
//! that moved the summary.

use sdlc_machine::fleet::{Coordinator, Dispatch, FleetHalt, FleetLimits, Report};
use std::collections::{BTreeSet, VecDeque};

const DEPTH: usize = 7;
const PAUSE_SECS: u64 = 10;

#[derive(Clone)]
struct Node {
    c: Coordinator,
    now: u64,
    next_issue: u32,
}

fn summary(n: &Node) -> (String, String) {
    match n.c.halt() {
        Some(FleetHalt::ConsecutiveEscalations { .. }) => (
            "HaltedEscalations".into(),
            "Halted: escalations in a row across workers".into(),
        ),
        Some(FleetHalt::SessionBudget { .. } | FleetHalt::DayBudget { .. }) => (
            "HaltedBudget".into(),
            "Halted: the workers' spend reached the session budget".into(),
        ),
        Some(FleetHalt::WorkerHalted { .. }) => (
            "HaltedWorker".into(),
            "Halted: a worker's machine halted".into(),
        ),
        None => match n.c.may_dispatch(n.now) {
            Dispatch::WaitUntil(_) => (
                "Paused".into(),
                "Paused: every worker waits for a rate limit".into(),
            ),
            _ => {
                let k = n.c.consecutive_escalations();
                (
                    format!("Running{k}"),
                    if k == 0 {
                        "Running".into()
                    } else {
                        format!("Running: {k} escalation(s) in a row")
                    },
                )
            }
        },
    }
}

/// The next coordinators and the report (or passing of time) that leads to each.
fn moves(n: &Node) -> Vec<(&'static str, Node)> {
    let mut out = Vec::new();
    let mut apply = |label: &'static str, report: Option<Report>, dt: u64| {
        let mut next = n.clone();
        next.now += dt;
        if let Some(r) = report {
            next.c.handle(r);
        }
        next.next_issue += 1;
        out.push((label, next));
    };
    let fresh = n.next_issue;
    let held = n.c.held_by(0).unwrap_or(fresh);
    apply(
        "worker merged its issue",
        Some(Report::Merged {
            worker: 0,
            issue: held,
        }),
        0,
    );
    apply(
        "worker escalated its issue",
        Some(Report::Escalated {
            worker: 0,
            issue: fresh,
        }),
        0,
    );
    apply(
        "spend reached the budget",
        Some(Report::Spent {
            worker: 0,
            micros: 1_000,
        }),
        0,
    );
    apply(
        "worker hit a rate limit",
        Some(Report::Waiting {
            worker: 1,
            until: n.now + PAUSE_SECS,
        }),
        0,
    );
    apply("worker halted", Some(Report::Halted { worker: 1 }), 0);
    if matches!(n.c.may_dispatch(n.now), Dispatch::WaitUntil(_)) {
        apply("the wait ended", None, PAUSE_SECS);
    }
    out
}

/// `state-diagrams/fleet.mmd`.
pub fn mermaid() -> String {
    let limits = FleetLimits {
        workers: 2,
        max_consecutive_escalations: 2,
        session_budget_micros: Some(1_000),
        day_budget_left_micros: None,
        session_spent_before_micros: 0,
        train: None,
        at_work: None,
    };
    let start = Node {
        c: Coordinator::new(limits),
        now: 0,
        next_issue: 1,
    };
    let mut states: BTreeSet<(String, String)> = BTreeSet::new();
    let mut edges: BTreeSet<(String, String, &'static str)> = BTreeSet::new();
    let mut queue = VecDeque::from([(start.clone(), 0usize)]);
    states.insert(summary(&start));
    while let Some((node, depth)) = queue.pop_front() {
        if depth == DEPTH {
            continue;
        }
        let (from, _) = summary(&node);
        for (label, next) in moves(&node) {
            let to = summary(&next);
            if to.0 != from {
                edges.insert((from.clone(), to.0.clone(), label));
            }
            states.insert(to);
            queue.push_back((next, depth + 1));
        }
    }
    let mut text = String::from(
        "---\ntitle: \"run --workers N: the coordinator (derived from sdlc_machine::fleet; limits: 2 escalations in a row, a session budget)\"\n---\nstateDiagram-v2\n",
    );
    for (id, caption) in &states {
        text.push_str(&format!("    state \"{caption}\" as {id}\n"));
    }
    text.push_str(&format!("    [*] --> {}\n", summary(&start).0));
    for (from, to, label) in &edges {
        text.push_str(&format!("    {from} --> {to}: {label}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fleet_diagram_shows_every_halt_and_the_pause() {
        let text = super::mermaid();
        for needle in [
            "Running0 --> Running1: worker escalated its issue",
            "Running1 --> HaltedEscalations: worker escalated its issue",
            "Running1 --> Running0: worker merged its issue",
            "Running0 --> HaltedBudget: spend reached the budget",
            "Running0 --> Paused: worker hit a rate limit",
            "Paused --> Running0: the wait ended",
            "Running0 --> HaltedWorker: worker halted",
        ] {
            assert!(text.contains(needle), "{needle}\n{text}");
        }
        assert!(
            !text.contains("HaltedBudget -->"),
            "a halt is final:\n{text}"
        );
    }
}
