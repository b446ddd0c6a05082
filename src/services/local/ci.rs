//! CI of the local forge: a configured command (`localCi.command`, no shell) run in a fresh,
//! detached worktree of the branch's commit, so that nothing the agent left uncommitted in the
//! clone can make it pass. The command runs what the agent wrote, so it runs in the agent's
//! sandbox (`agent/sandbox.rs`, [`crate::agent::sandbox::wrap_ci`]) when there is one: only
//! the scratch tree writable, the runner's directory hidden, none of the runner's tokens.
//! Each commit is tested once: the verdict is kept in `<runner dir>/ci/<sha>.json`, so the
//! post-check, monitorCI's polling and merge all read the same result. A command that runs past its time limit is stopped (its whole process group)
//! and fails.

use crate::agent::sandbox;
use crate::config::{SandboxConfig, SandboxKind};
use crate::forge::{CiState, ForgeError};
use crate::git::repo::Repo;
use crate::ports::git::CallEnd;
use crate::process::ChildSpec;
use crate::runner_dir::RunnerDir;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes of the command's output kept as the failing check's log excerpt.
const EXCERPT_BYTES: usize = 4096;

/// Bytes of each of the command's streams held while it runs (its head and its tail), however
/// much it prints: the error at the end survives and memory stays flat.
const OUTPUT_BUDGET: crate::process::Budget = crate::process::Budget(1 << 20);

/// How the local forge runs CI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalCi {
    /// The CI command and its arguments (no shell), run in a detached worktree of the commit.
    pub command: Vec<String>,
    /// How long one CI run may take before it counts as failed.
    pub timeout: Duration,
    /// Where verdicts are kept (`<runner dir>/ci`).
    pub results: PathBuf,
    /// The sandbox the command runs in (the agent's, with `localCi.network`); kind `none`
    /// runs it as the runner's user with the runner's environment.
    pub sandbox: SandboxConfig,
}

/// One commit's verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Verdict {
    sha: String,
    passed: bool,
    /// Exit code, or `None` when the command was stopped at its time limit or by a signal.
    exit: Option<i32>,
    timed_out: bool,
    /// The end of stdout and stderr, redacted.
    excerpt: String,
}

impl LocalCi {
    fn command_text(&self) -> String {
        self.command.join(" ")
    }

    /// Runs the command on `branch`'s commit unless that commit has a verdict already.
    pub fn state(&self, repo: &Repo, branch: &str) -> Result<CiState, ForgeError> {
        self.state_of(repo, &commit_of(repo, branch)?)
    }

    /// Runs the command on commit `sha` unless it has a verdict already.
    pub fn state_of(&self, repo: &Repo, sha: &str) -> Result<CiState, ForgeError> {
        let sha = sha.to_string();
        let verdict = match self.read(&sha) {
            Some(v) => v,
            None => {
                let v = self.run(repo, &sha)?;
                self.write(&v)?;
                v
            }
        };
        Ok(if verdict.passed {
            CiState::Passed
        } else {
            CiState::Failed
        })
    }

    /// The failing check's name and the end of its output, as repair context.
    pub fn failing(&self, repo: &Repo, branch: &str) -> Result<String, ForgeError> {
        self.failing_of(&commit_of(repo, branch)?)
    }

    /// The failing check of commit `sha`, as [`LocalCi::failing`].
    pub fn failing_of(&self, sha: &str) -> Result<String, ForgeError> {
        let sha = sha.to_string();
        Ok(match self.read(&sha) {
            Some(v) if !v.passed => {
                let how = if v.timed_out {
                    format!(
                        "ran past {} min and was stopped",
                        self.timeout.as_secs() / 60
                    )
                } else {
                    CallEnd::of_exit(v.exit).to_string()
                };
                format!(
                    "local CI `{}` failed on {} ({how})\n{}",
                    self.command_text(),
                    &sha[..sha.len().min(12)],
                    v.excerpt
                )
            }
            _ => String::new(),
        })
    }

    fn path(&self, sha: &str) -> PathBuf {
        self.results.join(format!("{sha}.json"))
    }

    fn read(&self, sha: &str) -> Option<Verdict> {
        let bytes = crate::safe_fs::read_no_follow(&self.path(sha)).ok()?;
        serde_json::from_slice::<Verdict>(&bytes)
            .ok()
            .filter(|v| v.sha == sha)
    }

    fn write(&self, v: &Verdict) -> Result<(), ForgeError> {
        let fail = |source: std::io::Error| io_error(&self.results, source);
        crate::safe_fs::create_private_dir(&self.results).map_err(|e| fail(e.into()))?;
        let text = serde_json::to_vec(v).map_err(|e| fail(std::io::Error::other(e)))?;
        crate::safe_fs::write_atomic(&self.path(&v.sha), &text).map_err(fail)
    }

