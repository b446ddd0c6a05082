//! What comes out of the machine: `Effect`, with the auto-commits it asks for (`CommitKind`)
//! and what a wait waits for (`WaitReason`). What it announces is in `notice`, what is asked
//! of an effect once made in `questions`.

mod questions;

use super::{Commit, HaltReason, Notice, Signal};
use crate::failure::FailureClass;
use crate::step::Step;
use serde::{Deserialize, Serialize};

/// Auto-commit messages of docs/lifecycle.md, counters-and-bounds.md, persistence.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommitKind {
    /// The implement step succeeded: its work is committed.
    Implemented {
        /// The issue implemented.
        issue: u32,
    },
    /// An agent step of the issue succeeded (`Limits::runner_commits`): its work is
    /// committed by the runner, the agent's git directory being read-only.
    StepWork {
        /// The issue worked on.
        issue: u32,
        /// The step whose work it is.
        step: Step,
    },
    /// The issue escalated: what the agent left is committed on its branch.
    PartialWork,
    /// A signal stops the runner: the work so far is committed.
    OnSignal(Signal),
}

impl CommitKind {
    /// The commit message.
    pub fn message(&self) -> String {
        match self {
            CommitKind::Implemented { issue } => format!("feat: implement issue #{issue}"),
            CommitKind::StepWork { issue, step } => {
                format!("{}: {} of issue #{issue}", step.commit_type(), step.key())
            }
            CommitKind::PartialWork => "chore: save partial work before escalation".into(),
            CommitKind::OnSignal(sig) => format!("chore: save work on signal {}", sig.name()),
        }
    }
}

/// What a `Wait` waits for: the machine says it with the request, so a restart that waits
/// again says the same (no notice relays it to the shell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WaitReason {
    /// An agent's rate limit, overload or quota window, with its class (`None` on a restart:
    /// the backing-off state keeps the step and the length, not the class).
    Backoff(Option<FailureClass>),
    /// The network failed one of the runner's own calls.
    Network,
    /// An API's rate limit (GitHub's, GitLab's, Linear's) refused one of the runner's calls.
    RateLimit,
    /// The fleet pauses every worker for another worker's rate limit or quota.
    FleetPause,
    /// CI has not finished with the verified commit.
    Ci,
    /// The PR's review holds the merge.
    Review,
    /// The merged issue is still open: the tracker's own close (from the PR's `Closes #N`)
    /// is waited for before the runner closes it itself.
    TrackerClose,
    /// The PR is in the base branch's merge queue: its CI on the queue's merge group is
    /// waited for before the next look.
    MergeQueue,
}

impl WaitReason {
    /// The word `status`, `live.json` and the page show: the failure class, `BACKOFF` when it
    /// is not known, or the wait's own name.
    pub fn label(self) -> &'static str {
        match self {
            WaitReason::Backoff(Some(class)) => class.name(),
            WaitReason::Backoff(None) => "BACKOFF",
            WaitReason::Network => "NETWORK",
            WaitReason::RateLimit => "RATE_LIMIT",
            WaitReason::FleetPause => "FLEET_PAUSE",
            WaitReason::Ci => "CI",
            WaitReason::Review => "REVIEW",
            WaitReason::TrackerClose => "TRACKER_CLOSE",
            WaitReason::MergeQueue => "MERGE_QUEUE",
        }
    }
}

/// What a `Pause` waits for. The machine says it with the request, so the shell never reads
/// the state to know whether news may end a pause early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PauseFor {
    /// Another merger (the merge turn was busy, or a merge lost a push race): news of the
    /// turn (a merge ended, a verdict of the train) ends the pause early, and the machine
    /// asks again. Its wait's limit counts the pause whole either way.
    MergeTurn,
    /// The next look for a person's decision: only its time or a shutdown ends it. The
    /// default, for pauses journaled before pauses said what they wait for.
    #[default]
    Decision,
}

