use super::parse::{parse_chunked, parse_range};
use super::*;

fn line(seq: u64, session: &str, record: Record) -> String {
    let mut s = serde_json::to_string(&Line {
        v: FORMAT,
        seq,
        time: "2026-01-01T00:00:00.000Z".into(),
        session: session.into(),
        record,
    })
    .unwrap();
    s.push('\n');
    s
}

fn start(seq: u64, session: &str) -> String {
    line(
        seq,
        session,
        Record::SessionStart {
            limits: Box::default(),
            mode: Mode::Continuous,
            pid: 1,
            version: "0".into(),
        },
    )
}

fn event(seq: u64, session: &str, event: Event) -> String {
    line(
        seq,
        session,
        Record::Event {
            event,
            state: "Selecting".into(),
            said: None,
        },
    )
}

/// The chunked parse gives exactly what one pass gives, at every number of chunks, for a
/// good journal, blank lines, a torn tail, garbage and a seq that goes back.
#[test]
fn parsing_in_chunks_equals_one_pass() {
    let p = Path::new("j.jsonl");
    let mut good = start(1, "a");
    for seq in 2..60 {
        good.push_str(&event(seq, "a", Event::WaitOver));
        if seq % 7 == 0 {
            good.push_str("\n   \n");
        }
    }
    let torn = good.clone() + &event(60, "a", Event::WaitOver)[..20];
    let mut garbage = good.clone();
    garbage.insert_str(
        good.len() / 2 + (good[good.len() / 2..].find('\n').unwrap_or(0)) + 1,
        "not json\n",
    );
    let mut backwards = good.clone();
    let at = good.len() * 2 / 3 + good[good.len() * 2 / 3..].find('\n').unwrap_or(0) + 1;
    backwards.insert_str(at, &event(3, "a", Event::WaitOver));
    for text in [&good, &torn, &garbage, &backwards] {
        let one = parse_range(text.as_bytes(), 0, text.len(), p);
        for threads in 2..12 {
            let many = parse_chunked(text.as_bytes(), p, threads);
            match (&one, &many) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.lines, b.lines, "{threads} chunks");
                    assert_eq!(a.valid_len, b.valid_len, "{threads} chunks");
                    assert_eq!(a.torn_line, b.torn_line, "{threads} chunks");
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string(), "{threads} chunks")
                }
                (a, b) => panic!("{threads} chunks: {:?} vs {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }
    assert!(parse_range(backwards.as_bytes(), 0, backwards.len(), p).is_err());
    assert!(parse_range(garbage.as_bytes(), 0, garbage.len(), p).is_err());
}

#[test]
fn blank_lines_are_skipped_and_a_zero_filled_tail_is_torn() {
    let p = Path::new("j.jsonl");
    let mut text = start(1, "a") + "\n  \n" + &event(2, "a", Event::Start);
    let valid = text.len() as u64;
    text.push_str("\0\0\0\0");
    let c = parse(text.as_bytes(), p).unwrap();
    assert_eq!(c.lines.len(), 2);
    assert_eq!(c.valid_len, valid);
    assert!(c.torn_line.unwrap().contains("line 5"));
}

#[test]
fn a_garbage_last_line_with_its_newline_is_torn_too() {
    let p = Path::new("j.jsonl");
    let text = start(1, "a") + "{\"seq\": 2, \"kind\": \"nonsen\n";
    let c = parse(text.as_bytes(), p).unwrap();
    assert_eq!(c.lines.len(), 1);
    assert!(c.torn_line.is_some());
}

#[test]
fn a_complete_record_of_an_unknown_kind_is_an_error_naming_it_wherever_it_is() {
    let p = Path::new("j.jsonl");
    let future = "{\"v\":2,\"seq\":2,\"time\":\"t\",\"session\":\"a\",\"kind\":\"lease\"}\n";
    for text in [
        start(1, "a") + future,
        start(1, "a") + future + &event(3, "a", Event::Start),
    ] {
        let err = parse(text.as_bytes(), p).unwrap_err();
        assert!(
            matches!(&err, JournalError::UnknownRecord { line: 2, kind, .. } if kind.contains("lease")),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("j.jsonl:2:") && msg.contains("left as it is"),
            "{msg}"
        );
    }
    // Without its newline it may be a cut write: torn, as before.
    let c = parse((start(1, "a") + future.trim_end()).as_bytes(), p).unwrap();
    assert!(c.torn_line.is_some());
}

