//! The production [`ForgePort`]: the configured forge, with the project's repository.

use super::{CiState, Forge, ForgeError, Pr, ReviewDecision, ReviewState};
use crate::git::repo::Repo;
use crate::ports::ForgePort;

/// The production forge: GitHub through `gh`, GitLab through its API, or the local forge, which reads the project's
/// git (hence the repository it holds).
#[derive(Debug, Clone)]
pub struct ForgeAdapter {
    /// Which forge, and its settings.
    pub forge: Forge,
    /// The project's repository, for the local forge's git reads and the base branch.
    pub repo: Repo,
}

impl ForgePort for ForgeAdapter {
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError> {
        self.forge.pr_for_branch(&self.repo, branch)
    }
    fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError> {
        self.forge.ci_state(&self.repo, branch)
    }
    fn create_pr(&self, branch: &str, title: &str, body: &str) -> Result<Pr, ForgeError> {
        self.forge.create_pr(&self.repo, branch, title, body)
    }
    fn ci_state_of(&self, branch: &str, commit: &str) -> Result<CiState, ForgeError> {
        self.forge.ci_state_of(&self.repo, branch, commit)
    }
    fn failing_checks_of(&self, _branch: &str, commit: &str) -> Result<String, ForgeError> {
        self.forge.failing_checks_of(commit)
    }
    fn merge_pr(&self, branch: &str, commit: &str, message: &str) -> Result<(), ForgeError> {
        self.forge.merge_pr(&self.repo, branch, commit, message)
    }
    fn test_train(
        &self,
        base: Option<&str>,
        merges: &[(String, String)],
    ) -> Result<crate::ports::forge::TrainTree, ForgeError> {
        match &self.forge {
            Forge::Local { ci, .. } => {
                super::local::test_train(&self.repo, ci.as_ref(), base, merges)
            }
            Forge::GitHub { .. } | Forge::GitLab { .. } => Err(crate::ports::forge::no_train()),
        }
    }
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError> {
        self.forge.failing_checks(&self.repo, branch)
    }
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError> {
        self.forge.review_state(branch, None, since)
    }
    fn review_of(&self, branch: &str, commit: Option<&str>) -> Result<ReviewState, ForgeError> {
        if !self.is_local() {
            // A remote forge's read is several calls: the push's time (one git call) is
            // asked first, so the lists are read once.
            let pushed = super::last_push(&self.repo, branch);
            return self.forge.review_state(branch, commit, pushed.as_deref());
        }
        let state = self.forge.review_state(branch, commit, None)?;
        // Only a request for changes hands feedback on: the push's time is asked for then
        // alone, so a look that lets the PR merge costs no git call.
        if state.decision != ReviewDecision::ChangesRequested {
            return Ok(state);
        }
        match super::last_push(&self.repo, branch) {
            Some(pushed) => self.forge.review_state(branch, commit, Some(&pushed)),
            None => Ok(state),
        }
    }
    fn require_checks(&self) -> bool {
        self.forge.require_checks()
    }
    fn is_local(&self) -> bool {
        matches!(self.forge, Forge::Local { .. })
    }
    fn ci_ok(&self, state: CiState) -> bool {
        self.forge.ci_ok(state)
    }
    fn merge_gate(&self, branch: &str) -> Result<(), ForgeError> {
        self.forge.merge_gate(branch)
    }
    fn queue_state(&self, branch: &str) -> Result<crate::ports::forge::QueueState, ForgeError> {
        match &self.forge {
            Forge::GitHub { gh, repo_dir, .. } => super::github::queue_state(gh, repo_dir, branch),
            Forge::GitLab { api, .. } => api.train_state(branch),
            Forge::Local { .. } => Err(ForgeError::Parse {
                command: "the merge queue's look".to_string(),
                detail: "only GitHub's merge queue and GitLab's merge trains are looked at"
                    .to_string(),
            }),
        }
    }
}
