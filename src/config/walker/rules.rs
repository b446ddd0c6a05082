//! The rules that `definition.rs` names after a key (`=> type = rule`): each reads one key of
//! an object with the walker's readers, records what is wrong with the key path, and returns
//! the typed value (the declared default when the key is absent or wrong, so that validation
//! goes on). A key's own checks live in its rule, so the declaration says how it is read.

use super::super::*;
use serde::de::DeserializeOwned;

/// An integer in the declared range, else the declared default.
pub(in crate::config) fn count(w: &mut Walker, o: &Obj, key: &str) -> u32 {
    w.uint(o, key).unwrap_or_else(|| o.default(key))
}

/// `true` or `false`, else the declared default.
pub(in crate::config) fn flag(w: &mut Walker, o: &Obj, key: &str) -> bool {
    w.boolean(o, key).unwrap_or_else(|| o.default(key))
}

/// One of the declared names, else the declared default.
pub(in crate::config) fn choice<T: DeserializeOwned>(w: &mut Walker, o: &Obj, key: &str) -> T {
    w.pick(o, key).unwrap_or_else(|| o.default(key))
}

/// Minutes > 0 (fractions allowed), else the declared default.
pub(in crate::config) fn minutes(w: &mut Walker, o: &Obj, key: &str) -> Duration {
    super::super::minutes(w.positive(o, key).unwrap_or_else(|| o.default(key)))
}

/// Minutes ≥ 0: 0 is a real setting (no wait at all), unlike a time limit.
pub(in crate::config) fn minutes_or_zero(w: &mut Walker, o: &Obj, key: &str) -> Duration {
    let default: f64 = o.default(key);
    let max = o.shape.range(key).1.unwrap_or(f64::MAX);
    let min = match o.get(key) {
        None => default,
        Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 0.0) {
            Some(n) if n > max => {
                w.above_maximum(o.path(key), n, max);
                default
            }
            Some(n) => n,
            None => {
                w.expected(o.path(key), "a number ≥ 0", v);
                default
            }
        },
    };
    super::super::minutes(min)
}

/// Megabytes > 0 as a number of bytes.
pub(in crate::config) fn megabytes(w: &mut Walker, o: &Obj, key: &str) -> u64 {
    let mb: f64 = w.positive(o, key).unwrap_or_else(|| o.default(key));
    // Float-to-int `as` saturates, and the range is declared.
    (mb * 1024.0 * 1024.0).round() as u64
}

/// `maxConsecutiveSameFailure`: 0 (off) or at least 2, since one failure is not a repetition.
pub(in crate::config) fn same_failure_limit(w: &mut Walker, o: &Obj, key: &str) -> u32 {
    let default = o.default(key);
    let max = o.shape.range(key).1.unwrap_or(f64::MAX);
    let Some(v) = o.get(key) else {
        return default;
    };
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && n > max => {
            w.above_maximum(o.path(key), n, max);
            default
        }
        Some(n) if n == 0.0 || (n >= 2.0 && n.fract() == 0.0) => n as u32,
        _ => {
            w.expected(o.path(key), "0 (off) or an integer ≥ 2", v);
            default
        }
    }
}

/// A Discord channel id, which must be a string: ids exceed 2^53, so a JSON number has
/// already lost digits.
pub(in crate::config) fn channel_id(w: &mut Walker, o: &Obj, key: &str) -> Option<String> {
    match o.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        v @ Value::Number(_) => {
            w.expected(
                o.path(key),
                "a string (write the id in quotes: large numbers lose digits in JSON)",
                v,
            );
            None
        }
        v => {
            w.expected(o.path(key), "a non-empty string", v);
            None
        }
    }
}

