//! A shared machine with hostile symlinks: a link planted at any path the runner writes must
//! never have it write through to the link's target. Where the runner cannot work without the
//! path it refuses before any agent runs (exit 2, naming the path); elsewhere it replaces the
//! link or does without the file.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::json;
use std::path::{Path, PathBuf};

fn plant(p: &Project, at: &Path) -> PathBuf {
    let target = p.root.join(format!(
        "precious-{}",
        at.file_name().and_then(|n| n.to_str()).unwrap_or("x")
    ));
    std::fs::write(&target, "precious\n").expect("target");
    // A mode other than the runner's 0600, so that `untouched` sees a chmod through the link.
    std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    if let Some(dir) = at.parent() {
        std::fs::create_dir_all(dir).expect("dir");
    }
    std::os::unix::fs::symlink(&target, at).expect("symlink");
    target
}

fn untouched(target: &Path) {
    assert_eq!(
        std::fs::read_to_string(target).expect("target still there"),
        "precious\n",
        "{} was written through a symlink",
        target.display()
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(target).expect("meta").permissions(),
    );
    assert_ne!(mode & 0o777, 0o600, "{} was chmod'ed", target.display());
}

fn project() -> Project {
    Project::new(&[(1, "First", "")], json!({}), json!({}))
}

#[test]
fn links_at_the_journal_and_the_lock_are_refused_before_any_agent_runs() {
    for name in ["journal.jsonl", "lock"] {
        let p = project();
        let at = p.project.join(".git/sdlc-runner").join(name);
        let target = plant(&p, &at);
        let out = p.run(&[]);
        assert_eq!(code(&out), 2, "{name}: {}", text(&out));
        assert!(text(&out).contains(name), "{name}: {}", text(&out));
        assert_eq!(p.count("1 "), 0, "{name}: an agent ran");
        untouched(&target);
    }
}

#[test]
fn a_linked_runner_directory_or_claude_directory_is_refused() {
    let p = project();
    let elsewhere = tempfile::tempdir().expect("tmp");
    std::os::unix::fs::symlink(elsewhere.path(), p.project.join(".git/sdlc-runner"))
        .expect("symlink");
    let out = p.run(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("is a symbolic link"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(elsewhere.path()).expect("dir").count(), 0);

    let q = project();
    let elsewhere = tempfile::tempdir().expect("tmp");
    std::os::unix::fs::symlink(elsewhere.path(), q.project.join(".claude")).expect("symlink");
    let out = q.run(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains(".claude is a symlink"),
        "{}",
        text(&out)
    );
    assert_eq!(q.count("1 "), 0);
    assert_eq!(std::fs::read_dir(elsewhere.path()).expect("dir").count(), 0);
}

#[test]
fn links_at_the_state_file_auto_mode_flag_and_old_journal_are_never_written_through() {
    let p = project();
    let targets: Vec<PathBuf> = [
        p.claude("sdlc-state.json"),
        p.claude("auto-mode"),
        p.claude("sdlc-journal.jsonl"),
    ]
    .iter()
    .map(|at| plant(&p, at))
    .collect();
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(p.origin_main_log().contains("Merge issue #1"));
    for t in &targets {
        untouched(t);
    }
}
