//! The runner's own state: `<common git dir>/sdlc-runner/` holds the journal, the lock, the
//! decision file and archived copies of state files it could not trust.
//!
//! Why there: nothing under the git directory can be committed, and no agent command that
//! cleans the work tree (`git clean -fdx`, `git stash -u`, `git checkout -- .`) reaches it.
//! The *common* git directory is used so that every worktree of a clone finds the same state.
//! The directory is private to the user running the runner (0700) and is refused when it is a
//! symlink, belongs to someone else or is writable by others: an unattended runner must never
//! write its journal where another local user can redirect it.

pub mod lock;

use crate::safe_fs::{self, UnsafeDir};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The directory's name inside the common git directory.
pub const DIR_NAME: &str = "sdlc-runner";
/// Where runners before this layout kept the journal, relative to the project.
pub const LEGACY_JOURNAL: &str = ".claude/sdlc-journal.jsonl";

/// Paths of the runner's own files for one clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerDir {
    pub dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerDirError {
    #[error("{}: cannot find the repository's git directory: {detail}; projectPath must be a git work tree", project.display())]
    NoGitDir { project: PathBuf, detail: String },
    #[error("{}: {action}: {source}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("refusing to keep the runner's state there: {0}")]
    Unsafe(#[from] UnsafeDir),
}

impl RunnerDir {
    /// The runner directory of a clone whose common git directory is `git_dir` (absolute).
    /// Which directory that is, git says: `RunnerDir::locate` (`git/runner_dir.rs`).
    pub fn in_git_dir(git_dir: &Path) -> RunnerDir {
        RunnerDir {
            dir: git_dir.join(DIR_NAME),
        }
    }

    /// The runner's copy of the repository's hooks as the session found them: the hooks
    /// directory of every git call the runner makes (`git::trust`).
    pub fn trusted_hooks(&self) -> PathBuf {
        self.dir.join("trusted-hooks")
    }

    /// The record of the repository's hooks and configuration the session trusts.
    pub fn trusted_git(&self) -> PathBuf {
        self.dir.join("trusted-git.json")
    }

    pub fn journal(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    /// The file that hands issue `number`'s whole text to the agent (see
    /// [`RunnerDir::write_issue_text`]).
    pub fn issue_text(&self, number: u32) -> PathBuf {
        self.dir.join("issues").join(format!("{number}.md"))
    }

    /// Writes issue `number`'s text for the agent, in a private directory of its own under
    /// the runner directory: outside the work tree, so neither a commit nor `git clean`
    /// touches it. Returns the file.
    pub fn write_issue_text(&self, number: u32, text: &str) -> Result<PathBuf, RunnerDirError> {
        let path = self.issue_text(number);
        let dir = self.dir.join("issues");
        self.ensure()?;
        safe_fs::create_private_dir(&dir)?;
        safe_fs::replace_unsynced(&path, text.as_bytes()).map_err(|source| RunnerDirError::Io {
            path: path.clone(),
            action: "cannot write the issue's text for the agent",
            source,
        })?;
        Ok(path)
    }

    /// The head of issue `number`'s branch the test-weakening check last let through, as
    /// `<branch> <commit>` (`steps::weakening::check_once`): a head checked once is not
    /// checked again, and a head pushed without it (a runner killed after its agent's push)
    /// is checked on restart.
    pub fn weakening_checked(&self, number: u32) -> PathBuf {
        self.dir.join("weakening").join(number.to_string())
    }

    /// Records `record` as the head of issue `number`'s branch the check let through,
    /// atomically and fsync'd, in a private directory of its own.
    pub fn record_weakening_checked(
        &self,
        number: u32,
        record: &str,
    ) -> Result<(), RunnerDirError> {
        let path = self.weakening_checked(number);
        self.ensure()?;
        safe_fs::create_private_dir(&self.dir.join("weakening"))?;
        safe_fs::write_atomic(&path, record.as_bytes()).map_err(|source| RunnerDirError::Io {
            path,
            action: "cannot record the head the test-weakening check let through",
            source,
        })
    }

    pub fn lock(&self) -> PathBuf {
        self.dir.join("lock")
    }

    pub fn decision(&self) -> PathBuf {
        self.dir.join("decision.json")
    }

    /// Copies of runner files that could not be trusted (a corrupt state file), kept for a
    /// person to read.
    pub fn archive(&self) -> PathBuf {
        self.dir.join("archive")
    }

    /// Creates the directory (0700) or checks the existing one: refused when it is a symlink,
    /// owned by another user, or writable by group or others.
    pub fn ensure(&self) -> Result<(), RunnerDirError> {
        Ok(safe_fs::create_private_dir(&self.dir)?)
    }

    /// Moves a journal from the old location (`.claude/sdlc-journal.jsonl`) here, once.
    /// Returns what happened, for the log; `None` when there was nothing to migrate.
    pub fn migrate_legacy_journal(&self, project: &Path) -> Result<Option<String>, RunnerDirError> {
        let legacy = project.join(LEGACY_JOURNAL);
        let meta = match fs::symlink_metadata(&legacy) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(RunnerDirError::Io {
                    path: legacy,
                    action: "cannot inspect the old journal",
                    source,
                })
            }
        };
        if !meta.file_type().is_file() {
            return Ok(Some(format!(
                "{} is not a regular file (a symlink?); it was not migrated and is ignored",
                legacy.display()
            )));
        }
        let target = self.journal();
        if fs::symlink_metadata(&target).is_ok() {
            return Ok(Some(format!(
                "{} is left over from an older runner; the journal in use is {} (remove the old one when you no longer need it)",
                legacy.display(),
                target.display()
            )));
        }
        let io_err = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| RunnerDirError::Io {
                path,
                action,
                source,
            }
        };
        let bytes = safe_fs::read_no_follow(&legacy)
            .map_err(io_err("cannot read the old journal", &legacy))?;
        safe_fs::write_new(&target, &bytes)
            .map_err(io_err("cannot write the migrated journal", &target))?;
        crate::failpoint::point("migration: journal copied");
        fs::remove_file(&legacy)
            .map_err(io_err("cannot remove the migrated old journal", &legacy))?;
        crate::failpoint::point("migration: old journal removed");
        Ok(Some(format!(
            "journal migrated from {} to {}",
            legacy.display(),
            target.display()
        )))
    }
}

