//! End to end on the GitHub path: the real binary with `"tracker": {"kind": "github"}` and
//! `"forge": "github"`, against a real git repository, with a fake `gh` (tests/fake_gh.py)
//! first on PATH. The fake keeps issues and labels in a JSON file and derives pull requests
//! from the bare origin, so GitHub itself is never reached.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::PathBuf;

/// The fake `gh` is a Python script: these tests are `#[ignore]`d, so that a newcomer's
/// `cargo test` needs only Rust and git, and `.ci/run` runs them (`cargo test -- --ignored`)
/// after installing python3. Run, they fail when python3 is missing (never skip).
fn needs_python3() {
    assert!(
        which::which("python3").is_ok(),
        "python3 is not on PATH (tests/fake_gh.py needs it): apt-get install -y python3"
    );
}

struct GhProject {
    p: Project,
    bin: PathBuf,
}

impl GhProject {
    /// `issues`: (number, title, body), all open and labelled `automatable`. `extra`: config
    /// keys over the test defaults.
    fn new(issues: &[(u32, &str, &str)], script: Value, extra: Value) -> GhProject {
        let mut config = json!({"tracker": {"kind": "github"}, "forge": "github"});
        if let (Some(c), Some(more)) = (config.as_object_mut(), extra.as_object()) {
            c.extend(more.clone());
        }
        let mut p = Project::new(&[], script, config);
        let bin = p.root.join("bin");
        e2e::install_fake_gh(&bin);
        let issues: Vec<Value> = issues
            .iter()
            .map(|(n, title, body)| {
                json!({"number": n, "title": title, "body": body, "state": "OPEN",
                    "labels": ["automatable"], "milestone": null})
            })
            .collect();
        let state = json!({
            "origin": p.origin,
            "labels": ["automatable"],
            "milestones": [],
            "issues": issues,
        });
        std::fs::write(bin.join("state.json"), state.to_string()).expect("state");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin.clone()];
        dirs.extend(std::env::split_paths(&path));
        p.env.push((
            "PATH".into(),
            std::env::join_paths(dirs).expect("join PATH"),
        ));
        // Any attempt to reach the network goes to a dead proxy and fails fast.
        for var in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"] {
            p.env
                .push((var.into(), OsString::from("http://127.0.0.1:9")));
        }
        p.env.push(("GH_TOKEN".into(), OsString::from("invalid")));
        GhProject { p, bin }
    }

    fn state(&self) -> Value {
        let text = std::fs::read_to_string(self.bin.join("state.json")).expect("state");
        serde_json::from_str(&text).expect("state json")
    }

    fn issue(&self, n: u64) -> Value {
        self.state()["issues"]
            .as_array()
            .expect("issues")
            .iter()
            .find(|i| i["number"] == n)
            .cloned()
            .expect("issue")
    }

    /// Every argv the fake gh was called with.
    fn calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.bin.join("gh.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("log line"))
            .collect()
    }

    fn called(&self, words: &[&str]) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.len() >= words.len() && c.iter().zip(words).all(|(a, b)| a == b))
            .count()
    }

    /// Only the calls the runner is documented to make: GitHub's API with the answer's status
    /// and headers (`gh api --include`), and a failed job's log. Anything else would have to
    /// reach a real GitHub, or print GitHub's words without its status.
    fn assert_only_known_calls(&self) {
        for c in self.calls() {
            let head: Vec<&str> = c.iter().take(2).map(String::as_str).collect();
            assert!(
                matches!(head.as_slice(), ["api", "--include"] | ["run", "view"]),
                "unexpected gh call {c:?}"
            );
        }
    }
}

