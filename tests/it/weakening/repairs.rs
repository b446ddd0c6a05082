//! The check again for each repair round: CI fails on the branch commitPush pushed, and the
//! repair that makes it pass skips the failing test. Whether the runner pushes the repair
//! (a builtin monitorCI) or the agent that watches CI pushes it itself, the new head is
//! compared with its base before CI's verdict can lead to a merge: caught with file and line,
//! handed back once, then escalated, nothing merged; a clean repair merges. And the restart
//! window: a runner killed between its agent's push and the check checks that head when it
//! runs again.

use super::{escalation, project, SKIP_THE_TEST};
use crate::e2e::{self, text, Project};
use serde_json::json;
use std::path::Path;

/// The local CI: the fixture's test `parses_empty_input` fails until the code is fixed (a
/// file `fixed` committed); skipping the test makes CI pass as well.
const CI: &str = "grep -q ignore tests/parse.rs || test -e fixed || { echo 'test parses_empty_input ... FAILED'; exit 1; }";

/// The fact the check finds in the repair that skips the test.
const SKIPPED: &str = "you skipped `parses_empty_input` (#[ignore]) in tests/parse.rs:3";

/// The agent's repair skips the failing test (once: a second run finds it skipped already).
const SKIP_ONCE: &str = "grep -q ignore tests/parse.rs || sed -i 's/^fn parses_empty_input/#[ignore]\\nfn parses_empty_input/' tests/parse.rs";

/// The agent's repair fixes the code.
const FIX: &str = "echo fixed > fixed";

/// The agent that watches CI commits and pushes its repair itself.
const AND_PUSH: &str = "git add -A\ngit commit -qm 'fix CI' || true\ngit push -q origin HEAD";

/// Builtin steps with the local CI above; `agent_ci`: monitorCI is the agent's.
fn repaired(agent_ci: bool, repair: &str) -> (Project, std::path::PathBuf) {
    let mut steps = e2e::builtin_steps();
    if agent_ci {
        steps.as_object_mut().expect("steps").remove("monitorCI");
    }
    let extra = json!({
        "steps": steps,
        "localCi": {"command": ["sh", "-c", CI], "timeoutMin": 1},
    });
    let body = format!("case \"$SDLC_STEP\" in\nmonitorCI)\n{repair}\n;;\nesac");
    project(json!({"steps": {"monitorCI": ["tool"]}}), extra, &body)
}

fn run(p: &Project, tool: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut all = vec![("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8"))];
    all.extend_from_slice(env);
    let out = p.run_env(&[], &all);
    (out.status.code(), text(&out))
}

fn attempts(p: &Project, step: &str) -> usize {
    let at = format!("1 {step} ");
    p.invocations()
        .iter()
        .filter(|i| i.starts_with(&at))
        .count()
}

/// Escalated with the fact, handed back once with it (the prompt of the step's attempt
/// `handed`), nothing merged.
fn caught_then_escalated(p: &Project, (step, handed): (&str, u32), all: &str) {
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    let prompt = p.prompt(1, step, handed).expect("the hand-back's prompt");
    assert!(
        prompt.contains("TESTS_WEAKENED") && prompt.contains(SKIPPED),
        "{prompt}"
    );
    let said = escalation(p);
    assert!(
        said.contains("TESTS_WEAKENED") && said.contains(SKIPPED),
        "{said}"
    );
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
}

#[test]
fn the_agent_watching_ci_that_pushes_a_skipped_test_is_handed_back_then_escalated() {
    let (p, tool) = repaired(true, &format!("{SKIP_ONCE}\n{AND_PUSH}"));
    let (code, all) = run(&p, &tool, &[]);
    assert_eq!(code, Some(1), "{all}");
    caught_then_escalated(&p, ("monitorCI", 2), &all);
    assert_eq!(attempts(&p, "monitorCI"), 2, "{:?}", p.invocations());
    // The skip reached origin's branch (the agent pushed it), never main.
    let pushed = e2e::git(&p.origin, &["log", "--format=%s", "--all"]);
    assert!(pushed.contains("fix CI"), "{pushed}");
}

