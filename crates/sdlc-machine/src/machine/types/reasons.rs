//! Why a cycle gave up on its issue (`EscalationCause`) and why the session halted
//! (`HaltReason`).

use super::Commit;
use crate::failure::FailureClass;
use crate::step::Step;
use serde::{Deserialize, Serialize};

/// Why a cycle gave up on its issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EscalationCause {
    /// The step failed as often as `max_retries_per_step` allows.
    RetriesExhausted,
    /// The step failed the same way `max_consecutive_same_failure` times in a row.
    SameFailureRepeated,
    /// Preconditions kept sending the cycle back past `max_bounce_retries`.
    BounceLoop,
    /// A failure no attempt can fix (its class escalates at once: the context window).
    NonRetryable,
    /// The issue's cost or time budget is spent.
    IssueBudget,
    /// A person chose skip at a decision point.
    OperatorSkipped,
    /// Reviewers still asked for changes, with feedback the agent was not given yet, after
    /// `review.maxReviewRounds` rounds of addressing it.
    ReviewRoundsExhausted,
    /// The agent weakened the tests again after the facts were handed back to it once
    /// (`TESTS_WEAKENED`).
    TestsWeakened,
}

impl EscalationCause {
    /// The cause in words, for notices and diagnostics.
    pub const fn describe(self) -> &'static str {
        match self {
            EscalationCause::RetriesExhausted => "retries exhausted",
            EscalationCause::SameFailureRepeated => "same failure repeated",
            EscalationCause::BounceLoop => "bounce loop",
            EscalationCause::NonRetryable => "non-retryable failure",
            EscalationCause::IssueBudget => "issue budget exhausted",
            EscalationCause::OperatorSkipped => "skipped by operator",
            EscalationCause::ReviewRoundsExhausted => "review rounds exhausted",
            EscalationCause::TestsWeakened => "tests weakened again after the hand-back",
        }
    }
}

/// Why the session halted. Small and `Copy`: the driver renders the diagnostic text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum HaltReason {
    /// Escalations in a row reached `max_consecutive_escalations`.
    ConsecutiveEscalations {
        /// The last escalation's cause.
        cause: EscalationCause,
        /// The step it escalated at.
        step: Step,
    },
    /// The tracker offered an escalated issue again: nothing left to work on.
    AllIssuesEscalated,
    /// Every open issue waits on an unmerged dependency.
    AllIssuesBlocked,
    /// A step failed `limit` times in a row across the session.
    MaxConsecutiveFailures {
        /// The step.
        step: Step,
        /// Its `maxConsecutiveFailures`.
        limit: u32,
    },
    /// A failure of the environment (authentication, the tooling): no retry helps.
    Environment {
        /// The failure's class.
        class: FailureClass,
        /// The step it happened at.
        step: Step,
    },
    /// Rate-limit, overload or quota waits in a row passed `max_rate_limit_waits`.
    WaitsExhausted {
        /// The last wait's class.
        class: FailureClass,
        /// The step it happened at.
        step: Step,
    },
    /// The quota window is longer than `max_quota_wait_secs`.
    QuotaTooLong {
        /// The step it happened at.
        step: Step,
    },
    /// The session budget is spent.
    SessionBudget,
    /// The project's daily ceiling (`budget.perDayUsd`) is spent: what every session and
    /// worker spent over the last 24 hours. Nobody's issue is blamed.
    DayBudget,
    /// A person chose halt at a decision point.
    Operator,
    /// Nobody answered a decision point in time.
    DecisionTimeout,
    /// The driver's own: the journal or the lock was removed or replaced during the run. The
    /// machine never decides this; it is recorded so that the halt is sticky.
    RunnerStateLost,
    /// The network stayed down through every allowed wait.
    Network,
    /// GitHub's rate limit refused one request through every allowed wait
    /// (`maxNetworkWaits` in a row).
    RateLimit {
        /// Seconds until the limit lifts, as GitHub's last refusal said.
        wait_secs: u64,
    },
    /// The tracker could not record a merge or an escalation, or lift a quarantine (`issue`
    /// then is not the current one). A merge stays final for the session whether or not the
    /// tracker was told.
    TrackerWrite {
        /// The issue the write was about.
        issue: u32,
        /// Whether it was the record of a merge.
        merged: bool,
    },
    /// The claim on the selected issue could not be written (runners sharing a tracker): no
    /// cycle starts on an issue this runner does not hold.
    ClaimRefused {
        /// The issue selected.
        issue: u32,
    },
    /// The tracker offered an issue this session already merged or dropped.
    TrackerStale {
        /// The issue offered.
        issue: u32,
    },
    /// A fact the runner owns (a lock file, foreign changes in the tree) was wrong.
    Workspace {
        /// The step it was found at.
        step: Step,
    },
    /// The same failure ended two different issues in a row: the environment's, not theirs.
    /// The second is not quarantined; the first was released before the halt when that failure
    /// was the only way its step had failed (`Runner::last_escalation_alone`).
    SameFailureAcrossIssues {
        /// The step both failed at.
        step: Step,
        /// How both failed.
        class: FailureClass,
    },
    /// Attempts of one step kept being cut short by the runner's own death.
    RepeatedKills {
        /// The step.
        step: Step,
        /// Kills in a row.
        kills: u32,
    },
    /// A person moved the issue's branch on origin during monitorCI or the merge, or before
    /// the builtin commitPush's push: rewrote it or pushed work the runner's branch lacks
    /// (`on_top` false: its head no longer holds the runner's commit), or kept pushing on top
    /// past monitorCI's CI schedule. Nothing is merged and no issue is
    /// blamed; a person decides what becomes of the branch.
    BranchMoved {
        /// The issue whose branch moved.
        issue: u32,
        /// The commit the runner pushed or CI verified.
        ours: Commit,
        /// Origin's head of the branch.
        head: Commit,
        /// Whether `head` holds `ours`.
        on_top: bool,
    },
    /// Main moved ahead of the issue's branch before each merge, more times in the cycle than
    /// monitorCI's CI schedule has waits, where the base branch's protection requires the
    /// branch up to date: each update's head went through CI and main had moved again.
    /// Nothing is merged and no issue is blamed.
    MainKeptMoving {
        /// The issue whose merge kept being overtaken.
        issue: u32,
    },
    /// The merge turn stayed with another worker or runner past its wait limit, or the
    /// tracker's merge lease could not be taken: no issue is blamed.
    MergeTurnHeld {
        /// How long the turn was waited for.
        waited_ms: u64,
    },
}

