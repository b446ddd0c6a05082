//! Incremental reader of the agent's `--output-format stream-json` output (docs/lifecycle.md, docs/interfaces.md).
//!
//! [`StreamReader`] is fed raw stdout bytes in arbitrary chunks and keeps only what the
//! runner needs to judge an attempt ([`StreamSummary`]): the last `result` event, the session
//! id, API errors the CLI reported, and usage-window exhaustion from `rate_limit_event`s. Its
//! memory is bounded whatever the input: a line longer than [`MAX_LINE_BYTES`] is skipped
//! (counted malformed) without ever being held whole.
//!
//! Tolerated input: unknown event types, blank lines, non-UTF-8 bytes (decoded lossily), a
//! truncated last line, a `rate_limit_event` written into the middle of another line (the CLI
//! does this, splitting the host line at the event's own newline), and the single-JSON
//! output format (one `result` object, possibly pretty-printed over many lines).
//!
//! [`soft_failure`] decides whether an exit-0 result still says the step did not succeed.

use serde_json::Value;

mod events;
mod soft_failure;

pub(crate) use events::truncate;
use events::{
    epoch_seconds, extract_rate_limit_events, message_text, parse_object, parse_result, str_field,
    u64_field,
};
pub use soft_failure::{soft_failure, BENIGN_DENIED_TOOLS};

/// Longest line kept for parsing. Real lines are a few KiB (the init line is the largest);
/// anything longer is a tool dump the runner has no use for.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Longest single-JSON (non-stream) output kept for the fallback parse.
pub const MAX_WHOLE_BYTES: usize = 4 * 1024 * 1024;
/// Upper bound of [`StreamReader::buffered_bytes`] at any time.
pub const MAX_BUFFERED_BYTES: usize = MAX_LINE_BYTES + MAX_WHOLE_BYTES + 2 * MAX_FRAGMENT_BYTES;
/// Longest fragment of a host line kept while waiting for its continuation after a spliced
/// `rate_limit_event`.
const MAX_FRAGMENT_BYTES: usize = 1024 * 1024;
/// Capacity above which an emptied buffer is released instead of reused, so one large line
/// does not pin megabytes for the rest of a long run.
const RETAIN_CAPACITY: usize = 64 * 1024;
/// `result` text kept for diagnostics.
pub const MAX_RESULT_TEXT: usize = 4 * 1024;
const MAX_ASSISTANT_ERRORS: usize = 16;
const MAX_API_ERROR_TEXT: usize = 1024;

const RATE_LIMIT_NEEDLES: [&str; 2] = [
    "{\"type\":\"rate_limit_event\"",
    "{\"type\": \"rate_limit_event\"",
];

/// The final `result` event of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResultEvent {
    /// `subtype` of the result (`success`, `error_max_turns`, `error_during_execution`, …).
    pub subtype: String,
    /// The CLI's own verdict that the run failed.
    pub is_error: bool,
    /// Why the CLI stopped, when it says (`terminal_reason`).
    pub terminal_reason: Option<String>,
    /// The HTTP status of the API error that ended the run, if any.
    pub api_error_status: Option<u16>,
    /// `result`, or the `errors` array joined by newlines (max-turns results carry no
    /// `result`), truncated to [`MAX_RESULT_TEXT`] bytes.
    pub result_text: Option<String>,
    /// What the CLI reports the run cost, in US dollars.
    pub total_cost_usd: Option<f64>,
    /// Model turns the run took.
    pub num_turns: Option<u32>,
    /// The run's duration as the CLI measured it, in milliseconds.
    pub duration_ms: Option<u64>,
    /// The session id, to resume or find the session later.
    pub session_id: Option<String>,
    /// Tool uses the CLI refused for lack of permission.
    pub permission_denials: Vec<PermissionDenial>,
    /// `api_error_type`, e.g. `overloaded_error`, `authentication_error`.
    pub api_error_type: Option<String>,
    /// `api_error`: the CLI's own kind of API failure, e.g. `connection_failed` (the model
    /// could not be reached at all, no HTTP status).
    pub api_error: Option<String>,
}

