//! The one way the runner runs `gh`: in the project's clone (so gh resolves the repository
//! from its remote), never prompting or paging, within one time limit and the caller's stop
//! scope; and `gh api --include` read back as GitHub's HTTP answer, conditional where an
//! earlier answer can be asked about again ([`crate::call_failure::Conditional`]).
//!
//! What a failure means is the caller's to say (the tracker and the forge name it in their
//! own errors); what happened is told here once ([`GhError`]).

use crate::call_failure::{CallFailureKind, Conditional, HttpAnswer};
use crate::process::{run_captured, ChildSpec, Stopped};
use std::io;
use std::path::Path;
use std::time::Duration;

/// The longest one `gh` call may take by default: a dead network must not hang an unattended
/// run.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// `gh` as the runner runs it: which program, in which clone.
#[derive(Debug, Clone, Copy)]
pub struct Gh<'a> {
    /// The program (`gh`, or the path the config names).
    pub program: &'a Path,
    /// The project's clone.
    pub dir: &'a Path,
    /// The limit of one call ([`TIMEOUT`], or less where a person waits for the answer).
    pub timeout: Duration,
}

/// What gh printed, whatever its exit code.
#[derive(Debug)]
pub struct Printed {
    /// How it ended.
    pub status: std::process::ExitStatus,
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub stderr: String,
}

/// GitHub's answer to `gh api --include`: the answer, the arguments gh was given, and what
/// it printed on its standard error (for the caller's message).
#[derive(Debug)]
pub struct Answered {
    /// The HTTP answer, whatever its status.
    pub answer: HttpAnswer,
    /// gh's arguments.
    pub args: Vec<String>,
    /// gh's standard error.
    pub stderr: String,
    /// How gh ended.
    pub status: std::process::ExitStatus,
}

/// A gh call that gave nothing to read.
#[derive(Debug, thiserror::Error)]
pub enum GhError {
    /// A stop of the runner's, or the step's deadline, ended it.
    #[error("`{command}`: {why}")]
    Stopped {
        /// The command, as a person would type it.
        command: String,
        /// Which stop.
        why: Stopped,
    },
    /// It could not be started.
    #[error("cannot run `{command}` ({source}); install the GitHub CLI or set the path to gh in the config")]
    CannotStart {
        /// The command.
        command: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// It gave no answer within its time limit.
    #[error("`{command}`: no answer within {}s; check the network and `gh auth status`", .limit.as_secs())]
    TimedOut {
        /// The command.
        command: String,
        /// The limit it was given.
        limit: Duration,
    },
    /// It ended without printing an HTTP answer (gh's own failure: no network, no login).
    #[error("`{command}` failed ({}): {stderr}", exit_text(*.code))]
    NoAnswer {
        /// The command.
        command: String,
        /// Its exit code.
        code: Option<i32>,
        /// What it printed on its standard error.
        stderr: String,
        /// What that means, from gh's words.
        kind: CallFailureKind,
    },
}

impl GhError {
    /// What the failure means, for the machine.
    pub fn kind(&self) -> CallFailureKind {
        match self {
            GhError::Stopped { why, .. } => CallFailureKind::of_stop(*why),
            GhError::CannotStart { source, .. } => CallFailureKind::of_io(source),
            GhError::TimedOut { .. } => CallFailureKind::TimedOut,
            GhError::NoAnswer { kind, .. } => *kind,
        }
    }

    /// The command that failed.
    pub fn command(&self) -> &str {
        match self {
            GhError::Stopped { command, .. }
            | GhError::CannotStart { command, .. }
            | GhError::TimedOut { command, .. }
            | GhError::NoAnswer { command, .. } => command,
        }
    }
}

/// How a gh call ended, in words: `exit code N`, or `killed by a signal`.
pub fn exit_text(code: Option<i32>) -> String {
    code.map_or_else(|| "killed by a signal".into(), |c| format!("exit code {c}"))
}

/// `gh` as the runner starts it, in `dir`, for every call (the API, `--version`, `auth
/// status`):
/// - never waiting for a pager or a prompt, and printing no colour codes: the runner is
///   unattended and reads what gh prints;
/// - without the table of every character's width that gh's terminal library builds as it
///   starts unless `TCELL_MINIMIZE` is set: no call of the runner's draws a screen, and the
///   table cost about 20 ms of CPU on every call, half of what a call spends.
pub fn unattended(program: &Path, dir: &Path) -> ChildSpec {
    let mut cmd = ChildSpec::new(program);
    cmd.current_dir(dir)
        .env("GH_PAGER", "cat")
        .env("GH_PROMPT_DISABLED", "1")
        .env("NO_COLOR", "1")
        .env("TCELL_MINIMIZE", "1");
    cmd
}

impl Gh<'_> {
    /// Runs `gh args`, `stdin` on its standard input (a request's body for `--input -`: never
    /// an argument, whose size the kernel limits); what it printed, whatever its exit code.
    pub fn run(&self, args: &[&str], stdin: Option<Vec<u8>>) -> Result<Printed, GhError> {
        let mut cmd = unattended(self.program, self.dir);
        cmd.args(args);
        let out = run_captured(cmd, stdin, self.timeout, None).map_err(|source| {
            let command = self.command_text(args);
            match crate::process::stopped(&source) {
                Some(why) => GhError::Stopped { command, why },
                None => GhError::CannotStart { command, source },
            }
        })?;
        match out.status {
            Some(status) if !out.timed_out => Ok(Printed {
                status,
                stdout: out.stdout.into_bytes(),
                stderr: out.stderr,
            }),
            _ => Err(GhError::TimedOut {
                command: self.command_text(args),
                limit: self.timeout,
            }),
        }
    }

