//! Getting work onto origin: push, fetch, the branch brought up to date with main and whether
//! a failed merge lost a race (the merge itself: `verified.rs`).

use super::{answers, Repo, RepoError};
use std::process::Output;

impl Repo {
    /// Pushes `branch` to origin and sets it upstream, with a lease. `lease`: the commit
    /// origin's branch must still be at, read by the caller's own look; without one, where the
    /// last fetch left it. An explicit lease matters after a fetch: the fetch moves the
    /// remote-tracking ref to a person's push, and a lease on that ref would overwrite it.
    pub fn push_branch(&self, branch: &str, lease: Option<&str>) -> Result<(), RepoError> {
        let lease = match lease {
            Some(commit) => format!("--force-with-lease=refs/heads/{branch}:{commit}"),
            None => "--force-with-lease".to_string(),
        };
        self.git_ok(&[
            "push",
            "--quiet",
            &lease,
            "--set-upstream",
            "origin",
            &format!("refs/heads/{branch}:refs/heads/{branch}"),
        ])?;
        Ok(())
    }

    /// Deletes `branch` on origin, once its PR is merged (the forge's merge leaves it). Local
    /// branches and the checkout are left as they are.
    pub fn delete_origin_branch(&self, branch: &str) -> Result<(), RepoError> {
        self.git_ok(&[
            "push",
            "--quiet",
            "origin",
            "--delete",
            &format!("refs/heads/{branch}"),
        ])?;
        Ok(())
    }

    /// The commit origin's main points at, as last fetched; `None` without one.
    pub fn origin_main(&self) -> Result<Option<String>, RepoError> {
        self.ref_commit(&format!("refs/remotes/origin/{}", self.main))
    }

