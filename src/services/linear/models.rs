//! Linear's answers as typed models, read leniently: a field of the wrong type reads as absent
//! (its default) and a list item that is not what it should be is left out, so one odd field
//! never drops the issue, comment or page it is in. What a missing field means is the
//! tracker's to say (an issue without a number is no issue).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The field's value as a `T`, or `T`'s default when it is of another type (or null).
fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(serde_json::from_value(Value::deserialize(d)?).unwrap_or_default())
}

/// The list's items that are `T`s, the others left out; no list at all reads as empty.
fn each<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| serde_json::from_value(item).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// One page of a connection: its nodes, and where the next page begins.
#[derive(Debug, Deserialize)]
#[serde(bound = "T: DeserializeOwned", rename_all = "camelCase")]
pub(crate) struct Page<T> {
    /// The nodes that could be read.
    #[serde(default, deserialize_with = "each")]
    pub nodes: Vec<T>,
    #[serde(default, deserialize_with = "or_default")]
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

impl<T: DeserializeOwned> Page<T> {
    /// The page at `value` (a connection), empty when it is none.
    pub fn of(value: &Value) -> Page<T> {
        serde_json::from_value(value.clone()).unwrap_or_default()
    }

    /// The cursor of the next page, when Linear says there is one.
    pub fn next(&self) -> Option<&str> {
        self.page_info
            .has_next_page
            .then_some(self.page_info.end_cursor.as_deref())
            .flatten()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PageInfo {
    #[serde(deserialize_with = "or_default")]
    has_next_page: bool,
    #[serde(deserialize_with = "or_default")]
    end_cursor: Option<String>,
}

/// Something with a name (a label, a user, a team).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Named {
    #[serde(deserialize_with = "or_default")]
    pub name: Option<String>,
}

/// An issue as `ISSUE_FIELDS` asks for it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct IssueNode {
    /// Linear's number of the issue in its team (a float in Linear's schema).
    #[serde(deserialize_with = "or_default")]
    pub number: Option<f64>,
    #[serde(deserialize_with = "or_default")]
    pub title: Option<String>,
    #[serde(deserialize_with = "or_default")]
    pub description: Option<String>,
    #[serde(deserialize_with = "or_default")]
    pub labels: Page<Named>,
    #[serde(deserialize_with = "or_default")]
    pub state: State,
    /// The relations whose related issue is this one.
    #[serde(deserialize_with = "or_default")]
    pub inverse_relations: Page<Relation>,
}

impl IssueNode {
    /// The issue at `value`; `None` when it is no object at all.
    pub fn of(value: &Value) -> Option<IssueNode> {
        serde_json::from_value(value.clone()).ok()
    }
}

/// An issue's workflow state.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct State {
    /// `backlog`, `unstarted`, `started`, `completed`, `canceled`, …
    #[serde(rename = "type", deserialize_with = "or_default")]
    pub kind: Option<String>,
}

/// A relation between two issues, seen from the related one.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Relation {
    /// `blocks`, `related`, `duplicate`, …
    #[serde(rename = "type", deserialize_with = "or_default")]
    pub kind: Option<String>,
    /// The issue on the relation's other side.
    #[serde(deserialize_with = "or_default")]
    pub issue: Related,
}

/// The other side of a relation: its number and its team's key.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Related {
    #[serde(deserialize_with = "or_default")]
    pub number: Option<f64>,
    #[serde(deserialize_with = "or_default")]
    pub team: TeamKey,
}

/// A team as a relation names it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TeamKey {
    #[serde(deserialize_with = "or_default")]
    pub key: Option<String>,
}

/// A comment on an issue.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CommentNode {
    #[serde(deserialize_with = "or_default")]
    pub body: Option<String>,
    #[serde(deserialize_with = "or_default")]
    pub user: Named,
    /// When it was written (RFC 3339), as the claims' order needs it.
    #[serde(deserialize_with = "or_default")]
    pub created_at: Option<String>,
}

/// What `doctor` asks of a team: its name, and the ids of its label and completed states.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TeamNode {
    #[serde(deserialize_with = "or_default")]
    pub name: Option<String>,
    #[serde(deserialize_with = "or_default")]
    pub labels: Page<Value>,
    #[serde(deserialize_with = "or_default")]
    pub states: Page<Value>,
}

/// A GraphQL answer: its `data` as given, and its `errors` when they are a list.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Answer {
    pub data: Value,
    #[serde(deserialize_with = "or_default")]
    pub errors: Option<Vec<Value>>,
}

