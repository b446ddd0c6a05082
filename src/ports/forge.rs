//! The forge port: pull requests and CI of a branch. Its error is [`ForgeError`], the git
//! port's type: the forge's calls are commands like git's (`gh`, or git for the local forge)
//! and fail the same ways, kinded once at the adapter.

pub use crate::forge::ForgeError;
use crate::forge::{CiState, Forge, Pr, ReviewState};
use crate::git::repo::Repo;

/// Where PRs are opened and merged and CI is read.
pub trait ForgePort: Send + Sync {
    /// The PR whose head is `branch`: an open one wins over a merged one over a closed one.
    fn pr_for_branch(&self, branch: &str) -> Result<Option<Pr>, ForgeError>;
    /// The branch's CI as it stands now.
    fn ci_state(&self, branch: &str) -> Result<CiState, ForgeError>;
    /// Opens the PR of `branch`, or returns its open PR as it is (a retry never opens two).
    fn create_pr(&self, branch: &str, title: &str, body: &str) -> Result<Pr, ForgeError>;
    /// CI of commit `commit`, origin's head of `branch` as a look just read it.
    fn ci_state_of(&self, branch: &str, commit: &str) -> Result<CiState, ForgeError>;
    /// [`ForgePort::failing_checks`] for commit `commit`.
    fn failing_checks_of(&self, branch: &str, commit: &str) -> Result<String, ForgeError>;
    /// Merges exactly `commit`, the PR of `branch`'s head, with `message`, and deletes the
    /// branch; refused, changing nothing, when the head is no longer `commit`.
    fn merge_pr(&self, branch: &str, commit: &str, message: &str) -> Result<(), ForgeError>;
    /// Each failing check's name, link and the end of its log where the forge has one.
    fn failing_checks(&self, branch: &str) -> Result<String, ForgeError>;
    /// The review decision of `branch`'s open PR and its reviews and comments written at or
    /// after `since` (RFC 3339; `None`: since the branch's last push where the forge can tell
    /// it, else all), oldest first. The decision is over every review.
    fn review_state(&self, branch: &str, since: Option<&str>) -> Result<ReviewState, ForgeError>;
    /// [`ForgePort::review_state`] since the branch's last push, where an approval counts
    /// only for `commit` (the commit CI verified) on a forge whose approvals name a commit.
    /// Default: the forge's approvals name none.
    fn review_of(&self, branch: &str, commit: Option<&str>) -> Result<ReviewState, ForgeError> {
        let _ = commit;
        self.review_state(branch, None)
    }
    /// `requireChecks`: "no CI configured" does not let a branch merge.
    fn require_checks(&self) -> bool;
    /// Origin itself plays the forge (the offline `local` forge): merges race on origin's
    /// main, so the merge step brings the branch up to date first.
    fn is_local(&self) -> bool;
    /// What the forge's fields say keeps `branch`'s PR from merging before anyone asks it
    /// to (an agent's merge): `Err` of kind `Behind` (the base branch wants the branch up to
    /// date) or `Policy` (a rule); `Ok` when nothing does, or the forge has no such fields.
    fn merge_gate(&self, branch: &str) -> Result<(), ForgeError> {
        let _ = branch;
        Ok(())
    }
    /// Whether CI in `state` lets the branch merge.
    fn ci_ok(&self, state: CiState) -> bool {
        match state {
            CiState::Passed => true,
            CiState::NoneConfigured => !self.require_checks(),
            CiState::Pending | CiState::Failed => false,
        }
    }
}

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
            let pushed = crate::forge::last_push(&self.repo, branch);
            return self.forge.review_state(branch, commit, pushed.as_deref());
        }
        let state = self.forge.review_state(branch, commit, None)?;
        // Only a request for changes hands feedback on: the push's time is asked for then
        // alone, so a look that lets the PR merge costs no git call.
        if state.decision != crate::forge::ReviewDecision::ChangesRequested {
            return Ok(state);
        }
        match crate::forge::last_push(&self.repo, branch) {
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
}
