//! The most child processes the shell starts to perform one effect (`CHILDREN`), and from it
//! and the machine's bounds the most processes a run starts, which `sdlc-runner bounds`
//! prints: agent processes apart from git, gh, CI, tracker and notifier processes.
//!
//! The table is the adapters' worst case for the local tracker and forge and for GitHub,
//! read from the adapters (`repo.rs`, `probe.rs`, `builtin.rs`, `forge/`, `tracker/`,
//! `notify.rs`) with a margin; `tests/it/process_bound.rs` runs the real binary with
//! `SDLC_RUNNER_STATS=1`, which counts the children each performed effect started, and fails
//! when one effect started more than its row says or a run more than the total: an adapter
//! that starts more processes cannot leave the table stale unnoticed.

use crate::machine::bounds::{self, Bounds};
use crate::machine::Limits;
use crate::step::Step;
use requests::{MergeRuns, Requests};

mod requests;

/// What one performed effect may start at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Children {
    /// Agent processes.
    pub agents: u64,
    /// Every other child: git, gh, the local CI command, tracker and notifier commands.
    pub others: u64,
}

const fn others(n: u64) -> Children {
    Children {
        agents: 0,
        others: n,
    }
}

/// The rows of the table, by the name `Effect::label` gives (and `startup`: what the runner
/// starts before its first effect). `RunStep` is split by who performs the step.
pub const CHILDREN: &[(&str, Children)] = &[
    // Recovery checks, the lock, the remote, the workspace and branch facts.
    ("startup", others(16)),
    // gh issue list, the milestones, the claims' comments (local: none).
    ("SelectIssue", others(4)),
    // The lock files, the tree, the branch, the forge's PR and CI (a check per precondition).
    ("CheckPreconditions", others(12)),
    // An agent step: the agent and the post-step check's git and forge calls. A merge run
    // again after a lost push race is a `RunStep` of its own.
    (
        "RunStep",
        Children {
            agents: 1,
            others: 16,
        },
    ),
    // A builtin step: git, gh or the local forge and its CI command, a repair's agent first.
    (
        "RunStepBuiltin",
        Children {
            agents: 1,
            others: 64,
        },
    ),
    ("LookAtCi", others(8)),
    // The feature branch found, the PR's review read (gh; local: a file).
    ("LookAtReview", others(4)),
    // A review round: the agent, then the runner's commit and push of the branch.
    (
        "AddressReview",
        Children {
            agents: 1,
            others: 24,
        },
    ),
    // After a merge conflict's repair: fetch, an unfinished operation aborted onto a rescue
    // ref, main refreshed, the markers' check, the merge, the push and origin's head read.
    ("UpdateBranch", others(24)),
    // The merge lease in the tracker: GitHub's comment read, written, read back (local: none).
    ("TakeMergeTurn", others(4)),
    ("ReleaseMergeTurn", others(2)),
    // The claim (GitHub: its comment read, written, read back; local: none) and, for a
    // takeover, the pushed branch adopted.
    ("ClaimIssue", others(8)),
    // The claim's lease extended (GitHub: its comment edited; local: none).
    ("RenewClaim", others(4)),
    ("Pause", others(0)),
    // The claim released (GitHub: its comment), then gh: the issue read back and, when the
    // merge left it open, commented on and closed.
    ("RecordMerged", others(8)),
    // gh: label, label create, label again, comment.
    ("MarkEscalated", others(4)),
    ("Unquarantine", others(4)),
    ("AutoCommit", others(8)),
    ("CheckoutMain", others(6)),
    ("Cleanup", others(0)),
    // A `command` notifier: one process per message.
    ("Notify", others(1)),
    ("Wait", others(0)),
    ("ResetCycle", others(0)),
    ("AskDecision", others(1)),
    ("LookForDecision", others(0)),
    // The halt's notification and, for "all issues escalated", the tracker's list.
    ("Halt", others(4)),
    // Claims released, the state file.
    ("Exit", others(4)),
];

/// A table of what one performed effect costs at most, by the effect's label.
type Table = &'static [(&'static str, Children)];

