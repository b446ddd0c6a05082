//! What `doctor` and `init` check of each Codex or Gemini CLI a config uses: the binary and
//! its version, whether it is logged in, and settings that would make it wait for a person or
//! spend minutes retrying on its own, and, under a dollar budget, that a CLI which reports its
//! tokens only at the end is capped per call by the step's limits, not by its money. (Claude's
//! binary is checked by `doctor` itself.)

use crate::config::AgentKind;
use crate::config::{AgentConfig, Config};
use crate::process::ChildSpec;
use crate::step::Step;
use std::path::PathBuf;
use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// Above this many attempts Gemini spends minutes retrying a persistent 429 or 5xx itself.
const GEMINI_MAX_ATTEMPTS: u64 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// How bad a finding is; `Fail` makes `doctor` exit non-zero.
pub enum Level {
    /// Nothing to do.
    Ok,
    /// Works, but something will likely cost time or money.
    Warn,
    /// The agent cannot be used as configured.
    Fail,
}

/// One finding about one agent.
#[derive(Debug, Clone)]
pub struct Check {
    /// How bad it is.
    pub level: Level,
    /// What was found, one line.
    pub detail: String,
    /// What to do about a warning or failure.
    pub fix: Option<String>,
}

fn check(level: Level, detail: String, fix: Option<&str>) -> Check {
    Check {
        level,
        detail,
        fix: fix.map(str::to_string),
    }
}

/// The agents of enabled agent steps other than Claude, each once.
fn agents_in_use(cfg: &Config) -> Vec<&AgentConfig> {
    let mut seen: Vec<&AgentConfig> = Vec::new();
    for step in Step::ALL {
        let agent = cfg.agent(step);
        let used = cfg.enabled(step) && !cfg.builtin(step) && agent.kind != AgentKind::Claude;
        if used
            && !seen
                .iter()
                .any(|a| a.kind == agent.kind && a.command == agent.command)
        {
            seen.push(agent);
        }
    }
    seen
}

/// Findings for every Codex or Gemini agent the config uses.
pub fn checks(cfg: &Config) -> Vec<Check> {
    let mut out: Vec<Check> = Vec::new();
    for agent in agents_in_use(cfg) {
        let Ok(program) = which::which(&agent.command) else {
            out.push(check(
                Level::Fail,
                format!(
                    "{} command \"{}\" is not on PATH",
                    agent.kind, agent.command
                ),
                Some("install the CLI or set the agent's command to its path"),
            ));
            continue;
        };
        // The top-level command's version is `doctor`'s own check.
        if agent.command != cfg.agent.command {
            out.push(version(agent, &program));
        }
        match agent.kind {
            AgentKind::Codex => out.push(codex_login(agent, &program)),
            AgentKind::Gemini => out.extend(gemini_settings(agent)),
            AgentKind::Claude => {}
        }
        out.extend(unmetered(cfg, agent.kind));
    }
    out
}

/// A dollar budget on a CLI that reports its tokens only when it ends: the runner cannot stop
/// one of its calls at the money left, so the step's turn limit and timeout cap a call.
fn unmetered(cfg: &Config, kind: AgentKind) -> Option<Check> {
    let b = &cfg.budget;
    let dollars = b.per_issue_usd.is_some()
        || b.per_session_usd.is_some()
        || b.per_call_usd.is_some()
        || b.per_day_usd.is_some();
    if !dollars || kind.streams_usage() {
        return None;
    }
    let steps: Vec<String> = Step::ALL
        .into_iter()
        .filter(|s| cfg.enabled(*s) && !cfg.builtin(*s) && cfg.agent(*s).kind == kind)
        .map(|s| {
            format!(
                "{} maxTurns {}, timeout {} min",
                s.key(),
                cfg.max_turns(s),
                cfg.timeout(s).as_secs() / 60
            )
        })
        .collect();
    Some(check(
        Level::Warn,
        format!(
            "{kind} reports its tokens only when a call ends: the runner cannot stop a call at the \
             money left, so each call is capped by its step's maxTurns and timeout ({}); the \
             budgets hold between calls",
            steps.join("; ")
        ),
        Some("set maxTurns and timeoutMin of these steps to what one call may spend"),
    ))
}