/// Effects out, performed by the driver in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "camelCase")]
pub enum Effect {
    /// Ask the tracker for the next issue (excluding `Core::escalated()`): answered by
    /// `IssueSelected`, `Resume`, `AlreadyMerged`, `NoIssues`, `AllEscalated`, `AllBlocked`,
    /// `TrackerReadFailed` (the run stops, the session stays open), `NetworkFailed` or
    /// `RateLimited`.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = Core::new(Limits::default(), Mode::Continuous);
    /// assert_eq!(core.handle(&Event::Start).request(), Some(&Effect::SelectIssue));
    /// let first = Effect::CheckPreconditions { step: Step::StartCycle };
    /// assert_eq!(core.handle(&Event::IssueSelected { issue: 4 }).request(), Some(&first));
    /// ```
    SelectIssue,
    /// Check a step's preconditions (answered by `PreconditionsOk`, `AlreadyDone`,
    /// `PreconditionFailed`, `IssueWithdrawn`, `WorkspaceUnfit` or `NetworkFailed`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let check = Effect::CheckPreconditions { step: Step::StartCycle };
    /// assert_eq!(core.handle(&Event::IssueSelected { issue: 1 }).request(), Some(&check));
    /// let run = core.handle(&Event::PreconditionsOk { step: Step::StartCycle });
    /// assert!(matches!(run.request(), Some(Effect::RunStep { step: Step::StartCycle, attempt: 1, .. })));
    /// ```
    CheckPreconditions {
        /// The step about to start.
        step: Step,
    },
    /// Run one attempt of a step (answered by its outcome: `StepSucceeded`, `StepFailed`,
    /// `WorkspaceUnfit`; for monitorCI `CiPassed`, `CiPending`; for merge `MergeRaceLost`,
    /// `MergeConflict`, `BranchBehind`, `CiFailedTogether`, `MergeQueued` (the forge's merge
    /// queue holds the PR; issued again after its wait, the run looks at the queue); for a builtin step's repair `Repaired`; before a look at
    /// the branch a person's move, `BranchMoved`, `AlreadyMerged`, `IssueWithdrawn`; a runner's
    /// call may answer `NetworkFailed` or `RateLimited`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_run = |r: &Effect| matches!(r, Effect::RunStep { .. });
    /// let run = until(&mut core, Event::IssueSelected { issue: 1 }, is_run, |_| None);
    /// assert!(matches!(run, Effect::RunStep { step: Step::StartCycle, attempt: 1, repair: false, .. }));
    /// let usage = Usage::default();
    /// let next = core.handle(&Event::StepSucceeded { step: Step::StartCycle, usage });
    /// assert_eq!(next.request(), Some(&Effect::CheckPreconditions { step: Step::StartIssue }));
    /// ```
    RunStep {
        /// The step.
        step: Step,
        /// The issue of the cycle.
        issue: u32,
        /// The attempt's number (1-based), failed attempts of the step before it plus one.
        attempt: u32,
        /// Whether the prompt carries the step's last classified failure, to repair it.
        repair: bool,
        /// For merge: the commit CI passed in this cycle (`CiPassed`), the only one the merge
        /// may merge. `None` for other steps, and for a merge with no verdict in this cycle
        /// (the merge then asks CI about origin's head itself). Absent in older journals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<Commit>,
        /// The most this attempt may spend, in micro-dollars: the least of what the issue's
        /// and the session's budgets have left and the per-call cap. The shell stops the agent
        /// when its running cost reaches it. `None` when no dollar budget is set (and in older
        /// journals).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        money_left_micros: Option<u64>,
    },
    /// Look at the issue's CI once more within the monitorCI attempt under way (answered by
    /// `CiPending`, `StepSucceeded`, `StepFailed` or `NetworkFailed`, as `RunStep`). No agent
    /// runs: only `RunStep` starts one.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_look = |r: &Effect| matches!(r, Effect::LookAtCi { .. });
    /// let pending = |r: &Effect| match r {
    ///     Effect::RunStep { step: Step::MonitorCi, .. } => Some(Event::CiPending {
    ///         usage: Usage::default(),
    ///         commit: Some(head()),
    ///     }),
    ///     _ => None,
    /// };
    /// let look = until(&mut core, Event::IssueSelected { issue: 1 }, is_look, pending);
    /// assert_eq!(look, Effect::LookAtCi { issue: 1, look: 2, commit: Some(head()) });
    /// let passed = Event::CiPassed { commit: head(), usage: Usage::default() };
    /// assert_eq!(core.handle(&passed).request(), Some(&Effect::CheckPreconditions { step: Step::Merge }));
    /// ```
    LookAtCi {
        /// The issue of the cycle.
        issue: u32,
        /// The look's number in the attempt (the first look being 1).
        look: u32,
        /// The commit the look is for (the one the last look saw, or a person's newer head);
        /// absent in older journals, and then the look is for the branch's local head.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<Commit>,
    },
    /// Look at the review of the issue's PR once CI passed, before the merge (answered by
    /// `ReviewLooked`, `NetworkFailed` or `RateLimited`). Reading only: nothing is changed.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let review = ReviewGate { require_approval: true, wait_secs: 600, max_rounds: 1, ignore_authors: vec![] };
    /// let mut core = started(Limits { review: Some(review), ..Limits::default() });
    /// let is_look = |r: &Effect| matches!(r, Effect::LookAtReview { .. });
    /// let look = until(&mut core, Event::IssueSelected { issue: 1 }, is_look, |_| None);
    /// assert_eq!(look, Effect::LookAtReview { issue: 1, look: 1 });
    /// let approved = Event::ReviewLooked { decision: ReviewDecision::Approved, feedback: vec![] };
    /// assert_eq!(core.handle(&approved).request(), Some(&Effect::CheckPreconditions { step: Step::Merge }));
    /// ```
    LookAtReview {
        /// The issue of the cycle.
        issue: u32,
        /// The look's number in the cycle (the first look being 1).
        look: u32,
    },
    /// A round of addressing reviewers' requests for changes: the agent is handed the
    /// round's feedback (`Runner::review_handout`), then the runner commits what it changed
    /// and pushes the branch. Answered as monitorCI's repair: `Repaired` of monitorCI once
    /// pushed (CI is looked at again for the new head), or `StepFailed` of monitorCI (an
    /// attempt failure like any step's), `NetworkFailed` or `RateLimited`; a person's move
    /// during the round, found before the push, as at monitorCI's looks: `BranchMoved`,
    /// `AlreadyMerged` (merged by hand) or `IssueWithdrawn` (the branch deleted, the PR closed).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let review = ReviewGate { require_approval: true, wait_secs: 600, max_rounds: 1, ignore_authors: vec![] };
    /// let mut core = started(Limits { review: Some(review), ..Limits::default() });
    /// let is_look = |r: &Effect| matches!(r, Effect::LookAtReview { .. });
    /// until(&mut core, Event::IssueSelected { issue: 1 }, is_look, |_| None);
    /// let note = ReviewNote { id: "1".into(), author: "ann".into(), body: "rename it".into(), ..Default::default() };
    /// let changes = Event::ReviewLooked { decision: ReviewDecision::ChangesRequested, feedback: vec![note] };
    /// let round = core.handle(&changes).request().copied();
    /// assert!(matches!(round, Some(Effect::AddressReview { issue: 1, round: 1, .. })), "{round:?}");
    /// let pushed = Event::Repaired { step: Step::MonitorCi, usage: Usage::default() };
    /// assert!(matches!(core.handle(&pushed).request(), Some(Effect::LookAtCi { commit: None, .. })));
    /// ```
    AddressReview {
        /// The issue of the cycle.
        issue: u32,
        /// The round's number in the cycle (1-based), at most `review.maxReviewRounds`.
        round: u32,
        /// The attempt's number, monitorCI's failed attempts before it plus one.
        attempt: u32,
        /// The most this attempt may spend (as `RunStep`'s).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        money_left_micros: Option<u64>,
    },
    /// Bring the issue's branch up to date with origin's main and push it, after the merge's
    /// repair of a conflict (answered by `BranchUpdated`; by `StepFailed` of merge when it
    /// still conflicts (MERGE_CONFLICT, the conflicting paths and both sides in the failure's
    /// words) or the runner's own git failed; a person's move (`BranchMoved`,
    /// `AlreadyMerged`, `IssueWithdrawn`); `NetworkFailed` or `RateLimited`, after which it is
    /// asked for again: the agent's repair is never run twice for one call). Nothing is
    /// committed that holds conflict markers; a half-done merge is aborted first.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_update = |r: &Effect| matches!(r, Effect::UpdateBranch { .. });
    /// let conflicts = |r: &Effect| match r {
    ///     Effect::RunStep { step: Step::Merge, repair: false, .. } => Some(Event::MergeConflict {
    ///         paths: vec!["src/lib.rs".into()],
    ///         usage: Usage::default(),
    ///     }),
    ///     Effect::RunStep { step: Step::Merge, repair: true, .. } => Some(Event::Repaired {
    ///         step: Step::Merge,
    ///         usage: Usage::default(),
    ///     }),
    ///     _ => None,
    /// };
    /// let update = until(&mut core, Event::IssueSelected { issue: 1 }, is_update, conflicts);
    /// assert_eq!(update, Effect::UpdateBranch { issue: 1, commit: Some(head()) });
    /// let updated = Event::BranchUpdated { head: head(), usage: Usage::default() };
    /// let next = core.handle(&updated).request().copied();
    /// // CI is given time with the new head before the merge looks at it.
    /// assert!(matches!(next, Some(Effect::Wait { reason: Some(WaitReason::Ci), .. })), "{next:?}");
    /// ```
    UpdateBranch {
        /// The issue of the cycle.
        issue: u32,
        /// The commit CI passed before the conflict (the branch's head the runner expects on
        /// origin); `None` without a verdict in this cycle.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<Commit>,
    },
    /// Wait out a rate limit, a quota window, a network failure or CI (answered by `WaitOver`
    /// or `ShutdownRequested`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_ci = |r: &Effect| matches!(r, Effect::RunStep { step: Step::MonitorCi, .. });
    /// until(&mut core, Event::IssueSelected { issue: 1 }, is_ci, |_| None);
    /// let pending = Event::CiPending { usage: Usage::default(), commit: Some(head()) };
    /// let wait = core.handle(&pending).request().copied();
    /// assert!(matches!(wait, Some(Effect::Wait { reason: Some(WaitReason::Ci), .. })), "{wait:?}");
    /// assert!(matches!(core.handle(&Event::WaitOver).request(), Some(Effect::LookAtCi { look: 2, .. })));
    /// ```
    Wait {
        /// How long.
        seconds: u64,
        /// What for, as `status` and the page show it (absent in journals of earlier
        /// versions).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<WaitReason>,
    },
    /// A short, quiet wait (for another merger: the merge turn, after a lost race; between two
    /// looks for a person's decision): answered by `WaitOver` or `ShutdownRequested`, like
    /// `Wait`, and not narrated.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits { merge_turn_wait_ms: Some(60_000), ..Limits::default() });
    /// let is_turn = |r: &Effect| matches!(r, Effect::TakeMergeTurn { .. });
    /// until(&mut core, Event::IssueSelected { issue: 1 }, is_turn, |_| None);
    /// let pause = core.handle(&Event::MergeTurnBusy).request().copied();
    /// assert!(matches!(pause, Some(Effect::Pause { waits_for: PauseFor::MergeTurn, .. })), "{pause:?}");
    /// assert_eq!(core.handle(&Event::WaitOver).request(), Some(&Effect::TakeMergeTurn { issue: 1 }));
    /// ```
    Pause {
        /// How long.
        millis: u64,
        /// What for: whether news of the merge turn may end it early.
        #[serde(default)]
        waits_for: PauseFor,
    },
    /// Take the merge turn: the fleet's, then the tracker's merge lease; the holder renews
    /// it (answered by `MergeTurnTaken`, `MergeTurnBusy`, `TrackerWriteFailed` when the lease
    /// cannot be written, or `NetworkFailed`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits { merge_turn_wait_ms: Some(60_000), ..Limits::default() });
    /// let is_turn = |r: &Effect| matches!(r, Effect::TakeMergeTurn { .. });
    /// let turn = until(&mut core, Event::IssueSelected { issue: 1 }, is_turn, |_| None);
    /// assert_eq!(turn, Effect::TakeMergeTurn { issue: 1 });
    /// let merge = core.handle(&Event::MergeTurnTaken).request().copied();
    /// assert!(matches!(merge, Some(Effect::RunStep { step: Step::Merge, .. })), "{merge:?}");
    /// ```
    TakeMergeTurn {
        /// The issue to merge.
        issue: u32,
    },
    /// Give the merge turn back (merged or not); idempotent.
    ReleaseMergeTurn,
    /// Claim the selected issue for this runner (runners sharing a tracker, `--worker-id`):
    /// answered by `ClaimTaken`, `ClaimHeld`, `TrackerWriteFailed` when the claim cannot be
    /// written, or `NetworkFailed`.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits { claims: true, claim_lease_secs: Some(3600), ..Limits::default() });
    /// assert_eq!(core.handle(&Event::IssueSelected { issue: 1 }).request(), Some(&Effect::ClaimIssue { issue: 1 }));
    /// let next = core.handle(&Event::ClaimTaken { issue: 1 }).request().copied();
    /// assert!(matches!(next, Some(Effect::RenewClaim { issue: 1, .. })), "{next:?}");
    /// ```
    ClaimIssue {
        /// The issue selected.
        issue: u32,
    },
    /// Renew the claim on the issue under way so that it outlasts `secs` more than a lease
    /// (the wait about to begin), before the request held back for it: answered by
    /// `ClaimRenewed`, `ClaimLost`, or `TrackerWriteFailed`/`NetworkFailed` when the claim
    /// cannot be written (the request goes ahead: the next renewal tells).
    ///
    /// The terms are the machine's: the claim is written to last `lease_secs` from now,
    /// unless it still has more than `fresh_secs` left (then it needs no write, and
    /// `ClaimRenewed` answers at once). A session begun by an earlier version, whose shell
    /// kept the lease, asks with `lease_secs` 0: the shell's lease plus `secs`.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits { claims: true, claim_lease_secs: Some(3600), ..Limits::default() });
    /// let is_renewal = |r: &Effect| matches!(r, Effect::RenewClaim { .. });
    /// let renewal = until(&mut core, Event::IssueSelected { issue: 1 }, is_renewal, |_| None);
    /// assert_eq!(renewal, Effect::RenewClaim { issue: 1, secs: 0, lease_secs: 3600, fresh_secs: Some(1800) });
    /// let held_back = Effect::CheckPreconditions { step: Step::StartCycle };
    /// assert_eq!(core.handle(&Event::ClaimRenewed).request(), Some(&held_back));
    /// ```
    RenewClaim {
        /// The issue under way.
        issue: u32,
        /// How long the request held back may take beyond a step (its wait).
        secs: u64,
        /// How long the renewed claim lasts from now: the lease plus `secs` (0: the shell's).
        #[serde(default, skip_serializing_if = "is_zero")]
        lease_secs: u64,
        /// A claim with more than this many seconds left needs no write; `None`: write it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fresh_secs: Option<u64>,
    },
    /// Commit what the working tree holds, with this kind's message.
    AutoCommit(CommitKind),
    /// Check out the main branch: the cycle's branch is left as it is.
    CheckoutMain,
    /// Clear the cycle's fields in the state file.
    ResetCycle,
    /// The issue's PR is merged: make sure the tracker shows it closed (answered by
    /// `TrackerUpdated`, `TrackerWriteFailed` or `NetworkFailed`). With `wait`, the
    /// tracker's own close is still waited for: an issue still open answers `IssueStillOpen`
    /// and is left alone; without, the runner closes an issue still open itself, saying so.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_record = |r: &Effect| matches!(r, Effect::RecordMerged { .. });
    /// let record = until(&mut core, Event::IssueSelected { issue: 1 }, is_record, |_| None);
    /// assert_eq!(record, Effect::RecordMerged { issue: 1, wait: false });
    /// assert_eq!(core.handle(&Event::TrackerUpdated).request(), Some(&Effect::SelectIssue));
    ///
    /// // GitHub closes the issue itself, a second or two after the merge: looked for first.
    /// let mut core = started(Limits { tracker_close_waits: 1, ..Limits::default() });
    /// let record = until(&mut core, Event::IssueSelected { issue: 1 }, is_record, |_| None);
    /// assert_eq!(record, Effect::RecordMerged { issue: 1, wait: true });
    /// let wait = core.handle(&Event::IssueStillOpen).request().copied();
    /// assert!(matches!(wait, Some(Effect::Wait { seconds: 2, reason: Some(WaitReason::TrackerClose) })));
    /// let last = Effect::RecordMerged { issue: 1, wait: false };
    /// assert_eq!(core.handle(&Event::WaitOver).request(), Some(&last));
    /// assert_eq!(core.handle(&Event::TrackerUpdated).request(), Some(&Effect::SelectIssue));
    /// ```
    RecordMerged {
        /// The merged issue.
        issue: u32,
        /// The tracker's own close is still waited for: an issue still open is left open
        /// (`IssueStillOpen`). Absent in journals of earlier versions, which closed it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        wait: bool,
    },
    /// Durable quarantine in the tracker (answered like `RecordMerged`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_mark = |r: &Effect| matches!(r, Effect::MarkEscalated { .. });
    /// let fails = |r: &Effect| match r {
    ///     Effect::RunStep { step, .. } => Some(failed(*step)),
    ///     _ => None,
    /// };
    /// let mark = until(&mut core, Event::IssueSelected { issue: 1 }, is_mark, fails);
    /// assert_eq!(mark, Effect::MarkEscalated { issue: 1 });
    /// assert_eq!(core.handle(&Event::TrackerUpdated).request(), Some(&Effect::SelectIssue));
    /// ```
    MarkEscalated {
        /// The issue to quarantine.
        issue: u32,
    },
    /// Lift the quarantine this session put on an issue, with a note saying why: the failure
    /// that escalated it ended the next issue too, so it was never the issue's (answered like
    /// `RecordMerged`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let is_release = |r: &Effect| matches!(r, Effect::Unquarantine { .. });
    /// let mut issues = 1;
    /// let both_fail = |r: &Effect| match r {
    ///     Effect::RunStep { step, .. } => Some(failed(*step)),
    ///     Effect::SelectIssue => {
    ///         issues += 1;
    ///         Some(Event::IssueSelected { issue: issues })
    ///     }
    ///     _ => None,
    /// };
    /// let release = until(&mut core, Event::IssueSelected { issue: 1 }, is_release, both_fail);
    /// assert_eq!(release, Effect::Unquarantine { issue: 1 });
    /// let next = core.handle(&Event::TrackerUpdated).request().copied();
    /// assert_eq!(next, Some(Effect::Exit { code: 1 }));
    /// ```
    Unquarantine {
        /// The issue to release.
        issue: u32,
    },
    /// Kill the agent's process tree and the configured patterns.
    Cleanup,
    /// Announce something (console, log, notification channels).
    Notify(Notice),
    /// Ask a person (manual approval): write the decision file, tell the person, and look
    /// once for the answer (answered by `Decided`, `DecisionPending`, or `DecisionTimedOut`
    /// when the request cannot be written).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits { manual_approval: true, ..Limits::default() });
    /// let is_ask = |r: &Effect| matches!(r, Effect::AskDecision { .. });
    /// let fails = |r: &Effect| match r {
    ///     Effect::RunStep { step, .. } => Some(failed(*step)),
    ///     _ => None,
    /// };
    /// let ask = until(&mut core, Event::IssueSelected { issue: 1 }, is_ask, fails);
    /// assert!(matches!(ask, Effect::AskDecision { step: Step::StartCycle, issue: 1, .. }), "{ask:?}");
    /// let retry = Event::Decided { option: DecisionOption::Retry };
    /// let next = core.handle(&retry).request().copied();
    /// assert!(matches!(next, Some(Effect::CheckPreconditions { step: Step::StartCycle })), "{next:?}");
    /// ```
    AskDecision {
        /// The step whose retries are spent.
        step: Step,
        /// The issue of the cycle.
        issue: u32,
        /// What the issue spent, when its budget was reached (`budget.onExceeded: ask`)
        /// rather than a step's retries (absent in older journals).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget_spent_micros: Option<u64>,
    },
    /// Look once more for a person's answer to the decision file (answered by `Decided` or
    /// `DecisionPending`).
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits { manual_approval: true, ..Limits::default() });
    /// let is_ask = |r: &Effect| matches!(r, Effect::AskDecision { .. });
    /// let fails = |r: &Effect| match r {
    ///     Effect::RunStep { step, .. } => Some(failed(*step)),
    ///     _ => None,
    /// };
    /// until(&mut core, Event::IssueSelected { issue: 1 }, is_ask, fails);
    /// let is_look = |r: &Effect| matches!(r, Effect::LookForDecision { .. });
    /// let look = until(&mut core, Event::DecisionPending, is_look, |_| None);
    /// assert_eq!(look, Effect::LookForDecision { step: Step::StartCycle, issue: 1 });
    /// let halt = Event::Decided { option: DecisionOption::Halt };
    /// assert_eq!(core.handle(&halt).request(), Some(&Effect::Exit { code: 1 }));
    /// ```
    LookForDecision {
        /// The step whose retries are spent.
        step: Step,
        /// The issue of the cycle.
        issue: u32,
    },
    /// Report why the session halted (the driver writes the diagnostic).
    Halt(HaltReason),
    /// End the run with this exit code: the request no event answers, always the batch's
    /// last effect.
    ///
    /// ```
    /// # use sdlc_machine::machine::{doc_support::*, *};
    /// # use sdlc_machine::step::Step;
    /// let mut core = started(Limits::default());
    /// let batch = core.handle(&Event::NoIssues).batch().unwrap();
    /// assert_eq!(batch.exit_code(), Some(0));
    /// assert!(core.is_terminal());
    /// assert!(core.handle(&Event::WaitOver).is_empty(), "a finished machine hears nothing");
    /// ```
    Exit {
        /// The process exit code: 0 when the run ended as asked (or on a signal), 1 on a halt
        /// or a failed single issue or step.
        code: u8,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
