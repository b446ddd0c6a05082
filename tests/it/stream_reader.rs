//! The stream-json reader on real CLI output and on everything that goes wrong with it:
//! arbitrary chunking, malformed and truncated lines, non-UTF-8 bytes, a `rate_limit_event`
//! spliced into another line, single-JSON output, gigantic lines, and 100 MB of input with
//! bounded memory.

use sdlc_runner::agent::stream::{
    soft_failure, PermissionDenial, ResultEvent, SoftFailure, StreamReader, StreamSummary,
    MAX_BUFFERED_BYTES, MAX_LINE_BYTES, MAX_RESULT_TEXT,
};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-cli")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn read_all(bytes: &[u8]) -> StreamSummary {
    let mut reader = StreamReader::new();
    reader.feed(bytes);
    reader.finish()
}

fn read_chunked(bytes: &[u8], cuts: &[usize]) -> StreamSummary {
    let mut reader = StreamReader::new();
    let mut start = 0;
    for &cut in cuts {
        reader.feed(&bytes[start..cut]);
        start = cut;
    }
    reader.feed(&bytes[start..]);
    reader.finish()
}

fn fixture_names() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}

#[test]
fn real_fixtures_give_the_documented_results() {
    let success = read_all(&fixture("success.jsonl"));
    let result = success.result.as_ref().unwrap();
    assert_eq!(result.subtype, "success");
    assert!(!result.is_error);
    assert_eq!(result.terminal_reason.as_deref(), Some("completed"));
    assert_eq!(
        result.result_text.as_deref(),
        Some("Hello from the fake API.")
    );
    assert_eq!(result.total_cost_usd, Some(0.00068));
    assert_eq!(result.num_turns, Some(1));
    assert!(result.duration_ms.is_some());
    assert_eq!(
        success.session_id.as_deref(),
        Some("9357146f-d02e-4363-9561-18fff5059aa9")
    );
    assert_eq!(success.malformed_lines, 0);
    assert_eq!(soft_failure(result, Path::new("/tmp")), None);

    let turns = read_all(&fixture("tool-loop.jsonl"));
    let result = turns.result.unwrap();
    assert_eq!(result.subtype, "error_max_turns");
    assert_eq!(result.num_turns, Some(4));
    assert_eq!(
        result.result_text.as_deref(),
        Some("Reached maximum number of turns (3)")
    );

    let auth = read_all(&fixture("auth.jsonl"));
    assert_eq!(auth.assistant_errors, vec!["authentication_failed"]);
    assert_eq!(auth.api_error_status, Some(401));
    let result = auth.result.as_ref().unwrap();
    assert_eq!(result.api_error_status, Some(401));
    assert_eq!(result.terminal_reason.as_deref(), Some("api_error"));
    assert_eq!(
        soft_failure(result, Path::new("/tmp")),
        Some(SoftFailure::IsError)
    );
    assert_eq!(
        auth.last_api_retry.as_ref().unwrap().error_status,
        Some(401)
    );

    let nologin = read_all(&fixture("not-logged-in.jsonl"));
    assert_eq!(
        nologin.api_error_message.as_deref(),
        Some("Not logged in · Please run /login")
    );
    assert_eq!(nologin.result.unwrap().api_error_status, None);

    let ask = read_all(&fixture("ask-user.jsonl"));
    let result = ask.result.unwrap();
    assert_eq!(
        result.permission_denials,
        vec![PermissionDenial {
            tool_name: "Bash".into(),
            path: None
        }]
    );
    assert_eq!(
        soft_failure(&result, Path::new("/tmp")),
        Some(SoftFailure::PermissionDenied(vec!["Bash".into()]))
    );

    let slow = read_all(&fixture("slow.jsonl"));
    assert!(slow.result.is_none());
    assert!(slow.session_id.is_some());

    let refusal = read_all(&fixture("root-refusal.jsonl"));
    assert_eq!(refusal, StreamSummary::default());
}

#[test]
fn one_byte_chunks_and_strided_cuts_match_one_shot_on_every_fixture() {
    for name in fixture_names() {
        let bytes = fixture(&name);
        let whole = read_all(&bytes);
        let mut reader = StreamReader::new();
        for b in &bytes {
            reader.feed(std::slice::from_ref(b));
        }
        assert_eq!(reader.finish(), whole, "{name}: one byte at a time");
        for cut in (0..=bytes.len()).step_by(211) {
            assert_eq!(read_chunked(&bytes, &[cut]), whole, "{name}: cut at {cut}");
        }
    }
}

/// A small stream with multi-byte characters, a spliced event and a result.
fn small_stream() -> String {
    let assistant = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Größe — ok · 日本"}]},"session_id":"abc"}"#;
    let (head, tail) = assistant.split_at(60);
    let event = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600,"rateLimitType":"five_hour"}}"#;
    format!(
        "{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"abc\"}}\n\n{head}{event}\n{tail}\n{}\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"fertig · 完了","session_id":"abc","num_turns":2,"permission_denials":[]}"#
    )
}

