//! `sdlc-runner demo`: the offline demo. A bare `origin`, a clone, a local issue tracker and
//! the scripted fake agent (this binary's hidden `fake-agent` command), driven by the real
//! runner: real git, real journal, real logs. Needs nothing but git.

use crate::cli::{DemoArgs, DemoScenario};
use crate::driver::RunOptions;
use crate::launch;
use std::path::{Path, PathBuf};

/// `demo`: builds a throwaway project with sample issues and runs the fake agent through
/// them, then says where everything was kept; returns the run's exit code, 2 when the
/// setup fails.
pub fn run(args: &DemoArgs) -> i32 {
    match setup(args) {
        Ok(config) => {
            out!(
                "demo project ready; running: sdlc-runner run --config {}\n",
                config.display()
            );
            let cfg = match super::load_config(&config) {
                Ok(cfg) => cfg,
                Err(code) => return code,
            };
            let server =
                match crate::http::start_for(args.http.as_deref(), &cfg, super::status::json) {
                    Ok(server) => server,
                    Err(code) => return code,
                };
            // The review scenario's person: asks for changes once the runner waits for a
            // review, approves once the round is pushed.
            let reviewer = (args.scenario == DemoScenario::Review).then(|| Reviewer::start(&cfg));
            let code = launch::run(cfg, RunOptions::default());
            if let Some(reviewer) = reviewer {
                reviewer.stop();
            }
            if let Some(server) = server {
                linger(&server, args.linger);
            }
            let dir = config.parent().unwrap_or(Path::new("."));
            out!("\n{}", agent_calls(dir));
            out!(
                "\ndemo finished with exit code {code}. Everything is kept in {}:",
                dir.display()
            );
            out!("  project/   the clone the agent worked in (git log --graph --all)");
            out!("  issues/    the local tracker (closed and escalated issues are marked)");
            out!("  logs/      orchestration log and one log per attempt");
            out!("  project/.git/sdlc-runner/journal.jsonl   the write-ahead journal (the runner's own state)");
            // After `cargo run` no `sdlc-runner` is on PATH: name this very binary.
            let me = std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "sdlc-runner".to_string());
            out!("inspect with: {me} status --config {}", config.display());
            code
        }
        Err(e) => {
            say!("error: demo setup failed: {e}");
            2
        }
    }
}

/// Keeps the status page up after the demo so that a person can look at the end state:
/// `seconds`, or until Ctrl-C / SIGTERM.
fn linger(server: &crate::http::Server, seconds: Option<u64>) {
    match seconds {
        Some(s) => out!(
            "\nthe demo is over; its status page stays at http://{}/ for {s} s",
            server.addr()
        ),
        None => out!(
            "\nthe demo is over; its status page stays at http://{}/ until Ctrl-C",
            server.addr()
        ),
    }
    let Ok(runtime) = crate::runtime::build(None) else {
        return;
    };
    runtime.block_on(async {
        let forever = std::time::Duration::from_secs(u64::from(u32::MAX));
        let wait = tokio::time::sleep(seconds.map_or(forever, std::time::Duration::from_secs));
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return;
        };
        tokio::select! {
            _ = wait => {}
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    });
}

/// How many model calls the run made per merged issue: one archived attempt log per agent
/// call (builtin steps leave none), merges counted in the local tracker.
fn agent_calls(dir: &Path) -> String {
    let count = |sub: &str, keep: &dyn Fn(&str) -> bool| {
        std::fs::read_dir(dir.join(sub)).map_or(0, |entries| {
            entries
                .flatten()
                .filter(|e| keep(&e.file_name().to_string_lossy()))
                .count()
        })
    };
    let calls = count("logs", &|name| {
        name.ends_with(".log") && name.contains("-a") && !name.starts_with("sdlc-runner")
    });
    let merged = std::fs::read_dir(dir.join("issues")).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| {
                std::fs::read_to_string(e.path()).is_ok_and(|t| {
                    t.contains("\"state\": \"closed\"") || t.contains("\"state\":\"closed\"")
                })
            })
            .count()
    });
    let per_issue = if merged == 0 {
        "no issue merged".to_string()
    } else {
        format!("{:.1} per merged issue", calls as f64 / merged as f64)
    };
    format!(
        "agent calls: {calls} for {merged} merged issue(s), {per_issue} (startCycle, commitPush, createPR, monitorCI and merge are builtin)"
    )
}

