//! The config file's keys, each declared once: its name (the serde name), type, default
//! (`#[serde(default = ...)]`, values in [`d`]), range (`#[schemars(range(...))]`) and
//! documentation (the doc comment). `config schema`, the key lists and ranges the validator
//! checks, the defaults it fills in and the table in docs/config.md are all derived from
//! these types; nothing else lists keys.
//!
//! A key the runner uses as written names, after `=>`, its typed form and the rule that reads
//! it (`walker/rules.rs`); `config_object!` (`declare.rs`) derives from the same entry the
//! typed struct (`Settings`, `StepSettings`, `Backoff`, …) and its reader. A key declared
//! without `=>` depends on other keys and is resolved in `validate.rs`.
//!
//! # Adding a key
//!
//! Declare it here (the field with its doc comment, `#[serde(default = "d::…")]` and a
//! function in [`d`] if it has a default, `#[schemars(range(…))]` if it is a number, and
//! `=> type = rule`), use it (`cfg.the_key`), show it in `examples/sdlc-config.json` and
//! regenerate docs/config.md with `SDLC_BLESS=1 cargo test --lib config::tests::docs`; the
//! last two are checked by `cargo test --lib config`, which names the key. docs/interfaces.md
//! ("Adding a key") walks through it.
//!
//! Validation walks the raw JSON rather than deserializing into the `…File` types, because
//! serde stops at the first error and cannot name the path; those types are never built at
//! run time, only their schema.

use super::walker::rules::*;
use super::walker::{join, Obj, Walker};
use super::{Approval, Effort, ForgeKind, OnExceeded, Severity, StepRun, TrackerKind, Weakening};
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

mod lists;
mod waits;
use lists::{agent_kind_schema, consecutive_failures_schema, severity_schema, steps_schema};
use waits::{backoff, ci_poll, BackoffFile, CiPollFile};
pub use waits::{Backoff, CiPoll};

/// The default of every key that has one (`d::…`).
pub(super) mod d;

