//! The base's tests of a file compared with the head's (as [`super::parse`] reads them):
//! tests removed, newly skipped, emptied, making fewer assertions or weaker ones
//! (`loosened.rs`).

use super::parse::TestFn;
use super::{Fact, Kind};
use std::collections::BTreeSet;

/// The base's tests of `path` against the head's: removed (unless it is in another changed
/// file now), newly skipped, emptied, fewer assertions.
pub(super) fn compare(
    path: &str,
    before: &[TestFn],
    after: &[TestFn],
    everywhere: &BTreeSet<String>,
    facts: &mut Vec<Fact>,
) {
    for old in before {
        let Some(new) = after.iter().find(|t| t.name == old.name) else {
            if !everywhere.contains(last_segment(&old.name)) {
                facts.push(Fact::new(
                    path,
                    old.line,
                    true,
                    Kind::TestRemoved,
                    &old.name,
                    format!("you removed the test `{}`", old.name),
                ));
            }
            continue;
        };
        if old.skipped.is_none() {
            if let Some(how) = &new.skipped {
                facts.push(Fact::new(
                    path,
                    new.line,
                    false,
                    Kind::TestSkipped,
                    &new.name,
                    format!("you skipped `{}` ({how})", new.name),
                ));
                continue;
            }
        }
        if (new.empty && !old.empty) || (new.assertions.is_empty() && !old.assertions.is_empty()) {
            facts.push(Fact::new(
                path,
                new.line,
                false,
                Kind::TestEmptied,
                &new.name,
                format!(
                    "you emptied `{}` (it had {} assertion{}, it has {})",
                    new.name,
                    old.assertions.len(),
                    plural(old.assertions.len()),
                    new.assertions.len()
                ),
            ));
            continue;
        }
        if new.assertions.len() < old.assertions.len() {
            let gone = old.assertions.len() - new.assertions.len();
            facts.push(Fact::new(
                path,
                new.line,
                false,
                Kind::AssertionsRemoved,
                &new.name,
                format!(
                    "you removed {gone} of the {} assertions of `{}`",
                    old.assertions.len(),
                    new.name
                ),
            ));
        }
        super::loosened::compare(path, old, new, facts);
    }
}

/// A test's own name, without the module, class or `describe` blocks it was in: a test moved
/// to another file may sit in other ones there.
pub(super) fn last_segment(name: &str) -> &str {
    // A dot separates Java's class from its method; a JavaScript title may hold one.
    let dot = (!name.contains(' ')).then(|| name.rfind('.').map(|i| i + 1));
    [
        name.rfind("::").map(|i| i + 2),
        name.rfind(" > ").map(|i| i + 3),
        dot.flatten(),
    ]
    .into_iter()
    .flatten()
    .max()
    .map_or(name, |i| &name[i..])
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
