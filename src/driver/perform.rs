//! Pieces of the effects the loop performs (`Driver::perform` in mod.rs dispatches each
//! request to its handler): the machine's waits, a tracker write's answer, the day budget's
//! window for the halt diagnostic. What an answer means is the machine's.

use super::shutdown::Shutdown;
use super::{fleet, network, Answer, Told};
use crate::machine::{Core, Event};
use crate::narration as say;
use crate::ports::Clock;
use crate::tracker;
use std::time::Duration;

/// The machine's wait (`Wait`, `Pause`), cut short by a shutdown: its answer.
pub(super) async fn sleep(clock: &dyn Clock, shutdown: &Shutdown, duration: Duration) -> Event {
    tokio::select! {
        _ = clock.sleep(duration) => Event::WaitOver,
        _ = shutdown.wait() => shutdown.event(),
    }
}

/// The machine's event for a tracker write: written, refused (the environment's, with the
/// error kept for the halt diagnostic) or failed on the network.
pub(super) fn tracker_written(
    what: &str,
    written: network::Patient<(), tracker::TrackerError>,
) -> Answer {
    match written {
        network::Patient::Done(Ok(())) => Answer::of(Event::TrackerUpdated),
        network::Patient::Done(Err(e)) => {
            let mut told = Told::default();
            told.say(format!("{what}: {e}"));
            told.narrate(say::tracker_write_failed(what, &e));
            told.answer(Event::TrackerWriteFailed)
        }
        network::Patient::GaveUp(event) | network::Patient::Cancelled(event) => Answer::of(event),
    }
}

/// When the day's ceiling lets an attempt like the last one start again, told with its
/// halt: the machine keeps no clock, and the window is the journals'.
pub(super) fn day_frees_at(
    core: &Core,
    fleet: Option<&fleet::Link>,
    runner_dir: &crate::runner_dir::RunnerDir,
    clock: &dyn Clock,
) -> String {
    let r = core.runner();
    let budget = r.limits.per_day_budget_micros.unwrap_or(0);
    // A worker's runner directory holds its clone's journal only: the fleet knows them all.
    let journals = match fleet {
        Some(link) => link.shared.journals.paths(),
        None => crate::journal::Journals::in_dir(runner_dir).paths(),
    };
    let now = clock.now();
    let day = match crate::journal::DaySpend::read(&journals, now) {
        Ok(day) => day,
        Err(e) => return format!("the daily budget's window could not be read: {e}"),
    };
    // The machine stops when one more attempt like the last would pass the ceiling.
    let room = (budget + 1).saturating_sub(r.last_usage.cost_micros);
    let at = day.frees_at(room).unwrap_or(now);
    format!(
        "the daily budget frees at: {} (spent over the last 24 hours: ${:.2} of budget.perDayUsd ${:.2}); run again then with --ack-halt",
        at.format("%Y-%m-%d %H:%M:%S UTC"),
        day.total_micros() as f64 / 1e6,
        budget as f64 / 1e6
    )
}
