//! The local tracker: a directory with one JSON file per issue, named `<N>.json`.
//!
//! ```json
//! {
//!   "number": 1,
//!   "title": "Add a login page",
//!   "body": "Depends on: #2",
//!   "state": "open",
//!   "labels": ["automatable"],
//!   "milestone": null,
//!   "escalated": false,
//!   "escalation": null
//! }
//! ```
//!
//! `number`, `title` and `state` (`open` | `closed`) are required; `body` (""), `labels`
//! ([]), `milestone` (null), `parent` (null: the number of a parent issue), `escalated`
//! (false) and `escalation` (null: the diagnostic of the escalation) are optional. The runner
//! writes `escalated`/`escalation` when it quarantines an issue, and `state: "closed"` plus
//! `resolution` (a note) when it merged the issue's work. When it lifts a quarantine of its own
//! (the same failure ended the next issue too: the environment's), `escalated` becomes false,
//! the escalated label and `escalation` go, and `released` says why. Keys it does not know are kept as
//! they are. Files not ending in `.json` are ignored; a `.json` file that is not a valid
//! issue, or whose name is not its `number`, is an error naming the file. Every write goes to
//! a temporary file in the same directory that is then renamed over the issue file, so a
//! crash never leaves half an issue.
//!
//! An "open milestone" here is a milestone that some open issue names.

use crate::call_failure::CallFailureKind;
use crate::tracker::{escalation_text, select_from, Issue, Scope, Selection, TrackerError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
/// The local tracker: one JSON file per issue (`<N>.json`) in a directory, for offline use and
/// tests.
pub struct Local {
    /// The directory of issue files (`tracker.dir`).
    pub dir: PathBuf,
    /// Only issues carrying this label are selected. Default `automatable`.
    pub label: String,
    /// A label that counts as the escalation mark, besides the `escalated` field. Default
    /// `sdlc-escalated`.
    pub escalated_label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Open,
    Closed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct IssueFile {
    number: u32,
    title: String,
    #[serde(default)]
    body: String,
    state: State,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    milestone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<u32>,
    #[serde(default)]
    escalated: bool,
    #[serde(default)]
    escalation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resolution: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    released: Option<String>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

/// Escalation diagnostics kept in the file are bounded so the file stays readable.
const MAX_ESCALATION_BYTES: usize = 16 * 1024;

impl Local {
    /// A tracker over the issue files in `dir`, with the default labels.
    pub fn new(dir: impl Into<PathBuf>) -> Local {
        Local {
            dir: dir.into(),
            label: "automatable".into(),
            escalated_label: "sdlc-escalated".into(),
        }
    }

    /// The lowest-numbered open issue with the selection label that is neither escalated
    /// (durably or in `escalated_this_session`) nor waiting for an open dependency; `merged` (issues the runner merged) count as done
    /// dependencies.
    pub fn select(
        &self,
        escalated_this_session: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        let all = self.load_all()?;
        let open_milestones: Vec<String> = all
            .values()
            .filter(|i| i.state_open)
            .filter_map(|i| i.milestone.clone())
            .collect();
        let candidates: Vec<Issue> = all
            .values()
            .filter(|i| i.state_open && i.labels.contains(&self.label))
            .cloned()
            .collect();
        let mut blocks = |scope: &Scope, dep: u32| {
            Ok(match all.get(&dep) {
                None => false,
                Some(d) => match scope {
                    Scope::Milestone(m) if d.milestone.as_ref() != Some(m) => false,
                    _ => !d.is_done(),
                },
            })
        };
        select_from(
            &open_milestones,
            &candidates,
            escalated_this_session,
            merged,
            &mut blocks,
        )
    }

    /// Quarantines the issue: sets `escalated` and records `diagnostic` with how to release it (a
    /// person's own escalation text is kept).
    pub fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        let how = format!(
            "Release it with `sdlc-runner release {number}` (or set \"escalated\" to false in {}) to let it be selected again.",
            self.path(number).display()
        );
        self.update(number, |f| {
            // A person who escalated it first keeps their words.
            if !f.escalated {
                f.escalated = true;
                f.escalation = Some(escalation_text(diagnostic, &how, MAX_ESCALATION_BYTES));
            }
        })
    }

    /// Closes the issue, recording `note` (the GitHub tracker's issues are closed by their merged
    /// PR).
    pub fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        self.update(number, |f| {
            // A person who closed it first keeps their resolution.
            if f.state != State::Closed {
                f.state = State::Closed;
                f.resolution = Some(crate::redact::redact(note));
            }
        })
    }

    /// Writes a new open issue with the next free number (one more than the highest file)
    /// and returns the number. The file is created exclusively, so two writers never share
    /// a number.
    pub fn create(&self, title: &str, body: &str, labels: &[String]) -> Result<u32, TrackerError> {
        let next = self.load_all()?.keys().max().copied().unwrap_or(0) + 1;
        let file = IssueFile {
            number: next,
            title: title.to_string(),
            body: body.to_string(),
            state: State::Open,
            labels: labels.to_vec(),
            milestone: None,
            parent: None,
            escalated: false,
            escalation: None,
            resolution: None,
            released: None,
            other: serde_json::Map::new(),
        };
        let path = self.path(next);
        let mut json = serde_json::to_string_pretty(&file).map_err(|e| TrackerError::File {
            path: path.clone(),
            message: format!("cannot serialize the issue: {e}"),
            kind: CallFailureKind::Other,
        })?;
        json.push('\n');
        crate::safe_fs::write_new(&path, json.as_bytes()).map_err(|e| TrackerError::File {
            path: path.clone(),
            message: format!("cannot create it: {e}"),
            kind: CallFailureKind::of_io(&e),
        })?;
        Ok(next)
    }

    /// Every issue file, by number; an invalid file is an error naming it.
    pub fn all(&self) -> Result<Vec<Issue>, TrackerError> {
        Ok(self.load_all()?.into_values().collect())
    }

    /// The escalation diagnostic and the resolution note kept in the issue's file.
    pub fn notes(&self, number: u32) -> Result<(Option<String>, Option<String>), TrackerError> {
        let file = read_issue_file(&self.path(number), Some(number))?;
        Ok((file.escalation, file.resolution))
    }

    /// Lifts the quarantine: `escalated` false, the escalated label gone, the diagnostic
    /// dropped. Returns whether the issue was quarantined.
    pub fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let mut was = false;
        let label = self.escalated_label.clone();
        self.update(number, |f| {
            was = f.escalated || f.labels.contains(&label);
            f.escalated = false;
            f.escalation = None;
            f.labels.retain(|l| *l != label);
        })?;
        Ok(was)
    }

    /// Lifts the runner's own quarantine with `note` saying why (`released`): the issue can be
    /// selected again.
    pub fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        let label = self.escalated_label.clone();
        self.update(number, |f| {
            f.escalated = false;
            f.escalation = None;
            f.labels.retain(|l| *l != label);
            f.released = Some(crate::redact::redact(note));
        })
    }

    /// Opens a closed issue again (its resolution note is dropped). Returns whether it was
    /// closed.
    pub fn reopen(&self, number: u32) -> Result<bool, TrackerError> {
        let mut was = false;
        self.update(number, |f| {
            was = f.state == State::Closed;
            f.state = State::Open;
            f.resolution = None;
        })?;
        Ok(was)
    }

    /// The issue `number`, open or closed; `NotFound` when it has no file.
    pub fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        let path = self.path(number);
        if !path.exists() {
            return Err(TrackerError::NotFound {
                number,
                location: format!("the local tracker {}", self.dir.display()),
            });
        }
        let file = read_issue_file(&path, Some(number))?;
        Ok(self.to_issue(file))
    }

    fn path(&self, number: u32) -> PathBuf {
        self.dir.join(format!("{number}.json"))
    }

    fn to_issue(&self, f: IssueFile) -> Issue {
        Issue {
            escalated: f.escalated || f.labels.contains(&self.escalated_label),
            number: f.number,
            title: f.title,
            body: f.body,
            labels: f.labels,
            milestone: f.milestone,
            state_open: f.state == State::Open,
            parent: f.parent,
            closed_by_merged_pr: None,
            blocked_by: Vec::new(),
        }
    }

    fn load_all(&self) -> Result<BTreeMap<u32, Issue>, TrackerError> {
        let dir_err = |source| TrackerError::Dir {
            dir: self.dir.clone(),
            source,
        };
        let mut issues = BTreeMap::new();
        for entry in fs::read_dir(&self.dir).map_err(dir_err)? {
            let path = entry.map_err(dir_err)?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") || !path.is_file() {
                continue;
            }
            let file = read_issue_file(&path, None)?;
            issues.insert(file.number, self.to_issue(file));
        }
        Ok(issues)
    }

    fn update(&self, number: u32, change: impl FnOnce(&mut IssueFile)) -> Result<(), TrackerError> {
        let path = self.path(number);
        if !path.exists() {
            return Err(TrackerError::NotFound {
                number,
                location: format!("the local tracker {}", self.dir.display()),
            });
        }
        let mut file = read_issue_file(&path, Some(number))?;
        change(&mut file);
        write_atomically(&path, &file)
    }
}

