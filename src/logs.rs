//! The log directory: where the orchestration log, the live log of the
//! running step and the archived log of every attempt live, and how old step logs are pruned
//! to stay under `maxLogDiskUsageMB`.
//!
//! Logs may contain secrets the agent printed, so the directory is 0700 and every file 0600.
//! The directory is refused when another user could tamper with it (see [`crate::safe_fs`]),
//! and no log file is ever opened through a symbolic link.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};

use crate::safe_fs::{self, Mode};

/// File name of the orchestration log; it is never pruned.
pub const ORCHESTRATION_LOG: &str = "sdlc-runner.log";

/// Live logs are `<step>-live.log`.
const LIVE_SUFFIX: &str = "-live.log";

/// How many numbered alternatives [`Logs::attempt_log`] tries before giving up on a name.
const MAX_NAME_SUFFIX: u32 = 10_000;

/// The log directory of one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logs {
    pub dir: PathBuf,
}

/// What an archived attempt log records above the agent's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptHeader {
    pub step_key: String,
    /// The agent's session id (or a runner-made one when the agent reported none).
    pub session: String,
    pub attempt: u32,
    /// When the attempt started; also names the file.
    pub started_at: DateTime<Utc>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration: Duration,
    pub timed_out: bool,
    pub idle_timed_out: bool,
    /// Stopped by a shutdown request.
    pub cancelled: bool,
}

impl AttemptHeader {
    fn render(&self) -> String {
        fn opt(v: Option<i32>) -> String {
            v.map_or_else(|| "none".to_string(), |v| v.to_string())
        }
        fn yes_no(v: bool) -> &'static str {
            if v {
                "yes"
            } else {
                "no"
            }
        }
        let killed = self.timed_out || self.idle_timed_out || self.cancelled;
        format!(
            "Step: {}\nAttempt: {}\nSession: {}\nStarted: {}\nExit code: {}\nSignal: {}\n\
             Duration: {:.1}s\nTimed out: {}\nIdle timed out: {}\nCancelled: {}\n\
             Killed by runner: {}\n---\n\n=== OUTPUT (stdout and stderr, as they arrived) ===\n",
            self.step_key,
            self.attempt,
            self.session,
            self.started_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            opt(self.exit_code),
            opt(self.signal),
            self.duration.as_secs_f64(),
            yes_no(self.timed_out),
            yes_no(self.idle_timed_out),
            yes_no(self.cancelled),
            yes_no(killed),
        )
    }
}

/// How much of one attempt's output its live log (and so its archive) keeps: the first
/// `head` bytes, a marker line saying how many bytes were dropped, and the last `tail` bytes.
/// Derived from the disk budget so that one flooding agent cannot exceed it: head and tail
/// are each a sixteenth of `maxLogDiskUsageMB` (at least 1 KiB), so an attempt at rest takes
/// at most an eighth of the budget in its live log and another eighth in its archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveCap {
    pub head: u64,
    pub tail: u64,
}

/// Longest marker line [`LiveLog`] writes (its byte count has at most 20 digits).
const MARKER_MAX: u64 = 160;
/// Generous bound of an archive's header, which names the step and session.
const HEADER_MAX: u64 = 4096;

impl LiveCap {
    pub fn for_budget(budget_bytes: u64) -> LiveCap {
        let part = (budget_bytes / 16).max(1024);
        LiveCap {
            head: part,
            tail: part,
        }
    }

    /// Largest size of a finished live log.
    pub fn at_rest(&self) -> u64 {
        self.head + MARKER_MAX + self.tail
    }

    /// Largest size of a live log while its attempt runs: the tail is allowed to grow to
    /// twice its size before it is cut back, so that each byte is moved a bounded number of
    /// times.
    pub fn peak(&self) -> u64 {
        self.at_rest() + self.tail
    }

    /// Room to free before an attempt starts so that it stays within the budget: its live log
    /// while it runs, then its live log and its archive.
    pub fn reserve(&self) -> u64 {
        self.peak().max(2 * self.at_rest() + HEADER_MAX)
    }
}

