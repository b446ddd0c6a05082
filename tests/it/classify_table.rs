//! Table-driven classification over real outputs: every captured Claude CLI run in
//! `tests/fixtures/claude-cli/` and realistic tool outputs in `tests/fixtures/tool-output/`,
//! each with the class it must get (docs/classification.md), plus the cases no fixture captures.

use sdlc_runner::agent::classify::{classify, classify_post_check, Classified, Observation};
use sdlc_runner::agent::stream::{StreamReader, StreamSummary};
use sdlc_runner::failure::FailureClass::{self, *};
use std::path::{Path, PathBuf};

const NOW: i64 = 1_778_560_000;

fn fixture(dir: &str, name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn summarize(stdout: &[u8]) -> StreamSummary {
    let mut reader = StreamReader::new();
    reader.feed(stdout);
    reader.finish()
}

#[derive(Default, Clone, Copy)]
struct Flags {
    timed_out: bool,
    idle: bool,
    killed: bool,
}

fn run(stdout: &[u8], stderr: &str, exit: Option<i32>, flags: Flags) -> Option<Classified> {
    let summary = summarize(stdout);
    let tail = String::from_utf8_lossy(stdout);
    classify(&Observation {
        exit_code: exit,
        timed_out: flags.timed_out,
        idle_timed_out: flags.idle,
        killed: flags.killed,
        summary: &summary,
        stderr_tail: stderr,
        output_tail: &tail,
        now_epoch_secs: NOW,
        temp_dir: Path::new("/tmp"),
    })
}

/// Runs a captured CLI case with the exit code it really had.
fn cli_case(name: &str, flags: Flags) -> Option<Classified> {
    let stdout = fixture("claude-cli", &format!("{name}.jsonl"));
    let stderr = String::from_utf8(fixture("claude-cli", &format!("{name}.stderr"))).unwrap();
    let rc: i32 = String::from_utf8(fixture("claude-cli", &format!("{name}.rc")))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    run(&stdout, &stderr, Some(rc), flags)
}

fn assert_class(got: Option<Classified>, want: FailureClass, case: &str) -> Classified {
    let got = got.unwrap_or_else(|| panic!("{case}: classified as success, want {want}"));
    assert_eq!(got.class, want, "{case}: {got:#?}");
    assert!(
        got.summary.starts_with(want.name()),
        "{case}: {}",
        got.summary
    );
    assert!(got.summary.chars().count() <= 200, "{case}");
    assert!(!got.summary.contains('\n'), "{case}: {}", got.summary);
    assert!(got.excerpt.chars().count() <= 2000, "{case}");
    got
}

#[test]
fn every_claude_cli_fixture_has_its_class() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli");
    // None = the attempt succeeded.
    let table: &[(&str, Option<FailureClass>, Flags)] = &[
        ("success", None, Flags::default()),
        ("bash-then-done", None, Flags::default()),
        ("tool-loop", Some(MaxTurns), Flags::default()),
        // `--max-budget-usd` reached: the CLI's own cap, an attempt stopped at its money.
        ("max-budget", Some(Budget), Flags::default()),
        // Exit 0, but a dangerous `rm -rf` was denied: a serious denial (AskUserQuestion is
        // not reported as a denial at all).
        ("ask-user", Some(PermissionDenied), Flags::default()),
        ("rate-limit", Some(RateLimit), Flags::default()),
        (
            "rate-limit.default-retries",
            Some(RateLimit),
            Flags::default(),
        ),
        ("overloaded", Some(Overloaded), Flags::default()),
        (
            "overloaded.default-retries",
            Some(Overloaded),
            Flags::default(),
        ),
        ("auth", Some(Auth), Flags::default()),
        ("auth.default-retries", Some(Auth), Flags::default()),
        ("not-logged-in", Some(Auth), Flags::default()),
        (
            "bash-then-done.no-bypass",
            Some(PermissionDenied),
            Flags::default(),
        ),
        ("root-refusal", Some(ToolingEnv), Flags::default()),
        // `api_error: "connection_failed"`, no HTTP status: the model unreachable, the
        // network's failure (waited out), never the issue's.
        ("network-unreachable", Some(Network), Flags::default()),
        ("connection-refused", Some(Network), Flags::default()),
        (
            "slow",
            Some(Timeout),
            Flags {
                timed_out: true,
                ..Flags::default()
            },
        ),
    ];
    // The table covers every captured case, so a new fixture cannot go unclassified.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".jsonl").map(str::to_string)
        })
        .collect();
    names.sort();
    let mut covered: Vec<String> = table.iter().map(|(n, _, _)| n.to_string()).collect();
    covered.sort();
    assert_eq!(names, covered);

    for &(name, want, flags) in table {
        let got = cli_case(name, flags);
        match want {
            None => assert!(got.is_none(), "{name}: {got:#?}"),
            Some(class) => {
                assert_class(got, class, name);
            }
        }
    }
}

