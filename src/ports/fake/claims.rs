//! A claim store holding the leases as data, under the production store's rules: a live
//! lease holds against another worker, an expired one is taken over, the holder's own claim
//! is renewed (its first claim's time kept), only the holder releases, and one merge lease.

use crate::ports::claims::{Claim, ClaimError, ClaimPort, Claimed};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The fake claim port; clones share one store, as the runners of a tracker do.
#[derive(Debug, Clone, Default)]
pub struct FakeClaims {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    issues: BTreeMap<u32, Claim>,
    merge: Option<Claim>,
    /// The next this many claims fail as an unwritable store.
    failing_claims: u32,
}

impl FakeClaims {
    /// An empty store.
    pub fn new() -> FakeClaims {
        FakeClaims::default()
    }

    /// Every claim on record, for a test to read.
    pub fn claims(&self) -> Vec<Claim> {
        self.lock().issues.values().cloned().collect()
    }

    /// Puts `claim` on record as it is (another runner's, live or expired), replacing any
    /// claim on its issue.
    pub fn plant(&self, claim: Claim) {
        self.lock().issues.insert(claim.issue, claim);
    }

    /// Puts `lease` on record as the merge lease.
    pub fn plant_merge(&self, lease: Claim) {
        self.lock().merge = Some(lease);
    }

    /// The next `times` claims fail as a store that cannot be written
    /// (`ClaimError::Io`, permission denied).
    pub fn fail_claims(&self, times: u32) {
        self.lock().failing_claims = times;
    }

