//! Coverage thresholds (`fail_under` in .coveragerc, setup.cfg or pyproject.toml,
//! `--cov-fail-under`, `--fail-under`, `min_coverage`, `coverage_threshold`): a value lowered,
//! or the key gone from a file that still exists.

use super::{Fact, Kind};
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::OnceLock;

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?i)\b((?:cov[-_])?fail[-_]under|min(?:imum)?[-_]coverage|coverage[-_]threshold)\b["']?\s*[:=]?\s*["']?(\d+(?:\.\d+)?)"#,
        )
        .expect("the threshold pattern compiles")
    })
}

/// Each key's value and 1-based line; a key set twice keeps its highest.
fn thresholds(text: &str) -> BTreeMap<String, (f64, usize)> {
    let mut found: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        for c in pattern().captures_iter(line) {
            let key = c[1].to_ascii_lowercase().replace('-', "_");
            let key = key.strip_prefix("cov_").unwrap_or(&key).to_string();
            let Ok(value) = c[2].parse::<f64>() else {
                continue;
            };
            let entry = found.entry(key).or_insert((value, i + 1));
            if value > entry.0 {
                *entry = (value, i + 1);
            }
        }
    }
    found
}

pub(super) fn compare(
    path: &str,
    before: Option<&str>,
    after: Option<&str>,
    facts: &mut Vec<Fact>,
) {
    let (Some(before), Some(after)) = (before, after) else {
        return;
    };
    let old = thresholds(before);
    if old.is_empty() {
        return;
    }
    let new = thresholds(after);
    for (key, (was, was_line)) in old {
        let (what, line, at_base) = match new.get(&key) {
            Some(&(now, line)) if now < was => (
                format!("you lowered the coverage threshold `{key}` from {was} to {now}"),
                line,
                false,
            ),
            Some(_) => continue,
            None => (
                format!("you removed the coverage threshold `{key}` ({was})"),
                was_line,
                true,
            ),
        };
        facts.push(Fact::new(
            path,
            line,
            at_base,
            Kind::ThresholdLowered,
            &key,
            what,
        ));
    }
}