config_object! {
/// sdlc-runner configuration (a superset of the old runner's sdlc-config.json). Keys
/// starting with `_` are comments and are allowed in every object. Relative paths resolve
/// against the directory of the config file.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "sdlc-runner config")]
pub struct ConfigFile =>
/// The keys of the top level that are read as written (the rest are resolved in
/// `validate.rs`); [`super::Config`] dereferences to them.
#[derive(Debug, Clone, PartialEq)]
// The sections' fields carry no doc comment of their own (it would become a description in
// the schema); their types are documented.
#[allow(missing_docs)]
pub struct Settings {
    /// The git repository the agent works in.
    pub project_path: String,
    /// Root of the plugins checkout; skills are read from
    /// `<pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md`. Required when a step names a skill.
    pub plugins_path: Option<String>,
    /// Global model, used by steps without their own `model`.
    #[serde(default = "d::model")]
    pub model: String,
    /// Global reasoning effort (`CLAUDE_CODE_EFFORT_LEVEL`). Not allowed with a haiku model;
    /// steps on a haiku model drop an inherited effort.
    #[serde(default = "d::effort")]
    pub effort: Effort,
    /// Log directory. Default: `$XDG_STATE_HOME/sdlc-runner/<project name>-<hash of its path>`
    /// (else under `~/.local/state`). `""` means the default.
    pub log_dir: Option<String>,
    /// Step logs are pruned (oldest first) to stay under this many MB.
    #[serde(default = "d::max_log_disk_usage_mb", rename = "maxLogDiskUsageMB")]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub max_log_disk_usage_bytes: f64 => u64 = megabytes,
    pub cleanup: Option<CleanupFile> => Cleanup = Cleanup::member,
    /// Per-step overrides, by step key; `addressReview` is the agent of a review round
    /// (docs/reviews.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "steps_schema")]
    pub steps: Option<BTreeMap<String, StepFile>>,
    /// Failed attempts of a step in one cycle before the cycle escalates.
    #[serde(default = "d::max_retries_per_step")]
    #[schemars(range(min = 1, max = 100))]
    pub max_retries_per_step: u32 => u32 = count,
    /// Precondition bounces per cycle; the cycle escalates when the count exceeds this.
    #[serde(default = "d::max_bounce_retries")]
    #[schemars(range(min = 0, max = 100))]
    pub max_bounce_retries: u32 => u32 = count,
    /// Consecutive escalations that halt the session.
    #[serde(default = "d::max_consecutive_escalations")]
    #[schemars(range(min = 1, max = 100))]
    pub max_consecutive_escalations: u32 => u32 = count,
    /// Consecutive failures of a step across the session that halt it, by step key
    /// (0 disables). Entries are merged over the default `{"verify": 3}`.
    #[serde(default = "d::max_consecutive_failures")]
    #[schemars(schema_with = "consecutive_failures_schema")]
    pub max_consecutive_failures: BTreeMap<String, u32>,
    /// Failures of a step in a row with the same signature that escalate early: 0 (off) or ≥ 2.
    #[serde(default = "d::max_consecutive_same_failure")]
    #[schemars(range(min = 0, max = 100))]
    pub max_consecutive_same_failure: u32 => u32 = same_failure_limit,
    /// Rate-limit / overload / quota waits in a row before halting.
    #[serde(default = "d::max_rate_limit_waits")]
    #[schemars(range(min = 0, max = 1000))]
    pub max_rate_limit_waits: u32 => u32 = count,
    /// Waits in a row for a git/gh/tracker call failing for a transient network reason
    /// (connection, DNS, TLS, HTTP 5xx, time-out) before halting with
    /// `ENVIRONMENT FAILURE: NETWORK`. No attempt is spent, no issue blamed.
    #[serde(default = "d::max_network_waits")]
    #[schemars(range(min = 0, max = 1000))]
    pub max_network_waits: u32 => u32 = count,
    pub backoff: Option<BackoffFile> => Backoff = backoff,
    pub ci_poll: Option<CiPollFile> => CiPoll = ci_poll,
    /// Longest wait for a plan's usage window to reset before halting.
    #[serde(default = "d::max_quota_wait_minutes", rename = "maxQuotaWaitMinutes")]
    #[schemars(range(min = 0, max = 10_080))]
    pub max_quota_wait: f64 => Duration = minutes_or_zero,
    /// Repair prompts (carrying the last classified failure) per step and cycle.
    #[serde(default = "d::max_repair_iterations")]
    #[schemars(range(min = 0, max = 100))]
    pub max_repair_iterations: u32 => u32 = count,
    /// `manual`: when a step runs out of retries, ask a person (`sdlc-runner decide`)
    /// instead of escalating.
    #[serde(default)]
    pub approval: Approval => Approval = choice,
    /// How long a manual decision may take before the session halts.
    #[serde(default = "d::decision_timeout_minutes", rename = "decisionTimeoutMinutes")]
    #[schemars(range(min = 0, max = 10_080))]
    pub decision_timeout: f64 => Duration = minutes,
    pub budget: Option<BudgetFile> => Budget = Budget::member,
    /// Kill an agent that prints nothing for this long (default for every step).
    #[serde(default = "d::idle_timeout_min")]
    #[schemars(range(min = 0, max = 10_080))]
    pub idle_timeout_min: f64,
    /// Discord channel for notifications through `openclaw` (a string: ids exceed JSON's exact integers).
    pub discord_channel_id: Option<String> => Option<String> = channel_id,
    pub agent: Option<AgentFile>,
    pub notify: Option<NotifyFile> => NotifyConfig = NotifyConfig::member,
    pub tracker: Option<TrackerFile>,
    /// Whether a repository with no CI configured must not merge.
    #[serde(default)]
    pub require_checks: bool => bool = flag,
    /// Where pushes, pull requests and CI live. Default: `local` when `tracker.kind` is
    /// `local`, else `github`.
    pub forge: Option<ForgeKind>,
    /// The branch issues are merged into, as origin names it (`main`, no `refs/heads/`).
    /// Unset: origin's default branch, asked from origin at the start of every run
    /// (`git ls-remote --symref origin HEAD`), never guessed from the clone's own branches.
    pub base_branch: Option<String> => Option<String> = branch_name,
    /// The local forge's CI: a command run in a clean worktree of the branch. Unset: the
    /// local forge has no CI.
    pub local_ci: Option<LocalCiFile>,
    pub claims: Option<ClaimsFile> => Claims = Claims::member,
    pub train: Option<TrainFile> => TrainConfig = TrainConfig::member,
    pub http: Option<HttpFile> => HttpConfig = HttpConfig::member,
    pub gitlab: Option<GitlabFile> => GitlabConfig = GitlabConfig::member,
    pub linear: Option<LinearFile> => LinearConfig = LinearConfig::member,
    pub review: Option<ReviewFile> => ReviewConfig = ReviewConfig::member,
    pub tests: Option<TestsFile> => TestsConfig = TestsConfig::member,
    /// Issues worked at once, each by its own worker on its own clone under the runner's
    /// state directory (`run --workers` overrides it). 1: one issue at a time.
    #[serde(default = "d::workers")]
    #[schemars(range(min = 1, max = 32))]
    pub workers: u32 => u32 = count,
}
}

