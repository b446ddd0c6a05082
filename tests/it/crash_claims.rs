//! SIGKILL between a claim write and its answer: a runner with `--worker-id` on a local
//! tracker kills itself (the failpoint `SDLC_RUNNER_CRASH_AT=<label>`) right after the claim
//! store wrote the claim (`ClaimIssue`) or its renewal (`RenewClaim`), before the machine's
//! answer was journaled. Restarted with the same worker id, the runner takes its own claim as
//! its own and finishes the issue exactly once: merged once, every step's agent calls as in
//! the run without a kill, no claim of another worker, no halt, and a journal of one session
//! that `replay` reproduces exactly. A runner killed while renewing before a step's run
//! counts no attempt for the run that never started, and runs it once, as the same attempt.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::process::Output;

const WORKER: &str = "wa";

/// One issue whose verify is rate-limited once: the wait after it renews the claim (a wait
/// always writes the renewal, whatever the lease has left).
fn project() -> Project {
    Project::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({"steps": {"verify": ["rate-limit-once"]}}),
        json!({}),
    )
}

fn run(p: &Project, crash_at: Option<&str>) -> Output {
    let crash: Vec<(&str, &str)> = crash_at
        .map(|label| (sdlc_runner::failpoint::CRASH_AT_ENV, label))
        .into_iter()
        .collect();
    p.run_env(&["--worker-id", WORKER], &crash)
}

fn claims(p: &Project) -> Vec<Value> {
    std::fs::read_dir(p.issues.join(".claims"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .map(|e| {
                    serde_json::from_slice(&std::fs::read(e.path()).expect("claim"))
                        .expect("claim json")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `key` of every journal record of `kind` (event or effect names), in order.
fn journaled(p: &Project, kind: &str, key: &str) -> Vec<String> {
    p.journal()
        .iter()
        .filter(|l| l["kind"] == kind)
        .filter_map(|l| l[kind][key].as_str().map(str::to_string))
        .collect()
}

/// The journal around the restart: the last request before it, the first request after it
/// and that request's answer (e.g. `renewClaim {"secs":1}` twice, then `claimRenewed`).
fn around_restart(p: &Project) -> (String, String, String) {
    let lines = p.journal();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["kind"] == "event" && l["event"]["event"] == "start")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 2, "one start, one restart");
    let restart = starts[1];
    let request = |l: &Value| (l["kind"] == "effect").then(|| l["effect"].to_string());
    let before = lines[..restart]
        .iter()
        .rev()
        .find_map(request)
        .expect("a request before the kill");
    let (at, after) = lines[restart..]
        .iter()
        .enumerate()
        .find_map(|(i, l)| request(l).map(|r| (restart + i, r)))
        .expect("a request after the restart");
    let answer = lines[at..]
        .iter()
        .find(|l| l["kind"] == "event")
        .map(|l| l["event"]["event"].as_str().unwrap_or_default().to_string())
        .expect("an answer");
    (before, after, answer)
}

/// Agent calls per step, e.g. `verify` → 2 (the rate limit and the attempt after the wait).
fn calls(p: &Project) -> Vec<(u32, String)> {
    let mut calls = e2e::invocations_in(&p.agent_log);
    calls.sort();
    calls
}

/// The run without a kill, for comparison.
fn reference() -> Vec<(u32, String)> {
    let p = project();
    let out = run(&p, None);
    assert_eq!(code(&out), 0, "{}", text(&out));
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{}", text(&out));
    calls(&p)
}

/// Kills the runner at `label`, restarts it with the same worker id, and checks that the
/// issue was finished exactly once. Returns the project and the journal's effect names.
fn killed_at(label: &str) -> (Project, Vec<String>) {
    let p = project();
    let killed = run(&p, Some(label));
    assert_eq!(
        killed.status.signal(),
        Some(libc::SIGKILL),
        "the runner never reached {label:?}: {}",
        text(&killed)
    );
    assert!(text(&killed).contains(&format!("({label}): killing the runner")));
    // The claim was written and is this worker's; the machine never heard of it.
    let left = claims(&p);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["worker"], WORKER, "{left:?}");
    assert_eq!(left[0]["issue"], 1, "{left:?}");
    assert!(e2e::merged_issues(&p.origin).is_empty());

    let out = run(&p, None);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{label}: {all}");
    assert!(
        !all.contains("HALTED") && !all.contains("FAILURE"),
        "{label}: {all}"
    );
    assert!(!all.contains("is claimed by worker"), "{label}: {all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "merged once: {all}");
    assert_eq!(p.issue(1)["state"], "closed");
    assert_eq!(calls(&p), reference(), "{label}: the agent's calls");
    assert!(claims(&p).is_empty(), "{label}: the claim was released");

    p.replays_exactly();
    let events = journaled(&p, "event", "event");
    for foreign in ["claimHeld", "claimLost", "trackerWriteFailed"] {
        assert!(
            !events.iter().any(|e| e == foreign),
            "{label}: {foreign}: {events:?}"
        );
    }
    assert!(
        events.iter().any(|e| e == "claimTaken"),
        "{label}: {events:?}"
    );
    let effects = journaled(&p, "effect", "effect");
    let merges = effects.iter().filter(|e| *e == "recordMerged").count();
    assert_eq!(merges, 1, "{label}: {effects:?}");
    (p, effects)
}

#[test]
fn a_runner_killed_after_writing_its_claim_takes_it_as_its_own() {
    let (p, effects) = killed_at("claims: claim written");
    // The selection cut short is made again, and the claim this worker wrote is its own.
    let (before, after, answer) = around_restart(&p);
    assert!(before.contains("claimIssue"), "{before}");
    assert!(after.contains("selectIssue"), "{after}");
    assert_eq!(answer, "issueSelected");
    let asked = effects.iter().filter(|e| *e == "claimIssue").count();
    assert_eq!(asked, 2, "{effects:?}");
    let taken = journaled(&p, "event", "event");
    assert_eq!(
        taken.iter().filter(|e| *e == "claimTaken").count(),
        1,
        "{taken:?}"
    );
}

#[test]
fn a_runner_killed_after_renewing_its_claim_finishes_the_issue_once() {
    let (p, effects) = killed_at("claims: renewal written");
    // The renewal cut short (before a wait: the lease plus the wait) is issued again and
    // answered.
    let (before, after, answer) = around_restart(&p);
    assert!(before.contains("renewClaim"), "{before}");
    assert_eq!(before, after);
    assert_eq!(answer, "claimRenewed");
    assert!(effects.iter().any(|e| e == "wait"), "{effects:?}");
}

/// One issue, every step an agent's and none failing: no wait anywhere.
fn quiet_project() -> Project {
    Project::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}))
}

