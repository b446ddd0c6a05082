use crate::git::repo::Repo;
use crate::git::trust::is_guarded;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A clone of a bare origin with one commit, its runner's hooks copy in `state`.
struct Clone {
    _dir: tempfile::TempDir,
    work: PathBuf,
    origin: PathBuf,
    pinned: PathBuf,
}

fn clone() -> Clone {
    let dir = tempfile::tempdir().expect("tempdir");
    let origin = dir.path().join("origin.git");
    let work = dir.path().join("work");
    git(
        dir.path(),
        &["init", "--quiet", "--bare", "-b", "main", "origin.git"],
    );
    git(dir.path(), &["clone", "--quiet", "origin.git", "work"]);
    git(&work, &["config", "user.name", "t"]);
    git(&work, &["config", "user.email", "t@t.invalid"]);
    git(
        &work,
        &["commit", "--quiet", "--allow-empty", "-m", "first"],
    );
    git(
        &work,
        &["push", "--quiet", "origin", "HEAD:refs/heads/main"],
    );
    let pinned = dir.path().join("state").join("trusted-hooks");
    Clone {
        _dir: dir,
        work,
        origin,
        pinned,
    }
}

fn hook(dir: &Path, name: &str, body: &str) {
    fs::create_dir_all(dir).expect("hooks dir");
    let path = dir.join(name);
    fs::write(&path, body).expect("hook");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn recorded(c: &Clone) -> Repo {
    recorded_as(c, false)
}

fn recorded_as(c: &Clone, resume: bool) -> Repo {
    let repo = Repo::open(&c.work).expect("repo");
    let file = c.pinned.with_file_name("trusted-git.json");
    let put_back = repo
        .record_trust((&c.pinned, &file), resume)
        .expect("recorded");
    assert_eq!(put_back, Vec::<String>::new());
    repo
}

#[test]
fn the_guarded_keys_are_those_that_run_a_program_or_redirect_a_remote() {
    for key in [
        "core.hooksPath",
        "core.fsmonitor",
        "core.sshCommand",
        "remote.origin.url",
        "remote.origin.pushurl",
        "url.https://evil.example/.insteadof",
        "filter.x.clean",
        "diff.x.textconv",
        "merge.x.driver",
        "credential.helper",
        "include.path",
        "includeIf.gitdir:/x/.path",
        "gpg.program",
        "hook.pre-push.command",
        "core.worktree",
    ] {
        assert!(is_guarded(key), "{key}");
    }
    for key in [
        "branch.12-x.remote",
        "branch.12-x.merge",
        "user.name",
        "core.autocrlf",
        "diff.renames",
        "merge.conflictstyle",
    ] {
        assert!(!is_guarded(key), "{key}");
    }
}

#[test]
fn nothing_changed_is_nothing_to_undo() {
    let c = clone();
    hook(
        &c.work.join(".git/hooks"),
        "pre-push",
        "#!/bin/sh\nexit 0\n",
    );
    let repo = recorded(&c);
    git(&c.work, &["checkout", "--quiet", "-b", "12-x"]);
    git(&c.work, &["push", "--quiet", "-u", "origin", "12-x"]);
    assert_eq!(
        repo.undo_tampering().expect("checked"),
        Vec::<String>::new()
    );
}

#[test]
fn an_added_hook_a_changed_url_and_a_program_entry_are_named_and_put_back() {
    let c = clone();
    let repo = recorded(&c);
    let hooks = c.work.join(".git/hooks");
    hook(&hooks, "pre-push", "#!/bin/sh\ncp ~/.ssh/id_rsa /tmp/x\n");
    git(
        &c.work,
        &["remote", "set-url", "origin", "/tmp/elsewhere.git"],
    );
    git(&c.work, &["config", "core.fsmonitor", "/tmp/evil"]);
    git(
        &c.work,
        &[
            "config",
            "url./tmp/evil.git.insteadOf",
            &c.origin.to_string_lossy(),
        ],
    );
    fs::write(c.work.join(".git/info/attributes"), "* filter=evil\n").expect("attributes");
    let changes = repo.undo_tampering().expect("put back");
    let all = changes.join("\n");
    for needle in [
        "hook pre-push added",
        "remote.origin.url = \"/tmp/elsewhere.git\" added",
        "core.fsmonitor = \"/tmp/evil\" added",
        "url./tmp/evil.git.insteadof",
        ".git/info/attributes added",
    ] {
        assert!(all.contains(needle), "{needle} in:\n{all}");
    }
    assert!(!hooks.join("pre-push").exists(), "the added hook is gone");
    let url = Command::new("git")
        .args(["remote", "get-url", "origin"])
        .current_dir(&c.work)
        .output()
        .expect("git");
    assert_eq!(
        String::from_utf8_lossy(&url.stdout).trim(),
        c.origin.to_string_lossy()
    );
    assert!(!c.work.join(".git/info/attributes").exists());
    assert_eq!(
        repo.undo_tampering().expect("checked"),
        Vec::<String>::new()
    );
}

#[test]
fn an_operators_hook_changed_is_put_back_byte_for_byte_and_keeps_running() {
    let c = clone();
    let hooks = c.work.join(".git/hooks");
    let mark = c.work.join("../ran");
    let body = format!("#!/bin/sh\necho ran >> {}\n", mark.display());
    hook(&hooks, "post-checkout", &body);
    let repo = recorded(&c);
    hook(
        &hooks,
        "post-checkout",
        "#!/bin/sh\necho evil > /tmp/never\n",
    );
    let changes = repo.undo_tampering().expect("put back");
    assert_eq!(changes, vec!["hook post-checkout changed".to_string()]);
    assert_eq!(
        fs::read_to_string(hooks.join("post-checkout")).expect("hook"),
        body
    );
    repo.git_checked(&["checkout", "--quiet", "-b", "12-y"])
        .expect("checkout");
    assert!(
        mark.exists(),
        "the operator's hook still runs on the runner's git"
    );
}

#[test]
fn the_runners_git_runs_only_the_recorded_hooks_even_before_anything_is_put_back() {
    let c = clone();
    let repo = recorded(&c);
    let planted = c.work.join("../planted-ran");
    hook(
        &c.work.join(".git/hooks"),
        "post-checkout",
        &format!("#!/bin/sh\necho ran > {}\n", planted.display()),
    );
    // A hooks path into the work tree, where the agent writes freely.
    hook(
        &c.work.join("hooks"),
        "post-checkout",
        &format!("#!/bin/sh\necho ran > {}\n", planted.display()),
    );
    git(&c.work, &["config", "core.hooksPath", "hooks"]);
    repo.git_checked(&["checkout", "--quiet", "-b", "12-z"])
        .expect("checkout");
    assert!(
        !planted.exists(),
        "a hook the agent planted ran in the runner's git"
    );
}

#[test]
fn an_included_file_is_followed_and_a_new_include_is_named() {
    let c = clone();
    let repo = recorded(&c);
    let extra = c.work.join("extra.gitconfig");
    fs::write(&extra, "[core]\n\tsshCommand = /tmp/evil-ssh\n").expect("extra");
    git(
        &c.work,
        &["config", "include.path", &extra.to_string_lossy()],
    );
    let changes = repo.undo_tampering().expect("put back").join("\n");
    assert!(changes.contains("include.path"), "{changes}");
    assert!(
        changes.contains("core.sshcommand = \"/tmp/evil-ssh\" added"),
        "{changes}"
    );
}

#[test]
fn a_replaced_config_file_link_is_put_back_as_the_file_it_was() {
    let c = clone();
    let repo = recorded(&c);
    let config = c.work.join(".git/config");
    let original = fs::read(&config).expect("config");
    let evil = c.work.join("../evil-config");
    fs::write(&evil, "[core]\n\tfsmonitor = /tmp/evil\n").expect("evil");
    fs::remove_file(&config).expect("rm");
    std::os::unix::fs::symlink(&evil, &config).expect("link");
    let changes = repo.undo_tampering().expect("put back");
    assert!(!changes.is_empty());
    assert!(!fs::symlink_metadata(&config).expect("config").is_symlink());
    assert_eq!(fs::read(&config).expect("config"), original);
}

#[test]
fn a_session_resumed_after_a_crash_puts_back_what_differs_from_its_predecessors_record() {
    let c = clone();
    drop(recorded(&c));
    // The runner died during the agent's step, which had planted a hook.
    hook(
        &c.work.join(".git/hooks"),
        "pre-push",
        "#!/bin/sh\necho evil\n",
    );
    let repo = Repo::open(&c.work).expect("repo");
    let file = c.pinned.with_file_name("trusted-git.json");
    let put_back = repo
        .record_trust((&c.pinned, &file), true)
        .expect("resumed");
    assert_eq!(put_back, vec!["hook pre-push added".to_string()]);
    assert!(!c.work.join(".git/hooks/pre-push").exists());
    // A new session (the last one ended) trusts what it finds.
    hook(
        &c.work.join(".git/hooks"),
        "pre-push",
        "#!/bin/sh\nexit 0\n",
    );
    let repo = recorded_as(&c, false);
    assert_eq!(
        repo.undo_tampering().expect("checked"),
        Vec::<String>::new()
    );
    assert!(c.work.join(".git/hooks/pre-push").exists());
}
