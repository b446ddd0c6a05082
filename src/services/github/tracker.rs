//! The GitHub tracker, through the `gh` CLI run in the project directory (so `gh` resolves
//! the repository from its git remote).
//!
//! Every call is GitHub's REST API through `gh api --include` (`rest.rs`), so every failed
//! answer is classified from its HTTP status and headers, a rate limit (primary or
//! secondary) among them, which the machine waits out: the open milestones
//! (`…/milestones?state=open`), the candidates (`…/issues?labels=<label>&state=open`, pull
//! requests dropped), the dependencies inside the chosen milestone
//! (`…/issues?milestone=<number>&state=all`) or one by one without one (`…/issues/N`, 404:
//! no such issue), an issue's text (`…/issues/N` and its comments), and the writes (labels,
//! comments, the close of a merged issue GitHub left open, the claims' assignment). Lists
//! are read page by page.
//!
//! REST names an issue's parent (`parent_issue_url`, a sub-issue's) but not the pull
//! requests that closed it: a closed dependency counts as done unless GitHub says it was
//! closed as not planned (`state_reason`).

mod claims;
mod rest;

use crate::call_failure::{path_segment, CallFailureKind};
use crate::notify::tail;
use crate::services::github::gh::{self, Gh, GhError, Printed};
use crate::tracker::{escalation_text, select_from_with, Issue, Scope, Selection, TrackerError};
use serde::Deserialize;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;
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
    /// Time limit of one `gh` call. Default two minutes.
    pub timeout: Duration,
    /// The login gh's token belongs to (`GET /user`), read once, for the claims' assignment.
    login: OnceLock<String>,
    /// Whose comments reach the agent beside the people with write access, and whose never
    /// (`review.trustedAuthors`, `review.ignoreAuthors`); who may apply the label.
    pub authority: crate::authority::Authority,
    /// The collaborator permissions already asked for this run, by login.
    permissions: std::sync::Mutex<HashMap<String, String>>,
    /// Each listed issue's `updated_at`, as the last list read it: an issue nothing touched
    /// since its label was applied was not edited after it, and GraphQL is not asked.
    updated: std::sync::Mutex<HashMap<u32, String>>,
}

/// GitHub rejects comments over 65 536 characters.
const MAX_COMMENT_BYTES: usize = 60_000;

#[derive(Debug, Deserialize)]
struct GhLabel {
    name: String,
}

#[derive(Debug, Deserialize)]
struct GhMilestone {
    #[serde(default)]
    number: u64,
    title: String,
}

/// An issue as GitHub's REST API answers it (`…/issues/N`, an entry of `…/issues`).
#[derive(Debug, Deserialize)]
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
    /// `completed`, `not_planned` or `reopened` (GitHub's reason for the state).
    #[serde(default)]
    state_reason: Option<String>,
    /// A sub-issue's parent, as its address (`…/issues/N`).
    #[serde(default)]
    parent_issue_url: Option<String>,
    /// Present on the pull requests the issues' list holds too.
    #[serde(default)]
    pull_request: Option<serde_json::Value>,
    /// The last change of any kind (an edit, a label, a comment), RFC 3339.
    #[serde(default)]
    updated_at: Option<String>,
}