/// Reads and checks one issue file; `expected` is the number its name promises.
fn read_issue_file(path: &Path, expected: Option<u32>) -> Result<IssueFile, TrackerError> {
    let bad = |message: String| TrackerError::File {
        path: path.to_path_buf(),
        message,
        kind: CallFailureKind::Other,
    };
    let io = |e: std::io::Error, what: &str| TrackerError::File {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
        kind: CallFailureKind::of_io(&e),
    };
    let stem_number = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse::<u32>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| {
            bad("the name must be <issue number>.json (e.g. 12.json); rename or remove it".into())
        })?;
    let text = fs::read_to_string(path).map_err(|e| io(e, "cannot read it"))?;
    let file: IssueFile = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not a valid issue ({e}); expected {{\"number\": N, \"title\": \"…\", \"state\": \"open\"|\"closed\", …}}"
        ))
    })?;
    if file.number != stem_number || expected.is_some_and(|n| n != file.number) {
        return Err(bad(format!(
            "its \"number\" is {} but the file name says {stem_number}; make them agree",
            file.number
        )));
    }
    Ok(file)
}

fn write_atomically(path: &Path, file: &IssueFile) -> Result<(), TrackerError> {
    let io = |e: std::io::Error, what: &str| TrackerError::File {
        path: path.to_path_buf(),
        message: format!("{what}: {e}"),
        kind: CallFailureKind::of_io(&e),
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut json = serde_json::to_string_pretty(file).map_err(|e| TrackerError::File {
        path: path.to_path_buf(),
        message: format!("cannot serialize the issue: {e}"),
        kind: CallFailureKind::Other,
    })?;
    json.push('\n');
    // The temp file has no .json extension, so a reader never mistakes it for an issue.
    let mut tmp = tempfile::Builder::new()
        .prefix(".issue-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| io(e, "cannot create a temporary file beside it"))?;
    // tempfile creates 0600 files; keep the issue file's own permissions.
    if let Ok(meta) = fs::metadata(path) {
        let _ = tmp.as_file().set_permissions(meta.permissions());
    }
    crate::stats::fsynced();
    tmp.write_all(json.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io(e, "cannot write a temporary file beside it"))?;
    tmp.persist(path)
        .map_err(|e| io(e.error, "cannot replace it"))?;
    Ok(())
}
