//! `run --workers 3`: one runner process, three workers on their own clones, one coordinator.
//! Six independent issues and a dependency pair on the local tracker: every issue is merged
//! exactly once, each by one worker, the dependency's order is kept, and the work is shared.

use crate::e2e;

use e2e::{merged_issues, text, Project};
use serde_json::json;

fn builtin() -> serde_json::Value {
    json!({ "steps": e2e::builtin_steps() })
}

/// The issue numbers whose implement step ran in this worker's orchestration log.
fn implemented_by(p: &Project, worker: usize) -> Vec<u32> {
    let log = std::fs::read_dir(p.root.join("logs").join(format!("w{worker}")))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy() == "sdlc-runner.log")
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect::<String>()
        })
        .unwrap_or_default();
    let mut issues: Vec<u32> = log
        .lines()
        .filter(|l| l.contains("step 4 implement attempt 1"))
        .filter_map(|l| {
            let rest = &l[l.find("issue #")? + 7..];
            rest.split(' ').next()?.parse().ok()
        })
        .collect();
    issues.sort_unstable();
    issues.dedup();
    issues
}

#[test]
fn three_workers_merge_every_issue_once_and_keep_the_dependency_order() {
    let mut issues: Vec<(u32, String, String)> = (1..=6)
        .map(|n| (n, format!("Independent {n}"), String::new()))
        .collect();
    issues.push((7, "Base".into(), String::new()));
    issues.push((8, "On top".into(), "Depends on: #7".into()));
    let refs: Vec<(u32, &str, &str)> = issues
        .iter()
        .map(|(n, t, b)| (*n, t.as_str(), b.as_str()))
        .collect();
    let p = Project::new(
        &refs,
        json!({"steps": {"implement": ["busy:400"]}}),
        builtin(),
    );
    let out = p.run(&["--workers", "3"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(
        merged_issues(&p.origin),
        (1..=8).collect::<Vec<_>>(),
        "{all}"
    );
    let log = e2e::git(&p.origin, &["log", "--reverse", "--format=%s", "main"]);
    let pos = |n: u32| {
        log.lines()
            .position(|l| l.starts_with(&format!("Merge issue #{n}:")))
            .unwrap_or_else(|| panic!("#{n} not merged: {log}"))
    };
    assert!(pos(7) < pos(8), "the dependency first: {log}");
    let per_worker: Vec<Vec<u32>> = (0..3).map(|w| implemented_by(&p, w)).collect();
    let mut seen = std::collections::BTreeMap::new();
    for (w, list) in per_worker.iter().enumerate() {
        for n in list {
            assert!(
                seen.insert(*n, w).is_none(),
                "#{n} implemented by two workers: {per_worker:?}"
            );
        }
    }
    assert_eq!(seen.len(), 8, "{per_worker:?}\n{all}");
    assert!(
        per_worker.iter().filter(|l| !l.is_empty()).count() >= 2,
        "the work was shared: {per_worker:?}"
    );
    assert!(all.contains("fleet: 3 workers"), "{all}");
    // Each worker's clone and session stay for the next run; nothing is left claimed.
    for w in 0..3 {
        assert!(p
            .project
            .join(format!(".git/sdlc-runner/workers/w{w}/.git"))
            .is_dir());
    }
    // status shows each worker's clone and how its session ended.
    let status = p
        .command(&["status", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("status");
    let shown = String::from_utf8_lossy(&status.stdout);
    for w in 0..3 {
        assert!(
            shown.contains(&format!("worker w{w}: not running (exited")),
            "{shown}"
        );
    }
    let json = p
        .command(&[
            "status",
            "--json",
            "--config",
            p.config.to_str().expect("utf8"),
        ])
        .output()
        .expect("status --json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["workers"].as_array().map(Vec::len), Some(3), "{v}");
    let claims = std::fs::read_dir(p.issues.join(".claims"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(claims, 0);
}

#[test]
fn escalations_across_workers_halt_the_whole_fleet_and_the_halt_sticks() {
    let issues: Vec<(u32, String)> = (1..=6).map(|n| (n, format!("Issue {n}"))).collect();
    let refs: Vec<(u32, &str, &str)> = issues.iter().map(|(n, t)| (*n, t.as_str(), "")).collect();
    let mut extra = builtin();
    extra["maxConsecutiveEscalations"] = json!(2);
    let p = Project::new(&refs, json!({"steps": {"verify": ["fail-test"]}}), extra);
    let out = p.run(&["--workers", "3"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("consecutive escalations"), "{all}");
    assert!(merged_issues(&p.origin).is_empty());
    let again = p.run(&["--workers", "3"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("--ack-halt"), "{}", text(&again));
    assert!(
        text(&again).contains("sdlc-runner release N"),
        "{}",
        text(&again)
    );

    // The printed recovery, done exactly as printed once the cause is fixed: release the
    // escalated issues (which acknowledges the fleet's halt too), then run again.
    let commands: Vec<Vec<String>> = all
        .lines()
        .filter_map(|l| l.trim().strip_prefix("sdlc-runner "))
        .map(|c| c.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(commands.len(), 2, "release, then run: {all}");
    assert_eq!(commands[0][0], "release", "{all}");
    assert_eq!(commands[1][0], "run", "{all}");
    let escalated: Vec<u32> = commands[0][1..]
        .iter()
        .take_while(|w| !w.starts_with("--"))
        .map(|w| w.parse().expect("issue number"))
        .collect();
    assert!(escalated.len() >= 2, "{all}");
    p.set_script(json!({}));
    fn args(c: &[String]) -> Vec<&str> {
        c.iter().map(String::as_str).collect()
    }
    let released = p.command(&args(&commands[0])).output().expect("release");
    assert_eq!(released.status.code(), Some(0), "{}", text(&released));
    assert!(
        text(&released).contains("fleet's halt"),
        "{}",
        text(&released)
    );
    let resumed = p.command(&args(&commands[1])).output().expect("run");
    let code = resumed.status.code();
    let resumed = text(&resumed);
    assert_eq!(code, Some(0), "{resumed}");
    assert!(!resumed.contains("the last fleet halted"), "{resumed}");
    assert!(resumed.contains("fleet: 3 workers"), "{resumed}");
    let merged = merged_issues(&p.origin);
    for n in &escalated {
        assert!(
            merged.contains(n),
            "released #{n} merged: {merged:?}\n{}\n{resumed}",
            text(&released)
        );
    }
}

/// kill -9 of the whole fleet mid-run: the next `run --workers 3` resumes every worker's
/// session on its clone (same worker ids, so their own claims), and every issue is merged
/// exactly once.
#[test]
fn a_killed_fleet_resumes_and_merges_every_issue_once() {
    let issues: Vec<(u32, String)> = (1..=5).map(|n| (n, format!("Issue {n}"))).collect();
    let refs: Vec<(u32, &str, &str)> = issues.iter().map(|(n, t)| (*n, t.as_str(), "")).collect();
    let p = Project::new(
        &refs,
        json!({"steps": {"implement": ["busy:1500"]}}),
        builtin(),
    );
    let mut child = p.spawn(&["--workers", "3"]);
    p.wait_for_invocation("1 implement", std::time::Duration::from_secs(60));
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert!(merged_issues(&p.origin).len() < 5, "killed before the end");
    p.set_script(json!({}));
    let out = p.run(&["--workers", "3"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(
        merged_issues(&p.origin),
        (1..=5).collect::<Vec<_>>(),
        "{all}"
    );
}

#[test]
fn bounds_covers_the_configured_number_of_workers() {
    let p = Project::new(&[], json!({}), json!({"workers": 3}));
    let out = p
        .command(&["bounds", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("bounds");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let figure = |prefix: &str| -> u64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {stdout}"));
        line.rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    let between = figure("step attempts between two successful merges");
    let nothing = figure("step attempts before a halt when nothing succeeds");
    assert!(
        stdout.contains(&format!(
            "with 3 workers: at most {} between two merges of the fleet, {} before",
            between * 3,
            nothing * 3
        )),
        "{stdout}"
    );
}

/// Two workers change the same file: the second merge conflicts, its repair attempt has the
/// agent bring the branch up to date (the conflicting file is the repair context), and the
/// runner merges it: both issues merged, the conflict bounded by the merge step's attempts.
#[test]
fn a_merge_conflict_between_two_workers_is_repaired_and_merged() {
    let p = conflicting_pair();
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(all.contains("MERGE_CONFLICT"), "{all}");
    let repaired: Vec<String> = p
        .invocations()
        .into_iter()
        .filter(|l| l.contains(" merge "))
        .collect();
    assert_eq!(
        repaired.len(),
        1,
        "one repair by the agent: {repaired:?}\n{all}"
    );
    let n: u32 = repaired[0]
        .split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .expect("issue number");
    let prompt = p.prompt(n, "merge", 2).expect("the repair prompt");
    assert!(
        prompt.contains("no longer merges cleanly") && prompt.contains("shared.txt"),
        "{prompt}"
    );
    assert!(
        prompt.contains("shared.txt, both sides as the merge leaves them")
            && prompt.contains("<<<<<<<")
            && prompt.contains(">>>>>>>"),
        "the repair sees both sides of the conflict: {prompt}"
    );
    let shared = e2e::git(&p.origin, &["show", "main:shared.txt"]);
    assert!(shared.starts_with("written by issue"), "{shared}");
    // The repaired head is new to CI: it is looked at and passed before it is merged, and it
    // is the commit that reaches main (not the one CI passed before the conflict).
    let head = e2e::updated_head_passed_ci(&all);
    let parents = e2e::git(&p.origin, &["log", "--format=%P", "-1", "main"]);
    assert!(
        parents.split_whitespace().any(|c| c.starts_with(&head)),
        "main's merge commit merges the repaired head {head}: {parents}\n{all}"
    );
}

/// Origin's `post-receive` hook plays a person who pushes to an issue's branch the moment the
/// agent has pushed its conflict repair (a merge of main into the branch): `on_top` adds a
/// commit on top of the repair, otherwise the person rewrites the branch (a commit on the
/// repair's first parent, the repair dropped). The person's commit changes `person.txt`.
fn person_moves_the_branch_after_the_repair(origin: &std::path::Path, on_top: bool) {
    let parent = if on_top { "$new" } else { "$new^1" };
    let hook = origin.join("hooks/post-receive");
    let body = format!(
        r#"#!/bin/sh
while read old new ref; do
  [ "$ref" = refs/heads/main ] && continue
  [ -e "$GIT_DIR/person-moved" ] && continue
  git log -1 --format=%s "$new" | grep -q '^Merge main into the branch' || continue
  : > "$GIT_DIR/person-moved"
  blob=$(echo "a person's line" | git hash-object -w --stdin)
  git read-tree --index-output="$GIT_DIR/person.index" "{parent}^{{tree}}"
  GIT_INDEX_FILE="$GIT_DIR/person.index" git update-index --add --cacheinfo 100644,$blob,person.txt
  tree=$(GIT_INDEX_FILE="$GIT_DIR/person.index" git write-tree)
  c=$(GIT_AUTHOR_NAME=person GIT_AUTHOR_EMAIL=p@x GIT_COMMITTER_NAME=person GIT_COMMITTER_EMAIL=p@x git commit-tree $tree -p "{parent}" -m "a person's commit")
  git update-ref "$ref" $c
  echo $c > "$GIT_DIR/person-commit"
done
"#
    );
    std::fs::write(&hook, body).expect("write the hook");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A person pushes to the branch right after the agent pushed its conflict repair: the
/// runner's update of the branch never overwrites the person's commit. On top of the repair,
/// CI looks at the person's head and that head is merged, the person's commit in main.
#[test]
fn a_persons_push_after_the_conflict_repair_is_merged_not_overwritten() {
    let p = conflicting_pair();
    person_moves_the_branch_after_the_repair(&p.origin, true);
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    let person = std::fs::read_to_string(p.origin.join("person-commit"))
        .expect("the person pushed (the hook ran)");
    let person = person.trim();
    let contains = std::process::Command::new("git")
        .args(["merge-base", "--is-ancestor", person, "main"])
        .current_dir(&p.origin)
        .status()
        .expect("git");
    assert!(
        contains.success(),
        "the person's commit {person} reaches main: {all}"
    );
    assert!(
        all.contains(&format!("CI checks let {} merge", &person[..12])),
        "CI passed the person's head before the merge: {all}"
    );
    let repairs = p
        .invocations()
        .into_iter()
        .filter(|l| l.contains(" merge "))
        .count();
    assert_eq!(repairs, 1, "one repair by the agent, not a second: {all}");
    assert!(
        !all.contains("ESCALATED") && !all.contains("escalated"),
        "{all}"
    );
}

/// A person rewrites the branch right after the agent pushed its conflict repair: the runner
/// neither overwrites the person's branch nor merges it unverified. The session stops naming
/// the move, no issue blamed, origin's branch still the person's.
#[test]
fn a_persons_rewrite_after_the_conflict_repair_stops_the_session_and_is_kept() {
    let p = conflicting_pair();
    person_moves_the_branch_after_the_repair(&p.origin, false);
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    let person = std::fs::read_to_string(p.origin.join("person-commit"))
        .expect("the person pushed (the hook ran)");
    let person = person.trim().to_string();
    assert!(
        all.contains("a person rewrote the branch"),
        "the person's rewrite is named: {all}"
    );
    let heads = e2e::git(
        &p.origin,
        &["for-each-ref", "--format=%(objectname)", "refs/heads/"],
    );
    assert!(
        heads.lines().any(|h| h == person),
        "origin's branch is still the person's {person}: {heads}\n{all}"
    );
    assert!(!all.contains("ESCALATED"), "{all}");
}

/// A rate limit is the account's: when one worker backs off, the others' next dispatch waits
/// for the same pause.
#[test]
fn a_rate_limit_of_one_worker_pauses_the_others() {
    let p = Project::new(
        &[(1, "One", ""), (2, "Two", "")],
        json!({"steps": {
            "1:implement": ["overloaded-once"],
            "2:writeSpecs": ["busy:300"],
            "2:implement": ["busy:300"],
            "2:simplify": ["busy:300"],
            "2:verify": ["busy:300"],
        }}),
        {
            // A wait long enough that the other worker certainly dispatches during it.
            let mut extra = builtin();
            extra["backoff"] = json!({"initialSeconds": 3, "maxSeconds": 3});
            extra
        },
    );
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(all.contains("fleet: every worker pauses until"), "{all}");
    assert!(
        all.contains("fleet pause: waiting") && all.contains("for another worker's rate limit"),
        "{all}"
    );
    // The pause is the machine's: an event and a wait of the paused worker's journal, so
    // `replay` reproduces it.
    let journals: String = (0..2)
        .filter_map(|w| {
            std::fs::read_to_string(p.project.join(format!(
                ".git/sdlc-runner/workers/w{w}/.git/sdlc-runner/journal.jsonl"
            )))
            .ok()
        })
        .collect();
    assert!(journals.contains(r#""event":"fleetPaused""#), "{journals}");
    assert!(journals.contains(r#""notice":"fleetPause""#), "{journals}");
}

/// The runner killed (SIGKILL) after the conflict's repaired branch was pushed and before the
/// update was recorded: the run after it counts the attempt, sees origin's head on top of the
/// commit CI passed, has CI pass that head and merges it; nothing unverified reaches main and
/// neither issue is escalated.
#[test]
fn a_kill_after_the_repaired_branch_is_pushed_merges_only_what_ci_passed_after_it() {
    let p = conflicting_pair();
    let killed = p.run_env(
        &["--workers", "2"],
        &[(
            sdlc_runner::failpoint::CRASH_AT_ENV,
            "branch updated: pushed",
        )],
    );
    let first = text(&killed);
    assert_eq!(
        killed.status.code(),
        None,
        "killed at the failpoint: {first}"
    );
    assert!(first.contains("MERGE_CONFLICT"), "{first}");
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{first}\n---\n{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(!all.contains("escalated"), "{all}");
    // Main's last merge merges a head CI passed in the second run.
    let parents = e2e::git(&p.origin, &["log", "--format=%P", "-1", "main"]);
    let merged_head = parents
        .split_whitespace()
        .nth(1)
        .expect("a merge commit")
        .to_string();
    assert!(
        all.contains(&format!("CI checks let {} merge", &merged_head[..12])),
        "CI passed {merged_head} before its merge: {all}"
    );
}

/// Two issues that both write `shared.txt`, so the second merge conflicts; the merge's repair
/// resolves it.
fn conflicting_pair() -> Project {
    Project::new(
        &[(1, "One", ""), (2, "Two", "")],
        json!({"steps": {
            "implement": ["write-shared"],
            "verify": ["busy:500"],
            "merge": ["resolve-conflict"],
        }}),
        builtin(),
    )
}

/// Two workers whose branches are green alone and red together (CI refuses a tree where
/// both issues' files exist, unless the agent's `ci-fixed` is there): the second merge's
/// commit, its branch merged onto the first's main, fails CI and never reaches main; its
/// repair lands. Main passes CI at every first-parent commit.
#[test]
fn two_workers_green_alone_and_red_together_keep_main_green() {
    let p = Project::new(
        &[(1, "One", ""), (2, "Two", "")],
        json!({"steps": {"verify": ["busy:500"], "monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let script = "if [ -e src/issue_1.txt ] && [ -e src/issue_2.txt ] && [ ! -e ci-fixed ]; then \
                  echo 'issue 1 and issue 2 both set the same setting'; exit 1; fi";
    let mut extra = builtin();
    extra["localCi"] = json!({"command": ["sh", "-c", script], "timeoutMin": 1});
    p.set_config(extra);
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert_eq!(merged_issues(&p.origin), vec![1, 2], "{all}");
    let first_parents = e2e::git(&p.origin, &["rev-list", "--first-parent", "main"]);
    for sha in first_parents.lines() {
        let has = |path: &str| {
            std::process::Command::new("git")
                .args(["cat-file", "-e", &format!("{sha}:{path}")])
                .current_dir(&p.origin)
                .status()
                .expect("git cat-file")
                .success()
        };
        let red = has("src/issue_1.txt") && has("src/issue_2.txt") && !has("ci-fixed");
        assert!(!red, "main's first-parent commit {sha} fails CI\n{all}");
    }
    assert!(all.contains("merged onto main"), "{all}");
}
