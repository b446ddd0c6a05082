//! GitLab issues through GitLab's REST API v4 (`gitlab.project`): the same selection rule as
//! GitHub's (`select_from`) over the open issues with the selection label, numbered by their
//! `iid` (the `#12` GitLab shows); quarantine with the escalated label and a note; close with
//! a note after the merge. Labels are added and removed with `add_labels` / `remove_labels`
//! on the issue, which GitLab applies atomically and which create a missing label.
//!
//! Every failed answer is kinded from its status and headers ([`ApiClient::refusal`]): a
//! rate limit is the machine's rate-limit wait, a 5xx the network's, a refused token an
//! environment failure naming `gitlab.tokenEnv`.

use super::models;
use crate::api_client::{ApiClient, Endpoint, Failure};
use crate::call_failure::CallFailureKind;
use crate::ports::tracker::{Comment, Issue, IssueText, Selection, TrackerError};
use crate::tracker::{escalation_text, select_from_with, Scope};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

/// GitLab allows notes of up to a million characters; diagnostics are kept far shorter.
const MAX_NOTE_BYTES: usize = 60_000;

/// The GitLab tracker of one project.
#[derive(Debug, Clone)]
pub struct GitLab {
    /// The API, with the token.
    pub api: ApiClient,
    /// The project's path with its namespace (`group/sub/project`).
    pub project: String,
    /// Issues with this label are candidates.
    pub label: String,
    /// The durable quarantine label.
    pub escalated_label: String,
    /// Whether the project's issue links were found unreadable (said once per run).
    pub links_unreadable: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Whose notes reach the agent beside the project's Developers and above, and whose
    /// never (`review.trustedAuthors`, `review.ignoreAuthors`); who may apply the label.
    pub authority: crate::authority::Authority,
}

impl From<Failure> for TrackerError {
    fn from(f: Failure) -> TrackerError {
        TrackerError::Command {
            command: "GitLab API".into(),
            detail: f.message,
            kind: f.kind,
        }
    }
}

impl GitLab {
    /// `projects/:id`, the prefix of every call about the project.
    pub(super) fn at(&self) -> Endpoint {
        super::client::project(&self.project)
    }

    /// An issue as GitLab's REST API shows it.
    pub fn parse_issue(&self, v: models::Issue) -> Option<Issue> {
        let number = u32::try_from(v.iid?).ok()?;
        let labels: Vec<String> = v.labels.iter().map(|l| l.name().to_string()).collect();
        Some(Issue {
            number,
            title: v.title.unwrap_or_default(),
            body: v.description.unwrap_or_default(),
            escalated: labels.contains(&self.escalated_label),
            labels,
            milestone: v.milestone.and_then(|m| m.title),
            state_open: v.state.as_deref() == Some("opened"),
            parent: None,
            closed_by_merged_pr: None,
            blocked_by: Vec::new(),
        })
    }

    /// The issue `number`, `None` when the project has none such.
    fn view(&self, number: u32) -> Result<Option<Issue>, TrackerError> {
        let path = self.at().fixed("issues").segment(number);
        let answer = self.api.answer("GET", &path, None)?;
        if answer.status == 404 {
            return Ok(None);
        }
        if !answer.ok() {
            return Err(self.api.failure("GET", &path, &answer).into());
        }
        let v: models::Issue =
            serde_json::from_slice(&answer.body).map_err(|e| TrackerError::Command {
                command: format!("GET {}", self.api.address(&path)),
                detail: format!("the answer is not an issue's JSON ({e})"),
                kind: CallFailureKind::Other,
            })?;
        Ok(self.parse_issue(v))
    }

