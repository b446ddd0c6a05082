//! The lease types of issue claims (`claims.rs` keeps them; the GitHub tracker writes and
//! reads them as comments, so they live with the tracker).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One runner's lease on one issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// The claimed issue.
    pub issue: u32,
    /// The worker id of the runner that holds it.
    pub worker: String,
    /// When the lease was taken or last renewed.
    pub claimed_at: DateTime<Utc>,
    /// When it lapses unless renewed; after that another runner may take it.
    pub expires_at: DateTime<Utc>,
}

impl Claim {
    /// Whether the lease still holds at `now`.
    pub fn live(&self, now: DateTime<Utc>) -> bool {
        self.expires_at > now
    }
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// This runner holds the issue now (newly, by takeover of an expired lease, or again).
    Won(Claim),
    /// Another runner's live lease holds it.
    Held(Claim),
}
