//! The session this run works in: the sticky halt of the last one acknowledged (or the run
//! refused), then the open session continued from its journal, or a new one begun with the
//! limits of this run.

use crate::config::Config;
use crate::driver::{Restart, RunOptions};
use crate::journal::{Journal, SessionEnd};
use crate::logs::Logs;
use crate::machine::{Core, Effect, Event, Mode};
use crate::ports::{Clock, TrackerPort};

/// The machine of the session this run works in, and what its restart must redo.
pub(super) struct Resumed {
    pub core: Core,
    pub session: String,
    pub restart: Restart,
    /// Agent groups the journal says the last runner started, to stop if still alive.
    pub stale_agents: Vec<crate::journal::AgentGroup>,
}

/// A sticky halt refuses the run unless `--ack-halt` acknowledges it, and an acknowledgement
/// waits until the tracker shows every outcome the halted session recorded: the exit code to
/// stop with, or `None` to go on.
pub(super) fn acknowledge_halt(
    recovered: &crate::journal::Recovered,
    cfg: &Config,
    opts: &RunOptions,
    logs: &Logs,
    tracker: &dyn TrackerPort,
    journal: Option<&mut Journal>,
) -> Result<Option<i32>, String> {
    let Some((session, headline)) = &recovered.sticky_halt else {
        return Ok(None);
    };
    if !opts.ack_halt {
        say!(
                "refusing to run: session {session} halted: {headline}\nInspect the diagnostic in {} and the project, fix the cause, then acknowledge the halt: `sdlc-runner run --config {} --ack-halt` (or `sdlc-runner release N --config {1}` first to release escalated issue N).",
                logs.orchestration_log().display(),
                cfg.file.display()
            );
        return Ok(Some(1));
    }
    // A halt for the network can come while an escalation or a merge was being written to
    // the tracker, and the next session's quarantine is the tracker's: the halt stays until
    // the tracker shows every outcome the halted session recorded.
    let recorded = recovered
        .last_session
        .as_ref()
        .map(|s| s.tracker_effects.as_slice())
        .unwrap_or_default();
    if !opts.dry_run {
        if let Err(e) = super::settle_tracker(tracker, session, recorded, logs) {
            say!(
                "refusing to acknowledge the halt of session {session}: {e}
The halt stays; run again with --ack-halt once the tracker is reachable."
            );
            return Ok(Some(1));
        }
    }
    if let Some(j) = journal {
        j.end(SessionEnd::HaltAcknowledged)
            .map_err(|e| e.to_string())?;
    }
    say!("halt of session {session} acknowledged; starting a new session");
    Ok(None)
}

/// What a new session begins with: this run's configuration, flags and mode, whether it
/// claims issues, and where the day's spend is read.
#[derive(Clone, Copy)]
pub(super) struct Begin<'a> {
    pub cfg: &'a Config,
    pub opts: &'a RunOptions,
    pub mode: Mode,
    pub claims: bool,
    pub runner_dir: &'a crate::runner_dir::RunnerDir,
    pub clock: &'a dyn Clock,
}

/// The open session goes on whatever the mode (its counters and limits are the journal's);
/// without one, a new session begins with this run's limits (a dry run journals nothing).
pub(super) fn resume_or_begin(
    continuing: Option<crate::journal::OpenSession>,
    begin: &Begin<'_>,
    journal: Option<&mut Journal>,
) -> Result<Resumed, String> {
    let Begin {
        cfg,
        opts,
        mode,
        claims,
        runner_dir,
        clock,
    } = *begin;
    let shape = crate::config::RunShape {
        claims,
        workers: cfg.fleet_drivers(opts.workers.unwrap_or(cfg.workers)),
        spent_today_micros: 0,
    };
    if let Some(open) = continuing {
        return resume(open, mode, shape.claims, journal);
    }
    let Some(j) = journal else {
        return Ok(Resumed {
            core: Core::new(cfg.limits_for(shape), mode),
            session: "dry-run".to_string(),
            restart: restart(Event::Start, false, Vec::new()),
            stale_agents: Vec::new(),
        });
    };
    let spent_today_micros = match (cfg.budget.per_day_usd, opts.spent_today_micros) {
        (None, _) => 0,
        (Some(_), Some(micros)) => micros,
        (Some(_), None) => spent_today(runner_dir, clock.now())?,
    };
    let limits = cfg.limits_for(crate::config::RunShape {
        spent_today_micros,
        ..shape
    });
    let id = j.begin(&limits, mode).map_err(|e| e.to_string())?;
    Ok(Resumed {
        core: Core::new(limits, mode),
        session: id,
        restart: restart(Event::Start, false, Vec::new()),
        stale_agents: Vec::new(),
    })
}

