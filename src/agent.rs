//! One agent attempt as a child process (docs/interfaces.md "Agent invocation", docs/persistence.md signals): spawned in
//! its own process group, its output streamed to the live log and to the caller's parser as
//! it arrives, bounded by a wall-clock and an idle timeout, and its whole process group gone
//! when [`run_agent`] returns.
//!
//! Memory stays flat whatever the agent prints: only the last `tail_bytes` of stdout and of
//! stderr are kept. Disk use is flat too: the live log keeps a head and a rolling tail
//! ([`LiveCap`]).

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::cleanup;
use crate::logs::{LiveCap, LiveLog};
use rustix::process::Signal;

/// Read buffer per stream; large enough that a chatty agent costs few wakeups.
const CHUNK: usize = 64 * 1024;

/// After SIGKILL, how long to keep reading pipes that something outside the group (a process
/// that called `setsid`) may still hold open, before abandoning them.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// What to run and under which limits. A zero `timeout` or `idle_timeout` disables that limit.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// The agent CLI to run, found on PATH when not a path.
    pub program: PathBuf,
    /// Its arguments, passed as a vector (no shell).
    pub args: Vec<String>,
    /// The working directory: the project's clone.
    pub cwd: PathBuf,
    /// Added to (not replacing) the runner's environment.
    pub env: Vec<(String, String)>,
    /// Wall-clock limit of the attempt; the agent's process group is stopped when it passes.
    pub timeout: Duration,
    /// Longest stretch without a byte on stdout or stderr.
    pub idle_timeout: Duration,
    /// Time between SIGTERM and SIGKILL to the process group.
    pub kill_grace: Duration,
    /// stdout and stderr are appended here as they arrive; truncated at start, mode 0600.
    pub live_log: PathBuf,
    /// How much of the output the live log keeps.
    pub live_log_cap: LiveCap,
    /// Bytes kept from the end of stdout and, separately, of stderr.
    pub tail_bytes: usize,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentExit {
    /// The exit code, `None` when the process was ended by a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended the process.
    pub signal: Option<i32>,
    /// The wall-clock timeout fired.
    pub timed_out: bool,
    /// The idle timeout fired.
    pub idle_timed_out: bool,
    /// A shutdown was requested through the cancel channel.
    pub cancelled: bool,
    /// The caller's stream reader asked to stop the agent (turn limit, a CLI retrying forever).
    pub stopped: bool,
    /// Last `tail_bytes` of stdout, lossy UTF-8.
    pub stdout_tail: String,
    /// Last `tail_bytes` of stderr, lossy UTF-8.
    pub stderr_tail: String,
    /// Total bytes the agent wrote to stdout.
    pub stdout_bytes: u64,
    /// Total bytes the agent wrote to stderr.
    pub stderr_bytes: u64,
    /// Wall-clock time from spawn to exit.
    pub duration: Duration,
    /// Pid of the agent, which is also its process-group id.
    pub pid: u32,
    /// The first error writing the live log, if any. The agent is not stopped for it (the
    /// caller's parser and the tails still see everything), but the log is incomplete.
    pub live_log_error: Option<String>,
}

impl AgentExit {
    /// The runner ended the process (timeout, idle timeout or shutdown) rather than the
    /// process ending by itself.
    pub fn killed_by_runner(&self) -> bool {
        self.timed_out || self.idle_timed_out || self.cancelled || self.stopped
    }
}

