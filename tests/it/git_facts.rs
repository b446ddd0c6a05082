//! The runner's own git holds to facts, not names (issue 28): no commit of the runner ever
//! concludes someone's unfinished merge or carries conflict markers onto main; main is
//! origin's default branch (or the config's `baseBranch`), not whichever of `main` and
//! `master` happens to exist; a project that is a linked worktree works while main is checked
//! out elsewhere; and a remote that cannot be reached at start is the environment's, before
//! any issue is selected. The real binary on real git repositories.

use crate::e2e;

use e2e::{code, git, text, Project};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

fn builtin(extra: Value) -> Value {
    let mut cfg = json!({ "steps": e2e::builtin_steps() });
    if let (Some(c), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
        c.extend(more.clone());
    }
    cfg
}

/// Whether any file of `rev` in the repository at `dir` holds a conflict marker line.
fn markers_in(dir: &Path, rev: &str) -> String {
    let out = Command::new("git")
        .args(["grep", "-n", "-E", "^(<<<<<<<|>>>>>>>)( |$)", rev, "--"])
        .current_dir(dir)
        .output()
        .expect("git grep");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn rescue_refs(dir: &Path) -> Vec<String> {
    git(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/sdlc-runner/rescue/",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// A teammate's change conflicts with the issue's at merge time; the agent's repair starts
/// merging main into the branch and gives up half-way (MERGE_HEAD, markers in the tree); the
/// issue escalates, a person releases it and runs again. The escalation's save aborts the
/// unfinished merge instead of concluding it (what the tree held is kept on a rescue ref that
/// the run names), so the branch never counts as up to date with main, and no conflict marker
/// ever reaches origin's main.
#[test]
fn a_merge_left_half_done_then_escalated_and_released_never_puts_markers_on_main() {
    let p = Project::new(
        &[(1, "Shared change", "")],
        json!({"steps": {"implement": ["write-shared-raced"], "merge": ["leave-conflict"]}}),
        builtin(json!({"maxRetriesPerStep": 2, "maxRepairIterations": 1})),
    );
    let first = p.run(&[]);
    let all = text(&first);
    assert!(
        p.issue(1)["escalated"] == json!(true),
        "issue #1 escalated: {all}"
    );
    let rescued = rescue_refs(&p.project);
    assert!(!rescued.is_empty(), "a rescue ref was made: {all}");
    assert!(
        rescued.iter().any(|r| all.contains(r.as_str())),
        "the run names the rescue ref {rescued:?}: {all}"
    );
    let note = p.issue(1)["escalation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        rescued.iter().any(|r| note.contains(r.as_str())),
        "the escalation note names the rescue ref {rescued:?}: {note}"
    );
    let rescue = &rescued[0];
    assert!(
        !markers_in(&p.project, rescue).is_empty(),
        "the rescue ref holds the tree as it was, markers and all"
    );
    assert!(
        !p.project.join(".git/MERGE_HEAD").exists(),
        "the merge was aborted: {all}"
    );
    let branch = "refs/heads/1-issue-1";
    assert_eq!(
        markers_in(&p.project, branch),
        "",
        "no marker on the issue's branch: {all}"
    );

    let release = p
        .command(&["release", "1", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("release");
    assert_eq!(code(&release), 0, "{}", text(&release));
    let second = p.run(&[]);
    let all2 = text(&second);
    assert_eq!(
        markers_in(&p.origin, "main"),
        "",
        "no conflict marker on origin's main: {all}\n---\n{all2}"
    );
    assert!(
        !p.origin_main_log().contains("Merge issue #1"),
        "the conflicted branch was not merged: {all2}"
    );
}

/// Committing a file with conflict markers is refused, naming the file; nothing is committed.
#[test]
fn a_file_with_conflict_markers_is_never_committed_by_the_runner() {
    use sdlc_runner::git::repo::Repo;
    let p = Project::new(&[], json!({}), json!({}));
    git(&p.project, &["checkout", "-q", "-b", "7-x"]);
    std::fs::write(
        p.project.join("notes.txt"),
        "a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other\n",
    )
    .expect("write");
    let repo = Repo::open(&p.project).expect("open");
    let before = git(&p.project, &["rev-parse", "HEAD"]);
    let err = repo
        .auto_commit("feat: x")
        .expect_err("markers are refused");
    assert!(err.to_string().contains("notes.txt"), "{err}");
    assert!(err.to_string().contains("conflict marker"), "{err}");
    assert_eq!(git(&p.project, &["rev-parse", "HEAD"]), before);
}

/// Origin's default branch is `master`, a stale `main` exists beside it, and the clone has no
/// `origin/HEAD` (as `git init; git remote add; git fetch` leaves it): the issue is merged into
/// master, and the run's first lines say which base branch and where it came from.
#[test]
fn origins_default_branch_is_main_even_with_a_stale_main_beside_it() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin(json!({})));
    p.make_master_origins_default();
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let master = git(&p.origin, &["log", "--format=%s", "master"]);
    assert!(
        master.contains("Merge issue #1"),
        "merged into master: {all}"
    );
    let main = git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(!main.contains("Merge issue #1"), "not into main: {all}");
    assert!(
        all.contains("base branch master (origin's default branch"),
        "the run says which base branch and why: {all}"
    );
    let doctor = p
        .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("doctor");
    assert!(
        text(&doctor).contains("base branch master (origin's default branch"),
        "{}",
        text(&doctor)
    );
}

/// `baseBranch` in the config wins over origin's default branch.
#[test]
fn base_branch_in_the_config_wins() {
    let p = Project::new(
        &[(1, "First issue", "")],
        json!({}),
        builtin(json!({"baseBranch": "main"})),
    );
    p.make_master_origins_default();
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let main = git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(main.contains("Merge issue #1"), "merged into main: {all}");
    let master = git(&p.origin, &["log", "--format=%s", "master"]);
    assert!(!master.contains("Merge issue #1"), "{all}");
    assert!(
        all.contains("base branch main (baseBranch in"),
        "the run says where the base branch came from: {all}"
    );
}

/// Origin's URL points at a directory that does not exist: `run` stops before any issue is
/// selected, names the remote and the fix, and quarantines nothing.
#[test]
fn an_unreachable_origin_at_start_is_the_environments() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin(json!({})));
    let gone = p.root.join("moved-away.git");
    git(
        &p.project,
        &["remote", "set-url", "origin", gone.to_str().expect("utf8")],
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(all.contains("origin"), "names the remote: {all}");
    assert!(all.contains("moved-away.git"), "names its URL: {all}");
    assert!(all.contains("git remote set-url origin"), "the fix: {all}");
    assert!(p.invocations().is_empty(), "{:?}", p.invocations());
    assert_eq!(p.issue(1)["escalated"], json!(false), "{all}");
    assert!(!all.contains("release 1"), "{all}");
}

/// The project is a linked worktree of a clone whose primary worktree has `main` checked out
/// (as a developer's second checkout, or a CI's): no builtin step needs main checked out, so
/// the issue goes through to its merge (the forge merges on its side: a fake `gh`), and the
/// primary worktree is left as it was.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_linked_worktree_works_while_main_is_checked_out_in_the_primary_clone() {
    assert!(
        which::which("python3").is_ok(),
        "python3 is not on PATH (tests/fake_gh.py needs it): apt-get install -y python3"
    );
    let mut p = Project::new(
        &[(1, "First issue", "")],
        json!({}),
        builtin(json!({"forge": "github"})),
    );
    let linked = p.root.join("linked");
    git(
        &p.project,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            linked.to_str().expect("utf8"),
        ],
    );
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(&p.config).expect("config")).expect("json");
    cfg["projectPath"] = json!("linked");
    std::fs::write(&p.config, cfg.to_string()).expect("config");
    let bin = p.root.join("bin");
    e2e::install_fake_gh(&bin);
    let state = json!({"origin": p.origin, "old": false, "prRecords": true, "labels": ["automatable"],
        "milestones": [], "issues": []});
    std::fs::write(bin.join("state.json"), state.to_string()).expect("state");
    let mut dirs = vec![bin.clone()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    p.env.push((
        "PATH".into(),
        std::env::join_paths(dirs).expect("join PATH"),
    ));
    let primary_head = git(&p.project, &["rev-parse", "HEAD"]);

    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        p.origin_main_log().contains("from 1-issue-1"),
        "merged through the forge: {all}"
    );
    assert_eq!(p.issue(1)["state"], json!("closed"), "{all}");
    assert_eq!(
        git(&p.project, &["symbolic-ref", "--short", "HEAD"]),
        "main"
    );
    assert_eq!(git(&p.project, &["rev-parse", "HEAD"]), primary_head);
    assert_eq!(git(&p.project, &["status", "--porcelain"]), "");
}

