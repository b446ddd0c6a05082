//! What comes out of the machine: `Effect`, with what it announces (`Notice`) and the
//! auto-commits it asks for (`CommitKind`).

use super::{EscalationCause, HaltReason, Signal};
use crate::failure::FailureClass;
use crate::step::{Check, Step};
use serde::{Deserialize, Serialize};

/// Auto-commit messages of docs/lifecycle.md, counters-and-bounds.md, persistence.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommitKind {
    Implemented { issue: u32 },
    PartialWork,
    OnSignal(Signal),
}

impl CommitKind {
    pub fn message(&self) -> String {
        match self {
            CommitKind::Implemented { issue } => format!("feat: implement issue #{issue}"),
            CommitKind::PartialWork => "chore: save partial work before escalation".into(),
            CommitKind::OnSignal(sig) => format!("chore: save work on signal {}", sig.name()),
        }
    }
}

/// What the machine wants announced (severity is implied by the kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "notice", rename_all = "camelCase")]
pub enum Notice {
    CycleStarted {
        issue: u32,
    },
    Retrying {
        step: Step,
        attempt: u32,
        class: FailureClass,
    },
    Bounced {
        from: Step,
        to: Step,
        check: Check,
        bounces: u32,
    },
    Waiting {
        step: Step,
        class: FailureClass,
        seconds: u64,
    },
    Escalated {
        issue: u32,
        step: Step,
        cause: EscalationCause,
        consecutive: u32,
    },
    Merged {
        issue: u32,
    },
    NothingToDo,
    /// A runner action is waited on: its call failed for a network reason.
    NetworkWait {
        seconds: u64,
        wait: u32,
    },
    /// A person closed, relabelled or escalated the issue: the cycle was dropped.
    Withdrawn {
        issue: u32,
    },
    /// The failure that escalated `issue` ended `second` too, at `step` with `class`: the
    /// environment's, so `issue`'s quarantine was lifted in the tracker.
    Released {
        issue: u32,
        second: u32,
        step: Step,
        class: FailureClass,
    },
    /// CI has not settled: the next look follows after `seconds` (`look` is its number in
    /// the attempt, the first look being 1).
    CiPending {
        seconds: u64,
        look: u32,
    },
    /// CI stayed pending through the step's time limit: the attempt failed (TIMEOUT).
    CiStillPending {
        waited_secs: u64,
    },
    ShuttingDown {
        signal: Signal,
    },
    /// The merge turn is busy: waiting for it, at most `limit_ms` (said once per wait).
    WaitingForMergeTurn {
        limit_ms: u64,
    },
    /// The merge lost a push race: main is refreshed and the merge run again (`lost` of
    /// `max` free re-runs in this attempt).
    MergeRaceLost {
        lost: u32,
        max: u32,
    },
    /// The merge lost more races in a row than are re-run for free: the attempt failed.
    MergeRacesExhausted {
        lost: u32,
    },
}

/// Effects out, performed by the driver in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "camelCase")]
pub enum Effect {
    /// Ask the tracker for the next issue (excluding `Core::escalated()`).
    SelectIssue,
    CheckPreconditions {
        step: Step,
    },
    RunStep {
        step: Step,
        issue: u32,
        attempt: u32,
        repair: bool,
    },
    /// Look at the issue's CI once more within the monitorCI attempt under way (answered by
    /// `CiPending`, `StepSucceeded`, `StepFailed` or `NetworkFailed`, as `RunStep`). No agent
    /// runs: only `RunStep` starts one.
    LookAtCi {
        issue: u32,
        look: u32,
    },
    Wait {
        seconds: u64,
    },
    /// A short wait for another merger (the merge turn, after a lost race): answered by
    /// `WaitOver` or `ShutdownRequested`, like `Wait`.
    Pause {
        millis: u64,
    },
    /// Take the merge turn: the fleet's, then the tracker's merge lease; the holder renews
    /// it (answered by `MergeTurnTaken`, `MergeTurnBusy`, `TrackerWriteFailed` when the lease
    /// cannot be written, or `NetworkFailed`).
    TakeMergeTurn {
        issue: u32,
    },
    /// Give the merge turn back (merged or not); idempotent.
    ReleaseMergeTurn,
    AutoCommit(CommitKind),
    CheckoutMain,
    /// Clear the cycle's fields in the state file.
    ResetCycle,
    /// The issue's PR is merged: close it in the tracker (answered by `TrackerUpdated`,
    /// `TrackerWriteFailed` or `NetworkFailed`).
    RecordMerged {
        issue: u32,
    },
    /// Durable quarantine in the tracker (answered like `RecordMerged`).
    MarkEscalated {
        issue: u32,
    },
    /// Lift the quarantine this session put on an issue, with a note saying why: the failure
    /// that escalated it ended the next issue too, so it was never the issue's (answered like
    /// `RecordMerged`).
    Unquarantine {
        issue: u32,
    },
    /// Kill the agent's process tree and the configured patterns.
    Cleanup,
    Notify(Notice),
    /// Pause for a person (manual approval): write the decision file and wait.
    AskDecision {
        step: Step,
        issue: u32,
    },
    Halt(HaltReason),
    Exit {
        code: u8,
    },
}

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
                | Effect::Wait { .. }
                | Effect::Pause { .. }
                | Effect::TakeMergeTurn { .. }
                | Effect::AskDecision { .. }
                | Effect::RecordMerged { .. }
                | Effect::MarkEscalated { .. }
                | Effect::Unquarantine { .. }
                | Effect::Exit { .. }
        )
    }

    /// The same effect with its issue number taken out: for searches over the machine's
    /// states (the exhaustive bound, the diagrams), where which issue it is never decides.
    pub fn without_issue(self) -> Effect {
        match self {
            Effect::RunStep {
                step,
                attempt,
                repair,
                ..
            } => Effect::RunStep {
                step,
                issue: 0,
                attempt,
                repair,
            },
            Effect::RecordMerged { .. } => Effect::RecordMerged { issue: 0 },
            Effect::LookAtCi { look, .. } => Effect::LookAtCi { issue: 0, look },
            Effect::MarkEscalated { .. } => Effect::MarkEscalated { issue: 0 },
            Effect::Unquarantine { .. } => Effect::Unquarantine { issue: 0 },
            Effect::TakeMergeTurn { .. } => Effect::TakeMergeTurn { issue: 0 },
            Effect::AskDecision { step, .. } => Effect::AskDecision { step, issue: 0 },
            other => other,
        }
    }

    pub const fn label(&self) -> &'static str {
        match self {
            Effect::SelectIssue => "SelectIssue",
            Effect::CheckPreconditions { .. } => "CheckPreconditions",
            Effect::RunStep { .. } => "RunStep",
            Effect::LookAtCi { .. } => "LookAtCi",
            Effect::Wait { .. } => "Wait",
            Effect::Pause { .. } => "Pause",
            Effect::TakeMergeTurn { .. } => "TakeMergeTurn",
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
            Effect::Halt(_) => "Halt",
            Effect::Exit { .. } => "Exit",
        }
    }
}
