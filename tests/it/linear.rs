//! End to end with the Linear tracker: the real binary with `"tracker": {"kind": "linear"}`
//! and the GitLab forge, each an in-process fake on loopback (tests/it/e2e/fake_linear.rs,
//! tests/it/e2e/fake_gitlab.rs). Neither service is ever reached.

use crate::e2e;

use e2e::fake_gitlab::{FakeGitLab, PROJECT, TOKEN};
use e2e::fake_linear::{FakeLinear, KEY, TEAM};
use e2e::{code, text, Project};
use serde_json::json;

#[test]
fn linear_issues_are_merged_through_gitlab_and_completed_or_escalated_with_label_and_comment() {
    let mut p = Project::new(
        &[],
        json!({"steps": {"2:verify": ["fail-test-1", "fail-test-2", "fail-test-3"]}}),
        json!({}),
    );
    let lab = FakeGitLab::start(&p.origin, &[]);
    let linear = FakeLinear::start(&[
        (1, "Add a greeting", "Say hello."),
        (2, "Add a riddle", "Ask one."),
    ]);
    p.set_config(json!({
        "tracker": {"kind": "linear"},
        "forge": "gitlab",
        "linear": {"url": linear.url(), "team": TEAM},
        "gitlab": {"url": lab.url(), "project": PROJECT},
        "steps": e2e::builtin_steps(),
        "maxConsecutiveFailures": {"verify": 0},
    }));
    p.env.push(("GITLAB_TOKEN".into(), TOKEN.into()));
    p.env.push(("LINEAR_API_KEY".into(), KEY.into()));
    for var in ["NO_PROXY", "no_proxy"] {
        p.env.push((var.into(), "127.0.0.1,localhost".into()));
    }
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("FAILURE LOOP DETECTED: all issues escalated"),
        "{all}"
    );
    assert_eq!(e2e::merged_issues(&p.origin), vec![1], "{all}");
    let one = linear.issue(1);
    assert_eq!(
        one.state, "completed",
        "moved to the completed state: {one:?}"
    );
    assert_eq!(one.comments.len(), 1, "{one:?}");
    let two = linear.issue(2);
    assert_eq!(two.state, "unstarted", "{two:?}");
    assert!(
        two.labels.contains(&"sdlc-escalated".to_string()),
        "{two:?}"
    );
    assert!(two.comments[0].contains("TEST_ASSERTION"), "{two:?}");
    let unknown: Vec<String> = linear
        .with(|t| t.requests.clone())
        .into_iter()
        .filter(|r| r.starts_with("UNKNOWN"))
        .collect();
    assert!(unknown.is_empty(), "{unknown:?}");
    assert!(!all.contains(KEY), "the key in the output");

    // Linear's own identifiers, not bare numbers: the branch, the merge request's title and
    // description, what the agent is told, the state file and `status`.
    let mrs = lab.with(|l| l.mrs.clone());
    assert_eq!(mrs.len(), 1, "{mrs:?}");
    assert!(mrs[0].source.starts_with("ENG-1-"), "{mrs:?}");
    assert!(mrs[0].title.contains("ENG-1"), "{mrs:?}");
    assert!(
        mrs[0].description.contains("Closes ENG-1") && !mrs[0].description.contains("Closes #"),
        "the forge must not close its own issue #1: {mrs:?}"
    );
    let told: Vec<String> = p.invocations();
    assert!(
        told.iter().any(|l| l.starts_with("ENG-1 startIssue ")),
        "SDLC_ISSUE: {told:?}"
    );
    assert!(
        told.iter().any(|l| l.starts_with("ENG-2 verify ")),
        "{told:?}"
    );
    let status = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    let shown = text(&status);
    assert!(shown.contains("escalated issues: ENG-2"), "{shown}");
    assert!(!shown.contains("#2"), "{shown}");
    // The notices name the issues as Linear does.
    assert!(all.contains("issue ENG-1: merged"), "{all}");
    assert!(all.contains("issue ENG-2 escalated"), "{all}");
}

