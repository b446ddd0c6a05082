//! Several runners on one tracker that keeps claims as notes (GitLab, Linear): the scenarios
//! tests/it/claims.rs runs on the local tracker, for a project whose config already names the
//! fake tracker and forge. Each runner is its own process with its own clone and worker id.

#![allow(dead_code)]

use super::{invocations_in, wait_output, Project};
use serde_json::{json, Value};
use std::process::Output;
use std::time::Duration;

/// Builtin steps that get most of the lease, agent steps that get 0.6 s: the lease outlasts
/// every step, as `run --worker-id` requires.
pub fn lease(minutes: f64) -> Value {
    let builtin = minutes * 0.8;
    json!({"claims": {"leaseMinutes": minutes}, "steps": {
        "startCycle": {"run": "builtin", "timeoutMin": builtin},
        "startIssue": {"timeoutMin": 0.01}, "writeSpecs": {"timeoutMin": 0.01},
        "implement": {"timeoutMin": 0.01}, "simplify": {"timeoutMin": 0.01},
        "verify": {"timeoutMin": 0.01}, "commitPush": {"run": "builtin", "timeoutMin": builtin},
        "createPR": {"run": "builtin", "timeoutMin": builtin},
        "monitorCI": {"run": "builtin", "timeoutMin": builtin},
        "merge": {"run": "builtin", "timeoutMin": builtin},
    }})
}

fn all_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    )
}

/// Two runners at once over `issues` open issues: both exit 0, and every issue's agent calls
/// are in one runner's log only. Returns both runners' output.
pub fn two_runners_never_work_one_issue(p: &Project, issues: u32) -> String {
    p.set_script(json!({"steps": {"implement": ["busy:300"]}}));
    let extra = lease(5.0);
    let (runners, outs) = p.run_side_by_side(&["a", "b"], &extra, "w");
    let all: String = outs.iter().map(all_text).collect();
    for o in &outs {
        assert_eq!(o.status.code(), Some(0), "{}", all_text(o));
    }
    let per_runner: Vec<Vec<(u32, String)>> = runners
        .iter()
        .map(|r| invocations_in(&r.agent_log))
        .collect();
    for n in 1..=issues {
        let workers = per_runner
            .iter()
            .filter(|log| log.iter().any(|(i, _)| *i == n))
            .count();
        assert_eq!(workers, 1, "issue {n} worked by {workers} runners: {all}");
    }
    all
}

/// Runner a is killed inside verify of the only issue; runner b sees its live claim and
/// finds nothing to do, then takes the issue over once the 3 s lease has run out. Returns
/// runner b's last output.
pub fn an_expired_claim_is_taken_over(p: &Project) -> String {
    p.set_script(json!({"steps": {"verify": ["hang"]}}));
    let extra = lease(0.05);
    let first = p.add_runner("clone-a", &extra);
    let second = p.add_runner("clone-b", &extra);
    let mut a = p.spawn_runner(&first, "wa");
    super::kill_at_step(&mut a, &first.agent_log, "verify");
    p.set_script(json!({}));
    let early = wait_output(p.spawn_runner(&second, "wb"), Duration::from_secs(60));
    let text = all_text(&early);
    assert_eq!(early.status.code(), Some(0), "{text}");
    assert!(text.contains("claimed by other runners"), "{text}");
    assert!(
        invocations_in(&second.agent_log).is_empty(),
        "b worked a's issue while a's claim was live: {text}"
    );
    std::thread::sleep(Duration::from_secs(4));
    let late = wait_output(p.spawn_runner(&second, "wb"), Duration::from_secs(120));
    let text = all_text(&late);
    assert_eq!(late.status.code(), Some(0), "{text}");
    assert!(text.contains("as worker wb"), "{text}");
    text
}
