//! The GitHub tracker, through the `gh` CLI run in the project directory (so `gh` resolves
//! the repository from its git remote).
//!
//! Calls: `gh api --include repos/{owner}/{repo}/milestones?state=open&per_page=100&page=N`
//! for the open milestones (a rate limit told from the answer's status and headers); `gh issue list --state open --label <label> --limit 1000 --json …` for the
//! candidates; `gh issue list --state all --milestone <title> --json …` for the dependencies
//! inside the chosen milestone (or `gh issue view N --json …` per dependency without one);
//! the escalation mark, the close of a merged issue GitHub left open, and the claims'
//! comments go through the REST API (`rest.rs`), so a rate limit on a write is a wait.
//!
//! Older `gh` releases lack the `parent` and `closedByPullRequestsReferences` JSON fields
//! (gh 2.23 has neither). Which ones this gh knows is probed once per run (`gh issue list
//! --json` lists its fields); the others are never asked for, and dependencies then come
//! from the issue bodies only.

mod claims;
mod rest;

use super::{escalation_text, select_from, Issue, Scope, Selection, TrackerError};
use crate::call_failure::{http_answer, CallFailureKind};
use crate::notify::tail;
use crate::process::run_captured;
use serde::Deserialize;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

#[derive(Debug)]
/// The GitHub tracker: issues read and marked through the `gh` CLI, run in the project's clone.
pub struct GitHub {
    /// The `gh` program. Default `gh` (found on PATH).
    pub gh: PathBuf,
    /// Where `gh` runs: the project's checkout.
    pub repo_dir: PathBuf,
    /// Only issues carrying this label are selected. Default `automatable`.
    pub label: String,
    /// The durable escalation mark. Default `sdlc-escalated`.
    pub escalated_label: String,
    /// Time limit of one `gh` call. Default 120 s.
    pub timeout: Duration,
    /// Bit set of the optional JSON fields this `gh` lacks, with bit 7 once probed.
    unsupported: AtomicU8,
}

const BASE_FIELDS: &str = "number,title,body,labels,milestone,state";
const STATE_FIELDS: &str = "number,state,milestone";
/// Optional fields and their bit in `GitHub::unsupported`.
const OPTIONAL_FIELDS: [(&str, u8); 2] = [("parent", 1), ("closedByPullRequestsReferences", 2)];
const LIST_LIMIT: &str = "1000";
/// GitHub rejects comments over 65 536 characters.
const MAX_COMMENT_BYTES: usize = 60_000;

#[derive(Debug, Deserialize)]
struct GhLabel {
    name: String,
}

#[derive(Debug, Deserialize)]
struct GhMilestone {
    title: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GhIssue {
    number: u32,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    labels: Vec<GhLabel>,
    #[serde(default)]
    milestone: Option<GhMilestone>,
    state: String,
    #[serde(default)]
    parent: Option<serde_json::Value>,
    #[serde(default)]
    closed_by_pull_requests_references: Option<Vec<serde_json::Value>>,
}

impl GitHub {
    /// A tracker for the repository of the clone at `repo_dir`, with the default labels and a
    /// two-minute limit per `gh` call.
    pub fn new(repo_dir: impl Into<PathBuf>) -> GitHub {
        GitHub {
            gh: PathBuf::from("gh"),
            repo_dir: repo_dir.into(),
            label: "automatable".into(),
            escalated_label: "sdlc-escalated".into(),
            timeout: Duration::from_secs(120),
            unsupported: AtomicU8::new(0),
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
        let milestones = self.open_milestones()?;
        let candidates: Vec<Issue> = self
            .issue_list(&["--state", "open", "--label", &self.label], BASE_FIELDS)?
            .into_iter()
            .filter(|i| i.state_open)
            .collect();
        let open_candidates: BTreeSet<u32> = candidates.iter().map(|i| i.number).collect();
        let mut milestone_issues: Option<HashMap<u32, Issue>> = None;
        let mut viewed: HashMap<u32, Option<Issue>> = HashMap::new();
        let mut blocks = |scope: &Scope, dep: u32| -> Result<bool, TrackerError> {
            match scope {
                Scope::Milestone(m) => {
                    if milestone_issues.is_none() {
                        let list =
                            self.issue_list(&["--state", "all", "--milestone", m], STATE_FIELDS)?;
                        milestone_issues = Some(list.into_iter().map(|i| (i.number, i)).collect());
                    }
                    Ok(milestone_issues
                        .as_ref()
                        .and_then(|all| all.get(&dep))
                        .is_some_and(|d| d.milestone.as_ref() == Some(m) && !d.is_done()))
                }
                Scope::Repo if open_candidates.contains(&dep) => Ok(true),
                Scope::Repo => {
                    let issue = match viewed.entry(dep) {
                        Entry::Occupied(e) => e.into_mut(),
                        Entry::Vacant(e) => e.insert(self.view(dep, STATE_FIELDS)?),
                    };
                    Ok(issue.as_ref().is_some_and(|d| !d.is_done()))
                }
            }
        };
        select_from(
            &milestones,
            &candidates,
            escalated_this_session,
            merged,
            &mut blocks,
        )
    }

    /// Quarantines the issue: adds the escalated label and a comment with `diagnostic` and how to
    /// release it.
    pub fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        self.add_label(
            number,
            &self.escalated_label,
            "B60205",
            "sdlc-runner gave up on this issue; remove the label to let it run again",
        )?;
        let how = format!(
            "Release it with `sdlc-runner release {number}` (or remove the `{}` label) to let it be selected again.",
            self.escalated_label
        );
        self.comment(
            number,
            &escalation_text(diagnostic, &how, MAX_COMMENT_BYTES),
        )
    }

