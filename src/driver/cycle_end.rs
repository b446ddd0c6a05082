//! The requests that end an issue's cycle: the tracker is told the outcome (`RecordMerged`,
//! `MarkEscalated`, `Unquarantine`), the claim is given back and the fleet told, the agent's
//! leftover processes are stopped (`Cleanup`) and the state file forgets the issue
//! (`ResetCycle`). What the tracker's answer means is the machine's.

use super::claim;
use super::context::{hands, Context};
use super::fleet_link;
use super::network::{self, Patient};
use super::request::{MarkEscalated, RecordMerged, Unquarantine};
use super::{Answer, Told};
use crate::cleanup::{kill_matching, ProtectSet};
use crate::machine::Event;
use crate::narration as say;
use crate::ports::World;
use crate::report;
use crate::tracker;
use sdlc_machine::fleet::Report;

/// `RecordMerged`: the claim is given back and the fleet told (the merge is already final,
/// journaled with the event that led here, whatever the tracker answers), then the issue is
/// closed in the tracker: `TrackerUpdated`, `TrackerWriteFailed` or the network's event.
/// While the machine still waits for the tracker's own close (`wait`), the issue is only
/// read (a conditional read: an unchanged issue costs no rate limit): still open, it is left
/// so and the claim kept (`IssueStillOpen`); closed, nothing is written. The runner's own
/// close says how long the machine waited for the tracker's.
pub(super) async fn record_merged(cx: Context<'_>, request: RecordMerged) -> Answer {
    let RecordMerged { issue, wait } = request;
    let waited_secs = match wait {
        true => 0,
        false => cx.core.runner().limits.close_waited_secs(),
    };
    let (calls, claims, fleet) = (hands(cx.run, cx.shell), cx.claims, cx.fleet);
    let mut told = Told::default();
    let mut closed_by_tracker = false;
    if wait {
        let what = say::looking_for_close(issue);
        let look = move |w: &World| w.tracker.get(issue).map(|i| i.state_open);
        let (looked, failed) = network::patiently(calls, &what, look).await;
        told.told(failed);
        match looked {
            Patient::Done(Ok(true)) => {
                told.narrate(say::still_open_after_merge(issue));
                return told.answer(Event::IssueStillOpen);
            }
            Patient::Done(Ok(false)) => closed_by_tracker = true,
            Patient::Done(Err(e)) => {
                told.narration
                    .extend(claim::release(claims, calls.io, issue).await);
                fleet_link::tell(fleet, |worker| Report::Merged { worker, issue });
                return tracker_written(&what, Patient::Done(Err(e)), told);
            }
            Patient::GaveUp(event) | Patient::Cancelled(event) => return told.answer(event),
        }
    }
    told.narration
        .extend(claim::release(claims, calls.io, issue).await);
    fleet_link::tell(fleet, |worker| Report::Merged { worker, issue });
    if closed_by_tracker {
        told.narrate(say::closed_by_tracker(issue));
        return told.answer(Event::TrackerUpdated);
    }
    let what = say::closing_issue(issue);
    let note = say::merged_note(waited_secs);
    let close = move |w: &World| w.tracker.close(issue, &note);
    let (written, failed) = network::patiently(calls, &what, close).await;
    told.told(failed);
    crate::failpoint::point("tracker: closed");
    tracker_written(&what, written, told)
}

