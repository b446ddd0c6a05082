//! Each agent kind end to end: the real binary drives the scripted fake agent speaking Codex's
//! or Gemini's stream (`fake-agent --kind codex|gemini`) through the whole lifecycle, waits out
//! a rate limit, halts on an auth failure after one call, stops a tool loop at `maxTurns`, and
//! runs a config that puts implement on Codex and the other steps on Claude.

use crate::e2e;

use e2e::{code, text, Project, BIN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The config's `agent` object for the fake agent speaking `kind`.
fn agent(p: &Project, kind: &str) -> Value {
    json!({"kind": kind, "command": BIN,
           "args": ["fake-agent", "--kind", kind, "--script", p.script.to_str().expect("utf8")]})
}

fn project(kind: &str, script: Value, extra: Value) -> Project {
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], script, json!({}));
    let mut config = json!({"agent": agent(&p, kind), "steps": e2e::builtin_steps()});
    if let (Some(base), Some(more)) = (config.as_object_mut(), extra.as_object()) {
        for (k, v) in more {
            base.insert(k.clone(), v.clone());
        }
    }
    p.set_config(config);
    p
}

/// Every archived attempt log of `step`, concatenated.
fn attempt_logs(p: &Project, step: &str) -> String {
    let mut all = String::new();
    let mut dirs = vec![p.root.join("logs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().contains(step) {
                all.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    all
}

#[test]
fn every_kind_runs_the_whole_lifecycle() {
    for kind in ["codex", "gemini"] {
        let p = project(kind, json!({}), json!({}));
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "{kind}: {all}");
        assert_eq!(e2e::merged_issues(&p.origin), [1], "{kind}: {all}");
        assert_eq!(p.count("1 "), 5, "{kind}: {:?}", p.invocations());
        let log = attempt_logs(&p, "implement");
        let marker = if kind == "codex" {
            "\"turn.completed\""
        } else {
            "\"type\":\"result\""
        };
        assert!(log.contains(marker), "{kind} spoke its own stream: {log}");
    }
}

#[test]
fn a_rate_limit_is_waited_out_without_spending_an_attempt() {
    for kind in ["codex", "gemini"] {
        let p = project(
            kind,
            json!({"steps": {"implement": ["rate-limit-once"]}}),
            json!({}),
        );
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "{kind}: {all}");
        assert!(
            all.contains("implement: failed: RATE_LIMIT"),
            "{kind}: {all}"
        );
        let calls = p.invocations();
        let implement: Vec<&String> = calls
            .iter()
            .filter(|l| l.starts_with("1 implement "))
            .collect();
        assert_eq!(implement.len(), 2, "{kind}: {calls:?}");
        assert!(
            implement.iter().all(|l| l.starts_with("1 implement 1 ")),
            "the wait spent no attempt: {implement:?}"
        );
        assert_eq!(e2e::merged_issues(&p.origin), [1], "{kind}: {all}");
    }
}

#[test]
fn an_auth_failure_halts_after_one_call() {
    for (kind, outcome) in [
        ("codex", "auth"),
        ("gemini", "auth"),
        ("gemini", "not-logged-in"),
    ] {
        let p = project(kind, json!({"steps": {"*": [outcome]}}), json!({}));
        let out = p.run(&[]);
        let all = text(&out);
        assert_eq!(code(&out), 1, "{kind} {outcome}: {all}");
        assert_eq!(
            p.invocations().len(),
            1,
            "{kind} {outcome}: {:?}",
            p.invocations()
        );
        assert!(
            all.contains("ENVIRONMENT FAILURE: AUTH"),
            "{kind} {outcome}: {all}"
        );
        assert_eq!(p.issue(1)["escalated"], false);
    }
}