    /// Before a merge: origin fetched, main refreshed to origin's, and origin's main merged
    /// into `branch` (checked out afterwards) and the branch pushed when it lacked it, so that
    /// the merge itself is a fast step on top of the newest main. Returns origin's main as it
    /// stood, for [`Repo::lost_race`]. A conflict aborts the update and fails with the text
    /// `merge conflict in: <files>` (the merge step's MERGE_CONFLICT repair takes it from
    /// there); so does a branch whose own commits carry conflict markers (a merge someone
    /// concluded with them): it never counts as up to date. An unfinished merge (or rebase,
    /// cherry-pick, revert) left in the tree is aborted, never built on, its tree kept on a
    /// rescue ref the error names. Where main is checked out in another worktree, local main
    /// is left alone: everything here reads origin's. `lease`: origin's head of the branch as
    /// the caller looked at it; the branch is brought up to date with it too when it lacks it
    /// (a person's push), and the push is leased on it (see [`Repo::push_branch`]).
    pub fn bring_up_to_date(
        &self,
        branch: &str,
        lease: Option<&str>,
    ) -> Result<Option<String>, RepoError> {
        self.fetch()?;
        self.abort_unfinished(branch)?;
        // Read before main is refreshed, which moves no ref of origin: the listing that
        // answers this also answers the refresh's own questions.
        let base = self.origin_main()?;
        if self.main_checked_out_elsewhere()? {
            if self.current_branch()?.as_deref() != Some(branch) {
                self.checkout_finishing(branch)?;
            }
        } else if !self.refresh_main_beside(branch)? {
            self.refresh_main_for(branch)?;
            self.checkout_finishing(branch)?;
        }
        let head = format!("refs/heads/{branch}");
        let mut moved = false;
        if let Some(theirs) = lease {
            // Origin's branch holds a commit the clone's lacks (a person's push that CI then
            // passed): it is merged in, so the push below is a fast-forward that keeps it.
            if !self.is_ancestor(theirs, &head)? {
                let message = format!("Merge origin's {branch} into {branch}");
                let out = self.git(&["merge", "--no-ff", "--quiet", "-m", &message, theirs])?;
                if !out.status.success() {
                    return Err(self.merge_failed(&["merge", "--no-ff", theirs], &out));
                }
                moved = true;
            }
        }
        let Some(base_commit) = base.as_deref() else {
            return Ok(None);
        };
        let range = format!("{base_commit}...{head}");
        let marked = self.marker_lines_in(&[&range], &head, None)?;
        if !marked.is_empty() {
            return Err(RepoError::ConflictMarkers {
                what: format!(
                    "count {branch} as up to date with {} (its commits add conflict markers at {})",
                    self.main,
                    super::rescue::located(&marked)
                ),
                path: self.path.clone(),
                paths: marked.into_iter().map(|(path, _)| path).collect(),
            });
        }
        if !self.is_ancestor(base_commit, &head)? {
            let message = format!("Merge {} into {branch}", self.main);
            let out = self.git(&["merge", "--no-ff", "--quiet", "-m", &message, base_commit])?;
            if !out.status.success() {
                return Err(self.merge_failed(&["merge", "--no-ff", base_commit], &out));
            }
            moved = true;
        }
        if moved && self.branch_pushed(branch)? {
            self.push_branch(branch, lease)?;
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

    /// A merge that failed: a conflict names its files ([`RepoError::MergeConflict`]), and the
    /// merge is aborted so that the tree is clean again.
    fn merge_failed(&self, args: &[&str], out: &Output) -> RepoError {
        let conflicts = self
            .git_ok(&["diff", "--name-only", "--diff-filter=U"])
            .unwrap_or_default();
        let _ = self.git(&["merge", "--abort"]);
        let paths: Vec<String> = conflicts
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        if paths.is_empty() {
            return self.failed(args, out);
        }
        RepoError::MergeConflict {
            command: format!("git {} (in {})", args.join(" "), self.path.display()),
            paths,
            sides: String::new(),
            hint: "the branch must be brought up to date with main (the merge step's repair)",
        }
    }

    /// What [`Repo::refresh_main_for`] and the checkout of `branch` after it come to, done
    /// without a checkout where that changes nothing in the tree: with `branch` checked out
    /// and the tree clean, main already at origin's or only behind it (nothing of its own)
    /// is set with `update-ref` (guarded by its old commit). `false`, having changed nothing,
    /// where the checkouts are needed: main or origin's main missing, main with commits of
    /// its own, another branch checked out or a dirty tree (a checkout a killed runner left
    /// half done is finished there).
    fn refresh_main_beside(&self, branch: &str) -> Result<bool, RepoError> {
        let local_main = format!("refs/heads/{}", self.main);
        let remote_main = format!("refs/remotes/origin/{}", self.main);
        let (Some(local), Some(remote)) = (
            self.ref_commit(&local_main)?,
            self.ref_commit(&remote_main)?,
        ) else {
            return Ok(false);
        };
        if !self.is_clean()? || self.current_branch()?.as_deref() != Some(branch) {
            return Ok(false);
        }
        if local == remote {
            return Ok(true);
        }
        let range = format!("{remote_main}..{local_main}");
        let head = format!("^refs/heads/{branch}");
        if !self
            .git_ok(&["rev-list", "--no-merges", &range, &head])?
            .trim()
            .is_empty()
        {
            return Ok(false);
        }
        self.git_ok(&[
            "update-ref",
            "-m",
            "sdlc-runner: main set to origin's",
            &local_main,
            &remote,
            &local,
        ])?;
        Ok(true)
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

    /// A merge conflict's repair, the runner's first half: origin fetched, `branch` checked
    /// out, and origin's main merged into it, stopping at the conflict: the merge stays in
    /// progress, the conflicting files (returned) in the tree with their markers, for the
    /// agent to resolve. Empty: nothing conflicts (main is in the branch already, or merged
    /// cleanly and committed). A merge, rebase, cherry-pick or revert left unfinished (an
    /// earlier repair's) is aborted first, its tree kept on a rescue ref.
    pub fn start_main_merge(&self, branch: &str) -> Result<Vec<String>, RepoError> {
        self.fetch()?;
        match self.abort_unfinished(branch) {
            Ok(()) | Err(RepoError::Rescued { .. }) => {}
            Err(e) => return Err(e),
        }
        if self.current_branch()?.as_deref() != Some(branch) {
            self.checkout_finishing(branch)?;
        }
        let Some(base) = self.origin_main()? else {
            return Ok(Vec::new());
        };
        if self.is_ancestor(&base, &format!("refs/heads/{branch}"))? {
            return Ok(Vec::new());
        }
        let message = format!("Merge {} into {branch}", self.main);
        let args = ["merge", "--no-ff", "--quiet", "-m", &message, &base];
        let out = self.git(&args)?;
        if out.status.success() {
            return Ok(Vec::new());
        }
        let conflicts = self.git_ok(&["diff", "--name-only", "--diff-filter=U", "-z"])?;
        let paths: Vec<String> = conflicts
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        if paths.is_empty() {
            let _ = self.git(&["merge", "--abort"]);
            return Err(self.failed(&args, &out));
        }
        Ok(paths)
    }

    /// A merge conflict's repair, the runner's second half: the merge [`Repo::start_main_merge`]
    /// left in progress, resolved by the agent in the tree, concluded: everything staged (not
    /// the runner's files) and committed with `message`, `--no-verify` as any commit of the
    /// runner's. A file that still holds a conflict marker (git's check, honouring
    /// `conflict-marker-size`) is refused: the merge is aborted, the tree kept on a rescue
    /// ref, and the error names the files (a conflict, the machine's to meet). `Ok(false)`:
    /// no merge was in progress (the agent concluded or aborted it itself without a sandbox).
    pub fn conclude_merge(&self, message: &str) -> Result<bool, RepoError> {
        let merging = self
            .git_dirs()
            .is_some_and(|(git_dir, _)| git_dir.join("MERGE_HEAD").is_file());
        if !merging {
            return Ok(false);
        }
        let work = self.stage_work()?;
        let marked = self.staged_markers(&work)?;
        if !marked.is_empty() {
            let label = self
                .current_branch()?
                .unwrap_or_else(|| "merge".to_string());
            match self.abort_unfinished(&label) {
                Ok(()) | Err(RepoError::Rescued { .. }) => {}
                Err(e) => return Err(e),
            }
            return Err(RepoError::ConflictMarkers {
                what: format!("conclude the merge of {}", self.main),
                path: self.path.clone(),
                paths: marked,
            });
        }
        self.git_ok(&["commit", "--no-verify", "--quiet", "-m", message])?;
        Ok(true)
    }

    /// Fetches origin (pruning deleted branches); a repository without `origin` is fine. A
    /// fetch that ended a moment ago, with nothing of this process able to have changed origin
    /// since, is not repeated (`answers::fetch_once`).
    pub fn fetch(&self) -> Result<(), RepoError> {
        if !self.has_origin()? {
            return Ok(());
        }
        let fetch = || {
            self.git_ok(&["fetch", "--quiet", "--prune", "origin"])
                .map(drop)
        };
        match self.git_dirs() {
            Some((git_dir, common_dir)) => answers::fetch_once(
                &self.path,
                || answers::RefStamp::of(git_dir, common_dir),
                fetch,
            ),
            None => fetch(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = crate::git::command::output(dir, args).expect("git runs (is it installed?)");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A clone whose branch `1-x` and origin's main both changed `f.txt` since they parted.
    fn conflicting() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let origin = dir.path().join("o.git");
        let work = dir.path().join("w");
        git(dir.path(), &["init", "-q", "--bare", "-b", "main", "o.git"]);
        git(dir.path(), &["clone", "-q", "o.git", "w"]);
        git(&work, &["config", "user.name", "t"]);
        git(&work, &["config", "user.email", "t@t.invalid"]);
        let commit = |text: &str| {
            std::fs::write(work.join("f.txt"), text).expect("write");
            git(&work, &["commit", "-q", "-am", text]);
        };
        std::fs::write(work.join("f.txt"), "base\n").expect("write");
        git(&work, &["add", "f.txt"]);
        git(&work, &["commit", "-q", "-m", "base"]);
        git(&work, &["push", "-q", "-u", "origin", "main"]);
        git(&work, &["checkout", "-q", "-b", "1-x"]);
        commit("branch\n");
        git(&work, &["checkout", "-q", "main"]);
        commit("main\n");
        git(&work, &["push", "-q", "origin", "main"]);
        git(&work, &["checkout", "-q", "1-x"]);
        assert!(origin.is_dir());
        (dir, work)
    }

    #[test]
    fn the_runner_starts_the_merge_of_main_and_concludes_it_only_without_markers() {
        let (_dir, work) = conflicting();
        let repo = Repo::open(&work).expect("open");
        let merging = || work.join(".git/MERGE_HEAD").is_file();
        assert_eq!(repo.start_main_merge("1-x").expect("started"), ["f.txt"]);
        assert!(merging(), "left in progress for the agent");
        let text = std::fs::read_to_string(work.join("f.txt")).expect("read");
        assert!(text.contains("<<<<<<<"), "{text}");
        // The agent left the markers: refused, the merge aborted, the tree kept.
        match repo.conclude_merge("m") {
            Err(RepoError::ConflictMarkers { paths, .. }) => assert_eq!(paths, ["f.txt"]),
            other => panic!("{other:?}"),
        }
        assert!(!merging());
        assert_eq!(repo.rescue_refs("1-x").expect("refs").len(), 1);
        assert_eq!(git(&work, &["rev-parse", "--abbrev-ref", "HEAD"]), "1-x");
        // Resolved: the runner's merge commit, with both parents.
        assert_eq!(repo.start_main_merge("1-x").expect("started"), ["f.txt"]);
        std::fs::write(work.join("f.txt"), "branch and main\n").expect("resolve");
        assert!(repo
            .conclude_merge("Merge main (conflict resolved)")
            .expect("concluded"));
        let parents = git(&work, &["rev-list", "--parents", "-1", "HEAD"]);
        assert_eq!(parents.split_whitespace().count(), 3, "{parents}");
        assert_eq!(
            git(&work, &["log", "-1", "--format=%s"]),
            "Merge main (conflict resolved)"
        );
        assert!(!repo.conclude_merge("again").expect("nothing in progress"));
        // Main is in the branch now: nothing to merge, nothing for the agent.
        assert!(repo.start_main_merge("1-x").expect("up to date").is_empty());
    }

    #[test]
    fn the_runner_starts_the_issues_branch_or_checks_out_the_one_there() {
        let (_dir, work) = conflicting();
        let repo = Repo::open(&work).expect("open");
        git(&work, &["checkout", "-q", "main"]);
        repo.start_branch("2-new").expect("created");
        assert_eq!(git(&work, &["rev-parse", "--abbrev-ref", "HEAD"]), "2-new");
        assert_eq!(
            git(&work, &["rev-parse", "HEAD"]),
            git(&work, &["rev-parse", "main"])
        );
        repo.start_branch("1-x").expect("checked out");
        assert_eq!(git(&work, &["rev-parse", "--abbrev-ref", "HEAD"]), "1-x");
    }
}
