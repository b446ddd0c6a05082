//! Hostile input never panics: arbitrary bytes and mutations of valid documents fed to the
//! config loader, the state file loader, the stream-json reader and the local tracker each
//! give a value or a clear error, and an error never quotes raw control bytes back.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_runner::agent::stream::StreamReader;
use sdlc_runner::artifacts::{self, StateLoad};
use sdlc_runner::config::Config;
use sdlc_runner::services::local::Local;
use std::path::Path;

const JOURNAL: &str = concat!(
    r#"{"seq":1,"time":"2026-01-01T00:00:00.000Z","session":"s","kind":"sessionStart","limits":{"max_retries_per_step":3,"max_bounce_retries":3,"max_consecutive_escalations":2,"max_consecutive_same_failure":2,"max_consecutive_failures":[0,0,0,0,0,3,0,0,0,0],"max_rate_limit_waits":5,"backoff_initial_secs":60,"backoff_max_secs":900,"max_quota_wait_secs":21600,"max_repair_iterations":2,"simplify_enabled":true,"per_issue_budget_micros":null,"per_session_budget_micros":null,"per_issue_budget_ms":null,"manual_approval":false},"mode":"Continuous","pid":1,"version":"0"}"#,
    "\n",
    r#"{"seq":2,"time":"2026-01-01T00:00:00.000Z","session":"s","kind":"event","event":{"event":"start"},"state":"Selecting"}"#,
    "\n",
    r#"{"seq":3,"time":"2026-01-01T00:00:00.000Z","session":"s","kind":"effect","effect":{"effect":"selectIssue"},"state":"Selecting"}"#,
    "\n"
);
const GH_ISSUES: &str = r#"[{"number": 3, "title": "T", "body": "Depends on: #2", "state": "open", "state_reason": null, "labels": [{"name": "automatable"}], "milestone": null, "parent_issue_url": "https://api.github.com/repos/o/r/issues/1"}]"#;
const GH_PRS: &str = r#"[{"number": 7, "html_url": "https://example.invalid/pr/7", "state": "closed", "merged_at": "2026-01-01T00:00:00Z"}, {"number": 9, "html_url": "u", "state": "open", "merged_at": null}]"#;
const GH_CHECKS: &str = r#"{"total_count": 2, "check_runs": [{"name": "a", "status": "completed", "conclusion": "success"}, {"name": "b", "status": "in_progress", "conclusion": null}]}"#;
const GH_STATUSES: &str =
    r#"{"state": "success", "statuses": [{"context": "ci/x", "state": "success"}]}"#;
const EXAMPLE: &str = include_str!("../../examples/sdlc-config.json");
const STATE: &str = r#"{"currentStep": 3, "lastCompletedStep": 2, "currentIssue": 7, "currentBranch": "7-x", "featureName": "x", "retries": {"verify": 1}, "runnerPid": 12}"#;
const ISSUE: &str = r#"{"number": 1, "title": "T", "state": "open", "labels": ["automatable"], "body": "Depends on: #2"}"#;
const STREAM: &str = concat!(
    r#"{"type":"system","subtype":"init","session_id":"s"}"#,
    "\n",
    r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}"#,
    "\n",
    r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"total_cost_usd":0.1,"result":"ok"}"#,
    "\n"
);

/// A valid document with a few bytes flipped, inserted, removed, or cut short.
fn mutated(valid: &'static str) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 0..6),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(move |(edits, cut, truncate)| {
            let mut bytes = valid.as_bytes().to_vec();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    break;
                }
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    _ => {
                        bytes.remove(i);
                    }
                }
            }
            if truncate && !bytes.is_empty() {
                bytes.truncate(cut.index(bytes.len()));
            }
            bytes
        })
}

fn input(valid: &'static str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..400), mutated(valid)]
}

