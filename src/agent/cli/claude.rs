//! Claude Code's invocation (docs/interfaces.md "Agent invocation"): the argument vector and
//! environment of one attempt, and the shape every agent CLI's invocation shares. Pure: the
//! driver spawns what this builds.

use crate::config::Config;
use crate::step::Step;
use std::path::PathBuf;

/// The variables Claude Code reads to find and trust its model besides its keys: a gateway's
/// base URL and headers, the Bedrock and Vertex switches and where their credentials are.
/// Passed into the agent's sandbox when set (docs/security.md).
pub const ROUTE_VARS: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "API_TIMEOUT_MS",
    "CLAUDE_CODE_USE_BEDROCK",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
    "AWS_REGION",
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "CLAUDE_CODE_USE_VERTEX",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLAUDE_CODE_SKIP_VERTEX_AUTH",
    "CLOUD_ML_REGION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
];

/// What Claude Code is told inside the runner's sandbox: that it is sandboxed, so that run as
/// root (a container, a CI job) it still runs unattended with `--dangerously-skip-permissions`.
pub const SANDBOXED_VARS: &[(&str, &str)] = &[("IS_SANDBOX", "1")];

/// Argument vector and environment for one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    /// The agent CLI.
    pub program: PathBuf,
    /// Its arguments, in order (no shell).
    pub args: Vec<String>,
    /// Variables added to the runner's environment.
    pub env: Vec<(String, String)>,
}

/// What one attempt is, for building its invocation.
pub struct AttemptInfo<'a> {
    /// The step the attempt runs (its settings in the config).
    pub step: Step,
    /// What the agent is told it runs (`SDLC_STEP`): the step's key, or `addressReview` for
    /// a review round, which the machine runs as monitorCI's attempt.
    pub name: &'a str,
    /// The issue it works on.
    pub issue: u32,
    /// The issue as the tracker names it (`12`, `ENG-12`): the agent's `SDLC_ISSUE`.
    pub issue_id: &'a str,
    /// Attempt number within the step, from 1.
    pub attempt: u32,
    /// The prompt the agent gets.
    pub prompt: &'a str,
    /// Contents of the step's skill file, when it names one.
    pub skill: Option<&'a str>,
    /// The most the attempt may spend, in micro-dollars (`None`: no dollar budget).
    pub money_left_micros: Option<u64>,
}

/// The Claude Code argument vector and environment that run attempt `a` with its step's
/// settings from `cfg` (`program` already resolved on PATH).
pub fn invocation(cfg: &Config, program: PathBuf, a: &AttemptInfo) -> Invocation {
    let agent = cfg.agent(a.step);
    let mut args = agent.args.clone();
    args.extend([
        "--model".to_string(),
        cfg.model(a.step).to_string(),
        "-p".to_string(),
        a.prompt.to_string(),
        "--dangerously-skip-permissions".to_string(),
        "--verbose".to_string(),
        "--output-format".to_string(),
        "stream-json".to_string(),
        "--max-turns".to_string(),
        cfg.max_turns(a.step).to_string(),
    ]);
    if let Some(skill) = a.skill {
        args.push("--append-system-prompt".to_string());
        args.push(skill.to_string());
    }
    if let Some(left) = a.money_left_micros {
        // The CLI's own cap too: it stops between two model requests, the runner's meter
        // within one message of the money, whichever comes first.
        args.push("--max-budget-usd".to_string());
        args.push(usd_arg(left));
    }
    let mut env: Vec<(String, String)> = agent
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(effort) = cfg.effort(a.step) {
        env.push(("CLAUDE_CODE_EFFORT_LEVEL".into(), effort.as_str().into()));
    }
    env.push((
        "CLAUDE_CODE_MAX_RETRIES".into(),
        agent.max_api_retries.to_string(),
    ));
    env.push(("SDLC_STEP".into(), a.name.into()));
    env.push(("SDLC_STEP_NUMBER".into(), a.step.number().to_string()));
    env.push(("SDLC_ISSUE".into(), a.issue_id.to_string()));
    env.push(("SDLC_ATTEMPT".into(), a.attempt.to_string()));
    Invocation { program, args, env }
}

/// Micro-dollars as the CLI's `--max-budget-usd` takes them: dollars, at most six decimals.
fn usd_arg(micros: u64) -> String {
    let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_vector_and_environment_follow_the_contract() {
        let c = Config::for_test(
            r#", "steps": {"verify": {"maxTurns": 7, "effort": "high"}}, "agent": {"args": ["wrap"]}"#,
        );
        let a = AttemptInfo {
            step: Step::Verify,
            name: "verify",
            issue: 4,
            issue_id: "4",
            attempt: 2,
            prompt: "P",
            skill: Some("SKILL"),
            money_left_micros: None,
        };
        let inv = invocation(&c, "claude".into(), &a);
        assert_eq!(inv.args[0], "wrap");
        let joined = inv.args.join(" ");
        assert!(joined.contains("-p P --dangerously-skip-permissions --verbose --output-format stream-json --max-turns 7 --append-system-prompt SKILL"), "{joined}");
        let get = |k: &str| {
            inv.env
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("SDLC_STEP"), Some("verify"));
        assert_eq!(get("SDLC_STEP_NUMBER"), Some("6"));
        assert_eq!(get("SDLC_ISSUE"), Some("4"));
        assert_eq!(get("SDLC_ATTEMPT"), Some("2"));
        assert_eq!(get("CLAUDE_CODE_EFFORT_LEVEL"), Some("high"));
        assert_eq!(get("CLAUDE_CODE_MAX_RETRIES"), Some("2"));
    }

    #[test]
    fn haiku_gets_no_effort_variable() {
        let c = Config::for_test(r#", "model": "haiku""#);
        let a = AttemptInfo {
            step: Step::Implement,
            name: "implement",
            issue: 1,
            issue_id: "1",
            attempt: 1,
            prompt: "P",
            skill: None,
            money_left_micros: Some(2_500_000),
        };
        let inv = invocation(&c, "claude".into(), &a);
        assert!(inv.env.iter().all(|(k, _)| k != "CLAUDE_CODE_EFFORT_LEVEL"));
        assert!(!inv.args.contains(&"--append-system-prompt".to_string()));
        assert!(
            inv.args
                .windows(2)
                .any(|w| w == ["--max-budget-usd", "2.5"]),
            "{:?}",
            inv.args
        );
    }

    #[test]
    fn the_money_left_is_passed_in_dollars() {
        assert_eq!(usd_arg(3_000_000), "3");
        assert_eq!(usd_arg(800_720), "0.80072");
        assert_eq!(usd_arg(1), "0.000001");
        assert_eq!(usd_arg(0), "0");
    }
}
