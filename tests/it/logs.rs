//! End to end: where the runner's logs live, what it refuses to write through, and the disk
//! budget holding while an agent floods its output.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::json;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const MIB: u64 = 1024 * 1024;

fn one_issue(script: serde_json::Value, extra: serde_json::Value) -> Project {
    Project::new(&[(1, "Add a greeting", "Say hello.")], script, extra)
}

/// A file outside the log directory that a planted link points at.
fn outside_file(p: &Project) -> PathBuf {
    let path = p.root.join("outside.txt");
    fs::write(&path, "precious\n").expect("outside file");
    path
}

fn assert_refused(p: &Project, out: &std::process::Output, path: &Path, fix: &str) {
    let all = text(out);
    assert_eq!(code(out), 2, "{all}");
    assert!(
        all.contains(&path.display().to_string()),
        "names {}: {all}",
        path.display()
    );
    assert!(all.contains(fix), "says {fix:?}: {all}");
    assert!(
        p.invocations().is_empty(),
        "no agent ran: {:?}",
        p.invocations()
    );
}

#[test]
fn a_log_dir_that_is_a_symlink_is_refused_before_any_agent_runs() {
    let p = one_issue(json!({}), json!({}));
    let elsewhere = p.root.join("elsewhere");
    fs::create_dir(&elsewhere).expect("dir");
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o755)).expect("chmod");
    let logs = p.root.join("logs");
    symlink(&elsewhere, &logs).expect("symlink");
    let out = p.run(&[]);
    assert_refused(&p, &out, &logs, "remove the link");
    assert_eq!(fs::read_dir(&elsewhere).expect("read").count(), 0);
    assert_eq!(
        fs::metadata(&elsewhere).expect("meta").mode() & 0o777,
        0o755,
        "the link's target is not touched"
    );
}

#[test]
fn a_world_writable_log_dir_is_refused_with_the_chmod_fix() {
    let p = one_issue(json!({}), json!({}));
    let logs = p.root.join("logs");
    fs::create_dir(&logs).expect("dir");
    fs::set_permissions(&logs, fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = p.run(&[]);
    assert_refused(&p, &out, &logs, &format!("chmod 700 {}", logs.display()));
    assert_eq!(fs::metadata(&logs).expect("meta").mode() & 0o777, 0o777);
}

#[test]
fn a_planted_link_at_a_log_file_is_refused_and_its_target_untouched() {
    for name in ["sdlc-runner.log", "implement-live.log"] {
        let p = one_issue(json!({}), json!({}));
        let outside = outside_file(&p);
        let logs = p.root.join("logs");
        fs::create_dir(&logs).expect("dir");
        fs::set_permissions(&logs, fs::Permissions::from_mode(0o700)).expect("chmod");
        let link = logs.join(name);
        symlink(&outside, &link).expect("symlink");
        let out = p.run(&[]);
        assert_refused(&p, &out, &link, "remove it");
        assert_eq!(fs::read_to_string(&outside).expect("read"), "precious\n");
        assert_eq!(fs::metadata(&outside).expect("meta").mode() & 0o777, 0o644);
    }
}

/// `config check` prints the resolved log directory.
fn resolved_log_dir(p: &Project, state: &Path) -> PathBuf {
    let out = p
        .command(&["config", "check", p.config.to_str().expect("utf8")])
        .env("XDG_STATE_HOME", state)
        .output()
        .expect("config check");
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("logs:"))
        .unwrap_or_else(|| panic!("no logs line: {stdout}"));
    PathBuf::from(line.trim())
}

