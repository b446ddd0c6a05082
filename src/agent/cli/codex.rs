//! OpenAI's Codex CLI, `codex exec --json` (docs/agents.md "Codex").
//!
//! The stream is one JSON object per line: `thread.started`, `turn.started`,
//! `item.started`/`item.completed` (agent messages, command executions, file changes, …),
//! non-terminal `error` lines (each CLI-level retry says `Reconnecting... N/M (…)`), and one
//! terminal `turn.completed` (with token usage) or `turn.failed` (with a message only). The
//! CLI has no turn limit and no structured error codes: the runner counts tool calls and reads
//! the failure's text.

use super::lines::{object, Events, JsonLinesReader, Progress};
use super::{reset_wait_secs, Stop};
use super::{AttemptInfo, Invocation};
use crate::agent::classify::{decided, Classified, Observation};
use crate::agent::stream::{truncate, ResultEvent, MAX_RESULT_TEXT};
use crate::agent::tokens::ModelTokens;
use crate::config::Config;
use crate::failure::FailureClass;
use serde_json::Value;
use std::collections::VecDeque;
use std::path::PathBuf;

/// Item types that are the model talking, not a tool call.
const NOT_TOOLS: [&str; 4] = ["agent_message", "reasoning", "error", "todo_list"];
/// Started tool items remembered so that their completion is not counted twice.
const RECENT_ITEMS: usize = 16;

/// The argument vector: the configured args first (a wrapper such as the fake agent), then
/// The variables Codex reads to find and trust its model besides its keys: the OpenAI base
/// URL and organisation, Azure's key, its home. Passed into the agent's sandbox when set.
pub const ROUTE_VARS: &[&str] = &[
    "OPENAI_BASE_URL",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT",
    "AZURE_OPENAI_API_KEY",
];

/// `exec --json` with approvals and the sandbox bypassed (the sandbox keeps `.git` read-only,
/// so a step could not commit), the model and effort when set, and the prompt with the skill's
/// instructions. The environment carries the step context, as for Claude.
pub fn invocation(cfg: &Config, program: PathBuf, a: &AttemptInfo) -> Invocation {
    let agent = cfg.agent(a.step);
    let mut args = agent.args.clone();
    args.extend(
        [
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            "check_for_update_on_startup=false",
            "-c",
            "analytics.enabled=false",
        ]
        .map(String::from),
    );
    let model = cfg.model(a.step);
    if !model.is_empty() {
        args.extend(["--model".to_string(), model.to_string()]);
    }
    if let Some(effort) = cfg.effort(a.step) {
        args.extend([
            "-c".to_string(),
            format!("model_reasoning_effort=\"{}\"", effort.as_str()),
        ]);
    }
    // A configured prompt may start with a dash: it is never an option.
    args.push("--".to_string());
    args.push(super::prompt_with_skill(a.prompt, a.skill));
    Invocation {
        program,
        args,
        env: super::step_env(agent, a),
    }
}

/// Incremental reader of `codex exec --json` output.
pub type Reader = JsonLinesReader<Codex>;

/// What the reader of Codex's stream keeps of its own.
#[derive(Debug, Default)]
pub struct Codex {
    recent: VecDeque<String>,
    last_message: Option<String>,
}

impl Codex {
    /// A tool item, counted once although it is both started and completed.
    fn tool_call(&mut self, p: &mut Progress, id: &str, kind: &str) {
        if !id.is_empty() && self.recent.iter().any(|r| r == id) {
            return;
        }
        if self.recent.len() == RECENT_ITEMS {
            self.recent.pop_front();
        }
        self.recent.push_back(id.to_string());
        p.tool_call(Some(kind));
    }

    fn result(p: &Progress, failed: bool, text: Option<String>) -> ResultEvent {
        ResultEvent {
            subtype: if failed { "error" } else { "success" }.to_string(),
            is_error: failed,
            result_text: text,
            num_turns: Some(p.summary.tool_calls.saturating_add(1)),
            session_id: p.summary.session_id.clone(),
            ..ResultEvent::default()
        }
    }
}

impl Events for Codex {
    fn buffered_bytes(&self) -> usize {
        self.recent.iter().map(String::capacity).sum::<usize>()
    }

