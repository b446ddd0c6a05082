//! Notifications against real child processes (fake `openclaw` and notify commands written
//! into temp dirs) and a real local webhook server, the orchestration log read back from disk.

use sdlc_runner::notify::{Channel, Clock, Notifier, NotifyOptions, Severity};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn fast_options() -> NotifyOptions {
    NotifyOptions {
        timeout: Duration::from_secs(5),
        backoff: Duration::from_millis(10),
        drop_wait: Duration::from_secs(5),
        ..NotifyOptions::default()
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn discord_success_marker_ends_a_hanging_openclaw() {
    let dir = tempfile::tempdir().unwrap();
    let args = dir.path().join("args");
    let openclaw = script(
        dir.path(),
        "openclaw",
        &format!(
            "printf '%s\\n' \"$@\" > {}\necho 'Sent via discord'\nsleep 60",
            args.display()
        ),
    );
    let log = dir.path().join("sdlc-runner.log");
    let options = NotifyOptions {
        timeout: Duration::from_secs(30),
        ..fast_options()
    };
    let notifier = Notifier::with_options(
        vec![Channel::Discord {
            openclaw,
            target: "12345".into(),
        }],
        Some(log.clone()),
        options,
    );
    let started = Instant::now();
    notifier.send(Severity::Info, "cycle started for #7");
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "send blocked"
    );
    notifier.flush(Duration::from_secs(20));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "a delivered message must not wait for openclaw to exit: {:?}",
        started.elapsed()
    );
    assert_eq!(
        read(&args),
        "message\nsend\n--channel\ndiscord\n--target\n12345\n-m\n[INFO] cycle started for #7\n"
    );
    let log = read(&log);
    assert!(
        log.contains("[notify] [INFO] cycle started for #7"),
        "{log}"
    );
    assert!(!log.contains("failed"), "{log}");
}

#[test]
fn discord_retries_until_openclaw_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let openclaw = script(
        dir.path(),
        "openclaw",
        &format!(
            "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\n\
             if [ $n -lt 3 ]; then echo 'gateway unavailable' >&2; exit 1; fi\n\
             echo 'Message ID: 99'",
            c = count.display()
        ),
    );
    let log = dir.path().join("log");
    let notifier = Notifier::with_options(
        vec![Channel::Discord {
            openclaw,
            target: "1".into(),
        }],
        Some(log.clone()),
        fast_options(),
    );
    notifier.send(Severity::Warning, "retrying verify");
    notifier.flush(Duration::from_secs(20));
    assert_eq!(read(&count).trim(), "3");
    let log = read(&log);
    assert_eq!(log.matches("attempt").count(), 2, "{log}");
    assert!(log.contains("Discord post attempt 1/3 failed"), "{log}");
    assert!(log.contains("gateway unavailable"), "{log}");
    assert!(!log.contains("Warning: Discord post failed"), "{log}");
}

#[test]
fn discord_gives_up_after_three_attempts_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let openclaw = script(
        dir.path(),
        "openclaw",
        &format!("echo x >> {}\nexit 4", count.display()),
    );
    let log = dir.path().join("log");
    let notifier = Notifier::with_options(
        vec![Channel::Discord {
            openclaw,
            target: "1".into(),
        }],
        Some(log.clone()),
        fast_options(),
    );
    notifier.send(Severity::Alert, "halted");
    notifier.flush(Duration::from_secs(20));
    assert_eq!(read(&count).lines().count(), 3);
    let log = read(&log);
    assert!(
        log.contains("Warning: Discord post failed after 3 attempt(s): openclaw message send exited with code 4"),
        "{log}"
    );
}

#[test]
fn silent_hang_times_out_per_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let openclaw = script(dir.path(), "openclaw", "sleep 60");
    let log = dir.path().join("log");
    let options = NotifyOptions {
        timeout: Duration::from_millis(300),
        attempts: 2,
        ..fast_options()
    };
    let notifier = Notifier::with_options(
        vec![Channel::Discord {
            openclaw,
            target: "1".into(),
        }],
        Some(log.clone()),
        options,
    );
    let started = Instant::now();
    notifier.send(Severity::Alert, "halted");
    notifier.flush(Duration::from_secs(20));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let log = read(&log);
    assert!(log.contains("timed out"), "{log}");
    assert!(log.contains("failed after 2 attempt(s)"), "{log}");
}

