//! What kind of failure a git, gh or tracker call had, decided once, where the call is made
//! (the adapters in `git`, `forge` and `tracker`), from what the tool printed or the error
//! the system returned. Everything downstream (the network patience of the driver, the merge
//! retry on a lost push race) decides by this kind, never by the text.

pub mod conditional;
pub mod http_answer;
mod transient_network;

pub use conditional::Conditional;
pub use http_answer::{
    gh_api_args, gh_graphql_args, path_segment, HttpAnswer, SECONDARY_LIMIT_SECS,
};

use std::io;

/// A failed call, by what made it fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallFailureKind {
    /// Connection, DNS, TLS, an HTTP 5xx: the network or the service, likely to clear.
    Network,
    /// The remote moved while we worked (a push race lost): refresh and try again.
    LostRace,
    /// Another git process holds a lock file (`index.lock`, a ref lock).
    LockHeld,
    /// Read-only file system, missing permission, HTTP 403.
    Permission,
    /// The repository, ref, issue or pull request does not exist (HTTP 404).
    NotFound,
    /// A git hook (local or the server's) refused the commit or the push.
    HookRejected,
    /// A merge conflict.
    Conflict,
    /// The forge's rules for the base branch refuse the merge (branch protection, a required
    /// review or check, a draft PR): a person's to satisfy, never the code to repair.
    Policy,
    /// The forge's rules want the branch up to date with the base branch before the merge, and
    /// the base branch moved since (GitHub's `BEHIND`): the machine has the branch updated and
    /// CI passes the new head; nobody's fault.
    Behind,
    /// CI failed on the commit main would hold (the branch's verified commit merged onto a
    /// main that moved since CI's verdict): nothing was merged, and the combination is the
    /// issue's to repair, as a failure of monitorCI.
    CiFailedTogether,
    /// The base branch takes its merges through the forge's merge queue (GitHub's): the PR
    /// is in the queue with the commit CI passed, or must be put there, and nothing is merged
    /// yet. The machine waits for the queue and looks again; nobody's fault.
    Queued,
    /// The call ran past its own time limit and was stopped (a dead network, a hung tool).
    TimedOut,
    /// The step the call served ran out of time (`timeoutMin`); its process group was killed.
    StepDeadline,
    /// The runner was asked to stop (a signal); the call's process group was killed.
    Cancelled,
    /// The remote does not answer as a repository (a URL to a missing directory or repository,
    /// a host that refuses the protocol): no wait helps, a person fixes the URL.
    Unreachable,
    /// The remote refused git's credentials (or git had none to offer without a prompt).
    Auth,
    /// A branch git was asked to check out is checked out in another worktree.
    WorktreeConflict,
    /// The disk (or the user's quota) is full.
    DiskFull,
    /// GitHub's rate limit (primary or secondary), told from the answer's status and
    /// headers (`http_answer.rs`): nothing is wrong but the pace; the call may be made again
    /// after `wait_secs`.
    RateLimited {
        /// Seconds until GitHub lets the caller in again (the limit's reset, `Retry-After`,
        /// or one minute).
        wait_secs: u64,
    },
    /// Anything else: a bad argument, a refusal of another kind.
    Other,
}

impl CallFailureKind {
    /// Worth waiting for and trying again unchanged: the network's failures.
    pub fn is_transient(self) -> bool {
        matches!(self, CallFailureKind::Network | CallFailureKind::TimedOut)
    }

    /// The runner's own environment failed the call (the remote, credentials, a lock, another
    /// worktree, the disk, permissions), not the work it was asked to do: no issue is to blame
    /// and no retry of the attempt helps.
    pub fn is_environment(self) -> bool {
        matches!(
            self,
            CallFailureKind::Unreachable
                | CallFailureKind::Auth
                | CallFailureKind::LockHeld
                | CallFailureKind::WorktreeConflict
                | CallFailureKind::DiskFull
                | CallFailureKind::Permission
        )
    }

