//! The live status line, seen through a pseudo-terminal the way an operator sees it: redrawn
//! in place while the agent works (issue, step, attempt, elapsed, turns, last tool), then
//! erased and replaced by the step's summary line.

use crate::e2e;

use e2e::{openpty, Project};
use serde_json::json;
use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn a_terminal_gets_a_status_line_redrawn_in_place_then_the_summary() {
    let p = Project::new(
        &[(1, "First", "")],
        json!({"steps": {"implement": ["busy:2400"]}}),
        json!({}),
    );
    let (mut master, slave) = openpty();
    let child = p
        .command(&["run", "--config", p.config.to_str().expect("utf8")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("spawn runner");
    // Our copy of the slave went into the child's Command and was closed after spawn, so
    // reading the master ends (EIO) when the runner exits.
    let reader = std::thread::spawn(move || {
        let mut screen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => screen.extend_from_slice(&buf[..n]),
            }
        }
        screen
    });
    let out = e2e::wait_output(child, Duration::from_secs(120));
    let screen = String::from_utf8_lossy(&reader.join().expect("reader")).into_owned();
    assert_eq!(out.status.code(), Some(0), "{screen}");

    let redraws: Vec<&str> = screen
        .split("\r\x1b[2K")
        .filter(|s| s.starts_with("#1 4 implement attempt 1 · "))
        .map(|s| s.split(['\r', '\n']).next().unwrap_or(s))
        .collect();
    assert!(
        redraws.len() >= 4,
        "redrawn in place: {redraws:#?}\n{screen}"
    );
    for tool in ["Read", "Edit", "Bash"] {
        assert!(
            redraws
                .iter()
                .any(|l| l.ends_with(&format!("turns · {tool}"))
                    || l.ends_with(&format!("turn · {tool}"))),
            "the last tool {tool} is shown: {redraws:#?}"
        );
    }
    assert!(
        redraws.iter().any(|l| l.contains(" · 2s · ")),
        "elapsed moves: {redraws:#?}"
    );
    assert!(
        redraws.iter().all(|l| l.chars().count() < 120),
        "fits the terminal"
    );
    // The line is erased when the step ends and the summary takes its place.
    let after = screen
        .rfind("#1 4 implement attempt 1 · ")
        .map(|i| &screen[i..])
        .expect("a status line");
    let summary = after
        .find("implement: succeeded in ")
        .expect("summary after the line");
    assert!(
        after[..summary].contains("\r\x1b[2K"),
        "erased before the summary: {after:?}"
    );
    // On a terminal, narration is not time-stamped.
    assert!(!screen.contains("Z] "), "{screen}");
}
