//! Linear's side of the claims kept as comments (`services/shared/claim_notes.rs`): comments
//! and the claimed label on the team's issues.

use super::models::{IssueComments, Issues};
use super::tracker::{Linear, ISSUE_FIELDS};
use crate::ports::tracker::TrackerError;
use crate::services::shared::claim_notes;
use serde_json::json;

/// Claims on Linear (docs/scaling.md): the label `sdlc-claimed` shows them to people; the
/// comments decide, read back in the order Linear wrote them.
impl claim_notes::ClaimBoard for Linear {
    fn notes(&self, issue: u32) -> Result<Vec<claim_notes::ClaimNote>, TrackerError> {
        let node = self.node_of(issue)?;
        let mut notes = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let data: IssueComments = self.graphql(
                "ClaimNotes",
                "query ClaimNotes($id: String!, $after: String) { issue(id: $id) { comments(first: 250, after: $after) { nodes { body createdAt } pageInfo { hasNextPage endCursor } } } }",
                json!({"id": node.id, "after": after}),
            )?;
            let page = data.issue.comments;
            for c in &page.nodes {
                let Some(at) = c
                    .created_at
                    .as_deref()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                else {
                    continue;
                };
                notes.push(claim_notes::ClaimNote {
                    body: c.body.clone().unwrap_or_default(),
                    created_at: at.with_timezone(&chrono::Utc),
                });
            }
            after = page.next();
            if after.is_none() {
                break;
            }
        }
        // Linear pages comments in an order of its own; the claim rule reads them as written.
        notes.sort_by_key(|n| n.created_at);
        Ok(notes)
    }

    fn write_note(&self, issue: u32, text: &str) -> Result<(), TrackerError> {
        let node = self.node_of(issue)?;
        self.comment(node.id.as_deref(), text)
    }

    fn mark(&self, issue: u32) -> Result<(), TrackerError> {
        self.set_named_label(issue, claim_notes::CLAIMED_LABEL, true)
    }

    fn unmark(&self, issue: u32) -> Result<(), TrackerError> {
        self.set_named_label(issue, claim_notes::CLAIMED_LABEL, false)
    }

    fn marked(&self) -> Result<Vec<u32>, TrackerError> {
        let query = format!(
            "query ClaimedIssues($team: String!, $label: String!, $after: String) {{ issues(filter: {{team: {{key: {{eq: $team}}}}, labels: {{name: {{eq: $label}}}}, state: {{type: {{in: [\"unstarted\", \"started\"]}}}}}}, first: 100, after: $after) {{ nodes {{ {ISSUE_FIELDS} }} pageInfo {{ hasNextPage endCursor }} }} }}"
        );
        let mut numbers = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let data: Issues = self.graphql(
                "ClaimedIssues",
                &query,
                json!({"team": self.team, "label": claim_notes::CLAIMED_LABEL, "after": after}),
            )?;
            let page = data.issues;
            numbers.extend(
                page.nodes
                    .iter()
                    .filter_map(|n| self.parse_issue(n))
                    .map(|i| i.number),
            );
            after = page.next();
            if after.is_none() {
                break;
            }
        }
        Ok(numbers)
    }
}