/// What one performed effect may ask of GitHub at most, when both the tracker and the forge
/// are GitHub's (`others`: requests; `agents` unused), from the calls' own counts
/// (`services::github::requests`): the same rows as [`CHILDREN`], so that the same window
/// adds them up. An agent's own calls to GitHub are the agent's, not counted here.
pub const GITHUB_REQUESTS: &[(&str, Children)] = {
    use crate::services::github::requests as r;
    &[
        // The runner's login; recovery: the checked-out branch's PR, its CI and the issue.
        ("startup", others(r::USER + r::PR_LIST + r::CI + r::ISSUE)),
        ("SelectIssue", others(r::SELECT)),
        // The issue (a person's decision or withdrawal), merge's "already merged?", the
        // preconditions' PR and CI.
        (
            "CheckPreconditions",
            others(r::ISSUE + 2 * r::PR_LIST + r::CI),
        ),
        // An agent step: the issue's text for its prompt, the post-step check's PR.
        ("RunStep", others(r::ISSUE_TEXT + r::PR_LIST)),
        // A builtin step: a repair's prompt first, a person's move looked for (the PR), then
        // the most of createPR (its post-step check's PR), monitorCI (CI and the failing
        // checks) and a merge run.
        (
            "RunStepBuiltin",
            others(
                r::ISSUE_TEXT
                    + r::PR_LIST
                    + max(
                        r::CREATE_PR + r::PR_LIST,
                        max(r::CI + r::FAILING_CHECKS, r::MERGE_RUN),
                    ),
            ),
        ),
        // A person's move (the PR), the commit's CI, a failure's checks.
        ("LookAtCi", others(r::PR_LIST + r::CI + r::FAILING_CHECKS)),
        ("LookAtReview", others(r::REVIEW_LOOK)),
        // The issue's text for the prompt, a person's move before the push.
        ("AddressReview", others(r::ISSUE_TEXT + r::PR_LIST)),
        ("UpdateBranch", others(r::PR_LIST)),
        ("TakeMergeTurn", others(r::CLAIM)),
        ("ReleaseMergeTurn", others(r::CLAIM_NOTE)),
        ("ClaimIssue", others(r::CLAIM)),
        ("RenewClaim", others(r::CLAIM_NOTE)),
        ("RecordMerged", others(r::CLAIM_NOTE + r::CLOSE)),
        ("MarkEscalated", others(r::ESCALATE)),
        ("Unquarantine", others(r::UNQUARANTINE)),
        // "All issues escalated": the tracker's list.
        ("Halt", others(r::SELECT)),
        // Claims released.
        ("Exit", others(r::CLAIM_NOTE)),
    ]
};

const fn max(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The row of `label` in `table` (none: nothing).
fn row(table: Table, label: &str) -> Children {
    table
        .iter()
        .find(|(l, _)| *l == label)
        .map_or(others(0), |(_, c)| *c)
}

/// The most fire-and-forget effects one batch carries (auto-commit, checkout, two notices,
/// the halt), as `table` counts them.
fn per_batch(table: Table) -> u64 {
    [
        "AutoCommit",
        "CheckoutMain",
        "Notify",
        "Notify",
        "Halt",
        "Cleanup",
    ]
    .iter()
    .map(|l| row(table, l).others)
    .sum()
}

/// Processes of one window of the run: `agents` and every other child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Processes {
    /// Agent processes.
    pub agents: u64,
    /// git, gh, CI, tracker and notifier processes.
    pub others: u64,
}

/// The figures `bounds` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessBounds {
    /// One issue's cycle, selection to its merge or escalation.
    pub per_issue: Processes,
    /// Between two merges (startup included).
    pub between_merges: Processes,
    /// Before the halt when nothing succeeds (startup included).
    pub nothing_succeeds: Processes,
}

