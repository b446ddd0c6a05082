//! Notifications (docs/interfaces.md "Notifications"): Discord through `openclaw`, a Discord/Slack
//! compatible webhook through the runner's HTTP client, or any command; every message is also appended to the
//! orchestration log. Messages carry a severity, are redacted before they leave the process,
//! and identical messages within the dedup window are delivered once with a repeat count.
//!
//! The caller never waits for a channel: [`Notifier::send`] logs, deduplicates and queues,
//! and a background thread delivers with a timeout and retries. [`Notifier::flush`] (and
//! `Drop`) wait a bounded time for the queue to drain, so a halt's alert has a chance to
//! leave before the process exits without a hung CLI being able to keep it alive.
//!
//! Deliveries run through `process` (own process group, bounded output, hard time limit, an
//! optional success marker on stdout).

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::process::{signal_group, ChildSlot};
use crate::redact::redact;

pub use sdlc_machine::severity::Severity;

mod delivery;
mod port;

use delivery::Worker;

/// Where notifications go (besides the log, which always gets them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// `openclaw message send --channel discord --target <target> -m <message>`.
    Discord {
        /// The `openclaw` program.
        openclaw: PathBuf,
        /// The Discord channel or user it sends to.
        target: String,
    },
    /// A Discord- or Slack-compatible incoming webhook, posted by the runner's own HTTP client
    /// (`api_client::transport`) with the JSON body `{"content": msg, "text": msg}`. The URL
    /// appears in no message and on no command line. Content longer than Discord's 2000
    /// characters is cut, with a note pointing to the log.
    Webhook {
        /// The webhook's URL, a secret: whoever has it can post.
        url: String,
    },
    /// `<program> <args...> <message>` with `SDLC_SEVERITY` set to info|warning|alert.
    Command {
        /// The program to run.
        program: PathBuf,
        /// Arguments before the message.
        args: Vec<String>,
    },
}

impl Channel {
    fn name(&self) -> &'static str {
        match self {
            Channel::Discord { .. } => "Discord post",
            Channel::Webhook { .. } => "webhook post",
            Channel::Command { .. } => "notify command",
        }
    }
}

/// The time source for the dedup window; injectable so tests can move time.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Tunables. `Default` gives the contract's values.
#[derive(Clone)]
pub struct NotifyOptions {
    /// Per-attempt time limit of one delivery (openclaw, webhook, command). Default 30 s.
    pub timeout: Duration,
    /// Attempts per channel and message. Default 3.
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one. Default 1 s.
    pub backoff: Duration,
    /// Identical messages within this window are delivered once. Default 10 min.
    pub dedup_window: Duration,
    /// How long `Drop` waits for queued deliveries. Default 10 s.
    pub drop_wait: Duration,
    /// Source of the current time, for deduplication; a fake in tests.
    pub clock: Clock,
    /// Messages below this severity go to the log only, not to the channels (a chat channel
    /// is not for twenty progress lines per issue). Default `Info`: everything.
    pub min_severity: Severity,
}

impl Default for NotifyOptions {
    fn default() -> Self {
        NotifyOptions {
            timeout: Duration::from_secs(30),
            attempts: 3,
            backoff: Duration::from_secs(1),
            dedup_window: Duration::from_secs(600),
            drop_wait: Duration::from_secs(10),
            clock: Arc::new(Instant::now),
            min_severity: Severity::Info,
        }
    }
}

impl std::fmt::Debug for NotifyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyOptions")
            .field("timeout", &self.timeout)
            .field("attempts", &self.attempts)
            .field("backoff", &self.backoff)
            .field("dedup_window", &self.dedup_window)
            .field("drop_wait", &self.drop_wait)
            .field("min_severity", &self.min_severity)
            .finish_non_exhaustive()
    }
}

struct Job {
    severity: Severity,
    text: String,
}

#[derive(Debug)]
struct DedupEntry {
    window_start: Instant,
    suppressed: u32,
}

/// Sends notifications from a background thread. `Sync`: share it behind an `Arc`.
pub struct Notifier {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    inflight: ChildSlot,
    closing: crate::process::StopToken,
    pending: Arc<(Mutex<usize>, Condvar)>,
    dedup: Mutex<HashMap<(Severity, String), DedupEntry>>,
    log: Option<PathBuf>,
    options: NotifyOptions,
}

impl Notifier {
    /// A notifier with the contract's defaults. `log` is the orchestration log; every message
    /// is appended to it whatever the channels do.
    pub fn new(channels: Vec<Channel>, log: Option<PathBuf>) -> Notifier {
        Notifier::with_options(channels, log, NotifyOptions::default())
    }

    /// Defaults, but with the dedup window measured on `clock`.
    pub fn with_clock(channels: Vec<Channel>, log: Option<PathBuf>, clock: Clock) -> Notifier {
        Notifier::with_options(
            channels,
            log,
            NotifyOptions {
                clock,
                ..NotifyOptions::default()
            },
        )
    }

