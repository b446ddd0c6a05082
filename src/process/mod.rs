//! Every short-lived child process of the runner (git, gh, the tracker's commands,
//! notification deliveries) runs here: argument vectors only, its own process group, stdin
//! from a payload or nothing, stdout and stderr captured with a bound, a hard time limit that
//! kills the whole group, and an optional "success marker" on stdout for CLIs that hang after
//! doing their job. A grandchild holding the pipes open cannot keep the runner waiting.
//! The agent, which streams for hours, is the same kind of child read as it runs
//! ([`streaming`]); every child is described by one [`ChildSpec`] (`child.rs`).
//!
//! Every child dies with its whole group: at its time limit, when the runner is asked to stop
//! (SIGINT, SIGTERM, SIGHUP, seen by a signal handler of this module within milliseconds on
//! whatever thread the call runs), at the deadline of the step it serves
//! (see [`within_deadline`]), and as soon as it exits (a hook or a CI command that started a
//! background process leaves nothing behind). A long command (local CI) gets SIGKILL if the
//! runner dies.
//!
//! Captured output keeps its head and its tail within a fixed budget, so the error a command
//! prints last survives however much it printed before.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

mod child;
pub mod children;
pub(crate) mod entry;
mod git_program;
mod off_runtime;
mod output;
pub mod reaper;
pub mod streaming;
pub use git_program::git_program;
mod stop;
mod stop_token;
pub use off_runtime::may_block;
pub use off_runtime::off_runtime;
use stop::stop_error;
pub use stop::{
    call_id, cancellable, deadline_after, forget_withdrawal, install_stop_handler, stopped,
    withdraw, withdrawable, within_deadline, Scope, Stopped,
};
pub use stop_token::StopToken;

pub use child::ChildSpec;
pub use output::Budget;
use output::Kept;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a child did. Output is lossily decoded and kept within a [`Budget`] per stream.
#[derive(Debug)]
pub(crate) struct Captured {
    /// `None` when the child was killed by us (timeout or success marker).
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub marker_seen: bool,
}

impl Captured {
    /// What a child killed at its deadline had written so far.
    fn timed_out(stdout: &Kept, stderr: &Kept) -> Self {
        Captured {
            status: None,
            stdout: stdout.text(),
            stderr: stderr.text(),
            timed_out: true,
            marker_seen: false,
        }
    }

    /// What a child wrote until it exited (`status` unknown when the runner stopped reading
    /// first), or until the caller's marker showed in its output.
    fn exited(status: Option<ExitStatus>, stdout: &Kept, stderr: &Kept, marker_seen: bool) -> Self {
        Captured {
            status,
            stdout: stdout.text(),
            stderr: stderr.text(),
            timed_out: false,
            marker_seen,
        }
    }
}

enum Chunk {
    Out(Vec<u8>),
    Err(Vec<u8>),
    OutEof,
    ErrEof,
}

/// Runs `spec` in its own process group with piped output and an optional stdin payload.
/// Returns when the child exits, when `marker` recognises its stdout so far (the group is
/// then killed: some CLIs hang after doing their job), or at `timeout` (group killed).
/// A grandchild that keeps the pipes open cannot hold us beyond a short grace period.
pub(crate) fn run_captured(
    cmd: ChildSpec,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    marker: Option<fn(&str) -> bool>,
) -> io::Result<Captured> {
    run_tracked(cmd, stdin, timeout, marker, None, Budget::DEFAULT)
}

/// `cmd` run to completion with its output captured, in its own process group; `None` when
/// it had to be stopped at `timeout`. For the runner's own git and gh calls.
///
/// No parent-death signal here: it would make every git call fork (see [`die_with_parent`]).
pub(crate) fn output_within(
    cmd: ChildSpec,
    timeout: Duration,
) -> io::Result<Option<std::process::Output>> {
    output_of(cmd, timeout, Budget::DEFAULT)
}

