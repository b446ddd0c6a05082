//! Events shaped like the real CLIs' (`tests/fixtures/claude-cli/`, `codex-cli/`,
//! `gemini-cli/`), written one per line and flushed at once so a runner watching for
//! idleness sees them as they happen. Each method speaks the stream of the emitter's kind.

use crate::config::AgentKind;
use serde_json::{json, Map, Value};
use std::io::{self, Write};
use std::time::Instant;

/// Writes one invocation's events; keeps what the final `result` event must repeat.
pub struct Emitter {
    kind: AgentKind,
    out: Box<dyn Write>,
    /// Codex item numbering (`item_N`).
    items: u64,
    session_id: String,
    model: String,
    cwd: String,
    cost_usd: f64,
    started: Instant,
    denials: Vec<Value>,
    ids: IdSource,
    /// Input tokens each Claude assistant message reports using.
    input_tokens: u64,
    /// The `--max-budget-usd` the runner passed, if any.
    max_budget_usd: Option<String>,
}

impl Emitter {
    pub fn new(
        kind: AgentKind,
        out: Box<dyn Write>,
        model: &str,
        cwd: &str,
        cost_usd: f64,
    ) -> Emitter {
        let mut ids = IdSource::new();
        Emitter {
            kind,
            out,
            items: 0,
            session_id: ids.uuid(),
            model: model.to_string(),
            cwd: cwd.to_string(),
            cost_usd,
            started: Instant::now(),
            denials: Vec::new(),
            ids,
            input_tokens: 100,
            max_budget_usd: None,
        }
    }

    /// Remembers the runner's `--max-budget-usd`.
    pub fn set_max_budget_usd(&mut self, cap: Option<String>) {
        self.max_budget_usd = cap;
    }

    /// The runner's `--max-budget-usd`, if it passed one.
    pub fn max_budget_usd(&self) -> Option<&str> {
        self.max_budget_usd.as_deref()
    }

    /// Every Claude assistant message from now on reports `n` input tokens: an expensive
    /// model request.
    pub fn set_input_tokens(&mut self, n: u64) {
        self.input_tokens = n;
    }

    fn line(&mut self, event: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, event)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    pub fn raw(&mut self, text: &str) -> io::Result<()> {
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }

    pub fn kind(&self) -> AgentKind {
        self.kind
    }

    fn item(&mut self) -> String {
        let id = format!("item_{}", self.items);
        self.items += 1;
        id
    }

    pub fn init(&mut self) -> io::Result<()> {
        match self.kind {
            AgentKind::Codex => {
                let started = json!({"type": "thread.started", "thread_id": self.session_id});
                self.line(&started)?;
                return self.line(&json!({"type": "turn.started"}));
            }
            AgentKind::Gemini => {
                let event = json!({"type": "init", "timestamp": timestamp(),
                    "session_id": self.session_id, "model": self.model});
                return self.line(&event);
            }
            AgentKind::Claude => {}
        }
        let event = json!({
            "type": "system",
            "subtype": "init",
            "cwd": self.cwd,
            "session_id": self.session_id,
            "tools": ["Task", "Bash", "Edit", "Read", "Write", "Skill"],
            "mcp_servers": [],
            "model": self.model,
            "permissionMode": "bypassPermissions",
            "apiKeySource": "none",
            "claude_code_version": "0.0.0-fake",
            "output_style": "default",
            "uuid": self.ids.uuid(),
        });
        self.line(&event)
    }

