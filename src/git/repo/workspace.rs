//! The work tree: auto-commit, main checked out again, git's lock files (stale or left by a
//! killed git), changes that are not the runner's.

use super::{Repo, RepoError, MERGE_SUBJECT};
use crate::call_failure::CallFailureKind;
use crate::ports::git::CallEnd;
use std::path::{Path, PathBuf};

impl Repo {
    /// `git add -A` and commit when the tree is dirty. Never on main (docs/design-notes.md),
    /// and `--no-verify` because this saves work a failing hook must not lose. Never a
    /// conclusion of someone's unfinished merge, rebase, cherry-pick or revert: that is
    /// aborted, what the tree held kept on a rescue ref, and the error names the ref
    /// (`Rescued`). Never a file with conflict markers: refused, naming the files
    /// (`ConflictMarkers`), nothing staged.
    pub fn auto_commit(&self, message: &str) -> Result<bool, RepoError> {
        // A clean tree commits nothing, so it concludes nothing either.
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
        self.abort_unfinished(branch.as_deref().unwrap_or("detached-head"))?;
        let work = self.stage_work()?;
        // What stays staged is the listing less what was unstaged: nothing to commit when
        // it held only the runner's own files.
        if work.is_empty() {
            return Ok(false);
        }
        let marked = self.staged_markers(&work)?;
        if !marked.is_empty() {
            // Unstaged again: the files stay as they are in the tree, for a person or a repair.
            self.git_ok(&["reset", "--quiet"])?;
            return Err(RepoError::ConflictMarkers {
                what: "commit".to_string(),
                path: self.path.clone(),
                paths: marked,
            });
        }
        self.git_ok(&["commit", "--no-verify", "--quiet", "-m", message])?;
        Ok(true)
    }

    /// `git add -A`, the runner's own files unstaged again: the paths staged, the work.
    pub(super) fn stage_work(&self) -> Result<Vec<String>, RepoError> {
        // Runner artifacts are ignored through .git/info/exclude, so `add -A` leaves them out;
        // naming them in an exclude pathspec would make git refuse ("paths are ignored").
        self.git_ok(&["add", "-A"])?;
        let staged = self.git_ok(&["diff", "--cached", "--name-only", "-z"])?;
        let (artifacts, work): (Vec<&str>, Vec<&str>) = staged
            .split('\0')
            .filter(|p| !p.is_empty())
            .partition(|p| self.is_own(p));
        if !artifacts.is_empty() {
            let mut unstage = vec!["reset", "--quiet", "--"];
            unstage.extend(artifacts);
            self.git_ok(&unstage)?;
        }
        Ok(work.into_iter().map(str::to_string).collect())
    }

    /// The staged files among `work` whose added lines hold a conflict marker (git's own
    /// check, which honours `conflict-marker-size`), asked of git only when a file holds a
    /// marker at all.
    pub(super) fn staged_markers(&self, work: &[String]) -> Result<Vec<String>, RepoError> {
        if !work.iter().any(|p| holds_marker(&self.path.join(p))) {
            return Ok(Vec::new());
        }
        self.files_with_markers(&["--cached"], "")
    }

    /// startIssue (builtin): `branch` created at HEAD (main, as startCycle left it) and
    /// checked out; a branch of that name already there (a restarted cycle) is checked out
    /// as it stands; one only origin has (pushed before this cycle: a person's start, a
    /// runner's on another clone) is made locally from origin's, tracking it, and its head
    /// returned.
    pub fn start_branch(&self, branch: &str) -> Result<Option<String>, RepoError> {
        if self.ref_exists(&format!("refs/heads/{branch}"))? {
            self.git_ok(&["checkout", "--quiet", branch])?;
            return Ok(None);
        }
        // Origin had the branch before this cycle (as the last fetch, startCycle's, saw it):
        // its commits are the starting point, never pushed over.
        let remote = format!("refs/remotes/origin/{branch}");
        if let Some(head) = self.ref_commit(&remote)? {
            self.git_ok(&["checkout", "--quiet", "-b", branch, "--track", &remote])?;
            return Ok(Some(head));
        }
        self.git_ok(&["checkout", "--quiet", "-b", branch])?;
        Ok(None)
    }

