//! What one runner knows of issue claims (`--worker-id`): its own and the ones of others it
//! met; `claim.rs` performs the machine's claim requests with it.

use crate::ports::claims::Claim;
use std::time::Duration;

/// One runner's claims (their store is a port of the driver's world).
#[derive(Debug)]
pub(crate) struct ClaimKeeper {
    pub worker: String,
    pub lease: Duration,
    /// The issue held and until when.
    pub held: Option<(u32, chrono::DateTime<chrono::Utc>)>,
    /// Issues skipped in this selection because another runner holds them, with the claim.
    pub others: std::collections::BTreeMap<u32, Claim>,
    /// Issues the fleet's coordinator refused to this worker (held by another worker,
    /// escalated or merged in this session): never selected again in this run.
    pub refused: std::collections::BTreeSet<u32>,
}
