//! What goes into the machine: `Event`, and the values events carry (the run's `Mode`, an
//! attempt's `Usage`, the stopping `Signal`, a person's `DecisionOption`).

use super::Commit;
use crate::failure::{FailureClass, Signature};
use crate::step::{Check, Step};
use serde::{Deserialize, Serialize};

/// How the session was asked to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Mode {
    /// Every open issue, one after another.
    Continuous,
    /// `--issue N`: one issue; its merge or escalation ends the run.
    SingleIssue(u32),
    /// `--step N`: one step on the current issue, no retries.
    SingleStep(Step),
}

/// What one attempt cost, as reported by the agent and measured by the driver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Cost in micro-dollars.
    pub cost_micros: u64,
    /// Wall-clock time in milliseconds.
    pub elapsed_ms: u64,
    /// Agent turns.
    pub turns: u32,
}

impl Usage {
    /// Nothing spent, no time, no turns: what an answer that ran no agent carries.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

/// Which signal asked the runner to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Int,
    /// SIGTERM.
    Term,
    /// The terminal went away (ssh dropped, window closed): a shutdown like SIGTERM.
    Hup,
}

impl Signal {
    /// The signal's conventional name (`SIGINT`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Hup => "SIGHUP",
        }
    }
}

/// A person's answer at a decision point (manual approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionOption {
    /// One more attempt of the step.
    Retry,
    /// Give up on this issue: escalate it.
    Skip,
    /// Stop the session.
    Halt,
}