/// [`output_within`] for a long command (the local CI's): at most `budget` bytes of each
/// stream kept (head and tail), and SIGKILL to the command if the runner dies.
pub(crate) fn output_within_budget(
    mut cmd: ChildSpec,
    timeout: Duration,
    budget: Budget,
) -> io::Result<Option<std::process::Output>> {
    cmd.dies_with_parent();
    output_of(cmd, timeout, budget)
}

fn output_of(
    cmd: ChildSpec,
    timeout: Duration,
    budget: Budget,
) -> io::Result<Option<std::process::Output>> {
    let out = run_tracked(cmd, None, timeout, None, None, budget)?;
    Ok(match out.status {
        Some(status) if !out.timed_out => Some(std::process::Output {
            status,
            stdout: out.stdout.into_bytes(),
            stderr: out.stderr.into_bytes(),
        }),
        _ => None,
    })
}

/// The process group of a running delivery, published so `Notifier::drop` can end one it
/// gives up on. Whoever holds the lock may signal the group: the child is only reaped under
/// the same lock, so the id cannot have been reused.
pub(crate) type ChildSlot = Arc<Mutex<Option<u32>>>;

struct Running<'a> {
    child: std::process::Child,
    pid: u32,
    slot: Option<&'a ChildSlot>,
}

impl Running<'_> {
    /// The exit status once the child exited. Whatever is left of its group (a background
    /// process it started) is killed first, while the unreaped leader still holds the group id.
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let guard = self.slot.map(|s| lock(s));
        if exited_unreaped(self.pid) {
            signal_group(self.pid);
        }
        let status = self.child.try_wait();
        if let Ok(Some(_)) = &status {
            reaper::reaped(self.pid);
        }
        if let (Some(mut guard), Ok(Some(_))) = (guard, &status) {
            *guard = None;
        }
        status
    }

    fn kill(&mut self) {
        let guard = self.slot.map(|s| lock(s));
        kill_group(self.pid, &mut self.child);
        reaper::reaped(self.pid);
        if let Some(mut guard) = guard {
            *guard = None;
        }
    }
}

pub(crate) fn run_tracked(
    cmd: ChildSpec,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    marker: Option<fn(&str) -> bool>,
    slot: Option<&ChildSlot>,
    budget: Budget,
) -> io::Result<Captured> {
    // The git looked up once is named as one types it: the log reads `git`, not its path.
    let program = if std::path::Path::new(cmd.get_program()) == git_program() {
        "git".to_string()
    } else {
        cmd.get_program().to_string_lossy().into_owned()
    };
    let args = shown_args(&cmd.cmd);
    let cwd = cmd
        .get_current_dir()
        .map_or_else(|| ".".to_string(), |d| d.display().to_string());
    tracing::debug!(%program, %args, %cwd, "run");
    off_runtime::check(&program, &args);
    let started = Instant::now();
    let result = run_tracked_inner(cmd, stdin, timeout, marker, slot, budget);
    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match &result {
        Ok(c) if c.timed_out => tracing::debug!(%program, %args, ms, "timed out; stopped"),
        Ok(c) if c.marker_seen => tracing::debug!(%program, %args, ms, "success marker seen"),
        Ok(c) => match c.status {
            Some(status) => match status.code() {
                Some(code) => tracing::debug!(%program, %args, ms, code, "exited"),
                None => tracing::debug!(%program, %args, ms, %status, "killed"),
            },
            None => tracing::debug!(%program, %args, ms, "stopped"),
        },
        Err(e) => tracing::debug!(%program, %args, ms, "failed: {e}"),
    }
    if let Ok(c) = &result {
        tracing::trace!(%program, stdout = %c.stdout, stderr = %c.stderr, "output");
    }
    result
}

/// A command's arguments for a diagnostic, each cut to a readable length (a PR body or an
/// escalation note can be pages long).
fn shown_args(cmd: &Command) -> String {
    const LONGEST: usize = 120;
    let mut shown = Vec::new();
    for arg in cmd.get_args() {
        let arg = arg.to_string_lossy();
        match arg.char_indices().nth(LONGEST) {
            Some((cut, _)) => shown.push(format!("{}…", &arg[..cut])),
            None => shown.push(arg.into_owned()),
        }
    }
    shown.join(" ")
}

