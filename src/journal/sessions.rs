//! The one grouping of lines into sessions and batches (used by recovery, `status` and
//! `replay`), and what an open session holds after a restart.

use super::{
    AgentGroup, JournalError, Line, OpenSession, Record, RecordedEvent, Recovered, SessionEnd,
};
use crate::machine::{Effect, Event, Limits, Mode, Report};
use std::path::Path;

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
    /// The last running cost recorded after its last event (a call no event answered).
    pub unanswered_spend_micros: Option<u64>,
    /// `(seq, how)` once the session ended (a normal exit or a halt).
    pub end: Option<(u64, SessionEnd)>,
    /// A halt of this session was acknowledged (`run --ack-halt`).
    pub acknowledged: bool,
}

impl SessionLog {
    fn into_open(self) -> OpenSession {
        OpenSession {
            events: self.batches.iter().map(|b| b.event.clone()).collect(),
            recorded: self
                .batches
                .iter()
                .map(|b| RecordedEvent {
                    seq: b.seq,
                    event: b.event.clone(),
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
            unanswered_spend_micros: self.unanswered_spend_micros,
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
                limits: (**limits).clone(),
                mode: *mode,
                batches: Vec::new(),
                agents: Vec::new(),
                unanswered_spend_micros: None,
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
            Record::Event { event, state, said } => {
                session.unanswered_spend_micros = None;
                session.batches.push(Batch {
                    seq: line.seq,
                    event: event.clone(),
                    report: Report {
                        failure: None,
                        said: said.clone(),
                    },
                    state: state.clone(),
                    effects: Vec::new(),
                })
            }
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
            Record::Spending { cost_micros } => {
                session.unanswered_spend_micros = Some(*cost_micros)
            }
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
    let mut all = sessions(lines, path)?;
    rec.merged = all
        .iter()
        .flat_map(|s| s.batches.iter().flat_map(|b| b.effects.iter()))
        .filter_map(|e| match e {
            Effect::RecordMerged { issue, .. } => Some(*issue),
            _ => None,
        })
        .collect();
    let Some(last) = all.pop() else {
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
