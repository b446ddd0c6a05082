use super::*;
use chrono::TimeZone;
use std::fs::{OpenOptions, Permissions};
use std::os::unix::fs::{symlink, PermissionsExt};
use tempfile::TempDir;

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 4, 19, 22, 20, 52).unwrap()
}

fn header(attempt: u32) -> AttemptHeader {
    AttemptHeader {
        issue: 12,
        step_key: "implement".into(),
        session: "e7849e9a-afa".into(),
        attempt,
        started_at: at(),
        exit_code: Some(1),
        signal: None,
        duration: Duration::from_millis(12_345),
        timed_out: true,
        idle_timed_out: false,
        cancelled: false,
        refused_hosts: Vec::new(),
    }
}

fn set_mtime(path: &Path, secs: u64) {
    let file = OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn resolves_the_configured_dir_or_a_per_user_per_project_state_dir() {
    let configured = Logs::resolve(Some(Path::new("/var/log/sdlc")), Path::new("/src/app"));
    assert_eq!(configured.dir, PathBuf::from("/var/log/sdlc"));
    let default = Logs::resolve(None, Path::new("/src/my-app"));
    assert_eq!(default.dir, default_dir(Path::new("/src/my-app")));
    assert!(!default
        .dir
        .starts_with(std::env::temp_dir().join("sdlc-logs")));
    let empty = Logs::resolve(Some(Path::new("")), Path::new("/src/my-app/"));
    assert_eq!(empty.dir, default.dir);

    let project = TempDir::new().unwrap();
    let nested = project.path().join("proj");
    fs::create_dir(&nested).unwrap();
    let dotted = Logs::resolve(None, &nested.join("."));
    assert_eq!(dotted.dir, Logs::resolve(None, &nested).dir);
    let name = dotted.dir.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("proj-"), "{name}");
}

#[test]
fn the_default_dir_of_a_project_never_changes_across_releases() {
    // A changed hash would orphan every project's existing logs.
    let dir = default_dir_in(
        Path::new("/state"),
        Path::new("/nonexistent-sdlc-runner/proj"),
    );
    assert_eq!(dir, Path::new("/state/sdlc-runner/proj-75839301"));
}

#[test]
fn the_default_dir_separates_projects_with_the_same_name() {
    let state = Path::new("/home/u/.local/state");
    let a = default_dir_in(state, Path::new("/src/one/app"));
    let b = default_dir_in(state, Path::new("/src/two/app"));
    assert_ne!(a, b);
    assert_eq!(
        a,
        default_dir_in(state, Path::new("/src/one/app")),
        "stable"
    );
    for dir in [&a, &b] {
        assert_eq!(dir.parent(), Some(state.join("sdlc-runner").as_path()));
        let name = dir.file_name().unwrap().to_str().unwrap();
        let hash = name.strip_prefix("app-").unwrap();
        assert!(
            hash.len() == 8 && hash.chars().all(|c| c.is_ascii_hexdigit()),
            "{name}"
        );
    }
    // The same directory reached by another spelling is the same project.
    let root = TempDir::new().unwrap();
    let real = root.path().join("app");
    fs::create_dir(&real).unwrap();
    let other = root.path().join("x").join("..").join("app");
    fs::create_dir(root.path().join("x")).unwrap();
    assert_eq!(default_dir_in(state, &real), default_dir_in(state, &other));
}

#[test]
fn the_state_home_is_xdg_else_home_never_relative() {
    let os = |s: &str| Some(OsString::from(s));
    assert_eq!(
        state_home_from(os("/x/state"), os("/home/u")),
        Some(PathBuf::from("/x/state"))
    );
    assert_eq!(
        state_home_from(None, os("/home/u")),
        Some(PathBuf::from("/home/u/.local/state"))
    );
    assert_eq!(
        state_home_from(os("relative/state"), os("/home/u")),
        Some(PathBuf::from("/home/u/.local/state"))
    );
    assert_eq!(
        state_home_from(os(""), os("/home/u")),
        Some(PathBuf::from("/home/u/.local/state"))
    );
    assert_eq!(state_home_from(None, None), None);
    assert_eq!(state_home_from(None, os("")), None);
}

