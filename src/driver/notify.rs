//! `Notify`: the machine's notice, worded (`report::notice`), sent on every channel and said
//! on the console.

use super::report;
use crate::config::IssueRefs;
use crate::machine::{Core, Notice};
use crate::narration as say;
use crate::ports::NotifierPort;

/// Sends the notice `n` and says it on the console (`[w<n>]` first for a fleet's worker).
pub(super) fn notify(
    n: Notice,
    core: &Core,
    refs: &IssueRefs,
    notifier: &dyn NotifierPort,
    worker: Option<u32>,
) {
    let round = core.runner().round_pending();
    let (severity, text) = report::notice(&n, refs, round);
    let text = match n {
        // Who holds the turn, as the answer that found it busy said.
        Notice::WaitingForMergeTurn { .. } => say::merge_turn_held(core.last_words(), &text),
        // What the tracker answered, as the failed read said.
        Notice::TrackerReadFailed => say::tracker_answered(&text, core.last_words()),
        _ => text,
    };
    notifier.send(severity, &text);
    say!("{}", say::of_worker(worker, &text));
}
