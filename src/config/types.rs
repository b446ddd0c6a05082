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

/// What an issue's budget reached does (`budget.onExceeded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnExceeded {
    /// Escalate the issue, as any cycle that cannot go on.
    #[default]
    Escalate,
    /// Ask a person (`sdlc-runner decide retry|skip|halt`): `retry` grants the issue its budget
    /// once more.
    Ask,
}

/// What a branch that weakens the tests meets (`tests.weakening`; docs/classification.md,
/// `TESTS_WEAKENED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Weakening {
    /// Hand the facts back to the agent once; found again, escalate the issue quoting them.
    #[default]
    Refuse,
    /// Hold the push for a person (`sdlc-runner decide retry|skip|halt`; `retry` approves the
    /// weakening for the rest of the cycle).
    Ask,
    /// No check.
    Allow,
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
    /// GitLab issues of `gitlab.project`, through GitLab's REST API.
    Gitlab,
    /// Linear issues of `linear.team`, through Linear's GraphQL API.
    Linear,
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
    /// Pushes to `origin`; merge requests and pipelines of `gitlab.project` through GitLab's
    /// REST API.
    Gitlab,
}

impl TrackerKind {
    /// The service whose API the tracker calls, as an operator names it (`None` for the
    /// local tracker, which calls none).
    pub fn service(self) -> Option<&'static str> {
        match self {
            TrackerKind::Github => Some("GitHub"),
            TrackerKind::Local => None,
            TrackerKind::Gitlab => Some("GitLab"),
            TrackerKind::Linear => Some("Linear"),
        }
    }
}

impl ForgeKind {
    /// The service whose API the forge calls, as an operator names it (`None` for the local
    /// forge).
    pub fn service(self) -> Option<&'static str> {
        match self {
            ForgeKind::Github => Some("GitHub"),
            ForgeKind::Local => None,
            ForgeKind::Gitlab => Some("GitLab"),
        }
    }
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
    /// An attempt that prints nothing for this long is killed (class `IDLE`).
    pub idle_timeout: Duration,
    /// `false` skips the step (`steps.<key>.enabled`).
    pub enabled: bool,
    /// Who does the step: the agent, or the runner itself without a model.
    pub run: StepRun,
    /// The agent of this step: `steps.<key>.agent` merged over the top-level `agent`.
    pub agent: AgentConfig,
    /// Turns, time limit, skill and prompt, as written or defaulted.
    pub settings: StepSettings,
}

/// The step's keys read as written (turns, time limit, skill, prompt) are its
/// [`StepSettings`]: declared once, in the definition, with no copy here.
impl std::ops::Deref for StepConfig {
    type Target = StepSettings;
    fn deref(&self) -> &StepSettings {
        &self.settings
    }
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

#[derive(Debug, Clone, PartialEq, Eq)]
/// `agent` (top level, or a step's own merged over it): which CLI runs and how.
pub struct AgentConfig {
    /// Which CLI this is (`agent.kind`).
    pub kind: crate::config::AgentKind,
    /// Program name or path of the agent CLI (looked up on PATH by the driver).
    pub command: String,
    /// Extra arguments appended after the runner's own.
    pub args: Vec<String>,
    /// Extra environment variables for the agent.
    pub env: BTreeMap<String, String>,
    /// `CLAUDE_CODE_MAX_RETRIES`: kept low so the runner's own backoff is in charge.
    pub max_api_retries: u32,
    /// Where the agent runs (`agent.sandbox`, a step's over the top level's).
    pub sandbox: crate::config::SandboxConfig,
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
    /// GitLab issues of `gitlab.project`.
    Gitlab {
        /// Issues with this label are candidates.
        label: String,
        /// The durable quarantine label.
        escalated_label: String,
    },
    /// Linear issues of `linear.team`.
    Linear {
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
            TrackerConfig::Gitlab { .. } => TrackerKind::Gitlab,
            TrackerConfig::Linear { .. } => TrackerKind::Linear,
            TrackerConfig::Local { .. } => TrackerKind::Local,
        }
    }

