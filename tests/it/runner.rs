//! End to end: the real binary drives real git repositories with the scripted fake agent.
//! Every test is a story from issue 3/4: what the operator runs, what must be left on disk.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::json;
use std::time::Duration;

fn one_issue(script: serde_json::Value) -> Project {
    Project::new(&[(1, "Add a greeting", "Say hello.")], script, json!({}))
}

#[test]
fn a_full_cycle_merges_the_issue_and_cleans_up() {
    let p = one_issue(json!({}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        p.origin_main_log().contains("Merge issue #1"),
        "{}",
        p.origin_main_log()
    );
    assert_eq!(p.issue(1)["state"], "closed");
    // One invocation per step; the local forge's PR is the pushed branch, so createPR is
    // observed as done and not run.
    assert_eq!(p.count("1 "), 9, "{:?}", p.invocations());
    assert_eq!(p.count("1 createPR"), 0);
    assert!(
        !p.claude("auto-mode").exists(),
        "auto-mode flag removed on normal exit"
    );
    assert_eq!(p.branch(), "main");
    let journal = p.journal();
    assert!(
        journal.iter().any(|l| l["kind"] == "sessionEnd"),
        "session ended in the journal"
    );
    // Runner artifacts never show up as changes for the agent to commit.
    let exclude = std::fs::read_to_string(p.project.join(".git/info/exclude")).expect("exclude");
    assert!(exclude.contains("/.claude/sdlc-state.json*"), "{exclude}");
    assert!(
        p.journal_path().is_file(),
        "the journal lives under .git/sdlc-runner"
    );
    assert_eq!(e2e::git(&p.project, &["status", "--porcelain"]), "");
}

#[test]
fn a_step_failing_once_is_retried_with_a_repair_prompt_and_succeeds() {
    let p = one_issue(json!({"steps": {"verify": ["fail-test", "ok"]}}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(p.count("1 verify"), 2, "{:?}", p.invocations());
    assert!(p
        .invocations()
        .iter()
        .any(|l| l.starts_with("1 verify 2 ok")));
    assert!(
        text(&out).contains("(repair)"),
        "second attempt is a repair: {}",
        text(&out)
    );
    assert!(p.origin_main_log().contains("Merge issue #1"));
}

#[test]
fn retries_exhausted_escalate_and_the_next_issue_is_worked() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:implement": ["fail-test-1", "fail-test-2", "fail-test-3"]}}),
        json!({}),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(
        p.count("1 implement"),
        3,
        "distinct failures use every retry: {:?}",
        p.invocations()
    );
    assert_eq!(
        p.issue(1)["escalated"],
        true,
        "durable quarantine in the tracker"
    );
    assert_eq!(
        p.issue(2)["state"],
        "closed",
        "issue 2 merged after issue 1 escalated: {all}"
    );
    // Issue 1 stays open and escalated: nothing is left to do but it is not done either.
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("FAILURE LOOP DETECTED: all issues escalated"),
        "{all}"
    );
}

#[test]
fn two_escalations_halt_leave_everything_in_place_and_the_halt_is_sticky() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", ""), (3, "Third", "")],
        json!({"steps": {"verify": ["fail-test"]}}),
        // Off, so that the escalation streak (not verify's failure streak) is what halts.
        json!({"maxConsecutiveFailures": {"verify": 0}}),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("FAILURE LOOP DETECTED: consecutive escalations"),
        "{all}"
    );
    // Same signature twice in a row escalates before the third retry (maxConsecutiveSameFailure 2).
    assert_eq!(p.count("1 verify"), 2, "{:?}", p.invocations());
    assert_eq!(p.count("2 verify"), 2, "{:?}", p.invocations());
    assert_eq!(p.count("3 "), 0, "the halt comes before issue 3");
    assert!(
        all.contains("TEST_ASSERTION"),
        "diagnostic names the class: {all}"
    );
    assert!(
        all.contains("spent since the last merge"),
        "wasted-work report: {all}"
    );
    // A halt resets, commits and checks out nothing.
    assert!(p.claude("auto-mode").exists(), "auto-mode kept on halt");
    assert!(
        p.claude("sdlc-state.json").exists(),
        "state file kept on halt"
    );
    assert!(
        p.branch().starts_with("2-"),
        "still on issue 2's branch: {}",
        p.branch()
    );
    assert_eq!(p.issue(3)["state"], "open");

    let again = p.run(&[]);
    assert_eq!(code(&again), 1, "sticky halt: {}", text(&again));
    assert!(text(&again).contains("--ack-halt"), "{}", text(&again));
    assert_eq!(p.count("3 "), 0, "a refused run starts no agent");

    // The recorded session replays exactly.
    let journal = p.journal_path();
    let replay = p
        .command(&["replay", journal.to_str().expect("utf8")])
        .output()
        .expect("replay");
    assert_eq!(code(&replay), 0, "{}", text(&replay));

    p.set_script(json!({}));
    let acked = p.run(&["--ack-halt"]);
    assert_eq!(
        code(&acked),
        1,
        "issues 1 and 2 stay quarantined: {}",
        text(&acked)
    );
    assert_eq!(
        p.issue(3)["state"],
        "closed",
        "issue 3 merged after the ack: {}",
        text(&acked)
    );
}

