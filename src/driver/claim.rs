//! The driver's side of issue claims (`--worker-id`): it performs the machine's `ClaimIssue`
//! and `RenewClaim` (when to claim, renew, and what a held or lost claim means are the
//! machine's), releases a claim when the issue is merged or escalated and when the run ends,
//! and keeps the claims of other runners out of the tracker's selection.

use super::context::{hands, Context};
use super::fleet_link;
use super::network::{self, Patient};
use super::request::{ClaimIssue, RenewClaim};
use super::{Answer, Told};
use crate::machine::Event;
use crate::narration as say;
use crate::ports::claims::{Claim, ClaimError, Claimed};
use crate::ports::{ClaimStore, Clock, Io};
use std::time::Duration;

pub(super) use super::keeper::ClaimKeeper;

/// Live claims of runners other than `worker` at `now`.
fn others_at(
    store: &ClaimStore,
    worker: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<Claim>, ClaimError> {
    Ok(store
        .all()?
        .into_iter()
        .filter(|c| c.worker != worker && c.live(now))
        .collect())
}

/// `call` on the claim store with this runner's worker id, off the runtime; `None` for a
/// runner that keeps no claims.
pub(super) async fn on_claims<T: Send + 'static>(
    claims: Option<&ClaimKeeper>,
    io: &Io,
    call: impl FnOnce(&ClaimStore, &str) -> T + Send + 'static,
) -> Option<T> {
    let worker = claims?.worker.clone();
    io.call(move |w| w.claims.as_ref().map(|store| call(store, &worker)))
        .await
}

/// `ClaimIssue`: claims the selected issue. `ClaimTaken` (also when this runner keeps no
/// claims), `ClaimHeld` when another runner holds it or the fleet gives it to another
/// worker (the fleet's coordinator says whether it gives it to this one),
/// `TrackerWriteFailed` when the claim cannot be written, or the network's event.
pub(super) async fn claim_issue(cx: Context<'_>, request: ClaimIssue) -> Answer {
    let ClaimIssue { issue } = request;
    let (calls, clock, fleet, mut claims) = (
        hands(cx.run, cx.shell),
        &*cx.shell.clock,
        cx.fleet,
        cx.claims,
    );
    let what = say::claiming(issue);
    let asked = claims
        .as_ref()
        .map(|k| (k.worker.clone(), k.lease, clock.now()));
    let claim = move |w: &crate::ports::World| match (&w.claims, asked) {
        (Some(store), Some((worker, lease, now))) => {
            store.claim(issue, &worker, lease, now).map(Some)
        }
        _ => Ok(None),
    };
    let (answer, failed) = network::patiently(calls, &what, claim).await;
    let mut told = Told::default();
    told.told(failed);
    let answer = match answer {
        Patient::Done(answer) => answer,
        Patient::GaveUp(event) | Patient::Cancelled(event) => return told.answer(event),
    };
    let io = calls.io;
    let noted = note_claim(
        claims.as_deref_mut(),
        io,
        issue,
        answer,
        &mut told.narration,
    )
    .await;
    let event = match noted {
        Ok(true) => {
            // The fleet's coordinator may give the issue to another of its workers.
            if !fleet_link::gives(fleet, issue) {
                let refused = refused_by_fleet(claims, io, issue).await;
                told.narration.extend(refused);
                Event::ClaimHeld { issue }
            } else {
                Event::ClaimTaken { issue }
            }
        }
        Ok(false) => Event::ClaimHeld { issue },
        Err(detail) => {
            told.say(say::call_failed(&what, &detail));
            told.narrate(say::tracker_write_failed(&what, &detail));
            Event::TrackerWriteFailed
        }
    };
    told.answer(event)
}

