//! The README tells the truth about today's binary: its sample outputs (bounds, the demo's
//! session and halt) are what the binary prints now, and its shell blocks that are safe to
//! run (completions and man pages into a fresh home directory) work as written. A change to
//! the output that the README does not follow fails here.

use crate::e2e;

use e2e::BIN;
use std::path::Path;
use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md")
}

/// The fenced block of `lang` that follows the first line containing `marker`.
fn block_after(text: &str, marker: &str, lang: &str) -> Vec<String> {
    let from = text
        .find(marker)
        .unwrap_or_else(|| panic!("README lacks {marker:?}"));
    let fence = format!("```{lang}\n");
    let start = from + text[from..].find(&fence).expect("a block after the marker") + fence.len();
    let end = start + text[start..].find("```").expect("closed block");
    text[start..end].lines().map(str::to_string).collect()
}

/// Every README line (but `…`) is an output line, in the same order.
fn in_order(readme_lines: &[String], output: &str) {
    let out: Vec<&str> = output.lines().collect();
    let mut at = 0;
    for line in readme_lines.iter().filter(|l| l.as_str() != "…") {
        match out[at..].iter().position(|o| o == line) {
            Some(i) => at += i + 1,
            None => panic!(
                "README line not in today's output (in this order):\n{line}\n--- output:\n{output}"
            ),
        }
    }
}

fn demo(dir: &Path, scenario: &str) -> (String, String) {
    let out = Command::new(BIN)
        .args(["demo", "--scenario", scenario, "--dir"])
        .arg(dir)
        .output()
        .expect("demo");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // Off a terminal every narrated line starts with a time stamp `[…] `.
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(
            |l| match l.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                Some((_, rest)) => rest,
                None => l,
            },
        )
        .collect::<Vec<_>>()
        .join("\n");
    (stdout, stderr)
}

#[test]
fn the_bounds_sample_is_todays_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = tmp.path().join("c.json");
    std::fs::write(&config, r#"{"projectPath": "."}"#).expect("config");
    let out = Command::new(BIN)
        .args(["bounds", "--config"])
        .arg(&config)
        .output()
        .expect("bounds");
    let text = String::from_utf8_lossy(&out.stdout);
    in_order(
        &block_after(&readme(), "**Bounds.** With the defaults", "text"),
        &text,
    );

    // `init`'s config: the six model-free steps builtin.
    let builtin = r#"{"run": "builtin"}"#;
    std::fs::write(
        &config,
        format!(
            r#"{{"projectPath": ".", "steps": {{"startCycle": {builtin}, "startIssue": {builtin}, "commitPush": {builtin}, "createPR": {builtin}, "monitorCI": {builtin}, "merge": {builtin}}}}}"#
        ),
    )
    .expect("config");
    let out = Command::new(BIN)
        .args(["bounds", "--config"])
        .arg(&config)
        .output()
        .expect("bounds");
    let text = String::from_utf8_lossy(&out.stdout);
    let figure = |label: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(label))
            .unwrap_or_else(|| panic!("{label} in {text}"))
            .trim()
            .to_string()
    };
    let steps = [
        "step attempts between two successful merges (worst case):",
        "step attempts before a halt when nothing succeeds (worst case):",
        "step attempts in one cycle (worst case):",
    ]
    .map(figure)
    .join(" / ");
    let agent = [
        "agent invocations between two successful merges (worst case):",
        "agent invocations before a halt when nothing succeeds (worst case):",
        "agent invocations in one cycle (worst case):",
    ]
    .map(figure)
    .join(" / ");
    let promised = format!("{steps}\nstep attempts but {agent} agent invocations");
    assert!(
        readme().contains(&promised),
        "README should say: {promised}"
    );
    assert!(
        text.contains("a clean issue: 4 agent invocation(s)"),
        "{text}"
    );
}

#[test]
fn the_demo_samples_are_todays_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let text = readme();

    let dir = tmp.path().join("demo1");
    let (stdout, stderr) = demo(&dir, "lifecycle");
    let dir = dir.canonicalize().expect("demo dir");
    let stderr = stderr.replace(&dir.display().to_string(), "/tmp/demo1");
    in_order(&block_after(&text, "## A session", "text"), &stderr);
    in_order(&block_after(&text, "and on stdout:", "text"), &stdout);
    let promised = "agent calls: 16 for 3 merged issue(s)";
    assert!(text.contains(promised), "the introduction's figure");

    let dir = tmp.path().join("demo2");
    let (stdout, _) = demo(&dir, "failure-loop");
    let dir = dir.canonicalize().expect("demo dir");
    let stdout = stdout.replace(&dir.display().to_string(), "/tmp/demo2");
    in_order(
        &block_after(&text, "A halt's diagnostic (from", "text"),
        &stdout,
    );
    assert!(stdout.contains("agent calls: 11 "), "{stdout}");
    assert!(text.contains("of those 13, 11 were agent\ncalls"));
}

#[test]
fn the_review_demo_answers_a_request_for_changes_and_merges_once_approved() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("demo3");
    let (stdout, stderr) = demo(&dir, "review");
    let dir = dir.canonicalize().expect("demo dir");
    let stderr = stderr.replace(&dir.display().to_string(), "/tmp/demo3");
    in_order(
        &block_after(&readme(), "--scenario review --dir /tmp/demo3", "text"),
        &stderr,
    );
    assert!(
        stdout.contains("demo finished with exit code 0"),
        "{stdout}"
    );
    // The reviewer spoke through the store `sdlc-runner review` writes.
    let reviews = std::fs::read_to_string(dir.join("issues/reviews/1.json")).expect("reviews");
    assert!(
        reviews.contains("requestChanges") && reviews.contains("approve"),
        "{reviews}"
    );
    assert_eq!(e2e::merged_issues(&dir.join("origin.git")), [1], "{stderr}");
}

/// The `sh` blocks after "Shell completions" run as written in a fresh home directory with
/// the binary on PATH as `sdlc-runner`.
#[test]
fn the_completion_and_man_commands_work_on_a_fresh_home() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(BIN, bin.join("sdlc-runner")).expect("link");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let lines = block_after(&readme(), "Shell completions and man pages come from", "sh");
    assert!(lines.iter().any(|l| l.contains("completions bash")));
    for line in &lines {
        let out = Command::new("sh")
            .args(["-c", line])
            .env("HOME", &home)
            .env("PATH", &path)
            .current_dir(&home)
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let completion = home.join(".local/share/bash-completion/completions/sdlc-runner");
    let script = std::fs::read_to_string(&completion).expect("completion written");
    assert!(script.contains("sdlc-runner"), "{script}");
    assert!(home.join(".local/share/man/man1/sdlc-runner.1").is_file());
    // Only what sh runs is in the block: no other shell's line (zsh's needs its own syntax).
    assert!(lines.iter().all(|l| !l.contains("zsh")), "{lines:?}");
}

/// The front door stays a front door and the map a map: the README at most 250 lines (the
/// reference lives in docs/), ARCHITECTURE.md at most 15 kB.
#[test]
fn the_readme_and_the_architecture_map_stay_short() {
    let lines = readme().lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: move reference material into docs/ and link it"
    );
    let map = std::fs::metadata(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md")
        .len();
    assert!(
        map <= 15 * 1024,
        "ARCHITECTURE.md is {map} bytes: keep one line per folder and the invariants; details go beside the code (src/README.md, a folder's README.md, a file's opening doc)"
    );
}
