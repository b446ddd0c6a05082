//! A long child read as it runs (the agent): a [`ChildSpec`] started in its own group with
//! SIGKILL on the runner's death, every chunk of its output handed to the caller as it
//! arrives, bounded by a wall-clock deadline and an idle deadline, stopped on request (the
//! run's stop, or the caller's output callback), and its whole process group gone when
//! [`run_streaming`] returns. Only the last `tail_bytes` of each stream are kept.
//!
//! Stopping is SIGTERM to the group and to whatever carries the attempt's mark outside it,
//! then SIGKILL after the grace period.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::time::{sleep_until, Instant};

use super::output::Tail;
use super::reaper::Mark;
use super::ChildSpec;
use crate::cleanup;

/// Read buffer per stream; large enough that a chatty agent costs few wakeups.
const CHUNK: usize = 64 * 1024;

/// After SIGKILL, how long to keep reading pipes that something outside the group (a process
/// that called `setsid`) may still hold open, before abandoning them.
pub const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// The bounds of one streamed child; a zero `timeout` or `idle_timeout` is no bound.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    pub timeout: Duration,
    pub idle_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// Bytes of each stream's tail kept.
    pub tail_bytes: usize,
}

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Why the runner started stopping the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Timeout,
    Idle,
    Cancel,
    /// The output callback asked for it.
    Stream,
    /// The child itself exited; whatever is left in its group is an orphan.
    LeaderExited,
}

/// What a streamed child did.
#[derive(Debug)]
pub struct Streamed {
    pub status: ExitStatus,
    pub stop: Option<StopReason>,
    pub stdout_tail: String,
    pub stderr_tail: String,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub pid: u32,
}

/// Why a streamed child could not be run.
#[derive(Debug)]
pub enum StreamError {
    Spawn(io::Error),
    Wait { pid: u32, source: io::Error },
}

/// Kills the child's process group if [`run_streaming`]'s future is dropped before it
/// finished (for example by an enclosing `select!`), so no child outlives the runner's
/// interest in it.
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

/// Runs `spec` to completion, dying with the runner, carrying `mark`. Every chunk of its
/// output goes to `on_output` in order; when that returns `false`, the child is stopped as
/// for a timeout and the stop reason says [`StopReason::Stream`]. `on_spawn(pgid)` is called
/// as soon as the group exists, before any output is read. When this returns `Ok`, the
/// child's group has no live member left: the child is reaped and its children were sent
/// SIGTERM and then SIGKILL. What carries `mark` outside the group is the caller's to end.
pub async fn run_streaming(
    mut spec: ChildSpec,
    mark: Mark,
    limits: StreamLimits,
    on_output: &mut (dyn FnMut(Stream, &[u8]) -> bool + Send),
    mut cancel: watch::Receiver<bool>,
    on_spawn: &mut (dyn FnMut(i32) + Send),
) -> Result<Streamed, StreamError> {
    let started = Instant::now();
    spec.dies_with_parent();
    let mut child = spec.spawn_async(mark).await.map_err(StreamError::Spawn)?;
    let pid = child.id().unwrap_or(0);
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
    let mut out_tail = Tail::new(limits.tail_bytes);
    let mut err_tail = Tail::new(limits.tail_bytes);
    let mut stdout_bytes = 0u64;
    let mut stderr_bytes = 0u64;

    let far_future = started + Duration::from_secs(100 * 365 * 24 * 3600);
    let deadline = if disabled(limits.timeout) {
        far_future
    } else {
        started + limits.timeout
    };
    let mut last_output = started;
    let mut status: Option<ExitStatus> = None;
    let mut stop: Option<StopReason> = None;
    let mut sigkill_at: Option<Instant> = None;
    let mut abandon_at: Option<Instant> = None;
    let mut watch_cancel = true;

    if *cancel.borrow_and_update() {
        stop = Some(StopReason::Cancel);
        sigkill_at = terminate(pgid, mark, limits.kill_grace);
    }

    while stdout.is_some() || stderr.is_some() || status.is_none() {
        let idle_deadline = if disabled(limits.idle_timeout) {
            far_future
        } else {
            last_output + limits.idle_timeout
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
                let keep_going = on_output(Stream::Stdout, chunk);
                if !keep_going && stop.is_none() {
                    stop = Some(StopReason::Stream);
                    sigkill_at = terminate(pgid, mark, limits.kill_grace);
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
                let keep_going = on_output(Stream::Stderr, chunk);
                if !keep_going && stop.is_none() {
                    stop = Some(StopReason::Stream);
                    sigkill_at = terminate(pgid, mark, limits.kill_grace);
                }
            }
            result = child.wait(), if status.is_none() => {
                let exit = result.map_err(|source| StreamError::Wait { pid, source })?;
                status = Some(exit);
                super::reaper::reaped(pid);
                if stop.is_none() {
                    stop = Some(StopReason::LeaderExited);
                    // A child that left the group (setsid) but carries the attempt's mark
                    // holds the pipes as long as it lives.
                    let escaped = mark.signal(Signal::TERM) > 0;
                    if cleanup::group_alive(pgid) || escaped {
                        let _ = cleanup::signal_group(pgid, Signal::TERM);
                        sigkill_at = Some(Instant::now() + limits.kill_grace);
                    }
                }
                // Output still buffered in the pipes is read below; only stragglers that
                // keep the pipes open longer than this are cut off.
                abandon_at = Some(sigkill_at.unwrap_or_else(Instant::now) + DRAIN_AFTER_KILL);
            }
            _ = sleep_until(deadline), if stop.is_none() => {
                stop = Some(StopReason::Timeout);
                sigkill_at = terminate(pgid, mark, limits.kill_grace);
            }
            _ = sleep_until(idle_deadline), if stop.is_none() => {
                stop = Some(StopReason::Idle);
                sigkill_at = terminate(pgid, mark, limits.kill_grace);
            }
            changed = cancel.changed(), if stop.is_none() && watch_cancel => {
                match changed {
                    Ok(()) if *cancel.borrow_and_update() => {
                        stop = Some(StopReason::Cancel);
                        sigkill_at = terminate(pgid, mark, limits.kill_grace);
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
    reap_group(pgid, sigkill_at, limits.kill_grace).await;
    guard.armed = false;

    Ok(Streamed {
        status: status.unwrap_or_else(|| ExitStatus::from_raw(0)),
        stop,
        stdout_tail: out_tail.into_string(),
        stderr_tail: err_tail.into_string(),
        stdout_bytes,
        stderr_bytes,
        pid,
    })
}

/// SIGTERM to the child's group and to whatever carries the attempt's mark outside it: when
/// the SIGKILL follows, after `grace`.
fn terminate(pgid: i32, mark: Mark, grace: Duration) -> Option<Instant> {
    let _ = cleanup::signal_group(pgid, Signal::TERM);
    mark.signal(Signal::TERM);
    Some(Instant::now() + grace)
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