#[test]
fn an_agent_that_is_not_logged_in_halts_after_one_invocation() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"*": ["not-logged-in"]}}),
        json!({}),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert_eq!(p.invocations().len(), 1, "{:?}", p.invocations());
    assert!(all.contains("ENVIRONMENT FAILURE: AUTH"), "{all}");
    assert_eq!(
        p.issue(1)["escalated"],
        false,
        "an environment failure is not the issue's fault"
    );
}

#[test]
fn a_step_failing_across_issues_halts_on_its_consecutive_failure_limit() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"verify": ["fail-test"]}}),
        json!({}),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    // Two same-signature failures escalate issue 1; the third verify failure in a row halts.
    assert!(
        all.contains("FAILURE LOOP DETECTED: max_consecutive_failures:verify:3"),
        "{all}"
    );
    assert_eq!(p.count("2 verify"), 1, "{:?}", p.invocations());
}

#[test]
fn soft_failures_are_failures_and_benign_denials_are_not() {
    for (outcome, class) in [
        ("soft-max-turns", "MAX_TURNS"),
        ("soft-permission", "PERMISSION_DENIED"),
        ("soft-is-error", ""),
    ] {
        let p = one_issue(json!({"steps": {"verify": [outcome, "ok"]}}));
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "{outcome}: {all}");
        assert_eq!(
            p.count("1 verify"),
            2,
            "{outcome} is retried: {:?}",
            p.invocations()
        );
        assert!(
            all.contains(&format!("verify: failed: {class}")),
            "{outcome} → {class}: {all}"
        );
    }
    let p = one_issue(json!({"steps": {"verify": ["benign-permission"]}}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        p.count("1 verify"),
        1,
        "benign denial is success: {:?}",
        p.invocations()
    );
}

#[test]
fn a_precondition_that_keeps_failing_is_a_bounce_loop() {
    let p = one_issue(json!({"steps": {"simplify": ["checkout-main"]}}));
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(
        code(&out),
        1,
        "single-issue escalation ends the run with 1: {all}"
    );
    assert!(
        all.contains("precondition `on feature branch` failed"),
        "{all}"
    );
    assert!(all.contains("bounce loop"), "{all}");
    // maxBounceRetries 3: bounces 1-3 rerun simplify, the 4th exceeds the limit and escalates.
    assert_eq!(p.count("1 simplify"), 4, "{:?}", p.invocations());
}