/// The live log of a running attempt, written as output arrives and never larger than
/// [`LiveCap::peak`]: the head is written once; later output is appended after it, and when
/// that part exceeds twice the tail, its last `tail` bytes are moved up behind a marker line
/// and the file is cut there. A reader following the file sees it shrink at such a cut.
#[derive(Debug)]
pub struct LiveLog {
    file: File,
    path: PathBuf,
    cap: LiveCap,
    /// Bytes of the head written so far (at most `cap.head`).
    head: u64,
    /// Length of the marker line after the head; 0 until something was dropped.
    marker: u64,
    /// Length of the file.
    len: u64,
    dropped: u64,
}

impl LiveLog {
    /// Creates (or truncates) the live log: owner-only, never through a link.
    pub fn create(path: &Path, cap: LiveCap) -> io::Result<LiveLog> {
        Ok(LiveLog {
            file: safe_fs::open(path, Mode::Truncate)?,
            path: path.to_path_buf(),
            cap,
            head: 0,
            marker: 0,
            len: 0,
            dropped: 0,
        })
    }

    /// Bytes of output dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn write(&mut self, mut chunk: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        if self.head < self.cap.head {
            let room = usize::try_from(self.cap.head - self.head).unwrap_or(usize::MAX);
            let (head, rest) = chunk.split_at(room.min(chunk.len()));
            // Until the head is full nothing follows it, so the head ends the file.
            self.file
                .write_all_at(head, self.len)
                .map_err(|e| with_path(e, &self.path))?;
            self.head += head.len() as u64;
            self.len += head.len() as u64;
            chunk = rest;
        }
        if chunk.is_empty() {
            return Ok(());
        }
        self.file
            .write_all_at(chunk, self.len)
            .map_err(|e| with_path(e, &self.path))?;
        self.len += chunk.len() as u64;
        if self.len - self.head - self.marker > 2 * self.cap.tail {
            self.cut_to_tail()?;
        }
        Ok(())
    }

    /// Cuts the log to its size at rest ([`LiveCap::at_rest`]); the attempt is over.
    pub fn finish(&mut self) -> io::Result<()> {
        if self.len - self.head - self.marker > self.cap.tail {
            self.cut_to_tail()?;
        }
        Ok(())
    }

    /// Keeps the last `tail` bytes after the head, behind a marker counting what was dropped.
    fn cut_to_tail(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let after_head = self.head + self.marker;
        let from = self.len - self.cap.tail;
        self.dropped += from - after_head;
        let marker = format!(
            "\n[sdlc-runner: {} bytes dropped here; this log keeps the first {} and the last {} \
             bytes]\n",
            self.dropped, self.cap.head, self.cap.tail
        );
        let to = self.head + marker.len() as u64;
        move_within(&self.file, from, to, self.cap.tail).map_err(|e| with_path(e, &self.path))?;
        self.file
            .write_all_at(marker.as_bytes(), self.head)
            .map_err(|e| with_path(e, &self.path))?;
        self.marker = marker.len() as u64;
        self.len = to + self.cap.tail;
        self.file
            .set_len(self.len)
            .map_err(|e| with_path(e, &self.path))
    }
}

/// Copies `len` bytes of `file` from offset `from` to offset `to`, which may overlap, through
/// a bounded buffer (the tail can be tens of megabytes; memory stays flat).
fn move_within(file: &File, from: u64, to: u64, len: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    const STEP: u64 = 256 * 1024;
    let mut buf = vec![0u8; STEP.min(len) as usize];
    let mut done = 0u64;
    while done < len {
        let n = STEP.min(len - done);
        // Moving towards the start copies front to back, towards the end back to front, so
        // no byte is overwritten before it was read.
        let offset = if to <= from { done } else { len - done - n };
        let part = &mut buf[..n as usize];
        file.read_exact_at(part, from + offset)?;
        file.write_all_at(part, to + offset)?;
        done += n;
    }
    Ok(())
}

/// Keeps a name component (step key, session id from agent output) to characters that
/// cannot leave the directory or confuse a shell glob.
fn sanitize(part: &str) -> String {
    let cleaned: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "unknown".to_string()
    } else {
        cleaned
    }
}

