//! What a state says about itself: its step, whether it is terminal, its name in the
//! diagrams and the journal, and the state of a step.

use super::State;
use crate::step::Step;

/// The state of a step, for transitions computed from data.
pub fn state_of(step: Step) -> State {
    match step {
        Step::StartCycle => State::start_cycle(),
        Step::StartIssue => State::start_issue(),
        Step::WriteSpecs => State::write_specs(),
        Step::Implement => State::implement(),
        Step::Simplify => State::simplify(),
        Step::Verify => State::verify(),
        Step::CommitPush => State::commit_push(),
        Step::CreatePr => State::create_pr(),
        Step::MonitorCi => State::monitor_ci(),
        Step::Merge => State::merge(),
    }
}

impl State {
    /// The step this state works on, if any.
    pub fn step(&self) -> Option<Step> {
        Some(match self {
            State::StartCycle {} => Step::StartCycle,
            State::StartIssue {} => Step::StartIssue,
            State::WriteSpecs {} => Step::WriteSpecs,
            State::Implement {} => Step::Implement,
            State::Simplify {} => Step::Simplify,
            State::Verify {} => Step::Verify,
            State::CommitPush {} => Step::CommitPush,
            State::CreatePr {} => Step::CreatePr,
            State::MonitorCi {} => Step::MonitorCi,
            State::Merge {} => Step::Merge,
            State::WaitingForCi { .. } => Step::MonitorCi,
            State::WaitingToMerge { .. } | State::WaitingForQueue { .. } => Step::Merge,
            State::AwaitingReview {} | State::WaitingForReview { .. } => Step::Merge,
            State::BackingOff { step, .. }
            | State::AwaitingDecision { step }
            | State::Escalating { step, .. }
            | State::Releasing { step, .. } => *step,
            _ => return None,
        })
    }

    /// Whether nothing leaves this state (`Halted`, `Finished`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, State::Halted { .. } | State::Finished { .. })
    }

    /// The same state with its issue number taken out (see
    /// [`Effect::without_issue`](crate::machine::Effect::without_issue)).
    pub fn without_issue(self) -> State {
        match self {
            State::RecordingMerge { .. } => State::recording_merge(0),
            State::WaitingForClose { seconds, .. } => State::waiting_for_close(0, seconds),
            other => other,
        }
    }

    /// The variant's name, as used in diagrams and the journal.
    pub fn name(&self) -> &'static str {
        match self {
            State::Selecting {} => "Selecting",
            State::StartCycle {} => "StartCycle",
            State::StartIssue {} => "StartIssue",
            State::WriteSpecs {} => "WriteSpecs",
            State::Implement {} => "Implement",
            State::Simplify {} => "Simplify",
            State::Verify {} => "Verify",
            State::CommitPush {} => "CommitPush",
            State::CreatePr {} => "CreatePr",
            State::MonitorCi {} => "MonitorCi",
            State::Merge {} => "Merge",
            State::BackingOff { .. } => "BackingOff",
            State::AwaitingDecision { .. } => "AwaitingDecision",
            State::RecordingMerge { .. } => "RecordingMerge",
            State::WaitingForClose { .. } => "WaitingForClose",
            State::Escalating { .. } => "Escalating",
            State::Releasing { .. } => "Releasing",
            State::WaitingForNetwork { .. } => "WaitingForNetwork",
            State::WaitingForCi { .. } => "WaitingForCi",
            State::WaitingForFleet { .. } => "WaitingForFleet",
            State::WaitingToMerge { .. } => "WaitingToMerge",
            State::WaitingForQueue { .. } => "WaitingForQueue",
            State::AwaitingReview {} => "AwaitingReview",
            State::WaitingForReview { .. } => "WaitingForReview",
            State::Halted { .. } => "Halted",
            State::Finished { .. } => "Finished",
        }
    }
}
