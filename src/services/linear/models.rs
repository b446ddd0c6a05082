//! Linear's answers as typed models, read leniently: a field of the wrong type reads as absent
//! (its default) and a list item that is not what it should be is left out, so one odd field
//! never drops the issue, comment or page it is in. What a missing field means is the
//! tracker's to say (an issue without a number is no issue). Each operation's `data` has its
//! model here, named after the operation.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use serde_with::{serde_as, DefaultOnError, VecSkipError};

/// Reads `value` as `T`; a value that is no object reads as `T` with every field absent. The
/// guard matters: serde reads a struct from an array too, field by position.
pub(crate) fn one<T: DeserializeOwned + Default>(value: &Value) -> T {
    if !value.is_object() {
        return T::default();
    }
    T::deserialize(value).unwrap_or_default()
}

/// One page of a connection: its nodes, and where the next page begins.
#[serde_as]
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"), rename_all = "camelCase")]
pub(crate) struct Page<T> {
    /// The nodes that could be read.
    #[serde_as(as = "DefaultOnError<VecSkipError<_>>")]
    #[serde(default = "Vec::new")]
    pub nodes: Vec<T>,
    #[serde_as(as = "DefaultOnError")]
    #[serde(default)]
    page_info: PageInfo,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page {
            nodes: Vec::new(),
            page_info: PageInfo::default(),
        }
    }
}

impl<T> Page<T> {
    /// The cursor of the next page, when Linear says there is one.
    pub fn next(&self) -> Option<String> {
        self.page_info
            .has_next_page
            .then(|| self.page_info.end_cursor.clone())
            .flatten()
    }
}

#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PageInfo {
    #[serde_as(as = "DefaultOnError")]
    has_next_page: bool,
    #[serde_as(as = "DefaultOnError")]
    end_cursor: Option<String>,
}

/// Something with a name (a label, a user, a team).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Named {
    #[serde_as(as = "DefaultOnError")]
    pub name: Option<String>,
}

/// Something Linear names by its id (a label, a team), as a mutation wants it back.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Id {
    #[serde_as(as = "DefaultOnError")]
    pub id: Option<String>,
}

/// An issue as `ISSUE_FIELDS` asks for it.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct IssueNode {
    /// Linear's own id of the issue, which the mutations name it by.
    #[serde_as(as = "DefaultOnError")]
    pub id: Option<String>,
    /// Linear's number of the issue in its team (a float in Linear's schema).
    #[serde_as(as = "DefaultOnError")]
    pub number: Option<f64>,
    #[serde_as(as = "DefaultOnError")]
    pub title: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    pub description: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    pub labels: Page<Named>,
    #[serde_as(as = "DefaultOnError")]
    pub state: State,
    /// The relations whose related issue is this one.
    #[serde_as(as = "DefaultOnError")]
    pub inverse_relations: Page<Relation>,
}

/// An issue's workflow state.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct State {
    /// `backlog`, `unstarted`, `started`, `completed`, `canceled`, …
    #[serde_as(as = "DefaultOnError")]
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// A relation between two issues, seen from the related one.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Relation {
    /// `blocks`, `related`, `duplicate`, …
    #[serde_as(as = "DefaultOnError")]
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The issue on the relation's other side.
    #[serde_as(as = "DefaultOnError")]
    pub issue: Related,
}

/// The other side of a relation: its number and its team's key.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Related {
    #[serde_as(as = "DefaultOnError")]
    pub number: Option<f64>,
    #[serde_as(as = "DefaultOnError")]
    pub team: TeamKey,
}

/// A team as a relation names it.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TeamKey {
    #[serde_as(as = "DefaultOnError")]
    pub key: Option<String>,
}

/// A comment on an issue.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CommentNode {
    #[serde_as(as = "DefaultOnError")]
    pub body: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    pub user: Named,
    /// When it was written (RFC 3339), as the claims' order needs it.
    #[serde_as(as = "DefaultOnError")]
    pub created_at: Option<String>,
}

/// What `doctor` asks of a team: its name, and its label and completed states (by id).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TeamNode {
    #[serde_as(as = "DefaultOnError")]
    pub name: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    pub labels: Page<Id>,
    #[serde_as(as = "DefaultOnError")]
    pub states: Page<Id>,
}

/// The `data` of `IssueByNumber`, `Candidates` and `ClaimedIssues`: a page of issues.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Issues {
    #[serde_as(as = "DefaultOnError")]
    pub issues: Page<IssueNode>,
}

/// The `data` of `IssueComments` and `ClaimNotes`: the issue's comments.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct IssueComments {
    #[serde_as(as = "DefaultOnError")]
    pub issue: Commented,
}

