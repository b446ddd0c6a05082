//! Startup: the checks that exit 2 before any agent runs, the production ports asked of the
//! composition root, the runner directory and its lock, journal recovery and the sticky halt,
//! agents left behind by a killed runner: a driver ready to drive, or the exit code. The
//! journal is the authority on progress; the driver's first event (`driver/restart.rs`) asks
//! git and the forge only what is idempotent by nature (a merged PR) or the journal does not
//! know.

use super::Started;
use crate::artifacts::{self, StateFile};
use crate::config::Config;
use crate::driver::{ClaimKeeper, Driver, RunContext, RunOptions, Shell, KILL_GRACE};
use crate::journal::Journal;
use crate::logs::Logs;
use crate::machine::{Effect, Mode};
use crate::narration as say;
use crate::ports::{Ports, TrackerPort};
use crate::step::Step;
use crate::tracker;
use refusal::{single_issue_refusal, single_step_refusal};
use std::path::PathBuf;

mod refusal;
mod session;

pub(super) use session::spent_today;

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
    let mut ports = ports;
    let repo = &*ports.git;
    let project = cfg.project_path.clone();
    let runner_dir = repo.runner_dir()?;
    let (lock, notes) = lock_runner_dir(repo, &runner_dir, &project, opts.dry_run)?;
    let logs = prepare_logs(&cfg, opts.dry_run)?;
    let mode = opts.mode();
    // Before the sticky halt: saying why this issue will not be worked is more useful.
    if let Mode::SingleIssue(n) = mode {
        if let Some(code) = single_issue_refusal(&*ports.tracker, n, &cfg.file) {
            return Ok(Started::Exit(code));
        }
    }
    let (claims, claim_store) = claim_keeper(&cfg, &opts, ports.claims.take())?.unzip();
    ports.claims = claim_store;
    let (mut journal, recovered) =
        open_journal_or_stop_leftovers(&runner_dir, &project, opts.dry_run, lock.is_some())?;
    record_trust(repo, &recovered, opts.dry_run)?;
    if let Some(code) = session::acknowledge_halt(
        &recovered,
        &cfg,
        &opts,
        &logs,
        &*ports.tracker,
        journal.as_mut(),
    )? {
        return Ok(Started::Exit(code));
    }
    let state = load_state(&project, &runner_dir, opts.dry_run);
    let resuming = recovered.open_session.is_some();
    if let Some(code) = single_step_refusal(mode, resuming, &ports, &state, &cfg.file) {
        return Ok(Started::Exit(code));
    }
    let begin = session::Begin {
        cfg: &cfg,
        opts: &opts,
        mode,
        claims: claims.is_some(),
        runner_dir: &runner_dir,
        clock: &*ports.clock,
    };
    let resumed = session::resume_or_begin(
        recovered.open_session.filter(|_| !opts.dry_run),
        &begin,
        journal.as_mut(),
    )?;
    let run = RunContext {
        main: ports.git.main().to_string(),
        forge_local: ports.forge.is_local(),
        cfg,
        opts,
        program,
        session: resumed.session,
        runner_dir: runner_dir.clone(),
    };
    let locked = lock.is_some();
    let shell = Shell::on(ports, logs, journal, lock, state, &runner_dir);
    let merged_before = recovered.merged.clone();
    let driver = Driver::new(
        run,
        shell,
        resumed.core,
        resumed.restart,
        claims,
        merged_before,
    );
    driver.narrate(notes);
    driver.narrate(stop_stale_agents(&resumed.stale_agents));
    if locked {
        driver.narrate(stop_leftovers(&project));
    }
    Ok(Started::Ready(Box::new(driver)))
}

/// Under the lock, before any agent: the hooks and configuration as the operator left them
/// are what every git call of this session runs with; a session resumed after a crash keeps
/// its predecessor's record and puts back what differs from it.
fn record_trust(
    repo: &dyn crate::ports::GitPort,
    recovered: &crate::journal::Recovered,
    dry_run: bool,
) -> Result<(), String> {
    if dry_run {
        return Ok(());
    }
    let resumed = recovered.open_session.is_some();
    let put_back = repo.record_trust(resumed).map_err(|e| e.to_string())?;
    if !put_back.is_empty() {
        say!("{}", crate::narration::git_setup_put_back(&put_back));
    }
    Ok(())
}

