//! Money bounded like attempts, with the real binary, real git and the scripted fake agent:
//! an agent in an expensive tool loop is stopped within one message of the money its attempt
//! was given (`BUDGET`), Claude is handed `--max-budget-usd` with what is left, and the
//! CLI's own budget stop is `BUDGET` too.

use crate::e2e;

use e2e::{code, text, Project};
use serde_json::{json, Value};
use std::path::Path;

/// $4 per million input tokens: each of the fake's expensive messages (200 000 input tokens,
/// one output token at $20 per million) costs $0.80002.
const MESSAGE_USD: f64 = 0.80002;

fn spending(script: Value, budget: Value) -> Project {
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], script, json!({}));
    let agent = json!({
        "command": e2e::BIN,
        "args": ["fake-agent", "--script", p.script.to_str().unwrap()],
        "pricing": {"claude-fake": {"input": 4, "cachedInput": 0.4, "output": 20}},
    });
    p.set_config(json!({"model": "claude-fake", "agent": agent, "budget": budget}));
    p
}

/// The implement attempts' failures the journal recorded: (class, cost in dollars).
fn implement_failures(p: &Project) -> Vec<(String, f64)> {
    p.journal()
        .iter()
        .filter_map(|r| {
            let f = r.get("event")?;
            (f["event"] == "stepFailed" && f["step"] == "implement").then(|| {
                (
                    f["class"].as_str().unwrap_or("").to_string(),
                    f["usage"]["cost_micros"].as_u64().unwrap_or(0) as f64 / 1e6,
                )
            })
        })
        .collect()
}

/// Every file under `dir`, read as text, concatenated: the attempts' logs.
fn logs(dir: &Path) -> String {
    let mut all = String::new();
    for entry in e2e::files_under(dir) {
        all.push_str(&String::from_utf8_lossy(
            &std::fs::read(entry).unwrap_or_default(),
        ));
    }
    all
}

#[test]
fn a_tool_loop_is_stopped_within_one_message_of_the_issue_budget_and_escalates() {
    // Every other step costs nothing; implement loops, one $0.80 request every 0.4 s.
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:400"]}}),
        json!({"perIssueUsd": 3}),
    );
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("issue budget"), "{all}");
    let failures = implement_failures(&p);
    assert_eq!(
        failures.len(),
        1,
        "one attempt, then the budget: {failures:?}\n{all}"
    );
    let (class, cost) = &failures[0];
    assert_eq!(class, "BUDGET", "{all}");
    assert!(
        *cost >= 3.0 && *cost < 3.0 + MESSAGE_USD,
        "stopped within one message of $3: ${cost}\n{all}"
    );
    assert_eq!(p.issue(1)["escalated"], true);
    // Claude's own cap was passed too, with the whole issue budget left.
    let logs = logs(&p.root.join("logs"));
    assert!(
        logs.contains("--max-budget-usd 3\n"),
        "{:?}\n{logs}",
        e2e::files_under(&p.root.join("logs"))
    );
}

#[test]
fn a_tool_loop_past_the_session_budget_halts_nobody_blamed() {
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:200"]}}),
        json!({"perSessionUsd": 2, "perIssueUsd": 10}),
    );
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("BUDGET EXHAUSTED: session budget"), "{all}");
    let failures = implement_failures(&p);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].1 < 2.0 + MESSAGE_USD, "{failures:?}");
    assert_eq!(p.issue(1)["escalated"], false);
}

/// A slow disk does not let a call spend past its cap: every journal fsync takes 300 ms (the
/// agent spends $0.80 every 100 ms), and each call still stops at its first message over $1.
/// The running cost's fsync is not on the path of the reader that meters the call.
#[test]
fn a_slow_disk_lets_no_call_spend_past_its_cap() {
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:100"]}}),
        json!({"perCallUsd": 1, "perIssueUsd": 100}),
    );
    let out = p.run_env(&["--issue", "1"], &[("SDLC_RUNNER_SLOW_FSYNC_MS", "300")]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    let failures = implement_failures(&p);
    assert_eq!(failures.len(), 2, "{failures:?}\n{all}");
    for (class, cost) in &failures {
        assert_eq!(class, "BUDGET");
        assert!(*cost >= 1.0 && *cost < 1.0 + MESSAGE_USD, "{failures:?}");
    }
}

