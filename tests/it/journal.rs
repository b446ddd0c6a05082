//! The write-ahead journal (docs/persistence.md): crash tolerance, session boundaries and sticky halts,
//! counters rebuilt from the journal equal the live machine's, and the `replay` / `status`
//! commands run as the real binary.

#[path = "../../crates/sdlc-machine/tests/props/common/mod.rs"]
mod common;

use common::{drive, Reply};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdlc_runner::failure::{FailureClass, Signature};
use sdlc_runner::journal::{
    self, rebuild, rebuild_session, Journal, JournalError, Record, SessionEnd,
};
use sdlc_runner::machine::{Core, Event, HaltReason, Limits, Mode, State, Usage};
use sdlc_runner::step::Step;
use std::collections::VecDeque;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Feeds `events` to a live core, journaling every step like the driver does, and returns
/// the machine's (state, runner) after each event.
fn record(
    j: &mut Journal,
    core: &mut Core,
    events: &[Event],
) -> Vec<(State, sdlc_runner::machine::Runner)> {
    events
        .iter()
        .map(|e| {
            let fx = core.handle(e).to_vec();
            j.record_step(e, &Default::default(), &fx, core.state())
                .unwrap();
            core.snapshot()
        })
        .collect()
}

fn fail(step: Step, class: FailureClass, sig: u64) -> Event {
    Event::StepFailed {
        step,
        class,
        signature: Signature(sig),
        usage: Usage {
            cost_micros: 250_000,
            elapsed_ms: 60_000,
            turns: 7,
        },
        wait_hint_secs: None,
    }
}

/// Issue 1 fails startCycle twice with one signature: escalated for a repeated failure.
/// Issue 2 then fails the same way: two consecutive escalations halt the session.
/// Two issues escalated in a row, each failing its own way (the same failure on both would be
/// the environment's), each escalation recorded by the tracker: the consecutive-escalations
/// halt.
fn halting_events() -> Vec<Event> {
    let mut ev = vec![Event::Start];
    for issue in [1, 2] {
        ev.push(Event::IssueSelected { issue });
        for _ in 0..2 {
            ev.push(Event::PreconditionsOk {
                step: Step::StartCycle,
            });
            ev.push(fail(
                Step::StartCycle,
                FailureClass::TestAssertion,
                6 + u64::from(issue),
            ));
        }
        ev.push(Event::TrackerUpdated);
    }
    ev
}

fn tmp_journal() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    (dir, path)
}

#[test]
fn a_crashed_session_is_continued_with_its_counters() {
    let (_dir, path) = tmp_journal();
    let limits = Limits::default();
    let events = &halting_events()[..8]; // issue 1 escalated, issue 2 selected
    let (mut j, rec) = Journal::open(&path).unwrap();
    assert_eq!(rec.lines, 0);
    assert!(rec.open_session.is_none());
    let id = j.begin(&limits, Mode::Continuous).unwrap();
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let snaps = record(&mut j, &mut core, events);
    assert_eq!(core.runner().consecutive_escalations, 1);
    drop(j); // kill -9: nothing more is written

    let (mut j, rec) = Journal::open(&path).unwrap();
    assert!(rec.torn_line.is_none());
    assert!(rec.sticky_halt.is_none());
    let open = rec.open_session.expect("the session did not end");
    assert_eq!(open.id, id);
    assert_eq!(open.events, events);
    let (rebuilt, divergence) = rebuild_session(&open);
    assert_eq!(divergence, None);
    assert_eq!(rebuilt.snapshot(), *snaps.last().unwrap());
    assert_eq!(rebuilt.escalated().iter().copied().collect::<Vec<_>>(), [1]);

    // Continuing appends to the same session, seq carrying on.
    j.continue_session(&open.id);
    let mut core = rebuilt;
    let fx = core.handle(&Event::Start).to_vec();
    j.record_step(&Event::Start, &Default::default(), &fx, core.state())
        .unwrap();
    let lines = journal::read_contents(&path).unwrap().lines;
    let seqs: Vec<u64> = lines.iter().map(|l| l.seq).collect();
    assert_eq!(seqs, (1..=lines.len() as u64).collect::<Vec<_>>());
    assert!(lines.iter().all(|l| l.session == id));
    assert!(chrono::DateTime::parse_from_rfc3339(&lines[0].time).is_ok());
}

