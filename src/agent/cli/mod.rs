//! The agent port's adapters: one module per agent CLI (docs/agents.md). Each knows how to
//! invoke its CLI headless and unattended, how to read its output stream incrementally with
//! flat memory (unknown events are ignored), and how to classify what it reported. The driver
//! and the machine only see the common shape: an [`Invocation`], a [`StreamSummary`] and a
//! [`Classified`] failure.

pub mod claude;
pub mod codex;
mod doctor;
pub mod gemini;
mod lines;

pub use doctor::{checks as doctor_checks, Check as AgentCheck, Level as CheckLevel};

use crate::agent::classify::{decided, Classified, Observation};
use crate::agent::stream::{MoneyReached, StreamReader, StreamSummary};
use crate::config::AgentKind;
use crate::config::{AgentConfig, Config, Pricing};
use crate::failure::FailureClass;
use chrono::TimeZone;
pub use claude::{AttemptInfo, Invocation};
use std::path::{Path, PathBuf};

/// Why a reader asks the runner to stop the agent before it ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// More tool calls than the step's `maxTurns`.
    TurnLimit,
    /// The CLI retries for ever for want of a network or credentials.
    Offline,
}

/// What every CLI reads to reach its model through the operator's network: proxies and the
/// company's certificate authorities (node's, OpenSSL's, Python's).
pub const NETWORK_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "NODE_USE_SYSTEM_CA",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

/// The variables `kind`'s CLI reads to find and trust its model besides its keys (its
/// adapter's `ROUTE_VARS`, then [`NETWORK_VARS`]): they pass into the agent's sandbox.
pub fn route_vars(kind: AgentKind) -> Vec<&'static str> {
    let own = match kind {
        AgentKind::Claude => claude::ROUTE_VARS,
        AgentKind::Codex => codex::ROUTE_VARS,
        AgentKind::Gemini => gemini::ROUTE_VARS,
    };
    own.iter().chain(NETWORK_VARS).copied().collect()
}

/// Of [`route_vars`], those whose value names a file or directory the CLI reads (a CA
/// bundle, a credentials file): bound read-only into the sandbox with them.
pub const PATH_VARS: &[&str] = &[
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
];

/// What `kind`'s CLI is told when it runs inside the runner's sandbox.
pub fn sandboxed_vars(kind: AgentKind) -> &'static [(&'static str, &'static str)] {
    match kind {
        AgentKind::Claude => claude::SANDBOXED_VARS,
        AgentKind::Codex | AgentKind::Gemini => &[],
    }
}

/// The argument vector and environment of one attempt of `a.step` on its agent.
pub fn invocation(cfg: &Config, program: PathBuf, a: &AttemptInfo) -> Invocation {
    match cfg.agent(a.step).kind {
        AgentKind::Claude => claude::invocation(cfg, program, a),
        AgentKind::Codex => codex::invocation(cfg, program, a),
        AgentKind::Gemini => gemini::invocation(cfg, program, a),
    }
}

/// What a dry run shows for attempt `a`: [`invocation`] on the step's own agent, whose program
/// is `program` (the run's agent, resolved) when the step uses the run's agent command, and the
/// step's command as configured otherwise (a dry run needs no agent installed).
pub fn planned_invocation(cfg: &Config, program: &Path, a: &AttemptInfo) -> Invocation {
    let command = &cfg.agent(a.step).command;
    let program = if *command == cfg.agent.command {
        program.to_path_buf()
    } else {
        PathBuf::from(command)
    };
    invocation(cfg, program, a)
}

/// The stream reader of one attempt, and the meter that stops an agent at the money it
/// was given.
#[derive(Debug)]
pub struct Reader {
    kind: KindReader,
    meter: Option<Meter>,
}

/// The reader of one CLI's stream.
#[derive(Debug)]
enum KindReader {
    /// Claude Code's stream-json.
    Claude(StreamReader),
    /// Codex's `exec --json` events.
    Codex(codex::Reader),
    /// Gemini CLI's stream-json.
    Gemini(gemini::Reader),
}

/// The running cost of an attempt against the money it may spend.
#[derive(Debug)]
struct Meter {
    pricing: Pricing,
    /// The step's model, for tokens whose model the CLI does not name.
    model: String,
    limit_micros: u64,
    /// What the tokens so far cost.
    spent: u64,
    /// The money was reached: what the tokens so far cost.
    reached: Option<u64>,
}

