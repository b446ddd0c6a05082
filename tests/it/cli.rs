//! The CLI people already know how to use, through the real binary: `init`, `doctor`,
//! `completions`, `man`, and `--config` spelled the same everywhere.

use crate::e2e;

use e2e::{git, Project, BIN};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};

fn runner(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run sdlc-runner")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn new_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    );
    dir
}

#[test]
fn init_writes_a_valid_local_config_once_and_keeps_the_tree_clean() {
    let repo = new_repo();
    let sub = repo.path().join("src");
    std::fs::create_dir(&sub).expect("subdir");
    // Run from a subdirectory: the config still goes to the top level.
    let out = runner(&["init"], &sub);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let config = repo.path().join("sdlc-config.json");
    assert_eq!(
        text(&out.stdout).trim(),
        config
            .canonicalize()
            .expect("written")
            .display()
            .to_string()
    );
    let body = std::fs::read_to_string(&config).expect("config");
    assert!(body.contains("\"kind\": \"local\""), "{body}");
    assert!(body.contains("\"_comment\""), "commented: {body}");
    assert_eq!(
        git(repo.path(), &["status", "--porcelain"]),
        "",
        "excluded, tree clean"
    );

    let check = runner(
        &["config", "check", "--config", "sdlc-config.json"],
        repo.path(),
    );
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    let summary = text(&check.stdout);
    for step in ["startCycle", "commitPush", "createPR", "monitorCI", "merge"] {
        assert!(summary.contains(&format!("{step} builtin")), "{summary}");
    }

    std::fs::write(&config, "{\"mine\": true}").expect("edit");
    let again = runner(&["init"], repo.path());
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("already exists; init never overwrites"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&config).expect("config"),
        "{\"mine\": true}"
    );
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).expect("exclude");
    assert_eq!(exclude.matches("/sdlc-config.json").count(), 1, "{exclude}");
}

