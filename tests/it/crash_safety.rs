//! End-to-end: a runner killed at the wrong moment, an agent that deletes untracked files,
//! a corrupt state file, a quarantined issue, a closed terminal. Each test is one way the
//! runner used to lose or skip work; it runs the real binary on a real git project with the
//! scripted fake agent.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::json;
use std::process::Child;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn one_issue(script: serde_json::Value) -> Project {
    Project::new(&[(1, "First issue", "Do the thing.")], script, json!({}))
}

/// SIGKILL the runner and wait for it.
fn kill9(child: Child) {
    e2e::signal(&child, libc::SIGKILL);
    let _ = e2e::wait_output(child, Duration::from_secs(30));
}

fn sessions(p: &Project) -> usize {
    p.journal()
        .iter()
        .filter(|l| l["kind"] == "sessionStart")
        .count()
}

#[test]
fn a_runner_killed_during_implement_runs_implement_again_on_restart() {
    let p = one_issue(json!({"steps": {"implement": ["slow:60000", "ok"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 implement 1", WAIT);
    kill9(child);

    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        p.invocations()
            .iter()
            .any(|l| l.starts_with("1 implement 2 ok")),
        "implement must run again (its interrupted attempt counted as failed): {:?}",
        p.invocations()
    );
    // The implementation itself reached main, not only the specs.
    e2e::git(&p.project, &["checkout", "--quiet", "main"]);
    e2e::git(&p.project, &["pull", "--quiet", "--ff-only"]);
    assert!(
        p.project.join("src/issue_1.txt").is_file(),
        "merged without its implementation: {}",
        p.origin_main_log()
    );
    let killed = p
        .journal()
        .iter()
        .any(|l| l["event"]["event"] == "start" && l["state"] == "Implement");
    assert!(killed, "the restart was recorded at implement");
    assert_eq!(sessions(&p), 1, "one session across the crash");
}

#[test]
fn no_agent_process_outlives_a_killed_runner() {
    let p = one_issue(json!({"steps": {"verify": ["slow:60000", "ok"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 verify 1", WAIT);
    // Let the agent start its own child.
    let deadline = std::time::Instant::now() + WAIT;
    while !p.invocations().iter().any(|l| l.starts_with("child ")) {
        assert!(std::time::Instant::now() < deadline, "no child logged");
        std::thread::sleep(Duration::from_millis(50));
    }
    let agent: i32 = p
        .invocations()
        .iter()
        .find(|l| l.starts_with("1 verify 1"))
        .and_then(|l| l.split_whitespace().last()?.parse().ok())
        .expect("agent pid");
    kill9(child);
    // The agent itself dies with its runner (parent-death signal), at once.
    assert_eq!(
        e2e::survivors(&[agent], Duration::from_secs(5)),
        Vec::<i32>::new(),
        "the agent survived its runner"
    );

    // Its child is stopped by the next runner, from the journal's record of the group.
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("left by the previous runner"),
        "{}",
        text(&out)
    );
    assert_eq!(
        e2e::survivors(&p.agent_pids(), Duration::from_secs(5)),
        Vec::<i32>::new(),
        "processes of the killed run's agent are still alive"
    );
}

#[test]
fn an_agent_running_git_clean_removes_nothing_of_the_runner() {
    let p = one_issue(json!({"steps": {
        "startCycle": ["git-clean"],
        "startIssue": ["slow:3000"],
    }}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 startIssue 1", WAIT);
    // The lock survived `git clean -fdx`: a second runner is refused.
    let second = p.run(&[]);
    assert_eq!(code(&second), 2, "{}", text(&second));
    assert!(
        text(&second).contains(&format!("pid {}", child.id())),
        "{}",
        text(&second)
    );
    let out = e2e::wait_output(child, WAIT);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(p.origin_main_log().contains("Merge issue #1"));
    // The journal kept every record; status reads the session.
    let journal = p.journal();
    assert!(journal.iter().any(|l| l["kind"] == "sessionEnd"));
    assert_eq!(sessions(&p), 1);
    let status = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    assert!(
        !String::from_utf8_lossy(&status.stdout).contains("none recorded"),
        "{}",
        text(&status)
    );
}

#[test]
fn a_corrupt_state_file_is_rebuilt_without_blaming_an_issue() {
    let p = one_issue(json!({}));
    std::fs::create_dir_all(p.project.join(".claude")).expect("dir");
    std::fs::write(p.claude("sdlc-state.json"), b"{ not json \x00\xff").expect("state");
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(p.origin_main_log().contains("Merge issue #1"));
    assert_eq!(p.issue(1)["escalated"], false);
    assert!(!text(&out).contains("bounce"), "{}", text(&out));
    assert!(
        !p.claude("sdlc-state.json.corrupt-1").exists(),
        "the corrupt copy must not sit in the work tree"
    );
    assert!(p
        .project
        .join(".git/sdlc-runner/archive/sdlc-state.json.corrupt-1")
        .is_file());
    assert_eq!(e2e::git(&p.project, &["status", "--porcelain"]), "");
}

#[test]
fn a_quarantined_issue_is_never_dispatched_again() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["fail-test"]}}),
        json!({"maxConsecutiveEscalations": 1, "maxConsecutiveFailures": {"verify": 0}}),
    );
    let out = p.run(&[]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(p.issue(1)["escalated"], true);
    assert!(
        p.branch().starts_with("1-"),
        "a halt leaves the branch checked out"
    );
    let before = p.count("1 ");

    // --ack-halt starts a new session; git still shows issue 1's branch.
    p.set_script(json!({}));
    let out = p.run(&["--ack-halt"]);
    assert_eq!(
        p.count("1 "),
        before,
        "agent calls on a quarantined issue: {:?}\n{}",
        p.invocations(),
        text(&out)
    );
    assert!(
        p.origin_main_log().contains("Merge issue #2"),
        "{}",
        text(&out)
    );

    // An explicit --issue on it is refused with how to release it.
    let out = p.run(&["--issue", "1"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(text(&out).contains("quarantined"), "{}", text(&out));
    assert!(text(&out).contains("escalated"), "{}", text(&out));
    assert_eq!(p.count("1 "), before);

    // And --issue on an issue that is already merged has nothing to do.
    let out = p.run(&["--issue", "2"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("already closed"), "{}", text(&out));
    assert_eq!(p.count("2 merge"), 1);
}

#[test]
fn sighup_shuts_down_like_sigterm() {
    let p = one_issue(json!({"steps": {"implement": ["slow:60000", "ok"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 implement 1", WAIT);
    e2e::signal(&child, libc::SIGHUP);
    let out = e2e::wait_output(child, Duration::from_secs(30));
    assert_eq!(code(&out), 0, "SIGHUP is a clean shutdown: {}", text(&out));
    assert!(!p.claude("auto-mode").exists(), "auto-mode removed");
    let state = std::fs::read_to_string(p.claude("sdlc-state.json")).expect("state");
    assert!(state.contains("SIGHUP"), "{state}");
    assert_eq!(
        e2e::survivors(&p.agent_pids(), Duration::from_secs(5)),
        Vec::<i32>::new(),
        "the agent was stopped"
    );
    // A shutdown is not a failure: the interrupted attempt runs again as attempt 1.
    p.set_script(json!({}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(sessions(&p), 1, "the next run continued the session");
}

#[test]
fn a_runner_crashing_in_the_same_step_halts_within_its_retries_without_blaming_the_issue() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["slow:60000"]}}),
        json!({"maxConsecutiveSameFailure": 0, "maxConsecutiveFailures": {"verify": 0}}),
    );
    let mut kills = 0;
    loop {
        let child = p.spawn(&[]);
        let attempt = kills + 1;
        let prefix = format!("1 verify {attempt} ");
        let deadline = std::time::Instant::now() + WAIT;
        let mut reached = false;
        let mut finished = None;
        let mut child = Some(child);
        while std::time::Instant::now() < deadline {
            if p.count(&prefix) > 0 {
                reached = true;
                break;
            }
            if let Some(c) = child.as_mut() {
                if c.try_wait().expect("try_wait").is_some() {
                    finished = child.take();
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Some(c) = finished {
            let out = c.wait_with_output().expect("output");
            // The runner's own deaths are not issue 1's failures: the session halts naming
            // them, and issue 1 is not quarantined.
            assert_eq!(code(&out), 1, "{}", text(&out));
            assert!(
                text(&out).contains("ENVIRONMENT FAILURE: RUNNER KILLED"),
                "{}",
                text(&out)
            );
            assert!(
                text(&out).contains("cut short by the runner's own death"),
                "{}",
                text(&out)
            );
            break;
        }
        assert!(
            reached,
            "attempt {attempt} never started: {:?}",
            p.invocations()
        );
        kill9(child.take().expect("running"));
        kills += 1;
        assert!(
            kills <= 3,
            "more crashes than maxRetriesPerStep: {:?}",
            p.invocations()
        );
    }
    assert_eq!(kills, 3, "{:?}", p.invocations());
    assert_ne!(
        p.issue(1)["escalated"],
        true,
        "three crashed attempts never quarantine the issue"
    );
}

#[test]
fn one_session_across_issue_mode_and_plain_run() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:implement": ["slow:60000", "ok"]}}),
        json!({}),
    );
    let child = p.spawn(&["--issue", "1"]);
    p.wait_for_invocation("1 implement 1", WAIT);
    kill9(child);

    // A plain run continues the interrupted session and its counters.
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(sessions(&p), 1, "{}", text(&out));
    assert!(p.count("1 implement 2") == 1, "{:?}", p.invocations());
    assert!(p.origin_main_log().contains("Merge issue #1"));
    assert!(p.origin_main_log().contains("Merge issue #2"));

    // The reverse: a plain run killed, then --issue N continues it too.
    let q = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["slow:60000", "ok"]}}),
        json!({}),
    );
    let child = q.spawn(&[]);
    q.wait_for_invocation("1 verify 1", WAIT);
    kill9(child);
    let out = q.run(&["--issue", "1"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(sessions(&q), 1, "{}", text(&out));
    assert_eq!(q.count("1 verify 2"), 1, "{:?}", q.invocations());
    assert_eq!(q.count("2 "), 0, "--issue 1 works only issue 1");
}

#[test]
fn a_step_mode_restart_counts_the_attempt_the_crash_interrupted() {
    // A plain run killed in verify; `--step verify` continues the session: the interrupted
    // attempt is verify's failure (as on any restart in single-step mode, the run then ends
    // with 1), never silently forgotten.
    let p = one_issue(json!({"steps": {"verify": ["slow:60000", "ok"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 verify 1", WAIT);
    kill9(child);
    let before = p.invocations().len();
    let out = p.run(&["--step", "verify"]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert_eq!(p.invocations().len(), before, "{:?}", p.invocations());
    assert!(text(&out).contains("KILLED"), "{}", text(&out));
    assert_eq!(sessions(&p), 1, "{}", text(&out));

    // The reverse: `--step implement` killed mid-agent, then a plain run continues it.
    let q = one_issue(json!({"steps": {"implement": ["slow:60000", "ok"]}}));
    let out = q.run(&["--step", "startCycle"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = q.run(&["--step", "startIssue"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = q.run(&["--step", "writeSpecs"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let child = q.spawn(&["--step", "implement"]);
    q.wait_for_invocation("1 implement 1", WAIT);
    kill9(child);
    let out = q.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("now as a run of every issue (was run --step implement)"),
        "the killed --step run's session is continued: {}",
        text(&out)
    );
    assert_eq!(q.count("1 implement 2"), 1, "{:?}", q.invocations());
    assert!(q.origin_main_log().contains("Merge issue #1"));
}

#[test]
fn a_repair_attempt_after_a_restart_still_has_the_failure_context() {
    let script = json!({"steps": {"verify": ["fail-test", "ok"]}});
    // Where the verify failure is recorded, in a run that is not killed.
    let probe = one_issue(script.clone());
    let (out, points) = probe.crash_points();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let recorded: u64 = points
        .iter()
        .find(|(_, label)| label == "StepFailed")
        .map(|(n, _)| *n)
        .expect("a recorded StepFailed");

    // The same session, killed right after the failure was recorded.
    let p = one_issue(script);
    p.killed_at(&(recorded + 1).to_string());
    assert_eq!(p.count("1 verify 2"), 0, "killed before the repair attempt");
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let prompt = p.prompt(1, "verify", 2).expect("the repair attempt ran");
    assert!(
        prompt.contains("The previous attempt of this step failed (TEST_ASSERTION)"),
        "the repair prompt lost its context: {prompt}"
    );
}

#[test]
fn a_closed_stdout_and_stderr_never_stop_the_run() {
    let p = one_issue(json!({}));
    let mut child = p.spawn(&[]);
    // Whoever read the runner's output went away (a closed terminal, `| head`).
    drop(child.stdout.take());
    drop(child.stderr.take());
    let out = e2e::wait_output(child, WAIT);
    assert_eq!(code(&out), 0, "a broken pipe must not end the run");
    assert!(p.origin_main_log().contains("Merge issue #1"));
    let log = std::fs::read_to_string(p.root.join("logs/sdlc-runner.log")).expect("log");
    assert!(
        log.contains("issue #1: merged"),
        "the log still got every line: {log}"
    );
}

#[test]
fn a_journal_removed_during_the_run_halts_and_the_halt_sticks() {
    let p = one_issue(json!({"steps": {"verify": ["slow:1500"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 verify 1", WAIT);
    std::fs::remove_file(p.journal_path()).expect("remove the journal");
    let out = e2e::wait_output(child, WAIT);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(
        text(&out).contains("ENVIRONMENT FAILURE: RUNNER STATE LOST"),
        "{}",
        text(&out)
    );
    assert_eq!(
        p.count("1 commitPush"),
        0,
        "nothing was done after the loss"
    );
    // The journal was restored with every record and the halt, so the halt is sticky.
    assert!(p.journal().iter().any(|l| l["kind"] == "sessionStart"));
    let again = p.run(&[]);
    assert_eq!(code(&again), 1, "{}", text(&again));
    assert!(text(&again).contains("--ack-halt"), "{}", text(&again));
}

#[test]
fn a_lock_removed_during_the_run_halts_before_a_second_runner_can_collide() {
    let p = one_issue(json!({"steps": {"verify": ["slow:1500"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 verify 1", WAIT);
    std::fs::remove_file(p.project.join(".git/sdlc-runner/lock")).expect("remove the lock");
    let out = e2e::wait_output(child, WAIT);
    assert_eq!(code(&out), 1, "{}", text(&out));
    assert!(text(&out).contains("lock"), "{}", text(&out));
    assert!(
        text(&out).contains("ENVIRONMENT FAILURE: RUNNER STATE LOST"),
        "{}",
        text(&out)
    );
    assert_eq!(p.count("1 commitPush"), 0);
}

#[test]
fn a_journal_of_the_old_layout_is_migrated_and_its_session_continued() {
    let p = one_issue(json!({"steps": {"implement": ["slow:60000", "ok"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 implement 1", WAIT);
    kill9(child);
    // As an older runner left it.
    std::fs::create_dir_all(p.project.join(".claude")).expect("dir");
    std::fs::rename(p.journal_path(), p.claude("sdlc-journal.jsonl")).expect("move");
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("journal migrated"), "{}", text(&out));
    assert!(!p.claude("sdlc-journal.jsonl").exists());
    assert_eq!(sessions(&p), 1, "the old journal's session continued");
    assert_eq!(p.count("1 implement 2"), 1, "{:?}", p.invocations());
}

#[test]
fn a_runner_killed_while_migrating_the_old_journal_loses_nothing() {
    for point in [
        "migration: journal copied",
        "migration: old journal removed",
    ] {
        let p = one_issue(json!({"steps": {"implement": ["slow:60000", "ok"]}}));
        let child = p.spawn(&[]);
        p.wait_for_invocation("1 implement 1", WAIT);
        kill9(child);
        std::fs::create_dir_all(p.project.join(".claude")).expect("dir");
        std::fs::rename(p.journal_path(), p.claude("sdlc-journal.jsonl")).expect("move");

        p.killed_at(point);
        assert!(p.journal_path().exists(), "copied before {point}");
        assert_eq!(
            p.claude("sdlc-journal.jsonl").exists(),
            point == "migration: journal copied",
            "the old journal is removed only after the copy"
        );

        let out = p.run(&[]);
        assert_eq!(code(&out), 0, "after a crash at {point}: {}", text(&out));
        assert_eq!(sessions(&p), 1, "the old journal's session continued");
        assert_eq!(p.count("1 implement 2"), 1, "{:?}", p.invocations());
        assert!(p.origin_main_log().contains("Merge issue #1"));
    }
}

#[test]
fn status_tells_a_running_runner_from_one_that_died() {
    let p = one_issue(json!({"steps": {"verify": ["slow:60000", "ok"]}}));
    let status = || {
        let out = p
            .command(&["status", "--config", p.config.to_str().expect("utf8")])
            .output()
            .expect("status");
        text(&out)
    };
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 verify 1", WAIT);
    let pid = child.id();
    assert!(
        status().contains(&format!("running (pid {pid})")),
        "{}",
        status()
    );
    kill9(child);
    assert!(status().contains("died"), "{}", status());
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(status().contains("runner:   not running\n"), "{}", status());

    let missing = p
        .command(&["replay", "/nonexistent/journal.jsonl"])
        .output()
        .expect("replay");
    assert_eq!(code(&missing), 2, "{}", text(&missing));
}

#[test]
fn a_journal_record_of_a_newer_format_stops_the_runner_and_is_kept() {
    let p = one_issue(json!({"steps": {"implement": ["slow:60000", "ok"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 implement 1", WAIT);
    kill9(child);
    // A newer runner took over, wrote a record of a format this one does not know, and died.
    let mut bytes = std::fs::read(p.journal_path()).expect("journal");
    let last: serde_json::Value = p.journal().pop().expect("a record");
    let seq = last["seq"].as_u64().expect("seq") + 1;
    let newer = json!({"v": 3, "seq": seq, "time": "2026-01-01T00:00:00.000Z",
        "session": last["session"], "kind": "mergeLease", "holder": "w2"});
    bytes.extend_from_slice(format!("{newer}\n").as_bytes());
    std::fs::write(p.journal_path(), &bytes).expect("write");

    let out = p.run(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("format 3"), "{}", text(&out));
    assert_eq!(
        std::fs::read(p.journal_path()).expect("journal"),
        bytes,
        "the journal is left untouched"
    );
    assert_eq!(p.count("1 implement 2"), 0, "no agent ran");
    // What the killed runner's agent left (its `sleep`) is stopped all the same.
    assert!(text(&out).contains("left running in"), "{}", text(&out));
    assert_eq!(
        e2e::survivors(&p.agent_pids(), Duration::from_secs(5)),
        Vec::<i32>::new(),
        "processes of the killed run's agent are still alive"
    );
}

#[test]
fn a_runner_killed_after_closing_a_merged_issue_tells_the_tracker_again_and_goes_on() {
    let p = Project::new(
        &[
            (1, "First issue", "Do it."),
            (2, "Second issue", "Then this."),
        ],
        json!({}),
        json!({}),
    );
    // Killed right after the tracker closed #1, before its answer was journaled: the journal
    // holds the merge, and its PR shows merged.
    p.killed_at("tracker: closed");
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        !text(&out).contains("internal error"),
        "the continued session must tell the tracker, not stop: {}",
        text(&out)
    );
    assert_eq!(p.count("1 merge"), 1, "#1 merged once");
    assert_eq!(p.count("2 merge"), 1, "#2 merged after it");
    assert_eq!(sessions(&p), 1, "one session across the crash");
}
