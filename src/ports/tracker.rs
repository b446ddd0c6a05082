//! The tracker port: where issues are selected, read, closed and quarantined. Its error is
//! [`TrackerError`], whose kind (`Kinded::kind`) the adapter decided when it made it: the
//! driver turns a transient kind into `NetworkFailed` and every other failed write into
//! `TrackerWriteFailed`, never by reading the message.

use crate::call_failure::{CallFailureKind, Kinded};
use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;

/// The issue tracker of the project.
pub trait TrackerPort: Send + Sync {
    /// The next issue to work on, excluding `excluded` on top of the tracker's own durable
    /// marks (escalated, closed, blocked by an open dependency); `merged` (issues the runner
    /// merged) are done as dependencies whatever the tracker shows.
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError>;
    /// One issue as the tracker shows it now (a person may have closed or relabelled it).
    fn get(&self, number: u32) -> Result<Issue, TrackerError>;
    /// The issue's whole text for the agent (title, body, and comments where the tracker
    /// has them).
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        self.get(number).map(|i| IssueText::of(&i))
    }
    /// Records that the issue is done (merged).
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError>;
    /// Quarantines the issue durably with the diagnostic.
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError>;
    /// Lifts the quarantine the runner put on the issue, with a note saying why.
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError>;
    /// Lifts the durable quarantine, whoever put it there (`sdlc-runner release`); whether
    /// the issue was quarantined.
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError>;
    /// Open issues that lack the selection label (said, never selected).
    fn open_without_label(&self) -> Vec<u32>;
    /// The label selection requires.
    fn label(&self) -> &str;
    /// Whether the issue carries the selection label.
    fn selectable(&self, issue: &Issue) -> bool {
        issue.labels.iter().any(|l| l == self.label())
    }
    /// The command that releases a quarantined issue, for messages.
    fn release_hint(&self, number: u32, config: &std::path::Path) -> String {
        format!("sdlc-runner release {number} --config {}", config.display())
    }
}

/// One issue as the runner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// The issue's number, unique in the tracker.
    pub number: u32,
    /// Its title, which names its feature branch.
    pub title: String,
    /// Its body, where `Depends on: #N` lines are read.
    pub body: String,
    /// Its labels; the selection label makes it a candidate.
    pub labels: Vec<String>,
    /// Its milestone's title, if any.
    pub milestone: Option<String>,
    /// Whether it is open.
    pub state_open: bool,
    /// Durably quarantined: GitHub label `sdlc-escalated` (configurable), local field
    /// `escalated` (or the same label in the file's `labels`).
    pub escalated: bool,
    /// The parent issue (GitHub sub-issues; local field `parent`), when known.
    pub parent: Option<u32>,
    /// Whether a pull request that closed the issue was merged: `None` when the tracker
    /// lists no closing pull request (or an older `gh` cannot tell).
    pub closed_by_merged_pr: Option<bool>,
    /// Issues the tracker's own links say block this one (GitLab's `is_blocked_by` links,
    /// Linear's `blocks` relations), beside the body's lines.
    pub blocked_by: Vec<u32>,
}

/// What the tracker offers the next cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The issue to work on.
    Issue(Issue),
    /// No open `automatable` issue at all: nothing to do (exit 0).
    NoIssues,
    /// Candidates exist, but every one is escalated (halt `all issues escalated`).
    AllEscalated {
        /// The escalated candidates, ascending.
        numbers: Vec<u32>,
    },
    /// Every candidate that is not escalated waits for an open dependency (halt
    /// `all issues blocked`). `numbers` are the blocked candidates, ascending.
    AllBlocked {
        /// The blocked candidates, ascending.
        numbers: Vec<u32>,
    },
}

#[derive(Debug, thiserror::Error)]
/// Why the tracker could not be read or written; `Kinded` tells a transient failure from a lasting
/// one.
pub enum TrackerError {
    #[error("`{command}` failed: {detail}")]
    /// A `gh` or tracker command failed.
    Command {
        /// The command line, for the message.
        command: String,
        /// What it printed.
        detail: String,
        /// Decided from what the command printed when the error is made.
        kind: CallFailureKind,
    },
    #[error(
        "`{command}` printed output that is not the expected JSON ({source}); \
         check that gh is up to date and logged in (`gh auth status`)"
    )]
    /// A command's output was not the JSON expected.
    Json {
        /// The command line, for the message.
        command: String,
        #[source]
        /// The parser's error.
        source: serde_json::Error,
    },
    #[error("issue file {}: {message}", path.display())]
    /// A local issue file could not be read, parsed or written.
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
        /// Transient or lasting, for the machine.
        kind: CallFailureKind,
    },
    #[error(
        "cannot read the issue directory {}: {source}; tracker.dir must be a directory of <N>.json files",
        dir.display()
    )]
    /// The local tracker's directory could not be listed.
    Dir {
        /// The directory.
        dir: PathBuf,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    /// The issue does not exist.
    #[error("issue #{number} does not exist in {location}")]
    NotFound {
        /// The issue asked for.
        number: u32,
        /// Where it was looked for (repository or directory).
        location: String,
    },
}

impl Kinded for TrackerError {
    fn kind(&self) -> CallFailureKind {
        match self {
            TrackerError::Command { kind, .. } | TrackerError::File { kind, .. } => *kind,
            TrackerError::Json { .. } => CallFailureKind::Other,
            TrackerError::Dir { source, .. } => CallFailureKind::of_io(source),
            TrackerError::NotFound { .. } => CallFailureKind::NotFound,
        }
    }
}

/// One comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Comment {
    /// Who wrote it (GitHub login), when known.
    pub author: String,
    /// What it says.
    pub body: String,
}

/// What an issue says, in full.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IssueText {
    /// The issue's number.
    pub number: u32,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
    /// Its comments, oldest first.
    pub comments: Vec<Comment>,
}