/// One entry of the result's `permission_denials`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionDenial {
    /// The refused tool (`Write`, `Bash`, …).
    pub tool_name: String,
    /// The file the tool would have touched (`file_path`, `notebook_path` or `path` of the
    /// tool input); `None` for tools without one, such as Bash.
    pub path: Option<String>,
}

/// A `system/api_retry` event: the CLI is retrying an API error itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiRetry {
    /// The CLI's retry number.
    pub attempt: Option<u32>,
    /// The HTTP status it is retrying.
    pub error_status: Option<u16>,
    /// The error text it reported.
    pub error: Option<String>,
}

/// What the runner keeps from one attempt's output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamSummary {
    /// The last `type:"result"` event.
    pub result: Option<ResultEvent>,
    /// From `system/init`, overridden by the result's.
    pub session_id: Option<String>,
    /// `error` fields of assistant messages (e.g. `authentication_failed`, `rate_limit`),
    /// deduplicated, in order of appearance, at most 16.
    pub assistant_errors: Vec<String>,
    /// Text of the last synthetic API-error assistant message (`is_api_error_message`),
    /// e.g. `Not logged in · Please run /login`. Truncated to 1 KiB.
    pub api_error_message: Option<String>,
    /// `api_error_status` of the last API-error assistant message.
    pub api_error_status: Option<u16>,
    /// `api_error` of the last API-error assistant message (`connection_failed`, …).
    pub api_error_kind: Option<String>,
    /// The last `system/api_retry` event: tells what the CLI was fighting if it was killed
    /// before it printed a result.
    pub last_api_retry: Option<ApiRetry>,
    /// Epoch seconds from the last `rate_limit_event` whose window was exhausted
    /// (`status: "rejected"`), cleared by a later event that allows requests again.
    pub quota_resets_at: Option<i64>,
    /// Whether any `rate_limit_event` was seen, exhausted or not.
    pub saw_rate_limit_event: bool,
    /// Assistant turns so far: assistant events with a new message id (the CLI splits one
    /// message into an event per content block).
    pub turns: u32,
    /// The name of the last tool the agent called.
    pub last_tool: Option<String>,
    /// Tool calls the agent made (counted by the Codex and Gemini readers; a turn there).
    pub tool_calls: u32,
    /// Tokens by model, from CLIs that report tokens rather than dollars.
    pub tokens: Vec<crate::agent::tokens::ModelTokens>,
    /// The runner stopped the agent because its tool calls passed this `maxTurns`.
    pub turn_limit: Option<u32>,
    /// The CLI kept reconnecting for want of a network or credentials (its message); the
    /// runner stopped it rather than wait for the idle timeout.
    pub offline: Option<String>,
    /// Before it went [`StreamSummary::offline`], the CLI had an answer that refused it (an
    /// HTTP error, a proxy's refusal): credentials or a gate, not the network alone.
    pub refused_before_offline: bool,
    /// The CLI stopped a loop of identical calls itself and still reported success.
    pub loop_detected: Option<String>,
    /// Tools the agent called that the CLI did not offer (nothing ran).
    pub unavailable_tools: Vec<String>,
    /// The runner stopped the agent because the running cost of its tokens reached the
    /// money the attempt was given.
    pub money_reached: Option<MoneyReached>,
    /// Non-blank lines seen (including spliced fragments).
    pub lines: u64,
    /// Lines that were not JSON (after every recovery), or longer than [`MAX_LINE_BYTES`].
    pub malformed_lines: u64,
}

/// The running cost of an attempt reached the money it was given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MoneyReached {
    /// What the attempt's tokens cost when it was stopped, in micro-dollars.
    pub spent_micros: u64,
    /// What the attempt was given, in micro-dollars.
    pub limit_micros: u64,
}

/// Why an exit-0 result still failed (docs/lifecycle.md "soft failure").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SoftFailure {
    /// `subtype` is `error_*` (e.g. `error_max_turns`).
    ErrorSubtype(String),
    /// `is_error: true` under a non-error subtype (API failures).
    IsError,
    /// Serious permission denials; the names of the denied tools.
    PermissionDenied(Vec<String>),
}

