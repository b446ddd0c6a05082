//! The agent in a sandbox (`agent.sandbox`), end to end: the real binary on a real git project,
//! the scripted fake agent started inside bubblewrap. Each test needs `bwrap` (the
//! distribution's `bubblewrap`, which `.ci/run` installs), except the one that takes it away.

use crate::e2e;

use e2e::{code, text, Project, BIN};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const NEEDS: &str = "bwrap is not installed: apt-get install bubblewrap (the test needs the distribution's bubblewrap)";

pub(crate) fn bwrap_installed() {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()))
        .unwrap_or(false);
    assert!(found, "{NEEDS}");
}

/// The runner's `agent` object running the fake agent in a sandbox of `kind` with `more`
/// sandbox keys: the fake agent's script and logs are the test's, so they are handed in.
pub(crate) fn sandboxed(p: &Project, kind: &str, more: Value) -> Value {
    for log in [p.agent_log.clone(), p.root.join("prompts.log")] {
        std::fs::write(&log, "").expect("the fake agent's log exists to be bound");
    }
    let mut sandbox = json!({
        "kind": kind,
        "readOnly": [p.script.to_str().expect("utf8")],
        "writable": [p.agent_log.to_str().expect("utf8"), p.root.join("prompts.log").to_str().expect("utf8")],
        "env": ["SDLC_FAKE_AGENT_LOG", "SDLC_FAKE_AGENT_PROMPT_LOG", "SDLC_FAKE_AGENT_TOOL"],
    });
    if let (Some(s), Some(m)) = (sandbox.as_object_mut(), more.as_object()) {
        for (k, v) in m {
            if let (Some(Value::Array(list)), Value::Array(extra)) = (s.get_mut(k), v) {
                list.extend(extra.iter().cloned());
            } else {
                s.insert(k.clone(), v.clone());
            }
        }
    }
    json!({
        "command": BIN,
        "args": ["fake-agent", "--script", p.script.to_str().expect("utf8")],
        "sandbox": sandbox,
    })
}

pub(crate) fn project(script: Value) -> Project {
    Project::new(&[(1, "First issue", "Do one thing.")], script, json!({}))
}

/// The steps the runner can do itself, all builtin: inside a sandbox they must be (the
/// agent's git directory is read-only there).
fn git_steps() -> Value {
    let mut steps = e2e::builtin_steps();
    steps["startIssue"] = json!({"run": "builtin"});
    steps
}

pub(crate) fn configure(p: &Project, agent: Value) {
    p.set_config(json!({"steps": git_steps(), "agent": agent}));
}

