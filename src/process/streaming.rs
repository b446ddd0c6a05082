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
    let mut stdout = Pipe::new(child.stdout.take(), limits.tail_bytes);
    let mut stderr = Pipe::new(child.stderr.take(), limits.tail_bytes);
    let far_future = started + Duration::from_secs(100 * 365 * 24 * 3600);
    // A zero limit is no bound.
    let bound = |from: Instant, limit: Duration| match limit.is_zero() {
        true => far_future,
        false => from + limit,
    };
    let deadline = bound(started, limits.timeout);
    let mut last_output = started;
    let mut status: Option<ExitStatus> = None;
    let mut stopping = Stopping::new(pgid, mark, limits.kill_grace);
    let mut watch_cancel = true;
    if *cancel.borrow_and_update() {
        stopping.start(StopReason::Cancel);
    }
    while stdout.open() || stderr.open() || status.is_none() {
        let idle_deadline = bound(last_output, limits.idle_timeout);
        let stopped = stopping.stop.is_some();
        tokio::select! {
            chunk = stdout.read() => match chunk {
                Some(chunk) => last_output = stopping.output(on_output(Stream::Stdout, chunk)),
                None => continue,
            },
            chunk = stderr.read() => match chunk {
                Some(chunk) => last_output = stopping.output(on_output(Stream::Stderr, chunk)),
                None => continue,
            },
            result = child.wait(), if status.is_none() => {
                let exit = result.map_err(|source| StreamError::Wait { pid, source })?;
                status = Some(exit);
                super::reaper::reaped(pid);
                stopping.leader_exited();
            }
            _ = sleep_until(deadline), if !stopped => stopping.start(StopReason::Timeout),
            _ = sleep_until(idle_deadline), if !stopped => stopping.start(StopReason::Idle),
            changed = cancel.changed(), if !stopped && watch_cancel => {
                match changed {
                    Ok(()) if *cancel.borrow_and_update() => stopping.start(StopReason::Cancel),
                    Ok(()) => {}
                    // No sender left: nobody can ask for a shutdown any more.
                    Err(_) => watch_cancel = false,
                }
            }
            _ = sleep_until(stopping.sigkill_at.unwrap_or(far_future)), if stopping.sigkill_at.is_some() => stopping.kill(),
            _ = sleep_until(stopping.abandon_at.unwrap_or(far_future)), if stopping.abandon_at.is_some() => {
                // Something outside the group (it called setsid) holds the pipes open.
                break;
            }
        }
    }
    drop((stdout.reader.take(), stderr.reader.take()));
    // The pipes closed, but members that closed their copies (a daemonised grandchild) may
    // still run; the group must be empty before we return.
    reap_group(pgid, stopping.sigkill_at, limits.kill_grace).await;
    guard.armed = false;
    let status = status.unwrap_or_else(|| ExitStatus::from_raw(0));
    Ok(streamed(status, stopping.stop, stdout, stderr, pid))
}

fn streamed<O, E>(
    status: ExitStatus,
    stop: Option<StopReason>,
    stdout: Pipe<O>,
    stderr: Pipe<E>,
    pid: u32,
) -> Streamed {
    Streamed {
        status,
        stop,
        stdout_tail: stdout.tail.into_string(),
        stderr_tail: stderr.tail.into_string(),
        stdout_bytes: stdout.bytes,
        stderr_bytes: stderr.bytes,
        pid,
    }
}

/// One of the child's output pipes: read in chunks until it closes, its tail kept and its
/// bytes counted.
struct Pipe<R> {
    reader: Option<R>,
    buf: Vec<u8>,
    tail: Tail,
    bytes: u64,
}

impl<R: AsyncRead + Unpin> Pipe<R> {
    fn new(reader: Option<R>, tail_bytes: usize) -> Pipe<R> {
        Pipe {
            reader,
            buf: vec![0u8; CHUNK],
            tail: Tail::new(tail_bytes),
            bytes: 0,
        }
    }

    fn open(&self) -> bool {
        self.reader.is_some()
    }

    /// The next chunk, kept in the tail and counted; `None` once the pipe closed (and for
    /// good after: the reader is dropped).
    async fn read(&mut self) -> Option<&[u8]> {
        let n = read_chunk(&mut self.reader, &mut self.buf).await;
        if n == 0 {
            self.reader = None;
            return None;
        }
        let chunk = &self.buf[..n];
        self.bytes += n as u64;
        self.tail.push(chunk);
        Some(chunk)
    }
}

/// Why and when the child is being stopped: the first reason wins, SIGTERM goes at once and
/// SIGKILL at `sigkill_at`; past `abandon_at` the pipes are no longer waited for.
struct Stopping {
    pgid: i32,
    mark: Mark,
    grace: Duration,
    stop: Option<StopReason>,
    sigkill_at: Option<Instant>,
    abandon_at: Option<Instant>,
}

impl Stopping {
    fn new(pgid: i32, mark: Mark, grace: Duration) -> Stopping {
        Stopping {
            pgid,
            mark,
            grace,
            stop: None,
            sigkill_at: None,
            abandon_at: None,
        }
    }

    fn start(&mut self, reason: StopReason) {
        if self.stop.is_none() {
            self.stop = Some(reason);
            self.sigkill_at = terminate(self.pgid, self.mark, self.grace);
        }
    }

    /// The child itself exited: whatever is left of its group is an orphan, stopped the same
    /// way; output still buffered in the pipes is read, and only stragglers that keep them
    /// open longer than [`DRAIN_AFTER_KILL`] past the SIGKILL are cut off.
    fn leader_exited(&mut self) {
        if self.stop.is_none() {
            self.stop = Some(StopReason::LeaderExited);
            // A child that left the group (setsid) but carries the attempt's mark holds the
            // pipes as long as it lives.
            let escaped = self.mark.signal(Signal::TERM) > 0;
            if cleanup::group_alive(self.pgid) || escaped {
                let _ = cleanup::signal_group(self.pgid, Signal::TERM);
                self.sigkill_at = Some(Instant::now() + self.grace);
            }
        }
        self.abandon_at = Some(self.sigkill_at.unwrap_or_else(Instant::now) + DRAIN_AFTER_KILL);
    }

    /// A chunk of output was handed over, and the caller wants the child to go on or not:
    /// when it came, for the idle deadline.
    fn output(&mut self, keep_going: bool) -> Instant {
        if !keep_going {
            self.start(StopReason::Stream);
        }
        Instant::now()
    }

    fn kill(&mut self) {
        let _ = cleanup::signal_group(self.pgid, Signal::KILL);
        self.mark.signal(Signal::KILL);
        self.sigkill_at = None;
    }
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
