//! What an agent leaves and what it is handed, end to end on the real binary: a daemon an
//! agent or a hook detaches (`setsid`) ends with its step and never outlives the run; an issue
//! of any size reaches the agent in full through a file, or is escalated with its size, never
//! taken for a missing agent; a journal record of a kind this runner does not know is refused
//! and kept; a log directory inside the work tree is not taken for the project's changes.

use crate::e2e;

use e2e::{code, survivors, text, Project};
use serde_json::{json, Value};
use std::time::Duration;

fn builtin_steps() -> Value {
    json!({ "steps": e2e::builtin_steps() })
}

/// The pids of `child <pid> of <agent>` lines logged before the first line starting with
/// `until`.
fn children_before(p: &Project, until: &str) -> Vec<i32> {
    p.invocations()
        .iter()
        .take_while(|l| !l.starts_with(until))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            match words.as_slice() {
                ["child", pid, "of", _] => pid.parse().ok(),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn a_detached_daemon_ends_with_its_step_and_none_outlives_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(
        &[(1, "Add x", "Do it.")],
        json!({"steps": {"implement": ["daemon"], "simplify": ["slow:2000"]}}),
        builtin_steps(),
    );
    // A hook that forgets a server of its own, on every push of the builtin steps.
    let hook_pids = p.root.join("hook-daemons");
    let hook = p.project.join(".git/hooks/pre-push");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nsetsid sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> {}\nexit 0\n",
            hook_pids.display()
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let runner = p.spawn(&[]);
    p.wait_for_invocation("1 simplify", Duration::from_secs(60));
    // Both daemons of implement's agent (one with its environment cleared) are gone by the
    // time the next step's agent starts.
    let daemons = children_before(&p, "1 simplify");
    assert_eq!(daemons.len(), 2, "{:?}", p.invocations());
    assert_eq!(
        survivors(&daemons, Duration::from_millis(300)),
        Vec::<i32>::new(),
        "daemons of implement outlived the step"
    );
    let out = e2e::wait_output(runner, Duration::from_secs(120));
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let hooks: Vec<i32> = std::fs::read_to_string(&hook_pids)
        .expect("the hook ran")
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(!hooks.is_empty());
    let mut every: Vec<i32> = p.agent_pids();
    every.extend(&hooks);
    assert_eq!(
        survivors(&every, Duration::from_millis(300)),
        Vec::<i32>::new(),
        "descendants outlived the run\n{all}"
    );
}

/// The runner is killed outright (SIGKILL: no step's end and no run's end run) while an agent's
/// detached daemon runs: the next runner of the work tree stops it before any step, and says
/// so. (A daemon that also cleared its environment is out of reach once its runner is gone.)
#[test]
fn a_daemon_left_by_a_killed_runner_is_stopped_by_the_next_run() {
    let p = Project::new(
        &[(1, "Add x", "Do it.")],
        json!({"steps": {"implement": ["daemon:60000", "ok"]}}),
        builtin_steps(),
    );
    let mut runner = p.spawn(&[]);
    p.wait_for_invocation("child ", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let daemons = children_before(&p, "never");
    assert_eq!(daemons.len(), 2, "{:?}", p.invocations());
    runner.kill().expect("SIGKILL the runner");
    let _ = runner.wait();
    let marked = daemons[0];
    assert_eq!(
        survivors(&[marked], Duration::from_millis(300)),
        vec![marked],
        "the daemon outlives a runner killed outright"
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        all.contains(&format!("stopped pid {marked} "))
            && all.contains("by a runner that was killed"),
        "{all}"
    );
    assert_eq!(
        survivors(&[marked], Duration::from_millis(300)),
        Vec::<i32>::new(),
        "the daemon was stopped by the next run\n{all}"
    );
    // The one with a cleared environment carries no mark: end it here.
    e2e::kill_pids(&daemons[1..]);
}

#[test]
fn an_issue_of_any_size_reaches_the_agent_through_a_file_or_is_escalated_with_its_size() {
    let title = format!("Crash log: {}", "frame at 0x7f00 ".repeat(12_800));
    assert!(title.len() > 200_000);
    let body = "line of a pasted log\n".repeat(15_000);
    assert!(body.len() > 300_000);
    let huge = "x".repeat(1_200_000);
    let p = Project::new(
        &[
            (1, &title, &body),
            (2, "Too much", &huge),
            (3, "Small", "Do it."),
        ],
        json!({}),
        json!({}),
    );
    // Read as it is written: the runner narrates the selected issue's title.
    let config = p.config.to_str().expect("utf8");
    let out = p
        .command(&["run", "--config", config])
        .output()
        .expect("run");
    let all = text(&out);
    let shown: String = all.chars().take(4_000).collect();
    assert!(!all.contains("ENVIRONMENT"), "{shown}");
    assert!(!all.contains("installed and on PATH"), "{shown}");
    // The runner's own lines repeat a readable part of the title, never all of it, and so do
    // its commit and merge messages.
    let longest = all.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest < 2_000,
        "a line of {longest} bytes in the run's output"
    );
    let messages = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    let longest = messages.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest < 1_000,
        "a commit subject of {longest} bytes: {}",
        &messages[..messages.len().min(2_000)]
    );
    // #1 was worked: the prompt stays small and names the file that holds the whole issue.
    let prompt = p.prompt(1, "startIssue", 1).expect("#1 reached the agent");
    assert!(prompt.len() < 4_000, "prompt of {} bytes", prompt.len());
    let file = p.project.join(".git/sdlc-runner/issues/1.md");
    assert!(
        prompt.contains(&file.display().to_string()),
        "the prompt names {}: {prompt}",
        file.display()
    );
    let handed = std::fs::read_to_string(&file).expect("the issue's file");
    assert!(handed.contains(&title) && handed.contains(&body));
    // #2 is over the cap: escalated with its size and the cap, without an attempt.
    let issue2 = p.issue(2);
    assert_eq!(issue2["escalated"], json!(true), "{shown}");
    let note = issue2.to_string();
    assert!(note.contains("1048576"), "{note}");
    assert!(p.prompt(2, "startIssue", 1).is_none());
    // #3 after it was worked.
    let merged = p.origin_main_log();
    assert!(merged.contains("Merge issue #3"), "{merged}\n{shown}");
    assert!(merged.contains("Merge issue #1"), "{merged}\n{shown}");
}

