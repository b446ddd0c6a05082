//! Splits a byte stream into lines with bounded memory, for the JSON-lines readers.

use super::Stop;
use crate::agent::stream::{truncate, StreamSummary, MAX_LINE_BYTES};

/// Capacity above which an emptied buffer is released instead of reused.
const RETAIN_CAPACITY: usize = 64 * 1024;

/// The current unterminated line; a line longer than [`MAX_LINE_BYTES`] is dropped whole
/// (reported as `None`) without ever being held.
#[derive(Debug, Default)]
pub struct Lines {
    line: Vec<u8>,
    skipping: bool,
}

impl Lines {
    /// Calls `on_line` for every line completed by `bytes`: `Some(text)` (lossy UTF-8), or
    /// `None` for a line that was too long to keep.
    pub fn feed(&mut self, mut bytes: &[u8], on_line: &mut dyn FnMut(Option<&str>)) {
        while !bytes.is_empty() {
            match bytes.iter().position(|&b| b == b'\n') {
                Some(newline) => {
                    self.append(&bytes[..newline]);
                    self.end(on_line);
                    bytes = &bytes[newline + 1..];
                }
                None => {
                    self.append(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// Ends a last line that had no newline.
    pub fn finish(&mut self, on_line: &mut dyn FnMut(Option<&str>)) {
        if !self.line.is_empty() || self.skipping {
            self.end(on_line);
        }
    }

    /// Bytes held (capacity).
    pub fn buffered_bytes(&self) -> usize {
        self.line.capacity()
    }

    fn append(&mut self, bytes: &[u8]) {
        if self.skipping {
            return;
        }
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            self.skipping = true;
            self.line = Vec::new();
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn end(&mut self, on_line: &mut dyn FnMut(Option<&str>)) {
        if self.skipping {
            self.skipping = false;
            on_line(None);
        } else {
            let text = String::from_utf8_lossy(&self.line);
            on_line(Some(&text));
        }
        if self.line.capacity() > RETAIN_CAPACITY {
            self.line = Vec::new();
        } else {
            self.line.clear();
        }
    }
}

/// What every JSON-lines reader keeps besides its CLI's own state: the summary so far, the
/// step's turn limit and why the agent should stop.
#[derive(Debug, Default)]
pub struct Progress {
    /// What the output said so far.
    pub summary: StreamSummary,
    /// Tool calls allowed before the runner stops the agent.
    pub max_turns: u32,
    /// Set once the agent should be stopped.
    pub stop: Option<Stop>,
}

impl Progress {
    /// One tool call (`name`: the tool, when the event says): counted as a turn, and past
    /// `max_turns` the agent is asked to stop, since these CLIs have no limit of their own.
    pub fn tool_call(&mut self, name: Option<&str>) {
        let summary = &mut self.summary;
        summary.tool_calls = summary.tool_calls.saturating_add(1);
        summary.turns = summary.tool_calls;
        if let Some(name) = name {
            summary.last_tool = Some(truncate(name, 64));
        }
        if summary.tool_calls > self.max_turns && self.stop.is_none() {
            summary.turn_limit = Some(self.max_turns);
            self.stop = Some(Stop::TurnLimit);
        }
    }
}

/// A CLI's handler of the JSON objects of its stream.
pub trait Events: Default {
    /// Handles one JSON object of the stream, noting what it says in `p`.
    fn event(&mut self, p: &mut Progress, event: &serde_json::Value);
    /// Bytes of its own state held (bounded whatever the input).
    fn buffered_bytes(&self) -> usize;
}

/// The incremental reader of a JSON-lines agent stream with flat memory: lines split
/// (overlong ones dropped whole), each JSON object handed to the CLI's handler `E`.
#[derive(Debug)]
pub struct JsonLinesReader<E> {
    lines: Lines,
    progress: Progress,
    events: E,
}

impl<E: Events> JsonLinesReader<E> {
    /// `max_turns`: tool calls allowed before the runner stops the agent.
    pub fn new(max_turns: u32) -> Self {
        JsonLinesReader {
            lines: Lines::default(),
            progress: Progress {
                max_turns,
                ..Progress::default()
            },
            events: E::default(),
        }
    }

    /// Feeds a chunk of stdout; `false` once the agent should be stopped.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        let (events, p) = (&mut self.events, &mut self.progress);
        self.lines
            .feed(bytes, &mut |line| dispatch(events, p, line));
        self.progress.stop.is_none()
    }

    /// What the output said so far.
    pub fn summary(&self) -> &StreamSummary {
        &self.progress.summary
    }

    /// Bytes held in buffers: bounded whatever the input.
    pub fn buffered_bytes(&self) -> usize {
        self.lines.buffered_bytes() + self.events.buffered_bytes()
    }

    /// Reads a last line without a newline and returns what the whole output said.
    pub fn finish(mut self) -> StreamSummary {
        let (events, p) = (&mut self.events, &mut self.progress);
        self.lines.finish(&mut |line| dispatch(events, p, line));
        self.progress.summary
    }
}

/// Counts `line` and hands it to `target` when it is a JSON object; anything else (too long,
/// not JSON) is counted malformed and skipped.
fn dispatch(target: &mut impl Events, p: &mut Progress, line: Option<&str>) {
    let Some(line) = line else {
        p.summary.lines += 1;
        p.summary.malformed_lines += 1;
        return;
    };
    if line.trim().is_empty() {
        return;
    }
    p.summary.lines += 1;
    match object(line) {
        Some(event) => target.event(p, &event),
        None => p.summary.malformed_lines += 1,
    }
}

/// Parses one line as a JSON object; blank lines and non-objects are `None`.
pub fn object(line: &str) -> Option<serde_json::Value> {
    let line = line.trim();
    if !line.starts_with('{') {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .filter(serde_json::Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_anywhere_and_overlong_lines_are_dropped_whole() {
        let mut lines = Lines::default();
        let mut seen: Vec<Option<String>> = Vec::new();
        let mut push = |l: Option<&str>| seen.push(l.map(str::to_string));
        lines.feed(b"ab", &mut push);
        lines.feed(b"c\nd", &mut push);
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        lines.feed(&long, &mut push);
        assert!(lines.buffered_bytes() <= MAX_LINE_BYTES);
        lines.feed(b"\nlast", &mut push);
        lines.finish(&mut push);
        assert_eq!(
            seen,
            [Some("abc".to_string()), None, Some("last".to_string())]
        );
    }
}
