//! The limits and switches the machine counts against, read from the config, and the
//! schedules of its waits.

use crate::step::Step;
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
    /// First rate-limit or overload wait; it doubles up to `backoff_max_secs`.
    pub backoff_initial_secs: u32,
    /// Longest wait of any backoff schedule (rate limit and network).
    pub backoff_max_secs: u32,
    /// Longest quota window the runner waits for; a longer one halts.
    pub max_quota_wait_secs: u64,
    /// Repair prompts (carrying the last classified failure) per step and cycle.
    pub max_repair_iterations: u32,
    /// Whether the simplify step runs (it is skipped otherwise).
    pub simplify_enabled: bool,
    /// Budgets, `None` = off. Money in micro-dollars so that arithmetic stays exact.
    pub per_issue_budget_micros: Option<u64>,
    /// Session budget in micro-dollars.
    pub per_session_budget_micros: Option<u64>,
    /// Time budget per issue in milliseconds (attempts and CI waits).
    pub per_issue_budget_ms: Option<u64>,
    /// The most one agent call may spend, in micro-dollars (absent in older journals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_call_budget_micros: Option<u64>,
    /// The project's ceiling over any 24 hours, in micro-dollars, across every session and
    /// worker (absent in older journals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_day_budget_micros: Option<u64>,
    /// What the project's journals recorded as spent in the 24 hours before this session
    /// began: a fact read once at the session's start and journaled with the limits, so a
    /// replay counts it the same. The session never lets it age out; the next one reads it
    /// anew.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub day_spent_before_micros: u64,
    /// Manual approval: retries-exhausted asks a person instead of escalating.
    pub manual_approval: bool,
    /// The runner commits and pushes itself (`steps.commitPush.run: builtin`): a repair of
    /// commitPush is the agent's repair, then the runner's commit and push, and the agent's
    /// failure by the code leaves the verdict to that push. Absent in older journals, whose
    /// shell decided it (answering `Repaired`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub builtin_commit_push: bool,
    /// The runner commits each agent step's work itself (issue 48: the agent's git directory
    /// is read-only in a sandbox): every successful writeSpecs, implement, simplify and verify
    /// is followed by `AutoCommit(StepWork)` naming the issue and the step. Absent in older
    /// journals, which committed implement's work alone (`AutoCommit(Implemented)`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runner_commits: bool,
    /// `budget.onExceeded: ask`: an issue's budget reached asks a person instead of
    /// escalating (absent in older journals).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ask_on_issue_budget: bool,
    /// `tests.weakening: "ask"`: a branch that weakens the tests (`TESTS_WEAKENED`) waits for
    /// a person's decision (`retry` approves it: the step runs again with the check off)
    /// instead of being handed back to the agent (absent in older journals).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ask_on_weakening: bool,
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
    /// monitorCI: the longest pause between two looks at CI.
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
    /// Issues are claimed (runners sharing a tracker, `--worker-id`): each selected issue is
    /// claimed before its cycle starts, and the claim renewed before every request that works
    /// on the issue or waits (journals of earlier versions, whose shell kept the claims, lack
    /// it).
    #[serde(default)]
    pub claims: bool,
    /// How long a claim lasts unless renewed (`claims.leaseMinutes`); a renewal before a step
    /// is written only once half of it has passed. `None` in journals of earlier versions,
    /// whose shell kept the lease: their renewals are written every time, for the shell's
    /// lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_lease_secs: Option<u64>,
    /// How long a person's decision is waited for (manual approval), after which the session
    /// halts; the claim is renewed to outlast it. 0 in journals of earlier versions (the
    /// driver then waits `decisionTimeoutMinutes`).
    #[serde(default)]
    pub decision_wait_secs: u64,
    /// The review gate (`review` in the config): between CI's pass and the merge the PR's
    /// review is looked at. `None` (no `review` block, and journals of earlier versions):
    /// CI's pass alone lets the branch merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewGate>,
    /// Waits for the tracker's own close of a merged issue before the runner closes it
    /// itself, on [`Limits::close_wait_secs`]'s schedule: GitHub and GitLab close an issue
    /// from its PR's `Closes #N` a second or two after the merge, asynchronously. 0 (a
    /// tracker that closes nothing itself, and journals of earlier versions): the runner
    /// closes a merged issue still open at once.
    /// (A byte: it fits the padding of the journal's record of the limits.)
    #[serde(default, skip_serializing_if = "is_zero_u8")]
    pub tracker_close_waits: u8,
    /// The fleet's merge train tests every PR as the tree main would hold (`run --workers N`
    /// with a train): monitorCI does not wait for CI on the branch alone, which the train
    /// makes redundant; the PR goes straight on to the merge, whose turn is its place in the
    /// train, and CI's verdict on its tree comes back from the merge (`CiFailedTogether` when
    /// it failed: monitorCI's failure, repaired and counted as any). Absent in older journals,
    /// whose monitorCI waited for CI on the branch first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub train_tests_ci: bool,
}

