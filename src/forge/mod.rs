//! Pull requests and CI, from GitHub (through the `gh` CLI, [`github`]), from GitLab (merge
//! requests and pipelines through its REST API, [`gitlab`]) or from the offline
//! `local` forge used by the demo ([`local`]), where origin itself plays GitHub: a pushed
//! branch is an open PR and a branch merged into `origin/<main>` is a merged one; its CI is an
//! optional command run in a clean worktree of the branch ([`LocalCi`]).

pub mod github;
pub mod gitlab;
mod local;
mod local_ci;

pub use github::{merge_refusal, parse_checks, parse_prs, refused_by_policy};
pub use gitlab::GitLabForge;
pub use local_ci::LocalCi;

use crate::git::repo::{Repo, RepoError};
use std::path::PathBuf;

/// Why the forge could not answer. Its calls are commands like git's (`gh`, or git itself for
/// the local forge) and fail the same ways — a command that could not start, failed (its
/// kind decided from what it printed), was stopped by the runner, or printed what cannot be
/// read — so it is the same type as the git port's error: one definition, classified once.
/// The messages name the command and what to check.
pub type ForgeError = RepoError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The checks of a pull request's head commit, as the merge gate sees them.
pub enum CiState {
    /// No checks are configured for the commit; mergeable unless `requireChecks` is set.
    NoneConfigured,
    /// At least one check is still running or queued.
    Pending,
    /// At least one check failed (or was cancelled).
    Failed,
    /// Every check finished and passed.
    Passed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Where a pull request is.
pub enum PrState {
    /// Open: can be merged.
    Open,
    /// Merged into the default branch.
    Merged,
    /// Closed without merging.
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
/// A pull request as the forge reports it.
pub struct Pr {
    /// 0 for the local forge, which has no numbers.
    pub number: u32,
    /// Its web address; the local forge writes `local:<branch>#<number>`.
    pub url: String,
    /// Open, merged or closed.
    pub state: PrState,
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

    /// The branch's CI (on GitHub: its head's). The local forge runs its CI command once per
    /// commit, if it has one.
    pub fn ci_state(&self, repo: &Repo, branch: &str) -> Result<CiState, ForgeError> {
        match self {
            Forge::Local { ci: Some(ci), .. } => ci.state(repo, branch),
            Forge::Local { ci: None, .. } => Ok(CiState::NoneConfigured),
            Forge::GitHub { gh, repo_dir, .. } => github::ci_state_of(gh, repo_dir, branch),
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
            Forge::Local { pulls, .. } => {
                local::merge_pr(repo, pulls.as_deref(), branch, commit, message)
            }
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

    /// Whether CI lets the branch merge: "none configured" does unless `requireChecks` is set.
    pub fn ci_ok(&self, state: CiState) -> bool {
        match state {
            CiState::Passed => true,
            CiState::NoneConfigured => !self.require_checks(),
            CiState::Pending | CiState::Failed => false,
        }
    }
}
