//! The git port: the project's repository as the runner sees it. Its error is
//! [`GitError`]: a failed command carries the kind decided from git's own words when the
//! error is made (`CallFailureKind::of_git`: hook rejected, lock held, lost race, network…),
//! so nothing downstream reads git's text.
//!
//! Branch names are the runner's `<issue>-<slug>`; "main" is the default branch.

use crate::git::repo::Repo;
pub use crate::git::repo::RepoError as GitError;
use std::path::PathBuf;
use std::time::Duration;

/// The project's git repository.
pub trait GitPort: Send + Sync {
    /// The default branch: origin's HEAD, else `main`, else `master`.
    fn main(&self) -> &str;
    /// The checked-out branch; `None` on a detached HEAD.
    fn current_branch(&self) -> Result<Option<String>, GitError>;
    /// No change in the tree apart from the runner's own files.
    fn is_clean(&self) -> Result<bool, GitError>;
    /// Changes in the tree that are not the runner's, as `git status` names them.
    fn foreign_changes(&self) -> Result<Vec<String>, GitError>;
    /// The local branch of `issue` (`<issue>-…`); a branch only on origin is not looked at.
    fn feature_branch(&self, issue: u32) -> Result<Option<String>, GitError>;
    /// The rescue refs kept for `branch`: unfinished work the runner aborted rather than
    /// commit. None where the port keeps no such refs.
    fn rescue_refs(&self, _branch: &str) -> Result<Vec<String>, GitError> {
        Ok(Vec::new())
    }
    /// Makes a local branch of `issue`'s branch on origin, when only origin has one.
    fn adopt_pushed_branch(&self, issue: u32) -> Result<Option<String>, GitError>;
    /// Commits on `branch` that main does not have.
    fn commits_ahead_of_main(&self, branch: &str) -> Result<u32, GitError>;
    /// Whether origin has `branch`.
    fn branch_pushed(&self, branch: &str) -> Result<bool, GitError>;
    /// Commits on `branch` that origin's copy lacks.
    fn unpushed_commits(&self, branch: &str) -> Result<u32, GitError>;
    /// Commits every change of the tree (never the runner's files) with `message`;
    /// `Ok(false)` when there was nothing to commit. Refused on main.
    fn auto_commit(&self, message: &str) -> Result<bool, GitError>;
    /// Leaves the tree on main: checked out and fast-forwarded to origin, or, where another
    /// worktree has main checked out, a detached HEAD at origin's main.
    fn checkout_main(&self) -> Result<(), GitError>;
    /// Whether HEAD stands where the next issue's branch starts: main checked out (or a
    /// detached HEAD at origin's main while another worktree has main).
    fn on_main(&self) -> Result<bool, GitError> {
        Ok(self.current_branch()?.as_deref() == Some(self.main()))
    }
    /// Git lock files (index, HEAD, refs) older than `age` that no process holds.
    fn stale_locks(&self, age: Duration) -> Vec<PathBuf>;
    /// The lock files a git killed with its runner left, whatever their age, while no git
    /// works in the clone.
    fn locks_of_a_dead_git(&self) -> Vec<PathBuf>;
    /// Pushes `branch` to origin with a lease: on `lease` (the commit origin's branch must
    /// still be at), or where the last fetch left it. A hook's refusal is `HookRejected`.
    fn push_branch(&self, branch: &str, lease: Option<&str>) -> Result<(), GitError>;
    /// Origin's main commit after a fetch; `None` without origin.
    fn origin_main(&self) -> Result<Option<String>, GitError>;
    /// Merges origin's main into `branch` and pushes it; returns the main commit it is now
    /// based on. A conflict is `Conflict`.
    fn bring_up_to_date(
        &self,
        branch: &str,
        lease: Option<&str>,
    ) -> Result<Option<String>, GitError>;
    /// Whether origin's main moved past `base` while `branch` was being merged (another
    /// merger won the push race).
    fn lost_race(&self, branch: &str, base: Option<&str>) -> Result<bool, GitError>;
    /// Fetches origin (a no-op without origin).
    fn fetch(&self) -> Result<(), GitError>;
    /// One fetch, then where origin's copy of `branch` stands: its head, the local head and
    /// origin's main.
    fn branch_on_origin(&self, branch: &str) -> Result<crate::git::repo::BranchOnOrigin, GitError>;
    /// Whether commit `older` is `newer` or one of its ancestors.
    fn contains_commit(&self, newer: &str, older: &str) -> Result<bool, GitError>;
    /// Whether `commit` is, or precedes, a commit the local `branch` has pointed at: this
    /// clone's own work, not a commit only a fetch brought.
    fn was_on_branch(&self, branch: &str, commit: &str) -> Result<bool, GitError>;
    /// The spec directory of `issue` (`specs/<issue>-…`), the recorded `feature` first.
    fn spec_dir(&self, issue: u32, feature: Option<&str>) -> Option<PathBuf>;
    /// `Err(missing)` names the spec files that are missing or empty.
    fn spec_files_ok(&self, issue: u32, feature: Option<&str>) -> Result<(), Vec<String>>;
    /// The runner's state directory under the common git directory.
    fn runner_dir(&self) -> Result<crate::runner_dir::RunnerDir, String>;
    /// Refuses a runner-artifact directory git tracks or that is a symlink.
    fn check_artifact_dir(&self) -> Result<(), String>;
    /// Keeps the runner's files out of git (`.git/info/exclude`).
    fn exclude_artifacts(&self) -> std::io::Result<()>;
}