/// A branch name as origin names it: what `git check-ref-format --branch` takes, without a
/// `refs/` prefix (which would name a ref, not a branch).
pub(in crate::config) fn branch_name(w: &mut Walker, o: &Obj, key: &str) -> Option<String> {
    let name = w.text(o, key)?;
    let bad = name.is_empty()
        || name.starts_with('-')
        || name.starts_with('/')
        || name.starts_with("refs/")
        || name.ends_with('/')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name.contains("..")
        || name.contains("//")
        || name.contains("@{")
        || name == "@"
        || name
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "~^:?*[\\".contains(c));
    if bad {
        w.err(
            o.path(key),
            format!("\"{name}\" is not a branch name: give the branch as origin names it, such as \"main\" (no refs/heads/ prefix, no spaces or ~^:?*[\\)"),
        );
        return None;
    }
    Some(name)
}

/// Patterns matched against command lines; an empty one would match every process.
pub(in crate::config) fn process_patterns(w: &mut Walker, o: &Obj, key: &str) -> Vec<String> {
    w.strings(
        o,
        key,
        false,
        Some("an empty pattern would match every process; remove it"),
    )
    .unwrap_or_default()
}

/// `review.ignoreAuthors`: logins, none blank.
pub(in crate::config) fn review_authors(w: &mut Walker, o: &Obj, key: &str) -> Vec<String> {
    w.strings(
        o,
        key,
        false,
        Some("an empty author names nobody; remove it"),
    )
    .unwrap_or_default()
}

/// `review.trustedAuthors`: logins, none blank, none also in `review.ignoreAuthors`.
pub(in crate::config) fn trusted_authors(w: &mut Walker, o: &Obj, key: &str) -> Vec<String> {
    let trusted = review_authors(w, o, key);
    let ignored = o
        .get("ignoreAuthors")
        .and_then(|v| v.as_array())
        .map(|l| l.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
    for login in &trusted {
        if ignored.iter().any(|i| i.eq_ignore_ascii_case(login)) {
            w.err(
                o.path(key),
                format!("\"{login}\" is in review.ignoreAuthors too; keep it in one list"),
            );
        }
    }
    trusted
}

/// An `http://` or `https://` URL.
pub(in crate::config) fn url(w: &mut Walker, o: &Obj, key: &str) -> Option<String> {
    let url = w.text(o, key)?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        w.err(
            o.path(key),
            format!("\"{url}\" is not an http:// or https:// URL"),
        );
    }
    Some(url)
}

/// An `http://` or `https://` URL, else the key's declared default.
pub(in crate::config) fn url_or_default(w: &mut Walker, o: &Obj, key: &str) -> String {
    url(w, o, key).unwrap_or_else(|| o.default(key))
}

/// A non-empty string, else the key's declared default.
pub(in crate::config) fn text_or_default(w: &mut Walker, o: &Obj, key: &str) -> String {
    w.text(o, key).unwrap_or_else(|| o.default(key))
}

/// A program and its arguments (no shell): at least the program, which must have a name.
pub(in crate::config) fn command(w: &mut Walker, o: &Obj, key: &str) -> Option<Vec<String>> {
    let command = w.strings(o, key, true, None);
    if let Some([program, ..]) = command.as_deref() {
        if program.trim().is_empty() {
            w.err(format!("{}[0]", o.path(key)), "the program name is empty");
        }
    }
    command
}

/// An address and port to listen on. Only its form is checked here; binding it is the
/// server's business when it starts.
pub(in crate::config) fn listen_address(w: &mut Walker, o: &Obj, key: &str) -> Option<String> {
    let addr = w.text(o, key)?;
    if addr.parse::<std::net::SocketAddr>().is_err() {
        w.err(
            o.path(key),
            format!("\"{addr}\" is not an address and port: write one such as \"127.0.0.1:8080\""),
        );
    }
    Some(addr)
}

/// A skill's directory name: one path component, never a way out of the skills directory.
pub(in crate::config) fn skill_name(w: &mut Walker, o: &Obj, key: &str) -> Option<String> {
    let skill = w.text(o, key)?;
    if skill.contains('/') || skill.contains('\\') || skill == ".." {
        w.err(
            o.path(key),
            format!("\"{skill}\" is not a skill name: give the directory name under <pluginsPath>/plugins/nmg-sdlc/skills/"),
        );
    }
    Some(skill)
}
