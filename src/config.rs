//! The config file of docs/interfaces.md and docs/counters-and-bounds.md: its typed form with every default filled in, the
//! validation that turns a JSON file into it (every error names the file and the key path,
//! and all of them are reported at once), and its JSON Schema.
//!
//! The format is a superset of the old Node runner's `sdlc-config.json`: every key it read is
//! accepted with the same meaning, and keys that start with `_` are comments in every object
//! whose keys the schema defines. Validation walks a `serde_json::Value` by hand rather than
//! deserializing with serde, because serde stops at the first error and cannot name the path.
//!
//! Deliberate departures from the old runner, all of which used to fail silently: values it
//! coerced (`"5"`, `0` retries, a non-numeric `maxLogDiskUsageMB`) and duplicate keys are errors;
//! `pluginsPath` is needed only when a step names a skill; a haiku step that merely inherits the
//! global effort drops it (as the old runner did at run time) instead of failing validation.

use crate::machine::Limits;
use crate::step::Step;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The old runner's default model (`config.model || 'sonnet'`); kept so that an old config
/// without `model` runs the same model.
pub const DEFAULT_MODEL: &str = "sonnet";
/// The old runner's default effort (`config.effort || 'medium'`).
pub const DEFAULT_EFFORT: Effort = Effort::Medium;
pub const DEFAULT_MAX_TURNS: u32 = 20;
pub const DEFAULT_TIMEOUT_MIN: f64 = 10.0;
pub const DEFAULT_IDLE_TIMEOUT_MIN: f64 = 10.0;
pub const DEFAULT_MAX_LOG_DISK_USAGE_MB: f64 = 500.0;
pub const DEFAULT_DECISION_TIMEOUT_MIN: f64 = 60.0;
pub const DEFAULT_MAX_QUOTA_WAIT_MIN: f64 = 360.0;
pub const DEFAULT_AGENT_COMMAND: &str = "claude";
pub const DEFAULT_MAX_API_RETRIES: u32 = 2;
pub const DEFAULT_LABEL: &str = "automatable";

// Ceilings of the numeric settings. Beyond them a value is a typo or an attempt to say
// "unlimited", and would make worst-case figures and waits meaningless (or overflow).
/// Retries, bounces, escalations, failure streaks, repair iterations, API retries.
pub const MAX_COUNT: u32 = 100;
/// Rate-limit / overload / quota waits in a row.
pub const MAX_WAITS: u32 = 1000;
/// Agent turns of one attempt.
pub const MAX_TURNS: u32 = 10_000;
/// Any duration in minutes: seven days.
pub const MAX_MINUTES: f64 = 10_080.0;
/// Any duration in seconds: seven days.
pub const MAX_SECONDS: u32 = 604_800;
/// Log disk usage, in MB (a terabyte).
pub const MAX_LOG_MB: f64 = 1_000_000.0;
/// Any budget, in US dollars.
pub const MAX_USD: f64 = 1_000_000.0;
pub const DEFAULT_ESCALATED_LABEL: &str = "sdlc-escalated";

/// The keys each object of the file may hold. The JSON Schema is derived from separate
/// mirror types; a unit test checks that both agree, so neither can drift.
/// Default of `maxNetworkWaits`: with the default backoff (60 s doubling to 900 s) about two
/// hours of outage are waited out.
pub const DEFAULT_MAX_NETWORK_WAITS: u32 = 10;

const TOP_KEYS: &[&str] = &[
    "projectPath",
    "pluginsPath",
    "model",
    "effort",
    "logDir",
    "maxLogDiskUsageMB",
    "cleanup",
    "steps",
    "maxRetriesPerStep",
    "maxBounceRetries",
    "maxConsecutiveEscalations",
    "maxConsecutiveFailures",
    "maxConsecutiveSameFailure",
    "maxRateLimitWaits",
    "maxNetworkWaits",
    "backoff",
    "maxQuotaWaitMinutes",
    "maxRepairIterations",
    "approval",
    "decisionTimeoutMinutes",
    "budget",
    "idleTimeoutMin",
    "discordChannelId",
    "agent",
    "notify",
    "tracker",
    "requireChecks",
    "forge",
];
const STEP_FIELD_KEYS: &[&str] = &[
    "model",
    "effort",
    "maxTurns",
    "timeoutMin",
    "idleTimeoutMin",
    "skill",
    "prompt",
    "enabled",
    "run",
];
const CLEANUP_KEYS: &[&str] = &["processPatterns"];
const BACKOFF_KEYS: &[&str] = &["initialSeconds", "maxSeconds"];
const BUDGET_KEYS: &[&str] = &["perIssueUsd", "perSessionUsd", "perIssueMinutes"];
const AGENT_KEYS: &[&str] = &["command", "args", "env", "maxApiRetries"];
const NOTIFY_KEYS: &[&str] = &["webhookUrl", "command"];
const TRACKER_KEYS: &[&str] = &["kind", "dir", "label", "escalatedLabel"];

// ---------------------------------------------------------------------------------------------
// Enumerations

/// Reasoning effort passed to the agent as `CLAUDE_CODE_EFFORT_LEVEL`. `max` is deliberately
/// absent: the old runner excluded it because it overthinks on coding work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Xhigh,
}

impl Effort {
    pub const ALL: [Effort; 4] = [Effort::Low, Effort::Medium, Effort::High, Effort::Xhigh];

    pub const fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
        }
    }

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
pub enum Forge {
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
    pub model: String,
    /// `None` when the model is a Haiku model (the effort is dropped, not sent).
    pub effort: Option<Effort>,
    pub max_turns: u32,
    /// Wall-clock limit of one attempt.
    pub timeout: Duration,
    /// An attempt that prints nothing for this long is killed (class `IDLE`).
    pub idle_timeout: Duration,
    /// Skill name: `<pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md`.
    pub skill: Option<String>,
    /// Replaces the built-in prompt of the step.
    pub prompt: Option<String>,
    pub enabled: bool,
    /// Who does the step: the agent, or the runner itself without a model.
    pub run: StepRun,
}

/// `steps.<key>.run`. Only the steps in [`crate::builtin::STEPS`] can be builtin.
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
pub struct Cleanup {
    /// Patterns matched against full command lines of leftover processes after each step.
    pub process_patterns: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial_seconds: u32,
    pub max_seconds: u32,
}

/// Budgets as written in the file; `None` = off. `Config::limits` converts them to exact units.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    pub per_issue_usd: Option<f64>,
    pub per_session_usd: Option<f64>,
    pub per_issue_minutes: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentConfig {
    /// Program name or path of the agent CLI (looked up on PATH by the driver).
    pub command: String,
    /// Extra arguments appended after the runner's own.
    pub args: Vec<String>,
    /// Extra environment variables for the agent.
    pub env: BTreeMap<String, String>,
    /// `CLAUDE_CODE_MAX_RETRIES`: kept low so the runner's own backoff is in charge.
    pub max_api_retries: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotifyConfig {
    /// Discord/Slack-compatible webhook.
    pub webhook_url: Option<String>,
    /// Program and arguments; the message is appended as the last argument.
    pub command: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackerConfig {
    pub kind: TrackerKind,
    /// Issue directory of the local tracker (absolute); `Some` exactly when `kind` is local.
    pub dir: Option<PathBuf>,
    pub label: String,
    pub escalated_label: String,
}

/// A validated config with every default filled in and every path absolute.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The config file itself (absolute); relative paths inside it were resolved against its directory.
    pub file: PathBuf,
    pub project_path: PathBuf,
    pub plugins_path: Option<PathBuf>,
    /// Global model, the fallback of `steps.<key>.model`.
    pub model: String,
    /// Global effort as written (default `medium`); steps on a Haiku model drop it.
    pub effort: Effort,
    /// Resolved log directory: `logDir`, else the per-user, per-project
    /// [`crate::logs::default_dir`].
    pub log_dir: PathBuf,
    pub max_log_disk_usage_bytes: u64,
    pub cleanup: Cleanup,
    /// Indexed by `Step::index()`.
    pub steps: [StepConfig; Step::COUNT],
    pub max_retries_per_step: u32,
    pub max_bounce_retries: u32,
    pub max_consecutive_escalations: u32,
    /// Indexed by `Step::index()`; 0 = off.
    pub max_consecutive_failures: [u32; Step::COUNT],
    pub max_consecutive_same_failure: u32,
    pub max_rate_limit_waits: u32,
    /// Waits in a row for a git/gh/tracker call that failed for a transient network reason,
    /// before the run halts with `ENVIRONMENT FAILURE: NETWORK`.
    pub max_network_waits: u32,
    pub backoff: Backoff,
    pub max_quota_wait: Duration,
    pub max_repair_iterations: u32,
    pub approval: Approval,
    pub decision_timeout: Duration,
    pub budget: Budget,
    /// Global idle timeout, the fallback of `steps.<key>.idleTimeoutMin`.
    pub idle_timeout: Duration,
    pub discord_channel_id: Option<String>,
    pub agent: AgentConfig,
    pub notify: NotifyConfig,
    pub tracker: TrackerConfig,
    /// Whether a repository with no CI configured may merge only after checks exist.
    pub require_checks: bool,
    pub forge: Forge,
}

// ---------------------------------------------------------------------------------------------
// Errors

/// One problem in the file, at a key path such as `steps.verify.effort` (empty = the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    pub path: String,
    pub message: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read the config file: {source} (check the path given to --config)", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: not valid UTF-8: byte 0x{byte:02x} at offset {offset} (save the file as UTF-8)")]
    Encoding {
        file: String,
        line: usize,
        column: usize,
        offset: usize,
        byte: u8,
    },
    #[error("{file}:{line}:{column}: invalid JSON: {message}")]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}", render_errors(file, errors))]
    Invalid { file: String, errors: Vec<KeyError> },
}

