//! PR reviews on the local forge, end to end: the real binary, a real git project, the local
//! tracker and a person speaking through `sdlc-runner review N`.

use crate::e2e;

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

/// The gate, with more review keys (`maxReviewRounds`, `ignoreAuthors`).
fn gate_with(require_approval: bool, minutes: f64, more: serde_json::Value) -> serde_json::Value {
    let mut g = gate(require_approval, minutes);
    if let (Some(review), Some(more)) = (g["review"].as_object_mut(), more.as_object()) {
        for (k, v) in more {
            review.insert(k.clone(), v.clone());
        }
    }
    g
}

/// The fake agent of a review round leaves a change for the runner to commit and push.
fn round_leaves_a_change() -> serde_json::Value {
    json!({"steps": {"monitorCI": ["write-shared"]}})
}

/// One issue whose review round's agent leaves a change, under the config `extra`.
fn one_issue_with_a_round(extra: serde_json::Value) -> Project {
    Project::new(
        &[(1, "First issue", "Do one thing.")],
        round_leaves_a_change(),
        extra,
    )
}

/// Every prompt the fake agent was given, in order.
fn prompts(p: &Project) -> String {
    std::fs::read_to_string(p.root.join("prompts.log")).unwrap_or_default()
}

const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn a_request_for_changes_is_answered_in_one_round_pushed_checked_again_and_merged_once_approved() {
    // 15 s of waits: 10 s, then 5 s.
    let p = one_issue_with_a_round(gate_with(
        true,
        0.25,
        json!({"ignoreAuthors": ["lint-bot"]}),
    ));
    let child = p.spawn(&[]);
    // The PR is open and waits for a reviewer; the reviewer and a bot speak.
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = [
        "--request-changes",
        "Rename foo to bar.\nAnd revoke ghp_abcdefghijklmnopqrstuvwxyz0123456789 please.",
        "--author",
        "ann",
    ];
    assert_eq!(code(&p.review(1, &ask)), 0);
    let bot = [
        "--comment",
        "Style nit from the bot.",
        "--author",
        "lint-bot",
    ];
    assert_eq!(code(&p.review(1, &bot)), 0);
    // The round: the agent answers, the runner pushes; then the reviewer approves.
    let all = text(&approved_after_the_round(&p, child));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    let told = prompts(&p);
    assert_eq!(
        told.matches("Rename foo to bar.").count(),
        1,
        "the feedback was handed once: {told}"
    );
    assert!(told.contains("ann wrote"), "{told}");
    assert!(
        told.contains("ghp_***") && !told.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        "the feedback is redacted: {told}"
    );
    assert!(
        !told.contains("Style nit from the bot."),
        "an ignored author is left out: {told}"
    );
    // The round's change was committed by the runner, pushed, and CI looked at it again
    // before the merge.
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(log.contains("fix: address review feedback (#1)"), "{log}");
    let journal = std::fs::read_to_string(p.journal_path()).unwrap();
    let round = journal.find("\"addressReview\"").expect("a round");
    assert!(
        journal[round..].contains("lookAtCi"),
        "CI looked at again after the round: {journal}"
    );
}

/// A round whose agent changes nothing is said to have changed nothing: no "pushed", no
/// push, no commit; the reviewer then decides as before.
#[test]
fn a_review_round_that_changed_nothing_is_not_narrated_as_pushed() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({"steps": {"monitorCI": ["no-branch"]}}),
        gate_with(true, 0.25, json!({})),
    );
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    let all = text(&approved_after_the_round(&p, child));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    let round = all
        .lines()
        .find(|l| l.contains("review round 1:") && !l.contains("handing the agent"))
        .unwrap_or_else(|| panic!("the round's end is narrated: {all}"));
    assert!(round.contains("the round changed nothing"), "{round}");
    assert!(!round.contains("pushed"), "{round}");
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(!log.contains("address review feedback"), "{log}");
}

