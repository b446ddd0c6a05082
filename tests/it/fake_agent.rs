//! The real binary's `fake-agent` subcommand in a real git repository (a bare `origin` and a
//! clone): each outcome's output, exit code and git work.

use crate::e2e;

use e2e::git;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_sdlc-runner");

struct Repo {
    tmp: TempDir,
    work: PathBuf,
    origin: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let tmp = TempDir::new().unwrap();
        let origin = tmp.path().join("origin.git");
        let work = tmp.path().join("work");
        std::fs::create_dir_all(&origin).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        git(&origin, &["init", "--bare", "-q", "-b", "main"]);
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["config", "user.email", "fake@example.com"]);
        git(&work, &["config", "user.name", "Fake"]);
        std::fs::write(work.join("README.md"), "demo\n").unwrap();
        git(&work, &["add", "README.md"]);
        git(&work, &["commit", "-q", "-m", "initial"]);
        git(
            &work,
            &["remote", "add", "origin", origin.to_str().unwrap()],
        );
        git(&work, &["push", "-q", "-u", "origin", "main"]);
        Repo { tmp, work, origin }
    }

    fn script(&self, json: &str) -> PathBuf {
        let path = self.tmp.path().join("script.json");
        std::fs::write(&path, json).unwrap();
        path
    }

    fn command(&self, step: &str, issue: u32, attempt: u32, script: Option<&Path>) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("fake-agent");
        if let Some(script) = script {
            cmd.arg("--script").arg(script);
        }
        cmd.args([
            "--model",
            "opus",
            "-p",
            "Run the step.",
            "--dangerously-skip-permissions",
            "--verbose",
            "--output-format",
            "stream-json",
            "--max-turns",
            "20",
            "--append-system-prompt",
            "--be careful",
        ])
        .current_dir(&self.work)
        .env("SDLC_STEP", step)
        .env("SDLC_STEP_NUMBER", "6")
        .env("SDLC_ISSUE", issue.to_string())
        .env("SDLC_ATTEMPT", attempt.to_string())
        .env_remove("SDLC_FAKE_AGENT_SCRIPT")
        .env_remove("SDLC_FAKE_AGENT_LOG");
        cmd
    }

    fn run(&self, step: &str, issue: u32, attempt: u32, script: Option<&Path>) -> Output {
        self.command(step, issue, attempt, script).output().unwrap()
    }

    fn ok(&self, step: &str, issue: u32) -> Vec<Value> {
        let out = self.run(step, issue, 1, None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{step}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let events = events(&out);
        let result = events.last().unwrap();
        assert_eq!(result["subtype"], "success");
        assert_eq!(result["is_error"], false);
        events
    }

    fn status(&self) -> String {
        git(&self.work, &["status", "--porcelain"])
    }
}

/// Every line is a JSON event and the last one is the `result`.
fn events(out: &Output) -> Vec<Value> {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.first().unwrap()["type"], "system");
    assert_eq!(events.first().unwrap()["subtype"], "init");
    assert_eq!(events.last().unwrap()["type"], "result", "{text}");
    events
}

