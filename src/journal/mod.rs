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

use crate::machine::{Effect, Event, HaltReason, Limits, Mode, Report};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod all;
mod day_spend;
mod error;
mod parse;
mod rebuild;
mod sessions;
mod train;
mod writer;

pub use all::Journals;
pub use day_spend::{DaySpend, DAY};
pub use error::JournalError;
pub use parse::{parse, read_contents};
pub use rebuild::{rebuild, rebuild_session, Divergence};
pub use sessions::{recover, sessions, Batch, SessionLog};
pub use train::{train_journal, TrainJournal, TRAIN_JOURNAL};
pub use writer::Journal;

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
        limits: Box<Limits>,
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
    /// The running cost of the agent call under way, written as it grows (docs/persistence.md,
    /// "Spend while it is spent"): a runner killed in the call restarts counting it
    /// (`KilledCallSpent`), and the day's sum counts it while no event answered the call.
    Spending {
        /// What the call has spent so far, in micro-dollars.
        cost_micros: u64,
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
    /// The last running cost (`Spending`) recorded after the last event, in micro-dollars:
    /// what the agent call the session died in had spent (no event answered it).
    pub unanswered_spend_micros: Option<u64>,
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
    /// Every issue any session recorded as merged (`RecordMerged`): merged is final, so a
    /// later session neither works on one again nor waits for it as a dependency, whatever
    /// the tracker still shows.
    pub merged: std::collections::BTreeSet<u32>,
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

#[cfg(test)]
mod tests;
