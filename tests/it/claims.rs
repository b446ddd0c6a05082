//! Many runners on one tracker: three runner processes, each with its own clone and
//! `--worker-id`, share one local tracker. Every issue is merged exactly once and no issue is
//! worked by two runners; a runner killed mid-issue leaves a claim that another runner takes
//! over once its lease has expired, finishing the issue from where it stands.

use crate::e2e;

use e2e::{wait_output, Project, BIN};
use serde_json::json;
use std::process::Command;
use std::time::Duration;

fn merges(p: &Project) -> Vec<u32> {
    e2e::merged_issues(&p.origin)
}

/// Agent steps get 0.6 s; builtin steps, which obey their timeoutMin too, get most of the
/// lease (git on a loaded machine, a merge retried after a lost push race), and the lease
/// still outlasts every step.
fn lease(minutes: f64) -> serde_json::Value {
    let builtin = minutes * 0.8;
    json!({"claims": {"leaseMinutes": minutes}, "steps": {
        "startCycle": {"run": "builtin", "timeoutMin": builtin},
        "startIssue": {"timeoutMin": 0.01}, "writeSpecs": {"timeoutMin": 0.01},
        "implement": {"timeoutMin": 0.01}, "simplify": {"timeoutMin": 0.01},
        "verify": {"timeoutMin": 0.01}, "commitPush": {"run": "builtin", "timeoutMin": builtin},
        "createPR": {"run": "builtin", "timeoutMin": builtin},
        "monitorCI": {"run": "builtin", "timeoutMin": builtin},
        "merge": {"run": "builtin", "timeoutMin": builtin},
    }})
}

#[test]
fn three_runners_share_one_tracker_and_no_issue_is_worked_twice() {
    let issues: Vec<(u32, String)> = (1..=6).map(|n| (n, format!("Issue {n}"))).collect();
    let issue_refs: Vec<(u32, &str, &str)> =
        issues.iter().map(|(n, t)| (*n, t.as_str(), "")).collect();
    let p = Project::new(
        &issue_refs,
        json!({"steps": {"implement": ["busy:300"]}}),
        json!({}),
    );
    let extra = lease(5.0);
    let (runners, outs) = p.run_side_by_side(&["a", "b", "c"], &extra, "w");
    let mut all = String::new();
    for o in &outs {
        all.push_str(&String::from_utf8_lossy(&o.stderr));
        all.push_str(&String::from_utf8_lossy(&o.stdout));
    }
    for o in &outs {
        let own = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&o.stdout)
        );
        assert_eq!(o.status.code(), Some(0), "{own}");
    }
    assert_eq!(
        merges(&p),
        vec![1, 2, 3, 4, 5, 6],
        "each merged exactly once: {all}"
    );
    // No issue was worked by two runners: each issue's agent calls are all in one log.
    let per_runner: Vec<Vec<(u32, String)>> = runners
        .iter()
        .map(|r| e2e::invocations_in(&r.agent_log))
        .collect();
    for n in 1..=6u32 {
        let workers: Vec<usize> = per_runner
            .iter()
            .enumerate()
            .filter(|(_, calls)| calls.iter().any(|(i, _)| *i == n))
            .map(|(w, _)| w)
            .collect();
        assert_eq!(
            workers.len(),
            1,
            "issue #{n} worked by runners {workers:?}\n{all}"
        );
    }
    assert!(
        per_runner.iter().filter(|c| !c.is_empty()).count() >= 2,
        "the work was shared: {per_runner:?}"
    );
    assert!(
        all.contains("by other runners") || all.contains("is claimed by worker"),
        "{all}"
    );
    // Every claim was released.
    let left = std::fs::read_dir(p.issues.join(".claims"))
        .expect("claims dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .count();
    assert_eq!(left, 0);
}

#[test]
fn a_killed_runners_issue_is_taken_over_after_its_lease_expires() {
    let p = Project::new(
        &[(1, "Only issue", "")],
        json!({"steps": {"verify": ["hang"]}}),
        json!({}),
    );
    // A lease of 3 s: longer than every step's limit, short enough for a test.
    let extra = lease(0.05);
    let first = p.add_runner("clone-a", &extra);
    let second = p.add_runner("clone-b", &extra);
    let mut a = p.spawn_runner(&first, "wa");
    // Once runner a's agent is inside verify, kill -9 the runner.
    e2e::kill_at_step(&mut a, &first.agent_log, "verify");
    let claim =
        std::fs::read_to_string(p.issues.join(".claims/1.json")).expect("a's claim is left");
    assert!(claim.contains("\"worker\":\"wa\""), "{claim}");
    let status = Command::new(BIN)
        .args(["status", "--config", second.config.to_str().expect("utf8")])
        .current_dir(&p.root)
        .output()
        .expect("status");
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown.contains("claim:    #1 by worker wa until "),
        "{shown}"
    );

    // Runner b sees the live claim at once and finds nothing to do…
    p.set_script(json!({}));
    let early = wait_output(p.spawn_runner(&second, "wb"), Duration::from_secs(60));
    let text = String::from_utf8_lossy(&early.stderr).into_owned();
    assert_eq!(early.status.code(), Some(0), "{text}");
    assert!(
        text.contains("claimed by other runners or wait for them (#1 by wa until"),
        "{text}"
    );
    assert!(merges(&p).is_empty());

    // …and after the lease expired it takes the issue over and finishes it.
    std::thread::sleep(Duration::from_secs(4));
    let late = wait_output(p.spawn_runner(&second, "wb"), Duration::from_secs(120));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&late.stderr),
        String::from_utf8_lossy(&late.stdout)
    );
    assert_eq!(late.status.code(), Some(0), "{text}");
    assert!(text.contains("claimed issue #1 as worker wb"), "{text}");
    assert_eq!(merges(&p), vec![1], "{text}");
}

