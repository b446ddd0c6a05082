//! Linear issues through Linear's GraphQL API (`linear.team`): the issues of the team with the
//! selection label in a not-started or started state, numbered by their number in the team
//! (`ENG-12` is issue 12), under the same selection rule as GitHub's. On merge the issue moves
//! to the team's completed state with a comment; quarantine adds the escalated label (created
//! in the team when missing) and a comment.
//!
//! A GraphQL answer is an error when its HTTP status is, and also when it carries `errors`
//! with status 200; its kind comes from the status and headers, else from the error's
//! `extensions.code` (`RATELIMITED`, `AUTHENTICATION_ERROR`, `FORBIDDEN`), never its words.

use super::models::{
    one, Answer, CompletedState, DoctorTeam, GraphqlError, IssueComments, IssueNode, Issues,
    LabelByName, LabelCreate, Relation,
};
use crate::api_client::{ApiClient, Endpoint, Failure};
use crate::call_failure::{CallFailureKind, SECONDARY_LIMIT_SECS};
use crate::ports::tracker::{Comment, Issue, IssueText, Selection, TrackerError};
use crate::tracker::{escalation_text, select_from, Scope};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};

/// Linear keeps comments far longer; diagnostics are kept short.
const MAX_COMMENT_BYTES: usize = 60_000;

pub(super) const ISSUE_FIELDS: &str = "id identifier number title description state { type } labels { nodes { name } } inverseRelations { nodes { type issue { number team { key } } } }";

/// What `doctor` learns of the team from Linear ([`Linear::team_facts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamFacts {
    /// The name of the account whose key the runner holds.
    pub viewer: String,
    /// The team's name, when a team with `linear.team`'s key is visible to the key.
    pub team: Option<String>,
    /// Whether the team has the selection label.
    pub label: bool,
    /// Whether the team's workflow has a completed state.
    pub completed_state: bool,
}

/// The Linear tracker of one team.
#[derive(Debug, Clone)]
pub struct Linear {
    /// The GraphQL endpoint, with the key.
    pub api: ApiClient,
    /// The team's key (`ENG`).
    pub team: String,
    /// Issues with this label are candidates.
    pub label: String,
    /// The durable quarantine label.
    pub escalated_label: String,
}

/// The kind of a GraphQL error, from its `extensions.code`.
pub fn graphql_error_kind(errors: &[Value]) -> CallFailureKind {
    let codes: Vec<String> = errors
        .iter()
        .filter_map(|e| one::<GraphqlError>(e).extensions.code)
        .collect();
    let has = |code: &str| codes.iter().any(|c| c == code);
    if has("RATELIMITED") {
        CallFailureKind::RateLimited {
            wait_secs: SECONDARY_LIMIT_SECS,
        }
    } else if has("AUTHENTICATION_ERROR") {
        CallFailureKind::Auth
    } else if has("FORBIDDEN") {
        CallFailureKind::Permission
    } else {
        CallFailureKind::Other
    }
}

impl Linear {
    /// One GraphQL operation: its `data` read as `T` (the operation's model), or the failure
    /// of the answer.
    pub(super) fn graphql<T: DeserializeOwned + Default>(
        &self,
        operation: &str,
        query: &str,
        variables: Value,
    ) -> Result<T, TrackerError> {
        let body = json!({ "operationName": operation, "query": query, "variables": variables });
        let answer = self.api.answer("POST", &Endpoint::root(), Some(&body))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        let parsed: Answer = one(&parsed);
        let errors = parsed.errors.as_deref().filter(|e| !e.is_empty());
        if !answer.ok() {
            let mut failure = self.api.failure("POST", &Endpoint::root(), &answer);
            failure.message = format!("{operation}: {}", failure.message);
            if let Some(errors) = errors {
                let kind = graphql_error_kind(errors);
                // The status says little when it is a 400: the error's code says more.
                if failure.kind == CallFailureKind::Other {
                    failure.kind = kind;
                }
            }
            return Err(failure.into());
        }
        if let Some(errors) = errors {
            let kind = graphql_error_kind(errors);
            let mut message = format!(
                "POST {} {operation}: {}",
                self.api.base,
                crate::api_client::message_of(&answer.body)
            );
            if matches!(kind, CallFailureKind::Auth | CallFailureKind::Permission) {
                message.push_str(&format!(
                    "; the key in {} was refused or may not do this: renew it (or name another variable in linear.tokenEnv)",
                    self.api.token_env
                ));
            }
            return Err(Failure { message, kind }.into());
        }
        Ok(one(&parsed.data))
    }

