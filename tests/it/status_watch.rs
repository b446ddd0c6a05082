//! `status --watch` through a pseudo-terminal: the picture of a running runner (its state,
//! issue and step, the counters) drawn on the terminal, and `q` ends it.

use crate::e2e;

use e2e::{openpty, signal, wait_output, Project};
use serde_json::json;
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn watch_draws_the_running_step_and_q_quits() {
    let p = Project::new(
        &[(1, "First", "")],
        json!({"steps": {"implement": ["hang"]}}),
        json!({}),
    );
    let runner = p.spawn(&[]);
    p.wait_for_invocation("1 implement", Duration::from_secs(60));
    let (mut master, slave) = openpty();
    let tty = |fd: &std::os::fd::OwnedFd| Stdio::from(fd.try_clone().expect("dup pty"));
    let mut watch = p
        .command(&[
            "status",
            "--config",
            p.config.to_str().expect("utf8"),
            "--watch",
        ])
        .stdin(tty(&slave))
        .stdout(tty(&slave))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("spawn status --watch");
    let mut reader = master.try_clone().expect("master");
    let screen = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).to_string()
    });
    std::thread::sleep(Duration::from_millis(3500));
    master.write_all(b"q").expect("press q");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = watch.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "status --watch did not quit on q"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    drop(master);
    let seen = screen.join().expect("reader");
    for needle in [
        "workers",
        "Implement",
        "implement",
        "#1",
        "counters",
        "running",
        "runStep",
        // The live attempt: the fake agent's one Read.
        "Read",
    ] {
        assert!(seen.contains(needle), "{needle:?} not drawn:\n{seen}");
    }
    signal(&runner, libc::SIGTERM);
    let out = wait_output(runner, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0));
}
