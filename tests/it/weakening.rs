//! Green honestly (`TESTS_WEAKENED`, docs/classification.md): the real binary on real git
//! fixture repositories whose tests, snapshot and CI workflow are on origin's main, with the
//! builtin commitPush checking the branch before its push. The scripted agent's change is
//! made by a shell tool (`tool` outcome) per step: a fix of the code passes; skipping a test,
//! removing an assertion, rewriting a snapshot or letting a CI job fail is caught with the
//! right file and line, handed back to the agent once, then escalated quoting the facts; a
//! removal the spec lists passes; with `tests.weakening: "ask"` the push waits for a person.

use crate::e2e;

mod languages;
mod repairs;

use e2e::{code, text, Project};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PARSE_RS: &str = "#[test]
fn parses_empty_input() {
    assert_eq!(\"\".len(), 0);
}

#[test]
fn parses_words() {
    assert_eq!(\"ab\".len(), 2);
}
";

const APP_TEST_JS: &str = "test(\"greets\", () => {
  expect(greet(\"a\")).toBe(\"hello a\");
  expect(greet(\"\")).toBe(\"hello\");
});
";

const WORKFLOW: &str = "name: CI
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Tests
        run: cargo test
";

const SNAPSHOT: &str = "---
source: tests/greet.rs
---
hello a
hello b
";

/// A project with the fixture files on origin's main, builtin git steps, the scripted agent
/// running `tool` (a shell script written from `tool_body`) at the steps `script` names.
fn project(script: Value, extra: Value, tool_body: &str) -> (Project, PathBuf) {
    let p = Project::new(
        &[(1, "Fix the parser", "Make the parser pass.")],
        script,
        json!({}),
    );
    let mut cfg = json!({ "steps": e2e::builtin_steps() });
    if let (Some(c), Some(more)) = (cfg.as_object_mut(), extra.as_object()) {
        for (k, v) in more {
            c.insert(k.clone(), v.clone());
        }
    }
    p.set_config(cfg);
    for (path, text) in [
        ("tests/parse.rs", PARSE_RS),
        ("test/app.test.js", APP_TEST_JS),
        (".github/workflows/ci.yml", WORKFLOW),
        ("tests/snapshots/greet__out.snap", SNAPSHOT),
    ] {
        let file = p.project.join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&file, text).expect("fixture");
    }
    e2e::git(&p.project, &["add", "-A"]);
    e2e::git(
        &p.project,
        &["commit", "-q", "-m", "tests, CI and snapshots"],
    );
    e2e::git(&p.project, &["push", "-q", "origin", "HEAD"]);
    let tool = p.root.join("agent-tool");
    std::fs::write(&tool, format!("#!/bin/sh\nset -e\n{tool_body}\n")).expect("tool");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (p, tool)
}

fn run(p: &Project, tool: &Path) -> (i32, String) {
    let out = p.run_env(
        &[],
        &[("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8"))],
    );
    (code(&out), text(&out))
}

fn escalation(p: &Project) -> String {
    p.issue(1)["escalation"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The agent's change at implement: `sed` edits (GNU sed, in place) in the clone.
const SKIP_THE_TEST: &str =
    "sed -i 's/^fn parses_empty_input/#[ignore]\\nfn parses_empty_input/' tests/parse.rs";

#[test]
fn a_fix_of_the_code_that_adds_a_test_passes_and_the_pr_says_so() {
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"]}}),
        json!({}),
        "printf '\\n#[test]\\nfn parses_spaces() {\\n    assert_eq!(\" \".len(), 1);\\n}\\n' >> tests/parse.rs",
    );
    let (code, all) = run(&p, &tool);
    assert_eq!(code, 0, "{all}");
    assert!(!all.contains("TESTS_WEAKENED"), "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let pr = std::fs::read_to_string(p.project.join(".git/sdlc-runner/pulls/1.json"))
        .expect("the PR record");
    assert!(pr.contains("no test removed, skipped or emptied"), "{pr}");
}

#[test]
fn weakened_tests_are_handed_back_once_with_file_and_line_then_escalated() {
    // At implement the agent skips a test, drops an assertion, rewrites the snapshot and lets
    // the CI job's tests fail; its repair of the refused push changes nothing.
    let body = format!(
        "{SKIP_THE_TEST}
sed -i '/toBe(\"hello\")/d' test/app.test.js
printf 'one\\ntwo\\nthree\\nfour\\n' > tests/snapshots/greet__out.snap
sed -i 's/run: cargo test$/run: cargo test || true/' .github/workflows/ci.yml"
    );
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"], "commitPush": ["no-branch"]}}),
        json!({}),
        &body,
    );
    let (code, all) = run(&p, &tool);
    assert_eq!(code, 1, "one issue, escalated: {all}");
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    // Handed back once: the repair's prompt carries every fact, file and line.
    let prompt = p.prompt(1, "commitPush", 2).expect("the repair prompt");
    let facts = [
        "you skipped `parses_empty_input` (#[ignore]) in tests/parse.rs:3",
        "you removed 1 of the 2 assertions of `greets` in test/app.test.js:1",
        "you replaced the snapshot wholesale (0 of its 5 lines kept) in tests/snapshots/greet__out.snap:1",
        "you let the step `Tests` of the CI job `test` fail (`|| true`) in .github/workflows/ci.yml:9",
    ];
    for fact in facts {
        assert!(prompt.contains(fact), "{fact}\n{prompt}");
    }
    assert!(prompt.contains("The runner refused to push"), "{prompt}");
    let repairs = p
        .invocations()
        .iter()
        .filter(|i| i.starts_with("1 commitPush "))
        .count();
    assert_eq!(repairs, 1, "handed back once: {:?}", p.invocations());
    // Then escalated, quoting them.
    let said = escalation(&p);
    assert!(said.contains("TESTS_WEAKENED"), "{said}");
    for fact in facts {
        assert!(said.contains(fact), "{fact}\n{said}");
    }
    // Nothing weakened reached origin through the runner's push.
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
    // `status` shows them.
    let status = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    let shown = text(&status);
    assert!(
        shown.contains("last failure: TESTS_WEAKENED in commitPush"),
        "{shown}"
    );
    for fact in facts {
        assert!(
            shown.contains(&format!("  weakened: {fact}")),
            "{fact}\n{shown}"
        );
    }
}

#[test]
fn with_allow_the_same_weakening_is_not_checked_and_merges() {
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"]}}),
        json!({"tests": {"weakening": "allow"}}),
        SKIP_THE_TEST,
    );
    let (code, all) = run(&p, &tool);
    assert_eq!(code, 0, "{all}");
    assert!(!all.contains("TESTS_WEAKENED"), "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
}

#[test]
fn a_deleted_test_put_back_after_the_hand_back_merges() {
    // implement deletes the failing test; handed back, the agent restores it.
    let body = "case \"$SDLC_STEP\" in
implement) sed -i '/^#\\[test\\]$/{N;/parses_empty_input/{N;N;d}}' tests/parse.rs ;;
commitPush) git show origin/main:tests/parse.rs > tests/parse.rs ;;
esac";
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"], "commitPush": ["tool"]}}),
        json!({}),
        body,
    );
    let (code, all) = run(&p, &tool);
    assert_eq!(code, 0, "{all}");
    let prompt = p.prompt(1, "commitPush", 2).expect("the repair prompt");
    assert!(
        prompt.contains(
            "you removed the test `parses_empty_input` in tests/parse.rs:2 (the base's line)"
        ),
        "{prompt}"
    );
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    assert_eq!(p.issue(1)["escalated"], false, "{all}");
}