#[test]
fn the_agent_watching_ci_that_pushes_a_fix_merges() {
    let (p, tool) = repaired(true, &format!("{FIX}\n{AND_PUSH}"));
    let (code, all) = run(&p, &tool, &[]);
    assert_eq!(code, Some(0), "{all}");
    assert!(!all.contains("TESTS_WEAKENED"), "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1], "{all}");
}

#[test]
fn a_ci_repair_the_runner_pushes_that_skips_the_test_is_handed_back_then_escalated() {
    let (p, tool) = repaired(false, SKIP_ONCE);
    let (code, all) = run(&p, &tool, &[]);
    assert_eq!(code, Some(1), "{all}");
    // CI failed on commitPush's head first (monitorCI's first attempt, the runner's look):
    // the repair was handed its failure.
    let first = p.prompt(1, "monitorCI", 2).unwrap_or_default();
    assert!(first.contains("parses_empty_input ... FAILED"), "{first}");
    caught_then_escalated(&p, ("monitorCI", 3), &all);
    // The agent ran twice: the repair of failing CI, and the hand-back.
    assert_eq!(attempts(&p, "monitorCI"), 2, "{:?}", p.invocations());
    let refused = p.prompt(1, "monitorCI", 3).unwrap_or_default();
    assert!(refused.contains("The runner refused to push"), "{refused}");
    // The runner pushed nothing weakened.
    let branch = e2e::git(&p.origin, &["log", "--format=%s", "--all"]);
    assert!(!branch.contains("make CI pass"), "{branch}");
}

#[test]
fn a_ci_repair_the_runner_pushes_that_fixes_the_code_merges() {
    let (p, tool) = repaired(false, FIX);
    let (code, all) = run(&p, &tool, &[]);
    assert_eq!(code, Some(0), "{all}");
    assert!(!all.contains("TESTS_WEAKENED"), "{all}");
    assert!(all.contains("monitorCI: failed"), "CI failed first: {all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1], "{all}");
}

/// commitPush is the agent's, which pushes a skipped test; the runner is killed (SIGKILL)
/// right after the agent exits, before the check. The run after it must not take the pushed
/// branch for commitPush done: the head is checked, handed back, then escalated.
#[test]
fn a_runner_killed_between_its_agents_push_and_the_check_checks_that_head_on_restart() {
    let mut steps = e2e::builtin_steps();
    steps.as_object_mut().expect("steps").remove("commitPush");
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"], "commitPush": ["ok"]}}),
        json!({ "steps": steps }),
        SKIP_THE_TEST,
    );
    let crash: (&str, &str) = (
        sdlc_runner::failpoint::CRASH_AT_ENV,
        "agent pushed: before the weakening check",
    );
    let (killed, first) = run(&p, &tool, &[crash]);
    assert_eq!(killed, None, "killed at the failpoint: {first}");
    let pushed = e2e::git(
        &p.origin,
        &["show", "--format=", "--all", "--", "tests/parse.rs"],
    );
    assert!(pushed.contains("#[ignore]"), "the agent pushed: {pushed}");
    let (code, all) = run(&p, &tool, &[]);
    assert_eq!(code, Some(1), "{first}\n---\n{all}");
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    let said = escalation(&p);
    assert!(said.contains(SKIPPED), "{said}");
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
    assert!(
        !p.project.join(".git/sdlc-runner/pulls/1.json").exists(),
        "no PR on the unchecked head: {all}"
    );
}

/// A reviewer asks for changes; the round's agent skips the failing test, and the runner's
/// push of the round refuses it: handed back with the facts, then escalated, nothing merged.
#[test]
fn a_review_round_that_skips_the_test_is_handed_back_then_escalated() {
    let extra = json!({"review": {"requireApproval": true, "approvalTimeoutMinutes": 0.25}});
    // The round's agent is told `SDLC_STEP=addressReview`; its script entry is monitorCI's.
    let body = format!("case \"$SDLC_STEP\" in\naddressReview|monitorCI)\n{SKIP_ONCE}\n;;\nesac");
    let (p, tool) = project(json!({"steps": {"monitorCI": ["tool"]}}), extra, &body);
    let wait = std::time::Duration::from_secs(60);
    let child = p
        .command(&["run", "--config", p.config.to_str().expect("utf8")])
        .env("SDLC_FAKE_AGENT_TOOL", &tool)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn runner");
    p.wait_for_journal("reviewWanted", wait);
    let ask = ["--request-changes", "Make it pass.", "--author", "ann"];
    assert_eq!(e2e::code(&p.review(1, &ask)), 0);
    let out = e2e::wait_output(child, wait);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    let prompts = std::fs::read_to_string(p.root.join("prompts.log")).unwrap_or_default();
    // The round again, with the feedback and the facts.
    let handed = prompts
        .split("\n== ")
        .filter(|t| t.starts_with("1 addressReview ") || t.starts_with("== 1 addressReview "))
        .filter(|t| t.contains("TESTS_WEAKENED") && t.contains(SKIPPED))
        .count();
    assert_eq!(handed, 1, "handed back once with the facts: {prompts}");
    let said = escalation(&p);
    assert!(said.contains(SKIPPED), "{said}");
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
}

/// A teammate adds an assertion to a test on main; the branch changed the same line, so the
/// merge conflicts. The agent's repair of the conflict keeps the branch's side and drops the
/// teammate's assertion. The runner concludes the merge, and its update pushes the branch only
/// after the check, which compares it with main, its new base: the dropped assertion is a
/// fact, handed back, then escalated; nothing is merged and main keeps the assertion.
#[test]
fn a_conflict_repair_that_drops_mains_new_assertion_is_refused_then_escalated() {
    let body = r#"case "$SDLC_STEP" in
implement)
  t=$(mktemp -d)
  git clone -q "$(git remote get-url origin)" "$t"
  sed -i 's/^    assert_eq!("ab".len(), 2);$/    assert_eq!("ab".len(), 2);\n    assert_eq!("abc".len(), 3);/' "$t/tests/parse.rs"
  git -C "$t" -c user.name=person -c user.email=person@example.com commit -qam 'person: one more assertion'
  git -C "$t" push -q origin HEAD:main
  rm -rf "$t"
  sed -i 's/^    assert_eq!("ab".len(), 2);$/    assert_eq!("ab".len(), 2, "two letters");/' tests/parse.rs
;;
esac"#;
    let resolve = ["resolve-conflict", "resolve-conflict", "resolve-conflict"];
    let (p, tool) = project(
        json!({"steps": {"implement": ["tool"], "merge": resolve}}),
        json!({}),
        body,
    );
    let (code, all) = run(&p, &tool, &[]);
    assert_eq!(code, Some(1), "{all}");
    assert!(
        p.journal()
            .iter()
            .any(|r| r["event"]["event"] == "mergeConflict"),
        "the merge met the teammate's change: {all}"
    );
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    let said = escalation(&p);
    assert!(
        said.contains("TESTS_WEAKENED") && said.contains("tests/parse.rs"),
        "{said}"
    );
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
    let main = e2e::git(&p.origin, &["show", "main:tests/parse.rs"]);
    assert!(main.contains("\"abc\".len(), 3"), "{main}");
    let refs = e2e::git(
        &p.origin,
        &["for-each-ref", "--format=%(refname)", "refs/heads"],
    );
    for r in refs.lines() {
        let held = e2e::git(&p.origin, &["show", &format!("{r}:tests/parse.rs")]);
        let lost = held.contains("two letters") && !held.contains("\"abc\".len(), 3");
        let merged = e2e::git(&p.origin, &["log", "--format=%s", r]);
        assert!(
            !(lost && merged.contains("conflict resolved")),
            "the resolution that drops the assertion reached origin's {r}: {held}"
        );
    }
}