#[test]
fn single_issue_mode_works_only_that_issue() {
    let p = Project::new(&[(1, "First", ""), (2, "Second", "")], json!({}), json!({}));
    let out = p.run(&["--issue", "2"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(p.issue(2)["state"], "closed");
    assert_eq!(p.issue(1)["state"], "open");
    assert_eq!(p.count("1 "), 0);
}

#[test]
fn single_step_mode_runs_one_step_and_a_failed_precondition_exits_2() {
    let p = one_issue(json!({}));
    let out = p.run(&["--step", "verify"]);
    assert_eq!(
        code(&out),
        2,
        "verify on main: precondition fails, a usage error: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("precondition \"on feature branch\" does not hold"),
        "{}",
        text(&out)
    );
    assert!(p.invocations().is_empty(), "{:?}", p.invocations());
    assert_eq!(p.branch(), "main", "nothing changed");

    let out = p.run(&["--step", "1"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(p.invocations().len(), 1, "{:?}", p.invocations());
    assert!(p.invocations()[0].starts_with("1 startCycle 1"));
}

#[test]
fn bad_config_and_missing_agent_exit_2_before_any_agent_runs() {
    let p = one_issue(json!({}));
    p.set_config(json!({"maxRetriesPerStep": "three"}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 2);
    assert!(text(&out).contains("maxRetriesPerStep"), "{}", text(&out));

    p.set_config(json!({"agent": {"command": "no-such-agent-binary-xyz"}}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 2);
    assert!(
        text(&out).contains("no-such-agent-binary-xyz"),
        "{}",
        text(&out)
    );
    assert!(p.invocations().is_empty());
}

#[test]
fn sigterm_mid_step_saves_work_and_the_next_run_continues() {
    let p = one_issue(json!({"steps": {"verify": ["hang"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 verify 1", Duration::from_secs(60));
    e2e::signal(&child, libc::SIGTERM);
    let out = e2e::wait_output(child, Duration::from_secs(30));
    assert_eq!(code(&out), 0, "signal shutdown exits 0: {}", text(&out));
    assert!(
        !p.claude("auto-mode").exists(),
        "auto-mode removed on signal"
    );
    let state = std::fs::read_to_string(p.claude("sdlc-state.json")).expect("state");
    assert!(state.contains("SIGTERM"), "signal recorded: {state}");

    p.set_script(json!({}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        p.count("1 implement"),
        1,
        "implement not run again: {:?}",
        p.invocations()
    );
    assert!(p.origin_main_log().contains("Merge issue #1"));
    let sessions: std::collections::BTreeSet<String> = p
        .journal()
        .iter()
        .filter_map(|l| l["session"].as_str().map(str::to_string))
        .collect();
    assert_eq!(sessions.len(), 1, "the restart continued the same session");
}

#[test]
fn a_second_runner_on_the_same_project_is_refused_naming_the_first() {
    let p = one_issue(json!({"steps": {"startCycle": ["hang"]}}));
    let child = p.spawn(&[]);
    p.wait_for_invocation("1 startCycle", Duration::from_secs(60));
    let out = p.run(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains(&format!("pid {}", child.id())),
        "{}",
        text(&out)
    );
    e2e::signal(&child, libc::SIGTERM);
    let first = e2e::wait_output(child, Duration::from_secs(30));
    assert_eq!(code(&first), 0, "{}", text(&first));
}

#[test]
fn sigkill_and_restart_keep_every_counter() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["fail-test"], "2:verify": ["fail-test-1", "hang"]}}),
        json!({"maxConsecutiveFailures": {"verify": 0}}),
    );
    let child = p.spawn(&[]);
    p.wait_for_invocation("2 verify 2", Duration::from_secs(60));
    e2e::signal(&child, libc::SIGKILL);
    let _ = e2e::wait_output(child, Duration::from_secs(30));
    kill_hung_agents(&p);
    // Issue 1 escalated before the crash (streak 1). If the restart forgot it, issue 2's
    // escalation would not halt.
    p.set_script(json!({"steps": {"2:verify": ["fail-test-2"]}}));
    let out = p.run(&[]);
    let all = text(&out);
    assert!(
        p.invocations().iter().any(|l| l.starts_with("2 verify 3")),
        "attempt counter kept: {:?}",
        p.invocations()
    );
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("FAILURE LOOP DETECTED: consecutive escalations"),
        "{all}"
    );
}

#[test]
fn manual_approval_pauses_until_decide_answers() {
    let p = one_issue(json!({"steps": {"verify": ["fail-test-1", "fail-test-2", "fail-test-3"]}}));
    p.set_config(json!({"approval": "manual", "maxConsecutiveFailures": {"verify": 0}}));
    let child = p.spawn(&[]);
    let decision = p.project.join(".git/sdlc-runner/decision.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !decision.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no decision file: {:?}",
            p.invocations()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(p.count("1 verify"), 3);
    // The person fixed the cause: the granted attempt succeeds.
    p.set_script(json!({}));
    let answer = p.decide("retry");
    assert_eq!(code(&answer), 0, "{}", text(&answer));
    let out = e2e::wait_output(child, Duration::from_secs(60));
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(p.count("1 verify"), 4, "{:?}", p.invocations());
    // "retry once more" gives the spent attempt back: the granted run is attempt 3 again.
    assert!(
        p.invocations()
            .iter()
            .any(|l| l.starts_with("1 verify 3 ok")),
        "{:?}",
        p.invocations()
    );
    assert!(!decision.exists(), "decision file removed once answered");
}

#[test]
fn an_agent_printing_hundreds_of_megabytes_leaves_the_runner_flat() {
    let mut p = one_issue(json!({"steps": {"implement": ["flood:300"]}}));
    // The runner's own peak, as it reads it at its exit (`VmHWM`, which starts again at its
    // exec). The usage a parent reads with wait4 would also count the pages the fork shared
    // with this test process, which the other tests of this binary make 100 MB and more.
    p.env.push(("SDLC_RUNNER_STATS".into(), "1".into()));
    let out = p.run(&["--issue", "1"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let peak_kib: u64 = stderr
        .lines()
        .filter_map(|l| l.split("vmhwm_kib=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no vmhwm_kib in the stats line:\n{stderr}"));
    assert!(
        peak_kib > 1024,
        "a peak of {peak_kib} KiB cannot be a process's"
    );
    let max_rss_mb = peak_kib / 1024;
    assert!(
        max_rss_mb < 100,
        "peak RSS {max_rss_mb} MB for 300 MB of output"
    );
}

/// After a SIGKILL of the runner, its agent (own process group) is still hanging: stop it
/// the way an operator would.
fn kill_hung_agents(p: &Project) {
    for line in p.invocations() {
        if let Some(pid) = line
            .split_whitespace()
            .nth(4)
            .and_then(|s| s.parse::<i32>().ok())
        {
            // SAFETY: signalling a process group we caused to exist.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

#[test]
fn rate_limits_wait_without_spending_attempts_and_are_capped() {
    let p = one_issue(json!({"steps": {"verify": ["rate-limit"]}}));
    p.set_config(json!({"maxRateLimitWaits": 2}));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: RATE_LIMIT"), "{all}");
    // Every wait re-runs attempt 1: no attempt was spent. 1 + 2 waits, then the halt.
    let verify: Vec<String> = p
        .invocations()
        .into_iter()
        .filter(|l| l.starts_with("1 verify"))
        .collect();
    assert_eq!(verify.len(), 3, "{verify:?}");
    assert!(
        verify
            .iter()
            .all(|l| l.starts_with("1 verify 1 rate-limit")),
        "{verify:?}"
    );
    assert_eq!(p.issue(1)["escalated"], false);
}

#[test]
fn an_issue_over_its_budget_escalates_before_the_next_dispatch() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"costUsd": 0.30}),
        json!({}),
    );
    p.set_config(json!({"budget": {"perIssueUsd": 1.0}}));
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("issue budget"), "{all}");
    // $0.30 per attempt: after three ($0.90) the fourth would exceed $1.00, so it never starts.
    assert_eq!(p.count("1 "), 3, "{:?}", p.invocations());
}

#[test]
fn resume_after_a_kill_at_each_step_finishes_without_redoing_finished_steps() {
    let steps = [
        "startCycle",
        "startIssue",
        "writeSpecs",
        "implement",
        "simplify",
        "verify",
        "commitPush",
        "monitorCI",
        "merge",
    ];
    for (i, step) in steps.iter().enumerate() {
        let p = one_issue(json!({"steps": {*step: ["hang"]}}));
        let child = p.spawn(&[]);
        p.wait_for_invocation(&format!("1 {step} 1"), Duration::from_secs(60));
        e2e::signal(&child, libc::SIGKILL);
        let _ = e2e::wait_output(child, Duration::from_secs(30));
        kill_hung_agents(&p);
        p.set_script(json!({}));
        let out = p.run(&[]);
        assert_eq!(code(&out), 0, "killed at {step}: {}", text(&out));
        assert!(
            p.origin_main_log().contains("Merge issue #1"),
            "killed at {step}"
        );
        for done in &steps[..i] {
            assert_eq!(
                p.count(&format!("1 {done} ")),
                1,
                "killed at {step}: {done} ran again: {:?}",
                p.invocations()
            );
        }
    }
}

#[test]
fn notifications_announce_progress_and_the_halt_with_severities() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"2:startCycle": ["not-logged-in"]}}),
        json!({}),
    );
    let sink = p.root.join("notifications.txt");
    let script = p.root.join("notify.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf '%s %s\\n---\\n' \"$SDLC_SEVERITY\" \"$1\" >> \"$(dirname \"$0\")/notifications.txt\"\n")
        .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    p.set_config(
        json!({"notify": {"command": [script.to_str().expect("utf8")], "minSeverity": "info"}}),
    );
    let out = p.run(&[]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let sent = std::fs::read_to_string(&sink).expect("notifications delivered before exit");
    for needle in [
        "info [INFO] issue #1: verify started (attempt 1)",
        "info [INFO] issue #1: verify finished",
        "info [INFO] issue #1: merged",
        "alert [ALERT] ENVIRONMENT FAILURE: AUTH",
    ] {
        assert!(sent.contains(needle), "missing {needle:?} in:\n{sent}");
    }
}

#[test]
fn by_default_a_channel_gets_warnings_and_alerts_and_the_log_gets_everything() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["fail-test", "ok"], "2:startCycle": ["not-logged-in"]}}),
        json!({}),
    );
    let sink = p.root.join("notifications.txt");
    let script = p.root.join("notify.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf '%s %s\\n---\\n' \"$SDLC_SEVERITY\" \"$1\" >> \"$(dirname \"$0\")/notifications.txt\"\n")
        .expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    p.set_config(json!({"notify": {"command": [script.to_str().expect("utf8")]}}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 1, "{}", text(&out));
    let sent = std::fs::read_to_string(&sink).expect("notifications delivered before exit");
    assert!(
        !sent.contains("info "),
        "no progress chatter in the channel:\n{sent}"
    );
    assert!(
        sent.contains("warning [WARNING] issue #1: verify failed"),
        "{sent}"
    );
    assert!(
        sent.contains("alert [ALERT] ENVIRONMENT FAILURE: AUTH"),
        "{sent}"
    );
    let log = std::fs::read_to_string(p.root.join("logs/sdlc-runner.log")).expect("log");
    assert!(
        log.contains("[INFO] issue #1: verify started (attempt 1) (log only)"),
        "{log}"
    );
}

