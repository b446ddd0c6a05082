//! The write-ahead journal: `<common git dir>/sdlc-runner/journal.jsonl` (see `runner_dir`),
//! one JSON object per line for every machine event and effect, written and fsync'd before the
//! effect is performed. It is the authority on progress: what it does not record as finished
//! is not finished, whatever the work tree shows. Every counter of docs/counters-and-bounds.md is derived from it by re-driving the pure machine with
//! the recorded events, so a crash, `kill -9` or signal never resets the failure-loop
//! protection. It also holds the session boundaries that make a halt sticky.
//!
//! Crash tolerance: `append` writes a batch with one `write` and one `fsync` and only then
//! returns, so a line without its trailing newline was never acknowledged. Such a torn last
//! line (or a garbage last line) is reported and cut away on `open`, so later appends stay
//! valid JSONL. Garbage anywhere else means the file was edited or damaged: that is an error
//! naming the line, never a guess.

use crate::machine::{Core, Effect, Event, HaltReason, Limits, Mode, Report, State};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The journal of a project (inside its common git directory).
pub fn journal_path(project: &Path) -> Result<PathBuf, crate::runner_dir::RunnerDirError> {
    Ok(crate::runner_dir::RunnerDir::locate(project)?.journal())
}

pub use crate::failure::FailureDetail;

/// An agent's process group, recorded as soon as it is spawned: if the runner dies, the next
/// one can stop whatever of that group is still running (the start time tells a reused pid
/// apart).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AgentGroup {
    /// The process-group id (the agent's pid).
    pub pgid: i32,
    /// The leader's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub start_ticks: u64,
}

/// What one line records.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Record {
    /// A session began: what it runs under, so that a replay rebuilds the same machine.
    SessionStart {
        /// The limits the machine was built with.
        limits: Limits,
        /// Whole run, single issue or single step.
        mode: Mode,
        /// The runner's pid.
        pid: u32,
        /// The runner's version (`CARGO_PKG_VERSION`).
        version: String,
    },
    /// An event fed to the machine and the name of the state it led to.
    Event {
        /// The event as fed.
        event: Event,
        /// The name of the state it led to.
        state: String,
        /// What the attempt or the failed call reported with the event said (redacted, its
        /// tail): the machine's last words for the diagnostics. Absent when it said nothing
        /// new, and in journals of earlier versions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        said: Option<String>,
    },
    /// An effect the machine emitted for the preceding event, before it is performed.
    Effect {
        /// The effect as emitted.
        effect: Effect,
        /// The name of the state the machine was in.
        state: String,
    },
    /// The session ended.
    SessionEnd {
        /// How.
        end: SessionEnd,
    },
    /// The failure context of the `StepFailed` event just before it.
    Failure {
        /// What the classifier said.
        detail: FailureDetail,
    },
    /// An agent process group was spawned.
    Agent {
        /// The group's id and leader start time.
        group: AgentGroup,
    },
}

/// How a session ended. A signal shutdown is not an end: the next run continues the session.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "how", rename_all = "camelCase")]
pub enum SessionEnd {
    /// The runner exited by itself with `code`.
    Exit {
        /// The process exit code.
        code: u8,
    },
    /// The machine halted.
    Halt {
        /// Why, as the machine said.
        reason: HaltReason,
        /// The halt's one-line headline, shown until acknowledged.
        headline: String,
    },
    /// `run --ack-halt`: the operator has seen the halt; a new session may start.
    HaltAcknowledged,
}

/// The journal format this runner writes and reads: every line carries it as `v`. A line
/// without `v` was written before the format had a version (format 1, which reads the same).
/// A line of a higher format comes from a newer runner: it is never read as torn nor cut away.
pub const FORMAT: u32 = 2;

fn format_1() -> u32 {
    1
}