#[test]
fn a_lease_shorter_than_a_step_is_refused() {
    let p = Project::new(&[(1, "One", "")], json!({}), json!({}));
    let r = p.add_runner("clone-a", &json!({"claims": {"leaseMinutes": 5}}));
    let out = wait_output(p.spawn_runner(&r, "w1"), Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("claims.leaseMinutes (5) must exceed the longest step's timeoutMin"),
        "{text}"
    );
    let bad = Command::new(BIN)
        .args([
            "run",
            "--config",
            r.config.to_str().expect("utf8"),
            "--worker-id",
            "a b",
        ])
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_takeover_continues_from_the_branch_the_killed_runner_pushed() {
    let p = Project::new(
        &[(1, "Only issue", "")],
        json!({"steps": {"monitorCI": ["hang"]}}),
        json!({}),
    );
    let mut extra = lease(0.05);
    // monitorCI by the agent (which hangs), after the builtin commitPush pushed the branch.
    extra["steps"]["monitorCI"] = json!({"timeoutMin": 0.01});
    let first = p.add_runner("clone-a", &extra);
    let second = p.add_runner("clone-b", &extra);
    let mut a = p.spawn_runner(&first, "wa");
    e2e::kill_at_step(&mut a, &first.agent_log, "monitorCI");
    p.set_script(json!({}));
    std::thread::sleep(Duration::from_secs(4));
    let out = wait_output(p.spawn_runner(&second, "wb"), Duration::from_secs(120));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("issue #1: continuing from the pushed branch 1-"),
        "{text}"
    );
    assert_eq!(merges(&p), vec![1], "{text}");
    // Runner a's implementation is in what was merged, under runner b's.
    let merged = e2e::git(&p.origin, &["show", "main:src/issue_1.txt"]);
    assert!(merged.lines().count() >= 2, "both runners' work: {merged}");
}

/// A claim file planted as a symbolic link is never written through: the runner says why and
/// works on nothing, and the link's target is untouched.
#[test]
fn a_claim_planted_as_a_symlink_is_never_written_through() {
    let p = Project::new(&[(1, "One", "")], json!({}), json!({}));
    let outside = p.root.join("precious.json");
    std::fs::write(&outside, "precious\n").expect("write");
    std::fs::create_dir_all(p.issues.join(".claims")).expect("claims dir");
    std::os::unix::fs::symlink(&outside, p.issues.join(".claims/1.json")).expect("plant link");
    let r = p.add_runner("clone-a", &json!({}));
    let out = wait_output(p.spawn_runner(&r, "wa"), Duration::from_secs(60));
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&outside).expect("target"),
        "precious\n"
    );
    assert!(merges(&p).is_empty());
    assert!(e2e::invocations_in(&r.agent_log).is_empty(), "no agent ran");
}

/// A session's limits are its journal's (its counters must replay): one begun without a worker
/// id and continued with one claims nothing, and the runner says so instead of letting the
/// operator believe the issue is protected.
#[test]
fn a_session_begun_without_a_worker_id_says_it_claims_nothing_when_continued_with_one() {
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let crash = [(sdlc_runner::failpoint::CRASH_AT_ENV, "agent spawned")];
    let killed = p.run_env(&[], &crash);
    assert_eq!(killed.status.code(), None, "killed at the crash point");
    let out = p.run_env(&["--worker-id", "wa"], &[]);
    let text = e2e::text(&out);
    assert_eq!(e2e::code(&out), 0, "{text}");
    assert!(
        text.contains("was begun without --worker-id") && text.contains("claims no issue"),
        "{text}"
    );
    assert_eq!(merges(&p), vec![1], "{text}");
    let claimed: Vec<String> = std::fs::read_dir(p.issues.join(".claims"))
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        claimed.is_empty(),
        "no claim was written: {claimed:?} {text}"
    );
}