#[test]
fn fixture_summaries_say_what_happened() {
    let auth = assert_class(
        cli_case("not-logged-in", Flags::default()),
        Auth,
        "not-logged-in",
    );
    assert_eq!(auth.summary, "AUTH: Not logged in · Please run /login");
    let key = assert_class(cli_case("auth", Flags::default()), Auth, "auth");
    assert_eq!(key.summary, "AUTH: Invalid API key · Fix external API key");
    let refusal = assert_class(
        cli_case("root-refusal", Flags::default()),
        ToolingEnv,
        "root",
    );
    assert!(refusal.summary.contains("root/sudo"), "{}", refusal.summary);
    let denied = assert_class(
        cli_case("ask-user", Flags::default()),
        PermissionDenied,
        "ask",
    );
    assert!(denied.summary.contains("Bash"), "{}", denied.summary);
    let turns = assert_class(cli_case("tool-loop", Flags::default()), MaxTurns, "loop");
    assert!(turns.summary.contains("4 turns"), "{}", turns.summary);
    // The slow case without our flag still ends with exit 124 (coreutils timeout) and no
    // result: a timeout.
    assert_class(
        cli_case("slow", Flags::default()),
        Timeout,
        "slow without flag",
    );
}

#[test]
fn same_failure_in_different_runs_has_the_same_signature() {
    // The two auth runs differ in session ids, uuids, timestamps and retry counts.
    let a = cli_case("auth", Flags::default()).unwrap();
    let b = cli_case("auth.default-retries", Flags::default()).unwrap();
    assert_eq!(a.signature, b.signature);
    let a = cli_case("rate-limit", Flags::default()).unwrap();
    let b = cli_case("rate-limit.default-retries", Flags::default()).unwrap();
    assert_eq!(a.signature, b.signature);
    // Not logged in and an invalid key are different problems.
    let c = cli_case("not-logged-in", Flags::default()).unwrap();
    let d = cli_case("auth", Flags::default()).unwrap();
    assert_ne!(c.signature, d.signature);
}

const TOOL_TABLE: &[(&str, FailureClass, &str)] = &[
    (
        "cargo-test-failure.txt",
        TestAssertion,
        "tests::adds_two_numbers",
    ),
    ("cargo-build-e0308.txt", BuildCompile, "E0308"),
    ("clippy-d-warnings.txt", Lint, "identical blocks"),
    ("rustc-e0425.txt", BuildCompile, "E0425"),
    ("tsc-ts2322.txt", Typecheck, "TS2322"),
    ("eslint.txt", Lint, "no-unused-vars"),
    ("jest.txt", TestAssertion, "adds an item"),
    ("pytest.txt", TestAssertion, "test_parse_date"),
    ("go-test.txt", TestAssertion, "TestReverse"),
    ("go-build-failed.txt", BuildCompile, "undefined: runez"),
    (
        "npm-missing-module.txt",
        BuildCompile,
        "Cannot find module 'express'",
    ),
    ("mypy.txt", Typecheck, "Incompatible types"),
    ("disk-full.txt", ToolingEnv, "No space left on device"),
    (
        "command-not-found.txt",
        ToolingEnv,
        "pnpm: command not found",
    ),
];

