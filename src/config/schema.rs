//! The config's JSON Schema, generated from annotated mirror types of the file format.

use super::*;

// ---------------------------------------------------------------------------------------------
// JSON Schema

/// Mirror types of the file's shape, used only to derive the JSON Schema (defaults, ranges and
/// documentation). Validation does not use them: see `Walker`.
mod file {
    use super::{machine, Approval, Effort, ForgeKind, TrackerKind};
    use schemars::JsonSchema;
    use serde::Serialize;
    use std::collections::BTreeMap;

    fn d_model() -> String {
        super::DEFAULT_MODEL.into()
    }
    fn d_effort() -> Effort {
        super::DEFAULT_EFFORT
    }
    fn d_500() -> f64 {
        super::DEFAULT_MAX_LOG_DISK_USAGE_MB
    }
    fn d_retries() -> u32 {
        machine().max_retries_per_step
    }
    fn d_bounces() -> u32 {
        machine().max_bounce_retries
    }
    fn d_escalations() -> u32 {
        machine().max_consecutive_escalations
    }
    fn d_same_failure() -> u32 {
        machine().max_consecutive_same_failure
    }
    fn d_rate_limit_waits() -> u32 {
        machine().max_rate_limit_waits
    }
    fn d_repairs() -> u32 {
        machine().max_repair_iterations
    }
    fn d_api_retries() -> u32 {
        super::DEFAULT_MAX_API_RETRIES
    }
    fn d_network() -> u32 {
        super::DEFAULT_MAX_NETWORK_WAITS
    }
    fn d_backoff_initial() -> u32 {
        machine().backoff_initial_secs
    }
    fn d_backoff_max() -> u32 {
        machine().backoff_max_secs
    }
    fn d_quota() -> f64 {
        super::max_quota_wait_min()
    }
    fn d_decision() -> f64 {
        super::DEFAULT_DECISION_TIMEOUT_MIN
    }
    fn d_workers() -> u32 {
        1
    }
    fn d_claim_lease() -> f64 {
        super::DEFAULT_CLAIM_LEASE_MIN
    }
    fn d_local_ci_timeout() -> f64 {
        super::DEFAULT_LOCAL_CI_TIMEOUT_MIN
    }
    fn d_idle() -> f64 {
        super::DEFAULT_IDLE_TIMEOUT_MIN
    }
    fn d_turns() -> u32 {
        super::DEFAULT_MAX_TURNS
    }
    fn d_timeout() -> f64 {
        super::DEFAULT_TIMEOUT_MIN
    }
    fn d_true() -> bool {
        true
    }
    fn d_command() -> String {
        super::DEFAULT_AGENT_COMMAND.into()
    }
    fn d_label() -> String {
        super::DEFAULT_LABEL.into()
    }
    fn d_escalated() -> String {
        super::DEFAULT_ESCALATED_LABEL.into()
    }
    fn d_min_severity() -> MinSeverity {
        match super::DEFAULT_NOTIFY_MIN_SEVERITY {
            super::Severity::Info => MinSeverity::Info,
            super::Severity::Warning => MinSeverity::Warning,
            super::Severity::Alert => MinSeverity::Alert,
        }
    }

