//! Issue claims on GitHub (docs/scaling.md): the claim is a comment, the label and the
//! assignment show it to people. Comments are read back after every write, and the first
//! live claim in comment order wins, so two runners racing for one issue agree on the winner.

use super::super::{Claim, Claimed};
use super::{GitHub, TrackerError};
use chrono::{DateTime, Utc};
use serde::Deserialize;

/// The label a claimed issue carries while a runner works on it.
const CLAIMED_LABEL: &str = "sdlc-claimed";
const PREFIX: &str = "sdlc-runner claim";

/// A comment as GitHub's REST API lists it.
#[derive(Debug, Deserialize)]
struct GhComment {
    #[serde(default)]
    body: String,
    created_at: DateTime<Utc>,
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
fn holder(issue: u32, comments: &[GhComment]) -> Option<Claim> {
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

impl GitHub {
    /// The issue's comments, oldest first, every page (`GET …/issues/N/comments`).
    fn comments(&self, issue: u32) -> Result<Vec<GhComment>, TrackerError> {
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{issue}/comments");
        self.pages(&endpoint)?
            .into_iter()
            .map(|c| {
                serde_json::from_value(c).map_err(|source| TrackerError::Json {
                    command: self.display(&["api", &endpoint]),
                    source,
                })
            })
            .collect()
    }

    /// Assigns the issue to the token's user (`GET /user` once, then
    /// `POST …/issues/N/assignees`). The assignment is for people and the comments decide, so
    /// only a rate limit (a wait) is an error; any other refusal leaves the issue unassigned.
    fn assign_self(&self, issue: u32) -> Result<(), TrackerError> {
        let login = match self.login.get() {
            Some(login) => login.clone(),
            None => match self.rest("GET", "user", None) {
                Ok(body) => {
                    let login = crate::forge::github::login_of(&body);
                    self.login.get_or_init(|| login).clone()
                }
                Err(e) => return limited_only(e),
            },
        };
        if login.is_empty() {
            return Ok(());
        }
        let endpoint = format!("repos/{{owner}}/{{repo}}/issues/{issue}/assignees");
        match self.rest(
            "POST",
            &endpoint,
            Some(&serde_json::json!({"assignees": [login]})),
        ) {
            Ok(_) => Ok(()),
            Err(e) => limited_only(e),
        }
    }

    fn note(&self, issue: u32, text: String) -> Result<(), TrackerError> {
        self.comment(issue, &text)
    }

    /// Every issue labelled claimed, with its holder (live or expired).
    pub fn claims(&self) -> Result<Vec<Claim>, TrackerError> {
        let endpoint = format!(
            "repos/{{owner}}/{{repo}}/issues?state=open&labels={}",
            crate::call_failure::path_segment(CLAIMED_LABEL)
        );
        let mut claims = Vec::new();
        for issue in self.pages(&endpoint)? {
            // The issues' list holds pull requests too; none is ever claimed.
            let Some(number) = issue
                .get("number")
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|_| issue.get("pull_request").is_none())
            else {
                continue;
            };
            claims.extend(holder(number, &self.comments(number)?));
        }
        Ok(claims)
    }

    /// Claims `issue` for `worker` until `until` with a claim comment, unless another worker's
    /// live claim holds it; `Won` only when the comments read back show this worker as holder.
    pub fn claim(
        &self,
        issue: u32,
        worker: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Claimed, TrackerError> {
        if let Some(h) = holder(issue, &self.comments(issue)?) {
            if h.worker != worker && h.live(now) {
                return Ok(Claimed::Held(h));
            }
        }
        self.add_label(
            issue,
            CLAIMED_LABEL,
            "1D76DB",
            "an sdlc-runner works on this issue (see its claim comments)",
        )?;
        self.assign_self(issue)?;
        self.note(
            issue,
            format!(
                "{PREFIX}: worker={worker} expires={}\n\nThis runner works on the issue until the lease expires or it says released.",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        )?;
        match holder(issue, &self.comments(issue)?) {
            Some(h) if h.worker == worker => Ok(Claimed::Won(h)),
            Some(h) => Ok(Claimed::Held(h)),
            // Our comment is not visible yet: claim again on the next selection.
            None => Err(TrackerError::Command {
                command: format!("claiming issue #{issue}"),
                detail: "the claim comment is not listed after writing it".into(),
                kind: crate::call_failure::CallFailureKind::Other,
            }),
        }
    }

    /// Extends `worker`'s claim to `until`; `Some(holder)` when another worker holds it now.
    pub fn renew(
        &self,
        issue: u32,
        worker: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Option<Claim>, TrackerError> {
        match holder(issue, &self.comments(issue)?) {
            Some(h) if h.worker == worker => {
                self.note(
                    issue,
                    format!(
                        "{PREFIX} renewed: worker={worker} expires={}",
                        until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ),
                )?;
                match holder(issue, &self.comments(issue)?) {
                    Some(h) if h.worker == worker => Ok(None),
                    other => Ok(other),
                }
            }
            Some(h) if h.live(now) => Ok(Some(h)),
            // Nobody holds it (released, or never claimed): claim it again.
            _ => match self.claim(issue, worker, now, until)? {
                Claimed::Won(_) => Ok(None),
                Claimed::Held(h) => Ok(Some(h)),
            },
        }
    }

    /// Gives the claim up if `worker` holds it; nothing otherwise.
    pub fn release(&self, issue: u32, worker: &str) -> Result<(), TrackerError> {
        if holder(issue, &self.comments(issue)?).is_some_and(|h| h.worker == worker) {
            self.note(issue, format!("{PREFIX} released: worker={worker}"))?;
            self.remove_label(issue, CLAIMED_LABEL)?;
        }
        Ok(())
    }
}

/// `e` when it is a rate limit (the machine waits it out), nothing otherwise.
fn limited_only(e: TrackerError) -> Result<(), TrackerError> {
    match &e {
        TrackerError::Command {
            kind: crate::call_failure::CallFailureKind::RateLimited { .. },
            ..
        } => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("a time")
    }

    fn c(secs: i64, body: String) -> GhComment {
        GhComment {
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
