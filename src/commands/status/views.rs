//! What `status` shows, as serialized by `--json`: the views of the runner, its workers,
//! the running step, the counters, budgets, spend and claims.

use crate::artifacts::StateFile;
use crate::machine::Spend;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Everything `status` shows; `--json` prints exactly this.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// How the tracker names issues (`#12`, `ENG-12`): the text form names them so.
    #[serde(skip)]
    pub refs: crate::config::IssueRefs,
    pub project: PathBuf,
    pub journal: PathBuf,
    pub journal_lines: u64,
    pub torn_line: Option<String>,
    /// The last session (open or ended), `None` when the journal holds none.
    pub session: Option<String>,
    /// `open`, `exited`, `standingBy` (a fleet's worker that stood by), `halted` or
    /// `haltAcknowledged`.
    pub session_status: Option<String>,
    pub exit_code: Option<u8>,
    pub state: Option<String>,
    pub current_issue: Option<u32>,
    /// The current issue as its tracker names it (`#12`, `ENG-12`), for the status page.
    pub current_issue_ref: Option<String>,
    pub current_step: Option<String>,
    /// The attempt of the current step the agent (or the runner) is working on, if one is.
    pub current_attempt: Option<u32>,
    /// The step the runner runs now, live (only while the runner that wrote it holds the lock).
    pub running_step: Option<RunningStepView>,
    /// The wait the runner is in now (a backoff, quota, network or fleet pause), live.
    pub wait: Option<WaitView>,
    pub counters: Option<Counters>,
    /// Spend against the configured budgets (`None` before the first session).
    pub budgets: Option<Budgets>,
    pub last_failure: Option<LastFailureView>,
    /// Headline of an unacknowledged halt: `run` refuses until `--ack-halt`.
    pub sticky_halt: Option<String>,
    pub wasted_since_last_merge: Option<Wasted>,
    /// The recorded state the machine no longer reproduces (`replay` tells more).
    pub divergence: Option<String>,
    pub state_file: StateFileView,
    pub log_dir: PathBuf,
    pub orchestration_log: PathBuf,
    /// Whether a runner works on the project now: `running` (with its pid), `not running`.
    pub runner: String,
    /// Issue claims of the runners sharing the tracker (`--worker-id`), live or expired.
    pub claims: Vec<ClaimView>,
    /// The merge lease of the runners sharing the local tracker, when one is on record.
    pub merge_lease: Option<ClaimView>,
    /// The workers of `run --workers N` on this project, each with its own clone and session.
    pub workers: Vec<WorkerView>,
    /// The merge train of `run --workers N`, live (only while the fleet that wrote it holds
    /// the project's lock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train: Option<crate::live_status::TrainSnapshot>,
    /// The project's spend over the last 24 hours against `budget.perDayUsd`, when it is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub day: Option<DayView>,
    /// Every host the allowlist's proxy refused the agent in the last run (`network:
    /// "allowlist"`), of each worker's clone too, each with the attempt that first asked for
    /// it; kept after the run, until the next one starts.
    pub refused_hosts: Vec<crate::live_status::RefusedHost>,
    /// GitHub's API as the live runner used it: requests answered, the `304`s among them
    /// (free of the rate limit), the budget GitHub's last answer named (`live.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github: Option<crate::stats::GithubRequests>,
}

/// The daily ceiling: what every session and worker spent over the last 24 hours.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DayView {
    pub spent_usd: f64,
    pub per_day_usd: f64,
    /// When the window's sum falls below the ceiling again (RFC 3339), when it is reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frees_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerView {
    /// `w0`, `w1`, …
    pub name: String,
    pub clone: PathBuf,
    pub runner: String,
    pub session_status: Option<String>,
    pub state: Option<String>,
    pub current_issue: Option<u32>,
    /// The current issue as its tracker names it (`#12`, `ENG-12`).
    pub current_issue_ref: Option<String>,
    pub current_step: Option<String>,
    pub current_attempt: Option<u32>,
    pub running_step: Option<RunningStepView>,
    pub wait: Option<WaitView>,
    pub sticky_halt: Option<String>,
}