/// An issue as the comment queries show it.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Commented {
    #[serde_as(as = "DefaultOnError")]
    pub comments: Page<CommentNode>,
}

/// The `data` of `DoctorTeam`: whose key it is, and the team with `linear.team`'s key.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct DoctorTeam {
    #[serde_as(as = "DefaultOnError")]
    pub viewer: Named,
    #[serde_as(as = "DefaultOnError")]
    pub teams: Page<TeamNode>,
}

/// The `data` of `LabelByName`: the team (by id) with its label of that name.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LabelByName {
    #[serde_as(as = "DefaultOnError")]
    pub teams: Page<TeamLabels>,
}

/// A team as `LabelByName` shows it.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TeamLabels {
    #[serde_as(as = "DefaultOnError")]
    pub id: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    pub labels: Page<Id>,
}

/// The `data` of `LabelCreate`: the label made.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct LabelCreate {
    #[serde_as(as = "DefaultOnError")]
    pub issue_label_create: LabelMade,
}

/// What `issueLabelCreate` answers.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct LabelMade {
    #[serde_as(as = "DefaultOnError")]
    pub issue_label: Id,
}

/// The `data` of `CompletedState`: the team's completed workflow states.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CompletedState {
    #[serde_as(as = "DefaultOnError")]
    pub workflow_states: Page<WorkflowState>,
}

/// A workflow state: its id, and its position in the team's workflow.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct WorkflowState {
    #[serde_as(as = "DefaultOnError")]
    pub id: Option<String>,
    #[serde_as(as = "DefaultOnError")]
    pub position: Option<f64>,
}

/// A GraphQL answer: its `data` as given (read by the operation's model), and its `errors`
/// when they are a list.
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Answer {
    pub data: Value,
    #[serde_as(as = "DefaultOnError")]
    pub errors: Option<Vec<Value>>,
}

/// One error of a GraphQL answer, for the code that says its kind (an error that is no
/// object has no code, but still counts as an error).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct GraphqlError {
    #[serde_as(as = "DefaultOnError")]
    pub extensions: Extensions,
}

