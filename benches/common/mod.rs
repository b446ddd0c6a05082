//! What the runner benchmarks share: the built `sdlc-runner` binary, a temporary project like
//! the demo's (bare origin, clone, local tracker, local forge, the binary's own `fake-agent`),
//! the `SDLC_RUNNER_STATS=1` line, and the reference measurements printed beside the figures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>/sdlc-runner`, beside this bench's `deps/` directory (cargo builds the
/// binary targets before running benches).
pub fn runner_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let mut dir = exe.parent().expect("bench directory");
    if dir.ends_with("deps") {
        dir = dir.parent().expect("profile directory");
    }
    let bin = dir.join("sdlc-runner");
    assert!(
        bin.is_file(),
        "{} not found: build it with `cargo build --release` first",
        bin.display()
    );
    bin
}

/// A temporary project: `root/{origin.git,project,issues,script.json,sdlc-config.json}`.
pub struct Project {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub config: PathBuf,
}

impl Project {
    /// `issues` open issues, the fake agent's `script`, `extra` config keys over the defaults.
    pub fn new(
        bin: &Path,
        issues: u32,
        script: serde_json::Value,
        extra: serde_json::Value,
    ) -> Project {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let issue_dir = root.join("issues");
        std::fs::create_dir_all(&issue_dir).expect("issues dir");
        sdlc_runner::commands::demo::init_repository(&root).expect("git repository");
        for n in 1..=issues {
            let v = serde_json::json!({"number": n, "title": format!("Issue {n}"), "body": "",
                "state": "open", "labels": ["automatable"], "milestone": null, "escalated": false});
            std::fs::write(issue_dir.join(format!("{n}.json")), v.to_string()).expect("issue");
        }
        let script_path = root.join("script.json");
        std::fs::write(&script_path, script.to_string()).expect("script");
        let mut cfg = serde_json::json!({
            "projectPath": "project",
            "logDir": "logs",
            "agent": {"command": bin, "args": ["fake-agent", "--script", script_path]},
            "tracker": {"kind": "local", "dir": "issues"},
            "forge": "local",
        });
        if let (Some(base), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
            for (k, v) in more {
                base.insert(k.clone(), v.clone());
            }
        }
        let config = root.join("sdlc-config.json");
        std::fs::write(&config, cfg.to_string()).expect("config");
        Project { tmp, root, config }
    }

    /// `sdlc-runner run --config C ARGS` with `SDLC_RUNNER_STATS=1`; the output and the wall
    /// time from spawn to exit.
    pub fn run(&self, bin: &Path, args: &[&str]) -> (Output, Duration) {
        let started = Instant::now();
        let out = Command::new(bin)
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env("SDLC_RUNNER_STATS", "1")
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .output()
            .expect("run the runner");
        (out, started.elapsed())
    }
}

/// The fields of the runner's `stats:` line.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub spawns: u64,
    pub git_spawns: u64,
    pub forks: u64,
    pub fsyncs: u64,
    pub steps: u64,
    pub agent_ms: u64,
    pub gaps: u64,
    pub gap_median_us: u64,
    pub cpu_ms: u64,
    pub vmhwm_kib: u64,
}

pub fn stats(out: &Output) -> Stats {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("stats: "))
        .unwrap_or_else(|| panic!("no stats line in the runner's stderr:\n{stderr}"));
    let mut s = Stats::default();
    for field in line["stats: ".len()..].split_whitespace() {
        let (key, value) = field.split_once('=').expect("key=value");
        let value: u64 = value.parse().expect("a number");
        match key {
            "spawns" => s.spawns = value,
            "git_spawns" => s.git_spawns = value,
            "forks" => s.forks = value,
            "fsyncs" => s.fsyncs = value,
            "steps" => s.steps = value,
            "agent_ms" => s.agent_ms = value,
            "gaps" => s.gaps = value,
            "gap_median_us" => s.gap_median_us = value,
            "cpu_ms" => s.cpu_ms = value,
            "vmhwm_kib" => s.vmhwm_kib = value,
            _ => {}
        }
    }
    s
}

pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Median wall time of `runs` runs of `cmd` (output discarded), in milliseconds.
pub fn spawn_cost_ms(runs: usize, mut cmd: impl FnMut() -> Command) -> f64 {
    let times = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let status = cmd()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("spawn the reference command");
            assert!(status.success(), "reference command failed");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    median(times)
}

/// Median time of writing 200 bytes to a new file in `dir` and `fdatasync`ing it, in ms.
pub fn fsync_cost_ms(dir: &Path, runs: usize) -> f64 {
    use std::io::Write;
    let path = dir.join("fsync-probe");
    let times = (0..runs)
        .map(|_| {
            let mut f = std::fs::File::create(&path).expect("probe file");
            let started = Instant::now();
            f.write_all(&[b'x'; 200]).expect("write");
            f.sync_data().expect("fdatasync");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let _ = std::fs::remove_file(&path);
    median(times)
}

/// The scripted session the core benchmarks feed: issue after issue runs its lifecycle, each
/// with one bounce at verify's precondition and one failed verify attempt (a retry), so every
/// common transition is exercised.
pub struct Script {
    next_issue: u32,
    bounced: bool,
    usage: sdlc_runner::machine::Usage,
}

impl Script {
    pub fn new(usage: sdlc_runner::machine::Usage) -> Script {
        Script {
            next_issue: 1,
            bounced: false,
            usage,
        }
    }

    /// The request among `effects` that waits for an answer, if any.
    pub fn request(
        effects: &[sdlc_runner::machine::Effect],
    ) -> Option<sdlc_runner::machine::Effect> {
        use sdlc_runner::machine::Effect;
        effects.iter().copied().find(|e| {
            matches!(
                e,
                Effect::SelectIssue | Effect::CheckPreconditions { .. } | Effect::RunStep { .. }
            )
        })
    }

    /// The answer to `request`; `NoIssues` once `enough` says the session should end.
    pub fn answer(
        &mut self,
        request: sdlc_runner::machine::Effect,
        enough: impl FnOnce(u32) -> bool,
    ) -> sdlc_runner::machine::Event {
        use sdlc_runner::failure::{FailureClass, Signature};
        use sdlc_runner::machine::{Effect, Event};
        use sdlc_runner::step::Check;
        let usage = self.usage;
        match request {
            Effect::SelectIssue if enough(self.next_issue) => Event::NoIssues,
            Effect::SelectIssue => {
                self.next_issue += 1;
                self.bounced = false;
                Event::IssueSelected {
                    issue: self.next_issue - 1,
                }
            }
            Effect::CheckPreconditions { step } => match Check::of(step).first() {
                Some(&check) if !self.bounced && step.number() == 6 => {
                    self.bounced = true;
                    Event::PreconditionFailed { step, check }
                }
                _ => Event::PreconditionsOk { step },
            },
            Effect::RunStep { step, attempt, .. } if step.number() == 6 && attempt == 1 => {
                Event::StepFailed {
                    step,
                    class: FailureClass::TestAssertion,
                    signature: Signature(u64::from(attempt)),
                    usage,
                    wait_hint_secs: None,
                }
            }
            Effect::RunStep { step, .. } => Event::StepSucceeded { step, usage },
            other => unreachable!("not a request: {other:?}"),
        }
    }
}
