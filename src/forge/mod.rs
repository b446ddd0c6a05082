//! What every forge shares, whichever service holds the pull requests and CI (each implements
//! the forge port in its folder under `src/services/`): the review decision over the reviews
//! a forge lists ([`ReviewState`]), and when a branch was last pushed.

use crate::git::repo::Repo;

/// What the reviews of an open PR decide: the machine's own type, so the answer to a look
/// carries it as the forge said it.
pub use crate::machine::ReviewDecision;
pub use crate::ports::forge::{
    CiState, Feedback, ForgeError, Pr, PrState, ReviewKind, ReviewState,
};

impl ReviewState {
    /// The decision over `reviews` (every review, oldest first): each author's latest
    /// approval or request for changes counts.
    pub fn decide(reviews: &[Feedback]) -> ReviewDecision {
        ReviewState::verdicts(reviews).0
    }

    /// [`ReviewState::decide`], with who holds the merge and who approved.
    fn verdicts(reviews: &[Feedback]) -> (ReviewDecision, Vec<String>, Vec<String>) {
        let mut latest: std::collections::BTreeMap<&str, ReviewKind> = Default::default();
        for r in reviews {
            if r.kind != ReviewKind::Comment {
                latest.insert(&r.author, r.kind);
            }
        }
        let requested_by: Vec<String> = latest
            .iter()
            .filter(|(_, k)| **k == ReviewKind::RequestChanges)
            .map(|(who, _)| who.to_string())
            .collect();
        let approved_by: Vec<String> = latest
            .iter()
            .filter(|(_, k)| **k == ReviewKind::Approve)
            .map(|(who, _)| who.to_string())
            .collect();
        let decision = if !requested_by.is_empty() {
            ReviewDecision::ChangesRequested
        } else if !approved_by.is_empty() {
            ReviewDecision::Approved
        } else {
            ReviewDecision::None
        };
        (decision, requested_by, approved_by)
    }

    /// The decision once the requests for changes and the approvals of `ignored` authors
    /// (`review.ignoreAuthors` and the runner's own account) are left out: a listed bot holds
    /// no merge and permits none. A request the forge names nobody for still holds.
    pub fn decision_without(&self, ignored: &[String]) -> ReviewDecision {
        let only_ignored = !self.requested_by.is_empty()
            && self.requested_by.iter().all(|who| ignored.contains(who));
        let approved = self.approved
            && (self.approved_by.is_empty()
                || self.approved_by.iter().any(|who| !ignored.contains(who)));
        match self.decision {
            ReviewDecision::ChangesRequested if only_ignored && approved => {
                ReviewDecision::Approved
            }
            ReviewDecision::ChangesRequested if only_ignored => ReviewDecision::None,
            ReviewDecision::Approved if !approved => ReviewDecision::None,
            other => other,
        }
    }

    /// The state of `reviews` (every review, oldest first), keeping as feedback those written
    /// at or after `since` (RFC 3339; `None`: all). A time that cannot be read counts as
    /// recent: feedback is better given twice than lost (the machine drops ids it gave).
    pub fn of(reviews: Vec<Feedback>, since: Option<&str>) -> ReviewState {
        let (decision, requested_by, approved_by) = ReviewState::verdicts(&reviews);
        let since = since.and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok());
        let feedback = reviews
            .into_iter()
            .filter(
                |r| match (since, chrono::DateTime::parse_from_rfc3339(&r.time)) {
                    (Some(since), Ok(t)) => t >= since,
                    _ => true,
                },
            )
            .collect();
        ReviewState {
            decision,
            feedback,
            requested_by,
            approved: !approved_by.is_empty(),
            approved_by,
            left_out: Vec::new(),
        }
    }
}

/// When `branch` was last pushed, as near as origin tells it: its head's committer time
/// (RFC 3339). Feedback older than that was written before the work it asks about, so a
/// later session does not hand it to the agent again. `None` when origin has no such branch.
pub(crate) fn last_push(repo: &Repo, branch: &str) -> Option<String> {
    let remote = format!("refs/remotes/origin/{branch}");
    let out = repo
        .git_checked(&["log", "-1", "--format=%cI", &remote, "--"])
        .ok()?;
    let time = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!time.is_empty()).then_some(time)
}
