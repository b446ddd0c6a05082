//! Wall time of six independent issues with an agent that takes a fixed time per step, one
//! worker against three (`run --workers 3`): the speed-up the fleet buys, next to the ideal
//! (the agents' own time divided by the workers).
//!
//! `cargo bench --bench scale_out` (about half a minute)

mod common;

use common::{runner_binary, Project};
use serde_json::json;

const ISSUES: u32 = 6;
const STEP_MS: u64 = 600;
/// Agent steps per issue with the five model-free steps builtin.
const AGENT_STEPS: u64 = 5;

fn wall(bin: &std::path::Path, workers: u32) -> f64 {
    let p = Project::new(
        bin,
        ISSUES,
        json!({"steps": {"*": [format!("busy:{STEP_MS}")]}}),
        json!({"steps": {
            "startCycle": {"run": "builtin"}, "commitPush": {"run": "builtin"},
            "createPR": {"run": "builtin"}, "monitorCI": {"run": "builtin"},
            "merge": {"run": "builtin"},
        }}),
    );
    let n = workers.to_string();
    let (out, took) = p.run(bin, &["--workers", &n]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "runner failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took.as_secs_f64()
}

fn main() {
    let bin = runner_binary();
    let agent_secs = (u64::from(ISSUES) * AGENT_STEPS * STEP_MS) as f64 / 1000.0;
    let one = wall(&bin, 1);
    let three = wall(&bin, 3);
    println!("six issues, agent {STEP_MS} ms per step ({agent_secs:.1} s of agent time in all)");
    println!("workers 1: {one:.2} s wall (ideal {agent_secs:.1} s)");
    println!(
        "workers 3: {three:.2} s wall (ideal {:.1} s)",
        agent_secs / 3.0
    );
    println!(
        "speed-up: {:.2}x (ideal 3.00x; target >= 2.5x)",
        one / three
    );
}
