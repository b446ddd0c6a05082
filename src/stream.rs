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
use std::path::{Component, Path, PathBuf};

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
    pub tokens: Vec<crate::agents::ModelTokens>,
    /// The runner stopped the agent because its tool calls passed this `maxTurns`.
    pub turn_limit: Option<u32>,
    /// The CLI kept reconnecting for want of a network or credentials (its message); the
    /// runner stopped it rather than wait for the idle timeout.
    pub offline: Option<String>,
    /// The CLI stopped a loop of identical calls itself and still reported success.
    pub loop_detected: Option<String>,
    /// Tools the agent called that the CLI did not offer (nothing ran).
    pub unavailable_tools: Vec<String>,
    /// Non-blank lines seen (including spliced fragments).
    pub lines: u64,
    /// Lines that were not JSON (after every recovery), or longer than [`MAX_LINE_BYTES`].
    pub malformed_lines: u64,
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
        if id.is_none() || id != self.last_message_id.as_deref() {
            self.summary.turns = self.summary.turns.saturating_add(1);
            self.last_message_id = id.map(|id| truncate(id, 128));
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

/// Parse `text` as one JSON object.
fn parse_object(text: &str) -> Option<Value> {
    if !text.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value) if value.is_object() => Some(value),
        _ => None,
    }
}

/// Find `{"type":"rate_limit_event",...}` objects written into `line`, parse them, and return
/// them with the line minus those objects, and whether the last one ended the line.
fn extract_rate_limit_events(line: &str) -> (Vec<Value>, String, bool) {
    let mut events = Vec::new();
    let mut rest = String::new();
    let mut cursor = 0;
    let mut ended_with_event = false;
    while cursor < line.len() {
        let next = RATE_LIMIT_NEEDLES
            .iter()
            .filter_map(|needle| line[cursor..].find(needle).map(|i| cursor + i))
            .min();
        let Some(start) = next else {
            rest.push_str(&line[cursor..]);
            ended_with_event = false;
            break;
        };
        let mut values = serde_json::Deserializer::from_str(&line[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) if value.is_object() => {
                let end = start + values.byte_offset();
                rest.push_str(&line[cursor..start]);
                events.push(value);
                cursor = end;
                ended_with_event = line[end..].trim().is_empty();
            }
            _ => {
                // Not a complete object (truncated): keep the text, look further on.
                let skip = start + 1;
                rest.push_str(&line[cursor..skip]);
                cursor = skip;
                ended_with_event = false;
            }
        }
    }
    (events, rest, ended_with_event)
}

