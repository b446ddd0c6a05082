//! Everything that crosses the boundary of the pure core: limits in, events in, effects out.
//! Effects and events are plain `Copy` data so that a steady-state `handle` never allocates.

use crate::failure::{FailureClass, Signature};
use crate::step::{Check, Step};
use serde::{Deserialize, Serialize};

/// The counters' limits and switches of docs/counters-and-bounds.md, read from the config.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    /// Failed attempts of one step in one cycle before the cycle escalates (≥ 1).
    pub max_retries_per_step: u32,
    /// Bounces per cycle; the cycle escalates when the count exceeds it.
    pub max_bounce_retries: u32,
    /// Consecutive escalations that halt the session (≥ 1).
    pub max_consecutive_escalations: u32,
    /// Same-signature failures in a row of one step that escalate early (0 = off, else ≥ 2).
    pub max_consecutive_same_failure: u32,
    /// Consecutive failures of a step across the session that halt (0 = off), by step index.
    pub max_consecutive_failures: [u32; Step::COUNT],
    /// Rate-limit/overload/quota waits in a row before halting.
    pub max_rate_limit_waits: u32,
    pub backoff_initial_secs: u32,
    pub backoff_max_secs: u32,
    pub max_quota_wait_secs: u64,
    /// Repair prompts (carrying the last classified failure) per step and cycle.
    pub max_repair_iterations: u32,
    pub simplify_enabled: bool,
    /// Budgets, `None` = off. Money in micro-dollars so that arithmetic stays exact.
    pub per_issue_budget_micros: Option<u64>,
    pub per_session_budget_micros: Option<u64>,
    pub per_issue_budget_ms: Option<u64>,
    /// Manual approval: retries-exhausted asks a person instead of escalating.
    pub manual_approval: bool,
    /// Network waits in a row for one runner action (a git, gh or tracker call) before the
    /// session halts as `NETWORK`. (Journals of earlier versions lack it: the default.)
    #[serde(default = "default_max_network_waits")]
    pub max_network_waits: u32,
    /// First network wait; it doubles up to `backoff_max_secs`. Seconds, because a DNS or
    /// connection blip usually clears in seconds, unlike a rate limit.
    #[serde(default = "default_network_backoff_initial_secs")]
    pub network_backoff_initial_secs: u32,
    /// monitorCI: the first pause between two looks at CI; it doubles up to
    /// `ci_poll_max_secs`. (Journals of earlier versions, whose shell polled, lack these.)
    #[serde(default = "default_ci_poll_initial_secs")]
    pub ci_poll_initial_secs: u32,
    #[serde(default = "default_ci_poll_max_secs")]
    pub ci_poll_max_secs: u32,
    /// monitorCI: how long CI may stay pending within one attempt (the step's `timeoutMin`)
    /// before the attempt fails as `TIMEOUT`.
    #[serde(default = "default_ci_timeout_secs")]
    pub ci_timeout_secs: u64,
    /// The merge turn (the fleet's turn and the tracker's merge lease) is taken before every
    /// merge run, and a busy turn waited for on the `fleet::LeaseWait` schedule up to this
    /// many milliseconds; `None`: a runner alone, no turn to take (journals of earlier
    /// versions, whose shell took the turn, lack it).
    #[serde(default)]
    pub merge_turn_wait_ms: Option<u64>,
}

fn default_ci_poll_initial_secs() -> u32 {
    Limits::default().ci_poll_initial_secs
}

fn default_ci_poll_max_secs() -> u32 {
    Limits::default().ci_poll_max_secs
}

fn default_ci_timeout_secs() -> u64 {
    Limits::default().ci_timeout_secs
}

fn default_max_network_waits() -> u32 {
    Limits::default().max_network_waits
}

fn default_network_backoff_initial_secs() -> u32 {
    Limits::default().network_backoff_initial_secs
}

