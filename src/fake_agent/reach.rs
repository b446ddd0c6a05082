//! The fake agent's model out of reach: each CLI's own way of saying that no request reached
//! its model (recorded from the real CLIs), and a CLI that reaches its model only through the
//! gateway its base-URL variable names.

use super::events::Emitter;
use crate::config::AgentKind;
use std::io;
use std::time::Duration;

/// The variable each CLI reads its model's address from (a gateway, a proxy's endpoint).
pub fn base_url_var(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Claude => "ANTHROPIC_BASE_URL",
        AgentKind::Codex => "OPENAI_BASE_URL",
        AgentKind::Gemini => "GOOGLE_GEMINI_BASE_URL",
    }
}

/// Whether the CLI would find its model: its base-URL variable is set (the scripted
/// `via-gateway` outcome's model is reachable only through the gateway).
pub fn gateway_known(kind: AgentKind) -> bool {
    std::env::var_os(base_url_var(kind)).is_some_and(|v| !v.is_empty())
}

/// The CLI cannot reach its model: Claude's `api_error: "connection_failed"` result (exit 1),
/// Codex reconnecting for ever (`waiting for network`, no HTTP answer before), Gemini's
/// `fetch failed` result (exit 1).
pub fn unreachable(out: &mut Emitter) -> io::Result<i32> {
    match out.kind() {
        AgentKind::Claude => {
            out.raw(include_str!("unreachable.jsonl"))?;
            Ok(1)
        }
        AgentKind::Codex => {
            out.init()?;
            loop {
                out.raw(OFFLINE)?;
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        AgentKind::Gemini => {
            out.init()?;
            out.raw(GEMINI_FETCH_FAILED)?;
            Ok(1)
        }
    }
}

/// Codex without credentials behind a proxy that refuses it (a 403 to its CONNECT), then
/// reconnecting for ever, as the real CLI's `not-logged-in` capture.
pub fn codex_refused_then_offline(out: &mut Emitter) -> io::Result<i32> {
    out.init()?;
    out.raw("{\"type\":\"error\",\"message\":\"Reconnecting... 5/5 (stream disconnected before completion: URL error: Proxy connection failed: HTTP CONNECT failed with status 403)\"}\n")?;
    loop {
        out.raw(OFFLINE)?;
        std::thread::sleep(Duration::from_secs(1));
    }
}

const OFFLINE: &str = "{\"type\":\"error\",\"message\":\"Reconnecting... waiting for network (Connection failed: error sending request)\"}\n";

const GEMINI_FETCH_FAILED: &str = "{\"type\":\"result\",\"status\":\"error\",\"error\":{\"type\":\"unknown\",\"message\":\"[API Error: exception TypeError: fetch failed sending request]\"},\"stats\":{\"total_tokens\":0,\"input_tokens\":0,\"output_tokens\":0,\"cached\":0,\"input\":0,\"duration_ms\":0,\"tool_calls\":0}}\n";
