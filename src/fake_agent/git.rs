//! The git work a successful agent does for each step, in the project directory.

use super::Context;
use crate::step::Step;
use std::io;
use std::path::Path;
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum GitWorkError {
    #[error("could not run `git {args}` in {dir}: {source}; is git installed and on PATH?")]
    Spawn {
        args: String,
        dir: String,
        source: std::io::Error,
    },
    #[error("`git {args}` failed in {dir}: {stderr}")]
    Failed {
        args: String,
        dir: String,
        stderr: String,
    },
    #[error("could not write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("step {step} needs an issue number: set SDLC_ISSUE")]
    NoIssue { step: &'static str },
}

fn git(dir: &Path, args: &[&str]) -> Result<String, GitWorkError> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|source| GitWorkError::Spawn {
            args: args.join(" "),
            dir: dir.display().to_string(),
            source,
        })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    } else {
        Err(GitWorkError::Failed {
            args: args.join(" "),
            dir: dir.display().to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// Whether the clone's git directory takes writes: not in a sandbox, which binds it
/// read-only (the runner commits, the agent only changes files). Asked with `access(2)`,
/// which writes nothing.
pub fn git_dir_writable(dir: &Path) -> bool {
    let Ok(common) = git(dir, &["rev-parse", "--git-common-dir"]) else {
        return false;
    };
    let common = dir.join(common);
    rustix::fs::access(&common, rustix::fs::Access::WRITE_OK).is_ok()
}

/// A repair of failing CI: `ci-fixed` written; where the git directory takes writes (no
/// sandbox: an agent of old), committed on the current branch and pushed when `push`, else
/// left for the runner to commit and push.
pub fn fix_ci(ctx: &Context, push: bool) -> io::Result<String> {
    let dir = &ctx.cwd;
    let work = || -> Result<String, GitWorkError> {
        write(&dir.join("ci-fixed"), "fixed\n")?;
        if !git_dir_writable(dir) {
            return Ok("Fixed CI in ci-fixed; the runner commits and pushes it.".to_string());
        }
        git(dir, &["add", "--force", "--", "ci-fixed"])?;
        git(dir, &["commit", "-m", "fix: make CI pass"])?;
        if !push {
            return Ok("Fixed CI in a commit; the runner pushes it.".to_string());
        }
        let branch = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?;
        git(dir, &["push", "origin", &branch])?;
        Ok(format!("Fixed CI on {branch} and pushed."))
    };
    work().map_err(|e| io::Error::other(e.to_string()))
}

/// `shared.txt` with this issue's line, uncommitted (the implement work commits it).
pub fn write_shared(ctx: &Context) -> io::Result<()> {
    let n = ctx.issue.unwrap_or(0);
    std::fs::write(
        ctx.cwd.join("shared.txt"),
        format!("written by issue {n}\n"),
    )
}

/// Brings the issue's branch up to date with origin's main, keeping the branch's side of a
/// conflict. When the runner started the merge (it is in progress), only the files are
/// resolved, each to the branch's side (read from the index, which writes nothing), and the
/// merge is left for the runner to conclude; else (an agent of old, without a sandbox) the
/// agent merges, commits and pushes itself.
pub fn resolve_conflict(ctx: &Context) -> io::Result<String> {
    let dir = &ctx.cwd;
    let work = || -> Result<String, GitWorkError> {
        if git(dir, &["rev-parse", "--quiet", "--verify", "MERGE_HEAD"]).is_ok() {
            let unmerged = git(dir, &["diff", "--name-only", "--diff-filter=U"])?;
            let files: Vec<&str> = unmerged.lines().filter(|l| !l.is_empty()).collect();
            for file in &files {
                let ours = git(dir, &["show", &format!(":2:{file}")])?;
                write(&dir.join(file), &format!("{ours}\n"))?;
            }
            return Ok(format!(
                "Resolved {} to the branch's side; the runner concludes the merge.",
                files.join(", ")
            ));
        }
        let n = ctx.issue.unwrap_or(0);
        let branch = ctx.branch(n);
        on_branch_fetched(dir, &branch)?;
        git(
            dir,
            &[
                "merge",
                "--no-edit",
                "-X",
                "ours",
                "-m",
                "Merge main into the branch",
                "origin/main",
            ],
        )?;
        git(dir, &["push", "--quiet", "origin", &branch])?;
        Ok(format!(
            "Merged origin/main into {branch}, resolved the conflicts, pushed."
        ))
    };
    work().map_err(|e| io::Error::other(e.to_string()))
}

/// A teammate pushes a change of `shared.txt` to origin's main from a clone of their own, so
/// that this issue's `shared.txt` conflicts with main at merge time.
pub fn teammate_writes_shared(ctx: &Context) -> Result<(), GitWorkError> {
    let n = ctx.issue.unwrap_or(0);
    push_from_another_clone(
        &ctx.cwd,
        "teammate",
        "shared.txt",
        &format!("written by a teammate while issue {n} was worked on\n"),
        "a teammate's change to shared.txt",
    )
}

/// Another party, in a clone of origin of its own, commits `body` to `file` as `who` and
/// pushes the clone's default branch to origin.
fn push_from_another_clone(
    dir: &Path,
    who: &str,
    file: &str,
    body: &str,
    message: &str,
) -> Result<(), GitWorkError> {
    let origin = git(dir, &["remote", "get-url", "origin"])?;
    let other = tempfile::tempdir().map_err(|source| GitWorkError::Write {
        path: "a temporary directory".to_string(),
        source,
    })?;
    let clone = other.path().join(who);
    let clone_arg = clone.to_string_lossy().into_owned();
    git(other.path(), &["clone", "--quiet", &origin, &clone_arg])?;
    write(&clone.join(file), body)?;
    git(&clone, &["add", "--", file])?;
    let name = format!("user.name={who}");
    let email = format!("user.email={who}@example.com");
    git(
        &clone,
        &[
            "-c", &name, "-c", &email, "commit", "--quiet", "-m", message,
        ],
    )?;
    let head = git(&clone, &["symbolic-ref", "--short", "HEAD"])?;
    git(&clone, &["push", "--quiet", "origin", &head])?;
    Ok(())
}

/// `branch` checked out (if it is not already) and origin fetched.
fn on_branch_fetched(dir: &Path, branch: &str) -> Result<(), GitWorkError> {
    let current = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    if current.trim() != branch {
        git(dir, &["checkout", "--quiet", branch])?;
    }
    git(dir, &["fetch", "--quiet", "origin"])?;
    Ok(())
}

/// Starts merging origin's default branch into the issue's branch and stops at the conflict:
/// `MERGE_HEAD` and unmerged paths with conflict markers stay in the tree.
pub fn leave_conflict(ctx: &Context) -> Result<String, GitWorkError> {
    let dir = &ctx.cwd;
    let n = ctx.issue.unwrap_or(0);
    let branch = ctx.branch(n);
    on_branch_fetched(dir, &branch)?;
    let main = git(
        dir,
        &["symbolic-ref", "--short", "refs/remotes/origin/HEAD"],
    )
    .unwrap_or_else(|_| "origin/main".to_string());
    // Expected to fail: the conflict is what this outcome leaves behind.
    let said = match git(dir, &["merge", "--no-edit", &main]) {
        Ok(_) => "the merge went through".to_string(),
        Err(e) => e.to_string(),
    };
    Ok(format!(
        "Started merging {main} into {branch} and gave up: {said}"
    ))
}

/// The merge of `merge`, except that between the merge and its push another party pushes a
/// commit to origin's main (from a clone of its own), so the push is rejected: a lost race.
pub fn merge_losing_race(ctx: &Context) -> Result<(), GitWorkError> {
    let dir = &ctx.cwd;
    let n = ctx.issue.unwrap_or(0);
    merge_on_main(dir, n, ctx.branch(n))?;
    push_from_another_clone(
        dir,
        "someone",
        &format!("elsewhere-{n}.txt"),
        "pushed by someone else\n",
        "a change pushed by someone else",
    )?;
    git(dir, &["push", "origin", "main"])?;
    Ok(())
}

/// Leave the feature branch (for the `checkout-main` outcome).
pub fn checkout_main(ctx: &Context) -> io::Result<()> {
    git(&ctx.cwd, &["checkout", "--quiet", "main"])
        .map(|_| ())
        .map_err(|e| io::Error::other(e.to_string()))
}

/// What an agent asked for "a clean tree" may run: every untracked and ignored file goes.
pub fn clean_everything(ctx: &Context) -> io::Result<()> {
    git(&ctx.cwd, &["clean", "-fdx"])
        .map(drop)
        .map_err(|e| io::Error::other(e.to_string()))
}

pub fn branch_name(n: u32) -> String {
    format!("{n}-issue-{n}")
}

/// Main checked out and pulled, and issue `n`'s branch merged into it (not pushed); the
/// branch's name.
fn merge_on_main(dir: &Path, n: u32, branch: String) -> Result<String, GitWorkError> {
    checkout_and_pull_main(dir)?;
    let message = format!("Merge issue #{n}");
    git(dir, &["merge", "--no-ff", &branch, "-m", &message])?;
    Ok(branch)
}

/// `git checkout main` then a fast-forward pull; a main without an upstream skips the pull.
fn checkout_and_pull_main(dir: &Path) -> Result<(), GitWorkError> {
    git(dir, &["checkout", "main"])?;
    if git(dir, &["rev-parse", "--abbrev-ref", "main@{upstream}"]).is_ok() {
        git(dir, &["pull", "--ff-only"])?;
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), GitWorkError> {
    let err = |source| GitWorkError::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(path, text).map_err(err)
}

fn append(path: &Path, text: &str) -> Result<(), GitWorkError> {
    use std::io::Write;
    let err = |source| GitWorkError::Write {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    file.write_all(text.as_bytes()).map_err(err)
}

/// Does the step's work and returns a one-line summary for the assistant message.
pub fn do_step_work(ctx: &Context) -> Result<String, GitWorkError> {
    let dir = ctx.cwd.as_path();
    let issue = || {
        ctx.issue.ok_or(GitWorkError::NoIssue {
            step: ctx.step.key(),
        })
    };
    match ctx.step {
        Step::StartCycle => {
            checkout_and_pull_main(dir)?;
            Ok("Checked out main and pulled.".to_string())
        }
        Step::StartIssue => {
            let n = issue()?;
            let branch = ctx.branch(n);
            let exists = git(dir, &["rev-parse", "--verify", "--quiet", &branch]).is_ok();
            if exists {
                git(dir, &["checkout", &branch])?;
            } else {
                // From HEAD, where startCycle left the tree: main, or origin's default
                // branch when that is another (the precondition holds HEAD there).
                git(dir, &["checkout", "-b", &branch])?;
            }
            Ok(format!("Started issue #{n} on branch {branch}."))
        }
        Step::WriteSpecs => {
            let n = issue()?;
            let rel = format!("specs/{}", ctx.branch(n));
            for (file, body) in [
                (
                    "requirements.md",
                    format!("# Requirements for issue #{n}\n\n- It works.\n"),
                ),
                (
                    "design.md",
                    format!("# Design for issue #{n}\n\nA small change.\n"),
                ),
                (
                    "tasks.md",
                    format!("# Tasks for issue #{n}\n\n- [ ] Implement it.\n"),
                ),
                (
                    "feature.gherkin",
                    format!("Feature: issue {n}\n  Scenario: it works\n    Then it works\n"),
                ),
            ] {
                write(&dir.join(&rel).join(file), &body)?;
            }
            if !git_dir_writable(dir) {
                // In a sandbox: the runner commits them.
                return Ok(format!("Wrote the specs in {rel}."));
            }
            git(dir, &["add", "--", &rel])?;
            // A rerun (after an interrupted attempt) finds them committed already.
            if git(dir, &["diff", "--cached", "--quiet"]).is_err() {
                git(
                    dir,
                    &["commit", "-m", &format!("docs: specs for issue #{n}")],
                )?;
            }
            Ok(format!("Wrote the specs in {rel}."))
        }
        Step::Implement => {
            let n = issue()?;
            let path = dir.join(format!("src/issue_{n}.txt"));
            let line = format!("issue {n}: implemented on attempt {}\n", ctx.attempt);
            append(&path, &line)?;
            Ok(format!("Implemented issue #{n} in src/issue_{n}.txt."))
        }
        Step::Simplify => {
            // An agent simplifying works on the issue's branch, wherever it found HEAD.
            let n = issue()?;
            let branch = ctx.branch(n);
            let current = git(dir, &["rev-parse", "--abbrev-ref", "HEAD"])?;
            if current.trim() != branch
                && git(dir, &["rev-parse", "--verify", "--quiet", &branch]).is_ok()
            {
                git(dir, &["checkout", &branch])?;
            }
            Ok(format!("Nothing to change for {}.", ctx.step.key()))
        }
        Step::Verify | Step::CreatePr | Step::MonitorCi => {
            Ok(format!("Nothing to change for {}.", ctx.step.key()))
        }
        Step::CommitPush => {
            let n = issue()?;
            let branch = ctx.branch(n);
            // The runner's own files live in .claude/ and must never reach a commit.
            git(dir, &["add", "-A", "--", ".", ":(exclude).claude"])?;
            if git(dir, &["diff", "--cached", "--quiet"]).is_err() {
                git(dir, &["commit", "-m", &format!("feat: issue #{n}")])?;
            }
            git(dir, &["push", "-u", "origin", &branch])?;
            Ok(format!("Committed and pushed {branch}."))
        }
        Step::Merge => {
            let n = issue()?;
            let branch = merge_on_main(dir, n, ctx.branch(n))?;
            git(dir, &["push", "origin", "main"])?;
            Ok(format!("Merged {branch} into main and pushed."))
        }
    }
}