#[test]
fn dry_run_prints_what_would_run_and_touches_nothing() {
    let p = one_issue(json!({}));
    let out = p.run(&["--dry-run"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        all.contains("would work on issue #1: Add a greeting"),
        "{all}"
    );
    assert!(
        all.contains("step 6 verify:") && all.contains("--dangerously-skip-permissions"),
        "{all}"
    );
    assert!(p.invocations().is_empty());
    assert!(
        !p.project.join(".claude").exists(),
        "a dry run writes nothing into the project"
    );
    assert_eq!(e2e::git(&p.project, &["status", "--porcelain"]), "");
}

#[test]
fn a_broken_tracker_stops_the_run_without_a_sticky_halt() {
    let p = one_issue(json!({}));
    let good = std::fs::read_to_string(p.issues.join("1.json")).expect("issue");
    std::fs::write(p.issues.join("1.json"), "{ not json").expect("break");
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("tracker failed") && all.contains("1.json"),
        "names the file: {all}"
    );
    assert!(p.invocations().is_empty());
    assert!(
        all.contains("sdlc-runner stopped: the issue tracker failed") && !all.contains("HALT"),
        "{all}"
    );
    // The machine's answer, journaled: the run stops, the session stays open.
    let journal = p.journal();
    assert!(
        journal
            .iter()
            .any(|r| r["event"]["event"] == "trackerReadFailed"),
        "{journal:#?}"
    );
    assert!(all.contains("next run continues session"), "{all}");
    std::fs::write(p.issues.join("1.json"), good).expect("repair");
    let out = p.run(&[]);
    let again = text(&out);
    assert_eq!(code(&out), 0, "no --ack-halt needed: {again}");
    assert!(
        again.contains("continuing session"),
        "the same session: {again}"
    );
    assert_eq!(p.issue(1)["state"], "closed");
}

