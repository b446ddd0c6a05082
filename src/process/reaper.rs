//! Descendants that leave their process group: a child an agent or a hook detaches with
//! `setsid`, or a daemon that double-forks, is out of reach of a group kill and would run on
//! after its step and after the run, holding the agent's pipes.
//!
//! Two things keep them in reach. Every step carries a [`Mark`]: the agent and every child
//! the step's calls start get it in their environment ([`SCOPE_VAR`]), which their own
//! children inherit whatever group or session they move to; when the step ends, every
//! process still carrying its mark is stopped ([`Marked::end`]). And the runner of `run` is
//! the child subreaper of its descendants ([`adopt_orphans`]): an orphan reparents to it
//! rather than to init, so one that cleared its environment is still found (its parent is the
//! runner, and the runner never started it), stopped at the end of a step when no other step
//! of this process runs, and at the run's end in any case.
//!
//! The runner's own children (git, gh, the CI command, a delivery, the agent) are told apart
//! from adopted orphans by a registry their spawns fill ([`spawned`]) and their reaps empty
//! ([`reaped`]); the registry is only read with every spawn held back, so a child just started
//! is never taken for an orphan, and an adopted orphan is only ever reaped by its own pid, so
//! a wait of the code that started a child never races this module.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use crate::cleanup::{self, ProtectSet};

/// The environment variable that carries a step's mark to every process the step starts.
pub const SCOPE_VAR: &str = "SDLC_RUNNER_SCOPE";

/// The environment variable naming the directory a marked process was started in (the work
/// tree its step serves). A runner killed outright (SIGKILL, the OOM killer) ends no step and
/// no run, so what its steps detached runs on; the next runner of that work tree stops it
/// ([`stop_leftovers`]).
pub const WHERE_VAR: &str = "SDLC_RUNNER_WORKTREE";

/// How long what a step left behind gets between SIGTERM and SIGKILL.
pub const LEFTOVER_GRACE: Duration = Duration::from_secs(2);

static NEXT: AtomicU64 = AtomicU64::new(1);
/// This process adopts orphans ([`adopt_orphans`]): only then is a child it did not register
/// an orphan (a process that starts children by other means, a test harness, is not one).
static ADOPTING: AtomicBool = AtomicBool::new(false);
/// Steps of this process running now (a fleet runs several).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Held for reading by every spawn until its pid is registered, for writing by a scan that
/// tells own children from orphans.
static SPAWNING: RwLock<()> = RwLock::new(());
/// The children this process started and has not reaped yet, each with whether it may change
/// something (it was not started inside `children::quietly`).
static OWN: LazyLock<Mutex<HashMap<u32, bool>>> = LazyLock::new(Mutex::default);

fn own() -> MutexGuard<'static, HashMap<u32, bool>> {
    OWN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts a child of this process (`spawn`) and registers it as the runner's own until
/// [`reaped`] is called with its pid.
pub(crate) fn spawned<C>(
    spawn: impl FnOnce() -> io::Result<C>,
    pid: impl Fn(&C) -> Option<u32>,
) -> io::Result<C> {
    let _held = SPAWNING.read().unwrap_or_else(|p| p.into_inner());
    let child = spawn()?;
    if let Some(pid) = pid(&child) {
        own().insert(pid, !super::children::is_quiet());
    }
    Ok(child)
}

/// Whether a child this process started that may change something (not a read-only query's
/// git) is still running.
pub(crate) fn changing_child_running() -> bool {
    own().values().any(|&changing| changing)
}

/// The runner's child `pid` was reaped by the code that started it.
pub(crate) fn reaped(pid: u32) {
    own().remove(&pid);
}

/// One step's mark: `<runner pid>.<n>`, unique among the steps of this runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(u64);

impl Mark {
    /// The value of [`SCOPE_VAR`] in the environment of the step's processes.
    pub fn value(self) -> String {
        format!("{}.{}", std::process::id(), self.0)
    }

    /// The environment a process of this step gets: its mark, and `dir`, the directory it
    /// starts in, for the next runner should this one be killed outright.
    pub fn vars(self, dir: Option<&std::path::Path>) -> Vec<(&'static str, std::ffi::OsString)> {
        let mut vars = vec![(SCOPE_VAR, self.value().into())];
        if let Some(dir) = dir {
            vars.push((WHERE_VAR, dir.as_os_str().to_owned()));
        }
        vars
    }

    /// Sends `signal` to every live process carrying this mark, without waiting; returns
    /// how many were signalled.
    pub fn signal(self, signal: rustix::process::Signal) -> usize {
        let wanted = self.value();
        let targets = cleanup::find_where(&ProtectSet::current(), |stat| {
            carries(stat.pid, |e| e == wanted.as_bytes())
        });
        targets.iter().filter(|t| t.signal(signal)).count()
    }
}

/// A step running: its mark, counted among the steps of this process until it ends.
#[derive(Debug)]
pub struct Marked {
    mark: Mark,
    done: bool,
}

/// A step begins: a fresh mark.
pub fn begin() -> Marked {
    ACTIVE.fetch_add(1, Ordering::SeqCst);
    Marked {
        mark: Mark(NEXT.fetch_add(1, Ordering::SeqCst)),
        done: false,
    }
}

impl Marked {
    /// The step's mark.
    pub fn mark(&self) -> Mark {
        self.mark
    }

