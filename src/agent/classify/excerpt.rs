//! The words a verdict carries: a headline for the class, the excerpt around the evidence,
//! and text cut to size.

use super::MAX_EXCERPT_CHARS;
use crate::failure::FailureClass;

/// The most telling line for the summary: for tests, the failing test rather than the tally.
pub(super) fn headline_for(class: FailureClass, lines: &[&str], hits: &[usize]) -> String {
    let pick = |pred: &dyn Fn(&str) -> bool| {
        hits.iter()
            .map(|&i| lines[i].trim())
            .find(|l| pred(l))
            .map(str::to_string)
    };
    let chosen = if class == FailureClass::TestAssertion {
        pick(&|l: &str| {
            l.starts_with("---- ")
                || l.starts_with("--- FAIL:")
                || l.starts_with("FAILED ")
                || l.starts_with('●')
                || l.starts_with('✕')
                || l.ends_with("... FAILED")
        })
    } else {
        None
    };
    chosen.unwrap_or_else(|| lines[hits[0]].trim().to_string())
}

/// The evidence lines with two lines of context before and four after, in order.
pub(super) fn context_excerpt(lines: &[String], hits: &[usize]) -> String {
    let mut keep = vec![false; lines.len()];
    for &i in hits {
        let end = (i + 5).min(lines.len());
        keep[i.saturating_sub(2)..end].fill(true);
    }
    let mut out = String::new();
    let mut last_kept = None;
    for (i, line) in lines.iter().enumerate() {
        if !keep[i] {
            continue;
        }
        if last_kept.is_some_and(|l: usize| l + 1 != i) {
            out.push_str("...\n");
        }
        out.push_str(line);
        out.push('\n');
        last_kept = Some(i);
        if out.len() > MAX_EXCERPT_CHARS * 2 {
            break;
        }
    }
    out
}

pub(super) fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

pub(super) fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text.to_string(),
    }
}

pub(super) fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}
