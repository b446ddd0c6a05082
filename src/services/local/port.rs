//! The offline forge and tracker as ports: [`LocalForge`] (origin plays the forge, CI is a
//! local command) and the tracker [`Local`] over a directory of issue files.

use super::ci::LocalCi;
use super::forge as local;
use super::tracker::Local;
use crate::forge::{last_push, CiState, ForgeError, Pr, PrState, ReviewDecision, ReviewState};
use crate::git::repo::Repo;
use crate::ports::forge::TrainTree;
use crate::ports::tracker::{Issue, Selection, TrackerError};
use crate::ports::{ForgePort, TrackerPort};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// No remote forge: a pushed branch is an open PR and a branch merged into `origin/<main>` a
/// merged one; branches are merged locally, CI is a local command.
#[derive(Debug, Clone)]
pub struct LocalForge {
    /// Whether a commit without checks must not be merged.
    pub require_checks: bool,
    /// Where the pull-request records live when the runner opens PRs itself (builtin
    /// createPR). `None`: an agent opens them, and a pushed branch stands for its PR.
    pub pulls: Option<PathBuf>,
    /// The CI command, if one is configured; without it the local forge has no CI.
    pub ci: Option<LocalCi>,
    /// Where `sdlc-runner review N` stores reviews (`<dir>/<N>.json`, N the issue);
    /// `None`: the PRs have no reviews.
    pub reviews: Option<PathBuf>,
    /// The project's repository, whose origin plays the forge.
    pub repo: Repo,
}

/// Where the local forge keeps its reviews: beside the local tracker's issue files
/// (`<tracker.dir>/reviews`), or in the runner's state directory when issues live elsewhere.
pub fn reviews_dir(cfg: &crate::config::Config, runner_dir: &std::path::Path) -> PathBuf {
    match cfg.tracker.dir() {
        Some(dir) => dir.join("reviews"),
        None => runner_dir.join("reviews"),
    }
}

impl LocalForge {
    /// The reviews of `branch`'s issue, keeping as feedback those written since `since`.
    fn reviews_since(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError> {
        let all = match (&self.reviews, crate::git::repo::leading_issue(branch)) {
            (Some(dir), Some(issue)) => local::reviews_of(dir, issue)?,
            _ => Vec::new(),
        };
        Ok(ReviewState::of(all, since))
    }
}

impl ForgePort for LocalForge {
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError> {
        local::pr_for_branch(&self.repo, self.pulls.as_deref(), branch)
    }
    /// The CI command runs once per commit, if there is one.
    fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError> {
        match &self.ci {
            Some(ci) => ci.state(&self.repo, branch),
            None => Ok(CiState::NoneConfigured),
        }
    }
    fn create_pr(&self, branch: &str, title: &str, body: &str) -> Result<Pr, ForgeError> {
        if let Some(pr) = self
            .pr_for_branch(branch)?
            .filter(|pr| pr.state != PrState::Closed)
        {
            return Ok(pr);
        }
        local::create_pr(self.pulls.as_deref(), branch, title, body)
    }
    /// The CI command on that very commit.
    fn ci_state_of(&self, _branch: &str, commit: &str) -> Result<CiState, ForgeError> {
        match &self.ci {
            Some(ci) => ci.state_of(&self.repo, commit),
            None => Ok(CiState::NoneConfigured),
        }
    }
    fn failing_checks_of(&self, _branch: &str, commit: &str) -> Result<String, ForgeError> {
        match &self.ci {
            Some(ci) => ci.failing_of(commit),
            None => Ok(String::new()),
        }
    }
    fn merge_pr(&self, branch: &str, commit: &str, message: &str) -> Result<(), ForgeError> {
        local::merge_pr(&self.repo, self.ci.as_ref(), branch, commit, message)
    }
    fn test_train(
        &self,
        base: Option<&str>,
        merges: &[(String, String)],
    ) -> Result<TrainTree, ForgeError> {
        local::test_train(&self.repo, self.ci.as_ref(), base, merges)
    }
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError> {
        match &self.ci {
            Some(ci) => ci.failing(&self.repo, branch),
            None => Ok(String::new()),
        }
    }
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError> {
        self.reviews_since(branch, since)
    }
    /// Only a request for changes hands feedback on: the push's time is asked for then
    /// alone, so a look that lets the PR merge costs no git call.
    fn review_of(&self, branch: &str, _commit: Option<&str>) -> Result<ReviewState, ForgeError> {
        let state = self.reviews_since(branch, None)?;
        if state.decision != ReviewDecision::ChangesRequested {
            return Ok(state);
        }
        match last_push(&self.repo, branch) {
            Some(pushed) => self.reviews_since(branch, Some(&pushed)),
            None => Ok(state),
        }
    }
    fn require_checks(&self) -> bool {
        self.require_checks
    }
    fn is_local(&self) -> bool {
        true
    }
}

impl TrackerPort for Local {
    fn select(
        &self,
        excluded: &BTreeSet<u32>,
        merged: &BTreeSet<u32>,
    ) -> Result<Selection, TrackerError> {
        Local::select(self, excluded, merged)
    }
    fn get(&self, number: u32) -> Result<Issue, TrackerError> {
        Local::get(self, number)
    }
    fn close(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        Local::close(self, number, note)
    }
    fn mark_escalated(&self, number: u32, diagnostic: &str) -> Result<(), TrackerError> {
        Local::mark_escalated(self, number, diagnostic)
    }
    fn unquarantine(&self, number: u32, note: &str) -> Result<(), TrackerError> {
        Local::unquarantine(self, number, note)
    }
    fn lift_quarantine(&self, number: u32) -> Result<bool, TrackerError> {
        Local::lift_quarantine(self, number)
    }
    /// Read from the files, which costs no call.
    fn open_without_label(&self) -> Vec<u32> {
        self.all()
            .unwrap_or_default()
            .into_iter()
            .filter(|i| i.state_open && !i.labels.contains(&self.label))
            .map(|i| i.number)
            .collect()
    }
    fn label(&self) -> &str {
        &self.label
    }
}