#[derive(Debug, thiserror::Error)]
/// Why an agent could not be run or waited for; each message names what to check in the config.
pub enum AgentError {
    #[error(
        "agent command `{program}` could not be started: {source}; check `agent.command` in the \
         config and that it is installed and on PATH"
    )]
    /// The program could not be started (not installed, not on PATH, not executable).
    Spawn {
        /// The program as configured.
        program: String,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error(
        "agent working directory {} is not usable: {source}; check `projectPath` in the config",
        path.display()
    )]
    /// The working directory could not be used.
    WorkingDir {
        /// The directory.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error(
        "agent live log {} could not be opened: {source}; check that the log directory \
         (`logDir`) exists and is writable",
        path.display()
    )]
    /// The live log could not be opened, so the attempt was not started.
    LiveLog {
        /// The live log's path.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error("waiting for agent command `{program}` (pid {pid}) failed: {source}")]
    /// Waiting for the started agent failed.
    Wait {
        /// The program as configured.
        program: String,
        /// Its pid, also its process-group id.
        pid: u32,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
}

/// Keeps the last `cap` bytes written to it. Bytes are compacted only when the buffer reaches
/// twice the cap, so each byte is moved a bounded number of times.
#[derive(Debug)]
struct Tail {
    cap: usize,
    buf: Vec<u8>,
    truncated: bool,
}

impl Tail {
    fn new(cap: usize) -> Tail {
        Tail {
            cap,
            buf: Vec::new(),
            truncated: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        if chunk.len() >= self.cap {
            self.truncated |= !self.buf.is_empty() || chunk.len() > self.cap;
            self.buf.clear();
            self.buf.extend_from_slice(&chunk[chunk.len() - self.cap..]);
            return;
        }
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > 2 * self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
            self.truncated = true;
        }
    }

    fn into_string(mut self) -> String {
        if self.buf.len() > self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
            self.truncated = true;
        }
        let mut bytes = self.buf.as_slice();
        if self.truncated {
            // The cut may have split a UTF-8 sequence; drop its orphaned continuation bytes
            // rather than show a replacement character.
            let skip = bytes
                .iter()
                .take(3)
                .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
                .count();
            bytes = &bytes[skip..];
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Kills the agent's process group if [`run_agent`]'s future is dropped before it finished
/// (for example by an enclosing `select!`), so no agent outlives the runner's interest in it.
struct GroupGuard {
    pgid: i32,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = cleanup::signal_group(self.pgid, Signal::KILL);
        }
    }
}

/// Why the runner started stopping the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    Timeout,
    Idle,
    Cancel,
    /// The stream callback asked for it.
    Stream,
    /// The agent itself exited; whatever is left in its group is an orphan.
    LeaderExited,
}

/// Reads one chunk from `stream` into `buf`. Read errors end the stream like EOF does.
async fn read_chunk<R: AsyncRead + Unpin>(stream: &mut Option<R>, buf: &mut [u8]) -> usize {
    match stream {
        Some(reader) => reader.read(buf).await.unwrap_or(0),
        None => std::future::pending().await,
    }
}

fn disabled(limit: Duration) -> bool {
    limit.is_zero()
}

/// Runs one agent attempt to completion. Every stdout chunk goes to `on_stdout` (in order) and,
/// with stderr, to the live log. When this returns `Ok`, the agent's process group has no
/// live member left: the agent is reaped and its children were sent SIGTERM and then SIGKILL.
pub async fn run_agent(
    run: &AgentRun,
    on_stdout: &mut (dyn FnMut(&[u8]) + Send),
    cancel: watch::Receiver<bool>,
) -> Result<AgentExit, AgentError> {
    run_agent_with(run, on_stdout, cancel, &mut |_| {}).await
}

/// [`run_agent`], calling `on_spawn(pgid)` as soon as the agent's process group exists, before
/// any of its output is read: the caller records the group so that a runner killed later can
/// have its successor stop what is left of it.
pub async fn run_agent_with(
    run: &AgentRun,
    on_stdout: &mut (dyn FnMut(&[u8]) + Send),
    cancel: watch::Receiver<bool>,
    on_spawn: &mut (dyn FnMut(i32) + Send),
) -> Result<AgentExit, AgentError> {
    let mut keep_going = |chunk: &[u8]| {
        on_stdout(chunk);
        true
    };
    run_agent_stoppable(run, &mut keep_going, cancel, on_spawn).await
}

