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
            RepoError::Parse { .. } | RepoError::CommitOnMain { .. } => CallFailureKind::Other,
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
        CallFailureKind::Permission => "check the permissions of the repository and the remote",
        _ => GIT_HINT,
    }
}
