//! What one attempt left to judge by: the verdict a rule reaches, the facts gathered once
//! (stderr, result text, the failed tool output read from the stream), and the text helpers
//! the rules share.

use super::{
    normalize, one_line, signature, truncate_chars, Classified, Observation, MAX_EXCERPT_CHARS,
    MAX_SUMMARY_CHARS,
};
use crate::failure::FailureClass;
use serde_json::Value;

/// A decision before it is turned into a [`Classified`].
pub(super) struct Verdict {
    pub(super) class: FailureClass,
    /// Signature input, before normalization.
    pub(super) evidence: String,
    pub(super) headline: String,
    pub(super) excerpt: String,
    pub(super) wait_hint_secs: Option<u64>,
}

impl Verdict {
    pub(super) fn new(
        class: FailureClass,
        evidence: impl Into<String>,
        excerpt: impl Into<String>,
    ) -> Self {
        let evidence = evidence.into();
        Verdict {
            class,
            headline: one_line(&evidence),
            evidence,
            excerpt: excerpt.into(),
            wait_hint_secs: None,
        }
    }

    pub(super) fn finish(self) -> Classified {
        let headline = self.headline.trim();
        let summary = if headline.is_empty() {
            self.class.name().to_string()
        } else {
            format!("{}: {headline}", self.class.name())
        };
        Classified {
            class: self.class,
            signature: signature(self.class, &normalize(&self.evidence)),
            summary: truncate_chars(&summary, MAX_SUMMARY_CHARS),
            wait_hint_secs: self.wait_hint_secs,
            excerpt: truncate_chars(self.excerpt.trim(), MAX_EXCERPT_CHARS),
        }
    }
}

/// Texts the rules look at, extracted once.
pub(super) struct Facts {
    /// What the CLI itself said: stderr, result text, synthetic API-error message.
    pub(super) cli_lines: Vec<String>,
    /// Output of commands the agent ran (failed ones and Bash), plain-text output, stderr.
    pub(super) tool_lines: Vec<String>,
    /// The part of `tool_lines` that certainly reports a failure: tool results with
    /// `is_error`, plain-text output, stderr. Rules that halt the run (disk full, a missing
    /// command) look only here, so a `grep ENOSPC` over source code cannot halt anything.
    pub(super) failed_tool_lines: Vec<String>,
}

impl Facts {
    pub(super) fn gather(obs: &Observation) -> Facts {
        let mut cli_lines: Vec<String> = lines_of(obs.stderr_tail);
        if let Some(text) = obs
            .summary
            .result
            .as_ref()
            .and_then(|r| r.result_text.as_ref())
        {
            cli_lines.extend(lines_of(text));
        }
        if let Some(text) = &obs.summary.api_error_message {
            cli_lines.extend(lines_of(text));
        }
        let (mut tool_lines, mut failed_tool_lines) = readable_tool_output(obs.output_tail);
        tool_lines.extend(lines_of(obs.stderr_tail));
        failed_tool_lines.extend(lines_of(obs.stderr_tail));
        Facts {
            cli_lines,
            tool_lines,
            failed_tool_lines,
        }
    }

    pub(super) fn cli_text_has(&self, needles: &[&str]) -> Option<&str> {
        find_line(&self.cli_lines, needles)
    }
}

pub(super) fn lines_of(text: &str) -> Vec<String> {
    normalize::strip_ansi(text)
        .split(['\n', '\r'])
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.trim().is_empty())
        .collect()
}

/// The first line containing any of `needles` (ASCII case-insensitive).
pub(super) fn find_line<'a>(lines: &'a [String], needles: &[&str]) -> Option<&'a str> {
    lines
        .iter()
        .find(|line| needles.iter().any(|n| contains_ci(line, n)))
        .map(String::as_str)
}

pub(super) fn contains_ci(haystack: &str, needle: &str) -> bool {
    let needle = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(needle.len().max(1))
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// From a stream-json tail: the output of failed tool calls, Bash output (an agent often pipes
/// a failing test run through `tail`, which hides the failure from `is_error`), and the
/// result text. Output of tools that read files is left out: a failing test *mentioned* in a
/// source file is not a failing test. Lines that are not JSON are plain output (agents other
/// than Claude, or a test harness) unless they look like a cut JSON line.
/// Returns (all of that, the part from failed tool calls and plain text).
fn readable_tool_output(tail: &str) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut failed = Vec::new();
    for raw in tail.split('\n') {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('{') {
            if let Ok(event) = serde_json::from_str::<Value>(line) {
                collect_event_text(&event, &mut out, &mut failed);
                continue;
            }
        }
        if line.contains("\"type\":\"") || line.contains("\",\"") {
            continue;
        }
        out.extend(lines_of(raw));
        failed.extend(lines_of(raw));
    }
    (out, failed)
}

fn collect_event_text(event: &Value, out: &mut Vec<String>, failed_out: &mut Vec<String>) {
    match event.get("type").and_then(Value::as_str) {
        Some("user") => {
            let bash_output = event
                .get("tool_use_result")
                .is_some_and(|r| r.get("stdout").is_some() || r.get("stderr").is_some());
            let blocks = event
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array);
            for block in blocks.into_iter().flatten() {
                if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                    continue;
                }
                let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
                if failed || bash_output {
                    let lines = lines_of(&block_text(block.get("content")));
                    if failed {
                        failed_out.extend(lines.iter().cloned());
                    }
                    out.extend(lines);
                }
            }
        }
        Some("result") => {
            if let Some(text) = event.get("result").and_then(Value::as_str) {
                out.extend(lines_of(text));
            }
        }
        _ => {}
    }
}

fn block_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