#[test]
fn the_per_call_cap_stops_each_call_and_the_attempts_stay_bounded() {
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:100"]}}),
        json!({"perCallUsd": 1, "perIssueUsd": 100}),
    );
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    let failures = implement_failures(&p);
    // Each attempt stopped at its $1 (2 messages of $0.80); the same stop twice in a row is
    // the same failure repeated (maxConsecutiveSameFailure, 2): the issue escalates.
    assert_eq!(failures.len(), 2, "{failures:?}\n{all}");
    assert!(all.contains("same failure repeated"), "{all}");
    for (class, cost) in &failures {
        assert_eq!(class, "BUDGET");
        assert!(*cost >= 1.0 && *cost < 1.0 + MESSAGE_USD, "{failures:?}");
    }
    assert!(logs(&p.root.join("logs")).contains("--max-budget-usd 1\n"));
    let status = p
        .command(&["status", "--json", "--config", p.config.to_str().unwrap()])
        .output()
        .expect("status");
    let doc: Value =
        serde_json::from_slice(&status.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&status)));
    let budgets = &doc["budgets"];
    assert_eq!(budgets["perCallUsd"], 1.0, "{doc}");
    assert_eq!(budgets["callLeftUsd"], 1.0, "{doc}");
    let spent = budgets["sessionUsd"].as_f64().unwrap_or(0.0);
    assert!((spent - 3.20008).abs() < 1e-6, "{doc}");
}

#[test]
fn claudes_own_budget_stop_is_budget_and_gets_what_is_left() {
    // The real CLI's output when its --max-budget-usd is reached ($0.80 spent); the fake
    // refuses to replay it unless the runner passed the flag.
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["max-budget", "ok"]}}),
        json!({"perIssueUsd": 5}),
    );
    let out = p.run(&["--issue", "1"]);
    let all = text(&out);
    assert_eq!(code(&out), 0, "{all}");
    let failures = implement_failures(&p);
    assert_eq!(failures.len(), 1, "{failures:?}\n{all}");
    assert_eq!(failures[0].0, "BUDGET");
    assert!((failures[0].1 - 0.80072).abs() < 1e-6, "{failures:?}");
    let logs = logs(&p.root.join("logs"));
    assert!(logs.contains("--max-budget-usd 5\n"), "{logs}");
}

#[test]
fn doctor_says_a_cli_that_streams_no_usage_is_capped_by_turns_and_timeout() {
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let codex = json!({
        "kind": "codex",
        "command": e2e::BIN,
        "args": ["fake-agent", "--kind", "codex", "--script", p.script.to_str().unwrap()],
    });
    p.set_config(json!({
        "agent": codex,
        "model": "gpt-5",
        "budget": {"perIssueUsd": 3},
        "steps": {"implement": {"maxTurns": 40}},
    }));
    let out = p
        .command(&["doctor", "--config", p.config.to_str().unwrap()])
        .output()
        .expect("doctor");
    let all = text(&out);
    assert!(
        all.contains("codex reports its tokens only when a call ends")
            && all.contains("implement maxTurns 40"),
        "{all}"
    );
    // Claude streams each request's usage: no such warning.
    p.set_config(json!({"budget": {"perIssueUsd": 3}}));
    let out = p
        .command(&["doctor", "--config", p.config.to_str().unwrap()])
        .output()
        .expect("doctor");
    assert!(
        !text(&out).contains("only when a call ends"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("has no price"), "{}", text(&out));
    // A Claude model without a price would be metered at $0 while it works: refused up
    // front, naming the step and the model, by `config check` and by `run`.
    p.set_config(json!({"model": "claude-fake", "budget": {"perIssueUsd": 3}}));
    for args in [&["config", "check"][..], &["run"][..]] {
        let mut argv = args.to_vec();
        argv.extend(["--config", p.config.to_str().unwrap()]);
        let out = p.command(&argv).output().expect("runs");
        assert_eq!(code(&out), 2, "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("model \"claude-fake\" (step implement, claude) has no price"),
            "{args:?}: {}",
            text(&out)
        );
    }
}

