//! `agent.sandbox.readOnly` / `writable` entries that would take the work tree from the agent
//! or show it the runner's directory: the project itself, or a path inside it. (A parent of
//! the project, `"~"` included, is fine: the more specific bind, the work tree's, wins.)

use crate::config::{Config, SandboxConfig};
use crate::step::Step;
use std::path::{Path, PathBuf};

/// One error (key, message) per such entry of the top level's sandbox and of each step's
/// own; `home` expands `~`.
pub(super) fn hiding(cfg: &Config, home: Option<&Path>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    out.extend(check(
        "agent.sandbox",
        &cfg.agent.sandbox,
        &cfg.project_path,
        home,
    ));
    for step in Step::ALL {
        let own = &cfg.agent(step).sandbox;
        if *own != cfg.agent.sandbox {
            let key = format!("steps.{}.agent.sandbox", step.key());
            for e in check(&key, own, &cfg.project_path, home) {
                if !out.contains(&e) {
                    out.push(e);
                }
            }
        }
    }
    out
}

fn check(
    key: &str,
    sandbox: &SandboxConfig,
    project: &Path,
    home: Option<&Path>,
) -> Vec<(String, String)> {
    let project_real = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let mut out = Vec::new();
    for (list, entries) in [
        ("readOnly", &sandbox.read_only),
        ("writable", &sandbox.writable),
    ] {
        for (i, entry) in entries.iter().enumerate() {
            let path = crate::config::expand_sandbox_path(entry, home);
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            let inside = |p: &PathBuf| p.starts_with(project) || p.starts_with(&project_real);
            if inside(&path) || inside(&real) {
                out.push((
                    format!("{key}.{list}[{i}]"),
                    format!(
                        "\"{entry}\" is the project ({}) or lies inside it: the agent's work tree \
                         is always writable in the sandbox and the runner's directory under its \
                         .git always hidden, so an entry there would take the tree from the agent \
                         or show it the journal; remove it",
                        project.display()
                    ),
                ));
            }
        }
    }
    out
}
