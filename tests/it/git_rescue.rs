//! The repository layer's own guards against real git: an operation left unfinished is
//! aborted and rescued before any commit of the runner (merge, rebase, cherry-pick), a branch
//! whose commits carry conflict markers is never up to date, main is settled from origin, and a
//! linked worktree is parked on origin's main while main is checked out elsewhere.

use crate::e2e;

use e2e::git;
use sdlc_runner::git::repo::{BaseSource, Repo, RepoError, RESCUE_REFS};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Clone {
    _root: tempfile::TempDir,
    root: PathBuf,
    origin: PathBuf,
    work: PathBuf,
}

fn configure(dir: &Path) {
    for (k, v) in [
        ("user.name", "t"),
        ("user.email", "t@t"),
        ("commit.gpgsign", "false"),
    ] {
        git(dir, &["config", k, v]);
    }
}

fn commit(dir: &Path, file: &str, text: &str, message: &str) {
    std::fs::write(dir.join(file), text).expect("write");
    git(dir, &["add", "--", file]);
    git(dir, &["commit", "-qm", message]);
}

/// A bare origin with `main` (a.txt), and a clone of it.
fn clone() -> Clone {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let origin = root.join("origin.git");
    let work = root.join("work");
    git(
        &root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            origin.to_str().expect("utf8"),
        ],
    );
    git(
        &root,
        &[
            "clone",
            "-q",
            origin.to_str().expect("utf8"),
            work.to_str().expect("utf8"),
        ],
    );
    configure(&work);
    commit(&work, "a.txt", "one\n", "initial");
    git(&work, &["push", "-q", "-u", "origin", "main"]);
    Clone {
        _root: dir,
        root,
        origin,
        work,
    }
}

/// `7-x` changes a.txt one way, main another: merging main into `7-x` conflicts.
fn conflicting_branches(c: &Clone) {
    git(&c.work, &["checkout", "-q", "-b", "7-x"]);
    commit(&c.work, "a.txt", "ours\n", "ours");
    git(&c.work, &["checkout", "-q", "main"]);
    commit(&c.work, "a.txt", "theirs\n", "theirs");
    git(&c.work, &["push", "-q", "origin", "main"]);
    git(&c.work, &["checkout", "-q", "7-x"]);
}

fn fails(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git")
        .status
        .success();
    assert!(!ok, "git {args:?} was expected to stop at a conflict");
}

fn rescued(dir: &Path) -> Vec<String> {
    git(dir, &["for-each-ref", "--format=%(refname)", RESCUE_REFS])
        .lines()
        .map(str::to_string)
        .collect()
}

/// A merge, a rebase and a cherry-pick, each stopped at its conflict: the auto-commit aborts
/// it instead of concluding it, keeps the tree (markers and all) on a rescue ref it names, and
/// commits nothing; the branch is where it was.
#[test]
fn an_unfinished_operation_is_aborted_and_rescued_never_committed() {
    for op in ["merge", "rebase", "cherry-pick"] {
        let c = clone();
        conflicting_branches(&c);
        let before = git(&c.work, &["rev-parse", "HEAD"]);
        match op {
            "merge" => fails(&c.work, &["merge", "main"]),
            "rebase" => fails(&c.work, &["rebase", "main"]),
            _ => fails(&c.work, &["cherry-pick", "main"]),
        }
        let repo = Repo::open(&c.work).expect("open");
        let err = repo
            .auto_commit("chore: save partial work before escalation")
            .expect_err("nothing is committed");
        let refs = rescued(&c.work);
        assert_eq!(refs.len(), 1, "{op}: {err}");
        assert!(
            matches!(&err, RepoError::Rescued { .. }) && err.to_string().contains(&refs[0]),
            "{op}: the error names the rescue ref: {err}"
        );
        assert!(err.to_string().contains("a.txt"), "{op}: {err}");
        let kept = git(&c.work, &["show", &format!("{}:a.txt", refs[0])]);
        assert!(kept.contains("<<<<<<<"), "{op}: the tree as it was: {kept}");
        assert_eq!(git(&c.work, &["rev-parse", "HEAD"]), before, "{op}");
        assert_eq!(
            git(&c.work, &["symbolic-ref", "--short", "HEAD"]),
            "7-x",
            "{op}"
        );
        assert_eq!(git(&c.work, &["status", "--porcelain"]), "", "{op}");
        for marker in [
            "MERGE_HEAD",
            "CHERRY_PICK_HEAD",
            "rebase-merge",
            "rebase-apply",
        ] {
            assert!(!c.work.join(".git").join(marker).exists(), "{op}: {marker}");
        }
    }
}

