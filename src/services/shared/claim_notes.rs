//! Issue claims written as comments (GitHub) or notes (GitLab, Linear): a claim, its renewals
//! and its release are comments of the runner's, read back in the order the tracker wrote
//! them; the first live claim wins, so two runners racing for one issue agree on the winner
//! (docs/scaling.md).

use crate::ports::claims::{Claim, ClaimError, Claimed};
use crate::ports::tracker::TrackerError;
use crate::tracker::claims::{claim_written, expiry, renewal_written};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use std::time::Duration;

/// The label a claimed issue carries while a runner works on it.
pub(crate) const CLAIMED_LABEL: &str = "sdlc-claimed";
pub(crate) const PREFIX: &str = "sdlc-runner claim";

/// A comment or note as the trackers list them: its text and when it was written.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ClaimNote {
    #[serde(default)]
    pub body: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, PartialEq, Eq)]
enum Note {
    Claim {
        worker: String,
        expires: DateTime<Utc>,
    },
    Renewed {
        worker: String,
        expires: DateTime<Utc>,
    },
    Released {
        worker: String,
    },
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

fn parse(body: &str) -> Option<Note> {
    let line = body.lines().find(|l| l.starts_with(PREFIX))?;
    let rest = line.strip_prefix(PREFIX)?;
    let worker = field(rest, "worker")?.to_string();
    let expires = || {
        field(rest, "expires")
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    if rest.starts_with(" released:") {
        Some(Note::Released { worker })
    } else if rest.starts_with(" renewed:") {
        Some(Note::Renewed {
            worker,
            expires: expires()?,
        })
    } else if rest.starts_with(':') {
        Some(Note::Claim {
            worker,
            expires: expires()?,
        })
    } else {
        None
    }
}

/// Who holds `issue` after these comments, in order: a claim counts when nobody holds the
/// issue, or the holder's lease had run out when the claim was written.
pub(crate) fn holder(issue: u32, comments: &[ClaimNote]) -> Option<Claim> {
    let mut holder: Option<Claim> = None;
    for c in comments {
        match parse(&c.body) {
            Some(Note::Claim { worker, expires }) => match &mut holder {
                Some(h) if h.worker == worker => h.expires_at = expires,
                Some(h) if h.expires_at > c.created_at => {}
                _ => {
                    holder = Some(Claim {
                        issue,
                        worker,
                        claimed_at: c.created_at,
                        expires_at: expires,
                    })
                }
            },
            Some(Note::Renewed { worker, expires }) => {
                if let Some(h) = holder.as_mut().filter(|h| h.worker == worker) {
                    h.expires_at = expires;
                }
            }
            Some(Note::Released { worker })
                if holder.as_ref().is_some_and(|h| h.worker == worker) =>
            {
                holder = None;
            }
            Some(Note::Released { .. }) => {}
            None => {}
        }
    }
    holder
}

/// A tracker that keeps claims as notes on its issues. The tracker supplies the reads and
/// writes; the rule (who holds an issue, when a claim may be written, what a renewal and a
/// release say) is the same for every tracker and lives here.
pub(crate) trait ClaimBoard {
    /// The issue's notes, oldest first.
    fn notes(&self, issue: u32) -> Result<Vec<ClaimNote>, TrackerError>;
    /// Writes a note on the issue.
    fn write_note(&self, issue: u32, text: &str) -> Result<(), TrackerError>;
    /// Shows people that a runner works on the issue (the claimed label, …).
    fn mark(&self, issue: u32) -> Result<(), TrackerError>;
    /// Takes that mark away.
    fn unmark(&self, issue: u32) -> Result<(), TrackerError>;
    /// The open issues that carry the mark.
    fn marked(&self) -> Result<Vec<u32>, TrackerError>;

    /// Every marked issue with its holder (live or expired).
    fn board_claims(&self) -> Result<Vec<Claim>, TrackerError> {
        let mut claims = Vec::new();
        for issue in self.marked()? {
            claims.extend(holder(issue, &self.notes(issue)?));
        }
        Ok(claims)
    }

    /// Claims `issue` for `worker` until `until` with a claim note, unless another worker's
    /// live claim holds it; `Won` only when the notes read back show this worker as holder.
    fn board_claim(
        &self,
        issue: u32,
        worker: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Claimed, TrackerError> {
        if let Some(h) = holder(issue, &self.notes(issue)?) {
            if h.worker != worker && h.live(now) {
                return Ok(Claimed::Held(h));
            }
        }
        self.mark(issue)?;
        self.write_note(
            issue,
            &format!(
                "{PREFIX}: worker={worker} expires={}\n\nThis runner works on the issue until the lease expires or it says released.",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        )?;
        match holder(issue, &self.notes(issue)?) {
            Some(h) if h.worker == worker => Ok(Claimed::Won(h)),
            Some(h) => Ok(Claimed::Held(h)),
            // Our note is not visible yet: claim again on the next selection.
            None => Err(TrackerError::Command {
                command: format!("claiming issue #{issue}"),
                detail: "the claim note is not listed after writing it".into(),
                kind: crate::call_failure::CallFailureKind::Other,
            }),
        }
    }

    /// Extends `worker`'s claim to `until`; `Some(holder)` when another worker holds it now.
    fn board_renew(
        &self,
        issue: u32,
        worker: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Claim>, TrackerError> {
        match holder(issue, &self.notes(issue)?) {
            Some(h) if h.worker == worker => {
                self.write_note(
                    issue,
                    &format!(
                        "{PREFIX} renewed: worker={worker} expires={}",
                        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ),
                )?;
                match holder(issue, &self.notes(issue)?) {
                    Some(h) if h.worker == worker => Ok(None),
                    other => Ok(other),
                }
            }
            Some(h) if h.live(now) => Ok(Some(h)),
            // Nobody holds it (released, or never claimed): claim it again.
            _ => match self.board_claim(issue, worker, now, until)? {
                Claimed::Won(_) => Ok(None),
                Claimed::Held(h) => Ok(Some(h)),
            },
        }
    }

    /// Gives the claim up if `worker` holds it; nothing otherwise.
    fn board_release(&self, issue: u32, worker: &str) -> Result<(), TrackerError> {
        if holder(issue, &self.notes(issue)?).is_some_and(|h| h.worker == worker) {
            self.write_note(issue, &format!("{PREFIX} released: worker={worker}"))?;
            self.unmark(issue)?;
        }
        Ok(())
    }
}

/// The claim store of a tracker that keeps claims as notes on its issues. It keeps no merge
/// lease: the forge merges a pull request atomically on its side, so no push can race there.
#[derive(Debug)]
pub(crate) struct NoteClaims<B>(pub B);

impl<B: ClaimBoard + Send + Sync> crate::ports::ClaimPort for NoteClaims<B> {
    fn all(&self) -> Result<Vec<Claim>, ClaimError> {
        Ok(self.0.board_claims()?)
    }
    fn claim(
        &self,
        issue: u32,
        worker: &str,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<Claimed, ClaimError> {
        Ok(claim_written(self.0.board_claim(
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
        Ok(renewal_written(self.0.board_renew(
            issue,
            worker,
            now,
            expiry(now, lease),
        )?))
    }
    fn lease_merge(
        &self,
        _issue: u32,
        _worker: &str,
        _lease: Duration,
        _now: DateTime<Utc>,
    ) -> Result<Option<Claimed>, ClaimError> {
        Ok(None)
    }
    fn merge_lease(&self) -> Result<Option<Claim>, ClaimError> {
        Ok(None)
    }
    fn merge_lease_file(&self) -> Option<std::path::PathBuf> {
        None
    }
    fn release_merge(&self, _worker: &str) -> Result<(), ClaimError> {
        Ok(())
    }
    fn release(&self, issue: u32, worker: &str) -> Result<(), ClaimError> {
        Ok(self.0.board_release(issue, worker)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("a time")
    }

    fn c(secs: i64, body: String) -> ClaimNote {
        ClaimNote {
            body,
            created_at: at(secs),
        }
    }

    fn claim(w: &str, until: i64) -> String {
        format!(
            "{PREFIX}: worker={w} expires={}\n\ntext",
            at(until).to_rfc3339()
        )
    }

    #[test]
    fn the_first_live_claim_wins_and_an_expired_one_can_be_taken_over() {
        // a and b race: a's comment is first, so a holds the issue for both readers.
        let race = [c(0, claim("a", 60)), c(1, claim("b", 61))];
        assert_eq!(holder(7, &race).map(|h| h.worker), Some("a".into()));
        // a renews; b's later claim still loses while a's lease runs.
        let renewed = [
            c(0, claim("a", 60)),
            c(
                50,
                format!(
                    "{PREFIX} renewed: worker=a expires={}",
                    at(110).to_rfc3339()
                ),
            ),
            c(100, claim("b", 160)),
        ];
        let h = holder(7, &renewed).expect("held");
        assert_eq!((h.worker.as_str(), h.expires_at), ("a", at(110)));
        // a stops renewing: b's claim after the expiry takes over; a's late renewal is void.
        let takeover = [
            c(0, claim("a", 60)),
            c(61, claim("b", 121)),
            c(
                62,
                format!(
                    "{PREFIX} renewed: worker=a expires={}",
                    at(122).to_rfc3339()
                ),
            ),
        ];
        let h = holder(7, &takeover).expect("held");
        assert_eq!((h.worker.as_str(), h.expires_at), ("b", at(121)));
        // Released: nobody holds it; other comments are ignored.
        let released = [
            c(0, claim("a", 60)),
            c(1, "LGTM".into()),
            c(2, format!("{PREFIX} released: worker=a")),
        ];
        assert_eq!(holder(7, &released), None);
    }
}