#[test]
fn the_ok_lifecycle_does_each_steps_git_work_and_merges_into_origin_main() {
    let repo = Repo::new();
    let w = &repo.work;
    repo.ok("startCycle", 7);
    assert_eq!(git(w, &["branch", "--show-current"]), "main");

    let events = repo.ok("startIssue", 7);
    assert_eq!(git(w, &["branch", "--show-current"]), "7-issue-7");
    assert_eq!(events[0]["model"], "opus");
    assert_eq!(events[0]["cwd"], w.to_str().unwrap());
    let session = events[0]["session_id"].as_str().unwrap();
    assert!(events.iter().all(|e| e["session_id"] == session));
    assert_eq!(events.last().unwrap()["num_turns"], 3);
    assert_eq!(events.last().unwrap()["total_cost_usd"], 0.01);

    repo.ok("writeSpecs", 7);
    for file in [
        "requirements.md",
        "design.md",
        "tasks.md",
        "feature.gherkin",
    ] {
        let text = std::fs::read_to_string(w.join("specs/7-issue-7").join(file)).unwrap();
        assert!(!text.trim().is_empty(), "{file} is empty");
    }
    assert_eq!(repo.status(), "", "specs are committed");
    assert_eq!(git(w, &["rev-list", "--count", "main..HEAD"]), "1");

    repo.ok("implement", 7);
    assert_eq!(
        repo.status(),
        "?? src/",
        "implement leaves its work uncommitted"
    );
    repo.ok("simplify", 7);
    repo.ok("verify", 7);

    // The runner's files must never be committed, even without an exclude entry.
    std::fs::create_dir_all(w.join(".claude")).unwrap();
    std::fs::write(w.join(".claude/sdlc-state.json"), "{}").unwrap();
    repo.ok("commitPush", 7);
    assert_eq!(repo.status(), "?? .claude/");
    let pushed = git(&repo.origin, &["ls-tree", "-r", "--name-only", "7-issue-7"]);
    assert!(pushed.contains("src/issue_7.txt"), "{pushed}");
    assert!(!pushed.contains(".claude"), "{pushed}");
    assert_eq!(
        git(w, &["rev-parse", "HEAD"]),
        git(&repo.origin, &["rev-parse", "7-issue-7"])
    );

    repo.ok("createPR", 7);
    repo.ok("monitorCI", 7);
    repo.ok("merge", 7);
    assert_eq!(git(w, &["branch", "--show-current"]), "main");
    let head = git(&repo.origin, &["log", "-1", "--format=%s %P", "main"]);
    assert!(head.starts_with("Merge issue #7 "), "{head}");
    assert_eq!(
        head.split(' ').count(),
        5,
        "a merge commit has two parents: {head}"
    );
    let files = git(&repo.origin, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(files.contains("src/issue_7.txt") && files.contains("specs/7-issue-7/design.md"));

    // A second cycle starts from the merged main.
    repo.ok("startCycle", 8);
    repo.ok("startIssue", 8);
    assert_eq!(git(w, &["branch", "--show-current"]), "8-issue-8");
    assert!(w.join("src/issue_7.txt").exists());
}

#[test]
fn start_issue_checks_out_an_existing_branch_and_implement_appends() {
    let repo = Repo::new();
    repo.ok("startIssue", 4);
    git(&repo.work, &["checkout", "-q", "main"]);
    repo.ok("startIssue", 4);
    assert_eq!(git(&repo.work, &["branch", "--show-current"]), "4-issue-4");
    repo.ok("implement", 4);
    repo.ok("implement", 4);
    let text = std::fs::read_to_string(repo.work.join("src/issue_4.txt")).unwrap();
    assert_eq!(text.lines().count(), 2);
}

#[test]
fn script_keys_take_precedence_and_attempts_index_the_list() {
    let repo = Repo::new();
    let script = repo.script(
        r#"{"steps": {"verify": ["fail-test", "ok"], "2:verify": ["exit:5"],
                       "*": ["soft-is-error"]}, "costUsd": 0.25}"#,
    );
    let log = repo.tmp.path().join("invocations.log");
    let run = |step: &str, issue: u32, attempt: u32| {
        repo.command(step, issue, attempt, Some(&script))
            .env("SDLC_FAKE_AGENT_LOG", &log)
            .output()
            .unwrap()
    };
    assert_eq!(run("verify", 1, 1).status.code(), Some(1));
    assert_eq!(run("verify", 1, 2).status.code(), Some(0));
    assert_eq!(
        run("verify", 1, 9).status.code(),
        Some(0),
        "the last entry repeats"
    );
    let specific = run("verify", 2, 1);
    assert_eq!(specific.status.code(), Some(5));
    assert_eq!(events(&specific).last().unwrap()["is_error"], false);
    let star = run("simplify", 1, 1);
    assert_eq!(star.status.code(), Some(0));
    let result = events(&star).pop().unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["total_cost_usd"], 0.25);

    // Each line ends with the agent's pid, which varies.
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().0.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "1 verify 1 fail-test",
            "1 verify 2 ok",
            "1 verify 9 ok",
            "2 verify 1 exit:5",
            "1 simplify 1 soft-is-error"
        ]
    );
}