/// Every file under `dir`, read lossily (logs, attempt archives).
pub(crate) fn all_text_under(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            out.push_str(&all_text_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    out
}

/// Pids of live processes whose command line is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

fn write_tool(p: &Project, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = p.root.join("tools");
    std::fs::create_dir_all(&dir).expect("tools");
    let tool = dir.join(name);
    std::fs::write(&tool, format!("#!/bin/sh\n{body}")).expect("tool");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    tool
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn a_clean_issue_in_bubblewrap_costs_four_agent_calls_and_the_runner_commits_each_steps_work() {
    bwrap_installed();
    let p = project(json!({}));
    configure(&p, sandboxed(&p, "bwrap", json!({})));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    // startIssue is the runner's: writeSpecs, implement, simplify, verify are the agent's.
    let steps: Vec<String> = e2e::invocations_in(&p.agent_log)
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    assert_eq!(
        steps,
        ["writeSpecs", "implement", "simplify", "verify"],
        "{all}"
    );
    // The agent could not commit (its git directory is read-only): each step's work is the
    // runner's commit, with the identity git is configured with, naming the issue and step.
    let log = e2e::git(
        &p.origin,
        &["log", "--format=%an <%ae>|%cn <%ce>|%s", "main"],
    );
    let who = format!(
        "{} <{}>",
        e2e::git(&p.project, &["config", "user.name"]),
        e2e::git(&p.project, &["config", "user.email"])
    );
    for subject in [
        "docs: writeSpecs of issue #1",
        "feat: implement of issue #1",
    ] {
        assert!(
            log.lines().any(|l| l == format!("{who}|{who}|{subject}")),
            "{subject}: {log}"
        );
    }
    assert!(
        !log.contains("docs: specs for issue #1"),
        "the agent committed: {log}"
    );
    p.replays_exactly();
}

/// What the hostile agent tries, each attempt saying whether it got through.
fn hostile_body(p: &Project, home: &Path, outside: &Path) -> String {
    let runner_dir = p.project.join(".git/sdlc-runner");
    format!(
        "echo forged >> '{journal}' && echo JOURNAL-WRITTEN\n\
         echo planted > '{planted}' && echo RUNNER-DIR-WRITTEN\n\
         cat '{home}/.ssh/id_rsa'\n\
         echo \"token=[$GH_TOKEN]\"\n\
         echo pwned > '{outside}/pwned' && echo OUTSIDE-WRITTEN\n\
         setsid sleep 3171 </dev/null >/dev/null 2>&1 &\n\
         env -i setsid sleep 3172 </dev/null >/dev/null 2>&1 &\n\
         sleep 0.2\n\
         echo tried\n",
        journal = runner_dir.join("journal.jsonl").display(),
        planted = runner_dir.join("planted").display(),
        home = home.display(),
        outside = outside.display(),
    )
}

#[test]
fn without_a_sandbox_the_same_agent_reaches_all_of_it() {
    // The control: what the sandbox's test sees refused is there to be taken.
    let (p, _, all, logs) = hostile_run("none");
    for reached in [
        "JOURNAL-WRITTEN",
        "RUNNER-DIR-WRITTEN",
        "PLANTED-KEY-4711",
        "token=[ghp_PlantedTokenValue0123456789]",
        "OUTSIDE-WRITTEN",
    ] {
        assert!(logs.contains(reached), "{reached}: {logs}\n{all}");
    }
    assert!(p.root.join("outside/pwned").exists());
}

/// Runs the hostile step in a sandbox of `kind`; returns the project, the runner's output
/// and everything the runner logged.
fn hostile_run(kind: &str) -> (Project, i32, String, String) {
    let p = project(json!({"steps": {"implement": ["tool"]}}));
    let home = p.root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).expect("home");
    std::fs::write(
        home.join(".ssh/id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nPLANTED-KEY-4711\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .expect("key");
    let outside = p.root.join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    let tool = write_tool(&p, "hostile", &hostile_body(&p, &home, &outside));
    let tools = p.root.join("tools");
    configure(
        &p,
        sandboxed(
            &p,
            kind,
            json!({"readOnly": [tools.to_str().expect("utf8")]}),
        ),
    );
    let out = p.run_env(
        &[],
        &[
            ("HOME", home.to_str().expect("utf8")),
            ("GH_TOKEN", "ghp_PlantedTokenValue0123456789"),
            ("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8")),
        ],
    );
    let logs = all_text_under(&p.root.join("logs"));
    (p, code(&out), text(&out), logs)
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn a_hostile_agent_in_bubblewrap_reaches_nothing_but_the_work_tree() {
    bwrap_installed();
    // Daemons already there (the unsandboxed control's, should it run alongside) are not
    // this run's.
    let before: Vec<i32> = [["sleep", "3171"], ["sleep", "3172"]]
        .iter()
        .flat_map(|argv| processes(argv))
        .collect();
    let (p, code, all, logs) = hostile_run("bwrap");
    assert_eq!(code, 0, "{all}");
    assert!(logs.contains("tried"), "the tool ran: {logs}");
    assert!(
        p.origin_main_log().contains("Merge issue #1"),
        "the cycle still merges: {all}"
    );
    for (what, secret) in [
        ("the journal", "JOURNAL-WRITTEN"),
        ("the runner's directory", "RUNNER-DIR-WRITTEN"),
        ("the planted key", "PLANTED-KEY-4711"),
        ("the forge's token", "PlantedTokenValue"),
        ("a file outside the work tree", "OUTSIDE-WRITTEN"),
    ] {
        assert!(
            !logs.contains(secret) && !all.contains(secret),
            "the agent reached {what}: {logs}"
        );
    }
    assert!(logs.contains("token=[]"), "{logs}");
    let journal = std::fs::read_to_string(p.journal_path()).expect("journal");
    assert!(!journal.contains("forged"), "{journal}");
    assert!(!p.root.join("outside/pwned").exists());
    assert!(!p.project.join(".git/sdlc-runner/planted").exists());
    p.replays_exactly();
    for argv in [["sleep", "3171"], ["sleep", "3172"]] {
        let outlived: Vec<i32> = processes(&argv)
            .into_iter()
            .filter(|pid| !before.contains(pid))
            .collect();
        assert_eq!(
            outlived,
            Vec::<i32>::new(),
            "a daemon outlived the step: {argv:?}"
        );
    }
}

/// What a hostile implement agent tries on the clone's git directory, each write saying
/// whether it got through; it also reads history and changes a file of the work tree, which
/// is good work.
const HOSTILE_GIT: &str = "git log --oneline -1 >/dev/null && echo HISTORY-READ\n\
    printf '#!/bin/sh\\necho HOOK-RAN >&2\\n' > .git/hooks/pre-push && chmod +x .git/hooks/pre-push && echo HOOK-WRITTEN\n\
    git config core.hooksPath /tmp/hostile-hooks && echo CONFIG-WRITTEN\n\
    git update-ref refs/heads/hostile HEAD && echo REF-WRITTEN\n\
    git commit --allow-empty --quiet -m hostile && echo COMMIT-WRITTEN\n\
    echo 'good work' > agent-file.txt\n\
    echo tried\n";

/// The hostile git agent's run in a sandbox of `kind`: the project, exit code, output, logs.
fn hostile_git_run(kind: &str) -> (Project, i32, String, String) {
    // Once: without a sandbox the attempt fails as GIT_TAMPERED and the next one is plain.
    let p = project(json!({"steps": {"implement": ["tool", "ok"]}}));
    let tool = write_tool(&p, "hostile-git", HOSTILE_GIT);
    let tools = p.root.join("tools");
    configure(
        &p,
        sandboxed(
            &p,
            kind,
            json!({"readOnly": [tools.to_str().expect("utf8")]}),
        ),
    );
    let out = p.run_env(
        &[],
        &[("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8"))],
    );
    let logs = all_text_under(&p.root.join("logs"));
    (p, code(&out), text(&out), logs)
}

const GIT_WRITES: [&str; 4] = [
    "HOOK-WRITTEN",
    "CONFIG-WRITTEN",
    "REF-WRITTEN",
    "COMMIT-WRITTEN",
];

#[test]
fn without_a_sandbox_the_hostile_agent_writes_git_and_the_runner_puts_the_setup_back() {
    // The control: the writes the sandbox refuses are real ones. Without a sandbox the
    // trust record puts the hooks and config back (GIT_TAMPERED) and the issue still merges.
    let (p, code, all, logs) = hostile_git_run("none");
    assert_eq!(code, 0, "{all}");
    for written in GIT_WRITES {
        assert!(logs.contains(written), "{written}: {logs}");
    }
    assert!(all.contains("GIT_TAMPERED"), "{all}");
    assert!(!p.project.join(".git/hooks/pre-push").exists());
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn a_hostile_agent_in_bubblewrap_cannot_write_git_and_its_good_work_still_merges() {
    bwrap_installed();
    let (p, code, all, logs) = hostile_git_run("bwrap");
    assert_eq!(code, 0, "{all}");
    assert!(
        logs.contains("tried") && logs.contains("HISTORY-READ"),
        "{logs}"
    );
    for written in GIT_WRITES {
        assert!(!logs.contains(written), "the agent got {written}: {logs}");
    }
    assert!(
        logs.contains("Read-only file system"),
        "refused read-only: {logs}"
    );
    // Nothing to put back: the git setup was never changed.
    assert!(!all.contains("GIT_TAMPERED"), "{all}");
    assert!(!p.project.join(".git/hooks/pre-push").exists());
    let refs = e2e::git(&p.project, &["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains("hostile"), "{refs}");
    // The agent's file change is good work: the runner committed it and it merged.
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    assert_eq!(
        e2e::git(&p.origin, &["show", "main:agent-file.txt"]),
        "good work"
    );
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(log.contains("feat: implement of issue #1"), "{log}");
    assert!(!log.lines().any(|l| l == "hostile"), "{log}");
    p.replays_exactly();
}

/// Two workers in bubblewrap change the same file, so the second merge conflicts. The agent
/// cannot merge (its git directory is read-only): the runner starts merging main into the
/// branch, the agent resolves the conflicting file in the tree, the runner concludes the
/// merge, pushes it, CI passes it and both issues merge.
#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn in_bubblewrap_the_runner_starts_and_concludes_the_merge_whose_conflict_the_agent_resolves() {
    bwrap_installed();
    let p = Project::new(
        &[(1, "One", ""), (2, "Two", "")],
        json!({"steps": {
            "implement": ["write-shared"],
            "verify": ["busy:500"],
            "merge": ["resolve-conflict"],
        }}),
        json!({}),
    );
    configure(&p, sandboxed(&p, "bwrap", json!({})));
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(all.contains("MERGE_CONFLICT"), "{all}");
    let logs = all_text_under(&p.root.join("logs"));
    assert!(
        logs.contains("stopped at the conflict in shared.txt"),
        "the runner started the merge: {logs}"
    );
    assert!(logs.contains("the runner concludes the merge"), "{logs}");
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(
        log.lines()
            .any(|l| l.starts_with("Merge main into the branch of issue #")
                && l.ends_with("(conflict resolved)")),
        "the runner's merge commit: {log}"
    );
    let shared = e2e::git(&p.origin, &["show", "main:shared.txt"]);
    assert!(!shared.contains("<<<<<<<"), "{shared}");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn network_none_blocks_a_connection_to_a_loopback_server() {
    bwrap_installed();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("port").port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            if conn.is_ok() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    let script = json!({"steps": {"implement": [format!("connect:{port}")]}});
    for (network, reached) in [("host", true), ("none", false)] {
        let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
        let p = project(script.clone());
        configure(&p, sandboxed(&p, "bwrap", json!({"network": network})));
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "network {network}: {all}");
        let logs = all_text_under(&p.root.join("logs"));
        let got = accepted.load(std::sync::atomic::Ordering::SeqCst) - before;
        assert_eq!(got > 0, reached, "network {network}: {logs}");
        let said = if reached {
            "connected to 127.0.0.1"
        } else {
            "no connection to 127.0.0.1"
        };
        assert!(logs.contains(said), "network {network}: {logs}");
    }
}

#[test]
fn a_missing_sandbox_program_halts_once_naming_the_fix_and_blames_no_issue() {
    let p = project(json!({}));
    configure(&p, sandboxed(&p, "bwrap", json!({})));
    // A PATH with git and nothing else: no bwrap.
    let bin = p.root.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let git = which_git();
    std::os::unix::fs::symlink(&git, bin.join("git")).expect("git link");
    let out = p.run_env(&[], &[("PATH", bin.to_str().expect("utf8"))]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: TOOLING_ENV"), "{all}");
    assert!(all.contains("`bwrap` not found"), "{all}");
    assert!(all.contains("apt-get install bubblewrap"), "{all}");
    assert!(p.invocations().is_empty(), "{:?}", p.invocations());
    assert_eq!(
        p.issue(1)["escalated"],
        false,
        "the environment's failure, not the issue's"
    );
}

fn which_git() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("git"))
                .find(|g| g.is_file())
        })
        .expect("git on PATH")
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn the_step_timeout_reaches_everything_in_the_sandbox() {
    bwrap_installed();
    // Attempt 1 leaves two daemons (one with an empty environment) and works past the
    // step's limit; attempt 2 does the work.
    let p = project(json!({"steps": {"implement": ["daemon:600000", "ok"]}}));
    let mut steps = git_steps();
    steps["implement"] = json!({"timeoutMin": 0.05});
    p.set_config(json!({"steps": steps, "agent": sandboxed(&p, "bwrap", json!({}))}));
    // Another suite's daemon (a runner killed with -9 in a crash test leaves its agent's
    // `sleep 300` for five minutes) is not this test's.
    let before = processes(&["sleep", "300"]);
    let started = std::time::Instant::now();
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(all.contains("TIMEOUT"), "{all}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the stop was not held up by the sandbox: {:?}",
        started.elapsed()
    );
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let outlived: Vec<i32> = processes(&["sleep", "300"])
        .into_iter()
        .filter(|pid| !before.contains(pid))
        .collect();
    assert_eq!(outlived, Vec::<i32>::new(), "a daemon outlived the sandbox");
    p.replays_exactly();
}

/// `doctor`'s line about the sandbox (the first one), with `env` added.
fn doctor_sandbox_line(p: &Project, env: &[(&str, &str)]) -> String {
    doctor_line(p, "sandbox   ", env)
}

/// `doctor`'s first line of check `name` (padded as doctor prints it), with `env` added.
fn doctor_line(p: &Project, name: &str, env: &[(&str, &str)]) -> String {
    let out = p
        .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
        .envs(env.iter().copied())
        .output()
        .expect("doctor");
    let all = text(&out);
    all.lines()
        .find(|l| l.get(6..16) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line: {all}"))
        .to_string()
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn doctor_runs_the_agents_version_command_inside_bubblewrap() {
    bwrap_installed();
    let p = project(json!({}));
    configure(&p, sandboxed(&p, "bwrap", json!({"network": "none"})));
    let line = doctor_sandbox_line(&p, &[]);
    assert!(line.starts_with("ok "), "{line}");
    assert!(
        line.contains("`sdlc-runner --version` inside bwrap ran"),
        "{line}"
    );
    assert!(line.contains("no network"), "{line}");
}

#[test]
fn the_dry_run_says_the_agent_runs_inside_the_sandbox() {
    let p = project(json!({}));
    configure(&p, sandboxed(&p, "bwrap", json!({"network": "none"})));
    let out = p.run(&["--dry-run"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(
        all.contains("  inside bwrap (no network): the work tree writable"),
        "{all}"
    );
}

#[test]
fn doctor_warns_when_the_agent_runs_unattended_without_a_sandbox() {
    let p = project(json!({}));
    let agent = json!({"command": BIN, "args": ["fake-agent"]});
    configure(&p, agent.clone());
    let line = doctor_sandbox_line(&p, &[]);
    assert!(line.starts_with("warn "), "{line}");
    assert!(line.contains("without a sandbox"), "{line}");
    assert!(line.contains("\"kind\": \"bwrap\""), "the fix: {line}");
    let mut chosen = agent;
    chosen["sandbox"] = json!({"kind": "none"});
    configure(&p, chosen);
    let line = doctor_sandbox_line(&p, &[]);
    assert!(line.starts_with("ok "), "{line}");
    assert!(line.contains("none (chosen)"), "{line}");
}

/// A `PATH` whose first `bwrap` fails the way bubblewrap does where user namespaces are off.
fn failing_bwrap_on_path(p: &Project) -> String {
    let bin = p.root.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let fake = write_tool(
        p,
        "bwrap",
        "echo 'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n",
    );
    std::os::unix::fs::symlink(&fake, bin.join("bwrap")).expect("link");
    format!("{}:{}", bin.display(), std::env::var("PATH").expect("PATH"))
}

#[test]
fn a_sandbox_that_cannot_start_halts_once_as_the_environments_and_doctor_names_the_fix() {
    // A bwrap that fails the way bubblewrap does where user namespaces are off.
    let p = project(json!({}));
    let path = failing_bwrap_on_path(&p);
    configure(&p, sandboxed(&p, "bwrap", json!({})));
    let line = doctor_sandbox_line(&p, &[("PATH", &path)]);
    assert!(line.starts_with("fail "), "{line}");
    assert!(line.contains("user namespaces"), "{line}");

    let out = p.run_env(&[], &[("PATH", &path)]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: TOOLING_ENV"), "{all}");
    assert!(all.contains("sandbox (bwrap) could not start"), "{all}");
    assert!(all.contains("user namespaces"), "{all}");
    assert!(p.invocations().is_empty(), "{:?}", p.invocations());
    let failures = p
        .journal()
        .iter()
        .filter(|l| l["event"]["event"] == "stepFailed")
        .count();
    assert_eq!(failures, 1, "one attempt, then the halt: {:?}", p.journal());
    assert_eq!(p.issue(1)["escalated"], false, "not the issue's fault");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn workers_clones_work_in_bubblewrap_with_the_objects_they_borrow() {
    bwrap_installed();
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"steps": {"implement": ["tool"]}}),
        json!({}),
    );
    // A worker's clone borrows the project's objects (alternates): reading history needs them.
    let tool = write_tool(
        &p,
        "history",
        "if git show --stat HEAD~1 >/dev/null; then echo OBJECTS-READ; else echo OBJECTS-MISSING; fi\n",
    );
    let tools = p.root.join("tools");
    configure(
        &p,
        sandboxed(
            &p,
            "bwrap",
            json!({"readOnly": [tools.to_str().expect("utf8")]}),
        ),
    );
    let out = p.run_env(
        &["--workers", "2"],
        &[("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8"))],
    );
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1, 2], "{all}");
    let logs = all_text_under(&p.root.join("logs"));
    assert!(logs.contains("OBJECTS-READ"), "{logs}");
    assert!(!logs.contains("OBJECTS-MISSING"), "{logs}");
    assert!(
        !logs.contains("info/alternates"),
        "git found the borrowed objects: {logs}"
    );
}

/// The CI script a hostile agent writes into the tree: it copies the planted key and the
/// forge's token to a file outside the tree, tries the clone's git directory and the
/// runner's journal, and fails until the repair agent's `ci-fixed` is there.
fn hostile_ci_body(p: &Project, home: &Path, outside: &Path) -> String {
    let journal = p.project.join(".git/sdlc-runner/journal.jsonl");
    let ci = format!(
        "cat '{home}/.ssh/id_test' >> '{outside}/exfil'\n\
         echo \"token=[$GH_TOKEN]\" >> '{outside}/exfil'\n\
         echo \"ci saw GH_TOKEN as <$GH_TOKEN>\"\n\
         echo planted > \"$(git rev-parse --git-common-dir)/ci-planted\" && echo GIT-DIR-WRITTEN\n\
         echo forged >> '{journal}' && echo JOURNAL-WRITTEN\n\
         test -e ci-fixed || {{ echo CI-FAILS-UNTIL-FIXED; exit 1; }}\n\
         echo CI-PASSES\n",
        home = home.display(),
        outside = outside.display(),
        journal = journal.display(),
    );
    format!("cat > ci.sh <<'CI_EOF'\n{ci}CI_EOF\necho wrote ci.sh\n")
}

/// The hostile agent writes `ci.sh`, the project's `localCi` runs `sh ci.sh`; the agent runs
/// in a sandbox of `kind`. Returns the project, the runner's exit code and output, and what
/// left the sandbox (the file outside the tree).
fn hostile_ci_run(kind: &str) -> (Project, i32, String, String) {
    let p = project(json!({"steps": {"implement": ["tool"], "monitorCI": ["fix-ci"]}}));
    let home = p.root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).expect("home");
    std::fs::write(home.join(".ssh/id_test"), "PLANTED-CI-KEY-5813\n").expect("key");
    let outside = p.root.join("outside");
    std::fs::create_dir_all(&outside).expect("outside");
    let tool = write_tool(&p, "hostile-ci", &hostile_ci_body(&p, &home, &outside));
    let tools = p.root.join("tools");
    p.set_config(json!({
        "steps": git_steps(),
        // The repair agent of old pushed its fix to the test's origin, a directory like any
        // other; inside the sandbox the runner commits and pushes it.
        "agent": sandboxed(&p, kind, json!({
            "readOnly": [tools.to_str().expect("utf8")],
            "writable": [p.origin.to_str().expect("utf8")],
        })),
        "localCi": {"command": ["sh", "ci.sh"], "timeoutMin": 1},
    }));
    let out = p.run_env(
        &[],
        &[
            ("HOME", home.to_str().expect("utf8")),
            ("GH_TOKEN", "PlantedCiToken0123456789"),
            ("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8")),
        ],
    );
    let exfil = std::fs::read_to_string(outside.join("exfil")).unwrap_or_default();
    (p, code(&out), text(&out), exfil)
}

