//! `bounds` bounds every process the runner starts: a failing run, counted by the runner itself
//! (`SDLC_RUNNER_STATS=1`), never starts more child processes, nor more agents, than `bounds`
//! printed for its config, and no effect starts more children than the row `bounds` prints
//! for it, so the table cannot go stale unnoticed.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::json;
use std::collections::BTreeMap;

/// `key=value` fields after `prefix` on the last line of `out` that has it.
fn fields(out: &str, prefix: &str) -> BTreeMap<String, u64> {
    let line = out
        .lines()
        .rev()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{out}"));
    line.split_whitespace()
        .map(|f| {
            let (k, v) = f.split_once('=').expect("key=value");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect()
}

/// `(agents, others)` of the `bounds` line starting with `prefix`.
fn figure(bounds: &str, prefix: &str) -> (u64, u64) {
    let line = bounds
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{bounds}"));
    pair(line.rsplit(':').next().unwrap_or_default())
}

/// `(agents, others)` of "A agent process(es) and B other process(es)".
fn pair(text: &str) -> (u64, u64) {
    let numbers: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 2, "{text}");
    (numbers[0], numbers[1])
}

/// Runs `p` with the stats on, then checks what it started against `bounds` for its config.
fn started_within_the_bound(p: Project) -> String {
    started_within_the_bound_as(p, &[], "processes between two successful merges")
}

/// The same for a run with `args`, against the `bounds` line starting with `figure_line`.
fn started_within_the_bound_as(mut p: Project, args: &[&str], figure_line: &str) -> String {
    p.env.push(("SDLC_RUNNER_STATS".into(), "1".into()));
    let out = p.run(args);
    let all = text(&out);
    assert_eq!(code(&out), 1, "the scenario halts: {all}");
    let bounds = p
        .command(&["bounds", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("bounds");
    let bounds = String::from_utf8_lossy(&bounds.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stats = fields(&stderr, "stats: ");
    let per_effect = fields(&stderr, "stats-effects: ");
    let table = fields(&bounds, "children per effect, other than agents: ");
    // No merge happened: the whole run is one window before the first merge.
    let (agents, others) = match figure_line.strip_prefix("with --worker-id") {
        // The claims' line holds the three figures: the middle one is between two merges.
        Some(_) => {
            let line = bounds
                .lines()
                .find(|l| l.starts_with(figure_line))
                .unwrap_or_else(|| panic!("no `{figure_line}` line in:\n{bounds}"));
            let between = line
                .split("between two merges ")
                .nth(1)
                .and_then(|rest| rest.split(';').next())
                .unwrap_or_else(|| panic!("no between-merges figure in {line}"));
            pair(between)
        }
        None => figure(&bounds, figure_line),
    };
    assert!(stats["agents"] >= 1, "{all}");
    assert!(
        stats["agents"] <= agents,
        "{} agents > {agents}",
        stats["agents"]
    );
    assert!(
        stats["spawns"] <= agents + others,
        "{} children > {}",
        stats["spawns"],
        agents + others
    );
    for (effect, &seen) in &per_effect {
        let row = match effect.as_str() {
            // The agent of an agent step is not in the row; the stats count it.
            "RunStep" => table["RunStep"].max(table["RunStepBuiltin"]) + 1,
            other => *table
                .get(other)
                .unwrap_or_else(|| panic!("{other} has no row in:\n{bounds}")),
        };
        assert!(
            seen <= row,
            "{effect} started {seen} children, its row says {row}"
        );
    }
    all
}

/// Verify fails on every issue: two escalations, then the halt.
#[test]
fn a_failing_run_starts_no_more_processes_than_bounds_prints() {
    let p = Project::new(
        &[(1, "First", "x"), (2, "Second", "y")],
        json!({"steps": {"verify": ["fail-test"]}}),
        json!({}),
    );
    started_within_the_bound(p);
}

/// With a worker id every selected issue is claimed and the claim renewed before each request
/// (`ClaimIssue`, `RenewClaim`): still within what `bounds` prints for a claiming runner.
#[test]
fn a_failing_run_with_claims_starts_no_more_processes_than_bounds_prints() {
    let p = Project::new(
        &[(1, "First", "x"), (2, "Second", "y")],
        json!({"steps": {"verify": ["fail-test"]}}),
        json!({}),
    );
    let all = started_within_the_bound_as(p, &["--worker-id", "w1"], "with --worker-id");
    assert!(all.contains("claimed issue #1 as worker w1"), "{all}");
}

/// The builtin steps against a hook that rejects every push: the environment's halt.
#[test]
fn a_failing_run_of_builtin_steps_starts_no_more_processes_than_bounds_prints() {
    let p = Project::new(
        &[(1, "First", "x"), (2, "Second", "y")],
        json!({}),
        json!({"steps": e2e::builtin_steps()}),
    );
    p.reject_every_push();
    let all = started_within_the_bound(p);
    assert!(all.contains("on two issues in a row"), "{all}");
}