#[test]
fn the_default_log_dir_is_private_per_user_and_per_project() {
    let state = tempfile::tempdir().expect("state dir");
    let state = state.path().canonicalize().expect("canonical");
    // Both projects are called `project`; only their absolute paths differ.
    let a = one_issue(json!({}), json!({"logDir": ""}));
    let b = one_issue(json!({}), json!({"logDir": ""}));
    let dir_a = resolved_log_dir(&a, &state);
    let dir_b = resolved_log_dir(&b, &state);
    assert_ne!(dir_a, dir_b, "same basename, different projects");
    for dir in [&dir_a, &dir_b] {
        assert_eq!(dir.parent(), Some(state.join("sdlc-runner").as_path()));
        let name = dir.file_name().and_then(|n| n.to_str()).expect("name");
        assert!(name.starts_with("project-"), "{name}");
    }
    assert!(
        !dir_a.starts_with(std::env::temp_dir()) || state.starts_with(std::env::temp_dir()),
        "not in the shared temp dir"
    );

    let out = a
        .command(&[
            "run",
            "--config",
            a.config.to_str().expect("utf8"),
            "--dry-run",
        ])
        .env("XDG_STATE_HOME", &state)
        .output()
        .expect("dry run");
    assert_eq!(code(&out), 0, "{}", text(&out));
    for dir in [state.join("sdlc-runner"), dir_a.clone()] {
        assert_eq!(
            fs::metadata(&dir).expect("created").mode() & 0o777,
            0o700,
            "{}",
            dir.display()
        );
    }
}

/// Bytes of every file in `dir` (apparent sizes: what the runner wrote, whatever the file
/// system rounds to). Files vanishing mid-scan are skipped.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

#[test]
fn a_flooding_agent_keeps_the_log_dir_within_budget_and_its_attempt_log_exists() {
    const BUDGET_MB: u64 = 50;
    let p = one_issue(
        json!({"steps": {"implement": ["flood:300"]}}),
        json!({"maxLogDiskUsageMB": BUDGET_MB}),
    );
    let logs = p.root.join("logs");
    // Earlier sessions already filled the budget: room must be made before the flood, oldest
    // first, not after it.
    fs::create_dir(&logs).expect("logs dir");
    fs::set_permissions(&logs, fs::Permissions::from_mode(0o700)).expect("chmod");
    let old: Vec<PathBuf> = (0..9)
        .map(|i| {
            let path = logs.join(format!("verify-old-2020-01-01T00-00-0{i}-a1.log"));
            fs::write(&path, vec![b'o'; 5 * MIB as usize]).expect("old log");
            let file = fs::File::options().write(true).open(&path).expect("open");
            let mtime = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i);
            file.set_modified(mtime).expect("mtime");
            path
        })
        .collect();
    let running = Arc::new(AtomicBool::new(true));
    let sampler = {
        let running = Arc::clone(&running);
        let logs = logs.clone();
        std::thread::spawn(move || {
            let mut peak = 0u64;
            while running.load(Ordering::Relaxed) {
                peak = peak.max(dir_bytes(&logs));
                std::thread::sleep(Duration::from_millis(50));
            }
            peak.max(dir_bytes(&logs))
        })
    };
    let out = p.run(&["--issue", "1"]);
    running.store(false, Ordering::Relaxed);
    let peak = sampler.join().expect("sampler");
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(
        p.count("1 implement 1 flood:300"),
        1,
        "{:?}",
        p.invocations()
    );

    // The live log's rolling tail may overshoot by one tail (a sixteenth of the budget).
    let budget = BUDGET_MB * MIB;
    let allowed = budget + budget / 16;
    assert!(
        peak <= allowed,
        "peak {:.1} MiB over the {BUDGET_MB} MiB budget plus one tail",
        peak as f64 / MIB as f64
    );

    assert!(!old[0].exists(), "the oldest log made room");
    assert!(
        old[8].exists(),
        "the newest old log was not needed: {}",
        old[8].display()
    );

    let attempt_logs: Vec<PathBuf> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| {
            l.split_once("attempt log: ")
                .map(|(_, p)| PathBuf::from(p.trim()))
        })
        .collect();
    assert!(!attempt_logs.is_empty(), "{all}");
    for path in &attempt_logs {
        assert!(
            path.exists(),
            "printed attempt log {} exists",
            path.display()
        );
    }
    let flood = attempt_logs
        .iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains("-implement-a"))
        })
        .expect("implement attempt log");
    let archived = fs::read(flood).expect("read archive");
    let archived = String::from_utf8_lossy(&archived);
    assert!(archived.contains("Step: implement"), "header kept");
    assert!(archived.contains("flood line 0:"), "head kept");
    assert!(archived.contains("bytes dropped"), "the cut is marked");
    assert!(
        archived.contains("\"type\":\"result\""),
        "the final result (tail) kept"
    );
    assert!(
        (archived.len() as u64) < budget / 4,
        "{} bytes",
        archived.len()
    );
}
