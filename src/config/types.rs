//! The typed config: every value validated and every default filled in.

use super::*;

// ---------------------------------------------------------------------------------------------
// Enumerations

/// Reasoning effort passed to the agent as `CLAUDE_CODE_EFFORT_LEVEL`. `max` is deliberately
/// absent: the old runner excluded it because it overthinks on coding work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// schemars would turn variant docs into the schema (a `oneOf` instead of the `enum` list that
// docs/config.md and the walker read); the values are the config's own words.
#[allow(missing_docs)]
pub enum Effort {
    Low,
    Medium,
    High,
    Xhigh,
}

impl Effort {
    /// Every effort the config accepts, least first.
    pub const ALL: [Effort; 4] = [Effort::Low, Effort::Medium, Effort::High, Effort::Xhigh];

    /// The value written in the config and sent to the agent.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
        }
    }

    /// The effort written as `s`; `None` for any other text (including `max`).
    pub fn parse(s: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.as_str() == s)
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens when a step runs out of retries (docs/counters-and-bounds.md escalation vs. asking a person).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Escalate the cycle without asking anyone.
    #[default]
    Auto,
    /// Write a decision file and wait for `sdlc-runner decide retry|skip|halt`.
    Manual,
}

/// Where issues come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrackerKind {
    /// GitHub issues through the `gh` CLI.
    #[default]
    Github,
    /// One file per issue in `tracker.dir`, for offline use and the demo.
    Local,
}

/// Where branches, pull requests and CI live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// The schema's name for it, as published before the type was renamed.
#[schemars(rename = "Forge")]
pub enum ForgeKind {
    /// Pushes to `origin`, pull requests and checks through `gh`.
    #[default]
    Github,
    /// No remote forge: "PRs" and merges are local git operations.
    Local,
}

/// Whether a model name denotes a Haiku model, which rejects the effort parameter.
pub fn is_haiku(model: &str) -> bool {
    model.to_ascii_lowercase().contains("haiku")
}

// ---------------------------------------------------------------------------------------------
// The typed config

/// One step's settings with the global fallbacks and defaults already applied.
#[derive(Debug, Clone, PartialEq)]
pub struct StepConfig {
    /// Empty for a Codex or Gemini step without a model: the CLI runs its own default.
    pub model: String,
    /// `None` when the model is a Haiku model (the effort is dropped, not sent).
    pub effort: Option<Effort>,
    /// Turn limit of one attempt (`--max-turns`; the runner counts tool calls for CLIs without
    /// one).
    pub max_turns: u32,
    /// Wall-clock limit of one attempt.
    pub timeout: Duration,
    /// An attempt that prints nothing for this long is killed (class `IDLE`).
    pub idle_timeout: Duration,
    /// Skill name: `<pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md`.
    pub skill: Option<String>,
    /// Replaces the built-in prompt of the step.
    pub prompt: Option<String>,
    /// `false` skips the step (`steps.<key>.enabled`).
    pub enabled: bool,
    /// Who does the step: the agent, or the runner itself without a model.
    pub run: StepRun,
    /// The agent of this step: `steps.<key>.agent` merged over the top-level `agent`.
    pub agent: AgentConfig,
}

/// `steps.<key>.run`. Only the steps in [`Step::BUILTIN`] can be builtin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepRun {
    /// A model call, as the older runner did every step (the default, for drop-in configs).
    #[default]
    Agent,
    /// The runner does it with git and the forge: no tokens.
    Builtin,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
/// `cleanup`: leftover processes the runner kills after every step.
pub struct Cleanup {
    /// Patterns matched against full command lines of leftover processes after each step.
    pub process_patterns: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// `backoff`: the exponential wait after a transient failure.
pub struct Backoff {
    /// The first wait, in seconds.
    pub initial_seconds: u32,
    /// The longest wait, in seconds.
    pub max_seconds: u32,
}

/// Budgets as written in the file; `None` = off. `Config::limits` converts them to exact units.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// Agent cost per issue, in US dollars.
    pub per_issue_usd: Option<f64>,
    /// Agent cost per session, in US dollars.
    pub per_session_usd: Option<f64>,
    /// Agent wall time per issue, in minutes.
    pub per_issue_minutes: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// `agent` (top level, or a step's own merged over it): which CLI runs and how.
pub struct AgentConfig {
    /// Which CLI this is (`agent.kind`).
    pub kind: crate::agents::AgentKind,
    /// Program name or path of the agent CLI (looked up on PATH by the driver).
    pub command: String,
    /// Extra arguments appended after the runner's own.
    pub args: Vec<String>,
    /// Extra environment variables for the agent.
    pub env: BTreeMap<String, String>,
    /// `CLAUDE_CODE_MAX_RETRIES`: kept low so the runner's own backoff is in charge.
    pub max_api_retries: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// `notify`: where notifications go besides the orchestration log.
pub struct NotifyConfig {
    /// Discord/Slack-compatible webhook.
    pub webhook_url: Option<String>,
    /// Program and arguments; the message is appended as the last argument.
    pub command: Option<Vec<String>>,
    /// Below this, messages reach the orchestration log only.
    pub min_severity: Severity,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            webhook_url: None,
            command: None,
            min_severity: definition::d::min_severity(),
        }
    }
}