#[test]
fn a_halt_is_sticky_until_acknowledged() {
    let (_dir, path) = tmp_journal();
    let limits = Limits::default();
    let (mut j, _) = Journal::open(&path).unwrap();
    let first = j.begin(&limits, Mode::Continuous).unwrap();
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    record(&mut j, &mut core, &halting_events());
    let State::Halted { reason } = *core.state() else {
        panic!("expected a halt, got {:?}", core.state())
    };
    assert!(matches!(reason, HaltReason::ConsecutiveEscalations { .. }));
    j.end(SessionEnd::Halt {
        reason,
        headline: reason.headline(),
    })
    .unwrap();
    drop(j);

    let (mut j, rec) = Journal::open(&path).unwrap();
    assert!(rec.open_session.is_none());
    assert_eq!(
        rec.sticky_halt,
        Some((
            first.clone(),
            "FAILURE LOOP DETECTED: consecutive escalations".to_string()
        ))
    );
    assert_eq!(
        rec.last_session.as_ref().map(|s| s.id.as_str()),
        Some(first.as_str())
    );
    // Read-only view agrees.
    assert_eq!(Journal::read(&path).unwrap().sticky_halt, rec.sticky_halt);

    j.end(SessionEnd::HaltAcknowledged).unwrap();
    let second = j.begin(&limits, Mode::Continuous).unwrap();
    assert_ne!(second, first, "session ids are unique within the file");
    drop(j);
    let (_, rec) = Journal::open(&path).unwrap();
    assert!(rec.sticky_halt.is_none());
    let open = rec.open_session.unwrap();
    assert_eq!(open.id, second);
    assert!(open.events.is_empty(), "a new session starts from zero");
}

#[test]
fn a_normal_exit_ends_the_session() {
    let (_dir, path) = tmp_journal();
    let (mut j, _) = Journal::open(&path).unwrap();
    j.begin(&Limits::default(), Mode::Continuous).unwrap();
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    record(&mut j, &mut core, &[Event::Start, Event::NoIssues]);
    j.end(SessionEnd::Exit { code: 0 }).unwrap();
    // Appending after the end needs a new session.
    assert!(matches!(
        j.append(&[Record::Event {
            event: Event::Start,
            state: "Selecting".into(),
            said: None,
        }]),
        Err(JournalError::NoSession { .. })
    ));
    drop(j);
    let (_, rec) = Journal::open(&path).unwrap();
    assert!(rec.open_session.is_none());
    assert!(rec.sticky_halt.is_none());
    assert_eq!(rec.last_end, Some(SessionEnd::Exit { code: 0 }));
    assert_eq!(rec.lines, 7); // start, start + selectIssue, noIssues + notify + exit, end
}

/// Writes a session of `halting_events`, returns the file's bytes and where its last line starts.
fn written_session(path: &Path) -> (Vec<u8>, usize) {
    let (mut j, _) = Journal::open(path).unwrap();
    j.begin(&Limits::default(), Mode::Continuous).unwrap();
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    record(&mut j, &mut core, &halting_events());
    drop(j);
    let bytes = std::fs::read(path).unwrap();
    let body = &bytes[..bytes.len() - 1];
    let last_start = body.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    (bytes, last_start)
}