/// `MarkEscalated`: the issue is marked escalated in the tracker with the escalation
/// diagnostic and the refs that rescue its work, then its claim is given back and the fleet
/// told: `TrackerUpdated`, `TrackerWriteFailed` or the network's event.
pub(super) async fn mark_escalated(cx: Context<'_>, request: MarkEscalated) -> Answer {
    let MarkEscalated { issue } = request;
    let (core, calls, logs) = (cx.core, hands(cx.run, cx.shell), &*cx.shell.logs.dir);
    let known = cx.cycle.issue.branch.clone();
    let rescued = calls
        .io
        .call(move |w| {
            let branch = w.git.feature_branch(issue).ok().flatten().or(known);
            branch
                .and_then(|b| w.git.rescue_refs(&b).ok())
                .unwrap_or_default()
        })
        .await;
    let logs = logs.display().to_string();
    let mut text = report::escalation_diagnostic(issue, core.runner(), core.last_words(), &logs);
    let last = core
        .runner()
        .last_failure
        .and_then(|f| core.failure(f.step));
    text.push_str(&report::observed(last));
    text.push_str(&report::rescued(&rescued));
    let what = say::marking_escalated(issue);
    let mark = move |w: &World| w.tracker.mark_escalated(issue, &text);
    let (written, failed) = network::patiently(calls, &what, mark).await;
    let mut told = Told::default();
    told.told(failed);
    crate::failpoint::point("tracker: marked escalated");
    told.narration
        .extend(claim::release(cx.claims, calls.io, issue).await);
    fleet_link::tell(cx.fleet, |worker| Report::Escalated { worker, issue });
    tracker_written(&what, written, told)
}

/// `Unquarantine`: the quarantine of an escalated issue is lifted in the tracker, with the
/// note that says why: `TrackerUpdated`, `TrackerWriteFailed` or the network's event.
pub(super) async fn unquarantine(cx: Context<'_>, request: Unquarantine) -> Answer {
    let Unquarantine { issue } = request;
    let calls = hands(cx.run, cx.shell);
    let note = report::release_note(issue, cx.core.runner());
    let what = say::lifting_quarantine(issue);
    let lift = {
        let note = note.clone();
        move |w: &World| w.tracker.unquarantine(issue, &note)
    };
    let (written, failed) = network::patiently(calls, &what, lift).await;
    let mut told = Told::default();
    told.told(failed);
    if matches!(written, Patient::Done(Ok(()))) {
        told.narrate(say::released(issue, &note));
    }
    tracker_written(&what, written, told)
}

/// `Cleanup`: the agent's leftover processes (the config's patterns) are stopped; what it
/// narrates.
pub(super) async fn cleanup(cx: Context<'_>) -> Vec<String> {
    let (cfg, io) = (&cx.run.cfg, &cx.shell.io);
    let patterns = cfg.cleanup.process_patterns.clone();
    // Its grace between SIGTERM and SIGKILL is a wait: off the runtime.
    let kill = move |_: &World| kill_matching(&patterns, &ProtectSet::current());
    let killed = io.call(kill).await;
    killed
        .into_iter()
        .map(|(pid, cmd)| say::cleanup_stopped(pid, &cmd))
        .collect()
}

/// `ResetCycle`: the state file and the cycle forget the issue; what it narrates.
pub(super) fn reset_cycle(cx: Context<'_>) -> Vec<String> {
    let (shell, cycle, project) = (cx.shell, cx.cycle, &cx.run.cfg.project_path);
    let state = &mut shell.state;
    state.current_issue = None;
    state.current_issue_ref = None;
    state.current_branch = None;
    state.feature_name = None;
    state.retries.clear();
    state.current_step = 0;
    state.last_completed_step = 0;
    state.pr_number = None;
    cycle.feature = None;
    shell.save_state(project).into_iter().collect()
}

/// The machine's event for a tracker write: written, refused (the environment's, with the
/// error kept for the halt diagnostic) or failed on the network; with what was told so far.
fn tracker_written(
    what: &str,
    written: Patient<(), tracker::TrackerError>,
    mut told: Told,
) -> Answer {
    match written {
        Patient::Done(Ok(())) => told.answer(Event::TrackerUpdated),
        Patient::Done(Err(e)) => {
            told.say(say::call_failed(what, &e));
            told.narrate(say::tracker_write_failed(what, &e));
            told.answer(Event::TrackerWriteFailed)
        }
        Patient::GaveUp(event) | Patient::Cancelled(event) => told.answer(event),
    }
}
