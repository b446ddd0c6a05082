//! The claim port: leases on issues, so that several runners share one tracker without two
//! of them working the same issue, and the merge lease that makes merges one at a time
//! (docs/scaling.md). Each service keeps them its own way (files beside the local tracker, or
//! notes on the tracker's issues), chosen in `crate::wiring`; `fake::FakeClaims` keeps them in
//! memory.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

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

/// Why a claim could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("claims in {}: {source}; the tracker directory must be writable by every runner", dir.display())]
    /// The claims directory could not be read or written.
    Io {
        /// The claims directory.
        dir: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    #[error("claim file {}: {detail}; remove it if no runner is working on that issue", path.display())]
    /// A claim file is not a claim.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The tracker that keeps the claims as notes failed.
    #[error(transparent)]
    Tracker(#[from] super::tracker::TrackerError),
}

impl crate::call_failure::Kinded for ClaimError {
    fn kind(&self) -> crate::call_failure::CallFailureKind {
        use crate::call_failure::CallFailureKind;
        match self {
            ClaimError::Io { source, .. } => CallFailureKind::of_io(source),
            ClaimError::Corrupt { .. } => CallFailureKind::Other,
            ClaimError::Tracker(e) => e.kind(),
        }
    }
}

/// Where claims and the merge lease are kept, shared by every runner of a tracker.
pub trait ClaimPort: Send + Sync {
    /// Every claim on record, live or expired, by issue number.
    fn all(&self) -> Result<Vec<Claim>, ClaimError>;
    /// Claims `issue` for `worker` until `now + lease`: `Won` (newly, by takeover of an
    /// expired lease, or again), or `Held` by another runner's live lease.
    fn claim(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Claimed, ClaimError>;
    /// Extends `worker`'s lease on `issue` to `now + lease`. `Ok(Some(holder))` when the claim
    /// is no longer this worker's (its lease expired and another runner took the issue over).
    fn renew(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claim>, ClaimError>;
    /// Takes the merge lease for `worker` (merging `issue`) until `now + lease`; `None` where
    /// the store keeps no merge lease (the forge's merge cannot race).
    fn lease_merge(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>, ClaimError>;
    /// The merge lease on record, live or expired, where the store keeps one.
    fn merge_lease(&self) -> Result<Option<Claim>, ClaimError>;
    /// The merge lease's file, where the store keeps one (for messages).
    fn merge_lease_file(&self) -> Option<PathBuf>;
    /// Gives `worker`'s merge lease up; another runner's is left alone.
    fn release_merge(&self, worker: &str) -> Result<(), ClaimError>;
    /// Gives `worker`'s claim on `issue` up; someone else's claim is left alone.
    fn release(&self, issue: u32, worker: &str) -> Result<(), ClaimError>;
}
