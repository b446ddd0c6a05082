//! The machine's waits (`Wait`, `Pause`): their length and reason are the machine's; the
//! driver announces a `Wait`, shows it on `status`, tells the fleet when it pauses the fleet,
//! and sleeps on the clock port until it ends or a shutdown cuts it short.

use super::answer::Answer;
use super::context::Context;
use super::fleet_link;
use super::request::{Pause, Wait};
use super::shutdown::Shutdown;
use crate::machine::{Event, PauseFor, WaitReason};
use crate::narration as say;
use crate::ports::Clock;
use std::time::Duration;

/// `Wait`: waits `seconds` (announced at once, before the wait begins), shown on `status` as
/// `reason`; its answer is `WaitOver`, or the shutdown's event.
pub(super) async fn wait(cx: Context<'_>, request: Wait) -> Answer {
    let Wait { seconds, reason } = request;
    let (clock, shutdown, live) = (&*cx.shell.clock, &cx.shell.shutdown, &cx.shell.live);
    let (fleet, state, narrator) = (cx.fleet, cx.state, &cx.narrator);
    let until = u64::try_from(clock.now().timestamp())
        .unwrap_or(0)
        .saturating_add(seconds);
    if sdlc_machine::fleet::wait_pauses_fleet(state) {
        fleet_link::tell(fleet, |worker| sdlc_machine::fleet::Report::Waiting {
            worker,
            until,
        });
    }
    let until = i64::try_from(seconds)
        .ok()
        .and_then(chrono::TimeDelta::try_seconds)
        .and_then(|d| clock.now().checked_add_signed(d))
        .map(|t| t.format(", until %Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default();
    narrator.log(&say::waiting(seconds, &until));
    // A wait journaled by an earlier version says nothing of its reason.
    let reason = reason.map_or("BACKOFF", WaitReason::label);
    live.wait_started(reason, seconds);
    if let Some(warning) = live.take_warning() {
        narrator.log(&warning);
    }
    let next = sleep(clock, shutdown, Duration::from_secs(seconds)).await;
    live.wait_ended();
    Answer::of(next)
}

/// `Pause`: short and frequent (the merge turn), so neither narrated nor shown as a wait.
pub(super) async fn pause(cx: Context<'_>, request: Pause) -> Answer {
    let (clock, shutdown) = (&*cx.shell.clock, &cx.shell.shutdown);
    let paused = sleep(clock, shutdown, Duration::from_millis(request.millis));
    if request.waits_for != PauseFor::MergeTurn {
        return Answer::of(paused.await);
    }
    // The machine says news of the turn may end this pause: it then asks again (its wait's
    // limit counts the pause whole, so news only brings its end nearer).
    Answer::of(tokio::select! {
        event = paused => event,
        () = fleet_link::turn_news(cx.fleet) => Event::WaitOver,
    })
}

/// The machine's wait, cut short by a shutdown: its answer.
async fn sleep(clock: &dyn Clock, shutdown: &Shutdown, duration: Duration) -> Event {
    tokio::select! {
        _ = clock.sleep(duration) => Event::WaitOver,
        _ = shutdown.wait() => shutdown.event(),
    }
}
