//! Git probes of the project: preconditions and post-step checks (docs/lifecycle.md), the
//! idempotency checks before side-effecting steps, and how far a branch the journal does not
//! know got (docs/persistence.md), from what git and the forge show.
//!
//! Every git call is an argument vector; branch names go in as full ref names
//! (`refs/heads/<b>`) so that no name can be read as an option.

pub(crate) mod answers;

use crate::call_failure::{CallFailureKind, Kinded};
use crate::files;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The four files a spec directory must hold, non-empty.
pub const SPEC_FILES: [&str; 4] = [
    "requirements.md",
    "design.md",
    "tasks.md",
    "feature.gherkin",
];

/// Why a git (or forge CLI) call failed; every message names the command and what to check.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The project path is not inside a git work tree.
    #[error("{} is not a git repository (git said: {detail}); set projectPath to the root of a git clone", .path.display())]
    NotARepo {
        /// The path given as `projectPath`.
        path: PathBuf,
        /// What git said.
        detail: String,
    },
    /// The program could not be started.
    #[error("could not run {program}: {source}; is it installed and on PATH?")]
    Spawn {
        /// The program (`git`, `gh`, the CI command).
        program: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The command ran and failed.
    #[error("`{command}` failed (exit {}): {stderr}; {hint}", exit_text(.status))]
    Command {
        /// The command line, for the message.
        command: String,
        /// Its exit code; `None` when a signal ended it.
        status: Option<i32>,
        /// What it printed on stderr.
        stderr: String,
        /// What to check, in the reader's terms.
        hint: &'static str,
        /// Decided from `stderr` when the error is made.
        kind: CallFailureKind,
    },
    /// The runner stopped the command (a shutdown, or the step's time limit).
    #[error("`{command}` {why}")]
    Stopped {
        /// The command line, for the message.
        command: String,
        /// Why it was stopped.
        why: crate::process::Stopped,
    },
    /// The command succeeded but its output was not what the runner reads.
    #[error("could not read the output of `{command}`: {detail}")]
    Parse {
        /// The command line, for the message.
        command: String,
        /// What was wrong with the output.
        detail: String,
    },
    /// A commit was asked for on the default branch, which the runner never commits to.
    #[error("refusing to commit on {branch} in {}: check out the issue's feature branch first", .path.display())]
    CommitOnMain {
        /// The branch checked out.
        branch: String,
        /// The work tree.
        path: PathBuf,
    },
}

impl Kinded for RepoError {
    fn kind(&self) -> CallFailureKind {
        match self {
            RepoError::Command { kind, .. } => *kind,
            RepoError::Spawn { source, .. } => CallFailureKind::of_io(source),
            RepoError::Stopped {
                why: crate::process::Stopped::Shutdown,
                ..
            } => CallFailureKind::Cancelled,
            RepoError::Stopped {
                why: crate::process::Stopped::Deadline,
                ..
            } => CallFailureKind::StepDeadline,
            RepoError::NotARepo { .. } => CallFailureKind::NotFound,
            RepoError::Parse { .. } | RepoError::CommitOnMain { .. } => CallFailureKind::Other,
        }
    }
}

pub(crate) fn exit_text(status: &Option<i32>) -> String {
    match status {
        Some(c) => c.to_string(),
        None => "killed by a signal".to_string(),
    }
}

const GIT_HINT: &str = "inspect the repository with the same git command";

/// What to do about a failed git command of this kind.
fn hint_for(kind: CallFailureKind) -> &'static str {
    match kind {
        CallFailureKind::HookRejected => {
            "a git hook refused it (its words are above; the project's hooks are in .git/hooks or core.hooksPath)"
        }
        CallFailureKind::LockHeld => {
            "another git process holds a lock; if none is running, remove the stale lock file it names"
        }
        CallFailureKind::Permission => "check the permissions of the repository and the remote",
        _ => GIT_HINT,
    }
}

/// How the subject of every merge commit the runner makes begins (`Merge issue #N: title`).
pub const MERGE_SUBJECT: &str = "Merge issue #";

/// A git work tree the runner drives with the `git` CLI (argument vectors, time-limited).
#[derive(Debug, Clone)]
pub struct Repo {
    /// The work tree's top level.
    pub path: PathBuf,
    /// The default branch: origin's HEAD, else `main`, else `master`.
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
}

