//! What the runner keeps in `<project>/.claude/` for other tools to read: the state file (a
//! mirror of the journal's position; atomic writes, corrupt-file recovery, compatible with the
//! Node runner's `sdlc-state.json`) and the `auto-mode` flag read by the agent's skills; the
//! single-runner lock (in the runner directory, see `runner_dir`); and keeping every runner
//! file, including renamed and temporary copies, out of git through `.git/info/exclude`.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
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

/// Keeps the artifacts out of git through `.git/info/exclude`, which no agent command
/// (`git clean -fd`, `git checkout -- .`) can delete or revert, unlike a `.gitignore`
/// (docs/design-notes.md). Artifacts a project once committed are removed from the index
/// (the file on disk stays). Idempotent.
pub fn exclude_artifacts(project: &Path) -> io::Result<()> {
    let patterns: Vec<String> = exclude_patterns().collect();
    add_excludes(
        project,
        &patterns,
        "# sdlc-runner artifacts (with their temporary and renamed copies)",
    )?;
    let tracked = git_stdout(project, &["ls-files", "-z", "--", ARTIFACT_DIR])?;
    let tracked: Vec<&str> = tracked
        .split('\0')
        .filter(|p| is_runner_artifact(p))
        .collect();
    if !tracked.is_empty() {
        let mut args = vec!["rm", "--cached", "--quiet", "--"];
        args.extend(tracked);
        git_stdout(project, &args)?;
    }
    Ok(())
}

/// The clone's `info/exclude` file (`--git-path` resolves worktrees and submodules too).
pub fn exclude_file(project: &Path) -> io::Result<PathBuf> {
    let exclude = PathBuf::from(git_stdout(
        project,
        &["rev-parse", "--git-path", "info/exclude"],
    )?);
    Ok(if exclude.is_absolute() {
        exclude
    } else {
        project.join(exclude)
    })
}

/// The exclude file and the `patterns` it lacks.
pub fn missing_excludes(project: &Path, patterns: &[String]) -> io::Result<(PathBuf, Vec<String>)> {
    let exclude = exclude_file(project)?;
    let existing = match fs::read_to_string(&exclude) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let present: Vec<&str> = existing.lines().map(str::trim).collect();
    let missing = patterns
        .iter()
        .filter(|p| !present.contains(&p.as_str()))
        .cloned()
        .collect();
    Ok((exclude, missing))
}

/// Appends the `patterns` the exclude file lacks under a `heading` comment, never through a
/// symbolic link; returns how many it added.
pub fn add_excludes(project: &Path, patterns: &[String], heading: &str) -> io::Result<usize> {
    let (exclude, missing) = missing_excludes(project, patterns)?;
    if missing.is_empty() {
        return Ok(0);
    }
    if let Some(parent) = exclude.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
        .open(&exclude)?;
    let ends_open = f.metadata()?.len() > 0 && {
        use std::io::{Read, Seek, SeekFrom};
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        last[0] != b'\n'
    };
    let mut text = String::new();
    if ends_open {
        text.push('\n');
    }
    text.push_str(heading);
    text.push('\n');
    for p in &missing {
        text.push_str(p);
        text.push('\n');
    }
    f.write_all(text.as_bytes())?;
    crate::stats::fsynced();
    f.sync_all()?;
    Ok(missing.len())
}

fn git_stdout(dir: &Path, args: &[&str]) -> io::Result<String> {
    let out = crate::process::git_output(dir, args)?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[derive(Debug, thiserror::Error)]
/// Why the runner lock of a project could not be taken.
pub enum LockError {
    /// Another runner holds it.
    #[error(
        "another sdlc-runner ({}) is running on {}; stop it first, or wait for it to finish",
        pid_text(.pid),
        .project.display()
    )]
    Held {
        /// The holder's pid as it wrote it in the lock file; `None` when unreadable.
        pid: Option<u32>,
        /// The project it runs on.
        project: PathBuf,
    },
    /// The lock file could not be opened, locked or written.
    #[error("cannot use the lock file {}: {source}; check that the runner directory is writable and the lock is not a symlink", .path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

fn pid_text(pid: &Option<u32>) -> String {
    match pid {
        Some(p) => format!("pid {p}"),
        None => "pid unknown".to_string(),
    }
}

/// Held for the runner's lifetime. The kernel drops the `flock` when the process dies, so a
/// lock file left behind by a crashed runner is simply taken over.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: PathBuf,
    identity: crate::runner_dir::FileIdentity,
}