#[test]
fn a_torn_last_line_is_cut_away_at_every_offset() {
    let (_dir, path) = tmp_journal();
    let (bytes, last_start) = written_session(&path);
    let full = journal::read_contents(&path).unwrap().lines;
    for cut in last_start + 1..bytes.len() {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let (mut j, rec) = Journal::open(&path).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let torn = rec
            .torn_line
            .unwrap_or_else(|| panic!("cut {cut}: no torn line"));
        assert!(torn.contains(&format!("line {}", full.len())), "{torn}");
        assert_eq!(rec.lines as usize, full.len() - 1, "cut {cut}");
        let open = rec.open_session.unwrap();
        // The file now ends at the last whole line, and appends stay valid JSONL.
        assert_eq!(
            std::fs::read(&path).unwrap(),
            &bytes[..last_start],
            "cut {cut}"
        );
        j.continue_session(&open.id);
        j.append(&[Record::SessionEnd {
            end: SessionEnd::Exit { code: 0 },
        }])
        .unwrap();
        let again = journal::read_contents(&path).unwrap();
        assert!(again.torn_line.is_none());
        assert_eq!(again.lines[..full.len() - 1], full[..full.len() - 1]);
        assert_eq!(
            again.lines.last().unwrap().seq,
            full[full.len() - 2].seq + 1
        );
    }
}

#[test]
fn a_torn_line_is_left_alone_by_read() {
    let (_dir, path) = tmp_journal();
    let (bytes, last_start) = written_session(&path);
    std::fs::write(&path, &bytes[..last_start + 5]).unwrap();
    let rec = Journal::read(&path).unwrap();
    assert!(rec.torn_line.is_some());
    assert_eq!(std::fs::read(&path).unwrap(), &bytes[..last_start + 5]);
}

#[test]
fn garbage_in_the_middle_is_an_error_naming_the_line() {
    let (_dir, path) = tmp_journal();
    let (bytes, _) = written_session(&path);
    let text = String::from_utf8(bytes).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"seq\": 4, \"this is\": not json";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for result in [
        Journal::open(&path).map(|_| ()),
        Journal::read(&path).map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert!(
            matches!(err, JournalError::Garbage { line: 4, .. }),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("journal.jsonl:4:"), "{msg}");
        assert!(msg.contains("move it aside"), "{msg}");
    }
    // Nothing was cut: the file is the operator's evidence.
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        lines.join("\n") + "\n"
    );
}

#[test]
fn records_out_of_order_or_without_a_session_are_errors() {
    let (_dir, path) = tmp_journal();
    let (bytes, _) = written_session(&path);
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Drop the sessionStart.
    std::fs::write(&path, lines[1..].join("\n") + "\n").unwrap();
    let err = Journal::read(&path).unwrap_err();
    assert!(
        matches!(err, JournalError::Inconsistent { line: 1, .. }),
        "{err}"
    );
    // Swap two records.
    let mut swapped = lines.clone();
    swapped.swap(2, 3);
    std::fs::write(&path, swapped.join("\n") + "\n").unwrap();
    let err = Journal::read(&path).unwrap_err();
    assert!(
        matches!(err, JournalError::Inconsistent { line: 4, .. }),
        "{err}"
    );
}

#[test]
fn the_journal_is_private() {
    let (_dir, path) = tmp_journal();
    let _ = Journal::open(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // An existing world-readable journal is made private too.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _ = Journal::open(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn the_line_format_is_flat_json() {
    let (_dir, path) = tmp_journal();
    let (mut j, _) = Journal::open(&path).unwrap();
    let id = j.begin(&Limits::default(), Mode::SingleIssue(4)).unwrap();
    let mut core = Core::new(Limits::default(), Mode::SingleIssue(4));
    record(&mut j, &mut core, &[Event::Start]);
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["kind"], "sessionStart");
    assert_eq!(rows[0]["session"], id.as_str());
    assert_eq!(rows[0]["mode"]["SingleIssue"], 4);
    assert_eq!(rows[1]["kind"], "event");
    assert_eq!(rows[1]["event"]["event"], "start");
    assert_eq!(rows[1]["state"], "Selecting");
    assert_eq!(rows[2]["kind"], "effect");
    assert_eq!(rows[2]["effect"]["effect"], "selectIssue");
    assert_eq!(rows[2]["seq"], 3);
    let re = regex_like_session_id(&id);
    assert!(re, "session id {id} is time + pid");
}

fn regex_like_session_id(id: &str) -> bool {
    let (time, pid) = id.split_once("Z-").unwrap_or(("", ""));
    time.len() == 15 && &time[8..9] == "T" && pid.starts_with(&std::process::id().to_string())
}

