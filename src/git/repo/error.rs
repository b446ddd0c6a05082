//! Why a git (or forge CLI) call failed, and what to do about each kind.

use crate::call_failure::{CallFailureKind, Kinded};
use std::path::PathBuf;

/// Why a git (or forge CLI) call failed; every message names the command and what to check.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The project path is not inside a git work tree.
    #[error("{} is not a git repository (git said: {detail}); set projectPath to the root of a git clone", .path.display())]
    NotARepo {
        /// The path given as `projectPath`.
        path: PathBuf,
        /// What git said.
        detail: String,
    },
    /// The program could not be started.
    #[error("could not run {program}: {source}; is it installed and on PATH?")]
    Spawn {
        /// The program (`git`, `gh`, the CI command).
        program: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The command ran and failed.
    #[error("`{command}` failed (exit {}): {stderr}; {hint}", exit_text(.status))]
    Command {
        /// The command line, for the message.
        command: String,
        /// Its exit code; `None` when a signal ended it.
        status: Option<i32>,
        /// What it printed on stderr.
        stderr: String,
        /// What to check, in the reader's terms.
        hint: &'static str,
        /// Decided from `stderr` when the error is made.
        kind: CallFailureKind,
    },
    /// The runner stopped the command (a shutdown, or the step's time limit).
    #[error("`{command}` {why}")]
    Stopped {
        /// The command line, for the message.
        command: String,
        /// Why it was stopped.
        why: crate::process::Stopped,
    },
    /// The command succeeded but its output was not what the runner reads.
    #[error("could not read the output of `{command}`: {detail}")]
    Parse {
        /// The command line, for the message.
        command: String,
        /// What was wrong with the output.
        detail: String,
    },
    /// The remote could not be asked (at the start of a run, or by `doctor`).
    #[error("{remote} ({url}) cannot be reached: {said}; check its URL (`git remote -v`; `git remote set-url {remote} <url>` to change it), the network and git's credentials for this user")]
    Remote {
        /// The remote's name.
        remote: String,
        /// Its URL as configured.
        url: String,
        /// What git said.
        said: String,
        /// Decided from what git said.
        kind: CallFailureKind,
    },
    /// A merge met a conflict: nothing was merged, the merge aborted. `paths` are the files
    /// that conflict, `sides` both sides of them as the merge would leave them (for the
    /// repair), possibly empty.
    #[error("`{command}` failed: merge conflict in: {}{sides}; {hint}", .paths.join(", "))]
    MergeConflict {
        /// The command line, for the message.
        command: String,
        /// The files that conflict, as git named them.
        paths: Vec<String>,
        /// Both sides of each conflicting file, cut to size (or nothing).
        sides: String,
        /// What resolves it.
        hint: &'static str,
    },
    /// Files with conflict markers were about to be committed or merged.
    #[error("refusing to {what} in {}: merge conflict in: {} (conflict markers <<<<<<< or >>>>>>> left in them); resolve the conflicts first", .path.display(), .paths.join(", "))]
    ConflictMarkers {
        /// What was refused (`commit`, `count {branch} as up to date with main`).
        what: String,
        /// The work tree.
        path: PathBuf,
        /// The files that hold markers.
        paths: Vec<String>,
    },
    /// An unfinished merge, rebase, cherry-pick or revert was aborted before a commit of the
    /// runner; what the tree held is kept on a rescue ref.
    #[error("{op} was in progress in {} (unfinished: {}): aborted it rather than conclude it; what the tree held is kept on {rescue} (`git log -p {rescue}` shows it); nothing was committed", .path.display(), if .paths.is_empty() { "no file".to_string() } else { .paths.join(", ") })]
    Rescued {
        /// The operation (`a merge`, `a rebase`, …).
        op: &'static str,
        /// The work tree.
        path: PathBuf,
        /// The unmerged paths it left.
        paths: Vec<String>,
        /// The ref holding a commit of the tree as it was.
        rescue: String,
    },
    /// A commit was asked for on the default branch, which the runner never commits to.
    #[error("refusing to commit on {branch} in {}: check out the issue's feature branch first", .path.display())]
    CommitOnMain {
        /// The branch checked out.
        branch: String,
        /// The work tree.
        path: PathBuf,
    },
}

impl Kinded for RepoError {
    fn kind(&self) -> CallFailureKind {
        match self {
            RepoError::Command { kind, .. } => *kind,
            RepoError::Spawn { source, .. } => CallFailureKind::of_io(source),
            RepoError::Stopped {
                why: crate::process::Stopped::Shutdown,
                ..
            } => CallFailureKind::Cancelled,
            RepoError::Stopped {
                why: crate::process::Stopped::Deadline,
                ..
            } => CallFailureKind::StepDeadline,
            RepoError::NotARepo { .. } => CallFailureKind::NotFound,
            RepoError::Remote { kind, .. } => *kind,
            RepoError::ConflictMarkers { .. } | RepoError::MergeConflict { .. } => {
                CallFailureKind::Conflict
            }
            RepoError::Parse { .. }
            | RepoError::CommitOnMain { .. }
            | RepoError::Rescued { .. } => CallFailureKind::Other,
        }
    }
}

impl RepoError {
    /// The files of a conflict with main this error is (a merge that conflicts, or conflict
    /// markers refused): the typed answer the merge step reports as `MergeConflict`.
    pub fn conflict_paths(&self) -> Option<&[String]> {
        match self {
            RepoError::MergeConflict { paths, .. } | RepoError::ConflictMarkers { paths, .. } => {
                Some(paths)
            }
            _ => None,
        }
    }
}

pub(crate) fn exit_text(status: &Option<i32>) -> String {
    match status {
        Some(c) => c.to_string(),
        None => "killed by a signal".to_string(),
    }
}

const GIT_HINT: &str = "inspect the repository with the same git command";

/// What to do about a failed git command of this kind.
pub(super) fn hint_for(kind: CallFailureKind) -> &'static str {
    match kind {
        CallFailureKind::HookRejected => {
            "a git hook refused it (its words are above; the project's hooks are in .git/hooks or core.hooksPath)"
        }
        CallFailureKind::LockHeld => {
            "another git process holds a lock; if none is running, remove the stale lock file it names"
        }
        other => other.cause_and_fix().map_or(GIT_HINT, |(_, fix)| fix),
    }
}
