//! The production [`GitPort`]: the project's repository, through `Repo`.

use crate::git::repo::{BranchOnOrigin, Repo, RepoError as GitError};
use crate::ports::GitPort;
use std::path::PathBuf;
use std::time::Duration;

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
    fn start_branch(&self, branch: &str) -> Result<Option<String>, GitError> {
        Repo::start_branch(self, branch)
    }
    fn start_main_merge(&self, branch: &str) -> Result<Vec<String>, GitError> {
        Repo::start_main_merge(self, branch)
    }
    fn conclude_merge(&self, message: &str) -> Result<bool, GitError> {
        Repo::conclude_merge(self, message)
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
    fn branch_on_origin(&self, branch: &str) -> Result<BranchOnOrigin, GitError> {
        Repo::branch_on_origin(self, branch)
    }
    fn contains_commit(&self, newer: &str, older: &str) -> Result<bool, GitError> {
        Repo::contains_commit(self, newer, older)
    }
    fn pushed_from_here(&self, branch: &str, commit: &str) -> Result<bool, GitError> {
        Repo::pushed_from_here(self, branch, commit)
    }
    fn last_pushed(&self, branch: &str) -> Result<Option<String>, GitError> {
        Repo::last_pushed(self, branch)
    }
    fn record_trust(&self, resume: bool) -> Result<Vec<String>, GitError> {
        let dir = Repo::runner_dir(self).map_err(|e| GitError::Parse {
            command: format!("locating the runner's directory of {}", self.path.display()),
            detail: e.to_string(),
        })?;
        Repo::record_trust(self, (&dir.trusted_hooks(), &dir.trusted_git()), resume)
    }
    fn undo_tampering(&self) -> Result<Vec<String>, GitError> {
        Repo::undo_tampering(self)
    }
    fn changed_files(&self, branch: &str) -> Result<Vec<crate::weakening::ChangedFile>, GitError> {
        Repo::changed_files(self, branch)
    }
    fn branch_head(&self, branch: &str) -> Result<Option<String>, GitError> {
        Repo::local_head(self, branch)
    }
    fn spec_dir(&self, issue: u32, feature: Option<&str>) -> Option<PathBuf> {
        Repo::spec_dir(self, issue, feature)
    }
    fn spec_files_ok(&self, issue: u32, feature: Option<&str>) -> Result<(), Vec<String>> {
        Repo::spec_files_ok(self, issue, feature)
    }
    fn runner_dir(&self) -> Result<crate::runner_dir::RunnerDir, String> {
        Repo::runner_dir(self).map_err(|e| e.to_string())
    }
    fn check_artifact_dir(&self) -> Result<(), String> {
        crate::artifacts::check_artifact_dir(&self.path)
    }
    fn exclude_artifacts(&self) -> std::io::Result<()> {
        crate::git::exclude::exclude_artifacts(&self.path)
    }
}