/// The running step of `live.json`, with its elapsed time at the moment of reading.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningStepView {
    #[serde(flatten)]
    pub step: crate::live_status::RunningStep,
    pub elapsed_seconds: u64,
}

/// The wait of `live.json`, with the seconds left at the moment of reading.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitView {
    #[serde(flatten)]
    pub wait: crate::live_status::Wait,
    pub remaining_seconds: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimView {
    pub issue: u32,
    pub worker: String,
    pub expires_at: String,
    /// `false` once the lease ran out: another runner may take the issue over.
    pub live: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    /// Failed attempts per step in this cycle, by step key in lifecycle order (steps with
    /// none are left out).
    pub attempts: ByStep<u32>,
    pub max_retries_per_step: u32,
    pub bounces: u32,
    pub max_bounce_retries: u32,
    pub consecutive_escalations: u32,
    pub max_consecutive_escalations: u32,
    pub escalated_issues: Vec<u32>,
    /// Consecutive failures per step across the session, with the step's limit (0 = off).
    pub phase_failures: ByStep<Limited>,
    /// Same-signature failures in a row per step in this cycle.
    pub same_signature_streak: ByStep<u32>,
    pub max_consecutive_same_failure: u32,
    pub rate_limit_wait_streak: u32,
    pub max_rate_limit_waits: u32,
    /// Network waits in a row after steps that failed as `NETWORK` (the agent could not
    /// reach its model), against `maxNetworkWaits`.
    pub step_network_wait_streak: u32,
    pub max_network_waits: u32,
    /// `addressReview` rounds in this cycle, and `review.maxReviewRounds` (`None`: the
    /// session has no review gate).
    pub review_rounds: u32,
    pub max_review_rounds: Option<u32>,
    /// Looks at the PR's review that found it held, in this cycle.
    pub review_looks: u32,
    /// Issues this session left waiting for a person's review.
    pub waiting_for_person: Vec<u32>,
}

/// What the session and the current issue spent, beside their budgets (`None`: no budget).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    pub issue_usd: f64,
    pub per_issue_usd: Option<f64>,
    pub issue_minutes: f64,
    pub per_issue_minutes: Option<f64>,
    pub session_usd: f64,
    pub per_session_usd: Option<f64>,
    /// `budget.perCallUsd`.
    pub per_call_usd: Option<f64>,
    /// What the next agent call may spend (the one under way was handed as much): the least
    /// of the issue's and the session's remainders and the per-call cap.
    pub call_left_usd: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Limited {
    pub count: u32,
    pub limit: u32,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastFailureView {
    pub step: String,
    pub class: String,
    pub signature: String,
    /// For `TESTS_WEAKENED`: each weakening the check found, file and line (what the agent
    /// was handed back and an escalation quotes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub weakened: Vec<String>,
    /// For `TESTS_WEAKENED`: what was decided (handed back, escalated, held for a person's
    /// approval, approved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendView {
    pub invocations: u64,
    pub turns: u64,
    pub cost_usd: f64,
}

impl From<&Spend> for SpendView {
    fn from(s: &Spend) -> Self {
        SpendView {
            invocations: s.invocations,
            turns: s.turns,
            cost_usd: s.cost_micros as f64 / 1_000_000.0,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Wasted {
    pub merges: u64,
    pub since_merge: SpendView,
    /// Failed attempts since the last merge, by failure class (classes with none left out).
    pub failed_by_class: BTreeMap<String, SpendView>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateFileView {
    pub path: PathBuf,
    /// `missing`, `ok` or `corrupt`.
    pub status: String,
    pub content: Option<StateFile>,
    pub error: Option<String>,
}

/// Values by step key in lifecycle order (startCycle first, merge last), so that the text and
/// `status --watch` show the steps as they run, not alphabetically. Serialized as a JSON object
/// (whose order no reader may rely on: the page orders it by the step list it is given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByStep<V>(pub Vec<(String, V)>);

impl<V> ByStep<V> {
    pub fn iter(&self) -> std::slice::Iter<'_, (String, V)> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<V> FromIterator<(String, V)> for ByStep<V> {
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        ByStep(iter.into_iter().collect())
    }
}

impl<V: Serialize> Serialize for ByStep<V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}
