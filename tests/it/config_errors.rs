//! `sdlc-runner config check` and `config schema` through the real binary: exit codes,
//! the exact lines on stderr, and the shipped example configs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn runner(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sdlc-runner"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run sdlc-runner")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write config");
    path
}

#[test]
fn valid_config_exits_0_with_ok_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    write(
        dir.path(),
        "sdlc-config.json",
        r#"{"_comment": "minimal", "projectPath": "repo", "model": "opus", "agent": {"command": "sh"},
            "steps": {"simplify": {"enabled": false}}}"#,
    );
    let out = runner(&["config", "check", "sdlc-config.json"], dir.path());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(
        stdout.starts_with("sdlc-config.json: ok (schema and values;"),
        "{stdout}"
    );
    let project = dir.path().join("repo");
    assert!(
        stdout.contains(&format!(
            "project: {}",
            std::path::absolute(&project).unwrap().display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("simplify opus/medium (disabled)"),
        "{stdout}"
    );
    // The project exists and no skill is named: nothing to warn about.
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn invalid_config_exits_2_listing_every_error() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "sdlc-config.json",
        r#"{
  "projectPath": ".",
  "maxRetries": 3,
  "steps": {
    "verify": {"effort": "max", "enabled": false},
    "merge": {"model": "haiku", "effort": "low"},
    "deploy": {}
  },
  "maxBounceRetries": "3"
}"#,
    );
    let out = runner(&["config", "check", "sdlc-config.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        "sdlc-config.json: maxRetries: unknown key; did you mean \"maxRetriesPerStep\"?\n\
         sdlc-config.json: steps.deploy: unknown step; the steps are startCycle, startIssue, writeSpecs, implement, simplify, verify, commitPush, createPR, monitorCI, merge, addressReview\n\
         sdlc-config.json: steps.verify.effort: \"max\" is not one of low|medium|high|xhigh\n\
         sdlc-config.json: steps.verify.enabled: verify cannot be disabled (only simplify can)\n\
         sdlc-config.json: steps.merge.effort: model \"haiku\" does not support effort: remove effort from this step\n\
         sdlc-config.json: maxBounceRetries: expected an integer ≥ 0, found string \"3\" (write 3 without quotes)\n"
    );
}

/// Several errors are listed in the order `config check` has always listed them: the order in
/// which the walker reads the keys (the file's key order, except that a key others depend on,
/// such as `agent` or `idleTimeoutMin`, is read before them). Deriving the readers from the
/// declarations once changed it for `maxLogDiskUsageMB`, `cleanup`, `maxConsecutiveFailures`,
/// `requireChecks`, `workers`, the prices and a step's `idleTimeoutMin`; this pins it.
#[test]
fn several_errors_are_listed_in_the_order_the_keys_are_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    write(
        dir.path(),
        "sdlc-config.json",
        r#"{
  "projectPath": "repo",
  "pluginsPath": "plugins",
  "model": 7,
  "logDir": 5,
  "maxLogDiskUsageMB": -1,
  "cleanup": {"processPatterns": [""]},
  "steps": {"verify": {"maxTurns": "x", "skill": "a/b", "idleTimeoutMin": -1, "timeoutMin": 0}},
  "maxRetriesPerStep": -1,
  "maxConsecutiveFailures": {"verify": "x"},
  "maxConsecutiveSameFailure": 1,
  "backoff": {"initialSeconds": 10, "maxSeconds": 5},
  "approval": "sometimes",
  "budget": {"perIssueUsd": -1},
  "idleTimeoutMin": -1,
  "discordChannelId": 123,
  "agent": {"command": ""},
  "notify": {"webhookUrl": "ftp://x"},
  "tracker": {"kind": "jira"},
  "requireChecks": "yes",
  "forge": "gitea",
  "localCi": {"command": []},
  "claims": {"leaseMinutes": -1},
  "http": {"listen": "nowhere"},
  "workers": 0
}"#,
    );
    let out = runner(&["config", "check", "sdlc-config.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let expected = [
        "model: expected a non-empty string, found number 7",
        "agent.command: expected a non-empty string, found string \"\"",
        "logDir: expected a path (string), found number 5",
        "maxLogDiskUsageMB: expected a number > 0, found number -1",
        "cleanup.processPatterns[0]: an empty pattern would match every process; remove it",
        "idleTimeoutMin: expected a number > 0, found number -1",
        "steps.verify.maxTurns: expected an integer ≥ 1, found string \"x\"",
        "steps.verify.timeoutMin: expected a number > 0, found number 0",
        "steps.verify.idleTimeoutMin: expected a number > 0, found number -1",
        "steps.verify.skill: \"a/b\" is not a skill name: give the directory name under <pluginsPath>/plugins/nmg-sdlc/skills/",
        "maxRetriesPerStep: expected an integer ≥ 1, found number -1",
        "maxConsecutiveFailures.verify: expected an integer ≥ 0, found string \"x\"",
        "maxConsecutiveSameFailure: expected 0 (off) or an integer ≥ 2, found number 1",
        "backoff.maxSeconds: 5 is less than backoff.initialSeconds (10)",
        "approval: \"sometimes\" is not one of auto|manual",
        "budget.perIssueUsd: expected a number > 0, found number -1",
        "discordChannelId: expected a string (write the id in quotes: large numbers lose digits in JSON), found number 123",
        "notify.webhookUrl: \"ftp://x\" is not an http:// or https:// URL",
        "tracker.kind: \"jira\" is not one of github|local|gitlab|linear",
        "requireChecks: expected true or false, found string \"yes\"",
        "forge: \"gitea\" is not one of github|local|gitlab",
        "localCi: only the local forge runs a CI command: remove localCi or set \"forge\": \"local\"",
        "localCi.command: expected a non-empty array of strings, found an empty array",
        "workers: expected an integer ≥ 1, found number 0",
        "claims.leaseMinutes: expected a number > 0, found number -1",
        "http.listen: \"nowhere\" is not an address and port: write one such as \"127.0.0.1:8080\"",
    ];
    let listed: Vec<String> = text(&out.stderr)
        .lines()
        .map(|l| l.trim_start_matches("sdlc-config.json: ").to_string())
        .collect();
    assert_eq!(listed, expected);
}