config_object! {
/// Issue claims of runners started with `--worker-id` (many runners on one tracker).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimsFile =>
/// `claims`: issue claims of runners with a worker id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claims {
    /// How long a claim lasts without renewal; a runner renews it at every step and before
    /// every wait. Must exceed every step's timeoutMin. An expired claim may be taken over.
    #[serde(default = "d::lease_minutes", rename = "leaseMinutes")]
    #[schemars(range(min = 0, max = 10_080))]
    pub lease: f64 => Duration = minutes,
}
}

config_object! {
/// The merge train of `run --workers N` (docs/scaling.md, "The merge train"): PRs ready to
/// merge are tested together, each as main plus the PRs ahead of it plus itself.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrainFile =>
/// `train`: the merge train's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainConfig {
    /// Trees tested at once, from the front of the train: 1 tests only the head (each PR
    /// still tested with main as it will be); more test the PRs behind speculatively, with
    /// the ones ahead, while the head's CI runs.
    #[serde(default = "d::train_max_parallel")]
    #[schemars(range(min = 1, max = 32))]
    pub max_parallel: u32 => u32 = count,
    /// PRs in the train at once; one ready beyond that waits to join.
    #[serde(default = "d::train_max_length")]
    #[schemars(range(min = 1, max = 64))]
    pub max_length: u32 => u32 = count,
    /// PRs tested together as one tree (for expensive CI); a failing batch is bisected.
    #[serde(default = "d::train_batch")]
    #[schemars(range(min = 1, max = 16))]
    pub batch: u32 => u32 = count,
    /// Whether a worker whose PR waits in the train takes the next issue meanwhile: the
    /// fleet keeps a second clone per worker, `--workers N` keeps at most N issues at work
    /// (their agents' steps) and up to N more whose PRs wait in the train; a PR the train
    /// returns is repaired at once, beside them.
    #[serde(default = "d::enabled")]
    pub standby: bool => bool = flag,
}
}

config_object! {
/// What a PR's review must say before its merge (docs/reviews.md).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewFile =>
/// `review`: the review gate between CI's pass and the merge.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewConfig {
    /// Merge only a PR a reviewer approved (GitHub: an approval of the commit CI verified,
    /// or GitHub's decision `APPROVED`; GitLab: an approval while the head is that commit;
    /// local forge: `sdlc-runner review N --approve`).
    /// Either way a request for changes holds the merge until its reviewer approves.
    #[serde(default)]
    pub require_approval: bool => bool = flag,
    /// How long one cycle waits for a review that lets the PR merge; then the cycle ends
    /// waiting for a person (not blamed, not quarantined) and the next run looks again.
    #[serde(default = "d::approval_timeout_minutes", rename = "approvalTimeoutMinutes")]
    #[schemars(range(min = 0, max = 10_080))]
    pub approval_timeout: f64 => Duration = minutes_or_zero,
    /// Rounds per cycle of the agent addressing a request for changes (the `addressReview`
    /// round: the feedback handed, the branch pushed, CI and the review looked at again);
    /// feedback still new after them escalates the issue, quoting it.
    #[serde(default = "d::max_review_rounds")]
    #[schemars(range(min = 0, max = 20))]
    pub max_review_rounds: u32 => u32 = count,
    /// Authors (bots) whose reviews and comments are never handed to the agent, whose
    /// requests for changes hold no merge and whose approvals count for nothing; other bots
    /// with write access count as reviewers. The runner's own account is left out too (GitHub and GitLab: the
    /// token's user; the local forge: `sdlc-runner`).
    #[serde(default)]
    pub ignore_authors: Vec<String> => Vec<String> = review_authors,
    /// Authors (named bots, outside reviewers) whose reviews, approvals and comments count
    /// although they have no write access to the repository. Otherwise only people with write
    /// access count (GitHub: author association OWNER, MEMBER or COLLABORATOR; GitLab:
    /// Developer access or more); the others are left out, and the log says once why. A login
    /// may not be in both lists.
    #[serde(default)]
    pub trusted_authors: Vec<String> => Vec<String> = trusted_authors,
    /// The instruction of the `addressReview` round, replacing the built-in one; the
    /// feedback is appended to it. `steps.addressReview.prompt` wins over it.
    pub prompt: Option<String> => Option<String> = Walker::text,
}
}

