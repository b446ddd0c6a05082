//! End to end: `-v` and `RUST_LOG` show the runner's diagnostics (each child process, each
//! tracker call, each event and effect) in the narration's style; without them, none appear
//! and the orchestration log never gets them.

use crate::e2e;

use e2e::{code, text, wait_output, Project};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

fn project() -> Project {
    Project::new(&[(1, "First", "")], json!({}), json!({}))
}

/// The stderr of a successful `run` with `args`, `RUST_LOG` as given (removed when `None`).
/// It goes to a file: a verbose run writes more than a pipe holds before the runner is waited
/// for.
fn run(p: &Project, args: &[&str], rust_log: Option<&str>) -> String {
    let mut all = vec!["run", "--config", p.config.to_str().expect("utf8")];
    all.extend_from_slice(args);
    let mut cmd = p.command(&all);
    match rust_log {
        Some(filter) => cmd.env("RUST_LOG", filter),
        None => cmd.env_remove("RUST_LOG"),
    };
    let path = p.root.join("stderr.txt");
    let file = std::fs::File::create(&path).expect("stderr file");
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::from(file))
        .spawn()
        .expect("spawn runner");
    let mut out = wait_output(child, Duration::from_secs(120));
    out.stderr = std::fs::read(&path).expect("stderr");
    assert_eq!(code(&out), 0, "{}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every line of `err` as the JSON object it must be.
fn json_lines(err: &str) -> Vec<serde_json::Value> {
    err.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line:?}"))
        })
        .collect()
}

fn orchestration_log(p: &Project) -> String {
    std::fs::read_to_string(p.root.join("logs/sdlc-runner.log")).expect("orchestration log")
}

#[test]
fn verbose_shows_each_call_event_and_effect_stamped_like_the_narration() {
    let p = project();
    let err = run(&p, &["-v"], None);
    for wanted in [
        "DEBUG sdlc_runner::process: run program=git args=",
        "DEBUG sdlc_runner::process: exited program=git",
        "DEBUG sdlc_runner::tracker: select tracker=local outcome=issue #1",
        "DEBUG sdlc_runner::tracker: close: ok tracker=local issue=1",
        "DEBUG sdlc_runner::driver: event event=Start",
        "DEBUG sdlc_runner::driver: perform effect=SelectIssue",
        "DEBUG sdlc_runner::agent: agent started",
    ] {
        assert!(err.contains(wanted), "missing {wanted:?} in:\n{err}");
    }
    // The narration is still there, and every line, diagnostic or not, carries the time.
    assert!(err.contains("verify: succeeded"), "{err}");
    assert!(
        err.lines()
            .all(|l| l.starts_with("[20") && l.contains("Z] ")),
        "{err}"
    );
    // What each call printed is for -vv.
    assert!(!err.contains("TRACE"), "{err}");
    // Diagnostics are for the console; the orchestration log keeps the narration only.
    let log = orchestration_log(&p);
    assert!(log.contains("verify: succeeded"), "{log}");
    assert!(!log.contains("DEBUG"), "{log}");
}

#[test]
fn very_verbose_adds_what_each_call_printed() {
    let p = project();
    let err = run(&p, &["-vv"], None);
    assert!(
        err.contains("TRACE sdlc_runner::process: output program=git stdout="),
        "{err}"
    );
}

#[test]
fn without_verbose_or_rust_log_no_diagnostic_appears() {
    let p = project();
    let err = run(&p, &[], None);
    assert!(err.contains("verify: succeeded"), "{err}");
    assert!(!err.contains("DEBUG"), "{err}");
    assert!(!err.contains("sdlc_runner::"), "{err}");
}

#[test]
fn rust_log_alone_turns_them_on_and_never_hides_the_narration() {
    let p = project();
    let err = run(&p, &[], Some("sdlc_runner::tracker=debug"));
    assert!(err.contains("DEBUG sdlc_runner::tracker: select"), "{err}");
    assert!(
        !err.contains("sdlc_runner::process"),
        "only what RUST_LOG asked: {err}"
    );
    assert!(err.contains("verify: succeeded"), "{err}");

    // A filter that lets nothing through still leaves the narration.
    let q = project();
    let err = run(&q, &[], Some("off"));
    assert!(err.contains("verify: succeeded"), "{err}");
    assert!(!err.contains("DEBUG"), "{err}");
}

#[test]
fn json_diagnostics_are_one_object_per_line_with_level_target_and_fields() {
    let p = project();
    let err = run(&p, &["-v", "--log-format", "json"], None);
    let mut debug = 0;
    let mut narrated_with_issue = 0;
    for v in json_lines(&err) {
        assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{v}");
        assert!(v["msg"].is_string(), "{v}");
        match v["level"].as_str() {
            Some("debug") => {
                assert!(
                    v["target"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("sdlc_runner::")),
                    "{v}"
                );
                debug += 1;
            }
            Some("info" | "warn" | "error") => {
                if v["issue"] == 1 {
                    narrated_with_issue += 1;
                }
            }
            other => panic!("level {other:?}: {v}"),
        }
    }
    assert!(debug > 10, "{err}");
    assert!(
        err.lines().any(|l| l.contains("\"program\":\"git\"")),
        "{err}"
    );
    // An orchestration entry about an issue carries it as a field.
    assert!(narrated_with_issue > 0, "{err}");
}

#[test]
fn a_fleet_workers_diagnostics_and_json_lines_name_the_worker() {
    let p = Project::new(
        &[(1, "One", ""), (2, "Two", "")],
        json!({}),
        json!({ "steps": e2e::builtin_steps() }),
    );
    let err = run(&p, &["--workers", "2", "-v", "--log-format", "json"], None);
    for worker in [0, 1] {
        let named = json_lines(&err).iter().any(|v| {
            v["level"] == "debug" && v["target"] == "sdlc_runner::process" && v["worker"] == worker
        });
        assert!(named, "no git call of worker {worker}:\n{err}");
    }
}
