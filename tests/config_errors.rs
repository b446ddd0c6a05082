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
    assert!(stdout.starts_with("sdlc-config.json: ok\n"), "{stdout}");
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
         sdlc-config.json: steps.deploy: unknown step; the steps are startCycle, startIssue, writeSpecs, implement, simplify, verify, commitPush, createPR, monitorCI, merge\n\
         sdlc-config.json: steps.verify.effort: \"max\" is not one of low|medium|high|xhigh\n\
         sdlc-config.json: steps.verify.enabled: verify cannot be disabled (only simplify can)\n\
         sdlc-config.json: steps.merge.effort: model \"haiku\" does not support effort: remove effort from this step\n\
         sdlc-config.json: maxBounceRetries: expected an integer ≥ 0, found string \"3\" (write 3 without quotes)\n"
    );
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
        assert!(text(&out.stdout).starts_with(&format!("{file}: ok\n")));
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
