//! Reading the file: lines parsed (in parallel for a large journal), a torn last line told
//! apart from garbage elsewhere, a newer format refused.

use super::{format_1, Contents, JournalError, Line, Record, FORMAT};
use crate::machine::{Effect, Event};
use serde::Deserialize;
use std::fs;
use std::io;
use std::path::Path;

/// Reads and parses the file without modifying it; a missing file is empty.
pub fn read_contents(path: &Path) -> Result<Contents, JournalError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Contents::default()),
        Err(source) => {
            return Err(JournalError::Io {
                path: path.to_path_buf(),
                action: "cannot read the journal",
                source,
            })
        }
    };
    parse(&bytes, path)
}

/// Below this size a journal is parsed on one thread.
const PARALLEL_PARSE_BYTES: usize = 8 << 20;

/// Splits `bytes` into lines. Blank lines are skipped; the last segment is torn when it lacks
/// its newline or does not parse; any other bad line is an error naming its number.
///
/// A large journal (a long unattended run, or `replay` of one) is cut at newlines into one
/// chunk per core, parsed in parallel and joined; the result, errors included, is the one a
/// single pass gives.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Contents, JournalError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if bytes.len() < PARALLEL_PARSE_BYTES || threads < 2 {
        return parse_range(bytes, 0, bytes.len(), path);
    }
    parse_chunked(bytes, path, threads)
}

/// [`parse`] in `threads` chunks cut at newlines.
pub(super) fn parse_chunked(
    bytes: &[u8],
    path: &Path,
    threads: usize,
) -> Result<Contents, JournalError> {
    let mut bounds = vec![0usize];
    for k in 1..threads {
        let at = bytes.len() * k / threads;
        let start = bounds.last().copied().unwrap_or(0).max(at);
        match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(i) if start + i + 1 < bytes.len() => bounds.push(start + i + 1),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    bounds.dedup();
    let parts: Vec<Result<Contents, JournalError>> = std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                s.spawn(move || parse_range(bytes, start, end, path))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(JournalError::Garbage {
                        path: path.to_path_buf(),
                        line: 0,
                        message: "the parser thread failed".into(),
                    })
                })
            })
            .collect()
    });
    // A bad line is rare and must be the first one in file order (a chunk's error may hide
    // an earlier seq error at its boundary): say exactly what one pass says.
    if parts.iter().any(Result::is_err) {
        return parse_range(bytes, 0, bytes.len(), path);
    }
    let mut out = Contents::default();
    for (i, part) in parts.into_iter().flatten().enumerate() {
        if let (Some(prev), Some(first)) = (out.lines.last(), part.lines.first()) {
            if first.seq <= prev.seq {
                // The chunk's first record comes after any blank lines it starts with.
                let blanks = bytes[bounds[i]..]
                    .split(|&b| b == b'\n')
                    .take_while(|l| l.iter().all(u8::is_ascii_whitespace))
                    .count() as u64;
                return Err(JournalError::Inconsistent {
                    path: path.to_path_buf(),
                    line: line_at(bytes, bounds[i]) + blanks,
                    message: format!(
                        "seq {} does not follow seq {} of the previous record",
                        first.seq, prev.seq
                    ),
                });
            }
        }
        out.lines.extend(part.lines);
        if part.valid_len > 0 {
            out.valid_len = part.valid_len;
        }
        out.torn_line = part.torn_line;
    }
    Ok(out)
}

/// The number of the line that starts at byte `offset`. Counted only when a message needs it
/// (an error or a torn line), so that a chunk parsed in parallel need not know the lines
/// before it.
fn line_at(bytes: &[u8], offset: usize) -> u64 {
    1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count() as u64
}