/// A run that stops on an issue leaves it named as Linear names it in the state file and in
/// `status`.
#[test]
fn a_stopped_run_names_its_issue_by_the_linear_identifier_in_the_state_file_and_status() {
    let mut p = Project::new(&[], json!({"steps": {"1:implement": ["auth"]}}), json!({}));
    let linear = FakeLinear::start(&[(1, "Add a greeting", "Say hello.")]);
    p.set_config(json!({
        "tracker": {"kind": "linear"},
        "forge": "local",
        "linear": {"url": linear.url(), "team": TEAM},
    }));
    p.env.push(("LINEAR_API_KEY".into(), KEY.into()));
    for var in ["NO_PROXY", "no_proxy"] {
        p.env.push((var.into(), "127.0.0.1,localhost".into()));
    }
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    let state = std::fs::read_to_string(p.claude("sdlc-state.json")).expect("state file");
    assert!(state.contains("\"currentIssueRef\": \"ENG-1\""), "{state}");
    assert!(state.contains("\"ENG-1-issue-1\""), "{state}");
    let status = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    let shown = text(&status);
    assert!(shown.contains("issue:    ENG-1"), "{shown}");
    assert!(
        shown.contains("issue ENG-1)"),
        "the state file's line: {shown}"
    );
    assert!(!shown.contains("#1"), "{shown}");
}

