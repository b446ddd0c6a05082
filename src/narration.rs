//! What the runner narrates in its orchestration log, one function per message: the driver
//! says which message and with what, never the sentence. Tests assert on these texts, so a
//! change here is a change of the runner's output.

use chrono::{DateTime, Utc};
use std::fmt::Display;
use std::path::Path;

mod attempt;
mod merge;
pub use attempt::*;
pub use merge::*;

/// A claim's or lease's end as the log shows it.
fn until(at: DateTime<Utc>) -> impl Display {
    at.format("%H:%M:%S UTC")
}

// Claims.

pub fn claimed(issue: u32, worker: &str, expires: DateTime<Utc>) -> String {
    format!(
        "claimed issue #{issue} as worker {worker} until {}",
        until(expires)
    )
}

pub fn continuing_from_pushed(issue: u32, branch: &str) -> String {
    format!("issue #{issue}: continuing from the pushed branch {branch}")
}

pub fn cannot_take_over_pushed(issue: u32, error: &dyn Display) -> String {
    format!("warning: issue #{issue}: cannot take over the pushed branch: {error}")
}

pub fn claimed_by_other(issue: u32, worker: &str, expires: DateTime<Utc>) -> String {
    format!(
        "issue #{issue} is claimed by worker {worker} until {}; skipping it",
        until(expires)
    )
}

pub fn claim_lost(issue: u32, worker: &str) -> String {
    format!(
        "warning: issue #{issue} is now claimed by worker {worker} (this runner's lease ran out)"
    )
}

pub fn cannot_renew_claim(issue: u32, error: &dyn Display) -> String {
    format!("warning: cannot renew the claim on issue #{issue}: {error}")
}

pub fn cannot_release_claim(issue: u32, error: &dyn Display) -> String {
    format!("warning: cannot release the claim on issue #{issue}: {error}")
}

pub fn cannot_read_other_claims(error: &dyn Display) -> String {
    format!("warning: cannot read the other runners' claims: {error}")
}

/// One claim in a list of them: `#3 by w1 until 12:00:00 UTC`.
pub fn claim_of(issue: u32, worker: &str, expires: DateTime<Utc>) -> String {
    format!("#{issue} by {worker} until {}", until(expires))
}

pub fn tracker_write_failed(what: &str, detail: &dyn Display) -> String {
    format!("tracker: {what} failed: {detail}")
}

// Manual approval.

pub fn cannot_write_file(path: &Path, error: &dyn Display) -> String {
    format!("cannot write {}: {error}", path.display())
}

pub fn decided(option: &str) -> String {
    format!("decision: {option}")
}

// Startup and restart.

pub fn stopped_stale_agent_group(pgid: i32, outcome: &dyn std::fmt::Debug) -> String {
    format!("stopped the agent process group {pgid} left by the previous runner ({outcome:?})")
}

pub fn stopped_leftover(pid: i32, cmd: &str, dir: &Path) -> String {
    format!(
        "stopped pid {pid} ({cmd}), left running in {} by a runner that was killed",
        dir.display()
    )
}

pub fn removed_dead_git_lock(lock: &Path) -> String {
    format!(
        "removed {}, left by the previous runner's git (no process holds it)",
        lock.display()
    )
}

pub fn cannot_remove(path: &Path, error: &dyn Display) -> String {
    format!("warning: cannot remove {}: {error}", path.display())
}

pub fn pr_merged_recording(issue: u32) -> String {
    format!("issue #{issue}: its PR is merged; recording the merge")
}

pub fn progress_unreadable(error: &dyn Display) -> String {
    format!("cannot read the work tree's progress ({error}); starting from the journal")
}

pub fn branch_not_adopted(branch: &str, issue: u32, error: &dyn Display) -> String {
    format!(
        "branch {branch} is not adopted: the tracker cannot tell about issue #{issue} ({error})"
    )
}

pub fn branch_of_escalated(branch: &str, issue: u32) -> String {
    format!(
        "branch {branch} belongs to escalated issue #{issue}: not resumed (remove the escalation mark to release it)"
    )
}

pub fn cannot_check_out(main: &str, error: &dyn Display) -> String {
    format!("warning: cannot check out {main}: {error}")
}

pub fn already_merged_fresh_cycle(issue: u32) -> String {
    format!("issue #{issue} is already merged: main and a fresh cycle")
}

pub fn adopting_branch(branch: &str, issue: u32, next: &str) -> String {
    format!(
        "adopting branch {branch} that the journal does not know: issue #{issue} continues at {next}"
    )
}

// Selection.

pub fn unlabelled(list: &str, label: &str) -> String {
    format!(
        "open issue(s) {list} lack the label {label}, so the runner does not select them; add the label to have them worked"
    )
}