// -------------------------------------------------------------------------------------------
// Counters rebuilt from the journal equal the live machine's, for random failure sequences.

fn limits() -> impl Strategy<Value = Limits> {
    (
        1u32..=4,
        0u32..=3,
        1u32..=3,
        prop_oneof![Just(0u32), Just(2)],
        0u32..=2,
        any::<bool>(),
        0u32..=4,
    )
        .prop_map(|(r, b, e, s, w, simplify, verify)| {
            let mut f = [0u32; Step::COUNT];
            f[Step::Verify.index()] = verify;
            Limits {
                max_retries_per_step: r,
                max_bounce_retries: b,
                max_consecutive_escalations: e,
                max_consecutive_same_failure: s,
                max_consecutive_failures: f,
                max_rate_limit_waits: w,
                simplify_enabled: simplify,
                ..Limits::default()
            }
        })
}

fn reply() -> impl Strategy<Value = Reply> {
    let class = prop_oneof![
        6 => Just(FailureClass::TestAssertion),
        2 => Just(FailureClass::BuildCompile),
        2 => Just(FailureClass::RateLimit),
        1 => Just(FailureClass::Quota),
        1 => Just(FailureClass::ContextWindow),
        1 => Just(FailureClass::Auth),
    ];
    prop_oneof![
        4 => Just(Reply::Ok),
        5 => (class, 1u64..4).prop_map(|(c, s)| Reply::Fail(c, s)),
        2 => Just(Reply::Precondition),
        1 => Just(Reply::AlreadyDone),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    /// A kill -9 after any event, optionally in the middle of writing the next batch: the
    /// rebuilt machine has exactly the live machine's state and every counter.
    #[test]
    fn rebuilt_counters_equal_the_live_machine(
        limits in limits(),
        script in prop::collection::vec(reply(), 0..60),
        backlog in 1u32..4,
        cut in any::<prop::sample::Index>(),
        torn in 0usize..200,
    ) {
        let mut replies: VecDeque<Reply> = script.into();
        let mut scripted = Core::new(limits.clone(), Mode::Continuous);
        let trace = drive(&mut scripted, backlog, 5_000, |_, _| replies.pop_front().unwrap_or(Reply::Ok));

        let (_dir, path) = tmp_journal();
        let (mut j, _) = Journal::open(&path).unwrap();
        j.begin(&limits, Mode::Continuous).unwrap();
        let mut live = Core::new(limits.clone(), Mode::Continuous);
        let k = cut.index(trace.events.len()) + 1;
        let snaps = record(&mut j, &mut live, &trace.events[..k]);
        drop(j);
        prop_assert_eq!(&live.snapshot(), snaps.last().unwrap());
        if k == trace.events.len() {
            prop_assert_eq!(live.snapshot(), scripted.snapshot());
        } else {
            // The next batch was being written when the process died.
            let mut next = Core::new(limits.clone(), Mode::Continuous);
            for e in &trace.events[..=k] { next.handle(e); }
            let line = serde_json::to_string(&journal::Line {
                v: journal::FORMAT,
                seq: 999_999, time: "t".into(), session: "s".into(),
                record: Record::Event { event: trace.events[k].clone(), state: next.state().name().into(), said: None },
            }).unwrap();
            let partial = &line.as_bytes()[..torn.min(line.len())];
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            std::io::Write::write_all(&mut f, partial).unwrap();
        }

        let (_, rec) = Journal::open(&path).unwrap();
        let open = rec.open_session.unwrap();
        prop_assert_eq!(open.events.as_slice(), &trace.events[..k]);
        let (rebuilt, divergence) = rebuild_session(&open);
        prop_assert_eq!(divergence, None);
        let r = rebuilt.runner();
        let l = live.runner();
        prop_assert_eq!(rebuilt.state(), live.state());
        prop_assert_eq!(r.attempts, l.attempts);
        prop_assert_eq!(r.bounces, l.bounces);
        prop_assert_eq!(r.consecutive_escalations, l.consecutive_escalations);
        prop_assert_eq!(&r.escalated, &l.escalated);
        prop_assert_eq!(r.phase_failures, l.phase_failures);
        prop_assert_eq!(r.same_failure, l.same_failure);
        prop_assert_eq!(r.wait_streak, l.wait_streak);
        prop_assert_eq!(r, l);
    }
}

#[test]
fn rebuild_reports_the_first_divergence() {
    let events = halting_events();
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    let mut recorded: Vec<(Event, String)> = events
        .iter()
        .map(|e| {
            core.handle(e);
            (e.clone(), core.state().name().to_string())
        })
        .collect();
    let (_, d) = rebuild(&Limits::default(), Mode::Continuous, &recorded);
    assert_eq!(d, None);
    recorded[3].1 = "Verify".into();
    recorded[5].1 = "Merge".into();
    let (rebuilt, d) = rebuild(&Limits::default(), Mode::Continuous, &recorded);
    let d = d.unwrap();
    assert_eq!(
        (d.seq, d.expected.as_str(), d.actual.as_str()),
        (3, "Verify", "StartCycle")
    );
    // The counters are still those of every event.
    assert_eq!(rebuilt.snapshot(), core.snapshot());
}

// -------------------------------------------------------------------------------------------
// The real binary.

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sdlc-runner"))
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two sessions: one halted and acknowledged, one open after a crash.
fn two_sessions(path: &Path) -> (String, String) {
    let limits = Limits::default();
    let (mut j, _) = Journal::open(path).unwrap();
    let first = j.begin(&limits, Mode::Continuous).unwrap();
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    record(&mut j, &mut core, &halting_events());
    let State::Halted { reason } = *core.state() else {
        panic!()
    };
    j.end(SessionEnd::Halt {
        reason,
        headline: reason.headline(),
    })
    .unwrap();
    j.end(SessionEnd::HaltAcknowledged).unwrap();
    // A limit on implement's failures in a row, so that status shows a step whose key sorts
    // before startCycle's but runs after it.
    let mut limits = limits;
    limits.max_consecutive_failures[Step::Implement.index()] = 2;
    let second = j.begin(&limits, Mode::Continuous).unwrap();
    let mut core = Core::new(limits, Mode::Continuous);
    record(
        &mut j,
        &mut core,
        &[
            Event::Start,
            Event::IssueSelected { issue: 3 },
            Event::PreconditionsOk {
                step: Step::StartCycle,
            },
            fail(Step::StartCycle, FailureClass::BuildCompile, 9),
        ],
    );
    (first, second)
}

#[test]
fn replay_reproduces_a_journal_exactly() {
    let (_dir, path) = tmp_journal();
    let (first, second) = two_sessions(&path);
    let (code, out, err) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("session {first}: 13 events, "))
            && out.contains("reproduced exactly"),
        "{out}"
    );
    assert!(
        out.contains(&format!("session {second}: 4 events, ")),
        "{out}"
    );
    assert_eq!(out.matches("reproduced exactly").count(), 2, "{out}");
}

