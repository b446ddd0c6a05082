//! Splits a byte stream into lines with bounded memory, for the JSON-lines readers.

use crate::stream::MAX_LINE_BYTES;

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

/// A JSON-lines reader's event handler.
pub trait Events {
    fn summary_mut(&mut self) -> &mut crate::stream::StreamSummary;
    fn event(&mut self, event: &serde_json::Value);
}

/// Counts `line` and hands it to `target` when it is a JSON object; anything else (too long,
/// not JSON) is counted malformed and skipped.
pub fn dispatch(target: &mut impl Events, line: Option<&str>) {
    let Some(line) = line else {
        let summary = target.summary_mut();
        summary.lines += 1;
        summary.malformed_lines += 1;
        return;
    };
    if line.trim().is_empty() {
        return;
    }
    target.summary_mut().lines += 1;
    match object(line) {
        Some(event) => target.event(&event),
        None => target.summary_mut().malformed_lines += 1,
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