#[test]
fn a_test_failure_is_an_error_result_carrying_the_cargo_output() {
    let repo = Repo::new();
    let script = repo.script(
        r#"{"steps": {"verify": ["fail-test"], "3:verify": ["fail-test-1"], "4:verify": ["fail-test-2"]}}"#,
    );
    let out = repo.run("verify", 9, 1, Some(&script));
    assert_eq!(out.status.code(), Some(1));
    let lines = events(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["is_error"], true);
    let text = result["result"].as_str().unwrap();
    assert!(
        text.contains("test tests::issue_9_works ... FAILED"),
        "{text}"
    );
    assert!(text.contains("  left: 1\n right: 2"), "{text}");
    // Noise a signature must normalize: a pid and a temp path.
    assert!(text.contains("(pid "), "{text}");
    assert!(
        text.contains(std::env::temp_dir().to_str().unwrap()),
        "{text}"
    );
    let assistant = lines.iter().find(|e| e["type"] == "assistant").unwrap();
    assert_eq!(assistant["message"]["content"][0]["text"], text);

    let name = |issue| {
        let out = repo.run("verify", issue, 1, Some(&script));
        let text = events(&out).pop().unwrap()["result"]
            .as_str()
            .unwrap()
            .to_string();
        text.lines()
            .find(|l| l.ends_with("... FAILED"))
            .unwrap()
            .to_string()
    };
    assert_ne!(name(3), name(4), "fail-test-<k> gives distinct tests");
}

#[test]
fn soft_outcomes_exit_zero_with_the_real_result_shapes() {
    let repo = Repo::new();
    let script = repo.script(
        r#"{"steps": {"1:verify": ["soft-max-turns"], "2:verify": ["soft-permission"],
                       "startIssue": ["benign-permission"], "3:startIssue": ["no-branch"]}}"#,
    );
    let max = repo.run("verify", 1, 1, Some(&script));
    assert_eq!(max.status.code(), Some(0));
    let result = events(&max).pop().unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["terminal_reason"], "max_turns");
    assert!(result.get("result").is_none() && result["errors"].is_array());

    let denied = repo.run("verify", 2, 1, Some(&script));
    assert_eq!(denied.status.code(), Some(0));
    let lines = events(&denied);
    assert!(lines
        .iter()
        .any(|e| e["subtype"] == "permission_denied" && e["tool_name"] == "Bash"));
    let result = lines.last().unwrap();
    assert_eq!(result["is_error"], false);
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash");

    let benign = repo.run("startIssue", 5, 1, Some(&script));
    assert_eq!(benign.status.code(), Some(0));
    let result = events(&benign).pop().unwrap();
    let denials = result["permission_denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0]["tool_name"], "AskUserQuestion");
    assert_eq!(
        git(&repo.work, &["branch", "--show-current"]),
        "5-issue-5",
        "benign-permission still does the work"
    );

    git(&repo.work, &["checkout", "-q", "main"]);
    let none = repo.run("startIssue", 3, 1, Some(&script));
    assert_eq!(none.status.code(), Some(0));
    assert_eq!(events(&none).pop().unwrap()["is_error"], false);
    assert_eq!(git(&repo.work, &["branch", "--show-current"]), "main");
}