#[test]
fn a_refused_key_in_graphql_errors_of_an_http_200_halts_naming_its_variable() {
    let mut p = Project::new(&[], json!({}), json!({}));
    let linear = FakeLinear::start(&[(1, "Add a greeting", "Say hello.")]);
    p.set_config(json!({
        "tracker": {"kind": "linear"},
        "forge": "local",
        "linear": {"url": linear.url(), "team": TEAM},
    }));
    p.env
        .push(("LINEAR_API_KEY".into(), "lin_api_wrong".into()));
    for var in ["NO_PROXY", "no_proxy"] {
        p.env.push((var.into(), "127.0.0.1,localhost".into()));
    }
    let out = p.run(&[]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(all.contains("Authentication required"), "{all}");
    assert!(all.contains("LINEAR_API_KEY"), "names the variable: {all}");
    assert!(!all.contains("lin_api_wrong"), "{all}");
    assert!(p.invocations().is_empty(), "{:?}", p.invocations());
}

/// `doctor` with the Linear tracker asks Linear what `run` needs: the key's account, the team,
/// the selection label and a completed state; each missing one is named with its fix.
#[test]
fn doctor_checks_the_key_the_team_the_label_and_the_completed_state() {
    let mut p = Project::new(&[], json!({}), json!({}));
    let linear = FakeLinear::start(&[(1, "Add a greeting", "Say hello.")]);
    let config = |team: &str| {
        json!({
            "tracker": {"kind": "linear"},
            "forge": "local",
            "linear": {"url": linear.url(), "team": team},
        })
    };
    p.env.push(("LINEAR_API_KEY".into(), KEY.into()));
    for var in ["NO_PROXY", "no_proxy"] {
        p.env.push((var.into(), "127.0.0.1,localhost".into()));
    }
    let doctor = |p: &Project| {
        let out = p
            .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
            .output()
            .expect("doctor");
        (code(&out), text(&out))
    };
    p.set_config(config(TEAM));
    let (_, all) = doctor(&p);
    assert!(
        all.contains("the key in LINEAR_API_KEY is Runner Bot's"),
        "{all}"
    );
    assert!(all.contains("team ENG (Engineering) readable"), "{all}");
    assert!(all.contains("label automatable exists"), "{all}");
    assert!(all.contains("completed state for merged issues"), "{all}");
    assert!(!all.contains(KEY), "{all}");

    linear.with(|t| {
        t.labels.clear();
        t.no_completed_state = true;
    });
    let (status, all) = doctor(&p);
    assert_ne!(status, 0, "{all}");
    assert!(all.contains("has no label automatable"), "{all}");
    assert!(all.contains("has no completed state"), "{all}");

    p.set_config(config("OPS"));
    let (status, all) = doctor(&p);
    assert_ne!(status, 0, "{all}");
    assert!(all.contains("no team with the key OPS"), "{all}");
    assert!(all.contains("set linear.team"), "{all}");

    p.set_config(config(TEAM));
    p.env.retain(|(k, _)| k != "LINEAR_API_KEY");
    p.env
        .push(("LINEAR_API_KEY".into(), "lin_api_wrong".into()));
    let (status, all) = doctor(&p);
    assert_ne!(status, 0, "{all}");
    assert!(all.contains("LINEAR_API_KEY"), "{all}");
    assert!(!all.contains("lin_api_wrong"), "{all}");
}

/// A project on Linear with the GitLab forge, the builtin steps and both keys, for runners
/// with worker ids.
fn linear_project(issues: &[(u32, &str, &str)]) -> (Project, FakeLinear, FakeGitLab) {
    let mut p = Project::new(&[], json!({}), json!({}));
    let lab = FakeGitLab::start(&p.origin, &[]);
    let linear = FakeLinear::start(issues);
    p.set_config(json!({
        "tracker": {"kind": "linear"},
        "forge": "gitlab",
        "linear": {"url": linear.url(), "team": TEAM},
        "gitlab": {"url": lab.url(), "project": PROJECT},
        "steps": e2e::builtin_steps(),
    }));
    p.env.push(("GITLAB_TOKEN".into(), TOKEN.into()));
    p.env.push(("LINEAR_API_KEY".into(), KEY.into()));
    for var in ["NO_PROXY", "no_proxy"] {
        p.env.push((var.into(), "127.0.0.1,localhost".into()));
    }
    (p, linear, lab)
}

/// Two runners with worker ids share one Linear team: the claim comments keep every issue to
/// one runner, and each issue is merged once.
#[test]
fn two_runners_on_one_linear_team_never_work_the_same_issue() {
    let (p, linear, _lab) = linear_project(&[
        (1, "Add a greeting", "Say hello."),
        (2, "Add a farewell", "Say bye."),
        (3, "Add a riddle", "Ask one."),
    ]);
    let all = e2e::shared_tracker::two_runners_never_work_one_issue(&p, 3);
    assert_eq!(e2e::merged_issues(&p.origin), vec![1, 2, 3], "{all}");
    for n in 1..=3 {
        let issue = linear.issue(n);
        assert_eq!(issue.state, "completed", "{issue:?}");
        assert!(
            issue
                .comments
                .iter()
                .any(|b| b.starts_with("sdlc-runner claim: worker=w")),
            "the claim is a comment: {issue:?}"
        );
        assert!(
            !issue.labels.contains(&"sdlc-claimed".to_string()),
            "released on merge: {issue:?}"
        );
    }
    let unknown: Vec<String> = linear
        .with(|t| t.requests.clone())
        .into_iter()
        .filter(|r| r.starts_with("UNKNOWN"))
        .collect();
    assert!(unknown.is_empty(), "{unknown:?}");
}

/// A runner killed mid-issue leaves its claim comment; another runner leaves the issue alone
/// while the lease runs, then takes it over and merges it.
#[test]
fn an_expired_linear_claim_is_taken_over() {
    let (p, linear, _lab) = linear_project(&[(1, "Add a greeting", "Say hello.")]);
    let text = e2e::shared_tracker::an_expired_claim_is_taken_over(&p);
    assert!(text.contains("claimed issue #1 as worker wb"), "{text}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1], "{text}");
    assert_eq!(linear.issue(1).state, "completed");
}

/// Linear's own relation "blocks" holds issue 1 back until issue 2 is merged, though neither
/// description says so.
#[test]
fn an_issue_blocked_by_a_linear_relation_waits_until_its_blocker_merges() {
    let (p, linear, _lab) = linear_project(&[
        (1, "Add a greeting", "Say hello."),
        (2, "Add a farewell", "Say bye."),
    ]);
    linear.with(|t| t.issues[0].blocked_by = vec![2]);
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let mut order: Vec<String> = Vec::new();
    for line in p.invocations() {
        let mut words = line.split_whitespace();
        if let (Some(issue), Some("startIssue")) = (words.next(), words.next()) {
            if !order.iter().any(|o| o == issue) {
                order.push(issue.to_string());
            }
        }
    }
    assert_eq!(order, vec!["ENG-2", "ENG-1"], "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1, 2], "{all}");
}
