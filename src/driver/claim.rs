//! The driver's side of issue claims (`--worker-id`): claim before an issue starts, renew
//! before each step and each wait, release when the issue is merged or escalated and when the
//! run ends. Losing a claim (this runner's lease ran out and another runner took the issue
//! over) stops the run like a shutdown signal: the other runner owns the issue now.

use super::Driver;
use crate::machine::{Event, Signal};
use crate::tracker::claims::{Claim, ClaimStore, Claimed};
use std::time::Duration;

/// One runner's claims.
#[derive(Debug)]
pub(super) struct ClaimKeeper {
    pub store: ClaimStore,
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

impl ClaimKeeper {
    /// Live claims of other runners.
    pub fn others_now(&self) -> Result<Vec<Claim>, crate::tracker::claims::ClaimError> {
        let now = chrono::Utc::now();
        Ok(self
            .store
            .all()?
            .into_iter()
            .filter(|c| c.worker != self.worker && c.live(now))
            .collect())
    }
}

impl Driver {
    /// Claims the selected issue, waiting out a network blip like any tracker call.
    /// `Ok(Ok(true))`: this runner holds it; `Ok(Ok(false))`: another runner does, and it is
    /// left out of the next selection; `Err(event)`: the network gave up or a shutdown came.
    pub(super) async fn claim_selected(
        &mut self,
        issue: u32,
    ) -> Result<Result<bool, String>, Event> {
        let what = format!("claiming issue #{issue}");
        let answer = match self
            .patiently(&what, |d| {
                d.claims
                    .as_ref()
                    .map(|k| k.store.claim(issue, &k.worker, k.lease, d.clock.now()))
                    .transpose()
            })
            .await
        {
            super::network::Patient::Done(answer) => answer,
            super::network::Patient::GaveUp(ev) | super::network::Patient::Cancelled(ev) => {
                return Err(ev)
            }
        };
        Ok(self.note_claim(issue, answer))
    }

    fn note_claim(
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
                match self.repo.adopt_pushed_branch(issue) {
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

    /// Renews the claim on the machine's current issue so that it outlasts `extra` more than
    /// a lease. `Some(event)` (a shutdown) when the issue is no longer this runner's.
    pub(super) fn keep_claim(&mut self, extra: Duration) -> Option<Event> {
        let issue = self.core.runner().issue?;
        let keeper = self.claims.as_mut()?;
        let now = self.clock.now();
        let lease = keeper.lease + extra;
        let fresh = match keeper.held {
            Some((n, until)) if n == issue => {
                let left = (until - now).to_std().unwrap_or_default();
                extra.is_zero() && left > keeper.lease / 2
            }
            _ => false,
        };
        if fresh {
            return None;
        }
        match keeper.store.renew(issue, &keeper.worker, lease, now) {
            Ok(None) => {
                let until = chrono::TimeDelta::from_std(lease)
                    .ok()
                    .and_then(|d| now.checked_add_signed(d))
                    .unwrap_or(now);
                keeper.held = Some((issue, until));
                None
            }
            Ok(Some(holder)) => {
                keeper.held = None;
                let line = format!(
                    "warning: issue #{issue} is now claimed by worker {} (this runner's lease ran out); stopping so that only one runner works on it",
                    holder.worker
                );
                self.log(&line);
                self.shutdown.request(Signal::Term);
                Some(self.shutdown.event())
            }
            Err(e) => {
                // The claim stays as it was; an expired lease is at worst shared for a moment,
                // and the next renewal tells.
                self.log(&format!(
                    "warning: cannot renew the claim on issue #{issue}: {e}"
                ));
                None
            }
        }
    }

    /// Gives the claim on `issue` up (merged, escalated, or the run ends).
    pub(super) fn release_claim(&mut self, issue: u32) {
        let Some(keeper) = self.claims.as_mut() else {
            return;
        };
        if keeper.held.is_some_and(|(n, _)| n == issue) {
            keeper.held = None;
        }
        if let Err(e) = keeper.store.release(issue, &keeper.worker) {
            self.log(&format!(
                "warning: cannot release the claim on issue #{issue}: {e}"
            ));
        }
    }

    /// Refreshes the issues to leave out of a selection: held by other runners right now.
    pub(super) fn claimed_by_others(&mut self) {
        let Some(keeper) = self.claims.as_mut() else {
            return;
        };
        match keeper.others_now() {
            Ok(claims) => keeper.others = claims.into_iter().map(|c| (c.issue, c)).collect(),
            Err(e) => self.log(&format!(
                "warning: cannot read the other runners' claims: {e}"
            )),
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
