//! What the runner keeps in `<project>/.claude/` for other tools to read: the state file (a
//! mirror of the journal's position; atomic writes, corrupt-file recovery, compatible with the
//! Node runner's `sdlc-state.json`) and the `auto-mode` flag read by the agent's skills; and
//! which files there are the runner's artifacts (kept out of git by `git::exclude`).

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fs::{self};
use std::io::{self};
use std::path::{Path, PathBuf};

/// Directory of the runner artifacts, relative to the project.
pub const ARTIFACT_DIR: &str = ".claude";
/// The state file in the Node runner's format, relative to the project; a mirror of the journal for tools that read it.
pub const STATE_FILE: &str = ".claude/sdlc-state.json";
/// The flag file that tells the agent's skills to run non-interactively, relative to the project.
pub const AUTO_MODE_FILE: &str = ".claude/auto-mode";

/// Name prefixes of every file a runner (this one or an older one) ever wrote in `.claude/`:
/// the state file and its temp and corrupt copies, the auto-mode flag, and the journal,
/// decision file and lock of older layouts. They never belong in git and never make a tree
/// dirty in the runner's eyes.
const ARTIFACT_PREFIXES: [&str; 6] = [
    "sdlc-state.json",
    ".sdlc-state.json",
    "auto-mode",
    "sdlc-journal.jsonl",
    "sdlc-decision.json",
    "sdlc-runner.lock",
];

/// Whether `path` (relative to the project root, `/`-separated) is a runner artifact.
pub fn is_runner_artifact(path: &str) -> bool {
    path.strip_prefix(".claude/")
        .filter(|name| !name.contains('/'))
        .is_some_and(|name| ARTIFACT_PREFIXES.iter().any(|p| name.starts_with(p)))
}

/// The `.git/info/exclude` lines that keep every runner artifact out of git, anchored to the
/// project root so that a nested `.claude/` elsewhere is untouched.
pub fn exclude_patterns() -> impl Iterator<Item = String> {
    ARTIFACT_PREFIXES
        .iter()
        .map(|p| format!("/{ARTIFACT_DIR}/{p}*"))
}

