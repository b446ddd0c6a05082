//! The branch refs the runner asks about, read in one git call: every local branch (and which
//! one is checked out) and every branch of origin, with the commit each names. The checks
//! around a step ask "which branch is checked out", "which branches are the issue's", "does
//! origin have it", "does main exist here and on origin" one after another; each used to be a
//! git spawn of its own. One `for-each-ref` answers them all, and `answers` keeps that answer
//! for as long as nothing can have moved a ref.

use super::{answers, Repo, RepoError, HEAD_BRANCH};

/// One branch ref as `for-each-ref` listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BranchRef {
    /// The full name (`refs/heads/7-login`, `refs/remotes/origin/main`).
    pub full: String,
    /// The branch's own name: the full name less `refs/heads/` (`7-login`) or
    /// `refs/remotes/` (`origin/main`), as `git status` prints the checked-out one (never
    /// git's disambiguated `heads/7-login`, which a tag of the same name would bring).
    pub short: String,
    /// The commit it names.
    pub commit: String,
    /// HEAD of this work tree is this branch.
    pub checked_out: bool,
}

/// `%(HEAD)` is `*` for the branch this work tree has checked out, else a space; ref names hold
/// no spaces, so the fields split on them.
const FORMAT: &str = "--format=%(HEAD)%(objectname) %(refname) %(refname:lstrip=2)";

/// The namespaces listed: a ref elsewhere is asked with `rev-parse`.
const LISTED: [&str; 2] = ["refs/heads/", "refs/remotes/origin/"];

impl Repo {
    /// Every local branch and every branch of origin (as last fetched).
    pub(super) fn branch_refs(&self) -> Result<Vec<BranchRef>, RepoError> {
        let args = ["for-each-ref", FORMAT, LISTED[0], LISTED[1]];
        // Read untrimmed: the first line starts with `%(HEAD)`, a space unless it is checked out.
        let out = self.git_checked(&args)?;
        Ok(parse(&String::from_utf8_lossy(&out.stdout)))
    }

    /// Whether `full_ref` names a commit. Branches of this clone and of origin are looked up
    /// in [`Repo::branch_refs`] (only commits are ever written there: `git branch` and `fetch`
    /// refuse anything else, and `for-each-ref` leaves out a ref whose object is missing);
    /// any other ref is asked with `rev-parse`.
    pub(super) fn ref_exists(&self, full_ref: &str) -> Result<bool, RepoError> {
        Ok(self.ref_commit(full_ref)?.is_some())
    }

    /// Origin's head of `branch` as last fetched (no fetch here); `None` without one.
    pub fn fetched_head(&self, branch: &str) -> Result<Option<String>, RepoError> {
        self.ref_commit(&format!("refs/remotes/origin/{branch}"))
    }

    /// The commit the local `branch` is at; `None` when there is no such branch.
    pub fn local_head(&self, branch: &str) -> Result<Option<String>, RepoError> {
        self.ref_commit(&format!("refs/heads/{branch}"))
    }

    /// The commit `full_ref` names; `None` when there is no such ref.
    pub(super) fn ref_commit(&self, full_ref: &str) -> Result<Option<String>, RepoError> {
        if LISTED.iter().any(|ns| full_ref.starts_with(ns)) {
            return Ok(self
                .branch_refs()?
                .into_iter()
                .find(|r| r.full == full_ref)
                .map(|r| r.commit));
        }
        let out = self.git(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{full_ref}^{{commit}}"),
        ])?;
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()))
    }

    /// The short names of the local branches.
    pub(super) fn local_branches(&self) -> Result<Vec<String>, RepoError> {
        Ok(self
            .branch_refs()?
            .into_iter()
            .filter(|r| r.full.starts_with(LISTED[0]))
            .map(|r| r.short)
            .collect())
    }

    /// `None` when HEAD is detached. A checked-out branch that has commits is read from
    /// `Repo::branch_refs`; only a detached HEAD or a branch without a commit yet (which
    /// `for-each-ref` cannot list) costs a `symbolic-ref` of its own.
    pub fn current_branch(&self) -> Result<Option<String>, RepoError> {
        // A `git status` that just printed it (see `Repo::foreign_entries`).
        if let Some(told) = self
            .ref_stamp()
            .and_then(|now| answers::recall(&self.path, &HEAD_BRANCH, &answers::Moment::now(now)))
        {
            return Ok(told
                .status
                .success()
                .then(|| String::from_utf8_lossy(&told.stdout).trim().to_string()));
        }
        if let Some(head) = self
            .branch_refs()?
            .into_iter()
            .find(|r| r.checked_out && r.full.starts_with(LISTED[0]))
        {
            return Ok(Some(head.short));
        }
        let args = HEAD_BRANCH;
        let out = self.git(&args)?;
        match out.status.code() {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            )),
            Some(1) => Ok(None),
            _ => Err(self.failed(&args, &out)),
        }
    }
}

