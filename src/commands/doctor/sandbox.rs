//! The agent's sandbox (`agent.sandbox`): a real trial of `true` inside each sandbox the
//! config's agent steps use, with the layout a step gets, and a warning when the agent runs
//! unattended with no sandbox chosen.

use super::{Check, PROBE_TIMEOUT};
use crate::agent::sandbox::{self, Spec};
use crate::config::{AgentKind, Config, SandboxConfig, SandboxKind, SandboxNetwork};
use crate::process::ChildSpec;
use crate::step::Step;
use std::path::{Path, PathBuf};

/// One line per distinct sandbox of the agent steps.
pub(super) fn checks(cfg: &Config) -> Vec<Check> {
    let mut seen: Vec<(SandboxConfig, AgentKind, Vec<&'static str>)> = Vec::new();
    for step in Step::ALL {
        if !cfg.enabled(step) || cfg.builtin(step) {
            continue;
        }
        let agent = cfg.agent(step);
        match seen
            .iter_mut()
            .find(|(s, k, _)| *s == agent.sandbox && *k == agent.kind)
        {
            Some((_, _, steps)) => steps.push(step.key()),
            None => seen.push((agent.sandbox.clone(), agent.kind, vec![step.key()])),
        }
    }
    seen.iter()
        .map(|(sandbox, kind, steps)| check(cfg, sandbox, *kind, &steps.join(", ")))
        .collect()
}

fn check(cfg: &Config, sandbox: &SandboxConfig, kind: AgentKind, steps: &str) -> Check {
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
        _ => trial(cfg, sandbox, kind, steps),
    }
}

/// `true` run inside the sandbox with the layout of a step: the project's own when the
/// runner's directory exists (the sandbox binds it, so it must be there), else a scratch
/// one, so that doctor creates nothing in the project.
fn trial(cfg: &Config, sandbox: &SandboxConfig, kind: AgentKind, steps: &str) -> Check {
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
    // In a container, the image's own `true`.
    let program = if sandbox.kind.is_container() {
        PathBuf::from("true")
    } else {
        which::which("true").unwrap_or_else(|_| PathBuf::from("/bin/true"))
    };
    let wrapped = match sandbox::wrap(&spec, &program, &[], &[], &sandbox::runner_var) {
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
        SandboxNetwork::Allowlist => "network through the runner's allowlist proxy",
    };
    let trial = format!("`true` inside {}", sandbox.kind);
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
            Check::fail(
                "sandbox",
                format!("{steps}: {said}"),
                "until the trial passes, every agent step halts the run as TOOLING_ENV",
            )
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