#[test]
fn bounds_prints_the_most_the_run_can_spend() {
    let p = Project::new(&[(1, "Add a greeting", "Say hello.")], json!({}), json!({}));
    let bounds = |p: &Project| {
        let out = p
            .command(&["bounds", "--config", p.config.to_str().unwrap()])
            .output()
            .expect("bounds");
        assert_eq!(code(&out), 0, "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(bounds(&p).contains("money (worst case): not bounded in dollars"));
    // The agent invocations between merges (lost races merged again) times the per-call cap.
    p.set_config(json!({"budget": {"perCallUsd": 0.5}}));
    let all = bounds(&p);
    let line = all
        .lines()
        .find(|l| l.starts_with("money (worst case"))
        .unwrap_or_else(|| panic!("{all}"));
    // "agent invocations with every lost race merged again: N between two successful merges, …"
    let invocations: f64 = all
        .lines()
        .find(|l| l.starts_with("agent invocations with every lost race"))
        .and_then(|l| l.split(": ").nth(1))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{all}"));
    let between = invocations * 0.5;
    assert!(
        line.contains(&format!("${between:.2} between two successful merges")),
        "{line}\n{all}"
    );
    // The issue budget is tighter: two cycles (maxConsecutiveEscalations) of $3.
    p.set_config(json!({"budget": {"perCallUsd": 0.5, "perIssueUsd": 3}}));
    let all = bounds(&p);
    assert!(all.contains("$6.00 between two successful merges"), "{all}");
    assert!(all.contains("2 cycles × perIssueUsd $3.00"), "{all}");
    p.set_config(json!({"budget": {"perCallUsd": 0.5, "perIssueUsd": 3, "perSessionUsd": 4}}));
    assert!(bounds(&p).contains("$4.00 between two successful merges"));
}

/// What a journal's events recorded as spent, in dollars.
fn recorded_spend(journal: &Path) -> f64 {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|l| l["event"]["usage"]["cost_micros"].as_u64())
        .sum::<u64>() as f64
        / 1e6
}

/// Every journal of the project: its own and each fleet worker's clone's.
fn every_journal(p: &Project) -> Vec<std::path::PathBuf> {
    let mut all = vec![p.journal_path()];
    let workers = p.project.join(".git/sdlc-runner/workers");
    if let Ok(rd) = std::fs::read_dir(workers) {
        for e in rd.flatten() {
            all.push(e.path().join(".git/sdlc-runner/journal.jsonl"));
        }
    }
    all
}

fn project_spend(p: &Project) -> f64 {
    every_journal(p).iter().map(|j| recorded_spend(j)).sum()
}

/// Session 2 under a ceiling that leaves $0.30 of the day: it halts for the day, blames
/// nobody, says when the window frees, and spends no more than what was left.
fn halts_for_the_day(p: &Project, spent_before: f64, issue: u32) {
    p.set_config(json!({"budget": {"perDayUsd": spent_before + 0.30}}));
    let out = p.run(&[]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("BUDGET EXHAUSTED: daily budget"), "{all}");
    assert!(all.contains("the daily budget frees at: "), "{all}");
    assert_eq!(p.issue(issue)["escalated"], false, "nobody blamed: {all}");
    let spent = project_spend(p) - spent_before;
    assert!(
        spent > 0.0 && spent <= 0.30 + 1e-9,
        "session 2 spent ${spent} of the $0.30 the day had left\n{all}"
    );
    let status = p
        .command(&["status", "--config", p.config.to_str().unwrap()])
        .output()
        .unwrap();
    let shown = text(&status);
    assert!(
        shown.contains("over the last 24 hours, every session and worker"),
        "{shown}"
    );
    // The halt sticks like any other: a supervisor's restart does not pass the ceiling.
    let again = p.run(&[]);
    assert_eq!(code(&again), 1, "{}", text(&again));
    assert!(text(&again).contains("refusing to run"), "{}", text(&again));
}

/// Two issues, the first worked and merged by a session whose every step cost $0.25: the
/// project and what that session spent.
fn first_issue_merged_at_a_quarter_a_step() -> (Project, f64) {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"costUsd": 0.25}),
        json!({}),
    );
    let out = p.run(&["--issue", "1"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let first = project_spend(&p);
    (p, first)
}

#[test]
fn the_day_ceiling_counts_the_earlier_sessions_of_the_day() {
    let (p, first) = first_issue_merged_at_a_quarter_a_step();
    assert!(
        first >= 0.5,
        "issue 1 cost ${first}: more than the day has left"
    );
    halts_for_the_day(&p, first, 2);
}

#[test]
fn the_day_ceiling_counts_what_a_fleets_workers_spent() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"costUsd": 0.25}),
        json!({}),
    );
    let out = p.run(&["--workers", "2"]);
    assert_eq!(code(&out), 0, "{}", text(&out));
    let in_workers: f64 = every_journal(&p)
        .iter()
        .skip(1)
        .map(|j| recorded_spend(j))
        .sum();
    assert!(
        in_workers >= 1.0,
        "the workers' journals hold the spend: ${in_workers}\n{}",
        text(&out)
    );
    let third = json!({"number": 3, "title": "Third", "body": "", "state": "open",
        "labels": ["automatable"], "milestone": null, "escalated": false});
    std::fs::write(p.issues.join("3.json"), third.to_string()).unwrap();
    halts_for_the_day(&p, project_spend(&p), 3);
}