    /// What `doctor` asks of Linear, in one operation: whose key it is, and whether the team,
    /// its selection label and a completed state (where merged issues go) exist.
    pub fn team_facts(&self) -> Result<TeamFacts, TrackerError> {
        let data: DoctorTeam = self.graphql(
            "DoctorTeam",
            "query DoctorTeam($team: String!, $label: String!) { viewer { name } teams(filter: {key: {eq: $team}}) { nodes { name labels(filter: {name: {eq: $label}}) { nodes { id } } states(filter: {type: {eq: \"completed\"}}) { nodes { id } } } } }",
            json!({"team": self.team, "label": self.label}),
        )?;
        let team = data.teams.nodes.into_iter().next();
        Ok(TeamFacts {
            viewer: data.viewer.name.unwrap_or_default(),
            team: team.as_ref().and_then(|t| t.name.clone()),
            label: team.as_ref().is_some_and(|t| !t.labels.nodes.is_empty()),
            completed_state: team.as_ref().is_some_and(|t| !t.states.nodes.is_empty()),
        })
    }

    /// An issue as Linear's API shows it.
    pub(crate) fn parse_issue(&self, node: &IssueNode) -> Option<Issue> {
        let number = u32::try_from(node.number? as u64).ok()?;
        let labels: Vec<String> = node
            .labels
            .nodes
            .iter()
            .filter_map(|l| l.name.clone())
            .collect();
        let state = node.state.kind.as_deref().unwrap_or_default();
        Some(Issue {
            number,
            title: node.title.clone().unwrap_or_default(),
            body: node.description.clone().unwrap_or_default(),
            escalated: labels.contains(&self.escalated_label),
            labels,
            milestone: None,
            state_open: !matches!(state, "completed" | "canceled"),
            parent: None,
            closed_by_merged_pr: None,
            blocked_by: self.blockers(&node.inverse_relations.nodes),
        })
    }

    /// The team's issues that block this one: the relations of type `blocks` whose related
    /// issue is this one (`inverseRelations`); another team's issue is no number here.
    fn blockers(&self, relations: &[Relation]) -> Vec<u32> {
        relations
            .iter()
            .filter(|r| r.kind.as_deref() == Some("blocks"))
            .filter(|r| r.issue.team.key.as_deref() == Some(self.team.as_str()))
            .filter_map(|r| r.issue.number)
            .filter_map(|n| u32::try_from(n as u64).ok())
            .collect()
    }

    /// The issue `number` of the team as Linear shows it, if it exists.
    fn node(&self, number: u32) -> Result<Option<IssueNode>, TrackerError> {
        let query = format!(
            "query IssueByNumber($team: String!, $number: Float!) {{ issues(filter: {{team: {{key: {{eq: $team}}}}, number: {{eq: $number}}}}, first: 1) {{ nodes {{ {ISSUE_FIELDS} }} }} }}"
        );
        let data: Issues = self.graphql(
            "IssueByNumber",
            &query,
            json!({"team": self.team, "number": number}),
        )?;
        Ok(data.issues.nodes.into_iter().next())
    }

    pub(super) fn node_of(&self, number: u32) -> Result<IssueNode, TrackerError> {
        self.node(number)?.ok_or_else(|| TrackerError::NotFound {
            number,
            location: format!("the Linear team {}", self.team),
        })
    }