#[test]
fn file_names_follow_the_layout() {
    let logs = Logs {
        dir: PathBuf::from("/logs"),
    };
    assert_eq!(
        logs.orchestration_log(),
        PathBuf::from("/logs/sdlc-runner.log")
    );
    assert_eq!(
        logs.live_log("verify"),
        PathBuf::from("/logs/verify-live.log")
    );
    assert_eq!(
        logs.attempt_log(12, "verify", 2, at()),
        PathBuf::from("/logs/12-verify-a2-2026-04-19T22-20-52-000.log")
    );
    // A step key cannot escape the directory.
    let hostile = logs.attempt_log(1, "../../etc/passwd", 1, at());
    assert_eq!(hostile.parent().unwrap(), Path::new("/logs"));
}

#[test]
fn create_makes_a_private_directory() {
    let root = TempDir::new().unwrap();
    let logs = Logs {
        dir: root.path().join("a").join("b"),
    };
    logs.create().unwrap();
    assert_eq!(mode(&logs.dir), 0o700);
    assert_eq!(mode(&root.path().join("a")), 0o700, "parents it made too");
    fs::set_permissions(&logs.dir, Permissions::from_mode(0o755)).unwrap();
    logs.create().unwrap();
    assert_eq!(mode(&logs.dir), 0o700, "an existing dir is tightened too");
}

#[test]
fn create_refuses_a_dir_others_could_tamper_with() {
    let root = TempDir::new().unwrap();
    let real = root.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, Permissions::from_mode(0o755)).unwrap();
    let link = Logs {
        dir: root.path().join("logs"),
    };
    symlink(&real, &link.dir).unwrap();
    let err = link.create().unwrap_err().to_string();
    assert!(
        err.contains("symbolic link") && err.contains("logs"),
        "{err}"
    );
    assert_eq!(mode(&real), 0o755, "the target is not chmod'ed");

    fs::set_permissions(&real, Permissions::from_mode(0o777)).unwrap();
    let open = Logs { dir: real.clone() };
    let err = open.create().unwrap_err().to_string();
    assert!(
        err.contains(&format!("chmod 700 {}", real.display())),
        "{err}"
    );
    assert_eq!(mode(&real), 0o777, "refused, not repaired");
}

/// A created log directory and, beside it, a file a link must never write through.
fn logs_beside_a_precious_file() -> (TempDir, Logs, std::path::PathBuf) {
    let root = TempDir::new().unwrap();
    let outside = root.path().join("outside");
    fs::write(&outside, "precious").unwrap();
    let logs = Logs {
        dir: root.path().join("logs"),
    };
    logs.create().unwrap();
    (root, logs, outside)
}

#[test]
fn create_refuses_a_link_at_a_fixed_log_name() {
    for name in [ORCHESTRATION_LOG, "verify-live.log"] {
        let (_root, logs, outside) = logs_beside_a_precious_file();
        symlink(&outside, logs.dir.join(name)).unwrap();
        let err = logs.create().unwrap_err().to_string();
        assert!(err.contains(name) && err.contains("remove"), "{err}");
    }
    // A link under another name is none of the runner's business.
    let root = TempDir::new().unwrap();
    let logs = Logs {
        dir: root.path().to_path_buf(),
    };
    symlink("/nowhere", root.path().join("latest")).unwrap();
    logs.create().unwrap();
}

#[test]
fn no_log_file_is_written_through_a_link() {
    let (_root, logs, outside) = logs_beside_a_precious_file();
    symlink(&outside, logs.orchestration_log()).unwrap();
    let err = append_line(&logs.orchestration_log(), "x").unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");

    // A link planted at the first free archive name is skipped, not written through.
    let live = logs.live_log("implement");
    fs::write(&live, "out\n").unwrap();
    let first = logs.attempt_log(12, "implement", 1, at());
    symlink(&outside, &first).unwrap();
    let archived = logs.archive_attempt(&header(1), &live).unwrap();
    assert_ne!(archived, first);
    assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
}