/// A call stopped by a signal spent its money all the same: the journal keeps it (with the
/// shutdown), so the next session's budget, `status` and the day's sum count it.
#[test]
fn a_call_stopped_by_a_signal_keeps_its_spend_in_the_journal() {
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:200"]}}),
        json!({"perSessionUsd": 100}),
    );
    let runner = p.spawn(&[]);
    p.wait_for_invocation("1 implement", std::time::Duration::from_secs(60));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    e2e::signal(&runner, libc::SIGTERM);
    let out = e2e::wait_output(runner, std::time::Duration::from_secs(60));
    assert_eq!(code(&out), 0, "{}", text(&out));
    let spent = recorded_spend(&p.journal_path());
    assert!(
        spent >= MESSAGE_USD,
        "the stopped call's messages (one every 0.2 s for 1.5 s) are in the journal: ${spent}\n{}",
        text(&out)
    );
    let status = p
        .command(&["status", "--json", "--config", p.config.to_str().unwrap()])
        .output()
        .expect("status");
    let doc: Value = serde_json::from_slice(&status.stdout).expect("status --json");
    assert!(
        doc["budgets"]["sessionUsd"].as_f64() >= Some(MESSAGE_USD),
        "{doc}"
    );
}

/// Two workers in expensive tool loops at once under one session budget: the fleet hands
/// the calls shares of what the fleet has left, not each the whole of it, so together they
/// overshoot the budget by at most one message per call, not by a budget per worker.
#[test]
fn a_fleets_calls_share_what_the_fleet_has_left() {
    let p = Project::new(
        &[(1, "First", ""), (2, "Second", "")],
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:300"]}}),
        json!({}),
    );
    let agent = json!({
        "command": e2e::BIN,
        "args": ["fake-agent", "--script", p.script.to_str().unwrap()],
        "pricing": {"claude-fake": {"input": 4, "cachedInput": 0.4, "output": 20}},
    });
    p.set_config(json!({"model": "claude-fake", "agent": agent,
        "budget": {"perSessionUsd": 3, "perIssueUsd": 100}}));
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("BUDGET EXHAUSTED"), "{all}");
    let spent = project_spend(&p);
    assert!(
        (3.0..3.0 + 2.0 * MESSAGE_USD).contains(&spent),
        "the workers spent ${spent} together under a $3 session budget\n{all}"
    );
    for issue in [1, 2] {
        assert_eq!(p.issue(issue)["escalated"], false, "nobody blamed: {all}");
    }
}

/// A worker of a fleet that reaches the day's ceiling itself says when the window frees, as
/// a runner alone does: it reads every journal of the project, not only its clone's.
#[test]
fn a_fleet_workers_day_halt_says_when_the_window_frees() {
    let (p, first) = first_issue_merged_at_a_quarter_a_step();
    p.set_config(json!({"budget": {"perDayUsd": first + 0.30}}));
    let out = p.run(&["--workers", "2"]);
    let all = text(&out);
    assert_eq!(code(&out), 1, "{all}");
    assert!(all.contains("BUDGET EXHAUSTED: daily budget"), "{all}");
    assert!(all.contains("the daily budget frees at: "), "{all}");
    assert!(!all.contains("`sdlc-runner status` says when"), "{all}");
    assert_eq!(p.issue(2)["escalated"], false, "nobody blamed: {all}");
}