    /// A notifier sending to `channels` (none: log only) and appending every message to `log`, with the delivery options given.
    pub fn with_options(
        channels: Vec<Channel>,
        log: Option<PathBuf>,
        options: NotifyOptions,
    ) -> Notifier {
        let pending = Arc::new((Mutex::new(0usize), Condvar::new()));
        let inflight: ChildSlot = Arc::new(Mutex::new(None));
        let closing = crate::process::StopToken::new();
        let tx = if channels.is_empty() {
            None
        } else {
            let (tx, rx) = mpsc::channel::<Job>();
            let worker = Worker {
                channels,
                log: log.clone(),
                options: options.clone(),
                inflight: Arc::clone(&inflight),
                closing: closing.clone(),
            };
            let pending = Arc::clone(&pending);
            let spawned = thread::Builder::new()
                .name("sdlc-notify".into())
                .spawn(move || {
                    for job in rx {
                        worker.deliver(&job);
                        let (count, cvar) = &*pending;
                        let mut count = lock(count);
                        *count = count.saturating_sub(1);
                        cvar.notify_all();
                    }
                });
            match spawned {
                Ok(_) => Some(tx),
                Err(e) => {
                    append_log(
                        log.as_deref(),
                        &format!(
                            "[notify] Warning: cannot start the notification thread ({e}); \
                             messages go to this log only"
                        ),
                    );
                    None
                }
            }
        };
        Notifier {
            tx: Mutex::new(tx),
            inflight,
            closing,
            pending,
            dedup: Mutex::new(HashMap::new()),
            log,
            options,
        }
    }

    /// Logs the message and queues it for every channel. Never blocks on a channel and never
    /// fails: delivery problems end up in the log.
    pub fn send(&self, severity: Severity, message: &str) {
        let text = crate::sanitize::block(&redact(message)).into_owned();
        if severity < self.options.min_severity {
            append_log(
                self.log.as_deref(),
                &format!("[notify] {} {text} (log only)", severity.prefix()),
            );
            return;
        }
        let repeats = match self.dedup_decision(severity, &text) {
            Some(repeats) => repeats,
            None => {
                append_log(
                    self.log.as_deref(),
                    &format!(
                        "[notify] {} {text} (duplicate within {}s, not sent again)",
                        severity.prefix(),
                        self.options.dedup_window.as_secs()
                    ),
                );
                return;
            }
        };
        let mut full = format!("{} {text}", severity.prefix());
        if repeats > 0 {
            full.push_str(&format!(" (repeated {repeats} times)"));
        }
        append_log(self.log.as_deref(), &format!("[notify] {full}"));

        let tx = lock(&self.tx);
        if let Some(tx) = tx.as_ref() {
            let (count, _) = &*self.pending;
            *lock(count) += 1;
            if tx
                .send(Job {
                    severity,
                    text: full,
                })
                .is_err()
            {
                // The worker is gone (it panicked); the log line above is all we can do.
                let mut count = lock(count);
                *count = count.saturating_sub(1);
            }
        }
    }

    /// Waits until every queued message has been handled or `timeout` has passed.
    pub fn flush(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let (count, cvar) = &*self.pending;
        let mut count = lock(count);
        while *count > 0 {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            count = match cvar.wait_timeout(count, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// `Some(n)`: deliver, after `n` suppressed duplicates. `None`: a duplicate inside the
    /// window, suppressed (and counted).
    fn dedup_decision(&self, severity: Severity, text: &str) -> Option<u32> {
        let now = (self.options.clock)();
        let window = self.options.dedup_window;
        let mut dedup = lock(&self.dedup);
        // Forget windows that ended with nothing suppressed, so the map stays small.
        dedup.retain(|_, e| {
            e.suppressed > 0 || now.saturating_duration_since(e.window_start) < window
        });
        let key = (severity, text.to_string());
        match dedup.get_mut(&key) {
            Some(entry) if now.saturating_duration_since(entry.window_start) < window => {
                entry.suppressed += 1;
                None
            }
            Some(entry) => {
                let repeats = entry.suppressed;
                entry.window_start = now;
                entry.suppressed = 0;
                Some(repeats)
            }
            None => {
                dedup.insert(
                    key,
                    DedupEntry {
                        window_start: now,
                        suppressed: 0,
                    },
                );
                Some(0)
            }
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.flush(self.options.drop_wait);
        // Past the wait, whatever is still queued or running is abandoned: no new attempts,
        // and a hanging CLI is killed rather than outliving the runner.
        self.closing.stop();
        lock(&self.tx).take();
        let mut inflight = lock(&self.inflight);
        if let Some(pid) = inflight.take() {
            signal_group(pid);
        }
    }
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("log", &self.log)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Appends `[<ISO-8601 UTC>] <line>` to the orchestration log. Errors are ignored: the log
/// is best effort and must never stop the run.
fn append_log(log: Option<&Path>, line: &str) {
    let Some(path) = log else { return };
    let stamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut entry = format!("[{stamp}] {line}");
    if !entry.ends_with('\n') {
        entry.push('\n');
    }
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(path) {
        // One write call per entry so concurrent appenders do not interleave inside a line.
        let _ = file.write_all(entry.as_bytes());
    }
}

/// The last `max` characters of `text`, trimmed.
pub(crate) fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= max {
        text.to_string()
    } else {
        text.chars().skip(count - max).collect()
    }
}
