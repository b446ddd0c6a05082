//! Pass-through of agent output to the live log, at the library level: `agent::run_agent`
//! runs `head -c 1 GiB /dev/zero` as the agent, with its output going to a live log in a
//! temporary directory (and to a byte-counting callback, where the driver feeds its stream
//! reader). Printed beside `head -c 1 GiB /dev/zero | cat > file` into the same directory,
//! measured the same way: the same bytes through a pipe into a file by a plain program.
//!
//! `cargo bench --bench passthrough`

use sdlc_runner::agent::{run_agent, AgentRun};
use sdlc_runner::logs::LiveCap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const BYTES: u64 = 1 << 30;
const RUNS: usize = 3;

fn agent_run(dir: &Path, cap: LiveCap) -> AgentRun {
    AgentRun {
        program: "head".into(),
        args: vec!["-c".into(), BYTES.to_string(), "/dev/zero".into()],
        cwd: dir.to_path_buf(),
        env: Vec::new(),
        isolated_env: false,
        timeout: Duration::from_secs(600),
        idle_timeout: Duration::from_secs(600),
        kill_grace: Duration::from_secs(5),
        live_log: dir.join("live.log"),
        live_log_cap: cap,
        tail_bytes: 64 * 1024,
        egress: None,
    }
}

/// Best of `RUNS`, in GB/s (10^9 bytes).
fn best(mut once: impl FnMut() -> Duration) -> f64 {
    (0..RUNS)
        .map(|_| BYTES as f64 / once().as_secs_f64() / 1e9)
        .fold(0.0, f64::max)
}

fn through_runner(rt: &tokio::runtime::Runtime, run: &AgentRun) -> Duration {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let mut seen = 0u64;
    let started = Instant::now();
    let exit = rt
        .block_on(run_agent(run, &mut |b: &[u8]| seen += b.len() as u64, rx))
        .expect("agent runs");
    let elapsed = started.elapsed();
    assert_eq!(exit.exit_code, Some(0));
    assert_eq!(seen, BYTES);
    let _ = std::fs::remove_file(&run.live_log);
    elapsed
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    // The driver's runtime: one thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let whole = agent_run(
        dir,
        LiveCap {
            head: 2 * BYTES,
            tail: 2 * BYTES,
        },
    );
    let capped = agent_run(dir, LiveCap::for_budget(500 * 1024 * 1024));
    let reference = best(|| {
        let file = dir.join("cat.out");
        let started = Instant::now();
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("head -c {BYTES} /dev/zero | cat > \"$1\""))
            .arg("sh")
            .arg(&file)
            .status()
            .expect("sh");
        let elapsed = started.elapsed();
        assert!(status.success());
        let _ = std::fs::remove_file(&file);
        elapsed
    });
    let all = best(|| through_runner(&rt, &whole));
    let budget = best(|| through_runner(&rt, &capped));
    println!("workload: 1 GiB from `head -c {BYTES} /dev/zero`, best of {RUNS}");
    println!("run_agent, every byte into the live log: {all:.2} GB/s");
    println!("run_agent, live log capped by the default 500 MB budget: {budget:.2} GB/s");
    println!("reference: head -c {BYTES} /dev/zero | cat > file: {reference:.2} GB/s");
}