fn parse(text: &str) -> Vec<BranchRef> {
    text.lines()
        .filter_map(|line| {
            let checked_out = line.starts_with('*');
            let mut fields = line.get(1..)?.split(' ');
            let (commit, full, short) = (fields.next()?, fields.next()?, fields.next()?);
            Some(BranchRef {
                full: full.to_string(),
                short: short.to_string(),
                commit: commit.to_string(),
                checked_out,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn git(dir: &Path, args: &[&str]) {
        let out = crate::git::command::output(dir, args).expect("git runs (is it installed?)");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    fn clone_with_a_commit() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        git(p, &["init", "-q", "-b", "main"]);
        git(p, &["config", "user.name", "t"]);
        git(p, &["config", "user.email", "t@t.invalid"]);
        git(p, &["commit", "-q", "--allow-empty", "-m", "first"]);
        dir
    }

    #[test]
    fn the_checked_out_branch_is_this_work_trees_even_unborn_or_in_a_linked_one() {
        let dir = clone_with_a_commit();
        let repo = Repo::open(dir.path()).expect("open");
        assert_eq!(
            repo.current_branch().expect("branch").as_deref(),
            Some("main")
        );
        git(dir.path(), &["branch", "7-login"]);
        assert_eq!(
            repo.local_branches().expect("branches"),
            vec!["7-login".to_string(), "main".to_string()]
        );
        // A linked work tree has a HEAD of its own; the main one's branch is not starred there.
        let linked = dir.path().join("linked");
        git(
            dir.path(),
            &[
                "worktree",
                "add",
                "-q",
                linked.to_str().expect("utf8"),
                "7-login",
            ],
        );
        let other = Repo::open(&linked).expect("open linked");
        assert_eq!(
            other.current_branch().expect("branch").as_deref(),
            Some("7-login")
        );
        assert_eq!(
            repo.current_branch().expect("branch").as_deref(),
            Some("main")
        );
        // A branch without a commit yet is not listed, and is still the one checked out.
        git(dir.path(), &["checkout", "-q", "--orphan", "fresh"]);
        assert_eq!(
            repo.current_branch().expect("branch").as_deref(),
            Some("fresh")
        );
        assert!(!repo.ref_exists("refs/heads/fresh").expect("exists"));
        assert!(repo.ref_exists("refs/heads/main").expect("exists"));
        assert!(!repo.ref_exists("refs/remotes/origin/main").expect("exists"));
    }

    #[test]
    fn a_ref_outside_the_listing_is_asked_directly() {
        let dir = clone_with_a_commit();
        let repo = Repo::open(dir.path()).expect("open");
        git(dir.path(), &["tag", "v1"]);
        let listed = repo.ref_commit("refs/heads/main").expect("main");
        assert!(listed.is_some());
        assert_eq!(repo.ref_commit("refs/tags/v1").expect("tag"), listed);
        assert_eq!(repo.ref_commit("refs/tags/v2").expect("no tag"), None);
    }

    #[test]
    fn the_listing_names_each_branch_its_commit_and_the_checked_out_one() {
        let text = " 1111 refs/heads/main main\n*2222 refs/heads/7-login 7-login\n 1111 refs/remotes/origin/main origin/main\n";
        let refs = parse(text);
        assert_eq!(refs.len(), 3);
        assert!(refs[1].checked_out && !refs[0].checked_out && !refs[2].checked_out);
        assert_eq!(refs[1].short, "7-login");
        assert_eq!(refs[2].full, "refs/remotes/origin/main");
        assert_eq!(refs[2].commit, "1111");
    }
}
