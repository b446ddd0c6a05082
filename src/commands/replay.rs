//! `sdlc-runner replay JOURNAL`: re-drives the pure machine from every session's recorded
//! events and checks that it reproduces the recorded states and effects exactly. Exit 0 when
//! every session reproduces, 1 on the first divergence of any session, 2 when the file cannot
//! be read or parsed.

use crate::journal::{self, Contents, Divergence, JournalError, SessionEnd, SessionLog};
use crate::machine::{Core, Effect, Event, State};
use std::path::Path;

pub fn run(path: &Path) -> i32 {
    if let Err(e) = std::fs::symlink_metadata(path) {
        say!(
            "error: {}: {e}; pass the journal's path (`sdlc-runner status` shows it)",
            path.display()
        );
        return 2;
    }
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

/// Re-drives each session of the file.
pub fn replay(contents: &Contents, path: &Path) -> Result<Vec<SessionReport>, JournalError> {
    let sessions = journal::sessions(&contents.lines, path)?;
    Ok(sessions.iter().map(replay_session).collect())
}

fn replay_session(log: &SessionLog) -> SessionReport {
    let mut core = Core::new(log.limits.clone(), log.mode);
    let mut report = SessionReport {
        session: log.id.clone(),
        events: log.batches.len() as u64,
        effects: log.batches.iter().map(|b| b.effects.len() as u64).sum(),
        cut_short: 0,
        end: if log.acknowledged {
            Some(SessionEnd::HaltAcknowledged)
        } else {
            log.end.as_ref().map(|(_, e)| e.clone())
        },
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
        let reproduced = |n: usize| {
            effects.len() >= n
                && effects
                    .iter()
                    .zip(&batch.effects[..n])
                    .all(|(now, was)| now.reproduces(was))
        };
        if !(effects.len() == batch.effects.len() && reproduced(batch.effects.len())) {
            // A crash can cut a batch's single write after any line; the restart then feeds
            // `Start`, which reissues whatever was pending.
            let restarted = log
                .batches
                .get(k + 1)
                .is_none_or(|next| matches!(next.event, Event::Start | Event::ModeChanged { .. }));
            if restarted && reproduced(batch.effects.len()) {
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
        // The runner's own state vanishing is the driver's halt, not the machine's.
        let machine_halt = *reason != crate::machine::HaltReason::RunnerStateLost;
        if machine_halt && !matches!(core.state(), State::Halted { reason: r } if r == reason) {
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