#[test]
fn without_a_sandbox_the_agents_ci_script_copies_the_secrets_out() {
    // The control: what the sandboxed CI's test sees kept in is there to be taken.
    let (p, code, all, exfil) = hostile_ci_run("none");
    assert_eq!(code, 0, "{all}");
    assert!(exfil.contains("PLANTED-CI-KEY-5813"), "{exfil}");
    assert!(
        exfil.contains("token=[PlantedCiToken0123456789]"),
        "{exfil}"
    );
    assert!(p.project.join(".git/ci-planted").exists());
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn local_ci_runs_the_agents_script_inside_bubblewrap_and_copies_nothing_out() {
    bwrap_installed();
    let (p, code, all, exfil) = hostile_ci_run("bwrap");
    assert_eq!(code, 0, "{all}");
    assert!(
        !exfil.contains("PLANTED-CI-KEY-5813") && !exfil.contains("PlantedCiToken"),
        "the CI script copied a secret out: {exfil}"
    );
    // Its verdict is its own exit code: it failed until the repair, and its log reached the
    // repair agent.
    assert!(all.contains("monitorCI: failed"), "{all}");
    let prompt = p.prompt(1, "monitorCI", 2).expect("the repair prompt");
    assert!(prompt.contains("local CI `sh ci.sh`"), "{prompt}");
    assert!(prompt.contains("CI-FAILS-UNTIL-FIXED"), "{prompt}");
    assert!(prompt.contains("ci saw GH_TOKEN as <>"), "{prompt}");
    for refused in ["GIT-DIR-WRITTEN", "JOURNAL-WRITTEN"] {
        assert!(!prompt.contains(refused), "{refused}: {prompt}");
    }
    assert!(!p.project.join(".git/ci-planted").exists());
    let journal = std::fs::read_to_string(p.journal_path()).expect("journal");
    assert!(!journal.contains("forged"), "{journal}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    // The repair agent only wrote its fix: the runner committed and pushed it.
    let log = e2e::git(&p.origin, &["log", "--format=%s", "main"]);
    assert!(log.contains("fix: make CI pass (#1, monitorCI)"), "{log}");
    // The scratch tree is gone, as without a sandbox.
    let trees = e2e::git(&p.project, &["worktree", "list", "--porcelain"]);
    assert_eq!(trees.matches("worktree ").count(), 1, "{trees}");
    p.replays_exactly();
}

#[test]
fn doctor_warns_that_local_ci_without_a_sandbox_runs_agent_code_with_your_credentials() {
    let p = project(json!({}));
    let agent = json!({"command": BIN, "args": ["fake-agent"]});
    for sandbox in [None, Some(json!({"kind": "none"}))] {
        let mut agent = agent.clone();
        if let Some(s) = sandbox {
            agent["sandbox"] = s;
        }
        p.set_config(json!({"agent": agent, "localCi": {"command": ["true"]}}));
        let line = doctor_line(&p, "ci        ", &[]);
        assert!(line.starts_with("warn "), "{line}");
        assert!(
            line.contains(
                "without a sandbox, localCi runs agent-written code unconfined, with your credentials"
            ),
            "{line}"
        );
        assert!(
            line.contains("agent.sandbox.kind: \"bwrap\""),
            "the fix: {line}"
        );
    }
    p.set_config(json!({
        "steps": git_steps(),
        "agent": sandboxed(&p, "bwrap", json!({})),
        "localCi": {"command": ["true"], "network": "none"},
    }));
    let line = doctor_line(&p, "ci        ", &[]);
    assert!(line.starts_with("ok "), "{line}");
    assert!(line.contains("inside bwrap (no network)"), "{line}");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn workers_local_ci_reads_history_inside_bubblewrap_and_passes() {
    bwrap_installed();
    let p = Project::new(&[(1, "First", ""), (2, "Second", "")], json!({}), json!({}));
    // Reading history needs the clone's git directory, and a worker's clone borrows the
    // project's objects: both are there, read-only.
    p.set_config(json!({
        "steps": git_steps(),
        "agent": sandboxed(&p, "bwrap", json!({})),
        "localCi": {"command": ["sh", "-c", "git log --stat >/dev/null"], "timeoutMin": 1},
    }));
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), vec![1, 2], "{all}");
    assert!(!all.contains("monitorCI: failed"), "{all}");
    // Each worker's CI ran in its own clone's scratch tree and kept its verdict in the
    // fleet's one store (the merge train's: one worker's test counts for another's land);
    // git said nothing of a borrowed object directory it could not find.
    let verdicts = all_text_under(&p.project.join(".git/sdlc-runner/ci"));
    // One verdict per issue's branch, and one more for the commit main would hold when the
    // second merge found main moved by the first (CI passes the exact tree main will hold).
    let passed = verdicts.matches("\"passed\":true").count();
    assert!((2..=3).contains(&passed), "{verdicts}");
    assert!(!verdicts.contains("\"passed\":false"), "{verdicts}");
    assert!(!verdicts.contains("info/alternates"), "{verdicts}");
}

#[test]
fn a_ci_sandbox_that_cannot_start_is_no_verdict_on_the_commit_and_blames_no_issue() {
    // The agent steps run unsandboxed; only the CI meets the bwrap that fails the way
    // bubblewrap does where user namespaces are off.
    let p = project(json!({}));
    let path = failing_bwrap_on_path(&p);
    let mut steps = e2e::builtin_steps();
    for step in [
        "startIssue",
        "writeSpecs",
        "implement",
        "simplify",
        "verify",
    ] {
        steps[step] = json!({"agent": {"sandbox": {"kind": "none"}}});
    }
    p.set_config(json!({
        "steps": steps,
        "agent": sandboxed(&p, "bwrap", json!({})),
        "localCi": {"command": ["true"], "timeoutMin": 1},
    }));
    let out = p.run_env(&[], &[("PATH", &path)]);
    let all = text(&out);
    assert_ne!(code(&out), 0, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: TOOLING_ENV"), "{all}");
    assert!(
        all.contains(
            "localCi.command `true` in its sandbox: the agent's sandbox (bwrap) could not start"
        ),
        "{all}"
    );
    assert!(all.contains("user namespaces"), "{all}");
    assert!(!p.origin_main_log().contains("Merge issue #1"), "{all}");
    assert_eq!(
        p.issue(1)["escalated"],
        false,
        "not the issue's fault: {all}"
    );
    let verdicts = std::fs::read_dir(p.project.join(".git/sdlc-runner/ci"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(verdicts, 0, "no verdict is kept for a CI that never ran");
}

/// A hostile agent's tool that plants, in the clone's git directory, every kind of program
/// git runs or destination it pushes to: each, run, appends the planted key to `<root>/exfil`.
fn tampering_tool(p: &Project, home: &Path) -> PathBuf {
    let exfil = p.root.join("exfil");
    let payload = write_tool(
        p,
        "payload",
        &format!(
            "cat '{key}' >> '{exfil}' 2>/dev/null; echo \"$0 $*\" >> '{exfil}'\ncat\n",
            key = home.join(".ssh/id_rsa").display(),
            exfil = exfil.display()
        ),
    );
    let decoy = p.root.join("decoy.git");
    e2e::git(&p.root, &["init", "--quiet", "--bare", "decoy.git"]);
    let payload = payload.display();
    write_tool(
        p,
        "tamper",
        &format!(
            "for h in pre-commit prepare-commit-msg commit-msg post-commit pre-push post-checkout \
             post-merge pre-merge-commit pre-rebase post-rewrite reference-transaction \
             pre-auto-gc fsmonitor-watchman; do cp '{payload}' .git/hooks/$h; done\n\
             git config core.fsmonitor '{payload}'\n\
             git config core.sshCommand '{payload}'\n\
             git config credential.helper '!{payload}'\n\
             git config filter.evil.clean '{payload}'\n\
             git config filter.evil.smudge '{payload}'\n\
             git config filter.evil.process '{payload}'\n\
             git config diff.evil.textconv '{payload}'\n\
             git config merge.evil.driver '{payload} %O %A %B'\n\
             printf '* filter=evil diff=evil merge=evil\\n' > .git/info/attributes\n\
             git config url.'{decoy}'.insteadOf '{origin}'\n\
             git config url.'{decoy}'.pushInsteadOf '{origin}'\n\
             git remote set-url origin '{decoy}'\n\
             echo tampered\n",
            decoy = decoy.display(),
            origin = p.origin.display(),
        ),
    )
}

/// Runs an agent whose first implement attempt plants `tampering_tool`'s programs, in a
/// sandbox of `kind`; returns the project, the runner's exit code, its output and logs.
fn tampering_run(kind: &str) -> (Project, i32, String, String) {
    tampering_run_scripted(kind, json!({"steps": {"implement": ["tool", "ok"]}}))
}

/// [`tampering_run`] with the fake agent's `script`.
fn tampering_run_scripted(kind: &str, script: Value) -> (Project, i32, String, String) {
    let p = project(script);
    let home = p.root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).expect("home");
    std::fs::write(home.join(".ssh/id_rsa"), "PLANTED-KEY-4711\n").expect("key");
    let tool = tampering_tool(&p, &home);
    let tools = p.root.join("tools");
    let mut agent = sandboxed(
        &p,
        kind,
        json!({"readOnly": [tools.to_str().expect("utf8")]}),
    );
    if kind == "none" {
        agent.as_object_mut().expect("agent").remove("sandbox");
    }
    configure(&p, agent);
    let out = p.run_env(
        &[],
        &[
            ("HOME", home.to_str().expect("utf8")),
            ("SDLC_FAKE_AGENT_TOOL", tool.to_str().expect("utf8")),
        ],
    );
    let logs = all_text_under(&p.root.join("logs"));
    (p, code(&out), text(&out), logs)
}

/// What every tampering run must show: nothing the agent planted ran in the runner's git,
/// the change was named and put back, and the work merged on the real origin.
fn assert_tampering_undone(p: &Project, code: i32, all: &str, logs: &str) {
    assert!(logs.contains("tampered"), "the tool ran: {logs}\n{all}");
    let exfil = std::fs::read_to_string(p.root.join("exfil")).unwrap_or_default();
    assert_eq!(exfil, "", "a program the agent planted ran: {exfil}\n{all}");
    assert_eq!(code, 0, "{all}");
    assert!(
        p.origin_main_log().contains("Merge issue #1"),
        "merged on the real origin: {all}"
    );
    let decoy = e2e::git(&p.root.join("decoy.git"), &["for-each-ref"]);
    assert_eq!(decoy.trim(), "", "nothing was pushed to the agent's remote");
    for named in [
        "GIT_TAMPERED",
        "hook pre-push added",
        "remote.origin.url",
        "core.fsmonitor",
        "filter.evil.clean",
        ".git/info/attributes added",
    ] {
        assert!(
            all.contains(named) || logs.contains(named),
            "{named}: {all}"
        );
    }
    let hooks = std::fs::read_dir(p.project.join(".git/hooks"))
        .expect("hooks")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".sample"))
        .collect::<Vec<_>>();
    assert_eq!(hooks, Vec::<String>::new(), "every planted hook is gone");
    let url = e2e::git(&p.project, &["remote", "get-url", "origin"]);
    assert_eq!(url.trim(), p.origin.to_str().expect("utf8"));
    assert_eq!(
        p.invocations()
            .iter()
            .filter(|i| i.contains("implement"))
            .count(),
        2,
        "the tampering attempt failed and the next one did the work: {:?}",
        p.invocations()
    );
    p.replays_exactly();
}

#[test]
fn without_a_sandbox_what_the_agent_plants_in_git_never_runs_in_the_runners_git_and_is_put_back() {
    let (p, code, all, logs) = tampering_run("none");
    assert_tampering_undone(&p, code, &all, &logs);
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn in_bubblewrap_the_agent_plants_nothing_in_git_and_its_first_attempt_merges() {
    bwrap_installed();
    let (p, code, all, logs) = tampering_run("bwrap");
    assert!(logs.contains("tampered"), "the tool ran: {logs}\n{all}");
    assert_eq!(code, 0, "{all}");
    // The git directory is read-only inside: no hook, config entry or remote was changed,
    // so there is nothing to put back and the attempt is not failed for it.
    assert!(logs.contains("Read-only file system"), "{logs}");
    assert!(!all.contains("GIT_TAMPERED"), "{all}");
    let exfil = std::fs::read_to_string(p.root.join("exfil")).unwrap_or_default();
    assert_eq!(exfil, "", "a program the agent planted ran: {exfil}\n{all}");
    let hooks = std::fs::read_dir(p.project.join(".git/hooks"))
        .expect("hooks")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".sample"))
        .collect::<Vec<_>>();
    assert_eq!(hooks, Vec::<String>::new(), "no hook was planted");
    let url = e2e::git(&p.project, &["remote", "get-url", "origin"]);
    assert_eq!(url.trim(), p.origin.to_str().expect("utf8"));
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    let implements = p
        .invocations()
        .iter()
        .filter(|i| i.contains("implement"))
        .count();
    assert_eq!(implements, 1, "{:?}", p.invocations());
    p.replays_exactly();
}

