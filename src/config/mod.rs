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
use sdlc_machine::severity::Severity;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod agent_kind;
#[macro_use]
mod declare;
mod defaults;
mod definition;
mod duplicates;
mod error;
mod issue_refs;
mod messages;
pub(crate) mod pricing;
mod reference;
mod sandbox;
mod schema;
mod shape;
#[cfg(test)]
mod tests;
mod types;
mod validate;
mod walker;

pub use agent_kind::AgentKind;
pub use defaults::*;
pub use definition::{
    Backoff, Budget, CiPoll, Claims, Cleanup, HttpConfig, NotifyConfig, Settings, StepSettings,
    TestsConfig,
};
use duplicates::duplicate_keys;
pub use error::*;
pub use issue_refs::IssueRefs;
use messages::*;
pub use pricing::{shipped as shipped_pricing, Price, Pricing, SHIPPED_AS_OF};
pub use reference::reference_markdown;
pub use sandbox::{
    expand as expand_sandbox_path, home_dir, SandboxConfig, SandboxKind, SandboxNetwork,
};
use schema::top_shape;
pub use schema::{schema, schema_json};
use shape::Shape;
pub use types::*;
use walker::*;

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

    /// The services whose APIs the runner calls (and whose rate limits it waits out), as an
    /// operator names them: "GitHub", "GitLab and Linear", … ("the forge" when none is
    /// configured, which no rate limit then comes from).
    pub fn api_services(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for name in [self.tracker.kind().service(), self.forge.service()]
            .into_iter()
            .flatten()
        {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        match names.as_slice() {
            [] => "the forge".into(),
            [one] => (*one).into(),
            many => many.join(" or "),
        }
    }

    /// A valid config for unit tests: the project is the temporary directory, `extra` is
    /// appended to the top-level object (`, "key": value`, …).
    #[cfg(test)]
    pub(crate) fn for_test(extra: &str) -> Config {
        let dir = std::env::temp_dir();
        let text = format!(r#"{{"projectPath": "{}"{extra}}}"#, dir.display());
        match Config::from_str(&text, &dir.join("c.json")) {
            Ok(c) => c,
            Err(e) => panic!("not a valid test config: {e}"),
        }
    }

    /// The resolved settings of `step`.
    pub fn step(&self, step: Step) -> &StepConfig {
        &self.steps[step.index()]
    }
    /// The model `step` runs on; empty when a Codex or Gemini step leaves it to the CLI.
    pub fn model(&self, step: Step) -> &str {
        &self.step(step).model
    }
    /// `None` for a Haiku model.
    pub fn effort(&self, step: Step) -> Option<Effort> {
        self.step(step).effort
    }
    /// The agent that runs `step`.
    pub fn agent(&self, step: Step) -> &AgentConfig {
        &self.step(step).agent
    }
    /// The turn limit of one attempt of `step`.
    pub fn max_turns(&self, step: Step) -> u32 {
        self.step(step).max_turns
    }
    /// The wall-clock limit of one attempt of `step`.
    pub fn timeout(&self, step: Step) -> Duration {
        self.step(step).timeout
    }
    /// How long an attempt of `step` may print nothing before it is killed.
    pub fn idle_timeout(&self, step: Step) -> Duration {
        self.step(step).idle_timeout
    }
    /// The skill whose SKILL.md is appended to `step`'s system prompt, if any.
    pub fn skill(&self, step: Step) -> Option<&str> {
        self.step(step).skill.as_deref()
    }
    /// The prompt replacing `step`'s built-in one, if any.
    pub fn prompt(&self, step: Step) -> Option<&str> {
        self.step(step).prompt.as_deref()
    }
    /// The config an `addressReview` round runs its agent with: this one, with monitorCI's
    /// settings replaced by `steps.addressReview`'s. The machine performs a round as an
    /// attempt of monitorCI (its journals hold per-step arrays of the ten steps), so the
    /// shell, which looks settings up by that step, is handed the round's in its place.
    pub fn review_round(&self) -> Config {
        let mut round = self.clone();
        round.steps[Step::MonitorCi.index()] = self.address_review.clone();
        round
    }

    /// The instruction of a review round as configured: `steps.addressReview.prompt`, else
    /// the older `review.prompt`; `None`: the built-in one.
    pub fn address_review_prompt(&self) -> Option<&str> {
        self.address_review
            .prompt
            .as_deref()
            .or(self.review.prompt.as_deref())
    }

    /// Whether a review round may run at all (`review.maxReviewRounds` above 0).
    pub fn review_rounds(&self) -> bool {
        self.review.max_review_rounds > 0
    }

    /// Whether the runner does `step` itself, without an agent.
    pub fn builtin(&self, step: Step) -> bool {
        self.step(step).run == StepRun::Builtin
    }

    /// Whether `step` runs at all (`steps.<key>.enabled`).
    pub fn enabled(&self, step: Step) -> bool {
        self.step(step).enabled
    }

    /// Which steps the runner performs itself, by step index: what
    /// `bounds::agent_invocations` leaves out.
    pub fn builtin_steps(&self) -> [bool; Step::COUNT] {
        Step::ALL.map(|s| self.builtin(s))
    }

    /// The enabled steps by who performs them: `(agent steps, builtin steps)`, as keys.
    pub fn steps_by_performer(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        let enabled = Step::ALL.into_iter().filter(|s| self.enabled(*s));
        let (builtin, agent): (Vec<_>, Vec<_>) = enabled.partition(|s| self.builtin(*s));
        (
            agent.iter().map(|s| s.key()).collect(),
            builtin.iter().map(|s| s.key()).collect(),
        )
    }

    /// The SKILL.md of a step's skill, where the old runner looked for it.
    pub fn skill_file(&self, step: Step) -> Option<PathBuf> {
        self.skill_path(self.skill(step)?)
    }

    /// The SKILL.md of the review round's skill.
    pub fn round_skill_file(&self) -> Option<PathBuf> {
        self.skill_path(self.address_review.skill.as_deref()?)
    }

    fn skill_path(&self, skill: &str) -> Option<PathBuf> {
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
    /// `agents_run`: whether the agents' programs must be installed (a dry run starts none).
    pub fn environment_problems(&self, agents_run: bool) -> Vec<String> {
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
        if let Some(file) = self.round_skill_file() {
            if self.review_rounds() && !file.is_file() {
                problems.push(format!(
                    "steps.{ADDRESS_REVIEW}.skill: skill file {} does not exist",
                    file.display()
                ));
            }
        }
        if agents_run && which::which(&self.agent.command).is_err() {
            problems.push(format!(
                "agent.command: \"{}\" is not found on PATH (install the agent CLI or set agent.command)",
                self.agent.command
            ));
        }
        for step in Step::ALL {
            let agent = &self.step(step).agent;
            let used = self.enabled(step) && !self.builtin(step);
            if agents_run
                && used
                && agent.command != self.agent.command
                && which::which(&agent.command).is_err()
            {
                problems.push(format!(
                    "steps.{}.agent.command: \"{}\" ({}) is not found on PATH (install the agent CLI or set steps.{}.agent.command)",
                    step.key(),
                    agent.command,
                    agent.kind,
                    step.key()
                ));
            }
        }
        let round = &self.address_review.agent;
        if agents_run
            && self.review_rounds()
            && round.command != self.agent.command
            && which::which(&round.command).is_err()
        {
            problems.push(format!(
                "steps.{ADDRESS_REVIEW}.agent.command: \"{}\" ({}) is not found on PATH (install the agent CLI or set steps.{ADDRESS_REVIEW}.agent.command)",
                round.command, round.kind
            ));
        }
        if let Some(dir) = self.tracker.dir() {
            if !dir.is_dir() {
                problems.push(format!("tracker.dir: {} is not a directory", dir.display()));
            }
        }
        problems
    }

    /// The counters' limits of a runner alone (no claims, no shared merge turn), for what
    /// `bounds` and a dry run show.
    pub fn limits(&self) -> Limits {
        self.limits_for(RunShape::default())
    }

    /// The machine's limits for a run of this shape, in the machine's exact units: the one
    /// place they are built, from the config and the run's facts.
    pub fn limits_for(&self, run: RunShape) -> Limits {
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
            per_call_budget_micros: self.budget.per_call_usd.map(usd_to_micros),
            per_day_budget_micros: self.budget.per_day_usd.map(usd_to_micros),
            day_spent_before_micros: match self.budget.per_day_usd {
                Some(_) => run.spent_today_micros,
                None => 0,
            },
            manual_approval: self.approval == Approval::Manual,
            builtin_commit_push: self.builtin(Step::CommitPush),
            runner_commits: true,
            ask_on_issue_budget: self.budget.on_exceeded == OnExceeded::Ask,
            ask_on_weakening: self.tests.weakening == Weakening::Ask,
            max_network_waits: self.max_network_waits,
            network_backoff_initial_secs: Limits::default().network_backoff_initial_secs,
            ci_poll_initial_secs: self.ci_poll.initial_seconds,
            ci_poll_max_secs: self.ci_poll.max_seconds,
            ci_timeout_secs: self.timeout(Step::MonitorCi).as_secs(),
            merge_turn_wait_ms: run
                .claims
                .then(|| turn_wait_ms(self.claims.lease, run.workers)),
            claims: run.claims,
            claim_lease_secs: Some(self.claims.lease.as_secs()),
            decision_wait_secs: self.decision_timeout.as_secs(),
            review: Some(crate::machine::ReviewGate {
                require_approval: self.review.require_approval,
                wait_secs: self.review.approval_timeout.as_secs(),
                max_rounds: self.review.max_review_rounds,
                ignore_authors: self.review.ignore_authors_with_the_runner(),
            }),
            tracker_close_waits: self.tracker_close_waits(),
            train_tests_ci: run.workers > 1 && self.train_limits().is_some(),
        }
    }

    /// Waits for the tracker's own close of a merged issue: GitHub closes an issue from its
    /// merged PR's `Closes #N` (GitLab from its merge request's) asynchronously, a second or
    /// two after the merge, when the tracker and the forge are the same service; otherwise
    /// nobody but the runner closes it, and it does at once.
    fn tracker_close_waits(&self) -> u8 {
        match (self.tracker.kind(), self.forge) {
            (TrackerKind::Github, ForgeKind::Github) | (TrackerKind::Gitlab, ForgeKind::Gitlab) => {
                3
            }
            _ => 0,
        }
    }
}

impl Config {
    /// The drivers (each with its clone) a fleet of `workers` runs: twice as many when its
    /// merges form a train and `train.standby` lets a worker take the next issue while its PR
    /// waits in it; at most `workers` of them are at work at once ([`Config::at_work`]).
    pub fn fleet_drivers(&self, workers: u32) -> u32 {
        match self.at_work(workers) {
            Some(_) => workers.saturating_mul(2),
            None => workers,
        }
    }

    /// How many of a fleet's drivers may be at work at once, when some stand by.
    pub fn at_work(&self, workers: u32) -> Option<u32> {
        (workers > 1 && self.train.standby && self.train_limits().is_some()).then_some(workers)
    }

    /// The merge train's limits (`train.*`), when `run --workers` forms one: on the local
    /// forge, with a CI command and a builtin merge (the workers build and test the trees,
    /// and the merge lands the very commit tested). `None`: one merge turn at a time.
    pub fn train_limits(&self) -> Option<sdlc_machine::fleet::TrainLimits> {
        let builds =
            self.forge == ForgeKind::Local && self.local_ci.is_some() && self.builtin(Step::Merge);
        builds.then_some(sdlc_machine::fleet::TrainLimits {
            max_parallel: self.train.max_parallel,
            max_length: self.train.max_length,
            batch: self.train.batch,
        })
    }
}

/// What a run adds to the config's limits: facts of how it runs, not settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunShape {
    /// Issues are claimed and the merge turn shared (`--worker-id`, every worker of a fleet).
    pub claims: bool,
    /// Workers sharing the merge turn on this machine (`--workers`; 0 counts as 1).
    pub workers: u32,
    /// What the project's journals recorded as spent in the 24 hours before the session
    /// began, for the day budget (`journal::day_spend`).
    pub spent_today_micros: u64,
}