#[test]
fn init_refuses_a_gh_older_than_the_minimum_by_name() {
    let repo = new_repo();
    git(
        repo.path(),
        &["remote", "add", "origin", "git@github.com:acme/widget.git"],
    );
    let bin = tempfile::tempdir().expect("bin");
    let gh = bin.path().join("gh");
    std::fs::write(&gh, "#!/bin/sh\necho 'gh version 2.20.2 (2022-11-15)'\n").expect("gh");
    Command::new("chmod")
        .arg("755")
        .arg(&gh)
        .status()
        .expect("chmod");
    let path = std::env::join_paths(std::iter::once(bin.path().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let out = Command::new(BIN)
        .args(["init"])
        .env("PATH", path)
        .current_dir(repo.path())
        .output()
        .expect("run init");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("gh 2.20.2") && err.contains("2.23.0"), "{err}");
    assert!(!repo.path().join("sdlc-config.json").exists());
}

#[test]
fn init_detects_a_github_remote_and_refuses_outside_a_repository() {
    let repo = new_repo();
    git(
        repo.path(),
        &["remote", "add", "origin", "git@github.com:acme/widget.git"],
    );
    let out = runner(&["init", "--config", "runner.json"], repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let body = std::fs::read_to_string(repo.path().join("runner.json")).expect("config");
    assert!(
        body.contains("\"kind\": \"github\"") && body.contains("\"forge\": \"github\""),
        "{body}"
    );
    assert!(
        text(&out.stderr).contains("acme/widget"),
        "{}",
        text(&out.stderr)
    );

    let outside = tempfile::tempdir().expect("tempdir");
    let out = runner(&["init"], outside.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not inside a git repository"),
        "{}",
        text(&out.stderr)
    );
    assert!(!outside.path().join("sdlc-config.json").exists());
}

fn doctor(p: &Project) -> (i32, String) {
    let out = p
        .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("doctor");
    (out.status.code().unwrap_or(-1), text(&out.stdout))
}

fn line<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find(|l| l.get(6..).is_some_and(|rest| rest.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name} line in:\n{report}"))
}

#[test]
fn doctor_passes_a_ready_project_and_names_each_fault_with_its_fix() {
    let p = Project::new(&[(1, "One", "")], json!({}), json!({}));
    let (code, report) = doctor(&p);
    assert_eq!(code, 0, "{report}");
    for name in [
        "config", "project", "agent", "tracker", "remote", "state", "logs", "disk",
    ] {
        assert!(line(&report, name).starts_with("ok "), "{name}: {report}");
    }
    assert!(line(&report, "agent").contains("sdlc-runner"), "{report}");
    assert!(
        line(&report, "tracker").contains("1 issue file(s)"),
        "{report}"
    );

    // Each fault alone makes doctor fail (exit 2), and the line says what to do.
    p.set_config(json!({"agent": {"command": "no-such-agent-binary"}}));
    let (code, report) = doctor(&p);
    assert_eq!(code, 2, "{report}");
    assert!(
        line(&report, "agent").starts_with("fail")
            && line(&report, "agent").contains("fix: install"),
        "{report}"
    );

    p.set_config(json!({}));
    git(
        &p.project,
        &[
            "remote",
            "set-url",
            "origin",
            p.root.join("gone.git").to_str().expect("utf8"),
        ],
    );
    let (code, report) = doctor(&p);
    assert_eq!(code, 2, "{report}");
    assert!(line(&report, "remote").starts_with("fail"), "{report}");
    git(
        &p.project,
        &[
            "remote",
            "set-url",
            "origin",
            p.origin.to_str().expect("utf8"),
        ],
    );

    let elsewhere = p.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("dir");
    std::os::unix::fs::symlink(&elsewhere, p.root.join("logs")).expect("plant link");
    let (code, report) = doctor(&p);
    assert_eq!(code, 2, "{report}");
    assert!(line(&report, "logs").contains("symbolic link"), "{report}");
    std::fs::remove_file(p.root.join("logs")).expect("unlink");

    std::fs::remove_dir_all(&p.issues).expect("rm issues");
    let (code, report) = doctor(&p);
    assert_eq!(code, 2, "{report}");
    assert!(
        line(&report, "tracker").contains("create the directory"),
        "{report}"
    );
}

#[test]
fn doctor_asks_gh_whether_it_is_logged_in_for_the_github_forge() {
    let mut p = Project::new(
        &[],
        json!({}),
        json!({"tracker": {"kind": "github"}, "forge": "github"}),
    );
    let bin = p.root.join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let gh = bin.join("gh");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    p.env.push(("PATH".into(), path));
    let version = "#!/bin/sh\n[ \"$1\" = --version ] && echo 'gh version 2.23.0 (2023-02-27 Debian 2.23.0+dfsg1-1)' && exit 0\n";
    for (script, verdict) in [
        (
            format!("{version}echo 'You are not logged into any GitHub hosts.' >&2\nexit 1\n"),
            "fail",
        ),
        (
            format!("{version}echo 'Logged in to github.com account t'\nexit 0\n"),
            "ok",
        ),
    ] {
        std::fs::write(&gh, script).expect("fake gh");
        Command::new("chmod")
            .arg("755")
            .arg(&gh)
            .status()
            .expect("chmod");
        let (code, report) = doctor(&p);
        let gh_line = line(&report, "gh");
        assert!(gh_line.starts_with(verdict), "{report}");
        if verdict == "fail" {
            assert_eq!(code, 2, "{report}");
            assert!(
                gh_line.contains("not logged into") && gh_line.contains("gh auth login"),
                "{report}"
            );
        } else {
            assert_eq!(code, 0, "{report}");
        }
    }
}

#[test]
fn doctor_refuses_a_gh_older_than_the_minimum_by_name() {
    let mut p = Project::new(
        &[],
        json!({}),
        json!({"tracker": {"kind": "github"}, "forge": "github"}),
    );
    let bin = p.root.join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let gh = bin.join("gh");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    p.env.push(("PATH".into(), path));
    std::fs::write(
        &gh,
        "#!/bin/sh\n[ \"$1\" = --version ] && echo 'gh version 2.20.2 (2022-11-15 Ubuntu 2.20.2+dfsg1-1)' && exit 0\necho 'Logged in to github.com account t'\n",
    )
    .expect("fake gh");
    Command::new("chmod")
        .arg("755")
        .arg(&gh)
        .status()
        .expect("chmod");
    let (code, report) = doctor(&p);
    let gh_line = line(&report, "gh");
    assert_eq!(code, 2, "{report}");
    assert!(gh_line.starts_with("fail"), "{report}");
    assert!(
        gh_line.contains("gh 2.20.2") && gh_line.contains("2.23.0"),
        "the version found and the one needed: {report}"
    );
}

#[test]
fn doctor_on_a_broken_config_fails_naming_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("c.json"),
        r#"{"projectPath": ".", "maxRetriesPerStep": "3"}"#,
    )
    .expect("write");
    let out = runner(&["doctor", "--config", "c.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stdout).contains("maxRetriesPerStep"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn config_check_takes_config_like_every_command_and_the_positional_still_works() {
    let p = Project::new(&[], json!({}), json!({}));
    let config = p.config.to_str().expect("utf8");
    for args in [
        vec!["config", "check", "--config", config],
        vec!["config", "check", config],
    ] {
        let out = p.command(&args).output().expect("check");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains(": ok (schema and values; `sdlc-runner doctor --config"));
    }
    // Without a name, `./sdlc-config.json` (the project's, here) as for every command.
    let neither = p.command(&["config", "check"]).output().expect("check");
    assert_eq!(neither.status.code(), Some(0), "{}", text(&neither.stderr));
    assert!(text(&neither.stdout).starts_with("sdlc-config.json: ok"));
    let both = p
        .command(&["config", "check", "--config", config, config])
        .output()
        .expect("check");
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn completions_cover_every_command_and_bash_parses_them() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = runner(&["completions", shell], Path::new("."));
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        for word in ["doctor", "init", "completions", "log-format", "ack-halt"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("sdlc-runner.bash");
    std::fs::write(
        &file,
        runner(&["completions", "bash"], Path::new(".")).stdout,
    )
    .expect("write");
    let parsed = Command::new("bash")
        .arg("-n")
        .arg(&file)
        .output()
        .expect("bash");
    assert!(parsed.status.success(), "{}", text(&parsed.stderr));
    let bad = runner(&["completions", "tcsh"], Path::new("."));
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn man_prints_a_page_and_writes_one_per_command() {
    let out = runner(&["man"], Path::new("."));
    assert_eq!(out.status.code(), Some(0));
    let page = text(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH sdlc-runner"),
        "{page}"
    );
    assert!(
        page.contains("doctor") && page.contains("completions"),
        "{page}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let out = runner(
        &["man", "--out-dir", dir.path().to_str().expect("utf8")],
        Path::new("."),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for name in [
        "sdlc-runner.1",
        "sdlc-runner-run.1",
        "sdlc-runner-doctor.1",
        "sdlc-runner-init.1",
    ] {
        let body = std::fs::read_to_string(dir.path().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(body.contains(".TH"), "{name}");
    }
    assert!(
        !dir.path().join("sdlc-runner-fake-agent.1").exists(),
        "hidden commands get no page"
    );
    let run_page = std::fs::read_to_string(dir.path().join("sdlc-runner-run.1")).expect("run page");
    assert!(
        run_page.contains("\\-\\-ack\\-halt") || run_page.contains("ack-halt"),
        "{run_page}"
    );
}

#[test]
fn init_never_writes_through_a_symlinked_exclude_file() {
    let repo = new_repo();
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("precious");
    std::fs::write(&target, "precious\n").expect("write");
    let exclude = repo.path().join(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    std::os::unix::fs::symlink(&target, &exclude).expect("plant link");
    let out = runner(&["init"], repo.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("warning: cannot add it to .git/info/exclude"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        "precious\n"
    );
}

#[test]
fn doctor_reads_issue_files_as_run_does_and_counts_a_config_error_once() {
    let p = Project::new(&[(1, "Ready", "")], json!({}), json!({}));
    std::fs::write(
        p.issues.join("2.json"),
        r#"{"number": 2, "title": "no state"}"#,
    )
    .expect("bad issue");
    let (code, report) = doctor(&p);
    assert_eq!(code, 2, "{report}");
    assert!(
        line(&report, "tracker").starts_with("fail") && line(&report, "tracker").contains("2.json"),
        "{report}"
    );
    std::fs::remove_file(p.issues.join("2.json")).expect("rm");
    std::fs::write(
        p.issues.join("2.json"),
        r#"{"number": 2, "title": "later", "state": "open", "labels": ["later"]}"#,
    )
    .expect("unlabelled issue");
    let (code, report) = doctor(&p);
    assert_eq!(code, 0, "{report}");
    assert!(
        line(&report, "tracker").contains("1 selectable")
            && line(&report, "tracker").contains("without the label (never selected): #2"),
        "{report}"
    );

    std::fs::write(
        &p.config,
        r#"{"projectPath": "project", "maxRetriesPerStep": "x"}"#,
    )
    .expect("bad config");
    let out = p
        .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("doctor");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("1 check(s) failed"), "{stderr}");
}