#[test]
fn a_reviewer_who_keeps_asking_escalates_after_max_review_rounds_quoting_the_feedback() {
    let p = one_issue_with_a_round(gate_with(true, 0.25, json!({"maxReviewRounds": 1})));
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let first = ["--request-changes", "First: rename foo.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &first)), 0);
    p.wait_for_journal("\"repaired\"", WAIT);
    let second = [
        "--request-changes",
        "Second: also rename baz.",
        "--author",
        "ann",
    ];
    assert_eq!(code(&p.review(1, &second)), 0);
    let out = e2e::wait_output(child, WAIT);
    let all = text(&out);
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{all}");
    let issue = p.issue(1);
    assert_eq!(issue["escalated"], json!(true), "{issue} {all}");
    let said = issue.to_string();
    assert!(
        said.contains("Second: also rename baz.") && said.contains("1 review round(s)"),
        "the escalation quotes what is unresolved: {said}"
    );
    let told = prompts(&p);
    assert!(told.contains("First: rename foo."), "{told}");
    assert!(
        !told.contains("Second: also rename baz."),
        "no round past the limit: {told}"
    );
}

#[test]
fn the_same_feedback_is_never_handed_twice_across_rounds_and_a_second_run() {
    let p = one_issue_with_a_round(gate_with(true, 0.25, json!({})));
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    // One round, then the request still stands with nothing new: the run ends waiting for
    // the reviewer.
    let out = e2e::wait_output(child, WAIT);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("issue #1: waiting for a person"), "{all}");
    assert_eq!(prompts(&p).matches("Rename foo to bar.").count(), 1);
    // The next run looks again: the request stands, its feedback was answered already.
    p.set_config(gate_with(true, 0.0, json!({})));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("issue #1: waiting for a person"), "{all}");
    let told = prompts(&p);
    assert_eq!(
        told.matches("Rename foo to bar.").count(),
        1,
        "never handed twice: {told}"
    );
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{all}");
}

#[test]
fn bounds_count_the_review_rounds() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let bounds = |rounds: u32| {
        p.set_config(gate_with(false, 1.0, json!({"maxReviewRounds": rounds})));
        let out = p
            .command(&["bounds", "--config", p.config.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out));
        text(&out)
    };
    let figure = |all: &str, line: &str| -> u64 {
        let l = all
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("{line} in {all}"));
        l.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (none, three) = (bounds(0), bounds(3));
    assert!(
        three.contains("at most 3 addressReview round(s) per cycle"),
        "{three}"
    );
    let per_cycle = "agent invocations in one cycle (worst case):";
    assert_eq!(figure(&three, per_cycle), figure(&none, per_cycle) + 3);
}