impl DecisionOption {
    /// Every option, in the order a person is offered them.
    pub const ALL: [DecisionOption; 3] = [
        DecisionOption::Retry,
        DecisionOption::Skip,
        DecisionOption::Halt,
    ];
    /// The option as written in the decision file.
    pub const fn name(self) -> &'static str {
        match self {
            DecisionOption::Retry => "retry",
            DecisionOption::Skip => "skip",
            DecisionOption::Halt => "halt",
        }
    }
    /// The option written `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// Inputs to the machine. The driver produces exactly these and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum Event {
    /// The session started or restarted (after a crash or a signal): reissue what is pending.
    /// An attempt that was dispatched but has no recorded outcome was interrupted with the
    /// runner: it counts as a failed attempt (`KILLED`), so a crash loop is bounded like any
    /// other failure.
    Start,
    /// A restart in another mode than the session's (`run`, `run --issue N`, `run --step K`):
    /// the counters carry over, then the machine restarts as on `Start`.
    ModeChanged {
        /// The mode of this run.
        mode: Mode,
    },
    /// The tracker chose the next issue.
    IssueSelected {
        /// The issue.
        issue: u32,
    },
    /// No open automatable issue at all: nothing to do.
    NoIssues,
    /// Every open candidate is escalated (this session or durably).
    AllEscalated {
        /// Whether open issues that other runners (their claims) or this fleet's other workers
        /// hold were left out of the selection: then there is nothing for this runner to do,
        /// which is no halt. Absent in older journals.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        others_hold: bool,
    },
    /// Every open candidate waits on an unmerged dependency.
    AllBlocked {
        /// As for `AllEscalated`: issues held elsewhere were left out of the selection.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        others_hold: bool,
    },
    /// A fleet worker may take no issue now: as many workers as may be at work hold one
    /// whose PR is not yet waiting in the merge train. The worker ends; the fleet starts one
    /// again when a PR joins the train.
    StandBy,
    /// On start: observed work in progress, `next` is the first step not yet completed.
    Resume {
        /// The issue whose branch holds the work.
        issue: u32,
        /// The first step not yet done.
        next: Step,
    },
    /// On start: the current branch's PR is already merged. Before monitorCI's look at CI or
    /// the merge: a person merged the branch (the commit the runner pushed is in origin's
    /// main), so the runner records it merged and merges nothing.
    AlreadyMerged {
        /// The issue.
        issue: u32,
    },
    /// The step may start.
    PreconditionsOk {
        /// The step.
        step: Step,
    },
    /// The step's outcome already holds (idempotent side effects): record it done, do not run.
    AlreadyDone {
        /// The step.
        step: Step,
    },
    /// A precondition of the step does not hold: an earlier step must run again (a bounce).
    PreconditionFailed {
        /// The step.
        step: Step,
        /// The check that failed.
        check: Check,
    },
    /// The attempt succeeded.
    StepSucceeded {
        /// The step.
        step: Step,
        /// What the attempt cost.
        usage: Usage,
    },
    /// The attempt failed, classified by the driver.
    StepFailed {
        /// The step.
        step: Step,
        /// How it failed.
        class: FailureClass,
        /// The failure's signature (same failure or another).
        signature: Signature,
        /// What the attempt cost.
        usage: Usage,
        /// For QUOTA: seconds until the usage window resets, as the CLI reported.
        wait_hint_secs: Option<u64>,
    },
    /// A wait effect has elapsed.
    WaitOver,
    /// A person answered a decision point.
    Decided {
        /// The option chosen.
        option: DecisionOption,
    },
    /// Nobody answered the decision point in time, or its request could not be written.
    DecisionTimedOut,
    /// Nobody has answered the decision point yet (`AskDecision`, `LookForDecision`): the
    /// machine waits on its own schedule and looks again, or halts once its decision time is
    /// up.
    DecisionPending,
    /// A signal asked the runner to stop.
    ShutdownRequested {
        /// Which signal.
        signal: Signal,
        /// What the call the signal stopped had spent (or the answer it replaced carried):
        /// counted like any attempt's, so a stopped call's money stays in the journal, the
        /// session's spend and the day's sum. Zero, and absent from the record, when no call
        /// was under way (and in journals of earlier versions).
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
    },
    /// A git/gh/tracker call kept failing for a transient network reason through every
    /// allowed wait (`maxNetworkWaits`): nothing can be done until the network is back.
    /// (Journals of earlier versions, whose shell did the waiting, end with it.)
    NetworkUnavailable,
    /// The runner's call for the outstanding request (selecting, probing a step, a builtin
    /// step, a tracker write) failed for a transient network reason: the machine decides
    /// whether to wait and call again or to halt.
    NetworkFailed,
    /// The runner's call for the outstanding request was refused by GitHub's rate limit
    /// (told from the answer's status and headers by the adapter): nothing is wrong but the
    /// pace. The machine waits until the limit lifts and calls again; no attempt is spent and
    /// no issue blamed.
    RateLimited {
        /// Seconds until GitHub lets the runner in again, as the answer said.
        wait_secs: u64,
    },
    /// The tracker recorded the merge, the escalation or the release asked for.
    TrackerUpdated,
    /// A look for the tracker's own close of a merged issue (`RecordMerged { wait: true }`)
    /// found it still open; the runner left it so.
    IssueStillOpen,
    /// The tracker could not be written (read-only, permission, not found, refused): an
    /// environment failure, never a new cycle.
    TrackerWriteFailed,
    /// The tracker could not be read for the selection (`SelectIssue`), for another reason than
    /// the network or a rate limit (a refused token, an unknown project, an answer it cannot
    /// read): no issue is to blame and no wait helps, so the run stops for a person to look,
    /// leaving the session open for the next run.
    TrackerReadFailed,
    /// Read before a step: a person closed the issue, took its `automatable` label away or
    /// marked it escalated; or, before monitorCI's look at CI or the merge, closed the PR or
    /// deleted the branch. Their decision wins: the cycle is dropped, nothing is merged.
    IssueWithdrawn {
        /// The issue taken back.
        issue: u32,
    },
    /// A fact the runner owns is wrong before a step or its post-step check (a git lock file,
    /// changes in the tree that are nobody's work of this cycle): the environment's fault,
    /// never the issue's.
    WorkspaceUnfit {
        /// The step about to run or just run.
        step: Step,
    },
    /// The runner looked at CI for monitorCI (in `RunStep`, or `LookAtCi`) and the checks
    /// have not settled: the machine waits on its CI schedule and asks for another look, or
    /// fails the attempt as `TIMEOUT` once the step's time limit would pass. `usage` is what
    /// the look (and a repair attempt's agent before it) cost.
    CiPending {
        /// What the look cost.
        usage: Usage,
        /// The commit the look was for: origin's head of the branch, the one the runner
        /// pushed. The next look is for it. Absent in journals of earlier versions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<Commit>,
    },
    /// monitorCI's look found CI passed on `commit`, origin's head of the branch, and the
    /// step's post-check holds: the attempt succeeded, and `commit` is the one the merge may
    /// merge (the verified commit).
    CiPassed {
        /// The commit CI passed.
        commit: Commit,
        /// What the attempt cost.
        usage: Usage,
    },
    /// The runner looked at the PR's review (`LookAtReview`): what its reviewers decide.
    ReviewLooked {
        /// Approved, changes requested or neither.
        decision: ReviewDecision,
        /// The requests for changes and comments the look read, oldest first, their bodies
        /// redacted (approvals say nothing to address). Which of them an agent is handed is
        /// the machine's decision. Absent in older journals, whose looks carried none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        feedback: Vec<ReviewNote>,
    },
    /// Before a look at CI or the merge, or before the builtin commitPush's push, origin's
    /// head of the branch was not the commit expected (`ours`): a person moved it. `on_top`:
    /// the new head holds ours (commits pushed on top), so CI runs again on it; otherwise the
    /// branch was rewritten (or holds work the runner's branch lacks) and nothing of it is
    /// merged or pushed over.
    BranchMoved {
        /// The commit the runner pushed or CI verified.
        ours: Commit,
        /// Origin's head of the branch now.
        head: Commit,
        /// Whether `head` holds `ours`.
        on_top: bool,
    },
    /// A builtin step's repair attempt: the agent repaired what the step's last failure
    /// named (for merge: the conflict with main) and the runner's own action of the step is
    /// still to do; the machine asks for it next (merge: `UpdateBranch`; monitorCI:
    /// `LookAtCi`; commitPush: `RunStep` of the same attempt without `repair`, the commit
    /// and push). Answers a `RunStep` with `repair` of a builtin step whose action follows
    /// the agent's.
    Repaired {
        /// The step repaired.
        step: Step,
        /// What the agent's repair cost.
        usage: Usage,
    },
    /// The merge was refused because the base branch's protection requires the branch to be up
    /// to date with main, and main moved since CI passed the branch (GitHub's `BEHIND`).
    /// Nothing was merged and nothing is the issue's: the machine asks for `UpdateBranch`, and
    /// the updated head goes through CI before the merge.
    BranchBehind {
        /// What the merge's look and ask cost.
        usage: Usage,
    },
    /// `UpdateBranch` brought the branch up to date with origin's main and pushed it: `head`,
    /// a commit CI has not passed, is what a merge would now merge, so CI looks at it first.
    /// No merge of the commit verified before. (Journals written before the update became its
    /// own request call it `mergeRepaired`.)
    #[serde(alias = "mergeRepaired")]
    BranchUpdated {
        /// Origin's head of the branch after the runner's push.
        head: Commit,
        /// What the repair and the update cost.
        usage: Usage,
    },
    /// The branch does not merge cleanly with origin's main: the merge (`RunStep` of merge),
    /// the branch brought up to date before an agent's merge, or `UpdateBranch` after a
    /// repair met a conflict (or conflict markers in the branch's own commits). Nothing was
    /// merged or pushed, and the unfinished merge was aborted. The machine decides: a repair
    /// attempt for `paths` (`Runner::conflict_repair`) within the merge's bounds, or the
    /// escalation, whose diagnostic names them. (Journals written before it had an event of
    /// its own report it as merge's `StepFailed` of class MERGE_CONFLICT, handled the same.)
    MergeConflict {
        /// The files that conflict, as git named them; empty where the forge names none
        /// (GitHub's "not mergeable").
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        paths: Vec<String>,
        /// What the attempt cost (an agent's merge, the runner's calls).
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        usage: Usage,
    },
    /// The runner holds the merge turn (`TakeMergeTurn`): the merge may run.
    MergeTurnTaken,
    /// Another worker or runner holds the merge turn; the driver reports who (the last words).
    /// The machine waits on the `LeaseWait` schedule and asks again, or halts past its limit.
    MergeTurnBusy,
    /// The merge failed because origin's main moved while it ran and the branch is not in it:
    /// contention, not an attempt. The machine refreshes and merges again as
    /// `fleet::Contention` allows; past that this failure is the attempt's.
    MergeRaceLost {
        /// How the merge failed.
        class: FailureClass,
        /// The failure's signature.
        signature: Signature,
        /// What the merge run cost.
        usage: Usage,
    },
    /// The builtin merge (`RunStep` of merge) built the commit main would hold, the verified
    /// commit merged onto origin's main, which moved since CI's verdict with work the branch
    /// lacks, and CI failed on that commit: nothing was merged. The issue's change and main's
    /// newer commits break together, which is the issue's to repair: a failure of monitorCI
    /// like any failing CI (its attempt counted, its repair handed the combination's words),
    /// and the repaired branch goes through CI and the merge again. The merge turn is given
    /// back.
    CiFailedTogether {
        /// How CI failed, classified as monitorCI's failures are.
        class: FailureClass,
        /// The failure's signature.
        signature: Signature,
        /// What the merge run (the combined commit's CI included) cost.
        usage: Usage,
    },
    /// The builtin merge (`RunStep` of merge) found a merge queue on the base branch (GitHub's
    /// merge queue) and put the PR in it, carrying the verified commit, or a look at the queue
    /// (the same request issued again after a wait) found it still there: nothing is merged
    /// yet. The machine waits on monitorCI's CI schedule and looks again; the queue's answer
    /// is `StepSucceeded` (merged: the commit the queue's CI passed), `CiFailedTogether` (the
    /// queue's CI failed) or `IssueWithdrawn` (a person took it out of the queue).
    MergeQueued {
        /// What the merge run or the look cost.
        usage: Usage,
    },
    /// This runner now holds the selected issue's claim (`ClaimIssue`): taken, or taken over
    /// from a runner whose lease ran out.
    ClaimTaken {
        /// The issue claimed.
        issue: u32,
    },
    /// Another runner holds the selected issue's claim, or the fleet gave the issue to another
    /// worker: it is left out of this selection.
    ClaimHeld {
        /// The issue held elsewhere.
        issue: u32,
    },
    /// The claim on the issue under way is renewed (`RenewClaim`), or needed no renewal yet:
    /// the request held back for it is issued.
    ClaimRenewed,
    /// The fleet's coordinator pauses every worker this long (another worker hit a rate limit
    /// or quota: the provider is the same): the request was not performed and is issued again
    /// after the wait.
    FleetPaused {
        /// Seconds until the pause ends.
        seconds: u64,
    },
    /// Fed on a restart, before the restart event, when the journal holds the running cost of
    /// an agent call that has no answer (the runner died in it: `kill -9`, the OOM killer, a
    /// drained node): what the call had spent by its last journaled running cost. The
    /// `KILLED` attempt the restart makes of the call counts it, so the next call is handed
    /// only what is left. Asks for nothing; ignored unless an attempt is dispatched.
    KilledCallSpent {
        /// What the call had spent.
        usage: Usage,
    },
    /// Another runner holds the claim on the issue under way: this runner's lease ran out and
    /// the issue was taken over. Only one runner may work on it, so this one stops.
    ClaimLost {
        /// The issue taken over.
        issue: u32,
    },
}

