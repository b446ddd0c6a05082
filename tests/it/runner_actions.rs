//! The runner's own actions under attack, end to end: the real binary, real git, the local
//! tracker and forge, the scripted fake agent. A tracker that cannot be written, a person who
//! closes the issue mid-run, a stale git lock, the operator's uncommitted work and a host hook
//! that rejects every push: none of them may loop, repeat a merge or blame an innocent issue.

use crate::e2e;

use e2e::{code, git, text, Project};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn builtin() -> Value {
    json!({ "steps": e2e::builtin_steps() })
}

fn merges_of(p: &Project, issue: u32) -> usize {
    p.origin_main_log()
        .lines()
        .filter(|l| l.contains(&format!("Merge issue #{issue}")))
        .count()
}

/// Runs `cmd` so that file permissions bind it: as root (CI), as the unprivileged `nobody`,
/// after handing it the test's tree; otherwise as the current user.
fn unprivileged(p: &Project, mut cmd: Command) -> Command {
    if !running_as_root() {
        return cmd;
    }
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&p.root)
        .status()
        .expect("chown must be available");
    assert!(chown.success(), "chown of the test tree failed");
    let setpriv = which::which("setpriv").expect(
        "setpriv (util-linux) is needed to run the runner unprivileged when the tests run as root",
    );
    let mut wrapped = Command::new(setpriv);
    wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    wrapped.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    // A home nobody can read keeps git from looking for one it cannot open.
    wrapped.env("HOME", &p.root);
    cmd = wrapped;
    cmd
}

fn running_as_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

fn output_of(mut cmd: Command) -> std::process::Output {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn runner");
    e2e::wait_output(child, std::time::Duration::from_secs(120))
}

/// `run` with `args` as a user who cannot write `dir` (made read-only for the run, writable
/// again after, the tree given back to the test's user).
fn run_with_read_only(p: &Project, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let config = p.config.to_str().expect("utf8").to_string();
    let mut all_args = vec!["run", "--config", &config];
    all_args.extend_from_slice(args);
    let out = output_of(unprivileged(p, p.command(&all_args)));
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
    if running_as_root() {
        // Back to the test's own user, so that git reads the repositories without complaint.
        let _ = Command::new("chown")
            .args(["-R", "0:0"])
            .arg(&p.root)
            .status();
    }
    out
}

