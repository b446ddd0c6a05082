//! The runner's own cost per step, beyond the agent: the real binary runs a few issues
//! through all ten steps on the local tracker and forge, with the fake agent (this binary's
//! `fake-agent`, doing the step's git work and exiting at once). The runner's
//! `SDLC_RUNNER_STATS=1` line gives the time inside agent runs, the gaps between one agent's
//! end and the next one's start (the runner's work between two steps), the runner's own CPU
//! time, and the child processes (and forks among them) and fsyncs it issued. Printed beside
//! the cost of one `git` spawn and of one fsync measured in the same run: what bounds the
//! figure. On a loaded machine the wall-clock gaps mostly measure the other processes; the
//! CPU time per step and the counts are what to compare between two builds.
//!
//! `cargo bench --bench runner_overhead`

mod common;

use common::{fsync_cost_ms, median, runner_binary, spawn_cost_ms, stats, Project};
use serde_json::json;

const ISSUES: u32 = 3;
const RUNS: usize = 5;

fn main() {
    let bin = runner_binary();
    let mut gap_medians = Vec::new();
    let mut per_step = Vec::new();
    let mut cpu_per_step = Vec::new();
    let mut last = None;
    for _ in 0..RUNS {
        let p = Project::new(&bin, ISSUES, json!({}), json!({}));
        let (out, wall) = p.run(&bin, &[]);
        assert!(
            out.status.code() == Some(0),
            "runner failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s = stats(&out);
        assert!(s.gaps > 0, "no agent steps measured");
        gap_medians.push(s.gap_median_us as f64 / 1e3);
        let outside = wall.as_secs_f64() * 1e3 - s.agent_ms as f64;
        per_step.push(outside / s.steps as f64);
        cpu_per_step.push(s.cpu_ms as f64 / s.steps as f64);
        last = Some((s, p));
    }
    let (s, p) = last.expect("one run");
    let project = p.root.join("project");
    let git_version = spawn_cost_ms(50, || {
        let mut c = std::process::Command::new("git");
        c.arg("--version");
        c
    });
    let git_rev_parse = spawn_cost_ms(50, || {
        let mut c = std::process::Command::new("git");
        c.args(["rev-parse", "--verify", "--quiet", "HEAD"])
            .current_dir(&project);
        c
    });
    let fsync = fsync_cost_ms(&p.root, 50);
    let steps = s.steps as f64;
    let git_per_step = s.git_spawns as f64 / steps;
    let fsync_per_step = s.fsyncs as f64 / steps;
    println!(
        "workload: {ISSUES} issues x 10 steps (createPR observed done), fake agent, local tracker and forge; {RUNS} runs"
    );
    println!(
        "runner overhead per step (median gap between agents): {}",
        median_of_runs(&gap_medians)
    );
    println!(
        "runner time per step outside the agent (mean, startup included): {:.1} ms",
        median(per_step)
    );
    println!(
        "runner CPU per step (its own threads, startup included): {}",
        median_of_runs(&cpu_per_step)
    );
    println!(
        "per step: {:.1} child processes ({:.1} git, {:.1} forked), {:.1} fsyncs ({} steps: {} spawns, {} git, {} forks, {} fsyncs)",
        s.spawns as f64 / steps,
        git_per_step,
        s.forks as f64 / steps,
        fsync_per_step,
        s.steps,
        s.spawns,
        s.git_spawns,
        s.forks,
        s.fsyncs
    );
    println!(
        "reference: one `git --version` spawn {git_version:.2} ms, one `git rev-parse` in the project {git_rev_parse:.2} ms, one 200-byte write + fdatasync {fsync:.2} ms"
    );
    println!(
        "bound: {git_per_step:.1} git x {git_rev_parse:.2} ms + {fsync_per_step:.1} fsyncs x {fsync:.2} ms = {:.1} ms per step (the run's whole count over its steps; some overlap the agent)",
        git_per_step * git_rev_parse + fsync_per_step * fsync
    );
}

/// `M ms (runs: a, b, …)`: the median of the runs' figures, and each.
fn median_of_runs(runs: &[f64]) -> String {
    let each: Vec<String> = runs.iter().map(|x| format!("{x:.1}")).collect();
    format!(
        "{:.1} ms (runs: {})",
        median(runs.to_vec()),
        each.join(", ")
    )
}