#[test]
fn replay_reports_a_tampered_state() {
    let (_dir, path) = tmp_journal();
    two_sessions(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let i = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"event\"") && l.contains("\"state\":\"StartCycle\""))
        .unwrap();
    let seq = serde_json::from_str::<serde_json::Value>(&lines[i]).unwrap()["seq"].clone();
    lines[i] = lines[i].replace("\"state\":\"StartCycle\"", "\"state\":\"Verify\"");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("DIVERGED at seq {seq}: expected state Verify")),
        "{out}"
    );
    assert!(out.contains("actual state StartCycle"), "{out}");
}

#[test]
fn replay_reports_tampered_effects() {
    let (_dir, path) = tmp_journal();
    two_sessions(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let tampered = text.replacen("\"attempt\":1", "\"attempt\":2", 1);
    assert_ne!(tampered, text);
    std::fs::write(&path, tampered).unwrap();
    let (code, out, _) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("DIVERGED") && out.contains("expected effects"),
        "{out}"
    );
}

#[test]
fn replay_exits_2_on_garbage_and_tolerates_a_torn_tail() {
    let (_dir, path) = tmp_journal();
    two_sessions(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    // A crash cut the last batch: the last effect line is half written.
    let cut = text.len() - 20;
    std::fs::write(&path, &text[..cut]).unwrap();
    let (code, out, err) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("torn"), "{err}");
    assert!(out.contains("cut short by a crash"), "{out}");

    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "not json at all";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, out, err) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains(":3:"), "{err}");

    // A path that names no file is a usage error: most likely a typo.
    let (code, _, err) = run(bin().arg("replay").arg(path.with_extension("missing")));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("missing"), "{err}");
}