#[test]
fn tool_outputs_as_plain_text() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tool-output");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    files.sort();
    let mut covered: Vec<String> = TOOL_TABLE.iter().map(|(f, _, _)| f.to_string()).collect();
    covered.sort();
    assert_eq!(files, covered, "every tool-output fixture needs a row");

    for &(file, class, headline) in TOOL_TABLE {
        let out = fixture("tool-output", file);
        let got = assert_class(run(&out, "", Some(1), Flags::default()), class, file);
        assert!(
            got.summary.contains(headline),
            "{file}: summary {:?} lacks {headline:?}",
            got.summary
        );
        assert!(got.excerpt.contains(headline), "{file}: {}", got.excerpt);
        // On stderr instead of stdout it classifies the same.
        let got_err = assert_class(
            run(
                b"",
                &String::from_utf8_lossy(&out),
                Some(1),
                Flags::default(),
            ),
            class,
            file,
        );
        assert_eq!(got.class, got_err.class);
    }
}

/// The same tool output as the agent really delivers it: inside a Bash tool result of a
/// stream-json run that ended in an error.
fn wrapped_in_stream(tool_output: &str, is_error: bool) -> String {
    let init =
        r#"{"type":"system","subtype":"init","session_id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}"#;
    let call = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make check"}}]}}"#;
    let result_line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_1", "is_error": is_error,
            "content": format!("Exit code 1\n{tool_output}")
        }]},
        "tool_use_result": {"stdout": tool_output, "stderr": "", "interrupted": false}
    });
    let end = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":5,"session_id":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","permission_denials":[]}"#;
    format!("{init}\n{call}\n{result_line}\n{end}\n")
}

#[test]
fn tool_outputs_inside_stream_json() {
    for &(file, class, headline) in TOOL_TABLE {
        let out = String::from_utf8(fixture("tool-output", file)).unwrap();
        for is_error in [true, false] {
            let stream = wrapped_in_stream(&out, is_error);
            // Output piped through `tail` reaches us with is_error false: believed for the
            // issue's own failures, not for the halting TOOLING_ENV ones, which then fall
            // back to what else the output shows.
            let (class, headline) = match (class, is_error, file) {
                (ToolingEnv, false, "disk-full.txt") => (BuildCompile, "could not compile"),
                (ToolingEnv, false, _) => (Unknown, "exit 1"),
                _ => (class, headline),
            };
            let got = assert_class(
                run(stream.as_bytes(), "", Some(1), Flags::default()),
                class,
                file,
            );
            assert!(got.summary.contains(headline), "{file}: {}", got.summary);
            // Exit 0 with is_error is a soft failure: classified the same way.
            let soft = run(stream.as_bytes(), "", Some(0), Flags::default());
            assert_eq!(soft.map(|c| c.class), Some(class), "{file} exit 0");
        }
    }
}

#[test]
fn file_contents_read_by_the_agent_are_not_evidence() {
    // The agent Read a file that mentions test failures and an invalid key, then the run
    // failed for a reason the output does not show: that is UNKNOWN, not AUTH or a test
    // failure (the old runner's defect: patterns over the whole transcript).
    let read = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "t", "is_error": false,
            "content": "test result: FAILED\nInvalid API key\nerror[E0308]: mismatched types\nNo space left on device"
        }]},
        "tool_use_result": {"type": "text", "file": {"filePath": "/home/dev/project/notes.md"}}
    });
    let text = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Invalid API key? rate_limit? test result: FAILED"}]}}"#;
    let stream = format!("{read}\n{text}\n");
    let got = assert_class(
        run(stream.as_bytes(), "", Some(1), Flags::default()),
        Unknown,
        "read",
    );
    assert!(
        got.summary.starts_with("UNKNOWN: exit 1"),
        "{}",
        got.summary
    );
}

