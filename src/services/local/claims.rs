//! The local tracker's claims: one file per claimed issue, `<tracker dir>/.claims/<N>.json`,
//! created atomically and exclusively; every read-modify-write holds an exclusive `flock` on
//! `<tracker dir>/.claims/.lock`, so a takeover can never remove a claim that was renewed or
//! made a moment earlier (the rules of claims: `tracker/claims.rs`).
//!
//! The **merge lease** makes merges one at a time across runners: `<tracker dir>/.claims/
//! merge.json`, taken and released like a claim (same lock, same expiry, `issue` says what is
//! being merged). Only this store keeps one: a forge merges a pull request atomically on its
//! side, so no push can race there (docs/scaling.md).

use crate::ports::claims::{Claim, ClaimError, Claimed};
use crate::tracker::claims::{claim_written, expiry, renewal_written};
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The claims and the merge lease of the local tracker, as files beside its issues.
#[derive(Debug, Clone)]
pub struct LocalClaims {
    /// `<tracker dir>/.claims`.
    dir: PathBuf,
}

impl LocalClaims {
    /// The local tracker's store: `<tracker dir>/.claims`.
    pub fn new(tracker_dir: &Path) -> LocalClaims {
        LocalClaims {
            dir: tracker_dir.join(".claims"),
        }
    }
}

impl crate::ports::ClaimPort for LocalClaims {
    fn all(&self) -> Result<Vec<Claim>, ClaimError> {
        local::all(&self.dir)
    }