fn project_with_config() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    std::fs::create_dir_all(project.join("issues")).unwrap();
    let ok = std::process::Command::new("git")
        .args(["init", "--quiet"])
        .current_dir(&project)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git init");
    let config = dir.path().join("sdlc-config.json");
    let logs = dir.path().join("logs");
    std::fs::write(
        &config,
        serde_json::json!({
            "projectPath": project,
            "logDir": logs,
            "tracker": {"kind": "local", "dir": project.join("issues")},
        })
        .to_string(),
    )
    .unwrap();
    (dir, config)
}

#[test]
fn status_shows_the_rebuilt_counters_as_json() {
    let (dir, config) = project_with_config();
    let project = dir.path().join("proj");
    let path = journal::journal_path(&project).unwrap();
    let (_, second) = two_sessions(&path);
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    std::fs::write(
        project.join(".claude/sdlc-state.json"),
        r#"{"currentStep": 1, "lastCompletedStep": 0, "currentIssue": 3}"#,
    )
    .unwrap();
    let before = std::fs::read(&path).unwrap();

    let (code, out, err) = run(bin().args(["status", "--json", "--config"]).arg(&config));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["session"], second.as_str());
    assert_eq!(v["sessionStatus"], "open");
    assert_eq!(v["state"], "StartCycle");
    assert_eq!(v["currentIssue"], 3);
    assert_eq!(v["currentStep"], "startCycle");
    assert_eq!(v["counters"]["attempts"]["startCycle"], 1);
    assert_eq!(v["counters"]["maxRetriesPerStep"], 3);
    assert_eq!(v["counters"]["consecutiveEscalations"], 0);
    assert_eq!(v["counters"]["sameSignatureStreak"]["startCycle"], 1);
    assert_eq!(v["counters"]["phaseFailures"]["verify"]["limit"], 3);
    // Every key of the document, and of its counters, is named in docs/status-json.md.
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/status-json.md"),
    )
    .expect("docs/status-json.md");
    for (prefix, object) in [
        ("", &v),
        ("counters.", &v["counters"]),
        ("budgets.", &v["budgets"]),
    ] {
        for key in object.as_object().expect("an object").keys() {
            assert!(
                doc.contains(&format!("`{key}`")) || doc.contains(&format!("`{prefix}{key}`")),
                "status --json has `{prefix}{key}`, which docs/status-json.md does not name"
            );
        }
    }
    // The text shows the steps in lifecycle order, as they run, not alphabetically.
    let (code, text, err) = run(bin().args(["status", "--config"]).arg(&config));
    assert_eq!(code, 0, "{text}{err}");
    assert!(
        text.contains(
            "consecutive failures per step: startCycle 1 (no limit), implement 0/2, verify 0/3"
        ),
        "{text}"
    );
    assert_eq!(v["lastFailure"]["class"], "BUILD_COMPILE");
    assert_eq!(v["lastFailure"]["signature"], "0000000000000009");
    assert_eq!(v["stickyHalt"], serde_json::Value::Null);
    assert_eq!(v["wastedSinceLastMerge"]["sinceMerge"]["invocations"], 1);
    assert_eq!(
        v["wastedSinceLastMerge"]["failedByClass"]["BUILD_COMPILE"]["costUsd"],
        0.25
    );
    assert_eq!(v["stateFile"]["status"], "ok");
    assert_eq!(v["stateFile"]["content"]["currentIssue"], 3);
    assert_eq!(v["divergence"], serde_json::Value::Null);
    assert!(v["orchestrationLog"]
        .as_str()
        .unwrap()
        .ends_with("logs/sdlc-runner.log"));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "status changes nothing"
    );

    let (code, out, err) = run(bin().args(["status", "--config"]).arg(&config));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("state:    StartCycle"), "{out}");
    assert!(
        out.contains("last failure: BUILD_COMPILE in startCycle"),
        "{out}"
    );
}

