//! The git port: the project's repository as the runner sees it. Its error is
//! [`GitError`]: a failed command carries the kind decided from git's own words when the
//! error is made (`CallFailureKind::of_git`: hook rejected, lock held, lost race, network…),
//! so nothing downstream reads git's text.
//!
//! Branch names are the runner's `<issue>-<slug>`; "main" is the default branch.

use crate::call_failure::{CallFailureKind, Kinded};
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
    /// startIssue (builtin): `branch` created where HEAD is (main) and checked out; an
    /// existing branch of that name is checked out as it stands, and one only origin has is
    /// made from origin's: its head is returned (`None`: the branch was not origin's).
    fn start_branch(&self, branch: &str) -> Result<Option<String>, GitError>;
    /// A merge conflict's repair, before the agent: origin's main merged into `branch`,
    /// stopping at the conflict (the merge in progress, the files returned, their markers in
    /// the tree); empty when nothing conflicts.
    fn start_main_merge(&self, branch: &str) -> Result<Vec<String>, GitError>;
    /// A merge conflict's repair, after the agent: the merge in progress committed with
    /// `message`; a file still holding markers is `ConflictMarkers` (the merge aborted, the
    /// tree kept on a rescue ref). `Ok(false)`: no merge was in progress.
    fn conclude_merge(&self, message: &str) -> Result<bool, GitError>;
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
    fn branch_on_origin(&self, branch: &str) -> Result<BranchOnOrigin, GitError>;
    /// Whether commit `older` is `newer` or one of its ancestors.
    fn contains_commit(&self, newer: &str, older: &str) -> Result<bool, GitError>;
    /// Whether `commit` is, or precedes, a commit this clone pushed to origin's `branch`:
    /// work that left from here (the runner's or its agent's), not a commit only a fetch
    /// brought.
    fn pushed_from_here(&self, branch: &str, commit: &str) -> Result<bool, GitError>;
    /// The last commit this clone pushed to origin's `branch`, if it knows one.
    fn last_pushed(&self, branch: &str) -> Result<Option<String>, GitError>;
    /// Records the repository's hooks and every configuration entry that can run a program or
    /// redirect a fetch or a push, as the operator set them up at the session's start, and
    /// pins them on every later git call of the runner. `resume`: the session continues one
    /// that did not end; that session's record stands, and what differs from it is put back
    /// and returned, one line each.
    fn record_trust(&self, resume: bool) -> Result<Vec<String>, GitError>;
    /// What an agent step changed of the recorded hooks and configuration, one line each,
    /// after putting them back (the step's `GIT_TAMPERED` failure when not empty). `Err` when
    /// they cannot be read or put back.
    fn undo_tampering(&self) -> Result<Vec<String>, GitError>;
    /// The files `branch` changed since it left the base branch, each with its text at the
    /// base and at the head (the test-weakening check, `crate::weakening`). A port that
    /// cannot tell (the in-memory fakes) answers none.
    fn changed_files(&self, _branch: &str) -> Result<Vec<crate::weakening::ChangedFile>, GitError> {
        Ok(Vec::new())
    }
    /// The commit the local `branch` is at (`None`: no such branch): the head the
    /// test-weakening check compared, which it records once it lets it through. A port that
    /// cannot tell (the in-memory fakes) answers none, and each check runs again.
    fn branch_head(&self, _branch: &str) -> Result<Option<String>, GitError> {
        Ok(None)
    }
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

/// Where origin's copy of a branch stands, read after one fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchOnOrigin {
    /// Origin's head of the branch; `None` when origin has no such branch (deleted).
    pub head: Option<String>,
    /// The branch's local head: what the runner committed and pushed.
    pub local: Option<String>,
    /// Origin's main.
    pub main: Option<String>,
}