impl Logs {
    /// `logDir` when configured (and non-empty), else [`default_dir`].
    pub fn resolve(log_dir: Option<&Path>, project_path: &Path) -> Logs {
        match log_dir.filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => Logs {
                dir: dir.to_path_buf(),
            },
            None => Logs {
                dir: default_dir(project_path),
            },
        }
    }

    /// Creates the directory (and its missing parents) 0700, or refuses it when it is a
    /// link, another user's, or writable by group or others. Also refuses a link or other
    /// non-regular file where the runner will open a log by a fixed name (the orchestration
    /// log, a live log), so that it fails here, before any agent runs, rather than mid-run.
    pub fn create(&self) -> io::Result<()> {
        safe_fs::create_private_dir(&self.dir)?;
        for entry in fs::read_dir(&self.dir).map_err(|e| with_path(e, &self.dir))? {
            let entry = entry.map_err(|e| with_path(e, &self.dir))?;
            let name = entry.file_name();
            let fixed_name = name == ORCHESTRATION_LOG
                || name.to_str().is_some_and(|n| n.ends_with(LIVE_SUFFIX));
            if !fixed_name {
                continue;
            }
            let kind = entry.file_type().map_err(|e| with_path(e, &entry.path()))?;
            if !kind.is_file() {
                let path = entry.path();
                let what = if kind.is_symlink() {
                    "a symbolic link"
                } else {
                    "not a regular file"
                };
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "{} is {what}; the runner writes its logs only to its own files: remove \
                         it (`rm {}`)",
                        path.display(),
                        path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `sdlc-runner.log`.
    pub fn orchestration_log(&self) -> PathBuf {
        self.dir.join(ORCHESTRATION_LOG)
    }

    /// `<step>-live.log`, the output of the running attempt of that step.
    pub fn live_log(&self, step_key: &str) -> PathBuf {
        self.dir
            .join(format!("{}{LIVE_SUFFIX}", sanitize(step_key)))
    }

    /// `<step>-<session>-<YYYY-MM-DDTHH-MM-SS>-a<attempt>.log`, with `-2`, `-3`, ... before
    /// `.log` when that name is taken. Only a free name is returned; [`Logs::archive_attempt`]
    /// additionally creates the file exclusively, so even a race never overwrites a log.
    pub fn attempt_log(
        &self,
        step_key: &str,
        session: &str,
        attempt: u32,
        at: DateTime<Utc>,
    ) -> PathBuf {
        self.attempt_log_candidates(step_key, session, attempt, at)
            .find(|p| fs::symlink_metadata(p).is_err())
            .unwrap_or_else(|| {
                self.dir
                    .join(format!("{}-overflow.log", sanitize(step_key)))
            })
    }

    fn attempt_log_candidates(
        &self,
        step_key: &str,
        session: &str,
        attempt: u32,
        at: DateTime<Utc>,
    ) -> impl Iterator<Item = PathBuf> + '_ {
        let stem = format!(
            "{}-{}-{}-a{attempt}",
            sanitize(step_key),
            sanitize(session),
            at.format("%Y-%m-%dT%H-%M-%S"),
        );
        (1..=MAX_NAME_SUFFIX).map(move |n| {
            if n == 1 {
                self.dir.join(format!("{stem}.log"))
            } else {
                self.dir.join(format!("{stem}-{n}.log"))
            }
        })
    }

    /// Writes the attempt log: `header`, then the contents of `live_log` copied as a stream
    /// (a missing live log, e.g. when the agent could not start, is noted instead). The file
    /// is created exclusively with mode 0600 and never replaces an existing one.
    pub fn archive_attempt(&self, header: &AttemptHeader, live_log: &Path) -> io::Result<PathBuf> {
        let mut created = None;
        for candidate in self.attempt_log_candidates(
            &header.step_key,
            &header.session,
            header.attempt,
            header.started_at,
        ) {
            match safe_fs::open(&candidate, Mode::CreateNew) {
                Ok(file) => {
                    created = Some((candidate, file));
                    break;
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(err) => return Err(err),
            }
        }
        let Some((path, file)) = created else {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "no free attempt log name for step {} attempt {} in {}",
                    header.step_key,
                    header.attempt,
                    self.dir.display()
                ),
            ));
        };
        let mut out = io::BufWriter::new(file);
        out.write_all(header.render().as_bytes())
            .map_err(|e| with_path(e, &path))?;
        // Read without following a link either: a planted link must not copy another file's
        // content into a log.
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(live_log);
        match opened {
            Ok(mut input) => {
                io::copy(&mut input, &mut out).map_err(|e| with_path(e, &path))?;
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                writeln!(out, "(no output: {} does not exist)", live_log.display())
                    .map_err(|e| with_path(e, &path))?;
            }
            Err(err) => return Err(with_path(err, live_log)),
        }
        out.flush().map_err(|e| with_path(e, &path))?;
        Ok(path)
    }

    /// Deletes the oldest step logs (`*.log`, oldest modification time first, then by name)
    /// until the step logs total at most `max_bytes`. The orchestration log is neither
    /// counted nor deleted; files in `keep` (the live log of a running step) are counted but
    /// never deleted. Returns the deleted paths. A file that cannot be deleted is logged and
    /// skipped.
    pub fn prune(&self, max_bytes: u64, keep: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
        let keep_names: Vec<&std::ffi::OsStr> = keep.iter().filter_map(|p| p.file_name()).collect();
        let mut total = 0u64;
        let mut candidates: Vec<(SystemTime, String, PathBuf, u64)> = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(|e| with_path(e, &self.dir))? {
            let entry = entry.map_err(|e| with_path(e, &self.dir))?;
            let name = entry.file_name();
            let Some(name_str) = name.to_str() else {
                continue;
            };
            if !name_str.ends_with(".log") || name_str == ORCHESTRATION_LOG {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            total += meta.len();
            if keep_names.contains(&name.as_os_str()) {
                continue;
            }
            let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            candidates.push((mtime, name_str.to_string(), entry.path(), meta.len()));
        }
        candidates.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));

        let mut deleted = Vec::new();
        for (_, _, path, len) in candidates {
            if total <= max_bytes {
                break;
            }
            match fs::remove_file(&path) {
                Ok(()) => {
                    total = total.saturating_sub(len);
                    deleted.push(path);
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    total = total.saturating_sub(len);
                }
                Err(err) => {
                    tracing::warn!("could not prune old log {}: {err}", path.display());
                }
            }
        }
        Ok(deleted)
    }
}