// Calls that failed.

pub fn network_failed(what: &str, first_line: &str) -> String {
    format!("network: {what} failed ({first_line})")
}

pub fn rate_limited(services: &str, what: &str, first_line: &str) -> String {
    format!("rate limit: {services}'s limit refused {what} ({first_line})")
}

// Reviews.

pub fn review_branch_missing(issue: u32, project: &Path) -> String {
    format!(
        "issue #{issue}: its feature branch cannot be found, so its PR's review cannot be read; check `git branch --list '{issue}-*'` in {}",
        project.display()
    )
}

pub fn review_unreadable(issue: u32, branch: &str, error: &dyn Display) -> String {
    format!("issue #{issue}: cannot read the review of {branch}'s PR: {error}")
}

pub fn review_looked(
    issue: u32,
    look: u32,
    branch: &str,
    decision: crate::machine::ReviewDecision,
    notes: usize,
) -> String {
    use crate::machine::ReviewDecision;
    let said = match decision {
        ReviewDecision::Approved => "approved",
        ReviewDecision::ChangesRequested => "changes requested",
        ReviewDecision::None => "no approval or request for changes",
    };
    format!(
        "issue #{issue}: look {look} at the review of {branch}: {said} ({notes} review(s) and comment(s))"
    )
}

// The workspace and a person's decisions.

pub fn stale_git_lock(lock: &Path, age_secs: u64, project: &Path) -> String {
    format!(
        "the git lock file {} is left over (older than {age_secs} s): git commands in {} fail while it exists.\nfix: make sure no git process is running in the project, then remove it: rm {}",
        lock.display(),
        project.display(),
        lock.display()
    )
}

pub fn foreign_changes(project: &Path, step: &str, list: &str, fix: &str) -> String {
    format!(
        "the working tree of {} has changes that are no issue's work before {step} (the runner never works over them):\n{list}\nfix: {fix}",
        project.display()
    )
}

/// A workspace finding, on one line.
pub fn workspace(said: &str) -> String {
    format!("workspace: {}", said.replace('\n', "; "))
}

pub fn warning_of(what: &str, error: &dyn Display) -> String {
    format!("warning: {what}: {error}")
}

pub fn withdrawn_said(issue: u32, why: &str) -> String {
    format!("issue #{issue} was {why} by a person during the cycle")
}

pub fn withdrawn(issue: u32, why: &str) -> String {
    format!(
        "issue #{issue} was {why} in the tracker while the runner worked on it: the cycle is dropped (branch kept), nothing is merged or written to the issue"
    )
}

pub fn cannot_write_state(error: &dyn Display) -> String {
    format!("warning: cannot write the state file: {error}")
}

// Preconditions.

pub fn already_done(step: &str) -> String {
    format!("{step}: already done (observed in git); not run again")
}

pub fn done_probe_failed(step: &str, error: &dyn Display) -> String {
    format!("{step}: idempotency probe failed ({error}); treating as not done")
}

pub fn precondition_probe_failed(step: &str, error: &dyn Display) -> String {
    format!("{step}: precondition probe failed: {error}")
}

// Selection.

pub fn held_elsewhere(others: &str) -> String {
    format!(
        "the remaining issues are claimed by other runners or wait for them ({others}); nothing for this runner to do"
    )
}

pub fn merged_earlier(issue: u32) -> String {
    format!("issue #{issue} is open in the tracker, but an earlier session merged it")
}

pub fn selected(issue: u32, title: &str) -> String {
    format!("selected issue #{issue}: {title}")
}

pub fn blocked(list: &str) -> String {
    format!("blocked issues: {list}")
}

pub fn tracker_failed(error: &dyn Display) -> String {
    format!("tracker failed: {error}")
}

// The loop and the session.

pub fn cannot_exclude(error: &dyn Display) -> String {
    format!("warning: cannot keep runner files out of git: {error}")
}

pub fn cannot_create_auto_mode(error: &dyn Display) -> String {
    format!("warning: cannot create the auto-mode flag: {error}")
}

pub fn session_started(session: &str, project: &Path, state: &str) -> String {
    format!(
        "sdlc-runner {} session {session} on {} (state {state})",
        env!("CARGO_PKG_VERSION"),
        project.display()
    )
}

pub fn redoing(effects: usize) -> String {
    format!(
        "completing the {effects} recorded effect(s) the previous runner may not have carried out"
    )
}

pub fn broken_batch(why: &str, event: &dyn std::fmt::Debug, state: &str) -> String {
    format!("internal error: {why} after {event:?} in {state}; stopping without acting")
}

pub fn journal_unwritable(error: &dyn Display) -> String {
    format!("FATAL: cannot write the journal ({error}); stopping without acting")
}

