//! The agent's sandbox (`agent.sandbox`): a real trial of the agent's own version command
//! inside each sandbox the config's agent steps use, exactly as a step starts it (the same
//! binds, environment and network), and a warning when the agent runs unattended with no
//! sandbox chosen. A trial that fails names what the agent could not see and the entry to add.

use super::{Check, PROBE_TIMEOUT};
use crate::agent::sandbox::{self, Spec};
use crate::config::{AgentConfig, Config, SandboxConfig, SandboxKind, SandboxNetwork};
use crate::process::ChildSpec;
use crate::step::Step;
use std::path::{Path, PathBuf};

mod unseen;

/// One line per distinct sandbox and agent of the agent steps.
pub(super) fn checks(cfg: &Config) -> Vec<Check> {
    let mut seen: Vec<(&AgentConfig, Vec<&'static str>)> = Vec::new();
    for step in Step::ALL {
        if !cfg.enabled(step) || cfg.builtin(step) {
            continue;
        }
        let agent = cfg.agent(step);
        let same = |a: &AgentConfig| {
            a.sandbox == agent.sandbox
                && a.kind == agent.kind
                && a.command == agent.command
                && a.args == agent.args
                && a.env == agent.env
        };
        match seen.iter_mut().find(|(a, _)| same(a)) {
            Some((_, steps)) => steps.push(step.key()),
            None => seen.push((agent, vec![step.key()])),
        }
    }
    seen.iter()
        .map(|(agent, steps)| check(cfg, agent, &steps.join(", ")))
        .collect()
}

fn check(cfg: &Config, agent: &AgentConfig, steps: &str) -> Check {
    let sandbox = &agent.sandbox;
    match sandbox.kind {
        SandboxKind::None if sandbox.chosen => Check::ok(
            "sandbox",
            format!(
                "none (chosen) for {steps}: the agent reaches everything the runner's user can"
            ),
        ),
        SandboxKind::None => Check::warn(
            "sandbox",
            format!(
                "the agent runs {steps} unattended without a sandbox: it can read your home \
                 (~/.ssh), the tokens in the runner's environment, and rewrite the runner's \
                 journal"
            ),
            if which::which("bwrap").is_ok() {
                "add \"sandbox\": {\"kind\": \"bwrap\"} to \"agent\" (bubblewrap is installed), or \
                 \"kind\": \"none\" to run unsandboxed knowingly"
            } else {
                "install bubblewrap (apt-get install bubblewrap) and add \"sandbox\": {\"kind\": \
                 \"bwrap\"} to \"agent\", or \"kind\": \"none\" to run unsandboxed knowingly"
            },
        ),
        _ => trial(cfg, agent, steps),
    }
}

/// The agent's version command (its program, its configured arguments, `--version`) run
/// inside the sandbox with the layout, environment and network of a step: the project's own
/// when the runner's directory exists (the sandbox binds it, so it must be there), else a
/// scratch one, so that doctor creates nothing in the project.
fn trial(cfg: &Config, agent: &AgentConfig, steps: &str) -> Check {
    let (sandbox, kind) = (&agent.sandbox, agent.kind);
    let scratch = tempfile::tempdir();
    let located = crate::runner_dir::RunnerDir::locate(&cfg.project_path)
        .ok()
        .filter(|r| r.dir.is_dir());
    let (work_tree, runner_dir) = match (&located, &scratch) {
        (Some(r), _) => (cfg.project_path.clone(), r.dir.clone()),
        (None, Ok(dir)) => {
            let runner_dir = dir.path().join(".git/sdlc-runner");
            if let Err(e) = std::fs::create_dir_all(&runner_dir) {
                return Check::fail(
                    "sandbox",
                    format!(
                        "cannot prepare a trial of the sandbox in {}: {e}",
                        dir.path().display()
                    ),
                    "check that the temporary directory (TMPDIR) is writable",
                );
            }
            (dir.path().to_path_buf(), runner_dir)
        }
        (None, Err(e)) => {
            return Check::fail(
                "sandbox",
                format!("cannot prepare a trial of the sandbox: no temporary directory: {e}"),
                "check that the temporary directory (TMPDIR) is writable",
            )
        }
    };
    let home = sandbox::runner_home();
    let spec = Spec {
        config: sandbox,
        agent: Some(kind),
        git_dir_writable: true,
        work_tree: &work_tree,
        runner_dir: &runner_dir,
        handed: &[],
        home: home.as_deref(),
    };
    // In a container, the image's own CLI; in bubblewrap, the one PATH finds here.
    let program = if sandbox.kind.is_container() {
        PathBuf::from(&agent.command)
    } else {
        match which::which(&agent.command) {
            Ok(p) => p,
            Err(e) => {
                return Check::fail(
                    "sandbox",
                    format!(
                        "{steps}: agent command `{}` not found on PATH ({e})",
                        agent.command
                    ),
                    "install the agent CLI or set agent.command to its path",
                )
            }
        }
    };
    let mut args = agent.args.clone();
    args.push("--version".into());
    let step_env: Vec<(String, String)> = agent
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let wrapped = match sandbox::wrap(&spec, &program, &args, &step_env, &sandbox::runner_var) {
        Ok(Some(w)) => w,
        Ok(None) => return Check::ok("sandbox", format!("none for {steps}")),
        Err(e) => {
            return Check::fail(
                "sandbox",
                format!("{steps}: {e}"),
                format!(
                    "install {} or change agent.sandbox.kind",
                    sandbox.kind.package()
                ),
            )
        }
    };
    let mut cmd = ChildSpec::new(&wrapped.program);
    cmd.args(&wrapped.args).env_clear().envs(wrapped.env);
    let network = match sandbox.network {
        SandboxNetwork::Host => "network host",
        SandboxNetwork::None => "no network",
    };
    let trial = format!(
        "`{} --version` inside {}",
        program
            .file_name()
            .map_or(agent.command.clone(), |n| n.to_string_lossy().to_string()),
        sandbox.kind
    );
    match crate::process::output_within(cmd, PROBE_TIMEOUT) {
        Ok(Some(out)) if out.status.success() => {
            let missing = missing_paths(sandbox, home.as_deref());
            let detail = format!(
                "{} for {steps} ({network}): {trial} ran; the agent can change the work tree and \
                 nothing else",
                sandbox.kind
            );
            if missing.is_empty() {
                Check::ok("sandbox", detail)
            } else {
                Check::warn(
                    "sandbox",
                    format!("{detail}; not there, so not bound: {}", missing.join(", ")),
                    "create them or remove them from agent.sandbox.readOnly/writable",
                )
            }
        }
        Ok(Some(out)) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said = sandbox::failed_to_start(
                sandbox.kind,
                out.status.code(),
                out.stdout.len() as u64,
                &stderr,
            )
            .unwrap_or_else(|| {
                format!(
                    "{trial} exited {}: {}",
                    crate::git::repo::exit_text(&out.status.code()),
                    stderr.trim()
                )
            });
            let unseen = unseen::paths(&stderr, home.as_deref());
            let fix = if unseen.is_empty() {
                "until the agent starts inside, its first step fails: give it what it needs \
                 (agent.sandbox.readOnly, writable, env)"
                    .to_string()
            } else {
                format!(
                    "the agent could not see {}: add {} to agent.sandbox.readOnly",
                    unseen.join(", "),
                    unseen
                        .iter()
                        .map(|p| format!("\"{p}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            Check::fail("sandbox", format!("{steps}: {said}"), fix)
        }
        Ok(None) => Check::fail(
            "sandbox",
            format!(
                "{steps}: {trial} gave no answer within {} s",
                PROBE_TIMEOUT.as_secs()
            ),
            format!(
                "run `{} {}` by hand to see where it hangs",
                wrapped.program.display(),
                wrapped.args.join(" ")
            ),
        ),
        Err(e) => Check::fail(
            "sandbox",
            format!(
                "{steps}: {} cannot be started: {e}",
                wrapped.program.display()
            ),
            format!("reinstall {}", sandbox.kind.package()),
        ),
    }
}

/// Configured paths that do not exist (bubblewrap and the containers skip them).
fn missing_paths(sandbox: &SandboxConfig, home: Option<&Path>) -> Vec<String> {
    sandbox
        .read_only
        .iter()
        .chain(&sandbox.writable)
        .filter(|p| {
            let path = match (p.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => h.join(rest),
                _ => PathBuf::from(p.as_str()),
            };
            !path.exists()
        })
        .cloned()
        .collect()
}