/// The journal's `runStep` effects as `(step, attempt)`, and every record that names a
/// KILLED failure (a failed event, or the machine's notice of the attempt it counted).
fn runs_and_kills(p: &Project) -> (Vec<(String, u64)>, Vec<String>) {
    let mut runs = Vec::new();
    let mut kills = Vec::new();
    for l in p.journal() {
        let effect = &l["effect"];
        if l["kind"] == "effect" && effect["effect"] == "runStep" {
            let step = effect["step"].as_str().unwrap_or_default().to_string();
            runs.push((step, effect["attempt"].as_u64().unwrap_or_default()));
        }
        let line = l.to_string();
        if line.contains(r#""class":"KILLED""#) {
            kills.push(line);
        }
    }
    (runs, kills)
}

/// Runs until the failpoint `label` kills the runner; the journal's effect names so far.
fn killed_by(p: &Project, label: &str) -> Vec<String> {
    let killed = run(p, Some(label));
    let said = text(&killed);
    assert_eq!(
        killed.status.signal(),
        Some(libc::SIGKILL),
        "{label}: {said}"
    );
    journaled(p, "effect", "effect")
}

/// The runner dies with a step's run held back for the claim's renewal, twice: first right
/// after the batch asking for the renewal before startCycle's first run was journaled, then,
/// restarted, right after it wrote that renewal (a restarted runner knows nothing of its
/// lease, so its first renewal is always written). The run never started, so it is no
/// attempt: no KILLED failure, the agent runs startCycle once, as attempt 1, and the
/// journal replays exactly.
///
/// Killed at its first renewal written, a runner that was never restarted would die before a
/// wait, not a step: a renewal before a step is written only once less than half the lease
/// is left, and the lease must outlast every step's timeoutMin, so no test lease is short
/// enough for that to happen on a schedule. The restart is what makes the write certain.
#[test]
fn a_runner_killed_while_renewing_before_a_step_runs_that_step_once_as_the_same_attempt() {
    let reference = {
        let p = quiet_project();
        let out = run(&p, None);
        assert_eq!(code(&out), 0, "{}", text(&out));
        calls(&p)
    };
    let p = quiet_project();
    let asked = killed_by(&p, "PreconditionsOk");
    assert_eq!(
        asked.last().map(String::as_str),
        Some("renewClaim"),
        "{asked:?}"
    );
    assert!(calls(&p).is_empty(), "no agent ran yet: {:?}", calls(&p));

    let asked = killed_by(&p, "claims: renewal written");
    let (runs, kills) = runs_and_kills(&p);
    assert!(kills.is_empty(), "a restart counted an attempt: {kills:?}");
    assert!(runs.is_empty(), "{runs:?}");
    assert_eq!(
        asked.iter().rev().take(2).collect::<Vec<_>>(),
        ["renewClaim", "renewClaim"],
        "the restart asked for the renewal again, nothing else: {asked:?}"
    );
    assert!(calls(&p).is_empty(), "no agent ran yet: {:?}", calls(&p));

    let out = run(&p, None);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(!all.contains("KILLED"), "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "merged once: {all}");
    assert_eq!(calls(&p), reference, "each step's agent ran once");
    let (runs, kills) = runs_and_kills(&p);
    assert!(kills.is_empty(), "{kills:?}");
    let start = runs.iter().filter(|(step, _)| step == "startCycle");
    assert_eq!(
        start.collect::<Vec<_>>(),
        [&("startCycle".to_string(), 1)],
        "{runs:?}"
    );
    assert!(claims(&p).is_empty(), "the claim was released");
    p.replays_exactly();
}