#[test]
fn halting_patterns_need_a_failed_command() {
    // The agent grepped the code base for ENOSPC and "command not found" (a Bash call that
    // succeeded), then the run failed: nothing says the disk is full or a tool is missing.
    let grep = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "t", "is_error": false,
            "content": "src/io.rs:12: // ENOSPC: No space left on device\nsrc/sh.rs:3: \"bash: x: command not found\""
        }]},
        "tool_use_result": {"stdout": "...", "stderr": "", "interrupted": false}
    });
    let got = run(
        format!("{grep}\n").as_bytes(),
        "",
        Some(1),
        Flags::default(),
    );
    assert_class(got, Unknown, "grep");
    // The same text from a command that failed is believed.
    let failed = grep
        .to_string()
        .replace(r#""is_error":false"#, r#""is_error":true"#);
    let got = run(
        format!("{failed}\n").as_bytes(),
        "",
        Some(1),
        Flags::default(),
    );
    assert_class(got, ToolingEnv, "failed");
}

fn result_line(extra: serde_json::Value) -> String {
    let mut base = serde_json::json!({
        "type": "result", "subtype": "success", "is_error": true, "num_turns": 1,
        "session_id": "s", "permission_denials": [], "terminal_reason": "api_error"
    });
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    base.to_string()
}

#[test]
fn quota_waits_until_the_reported_reset() {
    let resets = NOW + 3600;
    let event = format!(
        r#"{{"type":"rate_limit_event","rate_limit_info":{{"status":"rejected","resetsAt":{resets},"rateLimitType":"five_hour","overageStatus":"rejected","isUsingOverage":false}}}}"#
    );
    let result = result_line(serde_json::json!({
        "api_error_status": 429,
        "result": "You've hit your limit · resets 2pm (Europe/Berlin)"
    }));
    let stdout = format!("{event}\n{result}\n");
    let got = assert_class(
        run(stdout.as_bytes(), "", Some(1), Flags::default()),
        Quota,
        "q",
    );
    assert_eq!(got.wait_hint_secs, Some(3600));

    // Reset already past: no wait, still quota.
    let past = stdout.replace(&resets.to_string(), &(NOW - 5).to_string());
    let got = assert_class(
        run(past.as_bytes(), "", Some(1), Flags::default()),
        Quota,
        "past",
    );
    assert_eq!(got.wait_hint_secs, Some(0));

    // Older CLIs: the reset time only in the text.
    let old = result_line(serde_json::json!({
        "result": format!("Claude AI usage limit reached|{}", NOW + 60)
    }));
    let got = assert_class(
        run(old.as_bytes(), "", Some(1), Flags::default()),
        Quota,
        "old",
    );
    assert_eq!(got.wait_hint_secs, Some(60));

    // An allowed_warning event is informational: a 429 with it is a plain rate limit.
    let warning = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1778565600}}"#;
    let plain = format!(
        "{warning}\n{}\n",
        result_line(
            serde_json::json!({"api_error_status": 429, "result": "API Error: Request rejected (429)"})
        )
    );
    assert_class(
        run(plain.as_bytes(), "", Some(1), Flags::default()),
        RateLimit,
        "warn",
    );
}