use crate::process::GIT_TIMEOUT;

impl Repo {
    /// Opens the work tree that contains `path`; `NotARepo` when there is none.
    pub fn open(path: &Path) -> Result<Repo, RepoError> {
        let out = crate::process::git_output(path, &["rev-parse", "--show-toplevel"]);
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

    /// The runner's own file: an artifact in `.claude/` or a file of the tracker.
    fn is_own(&self, path: &str) -> bool {
        files::is_runner_artifact(path)
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
        self.run_git(args)
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
        let out = crate::process::git_within(&self.path, args);
        crate::failpoint::point("git: after");
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
            status: None,
            stderr: format!("no answer within {} s; stopped", GIT_TIMEOUT.as_secs()),
            hint: "check the network and the remote",
            kind: CallFailureKind::TimedOut,
        })
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
            status: out.status.code(),
            stderr,
            hint: hint_for(kind),
            kind,
        }
    }

    fn ref_exists(&self, full_ref: &str) -> Result<bool, RepoError> {
        let out = self.git(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{full_ref}^{{commit}}"),
        ])?;
        Ok(out.status.success())
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

    /// `None` when HEAD is detached.
    pub fn current_branch(&self) -> Result<Option<String>, RepoError> {
        let out = self.git(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        match out.status.code() {
            Some(0) => Ok(Some(stdout(&out))),
            Some(1) => Ok(None),
            _ => Err(self.failed(&["symbolic-ref", "--quiet", "--short", "HEAD"], &out)),
        }
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
    fn foreign_entries(&self) -> Result<Vec<(String, String)>, RepoError> {
        // -uall lists files inside untracked directories, so `.claude/` is never one opaque
        // entry (docs/design-notes.md); -z keeps unusual names intact. The output is read
        // untrimmed: the first entry's code may start with a space (` M path`).
        let args = ["status", "--porcelain=v1", "-z", "--untracked-files=all"];
        let out = self.git(&args)?;
        if !out.status.success() {
            return Err(self.failed(&args, &out));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut found = Vec::new();
        let mut entries = text.split('\0');
        while let Some(entry) = entries.next() {
            if entry.len() < 4 || !entry.is_char_boundary(3) {
                continue;
            }
            let (code, path) = entry.split_at(3);
            if code.starts_with('R') || code.starts_with('C') {
                entries.next(); // the rename's source path
            }
            // The runner's own files (and any copy of them) are never the issue's mess.
            if !self.is_own(path) {
                found.push((code[..2].to_string(), path.to_string()));
            }
        }
        Ok(found)
    }

    fn local_branches(&self) -> Result<Vec<String>, RepoError> {
        let text = self.git_ok(&["for-each-ref", "--format=%(refname:short)", "refs/heads/"])?;
        Ok(text.lines().map(str::to_string).collect())
    }

    /// When this clone has no branch of `issue` but origin has one (another runner pushed it
    /// before it stopped), creates the local branch from origin's, so that the work continues
    /// on top of what was pushed instead of beside it. Returns the branch it created.
    pub fn adopt_pushed_branch(&self, issue: u32) -> Result<Option<String>, RepoError> {
        if self.feature_branch(issue)?.is_some() {
            return Ok(None);
        }
        self.fetch()?;
        let pattern = format!("refs/remotes/origin/{issue}-*");
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

    /// The local branch named `<issue>-<slug>`. With several, the checked-out one wins, then
    /// the first by name.
    pub fn feature_branch(&self, issue: u32) -> Result<Option<String>, RepoError> {
        let prefix = format!("{issue}-");
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

    /// `git add -A` and commit when the tree is dirty. Never on main (docs/design-notes.md),
    /// and `--no-verify` because this saves work a failing hook must not lose.
    pub fn auto_commit(&self, message: &str) -> Result<bool, RepoError> {
        if self.is_clean()? {
            return Ok(false);
        }
        let branch = self.current_branch()?;
        if branch.as_deref() == Some(self.main.as_str()) {
            return Err(RepoError::CommitOnMain {
                branch: self.main.clone(),
                path: self.path.clone(),
            });
        }
        // Runner artifacts are ignored through .git/info/exclude, so `add -A` leaves them out;
        // naming them in an exclude pathspec would make git refuse ("paths are ignored").
        self.git_ok(&["add", "-A"])?;
        let staged = self.git_ok(&["diff", "--cached", "--name-only", "-z"])?;
        let artifacts: Vec<&str> = staged
            .split('\0')
            .filter(|p| !p.is_empty() && self.is_own(p))
            .collect();
        if !artifacts.is_empty() {
            let mut unstage = vec!["reset", "--quiet", "--"];
            unstage.extend(artifacts);
            self.git_ok(&unstage)?;
        }
        if self.git(&["diff", "--cached", "--quiet"])?.status.success() {
            return Ok(false);
        }
        self.git_ok(&["commit", "--no-verify", "--quiet", "-m", message])?;
        Ok(true)
    }

    /// Checks out main and fast-forwards it to origin's copy when there is one.
    pub fn checkout_main(&self) -> Result<(), RepoError> {
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        if self.ref_exists(&format!("refs/heads/{}", self.main))? {
            self.git_ok(&["checkout", "--quiet", &self.main])?;
        } else if self.ref_exists(&remote_main)? {
            self.git_ok(&[
                "checkout",
                "--quiet",
                "-b",
                &self.main,
                "--track",
                &remote_main,
            ])?;
        } else {
            return Err(RepoError::Command {
                command: format!("git checkout {} (in {})", self.main, self.path.display()),
                status: None,
                stderr: format!("no branch {} locally or on origin", self.main),
                hint: "create the main branch or set origin's HEAD",
                kind: CallFailureKind::NotFound,
            });
        }
        if self.ref_exists(&remote_main)? {
            if let Err(e) = self.git_ok(&["merge", "--ff-only", "--quiet", &remote_main]) {
                // A runner killed between its merge commit and the push leaves main ahead of
                // origin with that merge only; once origin moved on (another worker merged),
                // main can no longer fast-forward. The merge is redone from the branch, so
                // dropping it loses nothing. Anything else on main is left alone.
                if !self.only_unpushed_runner_merges(&remote_main)? {
                    return Err(e);
                }
                self.git_ok(&["reset", "--quiet", "--keep", &remote_main])?;
            }
        }
        Ok(())
    }

    /// Main (checked out) holds commits origin's main lacks, and every one of them is a merge
    /// the runner made (its subject starts with [`MERGE_SUBJECT`]).
    fn only_unpushed_runner_merges(&self, remote_main: &str) -> Result<bool, RepoError> {
        let range = format!("{remote_main}..HEAD");
        let subjects = self.git_ok(&["log", "--first-parent", "--format=%s", &range])?;
        let subjects: Vec<&str> = subjects.lines().filter(|l| !l.is_empty()).collect();
        Ok(!subjects.is_empty() && subjects.iter().all(|s| s.starts_with(MERGE_SUBJECT)))
    }

    /// Git's lock files of this repository (index, HEAD, config, packed-refs and any ref's)
    /// older than `age`: a git process that died left them, and every git command that writes
    /// them fails while they exist. A lock is stale only when no process holds it open: git
    /// keeps its index, HEAD and config locks open for as long as it holds them.
    pub fn stale_locks(&self, age: std::time::Duration) -> Vec<PathBuf> {
        self.lock_files()
            .into_iter()
            .filter(|p| {
                std::fs::symlink_metadata(p)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|elapsed| elapsed >= age)
            })
            .filter(|p| !held_open(p))
            .collect()
    }

    /// The lock files a git killed with its runner left, whatever their age: those no process
    /// holds open, and only while no git process works in this clone (a ref's lock is closed
    /// before git renames it into place, so being open is no proof for those).
    pub fn locks_of_a_dead_git(&self) -> Vec<PathBuf> {
        if git_running_in(&self.path) {
            return Vec::new();
        }
        self.stale_locks(std::time::Duration::ZERO)
    }

    fn lock_files(&self) -> Vec<PathBuf> {
        let Some((git_dir, common_dir)) = self.git_dirs() else {
            return Vec::new();
        };
        let mut found: Vec<PathBuf> = ["index.lock", "HEAD.lock", "config.lock"]
            .iter()
            .map(|name| git_dir.join(name))
            .chain(std::iter::once(common_dir.join("packed-refs.lock")))
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .collect();
        // Ref names nest a few levels (refs/remotes/origin/<branch>); a deeper tree is not
        // walked further.
        let mut dirs = vec![(common_dir.join("refs"), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() && depth < 8 {
                    dirs.push((path, depth + 1));
                } else if kind.is_file() && path.extension().is_some_and(|e| e == "lock") {
                    found.push(path);
                }
            }
        }
        found
    }

    /// `git status --porcelain` lines that are not the runner's own files, for a message.
    pub fn foreign_changes(&self) -> Result<Vec<String>, RepoError> {
        Ok(self
            .foreign_entries()?
            .into_iter()
            .map(|(code, path)| format!("{code} {path}"))
            .collect())
    }

    /// Pushes `branch` to origin and sets it upstream. With a lease: a branch someone else
    /// moved on origin since our last fetch is not overwritten.
    pub fn push_branch(&self, branch: &str) -> Result<(), RepoError> {
        self.git_ok(&[
            "push",
            "--quiet",
            "--force-with-lease",
            "--set-upstream",
            "origin",
            &format!("refs/heads/{branch}:refs/heads/{branch}"),
        ])?;
        Ok(())
    }

    /// Merges `branch` (origin's copy) into main with a merge commit and pushes main; then
    /// deletes the branch on origin. A conflict aborts the merge and names the files. A push
    /// that lost a race (origin's main moved meanwhile) undoes the local merge and fails; the
    /// caller, holding the merge lease, decides whether that is contention to retry
    /// (`sdlc_machine::fleet::Contention`), so no retry loop hides here.
    pub fn merge_into_main(&self, branch: &str, message: &str) -> Result<(), RepoError> {
        self.merge_once(branch, message)
    }

    fn merge_once(&self, branch: &str, message: &str) -> Result<(), RepoError> {
        self.fetch()?;
        self.checkout_main()?;
        let before = self.git_ok(&["rev-parse", "HEAD"])?.trim().to_string();
        let theirs = format!("refs/remotes/origin/{branch}");
        let source = if self.ref_exists(&theirs)? {
            theirs
        } else {
            format!("refs/heads/{branch}")
        };
        let out = self.git(&["merge", "--no-ff", "--quiet", "-m", message, &source])?;
        if !out.status.success() {
            return Err(self.merge_failed(&["merge", "--no-ff", &source], &out));
        }
        if let Err(e) = self.git_ok(&["push", "--quiet", "origin", &self.main]) {
            // Origin moved (another runner merged first): undo the local merge so that the
            // next attempt starts from origin's main instead of a main that diverged from it.
            let _ = self.git(&["reset", "--quiet", "--keep", &before]);
            return Err(e);
        }
        // A branch that is gone already is fine: the merge is what counts.
        let _ = self.git(&["push", "--quiet", "origin", "--delete", branch]);
        Ok(())
    }

    /// The commit origin's main points at, as last fetched; `None` without one.
    pub fn origin_main(&self) -> Result<Option<String>, RepoError> {
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        if !self.ref_exists(&remote_main)? {
            return Ok(None);
        }
        Ok(Some(self.git_ok(&["rev-parse", &remote_main])?))
    }

    /// Before a merge: origin fetched, main refreshed to origin's, and origin's main merged
    /// into `branch` (checked out afterwards) and the branch pushed when it lacked it, so that
    /// the merge itself is a fast step on top of the newest main. Returns origin's main as it
    /// stood, for [`Repo::lost_race`]. A conflict aborts the update and fails with the text
    /// `merge conflict in: <files>` (the merge step's MERGE_CONFLICT repair takes it from
    /// there).
    pub fn bring_up_to_date(&self, branch: &str) -> Result<Option<String>, RepoError> {
        self.fetch()?;
        self.refresh_main_for(branch)?;
        let base = self.origin_main()?;
        self.checkout_finishing(branch)?;
        let Some(base_commit) = base.as_deref() else {
            return Ok(None);
        };
        if self.is_ancestor(base_commit, &format!("refs/heads/{branch}"))? {
            return Ok(base);
        }
        let message = format!("Merge {} into {branch}", self.main);
        let out = self.git(&["merge", "--no-ff", "--quiet", "-m", &message, base_commit])?;
        if !out.status.success() {
            return Err(self.merge_failed(&["merge", "--no-ff", base_commit], &out));
        }
        if self.branch_pushed(branch)? {
            self.push_branch(branch)?;
        }
        Ok(base)
    }

    /// `git checkout <target>`, finishing one a killed runner left half done: when git refuses
    /// because files in the way would be overwritten, and every one of them already holds
    /// the target's content or the start of it (what the interrupted checkout wrote, up to
    /// where it was cut), nothing can be lost and the checkout is forced. Anything else is refused as git refused it.
    fn checkout_finishing(&self, target: &str) -> Result<(), RepoError> {
        let out = self.git(&["checkout", "--quiet", target])?;
        if out.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let in_the_way: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with('\t'))
            .map(str::trim)
            .collect();
        let leftovers = !in_the_way.is_empty()
            && stderr.contains("would be overwritten by checkout")
            && in_the_way.iter().all(|path| {
                let ours = std::fs::read(self.path.join(path));
                let theirs = self.git(&["show", &format!("{target}:{path}")]);
                // A kill mid-write leaves a file short of its content (often empty): a
                // prefix of the target's holds nothing the target does not.
                matches!((ours, theirs), (Ok(a), Ok(b)) if b.status.success() && b.stdout.starts_with(&a))
            });
        if !leftovers {
            return Err(self.failed(&["checkout", "--quiet", target], &out));
        }
        self.git_ok(&["checkout", "--quiet", "--force", target])?;
        Ok(())
    }

    /// A merge that failed: the conflicting files named (`merge conflict in: …`), the merge
    /// aborted so that the tree is clean again.
    fn merge_failed(&self, args: &[&str], out: &Output) -> RepoError {
        let conflicts = self
            .git_ok(&["diff", "--name-only", "--diff-filter=U"])
            .unwrap_or_default();
        let _ = self.git(&["merge", "--abort"]);
        let mut err = self.failed(args, out);
        if let RepoError::Command { stderr, .. } = &mut err {
            if !conflicts.trim().is_empty() {
                *stderr = format!(
                    "merge conflict in: {}",
                    conflicts.lines().collect::<Vec<_>>().join(", ")
                );
            }
        }
        err
    }

    /// Main checked out and set to origin's. Commits on main that origin lacks are dropped
    /// when they lose nothing: merge commits (a merge of `branch` whose push lost a race,
    /// redone from the branch), or commits `branch` holds. Anything else stays and fails.
    fn refresh_main_for(&self, branch: &str) -> Result<(), RepoError> {
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        if !self.ref_exists(&remote_main)?
            || !self.ref_exists(&format!("refs/heads/{}", self.main))?
        {
            return self.checkout_main();
        }
        let range = format!("{remote_main}..refs/heads/{}", self.main);
        let head = format!("^refs/heads/{branch}");
        let own = self.git_ok(&["rev-list", "--no-merges", &range, &head])?;
        self.checkout_finishing(&self.main.clone())?;
        if own.trim().is_empty() {
            self.git_ok(&["reset", "--quiet", "--keep", &remote_main])?;
            return Ok(());
        }
        self.checkout_main()
    }

    /// After a failed merge: whether it lost a race, i.e. origin's main moved on from `base`
    /// (what [`Repo::bring_up_to_date`] saw) and `branch` is not in it. Fetches first. Without
    /// a `base` (no origin, or a forge that merges on its side) nothing can have raced.
    pub fn lost_race(&self, branch: &str, base: Option<&str>) -> Result<bool, RepoError> {
        self.fetch()?;
        let now = self.origin_main()?;
        // Without a main seen before the merge there is nothing to compare: no race.
        if base.is_none() || now.is_none() || now.as_deref() == base {
            return Ok(false);
        }
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        Ok(!self.is_ancestor(&format!("refs/heads/{branch}"), &remote_main)?)
    }

    /// Fetches origin (pruning deleted branches); a repository without `origin` is fine.
    pub fn fetch(&self) -> Result<(), RepoError> {
        if !self.has_origin()? {
            return Ok(());
        }
        self.git_ok(&["fetch", "--quiet", "--prune", "origin"])?;
        Ok(())
    }

    /// This issue's spec directory, never another issue's (docs/design-notes.md): the
    /// recorded feature name if it does not name a different issue, else `specs/<issue>-*`
    /// (the checked-out branch's slug first), else a directory whose requirements.md declares
    /// `**Issues**: #<issue>`.
    pub fn spec_dir(&self, issue: u32, feature: Option<&str>) -> Option<PathBuf> {
        let specs = self.path.join("specs");
        if let Some(f) = feature.filter(|f| !f.is_empty() && !f.contains('/') && *f != "..") {
            let other_issue = leading_issue(f).is_some_and(|n| n != issue);
            let dir = specs.join(f);
            if !other_issue && dir.is_dir() {
                return Some(dir);
            }
        }
        let mut dirs: Vec<String> = fs::read_dir(&specs)
            .ok()?
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        dirs.sort();
        if let Ok(Some(branch)) = self.current_branch() {
            if leading_issue(&branch) == Some(issue) && dirs.contains(&branch) {
                return Some(specs.join(branch));
            }
        }
        if let Some(d) = dirs.iter().find(|d| leading_issue(d) == Some(issue)) {
            return Some(specs.join(d));
        }
        dirs.iter()
            .filter(|d| leading_issue(d).is_none())
            .map(|d| specs.join(d))
            .find(|d| declares_issue(&d.join("requirements.md"), issue))
    }

    /// `Err` lists what is missing: `feature directory`, or the spec files that are absent or
    /// empty.
    pub fn spec_files_ok(&self, issue: u32, feature: Option<&str>) -> Result<(), Vec<String>> {
        let Some(dir) = self.spec_dir(issue, feature) else {
            return Err(vec!["feature directory".to_string()]);
        };
        let missing: Vec<String> = SPEC_FILES
            .iter()
            .filter(|f| fs::metadata(dir.join(f)).map_or(true, |m| !m.is_file() || m.len() == 0))
            .map(|f| f.to_string())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing)
        }
    }
}

