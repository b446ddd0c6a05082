//! The runner's own costs, counted always (a relaxed atomic add each): child processes
//! spawned (git among them), spawns that had to fork (a pre-exec hook: the agent's and the
//! local CI's), fsyncs, steps run, time spent inside agent runs and the gaps between one
//! agent's end and the next one's start. With `SDLC_RUNNER_STATS=1`, `run` and `demo` print
//! them at exit on stderr, a line of counts with the process's own CPU time (all its threads, not its
//! children) and its peak RSS (`VmHWM`):
//!
//! ```text
//! stats: spawns=N git_spawns=G forks=F fsyncs=M steps=K agent_ms=A gaps=n gap_median_us=X cpu_ms=C vmhwm_kib=H agents=A github_requests=R github_not_modified=U
//! stats-effects: CheckPreconditions=3 RunStep=9 …
//! ```
//!
//! `agents` counts agent processes among the spawns, `github_requests` the answers of GitHub's
//! API and `github_not_modified` the conditional reads among them answered `304`; the second line is the most child
//! processes one performed effect of each kind started (`startup`: before the first effect).
//! The performance benchmarks (`benches/`) and `tests/it/step_costs.rs` read the first line;
//! `tests/it/process_bound.rs` checks both against what `bounds` prints. Counts and CPU time are
//! what to compare on a loaded machine, where the wall-clock gaps mostly measure the other
//! processes.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static SPAWNS: AtomicU64 = AtomicU64::new(0);
static GIT_SPAWNS: AtomicU64 = AtomicU64::new(0);
static FORKS: AtomicU64 = AtomicU64::new(0);
static FSYNCS: AtomicU64 = AtomicU64::new(0);
static STEPS: AtomicU64 = AtomicU64::new(0);
static AGENTS: AtomicU64 = AtomicU64::new(0);
static GITHUB_REQUESTS: AtomicU64 = AtomicU64::new(0);
static GITHUB_NOT_MODIFIED: AtomicU64 = AtomicU64::new(0);
/// The rate-limit budget GitHub named in its last answer, plus one (0: none seen yet).
static GITHUB_REMAINING: AtomicU64 = AtomicU64::new(0);

/// The most children one performed effect of each kind started, kept only when the stats are
/// printed.
static EFFECT_MAX: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());
static AGENT_NANOS: AtomicU64 = AtomicU64::new(0);

/// The end of the last agent run and the gaps (µs) between agent runs, kept only when the
/// stats are printed.
static GAPS: Mutex<(Option<Instant>, Vec<u64>)> = Mutex::new((None, Vec::new()));

/// The environment variable that turns the exit line on.
pub const ENV: &str = "SDLC_RUNNER_STATS";

/// `SDLC_RUNNER_STATS=1`, read once.
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(ENV).is_some_and(|v| v == "1"))
}

/// A child process was started; `git` tells a git command apart.
pub fn spawned(git: bool) {
    SPAWNS.fetch_add(1, Ordering::Relaxed);
    if git {
        GIT_SPAWNS.fetch_add(1, Ordering::Relaxed);
    }
}

/// A command got a pre-exec hook: its spawn will fork the runner instead of `posix_spawn`.
pub fn forking() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// An agent process was started (a spawn of its own).
pub fn agent_spawned() {
    spawned(false);
    AGENTS.fetch_add(1, Ordering::Relaxed);
}

/// Child processes started so far.
pub fn spawns() -> u64 {
    SPAWNS.load(Ordering::Relaxed)
}

/// An effect of kind `label` was performed: `before` and `after` are [`spawns`] around it.
/// The first effect also records what was started before it, as `startup`.
pub fn effect_performed(label: &'static str, before: u64, after: u64) {
    if enabled() {
        let mut max = EFFECT_MAX.lock().unwrap_or_else(|p| p.into_inner());
        max.entry("startup").or_insert(before);
        let seen = max.entry(label).or_insert(0);
        *seen = (*seen).max(after.saturating_sub(before));
    }
}