    fn claim(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Claimed, ClaimError> {
        Ok(claim_written(local::claim(
            &self.dir,
            issue,
            worker,
            now,
            expiry(now, lease),
        )?))
    }

    fn renew(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claim>, ClaimError> {
        Ok(renewal_written(local::renew(
            &self.dir,
            issue,
            worker,
            now,
            expiry(now, lease),
        )?))
    }

    fn lease_merge(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Option<Claimed>, ClaimError> {
        let mine = Claim {
            issue,
            worker: worker.to_string(),
            claimed_at: now,
            expires_at: expiry(now, lease),
        };
        let dir = &self.dir;
        local::take(dir, &dir.join(local::MERGE_LEASE), mine, now).map(Some)
    }

    fn merge_lease(&self) -> Result<Option<Claim>, ClaimError> {
        local::read_at(&self.dir, self.dir.join(local::MERGE_LEASE))
    }

    fn merge_lease_file(&self) -> Option<PathBuf> {
        Some(self.dir.join(local::MERGE_LEASE))
    }

    fn release_merge(&self, worker: &str) -> Result<(), ClaimError> {
        local::give_up(&self.dir, &self.dir.join(local::MERGE_LEASE), worker)
    }

    fn release(&self, issue: u32, worker: &str) -> Result<(), ClaimError> {
        local::release(&self.dir, issue, worker)
    }
}

mod local {
    use super::*;

    fn io(dir: &Path) -> impl FnOnce(std::io::Error) -> ClaimError + '_ {
        move |source| ClaimError::Io {
            dir: dir.to_path_buf(),
            source,
        }
    }

    /// The store's lock, held until dropped.
    struct Locked {
        _file: std::fs::File,
    }

    fn lock(dir: &Path) -> Result<Locked, ClaimError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))
            .map_err(io(dir))?;
        // Blocks until the lock is ours: claim updates are short, and every runner waits its turn.
        fs4::FileExt::lock(&file).map_err(io(dir))?;
        Ok(Locked { _file: file })
    }

    /// The merge lease's file; not `<N>.json`, so no issue claim.
    pub const MERGE_LEASE: &str = "merge.json";

    fn path(dir: &Path, issue: u32) -> PathBuf {
        dir.join(format!("{issue}.json"))
    }

    fn read(dir: &Path, issue: u32) -> Result<Option<Claim>, ClaimError> {
        read_at(dir, path(dir, issue))
    }

    pub fn read_at(dir: &Path, path: PathBuf) -> Result<Option<Claim>, ClaimError> {
        match crate::safe_fs::read_no_follow(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| ClaimError::Corrupt {
                        path,
                        detail: e.to_string(),
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(dir)(e)),
        }
    }

    fn write_at(dir: &Path, path: &Path, claim: &Claim, fresh: bool) -> Result<(), ClaimError> {
        let text = serde_json::to_vec(claim).map_err(|e| io(dir)(std::io::Error::other(e)))?;
        if fresh {
            crate::safe_fs::write_new(path, &text).map_err(io(dir))
        } else {
            crate::safe_fs::write_atomic(path, &text).map_err(io(dir))
        }
    }

    pub fn all(dir: &Path) -> Result<Vec<Claim>, ClaimError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(issue) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(claim) = read(dir, issue)? {
                out.push(claim);
            }
        }
        out.sort_by_key(|c| c.issue);
        Ok(out)
    }

    pub fn claim(
        dir: &Path,
        issue: u32,
        worker: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Claimed, ClaimError> {
        let mine = Claim {
            issue,
            worker: worker.to_string(),
            claimed_at: now,
            expires_at: until,
        };
        take(dir, &path(dir, issue), mine, now)
    }

    /// The lease at `path` for `mine.worker`: kept (renewed) when it is theirs already, taken
    /// when free or expired, else `Held` by its live holder. Under the store's lock.
    pub fn take(
        dir: &Path,
        path: &Path,
        mine: Claim,
        now: DateTime<Utc>,
    ) -> Result<Claimed, ClaimError> {
        let _held = lock(dir)?;
        match read_at(dir, path.to_path_buf())? {
            Some(c) if c.worker == mine.worker => {
                let again = Claim {
                    claimed_at: c.claimed_at,
                    ..mine
                };
                write_at(dir, path, &again, false)?;
                Ok(Claimed::Won(again))
            }
            Some(c) if c.live(now) => Ok(Claimed::Held(c)),
            Some(_expired) => {
                std::fs::remove_file(path).map_err(io(dir))?;
                write_at(dir, path, &mine, true)?;
                Ok(Claimed::Won(mine))
            }
            None => {
                write_at(dir, path, &mine, true)?;
                Ok(Claimed::Won(mine))
            }
        }
    }

    pub fn renew(
        dir: &Path,
        issue: u32,
        worker: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Claim>, ClaimError> {
        match claim(dir, issue, worker, now, until)? {
            Claimed::Won(_) => Ok(None),
            Claimed::Held(holder) => Ok(Some(holder)),
        }
    }

    pub fn release(dir: &Path, issue: u32, worker: &str) -> Result<(), ClaimError> {
        give_up(dir, &path(dir, issue), worker)
    }

    /// Removes the lease at `path` when `worker` holds it.
    pub fn give_up(dir: &Path, path: &Path, worker: &str) -> Result<(), ClaimError> {
        let _held = lock(dir)?;
        match read_at(dir, path.to_path_buf())? {
            Some(c) if c.worker == worker => std::fs::remove_file(path).map_err(io(dir)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::ClaimPort;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("a time")
    }

    const LEASE: Duration = Duration::from_secs(60);

    #[test]
    fn a_live_claim_holds_an_expired_one_is_taken_over_and_only_the_holder_releases() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = LocalClaims::new(tmp.path());
        assert!(matches!(
            store.claim(1, "a", LEASE, at(0)),
            Ok(Claimed::Won(_))
        ));
        match store.claim(1, "b", LEASE, at(30)) {
            Ok(Claimed::Held(c)) => assert_eq!((c.worker.as_str(), c.expires_at), ("a", at(60))),
            other => panic!("{other:?}"),
        }
        // Renewal moves the expiry; b still loses at 90.
        assert_eq!(store.renew(1, "a", LEASE, at(50)).expect("renew"), None);
        assert!(matches!(
            store.claim(1, "b", LEASE, at(90)),
            Ok(Claimed::Held(_))
        ));
        // a stops renewing: at 111 its lease is over and b takes the issue.
        match store.claim(1, "b", LEASE, at(111)) {
            Ok(Claimed::Won(c)) => assert_eq!(c.worker, "b"),
            other => panic!("{other:?}"),
        }
        // a wakes up: its renewal tells it who holds the issue now.
        let holder = store.renew(1, "a", LEASE, at(112)).expect("renew");
        assert_eq!(holder.map(|c| c.worker), Some("b".to_string()));
        store.release(1, "a").expect("release");
        assert_eq!(
            store.all().expect("all").len(),
            1,
            "a cannot release b's claim"
        );
        store.release(1, "b").expect("release");
        assert!(store.all().expect("all").is_empty());
    }

    #[test]
    fn racing_claims_have_exactly_one_winner() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let winners: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|w| {
                    let store = LocalClaims::new(&dir);
                    s.spawn(move || {
                        matches!(
                            store.claim(7, &format!("w{w}"), LEASE, at(0)),
                            Ok(Claimed::Won(_))
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        assert_eq!(winners.iter().filter(|w| **w).count(), 1, "{winners:?}");
    }

    #[test]
    fn the_merge_lease_has_one_holder_expires_and_is_no_issue_claim() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = LocalClaims::new(tmp.path());
        let won = |r: Result<Option<Claimed>, ClaimError>| match r {
            Ok(Some(Claimed::Won(c))) => Some(c.worker),
            Ok(Some(Claimed::Held(_))) => None,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            won(store.lease_merge(3, "a", LEASE, at(0))),
            Some("a".into())
        );
        assert_eq!(won(store.lease_merge(4, "b", LEASE, at(10))), None);
        assert!(store.all().expect("all").is_empty(), "not an issue claim");
        store.release_merge("b").expect("release");
        assert_eq!(
            won(store.lease_merge(4, "b", LEASE, at(20))),
            None,
            "b cannot release a's"
        );
        store.release_merge("a").expect("release");
        assert_eq!(
            won(store.lease_merge(4, "b", LEASE, at(30))),
            Some("b".into())
        );
        // b dies holding it: after the lease, c takes it over.
        assert_eq!(won(store.lease_merge(5, "c", LEASE, at(89))), None);
        assert_eq!(
            won(store.lease_merge(5, "c", LEASE, at(91))),
            Some("c".into())
        );
        let racers: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|w| {
                    let store = LocalClaims::new(tmp.path());
                    s.spawn(move || {
                        matches!(
                            store.lease_merge(9, &format!("r{w}"), LEASE, at(500)),
                            Ok(Some(Claimed::Won(_)))
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        assert_eq!(racers.iter().filter(|w| **w).count(), 1, "{racers:?}");
    }
}
