//! How validation talks about what it found: the user's text quoted safely, values
//! described, and the closest known key suggested for a misspelt one.

use super::*;

/// Longest piece of the user's text quoted back in a message.
pub(super) const MAX_ECHO_CHARS: usize = 60;

/// `s` made safe to print: control characters escaped, cut to a readable length.
pub(super) fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_ECHO_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if s.chars().count() > MAX_ECHO_CHARS {
        out.push('…');
    }
    out
}

/// How a JSON value is described in "found ..." messages.
pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {}", describe_str(s)),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A close known key for a misspelt one: same letters in another case, a small edit
/// distance, or the start of a longer key.
pub(super) fn suggest<'k>(unknown: &str, known: &[&'k str]) -> Option<&'k str> {
    let lower = unknown.to_ascii_lowercase();
    if let Some(k) = known.iter().find(|k| k.to_ascii_lowercase() == lower) {
        return Some(k);
    }
    let best = known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_ascii_lowercase()), *k))
        .min_by_key(|(d, _)| *d);
    if let Some((d, k)) = best {
        if d <= 2.max(unknown.chars().count() / 4) {
            return Some(k);
        }
    }
    if unknown.len() >= 4 {
        return known
            .iter()
            .copied()
            .find(|k| k.to_ascii_lowercase().starts_with(&lower));
    }
    None
}

/// A number as a person wrote it: integers without a fraction or exponent.
pub(super) fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e18 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

pub(super) fn unknown_message(key: &str, known: &[&str], noun: &str) -> String {
    match suggest(key, known) {
        Some(k) => format!("unknown {noun}; did you mean \"{k}\"?"),
        None if noun == "step" => format!("unknown step; the steps are {}", known.join(", ")),
        // A long list hides the point; the schema command shows every key with its meaning.
        None if known.len() > 10 => format!(
            "unknown {noun} (keys starting with \"_\" are comments; `sdlc-runner config schema` lists every key)"
        ),
        None => format!(
            "unknown {noun}; expected one of {} (keys starting with \"_\" are comments)",
            known.join(", ")
        ),
    }
}

pub(super) fn describe_str(s: &str) -> String {
    format!("\"{}\"", printable(s))
}
