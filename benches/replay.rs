//! `sdlc-runner replay` of a journal holding one session of 1,000,000 events (plus their
//! effects, about 2.3 million lines): the file is written the way the runner writes it
//! (`journal::Line` records, one JSON object per line) from a session recorded through the
//! pure core, then the real binary replays it. Printed beside a raw `BufRead` line count of
//! the same file measured in the same run (the cost of just reading it).
//!
//! `cargo bench --bench replay` (`SDLC_BENCH_JOURNAL=FILE` writes the journal there and keeps
//! it, to profile the replay)

mod common;

use common::{median, runner_binary, Script};
use sdlc_runner::journal::{Line, Record, SessionEnd};
use sdlc_runner::machine::{Core, Event, Limits, Mode, Usage};
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const EVENTS: usize = 1_000_000;
const RUNS: usize = 3;

/// Writes a journal of one session: issues, each with a full lifecycle, one failed verify
/// attempt (retry) and one bounce, until `EVENTS` events are recorded; then no more issues.
fn write_journal(path: &Path) -> (usize, usize) {
    let usage = Usage {
        cost_micros: 10_000,
        elapsed_ms: 60_000,
        turns: 12,
    };
    let session = "20260101T000000Z-4242".to_string();
    let time = "2026-01-01T00:00:00.000Z".to_string();
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).expect("journal"));
    let mut seq = 0u64;
    let mut lines = 0usize;
    let mut write = |record: Record| {
        seq += 1;
        lines += 1;
        let line = Line {
            v: sdlc_runner::journal::FORMAT,
            seq,
            time: time.clone(),
            session: session.clone(),
            record,
        };
        serde_json::to_writer(&mut out, &line).expect("encode");
        out.write_all(b"\n").expect("write");
    };
    let limits = Limits::default();
    write(Record::SessionStart {
        limits: Box::new(limits.clone()),
        mode: Mode::Continuous,
        pid: 4242,
        version: "0.1.0".into(),
    });
    let mut core = Core::new(limits, Mode::Continuous);
    let mut events = 0usize;
    let mut script = Script::new(usage);
    let mut event = Event::Start;
    loop {
        let effects = core.handle(&event).to_vec();
        let state = core.state().name().to_string();
        write(Record::Event {
            event,
            state: state.clone(),
            said: None,
        });
        events += 1;
        for &effect in &effects {
            write(Record::Effect {
                effect,
                state: state.clone(),
            });
        }
        let Some(request) = Script::request(&effects) else {
            break;
        };
        event = script.answer(request, |_| events >= EVENTS - 1);
    }
    write(Record::SessionEnd {
        end: SessionEnd::Exit { code: 0 },
    });
    out.flush().expect("flush");
    (events, lines)
}

fn main() {
    let bin = runner_binary();
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = std::env::var_os("SDLC_BENCH_JOURNAL")
        .map_or_else(|| tmp.path().join("journal.jsonl"), Into::into);
    let (events, lines) = write_journal(&path);
    let bytes = std::fs::metadata(&path).expect("journal").len();
    let mut replay = Vec::new();
    let mut count = Vec::new();
    let mut summary = String::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let out = Command::new(&bin)
            .arg("replay")
            .arg(&path)
            .output()
            .expect("replay");
        replay.push(started.elapsed().as_secs_f64());
        assert!(
            out.status.success(),
            "replay failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        summary = String::from_utf8_lossy(&out.stdout).trim().to_string();

        let started = Instant::now();
        let mut reader =
            std::io::BufReader::with_capacity(1 << 16, std::fs::File::open(&path).expect("open"));
        let mut line = Vec::new();
        let mut n = 0usize;
        while reader.read_until(b'\n', &mut line).expect("read") > 0 {
            n += 1;
            line.clear();
        }
        count.push(started.elapsed().as_secs_f64());
        assert_eq!(n, lines);
    }
    println!(
        "workload: one session, {events} events, {lines} lines, {:.0} MB",
        bytes as f64 / 1e6
    );
    println!("replay: {}", summary);
    println!(
        "sdlc-runner replay: {:.3} s (median of {RUNS})",
        median(replay)
    );
    println!(
        "reference: BufRead line count of the same file: {:.3} s",
        median(count)
    );
}
