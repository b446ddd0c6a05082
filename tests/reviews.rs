//! PR reviews on the local forge, end to end: the real binary, a real git project, the local
//! tracker and a person speaking through `sdlc-runner review N`.

mod e2e;

use e2e::{code, text, Project};
use serde_json::json;

#[test]
fn review_stores_each_verdict_beside_the_tracker_with_its_author_id_and_time() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let out = p.review(
        1,
        &["--request-changes", "Rename foo to bar.", "--author", "ann"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("local-1-1 on issue #1: ann asked for changes"),
        "{}",
        text(&out)
    );
    let out = p.review(1, &["--comment", "Also the docs.", "--author", "bob"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let out = p.review(1, &["--approve", "--author", "ann"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let reviews = p.reviews(1)["reviews"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let seen: Vec<(&str, &str, &str, &str)> = reviews
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or(""),
                r["author"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["body"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("local-1-1", "ann", "requestChanges", "Rename foo to bar."),
            ("local-1-2", "bob", "comment", "Also the docs."),
            ("local-1-3", "ann", "approve", ""),
        ]
    );
    assert!(
        reviews
            .iter()
            .all(|r| r["time"].as_str().is_some_and(|t| t.starts_with("20"))),
        "{reviews:?}"
    );
    // The tracker still reads its issues: the reviews directory is no issue file.
    let list = p
        .command(&["issue", "list", "--config", p.config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&list), 0, "{}", text(&list));
}

#[test]
fn review_of_an_issue_the_tracker_lacks_or_without_a_verdict_is_refused() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let out = p.review(7, &["--approve"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("#7") || text(&out).contains('7'),
        "{}",
        text(&out)
    );
    assert_eq!(p.reviews(7), serde_json::Value::Null);
    let out = p.review(1, &[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    let out = p.review(1, &["--approve", "--comment", "x"]);
    assert_eq!(code(&out), 2, "{}", text(&out));
}

/// The review gate of the config: `requireApproval` and its wait in minutes.
fn gate(require_approval: bool, minutes: f64) -> serde_json::Value {
    json!({"review": {"requireApproval": require_approval, "approvalTimeoutMinutes": minutes}})
}

#[test]
fn a_pr_nobody_objects_to_merges_without_an_approval_when_none_is_required() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({}),
        gate(false, 1.0),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    let journal = std::fs::read_to_string(p.journal_path()).unwrap();
    assert!(
        journal.contains("lookAtReview"),
        "the review was looked at: {all}"
    );
}

#[test]
fn a_required_approval_never_given_ends_the_run_waiting_for_a_person_not_quarantined() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({}),
        gate(true, 0.05),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        all.contains("waiting for review: an approval is required"),
        "{all}"
    );
    assert!(all.contains("issue #1: waiting for a person"), "{all}");
    assert!(
        e2e::merged_issues(&p.origin).is_empty(),
        "nothing merged: {all}"
    );
    let issue = p.issue(1);
    assert_eq!(issue["escalated"], json!(false), "not quarantined: {issue}");
    assert_eq!(issue["state"], json!("open"), "{issue}");
    // The person approves; the next run looks again and merges.
    assert_eq!(code(&p.review(1, &["--approve", "--author", "lead"])), 0);
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
}

#[test]
fn changes_requested_hold_the_merge_even_without_required_approval() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({}),
        gate(false, 0.05),
    );
    assert_eq!(
        code(&p.review(1, &["--request-changes", "Rename foo.", "--author", "ann"])),
        0
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("a reviewer asked for changes"), "{all}");
    assert!(
        e2e::merged_issues(&p.origin).is_empty(),
        "no merge over changes requested: {all}"
    );
    assert_eq!(p.issue(1)["escalated"], json!(false));
    // A comment decides nothing; the reviewer's approval lifts the request.
    assert_eq!(
        code(&p.review(1, &["--comment", "Thanks.", "--author", "bob"])),
        0
    );
    assert_eq!(code(&p.review(1, &["--approve", "--author", "ann"])), 0);
    let out = p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{}", text(&out));
}

#[test]
fn an_approval_given_while_the_runner_is_down_is_taken_after_the_restart() {
    // Two minutes of waits: 10 s, 20 s, … — the runner is stopped in the first.
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({}),
        gate(true, 2.0),
    );
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", std::time::Duration::from_secs(60));
    e2e::signal(&child, libc::SIGTERM);
    let first = e2e::wait_output(child, std::time::Duration::from_secs(30));
    assert_eq!(code(&first), 0, "{}", text(&first));
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{}", text(&first));
    assert_eq!(code(&p.review(1, &["--approve", "--author", "lead"])), 0);
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    // The person was told once, across the restart.
    let journal = std::fs::read_to_string(p.journal_path()).unwrap();
    assert_eq!(journal.matches("\"reviewWanted\"").count(), 1, "{journal}");
}