/// One line of the file.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Line {
    /// The format the line was written in (see [`FORMAT`]).
    #[serde(default = "format_1")]
    pub v: u32,
    /// Sequence number, one more than the line before it across sessions.
    pub seq: u64,
    /// RFC 3339, UTC.
    pub time: String,
    /// The id of the session the line belongs to.
    pub session: String,
    #[serde(flatten)]
    /// What the line records, flattened into it (`kind` names it).
    pub record: Record,
}

#[derive(Debug, thiserror::Error)]
/// Why the journal could not be read or written; each message says what to do.
pub enum JournalError {
    #[error("{}: {action}: {source} (check the permissions of the project's .claude directory and the free disk space)", path.display())]
    /// A file operation failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What the runner was doing (`append`, `open`, …).
        action: &'static str,
        #[source]
        /// The operating system's error.
        source: io::Error,
    },
    #[error("{}:{line}: not a journal record ({message}); the journal was damaged or edited: move it aside to start over, losing the session's counters", path.display())]
    /// A line before the last one is not a journal record.
    Garbage {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// What the parser said.
        message: String,
    },
    #[error("{}:{line}: {message}; the journal was damaged or edited: move it aside to start over, losing the session's counters", path.display())]
    /// A line is a record but does not follow from the ones before (sequence, session).
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// What is inconsistent.
        message: String,
    },
    #[error("{}: no session is open: call begin or continue_session before appending (a bug in the runner)", path.display())]
    /// An append without an open session: a bug in the runner.
    NoSession {
        /// The file.
        path: PathBuf,
    },
    /// A line written by a newer runner: reading on (or cutting it as torn) would lose it.
    #[error("{}:{line}: a record of journal format {version}, newer than the format {FORMAT} this runner reads; run the sdlc-runner version that wrote it (the journal was left as it is)", path.display())]
    NewerFormat {
        /// The file.
        path: PathBuf,
        /// The line's 1-based number.
        line: u64,
        /// The format the line says it has.
        version: u32,
    },
    /// The file the runner appends to is no longer the journal (removed, replaced): writing on
    /// would record progress nobody can read back.
    #[error("{what}; the runner stops rather than write into a file nobody will read")]
    Vanished {
        /// What happened to the file.
        what: String,
    },
}

/// A session as the file records it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenSession {
    /// The session id.
    pub id: String,
    /// The limits it started with.
    pub limits: Limits,
    /// The mode it started in.
    pub mode: Mode,
    /// The recorded events, in order.
    pub events: Vec<Event>,
    /// The same events with their line's seq and the recorded state after each.
    pub recorded: Vec<RecordedEvent>,
    /// Agent process groups spawned in the session, in order.
    pub agents: Vec<AgentGroup>,
    /// The effects recorded with the last event. Effects of earlier events were all performed
    /// before the next event was recorded; these may have been cut short by a crash.
    pub last_effects: Vec<Effect>,
    /// Every `MarkEscalated`, `RecordMerged` and `Unquarantine` recorded in the session, in
    /// order: what the tracker must show once the session is over, even if a call was given up
    /// on.
    pub tracker_effects: Vec<Effect>,
}

#[derive(Debug, Clone, PartialEq)]
/// One event of the open session as recorded, to replay it.
pub struct RecordedEvent {
    /// Its sequence number.
    pub seq: u64,
    /// The event.
    pub event: Event,
    /// What the event reported (a `StepFailed`'s failure context, what was said), fed to the
    /// machine with it.
    pub report: Report,
    /// The state it led to.
    pub state: String,
}

/// What `open`/`read` found in the file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovered {
    /// The last session, if it did not end (crash, kill -9, signal shutdown): continue it.
    pub open_session: Option<OpenSession>,
    /// `(session, headline)`: the last session ended in a halt nobody acknowledged.
    pub sticky_halt: Option<(String, String)>,
    /// A torn or garbage last line: what it was. `open` cuts it away; `read` leaves it.
    pub torn_line: Option<String>,
    /// Valid lines in the file.
    pub lines: u64,
    /// The last session in the file, ended or not (for `status` after a halt).
    pub last_session: Option<OpenSession>,
    /// How `last_session` ended; `None` while it is open.
    pub last_end: Option<SessionEnd>,
}