impl Lock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Err` when the lock file was removed or replaced since it was taken: another runner
    /// could then take a lock of its own, so this one must stop.
    pub fn still_held(&self) -> Result<(), String> {
        self.identity.still_at(&self.path)
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // The file is kept (deleting a flock'd file races with a runner that just opened it);
        // emptying it means no stale pid is ever reported. Closing the fd releases the lock.
        let _ = self.file.set_len(0);
    }
}

/// Takes the lock at `path` (in the runner directory) for the project `project`.
pub fn acquire_lock(path: &Path, project: &Path) -> Result<Lock, LockError> {
    let path = path.to_path_buf();
    let io_err = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
        .open(&path)
        .map_err(io_err)?;
    // Never waits: a second runner on the same project is refused at once. The lock lives as
    // long as the descriptor, so it is released however the holder ends.
    match fs4::FileExt::try_lock(&file) {
        Ok(()) => {}
        Err(fs4::TryLockError::WouldBlock) => {
            return Err(LockError::Held {
                pid: read_holder_pid(&mut file),
                project: project.to_path_buf(),
            });
        }
        Err(fs4::TryLockError::Error(err)) => return Err(io_err(err)),
    }
    let pid = std::process::id();
    file.set_len(0).map_err(io_err)?;
    file.seek(SeekFrom::Start(0)).map_err(io_err)?;
    file.write_all(format!("{pid}\n").as_bytes())
        .map_err(io_err)?;
    crate::stats::fsynced();
    file.sync_all().map_err(io_err)?;
    let identity = crate::runner_dir::FileIdentity::of(&file).map_err(io_err)?;
    Ok(Lock {
        file,
        path,
        identity,
    })
}

/// The holder writes its pid just after locking; give it a moment if we looked in between.
fn read_holder_pid(file: &mut File) -> Option<u32> {
    for _ in 0..20 {
        let mut text = String::new();
        if file.seek(SeekFrom::Start(0)).is_ok() && file.read_to_string(&mut text).is_ok() {
            if let Ok(pid) = text.trim().parse() {
                return Some(pid);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn git_repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        git(d.path(), &["init", "-q", "-b", "main"]);
        git(d.path(), &["config", "user.email", "t@example.com"]);
        git(d.path(), &["config", "user.name", "t"]);
        d
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
    fn exclude_is_idempotent_and_untracks_committed_artifacts() {
        let d = git_repo();
        let p = d.path();
        fs::create_dir_all(p.join(".claude")).unwrap();
        fs::write(p.join(STATE_FILE), "{}").unwrap();
        fs::write(p.join(".claude/settings.json"), "{}").unwrap();
        git(p, &["add", "-A"]);
        git(p, &["commit", "-qm", "init"]);

        exclude_artifacts(p).unwrap();
        exclude_artifacts(p).unwrap();
        let exclude = fs::read_to_string(p.join(".git/info/exclude")).unwrap();
        for pattern in exclude_patterns() {
            assert_eq!(
                exclude.matches(&format!("{pattern}\n")).count(),
                1,
                "{exclude}"
            );
        }
        let tracked = git_out(p, &["ls-files"]);
        assert!(!tracked.contains("sdlc-state.json"), "{tracked}");
        assert!(tracked.contains(".claude/settings.json"));
        assert!(p.join(STATE_FILE).is_file(), "the file on disk stays");

        git(p, &["commit", "-qm", "untrack"]);
        create_auto_mode(p).unwrap();
        // Every file an older runner or a crash could leave in .claude/ is excluded too.
        for name in [
            "sdlc-journal.jsonl",
            "sdlc-runner.lock",
            "sdlc-decision.json",
            "sdlc-state.json.corrupt-1",
            ".sdlc-state.json.abc123.tmp",
            "auto-mode.bak",
        ] {
            fs::write(p.join(".claude").join(name), "{}\n").unwrap();
            assert!(is_runner_artifact(&format!(".claude/{name}")), "{name}");
        }
        assert!(!is_runner_artifact(".claude/settings.json"));
        assert!(!is_runner_artifact("sub/.claude/sdlc-state.json"));
        assert_eq!(
            git_out(p, &["status", "--porcelain", "--untracked-files=all"]),
            ""
        );
    }

    fn git_out(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn second_lock_is_refused_with_the_holder_pid_and_released_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let lock = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        let err = acquire_lock(&d.path().join("lock"), d.path()).unwrap_err();
        match &err {
            LockError::Held { pid, project } => {
                assert_eq!(*pid, Some(std::process::id()));
                assert_eq!(project, d.path());
            }
            other => panic!("{other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("another sdlc-runner (pid {})", std::process::id())),
            "{msg}"
        );
        assert!(msg.contains(&d.path().display().to_string()));
        drop(lock);
        let again = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        assert_eq!(
            fs::read_to_string(again.path()).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn a_symlink_at_the_lock_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("precious.txt");
        fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("lock")).unwrap();
        let err = acquire_lock(&d.path().join("lock"), d.path()).unwrap_err();
        assert!(matches!(err, LockError::Io { .. }), "{err}");
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
    }

    #[test]
    fn a_removed_lock_file_is_noticed() {
        let d = tempfile::tempdir().unwrap();
        let lock = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        assert_eq!(lock.still_held(), Ok(()));
        fs::remove_file(d.path().join("lock")).unwrap();
        assert!(lock.still_held().unwrap_err().contains("removed"));
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

    #[test]
    fn stale_lock_file_of_a_dead_process_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("lock"), "999999999\n").unwrap();
        let lock = acquire_lock(&d.path().join("lock"), d.path()).unwrap();
        assert_eq!(
            fs::read_to_string(lock.path()).unwrap().trim(),
            std::process::id().to_string()
        );
    }

    #[test]
    fn a_lock_held_through_another_descriptor_is_refused_until_it_is_closed() {
        let d = tempfile::tempdir().unwrap();
        let lock_path = d.path().join("lock");
        // A flock belongs to an open file description, so a second open of the file contends
        // like another process would; closing it is what a dying holder's kernel does.
        let holder = File::create(&lock_path).unwrap();
        fs4::FileExt::try_lock(&holder).unwrap();
        match acquire_lock(&lock_path, d.path()) {
            // The holder wrote no pid, so it is reported as unknown rather than stale.
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, None),
            other => panic!("the held lock was taken: {other:?}"),
        }
        drop(holder);
        // A child another test forks at this moment holds a copy of the descriptor until it
        // execs: the lock is free once that copy is gone too.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let taken = loop {
            match acquire_lock(&lock_path, d.path()) {
                Ok(lock) => break Some(lock),
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(_) => break None,
            }
        };
        assert!(
            taken.is_some(),
            "the lock was not released when its holder closed it"
        );
    }
}