impl ConfigError {
    /// One line per problem, each starting with the file name.
    pub fn lines(&self) -> Vec<String> {
        match self {
            ConfigError::Invalid { file, errors } => {
                errors.iter().map(|e| render_error(file, e)).collect()
            }
            other => vec![other.to_string()],
        }
    }
}

fn render_error(file: &str, e: &KeyError) -> String {
    if e.path.is_empty() {
        format!("{file}: {}", e.message)
    } else {
        format!("{file}: {}: {}", e.path, e.message)
    }
}

fn render_errors(file: &str, errors: &[KeyError]) -> String {
    let lines: Vec<String> = errors.iter().map(|e| render_error(file, e)).collect();
    lines.join("\n")
}

// ---------------------------------------------------------------------------------------------
// Loading

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_bytes(&bytes, path)
    }

    /// Like [`Config::from_str`], for the raw bytes of a file: a UTF-8 byte order mark is
    /// skipped, and bytes that are not UTF-8 are reported by position, never echoed.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Config, ConfigError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Config::from_str(text, path),
            Err(e) => {
                let offset = e.valid_up_to();
                let valid = String::from_utf8_lossy(&bytes[..offset]);
                let line_start = valid.rfind('\n').map_or(0, |i| i + 1);
                Err(ConfigError::Encoding {
                    file: path.display().to_string(),
                    line: valid.matches('\n').count() + 1,
                    column: valid[line_start..].chars().count() + 1,
                    offset,
                    byte: bytes.get(offset).copied().unwrap_or(0),
                })
            }
        }
    }

    /// Validates `text` as if it were the file `path`: errors name `path` as given, and
    /// relative paths inside resolve against `path`'s directory.
    #[allow(clippy::should_implement_trait)] // needs the file path, so `FromStr` does not fit
    pub fn from_str(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let file_label = path.display().to_string();
        // Editors on Windows save a byte order mark; JSON parsers reject it as a character.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root: Value = serde_json::from_str(text).map_err(|e| syntax_error(&file_label, &e))?;
        let file = absolute(path);
        let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut w = Walker::default();
        for path in duplicate_keys(text) {
            w.err(
                path,
                "duplicate key: JSON keeps only the last one; merge them into one",
            );
        }
        let config = w.config(&root, &file, &base);
        match config {
            Some(c) if w.errors.is_empty() => Ok(c),
            _ => Err(ConfigError::Invalid {
                file: file_label,
                errors: w.errors,
            }),
        }
    }

    pub fn step(&self, step: Step) -> &StepConfig {
        &self.steps[step.index()]
    }
    pub fn model(&self, step: Step) -> &str {
        &self.step(step).model
    }
    /// `None` for a Haiku model.
    pub fn effort(&self, step: Step) -> Option<Effort> {
        self.step(step).effort
    }
    pub fn max_turns(&self, step: Step) -> u32 {
        self.step(step).max_turns
    }
    pub fn timeout(&self, step: Step) -> Duration {
        self.step(step).timeout
    }
    pub fn idle_timeout(&self, step: Step) -> Duration {
        self.step(step).idle_timeout
    }
    pub fn skill(&self, step: Step) -> Option<&str> {
        self.step(step).skill.as_deref()
    }
    pub fn prompt(&self, step: Step) -> Option<&str> {
        self.step(step).prompt.as_deref()
    }
    /// Whether the runner does `step` itself, without an agent.
    pub fn builtin(&self, step: Step) -> bool {
        self.step(step).run == StepRun::Builtin
    }

    pub fn enabled(&self, step: Step) -> bool {
        self.step(step).enabled
    }

    /// The SKILL.md of a step's skill, where the old runner looked for it.
    pub fn skill_file(&self, step: Step) -> Option<PathBuf> {
        let skill = self.skill(step)?;
        let plugins = self.plugins_path.as_ref()?;
        Some(
            plugins
                .join("plugins")
                .join("nmg-sdlc")
                .join("skills")
                .join(skill)
                .join("SKILL.md"),
        )
    }

    /// Problems that depend on the machine rather than on the file (missing project
    /// directory, skill files, local tracker directory). `run` treats them as errors;
    /// `config check` reports them as warnings so a config can be checked anywhere.
    pub fn environment_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.project_path.is_dir() {
            problems.push(format!(
                "projectPath: {} is not a directory",
                self.project_path.display()
            ));
        }
        for step in Step::ALL {
            if let Some(file) = self.skill_file(step) {
                if self.enabled(step) && !file.is_file() {
                    problems.push(format!(
                        "steps.{}.skill: skill file {} does not exist",
                        step.key(),
                        file.display()
                    ));
                }
            }
        }
        if which::which(&self.agent.command).is_err() {
            problems.push(format!(
                "agent.command: \"{}\" is not found on PATH (install the agent CLI or set agent.command)",
                self.agent.command
            ));
        }
        if let Some(dir) = &self.tracker.dir {
            if !dir.is_dir() {
                problems.push(format!("tracker.dir: {} is not a directory", dir.display()));
            }
        }
        problems
    }

    /// The counters' limits for the machine, in the machine's exact units.
    pub fn limits(&self) -> Limits {
        Limits {
            max_retries_per_step: self.max_retries_per_step,
            max_bounce_retries: self.max_bounce_retries,
            max_consecutive_escalations: self.max_consecutive_escalations,
            max_consecutive_same_failure: self.max_consecutive_same_failure,
            max_consecutive_failures: self.max_consecutive_failures,
            max_rate_limit_waits: self.max_rate_limit_waits,
            backoff_initial_secs: self.backoff.initial_seconds,
            backoff_max_secs: self.backoff.max_seconds,
            max_quota_wait_secs: self.max_quota_wait.as_secs(),
            max_repair_iterations: self.max_repair_iterations,
            simplify_enabled: self.enabled(Step::Simplify),
            per_issue_budget_micros: self.budget.per_issue_usd.map(usd_to_micros),
            per_session_budget_micros: self.budget.per_session_usd.map(usd_to_micros),
            per_issue_budget_ms: self.budget.per_issue_minutes.map(minutes_to_ms),
            manual_approval: self.approval == Approval::Manual,
        }
    }
}

// Float-to-int `as` casts saturate, and validation has already rejected NaN and negatives.
fn usd_to_micros(usd: f64) -> u64 {
    (usd * 1_000_000.0).round() as u64
}

fn minutes_to_ms(min: f64) -> u64 {
    (min * 60_000.0).round() as u64
}

