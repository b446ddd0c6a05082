//! The agent port's adapter. This module runs one attempt of any agent CLI as a child
//! process; `stream` reads Claude Code's stream-json and `classify` judges an attempt; `cli`
//! holds what differs per CLI (invocation, stream reader, classification, doctor checks);
//! `tokens` prices what a CLI reports in tokens. (The scripted stand-in CLI of the demo and the
//! end-to-end tests is not here: it lives in `fake_agent`, which the run path never names.)
//!
//! One agent attempt as a child process (docs/interfaces.md "Agent invocation", docs/persistence.md signals): spawned in
//! its own process group, its output streamed to the live log and to the caller's parser as
//! it arrives, bounded by a wall-clock and an idle timeout, and its whole process group gone
//! when [`run_agent`] returns.
//!
//! Memory stays flat whatever the agent prints: only the last `tail_bytes` of stdout and of
//! stderr are kept. Disk use is flat too: the live log keeps a head and a rolling tail
//! ([`LiveCap`](crate::logs::LiveCap)).

pub mod classify;
pub mod cli;
mod port;
pub mod sandbox;
pub mod stream;
pub mod tokens;

pub use port::ProcessAgent;

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use crate::cleanup;
use crate::logs::LiveLog;
use rustix::process::Signal;

/// Read buffer per stream; large enough that a chatty agent costs few wakeups.
const CHUNK: usize = 64 * 1024;

/// After SIGKILL, how long to keep reading pipes that something outside the group (a process
/// that called `setsid`) may still hold open, before abandoning them.
const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

pub use crate::ports::agent::{AgentError, AgentExit, AgentRun, MAX_ARG_BYTES};

impl AgentError {
    /// The agent could not be started: `E2BIG` is a command line too long, never a program
    /// missing.
    fn spawn(program: &str, args: &[String], source: io::Error) -> AgentError {
        if source.raw_os_error() == Some(rustix::io::Errno::TOOBIG.raw_os_error()) {
            return AgentError::ArgumentsTooLong {
                program: program.to_string(),
                bytes: args.iter().map(String::len).sum(),
                longest: args.iter().map(String::len).max().unwrap_or(0),
                source,
            };
        }
        AgentError::Spawn {
            program: program.to_string(),
            source,
        }
    }
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
    // Every process the agent starts carries the attempt's mark, whatever group or session
    // it moves to: what is left of them is stopped when the attempt ends.
    let attempt = crate::process::reaper::begin();
    let mark = attempt.mark();
    let mut command = Command::new(&run.program);
    if run.isolated_env {
        command.env_clear();
    }
    command
        .args(&run.args)
        .current_dir(&run.cwd)
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .envs(mark.vars(Some(&run.cwd)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // The runner's own API tokens (`tokenEnv`) are its, not the agent's, even when configured
    // into the agent's `env` by mistake.
    for var in crate::api_client::withheld_vars() {
        command.env_remove(var);
    }
    // The agent gets SIGKILL when the runner dies, however it dies: an unattended agent must
    // never go on working a tree that its runner no longer watches. Its own children are
    // stopped through the process group (by this runner, or by the next one from the
    // journal's record of the group).
    crate::process::die_with_parent(command.as_std_mut());
    let stats_started = crate::stats::agent_starting();
    // A script written just before while another thread forked is busy (ETXTBSY) for a
    // moment: a few short retries, as for the runner's other children, rather than an
    // environment halt for a race of the runner's own.
    let mut busy_retries = 0;
    let mut child = loop {
        match crate::process::reaper::spawned(|| command.spawn(), tokio::process::Child::id) {
            Err(e)
                if e.raw_os_error() == Some(rustix::io::Errno::TXTBSY.raw_os_error())
                    && busy_retries < 10 =>
            {
                busy_retries += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            spawned => {
                break spawned
                    .map_err(|source| AgentError::spawn(&program_name, &run.args, source))?
            }
        }
    };
    crate::process::children::child_started();
    crate::stats::agent_spawned();
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
        terminate(pgid, mark);
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
                    terminate(pgid, mark);
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
                crate::process::reaper::reaped(pid);
                if stop.is_none() {
                    stop = Some(StopReason::LeaderExited);
                    // A child that left the group (setsid) but carries the attempt's mark
                    // holds the pipes as long as it lives.
                    let escaped = mark.signal(Signal::TERM) > 0;
                    if cleanup::group_alive(pgid) || escaped {
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
                terminate(pgid, mark);
                sigkill_at = Some(Instant::now() + run.kill_grace);
            }
            _ = sleep_until(idle_deadline), if stop.is_none() => {
                stop = Some(StopReason::Idle);
                terminate(pgid, mark);
                sigkill_at = Some(Instant::now() + run.kill_grace);
            }
            changed = cancel.changed(), if stop.is_none() && watch_cancel => {
                match changed {
                    Ok(()) if *cancel.borrow_and_update() => {
                        stop = Some(StopReason::Cancel);
                        terminate(pgid, mark);
                        sigkill_at = Some(Instant::now() + run.kill_grace);
                    }
                    Ok(()) => {}
                    // No sender left: nobody can ask for a shutdown any more.
                    Err(_) => watch_cancel = false,
                }
            }
            _ = sleep_until(sigkill_at.unwrap_or(far_future)), if sigkill_at.is_some() => {
                let _ = cleanup::signal_group(pgid, Signal::KILL);
                mark.signal(Signal::KILL);
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
    let grace = run.kill_grace;
    let _ = tokio::task::spawn_blocking(move || attempt.end(grace)).await;
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

/// SIGTERM to the agent's group and to whatever carries the attempt's mark outside it.
fn terminate(pgid: i32, mark: crate::process::reaper::Mark) {
    let _ = cleanup::signal_group(pgid, Signal::TERM);
    mark.signal(Signal::TERM);
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
mod tests;
