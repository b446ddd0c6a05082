//! GitLab's answers as the tracker reads them: typed, and lenient where GitLab's own answers
//! vary. A field of an unexpected type reads as absent, and one odd entry of a list is left
//! out, instead of dropping the issue, note or event that holds it; what the runner cannot do
//! without (an issue's `iid`) decides whether the item is read at all.

use serde::Deserialize;
use serde_with::{serde_as, DefaultOnError, VecSkipError};

/// An issue of the REST API (`GET projects/:id/issues[/:iid]`).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Issue {
    /// The number GitLab shows (`#12`); an issue without one is not read.
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub iid: Option<u64>,
    /// The project that holds the issue (a group's list mixes projects).
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub project_id: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub title: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub description: Option<String>,
    /// `opened` or `closed`.
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub state: Option<String>,
    #[serde_as(as = "DefaultOnError<VecSkipError<_>>")]
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub milestone: Option<Titled>,
}

/// A label as a list of names, or (`with_labels_details`) as objects with a name.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Label {
    Name(String),
    Detailed { name: String },
}

impl Label {
    pub fn name(&self) -> &str {
        match self {
            Label::Name(name) | Label::Detailed { name } => name,
        }
    }
}

/// Anything GitLab names by a title: a milestone.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Titled {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub title: Option<String>,
}

/// A user as notes and events name them.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct User {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub id: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub username: String,
}

/// A note on an issue or in a merge request's discussion: a person's comment, or GitLab's
/// own (`system`) record of a change.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Note {
    /// Printed as GitLab gave it, to name the feedback.
    #[serde(default)]
    pub id: serde_json::Value,
    /// A thread's note that can be resolved, and whether it is.
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub resolvable: bool,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub resolved: bool,
    /// Where a diff note points.
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub position: Option<Position>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub system: bool,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub body: String,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub author: User,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub created_at: Option<String>,
}

/// Where a diff note points: the file and line on the new side, else the old.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Position {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub new_path: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub old_path: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub new_line: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub old_line: Option<u64>,
}

/// A merge request's discussion: a thread of notes.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Discussion {
    #[serde_as(as = "DefaultOnError<VecSkipError<_>>")]
    #[serde(default)]
    pub notes: Vec<Note>,
}

/// A merge request: its number, head and state, and the fields that say why it cannot be
/// merged (`detailed_merge_status`, or `merge_status` on an older GitLab).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct MergeRequest {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub iid: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub sha: Option<String>,
    /// `opened`, `locked`, `merged` or `closed`.
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub state: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub web_url: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub detailed_merge_status: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub merge_status: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub draft: bool,
    /// The older name of `draft`.
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub work_in_progress: bool,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub has_conflicts: bool,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub head_pipeline: Option<Pipeline>,
}

/// A pipeline, as the pipeline lists and a merge request's `head_pipeline` give it.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Pipeline {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub id: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub sha: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub status: Option<String>,
    /// The branch or ref it ran for (`refs/merge-requests/:iid/train` for a merge train's).
    #[serde_as(as = "DefaultOnError")]
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub web_url: Option<String>,
}

/// A job of a pipeline, to name a failing one and read its log.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Job {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub id: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub name: String,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub web_url: String,
}

/// A branch (`repository/branches/:branch`), for its head commit.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Branch {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub commit: Option<Commit>,
}

/// A commit, by its id, with its parents (`repository/commits/:sha`) where the answer has them.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Commit {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub id: Option<String>,
    /// Its parents in order: a merge commit's first parent is the branch merged into.
    #[serde_as(as = "DefaultOnError<VecSkipError<_>>")]
    #[serde(default)]
    pub parent_ids: Vec<String>,
}

/// The project's settings the forge reads: where its CI configuration is, and whether it
/// merges through merge trains.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Project {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub ci_config_path: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub merge_trains_enabled: bool,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub merge_pipelines_enabled: bool,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub auto_devops_enabled: bool,
}

/// A merge request's car on the merge train, for its `status`.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Car {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub status: Option<String>,
}

/// A member of the project (`members/all/:user_id`), for their access level.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Member {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub access_level: Option<u64>,
}

/// A merge request's approvals (`merge_requests/:iid/approvals`).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Approvals {
    #[serde_as(as = "DefaultOnError<VecSkipError<_>>")]
    #[serde(default)]
    pub approved_by: Vec<Approver>,
}

/// One approval, by its user.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Approver {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub user: User,
}

/// A resource label event: who added or removed which label, and when.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct LabelEvent {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub action: String,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub label: Option<Named>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub user: User,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub created_at: Option<String>,
}

/// Anything GitLab names by a name: a label of an event.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Named {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub name: String,
}

/// An issue link (`GET projects/:id/issues/:iid/links`): the linked issue and how it links.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
pub struct Link {
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub link_type: String,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub project_id: Option<u64>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    pub iid: Option<u64>,
}

/// Reads the items of a list answer as `T`, leaving out an entry that is not an object.
pub fn items<T: for<'de> Deserialize<'de>>(list: &[serde_json::Value]) -> Vec<T> {
    list.iter().filter_map(|v| T::deserialize(v).ok()).collect()
}

