//! A restart while the runner waits for a person's decision (manual approval), through the
//! real binary: the runner is killed with SIGKILL during the wait. A decision written while
//! no runner was alive is picked up by the restarted runner, which goes on with it; without a
//! decision the restarted runner waits again (a new wait, docs/counters-and-bounds.md) and
//! halts `HALTED: decision timed out` when that wait is over. Both journals replay exactly.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// The decision time: 0.1 minute, so the wait ends after pauses of 2 and 4 s.
const DECISION_MINUTES: f64 = 0.1;

/// verify fails three times: its retries are spent and a person is asked.
fn project() -> Project {
    let p = Project::new(
        &[(1, "Add a greeting", "Say hello.")],
        json!({"steps": {"verify": ["fail-test-1", "fail-test-2", "fail-test-3"]}}),
        json!({}),
    );
    p.set_config(json!({
        "approval": "manual",
        "decisionTimeoutMinutes": DECISION_MINUTES,
        "maxConsecutiveFailures": {"verify": 0},
    }));
    p
}

fn decision_file(p: &Project) -> PathBuf {
    p.project.join(".git/sdlc-runner/decision.json")
}

/// Waits until the runner asked for a decision, then kills it with SIGKILL mid-wait.
fn kill_while_waiting(p: &Project, mut runner: Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !decision_file(p).exists() {
        assert!(
            Instant::now() < deadline,
            "no decision asked for: {:?}",
            p.invocations()
        );
        assert!(
            runner.try_wait().expect("try_wait").is_none(),
            "the runner ended before asking: {}",
            text(&runner.wait_with_output().expect("output"))
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    runner.kill().expect("kill -9");
    let _ = runner.wait();
    let request: Value =
        serde_json::from_slice(&std::fs::read(decision_file(p)).expect("request")).expect("json");
    assert_eq!(request["answer"], Value::Null, "{request}");
    assert_eq!(request["step"], "verify", "{request}");
}

fn effects(lines: &[Value], name: &str) -> usize {
    lines
        .iter()
        .filter(|l| l["kind"] == "effect" && l["effect"]["effect"] == name)
        .count()
}

#[test]
fn a_decision_written_while_the_runner_was_dead_is_picked_up_after_the_restart() {
    let p = project();
    kill_while_waiting(&p, p.spawn(&[]));
    assert_eq!(p.count("1 verify"), 3);
    // The person fixed the cause and answers while no runner is alive.
    p.set_script(json!({}));
    let answer = p.decide("retry");
    assert_eq!(code(&answer), 0, "{}", text(&answer));

    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert!(!all.contains("decision timed out"), "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    assert_eq!(p.issue(1)["state"], "closed");
    // The granted attempt ran once, as attempt 3 again (retry gives the spent one back).
    assert_eq!(p.count("1 verify"), 4, "{:?}", p.invocations());
    assert_eq!(p.count("1 verify 3 ok"), 1, "{:?}", p.invocations());
    assert!(!decision_file(&p).exists(), "the answered request is gone");
    let lines = p.replays_exactly();
    assert!(
        lines.iter().any(|l| l["kind"] == "event"
            && l["event"]["event"] == "decided"
            && l["event"]["option"] == "retry"),
        "the decision is journaled"
    );
}

#[test]
fn a_restart_without_a_decision_waits_again_and_halts_on_time() {
    let p = project();
    kill_while_waiting(&p, p.spawn(&[]));
    let started = Instant::now();
    let mut runner = p.spawn(&[]);
    // Halfway through the new wait it is still waiting, with the question still asked.
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        runner.try_wait().expect("try_wait").is_none(),
        "the restarted runner stopped waiting: {}",
        text(&runner.wait_with_output().expect("output"))
    );
    assert!(decision_file(&p).exists(), "the question is still asked");
    let out = e2e::wait_output(runner, Duration::from_secs(60));
    let waited = started.elapsed();
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("HALTED: decision timed out"), "{all}");
    // A new wait of the decision time (pauses of 2 and 4 s), not the old one's remainder, and
    // not much more.
    let limit = Duration::from_secs_f64(DECISION_MINUTES * 60.0);
    assert!(
        waited >= limit && waited < limit + Duration::from_secs(20),
        "halted after {waited:?}: {all}"
    );
    assert_eq!(p.count("1 verify"), 3, "no attempt without a decision");
    assert!(e2e::merged_issues(&p.origin).is_empty());
    assert!(!decision_file(&p).exists(), "the question is withdrawn");
    let lines = p.replays_exactly();
    assert_eq!(
        effects(&lines, "askDecision"),
        2,
        "asked again after the restart"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["kind"] == "sessionEnd" && l.to_string().contains("decisionTimeout")),
        "the halt is journaled"
    );
}
