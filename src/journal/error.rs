//! Why the journal could not be read or written.

use super::FORMAT;
use std::io;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
/// Why the journal could not be read or written; each message says what to do.
pub enum JournalError {
    #[error("{}: {action}: {source} ({})", path.display(), io_fix(source, path))]
    /// A file operation failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What the runner was doing (`append`, `open`, …).
        action: &'static str,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error("{}:{line}: not a journal record ({message}); the journal was damaged or edited: move it aside to start over, losing the session's counters", path.display())]
    /// A line before the last one is not a journal record.
    Garbage {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// What the parser said.
        message: String,
    },
    #[error("{}:{line}: {message}; the journal was damaged or edited: move it aside to start over, losing the session's counters", path.display())]
    /// A line is a record but does not follow from the ones before (sequence, session).
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// What is inconsistent.
        message: String,
    },
    #[error("{}: no session is open: call begin or continue_session before appending (a bug in the runner)", path.display())]
    /// An append without an open session: a bug in the runner.
    NoSession {
        /// The file.
        path: PathBuf,
    },
    /// A line written by a newer runner: reading on (or cutting it as torn) would lose it.
    #[error("{}:{line}: a record of journal format {version}, newer than the format {FORMAT} this runner reads; run the sdlc-runner version that wrote it (the journal was left as it is)", path.display())]
    NewerFormat {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// The format the line says it has.
        version: u32,
    },
    /// A complete record of a kind this runner does not read (a newer runner's): cutting it
    /// as torn would lose it.
    #[error("{}:{line}: a complete record of {kind} that this runner does not read ({message}); it was probably written by a newer sdlc-runner: run that version, or move the journal aside to start over, losing the session's counters (the journal was left as it is)", path.display())]
    UnknownRecord {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// Its `kind`, as read.
        kind: String,
        /// What the parser said.
        message: String,
    },
    /// The file the runner appends to is no longer the journal (removed, replaced): writing on
    /// would record progress nobody can read back.
    #[error("{what}; the runner stops rather than write into a file nobody will read")]
    Vanished {
        /// What happened to the file.
        what: String,
    },
}

/// What to do about a journal file operation that failed with `source`, in the terms of the
/// directory the journal lives in (the runner's state directory, `<git dir>/sdlc-runner/`).
fn io_fix(source: &io::Error, path: &std::path::Path) -> String {
    let dir = path
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| ".".into());
    match crate::call_failure::CallFailureKind::of_io(source) {
        crate::call_failure::CallFailureKind::DiskFull => format!(
            "the disk holding {dir} is full: free space there (`df -h {dir}`) and run again; the journal up to its last complete line is kept"
        ),
        crate::call_failure::CallFailureKind::Permission => format!(
            "check that {dir}, the runner's state directory, and the journal in it belong to you and are writable (`ls -la {dir}`)"
        ),
        _ => format!("check {dir}, the runner's state directory, and the disk it is on"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(errno: i32) -> String {
        JournalError::Io {
            path: PathBuf::from("/p/.git/sdlc-runner/journal.jsonl"),
            action: "append",
            source: io::Error::from_raw_os_error(errno),
        }
        .to_string()
    }

    #[test]
    fn a_full_disk_says_the_disk_is_full_and_where_not_to_check_permissions() {
        for errno in [28, 122] {
            let text = message(errno);
            assert!(
                text.contains("the disk holding /p/.git/sdlc-runner is full"),
                "{text}"
            );
            assert!(!text.contains(".claude"), "{text}");
            assert!(!text.contains("permission"), "{text}");
        }
    }

    #[test]
    fn a_refused_write_names_the_state_directory() {
        let text = message(13);
        assert!(
            text.contains("check that /p/.git/sdlc-runner, the runner's state directory"),
            "{text}"
        );
        assert!(!text.contains(".claude"), "{text}");
    }
}
