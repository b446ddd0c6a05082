//! Every short-lived child process of the runner (git, gh, the tracker's commands,
//! notification deliveries) runs here: argument vectors only, its own process group, stdin
//! from a payload or nothing, stdout and stderr captured with a bound, a hard time limit that
//! kills the whole group, and an optional "success marker" on stdout for CLIs that hang after
//! doing their job. A grandchild holding the pipes open cannot keep the runner waiting.
//! (The agent itself, which streams for hours, is run by `agent`.)

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// Longest a single git command may take: a fetch or push over a dead network must not hang
/// an unattended run.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// `git ARGS` in `dir` within [`GIT_TIMEOUT`], never prompting, in one language. `Err` for a
/// git that cannot be started or that had to be stopped.
pub fn git_output(dir: &std::path::Path, args: &[&str]) -> io::Result<std::process::Output> {
    let mut cmd = Command::new("git");
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    output_within(cmd, GIT_TIMEOUT)?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "git {} (in {}): no answer within {} s; stopped",
                args.join(" "),
                dir.display(),
                GIT_TIMEOUT.as_secs()
            ),
        )
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a child did. Output is lossily decoded and capped at `OUTPUT_CAP` bytes per stream.
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
    fn timed_out(stdout: &[u8], stderr: &[u8]) -> Self {
        Captured {
            status: None,
            stdout: lossy(stdout),
            stderr: lossy(stderr),
            timed_out: true,
            marker_seen: false,
        }
    }
}

/// Large enough for `gh issue list --limit 1000` with bodies; a bound all the same.
const OUTPUT_CAP: usize = 64 * 1024 * 1024;

enum Chunk {
    Out(Vec<u8>),
    Err(Vec<u8>),
    OutEof,
    ErrEof,
}

/// Runs `cmd` in its own process group with piped output and an optional stdin payload.
/// Returns when the child exits, when `marker` recognises its stdout so far (the group is
/// then killed: some CLIs hang after doing their job), or at `timeout` (group killed).
/// A grandchild that keeps the pipes open cannot hold us beyond a short grace period.
pub(crate) fn run_captured(
    cmd: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    marker: Option<fn(&str) -> bool>,
) -> io::Result<Captured> {
    run_tracked(cmd, stdin, timeout, marker, None)
}

/// `cmd` run to completion with its output captured, in its own process group; `None` when
/// it had to be stopped at `timeout`. For the runner's own git and gh calls.
pub(crate) fn output_within(
    cmd: Command,
    timeout: Duration,
) -> io::Result<Option<std::process::Output>> {
    let out = run_captured(cmd, None, timeout, None)?;
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
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let guard = self.slot.map(|s| lock(s));
        let status = self.child.try_wait();
        if let (Some(mut guard), Ok(Some(_))) = (guard, &status) {
            *guard = None;
        }
        status
    }

    fn kill(&mut self) {
        let guard = self.slot.map(|s| lock(s));
        kill_group(self.pid, &mut self.child);
        if let Some(mut guard) = guard {
            *guard = None;
        }
    }
}

pub(crate) fn run_tracked(
    mut cmd: Command,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
    marker: Option<fn(&str) -> bool>,
    slot: Option<&ChildSlot>,
) -> io::Result<Captured> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let deadline = Instant::now() + timeout;
    let mut child = spawn_retrying(&mut cmd)?;
    let pid = child.id();
    if let Some(slot) = slot {
        *lock(slot) = Some(pid);
    }

    if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A child that never reads must not block us: write from a detached thread.
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
        spawn_reader(err, tx.clone(), Chunk::Err, Chunk::ErrEof);
    } else {
        let _ = tx.send(Chunk::ErrEof);
    }
    drop(tx);
    let mut child = Running { child, pid, slot };

    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
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
        let now = Instant::now();
        if exited.is_none() && now >= deadline {
            child.kill();
            return Ok(Captured::timed_out(&stdout, &stderr));
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Chunk::Out(bytes)) => {
                push_capped(&mut stdout, &bytes);
                if let Some(marker) = marker {
                    if marker(&String::from_utf8_lossy(&stdout)) {
                        if exited.is_none() {
                            child.kill();
                        }
                        return Ok(Captured {
                            status: exited.map(|(s, _)| s),
                            stdout: lossy(&stdout),
                            stderr: lossy(&stderr),
                            timed_out: false,
                            marker_seen: true,
                        });
                    }
                }
            }
            Ok(Chunk::Err(bytes)) => push_capped(&mut stderr, &bytes),
            Ok(Chunk::OutEof) => out_eof = true,
            Ok(Chunk::ErrEof) => err_eof = true,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                out_eof = true;
                err_eof = true;
                if exited.is_none() {
                    // Both pipes closed; the exit is imminent.
                    let status = wait_until(&mut child, deadline)?;
                    match status {
                        Some(s) => exited = Some((s, Instant::now())),
                        None => {
                            child.kill();
                            return Ok(Captured::timed_out(&stdout, &stderr));
                        }
                    }
                }
            }
        }
    }
    // Chunks the readers sent before the grace period ran out still belong to the output.
    while let Ok(chunk) = rx.try_recv() {
        match chunk {
            Chunk::Out(bytes) => push_capped(&mut stdout, &bytes),
            Chunk::Err(bytes) => push_capped(&mut stderr, &bytes),
            Chunk::OutEof | Chunk::ErrEof => {}
        }
    }
    Ok(Captured {
        status: exited.map(|(s, _)| s),
        stdout: lossy(&stdout),
        stderr: lossy(&stderr),
        timed_out: false,
        marker_seen: false,
    })
}

/// Writing a script and executing it while another thread forks can fail with ETXTBSY for
/// a moment; that is not a reason to lose a notification.
fn spawn_retrying(cmd: &mut Command) -> io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 10 => {
                tries += 1;
                thread::sleep(Duration::from_millis(20));
            }
            other => {
                if other.is_ok() {
                    crate::stats::spawned(cmd.get_program() == "git");
                }
                return other;
            }
        }
    }
}

/// Polls for the exit, first every 50 µs and backing off to every 10 ms: a child that closed
/// its pipes is usually reaped within microseconds, and a fixed first nap of 10 ms made each
/// short git command cost up to 10 ms more than itself.
fn wait_until(child: &mut Running<'_>, deadline: Instant) -> io::Result<Option<ExitStatus>> {
    let mut nap = Duration::from_micros(50);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
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

fn push_capped(buf: &mut Vec<u8>, bytes: &[u8]) {
    let room = OUTPUT_CAP.saturating_sub(buf.len());
    buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// SIGKILL to the process group led by `pid` (a child we spawned with `process_group(0)`).
pub(crate) fn signal_group(pid: u32) {
    if let Ok(pgid) = i32::try_from(pid) {
        // The one group signaller (it refuses group ids that could mean ourselves or everyone).
        let _ = crate::cleanup::signal_group(pgid, libc::SIGKILL);
    }
}

/// SIGKILL to the child's whole group (it leads one: `process_group(0)`), then reap it.
fn kill_group(pid: u32, child: &mut std::process::Child) {
    signal_group(pid);
    let _ = child.kill();
    let _ = child.wait();
}