fn run_tracked_inner(
    cmd: ChildSpec,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    marker: Option<fn(&str) -> bool>,
    slot: Option<&ChildSlot>,
    budget: Budget,
) -> io::Result<Captured> {
    let scope = Scope::current();
    if let Some(why) = scope.stop_now() {
        return Err(stop_error(why));
    }
    let deadline = Instant::now() + timeout;
    let mut child = cmd.spawn_blocking(stdin.is_some(), scope.mark())?;
    let pid = child.id();
    if let Some(slot) = slot {
        *lock(slot) = Some(pid);
    }
    let rx = connect_pipes(&mut child, stdin);
    let mut child = Running { child, pid, slot };
    let mut stdout = Kept::new(budget);
    let mut stderr = Kept::new(budget);
    let (mut out_eof, mut err_eof) = (false, false);
    let mut exited: Option<(ExitStatus, Instant)> = None;
    let grace = Duration::from_millis(500);
    loop {
        if let Some((_, at)) = exited {
            if (out_eof && err_eof) || at.elapsed() >= grace {
                break;
            }
        } else if let Some(status) = child.try_wait()? {
            exited = Some((status, Instant::now()));
            continue;
        }
        if let (None, Some(cut)) = (exited, Cut::now(deadline, &scope)) {
            return cut_short(&mut child, cut, &stdout, &stderr);
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Chunk::Out(bytes)) => {
                stdout.push(&bytes);
                if marker.is_some_and(|seen| seen(&stdout.text())) {
                    if exited.is_none() {
                        child.kill();
                    }
                    let status = exited.map(|(s, _)| s);
                    return Ok(Captured::exited(status, &stdout, &stderr, true));
                }
            }
            Ok(Chunk::Err(bytes)) => stderr.push(&bytes),
            Ok(Chunk::OutEof) => out_eof = true,
            Ok(Chunk::ErrEof) => err_eof = true,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                (out_eof, err_eof) = (true, true);
                if exited.is_none() {
                    // Both pipes closed; the exit is imminent.
                    match wait_until(&mut child, deadline, &scope)? {
                        Waited::Exited(s) => exited = Some((s, Instant::now())),
                        Waited::Cut(cut) => return cut_short(&mut child, cut, &stdout, &stderr),
                    }
                }
            }
        }
    }
    // Chunks the readers sent before the grace period ran out still belong to the output.
    for chunk in rx.try_iter() {
        match chunk {
            Chunk::Out(bytes) => stdout.push(&bytes),
            Chunk::Err(bytes) => stderr.push(&bytes),
            Chunk::OutEof | Chunk::ErrEof => {}
        }
    }
    let status = exited.map(|(s, _)| s);
    Ok(Captured::exited(status, &stdout, &stderr, false))
}

/// The child's stdin written from a detached thread (a child that never reads must not block
/// the runner), and its stdout and stderr read by threads into one channel, each ending with
/// its end-of-file chunk.
fn connect_pipes(child: &mut std::process::Child, stdin: Option<Vec<u8>>) -> Receiver<Chunk> {
    if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
        thread::spawn(move || {
            let _ = pipe.write_all(&data);
        });
    }
    let (tx, rx) = mpsc::channel::<Chunk>();
    if let Some(out) = child.stdout.take() {
        spawn_reader(out, tx.clone(), Chunk::Out, Chunk::OutEof);
    } else {
        let _ = tx.send(Chunk::OutEof);
    }
    if let Some(err) = child.stderr.take() {
        spawn_reader(err, tx, Chunk::Err, Chunk::ErrEof);
    } else {
        let _ = tx.send(Chunk::ErrEof);
    }
    rx
}