fn restart(first: Event, recovering: bool, redo: Vec<Effect>) -> Restart {
    Restart {
        first,
        recovering,
        redo,
    }
}

/// The session left open by a runner that stopped without ending it, rebuilt from its
/// journal with each failure's context, for the next repair prompt.
fn resume(
    open: crate::journal::OpenSession,
    mode: Mode,
    claims: bool,
    mut journal: Option<&mut Journal>,
) -> Result<Resumed, String> {
    let (core, _) = crate::journal::rebuild_session(&open);
    let first = if core.runner().mode != mode {
        Event::ModeChanged { mode }
    } else {
        Event::Start
    };
    // The session's limits are its journal's, so that its counters replay: a session begun
    // without a worker id claims nothing when continued with one.
    if claims && !core.runner().limits.claims {
        say!(
                "warning: session {} was begun without --worker-id and keeps its limits: this run claims no issue and shares no merge turn until the session ends (another runner on the same tracker could take the same issue meanwhile)",
                open.id
            );
    }
    if let Some(j) = journal.as_deref_mut() {
        j.continue_session(&open.id);
    }
    let core = killed_call_spent(core, open.unanswered_spend_micros, journal)?;
    say!(
        "continuing session {} ({} events recorded){}",
        open.id,
        open.events.len(),
        if core.runner().mode != mode {
            format!(
                ", now as {} (was {})",
                describe_mode(mode),
                describe_mode(core.runner().mode)
            )
        } else {
            String::new()
        }
    );
    let redo = open
        .last_effects
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Effect::MarkEscalated { .. }
                    | Effect::RecordMerged { .. }
                    | Effect::AutoCommit(_)
                    | Effect::CheckoutMain
                    | Effect::ResetCycle
                    | Effect::Cleanup
                    | Effect::ReleaseMergeTurn
            )
        })
        .collect();
    Ok(Resumed {
        core,
        session: open.id,
        restart: restart(first, true, redo),
        stale_agents: open.agents,
    })
}

/// The call the last runner died in had journaled its running cost: the machine hears it
/// (`KilledCallSpent`, journaled like any event) before the restart, whose `KILLED` attempt
/// counts it.
fn killed_call_spent(
    mut core: Core,
    spent: Option<u64>,
    journal: Option<&mut crate::journal::Journal>,
) -> Result<Core, String> {
    let Some(cost_micros) = spent.filter(|c| *c > 0) else {
        return Ok(core);
    };
    let event = Event::KilledCallSpent {
        usage: crate::machine::Usage {
            cost_micros,
            ..Default::default()
        },
    };
    let effects = core.handle(&event).to_vec();
    if let Some(j) = journal {
        let report = crate::machine::Report::default();
        j.record_step(&event, &report, &effects, core.state())
            .map_err(|e| e.to_string())?;
    }
    Ok(core)
}

/// A run mode as the command line spells it, for messages.
fn describe_mode(mode: Mode) -> String {
    match mode {
        Mode::Continuous => "a run of every issue".to_string(),
        Mode::SingleIssue(n) => format!("run --issue {n}"),
        Mode::SingleStep(step) => format!("run --step {}", step.key()),
    }
}

/// What the project spent over the last 24 hours, from every journal of it (`budget.perDayUsd`).
pub(in crate::launch) fn spent_today(
    runner_dir: &crate::runner_dir::RunnerDir,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<u64, String> {
    let journals = crate::journal::Journals::in_dir(runner_dir).paths();
    crate::journal::DaySpend::read(&journals, now)
        .map(|day| day.total_micros())
        .map_err(|e| {
            format!("budget.perDayUsd: cannot sum the day's spend from the journals: {e}; repair or move the journal it names")
        })
}