fn git(cwd: &Path, args: &[&str]) -> Result<(), String> {
    let out = crate::git::command::output(cwd, args).map_err(|e| {
        format!(
            "git {}: cannot run git ({e}); the demo needs git on PATH",
            args.join(" ")
        )
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "git {} in {}: {}",
            args.join(" "),
            cwd.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn issue(dir: &Path, number: u32, title: &str, body: &str) -> Result<(), String> {
    let value = serde_json::json!({
        "number": number, "title": title, "body": body, "state": "open",
        "labels": ["automatable"], "milestone": "v1", "escalated": false,
    });
    write(&dir.join(format!("{number}.json")), &format!("{value:#}\n"))
}

/// A bare `root/origin.git` and its clone `root/project` with one commit on `main`, pushed,
/// and a local git identity so commits work on a machine without a global one.
pub fn init_repository(root: &Path) -> Result<(), String> {
    let origin = root.join("origin.git");
    let project = root.join("project");
    git(
        root,
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            "origin.git",
        ],
    )?;
    clone_project(root, &origin)?;
    git(&project, &["checkout", "--quiet", "-B", "main"])?;
    write(&project.join("README.md"), "# demo project\n")?;
    git(&project, &["add", "README.md"])?;
    git(&project, &["commit", "--quiet", "-m", "initial commit"])?;
    git(&project, &["push", "--quiet", "-u", "origin", "main"])?;
    Ok(())
}

/// A bare `root/origin.git` cloned from `source` and its clone `root/project`: the runner
/// pushes and merges into the copy only; `source` is read once by `git clone`.
fn copy_repository(root: &Path, source: &Path) -> Result<(), String> {
    let source = source
        .canonicalize()
        .map_err(|e| format!("--repo {}: {e}", source.display()))?;
    let origin = root.join("origin.git");
    git(
        root,
        &[
            "clone",
            "--quiet",
            "--bare",
            "--no-local",
            &source.to_string_lossy(),
            "origin.git",
        ],
    )
    .map_err(|e| {
        format!(
            "--repo {} must be a git repository with a commit: {e}",
            source.display()
        )
    })?;
    clone_project(root, &origin)
}

/// `root/project`, a clone of `origin` that commits as the demo's author, unsigned.
fn clone_project(root: &Path, origin: &Path) -> Result<(), String> {
    git(
        root,
        &["clone", "--quiet", &origin.to_string_lossy(), "project"],
    )?;
    let project = root.join("project");
    git(&project, &["config", "user.name", "sdlc-runner demo"])?;
    git(
        &project,
        &["config", "user.email", "demo@sdlc-runner.invalid"],
    )?;
    git(&project, &["config", "commit.gpgsign", "false"])?;
    Ok(())
}

/// Create the demo directory and return the path of its config file.
fn setup(args: &DemoArgs) -> Result<PathBuf, String> {
    let root = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            dir.canonicalize()
                .map_err(|e| format!("{}: {e}", dir.display()))?
        }
        None => tempfile::Builder::new()
            .prefix("sdlc-runner-demo-")
            .tempdir()
            .map_err(|e| format!("cannot create a temporary directory: {e}"))?
            .keep(),
    };
    let project = root.join("project");
    let issues = root.join("issues");
    if project.exists() {
        return Err(format!(
            "{} already exists: pass an empty --dir",
            project.display()
        ));
    }
    std::fs::create_dir_all(&issues).map_err(|e| format!("{}: {e}", issues.display()))?;
    match &args.repo {
        Some(source) => copy_repository(&root, source)?,
        None => init_repository(&root)?,
    }

    let script = scenario_issues(args.scenario, &issues)?;
    // Paced: every call without a scripted outcome works (tool calls) for this long.
    let pace = args
        .pace
        .unwrap_or(if args.http.is_some() { 2000 } else { 0 });
    let mut script = script;
    if pace > 0 {
        script["steps"]["*"] = serde_json::json!([format!("busy:{pace}")]);
    }
    let script_path = root.join("agent-script.json");
    write(&script_path, &format!("{script:#}\n"))?;
    let config = demo_config(args, &script_path)?;
    let config_path = root.join("sdlc-config.json");
    write(&config_path, &format!("{config:#}\n"))?;
    Ok(config_path)
}

