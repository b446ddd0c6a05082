//! The per-step overhead of the agent's sandbox: `true` run as the agent through
//! `agent::run_agent` (the runner's own way of running an attempt: process group, pipes, the
//! attempt's mark, the reaping of its group) plainly, then inside bubblewrap with the layout
//! a step gets (`agent::sandbox`), with the network kept and cut. Needs `bwrap` (the
//! distribution's `bubblewrap`).
//!
//! `cargo bench --bench sandbox_overhead`

use sdlc_runner::agent::sandbox::{self, Spec};
use sdlc_runner::agent::{run_agent, AgentRun};
use sdlc_runner::config::{AgentKind, SandboxConfig, SandboxKind, SandboxNetwork};
use sdlc_runner::logs::LiveCap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const RUNS: usize = 40;

fn agent_run(
    dir: &Path,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
) -> AgentRun {
    AgentRun {
        program,
        args,
        cwd: dir.to_path_buf(),
        isolated_env: !env.is_empty(),
        env,
        timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        kill_grace: Duration::from_secs(5),
        live_log: dir.join("live.log"),
        live_log_cap: LiveCap::for_budget(500 * 1024 * 1024),
        tail_bytes: 64 * 1024,
        egress: None,
    }
}

/// Median and mean of `RUNS` runs, in milliseconds.
fn measure(rt: &tokio::runtime::Runtime, run: &AgentRun) -> (f64, f64) {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let (_tx, rx) = tokio::sync::watch::channel(false);
            let started = Instant::now();
            let exit = rt
                .block_on(run_agent(run, &mut |_: &[u8]| {}, rx))
                .expect("agent runs");
            let elapsed = started.elapsed().as_secs_f64() * 1e3;
            assert_eq!(exit.exit_code, Some(0), "{}", exit.stderr_tail);
            elapsed
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    (times[times.len() / 2], mean)
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().canonicalize().expect("canonical");
    let runner_dir = dir.join(".git/sdlc-runner");
    std::fs::create_dir_all(&runner_dir).expect("runner dir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let truth = which::which("true").expect("true on PATH");
    let plain = agent_run(&dir, truth.clone(), Vec::new(), Vec::new());
    let home = sandbox::runner_home();
    let mut rows = vec![("plain", measure(&rt, &plain))];
    for (name, network) in [
        ("bwrap", SandboxNetwork::Host),
        ("bwrap, network none", SandboxNetwork::None),
    ] {
        let config = SandboxConfig {
            kind: SandboxKind::Bwrap,
            network,
            ..SandboxConfig::default()
        };
        let spec = Spec {
            config: &config,
            agent: Some(AgentKind::Claude),
            git_dir_writable: true,
            work_tree: &dir,
            runner_dir: &runner_dir,
            handed: &[],
            home: home.as_deref(),
        };
        let step_env = vec![("SDLC_STEP".to_string(), "implement".to_string())];
        let wrapped = sandbox::wrap(&spec, &truth, &[], &step_env, &sandbox::runner_var)
            .unwrap_or_else(|e| panic!("{e}"))
            .expect("a sandbox");
        let run = agent_run(&dir, wrapped.program, wrapped.args, wrapped.env);
        rows.push((name, measure(&rt, &run)));
    }
    println!("`true` as the agent, {RUNS} runs each (median / mean, ms):");
    let base = rows[0].1 .0;
    for (name, (median, mean)) in &rows {
        println!(
            "  {name:<22} {median:>7.2} / {mean:>7.2}   (+{:.2} ms over plain)",
            median - base
        );
    }
}
