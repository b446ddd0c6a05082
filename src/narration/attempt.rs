//! A step's attempt: its start, what it recorded or could not, how it ended, its looks at
//! CI, a review round.

use std::fmt::Display;
use std::path::Path;

// A step's attempt.

pub fn attempt_started(
    issue: u32,
    (number, name): (u8, &str),
    attempt: u32,
    repair: bool,
) -> String {
    let repair = if repair { " (repair)" } else { "" };
    format!("issue #{issue} step {number} {name} attempt {attempt}{repair}")
}

pub fn builtin_started(issue: u32, (number, key): (u8, &str), attempt: u32) -> String {
    format!("issue #{issue} step {number} {key} attempt {attempt} (builtin)")
}

pub fn group_unrecorded(error: &dyn Display) -> String {
    format!(
        "warning: the agent's process group was not recorded ({error}); if the runner dies now, its children may outlive it"
    )
}

/// The running cost of an agent call could not be journaled.
pub fn spend_unrecorded(error: &dyn Display) -> String {
    format!(
        "warning: the agent call's running cost could not be journaled ({error}); if the runner dies now, a restart counts less than the call spent. Free the journal's disk or fix its permissions"
    )
}

/// The agent's changes to the repository's git setup, put back by the runner.
pub fn git_setup_put_back(changes: &[String]) -> String {
    format!(
        "the agent changed the repository's git setup; put back before any git call of the runner: {}",
        changes.join("; ")
    )
}

/// What the runner does after an agent's own push, should the network fail it.
pub fn checking_the_pushed_branch(step: &str) -> String {
    format!("checking what the branch {step} pushed weakens of the tests")
}

/// The branch weakens the tests as `facts` say: nothing was pushed, or (`pushed`) the agent
/// pushed it and the runner goes no further with it.
pub fn tests_weakened(facts: &[crate::weakening::Fact], pushed: bool) -> String {
    let facts: Vec<String> = facts.iter().map(ToString::to_string).collect();
    let done = if pushed {
        "the agent pushed it; the runner opens, watches and merges nothing of it"
    } else {
        "nothing was pushed"
    };
    format!(
        "the branch weakens the tests where the issue's spec does not call for it; {done}: {}",
        facts.join("; ")
    )
}

/// The repository's git setup could not be checked or put back after an agent step.
pub fn git_setup_unchecked(error: &dyn Display) -> String {
    format!(
        "cannot check or put back the repository's git hooks and configuration after the agent's step: {error}; the runner runs no git on a setup it cannot trust"
    )
}

pub fn agent_session(id: &str) -> String {
    format!("agent session {id}")
}

pub fn issue_text_unreadable(issue: u32, error: &dyn Display) -> String {
    format!("warning: the text of issue #{issue} cannot be read ({error}); the agent gets its title only")
}

pub fn pruning_failed(error: &dyn Display) -> String {
    format!("warning: log pruning failed: {error}")
}

pub fn attempt_log(path: &Path) -> String {
    format!("attempt log: {}", path.display())
}

pub fn egress_refused(name: &str, hosts: &[String]) -> String {
    format!(
        "{name}: the allowlist refused the agent {} (add what it needs to agent.sandbox.allow)",
        hosts.join(", ")
    )
}

pub fn cannot_archive(error: &dyn Display) -> String {
    format!("warning: cannot archive the attempt log: {error}")
}

pub fn succeeded(name: &str, took: &str, turns: u32, cost_micros: u64) -> String {
    format!(
        "{name}: succeeded in {took} ({turns} turns, ${:.2})",
        cost_micros as f64 / 1e6
    )
}

pub fn failed(name: &str, class: &dyn Display, signature: &dyn Display, summary: &str) -> String {
    format!("{name}: failed: {class} {signature} — {summary}")
}

/// A line about a step: `<step>: <text>`.
pub fn of_step(step: &str, text: &str) -> String {
    format!("{step}: {text}")
}

pub fn look_at_ci(issue: u32, step: &str, look: u32, of: &str) -> String {
    format!("issue #{issue} {step}: look {look} at CI{of}")
}

pub fn ci_pending(step: &str, commit: &str) -> String {
    format!("{step}: CI pending on {commit}")
}

pub fn lost_push_race(issue: u32, main: &str) -> String {
    format!("issue #{issue}: the merge lost a push race (origin's {main} moved meanwhile)")
}

pub fn merge_conflict(summary: &str) -> String {
    format!("merge: failed: MERGE_CONFLICT — {summary}")
}

pub fn review_round_handout(issue: u32, round: u32, notes: usize) -> String {
    format!(
        "issue #{issue}: review round {round}: handing the agent {notes} review(s) and comment(s)"
    )
}

pub fn review_round_done(issue: u32, round: u32, done: &str) -> String {
    format!("issue #{issue}: review round {round}: {done}")
}