/// Writes the scenario's issues and returns the fake agent's script for them.
fn scenario_issues(scenario: DemoScenario, issues: &Path) -> Result<serde_json::Value, String> {
    Ok(match scenario {
        DemoScenario::Lifecycle => {
            issue(issues, 1, "Add a greeting", "Say hello.")?;
            issue(
                issues,
                2,
                "Add a farewell",
                "Say goodbye.\n\nDepends on: #3",
            )?;
            issue(issues, 3, "Add a name option", "Greet by name.")?;
            serde_json::json!({ "steps": { "2:verify": ["fail-test", "ok"] }, "costUsd": 0.05 })
        }
        DemoScenario::Review => {
            issue(issues, 1, "Add a greeting", "Say hello.")?;
            // The round's agent (told addressReview) leaves a change for the runner to commit
            // and push.
            serde_json::json!({ "steps": { "addressReview": ["write-shared"] }, "costUsd": 0.05 })
        }
        DemoScenario::FailureLoop => {
            issue(issues, 1, "Add a greeting", "Say hello.")?;
            issue(issues, 2, "Add a farewell", "Say goodbye.")?;
            issue(issues, 3, "Add a name option", "Greet by name.")?;
            serde_json::json!({ "steps": { "verify": ["fail-test"] }, "costUsd": 0.05 })
        }
    })
}

/// The demo's config: the scripted fake agent (this binary), the local tracker and forge.
fn demo_config(args: &DemoArgs, script_path: &Path) -> Result<serde_json::Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    let mut config = serde_json::json!({
        "_comment": "Generated by `sdlc-runner demo`: the agent is this binary's scripted fake-agent.",
        "projectPath": "project",
        "logDir": "logs",
        "agent": {
            "command": exe.to_string_lossy(),
            "kind": args.agent.as_str(),
            "args": ["fake-agent", "--kind", args.agent.as_str(), "--script", script_path.to_string_lossy()],
        },
        "tracker": { "kind": "local", "dir": "issues" },
        "forge": "local",
        "backoff": { "initialSeconds": 1, "maxSeconds": 2 },
        // The five steps that need no model are the runner's own: no tokens spent on them.
        "steps": {
            "startCycle": { "run": "builtin" },
            "commitPush": { "run": "builtin" },
            "createPR": { "run": "builtin" },
            "monitorCI": { "run": "builtin" },
            "merge": { "run": "builtin" },
            "verify": { "timeoutMin": 1 },
        },
    });
    if args.scenario == DemoScenario::Review {
        config["review"] = serde_json::json!({
            "requireApproval": true,
            "approvalTimeoutMinutes": 10,
            "maxReviewRounds": 2,
        });
        config["steps"]["addressReview"] =
            serde_json::json!({ "model": "sonnet", "maxTurns": 30, "timeoutMin": 5 });
    }
    Ok(config)
}

/// The reviewer of `demo --scenario review`, on a thread of its own: it reads the runner's
/// journal as a person would watch the pull request, and speaks through
/// [`super::review::record`], the store `sdlc-runner review N` writes and `run` reads.
struct Reviewer {
    stop: crate::process::StopToken,
    thread: std::thread::JoinHandle<()>,
}

/// What the demo's reviewer asks for.
const REVIEW_REQUEST: &str = "Please also greet by name, and test it.";

impl Reviewer {
    fn start(cfg: &crate::config::Config) -> Reviewer {
        let stop = crate::process::StopToken::new();
        let cfg = cfg.clone();
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let journal = crate::runner_dir::RunnerDir::locate(&cfg.project_path)
                .map(|d| d.journal())
                .ok();
            let seen = |needle: &str| -> bool {
                journal.as_ref().is_some_and(|j| {
                    std::fs::read_to_string(j).is_ok_and(|text| text.contains(needle))
                })
            };
            let speak = |verdict: super::review::Verdict, shown: &str| match super::review::record(
                &cfg, 1, &verdict, "ann",
            ) {
                Ok(said) => say!("reviewer: sdlc-runner review 1 {shown} --author ann: {said}"),
                Err(e) => say!("error: the demo's reviewer cannot review issue #1: {e}"),
            };
            let steps = [
                // The merge waits for a person: she reads the PR and asks for changes.
                (
                    "\"reviewWanted\"",
                    super::review::Verdict::RequestChanges(REVIEW_REQUEST),
                ),
                // The round is pushed: she approves.
                ("\"repaired\"", super::review::Verdict::Approve),
            ];
            for (after, verdict) in steps {
                while !seen(after) {
                    if stopped.is_stopped() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                let shown = match verdict {
                    super::review::Verdict::RequestChanges(text) => {
                        format!("--request-changes {text:?}")
                    }
                    _ => "--approve".to_string(),
                };
                speak(verdict, &shown);
            }
        });
        Reviewer { stop, thread }
    }

    fn stop(self) {
        self.stop.stop();
        let _ = self.thread.join();
    }
}