fn minutes(min: f64) -> Duration {
    Duration::try_from_secs_f64(min * 60.0).unwrap_or(Duration::MAX)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn syntax_error(file: &str, e: &serde_json::Error) -> ConfigError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    ConfigError::Syntax {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

/// Key paths that occur twice in one object. `serde_json::Value` silently keeps the last,
/// which would drop, say, a whole first `steps` block. Comment keys may repeat.
fn duplicate_keys(text: &str) -> Vec<String> {
    use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;
    use std::collections::HashSet;

    struct Dups<'a> {
        path: String,
        found: &'a RefCell<Vec<String>>,
    }
    impl<'de> DeserializeSeed<'de> for Dups<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Dups<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0;
            while seq
                .next_element_seed(Dups {
                    path: format!("{}[{i}]", self.path),
                    found: self.found,
                })?
                .is_some()
            {
                i += 1;
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                let path = join(&self.path, &key);
                if !key.starts_with('_') && !seen.insert(key) {
                    self.found.borrow_mut().push(path.clone());
                }
                map.next_value_seed(Dups {
                    path,
                    found: self.found,
                })?;
            }
            Ok(())
        }
    }

    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_str(text);
    // The text already parsed as a Value, so this walk cannot fail on syntax.
    let _ = Dups {
        path: String::new(),
        found: &found,
    }
    .deserialize(&mut de);
    found.into_inner()
}

// ---------------------------------------------------------------------------------------------
// The walker

#[derive(Default)]
struct Walker {
    errors: Vec<KeyError>,
}

/// An object being read: its key path and, if it really was an object, its members.
struct Obj<'v> {
    path: String,
    map: Option<&'v Map<String, Value>>,
}

impl<'v> Obj<'v> {
    fn get(&self, key: &str) -> Option<&'v Value> {
        self.map?.get(key)
    }
    fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }
}

fn join(path: &str, key: &str) -> String {
    let key = printable(key);
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

/// Longest piece of the user's text quoted back in a message.
const MAX_ECHO_CHARS: usize = 60;

/// `s` made safe to print: control characters escaped, cut to a readable length.
fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_ECHO_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if s.chars().count() > MAX_ECHO_CHARS {
        out.push('…');
    }
    out
}

/// How a JSON value is described in "found ..." messages.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {}", describe_str(s)),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A close known key for a misspelt one: same letters in another case, a small edit
/// distance, or the start of a longer key.
fn suggest<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = unknown.to_ascii_lowercase();
    if let Some(k) = known.iter().find(|k| k.to_ascii_lowercase() == lower) {
        return Some(k);
    }
    let best = known
        .iter()
        .map(|k| (edit_distance(&lower, &k.to_ascii_lowercase()), *k))
        .min_by_key(|(d, _)| *d);
    if let Some((d, k)) = best {
        if d <= 2.max(unknown.chars().count() / 4) {
            return Some(k);
        }
    }
    if unknown.len() >= 4 {
        return known
            .iter()
            .copied()
            .find(|k| k.to_ascii_lowercase().starts_with(&lower));
    }
    None
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A number as a person wrote it: integers without a fraction or exponent.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e18 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn step_keys() -> Vec<&'static str> {
    Step::ALL.iter().map(|s| s.key()).collect()
}

impl Walker {
    fn err(&mut self, path: String, message: impl Into<String>) {
        self.errors.push(KeyError {
            path,
            message: message.into(),
        });
    }

    fn expected(&mut self, path: String, what: &str, found: &Value) {
        // The old runner accepted numeric strings for some keys: say how to fix such a value.
        let hint = match found {
            Value::String(s)
                if ["an integer", "a number", "0 (off)"]
                    .iter()
                    .any(|p| what.starts_with(p)) =>
            {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .map(|_| format!(" (write {} without quotes)", s.trim()))
                    .unwrap_or_default()
            }
            _ => String::new(),
        };
        self.err(
            path,
            format!("expected {what}, found {}{hint}", describe(found)),
        );
    }

