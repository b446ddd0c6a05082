//! The rules of claims: leases on issues, so that several runners (each with its own clone
//! and `--worker-id`) can share one tracker without two of them working the same issue
//! (docs/scaling.md).
//!
//! A runner claims an issue before it starts it, renews the claim while it works (at every
//! step, and for as long as any wait it is about to make), and releases it when the issue is
//! merged or escalated or the runner stops. A claim whose lease has expired belongs to a runner
//! that died or hung: another runner may take it over and continue from the pushed branch.
//!
//! Each service keeps them its own way, behind the claim port: the local tracker as files
//! with a lock, and a merge lease beside them (`services/local/claims.rs`); GitHub, GitLab and
//! Linear as the `sdlc-claimed` label (on GitHub also an assignee) and a comment or note on the
//! issue, read back so that the earliest live claim wins (`services/shared/claim_notes.rs`).

use crate::ports::claims::{Claim, Claimed};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// A claim a store just won, with the kill tests' failpoint after it is written (every store
/// the same): `claimed` as it is.
pub(crate) fn claim_written(claimed: Claimed) -> Claimed {
    if matches!(claimed, Claimed::Won(_)) {
        crate::failpoint::point("claims: claim written");
    }
    claimed
}

/// A renewal a store just made (`None`: this worker still holds the claim), with the kill
/// tests' failpoint after it is written: `holder` as it is.
pub(crate) fn renewal_written(holder: Option<Claim>) -> Option<Claim> {
    if holder.is_none() {
        crate::failpoint::point("claims: renewal written");
    }
    holder
}

/// When a lease taken at `now` for `lease` runs out (the end of time if that cannot be told).
pub(crate) fn expiry(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(lease)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}
