//! Pull requests and CI, from GitHub (through the `gh` CLI, [`github`]), from GitLab (merge
//! requests and pipelines through its REST API, `services::gitlab`) or from the offline
//! `local` forge used by the demo (`local`), where origin itself plays GitHub: a pushed
//! branch is an open PR and a branch merged into `origin/<main>` is a merged one; its CI is an
//! optional command run in a clean worktree of the branch ([`LocalCi`]).

use crate::services::github::forge as github;
use crate::services::local::{ci as local_ci, forge as local};
mod port;

pub use crate::services::gitlab::GitLabForge;
pub use github::{merge_refusal, parse_checks, parse_prs, refused_by_policy};
pub(crate) use local::last_push;
pub use local::record_review;
pub use local_ci::LocalCi;
pub use port::ForgeAdapter;

use crate::git::repo::Repo;
use std::path::PathBuf;

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

/// Where the local forge keeps its reviews: beside the local tracker's issue files
/// (`<tracker.dir>/reviews`), or in the runner's state directory when issues live on GitHub.
pub fn local_reviews_dir(cfg: &crate::config::Config, runner_dir: &std::path::Path) -> PathBuf {
    match cfg.tracker.dir() {
        Some(dir) => dir.join("reviews"),
        None => runner_dir.join("reviews"),
    }
}

#[derive(Debug, Clone)]
/// Where pull requests and CI live (`forge` in the config).
pub enum Forge {
    /// GitHub through the `gh` CLI.
    GitHub {
        /// The `gh` program.
        gh: PathBuf,
        /// The clone `gh` runs in, which tells it the repository.
        repo_dir: PathBuf,
        /// Whether a commit without checks must not be merged.
        require_checks: bool,
        /// Whose reviews and comments count beside the people with write access, and whose
        /// never (`review.trustedAuthors`, `review.ignoreAuthors`).
        authority: crate::authority::Authority,
    },
    /// GitLab merge requests and pipelines through GitLab's REST API.
    GitLab {
        /// The project and its API.
        api: GitLabForge,
        /// Whether a commit without checks must not be merged.
        require_checks: bool,
    },
    /// No remote forge: branches are merged locally, CI is a local command.
    Local {
        /// Whether a commit without checks must not be merged.
        require_checks: bool,
        /// Where the pull-request records live when the runner opens PRs itself (builtin
        /// createPR). `None`: an agent opens them, and a pushed branch stands for its PR.
        pulls: Option<PathBuf>,
        /// The CI command, if one is configured; without it the local forge has no CI.
        ci: Option<LocalCi>,
        /// Where `sdlc-runner review N` stores reviews (`<dir>/<N>.json`, N the issue);
        /// `None`: the PRs have no reviews.
        reviews: Option<PathBuf>,
    },
}

impl Forge {
    /// Whether a commit without checks must not be merged (`forge.requireChecks`).
    pub fn require_checks(&self) -> bool {
        match self {
            Forge::GitHub { require_checks, .. }
            | Forge::GitLab { require_checks, .. }
            | Forge::Local { require_checks, .. } => *require_checks,
        }
    }

    /// The PR whose head is `branch`. With several (a closed one and its reopened successor),
    /// an open PR wins over a merged one over a closed one, then the newest.
    pub fn pr_for_branch(&self, repo: &Repo, branch: &str) -> Result<Option<Pr>, ForgeError> {
        match self {
            Forge::GitHub { gh, repo_dir, .. } => github::pr_for_branch(gh, repo_dir, branch),
            Forge::GitLab { api, .. } => api.pr_for_branch(branch),
            Forge::Local { pulls, .. } => local::pr_for_branch(repo, pulls.as_deref(), branch),
        }
    }

    /// The branch's CI (on GitHub: its head's, asked by the commit origin's head was at the
    /// last fetch, so that a second look at the commit CI already judged is a conditional
    /// read GitHub answers 304; by the branch's name only before any fetch saw it). The local
    /// forge runs its CI command once per commit, if it has one.
    pub fn ci_state(&self, repo: &Repo, branch: &str) -> Result<CiState, ForgeError> {
        match self {
            Forge::Local { ci: Some(ci), .. } => ci.state(repo, branch),
            Forge::Local { ci: None, .. } => Ok(CiState::NoneConfigured),
            Forge::GitHub { gh, repo_dir, .. } => {
                let head = repo.fetched_head(branch).ok().flatten();
                github::ci_state_of(gh, repo_dir, head.as_deref().unwrap_or(branch))
            }
            Forge::GitLab { api, .. } => api.ci_state(branch),
        }
    }

    /// CI of commit `commit` (origin's head of the branch as the caller just read it). The
    /// local forge runs its CI command on that very commit; GitHub reports that commit's
    /// check runs and statuses, whatever the PR's head is by now; GitLab that commit's
    /// pipeline (`branch` tells whose merge request may show another commit's).
    pub fn ci_state_of(
        &self,
        repo: &Repo,
        branch: &str,
        commit: &str,
    ) -> Result<CiState, ForgeError> {
        match self {
            Forge::GitLab { api, .. } => api.ci_state_of(branch, commit),
            Forge::Local { ci: Some(ci), .. } => ci.state_of(repo, commit),
            Forge::Local { ci: None, .. } => Ok(CiState::NoneConfigured),
            Forge::GitHub { gh, repo_dir, .. } => github::ci_state_of(gh, repo_dir, commit),
        }
    }

