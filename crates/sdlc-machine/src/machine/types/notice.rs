//! What the machine wants announced: `Notice`, sent out with `Effect::Notify` (severity is
//! implied by the kind).

use super::{EscalationCause, Signal};
use crate::failure::FailureClass;
use crate::step::{Check, Step};
use serde::{Deserialize, Serialize};

/// What the machine wants announced (severity is implied by the kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "notice", rename_all = "camelCase")]
pub enum Notice {
    /// A cycle started on an issue.
    CycleStarted {
        /// The issue.
        issue: u32,
    },
    /// A step failed and is tried again.
    Retrying {
        /// The step.
        step: Step,
        /// The attempt about to start (1-based).
        attempt: u32,
        /// How the last attempt failed.
        class: FailureClass,
    },
    /// A step's precondition failed: an earlier step runs again.
    Bounced {
        /// The step whose precondition failed.
        from: Step,
        /// The step run again.
        to: Step,
        /// The failed check.
        check: Check,
        /// Bounces in this cycle, this one included.
        bounces: u32,
    },
    /// A rate limit, overload or quota is waited out; no attempt is spent.
    Waiting {
        /// The step that met it.
        step: Step,
        /// What it met.
        class: FailureClass,
        /// How long the wait lasts.
        seconds: u64,
    },
    /// The cycle gave up on its issue: quarantined in the tracker.
    Escalated {
        /// The issue.
        issue: u32,
        /// The step it gave up at.
        step: Step,
        /// Why.
        cause: EscalationCause,
        /// Escalations in a row, this one included.
        consecutive: u32,
    },
    /// The issue's PR is merged and the tracker told.
    Merged {
        /// The issue.
        issue: u32,
    },
    /// No open issue to work on: the session ends.
    NothingToDo,
    /// A fleet worker stands by: enough workers are at work; the fleet starts it again when
    /// a PR joins the merge train.
    StandingBy,
    /// The tracker could not be read for the selection: the run stops, the session stays open.
    TrackerReadFailed,
    /// The fleet pauses every worker for another worker's rate limit or quota: this worker's
    /// request waits.
    FleetPause {
        /// How long this wait lasts.
        seconds: u64,
        /// Fleet pauses in a row on this request, this one included.
        pause: u32,
    },
    /// A runner action is waited on: its call failed for a network reason.
    NetworkWait {
        /// How long this wait lasts.
        seconds: u64,
        /// Waits in a row on this call, this one included.
        wait: u32,
    },
    /// A runner action is waited on: GitHub's rate limit refused its call.
    RateLimitWait {
        /// How long this wait lasts.
        seconds: u64,
        /// Rate-limit waits in a row on this call, this one included.
        wait: u32,
    },
    /// A person closed, relabelled or escalated the issue, or deleted its branch or closed its
    /// pull request: the cycle was dropped.
    Withdrawn {
        /// The issue.
        issue: u32,
    },
    /// The failure that escalated `issue` ended `second` too, at `step` with `class`: the
    /// environment's, so `issue`'s quarantine was lifted in the tracker.
    Released {
        /// The issue whose quarantine was lifted.
        issue: u32,
        /// The issue that failed the same way next.
        second: u32,
        /// The step both failed at.
        step: Step,
        /// How both failed.
        class: FailureClass,
    },
    /// CI has not settled: the next look follows after `seconds` (`look` is its number in
    /// the attempt, the first look being 1).
    CiPending {
        /// The pause before the next look.
        seconds: u64,
        /// The number of the next look.
        look: u32,
    },
    /// CI stayed pending through the step's time limit: the attempt failed (TIMEOUT).
    CiStillPending {
        /// How long CI was waited for in the attempt.
        waited_secs: u64,
    },
    /// A signal stops the runner.
    ShuttingDown {
        /// Which signal.
        signal: Signal,
    },
    /// The merge turn is busy: waiting for it, at most `limit_ms` (said once per wait).
    WaitingForMergeTurn {
        /// How long the wait may last.
        limit_ms: u64,
    },
    /// Another runner took the issue under way over (this runner's claim ran out): this
    /// runner stops so that only one works on it.
    ClaimLost {
        /// The issue taken over.
        issue: u32,
    },
    /// The merge lost a push race: main is refreshed and the merge run again (`lost` of
    /// `max` free re-runs in this attempt).
    MergeRaceLost {
        /// Races lost in this attempt so far.
        lost: u32,
        /// Races merged again for free per attempt.
        max: u32,
    },
    /// The merge lost more races in a row than are re-run for free: the attempt failed.
    MergeRacesExhausted {
        /// Races lost in this attempt.
        lost: u32,
    },
    /// CI passed but the PR's review keeps it from merging: a person's approval is wanted
    /// (said once per cycle).
    ReviewWanted {
        /// The issue.
        issue: u32,
        /// Whether a reviewer asked for changes (else: an approval is required).
        changes_requested: bool,
        /// How long the review is waited for in this cycle.
        wait_secs: u64,
    },
    /// No review let the PR merge within `review.approvalTimeoutMinutes`: the cycle ends
    /// waiting for a person, the issue neither blamed nor quarantined; the next run looks
    /// again.
    WaitingForPerson {
        /// The issue.
        issue: u32,
    },
}