/// An agent that tampers on every attempt is escalated like any failing step, within the
/// same bounds, and the escalation quotes what it changed; nothing it planted ever ran.
#[test]
fn an_agent_that_keeps_tampering_with_git_is_escalated_quoting_the_change() {
    let (p, code, all, _) = tampering_run_scripted(
        "none",
        json!({"steps": {"implement": ["tool", "tool", "tool"]}}),
    );
    assert_eq!(code, 1, "one issue, escalated: {all}");
    assert_eq!(p.issue(1)["escalated"], true, "{all}");
    let escalation = p.issue(1)["escalation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(escalation.contains("GIT_TAMPERED"), "{escalation}");
    assert!(
        escalation.contains("hook"),
        "the change is quoted: {escalation}"
    );
    let exfil = std::fs::read_to_string(p.root.join("exfil")).unwrap_or_default();
    assert_eq!(exfil, "", "a program the agent planted ran: {exfil}");
    assert_eq!(e2e::merged_issues(&p.origin), Vec::<u32>::new(), "{all}");
    let url = e2e::git(&p.project, &["remote", "get-url", "origin"]);
    assert_eq!(url.trim(), p.origin.to_str().expect("utf8"));
}

/// The fake agent installed as a version manager installs a CLI: `bin/fake-cli` links to
/// `lib/node_modules/fake-cli/cli.js`, a script whose first line is `#!/usr/bin/env node`;
/// `bin/node` is the interpreter, a shell script that starts the runtime (the fake agent, a
/// hard link of the runner's binary) at `runtime`, dropping the script's path. Returns the
/// CLI's command and the `PATH` with the version's `bin` first.
fn version_managed_cli(p: &Project, home: &Path, runtime: &Path) -> (PathBuf, String) {
    use std::os::unix::fs::PermissionsExt;
    let v22 = home.join(".nvm/versions/node/v22");
    let package = v22.join("lib/node_modules/fake-cli");
    std::fs::create_dir_all(&package).expect("package");
    std::fs::create_dir_all(v22.join("bin")).expect("bin");
    std::fs::create_dir_all(runtime.parent().expect("dir")).expect("runtime dir");
    if std::fs::hard_link(BIN, runtime).is_err() {
        std::fs::copy(BIN, runtime).expect("the runtime");
    }
    let script = p.script.to_str().expect("utf8");
    let node = v22.join("bin/node");
    std::fs::write(
        &node,
        format!(
            "#!/bin/sh\nshift\nexec {} fake-agent --script {script} \"$@\"\n",
            runtime.display()
        ),
    )
    .expect("node");
    let cli = package.join("cli.js");
    std::fs::write(
        &cli,
        "#!/usr/bin/env node\nconsole.log('never read: the fake node drops it')\n",
    )
    .expect("cli");
    for f in [&node, &cli] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let command = v22.join("bin/fake-cli");
    std::os::unix::fs::symlink("../lib/node_modules/fake-cli/cli.js", &command).expect("link");
    let path = format!(
        "{}:{}",
        v22.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (command, path)
}

fn version_managed_config(p: &Project, command: &Path, more: Value) {
    let mut agent = sandboxed(p, "bwrap", more);
    agent["command"] = json!(command.to_str().expect("utf8"));
    agent["args"] = json!([]);
    configure(p, agent);
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn a_cli_installed_under_a_version_manager_starts_in_bubblewrap_and_doctor_agrees() {
    bwrap_installed();
    let p = project(json!({}));
    let home = p.root.join("home");
    let runtime = home.join(".nvm/versions/node/v22/libexec/fake-node");
    let (command, path) = version_managed_cli(&p, &home, &runtime);
    version_managed_config(&p, &command, json!({}));
    let env = [
        ("HOME", home.to_str().expect("utf8")),
        ("PATH", path.as_str()),
    ];
    let line = doctor_sandbox_line(&p, &env);
    assert!(line.starts_with("ok "), "{line}");
    assert!(
        line.contains("`fake-cli --version` inside bwrap ran"),
        "{line}"
    );
    let out = p
        .command(&[
            "run",
            "--dry-run",
            "--config",
            p.config.to_str().expect("utf8"),
        ])
        .envs(env)
        .output()
        .expect("dry run");
    let all = text(&out);
    let v22 = home.join(".nvm/versions/node/v22");
    assert!(
        all.contains(&format!("read-only: {}", v22.display())),
        "{all}"
    );
    let out = p.run_env(&[], &env);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn an_interpreter_needing_what_the_sandbox_hides_fails_doctor_naming_the_entry_and_the_run_blames_no_issue(
) {
    bwrap_installed();
    let p = project(json!({}));
    let home = p.root.join("home");
    // The interpreter starts a runtime outside its installation, which the sandbox hides.
    let runtime = home.join(".fake-runtime/fake-node");
    let (command, path) = version_managed_cli(&p, &home, &runtime);
    version_managed_config(&p, &command, json!({}));
    let env = [
        ("HOME", home.to_str().expect("utf8")),
        ("PATH", path.as_str()),
    ];
    let line = doctor_sandbox_line(&p, &env);
    assert!(line.starts_with("fail "), "{line}");
    assert!(
        line.contains("add \"~/.fake-runtime/fake-node\" to agent.sandbox.readOnly"),
        "{line}"
    );
    let out = p.run_env(&[], &env);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: TOOLING_ENV"), "{all}");
    assert_eq!(p.issue(1)["escalated"], false, "{all}");
    // Doing what doctor said: both agree again, and the issue merges.
    version_managed_config(
        &p,
        &command,
        json!({"readOnly": ["~/.fake-runtime/fake-node"]}),
    );
    assert!(doctor_sandbox_line(&p, &env).starts_with("ok "));
    let out = p.run_env(&["--ack-halt"], &env);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn a_read_only_home_holding_the_project_leaves_the_work_tree_writable_and_merges() {
    bwrap_installed();
    let p = project(json!({}));
    // The project lies under HOME, and the agent may read all of HOME.
    configure(&p, sandboxed(&p, "bwrap", json!({"readOnly": ["~"]})));
    let home = p.root.to_str().expect("utf8");
    let out = p.run_env(&[], &[("HOME", home)]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    assert!(!all.contains("Read-only file system"), "{all}");
}

#[test]
fn an_entry_naming_the_project_or_inside_it_is_a_config_error_naming_it() {
    let p = project(json!({}));
    let git = p.project.join(".git");
    configure(
        &p,
        sandboxed(
            &p,
            "bwrap",
            json!({"readOnly": [git.to_str().expect("utf8")]}),
        ),
    );
    let out = p
        .command(&[
            "config",
            "check",
            "--config",
            p.config.to_str().expect("utf8"),
        ])
        .output()
        .expect("config check");
    let all = text(&out);
    assert_eq!(code(&out), 2, "{all}");
    assert!(all.contains("agent.sandbox.readOnly[1]"), "{all}");
    assert!(all.contains("is the project"), "{all}");
}

#[test]
#[ignore = "needs bubblewrap; .ci/run installs it: cargo test -- --ignored"]
fn the_clis_route_to_its_model_comes_into_bubblewrap() {
    bwrap_installed();
    // The fake model answers only through the gateway ANTHROPIC_BASE_URL names, set in the
    // operator's environment alone.
    let p = project(json!({"steps": {"*": ["via-gateway"]}}));
    configure(&p, sandboxed(&p, "bwrap", json!({})));
    let out = p.run_env(&[], &[("ANTHROPIC_BASE_URL", "http://gateway.invalid")]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(p.origin_main_log().contains("Merge issue #1"), "{all}");
    // Without it, the model is out of reach: the network's, waited out, then a halt.
    let p = project(json!({"steps": {"*": ["via-gateway"]}}));
    let mut agent = sandboxed(&p, "bwrap", json!({}));
    agent["env"] = json!({});
    p.set_config(json!({
        "steps": git_steps(), "agent": agent, "maxNetworkWaits": 1,
        "backoff": {"initialSeconds": 1, "maxSeconds": 1},
    }));
    let out = p.run_env(&[], &[("ANTHROPIC_BASE_URL", "")]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("ENVIRONMENT FAILURE: NETWORK"), "{all}");
    assert_eq!(p.issue(1)["escalated"], false, "{all}");
}