#[test]
fn status_shows_a_sticky_halt_and_a_fresh_project() {
    let (dir, config) = project_with_config();
    let (code, out, err) = run(bin().args(["status", "--json", "--config"]).arg(&config));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["session"], serde_json::Value::Null);
    assert_eq!(v["stateFile"]["status"], "missing");

    let path = journal::journal_path(&dir.path().join("proj")).unwrap();
    let (mut j, _) = Journal::open(&path).unwrap();
    j.begin(&Limits::default(), Mode::Continuous).unwrap();
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    record(&mut j, &mut core, &halting_events());
    let State::Halted { reason } = *core.state() else {
        panic!()
    };
    j.end(SessionEnd::Halt {
        reason,
        headline: reason.headline(),
    })
    .unwrap();
    let (code, out, _) = run(bin().args(["status", "--json", "--config"]).arg(&config));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["sessionStatus"], "halted");
    assert_eq!(v["state"], "Halted");
    assert_eq!(
        v["stickyHalt"],
        "FAILURE LOOP DETECTED: consecutive escalations"
    );
    assert_eq!(v["counters"]["consecutiveEscalations"], 2);
    assert_eq!(v["counters"]["escalatedIssues"], serde_json::json!([1, 2]));
    let (_, text, _) = run(bin().args(["status", "--config"]).arg(&config));
    assert!(text.contains("--ack-halt"), "{text}");

    let (code, _, err) = run(bin()
        .args(["status", "--config"])
        .arg(dir.path().join("nope.json")));
    assert_eq!(code, 2);
    assert!(err.contains("nope.json"), "{err}");
}

#[test]
fn replay_accepts_a_batch_cut_by_a_crash_only_before_a_restart() {
    let (_dir, path) = tmp_journal();
    let limits = Limits::default();
    let events = &halting_events()[..4]; // ... the first attempt of startCycle failed
    let (mut j, _) = Journal::open(&path).unwrap();
    j.begin(&limits, Mode::Continuous).unwrap();
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    record(&mut j, &mut core, events);
    drop(j);
    // The crash persisted the failure event but only its first effect line.
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let failed = lines
        .iter()
        .rposition(|l| l.contains("\"kind\":\"event\""))
        .unwrap();
    assert!(lines.len() > failed + 2, "the failure has several effects");
    let cut = lines[..failed + 2].join("\n") + "\n";
    std::fs::write(&path, &cut).unwrap();

    let (mut j, rec) = Journal::open(&path).unwrap();
    let open = rec.open_session.unwrap();
    j.continue_session(&open.id);
    let (mut core, _) = rebuild_session(&open);
    record(
        &mut j,
        &mut core,
        &[
            Event::Start,
            Event::PreconditionsOk {
                step: Step::StartCycle,
            },
        ],
    );
    drop(j);
    let (code, out, err) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("reproduced exactly (1 batch(es) cut short by a crash)"),
        "{out}"
    );

    // The same missing effect without a restart after it is a divergence.
    let full = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = full.lines().collect();
    let start = lines
        .iter()
        .rposition(|l| l.contains("\"event\":{\"event\":\"start\"}"))
        .unwrap();
    lines.remove(start + 1); // the restart's reissued effect
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, out, _) = run(bin().arg("replay").arg(&path));
    assert_eq!(code, 1, "{out}");
}