/// Why a git (or forge CLI) call failed; every message names the command and what to check.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
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
    #[error("`{command}` failed{}: {stderr}; {hint}", .ended.in_parentheses())]
    Command {
        /// The command line, for the message.
        command: String,
        /// How it ended: an exit code, a signal, an HTTP status, or none of those.
        ended: CallEnd,
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
    /// CI failed on the commit main would hold: `branch`'s verified commit merged onto
    /// origin's `main` at `base`, which moved since CI's verdict on the branch. Nothing was
    /// pushed; `checks` says what failed.
    #[error("CI failed on {branch} merged onto {main} {base} (the commit {merged} main would hold); nothing was merged: the branch's change and {main}'s newer commits break together, so the branch must work on top of {main}\n{checks}")]
    CiFailedTogether {
        /// The issue's branch.
        branch: String,
        /// The default branch's name.
        main: String,
        /// Origin's main the merge was built on (short).
        base: String,
        /// The merge commit CI failed (short).
        merged: String,
        /// The failing check and the end of its output.
        checks: String,
    },
    /// CI failed on `branch` at `commit`, whose tree is the one main would hold (main is in
    /// it): the failure is the branch's own. Nothing was pushed; `checks` says what failed.
    #[error("CI failed on {branch} at {commit}, the very tree {main} would hold (no newer commit of {main} is missing from it); nothing was merged: the failure is the branch's own\n{checks}")]
    CiFailedAlone {
        /// The issue's branch.
        branch: String,
        /// The default branch's name.
        main: String,
        /// The commit CI failed (short).
        commit: String,
        /// The failing check and the end of its output.
        checks: String,
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

impl Kinded for GitError {
    fn kind(&self) -> CallFailureKind {
        match self {
            GitError::Command { kind, .. } => *kind,
            GitError::Spawn { source, .. } => CallFailureKind::of_io(source),
            GitError::Stopped { why, .. } => CallFailureKind::of_stop(*why),
            GitError::NotARepo { .. } => CallFailureKind::NotFound,
            GitError::Remote { kind, .. } => *kind,
            GitError::ConflictMarkers { .. } | GitError::MergeConflict { .. } => {
                CallFailureKind::Conflict
            }
            GitError::CiFailedTogether { .. } | GitError::CiFailedAlone { .. } => {
                CallFailureKind::CiFailedTogether
            }
            GitError::Parse { .. } | GitError::CommitOnMain { .. } | GitError::Rescued { .. } => {
                CallFailureKind::Other
            }
        }
    }
}

impl GitError {
    /// The files of a conflict with main this error is (a merge that conflicts, or conflict
    /// markers refused): the typed answer the merge step reports as `MergeConflict`.
    pub fn conflict_paths(&self) -> Option<&[String]> {
        match self {
            GitError::MergeConflict { paths, .. } | GitError::ConflictMarkers { paths, .. } => {
                Some(paths)
            }
            _ => None,
        }
    }
}

/// How a failed call ended, as its message says it. Only a process that ran and was ended by
/// a signal is "killed by a signal": a call the runner stopped at its time limit, an API's
/// refusal or a file that could not be written says what happened in its own words instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEnd {
    /// The process exited with this code.
    Exit(i32),
    /// A signal ended the process.
    Signal,
    /// The server answered with this HTTP status.
    Http(u16),
    /// No process exit or answer tells it (a time limit, a file, an API client's failure):
    /// the message's details say what happened.
    Otherwise,
}

impl CallEnd {
    /// A process's end: its exit code, or `Signal` when it has none.
    pub fn of_exit(code: Option<i32>) -> CallEnd {
        code.map_or(CallEnd::Signal, CallEnd::Exit)
    }

    /// ` (exit 1)`, ` (killed by a signal)`, ` (HTTP 404)`, or nothing.
    pub fn in_parentheses(&self) -> String {
        match self {
            CallEnd::Otherwise => String::new(),
            _ => format!(" ({self})"),
        }
    }
}

impl std::fmt::Display for CallEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallEnd::Exit(code) => write!(f, "exit {code}"),
            CallEnd::Signal => f.write_str("killed by a signal"),
            CallEnd::Http(status) => write!(f, "HTTP {status}"),
            CallEnd::Otherwise => f.write_str("failed"),
        }
    }
}

/// The four files a spec directory must hold, non-empty.
pub const SPEC_FILES: [&str; 4] = [
    "requirements.md",
    "design.md",
    "tasks.md",
    "feature.gherkin",
];

/// The issue number of a `<N>-<slug>` name, or of a `<TEAM>-<N>-<slug>` one (a Linear
/// team's key, upper-case letters and digits, leads the name: `ENG-12-add-x`).
pub fn leading_issue(name: &str) -> Option<u32> {
    let number = |name: &str| -> Option<u32> {
        let (num, rest) = name.split_once('-')?;
        if rest.is_empty() || num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        num.parse().ok()
    };
    number(name).or_else(|| {
        let (team, rest) = name.split_once('-')?;
        let key = team.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && team
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if key {
            number(rest)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(ended: CallEnd) -> String {
        GitError::Command {
            command: "GitLab API".into(),
            ended,
            stderr: "401 Unauthorized".into(),
            hint: "check the token",
            kind: CallFailureKind::Auth,
        }
        .to_string()
    }

    /// Only a process a signal ended reads "killed by a signal": an API's refusal, a file or
    /// a time limit says what happened in its own words.
    #[test]
    fn a_failure_says_how_it_ended_and_nothing_it_did_not() {
        assert_eq!(
            failed(CallEnd::Otherwise),
            "`GitLab API` failed: 401 Unauthorized; check the token"
        );
        assert_eq!(
            failed(CallEnd::Http(401)),
            "`GitLab API` failed (HTTP 401): 401 Unauthorized; check the token"
        );
        assert_eq!(
            failed(CallEnd::of_exit(Some(128))),
            "`GitLab API` failed (exit 128): 401 Unauthorized; check the token"
        );
        assert_eq!(
            failed(CallEnd::of_exit(None)),
            "`GitLab API` failed (killed by a signal): 401 Unauthorized; check the token"
        );
    }
}
