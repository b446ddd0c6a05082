//! The default of every key that has one, named by `#[serde(default = "d::…")]`. The
//! counters' defaults are the core's (`Limits::default()`), so the config and the machine
//! cannot disagree.

use super::super::{machine, Effort, Severity, DEFAULT_EFFORT, DEFAULT_MODEL};
use std::collections::BTreeMap;

pub fn model() -> String {
    DEFAULT_MODEL.into()
}
pub fn effort() -> Effort {
    DEFAULT_EFFORT
}
pub fn max_log_disk_usage_mb() -> f64 {
    500.0
}
pub fn max_retries_per_step() -> u32 {
    machine().max_retries_per_step
}
pub fn max_bounce_retries() -> u32 {
    machine().max_bounce_retries
}
pub fn max_consecutive_escalations() -> u32 {
    machine().max_consecutive_escalations
}
/// The core's per-step limits, written as the file would (steps at 0 are off and left out).
pub fn max_consecutive_failures() -> BTreeMap<String, u32> {
    let limits = machine().max_consecutive_failures;
    crate::step::Step::ALL
        .iter()
        .filter(|s| limits[s.index()] > 0)
        .map(|s| (s.key().to_string(), limits[s.index()]))
        .collect()
}
pub fn max_consecutive_same_failure() -> u32 {
    machine().max_consecutive_same_failure
}
pub fn max_rate_limit_waits() -> u32 {
    machine().max_rate_limit_waits
}
/// With the default backoff (60 s doubling to 900 s) about two hours of outage are waited
/// out.
pub fn max_network_waits() -> u32 {
    10
}
/// The core's cap, in minutes.
pub fn max_quota_wait_minutes() -> f64 {
    machine().max_quota_wait_secs as f64 / 60.0
}
pub fn max_repair_iterations() -> u32 {
    machine().max_repair_iterations
}
pub fn decision_timeout_minutes() -> f64 {
    60.0
}
pub fn idle_timeout_min() -> f64 {
    10.0
}
pub fn workers() -> u32 {
    1
}
pub fn approval_timeout_minutes() -> f64 {
    1440.0
}
pub fn max_review_rounds() -> u32 {
    2
}
pub fn lease_minutes() -> f64 {
    60.0
}
pub fn train_max_parallel() -> u32 {
    1
}
pub fn train_max_length() -> u32 {
    16
}
pub fn train_batch() -> u32 {
    1
}
pub fn local_ci_timeout_min() -> f64 {
    20.0
}
pub fn max_turns() -> u32 {
    20
}
pub fn timeout_min() -> f64 {
    10.0
}
pub fn enabled() -> bool {
    true
}
pub fn backoff_initial_seconds() -> u32 {
    machine().backoff_initial_secs
}
pub fn backoff_max_seconds() -> u32 {
    machine().backoff_max_secs
}
pub fn ci_poll_initial_seconds() -> u32 {
    machine().ci_poll_initial_secs
}
pub fn ci_poll_max_seconds() -> u32 {
    machine().ci_poll_max_secs
}
pub fn agent_kind() -> String {
    crate::config::AgentKind::default().as_str().into()
}
pub fn agent_command() -> String {
    crate::config::AgentKind::default().default_command().into()
}
/// `CLAUDE_CODE_MAX_RETRIES`: low, so that the runner's own backoff is in charge.
pub fn max_api_retries() -> u32 {
    2
}
/// Chat channels get warnings and alerts; progress stays in the log.
pub fn min_severity() -> Severity {
    Severity::Warning
}
pub fn label() -> String {
    "automatable".into()
}
pub fn gitlab_url() -> String {
    "https://gitlab.com".into()
}
pub fn gitlab_token_env() -> String {
    "GITLAB_TOKEN".into()
}
pub fn linear_url() -> String {
    "https://api.linear.app/graphql".into()
}
pub fn linear_token_env() -> String {
    "LINEAR_API_KEY".into()
}
pub fn escalated_label() -> String {
    "sdlc-escalated".into()
}