/// Whether a git process runs with its working directory in `clone` (its work tree or its
/// git directory inside it). Where that cannot be read, one is taken to run.
fn git_running_in(clone: &Path) -> bool {
    let Ok(procs) = procfs::process::all_processes() else {
        return true;
    };
    let clone = clone.canonicalize().unwrap_or_else(|_| clone.to_path_buf());
    procs.flatten().any(|p| {
        let is_git = p.stat().is_ok_and(|stat| stat.comm.starts_with("git"));
        is_git && p.cwd().is_ok_and(|cwd| cwd.starts_with(&clone))
    })
}

/// Whether any process has `path` open (Linux: a look through `/proc/<pid>/fd`). Where that
/// cannot be read, every lock counts as held: nothing is taken for stale on a guess.
fn held_open(path: &Path) -> bool {
    let Ok(procs) = procfs::process::all_processes() else {
        return true;
    };
    procs.flatten().any(|p| {
        p.fd().is_ok_and(|fds| {
            fds.flatten().any(
                |fd| matches!(&fd.target, procfs::process::FDTarget::Path(target) if target == path),
            )
        })
    })
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

/// The issue number of a `<N>-<slug>` name.
pub fn leading_issue(name: &str) -> Option<u32> {
    let (num, rest) = name.split_once('-')?;
    if rest.is_empty() || num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse().ok()
}

fn declares_issue(requirements: &Path, issue: u32) -> bool {
    let Ok(text) = fs::read_to_string(requirements) else {
        return false;
    };
    let tag = format!("#{issue}");
    text.lines().filter(|l| l.contains("**Issue")).any(|l| {
        l.match_indices(&tag).any(|(i, _)| {
            !l[i + tag.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_counts_as_held_only_while_a_process_has_it_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = dir
            .path()
            .canonicalize()
            .expect("canonical")
            .join("index.lock");
        fs::write(&lock, "").expect("lock file");
        assert!(!held_open(&lock), "nobody has {} open", lock.display());
        let open = fs::File::open(&lock).expect("open");
        assert!(held_open(&lock), "this test holds {} open", lock.display());
        drop(open);
        assert!(!held_open(&lock));
    }
}