    fn run(&self, repo: &Repo, sha: &str) -> Result<Verdict, ForgeError> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(ForgeError::Parse {
                command: "localCi.command".into(),
                detail: "empty".into(),
            });
        };
        let scratch = tempfile::Builder::new()
            .prefix("sdlc-runner-ci-")
            .tempdir()
            .map_err(|e| io_error(Path::new("a temporary directory"), e))?;
        let tree = scratch.path().join("tree");
        let tree_text = tree.to_string_lossy().into_owned();
        repo.git_checked(&["worktree", "add", "--detach", "--quiet", &tree_text, sha])?;
        let ran = self.command_in(&tree, program, args).and_then(|cmd| {
            // Its group dies when it ends: a server it started does not outlive the test run.
            crate::process::output_within_budget(cmd, self.timeout, OUTPUT_BUDGET).map_err(
                |source| match crate::process::stopped(&source) {
                    Some(why) => ForgeError::Stopped {
                        command: format!("localCi.command `{}`", self.command_text()),
                        why,
                    },
                    None => ForgeError::Spawn {
                        program: format!("localCi.command `{}`", self.command_text()),
                        source,
                    },
                },
            )
        });
        // The worktree goes whatever the command did; a leftover is pruned by the next run.
        let _ = repo.git_checked(&["worktree", "remove", "--force", &tree_text]);
        let _ = repo.git_checked(&["worktree", "prune"]);
        let ran = ran?;
        if let Some(out) = &ran {
            self.sandbox_started(out)?;
        }
        Ok(match ran {
            Some(out) => Verdict {
                sha: sha.to_string(),
                passed: out.status.success(),
                exit: out.status.code(),
                timed_out: false,
                excerpt: excerpt(&out.stdout, &out.stderr),
            },
            None => Verdict {
                sha: sha.to_string(),
                passed: false,
                exit: None,
                timed_out: true,
                excerpt: String::new(),
            },
        })
    }
}

impl LocalCi {
    /// `Err` when the sandbox itself could not start (bubblewrap's own error, a container
    /// that could not be made): no verdict on the commit, which never ran, and the
    /// environment's failure, with its fix.
    fn sandbox_started(&self, out: &std::process::Output) -> Result<(), ForgeError> {
        let said = sandbox::failed_to_start(
            self.sandbox.kind,
            out.status.code(),
            out.stdout.len() as u64,
            &String::from_utf8_lossy(&out.stderr),
        );
        match said {
            None => Ok(()),
            Some(said) => Err(ForgeError::Spawn {
                program: format!("localCi.command `{}` in its sandbox", self.command_text()),
                // Permission: the environment's, so no issue is blamed and the run halts.
                source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, said),
            }),
        }
    }

    /// The command to start in the scratch `tree`: inside the sandbox when there is one,
    /// with the sandbox's environment only (the runner's tokens stay out).
    fn command_in(
        &self,
        tree: &Path,
        program: &str,
        args: &[String],
    ) -> Result<ChildSpec, ForgeError> {
        let plain = || {
            let mut cmd = ChildSpec::new(program);
            cmd.args(args).current_dir(tree);
            cmd
        };
        if self.sandbox.kind == SandboxKind::None {
            return Ok(plain());
        }
        // The runner's directory of the clone the scratch tree belongs to: a worker's clone
        // has its own.
        let runner_dir = RunnerDir::locate(tree).map_err(|e| ForgeError::Spawn {
            program: format!("localCi.command `{}`", self.command_text()),
            source: std::io::Error::other(e.to_string()),
        })?;
        let wrapped = sandbox::wrap_ci(
            &self.sandbox,
            tree,
            &runner_dir.dir,
            program,
            args,
            &sandbox::runner_var,
        )
        .map_err(|e| ForgeError::Spawn {
            program: format!("localCi.command `{}` in its sandbox", self.command_text()),
            // As for a sandbox that cannot start: the environment's, and the run halts.
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string()),
        })?;
        Ok(match wrapped {
            Some(w) => {
                let mut cmd = ChildSpec::new(&w.program);
                cmd.args(&w.args).env_clear().envs(w.env).current_dir(tree);
                cmd
            }
            None => plain(),
        })
    }
}

fn excerpt(stdout: &[u8], stderr: &[u8]) -> String {
    let mut all = String::from_utf8_lossy(stdout).into_owned();
    all.push_str(&String::from_utf8_lossy(stderr));
    let mut start = all.len().saturating_sub(EXCERPT_BYTES);
    while !all.is_char_boundary(start) {
        start += 1;
    }
    // Start at a line boundary, as a person would read it.
    let tail = &all[start..];
    let tail = match (start > 0, tail.find('\n')) {
        (true, Some(i)) => &tail[i + 1..],
        _ => tail,
    };
    crate::redact::redact(tail.trim_end())
}

fn commit_of(repo: &Repo, branch: &str) -> Result<String, ForgeError> {
    let out = repo.git_checked(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{branch}^{{commit}}"),
    ])?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn io_error(path: &Path, source: std::io::Error) -> ForgeError {
    ForgeError::Command {
        command: format!("local CI ({})", path.display()),
        ended: CallEnd::Otherwise,
        stderr: source.to_string(),
        hint: "check the permissions of the runner's state directory and the temp directory",
        kind: crate::call_failure::CallFailureKind::of_io(&source),
    }
}
