//! The log directory: where the orchestration log, the live log of the
//! running step and the archived log of every attempt live, and how old step logs are pruned
//! to stay under `maxLogDiskUsageMB`.
//!
//! Logs may contain secrets the agent printed, so the directory is 0700 and every file 0600.
//! The directory is refused when another user could tamper with it (see `safe_fs`),
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
    /// The directory (`logDir` of the config) that holds live and archived attempt logs.
    pub dir: PathBuf,
}

/// What an archived attempt log records above the agent's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptHeader {
    /// The issue the attempt worked on; first in the file name so `ls` groups by issue.
    pub issue: u32,
    /// The step's config key (e.g. `implement`), written in the file name.
    pub step_key: String,
    /// The agent's session id (or a runner-made one when the agent reported none).
    pub session: String,
    /// Attempt number within the step, starting at 1.
    pub attempt: u32,
    /// When the attempt started; also names the file.
    pub started_at: DateTime<Utc>,
    /// The agent's exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, if one did.
    pub signal: Option<i32>,
    /// Wall-clock time from spawn to exit.
    pub duration: Duration,
    /// Whether the runner killed it at the step's wall-clock timeout.
    pub timed_out: bool,
    /// Whether the runner killed it for going silent longer than `idleTimeoutMin`.
    pub idle_timed_out: bool,
    /// Stopped by a shutdown request.
    pub cancelled: bool,
    /// The hosts the allowlist's proxy refused the agent, each once.
    pub refused_hosts: Vec<String>,
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
        let refused = if self.refused_hosts.is_empty() {
            String::new()
        } else {
            format!("Refused hosts: {}\n", self.refused_hosts.join(", "))
        };
        format!(
            "Step: {}\nAttempt: {}\nSession: {}\nStarted: {}\nExit code: {}\nSignal: {}\n\
             Duration: {:.1}s\nTimed out: {}\nIdle timed out: {}\nCancelled: {}\n\
             Killed by runner: {}\n{refused}---\n\n=== OUTPUT (stdout and stderr, as they arrived) ===\n",
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
    /// Bytes kept from the start of the output.
    pub head: u64,
    /// Bytes kept from the end of the output.
    pub tail: u64,
}

/// Longest marker line [`LiveLog`] writes (its byte count has at most 20 digits).
const MARKER_MAX: u64 = 160;
/// Generous bound of an archive's header, which names the step and session.
const HEADER_MAX: u64 = 4096;

impl LiveCap {
    /// The cap for a log-disk budget of `budget_bytes` (`maxLogDiskUsageMB` in bytes).
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

    /// Appends `chunk`, keeping the head as written and only the last `tail` bytes after it;
    /// an error is the file's write error.
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

    /// When the directory lies inside the work tree `project` (`logDir: "logs"` beside the
    /// code), the `info/exclude` pattern that keeps it out of git: the runner's own logs are
    /// not changes of the project (neither the workspace check nor a commit may see them).
    /// `None` outside it, or when either path cannot be resolved.
    pub fn exclude_pattern_in(&self, project: &Path) -> Option<String> {
        let dir = self.dir.canonicalize().ok()?;
        let project = project.canonicalize().ok()?;
        let inside = dir.strip_prefix(&project).ok()?;
        if inside.as_os_str().is_empty() {
            return None;
        }
        let mut pattern = String::from("/");
        for c in inside.to_str()?.chars() {
            // A name is matched as written, not as a glob.
            if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('/');
        Some(pattern)
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

    /// `<issue>-<step>-a<attempt>-<YYYY-MM-DDTHH-MM-SS-mmm>.log`, with `-2`, `-3`, ... before
    /// `.log` when that name is taken. Only a free name is returned; [`Logs::archive_attempt`]
    /// additionally creates the file exclusively, so even a race never overwrites a log.
    pub fn attempt_log(
        &self,
        issue: u32,
        step_key: &str,
        attempt: u32,
        at: DateTime<Utc>,
    ) -> PathBuf {
        self.attempt_log_candidates(issue, step_key, attempt, at)
            .find(|p| fs::symlink_metadata(p).is_err())
            .unwrap_or_else(|| {
                self.dir
                    .join(format!("{}-overflow.log", sanitize(step_key)))
            })
    }

    fn attempt_log_candidates(
        &self,
        issue: u32,
        step_key: &str,
        attempt: u32,
        at: DateTime<Utc>,
    ) -> impl Iterator<Item = PathBuf> + '_ {
        // Milliseconds: two attempts within one second (a fast failure and its retry) still
        // get names in the order they ran.
        let stem = format!(
            "{issue}-{}-a{attempt}-{}",
            sanitize(step_key),
            at.format("%Y-%m-%dT%H-%M-%S-%3f"),
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
            header.issue,
            &header.step_key,
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
            .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
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
    // FNV-1a 64: stable across Rust versions, unlike std's `DefaultHasher`, so a project keeps
    // its log directory across upgrades.
    let mut hasher = fnv::FnvHasher::default();
    std::hash::Hasher::write(&mut hasher, absolute.as_os_str().as_encoded_bytes());
    let hash = std::hash::Hasher::finish(&hasher);
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
            let uid = rustix::process::geteuid().as_raw();
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

/// Appends `line` (and a newline unless it has one) to `path` in a single write, creating the
/// file with mode 0600. One write per line keeps lines whole when several writers append.
pub fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let line = &crate::sanitize::block(line);
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
mod tests;
