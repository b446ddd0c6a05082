//! Crash injection for the crash-consistency tests: named points at every boundary where a
//! crash matters (before and after each journal write, around git calls, right after an agent
//! is spawned and after it exits, after state-file and tracker writes, after a claim or its
//! renewal is written). With the environment variable `SDLC_RUNNER_CRASH_AT=N` the runner
//! kills itself with SIGKILL when it reaches the N-th point, exactly like `kill -9` from
//! outside but at a reproducible moment; with `SDLC_RUNNER_CRASH_AT=<label>` (not a number)
//! at the first point of that label. With
//! `SDLC_RUNNER_CRASH_LOG=FILE` every point reached is appended to FILE (to count them).
//! Without either variable a point costs one atomic increment.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Environment variable naming the crash point: the N-th point reached, or the first point
/// with that label.
pub const CRASH_AT_ENV: &str = "SDLC_RUNNER_CRASH_AT";
/// Environment variable naming a file to which every crash point reached is appended.
pub const CRASH_LOG_ENV: &str = "SDLC_RUNNER_CRASH_LOG";
/// Environment variable making every journal fsync take this many more milliseconds: a slow
/// disk, for the tests that hold what must not wait on one.
pub const SLOW_FSYNC_ENV: &str = "SDLC_RUNNER_SLOW_FSYNC_MS";

static REACHED: AtomicU64 = AtomicU64::new(0);

enum CrashAt {
    Nth(u64),
    Label(String),
}

struct Plan {
    crash_at: Option<CrashAt>,
    log: Option<PathBuf>,
}

fn plan() -> &'static Plan {
    static PLAN: OnceLock<Plan> = OnceLock::new();
    PLAN.get_or_init(|| Plan {
        crash_at: std::env::var(CRASH_AT_ENV).ok().map(|v| {
            let v = v.trim();
            v.parse()
                .map(CrashAt::Nth)
                .unwrap_or_else(|_| CrashAt::Label(v.to_string()))
        }),
        log: std::env::var_os(CRASH_LOG_ENV).map(PathBuf::from),
    })
}

/// One crash point.
pub fn point(label: &str) {
    let n = REACHED.fetch_add(1, Ordering::SeqCst) + 1;
    let plan = plan();
    if let Some(path) = &plan.log {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{n} {label}");
        }
    }
    let crash = match &plan.crash_at {
        Some(CrashAt::Nth(at)) => *at == n,
        Some(CrashAt::Label(at)) => at == label,
        None => false,
    };
    if crash {
        say!("failpoint {n} ({label}): killing the runner");
        // Nothing after this runs.
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}

/// Waits as long as `SDLC_RUNNER_SLOW_FSYNC_MS` says before a journal fsync (nothing without
/// it).
pub fn before_fsync() {
    static SLOW: OnceLock<Option<std::time::Duration>> = OnceLock::new();
    let slow = SLOW.get_or_init(|| {
        std::env::var(SLOW_FSYNC_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map(std::time::Duration::from_millis)
    });
    if let Some(slow) = slow {
        std::thread::sleep(*slow);
    }
}