/// Incremental stream-json reader with bounded memory.
#[derive(Debug)]
pub struct StreamReader {
    summary: StreamSummary,
    /// The current, unterminated line (at most [`MAX_LINE_BYTES`]).
    line: Vec<u8>,
    /// The current line grew past the cap: drop bytes until the next newline.
    skipping_long_line: bool,
    /// Every byte so far, kept only while no line has parsed and the total is under
    /// [`MAX_WHOLE_BYTES`], for the single-JSON (possibly pretty-printed) format.
    whole: Option<Vec<u8>>,
    /// The head of a host line cut by a spliced `rate_limit_event`, waiting for its tail.
    fragment: Option<String>,
    /// Id of the last assistant message, to count turns rather than content blocks.
    last_message_id: Option<String>,
    /// The tokens already counted for the last assistant message: the CLI repeats a
    /// message's usage on each of its content blocks, which must count once.
    last_message_tokens: crate::agent::tokens::ModelTokens,
}

impl Default for StreamReader {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamReader {
    /// A reader that has seen no line yet.
    pub fn new() -> Self {
        StreamReader {
            summary: StreamSummary::default(),
            line: Vec::new(),
            skipping_long_line: false,
            whole: Some(Vec::new()),
            fragment: None,
            last_message_id: None,
            last_message_tokens: crate::agent::tokens::ModelTokens::default(),
        }
    }

