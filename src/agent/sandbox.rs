//! The agent in a sandbox (`agent.sandbox`): the argument vector that runs the agent CLI
//! inside bubblewrap, podman or docker, and the environment it is handed. What the agent sees:
//!
//! - the work tree (for a worker, its clone) read-write, its git directory (and a linked
//!   worktree's common directory) read-only: the agent reads history and changes files, the
//!   runner makes every branch, commit and push; the object directories a clone borrows (its
//!   alternates) read-only; the runner's own directory under it (journal, lock, claims, decisions) hidden
//!   behind an empty read-only directory, with only the files the runner hands the step (the
//!   issue's text) bound back read-only;
//! - the system (`/usr`, `/etc`, `/lib*`, `/bin`, `/sbin`) read-only, its own `/tmp`, `/proc`
//!   and `/dev`;
//! - a `HOME` that is empty but for the agent CLI's own configuration (writable, so a
//!   refreshed login persists), git's configuration (read-only), the agent program's own directory (read-only) and `readOnly`/`writable`;
//! - an environment of `PATH`, `HOME`, `LANG`, `TERM`, the step's variables, the CLI's own
//!   API-key variables and `env`, nothing else: the variables are handed through the
//!   environment of the sandbox program, never its arguments, which any user can read.
//!
//! The process side (docs/security.md): bubblewrap gets its own PID namespace and dies with
//! the runner; when the agent ends, the namespace's init ends and the kernel kills everything
//! left in it, so a `setsid` daemon does not outlive the step. The runner's stop (its group,
//! then every process carrying the attempt's mark, which is passed in) reaches the agent
//! inside as it does outside.
//!
//! The local forge's CI (`localCi`) runs the tree the agent wrote, so it comes here too
//! ([`wrap_ci`]): the same kind and view, but its scratch copy of the commit is the only
//! writable place (the clone's git directory is bound read-only) and neither the agent
//! CLI's configuration nor its keys are handed in. Builtin steps never come here: the
//! runner's own git and forge calls run as the operator.

use crate::config::{AgentKind, SandboxConfig, SandboxKind, SandboxNetwork};
use std::path::{Path, PathBuf};

mod bwrap;
pub mod program;

pub use bwrap::{bwrap_args, planned_binds};
use bwrap::{bwrap_args_with, view_of};

/// The system directories every kind of agent reads; bound read-only where they exist.
const SYSTEM: [&str; 8] = [
    "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Variables of the runner's environment the agent gets whatever the config says.
const BASE_VARS: [&str; 4] = ["PATH", "HOME", "LANG", "TERM"];

/// The agent CLI's own configuration and credentials in the home directory.
pub fn cli_home_entries(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Claude => &[".claude", ".claude.json"],
        AgentKind::Codex => &[".codex"],
        AgentKind::Gemini => &[".gemini"],
    }
}

/// The variables the agent CLI reads its credentials from.
pub fn cli_key_vars(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Claude => &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ],
        AgentKind::Codex => &["OPENAI_API_KEY", "CODEX_API_KEY"],
        AgentKind::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    }
}

/// Git's configuration in the home directory, read-only inside: the agent's git reads history
/// with the operator's settings (the commits are the runner's).
const GIT_CONFIG: [&str; 2] = [".gitconfig", ".config/git"];

/// What one attempt's sandbox is built from.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// The sandbox as configured for the step.
    pub config: &'a SandboxConfig,
    /// Which CLI runs (its own home entries and key variables are passed in); `None` for
    /// the local CI's command, which needs neither.
    pub agent: Option<AgentKind>,
    /// The work tree the agent works in, and its working directory.
    pub work_tree: &'a Path,
    /// The runner's directory (`<common git dir>/sdlc-runner`): hidden; its parent, the
    /// common git directory, is bound read-write when it lies outside the work tree.
    pub runner_dir: &'a Path,
    /// Whether the common git directory is writable inside (the agent commits); when not,
    /// it is bound read-only wherever it lies, and the runner's directory is hidden only
    /// if it exists (nothing can create it).
    pub git_dir_writable: bool,
    /// Files under the runner's directory the step is handed, bound back read-only.
    pub handed: &'a [PathBuf],
    /// The runner's home directory (`HOME`), if it has one.
    pub home: Option<&'a Path>,
}