#[test]
fn recorded_cli_failures_replay_the_fixtures_exactly() {
    let repo = Repo::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli");
    for name in ["not-logged-in", "rate-limit", "overloaded", "auth"] {
        let script = repo.script(&format!(r#"{{"steps": {{"*": ["{name}"]}}}}"#));
        let out = repo.run("implement", 1, 1, Some(&script));
        let expected = std::fs::read(fixtures.join(format!("{name}.jsonl"))).unwrap();
        let rc: i32 = std::fs::read_to_string(fixtures.join(format!("{name}.rc")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(out.stdout, expected, "{name}");
        assert_eq!(out.status.code(), Some(rc), "{name}");
    }
    let script = repo.script(r#"{"steps": {"*": ["rate-limit"]}}"#);
    let result = events(&repo.run("implement", 1, 1, Some(&script)))
        .pop()
        .unwrap();
    assert_eq!(result["api_error_status"], 429);
    assert_eq!(result["terminal_reason"], "api_error");
    assert_eq!(result["is_error"], true);
}

#[test]
fn flood_streams_megabytes_then_succeeds() {
    let repo = Repo::new();
    let script = repo.script(r#"{"steps": {"*": ["flood:5"]}}"#);
    let out = repo.run("startIssue", 6, 1, Some(&script));
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.len() >= 5 * 1024 * 1024, "{}", out.stdout.len());
    let events = events(&out);
    assert!(events.len() > 5000, "about 1 KB per line: {}", events.len());
    assert_eq!(events.last().unwrap()["is_error"], false);
    // Each line is its own message, numbered in order, as a real stream's would be.
    let floods: Vec<&Value> = events
        .iter()
        .filter(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("flood line "))
        })
        .collect();
    assert!(floods.len() > 5000, "{}", floods.len());
    for (i, e) in floods.iter().enumerate() {
        let text = e["message"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.starts_with(&format!("flood line {i}: lorem ipsum")),
            "{e}"
        );
        assert_eq!(e["type"], "assistant", "{e}");
        assert_eq!(e["session_id"], events[0]["session_id"], "{e}");
    }
    for field in ["/message/id", "/uuid"] {
        let ids: std::collections::HashSet<&str> = floods
            .iter()
            .filter_map(|e| e.pointer(field)?.as_str())
            .collect();
        assert_eq!(ids.len(), floods.len(), "{field} is new on every line");
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains("@flood-"));
    assert_eq!(git(&repo.work, &["branch", "--show-current"]), "6-issue-6");
}

#[test]
fn script_mistakes_exit_3_naming_the_outcome_and_the_file() {
    let repo = Repo::new();
    let script = repo.script(r#"{"steps": {"verify": ["ok", "explode"]}}"#);
    let out = repo.run("startCycle", 1, 1, Some(&script));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"explode\""), "{stderr}");
    assert!(stderr.contains(script.to_str().unwrap()), "{stderr}");
    assert!(out.stdout.is_empty());

    let missing = repo.tmp.path().join("nope.json");
    let out = repo.run("verify", 1, 1, Some(&missing));
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.json"));

    let out = repo.command("bogusStep", 1, 1, None).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SDLC_STEP"));
}

#[test]
fn the_script_can_come_from_the_environment() {
    let repo = Repo::new();
    let script = repo.script(r#"{"steps": {"*": ["exit:9"]}}"#);
    let out = repo
        .command("verify", 1, 1, None)
        .env("SDLC_FAKE_AGENT_SCRIPT", &script)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(9));
}

fn signal(child: &std::process::Child, sig: i32) {
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

#[test]
fn hangs_wait_to_be_killed_and_ignore_term_survives_sigterm() {
    let repo = Repo::new();
    let script = repo.script(
        r#"{"steps": {"1:verify": ["hang"], "2:verify": ["silent-hang"], "3:verify": ["ignore-term"]}}"#,
    );
    for issue in [1, 3] {
        let mut child = repo
            .command("verify", issue, 1, Some(&script))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let init: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(init["subtype"], "init");
        // The init line is printed after the SIGTERM disposition is set, so this is no race.
        signal(&child, libc::SIGTERM);
        std::thread::sleep(Duration::from_millis(300));
        let alive = child.try_wait().unwrap().is_none();
        assert_eq!(alive, issue == 3, "issue {issue}");
        if alive {
            signal(&child, libc::SIGKILL);
        }
        child.wait().unwrap();
    }

    let mut child = repo
        .command("verify", 2, 1, Some(&script))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "silent-hang keeps running"
    );
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut rest).unwrap();
    assert!(rest.is_empty(), "silent-hang prints nothing");
}