/// Refuses a `.claude` that is a symlink (the runner would write wherever it points), with
/// the fix; a missing one is fine (it is created when needed).
pub fn check_artifact_dir(project: &Path) -> Result<(), String> {
    let dir = project.join(ARTIFACT_DIR);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => Err(format!(
            "{} is a symlink; the runner does not write its state file and auto-mode flag through it (replace it with a directory: rm {0} && mkdir {0})",
            dir.display()
        )),
        Ok(m) if !m.is_dir() => Err(format!(
            "{} is not a directory (move it away: mv {0} {0}.old)",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// `.claude/` must be a real directory of the project: a symlink there would have the runner
/// write its files wherever it points.
fn artifact_dir(project: &Path) -> io::Result<PathBuf> {
    check_artifact_dir(project).map_err(io::Error::other)?;
    let dir = project.join(ARTIFACT_DIR);
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `sdlc-state.json`. Field names are the Node runner's, so an operator's existing state file
/// is read as is; unknown fields are ignored and missing ones take their defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StateFile {
    /// The lifecycle step in progress, 1 to 10 (0 before the first).
    pub current_step: u8,
    /// The last step that finished, 0 when none did.
    pub last_completed_step: u8,
    /// The issue the cycle works on.
    pub current_issue: Option<u32>,
    /// The same issue as its tracker names it (`#12`, `ENG-12`); absent in older files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_issue_ref: Option<String>,
    /// Its feature branch.
    pub current_branch: Option<String>,
    /// The spec directory's name for the issue.
    pub feature_name: Option<String>,
    /// Attempts per step, keyed by the step number as a string (the Node runner's format).
    pub retries: BTreeMap<String, u32>,
    /// The pid of the runner that wrote the file.
    pub runner_pid: Option<u32>,
    /// Set by a signal shutdown to the signal's name. The Node runner wrote `true`, read here as
    /// `"unknown"`; `false` reads as unset.
    #[serde(deserialize_with = "signal_shutdown_compat")]
    pub signal_shutdown: Option<String>,
    /// When the machine last changed state, RFC 3339.
    pub last_transition_at: Option<String>,
    /// The issue's pull request, once it has one.
    pub pr_number: Option<u32>,
}

fn signal_shutdown_compat<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Compat {
        Flag(bool),
        Name(String),
    }
    Ok(match Option::<Compat>::deserialize(d)? {
        None | Some(Compat::Flag(false)) => None,
        Some(Compat::Flag(true)) => Some("unknown".to_string()),
        Some(Compat::Name(name)) => Some(name),
    })
}

/// Where the state file of `project` is.
pub fn state_path(project: &Path) -> PathBuf {
    project.join(STATE_FILE)
}

/// Writes the state so that a crash at any moment leaves either the old or the new file (a
/// temp file renamed over the target). It is not fsync'd: the file mirrors the journal for
/// tools that read the old runner's format, and the journal (fsync'd) is the authority, so
/// after a power loss an older state file is harmless. That saves four fsyncs per step.
pub fn write_state(project: &Path, s: &StateFile) -> io::Result<()> {
    artifact_dir(project)?;
    let mut text = serde_json::to_string_pretty(s).map_err(io::Error::other)?;
    text.push('\n');
    crate::safe_fs::replace_unsynced(&state_path(project), text.as_bytes())?;
    crate::failpoint::point("state file written");
    Ok(())
}

/// Result of reading the state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateLoad {
    /// There is no state file (a fresh project).
    Missing,
    /// The file as read.
    Ok(StateFile),
    /// The file could not be read or parsed. It was moved aside to `backup` in the runner's
    /// archive (outside the work tree, so it can never make the tree dirty; when the move
    /// failed, `error` says so and `backup` is the path it would have had), so the runner
    /// starts from the journal instead of from a file it cannot trust.
    Corrupt {
        /// Why the file could not be trusted (and, when it failed, why it could not be moved).
        error: String,
        /// Where the bad file went.
        backup: PathBuf,
    },
}

/// Reads the state file; an unreadable or corrupt one is moved into `archive` (the runner's
/// own directory).
pub fn read_state(project: &Path, archive: &Path) -> StateLoad {
    let path = state_path(project);
    let text = match crate::safe_fs::read_no_follow(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return StateLoad::Missing,
        Err(e) => {
            return move_aside(
                &path,
                archive,
                format!("cannot read {}: {e}", path.display()),
            )
        }
    };
    match serde_json::from_slice::<StateFile>(&text) {
        Ok(s) => StateLoad::Ok(s),
        Err(e) => move_aside(
            &path,
            archive,
            format!("{} is not a valid state file: {e}", path.display()),
        ),
    }
}

/// The state file if it is there and valid, without any recovery (moving a corrupt file
/// aside): for readers that must not change anything on disk.
pub fn peek_state(project: &Path) -> Option<StateFile> {
    let bytes = crate::safe_fs::read_no_follow(&state_path(project)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn move_aside(path: &Path, archive: &Path, mut error: String) -> StateLoad {
    if let Err(e) = crate::safe_fs::create_private_dir(archive) {
        error.push_str(&format!("; {e}"));
    }
    let backup = (1u32..)
        .map(|n| archive.join(format!("sdlc-state.json.corrupt-{n}")))
        .find(|p| fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| archive.join("sdlc-state.json.corrupt"));
    if let Err(e) = fs::rename(path, &backup) {
        error.push_str(&format!(
            "; moving it aside to {} also failed: {e} (remove it by hand)",
            backup.display()
        ));
    }
    StateLoad::Corrupt { error, backup }
}

/// The `auto-mode` flag file: exists while the runner runs, so the agent's skills behave
/// non-interactively.
pub struct AutoMode;

impl AutoMode {
    /// Where the flag of `project` is.
    pub fn path(project: &Path) -> PathBuf {
        project.join(AUTO_MODE_FILE)
    }
}

/// Creates the flag (and `.claude/`) if missing; owner-only, never through a link.
pub fn create_auto_mode(project: &Path) -> io::Result<()> {
    artifact_dir(project)?;
    crate::safe_fs::open(&AutoMode::path(project), crate::safe_fs::Mode::Append).map(drop)
}

/// Returns whether a flag was there to remove.
pub fn remove_auto_mode(project: &Path) -> io::Result<bool> {
    match fs::remove_file(AutoMode::path(project)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether the flag is there.
pub fn auto_mode_exists(project: &Path) -> bool {
    AutoMode::path(project).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Open descriptors of this process on a replaced (deleted) file under `dir`.
    fn held_replaced(dir: &Path) -> usize {
        fs::read_dir("/proc/self/fd")
            .expect("/proc/self/fd")
            .flatten()
            .filter_map(|fd| fs::read_link(fd.path()).ok())
            .filter(|t| t.starts_with(dir) && t.to_string_lossy().ends_with(" (deleted)"))
            .count()
    }

    #[test]
    fn a_replaced_state_file_is_closed_aside_and_none_is_kept_open() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().canonicalize().unwrap();
        for step in 1..=20 {
            let s = StateFile {
                current_step: step,
                ..StateFile::default()
            };
            write_state(&dir, &s).unwrap();
            let read = fs::read_to_string(state_path(&dir)).unwrap();
            assert!(read.contains(&format!("\"currentStep\": {step}")), "{read}");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while held_replaced(&dir) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(held_replaced(&dir), 0, "replaced state files left open");
    }

    #[test]
    fn state_round_trips_atomically_without_leftover_temp_files() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            read_state(d.path(), &d.path().join("archive")),
            StateLoad::Missing
        );
        let mut s = StateFile {
            current_step: 4,
            last_completed_step: 3,
            current_issue: Some(42),
            current_branch: Some("42-login".into()),
            feature_name: Some("42-login".into()),
            runner_pid: Some(7),
            signal_shutdown: Some("SIGTERM".into()),
            ..StateFile::default()
        };
        s.retries.insert("4".into(), 2);
        write_state(d.path(), &s).unwrap();
        s.current_step = 5;
        write_state(d.path(), &s).unwrap();
        assert_eq!(
            read_state(d.path(), &d.path().join("archive")),
            StateLoad::Ok(s)
        );
        let names: Vec<_> = fs::read_dir(d.path().join(".claude"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["sdlc-state.json".to_string()]);
        let text = fs::read_to_string(state_path(d.path())).unwrap();
        assert!(text.contains("\"lastCompletedStep\": 3"), "{text}");
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn reads_the_node_runner_state_file() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join(".claude")).unwrap();
        fs::write(
            state_path(d.path()),
            r#"{"currentStep":7,"lastCompletedStep":6,"currentIssue":12,"currentBranch":"12-x",
               "featureName":null,"lastTransitionAt":"2026-04-01T10:00:00.000Z",
               "retries":{"6":1},"runnerPid":null,"prNumber":3,"signalShutdown":true,
               "someFutureField":{"a":1}}"#,
        )
        .unwrap();
        let StateLoad::Ok(s) = read_state(d.path(), &d.path().join("archive")) else {
            panic!("not ok")
        };
        assert_eq!(s.last_completed_step, 6);
        assert_eq!(s.current_issue, Some(12));
        assert_eq!(s.retries.get("6"), Some(&1));
        assert_eq!(s.signal_shutdown.as_deref(), Some("unknown"));
        assert_eq!(s.pr_number, Some(3));

        fs::write(state_path(d.path()), r#"{"signalShutdown":false}"#).unwrap();
        let StateLoad::Ok(s) = read_state(d.path(), &d.path().join("archive")) else {
            panic!("not ok")
        };
        assert_eq!(s, StateFile::default());
    }

    #[test]
    fn corrupt_state_is_moved_aside_with_a_fresh_number() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join(".claude")).unwrap();
        for n in 1..=2 {
            fs::write(state_path(d.path()), "{\"currentStep\": 3,").unwrap();
            match read_state(d.path(), &d.path().join("archive")) {
                StateLoad::Corrupt { error, backup } => {
                    assert!(error.contains("sdlc-state.json"), "{error}");
                    assert!(backup.ends_with(format!("archive/sdlc-state.json.corrupt-{n}")));
                    assert!(backup.is_file());
                }
                other => panic!("{other:?}"),
            }
            assert!(!state_path(d.path()).exists());
        }
        // Wrong types are as corrupt as broken syntax.
        fs::write(state_path(d.path()), r#"{"currentStep":"three"}"#).unwrap();
        assert!(matches!(
            read_state(d.path(), &d.path().join("archive")),
            StateLoad::Corrupt { .. }
        ));
        assert_eq!(
            read_state(d.path(), &d.path().join("archive")),
            StateLoad::Missing
        );
    }

    #[test]
    fn auto_mode_flag_lifecycle() {
        let d = tempfile::tempdir().unwrap();
        assert!(!auto_mode_exists(d.path()));
        create_auto_mode(d.path()).unwrap();
        create_auto_mode(d.path()).unwrap();
        assert!(auto_mode_exists(d.path()));
        assert!(remove_auto_mode(d.path()).unwrap());
        assert!(!remove_auto_mode(d.path()).unwrap());
        assert!(!auto_mode_exists(d.path()));
    }

    #[test]
    fn a_symlinked_claude_dir_is_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), d.path().join(".claude")).unwrap();
        let err = write_state(d.path(), &StateFile::default()).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert!(create_auto_mode(d.path()).is_err());
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