impl Event {
    /// What the agent calls answered by this event cost, where the event carries it: the
    /// journal's record of spend, summed for the day's ceiling.
    pub const fn usage(&self) -> Option<&Usage> {
        match self {
            Event::StepSucceeded { usage, .. }
            | Event::StepFailed { usage, .. }
            | Event::CiPending { usage, .. }
            | Event::CiPassed { usage, .. }
            | Event::Repaired { usage, .. }
            | Event::BranchBehind { usage }
            | Event::BranchUpdated { usage, .. }
            | Event::MergeConflict { usage, .. }
            | Event::MergeRaceLost { usage, .. }
            | Event::CiFailedTogether { usage, .. }
            | Event::MergeQueued { usage }
            | Event::ShutdownRequested { usage, .. }
            | Event::KilledCallSpent { usage } => Some(usage),
            Event::Start
            | Event::ModeChanged { .. }
            | Event::IssueSelected { .. }
            | Event::NoIssues
            | Event::AllEscalated { .. }
            | Event::AllBlocked { .. }
            | Event::StandBy
            | Event::Resume { .. }
            | Event::AlreadyMerged { .. }
            | Event::PreconditionsOk { .. }
            | Event::AlreadyDone { .. }
            | Event::PreconditionFailed { .. }
            | Event::WaitOver
            | Event::Decided { .. }
            | Event::DecisionTimedOut
            | Event::DecisionPending
            | Event::NetworkUnavailable
            | Event::NetworkFailed
            | Event::RateLimited { .. }
            | Event::TrackerUpdated
            | Event::IssueStillOpen
            | Event::TrackerWriteFailed
            | Event::TrackerReadFailed
            | Event::IssueWithdrawn { .. }
            | Event::WorkspaceUnfit { .. }
            | Event::ReviewLooked { .. }
            | Event::BranchMoved { .. }
            | Event::MergeTurnTaken
            | Event::MergeTurnBusy
            | Event::ClaimTaken { .. }
            | Event::ClaimHeld { .. }
            | Event::ClaimRenewed
            | Event::ClaimLost { .. }
            | Event::FleetPaused { .. } => None,
        }
    }