impl Default for Limits {
    fn default() -> Self {
        let mut max_consecutive_failures = [0; Step::COUNT];
        max_consecutive_failures[Step::Verify.index()] = 3;
        Limits {
            max_retries_per_step: 3,
            max_bounce_retries: 3,
            max_consecutive_escalations: 2,
            max_consecutive_same_failure: 2,
            max_consecutive_failures,
            max_rate_limit_waits: 5,
            backoff_initial_secs: 60,
            backoff_max_secs: 900,
            max_quota_wait_secs: 6 * 3600,
            max_repair_iterations: 2,
            simplify_enabled: true,
            per_issue_budget_micros: None,
            per_session_budget_micros: None,
            per_issue_budget_ms: None,
            manual_approval: false,
            max_network_waits: 10,
            network_backoff_initial_secs: 2,
            ci_poll_initial_secs: 10,
            ci_poll_max_secs: 120,
            ci_timeout_secs: 600,
            merge_turn_wait_ms: None,
        }
    }
}

impl Limits {
    pub fn enabled(&self, step: Step) -> bool {
        step != Step::Simplify || self.simplify_enabled
    }

    /// The next enabled step after `step`, `None` after merge.
    pub fn next_step(&self, step: Step) -> Option<Step> {
        let mut s = step.next()?;
        while !self.enabled(s) {
            s = s.next()?;
        }
        Some(s)
    }

    /// The enabled step a bounce from `step` goes back to.
    pub fn prev_step(&self, step: Step) -> Option<Step> {
        let mut s = step.prev()?;
        while !self.enabled(s) {
            s = s.prev()?;
        }
        Some(s)
    }

    pub fn enabled_steps(&self) -> impl Iterator<Item = Step> + '_ {
        Step::ALL.into_iter().filter(|s| self.enabled(*s))
    }

    /// Backoff before the `n`-th wait in a row (1-based): initial · 2^(n-1), capped.
    pub fn backoff_secs(&self, n: u32) -> u32 {
        doubling(self.backoff_initial_secs, n, self.backoff_max_secs)
    }

    /// Network wait before the `n`-th wait in a row on one call (1-based): its own schedule,
    /// seconds first, doubling to the same cap as the rate-limit backoff.
    pub fn network_backoff_secs(&self, n: u32) -> u32 {
        doubling(self.network_backoff_initial_secs, n, self.backoff_max_secs)
    }

    /// The pause before the `n`-th look at CI after the first (1-based) within one monitorCI
    /// attempt: its own schedule, doubling to `ci_poll_max_secs`.
    pub fn ci_poll_secs(&self, n: u32) -> u32 {
        doubling(self.ci_poll_initial_secs, n, self.ci_poll_max_secs)
    }

    /// The pauses between looks at CI in one monitorCI attempt, in order: every wait whose
    /// sum stays within `ci_timeout_secs`. A zero pause (a misconfiguration the loader never
    /// produces) still counts one second, so the list is finite.
    pub fn ci_polls(&self) -> Vec<u64> {
        let mut pauses = Vec::new();
        let mut waited = 0u64;
        loop {
            let n = u32::try_from(pauses.len() + 1).unwrap_or(u32::MAX);
            let pause = u64::from(self.ci_poll_secs(n)).max(1);
            if waited + pause > self.ci_timeout_secs {
                return pauses;
            }
            waited += pause;
            pauses.push(pause);
        }
    }
}

/// `initial · 2^(n-1)` for the `n`-th wait (1-based), capped at `max`.
fn doubling(initial: u32, n: u32, max: u32) -> u32 {
    let factor = 1u64 << n.saturating_sub(1).min(30);
    (u64::from(initial) * factor).min(u64::from(max)) as u32
}

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
    pub cost_micros: u64,
    pub elapsed_ms: u64,
    pub turns: u32,
}

/// Which signal asked the runner to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Signal {
    Int,
    Term,
    /// The terminal went away (ssh dropped, window closed): a shutdown like SIGTERM.
    Hup,
}