/// What the claim store answered to `ClaimIssue` means for this runner: `Ok(true)` taken (or
/// no claims kept), `Ok(false)` held by another runner, `Err` with what failed; a won claim
/// takes over the branch a previous holder pushed.
async fn note_claim(
    claims: Option<&mut ClaimKeeper>,
    io: &Io,
    issue: u32,
    answer: Result<Option<Claimed>, ClaimError>,
    narration: &mut Vec<String>,
) -> Result<bool, String> {
    let Some(keeper) = claims else {
        return Ok(true);
    };
    match answer {
        Ok(None) => Ok(true),
        Ok(Some(Claimed::Won(c))) => {
            keeper.held = Some((issue, c.expires_at));
            narration.push(say::claimed(issue, &keeper.worker, c.expires_at));
            match io.call(move |w| w.git.adopt_pushed_branch(issue)).await {
                Ok(Some(branch)) => narration.push(say::continuing_from_pushed(issue, &branch)),
                Ok(None) => {}
                Err(e) => narration.push(say::cannot_take_over_pushed(issue, &e)),
            }
            Ok(true)
        }
        Ok(Some(Claimed::Held(c))) => {
            narration.push(say::claimed_by_other(issue, &c.worker, c.expires_at));
            keeper.others.insert(issue, c);
            Ok(false)
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The fleet gave `issue` to another worker: its claim is given back and the issue left out
/// of this worker's next selection; what it narrates.
async fn refused_by_fleet(
    mut claims: Option<&mut ClaimKeeper>,
    io: &Io,
    issue: u32,
) -> Vec<String> {
    let said = release(claims.as_deref_mut(), io, issue).await;
    if let Some(keeper) = claims {
        keeper.refused.insert(issue);
    }
    said
}

/// `RenewClaim`: renews the claim on `issue` on the machine's terms: written to last
/// `lease_secs` from now, unless it has more than `fresh_secs` left. `ClaimRenewed`,
/// `ClaimLost` when another runner holds it now, or `TrackerWriteFailed` when the claim
/// cannot be written (the machine goes ahead; the next renewal tells).
pub(super) async fn renew(cx: Context<'_>, request: RenewClaim) -> Answer {
    let RenewClaim {
        issue,
        secs,
        lease_secs,
        fresh_secs,
    } = request;
    let (io, clock) = (&cx.shell.io, &*cx.shell.clock);
    let Some(keeper) = cx.claims else {
        return Answer::of(Event::ClaimRenewed);
    };
    let now = clock.now();
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
            return Answer::of(Event::ClaimRenewed);
        }
    }
    let renewed = on_claims(Some(&*keeper), io, move |store, worker| {
        store.renew(issue, worker, lease, now)
    })
    .await;
    match renewed.unwrap_or(Ok(None)) {
        Ok(None) => {
            let until = chrono::TimeDelta::from_std(lease)
                .ok()
                .and_then(|d| now.checked_add_signed(d))
                .unwrap_or(now);
            keeper.held = Some((issue, until));
            Answer::of(Event::ClaimRenewed)
        }
        Ok(Some(holder)) => {
            keeper.held = None;
            Answer::of(Event::ClaimLost { issue }).narrated(say::claim_lost(issue, &holder.worker))
        }
        Err(e) => {
            Answer::of(Event::TrackerWriteFailed).narrated(say::cannot_renew_claim(issue, &e))
        }
    }
}

/// Gives the claim on `issue` up (merged, escalated, or the run ends); what it narrates.
pub(super) async fn release(claims: Option<&mut ClaimKeeper>, io: &Io, issue: u32) -> Vec<String> {
    let Some(keeper) = claims else {
        return Vec::new();
    };
    if keeper.held.is_some_and(|(n, _)| n == issue) {
        keeper.held = None;
    }
    let released = on_claims(Some(&*keeper), io, move |store, worker| {
        store.release(issue, worker)
    })
    .await;
    match released {
        Some(Err(e)) => vec![say::cannot_release_claim(issue, &e)],
        _ => Vec::new(),
    }
}

/// Refreshes the issues to leave out of a selection: held by other runners right now.
pub(super) async fn claimed_by_others(
    claims: Option<&mut ClaimKeeper>,
    io: &Io,
    clock: &dyn Clock,
) -> Vec<String> {
    let Some(keeper) = claims else {
        return Vec::new();
    };
    let now = clock.now();
    let read = on_claims(Some(&*keeper), io, move |store, worker| {
        others_at(store, worker, now)
    })
    .await;
    match read {
        Some(Ok(claims)) => {
            keeper.others = claims.into_iter().map(|c| (c.issue, c)).collect();
            Vec::new()
        }
        Some(Err(e)) => vec![say::cannot_read_other_claims(&e)],
        None => Vec::new(),
    }
}

/// `#3 by w1 until 12:00:00 UTC, …` for a message.
pub(super) fn describe_others(claims: Option<&ClaimKeeper>) -> String {
    claims
        .iter()
        .flat_map(|k| k.others.values())
        .map(|c| say::claim_of(c.issue, &c.worker, c.expires_at))
        .collect::<Vec<_>>()
        .join(", ")
}