/// The tracker's REST calls on issue 1 (through `gh api --include`, as the fake gh logs them).
const LABEL_1: [&str; 5] = [
    "api",
    "--include",
    "-X",
    "POST",
    "repos/{owner}/{repo}/issues/1/labels",
];
const COMMENT_1: [&str; 5] = [
    "api",
    "--include",
    "-X",
    "POST",
    "repos/{owner}/{repo}/issues/1/comments",
];
/// The pull requests' REST calls: the creation, and the merge of the first PR opened.
const CREATE_PR: [&str; 5] = [
    "api",
    "--include",
    "-X",
    "POST",
    "repos/{owner}/{repo}/pulls",
];
const MERGE_200: [&str; 5] = [
    "api",
    "--include",
    "-X",
    "PUT",
    "repos/{owner}/{repo}/pulls/200/merge",
];
const CLOSE_1: [&str; 5] = [
    "api",
    "--include",
    "-X",
    "PATCH",
    "repos/{owner}/{repo}/issues/1",
];

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_full_cycle_on_github_merges_the_issue_through_gh() {
    needs_python3();
    let g = GhProject::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let out = g.p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        g.p.origin_main_log().contains("Merge issue #1"),
        "{}",
        g.p.origin_main_log()
    );
    assert_eq!(g.issue(1)["state"], "CLOSED", "the merged PR closed it");
    assert_eq!(g.p.branch(), "main");
    let candidates =
        "repos/{owner}/{repo}/issues?state=open&labels=automatable&per_page=100&page=1";
    assert!(
        g.called(&["api", "--include", candidates]) >= 2,
        "{:?}",
        g.calls()
    );
    let prs = "repos/{owner}/{repo}/pulls?head={owner}:1-issue-1&state=all&per_page=100";
    assert!(g.called(&["api", "--include", prs]) >= 1, "{:?}", g.calls());
    assert!(
        g.calls()
            .iter()
            .any(|c| c[0] == "api" && c[2].ends_with("/check-runs?per_page=100&page=1")),
        "{:?}",
        g.calls()
    );
    // The pushed branch is an open PR, so createPR is observed as done and not run.
    assert_eq!(g.p.count("1 createPR"), 0, "{:?}", g.p.invocations());
    assert_eq!(g.p.count("1 merge"), 1, "{:?}", g.p.invocations());
    assert_eq!(g.called(&LABEL_1), 0, "nothing escalated");
    g.assert_only_known_calls();
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_issue_github_did_not_close_on_merge_is_closed_by_the_runner_with_its_comment() {
    needs_python3();
    let g = GhProject::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    // The merging token cannot write issues, or the PR's base is not the default branch.
    g.set_state("noClose", json!(true));
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&g.p.origin), vec![1], "{all}");
    let issue = g.issue(1);
    assert_eq!(issue["state"], "CLOSED", "the runner closed it: {all}");
    assert_eq!(g.called(&CLOSE_1), 1, "{:?}", g.calls());
    let comments = issue["comments"].to_string();
    assert!(comments.contains("left the issue open"), "{comments}");
    g.assert_only_known_calls();
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_issue_github_closed_on_merge_is_not_closed_or_commented_on_again() {
    needs_python3();
    let g = GhProject::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let out = g.p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(g.issue(1)["state"], "CLOSED");
    assert_eq!(g.called(&CLOSE_1), 0, "{:?}", g.calls());
    assert_eq!(g.called(&COMMENT_1), 0, "{:?}", g.calls());
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_dependency_the_runner_just_merged_counts_as_done_while_github_still_shows_it_open() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Base", "The base."), (2, "On top", "Depends on: #1")],
        json!({}),
        json!({}),
    );
    // GitHub closes an issue a second or two after the merge; its reads lag behind.
    g.set_state("staleOpen", json!([1]));
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(!all.contains("blocked"), "{all}");
    assert_eq!(e2e::merged_issues(&g.p.origin), vec![1, 2], "{all}");
    assert_eq!(g.p.count("1 startCycle"), 1, "{:?}", g.p.invocations());
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_issue_the_runner_merged_is_never_worked_again_even_if_it_stays_open() {
    needs_python3();
    let g = GhProject::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let out = g.p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(e2e::merged_issues(&g.p.origin), vec![1]);
    // GitHub shows it open again (a close that did not stick, or a token that cannot write
    // issues): the next sessions must neither work it again nor leave it open.
    let mut state = g.state();
    state["issues"][0]["state"] = json!("OPEN");
    state["noClose"] = json!(true);
    std::fs::write(g.bin.join("state.json"), state.to_string()).expect("state");
    let before = g.p.invocations().len();
    for _ in 0..2 {
        let out = g.p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "{all}");
        assert_eq!(g.p.invocations().len(), before, "{:?}", g.p.invocations());
        assert_eq!(g.issue(1)["state"], "CLOSED", "closed again: {all}");
        assert!(all.contains("an earlier session merged it"), "{all}");
        let mut state = g.state();
        state["issues"][0]["state"] = json!("OPEN");
        std::fs::write(g.bin.join("state.json"), state.to_string()).expect("state");
    }
    assert_eq!(e2e::merged_issues(&g.p.origin), vec![1]);
    assert_eq!(g.p.branch(), "main");
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_escalated_issue_is_labelled_and_commented_on_github_and_the_run_halts() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["fail-test-1", "fail-test-2", "fail-test-3"]}}),
        // Off: with the default {"verify": 3} the third verify failure in a row halts the
        // session (tested in tests/it/runner.rs) before the escalation this test is about.
        json!({"maxConsecutiveFailures": {"verify": 0}}),
    );
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(g.p.count("1 verify"), 3, "{:?}", g.p.invocations());
    let one = g.issue(1);
    assert_eq!(one["state"], "OPEN", "{all}");
    assert!(
        one["labels"]
            .as_array()
            .expect("labels")
            .contains(&json!("sdlc-escalated")),
        "durable quarantine label: {one}\n{all}"
    );
    // The label did not exist yet: the runner created it, then labelled the issue.
    assert_eq!(
        g.called(&[
            "api",
            "--include",
            "-X",
            "POST",
            "repos/{owner}/{repo}/labels"
        ]),
        1
    );
    assert_eq!(g.called(&LABEL_1), 1);
    let comments = one["comments"].as_array().expect("a comment");
    assert_eq!(comments.len(), 1, "{one}");
    let comment = comments[0].as_str().expect("text");
    assert!(comment.contains("TEST_ASSERTION"), "{comment}");
    assert!(comment.contains("sdlc-escalated"), "how to undo: {comment}");
    assert_eq!(g.issue(2)["state"], "CLOSED", "issue 2 merged: {all}");
    assert!(g.p.origin_main_log().contains("Merge issue #2"));
    assert!(!g.p.origin_main_log().contains("Merge issue #1"));
    assert_eq!(code(&out), 1, "{all}");
    assert!(
        all.contains("FAILURE LOOP DETECTED: all issues escalated"),
        "{all}"
    );
    g.assert_only_known_calls();

    // A later session (after the halt is acknowledged) still sees the label: issue 1 is never
    // selected again and no agent runs.
    g.p.set_script(json!({}));
    let before = g.p.invocations().len();
    let again = g.p.run(&["--ack-halt"]);
    assert_eq!(code(&again), 1, "{}", text(&again));
    assert!(
        text(&again).contains("FAILURE LOOP DETECTED: all issues escalated"),
        "{}",
        text(&again)
    );
    assert_eq!(g.p.invocations().len(), before, "{:?}", g.p.invocations());
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_older_gh_completes_the_run_through_gh_api_alone() {
    needs_python3();
    let g = GhProject::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let out = g.p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(g.p.origin_main_log().contains("Merge issue #1"));
    assert_eq!(g.issue(1)["state"], "CLOSED");
    // No `gh issue`/`gh pr` command, whose JSON fields differ between gh releases: every
    // call is `gh api`, which every release answers alike.
    assert!(g.calls().iter().all(|c| c[0] == "api"), "{:?}", g.calls());
    g.assert_only_known_calls();
}