fn probe(agent: &AgentConfig, program: &PathBuf, args: &[&str]) -> Option<(bool, String)> {
    let mut cmd = ChildSpec::new(program);
    cmd.args(&agent.args).args(args).envs(&agent.env);
    let out = crate::process::output_within(cmd, PROBE_TIMEOUT).ok()??;
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    Some((out.status.success(), first))
}

fn version(agent: &AgentConfig, program: &PathBuf) -> Check {
    match probe(agent, program, &["--version"]) {
        Some((true, v)) => check(
            Level::Ok,
            format!("{} {} ({v})", agent.kind, program.display()),
            None,
        ),
        Some((false, e)) => check(
            Level::Warn,
            format!("`{} --version` failed: {e}", program.display()),
            Some("run the CLI by hand once to see whether it works"),
        ),
        None => check(
            Level::Warn,
            format!("`{} --version` gave no answer", program.display()),
            Some("run the CLI by hand once to see whether it works"),
        ),
    }
}

/// Without credentials `codex exec` does not stop: it retries for ever when offline.
fn codex_login(agent: &AgentConfig, program: &PathBuf) -> Check {
    let key = ["OPENAI_API_KEY", "CODEX_API_KEY"]
        .into_iter()
        .find(|k| agent.env.contains_key(*k) || std::env::var_os(k).is_some());
    match probe(agent, program, &["login", "status"]) {
        Some((true, status)) => check(Level::Ok, format!("codex login: {status}"), None),
        _ if key.is_some() => check(
            Level::Ok,
            format!("codex: {} is set", key.unwrap_or_default()),
            None,
        ),
        other => check(
            Level::Fail,
            format!(
                "codex is not logged in ({})",
                other.map(|(_, s)| s).unwrap_or_else(|| "no answer".into())
            ),
            Some("run `codex login`, or set OPENAI_API_KEY in agent.env"),
        ),
    }
}

/// Gemini's authentication and the settings that make it hang or retry for minutes.
fn gemini_settings(agent: &AgentConfig) -> Vec<Check> {
    let var = |k: &str| agent.env.get(k).cloned().or_else(|| std::env::var(k).ok());
    let home = var("GEMINI_CLI_HOME")
        .or_else(|| var("HOME"))
        .unwrap_or_default();
    let path = PathBuf::from(home).join(".gemini").join("settings.json");
    let settings: serde_json::Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(serde_json::Value::Null);
    let at = |p: &str| settings.pointer(p).cloned();
    let mut out = Vec::new();
    let selected = at("/security/auth/selectedType").and_then(|v| v.as_str().map(str::to_string));
    let key = [
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
    ]
    .into_iter()
    .find(|k| var(k).is_some());
    out.push(match (&selected, key) {
        (None, Some(_)) if var("GOOGLE_GEMINI_BASE_URL").is_some() => check(
            Level::Fail,
            "gemini: GOOGLE_GEMINI_BASE_URL is set but no auth type is selected: headless runs exit 41 (\"Invalid auth method selected\")".into(),
            Some(&format!("set security.auth.selectedType to \"gemini-api-key\" in {}", path.display())),
        ),
        (Some(t), _) => check(Level::Ok, format!("gemini auth: {t}"), None),
        (None, Some(k)) => check(Level::Ok, format!("gemini auth: {k} is set"), None),
        (None, None) => check(
            Level::Fail,
            "gemini has no auth method: headless runs exit 41 at once".into(),
            Some("set GEMINI_API_KEY in agent.env, or log in with `gemini` once"),
        ),
    });
    if at("/general/enableAutoUpdate") != Some(serde_json::Value::Bool(false)) {
        out.push(check(
            Level::Warn,
            format!("gemini checks for updates on start ({})", path.display()),
            Some("set general.enableAutoUpdate: false and general.enableAutoUpdateNotification: false"),
        ));
    }
    let attempts = at("/general/maxAttempts").and_then(|v| v.as_u64());
    if attempts.is_none_or(|n| n > GEMINI_MAX_ATTEMPTS) {
        out.push(check(
            Level::Warn,
            format!(
                "gemini retries a persistent 429 or 5xx itself for minutes (general.maxAttempts {})",
                attempts.map_or("unset, 10".to_string(), |n| n.to_string())
            ),
            Some("set general.maxAttempts: 2 so the runner's backoff is in charge"),
        ));
    }
    out
}