impl HaltReason {
    /// The loop type named on the diagnostic's first line (docs/counters-and-bounds.md).
    pub fn headline(&self) -> String {
        match self {
            HaltReason::ConsecutiveEscalations {
                cause: EscalationCause::BounceLoop,
                ..
            } => "FAILURE LOOP DETECTED: bounce loop".into(),
            HaltReason::ConsecutiveEscalations { .. } => {
                "FAILURE LOOP DETECTED: consecutive escalations".into()
            }
            HaltReason::AllIssuesEscalated => "FAILURE LOOP DETECTED: all issues escalated".into(),
            HaltReason::AllIssuesBlocked => "FAILURE LOOP DETECTED: all issues blocked".into(),
            HaltReason::MaxConsecutiveFailures { step, limit } => format!(
                "FAILURE LOOP DETECTED: max_consecutive_failures:{}:{limit}",
                step.key()
            ),
            HaltReason::Environment { class, .. } => format!("ENVIRONMENT FAILURE: {class}"),
            HaltReason::WaitsExhausted { class, .. } => format!("ENVIRONMENT FAILURE: {class}"),
            HaltReason::QuotaTooLong { .. } => "ENVIRONMENT FAILURE: QUOTA".into(),
            HaltReason::SessionBudget => "BUDGET EXHAUSTED: session budget".into(),
            HaltReason::DayBudget => {
                "BUDGET EXHAUSTED: daily budget (the project's spend over the last 24 hours)".into()
            }
            HaltReason::Operator => "HALTED BY OPERATOR".into(),
            HaltReason::DecisionTimeout => "HALTED: decision timed out".into(),
            HaltReason::RunnerStateLost => "ENVIRONMENT FAILURE: RUNNER STATE LOST".into(),
            HaltReason::Network => "ENVIRONMENT FAILURE: NETWORK".into(),
            HaltReason::RateLimit { .. } => "ENVIRONMENT FAILURE: RATE LIMIT".into(),
            HaltReason::TrackerWrite { .. } => "ENVIRONMENT FAILURE: TRACKER".into(),
            HaltReason::TrackerStale { .. } | HaltReason::ClaimRefused { .. } => {
                "ENVIRONMENT FAILURE: TRACKER".into()
            }
            HaltReason::Workspace { .. } => "ENVIRONMENT FAILURE: WORKSPACE".into(),
            HaltReason::SameFailureAcrossIssues { class, .. } => {
                format!("ENVIRONMENT FAILURE: {class} on two issues in a row")
            }
            HaltReason::RepeatedKills { .. } => "ENVIRONMENT FAILURE: RUNNER KILLED".into(),
            HaltReason::MergeTurnHeld { .. } => "ENVIRONMENT FAILURE: MERGE LEASE".into(),
            HaltReason::BranchMoved { on_top: false, .. } => {
                "HALTED: the branch was rewritten on origin".into()
            }
            HaltReason::BranchMoved { on_top: true, .. } => {
                "HALTED: the branch kept moving on origin".into()
            }
            HaltReason::MainKeptMoving { .. } => {
                "HALTED: main kept moving ahead of the branch".into()
            }
        }
    }
}
