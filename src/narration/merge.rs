//! The merge: the turn (the fleet's, the train's, the tracker's lease) and the merge run
//! (its push for CI, its conflicts, the forge's merge queue).

use super::until;
use chrono::{DateTime, Utc};
use std::fmt::Display;
use std::path::Path;

// The merge turn.

/// A tree of the merge train, as a person reads it: `main + #1 + #2`.
pub fn train_tree(cars: &[u32]) -> String {
    let mut text = "main".to_string();
    for car in cars {
        text.push_str(&format!(" + #{car}"));
    }
    text
}

pub fn waiting_in_train(issue: u32, position: usize) -> String {
    format!("issue #{issue}: in the merge train at position {position} (0: the head), waiting for CI's verdicts ahead")
}

pub fn train_testing(issue: u32, cars: &[u32], epoch: u32) -> String {
    format!(
        "issue #{issue}: merge train: CI tests {} (main of train epoch {epoch})",
        train_tree(cars)
    )
}

pub fn train_tested(cars: &[u32], merge: Option<&str>, passed: bool) -> String {
    let verdict = if passed { "passed" } else { "failed" };
    let commit = match merge {
        Some(sha) => format!(" at {}", &sha[..sha.len().min(12)]),
        None => " (its merges conflict)".to_string(),
    };
    format!("merge train: CI {verdict} {}{commit}", train_tree(cars))
}

pub fn train_not_tested(cars: &[u32], why: &dyn Display) -> String {
    format!(
        "merge train: {} was not tested: {why}; it is tested again",
        train_tree(cars)
    )
}

pub fn train_withdrawn(cars: &[u32]) -> String {
    format!(
        "merge train: CI on {} was stopped: a PR ahead of it failed or main moved, so the train no longer waits for this tree",
        train_tree(cars)
    )
}

pub fn train_main_moved(main: &str) -> String {
    format!(
        "merge train: main moved to {} without the train: every tree is built again on it",
        &main[..main.len().min(12)]
    )
}

pub fn train_settled(settled: &sdlc_machine::fleet::Settled) -> String {
    match settled {
        sdlc_machine::fleet::Settled::Land { cars, tree } => format!(
            "merge train: {} land{} (CI passed {})",
            cars.iter()
                .map(|c| format!("#{c}"))
                .collect::<Vec<_>>()
                .join(", "),
            if cars.len() == 1 { "s" } else { "" },
            train_tree(&tree.cars)
        ),
        sdlc_machine::fleet::Settled::Return {
            car,
            failed,
            passed,
        } => format!(
            "merge train: #{car} is returned to its cycle: CI failed {} and passed {} without it",
            train_tree(&failed.cars),
            train_tree(&passed.cars)
        ),
    }
}

pub fn train_restored(cars: &[u32], settled: &[u32]) -> String {
    let list = |cars: &[u32]| match cars {
        [] => "none".to_string(),
        cars => cars
            .iter()
            .map(|c| format!("#{c}"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "merge train: resumed from its journal: PRs in it {}, settled {}; the verdicts given stand, the runs the last run left under way are tested again",
        list(cars),
        list(settled)
    )
}

pub fn train_not_restored(path: &std::path::Path) -> String {
    format!(
        "merge train: {} was written with other train.* limits: the train starts afresh",
        path.display()
    )
}

pub fn train_not_journaled(path: &std::path::Path, e: &dyn Display) -> String {
    format!(
        "warning: cannot journal the merge train in {}: {e}; a kill now costs CI runs again (main stays green)",
        path.display()
    )
}

pub fn waiting_for_fleet_turn(issue: u32) -> String {
    format!("issue #{issue}: waiting for the fleet's merge turn (another worker is merging)")
}

pub fn waiting_for_merge_lease(
    issue: u32,
    (worker, merging, expires): (&str, u32, DateTime<Utc>),
    lease_file: Option<&Path>,
) -> String {
    let file = lease_file
        .map(|f| format!("; remove {} if that runner is gone", f.display()))
        .unwrap_or_default();
    format!(
        "issue #{issue}: waiting for the merge lease, held by worker {worker} (merging #{merging}) until {}{file}",
        until(expires)
    )
}

pub fn cannot_take_merge_lease(error: &dyn Display) -> String {
    format!("cannot take the merge lease: {error}")
}

/// A line about the merge.
pub fn merge(text: &str) -> String {
    format!("merge: {text}")
}

pub fn cannot_give_merge_lease_back(error: &dyn Display) -> String {
    format!("warning: cannot give the merge lease back: {error}")
}

// The merge run.

pub fn pushed_for_ci(main: &str, head: &str) -> String {
    format!(
        "the branch, up to date with {main}, is pushed at {head}: CI looks at it before the merge"
    )
}

pub fn conflicts_in(main: &str, files: &str) -> String {
    format!("merge: the branch conflicts with {main} in: {files}")
}

pub fn looked_before_merge(failed: &dyn Display) -> String {
    format!("looking at the branch before the merge: {failed}")
}

pub fn conflict_left_for_agent(main: &str, files: &str) -> String {
    format!(
        "merge: {main} merged into the branch, stopped at the conflict in {files}: the agent resolves the files, the runner concludes the merge"
    )
}

pub fn main_merges_cleanly(main: &str) -> String {
    format!("merge: {main} now merges into the branch without a conflict: no agent is needed")
}

pub fn conflict_merge_concluded(main: &str) -> String {
    format!("merge: the runner concluded the merge of {main} the agent resolved")
}

/// The look at the merge queue holding `issue`'s PR.
pub fn looking_at_merge_queue(issue: u32) -> String {
    format!("issue #{issue}: looking at the merge queue")
}

/// No branch of `issue` to find its PR in the merge queue by.
pub fn no_branch_for_queue(issue: u32) -> String {
    format!("issue #{issue}: no branch to find its pull request in the merge queue by")
}

/// The base branch's merge queue merged `issue`'s PR.
pub fn merged_by_queue(issue: u32, main: &str) -> String {
    format!("issue #{issue}: the merge queue merged the pull request into {main}: {main} holds the tree the queue's CI passed")
}

/// `issue`'s PR is still in the merge queue (the look's words, for the diagnostics).
pub fn still_in_queue(issue: u32) -> String {
    format!("issue #{issue}: the pull request is still in the merge queue; its CI has not decided")
}

/// `issue`'s PR waits in `main`'s merge queue with the commit CI passed.
pub fn in_merge_queue(issue: u32, main: &str) -> String {
    format!("issue #{issue}: {main} takes its merges through its merge queue: the pull request waits in it with the commit CI passed, and the runner looks again after CI's next wait")
}

/// The merge queue took `issue`'s PR out because its CI failed on `main` with it.
pub fn queue_ci_failed(issue: u32, main: &str, why: &str) -> String {
    format!("issue #{issue}: the merge queue's CI failed on {main} with this pull request (and those ahead of it in the queue), and the queue took it out: {why}; nothing was merged")
}

/// An agent's merge of `issue` put its PR in `main`'s merge queue rather than merging it.
pub fn agent_queued(issue: u32, main: &str) -> String {
    format!("issue #{issue}: the agent put the pull request in {main}'s merge queue rather than merging it: the runner waits for the queue, looking again after CI's next wait, and takes the merge only with the commit CI passed on {main}")
}