    /// `gh api --include [-X method] <endpoint> [--input -]` with `body` as the request's
    /// JSON: GitHub's answer whatever its status (a caller may accept a 404 or a 422), or
    /// [`GhError::NoAnswer`] when gh got none (kinded from what gh printed).
    pub fn api(
        &self,
        method: &str,
        endpoint: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Answered, GhError> {
        let conditional = Conditional::for_call(method, self.dir, endpoint);
        let mut args = crate::call_failure::gh_api_args(method, endpoint, body.is_some());
        args.extend(conditional.args());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.run(&argv, body.map(|b| b.to_string().into_bytes()))?;
        match HttpAnswer::parse(&out.stdout) {
            Some(mut answer) => {
                conditional.settle(&mut answer);
                Ok(Answered {
                    answer,
                    args,
                    stderr: out.stderr,
                    status: out.status,
                })
            }
            None => Err(self.no_answer(&argv, out)),
        }
    }

    /// The failure of a call that printed no HTTP answer.
    pub fn no_answer(&self, args: &[&str], out: Printed) -> GhError {
        let stderr = crate::redact::redact(out.stderr.trim());
        GhError::NoAnswer {
            command: self.command_text(args),
            code: out.status.code(),
            kind: CallFailureKind::of_gh(&stderr),
            stderr: crate::notify::tail(&stderr, 2000),
        }
    }

    /// The command as a person would type it, for messages: an argument with a space or a
    /// quote is quoted as a shell would need it.
    pub fn command_text(&self, args: &[&str]) -> String {
        let mut s = self.program.display().to_string();
        for a in args {
            s.push(' ');
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                s.push('\'');
                s.push_str(&a.replace('\'', "'\\''"));
                s.push('\'');
            } else {
                s.push_str(a);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_gh(dir: &Path, body: &str) -> std::path::PathBuf {
        let path = dir.join("gh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn gh_runs_unprompted_in_the_clone_and_its_answer_is_read() {
        let dir = tempfile::tempdir().expect("dir");
        let gh = fake_gh(
            dir.path(),
            "printf 'HTTP/2.0 201 Created\\r\\nEtag: \"e1\"\\r\\n\\r\\n{\"pwd\":\"%s\",\"prompt\":\"%s\",\"pager\":\"%s\",\"tcell\":\"%s\",\"args\":\"%s\"}' \"$PWD\" \"$GH_PROMPT_DISABLED\" \"$GH_PAGER\" \"$TCELL_MINIMIZE\" \"$*\"",
        );
        let g = Gh {
            program: &gh,
            dir: dir.path(),
            timeout: TIMEOUT,
        };
        let got = g
            .api("POST", "repos/{owner}/{repo}/labels", None)
            .expect("answer");
        assert_eq!(got.answer.status, 201);
        let v: serde_json::Value = serde_json::from_slice(&got.answer.body).expect("json");
        assert_eq!(v["prompt"], "1");
        assert_eq!(v["pager"], "cat");
        // gh builds no character-width table it would never use.
        assert_eq!(v["tcell"], "1");
        let pwd = std::fs::canonicalize(dir.path()).expect("canon");
        assert_eq!(
            std::path::Path::new(v["pwd"].as_str().unwrap_or_default()),
            pwd
        );
        assert!(
            v["args"]
                .as_str()
                .unwrap_or_default()
                .starts_with("api --include"),
            "{v}"
        );
    }

    #[test]
    fn a_gh_that_prints_no_answer_is_kinded_from_its_words_and_named() {
        let dir = tempfile::tempdir().expect("dir");
        let gh = fake_gh(
            dir.path(),
            "echo 'error connecting to api.github.com' >&2; exit 1",
        );
        let g = Gh {
            program: &gh,
            dir: dir.path(),
            timeout: TIMEOUT,
        };
        let e = g
            .api("GET", "repos/{owner}/{repo}/issues?state=open", None)
            .unwrap_err();
        assert_eq!(e.kind(), CallFailureKind::Network, "{e}");
        assert!(e.to_string().contains("exit code 1"), "{e}");
        assert!(e.command().contains("api --include"), "{e}");
        let missing = Gh {
            program: Path::new("/nonexistent/gh"),
            dir: dir.path(),
            timeout: TIMEOUT,
        };
        let e = missing.run(&["--version"], None).unwrap_err();
        assert!(matches!(e, GhError::CannotStart { .. }), "{e}");
        assert!(e.to_string().contains("install the GitHub CLI"), "{e}");
    }

    #[test]
    fn the_command_is_shown_as_a_person_would_type_it() {
        let g = Gh {
            program: Path::new("gh"),
            dir: Path::new("."),
            timeout: TIMEOUT,
        };
        assert_eq!(
            g.command_text(&["api", "-f", "query=a b", "it's"]),
            "gh api -f 'query=a b' 'it'\\''s'"
        );
    }
}