config_object! {
/// The read-only status server of `run --http` (off unless `listen` is set).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpFile =>
/// `http`: where the read-only status server listens and which variable holds its token.
/// Whether the address can be bound is found when the server starts (`crate::http`), where
/// `--http` is read too.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpConfig {
    /// Address to serve the status page, `/api/status`, `/api/events` and `/metrics` on,
    /// such as `127.0.0.1:8080` (`run --http` overrides it).
    pub listen: Option<String> => Option<String> = listen_address,
    /// The environment variable holding the bearer token every request must carry
    /// (`Authorization: Bearer <token>`); required when `listen` is not a loopback address.
    pub token_env: Option<String> => Option<String> = Walker::text,
}
}

config_object! {
/// A GitLab instance and project: its issues (`tracker.kind` `gitlab`), merge requests and
/// pipelines (`forge` `gitlab`), through its REST API v4.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitlabFile =>
/// `gitlab`: where the GitLab project is and which variable holds the API token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitlabConfig {
    /// The instance's address; a self-hosted GitLab is any URL.
    #[serde(default = "d::gitlab_url")]
    pub url: String => String = url_or_default,
    /// The project's path with its namespace (`group/sub/project`). Required when
    /// `tracker.kind` or `forge` is `gitlab`.
    pub project: Option<String> => Option<String> = Walker::text,
    /// The environment variable holding the API token (scope `api`), read at start; the
    /// token is never logged and never given to the agent.
    #[serde(default = "d::gitlab_token_env")]
    pub token_env: String => String = text_or_default,
}
}

config_object! {
/// A Linear workspace's team: its issues (`tracker.kind` `linear`), through Linear's GraphQL
/// API. Pull requests stay on the `forge`.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinearFile =>
/// `linear`: where Linear's API is, which team's issues are worked, and the token's variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinearConfig {
    /// The GraphQL endpoint.
    #[serde(default = "d::linear_url")]
    pub url: String => String = url_or_default,
    /// The team's key (`ENG`, the prefix of its issue identifiers). Required when
    /// `tracker.kind` is `linear`.
    pub team: Option<String> => Option<String> = Walker::text,
    /// The environment variable holding the API key, read at start; the key is never logged
    /// and never given to the agent.
    #[serde(default = "d::linear_token_env")]
    pub token_env: String => String = text_or_default,
}
}

/// CI of the local forge.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalCiFile {
    /// Program and arguments (no shell), run in a fresh worktree of the branch's commit,
    /// inside the agent's sandbox (`agent.sandbox`) when it has one; exit 0 passes.
    pub command: Vec<String>,
    /// `none` cuts the network off inside the sandbox the command runs in; unset, the
    /// agent's sandbox's `network`. Means nothing without a sandbox.
    pub network: Option<super::SandboxNetwork>,
    /// Longest the command may run before it counts as failed.
    #[serde(default = "d::local_ci_timeout_min")]
    #[schemars(range(min = 0, max = 10_080))]
    pub timeout_min: f64,
}