/// The agent's command after wrapping: the sandbox program's argument vector, and the whole
/// environment it is started with (the runner's own is not inherited).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    /// The sandbox program (`bwrap`, `podman`, `docker`), resolved on PATH.
    pub program: PathBuf,
    /// Its arguments, the agent's program and arguments last.
    pub args: Vec<String>,
    /// The only variables the sandbox program, and so the agent, gets.
    pub env: Vec<(String, String)>,
    /// With `network: "allowlist"`: the proxy the attempt must serve (`crate::egress`).
    pub egress: Option<crate::egress::Plan>,
}

/// Why the agent's sandbox cannot be prepared: the environment's, never the issue's.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kind's program is not installed.
    #[error(
        "agent.sandbox kind {kind}: `{program}` not found on PATH ({source}); install it (the \
         distribution's package `{package}`, e.g. `apt-get install {package}`) or set \
         agent.sandbox.kind to \"none\" to run the agent unsandboxed"
    )]
    Missing {
        /// The configured kind.
        kind: SandboxKind,
        /// The program looked for.
        program: &'static str,
        /// Its package.
        package: &'static str,
        #[source]
        /// What the lookup said.
        source: which::Error,
    },
    /// `network: "allowlist"` cannot be set up (the message names the key and the fix).
    #[error("{0}")]
    Egress(String),
}