/// Where Linear puts an error's `code` (`RATELIMITED`, `AUTHENTICATION_ERROR`, …).
#[serde_as]
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Extensions {
    #[serde_as(as = "DefaultOnError")]
    pub code: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wrongly_typed_field_of_an_issue_reads_as_absent_and_keeps_the_issue() {
        let node: IssueNode = one(&json!({
            "id": "9f1c-uuid",
            "number": 7,
            "title": 42,
            "description": ["not", "text"],
            "labels": {"nodes": [{"name": "automatable"}, {"name": 3}, "odd"]},
            "state": {"type": false},
            "inverseRelations": "none",
        }));
        assert_eq!(
            (node.id.as_deref(), node.number),
            (Some("9f1c-uuid"), Some(7.0))
        );
        assert_eq!((node.title, node.description), (None, None));
        let labels: Vec<Option<String>> = node.labels.nodes.into_iter().map(|l| l.name).collect();
        assert_eq!(labels, vec![Some("automatable".to_string()), None]);
        assert_eq!(node.state.kind, None);
        assert!(node.inverse_relations.nodes.is_empty());
        let none: IssueNode = one(&json!("an issue"));
        assert_eq!((none.id, none.number), (None, None));
    }

    #[test]
    fn a_page_of_issues_skips_an_item_that_is_no_issue() {
        let data: Issues = one(&json!({"issues": {
            "nodes": [
                {"id": "a", "number": 3, "state": {"type": "started"}},
                "odd",
                7,
                {"id": 12, "number": 4, "labels": {"nodes": [{"name": "automatable"}]}},
            ],
            "pageInfo": {"hasNextPage": true, "endCursor": "c2"},
        }}));
        let read: Vec<(Option<String>, Option<f64>)> = data
            .issues
            .nodes
            .iter()
            .map(|n| (n.id.clone(), n.number))
            .collect();
        assert_eq!(read, vec![(Some("a".into()), Some(3.0)), (None, Some(4.0))]);
        assert_eq!(data.issues.next().as_deref(), Some("c2"));
        let none: Issues = one(&json!({"issues": {"nodes": "none"}}));
        assert!(none.issues.nodes.is_empty() && none.issues.next().is_none());
        assert!(one::<Issues>(&json!([{"issues": 1}]))
            .issues
            .nodes
            .is_empty());
    }

    #[test]
    fn a_wrongly_typed_relation_or_comment_field_keeps_the_rest() {
        let node: IssueNode = one(&json!({
            "number": "7",
            "inverseRelations": {"nodes": [
                {"type": "blocks", "issue": {"number": 3, "team": {"key": "ENG"}}},
                {"type": "blocks", "issue": {"number": "4", "team": {"key": 1}}},
            ]},
        }));
        assert_eq!(node.number, None, "a number written as text is no number");
        let related: Vec<(Option<f64>, Option<String>)> = node
            .inverse_relations
            .nodes
            .into_iter()
            .map(|r| (r.issue.number, r.issue.team.key))
            .collect();
        assert_eq!(related, vec![(Some(3.0), Some("ENG".into())), (None, None)]);
        let data: IssueComments = one(&json!({"issue": {"comments": {
            "nodes": [{"body": "hi", "user": {"name": ["x"]}, "createdAt": 5}, null],
            "pageInfo": {"hasNextPage": "yes", "endCursor": "c"},
        }}}));
        let comments = data.issue.comments;
        let c = &comments.nodes[0];
        assert_eq!(
            (c.body.as_deref(), c.user.name.as_deref()),
            (Some("hi"), None)
        );
        assert_eq!((c.created_at.as_deref(), comments.nodes.len()), (None, 1));
        assert_eq!(
            comments.next(),
            None,
            "a page that does not say yes has no next"
        );
    }

    #[test]
    fn the_next_page_is_told_only_with_its_cursor() {
        let page: Page<Id> = one(&json!({
            "nodes": [], "pageInfo": {"hasNextPage": true, "endCursor": "abc"}
        }));
        assert_eq!(page.next().as_deref(), Some("abc"));
        let page: Page<Id> = one(&json!({
            "nodes": [], "pageInfo": {"hasNextPage": true, "endCursor": null}
        }));
        assert_eq!(page.next(), None);
    }

    #[test]
    fn the_doctor_and_label_answers_read_their_ids() {
        let data: DoctorTeam = one(&json!({
            "viewer": {"name": "runner"},
            "teams": {"nodes": [{"name": "Eng", "labels": {"nodes": [{"id": "l"}]}, "states": 3}]},
        }));
        let team = &data.teams.nodes[0];
        assert_eq!(
            (data.viewer.name.as_deref(), team.name.as_deref()),
            (Some("runner"), Some("Eng"))
        );
        assert_eq!((team.labels.nodes.len(), team.states.nodes.len()), (1, 0));
        let data: LabelByName = one(&json!({"teams": {"nodes": [
            {"id": "team-1", "labels": {"nodes": [{"id": 5}, {"id": "label-2"}]}}
        ]}}));
        let team = &data.teams.nodes[0];
        let ids: Vec<Option<&str>> = team.labels.nodes.iter().map(|l| l.id.as_deref()).collect();
        assert_eq!(
            (team.id.as_deref(), ids),
            (Some("team-1"), vec![None, Some("label-2")])
        );
        let made: LabelCreate =
            one(&json!({"issueLabelCreate": {"issueLabel": {"id": "label-3"}}}));
        assert_eq!(
            made.issue_label_create.issue_label.id.as_deref(),
            Some("label-3")
        );
        let refused: LabelCreate = one(&json!({"issueLabelCreate": null}));
        assert_eq!(refused.issue_label_create.issue_label.id, None);
    }

    #[test]
    fn completed_states_read_their_position_or_none() {
        let data: CompletedState = one(&json!({"workflowStates": {"nodes": [
            {"id": "done", "position": 2},
            {"id": "shipped", "position": "first"},
            "odd",
        ]}}));
        let states: Vec<(Option<&str>, Option<f64>)> = data
            .workflow_states
            .nodes
            .iter()
            .map(|s| (s.id.as_deref(), s.position))
            .collect();
        assert_eq!(
            states,
            vec![(Some("done"), Some(2.0)), (Some("shipped"), None)]
        );
    }

    #[test]
    fn an_error_without_a_readable_code_has_none() {
        let code = |v: Value| one::<GraphqlError>(&v).extensions.code;
        assert_eq!(
            code(json!({"extensions": {"code": "RATELIMITED"}})).as_deref(),
            Some("RATELIMITED")
        );
        assert_eq!(code(json!({"extensions": {"code": 429}})), None);
        assert_eq!(code(json!({"message": "no extensions"})), None);
        assert_eq!(code(json!(["RATELIMITED"])), None);
    }

    #[test]
    fn an_answer_reads_errors_only_when_they_are_a_list() {
        let a: Answer = one(&json!({"data": {"x": 1}, "errors": "boom"}));
        assert_eq!((a.data, a.errors), (json!({"x": 1}), None));
        let a: Answer = one(&json!({"errors": [{"message": "m"}, 3]}));
        assert_eq!((a.data, a.errors.map(|e| e.len())), (Value::Null, Some(2)));
        assert_eq!(one::<Answer>(&Value::Null).data, Value::Null);
    }
}