    /// Checks out main and fast-forwards it to origin's copy when there is one.
    pub fn checkout_main(&self) -> Result<(), RepoError> {
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        // Asked before the checkout, which moves neither.
        let remote_commit = self.ref_commit(&remote_main)?;
        let local_commit = self.ref_commit(&format!("refs/heads/{}", self.main))?;
        let has_remote_main = remote_commit.is_some();
        if local_commit.is_some() {
            self.git_ok(&["checkout", "--quiet", &self.main])?;
        } else if has_remote_main {
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
                ended: CallEnd::Otherwise,
                stderr: format!("no branch {} locally or on origin", self.main),
                hint: "create the main branch or set origin's HEAD",
                kind: CallFailureKind::NotFound,
            });
        }
        // A main created from origin's, or already where origin's is, has nothing to
        // fast-forward.
        if has_remote_main && local_commit.is_some() && local_commit != remote_commit {
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

    /// Leaves the work tree on main, as the step after a cycle and startCycle want it: main
    /// checked out and fast-forwarded to origin's ([`Repo::checkout_main`]), or, where main is
    /// checked out in another worktree (git refuses a second checkout, and moving it would
    /// pull that tree's files from under it), a detached HEAD at origin's main (else at
    /// main), which is where a branch for the next issue starts. Returns what it did.
    pub fn park_on_main(&self) -> Result<String, RepoError> {
        if !self.main_checked_out_elsewhere()? {
            self.checkout_main()?;
            return Ok(format!("checked out {} and fast-forwarded it", self.main));
        }
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        let target = if self.ref_exists(&remote_main)? {
            remote_main
        } else {
            format!("refs/heads/{}", self.main)
        };
        self.git_ok(&["checkout", "--quiet", "--detach", &target])?;
        Ok(format!(
            "{} is checked out in another worktree: HEAD detached at {target}",
            self.main
        ))
    }

    /// Whether HEAD stands where the next issue's branch starts: main checked out, or, where
    /// main is checked out in another worktree, a detached HEAD at origin's main (or main).
    pub fn on_main(&self) -> Result<bool, RepoError> {
        match self.current_branch()? {
            Some(branch) => Ok(branch == self.main),
            None => {
                if !self.main_checked_out_elsewhere()? {
                    return Ok(false);
                }
                let head = self.ref_commit("HEAD")?;
                let main = match self.ref_commit(&format!("refs/remotes/origin/{}", self.main))? {
                    Some(commit) => Some(commit),
                    None => self.ref_commit(&format!("refs/heads/{}", self.main))?,
                };
                Ok(head.is_some() && head == main)
            }
        }
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
}

/// Files larger than this are not read for markers: they count as holding one, so that git's
/// own check decides (an auto-commit never holds a large file in memory).
const MARKER_SCAN_LIMIT: u64 = 4 << 20;

/// Whether the file may hold a line that starts like a conflict marker (`<<<<<<<`,
/// `>>>>>>>`); a file that cannot be read (deleted, a directory, a link) holds none.
fn holds_marker(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    if meta.len() > MARKER_SCAN_LIMIT {
        return true;
    }
    std::fs::read(path).is_ok_and(|bytes| {
        bytes
            .split(|b| *b == b'\n')
            .any(|line| line.starts_with(b"<<<<<<<") || line.starts_with(b">>>>>>>"))
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
        // A child another test of this process is starting holds a copy of every descriptor
        // between its fork and its exec (which closes them): held, for that moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while held_open(&lock) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!held_open(&lock), "{} is still open", lock.display());
    }
}