    /// The step ends: every process carrying its mark is stopped (SIGTERM, `grace`,
    /// SIGKILL), and so is every orphan the runner adopted when no other step of this process
    /// runs; the orphans' remains are reaped. Blocking. Returns the pid and command line of
    /// each process stopped.
    pub fn end(mut self, grace: Duration) -> Vec<(i32, String)> {
        self.done = true;
        let sole = ACTIVE.load(Ordering::SeqCst) == 1;
        let wanted = self.mark.value();
        let stopped = stop(
            |pid, adopted| (sole && adopted) || carries(pid, |e| e == wanted.as_bytes()),
            grace,
        );
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
        stopped
    }
}

impl Drop for Marked {
    /// A step dropped without [`Marked::end`] (its future dropped): what carries its mark is
    /// killed at once, without waiting.
    fn drop(&mut self) {
        if !self.done {
            self.mark.signal(rustix::process::Signal::KILL);
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Makes this process the child subreaper of its descendants (`PR_SET_CHILD_SUBREAPER`) for
/// as long as the returned guard lives; dropping it stops every orphan it adopted and every
/// process still carrying one of its marks. For `run`, before it starts any child.
pub fn adopt_orphans() -> Adopting {
    let pid = rustix::process::getpid();
    match rustix::process::set_child_subreaper(Some(pid)) {
        Ok(()) => ADOPTING.store(true, Ordering::SeqCst),
        Err(e) => tracing::warn!(
            "cannot become the child subreaper ({e}): a descendant that clears its environment and detaches may outlive the run"
        ),
    }
    Adopting { _private: () }
}

/// The run's hold on its descendants (see [`adopt_orphans`]).
#[derive(Debug)]
pub struct Adopting {
    _private: (),
}

impl Drop for Adopting {
    fn drop(&mut self) {
        let ours = format!("{}.", std::process::id());
        let stopped = stop(
            |pid, adopted| adopted || carries(pid, |e| e.starts_with(ours.as_bytes())),
            LEFTOVER_GRACE,
        );
        for (pid, cmdline) in stopped {
            tracing::debug!(pid, %cmdline, "stopped at the run's end");
        }
    }
}

/// Stops what the steps of a runner that no longer lives left running in `dir`: processes
/// whose mark names another runner, one that is gone, and that were started in `dir`. For a
/// runner's start under the project's lock (no live runner then serves `dir`). Blocking;
/// returns the pid and command line of each process stopped.
pub fn stop_leftovers(dir: &std::path::Path) -> Vec<(i32, String)> {
    use std::os::unix::ffi::OsStrExt;
    let me = std::process::id().to_string();
    let dir = dir.as_os_str().as_bytes().to_vec();
    let gone = |runner: &[u8]| {
        let runner = String::from_utf8_lossy(runner);
        runner != me && !std::path::Path::new("/proc").join(runner.as_ref()).exists()
    };
    stop(
        |pid, _| {
            let Some(env) = cleanup::read_environ(pid) else {
                return false;
            };
            let mark = cleanup::environ_var(&env, SCOPE_VAR);
            let place = cleanup::environ_var(&env, WHERE_VAR);
            match (mark, place) {
                (Some(mark), Some(place)) => {
                    let runner = mark.split(|b| *b == b'.').next().unwrap_or_default();
                    place == dir.as_slice() && !runner.is_empty() && gone(runner)
                }
                _ => false,
            }
        },
        LEFTOVER_GRACE,
    )
}

/// Whether `pid` carries a mark (its environment as it was at its exec holds [`SCOPE_VAR`])
/// whose value satisfies `pick`.
fn carries(pid: i32, pick: impl Fn(&[u8]) -> bool) -> bool {
    cleanup::read_environ(pid)
        .is_some_and(|env| cleanup::environ_var(&env, SCOPE_VAR).is_some_and(pick))
}

/// Stops every process `pick(pid, adopted)` selects (`adopted`: an orphan this process
/// adopted, its parent being this process that never started it), then reaps the orphans'
/// remains.
fn stop(pick: impl Fn(i32, bool) -> bool, grace: Duration) -> Vec<(i32, String)> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let adopting = ADOPTING.load(Ordering::SeqCst);
    let targets = {
        let _no_spawn = SPAWNING.write().unwrap_or_else(|p| p.into_inner());
        let own = own();
        cleanup::find_where(&ProtectSet::current(), |stat| {
            let adopted = adopting && stat.ppid == me && !own.contains_key(&(stat.pid as u32));
            pick(stat.pid, adopted)
        })
    };
    let stopped = cleanup::end_targets(&targets, grace);
    if adopting {
        reap_adopted(me);
    }
    stopped
}

/// Reaps every exited orphan this process adopted, each by its own pid: a child the runner
/// started is left to the code that waits for it.
fn reap_adopted(me: i32) {
    use rustix::process::{waitpid, Pid, WaitOptions};
    let Ok(all) = cleanup::all_pids() else {
        return;
    };
    let _no_spawn = SPAWNING.write().unwrap_or_else(|p| p.into_inner());
    let own = own();
    for pid in all {
        let Some(stat) = cleanup::read_stat(pid) else {
            continue;
        };
        if stat.ppid != me
            || !matches!(stat.state, 'Z' | 'X')
            || own.contains_key(&(stat.pid as u32))
        {
            continue;
        }
        if let Some(pid) = Pid::from_raw(stat.pid) {
            let _ = waitpid(Some(pid), WaitOptions::NOHANG);
        }
    }
}
