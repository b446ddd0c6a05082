use super::render::{dot_doc, mermaid_doc, scxml, wrap, Look};
use super::views::{detail_views, overview};
use super::*;
use crate::step::Step;
use sdlc_machine::explore::guard;
use std::collections::BTreeSet;

fn graph() -> &'static Graph {
    explored()
}

/// The exploration's limits keep only the counters the edges need (`exploration_limits` in
/// sdlc-machine): every decision they drew when they were last lowered is still drawn, so a
/// limit lowered too far fails here, not only as a diagram that quietly lost an edge.
#[test]
fn every_escalation_cause_halt_reason_and_wait_drawn_before_is_still_drawn() {
    let drawn: BTreeSet<String> = graph()
        .edges
        .iter()
        .filter(|e| !e.cause.is_empty())
        .map(|e| format!("{}: {}", e.kind.name(), e.cause))
        .collect();
    let escalations = [
        "bounce loop",
        "issue budget exhausted",
        "non-retryable failure",
        "retries exhausted",
        "review rounds exhausted",
        "skipped by operator",
    ];
    let halts = [
        "all issues blocked",
        "all issues escalated",
        "consecutive escalations",
        "decision timeout",
        "environment",
        "max consecutive failures",
        "merge lease",
        "network",
        "operator",
        "quota wait too long",
        "runner killed",
        "same failure on two issues",
        "session budget",
        "tracker",
        "waits exhausted",
        "workspace",
    ];
    let waits = [
        "CI",
        "fleet pause",
        "merge queue",
        "network",
        "tracker's own close",
    ];
    let expected = escalations
        .iter()
        .map(|c| format!("escalate: {c}"))
        .chain(halts.iter().map(|c| format!("halt: {c}")))
        .chain(waits.iter().map(|c| format!("wait: {c}")));
    for decision in expected {
        assert!(drawn.contains(&decision), "{decision} is no longer drawn");
    }
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
        "Escalating",
        "Releasing",
        "RecordingMerge",
        "WaitingForNetwork",
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
    let restart = |guard: &str, to: &str| {
        g.edges.iter().any(|e| {
            (e.from == "Implement" || e.from == "Build")
                && e.event == "Start"
                && e.guard.starts_with(guard)
                && e.to == to
        })
    };
    // The runner's own deaths never quarantine the issue: retries spent on them halt.
    assert!(
        restart(
            "attempt interrupted by a restart, halt: runner killed",
            "Halted"
        ),
        "no restart-halt edge out of Implement"
    );
    assert!(
        !restart("attempt interrupted by a restart, escalate", "Escalating"),
        "a restart escalated the issue"
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
        "Escalating"
    ));
    assert!(has("Escalating", "TrackerUpdated", "", "Selecting"));
    // The same failure on two issues in a row: the first one's quarantine is lifted, then
    // the halt; a tracker refusing the release halts on the tracker.
    assert!(g.edges.iter().any(|e| e.event == "StepFailed"
        && e.guard == "halt: same failure on two issues"
        && e.to == "Releasing"));
    assert!(has(
        "Releasing",
        "TrackerUpdated",
        "halt: same failure on two issues",
        "Halted"
    ));
    assert!(has(
        "Releasing",
        "TrackerWriteFailed",
        "halt: tracker",
        "Halted"
    ));
    assert!(has(
        "Escalating",
        "TrackerWriteFailed",
        "halt: tracker",
        "Halted"
    ));
    assert!(has(
        "RecordingMerge",
        "TrackerWriteFailed",
        "halt: tracker",
        "Halted"
    ));
    assert!(has(
        "Build",
        "NetworkFailed",
        "wait: network",
        "WaitingForNetwork"
    ));
    assert!(has("Build", "NetworkFailed", "halt: network", "Halted"));
    assert!(has("Build", "WorkspaceUnfit", "halt: workspace", "Halted"));
    assert!(has("Selecting", "IssueSelected", "halt: tracker", "Halted"));
    assert!(has("Verify", "PreconditionFailed", "bounce", "Simplify"));
    assert!(has("Selecting", "NoIssues", "", "Finished"));
    assert!(has("Merge", "StepSucceeded", "merged", "RecordingMerge"));
    assert!(has("RecordingMerge", "TrackerUpdated", "", "Selecting"));
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
        // The runner's own actions (tracker writes and reads, network waits, a person's
        // withdrawal) are decisive too: they are drawn, each once per phase; so is the wait
        // for the tracker's own close of a merged issue.
        o.graph.edges.len() <= 64,
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
            "Escalating",
            "Finished",
            "Halted",
            "RecordingMerge",
            "Releasing",
            "Selecting",
            "Specify",
            "WaitingForClose"
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