    /// [`Forge::failing_checks`] for commit `commit`.
    pub fn failing_checks_of(&self, commit: &str) -> Result<String, ForgeError> {
        match self {
            Forge::Local { ci: Some(ci), .. } => ci.failing_of(commit),
            Forge::GitHub { gh, repo_dir, .. } => github::failing_checks_of(gh, repo_dir, commit),
            Forge::GitLab { api, .. } => api.failing_checks_of(commit),
            Forge::Local { ci: None, .. } => Ok(String::new()),
        }
    }

    /// Opens the PR of `branch` (builtin createPR). An open PR of the branch is returned as
    /// it is, so a retried attempt never opens a second one.
    pub fn create_pr(
        &self,
        repo: &Repo,
        branch: &str,
        title: &str,
        body: &str,
    ) -> Result<Pr, ForgeError> {
        if let Some(pr) = self
            .pr_for_branch(repo, branch)?
            .filter(|pr| pr.state != PrState::Closed)
        {
            return Ok(pr);
        }
        match self {
            Forge::GitHub { gh, repo_dir, .. } => {
                github::create_pr(gh, repo_dir, &repo.main, branch, title, body)?;
                self.pr_for_branch(repo, branch)?
                    .ok_or_else(|| ForgeError::Parse {
                        command: format!("gh pr list --head {branch}"),
                        detail: "the PR just created is not listed".to_string(),
                    })
            }
            Forge::GitLab { api, .. } => api.create_pr(branch, &repo.main, title, body),
            Forge::Local { pulls, .. } => local::create_pr(pulls.as_deref(), branch, title, body),
        }
    }

    /// Merges the PR of `branch` and deletes the branch (builtin merge), exactly when its
    /// head is `commit` (the commit CI passed); otherwise the merge is refused and nothing
    /// changes.
    pub fn merge_pr(
        &self,
        repo: &Repo,
        branch: &str,
        commit: &str,
        message: &str,
    ) -> Result<(), ForgeError> {
        match self {
            Forge::GitHub { gh, repo_dir, .. } => {
                github::merge_pr(gh, repo_dir, branch, commit)?;
                // The merge is done whatever becomes of the branch: a branch left on origin
                // is untidy, not a failed merge.
                if let Err(e) = repo.delete_origin_branch(branch) {
                    tracing::warn!(
                        "merged {branch}, but cannot delete it on origin: {e}; delete it by hand (`git push origin --delete {branch}`)"
                    );
                }
                Ok(())
            }
            // GitLab removes the source branch with the merge (`should_remove_source_branch`).
            Forge::GitLab { api, .. } => api.merge_pr(branch, commit, message),
            Forge::Local { ci, .. } => local::merge_pr(repo, ci.as_ref(), branch, commit, message),
        }
    }

    /// What the forge's fields say keeps `branch`'s PR from merging, read before an agent is
    /// asked to merge it: GitHub's `behind` or a rule of the base branch, as the builtin
    /// merge reads them; other forges have nothing to say here (`Ok`).
    pub fn merge_gate(&self, branch: &str) -> Result<(), ForgeError> {
        match self {
            Forge::GitHub { gh, repo_dir, .. } => github::merge_gate(gh, repo_dir, branch),
            Forge::GitLab { .. } | Forge::Local { .. } => Ok(()),
        }
    }

    /// What a person (or the agent repairing it) needs to know about failing CI: each failing
    /// check's name and link, with the end of its log where the forge provides one.
    pub fn failing_checks(&self, repo: &Repo, branch: &str) -> Result<String, ForgeError> {
        match self {
            Forge::GitHub { gh, repo_dir, .. } => github::failing_checks_of(gh, repo_dir, branch),
            Forge::GitLab { api, .. } => api.failing_checks(branch),
            Forge::Local { ci: Some(ci), .. } => ci.failing(repo, branch),
            Forge::Local { ci: None, .. } => Ok(String::new()),
        }
    }

    /// The review decision of `branch`'s open PR and the reviews and comments since `since`
    /// (RFC 3339; `None`: all of them). Where a forge's approvals name the commit they
    /// approved, only an approval of `commit` (the one CI verified) counts.
    pub fn review_state(
        &self,
        branch: &str,
        commit: Option<&str>,
        since: Option<&str>,
    ) -> Result<ReviewState, ForgeError> {
        match self {
            Forge::GitHub {
                gh,
                repo_dir,
                authority,
                ..
            } => github::review_state(gh, repo_dir, authority, branch, commit, since),
            Forge::Local { reviews, .. } => {
                let all = match (reviews, crate::git::repo::leading_issue(branch)) {
                    (Some(dir), Some(issue)) => local::reviews_of(dir, issue)?,
                    _ => Vec::new(),
                };
                Ok(ReviewState::of(all, since))
            }
            Forge::GitLab { api, .. } => api.review_state(branch, commit, since),
        }
    }

    /// Whether CI lets the branch merge: "none configured" does unless `requireChecks` is set.
    pub fn ci_ok(&self, state: CiState) -> bool {
        match state {
            CiState::Passed => true,
            CiState::NoneConfigured => !self.require_checks(),
            CiState::Pending | CiState::Failed => false,
        }
    }
}
