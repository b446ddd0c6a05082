//! The delivery thread's work: one message to every channel (Discord through openclaw, a
//! webhook, a command), each attempt time-limited, retried while another attempt can help.

use super::{append_log, tail, Channel, Job, NotifyOptions};
use crate::process::ChildSpec;
use crate::process::{run_tracked, Budget, Captured, ChildSlot};
use crate::redact::redact;
use std::io::{self};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

pub(super) struct Worker {
    pub(super) channels: Vec<Channel>,
    pub(super) log: Option<PathBuf>,
    pub(super) options: NotifyOptions,
    pub(super) inflight: ChildSlot,
    pub(super) closing: crate::process::StopToken,
}

/// Why one delivery attempt failed, and whether another attempt can help.
struct AttemptError {
    message: String,
    retryable: bool,
}

impl Worker {
    pub(super) fn deliver(&self, job: &Job) {
        for channel in &self.channels {
            let attempts = self.options.attempts.max(1);
            let mut backoff = self.options.backoff;
            for attempt in 1..=attempts {
                if self.closing.is_stopped() {
                    append_log(
                        self.log.as_deref(),
                        &format!("[notify] Warning: {} abandoned at shutdown", channel.name()),
                    );
                    return;
                }
                match self.attempt(channel, job) {
                    Ok(()) => break,
                    Err(e) if e.retryable && attempt < attempts => {
                        append_log(
                            self.log.as_deref(),
                            &format!(
                                "[notify] {} attempt {attempt}/{attempts} failed, retrying in {}ms: {}",
                                channel.name(),
                                backoff.as_millis(),
                                redact(&e.message)
                            ),
                        );
                        thread::sleep(backoff);
                        backoff = backoff.saturating_mul(2);
                    }
                    Err(e) => {
                        append_log(
                            self.log.as_deref(),
                            &format!(
                                "[notify] Warning: {} failed after {attempt} attempt(s): {}",
                                channel.name(),
                                redact(&e.message)
                            ),
                        );
                        break;
                    }
                }
            }
        }
    }

    fn attempt(&self, channel: &Channel, job: &Job) -> Result<(), AttemptError> {
        let timeout = self.options.timeout;
        match channel {
            Channel::Discord { openclaw, target } => {
                let mut cmd = ChildSpec::new(openclaw);
                cmd.args(["message", "send", "--channel", "discord", "--target"])
                    .arg(target)
                    .arg("-m")
                    .arg(&job.text);
                let out = run_tracked(
                    cmd,
                    None,
                    timeout,
                    Some(discord_delivered),
                    Some(&self.inflight),
                    Budget::DEFAULT,
                )
                .map_err(|e| spawn_error(openclaw, e))?;
                if out.marker_seen {
                    return Ok(());
                }
                judge(
                    &out,
                    || {
                        format!(
                            "openclaw message send timed out ({}s) with no success marker",
                            timeout.as_secs_f32()
                        )
                    },
                    "openclaw message send",
                    &format!("{}{}", out.stdout, out.stderr),
                )
            }
            Channel::Webhook { url } => post_webhook(url, &job.text, timeout),
            Channel::Command { program, args } => {
                let mut cmd = ChildSpec::new(program);
                cmd.args(args)
                    .arg(&job.text)
                    .env("SDLC_SEVERITY", job.severity.as_str());
                let out = run_tracked(
                    cmd,
                    None,
                    timeout,
                    None,
                    Some(&self.inflight),
                    Budget::DEFAULT,
                )
                .map_err(|e| spawn_error(program, e))?;
                judge(
                    &out,
                    || {
                        format!(
                            "{} timed out after {}s",
                            program.display(),
                            timeout.as_secs_f32()
                        )
                    },
                    &program.display().to_string(),
                    &format!("{}{}", out.stdout, out.stderr),
                )
            }
        }
    }
}

/// Posts `text` to the webhook at `url` through the runner's one HTTP client. The URL is a
/// secret (whoever has it can post): no message names it.
fn post_webhook(url: &str, text: &str, timeout: Duration) -> Result<(), AttemptError> {
    use crate::api_client::transport;
    let text = webhook_text(text);
    let body = serde_json::json!({ "content": text, "text": text }).to_string();
    let url = reqwest::Url::parse(url).map_err(|e| AttemptError {
        message: format!("the webhook's URL is not a URL ({e}); check notify.webhookUrl"),
        retryable: false,
    })?;
    let answer = transport::send(transport::Request {
        method: reqwest::Method::POST,
        url,
        headers: Vec::new(),
        json: Some(body.into_bytes()),
        timeout,
    })
    .map_err(|e| AttemptError {
        retryable: e.kind != crate::call_failure::CallFailureKind::Other,
        message: format!("the webhook got no answer: {}", e.detail),
    })?;
    if answer.ok() {
        return Ok(());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    use crate::call_failure::CallFailureKind as Kind;
    Err(AttemptError {
        // Read as every API answer is: a refusal does not change on its own, a busy or
        // failing service or a rate limit may.
        retryable: matches!(
            answer.failure_kind(now),
            Kind::Network | Kind::TimedOut | Kind::RateLimited { .. }
        ),
        message: format!(
            "the webhook answered HTTP {}: {}",
            answer.status,
            tail(&String::from_utf8_lossy(&answer.body), 500)
        ),
    })
}

/// One delivery's verdict from its process: a timeout or a non-zero exit is worth another try.
fn judge(
    out: &Captured,
    timed_out: impl FnOnce() -> String,
    what: &str,
    output: &str,
) -> Result<(), AttemptError> {
    if out.timed_out {
        return Err(AttemptError {
            message: timed_out(),
            retryable: true,
        });
    }
    match out.status.and_then(|s| s.code()) {
        Some(0) => Ok(()),
        code => Err(AttemptError {
            message: format!(
                "{what} exited with {}: {}",
                describe_exit(code),
                tail(output, 500)
            ),
            retryable: true,
        }),
    }
}

/// Discord rejects webhook content over 2000 characters; the head of a message (the halt
/// diagnostic's first line) matters most, so the tail is cut.
fn webhook_text(text: &str) -> String {
    const LIMIT: usize = 2000;
    const MARK: &str = "… (truncated; full text in the runner log)";
    if text.chars().count() <= LIMIT {
        return text.to_string();
    }
    let keep = LIMIT - MARK.chars().count();
    let mut cut: String = text.chars().take(keep).collect();
    cut.push_str(MARK);
    cut
}

fn discord_delivered(stdout: &str) -> bool {
    let lower = stdout.to_ascii_lowercase();
    lower.contains("sent via") || lower.contains("message id")
}

fn spawn_error(program: &Path, e: io::Error) -> AttemptError {
    AttemptError {
        retryable: e.kind() != io::ErrorKind::NotFound
            && e.kind() != io::ErrorKind::PermissionDenied,
        message: format!("cannot run {}: {e}", program.display()),
    }
}

fn describe_exit(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("code {c}"),
        None => "a signal".to_string(),
    }
}