/// Polls for the exit, first every 50 µs and backing off to every 10 ms: a child that closed
/// its pipes is usually reaped within microseconds, and a fixed first nap of 10 ms made each
/// short git command cost up to 10 ms more than itself.
enum Waited {
    Exited(ExitStatus),
    Cut(Cut),
}

/// Why a child is killed before its exit.
enum Cut {
    TimedOut,
    Stopped(Stopped),
}

impl Cut {
    /// The deadline passed or the run is stopping: the child must go now.
    fn now(deadline: Instant, scope: &Scope) -> Option<Cut> {
        if Instant::now() >= deadline {
            return Some(Cut::TimedOut);
        }
        scope.stop_now().map(Cut::Stopped)
    }
}

/// The child killed before its exit: at its deadline (what it wrote so far) or for the
/// run's stop (an error naming it).
fn cut_short(
    child: &mut Running<'_>,
    cut: Cut,
    stdout: &Kept,
    stderr: &Kept,
) -> io::Result<Captured> {
    child.kill();
    match cut {
        Cut::Stopped(why) => Err(stop_error(why)),
        Cut::TimedOut => Ok(Captured::timed_out(stdout, stderr)),
    }
}

fn wait_until(child: &mut Running<'_>, deadline: Instant, scope: &Scope) -> io::Result<Waited> {
    let mut nap = Duration::from_micros(50);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Waited::Exited(status));
        }
        if Instant::now() >= deadline {
            return Ok(Waited::Cut(Cut::TimedOut));
        }
        if let Some(why) = scope.stop_now() {
            return Ok(Waited::Cut(Cut::Stopped(why)));
        }
        thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(10));
    }
}

fn spawn_reader<R: Read + Send + 'static>(
    mut pipe: R,
    tx: mpsc::Sender<Chunk>,
    wrap: fn(Vec<u8>) -> Chunk,
    eof: Chunk,
) {
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(wrap(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(eof);
    });
}

/// Whether child `pid` has exited, without reaping it (its group id stays held meanwhile).
fn exited_unreaped(pid: u32) -> bool {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    // WNOWAIT leaves the child for `Child::try_wait` to reap.
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    matches!(waitid(WaitId::Pid(pid), options), Ok(Some(_)))
}

/// SIGKILL to the child when the runner dies, however it dies (kill -9 included): a CI
/// command must not run on for its time limit, nor an unattended agent go on working a tree,
/// after the runner that waits for it is gone. Only for long commands: a pre-exec hook makes
/// std fork instead of posix_spawn, which the many short git calls of a step must not pay (they
/// end at their own time limit). Forking the multi-threaded runner copies its page tables,
/// takes copy-on-write faults afterwards and waits for the child's exec: 0.2 to 0.4 ms of the
/// runner's CPU per git call, 1.4 to 2.4 ms per step in the benchmark. Counted as `forks` in
/// the stats line.
///
/// This is the runner's one `unsafe` block.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(cmd: &mut Command) {
    use rustix::process::{getpid, getppid, set_parent_process_death_signal, Signal};
    crate::stats::forking();
    let parent = getpid();
    // SAFETY: the closure runs in the forked child before exec. It only makes the raw
    // syscalls prctl and getppid and builds an `io::Error` from an errno, which allocates
    // nothing; so it is async-signal-safe, as a closure after fork must be.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::KILL))?;
            // The runner may have died between fork and prctl: then nobody would signal us,
            // so the spawn fails instead.
            if getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_cmd: &mut Command) {}

/// SIGKILL to the process group led by `pid` (a child we spawned with `process_group(0)`).
pub(crate) fn signal_group(pid: u32) {
    if let Ok(pgid) = i32::try_from(pid) {
        // The one group signaller (it refuses group ids that could mean ourselves or everyone).
        let _ = crate::cleanup::signal_group(pgid, rustix::process::Signal::KILL);
    }
}

/// SIGKILL to the child's whole group (it leads one: `process_group(0)`), then reap it.
fn kill_group(pid: u32, child: &mut std::process::Child) {
    signal_group(pid);
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests;