/// [`run_agent_with`] whose stdout callback may stop the agent: when it returns `false`, the
/// agent's group is stopped as for a timeout and the exit says `stopped`. A CLI without a
/// turn limit of its own is bounded this way.
pub async fn run_agent_stoppable(
    run: &AgentRun,
    on_stdout: &mut (dyn FnMut(&[u8]) -> bool + Send),
    mut cancel: watch::Receiver<bool>,
    on_spawn: &mut (dyn FnMut(i32) + Send),
) -> Result<AgentExit, AgentError> {
    let program_name = run.program.display().to_string();
    std::fs::metadata(&run.cwd)
        .and_then(|m| {
            if m.is_dir() {
                Ok(())
            } else {
                Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                ))
            }
        })
        .map_err(|source| AgentError::WorkingDir {
            path: run.cwd.clone(),
            source,
        })?;
    let mut live_log =
        LiveLog::create(&run.live_log, run.live_log_cap).map_err(|source| AgentError::LiveLog {
            path: run.live_log.clone(),
            source,
        })?;

    let started = Instant::now();
    let mut command = Command::new(&run.program);
    command
        .args(&run.args)
        .current_dir(&run.cwd)
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // The agent gets SIGKILL when the runner dies, however it dies: an unattended agent must
    // never go on working a tree that its runner no longer watches. Its own children are
    // stopped through the process group (by this runner, or by the next one from the
    // journal's record of the group).
    crate::process::die_with_parent(command.as_std_mut());
    let stats_started = crate::stats::agent_starting();
    let mut child = command.spawn().map_err(|source| AgentError::Spawn {
        program: program_name.clone(),
        source,
    })?;
    crate::git::repo::answers::child_started();
    crate::stats::spawned(false);
    let pid = child.id().unwrap_or(0);
    tracing::debug!(program = %program_name, pid, cwd = %run.cwd.display(), "agent started");
    let pgid = pid as i32;
    on_spawn(pgid);
    let mut guard = GroupGuard {
        pgid,
        armed: pgid > 1,
    };

    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; CHUNK];
    let mut err_buf = vec![0u8; CHUNK];
    let mut out_tail = Tail::new(run.tail_bytes);
    let mut err_tail = Tail::new(run.tail_bytes);
    let mut stdout_bytes = 0u64;
    let mut stderr_bytes = 0u64;
    let mut live_log_error: Option<String> = None;

    let far_future = started + Duration::from_secs(100 * 365 * 24 * 3600);
    let deadline = if disabled(run.timeout) {
        far_future
    } else {
        started + run.timeout
    };
    let mut last_output = started;
    let mut status: Option<ExitStatus> = None;
    let mut stop: Option<StopReason> = None;
    let mut sigkill_at: Option<Instant> = None;
    let mut abandon_at: Option<Instant> = None;
    let mut watch_cancel = true;

    if *cancel.borrow_and_update() {
        stop = Some(StopReason::Cancel);
        let _ = cleanup::signal_group(pgid, Signal::TERM);
        sigkill_at = Some(Instant::now() + run.kill_grace);
    }

    while stdout.is_some() || stderr.is_some() || status.is_none() {
        let idle_deadline = if disabled(run.idle_timeout) {
            far_future
        } else {
            last_output + run.idle_timeout
        };
        tokio::select! {
            n = read_chunk(&mut stdout, &mut out_buf) => {
                if n == 0 {
                    stdout = None;
                    continue;
                }
                let chunk = &out_buf[..n];
                last_output = Instant::now();
                stdout_bytes += n as u64;
                out_tail.push(chunk);
                let keep_going = on_stdout(chunk);
                write_live(&mut live_log, chunk, &mut live_log_error);
                if !keep_going && stop.is_none() {
                    stop = Some(StopReason::Stream);
                    let _ = cleanup::signal_group(pgid, Signal::TERM);
                    sigkill_at = Some(Instant::now() + run.kill_grace);
                }
            }
            n = read_chunk(&mut stderr, &mut err_buf) => {
                if n == 0 {
                    stderr = None;
                    continue;
                }
                let chunk = &err_buf[..n];
                last_output = Instant::now();
                stderr_bytes += n as u64;
                err_tail.push(chunk);
                write_live(&mut live_log, chunk, &mut live_log_error);
            }
            result = child.wait(), if status.is_none() => {
                let exit = result.map_err(|source| AgentError::Wait {
                    program: program_name.clone(),
                    pid,
                    source,
                })?;
                status = Some(exit);
                if stop.is_none() {
                    stop = Some(StopReason::LeaderExited);
                    if cleanup::group_alive(pgid) {
                        let _ = cleanup::signal_group(pgid, Signal::TERM);
                        sigkill_at = Some(Instant::now() + run.kill_grace);
                    }
                }
                // Output still buffered in the pipes is read below; only stragglers that
                // keep the pipes open longer than this are cut off.
                abandon_at = Some(sigkill_at.unwrap_or_else(Instant::now) + DRAIN_AFTER_KILL);
            }
            _ = sleep_until(deadline), if stop.is_none() => {
                stop = Some(StopReason::Timeout);
                let _ = cleanup::signal_group(pgid, Signal::TERM);
                sigkill_at = Some(Instant::now() + run.kill_grace);
            }
            _ = sleep_until(idle_deadline), if stop.is_none() => {
                stop = Some(StopReason::Idle);
                let _ = cleanup::signal_group(pgid, Signal::TERM);
                sigkill_at = Some(Instant::now() + run.kill_grace);
            }
            changed = cancel.changed(), if stop.is_none() && watch_cancel => {
                match changed {
                    Ok(()) if *cancel.borrow_and_update() => {
                        stop = Some(StopReason::Cancel);
                        let _ = cleanup::signal_group(pgid, Signal::TERM);
                        sigkill_at = Some(Instant::now() + run.kill_grace);
                    }
                    Ok(()) => {}
                    // No sender left: nobody can ask for a shutdown any more.
                    Err(_) => watch_cancel = false,
                }
            }
            _ = sleep_until(sigkill_at.unwrap_or(far_future)), if sigkill_at.is_some() => {
                let _ = cleanup::signal_group(pgid, Signal::KILL);
                sigkill_at = None;
            }
            _ = sleep_until(abandon_at.unwrap_or(far_future)), if abandon_at.is_some() => {
                // Something outside the group (it called setsid) holds the pipes open.
                break;
            }
        }
    }
    drop(stdout);
    drop(stderr);

    // The pipes closed, but members that closed their copies (a daemonised grandchild) may
    // still run; the group must be empty before we return.
    reap_group(pgid, sigkill_at, run.kill_grace).await;
    guard.armed = false;
    crate::stats::agent_finished(stats_started);

    if live_log_error.is_none() {
        if let Err(err) = live_log.finish() {
            live_log_error = Some(err.to_string());
        }
    }

    let status = status.unwrap_or_else(|| ExitStatus::from_raw(0));
    Ok(AgentExit {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out: stop == Some(StopReason::Timeout),
        idle_timed_out: stop == Some(StopReason::Idle),
        cancelled: stop == Some(StopReason::Cancel),
        stopped: stop == Some(StopReason::Stream),
        stdout_tail: out_tail.into_string(),
        stderr_tail: err_tail.into_string(),
        stdout_bytes,
        stderr_bytes,
        duration: started.elapsed(),
        pid,
        live_log_error,
    })
}