/// The window's processes when it holds at most `attempts` step attempts (waits included),
/// `cycles` cycles and `agents` agent invocations counted as attempts, each effect costing
/// what `table` says.
fn window(
    l: &Limits,
    (attempts, cycles, agents): (u64, u64, u64),
    agent_merge: bool,
    table: Table,
) -> Processes {
    let children = |label: &str| row(table, label);
    let retries = 1 + u64::from(l.max_network_waits);
    let Requests {
        looks,
        review_looks,
        review_waits,
        checks,
        selects,
        writes,
        close_looks,
        merge:
            MergeRuns {
                together,
                merges,
                queue_looks,
                reruns,
                turns,
            },
        updates,
        claims,
        renewals,
    } = Requests::in_window(l, attempts, cycles);
    let run = children("RunStep")
        .others
        .max(children("RunStepBuiltin").others);
    let own = |count: u64, label: &str| count.saturating_mul(children(label).others);
    let calls = (attempts + reruns + together + queue_looks)
        .saturating_mul(run)
        .saturating_add(own(turns, "TakeMergeTurn"))
        .saturating_add(own(merges + reruns, "ReleaseMergeTurn"))
        .saturating_add(own(checks, "CheckPreconditions"))
        .saturating_add(own(looks, "LookAtCi"))
        .saturating_add(own(review_looks, "LookAtReview"))
        .saturating_add(own(updates, "UpdateBranch"))
        .saturating_add(own(selects, "SelectIssue"))
        .saturating_add(writes.saturating_mul(children("MarkEscalated").others))
        .saturating_add(own(close_looks, "RecordMerged"));
    let calls = calls
        .saturating_add(own(claims, "ClaimIssue"))
        .saturating_add(own(renewals, "RenewClaim"));
    // Every call of the runner's own may be made again after a network wait.
    let requests = (attempts
        + reruns
        + turns
        + checks
        + looks
        + updates
        + selects
        + writes
        + claims
        + review_looks
        + close_looks
        + queue_looks)
        .saturating_mul(retries);
    let waits = attempts + looks + requests + turns + review_waits + close_looks + queue_looks;
    let batches = requests + waits + 1;
    let races = if agent_merge { reruns } else { 0 };
    Processes {
        agents: agents.saturating_add(races),
        others: calls
            .saturating_mul(retries)
            .saturating_add(batches.saturating_mul(per_batch(table)))
            .saturating_add(children("startup").others + children("Exit").others),
    }
}

/// The bounds for `limits` and the config's builtin steps (`builtin[step.index()]`).
pub fn compute(l: &Limits, builtin: &[bool; Step::COUNT]) -> ProcessBounds {
    compute_with(l, builtin, CHILDREN)
}

/// The most GitHub requests of the runner's own (`others`), as [`GITHUB_REQUESTS`] counts
/// each effect's, in the windows of [`compute`].
pub fn github_requests(l: &Limits, builtin: &[bool; Step::COUNT]) -> ProcessBounds {
    compute_with(l, builtin, GITHUB_REQUESTS)
}