impl GitHub {
    /// A tracker for the repository of the clone at `repo_dir`, with the default labels.
    pub fn new(repo_dir: impl Into<PathBuf>) -> GitHub {
        GitHub {
            gh: PathBuf::from("gh"),
            repo_dir: repo_dir.into(),
            label: "automatable".into(),
            escalated_label: "sdlc-escalated".into(),
            timeout: gh::TIMEOUT,
            login: OnceLock::new(),
            authority: Default::default(),
            permissions: Default::default(),
            updated: Default::default(),
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
        let candidates: Vec<Issue> = self
            .issue_list(&format!("state=open&labels={}", path_segment(&self.label)))?
            .into_iter()
            .filter(|i| i.state_open)
            .collect();
        // The open milestones scope the selection only through a candidate's milestone: with
        // no candidate in one, they are not asked for.
        let milestones = if candidates.iter().any(|i| i.milestone.is_some()) {
            self.open_milestones()?
        } else {
            Vec::new()
        };
        let open_candidates: BTreeSet<u32> = candidates.iter().map(|i| i.number).collect();
        let numbers: HashMap<String, u64> = milestones.iter().cloned().collect::<HashMap<_, _>>();
        let titles: Vec<String> = milestones.iter().map(|(t, _)| t.clone()).collect();
        let mut milestone_issues: Option<HashMap<u32, Issue>> = None;
        let mut viewed: HashMap<u32, Option<Issue>> = HashMap::new();
        let mut blocks = |scope: &Scope, dep: u32| -> Result<bool, TrackerError> {
            match scope {
                Scope::Milestone(m) => {
                    if milestone_issues.is_none() {
                        let number = numbers.get(m).copied().unwrap_or_default();
                        let list = self.issue_list(&format!("state=all&milestone={number}"))?;
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
                        Entry::Vacant(e) => e.insert(self.view(dep)?),
                    };
                    Ok(issue.as_ref().is_some_and(|d| !d.is_done()))
                }
            }
        };
        let mut waits = |issue: &Issue| self.waits_for_a_person(issue.number);
        select_from_with(
            &titles,
            &candidates,
            escalated_this_session,
            merged,
            &mut blocks,
            &mut waits,
        )
    }

    /// Why issue `number` waits for a person instead of being worked, `None` when it may be:
    /// the latest `labeled` event of the selection label (`…/issues/N/events`) names its
    /// actor, who must have write access (`…/collaborators/<login>/permission`: admin,
    /// maintain or write) or be named in `review.trustedAuthors`.
    fn waits_for_a_person(&self, number: u32) -> Result<Option<String>, TrackerError> {
        let events = self.pages(&format!("repos/{{owner}}/{{repo}}/issues/{number}/events"))?;
        let labelled = events.iter().rev().find(|e| {
            e["event"].as_str() == Some("labeled")
                && e["label"]["name"].as_str() == Some(&self.label)
        });
        let label = &self.label;
        let Some(event) = labelled else {
            return Ok(Some(format!(
                "issue #{number} waits for a person: GitHub names nobody who applied its label `{label}`; someone with write access to the repository applies it again to let it run"
            )));
        };
        let actor = event["actor"]["login"].as_str().unwrap_or_default();
        // The runner's own account pushes and merges, so it has write access: its label (the
        // operator's, under the operator's token) needs no question about its permission.
        let permission = if !actor.is_empty() && actor == self.own_login()? {
            "write".to_string()
        } else {
            self.permission(actor)?
        };
        let verdict = crate::authority::judge(
            actor,
            crate::authority::Standing::Permission(&permission),
            &self.authority,
        );
        Ok(match verdict {
            crate::authority::Verdict::Counts => {
                let labelled_at = event["created_at"].as_str().unwrap_or_default();
                if self.untouched_since(number, labelled_at) {
                    None
                } else {
                    self.edited_after(number, labelled_at)?
                }
            }
            crate::authority::Verdict::Ignored => Some(format!(
                "issue #{number} waits for a person: its label `{label}` was applied by @{actor}, listed in review.ignoreAuthors; someone with write access to the repository applies it again to let it run"
            )),
            crate::authority::Verdict::LeftOut(why) => Some(format!(
                "issue #{number} waits for a person: its label `{label}` was applied by @{actor}, who has {why}; someone with write access to the repository applies it again to let it run (or add @{actor} to review.trustedAuthors)"
            )),
        })
    }

    /// Whether the last list showed issue `number` unchanged since `labelled_at`: its
    /// `updated_at` (which an edit of the description moves) is not later than the label.
    fn untouched_since(&self, number: u32, labelled_at: &str) -> bool {
        let time = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
        let updated = self
            .updated
            .lock()
            .ok()
            .and_then(|u| u.get(&number).cloned());
        match (updated.as_deref().and_then(time), time(labelled_at)) {
            (Some(updated), Some(labelled)) => updated <= labelled,
            _ => false,
        }
    }

    /// Why issue `number` waits for a person when its description was last edited after
    /// `labelled_at` (RFC 3339) by someone without write access (GraphQL `lastEditedAt` and
    /// `editor`): what the person who labelled it approved is not what the agent would read.
    fn edited_after(&self, number: u32, labelled_at: &str) -> Result<Option<String>, TrackerError> {
        let query = "query IssueLastEdit($owner: String!, $repo: String!, $number: Int!) { repository(owner: $owner, name: $repo) { issue(number: $number) { lastEditedAt editor { login } } } }";
        let args = crate::call_failure::gh_graphql_args(query, number);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.run_gh(&argv, None)?;
        let Some(answer) = crate::call_failure::HttpAnswer::parse(&out.stdout) else {
            return Err(tracker_error(self.gh().no_answer(&argv, out)));
        };
        crate::call_failure::conditional::count(&answer);
        if !answer.graphql_ok() {
            return Err(self.refused(&args, &answer, &out.stderr));
        }
        let v: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        let issue = &v["data"]["repository"]["issue"];
        let (Some(edited), Some(editor)) = (
            issue["lastEditedAt"].as_str(),
            issue["editor"]["login"].as_str(),
        ) else {
            return Ok(None);
        };
        let time = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
        let after = match (time(edited), time(labelled_at)) {
            (Some(e), Some(l)) => e > l,
            // A time that cannot be read: the edit may be later; a person looks.
            _ => true,
        };
        if !after {
            return Ok(None);
        }
        let permission = self.permission(editor)?;
        let verdict = crate::authority::judge(
            editor,
            crate::authority::Standing::Permission(&permission),
            &self.authority,
        );
        Ok(match verdict {
            crate::authority::Verdict::Counts => None,
            crate::authority::Verdict::Ignored => Some(format!(
                "issue #{number} waits for a person: its description was edited by @{editor}, listed in review.ignoreAuthors, after its label was applied; someone with write access to the repository applies the label again to let it run"
            )),
            crate::authority::Verdict::LeftOut(why) => Some(format!(
                "issue #{number} waits for a person: its description was edited by @{editor}, who has {why}, after its label was applied; someone with write access to the repository reads it and applies the label again to let it run"
            )),
        })
    }

    /// The login of the account gh's token belongs to (`GET /user`, once per run, for the
    /// label's author and the claims' assignment; the forge's same read is then a 304). A
    /// token that may not read its user has none.
    pub(super) fn own_login(&self) -> Result<String, TrackerError> {
        if let Some(login) = self.login.get() {
            return Ok(login.clone());
        }
        let (answer, args, stderr) = self.answer("GET", "user", None)?;
        let login = if answer.ok() {
            crate::services::github::forge::login_of(&answer.body)
        } else {
            match answer.failure_kind(0) {
                CallFailureKind::Permission | CallFailureKind::NotFound => String::new(),
                _ => return Err(self.refused(&args, &answer, &stderr)),
            }
        };
        Ok(self.login.get_or_init(|| login).clone())
    }

    /// `login`'s permission on the repository (`admin`, `maintain`, `write`, `triage`,
    /// `read`, `none`), asked once per run; an account GitHub does not know has none.
    fn permission(&self, login: &str) -> Result<String, TrackerError> {
        if login.is_empty() {
            return Ok(String::new());
        }
        if let Some(known) = self
            .permissions
            .lock()
            .ok()
            .and_then(|p| p.get(login).cloned())
        {
            return Ok(known);
        }
        let endpoint = format!(
            "repos/{{owner}}/{{repo}}/collaborators/{}/permission",
            path_segment(login)
        );
        let (answer, args, stderr) = self.answer("GET", &endpoint, None)?;
        let permission = if answer.status == 404 {
            "none".to_string()
        } else if answer.ok() {
            serde_json::from_slice::<serde_json::Value>(&answer.body)
                .ok()
                .and_then(|v| v["permission"].as_str().map(str::to_string))
                .unwrap_or_default()
        } else {
            return Err(self.refused(&args, &answer, &stderr));
        };
        if let Ok(mut known) = self.permissions.lock() {
            known.insert(login.to_string(), permission.clone());
        }
        Ok(permission)
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
        self.view(number)?.ok_or_else(|| TrackerError::NotFound {
            number,
            location: format!("the GitHub repository of {}", self.repo_dir.display()),
        })
    }

    /// The issue's title, body and comments (`…/issues/N` and every page of its comments).
    pub fn text(&self, number: u32) -> Result<crate::tracker::IssueText, TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{number}");
        let body = self.rest("GET", &endpoint, None)?;
        let json = |source| TrackerError::Json {
            command: self.display(&["api", &endpoint]),
            source,
        };
        let issue: serde_json::Value = serde_json::from_slice(&body).map_err(json)?;
        let comments = self.pages(&format!("{endpoint}/comments"))?;
        let (text, left_out) =
            crate::tracker::text::rest_text(number, &issue, &comments, &self.authority);
        for (who, why) in &left_out {
            crate::authority::say_left_out("the issue's comments", who, why);
        }
        Ok(text)
    }