pub fn unanswered(request: &dyn std::fmt::Debug, state: &str) -> String {
    format!("internal error: {request:?} got no answer in {state}")
}

pub fn stopped_continues(how: &str, session: &str) -> String {
    format!("{how}; next run continues session {session}")
}

pub fn cannot_record_end(error: &dyn Display) -> String {
    format!("warning: cannot record the session end: {error}")
}

pub fn done(code: u8, merges: u64, wasted: &str) -> String {
    format!(
        "done (exit {code}): {merges} merge(s); {}",
        wasted.replace('\n', ";")
    )
}

pub fn waiting(seconds: u64, until: &str) -> String {
    format!("waiting {seconds} s{until}")
}

pub fn committed(message: &str) -> String {
    format!("committed: {message}")
}

pub fn auto_commit_skipped(error: &dyn Display) -> String {
    format!("auto-commit skipped: {error}")
}

pub fn released(issue: u32, note: &str) -> String {
    format!("tracker: issue #{issue} released: {note}")
}

pub fn cleanup_stopped(pid: i32, cmd: &str) -> String {
    format!("cleanup: stopped pid {pid} ({cmd})")
}

pub fn cannot_record_halt(error: &dyn Display) -> String {
    format!("warning: cannot record the halt in the journal: {error}")
}

// The tracker told the cycle's end: what each write is called in its messages.

pub fn closing_issue(issue: u32) -> String {
    format!("closing issue #{issue} in the tracker")
}

pub fn looking_for_close(issue: u32) -> String {
    format!("looking whether the tracker closed issue #{issue} after its merge")
}

pub fn still_open_after_merge(issue: u32) -> String {
    format!(
        "issue #{issue} is merged and still open: waiting for the tracker to close it from the PR's \"Closes #{issue}\""
    )
}

pub fn closed_by_tracker(issue: u32) -> String {
    format!("issue #{issue} was closed by the tracker after its merge; the runner wrote nothing")
}

/// The note of the runner's own close of a merged issue, after `waited_secs` waiting for the
/// tracker's (0: it waited for none).
pub fn merged_note(waited_secs: u64) -> String {
    match waited_secs {
        0 => "merged by sdlc-runner".to_string(),
        s => format!("merged by sdlc-runner, which waited {s} s for the tracker's own close"),
    }
}

pub fn marking_escalated(issue: u32) -> String {
    format!("marking issue #{issue} escalated in the tracker")
}

pub fn lifting_quarantine(issue: u32) -> String {
    format!("lifting the quarantine of issue #{issue} in the tracker")
}

/// What a call (`what`) that failed said, kept for the diagnostics.
pub fn call_failed(what: &str, detail: &dyn Display) -> String {
    format!("{what}: {detail}")
}

// Halts.

/// The line a rate-limit halt's diagnostic gains under its headline.
pub fn rate_limit_lifts_at(at: DateTime<Utc>) -> String {
    format!(
        "\nthe rate limit lifts at: {}",
        at.format("%Y-%m-%d %H:%M:%S UTC")
    )
}

pub fn day_window_unreadable(error: &dyn Display) -> String {
    format!("the daily budget's window could not be read: {error}")
}

/// When the day's budget lets an attempt like the last start again.
pub fn day_frees_at(at: DateTime<Utc>, spent_micros: u64, budget_micros: u64) -> String {
    format!(
        "the daily budget frees at: {} (spent over the last 24 hours: ${:.2} of budget.perDayUsd ${:.2}); run again then with --ack-halt",
        at.format("%Y-%m-%d %H:%M:%S UTC"),
        spent_micros as f64 / 1e6,
        budget_micros as f64 / 1e6
    )
}

/// The halt's diagnostic when the runner's own journal or lock (`what`) went away.
pub fn runner_state_lost(headline: &str, what: &str, runner_dir: &Path) -> String {
    format!(
        "{headline}\nloop type: environment\n{what}.\nA second runner could start on this project, or progress would be recorded where nobody reads it. Find out what removed it (an agent command? a clean-up job?), then run again with --ack-halt.\nrunner state: {}",
        runner_dir.display()
    )
}

pub fn journal_restored(path: &Path) -> String {
    format!("journal restored at {}", path.display())
}

pub fn cannot_restore_journal(path: &Path, error: &dyn Display) -> String {
    format!("cannot restore the journal at {}: {error}", path.display())
}

pub fn halt_unrecorded(error: &dyn Display) -> String {
    format!("the halt could not be recorded in the journal: {error}")
}

// Notices.

/// A merge-turn notice after who holds the turn.
pub fn merge_turn_held(holder: &str, notice: &str) -> String {
    format!("{holder}; {notice}")
}

/// A failed tracker read's notice with what the tracker answered.
pub fn tracker_answered(notice: &str, answer: &str) -> String {
    format!("{notice}: {answer}")
}

