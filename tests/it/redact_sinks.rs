//! Sinks that quote what they read back from disk must redact it too: `status` prints the
//! state file and its parse error, which may echo whatever was written there.

use std::process::Command;

#[test]
fn status_never_prints_a_secret_found_in_the_state_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("proj");
    std::fs::create_dir_all(project.join(".claude")).expect("mkdir");
    std::fs::create_dir_all(project.join("issues")).expect("mkdir");
    let config = dir.path().join("sdlc-config.json");
    std::fs::write(
        &config,
        serde_json::json!({
            "projectPath": project,
            "logDir": dir.path().join("logs"),
            "tracker": {"kind": "local", "dir": project.join("issues")},
        })
        .to_string(),
    )
    .expect("write config");
    let secret = "ghp_St4t3F1l3S3cr3tV4lue";
    for state in [
        format!(r#"{{"currentStep": 1, "currentIssue": "{secret}"}}"#),
        format!(r#"{{"currentStep": 1, "featureName": "x GITHUB_TOKEN={secret}"}}"#),
    ] {
        std::fs::write(project.join(".claude/sdlc-state.json"), &state).expect("write state");
        for json in [false, true] {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_sdlc-runner"));
            cmd.args(["status", "--config"]).arg(&config);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.output().expect("run status");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{stdout}");
            assert!(!stdout.contains("St4t3F1l3"), "{stdout}");
            if json {
                let parsed: Result<serde_json::Value, _> = serde_json::from_str(&stdout);
                assert!(parsed.is_ok(), "still valid JSON: {stdout}");
            }
        }
    }
}