/// The parsed file.
#[derive(Debug, Clone, Default)]
pub struct Contents {
    /// Every valid line, in order.
    pub lines: Vec<Line>,
    /// A torn or garbage last line, as text.
    pub torn_line: Option<String>,
    /// Bytes up to the end of the last valid line.
    pub valid_len: u64,
}

/// Reads and parses the file without modifying it; a missing file is empty.
pub fn read_contents(path: &Path) -> Result<Contents, JournalError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Contents::default()),
        Err(source) => {
            return Err(JournalError::Io {
                path: path.to_path_buf(),
                action: "cannot read the journal",
                source,
            })
        }
    };
    parse(&bytes, path)
}

/// Below this size a journal is parsed on one thread.
const PARALLEL_PARSE_BYTES: usize = 8 << 20;

/// Splits `bytes` into lines. Blank lines are skipped; the last segment is torn when it lacks
/// its newline or does not parse; any other bad line is an error naming its number.
///
/// A large journal (a long unattended run, or `replay` of one) is cut at newlines into one
/// chunk per core, parsed in parallel and joined; the result, errors included, is the one a
/// single pass gives.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Contents, JournalError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if bytes.len() < PARALLEL_PARSE_BYTES || threads < 2 {
        return parse_range(bytes, 0, bytes.len(), path);
    }
    parse_chunked(bytes, path, threads)
}

/// [`parse`] in `threads` chunks cut at newlines.
fn parse_chunked(bytes: &[u8], path: &Path, threads: usize) -> Result<Contents, JournalError> {
    let mut bounds = vec![0usize];
    for k in 1..threads {
        let at = bytes.len() * k / threads;
        let start = bounds.last().copied().unwrap_or(0).max(at);
        match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(i) if start + i + 1 < bytes.len() => bounds.push(start + i + 1),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    bounds.dedup();
    let parts: Vec<Result<Contents, JournalError>> = std::thread::scope(|s| {
        let handles: Vec<_> = bounds
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                s.spawn(move || parse_range(bytes, start, end, path))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(JournalError::Garbage {
                        path: path.to_path_buf(),
                        line: 0,
                        message: "the parser thread failed".into(),
                    })
                })
            })
            .collect()
    });
    // A bad line is rare and must be the first one in file order (a chunk's error may hide
    // an earlier seq error at its boundary): say exactly what one pass says.
    if parts.iter().any(Result::is_err) {
        return parse_range(bytes, 0, bytes.len(), path);
    }
    let mut out = Contents::default();
    for (i, part) in parts.into_iter().flatten().enumerate() {
        if let (Some(prev), Some(first)) = (out.lines.last(), part.lines.first()) {
            if first.seq <= prev.seq {
                // The chunk's first record comes after any blank lines it starts with.
                let blanks = bytes[bounds[i]..]
                    .split(|&b| b == b'\n')
                    .take_while(|l| l.iter().all(u8::is_ascii_whitespace))
                    .count() as u64;
                return Err(JournalError::Inconsistent {
                    path: path.to_path_buf(),
                    line: line_at(bytes, bounds[i]) + blanks,
                    message: format!(
                        "seq {} does not follow seq {} of the previous record",
                        first.seq, prev.seq
                    ),
                });
            }
        }
        out.lines.extend(part.lines);
        if part.valid_len > 0 {
            out.valid_len = part.valid_len;
        }
        out.torn_line = part.torn_line;
    }
    Ok(out)
}

/// The number of the line that starts at byte `offset`. Counted only when a message needs it
/// (an error or a torn line), so that a chunk parsed in parallel need not know the lines
/// before it.
fn line_at(bytes: &[u8], offset: usize) -> u64 {
    1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count() as u64
}

