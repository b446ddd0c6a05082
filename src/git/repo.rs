//! Plain git facts of the project and the git commands the runner makes: branches, commits
//! ahead, pushed, merged, spec files, auto-commit, checkout, push and merge. `answers` keeps
//! answers to ref-reading queries until something could change them.
//!
//! Every git call is an argument vector; branch names go in as full ref names
//! (`refs/heads/<b>`) so that no name can be read as an option.

pub(crate) mod answers;

use crate::artifacts;
use crate::call_failure::CallFailureKind;
use crate::ports::git::CallEnd;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

mod base;
mod changes;
mod error;
mod merge;
mod refs;
mod rescue;
mod specs;
mod status;
mod trust;
mod verified;
mod workspace;

/// How long a git answer or a fetch of origin is reused at most: what someone outside the
/// runner does to a clone or to origin is seen no later than that.
pub use answers::FRESH_FOR;
pub use base::{describe_base, BaseSource};
pub use rescue::RESCUE_REFS;

pub use crate::ports::git::GitError as RepoError;
use error::hint_for;
pub use specs::{leading_issue, SPEC_FILES};
pub use verified::{BranchOnOrigin, BuiltMerge};

/// How the subject of every merge commit the runner makes begins (`Merge issue #N: title`).
pub const MERGE_SUBJECT: &str = "Merge issue #";

/// A git work tree the runner drives with the `git` CLI (argument vectors, time-limited).
#[derive(Debug, Clone)]
pub struct Repo {
    /// The work tree's top level.
    pub path: PathBuf,
    /// The base branch issues merge into: what [`Repo::settle_base`] settled (the config's
    /// `baseBranch`, else origin's default branch); until then the clone's guess (its
    /// `origin/HEAD`, else `main`, else `master`).
    pub main: String,
    /// Whether the clone has an `origin` remote, asked once (remotes do not change under a
    /// run, and asking costs a git spawn per fetch).
    has_origin: std::sync::OnceLock<bool>,
    /// The git directory of this work tree (where its index and HEAD locks live) and the
    /// common one (where shared refs live; the same but in a linked work tree), asked once.
    git_dirs: std::sync::OnceLock<Option<(PathBuf, PathBuf)>>,
    /// Directories inside the work tree that belong to the runner's tracker (the local
    /// tracker's issue files), relative and ending in `/`: never dirt, never committed.
    own_dirs: Vec<String>,
    /// How the tracker names issues: a feature branch starts with `<id>-` (`12-`, `ENG-12-`).
    refs: crate::config::IssueRefs,
    /// The hooks and configuration the operator set up, recorded when the session started,
    /// with the `-c` options that pin them on every git call (`git::trust`).
    trust: std::sync::Arc<std::sync::OnceLock<(crate::git::trust::Trusted, Vec<String>)>>,
    /// The configuration as the last check after an agent's step found it.
    trust_seen: std::sync::Arc<std::sync::Mutex<crate::git::trust::Seen>>,
}

use crate::git::command::GIT_TIMEOUT;