#[test]
fn archive_copies_header_and_live_log_and_never_overwrites() {
    let root = TempDir::new().unwrap();
    let logs = Logs {
        dir: root.path().to_path_buf(),
    };
    let live = logs.live_log("implement");
    fs::write(&live, "{\"type\":\"system\"}\nboom on stderr\n").unwrap();

    let first = logs.archive_attempt(&header(1), &live).unwrap();
    assert_eq!(
        first,
        root.path()
            .join("12-implement-a1-2026-04-19T22-20-52-000.log")
    );
    let text = fs::read_to_string(&first).unwrap();
    for expected in [
        "Step: implement\n",
        "Attempt: 1\n",
        "Session: e7849e9a-afa\n",
        "Exit code: 1\n",
        "Signal: none\n",
        "Duration: 12.3s\n",
        "Timed out: yes\n",
        "Killed by runner: yes\n",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    assert!(text.ends_with("---\n\n=== OUTPUT (stdout and stderr, as they arrived) ===\n{\"type\":\"system\"}\nboom on stderr\n"));
    assert_eq!(mode(&first), 0o600);

    // Same step, session, second and attempt: a new file, the old one untouched.
    fs::write(&live, "second run\n").unwrap();
    let second = logs.archive_attempt(&header(1), &live).unwrap();
    assert_ne!(first, second);
    assert!(second.to_str().unwrap().ends_with("-000-2.log"));
    assert!(fs::read_to_string(&first)
        .unwrap()
        .contains("boom on stderr"));
    assert!(fs::read_to_string(&second)
        .unwrap()
        .ends_with("second run\n"));
    assert_eq!(
        logs.attempt_log(12, "implement", 1, at()),
        root.path()
            .join("12-implement-a1-2026-04-19T22-20-52-000-3.log")
    );

    // An agent that never started still leaves an attempt log.
    let missing = logs
        .archive_attempt(&header(2), &root.path().join("nope-live.log"))
        .unwrap();
    assert!(fs::read_to_string(missing).unwrap().contains("(no output:"));
}

#[test]
fn prune_deletes_oldest_step_logs_first_and_spares_the_protected() {
    let root = TempDir::new().unwrap();
    let logs = Logs {
        dir: root.path().to_path_buf(),
    };
    let write = |name: &str, size: usize, mtime: u64| {
        let path = root.path().join(name);
        fs::write(&path, vec![b'x'; size]).unwrap();
        set_mtime(&path, mtime);
        path
    };
    let orchestration = write(ORCHESTRATION_LOG, 10_000, 1);
    let oldest_b = write("b-old.log", 100, 10);
    let oldest_a = write("a-old.log", 100, 10);
    let live = write("verify-live.log", 100, 5);
    let middle = write("middle.log", 100, 20);
    let newest = write("newest.log", 100, 30);
    let other = write("notes.txt", 10_000, 1);

    // 500 bytes of step logs; cap 250 → delete a-old, b-old (same mtime: by name), then
    // middle; the live log is older but kept.
    let deleted = logs.prune(250, std::slice::from_ref(&live)).unwrap();
    assert_eq!(deleted, vec![oldest_a, oldest_b, middle]);
    for kept in [&orchestration, &live, &newest, &other] {
        assert!(kept.exists(), "{} kept", kept.display());
    }
    assert!(logs
        .prune(250, std::slice::from_ref(&live))
        .unwrap()
        .is_empty());
    // Under the cap nothing goes; a cap of 0 removes everything that may be removed.
    assert_eq!(
        logs.prune(0, std::slice::from_ref(&live)).unwrap(),
        vec![newest]
    );
    assert!(live.exists() && orchestration.exists());
}

fn marker_of(text: &str) -> &str {
    let start = text.find("\n[sdlc-runner:").unwrap();
    let end = start + 1 + text[start + 1..].find('\n').unwrap();
    &text[start..=end]
}

#[test]
fn a_live_log_keeps_the_head_a_marker_and_the_last_bytes() {
    let root = TempDir::new().unwrap();
    let path = root.path().join("verify-live.log");
    let cap = LiveCap { head: 10, tail: 8 };
    let mut log = LiveLog::create(&path, cap).unwrap();
    let mut sent = Vec::new();
    let mut largest = 0;
    for i in 0..500u32 {
        let chunk = format!("<{i}>");
        log.write(chunk.as_bytes()).unwrap();
        sent.extend_from_slice(chunk.as_bytes());
        largest = largest.max(fs::metadata(&path).unwrap().len());
    }
    log.finish().unwrap();
    assert!(largest <= cap.peak(), "{largest} > {}", cap.peak());
    let text = fs::read_to_string(&path).unwrap();
    let marker = marker_of(&text);
    let dropped = sent.len() as u64 - 18;
    assert_eq!(log.dropped(), dropped);
    assert!(
        marker.contains(&format!("{dropped} bytes dropped")),
        "{marker}"
    );
    let expected = format!(
        "{}{marker}{}",
        String::from_utf8_lossy(&sent[..10]),
        String::from_utf8_lossy(&sent[sent.len() - 8..])
    );
    assert_eq!(text, expected);
    assert!(text.len() as u64 <= cap.at_rest());
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn a_short_overflow_is_cut_only_when_the_attempt_ends() {
    let root = TempDir::new().unwrap();
    let path = root.path().join("verify-live.log");
    let cap = LiveCap { head: 4, tail: 4 };
    let mut log = LiveLog::create(&path, cap).unwrap();
    // Head, then one byte more than the tail: under the running limit, over the one at rest.
    log.write(b"HEADabcde").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "HEADabcde");
    // The marker is longer than what is dropped: the tail moves towards the end.
    log.finish().unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text, format!("HEAD{}bcde", marker_of(&text)));
    assert!(marker_of(&text).contains(" 1 bytes dropped"));

    // Output that fits is left exactly as written, without a marker.
    let mut small = LiveLog::create(&path, cap).unwrap();
    small.write(b"HEADtail").unwrap();
    small.finish().unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), "HEADtail");
    assert_eq!(small.dropped(), 0);
}

