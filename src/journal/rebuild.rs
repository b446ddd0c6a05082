//! The machine rebuilt from recorded events, and the first state it no longer reproduces.

use super::OpenSession;
use crate::machine::{Core, Event, Limits, Mode, Report};

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