/// What the review gate asks of a PR before its merge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReviewGate {
    /// `review.requireApproval`: the merge waits for an approval; otherwise only for a
    /// request for changes to be lifted.
    pub require_approval: bool,
    /// `review.approvalTimeoutMinutes`: how long one cycle waits for a person's review.
    pub wait_secs: u64,
    /// `review.maxReviewRounds`: rounds of the agent addressing a request for changes per
    /// cycle; feedback still new after them escalates the issue. (Journals written before
    /// the rounds lack it: the default.)
    #[serde(default = "default_max_review_rounds")]
    pub max_rounds: u32,
    /// `review.ignoreAuthors`, and the runner's own account: authors whose comments are never
    /// handed to the agent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore_authors: Vec<String>,
}

impl ReviewGate {
    /// `review.maxReviewRounds`' default.
    pub const DEFAULT_MAX_ROUNDS: u32 = 2;

    /// A gate with the given switches, the default rounds and nobody ignored.
    pub fn new(require_approval: bool, wait_secs: u64) -> Self {
        ReviewGate {
            require_approval,
            wait_secs,
            max_rounds: Self::DEFAULT_MAX_ROUNDS,
            ignore_authors: Vec::new(),
        }
    }
}

fn default_max_review_rounds() -> u32 {
    ReviewGate::DEFAULT_MAX_ROUNDS
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u8(n: &u8) -> bool {
    *n == 0
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
            per_call_budget_micros: None,
            per_day_budget_micros: None,
            day_spent_before_micros: 0,
            manual_approval: false,
            builtin_commit_push: false,
            runner_commits: false,
            ask_on_issue_budget: false,
            ask_on_weakening: false,
            max_network_waits: 10,
            network_backoff_initial_secs: 2,
            ci_poll_initial_secs: 10,
            ci_poll_max_secs: 120,
            ci_timeout_secs: 600,
            merge_turn_wait_ms: None,
            claims: false,
            claim_lease_secs: None,
            // decisionTimeoutMinutes' default, 60 minutes.
            decision_wait_secs: 3600,
            review: None,
            tracker_close_waits: 0,
            train_tests_ci: false,
        }
    }
}

impl Limits {
    /// Whether `step` runs: every step but a disabled simplify.
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

    /// The steps that run, in order.
    pub fn enabled_steps(&self) -> impl Iterator<Item = Step> + '_ {
        Step::ALL.into_iter().filter(|s| self.enabled(*s))
    }

    /// Backoff before the `n`-th wait in a row (1-based): initial · 2^(n-1), capped.
    pub fn backoff_secs(&self, n: u32) -> u32 {
        doubling(self.backoff_initial_secs, n, self.backoff_max_secs)
    }

    /// Network wait before the `n`-th wait in a row on one call (1-based): its own schedule,
    /// seconds first, doubling to the same cap as the rate-limit backoff.
    /// The longest wait for GitHub's rate limit to lift: a primary limit resets within the
    /// hour, so a longer reset (a clock far off) is not believed; a minute more covers a
    /// reset a little past the hour.
    pub const MAX_RATE_LIMIT_WAIT_SECS: u64 = 3_660;

    /// The wait before the `n`-th call again after GitHub's rate limit asked for `wait_secs`:
    /// that, one second more (the reset is a whole second), at most
    /// [`Limits::MAX_RATE_LIMIT_WAIT_SECS`].
    pub fn rate_limit_wait_secs(wait_secs: u64) -> u64 {
        wait_secs
            .saturating_add(1)
            .min(Self::MAX_RATE_LIMIT_WAIT_SECS)
    }

    /// First network wait, doubling (see `network_backoff_initial_secs`).
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

impl Limits {
    /// The pauses between looks at a PR's review in one cycle, in order: monitorCI's schedule
    /// (doubling to `ci_poll_max_secs`), the last pause cut so that they add up to the
    /// gate's `wait_secs` exactly. Empty without a gate.
    pub fn review_polls(&self) -> Vec<u64> {
        let Some(gate) = &self.review else {
            return Vec::new();
        };
        let mut pauses = Vec::new();
        let mut waited = 0u64;
        while waited < gate.wait_secs {
            let n = u32::try_from(pauses.len() + 1).unwrap_or(u32::MAX);
            let pause = u64::from(self.ci_poll_secs(n))
                .max(1)
                .min(gate.wait_secs - waited);
            waited += pause;
            pauses.push(pause);
        }
        pauses
    }
}

impl Limits {
    /// The first wait for a tracker's own close of a merged issue; each next one doubles.
    pub const CLOSE_WAIT_INITIAL_SECS: u32 = 2;

    /// The wait before the `n`-th look again (1-based) for the tracker's own close of a
    /// merged issue: 2 s, doubling (2, 4, 8 s for GitHub's three waits, 14 s in all).
    pub fn close_wait_secs(&self, n: u32) -> u64 {
        u64::from(doubling(Self::CLOSE_WAIT_INITIAL_SECS, n, u32::MAX))
    }

    /// How long the runner waits in all for the tracker's own close of a merged issue.
    pub fn close_waited_secs(&self) -> u64 {
        (1..=u32::from(self.tracker_close_waits))
            .map(|n| self.close_wait_secs(n))
            .sum()
    }
}

/// `initial · 2^(n-1)` for the `n`-th wait (1-based), capped at `max`.
fn doubling(initial: u32, n: u32, max: u32) -> u32 {
    let factor = 1u64 << n.saturating_sub(1).min(30);
    (u64::from(initial) * factor).min(u64::from(max)) as u32
}