/// The same linked worktree with the local forge: the runner merges the verified commit into
/// origin's main itself, and never needs main checked out for it (main stays checked out in
/// the primary clone, untouched).
#[test]
fn a_linked_worktree_merges_through_the_local_forge_while_main_is_checked_out_elsewhere() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin(json!({})));
    let linked = p.root.join("linked");
    git(
        &p.project,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            linked.to_str().expect("utf8"),
        ],
    );
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(&p.config).expect("config")).expect("json");
    cfg["projectPath"] = json!("linked");
    std::fs::write(&p.config, cfg.to_string()).expect("config");
    let primary_head = git(&p.project, &["rev-parse", "HEAD"]);

    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        p.origin_main_log().contains("Merge issue #1"),
        "merged into origin's main: {all}"
    );
    assert_eq!(p.issue(1)["state"], json!("closed"), "{all}");
    assert_eq!(
        git(&p.project, &["symbolic-ref", "--short", "HEAD"]),
        "main"
    );
    assert_eq!(git(&p.project, &["rev-parse", "HEAD"]), primary_head);
    assert_eq!(git(&p.project, &["status", "--porcelain"]), "");
}

/// Origin disappears while the issue is worked (its directory moved away during CI): the merge
/// step's fetch fails on the runner's own git, which is the environment's, not the issue's:
/// the run halts naming the cause and the fix, and the issue is not quarantined.
#[test]
fn origin_gone_during_the_cycle_halts_for_the_environment_without_blaming_the_issue() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
    let moved = format!(
        "mv {} {}",
        p.origin.display(),
        p.root.join("moved-away.git").display()
    );
    p.set_config(builtin(
        json!({"localCi": {"command": ["sh", "-c", moved]}}),
    ));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE"), "{all}");
    assert!(
        all.contains("the remote cannot be reached"),
        "the cause: {all}"
    );
    assert!(all.contains("git remote set-url origin"), "the fix: {all}");
    assert_ne!(p.issue(1)["escalated"], json!(true), "{all}");
    assert!(!all.contains("release 1"), "{all}");
}