/// [`parse`] of `bytes[start..end]` (`start` is 0 or just after a newline); offsets and line
/// numbers are the whole file's. Only the chunk that ends the file can hold a torn line.
fn parse_range(
    bytes: &[u8],
    start: usize,
    end: usize,
    path: &Path,
) -> Result<Contents, JournalError> {
    let mut out = Contents::default();
    let mut offset = start;
    let file = bytes;
    let bytes = &bytes[..end];
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let (text, complete, next) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], true, offset + i + 1),
            None => (rest, false, bytes.len()),
        };
        // Only the end of the whole file can be torn; a chunk ends right after a newline.
        let is_last = next >= file.len();
        if text.iter().all(u8::is_ascii_whitespace) && complete {
            offset = next;
            out.valid_len = next as u64;
            continue;
        }
        let parsed = parse_line(text);
        if let Some(version) = newer_format(&parsed, text) {
            return Err(JournalError::NewerFormat {
                path: path.to_path_buf(),
                line: line_at(file, offset),
                version,
            });
        }
        match parsed {
            Ok(line) if complete => {
                if let Some(prev) = out.lines.last() {
                    if line.seq <= prev.seq {
                        return Err(JournalError::Inconsistent {
                            path: path.to_path_buf(),
                            line: line_at(file, offset),
                            message: format!(
                                "seq {} does not follow seq {} of the previous record",
                                line.seq, prev.seq
                            ),
                        });
                    }
                }
                out.lines.push(line);
                out.valid_len = next as u64;
            }
            parsed if is_last => {
                let why = match parsed {
                    Ok(_) => "complete record without its newline (the write was cut off)".into(),
                    Err(e) => e.to_string(),
                };
                out.torn_line = Some(format!(
                    "line {} ({} bytes) is torn and was ignored: {why}: {}",
                    line_at(file, offset),
                    text.len(),
                    preview(text)
                ));
            }
            Err(e) => {
                return Err(JournalError::Garbage {
                    path: path.to_path_buf(),
                    line: line_at(file, offset),
                    message: format!("{e}: {}", preview(text)),
                })
            }
            Ok(_) => unreachable!("a complete line is handled above"),
        }
        offset = next;
    }
    Ok(out)
}

/// The format of a line written by a newer runner, whether or not this runner can parse the
/// rest of it: such a line is neither torn nor garbage.
fn newer_format(parsed: &Result<Line, serde_json::Error>, text: &[u8]) -> Option<u32> {
    #[derive(Deserialize)]
    struct Versioned {
        v: u32,
    }
    let v = match parsed {
        Ok(line) => line.v,
        Err(_) => serde_json::from_slice::<Versioned>(text).ok()?.v,
    };
    (v > FORMAT).then_some(v)
}

/// The fields of the two common kinds of line, `event` and `effect`, read without the
/// buffering that `#[serde(flatten)]` of an internally tagged enum costs (several times the
/// parse time of a large journal).
#[derive(Deserialize)]
struct CommonLine<'a> {
    #[serde(default = "format_1")]
    v: u32,
    seq: u64,
    time: String,
    session: String,
    #[serde(borrow)]
    kind: std::borrow::Cow<'a, str>,
    event: Option<Event>,
    effect: Option<Effect>,
    state: Option<String>,
    said: Option<String>,
}

/// One line as a [`Line`]. An `event` or `effect` line takes the fast path; anything else,
/// or anything the fast path does not read, is parsed as a `Line` itself, so the result and
/// the error message are exactly those of `Line`'s own `Deserialize`.
fn parse_line(text: &[u8]) -> Result<Line, serde_json::Error> {
    if let Ok(common) = serde_json::from_slice::<CommonLine>(text) {
        let record = match (&*common.kind, common.event, common.effect, common.state) {
            ("event", Some(event), _, Some(state)) => Some(Record::Event {
                event,
                state,
                said: common.said,
            }),
            ("effect", _, Some(effect), Some(state)) => Some(Record::Effect { effect, state }),
            _ => None,
        };
        if let Some(record) = record {
            return Ok(Line {
                v: common.v,
                seq: common.seq,
                time: common.time,
                session: common.session,
                record,
            });
        }
    }
    serde_json::from_slice::<Line>(text)
}