/// Where issues come from; the local tracker carries its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrackerConfig {
    /// GitHub issues of the project's repository, through `gh`.
    Github {
        /// Issues with this label are candidates.
        label: String,
        /// The durable quarantine label.
        escalated_label: String,
    },
    /// A directory of JSON issue files.
    Local {
        /// One `<N>.json` file per issue (absolute).
        dir: PathBuf,
        /// Issues with this label are candidates.
        label: String,
        /// The durable quarantine label.
        escalated_label: String,
    },
}

impl TrackerConfig {
    /// `github` or `local`.
    pub fn kind(&self) -> TrackerKind {
        match self {
            TrackerConfig::Github { .. } => TrackerKind::Github,
            TrackerConfig::Local { .. } => TrackerKind::Local,
        }
    }

    /// The local tracker's directory.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            TrackerConfig::Github { .. } => None,
            TrackerConfig::Local { dir, .. } => Some(dir),
        }
    }

    /// The selection label.
    pub fn label(&self) -> &str {
        match self {
            TrackerConfig::Github { label, .. } | TrackerConfig::Local { label, .. } => label,
        }
    }

    /// The durable quarantine label.
    pub fn escalated_label(&self) -> &str {
        match self {
            TrackerConfig::Github {
                escalated_label, ..
            }
            | TrackerConfig::Local {
                escalated_label, ..
            } => escalated_label,
        }
    }
}

/// A validated config with every default filled in and every path absolute.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The config file itself (absolute); relative paths inside it were resolved against its directory.
    pub file: PathBuf,
    /// The project's git clone (`projectPath`, absolute).
    pub project_path: PathBuf,
    /// Root of the plugins checkout the skills are read from (`pluginsPath`).
    pub plugins_path: Option<PathBuf>,
    /// Global model, the fallback of `steps.<key>.model`.
    pub model: String,
    /// Global effort as written (default `medium`); steps on a Haiku model drop it.
    pub effort: Effort,
    /// Resolved log directory: `logDir`, else the per-user, per-project
    /// [`crate::logs::default_dir`].
    pub log_dir: PathBuf,
    /// `maxLogDiskUsageMB` in bytes: step logs are pruned to stay under it.
    pub max_log_disk_usage_bytes: u64,
    /// Leftover processes to kill after every step.
    pub cleanup: Cleanup,
    /// Indexed by `Step::index()`.
    pub steps: [StepConfig; Step::COUNT],
    /// Failed attempts of a step in one cycle before the cycle escalates (`maxRetriesPerStep`).
    pub max_retries_per_step: u32,
    /// Precondition bounces per cycle before the cycle escalates (`maxBounceRetries`).
    pub max_bounce_retries: u32,
    /// Consecutive escalations that halt the session (`maxConsecutiveEscalations`).
    pub max_consecutive_escalations: u32,
    /// Indexed by `Step::index()`; 0 = off.
    pub max_consecutive_failures: [u32; Step::COUNT],
    /// Failures of a step in a row with the same signature that escalate early; 0 is off.
    pub max_consecutive_same_failure: u32,
    /// Rate-limit, overload and quota waits in a row before the run halts.
    pub max_rate_limit_waits: u32,
    /// Waits in a row for a git/gh/tracker call that failed for a transient network reason,
    /// before the run halts with `ENVIRONMENT FAILURE: NETWORK`.
    pub max_network_waits: u32,
    /// The wait after a transient failure.
    pub backoff: Backoff,
    /// Longest wait for a usage window to reset before halting (`maxQuotaWaitMinutes`).
    pub max_quota_wait: Duration,
    /// Repair prompts per step and cycle (`maxRepairIterations`).
    pub max_repair_iterations: u32,
    /// `manual`: a step out of retries asks a person (`decide`) instead of escalating.
    pub approval: Approval,
    /// How long a manual decision may take before the session halts.
    pub decision_timeout: Duration,
    /// Spend limits; off unless set.
    pub budget: Budget,
    /// Global idle timeout, the fallback of `steps.<key>.idleTimeoutMin`.
    pub idle_timeout: Duration,
    /// Discord channel for notifications through `openclaw`.
    pub discord_channel_id: Option<String>,
    /// The top-level agent; a step's own is [`StepConfig::agent`].
    pub agent: AgentConfig,
    /// USD per million tokens by model (`agent.pricing` over the shipped table), for CLIs
    /// that report tokens but no dollars.
    pub pricing: crate::agents::Pricing,
    /// Webhook, command and minimum severity of notifications.
    pub notify: NotifyConfig,
    /// Where issues come from.
    pub tracker: TrackerConfig,
    /// Whether a repository with no CI configured may merge only after checks exist.
    pub require_checks: bool,
    /// Where pushes, pull requests and CI live.
    pub forge: ForgeKind,
    /// The local forge's CI command, if any.
    pub local_ci: Option<LocalCi>,
    /// How long a runner's claim on an issue lasts without renewal (`--worker-id`).
    pub claim_lease: Duration,
    /// Issues worked at once (`run --workers` overrides it).
    pub workers: u32,
    /// The status server (`run --http`); off unless an address is given.
    pub http: HttpConfig,
}

/// `http`: where the read-only status server listens and which variable holds its token.
/// The address is checked when the server starts (`crate::http`), where `--http` is too.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpConfig {
    /// The address to listen on (`http.listen`); `None`: no server unless `--http` gives one.
    pub listen: Option<String>,
    /// The environment variable holding the bearer token requests must carry.
    pub token_env: Option<String>,
}

/// A CI command of the local forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCi {
    /// The CI command and its arguments (no shell).
    pub command: Vec<String>,
    /// How long one CI run may take before it counts as failed.
    pub timeout: Duration,
}
