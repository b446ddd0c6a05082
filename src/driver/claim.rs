//! The driver's side of issue claims (`--worker-id`): it performs the machine's `ClaimIssue`
//! and `RenewClaim` (when to claim, renew, and what a held or lost claim means are the
//! machine's), releases a claim when the issue is merged or escalated and when the run ends,
//! and keeps the claims of other runners out of the tracker's selection.

use super::Driver;
use crate::machine::Event;
use crate::ports::ClaimStore;
use crate::tracker::claims::{Claim, Claimed};
use std::time::Duration;

/// One runner's claims (their store is a port of the driver's world).
#[derive(Debug)]
pub(super) struct ClaimKeeper {
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

/// Live claims of runners other than `worker` at `now`.
fn others_at(
    store: &ClaimStore,
    worker: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<Claim>, crate::tracker::claims::ClaimError> {
    Ok(store
        .all()?
        .into_iter()
        .filter(|c| c.worker != worker && c.live(now))
        .collect())
}

impl Driver {
    /// `call` on the claim store with this runner's worker id, off the runtime; `None` for a
    /// runner that keeps no claims.
    pub(super) async fn on_claims<T: Send + 'static>(
        &self,
        call: impl FnOnce(&ClaimStore, &str) -> T + Send + 'static,
    ) -> Option<T> {
        let worker = self.claims.as_ref()?.worker.clone();
        self.io
            .call(move |w| w.claims.as_ref().map(|store| call(store, &worker)))
            .await
    }

    /// `ClaimIssue`: claims the selected issue. `ClaimTaken` (also when this runner keeps no
    /// claims), `ClaimHeld` when another runner holds it or the fleet gives it to another
    /// worker, `TrackerWriteFailed` when the claim cannot be written, or the network's event.
    pub(super) async fn claim_issue(&mut self, issue: u32) -> Event {
        let what = format!("claiming issue #{issue}");
        let asked = self
            .claims
            .as_ref()
            .map(|k| (k.worker.clone(), k.lease, self.clock.now()));
        let answer = match self
            .patiently(&what, move |w| match (&w.claims, asked) {
                (Some(store), Some((worker, lease, now))) => {
                    store.claim(issue, &worker, lease, now).map(Some)
                }
                _ => Ok(None),
            })
            .await
        {
            super::network::Patient::Done(answer) => answer,
            super::network::Patient::GaveUp(ev) | super::network::Patient::Cancelled(ev) => {
                return ev
            }
        };
        match self.note_claim(issue, answer).await {
            Ok(true) if self.fleet_refuses(issue).await => Event::ClaimHeld { issue },
            Ok(true) => Event::ClaimTaken { issue },
            Ok(false) => Event::ClaimHeld { issue },
            Err(detail) => {
                self.say(format!("{what}: {detail}"));
                self.log(&format!("tracker: {what} failed: {detail}"));
                Event::TrackerWriteFailed
            }
        }
    }

    async fn note_claim(
        &mut self,
        issue: u32,
        answer: Result<Option<Claimed>, crate::tracker::claims::ClaimError>,
    ) -> Result<bool, String> {
        let Some(keeper) = self.claims.as_mut() else {
            return Ok(true);
        };
        match answer {
            Ok(None) => Ok(true),
            Ok(Some(Claimed::Won(c))) => {
                keeper.held = Some((issue, c.expires_at));
                let line = format!(
                    "claimed issue #{issue} as worker {} until {}",
                    keeper.worker,
                    c.expires_at.format("%H:%M:%S UTC")
                );
                self.log(&line);
                match self
                    .io
                    .call(move |w| w.git.adopt_pushed_branch(issue))
                    .await
                {
                    Ok(Some(branch)) => self.log(&format!(
                        "issue #{issue}: continuing from the pushed branch {branch}"
                    )),
                    Ok(None) => {}
                    Err(e) => self.log(&format!(
                        "warning: issue #{issue}: cannot take over the pushed branch: {e}"
                    )),
                }
                Ok(true)
            }
            Ok(Some(Claimed::Held(c))) => {
                keeper.others.insert(issue, c.clone());
                let line = format!(
                    "issue #{issue} is claimed by worker {} until {}; skipping it",
                    c.worker,
                    c.expires_at.format("%H:%M:%S UTC")
                );
                self.log(&line);
                Ok(false)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// `RenewClaim`: renews the claim on `issue` on the machine's terms: written to last
    /// `lease_secs` from now, unless it has more than `fresh_secs` left. `ClaimRenewed`,
    /// `ClaimLost` when another runner holds it now, or `TrackerWriteFailed` when the claim
    /// cannot be written (the machine goes ahead; the next renewal tells).
    pub(super) async fn renew_claim(
        &mut self,
        issue: u32,
        secs: u64,
        lease_secs: u64,
        fresh_secs: Option<u64>,
    ) -> Event {
        let Some(keeper) = self.claims.as_mut() else {
            return Event::ClaimRenewed;
        };
        let now = self.clock.now();
        // A session begun by an earlier version asks with no lease: the config's.
        let lease = match lease_secs {
            0 => keeper.lease + Duration::from_secs(secs),
            lease => Duration::from_secs(lease),
        };
        let left = match keeper.held {
            Some((n, until)) if n == issue => (until - now).to_std().ok(),
            _ => None,
        };
        if let (Some(left), Some(fresh)) = (left, fresh_secs) {
            if left > Duration::from_secs(fresh) {
                return Event::ClaimRenewed;
            }
        }
        let renewed = self
            .on_claims(move |store, worker| store.renew(issue, worker, lease, now))
            .await;
        let Some(keeper) = self.claims.as_mut() else {
            return Event::ClaimRenewed;
        };
        match renewed.unwrap_or(Ok(None)) {
            Ok(None) => {
                let until = chrono::TimeDelta::from_std(lease)
                    .ok()
                    .and_then(|d| now.checked_add_signed(d))
                    .unwrap_or(now);
                keeper.held = Some((issue, until));
                Event::ClaimRenewed
            }
            Ok(Some(holder)) => {
                keeper.held = None;
                let line = format!(
                    "warning: issue #{issue} is now claimed by worker {} (this runner's lease ran out)",
                    holder.worker
                );
                self.log(&line);
                Event::ClaimLost { issue }
            }
            Err(e) => {
                self.log(&format!(
                    "warning: cannot renew the claim on issue #{issue}: {e}"
                ));
                Event::TrackerWriteFailed
            }
        }
    }

    /// Gives the claim on `issue` up (merged, escalated, or the run ends).
    pub(super) async fn release_claim(&mut self, issue: u32) {
        let Some(keeper) = self.claims.as_mut() else {
            return;
        };
        if keeper.held.is_some_and(|(n, _)| n == issue) {
            keeper.held = None;
        }
        let released = self
            .on_claims(move |store, worker| store.release(issue, worker))
            .await;
        if let Some(Err(e)) = released {
            self.log(&format!(
                "warning: cannot release the claim on issue #{issue}: {e}"
            ));
        }
    }

    /// Refreshes the issues to leave out of a selection: held by other runners right now.
    pub(super) async fn claimed_by_others(&mut self) {
        let now = self.clock.now();
        let read = self
            .on_claims(move |store, worker| others_at(store, worker, now))
            .await;
        match (read, self.claims.as_mut()) {
            (Some(Ok(claims)), Some(keeper)) => {
                keeper.others = claims.into_iter().map(|c| (c.issue, c)).collect();
            }
            (Some(Err(e)), _) => self.log(&format!(
                "warning: cannot read the other runners' claims: {e}"
            )),
            _ => {}
        }
    }

    /// `#3 by w1 until 12:00:00 UTC, …` for a message.
    pub(super) fn describe_others(&self) -> String {
        self.claims
            .iter()
            .flat_map(|k| k.others.values())
            .map(|c| {
                format!(
                    "#{} by {} until {}",
                    c.issue,
                    c.worker,
                    c.expires_at.format("%H:%M:%S UTC")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