impl GhProject {
    fn set_state(&self, key: &str, value: Value) {
        let mut state = self.state();
        state[key] = value;
        std::fs::write(self.bin.join("state.json"), state.to_string()).expect("state");
    }
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_network_blip_is_waited_out_without_spending_an_attempt() {
    needs_python3();
    let g = GhProject::new(&[(1, "Add a greeting", "")], json!({}), json!({}));
    // The first tracker query and the next two fail: three waits, then the issue merges.
    g.set_state("failNext", json!(3));
    let out = g.p.run(&[]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        g.p.origin_main_log().contains("Merge issue #1"),
        "{}",
        text(&out)
    );
    assert_eq!(
        text(&out).matches("network: asking the tracker").count(),
        3,
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("until "),
        "waits say when they end: {}",
        text(&out)
    );
    assert_eq!(
        g.p.count("1 startCycle"),
        1,
        "no attempt spent: {:?}",
        g.p.invocations()
    );
    assert!(!text(&out).contains("FAILURE"), "{}", text(&out));
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_network_that_stays_down_halts_once_with_one_clear_message() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Add a greeting", "")],
        json!({}),
        json!({"maxNetworkWaits": 2}),
    );
    g.set_state("failAlways", json!(true));
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert_eq!(
        all.matches("ENVIRONMENT FAILURE: NETWORK").count(),
        1,
        "{all}"
    );
    assert!(all.contains("error connecting to api.github.com"), "{all}");
    assert!(!all.contains("no open automatable issue"), "{all}");
    assert!(!all.contains("all issues blocked"), "{all}");
    assert_eq!(g.p.count("1 "), 0, "no agent ran");
    assert_eq!(g.calls().len(), 3, "one try and two waits: {:?}", g.calls());
    // The halt is sticky: nothing runs until a person acknowledges it.
    g.set_state("failAlways", json!(false));
    let again = g.p.run(&[]);
    assert_eq!(code(&again), 1, "{}", text(&again));
    assert!(text(&again).contains("--ack-halt"), "{}", text(&again));
    let acked = g.p.run(&["--ack-halt"]);
    assert_eq!(code(&acked), 0, "{}", text(&acked));
    assert!(g.p.origin_main_log().contains("Merge issue #1"));
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_escalation_the_network_kept_from_the_tracker_is_written_before_the_halt_is_acknowledged() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"1:verify": ["fail-test-1", "fail-test-2", "fail-test-3"]}}),
        json!({"maxConsecutiveFailures": {"verify": 0}, "maxNetworkWaits": 1}),
    );
    // Labelling fails the way a dropped connection does; everything else works.
    g.set_state("failMatching", json!([LABEL_1]));
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: NETWORK"), "{all}");
    assert_eq!(g.p.count("1 verify"), 3, "{:?}", g.p.invocations());
    assert!(
        !g.issue(1)["labels"]
            .as_array()
            .expect("labels")
            .contains(&json!("sdlc-escalated")),
        "the label could not be written: {}",
        g.issue(1)
    );

    // Still down when the operator acknowledges: the halt stays rather than forget the
    // quarantine.
    let refused = g.p.run(&["--ack-halt"]);
    assert_eq!(code(&refused), 1, "{}", text(&refused));
    assert!(
        text(&refused).contains("refusing to acknowledge"),
        "{}",
        text(&refused)
    );
    assert!(text(&g.p.run(&[])).contains("--ack-halt"), "still halted");

    g.set_state("failMatching", json!([]));
    let acked = g.p.run(&["--ack-halt"]);
    let all = text(&acked);
    let one = g.issue(1);
    assert!(
        one["labels"]
            .as_array()
            .expect("labels")
            .contains(&json!("sdlc-escalated")),
        "the recorded escalation is written on acknowledging: {one}\n{all}"
    );
    assert_eq!(
        one["comments"].as_array().map_or(0, Vec::len),
        1,
        "one comment: {one}"
    );
    assert_eq!(
        g.p.count("1 verify"),
        3,
        "issue 1 is never worked again: {:?}",
        g.p.invocations()
    );
    assert!(g.p.origin_main_log().contains("Merge issue #2"), "{all}");
    assert!(!g.p.origin_main_log().contains("Merge issue #1"), "{all}");
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn builtin_steps_open_and_merge_the_pr_through_gh_without_an_agent() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({}),
        json!({ "steps": e2e::builtin_steps() }),
    );
    g.set_state("prRecords", json!(true));
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(
        g.p.invocations()
            .iter()
            .filter(|l| l.starts_with("1 "))
            .count(),
        5,
        "{:?}",
        g.p.invocations()
    );
    assert_eq!(g.called(&CREATE_PR), 1, "{:?}", g.calls());
    assert_eq!(g.called(&MERGE_200), 1, "{:?}", g.calls());
    // The merge names the commit CI passed: the merge commit's second parent on origin.
    let merge = g.state()["mergeRequests"][0].clone();
    assert_eq!(merge["merge_method"], "merge", "{merge}");
    let verified = merge["sha"].as_str().unwrap_or_default().to_string();
    let parents = e2e::git(&g.p.origin, &["log", "-1", "--format=%P", "main"]);
    assert!(
        !verified.is_empty() && parents.ends_with(&verified),
        "the merge names the verified sha: {merge}, main's parents {parents}"
    );
    let prs = g.state()["prs"].clone();
    let pr = &prs[0];
    assert_eq!(pr["state"], "MERGED", "{prs}");
    assert!(
        pr["body"]
            .as_str()
            .is_some_and(|b| b.starts_with("Closes #1")),
        "{prs}"
    );
    assert_eq!(pr["title"], "Add a greeting (#1)", "{prs}");
    assert_eq!(g.issue(1)["state"], "CLOSED", "Closes #1 closed it: {all}");
    assert!(
        g.p.origin_main_log().contains("Merge pull request #200"),
        "{}",
        g.p.origin_main_log()
    );
    g.assert_only_known_calls();
}

