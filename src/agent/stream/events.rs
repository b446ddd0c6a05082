//! Reading single events: the result event, permission denials, message text, and
//! `rate_limit_event`s cut out of the line they were written into.

use super::{PermissionDenial, ResultEvent, MAX_RESULT_TEXT, RATE_LIMIT_NEEDLES};
use serde_json::Value;

/// Parse `text` as one JSON object.
pub(super) fn parse_object(text: &str) -> Option<Value> {
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
pub(super) fn extract_rate_limit_events(line: &str) -> (Vec<Value>, String, bool) {
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

pub(super) fn parse_result(event: &Value) -> ResultEvent {
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
        api_error: str_field(event, "api_error"),
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
pub(super) fn message_text(event: &Value) -> String {
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
pub(super) fn epoch_seconds(value: &Value) -> Option<i64> {
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

pub(super) fn str_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

pub(super) fn u64_field(value: &Value, key: &str) -> Option<u64> {
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