fn parse_result(event: &Value) -> ResultEvent {
    let result_text = match event.get("result") {
        Some(Value::String(text)) => Some(truncate(text, MAX_RESULT_TEXT)),
        _ => event.get("errors").and_then(Value::as_array).map(|errors| {
            let joined = errors
                .iter()
                .map(|e| match e {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n");
            truncate(&joined, MAX_RESULT_TEXT)
        }),
    };
    let permission_denials = event
        .get("permission_denials")
        .and_then(Value::as_array)
        .map(|denials| denials.iter().map(parse_denial).collect())
        .unwrap_or_default();
    ResultEvent {
        subtype: str_field(event, "subtype").unwrap_or_default(),
        is_error: event
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        terminal_reason: str_field(event, "terminal_reason"),
        api_error_status: u64_field(event, "api_error_status").and_then(|n| u16::try_from(n).ok()),
        result_text,
        total_cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
        num_turns: u64_field(event, "num_turns").and_then(|n| u32::try_from(n).ok()),
        duration_ms: u64_field(event, "duration_ms"),
        session_id: str_field(event, "session_id"),
        permission_denials,
        api_error_type: str_field(event, "api_error_type"),
    }
}

fn parse_denial(denial: &Value) -> PermissionDenial {
    let tool_name = match denial {
        Value::String(name) => name.clone(),
        _ => str_field(denial, "tool_name").unwrap_or_default(),
    };
    let path = denial.get("tool_input").and_then(|input| {
        ["file_path", "notebook_path", "path"]
            .iter()
            .find_map(|key| str_field(input, key))
    });
    PermissionDenial { tool_name, path }
}

/// Concatenated `text` blocks of an assistant message.
fn message_text(event: &Value) -> String {
    let Some(content) = event.get("message").and_then(|m| m.get("content")) else {
        return String::new();
    };
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `resetsAt` as epoch seconds: a number of seconds (or milliseconds, as some versions
/// write), a numeric string, or an RFC 3339 time.
fn epoch_seconds(value: &Value) -> Option<i64> {
    let number = match value {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse::<i64>().ok().or_else(|| {
            chrono::DateTime::parse_from_rfc3339(s.trim())
                .ok()
                .map(|t| t.timestamp())
        }),
        _ => None,
    }?;
    // Seconds since 1970 pass 10^12 only in the year 33658; such values are milliseconds.
    Some(if number > 1_000_000_000_000 {
        number / 1000
    } else {
        number
    })
}

fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn u64_field(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// At most `max` bytes of `text`, cut on a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Tools whose denial is expected in unattended mode and says nothing about the step.
pub const BENIGN_DENIED_TOOLS: [&str; 3] = ["AskUserQuestion", "EnterPlanMode", "ExitPlanMode"];

/// Whether an exit-0 `result` still reports that the step did not succeed (docs/lifecycle.md).
/// Checked in this order: an `error_*` subtype, `is_error`, serious permission denials.
/// A denial is benign when its tool is interactive ([`BENIGN_DENIED_TOOLS`]) or its path lies
/// inside `temp_dir` (compared by path components, so `/tmpfoo` is not inside `/tmp`, and a
/// path with `..` never counts as inside).
pub fn soft_failure(result: &ResultEvent, temp_dir: &Path) -> Option<SoftFailure> {
    if result.subtype.starts_with("error") {
        return Some(SoftFailure::ErrorSubtype(result.subtype.clone()));
    }
    if result.is_error {
        return Some(SoftFailure::IsError);
    }
    let serious: Vec<String> = result
        .permission_denials
        .iter()
        .filter(|d| !is_benign_denial(d, temp_dir))
        .map(|d| d.tool_name.clone())
        .collect();
    if serious.is_empty() {
        None
    } else {
        Some(SoftFailure::PermissionDenied(serious))
    }
}

fn is_benign_denial(denial: &PermissionDenial, temp_dir: &Path) -> bool {
    if BENIGN_DENIED_TOOLS.contains(&denial.tool_name.as_str()) {
        return true;
    }
    denial
        .path
        .as_deref()
        .is_some_and(|path| path_is_under(Path::new(path), temp_dir))
}

/// `path` lies inside `dir`, judged lexically. macOS reaches its temp dir through both
/// `/var/...` and `/private/var/...`, so both spellings count.
fn path_is_under(path: &Path, dir: &Path) -> bool {
    if !path.is_absolute()
        || dir.as_os_str().is_empty()
        || dir == Path::new("/")
        || path.components().any(|c| c == Component::ParentDir)
    {
        return false;
    }
    let dirs = [dir.to_path_buf(), private_alias(dir)];
    dirs.iter()
        .any(|d| path.starts_with(d) && path != d.as_path())
}

fn private_alias(dir: &Path) -> PathBuf {
    match dir.strip_prefix("/private") {
        Ok(rest) => Path::new("/").join(rest),
        Err(_) => Path::new("/private").join(dir.strip_prefix("/").unwrap_or(dir)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> StreamSummary {
        let mut reader = StreamReader::new();
        reader.feed(text.as_bytes());
        reader.finish()
    }

    #[test]
    fn last_result_wins_and_unknown_events_are_ignored() {
        let summary = read(concat!(
            "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\"}\n",
            "\n",
            "{\"type\":\"something_new\",\"x\":1}\n",
            "{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true}\n",
            "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"session_id\":\"s2\",\"num_turns\":2}\n",
        ));
        let result = summary.result.unwrap();
        assert_eq!(result.subtype, "success");
        assert_eq!(result.num_turns, Some(2));
        assert_eq!(summary.session_id.as_deref(), Some("s2"));
        assert_eq!(summary.lines, 4);
        assert_eq!(summary.malformed_lines, 0);
    }

    #[test]
    fn temp_dir_containment_is_by_component() {
        let tmp = Path::new("/tmp");
        assert!(path_is_under(Path::new("/tmp/x/y.txt"), tmp));
        assert!(!path_is_under(Path::new("/tmpfoo/y.txt"), tmp));
        assert!(!path_is_under(Path::new("/tmp/../etc/shadow"), tmp));
        assert!(!path_is_under(Path::new("relative/tmp"), tmp));
        let mac = Path::new("/var/folders/ab/cd/T");
        assert!(path_is_under(
            Path::new("/private/var/folders/ab/cd/T/x"),
            mac
        ));
    }

    #[test]
    fn resets_at_in_milliseconds_or_rfc3339() {
        assert_eq!(
            epoch_seconds(&Value::from(1_778_565_600_000i64)),
            Some(1_778_565_600)
        );
        assert_eq!(
            epoch_seconds(&Value::from("2026-05-12T06:00:00Z")),
            Some(1_778_565_600)
        );
    }
}