impl Answer {
    /// The answer at `value`; one that is no object has neither data nor errors.
    pub fn of(value: &Value) -> Answer {
        if !value.is_object() {
            return Answer::default();
        }
        serde_json::from_value(value.clone()).unwrap_or_default()
    }
}

/// One error of a GraphQL answer, for the code that says its kind.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct GraphqlError {
    #[serde(deserialize_with = "or_default")]
    pub extensions: Extensions,
}

/// Where Linear puts an error's `code` (`RATELIMITED`, `AUTHENTICATION_ERROR`, …).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Extensions {
    #[serde(deserialize_with = "or_default")]
    pub code: Option<String>,
}

impl GraphqlError {
    /// The error at `value`; one that is no object has no code, but still counts as an error.
    pub fn of(value: &Value) -> GraphqlError {
        if !value.is_object() {
            return GraphqlError::default();
        }
        serde_json::from_value(value.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wrongly_typed_field_of_an_issue_reads_as_absent_and_keeps_the_issue() {
        let node = IssueNode::of(&json!({
            "number": 7,
            "title": 42,
            "description": ["not", "text"],
            "labels": {"nodes": [{"name": "automatable"}, {"name": 3}, "odd"]},
            "state": {"type": false},
            "inverseRelations": "none",
        }))
        .expect("an object is an issue");
        assert_eq!(node.number, Some(7.0));
        assert_eq!((node.title, node.description), (None, None));
        let labels: Vec<Option<String>> = node.labels.nodes.into_iter().map(|l| l.name).collect();
        assert_eq!(labels, vec![Some("automatable".to_string()), None]);
        assert_eq!(node.state.kind, None);
        assert!(node.inverse_relations.nodes.is_empty());
        assert!(IssueNode::of(&json!("an issue")).is_none());
    }

    #[test]
    fn a_wrongly_typed_relation_or_comment_field_keeps_the_rest() {
        let node = IssueNode::of(&json!({
            "number": "7",
            "inverseRelations": {"nodes": [
                {"type": "blocks", "issue": {"number": 3, "team": {"key": "ENG"}}},
                {"type": "blocks", "issue": {"number": "4", "team": {"key": 1}}},
            ]},
        }))
        .expect("an issue");
        assert_eq!(node.number, None, "a number written as text is no number");
        let related: Vec<(Option<f64>, Option<String>)> = node
            .inverse_relations
            .nodes
            .into_iter()
            .map(|r| (r.issue.number, r.issue.team.key))
            .collect();
        assert_eq!(related, vec![(Some(3.0), Some("ENG".into())), (None, None)]);
        let comments: Page<CommentNode> = Page::of(&json!({
            "nodes": [{"body": "hi", "user": {"name": ["x"]}, "createdAt": 5}],
            "pageInfo": {"hasNextPage": "yes", "endCursor": "c"},
        }));
        let c = &comments.nodes[0];
        assert_eq!(
            (c.body.as_deref(), c.user.name.as_deref()),
            (Some("hi"), None)
        );
        assert_eq!(c.created_at, None);
        assert_eq!(
            comments.next(),
            None,
            "a page that does not say yes has no next"
        );
    }

    #[test]
    fn the_next_page_is_told_only_with_its_cursor() {
        let page: Page<Value> = Page::of(&json!({
            "nodes": [], "pageInfo": {"hasNextPage": true, "endCursor": "abc"}
        }));
        assert_eq!(page.next(), Some("abc"));
        let page: Page<Value> = Page::of(&json!({
            "nodes": [], "pageInfo": {"hasNextPage": true, "endCursor": null}
        }));
        assert_eq!(page.next(), None);
        let team: TeamNode = serde_json::from_value(json!({
            "name": "Eng", "labels": {"nodes": [{"id": "l"}]}, "states": 3
        }))
        .expect("a team");
        assert_eq!(team.name.as_deref(), Some("Eng"));
        assert_eq!((team.labels.nodes.len(), team.states.nodes.len()), (1, 0));
    }

    #[test]
    fn an_error_without_a_readable_code_has_none() {
        let code = |v: Value| GraphqlError::of(&v).extensions.code;
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
        let a = Answer::of(&json!({"data": {"x": 1}, "errors": "boom"}));
        assert_eq!((a.data, a.errors), (json!({"x": 1}), None));
        let a = Answer::of(&json!({"errors": [{"message": "m"}, 3]}));
        assert_eq!((a.data, a.errors.map(|e| e.len())), (Value::Null, Some(2)));
        assert_eq!(Answer::of(&Value::Null).data, Value::Null);
    }
}
