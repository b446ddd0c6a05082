//! The checks of what the runner keeps on this machine: its directory under the git dir,
//! the `.claude/` artifacts, git's exclude lines, the log directory and the free disk.

use super::Check;
use crate::config::Config;
use crate::runner_dir::RunnerDir;
use std::path::{Path, PathBuf};

/// Below this much free space a run fails (the journal and logs cannot be written).
const DISK_FAIL_BYTES: u64 = 100 << 20;
/// Below this much a long run may fill the disk.
const DISK_WARN_BYTES: u64 = 1 << 30;

/// The runner's own directory under the git dir: safe to write into, and whether a runner
/// holds it now or the last session halted.
pub(super) fn runner_state(cfg: &Config) -> Vec<Check> {
    let dir = match RunnerDir::locate(&cfg.project_path) {
        Ok(dir) => dir,
        Err(e) => {
            return vec![Check::fail(
                "state",
                e.to_string(),
                "point projectPath at a clone of the repository",
            )]
        }
    };
    let mut checks = Vec::new();
    match std::fs::symlink_metadata(&dir.dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => checks.push(Check::ok(
            "state",
            format!("{} will be created (0700)", dir.dir.display()),
        )),
        _ => match crate::safe_fs::check_private_dir(&dir.dir) {
            Ok(()) => checks.push(Check::ok(
                "state",
                format!("{} (owner-only)", dir.dir.display()),
            )),
            Err(e) => checks.push(Check::fail("state", e.to_string(), "as the message says")),
        },
    }
    let liveness = crate::commands::status::runner_liveness(&cfg.project_path);
    if liveness.starts_with("running") {
        checks.push(Check::warn(
            "lock",
            format!("another runner is {liveness} on this clone"),
            "wait for it or stop it; `run` would exit 2 while it holds the lock",
        ));
    }
    if let Ok(st) = crate::commands::status::status(cfg) {
        if let Some(halt) = st.sticky_halt {
            checks.push(Check::fail(
                "halt",
                format!("the last session halted: {halt}"),
                "read `sdlc-runner status --config FILE`, fix the cause, then `run --ack-halt`",
            ));
        }
    }
    checks
}

pub(super) fn artifacts(cfg: &Config) -> Check {
    match crate::artifacts::check_artifact_dir(&cfg.project_path) {
        Ok(()) => Check::ok("artifacts", ".claude/ is usable"),
        Err(e) => Check::fail("artifacts", e, "as the message says"),
    }
}

pub(super) fn excludes(cfg: &Config) -> Check {
    let patterns: Vec<String> = crate::artifacts::exclude_patterns().collect();
    let (path, missing) = match crate::git::exclude::missing_excludes(&cfg.project_path, &patterns)
    {
        Ok(found) => found,
        Err(e) => {
            return Check::warn(
                "exclude",
                format!("cannot read .git/info/exclude: {e}"),
                "run adds the entries itself",
            )
        }
    };
    if missing.is_empty() {
        Check::ok(
            "exclude",
            format!("{} lists the runner's files", path.display()),
        )
    } else {
        Check::warn(
            "exclude",
            format!("{} lacks {}", path.display(), missing.join(" ")),
            "`sdlc-runner init` adds them, and so does the first `run`; until then `git status` lists the runner's files as untracked",
        )
    }
}

/// The working tree as `run` sees it before it starts an issue: changes that are no issue's
/// work (an untracked file such as the body given to `issue new --body-file`, an edit in
/// progress) make it refuse to start, so doctor says so first. On another branch (an issue
/// under way) they may be that issue's: a warning.
pub(super) fn tree(cfg: &Config) -> Check {
    let mut repo = match crate::git::repo::Repo::open(&cfg.project_path) {
        Ok(repo) => repo,
        Err(e) => {
            return Check::warn(
                "tree",
                format!("cannot read the working tree: {e}"),
                "see the project line",
            )
        }
    };
    let _ = repo.settle_base(cfg.base_branch.as_deref());
    let changes = match repo.foreign_changes() {
        Ok(changes) => changes,
        Err(e) => {
            return Check::warn(
                "tree",
                format!("cannot read the working tree: {e}"),
                "see the project line",
            )
        }
    };
    if changes.is_empty() {
        return Check::ok("tree", "no changes but the runner's own files");
    }
    let detail = format!(
        "{} has changes that are no issue's work: {}",
        cfg.project_path.display(),
        crate::driver::foreign_list(&changes, ", ")
    );
    let fix = crate::driver::FOREIGN_FIX;
    {
        {
            let on_base = repo
                .current_branch()
                .ok()
                .flatten()
                .is_some_and(|b| b == repo.main);
            if on_base {
                Check::fail(
                    "tree",
                    format!("{detail}; `run` refuses to start an issue over them"),
                    fix,
                )
            } else {
                Check::warn("tree", format!("{detail}; unless they are the issue's under way, `run` refuses them before the next issue"), fix)
            }
        }
    }
}

pub(super) fn log_dir(cfg: &Config) -> Check {
    let dir = &cfg.log_dir;
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let Some(parent) = nearest_existing(dir) else {
                return Check::fail(
                    "logs",
                    format!("{}: no existing parent", dir.display()),
                    "set logDir",
                );
            };
            match tempfile::tempdir_in(&parent) {
                Ok(_) => Check::ok("logs", format!("{} will be created (0700)", dir.display())),
                Err(e) => Check::fail(
                    "logs",
                    format!(
                        "{} cannot be created: {} is not writable ({e})",
                        dir.display(),
                        parent.display()
                    ),
                    "set logDir to a directory this user can write",
                ),
            }
        }
        _ => {
            if let Err(e) = crate::safe_fs::check_private_dir(dir) {
                return Check::fail("logs", e.to_string(), "as the message says");
            }
            match tempfile::tempfile_in(dir) {
                Ok(_) => Check::ok("logs", format!("{} writable, owner-only", dir.display())),
                Err(e) => Check::fail(
                    "logs",
                    format!("{} is not writable: {e}", dir.display()),
                    "fix its permissions or set logDir",
                ),
            }
        }
    }
}

pub(super) fn disk(cfg: &Config) -> Check {
    let mut worst: Option<(PathBuf, u64)> = None;
    for path in [&cfg.project_path, &cfg.log_dir] {
        let Some(existing) = nearest_existing(path) else {
            continue;
        };
        if let Some(free) = free_bytes(&existing) {
            if worst.as_ref().is_none_or(|(_, f)| free < *f) {
                worst = Some((existing, free));
            }
        }
    }
    let Some((path, free)) = worst else {
        return Check::warn("disk", "free space unknown", "check `df -h` by hand");
    };
    let detail = format!("{} MiB free at {}", free >> 20, path.display());
    if free < DISK_FAIL_BYTES {
        Check::fail(
            "disk",
            detail,
            "free disk space: the journal and logs need room",
        )
    } else if free < DISK_WARN_BYTES.max(cfg.max_log_disk_usage_bytes) {
        Check::warn(
            "disk",
            detail,
            "free disk space or lower maxLogDiskUsageMB: a long run may fill the disk",
        )
    } else {
        Check::ok("disk", detail)
    }
}

fn nearest_existing(path: &Path) -> Option<PathBuf> {
    path.ancestors().find(|p| p.exists()).map(Path::to_path_buf)
}

fn free_bytes(path: &Path) -> Option<u64> {
    fs4::available_space(path).ok()
}