/// The agent's `program` and `args` wrapped in the step's sandbox, with the environment it
/// is handed: `step_env` (the step's variables, `agent.env`, the issue file) and, from the
/// runner's environment (`host_var`), only the variables the agent needs. `Ok(None)` for
/// kind `none`.
pub fn wrap(
    spec: &Spec,
    program: &Path,
    args: &[String],
    step_env: &[(String, String)],
    host_var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Wrapped>, SandboxError> {
    let kind = spec.config.kind;
    if kind == SandboxKind::None {
        return Ok(None);
    }
    let sandbox = which::which(kind.as_str()).map_err(|source| SandboxError::Missing {
        kind,
        program: kind.as_str(),
        package: kind.package(),
        source,
    })?;
    let mut env = environment(spec, step_env, host_var);
    let mut args = match kind {
        SandboxKind::Bwrap => bwrap_args_with(spec, program, args, &view_of(spec, host_var)),
        _ => container_args(spec, program, args, &env),
    };
    let egress = match (spec.config.network, spec.agent) {
        (SandboxNetwork::Allowlist, Some(agent)) if kind == SandboxKind::Bwrap => {
            Some(egress::enclose(spec.config, agent, &mut args, &mut env)?)
        }
        _ => None,
    };
    Ok(Some(Wrapped {
        program: sandbox,
        args,
        env,
        egress,
    }))
}

/// The local CI's `program` and `args` (`localCi.command`) wrapped in `config`'s sandbox
/// with the agent's view, in `scratch` (the commit's scratch tree: the working directory and
/// the only writable place) of the clone whose runner's directory is `runner_dir`. The
/// environment is the runner's `PATH`, `HOME`, `LANG`, `TERM` and the names in
/// `config.env`, nothing else. `Ok(None)` for kind `none`.
pub fn wrap_ci(
    config: &SandboxConfig,
    scratch: &Path,
    runner_dir: &Path,
    program: &str,
    args: &[String],
    host_var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Wrapped>, SandboxError> {
    let home = runner_home();
    let spec = Spec {
        config,
        agent: None,
        work_tree: scratch,
        runner_dir,
        git_dir_writable: false,
        handed: &[],
        home: home.as_deref(),
    };
    // bubblewrap shows the host's system: a bare name is the program PATH finds here, whose
    // directory is bound in when it lies outside the system's. A container finds its own.
    let program = match config.kind {
        SandboxKind::Bwrap if !program.contains('/') => {
            which::which(program).unwrap_or_else(|_| PathBuf::from(program))
        }
        _ => PathBuf::from(program),
    };
    wrap(&spec, &program, args, &[], host_var)
}

/// The whole environment of the sandboxed agent: the runner's `PATH`, `HOME`, `LANG`,
/// `TERM`, the CLI's key variables and the configured `env` names that are set, then the
/// step's own variables (which win).
pub fn environment(
    spec: &Spec,
    step_env: &[(String, String)],
    host_var: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut names: Vec<&str> = BASE_VARS.to_vec();
    if let Some(agent) = spec.agent {
        names.extend_from_slice(cli_key_vars(agent));
        names.extend(crate::agent::cli::route_vars(agent));
    }
    names.extend(spec.config.env.iter().map(String::as_str));
    let mut env: Vec<(String, String)> = Vec::new();
    for name in names {
        if env.iter().any(|(k, _)| k == name) || step_env.iter().any(|(k, _)| k == name) {
            continue;
        }
        if let Some(value) = host_var(name) {
            env.push((name.to_string(), value));
        }
    }
    env.extend(step_env.iter().cloned());
    // Inside the runner's own sandbox the CLI is told so (Claude Code: `IS_SANDBOX`), unless
    // the step says otherwise.
    for (name, value) in spec
        .agent
        .map_or(&[][..], crate::agent::cli::sandboxed_vars)
    {
        if !env.iter().any(|(k, _)| k == name) {
            env.push((name.to_string(), value.to_string()));
        }
    }
    env
}

/// What a dry run says of the step's sandbox; `None` without one.
pub fn planned(config: &SandboxConfig) -> Option<String> {
    let network = match config.network {
        SandboxNetwork::Host => "network kept",
        SandboxNetwork::None => "no network",
        SandboxNetwork::Allowlist => "only the allowlist, through the runner's proxy",
    };
    let image = config
        .image
        .as_ref()
        .filter(|_| config.kind.is_container())
        .map(|i| format!(", image {i}"))
        .unwrap_or_default();
    (config.kind != SandboxKind::None).then(|| {
        format!(
            "inside {}{image} ({network}): the work tree writable, the runner's directory, the \
             home and the tokens out of reach",
            config.kind
        )
    })
}

/// A variable of the runner's own environment, for [`wrap`].
pub fn runner_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The runner's home directory, for [`Spec::home`].
pub fn runner_home() -> Option<PathBuf> {
    crate::config::home_dir()
}

/// A configured path: `~/…` in the runner's home, else as written (validation allows only
/// absolute ones besides).
pub fn configured(path: &str, home: Option<&Path>) -> PathBuf {
    crate::config::expand_sandbox_path(path, home)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// Whether bubblewrap always shows `p` (the system's directories, `/proc`, `/dev`, `/tmp`'s
/// own): nothing to add for it.
pub fn shown_always(p: &Path) -> bool {
    in_system(p) || ["/proc", "/dev"].iter().any(|d| p.starts_with(d))
}

/// Whether `p` lies in one of the system directories every sandbox shows read-only.
fn in_system(p: &Path) -> bool {
    SYSTEM.iter().any(|d| p.starts_with(d))
}

/// The object directories the clone's git directory borrows (`objects/info/alternates`; a
/// worker's clone borrows the project's), outside the work tree: bound read-only so the
/// history the clone shares with them can be read.
fn borrowed_objects(spec: &Spec) -> Vec<PathBuf> {
    let Some(git_dir) = spec.runner_dir.parent() else {
        return Vec::new();
    };
    let objects = git_dir.join("objects");
    let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| objects.join(l))
        .filter(|p| !p.starts_with(spec.work_tree))
        .collect()
}

/// podman's and docker's argument vector: the same layout in a container from `image`,
/// started as the runner's user so that what the agent writes in the work tree stays the
/// operator's. The variables are named (`-e NAME`), so their values come from the
/// environment of the container program, never its arguments.
pub fn container_args(
    spec: &Spec,
    program: &Path,
    agent_args: &[String],
    env: &[(String, String)],
) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "run".into(),
        "--rm".into(),
        "-i".into(),
        // An init as PID 1 reaps and passes on signals, so a stop reaches the agent.
        "--init".into(),
        "--read-only".into(),
        "--tmpfs".into(),
        "/tmp".into(),
    ];
    container_user(&mut a, spec);
    if spec.config.network != SandboxNetwork::Host {
        a.extend(["--network".into(), "none".into()]);
    }
    container_volumes(&mut a, spec);
    // An anonymous volume hides the runner's directory; the handed files come back on top.
    if hides_runner_dir(spec) {
        a.extend(["--volume".into(), s(spec.runner_dir)]);
        for f in spec.handed {
            let f = s(f);
            a.extend(["--volume".into(), format!("{f}:{f}:ro")]);
        }
    }
    a.extend(["--workdir".into(), s(spec.work_tree)]);
    for (name, _) in env {
        a.extend(["-e".into(), name.clone()]);
    }
    for name in [
        crate::process::reaper::SCOPE_VAR,
        crate::process::reaper::WHERE_VAR,
    ] {
        a.extend(["-e".into(), name.to_string()]);
    }
    a.push(spec.config.image.clone().unwrap_or_default());
    a.push(s(program));
    a.extend(agent_args.iter().cloned());
    a
}