#[test]
fn every_byte_boundary_gives_the_same_summary() {
    let text = small_stream();
    let bytes = text.as_bytes();
    let whole = read_all(bytes);
    assert_eq!(whole.quota_resets_at, Some(1_778_565_600));
    assert_eq!(whole.malformed_lines, 0, "{whole:#?}");
    assert_eq!(
        whole.result.as_ref().unwrap().result_text.as_deref(),
        Some("fertig · 完了")
    );
    for cut in 0..=bytes.len() {
        assert_eq!(read_chunked(bytes, &[cut]), whole, "cut at {cut}");
    }
    for a in (0..bytes.len()).step_by(7) {
        for b in (a..=bytes.len()).step_by(13) {
            assert_eq!(read_chunked(bytes, &[a, b]), whole, "cuts at {a}, {b}");
        }
    }
}

#[test]
fn malformed_truncated_and_non_utf8_input_is_tolerated() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"not json at all\n");
    bytes.extend_from_slice(b"{\"type\":\"assistant\",\"message\":{\"content\":\"caf\xe9 \xff\xfe\"},\"error\":\"rate_limit\"}\n");
    bytes.extend_from_slice(b"   \r\n\t\n");
    bytes.extend_from_slice(b"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"first\"}\r\n");
    bytes.extend_from_slice(b"[1,2,3]\n");
    bytes.extend_from_slice(b"null\n");
    bytes.extend_from_slice(b"{\"type\":\"result\",\"subtype\":\"error_during_exec"); // cut off
    let summary = read_all(&bytes);
    assert_eq!(summary.assistant_errors, vec!["rate_limit"]);
    assert_eq!(
        summary.result.as_ref().unwrap().result_text.as_deref(),
        Some("first")
    );
    assert_eq!(summary.lines, 6);
    assert_eq!(summary.malformed_lines, 4);

    // A truncated last line that is complete JSON (no trailing newline) is still read.
    let summary = read_all(br#"{"type":"result","subtype":"error_max_turns","is_error":true}"#);
    assert_eq!(summary.result.unwrap().subtype, "error_max_turns");
}

#[test]
fn spliced_rate_limit_event_inside_one_line() {
    let host = r#"{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s9"}"#;
    let (head, tail) = host.split_at(40);
    let event = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600}}"#;
    let line = format!("{head}{event}{tail}\n");
    let summary = read_all(line.as_bytes());
    assert!(summary.saw_rate_limit_event);
    assert_eq!(summary.quota_resets_at, Some(1_778_565_600));
    assert_eq!(summary.result.unwrap().result_text.as_deref(), Some("done"));
    assert_eq!(summary.session_id.as_deref(), Some("s9"));
    assert_eq!(summary.malformed_lines, 0);
}

#[test]
fn spliced_rate_limit_event_that_splits_the_host_line() {
    // As reported against CLI 2.1.74: the event's own newline cuts the host line in two.
    let host = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your limit · resets 2pm","session_id":"s9"}"#;
    for at in [1, 30, 80, host.len() - 1] {
        let (head, tail) = host.split_at(at);
        let event = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600,"rateLimitType":"five_hour"},"session_id":"s9"}"#;
        let text = format!("{head}{event}\n{tail}\n");
        let summary = read_all(text.as_bytes());
        assert_eq!(
            summary.quota_resets_at,
            Some(1_778_565_600),
            "split at {at}"
        );
        let result = summary
            .result
            .unwrap_or_else(|| panic!("split at {at}: result lost"));
        assert_eq!(result.api_error_status, Some(429));
        assert_eq!(summary.malformed_lines, 0, "split at {at}");
    }
    // An allowed event later clears the exhaustion.
    let text = concat!(
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1778565600}}"#,
        "\n",
        r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1778569200}}"#,
        "\n"
    );
    let summary = read_all(text.as_bytes());
    assert!(summary.saw_rate_limit_event);
    assert_eq!(summary.quota_resets_at, None);
}

#[test]
fn single_json_output_even_pretty_printed() {
    let value = serde_json::json!({
        "type": "result", "subtype": "error_max_turns", "is_error": true,
        "num_turns": 21, "session_id": "one-shot", "total_cost_usd": 1.25,
        "permission_denials": [{"tool_name": "Write", "tool_input": {"file_path": "/etc/passwd"}}]
    });
    for text in [
        value.to_string(),
        serde_json::to_string_pretty(&value).unwrap(),
    ] {
        for cut in 0..=text.len() {
            let summary = read_chunked(text.as_bytes(), &[cut]);
            let result = summary.result.as_ref().expect("result from single JSON");
            assert_eq!(result.subtype, "error_max_turns");
            assert_eq!(result.total_cost_usd, Some(1.25));
            assert_eq!(
                result.permission_denials[0].path.as_deref(),
                Some("/etc/passwd")
            );
            assert_eq!(summary.session_id.as_deref(), Some("one-shot"));
            assert_eq!(summary.malformed_lines, 0);
        }
    }
}

