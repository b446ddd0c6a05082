//! Google's Gemini CLI, `gemini -p … --output-format stream-json` (docs/agents.md "Gemini").
//!
//! Events: `init`, `message` (deltas), `tool_use`, `tool_result`, `error` (severity warning
//! or error) and a final `result` with `status`, an optional `error {type, message}` and
//! token `stats` per model. API failures exit with the HTTP status modulo 256; setup failures
//! (no auth, untrusted folder) print nothing on stdout and exit 41 or 55.

use super::lines::{object, Events, JsonLinesReader, Progress};
use super::{AttemptInfo, Invocation};
use crate::agent::classify::{decided, Classified, Observation};
use crate::agent::stream::{truncate, ResultEvent, MAX_RESULT_TEXT};
use crate::agent::tokens::ModelTokens;
use crate::config::Config;
use crate::failure::FailureClass;
use serde_json::Value;
use std::path::PathBuf;

/// Exit codes of setup failures that print nothing on stdout.
const EXIT_NO_AUTH: i32 = 41;
const EXIT_TURN_LIMIT: i32 = 53;
const EXIT_UNTRUSTED: i32 = 55;
const MAX_UNAVAILABLE_TOOLS: usize = 8;

/// `-p PROMPT --output-format stream-json --approval-mode yolo` (without yolo the shell tool
/// is not even offered headless), the model when set; the environment trusts the project
/// folder and turns telemetry off, besides the step context.
pub fn invocation(cfg: &Config, program: PathBuf, a: &AttemptInfo) -> Invocation {
    let agent = cfg.agent(a.step);
    let mut args = agent.args.clone();
    args.extend([
        "-p".to_string(),
        super::prompt_with_skill(a.prompt, a.skill),
        "--output-format".to_string(),
        "stream-json".to_string(),
        "--approval-mode".to_string(),
        "yolo".to_string(),
    ]);
    let model = cfg.model(a.step);
    if !model.is_empty() {
        args.extend(["--model".to_string(), model.to_string()]);
    }
    let mut env = vec![
        ("GEMINI_CLI_TRUST_WORKSPACE".to_string(), "true".to_string()),
        ("GEMINI_TELEMETRY_ENABLED".to_string(), "false".to_string()),
    ];
    env.extend(super::step_env(agent, a));
    Invocation { program, args, env }
}

/// Incremental reader of Gemini's stream-json output.
pub type Reader = JsonLinesReader<Gemini>;

/// What the reader of Gemini's stream keeps of its own.
#[derive(Debug, Default)]
pub struct Gemini {
    /// The assistant's text since its last tool call, for diagnostics.
    text: String,
}

impl Gemini {
    fn result(&mut self, p: &mut Progress, event: &Value) {
        let failed = event.get("status").and_then(Value::as_str) != Some("success");
        let error = event.get("error");
        let field = |key: &str| {
            error
                .and_then(|e| e.get(key))
                .and_then(Value::as_str)
                .map(|t| truncate(t, MAX_RESULT_TEXT))
        };
        let stats = event.get("stats");
        if let Some(models) = stats
            .and_then(|s| s.get("models"))
            .and_then(Value::as_object)
        {
            for (model, usage) in models.iter().take(16) {
                let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                p.summary.tokens.push(ModelTokens {
                    model: truncate(model, 128),
                    input: n("input_tokens"),
                    cached_input: n("cached"),
                    output: n("output_tokens"),
                    cache_write: 0,
                });
            }
        }
        let text = (!self.text.trim().is_empty()).then(|| self.text.clone());
        p.summary.result = Some(ResultEvent {
            subtype: if failed { "error" } else { "success" }.to_string(),
            is_error: failed,
            terminal_reason: field("type"),
            result_text: field("message").or(text),
            num_turns: Some(p.summary.tool_calls.saturating_add(1)),
            duration_ms: stats
                .and_then(|s| s.get("duration_ms"))
                .and_then(Value::as_u64),
            session_id: p.summary.session_id.clone(),
            ..ResultEvent::default()
        });
    }
}

impl Events for Gemini {
    fn buffered_bytes(&self) -> usize {
        self.text.capacity()
    }

    fn event(&mut self, p: &mut Progress, event: &Value) {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "init" => p.summary.session_id = text(event, "session_id"),
            "message" if text(event, "role").as_deref() == Some("assistant") => {
                if let Some(content) = text(event, "content") {
                    if self.text.len() + content.len() <= MAX_RESULT_TEXT {
                        self.text.push_str(&content);
                    }
                }
            }
            "tool_use" => {
                self.text.clear();
                p.tool_call(text(event, "tool_name").as_deref());
            }
            "tool_result" => {
                let kind = event.get("error").and_then(|e| e.get("type"));
                if kind.and_then(Value::as_str) == Some("tool_not_registered") {
                    // The tool id is `<tool>__<tool>_<n>`.
                    let id = text(event, "tool_id").unwrap_or_default();
                    let tool = id.split("__").next().unwrap_or_default().to_string();
                    let tools = &mut p.summary.unavailable_tools;
                    if !tools.contains(&tool) && tools.len() < MAX_UNAVAILABLE_TOOLS {
                        tools.push(truncate(&tool, 64));
                    }
                }
            }
            "error" => {
                let message = text(event, "message").unwrap_or_default();
                if message.contains("Loop detected") {
                    p.summary.loop_detected = Some(truncate(&message, 1024));
                } else if !message.is_empty() {
                    p.summary.api_error_message = Some(truncate(&message, 1024));
                }
            }
            "result" => self.result(p, event),
            _ => {}
        }
    }
}