    /// Feed the next chunk of stdout. Lines may be split anywhere, including inside a
    /// multi-byte UTF-8 character.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        self.keep_whole(bytes);
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n') {
                Some(newline) => {
                    self.append_to_line(&bytes[..newline]);
                    self.end_line();
                    bytes = &bytes[newline + 1..];
                }
                None => {
                    self.append_to_line(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// Flush a partial last line and return what was learnt.
    pub fn finish(mut self) -> StreamSummary {
        if !self.line.is_empty() || self.skipping_long_line {
            self.end_line();
        }
        if let Some(fragment) = self.fragment.take() {
            // A host line whose tail never came: it is lost.
            if !fragment.trim().is_empty() {
                self.summary.malformed_lines += 1;
            }
        }
        if self.summary.result.is_none() {
            if let Some(whole) = self.whole.take() {
                self.parse_whole(&whole);
            }
        }
        self.summary
    }

    /// What has been learnt so far (the result may still change).
    pub fn summary(&self) -> &StreamSummary {
        &self.summary
    }

    /// Bytes currently held in buffers (capacity, not length). Never above
    /// [`MAX_BUFFERED_BYTES`].
    pub fn buffered_bytes(&self) -> usize {
        self.line.capacity()
            + self.whole.as_ref().map_or(0, Vec::capacity)
            + self.fragment.as_ref().map_or(0, String::capacity)
    }

    fn keep_whole(&mut self, bytes: &[u8]) {
        if let Some(whole) = &mut self.whole {
            if whole.len() + bytes.len() > MAX_WHOLE_BYTES {
                self.whole = None;
            } else {
                if whole.capacity() < whole.len() + bytes.len() {
                    let wanted = (whole.len() + bytes.len()).max(whole.capacity() * 2);
                    whole.reserve_exact(wanted.min(MAX_WHOLE_BYTES) - whole.len());
                }
                whole.extend_from_slice(bytes);
            }
        }
    }

    fn append_to_line(&mut self, bytes: &[u8]) {
        if self.skipping_long_line {
            return;
        }
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            self.skipping_long_line = true;
            self.line = Vec::new();
            // Single-JSON output too long for one line is too long for the fallback as well.
            self.whole = None;
            return;
        }
        if self.line.capacity() < self.line.len() + bytes.len() {
            // Grow geometrically but never past the cap, so capacity stays bounded.
            let wanted = (self.line.len() + bytes.len()).max(self.line.capacity() * 2);
            self.line
                .reserve_exact(wanted.min(MAX_LINE_BYTES) - self.line.len());
        }
        self.line.extend_from_slice(bytes);
    }

    fn end_line(&mut self) {
        if self.skipping_long_line {
            self.skipping_long_line = false;
            self.summary.lines += 1;
            self.summary.malformed_lines += 1;
            // The tail of a cut host line cannot be inside a line this long and still be
            // useful; forget it.
            self.fragment = None;
        } else {
            let text = String::from_utf8_lossy(&self.line).into_owned();
            self.process_line(&text);
        }
        if self.line.capacity() > RETAIN_CAPACITY {
            self.line = Vec::new();
        } else {
            self.line.clear();
        }
    }

    fn process_line(&mut self, raw: &str) {
        let line = raw.trim();
        if line.is_empty() {
            return;
        }
        self.summary.lines += 1;
        if let Some(value) = parse_object(line) {
            // A whole line parsed: if a cut host line was waiting, its tail is not coming.
            if self.fragment.take().is_some() {
                self.summary.malformed_lines += 1;
            }
            self.handle_event(&value);
            return;
        }
        let (events, rest, ended_with_event) = extract_rate_limit_events(line);
        for event in &events {
            self.handle_event(event);
        }
        let rest = rest.trim();
        if rest.is_empty() {
            return;
        }
        if let Some(head) = self.fragment.take() {
            let joined = format!("{head}{rest}");
            if let Some(value) = parse_object(&joined) {
                self.handle_event(&value);
                return;
            }
            self.summary.malformed_lines += 1;
        }
        if !events.is_empty() {
            if let Some(value) = parse_object(rest) {
                self.handle_event(&value);
                return;
            }
            if ended_with_event && rest.len() <= MAX_FRAGMENT_BYTES {
                // The event's own newline cut the host line: its tail is the next line.
                self.fragment = Some(rest.to_string());
                return;
            }
        }
        self.summary.malformed_lines += 1;
    }

    fn parse_whole(&mut self, whole: &[u8]) {
        let text = String::from_utf8_lossy(whole);
        if let Some(value) = parse_object(text.trim()) {
            if value.get("type").and_then(Value::as_str) == Some("result") {
                // The lines counted malformed were the pieces of this one object.
                self.summary.lines = 1;
                self.summary.malformed_lines = 0;
                self.handle_event(&value);
            }
        }
    }

    fn handle_event(&mut self, event: &Value) {
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            return;
        };
        // A typed event proves this is a stream: the single-JSON fallback is not needed.
        self.whole = None;
        match kind {
            "system" => self.handle_system(event),
            "assistant" => self.handle_assistant(event),
            "result" => {
                let result = parse_result(event);
                if result.session_id.is_some() {
                    self.summary.session_id.clone_from(&result.session_id);
                }
                self.summary.result = Some(result);
            }
            "rate_limit_event" => self.handle_rate_limit(event),
            _ => {}
        }
    }

    fn handle_system(&mut self, event: &Value) {
        match event.get("subtype").and_then(Value::as_str) {
            Some("init") => {
                if let Some(id) = str_field(event, "session_id") {
                    self.summary.session_id = Some(id);
                }
            }
            Some("api_retry") => {
                self.summary.last_api_retry = Some(ApiRetry {
                    attempt: u64_field(event, "attempt").and_then(|n| u32::try_from(n).ok()),
                    error_status: u64_field(event, "error_status")
                        .and_then(|n| u16::try_from(n).ok()),
                    error: str_field(event, "error"),
                });
            }
            _ => {}
        }
    }