    /// What the failure is and what fixes it, in an operator's words, for an environment kind.
    pub fn cause_and_fix(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            CallFailureKind::Unreachable => (
                "the remote cannot be reached",
                "check origin's URL (`git remote -v`, `git remote set-url origin <url>`) and the network",
            ),
            CallFailureKind::Auth => (
                "the remote refused git's credentials",
                "renew the credentials (token, credential helper or SSH key) of the user the runner runs as",
            ),
            CallFailureKind::LockHeld => (
                "another git process holds a lock",
                "let it finish, or remove the stale lock file it names if no git runs",
            ),
            CallFailureKind::WorktreeConflict => (
                "the branch is checked out in another worktree",
                "check out another branch there (`git worktree list` names the worktree)",
            ),
            CallFailureKind::DiskFull => (
                "the disk is full",
                "free space on the disk that holds the project and its git directory",
            ),
            CallFailureKind::Permission => (
                "permission denied",
                "check the permissions of the repository, its git directory and the remote",
            ),
            _ => return None,
        })
    }

    /// The kind of a call this runner stopped before it ended.
    pub fn of_stop(why: crate::process::Stopped) -> CallFailureKind {
        match why {
            crate::process::Stopped::Shutdown | crate::process::Stopped::Withdrawn => {
                CallFailureKind::Cancelled
            }
            crate::process::Stopped::Deadline => CallFailureKind::StepDeadline,
        }
    }

    /// The kind of an error the system returned for the call itself (it could not be started,
    /// or this runner stopped it).
    pub fn of_io(e: &io::Error) -> CallFailureKind {
        if let Some(why) = crate::process::stopped(e) {
            return CallFailureKind::of_stop(why);
        }
        match e.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                CallFailureKind::Permission
            }
            io::ErrorKind::NotFound => CallFailureKind::NotFound,
            io::ErrorKind::TimedOut => CallFailureKind::TimedOut,
            io::ErrorKind::WouldBlock | io::ErrorKind::AlreadyExists => CallFailureKind::LockHeld,
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => CallFailureKind::DiskFull,
            _ => CallFailureKind::Other,
        }
    }

    /// The kind of a failed git command from its error output (`LC_ALL=C`).
    pub fn of_git(stderr: &str) -> CallFailureKind {
        let text = stderr.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
        if has(&["no space left on device", "disk quota exceeded"]) {
            CallFailureKind::DiskFull
        } else if has(&["is already checked out at", "is already used by worktree"]) {
            CallFailureKind::WorktreeConflict
        } else if has(&["conflict (", "automatic merge failed", "merge conflict in"]) {
            CallFailureKind::Conflict
        } else if has(&[
            "index.lock': file exists",
            ".lock': file exists",
            "another git process seems to be running",
        ]) {
            CallFailureKind::LockHeld
        } else if has(&[
            "[rejected]",
            "(fetch first)",
            "(non-fast-forward)",
            "(stale info)",
            "updates were rejected because",
            "but expected",
            "incorrect old value provided",
        ]) {
            CallFailureKind::LostRace
        } else if has(&[
            "hook declined",
            "pre-receive hook",
            "pre-push hook",
            "hook failed",
            "hook rejected",
        ]) {
            CallFailureKind::HookRejected
        } else if transient_network::is_transient(&text) {
            CallFailureKind::Network
        } else if has(&[
            "authentication failed",
            "could not read username",
            "could not read password",
            "terminal prompts disabled",
            "invalid username or password",
            "the requested url returned error: 401",
        ]) {
            CallFailureKind::Auth
        } else if text.contains("failed to push some refs") {
            // Refused before any ref was rejected by the remote: the local pre-push hook.
            CallFailureKind::HookRejected
        } else if has(&[
            "read-only file system",
            "permission denied",
            "insufficient permission",
            "the requested url returned error: 403",
        ]) {
            CallFailureKind::Permission
        } else if has(&[
            "does not appear to be a git repository",
            "could not read from remote repository",
            "repository not found",
        ]) {
            CallFailureKind::Unreachable
        } else if has(&[
            "not a git repository",
            "couldn't find remote ref",
            "unknown revision",
            "did not match any file",
            "the requested url returned error: 404",
        ]) {
            CallFailureKind::NotFound
        } else {
            CallFailureKind::Other
        }
    }

    /// The kind of a failed `gh` command from its error output.
    pub fn of_gh(stderr: &str) -> CallFailureKind {
        let text = stderr.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
        if transient_network::is_transient(&text) {
            CallFailureKind::Network
        } else if has(&[
            "http 403",
            "resource not accessible",
            "must have push access",
            "permission",
        ]) {
            CallFailureKind::Permission
        } else if has(&[
            "http 404",
            "could not resolve to",
            "no pull requests found",
            "not found",
        ]) {
            CallFailureKind::NotFound
        } else if has(&["not mergeable", "merge conflict"]) {
            CallFailureKind::Conflict
        } else if has(&["head branch was modified", "base branch was modified"]) {
            CallFailureKind::LostRace
        } else {
            CallFailureKind::Other
        }
    }
}