/// Two issues through builtin steps on GitHub, with `key` set to `value` in the fake's state.
fn builtin_project(key: &str, value: Value) -> GhProject {
    let g = GhProject::new(
        &[
            (1, "Add a greeting", "Say hello."),
            (2, "Add a farewell", "Say bye."),
        ],
        json!({}),
        json!({ "steps": e2e::builtin_steps() }),
    );
    g.set_state("prRecords", json!(true));
    g.set_state(key, value);
    g
}

/// The run halted for the base branch's rule `rule` at the merge of issue 1: no conflict
/// repair by an agent, no issue escalated, nothing merged, issue 2 never started.
fn assert_halted_for_the_rule(g: &GhProject, out: &std::process::Output, rule: &str) {
    let all = text(out);
    assert_eq!(code(out), 1, "{all}");
    assert!(
        all.contains(rule),
        "the halt names the rule {rule:?}: {all}"
    );
    assert!(!all.contains("MERGE_CONFLICT"), "{all}");
    assert_eq!(
        g.p.count("1 merge"),
        0,
        "no repair: {:?}",
        g.p.invocations()
    );
    assert_eq!(g.p.count("2 "), 0, "{:?}", g.p.invocations());
    assert_eq!(g.called(&LABEL_1), 0, "nobody escalated: {:?}", g.calls());
    assert!(
        !g.p.origin_main_log().contains("Merge pull request"),
        "{all}"
    );
    assert_eq!(g.issue(1)["state"], "OPEN");
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn branch_protection_refusing_the_merge_halts_naming_the_rule_without_repair_or_blame() {
    needs_python3();
    // GitHub said nothing before the merge (its mergeability still being computed), then
    // refused it (405): its message is all there is.
    let g = builtin_project(
        "refuseMerge",
        json!("the base branch policy prohibits the merge"),
    );
    g.set_state(
        "mergeGate",
        json!({"mergeStateStatus": "UNKNOWN", "mergeable": "UNKNOWN"}),
    );
    let out = g.p.run(&[]);
    assert_halted_for_the_rule(&g, &out, "base branch policy prohibits the merge");
    assert_eq!(g.called(&MERGE_200), 1, "{:?}", g.calls());
}

/// With GitHub's fields saying `gate` before the merge: the run halts naming `rule`, and gh
/// is never asked to merge.
fn halts_before_the_merge(gate: Value, rule: &str) {
    let g = builtin_project("mergeGate", gate.clone());
    let out = g.p.run(&[]);
    assert_halted_for_the_rule(&g, &out, rule);
    assert_eq!(g.called(&MERGE_200), 0, "{gate}: {:?}", g.calls());
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_required_review_seen_before_the_merge_halts_naming_it() {
    needs_python3();
    halts_before_the_merge(
        json!({"mergeStateStatus": "BLOCKED", "reviewDecision": "REVIEW_REQUIRED"}),
        "an approving review is required",
    );
}

/// GitHub's "changes requested" is read at the review gate, before the merge is asked for:
/// the merge waits for the reviewer (here not at all), and the run ends waiting for a person,
/// nothing merged, nobody blamed.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn githubs_changes_requested_holds_the_merge_at_the_review_gate() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({}),
        json!({"steps": e2e::builtin_steps(), "review": {"approvalTimeoutMinutes": 0}}),
    );
    g.set_state("prRecords", json!(true));
    g.set_state(
        "mergeGate",
        json!({"mergeStateStatus": "BLOCKED", "reviewDecision": "CHANGES_REQUESTED"}),
    );
    // GitHub decides from reviews: the PR (the first one opened, #200) has one, a comment
    // review with no words of its own, so the decision is GitHub's alone.
    g.set_state(
        "reviews",
        json!({"200": [{"id": 1, "user": {"login": "reviewer"}, "state": "COMMENTED",
            "body": "", "commit_id": "0", "submitted_at": "2026-01-01T00:00:00Z"}]}),
    );
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("issue #1: waiting for a person"), "{all}");
    assert_eq!(g.called(&MERGE_200), 0, "{:?}", g.calls());
    assert!(!all.contains("MERGE_CONFLICT"), "{all}");
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_draft_or_required_checks_seen_before_the_merge_halt_naming_them() {
    needs_python3();
    halts_before_the_merge(
        json!({"mergeStateStatus": "DRAFT", "isDraft": true}),
        "the pull request is a draft",
    );
    halts_before_the_merge(
        json!({"mergeStateStatus": "BLOCKED", "reviewDecision": "APPROVED"}),
        "required status checks",
    );
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn the_merge_leaves_the_clone_to_the_runner_and_deletes_the_branch_on_origin() {
    needs_python3();
    let g = builtin_project("mergeGate", json!({}));
    let out = g.p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        g.p.origin_main_log().contains("Merge pull request #200"),
        "{all}"
    );
    // The merge is GitHub's API call, never `gh pr merge`, which touches the clone it runs in.
    assert_eq!(g.called(&MERGE_200), 1, "{:?}", g.calls());
    assert_eq!(g.called(&["pr"]), 0, "{:?}", g.calls());
    let local = e2e::git(&g.p.project, &["branch", "--list", "1-issue-1"]);
    assert!(
        local.contains("1-issue-1"),
        "the local branch is the runner's: {all}"
    );
    let remote = e2e::git(&g.p.origin, &["branch", "--list", "1-issue-1"]);
    assert!(remote.trim().is_empty(), "deleted on origin: {remote}");
    assert_eq!(g.p.branch(), "main");
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn init_takes_a_github_enterprise_remote_gh_is_logged_in_to_for_github() {
    needs_python3();
    let g = GhProject::new(&[], json!({}), json!({}));
    g.set_state("authHosts", json!(["ghe.example.com"]));
    let init = |url: &str| {
        let repo = tempfile::tempdir().expect("tempdir");
        e2e::git(repo.path(), &["init", "-q", "-b", "main"]);
        e2e::git(repo.path(), &["remote", "add", "origin", url]);
        let mut cmd = std::process::Command::new(e2e::BIN);
        cmd.args(["init", "--config", "runner.json"])
            .current_dir(repo.path());
        for (k, v) in &g.p.env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run init");
        assert_eq!(code(&out), 0, "{url}: {}", text(&out));
        let body = std::fs::read_to_string(repo.path().join("runner.json")).expect("config");
        (body, text(&out))
    };
    for url in [
        "https://ghe.example.com/acme/widget.git",
        "git@ghe.example.com:acme/widget.git",
        "ssh://git@ghe.example.com/acme/widget",
    ] {
        let (body, said) = init(url);
        assert!(
            body.contains("\"kind\": \"github\"") && body.contains("\"forge\": \"github\""),
            "{url}: {body}"
        );
        assert!(
            said.contains("ghe.example.com/acme/widget"),
            "{url}: {said}"
        );
    }
    assert!(
        g.called(&["auth", "status", "--hostname", "ghe.example.com"]) >= 3,
        "{:?}",
        g.calls()
    );
    // A host gh is not logged in to is no GitHub the runner can use.
    let (body, said) = init("https://git.example.org/acme/widget.git");
    assert!(body.contains("\"kind\": \"local\""), "{body}");
    assert!(
        said.contains("git.example.org"),
        "the message names the host: {said}"
    );
}

#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn failing_ci_is_repaired_by_the_agent_with_the_failing_check_and_its_log() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({}),
        json!({"steps": {
            "commitPush": {"run": "builtin"},
            "createPR": {"run": "builtin"},
            "monitorCI": {"run": "builtin"},
            "merge": {"run": "builtin"},
        }}),
    );
    g.set_state("prRecords", json!(true));
    let failing = json!([{"name": "unit-tests", "state": "FAILURE", "bucket": "fail",
        "link": "https://github.invalid/o/r/actions/runs/5/job/77"}]);
    let passing = json!([{"name": "unit-tests", "state": "SUCCESS", "bucket": "pass",
        "link": "https://github.invalid/o/r/actions/runs/6/job/78"}]);
    g.set_state("checks", json!([failing, passing]));
    g.set_state(
        "jobLogs",
        json!({"77": "running 3 tests\ntest greets ... FAILED\nassertion `left == right` failed\n  left: \"hi\"\n right: \"hello\"\ntest result: FAILED. 2 passed; 1 failed"}),
    );
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("monitorCI: failed: TEST_ASSERTION"), "{all}");
    // The first look found the failure without an agent; the repair attempt ran one.
    assert_eq!(g.p.count("1 monitorCI 1"), 0, "{:?}", g.p.invocations());
    assert_eq!(g.p.count("1 monitorCI 2"), 1, "{:?}", g.p.invocations());
    let prompt = g.p.prompt(1, "monitorCI", 2).expect("the repair prompt");
    assert!(prompt.contains("unit-tests"), "{prompt}");
    assert!(prompt.contains("right: \"hello\""), "the job log: {prompt}");
    assert_eq!(g.state()["prs"][0]["state"], "MERGED");
    g.assert_only_known_calls();
}