config_object! {
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CleanupFile =>
/// `cleanup`: leftover processes the runner kills after every step.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cleanup {
    /// Patterns matched against full process command lines; matching processes are
    /// killed after every step, on escalation and on shutdown.
    #[serde(default)]
    pub process_patterns: Vec<String> => Vec<String> = process_patterns,
}
}

config_object! {
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepFile =>
/// The keys of a step that are read as written (the rest are resolved in `validate.rs`);
/// [`super::StepConfig`] dereferences to them.
#[derive(Debug, Clone, PartialEq)]
pub struct StepSettings {
    /// Model of this step (default: the global model).
    pub model: Option<String>,
    /// Effort of this step (default: the global effort). Not allowed with a haiku model.
    pub effort: Option<Effort>,
    /// Agent turns of one attempt.
    #[serde(default = "d::max_turns")]
    #[schemars(range(min = 1, max = 10_000))]
    pub max_turns: u32 => u32 = count,
    /// Wall-clock limit of one attempt, in minutes (fractions allowed).
    #[serde(default = "d::timeout_min", rename = "timeoutMin")]
    #[schemars(range(min = 0, max = 10_080))]
    pub timeout: f64 => Duration = minutes,
    /// Idle limit of one attempt, in minutes (default: the global `idleTimeoutMin`).
    #[schemars(range(min = 0, max = 10_080))]
    pub idle_timeout_min: Option<f64>,
    /// Skill directory name under `<pluginsPath>/plugins/nmg-sdlc/skills/`; its SKILL.md is
    /// appended to the system prompt.
    pub skill: Option<String> => Option<String> = skill_name,
    /// Replaces the built-in prompt of this step.
    pub prompt: Option<String> => Option<String> = Walker::text,
    /// Only `simplify` may be disabled.
    #[serde(default = "d::enabled")]
    pub enabled: bool,
    /// `builtin`: the runner does the step with git and the forge, without a model
    /// (startCycle, startIssue, commitPush, createPR, monitorCI, merge only; inside a
    /// sandbox these must be builtin: the agent's git directory is read-only there).
    #[serde(default)]
    pub run: StepRun,
    /// This step's agent, merged over the top-level `agent`: `{"kind": "codex"}` runs the
    /// step on Codex. A step that changes the kind keeps only `env` from the top level.
    pub agent: Option<StepAgentFile>,
}
}

/// A step's own agent settings.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepAgentFile {
    /// Which agent CLI runs this step (default: the top-level `agent.kind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "agent_kind_schema")]
    pub kind: Option<String>,
    /// Default: the top-level command for the same kind, else the kind's binary.
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// Merged over the top-level `env`.
    pub env: Option<BTreeMap<String, String>>,
    /// Claude only.
    #[schemars(range(min = 0, max = 100))]
    pub max_api_retries: Option<u32>,
    /// Merged over the top-level `sandbox` key by key.
    pub sandbox: Option<super::sandbox::SandboxFile>,
}

/// US dollars per million tokens of one model.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriceFile {
    #[schemars(range(min = 0, max = 1_000_000))]
    pub input: f64,
    #[schemars(range(min = 0, max = 1_000_000))]
    pub cached_input: f64,
    #[schemars(range(min = 0, max = 1_000_000))]
    pub output: f64,
    /// Input tokens written to the prompt cache (Claude); 1.25 × `input` when unset.
    #[schemars(range(min = 0, max = 1_000_000))]
    pub cache_write: Option<f64>,
}

config_object! {
/// What the runner checks of the tests an issue's branch changes, before each push
/// (docs/classification.md, `TESTS_WEAKENED`).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestsFile =>
/// `tests`: the test-weakening check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TestsConfig {
    /// A branch that removes, skips or empties a test, removes or loosens assertions, rewrites
    /// a snapshot, lets a CI job fail or lowers a coverage threshold, where the issue's spec
    /// does not list the removal (`Removes:`): `refuse` hands the facts back to the agent once, then
    /// escalates quoting them; `ask` holds the push for a person (`sdlc-runner decide`,
    /// `retry` approves it); `allow` turns the check off.
    #[serde(default)]
    pub weakening: Weakening => Weakening = choice,
}
}