#[test]
fn cases_no_fixture_captures() {
    /// name, stdout, stderr, exit code, runner flags, expected class.
    type Case<'a> = (&'a str, String, &'a str, Option<i32>, Flags, FailureClass);
    let cases: Vec<Case> = vec![
        (
            "prompt too long",
            result_line(serde_json::json!({"api_error_status": 400, "result": "Prompt is too long"})),
            "",
            Some(1),
            Flags::default(),
            ContextWindow,
        ),
        (
            "server error 500",
            result_line(serde_json::json!({"api_error_status": 500, "result": "API Error: 500 Internal server error"})),
            "",
            Some(1),
            Flags::default(),
            Overloaded,
        ),
        (
            "agent binary missing",
            String::new(),
            "env: 'claude': No such file or directory\n",
            Some(127),
            Flags::default(),
            ToolingEnv,
        ),
        (
            "disk full on the CLI's stderr",
            String::new(),
            "Error: ENOSPC: no space left on device, write\n",
            Some(1),
            Flags::default(),
            ToolingEnv,
        ),
        (
            "killed by someone else",
            String::new(),
            "",
            None,
            Flags {
                killed: true,
                ..Flags::default()
            },
            Killed,
        ),
        (
            "idle",
            r#"{"type":"system","subtype":"init","session_id":"s"}"#.to_string(),
            "",
            None,
            Flags {
                idle: true,
                ..Flags::default()
            },
            Idle,
        ),
        (
            "killed during CLI retries of a 401",
            r#"{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2000,"error_status":401,"error":"authentication_failed"}"#.to_string(),
            "",
            None,
            Flags {
                timed_out: true,
                ..Flags::default()
            },
            Auth,
        ),
        (
            "timed out during CLI retries of a 529",
            r#"{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2000,"error_status":529,"error":"overloaded"}"#.to_string(),
            "",
            None,
            Flags {
                timed_out: true,
                ..Flags::default()
            },
            Overloaded,
        ),
        (
            "crash with nothing to go on",
            String::new(),
            "",
            Some(1),
            Flags::default(),
            Unknown,
        ),
        (
            "write denied outside the temp dir",
            result_line(serde_json::json!({
                "is_error": false, "terminal_reason": "completed",
                "permission_denials": [{"tool_name": "Write", "tool_input": {"file_path": "/etc/hosts"}}]
            })),
            "",
            Some(0),
            Flags::default(),
            PermissionDenied,
        ),
    ];
    for (name, stdout, stderr, exit, flags, want) in cases {
        assert_class(run(stdout.as_bytes(), stderr, exit, flags), want, name);
    }
}

#[test]
fn benign_denials_do_not_fail_a_step() {
    let stdout = result_line(serde_json::json!({
        "is_error": false, "terminal_reason": "completed",
        "permission_denials": [
            {"tool_name": "AskUserQuestion", "tool_input": {}},
            {"tool_name": "ExitPlanMode", "tool_input": {}},
            {"tool_name": "EnterPlanMode"},
            {"tool_name": "Write", "tool_input": {"file_path": "/tmp/scratch/notes.txt"}}
        ]
    }));
    assert!(run(stdout.as_bytes(), "", Some(0), Flags::default()).is_none());
    // `/tmpfoo` is not inside `/tmp`.
    let sneaky = stdout.replace("/tmp/scratch", "/tmpfoo");
    assert_class(
        run(sneaky.as_bytes(), "", Some(0), Flags::default()),
        PermissionDenied,
        "tmpfoo",
    );
}

#[test]
fn precedence_is_as_documented() {
    // A timeout with test failures in the tail is a timeout.
    let out = String::from_utf8(fixture("tool-output", "cargo-test-failure.txt")).unwrap();
    let timed_out = Flags {
        timed_out: true,
        ..Flags::default()
    };
    assert_class(run(out.as_bytes(), "", None, timed_out), Timeout, "timeout");
    // Max turns while tests fail: the agent-reported reason wins over tool output.
    let stream = wrapped_in_stream(&out, true).replace(
        r#""subtype":"error_during_execution""#,
        r#""subtype":"error_max_turns","terminal_reason":"max_turns""#,
    );
    assert_class(
        run(stream.as_bytes(), "", Some(1), Flags::default()),
        MaxTurns,
        "turns",
    );
    // Auth beats a timeout.
    let auth = fixture("claude-cli", "auth.jsonl");
    assert_class(run(&auth, "", None, timed_out), Auth, "auth+timeout");
    // A compile error beats the test harness's own failure line.
    let go = String::from_utf8(fixture("tool-output", "go-build-failed.txt")).unwrap();
    assert_class(
        run(go.as_bytes(), "", Some(1), Flags::default()),
        BuildCompile,
        "go",
    );
}

#[test]
fn post_check_failures() {
    let a = classify_post_check("writeSpecs", "specs/7-demo/design.md is missing");
    assert_eq!(a.class, PostCheck);
    assert_eq!(
        a.summary,
        "POST_CHECK: writeSpecs: specs/7-demo/design.md is missing"
    );
    assert_eq!(
        a.signature,
        classify_post_check("writeSpecs", "specs/7-demo/design.md is missing").signature
    );
}
