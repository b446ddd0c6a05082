//! GitHub as the runner's forge and tracker: [`GitHubForge`] implements the forge port on the
//! `gh` calls of [`super::forge`], and the tracker [`GitHub`] the tracker port (its claims, as
//! comments, are `tracker/claims.rs`).

use super::forge as github;
use super::tracker::GitHub;
use crate::authority::Authority;
use crate::forge::{last_push, CiState, ForgeError, Pr, ReviewState};
use crate::git::repo::Repo;
use crate::ports::forge::QueueState;
use crate::ports::tracker::{Issue, IssueText, Selection, TrackerError};
use crate::ports::{ForgePort, TrackerPort};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// Pull requests and CI on GitHub, through `gh` run in the project's clone.
#[derive(Debug, Clone)]
pub struct GitHubForge {
    /// The `gh` program.
    pub gh: PathBuf,
    /// The clone `gh` runs in, which tells it the repository.
    pub repo_dir: PathBuf,
    /// Whether a commit without checks must not be merged.
    pub require_checks: bool,
    /// Whose reviews and comments count beside the people with write access, and whose
    /// never (`review.trustedAuthors`, `review.ignoreAuthors`).
    pub authority: Authority,
    /// The project's repository: the base branch, the heads origin had at the last fetch, the
    /// branch deleted after a merge.
    pub repo: Repo,
}

impl ForgePort for GitHubForge {
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError> {
        github::pr_for_branch(&self.gh, &self.repo_dir, branch)
    }
    /// Asked by the commit origin's head was at the last fetch, so that a second look at the
    /// commit CI already judged is a conditional read GitHub answers 304; by the branch's
    /// name only before any fetch saw it.
    fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError> {
        let head = self.repo.fetched_head(branch).ok().flatten();
        github::ci_state_of(&self.gh, &self.repo_dir, head.as_deref().unwrap_or(branch))
    }
    /// GitHub is asked to open it first and tells when one exists (`github::create_pr`), so
    /// no read of the branch's PRs is spent before.
    fn create_pr(&self, branch: &str, title: &str, body: &str) -> Result<Pr, ForgeError> {
        github::create_pr(
            &self.gh,
            &self.repo_dir,
            &self.repo.main,
            branch,
            title,
            body,
        )
    }
    fn ci_state_of(&self, _branch: &str, commit: &str) -> Result<CiState, ForgeError> {
        github::ci_state_of(&self.gh, &self.repo_dir, commit)
    }
    fn failing_checks_of(&self, _branch: &str, commit: &str) -> Result<String, ForgeError> {
        github::failing_checks_of(&self.gh, &self.repo_dir, commit)
    }
    fn merge_pr(&self, branch: &str, commit: &str, _message: &str) -> Result<(), ForgeError> {
        github::merge_pr(&self.gh, &self.repo_dir, branch, commit)?;
        // The merge is done whatever becomes of the branch: a branch left on origin is
        // untidy, not a failed merge.
        if let Err(e) = self.repo.delete_origin_branch(branch) {
            tracing::warn!(
                "merged {branch}, but cannot delete it on origin: {e}; delete it by hand (`git push origin --delete {branch}`)"
            );
        }
        Ok(())
    }
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError> {
        github::failing_checks_of(&self.gh, &self.repo_dir, branch)
    }
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError> {
        github::review_state(
            &self.gh,
            &self.repo_dir,
            &self.authority,
            branch,
            None,
            since,
        )
    }
    /// The push's time (one git call) is asked first, so the lists are read once.
    fn review_of(&self, branch: &str, commit: Option<&str>) -> Result<ReviewState, ForgeError> {
        let pushed = last_push(&self.repo, branch);
        github::review_state(
            &self.gh,
            &self.repo_dir,
            &self.authority,
            branch,
            commit,
            pushed.as_deref(),
        )
    }
    fn require_checks(&self) -> bool {
        self.require_checks
    }
    fn is_local(&self) -> bool {
        false
    }
    /// GitHub's `behind` or a rule of the base branch, as the builtin merge reads them.
    fn merge_gate(&self, branch: &str) -> Result<(), ForgeError> {
        github::merge_gate(&self.gh, &self.repo_dir, branch)
    }
    fn queue_state(&self, branch: &str) -> Result<QueueState, ForgeError> {
        github::queue_state(&self.gh, &self.repo_dir, branch)
    }
}

impl TrackerPort for GitHub {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        GitHub::select(self, excluded, merged)
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        GitHub::get(self, number)
    }
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        GitHub::text(self, number)
    }
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        GitHub::close(self, number, note)
    }
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        GitHub::mark_escalated(self, number, diagnostic)
    }
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        GitHub::unquarantine(self, number, note)
    }
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        GitHub::lift_quarantine(self, number)
    }
    /// None: telling them would be one more `gh` call per empty selection.
    fn open_without_label(&self) -> Vec<u32> {
        Vec::new()
    }
    fn label(&self) -> &str {
        &self.label
    }
}
