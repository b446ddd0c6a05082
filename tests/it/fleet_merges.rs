//! Merges in a fleet: one merge at a time across the workers of `run --workers N` and across
//! runners sharing one tracker (the merge lease), the branch brought up to date with main
//! before it merges, and a lost push race taken as contention rather than a failed attempt.
//! The merges here are the agent's (the default): the fake agent checks out main, pulls,
//! merges and pushes, as a model would.

use crate::e2e;

use e2e::{merged_issues, text, wait_output, Project};
use serde_json::json;
use std::time::Duration;

fn six() -> Vec<(u32, String)> {
    (1..=6).map(|n| (n, format!("Issue {n}"))).collect()
}

fn refs(issues: &[(u32, String)]) -> Vec<(u32, &str, &str)> {
    issues.iter().map(|(n, t)| (*n, t.as_str(), "")).collect()
}

/// No issue of the tracker was marked escalated.
fn none_escalated(p: &Project, issues: &[(u32, String)]) -> Vec<u32> {
    issues
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| p.issue(*n)["escalated"] == json!(true))
        .collect()
}

/// The agent's merge attempts of each issue (`<issue> merge <attempt> …` lines).
fn merge_attempts(log: &[(u32, String)], issue: u32) -> usize {
    log.iter()
        .filter(|(n, s)| *n == issue && s == "merge")
        .count()
}