    /// The lowest-numbered candidate that is neither escalated nor waiting for an open
    /// dependency (Linear has no milestones here: the whole team is one scope).
    pub fn select(
        &self,
        escalated_this_session: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        let query = format!(
            "query Candidates($team: String!, $label: String!, $after: String) {{ issues(filter: {{team: {{key: {{eq: $team}}}}, labels: {{name: {{eq: $label}}}}, state: {{type: {{in: [\"unstarted\", \"started\"]}}}}}}, first: 100, after: $after) {{ nodes {{ {ISSUE_FIELDS} }} pageInfo {{ hasNextPage endCursor }} }} }}"
        );
        let mut candidates = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let data: Issues = self.graphql(
                "Candidates",
                &query,
                json!({"team": self.team, "label": self.label, "after": after}),
            )?;
            let page = data.issues;
            candidates.extend(page.nodes.iter().filter_map(|n| self.parse_issue(n)));
            after = page.next();
            if after.is_none() {
                break;
            }
        }
        candidates.sort_by_key(|i| i.number);
        let open: BTreeSet<u32> = candidates.iter().map(|i| i.number).collect();
        let mut viewed: HashMap<u32, Option<Issue>> = HashMap::new();
        let mut blocks = |_: &Scope, dep: u32| -> Result<bool, TrackerError> {
            if open.contains(&dep) {
                return Ok(true);
            }
            let issue = match viewed.entry(dep) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let node = self.node(dep)?;
                    e.insert(node.and_then(|n| self.parse_issue(&n)))
                }
            };
            Ok(issue.as_ref().is_some_and(|d| !d.is_done()))
        };
        select_from(
            &[],
            &candidates,
            escalated_this_session,
            merged,
            &mut blocks,
        )
    }

    /// The issue `number`, open or closed.
    pub fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        let node = self.node_of(number)?;
        self.parse_issue(&node)
            .ok_or_else(|| TrackerError::NotFound {
                number,
                location: format!("the Linear team {}", self.team),
            })
    }

    /// Title, description and comments.
    pub fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        let node = self.node_of(number)?;
        let mut text = IssueText::of(&self.get(number)?);
        let data: IssueComments = self.graphql(
            "IssueComments",
            "query IssueComments($id: String!) { issue(id: $id) { comments(first: 100) { nodes { body user { name } } } } }",
            json!({"id": node.id}),
        )?;
        text.comments = data
            .issue
            .comments
            .nodes
            .into_iter()
            .map(|c| Comment {
                author: c.user.name.unwrap_or_default(),
                body: c.body.unwrap_or_default(),
            })
            .collect();
        Ok(text)
    }

    /// Comments `body` on the issue with Linear's `id` (`None`: Linear named it with none).
    pub(super) fn comment(&self, id: Option<&str>, body: &str) -> Result<(), TrackerError> {
        self.graphql::<IgnoredAny>(
            "CommentCreate",
            "mutation CommentCreate($issueId: String!, $body: String!) { commentCreate(input: {issueId: $issueId, body: $body}) { success } }",
            json!({"issueId": id, "body": body}),
        )
        .map(drop)
    }

    /// The id of the team's label `name`, created when `create` and missing.
    fn label_id(&self, name: &str, create: bool) -> Result<Option<String>, TrackerError> {
        let data: LabelByName = self.graphql(
            "LabelByName",
            "query LabelByName($team: String!, $name: String!) { teams(filter: {key: {eq: $team}}) { nodes { id labels(filter: {name: {eq: $name}}) { nodes { id } } } } }",
            json!({"team": self.team, "name": name}),
        )?;
        let team = data.teams.nodes.into_iter().next().unwrap_or_default();
        if let Some(id) = team.labels.nodes.into_iter().next().and_then(|l| l.id) {
            return Ok(Some(id));
        }
        if !create {
            return Ok(None);
        }
        let made: LabelCreate = self.graphql(
            "LabelCreate",
            "mutation LabelCreate($teamId: String!, $name: String!) { issueLabelCreate(input: {teamId: $teamId, name: $name, color: \"#b60205\"}) { issueLabel { id } } }",
            json!({"teamId": team.id, "name": name}),
        )?;
        Ok(made.issue_label_create.issue_label.id)
    }

    fn set_label(&self, number: u32, on: bool) -> Result<(), TrackerError> {
        self.set_named_label(number, &self.escalated_label, on)
    }

    /// Adds (`on`) or removes the team's label `name` on the issue; a missing label is
    /// created to be added, and nothing to remove.
    pub(super) fn set_named_label(
        &self,
        number: u32,
        name: &str,
        on: bool,
    ) -> Result<(), TrackerError> {
        let node = self.node_of(number)?;
        let Some(label) = self.label_id(name, on)? else {
            return Ok(());
        };
        let (operation, query) = if on {
            ("AddLabel", "mutation AddLabel($id: String!, $labelId: String!) { issueAddLabel(id: $id, labelId: $labelId) { success } }")
        } else {
            ("RemoveLabel", "mutation RemoveLabel($id: String!, $labelId: String!) { issueRemoveLabel(id: $id, labelId: $labelId) { success } }")
        };
        self.graphql::<IgnoredAny>(operation, query, json!({"id": node.id, "labelId": label}))
            .map(drop)
    }

    /// Quarantines the issue: the escalated label and a comment with the diagnostic.
    pub fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        self.set_label(number, true)?;
        let how = format!(
            "Release it with `sdlc-runner release {number}` (or remove the `{}` label) to let it be selected again.",
            self.escalated_label
        );
        let node = self.node_of(number)?;
        self.comment(
            node.id.as_deref(),
            &escalation_text(diagnostic, &how, MAX_COMMENT_BYTES),
        )
    }

    /// Moves the merged issue to the team's completed state with `note`. Safe to repeat.
    pub fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        let node = self.node_of(number)?;
        if self.parse_issue(&node).is_some_and(|i| !i.state_open) {
            return Ok(());
        }
        let states: CompletedState = self.graphql(
            "CompletedState",
            "query CompletedState($team: String!) { workflowStates(filter: {team: {key: {eq: $team}}, type: {eq: \"completed\"}}) { nodes { id position } } }",
            json!({"team": self.team}),
        )?;
        let Some(state) = states
            .workflow_states
            .nodes
            .into_iter()
            .min_by(|a, b| {
                a.position
                    .partial_cmp(&b.position)
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|s| s.id)
        else {
            return Err(TrackerError::Command {
                command: format!("Linear team {}", self.team),
                detail: "the team has no completed state to move a merged issue to; add one in the team's workflow".into(),
                kind: CallFailureKind::Other,
            });
        };
        self.comment(node.id.as_deref(), &crate::redact::redact(note))?;
        self.graphql::<IgnoredAny>(
            "CloseIssue",
            "mutation CloseIssue($id: String!, $stateId: String!) { issueUpdate(id: $id, input: {stateId: $stateId}) { success } }",
            json!({"id": node.id, "stateId": state}),
        )
        .map(drop)
    }

    /// Lifts the runner's own quarantine with a comment saying why.
    pub fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        self.set_label(number, false)?;
        let node = self.node_of(number)?;
        self.comment(node.id.as_deref(), &crate::redact::redact(note))
    }

    /// Lifts the quarantine. Returns whether it was there.
    pub fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        let was = self.get(number)?.escalated;
        if was {
            self.set_label(number, false)?;
        }
        Ok(was)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphql_errors_are_kinded_by_their_code() {
        let e = |code: &str| vec![json!({"message": "x", "extensions": {"code": code}})];
        assert_eq!(
            graphql_error_kind(&e("RATELIMITED")),
            CallFailureKind::RateLimited {
                wait_secs: SECONDARY_LIMIT_SECS
            }
        );
        assert_eq!(
            graphql_error_kind(&e("AUTHENTICATION_ERROR")),
            CallFailureKind::Auth
        );
        assert_eq!(
            graphql_error_kind(&e("FORBIDDEN")),
            CallFailureKind::Permission
        );
        assert_eq!(
            graphql_error_kind(&e("INVALID_INPUT")),
            CallFailureKind::Other
        );
    }
}
