//! Every default and ceiling of the config, in one place: the loader, the JSON Schema and
//! the machine's limits take them from here.

use super::*;

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
/// Most workers `run --workers` / `workers` may ask for.
pub const MAX_WORKERS: u32 = 32;
/// `claims.leaseMinutes`: how long a runner's claim on an issue lasts without renewal.
pub const DEFAULT_CLAIM_LEASE_MIN: f64 = 60.0;
/// `localCi.timeoutMin`: how long the local forge's CI command may run.
pub const DEFAULT_LOCAL_CI_TIMEOUT_MIN: f64 = 20.0;
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

/// The machine's limits when the config says nothing. The core owns them
/// (`Limits::default()`); the loader and the schema read them here, so neither can disagree.
pub fn machine() -> Limits {
    Limits::default()
}

/// `maxQuotaWaitMinutes` when unset: the machine's cap, in minutes.
pub fn max_quota_wait_min() -> f64 {
    machine().max_quota_wait_secs as f64 / 60.0
}

/// `notify.minSeverity`: chat channels get warnings and alerts; progress stays in the log.
pub const DEFAULT_NOTIFY_MIN_SEVERITY: Severity = Severity::Warning;
