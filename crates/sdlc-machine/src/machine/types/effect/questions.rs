//! What is asked of an `Effect` once made: whether it waits for an answer, whether it
//! reproduces a journaled one, the effect with its issue taken out, its name.

use super::Effect;

impl Effect {
    /// Effects that wait for an answer: performing one yields the machine's next event (or,
    /// for `Exit`, ends the run). Every other effect is fire-and-forget.
    pub const fn is_request(&self) -> bool {
        matches!(
            self,
            Effect::SelectIssue
                | Effect::CheckPreconditions { .. }
                | Effect::RunStep { .. }
                | Effect::LookAtCi { .. }
                | Effect::LookAtReview { .. }
                | Effect::AddressReview { .. }
                | Effect::UpdateBranch { .. }
                | Effect::Wait { .. }
                | Effect::Pause { .. }
                | Effect::TakeMergeTurn { .. }
                | Effect::ClaimIssue { .. }
                | Effect::RenewClaim { .. }
                | Effect::AskDecision { .. }
                | Effect::LookForDecision { .. }
                | Effect::RecordMerged { .. }
                | Effect::MarkEscalated { .. }
                | Effect::Unquarantine { .. }
                | Effect::Exit { .. }
        )
    }

    /// Whether this effect, produced now, reproduces `recorded`, as an earlier version
    /// journaled it: the same effect, or one that only adds what earlier versions did not
    /// write (a `Wait`'s reason). `replay` compares by it, so old journals still replay.
    pub fn reproduces(&self, recorded: &Effect) -> bool {
        match (self, recorded) {
            (
                Effect::Wait { seconds, .. },
                Effect::Wait {
                    seconds: was,
                    reason: None,
                },
            ) => seconds == was,
            _ => self == recorded,
        }
    }

    /// The same effect with its issue number taken out: for searches over the machine's
    /// states (the exhaustive bound, the diagrams), where which issue it is never decides.
    pub fn without_issue(self) -> Effect {
        match self {
            Effect::RunStep {
                step,
                attempt,
                repair,
                commit,
                money_left_micros,
                ..
            } => Effect::RunStep {
                step,
                issue: 0,
                attempt,
                repair,
                commit,
                money_left_micros,
            },
            Effect::RecordMerged { wait, .. } => Effect::RecordMerged { issue: 0, wait },
            Effect::LookAtCi { look, commit, .. } => Effect::LookAtCi {
                issue: 0,
                look,
                commit,
            },
            Effect::UpdateBranch { commit, .. } => Effect::UpdateBranch { issue: 0, commit },
            Effect::LookAtReview { look, .. } => Effect::LookAtReview { issue: 0, look },
            Effect::AddressReview {
                round,
                attempt,
                money_left_micros,
                ..
            } => Effect::AddressReview {
                issue: 0,
                round,
                attempt,
                money_left_micros,
            },
            Effect::MarkEscalated { .. } => Effect::MarkEscalated { issue: 0 },
            Effect::Unquarantine { .. } => Effect::Unquarantine { issue: 0 },
            Effect::TakeMergeTurn { .. } => Effect::TakeMergeTurn { issue: 0 },
            Effect::ClaimIssue { .. } => Effect::ClaimIssue { issue: 0 },
            Effect::RenewClaim {
                secs,
                lease_secs,
                fresh_secs,
                ..
            } => Effect::RenewClaim {
                issue: 0,
                secs,
                lease_secs,
                fresh_secs,
            },
            Effect::AskDecision {
                step,
                budget_spent_micros,
                ..
            } => Effect::AskDecision {
                step,
                issue: 0,
                budget_spent_micros,
            },
            Effect::LookForDecision { step, .. } => Effect::LookForDecision { step, issue: 0 },
            other => other,
        }
    }

    /// The variant's name, for diagrams and logs.
    pub const fn label(&self) -> &'static str {
        match self {
            Effect::SelectIssue => "SelectIssue",
            Effect::CheckPreconditions { .. } => "CheckPreconditions",
            Effect::RunStep { .. } => "RunStep",
            Effect::UpdateBranch { .. } => "UpdateBranch",
            Effect::LookAtCi { .. } => "LookAtCi",
            Effect::LookAtReview { .. } => "LookAtReview",
            Effect::AddressReview { .. } => "AddressReview",
            Effect::Wait { .. } => "Wait",
            Effect::Pause { .. } => "Pause",
            Effect::TakeMergeTurn { .. } => "TakeMergeTurn",
            Effect::ClaimIssue { .. } => "ClaimIssue",
            Effect::RenewClaim { .. } => "RenewClaim",
            Effect::ReleaseMergeTurn => "ReleaseMergeTurn",
            Effect::AutoCommit(_) => "AutoCommit",
            Effect::CheckoutMain => "CheckoutMain",
            Effect::ResetCycle => "ResetCycle",
            Effect::RecordMerged { .. } => "RecordMerged",
            Effect::MarkEscalated { .. } => "MarkEscalated",
            Effect::Unquarantine { .. } => "Unquarantine",
            Effect::Cleanup => "Cleanup",
            Effect::Notify(_) => "Notify",
            Effect::AskDecision { .. } => "AskDecision",
            Effect::LookForDecision { .. } => "LookForDecision",
            Effect::Halt(_) => "Halt",
            Effect::Exit { .. } => "Exit",
        }
    }
}