#[test]
fn a_line_of_a_newer_format_is_an_error_naming_it_wherever_it_is() {
    let p = Path::new("j.jsonl");
    let newer = "{\"v\":3,\"seq\":2,\"time\":\"t\",\"session\":\"a\",\"kind\":\"lease\"}\n";
    for text in [
        start(1, "a") + newer,
        start(1, "a") + newer.trim_end(),
        start(1, "a") + newer + &event(3, "a", Event::Start),
    ] {
        let err = parse(text.as_bytes(), p).unwrap_err();
        assert!(
            matches!(
                err,
                JournalError::NewerFormat {
                    line: 2,
                    version: 3,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("format 3"), "{err}");
    }
    // A newer line this runner could parse is refused all the same.
    let parsable = event(2, "a", Event::Start).replacen("\"v\":2", "\"v\":9", 1);
    let err = parse((start(1, "a") + &parsable).as_bytes(), p).unwrap_err();
    assert!(
        matches!(err, JournalError::NewerFormat { version: 9, .. }),
        "{err}"
    );
}

#[test]
fn a_journal_without_versions_reads_as_format_1() {
    let p = Path::new("j.jsonl");
    let text = (start(1, "a") + &event(2, "a", Event::Start)).replace("\"v\":2,", "");
    assert!(!text.contains("\"v\""));
    let c = parse(text.as_bytes(), p).unwrap();
    assert_eq!(c.lines.len(), 2);
    assert!(c.lines.iter().all(|l| l.v == 1) && c.torn_line.is_none());
}

#[test]
fn seq_must_increase() {
    let p = Path::new("j.jsonl");
    let text = start(1, "a") + &event(1, "a", Event::Start) + &start(3, "b");
    let err = parse(text.as_bytes(), p).unwrap_err();
    assert!(
        matches!(err, JournalError::Inconsistent { line: 2, .. }),
        "{err}"
    );
}

#[test]
fn a_new_session_supersedes_an_open_one_and_a_halt() {
    let p = Path::new("j.jsonl");
    let halt = HaltReason::AllIssuesBlocked;
    let text = start(1, "a")
        + &event(2, "a", Event::Start)
        + &line(
            3,
            "a",
            Record::SessionEnd {
                end: SessionEnd::Halt {
                    reason: halt,
                    headline: halt.headline(),
                },
            },
        )
        + &start(4, "b")
        + &event(5, "b", Event::Start);
    let c = parse(text.as_bytes(), p).unwrap();
    let rec = recover(&c.lines, p).unwrap();
    assert_eq!(rec.sticky_halt, None);
    let open = rec.open_session.unwrap();
    assert_eq!((open.id.as_str(), open.events.len()), ("b", 1));
    assert_eq!(open.recorded[0].seq, 5);

    let ended = start(1, "a")
        + &line(
            2,
            "a",
            Record::SessionEnd {
                end: SessionEnd::Exit { code: 0 },
            },
        )
        + &event(3, "a", Event::Start);
    let c = parse(ended.as_bytes(), p).unwrap();
    let err = recover(&c.lines, p).unwrap_err();
    assert!(err.to_string().contains("after the session ended"), "{err}");
}

#[test]
fn end_without_a_session_is_refused_except_an_acknowledgement() {
    let dir = tempfile::tempdir().unwrap();
    let (mut j, _) = Journal::open(&dir.path().join("j.jsonl")).unwrap();
    assert!(matches!(
        j.end(SessionEnd::Exit { code: 0 }),
        Err(JournalError::NoSession { .. })
    ));
    j.begin(&Limits::default(), Mode::Continuous).unwrap();
    j.end(SessionEnd::Exit { code: 0 }).unwrap();
    assert!(j.session().is_none());
    j.end(SessionEnd::HaltAcknowledged).unwrap();
}

/// Every merge any session recorded is a fact recovery hands on, ended sessions' included.
#[test]
fn recovery_names_every_issue_any_session_merged() {
    let p = Path::new("j.jsonl");
    let merged = |seq: u64, session: &str, issue: u32| {
        line(
            seq,
            session,
            Record::Effect {
                effect: Effect::RecordMerged { issue, wait: false },
                state: "RecordingMerge".into(),
            },
        )
    };
    let text = start(1, "a")
        + &event(2, "a", Event::IssueSelected { issue: 3 })
        + &merged(3, "a", 3)
        + &line(
            4,
            "a",
            Record::SessionEnd {
                end: SessionEnd::Exit { code: 0 },
            },
        )
        + &start(5, "b")
        + &event(6, "b", Event::AlreadyMerged { issue: 7 })
        + &merged(7, "b", 7);
    let c = parse(text.as_bytes(), p).unwrap();
    let rec = recover(&c.lines, p).unwrap();
    assert_eq!(rec.merged, [3, 7].into());
    assert_eq!(recover(&[], p).unwrap().merged, Default::default());
}
