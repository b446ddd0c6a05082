//! The live part of `status`: the step a runner is running now (issue, step, attempt, when it
//! started, turns and cost so far, the last tool the agent used) and the wait it is in (what it
//! waits for and until when). Only the driver knows these; it keeps them in `live.json` in its
//! runner directory (a fleet worker in its own clone's) for `status`, `/api/status`, the page
//! and `status --watch` to read.
//!
//! The file is a courtesy, never a cost to the run: changed when a step or wait starts or ends
//! and, while the agent streams, at most once per [`MIN_INTERVAL`]; replaced atomically (never
//! through a link) but never fsync'd, by a thread of its own, so the driver never waits for the
//! file system (a replacement is a create and a rename, and the rename frees the old file's
//! blocks, which a file system mounted with `discard` does synchronously: 0.2 ms median but
//! 3 ms at the 90th percentile on the benchmark machine, twice per step); a failed write is
//! reported once and otherwise ignored.
//! Times are absolute (a start time, an end time), so a reader computes the elapsed time, and
//! the process id says whose snapshot it is: a reader shows it only while that runner holds
//! the lock, so a dead runner's last snapshot is never mistaken for live work.

use crate::agent::stream::StreamSummary;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The file's name in the runner directory.
pub const FILE_NAME: &str = "live.json";
/// The shortest time between two writes caused by the agent's stream.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// What `live.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The runner process that wrote it.
    pub pid: u32,
    pub step: Option<RunningStep>,
    pub wait: Option<Wait>,
    /// Every host the allowlist's proxy refused the agent in this run (`network:
    /// "allowlist"`), each once, in the order first refused; kept after the runner exits,
    /// until the next run starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_hosts: Vec<RefusedHost>,
    /// GitHub's API as this runner process has used it so far (requests answered, `304`s
    /// among them, the rate-limit budget the last answer named), as of the last write; absent
    /// before its first GitHub request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub github: Option<crate::stats::GithubRequests>,
}

/// A host the allowlist's proxy refused the agent, and the attempt it first refused it in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusedHost {
    pub host: String,
    pub issue: u32,
    pub step: String,
    pub attempt: u32,
    pub at: DateTime<Utc>,
}

/// The most refused hosts one run keeps (an agent trying hosts in a loop); the attempt logs
/// keep each attempt's.
pub const MAX_REFUSED_HOSTS: usize = 100;

/// The attempt being run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningStep {
    pub issue: u32,
    pub step: String,
    pub attempt: u32,
    pub started_at: DateTime<Utc>,
    /// Assistant turns the agent streamed so far (0 for the runner's own steps).
    pub turns: u32,
    /// What the agent reported it cost; agents report it with their result, so `None` while
    /// the step runs.
    pub cost_usd: Option<f64>,
    pub last_tool: Option<String>,
}

/// A wait without spending an attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wait {
    /// What it waits for: the failure class (`RATE_LIMIT`, `QUOTA`, `OVERLOADED`, …),
    /// `NETWORK`, or `FLEET_PAUSE` (another worker's rate limit or quota).
    pub reason: String,
    pub seconds: u64,
    pub started_at: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

/// The file of the fleet's merge train in the project's runner directory.
pub const TRAIN_FILE: &str = "train.json";

/// What `train.json` holds: the merge train of `run --workers N` as its coordinator last saw
/// it, written by the fleet when it changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrainSnapshot {
    /// The fleet process that wrote it.
    pub pid: u32,
    /// The PRs in the train, the head first.
    pub cars: Vec<TrainCar>,
    /// PRs the train settled (to land, or returned to meet their failure), in the order their
    /// merges go.
    pub settled: Vec<u32>,
    /// CI runs the train asked for so far.
    pub runs: u64,
}