/// An error that knows its [`CallFailureKind`].
pub trait Kinded {
    /// What made the call fail.
    fn kind(&self) -> CallFailureKind;
}

impl Kinded for io::Error {
    fn kind(&self) -> CallFailureKind {
        CallFailureKind::of_io(self)
    }
}

#[cfg(test)]
mod tests {
    use super::CallFailureKind as K;
    use super::*;

    /// Real git messages (git 2.4x, `LC_ALL=C`).
    #[test]
    fn git_failures_are_classified_by_what_git_printed() {
        for (text, kind) in [
            (
                "To /tmp/origin.git\n ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs to '/tmp/origin.git'\nhint: Updates were rejected because the remote contains work that you do not\nhint: have locally.",
                K::LostRace,
            ),
            (
                "To /tmp/origin.git\n ! [rejected]        7-x -> 7-x (non-fast-forward)\nerror: failed to push some refs to '/tmp/origin.git'",
                K::LostRace,
            ),
            (
                "To /tmp/origin.git\n ! [rejected]        7-x -> 7-x (stale info)\nerror: failed to push some refs to '/tmp/origin.git'",
                K::LostRace,
            ),
            (
                "error: cannot lock ref 'refs/heads/main': is at 1a2b but expected 3c4d",
                K::LostRace,
            ),
            (
                "fatal: Unable to create '/p/.git/index.lock': File exists.\n\nAnother git process seems to be running in this repository, e.g.\nan editor opened by 'git commit'.",
                K::LockHeld,
            ),
            (
                "error: failed to push some refs to '/tmp/origin.git'",
                K::HookRejected,
            ),
            (
                "fatal: unable to access 'https://github.com/o/r.git/': Could not resolve host: github.com\nerror: failed to push some refs to 'https://github.com/o/r.git'",
                K::Network,
            ),
            (
                "remote: refusing: no pushes on Fridays\nTo /tmp/origin.git\n ! [remote rejected] main -> main (pre-receive hook declined)\nerror: failed to push some refs to '/tmp/origin.git'",
                K::HookRejected,
            ),
            (
                "CONFLICT (content): Merge conflict in src/lib.rs\nAutomatic merge failed; fix conflicts and then commit the result.",
                K::Conflict,
            ),
            (
                "fatal: unable to access 'https://github.com/o/r.git/': Could not resolve host: github.com",
                K::Network,
            ),
            (
                "error: RPC failed; curl 56 OpenSSL SSL_read: Connection reset by peer, errno 104\nfatal: the remote end hung up unexpectedly",
                K::Network,
            ),
            (
                "error: insufficient permission for adding an object to repository database .git/objects",
                K::Permission,
            ),
            (
                "fatal: could not create work tree dir 'x': Read-only file system",
                K::Permission,
            ),
            (
                "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.",
                K::Permission,
            ),
            ("ERROR: Repository not found.", K::Unreachable),
            (
                "fatal: 'origin' does not appear to be a git repository\nfatal: Could not read from remote repository.",
                K::Unreachable,
            ),
            ("fatal: couldn't find remote ref 7-x", K::NotFound),
            (
                "error: pathspec 'x' did not match any file(s) known to git",
                K::NotFound,
            ),
            ("fatal: bad revision 'zz'", K::Other),
            // A remote URL that points at a directory that is gone.
            (
                "fatal: '/tmp/p/moved-away.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.",
                K::Unreachable,
            ),
            (
                "remote: Invalid username or password.\nfatal: Authentication failed for 'https://github.com/o/r.git/'",
                K::Auth,
            ),
            (
                "fatal: could not read Username for 'https://github.com': terminal prompts disabled",
                K::Auth,
            ),
            // git 2.4x, and git before 2.42.
            (
                "fatal: 'main' is already used by worktree at '/tmp/p/project'",
                K::WorktreeConflict,
            ),
            (
                "fatal: 'main' is already checked out at '/tmp/p/project'",
                K::WorktreeConflict,
            ),
            (
                "error: unable to write file .git/objects/3f/1a2b: No space left on device\nfatal: unable to write new index file",
                K::DiskFull,
            ),
            (
                "fatal: Unable to create '/p/.git/index.lock': No space left on device",
                K::DiskFull,
            ),
            (
                "error: cannot lock ref 'refs/heads/7-x': Unable to create '/p/.git/refs/heads/7-x.lock': File exists.",
                K::LockHeld,
            ),
            ("", K::Other),
        ] {
            assert_eq!(K::of_git(text), kind, "{text}");
        }
    }