#[test]
fn a_future_journal_record_as_the_last_line_is_refused_and_kept() {
    let p = Project::new(&[(1, "Add x", "Do it.")], json!({}), builtin_steps());
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let journal = p.journal_path();
    let mut bytes = std::fs::read(&journal).expect("journal");
    let line = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
    bytes.extend_from_slice(
        b"{\"v\":2,\"seq\":999999,\"time\":\"2030-01-01T00:00:00Z\",\"session\":\"s\",\"kind\":\"lease\",\"holder\":\"w1\"}\n",
    );
    std::fs::write(&journal, &bytes).expect("append");
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 2, "{all}");
    assert!(
        all.contains(&format!("{}:{line}:", journal.display())),
        "names the file and line {line}: {all}"
    );
    assert!(all.contains("lease"), "{all}");
    assert_eq!(
        std::fs::read(&journal).expect("journal"),
        bytes,
        "unchanged"
    );
}

#[test]
fn a_log_dir_inside_the_work_tree_is_not_the_projects_change() {
    let p = Project::new(
        &[(1, "Add x", "Do it.")],
        json!({}),
        json!({"logDir": "project/logs"}),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    assert!(p.project.join("logs/sdlc-runner.log").is_file());
    let status = e2e::git(&p.project, &["status", "--porcelain", "--ignored=no"]);
    assert!(!status.contains("logs"), "{status}");
    let tracked = e2e::git(&p.origin, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!tracked.contains("logs/"), "{tracked}");
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn on_github_the_issues_comments_reach_the_agent_too() {
    assert!(
        which::which("python3").is_ok(),
        "python3 is not on PATH (tests/fake_gh.py needs it): apt-get install -y python3"
    );
    let mut p = Project::new(
        &[],
        json!({}),
        json!({"tracker": {"kind": "github"}, "forge": "github"}),
    );
    let bin = p.root.join("bin");
    e2e::install_fake_gh(&bin);
    let state = json!({
        "origin": p.origin, "old": false, "labels": ["automatable"], "milestones": [],
        "issues": [{"number": 1, "title": "Add x", "body": "Do it.", "state": "OPEN",
            "labels": ["automatable"], "milestone": null,
            "comments": ["Use the blue one, not the red one."],
            "commentTimes": ["2026-01-01T00:00:00Z"]}],
    });
    std::fs::write(bin.join("state.json"), state.to_string()).expect("state");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(bin.clone()).chain(std::env::split_paths(&path));
    p.env
        .push(("PATH".into(), std::env::join_paths(dirs).expect("PATH")));
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
        p.env.push((var.into(), "http://127.0.0.1:9".into()));
    }
    p.env.push(("GH_TOKEN".into(), "invalid".into()));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let handed = std::fs::read_to_string(p.project.join(".git/sdlc-runner/issues/1.md"))
        .expect("the issue's file");
    assert!(
        handed.contains("Do it.") && handed.contains("Use the blue one, not the red one."),
        "{handed}"
    );
}
