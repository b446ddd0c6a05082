//! The issue tracker (docs/interfaces.md "Issue tracker", docs/counters-and-bounds.md "Quarantine is durable"): which issue the
//! next cycle works on, the durable escalation mark, and closing an issue after a local merge.
//!
//! Two backends share one selection rule (`select_from`):
//! - [`GitHub`] drives the `gh` CLI (argument vectors, blocking, with a time limit);
//! - [`Local`] reads a directory of `<N>.json` files, for offline use and the demo.
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
use crate::services::github::tracker as github;
use crate::services::local::tracker as local;
mod port;
pub(crate) mod text;

pub use crate::ports::claims::{Claim, Claimed};
pub use crate::ports::tracker::{Comment, Issue, IssueText, Selection, TrackerError};
pub use crate::services::gitlab::GitLab;
pub use crate::services::linear::{Linear, TeamFacts};
pub(crate) use crate::services::shared::escalation_text;
pub use crate::services::shared::selection::body_dependencies;
pub(crate) use crate::services::shared::selection::{select_from, select_from_with, Scope};
pub use github::GitHub;
pub use local::Local;
// The claim notes' rules, for the GitHub tracker's claims and the claim store.
use crate::services::shared::claim_notes;
pub use text::MAX_ISSUE_TEXT_BYTES;

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

/// The configured tracker.
#[derive(Debug)]
pub enum Tracker {
    /// GitHub issues through `gh`.
    GitHub(GitHub),
    /// GitLab issues through GitLab's REST API.
    GitLab(GitLab),
    /// Linear issues through Linear's GraphQL API.
    Linear(Linear),
    /// A directory of JSON issue files.
    Local(Local),
}

