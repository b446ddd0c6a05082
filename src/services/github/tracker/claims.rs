//! Issue claims on GitHub (docs/scaling.md): the claim is a comment, the label and the
//! assignment show it to people. Comments are read back after every write, and the first
//! live claim in comment order wins, so two runners racing for one issue agree on the winner.

use super::{GitHub, TrackerError};
use crate::services::shared::claim_notes::{ClaimBoard, ClaimNote, CLAIMED_LABEL};

impl GitHub {
    /// The issue's comments, oldest first, every page (`GET …/issues/N/comments`).
    fn comments(&self, issue: u32) -> Result<Vec<ClaimNote>, TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{issue}/comments");
        self.pages(&endpoint)?
            .into_iter()
            .map(|c| {
                serde_json::from_value(c).map_err(|source| TrackerError::Json {
                    command: self.display(&["api", &endpoint]),
                    source,
                })
            })
            .collect()
    }

    /// Assigns the issue to the token's user (`GET /user` once, then
    /// `POST …/issues/N/assignees`). The assignment is for people and the comments decide, so
    /// only a rate limit (a wait) is an error; any other refusal leaves the issue unassigned.
    fn assign_self(&self, issue: u32) -> Result<(), TrackerError> {
        let login = match self.own_login() {
            Ok(login) => login,
            Err(e) => return limited_only(e),
        };
        if login.is_empty() {
            return Ok(());
        }
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{issue}/assignees");
        match self.rest(
            "POST",
            &endpoint,
            Some(&serde_json::json!({"assignees": [login]})),
        ) {
            Ok(_) => Ok(()),
            Err(e) => limited_only(e),
        }
    }
}

impl ClaimBoard for GitHub {
    fn notes(&self, issue: u32) -> Result<Vec<ClaimNote>, TrackerError> {
        self.comments(issue)
    }

    fn write_note(&self, issue: u32, text: &str) -> Result<(), TrackerError> {
        self.comment(issue, text)
    }

    /// The label, and the issue assigned to the token's account.
    fn mark(&self, issue: u32) -> Result<(), TrackerError> {
        self.add_label(
            issue,
            CLAIMED_LABEL,
            "1D76DB",
            "an sdlc-runner works on this issue (see its claim comments)",
        )?;
        self.assign_self(issue)
    }

    fn unmark(&self, issue: u32) -> Result<(), TrackerError> {
        self.remove_label(issue, CLAIMED_LABEL)
    }

    fn marked(&self) -> Result<Vec<u32>, TrackerError> {
        let endpoint = format!(
            "repos/{{owner}}/{{repo}}/issues?state=open&labels={}",
            crate::call_failure::path_segment(CLAIMED_LABEL)
        );
        Ok(self
            .pages(&endpoint)?
            .into_iter()
            // The issues' list holds pull requests too; none is ever claimed.
            .filter(|issue| issue.get("pull_request").is_none())
            .filter_map(|issue| {
                issue
                    .get("number")
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
            })
            .collect())
    }
}

/// `e` when it is a rate limit (the machine waits it out), nothing otherwise.
fn limited_only(e: TrackerError) -> Result<(), TrackerError> {
    match &e {
        TrackerError::Command {
            kind: crate::call_failure::CallFailureKind::RateLimited { .. },
            ..
        } => Err(e),
        _ => Ok(()),
    }
}