#[test]
fn a_test_the_spec_removes_passes_and_the_pr_names_it() {
    let body = "case \"$SDLC_STEP\" in
implement)
  sed -i '/^#\\[test\\]$/{N;/parses_words/{N;N;d}}' tests/parse.rs
  for f in specs/1-*/requirements.md; do
    printf '\\n## Removes\\n\\n- `parses_words` (the old API)\\n' >> \"$f\"
  done ;;
esac";
    let (p, tool) = project(json!({"steps": {"implement": ["tool"]}}), json!({}), body);
    let (code, all) = run(&p, &tool);
    let spec = std::fs::read_to_string(p.project.join("specs/1-issue-1/requirements.md"))
        .unwrap_or_default();
    assert_eq!(code, 0, "{spec}\n{all}");
    assert!(!all.contains("TESTS_WEAKENED"), "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let pr = std::fs::read_to_string(p.project.join(".git/sdlc-runner/pulls/1.json"))
        .expect("the PR record");
    assert!(
        pr.contains("you removed the test `parses_words` in tests/parse.rs:7"),
        "{pr}"
    );
}

#[test]
fn with_ask_the_push_waits_for_a_persons_approval_and_the_pr_says_who_let_it_through() {
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"]}}),
        json!({"tests": {"weakening": "ask"}, "decisionTimeoutMinutes": 1}),
        SKIP_THE_TEST,
    );
    let runner = {
        let mut cmd = p.command(&["run", "--config", p.config.to_str().expect("utf8")]);
        cmd.env("SDLC_FAKE_AGENT_TOOL", &tool)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().expect("spawn runner")
    };
    let decision = p.project.join(".git/sdlc-runner/decision.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !decision.exists() {
        assert!(
            Instant::now() < deadline,
            "no decision asked for: {:?}",
            p.invocations()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let request: Value =
        serde_json::from_slice(&std::fs::read(&decision).expect("request")).expect("json");
    assert_eq!(request["step"], "commitPush", "{request}");
    let failure = request["lastFailure"].as_str().unwrap_or_default();
    assert!(failure.contains("TESTS_WEAKENED"), "{request}");
    // The reason is the weakening, not spent attempts.
    let reason = request["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the branch weakens the tests") && reason.contains("retry approves"),
        "{request}"
    );
    assert!(
        !reason.contains("used up its automatic attempts"),
        "{request}"
    );
    // `status --json` says it is held for a person.
    let status = p
        .command(&[
            "status",
            "--json",
            "--config",
            p.config.to_str().expect("utf8"),
        ])
        .output()
        .expect("status");
    let doc: Value = serde_json::from_slice(&status.stdout).expect("status json");
    let decided = doc["lastFailure"]["decided"].as_str().unwrap_or_default();
    assert!(decided.contains("held for a person's approval"), "{doc}");
    // Nothing pushed while it waits, and no repair ran.
    assert!(
        !p.invocations()
            .iter()
            .any(|i| i.starts_with("1 commitPush ")),
        "{:?}",
        p.invocations()
    );
    let answer = p.decide("retry");
    assert_eq!(code(&answer), 0, "{}", text(&answer));
    let out = e2e::wait_output(runner, Duration::from_secs(90));
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let pr = std::fs::read_to_string(p.project.join(".git/sdlc-runner/pulls/1.json"))
        .expect("the PR record");
    assert!(pr.contains("approved by a person"), "{pr}");
    assert!(pr.contains("tests/parse.rs:3"), "{pr}");
}