#[test]
fn json_syntax_error_exits_2_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.json",
        "{\n  \"projectPath\": \"p\"\n  \"model\": \"opus\"\n}\n",
    );
    let out = runner(&["config", "check", "bad.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "bad.json:3:3: invalid JSON: expected `,` or `}`\n"
    );
}

#[test]
fn missing_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = runner(&["config", "check", "nope.json"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("nope.json: cannot read the config file: "),
        "{stderr}"
    );
}

#[test]
fn environment_problems_are_warnings_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "c.json",
        r#"{"projectPath": "missing", "pluginsPath": "plugins",
            "steps": {"verify": {"skill": "verify-code"}}}"#,
    );
    let out = runner(&["config", "check", "c.json"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("warning: c.json: projectPath: "),
        "{stderr}"
    );
    assert!(
        stderr.contains("steps.verify.skill: skill file ")
            && stderr.contains("plugins/nmg-sdlc/skills/verify-code/SKILL.md does not exist"),
        "{stderr}"
    );
}

#[test]
fn shipped_examples_pass_config_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        "examples/sdlc-config.json",
        "tests/fixtures/old-sdlc-config.example.json",
    ] {
        let out = runner(&["config", "check", file], root);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with(&format!("{file}: ok (")));
    }
}

#[test]
fn schema_prints_a_json_schema_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = runner(&["config", "schema"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(schema["required"], serde_json::json!(["projectPath"]));
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["properties"]["maxBounceRetries"]["default"], 3);
    assert!(schema["definitions"]["StepsFile"]["properties"]["createPR"].is_object());
}