#[test]
fn gigantic_lines_are_skipped_not_held() {
    let mut reader = StreamReader::new();
    reader.feed(b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"big\"}\n");
    let chunk = vec![b'x'; 1024 * 1024];
    // A 9 MiB line in 1 MiB chunks.
    reader.feed(b"{\"type\":\"user\",\"content\":\"");
    for _ in 0..9 {
        reader.feed(&chunk);
        assert!(reader.buffered_bytes() <= MAX_LINE_BYTES + 64 * 1024);
    }
    reader.feed(
        b"\"}\n{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"",
    );
    // The result text itself is long: kept truncated.
    reader.feed(&vec![b'r'; 10_000]);
    reader.feed(b"\"}\n");
    let summary = reader.finish();
    assert_eq!(summary.lines, 3);
    assert_eq!(summary.malformed_lines, 1);
    let text = summary.result.unwrap().result_text.unwrap();
    assert_eq!(text.len(), MAX_RESULT_TEXT);
}

#[test]
fn hundred_megabytes_through_feed_keep_memory_bounded() {
    let mut reader = StreamReader::new();
    reader.feed(b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n");
    let normal = br#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"working"}]},"session_id":"s"}"#;
    let mut block = Vec::new();
    while block.len() < 64 * 1024 {
        block.extend_from_slice(normal);
        block.push(b'\n');
    }
    let giant = vec![b'g'; 1024 * 1024];
    let mut fed = 0usize;
    let mut max_buffered = 0usize;
    let mut round = 0u32;
    while fed < 100 * 1024 * 1024 {
        if round % 16 == 0 {
            // A 5 MiB line without a newline until the end: over the cap.
            for _ in 0..5 {
                reader.feed(&giant);
                fed += giant.len();
                max_buffered = max_buffered.max(reader.buffered_bytes());
            }
            reader.feed(b"\n");
        } else {
            reader.feed(&block);
            fed += block.len();
        }
        max_buffered = max_buffered.max(reader.buffered_bytes());
        assert!(reader.buffered_bytes() <= MAX_BUFFERED_BYTES);
        round += 1;
    }
    reader.feed(br#"{"type":"result","subtype":"success","is_error":false,"result":"end"}"#);
    let summary = reader.finish();
    assert_eq!(summary.result.unwrap().result_text.as_deref(), Some("end"));
    // Only the line buffer is in use once the stream is known to be stream-json, and it
    // never reaches the full cap because over-long lines are dropped as soon as they pass it.
    assert!(
        max_buffered <= MAX_LINE_BYTES,
        "max buffered {max_buffered}"
    );
    assert!(summary.malformed_lines >= 5);
}

#[test]
fn soft_failure_rules() {
    let tmp = Path::new("/tmp/run-42");
    let base = ResultEvent {
        subtype: "success".into(),
        ..ResultEvent::default()
    };
    assert_eq!(soft_failure(&base, tmp), None);
    let max_turns = ResultEvent {
        subtype: "error_max_turns".into(),
        is_error: true,
        ..base.clone()
    };
    assert_eq!(
        soft_failure(&max_turns, tmp),
        Some(SoftFailure::ErrorSubtype("error_max_turns".into()))
    );
    let during = ResultEvent {
        subtype: "error_during_execution".into(),
        ..base.clone()
    };
    assert!(matches!(
        soft_failure(&during, tmp),
        Some(SoftFailure::ErrorSubtype(_))
    ));
    let api = ResultEvent {
        is_error: true,
        ..base.clone()
    };
    assert_eq!(soft_failure(&api, tmp), Some(SoftFailure::IsError));
    let denial = |tool: &str, path: Option<&str>| PermissionDenial {
        tool_name: tool.into(),
        path: path.map(str::to_string),
    };
    let benign = ResultEvent {
        permission_denials: vec![
            denial("AskUserQuestion", None),
            denial("EnterPlanMode", None),
            denial("ExitPlanMode", None),
            denial("Write", Some("/tmp/run-42/notes.md")),
            denial("Edit", Some("/tmp/run-42/a/b.rs")),
        ],
        ..base.clone()
    };
    assert_eq!(soft_failure(&benign, tmp), None);
    let serious = ResultEvent {
        permission_denials: vec![
            denial("AskUserQuestion", None),
            denial("Write", Some("/tmp/run-42/../../etc/passwd")),
            denial("Edit", Some("/tmp/run-421/x")),
            denial("Bash", None),
        ],
        ..base
    };
    assert_eq!(
        soft_failure(&serious, tmp),
        Some(SoftFailure::PermissionDenied(vec![
            "Write".into(),
            "Edit".into(),
            "Bash".into()
        ]))
    );
}
