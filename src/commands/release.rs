//! `sdlc-runner release N… --config F`: the one command that lifts the quarantine of
//! escalated issues. Under the project's lock it (1) writes what a halted session recorded
//! but the tracker does not show yet (as `run --ack-halt` would), (2) acknowledges that halt
//! in the journal, so the next run starts a new session whose escalations-this-session are
//! empty, and (3) removes each issue's escalation mark in the tracker. The next `run` selects
//! them again. A fleet's halt (`run --workers N`) is acknowledged the same way: its sticky
//! halt file goes.

use crate::journal::{Journal, SessionEnd};
use crate::logs::Logs;
use crate::machine::Effect;
use crate::ports::TrackerPort;
use crate::runner_dir::RunnerDir;
use std::path::Path;

pub fn run(issues: &[u32], config: &Path) -> i32 {
    let cfg = match super::load_config(config) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let tracker = match super::tracker_holding(&cfg, issues, "nothing released") {
        Ok(tracker) => tracker,
        Err(code) => return code,
    };
    let runner_dir = match RunnerDir::locate(&cfg.project_path) {
        Ok(dir) => dir,
        Err(e) => {
            say!("error: {e}");
            return 2;
        }
    };
    let journal_path = runner_dir.journal();
    let logs = Logs {
        dir: cfg.log_dir.clone(),
    };
    let fleet_halt = crate::launch::fleet_halt_file(&runner_dir.dir);
    // The lock keeps a running runner (or fleet) from writing beside us; a project that
    // never ran has no journal and nothing to acknowledge.
    let _lock = if journal_path.exists() || fleet_halt.exists() {
        match crate::runner_dir::lock::acquire_lock(&runner_dir.lock(), &cfg.project_path) {
            Ok(lock) => Some(lock),
            Err(e) => {
                say!("error: {e}");
                return 2;
            }
        }
    } else {
        None
    };
    if _lock.is_some() && journal_path.exists() {
        if let Err(code) = acknowledge(&journal_path, &*tracker, &logs, issues, false) {
            return code;
        }
    }
    // A fleet's workers were stopped with their sessions open: the fleet's halt is theirs, so
    // their recorded tracker writes are carried out and their sessions end acknowledged;
    // otherwise the next run would continue them and mark the released issues again.
    if fleet_halt.exists() {
        if let Err(code) = acknowledge_workers(&runner_dir.dir, &*tracker, &logs, issues) {
            return code;
        }
    }
    if let Err(code) = remove_fleet_halt(&fleet_halt) {
        return code;
    }
    lift_quarantines(&*tracker, issues)
}

/// Acknowledges each stopped worker's session, under that worker's own lock.
fn acknowledge_workers(
    runner_dir: &Path,
    tracker: &dyn TrackerPort,
    logs: &Logs,
    issues: &[u32],
) -> Result<(), i32> {
    for clone in worker_clones(runner_dir) {
        let Ok(dir) = RunnerDir::locate(&clone) else {
            continue;
        };
        if !dir.journal().exists() {
            continue;
        }
        let _worker_lock =
            crate::runner_dir::lock::acquire_lock(&dir.lock(), &clone).map_err(|e| {
                say!("error: {e}");
                2
            })?;
        acknowledge(&dir.journal(), tracker, logs, issues, true)?;
    }
    Ok(())
}

/// Removes the fleet's sticky halt file, if there is one, and says so.
fn remove_fleet_halt(fleet_halt: &Path) -> Result<(), i32> {
    let Ok(text) = std::fs::read_to_string(fleet_halt) else {
        return Ok(());
    };
    if let Err(e) = std::fs::remove_file(fleet_halt) {
        say!(
            "error: {}: {e}; the issues stay quarantined",
            fleet_halt.display()
        );
        return Err(2);
    }
    say!(
        "acknowledged the fleet's halt ({}); the next run --workers starts again",
        text.trim()
    );
    Ok(())
}

/// Removes each issue's escalation mark in the tracker: the exit code of the command.
fn lift_quarantines(tracker: &dyn TrackerPort, issues: &[u32]) -> i32 {
    for &n in issues {
        match tracker.lift_quarantine(n) {
            Ok(true) => say!("released issue #{n}: the next run may select it"),
            Ok(false) => say!("issue #{n} was not quarantined in the tracker"),
            Err(e) => {
                say!("error: cannot release issue #{n}: {e}");
                return 1;
            }
        }
    }
    0
}

/// Acknowledges a halted session recorded in `journal_path` after carrying out the tracker
/// writes it recorded; `end_open`: also ends an open session that way (a fleet's stopped
/// worker), else only warns that it counts the issues as escalated.
fn acknowledge(
    journal_path: &Path,
    tracker: &dyn TrackerPort,
    logs: &Logs,
    issues: &[u32],
    end_open: bool,
) -> Result<(), i32> {
    let (mut journal, recovered) = match Journal::open(journal_path) {
        Ok(opened) => opened,
        Err(e) => {
            say!("error: journal {}: {e}", journal_path.display());
            return Err(2);
        }
    };
    if let Some((session, headline)) = &recovered.sticky_halt {
        let recorded = recovered
            .last_session
            .as_ref()
            .map(|s| s.tracker_effects.as_slice())
            .unwrap_or_default();
        if let Err(e) = crate::launch::settle_tracker(tracker, session, recorded, logs) {
            say!("error: {e}; nothing released, the halt stays: run release again once the tracker is reachable");
            return Err(1);
        }
        if let Err(e) = journal.end(SessionEnd::HaltAcknowledged) {
            say!("error: journal {}: {e}", journal_path.display());
            return Err(2);
        }
        say!("acknowledged the halt of session {session} ({headline}); the next run starts a new session");
    } else if let Some(open) = recovered.open_session.as_ref().filter(|_| end_open) {
        if let Err(e) =
            crate::launch::settle_tracker(tracker, &open.id, &open.tracker_effects, logs)
        {
            say!("error: {e}; nothing released, the halt stays: run release again once the tracker is reachable");
            return Err(1);
        }
        // It ends as the fleet did: halted, exit 1, with nothing left to acknowledge.
        journal.continue_session(&open.id);
        if let Err(e) = journal.end(SessionEnd::Exit { code: 1 }) {
            say!("error: journal {}: {e}", journal_path.display());
            return Err(2);
        }
        say!(
            "ended the stopped session {} of {}: the next run starts a new one",
            open.id,
            journal_path.display()
        );
    } else if let Some(open) = &recovered.open_session {
        let counted: Vec<u32> = open
            .tracker_effects
            .iter()
            .enumerate()
            .filter_map(|(at, e)| match e {
                // A quarantine the session lifted again does not count.
                Effect::MarkEscalated { issue }
                    if issues.contains(issue)
                        && !open.tracker_effects[at + 1..]
                            .contains(&Effect::Unquarantine { issue: *issue }) =>
                {
                    Some(*issue)
                }
                _ => None,
            })
            .collect();
        if !counted.is_empty() {
            let list: Vec<String> = counted.iter().map(|n| format!("#{n}")).collect();
            say!(
                "warning: session {} is still open (its runner stopped before the end) and counts {} as escalated in it: the next run continues it and skips them until that session ends",
                open.id,
                list.join(", ")
            );
        }
    }
    Ok(())
}

/// The workers' clones of a fleet (`<runner dir>/workers/w*`).
fn worker_clones(runner_dir: &Path) -> Vec<std::path::PathBuf> {
    let mut clones: Vec<_> = std::fs::read_dir(runner_dir.join("workers"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join(".git").exists())
                .collect()
        })
        .unwrap_or_default();
    clones.sort();
    clones
}
