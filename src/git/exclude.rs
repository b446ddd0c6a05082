//! The runner's lines in the clone's `info/exclude`: every runner artifact kept out of git
//! where no agent command (`git clean`, `git checkout`) can undo it, and artifacts a project
//! once committed untracked.

use crate::artifacts::{exclude_patterns, is_runner_artifact, ARTIFACT_DIR};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Keeps the artifacts out of git through `.git/info/exclude`, which no agent command
/// (`git clean -fd`, `git checkout -- .`) can delete or revert, unlike a `.gitignore`
/// (docs/design-notes.md). Artifacts a project once committed are removed from the index
/// (the file on disk stays). Idempotent.
pub fn exclude_artifacts(project: &Path) -> io::Result<()> {
    let patterns: Vec<String> = exclude_patterns().collect();
    add_excludes(
        project,
        &patterns,
        "# sdlc-runner artifacts (with their temporary and renamed copies)",
    )?;
    let tracked = git_stdout(project, &["ls-files", "-z", "--", ARTIFACT_DIR])?;
    let tracked: Vec<&str> = tracked
        .split('\0')
        .filter(|p| is_runner_artifact(p))
        .collect();
    if !tracked.is_empty() {
        let mut args = vec!["rm", "--cached", "--quiet", "--"];
        args.extend(tracked);
        git_stdout(project, &args)?;
    }
    Ok(())
}

/// The clone's `info/exclude` file (`--git-path` resolves worktrees and submodules too).
pub fn exclude_file(project: &Path) -> io::Result<PathBuf> {
    let exclude = PathBuf::from(git_stdout(
        project,
        &["rev-parse", "--git-path", "info/exclude"],
    )?);
    Ok(if exclude.is_absolute() {
        exclude
    } else {
        project.join(exclude)
    })
}

/// The exclude file and the `patterns` it lacks.
pub fn missing_excludes(project: &Path, patterns: &[String]) -> io::Result<(PathBuf, Vec<String>)> {
    let exclude = exclude_file(project)?;
    let existing = match fs::read_to_string(&exclude) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let present: Vec<&str> = existing.lines().map(str::trim).collect();
    let missing = patterns
        .iter()
        .filter(|p| !present.contains(&p.as_str()))
        .cloned()
        .collect();
    Ok((exclude, missing))
}

/// Appends the `patterns` the exclude file lacks under a `heading` comment, never through a
/// symbolic link; returns how many it added.
pub fn add_excludes(project: &Path, patterns: &[String], heading: &str) -> io::Result<usize> {
    let (exclude, missing) = missing_excludes(project, patterns)?;
    if missing.is_empty() {
        return Ok(0);
    }
    if let Some(parent) = exclude.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
        .open(&exclude)?;
    let ends_open = f.metadata()?.len() > 0 && {
        use std::io::{Read, Seek, SeekFrom};
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        last[0] != b'\n'
    };
    let mut text = String::new();
    if ends_open {
        text.push('\n');
    }
    text.push_str(heading);
    text.push('\n');
    for p in &missing {
        text.push_str(p);
        text.push('\n');
    }
    f.write_all(text.as_bytes())?;
    crate::stats::fsynced();
    f.sync_all()?;
    Ok(missing.len())
}

fn git_stdout(dir: &Path, args: &[&str]) -> io::Result<String> {
    let out = crate::git::command::output(dir, args)?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{create_auto_mode, STATE_FILE};
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn git_repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        git(d.path(), &["init", "-q", "-b", "main"]);
        git(d.path(), &["config", "user.email", "t@example.com"]);
        git(d.path(), &["config", "user.name", "t"]);
        d
    }

    #[test]
    fn exclude_is_idempotent_and_untracks_committed_artifacts() {
        let d = git_repo();
        let p = d.path();
        fs::create_dir_all(p.join(".claude")).unwrap();
        fs::write(p.join(STATE_FILE), "{}").unwrap();
        fs::write(p.join(".claude/settings.json"), "{}").unwrap();
        git(p, &["add", "-A"]);
        git(p, &["commit", "-qm", "init"]);

        exclude_artifacts(p).unwrap();
        exclude_artifacts(p).unwrap();
        let exclude = fs::read_to_string(p.join(".git/info/exclude")).unwrap();
        for pattern in exclude_patterns() {
            assert_eq!(
                exclude.matches(&format!("{pattern}\n")).count(),
                1,
                "{exclude}"
            );
        }
        let tracked = git_out(p, &["ls-files"]);
        assert!(!tracked.contains("sdlc-state.json"), "{tracked}");
        assert!(tracked.contains(".claude/settings.json"));
        assert!(p.join(STATE_FILE).is_file(), "the file on disk stays");

        git(p, &["commit", "-qm", "untrack"]);
        create_auto_mode(p).unwrap();
        // Every file an older runner or a crash could leave in .claude/ is excluded too.
        for name in [
            "sdlc-journal.jsonl",
            "sdlc-runner.lock",
            "sdlc-decision.json",
            "sdlc-state.json.corrupt-1",
            ".sdlc-state.json.abc123.tmp",
            "auto-mode.bak",
        ] {
            fs::write(p.join(".claude").join(name), "{}\n").unwrap();
            assert!(is_runner_artifact(&format!(".claude/{name}")), "{name}");
        }
        assert!(!is_runner_artifact(".claude/settings.json"));
        assert!(!is_runner_artifact("sub/.claude/sdlc-state.json"));
        assert_eq!(
            git_out(p, &["status", "--porcelain", "--untracked-files=all"]),
            ""
        );
    }

    fn git_out(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }
}
