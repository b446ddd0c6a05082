//! `Notify`: the machine's notice, worded (`report::notice`), sent on every channel and said
//! on the console.

use super::context::Context;
use crate::machine::Notice;
use crate::narration as say;
use crate::report;

/// Sends the notice `n` and says it on the console (`[w<n>]` first for a fleet's worker).
pub(super) fn notify(cx: Context<'_>, n: Notice) -> Vec<String> {
    let (core, refs, notifier) = (cx.core, &cx.run.refs(), &*cx.shell.notifier);
    let worker = cx.fleet.map(|link| link.worker);
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
    Vec::new()
}
