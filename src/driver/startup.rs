//! Startup: the checks that exit 2 before any agent runs, the runner directory and its lock,
//! journal recovery and the sticky halt, agents left behind by a killed runner, and the
//! restart event. The journal is the authority on progress; git and the forge only confirm
//! what is idempotent by nature (a merged PR) or show work the journal does not know.

use super::cycle::Cycle;
use super::invoke::IssueContext;
use super::run_context::{Restart, RunContext};
use super::shell::Shell;
use super::shutdown::Shutdown;
use super::{Answer, Driver, RunOptions, Started, KILL_GRACE};
use crate::artifacts::{self, StateFile};
use crate::config::Config;
use crate::journal::{Journal, SessionEnd};
use crate::logs::Logs;
use crate::machine::{Core, Effect, Event, Mode};
use crate::narration as say;
use crate::ports::{Io, Ports, TrackerPort};
use crate::step::Step;
use crate::steps::checks;
use crate::tracker;
use refusal::{single_issue_refusal, single_step_refusal};
use std::path::PathBuf;

mod refusal;

/// Startup checks (exit 2 before any agent runs), lock, journal recovery, sticky halt.
pub(super) fn start(mut cfg: Config, opts: RunOptions) -> Result<Started, String> {
    if let Some(id) = &opts.discord_channel {
        cfg.discord_channel_id = Some(id.clone());
    }
    // A dry run starts no agent; its plan says what a real run would start.
    let problems = cfg.environment_problems(!opts.dry_run);
    if !problems.is_empty() {
        return Err(format!("{}: {}", cfg.file.display(), problems.join("; ")));
    }
    let program = match which::which(&cfg.agent.command) {
        Ok(program) => program,
        // A dry run runs no agent: its plan names the command it would run.
        Err(e) if opts.dry_run => {
            say!(
                "note: agent.command `{}` is not on PATH ({e}); a real run needs it installed",
                cfg.agent.command
            );
            PathBuf::from(&cfg.agent.command)
        }
        Err(e) => {
            return Err(format!(
                "{}: agent.command `{}` not found on PATH ({e}); install it or set agent.command",
                cfg.file.display(),
                cfg.agent.command
            ))
        }
    };
    let ports = crate::wiring::production(&cfg, opts.worker_id.is_some())?;
    start_on(cfg, opts, program, ports)
}