    fn handle_assistant(&mut self, event: &Value) {
        let message = event.get("message");
        let id = message.and_then(|m| m.get("id")).and_then(Value::as_str);
        let new_message = id.is_none() || id != self.last_message_id.as_deref();
        if new_message {
            self.summary.turns = self.summary.turns.saturating_add(1);
            self.last_message_id = id.map(|id| truncate(id, 128));
            self.last_message_tokens = crate::agent::tokens::ModelTokens::default();
        }
        if let Some(m) = message {
            self.count_usage(m);
        }
        if let Some(blocks) = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        {
            let tool = blocks.iter().rev().find_map(|b| {
                (b.get("type").and_then(Value::as_str) == Some("tool_use"))
                    .then(|| b.get("name").and_then(Value::as_str))
                    .flatten()
            });
            if let Some(name) = tool {
                self.summary.last_tool = Some(truncate(name, 64));
            }
        }
        if let Some(error) = str_field(event, "error") {
            let errors = &mut self.summary.assistant_errors;
            if !errors.contains(&error) && errors.len() < MAX_ASSISTANT_ERRORS {
                errors.push(truncate(&error, 200));
            }
        }
        let api_error = event
            .get("is_api_error_message")
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || event
                .get("message")
                .and_then(|m| m.get("model"))
                .and_then(Value::as_str)
                == Some("<synthetic>");
        if api_error {
            let text = message_text(event);
            if !text.is_empty() {
                self.summary.api_error_message = Some(truncate(&text, MAX_API_ERROR_TEXT));
            }
            if let Some(status) =
                u64_field(event, "api_error_status").and_then(|n| u16::try_from(n).ok())
            {
                self.summary.api_error_status = Some(status);
            }
            if let Some(kind) = str_field(event, "api_error") {
                self.summary.api_error_kind = Some(truncate(&kind, 64));
            }
        }
    }

    /// Adds what an assistant message's `usage` says beyond what this message already
    /// counted (its content blocks repeat it, possibly growing), under the message's model.
    fn count_usage(&mut self, message: &Value) {
        let Some(usage) = message.get("usage") else {
            return;
        };
        let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| *m != "<synthetic>")
            .unwrap_or("");
        let (read, write) = (
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        );
        let now = crate::agent::tokens::ModelTokens {
            model: truncate(model, 128),
            // Claude reports the uncached input apart; the table's `input` includes the
            // cache reads, as Codex and Gemini report it.
            input: n("input_tokens").saturating_add(read),
            cached_input: read,
            cache_write: write,
            output: n("output_tokens"),
        };
        let before = &self.last_message_tokens;
        let delta = crate::agent::tokens::ModelTokens {
            model: now.model.clone(),
            input: now.input.saturating_sub(before.input),
            cached_input: now.cached_input.saturating_sub(before.cached_input),
            cache_write: now.cache_write.saturating_sub(before.cache_write),
            output: now.output.saturating_sub(before.output),
        };
        self.last_message_tokens = crate::agent::tokens::ModelTokens {
            model: now.model,
            input: now.input.max(before.input),
            cached_input: now.cached_input.max(before.cached_input),
            cache_write: now.cache_write.max(before.cache_write),
            output: now.output.max(before.output),
        };
        let tokens = &mut self.summary.tokens;
        match tokens.iter().position(|t| t.model == delta.model) {
            Some(i) => {
                let t = &mut tokens[i];
                t.input = t.input.saturating_add(delta.input);
                t.cached_input = t.cached_input.saturating_add(delta.cached_input);
                t.cache_write = t.cache_write.saturating_add(delta.cache_write);
                t.output = t.output.saturating_add(delta.output);
            }
            // A handful of models at most; bounded all the same.
            None if tokens.len() < 16 => tokens.push(delta),
            None => {}
        }
    }

    fn handle_rate_limit(&mut self, event: &Value) {
        self.summary.saw_rate_limit_event = true;
        let info = event.get("rate_limit_info").unwrap_or(event);
        let status = info.get("status").and_then(Value::as_str).unwrap_or("");
        let overage_rejected = info.get("isUsingOverage").and_then(Value::as_bool) == Some(true)
            && info.get("overageStatus").and_then(Value::as_str) == Some("rejected");
        if status == "rejected" || overage_rejected {
            let resets_at = info
                .get("resetsAt")
                .or_else(|| event.get("resetsAt"))
                .and_then(epoch_seconds);
            // A rejection without a reset time still means the window is exhausted; keep
            // an earlier known reset time rather than forgetting it.
            if resets_at.is_some() {
                self.summary.quota_resets_at = resets_at;
            }
        } else if status.starts_with("allowed") {
            self.summary.quota_resets_at = None;
        }
    }
}

#[cfg(test)]
mod tests;