    /// Makes sure the merged issue is closed. GitHub closes it from the PR's "Closes #N" only
    /// when the merging token may write issues and the PR's base is the default branch, so
    /// the state is read back; an issue still open gets `note` as a comment and is closed.
    /// Safe to repeat: a closed issue is left alone.
    pub fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        if !self.is_open(number)? {
            return Ok(());
        }
        let body = format!(
            "{note}: GitHub left the issue open after the merge, so sdlc-runner closed it."
        );
        self.comment(number, &crate::redact::redact(&body))?;
        self.close_issue(number)
    }

    /// Lifts the runner's own quarantine: removes the escalated label and comments `note`
    /// saying why.
    pub fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        self.remove_escalated_label(number)?;
        self.comment(number, &crate::redact::redact(note))
    }

    /// Lifts the quarantine: removes the escalated label. Returns whether it was there.
    pub fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let was = self.get(number)?.escalated;
        if was {
            self.remove_escalated_label(number)?;
        }
        Ok(was)
    }

    fn remove_escalated_label(&self, number: u32) -> Result<(), TrackerError> {
        self.remove_label(number, &self.escalated_label)
    }

    /// The issue `number`, open or closed.
    pub fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        self.view(number, BASE_FIELDS)?
            .ok_or_else(|| TrackerError::NotFound {
                number,
                location: format!("the GitHub repository of {}", self.repo_dir.display()),
            })
    }

    /// The issue's title, body and comments (`gh issue view N --json title,body,comments`).
    pub fn text(&self, number: u32) -> Result<super::IssueText, TrackerError> {
        let n = number.to_string();
        let args = ["issue", "view", n.as_str(), "--json", "title,body,comments"];
        let out = self.gh(&args, None)?;
        serde_json::from_str::<super::text::GhText>(&out)
            .map(|t| t.into_text(number))
            .map_err(|source| TrackerError::Json {
                command: self.display(&args),
                source,
            })
    }

    /// The titles of the open milestones, page by page (`gh api --include` prints one page
    /// with its head; a page shorter than the page size is the last).
    fn open_milestones(&self) -> Result<Vec<String>, TrackerError> {
        let mut titles = Vec::new();
        for page in 1.. {
            let endpoint =
                format!("repos/{{owner}}/{{repo}}/milestones?state=open&per_page=100&page={page}");
            let out = self.rest("GET", &endpoint, None)?;
            let list: Vec<GhMilestone> =
                serde_json::from_slice(&out).map_err(|source| TrackerError::Json {
                    command: self.display(&["api", &endpoint]),
                    source,
                })?;
            let last = list.len() < 100;
            titles.extend(list.into_iter().map(|m| m.title));
            if last {
                break;
            }
        }
        Ok(titles)
    }

    fn issue_list(&self, filters: &[&str], fields: &str) -> Result<Vec<Issue>, TrackerError> {
        let mut args = vec!["issue", "list"];
        args.extend_from_slice(filters);
        args.extend_from_slice(&["--limit", LIST_LIMIT]);
        let (out, command) = self.json_query(&args, fields)?;
        self.parse_issue_list(&out)
            .map_err(|source| TrackerError::Json { command, source })
    }

    /// The issues `gh issue list --json …` printed (pure: no `gh` runs).
    pub fn parse_issue_list(&self, json: &str) -> Result<Vec<Issue>, serde_json::Error> {
        let list: Vec<GhIssue> = serde_json::from_str(json)?;
        Ok(list.into_iter().map(|i| self.to_issue(i)).collect())
    }

    /// The issue `gh issue view --json …` printed (pure: no `gh` runs).
    pub fn parse_issue(&self, json: &str) -> Result<Issue, serde_json::Error> {
        let issue: GhIssue = serde_json::from_str(json)?;
        Ok(self.to_issue(issue))
    }

    /// `None` when GitHub has no issue with that number.
    fn view(&self, number: u32, fields: &str) -> Result<Option<Issue>, TrackerError> {
        let n = number.to_string();
        match self.json_query(&["issue", "view", n.as_str()], fields) {
            Ok((out, command)) => {
                let issue = self
                    .parse_issue(&out)
                    .map_err(|source| TrackerError::Json { command, source })?;
                Ok(Some(issue))
            }
            Err(e) if mentions(&e, "could not resolve to an issue") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Runs `args --json <fields + the optional fields this gh knows>`. Returns stdout and
    /// the command that produced it.
    fn json_query(&self, args: &[&str], fields: &str) -> Result<(String, String), TrackerError> {
        let unsupported = self.unsupported_fields();
        let mut all = fields.to_string();
        for (name, bit) in OPTIONAL_FIELDS {
            if unsupported & bit == 0 {
                all.push(',');
                all.push_str(name);
            }
        }
        let mut full: Vec<&str> = args.to_vec();
        full.extend_from_slice(&["--json", all.as_str()]);
        let out = self.gh(&full, None)?;
        Ok((out, self.display(&full)))
    }

    /// The optional fields this gh lacks, probed once per run: `gh issue list --json` without
    /// a field list prints the fields it knows, one per indented line (gh 2.23 and later
    /// alike, without a request to GitHub). A field it does not list is never asked for.
    fn unsupported_fields(&self) -> u8 {
        const PROBED: u8 = 0x80;
        let known = self.unsupported.load(Ordering::Relaxed);
        if known & PROBED != 0 {
            return known & !PROBED;
        }
        let listed: BTreeSet<String> = match self.run_gh(&["issue", "list", "--json"], None) {
            Ok(out) => out
                .stdout
                .lines()
                .chain(out.stderr.lines())
                .filter(|l| l.starts_with("  "))
                .map(|l| l.trim().to_string())
                .collect(),
            Err(_) => BTreeSet::new(),
        };
        let missing: u8 = OPTIONAL_FIELDS
            .iter()
            .filter(|(name, _)| !listed.contains(*name))
            .map(|(_, bit)| bit)
            .sum();
        self.unsupported.store(missing | PROBED, Ordering::Relaxed);
        missing
    }

    fn gh(&self, args: &[&str], stdin: Option<Vec<u8>>) -> Result<String, TrackerError> {
        let out = self.run_gh(args, stdin)?;
        match out.status.and_then(|s| s.code()) {
            Some(0) => Ok(out.stdout),
            code => {
                let mut kind = CallFailureKind::of_gh(&out.stderr);
                if matches!(kind, CallFailureKind::Permission | CallFailureKind::Other) {
                    if let Some(wait_secs) = self.budget_spent() {
                        kind = CallFailureKind::RateLimited { wait_secs };
                    }
                }
                Err(self.failed(args, code, &out.stderr, kind))
            }
        }
    }

    /// gh's `issue` commands print only GitHub's words: where those could be a rate limit's,
    /// GitHub's own account of the budget (`GET /rate_limit`, which costs none of it) says
    /// whether it is spent and until when.
    fn budget_spent(&self) -> Option<u64> {
        let out = self.run_gh(&http_answer::BUDGET_ARGS, None).ok()?;
        http_answer::budget_spent_now(out.stdout.as_bytes())
    }

    fn failed(
        &self,
        args: &[&str],
        code: Option<i32>,
        stderr: &str,
        kind: CallFailureKind,
    ) -> TrackerError {
        TrackerError::Command {
            command: self.display(args),
            kind,
            detail: format!(
                "{}: {}",
                code.map_or_else(
                    || "killed by a signal".to_string(),
                    |c| format!("exit code {c}")
                ),
                tail(&crate::redact::redact(stderr), 2000)
            ),
        }
    }

    /// Runs `gh args` within the time limit; its output whatever its exit code.
    fn run_gh(
        &self,
        args: &[&str],
        stdin: Option<Vec<u8>>,
    ) -> Result<crate::process::Captured, TrackerError> {
        let mut cmd = Command::new(&self.gh);
        cmd.args(args)
            .current_dir(&self.repo_dir)
            // Never wait for a pager or a prompt: the runner is unattended.
            .env("GH_PAGER", "cat")
            .env("GH_PROMPT_DISABLED", "1")
            .env("NO_COLOR", "1");
        let command = self.display(args);
        let out =
            run_captured(cmd, stdin, self.timeout, None).map_err(|e| TrackerError::Command {
                command: command.clone(),
                kind: CallFailureKind::of_io(&e),
                detail: match crate::process::stopped(&e) {
                    Some(why) => why.to_string(),
                    None => format!(
                "cannot run it ({e}); install the GitHub CLI or set the path to gh in the config"
            ),
                },
            })?;
        if out.timed_out {
            return Err(TrackerError::Command {
                command,
                detail: format!(
                    "no answer within {}s; check the network and `gh auth status`",
                    self.timeout.as_secs()
                ),
                kind: CallFailureKind::TimedOut,
            });
        }
        Ok(out)
    }

    /// The command as a person would type it, for error messages.
    fn display(&self, args: &[&str]) -> String {
        let mut s = self.gh.display().to_string();
        for a in args {
            s.push(' ');
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                s.push('\'');
                s.push_str(&a.replace('\'', "'\\''"));
                s.push('\'');
            } else {
                s.push_str(a);
            }
        }
        s
    }

    fn to_issue(&self, i: GhIssue) -> Issue {
        let labels: Vec<String> = i.labels.into_iter().map(|l| l.name).collect();
        Issue {
            escalated: labels.contains(&self.escalated_label),
            number: i.number,
            title: i.title,
            body: i.body.unwrap_or_default(),
            labels,
            milestone: i.milestone.map(|m| m.title),
            state_open: i.state.eq_ignore_ascii_case("open"),
            parent: i.parent.as_ref().and_then(number_of),
            closed_by_merged_pr: i
                .closed_by_pull_requests_references
                .as_deref()
                .and_then(merged_verdict),
        }
    }
}