impl Reader {
    /// `max_turns` bounds the tool calls of CLIs without a turn limit of their own.
    pub fn new(kind: AgentKind, max_turns: u32) -> Reader {
        let kind = match kind {
            AgentKind::Claude => KindReader::Claude(StreamReader::new()),
            AgentKind::Codex => KindReader::Codex(codex::Reader::new(max_turns)),
            AgentKind::Gemini => KindReader::Gemini(gemini::Reader::new(max_turns)),
        };
        Reader { kind, meter: None }
    }

    /// Stops the agent the moment the tokens it streamed cost `limit_micros` at `pricing`
    /// (`model` prices tokens the CLI names no model for). A model without a price is not
    /// metered: the CLI's own cap, `maxTurns` and the timeout bound it.
    pub fn metered(mut self, pricing: Pricing, model: &str, limit_micros: u64) -> Reader {
        self.meter = Some(Meter {
            pricing,
            model: model.to_string(),
            limit_micros,
            spent: 0,
            reached: None,
        });
        self
    }

    /// Feeds a chunk of stdout; `false` once the agent should be stopped.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        let keep_going = match &mut self.kind {
            KindReader::Claude(r) => {
                r.feed(bytes);
                true
            }
            KindReader::Codex(r) => r.feed(bytes),
            KindReader::Gemini(r) => r.feed(bytes),
        };
        let summary = self.kind.summary();
        if let Some(meter) = &mut self.meter {
            if meter.reached.is_some() {
                return false;
            }
            let cost =
                crate::agent::tokens::cost_micros(&meter.pricing, &summary.tokens, &meter.model);
            meter.spent = cost.unwrap_or(meter.spent).max(meter.spent);
            if let Some(cost) = cost.filter(|c| *c >= meter.limit_micros) {
                meter.reached = Some(cost);
                return false;
            }
        }
        keep_going
    }

    /// What a metered call's tokens cost so far, in micro-dollars (`None` unmetered).
    pub fn running_cost_micros(&self) -> Option<u64> {
        self.meter.as_ref().map(|m| m.spent)
    }

    /// What the output said so far.
    pub fn summary(&self) -> &StreamSummary {
        self.kind.summary()
    }

    /// Reads a last line without a newline and returns what the whole output said.
    pub fn finish(self) -> StreamSummary {
        let mut summary = match self.kind {
            KindReader::Claude(r) => r.finish(),
            KindReader::Codex(r) => r.finish(),
            KindReader::Gemini(r) => r.finish(),
        };
        if let Some(meter) = self.meter {
            if let Some(spent) = meter.reached {
                summary.money_reached = Some(MoneyReached {
                    spent_micros: spent,
                    limit_micros: meter.limit_micros,
                });
            }
        }
        summary
    }
}

impl KindReader {
    fn summary(&self) -> &StreamSummary {
        match self {
            KindReader::Claude(r) => r.summary(),
            KindReader::Codex(r) => r.summary(),
            KindReader::Gemini(r) => r.summary(),
        }
    }
}

