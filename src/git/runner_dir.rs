//! Where the runner's state directory is: under the common git directory, which git names.

use crate::runner_dir::{RunnerDir, RunnerDirError};
use std::path::{Path, PathBuf};

impl RunnerDir {
    /// The runner directory of the clone `project` belongs to (asks git for the common git
    /// directory, so a linked worktree finds its main clone's state).
    pub fn locate(project: &Path) -> Result<RunnerDir, RunnerDirError> {
        let out =
            super::command::output(project, &["rev-parse", "--git-common-dir"]).map_err(|e| {
                RunnerDirError::NoGitDir {
                    project: project.to_path_buf(),
                    detail: format!("cannot run git: {e}"),
                }
            })?;
        if !out.status.success() {
            return Err(RunnerDirError::NoGitDir {
                project: project.to_path_buf(),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if text.is_empty() {
            return Err(RunnerDirError::NoGitDir {
                project: project.to_path_buf(),
                detail: "git printed no directory".to_string(),
            });
        }
        let git_dir = PathBuf::from(text);
        let git_dir = if git_dir.is_absolute() {
            git_dir
        } else {
            project.join(git_dir)
        };
        Ok(RunnerDir::in_git_dir(&git_dir))
    }
}