    /// A short label for diagrams and logs.
    pub const fn label(&self) -> &'static str {
        match self {
            Event::Start => "Start",
            Event::ModeChanged { .. } => "ModeChanged",
            Event::IssueSelected { .. } => "IssueSelected",
            Event::NoIssues => "NoIssues",
            Event::AllEscalated { .. } => "AllEscalated",
            Event::AllBlocked { .. } => "AllBlocked",
            Event::StandBy => "StandBy",
            Event::Resume { .. } => "Resume",
            Event::AlreadyMerged { .. } => "AlreadyMerged",
            Event::PreconditionsOk { .. } => "PreconditionsOk",
            Event::AlreadyDone { .. } => "AlreadyDone",
            Event::PreconditionFailed { .. } => "PreconditionFailed",
            Event::StepSucceeded { .. } => "StepSucceeded",
            Event::StepFailed { .. } => "StepFailed",
            Event::WaitOver => "WaitOver",
            Event::Decided { .. } => "Decided",
            Event::DecisionTimedOut => "DecisionTimedOut",
            Event::DecisionPending => "DecisionPending",
            Event::ShutdownRequested { .. } => "ShutdownRequested",
            Event::NetworkUnavailable => "NetworkUnavailable",
            Event::NetworkFailed => "NetworkFailed",
            Event::RateLimited { .. } => "RateLimited",
            Event::TrackerUpdated => "TrackerUpdated",
            Event::IssueStillOpen => "IssueStillOpen",
            Event::TrackerWriteFailed => "TrackerWriteFailed",
            Event::TrackerReadFailed => "TrackerReadFailed",
            Event::IssueWithdrawn { .. } => "IssueWithdrawn",
            Event::WorkspaceUnfit { .. } => "WorkspaceUnfit",
            Event::CiPending { .. } => "CiPending",
            Event::CiPassed { .. } => "CiPassed",
            Event::ReviewLooked { .. } => "ReviewLooked",
            Event::BranchMoved { .. } => "BranchMoved",
            Event::Repaired { .. } => "Repaired",
            Event::BranchBehind { .. } => "BranchBehind",
            Event::BranchUpdated { .. } => "BranchUpdated",
            Event::MergeConflict { .. } => "MergeConflict",
            Event::MergeTurnTaken => "MergeTurnTaken",
            Event::MergeTurnBusy => "MergeTurnBusy",
            Event::MergeRaceLost { .. } => "MergeRaceLost",
            Event::CiFailedTogether { .. } => "CiFailedTogether",
            Event::MergeQueued { .. } => "MergeQueued",
            Event::ClaimTaken { .. } => "ClaimTaken",
            Event::ClaimHeld { .. } => "ClaimHeld",
            Event::ClaimRenewed => "ClaimRenewed",
            Event::ClaimLost { .. } => "ClaimLost",
            Event::FleetPaused { .. } => "FleetPaused",
            Event::KilledCallSpent { .. } => "KilledCallSpent",
        }
    }
}

/// One request for changes or comment on an open PR, as a look read it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct ReviewNote {
    /// The forge's id: an id handed to the agent once is never handed again.
    pub id: String,
    /// Who wrote it (a login, or the local user).
    pub author: String,
    /// When, RFC 3339 as the forge wrote it.
    #[serde(default)]
    pub time: String,
    /// What it says, secrets redacted.
    #[serde(default)]
    pub body: String,
    /// The file a line comment is on, where the forge has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The line a line comment is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// What the reviews of an open PR decide: each reviewer's latest approval or request for
/// changes counts; a request for changes stands until its reviewer approves or it is
/// dismissed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReviewDecision {
    /// Nobody approved or asked for changes.
    #[default]
    None,
    /// Approved, and nobody's latest review asks for changes.
    Approved,
    /// A reviewer's latest review asks for changes.
    ChangesRequested,
}