/// Classifies an attempt of `kind`. Claude's is the common classifier unchanged; the others
/// first apply what the runner itself did (stopped at the turn limit, stopped a CLI that kept
/// reconnecting), then their own reading of the CLI's fields, then the common rules over the
/// output of their failed tool calls.
pub fn classify(kind: AgentKind, obs: &Observation) -> Option<Classified> {
    if let Some(money) = &obs.summary.money_reached {
        let what = format!(
            "stopped by the runner at ${:.2} spent of the ${:.2} the attempt was given",
            money.spent_micros as f64 / 1e6,
            money.limit_micros as f64 / 1e6
        );
        let tool = obs.summary.last_tool.clone().unwrap_or_default();
        return Some(decided(
            FailureClass::Budget,
            "money reached",
            &what,
            &tool,
            None,
        ));
    }
    if kind == AgentKind::Claude {
        return crate::agent::classify::classify(obs);
    }
    let summary = obs.summary;
    if let Some(limit) = summary.turn_limit {
        let what = format!(
            "stopped by the runner after {} tool calls (maxTurns {limit})",
            summary.tool_calls
        );
        let tool = summary.last_tool.clone().unwrap_or_default();
        return Some(decided(
            FailureClass::MaxTurns,
            "turn limit",
            &what,
            &tool,
            None,
        ));
    }
    if let Some(message) = &summary.offline {
        // Refused first (an HTTP status, a proxy's 403), then offline: the credentials or a
        // gate. Offline from the first request: the model cannot be reached, the network's.
        let (class, what) = if summary.refused_before_offline {
            (
                FailureClass::Auth,
                format!("{kind} kept reconnecting (not logged in, or no network): stopped after one call: {message}"),
            )
        } else {
            (
                FailureClass::Network,
                format!("{kind} cannot reach its model (it kept reconnecting): stopped after one call: {message}"),
            )
        };
        return Some(decided(class, "reconnecting", &what, message, None));
    }
    let own = match kind {
        AgentKind::Codex => codex::classify(obs),
        AgentKind::Gemini => gemini::classify(obs),
        AgentKind::Claude => None,
    };
    if own.is_some() {
        return own;
    }
    let plain = match kind {
        AgentKind::Codex => codex::failed_tool_output(obs.output_tail),
        _ => gemini::failed_tool_output(obs.output_tail),
    };
    crate::agent::classify::classify(&Observation {
        output_tail: &plain,
        ..*obs
    })
}

/// The prompt of a CLI without a system-prompt flag: the skill's instructions follow it.
fn prompt_with_skill(prompt: &str, skill: Option<&str>) -> String {
    match skill {
        Some(text) => format!("{prompt}\n\n---\nThe skill's instructions:\n\n{text}"),
        None => prompt.to_string(),
    }
}

/// The agent's configured environment and the step context every agent gets.
fn step_env(agent: &AgentConfig, a: &AttemptInfo) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = agent
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.push(("SDLC_STEP".into(), a.name.into()));
    env.push(("SDLC_STEP_NUMBER".into(), a.step.number().to_string()));
    env.push(("SDLC_ISSUE".into(), a.issue_id.to_string()));
    env.push(("SDLC_ATTEMPT".into(), a.attempt.to_string()));
    env
}