config_object! {
/// Budgets, off when unset. An issue budget escalates the issue; the session and day budgets
/// halt.
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetFile =>
/// Budgets as written in the file; `None` = off. `Config::limits` converts them to exact
/// units.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// Agent cost (`total_cost_usd`) per issue, in US dollars.
    #[schemars(range(min = 0, max = 1_000_000))]
    pub per_issue_usd: Option<f64> => Option<f64> = Walker::positive,
    /// Agent cost per session, in US dollars.
    #[schemars(range(min = 0, max = 1_000_000))]
    pub per_session_usd: Option<f64> => Option<f64> = Walker::positive,
    /// Agent wall time per issue, in minutes.
    #[schemars(range(min = 0, max = 10_080))]
    pub per_issue_minutes: Option<f64> => Option<f64> = Walker::positive,
    /// The most one agent call may spend, in US dollars: the runner stops the agent when its
    /// running cost reaches it (or what the issue's or session's budget has left, if less).
    #[schemars(range(min = 0, max = 1_000_000))]
    pub per_call_usd: Option<f64> => Option<f64> = Walker::positive,
    /// The project's ceiling over any 24 hours, in US dollars: what every session and worker
    /// spent, read from the journals when a session begins. Reaching it halts, blaming no
    /// issue, and the halt says when the window frees.
    #[schemars(range(min = 0, max = 1_000_000))]
    pub per_day_usd: Option<f64> => Option<f64> = Walker::positive,
    /// What an issue's budget reached does: `escalate` the issue, or `ask` a person
    /// (`sdlc-runner decide retry|skip|halt`; `retry` grants the issue its budget once more).
    #[serde(default)]
    pub on_exceeded: OnExceeded => OnExceeded = choice,
}
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentFile {
    /// Which agent CLI runs the steps (docs/agents.md).
    #[serde(default = "d::agent_kind")]
    #[schemars(schema_with = "agent_kind_schema")]
    pub kind: String,
    /// The agent CLI, looked up on PATH (default: the kind's binary, `claude`, `codex`
    /// or `gemini`).
    #[serde(default = "d::agent_command")]
    pub command: String,
    /// Extra arguments appended to the runner's own.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables for the agent.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `CLAUDE_CODE_MAX_RETRIES` for the agent: low, so the runner's backoff is in charge.
    /// Claude only.
    #[serde(default = "d::max_api_retries")]
    #[schemars(range(min = 0, max = 100))]
    pub max_api_retries: u32,
    /// Prices of models by name, merged over the shipped table (docs/agents.md): the cost
    /// of a CLI that reports tokens but no dollars, and every CLI's running cost. Budgets in
    /// dollars need one for every model in use.
    #[serde(default)]
    pub pricing: BTreeMap<String, PriceFile>,
    /// A JSON file of prices in the shape of `pricing` (relative to this file), merged over
    /// the shipped table; `pricing` entries are merged over it. A change of price is an
    /// edit of that file, shared by every project that names it.
    pub pricing_file: Option<String>,
    /// Where the agent runs and what it can reach (default: no sandbox).
    pub sandbox: Option<super::sandbox::SandboxFile>,
}

config_object! {
/// Extra notification channels (the log always gets every message; Discord is set with
/// `discordChannelId`).
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotifyFile =>
/// `notify`: where notifications go besides the orchestration log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// Discord/Slack-compatible webhook URL.
    pub webhook_url: Option<String> => Option<String> = url,
    /// Program and arguments; the message is passed as the last argument.
    #[schemars(length(min = 1))]
    pub command: Option<Vec<String>> => Option<Vec<String>> = command,
    /// Messages below this severity reach the orchestration log only: `warning` keeps a
    /// chat channel to failures, escalations and halts; `info` sends every step's start
    /// and end too.
    #[serde(default = "d::min_severity")]
    #[schemars(schema_with = "severity_schema")]
    pub min_severity: Severity => Severity = choice,
}
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrackerFile {
    #[serde(default)]
    pub kind: TrackerKind,
    /// Issue directory of the local tracker (required when `kind` is `local`).
    pub dir: Option<String>,
    /// Only issues with this label are worked on.
    #[serde(default = "d::label")]
    pub label: String,
    /// Label (GitHub) that durably quarantines an escalated issue.
    #[serde(default = "d::escalated_label")]
    pub escalated_label: String,
}
