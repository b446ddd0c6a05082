//! GitLab as the runner's forge and tracker: [`GitLabPort`] implements the forge port on the
//! merge requests and pipelines of [`GitLabForge`], and the tracker [`GitLab`] the tracker port
//! (its claims, as notes, are `claims.rs`).

use super::forge::GitLabForge;
use super::tracker::GitLab;
use crate::forge::{last_push, CiState, ForgeError, Pr, PrState, ReviewState};
use crate::git::repo::Repo;
use crate::ports::tracker::{Issue, IssueText, Selection, TrackerError};
use crate::ports::{ForgePort, TrackerPort};
use std::collections::BTreeSet;

/// Merge requests and pipelines of one GitLab project, as the forge port.
#[derive(Debug, Clone)]
pub struct GitLabPort {
    /// The project and its API.
    pub api: GitLabForge,
    /// Whether a commit without checks must not be merged.
    pub require_checks: bool,
    /// The project's repository: the base branch, the branch's last push.
    pub repo: Repo,
}

impl ForgePort for GitLabPort {
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError> {
        self.api.pr_for_branch(branch)
    }
    fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError> {
        self.api.ci_state(branch)
    }
    fn create_pr(&self, branch: &str, title: &str, body: &str) -> Result<Pr, ForgeError> {
        if let Some(pr) = self
            .pr_for_branch(branch)?
            .filter(|pr| pr.state != PrState::Closed)
        {
            return Ok(pr);
        }
        self.api.create_pr(branch, &self.repo.main, title, body)
    }
    /// That commit's pipeline (`branch` tells whose merge request may show another commit's).
    fn ci_state_of(&self, branch: &str, commit: &str) -> Result<CiState, ForgeError> {
        self.api.ci_state_of(branch, commit)
    }
    fn failing_checks_of(&self, branch: &str, commit: &str) -> Result<String, ForgeError> {
        self.api.failing_checks_of(branch, commit)
    }
    /// GitLab removes the source branch with the merge (`should_remove_source_branch`).
    fn merge_pr(&self, branch: &str, commit: &str, message: &str) -> Result<(), ForgeError> {
        self.api.merge_pr(branch, commit, message)
    }
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError> {
        self.api.failing_checks(branch)
    }
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError> {
        self.api.review_state(branch, None, since)
    }
    /// The push's time (one git call) is asked first, so the lists are read once.
    fn review_of(&self, branch: &str, commit: Option<&str>) -> Result<ReviewState, ForgeError> {
        let pushed = last_push(&self.repo, branch);
        self.api.review_state(branch, commit, pushed.as_deref())
    }
    /// Where the merge request stands on the project's merge train.
    fn queue_state(&self, branch: &str) -> Result<crate::ports::forge::QueueState, ForgeError> {
        self.api.train_state(branch)
    }
    fn require_checks(&self) -> bool {
        self.require_checks
    }
    fn is_local(&self) -> bool {
        false
    }
}

impl TrackerPort for GitLab {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        GitLab::select(self, excluded, merged)
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        GitLab::get(self, number)
    }
    fn text(&self, number: u32) -> Result<IssueText, TrackerError> {
        GitLab::text(self, number)
    }
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        GitLab::close(self, number, note)
    }
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        GitLab::mark_escalated(self, number, diagnostic)
    }
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        GitLab::unquarantine(self, number, note)
    }
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        GitLab::lift_quarantine(self, number)
    }
    fn open_without_label(&self) -> Vec<u32> {
        Vec::new()
    }
    fn label(&self) -> &str {
        &self.label
    }
}