/// A message fit for a terminal: no control characters but line breaks.
fn printable(message: &str) -> bool {
    !message.chars().any(|c| c.is_control() && c != '\n')
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 500,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/hostile_input.txt"
        )))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_config_loader_never_panics_and_never_echoes_raw_bytes(bytes in input(EXAMPLE)) {
        if let Err(e) = Config::from_bytes(&bytes, Path::new("sdlc-config.json")) {
            for line in e.lines() {
                prop_assert!(line.starts_with("sdlc-config.json"), "{line:?}");
                prop_assert!(printable(&line), "{line:?}");
            }
        }
    }

    #[test]
    fn the_journal_reader_never_panics_and_never_echoes_raw_bytes(bytes in input(JOURNAL)) {
        let path = Path::new("journal.jsonl");
        match sdlc_runner::journal::parse(&bytes, path) {
            Ok(contents) => {
                if let Some(torn) = &contents.torn_line {
                    prop_assert!(printable(torn), "{torn:?}");
                }
                if let Err(e) = sdlc_runner::journal::recover(&contents.lines, path) {
                    let message = e.to_string();
                    prop_assert!(printable(&message), "{message:?}");
                }
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains("journal.jsonl:"), "{message}");
                prop_assert!(printable(&message), "{message:?}");
            }
        }
    }

    #[test]
    fn the_gh_json_readers_never_panic_and_never_echo_raw_bytes(
        issues in input(GH_ISSUES),
        prs in input(GH_PRS),
        checks in input(GH_CHECKS),
        statuses in input(GH_STATUSES),
    ) {
        let gh = sdlc_runner::services::github::GitHub::new(std::path::PathBuf::from("."));
        let text = String::from_utf8_lossy(&issues);
        if let Err(e) = gh.parse_issue_list(&text) {
            prop_assert!(printable(&e.to_string()), "{e}");
        }
        if let Err(e) = gh.parse_issue(&text) {
            prop_assert!(printable(&e.to_string()), "{e}");
        }
        if let Err(e) = sdlc_runner::services::github::forge::parse_prs(&prs) {
            prop_assert!(printable(&e), "{e:?}");
        }
        if let Err(e) = sdlc_runner::services::github::forge::parse_checks(&checks, &statuses) {
            prop_assert!(printable(&e), "{e:?}");
        }
    }

    #[test]
    fn the_state_file_loader_never_panics(bytes in input(STATE)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = artifacts::state_path(dir.path());
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, &bytes).expect("write");
        if let StateLoad::Corrupt { error, .. } = artifacts::read_state(dir.path(), &dir.path().join("archive")) {
            prop_assert!(error.contains("not a valid state file"), "{error}");
        }
    }

    #[test]
    fn the_stream_reader_never_panics_whatever_the_chunks(
        bytes in input(STREAM),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut reader = StreamReader::new();
        let mut positions: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        positions.sort_unstable();
        let mut last = 0;
        for p in positions {
            reader.feed(&bytes[last..p]);
            last = p;
        }
        reader.feed(&bytes[last..]);
        let _ = reader.finish();
    }

    #[test]
    fn the_local_tracker_reports_a_bad_issue_file_without_panicking(bytes in input(ISSUE)) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("1.json"), &bytes).expect("write");
        let tracker = Local::new(dir.path());
        if let Err(e) = tracker.get(1) {
            let message = e.to_string();
            prop_assert!(message.contains("1.json"), "{message}");
        }
    }
}

#[test]
fn the_journal_sample_is_a_valid_journal() {
    let contents =
        sdlc_runner::journal::parse(JOURNAL.as_bytes(), Path::new("journal.jsonl")).expect("valid");
    assert_eq!(contents.lines.len(), 3);
    assert!(contents.torn_line.is_none());
}

#[test]
fn the_gh_samples_parse() {
    let gh = sdlc_runner::services::github::GitHub::new(std::path::PathBuf::from("."));
    let issues = gh.parse_issue_list(GH_ISSUES).expect("issues");
    assert_eq!((issues[0].number, issues[0].parent), (3, Some(1)));
    let pr = sdlc_runner::services::github::forge::parse_prs(GH_PRS.as_bytes()).expect("prs");
    assert_eq!(pr.map(|p| p.number), Some(9), "an open PR wins");
    assert_eq!(
        sdlc_runner::services::github::forge::parse_checks(
            GH_CHECKS.as_bytes(),
            GH_STATUSES.as_bytes()
        ),
        Ok(sdlc_runner::forge::CiState::Pending)
    );
}