/// A request reached GitHub's API and was answered; `not_modified`: a conditional read GitHub
/// answered `304` (it does not count against the rate limit); `remaining`: the budget its
/// `X-RateLimit-Remaining` named.
pub fn github_request(not_modified: bool, remaining: Option<u64>) {
    GITHUB_REQUESTS.fetch_add(1, Ordering::Relaxed);
    if not_modified {
        GITHUB_NOT_MODIFIED.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(left) = remaining {
        GITHUB_REMAINING.store(left.saturating_add(1), Ordering::Relaxed);
    }
}

/// GitHub's API so far: requests answered, of which `304`s, and the rate-limit budget its
/// last answer named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GithubRequests {
    /// Requests answered.
    pub requests: u64,
    /// Of them, conditional reads answered `304 Not Modified` (free of the rate limit).
    pub not_modified: u64,
    /// The budget GitHub's last answer named, if any named one.
    pub rate_limit_remaining: Option<u64>,
}

/// GitHub's requests so far (see [`GithubRequests`]).
pub fn github_requests() -> GithubRequests {
    GithubRequests {
        requests: GITHUB_REQUESTS.load(Ordering::Relaxed),
        not_modified: GITHUB_NOT_MODIFIED.load(Ordering::Relaxed),
        rate_limit_remaining: GITHUB_REMAINING.load(Ordering::Relaxed).checked_sub(1),
    }
}

/// An fsync (`sync_all` or `sync_data`) was issued.
pub fn fsynced() {
    FSYNCS.fetch_add(1, Ordering::Relaxed);
}

/// The driver performs a `RunStep` (agent or builtin).
pub fn step() {
    STEPS.fetch_add(1, Ordering::Relaxed);
}

/// An agent process is about to be spawned: the gap since the previous agent ended is the
/// runner's own work between the two.
pub fn agent_starting() -> Instant {
    let now = Instant::now();
    if enabled() {
        let mut gaps = GAPS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(end) = gaps.0 {
            let gap = now.saturating_duration_since(end).as_micros();
            gaps.1.push(u64::try_from(gap).unwrap_or(u64::MAX));
        }
    }
    now
}

/// The agent started at `started` is gone (reaped, its group empty).
pub fn agent_finished(started: Instant) {
    let now = Instant::now();
    let spent = now.saturating_duration_since(started).as_nanos();
    AGENT_NANOS.fetch_add(u64::try_from(spent).unwrap_or(u64::MAX), Ordering::Relaxed);
    if enabled() {
        GAPS.lock().unwrap_or_else(|p| p.into_inner()).0 = Some(now);
    }
}

/// The process's peak resident set (`VmHWM` of `/proc/self/status`), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    procfs::process::Process::myself()
        .ok()?
        .status()
        .ok()?
        .vmhwm
}

/// CPU time this process used so far, all its threads (those ended included), in ms.
pub fn cpu_ms() -> u64 {
    use rustix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::ProcessCPUTime);
    let ms = t.tv_sec.saturating_mul(1000) + t.tv_nsec / 1_000_000;
    u64::try_from(ms).unwrap_or(0)
}

/// The stats line (see the module documentation).
pub fn line() -> String {
    let mut gaps = GAPS.lock().unwrap_or_else(|p| p.into_inner()).1.clone();
    gaps.sort_unstable();
    let median = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
    format!(
        "stats: spawns={} git_spawns={} forks={} fsyncs={} steps={} agent_ms={} gaps={} gap_median_us={} cpu_ms={} vmhwm_kib={} agents={} github_requests={} github_not_modified={}",
        SPAWNS.load(Ordering::Relaxed),
        GIT_SPAWNS.load(Ordering::Relaxed),
        FORKS.load(Ordering::Relaxed),
        FSYNCS.load(Ordering::Relaxed),
        STEPS.load(Ordering::Relaxed),
        Duration::from_nanos(AGENT_NANOS.load(Ordering::Relaxed)).as_millis(),
        gaps.len(),
        median,
        cpu_ms(),
        peak_rss_kib().unwrap_or(0),
        AGENTS.load(Ordering::Relaxed),
        GITHUB_REQUESTS.load(Ordering::Relaxed),
        GITHUB_NOT_MODIFIED.load(Ordering::Relaxed),
    )
}

/// The per-effect line (see the module documentation).
pub fn effects_line() -> String {
    let max = EFFECT_MAX.lock().unwrap_or_else(|p| p.into_inner());
    let fields: Vec<String> = max.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("stats-effects: {}", fields.join(" "))
}

/// Prints the stats line on stderr when `SDLC_RUNNER_STATS=1`: plain, whatever the
/// narration's style, for the benchmarks to parse; a write error is ignored.
pub fn report() {
    if enabled() {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{}", line());
        let _ = writeln!(std::io::stderr(), "{}", effects_line());
    }
}