/// A branch whose own commits carry conflict markers (someone concluded a merge with them)
/// never counts as up to date with main: a MERGE_CONFLICT naming the file.
#[test]
fn a_branch_with_committed_markers_is_never_up_to_date() {
    let c = clone();
    conflicting_branches(&c);
    fails(&c.work, &["merge", "main"]);
    git(&c.work, &["commit", "-qam", "concluded with markers"]);
    git(&c.work, &["push", "-q", "origin", "7-x"]);
    let repo = Repo::open(&c.work).expect("open");
    let err = repo.bring_up_to_date("7-x", None).expect_err("refused");
    assert!(matches!(err, RepoError::ConflictMarkers { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("merge conflict in: a.txt"), "{text}");
    let class = sdlc_runner::agent::classify::classify_builtin(
        "merge",
        &text,
        sdlc_runner::call_failure::Kinded::kind(&err),
        false,
    )
    .class;
    assert_eq!(class, sdlc_runner::failure::FailureClass::MergeConflict);
}

/// Main is what origin says its default branch is, whatever the clone's own branches are; the
/// config's baseBranch wins; without origin the clone's own; an origin gone is an error naming
/// it, its URL and the fix.
#[test]
fn main_is_settled_from_origin_or_the_config() {
    let c = clone();
    git(&c.work, &["push", "-q", "origin", "main:master"]);
    git(&c.origin, &["symbolic-ref", "HEAD", "refs/heads/master"]);
    let _ = Command::new("git")
        .args(["remote", "set-head", "origin", "-d"])
        .current_dir(&c.work)
        .output();
    let mut repo = Repo::open(&c.work).expect("open");
    assert_eq!(repo.main, "main", "the clone alone would guess main");
    assert_eq!(repo.settle_base(None).expect("asked"), BaseSource::Origin);
    assert_eq!(repo.main, "master");
    assert_eq!(
        repo.settle_base(Some("release")).expect("configured"),
        BaseSource::Config
    );
    assert_eq!(repo.main, "release");

    let gone = c.root.join("gone.git");
    git(
        &c.work,
        &["remote", "set-url", "origin", gone.to_str().expect("utf8")],
    );
    let mut repo = Repo::open(&c.work).expect("open");
    let err = repo.settle_base(None).expect_err("origin is gone");
    let text = err.to_string();
    assert!(text.contains("gone.git"), "{text}");
    assert!(text.contains("git remote set-url origin"), "{text}");
    assert_eq!(
        sdlc_runner::call_failure::Kinded::kind(&err),
        sdlc_runner::call_failure::CallFailureKind::Unreachable
    );

    git(&c.work, &["remote", "remove", "origin"]);
    let mut repo = Repo::open(&c.work).expect("open");
    assert_eq!(repo.settle_base(None).expect("local"), BaseSource::Local);
    assert_eq!(repo.main, "main");
}

/// A linked worktree while the primary clone has main checked out: parked on a detached HEAD
/// at origin's main (which counts as on main), main itself untouched.
#[test]
fn a_linked_worktree_is_parked_at_origins_main_without_checking_main_out() {
    let c = clone();
    let linked = c.root.join("linked");
    git(
        &c.work,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "7-x",
            linked.to_str().expect("utf8"),
        ],
    );
    let repo = Repo::open(&linked).expect("open");
    assert!(repo.main_checked_out_elsewhere().expect("listed"));
    assert!(!repo.on_main().expect("asked"), "on 7-x");
    repo.park_on_main().expect("parked");
    assert!(repo.on_main().expect("asked"));
    assert_eq!(
        git(&linked, &["rev-parse", "HEAD"]),
        git(&c.work, &["rev-parse", "refs/remotes/origin/main"])
    );
    assert_eq!(git(&c.work, &["symbolic-ref", "--short", "HEAD"]), "main");
    // The primary clone is not parked: main is its own.
    let primary = Repo::open(&c.work).expect("open");
    assert!(!primary.main_checked_out_elsewhere().expect("listed"));
    assert!(primary.on_main().expect("asked"));
}