/// Which file a path named when the runner opened it: the journal and the lock must still be
/// that file before every append, or someone removed or replaced them under the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
}

impl FileIdentity {
    pub fn of(file: &File) -> io::Result<FileIdentity> {
        let m = file.metadata()?;
        Ok(FileIdentity {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    /// `Err` says what happened to `path` (removed, replaced, a symlink now).
    pub fn still_at(&self, path: &Path) -> Result<(), String> {
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(format!(
                "{} was removed while the runner used it",
                path.display()
            )),
            Err(e) => Err(format!("{} cannot be inspected: {e}", path.display())),
            Ok(m) if m.file_type().is_symlink() => Err(format!(
                "{} was replaced by a symlink while the runner used it",
                path.display()
            )),
            Ok(m) if m.dev() != self.dev || m.ino() != self.ino => Err(format!(
                "{} was replaced by another file while the runner used it",
                path.display()
            )),
            Ok(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git_repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("git")
            .args(["init", "--quiet"])
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok);
        dir
    }

    #[test]
    fn lives_in_the_common_git_dir_and_a_worktree_finds_the_same() {
        let dir = git_repo();
        let project = dir.path();
        let rd = RunnerDir::locate(project).unwrap();
        rd.ensure().unwrap();
        let canonical = rd.dir.canonicalize().unwrap();
        assert_eq!(
            canonical,
            project.join(".git").join(DIR_NAME).canonicalize().unwrap()
        );
        for args in [
            &[
                "-c",
                "user.email=t@t",
                "-c",
                "user.name=t",
                "commit",
                "--allow-empty",
                "-qm",
                "x",
            ][..],
            &["worktree", "add", "-q", "wt"][..],
        ] {
            assert!(Command::new("git")
                .args(args)
                .current_dir(project)
                .status()
                .unwrap()
                .success());
        }
        let from_wt = RunnerDir::locate(&project.join("wt")).unwrap();
        assert_eq!(from_wt.dir.canonicalize().unwrap(), canonical);
    }

    #[test]
    fn is_created_private_and_a_symlinked_or_open_directory_is_refused() {
        let dir = git_repo();
        let rd = RunnerDir::locate(dir.path()).unwrap();
        rd.ensure().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&rd.dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);

        fs::set_permissions(&rd.dir, fs::Permissions::from_mode(0o777)).unwrap();
        let err = rd.ensure().unwrap_err().to_string();
        assert!(
            err.contains("writable by group or others") && err.contains("chmod 700"),
            "{err}"
        );

        fs::remove_dir(&rd.dir).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &rd.dir).unwrap();
        let err = rd.ensure().unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
    }

    #[test]
    fn the_old_journal_is_migrated_once_and_never_through_a_symlink() {
        let dir = git_repo();
        let project = dir.path();
        let rd = RunnerDir::locate(project).unwrap();
        rd.ensure().unwrap();
        fs::create_dir_all(project.join(".claude")).unwrap();
        fs::write(project.join(LEGACY_JOURNAL), b"{\"seq\":1}\n").unwrap();
        let said = rd.migrate_legacy_journal(project).unwrap().unwrap();
        assert!(said.contains("migrated"), "{said}");
        assert_eq!(fs::read(rd.journal()).unwrap(), b"{\"seq\":1}\n");
        assert!(!project.join(LEGACY_JOURNAL).exists());
        assert_eq!(rd.migrate_legacy_journal(project).unwrap(), None);

        // A second old journal never overwrites the one in use.
        fs::write(project.join(LEGACY_JOURNAL), b"other\n").unwrap();
        let said = rd.migrate_legacy_journal(project).unwrap().unwrap();
        assert!(said.contains("left over"), "{said}");
        assert_eq!(fs::read(rd.journal()).unwrap(), b"{\"seq\":1}\n");

        // A symlink planted at the old path is not read through.
        fs::remove_file(project.join(LEGACY_JOURNAL)).unwrap();
        fs::remove_file(rd.journal()).unwrap();
        let secret = project.join("secret.txt");
        fs::write(&secret, b"secret").unwrap();
        std::os::unix::fs::symlink(&secret, project.join(LEGACY_JOURNAL)).unwrap();
        let said = rd.migrate_legacy_journal(project).unwrap().unwrap();
        assert!(said.contains("not a regular file"), "{said}");
        assert!(!rd.journal().exists());
    }

    #[test]
    fn identity_notices_removal_and_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let file = File::create(&path).unwrap();
        let id = FileIdentity::of(&file).unwrap();
        assert_eq!(id.still_at(&path), Ok(()));
        fs::remove_file(&path).unwrap();
        assert!(id.still_at(&path).unwrap_err().contains("removed"));
        fs::write(&path, b"x").unwrap();
        assert!(id.still_at(&path).unwrap_err().contains("replaced"));
    }
}