/// The failure context journaled with a `StepFailed` is the machine's again after a restart,
/// for the step that reported it (a reset cycle does not bring back the previous issue's), and
/// so are the last words the diagnostics quote.
#[test]
fn the_failure_context_of_the_cycle_is_rebuilt_from_the_journal() {
    let (_dir, path) = tmp_journal();
    let limits = Limits::default();
    let (mut j, _) = Journal::open(&path).unwrap();
    j.begin(&limits, Mode::Continuous).unwrap();
    let mut core = Core::new(limits.clone(), Mode::Continuous);
    let detail = |issue: u32| journal::FailureDetail {
        step: Step::StartCycle,
        class: FailureClass::TestAssertion,
        summary: format!("issue {issue}: 1 test failed"),
        excerpt: "assertion failed".into(),
    };
    // Issue 1 is escalated after two failures; issue 2 fails once and the runner dies.
    let events = halting_events();
    let until_death = &events[..events.len() - 2];
    for event in until_death {
        let failure = match event {
            Event::StepFailed {
                signature: Signature(sig),
                ..
            } => Some(detail(*sig as u32 - 6)),
            _ => None,
        };
        let report = sdlc_runner::machine::Report {
            said: failure.as_ref().map(|d| d.summary.clone()),
            failure,
        };
        let fx = core.handle_reported(event, report.clone()).to_vec();
        j.record_step(event, &report, &fx, core.state()).unwrap();
    }
    assert_eq!(core.failure(Step::StartCycle), Some(&detail(2)));
    drop(j);

    let (_, rec) = Journal::open(&path).unwrap();
    let open = rec.open_session.expect("the session did not end");
    let (rebuilt, divergence) = rebuild_session(&open);
    assert_eq!(divergence, None);
    assert_eq!(rebuilt.failure(Step::StartCycle), Some(&detail(2)));
    assert_eq!(rebuilt.failure(Step::Implement), None);
    assert_eq!(rebuilt.last_words(), core.last_words());
    assert_eq!(rebuilt.last_words(), "issue 2: 1 test failed");

    // Restarted right after issue 2 was selected: issue 1's context went with its cycle.
    let open_at_selection = journal::OpenSession {
        recorded: open.recorded[..8].to_vec(),
        ..open.clone()
    };
    assert_eq!(
        open_at_selection.recorded[7].event,
        Event::IssueSelected { issue: 2 }
    );
    let (rebuilt, _) = rebuild_session(&open_at_selection);
    assert_eq!(rebuilt.failure(Step::StartCycle), None);
    // `rebuild` of bare events invents no context.
    let bare: Vec<(Event, String)> = until_death
        .iter()
        .map(|e| (e.clone(), String::new()))
        .collect();
    let (rebuilt, _) = rebuild(&limits, Mode::Continuous, &bare);
    assert_eq!(rebuilt.failure(Step::StartCycle), None);
}

/// A fleet's worker that stood by (as many workers as allowed were at work) is shown as
/// standing by, not as a worker that exited with nothing to do.
#[test]
fn status_says_a_worker_that_stood_by_is_standing_by() {
    let (dir, config) = project_with_config();
    let project = dir.path().join("proj");
    let path = journal::journal_path(&project).expect("journal path");
    let (mut j, _) = Journal::open(&path).expect("journal");
    let limits = Limits::default();
    j.begin(&limits, Mode::Continuous).expect("begin");
    let mut core = Core::new(limits, Mode::Continuous);
    record(&mut j, &mut core, &[Event::Start, Event::StandBy]);
    j.end(SessionEnd::Exit { code: 0 }).expect("end");

    let (code, out, err) = run(bin().args(["status", "--json", "--config"]).arg(&config));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(v["sessionStatus"], "standingBy", "{out}");
    let (code, out, err) = run(bin().args(["status", "--config"]).arg(&config));
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("(standing by: as many workers as allowed are at work"),
        "{out}"
    );

    // A session that ended otherwise still says it exited.
    j.begin(&Limits::default(), Mode::Continuous)
        .expect("begin");
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    record(&mut j, &mut core, &[Event::Start, Event::NoIssues]);
    j.end(SessionEnd::Exit { code: 0 }).expect("end");
    let (_, out, _) = run(bin().args(["status", "--json", "--config"]).arg(&config));
    let v: serde_json::Value = serde_json::from_str(&out).expect("status JSON");
    assert_eq!(v["sessionStatus"], "exited", "{out}");
}