/// monitorCI's wait for pending CI is the machine's: the look that finds CI pending is an
/// event (`ciPending`), the pause a journaled `wait`, the next look a request (`lookAtCi`) that
/// starts no agent; a network failure on the way is waited out on the network's schedule.
/// `replay` reproduces the whole run from the journal.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn pending_ci_and_a_network_blip_are_journaled_waits_that_replay_exactly() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Add a greeting", "")],
        json!({}),
        json!({"steps": e2e::builtin_steps()}),
    );
    g.set_state("prRecords", json!(true));
    let pending = json!([{"name": "unit-tests", "state": "PENDING", "bucket": "pending",
        "link": "https://github.invalid/o/r/actions/runs/5/job/77"}]);
    let passing = json!([{"name": "unit-tests", "state": "SUCCESS", "bucket": "pass",
        "link": "https://github.invalid/o/r/actions/runs/6/job/78"}]);
    g.set_state("checks", json!([pending, passing]));
    g.set_state(
        "failMatchingOnce",
        json!([["api", "--include", "repos/{owner}/{repo}/commits/"]]),
    );
    let out = g.p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(g.state()["prs"][0]["state"], "MERGED", "{all}");
    assert!(all.contains("CI pending; look 2 at CI in 2 s"), "{all}");
    let journal = std::fs::read_to_string(g.p.journal_path()).expect("journal");
    for recorded in [
        r#""event":"ciPending""#,
        r#""effect":"lookAtCi""#,
        r#""event":"networkFailed""#,
        r#""notice":"networkWait""#,
    ] {
        assert!(
            journal.contains(recorded),
            "{recorded} not in the journal:\n{journal}"
        );
    }
    // Another look at CI never starts the agent: the builtin monitorCI ran none.
    assert_eq!(g.p.count("1 monitorCI"), 0, "{:?}", g.p.invocations());
    let replay =
        g.p.command(&["replay", g.p.journal_path().to_str().expect("utf8")])
            .output()
            .expect("replay");
    assert_eq!(code(&replay), 0, "replay: {}", text(&replay));
}