    /// Reads `v` as an object whose keys must be in `known` (or start with `_`).
    fn object<'v>(&mut self, path: String, v: Option<&'v Value>, known: &[&str]) -> Obj<'v> {
        self.object_of(path, v, known, "key")
    }

    /// Like `object`; `noun` names what the keys are ("key", or "step" under `steps`).
    fn object_of<'v>(
        &mut self,
        path: String,
        v: Option<&'v Value>,
        known: &[&str],
        noun: &str,
    ) -> Obj<'v> {
        let map = match v {
            None => None,
            Some(Value::Object(map)) => {
                for key in map.keys() {
                    if !key.starts_with('_') && !known.contains(&key.as_str()) {
                        let message = unknown_message(key, known, noun);
                        self.err(join(&path, key), message);
                    }
                }
                Some(map)
            }
            Some(other) => {
                self.expected(path.clone(), "an object", other);
                None
            }
        };
        Obj { path, map }
    }

    /// An integer in `min..=max`.
    fn uint(&mut self, o: &Obj, key: &str, min: u32, max: u32) -> Option<u32> {
        let v = o.get(key)?;
        match v
            .as_f64()
            .filter(|n| n.is_finite() && n.fract() == 0.0 && *n >= f64::from(min))
        {
            Some(n) if n > f64::from(max) => {
                self.above_maximum(o.path(key), n, f64::from(max));
                None
            }
            Some(n) => Some(n as u32),
            None => {
                self.expected(o.path(key), &format!("an integer ≥ {min}"), v);
                None
            }
        }
    }

    /// A finite number > 0 and ≤ `max`.
    fn positive(&mut self, o: &Obj, key: &str, max: f64) -> Option<f64> {
        let v = o.get(key)?;
        match v.as_f64().filter(|n| n.is_finite() && *n > 0.0) {
            Some(n) if n > max => {
                self.above_maximum(o.path(key), n, max);
                None
            }
            Some(n) => Some(n),
            None => {
                self.expected(o.path(key), "a number > 0", v);
                None
            }
        }
    }

    fn above_maximum(&mut self, path: String, n: f64, max: f64) {
        self.err(
            path,
            format!("{} is above the maximum {}", number(n), number(max)),
        );
    }

    fn boolean(&mut self, o: &Obj, key: &str) -> Option<bool> {
        let v = o.get(key)?;
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.expected(o.path(key), "true or false", other);
                None
            }
        }
    }

    /// A string with something in it besides whitespace.
    fn text(&mut self, o: &Obj, key: &str) -> Option<String> {
        let v = o.get(key)?;
        self.text_value(o.path(key), v)
    }

    fn text_value(&mut self, path: String, v: &Value) -> Option<String> {
        match v {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            other => {
                self.expected(path, "a non-empty string", other);
                None
            }
        }
    }

    /// One of `allowed`, returned as its index.
    fn choice(&mut self, o: &Obj, key: &str, allowed: &[&str]) -> Option<usize> {
        let v = o.get(key)?;
        let list = allowed.join("|");
        match v {
            Value::String(s) => match allowed.iter().position(|a| a == s) {
                Some(i) => Some(i),
                None => {
                    self.err(
                        o.path(key),
                        format!("{} is not one of {list}", describe_str(s)),
                    );
                    None
                }
            },
            other => {
                self.expected(o.path(key), &format!("one of {list}"), other);
                None
            }
        }
    }

    fn effort(&mut self, o: &Obj, key: &str) -> Option<Effort> {
        let names: Vec<&str> = Effort::ALL.iter().map(|e| e.as_str()).collect();
        self.choice(o, key, &names).map(|i| Effort::ALL[i])
    }

    /// An array of strings. `blank` is the complaint about a blank item, if blanks are wrong.
    fn strings(
        &mut self,
        o: &Obj,
        key: &str,
        non_empty: bool,
        blank: Option<&str>,
    ) -> Option<Vec<String>> {
        let v = o.get(key)?;
        let path = o.path(key);
        let Value::Array(items) = v else {
            self.expected(path, "an array of strings", v);
            return None;
        };
        if non_empty && items.is_empty() {
            self.err(
                path,
                "expected a non-empty array of strings, found an empty array",
            );
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => match blank.filter(|_| s.trim().is_empty()) {
                    Some(complaint) => {
                        self.err(format!("{path}[{i}]"), complaint);
                        ok = false;
                    }
                    None => out.push(s.clone()),
                },
                other => {
                    self.expected(format!("{path}[{i}]"), "a string", other);
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    /// A path; relative paths resolve against the config file's directory. `""` = unset,
    /// as in the old runner's `logDir`.
    fn path(&mut self, o: &Obj, key: &str, base: &Path) -> Option<PathBuf> {
        let v = o.get(key)?;
        match v {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(absolute(&base.join(s))),
            other => {
                self.expected(o.path(key), "a path (string)", other);
                None
            }
        }
    }

    fn config(&mut self, root: &Value, file: &Path, base: &Path) -> Option<Config> {
        if !root.is_object() {
            self.err(
                String::new(),
                format!(
                    "expected a JSON object at the top level, found {}",
                    describe(root)
                ),
            );
            return None;
        }
        let top = self.object(String::new(), Some(root), TOP_KEYS);

        let project_path = match top.get("projectPath") {
            None => {
                self.err(
                    "projectPath".into(),
                    "required: the path of the git repository to work on",
                );
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.err(
                    "projectPath".into(),
                    "expected a non-empty path, found string \"\"",
                );
                None
            }
            Some(_) => self.path(&top, "projectPath", base),
        };
        let plugins_path = self.path(&top, "pluginsPath", base);
        let model = self.text(&top, "model");
        let effort_raw = self.effort(&top, "effort");
        if let (Some(m), Some(_)) = (&model, effort_raw) {
            if is_haiku(m) {
                self.err(
                    "effort".into(),
                    format!("model \"{m}\" does not support effort: remove effort, or set it per step on non-haiku steps"),
                );
            }
        }
        let global_model = model.clone().unwrap_or_else(|| DEFAULT_MODEL.to_string());
        let log_dir = self.path(&top, "logDir", base);
        let max_log_mb = self
            .positive(&top, "maxLogDiskUsageMB", MAX_LOG_MB)
            .unwrap_or(DEFAULT_MAX_LOG_DISK_USAGE_MB);

        let cleanup_obj = self.object(top.path("cleanup"), top.get("cleanup"), CLEANUP_KEYS);
        let process_patterns = self
            .strings(
                &cleanup_obj,
                "processPatterns",
                false,
                Some("an empty pattern would match every process; remove it"),
            )
            .unwrap_or_default();

        let idle_timeout_min = self
            .positive(&top, "idleTimeoutMin", MAX_MINUTES)
            .unwrap_or(DEFAULT_IDLE_TIMEOUT_MIN);
        let steps = self.steps(
            &top,
            &global_model,
            model.is_some(),
            effort_raw,
            idle_timeout_min,
        );
        let any_skill = steps.iter().any(|s| s.skill.is_some());
        if any_skill && plugins_path.is_none() && top.get("pluginsPath").is_none() {
            let with_skill: Vec<&str> = Step::ALL
                .iter()
                .filter(|s| steps[s.index()].skill.is_some())
                .map(|s| s.key())
                .collect();
            self.err(
                "pluginsPath".into(),
                format!(
                    "required because steps {} name a skill (skills are read from <pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md)",
                    with_skill.join(", ")
                ),
            );
        }

        let max_retries_per_step = self
            .uint(&top, "maxRetriesPerStep", 1, MAX_COUNT)
            .unwrap_or(3);
        let max_bounce_retries = self
            .uint(&top, "maxBounceRetries", 0, MAX_COUNT)
            .unwrap_or(3);
        let max_consecutive_escalations = self
            .uint(&top, "maxConsecutiveEscalations", 1, MAX_COUNT)
            .unwrap_or(2);
        let max_consecutive_failures = self.consecutive_failures(&top);
        let max_consecutive_same_failure = match top.get("maxConsecutiveSameFailure") {
            None => 2,
            Some(v) => match v.as_f64() {
                Some(n) if n.fract() == 0.0 && n > f64::from(MAX_COUNT) => {
                    self.above_maximum("maxConsecutiveSameFailure".into(), n, f64::from(MAX_COUNT));
                    2
                }
                Some(n) if n == 0.0 || (n >= 2.0 && n.fract() == 0.0) => n as u32,
                _ => {
                    self.expected(
                        "maxConsecutiveSameFailure".into(),
                        "0 (off) or an integer ≥ 2",
                        v,
                    );
                    2
                }
            },
        };
        let max_rate_limit_waits = self
            .uint(&top, "maxRateLimitWaits", 0, MAX_WAITS)
            .unwrap_or(5);
        let max_network_waits = self
            .uint(&top, "maxNetworkWaits", 0, MAX_WAITS)
            .unwrap_or(DEFAULT_MAX_NETWORK_WAITS);

        let backoff_obj = self.object(top.path("backoff"), top.get("backoff"), BACKOFF_KEYS);
        let initial_seconds = self
            .uint(&backoff_obj, "initialSeconds", 1, MAX_SECONDS)
            .unwrap_or(60);
        let max_seconds = self
            .uint(&backoff_obj, "maxSeconds", 1, MAX_SECONDS)
            .unwrap_or(900);
        if max_seconds < initial_seconds {
            self.err(
                "backoff.maxSeconds".into(),
                format!("{max_seconds} is less than backoff.initialSeconds ({initial_seconds})"),
            );
        }

        let max_quota_wait_min = match top.get("maxQuotaWaitMinutes") {
            None => DEFAULT_MAX_QUOTA_WAIT_MIN,
            Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 0.0) {
                Some(n) if n > MAX_MINUTES => {
                    self.above_maximum("maxQuotaWaitMinutes".into(), n, MAX_MINUTES);
                    DEFAULT_MAX_QUOTA_WAIT_MIN
                }
                Some(n) => n,
                None => {
                    self.expected("maxQuotaWaitMinutes".into(), "a number ≥ 0", v);
                    DEFAULT_MAX_QUOTA_WAIT_MIN
                }
            },
        };
        let max_repair_iterations = self
            .uint(&top, "maxRepairIterations", 0, MAX_COUNT)
            .unwrap_or(2);
        let approval = match self.choice(&top, "approval", &["auto", "manual"]) {
            Some(1) => Approval::Manual,
            _ => Approval::Auto,
        };
        let decision_timeout_min = self
            .positive(&top, "decisionTimeoutMinutes", MAX_MINUTES)
            .unwrap_or(DEFAULT_DECISION_TIMEOUT_MIN);

        let budget_obj = self.object(top.path("budget"), top.get("budget"), BUDGET_KEYS);
        let budget = Budget {
            per_issue_usd: self.positive(&budget_obj, "perIssueUsd", MAX_USD),
            per_session_usd: self.positive(&budget_obj, "perSessionUsd", MAX_USD),
            per_issue_minutes: self.positive(&budget_obj, "perIssueMinutes", MAX_MINUTES),
        };

        let discord_channel_id = match top.get("discordChannelId") {
            None => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(v @ Value::Number(_)) => {
                // Discord ids exceed 2^53, so a JSON number has already lost digits.
                self.expected(
                    "discordChannelId".into(),
                    "a string (write the id in quotes: large numbers lose digits in JSON)",
                    v,
                );
                None
            }
            Some(v) => {
                self.expected("discordChannelId".into(), "a non-empty string", v);
                None
            }
        };

        let agent = self.agent(&top);
        let notify = self.notify(&top);
        let tracker = self.tracker(&top, base);
        let require_checks = self.boolean(&top, "requireChecks").unwrap_or(false);
        let forge = match self.choice(&top, "forge", &["github", "local"]) {
            Some(0) => Forge::Github,
            Some(_) => Forge::Local,
            None if tracker.kind == TrackerKind::Local => Forge::Local,
            None => Forge::Github,
        };

        let project_path = project_path?;
        let log_dir = log_dir.unwrap_or_else(|| default_log_dir(&project_path));
        Some(Config {
            file: file.to_path_buf(),
            project_path,
            plugins_path,
            model: global_model,
            effort: effort_raw.unwrap_or(DEFAULT_EFFORT),
            log_dir,
            max_log_disk_usage_bytes: (max_log_mb * 1024.0 * 1024.0).round() as u64,
            cleanup: Cleanup { process_patterns },
            steps,
            max_retries_per_step,
            max_bounce_retries,
            max_consecutive_escalations,
            max_consecutive_failures,
            max_consecutive_same_failure,
            max_rate_limit_waits,
            max_network_waits,
            backoff: Backoff {
                initial_seconds,
                max_seconds,
            },
            max_quota_wait: minutes(max_quota_wait_min),
            max_repair_iterations,
            approval,
            decision_timeout: minutes(decision_timeout_min),
            budget,
            idle_timeout: minutes(idle_timeout_min),
            discord_channel_id,
            agent,
            notify,
            tracker,
            require_checks,
            forge,
        })
    }

    fn steps(
        &mut self,
        top: &Obj,
        global_model: &str,
        global_model_set: bool,
        global_effort: Option<Effort>,
        idle_timeout_min: f64,
    ) -> [StepConfig; Step::COUNT] {
        let keys = step_keys();
        let steps_obj = self.object_of(top.path("steps"), top.get("steps"), &keys, "step");
        Step::ALL.map(|step| {
            let o = self.object(
                steps_obj.path(step.key()),
                steps_obj.get(step.key()),
                STEP_FIELD_KEYS,
            );
            let model = self.text(&o, "model");
            let effort = self.effort(&o, "effort");
            if effort.is_some() {
                match &model {
                    Some(m) if is_haiku(m) => self.err(
                        o.path("effort"),
                        format!("model \"{m}\" does not support effort: remove effort from this step"),
                    ),
                    None if global_model_set && is_haiku(global_model) => self.err(
                        o.path("effort"),
                        format!(
                            "model \"{global_model}\" (the global model) does not support effort: remove effort from this step or set {}",
                            o.path("model")
                        ),
                    ),
                    _ => {}
                }
            }
            let max_turns = self.uint(&o, "maxTurns", 1, MAX_TURNS).unwrap_or(DEFAULT_MAX_TURNS);
            let timeout_min = self.positive(&o, "timeoutMin", MAX_MINUTES).unwrap_or(DEFAULT_TIMEOUT_MIN);
            let idle_min = self.positive(&o, "idleTimeoutMin", MAX_MINUTES).unwrap_or(idle_timeout_min);
            let skill = self.text(&o, "skill");
            if let Some(s) = &skill {
                if s.contains('/') || s.contains('\\') || s == ".." {
                    self.err(
                        o.path("skill"),
                        format!("\"{s}\" is not a skill name: give the directory name under <pluginsPath>/plugins/nmg-sdlc/skills/"),
                    );
                }
            }
            let prompt = self.text(&o, "prompt");
            let run = match self.text(&o, "run").as_deref() {
                None | Some("agent") => StepRun::Agent,
                Some("builtin") if crate::builtin::supports(step) => StepRun::Builtin,
                Some("builtin") => {
                    let builtin: Vec<&str> =
                        crate::builtin::STEPS.iter().map(|s| s.key()).collect();
                    self.err(
                        o.path("run"),
                        format!(
                            "{} needs a model and cannot be builtin (only {} can)",
                            step.key(),
                            builtin.join(", ")
                        ),
                    );
                    StepRun::Agent
                }
                Some(other) => {
                    self.err(
                        o.path("run"),
                        format!("\"{other}\" is not a runner: use \"agent\" or \"builtin\""),
                    );
                    StepRun::Agent
                }
            };
            let enabled = self.boolean(&o, "enabled").unwrap_or(true);
            if !enabled && !step.can_be_disabled() {
                let optional: Vec<&str> = Step::ALL
                    .iter()
                    .filter(|s| s.can_be_disabled())
                    .map(|s| s.key())
                    .collect();
                self.err(
                    o.path("enabled"),
                    format!(
                        "{} cannot be disabled (only {} can)",
                        step.key(),
                        optional.join(", ")
                    ),
                );
            }
            let model = model.unwrap_or_else(|| global_model.to_string());
            let effort = if is_haiku(&model) {
                None
            } else {
                Some(effort.or(global_effort).unwrap_or(DEFAULT_EFFORT))
            };
            StepConfig {
                model,
                effort,
                max_turns,
                timeout: minutes(timeout_min),
                idle_timeout: minutes(idle_min),
                skill,
                prompt,
                enabled: enabled || !step.can_be_disabled(),
                run,
            }
        })
    }

    fn consecutive_failures(&mut self, top: &Obj) -> [u32; Step::COUNT] {
        let mut out = Limits::default().max_consecutive_failures;
        let Some(v) = top.get("maxConsecutiveFailures") else {
            return out;
        };
        let path = top.path("maxConsecutiveFailures");
        let Value::Object(map) = v else {
            self.expected(path, "an object mapping step keys to integers", v);
            return out;
        };
        let keys = step_keys();
        let o = Obj {
            path: path.clone(),
            map: Some(map),
        };
        for key in map.keys() {
            if key.starts_with('_') {
                continue;
            }
            match Step::from_key(key) {
                Some(step) => {
                    if let Some(n) = self.uint(&o, key, 0, MAX_COUNT) {
                        out[step.index()] = n;
                    }
                }
                None => self.err(join(&path, key), unknown_message(key, &keys, "step")),
            }
        }
        out
    }

    fn agent(&mut self, top: &Obj) -> AgentConfig {
        let o = self.object(top.path("agent"), top.get("agent"), AGENT_KEYS);
        let command = self
            .text(&o, "command")
            .unwrap_or_else(|| DEFAULT_AGENT_COMMAND.to_string());
        let args = self.strings(&o, "args", false, None).unwrap_or_default();
        let mut env = BTreeMap::new();
        if let Some(v) = o.get("env") {
            let path = o.path("env");
            match v {
                // Keys here are variable names, not schema keys, so `_` is not a comment.
                Value::Object(map) => {
                    for (k, val) in map {
                        if k.is_empty() || k.contains('=') || k.contains('\0') {
                            self.err(join(&path, k), "not a valid environment variable name");
                            continue;
                        }
                        match val {
                            Value::String(s) => {
                                env.insert(k.clone(), s.clone());
                            }
                            other => self.expected(join(&path, k), "a string", other),
                        }
                    }
                }
                other => self.expected(path, "an object of strings", other),
            }
        }
        let max_api_retries = self
            .uint(&o, "maxApiRetries", 0, MAX_COUNT)
            .unwrap_or(DEFAULT_MAX_API_RETRIES);
        AgentConfig {
            command,
            args,
            env,
            max_api_retries,
        }
    }

    fn notify(&mut self, top: &Obj) -> NotifyConfig {
        let o = self.object(top.path("notify"), top.get("notify"), NOTIFY_KEYS);
        let webhook_url = self.text(&o, "webhookUrl");
        if let Some(url) = &webhook_url {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                self.err(
                    o.path("webhookUrl"),
                    format!("\"{url}\" is not an http:// or https:// URL"),
                );
            }
        }
        let command = self.strings(&o, "command", true, None);
        if let Some([program, ..]) = command.as_deref() {
            if program.trim().is_empty() {
                self.err(
                    format!("{}[0]", o.path("command")),
                    "the program name is empty",
                );
            }
        }
        NotifyConfig {
            webhook_url,
            command,
        }
    }

    fn tracker(&mut self, top: &Obj, base: &Path) -> TrackerConfig {
        let o = self.object(top.path("tracker"), top.get("tracker"), TRACKER_KEYS);
        let kind = match self.choice(&o, "kind", &["github", "local"]) {
            Some(1) => TrackerKind::Local,
            _ => TrackerKind::Github,
        };
        let dir = self.path(&o, "dir", base);
        match (kind, &dir) {
            (TrackerKind::Local, None) => self.err(
                o.path("dir"),
                "required when tracker.kind is \"local\": the directory holding one file per issue",
            ),
            (TrackerKind::Github, Some(_)) if o.get("kind").is_none_or(|k| k == "github") => {
                self.err(
                    o.path("dir"),
                    "only used by the local tracker: set tracker.kind to \"local\" or remove tracker.dir",
                )
            }
            _ => {}
        }
        let label = self
            .text(&o, "label")
            .unwrap_or_else(|| DEFAULT_LABEL.to_string());
        let escalated_label = self
            .text(&o, "escalatedLabel")
            .unwrap_or_else(|| DEFAULT_ESCALATED_LABEL.to_string());
        TrackerConfig {
            kind,
            dir: if kind == TrackerKind::Local {
                dir
            } else {
                None
            },
            label,
            escalated_label,
        }
    }
}

