//! What the spec says it removes: removals it names pass the check.
//!
//! The convention (docs/classification.md, `TESTS_WEAKENED`; the writeSpecs prompt tells the
//! agent): a spec file (requirements.md, design.md, tasks.md) may hold a section headed
//! `Removes:` (or a heading `## Removes`), a list with one item per line, each naming a test
//! (`parses_empty_input`, `Suite.test_old`, a JS test's title), a CI job or step, or a file
//! (a snapshot, a test file), optionally in backticks. The section ends at a blank line after
//! its list, or at the next heading.

use super::Fact;

/// The names and paths the spec says the issue removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removals {
    names: Vec<String>,
}

impl Removals {
    /// The removals listed in `spec` (the text of the spec's files, one after the other).
    pub fn from_spec(spec: &str) -> Removals {
        let mut names = Vec::new();
        let mut inside = false;
        for line in spec.lines() {
            let trimmed = line.trim();
            let is_heading = trimmed.starts_with('#');
            let heading = trimmed.trim_start_matches('#').trim();
            let opens = heading.strip_prefix("Removes").and_then(|rest| {
                let listed = rest.strip_prefix(':');
                match (is_heading, listed) {
                    (_, Some(rest)) => Some(rest.trim()),
                    (true, None) if rest.trim().is_empty() => Some(""),
                    _ => None,
                }
            });
            if let Some(rest) = opens {
                inside = true;
                if !rest.is_empty() {
                    names.extend(items(rest));
                }
                continue;
            }
            if !inside {
                continue;
            }
            if trimmed.starts_with('#') || (trimmed.is_empty() && !names.is_empty()) {
                inside = false;
                continue;
            }
            let item = trimmed.trim_start_matches(['-', '*', '+']).trim();
            names.extend(items(item));
        }
        Removals { names }
    }

    /// Whether the spec names what `fact` is about: its name (the test, the job), its file, or
    /// the file's name alone.
    pub fn allows(&self, fact: &Fact) -> bool {
        let file = fact.path.rsplit('/').next().unwrap_or_default();
        let last = fact
            .name
            .rsplit([':', '.', '>', ' '])
            .next()
            .unwrap_or_default();
        // A test inside a module, class or `describe` block is named by its own name too.
        let inside = |n: &str| {
            [" > ", "::", "."]
                .iter()
                .any(|sep| fact.name.ends_with(&format!("{sep}{n}")))
        };
        self.names.iter().any(|n| {
            *n == fact.name
                || *n == fact.path
                || *n == file
                || (!last.is_empty() && *n == last)
                || inside(n)
        })
    }

    /// Whether the spec lists nothing.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The names in one item: what is in backticks, else the text up to a ` — `, `: ` or `(`.
fn items(item: &str) -> Vec<String> {
    let quoted: Vec<String> = item
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if !quoted.is_empty() {
        return quoted;
    }
    let plain = item
        .split([' ', '(', ','])
        .next()
        .unwrap_or_default()
        .trim_end_matches([':', '.'])
        .trim();
    if plain.is_empty() {
        Vec::new()
    } else {
        vec![plain.to_string()]
    }
}