/// A tracker the runner cannot write: the merge happens once, is final for the session, and
/// the runner halts naming the tracker and the issue instead of selecting it again and again.
#[test]
fn a_read_only_tracker_halts_after_one_merge_instead_of_merging_again() {
    let p = Project::new(
        &[
            (1, "Only issue", "Do one thing."),
            (2, "Second", "Another."),
        ],
        json!({}),
        builtin(),
    );
    let out = run_with_read_only(&p, &p.issues, &[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: TRACKER"), "{all}");
    assert!(
        all.contains("issue #1 was merged, but the tracker could not be told"),
        "{all}"
    );
    assert_eq!(merges_of(&p, 1), 1, "merged exactly once: {all}");
    assert_eq!(merges_of(&p, 2), 0, "{all}");
    let cycles = all.matches("issue #1: cycle started").count();
    assert_eq!(cycles, 1, "one cycle of #1: {all}");
    assert_eq!(p.issue(1)["state"], "open", "the tracker file is untouched");
}

/// Claims the runner cannot write (`--worker-id`, the local tracker's claims directory
/// read-only): the machine halts naming the tracker and the issue before any work on it; no
/// cycle starts on an issue this runner does not hold. (Before, the runner stopped as if the
/// tracker could not be read, with no halt to tell why.)
#[test]
fn a_claim_the_tracker_cannot_write_halts_before_any_work() {
    let p = Project::new(&[(1, "Only issue", "Do one thing.")], json!({}), builtin());
    let claims = p.issues.join(".claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    let out = run_with_read_only(&p, &claims, &["--worker-id", "w1"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: TRACKER"), "{all}");
    assert!(all.contains("could not claim issue #1"), "{all}");
    assert!(
        !all.contains("cycle started"),
        "no work on an unclaimed issue: {all}"
    );
    assert_eq!(merges_of(&p, 1), 0, "{all}");
}

/// A person closes the issue while the runner works on it: the cycle is dropped before the
/// next step, nothing is merged, the person's fields stay, and the next issue is worked.
#[test]
fn an_issue_closed_by_a_person_mid_run_is_dropped_and_never_merged() {
    let p = Project::new(
        &[(1, "Closed by a person", "x"), (2, "Still wanted", "y")],
        json!({}),
        builtin(),
    );
    // The person acts while implement of #1 commits: a post-commit hook closes the issue.
    let issue_file = p.issues.join("1.json");
    let hook = p.project.join(".git/hooks/post-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncase \"$(git rev-parse --abbrev-ref HEAD)\" in 1-*) sed -i 's/\"state\":\"open\"/\"state\":\"closed\",\"resolution\":\"not needed any more\"/' '{}' ;; esac\n",
            issue_file.display()
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(merges_of(&p, 1), 0, "#1 never merged: {all}");
    assert_eq!(merges_of(&p, 2), 1, "#2 merged: {all}");
    assert!(
        all.contains("closed in the tracker while the runner worked on it"),
        "{all}"
    );
    let one = p.issue(1);
    assert_eq!(one["state"], "closed");
    assert_eq!(
        one["resolution"], "not needed any more",
        "the person's words stay"
    );
    assert_ne!(one["escalated"], true, "nobody is blamed");
    let journal = std::fs::read_to_string(p.journal_path()).expect("journal");
    assert!(journal.contains("\"issueWithdrawn\""), "journaled");
    // The branch is kept for the person.
    assert!(git(&p.project, &["branch", "--list", "1-*"]).contains("1-"));
}

/// A stale `.git/index.lock` is the environment's: the runner stops before any agent call,
/// names the file and the fix, and quarantines nothing.
#[test]
fn a_stale_git_lock_halts_naming_the_file_without_blaming_an_issue() {
    let p = Project::new(&[(1, "A", "x"), (2, "B", "y")], json!({}), builtin());
    let lock = p.project.join(".git/index.lock");
    std::fs::write(&lock, "").expect("lock");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&lock)
        .and_then(|f| f.set_modified(old))
        .expect("age the lock");
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: WORKSPACE"), "{all}");
    assert!(all.contains(&lock.display().to_string()), "{all}");
    assert!(all.contains("remove it: rm"), "{all}");
    assert!(p.invocations().is_empty(), "no agent ran");
    for n in [1, 2] {
        assert_ne!(p.issue(n)["escalated"], true, "#{n} quarantined: {all}");
    }
}

/// The operator's own uncommitted work at start: the runner never works over it, names the
/// files and leaves them as they were; no issue is blamed.
#[test]
fn the_operators_uncommitted_work_halts_before_the_first_step() {
    let p = Project::new(&[(1, "A", "x"), (2, "B", "y")], json!({}), builtin());
    std::fs::write(p.project.join("notes.txt"), "my own work\n").expect("notes");
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: WORKSPACE"), "{all}");
    assert!(all.contains("notes.txt"), "{all}");
    assert!(all.contains("git stash --include-untracked"), "{all}");
    assert_eq!(
        std::fs::read_to_string(p.project.join("notes.txt")).expect("kept"),
        "my own work\n"
    );
    for n in [1, 2] {
        assert_ne!(p.issue(n)["escalated"], true, "#{n} quarantined: {all}");
    }
}

/// A host hook rejecting every push fails every issue the same way: the second issue is not
/// quarantined, the first's quarantine is lifted again, and the halt says the failure is the
/// environment's (exit 1).
#[test]
fn a_hook_rejecting_every_push_quarantines_neither_issue() {
    let p = Project::new(
        &[(1, "First", "x"), (2, "Second", "y"), (3, "Third", "z")],
        json!({}),
        builtin(),
    );
    p.reject_every_push();
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("on two issues in a row"), "{all}");
    // #1's quarantine rested on the hook's rejection alone: lifted in the tracker, with why.
    assert_ne!(p.issue(1)["escalated"], true, "#1 left quarantined: {all}");
    let released = p.issue(1)["released"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(released.contains("ended issue #2 too"), "{released}");
    assert!(all.contains("#1's quarantine was lifted"), "{all}");
    assert_ne!(p.issue(2)["escalated"], true, "#2 quarantined: {all}");
    assert_ne!(p.issue(3)["escalated"], true, "#3 reached: {all}");
}