impl Tracker {
    /// The issue's whole text for the agent: title and body, and on GitHub the comments.
    pub fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        match self {
            Tracker::GitHub(t) => traced(self.kind(), "text", number, t.text(number)),
            Tracker::GitLab(t) => traced(self.kind(), "text", number, t.text(number)),
            Tracker::Linear(t) => traced(self.kind(), "text", number, t.text(number)),
            Tracker::Local(_) => self.get(number).map(|i| IssueText::of(&i)),
        }
    }

    /// The lowest-numbered open issue with the selection label that is neither escalated
    /// (durably or in `escalated_this_session`) nor waiting for an open dependency; `merged` (issues the runner merged) count as done
    /// dependencies whatever the tracker shows of them.
    pub fn select(
        &self,
        escalated_this_session: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        let selected = match self {
            Tracker::GitHub(t) => t.select(escalated_this_session, merged),
            Tracker::GitLab(t) => t.select(escalated_this_session, merged),
            Tracker::Linear(t) => t.select(escalated_this_session, merged),
            Tracker::Local(t) => t.select(escalated_this_session, merged),
        };
        let outcome = match &selected {
            Ok(Selection::Issue(issue)) => format!("issue #{}", issue.number),
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("failed: {e}"),
        };
        tracing::debug!(tracker = self.kind(), %outcome, "select");
        selected
    }

    /// `github`, `gitlab` or `local`, for diagnostics.
    fn kind(&self) -> &'static str {
        match self {
            Tracker::GitHub(_) => "github",
            Tracker::GitLab(_) => "gitlab",
            Tracker::Linear(_) => "linear",
            Tracker::Local(_) => "local",
        }
    }

    /// Quarantines the issue durably. GitHub: adds the escalated label (creating it when the
    /// repository lacks it) and comments the diagnostic. Local: sets `escalated` and
    /// `escalation` in the file. The diagnostic is redacted first.
    pub fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        // The diagnostic quotes agent and tool output: no control character reaches the tracker.
        let diagnostic = &crate::sanitize::block(diagnostic);
        let marked = match self {
            Tracker::GitHub(t) => t.mark_escalated(number, diagnostic),
            Tracker::GitLab(t) => t.mark_escalated(number, diagnostic),
            Tracker::Linear(t) => t.mark_escalated(number, diagnostic),
            Tracker::Local(t) => t.mark_escalated(number, diagnostic),
        };
        traced(self.kind(), "mark escalated", number, marked)
    }

    /// Records that the issue is done. Local: `state` becomes `closed` (the runner merged
    /// locally). GitHub: the merged pull request usually closed it; one still open is
    /// closed with `note` as its comment.
    pub fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        let note = &crate::sanitize::block(note);
        let closed = match self {
            Tracker::GitHub(t) => t.close(number, note),
            Tracker::GitLab(t) => t.close(number, note),
            Tracker::Linear(t) => t.close(number, note),
            Tracker::Local(t) => t.close(number, note),
        };
        traced(self.kind(), "close", number, closed)
    }

    /// How a person releases a quarantined issue, for messages: the one command that lifts
    /// the mark in the tracker and acknowledges a halted session (`sdlc-runner release`).
    pub fn release_hint(&self, number: u32, config: &std::path::Path) -> String {
        format!("sdlc-runner release {number} --config {}", config.display())
    }

    /// Lifts the quarantine the runner put on the issue this session, with `note` saying why
    /// (the failure was the environment's). GitHub: the escalated label removed and a comment.
    /// Local: `escalated` false, the label and the diagnostic gone, `released` the note.
    pub fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        let note = &crate::sanitize::block(note);
        let lifted = match self {
            Tracker::GitHub(t) => t.unquarantine(number, note),
            Tracker::GitLab(t) => t.unquarantine(number, note),
            Tracker::Linear(t) => t.unquarantine(number, note),
            Tracker::Local(t) => t.unquarantine(number, note),
        };
        traced(self.kind(), "unquarantine", number, lifted)
    }

    /// Lifts the durable quarantine. Returns whether the issue was quarantined.
    pub fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let lifted = match self {
            Tracker::GitHub(t) => t.lift_quarantine(number),
            Tracker::GitLab(t) => t.lift_quarantine(number),
            Tracker::Linear(t) => t.lift_quarantine(number),
            Tracker::Local(t) => t.lift_quarantine(number),
        };
        traced(self.kind(), "lift quarantine", number, lifted)
    }

    /// Open issues that `run` never selects because they lack the selection label (local
    /// tracker only: on GitHub that would be one more `gh` call per empty selection).
    pub fn open_without_label(&self) -> Vec<u32> {
        match self {
            Tracker::GitHub(_) | Tracker::GitLab(_) | Tracker::Linear(_) => Vec::new(),
            Tracker::Local(t) => t
                .all()
                .unwrap_or_default()
                .into_iter()
                .filter(|i| i.state_open && !i.labels.contains(&t.label))
                .map(|i| i.number)
                .collect(),
        }
    }

    /// The label `run` selects by.
    pub fn label(&self) -> &str {
        match self {
            Tracker::GitHub(t) => &t.label,
            Tracker::GitLab(t) => &t.label,
            Tracker::Linear(t) => &t.label,
            Tracker::Local(t) => &t.label,
        }
    }

    /// The tracker a config names. `Err` names the variable of a token that is not set.
    pub fn from_config(cfg: &crate::config::Config) -> Result<Tracker, String> {
        Ok(match &cfg.tracker {
            crate::config::TrackerConfig::Local {
                dir,
                label,
                escalated_label,
            } => {
                let mut t = Local::new(dir.clone());
                t.label = label.clone();
                t.escalated_label = escalated_label.clone();
                Tracker::Local(t)
            }
            crate::config::TrackerConfig::Github {
                label,
                escalated_label,
            } => {
                let mut t = GitHub::new(cfg.project_path.clone());
                t.label = label.clone();
                t.escalated_label = escalated_label.clone();
                t.authority = cfg.review.authority();
                Tracker::GitHub(t)
            }
            crate::config::TrackerConfig::Gitlab {
                label,
                escalated_label,
            } => Tracker::GitLab(GitLab {
                api: crate::services::gitlab::client::from_config(cfg)?,
                project: cfg.gitlab.project.clone().unwrap_or_default(),
                label: label.clone(),
                escalated_label: escalated_label.clone(),
                links_unreadable: Default::default(),
                authority: cfg.review.authority(),
            }),
            crate::config::TrackerConfig::Linear {
                label,
                escalated_label,
            } => Tracker::Linear(Linear {
                api: crate::services::linear::client::from_config(cfg)?,
                team: cfg.linear.team.clone().unwrap_or_default(),
                label: label.clone(),
                escalated_label: escalated_label.clone(),
            }),
        })
    }

    /// Whether the issue carries the label selection requires.
    pub fn selectable(&self, issue: &Issue) -> bool {
        let label = match self {
            Tracker::GitHub(t) => &t.label,
            Tracker::GitLab(t) => &t.label,
            Tracker::Linear(t) => &t.label,
            Tracker::Local(t) => &t.label,
        };
        issue.labels.contains(label)
    }

    /// The issue `number`, open or closed.
    pub fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        let got = match self {
            Tracker::GitHub(t) => t.get(number),
            Tracker::GitLab(t) => t.get(number),
            Tracker::Linear(t) => t.get(number),
            Tracker::Local(t) => t.get(number),
        };
        traced(self.kind(), "get", number, got)
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