/// [`parse`] of `bytes[start..end]` (`start` is 0 or just after a newline); offsets and line
/// numbers are the whole file's. Only the chunk that ends the file can hold a torn line.
pub(super) fn parse_range(
    bytes: &[u8],
    start: usize,
    end: usize,
    path: &Path,
) -> Result<Contents, JournalError> {
    let mut out = Contents::default();
    let mut offset = start;
    let file = bytes;
    let bytes = &bytes[..end];
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let (text, complete, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], true, offset + i + 1),
            None => (rest, false, bytes.len()),
        };
        // Only the end of the whole file can be torn; a chunk ends right after a newline.
        let is_last = next >= file.len();
        if text.iter().all(u8::is_ascii_whitespace) && complete {
            offset = next;
            out.valid_len = next as u64;
            continue;
        }
        let parsed = parse_line(text);
        if let Some(version) = newer_format(&parsed, text) {
            return Err(JournalError::NewerFormat {
                path: path.to_path_buf(),
                line: line_at(file, offset),
                version,
            });
        }
        match parsed {
            Ok(line) if complete => {
                if let Some(prev) = out.lines.last() {
                    if line.seq <= prev.seq {
                        return Err(JournalError::Inconsistent {
                            path: path.to_path_buf(),
                            line: line_at(file, offset),
                            message: format!(
                                "seq {} does not follow seq {} of the previous record",
                                line.seq, prev.seq
                            ),
                        });
                    }
                }
                out.lines.push(line);
                out.valid_len = next as u64;
            }
            Err(e) if complete => {
                if let Some(kind) = unknown_record(text) {
                    return Err(JournalError::UnknownRecord {
                        path: path.to_path_buf(),
                        line: line_at(file, offset),
                        kind,
                        message: crate::sanitize::one_line(&e.to_string()).into_owned(),
                    });
                }
                if !is_last {
                    return Err(garbage(path, line_at(file, offset), &e, text));
                }
                out.torn_line = Some(torn(file, offset, text, &e.to_string()));
            }
            parsed if is_last => {
                let why = match parsed {
                    Ok(_) => "complete record without its newline (the write was cut off)".into(),
                    Err(e) => e.to_string(),
                };
                out.torn_line = Some(torn(file, offset, text, &why));
            }
            Err(e) => return Err(garbage(path, line_at(file, offset), &e, text)),
            Ok(_) => unreachable!("a complete line is handled above"),
        }
        offset = next;
    }
    Ok(out)
}

/// A line that is a complete JSON object (a write is one `write` of whole lines, so a crash
/// cannot leave one) but no record this runner reads: its `kind`, or what it is. Such a line
/// was written, most likely by a newer runner; cutting it as torn would lose it.
fn unknown_record(text: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(text).ok()?;
    let kind = match value.get("kind") {
        Some(serde_json::Value::String(k)) => format!("kind {:?}", crate::sanitize::one_line(k)),
        Some(_) | None => "a JSON object without a known kind".to_string(),
    };
    value.is_object().then_some(kind)
}

fn garbage(path: &Path, line: u64, e: &serde_json::Error, text: &[u8]) -> JournalError {
    JournalError::Garbage {
        path: path.to_path_buf(),
        line,
        // The parser quotes what it read: escaped, like the preview, so that no byte of the
        // file reaches the terminal raw.
        message: format!(
            "{}: {}",
            crate::sanitize::one_line(&e.to_string()),
            preview(text)
        ),
    }
}

fn torn(file: &[u8], offset: usize, text: &[u8], why: &str) -> String {
    format!(
        "line {} ({} bytes) is torn and was ignored: {}: {}",
        line_at(file, offset),
        text.len(),
        crate::sanitize::one_line(why),
        preview(text)
    )
}

/// The format of a line written by a newer runner, whether or not this runner can parse the
/// rest of it: such a line is neither torn nor garbage.
fn newer_format(parsed: &Result<Line, serde_json::Error>, text: &[u8]) -> Option<u32> {
    #[derive(Deserialize)]
    struct Versioned {
        v: u32,
    }
    let v = match parsed {
        Ok(line) => line.v,
        Err(_) => serde_json::from_slice::<Versioned>(text).ok()?.v,
    };
    (v > FORMAT).then_some(v)
}

/// The fields of the two common kinds of line, `event` and `effect`, read without the
/// buffering that `#[serde(flatten)]` of an internally tagged enum costs (several times the
/// parse time of a large journal).
#[derive(Deserialize)]
struct CommonLine<'a> {
    #[serde(default = "format_1")]
    v: u32,
    seq: u64,
    time: String,
    session: String,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    event: Option<Event>,
    effect: Option<Effect>,
    state: Option<String>,
    said: Option<String>,
}

/// One line as a [`Line`]. An `event` or `effect` line takes the fast path; anything else,
/// or anything the fast path does not read, is parsed as a `Line` itself, so the result and
/// the error message are exactly those of `Line`'s own `Deserialize`.
fn parse_line(text: &[u8]) -> Result<Line, serde_json::Error> {
    if let Ok(common) = serde_json::from_slice::<CommonLine>(text) {
        let record = match (&*common.kind, common.event, common.effect, common.state) {
            ("event", Some(event), _, Some(state)) => Some(Record::Event {
                event,
                state,
                said: common.said,
            }),
            ("effect", _, Some(effect), Some(state)) => Some(Record::Effect { effect, state }),
            _ => None,
        };
        if let Some(record) = record {
            return Ok(Line {
                v: common.v,
                seq: common.seq,
                time: common.time,
                session: common.session,
                record,
            });
        }
    }
    serde_json::from_slice::<Line>(text)
}

fn preview(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    let mut p: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        p.push('…');
    }
    format!("{p:?}")
}
