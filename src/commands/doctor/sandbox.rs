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

/// The work tree and runner's directory of the trial: the project's when its runner's
/// directory exists, else `scratch`'s.
fn layout(
    cfg: &Config,
    scratch: &std::io::Result<tempfile::TempDir>,
) -> Result<(PathBuf, PathBuf), Box<Check>> {
    let located = crate::runner_dir::RunnerDir::locate(&cfg.project_path)
        .ok()
        .filter(|r| r.dir.is_dir());
    let unwritable = "check that the temporary directory (TMPDIR) is writable";
    match (&located, scratch) {
        (Some(r), _) => Ok((cfg.project_path.clone(), r.dir.clone())),
        (None, Ok(dir)) => {
            let runner_dir = dir.path().join(".git/sdlc-runner");
            std::fs::create_dir_all(&runner_dir).map_err(|e| {
                Box::new(Check::fail(
                    "sandbox",
                    format!(
                        "cannot prepare a trial of the sandbox in {}: {e}",
                        dir.path().display()
                    ),
                    unwritable,
                ))
            })?;
            Ok((dir.path().to_path_buf(), runner_dir))
        }
        (None, Err(e)) => Err(Box::new(Check::fail(
            "sandbox",
            format!("cannot prepare a trial of the sandbox: no temporary directory: {e}"),
            unwritable,
        ))),
    }
}

/// The agent's version command (its program, its configured arguments, `--version`) run
/// inside the sandbox with the layout, environment and network of a step: the project's own
/// when the runner's directory exists (the sandbox binds it, so it must be there), else a
/// scratch one, so that doctor creates nothing in the project.
fn trial(cfg: &Config, agent: &AgentConfig, steps: &str) -> Check {
    let (sandbox, kind) = (&agent.sandbox, agent.kind);
    let scratch = tempfile::tempdir();
    let (work_tree, runner_dir) = match layout(cfg, &scratch) {
        Ok(paths) => paths,
        Err(check) => return *check,
    };
    let home = sandbox::runner_home();
    let spec = Spec {
        config: sandbox,
        agent: Some(kind),
        git_dir_writable: false,
        work_tree: &work_tree,
        runner_dir: &runner_dir,
        handed: &[],
        home: home.as_deref(),
    };
    let program = match program_of(agent, steps) {
        Ok(p) => p,
        Err(check) => return *check,
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
    let trial = format!(
        "`{} --version` inside {}",
        program
            .file_name()
            .map_or(agent.command.clone(), |n| n.to_string_lossy().to_string()),
        sandbox.kind
    );
    match crate::process::output_within(cmd, PROBE_TIMEOUT) {
        Ok(Some(out)) => {
            let shown = shown(&spec, &program);
            verdict(sandbox, &out, (home.as_deref(), &shown), steps, &trial)
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

/// What the trial's sandbox showed the agent beyond the system: the program's and its
/// interpreter's installations, the work tree, the configured paths.
fn shown(spec: &Spec, program: &Path) -> Vec<PathBuf> {
    let path = sandbox::runner_var("PATH");
    let needs = sandbox::program::needs(program, spec.home, spec.work_tree, path.as_deref());
    let configured = spec
        .config
        .read_only
        .iter()
        .chain(&spec.config.writable)
        .map(|p| sandbox::configured(p, spec.home));
    needs
        .read_only
        .into_iter()
        .chain(configured)
        .chain([spec.work_tree.to_path_buf()])
        .collect()
}

/// The agent's program: in a container, the image's own CLI by name; in bubblewrap, the one
/// PATH finds here.
fn program_of(agent: &AgentConfig, steps: &str) -> Result<PathBuf, Box<Check>> {
    if agent.sandbox.kind.is_container() {
        return Ok(PathBuf::from(&agent.command));
    }
    which::which(&agent.command).map_err(|e| {
        Box::new(Check::fail(
            "sandbox",
            format!(
                "{steps}: agent command `{}` not found on PATH ({e})",
                agent.command
            ),
            "install the agent CLI or set agent.command to its path",
        ))
    })
}

/// What the trial's answer says: it ran (and which configured paths were not there), or what
/// stopped the agent and, when its error names paths the sandbox hid, the entries to add.
fn verdict(
    sandbox: &SandboxConfig,
    out: &std::process::Output,
    (home, shown): (Option<&Path>, &[PathBuf]),
    steps: &str,
    trial: &str,
) -> Check {
    if out.status.success() {
        let network = match sandbox.network {
            SandboxNetwork::Host => "network host",
            SandboxNetwork::None => "no network",
            SandboxNetwork::Allowlist => "network through the runner's allowlist proxy",
        };
        let missing = missing_paths(sandbox, home);
        let detail = format!(
            "{} for {steps} ({network}): {trial} ran; the agent can change the work tree and \
             nothing else",
            sandbox.kind
        );
        return if missing.is_empty() {
            Check::ok("sandbox", detail)
        } else {
            Check::warn(
                "sandbox",
                format!("{detail}; not there, so not bound: {}", missing.join(", ")),
                "create them or remove them from agent.sandbox.readOnly/writable",
            )
        };
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = sandbox::failed_to_start(
        sandbox.kind,
        out.status.code(),
        out.stdout.len() as u64,
        &stderr,
    )
    .unwrap_or_else(|| {
        format!(
            "{trial} ended ({}): {}",
            crate::ports::git::CallEnd::of_exit(out.status.code()),
            stderr.trim()
        )
    });
    Check::fail(
        "sandbox",
        format!("{steps}: {said}"),
        unseen::fix(&stderr, home, shown),
    )
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
