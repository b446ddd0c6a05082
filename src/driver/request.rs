//! The machine's effects as the driver's handlers take them: one type per request (the
//! fields of its `Effect` variant), so that every handler has one shape,
//! `handler(Context, request) -> answer` (`context.rs`), and the loop one arm per request.

use crate::machine::Commit;
use crate::machine::{CommitKind, Effect, HaltReason, Notice, PauseFor, WaitReason};
use crate::step::Step;

/// An effect, by the handler that performs it.
pub(super) enum Request {
    SelectIssue(SelectIssue),
    CheckPreconditions(CheckPreconditions),
    RunStep(RunStep),
    LookAtCi(LookAtCi),
    LookAtReview(LookAtReview),
    AddressReview(AddressReview),
    UpdateBranch(UpdateBranch),
    Wait(Wait),
    Pause(Pause),
    TakeMergeTurn(TakeMergeTurn),
    ClaimIssue(ClaimIssue),
    RenewClaim(RenewClaim),
    RecordMerged(RecordMerged),
    MarkEscalated(MarkEscalated),
    Unquarantine(Unquarantine),
    AskDecision(AskDecision),
    LookForDecision(LookForDecision),
    Exit(Exit),
    /// An effect no event answers: the batch's side effects.
    Side(Side),
}

/// The effects that answer nothing, performed before the batch's request.
pub(super) enum Side {
    ReleaseMergeTurn,
    AutoCommit(CommitKind),
    CheckoutMain,
    ResetCycle,
    Cleanup,
    Notify(Notice),
    Halt(HaltReason),
}

/// `SelectIssue`.
pub(super) struct SelectIssue;

/// `CheckPreconditions`.
pub(super) struct CheckPreconditions {
    pub step: Step,
}

/// `RunStep`: one attempt of `step`.
#[derive(Clone, Copy)]
pub(super) struct RunStep {
    pub step: Step,
    pub issue: u32,
    pub attempt: u32,
    pub repair: bool,
    pub commit: Option<Commit>,
    /// The money the attempt may spend (the fleet's share of it replaces it once taken).
    pub money_left_micros: Option<u64>,
}

/// `LookAtCi`.
pub(super) struct LookAtCi {
    pub issue: u32,
    pub look: u32,
    pub commit: Option<Commit>,
}

/// `LookAtReview`.
pub(super) struct LookAtReview {
    pub issue: u32,
    pub look: u32,
}

/// `AddressReview`: round `round` of addressing the reviewers' requests.
pub(super) struct AddressReview {
    pub issue: u32,
    pub round: u32,
    pub attempt: u32,
    pub money_left_micros: Option<u64>,
}

/// `UpdateBranch`.
pub(super) struct UpdateBranch {
    pub issue: u32,
    pub commit: Option<Commit>,
}

/// `Wait`.
pub(super) struct Wait {
    pub seconds: u64,
    pub reason: Option<WaitReason>,
}

/// `Pause`.
pub(super) struct Pause {
    pub millis: u64,
    pub waits_for: PauseFor,
}

/// `TakeMergeTurn`.
pub(super) struct TakeMergeTurn {
    pub issue: u32,
}

/// `ClaimIssue`.
pub(super) struct ClaimIssue {
    pub issue: u32,
}

/// `RenewClaim`.
pub(super) struct RenewClaim {
    pub issue: u32,
    pub secs: u64,
    pub lease_secs: u64,
    pub fresh_secs: Option<u64>,
}

/// `RecordMerged`.
pub(super) struct RecordMerged {
    pub issue: u32,
    pub wait: bool,
}

/// `MarkEscalated`.
pub(super) struct MarkEscalated {
    pub issue: u32,
}

/// `Unquarantine`.
pub(super) struct Unquarantine {
    pub issue: u32,
}

/// `AskDecision`.
pub(super) struct AskDecision {
    pub step: Step,
    pub issue: u32,
    pub budget_spent_micros: Option<u64>,
}

/// `LookForDecision`.
pub(super) struct LookForDecision;

/// `Exit`.
pub(super) struct Exit {
    pub code: u8,
}

impl From<Effect> for Request {
    /// One line per effect: the request's type with the variant's fields.
    #[rustfmt::skip]
    fn from(effect: Effect) -> Request {
        use Effect as E;
        match effect {
            E::SelectIssue => Request::SelectIssue(SelectIssue),
            E::CheckPreconditions { step } => Request::CheckPreconditions(CheckPreconditions { step }),
            E::RunStep { step, issue, attempt, repair, commit, money_left_micros } => {
                Request::RunStep(RunStep { step, issue, attempt, repair, commit, money_left_micros })
            }
            E::LookAtCi { issue, look, commit } => Request::LookAtCi(LookAtCi { issue, look, commit }),
            E::LookAtReview { issue, look } => Request::LookAtReview(LookAtReview { issue, look }),
            E::AddressReview { issue, round, attempt, money_left_micros } => {
                Request::AddressReview(AddressReview { issue, round, attempt, money_left_micros })
            }
            E::UpdateBranch { issue, commit } => Request::UpdateBranch(UpdateBranch { issue, commit }),
            E::Wait { seconds, reason } => Request::Wait(Wait { seconds, reason }),
            E::Pause { millis, waits_for } => Request::Pause(Pause { millis, waits_for }),
            E::TakeMergeTurn { issue } => Request::TakeMergeTurn(TakeMergeTurn { issue }),
            E::ClaimIssue { issue } => Request::ClaimIssue(ClaimIssue { issue }),
            E::RenewClaim { issue, secs, lease_secs, fresh_secs } => {
                Request::RenewClaim(RenewClaim { issue, secs, lease_secs, fresh_secs })
            }
            E::RecordMerged { issue, wait } => Request::RecordMerged(RecordMerged { issue, wait }),
            E::MarkEscalated { issue } => Request::MarkEscalated(MarkEscalated { issue }),
            E::Unquarantine { issue } => Request::Unquarantine(Unquarantine { issue }),
            E::AskDecision { step, issue, budget_spent_micros } => {
                Request::AskDecision(AskDecision { step, issue, budget_spent_micros })
            }
            E::LookForDecision { .. } => Request::LookForDecision(LookForDecision),
            E::Exit { code } => Request::Exit(Exit { code }),
            E::ReleaseMergeTurn => Request::Side(Side::ReleaseMergeTurn),
            E::AutoCommit(kind) => Request::Side(Side::AutoCommit(kind)),
            E::CheckoutMain => Request::Side(Side::CheckoutMain),
            E::ResetCycle => Request::Side(Side::ResetCycle),
            E::Cleanup => Request::Side(Side::Cleanup),
            E::Notify(notice) => Request::Side(Side::Notify(notice)),
            E::Halt(reason) => Request::Side(Side::Halt(reason)),
        }
    }
}