    /// `notify.minSeverity`.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum MinSeverity {
        Info,
        Warning,
        Alert,
    }

    fn d_failures() -> MaxConsecutiveFailures {
        let limits = machine().max_consecutive_failures;
        let at = |step: crate::step::Step| Some(limits[step.index()]).filter(|n| *n > 0);
        MaxConsecutiveFailures {
            start_cycle: at(crate::step::Step::StartCycle),
            start_issue: at(crate::step::Step::StartIssue),
            write_specs: at(crate::step::Step::WriteSpecs),
            implement: at(crate::step::Step::Implement),
            simplify: at(crate::step::Step::Simplify),
            verify: at(crate::step::Step::Verify),
            commit_push: at(crate::step::Step::CommitPush),
            create_pr: at(crate::step::Step::CreatePr),
            monitor_ci: at(crate::step::Step::MonitorCi),
            merge: at(crate::step::Step::Merge),
        }
    }

    /// sdlc-runner configuration (a superset of the old runner's sdlc-config.json). Keys
    /// starting with `_` are comments and are allowed in every object. Relative paths resolve
    /// against the directory of the config file.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schemars(title = "sdlc-runner config")]
    pub struct ConfigFile {
        /// The git repository the agent works in.
        pub project_path: String,
        /// Root of the plugins checkout; skills are read from
        /// `<pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md`. Required when a step names a skill.
        pub plugins_path: Option<String>,
        /// Global model, used by steps without their own `model`.
        #[serde(default = "d_model")]
        pub model: String,
        /// Global reasoning effort (`CLAUDE_CODE_EFFORT_LEVEL`). Not allowed with a haiku model;
        /// steps on a haiku model drop an inherited effort.
        #[serde(default = "d_effort")]
        pub effort: Effort,
        /// Log directory. Default: `$XDG_STATE_HOME/sdlc-runner/<project name>-<hash of its path>`
        /// (else under `~/.local/state`). `""` means the default.
        pub log_dir: Option<String>,
        /// Step logs are pruned (oldest first) to stay under this many MB.
        #[serde(default = "d_500", rename = "maxLogDiskUsageMB")]
        /// At most 1,000,000 (a terabyte).
        #[schemars(range(min = 0, max = 1_000_000))]
        pub max_log_disk_usage_mb: f64,
        pub cleanup: Option<CleanupFile>,
        pub steps: Option<StepsFile>,
        /// Failed attempts of a step in one cycle before the cycle escalates.
        #[serde(default = "d_retries")]
        /// At most 100.
        #[schemars(range(min = 1, max = 100))]
        pub max_retries_per_step: u32,
        /// Precondition bounces per cycle; the cycle escalates when the count exceeds this.
        #[serde(default = "d_bounces")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_bounce_retries: u32,
        /// Consecutive escalations that halt the session.
        #[serde(default = "d_escalations")]
        /// At most 100.
        #[schemars(range(min = 1, max = 100))]
        pub max_consecutive_escalations: u32,
        /// Consecutive failures of a step across the session that halt it, by step key
        /// (0 disables). Entries are merged over the default `{"verify": 3}`.
        #[serde(default = "d_failures")]
        pub max_consecutive_failures: MaxConsecutiveFailures,
        /// Failures of a step in a row with the same signature that escalate early: 0 (off) or ≥ 2.
        #[serde(default = "d_same_failure")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_consecutive_same_failure: u32,
        /// Rate-limit / overload / quota waits in a row before halting.
        #[serde(default = "d_rate_limit_waits")]
        /// At most 1000.
        #[schemars(range(min = 0, max = 1000))]
        pub max_rate_limit_waits: u32,
        /// Waits in a row for a git/gh/tracker call failing for a transient network reason
        /// (connection, DNS, TLS, HTTP 5xx, time-out) before halting with
        /// `ENVIRONMENT FAILURE: NETWORK`. No attempt is spent, no issue blamed.
        #[serde(default = "d_network")]
        /// At most 1000.
        #[schemars(range(min = 0, max = 1000))]
        pub max_network_waits: u32,
        pub backoff: Option<BackoffFile>,
        /// Longest wait for a plan's usage window to reset before halting.
        #[serde(default = "d_quota")]
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub max_quota_wait_minutes: f64,
        /// Repair prompts (carrying the last classified failure) per step and cycle.
        #[serde(default = "d_repairs")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_repair_iterations: u32,
        /// `manual`: when a step runs out of retries, ask a person (`sdlc-runner decide`)
        /// instead of escalating.
        #[serde(default)]
        pub approval: Approval,
        /// How long a manual decision may take before the session halts.
        #[serde(default = "d_decision")]
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub decision_timeout_minutes: f64,
        pub budget: Option<BudgetFile>,
        /// Kill an agent that prints nothing for this long (default for every step).
        #[serde(default = "d_idle")]
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub idle_timeout_min: f64,
        /// Discord channel for notifications through `openclaw` (a string: ids exceed JSON's exact integers).
        pub discord_channel_id: Option<String>,
        pub agent: Option<AgentFile>,
        pub notify: Option<NotifyFile>,
        pub tracker: Option<TrackerFile>,
        /// Whether a repository with no CI configured must not merge.
        #[serde(default)]
        pub require_checks: bool,
        /// Where pushes, pull requests and CI live. Default: `local` when `tracker.kind` is
        /// `local`, else `github`.
        pub forge: Option<ForgeKind>,
        /// The local forge's CI: a command run in a clean worktree of the branch. Unset: the
        /// local forge has no CI.
        pub local_ci: Option<LocalCiFile>,
        pub claims: Option<ClaimsFile>,
        pub http: Option<HttpFile>,
        /// Issues worked at once, each by its own worker on its own clone under the runner's
        /// state directory (`run --workers` overrides it). 1: one issue at a time.
        #[serde(default = "d_workers")]
        #[schemars(range(min = 1, max = 32))]
        pub workers: u32,
    }

    /// Issue claims of runners started with `--worker-id` (many runners on one tracker).
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ClaimsFile {
        /// How long a claim lasts without renewal; a runner renews it at every step and before
        /// every wait. Must exceed every step's timeoutMin. An expired claim may be taken over.
        #[serde(default = "d_claim_lease")]
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub lease_minutes: f64,
    }

    /// The read-only status server of `run --http` (off unless `listen` is set).
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct HttpFile {
        /// Address to serve the status page, `/api/status`, `/api/events` and `/metrics` on,
        /// such as `127.0.0.1:8080` (`run --http` overrides it).
        pub listen: Option<String>,
        /// The environment variable holding the bearer token every request must carry
        /// (`Authorization: Bearer <token>`); required when `listen` is not a loopback address.
        pub token_env: Option<String>,
    }

    /// CI of the local forge.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct LocalCiFile {
        /// Program and arguments (no shell), run in a fresh worktree of the branch's commit;
        /// exit 0 passes.
        pub command: Vec<String>,
        /// Longest the command may run before it counts as failed.
        #[serde(default = "d_local_ci_timeout")]
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub timeout_min: f64,
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct CleanupFile {
        /// Patterns matched against full process command lines; matching processes are
        /// killed after every step, on escalation and on shutdown.
        #[serde(default)]
        pub process_patterns: Vec<String>,
    }

    /// Per-step overrides.
    #[derive(Serialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct StepsFile {
        #[serde(rename = "startCycle")]
        pub start_cycle: Option<StepFile>,
        #[serde(rename = "startIssue")]
        pub start_issue: Option<StepFile>,
        #[serde(rename = "writeSpecs")]
        pub write_specs: Option<StepFile>,
        pub implement: Option<StepFile>,
        pub simplify: Option<StepFile>,
        pub verify: Option<StepFile>,
        #[serde(rename = "commitPush")]
        pub commit_push: Option<StepFile>,
        #[serde(rename = "createPR")]
        pub create_pr: Option<StepFile>,
        #[serde(rename = "monitorCI")]
        pub monitor_ci: Option<StepFile>,
        pub merge: Option<StepFile>,
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct StepFile {
        /// Model of this step (default: the global model).
        pub model: Option<String>,
        /// Effort of this step (default: the global effort). Not allowed with a haiku model.
        pub effort: Option<Effort>,
        #[serde(default = "d_turns")]
        /// At most 10000.
        #[schemars(range(min = 1, max = 10_000))]
        pub max_turns: u32,
        /// Wall-clock limit of one attempt, in minutes (fractions allowed).
        #[serde(default = "d_timeout")]
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub timeout_min: f64,
        /// Idle limit of one attempt, in minutes (default: the global `idleTimeoutMin`).
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub idle_timeout_min: Option<f64>,
        /// Skill directory name under `<pluginsPath>/plugins/nmg-sdlc/skills/`; its SKILL.md is
        /// appended to the system prompt.
        pub skill: Option<String>,
        /// Replaces the built-in prompt of this step.
        pub prompt: Option<String>,
        /// Only `simplify` may be disabled.
        #[serde(default = "d_true")]
        pub enabled: bool,
        /// `builtin`: the runner does the step with git and the forge, without a model
        /// (startCycle, commitPush, createPR, monitorCI, merge only).
        #[serde(default)]
        pub run: super::StepRun,
        /// This step's agent, merged over the top-level `agent`: `{"kind": "codex"}` runs the
        /// step on Codex. A step that changes the kind keeps only `env` from the top level.
        pub agent: Option<StepAgentFile>,
    }

    /// `agent.kind`: which CLI runs the steps.
    #[derive(Serialize, JsonSchema, Default)]
    #[allow(dead_code)] // only described in the schema
    #[serde(rename_all = "lowercase")]
    pub enum AgentKindFile {
        /// Claude Code.
        #[default]
        Claude,
        /// OpenAI Codex CLI (`codex exec --json`).
        Codex,
        /// Gemini CLI (`gemini -p … --output-format stream-json`).
        Gemini,
    }

    /// A step's own agent settings.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct StepAgentFile {
        pub kind: Option<AgentKindFile>,
        /// Default: the top-level command for the same kind, else the kind's binary.
        pub command: Option<String>,
        pub args: Option<Vec<String>>,
        /// Merged over the top-level `env`.
        pub env: Option<BTreeMap<String, String>>,
        /// Claude only.
        #[schemars(range(min = 0, max = 100))]
        pub max_api_retries: Option<u32>,
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
    }

    #[derive(Serialize, JsonSchema, Default)]
    #[serde(deny_unknown_fields)]
    pub struct MaxConsecutiveFailures {
        #[serde(rename = "startCycle", skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub start_cycle: Option<u32>,
        #[serde(rename = "startIssue", skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub start_issue: Option<u32>,
        #[serde(rename = "writeSpecs", skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub write_specs: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub implement: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub simplify: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub verify: Option<u32>,
        #[serde(rename = "commitPush", skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub commit_push: Option<u32>,
        #[serde(rename = "createPR", skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub create_pr: Option<u32>,
        #[serde(rename = "monitorCI", skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub monitor_ci: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 100))]
        pub merge: Option<u32>,
    }

    /// Exponential backoff for rate limits and overloads: initial, doubling, capped.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct BackoffFile {
        #[serde(default = "d_backoff_initial")]
        /// At most 604800 (seven days).
        #[schemars(range(min = 1, max = 604_800))]
        pub initial_seconds: u32,
        #[serde(default = "d_backoff_max")]
        /// At most 604800 (seven days).
        #[schemars(range(min = 1, max = 604_800))]
        pub max_seconds: u32,
    }

    /// Budgets, off when unset. An issue budget escalates the issue; the session budget halts.
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct BudgetFile {
        /// Agent cost (`total_cost_usd`) per issue, in US dollars.
        /// At most 1,000,000.
        #[schemars(range(min = 0, max = 1_000_000))]
        pub per_issue_usd: Option<f64>,
        /// Agent cost per session, in US dollars.
        /// At most 1,000,000.
        #[schemars(range(min = 0, max = 1_000_000))]
        pub per_session_usd: Option<f64>,
        /// Agent wall time per issue, in minutes.
        /// At most 10080 (seven days).
        #[schemars(range(min = 0, max = 10_080))]
        pub per_issue_minutes: Option<f64>,
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct AgentFile {
        /// Which agent CLI runs the steps (docs/agents.md).
        #[serde(default)]
        pub kind: AgentKindFile,
        /// The agent CLI, looked up on PATH (default: the kind's binary, `claude`, `codex`
        /// or `gemini`).
        #[serde(default = "d_command")]
        pub command: String,
        /// Extra arguments appended to the runner's own.
        #[serde(default)]
        pub args: Vec<String>,
        /// Extra environment variables for the agent.
        #[serde(default)]
        pub env: BTreeMap<String, String>,
        /// `CLAUDE_CODE_MAX_RETRIES` for the agent: low, so the runner's backoff is in charge.
        /// Claude only.
        #[serde(default = "d_api_retries")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_api_retries: u32,
        /// Prices of models whose CLI reports tokens but no dollars, by model name; merged
        /// over the shipped table (docs/agents.md). Budgets in dollars need one for every
        /// model in use.
        #[serde(default)]
        pub pricing: BTreeMap<String, PriceFile>,
    }

    /// Extra notification channels (the log always gets every message; Discord is set with
    /// `discordChannelId`).
    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct NotifyFile {
        /// Discord/Slack-compatible webhook URL.
        pub webhook_url: Option<String>,
        /// Program and arguments; the message is passed as the last argument.
        #[schemars(length(min = 1))]
        pub command: Option<Vec<String>>,
        /// Messages below this severity reach the orchestration log only: `warning` keeps a
        /// chat channel to failures, escalations and halts; `info` sends every step's start
        /// and end too.
        #[serde(default = "d_min_severity")]
        pub min_severity: MinSeverity,
    }

    #[derive(Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct TrackerFile {
        #[serde(default)]
        pub kind: TrackerKind,
        /// Issue directory of the local tracker (required when `kind` is `local`).
        pub dir: Option<String>,
        /// Only issues with this label are worked on.
        #[serde(default = "d_label")]
        pub label: String,
        /// Label (GitHub) that durably quarantines an escalated issue.
        #[serde(default = "d_escalated")]
        pub escalated_label: String,
    }
}

/// The JSON Schema of the config file, as a `serde_json::Value`.
pub fn schema() -> Value {
    let settings = schemars::gen::SchemaSettings::draft07().with(|s| {
        s.option_add_null_type = false;
    });
    let root = settings
        .into_generator()
        .into_root_schema_for::<file::ConfigFile>();
    let mut value = serde_json::to_value(root).unwrap_or(Value::Null);
    allow_comment_keys(&mut value);
    value
}

/// `schema()` as pretty-printed JSON.
pub fn schema_json() -> String {
    serde_json::to_string_pretty(&schema()).unwrap_or_default()
}

/// Every closed object also admits `_` keys, which the runner treats as comments.
fn allow_comment_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("additionalProperties") == Some(&Value::Bool(false)) {
                map.insert(
                    "patternProperties".into(),
                    serde_json::json!({ "^_": { "description": "comment" } }),
                );
            }
            for child in map.values_mut() {
                allow_comment_keys(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(allow_comment_keys),
        _ => {}
    }
}