/// Who the agent runs as in the container: the runner's user.
fn container_user(a: &mut Vec<String>, spec: &Spec) {
    if spec.config.kind == SandboxKind::Podman {
        // Rootless podman maps the runner's user to itself only with keep-id; rootful podman
        // (the runner as root: a container, a CI job) refuses keep-id and runs the agent as
        // root, the runner's own user already.
        if !rustix::process::getuid().is_root() {
            a.push("--userns=keep-id".into());
        }
    } else {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        a.extend(["--user".into(), format!("{uid}:{gid}")]);
    }
}

/// The container's mounts: the CLI's home entries and git config, the work tree, the git
/// directory, borrowed objects and the configured paths.
fn container_volumes(a: &mut Vec<String>, spec: &Spec) {
    if let Some(home) = spec.home.filter(|h| *h != Path::new("/")) {
        a.extend(["--tmpfs".into(), s(home)]);
        for entry in spec.agent.map_or(&[][..], cli_home_entries) {
            let p = home.join(entry);
            if p.exists() {
                volume(a, &p, false);
            }
        }
        for entry in GIT_CONFIG {
            let p = home.join(entry);
            if p.exists() {
                volume(a, &p, true);
            }
        }
    }
    volume(a, spec.work_tree, false);
    if let Some(git_dir) = spec.runner_dir.parent() {
        if !spec.git_dir_writable {
            volume(a, git_dir, true);
        } else if !git_dir.starts_with(spec.work_tree) {
            volume(a, git_dir, false);
        }
    }
    for objects in borrowed_objects(spec) {
        if objects.exists() {
            volume(a, &objects, true);
        }
    }
    for p in &spec.config.read_only {
        let p = configured(p, spec.home);
        if p.exists() {
            volume(a, &p, true);
        }
    }
    for p in &spec.config.writable {
        let p = configured(p, spec.home);
        if p.exists() {
            volume(a, &p, false);
        }
    }
}

/// Whether the runner's directory is covered: always under a writable git directory (the
/// sandbox makes the mount point, and so nothing written there reaches the runner); under a
/// read-only one only when it exists, since there is no mount point to make and nothing
/// inside can create it.
fn hides_runner_dir(spec: &Spec) -> bool {
    spec.git_dir_writable || spec.runner_dir.is_dir()
}

/// `--volume host:host` (read-only with `ro`): the path where it is on the host.
fn volume(a: &mut Vec<String>, host: &Path, ro: bool) {
    let p = s(host);
    a.push("--volume".into());
    a.push(if ro {
        format!("{p}:{p}:ro")
    } else {
        format!("{p}:{p}")
    });
}

/// Whether an attempt that ended like this never got past the sandbox's own setup: the
/// sandbox program's failure, not the agent's. bubblewrap says so on stderr (`bwrap: …`)
/// with exit code 1 before the agent prints anything; podman and docker exit 125 when the
/// container cannot be made (image absent, daemon down), 126 or 127 when the agent's program
/// cannot be started in it. Returns the message to halt with, naming the fix.
pub fn failed_to_start(
    kind: SandboxKind,
    exit_code: Option<i32>,
    stdout_bytes: u64,
    stderr_tail: &str,
) -> Option<String> {
    if stdout_bytes > 0 {
        return None;
    }
    let said = stderr_tail.trim();
    let fails = match kind {
        SandboxKind::None => false,
        SandboxKind::Bwrap => exit_code == Some(1) && said.starts_with("bwrap: "),
        SandboxKind::Podman | SandboxKind::Docker => {
            matches!(exit_code, Some(125..=127))
        }
    };
    fails.then(|| {
        let fix = match kind {
            SandboxKind::Bwrap => {
                "check that user namespaces are on (sysctl kernel.unprivileged_userns_clone=1, \
                 or kernel.apparmor_restrict_unprivileged_userns=0) and that the agent's program \
                 and the paths in agent.sandbox exist; `sdlc-runner doctor` tries the sandbox"
            }
            _ => {
                "check that the image in agent.sandbox.image exists here and holds the agent \
                 CLI, and that the container engine runs; `sdlc-runner doctor` tries the sandbox"
            }
        };
        let last = said.lines().last().unwrap_or("no message");
        format!(
            "the agent's sandbox ({kind}) could not start (exit {}): {last}; {fix}",
            exit_code.map_or("by a signal".to_string(), |c| c.to_string())
        )
    })
}

mod egress;

#[cfg(test)]
mod tests;
