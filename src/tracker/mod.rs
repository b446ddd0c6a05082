//! The issue tracker (docs/interfaces.md "Issue tracker", docs/counters-and-bounds.md "Quarantine is durable"): which issue the
//! next cycle works on, the durable escalation mark, and closing an issue after a local merge.
//!
//! What every tracker shares, whichever service keeps the issues (each implements the
//! tracker port in its folder under `src/services/`): one selection rule (`select_from`,
//! `selection.rs`), the text of an escalation, the rules of claims (`claims.rs`), an issue's
//! branch, and [`Traced`], the calls' diagnostics around the configured tracker.
//!
//! Selection: the first open milestone (by title, in code-point order) that still holds an
//! open `automatable` issue that is not escalated; without one, every open `automatable` issue
//! in the repository. In that pool the lowest-numbered issue that is not escalated (in this
//! session, or durably by label / field) and whose dependencies are satisfied is chosen.
//! Dependencies are `Depends on: #N`, `Blocks: #N` (treated the same way, as the old runner
//! did) and `Blocked by: #N` lines in the body (several numbers may follow, comma separated),
//! plus the parent issue. A dependency inside the milestone (the whole repository when there
//! is no milestone) holds the issue back until it is closed; on GitHub, when the tracker
//! lists pull requests that close it, one of them must be merged. Dependencies outside the
//! milestone, and numbers that do not exist, do not hold anything back.
//!
//! Unlike the old runner, an open milestone whose issues are all non-automatable or
//! quarantined does not stall selection: the next milestone is used (docs/design-notes.md).

pub(crate) mod claims;
mod selection;
pub(crate) mod text;

pub use crate::ports::claims::{Claim, Claimed};
pub use crate::ports::tracker::{Comment, Issue, IssueText, Selection, TrackerError};
pub use selection::body_dependencies;
pub(crate) use selection::{select_from, select_from_with, Scope};
pub use text::MAX_ISSUE_TEXT_BYTES;

use crate::ports::TrackerPort;
use std::collections::BTreeSet;

impl Issue {
    /// The issues this one waits for: body references, the tracker's blocking links and the
    /// parent, ascending, without itself.
    pub fn dependencies(&self) -> Vec<u32> {
        let mut deps: BTreeSet<u32> = body_dependencies(&self.body).into_iter().collect();
        deps.extend(self.parent);
        deps.extend(self.blocked_by.iter().copied());
        deps.remove(&self.number);
        deps.into_iter().collect()
    }

    /// The feature branch for this issue: `<N>-<slug>`.
    pub fn branch(&self) -> String {
        self.branch_in(&crate::config::IssueRefs::default())
    }

    /// The feature branch for this issue with the tracker's identifier first:
    /// `<N>-<slug>`, `ENG-<N>-<slug>` on Linear.
    pub fn branch_in(&self, refs: &crate::config::IssueRefs) -> String {
        format!("{}{}", refs.branch_prefix(self.number), slug(&self.title))
    }
}

impl Issue {
    /// A closed dependency counts as done unless the tracker shows that the pull requests
    /// closing it were not merged (closed by hand while its PR was abandoned).
    pub(crate) fn is_done(&self) -> bool {
        !self.state_open && self.closed_by_merged_pr != Some(false)
    }
}

/// The text of an escalation comment / field: redacted, bounded, and telling the reader how
/// to lift the quarantine.
pub(crate) fn escalation_text(diagnostic: &str, how_to_lift: &str, max_bytes: usize) -> String {
    let mut diagnostic = crate::redact::redact(diagnostic);
    if diagnostic.len() > max_bytes {
        let mut cut = diagnostic.len() - max_bytes;
        while !diagnostic.is_char_boundary(cut) {
            cut += 1;
        }
        diagnostic = format!("…{}", &diagnostic[cut..]);
    }
    // A fence longer than any backtick run inside keeps the diagnostic verbatim.
    let longest = diagnostic
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!(
        "sdlc-runner escalated this issue and will not select it again. {how_to_lift}\n\n{fence}text\n{diagnostic}\n{fence}\n"
    )
}

/// The configured tracker with what every tracker's calls share around it: each call and how
/// it ended as a debug diagnostic naming the tracker (`kind`: `github`, `gitlab`, `linear`,
/// `local`), and no control character of a note or diagnostic reaching the tracker (they quote
/// agent and tool output).
#[derive(Debug)]
pub struct Traced<T> {
    kind: &'static str,
    inner: T,
}

impl<T: TrackerPort> Traced<T> {
    /// `inner`, named `kind` in the diagnostics.
    pub fn new(kind: &'static str, inner: T) -> Traced<T> {
        Traced { kind, inner }
    }
}

impl<T: TrackerPort> TrackerPort for Traced<T> {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        let selected = self.inner.select(excluded, merged);
        let outcome = match &selected {
            Ok(Selection::Issue(issue)) => format!("issue #{}", issue.number),
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("failed: {e}"),
        };
        tracing::debug!(tracker = self.kind, %outcome, "select");
        selected
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        traced(self.kind, "get", number, self.inner.get(number))
    }
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        traced(self.kind, "text", number, self.inner.text(number))
    }
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        let note = &crate::sanitize::block(note);
        traced(self.kind, "close", number, self.inner.close(number, note))
    }
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        let diagnostic = &crate::sanitize::block(diagnostic);
        let marked = self.inner.mark_escalated(number, diagnostic);
        traced(self.kind, "mark escalated", number, marked)
    }
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        let note = &crate::sanitize::block(note);
        let lifted = self.inner.unquarantine(number, note);
        traced(self.kind, "unquarantine", number, lifted)
    }
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let lifted = self.inner.lift_quarantine(number);
        traced(self.kind, "lift quarantine", number, lifted)
    }
    fn open_without_label(&self) -> Vec<u32> {
        self.inner.open_without_label()
    }
    fn label(&self) -> &str {
        self.inner.label()
    }
    fn selectable(&self, issue: &Issue) -> bool {
        self.inner.selectable(issue)
    }
    fn release_hint(&self, number: u32, config: &std::path::Path) -> String {
        self.inner.release_hint(number, config)
    }
}