#[test]
fn on_exceeded_ask_waits_for_a_person_and_retry_grants_the_issue_its_budget_again() {
    // implement spends past the issue's $3 (a tool loop).
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:400"]}}),
        json!({"perIssueUsd": 3, "onExceeded": "ask"}),
    );
    let decision = p.project.join(".git/sdlc-runner/decision.json");
    let mut runner = p.spawn(&["--issue", "1"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !decision.exists() {
        assert!(std::time::Instant::now() < deadline, "no decision asked");
        assert!(
            runner.try_wait().unwrap().is_none(),
            "the runner ended before asking: {}",
            text(&runner.wait_with_output().unwrap())
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let request: Value = serde_json::from_slice(&std::fs::read(&decision).unwrap()).unwrap();
    assert_eq!(request["step"], "implement", "{request}");
    assert!(
        request
            .to_string()
            .contains("the issue's budget is reached: $3."),
        "the spend so far is in the question: {request}"
    );
    assert_eq!(p.issue(1)["escalated"], false, "nobody blamed while asking");
    // The person looks, the loop is fixed (the retried call is cheap), and grants it again.
    p.set_script(json!({"costUsd": 0.0, "steps": {"implement": ["ok"]}}));
    let answer = p.decide("retry");
    assert_eq!(code(&answer), 0, "{}", text(&answer));
    let out = e2e::wait_output(runner, std::time::Duration::from_secs(120));
    let all = text(&out);
    assert_eq!(
        code(&out),
        0,
        "retried within a new budget and merged: {all}"
    );
    assert_eq!(p.issue(1)["state"], "closed", "{all}");
    let failures = implement_failures(&p);
    assert_eq!(failures.len(), 1, "{failures:?}");
    let log = std::fs::read_to_string(p.root.join("logs/sdlc-runner.log")).unwrap_or_default();
    assert!(log.contains("decision: retry"), "{log}");
}

/// A seed for the kill points: `SDLC_TEST_SEED` to repeat a run, else the clock.
fn seed() -> u64 {
    let seed = std::env::var("SDLC_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("SDLC_TEST_SEED={seed}");
    seed.max(1)
}

/// xorshift64: the next kill point, in `1..=most`.
fn next(state: &mut u64, most: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    1 + *state % most
}

/// The fake agent's priced requests that went out (`spent` lines), whatever the runner saw.
fn requests_sent(p: &e2e::Project) -> usize {
    p.count("spent ")
}

/// Runs `spawn` again and again, SIGKILLing each runner after a random `least..=most` more
/// priced requests of its agents, until a runner ends by itself (at most `rounds` kills).
/// Returns how many were killed.
fn kill_at_random_requests(
    p: &e2e::Project,
    mut spawn: impl FnMut() -> std::process::Child,
    (rounds, least, most): (usize, u64, u64),
) -> usize {
    let mut state = seed();
    let mut kills = 0;
    for _ in 0..rounds {
        let mut child = spawn();
        let more = least - 1 + next(&mut state, most - least + 1);
        let target = requests_sent(p) + more as usize;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            if child.try_wait().expect("try_wait").is_some() {
                let out = e2e::wait_output(child, std::time::Duration::from_secs(5));
                eprintln!("{}", text(&out));
                return kills;
            }
            if requests_sent(p) >= target {
                // A moment for the runner to read the request (a third of the agent's pace):
                // a kill before it did is the one request per call the bound allows.
                std::thread::sleep(std::time::Duration::from_millis(50));
                e2e::signal(&child, libc::SIGKILL);
                let _ = e2e::wait_output(child, std::time::Duration::from_secs(30));
                kills += 1;
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the runner neither spent nor ended: {:?}",
                p.invocations()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    // The last runner is not killed: it ends by itself.
    let out = e2e::wait_output(spawn(), std::time::Duration::from_secs(60));
    eprintln!("{}", text(&out));
    kills
}

/// Spend is durable while it is spent: a runner SIGKILLed at random points of spending calls
/// restarts counting what each killed call had spent, so over every kill and restart the
/// agent's requests cost at most the issue budget plus one request per call (the request
/// that reached a call's money, or went out as the runner died). Before, a killed call cost
/// nothing and the next one was handed the whole budget again: $4.80 under $3.
#[test]
fn a_runner_killed_at_random_points_of_spending_calls_spends_at_most_its_budget_plus_one_request_per_call(
) {
    let p = spending(
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:150"]}}),
        json!({
            "perIssueUsd": 3,
        }),
    );
    p.set_config(json!({
        "model": "claude-fake",
        "agent": {
            "command": e2e::BIN,
            "args": ["fake-agent", "--script", p.script.to_str().unwrap()],
            "pricing": {"claude-fake": {"input": 4, "cachedInput": 0.4, "output": 20}},
        },
        "budget": {"perIssueUsd": 3},
        "maxRetriesPerStep": 6,
        "maxConsecutiveSameFailure": 0,
    }));
    let kills = kill_at_random_requests(&p, || p.spawn(&["--issue", "1"]), (4, 1, 3));
    let calls = p.count("1 implement ");
    let spent = requests_sent(&p) as f64 * MESSAGE_USD;
    let bound = 3.0 + calls as f64 * MESSAGE_USD;
    assert!(
        spent <= bound + 1e-6,
        "spent ${spent:.2} in {calls} calls over {kills} kills, more than ${bound:.2}: {:?}",
        p.invocations()
    );
    assert!(kills >= 1, "{:?}", p.invocations());
    // The journal counts what the killed calls spent.
    let killed: Vec<u64> = p
        .journal()
        .iter()
        .filter_map(|r| {
            let e = r.get("event")?;
            (e["event"] == "killedCallSpent").then(|| e["usage"]["cost_micros"].as_u64())?
        })
        .collect();
    // Each kill that came after the runner read a request restarts counting it (a kill in
    // the moment between the agent's request and the runner's read journals nothing yet).
    assert!(
        !killed.is_empty() && killed.len() <= kills,
        "{killed:?} after {kills} kills"
    );
    assert!(killed.iter().all(|c| *c >= 800_000), "{killed:?}");
}

/// A fleet's shares are durable: a fleet SIGKILLed at random points of its workers' spending
/// calls, and run again, counts what the sessions its workers continue had spent (their
/// journals, a killed call's running cost included), so over every kill the workers together
/// spend at most the session budget plus one request per call. Before, the coordinator
/// started from nothing after a crash and handed the whole session budget out again.
#[test]
fn a_fleet_killed_at_random_points_of_spending_calls_spends_at_most_its_budget_plus_one_request_per_call(
) {
    let issues: Vec<(u32, String)> = (1..=4).map(|n| (n, format!("Issue {n}"))).collect();
    let refs: Vec<(u32, &str, &str)> = issues.iter().map(|(n, t)| (*n, t.as_str(), "")).collect();
    let p = Project::new(
        &refs,
        json!({"costUsd": 0.0, "steps": {"implement": ["spend:150"]}}),
        json!({}),
    );
    let agent = json!({
        "command": e2e::BIN,
        "args": ["fake-agent", "--script", p.script.to_str().unwrap()],
        "pricing": {"claude-fake": {"input": 4, "cachedInput": 0.4, "output": 20}},
    });
    // The fleet's $10 is spent largely before the kill; after it, fresh issues have whole
    // $6 issue budgets and each worker's own session most of its $10: only the fleet's
    // count of what its sessions spent holds the rest to what is left. A fleet that forgot
    // it would hand $10 out again.
    p.set_config(json!({"model": "claude-fake", "agent": agent,
        "budget": {"perSessionUsd": 10, "perIssueUsd": 6},
        "maxConsecutiveEscalations": 5,
        "maxRetriesPerStep": 6, "maxConsecutiveSameFailure": 0}));
    let kills = kill_at_random_requests(&p, || p.spawn(&["--workers", "2"]), (1, 7, 9));
    let calls = (1..=4)
        .map(|n| p.count(&format!("{n} implement ")))
        .sum::<usize>();
    let spent = requests_sent(&p) as f64 * MESSAGE_USD;
    let bound = 10.0 + calls as f64 * MESSAGE_USD;
    assert!(
        spent <= bound + 1e-6,
        "the workers spent ${spent:.2} in {calls} calls over {kills} kills, more than ${bound:.2}: {:?}",
        p.invocations()
    );
    assert!(kills >= 1, "{:?}", p.invocations());
}