fn preview(text: &[u8]) -> String {
    let s = String::from_utf8_lossy(text);
    let mut p: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        p.push('…');
    }
    format!("{p:?}")
}

/// One recorded event with the effects recorded after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// The event's sequence number.
    pub seq: u64,
    /// The event.
    pub event: Event,
    /// What the event reported: what was said, recorded with it, and the failure context
    /// recorded right after it (a `StepFailed`'s).
    pub report: Report,
    /// The state the event led to, as recorded.
    pub state: String,
    /// The effects the machine emitted for it.
    pub effects: Vec<Effect>,
}

/// One session as the file records it, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionLog {
    /// The session id.
    pub id: String,
    /// The limits it started with.
    pub limits: Limits,
    /// The mode it started in.
    pub mode: Mode,
    /// Its events with their effects, in order.
    pub batches: Vec<Batch>,
    /// The agent process groups it spawned, in order.
    pub agents: Vec<AgentGroup>,
    /// `(seq, how)` once the session ended (a normal exit or a halt).
    pub end: Option<(u64, SessionEnd)>,
    /// A halt of this session was acknowledged (`run --ack-halt`).
    pub acknowledged: bool,
}

impl SessionLog {
    fn into_open(self) -> OpenSession {
        OpenSession {
            events: self.batches.iter().map(|b| b.event).collect(),
            recorded: self
                .batches
                .iter()
                .map(|b| RecordedEvent {
                    seq: b.seq,
                    event: b.event,
                    report: b.report.clone(),
                    state: b.state.clone(),
                })
                .collect(),
            last_effects: self
                .batches
                .last()
                .map(|b| b.effects.clone())
                .unwrap_or_default(),
            tracker_effects: self
                .batches
                .iter()
                .flat_map(|b| b.effects.iter())
                .filter(|e| {
                    matches!(
                        e,
                        Effect::MarkEscalated { .. }
                            | Effect::RecordMerged { .. }
                            | Effect::Unquarantine { .. }
                    )
                })
                .copied()
                .collect(),
            id: self.id,
            limits: self.limits,
            mode: self.mode,
            agents: self.agents,
        }
    }
}

/// Groups the lines into sessions: the one reading of the file's structure that recovery,
/// `status` and `replay` share. Every record belongs to the session started last, nothing
/// follows a session's end but the acknowledgement of its halt, and an effect follows an event.
pub fn sessions(lines: &[Line], path: &Path) -> Result<Vec<SessionLog>, JournalError> {
    let mut sessions: Vec<SessionLog> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let bad = |message: String| JournalError::Inconsistent {
            path: path.to_path_buf(),
            line: i as u64 + 1,
            message,
        };
        if let Record::SessionStart { limits, mode, .. } = &line.record {
            // A new session supersedes whatever came before: an open one simply never ended.
            sessions.push(SessionLog {
                id: line.session.clone(),
                limits: limits.clone(),
                mode: *mode,
                batches: Vec::new(),
                agents: Vec::new(),
                end: None,
                acknowledged: false,
            });
            continue;
        }
        let Some(session) = sessions.last_mut().filter(|s| s.id == line.session) else {
            return Err(bad(format!(
                "record of session {} without its sessionStart",
                line.session
            )));
        };
        if let Record::SessionEnd {
            end: SessionEnd::HaltAcknowledged,
        } = &line.record
        {
            session.acknowledged = true;
            continue;
        }
        if session.end.is_some() {
            return Err(bad(format!(
                "record of session {} after the session ended",
                line.session
            )));
        }
        match &line.record {
            Record::Event { event, state, said } => session.batches.push(Batch {
                seq: line.seq,
                event: *event,
                report: Report {
                    failure: None,
                    said: said.clone(),
                },
                state: state.clone(),
                effects: Vec::new(),
            }),
            Record::Effect { effect, .. } => match session.batches.last_mut() {
                Some(batch) => batch.effects.push(*effect),
                None => {
                    return Err(bad(format!(
                        "effect of session {} before any event",
                        line.session
                    )))
                }
            },
            Record::Failure { detail } => {
                // It follows the event that reported it (`record_step`).
                if let Some(batch) = session.batches.last_mut() {
                    batch.report.failure = Some(detail.clone());
                }
            }
            Record::Agent { group } => session.agents.push(*group),
            Record::SessionEnd { end } => session.end = Some((line.seq, end.clone())),
            Record::SessionStart { .. } => {}
        }
    }
    Ok(sessions)
}