/// Startup on the given ports: the runner directory and its lock, journal recovery, the
/// sticky halt. Nothing here starts a process; every outside call goes through `ports`.
pub(super) fn start_on(
    cfg: Config,
    opts: RunOptions,
    program: PathBuf,
    ports: Ports,
) -> Result<Started, String> {
    let Ports {
        git: repo,
        forge,
        tracker,
        claims: claim_store,
        agent,
        notifier,
        clock,
    } = ports;
    let project = cfg.project_path.clone();
    let runner_dir = repo.runner_dir()?;
    let mut notes = Vec::new();
    let lock = if opts.dry_run {
        None
    } else {
        runner_dir.ensure().map_err(|e| e.to_string())?;
        repo.check_artifact_dir()?;
        let lock = crate::runner_dir::lock::acquire_lock(&runner_dir.lock(), &project)
            .map_err(|e| e.to_string())?;
        // Under the lock: no other runner can be migrating at the same time.
        if let Some(note) = runner_dir
            .migrate_legacy_journal(&project)
            .map_err(|e| e.to_string())?
        {
            notes.push(note);
        }
        Some(lock)
    };
    let lock_held = lock.is_some();
    let logs = Logs {
        dir: cfg.log_dir.clone(),
    };
    logs.create().map_err(|e| format!("logDir: {e}"))?;
    if let Some(pattern) = logs.exclude_pattern_in(&cfg.project_path) {
        if !opts.dry_run {
            crate::git::exclude::add_excludes(
                &cfg.project_path,
                &[pattern],
                "# sdlc-runner logs (logDir inside the work tree)",
            )
            .map_err(|e| {
                format!(
                    "logDir {}: cannot keep it out of git: {e}",
                    logs.dir.display()
                )
            })?;
        }
    }

    let mode = match (opts.step, opts.issue) {
        (Some(step), _) => Mode::SingleStep(step),
        (None, Some(n)) => Mode::SingleIssue(n),
        (None, None) => Mode::Continuous,
    };
    // Before the sticky halt: saying why this issue will not be worked is more useful.
    if let Mode::SingleIssue(n) = mode {
        if let Some(code) = single_issue_refusal(&*tracker, n, &cfg.file) {
            return Ok(Started::Exit(code));
        }
    }
    let (claims, claim_store) = claim_keeper(&cfg, &opts, claim_store)?.unzip();
    let shape = crate::config::RunShape {
        claims: claims.is_some(),
        workers: opts.workers.unwrap_or(cfg.workers),
        spent_today_micros: 0,
    };
    let mut journal_path = runner_dir.journal();
    let legacy = project.join(crate::runner_dir::LEGACY_JOURNAL);
    if opts.dry_run && !journal_path.exists() && legacy.is_file() {
        // A dry run migrates nothing: it reads where the journal still is.
        journal_path = legacy;
    }
    let (mut journal, recovered) = if opts.dry_run {
        let recovered = Journal::read(&journal_path)
            .map_err(|e| format!("journal {}: {e}", journal_path.display()))?;
        (None, recovered)
    } else {
        let (j, r) = Journal::open(&journal_path)
            .map_err(|e| format!("journal {}: {e}", journal_path.display()))?;
        (Some(j), r)
    };
    if !opts.dry_run {
        // Under the lock, before any agent: the hooks and configuration as the operator left
        // them are what every git call of this session runs with; a session resumed after a
        // crash keeps its predecessor's record and puts back what differs from it.
        let put_back = repo
            .record_trust(recovered.open_session.is_some())
            .map_err(|e| e.to_string())?;
        if !put_back.is_empty() {
            say!("{}", crate::narration::git_setup_put_back(&put_back));
        }
    }
    if let Some(torn) = &recovered.torn_line {
        say!(
            "warning: {}: {torn} (dropped; earlier records kept)",
            journal_path.display()
        );
    }
    if let Some((session, headline)) = &recovered.sticky_halt {
        if !opts.ack_halt {
            say!(
                    "refusing to run: session {session} halted: {headline}\nInspect the diagnostic in {} and the project, fix the cause, then acknowledge the halt: `sdlc-runner run --config {} --ack-halt` (or `sdlc-runner release N --config {1}` first to release escalated issue N).",
                    logs.orchestration_log().display(),
                    cfg.file.display()
                );
            return Ok(Started::Exit(1));
        }
        // A halt for the network can come while an escalation or a merge was being
        // written to the tracker, and the next session's quarantine is the tracker's: the
        // halt stays until the tracker shows every outcome the halted session recorded.
        let recorded = recovered
            .last_session
            .as_ref()
            .map(|s| s.tracker_effects.as_slice())
            .unwrap_or_default();
        if !opts.dry_run {
            if let Err(e) = settle_tracker(&*tracker, session, recorded, &logs) {
                say!(
                    "refusing to acknowledge the halt of session {session}: {e}
The halt stays; run again with --ack-halt once the tracker is reachable."
                );
                return Ok(Started::Exit(1));
            }
        }
        if let Some(j) = journal.as_mut() {
            j.end(SessionEnd::HaltAcknowledged)
                .map_err(|e| e.to_string())?;
        }
        say!("halt of session {session} acknowledged; starting a new session");
    }
    let state = if opts.dry_run {
        artifacts::peek_state(&project).unwrap_or_default()
    } else {
        match artifacts::read_state(&project, &runner_dir.archive()) {
            artifacts::StateLoad::Ok(s) => s,
            artifacts::StateLoad::Missing => StateFile::default(),
            artifacts::StateLoad::Corrupt { error, backup } => {
                say!(
                        "warning: state file was corrupt ({error}); moved to {} and rebuilt from the journal",
                        backup.display()
                    );
                StateFile::default()
            }
        }
    };
    if let (Mode::SingleStep(step), None) = (mode, &recovered.open_session) {
        if let Some(code) = single_step_refusal(&*repo, &*forge, step, &state, &cfg.file) {
            return Ok(Started::Exit(code));
        }
    }
    let merged_before = recovered.merged.clone();
    let continuing = recovered.open_session.filter(|_| !opts.dry_run);
    let recovering = continuing.is_some();
    let mut restart = Event::Start;
    let mut stale_agents = Vec::new();
    let mut redo = Vec::new();
    let (core, session) = match continuing {
        Some(open) => {
            // The session goes on whatever the mode: its counters are the journal's.
            // With each failure's journaled context, for the next repair prompt.
            let (core, _) = crate::journal::rebuild_session(&open);
            if core.runner().mode != mode {
                restart = Event::ModeChanged { mode };
            }
            // The session's limits are its journal's, so that its counters replay: a
            // session begun without a worker id claims nothing when continued with one.
            if claims.is_some() && !core.runner().limits.claims {
                say!(
                        "warning: session {} was begun without --worker-id and keeps its limits: this run claims no issue and shares no merge turn until the session ends (another runner on the same tracker could take the same issue meanwhile)",
                        open.id
                    );
            }
            if let Some(j) = journal.as_mut() {
                j.continue_session(&open.id);
            }
            let core = killed_call_spent(core, open.unanswered_spend_micros, journal.as_mut())?;
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
            stale_agents = open.agents;
            redo = open
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
            (core, open.id)
        }
        None => match journal.as_mut() {
            Some(j) => {
                let spent_today_micros = match (cfg.budget.per_day_usd, opts.spent_today_micros) {
                    (None, _) => 0,
                    (Some(_), Some(micros)) => micros,
                    (Some(_), None) => spent_today(&runner_dir, clock.now())?,
                };
                let limits = cfg.limits_for(crate::config::RunShape {
                    spent_today_micros,
                    ..shape
                });
                let id = j.begin(&limits, mode).map_err(|e| e.to_string())?;
                (Core::new(limits, mode), id)
            }
            None => (
                Core::new(cfg.limits_for(shape), mode),
                "dry-run".to_string(),
            ),
        },
    };
    let driver = Driver {
        run: RunContext {
            cfg,
            opts,
            program,
            main: repo.main().to_string(),
            forge_local: forge.is_local(),
            session,
            runner_dir: runner_dir.clone(),
        },
        shell: Shell {
            io: crate::ports::Io::new(crate::ports::World {
                git: repo,
                forge,
                tracker,
                claims: claim_store,
            }),
            notifier: std::sync::Arc::from(notifier),
            agent,
            clock,
            logs,
            journal,
            lock,
            shutdown: Shutdown::new(),
            state,
            live: crate::live_status::LiveStatus::new(&runner_dir.dir),
        },
        cycle: Cycle {
            merged_before,
            ..Cycle::default()
        },
        core,
        restart: Restart {
            first: restart,
            recovering,
            redo,
        },
        report: Default::default(),
        claims,
        fleet: None,
    };
    driver.narrate(notes);
    driver.narrate(stop_stale_agents(&stale_agents));
    if lock_held {
        driver.narrate(stop_leftovers(&driver.run.cfg.project_path));
    }
    Ok(Started::Ready(Box::new(driver)))
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

/// Agents of a runner that was killed may still run (their children at least: the
/// parent-death signal reaches only the agent itself). The lock is ours, so no live runner
/// owns them; a recorded group whose leader's start time differs is someone else's.
fn stop_stale_agents(groups: &[crate::journal::AgentGroup]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut said = Vec::new();
    for g in groups.iter().rev().filter(|g| seen.insert(g.pgid)) {
        match crate::cleanup::kill_recorded_group(g.pgid, g.start_ticks, KILL_GRACE) {
            crate::cleanup::GroupKill::AlreadyGone | crate::cleanup::GroupKill::Refused => {}
            outcome => said.push(say::stopped_stale_agent_group(g.pgid, &outcome)),
        }
    }
    said
}

/// What a killed runner's steps detached from their groups (a daemon an agent or a hook
/// started with `setsid`) still runs in the work tree `dir`: stopped before any step
/// starts. The lock is ours, so no live runner serves the work tree.
fn stop_leftovers(dir: &std::path::Path) -> Vec<String> {
    crate::process::reaper::stop_leftovers(dir)
        .into_iter()
        .map(|(pid, cmd)| say::stopped_leftover(pid, &cmd, dir))
        .collect()
}

/// The first event of this run. Where the journal has a cycle in progress, that cycle goes
/// on from the journal's position (an interrupted attempt counts as failed): the work tree
/// never moves it, except that a merged PR for the issue's branch means the merge is done.
/// Without a cycle, git may show work the journal does not know (a branch made by hand):
/// it is adopted unless the tracker marks the issue escalated.
pub(super) async fn initial_event(
    core: &Core,
    io: &Io,
    (state, main): (&StateFile, &str),
    cycle: &mut Cycle,
    restart: Event,
) -> Answer {
    if core.is_terminal() || matches!(restart, Event::ModeChanged { .. }) {
        return Answer::of(restart);
    }
    if matches!(core.runner().mode, Mode::SingleStep(_)) {
        return Answer::of(restart);
    }
    if let Some(issue) = core.runner().issue {
        cycle.issue = io.call(move |w| IssueContext::asked(w, issue)).await;
        if state.current_issue == Some(issue) {
            cycle.feature = state.feature_name.clone();
        }
        // A merge the journal already records is being told to the tracker: the
        // restart event re-issues that request.
        let recorded = core.runner().merged.contains(&issue);
        let branch = cycle.issue.branch.clone().filter(|_| !recorded);
        let merged = match branch {
            Some(b) => {
                let pr = io.call(move |w| w.forge.pr_for_branch(&b)).await;
                matches!(pr, Ok(Some(pr)) if pr.state == crate::forge::PrState::Merged)
            }
            None => false,
        };
        if merged {
            let resume = Event::Resume {
                issue,
                next: Step::Merge,
            };
            return Answer::of(resume).narrated(say::pr_merged_recording(issue));
        }
        return Answer::of(restart);
    }
    let state = state.clone();
    let progress = io
        .call(move |w| checks::detect_progress(&*w.git, &*w.forge, Some(&state)))
        .await;
    let detected = match progress {
        Ok(d) => d,
        Err(e) => return Answer::of(restart).narrated(say::progress_unreadable(&e)),
    };
    let Some(d) = detected else {
        return Answer::of(restart);
    };
    if let Mode::SingleIssue(n) = core.runner().mode {
        if d.issue != n {
            return Answer::of(restart);
        }
    }
    let number = d.issue;
    let issue = match io.call(move |w| w.tracker.get(number)).await {
        Ok(issue) => issue,
        Err(e) => {
            return Answer::of(restart).narrated(say::branch_not_adopted(&d.branch, d.issue, &e))
        }
    };
    if issue.escalated || core.escalated().contains(&d.issue) {
        return Answer::of(restart).narrated(say::branch_of_escalated(&d.branch, d.issue));
    }
    if d.merged {
        if !issue.state_open {
            // Merged and closed: only the checkout to main was left to do.
            let mut answer = Answer::of(restart);
            if let Err(e) = io.call(|w| w.git.checkout_main()).await {
                answer = answer.narrated(say::cannot_check_out(main, &e));
            }
            return answer;
        }
        return Answer::of(Event::AlreadyMerged { issue: d.issue })
            .narrated(say::already_merged_fresh_cycle(d.issue));
    }
    cycle.issue = IssueContext {
        number: d.issue,
        title: issue.title,
        branch: Some(d.branch.clone()),
    };
    cycle.feature = d.feature.clone();
    Answer::of(Event::Resume {
        issue: d.issue,
        next: d.next,
    })
    .narrated(say::adopting_branch(&d.branch, d.issue, d.next.key()))
}

/// Writes the escalations, merges and lifted quarantines recorded in `session` that the
/// tracker does not show. Each is checked first, so an escalation comment is not posted twice;
/// an escalation the session lifted later is not written at all.
pub(crate) fn settle_tracker(
    tracker: &dyn TrackerPort,
    session: &str,
    recorded: &[Effect],
    logs: &Logs,
) -> Result<(), String> {
    for (at, effect) in recorded.iter().enumerate() {
        let (issue, escalation) = match *effect {
            Effect::MarkEscalated { issue } => (issue, true),
            Effect::RecordMerged { issue, .. } => (issue, false),
            Effect::Unquarantine { issue } => {
                settle_release(tracker, session, issue)?;
                continue;
            }
            _ => continue,
        };
        if escalation && recorded[at + 1..].contains(&Effect::Unquarantine { issue }) {
            continue;
        }
        let found = match tracker.get(issue) {
            Ok(found) => found,
            // Deleted since: nothing left to mark.
            Err(tracker::TrackerError::NotFound { .. }) => continue,
            Err(e) => return Err(format!("cannot check issue #{issue} in the tracker: {e}")),
        };
        let shown = if escalation {
            found.escalated
        } else {
            !found.state_open
        };
        if shown {
            continue;
        }
        let written = if escalation {
            say!("the tracker does not show the escalation of issue #{issue} recorded in session {session}; marking it now");
            let text = format!(
                "sdlc-runner escalated this issue in session {session}; the tracker could not be written then (the session halted). The diagnostic is in {}.",
                logs.orchestration_log().display()
            );
            tracker.mark_escalated(issue, &text)
        } else {
            say!("the tracker does not show the merge of issue #{issue} recorded in session {session}; closing it now");
            tracker.close(issue, "merged by sdlc-runner")
        };
        written.map_err(|e| format!("cannot write issue #{issue}'s recorded outcome: {e}"))?;
    }
    Ok(())
}

/// Lifts a quarantine `session` recorded lifting when the tracker still shows it.
fn settle_release(tracker: &dyn TrackerPort, session: &str, issue: u32) -> Result<(), String> {
    match tracker.get(issue) {
        Ok(found) if found.escalated => {}
        Ok(_) | Err(tracker::TrackerError::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(format!("cannot check issue #{issue} in the tracker: {e}")),
    }
    say!("the tracker still shows issue #{issue} quarantined, which session {session} released; lifting it now");
    let note = format!(
        "sdlc-runner lifted its quarantine of this issue in session {session}: the failure that escalated it ended the next issue too (the environment's, not this issue's); the tracker could not be written then."
    );
    tracker
        .unquarantine(issue, &note)
        .map_err(|e| format!("cannot lift issue #{issue}'s quarantine: {e}"))
}

/// The claims of a runner started with `--worker-id`, kept in the ports' `store`; a runner
/// without one keeps none, whatever store the ports hold. Its lease must outlast the longest
/// thing the runner does between two renewals: a step at its time limit (plus the local CI
/// command, which a post-check may run).
fn claim_keeper(
    cfg: &Config,
    opts: &RunOptions,
    store: Option<crate::ports::ClaimStore>,
) -> Result<Option<(super::claim::ClaimKeeper, crate::ports::ClaimStore)>, String> {
    let Some(worker) = opts.worker_id.clone() else {
        return Ok(None);
    };
    let Some(store) = store else {
        return Err(format!(
            "--worker-id {worker}: the runner's ports hold no claim store to keep its claims in"
        ));
    };
    let longest = Step::ALL
        .iter()
        .filter(|s| cfg.enabled(**s))
        .map(|s| cfg.timeout(*s))
        .max()
        .unwrap_or_default()
        + cfg.local_ci.as_ref().map(|c| c.timeout).unwrap_or_default();
    if cfg.claims.lease <= longest {
        return Err(format!(
            "{}: claims.leaseMinutes ({}) must exceed the longest step's timeoutMin plus localCi.timeoutMin ({} min): a claim would expire while its runner still works; raise claims.leaseMinutes",
            cfg.file.display(),
            cfg.claims.lease.as_secs_f64() / 60.0,
            longest.as_secs_f64() / 60.0
        ));
    }
    let keeper = super::claim::ClaimKeeper {
        worker,
        lease: cfg.claims.lease,
        held: None,
        others: Default::default(),
        refused: Default::default(),
    };
    Ok(Some((keeper, store)))
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
pub(super) fn spent_today(
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