/// `parent` may be an object carrying `number`, or a bare number.
fn number_of(v: &serde_json::Value) -> Option<u32> {
    let n = v.get("number").unwrap_or(v).as_u64()?;
    u32::try_from(n).ok().filter(|n| *n > 0)
}

/// Whether the listed closing pull requests include a merged one. A reference without any
/// state information counts as merged: GitHub lists it as having closed the issue.
fn merged_verdict(refs: &[serde_json::Value]) -> Option<bool> {
    if refs.is_empty() {
        return None;
    }
    let merged = refs.iter().any(|r| {
        let state = r.get("state").and_then(|s| s.as_str());
        let merged_at = r.get("mergedAt").is_some_and(|m| !m.is_null());
        let merged_flag = r.get("merged").and_then(|m| m.as_bool());
        merged_at
            || merged_flag == Some(true)
            || state.is_some_and(|s| s.eq_ignore_ascii_case("merged"))
            || (state.is_none() && merged_flag.is_none() && r.get("mergedAt").is_none())
    });
    Some(merged)
}

fn mentions(e: &TrackerError, needle: &str) -> bool {
    match e {
        TrackerError::Command { detail, .. } => detail
            .to_ascii_lowercase()
            .contains(&needle.to_ascii_lowercase()),
        _ => false,
    }
}
