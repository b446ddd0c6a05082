//! Why a cycle gave up on its issue (`EscalationCause`) and why the session halted
//! (`HaltReason`).

use crate::failure::FailureClass;
use crate::step::Step;
use serde::{Deserialize, Serialize};

/// Why a cycle gave up on its issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EscalationCause {
    RetriesExhausted,
    SameFailureRepeated,
    BounceLoop,
    NonRetryable,
    IssueBudget,
    OperatorSkipped,
}

impl EscalationCause {
    pub const fn describe(self) -> &'static str {
        match self {
            EscalationCause::RetriesExhausted => "retries exhausted",
            EscalationCause::SameFailureRepeated => "same failure repeated",
            EscalationCause::BounceLoop => "bounce loop",
            EscalationCause::NonRetryable => "non-retryable failure",
            EscalationCause::IssueBudget => "issue budget exhausted",
            EscalationCause::OperatorSkipped => "skipped by operator",
        }
    }
}

/// Why the session halted. Small and `Copy`: the driver renders the diagnostic text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum HaltReason {
    ConsecutiveEscalations {
        cause: EscalationCause,
        step: Step,
    },
    AllIssuesEscalated,
    AllIssuesBlocked,
    MaxConsecutiveFailures {
        step: Step,
        limit: u32,
    },
    Environment {
        class: FailureClass,
        step: Step,
    },
    WaitsExhausted {
        class: FailureClass,
        step: Step,
    },
    QuotaTooLong {
        step: Step,
    },
    SessionBudget,
    Operator,
    DecisionTimeout,
    /// The driver's own: the journal or the lock was removed or replaced during the run. The
    /// machine never decides this; it is recorded so that the halt is sticky.
    RunnerStateLost,
    /// The network stayed down through every allowed wait.
    Network,
    /// The tracker could not record a merge or an escalation, or lift a quarantine (`issue`
    /// then is not the current one). A merge stays final for the session whether or not the
    /// tracker was told.
    TrackerWrite {
        issue: u32,
        merged: bool,
    },
    /// The tracker offered an issue this session already merged or dropped.
    TrackerStale {
        issue: u32,
    },
    /// A fact the runner owns (a lock file, foreign changes in the tree) was wrong.
    Workspace {
        step: Step,
    },
    /// The same failure ended two different issues in a row: the environment's, not theirs.
    /// The second is not quarantined; the first was released before the halt when that failure
    /// was the only way its step had failed (`Runner::last_escalation_alone`).
    SameFailureAcrossIssues {
        step: Step,
        class: FailureClass,
    },
    /// Attempts of one step kept being cut short by the runner's own death.
    RepeatedKills {
        step: Step,
        kills: u32,
    },
    /// The merge turn stayed with another worker or runner past its wait limit, or the
    /// tracker's merge lease could not be taken: no issue is blamed.
    MergeTurnHeld {
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
            HaltReason::Operator => "HALTED BY OPERATOR".into(),
            HaltReason::DecisionTimeout => "HALTED: decision timed out".into(),
            HaltReason::RunnerStateLost => "ENVIRONMENT FAILURE: RUNNER STATE LOST".into(),
            HaltReason::Network => "ENVIRONMENT FAILURE: NETWORK".into(),
            HaltReason::TrackerWrite { .. } => "ENVIRONMENT FAILURE: TRACKER".into(),
            HaltReason::TrackerStale { .. } => "ENVIRONMENT FAILURE: TRACKER".into(),
            HaltReason::Workspace { .. } => "ENVIRONMENT FAILURE: WORKSPACE".into(),
            HaltReason::SameFailureAcrossIssues { class, .. } => {
                format!("ENVIRONMENT FAILURE: {class} on two issues in a row")
            }
            HaltReason::RepeatedKills { .. } => "ENVIRONMENT FAILURE: RUNNER KILLED".into(),
            HaltReason::MergeTurnHeld { .. } => "ENVIRONMENT FAILURE: MERGE LEASE".into(),
        }
    }
}