    /// Real gh messages.
    #[test]
    fn gh_failures_are_classified_by_what_gh_printed() {
        for (text, kind) in [
            (
                "error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com",
                K::Network,
            ),
            ("HTTP 502: 502 Bad Gateway", K::Network),
            (
                "Post \"https://api.github.com/graphql\": dial tcp: lookup api.github.com: no such host",
                K::Network,
            ),
            (
                "HTTP 403: Resource not accessible by integration (https://api.github.com/repos/o/r/issues/9)",
                K::Permission,
            ),
            (
                "GraphQL: Could not resolve to an issue or pull request with the number of 99999. (repository.issue)",
                K::NotFound,
            ),
            ("no pull requests found for branch \"7-x\"", K::NotFound),
            (
                "X Pull request #12 is not mergeable: the merge commit cannot be cleanly created.",
                K::Conflict,
            ),
            (
                "GraphQL: Head branch was modified. Review and try the merge again. (mergePullRequest)",
                K::LostRace,
            ),
            ("HTTP 401: Bad credentials (https://api.github.com/graphql)", K::Other),
        ] {
            assert_eq!(K::of_gh(text), kind, "{text}");
        }
    }

    #[test]
    fn system_errors_and_stops_are_classified_by_their_type() {
        let io = |k| io::Error::new(k, "x");
        assert_eq!(
            K::of_io(&io(io::ErrorKind::PermissionDenied)),
            K::Permission
        );
        assert_eq!(
            K::of_io(&io(io::ErrorKind::ReadOnlyFilesystem)),
            K::Permission
        );
        assert_eq!(K::of_io(&io(io::ErrorKind::NotFound)), K::NotFound);
        assert_eq!(K::of_io(&io(io::ErrorKind::Other)), K::Other);
        let stopped = |why| io::Error::new(io::ErrorKind::Interrupted, why);
        assert_eq!(
            K::of_io(&stopped(crate::process::Stopped::Shutdown)),
            K::Cancelled
        );
        assert_eq!(
            K::of_io(&stopped(crate::process::Stopped::Deadline)),
            K::StepDeadline
        );
        assert!(K::Network.is_transient() && K::TimedOut.is_transient());
        assert!(!K::StepDeadline.is_transient() && !K::Cancelled.is_transient());
        assert!(!K::LostRace.is_transient() && !K::Permission.is_transient());
    }

    #[test]
    fn the_environments_kinds_name_their_cause_and_fix() {
        for k in [
            K::Unreachable,
            K::Auth,
            K::LockHeld,
            K::WorktreeConflict,
            K::DiskFull,
            K::Permission,
        ] {
            assert!(k.is_environment(), "{k:?}");
            assert!(k.cause_and_fix().is_some(), "{k:?}");
        }
        for k in [
            K::Conflict,
            K::HookRejected,
            K::LostRace,
            K::Network,
            K::Other,
        ] {
            assert!(!k.is_environment(), "{k:?}");
            assert!(k.cause_and_fix().is_none(), "{k:?}");
        }
    }
}