/// Sessions and their ends, from the lines in order.
pub fn recover(lines: &[Line], path: &Path) -> Result<Recovered, JournalError> {
    let mut rec = Recovered {
        lines: lines.len() as u64,
        ..Recovered::default()
    };
    let Some(last) = sessions(lines, path)?.pop() else {
        return Ok(rec);
    };
    rec.sticky_halt = match &last.end {
        Some((_, SessionEnd::Halt { headline, .. })) if !last.acknowledged => {
            Some((last.id.clone(), headline.clone()))
        }
        _ => None,
    };
    rec.last_end = last.end.as_ref().map(|(_, end)| end.clone());
    let last = last.into_open();
    if rec.last_end.is_none() {
        rec.open_session = Some(last.clone());
    }
    rec.last_session = Some(last);
    Ok(rec)
}

/// The open journal file, ready to append.
pub struct Journal {
    path: PathBuf,
    file: File,
    identity: crate::runner_dir::FileIdentity,
    /// Bytes known to be valid: a failed append is cut back to here.
    len: u64,
    next_seq: u64,
    session: Option<String>,
    /// The last session in the file, for acknowledging its halt.
    last_session: Option<String>,
    sessions: BTreeSet<String>,
}

impl Journal {
    /// Opens (creates, mode 0600) the journal, reads it and tells what it holds. A torn last
    /// line is cut away and reported.
    pub fn open(path: &Path) -> Result<(Journal, Recovered), JournalError> {
        let io_err = |action: &'static str| {
            let path = path.to_path_buf();
            move |source| JournalError::Io {
                path,
                action,
                source,
            }
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if let Some(dir) = dir {
            fs::create_dir_all(dir).map_err(io_err("cannot create the journal's directory"))?;
        }
        let existed = fs::symlink_metadata(path).is_ok();
        // Never through a symlink: another user could point it at any file we can write.
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(crate::safe_fs::open_flags(rustix::fs::OFlags::NOFOLLOW))
            .open(path)
            .map_err(io_err(
                "cannot open the journal (a symlink there is refused)",
            ))?;
        // The journal records failures and agent output: nobody else needs to read it.
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(io_err("cannot make the journal private (chmod 0600)"))?;
        if !existed {
            if let Some(dir) = dir {
                // The new file's directory entry must survive a crash too.
                crate::stats::fsynced();
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .map_err(io_err("cannot fsync the journal's directory"))?;
            }
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(io_err("cannot read the journal"))?;
        let contents = parse(&bytes, path)?;
        let mut rec = recover(&contents.lines, path)?;
        rec.torn_line = contents.torn_line.clone();
        if contents.valid_len < bytes.len() as u64 {
            crate::stats::fsynced();
            file.set_len(contents.valid_len)
                .and_then(|()| file.sync_data())
                .map_err(io_err("cannot cut the torn last line off the journal"))?;
        }
        let identity = crate::runner_dir::FileIdentity::of(&file)
            .map_err(io_err("cannot inspect the journal"))?;
        let journal = Journal {
            path: path.to_path_buf(),
            file,
            identity,
            len: contents.valid_len,
            next_seq: contents.lines.last().map_or(1, |l| l.seq + 1),
            session: None,
            last_session: contents.lines.last().map(|l| l.session.clone()),
            sessions: contents.lines.iter().map(|l| l.session.clone()).collect(),
        };
        Ok((journal, rec))
    }

    /// Reads what the journal holds without modifying it (a torn line stays on disk).
    pub fn read(path: &Path) -> Result<Recovered, JournalError> {
        let contents = read_contents(path)?;
        let mut rec = recover(&contents.lines, path)?;
        rec.torn_line = contents.torn_line;
        Ok(rec)
    }

    /// Starts a new session and returns its id (UTC time + pid, unique in the file).
    pub fn begin(&mut self, limits: &Limits, mode: Mode) -> Result<String, JournalError> {
        let pid = std::process::id();
        let base = format!("{}-{pid}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"));
        let mut id = base.clone();
        let mut n = 1;
        while self.sessions.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        self.session = Some(id.clone());
        self.sessions.insert(id.clone());
        self.append(&[Record::SessionStart {
            limits: limits.clone(),
            mode,
            pid,
            version: env!("CARGO_PKG_VERSION").to_string(),
        }])?;
        Ok(id)
    }

