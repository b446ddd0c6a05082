//! GitLab's side of the claims kept as notes (`services/shared/claim_notes.rs`): notes and the
//! claimed label on the project's issues.

use super::tracker::GitLab;
use crate::call_failure::CallFailureKind;
use crate::ports::tracker::TrackerError;
use crate::services::shared::claim_notes;
use serde_json::json;

/// An issue of a list, read for its number alone (an entry without one is left out).
#[derive(serde::Deserialize)]
struct Numbered {
    iid: u64,
}

/// Claims on GitLab (docs/scaling.md): the label `sdlc-claimed` shows them to people; the
/// notes decide, read back in the order GitLab wrote them.
impl claim_notes::ClaimBoard for GitLab {
    fn notes(&self, issue: u32) -> Result<Vec<claim_notes::ClaimNote>, TrackerError> {
        let path = self.notes_of(issue);
        self.api
            .pages(&path)?
            .into_iter()
            .map(|n| {
                serde_json::from_value(n).map_err(|e| TrackerError::Command {
                    command: format!("GET {}", self.api.address(&path)),
                    detail: format!("a note without its body or created_at ({e})"),
                    kind: CallFailureKind::Other,
                })
            })
            .collect()
    }

    fn write_note(&self, issue: u32, text: &str) -> Result<(), TrackerError> {
        self.api
            .json(
                "POST",
                &self.at().fixed("issues").segment(issue).fixed("notes"),
                Some(&json!({ "body": text })),
            )
            .map(drop)
            .map_err(Into::into)
    }

    fn mark(&self, issue: u32) -> Result<(), TrackerError> {
        self.edit(issue, json!({ "add_labels": claim_notes::CLAIMED_LABEL }))
    }

    fn unmark(&self, issue: u32) -> Result<(), TrackerError> {
        self.edit(
            issue,
            json!({ "remove_labels": claim_notes::CLAIMED_LABEL }),
        )
    }

    fn marked(&self) -> Result<Vec<u32>, TrackerError> {
        Ok(self
            .api
            .pages(
                &self
                    .at()
                    .fixed("issues")
                    .query("state", "opened")
                    .query("labels", claim_notes::CLAIMED_LABEL),
            )?
            .into_iter()
            .filter_map(|v| serde_json::from_value::<Numbered>(v).ok())
            .filter_map(|n| u32::try_from(n.iid).ok())
            .collect())
    }
}