/// One tracker call as a debug diagnostic: what, which issue, and how it ended.
fn traced<T>(
    tracker: &'static str,
    call: &'static str,
    issue: u32,
    result: Result<T, TrackerError>,
) -> Result<T, TrackerError> {
    match &result {
        Ok(_) => tracing::debug!(tracker, issue, "{call}: ok"),
        Err(e) => tracing::debug!(tracker, issue, "{call}: failed: {e}"),
    }
    result
}

/// The branch slug for an issue title: lowercase `[a-z0-9-]`, words joined by `-`, at most
/// 40 characters (cut at a word boundary when there is one), `issue` when nothing is left.
pub fn slug(title: &str) -> String {
    const MAX: usize = 40;
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    if out.len() > MAX {
        let cut = match out[..=MAX].rfind('-') {
            Some(dash) if dash > 0 => dash,
            _ => MAX,
        };
        out.truncate(cut);
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "issue".to_string()
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(number: u32, milestone: Option<&str>, body: &str) -> Issue {
        Issue {
            number,
            title: format!("issue {number}"),
            body: body.into(),
            labels: vec!["automatable".into()],
            milestone: milestone.map(String::from),
            state_open: true,
            escalated: false,
            parent: None,
            closed_by_merged_pr: None,
            blocked_by: Vec::new(),
        }
    }

    #[test]
    fn dependencies_from_bodies() {
        assert_eq!(body_dependencies("Depends on: #12"), vec![12]);
        assert_eq!(
            body_dependencies("depends on:#3, #4 ,#5 and #6"),
            vec![3, 4, 5]
        );
        assert_eq!(body_dependencies("BLOCKS: #7\nBlocked by: #8"), vec![8, 7]);
        assert_eq!(body_dependencies("Unblocks: #3"), Vec::<u32>::new());
        assert_eq!(body_dependencies("Depends on #3"), Vec::<u32>::new());
        assert_eq!(body_dependencies("Depends on: #12abc"), Vec::<u32>::new());
        assert_eq!(body_dependencies("Depends on: #0"), Vec::<u32>::new());
        assert_eq!(
            body_dependencies("Depends on: #99999999999"),
            Vec::<u32>::new()
        );
        assert_eq!(body_dependencies("Depends on: \n  #2."), vec![2]);
        let mut i = issue(5, None, "Depends on: #5\nDepends on: #2");
        i.parent = Some(1);
        assert_eq!(i.dependencies(), vec![1, 2]);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Add login page"), "add-login-page");
        assert_eq!(
            slug("  Fix: crash on `--help` (Linux)!  "),
            "fix-crash-on-help-linux"
        );
        assert_eq!(slug("Ünïcode — only"), "n-code-only");
        assert_eq!(slug("!!!"), "issue");
        let long = slug("Implement the exceedingly long feature title that never seems to end");
        assert!(long.len() <= 40, "{long}");
        assert_eq!(long, "implement-the-exceedingly-long-feature");
        assert_eq!(slug(&"a".repeat(60)), "a".repeat(40));
        for t in ["x", "A-B", "--a--", "日本語", "a/b\\c"] {
            let s = slug(t);
            assert!(s
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'));
            assert!(!s.starts_with('-') && !s.ends_with('-'));
        }
    }

    #[test]
    fn escalation_text_fences_and_bounds() {
        let t = escalation_text("a ``` b GITHUB_TOKEN=x", "Remove it.", 1000);
        assert!(
            t.contains("````text\na ``` b GITHUB_TOKEN=***\n````"),
            "{t}"
        );
        let t = escalation_text(&"é".repeat(100), "", 11);
        assert!(t.contains("…éééé"), "{t}");
    }

    #[test]
    fn select_rule_without_io() {
        let none = BTreeSet::new();
        let mut never = |_: &Scope, _: u32| Ok(false);
        let cands = vec![
            issue(9, Some("b"), ""),
            issue(4, None, ""),
            issue(7, Some("a"), ""),
        ];
        let s = select_from(&["b".into(), "a".into()], &cands, &none, &none, &mut never).unwrap();
        assert!(matches!(s, Selection::Issue(i) if i.number == 7));
        let s = select_from(&[], &cands, &none, &none, &mut never).unwrap();
        assert!(matches!(s, Selection::Issue(i) if i.number == 4));
        let s = select_from(&[], &[], &none, &none, &mut never).unwrap();
        assert_eq!(s, Selection::NoIssues);
        let mut scopes = Vec::new();
        let mut record = |s: &Scope, n: u32| {
            scopes.push((s.clone(), n));
            Ok(true)
        };
        let cands = vec![issue(2, Some("m"), "Depends on: #1")];
        let s = select_from(&["m".into()], &cands, &none, &none, &mut record).unwrap();
        assert_eq!(s, Selection::AllBlocked { numbers: vec![2] });
        assert_eq!(scopes, vec![(Scope::Milestone("m".into()), 1)]);
        // A dependency the runner merged is done, whatever the tracker still says of it.
        let merged: BTreeSet<u32> = [1].into();
        let mut open = |_: &Scope, _: u32| Ok(true);
        let s = select_from(&["m".into()], &cands, &none, &merged, &mut open).unwrap();
        assert!(matches!(&s, Selection::Issue(i) if i.number == 2), "{s:?}");
    }
}
