//! Green honestly (docs/classification.md, `TESTS_WEAKENED`): the branch compared with its
//! base for the ways an agent can buy a passing CI by weakening what CI checks. Each finding
//! is a [`Fact`] naming the file, the line and what changed; nothing here guesses from
//! prose: test code is read with tree-sitter's grammars (`lang.rs`, `parse.rs`), compared
//! (`code.rs`), each assertion's claim ranked to find a loosened one (`strength.rs`,
//! `loosened.rs`), CI files with a YAML parser (`ci.rs`), coverage thresholds by their keys
//! (`thresholds.rs`), snapshot files by how much of them survived (`snapshots.rs`). Only the
//! files the branch changed are read, so the check costs the diff, not the repository.
//!
//! Pure: the caller hands in each changed file's text at the base and at the head (the git
//! port reads them) and the removals the spec lists (`removes.rs`).

mod ci;
mod code;
mod lang;
mod loosened;
mod parse;
mod removes;
mod snapshots;
mod strength;
mod thresholds;

pub use removes::Removals;

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// One file the branch changed: its text at the base and at the head (`None`: absent there,
/// or not text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// The path inside the repository, `/`-separated.
    pub path: String,
    /// The text at the base (the merge base with the base branch).
    pub before: Option<String>,
    /// The text at the head of the branch.
    pub after: Option<String>,
}

/// What kind of weakening a fact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// A test that was there is gone (and is in no other changed file).
    TestRemoved,
    /// A test's body lost every statement or every assertion.
    TestEmptied,
    /// A test newly skipped, ignored, disabled or marked as expected to fail.
    TestSkipped,
    /// A test kept fewer assertions than it had.
    AssertionsRemoved,
    /// An assertion replaced by a weaker one (an exact claim become a bound or a presence),
    /// or its tolerance widened.
    AssertionLoosened,
    /// A snapshot file replaced wholesale, or removed.
    SnapshotRewritten,
    /// A CI job or step removed.
    CiRemoved,
    /// A CI job or step made unable to fail (`continue-on-error`, `allow_failure`, `|| true`,
    /// disabled).
    CiNonFailing,
    /// A coverage threshold lowered or removed.
    ThresholdLowered,
}

impl Kind {
    /// Whether the fact is a removal, which the spec may call for (`Removes:`).
    pub const fn is_removal(self) -> bool {
        matches!(
            self,
            Kind::TestRemoved | Kind::SnapshotRewritten | Kind::CiRemoved
        )
    }
}

/// One weakening found: where and what changed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Fact {
    /// The file, `/`-separated, relative to the repository.
    pub path: String,
    /// The line (1-based): at the head, or at the base when what it names is gone.
    pub line: usize,
    /// Whether `line` is the base's (the thing is gone from the head).
    pub at_base: bool,
    /// What kind of weakening.
    pub kind: Kind,
    /// What it names: the test, the job or step, the threshold's key, the snapshot's file.
    pub name: String,
    /// What changed, said to the agent ("you skipped `parses_empty_input`").
    pub what: String,
}

impl Fact {
    /// The fact that `what` happened to `name` in `path` at `line` (the base's line when
    /// `at_base`).
    pub(crate) fn new(
        path: &str,
        line: usize,
        at_base: bool,
        kind: Kind,
        name: &str,
        what: String,
    ) -> Fact {
        Fact {
            path: path.to_string(),
            line,
            at_base,
            kind,
            name: name.to_string(),
            what,
        }
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in {}:{}", self.what, self.path, self.line)?;
        if self.at_base {
            f.write_str(" (the base's line)")?;
        }
        Ok(())
    }
}

/// What the check found: the facts that weaken the tests, and those the spec's `Removes:`
/// section called for (they pass).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Weakenings the spec does not call for.
    pub weakened: Vec<Fact>,
    /// Removals the spec lists: allowed, shown all the same.
    pub allowed: Vec<Fact>,
}

/// Where the project keeps the script its local CI runs (the `localCi` command's files
/// inside the repository), read like a CI file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CiScripts(pub Vec<String>);

/// Compares each changed file at the base and at the head and returns every weakening found,
/// the spec's removals set apart.
pub fn check(files: &[ChangedFile], removals: &Removals, scripts: &CiScripts) -> Findings {
    let mut facts = Vec::new();
    // A test that left one changed file for another moved; it was not removed.
    let mut everywhere: BTreeSet<String> = BTreeSet::new();
    let mut read = Vec::with_capacity(files.len());
    for file in files {
        let before = file
            .before
            .as_deref()
            .and_then(|t| parse::tests_in(&file.path, t));
        let after = file
            .after
            .as_deref()
            .and_then(|t| parse::tests_in(&file.path, t));
        if let Some(after) = &after {
            everywhere.extend(
                after
                    .iter()
                    .map(|t| code::last_segment(&t.name).to_string()),
            );
        }
        read.push((before, after));
    }
    for (file, (before, after)) in files.iter().zip(&read) {
        if let Some(before) = before {
            code::compare(
                &file.path,
                before,
                after.as_deref().unwrap_or_default(),
                &everywhere,
                &mut facts,
            );
        }
        let (b, a) = (file.before.as_deref(), file.after.as_deref());
        snapshots::compare(&file.path, b, a, &mut facts);
        ci::compare(&file.path, b, a, scripts, &mut facts);
        thresholds::compare(&file.path, b, a, &mut facts);
    }
    facts.sort();
    facts.dedup();
    let (allowed, weakened) = facts
        .into_iter()
        .partition(|f| f.kind.is_removal() && removals.allows(f));
    Findings { weakened, allowed }
}

/// The facts as the repair context and the escalation quote them: one line each.
pub fn describe(facts: &[Fact]) -> String {
    facts
        .iter()
        .map(|f| format!("- {f}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The facts [`describe`] wrote into `text` (a failure's excerpt), one each.
pub fn listed(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("- "))
        .map(str::to_string)
        .collect()
}

/// 1-based line of the first line at or after `from` (1-based) that contains `needle`;
/// `from` itself when none does.
pub(crate) fn line_of(text: &str, from: usize, needle: &str) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, l)| l.contains(needle))
        .map_or(from.max(1), |(i, _)| i + 1)
}

#[cfg(test)]
mod tests;
