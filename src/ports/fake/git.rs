//! A git repository as data: branches with commit counts, origin's copy, spec files.

use super::world::World;
use crate::call_failure::CallFailureKind;
use crate::ports::git::leading_issue;
use crate::ports::git::CallEnd;
use crate::ports::git::{GitError, GitPort};
use crate::runner_dir::RunnerDir;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The fake git port; its runner directory is a real directory the test provides.
#[derive(Debug, Clone)]
pub struct FakeGit {
    world: World,
    state_dir: PathBuf,
}

impl FakeGit {
    /// Git of `world`; the runner keeps its state under `state_dir`.
    pub fn new(world: World, state_dir: &Path) -> FakeGit {
        FakeGit {
            world,
            state_dir: state_dir.to_path_buf(),
        }
    }
}

/// A failed git command of `kind`, as the real adapter would classify it.
pub(super) fn git_failed(command: &str, stderr: &str, kind: CallFailureKind) -> GitError {
    GitError::Command {
        command: command.to_string(),
        ended: CallEnd::Exit(1),
        stderr: stderr.to_string(),
        hint: "a fake git failure",
        kind,
    }
}

fn unknown(branch: &str) -> GitError {
    git_failed(
        &format!("git rev-parse refs/heads/{branch}"),
        &format!("fatal: unknown branch {branch}"),
        CallFailureKind::NotFound,
    )
}

/// The fake id of `branch`'s commit number `n` (`main` for origin's main): a branch's own
/// number in the first eight hex digits, the commit's count in the rest.
pub(super) fn fake_commit(branch: &str, n: u32) -> String {
    format!("{:08x}{n:032x}", branch_id(branch))
}

fn branch_id(branch: &str) -> u32 {
    if branch == "main" {
        return 0;
    }
    // FNV-1a: stable across runs, never 0 for a branch name in practice.
    branch.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    }) | 1
}