/// Reads one answer as `T`; an answer that is not an object reads as `T` with every field
/// absent. The guard matters: serde reads a struct from an array too, field by position.
pub fn one<T: for<'de> Deserialize<'de> + Default>(v: &serde_json::Value) -> T {
    if !v.is_object() {
        return T::default();
    }
    T::deserialize(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wrongly_typed_field_reads_as_absent_and_keeps_the_issue() {
        let issue: Issue = serde_json::from_value(json!({
            "iid": 7, "title": 12, "description": null, "state": "opened",
            "labels": ["automatable", 3, {"name": "sdlc-escalated"}, {"id": 1}],
            "milestone": "v1", "project_id": "nine"
        }))
        .expect("a lenient issue");
        assert_eq!(issue.iid, Some(7));
        assert_eq!(issue.title, None);
        assert_eq!(issue.description, None);
        assert_eq!(issue.project_id, None);
        assert!(issue.milestone.is_none());
        let labels: Vec<&str> = issue.labels.iter().map(Label::name).collect();
        assert_eq!(labels, ["automatable", "sdlc-escalated"]);
    }

    #[test]
    fn a_note_with_an_odd_author_or_flag_is_still_read() {
        let notes: Vec<Note> = items(&[
            json!({"system": "yes", "body": "hello", "author": "alice"}),
            json!("not a note"),
            json!({"body": "changed the description", "system": true,
                   "author": {"id": 4, "username": "bob"}, "created_at": 5}),
        ]);
        assert_eq!(notes.len(), 2);
        assert!(!notes[0].system);
        assert_eq!(notes[0].body, "hello");
        assert_eq!(notes[0].author.username, "");
        assert!(notes[1].system);
        assert_eq!(notes[1].author.id, Some(4));
        assert_eq!(notes[1].created_at, None);
    }

    #[test]
    fn events_and_links_read_their_fields() {
        let events: Vec<LabelEvent> = items(&[json!({
            "action": "add", "label": {"name": "automatable"},
            "user": {"id": 2, "username": "carol"}, "created_at": "2026-01-01T00:00:00Z"
        })]);
        assert_eq!(
            events[0].label.as_ref().map(|l| l.name.as_str()),
            Some("automatable")
        );
        assert_eq!(events[0].user.username, "carol");
        let links: Vec<Link> = items(&[json!({"link_type": "is_blocked_by", "iid": "x"})]);
        assert_eq!(links[0].link_type, "is_blocked_by");
        assert_eq!(links[0].iid, None);
    }

    #[test]
    fn a_merge_request_with_odd_fields_reads_them_as_absent() {
        let mr: MergeRequest = one(&json!({
            "iid": "3", "sha": "abc", "state": "opened", "draft": "yes",
            "has_conflicts": true, "detailed_merge_status": 5,
            "head_pipeline": {"id": 9, "sha": 1}
        }));
        assert_eq!(mr.iid, None);
        assert_eq!(mr.sha.as_deref(), Some("abc"));
        assert!(!mr.draft);
        assert!(mr.has_conflicts);
        assert!(!mr.work_in_progress);
        assert_eq!(mr.detailed_merge_status, None);
        assert_eq!(mr.merge_status, None);
        let head = mr.head_pipeline.expect("a head pipeline");
        assert_eq!((head.id, head.sha), (Some(9), None));
        let none: MergeRequest = one(&json!({"head_pipeline": "running"}));
        assert!(none.head_pipeline.is_none());
    }

    #[test]
    fn an_answer_that_is_no_object_reads_as_all_absent() {
        let mr: MergeRequest = one(&json!([3, "abc"]));
        assert_eq!((mr.iid, mr.sha), (None, None));
        let car: Car = one(&json!("merged"));
        assert_eq!(car.status, None);
        let member: Member = one(&serde_json::Value::Null);
        assert_eq!(member.access_level, None);
    }

    #[test]
    fn pipelines_jobs_and_settings_read_their_fields() {
        let pipelines: Vec<Pipeline> = items(&[
            json!({"id": 10, "ref": "refs/merge-requests/3/train", "status": "failed"}),
            json!(7),
            json!({"id": -1, "ref": ["main"], "web_url": null}),
        ]);
        assert_eq!(pipelines.len(), 2);
        assert_eq!(
            pipelines[0].git_ref.as_deref(),
            Some("refs/merge-requests/3/train")
        );
        assert_eq!(
            (pipelines[1].id, pipelines[1].git_ref.as_deref()),
            (None, None)
        );
        let jobs: Vec<Job> = items(&[json!({"id": 4, "name": "test"}), json!({"name": 1})]);
        assert_eq!(
            (jobs[0].id, jobs[0].name.as_str(), jobs[0].web_url.as_str()),
            (Some(4), "test", "")
        );
        assert_eq!(jobs[1].name, "");
        let branch: Branch = one(&json!({"commit": {"id": 12}}));
        assert_eq!(branch.commit.and_then(|c| c.id), None);
        let project: Project = one(
            &json!({"ci_config_path": "", "merge_trains_enabled": "true",
            "merge_pipelines_enabled": true}),
        );
        assert_eq!(project.ci_config_path.as_deref(), Some(""));
        assert!(!project.merge_trains_enabled && project.merge_pipelines_enabled);
    }
}
