//! Word-level: dates written with month names (RFC 2822, ctime, syslog) replaced, and a
//! leading timestamp cut off a line.

use super::{Scan, TS};

const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

fn name_in(word: &str, names: &[&str]) -> bool {
    let lower = word.to_ascii_lowercase();
    // Abbreviation or full English name ("Tue", "Tuesday", "Sept").
    lower.len() >= 3
        && names.iter().any(|n| lower.starts_with(n))
        && lower.chars().all(|c| c.is_ascii_alphabetic())
        && lower.len() <= 9
}

fn all_digits(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_day(w: &str) -> bool {
    all_digits(w, 1, 2) && w.parse::<u8>().is_ok_and(|d| (1..=31).contains(&d))
}

fn is_year(w: &str) -> bool {
    all_digits(w, 4, 4)
}

fn is_clock(w: &str) -> bool {
    let (main, _) = w.split_once(['.', ',']).unwrap_or((w, ""));
    let parts: Vec<&str> = main.split(':').collect();
    (2..=3).contains(&parts.len())
        && all_digits(parts[0], 1, 2)
        && parts[1..].iter().all(|p| all_digits(p, 2, 2))
}

fn is_zone(w: &str) -> bool {
    matches!(w, "UTC" | "GMT" | "Z")
        || ((w.starts_with('+') || w.starts_with('-'))
            && (all_digits(&w[1..], 4, 4) || (w.len() == 6 && is_clock(&w[1..]))))
        || ((3..=4).contains(&w.len())
            && w.bytes().all(|b| b.is_ascii_uppercase())
            && w.ends_with('T'))
}

/// The date-ish core of a word: without surrounding brackets and a trailing comma.
fn core(word: &str) -> &str {
    word.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | ','))
}

/// Length in words of a date starting at `words[0]`, if one does.
fn date_len(words: &[&str]) -> Option<usize> {
    let w = |i: usize| words.get(i).map(|w| core(w)).unwrap_or("");
    let mut j = 0;
    if name_in(w(0), &WEEKDAYS) {
        j += 1;
    }
    let mut has_year = false;
    // "21 Nov" (RFC 2822) or "Nov 21" (ctime, syslog).
    let day_month = is_day(w(j)) && name_in(w(j + 1), &MONTHS);
    let month_day = name_in(w(j), &MONTHS) && is_day(w(j + 1));
    if !(day_month || month_day) {
        return None;
    }
    j += 2;
    if is_year(w(j)) {
        j += 1;
        has_year = true;
    }
    let mut has_time = false;
    if is_clock(w(j)) {
        j += 1;
        has_time = true;
        if is_zone(w(j)) {
            j += 1;
        }
        if !has_year && is_year(w(j)) {
            j += 1;
            has_year = true;
        }
    }
    (has_time || has_year).then_some(j)
}

pub(super) fn replace_dates(line: &str) -> String {
    let spans: Vec<(usize, usize)> = word_spans(line);
    let words: Vec<&str> = spans.iter().map(|&(s, e)| &line[s..e]).collect();
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    let mut i = 0;
    while i < words.len() {
        match date_len(&words[i..]) {
            Some(n) => {
                let (start, _) = spans[i];
                let (_, end) = spans[i + n - 1];
                let first = words[i];
                let last = words[i + n - 1];
                let lead = &first[..first.len() - first.trim_start_matches(['[', '(']).len()];
                let trail = &last[last.trim_end_matches([']', ')', ',']).len()..];
                out.push_str(&line[copied..start]);
                out.push_str(lead);
                out.push_str(TS);
                out.push_str(trail);
                copied = end;
                i += n;
            }
            None => i += 1,
        }
    }
    out.push_str(&line[copied..]);
    out
}

fn word_spans(line: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, line.len()));
    }
    spans
}

/// `line` without a leading timestamp (`2024-05-01T10:00:00.123Z `, `[Tue, 21 Nov 2023
/// 11:43:58 +0000] `, `11:43:58 `), as CI logs and loggers prefix every line with one.
pub fn strip_timestamp_prefix(line: &str) -> &str {
    // CI runners and loggers may each add one: strip a few.
    let mut rest = line;
    for _ in 0..3 {
        let next = strip_one_timestamp(rest);
        if next.len() == rest.len() {
            break;
        }
        rest = next;
    }
    rest
}

fn strip_one_timestamp(line: &str) -> &str {
    let mut rest = line.trim_start();
    let bracketed = rest.starts_with('[');
    let inner = if bracketed { &rest[1..] } else { rest };
    let spans = word_spans(inner);
    let words: Vec<&str> = spans.iter().map(|&(s, e)| &inner[s..e]).collect();
    let after = if let Some(n) = date_len(&words) {
        Some(spans[n - 1].1)
    } else {
        let chars: Vec<char> = inner.chars().collect();
        let scan = Scan { s: &chars };
        scan.iso(0)
            .or_else(|| scan.clock(0))
            .map(|n| chars[..n].iter().map(|c| c.len_utf8()).sum())
    };
    if let Some(end) = after {
        let mut tail = &inner[end..];
        // The last date word may carry the closing bracket itself ("+0000]").
        if bracketed && !inner[..end].ends_with(']') {
            match tail.strip_prefix(']') {
                Some(t) => tail = t,
                None => return line,
            }
        }
        rest = tail.strip_prefix(':').unwrap_or(tail).trim_start();
        return rest;
    }
    line
}