    /// `issue` for `worker` under the claim rules: a claim or a renewal.
    fn hold(&self, issue: u32, worker: &str, duration: Duration, now: DateTime<Utc>) -> Claimed {
        let mut state = self.lock();
        let mut slot = state.issues.remove(&issue);
        let claimed = take(&mut slot, lease(issue, worker, duration, now), now);
        state.issues.extend(slot.map(|c| (issue, c)));
        claimed
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the store leaves data still worth reading.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `now + lease`, the latest time there is when that overflows.
fn expiry(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    chrono::TimeDelta::from_std(lease)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// The lease in `slot` for `mine.worker`: kept when it is theirs already, taken when free or
/// expired, else `Held` by its live holder.
fn take(slot: &mut Option<Claim>, mine: Claim, now: DateTime<Utc>) -> Claimed {
    match slot {
        Some(c) if c.worker == mine.worker => {
            let again = Claim {
                claimed_at: c.claimed_at,
                ..mine
            };
            *slot = Some(again.clone());
            Claimed::Won(again)
        }
        Some(c) if c.live(now) => Claimed::Held(c.clone()),
        _ => {
            *slot = Some(mine.clone());
            Claimed::Won(mine)
        }
    }
}

fn lease(issue: u32, worker: &str, lease: Duration, now: DateTime<Utc>) -> Claim {
    Claim {
        issue,
        worker: worker.to_string(),
        claimed_at: now,
        expires_at: expiry(now, lease),
    }
}

impl ClaimPort for FakeClaims {
    fn all(&self) -> Result<Vec<Claim>, ClaimError> {
        Ok(self.claims())
    }

    fn claim(
        &self,
        issue: u32,
        worker: &str,
        duration: Duration,
        now: DateTime<Utc>,
    ) -> Result<Claimed, ClaimError> {
        if super::world::due(&mut self.lock().failing_claims) {
            return Err(ClaimError::Io {
                dir: PathBuf::from("fake-claims"),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            });
        }
        Ok(self.hold(issue, worker, duration, now))
    }

    fn renew(
        &self,
        issue: u32,
        worker: &str,
        duration: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claim>, ClaimError> {
        Ok(match self.hold(issue, worker, duration, now) {
            Claimed::Won(_) => None,
            Claimed::Held(holder) => Some(holder),
        })
    }

    fn lease_merge(
        &self,
        issue: u32,
        worker: &str,
        duration: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>, ClaimError> {
        let mut state = self.lock();
        Ok(Some(take(
            &mut state.merge,
            lease(issue, worker, duration, now),
            now,
        )))
    }

    fn merge_lease(&self) -> Result<Option<Claim>, ClaimError> {
        Ok(self.lock().merge.clone())
    }

    fn merge_lease_file(&self) -> Option<PathBuf> {
        None
    }

    fn release_merge(&self, worker: &str) -> Result<(), ClaimError> {
        let mut state = self.lock();
        if state.merge.as_ref().is_some_and(|c| c.worker == worker) {
            state.merge = None;
        }
        Ok(())
    }

    fn release(&self, issue: u32, worker: &str) -> Result<(), ClaimError> {
        let mut state = self.lock();
        if state.issues.get(&issue).is_some_and(|c| c.worker == worker) {
            state.issues.remove(&issue);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("a time")
    }

    const LEASE: Duration = Duration::from_secs(60);

    /// The rules every claim store keeps, asked of `store` through the port alone.
    fn keeps_the_claim_rules(store: &dyn ClaimPort) {
        let won = |c: Result<Claimed, ClaimError>| match c {
            Ok(Claimed::Won(c)) => c,
            other => panic!("not won: {other:?}"),
        };
        let held = |c: Result<Claimed, ClaimError>| match c {
            Ok(Claimed::Held(c)) => c,
            other => panic!("not held: {other:?}"),
        };
        assert_eq!(won(store.claim(1, "a", LEASE, at(0))).expires_at, at(60));
        let holder = held(store.claim(1, "b", LEASE, at(30)));
        assert_eq!((holder.worker.as_str(), holder.expires_at), ("a", at(60)));
        // The holder's renewal moves the expiry and keeps when it first claimed.
        assert_eq!(store.renew(1, "a", LEASE, at(50)).expect("renew"), None);
        assert_eq!(held(store.claim(1, "b", LEASE, at(90))).expires_at, at(110));
        let again = won(store.claim(1, "a", LEASE, at(60)));
        assert_eq!((again.claimed_at, again.expires_at), (at(0), at(120)));
        // Past its lease another worker takes the issue over, and the first one's renewal
        // says who holds it now.
        assert_eq!(won(store.claim(1, "b", LEASE, at(121))).worker, "b");
        let lost = store.renew(1, "a", LEASE, at(122)).expect("renew");
        assert_eq!(lost.map(|c| c.worker), Some("b".to_string()));
        // Only the holder releases.
        store.release(1, "a").expect("release");
        assert_eq!(held(store.claim(1, "a", LEASE, at(130))).worker, "b");
        store.release(1, "b").expect("release");
        assert_eq!(won(store.claim(1, "a", LEASE, at(131))).worker, "a");
        assert_eq!(
            store
                .all()
                .expect("all")
                .iter()
                .map(|c| c.issue)
                .collect::<Vec<_>>(),
            vec![1]
        );
        // One merge lease, held by one worker at a time.
        assert!(matches!(
            store.lease_merge(2, "a", LEASE, at(200)),
            Ok(Some(Claimed::Won(_)))
        ));
        assert!(matches!(
            store.lease_merge(3, "b", LEASE, at(201)),
            Ok(Some(Claimed::Held(c))) if c.issue == 2
        ));
        store.release_merge("b").expect("release");
        assert_eq!(
            store.merge_lease().expect("lease").map(|c| c.issue),
            Some(2)
        );
        store.release_merge("a").expect("release");
        assert_eq!(store.merge_lease().expect("lease"), None);
        assert!(matches!(
            store.lease_merge(3, "b", LEASE, at(202)),
            Ok(Some(Claimed::Won(_)))
        ));
    }

    #[test]
    fn the_fake_keeps_the_claim_rules() {
        keeps_the_claim_rules(&FakeClaims::new());
    }

    #[test]
    fn the_local_store_keeps_the_same_rules() {
        let tmp = tempfile::tempdir().expect("tempdir");
        keeps_the_claim_rules(&crate::services::local::LocalClaims::new(tmp.path()));
    }

    #[test]
    fn clones_share_one_store_as_the_runners_of_a_tracker_do() {
        let a = FakeClaims::new();
        let b = a.clone();
        assert!(matches!(a.claim(7, "a", LEASE, at(0)), Ok(Claimed::Won(_))));
        assert!(matches!(
            b.claim(7, "b", LEASE, at(1)),
            Ok(Claimed::Held(_))
        ));
        assert_eq!(b.claims().len(), 1);
    }
}