impl GitPort for Repo {
    fn main(&self) -> &str {
        &self.main
    }
    fn current_branch(&self) -> Result<Option<String>, GitError> {
        Repo::current_branch(self)
    }
    fn is_clean(&self) -> Result<bool, GitError> {
        Repo::is_clean(self)
    }
    fn foreign_changes(&self) -> Result<Vec<String>, GitError> {
        Repo::foreign_changes(self)
    }
    fn rescue_refs(&self, branch: &str) -> Result<Vec<String>, GitError> {
        Repo::rescue_refs(self, branch)
    }
    fn feature_branch(&self, issue: u32) -> Result<Option<String>, GitError> {
        Repo::feature_branch(self, issue)
    }
    fn adopt_pushed_branch(&self, issue: u32) -> Result<Option<String>, GitError> {
        Repo::adopt_pushed_branch(self, issue)
    }
    fn commits_ahead_of_main(&self, branch: &str) -> Result<u32, GitError> {
        Repo::commits_ahead_of_main(self, branch)
    }
    fn branch_pushed(&self, branch: &str) -> Result<bool, GitError> {
        Repo::branch_pushed(self, branch)
    }
    fn unpushed_commits(&self, branch: &str) -> Result<u32, GitError> {
        Repo::unpushed_commits(self, branch)
    }
    fn auto_commit(&self, message: &str) -> Result<bool, GitError> {
        Repo::auto_commit(self, message)
    }
    fn checkout_main(&self) -> Result<(), GitError> {
        Repo::park_on_main(self).map(drop)
    }
    fn on_main(&self) -> Result<bool, GitError> {
        Repo::on_main(self)
    }
    fn stale_locks(&self, age: Duration) -> Vec<PathBuf> {
        Repo::stale_locks(self, age)
    }
    fn locks_of_a_dead_git(&self) -> Vec<PathBuf> {
        Repo::locks_of_a_dead_git(self)
    }
    fn push_branch(&self, branch: &str, lease: Option<&str>) -> Result<(), GitError> {
        Repo::push_branch(self, branch, lease)
    }
    fn origin_main(&self) -> Result<Option<String>, GitError> {
        Repo::origin_main(self)
    }
    fn bring_up_to_date(
        &self,
        branch: &str,
        lease: Option<&str>,
    ) -> Result<Option<String>, GitError> {
        Repo::bring_up_to_date(self, branch, lease)
    }
    fn lost_race(&self, branch: &str, base: Option<&str>) -> Result<bool, GitError> {
        Repo::lost_race(self, branch, base)
    }
    fn fetch(&self) -> Result<(), GitError> {
        Repo::fetch(self)
    }
    fn branch_on_origin(&self, branch: &str) -> Result<crate::git::repo::BranchOnOrigin, GitError> {
        Repo::branch_on_origin(self, branch)
    }
    fn contains_commit(&self, newer: &str, older: &str) -> Result<bool, GitError> {
        Repo::contains_commit(self, newer, older)
    }
    fn was_on_branch(&self, branch: &str, commit: &str) -> Result<bool, GitError> {
        Repo::was_on_branch(self, branch, commit)
    }
    fn spec_dir(&self, issue: u32, feature: Option<&str>) -> Option<PathBuf> {
        Repo::spec_dir(self, issue, feature)
    }
    fn spec_files_ok(&self, issue: u32, feature: Option<&str>) -> Result<(), Vec<String>> {
        Repo::spec_files_ok(self, issue, feature)
    }
    fn runner_dir(&self) -> Result<crate::runner_dir::RunnerDir, String> {
        crate::runner_dir::RunnerDir::locate(&self.path).map_err(|e| e.to_string())
    }
    fn check_artifact_dir(&self) -> Result<(), String> {
        crate::artifacts::check_artifact_dir(&self.path)
    }
    fn exclude_artifacts(&self) -> std::io::Result<()> {
        crate::git::exclude::exclude_artifacts(&self.path)
    }
}