/// The runner directory made and locked (a dry run takes no lock), with a legacy journal
/// migrated under the lock, so that no other runner can be migrating at the same time.
fn lock_runner_dir(
    repo: &dyn crate::ports::GitPort,
    runner_dir: &crate::runner_dir::RunnerDir,
    project: &std::path::Path,
    dry_run: bool,
) -> Result<(Option<crate::runner_dir::lock::Lock>, Vec<String>), String> {
    if dry_run {
        return Ok((None, Vec::new()));
    }
    runner_dir.ensure().map_err(|e| e.to_string())?;
    repo.check_artifact_dir()?;
    let lock = crate::runner_dir::lock::acquire_lock(&runner_dir.lock(), project)
        .map_err(|e| e.to_string())?;
    let notes = runner_dir
        .migrate_legacy_journal(project)
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    Ok((Some(lock), notes))
}

/// The log directory made, and kept out of git when it lies inside the work tree.
fn prepare_logs(cfg: &Config, dry_run: bool) -> Result<Logs, String> {
    let logs = Logs {
        dir: cfg.log_dir.clone(),
    };
    logs.create().map_err(|e| format!("logDir: {e}"))?;
    if let Some(pattern) = logs.exclude_pattern_in(&cfg.project_path) {
        if !dry_run {
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
    Ok(logs)
}

/// [`open_journal`]; when it fails, what a killed runner's steps left running in `project` is
/// stopped before the error is returned (with `locked`, the lock being ours): no session
/// starts on that journal (a newer runner's, say), but they would work on unseen.
fn open_journal_or_stop_leftovers(
    runner_dir: &crate::runner_dir::RunnerDir,
    project: &std::path::Path,
    dry_run: bool,
    locked: bool,
) -> Result<(Option<Journal>, crate::journal::Recovered), String> {
    open_journal(runner_dir, project, dry_run).inspect_err(|_| {
        if locked {
            for line in stop_leftovers(project) {
                say!("{line}");
            }
        }
    })
}

/// The journal opened for writing and what it recovered; a dry run only reads it, where it
/// still is (a dry run migrates nothing). A torn last line is said and dropped.
fn open_journal(
    runner_dir: &crate::runner_dir::RunnerDir,
    project: &std::path::Path,
    dry_run: bool,
) -> Result<(Option<Journal>, crate::journal::Recovered), String> {
    let mut journal_path = runner_dir.journal();
    let legacy = project.join(crate::runner_dir::LEGACY_JOURNAL);
    if dry_run && !journal_path.exists() && legacy.is_file() {
        journal_path = legacy;
    }
    let (journal, recovered) = if dry_run {
        let recovered = Journal::read(&journal_path)
            .map_err(|e| format!("journal {}: {e}", journal_path.display()))?;
        (None, recovered)
    } else {
        let (j, r) = Journal::open(&journal_path)
            .map_err(|e| format!("journal {}: {e}", journal_path.display()))?;
        (Some(j), r)
    };
    if let Some(torn) = &recovered.torn_line {
        say!(
            "warning: {}: {torn} (dropped; earlier records kept)",
            journal_path.display()
        );
    }
    Ok((journal, recovered))
}

/// The state file; a corrupt one is moved aside and rebuilt from the journal. A dry run
/// only peeks.
fn load_state(
    project: &std::path::Path,
    runner_dir: &crate::runner_dir::RunnerDir,
    dry_run: bool,
) -> StateFile {
    if dry_run {
        return artifacts::peek_state(project).unwrap_or_default();
    }
    match artifacts::read_state(project, &runner_dir.archive()) {
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
) -> Result<Option<(ClaimKeeper, crate::ports::ClaimStore)>, String> {
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
    let keeper = ClaimKeeper {
        worker,
        lease: cfg.claims.lease,
        held: None,
        others: Default::default(),
        refused: Default::default(),
    };
    Ok(Some((keeper, store)))
}