#[test]
fn three_workers_with_agent_merges_merge_all_six_without_blaming_any() {
    let issues = six();
    // Every issue reaches its merge at about the same time: the pushes would race.
    let p = Project::new(&refs(&issues), json!({}), json!({}));
    let out = p.run(&["--workers", "3"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(
        merged_issues(&p.origin),
        (1..=6).collect::<Vec<_>>(),
        "{all}"
    );
    assert!(none_escalated(&p, &issues).is_empty(), "{all}");
    assert!(!all.contains("ESCALAT"), "{all}");
    assert!(!all.contains("all issues escalated"), "{all}");
    let log = e2e::invocations_in(&p.agent_log);
    for n in 1..=6 {
        assert_eq!(merge_attempts(&log, n), 1, "#{n}: one merge call\n{all}");
    }
}

#[test]
fn three_runners_with_agent_merges_on_one_tracker_merge_all_six() {
    let issues = six();
    let p = Project::new(&refs(&issues), json!({}), json!({}));
    let extra = json!({"claims": {"leaseMinutes": 60}});
    let (runners, outs) = p.run_side_by_side(&["a", "b", "c"], &extra, "r");
    let all: String = outs.iter().map(text).collect();
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", text(o));
    }
    assert_eq!(
        merged_issues(&p.origin),
        (1..=6).collect::<Vec<_>>(),
        "{all}"
    );
    assert!(none_escalated(&p, &issues).is_empty(), "{all}");
    let per_runner: Vec<_> = runners
        .iter()
        .map(|r| e2e::invocations_in(&r.agent_log))
        .collect();
    for n in 1..=6 {
        let calls: usize = per_runner.iter().map(|l| merge_attempts(l, n)).sum();
        assert_eq!(calls, 1, "#{n}: one merge call\n{all}");
    }
}

/// Someone outside the merge lease pushes to main while a worker merges: the worker's push is
/// rejected. That is contention, not the issue's failure: main is refreshed and the merge done
/// again within the same attempt, so even one allowed attempt is enough.
#[test]
fn a_worker_that_loses_the_push_race_merges_again_without_spending_an_attempt() {
    let issues: Vec<(u32, String)> = (1..=2).map(|n| (n, format!("Issue {n}"))).collect();
    let p = Project::new(
        &refs(&issues),
        json!({"steps": {"merge": ["lose-race-once"]}}),
        json!({"maxRetriesPerStep": 1}),
    );
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(none_escalated(&p, &issues).is_empty(), "{all}");
    assert!(all.contains("the merge lost a push race"), "{all}");
    assert!(!all.contains("retrying as attempt 2"), "{all}");
    let calls = p.invocations();
    for n in 1..=2 {
        let merges: Vec<&String> = calls
            .iter()
            .filter(|l| l.starts_with(&format!("{n} merge ")))
            .collect();
        assert_eq!(merges.len(), 2, "lost once, merged once: {merges:?}\n{all}");
        assert!(
            merges
                .iter()
                .all(|l| l.starts_with(&format!("{n} merge 1 "))),
            "both within attempt 1: {merges:?}"
        );
    }
    // Both foreign commits and both merges are on origin's main.
    let files = e2e::git(&p.origin, &["ls-tree", "--name-only", "main"]);
    assert!(
        files.contains("elsewhere-1.txt") && files.contains("elsewhere-2.txt"),
        "{files}"
    );
}

/// A worker with nothing to take (the only other issue is escalated) while another worker
/// still holds an issue finishes; it does not call "all issues escalated" and stop the fleet.
/// The fleet ends as a single runner would, once the held issue is merged.
#[test]
fn a_worker_with_nothing_to_take_while_another_holds_an_issue_does_not_halt_the_fleet() {
    let issues: Vec<(u32, String)> = (1..=2).map(|n| (n, format!("Issue {n}"))).collect();
    let p = Project::new(
        &refs(&issues),
        json!({"steps": {"implement": ["busy:2500"]}}),
        json!({}),
    );
    let mut quarantined = p.issue(1);
    quarantined["escalated"] = json!(true);
    std::fs::write(p.issues.join("1.json"), quarantined.to_string()).expect("issue 1");
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(merged_issues(&p.origin), vec![2], "{all}");
    assert!(all.contains("nothing for this runner to do"), "{all}");
    // The log lines, in order: the fleet stops only after #2 is merged.
    let log = String::from_utf8_lossy(&out.stderr);
    let merged_at = log.find("issue #2: merged").expect("#2 merged");
    let halted_at = log.find("HALTED").unwrap_or(usize::MAX);
    assert!(halted_at > merged_at, "no halt while #2 was held\n{all}");
    // As for a single runner: the one issue left is escalated, which the run reports.
    assert_eq!(out.status.code(), Some(1), "{all}");
}

#[test]
fn bounds_states_how_often_a_lost_race_is_merged_again() {
    let p = Project::new(&[], json!({}), json!({"workers": 3}));
    let out = p
        .command(&["bounds", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("bounds");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("is merged again up to 3 times within its attempt")
            && stdout.contains("at most 4 agent invocations"),
        "{stdout}"
    );
    // The waits for the merge turn and the agent calls of the re-runs have figures of their own.
    assert!(
        stdout
            .contains("merge turn (with --worker-id or workers): asked for before every merge run")
            && stdout.contains("then the session halts (MERGE LEASE) naming the holder")
            && stdout.contains("agent invocations with every lost race merged again: "),
        "{stdout}"
    );
}

/// Another runner holds the merge lease: this runner's merge waits for it (keeping its issue),
/// and once that lease has run out (its holder died) takes it over and merges; the lease is
/// given back afterwards.
#[test]
fn a_merge_waits_for_another_runners_merge_lease_and_takes_over_an_expired_one() {
    let p = Project::new(&[(1, "One", "")], json!({}), json!({}));
    let r = p.add_runner("clone-a", &json!({}));
    let claims = p.issues.join(".claims");
    std::fs::create_dir_all(&claims).expect("claims dir");
    let now = chrono::Utc::now();
    let lease = json!({
        "issue": 9, "worker": "ghost",
        "claimedAt": now.to_rfc3339(),
        "expiresAt": (now + chrono::Duration::seconds(6)).to_rfc3339(),
    });
    std::fs::write(claims.join("merge.json"), lease.to_string()).expect("lease");
    let status = p
        .command(&["status", "--config", r.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown.contains("merge:    #9 by worker ghost until "),
        "{shown}"
    );
    let out = wait_output(p.spawn_runner(&r, "wa"), Duration::from_secs(120));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1], "{all}");
    assert!(
        all.contains("waiting for the merge lease, held by worker ghost (merging #9)"),
        "{all}"
    );
    let merged_at = std::fs::metadata(p.issues.join("1.json"))
        .and_then(|m| m.modified())
        .map(chrono::DateTime::<chrono::Utc>::from)
        .expect("issue 1 closed");
    assert!(
        merged_at >= now + chrono::Duration::seconds(6),
        "merged only after the ghost's lease ran out ({merged_at} vs {now})"
    );
    assert!(!claims.join("merge.json").exists(), "given back");
}

/// A worker waiting for its PR's review (or its CI) waits for its own issue, not for a limit
/// of the account: the fleet does not pause the other workers for it, and the other issue
/// merges meanwhile.
#[test]
fn a_workers_review_wait_pauses_no_other_worker() {
    let p = Project::new(
        &[(1, "First", "Do one thing."), (2, "Second", "Do another.")],
        json!({}),
        json!({"review": {"requireApproval": true, "approvalTimeoutMinutes": 0.25}}),
    );
    assert_eq!(
        e2e::code(&p.review(2, &["--approve", "--author", "lead"])),
        0
    );
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(e2e::code(&out), 0, "{all}");
    assert!(all.contains("waiting for review"), "{all}");
    assert!(
        !all.contains("fleet: every worker pauses"),
        "a review wait paused the fleet: {all}"
    );
    assert_eq!(merged_issues(&p.origin), [2], "{all}");
}

/// CI of the green-alone, red-together tests: it records the commit it tests, holds the first
/// run until a second has started or 3 s passed (so that both branches are cut from the same
/// main: a fleet's train tests the trees main would hold, one at a time or side by side, and
/// never the branches alone), and fails a tree holding both issues' files unless the agent's
/// `ci-fixed` is in it.
fn red_together_ci(runs: &std::path::Path) -> String {
    format!(
        "git rev-parse HEAD >> {runs}; n=0; \
         while [ \"$(wc -l < {runs})\" -lt 2 ] && [ $n -lt 60 ]; do sleep 0.05; n=$((n+1)); done; \
         if [ -e src/issue_1.txt ] && [ -e src/issue_2.txt ] && [ ! -e ci-fixed ]; then \
           echo 'issue 1 and issue 2 break each other'; exit 1; fi",
        runs = runs.display()
    )
}

/// Whether commit `sha` of `repo` passes [`red_together_ci`]'s check.
fn green(repo: &std::path::Path, sha: &str) -> bool {
    let has = |path: &str| {
        std::process::Command::new("git")
            .args(["cat-file", "-e", &format!("{sha}:{path}")])
            .current_dir(repo)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("git cat-file")
            .success()
    };
    !(has("src/issue_1.txt") && has("src/issue_2.txt")) || has("ci-fixed")
}

/// Two workers' branches, each green alone and red together. The first to merge lands (main
/// did not move since its CI); the second's merge builds the commit main would hold, CI fails
/// it, and it goes back to its issue as monitorCI's failure naming the combination: the agent
/// repairs it and it lands. No issue is escalated, and every commit of main's first-parent
/// history is one CI passes (the merge train keeps this rule when it tests several at once).
#[test]
fn two_workers_green_alone_and_red_together_return_the_second_naming_the_combination() {
    let issues: Vec<(u32, String)> = (1..=2).map(|n| (n, format!("Issue {n}"))).collect();
    let p = Project::new(
        &refs(&issues),
        json!({"steps": {"monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] = json!({"command": ["sh", "-c", red_together_ci(&runs)], "timeoutMin": 1});
    p.set_config(extra);
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(none_escalated(&p, &issues).is_empty(), "{all}");
    let first_parents = e2e::git(&p.origin, &["rev-list", "--first-parent", "main"]);
    let red: Vec<&str> = first_parents
        .lines()
        .filter(|sha| !green(&p.origin, sha))
        .collect();
    assert!(red.is_empty(), "red commits on main: {red:?}\n{all}");
    // Exactly one issue was returned, and its words name its branch and the main it failed on.
    let returned: Vec<u32> = (1..=2)
        .filter(|n| {
            all.lines()
                .any(|l| l.contains("CI failed on ") && l.contains(&format!(" {n}-")))
        })
        .collect();
    assert_eq!(returned.len(), 1, "one issue returned: {returned:?}\n{all}");
    assert!(all.contains("merged onto main"), "{all}");
    let repairs: Vec<u32> = e2e::invocations_in(&p.agent_log)
        .into_iter()
        .filter(|(_, step)| step == "monitorCI")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        repairs, returned,
        "only the returned issue is repaired\n{all}"
    );
}

/// The fleet is killed (SIGKILL) while CI tests the commit main would hold for the second
/// merge (the two branches, green alone, red together). The restart builds and tests that
/// commit again (the killed run left no verdict), CI fails it, the issue is returned and
/// repaired, and both land: main never holds a tree CI did not pass.
#[test]
fn a_kill_during_ci_of_the_combination_resumes_without_landing_an_untested_tree() {
    let issues: Vec<(u32, String)> = (1..=2).map(|n| (n, format!("Issue {n}"))).collect();
    let p = Project::new(
        &refs(&issues),
        json!({"steps": {"monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    let combined = p.root.join("ci-combined");
    let gate = p.root.join("ci-gate");
    // The combination's CI holds until the gate opens: the test kills the fleet meanwhile.
    let hold = format!(
        "if [ -e src/issue_1.txt ] && [ -e src/issue_2.txt ] && [ ! -e ci-fixed ]; then \
           touch {combined}; while [ ! -e {gate} ]; do sleep 0.05; done; fi; ",
        combined = combined.display(),
        gate = gate.display()
    );
    let mut extra = json!({ "steps": e2e::builtin_steps() });
    extra["localCi"] = json!({
        "command": ["sh", "-c", format!("{hold}{}", red_together_ci(&runs))],
        "timeoutMin": 1
    });
    p.set_config(extra);
    let mut fleet = p.spawn(&["--workers", "2"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while !combined.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "CI never tested the combination"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = e2e::git(&p.origin, &["rev-parse", "main"]);
    fleet.kill().expect("kill -9");
    let _ = fleet.wait();
    std::fs::write(&gate, "open").expect("gate");
    // The merge train tests the combination as soon as the first is settled to land, so
    // the first's push may not have happened yet at the kill.
    assert!(
        merged_issues(&p.origin).len() <= 1,
        "at most the first landed before the kill"
    );

    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(none_escalated(&p, &issues).is_empty(), "{all}");
    let first_parents = e2e::git(&p.origin, &["rev-list", "--first-parent", "main"]);
    let red: Vec<&str> = first_parents
        .lines()
        .filter(|sha| !green(&p.origin, sha))
        .collect();
    assert!(red.is_empty(), "red commits on main: {red:?}\n{all}");
    assert!(
        first_parents.lines().any(|sha| sha == before),
        "main grew from where it was at the kill\n{all}"
    );
    assert!(
        all.contains("merged onto main"),
        "the combination failed anew\n{all}"
    );
}
