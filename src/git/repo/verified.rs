//! The verified commit in git: where origin's branch stands against the commit CI passed, and
//! the merge of exactly that commit into origin's main, built without checking main out (a
//! tree written by `merge-tree`, a commit made by `commit-tree`) so that CI can pass the
//! commit main will hold, then pushed in one atomic push that fails when origin's main moved
//! or the branch is no longer that commit.

use super::{Repo, RepoError};
use crate::call_failure::CallFailureKind;

pub use crate::ports::git::BranchOnOrigin;

/// The commit main would hold after a merge, built but not pushed ([`Repo::build_merge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltMerge {
    /// Origin's main it was built on: the push is leased on it.
    pub base: String,
    /// The merge commit.
    pub merge: String,
    /// Whether its tree is the verified commit's own (main had nothing the branch lacks), so
    /// that CI's verdict on the branch is a verdict on the tree main will hold.
    pub same_tree: bool,
}

impl Repo {
    /// One fetch, then origin's head of `branch`, the local head and origin's main.
    pub fn branch_on_origin(&self, branch: &str) -> Result<BranchOnOrigin, RepoError> {
        self.fetch()?;
        Ok(BranchOnOrigin {
            head: self.ref_commit(&format!("refs/remotes/origin/{branch}"))?,
            local: self.ref_commit(&format!("refs/heads/{branch}"))?,
            main: self.origin_main()?,
        })
    }

    /// Whether `commit` is, or precedes, a commit this clone pushed to origin's `branch` (the
    /// runner or its agent: the "update by push" entries of the reflog of
    /// `refs/remotes/origin/<branch>`): work that left from here, not a commit only a fetch
    /// brought, even when the local branch was reset onto it and away again. Without such a
    /// reflog (`core.logAllRefUpdates=false`, a push from another clone) it answers false, so a
    /// push never goes over work it cannot place.
    pub fn pushed_from_here(&self, branch: &str, commit: &str) -> Result<bool, RepoError> {
        let mut pushed = self.pushes(branch)?;
        pushed.sort();
        pushed.dedup();
        if pushed.is_empty() {
            return Ok(false);
        }
        // One walk: `commit` not reachable from any pushed head is printed, a reachable one not.
        let mut args = vec!["rev-list", "--max-count=1", commit, "--not"];
        args.extend(pushed.iter().map(String::as_str));
        let out = self.git(&args)?;
        if !out.status.success() {
            return Err(self.failed(&args, &out));
        }
        Ok(super::stdout(&out).trim().is_empty())
    }

    /// The last commit this clone pushed to origin's `branch`, if the reflog knows one.
    pub fn last_pushed(&self, branch: &str) -> Result<Option<String>, RepoError> {
        Ok(self.pushes(branch)?.into_iter().next())
    }

    /// The commits this clone pushed to origin's `branch`, newest first: the "update by push"
    /// entries of the reflog of `refs/remotes/origin/<branch>` (none without that reflog).
    fn pushes(&self, branch: &str) -> Result<Vec<String>, RepoError> {
        let tracking = format!("refs/remotes/origin/{branch}");
        let out = self.git(&["log", "-g", "--format=%H %gs", &tracking, "--"])?;
        if !out.status.success() {
            return Ok(Vec::new());
        }
        Ok(super::stdout(&out)
            .lines()
            .filter_map(|line| line.split_once(' '))
            .filter(|(_, subject)| subject.starts_with("update by push"))
            .map(|(id, _)| id.to_string())
            .collect())
    }

    /// Whether commit `older` is `newer` or one of its ancestors.
    pub fn contains_commit(&self, newer: &str, older: &str) -> Result<bool, RepoError> {
        self.is_ancestor(older, newer)
    }

    /// The commit main would hold after the merge of `commit` (origin's head of `branch` that
    /// CI passed) into origin's main as the last fetch saw it: a merge commit written without
    /// checking main out (`merge-tree`, `commit-tree`), pushed by nobody yet. A merge that
    /// conflicts names the files (`merge conflict in: …`); one whose result adds conflict
    /// markers is refused.
    pub fn build_merge(
        &self,
        branch: &str,
        commit: &str,
        message: &str,
    ) -> Result<BuiltMerge, RepoError> {
        // No fetch of its own: the look before the merge fetched moments ago, and should
        // origin's main have moved since, the push is leased on this base and fails whole.
        let Some(base) = self.origin_main()? else {
            return Err(refused(
                &format!("git rev-parse refs/remotes/origin/{}", self.main),
                format!("origin has no branch {} to merge {branch} into", self.main),
                "check that origin is the project's remote and has its default branch",
                CallFailureKind::NotFound,
            ));
        };
        self.build_merge_onto(&base, branch, commit, message)
    }

