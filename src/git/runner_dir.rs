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

#[cfg(test)]
mod tests {
    use crate::git::repo::Repo;
    use crate::runner_dir::RunnerDir;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    /// A repository's own answer, from the git directories it asked for once, is where
    /// `locate` finds the runner's directory: in a clone and in a linked worktree of it.
    #[test]
    fn a_repos_runner_dir_is_the_one_locate_finds_in_a_clone_and_its_worktree() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path();
        git(project, &["init", "--quiet"]);
        let commit = ["-c", "user.email=t@t", "-c", "user.name=t", "commit"];
        git(
            project,
            &[&commit[..], &["--allow-empty", "-qm", "x"]].concat(),
        );
        git(project, &["worktree", "add", "-q", "wt"]);
        for clone in [project.to_path_buf(), project.join("wt")] {
            let repo = Repo::open(&clone).expect("open");
            let found = RunnerDir::locate(&clone).expect("locate");
            assert_eq!(repo.runner_dir().expect("runner dir"), found);
            let canonical = |p: &std::path::Path| p.canonicalize().expect("canonical");
            let parent = |p: &std::path::Path| p.parent().expect("in a git dir").to_path_buf();
            assert_eq!(
                canonical(&parent(&found.dir)),
                canonical(&project.join(".git"))
            );
        }
    }
}
