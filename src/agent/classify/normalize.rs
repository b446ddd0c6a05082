//! Normalization of failure text for signatures (docs/classification.md): volatile data (timestamps, home and
//! temp paths, PIDs, UUIDs, hex addresses and ids, durations, session ids, line:column
//! numbers, ANSI colour codes, trailing whitespace) is replaced by placeholders so the same
//! logical failure always normalizes to the same text. Hand-written scanners (no regex crate):
//! every rule starts at a word boundary, so identifiers such as `E0308` or `test_it_42` are
//! never cut into pieces.

mod dates;

use dates::replace_dates;
pub use dates::strip_timestamp_prefix;

/// Placeholders written in place of volatile data.
const TS: &str = "<TS>";
/// Placeholder for a UUID (e.g. a request id).
const UUID: &str = "<UUID>";
/// Placeholder for a `0x…` memory address.
const ADDR: &str = "<ADDR>";
/// Placeholder for a long hexadecimal run such as a commit hash.
const HEX: &str = "<HEX>";
/// Placeholder for a long decimal id.
const ID: &str = "<ID>";
/// Placeholder for a process id.
const PID: &str = "<PID>";
/// Placeholder for a duration such as `1.2s` or `350ms`.
const DUR: &str = "<DUR>";
/// Placeholder for the user's home directory.
const HOME: &str = "<HOME>";
/// Placeholder for the temporary directory.
const TMP: &str = "<TMP>";
/// Placeholder for an agent session id.
const SESSION: &str = "<SESSION>";

/// Replace volatile data in `text` by placeholders; see the module doc.
pub fn normalize(text: &str) -> String {
    let clean = strip_ansi(text);
    let mut out = String::with_capacity(clean.len());
    for line in clean.split(['\n', '\r']) {
        let dated = replace_dates(line);
        out.push_str(normalize_line(&dated).trim_end());
        out.push('\n');
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Remove ANSI escape sequences (CSI colour codes, OSC titles/links) and other control
/// characters except tab and newline.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.peek() {
                Some('[') => {
                    chars.next();
                    // Parameters and intermediates, then one final byte in @..~.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                Some(_) => {
                    chars.next();
                }
                None => {}
            }
        } else if c.is_control() && c != '\n' && c != '\t' && c != '\r' {
            continue;
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Character-level rules.

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '~' | '@' | '+' | '%')
}

struct Scan<'a> {
    s: &'a [char],
}