/// Where logs go when `logDir` is not set: `<state home>/sdlc-runner/<name>-<hash>/`, where
/// `<name>` is the project directory's name and `<hash>` a short hash of its absolute path,
/// so two checkouts called `app` do not share (and prune) each other's logs. The state home
/// is per user ([`state_home`]), never the shared temp directory, where another user could
/// have prepared the directory in advance.
pub fn default_dir(project_path: &Path) -> PathBuf {
    default_dir_in(&state_home(), project_path)
}

/// [`default_dir`] under a given state home.
pub fn default_dir_in(state_home: &Path, project_path: &Path) -> PathBuf {
    let absolute = project_path
        .canonicalize()
        .ok()
        .or_else(|| std::path::absolute(project_path).ok())
        .unwrap_or_else(|| project_path.to_path_buf())
        // Drops a trailing `/` and `.` components, so every spelling hashes alike.
        .components()
        .collect::<PathBuf>();
    let name = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".to_string());
    let hash = fnv1a(absolute.as_os_str().as_encoded_bytes());
    // 32 bits: short enough to read, and a clash needs two projects with the same name too.
    let short = (hash >> 32) ^ (hash & 0xffff_ffff);
    state_home
        .join("sdlc-runner")
        .join(format!("{}-{short:08x}", sanitize(&name)))
}

/// `$XDG_STATE_HOME` when set to an absolute path, else `$HOME/.local/state`. Without either
/// (a stripped service environment), a per-uid directory under the temp dir: if another user
/// planted it first, the ownership check refuses it instead of writing there.
pub fn state_home() -> PathBuf {
    state_home_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME")).unwrap_or_else(
        || {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let uid = unsafe { libc::geteuid() };
            std::env::temp_dir().join(format!("sdlc-runner-state-{uid}"))
        },
    )
}