#[test]
fn codex_reconnecting_for_ever_is_stopped_after_one_call_not_at_the_idle_timeout() {
    let p = project(
        "codex",
        json!({"steps": {"*": ["not-logged-in"]}}),
        json!({}),
    );
    let started = Instant::now();
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert_eq!(p.invocations().len(), 1, "{:?}", p.invocations());
    assert!(all.contains("ENVIRONMENT FAILURE: AUTH"), "{all}");
    assert!(all.contains("kept reconnecting"), "{all}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_tool_loop_is_stopped_at_max_turns_whatever_the_cli_does() {
    for kind in ["codex", "gemini"] {
        let p = project(
            kind,
            json!({"steps": {"implement": ["tool-loop"]}}),
            json!({"maxRetriesPerStep": 2,
                   "steps": {"implement": {"maxTurns": 4}, "startCycle": {"run": "builtin"},
                             "commitPush": {"run": "builtin"}, "createPR": {"run": "builtin"},
                             "monitorCI": {"run": "builtin"}, "merge": {"run": "builtin"}}}),
        );
        let started = Instant::now();
        let out = p.run(&[]);
        let all = text(&out);
        assert!(
            all.contains("implement: failed: MAX_TURNS"),
            "{kind}: {all}"
        );
        assert!(
            all.contains("after 5 tool calls (maxTurns 4)"),
            "{kind}: {all}"
        );
        assert_eq!(p.count("1 implement"), 2, "{kind}: {:?}", p.invocations());
        assert_eq!(p.issue(1)["escalated"], true, "{kind}: {all}");
        // Stopped by the count, long before the ten-minute step timeout.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{kind}: {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn implement_on_codex_and_verify_on_claude() {
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let mut steps = e2e::builtin_steps();
    steps["implement"] = json!({"agent": agent(&p, "codex"), "model": "gpt-5"});
    p.set_config(json!({"steps": steps}));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    assert_eq!(e2e::merged_issues(&p.origin), [1], "{all}");
    let implement = attempt_logs(&p, "implement");
    assert!(
        implement.contains("\"thread.started\""),
        "implement ran on codex: {implement}"
    );
    assert!(!implement.contains("\"subtype\":\"init\""), "{implement}");
    let verify = attempt_logs(&p, "verify");
    assert!(
        verify.contains("\"subtype\":\"init\""),
        "verify ran on claude: {verify}"
    );
    assert!(!verify.contains("thread.started"), "{verify}");
    // The codex step got its own model, the claude steps the default one.
    let prompts = std::fs::read_to_string(p.root.join("prompts.log")).unwrap_or_default();
    assert!(prompts.contains("== 1 implement 1"), "{prompts}");
}

#[test]
fn bounds_do_not_depend_on_the_agent_kind() {
    let mut outputs = Vec::new();
    for kind in ["claude", "codex", "gemini"] {
        let p = project(kind, json!({}), json!({"maxRetriesPerStep": 4}));
        let out = p
            .command(&["bounds", "--config", p.config.to_str().expect("utf8")])
            .output()
            .expect("bounds");
        assert_eq!(code(&out), 0, "{kind}: {}", text(&out));
        outputs.push(String::from_utf8_lossy(&out.stdout).to_string());
    }
    assert!(!outputs[0].is_empty());
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

#[test]
fn doctor_checks_each_kinds_login_and_settings() {
    let p = project("codex", json!({}), json!({}));
    let out = p
        .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
        .output()
        .expect("doctor");
    let all = text(&out);
    assert!(all.contains("codex login: Logged in"), "{all}");

    // Gemini with no key and no settings would exit 41 at once: doctor fails it.
    let home = p.root.join("gemini-home");
    std::fs::create_dir_all(home.join(".gemini")).expect("home");
    let mut gemini = agent(&p, "gemini");
    gemini["env"] = json!({"HOME": home.to_str().expect("utf8")});
    p.set_config(json!({"agent": gemini.clone(), "steps": e2e::builtin_steps()}));
    let doctor = |p: &Project| {
        let out = p
            .command(&["doctor", "--config", p.config.to_str().expect("utf8")])
            .env_remove("GEMINI_API_KEY")
            .env_remove("GOOGLE_API_KEY")
            .env_remove("GOOGLE_GENAI_USE_VERTEXAI")
            .env_remove("GOOGLE_GENAI_USE_GCA")
            .env_remove("GOOGLE_GEMINI_BASE_URL")
            .output()
            .expect("doctor");
        (code(&out), text(&out))
    };
    let (rc, all) = doctor(&p);
    assert_eq!(rc, 2, "{all}");
    assert!(all.contains("gemini has no auth method"), "{all}");
    assert!(all.contains("general.maxAttempts"), "{all}");
    // Settings that select an auth type, turn updates off and keep retries short: all ok.
    std::fs::write(
        home.join(".gemini/settings.json"),
        r#"{"general": {"enableAutoUpdate": false, "maxAttempts": 2}, "security": {"auth": {"selectedType": "gemini-api-key"}}}"#,
    )
    .expect("settings");
    let (_, all) = doctor(&p);
    assert!(all.contains("gemini auth: gemini-api-key"), "{all}");
    assert!(!all.contains("general.maxAttempts"), "{all}");
    assert!(!all.contains("checks for updates"), "{all}");
}

#[test]
fn token_costs_are_priced_and_held_to_the_budget() {
    let p = project("codex", json!({}), json!({}));
    let mut codex = agent(&p, "codex");
    // The fake reports 1000 input and 50 output tokens per call: $0.10 at this price.
    codex["pricing"] = json!({"gpt-priced": {"input": 100, "cachedInput": 0, "output": 0}});
    p.set_config(json!({"agent": codex, "model": "gpt-priced", "budget": {"perIssueUsd": 0.25}}));
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("issue budget"), "{all}");
    // $0.10 per attempt: after two ($0.20) the third would exceed $0.25.
    assert_eq!(p.count("1 "), 2, "{:?}", p.invocations());
}

/// The `step N <key>: …` line of a dry run's output for `key`.
fn dry_run_line<'a>(all: &'a str, key: &str) -> &'a str {
    let marker = format!(" {key}: ");
    all.lines()
        .find(|l| l.starts_with("step ") && l.contains(&marker))
        .unwrap_or_else(|| panic!("no dry-run line for {key}: {all}"))
}