/// The HTTP status behind an exit code (the CLI exits with it modulo 256).
fn http_status(exit: Option<i32>) -> Option<u16> {
    let code = exit?;
    [400u16, 401, 403, 404, 429, 500, 502, 503, 504]
        .into_iter()
        .find(|s| i32::from(*s) % 256 == code)
}

/// The variables Gemini CLI reads to find and trust its model besides its keys: its base
/// URL, the Vertex and Code Assist switches, the Google Cloud project and where its
/// credentials are. Passed into the agent's sandbox when set.
pub const ROUTE_VARS: &[&str] = &[
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
];

/// What the CLI's fetch says when no request reached the model (node's `fetch failed`, its
/// causes by name): the network's failure, not the issue's.
const UNREACHABLE: &[&str] = &[
    "fetch failed",
    "ENOTFOUND",
    "ECONNREFUSED",
    "EAI_AGAIN",
    "ENETUNREACH",
];

/// Classifies a Gemini attempt from its exit code, result and warnings; `None` when these
/// rules do not decide.
pub fn classify(obs: &Observation) -> Option<Classified> {
    let summary = obs.summary;
    let result = summary.result.as_ref();
    let stderr_line = obs
        .stderr_tail
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let guarded = obs.timed_out || obs.idle_timed_out || obs.killed;
    if !guarded && result.is_none() {
        let setup = match obs.exit_code {
            Some(EXIT_NO_AUTH) => Some((FailureClass::Auth, "no auth method", "not logged in")),
            Some(EXIT_UNTRUSTED) => Some((
                FailureClass::ToolingEnv,
                "untrusted folder",
                "the project folder is not trusted",
            )),
            _ => None,
        };
        if let Some((class, signature, what)) = setup {
            let what = format!("{what}: {stderr_line}");
            return Some(decided(class, signature, &what, obs.stderr_tail, None));
        }
    }
    let result = result?;
    let reason = result.terminal_reason.as_deref().unwrap_or("");
    if reason == "FatalTurnLimitedError" || obs.exit_code == Some(EXIT_TURN_LIMIT) {
        let text = result.result_text.clone().unwrap_or_default();
        return Some(decided(
            FailureClass::MaxTurns,
            "turn limit",
            "hit model.maxSessionTurns",
            &text,
            None,
        ));
    }
    if !result.is_error {
        return stopped_by_cli(summary);
    }
    api_error(obs, result.result_text.as_deref().unwrap_or_default())
}

/// A successful attempt that the CLI itself cut short: a tool loop, or tools it did not offer.
fn stopped_by_cli(summary: &crate::agent::stream::StreamSummary) -> Option<Classified> {
    if let Some(warning) = &summary.loop_detected {
        let what = format!("the CLI stopped a tool loop: {warning}");
        return Some(decided(
            FailureClass::MaxTurns,
            "loop detected",
            &what,
            warning,
            None,
        ));
    }
    if !summary.unavailable_tools.is_empty() {
        let tools = summary.unavailable_tools.join(", ");
        let what = format!("tools not offered by the CLI, nothing ran: {tools}");
        return Some(decided(
            FailureClass::PermissionDenied,
            &format!("unavailable: {tools}"),
            &what,
            &what,
            None,
        ));
    }
    None
}

/// A failed call read from the model API's message and the CLI's exit code.
fn api_error(obs: &Observation, message: &str) -> Option<Classified> {
    let status = http_status(obs.exit_code);
    let has = |needles: &[&str]| needles.iter().any(|n| message.contains(n));
    let (class, evidence) = if has(UNREACHABLE) && status.is_none() {
        // No HTTP answer at all: the model could not be reached (DNS, a refused port, a proxy).
        (FailureClass::Network, "model unreachable")
    } else if has(&["exhausted your daily quota"]) {
        (FailureClass::Quota, "daily quota exhausted")
    } else if has(&[
        "API_KEY_INVALID",
        "API key not valid",
        "PERMISSION_DENIED",
        "UNAUTHENTICATED",
    ]) || matches!(status, Some(401) | Some(403))
    {
        (FailureClass::Auth, "not authenticated")
    } else if has(&["input token count", "exceeds the maximum number of tokens"]) {
        (FailureClass::ContextWindow, "context window")
    } else if status == Some(429) || has(&["RESOURCE_EXHAUSTED", "Quota exceeded for metric"]) {
        (FailureClass::RateLimit, "api status 429")
    } else if status.is_some_and(|s| s >= 500)
        || has(&["overloaded", "\"INTERNAL\"", "UNAVAILABLE"])
    {
        (FailureClass::Overloaded, "transient api failure")
    } else {
        return None;
    };
    Some(decided(class, evidence, message, message, None))
}

/// The output of failed tool calls in a stdout tail, as plain lines for the common rules.
pub fn failed_tool_output(tail: &str) -> String {
    let mut out = String::new();
    for line in tail.lines() {
        let Some(event) = object(line) else {
            continue;
        };
        let is_result = event.get("type").and_then(Value::as_str) == Some("tool_result");
        if is_result && event.get("status").and_then(Value::as_str) == Some("error") {
            let text = event
                .get("output")
                .and_then(Value::as_str)
                .or_else(|| {
                    event
                        .get("error")
                        .and_then(|e| e.get("message"))
                        .and_then(Value::as_str)
                })
                .unwrap_or("");
            out.push_str(text);
            out.push('\n');
        }
    }
    out
}