    /// Continues a session recovered from the file (after a crash or a signal).
    pub fn continue_session(&mut self, session: &str) {
        self.session = Some(session.to_string());
        self.sessions.insert(session.to_string());
    }

    /// The session being appended to.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Appends the records as one write and fsyncs once before returning. On failure the file
    /// is cut back so that it never keeps half a batch in the middle.
    pub fn append(&mut self, records: &[Record]) -> Result<(), JournalError> {
        self.append_with(records, true)
    }

    /// [`Journal::append`] without the fsync, for a record that only matters while the
    /// machine stays up: the agent's process group, which a successor kills after a crash of
    /// the runner. A power loss ends the agent too, so the record need not survive one; the
    /// kernel has it as soon as the write returns.
    pub fn append_unsynced(&mut self, records: &[Record]) -> Result<(), JournalError> {
        self.append_with(records, false)
    }

    fn append_with(&mut self, records: &[Record], durable: bool) -> Result<(), JournalError> {
        let Some(session) = self.session.clone() else {
            return Err(JournalError::NoSession {
                path: self.path.clone(),
            });
        };
        self.check_intact()?;
        let time = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let mut buf = Vec::with_capacity(256 * records.len());
        let mut seq = self.next_seq;
        for record in records {
            let line = Line {
                v: FORMAT,
                seq,
                time: time.clone(),
                session: session.clone(),
                record: record.clone(),
            };
            serde_json::to_writer(&mut buf, &line).map_err(|e| JournalError::Io {
                path: self.path.clone(),
                action: "cannot encode a journal record",
                source: io::Error::other(e),
            })?;
            buf.push(b'\n');
            seq += 1;
        }
        crate::failpoint::point("journal: before append");
        let written = self.file.write_all(&buf).and_then(|()| {
            if durable {
                crate::stats::fsynced();
                self.file.sync_data()
            } else {
                Ok(())
            }
        });
        crate::failpoint::point("journal: after append");
        if let Err(source) = written {
            let _ = self.file.set_len(self.len);
            return Err(JournalError::Io {
                path: self.path.clone(),
                action: "cannot append to the journal",
                source,
            });
        }
        self.len += buf.len() as u64;
        self.next_seq = seq;
        self.last_session = Some(session);
        Ok(())
    }

    /// `Err` when the journal's path no longer names the file this runner appends to.
    pub fn check_intact(&self) -> Result<(), JournalError> {
        self.identity
            .still_at(&self.path)
            .map_err(|what| JournalError::Vanished { what })
    }