/// Three runner processes, three clones, one (fake) GitHub: issues are claimed with a label,
/// an assignment and a comment before work starts, so none is worked by two runners, and each
/// claim is released when its issue is merged.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn three_runners_share_one_github_tracker_through_claims() {
    needs_python3();
    let issues: Vec<(u32, String)> = (1..=5).map(|n| (n, format!("Issue {n}"))).collect();
    let refs: Vec<(u32, &str, &str)> = issues.iter().map(|(n, t)| (*n, t.as_str(), "")).collect();
    let g = GhProject::new(
        &refs,
        json!({"steps": {"implement": ["busy:300"]}}),
        json!({"claims": {"leaseMinutes": 30}, "steps": e2e::builtin_steps()}),
    );
    g.set_state("prRecords", json!(true));
    let runners: Vec<e2e::Runner> = ["a", "b", "c"]
        .iter()
        .map(|n| g.p.add_runner(&format!("clone-{n}"), &json!({})))
        .collect();
    let children: Vec<_> = runners
        .iter()
        .enumerate()
        .map(|(i, r)| g.p.spawn_runner(r, &format!("w{i}")))
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| e2e::wait_output(c, std::time::Duration::from_secs(180)))
        .collect();
    for o in &outs {
        assert_eq!(code(o), 0, "{}", text(o));
    }
    let all: String = outs.iter().map(text).collect();
    let main = e2e::git(&g.p.origin, &["log", "--format=%s", "main"]);
    for n in 1..=5u32 {
        let merges = main
            .lines()
            .filter(|l| l.contains(&format!(" from {n}-")))
            .count();
        assert_eq!(merges, 1, "issue #{n} merged once: {main}\n{all}");
        let workers = runners
            .iter()
            .filter(|r| {
                e2e::invocations_in(&r.agent_log)
                    .iter()
                    .any(|(i, _)| *i == n)
            })
            .count();
        assert_eq!(workers, 1, "issue #{n} worked by one runner\n{all}");
        let issue = g.issue(u64::from(n));
        let comments: Vec<&str> = issue["comments"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(
            comments
                .iter()
                .any(|c| c.starts_with("sdlc-runner claim: worker=w")),
            "{issue}"
        );
        assert!(
            comments
                .iter()
                .any(|c| c.starts_with("sdlc-runner claim released: worker=w")),
            "{issue}"
        );
        assert!(
            !issue["labels"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x == "sdlc-claimed")),
            "released: {issue}"
        );
    }
    g.assert_only_known_calls();
}