    /// The merge of `commit` (`what` names it in errors) onto commit `base`, as
    /// [`Repo::build_merge`] builds it onto origin's main: the same inputs give the same
    /// commit, so the merge train's tree of a PR and its landing are one commit.
    pub fn build_merge_onto(
        &self,
        base: &str,
        what: &str,
        commit: &str,
        message: &str,
    ) -> Result<BuiltMerge, RepoError> {
        let branch = what;
        let base = base.to_string();
        let write = ["merge-tree", "--write-tree", "--name-only", &base, commit];
        let out = self.git(&write)?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let mut lines = text.lines();
        let tree = lines.next().unwrap_or_default().trim().to_string();
        match out.status.code() {
            Some(0) => {}
            Some(1) => {
                let conflicts: Vec<&str> =
                    lines.take_while(|l| !l.is_empty()).map(str::trim).collect();
                let sides = self.both_sides(&tree, &conflicts);
                return Err(RepoError::MergeConflict {
                    command: format!("git {}", write.join(" ")),
                    paths: conflicts.iter().map(|p| p.to_string()).collect(),
                    sides,
                    hint:
                        "the branch must be brought up to date with main (the merge step's repair)",
                });
            }
            _ => return Err(self.failed(&write, &out)),
        }
        // Git's own check, with the attributes of the tree the merge builds: a project whose
        // `conflict-marker-size` lets a file hold a literal `<<<<<<<` line is not refused, as
        // the auto-commit's check does not refuse it either.
        let marked = self.marker_lines_in(&[&base, &tree], &tree, Some(&tree))?;
        if !marked.is_empty() {
            return Err(RepoError::ConflictMarkers {
                what: format!(
                    "merge {branch} into {} (the merge would add conflict markers at {}; nothing was pushed to main)",
                    self.main,
                    super::rescue::located(&marked)
                ),
                path: self.path.clone(),
                paths: marked.into_iter().map(|(path, _)| path).collect(),
            });
        }
        // Dated by its parents, not the clock: the same merge built again (after a restart, by
        // another worker) is the same commit, so CI's verdict on it, kept by commit, holds.
        let date = std::ffi::OsString::from(format!("@{} +0000", self.merge_date(&base, commit)?));
        let dates = [
            ("GIT_AUTHOR_DATE", date.as_os_str()),
            ("GIT_COMMITTER_DATE", date.as_os_str()),
        ];
        let merge = self
            .git_ok_with(
                &[
                    "commit-tree",
                    &tree,
                    "-p",
                    &base,
                    "-p",
                    commit,
                    "-m",
                    message,
                ],
                &dates,
            )?
            .trim()
            .to_string();
        let verified_tree = self
            .git_ok(&["rev-parse", &format!("{commit}^{{tree}}")])?
            .trim()
            .to_string();
        Ok(BuiltMerge {
            same_tree: tree == verified_tree,
            base,
            merge,
        })
    }

    /// The date of the merge of `commit` onto `base`: the later of their committer dates
    /// (seconds since the epoch), so that main's dates never go back.
    fn merge_date(&self, base: &str, commit: &str) -> Result<u64, RepoError> {
        let mut latest = 0;
        for parent in [base, commit] {
            let text = self.git_ok(&["log", "-1", "--format=%ct", parent, "--"])?;
            latest = latest.max(text.trim().parse::<u64>().unwrap_or(0));
        }
        Ok(latest)
    }