    /// Everything appended so far, read back through the open descriptor (which still reaches
    /// the data after the path was removed).
    pub fn contents(&self) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut bytes = vec![0u8; self.len as usize];
        self.file.read_exact_at(&mut bytes, 0)?;
        Ok(bytes)
    }

    /// The event with the state it led to and what it reported (the failure context of a
    /// `StepFailed`, what was said), then one record per effect, in one fsync.
    pub fn record_step(
        &mut self,
        event: &Event,
        report: &Report,
        effects: &[Effect],
        state_after: &State,
    ) -> Result<(), JournalError> {
        let state = state_after.name().to_string();
        let mut records = Vec::with_capacity(2 + effects.len());
        records.push(Record::Event {
            event: *event,
            state: state.clone(),
            said: report.said.clone(),
        });
        if let Some(detail) = &report.failure {
            records.push(Record::Failure {
                detail: detail.clone(),
            });
        }
        records.extend(effects.iter().map(|effect| Record::Effect {
            effect: *effect,
            state: state.clone(),
        }));
        self.append(&records)
    }

    /// Ends the session. `HaltAcknowledged` may be written without an open session: it then
    /// belongs to the last session in the file (the halted one). Anything else needs a session.
    pub fn end(&mut self, end: SessionEnd) -> Result<(), JournalError> {
        if self.session.is_none() && end == SessionEnd::HaltAcknowledged {
            self.session = self.last_session.clone();
        }
        let result = self.append(&[Record::SessionEnd { end }]);
        self.session = None;
        result
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The first recorded state the machine no longer reproduces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The journal seq of the event (for `rebuild`, the event's 0-based index in its slice).
    pub seq: u64,
    /// The state the journal recorded.
    pub expected: String,
    /// The state the machine reaches now.
    pub actual: String,
}

/// Rebuilds the machine from a session's events in order. Returns the core and the first
/// event whose resulting state differs from the recorded one.
pub fn rebuild(
    limits: &Limits,
    mode: Mode,
    recorded: &[(Event, String)],
) -> (Core, Option<Divergence>) {
    rebuild_reported(
        limits,
        mode,
        recorded
            .iter()
            .map(|(event, state)| (event, Report::default(), state.as_str())),
    )
}

/// `rebuild` with what each event was journaled with: the machine keeps it as it did when the
/// event was first handled.
fn rebuild_reported<'a>(
    limits: &Limits,
    mode: Mode,
    recorded: impl Iterator<Item = (&'a Event, Report, &'a str)>,
) -> (Core, Option<Divergence>) {
    let mut core = Core::new(limits.clone(), mode);
    let mut divergence = None;
    for (i, (event, report, state)) in recorded.enumerate() {
        core.handle_reported(event, report);
        let actual = core.state().name();
        if divergence.is_none() && actual != state {
            divergence = Some(Divergence {
                seq: i as u64,
                expected: state.to_string(),
                actual: actual.to_string(),
            });
        }
    }
    (core, divergence)
}

/// `rebuild` for a recovered session; the divergence carries the journal seq.
pub fn rebuild_session(session: &OpenSession) -> (Core, Option<Divergence>) {
    let (core, divergence) = rebuild_reported(
        &session.limits,
        session.mode,
        session
            .recorded
            .iter()
            .map(|r| (&r.event, r.report.clone(), r.state.as_str())),
    );
    let divergence = divergence.map(|d| Divergence {
        seq: session.recorded[d.seq as usize].seq,
        ..d
    });
    (core, divergence)
}

#[cfg(test)]
mod tests {
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
                limits: Limits::default(),
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
        let text = start(1, "a") + "{\"seq\": 2, \"kind\": \"nonsense\"}\n";
        let c = parse(text.as_bytes(), p).unwrap();
        assert_eq!(c.lines.len(), 1);
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
}
