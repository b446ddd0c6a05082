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

/// The git command line every git call of the runner starts.
fn command(dir: &Path, args: &[&str]) -> ChildSpec {
    let mut cmd = ChildSpec::new(crate::process::git_program());
    cmd.args(args)
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
}