/// Seconds from `now` until the local wall-clock time a usage-limit message names ("try again
/// at 3:20 PM", "try again at 15:20"): the next such time, today or tomorrow.
pub fn reset_wait_secs(message: &str, now_epoch_secs: i64) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    let at = lower.find("try again at ")? + "try again at ".len();
    let rest = lower[at..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ':'))
        .unwrap_or(rest.len());
    let (hh, mm) = rest[..end].split_once(':')?;
    let (mut hour, minute): (u32, u32) = (hh.parse().ok()?, mm.get(..2)?.parse().ok()?);
    let suffix = rest[end..].trim_start();
    if suffix.starts_with("pm") && hour < 12 {
        hour += 12;
    } else if suffix.starts_with("am") && hour == 12 {
        hour = 0;
    }
    let time = chrono::NaiveTime::from_hms_opt(hour, minute, 0)?;
    let now = chrono::Local.timestamp_opt(now_epoch_secs, 0).single()?;
    let mut day = now.date_naive();
    for _ in 0..3 {
        let candidate = chrono::Local
            .from_local_datetime(&day.and_time(time))
            .earliest()
            .map(|t| t.timestamp());
        if let Some(t) = candidate.filter(|t| *t > now_epoch_secs) {
            return u64::try_from(t - now_epoch_secs).ok();
        }
        day = day.succ_opt()?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::Step;

    fn cfg(extra: &str) -> Config {
        Config::for_test(extra)
    }

    fn info(step: Step, skill: Option<&str>) -> AttemptInfo<'_> {
        AttemptInfo {
            step,
            name: step.key(),
            issue: 4,
            issue_id: "4",
            attempt: 2,
            prompt: "P",
            skill,
            money_left_micros: None,
        }
    }

    fn env<'a>(inv: &'a Invocation, key: &str) -> Option<&'a str> {
        inv.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn codex_runs_exec_json_unsandboxed_with_model_effort_and_skill() {
        let c = cfg(
            r#", "agent": {"kind": "codex", "args": ["wrap"]}, "model": "gpt-5", "effort": "high""#,
        );
        let inv = invocation(&c, "codex".into(), &info(Step::Verify, Some("SKILL")));
        assert_eq!(
            inv.args[..4],
            [
                "wrap",
                "exec",
                "--json",
                "--dangerously-bypass-approvals-and-sandbox"
            ]
        );
        let joined = inv.args.join(" ");
        assert!(joined.contains("--model gpt-5"), "{joined}");
        assert!(
            joined.contains("-c model_reasoning_effort=\"high\""),
            "{joined}"
        );
        let prompt = inv.args.last().unwrap();
        assert!(
            prompt.starts_with("P") && prompt.ends_with("SKILL"),
            "{prompt}"
        );
        assert_eq!(env(&inv, "SDLC_STEP"), Some("verify"));
        assert_eq!(env(&inv, "SDLC_STEP_NUMBER"), Some("6"));
        assert_eq!(env(&inv, "SDLC_ISSUE"), Some("4"));
        assert_eq!(env(&inv, "SDLC_ATTEMPT"), Some("2"));
        assert_eq!(env(&inv, "CLAUDE_CODE_MAX_RETRIES"), None);
        assert!(
            !joined.contains("--max-turns"),
            "codex has no turn flag: {joined}"
        );
    }

    #[test]
    fn gemini_runs_headless_in_yolo_mode_in_a_trusted_folder() {
        let c = cfg(r#", "agent": {"kind": "gemini"}"#);
        let inv = invocation(&c, "gemini".into(), &info(Step::Implement, None));
        assert_eq!(
            inv.args,
            [
                "-p",
                "P",
                "--output-format",
                "stream-json",
                "--approval-mode",
                "yolo"
            ],
            "no model set: the CLI's own default, never a Claude model"
        );
        assert_eq!(env(&inv, "GEMINI_CLI_TRUST_WORKSPACE"), Some("true"));
        assert_eq!(env(&inv, "GEMINI_TELEMETRY_ENABLED"), Some("false"));
        assert_eq!(env(&inv, "SDLC_STEP"), Some("implement"));
    }

    #[test]
    fn a_step_on_another_kind_gets_its_own_invocation_and_no_claude_model() {
        let c = cfg(
            r#", "model": "opus", "agent": {"env": {"A": "1"}}, "steps": {"implement": {"agent": {"kind": "codex"}}}"#,
        );
        let codex = invocation(&c, "codex".into(), &info(Step::Implement, None));
        assert_eq!(codex.args[0], "exec");
        assert!(
            !codex.args.contains(&"opus".to_string()),
            "{:?}",
            codex.args
        );
        assert_eq!(
            env(&codex, "A"),
            Some("1"),
            "env is merged over the top level"
        );
        let claude = invocation(&c, "claude".into(), &info(Step::Verify, None));
        assert!(claude.args.windows(2).any(|w| w == ["--model", "opus"]));
        assert_eq!(env(&claude, "CLAUDE_CODE_MAX_RETRIES"), Some("2"));
    }

    #[test]
    fn the_reset_time_of_a_usage_message_is_the_next_such_local_time() {
        let local = |h, m| {
            chrono::Local
                .from_local_datetime(
                    &chrono::NaiveDate::from_ymd_opt(2026, 3, 10)
                        .unwrap()
                        .and_hms_opt(h, m, 0)
                        .unwrap(),
                )
                .earliest()
                .unwrap()
                .timestamp()
        };
        let now = local(14, 0);
        let msg = "You’ve hit your usage limit. … or try again at 3:20 PM.";
        assert_eq!(reset_wait_secs(msg, now), Some(80 * 60));
        assert_eq!(reset_wait_secs("try again at 15:20", now), Some(80 * 60));
        // Already past today: tomorrow's.
        assert_eq!(
            reset_wait_secs("try again at 1:05 PM", now),
            Some((local(13, 5) + 86_400 - now) as u64)
        );
        assert_eq!(
            reset_wait_secs("try again at 12:30 AM", now),
            Some((local(0, 30) + 86_400 - now) as u64)
        );
        assert_eq!(reset_wait_secs("try again later", now), None);
        assert_eq!(reset_wait_secs("try again at noon", now), None);
    }
}