#[test]
fn flush_is_bounded_even_when_a_channel_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let openclaw = script(
        dir.path(),
        "openclaw",
        &format!("echo $$ > {}\nsleep 60", pidfile.display()),
    );
    let options = NotifyOptions {
        timeout: Duration::from_secs(60),
        drop_wait: Duration::from_millis(200),
        ..fast_options()
    };
    let notifier = Notifier::with_options(
        vec![Channel::Discord {
            openclaw,
            target: "1".into(),
        }],
        None,
        options,
    );
    let started = Instant::now();
    notifier.send(Severity::Alert, "halted");
    notifier.flush(Duration::from_millis(300));
    // Make sure the script is running before the notifier gives up on it.
    while !pidfile.exists() {
        assert!(started.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(notifier);
    // The abandoned openclaw does not outlive the notifier.
    let pid: i32 = fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while is_running(pid) {
        assert!(Instant::now() < deadline, "openclaw {pid} still running");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// Alive and not a zombie waiting to be reaped.
fn is_running(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[test]
fn command_channel_gets_message_and_severity() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let program = script(
        dir.path(),
        "notify-me",
        &format!(
            "printf '%s|%s|%s|%s\\n' \"$SDLC_SEVERITY\" \"$1\" \"$2\" \"$3\" >> {}",
            out.display()
        ),
    );
    let notifier = Notifier::with_options(
        vec![Channel::Command {
            program,
            args: vec!["--room".into(), "ops".into()],
        }],
        None,
        fast_options(),
    );
    notifier.send(
        Severity::Alert,
        "FAILURE LOOP DETECTED: bounce loop; key ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijkl",
    );
    notifier.flush(Duration::from_secs(10));
    assert_eq!(
        read(&out),
        "alert|--room|ops|[ALERT] FAILURE LOOP DETECTED: bounce loop; key ANTHROPIC_API_KEY=***\n"
    );
}

/// Agent or CI output quoted in a notification cannot act on a terminal or a chat client:
/// escape sequences and carriage returns arrive escaped, line breaks stay.
#[test]
fn control_characters_in_a_notification_arrive_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let program = script(
        dir.path(),
        "notify-me",
        &format!("printf '%s' \"$1\" >> {}", out.display()),
    );
    let notifier = Notifier::with_options(
        vec![Channel::Command {
            program,
            args: vec![],
        }],
        None,
        fast_options(),
    );
    notifier.send(
        Severity::Alert,
        "verify failed\nerror: \x1b[31mred\x1b[0m\rover\u{9b}2J",
    );
    notifier.flush(Duration::from_secs(10));
    assert_eq!(
        read(&out),
        "[ALERT] verify failed\nerror: \\x1b[31mred\\x1b[0m\\rover\\u{9b}2J"
    );
}

/// The posts a webhook was sent: each one's head and body.
type Posts = Arc<Mutex<Vec<(String, String)>>>;

/// A webhook: answers each post with `statuses` in turn (the last one repeated) and keeps
/// what it was sent.
fn webhook(statuses: &'static [&'static str]) -> (String, Posts) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/T0/B0/secret", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut data = Vec::new();
            let mut buf = [0u8; 8192];
            let (head, body) = loop {
                if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&data[..end]).to_string();
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if data.len() >= end + 4 + length {
                        break (
                            head,
                            String::from_utf8_lossy(&data[end + 4..end + 4 + length]).to_string(),
                        );
                    }
                }
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => data.extend_from_slice(&buf[..k]),
                }
            };
            kept.lock().unwrap().push((head, body));
            let status = statuses[n.min(statuses.len() - 1)];
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope"
            );
        }
    });
    (url, seen)
}