/// A runner killed mid-issue leaves its claim comment; once the lease has run out another
/// runner's claim takes the issue over (the earlier claim's expiry is before it) and finishes it.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_killed_runners_github_claim_is_taken_over_after_its_lease_expires() {
    needs_python3();
    let quick = json!({"timeoutMin": 0.01});
    let mut steps = serde_json::Map::new();
    for key in [
        "startIssue",
        "writeSpecs",
        "implement",
        "simplify",
        "verify",
    ] {
        steps.insert(key.into(), quick.clone());
    }
    // Builtin steps obey their timeoutMin: long enough for the fake gh's calls (5.4 s), and
    // shorter than the lease.
    for key in ["startCycle", "commitPush", "createPR", "monitorCI", "merge"] {
        steps.insert(key.into(), json!({"run": "builtin", "timeoutMin": 0.09}));
    }
    let g = GhProject::new(
        &[(1, "Only issue", "")],
        json!({"steps": {"verify": ["hang"]}}),
        json!({"claims": {"leaseMinutes": 0.1}, "steps": steps}),
    );
    g.set_state("prRecords", json!(true));
    let first = g.p.add_runner("clone-a", &json!({}));
    let second = g.p.add_runner("clone-b", &json!({}));
    let mut a = g.p.spawn_runner(&first, "wa");
    e2e::kill_at_step(&mut a, &first.agent_log, "verify");
    let claimed = g.issue(1);
    assert!(
        claimed["labels"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x == "sdlc-claimed")),
        "{claimed}"
    );
    let status =
        g.p.command(&["status", "--config", first.config.to_str().expect("utf8")])
            .output()
            .expect("status");
    let shown = String::from_utf8_lossy(&status.stdout);
    assert!(
        shown.contains("claim:    #1 by worker wa until "),
        "{shown}"
    );
    g.p.set_script(json!({}));
    std::thread::sleep(std::time::Duration::from_secs(7));
    let out = e2e::wait_output(
        g.p.spawn_runner(&second, "wb"),
        std::time::Duration::from_secs(120),
    );
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("claimed issue #1 as worker wb"), "{all}");
    let main = e2e::git(&g.p.origin, &["log", "--format=%s", "main"]);
    assert_eq!(main.matches(" from 1-").count(), 1, "{main}\n{all}");
    assert_eq!(g.issue(1)["state"], "CLOSED");
}