#[test]
fn a_dry_run_shows_the_review_round() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let mut cfg = gate_with(false, 1.0, json!({"maxReviewRounds": 3}));
    cfg["steps"] = json!({"addressReview": {"model": "round-model"}});
    p.set_config(cfg);
    let out = p.run(&["--dry-run"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let line = all
        .lines()
        .find(|l| l.starts_with("addressReview: "))
        .unwrap_or_else(|| panic!("{all}"));
    assert!(
        line.contains("on a request for changes with new feedback, up to 3 round(s)")
            && line.contains("--model round-model"),
        "the round on its own step's settings: {line}"
    );
}

/// `sdlc-runner status` (text and `--json`) of `p`.
fn status(p: &Project, json: bool) -> String {
    let mut args = vec!["status", "--config", p.config.to_str().unwrap()];
    if json {
        args.push("--json");
    }
    let out = p.command(&args).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn status_shows_the_wait_for_review_and_the_rounds_used() {
    let p = one_issue_with_a_round(gate_with(true, 0.5, json!({"maxReviewRounds": 3})));
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let shown = status(&p, false);
    assert!(
        shown.contains("waiting:  for review") && shown.contains("review rounds: 0/3"),
        "{shown}"
    );
    let ask = ["--request-changes", "Rename foo.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    p.wait_for_journal("\"repaired\"", WAIT);
    let json: serde_json::Value = serde_json::from_str(&status(&p, true)).unwrap();
    assert_eq!(json["counters"]["reviewRounds"], json!(1), "{json}");
    assert_eq!(json["counters"]["maxReviewRounds"], json!(3), "{json}");
    assert_eq!(code(&p.review(1, &["--approve", "--author", "ann"])), 0);
    let out = e2e::wait_output(child, WAIT);
    assert_eq!(code(&out), 0, "{}", text(&out));
}

/// An agent command for `steps.addressReview.agent.command`: a script that records each
/// call's arguments (`round-argv.log`) and environment (`round-env.log`), then runs `then`
/// (the fake agent: `exec "$@"` after the runner binary).
fn round_agent(p: &Project, then: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = p.root.join("round-agent.sh");
    let script = format!(
        "#!/bin/sh\necho '== call' >> '{root}/round-argv.log'\nprintf '%s\\n' \"$@\" >> '{root}/round-argv.log'\nenv >> '{root}/round-env.log'\n{then}\n",
        root = p.root.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_round_runs_on_the_address_review_steps_own_agent_model_skill_and_prompt() {
    let p = one_issue_with_a_round(json!({}));
    let wrapper = round_agent(&p, &format!("exec '{}' \"$@\"", e2e::BIN));
    let plugins = p.root.join("nmg-plugins");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills");
    copy_dir(&fixture, &plugins.join("plugins/nmg-sdlc/skills"));
    // `review.prompt` (the older key) is still read; the step's own prompt wins over it.
    let mut cfg = gate_with(true, 0.25, json!({"prompt": "THE OLDER REVIEW PROMPT"}));
    cfg["pluginsPath"] = json!(plugins.to_str().unwrap());
    cfg["steps"] = json!({"addressReview": {
        "model": "round-model",
        "skill": "write-spec",
        "prompt": "Answer each reviewer on the branch (the round's own prompt).",
        "agent": {"command": wrapper.to_str().unwrap(), "env": {"ROUND_ONLY": "yes"}},
    }});
    p.set_config(cfg);
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    let all = text(&approved_after_the_round(&p, child));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    // Only the round ran on the step's agent, with its model and its skill.
    let argv = std::fs::read_to_string(p.root.join("round-argv.log")).unwrap_or_default();
    assert_eq!(argv.matches("== call").count(), 1, "{argv}");
    assert!(argv.contains("--model\nround-model\n"), "{argv}");
    let skill =
        std::fs::read_to_string(plugins.join("plugins/nmg-sdlc/skills/write-spec/SKILL.md"))
            .unwrap();
    let first_line = skill.lines().find(|l| !l.trim().is_empty()).unwrap();
    assert!(argv.contains(first_line), "the skill's text: {argv}");
    let env = std::fs::read_to_string(p.root.join("round-env.log")).unwrap_or_default();
    assert!(env.contains("ROUND_ONLY=yes"), "{env}");
    // The round's prompt: its own instruction, the skill's directory, then the feedback.
    let told = prompts(&p);
    let round = told
        .split("\n== ")
        .find(|s| s.contains("Rename foo to bar."))
        .unwrap_or_else(|| panic!("the round's prompt: {told}"));
    assert!(
        round.contains("Answer each reviewer on the branch (the round's own prompt)."),
        "{round}"
    );
    assert!(!told.contains("THE OLDER REVIEW PROMPT"), "{round}");
    assert!(round.contains("The skill's directory is"), "{round}");
    // The other steps kept the global model.
    assert!(!argv.contains("implement"), "{argv}");
}

#[test]
fn the_older_review_prompt_still_instructs_a_round_without_a_prompt_of_its_own() {
    let p = one_issue_with_a_round(gate_with(
        true,
        0.25,
        json!({"prompt": "THE OLDER REVIEW PROMPT"}),
    ));
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    approved_after_the_round(&p, child);
    let told = prompts(&p);
    let round = told
        .split("\n== ")
        .find(|s| s.contains("Rename foo to bar."))
        .unwrap_or_else(|| panic!("the round's prompt: {told}"));
    assert!(round.contains("THE OLDER REVIEW PROMPT"), "{round}");
}

#[test]
fn a_round_is_bounded_by_the_address_review_steps_own_time_limit() {
    let p = one_issue_with_a_round(json!({}));
    // The round's agent never answers; monitorCI's ten minutes would let it hang.
    let wrapper = round_agent(&p, "exec sleep 300");
    let mut cfg = gate_with(true, 0.25, json!({}));
    cfg["maxRetriesPerStep"] = json!(1);
    cfg["steps"] = json!({"addressReview": {
        "timeoutMin": 0.03,
        "agent": {"command": wrapper.to_str().unwrap()},
    }});
    p.set_config(cfg);
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    let out = e2e::wait_output(child, WAIT);
    let all = text(&out);
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{all}");
    let journal = std::fs::read_to_string(p.journal_path()).unwrap();
    assert!(journal.contains("\"TIMEOUT\""), "{journal}");
    assert_eq!(p.issue(1)["escalated"], json!(true), "{all}");
}

#[test]
fn a_journal_with_a_round_written_before_address_review_was_a_step_still_replays() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/journals/review-round-before-address-review-step.jsonl");
    let journal = std::fs::read_to_string(&fixture).unwrap();
    assert!(journal.contains("\"addressReview\""), "a round is in it");
    let out = std::process::Command::new(e2e::BIN)
        .args(["replay", fixture.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out));
}

#[test]
fn config_check_and_schema_know_the_address_review_step() {
    let p = Project::new(&[(1, "First issue", "Do one thing.")], json!({}), json!({}));
    let check = |steps: serde_json::Value| {
        let mut cfg = gate_with(false, 1.0, json!({"maxReviewRounds": 3}));
        cfg["steps"] = steps;
        p.set_config(cfg);
        p.command(&["config", "check", "--config", p.config.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = check(json!({"addressReview": {"model": "round-model", "timeoutMin": 5}}));
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(
        text(&out).contains("review:  up to 3 addressReview round(s) on round-model"),
        "{}",
        text(&out)
    );
    let out = check(json!({"addressReview": {"run": "builtin", "enabled": false}}));
    assert_eq!(code(&out), 2, "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains("steps.addressReview.run: addressReview needs a model"),
        "{all}"
    );
    assert!(
        all.contains("steps.addressReview.enabled: set review.maxReviewRounds to 0"),
        "{all}"
    );
    let schema = p.command(&["config", "schema"]).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert!(
        schema["definitions"]["StepsFile"]["properties"]["addressReview"].is_object(),
        "{schema}"
    );
}

#[test]
fn an_ignored_bots_request_for_changes_does_not_hold_the_merge() {
    // One issue under a gate that ignores `lint-bot`, with a request for changes by `author`.
    let requested_by = |author: &str, body: &str| {
        let p = Project::new(
            &[(1, "First issue", "Do one thing.")],
            json!({}),
            gate_with(false, 0.05, json!({"ignoreAuthors": ["lint-bot"]})),
        );
        let request = ["--request-changes", body, "--author", author];
        assert_eq!(code(&p.review(1, &request)), 0);
        p
    };
    let p = requested_by("lint-bot", "Style nit from the bot.");
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    assert!(!prompts(&p).contains("Style nit from the bot."));
    // Another bot, not listed, is a reviewer like any other: its request holds the merge.
    let p = requested_by("other-bot", "Fix the typo.");
    let out = p.run(&[]);
    let all = text(&out);
    assert!(all.contains("a reviewer asked for changes"), "{all}");
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{all}");
}

/// The runner is killed (SIGKILL) while the agent of a review round works. The restart counts
/// the killed round as a KILLED attempt of monitorCI and retries it as the same round: the
/// retry's agent is handed the same feedback (the one round's second attempt, not a second
/// round), its change is committed and pushed, no later round hands the comment again, nothing
/// merges over the standing request for changes, and the PR merges once when the reviewer
/// approves.
#[test]
fn a_runner_killed_during_a_round_hands_no_comment_twice_and_merges_once() {
    let p = one_issue_with_a_round(json!({}));
    // The round's first agent never ends by itself (the runner is killed under it); after
    // the restart the fake agent answers.
    let once = p.root.join("round-started");
    let wrapper = round_agent(
        &p,
        &format!(
            "if [ -e '{once}' ]; then exec '{bin}' \"$@\"; fi\necho $$ > '{once}'\nexec sleep 120",
            once = once.display(),
            bin = e2e::BIN
        ),
    );
    let mut cfg = gate_with(true, 0.5, json!({}));
    cfg["steps"] = json!({"addressReview": {"agent": {"command": wrapper.to_str().unwrap()}}});
    p.set_config(cfg);
    let mut child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    let deadline = std::time::Instant::now() + WAIT;
    while std::fs::read_to_string(&once).map_or(true, |pid| pid.trim().is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the round never began"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // While the round's agent works, `status` names the round, not monitorCI.
    let live: serde_json::Value = serde_json::from_str(&status(&p, true)).unwrap();
    assert_eq!(
        live["runningStep"]["step"],
        json!("addressReview"),
        "{live}"
    );
    child.kill().unwrap();
    let _ = child.wait();
    let stray: i32 = std::fs::read_to_string(&once)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let restarted = p.spawn(&[]);
    // After the restart the request still holds the merge: the runner waits again.
    p.wait_for_journal("\"class\":\"KILLED\"", WAIT);
    let waits_after_the_kill = || {
        let journal = std::fs::read_to_string(p.journal_path()).unwrap_or_default();
        let killed = journal
            .find("\"class\":\"KILLED\"")
            .unwrap_or(journal.len());
        journal[killed..].matches("\"reason\":\"review\"").count()
    };
    let deadline = std::time::Instant::now() + WAIT;
    while waits_after_the_kill() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no wait for the review after the restart"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(e2e::merged_issues(&p.origin).is_empty());
    assert_eq!(code(&p.review(1, &["--approve", "--author", "ann"])), 0);
    let out = e2e::wait_output(restarted, WAIT);
    e2e::kill_pids(&[stray]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "merged once: {all}");
    let told = prompts(&p);
    assert!(told.matches("Rename foo to bar.").count() <= 1, "{told}");
    let argv = std::fs::read_to_string(p.root.join("round-argv.log")).unwrap_or_default();
    assert_eq!(
        argv.matches("Rename foo to bar.").count(),
        2,
        "handed to the killed round and to its retry, the same round: {argv}"
    );
    // The retry answered the feedback: its change was committed, pushed and merged.
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(log.contains("fix: address review feedback (#1)"), "{log}");
    let journal = std::fs::read_to_string(p.journal_path()).unwrap();
    assert_eq!(rounds_asked(&journal), [(1, 1), (1, 2)], "{journal}");
    // Both calls were told what runs.
    let env = std::fs::read_to_string(p.root.join("round-env.log")).unwrap_or_default();
    assert_eq!(env.matches("SDLC_STEP=addressReview").count(), 2, "{env}");
    p.replays_exactly();
}

/// Every `AddressReview` the journal asked for, as (round, attempt).
fn rounds_asked(journal: &str) -> Vec<(u64, u64)> {
    journal
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "effect" && v["effect"]["effect"] == "addressReview")
        .map(|v| {
            let e = &v["effect"];
            (
                e["round"].as_u64().unwrap_or(0),
                e["attempt"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The round's agent fails once (a failing test): the failure is an attempt of monitorCI's,
/// and its retry is the same round, handed the same feedback and told `addressReview`; it
/// answers the feedback, and the PR merges once approved.
#[test]
fn a_round_whose_agent_fails_is_retried_as_the_round_and_answers_the_feedback() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({"steps": {"monitorCI": ["ok"], "addressReview": ["fail-test", "write-shared"]}}),
        gate_with(true, 0.25, json!({})),
    );
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    let all = text(&approved_after_the_round(&p, child));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "merged once: {all}");
    let told = prompts(&p);
    assert_eq!(
        told.matches("Rename foo to bar.").count(),
        2,
        "the round's two attempts, one round: {told}"
    );
    assert!(
        told.contains("== 1 addressReview 1\n") && told.contains("== 1 addressReview 2\n"),
        "the agent was told addressReview: {told}"
    );
    let journal = std::fs::read_to_string(p.journal_path()).unwrap();
    assert_eq!(rounds_asked(&journal), [(1, 1), (1, 2)], "{journal}");
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(log.contains("fix: address review feedback (#1)"), "{log}");
    // The narration names the round, not monitorCI.
    assert!(
        all.contains("addressReview: attempt 1 failed (TEST_ASSERTION); retrying as attempt 2"),
        "{all}"
    );
    assert!(
        all.contains("issue #1 step 9 addressReview attempt 2"),
        "{all}"
    );
    let logs = e2e::files_under(&p.root);
    assert!(
        logs.iter().any(|f| f
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("addressReview"))),
        "the round's attempt logs are named for it: {logs:?}"
    );
    p.replays_exactly();
}

/// Once the round is pushed, ann approves; the run ends with 0. Its output.
fn approved_after_the_round(p: &Project, child: std::process::Child) -> std::process::Output {
    p.wait_for_journal("\"repaired\"", WAIT);
    assert_eq!(code(&p.review(1, &["--approve", "--author", "ann"])), 0);
    let out = e2e::wait_output(child, WAIT);
    assert_eq!(code(&out), 0, "{}", text(&out));
    out
}

/// The round's agent is `wrapper` (under the review gate); once the PR waits for review, ann
/// asks for `changes`. The running runner.
fn changes_asked_of_a_round_agent(
    p: &Project,
    wrapper: &std::path::Path,
    changes: &str,
) -> std::process::Child {
    changes_asked_with_steps(p, wrapper, changes, json!({}))
}

/// As [`changes_asked_of_a_round_agent`], with the other steps' settings `steps`.
fn changes_asked_with_steps(
    p: &Project,
    wrapper: &std::path::Path,
    changes: &str,
    mut steps: serde_json::Value,
) -> std::process::Child {
    let mut cfg = gate_with(true, 0.25, json!({}));
    steps["addressReview"] = json!({"agent": {"command": wrapper.to_str().unwrap()}});
    cfg["steps"] = steps;
    p.set_config(cfg);
    let child = p.spawn(&[]);
    p.wait_for_journal("reviewWanted", WAIT);
    let ask = ["--request-changes", changes, "--author", "ann"];
    assert_eq!(code(&p.review(1, &ask)), 0);
    child
}

/// A review round whose agent first plays a teammate in a clone of their own: `teammate`
/// runs there on the branch and ends with their push; then `after` runs in the project (the
/// agent's own git), then the fake agent. Returns the run's output and text, the teammate's
/// head and the branch.
fn a_teammate_moves_the_branch_during_a_round(
    p: &Project,
    teammate: &str,
    after: &str,
) -> (std::process::Output, String, String, String) {
    let person = p.root.join("person");
    let theirs = p.root.join("theirs");
    let wrapper = round_agent(
        p,
        &format!(
            "if [ ! -e '{theirs}' ]; then\n\
             branch=$(git rev-parse --abbrev-ref HEAD)\n\
             git clone --quiet '{origin}' '{person}'\n\
             cd '{person}' && git checkout --quiet \"$branch\"\n\
             {teammate}\n\
             git rev-parse HEAD > '{theirs}'\n\
             cd - > /dev/null\n\
             {after}\n\
             fi\n\
             exec '{bin}' \"$@\"",
            origin = p.origin.display(),
            person = person.display(),
            theirs = theirs.display(),
            bin = e2e::BIN
        ),
    );
    let child = changes_asked_of_a_round_agent(p, &wrapper, "Rename foo to bar.");
    let out = e2e::wait_output(child, WAIT);
    let all = text(&out);
    let theirs = std::fs::read_to_string(&theirs)
        .unwrap_or_else(|e| panic!("the teammate's push did not happen ({e}): {all}"));
    let branch = e2e::git(&person, &["rev-parse", "--abbrev-ref", "HEAD"]);
    (out, all, theirs.trim().to_string(), branch)
}

/// A person's move the round's answer must not go over: the run stops naming the branch,
/// their head stays on origin, nothing is merged, and the issue is neither escalated nor
/// closed.
fn assert_their_head_is_kept(p: &Project, ran: &(std::process::Output, String, String, String)) {
    let (out, all, theirs, branch) = ran;
    assert_eq!(code(out), 1, "the run stops: {all}");
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{all}");
    let head = e2e::git(&p.origin, &["rev-parse", &format!("refs/heads/{branch}")]);
    assert_eq!(&head, theirs, "the teammate's head stays on origin: {all}");
    let issue = p.issue(1);
    assert_eq!(issue["state"], "open", "{issue}");
    assert_eq!(issue["escalated"], false, "{issue} {all}");
    assert!(
        all.contains(branch.as_str()),
        "the stop names the branch: {all}"
    );
}

/// Git lines of a teammate's commit, `message` adding the file `message`.txt.
fn a_teammates_commit(message: &str) -> String {
    format!(
        "echo {message} > {message}.txt && git add {message}.txt\n\
         git -c user.name=Person -c user.email=person@example.com commit --quiet -m {message}"
    )
}

/// A teammate force-pushes the branch while the agent of a review round works (the head they
/// push lacks the runner's last commit). The round's answer is not pushed over theirs: the
/// run stops naming the branch, the rewrite stays on origin, nothing is merged, and the issue
/// is neither escalated nor closed: a person decides what becomes of the branch.
#[test]
fn a_force_push_during_a_round_is_kept_and_nothing_is_merged_or_blamed() {
    let p = one_issue_with_a_round(json!({}));
    let teammate = format!(
        "git reset --quiet --hard HEAD~1\n{}\ngit push --quiet --force origin \"$branch\"",
        a_teammates_commit("rewritten")
    );
    let ran = a_teammate_moves_the_branch_during_a_round(&p, &teammate, "true");
    assert_their_head_is_kept(&p, &ran);
    assert!(ran.1.contains("a person rewrote the branch"), "{}", ran.1);
}

/// A teammate pushes a commit onto the branch while the round's agent works, and the agent
/// fetches it, checks it out on the branch and goes back to its own work without it (a
/// `reset --hard origin/<branch>` undone). The local branch once held the teammate's commit,
/// but this clone never pushed it: the round's answer is not pushed over it. The run stops
/// naming the branch, the commit stays on origin, nothing is merged or blamed.
#[test]
fn a_teammates_push_the_rounds_agent_fetched_and_dropped_is_not_pushed_over() {
    let p = one_issue_with_a_round(json!({}));
    let teammate = format!(
        "{}\ngit push --quiet origin \"$branch\"",
        a_teammates_commit("theirs")
    );
    let dropped = "git fetch --quiet origin && git reset --quiet --hard \"origin/$branch\"\n\
                   git reset --quiet --hard 'HEAD@{1}'";
    let ran = a_teammate_moves_the_branch_during_a_round(&p, &teammate, dropped);
    assert_their_head_is_kept(&p, &ran);
    // Named as what it was: commits pushed onto the branch, not a rewrite.
    assert!(
        ran.1
            .contains("a person pushed commits onto the branch that lack the runner's unpushed"),
        "{}",
        ran.1
    );
    assert!(!ran.1.contains("rewrote"), "{}", ran.1);
}

/// The round's agent rewrites the branch's history, as a reviewer may ask ("squash these",
/// "reword the commit"): it amends the runner's last commit, already on origin. That head is
/// the clone's own earlier work, not a person's move: the round's push goes over it, CI
/// looks at the new head, and the issue merges with the rewritten commit.
#[test]
fn a_round_whose_agent_rewrites_the_branchs_own_history_is_pushed_and_merged() {
    let p = one_issue_with_a_round(json!({}));
    let amended = p.root.join("amended");
    let wrapper = round_agent(
        &p,
        &format!(
            "if [ ! -e '{amended}' ]; then\n\
             git rev-parse HEAD > '{amended}'\n\
             git -c user.name=Agent -c user.email=agent@example.com commit --quiet --amend -m 'feat: First issue, reworded (#1)'\n\
             fi\n\
             exec '{bin}' \"$@\"",
            amended = amended.display(),
            bin = e2e::BIN
        ),
    );
    let child = changes_asked_of_a_round_agent(&p, &wrapper, "Reword the commit.");
    let all = text(&approved_after_the_round(&p, child));
    let before = std::fs::read_to_string(&amended)
        .unwrap_or_else(|e| panic!("the round's agent did not run ({e}): {all}"));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "merged once: {all}");
    let log = e2e::git(&p.origin, &["log", "--format=%H %s", "main"]);
    assert!(log.contains("feat: First issue, reworded (#1)"), "{log}");
    assert!(
        !log.contains(before.trim()),
        "the commit the agent rewrote is not merged: {log}"
    );
    p.replays_exactly();
}

/// A teammate deletes the issue's branch on origin while the agent of a review round works
/// (they gave up on the PR). The round's answer is not pushed (that would bring the branch
/// back): the cycle is dropped as the person's move, nothing is merged, the issue is neither
/// escalated nor closed, and the round's commit stays in the clone.
#[test]
fn a_branch_deleted_during_a_round_drops_the_cycle_and_pushes_nothing() {
    let p = one_issue_with_a_round(json!({}));
    let deleted = p.root.join("deleted");
    let wrapper = round_agent(
        &p,
        &format!(
            "if [ ! -e '{deleted}' ]; then\n\
             branch=$(git rev-parse --abbrev-ref HEAD)\n\
             git --git-dir='{origin}' branch --quiet -D \"$branch\" && echo \"$branch\" > '{deleted}'\n\
             fi\n\
             exec '{bin}' \"$@\"",
            deleted = deleted.display(),
            origin = p.origin.display(),
            bin = e2e::BIN
        ),
    );
    let child = changes_asked_of_a_round_agent(&p, &wrapper, "Rename foo to bar.");
    let out = e2e::wait_output(child, WAIT);
    let all = text(&out);
    let branch = std::fs::read_to_string(&deleted)
        .unwrap_or_else(|e| panic!("the teammate's deletion did not happen ({e}): {all}"));
    let branch = branch.trim();
    assert!(e2e::merged_issues(&p.origin).is_empty(), "{all}");
    assert!(
        all.contains(&format!("a person deleted the branch on origin ({branch})")),
        "the person's move is named: {all}"
    );
    let on_origin = e2e::git(&p.origin, &["branch", "--list", branch]);
    assert!(
        on_origin.is_empty(),
        "the branch is not brought back: {all}"
    );
    let issue = p.issue(1);
    assert_eq!(issue["state"], "open", "{issue}");
    assert_eq!(issue["escalated"], false, "{issue} {all}");
    let kept = e2e::git(&p.project, &["log", "--format=%s", branch]);
    assert!(
        kept.contains("fix: address review feedback (#1)"),
        "the round's commit stays in the clone: {kept}"
    );
    p.replays_exactly();
}

/// A teammate merges the PR by hand while the agent of a review round works (they judged the
/// reviewed commit good enough). The round's answer is not pushed and merged after theirs:
/// the issue is recorded merged once, and origin's main stays at the teammate's merge.
#[test]
fn a_merge_by_hand_during_a_round_is_recorded_once_and_the_round_is_not_merged_after_it() {
    merged_by_hand_during_a_round(one_issue_with_a_round(json!({})), "main", json!({}));
}

/// The same when origin's default branch is `master` (the runner's own steps: the scripted
/// agent's startCycle knows only `main`): the merge by hand into it is seen.
#[test]
fn a_merge_by_hand_into_master_during_a_round_is_recorded_once() {
    let p = one_issue_with_a_round(json!({}));
    p.make_master_origins_default();
    merged_by_hand_during_a_round(p, "master", e2e::builtin_steps());
}

/// A teammate merges the branch into `base` by hand during the round; the run ends with the
/// issue recorded merged once and nothing merged after theirs.
fn merged_by_hand_during_a_round(p: Project, base: &str, steps: serde_json::Value) {
    let person = p.root.join("person");
    let merged = p.root.join("merged");
    let wrapper = round_agent(
        &p,
        &format!(
            "if [ ! -e '{merged}' ]; then\n\
             branch=$(git rev-parse --abbrev-ref HEAD)\n\
             git clone --quiet '{origin}' '{person}'\n\
             cd '{person}' && git -c user.name=Person -c user.email=person@example.com merge --quiet --no-ff -m 'Merged by hand' \"origin/$branch\"\n\
             git push --quiet origin HEAD && git rev-parse HEAD > '{merged}'\n\
             cd - > /dev/null\n\
             fi\n\
             exec '{bin}' \"$@\"",
            merged = merged.display(),
            origin = p.origin.display(),
            person = person.display(),
            bin = e2e::BIN
        ),
    );
    let child = changes_asked_with_steps(&p, &wrapper, "Rename foo to bar.", steps);
    let out = e2e::wait_output(child, WAIT);
    let all = text(&out);
    let by_hand = std::fs::read_to_string(&merged)
        .unwrap_or_else(|e| panic!("the teammate's merge did not happen ({e}): {all}"));
    assert_eq!(code(&out), 0, "{all}");
    let head = e2e::git(&p.origin, &["rev-parse", base]);
    assert_eq!(head, by_hand.trim(), "nothing merged after theirs: {all}");
    assert!(
        all.contains(&format!("was merged into {base} by a person")),
        "{all}"
    );
    assert_eq!(p.issue(1)["state"], "closed", "{all}");
    let records = p
        .journal()
        .iter()
        .filter(|l| l["effect"]["effect"] == "recordMerged")
        .count();
    assert_eq!(records, 1, "the issue was closed once: {all}");
    p.replays_exactly();
}

/// The runner is killed (SIGKILL) inside a review round: as the round's agent exits, halfway
/// through the runner's git calls after it (its commit and push), and right before the round's
/// answer is journaled. Each restart does the round again (its answer was never recorded),
/// and once the reviewer approves merges the issue once, with the round's change, and never
/// escalates it.
#[test]
fn a_kill_inside_a_review_round_is_the_round_again_then_one_merge() {
    let asked = |p: &Project, crash: Option<(&str, String)>| {
        let mut run = p.command(&["run", "--config", p.config.to_str().expect("utf8")]);
        if let Some((var, value)) = crash {
            run.env(var, value);
        }
        let child = run
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn runner");
        // Asked during the first wait for a review: the second look finds it, in every run.
        p.wait_for_journal("reviewWanted", WAIT);
        let ask = ["--request-changes", "Rename foo to bar.", "--author", "ann"];
        assert_eq!(code(&p.review(1, &ask)), 0);
        child
    };
    let probe = one_issue_with_a_round(gate(true, 0.25));
    let points = probe.root.join("points.log");
    let log = (
        sdlc_runner::failpoint::CRASH_LOG_ENV,
        points.display().to_string(),
    );
    approved_after_the_round(&probe, asked(&probe, Some(log)));
    let numbered: Vec<(u64, String)> = std::fs::read_to_string(&points)
        .expect("points logged")
        .lines()
        .filter_map(|l| {
            let (n, label) = l.split_once(' ')?;
            Some((n.parse().ok()?, label.to_string()))
        })
        .collect();
    let after = |from: usize, label: &str| {
        from + numbered[from..]
            .iter()
            .position(|(_, l)| l == label)
            .unwrap_or_else(|| panic!("{label} after point {from}: {numbered:?}"))
    };
    let exited = after(after(0, "ReviewLooked"), "agent exited");
    let answered = after(exited, "journal: before append");
    let git: Vec<u64> = numbered[exited..answered]
        .iter()
        .filter(|(_, l)| l == "git: after")
        .map(|(n, _)| *n)
        .collect();
    assert!(git.len() > 2, "the round's git calls: {numbered:?}");
    let kills = [
        (numbered[exited].0, "as the round's agent exits"),
        (git[git.len() / 2], "halfway through the round's git calls"),
        (
            numbered[answered].0,
            "right before the round's answer is journaled",
        ),
    ];
    std::thread::scope(|scope| {
        for (at, what) in kills {
            scope.spawn(move || {
                let p = one_issue_with_a_round(gate(true, 0.25));
                let crash = (sdlc_runner::failpoint::CRASH_AT_ENV, at.to_string());
                let killed = e2e::wait_output(asked(&p, Some(crash)), WAIT);
                assert_eq!(
                    killed.status.code(),
                    None,
                    "killed {what}: {}",
                    text(&killed)
                );
                let again = p.spawn(&[]);
                let all = text(&approved_after_the_round(&p, again));
                assert_eq!(e2e::merged_issues(&p.origin), [1], "{what}: {all}");
                let main = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
                assert_eq!(main.matches("Merge issue #1").count(), 1, "{what}: {main}");
                assert!(
                    main.contains("fix: address review feedback (#1)"),
                    "the round's change merged after a kill {what}: {main}\n{all}"
                );
                assert_eq!(p.issue(1)["escalated"], json!(false), "{what}: {all}");
                // Its answer never recorded, the round is done again: the feedback is handed
                // once to the killed round and once to the restart's.
                let told = prompts(&p);
                assert_eq!(
                    told.matches("Rename foo to bar.").count(),
                    2,
                    "{what}: {told}"
                );
            });
        }
    });
}