/// [`state_home`] from given variables. A relative `XDG_STATE_HOME` is ignored, as the XDG
/// base directory rules ask, since it would depend on the working directory.
pub fn state_home_from(
    xdg_state_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let absolute = |v: Option<OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg_state_home).or_else(|| absolute(home).map(|h| h.join(".local").join("state")))
}

/// FNV-1a 64: stable across Rust versions, unlike std's `DefaultHasher`, so a project keeps
/// its log directory across upgrades.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Appends `line` (and a newline unless it has one) to `path` in a single write, creating the
/// file with mode 0600. One write per line keeps lines whole when several writers append.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let mut file = safe_fs::open(path, Mode::Append)?;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    if !line.ends_with('\n') {
        buf.push('\n');
    }
    file.write_all(buf.as_bytes())
        .map_err(|e| with_path(e, path))
}

/// io::Error does not carry the path; callers print the error as is, so name it here.
fn with_path(err: io::Error, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use std::fs::{OpenOptions, Permissions};
    use std::os::unix::fs::{symlink, PermissionsExt};
    use tempfile::TempDir;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    fn at() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 4, 19, 22, 20, 52).unwrap()
    }

    fn header(attempt: u32) -> AttemptHeader {
        AttemptHeader {
            step_key: "implement".into(),
            session: "e7849e9a-afa".into(),
            attempt,
            started_at: at(),
            exit_code: Some(1),
            signal: None,
            duration: Duration::from_millis(12_345),
            timed_out: true,
            idle_timed_out: false,
            cancelled: false,
        }
    }

    fn set_mtime(path: &Path, secs: u64) {
        let file = OpenOptions::new().write(true).open(path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn resolves_the_configured_dir_or_a_per_user_per_project_state_dir() {
        let configured = Logs::resolve(Some(Path::new("/var/log/sdlc")), Path::new("/src/app"));
        assert_eq!(configured.dir, PathBuf::from("/var/log/sdlc"));
        let default = Logs::resolve(None, Path::new("/src/my-app"));
        assert_eq!(default.dir, default_dir(Path::new("/src/my-app")));
        assert!(!default
            .dir
            .starts_with(std::env::temp_dir().join("sdlc-logs")));
        let empty = Logs::resolve(Some(Path::new("")), Path::new("/src/my-app/"));
        assert_eq!(empty.dir, default.dir);

        let project = TempDir::new().unwrap();
        let nested = project.path().join("proj");
        fs::create_dir(&nested).unwrap();
        let dotted = Logs::resolve(None, &nested.join("."));
        assert_eq!(dotted.dir, Logs::resolve(None, &nested).dir);
        let name = dotted.dir.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("proj-"), "{name}");
    }

    #[test]
    fn the_default_dir_separates_projects_with_the_same_name() {
        let state = Path::new("/home/u/.local/state");
        let a = default_dir_in(state, Path::new("/src/one/app"));
        let b = default_dir_in(state, Path::new("/src/two/app"));
        assert_ne!(a, b);
        assert_eq!(
            a,
            default_dir_in(state, Path::new("/src/one/app")),
            "stable"
        );
        for dir in [&a, &b] {
            assert_eq!(dir.parent(), Some(state.join("sdlc-runner").as_path()));
            let name = dir.file_name().unwrap().to_str().unwrap();
            let hash = name.strip_prefix("app-").unwrap();
            assert!(
                hash.len() == 8 && hash.chars().all(|c| c.is_ascii_hexdigit()),
                "{name}"
            );
        }
        // The same directory reached by another spelling is the same project.
        let root = TempDir::new().unwrap();
        let real = root.path().join("app");
        fs::create_dir(&real).unwrap();
        let other = root.path().join("x").join("..").join("app");
        fs::create_dir(root.path().join("x")).unwrap();
        assert_eq!(default_dir_in(state, &real), default_dir_in(state, &other));
    }

    #[test]
    fn the_state_home_is_xdg_else_home_never_relative() {
        let os = |s: &str| Some(OsString::from(s));
        assert_eq!(
            state_home_from(os("/x/state"), os("/home/u")),
            Some(PathBuf::from("/x/state"))
        );
        assert_eq!(
            state_home_from(None, os("/home/u")),
            Some(PathBuf::from("/home/u/.local/state"))
        );
        assert_eq!(
            state_home_from(os("relative/state"), os("/home/u")),
            Some(PathBuf::from("/home/u/.local/state"))
        );
        assert_eq!(
            state_home_from(os(""), os("/home/u")),
            Some(PathBuf::from("/home/u/.local/state"))
        );
        assert_eq!(state_home_from(None, None), None);
        assert_eq!(state_home_from(None, os("")), None);
    }

    #[test]
    fn file_names_follow_the_layout() {
        let logs = Logs {
            dir: PathBuf::from("/logs"),
        };
        assert_eq!(
            logs.orchestration_log(),
            PathBuf::from("/logs/sdlc-runner.log")
        );
        assert_eq!(
            logs.live_log("verify"),
            PathBuf::from("/logs/verify-live.log")
        );
        assert_eq!(
            logs.attempt_log("verify", "e7849e9a-afa", 2, at()),
            PathBuf::from("/logs/verify-e7849e9a-afa-2026-04-19T22-20-52-a2.log")
        );
        // A session id from agent output cannot escape the directory.
        let hostile = logs.attempt_log("verify", "../../etc/passwd", 1, at());
        assert_eq!(hostile.parent().unwrap(), Path::new("/logs"));
    }

    #[test]
    fn create_makes_a_private_directory() {
        let root = TempDir::new().unwrap();
        let logs = Logs {
            dir: root.path().join("a").join("b"),
        };
        logs.create().unwrap();
        assert_eq!(mode(&logs.dir), 0o700);
        assert_eq!(mode(&root.path().join("a")), 0o700, "parents it made too");
        fs::set_permissions(&logs.dir, Permissions::from_mode(0o755)).unwrap();
        logs.create().unwrap();
        assert_eq!(mode(&logs.dir), 0o700, "an existing dir is tightened too");
    }

    #[test]
    fn create_refuses_a_dir_others_could_tamper_with() {
        let root = TempDir::new().unwrap();
        let real = root.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::set_permissions(&real, Permissions::from_mode(0o755)).unwrap();
        let link = Logs {
            dir: root.path().join("logs"),
        };
        symlink(&real, &link.dir).unwrap();
        let err = link.create().unwrap_err().to_string();
        assert!(
            err.contains("symbolic link") && err.contains("logs"),
            "{err}"
        );
        assert_eq!(mode(&real), 0o755, "the target is not chmod'ed");

        fs::set_permissions(&real, Permissions::from_mode(0o777)).unwrap();
        let open = Logs { dir: real.clone() };
        let err = open.create().unwrap_err().to_string();
        assert!(
            err.contains(&format!("chmod 700 {}", real.display())),
            "{err}"
        );
        assert_eq!(mode(&real), 0o777, "refused, not repaired");
    }

    #[test]
    fn create_refuses_a_link_at_a_fixed_log_name() {
        for name in [ORCHESTRATION_LOG, "verify-live.log"] {
            let root = TempDir::new().unwrap();
            let outside = root.path().join("outside");
            fs::write(&outside, "precious").unwrap();
            let logs = Logs {
                dir: root.path().join("logs"),
            };
            logs.create().unwrap();
            symlink(&outside, logs.dir.join(name)).unwrap();
            let err = logs.create().unwrap_err().to_string();
            assert!(err.contains(name) && err.contains("remove"), "{err}");
        }
        // A link under another name is none of the runner's business.
        let root = TempDir::new().unwrap();
        let logs = Logs {
            dir: root.path().to_path_buf(),
        };
        symlink("/nowhere", root.path().join("latest")).unwrap();
        logs.create().unwrap();
    }

    #[test]
    fn no_log_file_is_written_through_a_link() {
        let root = TempDir::new().unwrap();
        let outside = root.path().join("outside");
        fs::write(&outside, "precious").unwrap();
        let logs = Logs {
            dir: root.path().join("logs"),
        };
        logs.create().unwrap();
        symlink(&outside, logs.orchestration_log()).unwrap();
        let err = append_line(&logs.orchestration_log(), "x").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");

        // A link planted at the first free archive name is skipped, not written through.
        let live = logs.live_log("implement");
        fs::write(&live, "out\n").unwrap();
        let first = logs.attempt_log("implement", "e7849e9a-afa", 1, at());
        symlink(&outside, &first).unwrap();
        let archived = logs.archive_attempt(&header(1), &live).unwrap();
        assert_ne!(archived, first);
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
    }

    #[test]
    fn archive_copies_header_and_live_log_and_never_overwrites() {
        let root = TempDir::new().unwrap();
        let logs = Logs {
            dir: root.path().to_path_buf(),
        };
        let live = logs.live_log("implement");
        fs::write(&live, "{\"type\":\"system\"}\nboom on stderr\n").unwrap();

        let first = logs.archive_attempt(&header(1), &live).unwrap();
        assert_eq!(
            first,
            root.path()
                .join("implement-e7849e9a-afa-2026-04-19T22-20-52-a1.log")
        );
        let text = fs::read_to_string(&first).unwrap();
        for expected in [
            "Step: implement\n",
            "Attempt: 1\n",
            "Session: e7849e9a-afa\n",
            "Exit code: 1\n",
            "Signal: none\n",
            "Duration: 12.3s\n",
            "Timed out: yes\n",
            "Killed by runner: yes\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in {text}");
        }
        assert!(text.ends_with("---\n\n=== OUTPUT (stdout and stderr, as they arrived) ===\n{\"type\":\"system\"}\nboom on stderr\n"));
        assert_eq!(mode(&first), 0o600);

        // Same step, session, second and attempt: a new file, the old one untouched.
        fs::write(&live, "second run\n").unwrap();
        let second = logs.archive_attempt(&header(1), &live).unwrap();
        assert_ne!(first, second);
        assert!(second.to_str().unwrap().ends_with("-a1-2.log"));
        assert!(fs::read_to_string(&first)
            .unwrap()
            .contains("boom on stderr"));
        assert!(fs::read_to_string(&second)
            .unwrap()
            .ends_with("second run\n"));
        assert_eq!(
            logs.attempt_log("implement", "e7849e9a-afa", 1, at()),
            root.path()
                .join("implement-e7849e9a-afa-2026-04-19T22-20-52-a1-3.log")
        );

        // An agent that never started still leaves an attempt log.
        let missing = logs
            .archive_attempt(&header(2), &root.path().join("nope-live.log"))
            .unwrap();
        assert!(fs::read_to_string(missing).unwrap().contains("(no output:"));
    }

    #[test]
    fn prune_deletes_oldest_step_logs_first_and_spares_the_protected() {
        let root = TempDir::new().unwrap();
        let logs = Logs {
            dir: root.path().to_path_buf(),
        };
        let write = |name: &str, size: usize, mtime: u64| {
            let path = root.path().join(name);
            fs::write(&path, vec![b'x'; size]).unwrap();
            set_mtime(&path, mtime);
            path
        };
        let orchestration = write(ORCHESTRATION_LOG, 10_000, 1);
        let oldest_b = write("b-old.log", 100, 10);
        let oldest_a = write("a-old.log", 100, 10);
        let live = write("verify-live.log", 100, 5);
        let middle = write("middle.log", 100, 20);
        let newest = write("newest.log", 100, 30);
        let other = write("notes.txt", 10_000, 1);

        // 500 bytes of step logs; cap 250 → delete a-old, b-old (same mtime: by name), then
        // middle; the live log is older but kept.
        let deleted = logs.prune(250, std::slice::from_ref(&live)).unwrap();
        assert_eq!(deleted, vec![oldest_a, oldest_b, middle]);
        for kept in [&orchestration, &live, &newest, &other] {
            assert!(kept.exists(), "{} kept", kept.display());
        }
        assert!(logs
            .prune(250, std::slice::from_ref(&live))
            .unwrap()
            .is_empty());
        // Under the cap nothing goes; a cap of 0 removes everything that may be removed.
        assert_eq!(
            logs.prune(0, std::slice::from_ref(&live)).unwrap(),
            vec![newest]
        );
        assert!(live.exists() && orchestration.exists());
    }

    fn marker_of(text: &str) -> &str {
        let start = text.find("\n[sdlc-runner:").unwrap();
        let end = start + 1 + text[start + 1..].find('\n').unwrap();
        &text[start..=end]
    }

    #[test]
    fn a_live_log_keeps_the_head_a_marker_and_the_last_bytes() {
        let root = TempDir::new().unwrap();
        let path = root.path().join("verify-live.log");
        let cap = LiveCap { head: 10, tail: 8 };
        let mut log = LiveLog::create(&path, cap).unwrap();
        let mut sent = Vec::new();
        let mut largest = 0;
        for i in 0..500u32 {
            let chunk = format!("<{i}>");
            log.write(chunk.as_bytes()).unwrap();
            sent.extend_from_slice(chunk.as_bytes());
            largest = largest.max(fs::metadata(&path).unwrap().len());
        }
        log.finish().unwrap();
        assert!(largest <= cap.peak(), "{largest} > {}", cap.peak());
        let text = fs::read_to_string(&path).unwrap();
        let marker = marker_of(&text);
        let dropped = sent.len() as u64 - 18;
        assert_eq!(log.dropped(), dropped);
        assert!(
            marker.contains(&format!("{dropped} bytes dropped")),
            "{marker}"
        );
        let expected = format!(
            "{}{marker}{}",
            String::from_utf8_lossy(&sent[..10]),
            String::from_utf8_lossy(&sent[sent.len() - 8..])
        );
        assert_eq!(text, expected);
        assert!(text.len() as u64 <= cap.at_rest());
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn a_short_overflow_is_cut_only_when_the_attempt_ends() {
        let root = TempDir::new().unwrap();
        let path = root.path().join("verify-live.log");
        let cap = LiveCap { head: 4, tail: 4 };
        let mut log = LiveLog::create(&path, cap).unwrap();
        // Head, then one byte more than the tail: under the running limit, over the one at rest.
        log.write(b"HEADabcde").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "HEADabcde");
        // The marker is longer than what is dropped: the tail moves towards the end.
        log.finish().unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("HEAD{}bcde", marker_of(&text)));
        assert!(marker_of(&text).contains(" 1 bytes dropped"));

        // Output that fits is left exactly as written, without a marker.
        let mut small = LiveLog::create(&path, cap).unwrap();
        small.write(b"HEADtail").unwrap();
        small.finish().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "HEADtail");
        assert_eq!(small.dropped(), 0);
    }

    #[test]
    fn a_live_log_is_never_opened_through_a_link() {
        let root = TempDir::new().unwrap();
        let outside = root.path().join("outside");
        fs::write(&outside, "precious").unwrap();
        let path = root.path().join("verify-live.log");
        symlink(&outside, &path).unwrap();
        let err = LiveLog::create(&path, LiveCap::for_budget(1 << 20)).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
        // Nor is a link read into an archive.
        let logs = Logs {
            dir: root.path().to_path_buf(),
        };
        let archived = logs.archive_attempt(&header(1), &path);
        assert!(archived.is_err(), "{archived:?}");
    }

    #[test]
    fn the_cap_derives_from_the_budget_and_an_attempt_fits_its_reserve() {
        let mib = 1024 * 1024;
        let cap = LiveCap::for_budget(50 * mib);
        assert_eq!(cap.head, 50 * mib / 16);
        assert_eq!(cap.tail, 50 * mib / 16);
        assert!(cap.reserve() >= cap.peak());
        assert!(cap.reserve() >= 2 * cap.at_rest());
        assert!(cap.reserve() < 50 * mib / 2);
        assert_eq!(LiveCap::for_budget(0).head, 1024);
    }

    #[test]
    fn append_line_creates_a_private_file_and_appends_whole_lines() {
        let root = TempDir::new().unwrap();
        let path = root.path().join(ORCHESTRATION_LOG);
        append_line(&path, "[2026-04-19T22:20:52Z] first").unwrap();
        append_line(&path, "second\n").unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "[2026-04-19T22:20:52Z] first\nsecond\n"
        );
        assert_eq!(mode(&path), 0o600);
        let err = append_line(&root.path().join("missing/dir.log"), "x").unwrap_err();
        assert!(err.to_string().contains("missing/dir.log"), "{err}");
    }
}