#[test]
fn webhook_posts_json_through_the_runners_http_client() {
    let (url, seen) = webhook(&["204 No Content"]);
    let notifier = Notifier::with_options(
        vec![Channel::Webhook { url: url.clone() }],
        None,
        fast_options(),
    );
    notifier.send(Severity::Warning, "escalated #4 \"quoted\"");
    notifier.flush(Duration::from_secs(10));
    let (head, body) = seen.lock().unwrap()[0].clone();
    assert!(head.starts_with("POST /T0/B0/secret HTTP/1.1"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["content"], "[WARNING] escalated #4 \"quoted\"");
    assert_eq!(json["text"], json["content"]);

    notifier.send(
        Severity::Alert,
        &format!("FAILURE LOOP DETECTED: x\n{}", "é".repeat(5000)),
    );
    notifier.flush(Duration::from_secs(10));
    let body = seen.lock().unwrap()[1].1.clone();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let content = json["content"].as_str().unwrap();
    assert_eq!(content.chars().count(), 2000);
    assert!(content.starts_with("[ALERT] FAILURE LOOP DETECTED: x\n"));
    assert!(content.ends_with("(truncated; full text in the runner log)"));
}

#[test]
fn a_failing_webhook_is_retried_a_refusing_one_is_not_and_its_secret_url_is_never_logged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let (url, seen) = webhook(&["503 Service Unavailable", "200 OK"]);
    let notifier = Notifier::with_options(
        vec![Channel::Webhook { url: url.clone() }],
        Some(log.clone()),
        fast_options(),
    );
    notifier.send(Severity::Info, "hello");
    notifier.flush(Duration::from_secs(10));
    assert_eq!(seen.lock().unwrap().len(), 2, "a 503 is tried again");
    let text = read(&log);
    assert!(text.contains("webhook post attempt 1/3 failed"), "{text}");
    assert!(text.contains("HTTP 503"), "{text}");

    let (url, seen) = webhook(&["404 Not Found"]);
    let notifier = Notifier::with_options(
        vec![Channel::Webhook { url: url.clone() }],
        Some(log.clone()),
        fast_options(),
    );
    notifier.send(Severity::Info, "hello again");
    notifier.flush(Duration::from_secs(10));
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "a refusal is not tried again"
    );
    let text = read(&log);
    assert!(
        text.contains("webhook post failed after 1 attempt(s): the webhook answered HTTP 404"),
        "{text}"
    );

    // Nobody listens: the network's failure, retried, and no word of the URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/T9/B9/hush-secret", closed.local_addr().unwrap());
    drop(closed);
    let notifier = Notifier::with_options(
        vec![Channel::Webhook { url }],
        Some(log.clone()),
        fast_options(),
    );
    notifier.send(Severity::Info, "into the void");
    notifier.flush(Duration::from_secs(10));
    let text = read(&log);
    assert!(
        text.contains("webhook post failed after 3 attempt(s): the webhook got no answer"),
        "{text}"
    );
    assert!(
        !text.contains("hush-secret") && !text.contains("/T0/B0/secret"),
        "{text}"
    );
}

#[test]
fn identical_messages_inside_the_window_are_sent_once_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let program = script(
        dir.path(),
        "notify-me",
        &format!("printf '%s\\n' \"$1\" >> {}", out.display()),
    );
    let now = Arc::new(Mutex::new(Instant::now()));
    let clock_now = Arc::clone(&now);
    let clock: Clock = Arc::new(move || *clock_now.lock().unwrap());
    let log = dir.path().join("log");
    let notifier = Notifier::with_options(
        vec![Channel::Command {
            program,
            args: vec![],
        }],
        Some(log.clone()),
        NotifyOptions {
            clock,
            ..fast_options()
        },
    );
    let advance = |secs: u64| *now.lock().unwrap() += Duration::from_secs(secs);

    notifier.send(Severity::Warning, "verify failed");
    advance(60);
    notifier.send(Severity::Warning, "verify failed");
    notifier.send(Severity::Warning, "verify failed");
    // Same text, different severity: a different message.
    notifier.send(Severity::Alert, "verify failed");
    advance(540); // exactly 10 minutes after the first: the window is over
    notifier.send(Severity::Warning, "verify failed");
    advance(1);
    notifier.send(Severity::Warning, "verify failed");
    advance(600);
    notifier.send(Severity::Warning, "verify failed");
    notifier.flush(Duration::from_secs(10));

    assert_eq!(
        read(&out),
        "[WARNING] verify failed\n\
         [ALERT] verify failed\n\
         [WARNING] verify failed (repeated 2 times)\n\
         [WARNING] verify failed (repeated 1 times)\n"
    );
    let log = read(&log);
    assert_eq!(log.matches("not sent again").count(), 3, "{log}");
}

#[test]
fn no_channels_still_logs_every_message_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let notifier = Notifier::new(vec![], Some(log.clone()));
    notifier.send(
        Severity::Alert,
        "ENVIRONMENT FAILURE: AUTH\ntoken ghp_abcdefghijklmnop1234",
    );
    drop(notifier);
    let log = read(&log);
    assert!(
        log.contains("[notify] [ALERT] ENVIRONMENT FAILURE: AUTH\ntoken ghp_***"),
        "{log}"
    );
    assert!(log.starts_with('['), "{log}");
}
