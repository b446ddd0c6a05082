//! Builtin (zero-token) steps end to end: the real binary on a real git project with the
//! local tracker and forge, the five model-free steps done by the runner itself.

use crate::e2e;

use e2e::{code, git, text, Project};
use serde_json::{json, Value};

fn builtin_steps() -> Value {
    json!({ "steps": e2e::builtin_steps() })
}

#[test]
fn builtin_steps_merge_two_issues_with_five_agent_calls_each() {
    let p = Project::new(
        &[
            (1, "First issue", "Do one thing."),
            (2, "Second issue", "Do another."),
        ],
        json!({}),
        builtin_steps(),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    for n in [1, 2] {
        let calls: Vec<String> = p
            .invocations()
            .into_iter()
            .filter(|l| l.starts_with(&format!("{n} ")))
            .collect();
        assert_eq!(calls.len(), 5, "agent calls for issue #{n}: {calls:?}");
        for step in [
            "startIssue",
            "writeSpecs",
            "implement",
            "simplify",
            "verify",
        ] {
            assert!(
                calls.iter().any(|c| c.starts_with(&format!("{n} {step} "))),
                "{step} of #{n} is the agent's: {calls:?}"
            );
        }
        assert!(
            p.origin_main_log().contains(&format!("Merge issue #{n}")),
            "{all}"
        );
    }
    // createPR ran (it was not "already done" because a branch was pushed) and left a
    // record that closes the issue.
    assert!(all.contains("createPR: pull request local:1-"), "{all}");
    let pr = std::fs::read_to_string(p.project.join(".git/sdlc-runner/pulls/1.json"))
        .expect("the PR record of issue #1");
    assert!(pr.contains("Closes #1"), "{pr}");
    assert!(
        pr.contains("It works."),
        "the body carries the requirements: {pr}"
    );
    assert!(all.contains("(builtin)"), "{all}");
}

#[test]
fn a_dirty_tree_that_is_not_the_runners_is_refused_by_the_builtin_start_cycle() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
    std::fs::write(p.project.join("notes.txt"), "someone's work").expect("write");
    let out = p.run(&[]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(
        all.contains("notes.txt"),
        "the refusal names the file: {all}"
    );
    assert!(p.invocations().is_empty(), "{:?}", p.invocations());
    assert_eq!(
        std::fs::read_to_string(p.project.join("notes.txt")).expect("kept"),
        "someone's work"
    );
}

#[test]
fn only_the_model_free_steps_can_be_builtin() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
    p.set_config(json!({"steps": {"implement": {"run": "builtin"}}}));
    let out = p.run(&[]);
    assert_eq!(code(&out), 2, "{}", text(&out));
    assert!(
        text(&out).contains("steps.implement.run: implement needs a model"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_dry_run_says_which_steps_are_builtin() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
    let out = p.run(&["--dry-run"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("step 1 startCycle: builtin"), "{all}");
    assert!(all.contains("step 10 merge: builtin"), "{all}");
}

/// A runner killed right after a builtin step did its work, before the journal knew: the
/// restart counts the attempt as interrupted, then finds the outcome in git and the forge and
/// does not do it twice (one PR record, one merge).
#[test]
fn a_crash_after_a_builtin_side_effect_never_repeats_it() {
    for point in [
        "builtin commitPush done",
        "builtin createPR done",
        "builtin merge done",
    ] {
        let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
        p.killed_at(point);
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "after a crash at {point}: {all}");
        let pulls = p.project.join(".git/sdlc-runner/pulls");
        assert!(pulls.join("1.json").is_file(), "{point}");
        assert!(
            !pulls.join("2.json").exists(),
            "a second PR after a crash at {point}"
        );
        assert_eq!(
            p.origin_main_log().matches("Merge issue #1").count(),
            1,
            "merged once after a crash at {point}: {}",
            p.origin_main_log()
        );
    }
}

/// The local forge's CI: a command run in a clean worktree of the branch's commit. It fails
/// on the first commit, the repair agent gets the failing output and pushes a fix, the fix's
/// commit passes and merges. Each commit is tested once.
#[test]
fn local_ci_runs_in_a_clean_worktree_and_its_failure_is_repaired() {
    let p = Project::new(
        &[(1, "First issue", "Do one thing.")],
        json!({"steps": {"monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let runs = p.root.join("ci-runs.log");
    // Untracked in the clone, so only a test of the clean worktree can tell it is absent.
    std::fs::write(p.project.join("ci-fixed"), "not committed\n").expect("plant");
    let script = format!(
        "echo run >> {runs}; test -e ci-fixed || {{ echo 'test greeting ... FAILED'; echo 'assertion failed: hello'; exit 1; }}",
        runs = runs.display()
    );
    let mut extra = builtin_steps();
    extra["localCi"] = json!({"command": ["sh", "-c", script], "timeoutMin": 1});
    p.set_config(extra);
    // The planted file would dirty the tree; keep it out of git's sight in the clone.
    std::fs::OpenOptions::new()
        .append(true)
        .open(p.project.join(".git/info/exclude"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"/ci-fixed\n"))
        .expect("exclude");

    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("monitorCI: failed"), "{all}");
    let prompt = p.prompt(1, "monitorCI", 2).expect("the repair prompt");
    assert!(
        prompt.contains("local CI `sh -c") && prompt.contains("assertion failed: hello"),
        "{prompt}"
    );
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    // The agent's fix and the runner's look at CI are two requests: a rate limit or network
    // failure of the look asks for the look again, never for the agent's fix.
    let journal =
        std::fs::read_to_string(p.project.join(".git/sdlc-runner/journal.jsonl")).expect("journal");
    let repaired = journal
        .lines()
        .position(|l| l.contains(r#""event":"repaired""#) && l.contains(r#""monitorCi""#))
        .unwrap_or_else(|| panic!("the agent's fix answers Repaired: {journal}"));
    let after: String = journal.lines().skip(repaired).collect();
    assert!(
        after.contains(r#""lookAtCi""#),
        "the look at CI follows as its own request: {journal}"
    );
    // One run per commit: the failing one and the fix (post-checks and merge reuse them).
    let ran = std::fs::read_to_string(&runs).expect("ci ran");
    assert_eq!(ran.lines().count(), 2, "{ran}");
    let verdicts = std::fs::read_dir(p.project.join(".git/sdlc-runner/ci"))
        .expect("verdicts")
        .count();
    assert_eq!(verdicts, 2);
    // No worktree is left behind.
    let trees = e2e::git(&p.project, &["worktree", "list", "--porcelain"]);
    assert_eq!(trees.matches("worktree ").count(), 1, "{trees}");
}

#[test]
fn local_ci_is_refused_with_the_github_forge() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
    p.set_config(json!({"forge": "github", "localCi": {"command": ["true"]}}));
    let out = p
        .command(&[
            "config",
            "check",
            "--config",
            p.config.to_str().expect("utf8"),
        ])
        .output()
        .expect("check");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("localCi: only the local forge runs a CI command"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a failing local CI printed reaches the repair prompt and the verdict file redacted.
#[test]
fn a_token_printed_by_local_ci_is_redacted_everywhere_it_goes() {
    let p = Project::new(
        &[(1, "First issue", "")],
        json!({"steps": {"monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let token = "ghp_LeakedLeakedLeakedLeaked0123456789";
    let script = format!("test -e ci-fixed || {{ echo 'FAILED: GITHUB_TOKEN={token}'; exit 1; }}");
    let mut extra = builtin_steps();
    extra["localCi"] = json!({"command": ["sh", "-c", script]});
    p.set_config(extra);
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(!all.contains(token), "{all}");
    let prompt = p.prompt(1, "monitorCI", 2).expect("the repair prompt");
    assert!(prompt.contains("local CI `sh -c"), "{prompt}");
    assert!(!prompt.contains(token), "{prompt}");
    for entry in std::fs::read_dir(p.project.join(".git/sdlc-runner/ci")).expect("verdicts") {
        let body = std::fs::read_to_string(entry.expect("entry").path()).expect("verdict");
        assert!(!body.contains(token), "{body}");
    }
}

/// Installs `.git/hooks/<name>` in the project: `body` after a shebang.
fn hook(p: &Project, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = p.project.join(".git/hooks").join(name);
    std::fs::create_dir_all(path.parent().expect("hooks dir")).expect("hooks dir");
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("hook");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A hook that ignores SIGTERM and hangs in a `sleep` it also shields; both pids are written
/// to `<root>/<name>.pids` once it runs. With `once`, only its first run hangs.
fn hanging_hook(p: &Project, name: &str, once: bool) -> std::path::PathBuf {
    let pids = p.root.join(format!("{name}.pids"));
    let marker = p.root.join(format!("{name}.ran"));
    let guard = if once {
        format!("[ -e {m} ] && exit 0\ntouch {m}\n", m = marker.display())
    } else {
        String::new()
    };
    hook(
        p,
        name,
        &format!(
            "{guard}trap '' TERM\ncat >/dev/null\nsleep 600 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\nwait\n",
            pids = pids.display()
        ),
    );
    pids
}

fn wait_for_file(path: &std::path::Path, limit: std::time::Duration) -> String {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} was not written within {limit:?}", path.display());
}

/// SIGTERM while a builtin step's git command waits for a hook that ignores SIGTERM: the
/// runner stops within seconds and the hook's whole process group is gone.
#[test]
fn sigterm_stops_a_builtin_step_blocked_in_a_hanging_hook() {
    use std::time::{Duration, Instant};
    // The builtin merge makes its merge commit with `commit-tree` (main is never checked
    // out), so no `pre-merge-commit` hook runs any more: the push's hook is the one that hangs.
    {
        let name = "pre-push";
        let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
        let pids_file = hanging_hook(&p, name, false);
        let child = p.spawn(&[]);
        let text_of_pids = wait_for_file(&pids_file, Duration::from_secs(120));
        let pids: Vec<i32> = text_of_pids
            .split_whitespace()
            .map(|s| s.parse().expect("pid"))
            .collect();
        assert_eq!(pids.len(), 2, "{text_of_pids}");
        let asked = Instant::now();
        e2e::signal(&child, libc::SIGTERM);
        let out = e2e::wait_output(child, Duration::from_secs(60));
        let took = asked.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "{name}: the runner took {took:?} to stop: {}",
            text(&out)
        );
        assert_eq!(code(&out), 0, "{name}: {}", text(&out));
        assert!(text(&out).contains("shut down"), "{name}: {}", text(&out));
        assert_eq!(
            e2e::survivors(&pids, Duration::from_secs(5)),
            Vec::<i32>::new(),
            "{name}: the hook's processes outlived the runner"
        );
    }
}

/// A hook that hangs past the step's timeoutMin: its group is killed at the limit and the
/// attempt fails as TIMEOUT; the next attempt (the hook passes now) merges.
#[test]
fn a_hook_hanging_past_the_steps_timeout_fails_the_attempt_as_timeout() {
    use std::time::Duration;
    let mut steps = e2e::builtin_steps();
    steps["commitPush"]["timeoutMin"] = json!(0.05);
    let p = Project::new(
        &[(1, "First issue", "")],
        json!({}),
        json!({ "steps": steps }),
    );
    let pids_file = hanging_hook(&p, "pre-push", true);
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("commitPush: failed: TIMEOUT"), "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let pids: Vec<i32> = std::fs::read_to_string(pids_file)
        .expect("the hook ran")
        .split_whitespace()
        .map(|s| s.parse().expect("pid"))
        .collect();
    assert_eq!(
        e2e::survivors(&pids, Duration::from_secs(5)),
        Vec::<i32>::new()
    );
}

/// A pre-push hook that refuses the push: the attempt fails at once (no network waits), and
/// what the runner says names the hook as the party that refused and carries its words.
#[test]
fn a_hook_that_rejects_the_push_is_named_as_the_refusing_party() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
    hook(
        &p,
        "pre-push",
        "echo 'policy: pushes are frozen today' >&2\nexit 1\n",
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(all.contains("pushes are frozen today"), "{all}");
    assert!(all.contains("a git hook refused"), "{all}");
    assert!(
        !all.contains("network:"),
        "not waited out as a network blip: {all}"
    );
}

/// A pre-push hook refuses the issue's push once (the project's own lint): the attempt fails
/// as the code's (LINT), its repair attempt hands the agent the hook's words, and the push
/// after the repair passes and the issue is merged.
#[test]
fn a_hook_refusal_gets_a_repair_by_the_agent_with_the_hooks_words() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
    let marker = p.root.join("refused-once");
    hook(
        &p,
        "pre-push",
        &format!(
            "test -e {m} && exit 0\ntouch {m}\necho 'lint: src/x.rs:3: missing doc comment' >&2\nexit 1\n",
            m = marker.display()
        ),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("commitPush: failed: LINT"), "{all}");
    let prompt = p.prompt(1, "commitPush", 2).expect("the repair prompt");
    assert!(prompt.contains("missing doc comment"), "{prompt}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
}

/// Of a run's crash points (`Project::crash_points`), the last agent's exit and the journal's
/// record of its answer after it: where a kill cuts off what the runner does after a repair.
fn last_agents_exit_and_its_answer(numbered: &[(u64, String)]) -> [u64; 2] {
    let exited = numbered
        .iter()
        .rposition(|(_, label)| label == "agent exited")
        .expect("the repair's agent exited");
    let recorded = numbered[exited..]
        .iter()
        .find(|(_, label)| label == "journal: after append")
        .expect("the repair's answer recorded");
    [numbered[exited].0, recorded.0]
}

/// The runner is killed (SIGKILL) between the agent's repair of a refused builtin push and the
/// runner's own push after it: right as the repair agent exits, and right after the journal
/// recorded its answer. The restart neither loses the repair nor pushes, opens or merges
/// twice: one PR, one merge, the hook's words handed to the repair.
#[test]
fn a_kill_between_the_push_repair_and_the_push_after_it_merges_once() {
    let refused_once = |p: &Project| {
        let marker = p.root.join("refused-once");
        hook(
            p,
            "pre-push",
            &format!(
                "test -e {m} && exit 0\ntouch {m}\necho 'lint: src/x.rs:3: missing doc comment' >&2\nexit 1\n",
                m = marker.display()
            ),
        );
    };
    // Where the repair's agent exits, and where its answer is recorded, in a run not killed.
    let probe = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
    refused_once(&probe);
    let (out, numbered) = probe.crash_points();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("commitPush: failed: LINT"));
    // The builtin steps after commitPush run no agent: the last agent to exit is the repair's.
    let [exited, recorded] = last_agents_exit_and_its_answer(&numbered);
    for (at, what) in [
        (exited, "as the repair agent exits"),
        (recorded, "after the repair's answer is recorded"),
    ] {
        let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
        refused_once(&p);
        p.killed_at(&at.to_string());
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "after a kill {what}: {all}");
        let prompt = p.prompt(1, "commitPush", 2).expect("the repair prompt");
        assert!(prompt.contains("missing doc comment"), "{what}: {prompt}");
        let pulls = p.project.join(".git/sdlc-runner/pulls");
        assert!(pulls.join("1.json").is_file(), "{what}");
        assert!(
            !pulls.join("2.json").exists(),
            "a second PR after a kill {what}"
        );
        assert_eq!(
            p.origin_main_log().matches("Merge issue #1").count(),
            1,
            "merged once after a kill {what}: {}",
            p.origin_main_log()
        );
    }
}

/// The runner is killed (SIGKILL) as the agent that repaired failing CI exits, or right after
/// the journal recorded its answer: the agent committed its fix and left the push to the
/// runner. The restart pushes the fix (the local branch is the runner's own work, ahead of
/// origin's) and merges it once, CI having passed it; it never escalates the issue for a push
/// of its own that the kill cut off.
#[test]
fn a_kill_between_a_ci_repairs_commit_and_the_runners_push_merges_the_fix_once() {
    let project = || {
        let p = Project::new(
            &[(1, "First issue", "")],
            json!({"steps": {"monitorCI": ["fix-ci-unpushed"]}}),
            json!({}),
        );
        let mut extra = builtin_steps();
        let script = "test -e ci-fixed || { echo 'assertion failed: hello'; exit 1; }";
        extra["localCi"] = json!({"command": ["sh", "-c", script], "timeoutMin": 1});
        p.set_config(extra);
        p
    };
    let probe = project();
    let (out, numbered) = probe.crash_points();
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert!(text(&out).contains("monitorCI: failed"), "{}", text(&out));
    // The builtin steps run no agent: the last agent to exit is the CI repair's.
    let [exited, recorded] = last_agents_exit_and_its_answer(&numbered);
    for (at, what) in [
        (exited, "as the CI repair's agent exits"),
        (recorded, "after the CI repair's answer is recorded"),
    ] {
        let p = project();
        p.killed_at(&at.to_string());
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "after a kill {what}: {all}");
        let main = p.origin_main_log();
        assert_eq!(
            main.matches("Merge issue #1").count(),
            1,
            "{what}: {main}\n{all}"
        );
        assert!(
            git(&p.origin, &["ls-tree", "--name-only", "main"]).contains("ci-fixed"),
            "the fix merged after a kill {what}: {all}"
        );
        assert_eq!(p.issue(1)["escalated"], json!(false), "{what}: {all}");
    }
}

/// The runner is killed (SIGKILL) right after createPR's answer is journaled, and a person sets
/// origin's branch back one commit, past the commit the runner pushed. The restart's look at
/// CI finds the local branch ahead of origin, as after a push a kill cut off, but this clone
/// pushed that head: the person's rewind stands, and the runner never pushes the commit again.
#[test]
fn a_persons_rewind_of_the_pushed_branch_is_never_pushed_over_after_a_restart() {
    let project = || {
        let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
        let mut extra = builtin_steps();
        extra["localCi"] = json!({"command": ["true"], "timeoutMin": 1});
        p.set_config(extra);
        p
    };
    let probe = project();
    let (out, numbered) = probe.crash_points();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let opened = numbered
        .iter()
        .position(|(_, label)| label == "builtin createPR done")
        .unwrap_or_else(|| panic!("createPR's answer: {numbered:?}"));
    let recorded = numbered[opened..]
        .iter()
        .find(|(_, label)| label == "journal: after append")
        .expect("createPR's answer recorded");
    let p = project();
    p.killed_at(&recorded.0.to_string());
    let branch = "refs/heads/1-issue-1";
    let pushed = git(&p.origin, &["rev-parse", branch]);
    git(&p.origin, &["update-ref", branch, &format!("{pushed}^")]);
    let out = p.run(&[]);
    let all = text(&out);
    let now = git(&p.origin, &["rev-parse", "--verify", "--quiet", branch]);
    assert_ne!(
        now, pushed,
        "the runner pushed over the person's rewind: {all}"
    );
    assert!(
        !p.origin_main_log().contains("Merge issue #1"),
        "nothing merged over the rewind: {all}"
    );
}

/// A hook that refuses every push the same way: the first issue escalates after its repair
/// (whose own push the hook refused too: the runner's push after it says how the attempt
/// failed), the second fails the same way, so the refusal is the environment's: the run halts
/// naming it, the second issue is not quarantined and the first's quarantine is lifted.
#[test]
fn the_same_hook_refusal_on_two_issues_is_the_environments() {
    let p = Project::new(
        &[(1, "First issue", ""), (2, "Second issue", "")],
        json!({}),
        builtin_steps(),
    );
    hook(
        &p,
        "pre-push",
        "echo 'policy: pushes are frozen today' >&2\nexit 1\n",
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(
        p.prompt(1, "commitPush", 2).is_some(),
        "issue #1 got its repair: {all}"
    );
    assert!(
        all.contains("ENVIRONMENT FAILURE: LINT on two issues in a row"),
        "{all}"
    );
    assert_eq!(p.issue(2)["escalated"], json!(false), "{all}");
    assert_eq!(p.issue(1)["escalated"], json!(false), "{all}");
    assert!(all.contains("pushes are frozen today"), "{all}");
}

/// The peak resident memory of a running process, in KiB (`VmHWM`), while it runs.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// A CI command that prints 100 MB before its error, and starts a server it never stops: the
/// error at the end reaches the repair prompt, the runner's memory stays flat, and no server
/// outlives the command that started it.
#[test]
fn local_ci_output_keeps_its_end_and_its_background_processes_die_with_it() {
    use std::time::{Duration, Instant};
    let p = Project::new(
        &[(1, "First issue", "")],
        json!({"steps": {"monitorCI": ["fix-ci"]}}),
        json!({}),
    );
    let daemons = p.root.join("daemons.pids");
    let script = format!(
        "sleep 600 & echo $! >> {daemons}\n\
         test -e ci-fixed && exit 0\n\
         head -c 100000000 /dev/zero | tr '\\0' 'x'\n\
         echo; echo 'FATAL: the real error is at the end'; exit 1",
        daemons = daemons.display()
    );
    let mut extra = builtin_steps();
    extra["localCi"] = json!({"command": ["sh", "-c", script]});
    p.set_config(extra);
    let child = p.spawn(&[]);
    let pid = child.id();
    let watcher = std::thread::spawn(move || {
        let mut peak = 0;
        let deadline = Instant::now() + Duration::from_secs(180);
        while let Some(kib) = peak_rss_kib(pid) {
            peak = peak.max(kib);
            if Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let out = e2e::wait_output(child, Duration::from_secs(180));
    let peak = watcher.join().expect("watcher");
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let prompt = p.prompt(1, "monitorCI", 2).expect("the repair prompt");
    assert!(
        prompt.contains("FATAL: the real error is at the end"),
        "the end of the output is in the repair context: {}",
        &prompt[prompt.len().saturating_sub(2000)..]
    );
    assert!(peak > 0 && peak <= 64 * 1024, "peak RSS {peak} KiB");
    let pids: Vec<i32> = std::fs::read_to_string(&daemons)
        .expect("the CI command ran")
        .split_whitespace()
        .map(|s| s.parse().expect("pid"))
        .collect();
    assert_eq!(pids.len(), 2, "one run per commit");
    assert_eq!(
        e2e::survivors(&pids, Duration::from_secs(5)),
        Vec::<i32>::new(),
        "a server started by CI outlived it"
    );
}

/// SIGTERM while the local CI command runs (and ignores SIGTERM): the runner stops within
/// seconds instead of waiting out localCi.timeoutMin, and the command's group is gone.
#[test]
fn sigterm_stops_a_running_local_ci_command_at_once() {
    use std::time::{Duration, Instant};
    let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
    let pids_file = p.root.join("ci.pids");
    let script = format!(
        "trap '' TERM\nsleep 600 &\necho $$ $! > {f}.tmp\nmv {f}.tmp {f}\nwait",
        f = pids_file.display()
    );
    let mut extra = builtin_steps();
    extra["localCi"] = json!({"command": ["sh", "-c", script]});
    p.set_config(extra);
    let child = p.spawn(&[]);
    let pids: Vec<i32> = wait_for_file(&pids_file, Duration::from_secs(120))
        .split_whitespace()
        .map(|s| s.parse().expect("pid"))
        .collect();
    let asked = Instant::now();
    e2e::signal(&child, libc::SIGTERM);
    let out = e2e::wait_output(child, Duration::from_secs(60));
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "took {:?}: {}",
        asked.elapsed(),
        text(&out)
    );
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(
        e2e::survivors(&pids, Duration::from_secs(5)),
        Vec::<i32>::new()
    );
}

/// `bounds` says how often one monitorCI attempt looks at CI, from monitorCI's timeoutMin: the
/// waits between looks are the machine's, on its CI schedule.
#[test]
fn bounds_states_how_often_one_monitor_ci_attempt_looks_at_ci() {
    let p = Project::new(
        &[],
        json!({}),
        // The default pauses, not the tests' shorter ones.
        json!({"steps": {"monitorCI": {"run": "builtin", "timeoutMin": 2}},
            "ciPoll": {"initialSeconds": 10}}),
    );
    let out = p
        .command(&["bounds", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("bounds");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    // 10 + 20 + 40 = 70 s fit in 120 s, the next 80 s do not: three waits, four looks.
    assert!(
        stdout.contains("per monitorCI attempt: at most 4 (waits of 10, 20, 40 s between, within monitorCI's timeoutMin of 120 s)"),
        "{stdout}"
    );
}

/// A teammate pushes a commit to an escalated issue's branch on origin and releases the issue.
/// The next cycle of the issue fetches (so origin's branch with the teammate's commit is what
/// the runner last saw) and its builtin push must not go over that commit (a lease on the
/// fetched ref would allow it): the run stops naming the branch and both commits, the
/// teammate's commit stays on origin, nothing is merged and the issue is not blamed.
#[test]
fn a_teammates_commit_on_a_released_issues_branch_is_never_pushed_over() {
    let p = Project::new(&[(1, "First issue", "")], json!({}), json!({}));
    let mut cfg = builtin_steps();
    cfg["maxRetriesPerStep"] = json!(1);
    cfg["localCi"] = json!({"command": ["false"], "timeoutMin": 1});
    p.set_config(cfg.clone());
    let first = p.run(&[]);
    let all = text(&first);
    assert_eq!(p.issue(1)["escalated"], json!(true), "{all}");
    let branch = "1-issue-1";
    assert!(
        !e2e::git(
            &p.origin,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}")
            ]
        )
        .is_empty(),
        "the branch is on origin: {all}"
    );
    // The teammate adds a commit on the branch and releases the issue.
    let person = p.root.join("person");
    e2e::git(
        &p.root,
        &[
            "clone",
            "--quiet",
            p.origin.to_str().expect("utf8"),
            "person",
        ],
    );
    e2e::git(&person, &["checkout", "--quiet", branch]);
    std::fs::write(person.join("teammate.txt"), "the teammate's fix\n").expect("write");
    e2e::git(&person, &["add", "teammate.txt"]);
    e2e::git(
        &person,
        &[
            "-c",
            "user.name=Teammate",
            "-c",
            "user.email=t@invalid",
            "commit",
            "--quiet",
            "-m",
            "teammate's fix",
        ],
    );
    e2e::git(&person, &["push", "--quiet", "origin", branch]);
    let theirs = e2e::git(&person, &["rev-parse", "HEAD"]);
    let release = p
        .command(&["release", "1", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("release");
    assert_eq!(code(&release), 0, "{}", text(&release));
    cfg["localCi"] = json!({"command": ["true"], "timeoutMin": 1});
    p.set_config(cfg);
    let second = p.run(&[]);
    let all2 = text(&second);
    let on_branch = e2e::git(
        &p.origin,
        &["branch", "--contains", &theirs, "--format=%(refname:short)"],
    );
    assert!(
        !on_branch.trim().is_empty(),
        "the teammate's commit {theirs} is on no branch of origin any more:\n{all}\n---\n{all2}"
    );
    assert_eq!(code(&second), 1, "{all2}");
    assert!(!p.origin_main_log().contains("Merge issue #1"), "{all2}");
    assert_eq!(p.issue(1)["escalated"], json!(false), "{all2}");
    assert!(
        all2.contains(&theirs[..12]) && all2.contains(branch),
        "{all2}"
    );
}

/// The runner is killed (SIGKILL) before and after each git command of the builtin
/// commitPush: around the commit, the look at origin's branch (its fetch) and the push. The
/// restart runs commitPush again from its journal: it finds its own push (or none) on origin,
/// not a person's, so the issue merges once, with one PR, and nothing is halted or blamed.
#[test]
fn a_kill_around_each_git_command_of_the_builtin_commit_push_merges_once() {
    let probe = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
    let (out, numbered) = probe.crash_points();
    assert_eq!(code(&out), 0, "{}", text(&out));
    let done = numbered
        .iter()
        .position(|(_, label)| label == "builtin commitPush done")
        .expect("commitPush ran as a builtin");
    let started = numbered[..done]
        .iter()
        .rposition(|(_, label)| label == "journal: after append")
        .expect("commitPush's dispatch recorded");
    let kills: Vec<u64> = numbered[started..done]
        .iter()
        .filter(|(_, label)| label.starts_with("git: "))
        .map(|(n, _)| *n)
        .collect();
    assert!(kills.len() >= 6, "commit, look and push: {numbered:?}");
    for at in kills {
        let p = Project::new(&[(1, "First issue", "")], json!({}), builtin_steps());
        p.killed_at(&at.to_string());
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "after a kill at point {at}: {all}");
        let pulls = p.project.join(".git/sdlc-runner/pulls");
        assert!(pulls.join("1.json").is_file(), "point {at}: {all}");
        assert!(
            !pulls.join("2.json").exists(),
            "a second PR after point {at}"
        );
        assert_eq!(
            p.origin_main_log().matches("Merge issue #1").count(),
            1,
            "merged once after a kill at point {at}: {}",
            p.origin_main_log()
        );
        p.replays_exactly();
    }
}
