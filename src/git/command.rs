//! The one place the runner starts git ([`run`]): the git looked up once
//! (`process::git_program`), never prompting (an unattended run must not wait for
//! credentials), messages in one language (the adapters classify them), a time limit, and the
//! process runner's group, stop and head-and-tail capture. Every other module that needs git
//! (the state directory, `init`, `doctor`, the demo, a fleet's clones) comes here;
//! `tests/it/layering.rs` (`git_starts_only_in_git`) fails on a git started anywhere else.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::Output;

use crate::process::ChildSpec;
use std::time::Duration;

/// Longest a single git command may take: a fetch or push over a dead network must not hang
/// an unattended run.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// Git's automatic maintenance is off for the runner's own calls. After a commit, fetch,
/// merge or push git starts `git maintenance run --auto --detach` (`gc --auto` before git
/// 2.29): a process in the background, outside the call's time limit and process group, that
/// may hold the clone's locks (packed-refs, gc.pid) when the runner's next call needs them,
/// and that the runner can neither wait for nor stop. The operator's own git still maintains
/// the clone. `-c` reaches every git the call starts, the remote's receive-pack included.
const NO_AUTO_MAINTENANCE: [&str; 4] = ["-c", "maintenance.auto=false", "-c", "gc.auto=0"];

/// The git command line every git call of the runner starts.
fn command(dir: &Path, args: &[&str]) -> ChildSpec {
    let mut cmd = ChildSpec::new(crate::process::git_program());
    cmd.args(NO_AUTO_MAINTENANCE)
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    cmd
}

/// `git ARGS` in `dir` with `env` added, within `timeout`: the one function that starts git.
/// `Ok(None)` when git had to be stopped at the time limit.
pub fn run(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &OsStr)],
    timeout: Duration,
) -> io::Result<Option<Output>> {
    let mut cmd = command(dir, args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    crate::process::output_within(cmd, timeout)
}

/// `git ARGS` in `dir` within [`GIT_TIMEOUT`]. `Ok(None)` when git had to be stopped at the
/// time limit.
pub fn within(dir: &Path, args: &[&str]) -> io::Result<Option<Output>> {
    run(dir, args, &[], GIT_TIMEOUT)
}

/// [`within`], with the time limit as an error. `Err` for a git that cannot be started or
/// that had to be stopped.
pub fn output(dir: &Path, args: &[&str]) -> io::Result<Output> {
    within(dir, args)?.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "git {} (in {}): no answer within {} s; stopped",
                args.join(" "),
                dir.display(),
                GIT_TIMEOUT.as_secs()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::git_program;

    #[test]
    fn every_git_call_starts_the_one_absolute_git_found_once() {
        let found = git_program();
        assert!(found.is_absolute(), "{}", found.display());
        assert!(std::ptr::eq(found, git_program()), "looked up once");
        let cmd = command(Path::new("."), &["--version"]);
        assert_eq!(Path::new(cmd.get_program()), found);
        let out = output(Path::new("."), &["--version"]).expect("git runs");
        assert!(out.status.success());
    }

    /// Git's trace names every process a call starts: a commit (which asks for automatic
    /// maintenance on every git since 2.29) starts none, in a repository whose own
    /// configuration asks for maintenance at every chance.
    #[test]
    fn no_git_call_leaves_automatic_maintenance_behind() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = dir.path();
        let trace = repo.join("trace2.txt");
        let git = |args: &[&str]| {
            let out = run(
                repo,
                args,
                &[("GIT_TRACE2", trace.as_os_str())],
                GIT_TIMEOUT,
            )
            .expect("git runs")
            .expect("within its time");
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "--quiet"]);
        git(&["config", "maintenance.auto", "true"]);
        git(&["config", "gc.auto", "1"]);
        let who = ["-c", "user.name=t", "-c", "user.email=t@t"];
        git(&[
            &who[..],
            &["commit", "--allow-empty", "--quiet", "-m", "one"],
        ]
        .concat());
        let traced = std::fs::read_to_string(&trace).expect("git wrote its trace");
        assert!(traced.contains("cmd_name commit"), "{traced}");
        let started: Vec<&str> = traced
            .lines()
            .filter(|l| l.contains("child_start"))
            .collect();
        assert!(
            !started
                .iter()
                .any(|l| l.contains("maintenance") || l.contains(" gc")),
            "the commit started git's maintenance: {started:#?}"
        );
    }
}