    /// The open milestones' titles and numbers, every page.
    fn open_milestones(&self) -> Result<Vec<(String, u64)>, TrackerError> {
        let endpoint = "repos/{owner}/{repo}/milestones?state=open";
        self.pages(endpoint)?
            .into_iter()
            .map(|m| {
                serde_json::from_value::<GhMilestone>(m)
                    .map(|m| (m.title, m.number))
                    .map_err(|source| TrackerError::Json {
                        command: self.display(&["api", endpoint]),
                        source,
                    })
            })
            .collect()
    }

    /// The issues `…/issues?<filters>` lists, every page, pull requests left out.
    fn issue_list(&self, filters: &str) -> Result<Vec<Issue>, TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues?{filters}");
        let list = serde_json::Value::Array(self.pages(&endpoint)?).to_string();
        self.parse_issue_list(&list)
            .map_err(|source| TrackerError::Json {
                command: self.display(&["api", &endpoint]),
                source,
            })
    }

    /// The issues of a page of GitHub's REST `…/issues` list (pure: no `gh` runs); the pull
    /// requests the list holds too are left out.
    pub fn parse_issue_list(&self, json: &str) -> Result<Vec<Issue>, serde_json::Error> {
        let list: Vec<GhIssue> = serde_json::from_str(json)?;
        if let Ok(mut updated) = self.updated.lock() {
            for i in &list {
                if let Some(at) = &i.updated_at {
                    updated.insert(i.number, at.clone());
                }
            }
        }
        Ok(list
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .map(|i| self.to_issue(i))
            .collect())
    }

    /// The issue GitHub's REST `…/issues/N` answered (pure: no `gh` runs).
    pub fn parse_issue(&self, json: &str) -> Result<Issue, serde_json::Error> {
        let issue: GhIssue = serde_json::from_str(json)?;
        Ok(self.to_issue(issue))
    }

    /// `None` when GitHub has no issue with that number (404).
    fn view(&self, number: u32) -> Result<Option<Issue>, TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{number}");
        let (answer, args, stderr) = self.answer("GET", &endpoint, None)?;
        if answer.status == 404 {
            return Ok(None);
        }
        if !answer.ok() {
            return Err(self.refused(&args, &answer, &stderr));
        }
        let text = String::from_utf8_lossy(&answer.body);
        self.parse_issue(&text)
            .map(Some)
            .map_err(|source| TrackerError::Json {
                command: self.display(&["api", &endpoint]),
                source,
            })
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
                gh::exit_text(code),
                tail(&crate::redact::redact(stderr), 2000)
            ),
        }
    }

    /// `gh` in the project's clone, through the one gh runner.
    pub(super) fn gh(&self) -> Gh<'_> {
        Gh {
            program: &self.gh,
            dir: &self.repo_dir,
            timeout: self.timeout,
        }
    }

    /// Runs `gh args`; what it printed, whatever its exit code.
    fn run_gh(&self, args: &[&str], stdin: Option<Vec<u8>>) -> Result<Printed, TrackerError> {
        self.gh().run(args, stdin).map_err(tracker_error)
    }

    /// The command as a person would type it, for error messages.
    fn display(&self, args: &[&str]) -> String {
        self.gh().command_text(args)
    }

    fn to_issue(&self, i: GhIssue) -> Issue {
        let labels: Vec<String> = i.labels.into_iter().map(|l| l.name).collect();
        let open = i.state.eq_ignore_ascii_case("open");
        Issue {
            escalated: labels.contains(&self.escalated_label),
            number: i.number,
            title: i.title,
            body: i.body.unwrap_or_default(),
            labels,
            milestone: i.milestone.map(|m| m.title),
            state_open: open,
            parent: i.parent_issue_url.as_deref().and_then(number_of),
            // Closed as not planned: abandoned, not done.
            blocked_by: Vec::new(),
            closed_by_merged_pr: (!open
                && i.state_reason
                    .as_deref()
                    .is_some_and(|r| r.eq_ignore_ascii_case("not_planned")))
            .then_some(false),
        }
    }
}

/// A gh call that gave nothing to read, as the tracker's error.
fn tracker_error(e: GhError) -> TrackerError {
    TrackerError::Command {
        kind: e.kind(),
        command: e.command().to_string(),
        detail: match e {
            GhError::NoAnswer { code, stderr, .. } => format!("{}: {stderr}", gh::exit_text(code)),
            other => other.to_string(),
        },
    }
}

/// The issue number an issue's address ends with (`…/issues/12`).
fn number_of(url: &str) -> Option<u32> {
    url.trim_end_matches('/')
        .rsplit('/')
        .next()?
        .parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
}
