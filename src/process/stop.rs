//! Stopping children early: the signal handler that stops the process's [`StopToken`] (seen
//! within milliseconds even while the async runtime is blocked in a call) and the scopes a
//! call runs in (cancellable on that stop, bounded by the deadline of the step it serves).

use std::cell::Cell;
use std::io;
use std::sync::Once;
use std::time::Instant;

use super::StopToken;

/// Why a child was stopped before it ended by itself, other than its own time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    #[error("stopped: the runner was asked to shut down")]
    Shutdown,
    #[error("stopped at the step's time limit (timeoutMin)")]
    Deadline,
    #[error("stopped: its result is no longer wanted")]
    Withdrawn,
}

/// The [`Stopped`] an error of this module carries, if it is one.
pub fn stopped(e: &io::Error) -> Option<Stopped> {
    e.get_ref()?.downcast_ref::<Stopped>().copied()
}

pub(super) fn stop_error(why: Stopped) -> io::Error {
    let kind = match why {
        Stopped::Shutdown | Stopped::Withdrawn => io::ErrorKind::Interrupted,
        Stopped::Deadline => io::ErrorKind::TimedOut,
    };
    io::Error::new(kind, why)
}

/// Installs (once per process) the handler that stops the process's token
/// ([`StopToken::signals`]) for every cancellable call. It runs beside the async runtime's own
/// handlers, so a runtime blocked in a git call still has its call stopped within milliseconds.
pub fn install_stop_handler() -> io::Result<()> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let (stop, signal) = StopToken::signals().handler_targets();
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // Actions run in the order registered: the signal is recorded before the stop is.
            let registered = usize::try_from(sig)
                .map_err(io::Error::other)
                .and_then(|n| signal_hook::flag::register_usize(sig, signal.clone(), n))
                .and_then(|_| signal_hook::flag::register(sig, stop.clone()));
            if let Err(e) = registered {
                result = Err(e);
            }
        }
    });
    result
}

/// What the calls made on this thread inside a scope obey, beyond their own time limit. A call
/// handed to another thread takes its caller's scope along ([`Scope::current`],
/// [`Scope::enter`]): where it runs does not change what stops it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope {
    /// A stop request ends the call (its group killed) at once.
    cancellable: bool,
    /// The group is killed at this instant: the step the call serves is out of time.
    deadline: Option<Instant>,
    /// The step the call serves: what its child leaves outside its group ends with the step.
    mark: Option<super::reaper::Mark>,
    /// The call's id, when its result may be withdrawn ([`withdrawable`]).
    call: Option<u64>,
}

thread_local! {
    static SCOPE: Cell<Scope> = const {
        Cell::new(Scope {
            cancellable: false,
            deadline: None,
            mark: None,
            call: None,
        })
    };
}

fn scoped<T>(change: impl FnOnce(&mut Scope), f: impl FnOnce() -> T) -> T {
    let before = SCOPE.with(Cell::get);
    let mut inner = before;
    change(&mut inner);
    SCOPE.with(|s| s.set(inner));
    struct Restore(Scope);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// The deadline of a call that may take `timeout` from now (the real time: a child's deadline
/// is the process layer's, whatever clock the driver is given).
pub fn deadline_after(timeout: std::time::Duration) -> Instant {
    Instant::now() + timeout
}

/// Runs `f` so that every child it starts is stopped (group killed, `Err` with
/// [`Stopped::Shutdown`]) as soon as the runner is asked to stop. The runner's own cleanup on
/// shutdown (saving work in progress) runs outside such a scope.
pub fn cancellable<T>(f: impl FnOnce() -> T) -> T {
    scoped(|s| s.cancellable = true, f)
}

/// Runs `f` so that every child it starts is stopped (group killed, `Err` with
/// [`Stopped::Deadline`]) at `deadline`, or at an earlier deadline of an enclosing scope.
/// The outermost such scope is a step: whatever its children leave running outside their
/// groups (a hook's or the CI command's daemon) is stopped when it ends.
pub fn within_deadline<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    let step = Scope::current().mark.is_none().then(super::reaper::begin);
    let mark = step.as_ref().map(super::reaper::Marked::mark);
    let out = scoped(
        |s| {
            s.deadline = Some(s.deadline.map_or(deadline, |d| d.min(deadline)));
            s.mark = s.mark.or(mark);
        },
        f,
    );
    if let Some(step) = step {
        step.end(super::reaper::LEFTOVER_GRACE);
    }
    out
}

/// The ids of the [`withdrawable`] calls under way whose result is no longer wanted.
static WITHDRAWN: std::sync::Mutex<std::collections::BTreeSet<u64>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn withdrawn() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<u64>> {
    WITHDRAWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A new id for a [`withdrawable`] call, unique in the process.
pub fn call_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Runs `f` as call `call`: every child it starts is stopped (group killed, `Err` with
/// [`Stopped::Withdrawn`]) once [`withdraw`] is called with its id; a merge train's test
/// whose tree a failure ahead of it made obsolete frees its worker at once.
pub fn withdrawable<T>(call: u64, f: impl FnOnce() -> T) -> T {
    let out = scoped(|s| s.call = Some(call), f);
    withdrawn().remove(&call);
    out
}

/// Nobody wants call `call`'s result any more: its children are stopped (within the 10 ms of
/// a wait's poll). A call that ended already is not affected.
pub fn withdraw(call: u64) {
    withdrawn().insert(call);
}

/// Forgets a withdrawal that came after its call ended.
pub fn forget_withdrawal(call: u64) {
    withdrawn().remove(&call);
}

impl Scope {
    /// The scope of the calls made on this thread now.
    pub fn current() -> Scope {
        SCOPE.with(Cell::get)
    }

    /// Runs `f` on this thread in this scope (a caller's, taken along to the thread that
    /// makes its call), restoring the thread's own scope after.
    pub fn enter<T>(self, f: impl FnOnce() -> T) -> T {
        scoped(|s| *s = self, f)
    }

    /// Whether a stop request ends the calls of this scope.
    pub fn cancellable(&self) -> bool {
        self.cancellable
    }

    /// When the calls of this scope are stopped, if ever.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The step the calls of this scope serve, if they serve one.
    pub fn mark(&self) -> Option<super::reaper::Mark> {
        self.mark
    }

    /// Whether a child of this scope must be stopped now, and why.
    pub fn stop_now(&self) -> Option<Stopped> {
        if self.cancellable && StopToken::signals().is_stopped() {
            return Some(Stopped::Shutdown);
        }
        if self.call.is_some_and(|call| withdrawn().contains(&call)) {
            return Some(Stopped::Withdrawn);
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Some(Stopped::Deadline),
            _ => None,
        }
    }
}
