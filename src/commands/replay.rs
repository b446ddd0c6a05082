//! `sdlc-runner replay JOURNAL`: re-drives the pure machine from every session's recorded
//! events and checks that it reproduces the recorded states and effects exactly. Exit 0 when
//! every session reproduces, 1 on the first divergence of any session, 2 when the file cannot
//! be read or parsed.

use crate::journal::{self, Contents, Divergence, JournalError, Line, Record, SessionEnd};
use crate::machine::{Core, Effect, Event, Limits, Mode, State};
use std::path::Path;

pub fn run(path: &Path) -> i32 {
    let contents = match journal::read_contents(path) {
        Ok(c) => c,
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    if let Some(torn) = &contents.torn_line {
        say!("warning: {}: {torn}", path.display());
    }
    let reports = match replay(&contents, path) {
        Ok(r) => r,
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    if reports.is_empty() {
        out!("{}: no sessions recorded", path.display());
        return 0;
    }
    let mut code = 0;
    for report in &reports {
        out!("{}", report.summary());
        if report.divergence.is_some() {
            code = 1;
        }
    }
    code
}

/// What replaying one session showed.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionReport {
    pub session: String,
    pub events: u64,
    pub effects: u64,
    /// Batches whose effects stop early because a crash cut the write (tolerated).
    pub cut_short: u64,
    pub end: Option<SessionEnd>,
    pub divergence: Option<Divergence>,
}

impl SessionReport {
    pub fn summary(&self) -> String {
        let mut s = format!(
            "session {}: {} events, {} effects, ",
            self.session, self.events, self.effects
        );
        match &self.divergence {
            None => s.push_str("reproduced exactly"),
            Some(d) => s.push_str(&format!(
                "DIVERGED at seq {}: expected {}, actual {}",
                d.seq, d.expected, d.actual
            )),
        }
        if self.cut_short > 0 {
            s.push_str(&format!(
                " ({} batch(es) cut short by a crash)",
                self.cut_short
            ));
        }
        s.push_str(match &self.end {
            None => "; still open",
            Some(SessionEnd::Exit { .. }) => "; ended with exit",
            Some(SessionEnd::Halt { .. }) => "; ended in a halt (not acknowledged)",
            Some(SessionEnd::HaltAcknowledged) => "; halt acknowledged",
        });
        if let Some(SessionEnd::Exit { code }) = &self.end {
            s.push_str(&format!(" {code}"));
        }
        s
    }
}

struct Batch {
    seq: u64,
    event: Event,
    state: String,
    effects: Vec<Effect>,
}

struct SessionLog {
    id: String,
    limits: Limits,
    mode: Mode,
    batches: Vec<Batch>,
    end: Option<(u64, SessionEnd)>,
}

/// Groups the lines by session (checking that every record belongs to a started session),
/// then re-drives each session.
pub fn replay(contents: &Contents, path: &Path) -> Result<Vec<SessionReport>, JournalError> {
    let sessions = group(&contents.lines, path)?;
    Ok(sessions.iter().map(replay_session).collect())
}

fn group(lines: &[Line], path: &Path) -> Result<Vec<SessionLog>, JournalError> {
    let mut sessions: Vec<SessionLog> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let bad = |message: String| JournalError::Inconsistent {
            path: path.to_path_buf(),
            line: i as u64 + 1,
            message,
        };
        if let Record::SessionStart { limits, mode, .. } = &line.record {
            sessions.push(SessionLog {
                id: line.session.clone(),
                limits: limits.clone(),
                mode: *mode,
                batches: Vec::new(),
                end: None,
            });
            continue;
        }
        let Some(session) = sessions.iter_mut().rev().find(|s| s.id == line.session) else {
            return Err(bad(format!(
                "record of session {} without its sessionStart",
                line.session
            )));
        };
        match &line.record {
            Record::Event { event, state } => session.batches.push(Batch {
                seq: line.seq,
                event: *event,
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
            Record::SessionEnd { end } => {
                // An acknowledgement follows the halt it acknowledges; keep the latest word.
                session.end = Some((line.seq, end.clone()));
            }
            Record::SessionStart { .. } | Record::Failure { .. } | Record::Agent { .. } => {}
        }
    }
    Ok(sessions)
}

fn replay_session(log: &SessionLog) -> SessionReport {
    let mut core = Core::new(log.limits.clone(), log.mode);
    let mut report = SessionReport {
        session: log.id.clone(),
        events: log.batches.len() as u64,
        effects: log.batches.iter().map(|b| b.effects.len() as u64).sum(),
        cut_short: 0,
        end: log.end.as_ref().map(|(_, e)| e.clone()),
        divergence: None,
    };
    for (k, batch) in log.batches.iter().enumerate() {
        let effects = core.handle(&batch.event).to_vec();
        let state = core.state().name();
        if state != batch.state {
            report.divergence = Some(Divergence {
                seq: batch.seq,
                expected: format!("state {} after {}", batch.state, batch.event.label()),
                actual: format!("state {state}"),
            });
            return report;
        }
        if effects != batch.effects {
            // A crash can cut a batch's single write after any line; the restart then feeds
            // `Start`, which reissues whatever was pending.
            let restarted = log
                .batches
                .get(k + 1)
                .is_none_or(|next| next.event == Event::Start);
            if restarted && effects.starts_with(&batch.effects) {
                report.cut_short += 1;
                continue;
            }
            report.divergence = Some(Divergence {
                seq: batch.seq,
                expected: format!(
                    "effects {} after {}",
                    render(&batch.effects),
                    batch.event.label()
                ),
                actual: format!("effects {}", render(&effects)),
            });
            return report;
        }
    }
    if let Some((seq, SessionEnd::Halt { reason, .. })) = &log.end {
        if !matches!(core.state(), State::Halted { reason: r } if r == reason) {
            report.divergence = Some(Divergence {
                seq: *seq,
                expected: format!("a halt ({})", reason.headline()),
                actual: format!("state {}", core.state().name()),
            });
        }
    }
    report
}

fn render(effects: &[Effect]) -> String {
    serde_json::to_string(effects).unwrap_or_else(|_| format!("{effects:?}"))
}
