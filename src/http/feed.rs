//! The journal as a feed: a task of the server reads each journal the run writes (the
//! project's, or every worker's under `run --workers`) from where it stood, redacts every
//! record, keeps the last ones for new clients and broadcasts the rest as they are appended.
//! It only reads the files: the driver never waits for it, and a client that does not keep
//! up is dropped from a bounded channel rather than buffered for.

use super::metrics::Metrics;
use crate::journal::{Journals, Line};
use crate::redact::redact_json;
use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// Records kept for a client that connects late (the page's "recent events").
pub const BACKLOG: usize = 200;
/// Records a client may fall behind before it is dropped (it reconnects and starts over).
pub const CHANNEL: usize = 256;
/// How much of a journal's end is read when the server starts, for the backlog.
const SEED_BYTES: u64 = 256 * 1024;
/// A line longer than this is not a journal record a client needs whole: it is skipped.
const MAX_LINE: usize = 4 * 1024 * 1024;

/// One record as clients receive it.
#[derive(Debug, Clone)]
pub struct Item {
    /// `<worker>:<seq>`: the SSE event id.
    pub id: String,
    /// The redacted record as JSON, with the worker's name.
    pub data: Arc<str>,
}

struct Source {
    worker: String,
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

struct Inner {
    backlog: VecDeque<Item>,
    metrics: Metrics,
    sender: Option<broadcast::Sender<Item>>,
}

/// The shared feed; its lock is the server's own, never one the driver takes.
pub struct Feed {
    inner: Mutex<Inner>,
}

impl Feed {
    pub fn new(metrics: Metrics) -> Feed {
        let (sender, _) = broadcast::channel(CHANNEL);
        Feed {
            inner: Mutex::new(Inner {
                backlog: VecDeque::with_capacity(BACKLOG),
                metrics,
                sender: Some(sender),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The backlog and a receiver of everything after it, taken together so that nothing
    /// falls between them. `None` once the server is stopping.
    pub fn subscribe(&self) -> Option<(Vec<Item>, broadcast::Receiver<Item>)> {
        let inner = self.lock();
        let receiver = inner.sender.as_ref()?.subscribe();
        Some((inner.backlog.iter().cloned().collect(), receiver))
    }

    /// The exposition, with the money and GitHub gauges set from `status` (the status
    /// document) when there is one.
    pub fn metrics(&self, status: Option<&serde_json::Value>) -> String {
        let mut inner = self.lock();
        if let Some(status) = status {
            inner.metrics.set_money(status);
            inner.metrics.set_github(status);
            inner.metrics.train.set(status);
            inner.metrics.set_weakening(status);
        }
        inner.metrics.encode()
    }

    /// Ends every client's stream after what was already sent.
    pub fn close(&self) {
        self.lock().sender = None;
    }

    fn publish(&self, worker: &str, line_bytes: &[u8], live: bool) {
        let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(line_bytes) else {
            return;
        };
        let typed = serde_json::from_value::<Line>(value.clone()).ok();
        redact_json(&mut value);
        let seq = value.get("seq").and_then(|s| s.as_u64()).unwrap_or(0);
        if let Some(map) = value.as_object_mut() {
            map.insert("worker".into(), worker.into());
        }
        let item = Item {
            id: format!("{worker}:{seq}"),
            data: Arc::from(value.to_string()),
        };
        let mut inner = self.lock();
        if let Some(line) = &typed {
            if live {
                inner.metrics.observe(worker, line);
            } else if let crate::journal::Record::Event { state, .. } = &line.record {
                inner.metrics.set_state(worker, state);
            }
        }
        if inner.backlog.len() == BACKLOG {
            inner.backlog.pop_front();
        }
        inner.backlog.push_back(item.clone());
        if let Some(sender) = &inner.sender {
            // No receiver is not an error: nobody is watching.
            let _ = sender.send(item);
        }
    }
}

/// Follows the journals until stopped; the caller polls with [`Tail::poll`].
pub struct Tail {
    journals: Journals,
    sources: Vec<Source>,
}

impl Tail {
    /// Starts at the end of every journal that exists, after putting its last records in
    /// the backlog (and the workers' states in the metrics).
    pub fn new(journals: Journals, feed: &Feed) -> Tail {
        let mut tail = Tail {
            journals,
            sources: Vec::new(),
        };
        tail.discover(feed, true);
        tail
    }

    fn discover(&mut self, feed: &Feed, seeding: bool) {
        for (worker, path) in self.journals.list() {
            if self.sources.iter().any(|s| s.path == path) {
                continue;
            }
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let mut source = Source {
                worker,
                path,
                offset: 0,
                partial: Vec::new(),
            };
            if seeding {
                // The end of what was there before: the backlog, not counted in the metrics.
                source.offset = meta.len().saturating_sub(SEED_BYTES);
                let skip_first = source.offset > 0;
                read_new(&mut source, feed, false, skip_first);
            }
            self.sources.push(source);
        }
    }

    /// Reads what was appended since the last poll, and any journal that appeared.
    pub fn poll(&mut self, feed: &Feed) {
        self.discover(feed, false);
        for source in &mut self.sources {
            read_new(source, feed, true, false);
        }
    }
}

/// Publishes every complete line after `source.offset`; a torn last line waits for its end.
fn read_new(source: &mut Source, feed: &Feed, live: bool, mut skip_first: bool) {
    let Ok(mut file) = std::fs::File::open(&source.path) else {
        return;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return;
    };
    if len < source.offset {
        // Cut back (a torn line removed on open): go on from the new end.
        source.offset = len;
        source.partial.clear();
        return;
    }
    if len == source.offset || file.seek(SeekFrom::Start(source.offset)).is_err() {
        return;
    }
    let mut bytes = Vec::new();
    if file
        .take(len - source.offset)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return;
    }
    source.offset += bytes.len() as u64;
    source.partial.extend_from_slice(&bytes);
    let mut start = 0;
    while let Some(pos) = source.partial[start..].iter().position(|&b| b == b'\n') {
        let line = &source.partial[start..start + pos];
        if skip_first {
            skip_first = false;
        } else if !line.is_empty() {
            feed.publish(&source.worker, line, live);
        }
        start += pos + 1;
    }
    source.partial.drain(..start);
    if source.partial.len() > MAX_LINE {
        source.partial.clear();
    }
}
