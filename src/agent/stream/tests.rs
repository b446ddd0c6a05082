use super::soft_failure::path_is_under;
use super::*;
use std::path::Path;

fn read(text: &str) -> StreamSummary {
    let mut reader = StreamReader::new();
    reader.feed(text.as_bytes());
    reader.finish()
}

#[test]
fn last_result_wins_and_unknown_events_are_ignored() {
    let summary = read(concat!(
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\"}\n",
        "\n",
        "{\"type\":\"something_new\",\"x\":1}\n",
        "{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":true}\n",
        "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"session_id\":\"s2\",\"num_turns\":2}\n",
    ));
    let result = summary.result.unwrap();
    assert_eq!(result.subtype, "success");
    assert_eq!(result.num_turns, Some(2));
    assert_eq!(summary.session_id.as_deref(), Some("s2"));
    assert_eq!(summary.lines, 4);
    assert_eq!(summary.malformed_lines, 0);
}

#[test]
fn temp_dir_containment_is_by_component() {
    let tmp = Path::new("/tmp");
    assert!(path_is_under(Path::new("/tmp/x/y.txt"), tmp));
    assert!(!path_is_under(Path::new("/tmpfoo/y.txt"), tmp));
    assert!(!path_is_under(Path::new("/tmp/../etc/shadow"), tmp));
    assert!(!path_is_under(Path::new("relative/tmp"), tmp));
    let mac = Path::new("/var/folders/ab/cd/T");
    assert!(path_is_under(
        Path::new("/private/var/folders/ab/cd/T/x"),
        mac
    ));
}

#[test]
fn resets_at_in_milliseconds_or_rfc3339() {
    assert_eq!(
        epoch_seconds(&Value::from(1_778_565_600_000i64)),
        Some(1_778_565_600)
    );
    assert_eq!(
        epoch_seconds(&Value::from("2026-05-12T06:00:00Z")),
        Some(1_778_565_600)
    );
}