#[test]
fn every_numeric_limit_has_a_maximum_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    write(
        dir.path(),
        "sdlc-config.json",
        r#"{"projectPath": "repo", "agent": {"command": "sh", "maxApiRetries": 101},
            "maxRetriesPerStep": 4294967295, "maxBounceRetries": 101,
            "maxConsecutiveEscalations": 1e12, "maxConsecutiveSameFailure": 101,
            "maxConsecutiveFailures": {"verify": 101}, "maxRateLimitWaits": 1001,
            "maxRepairIterations": 101, "maxLogDiskUsageMB": 1000001,
            "idleTimeoutMin": 10081, "maxQuotaWaitMinutes": 10081,
            "decisionTimeoutMinutes": 10081,
            "backoff": {"initialSeconds": 604801, "maxSeconds": 604801},
            "budget": {"perIssueUsd": 1000001, "perSessionUsd": 1000001, "perIssueMinutes": 10081},
            "steps": {"verify": {"maxTurns": 10001, "timeoutMin": 10081, "idleTimeoutMin": 10081}}}"#,
    );
    let out = runner(&["config", "check", "sdlc-config.json"], dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for line in [
        "sdlc-config.json: maxRetriesPerStep: 4294967295 is above the maximum 100",
        "sdlc-config.json: maxBounceRetries: 101 is above the maximum 100",
        "sdlc-config.json: maxConsecutiveEscalations: 1000000000000 is above the maximum 100",
        "sdlc-config.json: maxConsecutiveSameFailure: 101 is above the maximum 100",
        "sdlc-config.json: maxConsecutiveFailures.verify: 101 is above the maximum 100",
        "sdlc-config.json: maxRateLimitWaits: 1001 is above the maximum 1000",
        "sdlc-config.json: maxRepairIterations: 101 is above the maximum 100",
        "sdlc-config.json: maxLogDiskUsageMB: 1000001 is above the maximum 1000000",
        "sdlc-config.json: idleTimeoutMin: 10081 is above the maximum 10080",
        "sdlc-config.json: maxQuotaWaitMinutes: 10081 is above the maximum 10080",
        "sdlc-config.json: decisionTimeoutMinutes: 10081 is above the maximum 10080",
        "sdlc-config.json: backoff.initialSeconds: 604801 is above the maximum 604800",
        "sdlc-config.json: backoff.maxSeconds: 604801 is above the maximum 604800",
        "sdlc-config.json: budget.perIssueUsd: 1000001 is above the maximum 1000000",
        "sdlc-config.json: budget.perSessionUsd: 1000001 is above the maximum 1000000",
        "sdlc-config.json: budget.perIssueMinutes: 10081 is above the maximum 10080",
        "sdlc-config.json: agent.maxApiRetries: 101 is above the maximum 100",
        "sdlc-config.json: steps.verify.maxTurns: 10001 is above the maximum 10000",
        "sdlc-config.json: steps.verify.timeoutMin: 10081 is above the maximum 10080",
        "sdlc-config.json: steps.verify.idleTimeoutMin: 10081 is above the maximum 10080",
    ] {
        assert!(
            stderr.lines().any(|l| l == line),
            "missing {line:?} in:\n{stderr}"
        );
    }
}

#[test]
fn the_schema_states_every_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let out = runner(&["config", "schema"], dir.path());
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
    let top = &schema["properties"];
    assert_eq!(top["maxRetriesPerStep"]["maximum"], 100.0);
    assert_eq!(top["maxRateLimitWaits"]["maximum"], 1000.0);
    assert_eq!(top["maxLogDiskUsageMB"]["maximum"], 1_000_000.0);
    assert_eq!(top["idleTimeoutMin"]["maximum"], 10_080.0);
    let defs = &schema["definitions"];
    assert_eq!(
        defs["StepFile"]["properties"]["maxTurns"]["maximum"],
        10_000.0
    );
    assert_eq!(
        defs["BackoffFile"]["properties"]["maxSeconds"]["maximum"],
        604_800.0
    );
    assert_eq!(
        defs["BudgetFile"]["properties"]["perIssueUsd"]["maximum"],
        1_000_000.0
    );
    assert_eq!(
        defs["MaxConsecutiveFailures"]["properties"]["verify"]["maximum"],
        100.0
    );
    assert_eq!(
        defs["AgentFile"]["properties"]["maxApiRetries"]["maximum"],
        100.0
    );
}

#[test]
fn bounds_at_every_maximum_finishes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    std::fs::create_dir(dir.path().join("issues")).unwrap();
    write(
        dir.path(),
        "sdlc-config.json",
        r#"{"projectPath": "repo", "agent": {"command": "sh"},
            "tracker": {"kind": "local", "dir": "issues"},
            "maxRetriesPerStep": 100, "maxBounceRetries": 100, "maxConsecutiveEscalations": 100,
            "maxConsecutiveSameFailure": 100, "maxRateLimitWaits": 1000,
            "maxConsecutiveFailures": {"startCycle": 100, "startIssue": 100, "writeSpecs": 100,
              "implement": 100, "simplify": 100, "verify": 100, "commitPush": 100,
              "createPR": 100, "monitorCI": 100, "merge": 100}}"#,
    );
    let started = std::time::Instant::now();
    let out = runner(&["bounds", "--config", "sdlc-config.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(500),
        "bounds took {:?}",
        started.elapsed()
    );
    assert!(text(&out.stdout).contains("between two successful merges"));
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("repo")).unwrap();
    write(
        dir.path(),
        "sdlc-config.json",
        "\u{feff}{\"projectPath\": \"repo\", \"agent\": {\"command\": \"sh\"}}",
    );
    let out = runner(&["config", "check", "sdlc-config.json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_config_that_is_not_utf8_names_the_offset_and_never_echoes_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = b"{\n  \"projectPath\": \"re".to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0x00, 0x1b]);
    body.extend_from_slice(b"po\"\n}\n");
    std::fs::write(dir.path().join("sdlc-config.json"), &body).unwrap();
    let out = runner(&["config", "check", "sdlc-config.json"], dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "sdlc-config.json:2:21: not valid UTF-8: byte 0xff at offset 22 (save the file as UTF-8)"
    );
    assert!(!out.stderr.contains(&0xff) && !out.stderr.contains(&0x1b));
}