fn unknown_message(key: &str, known: &[&str], noun: &str) -> String {
    match suggest(key, known) {
        Some(k) => format!("unknown {noun}; did you mean \"{k}\"?"),
        None if noun == "step" => format!("unknown step; the steps are {}", known.join(", ")),
        // A long list hides the point; the schema command shows every key with its meaning.
        None if known.len() > 10 => format!(
            "unknown {noun} (keys starting with \"_\" are comments; `sdlc-runner config schema` lists every key)"
        ),
        None => format!(
            "unknown {noun}; expected one of {} (keys starting with \"_\" are comments)",
            known.join(", ")
        ),
    }
}

fn describe_str(s: &str) -> String {
    format!("\"{}\"", printable(s))
}

/// Not the old runner's `<os temp>/sdlc-logs/<basename>`: another user could prepare that
/// directory, and two projects with the same name shared it.
fn default_log_dir(project: &Path) -> PathBuf {
    crate::logs::default_dir(project)
}

// ---------------------------------------------------------------------------------------------
// JSON Schema

/// Mirror types of the file's shape, used only to derive the JSON Schema (defaults, ranges and
/// documentation). Validation does not use them: see `Walker`.
mod file {
    use super::{Approval, Effort, Forge, TrackerKind};
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
    fn d_3() -> u32 {
        3
    }
    fn d_2() -> u32 {
        2
    }
    fn d_5() -> u32 {
        5
    }
    fn d_network() -> u32 {
        super::DEFAULT_MAX_NETWORK_WAITS
    }
    fn d_60() -> u32 {
        60
    }
    fn d_900() -> u32 {
        900
    }
    fn d_quota() -> f64 {
        super::DEFAULT_MAX_QUOTA_WAIT_MIN
    }
    fn d_decision() -> f64 {
        super::DEFAULT_DECISION_TIMEOUT_MIN
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
    fn d_failures() -> MaxConsecutiveFailures {
        MaxConsecutiveFailures {
            verify: Some(3),
            ..Default::default()
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
        #[serde(default = "d_3")]
        /// At most 100.
        #[schemars(range(min = 1, max = 100))]
        pub max_retries_per_step: u32,
        /// Precondition bounces per cycle; the cycle escalates when the count exceeds this.
        #[serde(default = "d_3")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_bounce_retries: u32,
        /// Consecutive escalations that halt the session.
        #[serde(default = "d_2")]
        /// At most 100.
        #[schemars(range(min = 1, max = 100))]
        pub max_consecutive_escalations: u32,
        /// Consecutive failures of a step across the session that halt it, by step key
        /// (0 disables). Entries are merged over the default `{"verify": 3}`.
        #[serde(default = "d_failures")]
        pub max_consecutive_failures: MaxConsecutiveFailures,
        /// Failures of a step in a row with the same signature that escalate early: 0 (off) or ≥ 2.
        #[serde(default = "d_2")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_consecutive_same_failure: u32,
        /// Rate-limit / overload / quota waits in a row before halting.
        #[serde(default = "d_5")]
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
        #[serde(default = "d_2")]
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
        pub forge: Option<Forge>,
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
        #[serde(default = "d_60")]
        /// At most 604800 (seven days).
        #[schemars(range(min = 1, max = 604_800))]
        pub initial_seconds: u32,
        #[serde(default = "d_900")]
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
        /// The agent CLI, looked up on PATH.
        #[serde(default = "d_command")]
        pub command: String,
        /// Extra arguments appended to the runner's own.
        #[serde(default)]
        pub args: Vec<String>,
        /// Extra environment variables for the agent.
        #[serde(default)]
        pub env: BTreeMap<String, String>,
        /// `CLAUDE_CODE_MAX_RETRIES` for the agent: low, so the runner's backoff is in charge.
        #[serde(default = "d_2")]
        /// At most 100.
        #[schemars(range(min = 0, max = 100))]
        pub max_api_retries: u32,
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

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "/work/cfg/sdlc-config.json";

    fn load(text: &str) -> Config {
        match Config::from_str(text, Path::new(FILE)) {
            Ok(c) => c,
            Err(e) => panic!("expected a valid config, got:\n{e}"),
        }
    }

    /// The error lines without the file prefix.
    fn errors(text: &str) -> Vec<String> {
        match Config::from_str(text, Path::new("sdlc-config.json")) {
            Ok(_) => panic!("expected errors for {text}"),
            Err(e) => e
                .lines()
                .into_iter()
                .map(|l| {
                    l.strip_prefix("sdlc-config.json: ")
                        .map(str::to_string)
                        .unwrap_or(l)
                })
                .collect(),
        }
    }

    fn with_project(rest: &str) -> String {
        format!(r#"{{"projectPath": "p", {rest}}}"#)
    }

    #[test]
    fn minimal_config_has_every_default() {
        let c = load(r#"{"projectPath": "proj"}"#);
        assert_eq!(c.file, PathBuf::from(FILE));
        assert_eq!(c.project_path, PathBuf::from("/work/cfg/proj"));
        assert_eq!(c.plugins_path, None);
        assert_eq!(c.model, "sonnet");
        assert_eq!(c.effort, Effort::Medium);
        assert_eq!(
            c.log_dir,
            crate::logs::default_dir(Path::new("/work/cfg/proj"))
        );
        assert_eq!(c.max_log_disk_usage_bytes, 500 * 1024 * 1024);
        assert!(c.cleanup.process_patterns.is_empty());
        for step in Step::ALL {
            assert_eq!(c.model(step), "sonnet");
            assert_eq!(c.effort(step), Some(Effort::Medium));
            assert_eq!(c.max_turns(step), 20);
            assert_eq!(c.timeout(step), Duration::from_secs(600));
            assert_eq!(c.idle_timeout(step), Duration::from_secs(600));
            assert_eq!(c.skill(step), None);
            assert_eq!(c.prompt(step), None);
            assert!(c.enabled(step));
        }
        assert_eq!(c.idle_timeout, Duration::from_secs(600));
        assert_eq!(c.decision_timeout, Duration::from_secs(3600));
        assert_eq!(c.approval, Approval::Auto);
        assert_eq!(c.budget, Budget::default());
        assert_eq!(c.discord_channel_id, None);
        assert_eq!(c.agent.command, "claude");
        assert!(c.agent.args.is_empty() && c.agent.env.is_empty());
        assert_eq!(c.agent.max_api_retries, 2);
        assert_eq!(c.notify, NotifyConfig::default());
        assert_eq!(c.tracker.kind, TrackerKind::Github);
        assert_eq!(c.tracker.dir, None);
        assert_eq!(c.tracker.label, "automatable");
        assert_eq!(c.tracker.escalated_label, "sdlc-escalated");
        assert!(!c.require_checks);
        assert_eq!(c.forge, Forge::Github);
        // The machine's own defaults and the config's defaults are the same numbers.
        assert_eq!(c.limits(), Limits::default());
    }

    #[test]
    fn relative_paths_resolve_against_the_config_directory() {
        let c = load(
            r#"{"projectPath": "../repo", "pluginsPath": "plugins", "logDir": "logs",
                "tracker": {"kind": "local", "dir": "./issues"}}"#,
        );
        assert_eq!(c.project_path, PathBuf::from("/work/cfg/../repo"));
        assert_eq!(c.plugins_path, Some(PathBuf::from("/work/cfg/plugins")));
        assert_eq!(c.log_dir, PathBuf::from("/work/cfg/logs"));
        assert_eq!(c.tracker.dir, Some(PathBuf::from("/work/cfg/./issues")));
        let abs = load(r#"{"projectPath": "/srv/repo", "logDir": ""}"#);
        assert_eq!(abs.project_path, PathBuf::from("/srv/repo"));
        // An empty logDir means the default, as in the old runner.
        assert_eq!(
            abs.log_dir,
            crate::logs::default_dir(Path::new("/srv/repo"))
        );
    }

    #[test]
    fn local_tracker_makes_the_forge_local_unless_set() {
        let c = load(&with_project(r#""tracker": {"kind": "local", "dir": "i"}"#));
        assert_eq!(c.forge, Forge::Local);
        let c = load(&with_project(
            r#""tracker": {"kind": "local", "dir": "i"}, "forge": "github""#,
        ));
        assert_eq!(c.forge, Forge::Github);
    }

    #[test]
    fn limits_convert_to_exact_units() {
        let c = load(&with_project(
            r#""maxRetriesPerStep": 5, "maxBounceRetries": 0, "maxConsecutiveEscalations": 4,
               "maxConsecutiveSameFailure": 0, "maxRateLimitWaits": 7,
               "maxConsecutiveFailures": {"implement": 2, "verify": 0},
               "backoff": {"initialSeconds": 10, "maxSeconds": 80},
               "maxQuotaWaitMinutes": 90.5, "maxRepairIterations": 1, "approval": "manual",
               "budget": {"perIssueUsd": 12.345678, "perSessionUsd": 100, "perIssueMinutes": 1.5},
               "steps": {"simplify": {"enabled": false}}"#,
        ));
        let mut failures = [0; Step::COUNT];
        failures[Step::Implement.index()] = 2;
        let l = c.limits();
        assert_eq!(
            l,
            Limits {
                max_retries_per_step: 5,
                max_bounce_retries: 0,
                max_consecutive_escalations: 4,
                max_consecutive_same_failure: 0,
                max_consecutive_failures: failures,
                max_rate_limit_waits: 7,
                backoff_initial_secs: 10,
                backoff_max_secs: 80,
                max_quota_wait_secs: 5430,
                max_repair_iterations: 1,
                simplify_enabled: false,
                per_issue_budget_micros: Some(12_345_678),
                per_session_budget_micros: Some(100_000_000),
                per_issue_budget_ms: Some(90_000),
                manual_approval: true,
            }
        );
        assert_eq!(l.next_step(Step::Implement), Some(Step::Verify));
    }

    #[test]
    fn consecutive_failures_merge_over_the_verify_default() {
        let c = load(&with_project(r#""maxConsecutiveFailures": {"merge": 4}"#));
        let l = c.limits();
        assert_eq!(l.max_consecutive_failures[Step::Verify.index()], 3);
        assert_eq!(l.max_consecutive_failures[Step::Merge.index()], 4);
    }

    #[test]
    fn step_settings_fall_back_to_global_and_haiku_drops_effort() {
        let c = load(&with_project(
            r#""model": "opus", "effort": "high", "idleTimeoutMin": 2,
               "steps": {"startCycle": {"model": "claude-haiku-4-5"},
                         "verify": {"effort": "xhigh", "maxTurns": 99, "timeoutMin": 0.5,
                                    "idleTimeoutMin": 1, "prompt": "check it", "skill": "verify-code"}},
               "pluginsPath": "/plugins""#,
        ));
        assert_eq!(c.model(Step::StartCycle), "claude-haiku-4-5");
        assert_eq!(c.effort(Step::StartCycle), None);
        assert_eq!(c.model(Step::Implement), "opus");
        assert_eq!(c.effort(Step::Implement), Some(Effort::High));
        assert_eq!(c.idle_timeout(Step::Implement), Duration::from_secs(120));
        assert_eq!(c.effort(Step::Verify), Some(Effort::Xhigh));
        assert_eq!(c.max_turns(Step::Verify), 99);
        assert_eq!(c.timeout(Step::Verify), Duration::from_secs(30));
        assert_eq!(c.idle_timeout(Step::Verify), Duration::from_secs(60));
        assert_eq!(c.prompt(Step::Verify), Some("check it"));
        assert_eq!(c.skill(Step::Verify), Some("verify-code"));
        assert_eq!(
            c.skill_file(Step::Verify),
            Some(PathBuf::from(
                "/plugins/plugins/nmg-sdlc/skills/verify-code/SKILL.md"
            ))
        );
        assert_eq!(c.skill_file(Step::Implement), None);
    }

    #[test]
    fn comment_keys_are_allowed_in_every_schema_object() {
        let c = load(
            r#"{"_top": 1, "projectPath": "p", "steps": {"_n": "x", "verify": {"_why": [1]}},
                "cleanup": {"_c": null}, "backoff": {"_c": 1}, "budget": {"_c": 1},
                "agent": {"_c": 1, "env": {"_KEEP": "1"}}, "notify": {"_c": 1},
                "tracker": {"_c": 1}, "maxConsecutiveFailures": {"_c": "x"}}"#,
        );
        // In agent.env the keys are variable names, so `_KEEP` is a variable, not a comment.
        assert_eq!(c.agent.env.get("_KEEP").map(String::as_str), Some("1"));
    }

    #[test]
    fn unknown_keys_name_the_path_and_suggest_the_closest() {
        assert_eq!(
            errors(&with_project(r#""maxRetries": 3"#)),
            ["maxRetries: unknown key; did you mean \"maxRetriesPerStep\"?"]
        );
        assert_eq!(
            errors(&with_project(r#""Model": "opus""#)),
            ["Model: unknown key; did you mean \"model\"?"]
        );
        assert_eq!(
            errors(&with_project(r#""steps": {"verify": {"maxturns": 3}}"#)),
            ["steps.verify.maxturns: unknown key; did you mean \"maxTurns\"?"]
        );
        assert_eq!(
            errors(&with_project(r#""backoff": {"jitter": 1}"#)),
            ["backoff.jitter: unknown key; expected one of initialSeconds, maxSeconds (keys starting with \"_\" are comments)"]
        );
        assert_eq!(
            errors(&with_project(r#""frobnicate": true"#)),
            ["frobnicate: unknown key (keys starting with \"_\" are comments; `sdlc-runner config schema` lists every key)"]
        );
        // The old runner let `number`/`key` in a step override the step's identity.
        assert_eq!(
            errors(&with_project(r#""steps": {"merge": {"number": 1}}"#)),
            ["steps.merge.number: unknown key; expected one of model, effort, maxTurns, timeoutMin, idleTimeoutMin, skill, prompt, enabled, run (keys starting with \"_\" are comments)"]
        );
    }

    #[test]
    fn unknown_step_keys_are_named() {
        assert_eq!(
            errors(&with_project(r#""steps": {"verfy": {}}"#)),
            ["steps.verfy: unknown step; did you mean \"verify\"?"]
        );
        assert_eq!(
            errors(&with_project(r#""steps": {"draftIssue": {}}"#)),
            ["steps.draftIssue: unknown step; the steps are startCycle, startIssue, writeSpecs, implement, simplify, verify, commitPush, createPR, monitorCI, merge"]
        );
        assert_eq!(
            errors(&with_project(
                r#""maxConsecutiveFailures": {"createPr": 1}"#
            )),
            ["maxConsecutiveFailures.createPr: unknown step; did you mean \"createPR\"?"]
        );
    }

    #[test]
    fn haiku_with_effort_is_an_error() {
        assert_eq!(
            errors(&with_project(r#""steps": {"merge": {"model": "haiku", "effort": "low"}}"#)),
            ["steps.merge.effort: model \"haiku\" does not support effort: remove effort from this step"]
        );
        assert_eq!(
            errors(&with_project(r#""model": "haiku", "effort": "low""#)),
            ["effort: model \"haiku\" does not support effort: remove effort, or set it per step on non-haiku steps"]
        );
        assert_eq!(
            errors(&with_project(r#""model": "haiku", "steps": {"verify": {"effort": "high"}}"#)),
            ["steps.verify.effort: model \"haiku\" (the global model) does not support effort: remove effort from this step or set steps.verify.model"]
        );
        // A step that sets its own non-haiku model may have an effort under a haiku global model.
        load(&with_project(
            r#""model": "haiku", "steps": {"verify": {"model": "opus", "effort": "high"}}"#,
        ));
    }

    #[test]
    fn bad_enum_values_list_the_choices() {
        assert_eq!(
            errors(&with_project(r#""steps": {"verify": {"effort": "max"}}"#)),
            ["steps.verify.effort: \"max\" is not one of low|medium|high|xhigh"]
        );
        assert_eq!(
            errors(&with_project(r#""approval": "ask""#)),
            ["approval: \"ask\" is not one of auto|manual"]
        );
        assert_eq!(
            errors(&with_project(r#""tracker": {"kind": "jira"}"#)),
            ["tracker.kind: \"jira\" is not one of github|local"]
        );
        assert_eq!(
            errors(&with_project(r#""forge": "gitlab""#)),
            ["forge: \"gitlab\" is not one of github|local"]
        );
    }

    #[test]
    fn wrong_types_name_the_expected_type() {
        assert_eq!(
            errors(&with_project(r#""maxRetriesPerStep": "3""#)),
            ["maxRetriesPerStep: expected an integer ≥ 1, found string \"3\" (write 3 without quotes)"]
        );
        assert_eq!(
            errors(&with_project(r#""maxRetriesPerStep": 0"#)),
            ["maxRetriesPerStep: expected an integer ≥ 1, found number 0"]
        );
        assert_eq!(
            errors(&with_project(r#""maxBounceRetries": 2.5"#)),
            ["maxBounceRetries: expected an integer ≥ 0, found number 2.5"]
        );
        assert_eq!(
            errors(&with_project(r#""maxConsecutiveSameFailure": 1"#)),
            ["maxConsecutiveSameFailure: expected 0 (off) or an integer ≥ 2, found number 1"]
        );
        assert_eq!(
            errors(&with_project(r#""steps": {"verify": null}"#)),
            ["steps.verify: expected an object, found null"]
        );
        assert_eq!(
            errors(&with_project(r#""steps": {"verify": {"timeoutMin": -1}}"#)),
            ["steps.verify.timeoutMin: expected a number > 0, found number -1"]
        );
        assert_eq!(
            errors(&with_project(r#""requireChecks": "yes""#)),
            ["requireChecks: expected true or false, found string \"yes\""]
        );
        assert_eq!(
            errors(&with_project(r#""model": "  ""#)),
            ["model: expected a non-empty string, found string \"  \""]
        );
        assert_eq!(
            errors(&with_project(
                r#""cleanup": {"processPatterns": ["chrome", 3, ""]}"#
            )),
            [
                "cleanup.processPatterns[1]: expected a string, found number 3",
                "cleanup.processPatterns[2]: an empty pattern would match every process; remove it"
            ]
        );
        assert_eq!(
            errors(&with_project(r#""agent": {"env": {"A": 1}, "args": "x"}"#)),
            [
                "agent.args: expected an array of strings, found string \"x\"",
                "agent.env.A: expected a string, found number 1"
            ]
        );
        assert_eq!(
            errors(&with_project(r#""discordChannelId": 123"#)),
            ["discordChannelId: expected a string (write the id in quotes: large numbers lose digits in JSON), found number 123"]
        );
        assert_eq!(
            errors("[1]"),
            ["expected a JSON object at the top level, found an array"]
        );
    }

    #[test]
    fn cross_field_rules() {
        assert_eq!(
            errors("{}"),
            ["projectPath: required: the path of the git repository to work on"]
        );
        assert_eq!(
            errors(&with_project(r#""steps": {"verify": {"enabled": false}}"#)),
            ["steps.verify.enabled: verify cannot be disabled (only simplify can)"]
        );
        assert_eq!(
            errors(&with_project(r#""steps": {"verify": {"skill": "verify-code"}}"#)),
            ["pluginsPath: required because steps verify name a skill (skills are read from <pluginsPath>/plugins/nmg-sdlc/skills/<skill>/SKILL.md)"]
        );
        assert_eq!(
            errors(&with_project(
                r#""backoff": {"initialSeconds": 120, "maxSeconds": 60}"#
            )),
            ["backoff.maxSeconds: 60 is less than backoff.initialSeconds (120)"]
        );
        assert_eq!(
            errors(&with_project(r#""tracker": {"kind": "local"}"#)),
            ["tracker.dir: required when tracker.kind is \"local\": the directory holding one file per issue"]
        );
        assert_eq!(
            errors(&with_project(r#""tracker": {"dir": "issues"}"#)),
            ["tracker.dir: only used by the local tracker: set tracker.kind to \"local\" or remove tracker.dir"]
        );
        assert_eq!(
            errors(&with_project(
                r#""notify": {"webhookUrl": "hooks.example.com", "command": []}"#
            )),
            [
                "notify.webhookUrl: \"hooks.example.com\" is not an http:// or https:// URL",
                "notify.command: expected a non-empty array of strings, found an empty array"
            ]
        );
    }

    #[test]
    fn every_error_is_reported_not_just_the_first() {
        let errs = errors(
            r#"{"maxRetries": 1, "effort": "max", "steps": {"verify": {"maxTurns": 0}},
                "budget": {"perIssueUsd": 0}, "agent": {"command": ""}}"#,
        );
        assert_eq!(
            errs,
            [
                "maxRetries: unknown key; did you mean \"maxRetriesPerStep\"?",
                "projectPath: required: the path of the git repository to work on",
                "effort: \"max\" is not one of low|medium|high|xhigh",
                "steps.verify.maxTurns: expected an integer ≥ 1, found number 0",
                "budget.perIssueUsd: expected a number > 0, found number 0",
                "agent.command: expected a non-empty string, found string \"\"",
            ]
        );
    }

    #[test]
    fn duplicate_keys_are_errors_except_comments() {
        assert_eq!(
            errors(
                r#"{"projectPath": "p", "_c": 1, "_c": 2,
                    "steps": {"verify": {"maxTurns": 5}, "verify": {"model": "opus"}},
                    "steps": {}}"#
            ),
            [
                "steps.verify: duplicate key: JSON keeps only the last one; merge them into one",
                "steps: duplicate key: JSON keeps only the last one; merge them into one",
            ]
        );
    }

    #[test]
    fn json_syntax_errors_give_line_and_column() {
        let e = Config::from_str("{\n  \"projectPath\": \"p\",\n}\n", Path::new("c.json"))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("c.json:3:1: invalid JSON: trailing comma")
        );
        let e = Config::from_str("", Path::new("c.json"))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("c.json:1:0: invalid JSON: EOF while parsing a value")
        );
    }

    #[test]
    fn missing_file_names_the_path() {
        let e = Config::load(Path::new("/nonexistent/sdlc-config.json"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("/nonexistent/sdlc-config.json: cannot read the config file: "),
            "{e}"
        );
    }

    #[test]
    fn shipped_example_and_old_example_validate() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let example = Config::load(&root.join("examples/sdlc-config.json"));
        let example = match example {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(example.max_turns(Step::Implement), 150);
        assert_eq!(example.budget.per_session_usd, Some(200.0));
        let old = match Config::load(&root.join("tests/fixtures/old-sdlc-config.example.json")) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        let turns: Vec<u32> = Step::ALL.iter().map(|&s| old.max_turns(s)).collect();
        assert_eq!(turns, [10, 25, 60, 150, 60, 100, 15, 45, 60, 10]);
        let timeouts: Vec<u64> = Step::ALL
            .iter()
            .map(|&s| old.timeout(s).as_secs() / 60)
            .collect();
        assert_eq!(timeouts, [5, 5, 15, 30, 15, 20, 5, 5, 20, 5]);
        assert_eq!(old.effort(Step::Merge), None);
        assert_eq!(old.effort(Step::WriteSpecs), Some(Effort::Xhigh));
        assert_eq!(old.cleanup.process_patterns, ["--remote-debugging-port"]);
    }

    fn property_names(v: &Value) -> Vec<String> {
        let mut names: Vec<String> = v["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn schema_and_validator_know_the_same_keys() {
        let s = schema();
        let defs = &s["definitions"];
        assert_eq!(property_names(&s), sorted(TOP_KEYS));
        assert_eq!(property_names(&defs["StepFile"]), sorted(STEP_FIELD_KEYS));
        assert_eq!(property_names(&defs["StepsFile"]), sorted(&step_keys()));
        assert_eq!(
            property_names(&defs["MaxConsecutiveFailures"]),
            sorted(&step_keys())
        );
        assert_eq!(property_names(&defs["CleanupFile"]), sorted(CLEANUP_KEYS));
        assert_eq!(property_names(&defs["BackoffFile"]), sorted(BACKOFF_KEYS));
        assert_eq!(property_names(&defs["BudgetFile"]), sorted(BUDGET_KEYS));
        assert_eq!(property_names(&defs["AgentFile"]), sorted(AGENT_KEYS));
        assert_eq!(property_names(&defs["NotifyFile"]), sorted(NOTIFY_KEYS));
        assert_eq!(property_names(&defs["TrackerFile"]), sorted(TRACKER_KEYS));
        assert_eq!(s["required"], serde_json::json!(["projectPath"]));
        assert_eq!(s["properties"]["maxRetriesPerStep"]["default"], 3);
        assert_eq!(
            s["properties"]["maxConsecutiveFailures"]["default"],
            serde_json::json!({"verify": 3})
        );
        assert_eq!(s["patternProperties"]["^_"]["description"], "comment");
        assert_eq!(
            defs["Effort"]["enum"],
            serde_json::json!(["low", "medium", "high", "xhigh"])
        );
    }

    #[test]
    fn suggestions_are_only_made_when_obvious() {
        assert_eq!(suggest("maxTurn", STEP_FIELD_KEYS), Some("maxTurns"));
        assert_eq!(suggest("timeout", STEP_FIELD_KEYS), Some("timeoutMin"));
        assert_eq!(suggest("xyz", STEP_FIELD_KEYS), None);
        assert_eq!(suggest("monitorci", &step_keys()), Some("monitorCI"));
    }
}