impl Signal {
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
    pub const ALL: [DecisionOption; 3] = [
        DecisionOption::Retry,
        DecisionOption::Skip,
        DecisionOption::Halt,
    ];
    pub const fn name(self) -> &'static str {
        match self {
            DecisionOption::Retry => "retry",
            DecisionOption::Skip => "skip",
            DecisionOption::Halt => "halt",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// Inputs to the machine. The driver produces exactly these and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
        mode: Mode,
    },
    /// The tracker chose the next issue.
    IssueSelected {
        issue: u32,
    },
    /// No open automatable issue at all: nothing to do.
    NoIssues,
    /// Every open candidate is escalated (this session or durably).
    AllEscalated,
    /// Every open candidate waits on an unmerged dependency.
    AllBlocked,
    /// On start: observed work in progress, `next` is the first step not yet completed.
    Resume {
        issue: u32,
        next: Step,
    },
    /// On start: the current branch's PR is already merged.
    AlreadyMerged {
        issue: u32,
    },
    /// The step may start.
    PreconditionsOk {
        step: Step,
    },
    /// The step's outcome already holds (idempotent side effects): record it done, do not run.
    AlreadyDone {
        step: Step,
    },
    PreconditionFailed {
        step: Step,
        check: Check,
    },
    StepSucceeded {
        step: Step,
        usage: Usage,
    },
    StepFailed {
        step: Step,
        class: FailureClass,
        signature: Signature,
        usage: Usage,
        /// For QUOTA: seconds until the usage window resets, as the CLI reported.
        wait_hint_secs: Option<u64>,
    },
    /// A wait effect has elapsed.
    WaitOver,
    /// A person answered a decision point.
    Decided {
        option: DecisionOption,
    },
    /// Nobody answered the decision point in time.
    DecisionTimedOut,
    ShutdownRequested {
        signal: Signal,
    },
    /// A git/gh/tracker call kept failing for a transient network reason through every
    /// allowed wait (`maxNetworkWaits`): nothing can be done until the network is back.
    /// (Journals of earlier versions, whose shell did the waiting, end with it.)
    NetworkUnavailable,
    /// The runner's call for the outstanding request (selecting, probing a step, a builtin
    /// step, a tracker write) failed for a transient network reason: the machine decides
    /// whether to wait and call again or to halt.
    NetworkFailed,
    /// The tracker recorded the merge, the escalation or the release asked for.
    TrackerUpdated,
    /// The tracker could not be written (read-only, permission, not found, refused): an
    /// environment failure, never a new cycle.
    TrackerWriteFailed,
    /// Read before a step: a person closed the issue, took its `automatable` label away or
    /// marked it escalated. Their decision wins: the cycle is dropped, nothing is merged.
    IssueWithdrawn {
        issue: u32,
    },
    /// A fact the runner owns is wrong before a step or its post-step check (a git lock file,
    /// changes in the tree that are nobody's work of this cycle): the environment's fault,
    /// never the issue's.
    WorkspaceUnfit {
        step: Step,
    },
    /// The runner looked at CI for monitorCI (in `RunStep`, or `LookAtCi`) and the checks
    /// have not settled: the machine waits on its CI schedule and asks for another look, or
    /// fails the attempt as `TIMEOUT` once the step's time limit would pass. `usage` is what
    /// the look (and a repair attempt's agent before it) cost.
    CiPending {
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
        class: FailureClass,
        signature: Signature,
        usage: Usage,
    },
}

impl Event {
    /// A short label for diagrams and logs.
    pub const fn label(&self) -> &'static str {
        match self {
            Event::Start => "Start",
            Event::ModeChanged { .. } => "ModeChanged",
            Event::IssueSelected { .. } => "IssueSelected",
            Event::NoIssues => "NoIssues",
            Event::AllEscalated => "AllEscalated",
            Event::AllBlocked => "AllBlocked",
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
            Event::ShutdownRequested { .. } => "ShutdownRequested",
            Event::NetworkUnavailable => "NetworkUnavailable",
            Event::NetworkFailed => "NetworkFailed",
            Event::TrackerUpdated => "TrackerUpdated",
            Event::TrackerWriteFailed => "TrackerWriteFailed",
            Event::IssueWithdrawn { .. } => "IssueWithdrawn",
            Event::WorkspaceUnfit { .. } => "WorkspaceUnfit",
            Event::CiPending { .. } => "CiPending",
            Event::MergeTurnTaken => "MergeTurnTaken",
            Event::MergeTurnBusy => "MergeTurnBusy",
            Event::MergeRaceLost { .. } => "MergeRaceLost",
        }
    }
}

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