    /// Moves origin's main to exactly `built.merge` and deletes `branch` on origin, in one
    /// atomic push leased on both: main still at `built.base` (the main the commit was built
    /// on) and the branch still at `commit`. Either moved: the push fails whole and nothing
    /// changes on origin.
    pub fn push_merge(
        &self,
        branch: &str,
        commit: &str,
        built: &BuiltMerge,
    ) -> Result<(), RepoError> {
        let branch_lease = format!("--force-with-lease=refs/heads/{branch}:{commit}");
        let main_lease = format!("--force-with-lease=refs/heads/{}:{}", self.main, built.base);
        self.git_ok(&[
            "push",
            "--quiet",
            "--atomic",
            &branch_lease,
            &main_lease,
            "origin",
            &format!("{}:refs/heads/{}", built.merge, self.main),
            &format!(":refs/heads/{branch}"),
        ])?;
        // Main's local copy is the runner's to refresh when it next checks it out; the
        // fetch keeps origin's refs true for the checks after the merge.
        let _ = self.fetch();
        Ok(())
    }

    /// Both sides of each conflicting file, as the merge's `tree` holds it (between git's
    /// conflict markers), cut to a readable size: what the repair needs beyond the names.
    fn both_sides(&self, tree: &str, conflicts: &[&str]) -> String {
        let mut sides = String::new();
        for path in conflicts.iter().take(SIDES_FILES) {
            let Ok(text) = self.git_ok(&["show", &format!("{tree}:{path}")]) else {
                continue;
            };
            let mut cut = text.len().min(SIDES_BYTES);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let more = if cut < text.len() { "\n[…cut]" } else { "" };
            sides.push_str(&format!(
                "\n\n{path}, both sides as the merge leaves them:\n{}{more}",
                &text[..cut]
            ));
        }
        sides
    }
}

/// A refusal of the merge by the runner's own check (the command names what it looked at).
fn refused(command: &str, stderr: String, hint: &'static str, kind: CallFailureKind) -> RepoError {
    RepoError::Command {
        command: command.to_string(),
        ended: crate::ports::git::CallEnd::Otherwise,
        stderr,
        hint,
        kind,
    }
}

/// How much of each conflicting file (with both sides between git's markers) the failure
/// carries to the repair, and for how many files.
const SIDES_BYTES: usize = 4000;
const SIDES_FILES: usize = 5;

#[cfg(test)]
mod tests {
    use crate::git::repo::Repo;
    use std::path::Path;

    /// `git ARGS` in `dir`, its commits dated `date` (seconds since the epoch).
    fn git_at(dir: &Path, date: u64, args: &[&str]) -> String {
        let when = std::ffi::OsString::from(format!("@{date} +0000"));
        let env = [
            ("GIT_AUTHOR_DATE", when.as_os_str()),
            ("GIT_COMMITTER_DATE", when.as_os_str()),
        ];
        let out = crate::git::command::run(dir, args, &env, crate::git::command::GIT_TIMEOUT)
            .expect("git runs")
            .expect("git answers");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn the_same_merge_built_twice_is_the_same_commit_dated_by_its_parents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        git_at(p, 1_000, &["init", "-q", "-b", "main"]);
        git_at(p, 1_000, &["config", "user.name", "t"]);
        git_at(p, 1_000, &["config", "user.email", "t@t.invalid"]);
        git_at(p, 1_000, &["commit", "-q", "--allow-empty", "-m", "first"]);
        git_at(p, 1_000, &["checkout", "-q", "-b", "7-login"]);
        std::fs::write(p.join("login.txt"), "login\n").expect("write");
        git_at(p, 3_000, &["add", "login.txt"]);
        git_at(p, 3_000, &["commit", "-q", "-m", "login"]);
        let verified = git_at(p, 0, &["rev-parse", "HEAD"]);
        git_at(p, 3_000, &["checkout", "-q", "main"]);
        std::fs::write(p.join("other.txt"), "other\n").expect("write");
        git_at(p, 2_000, &["add", "other.txt"]);
        git_at(p, 2_000, &["commit", "-q", "-m", "other"]);
        let origin = p.to_str().expect("utf8");
        git_at(p, 0, &["remote", "add", "origin", origin]);
        git_at(p, 0, &["fetch", "-q", "origin"]);
        let repo = Repo::open(p).expect("open");
        let first = repo
            .build_merge("7-login", &verified, "Merge issue #7")
            .expect("built");
        // A second apart at least: a merge dated by the clock would differ.
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        let again = repo
            .build_merge("7-login", &verified, "Merge issue #7")
            .expect("built again");
        assert_eq!(first, again);
        assert!(!first.same_tree);
        let dates = git_at(p, 0, &["log", "-1", "--format=%at %ct", &first.merge]);
        assert_eq!(dates, "3000 3000", "the later parent's date");
    }
}