impl Repo {
    /// Opens the work tree that contains `path`; `NotARepo` when there is none.
    pub fn open(path: &Path) -> Result<Repo, RepoError> {
        let out = crate::git::command::output(path, &["rev-parse", "--show-toplevel"]);
        let out = match out {
            Ok(o) => o,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !path.is_dir() => {
                return Err(RepoError::NotARepo {
                    path: path.to_path_buf(),
                    detail: "the directory does not exist".to_string(),
                })
            }
            Err(source) => {
                return Err(RepoError::Spawn {
                    program: "git".to_string(),
                    source,
                })
            }
        };
        if !out.status.success() {
            return Err(RepoError::NotARepo {
                path: path.to_path_buf(),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        let mut repo = Repo {
            path: path.to_path_buf(),
            main: String::new(),
            has_origin: std::sync::OnceLock::new(),
            git_dirs: std::sync::OnceLock::new(),
            own_dirs: Vec::new(),
            refs: crate::config::IssueRefs::default(),
            trust: Default::default(),
            trust_seen: Default::default(),
        };
        repo.main = repo.detect_main()?;
        Ok(repo)
    }

    /// Declares `dir` the tracker's: when it lies inside the work tree, its files (untracked,
    /// or tracked and rewritten by the runner when it closes or escalates an issue) never make
    /// the tree dirty and are never staged by an auto-commit. A directory outside the work
    /// tree changes nothing.
    pub fn own_dir(&mut self, dir: &Path) {
        let (Ok(top), Ok(dir)) = (self.path.canonicalize(), dir.canonicalize()) else {
            return;
        };
        if let Ok(relative) = dir.strip_prefix(&top) {
            if relative.as_os_str().is_empty() {
                return;
            }
            let mut prefix = relative.to_string_lossy().into_owned();
            prefix.push('/');
            self.own_dirs.push(prefix);
        }
    }

    /// Names issues' branches in the tracker's form (`ENG-12-<slug>` on Linear).
    pub fn name_issues(&mut self, refs: crate::config::IssueRefs) {
        self.refs = refs;
    }

    /// The runner's own file: an artifact in `.claude/` or a file of the tracker.
    fn is_own(&self, path: &str) -> bool {
        artifacts::is_runner_artifact(path)
            || self.own_dirs.iter().any(|d| path.starts_with(d.as_str()))
    }

    fn detect_main(&self) -> Result<String, RepoError> {
        let out = self.git(&["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"])?;
        if out.status.success() {
            let text = stdout(&out);
            if let Some(name) = text.strip_prefix("refs/remotes/origin/") {
                return Ok(name.to_string());
            }
        }
        for candidate in ["main", "master"] {
            if self.ref_exists(&format!("refs/heads/{candidate}"))?
                || self.ref_exists(&format!("refs/remotes/origin/{candidate}"))?
            {
                return Ok(candidate.to_string());
            }
        }
        Ok("main".to_string())
    }

    fn has_origin(&self) -> Result<bool, RepoError> {
        if let Some(known) = self.has_origin.get() {
            return Ok(*known);
        }
        let found = self.git_ok(&["remote"])?.lines().any(|r| r == "origin");
        Ok(*self.has_origin.get_or_init(|| found))
    }

    fn git(&self, args: &[&str]) -> Result<Output, RepoError> {
        if answers::is_query(args) {
            if let Some((git_dir, common_dir)) = self.git_dirs() {
                return answers::answer(
                    &self.path,
                    args,
                    || answers::RefStamp::of(git_dir, common_dir),
                    || self.run_git(args),
                );
            }
        }
        if answers::moves_no_ref(args) {
            return answers::keeping_answers(|| self.run_git(args));
        }
        self.run_git(args)
    }

    /// The runner's directory of this clone, under the common git directory this repo asked
    /// git for once (the ref stamps ask it too), so a step's look spawns no git for it.
    pub fn runner_dir(
        &self,
    ) -> Result<crate::runner_dir::RunnerDir, crate::runner_dir::RunnerDirError> {
        match self.git_dirs() {
            Some((_, common)) => Ok(crate::runner_dir::RunnerDir::in_git_dir(common)),
            None => crate::runner_dir::RunnerDir::locate(&self.path),
        }
    }

    fn git_dirs(&self) -> Option<&(PathBuf, PathBuf)> {
        self.git_dirs
            .get_or_init(|| {
                let out = self
                    .run_git(&["rev-parse", "--absolute-git-dir", "--git-common-dir"])
                    .ok()
                    .filter(|o| o.status.success())?;
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                let mut lines = text.lines();
                let git_dir = PathBuf::from(lines.next()?.trim());
                let common = PathBuf::from(lines.next()?.trim());
                // Printed relative to the work tree unless it is elsewhere.
                Some((git_dir, self.path.join(common)))
            })
            .as_ref()
    }

    fn run_git(&self, args: &[&str]) -> Result<Output, RepoError> {
        crate::failpoint::point("git: before");
        // A fetch or push over a dead network must not hang an unattended run.
        let pinned = crate::git::trust::Trusted::pinned(self.pins(), args);
        let out = crate::git::command::within(&self.path, &pinned);
        crate::failpoint::point("git: after");
        self.answered(args, out, "check the network and the remote")
    }

    /// What a git command started by the one git runner answered: its output, or why there
    /// is none (stopped by the run's shutdown, not started, or no answer within
    /// [`GIT_TIMEOUT`], with `hint` for that).
    pub(super) fn answered(
        &self,
        args: &[&str],
        out: std::io::Result<Option<Output>>,
        hint: &'static str,
    ) -> Result<Output, RepoError> {
        let command = || format!("git {} (in {})", args.join(" "), self.path.display());
        out.map_err(|source| match crate::process::stopped(&source) {
            Some(why) => RepoError::Stopped {
                command: command(),
                why,
            },
            None => RepoError::Spawn {
                program: "git".to_string(),
                source,
            },
        })?
        .ok_or_else(|| RepoError::Command {
            command: command(),
            ended: CallEnd::Otherwise,
            stderr: format!("no answer within {} s; stopped", GIT_TIMEOUT.as_secs()),
            hint,
            kind: CallFailureKind::TimedOut,
        })
    }

    /// `git ARGS` with `env` added (a commit's dates), checked as [`Repo::git_checked`]; never
    /// a query whose answer is kept.
    fn git_ok_with(&self, args: &[&str], env: &[(&str, &OsStr)]) -> Result<String, RepoError> {
        crate::failpoint::point("git: before");
        let pinned = crate::git::trust::Trusted::pinned(self.pins(), args);
        let out = crate::git::command::run(&self.path, &pinned, env, GIT_TIMEOUT);
        crate::failpoint::point("git: after");
        let out = self.answered(args, out, "check the network and the remote")?;
        if !out.status.success() {
            return Err(self.failed(args, &out));
        }
        Ok(stdout(&out))
    }

    fn git_ok(&self, args: &[&str]) -> Result<String, RepoError> {
        self.git_checked(args).map(|out| stdout(&out))
    }

    /// `git ARGS` in the work tree; a failure is classified from what git printed (the
    /// local forge and its CI read git through this too).
    pub(crate) fn git_checked(&self, args: &[&str]) -> Result<Output, RepoError> {
        let out = self.git(args)?;
        if !out.status.success() {
            return Err(self.failed(args, &out));
        }
        Ok(out)
    }

    fn failed(&self, args: &[&str], out: &Output) -> RepoError {
        // Hooks print to stdout as well; the kind reads both.
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let kind = CallFailureKind::of_git(&format!(
            "{stderr}\n{}",
            String::from_utf8_lossy(&out.stdout)
        ));
        RepoError::Command {
            command: format!("git {} (in {})", args.join(" "), self.path.display()),
            ended: CallEnd::of_exit(out.status.code()),
            stderr,
            hint: hint_for(kind),
            kind,
        }
    }

    /// The ref that stands for main in comparisons: origin's copy when there is one (it is
    /// what PRs merge into), else the local branch.
    fn main_ref(&self) -> Result<Option<String>, RepoError> {
        for r in [
            format!("refs/remotes/origin/{}", self.main),
            format!("refs/heads/{}", self.main),
        ] {
            if self.ref_exists(&r)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// No staged, unstaged or untracked changes. Excluded files never show; the runner's own
    /// artifacts are also skipped by exact path in case a project still tracks them.
    pub fn is_clean(&self) -> Result<bool, RepoError> {
        Ok(self.dirty_paths()?.is_empty())
    }

    fn dirty_paths(&self) -> Result<Vec<String>, RepoError> {
        Ok(self
            .foreign_entries()?
            .into_iter()
            .map(|(_, path)| path)
            .collect())
    }

    /// `(XY code, path)` of every change `git status` shows that is not the runner's own.
    /// The branch it prints on the side is kept as the answer to "which branch is checked
    /// out" (see `answers`), which the checks ask next.
    fn foreign_entries(&self) -> Result<Vec<(String, String)>, RepoError> {
        // -uall lists files inside untracked directories, so `.claude/` is never one opaque
        // entry (docs/design-notes.md); -z keeps unusual names intact; the branch header
        // without the ahead/behind counts, a walk of history nobody reads.
        let args = [
            "status",
            "--porcelain=v2",
            "--branch",
            "--no-ahead-behind",
            "-z",
            "--untracked-files=all",
        ];
        let since = self.ref_stamp().map(answers::Moment::now);
        let out = self.git(&args)?;
        if !out.status.success() {
            return Err(self.failed(&args, &out));
        }
        let status = status::parse(&String::from_utf8_lossy(&out.stdout));
        if let (Some(since), Some(now), true) = (since, self.ref_stamp(), status.branch_known) {
            answers::learn(
                &self.path,
                &HEAD_BRANCH,
                &head_answer(status.branch.as_deref()),
                since,
                &now,
            );
        }
        // The runner's own files (and any copy of them) are never the issue's mess.
        Ok(status
            .entries
            .into_iter()
            .filter(|(_, path)| !self.is_own(path))
            .collect())
    }

    /// What the ref files look like now, for `answers`; `None` when the git directory is
    /// unknown.
    fn ref_stamp(&self) -> Option<answers::RefStamp> {
        self.git_dirs()
            .map(|(git_dir, common_dir)| answers::RefStamp::of(git_dir, common_dir))
    }

    /// When this clone has no branch of `issue` but origin has one (another runner pushed it
    /// before it stopped), creates the local branch from origin's, so that the work continues
    /// on top of what was pushed instead of beside it. Returns the branch it created.
    pub fn adopt_pushed_branch(&self, issue: u32) -> Result<Option<String>, RepoError> {
        if self.feature_branch(issue)?.is_some() {
            return Ok(None);
        }
        self.fetch()?;
        let pattern = format!("refs/remotes/origin/{}*", self.refs.branch_prefix(issue));
        let text = self.git_ok(&["for-each-ref", "--format=%(refname:short)", &pattern])?;
        let Some(remote) = text.lines().map(str::trim).filter(|l| !l.is_empty()).min() else {
            return Ok(None);
        };
        let Some(name) = remote.strip_prefix("origin/") else {
            return Ok(None);
        };
        self.git_ok(&["branch", "--quiet", "--track", name, remote])?;
        Ok(Some(name.to_string()))
    }

    /// The local branch named `<issue>-<slug>` (`<TEAM>-<issue>-<slug>` on Linear). With
    /// several, the checked-out one wins, then the first by name.
    pub fn feature_branch(&self, issue: u32) -> Result<Option<String>, RepoError> {
        let prefix = self.refs.branch_prefix(issue);
        let mut matches: Vec<String> = self
            .local_branches()?
            .into_iter()
            .filter(|b| b.starts_with(&prefix) && b.len() > prefix.len())
            .collect();
        matches.sort();
        if let Some(current) = self.current_branch()? {
            if matches.contains(&current) {
                return Ok(Some(current));
            }
        }
        Ok(matches.into_iter().next())
    }

    /// Commits on `branch` that are on neither the local nor origin's main.
    pub fn commits_ahead_of_main(&self, branch: &str) -> Result<u32, RepoError> {
        let head = format!("refs/heads/{branch}");
        let mut args = vec!["rev-list".to_string(), "--count".to_string(), head];
        for r in [
            format!("refs/heads/{}", self.main),
            format!("refs/remotes/origin/{}", self.main),
        ] {
            if self.ref_exists(&r)? {
                args.push(format!("^{r}"));
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        parse_count(&self.git_ok(&args)?, &args)
    }

    /// Whether `origin/<branch>` exists. Reads the remote-tracking ref: call [`Repo::fetch`]
    /// first for an up-to-date answer.
    pub fn branch_pushed(&self, branch: &str) -> Result<bool, RepoError> {
        self.ref_exists(&format!("refs/remotes/origin/{branch}"))
    }

    /// Commits on `branch` that no ref of origin holds (so a branch never pushed counts all
    /// its commits that are not on origin's main either).
    pub fn unpushed_commits(&self, branch: &str) -> Result<u32, RepoError> {
        let head = format!("refs/heads/{branch}");
        let has_remote = self.has_origin()?;
        let args: Vec<&str> = if has_remote {
            vec!["rev-list", "--count", &head, "--not", "--remotes=origin"]
        } else {
            vec!["rev-list", "--count", &head]
        };
        parse_count(&self.git_ok(&args)?, &args)
    }

    /// The branch head is an ancestor of origin's main (local main without a remote). Note a
    /// branch with no commits of its own trivially is; see [`Repo::branch_has_own_work`].
    pub fn merged_into_main(&self, branch: &str) -> Result<bool, RepoError> {
        let Some(main) = self.main_ref()? else {
            return Ok(false);
        };
        self.is_ancestor(&format!("refs/heads/{branch}"), &main)
    }

    /// Whether commit `older` is an ancestor of (or is) `newer`.
    fn is_ancestor(&self, older: &str, newer: &str) -> Result<bool, RepoError> {
        let args = ["merge-base", "--is-ancestor", older, newer];
        let out = self.git(&args)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(self.failed(&args, &out)),
        }
    }

    /// Whether the branch ever moved past the commit it was created at (from its reflog), so
    /// that a freshly created branch is not mistaken for a merged one. Without a reflog (e.g.
    /// `core.logAllRefUpdates=false`) it answers true: ancestry alone then decides.
    pub fn branch_has_own_work(&self, branch: &str) -> Result<bool, RepoError> {
        let head = format!("refs/heads/{branch}");
        let out = self.git(&["log", "-g", "--format=%H", &head, "--"])?;
        let text = stdout(&out);
        let hashes: Vec<&str> = text.lines().collect();
        match (out.status.success(), hashes.first(), hashes.last()) {
            (true, Some(newest), Some(created)) => Ok(newest != created),
            _ => Ok(true),
        }
    }
}

/// `symbolic-ref --quiet --short HEAD`: which branch is checked out.
const HEAD_BRANCH: [&str; 4] = ["symbolic-ref", "--quiet", "--short", "HEAD"];

/// What `symbolic-ref` of [`HEAD_BRANCH`] prints for `branch` (exit 1: detached).
fn head_answer(branch: Option<&str>) -> Output {
    use std::os::unix::process::ExitStatusExt;
    Output {
        status: std::process::ExitStatus::from_raw(if branch.is_some() { 0 } else { 1 << 8 }),
        stdout: branch
            .map(|b| format!("{b}\n").into_bytes())
            .unwrap_or_default(),
        stderr: Vec::new(),
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn parse_count(text: &str, args: &[&str]) -> Result<u32, RepoError> {
    text.trim().parse().map_err(|_| RepoError::Parse {
        command: format!("git {}", args.join(" ")),
        detail: format!("expected a count, got {text:?}"),
    })
}