#[test]
fn a_live_log_is_never_opened_through_a_link() {
    let root = TempDir::new().unwrap();
    let outside = root.path().join("outside");
    fs::write(&outside, "precious").unwrap();
    let path = root.path().join("verify-live.log");
    symlink(&outside, &path).unwrap();
    let err = LiveLog::create(&path, LiveCap::for_budget(1 << 20)).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
    // Nor is a link read into an archive.
    let logs = Logs {
        dir: root.path().to_path_buf(),
    };
    let archived = logs.archive_attempt(&header(1), &path);
    assert!(archived.is_err(), "{archived:?}");
}

#[test]
fn the_cap_derives_from_the_budget_and_an_attempt_fits_its_reserve() {
    let mib = 1024 * 1024;
    let cap = LiveCap::for_budget(50 * mib);
    assert_eq!(cap.head, 50 * mib / 16);
    assert_eq!(cap.tail, 50 * mib / 16);
    assert!(cap.reserve() >= cap.peak());
    assert!(cap.reserve() >= 2 * cap.at_rest());
    assert!(cap.reserve() < 50 * mib / 2);
    assert_eq!(LiveCap::for_budget(0).head, 1024);
}

#[test]
fn append_line_creates_a_private_file_and_appends_whole_lines() {
    let root = TempDir::new().unwrap();
    let path = root.path().join(ORCHESTRATION_LOG);
    append_line(&path, "[2026-04-19T22:20:52Z] first").unwrap();
    append_line(&path, "second\n").unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "[2026-04-19T22:20:52Z] first\nsecond\n"
    );
    assert_eq!(mode(&path), 0o600);
    let err = append_line(&root.path().join("missing/dir.log"), "x").unwrap_err();
    assert!(err.to_string().contains("missing/dir.log"), "{err}");
}
