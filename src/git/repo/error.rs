//! What to do about each kind of failed git command (the error itself is the git port's,
//! `ports::git::GitError`).

use crate::call_failure::CallFailureKind;

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
