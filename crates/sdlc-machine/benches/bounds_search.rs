//! Time and peak memory of the exhaustive bound search (`tests/bounds_exhaustive.rs`,
//! `computed_bounds_equal_the_exhaustive_worst_case`): every small configuration's computed
//! bounds against the worst case found by searching every outcome sequence, on two threads.
//! Fails when a bound mismatches or the search leaves its budget (a laptop's share: 60 s on
//! 2 cores and 2 GiB), so that a new counter multiplying the state space is caught here.
//!
//! The time held is what two idle cores take: the longest single search's CPU time, or half
//! of all the searches' CPU time if that is more. The wall-clock time is printed beside it;
//! on a shared machine it mostly measures the other processes.
//!
//! `cargo bench -p sdlc-machine --bench bounds_search`; docs/counters-and-bounds.md quotes it.

#[path = "../tests/props/common/mod.rs"]
mod common;
#[path = "../tests/props/exhaustive/mod.rs"]
mod exhaustive;

use std::time::Instant;

const BUDGET_SECS: f64 = 60.0;
const BUDGET_MIB: f64 = 2048.0;

/// The process's peak resident set (`VmHWM` of `/proc/self/status`), in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .expect("/proc/self/status is readable (Linux)");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status");
    kib / 1024.0
}

fn main() {
    let configs = exhaustive::small_limits().len();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let started = Instant::now();
    let checked = exhaustive::check_small_limits(2);
    let wall = started.elapsed().as_secs_f64();
    let peak = peak_rss_mib();
    let two_cores = checked.longest_cpu_secs.max(checked.total_cpu_secs / 2.0);
    println!(
        "workload: {configs} small configurations, the worst case to the next merge and to the halt of each, 2 threads"
    );
    println!(
        "exhaustive bound search: {two_cores:.1} s on 2 idle cores (CPU: {:.1} s in all, {:.1} s the longest search), peak RSS {peak:.0} MiB",
        checked.total_cpu_secs, checked.longest_cpu_secs
    );
    println!(
        "wall clock: {wall:.1} s (load average before: {})",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("budget: {BUDGET_SECS:.0} s on 2 cores, {BUDGET_MIB:.0} MiB");
    assert!(
        checked.mismatches.is_empty(),
        "bound mismatches:\n{}",
        checked.mismatches.join("\n")
    );
    assert!(
        two_cores <= BUDGET_SECS && peak <= BUDGET_MIB,
        "the exhaustive bound search left its budget: {two_cores:.1} s on 2 cores (≤ {BUDGET_SECS}), \
         {peak:.0} MiB (≤ {BUDGET_MIB}); shrink what `exhaustive::key` keeps or the grid in \
         `exhaustive::small_limits`"
    );
}