/// Writes synchronously: a write lands in the page cache in microseconds, and the occasional
/// cut-back of the tail is bounded by the cap; handing each chunk to a blocking thread would
/// cost more than it saves and complicate the cut.
fn write_live(log: &mut LiveLog, chunk: &[u8], error: &mut Option<String>) {
    if error.is_some() {
        return;
    }
    if let Err(err) = log.write(chunk) {
        *error = Some(err.to_string());
    }
}

/// Ends every remaining member of group `pgid` through the one group killer, on a blocking
/// thread: SIGTERM (unless a SIGKILL is already scheduled), the grace period, then SIGKILL.
async fn reap_group(pgid: i32, pending_sigkill: Option<Instant>, grace: Duration) {
    let (kill_at, term_sent) = match pending_sigkill {
        Some(at) => (at.into_std(), true),
        None => (std::time::Instant::now() + grace, false),
    };
    let _ = tokio::task::spawn_blocking(move || cleanup::end_group(pgid, kill_at, term_sent)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;
    use tempfile::TempDir;

    fn script(dir: &TempDir, name: &str, body: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn agent_run(dir: &TempDir, program: PathBuf) -> AgentRun {
        AgentRun {
            program,
            args: Vec::new(),
            cwd: dir.path().to_path_buf(),
            env: Vec::new(),
            timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            kill_grace: Duration::from_millis(500),
            live_log: dir.path().join("step-live.log"),
            live_log_cap: LiveCap::for_budget(500 * 1024 * 1024),
            tail_bytes: 64 * 1024,
        }
    }

    fn no_cancel() -> watch::Receiver<bool> {
        let (tx, rx) = watch::channel(false);
        // Keep the sender alive for the whole test so `changed()` never errors early.
        std::mem::forget(tx);
        rx
    }

    async fn run_collect(run: &AgentRun) -> (AgentExit, Vec<u8>) {
        let mut seen = Vec::new();
        let exit = run_agent(run, &mut |c: &[u8]| seen.extend_from_slice(c), no_cancel())
            .await
            .unwrap();
        (exit, seen)
    }

    fn first_pid(stdout: &[u8]) -> i32 {
        String::from_utf8_lossy(stdout)
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn tail_keeps_only_the_last_bytes() {
        let mut tail = Tail::new(4);
        tail.push(b"ab");
        tail.push(b"cd");
        tail.push(b"ef");
        assert_eq!(tail.into_string(), "cdef");

        let mut tail = Tail::new(4);
        tail.push(b"0123456789");
        assert_eq!(tail.into_string(), "6789");

        let mut tail = Tail::new(4);
        for _ in 0..1000 {
            tail.push(b"xyz");
            assert!(tail.buf.len() <= 8);
        }
        assert_eq!(tail.into_string(), "zxyz");
    }

    #[test]
    fn tail_drops_a_utf8_sequence_split_by_the_cut() {
        let mut tail = Tail::new(4);
        tail.push("aé€".as_bytes()); // 1 + 2 + 3 bytes; the last 4 start inside "é"
        assert_eq!(tail.into_string(), "€");
        let mut whole = Tail::new(16);
        whole.push("é€".as_bytes());
        assert_eq!(whole.into_string(), "é€");
    }

    #[tokio::test]
    async fn streams_stdout_and_stderr_to_the_callback_the_log_and_the_tails() {
        let dir = TempDir::new().unwrap();
        let program = script(
            &dir,
            "agent.sh",
            "echo \"step=$SDLC_STEP arg=$1\"; echo oops >&2; pwd; exit 3",
        );
        let mut run = agent_run(&dir, program);
        run.args = vec!["first arg; $(not a shell)".into()];
        run.env = vec![("SDLC_STEP".into(), "implement".into())];
        std::fs::write(&run.live_log, "stale content from an older attempt\n").unwrap();
        std::fs::set_permissions(&run.live_log, Permissions::from_mode(0o644)).unwrap();

        let (exit, seen) = run_collect(&run).await;
        let cwd = dir.path().canonicalize().unwrap();
        let expected_stdout = format!(
            "step=implement arg=first arg; $(not a shell)\n{}\n",
            cwd.display()
        );
        assert_eq!(String::from_utf8(seen).unwrap(), expected_stdout);
        assert_eq!(exit.stdout_tail, expected_stdout);
        assert_eq!(exit.stderr_tail, "oops\n");
        assert_eq!(exit.stdout_bytes, expected_stdout.len() as u64);
        assert_eq!(exit.stderr_bytes, 5);
        assert_eq!(exit.exit_code, Some(3));
        assert_eq!(exit.signal, None);
        assert!(!exit.killed_by_runner());
        assert!(exit.pid > 0);
        assert_eq!(exit.live_log_error, None);

        let log = std::fs::read_to_string(&run.live_log).unwrap();
        assert!(!log.contains("stale"), "live log truncated at start: {log}");
        assert!(log.contains("step=implement") && log.contains("oops\n"));
        assert_eq!(log.len(), expected_stdout.len() + 5);
        let mode = std::fs::metadata(&run.live_log)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn reports_the_signal_that_ended_the_agent() {
        let dir = TempDir::new().unwrap();
        let run = agent_run(&dir, script(&dir, "agent.sh", "kill -KILL $$"));
        let (exit, _) = run_collect(&run).await;
        assert_eq!(exit.exit_code, None);
        assert_eq!(exit.signal, Some(Signal::KILL.as_raw()));
        assert!(!exit.killed_by_runner());
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error_naming_it() {
        let dir = TempDir::new().unwrap();
        let run = agent_run(&dir, PathBuf::from("claude-definitely-not-installed"));
        let err = run_agent(&run, &mut |_: &[u8]| {}, no_cancel())
            .await
            .unwrap_err();
        assert!(matches!(err, AgentError::Spawn { .. }));
        let message = err.to_string();
        assert!(
            message.starts_with(
                "agent command `claude-definitely-not-installed` could not be started: \
                 No such file or directory"
            ),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_missing_working_directory_is_not_blamed_on_the_program() {
        let dir = TempDir::new().unwrap();
        let mut run = agent_run(&dir, script(&dir, "agent.sh", "exit 0"));
        run.cwd = dir.path().join("gone");
        let err = run_agent(&run, &mut |_: &[u8]| {}, no_cancel())
            .await
            .unwrap_err();
        assert!(matches!(err, AgentError::WorkingDir { .. }), "{err}");
        assert!(err.to_string().contains("projectPath"));
    }

    #[tokio::test]
    async fn wall_clock_timeout_terminates_the_agent() {
        let dir = TempDir::new().unwrap();
        let mut run = agent_run(
            &dir,
            script(&dir, "agent.sh", "echo started; exec sleep 30"),
        );
        run.timeout = Duration::from_millis(300);
        let (exit, seen) = run_collect(&run).await;
        assert!(exit.timed_out && !exit.idle_timed_out && !exit.cancelled);
        assert_eq!(exit.signal, Some(Signal::TERM.as_raw()));
        assert_eq!(seen, b"started\n");
        assert!(
            exit.duration < Duration::from_secs(5),
            "{:?}",
            exit.duration
        );
        assert!(!cleanup::group_alive(exit.pid as i32));
    }

    #[tokio::test]
    async fn idle_timeout_fires_only_when_output_stops() {
        let dir = TempDir::new().unwrap();
        let chatty = script(
            &dir,
            "chatty.sh",
            "for i in 1 2 3 4 5 6 7 8; do echo tick; sleep 0.1; done",
        );
        let mut run = agent_run(&dir, chatty);
        run.idle_timeout = Duration::from_millis(600);
        let (exit, _) = run_collect(&run).await;
        assert!(!exit.idle_timed_out, "steady output is not idle");
        assert_eq!(exit.exit_code, Some(0));

        let hung = script(
            &dir,
            "hung.sh",
            "echo thinking; echo warn >&2; exec sleep 30",
        );
        let mut run = agent_run(&dir, hung);
        run.idle_timeout = Duration::from_millis(400);
        let (exit, _) = run_collect(&run).await;
        assert!(exit.idle_timed_out && !exit.timed_out);
        assert!(exit.duration < Duration::from_secs(5));
        assert_eq!(exit.stderr_tail, "warn\n");
    }

    #[tokio::test]
    async fn an_agent_ignoring_sigterm_is_killed_after_the_grace_period() {
        let dir = TempDir::new().unwrap();
        let program = script(
            &dir,
            "agent.sh",
            "trap '' TERM; echo ready; sleep 30; sleep 30",
        );
        let mut run = agent_run(&dir, program);
        run.timeout = Duration::from_millis(300);
        run.kill_grace = Duration::from_millis(400);
        let (exit, _) = run_collect(&run).await;
        assert!(exit.timed_out);
        assert_eq!(exit.signal, Some(Signal::KILL.as_raw()));
        assert!(exit.duration >= Duration::from_millis(700));
        assert!(
            exit.duration < Duration::from_secs(5),
            "{:?}",
            exit.duration
        );
        assert!(!cleanup::group_alive(exit.pid as i32));
    }

    #[tokio::test]
    async fn grandchildren_do_not_outlive_the_agent() {
        let dir = TempDir::new().unwrap();
        // Detached from the pipes: the agent's EOF does not wait for it.
        let detached = script(
            &dir,
            "detached.sh",
            "sleep 300 >/dev/null 2>&1 </dev/null & echo $!; exit 0",
        );
        let (exit, seen) = run_collect(&agent_run(&dir, detached)).await;
        assert_eq!(exit.exit_code, Some(0));
        let grandchild = first_pid(&seen);
        assert!(
            !cleanup::process_alive(grandchild),
            "orphan {grandchild} killed"
        );

        // Holding the pipes open and ignoring SIGTERM: without the group kill this would
        // block for 300 s.
        let stubborn = script(
            &dir,
            "stubborn.sh",
            "(trap '' TERM; exec sleep 300) & echo $!; exit 0",
        );
        let mut run = agent_run(&dir, stubborn);
        run.kill_grace = Duration::from_millis(300);
        let (exit, seen) = run_collect(&run).await;
        assert_eq!(exit.exit_code, Some(0));
        assert!(!exit.killed_by_runner(), "the agent itself exited normally");
        let grandchild = first_pid(&seen);
        assert!(
            !cleanup::process_alive(grandchild),
            "orphan {grandchild} killed"
        );
        assert!(!cleanup::group_alive(exit.pid as i32));
        assert!(
            exit.duration < Duration::from_secs(5),
            "{:?}",
            exit.duration
        );
    }

    #[tokio::test]
    async fn cancel_stops_the_agent_and_its_children() {
        let dir = TempDir::new().unwrap();
        let program = script(&dir, "agent.sh", "sleep 300 & echo $!; wait");
        let run = agent_run(&dir, program);
        let (tx, rx) = watch::channel(false);
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            tx.send(true).unwrap();
            tx
        });
        let mut seen = Vec::new();
        let exit = run_agent(&run, &mut |c: &[u8]| seen.extend_from_slice(c), rx)
            .await
            .unwrap();
        let _tx = canceller.await.unwrap();
        assert!(exit.cancelled && !exit.timed_out && !exit.idle_timed_out);
        assert!(exit.duration < Duration::from_secs(5));
        assert!(!cleanup::process_alive(first_pid(&seen)));

        // A shutdown requested before the start still stops the agent at once.
        let (_tx, rx) = watch::channel(true);
        let exit = run_agent(&run, &mut |_: &[u8]| {}, rx).await.unwrap();
        assert!(exit.cancelled);
        assert!(exit.duration < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn the_stream_callback_can_stop_the_agent() {
        let dir = TempDir::new().unwrap();
        let program = script(
            &dir,
            "agent.sh",
            "sleep 300 & echo $!; while true; do echo tool; sleep 0.05; done",
        );
        let run = agent_run(&dir, program);
        let mut seen = Vec::new();
        let mut lines = 0;
        let exit = run_agent_stoppable(
            &run,
            &mut |c: &[u8]| {
                seen.extend_from_slice(c);
                lines += c.iter().filter(|b| **b == b'\n').count();
                lines < 5
            },
            no_cancel(),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert!(exit.stopped && exit.killed_by_runner());
        assert!(!exit.timed_out && !exit.idle_timed_out && !exit.cancelled);
        assert!(
            exit.duration < Duration::from_secs(5),
            "{:?}",
            exit.duration
        );
        assert!(!cleanup::process_alive(first_pid(&seen)));
        assert!(!cleanup::group_alive(exit.pid as i32));
    }

    #[tokio::test]
    async fn a_dropped_cancel_sender_is_not_a_cancel() {
        let dir = TempDir::new().unwrap();
        let run = agent_run(&dir, script(&dir, "agent.sh", "sleep 0.3; echo done"));
        let (tx, rx) = watch::channel(false);
        drop(tx);
        let exit = run_agent(&run, &mut |_: &[u8]| {}, rx).await.unwrap();
        assert!(!exit.cancelled);
        assert_eq!(exit.stdout_tail, "done\n");
    }

    #[tokio::test]
    async fn dropping_the_future_kills_the_agent_group() {
        let dir = TempDir::new().unwrap();
        let program = script(&dir, "agent.sh", "sleep 300 & echo $!; wait");
        let run = agent_run(&dir, program);
        let mut seen = Vec::new();
        let outcome = tokio::time::timeout(
            Duration::from_millis(500),
            run_agent(&run, &mut |c: &[u8]| seen.extend_from_slice(c), no_cancel()),
        )
        .await;
        assert!(outcome.is_err(), "the agent was still running");
        let grandchild = first_pid(&seen);
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !cleanup::process_alive(grandchild)
        });
        assert!(
            gone,
            "grandchild {grandchild} killed when the attempt was abandoned"
        );
    }

    fn peak_rss_kib() -> u64 {
        crate::stats::peak_rss_kib().expect("VmHWM in /proc/self/status")
    }

    #[tokio::test]
    async fn hundreds_of_megabytes_of_output_keep_memory_flat() {
        const TOTAL: u64 = 300_000_000;
        let dir = TempDir::new().unwrap();
        let program = script(
            &dir,
            "flood.sh",
            &format!("head -c {TOTAL} /dev/zero | tr '\\0' 'x'; head -c 100000 /dev/zero | tr '\\0' 'e' >&2"),
        );
        let mut run = agent_run(&dir, program);
        run.tail_bytes = 64 * 1024;
        run.live_log_cap = LiveCap::for_budget(50 * 1024 * 1024);
        let peak_before = peak_rss_kib();
        let mut counted = 0u64;
        let exit = run_agent(&run, &mut |c: &[u8]| counted += c.len() as u64, no_cancel())
            .await
            .unwrap();
        let grown_kib = peak_rss_kib().saturating_sub(peak_before);

        assert_eq!(exit.exit_code, Some(0));
        assert_eq!(exit.stdout_bytes, TOTAL);
        assert_eq!(counted, TOTAL);
        assert_eq!(exit.stdout_tail.len(), 64 * 1024);
        assert!(exit.stdout_tail.bytes().all(|b| b == b'x'));
        assert_eq!(exit.stderr_tail.len(), 64 * 1024);
        // The live log is capped: its head, a marker, and the stderr that came last.
        let cap = run.live_log_cap;
        let live = std::fs::read(&run.live_log).unwrap();
        assert!(
            live.len() as u64 <= cap.at_rest() && live.len() as u64 > cap.head + cap.tail,
            "{} bytes",
            live.len()
        );
        assert!(live[..cap.head as usize].iter().all(|b| *b == b'x'));
        assert!(live.ends_with(&[b'e'; 100_000]));
        let dropped = format!("{} bytes dropped", TOTAL + 100_000 - cap.head - cap.tail);
        assert!(
            String::from_utf8_lossy(&live).contains(&dropped),
            "{dropped}"
        );
        assert!(grown_kib < 64 * 1024, "peak RSS grew by {grown_kib} KiB");
        assert!(
            exit.duration < Duration::from_secs(20),
            "{:?}",
            exit.duration
        );
    }
}