/// One PR in the merge train.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrainCar {
    pub issue: u32,
    /// 0: the head.
    pub position: usize,
    /// The issues merged onto main in the tree it is tested in, in order (itself last).
    pub tree: Vec<u32>,
    /// Its tree's verdict: `untested`, `testing`, `passed` or `failed`.
    pub verdict: String,
    /// When the PR asked to merge and joined the train (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined_at: Option<chrono::DateTime<chrono::Utc>>,
    /// How long it has waited in the train, in seconds, as `status` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_seconds: Option<u64>,
}

/// Reads the train in `runner_dir` (never through a link), if one is on record.
pub fn read_train(runner_dir: &Path) -> Option<TrainSnapshot> {
    let bytes = crate::safe_fs::read_no_follow(&runner_dir.join(TRAIN_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Reads the snapshot in `runner_dir` (never through a link); `None` when there is none or it
/// cannot be read.
pub fn read(runner_dir: &Path) -> Option<Snapshot> {
    let bytes = crate::safe_fs::read_no_follow(&runner_dir.join(FILE_NAME)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The driver's writer of `live.json`; cheap to clone (the clones share one snapshot).
#[derive(Clone)]
pub struct LiveStatus {
    inner: Arc<Mutex<Writer>>,
}

struct Writer {
    now: Snapshot,
    last_write: Option<Instant>,
    /// Changed since the last write.
    dirty: bool,
    disk: Disk,
}

/// How a snapshot reaches the file: [`crate::safe_fs::replace_unsynced`], or a test's stand-in.
type Put = Arc<dyn Fn(&Path, &[u8]) -> std::io::Result<()> + Send + Sync>;

/// The thread that puts snapshots on disk, started with the first one. It writes the latest
/// snapshot handed to it (one not yet written when a newer one comes is skipped), in order;
/// dropping the last [`LiveStatus`] lets it write what is pending and waits for it.
struct Disk {
    path: PathBuf,
    put: Put,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

#[derive(Default)]
struct Queue {
    next: Option<Vec<u8>>,
    /// Snapshots handed over, and the number of the last one written (or skipped).
    queued: u64,
    written: u64,
    closed: bool,
    /// The first failed write, until the driver logs it; later failures are silent.
    warning: Option<String>,
    warned: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Disk {
    fn hand_over(&mut self, bytes: Vec<u8>) {
        {
            let mut q = lock(&self.shared.queue);
            q.next = Some(bytes);
            q.queued += 1;
        }
        self.shared.changed.notify_all();
        if self.thread.is_none() {
            let (shared, path, put) = (
                Arc::clone(&self.shared),
                self.path.clone(),
                Arc::clone(&self.put),
            );
            let spawned = std::thread::Builder::new()
                .name("live-status".into())
                .spawn(move || write_until_closed(&shared, &path, &put));
            match spawned {
                Ok(handle) => self.thread = Some(handle),
                // No thread to be had: the driver writes this one itself.
                Err(_) => write_pending(&self.shared, &self.path, &self.put),
            }
        }
    }

    /// Waits until every snapshot handed over is on disk.
    #[cfg(test)]
    fn settle(&self) {
        let mut q = lock(&self.shared.queue);
        while q.written < q.queued && self.thread.is_some() {
            q = self
                .shared
                .changed
                .wait(q)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        lock(&self.shared.queue).closed = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_until_closed(shared: &Shared, path: &Path, put: &Put) {
    loop {
        write_pending(shared, path, put);
        let q = lock(&shared.queue);
        if q.next.is_some() {
            continue;
        }
        if q.closed {
            return;
        }
        drop(
            shared
                .changed
                .wait(q)
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
    }
}

/// Writes the latest snapshot handed over, if any.
fn write_pending(shared: &Shared, path: &Path, put: &Put) {
    let (bytes, number) = {
        let mut q = lock(&shared.queue);
        match q.next.take() {
            Some(bytes) => (bytes, q.queued),
            None => return,
        }
    };
    let written = put(path, &bytes);
    let mut q = lock(&shared.queue);
    q.written = number;
    if let Err(e) = written {
        if !q.warned {
            q.warned = true;
            q.warning = Some(format!(
                "warning: cannot write the live status {} ({e}); `status` will not show the running step (the run goes on)",
                path.display()
            ));
        }
    }
    drop(q);
    shared.changed.notify_all();
}

impl LiveStatus {
    pub fn new(runner_dir: &Path) -> LiveStatus {
        LiveStatus::with_put(
            runner_dir,
            Arc::new(|path: &Path, bytes: &[u8]| crate::safe_fs::replace_unsynced(path, bytes)),
        )
    }

    fn with_put(runner_dir: &Path, put: Put) -> LiveStatus {
        LiveStatus {
            inner: Arc::new(Mutex::new(Writer {
                now: Snapshot {
                    pid: std::process::id(),
                    ..Snapshot::default()
                },
                last_write: None,
                dirty: false,
                disk: Disk {
                    path: runner_dir.join(FILE_NAME),
                    put,
                    shared: Arc::default(),
                    thread: None,
                },
            })),
        }
    }

    fn with(&self, f: impl FnOnce(&mut Writer)) {
        f(&mut lock(&self.inner));
    }

    /// Waits until every change so far is on disk.
    #[cfg(test)]
    fn settle(&self) {
        self.with(|w| w.disk.settle());
    }

    /// This runner runs nothing yet: replaces what an earlier runner left.
    pub fn reset(&self) {
        self.with(|w| {
            w.now.step = None;
            w.now.wait = None;
            w.now.refused_hosts.clear();
            w.write();
        });
    }

    /// The allowlist's proxy refused the agent `hosts` in this attempt: each host not yet
    /// refused in this run is added, with the attempt (at most [`MAX_REFUSED_HOSTS`]).
    pub fn hosts_refused(&self, issue: u32, step: &str, attempt: u32, hosts: &[String]) {
        self.with(|w| {
            let before = w.now.refused_hosts.len();
            for host in hosts {
                let known = w.now.refused_hosts.iter().any(|r| &r.host == host);
                if !known && w.now.refused_hosts.len() < MAX_REFUSED_HOSTS {
                    w.now.refused_hosts.push(RefusedHost {
                        host: host.clone(),
                        issue,
                        step: step.to_string(),
                        attempt,
                        at: Utc::now(),
                    });
                }
            }
            if w.now.refused_hosts.len() != before {
                w.write();
            }
        });
    }

    /// `name`: the step's key, or `addressReview` for a review round (an attempt of
    /// monitorCI's to the machine, but what runs is the round).
    pub fn step_started(&self, issue: u32, name: &str, attempt: u32) {
        self.with(|w| {
            w.now.step = Some(RunningStep {
                issue,
                step: name.to_string(),
                attempt,
                started_at: Utc::now(),
                turns: 0,
                cost_usd: None,
                last_tool: None,
            });
            w.write();
        });
    }

    pub fn step_ended(&self) {
        self.with(|w| {
            if w.now.step.take().is_some() {
                w.write();
            }
        });
    }

    /// Takes what the agent streamed so far; written when [`MIN_INTERVAL`] has passed since
    /// the last write, else by the next [`LiveStatus::flush_due`].
    pub fn observe(&self, summary: &StreamSummary) {
        self.with(|w| {
            let Some(s) = w.now.step.as_mut() else { return };
            let cost = summary.result.as_ref().and_then(|r| r.total_cost_usd);
            if s.turns != summary.turns || s.cost_usd != cost || s.last_tool != summary.last_tool {
                s.turns = summary.turns;
                s.cost_usd = cost;
                s.last_tool.clone_from(&summary.last_tool);
                w.dirty = true;
            }
            w.flush_due();
        });
    }

    /// Writes a change held back by the interval, once the interval has passed.
    pub fn flush_due(&self) {
        self.with(Writer::flush_due);
    }

    /// Flushes held-back changes every [`MIN_INTERVAL`] until the returned task is aborted (an
    /// agent that streams a tool call and then works silently is still shown).
    pub fn tick(&self) -> tokio::task::JoinHandle<()> {
        let live = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(MIN_INTERVAL).await;
                live.flush_due();
            }
        })
    }

    pub fn wait_started(&self, reason: &str, seconds: u64) {
        self.with(|w| {
            let started_at = Utc::now();
            let until = i64::try_from(seconds)
                .ok()
                .and_then(chrono::TimeDelta::try_seconds)
                .and_then(|d| started_at.checked_add_signed(d))
                .unwrap_or(started_at);
            w.now.wait = Some(Wait {
                reason: reason.to_string(),
                seconds,
                started_at,
                until,
            });
            w.write();
        });
    }

    pub fn wait_ended(&self) {
        self.with(|w| {
            if w.now.wait.take().is_some() {
                w.write();
            }
        });
    }

    /// The first write that failed, once, for the driver's log (as soon as the writing thread
    /// has seen it fail: the driver does not wait for it).
    pub fn take_warning(&self) -> Option<String> {
        let mut out = None;
        self.with(|w| out = lock(&w.disk.shared.queue).warning.take());
        out
    }
}

impl Writer {
    fn flush_due(&mut self) {
        if self.dirty && self.last_write.is_none_or(|t| t.elapsed() >= MIN_INTERVAL) {
            self.write();
        }
    }

    fn write(&mut self) {
        self.last_write = Some(Instant::now());
        self.dirty = false;
        self.now.github = github_so_far();
        // A snapshot of plain strings and numbers always serialises.
        if let Ok(bytes) = serde_json::to_vec(&self.now) {
            self.disk.hand_over(bytes);
        }
    }
}

/// GitHub's requests so far, for the snapshot: none before the first.
fn github_so_far() -> Option<crate::stats::GithubRequests> {
    Some(crate::stats::github_requests()).filter(|g| g.requests > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::Step;

    #[test]
    fn the_snapshot_carries_the_github_requests_made_so_far() {
        let dir = tempfile::tempdir().unwrap();
        let live = LiveStatus::new(dir.path());
        // Counts are the process's (other tests may add theirs): at least this one.
        crate::stats::github_request(true, Some(4321));
        live.wait_started("CI", 10);
        live.settle();
        let github = read(dir.path()).unwrap().github.expect("counted");
        assert!(
            github.requests >= 1 && github.not_modified >= 1,
            "{github:?}"
        );
        assert!(github.rate_limit_remaining.is_some(), "{github:?}");
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(text.contains("\"github\":{\"requests\":"), "{text}");
        assert!(text.contains("\"rateLimitRemaining\":"), "{text}");
    }

    #[test]
    fn a_step_is_written_at_once_and_the_stream_at_most_once_a_second() {
        let dir = tempfile::tempdir().unwrap();
        let live = LiveStatus::new(dir.path());
        live.step_started(7, Step::Implement.key(), 2);
        live.settle();
        let first = read(dir.path()).unwrap();
        assert_eq!(first.pid, std::process::id());
        let step = first.step.unwrap();
        assert_eq!(
            (step.issue, step.step.as_str(), step.attempt),
            (7, "implement", 2)
        );

        let summary = StreamSummary {
            turns: 3,
            last_tool: Some("Edit".into()),
            ..Default::default()
        };
        live.observe(&summary);
        live.settle();
        let held = read(dir.path()).unwrap().step.unwrap();
        assert_eq!(held.turns, 0, "within the interval the change waits");
        std::thread::sleep(MIN_INTERVAL);
        live.flush_due();
        live.settle();
        let flushed = read(dir.path()).unwrap().step.unwrap();
        assert_eq!(
            (flushed.turns, flushed.last_tool.as_deref()),
            (3, Some("Edit"))
        );

        live.step_ended();
        live.wait_started("RATE_LIMIT", 30);
        live.settle();
        let wait = read(dir.path()).unwrap();
        assert!(wait.step.is_none());
        let wait = wait.wait.unwrap();
        assert_eq!(wait.reason, "RATE_LIMIT");
        assert_eq!((wait.until - wait.started_at).num_seconds(), 30);
        live.wait_ended();
        live.settle();
        assert_eq!(read(dir.path()).unwrap().wait, None);
        assert_eq!(live.take_warning(), None);
    }

    #[test]
    fn refused_hosts_are_kept_each_once_with_the_attempt_first_refused_until_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let live = LiveStatus::new(dir.path());
        live.hosts_refused(3, "implement", 1, &["a.example".into(), "b.example".into()]);
        live.step_started(3, Step::Verify.key(), 2);
        live.hosts_refused(3, "verify", 2, &["b.example".into(), "c.example".into()]);
        live.step_ended();
        live.settle();
        let refused = read(dir.path()).unwrap().refused_hosts;
        let seen: Vec<(&str, &str, u32)> = refused
            .iter()
            .map(|r| (r.host.as_str(), r.step.as_str(), r.attempt))
            .collect();
        assert_eq!(
            seen,
            [
                ("a.example", "implement", 1),
                ("b.example", "implement", 1),
                ("c.example", "verify", 2)
            ]
        );
        let many: Vec<String> = (0..2 * MAX_REFUSED_HOSTS)
            .map(|i| format!("h{i}"))
            .collect();
        live.hosts_refused(3, "verify", 3, &many);
        live.settle();
        assert_eq!(
            read(dir.path()).unwrap().refused_hosts.len(),
            MAX_REFUSED_HOSTS
        );
        // The next run starts without them.
        let next = LiveStatus::new(dir.path());
        next.reset();
        next.settle();
        assert!(read(dir.path()).unwrap().refused_hosts.is_empty());
    }

    #[test]
    fn a_failed_write_is_reported_once_and_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let live = LiveStatus::new(&gone);
        live.step_started(1, Step::Implement.key(), 1);
        live.settle();
        assert!(live.take_warning().unwrap().contains("live status"));
        live.step_ended();
        live.settle();
        assert_eq!(live.take_warning(), None, "said once");

        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(read(dir.path()), None, "a link is not read through");
        LiveStatus::new(dir.path()).reset();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn the_driver_never_waits_for_the_file_system_and_the_last_snapshot_wins() {
        use std::sync::mpsc;
        let dir = tempfile::tempdir().unwrap();
        // A file system that takes its time: each write waits for the test to let it go (or
        // 10 s, so that a driver that writes itself fails the test instead of hanging it).
        let (release, gate) = mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        let (wrote, writes) = mpsc::channel::<Vec<u8>>();
        let wrote = Mutex::new(wrote);
        let put: Put = Arc::new(move |path: &Path, bytes: &[u8]| {
            let _ = lock(&gate).recv_timeout(Duration::from_secs(10));
            let _ = lock(&wrote).send(bytes.to_vec());
            crate::safe_fs::replace_unsynced(path, bytes)
        });
        let live = LiveStatus::with_put(dir.path(), put);
        let started = Instant::now();
        live.step_started(1, Step::Implement.key(), 1);
        live.step_ended();
        live.step_started(1, Step::Simplify.key(), 1);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the driver waited for the writes"
        );
        for _ in 0..3 {
            release.send(()).unwrap();
        }
        live.settle();
        let last = read(dir.path()).unwrap().step.unwrap();
        assert_eq!(last.step, "simplify", "the newest snapshot is on disk");
        drop(live);
        let written: Vec<Vec<u8>> = writes.try_iter().collect();
        assert!(
            (1..=3).contains(&written.len()),
            "{} writes for three changes",
            written.len()
        );
    }
}