#[test]
fn an_exhausted_usage_window_waits_for_its_reset_without_spending_an_attempt() {
    let p = one_issue(json!({"steps": {"verify": ["quota:2"]}}));
    let child = p.spawn(&["--issue", "1"]);
    p.wait_for_invocation("1 verify 1 quota", Duration::from_secs(60));
    // During the wait the person's plan resets: the next run of the same attempt succeeds.
    p.set_script(json!({}));
    let out = e2e::wait_output(child, Duration::from_secs(60));
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("QUOTA; waiting"), "{all}");
    assert!(
        p.invocations()
            .iter()
            .any(|l| l.starts_with("1 verify 1 ok")),
        "same attempt: {:?}",
        p.invocations()
    );
}

#[test]
fn a_usage_window_resetting_after_the_cap_halts_at_once() {
    let p = one_issue(json!({"steps": {"verify": ["quota:86400"]}}));
    p.set_config(json!({"maxQuotaWaitMinutes": 1}));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: QUOTA"), "{all}");
    assert_eq!(p.count("1 verify"), 1, "{:?}", p.invocations());
    assert_eq!(p.issue(1)["escalated"], false);
}

#[test]
fn a_hung_agent_is_killed_by_the_step_and_idle_timeouts_and_retried() {
    let p =
        one_issue(json!({"steps": {"verify": ["hang", "ok"], "simplify": ["ignore-term", "ok"]}}));
    // 3 s wall clock for verify; 3 s of silence for simplify, whose agent ignores SIGTERM.
    p.set_config(
        json!({"steps": {"verify": {"timeoutMin": 0.05}, "simplify": {"idleTimeoutMin": 0.05}}}),
    );
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("verify: failed: TIMEOUT"), "{all}");
    assert!(all.contains("simplify: failed: IDLE"), "{all}");
    assert_eq!(p.count("1 verify"), 2);
    assert_eq!(p.count("1 simplify"), 2);
    for line in p.invocations() {
        let pid: i32 = line
            .split_whitespace()
            .nth(4)
            .and_then(|s| s.parse().ok())
            .expect("pid");
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive, "agent {line} outlived its attempt");
    }
}