#[test]
fn an_agents_own_commit_push_is_checked_before_its_branch_goes_further() {
    // commitPush is the agent's: it commits and pushes the skipped test itself. The check
    // runs right after its push: handed back with the facts, the agent puts the test back.
    let body = "case \"$SDLC_STEP\" in
implement) sed -i 's/^fn parses_empty_input/#[ignore]\\nfn parses_empty_input/' tests/parse.rs ;;
commitPush) git show origin/main:tests/parse.rs > tests/parse.rs ;;
esac";
    let mut steps = e2e::builtin_steps();
    steps.as_object_mut().expect("steps").remove("commitPush");
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"], "commitPush": ["ok", "tool"]}}),
        json!({ "steps": steps }),
        body,
    );
    let (code, all) = run(&p, &tool);
    assert_eq!(code, 0, "{all}");
    let prompt = p.prompt(1, "commitPush", 2).expect("the repair prompt");
    assert!(
        prompt.contains("TESTS_WEAKENED")
            && prompt.contains("you skipped `parses_empty_input` (#[ignore]) in tests/parse.rs:3")
            && prompt.contains("The branch you pushed weakens what CI checks"),
        "{prompt}"
    );
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let pr = std::fs::read_to_string(p.project.join(".git/sdlc-runner/pulls/1.json"))
        .expect("the PR record");
    assert!(pr.contains("no test removed, skipped or emptied"), "{pr}");
}

#[test]
fn an_agents_own_commit_push_that_weakens_again_is_escalated_and_never_merged() {
    let mut steps = e2e::builtin_steps();
    steps.as_object_mut().expect("steps").remove("commitPush");
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"], "commitPush": ["ok"]}}),
        json!({ "steps": steps }),
        SKIP_THE_TEST,
    );
    let (code, all) = run(&p, &tool);
    assert_eq!(code, 1, "{all}");
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    let said = escalation(&p);
    assert!(
        said.contains("you skipped `parses_empty_input` (#[ignore]) in tests/parse.rs:3"),
        "{said}"
    );
    // No PR was opened on the weakened branch, nothing merged.
    assert!(
        !p.project.join(".git/sdlc-runner/pulls/1.json").exists(),
        "{all}"
    );
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
    let status = p
        .command(&[
            "status",
            "--json",
            "--config",
            p.config.to_str().expect("utf8"),
        ])
        .output()
        .expect("status");
    let doc: Value = serde_json::from_slice(&status.stdout).expect("status json");
    assert_eq!(
        doc["lastFailure"]["decided"], "escalated: weakened again after the hand-back",
        "{doc}"
    );
}