impl Scan<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.s.get(i).copied()
    }
    fn digits(&self, i: usize) -> usize {
        self.s[i.min(self.s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    }
    fn hex(&self, i: usize) -> usize {
        self.s[i.min(self.s.len())..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit())
            .count()
    }
    fn word_len(&self, i: usize) -> usize {
        self.s[i.min(self.s.len())..]
            .iter()
            .take_while(|&&c| is_word(c))
            .count()
    }
    /// No word character at `i` (end of text counts).
    fn boundary(&self, i: usize) -> bool {
        self.at(i).is_none_or(|c| !is_word(c))
    }
    fn starts_with(&self, i: usize, lit: &str) -> bool {
        (i..).zip(lit.chars()).all(|(j, c)| self.at(j) == Some(c))
    }
    /// 8-4-4-4-12 hex digits.
    fn uuid(&self, i: usize) -> Option<usize> {
        let mut j = i;
        for (k, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
            if self.hex(j) < len {
                return None;
            }
            j += len;
            if k < 4 {
                if self.at(j) != Some('-') {
                    return None;
                }
                j += 1;
            }
        }
        self.boundary(j).then_some(j - i)
    }

    /// `HH:MM:SS` with optional fraction and zone; `HH:MM` alone is left to the line:column
    /// rule.
    fn clock(&self, i: usize) -> Option<usize> {
        let h = self.digits(i);
        if !(1..=2).contains(&h) {
            return None;
        }
        let mut j = i + h;
        for _ in 0..2 {
            if self.at(j) != Some(':') || self.digits(j + 1) != 2 {
                return None;
            }
            j += 3;
        }
        if matches!(self.at(j), Some('.') | Some(',')) && self.digits(j + 1) > 0 {
            j += 1 + self.digits(j + 1);
        }
        j = self.zone(j);
        (self.boundary(j) && self.at(j) != Some(':')).then_some(j - i)
    }

    /// Skip a `Z`, `+01:00` or `+0100` zone suffix.
    fn zone(&self, j: usize) -> usize {
        match self.at(j) {
            Some('Z') if self.boundary(j + 1) => j + 1,
            Some('+') | Some('-') => {
                let d = self.digits(j + 1);
                if d == 4 {
                    j + 5
                } else if d == 2 && self.at(j + 3) == Some(':') && self.digits(j + 4) == 2 {
                    j + 6
                } else {
                    j
                }
            }
            _ => j,
        }
    }

    /// `YYYY-MM-DD`, optionally followed by `T` or a space and a clock.
    fn iso(&self, i: usize) -> Option<usize> {
        if self.digits(i) != 4
            || self.at(i + 4) != Some('-')
            || self.digits(i + 5) != 2
            || self.at(i + 7) != Some('-')
            || self.digits(i + 8) != 2
        {
            return None;
        }
        let mut j = i + 10;
        if matches!(self.at(j), Some('T') | Some(' ')) {
            if let Some(n) = self.clock(j + 1) {
                j += 1 + n;
            }
        }
        (self.boundary(j)).then_some(j - i)
    }

    /// A number followed by a time unit: `12ms`, `0.52s`, `1.234 s`, `3 seconds`, `1m30s`.
    fn duration(&self, i: usize) -> Option<usize> {
        let mut j = i;
        let mut found = false;
        loop {
            let d = self.digits(j);
            if d == 0 {
                break;
            }
            let mut k = j + d;
            if self.at(k) == Some('.') && self.digits(k + 1) > 0 {
                k += 1 + self.digits(k + 1);
            }
            let (spaced, unit_at) = if self.at(k) == Some(' ') {
                (true, k + 1)
            } else {
                (false, k)
            };
            let Some(len) = self.unit(unit_at, spaced) else {
                break;
            };
            j = unit_at + len;
            found = true;
            if spaced {
                break;
            }
        }
        (found && self.boundary(j)).then_some(j - i)
    }

    fn unit(&self, i: usize, spaced: bool) -> Option<usize> {
        const LONG: [&str; 12] = [
            "seconds", "second", "secs", "sec", "minutes", "minute", "mins", "min", "hours",
            "hour", "ms", "s",
        ];
        const SHORT: [&str; 8] = ["ms", "µs", "us", "ns", "s", "m", "h", "hrs"];
        let units: &[&str] = if spaced { &LONG } else { &SHORT };
        let long_first = if spaced { &[][..] } else { &LONG[..10] };
        long_first
            .iter()
            .chain(units.iter())
            .find(|u| {
                self.starts_with(i, u) && {
                    let end = i + u.chars().count();
                    // `1m30s`: a unit may be followed directly by the next number.
                    self.boundary(end)
                        || (!spaced && self.at(end).is_some_and(|c| c.is_ascii_digit()))
                }
            })
            .map(|u| u.chars().count())
    }

    /// An absolute path prefix under a home or temp directory: returns (length, placeholder).
    fn volatile_path(&self, i: usize) -> Option<(usize, &'static str)> {
        let seg = |j: usize| {
            self.s[j.min(self.s.len())..]
                .iter()
                .take_while(|&&c| is_path_char(c) && c != '/')
                .count()
        };
        // Prefix, placeholder, number of variable segments after it.
        const RULES: [(&str, &str, usize); 8] = [
            ("/home/", HOME, 1),
            ("/Users/", HOME, 1),
            ("/private/var/folders/", TMP, 2),
            ("/var/folders/", TMP, 2),
            ("/private/tmp/", TMP, 1),
            ("/var/tmp/", TMP, 1),
            ("/tmp/", TMP, 1),
            ("/root/", HOME, 0),
        ];
        for (prefix, placeholder, segments) in RULES {
            if !self.starts_with(i, prefix) {
                continue;
            }
            let mut j = i + prefix.chars().count();
            for k in 0..segments {
                let n = seg(j);
                if n == 0 {
                    break;
                }
                j += n;
                if k + 1 < segments && self.at(j) == Some('/') {
                    j += 1;
                }
            }
            if placeholder == TMP && segments == 2 {
                // macOS: /var/folders/xx/yyyy/T/<random>
                if self.starts_with(j, "/T/") && seg(j + 3) > 0 {
                    j += 3 + seg(j + 3);
                } else if self.starts_with(j, "/T") {
                    j += 2;
                }
            }
            if prefix == "/root/" {
                j -= 1;
            }
            return Some((j - i, placeholder));
        }
        for (bare, placeholder) in [("/tmp", TMP), ("/root", HOME)] {
            let n = bare.len();
            if self.starts_with(i, bare) && self.at(i + n).is_none_or(|c| !is_path_char(c)) {
                return Some((n, placeholder));
            }
        }
        None
    }
}

fn hexish(part: &[char]) -> bool {
    part.len() >= 7
        && part.iter().all(|c| c.is_ascii_hexdigit())
        && part.iter().any(|c| c.is_ascii_digit())
        && part.iter().any(|c| c.is_ascii_alphabetic())
}

fn idish(part: &[char]) -> bool {
    part.len() >= 20
        && part.iter().all(|c| c.is_ascii_alphanumeric())
        && part.iter().any(|c| c.is_ascii_digit())
        && part.iter().any(|c| c.is_ascii_alphabetic())
}

fn normalize_line(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let s = Scan { s: &chars };
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let word_start = prev.is_none_or(|p| !is_word(p));

        if word_start && is_word(c) {
            if let Some(n) = s.uuid(i) {
                out.push_str(UUID);
                i += n;
                continue;
            }
            if let Some(n) = s.iso(i) {
                out.push_str(TS);
                i += n;
                continue;
            }
            if prev != Some(':') && prev != Some('.') {
                if let Some(n) = s.clock(i) {
                    out.push_str(TS);
                    i += n;
                    continue;
                }
            }
            if s.starts_with(i, "0x") && s.hex(i + 2) > 0 && s.boundary(i + 2 + s.hex(i + 2)) {
                out.push_str(ADDR);
                i += 2 + s.hex(i + 2);
                continue;
            }
            if prev != Some('.') {
                if let Some(n) = s.duration(i) {
                    out.push_str(DUR);
                    i += n;
                    continue;
                }
            }
            // `3:7` at the start of a word (eslint's line:col column).
            let d = s.digits(i);
            if d > 0 && s.at(i + d) == Some(':') && s.digits(i + d + 1) > 0 {
                out.push('N');
                i += d;
                continue;
            }
            let n = s.word_len(i);
            let word: String = chars[i..i + n].iter().collect();
            let lower = word.to_ascii_lowercase();
            out.push_str(&normalize_word(&chars[i..i + n]));
            i += n;
            if let Some(skip) = keyed_value(&s, i, &lower, &mut out) {
                i = skip;
            }
            continue;
        }
        if c == '/' && prev.is_none_or(|p| !is_path_char(p)) {
            if let Some((n, placeholder)) = s.volatile_path(i) {
                out.push_str(placeholder);
                i += n;
                continue;
            }
        }
        // `file.rs:12:5` → `file.rs:N:N`; also ports and `go_test.go:12:`.
        if c == ':' && prev.is_some_and(|p| !p.is_whitespace()) {
            let d = s.digits(i + 1);
            if d > 0 && s.at(i + 1 + d).is_none_or(|c| !c.is_alphanumeric()) {
                out.push_str(":N");
                i += 1 + d;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A word with ids and hashes among its `_`-separated parts replaced.
fn normalize_word(word: &[char]) -> String {
    let mut out = String::with_capacity(word.len());
    for (k, part) in word.split(|&c| c == '_').enumerate() {
        if k > 0 {
            out.push('_');
        }
        if hexish(part) {
            out.push_str(HEX);
        } else if idish(part) {
            out.push_str(ID);
        } else {
            out.extend(part.iter());
        }
    }
    out
}

/// After a keyword (`pid`, `process`, `session_id`, `line`), replace the value that follows.
/// Returns the index after the value, having written separator and placeholder.
fn keyed_value(s: &Scan, i: usize, keyword: &str, out: &mut String) -> Option<usize> {
    let (placeholder, seps): (&str, &[char]) = match keyword {
        "pid" | "ppid" | "process" => (PID, &[' ', ':', '=', '#']),
        "session_id" | "sessionid" | "session" => (SESSION, &[' ', ':', '=', '"', '\'']),
        "line" => ("N", &[' ']),
        _ => return None,
    };
    let mut j = i;
    while j < i + 4 && s.at(j).is_some_and(|c| seps.contains(&c)) {
        j += 1;
    }
    if j == i {
        return None;
    }
    let value_len = if placeholder == SESSION {
        let n = s.s[j..]
            .iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            .count();
        let value = &s.s[j..j + n];
        (n >= 6 && value.iter().any(|c| c.is_ascii_digit())).then_some(n)?
    } else {
        let d = s.digits(j);
        (d > 0 && s.boundary(j + d)).then_some(d)?
    };
    out.extend(s.s[i..j].iter());
    out.push_str(placeholder);
    Some(j + value_len)
}

#[cfg(test)]
mod tests;