    /// The local tracker's directory.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            TrackerConfig::Github { .. }
            | TrackerConfig::Gitlab { .. }
            | TrackerConfig::Linear { .. } => None,
            TrackerConfig::Local { dir, .. } => Some(dir),
        }
    }

    /// The selection label.
    pub fn label(&self) -> &str {
        match self {
            TrackerConfig::Github { label, .. }
            | TrackerConfig::Gitlab { label, .. }
            | TrackerConfig::Linear { label, .. }
            | TrackerConfig::Local { label, .. } => label,
        }
    }

    /// The durable quarantine label.
    pub fn escalated_label(&self) -> &str {
        match self {
            TrackerConfig::Github {
                escalated_label, ..
            }
            | TrackerConfig::Gitlab {
                escalated_label, ..
            }
            | TrackerConfig::Linear {
                escalated_label, ..
            }
            | TrackerConfig::Local {
                escalated_label, ..
            } => escalated_label,
        }
    }
}

/// The key of the review round's entry in `steps`: an agent step of its own in the config,
/// though no step of the machine (a round is performed in monitorCI's place, so that journals
/// keep their per-step arrays).
pub const ADDRESS_REVIEW: &str = "addressReview";

/// A validated config with every default filled in and every path absolute. The keys read
/// as written are its [`Settings`] (`cfg.workers`, `cfg.backoff`, …, through `Deref`); the
/// fields here are the ones resolved across keys.
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
    /// Indexed by `Step::index()`.
    pub steps: [StepConfig; Step::COUNT],
    /// `steps.addressReview`: the agent of a review round (docs/reviews.md).
    pub address_review: StepConfig,
    /// Indexed by `Step::index()`; 0 = off.
    pub max_consecutive_failures: [u32; Step::COUNT],
    /// Global idle timeout, the fallback of `steps.<key>.idleTimeoutMin`.
    pub idle_timeout: Duration,
    /// The top-level agent; a step's own is [`StepConfig::agent`].
    pub agent: AgentConfig,
    /// USD per million tokens by model (`agent.pricing` over the shipped table), for CLIs
    /// that report tokens but no dollars.
    pub pricing: crate::config::Pricing,
    /// Where issues come from.
    pub tracker: TrackerConfig,
    /// Where pushes, pull requests and CI live.
    pub forge: ForgeKind,
    /// The local forge's CI command, if any.
    pub local_ci: Option<LocalCi>,
    /// Every top-level key read as written, with its declared default.
    pub settings: Settings,
}

// The keys read as written are declared once, in the definition, and reached through
// `Deref`, so that adding one adds no field here.
impl std::ops::Deref for Config {
    type Target = Settings;
    fn deref(&self) -> &Settings {
        &self.settings
    }
}

impl std::ops::DerefMut for Config {
    fn deref_mut(&mut self) -> &mut Settings {
        &mut self.settings
    }
}

/// A CI command of the local forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCi {
    /// The CI command and its arguments (no shell).
    pub command: Vec<String>,
    /// How long one CI run may take before it counts as failed.
    pub timeout: Duration,
    /// The network inside the sandbox the command runs in, when set (else the agent's
    /// sandbox's).
    pub network: Option<super::SandboxNetwork>,
    /// Where CI's verdicts are kept, by commit; `None`: the runner directory's `ci`. The
    /// workers of a fleet share the project's, so that one worker's test of a tree is a
    /// verdict for another's merge of it (not a key of the file).
    pub results: Option<std::path::PathBuf>,
}

impl LocalCi {
    /// The sandbox the command runs in: the agent's (`agent.sandbox`, the top level's),
    /// with the CI's own network when it names one.
    pub fn sandbox(&self, agent: &super::SandboxConfig) -> super::SandboxConfig {
        super::SandboxConfig {
            // The proxy of `allowlist` serves the agent; the CI's command gets no network.
            network: match (self.network, agent.network) {
                (Some(n), _) => n,
                (None, super::SandboxNetwork::Allowlist) => super::SandboxNetwork::None,
                (None, n) => n,
            },
            ..agent.clone()
        }
    }
}
