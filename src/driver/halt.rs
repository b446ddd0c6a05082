//! The run halts: the machine's `Halt` (its diagnostic printed, logged, sent and recorded as
//! the session's end) and the halt the driver itself meets when its own files were removed or
//! replaced under it (`runner_state_lost`, before anything more is recorded).

use super::context::Context;
use super::fleet_link::{self, Link};
use super::run_context::RunContext;
use super::shell::Shell;
use crate::journal::{Journal, SessionEnd};
use crate::logs::append_line;
use crate::machine::{Core, HaltReason};
use crate::narration as say;
use crate::notify::Severity;
use crate::ports::Clock;
use crate::report;
use crate::tracker::Selection;

/// `Halt`: the diagnostic is printed, appended to the orchestration log, sent as an alert and
/// the session ends with the halt in the journal; what it narrates.
pub(super) async fn halt(cx: Context<'_>, reason: HaltReason) -> Vec<String> {
    let (core, run, shell, fleet) = (cx.core, cx.run, cx.shell, cx.fleet);
    if reason == HaltReason::DecisionTimeout {
        // Nobody answered in time: the question is withdrawn with the halt.
        let _ = std::fs::remove_file(run.runner_dir.decision());
    }
    fleet_link::tell(fleet, |worker| sdlc_machine::fleet::Report::Halted {
        worker,
    });
    let mut quarantined: Vec<u32> = core.runner().escalated.iter().copied().collect();
    if matches!(reason, HaltReason::AllIssuesEscalated) {
        let selected = shell
            .io
            .call(|w| w.tracker.select(&Default::default(), &Default::default()))
            .await;
        if let Ok(Selection::AllEscalated { numbers }) = selected {
            quarantined.extend(numbers);
        }
    }
    quarantined.sort_unstable();
    quarantined.dedup();
    let mut text = report::halt_diagnostic(
        &reason,
        core.runner(),
        core.last_words(),
        &shell.logs.dir.display().to_string(),
        &quarantined,
        &run.cfg.file,
    );
    if let HaltReason::RateLimit { wait_secs } = reason {
        // The machine keeps no clock: the reset's time is told here, from now.
        let lifts = i64::try_from(wait_secs)
            .ok()
            .and_then(chrono::Duration::try_seconds)
            .and_then(|d| shell.clock.now().checked_add_signed(d));
        if let Some(lifts) = lifts {
            let at = text.find('\n').unwrap_or(text.len());
            text.insert_str(at, &say::rate_limit_lifts_at(lifts));
        }
    }
    if reason == HaltReason::DayBudget {
        let at = text.find('\n').unwrap_or(text.len());
        let frees = day_frees_at(core, fleet, &run.runner_dir, &*shell.clock);
        text.insert_str(at, &format!("\n{frees}"));
    }
    out!("{text}");
    let _ = append_line(&shell.logs.orchestration_log(), &text);
    shell.notifier.send(Severity::Alert, &text);
    let end = SessionEnd::Halt {
        reason,
        headline: reason.headline(),
    };
    match shell.journal.as_mut().map(|j| j.end(end)) {
        Some(Err(e)) => vec![say::cannot_record_halt(&e)],
        _ => Vec::new(),
    }
}

/// The halt when the runner's own state (`what`: its journal or its lock) was removed or
/// replaced under it; its exit code. The halt is made sticky where that is still possible: a
/// removed journal is restored from the open descriptor first, so no counter is lost.
pub(super) fn runner_state_lost(what: &str, run: &RunContext, shell: &mut Shell) -> i32 {
    let reason = HaltReason::RunnerStateLost;
    let text = say::runner_state_lost(&reason.headline(), what, &run.runner_dir.dir);
    out!("{text}");
    let _ = append_line(&shell.logs.orchestration_log(), &text);
    shell.notifier.send(Severity::Alert, &text);
    if let Some(j) = shell.journal.as_mut() {
        let path = j.path().to_path_buf();
        if std::fs::symlink_metadata(&path).is_err() {
            let restored = j
                .contents()
                .and_then(|bytes| crate::safe_fs::write_new(&path, &bytes));
            match restored {
                Ok(()) => say!("{}", say::journal_restored(&path)),
                Err(e) => say!("{}", say::cannot_restore_journal(&path, &e)),
            }
            if let Ok((mut fresh, _)) = Journal::open(&path) {
                if let Some(id) = j.session() {
                    fresh.continue_session(id);
                }
                *j = fresh;
            }
        }
        let end = SessionEnd::Halt {
            reason,
            headline: reason.headline(),
        };
        if let Err(e) = j.end(end) {
            say!("{}", say::halt_unrecorded(&e));
        }
    }
    1
}

/// When the day's ceiling lets an attempt like the last one start again, told with its
/// halt: the machine keeps no clock, and the window is the journals'.
fn day_frees_at(
    core: &Core,
    fleet: Option<&Link>,
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
        Err(e) => return say::day_window_unreadable(&e),
    };
    // The machine stops when one more attempt like the last would pass the ceiling.
    let room = (budget + 1).saturating_sub(r.last_usage.cost_micros);
    let at = day.frees_at(room).unwrap_or(now);
    say::day_frees_at(at, day.total_micros(), budget)
}