/// A network blip while claiming an issue is waited out like any tracker call: no attempt
/// spent, the claim made after the wait, the issue merged.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_network_blip_while_claiming_is_waited_out() {
    needs_python3();
    let g = GhProject::new(
        &[(1, "Only issue", "")],
        json!({}),
        json!({"claims": {"leaseMinutes": 30}, "steps": e2e::builtin_steps()}),
    );
    g.set_state("prRecords", json!(true));
    g.set_state("failMatchingOnce", json!([LABEL_1]));
    let out = g.p.run(&["--worker-id", "w1"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("network: claiming issue #1 failed"), "{all}");
    assert!(all.contains("claimed issue #1 as worker w1"), "{all}");
    assert!(
        g.p.origin_main_log().contains("Merge pull request"),
        "{all}"
    );
}

/// Branch protection wants the branch up to date with main, and a teammate pushed to main
/// after CI passed it: GitHub says BEHIND. The runner brings the branch up to date, CI passes
/// the new head, and that head is merged; nothing is blamed, no agent runs for it, and both
/// the teammate's change and the issue's reach main.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn a_branch_behind_main_is_brought_up_to_date_and_merged_after_ci_passes_it() {
    needs_python3();
    let g = builtin_project("requireUpToDate", json!(true));
    g.set_state("teammateMoves", json!(1));
    let out = g.p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        all.contains("GitHub wants") && all.contains("up to date with the base branch"),
        "the merge said why it did not merge: {all}"
    );
    e2e::updated_head_passed_ci(&all);
    let main = g.p.origin_main_log();
    assert!(main.contains("Merge pull request"), "{main}\n{all}");
    teammates_change_stays(&g.p.origin);
    assert_eq!(
        g.p.count("1 merge"),
        0,
        "no agent for the update: {:?}",
        g.p.invocations()
    );
    assert!(!all.contains("escalat"), "{all}");
    assert_eq!(g.issue(1)["state"], "CLOSED", "{all}");
}

/// The same with the merge run by the agent (`steps.merge` an agent's step): GitHub's fields,
/// read before the agent is asked, say BEHIND, and the machine answers as for the builtin
/// merge: the branch brought up to date by the runner (no agent), CI passes the new head, and
/// only then does the agent merge it, once; nothing is blamed and no attempt is spent.
#[test]
#[ignore = "needs python3 (tests/fake_gh.py); .ci/run installs it: cargo test -- --ignored"]
fn an_agent_run_merge_behind_main_is_updated_and_passes_ci_before_the_agent_merges() {
    needs_python3();
    let mut steps = e2e::builtin_steps();
    steps["merge"] = json!({"run": "agent"});
    let g = GhProject::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({}),
        json!({ "steps": steps }),
    );
    g.set_state("prRecords", json!(true));
    g.set_state("requireUpToDate", json!(true));
    g.set_state("teammateMoves", json!(1));
    let out = g.p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let behind =
        g.p.journal()
            .iter()
            .filter(|r| r["event"]["event"] == "branchBehind")
            .count();
    assert_eq!(behind, 1, "the machine heard BEHIND: {all}");
    e2e::updated_head_passed_ci(&all);
    teammates_change_stays(&g.p.origin);
    assert_eq!(
        g.p.count("1 merge"),
        1,
        "the agent merges once, after the update: {:?}",
        g.p.invocations()
    );
    assert!(!all.contains("escalat"), "{all}");
    let failed =
        g.p.journal()
            .iter()
            .filter(|r| r["event"]["event"] == "stepFailed")
            .count();
    assert_eq!(failed, 0, "no attempt spent: {all}");
}

/// A teammate's commit on main survived the runner's update and merge.
fn teammates_change_stays(origin: &std::path::Path) {
    let files = e2e::git(origin, &["ls-tree", "--name-only", "main"]);
    assert!(
        files.contains("teammate-"),
        "the teammate's change stays: {files}"
    );
}