    fn event(&mut self, p: &mut Progress, event: &Value) {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => p.summary.session_id = text(event, "thread_id"),
            "item.started" | "item.completed" => {
                let Some(item) = event.get("item") else {
                    return;
                };
                let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
                if kind == "agent_message" {
                    if let Some(t) = text(item, "text") {
                        self.last_message = Some(truncate(&t, MAX_RESULT_TEXT));
                    }
                } else if !NOT_TOOLS.contains(&kind) {
                    let id = text(item, "id").unwrap_or_default();
                    self.tool_call(p, &id, kind);
                }
            }
            "error" => {
                if let Some(message) = text(event, "message") {
                    // Without network or credentials the CLI retries for ever.
                    if message.contains("waiting for network") && p.summary.result.is_none() {
                        // An earlier error was an answer (an HTTP status, a proxy's refusal).
                        if p.summary.offline.is_none() {
                            p.summary.refused_before_offline =
                                p.summary.api_error_message.is_some();
                        }
                        p.summary.offline = Some(truncate(&message, 1024));
                        p.stop.get_or_insert(Stop::Offline);
                    }
                    p.summary.api_error_message = Some(truncate(&message, 1024));
                }
            }
            "turn.completed" => {
                if let Some(usage) = event.get("usage") {
                    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                    p.summary.tokens.push(ModelTokens {
                        model: String::new(),
                        input: n("input_tokens"),
                        cached_input: n("cached_input_tokens"),
                        output: n("output_tokens"),
                        cache_write: 0,
                    });
                }
                p.summary.result = Some(Codex::result(p, false, self.last_message.clone()));
            }
            "turn.failed" => {
                let message = event
                    .get("error")
                    .and_then(|e| e.get("message"))
                    .and_then(Value::as_str)
                    .map(|m| truncate(m, MAX_RESULT_TEXT));
                p.summary.result = Some(Codex::result(p, true, message));
            }
            _ => {}
        }
    }
}

/// How the CLI's failure messages map to classes, in precedence order (the apostrophes of
/// its messages are typographic; they are normalized before matching).
const RULES: &[(FailureClass, &str, &[&str])] = &[
    (
        FailureClass::Quota,
        "usage window exhausted",
        &["hit your usage limit", "usage_limit_reached"],
    ),
    (
        FailureClass::Auth,
        "billing quota exhausted",
        &["Quota exceeded", "insufficient_quota", "billing details"],
    ),
    (
        FailureClass::Auth,
        "not authenticated",
        &[
            "401 Unauthorized",
            "403 Forbidden",
            "provide an API key",
            "Incorrect API key",
            "invalid_api_key",
        ],
    ),
    (
        FailureClass::RateLimit,
        "api status 429",
        &[
            "429 Too Many Requests",
            "rate limit exceeded",
            "rate_limit_exceeded",
        ],
    ),
    (
        FailureClass::ContextWindow,
        "context window",
        &["context window", "context_length_exceeded"],
    ),
    (
        FailureClass::Overloaded,
        "transient api failure",
        &[
            "high demand",
            "at capacity",
            "server_is_overloaded",
            "idle timeout",
            "stream disconnected",
            "500 Internal Server Error",
            "502 Bad Gateway",
            "503 Service Unavailable",
            "504 Gateway Timeout",
        ],
    ),
];

/// Classifies a Codex attempt from its terminal message; `None` when the kind's own rules do
/// not decide (the common rules then do).
pub fn classify(obs: &Observation) -> Option<Classified> {
    let summary = obs.summary;
    let result = summary.result.as_ref();
    let message = match result {
        Some(r) if r.is_error => r.result_text.clone(),
        Some(_) => None,
        None => summary.api_error_message.clone(),
    }?;
    let plain = message.replace(['\u{2019}', '\u{2018}'], "'");
    let (class, evidence, _) = RULES
        .iter()
        .find(|(_, _, needles)| needles.iter().any(|n| contains_ci(&plain, n)))?;
    let wait = (*class == FailureClass::Quota)
        .then(|| reset_wait_secs(&plain, obs.now_epoch_secs))
        .flatten();
    let headline = match wait {
        Some(secs) => format!("{plain} (resets in {secs} s)"),
        None => plain.clone(),
    };
    Some(decided(*class, evidence, &headline, &plain, wait))
}

/// The output of failed command executions in a stdout tail, as plain lines for the common
/// tool-output rules (test failures, compile errors, missing commands).
pub fn failed_tool_output(tail: &str) -> String {
    let mut out = String::new();
    for line in tail.lines() {
        let Some(event) = object(line) else {
            continue;
        };
        let Some(item) = event.get("item") else {
            continue;
        };
        let failed = item.get("status").and_then(Value::as_str) == Some("failed")
            || item
                .get("exit_code")
                .and_then(Value::as_i64)
                .is_some_and(|c| c != 0);
        if event.get("type").and_then(Value::as_str) == Some("item.completed") && failed {
            if let Some(text) = item.get("aggregated_output").and_then(Value::as_str) {
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    out
}

fn contains_ci(haystack: &str, needle: &str) -> bool {
    haystack
        .to_ascii_lowercase()
        .contains(&needle.to_ascii_lowercase())
}
