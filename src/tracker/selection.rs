//! The one selection rule both backends (and the in-memory fake) share: which open issue the
//! next cycle works on, given the open milestones, the candidates and what still blocks them
//! (the rule is spelled out in the tracker's module documentation).

use crate::ports::tracker::{Issue, Selection, TrackerError};
use std::collections::BTreeSet;

/// The pool selection works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    Milestone(String),
    Repo,
}

/// The selection rule shared by both backends. `candidates` are the open issues carrying the
/// automatable label, in any milestone; `open_milestones` are the titles of open milestones;
/// `blocks(scope, n)` says whether dependency `n` still holds a candidate back in `scope`;
/// `merged` are issues the runner merged, done as dependencies whatever the tracker shows
/// (GitHub closes an issue a moment after its merge, or not at all).
pub(crate) fn select_from(
    open_milestones: &[String],
    candidates: &[Issue],
    escalated_this_session: &BTreeSet<u32>,
    merged: &BTreeSet<u32>,
    blocks: &mut dyn FnMut(&Scope, u32) -> Result<bool, TrackerError>,
) -> Result<Selection, TrackerError> {
    let mut never = |_: &Issue| Ok(None);
    select_from_with(
        open_milestones,
        candidates,
        escalated_this_session,
        merged,
        blocks,
        &mut never,
    )
}

/// [`select_from`], where `waits(issue)` says why a candidate whose dependencies are done
/// still waits for a person (its label applied by someone without write access): it is
/// passed over, the reason said once per run. Every candidate passed over or blocked, and
/// none blocked: no issue to work on.
pub(crate) fn select_from_with(
    open_milestones: &[String],
    candidates: &[Issue],
    escalated_this_session: &BTreeSet<u32>,
    merged: &BTreeSet<u32>,
    blocks: &mut dyn FnMut(&Scope, u32) -> Result<bool, TrackerError>,
    waits: &mut dyn FnMut(&Issue) -> Result<Option<String>, TrackerError>,
) -> Result<Selection, TrackerError> {
    let excluded = |i: &Issue| i.escalated || escalated_this_session.contains(&i.number);
    let milestones: BTreeSet<&String> = open_milestones.iter().collect();
    let scope = milestones
        .into_iter()
        .find(|m| {
            candidates
                .iter()
                .any(|c| c.milestone.as_ref() == Some(*m) && !excluded(c))
        })
        .map(|m| Scope::Milestone(m.clone()))
        .unwrap_or(Scope::Repo);
    let mut pool: Vec<&Issue> = candidates
        .iter()
        .filter(|c| c.state_open)
        .filter(|c| match &scope {
            Scope::Milestone(m) => c.milestone.as_ref() == Some(m),
            Scope::Repo => true,
        })
        .collect();
    pool.sort_by_key(|c| c.number);
    pool.dedup_by_key(|c| c.number);
    if pool.is_empty() {
        return Ok(Selection::NoIssues);
    }
    let active: Vec<&Issue> = pool.iter().copied().filter(|c| !excluded(c)).collect();
    if active.is_empty() {
        return Ok(Selection::AllEscalated {
            numbers: pool.iter().map(|c| c.number).collect(),
        });
    }
    let mut blocked = Vec::new();
    for issue in &active {
        let mut ready = true;
        for dep in issue.dependencies() {
            if !merged.contains(&dep) && blocks(&scope, dep)? {
                ready = false;
                break;
            }
        }
        if !ready {
            blocked.push(issue.number);
            continue;
        }
        match waits(issue)? {
            Some(why) => crate::authority::say_once(&why),
            None => return Ok(Selection::Issue((*issue).clone())),
        }
    }
    if blocked.is_empty() {
        return Ok(Selection::NoIssues);
    }
    Ok(Selection::AllBlocked { numbers: blocked })
}

/// Issue numbers named by `Depends on: #N`, `Blocks: #N` and `Blocked by: #N` (case
/// insensitive, several numbers may follow separated by commas), in order of appearance.
/// The keyword must start a word, so `Unblocks: #3` is not a dependency.
pub fn body_dependencies(body: &str) -> Vec<u32> {
    let lower = body.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut found = Vec::new();
    for keyword in ["depends on", "blocked by", "blocks"] {
        let kw = keyword.as_bytes();
        let mut from = 0;
        while let Some(pos) = lower[from..].find(keyword) {
            let start = from + pos;
            from = start + kw.len();
            if start > 0 && b[start - 1].is_ascii_alphanumeric() {
                continue;
            }
            let mut i = start + kw.len();
            if b.get(i) != Some(&b':') {
                continue;
            }
            i += 1;
            loop {
                while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                    i += 1;
                }
                if b.get(i) != Some(&b'#') {
                    break;
                }
                i += 1;
                let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
                let end = i + digits;
                let word_follows = b
                    .get(end)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
                if digits == 0 || word_follows {
                    break;
                }
                match lower[i..end].parse::<u32>() {
                    Ok(n) if n > 0 => found.push(n),
                    _ => {}
                }
                i = end;
                while b.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
                    i += 1;
                }
                if b.get(i) != Some(&b',') {
                    break;
                }
                i += 1;
            }
        }
    }
    found
}