#[test]
fn the_dry_run_prints_the_invocation_of_the_configured_cli() {
    // Options only each CLI takes: what the dry run shows is what that CLI would get.
    let own = [
        (
            "claude",
            "--dangerously-skip-permissions --verbose --output-format stream-json",
        ),
        (
            "codex",
            "exec --json --dangerously-bypass-approvals-and-sandbox",
        ),
        ("gemini", "--output-format stream-json --approval-mode yolo"),
    ];
    for (kind, flags) in own {
        let p = project(kind, json!({}), json!({}));
        let out = p.run(&["--dry-run"]);
        let all = text(&out);
        assert_eq!(code(&out), 0, "{kind}: {all}");
        for step in ["writeSpecs", "implement", "verify"] {
            let line = dry_run_line(&all, step);
            assert!(
                line.contains(&format!(": {BIN} fake-agent --kind {kind} ")),
                "{kind}: {line}"
            );
            assert!(line.contains(flags), "{kind}: {line}");
            for (other, theirs) in own.iter().filter(|(k, _)| *k != kind) {
                assert!(
                    !line.contains(theirs),
                    "{kind} shows {other}'s options: {line}"
                );
            }
        }
        assert!(
            p.invocations().is_empty(),
            "{kind}: a dry run calls no agent"
        );
    }

    // A step on another CLI shows that CLI's own command, not the run's agent.
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let gemini = p.root.join("gemini-cli");
    std::fs::write(&gemini, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&gemini, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let gemini = gemini.to_str().expect("utf8");
    let mut steps = e2e::builtin_steps();
    steps["implement"] = json!({"agent": {"kind": "gemini", "command": gemini}});
    p.set_config(json!({"steps": steps}));
    let out = p.run(&["--dry-run"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let implement = dry_run_line(&all, "implement");
    assert!(
        implement.contains(&format!(": {gemini} -p "))
            && implement.contains("--approval-mode yolo"),
        "{implement}"
    );
    let verify = dry_run_line(&all, "verify");
    assert!(verify.contains(&format!(": {BIN} fake-agent ")), "{verify}");
    assert!(
        verify.contains("--dangerously-skip-permissions"),
        "{verify}"
    );
}

/// Every kind's CLI saying it cannot reach its model (Claude's `connection_failed`, Codex
/// reconnecting from its first request, Gemini's `fetch failed`), with one issue open and with
/// two: network waits (no attempt spent), bounded by `maxNetworkWaits` like a runner call's
/// (not by `maxRateLimitWaits`, here 0), then `ENVIRONMENT FAILURE: NETWORK`; no issue is
/// escalated, and the second issue is never worked (the outage is not the first issue's).
#[test]
fn a_model_out_of_reach_is_waited_out_then_halts_as_the_networks_and_blames_no_issue() {
    let issues: &[&[(u32, &str, &str)]] = &[
        &[(1, "First", "One.")],
        &[(1, "First", "One."), (2, "Second", "Two.")],
    ];
    for kind in ["claude", "codex", "gemini"] {
        for open in issues {
            let p = Project::new(open, json!({"steps": {"*": ["unreachable"]}}), json!({}));
            p.set_config(json!({
                "agent": agent(&p, kind), "steps": e2e::builtin_steps(),
                "backoff": {"initialSeconds": 1, "maxSeconds": 1}, "maxRateLimitWaits": 0,
                "maxNetworkWaits": 2,
            }));
            let out = p.run(&[]);
            let all = text(&out);
            let case = format!("{kind}, {} issue(s)", open.len());
            assert_eq!(code(&out), 1, "{case}: {all}");
            assert!(
                all.contains("ENVIRONMENT FAILURE: NETWORK"),
                "{case}: {all}"
            );
            assert!(!all.contains("UNKNOWN"), "{case}: {all}");
            assert!(
                all.contains("network: waiting 1 s before calling again (network wait 2 in a row)"),
                "the network's waits: {case}: {all}"
            );
            let calls = p.invocations();
            assert_eq!(
                calls.len(),
                3,
                "two waits, then the halt: {case}: {calls:?}"
            );
            assert!(
                calls.iter().all(|c| c.starts_with("1 ")),
                "{case}: {calls:?}"
            );
            for (n, _, _) in open.iter() {
                assert_eq!(p.issue(*n)["escalated"], false, "{case}: issue {n}: {all}");
            }
            // `status` shows the streak that halted the run against its limit.
            let config = p.config.to_str().expect("utf8");
            let status = p
                .command(&["status", "--json", "--config", config])
                .output()
                .expect("status --json");
            let doc: serde_json::Value = serde_json::from_slice(&status.stdout).expect("JSON");
            let counters = &doc["counters"];
            assert_eq!(
                (
                    &counters["stepNetworkWaitStreak"],
                    &counters["maxNetworkWaits"]
                ),
                (&json!(2), &json!(2)),
                "{case}: {doc}"
            );
        }
    }
}