/// The machine's limit on a wait for the merge turn, for a runner that shares its merges: a
/// wait for the fleet's turn lasts at most one lease per worker ahead, and a wait for the
/// tracker's lease one lease (its holder's lease runs out by then), with two seconds of slack
/// for the clocks.
fn turn_wait_ms(lease: Duration, workers: u32) -> u64 {
    let limit = lease.saturating_mul(workers.max(1)) + Duration::from_secs(2);
    u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)
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

impl definition::ReviewConfig {
    /// The author the runner's own reviews and comments carry on the local forge: they are
    /// never handed back to its agent.
    pub const RUNNER_AUTHOR: &'static str = "sdlc-runner";

    /// Whose words count on GitHub and GitLab beside the people with write access
    /// (`trustedAuthors`), and whose never (`ignoreAuthors`).
    pub fn authority(&self) -> crate::authority::Authority {
        crate::authority::Authority {
            trusted: self.trusted_authors.clone(),
            ignored: self.ignore_authors.clone(),
        }
    }

    /// `ignoreAuthors` and the runner's own account: whose feedback the agent never sees.
    pub fn ignore_authors_with_the_runner(&self) -> Vec<String> {
        let mut authors = self.ignore_authors.clone();
        if !authors.iter().any(|a| a == Self::RUNNER_AUTHOR) {
            authors.push(Self::RUNNER_AUTHOR.to_string());
        }
        authors
    }
}