    /// The lowest-numbered open issue with the selection label that is neither escalated nor
    /// waiting for an open dependency, milestones first as on GitHub.
    pub fn select(
        &self,
        escalated_this_session: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        let mut milestones: Vec<String> = self
            .api
            .pages(&self.at().fixed("milestones").query("state", "active"))?
            .iter()
            .filter_map(|m| models::Titled::deserialize(m).ok()?.title)
            .collect();
        milestones.sort();
        let listed = self.api.pages(
            &self
                .at()
                .fixed("issues")
                .query("state", "opened")
                .query("labels", &self.label)
                .query("order_by", "created_at")
                .query("sort", "asc"),
        )?;
        let (mut candidates, listed_projects): (Vec<Issue>, Vec<Option<u64>>) =
            models::items::<models::Issue>(&listed)
                .into_iter()
                .filter_map(|v| {
                    let project = v.project_id;
                    Some((self.parse_issue(v)?, project))
                })
                .filter(|(i, _)| i.state_open)
                .unzip();
        for (issue, listed) in candidates.iter_mut().zip(&listed_projects) {
            issue.blocked_by = self.blockers(issue.number, *listed)?;
        }
        candidates.sort_by_key(|i| i.number);
        let open_candidates: BTreeSet<u32> = candidates.iter().map(|i| i.number).collect();
        let mut viewed: HashMap<u32, Option<Issue>> = HashMap::new();
        let mut blocks = |scope: &Scope, dep: u32| -> Result<bool, TrackerError> {
            if matches!(scope, Scope::Repo) && open_candidates.contains(&dep) {
                return Ok(true);
            }
            let issue = match viewed.entry(dep) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(self.view(dep)?),
            };
            let issue = issue.as_ref();
            Ok(match scope {
                Scope::Milestone(m) => {
                    issue.is_some_and(|d| d.milestone.as_ref() == Some(m) && !d.is_done())
                }
                Scope::Repo => issue.is_some_and(|d| !d.is_done()),
            })
        };
        let mut waits = |issue: &Issue| self.waits_for_a_person(issue.number);
        select_from_with(
            &milestones,
            &candidates,
            escalated_this_session,
            merged,
            &mut blocks,
            &mut waits,
        )
    }

    /// Why issue `number` waits for a person instead of being worked, `None` when it may be:
    /// the latest `add` of the selection label among the issue's resource label events names
    /// its user, who must have Developer access or more in the project, or be named in
    /// `review.trustedAuthors`.
    fn waits_for_a_person(&self, number: u32) -> Result<Option<String>, TrackerError> {
        let events: Vec<models::LabelEvent> = models::items(
            &self.api.pages(
                &self
                    .at()
                    .fixed("issues")
                    .segment(number)
                    .fixed("resource_label_events"),
            )?,
        );
        let label = &self.label;
        let added = events
            .iter()
            .rev()
            .find(|e| e.action == "add" && e.label.as_ref().is_some_and(|l| l.name == *label));
        let Some(event) = added else {
            return Ok(Some(format!(
                "issue #{number} waits for a person: GitLab names nobody who applied its label `{label}`; a Developer of the project applies it again to let it run"
            )));
        };
        let who = &event.user.username;
        Ok(match self.judge(&event.user)? {
            crate::authority::Verdict::Counts => {
                let labelled_at = event.created_at.as_deref().unwrap_or_default();
                self.edited_after(number, labelled_at)?
            }
            crate::authority::Verdict::Ignored => Some(format!(
                "issue #{number} waits for a person: its label `{label}` was applied by @{who}, listed in review.ignoreAuthors; a Developer of the project applies it again to let it run"
            )),
            crate::authority::Verdict::LeftOut(why) => Some(format!(
                "issue #{number} waits for a person: its label `{label}` was applied by @{who}: {why}; a Developer of the project applies it again to let it run (or add @{who} to review.trustedAuthors)"
            )),
        })
    }

    /// The issues of this project that GitLab's links say block `number` (`is_blocked_by`;
    /// links to other projects' issues left out). A links endpoint the token or the plan may
    /// not read is no blocker: the body's lines still count, and the log says so once.
    fn blockers(&self, number: u32, project_id: Option<u64>) -> Result<Vec<u32>, TrackerError> {
        if self
            .links_unreadable
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Ok(Vec::new());
        }
        let path = self.at().fixed("issues").segment(number).fixed("links");
        let answer = self.api.answer("GET", &path, None)?;
        if matches!(answer.status, 403 | 404) {
            if !self
                .links_unreadable
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                say!(
                    "warning: GitLab refused the issue links of {} (HTTP {}): dependencies come from the issues' `Depends on:` / `Blocked by:` lines only",
                    self.project,
                    answer.status
                );
            }
            return Ok(Vec::new());
        }
        if !answer.ok() {
            return Err(self.api.failure("GET", &path, &answer).into());
        }
        let links: Vec<Value> =
            serde_json::from_slice(&answer.body).map_err(|e| TrackerError::Command {
                command: format!("GET {}", self.api.address(&path)),
                detail: format!("the answer is not a list of linked issues ({e})"),
                kind: CallFailureKind::Other,
            })?;
        Ok(models::items::<models::Link>(&links)
            .into_iter()
            .filter(|l| l.link_type == "is_blocked_by")
            .filter(|l| project_id.is_none() || l.project_id == project_id)
            .filter_map(|l| l.iid)
            .filter_map(|n| u32::try_from(n).ok())
            .collect())
    }

    /// The issue `number`, open or closed.
    pub fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        self.view(number)?.ok_or_else(|| TrackerError::NotFound {
            number,
            location: format!("the GitLab project {} at {}", self.project, self.api.base),
        })
    }

    /// Title, description and the notes people with authority wrote (GitLab's own system
    /// notes left out, and the notes of authors below Developer access unless
    /// `review.trustedAuthors` names them: the log says once per author why).
    pub fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        let issue = self.get(number)?;
        let notes = self.notes(number)?;
        let mut text = IssueText::of(&issue);
        for n in notes.into_iter().filter(|n| !n.system) {
            let author = &n.author.username;
            match self.judge(&n.author)? {
                crate::authority::Verdict::Counts => text.comments.push(Comment {
                    author: author.to_string(),
                    body: n.body,
                }),
                crate::authority::Verdict::Ignored => {}
                crate::authority::Verdict::LeftOut(why) => {
                    crate::authority::say_left_out("the issue's comments", author, &why)
                }
            }
        }
        Ok(text)
    }

    /// Why issue `number` waits for a person when its description was last changed after
    /// `labelled_at` (RFC 3339) by someone below Developer access: GitLab's system note
    /// "changed the description" names who changed it.
    fn edited_after(&self, number: u32, labelled_at: &str) -> Result<Option<String>, TrackerError> {
        let notes = self.notes(number)?;
        let time = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
        let labelled = time(labelled_at);
        let edit = notes
            .iter()
            .rev()
            .find(|n| n.system && n.body.starts_with("changed the description"));
        let Some(edit) = edit else {
            return Ok(None);
        };
        let after = match (edit.created_at.as_deref().and_then(time), labelled) {
            (Some(e), Some(l)) => e > l,
            _ => true,
        };
        if !after {
            return Ok(None);
        }
        let who = &edit.author.username;
        Ok(match self.judge(&edit.author)? {
            crate::authority::Verdict::Counts => None,
            crate::authority::Verdict::Ignored => Some(format!(
                "issue #{number} waits for a person: its description was changed by @{who}, listed in review.ignoreAuthors, after its label was applied; a Developer of the project applies the label again to let it run"
            )),
            crate::authority::Verdict::LeftOut(why) => Some(format!(
                "issue #{number} waits for a person: its description was changed by @{who} ({why}) after its label was applied; a Developer of the project reads it and applies the label again to let it run"
            )),
        })
    }

    /// The issue's notes, oldest first.
    fn notes(&self, number: u32) -> Result<Vec<models::Note>, TrackerError> {
        Ok(models::items(&self.api.pages(&self.notes_of(number))?))
    }

    /// An issue's notes, oldest first (`issues/:iid/notes`), as the claims read them too.
    pub(super) fn notes_of(&self, number: u32) -> Endpoint {
        self.at()
            .fixed("issues")
            .segment(number)
            .fixed("notes")
            .query("sort", "asc")
            .query("order_by", "created_at")
    }

    /// Whether GitLab user `user` (`{id, username}`) counts: [`crate::authority::judge`] on
    /// their access level in the project (asked once per run).
    fn judge(&self, user: &models::User) -> Result<crate::authority::Verdict, TrackerError> {
        let who = &user.username;
        let level = match user.id {
            Some(id) => super::access::access_level(&self.api, &self.project, id)?,
            None => None,
        };
        Ok(crate::authority::judge(
            who,
            crate::authority::Standing::AccessLevel(level),
            &self.authority,
        ))
    }

    /// Notes `text` on the issue, unless its newest note already says it: a write the machine
    /// asks for again says nothing twice.
    fn note(&self, number: u32, text: &str) -> Result<(), TrackerError> {
        let newest = self.api.json(
            "GET",
            &self
                .at()
                .fixed("issues")
                .segment(number)
                .fixed("notes")
                .query("sort", "desc")
                .query("order_by", "created_at")
                .query("per_page", 1),
            None,
        )?;
        let said = newest
            .as_array()
            .and_then(|list| models::items::<models::Note>(list).into_iter().next())
            .map(|n| n.body);
        let said = said.as_deref().map(str::trim);
        if said == Some(text.trim()) {
            return Ok(());
        }
        self.api
            .json(
                "POST",
                &self.at().fixed("issues").segment(number).fixed("notes"),
                Some(&json!({ "body": text })),
            )
            .map(drop)
            .map_err(Into::into)
    }

    pub(super) fn edit(&self, number: u32, change: Value) -> Result<(), TrackerError> {
        self.api
            .json(
                "PUT",
                &self.at().fixed("issues").segment(number),
                Some(&change),
            )
            .map(drop)
            .map_err(Into::into)
    }

    /// Quarantines the issue: the escalated label (GitLab creates it when the project lacks
    /// it) and a note with `diagnostic` and how to release it.
    pub fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        self.edit(number, json!({ "add_labels": self.escalated_label }))?;
        let how = format!(
            "Release it with `sdlc-runner release {number}` (or remove the `{}` label) to let it be selected again.",
            self.escalated_label
        );
        self.note(number, &escalation_text(diagnostic, &how, MAX_NOTE_BYTES))
    }

    /// Makes sure the merged issue is closed: the merge request's "Closes #N" closes it when
    /// it targets the default branch; one still open gets `note` and is closed. Safe to repeat.
    pub fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        if !self.get(number)?.state_open {
            return Ok(());
        }
        let body = format!(
            "{note}: GitLab left the issue open after the merge, so sdlc-runner closed it."
        );
        self.note(number, &crate::redact::redact(&body))?;
        self.edit(number, json!({ "state_event": "close" }))
    }

    /// Lifts the runner's own quarantine with a note saying why.
    pub fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        self.edit(number, json!({ "remove_labels": self.escalated_label }))?;
        self.note(number, &crate::redact::redact(note))
    }

    /// Lifts the quarantine. Returns whether it was there.
    pub fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let was = self.get(number)?.escalated;
        if was {
            self.edit(number, json!({ "remove_labels": self.escalated_label }))?;
        }
        Ok(was)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker() -> GitLab {
        GitLab {
            api: ApiClient::new(
                "http://127.0.0.1:9/api/v4",
                crate::api_client::test_token(),
                crate::api_client::Auth::PrivateToken,
                "GITLAB_TOKEN",
            ),
            project: "group/sub/project".into(),
            label: "automatable".into(),
            escalated_label: "sdlc-escalated".into(),
            links_unreadable: Default::default(),
            authority: Default::default(),
        }
    }

    #[test]
    fn an_issue_is_read_from_gitlabs_fields() {
        let t = tracker();
        let v = json!({"iid": 12, "id": 99001, "title": "Add x", "description": null,
            "labels": ["automatable", "sdlc-escalated"], "milestone": {"title": "v1"},
            "state": "opened"});
        let i = t
            .parse_issue(models::Issue::deserialize(&v).unwrap())
            .unwrap();
        assert_eq!(i.number, 12);
        assert_eq!(i.body, "");
        assert!(i.escalated && i.state_open);
        assert_eq!(i.milestone.as_deref(), Some("v1"));
        let closed = json!({"iid": 3, "title": "t", "labels": [], "state": "closed"});
        assert!(
            !t.parse_issue(models::Issue::deserialize(&closed).unwrap())
                .unwrap()
                .state_open
        );
        assert_eq!(
            t.at().fixed("issues").segment(12).to_string(),
            "projects/group%2Fsub%2Fproject/issues/12"
        );
        assert_eq!(
            t.api.address(&t.notes_of(3)),
            "http://127.0.0.1:9/api/v4/projects/group%2Fsub%2Fproject/issues/3/notes?sort=asc&order_by=created_at"
        );
    }
}
