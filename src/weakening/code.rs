//! The base's tests of a file compared with the head's (as [`super::parse`] reads them):
//! tests removed, newly skipped, emptied, or making fewer assertions.

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
                facts.push(fact(
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
                facts.push(fact(
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
        if (new.empty && !old.empty) || (new.assertions == 0 && old.assertions > 0) {
            facts.push(fact(
                path,
                new.line,
                false,
                Kind::TestEmptied,
                &new.name,
                format!(
                    "you emptied `{}` (it had {} assertion{}, it has {})",
                    new.name,
                    old.assertions,
                    plural(old.assertions),
                    new.assertions
                ),
            ));
        } else if new.assertions < old.assertions {
            let gone = old.assertions - new.assertions;
            facts.push(fact(
                path,
                new.line,
                false,
                Kind::AssertionsRemoved,
                &new.name,
                format!(
                    "you removed {gone} of the {} assertions of `{}`",
                    old.assertions, new.name
                ),
            ));
        }
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

fn fact(path: &str, line: usize, at_base: bool, kind: Kind, name: &str, what: String) -> Fact {
    Fact {
        path: path.to_string(),
        line,
        at_base,
        kind,
        name: name.to_string(),
        what,
    }
}
