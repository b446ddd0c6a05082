//! bubblewrap's argument vector: the system read-only, then the agent's view by depth (the
//! more specific bind wins), the runner's directory hidden last.

use super::{
    borrowed_objects, cli_home_entries, configured, hides_runner_dir, in_system, program, s, Spec,
    GIT_CONFIG, SYSTEM,
};
use crate::config::{SandboxKind, SandboxNetwork};
use std::path::{Path, PathBuf};

/// A link to recreate inside: (its target, where it is).
type Link = Option<(PathBuf, PathBuf)>;

/// One mount of the agent's view below the system: where, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mount {
    Tmpfs,
    ReadOnly,
    ReadOnlyTry,
    Writable,
    WritableTry,
}

/// bubblewrap's argument vector (bwrap applies its options in order: a later mount covers an
/// earlier one). Below the system, the view's mounts go by depth, the shallower first, so the
/// more specific always wins: the work tree stays writable under a read-only parent (`"~"`),
/// the CLI's own directories under a read-only home. The runner's directory is hidden last,
/// after every bind that could show it.
pub fn bwrap_args(spec: &Spec, program: &Path, agent_args: &[String]) -> Vec<String> {
    bwrap_args_with(spec, program, agent_args, &View::default())
}

/// What the environment adds to the view: the files its route variables name (a CA bundle,
/// a credentials file), and the `PATH` a script's interpreter is looked up on.
#[derive(Debug, Default)]
pub(super) struct View {
    route_files: Vec<PathBuf>,
    path: Option<String>,
}

/// The view's mounts below the system, in the order they are given: by depth, and at one
/// depth as listed (the home's tmpfs before a bind of the home itself).
fn view_mounts(spec: &Spec, program: &Path, view: &View) -> (Vec<(Mount, PathBuf)>, Link) {
    let mut m: Vec<(Mount, PathBuf)> = Vec::new();
    if let Some(home) = spec.home.filter(|h| *h != Path::new("/")) {
        m.push((Mount::Tmpfs, home.to_path_buf()));
        for entry in spec.agent.map_or(&[][..], cli_home_entries) {
            m.push((Mount::WritableTry, home.join(entry)));
        }
        for entry in GIT_CONFIG {
            m.push((Mount::ReadOnlyTry, home.join(entry)));
        }
    }
    let needs = program::needs(program, spec.home, spec.work_tree, view.path.as_deref());
    m.extend(needs.read_only.into_iter().map(|d| (Mount::ReadOnly, d)));
    m.extend(
        view.route_files
            .iter()
            .filter(|f| !in_system(f))
            .map(|f| (Mount::ReadOnlyTry, f.clone())),
    );
    m.push((Mount::Writable, spec.work_tree.to_path_buf()));
    if let Some(git_dir) = spec.runner_dir.parent() {
        if !spec.git_dir_writable {
            // Deeper than a tree it lies in, so it covers the tree's bind there too.
            m.push((Mount::ReadOnly, git_dir.to_path_buf()));
        } else if !git_dir.starts_with(spec.work_tree) {
            m.push((Mount::Writable, git_dir.to_path_buf()));
        }
    }
    for objects in borrowed_objects(spec) {
        m.push((Mount::ReadOnlyTry, objects));
    }
    for p in &spec.config.read_only {
        m.push((Mount::ReadOnlyTry, configured(p, spec.home)));
    }
    for p in &spec.config.writable {
        m.push((Mount::WritableTry, configured(p, spec.home)));
    }
    // At one depth the later wins, so the tree is given after an entry naming it too.
    m.sort_by_key(|(mount, p)| {
        (
            p.components().count(),
            *mount == Mount::Writable && p == spec.work_tree,
        )
    });
    (m, needs.link)
}

pub(super) fn bwrap_args_with(
    spec: &Spec,
    program: &Path,
    agent_args: &[String],
    view: &View,
) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|i| i.to_string()));
    push(&["--die-with-parent", "--new-session", "--unshare-pid"]);
    // `allowlist`: a loopback of its own too; the proxy's socket is its one way out.
    if spec.config.network != SandboxNetwork::Host {
        push(&["--unshare-net"]);
    }
    for dir in SYSTEM {
        push(&["--ro-bind-try", dir, dir]);
    }
    // A resolver file that links outside /etc (systemd-resolved's stub) must resolve too.
    if spec.config.network == SandboxNetwork::Host {
        if let Ok(real) = std::fs::canonicalize("/etc/resolv.conf") {
            if let Some(dir) = real.parent().filter(|d| !in_system(d)) {
                let d = s(dir);
                push(&["--ro-bind-try", &d, &d]);
            }
        }
    }
    push(&["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]);
    let (mounts, link) = view_mounts(spec, program, view);
    for (mount, path) in &mounts {
        let p = s(path);
        match mount {
            Mount::Tmpfs => push(&["--tmpfs", &p]),
            Mount::ReadOnly => push(&["--ro-bind", &p, &p]),
            Mount::ReadOnlyTry => push(&["--ro-bind-try", &p, &p]),
            Mount::Writable => push(&["--bind", &p, &p]),
            Mount::WritableTry => push(&["--bind-try", &p, &p]),
        }
    }
    if let Some((real, at)) = &link {
        push(&["--symlink", &s(real), &s(at)]);
    }
    if hides_runner_dir(spec) {
        let hidden = s(spec.runner_dir);
        push(&["--tmpfs", &hidden]);
        for f in spec.handed {
            let f = s(f);
            push(&["--ro-bind", &f, &f]);
        }
        push(&["--remount-ro", &hidden]);
    }
    let tree = s(spec.work_tree);
    push(&["--chdir", &tree, "--", &s(program)]);
    a.extend(agent_args.iter().cloned());
    a
}

/// What a dry run lists of the agent's view beyond the work tree: the program's
/// installation and its interpreter's (read-only), and the files the route variables name.
pub fn planned_binds(
    spec: &Spec,
    program: &Path,
    host_var: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    if spec.config.kind == SandboxKind::None {
        return Vec::new();
    }
    let view = view_of(spec, host_var);
    let needs = program::needs(program, spec.home, spec.work_tree, view.path.as_deref());
    needs
        .read_only
        .iter()
        .chain(view.route_files.iter().filter(|f| !in_system(f)))
        .map(|p| format!("read-only: {}", p.display()))
        .collect()
}

/// The environment's part of the view (`host_var`: the runner's environment).
pub(super) fn view_of(spec: &Spec, host_var: &dyn Fn(&str) -> Option<String>) -> View {
    let route_files = match spec.agent {
        Some(kind) => crate::agent::cli::route_vars(kind)
            .into_iter()
            .filter(|n| crate::agent::cli::PATH_VARS.contains(n))
            .filter_map(host_var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .collect(),
        None => Vec::new(),
    };
    View {
        route_files,
        path: host_var("PATH"),
    }
}