fn compute_with(l: &Limits, builtin: &[bool; Step::COUNT], table: Table) -> ProcessBounds {
    let attempts: Bounds = bounds::compute(l);
    let agents = bounds::agent_invocations(l, builtin);
    let waits = bounds::waits_per_invocation(l);
    let e = u64::from(l.max_consecutive_escalations.max(1));
    let agent_merge = l.enabled(Step::Merge) && !builtin[Step::Merge.index()];
    let per_issue = (
        attempts.per_cycle.saturating_mul(waits),
        1,
        agents.per_cycle.saturating_mul(waits),
    );
    ProcessBounds {
        per_issue: window(l, per_issue, agent_merge, table),
        between_merges: window(
            l,
            (attempts.between_merges, e, agents.between_merges),
            agent_merge,
            table,
        ),
        nothing_succeeds: window(
            l,
            (attempts.nothing_succeeds, e, agents.nothing_succeeds),
            agent_merge,
            table,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_effect_has_a_row() {
        use crate::machine::{Effect, HaltReason, Notice};
        let effects = [
            Effect::SelectIssue,
            Effect::CheckPreconditions { step: Step::Verify },
            Effect::RunStep {
                step: Step::Verify,
                issue: 1,
                attempt: 1,
                repair: false,
                commit: None,
                money_left_micros: None,
            },
            Effect::LookAtCi {
                issue: 1,
                look: 1,
                commit: None,
            },
            Effect::UpdateBranch {
                issue: 1,
                commit: None,
            },
            Effect::LookAtReview { issue: 1, look: 1 },
            Effect::AddressReview {
                issue: 1,
                round: 1,
                attempt: 1,
                money_left_micros: None,
            },
            Effect::Wait {
                seconds: 1,
                reason: None,
            },
            Effect::Pause {
                millis: 1,
                waits_for: crate::machine::PauseFor::MergeTurn,
            },
            Effect::TakeMergeTurn { issue: 1 },
            Effect::ReleaseMergeTurn,
            Effect::AutoCommit(crate::machine::CommitKind::PartialWork),
            Effect::CheckoutMain,
            Effect::ResetCycle,
            Effect::RecordMerged {
                issue: 1,
                wait: false,
            },
            Effect::MarkEscalated { issue: 1 },
            Effect::Unquarantine { issue: 1 },
            Effect::Cleanup,
            Effect::Notify(Notice::NothingToDo),
            Effect::AskDecision {
                step: Step::Verify,
                issue: 1,
                budget_spent_micros: None,
            },
            Effect::Halt(HaltReason::Network),
            Effect::Exit { code: 0 },
        ];
        for e in effects {
            assert!(
                CHILDREN.iter().any(|(l, _)| *l == e.label()),
                "{} has no row",
                e.label()
            );
        }
    }

    /// The GitHub requests of one issue grow with every bound of its cycle: a configured
    /// bound that the figure ignored would leave requests uncounted.
    #[test]
    fn the_github_requests_of_an_issue_grow_with_each_bound_of_its_cycle() {
        use crate::machine::ReviewGate;
        let none = [false; Step::COUNT];
        let per_issue = |l: &Limits| github_requests(l, &none).per_issue.others;
        let gate = |rounds: u32| ReviewGate {
            require_approval: true,
            wait_secs: 600,
            max_rounds: rounds,
            ignore_authors: Vec::new(),
        };
        let base = Limits {
            review: Some(gate(1)),
            ..Limits::default()
        };
        let more: [(&str, Limits); 7] = [
            (
                "maxRetriesPerStep",
                Limits {
                    max_retries_per_step: base.max_retries_per_step + 1,
                    ..base.clone()
                },
            ),
            (
                "maxBounceRetries",
                Limits {
                    max_bounce_retries: base.max_bounce_retries + 1,
                    ..base.clone()
                },
            ),
            (
                "maxNetworkWaits",
                Limits {
                    max_network_waits: base.max_network_waits + 1,
                    ..base.clone()
                },
            ),
            (
                "maxRateLimitWaits",
                Limits {
                    max_rate_limit_waits: base.max_rate_limit_waits + 1,
                    ..base.clone()
                },
            ),
            (
                "monitorCI's timeout (CI looks)",
                Limits {
                    ci_timeout_secs: base.ci_timeout_secs * 4,
                    ..base.clone()
                },
            ),
            (
                "review.maxReviewRounds",
                Limits {
                    review: Some(gate(3)),
                    ..base.clone()
                },
            ),
            (
                "the close's waits",
                Limits {
                    tracker_close_waits: base.tracker_close_waits + 1,
                    ..base.clone()
                },
            ),
        ];
        let figure = per_issue(&base);
        for (bound, limits) in &more {
            assert!(
                per_issue(limits) > figure,
                "{bound}: {} is not above {figure}",
                per_issue(limits)
            );
        }
        let review_looks = Limits {
            review: Some(ReviewGate {
                wait_secs: 6000,
                ..gate(1)
            }),
            ..base.clone()
        };
        assert!(per_issue(&review_looks) > figure, "review looks");
    }

    #[test]
    fn more_limits_more_processes() {
        let none = [false; Step::COUNT];
        let base = compute(&Limits::default(), &none);
        let more = compute(
            &Limits {
                max_retries_per_step: 5,
                ..Limits::default()
            },
            &none,
        );
        assert!(more.between_merges.others > base.between_merges.others);
        assert!(base.per_issue.agents <= base.between_merges.agents);
    }

    /// Only merge runs wait for the merge turn: more bounces (attempts of other steps) add no
    /// request for the turn, so without waits the turn's pauses add the same whatever the
    /// bounce budget; with waits, only the waited merge runs before each bounce from merge.
    #[test]
    fn the_merge_turns_pauses_multiply_merge_runs_not_every_attempt() {
        let none = [false; Step::COUNT];
        let turn_share = |bounces: u32, waits: u32| {
            let l = Limits {
                max_bounce_retries: bounces,
                max_rate_limit_waits: waits,
                max_network_waits: waits,
                ..Limits::default()
            };
            let waiting = Limits {
                merge_turn_wait_ms: Some(3_600_000),
                ..l.clone()
            };
            let with = compute(&waiting, &none).per_issue.others;
            let without = compute(&l, &none).per_issue.others;
            with - without
        };
        assert!(turn_share(0, 0) > 0);
        assert_eq!(turn_share(0, 0), turn_share(20, 0));
        assert!(turn_share(20, 1) > turn_share(0, 1));
    }
}