impl GitPort for FakeGit {
    fn main(&self) -> &str {
        "main"
    }
    fn current_branch(&self) -> Result<Option<String>, GitError> {
        Ok(Some(self.world.lock_for_blocking_call().current.clone()))
    }
    fn is_clean(&self) -> Result<bool, GitError> {
        Ok(self
            .world
            .lock_for_blocking_call()
            .foreign_changes
            .is_empty())
    }
    fn foreign_changes(&self) -> Result<Vec<String>, GitError> {
        Ok(self.world.lock_for_blocking_call().foreign_changes.clone())
    }
    fn feature_branch(&self, issue: u32) -> Result<Option<String>, GitError> {
        let w = self.world.lock_for_blocking_call();
        Ok(w.branches
            .keys()
            .find(|b| leading_issue(b) == Some(issue))
            .cloned())
    }
    fn adopt_pushed_branch(&self, _issue: u32) -> Result<Option<String>, GitError> {
        Ok(None)
    }
    fn commits_ahead_of_main(&self, branch: &str) -> Result<u32, GitError> {
        let w = self.world.lock_for_blocking_call();
        let b = w.branches.get(branch).ok_or_else(|| unknown(branch))?;
        Ok(if b.merged { 0 } else { b.commits })
    }
    fn branch_pushed(&self, branch: &str) -> Result<bool, GitError> {
        Ok(self
            .world
            .lock_for_blocking_call()
            .branches
            .get(branch)
            .is_some_and(|b| b.on_origin))
    }
    fn unpushed_commits(&self, branch: &str) -> Result<u32, GitError> {
        let w = self.world.lock_for_blocking_call();
        let b = w.branches.get(branch).ok_or_else(|| unknown(branch))?;
        Ok(b.commits.saturating_sub(b.pushed))
    }
    fn auto_commit(&self, _message: &str) -> Result<bool, GitError> {
        // The fake agent commits its own work: nothing is left uncommitted.
        Ok(false)
    }
    fn start_branch(&self, branch: &str) -> Result<Option<String>, GitError> {
        let mut w = self.world.lock_for_blocking_call();
        let base = w.origin_main;
        w.branches.entry(branch.to_string()).or_default().base = base;
        w.current = branch.to_string();
        Ok(None)
    }
    fn start_main_merge(&self, _branch: &str) -> Result<Vec<String>, GitError> {
        // The fake agent's repair brings the branch up to date itself.
        Ok(Vec::new())
    }
    fn conclude_merge(&self, _message: &str) -> Result<bool, GitError> {
        Ok(false)
    }
    fn checkout_main(&self) -> Result<(), GitError> {
        self.world.lock_for_blocking_call().current = "main".to_string();
        Ok(())
    }
    fn stale_locks(&self, _age: Duration) -> Vec<PathBuf> {
        Vec::new()
    }
    fn locks_of_a_dead_git(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    fn push_branch(&self, branch: &str, _lease: Option<&str>) -> Result<(), GitError> {
        let mut w = self.world.lock_for_blocking_call();
        if w.script.reject_pushes {
            return Err(git_failed(
                &format!("git push origin refs/heads/{branch}"),
                "push rejected by policy\nerror: failed to push some refs (pre-push hook declined)",
                CallFailureKind::HookRejected,
            ));
        }
        let b = w.branches.get_mut(branch).ok_or_else(|| unknown(branch))?;
        b.pushed = b.commits;
        b.on_origin = true;
        Ok(())
    }
    fn origin_main(&self) -> Result<Option<String>, GitError> {
        Ok(Some(fake_commit(
            "main",
            self.world.lock_for_blocking_call().origin_main,
        )))
    }
    fn bring_up_to_date(
        &self,
        branch: &str,
        _lease: Option<&str>,
    ) -> Result<Option<String>, GitError> {
        let mut w = self.world.lock_for_blocking_call();
        let main = w.origin_main;
        let b = w.branches.get_mut(branch).ok_or_else(|| unknown(branch))?;
        b.base = main;
        Ok(Some(fake_commit("main", main)))
    }
    fn lost_race(&self, branch: &str, base: Option<&str>) -> Result<bool, GitError> {
        let w = self.world.lock_for_blocking_call();
        let merged = w.branches.get(branch).is_some_and(|b| b.merged);
        Ok(!merged && base.is_some_and(|b| b != fake_commit("main", w.origin_main)))
    }
    fn fetch(&self) -> Result<(), GitError> {
        Ok(())
    }
    fn branch_on_origin(
        &self,
        branch: &str,
    ) -> Result<crate::ports::git::BranchOnOrigin, GitError> {
        let w = self.world.lock_for_blocking_call();
        let b = w.branches.get(branch);
        Ok(crate::ports::git::BranchOnOrigin {
            head: b
                .filter(|b| b.on_origin)
                .map(|b| fake_commit(branch, b.pushed)),
            local: b.map(|b| fake_commit(branch, b.commits)),
            main: Some(fake_commit("main", w.origin_main)),
        })
    }
    fn contains_commit(&self, newer: &str, older: &str) -> Result<bool, GitError> {
        let w = self.world.lock_for_blocking_call();
        let split = |c: &str| {
            let id = u32::from_str_radix(c.get(..8)?, 16).ok()?;
            let n = u32::from_str_radix(c.get(8..)?, 16).ok()?;
            Some((id, n))
        };
        let (Some((new_id, new_n)), Some((old_id, old_n))) = (split(newer), split(older)) else {
            return Ok(false);
        };
        if new_id == old_id {
            return Ok(old_n <= new_n);
        }
        // Origin's main holds a branch's commits once it is merged.
        Ok(new_id == 0
            && w.branches
                .iter()
                .any(|(name, b)| b.merged && branch_id(name) == old_id && old_n <= b.pushed))
    }
    fn pushed_from_here(&self, branch: &str, commit: &str) -> Result<bool, GitError> {
        // The fake clone's branch only ever grew, and its first `pushed` commits left from here.
        let w = self.world.lock_for_blocking_call();
        Ok(w.branches
            .get(branch)
            .is_some_and(|b| (1..=b.pushed).any(|n| fake_commit(branch, n) == commit)))
    }
    fn last_pushed(&self, branch: &str) -> Result<Option<String>, GitError> {
        let w = self.world.lock_for_blocking_call();
        Ok(w.branches
            .get(branch)
            .filter(|b| b.pushed > 0)
            .map(|b| fake_commit(branch, b.pushed)))
    }
    fn record_trust(&self, resume: bool) -> Result<Vec<String>, GitError> {
        let mut w = self.world.lock_for_blocking_call();
        w.trust_recorded = true;
        Ok(match resume {
            true => std::mem::take(&mut w.tampering),
            false => Vec::new(),
        })
    }
    fn undo_tampering(&self) -> Result<Vec<String>, GitError> {
        Ok(std::mem::take(
            &mut self.world.lock_for_blocking_call().tampering,
        ))
    }
    fn spec_dir(&self, _issue: u32, _feature: Option<&str>) -> Option<PathBuf> {
        None
    }
    fn spec_files_ok(&self, issue: u32, _feature: Option<&str>) -> Result<(), Vec<String>> {
        if self.world.lock_for_blocking_call().specs.contains(&issue) {
            Ok(())
        } else {
            Err(crate::ports::git::SPEC_FILES.map(str::to_string).to_vec())
        }
    }
    fn runner_dir(&self) -> Result<RunnerDir, String> {
        Ok(RunnerDir {
            dir: self.state_dir.clone(),
        })
    }
    fn check_artifact_dir(&self) -> Result<(), String> {
        Ok(())
    }
    fn exclude_artifacts(&self) -> std::io::Result<()> {
        Ok(())
    }
}