    fn assistant(&mut self, content: Value) -> Value {
        json!({
            "type": "assistant",
            "message": {
                "id": format!("msg_fake{}", self.ids.hex(24)),
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": content,
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": 1,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            },
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": self.ids.uuid(),
            "timestamp": timestamp(),
        })
    }

    pub fn assistant_text(&mut self, text: &str) -> io::Result<()> {
        let event = match self.kind {
            AgentKind::Claude => self.assistant(json!([{"type": "text", "text": text}])),
            AgentKind::Codex => json!({"type": "item.completed",
                "item": {"id": self.item(), "type": "agent_message", "text": text}}),
            AgentKind::Gemini => json!({"type": "message", "timestamp": timestamp(),
                "role": "assistant", "content": text, "delta": true}),
        };
        self.line(&event)
    }

    /// A tool call that the CLI ran, in its own assistant turn, and the tool's answer.
    pub fn tool_call(&mut self, tool: &str, input: Value) -> io::Result<()> {
        match self.kind {
            AgentKind::Codex => return self.command(&format!("{tool} {input}"), "done\n", 0),
            AgentKind::Gemini => {
                let id = self.gemini_tool_use(tool, &input)?;
                let answer = json!({"type": "tool_result", "timestamp": timestamp(),
                    "tool_id": id, "status": "success", "output": "done"});
                return self.line(&answer);
            }
            AgentKind::Claude => {}
        }
        let tool_use_id = self.claude_tool_use(tool, &input)?;
        let answer = json!({
            "type": "user",
            "message": {"role": "user", "content": [
                {"type": "tool_result", "content": "done", "tool_use_id": tool_use_id}
            ]},
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": self.ids.uuid(),
            "timestamp": timestamp(),
        });
        self.line(&answer)
    }

    /// Gemini's `tool_use` line; returns the call's id.
    fn gemini_tool_use(&mut self, tool: &str, input: &Value) -> io::Result<String> {
        let id = format!("{tool}__{tool}_{}", self.ids.hex(12));
        let call = json!({"type": "tool_use", "timestamp": timestamp(),
            "tool_name": tool, "tool_id": id, "parameters": input});
        self.line(&call)?;
        Ok(id)
    }

    /// Claude's assistant message holding one `tool_use`; returns the call's id.
    fn claude_tool_use(&mut self, tool: &str, input: &Value) -> io::Result<String> {
        let tool_use_id = format!("toolu_fake{}", self.ids.hex(24));
        let call = self.assistant(json!([
            {"type": "tool_use", "id": tool_use_id, "name": tool, "input": input}
        ]));
        self.line(&call)?;
        Ok(tool_use_id)
    }

    /// A tool call the CLI refused, as the real CLI reports it (tool_use, then
    /// `system/permission_denied`, then the error tool_result); the final result lists it.
    pub fn permission_denied(&mut self, tool: &str, input: Value) -> io::Result<()> {
        match self.kind {
            AgentKind::Codex => {
                return self.command(&format!("{tool} {input}"), "Operation not permitted\n", 1)
            }
            AgentKind::Gemini => {
                // Gemini's way of refusing: the tool was never offered.
                let id = self.gemini_tool_use(tool, &input)?;
                let message = format!("Tool \"{tool}\" not found.");
                let answer = json!({"type": "tool_result", "timestamp": timestamp(),
                    "tool_id": id, "status": "error", "output": message,
                    "error": {"type": "tool_not_registered", "message": message}});
                return self.line(&answer);
            }
            AgentKind::Claude => {}
        }
        let tool_use_id = self.claude_tool_use(tool, &input)?;
        let reason = format!("{tool} was denied by the permission policy");
        let denied = json!({
            "type": "system",
            "subtype": "permission_denied",
            "tool_name": tool,
            "tool_use_id": tool_use_id,
            "decision_reason_type": "safetyCheck",
            "decision_reason": reason,
            "message": reason,
            "uuid": self.ids.uuid(),
            "session_id": self.session_id,
        });
        self.line(&denied)?;
        let answer = json!({
            "type": "user",
            "message": {"role": "user", "content": [
                {"type": "tool_result", "content": reason, "is_error": true,
                 "tool_use_id": tool_use_id}
            ]},
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": self.ids.uuid(),
            "timestamp": timestamp(),
        });
        self.line(&answer)?;
        self.denials.push(json!({
            "tool_name": tool,
            "tool_use_id": tool_use_id,
            "tool_input": input,
        }));
        Ok(())
    }

    /// At least `bytes` of assistant text events of about 1 KB each, written as they are
    /// made so the fake's memory stays flat however large the flood. Each line is the event
    /// serialized once with holes for what changes (its number and ids): serializing a
    /// kilobyte of JSON per line cost this fake more CPU than the runner spent reading it.
    pub fn flood(&mut self, bytes: u64) -> io::Result<()> {
        let filler = "lorem ipsum dolor sit amet ".repeat(20);
        let text = format!("flood line {}: {filler}", Hole::Number.token());
        let mut event = match self.kind {
            AgentKind::Claude => self.assistant(json!([{"type": "text", "text": text}])),
            AgentKind::Codex => json!({"type": "item.completed",
                "item": {"id": Hole::Item.token(), "type": "agent_message", "text": text}}),
            AgentKind::Gemini => json!({"type": "message", "role": "assistant",
                "content": text, "delta": true}),
        };
        if self.kind == AgentKind::Claude {
            event["message"]["id"] = json!(Hole::MessageId.token());
            event["uuid"] = json!(Hole::Uuid.token());
        }
        let template = serde_json::to_string(&event)?;
        let parts = Hole::split(&template);
        let mut line = Vec::with_capacity(template.len() + 64);
        let mut written: u64 = 0;
        let mut n: u64 = 0;
        while written < bytes {
            line.clear();
            for (literal, hole) in &parts {
                line.extend_from_slice(literal.as_bytes());
                let value = match hole {
                    Some(Hole::Number) => n.to_string(),
                    Some(Hole::MessageId) => format!("msg_fake{}", self.ids.hex(24)),
                    Some(Hole::Uuid) => self.ids.uuid(),
                    Some(Hole::Item) => self.item(),
                    None => String::new(),
                };
                line.extend_from_slice(value.as_bytes());
            }
            line.push(b'\n');
            self.out.write_all(&line)?;
            written += line.len() as u64;
            n += 1;
            if n % 64 == 0 {
                self.out.flush()?;
            }
        }
        self.out.flush()
    }

    /// The final `result` event: a success unless `overrides` says otherwise. A `result`
    /// of null is dropped, as the real `error_max_turns` result has no `result` field.
    pub fn result(&mut self, overrides: Value) -> io::Result<()> {
        match self.kind {
            AgentKind::Codex => return self.codex_result(&overrides),
            AgentKind::Gemini => return self.gemini_result(&overrides),
            AgentKind::Claude => {}
        }
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut event: Map<String, Value> = json!({
            "type": "result",
            "subtype": "success",
            "is_error": false,
            "duration_ms": elapsed,
            "duration_api_ms": elapsed,
            "num_turns": 3,
            "result": "",
            "stop_reason": "end_turn",
            "session_id": self.session_id,
            "total_cost_usd": self.cost_usd,
            "usage": {"input_tokens": 300, "output_tokens": 30,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            "modelUsage": {},
            "permission_denials": self.denials,
            "terminal_reason": "completed",
            "api_error_status": null,
            "uuid": self.ids.uuid(),
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        if let Value::Object(overrides) = overrides {
            event.extend(overrides);
        }
        if event.get("result") == Some(&Value::Null) {
            event.remove("result");
        }
        self.line(&Value::Object(event))
    }
}

impl Emitter {
    /// A Codex `command_execution` item, started and completed.
    pub fn command(&mut self, command: &str, output: &str, exit_code: i32) -> io::Result<()> {
        let id = self.item();
        let started = json!({"type": "item.started", "item": {"id": id,
            "type": "command_execution", "command": command, "aggregated_output": "",
            "exit_code": null, "status": "in_progress"}});
        self.line(&started)?;
        let status = if exit_code == 0 {
            "completed"
        } else {
            "failed"
        };
        let done = json!({"type": "item.completed", "item": {"id": id,
            "type": "command_execution", "command": command, "aggregated_output": output,
            "exit_code": exit_code, "status": status}});
        self.line(&done)
    }

    /// A shell command that failed with `output`, where the CLI reports commands (Claude's
    /// failure is told by its result text instead).
    pub fn failed_command(&mut self, command: &str, output: &str) -> io::Result<()> {
        match self.kind {
            AgentKind::Claude => Ok(()),
            AgentKind::Codex => self.command(command, output, 101),
            AgentKind::Gemini => {
                let id = format!("run_shell_command__run_shell_command_{}", self.ids.hex(12));
                let call = json!({"type": "tool_use", "timestamp": timestamp(),
                    "tool_name": "run_shell_command", "tool_id": id,
                    "parameters": {"command": command}});
                self.line(&call)?;
                let answer = json!({"type": "tool_result", "timestamp": timestamp(),
                    "tool_id": id, "status": "error", "output": output,
                    "error": {"type": "shell_error", "message": "exit code 101"}});
                self.line(&answer)
            }
        }
    }

    /// `turn.completed` with token usage, or `turn.failed` with only a message, as the real
    /// CLI ends a turn.
    fn codex_result(&mut self, overrides: &Value) -> io::Result<()> {
        if overrides.get("is_error").and_then(Value::as_bool) == Some(true) {
            let message = failure_text(overrides);
            self.line(&json!({"type": "error", "message": message}))?;
            return self.line(&json!({"type": "turn.failed", "error": {"message": message}}));
        }
        self.line(
            &json!({"type": "turn.completed", "usage": {"input_tokens": 1000,
            "cached_input_tokens": 0, "cache_write_input_tokens": 0, "output_tokens": 50,
            "reasoning_output_tokens": 0}}),
        )
    }

    /// Gemini's `result` with per-model token stats.
    fn gemini_result(&mut self, overrides: &Value) -> io::Result<()> {
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let model = if self.model == "auto" {
            "gemini-fake"
        } else {
            &self.model
        };
        let stats = json!({"total_tokens": 1050, "input_tokens": 1000, "output_tokens": 50,
            "cached": 0, "input": 1000, "duration_ms": elapsed, "tool_calls": 0,
            "models": {model: {"total_tokens": 1050, "input_tokens": 1000,
                "output_tokens": 50, "cached": 0, "input": 1000}}});
        let event = if overrides.get("is_error").and_then(Value::as_bool) == Some(true) {
            let kind =
                if overrides.get("subtype").and_then(Value::as_str) == Some("error_max_turns") {
                    "FatalTurnLimitedError"
                } else {
                    "unknown"
                };
            json!({"type": "result", "timestamp": timestamp(), "status": "error",
                "error": {"type": kind, "message": failure_text(overrides)}, "stats": stats})
        } else {
            json!({"type": "result", "timestamp": timestamp(), "status": "success",
                "stats": stats})
        };
        self.line(&event)
    }
}

/// The message of a failed result: its `result`, else its `errors`.
fn failure_text(overrides: &Value) -> String {
    match overrides.get("result").and_then(Value::as_str) {
        Some(text) => text.to_string(),
        None => overrides
            .get("errors")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
            .and_then(Value::as_str)
            .unwrap_or("failed")
            .to_string(),
    }
}

/// What changes from one flood line to the next: a token in the line's template, filled in
/// as each line is written. Ids and numbers need no JSON escaping.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hole {
    Number,
    MessageId,
    Uuid,
    Item,
}

impl Hole {
    const ALL: [Hole; 4] = [Hole::Number, Hole::MessageId, Hole::Uuid, Hole::Item];

    fn token(self) -> &'static str {
        match self {
            Hole::Number => "@flood-number@",
            Hole::MessageId => "@flood-message-id@",
            Hole::Uuid => "@flood-uuid@",
            Hole::Item => "@flood-item@",
        }
    }

    /// The template as literal text, each piece followed by the hole after it (none after
    /// the last).
    fn split(template: &str) -> Vec<(&str, Option<Hole>)> {
        let mut parts = Vec::new();
        let mut rest = template;
        loop {
            let next = Hole::ALL
                .iter()
                .filter_map(|&h| rest.find(h.token()).map(|at| (at, h)))
                .min_by_key(|&(at, _)| at);
            match next {
                Some((at, hole)) => {
                    parts.push((&rest[..at], Some(hole)));
                    rest = &rest[at + hole.token().len()..];
                }
                None => {
                    parts.push((rest, None));
                    return parts;
                }
            }
        }
    }
}

fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Random-looking ids without a crate: a xorshift seeded from the clock and the pid, so two
/// invocations get different session ids as the real CLI's do.
struct IdSource(u64);

impl IdSource {
    fn new() -> IdSource {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        IdSource(nanos ^ (u64::from(std::process::id()) << 32) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn hex(&mut self, len: usize) -> String {
        let mut s = String::with_capacity(len + 16);
        while s.len() < len {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(len);
        s
    }

    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Every kind's flood is lines of JSON in that kind's shape, numbered in order, each
    /// with ids of its own and no hole left unfilled.
    #[test]
    fn a_flood_is_numbered_events_of_the_kinds_shape_with_fresh_ids() {
        for kind in [AgentKind::Claude, AgentKind::Codex, AgentKind::Gemini] {
            let buf = Shared::default();
            let mut out = Emitter::new(kind, Box::new(buf.clone()), "m\"odel", "/w", 0.0);
            out.flood(20_000).expect("flood");
            let bytes = buf.0.lock().expect("lock").clone();
            let text = String::from_utf8(bytes).expect("utf-8");
            assert!(
                text.len() >= 20_000 && !text.contains("@flood-"),
                "{kind:?}"
            );
            let mut ids = std::collections::HashSet::new();
            for (i, line) in text.lines().enumerate() {
                let event: Value = serde_json::from_str(line).expect("a JSON line");
                let (said, id) = match kind {
                    AgentKind::Claude => (&event["message"]["content"][0]["text"], &event["uuid"]),
                    AgentKind::Codex => (&event["item"]["text"], &event["item"]["id"]),
                    AgentKind::Gemini => (&event["content"], &Value::Null),
                };
                let said = said.as_str().unwrap_or_default();
                assert!(
                    said.starts_with(&format!("flood line {i}: lorem")),
                    "{event}"
                );
                assert!(ids.insert(id.to_string()) || id.is_null(), "{event}");
                if kind == AgentKind::Claude {
                    assert_eq!(event["message"]["model"], "m\"odel");
                }
            }
            assert!(text.lines().count() > 10, "{kind:?}");
        }
    }
}