#[test]
fn a_project_that_is_not_a_git_repository_exits_2() {
    let p = one_issue(json!({}));
    std::fs::remove_dir_all(p.project.join(".git")).expect("un-git");
    let out = p.run(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(text(&out).contains("projectPath"), "{}", text(&out));
    assert!(p.invocations().is_empty());
}

#[test]
fn discord_through_openclaw_never_blocks_the_run_even_when_openclaw_hangs_after_sending() {
    let mut p = one_issue(json!({}));
    let bin = p.root.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    // Like the real CLI: reports delivery, then hangs.
    let fake = bin.join("openclaw");
    std::fs::write(
        &fake,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$(dirname \"$0\")/sent.txt\"\necho 'Sent via discord. Message ID: 1'\nexec sleep 600\n",
    )
    .expect("fake openclaw");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    p.env.push(("PATH".into(), path.into()));
    // Every message, so that many deliveries to the hanging CLI are attempted.
    p.set_config(json!({"notify": {"minSeverity": "info"}}));
    let started = std::time::Instant::now();
    let out = p.run(&["--discord-channel", "4242"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "notifications blocked the run: {:?}",
        started.elapsed()
    );
    let sent = std::fs::read_to_string(bin.join("sent.txt")).expect("openclaw was called");
    assert!(
        sent.contains("message send --channel discord --target 4242 -m"),
        "{sent}"
    );
    assert!(sent.contains("issue #1: merged"), "{sent}");
}

#[test]
fn secrets_in_agent_output_never_reach_the_console_or_the_orchestration_log() {
    let p = one_issue(json!({"steps": {"verify": ["leak-secrets"]}}));
    let out = p
        .command(&["run", "--config", p.config.to_str().expect("utf8")])
        .env("SDLC_FAKE_LEAK", "deploy-key-without-prefix")
        .env("MY_DEPLOY_TOKEN", "deploy-key-without-prefix")
        .output()
        .expect("run sdlc-runner");
    let all = text(&out);
    assert!(all.contains("verify: failed"), "{all}");
    let log = std::fs::read_to_string(p.root.join("logs/sdlc-runner.log")).expect("log");
    let journal = std::fs::read_to_string(p.journal_path()).expect("journal");
    assert!(
        journal.contains("\"kind\":\"failure\""),
        "the failure context is journaled"
    );
    for secret in [
        "sk-ant-api03-LeakedLeaked01",
        "ghp_LeakedLeakedLeaked0123",
        "deploy-key-without-prefix",
    ] {
        assert!(!all.contains(secret), "{secret} on the console: {all}");
        assert!(!log.contains(secret), "{secret} in the log: {log}");
        assert!(!journal.contains(secret), "{secret} in the journal");
    }
    assert!(log.contains("ANTHROPIC_API_KEY=***"), "{log}");
}

/// A skill that names a file beside it by a relative path: the prompt says where the skill's
/// directory is, so the agent can open the template.
#[test]
fn a_step_with_a_skill_names_the_skills_directory_in_its_prompt() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
    let plugins = p.root.join("nmg-plugins");
    let skills = plugins.join("plugins/nmg-sdlc/skills");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills");
    copy_dir(&fixture, &skills);
    p.set_config(json!({
        "pluginsPath": plugins.to_str().expect("utf8"),
        "steps": {"writeSpecs": {"skill": "write-spec"}},
    }));
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let prompt = p.prompt(1, "writeSpecs", 1).expect("the writeSpecs prompt");
    let dir = skills.join("write-spec");
    let said = format!("The skill's directory is {}:", dir.display());
    assert!(prompt.contains(&said), "{prompt}");
    assert!(
        prompt.contains("appended to your system prompt"),
        "{prompt}"
    );
    // What the skill links resolves against the directory the prompt names.
    let skill = std::fs::read_to_string(dir.join("SKILL.md")).expect("skill");
    assert!(skill.contains("(templates/requirements.md)"));
    assert!(dir.join("templates/requirements.md").is_file());
    // A step without a skill says nothing of one.
    let plain = p.prompt(1, "implement", 1).expect("the implement prompt");
    assert!(!plain.contains("skill"), "{plain}");
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[test]
fn stderr_narrates_as_json_stamped_text_or_quietly() {
    // JSON: one object per line with ts, level and msg; nothing else on stderr.
    let p = Project::new(&[(1, "First", "")], json!({}), json!({}));
    let out = p.run(&["--log-format", "json"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut lines = 0;
    for line in stderr.lines() {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line:?}"));
        assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{line}");
        assert!(
            ["info", "warn", "error"].contains(&v["level"].as_str().unwrap_or("")),
            "{line}"
        );
        assert!(v["msg"].is_string(), "{line}");
        lines += 1;
    }
    assert!(lines > 10, "{stderr}");
    assert!(stderr.contains("verify: succeeded"), "{stderr}");

    // Not a terminal: every narrated line carries the time.
    let q = Project::new(&[(1, "First", "")], json!({}), json!({}));
    let out = q.run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .all(|l| l.starts_with("[20") && l.contains("Z] ")),
        "{stderr}"
    );

    // Quiet: a clean run says nothing; a halt still shows.
    let r = Project::new(&[(1, "First", "")], json!({}), json!({}));
    let out = r.run(&["-q"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{}", text(&out));
    let s = Project::new(
        &[(1, "First", "")],
        json!({"steps": {"startCycle": ["not-logged-in"]}}),
        json!({}),
    );
    let out = s.run(&["-q"]);
    assert_eq!(code(&out), 1);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("attempt 1"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("ENVIRONMENT FAILURE: AUTH"),
        "{}",
        text(&out)
    );
}

/// An issue title with a newline, a carriage return and escape sequences: no line of the
/// orchestration log is forged by it, and no raw control byte reaches the console or the log.
#[test]
fn a_hostile_title_cannot_forge_log_lines_or_reach_the_terminal_raw() {
    let title = "Greet\n[2026-01-01T00:00:00Z] FORGED issue #9: merged\r\x1b[2K\x1b[31mred\u{9b}2J";
    let p = Project::new(&[(1, title, "Say hello.")], json!({}), json!({}));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let log = std::fs::read_to_string(p.root.join("logs/sdlc-runner.log")).expect("log");
    for (what, body) in [("console", all.as_str()), ("log", log.as_str())] {
        assert!(
            !body
                .lines()
                .any(|l| l.contains("] FORGED") && !l.contains("Greet")),
            "{what} has a forged line:\n{body}"
        );
        assert!(
            !body.contains('\x1b') && !body.contains('\r') && !body.contains('\u{9b}'),
            "{what} has raw control characters: {body:?}"
        );
    }
    assert!(
        log.contains("Greet\\n[2026-01-01T00:00:00Z] FORGED issue #9: merged\\r\\x1b[2K"),
        "the title is shown escaped: {log}"
    );
}

/// An issue deleted from the tracker during its cycle is a person's move, like a close: the
/// cycle is dropped, nothing of it is merged, the run goes on to the next issue and does not
/// halt blaming the tracker.
#[test]
fn an_issue_deleted_from_the_tracker_mid_cycle_is_dropped_not_merged_and_nothing_halts() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::new(
        &[
            (1, "First issue", "Do one thing."),
            (2, "Second", "Then another."),
        ],
        json!({"steps": {"1:implement": ["tool"]}}),
        json!({}),
    );
    let tool = p.root.join("delete-issue");
    std::fs::write(
        &tool,
        format!("#!/bin/sh\nrm -f '{}'\n", p.issues.join("1.json").display()),
    )
    .expect("tool");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = p.run_env(
        &[],
        &[("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8"))],
    );
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [2], "{all}");
    assert!(all.contains("deleted from the tracker"), "{all}");
    assert!(!all.to_lowercase().contains("halt"), "{all}");
}
