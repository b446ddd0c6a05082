//! Snapshot files (insta's `.snap`, Jest's `__snapshots__/`, syrupy's `.ambr`, a
//! `snapshots/` directory): one replaced wholesale, or removed, is a test rewritten to
//! whatever the code now prints.

use super::{Fact, Kind};

/// Whether `path` is a snapshot file.
pub(super) fn is_snapshot(path: &str) -> bool {
    path.ends_with(".snap")
        || path.ends_with(".ambr")
        || path.contains("__snapshots__/")
        || path.starts_with("snapshots/")
        || path.contains("/snapshots/")
}

/// The fewest lines a snapshot must have had for its replacement to count as wholesale.
const MIN_LINES: usize = 3;

pub(super) fn compare(
    path: &str,
    before: Option<&str>,
    after: Option<&str>,
    facts: &mut Vec<Fact>,
) {
    let Some(before) = before else { return };
    if !is_snapshot(path) {
        return;
    }
    let fact = |what: String| {
        Fact::new(
            path,
            1,
            after.is_none(),
            Kind::SnapshotRewritten,
            path,
            what,
        )
    };
    let Some(after) = after else {
        facts.push(fact("you removed the snapshot file".to_string()));
        return;
    };
    let old: Vec<&str> = before.lines().filter(|l| !l.trim().is_empty()).collect();
    if old.len() < MIN_LINES {
        return;
    }
    let mut new: Vec<&str> = after.lines().filter(|l| !l.trim().is_empty()).collect();
    new.sort_unstable();
    let kept = old.iter().filter(|l| new.binary_search(l).is_ok()).count();
    // Fewer than half of its lines survived: not an update of a few values, a new snapshot.
    if kept * 2 < old.len() {
        facts.push(fact(format!(
            "you replaced the snapshot wholesale ({kept} of its {} lines kept)",
            old.len()
        )));
    }
}