/// A line said on the console, after the fleet worker's tag when there is one.
pub fn of_worker(worker: Option<u32>, line: &str) -> String {
    match worker {
        Some(worker) => format!("[w{worker}] {line}"),
        None => line.to_string(),
    }
}

pub fn claiming(issue: u32) -> String {
    format!("claiming issue #{issue}")
}

// The run's end.

/// How a run a signal stopped ended, for `stopped_continues`.
pub fn shut_down_by(signal: &str) -> String {
    format!("{signal}: shut down")
}

/// How a run that stopped by itself ended, for `stopped_continues`.
pub fn stopped_with(code: u8) -> String {
    format!("stopped (exit {code})")
}

// What a step's answer said of a person's move on its branch (the diagnostics' words).

pub fn merged_by_a_person(issue: u32, branch: &str, main: &str) -> String {
    format!("issue #{issue}: {branch} was merged into {main} by a person; recorded as merged, not merged again")
}

pub fn withdrawn_by_a_person(issue: u32, what: &str, branch: &str) -> String {
    format!("issue #{issue}: a person {what} ({branch}): the cycle is dropped, nothing is merged")
}

pub fn moved_to_no_commit(issue: u32, branch: &str, head: &str) -> String {
    format!("issue #{issue}: origin's {branch} moved to `{head}`, which is no commit id")
}

/// Origin's branch is at `head` (short ids: head, ours): pushed on top of ours, pushed onto
/// the runner's last push while ours waited to be pushed, or rewritten.
pub fn branch_moved(
    issue: u32,
    branch: &str,
    (head, ours): (&str, &str),
    (on_top, onto_our_push): (bool, bool),
) -> String {
    let how = if on_top {
        "a person pushed commits on top of"
    } else if onto_our_push {
        "a person pushed commits onto the branch that lack the runner's unpushed"
    } else {
        "a person rewrote the branch: its head no longer holds"
    };
    format!("issue #{issue}: origin's {branch} is at {head}: {how} {ours}")
}

// What a failed call said (the diagnostics' words).

pub fn failed_on_the_network(what: &str, error: &str) -> String {
    format!("{what} failed on the network: {error}")
}

pub fn hit_rate_limit(what: &str, services: &str, wait_secs: u64, first_line: &str) -> String {
    format!("{what} hit {services}'s rate limit (it lifts in {wait_secs} s): {first_line}")
}

// Notifications of a step's call.

pub fn started_notice(issue: u32, name: &str, attempt: u32) -> String {
    format!("issue #{issue}: {name} started (attempt {attempt})")
}

pub fn builtin_started_notice(issue: u32, step: &str, attempt: u32) -> String {
    format!("issue #{issue}: {step} started (builtin, attempt {attempt})")
}

pub fn finished_notice(issue: u32, name: &str) -> String {
    format!("issue #{issue}: {name} finished")
}

pub fn failed_notice(issue: u32, name: &str, class: &dyn Display, summary: &str) -> String {
    format!("issue #{issue}: {name} failed ({class}): {summary}")
}

/// A notice about an issue.
pub fn of_issue(issue: u32, text: &str) -> String {
    format!("issue #{issue}: {text}")
}

// Decisions.

pub fn issue_budget_reached(spent_micros: u64) -> String {
    format!(
        "the issue's budget is reached: ${:.2} spent of budget.perIssueUsd; retry grants it once more",
        spent_micros as f64 / 1e6
    )
}

/// The tests the branch weakens, as a person is asked about them (`tests.weakening: "ask"`).
pub const WEAKENING_ASKED: &str = "the branch weakens the tests where the issue's spec does not call for it (tests.weakening: ask); retry approves the weakening for this cycle, skip escalates the issue, halt stops the run";

/// Why a person is asked to decide on `issue` at `step`: the issue's budget reached
/// (`budget`), the tests its branch weakens (`weakened`), or the step's attempts used up.
pub fn decision_reason(issue: u32, step: &str, budget: Option<&str>, weakened: bool) -> String {
    match (budget, weakened) {
        (Some(budget), _) => format!("issue #{issue} at step {step}: {budget}"),
        (None, true) => format!("issue #{issue} at step {step}: {WEAKENING_ASKED}"),
        (None, false) => format!("step {step} of issue #{issue} used up its automatic attempts"),
    }
}

pub fn decision_needed(issue: u32, step: &str, budget: Option<&str>, config: &Path) -> String {
    format!(
        "decision needed: issue #{issue} step {step}{} — answer with `sdlc-runner decide <retry|skip|halt> --config {}`",
        budget.map(|b| format!(": {b}")).unwrap_or_default(),
        config.display()
    )
}
